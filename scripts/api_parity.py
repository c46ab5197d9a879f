"""Member-by-member API parity of paimon_rs against pypaimon 2.1.0.

Both libraries are introspected on LIVE objects (a catalog, a primary-key table, its builders,
scan, read, write, commit, a split and a predicate builder, made the same way in a temporary
warehouse), so attributes set in ``__init__`` count as members too. pypaimon runs in its own venv
(``tests/compat/pypaimon_env.py`` creates it); paimon_rs in the running interpreter.

    python scripts/api_parity.py            # the markdown table (docs/pypaimon-parity.md)
    python scripts/api_parity.py --check    # exit 1 if a missing member has no reason
    python scripts/api_parity.py --dump M   # (internal) JSON of the members of module M

With Apache Paimon's mirror at hand (``--mirror``, ``$PAIMON_MIRROR``, default that of
``scripts/pypaimon_suite.py``), each member is also counted in pypaimon's own test suite (the
tests of ``pypaimon_suite.TESTS_COMMIT``): how many test files access an attribute of that name
(``x.name`` in the parsed source; by name, not by the object's type, so a same-named member of
another class counts too). The summary then says how many members the suite exercises and how
many of those paimon_rs has: the members "that pypaimon's tests exercise" of issue 29.
``--no-suite`` leaves the count out.

The output keeps the section of ``--out`` (default docs/pypaimon-parity.md) between
``<!-- pypaimon-suite:begin -->`` and ``<!-- pypaimon-suite:end -->`` (the figures of
``scripts/pypaimon_suite.py``, written by hand).

A member paimon_rs lacks is listed with its reason from ``scripts/api_parity_reasons.txt``
(``Class.member: reason`` or ``*.member: reason`` lines; ``#`` comments).
"""

from __future__ import annotations

import argparse
import ast
import collections
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

ROOT = Path(__file__).resolve().parents[1]
REASONS = ROOT / "scripts" / "api_parity_reasons.txt"
DOC = ROOT / "docs" / "pypaimon-parity.md"
CLASSES = ["Catalog", "Table", "ReadBuilder", "TableScan", "TableRead", "BatchWriteBuilder",
           "TableWrite", "TableCommit", "Split", "PredicateBuilder"]


def _kind(obj: Any, name: str) -> str:
    for klass in type(obj).__mro__:
        if name in vars(klass):
            attr = vars(klass)[name]
            if isinstance(attr, property):
                return "property"
            if isinstance(attr, (staticmethod, classmethod)) or callable(attr):
                return "method"
            return "attribute"
    # pyo3 getters and instance attributes
    try:
        return "method" if callable(getattr(obj, name)) else "attribute"
    except Exception:  # a property raising on this object is still a member
        return "property"


def _members(obj: Any) -> Dict[str, str]:
    return {n: _kind(obj, n) for n in dir(obj) if not n.startswith("_")}


def dump(module: str) -> Dict[str, Dict[str, str]]:
    """Members of each class, from objects made through the public API of ``module``."""
    import pyarrow as pa

    mod = __import__(module)
    with tempfile.TemporaryDirectory(prefix="api-parity-") as wh:
        return _dump_in(mod, pa, wh)


def _dump_in(mod: Any, pa: Any, wh: str) -> Dict[str, Dict[str, str]]:
    catalog = mod.CatalogFactory.create({"warehouse": wh})
    catalog.create_database("db", True)
    schema = mod.Schema.from_pyarrow_schema(
        pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())]),
        primary_keys=["id"], options={"bucket": "1"})
    catalog.create_table("db.t", schema, False)
    table = catalog.get_table("db.t")
    wb = table.new_batch_write_builder()
    write, commit = wb.new_write(), wb.new_commit()
    write.write_arrow(pa.table({"id": pa.array([1, 2], pa.int64()), "v": ["a", "b"]}))
    commit.commit(write.prepare_commit())
    rb = table.new_read_builder()
    scan = rb.new_scan()
    splits = scan.plan().splits()
    objs = {
        "Catalog": catalog, "Table": table, "ReadBuilder": rb, "TableScan": scan,
        "TableRead": rb.new_read(), "BatchWriteBuilder": wb, "TableWrite": write,
        "TableCommit": commit, "Split": splits[0], "PredicateBuilder": rb.new_predicate_builder(),
    }
    out = {name: _members(o) for name, o in objs.items()}
    out["_types"] = {name: f"{type(o).__module__}.{type(o).__qualname__}" for name, o in objs.items()}
    write.close()
    commit.close()
    return out


