"""Writing data-evolution tables (``row-tracking.enabled`` + ``data-evolution.enabled``) with
paimon_rs alone: Java's create checks, whole-row appends numbered by the commit, appends of a
column subset (``with_write_type``: files of those columns, ``write_cols`` set, as pypaimon),
files whose ``first_row_id`` the caller set (new values of some columns of a file group, or new
rows the caller numbers: Java's and pypaimon's commit keeps the id), and what paimon_rs
does not write there (delete, merge, compaction, the other data-evolution options) refused.
Interop with pypaimon: tests/compat/test_pypaimon_data_evolution_write.py."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from paimon_rs import CatalogFactory, Schema
from paimon_rs.exceptions import (
    CommitConflictError,
    InvalidArgumentError,
    PaimonRsError,
    SchemaMismatchError,
    UnsupportedError,
)

SCH = pa.schema([("id", pa.int64()), ("a", pa.int64()), ("b", pa.string())])
DE = {"row-tracking.enabled": "true", "data-evolution.enabled": "true"}


def _table(path, options=None, pk=None, name="db.t"):
    c = CatalogFactory.create({"warehouse": str(path)})
    c.create_database("db", True)
    c.create_table(name, Schema.from_pyarrow_schema(SCH, primary_keys=pk, options=options or DE), False)
    return c.get_table(name)


def _write(t, data, cols=None):
    wb = t.new_batch_write_builder()
    w = wb.new_write()
    if cols is not None:
        w.with_write_type(cols)
    w.write_arrow(data)
    c = wb.new_commit()
    c.commit(w.prepare_commit())
    w.close()
    c.close()


def _read(t, cols):
    rb = t.new_read_builder().with_projection(cols)
    return sorted(rb.new_read().to_arrow(rb.new_scan().plan().splits()).to_pylist(),
                  key=lambda r: r["_ROW_ID"])


@pytest.mark.parametrize("options, pk, error, message", [
    ({"data-evolution.enabled": "true"}, None, InvalidArgumentError,
     "Data evolution config must enabled with row-tracking.enabled"),
    (DE, ["id"], InvalidArgumentError, "primary-key"),
    (dict(DE, bucket="2", **{"bucket-key": "id"}), None, InvalidArgumentError, "only support bucket = -1"),
    # the rest of the family: not implemented, refused by name
    (dict(DE, **{"data-evolution.row-sidecar.enabled": "true"}), None, UnsupportedError,
     "data-evolution.row-sidecar.enabled"),
])
def test_create_checks(tmp_path, options, pk, error, message):
    with pytest.raises(error, match=message):
        _table(tmp_path, options, pk)


def test_appends_numbered_by_commit(tmp_path):
    t = _table(tmp_path)
    _write(t, pa.table({"id": [1, 2, 3], "a": [10, 20, 30], "b": ["x", "y", "z"]}, schema=SCH))
    _write(t, pa.table({"id": [4, 5], "a": [40, 50], "b": ["u", "v"]}, schema=SCH))
    got = _read(t, ["_ROW_ID", "id", "a", "b", "_SEQUENCE_NUMBER"])
    assert [(r["_ROW_ID"], r["id"], r["_SEQUENCE_NUMBER"]) for r in got] == [
        (0, 1, 1), (1, 2, 1), (2, 3, 1), (3, 4, 2), (4, 5, 2)]
    snap = json.loads((tmp_path / "db.db" / "t" / "snapshot" / "snapshot-2").read_text())
    assert snap["nextRowId"] == 5


def test_column_subset_append(tmp_path):
    t = _table(tmp_path)
    _write(t, pa.table({"id": [1, 2], "a": [10, 20], "b": ["x", "y"]}, schema=SCH))
    _write(t, pa.table({"id": [3], "b": ["z"]}), cols=["id", "b"])
    got = _read(t, ["_ROW_ID", "id", "a", "b"])
    assert got == [{"_ROW_ID": 0, "id": 1, "a": 10, "b": "x"}, {"_ROW_ID": 1, "id": 2, "a": 20, "b": "y"},
                   {"_ROW_ID": 2, "id": 3, "a": None, "b": "z"}]
    with pytest.raises(SchemaMismatchError, match="with_write_type"):
        _write(t, pa.table({"id": [4], "a": [1]}), cols=["id", "b"])


def test_what_is_not_written_is_refused(tmp_path):
    t = _table(tmp_path, dict(DE, **{"deletion-vectors.enabled": "true"}))
    _write(t, pa.table({"id": [1, 2], "a": [10, 20], "b": ["x", "y"]}, schema=SCH))
    with pytest.raises(UnsupportedError, match="data-evolution"):
        t.delete("id = 1")
    with pytest.raises(UnsupportedError, match="data-evolution"):
        t.merge(pa.table({"id": [1], "a": [1], "b": ["q"]}, schema=SCH), on=["id"]) \
            .when_matched_update_all().execute()
    with pytest.raises(UnsupportedError, match="data-evolution.enabled = true"):
        t.compact(full=True)
    # nothing changed
    assert [r["id"] for r in _read(t, ["_ROW_ID", "id"])] == [1, 2]


_rows = st.lists(st.tuples(st.integers(-5, 5), st.one_of(st.none(), st.text("xy", max_size=2))),
                 min_size=1, max_size=5)


@settings(max_examples=15, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([None, ["id", "a"], ["id", "b"], ["b", "id"]]), _rows),
                min_size=1, max_size=4))
def test_appends_against_a_model(tmp_path_factory, commits):
    """Whole-row and column-subset appends against a dict model keyed by _ROW_ID."""
    t = _table(tmp_path_factory.mktemp("de"))
    model, nxt, k = {}, 0, 0
    for cols, rows in commits:
        data = {"id": [], "a": [], "b": []}
        for a, b in rows:
            data["id"].append(k)
            data["a"].append(a)
            data["b"].append(b)
            k += 1
        full = cols or ["id", "a", "b"]
        _write(t, pa.table({c: data[c] for c in full}, schema=pa.schema([SCH.field(c) for c in full])), cols)
        for i in range(len(rows)):
            model[nxt] = {c: (data[c][i] if c in full else None) for c in ("id", "a", "b")}
            nxt += 1
    got = {r.pop("_ROW_ID"): r for r in _read(t, ["_ROW_ID", "id", "a", "b"])}
    assert got == model


def _partial(t, data, cols, first_row_id=None):
    """A ``with_write_type(cols)`` write, its files' ``first_row_id`` set when given (pypaimon's
    tests do it that way); returns the committed files' ``write_cols``."""
    wb = t.new_batch_write_builder()
    w = wb.new_write().with_write_type(cols)
    w.write_arrow(data)
    msgs = w.prepare_commit()
    written = [f.write_cols for m in msgs for f in m.new_files]
    if first_row_id is not None:
        for m in msgs:
            for f in m.new_files:
                f.first_row_id = first_row_id
    c = wb.new_commit()
    try:
        c.commit(msgs)
    finally:
        w.close()
        c.close()
    return written


