"""A gauge: pypaimon's own test suite run against pypaimon and, imports rewritten, against paimon_rs.

Developer tool (not CI): it needs Apache Paimon's repository mirrored (bare git) at
``/work/.mirror/apache+paimon/repo`` (or ``--mirror`` / ``$PAIMON_MIRROR``) and the pypaimon venv
of ``tests/compat/pypaimon_env.py`` (``~/.cache/paimon_rs/venv-pypaimon`` or ``--pypaimon-python``),
where it installs pytest and parameterized (pypaimon's test dependencies) if they are missing.

    python scripts/pypaimon_suite.py                  # both runs, then the table
    python scripts/pypaimon_suite.py -k tag --timeout 60
    python scripts/pypaimon_suite.py --json out.json  # also the per-test outcomes

What it does:

1. Extracts ``paimon-python/pypaimon/tests`` and ``paimon-python/conftest.py`` of ``--commit``
   (default ``TESTS_COMMIT``: the newest commit of the mirror touching ``paimon-python``; the
   released pypaimon 2.1.0 was built from commit 3a5ffe78, which the mirror does not hold) into a
   temporary directory, twice. The tests package is renamed ``pypaimon_tests`` (the installed
   pypaimon wheel has no ``pypaimon.tests``): ``pypaimon.tests`` is rewritten to it in both copies.
2. In the second copy, rewrites the imports of pypaimon's PUBLIC API, and only those, to
   ``paimon_rs`` (``PUBLIC_API`` below, name by name: ``from pypaimon.schema.data_types import
   DataField, PyarrowFieldParser`` becomes ``from paimon_rs import DataField`` plus ``from
   pypaimon.schema.data_types import PyarrowFieldParser``). Public means: the names pypaimon
   exports from ``pypaimon`` itself (``__all__`` but pypaimon_rust's ``SQLContext``), the names
   pypaimon's user documentation (``docs/content`` of the same commit) imports, the catalog
   exceptions its API raises and the ``Identifier`` its catalog takes; a documented name is also
   rewritten from the module that defines it (``pypaimon.data.variant_path``'s path functions,
   re-exported by the documented ``pypaimon.data``). Everything else (row
   classes, file IO, manifests, scanners, options internals) stays pypaimon's, so a test that
   pokes at pypaimon internals mixes both libraries and usually fails under paimon_rs: that is
   counted, not hidden. ``mock.patch("pypaimon....")`` strings are not rewritten.
3. Skips, in BOTH runs, the test files that need services or engines we do not run: Ray, Daft,
   a REST catalog server, HDFS (and Kerberos), OSS/Jindo. A file is skipped when its path is under
   ``rest/`` or names hdfs/kerberos/oss/jindo, or one of its module-level imports is Ray's, Daft's,
   the REST catalog's or server's (``SKIP_RULES``). Files that fail to import for a missing
   optional package (lance, torch, vector index libraries, ...) fail in both runs and are listed.
4. Runs pytest in the pypaimon venv on each copy (``-p no:cacheprovider``,
   ``--continue-on-collection-errors``, a per-test timeout by SIGALRM, ``PYTHONHASHSEED=0``;
   paimon_rs from ``python/`` of this checkout, so build its extension first), one run after the
   other (``--parallel`` runs both at once).
5. Prints: test files and tests run, passed under pypaimon, passed under paimon_rs, passed under
   paimon_rs but not pypaimon, and the top failure causes under paimon_rs of the tests pypaimon
   passes, grouped (``AttributeError: Table.tag_manager``, ``ImportError: AtomicType``,
   ``TypeError: ... unexpected keyword argument``, ...), with counts and an example test.

Outcomes are per test id (junit XML of each run); a test whose file fails to import under
paimon_rs counts as failed with that import error as its cause.
"""

from __future__ import annotations

import argparse
import ast
import collections
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Dict, List, Optional, Set, Tuple

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_MIRROR = "/work/.mirror/apache+paimon/repo"
# newest commit of the mirror touching paimon-python (2026-08-21; setup.py: VERSION = "2.1.dev")
TESTS_COMMIT = "193723d1961bdb694a025db3c6f5223ec44b3a04"
TEST_DEPS = ["pytest==8.4.2", "parameterized==0.9.0"]