def _pypaimon_python() -> str:
    venv = os.environ.get("PAIMON_RS_PYPAIMON_VENV", str(Path.home() / ".cache/paimon_rs/venv-pypaimon"))
    py = Path(venv) / "bin" / "python"
    if not py.exists():
        raise SystemExit(f"pypaimon venv not found at {venv}: run python tests/compat/pypaimon_env.py")
    return str(py)


def load_reasons(path: Path = REASONS) -> Dict[str, str]:
    reasons: Dict[str, str] = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        key, _, reason = line.partition(":")
        reasons[key.strip()] = reason.strip()
    return reasons


def compare(pypaimon_python: str = "") -> Tuple[Dict[str, Any], Dict[str, Any]]:
    out = subprocess.run([pypaimon_python or _pypaimon_python(), __file__, "--dump", "pypaimon"],
                         capture_output=True,
                         text=True, check=True, env={**os.environ, "PYTHONWARNINGS": "ignore"})
    return json.loads(out.stdout), dump("paimon_rs")


def suite_usage(mirror: str, commit: str) -> Tuple[Dict[str, int], int]:
    """Per attribute name, how many test files of pypaimon's suite at ``commit`` access it
    (``x.name``), and how many test files were read."""
    files = subprocess.run(["git", "-C", mirror, "ls-tree", "-r", "--name-only", commit,
                            "paimon-python/pypaimon/tests"], check=True, capture_output=True,
                           text=True).stdout.split()
    files = [f for f in files if f.endswith(".py")]
    # one `git cat-file --batch` for all the files
    req = "".join(f"{commit}:{f}\n" for f in files).encode()
    raw = subprocess.run(["git", "-C", mirror, "cat-file", "--batch"], input=req, check=True,
                         capture_output=True).stdout
    counts: Dict[str, int] = collections.Counter()
    pos = 0
    for _ in files:
        header_end = raw.index(b"\n", pos)
        size = int(raw[pos:header_end].split()[2])
        body = raw[header_end + 1:header_end + 1 + size]
        pos = header_end + 1 + size + 1
        try:
            tree = ast.parse(body.decode("utf-8"))
        except SyntaxError:
            continue
        counts.update({n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)})
    return dict(counts), len(files)


