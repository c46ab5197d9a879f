"""The ``paimon-rs`` / ``python -m paimon_rs`` CLI framework (issue 15): every command's JSON
output against the Python API, plain aligned text, rich tables in a terminal, exit codes, and
the registration pattern (``COMMAND_MODULES``, ``register(subparsers)``)."""

from __future__ import annotations

import io
import json
import os
import sys
import time
from typing import Any, List

import pyarrow as pa
import pytest

from paimon_rs import Schema
from paimon_rs.cli import COMMAND_MODULES, build_parser, main
from paimon_rs.cli.base import Column, Record, Rows, Text, human_size, render

from unit_helpers import write

SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.string())])


def rows(ids, dt="a"):
    return pa.table({"dt": [dt] * len(ids), "id": ids, "v": [f"v{i}" for i in ids]}, schema=SCHEMA)


@pytest.fixture
def t(catalog):
    catalog.create_table("db.t", Schema.from_pyarrow_schema(
        SCHEMA, partition_keys=["dt"], options={"bucket": "2", "bucket-key": "id"}, comment="demo"), False)
    t = catalog.get_table("db.t")
    write(t, rows(list(range(10)), "a"))
    write(t, rows([100, 101], "b"))
    write(t, rows(list(range(10, 20)), "a"))
    return t