_EXCEPTIONS = "*"  # every name of the module
# pypaimon module -> the public names it holds that are rewritten to ``from paimon_rs import``
PUBLIC_API: Dict[str, object] = {
    "pypaimon": {"CatalogFactory", "Schema", "Tag", "TagManager", "PaimonVirtualFileSystem"},
    "pypaimon.catalog.catalog_factory": {"CatalogFactory"},
    "pypaimon.schema.schema": {"Schema"},
    "pypaimon.schema.data_types": {"DataField", "AtomicType", "ArrayType", "MapType", "RowType",
                                   "MultisetType", "VectorType"},
    "pypaimon.schema.schema_change": {"SchemaChange", "Move"},
    "pypaimon.common.predicate_builder": {"PredicateBuilder"},
    # the parser of the documented CLI ``--where`` and multimodal ``where(...)`` strings
    "pypaimon.common.where_parser": {"parse_where_clause"},
    "pypaimon.common.identifier": {"Identifier"},
    "pypaimon.catalog.catalog_exception": _EXCEPTIONS,
    "pypaimon.write.commit_callback": {"CommitCallback", "CommitCallbackContext"},
    "pypaimon.snapshot.snapshot_manager": {"SnapshotManager"},
    "pypaimon.consumer.consumer": {"Consumer"},
    "pypaimon.common.core_options": {"CoreOptions"},
    "pypaimon.common.options.core_options": {"CoreOptions"},
    "pypaimon.tag.tag": {"Tag"},
    "pypaimon.tag.tag_manager": {"TagManager"},
    "pypaimon.data": {"variant_get", "variant_replace", "variant_set", "variant_to_pylist"},
    # the module defining pypaimon.data's path functions (pypaimon's tests import them from it)
    "pypaimon.data.variant_path": {"variant_get", "variant_replace", "variant_set",
                                   "variant_to_pylist"},
    "pypaimon.data.generic_variant": {"GenericVariant"},
    "pypaimon.table.row.blob": {"Blob"},
}

# (what the file needs, regex on a module-level import, regex on the file's path)
SKIP_RULES: List[Tuple[str, str, str]] = [
    ("Ray", r"^(ray|pypaimon\.ray)(\.|$)", r"(^|/|_)ray(_|\.py$)"),
    ("Daft", r"^(daft|pypaimon\.daft)(\.|$)", r"^daft/"),
    ("REST server", r"^(pypaimon_tests\.rest|pypaimon\.catalog\.rest\.rest_catalog"
                    r"|pypaimon\.api\.(rest_api|rest_util|client|auth|token_loader))(\.|$)", r"^rest/"),
    ("HDFS", r"hdfs|kerberos", r"hdfs|kerberos"),
    ("OSS", r"(^|\.)(oss|jindo)", r"oss|jindo"),
]

PLUGIN = '''
"""pypaimon_suite's per-test timeout (SIGALRM around setup, call and teardown)."""
import os
import signal

import pytest

_LIMIT = int(os.environ.get("PYPAIMON_SUITE_TIMEOUT", "120"))


class SuiteTimeout(Exception):
    pass


def _raise(signum, frame):
    raise SuiteTimeout("test exceeded %d s" % _LIMIT)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    old = signal.signal(signal.SIGALRM, _raise)
    signal.alarm(_LIMIT)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
'''


def _git(mirror: str, *args: str) -> bytes:
    return subprocess.run(["git", "-C", mirror, *args], check=True, capture_output=True).stdout