def table(ref: Dict[str, Any], ours: Dict[str, Any], reasons: Dict[str, str],
          usage: Optional[Tuple[Dict[str, int], int]] = None) -> Tuple[str, List[str]]:
    lines = ["# paimon_rs against pypaimon 2.1.0, member by member", "",
             "Generated by `scripts/api_parity.py` (live objects of both libraries; reasons from",
             "`scripts/api_parity_reasons.txt`). Y: paimon_rs has the member; Y, limited: it has it,",
             "with the difference given; N: why not."]
    used: Dict[str, int] = usage[0] if usage else {}
    if usage:
        lines += [f"Suite files: how many of the {usage[1]} Python files of pypaimon's own tests",
                  "(`scripts/pypaimon_suite.py`'s commit) access a member of that name (by name, not",
                  "by type); \"in suite\": the members at least one test file uses, and how many of",
                  "them paimon_rs has."]
    lines.append("")
    if usage:
        lines += ["| class | pypaimon type | members | Y | of them limited | N | in suite | in suite, Y |",
                  "|---|---|---|---|---|---|---|---|"]
    else:
        lines += ["| class | pypaimon type | members | Y | of them limited | N |", "|---|---|---|---|---|---|"]
    totals = [0, 0, 0]
    missing_reason: List[str] = []
    body: List[str] = []
    for cls in CLASSES:
        members = ref[cls]
        have = ours[cls]
        ys = [m for m in members if m in have]
        limited = [m for m in ys if f"{cls}.{m}" in reasons]
        row = (f"| {cls} | `{ref['_types'][cls]}` | {len(members)} | {len(ys)} | "
               f"{len(limited)} | {len(members) - len(ys)} |")
        if usage:
            in_suite = [m for m in members if used.get(m)]
            in_suite_y = [m for m in in_suite if m in have]
            row += f" {len(in_suite)} | {len(in_suite_y)} |"
            totals = [totals[0] + len(members), totals[1] + len(in_suite), totals[2] + len(in_suite_y)]
        lines.append(row)
        body += ["", f"## {cls}", "", f"pypaimon: `{ref['_types'][cls]}`; paimon_rs: "
                 f"`{ours['_types'][cls]}`", ""]
        if usage:
            body += ["| member | pypaimon | suite files | paimon_rs | reason if N |", "|---|---|---|---|---|"]
        else:
            body += ["| member | pypaimon | paimon_rs | reason if N |", "|---|---|---|---|"]
        for m in sorted(members):
            lead = f"| `{m}` | {members[m]} |" + (f" {used.get(m, 0)} |" if usage else "")
            note = reasons.get(f"{cls}.{m}")
            if m in have and note:
                body.append(f"{lead} Y, limited | {note} |")
            elif m in have:
                body.append(f"{lead} Y | |")
            else:
                reason = reasons.get(f"{cls}.{m}") or reasons.get(f"*.{m}")
                if reason is None:
                    missing_reason.append(f"{cls}.{m}")
                    reason = "**no reason given**"
                body.append(f"{lead} N | {reason} |")
        extra = sorted(m for m in have if m not in members)
        if extra:
            body += ["", "paimon_rs only: " + ", ".join(f"`{m}`" for m in extra)]
    if usage:
        lines += ["", f"Of the {totals[0]} members, pypaimon's tests use {totals[1]}; paimon_rs has "
                  f"{totals[2]} of those."]
    return "\n".join(lines + body) + "\n", missing_reason


SUITE_BEGIN, SUITE_END = "<!-- pypaimon-suite:begin -->", "<!-- pypaimon-suite:end -->"


def keep_suite_section(md: str, previous: str) -> str:
    """``md`` with the section between ``SUITE_BEGIN`` and ``SUITE_END`` of ``previous`` (the
    figures of scripts/pypaimon_suite.py, written by hand) put back after the summary table."""
    start, end = previous.find(SUITE_BEGIN), previous.find(SUITE_END)
    if start < 0 or end < start:
        return md
    section = previous[start:end + len(SUITE_END)]
    head, sep, rest = md.partition("\n## ")
    return head.rstrip("\n") + "\n\n" + section + "\n" + sep + rest


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dump", metavar="MODULE")
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--pypaimon-python", default="", help="interpreter of the pypaimon venv")
    ap.add_argument("--mirror", default=os.environ.get("PAIMON_MIRROR", "/work/.mirror/apache+paimon/repo"),
                    help="Apache Paimon's git mirror, for the suite counts")
    ap.add_argument("--no-suite", action="store_true", help="leave out the suite counts")
    args = ap.parse_args()
    if args.dump:
        print(json.dumps(dump(args.dump)))
        return
    usage = None
    if not args.no_suite:
        if not Path(args.mirror).exists():
            raise SystemExit(f"Apache Paimon's mirror not found at {args.mirror} (the suite counts "
                             "read pypaimon's tests from it): --mirror, or --no-suite")
        sys.path.insert(0, str(ROOT / "scripts"))
        from pypaimon_suite import TESTS_COMMIT

        usage = suite_usage(args.mirror, TESTS_COMMIT)
    ref, ours = compare(args.pypaimon_python)
    md, missing = table(ref, ours, load_reasons(), usage)
    doc = args.out or DOC
    md = keep_suite_section(md, doc.read_text() if doc.exists() else "")
    if args.out:
        args.out.write_text(md)
    else:
        sys.stdout.write(md)
    if missing:
        print("members missing without a reason: " + ", ".join(missing), file=sys.stderr)
        if args.check:
            sys.exit(1)


if __name__ == "__main__":
    main()