def run_json(capsys, *args: str) -> Any:
    assert main([*args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def run_text(capsys, *args: str) -> str:
    assert main([*args]) == 0
    return capsys.readouterr().out


def test_every_listed_command_registers():
    sub = build_parser()._subparsers._group_actions[0]  # type: ignore[union-attr]
    names = set(sub.choices)
    assert {"tables", "schema", "snapshots", "files", "partitions", "compact", "remove-orphans"} <= names
    assert len(COMMAND_MODULES) == len(set(COMMAND_MODULES))


def test_tables(t, capsys):
    wh = os.path.dirname(os.path.dirname(t.table_path))
    got = run_json(capsys, "tables", wh)
    assert got == [{"database": "db", "table": "t", "primary_keys": [], "partition_keys": ["dt"], "bucket": 2,
                    "latest_snapshot": 3, "records": 22,
                    "last_commit": t.snapshot_manager().get_latest_snapshot().time_millis}]
    assert run_json(capsys, "tables", wh, "db") == got
    out = run_text(capsys, "tables", wh)
    head, rule, line = out.splitlines()
    assert head.split() == ["database", "table", "primary", "keys", "partition", "keys", "bucket", "snapshot",
                            "records", "last", "commit"]
    assert set(rule) <= {"-", " "} and line.split()[:5] == ["db", "t", "dt", "2", "3"]


def test_schema(t, capsys):
    got = run_json(capsys, "schema", t.table_path)
    assert got["table"]["table"] == "db.t" and got["table"]["comment"] == "demo"
    assert got["table"]["partition_keys"] == ["dt"]
    assert [(f["id"], f["name"], f["type"]) for f in got["fields"]] == [(0, "dt", "STRING"), (1, "id", "BIGINT"),
                                                                          (2, "v", "STRING")]
    assert got["options"]["bucket"] == "2"
    out = run_text(capsys, "schema", t.table_path)
    assert "columns" in out and "BIGINT" in out and "bucket-key" in out


def test_snapshots(t, capsys):
    got = run_json(capsys, "snapshots", t.table_path)
    snaps = t.snapshot_manager().list_snapshots()
    assert [g["id"] for g in got] == [1, 2, 3]
    for g, s in zip(got, snaps):
        assert g == {k: getattr(s, k) for k in g}
    assert [g["total_record_count"] for g in got] == [10, 12, 22]
    assert [g["id"] for g in run_json(capsys, "snapshots", t.table_path, "--limit", "2")] == [2, 3]
    one = run_json(capsys, "snapshots", t.table_path, "--id", "2")
    assert one == snaps[1].to_dict()
    assert main(["snapshots", t.table_path, "--id", "9"]) == 2
    assert "no snapshot 9" in capsys.readouterr().err


def test_partitions(t, capsys):
    got = run_json(capsys, "partitions", t.table_path)
    parts = t.list_partitions()
    assert [(g["partition"], g["spec"], g["record_count"], g["file_size_in_bytes"], g["file_count"],
             g["total_buckets"], g["last_file_creation_time"]) for g in got] == \
        [(",".join(f"{k}={v}" for k, v in p.spec.items()), p.spec, p.record_count, p.file_size_in_bytes,
          p.file_count, p.total_buckets, p.last_file_creation_time) for p in parts]
    assert [g["record_count"] for g in got] == [20, 2]
    assert [g["record_count"] for g in run_json(capsys, "partitions", t.table_path, "--snapshot", "1")] == [10]
    out = run_text(capsys, "partitions", t.table_path)
    assert "dt=a" in out and ("KiB" in out or " B" in out)


def test_files(t, capsys):
    got = run_json(capsys, "files", t.table_path)
    planned = sorted((s.bucket, f.file_name, f.row_count, f.file_size, f.level)
                     for s in t.new_read_builder().new_scan().plan().splits() for f in s.files)
    assert sorted((g["bucket"], g["file_name"], g["row_count"], g["file_size"], g["level"]) for g in got) == planned
    assert {g["partition"] for g in got} == {"dt=a/", "dt=b/"}
    assert [(g["partition"], g["bucket"]) for g in got] == sorted((g["partition"], g["bucket"]) for g in got)
    summary = run_json(capsys, "files", t.table_path, "--summary")
    assert sum(b["files"] for b in summary) == len(got) and sum(b["rows"] for b in summary) == 22
    assert all(b["levels"] == {"L0": b["files"]} for b in summary)


def test_compact_json(t, capsys):
    write(t, rows(list(range(20, 30)), "a"))  # 3 files in each bucket of dt=a: enough to compact
    got = run_json(capsys, "compact", t.table_path, "--full", "--partition", "dt=a")
    assert got["snapshot_id"] == 5 and got["rows_before"] == got["rows_after"] == 30
    assert got["files_before"] == 6 and got["files_after"] == 2
    plan = run_json(capsys, "compact", t.table_path, "--plan")
    assert {(p["partition"], p["bucket"]) for p in plan} >= {("dt=a/", 0), ("dt=b/", 0)}


def test_remove_orphans(t, capsys):
    orphan = os.path.join(t.table_path, "dt=a", "bucket-0", "data-orphan.parquet")
    with open(orphan, "wb") as f:
        f.write(b"x" * 10)
    old = time.time() - 7200
    os.utime(orphan, (old, old))
    got = run_json(capsys, "remove-orphans", t.table_path, "--older-than", "1h", "--dry-run")
    assert got["summary"] == {"dry_run": True, "files": 1, "bytes": 10, "directories": 0}
    assert got["files"] == [{"path": "dt=a/bucket-0/data-orphan.parquet"}]
    assert os.path.exists(orphan)
    assert run_json(capsys, "remove-orphans", t.table_path, "--older-than", "3h")["summary"]["files"] == 0
    assert run_json(capsys, "remove-orphans", t.table_path, "--older-than", "30m")["summary"]["files"] == 1
    assert not os.path.exists(orphan)
    assert main(["remove-orphans", t.table_path, "--older-than", "soon"]) == 2
    assert "duration" in capsys.readouterr().err


def test_exit_codes(t, tmp_path, capsys):
    assert main([]) == 2
    assert main(["nope"]) == 2
    assert main(["--help"]) == 0
    assert main(["schema", str(tmp_path / "wh" / "db.db" / "missing")]) == 1
    assert "missing" in capsys.readouterr().err
    assert main(["schema", "a", "b", "c"]) == 2
    assert main(["tables", str(tmp_path / "nowhere"), "nodb"]) == 1


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


RESULT = [Record("info", {"name": "x", "size": 2048, "at": 0}, title="info", kinds={"size": "bytes"}),
          Rows("rows", [Column("k"), Column("n", "int"), Column("b", "bytes", "size")],
               [{"k": "a", "n": 1, "b": 10}, {"k": "bbb", "n": 1000, "b": 3 * 2**20}], title="table")]


def test_plain_text_is_aligned():
    out = io.StringIO()
    render(RESULT, as_json=False, plain=False, stream=out)
    lines = out.getvalue().splitlines()
    assert lines[:3] == ["info", "name  x", "size  2.0 KiB"]
    assert lines[5:] == ["table", "k       n     size", "---  ----  -------", "a       1     10 B",
                         "bbb  1000  3.0 MiB"]


def test_rich_tables_in_a_terminal():
    pytest.importorskip("rich")
    out = _Tty()
    render(RESULT, as_json=False, plain=False, stream=out)
    text = out.getvalue()
    assert "┃" in text or "│" in text, text
    assert "3.0 MiB" in text
    plain = _Tty()
    render(RESULT, as_json=False, plain=True, stream=plain)
    assert "│" not in plain.getvalue()


def test_without_rich_a_terminal_gets_plain_text(monkeypatch):
    monkeypatch.setitem(sys.modules, "rich", None)
    monkeypatch.setitem(sys.modules, "rich.console", None)
    out = _Tty()
    render(RESULT, as_json=False, plain=False, stream=out)
    assert out.getvalue().splitlines()[6] == "k       n     size"


def test_json_of_one_and_several_results():
    out = io.StringIO()
    render(RESULT, as_json=True, plain=False, stream=out)
    assert json.loads(out.getvalue()) == {"info": {"name": "x", "size": 2048, "at": 0},
                                          "rows": [{"k": "a", "n": 1, "b": 10}, {"k": "bbb", "n": 1000,
                                                                                  "b": 3 * 2**20}]}
    out = io.StringIO()
    render(Text("t", "hello", {"a": 1}), as_json=True, plain=False, stream=out)
    assert json.loads(out.getvalue()) == {"a": 1}
    assert human_size(1536) == "1.5 KiB" and human_size(5) == "5 B"


def test_console_script_is_declared():
    from importlib.metadata import entry_points
    eps: List[Any] = [e for e in entry_points(group="console_scripts") if e.name == "paimon-rs"]
    assert eps and eps[0].value == "paimon_rs.cli:console_main"


def test_compact_shows_progress_per_bucket_on_stderr(t, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "tqdm", None)
    write(t, rows(list(range(20, 30)), "a"))
    assert main(["compact", t.table_path, "--full"]) == 0
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    # 4 buckets (dt=a and dt=b have 2 each; dt=b's have one file: nothing to do)
    assert lines[0] == "compacting db.t: 0/4 buckets, 0 files (0 B, 0 rows) -> 0 files"
    assert lines[-1].startswith("compacting db.t: 4/4 buckets, 6 files (") and lines[-1].endswith("30 rows) -> 2 files")
    assert len(lines) == 5 and "files 6 -> 2" in captured.out
