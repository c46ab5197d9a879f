"""``paimon-rs read`` (issue 31): rows in the table, csv, json and jsonl formats against the Python
API's read, ``--select``, ``--where`` (``with_filter``'s grammar, one parser; what it refuses a
usage error), ``--limit``, ``--snapshot``, and streaming batch by batch."""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import os
import sys
from typing import Any, Dict, List

import pyarrow as pa
import pytest

from paimon_rs import Schema
from paimon_rs.cli import EXIT_BROKEN_PIPE, main
from paimon_rs.table import TableRead

from unit_helpers import read, write

SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.string()), ("price", pa.float64()),
                    ("ok", pa.bool_()), ("day", pa.date32())])


def rows(ids: List[int], part: str = "a") -> pa.Table:
    return pa.table({"dt": [part] * len(ids), "id": ids, "v": [None if i == 3 else f"v{i}" for i in ids],
                     "price": [i * 1.5 for i in ids], "ok": [i % 2 == 0 for i in ids],
                     "day": [dt.date(2026, 1, 1 + i % 28) for i in ids]}, schema=SCHEMA)


@pytest.fixture
def t(catalog):
    catalog.create_table("db.t", Schema.from_pyarrow_schema(SCHEMA, partition_keys=["dt"],
                                                            options={"bucket": "1", "bucket-key": "id"}), False)
    t = catalog.get_table("db.t")
    write(t, rows(list(range(10)), "a"))
    write(t, rows([100, 101], "b"))
    write(t, rows(list(range(10, 20)), "a"))
    return t


def wh_of(t: Any) -> str:
    return os.path.dirname(os.path.dirname(t.table_path))


def out_of(capsys, *args: str, code: int = 0) -> str:
    assert main(list(args)) == code
    return capsys.readouterr().out


def expected(t: Any, **kw: Any) -> List[Dict[str, Any]]:
    return read(t, **kw).to_pylist()


def as_json(r: Dict[str, Any]) -> Dict[str, Any]:
    return {k: (v.isoformat() if isinstance(v, dt.date) else v) for k, v in r.items()}