def _next_row_id(path, t):
    sid = t.latest_snapshot_id()
    return json.loads((path / "db.db" / "t" / "snapshot" / f"snapshot-{sid}").read_text())["nextRowId"]


def test_partial_files_hold_the_written_columns_only(tmp_path):
    import pyarrow.parquet as pq

    t = _table(tmp_path)
    assert _partial(t, pa.table({"b": ["z"], "id": [3]}), ["b", "id"]) == [["id", "b"]]
    [split] = t.new_read_builder().new_scan().plan().splits()
    [f] = split.files
    assert f.write_cols == ["id", "b"] and f.first_row_id == 0
    bucket = tmp_path / "db.db" / "t" / "bucket-0"
    assert pq.read_schema(bucket / f.file_name).names == ["id", "b"]
    assert _read(t, ["_ROW_ID", "id", "a", "b"]) == [{"_ROW_ID": 0, "id": 3, "a": None, "b": "z"}]
    # every table column with the left-out ones null is taken (pypaimon's input), values there
    # would be lost: refused
    _partial(t, pa.table({"id": [4], "a": pa.array([None], pa.int64()), "b": ["w"]}), ["id", "b"])
    with pytest.raises(SchemaMismatchError, match="'a'"):
        _partial(t, pa.table({"id": [5], "a": [1], "b": ["v"]}), ["id", "b"])
    assert [r["b"] for r in _read(t, ["_ROW_ID", "b"])] == ["z", "w"]