def extract(mirror: str, commit: str, dest: Path) -> None:
    """The tests package of ``commit`` as ``dest/pypaimon_tests``, its conftest as ``dest/conftest.py``."""
    if not Path(mirror).exists():
        raise SystemExit(f"Apache Paimon's mirror not found at {mirror}: this developer tool reads "
                         "pypaimon's tests from it (--mirror or PAIMON_MIRROR to point elsewhere)")
    raw = dest / "raw"
    raw.mkdir(parents=True)
    archive = _git(mirror, "archive", commit, "paimon-python/pypaimon/tests", "paimon-python/conftest.py")
    subprocess.run(["tar", "-x", "-C", str(raw)], input=archive, check=True)
    shutil.move(str(raw / "paimon-python/pypaimon/tests"), str(dest / "pypaimon_tests"))
    shutil.move(str(raw / "paimon-python/conftest.py"), str(dest / "conftest.py"))
    shutil.rmtree(raw)
    (dest / "_pypaimon_suite_plugin.py").write_text(PLUGIN)
    for path in [dest / "conftest.py", *sorted((dest / "pypaimon_tests").rglob("*.py"))]:
        text = path.read_text()
        new = re.sub(r"\bpypaimon\.tests\b", "pypaimon_tests", text)
        if new != text:
            path.write_text(new)


def _public_names(module: str) -> Optional[object]:
    return PUBLIC_API.get(module)


def rewrite_imports(source: str) -> Tuple[str, int]:
    """``source`` with the imports of pypaimon's public API made paimon_rs's; the count rewritten."""
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    edits: List[Tuple[int, int, str]] = []
    count = 0
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom) or node.level or node.module is None:
            continue
        public = _public_names(node.module)
        if public is None:
            continue
        ours = [a for a in node.names if public == _EXCEPTIONS or a.name in public]  # type: ignore[operator]
        if not ours:
            continue
        theirs = [a for a in node.names if a not in ours]
        indent = re.match(r"\s*", lines[node.lineno - 1]).group(0)  # type: ignore[union-attr]

        def spell(alias: ast.alias) -> str:
            return alias.name + (f" as {alias.asname}" if alias.asname else "")

        stmts = [f"from paimon_rs import {', '.join(spell(a) for a in ours)}"]
        if theirs:
            stmts.append(f"from {node.module} import {', '.join(spell(a) for a in theirs)}")
        first = lines[node.lineno - 1]
        head = first[:node.col_offset]
        last = lines[node.end_lineno - 1]  # type: ignore[operator]
        tail = last[node.end_col_offset:]
        # a statement alone on its line(s) is replaced line-wise; one after `;` or `:` keeps the prefix
        text = head + ("; ".join(stmts) if head.strip() else ("\n" + indent).join(stmts)) + tail
        edits.append((node.lineno - 1, node.end_lineno, text))  # type: ignore[arg-type]
        count += len(ours)
    for start, end, text in sorted(edits, reverse=True):
        lines[start:end] = [text]
    return "".join(lines), count


def rewrite_tree(dest: Path) -> Dict[str, int]:
    """Rewrite every test module under ``dest``; return the names rewritten per file (relative
    to the tests package) that had any."""
    root = dest / "pypaimon_tests"
    out: Dict[str, int] = {}
    for path in sorted(root.rglob("*.py")):
        text = path.read_text()
        try:
            new, n = rewrite_imports(text)
        except SyntaxError:
            continue
        if n:
            path.write_text(new)
            out[str(path.relative_to(root))] = n
    return out


def _module_imports(tree: ast.Module) -> List[str]:
    out: List[str] = []
    stack = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            out.append(node.module)
            out += [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, (ast.Try, ast.If)):
            stack += node.body + node.orelse + getattr(node, "finalbody", [])
            for h in getattr(node, "handlers", []):
                stack += h.body
    return out


def test_files(dest: Path) -> List[str]:
    root = dest / "pypaimon_tests"
    return sorted(str(p.relative_to(root)) for p in root.rglob("*.py")
                  if p.name.endswith("_test.py") or p.name.startswith("test_"))


def skipped(dest: Path, files: List[str]) -> Dict[str, str]:
    """File -> the service it needs, for the files no run takes."""
    out: Dict[str, str] = {}
    for rel in files:
        try:
            imports = _module_imports(ast.parse((dest / "pypaimon_tests" / rel).read_text()))
        except SyntaxError:
            continue
        for what, imp, path in SKIP_RULES:
            if re.search(path, rel) or any(re.search(imp, m) for m in imports):
                out[rel] = what
                break
    return out