def by_id(rs: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    return sorted(rs, key=lambda r: r["id"])


def test_json_and_jsonl_are_the_rows_of_the_python_read(t, capsys):
    want = by_id([as_json(r) for r in expected(t)])
    assert len(want) == 22
    got = json.loads(out_of(capsys, "read", t.table_path, "--format", "json"))
    assert by_id(got) == want
    assert json.loads(out_of(capsys, "read", wh_of(t), "db.t", "--json")) == got  # --json is --format json
    lines = out_of(capsys, "--warehouse", wh_of(t), "read", "db.t", "--format", "jsonl").splitlines()
    assert [json.loads(x) for x in lines] == got
    assert main(["read", t.table_path, "--json", "--format", "csv"]) == 2
    assert "--json and --format csv" in capsys.readouterr().err


def test_csv(t, capsys):
    text = out_of(capsys, "read", t.table_path, "--format", "csv")
    assert text.splitlines()[0] == "dt,id,v,price,ok,day"
    got = by_id([{**r, "id": int(r["id"])} for r in csv.DictReader(io.StringIO(text))])
    want = by_id(expected(t))
    assert len(got) == len(want) == 22
    for g, w in zip(got, want):
        assert g == {"dt": w["dt"], "id": w["id"], "v": w["v"] or "", "price": repr(w["price"]),
                     "ok": "true" if w["ok"] else "false", "day": w["day"].isoformat()}


def test_table_format(t, capsys):
    lines = out_of(capsys, "read", t.table_path, "--select", "id,v,ok", "--where", "id < 3").splitlines()
    assert lines[0].split() == ["id", "v", "ok"] and set(lines[1]) <= {"-", " "}
    assert sorted(line.split() for line in lines[2:]) == [["0", "v0", "true"], ["1", "v1", "false"],
                                                          ["2", "v2", "true"]]
    empty = out_of(capsys, "read", t.table_path, "--where", "id > 1000").splitlines()
    assert empty[0].split() == ["dt", "id", "v", "price", "ok", "day"] and empty[2] == "(none)"
    assert out_of(capsys, "read", t.table_path, "--where", "id > 1000", "--json") == "[]\n"
    assert out_of(capsys, "read", t.table_path, "--where", "id > 1000", "--format", "jsonl") == ""


def test_select(t, capsys):
    got = json.loads(out_of(capsys, "read", t.table_path, "--select", "price, id", "--json"))
    assert list(got[0]) == ["price", "id"]
    assert by_id(got) == by_id(expected(t, projection=["price", "id"]))
    for bad, msg in [("id,nope", "no column 'nope'"), ("id,,v", "empty column name"), ("id,id", "given twice")]:
        assert main(["read", t.table_path, "--select", bad]) == 2
        assert msg in capsys.readouterr().err


@pytest.mark.parametrize("where, build", [
    ("id >= 15", lambda pb: pb.greater_or_equal("id", 15)),
    ("id = 3", lambda pb: pb.equal("id", 3)),
    ("id != 3 AND id<5", lambda pb: pb.and_predicates([pb.not_equal("id", 3), pb.less_than("id", 5)])),
    ("id <> 3 and id <= 4", lambda pb: pb.and_predicates([pb.not_equal("id", 3), pb.less_or_equal("id", 4)])),
    ("v = 'v7'", lambda pb: pb.equal("v", "v7")),
    ("id = 1 or id = 2", lambda pb: pb.or_predicates([pb.equal("id", 1), pb.equal("id", 2)])),
    ("not id >= 3", lambda pb: pb.less_than("id", 3)),
    ("id in (1, 2) and v is not null", lambda pb: pb.and_predicates([pb.is_in("id", [1, 2]),
                                                                       pb.is_not_null("v")])),
    ("(id between 2 and 4) and v like 'v%'", lambda pb: pb.and_predicates([pb.between("id", 2, 4),
                                                                             pb.startswith("v", "v")])),
    ("dt = 'b'", lambda pb: pb.equal("dt", "b")),
    ("price > 20.5 and ok = true", lambda pb: pb.and_predicates([pb.greater_than("price", 20.5),
                                                                 pb.equal("ok", True)])),
    ("price < 3", lambda pb: pb.less_than("price", 3.0)),
    ("ok = FALSE", lambda pb: pb.equal("ok", False)),
    ("day >= '2026-01-15'", lambda pb: pb.greater_or_equal("day", dt.date(2026, 1, 15))),
    ("`id` > -1 and id > 18", lambda pb: pb.and_predicates([pb.greater_than("id", -1), pb.greater_than("id", 18)])),
])
def test_where_is_the_predicate_builders_filter(t, capsys, where, build):
    got = json.loads(out_of(capsys, "read", t.table_path, "--where", where, "--json"))
    want = by_id([as_json(r) for r in expected(t, predicate=build(t.new_read_builder().new_predicate_builder()))])
    assert want and by_id(got) == want


def test_where_on_a_column_not_selected(t, capsys):
    got = json.loads(out_of(capsys, "read", t.table_path, "--select", "v", "--where", "id >= 18 and id < 100",
                             "--json"))
    assert sorted(r["v"] for r in got) == ["v18", "v19"]


@pytest.mark.parametrize("where, msg", [
    ("id = 'x'", "the string 'x' for column 'id' of type int64"),
    ("id = 1.5", "not an integral value"),
    ("id = 99999999999999999999", "does not fit column 'id'"),
    ("v = v7", "unknown column 'v7'; did you mean 'v'?"),
    ("ok = 1", "use TRUE or FALSE"),
    ("day = 2026", "write DATE 'yyyy-mm-dd'"),
    ("day = '2026-13-01'", "not a date yyyy-mm-dd"),
    ("nope = 1", "unknown column 'nope'"),
    ("v not like 'a%'", "NOT LIKE on 'v' cannot be expressed"),
    ("id = 1 and", "found the end of the filter"),
    ("id = 1 id = 2", "unexpected 'id' (missing AND / OR?)"),
    ("id", "expected a comparison"),
    ("v = 'open", "unterminated string literal"),
    ("", "empty filter"),
])
def test_where_refuses_what_the_filter_grammar_refuses_as_a_usage_error(t, capsys, where, msg):
    """--where is read_builder.with_filter's grammar (paimon_rs.filter_parser): one parser."""
    assert main(["read", t.table_path, "--where", where]) == 2
    err = capsys.readouterr().err
    assert err.startswith("usage error: --where: ") and msg in err, err


def test_quotes_inside_strings(catalog, capsys):
    s = pa.schema([("id", pa.int64()), ("v", pa.string())])
    catalog.create_table("db.q", Schema.from_pyarrow_schema(s), False)
    t = catalog.get_table("db.q")
    write(t, pa.table({"id": [1, 2], "v": ["it's", 'say "hi"']}, schema=s))
    for where, ids in [("v = 'it''s'", [1]), ("v = 'say \"hi\"'", [2])]:
        assert [r["id"] for r in json.loads(out_of(capsys, "read", t.table_path, "--where", where, "--json"))] == ids


def test_limit_and_snapshot(t, capsys):
    assert len(json.loads(out_of(capsys, "read", t.table_path, "--limit", "3", "--json"))) == 3
    assert json.loads(out_of(capsys, "read", t.table_path, "--limit", "0", "--json")) == []
    got = json.loads(out_of(capsys, "read", t.table_path, "--snapshot", "1", "--json"))
    assert sorted(r["id"] for r in got) == list(range(10))
    got = json.loads(out_of(capsys, "read", t.table_path, "--snapshot", "2", "--where", "dt = 'b'", "--json"))
    assert sorted(r["id"] for r in got) == [100, 101]
    assert main(["read", t.table_path, "--limit", "-1"]) == 2
    assert "--limit must be >= 0" in capsys.readouterr().err
    assert main(["read", t.table_path, "--snapshot", "99"]) == 1
    captured = capsys.readouterr()
    assert captured.err.startswith("error: ") and "99" in captured.err and captured.out == ""


class _ClosedAfterFirstWrite(io.StringIO):
    """stdout whose reader goes away after the first write (``| head -1``)."""

    def write(self, s: str) -> int:
        if self.getvalue():
            raise BrokenPipeError(32, "Broken pipe")
        return super().write(s)

    def flush(self) -> None:
        if self.getvalue():
            raise BrokenPipeError(32, "Broken pipe")


def test_read_streams_batch_by_batch(t, monkeypatch, capsys):
    """The rows are written as the reader yields its batches: a reader that goes away after the
    first write stops the read after the first batch (to_arrow would have read all of them)."""
    pulled: List[int] = []
    orig = TableRead.to_arrow_batch_reader

    def counting(self: TableRead, splits: Any) -> pa.RecordBatchReader:
        r = orig(self, splits)

        def batches():
            for b in r:
                pulled.append(b.num_rows)
                yield b
        return pa.RecordBatchReader.from_batches(r.schema, batches())
    monkeypatch.setattr(TableRead, "to_arrow_batch_reader", counting)
    assert main(["read", t.table_path, "--format", "jsonl"]) == 0
    capsys.readouterr()
    assert len(pulled) == 3 and sum(pulled) == 22  # one batch per file
    pulled.clear()
    monkeypatch.setattr(sys, "stdout", _ClosedAfterFirstWrite())
    assert main(["read", t.table_path, "--format", "jsonl"]) == EXIT_BROKEN_PIPE
    assert len(pulled) == 1
    assert capsys.readouterr().err == ""