def test_caller_set_first_row_id_updates_a_group(tmp_path):
    """pypaimon's test_basic: write id, a, b; then ``with_write_type(['a'])`` of 2 rows with
    ``first_row_id = 0``: the read shows the new ``a`` over the old ``id`` and ``b``."""
    t = _table(tmp_path)
    _write(t, pa.table({"id": [1, 2], "a": [10, 20], "b": ["x", "y"]}, schema=SCH))
    _partial(t, pa.table({"a": [-1, -2]}), ["a"], first_row_id=0)
    assert _read(t, ["_ROW_ID", "id", "a", "b", "_SEQUENCE_NUMBER"]) == [
        {"_ROW_ID": 0, "id": 1, "a": -1, "b": "x", "_SEQUENCE_NUMBER": 2},
        {"_ROW_ID": 1, "id": 2, "a": -2, "b": "y", "_SEQUENCE_NUMBER": 2}]
    assert _next_row_id(tmp_path, t) == 2


def test_caller_numbered_new_rows_keep_next_row_id(tmp_path):
    """pypaimon's test_multiple_appends / test_more_data: partial files of new rows at ids the
    caller chose (from nextRowId on) make a group together; nextRowId does not move for them
    (Java), so the next numbered append lands on the same ids and adds its columns."""
    t = _table(tmp_path)
    _write(t, pa.table({"id": [1], "a": [10], "b": ["x"]}, schema=SCH))
    wb = t.new_batch_write_builder()
    w0, w1 = wb.new_write().with_write_type(["id", "a"]), wb.new_write().with_write_type(["b"])
    w0.write_arrow(pa.table({"id": [2, 3], "a": [20, 30]}))
    w1.write_arrow(pa.table({"b": ["y", "z"]}))
    msgs = w0.prepare_commit() + w1.prepare_commit()
    for m in msgs:
        for f in m.new_files:
            f.first_row_id = 1
    wb.new_commit().commit(msgs)
    assert _next_row_id(tmp_path, t) == 1
    assert _read(t, ["_ROW_ID", "id", "a", "b"]) == [
        {"_ROW_ID": 0, "id": 1, "a": 10, "b": "x"}, {"_ROW_ID": 1, "id": 2, "a": 20, "b": "y"},
        {"_ROW_ID": 2, "id": 3, "a": 30, "b": "z"}]
    # numbered from the unchanged nextRowId: the group at 1 gets a newer b
    _partial(t, pa.table({"b": ["q", "r"]}), ["b"])
    assert [(r["_ROW_ID"], r["b"]) for r in _read(t, ["_ROW_ID", "b"])] == [(0, "x"), (1, "q"), (2, "r")]


def test_caller_set_ids_that_are_not_a_group_are_refused(tmp_path):
    t = _table(tmp_path)
    _write(t, pa.table({"id": [1, 2, 3], "a": [10, 20, 30], "b": ["x", "y", "z"]}, schema=SCH))
    before = t.latest_snapshot_id()
    # part of the group at 0, and a range straddling it: conflicts naming the table and file
    for first, n in ((0, 2), (1, 3)):
        with pytest.raises(CommitConflictError, match=r"db\.t.*file 'data-.*first_row_id"):
            _partial(t, pa.table({"a": list(range(n))}), ["a"], first_row_id=first)
    with pytest.raises(InvalidArgumentError, match="first_row_id -1"):
        _partial(t, pa.table({"a": [1]}), ["a"], first_row_id=-1)
    assert t.latest_snapshot_id() == before
    # two files of column a of one group in one commit: a read could take either
    wb = t.new_batch_write_builder()
    msgs = []
    for v in (1, 2):
        w = wb.new_write().with_write_type(["a"])
        w.write_arrow(pa.table({"a": [v] * 3}))
        msgs += w.prepare_commit()
    for m in msgs:
        for f in m.new_files:
            f.first_row_id = 0
    with pytest.raises(InvalidArgumentError, match="two updates of column 'a'"):
        wb.new_commit().commit(msgs)
    assert t.latest_snapshot_id() == before