def ensure_test_deps(python: str) -> None:
    probe = subprocess.run([python, "-c", "import pytest, parameterized"], capture_output=True)
    if probe.returncode:
        print(f"installing {' '.join(TEST_DEPS)} into {python}'s venv", file=sys.stderr)
        subprocess.run([python, "-m", "pip", "install", "-q", *TEST_DEPS], check=True)


def start_run(python: str, dest: Path, ignore: List[str], timeout: int, extra_path: str,
              keyword: str) -> Tuple[subprocess.Popen, Path]:
    """pytest on the copy ``dest`` (``extra_path`` first on the path), its junit XML in ``dest``."""
    junit = dest / "junit.xml"
    cmd = [python, "-m", "pytest", "pypaimon_tests", "-q", "-p", "no:cacheprovider",
           "-p", "_pypaimon_suite_plugin", "--continue-on-collection-errors", "--rootdir", str(dest),
           "-o", "addopts=", "-o", "junit_family=xunit2", f"--junitxml={junit}", "-W", "ignore"]
    cmd += [f"--ignore=pypaimon_tests/{rel}" for rel in ignore]
    if keyword:
        cmd += ["-k", keyword]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "PYPAIMON_TEST"))}
    # pypaimon's tests leave their tempfile.mkdtemp() warehouses behind (~400 directories a
    # run): they go under the copy, removed with it (kept with --keep)
    tmp = dest / "tmp"
    tmp.mkdir(exist_ok=True)
    env.update(PYTHONPATH=os.pathsep.join(p for p in [str(dest), extra_path] if p),
               PYTHONHASHSEED="0", PYPAIMON_SUITE_TIMEOUT=str(timeout), PYTHONDONTWRITEBYTECODE="1",
               TMPDIR=str(tmp))
    log = open(dest / "pytest.log", "w")
    proc = subprocess.Popen(cmd, cwd=dest, env=env, stdout=log, stderr=subprocess.STDOUT)
    return proc, junit


def _last_error_line(text: str) -> str:
    errs = [ln[1:].strip() for ln in text.splitlines() if ln.startswith("E ")]
    return errs[-1] if errs else (text.strip().splitlines() or [""])[-1]


def read_junit(junit: Path) -> Tuple[Dict[str, Tuple[str, str]], Dict[str, str]]:
    """(test id -> (outcome, message)), (module -> collection error) of one run."""
    tests: Dict[str, Tuple[str, str]] = {}
    broken: Dict[str, str] = {}
    if not junit.exists():
        return tests, broken
    for case in ET.parse(junit).getroot().iter("testcase"):
        cls, name = case.get("classname", ""), case.get("name", "")
        bad = next((c for c in case if c.tag in ("failure", "error")), None)
        if not cls and bad is not None:  # a module that could not be collected
            broken[name] = _last_error_line(bad.text or "") or bad.get("message", "")
            continue
        tid = f"{cls}::{name}"
        if bad is not None:
            msg = bad.get("message") or _last_error_line(bad.text or "")
            if bad.tag == "error" and "collection failure" in msg:
                msg = _last_error_line(bad.text or "")
            tests[tid] = ("failed", msg)
        elif any(c.tag == "skipped" for c in case):
            tests[tid] = ("skipped", next(c for c in case if c.tag == "skipped").get("message", ""))
        else:
            tests[tid] = ("passed", "")
    return tests, broken


_CAUSES = [
    (r"cannot import name '(\w+)' from '([\w.]+)'", lambda m: f"ImportError: {m[1]} (from {m[2]})"),
    (r"No module named '([\w.]+)'", lambda m: f"ModuleNotFoundError: {m[1]}"),
    (r"type object '(\w+)' has no attribute '(\w+)'", lambda m: f"AttributeError: {m[1]}.{m[2]}"),
    (r"'(\w+)' object has no attribute '(\w+)'", lambda m: f"AttributeError: {m[1]}.{m[2]}"),
    (r"module '([\w.]+)' has no attribute '(\w+)'", lambda m: f"AttributeError: {m[1]}.{m[2]}"),
    (r"([\w.]+\(\)) got an unexpected keyword argument '(\w+)'",
     lambda m: f"TypeError: {m[1]} unexpected keyword {m[2]}"),
    (r"([\w.]+\(\)) (takes|missing) .*positional argument", lambda m: f"TypeError: {m[1]} positional arguments"),
    (r"test exceeded \d+ s", lambda m: "timeout"),
]


