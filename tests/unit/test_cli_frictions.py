"""Command-line frictions of issue 31: ``--version``; ``--warehouse``; a missing warehouse,
database or table is an error naming it (closest database or table name suggested) and creates
nothing; no broken-pipe noise when the output is piped into ``head``; a relative warehouse."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Dict, List, Optional, Tuple

import pyarrow as pa
import pytest

import paimon_rs
from paimon_rs import CatalogFactory, Schema
from paimon_rs.cli import EXIT_BROKEN_PIPE, main

from unit_helpers import write

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])
PK_SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])


def cli(*args: str, cwd: Optional[str] = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "paimon_rs", *args], capture_output=True, text=True,
                          timeout=300, cwd=cwd)


def tree(root: str) -> List[str]:
    """Every directory and file under ``root`` (and whether ``root`` exists)."""
    out = [f"exists={os.path.exists(root)}"]
    for d, dirs, files in os.walk(root):
        out += [os.path.join(d, n) for n in sorted(dirs) + sorted(files)]
    return sorted(out)


@pytest.fixture
def wh(tmp_path) -> str:
    """A local warehouse with ``db.t`` (two commits) and an empty database ``other``."""
    path = str(tmp_path / "wh")
    cat = CatalogFactory.create({"warehouse": path})
    cat.create_database("db", True)
    cat.create_database("other", True)
    cat.create_table("db.t", Schema.from_pyarrow_schema(SCHEMA), False)
    t = cat.get_table("db.t")
    write(t, pa.table({"id": [1, 2], "v": ["a", "b"]}, schema=SCHEMA))
    write(t, pa.table({"id": [3], "v": ["c"]}, schema=SCHEMA))
    return path


def test_version(capsys):
    assert main(["--version"]) == 0
    assert capsys.readouterr().out == f"paimon-rs {paimon_rs.__version__}\n"
    p = cli("--version")
    assert (p.returncode, p.stdout, p.stderr) == (0, f"paimon-rs {paimon_rs.__version__}\n", "")


def test_global_warehouse_option(wh, capsys):
    assert main(["--warehouse", wh, "snapshots", "db.t", "--json"]) == 0
    assert '"id": 2' in capsys.readouterr().out
    assert main(["--warehouse", wh, "tables", "db"]) == 0
    assert "db" in capsys.readouterr().out
    assert main(["--warehouse", wh, "tables"]) == 0
    capsys.readouterr()
    # the warehouse given twice, or a table path with --warehouse, is a usage error
    for args in (["snapshots", wh, "db.t"], ["snapshots", os.path.join(wh, "db.db", "t")], ["tables", wh, "db"]):
        assert main(["--warehouse", wh, *args]) == 2, args
        assert "--warehouse" in capsys.readouterr().err
    assert main(["tables"]) == 2
    assert "give the warehouse" in capsys.readouterr().err


#: Every command naming a table, with the arguments it needs besides the table.
TABLE_COMMANDS: Dict[str, List[str]] = {
    "schema": [], "alter": ["--set", "k=v"], "snapshots": [], "partitions": [], "files": [], "read": [],
    "compact": ["--quiet"], "remove-orphans": [], "tags": [], "create-tag": ["--name", "x"],
    "rollback": ["--snapshot", "1"], "expire": [], "branches": [], "create-branch": ["--name", "b"],
    "delete-branch": ["--name", "b"], "fast-forward": ["--name", "b"],
}


def test_every_table_command_is_checked():
    from paimon_rs.cli import build_parser
    sub = build_parser()._subparsers._group_actions[0]  # type: ignore[union-attr]
    assert set(sub.choices) == set(TABLE_COMMANDS) | {"tables"}


def _forms(wh: str, db: str, table: str) -> List[Tuple[str, List[str]]]:
    return [("path", [os.path.join(wh, f"{db}.db", table)]), ("wh db.t", [wh, f"{db}.{table}"]),
            ("--warehouse", ["--warehouse", wh, f"{db}.{table}"])]


def _args(command: str, form: List[str]) -> List[str]:
    if form[0] == "--warehouse":
        return [form[0], form[1], command, form[2], *TABLE_COMMANDS[command]]
    return [command, *form, *TABLE_COMMANDS[command]]


@pytest.mark.parametrize("command", sorted(TABLE_COMMANDS))
def test_a_missing_table_is_an_error_and_creates_nothing(wh, tmp_path, capsys, command):
    before = tree(str(tmp_path))
    missing_wh = str(tmp_path / "nowhere")
    cases = [
        (missing_wh, "db", "t", f"table 'db.t': warehouse '{missing_wh}' does not exist"),
        (wh, "dbb", "t", f"table 'dbb.t': database 'dbb' does not exist in warehouse '{wh}' (did you mean 'db'?)"),
        (wh, "zzz", "t", f"table 'zzz.t': database 'zzz' does not exist in warehouse '{wh}'\n"),
        (wh, "db", "tt", f"table 'db.tt' does not exist in warehouse '{wh}' (did you mean 't'?)"),
        (wh, "other", "t", f"table 'other.t' does not exist in warehouse '{wh}'\n"),
    ]
    for w, db, table, msg in cases:
        for form, spec in _forms(w, db, table):
            assert main(_args(command, spec)) == 1, (form, w, db, table)
            err = capsys.readouterr().err
            assert err.startswith("error: ") and msg in err, (form, err)
    assert tree(str(tmp_path)) == before


def test_tables_of_a_missing_warehouse_or_database(wh, tmp_path, capsys):
    before = tree(str(tmp_path))
    typo = str(tmp_path / "wh2")
    for args in (["tables", typo], ["--warehouse", typo, "tables"], ["tables", typo, "db"]):
        assert main(args) == 1
        assert capsys.readouterr().err == f"error: warehouse '{typo}' does not exist\n"
    for args in (["tables", wh, "dbx"], ["--warehouse", wh, "tables", "dbx"]):
        assert main(args) == 1
        assert capsys.readouterr().err == (f"error: database 'dbx' does not exist in warehouse '{wh}' "
                                           f"(did you mean 'db'?)\n")
    assert main(["tables", str(tmp_path / "wh" / "db.db" / "t" / "schema" / "schema-0")]) == 1
    assert "is not a directory" in capsys.readouterr().err
    assert tree(str(tmp_path)) == before
    # through the console script too
    p = cli("--warehouse", typo, "tables", "db")
    assert (p.returncode, p.stdout, p.stderr) == (1, "", f"error: warehouse '{typo}' does not exist\n")
    assert not os.path.exists(typo)


def test_file_uri_table_path(wh, capsys):
    """``file:///.../wh/db.db/t`` names a local table as the plain path does (from_path alone
    read the URI as a relative path: "no table at 'file:///...'")."""
    for spec in ([f"file://{wh}/db.db/t"], [f"file://{wh}", "db.t"]):
        assert main(["snapshots", *spec, "--json"]) == 0, capsys.readouterr().err
        assert [s["id"] for s in json.loads(capsys.readouterr().out)] == [1, 2]
    assert main(["snapshots", f"file://{wh}/db.db/tt"]) == 1
    assert f"table 'db.tt' does not exist in warehouse '{wh}'" in capsys.readouterr().err


def test_a_missing_branch_is_still_an_error(wh, capsys):
    assert main(["snapshots", wh, "db.t$branch_nope"]) == 1
    assert "nope" in capsys.readouterr().err


def _env(unbuffered: bool) -> Dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    return {**env, "PYTHONUNBUFFERED": "1"} if unbuffered else env


@pytest.mark.parametrize("unbuffered", [False, True], ids=["buffered", "unbuffered"])
@pytest.mark.parametrize("args, code", [
    (["files", "db.t"], EXIT_BROKEN_PIPE), (["snapshots", "db.t"], EXIT_BROKEN_PIPE), (["tables"], EXIT_BROKEN_PIPE),
    (["read", "db.t"], EXIT_BROKEN_PIPE),
    (["--help"], None),  # 141, or 0 when stdout is unbuffered: argparse ignores a failed write of the help
])
def test_any_command_into_a_closed_pipe_exits_quietly(wh, args, code, unbuffered):
    """The reader is gone before the command writes anything (``... | head -0``)."""
    p = subprocess.Popen([sys.executable, "-m", "paimon_rs", "--warehouse", wh, *args], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env=_env(unbuffered))
    assert p.stdout is not None and p.stderr is not None
    p.stdout.close()
    err = p.stderr.read()
    rc = p.wait(timeout=300)
    assert err == b"" and rc == (code if code is not None else (0 if unbuffered else EXIT_BROKEN_PIPE))


def _big_table(tmp_path) -> str:
    path = str(tmp_path / "wh")
    cat = CatalogFactory.create({"warehouse": path})
    cat.create_database("db", True)
    cat.create_table("db.t", Schema.from_pyarrow_schema(SCHEMA), False)
    t = cat.get_table("db.t")
    for c in range(3):
        ids = list(range(c * 20000, (c + 1) * 20000))
        write(t, pa.table({"id": ids, "v": [f"value-{i}" for i in ids]}, schema=SCHEMA))
    return path


@pytest.mark.parametrize("unbuffered", [False, True], ids=["buffered", "unbuffered"])
@pytest.mark.parametrize("fmt", ["table", "csv", "jsonl", "json"])
def test_read_into_head_exits_quietly(tmp_path, fmt, unbuffered):
    """``paimon-rs read ... | head -1``: one line out, nothing on stderr (the output, about 1.5 MB,
    is far more than a pipe holds, so the writes after head left fail with EPIPE)."""
    wh = _big_table(tmp_path)
    cmd = f"{sys.executable} -m paimon_rs --warehouse {wh} read db.t --format {fmt} 2>{tmp_path}/err | head -1"
    p = subprocess.run(["bash", "-c", f"{cmd}; echo ${{PIPESTATUS[0]}} >{tmp_path}/code"], capture_output=True,
                       text=True, timeout=300, env=_env(unbuffered))
    assert p.returncode == 0 and len(p.stdout.splitlines()) == 1 and p.stderr == ""
    assert open(tmp_path / "err").read() == ""
    assert open(tmp_path / "code").read().strip() == str(EXIT_BROKEN_PIPE)


def test_relative_warehouse(tmp_path, monkeypatch):
    """A primary-key table (bucket=1) in the relative warehouse ``wh``, eight commits (so that
    compaction runs), then ``paimon-rs --warehouse wh compact db.t`` and ``read db.t`` from that
    directory."""
    monkeypatch.chdir(tmp_path)
    cat = CatalogFactory.create({"warehouse": "wh"})
    cat.create_database("db", True)
    cat.create_table("db.t", Schema.from_pyarrow_schema(PK_SCHEMA, primary_keys=["id"], options={"bucket": "1"}),
                     False)
    t = cat.get_table("db.t")
    for c in range(8):
        write(t, pa.table({"id": [c, c + 100], "v": [f"v{c}", f"w{c}"]}, schema=PK_SCHEMA))
    assert "COMPACT" in [s.commit_kind for s in t.snapshot_manager().list_snapshots()]
    p = cli("--warehouse", "wh", "compact", "db.t", "--quiet", cwd=str(tmp_path))
    assert p.returncode == 0, p.stderr
    p = cli("--warehouse", "wh", "compact", "db.t", "--full", "--quiet", cwd=str(tmp_path))
    assert p.returncode == 0, p.stderr
    assert "snapshot" in p.stdout and "COMPACT" == t.snapshot_manager().get_latest_snapshot().commit_kind
    p = cli("--warehouse", "wh", "read", "db.t", "--format", "csv", cwd=str(tmp_path))
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0] == "id,v"
    assert sorted(lines[1:], key=lambda x: int(x.split(",")[0])) == \
        [f"{c},v{c}" for c in range(8)] + [f"{c + 100},w{c}" for c in range(8)]
    p = cli("read", "wh/db.db/t", "--format", "csv", cwd=str(tmp_path))
    assert p.returncode == 0 and len(p.stdout.splitlines()) == 17, p.stderr