def _with_ids(t, parts):
    """One commit of ``with_write_type`` writes: ``parts`` = (columns, rows, first_row_id or None
    for a file the commit numbers)."""
    wb = t.new_batch_write_builder()
    msgs, writers = [], []
    for cols, n, first in parts:
        w = wb.new_write().with_write_type(cols)
        w.write_arrow(pa.table({c: ([f"v{i}" for i in range(n)] if c == "b" else list(range(n)))
                                for c in cols}, schema=pa.schema([SCH.field(c) for c in cols])))
        m = w.prepare_commit()
        if first is not None:
            for x in m:
                for f in x.new_files:
                    f.first_row_id = first
        msgs += m
        writers.append(w)
    try:
        wb.new_commit().commit(msgs)
    finally:
        for w in writers:
            w.close()


@pytest.mark.parametrize("parts, later", [
    # two caller files from nextRowId on that overlap without the same range
    ([(["id", "a"], 2, 1), (["b"], 2, 2)], None),
    # a caller file and the file the same commit numbers over its ids (3 rows vs 2)
    ([(["b"], 3, 1), (["id", "a"], 2, None)], None),
    # caller files of 2 rows at nextRowId, then an append of 3 rows numbered over them
    ([(["id", "a"], 2, 1), (["b"], 2, 1)], [(["id", "a", "b"], 3, None)]),
    # a caller file past nextRowId straddling the live caller group at 1..2
    ([(["id", "a"], 2, 1), (["b"], 2, 1)], [(["b"], 2, 2)]),
])
def test_caller_ids_that_would_make_the_table_unreadable_are_refused(tmp_path, parts, later):
    """Row-id ranges must be equal or disjoint among the commit's caller-set files, its numbered
    files and the live files (the reader merges only files of the same range, as Java's; Java's
    commit checks the ranges only with a row-id check): before, the commit succeeded and every
    read of the table failed (review33b F2)."""
    t = _table(tmp_path)
    _write(t, pa.table({"id": [1], "a": [10], "b": ["x"]}, schema=SCH))
    if later is not None:
        _with_ids(t, parts)
        parts = later
    before = t.latest_snapshot_id()
    with pytest.raises(InvalidArgumentError, match=r"db\.t.*file .data-.*row ids \d+\.\.=\d+"):
        _with_ids(t, parts)
    assert t.latest_snapshot_id() == before
    _read(t, ["_ROW_ID", "id", "a", "b"])  # still readable
    # the same layout with equal ranges is a group the reader merges
    _with_ids(t, [(["b"], 1, 0)])
    assert _read(t, ["_ROW_ID", "b"])[0] == {"_ROW_ID": 0, "b": "v0"}


def test_partial_writes_refused(tmp_path):
    t = _table(tmp_path)
    w = t.new_batch_write_builder().new_write()
    w.write_arrow(pa.table({"id": [1], "a": [1], "b": ["x"]}, schema=SCH))
    with pytest.raises(PaimonRsError, match="rows were written"):
        w.with_write_type(["id", "b"])
    w.close()
    c = CatalogFactory.create({"warehouse": str(tmp_path)})
    c.create_table("db.p", Schema.from_pyarrow_schema(SCH, partition_keys=["b"], options=DE), False)
    with pytest.raises(SchemaMismatchError, match="partition column 'b'"):
        c.get_table("db.p").new_batch_write_builder().new_write().with_write_type(["id", "a"])


def test_racing_column_write_is_a_conflict(tmp_path):
    """A with_write_type write of column a of a group, written from snapshot 1, is refused
    when another commit wrote a of that group after snapshot 1 (commit/row_id_check.rs)."""
    t = _table(tmp_path)
    _write(t, pa.table({"id": [1, 2], "a": [10, 20], "b": ["x", "y"]}, schema=SCH))
    wb = t.new_batch_write_builder()
    w = wb.new_write().with_write_type(["a"])
    w.write_arrow(pa.table({"a": [-1, -2]}))
    msgs = w.prepare_commit()
    for m in msgs:
        for f in m.new_files:
            f.first_row_id = 0
    _partial(t, pa.table({"a": [7, 8]}), ["a"], first_row_id=0)
    with pytest.raises(CommitConflictError, match=r"columns a\) was read from snapshot 1"):
        wb.new_commit().commit(msgs)
    assert [r["a"] for r in _read(t, ["_ROW_ID", "a"])] == [7, 8]
    # b of the same group is another column: no conflict
    _partial(t, pa.table({"b": ["p", "q"]}), ["b"], first_row_id=0)
    assert [(r["a"], r["b"]) for r in _read(t, ["_ROW_ID", "a", "b"])] == [(7, "p"), (8, "q")]