def cause(message: str) -> str:
    """A failure message reduced to a groupable cause."""
    first = message.strip().splitlines()[0] if message.strip() else "(no message)"
    for pat, fmt in _CAUSES:
        m = re.search(pat, first)
        if m:
            return fmt(m)
    first = re.sub(r"/tmp/\S+|\b\d+\b", "N", first)
    return first[:110]


def module_of(tid: str, modules: Set[str]) -> str:
    parts = tid.split("::")[0].split(".")
    for i in range(len(parts), 0, -1):
        if ".".join(parts[:i]) in modules:
            return ".".join(parts[:i])
    return ""


def _counts(ids: List[str], outcome: Dict[str, Dict[str, Tuple[str, str]]]) -> List[int]:
    """[tests, passed under pypaimon, passed under paimon_rs, both, paimon_rs only] of ``ids``."""
    ref = {t for t in ids if outcome[t]["pypaimon"][0] == "passed"}
    ours = {t for t in ids if outcome[t]["paimon_rs"][0] == "passed"}
    return [len(ids), len(ref), len(ours), len(ref & ours), len(ours - ref)]


def summarize(files: List[str], skip: Dict[str, str], rewritten: Dict[str, int], ref: Tuple[Dict, Dict],
              ours: Tuple[Dict, Dict], top: int) -> Tuple[str, Dict[str, object]]:
    ref_tests, ref_broken = ref
    our_tests, our_broken = ours
    modules = {"pypaimon_tests." + f[:-3].replace("/", ".") for f in files}
    public = {"pypaimon_tests." + f[:-3].replace("/", ".") for f in rewritten}
    ids = sorted(set(ref_tests) | set(our_tests))
    outcome: Dict[str, Dict[str, Tuple[str, str]]] = {}
    for tid in ids:
        mod = module_of(tid, modules)
        r = ref_tests.get(tid) or (("failed", ref_broken[mod]) if mod in ref_broken else ("absent", ""))
        o = our_tests.get(tid) or (("failed", our_broken[mod]) if mod in our_broken else ("absent", ""))
        outcome[tid] = {"pypaimon": r, "paimon_rs": o}
    in_public = [t for t in ids if module_of(t, modules) in public]
    every, pub = _counts(ids, outcome), _counts(in_public, outcome)
    counter: collections.Counter = collections.Counter()
    example: Dict[str, str] = {}
    for t in ids:
        st, msg = outcome[t]["paimon_rs"]
        if outcome[t]["pypaimon"][0] != "passed" or st == "passed":
            continue
        c = cause(msg) if st == "failed" else st
        counter[c] += 1
        example.setdefault(c, t)
    skipped_by: collections.Counter = collections.Counter(skip.values())
    both_broken = sorted(set(ref_broken) & set(our_broken))
    run_files = [f for f in files if f not in skip]
    pub_files = [f for f in run_files if f in rewritten]
    labels = ["tests run (collected under either)", "passed under pypaimon", "passed under paimon_rs",
              "passed under both", "passed under paimon_rs only"]
    lines = [
        f"test files: {len(files)}; skipped (a service not run): {len(skip)} "
        f"({', '.join(f'{k} {v}' for k, v in sorted(skipped_by.items()))}); run: {len(run_files)}, "
        f"{len(pub_files)} of them import pypaimon's public API (rewritten), {len(both_broken)} fail to "
        "import under both (optional packages missing, or names the installed pypaimon lacks)",
        "",
        "| | all files run | files importing the public API |", "|---|---|---|",
    ]
    lines += [f"| {label} | {a} | {b} |" for label, a, b in zip(labels, every, pub)]
    lines += [
        "",
        f"Top failure causes under paimon_rs of the {every[1] - every[3]} tests pypaimon passes:",
        "", "| count | cause | example test |", "|---|---|---|",
    ]
    for c, k in counter.most_common(top):
        lines.append(f"| {k} | `{c}` | `{example[c]}` |")
    if both_broken:
        lines += ["", "Not importable under either: " + ", ".join(
            f"`{m.split('.', 1)[1]}` ({cause(ref_broken[m])})" for m in both_broken)]
    data = {"all": dict(zip(labels, every)), "public_api_files": dict(zip(labels, pub)),
            "skipped_files": skip, "rewritten_files": rewritten, "causes": dict(counter.most_common()),
            "outcomes": {t: {k: list(v) for k, v in o.items()} for t, o in outcome.items()}}
    return "\n".join(lines) + "\n", data


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mirror", default=os.environ.get("PAIMON_MIRROR", DEFAULT_MIRROR))
    ap.add_argument("--commit", default=TESTS_COMMIT)
    ap.add_argument("--pypaimon-python", default=str(Path(os.environ.get(
        "PAIMON_RS_PYPAIMON_VENV", Path.home() / ".cache/paimon_rs/venv-pypaimon")) / "bin/python"))
    ap.add_argument("--timeout", type=int, default=120, help="per test, seconds")
    ap.add_argument("-k", dest="keyword", default="", help="pytest -k expression for both runs")
    ap.add_argument("--parallel", action="store_true", help="run pypaimon and paimon_rs at once")
    ap.add_argument("--keep", type=Path, help="work in this (new) directory and keep it")
    ap.add_argument("--reuse-pypaimon", type=Path, metavar="DIR",
                    help="take the pypaimon run from DIR (an earlier --keep of the same commit and -k): "
                         "only paimon_rs runs")
    ap.add_argument("--top", type=int, default=25, help="failure causes listed")
    ap.add_argument("--json", type=Path, help="write counts, causes and per-test outcomes here")
    args = ap.parse_args()
    if not Path(args.pypaimon_python).exists():
        raise SystemExit(f"no pypaimon venv at {args.pypaimon_python}: run python tests/compat/pypaimon_env.py")
    ensure_test_deps(args.pypaimon_python)
    work = args.keep or Path(tempfile.mkdtemp(prefix="pypaimon-suite-"))
    work.mkdir(parents=True, exist_ok=True)
    started = time.time()
    try:
        ref_dir, our_dir = work / "pypaimon", work / "paimon_rs"
        extract(args.mirror, args.commit, ref_dir)
        extract(args.mirror, args.commit, our_dir)
        rewritten = rewrite_tree(our_dir)
        files = test_files(ref_dir)
        skip = skipped(ref_dir, files)
        runs = [(our_dir, str(ROOT / "python"))]
        if args.reuse_pypaimon:
            shutil.copy(args.reuse_pypaimon / "pypaimon" / "junit.xml", ref_dir / "junit.xml")
        else:
            runs.insert(0, (ref_dir, ""))
        procs = []
        for dest, path in runs:
            procs.append(start_run(args.pypaimon_python, dest, sorted(skip), args.timeout, path, args.keyword))
            if not args.parallel:
                procs[-1][0].wait()
        for proc, _ in procs:
            proc.wait()
        ref, ours = read_junit(ref_dir / "junit.xml"), read_junit(our_dir / "junit.xml")
        table, data = summarize(files, skip, rewritten, ref, ours, args.top)
        when = _git(args.mirror, "log", "-1", "--format=%cd", "--date=short", args.commit).decode().strip()
        head = (f"pypaimon's tests of apache/paimon {args.commit[:10]} ({when}), "
                f"{sum(rewritten.values())} imported names in {len(rewritten)} files rewritten to paimon_rs, "
                f"per-test timeout {args.timeout} s, {time.time() - started:.0f} s\n\n")
        sys.stdout.write(head + table)
        if args.json:
            args.json.write_text(json.dumps({"commit": args.commit, **data}, indent=1, sort_keys=True))
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