@settings(max_examples=15, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["append", "partial", "set"]),
                          st.sampled_from([["a"], ["b"], ["a", "b"], ["id", "b"]]),
                          st.integers(1, 3), st.integers(0, 50)),
                min_size=1, max_size=6))
def test_caller_set_ids_against_a_model(tmp_path_factory, ops):
    """Whole-row appends, partial appends and with_write_type writes of a group's columns with
    ``first_row_id`` set, against a dict model of row id -> column values."""
    t = _table(tmp_path_factory.mktemp("de"))
    model, groups, v = {}, [], 0
    for kind, cols, n, pick in ops:
        if kind == "set" and groups:
            first, n = groups[pick % len(groups)]
        elif kind == "set":
            continue
        vals = {"id": [v + i for i in range(n)], "a": [v * 7 + i for i in range(n)],
                "b": [f"s{v + i}" for i in range(n)]}
        v += n
        if kind == "append":
            cols = ["id", "a", "b"]
            _write(t, pa.table(vals, schema=SCH))
        else:
            data = pa.table({c: vals[c] for c in cols}, schema=pa.schema([SCH.field(c) for c in cols]))
            _partial(t, data, cols, first_row_id=first if kind == "set" else None)
        if kind != "set":
            first = len(model)
            groups.append((first, n))
            for i in range(n):
                model[first + i] = {"id": None, "a": None, "b": None}
        for i in range(n):
            for c in cols:
                model[first + i][c] = vals[c][i]
    got = {r.pop("_ROW_ID"): r for r in _read(t, ["_ROW_ID", "id", "a", "b"])}
    assert got == model


@pytest.mark.parametrize("later_first", [3, None])
def test_caller_ids_overlapping_another_partitions_group_are_refused(tmp_path, later_first):
    """Row ids are the table's, not a partition's: Java's ``checkDataFileRowIdRangeConflicts``
    merges the ranges of all entries together, so a file of partition 'y' (ids set by its
    writer, or numbered from ``nextRowId``, which caller files of 'x' did not move) that
    overlaps a group of partition 'x' without the same range is refused, naming both files
    (before, only files of one partition and bucket were checked against each other)."""
    c = CatalogFactory.create({"warehouse": str(tmp_path)})
    c.create_database("db", True)
    sch = pa.schema([("id", pa.int64()), ("a", pa.int64()), ("p", pa.string())])
    c.create_table("db.t", Schema.from_pyarrow_schema(sch, partition_keys=["p"], options=DE), False)
    t = c.get_table("db.t")
    _write(t, pa.table({"id": [1, 2, 3], "a": [1, 2, 3], "p": ["x"] * 3}, schema=sch))

    def commit(p, n, first):
        wb = t.new_batch_write_builder()
        w = wb.new_write()
        w.write_arrow(pa.table({"id": list(range(n)), "a": list(range(n)), "p": [p] * n}, schema=sch))
        msgs = w.prepare_commit()
        if first is not None:
            for m in msgs:
                for f in m.new_files:
                    f.first_row_id = first
        try:
            wb.new_commit().commit(msgs)
        finally:
            w.close()

    commit("x", 2, 3)  # caller ids 3..4 from nextRowId on: nextRowId stays 3
    before = t.latest_snapshot_id()
    with pytest.raises(InvalidArgumentError, match=r"db\.t.*file 'data-.*row ids 3\.\.=5.*file 'data-.*3\.\.=4"):
        commit("y", 3, later_first)
    assert t.latest_snapshot_id() == before
    assert len(t.new_read_builder().new_read().to_arrow(t.new_read_builder().new_scan().plan().splits())) == 5
