"""Updates of BLOB columns of data-evolution tables by ``_ROW_ID`` (issue #29), as pypaimon
2.1.0 writes them and Java's ``BlobFallbackRecordReader`` reads them: an update of a BLOB
column writes ``.blob`` files over the group's rows from its first to the last updated one, a
placeholder (length -2) at each row it leaves, and a read takes each row from the newest file
that does not hold a placeholder for it. Against a dict model (hypothesis); interop with
pypaimon: tests/compat/test_pypaimon_blob_update.py."""

from __future__ import annotations

import glob
import os

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_blob_nested import _record_lengths

from paimon_rs import CatalogFactory, Schema, SchemaChange
from paimon_rs.exceptions import CommitConflictError, SchemaMismatchError

from unit_helpers import write_arrow

SCH = pa.schema([("id", pa.int64()), ("b", pa.large_binary())])
DE = {"row-tracking.enabled": "true", "data-evolution.enabled": "true"}


def _table(path, options=None, schema=SCH):
    c = CatalogFactory.create({"warehouse": str(path)})
    c.create_database("db", True)
    c.create_table("db.t", Schema.from_pyarrow_schema(schema, options={**DE, **(options or {})}), True)
    return c.get_table("db.t")


def _update(t, ids, cols, values):
    wb = t.new_batch_write_builder()
    data = {"_ROW_ID": pa.array(ids, pa.int64())}
    for c, v in zip(cols, values):
        data[c] = v
    msgs = wb.new_update().with_update_type(cols).update_by_arrow_with_row_id(pa.table(data))
    wb.new_commit().commit(msgs)
    return msgs


def _rows(t, cols=("_ROW_ID", "id", "b")):
    rb = t.new_read_builder().with_projection(list(cols))
    return sorted(rb.new_read().to_arrow(rb.new_scan().plan().splits()).to_pylist(),
                  key=lambda r: r["_ROW_ID"])


def _blob_lengths(root):
    paths = sorted(glob.glob(os.path.join(str(root), "db.db/t/bucket-0/*.blob")), key=os.path.getmtime)
    return [_record_lengths(open(p, "rb").read()) for p in paths]


def test_an_update_writes_pypaimons_placeholders_and_reads_back(tmp_path):
    t = _table(tmp_path)
    write_arrow(t, pa.table({"id": list(range(6)), "b": [b"v%d" % i for i in range(6)]}, schema=SCH))
    msgs = _update(t, [3, 1], ["b"], [pa.array([b"x3", b"y1"], pa.large_binary())])
    files = [f for m in msgs for f in m.new_files]
    # only a .blob file, from the group's first row to the last updated one (pypaimon's layout)
    assert [(f.file_name.endswith(".blob"), f.first_row_id, f.row_count, f.write_cols) for f in files] == [
        (True, 0, 4, ["b"])]
    assert _blob_lengths(tmp_path)[-1] == [-2, 18, -2, 18]  # 2 bytes + 16 of record overhead
    assert [r["b"] for r in _rows(t)] == [b"v0", b"y1", b"v2", b"x3", b"v4", b"v5"]
    # a null is a value (not a placeholder): it hides the older one
    _update(t, [1], ["b"], [pa.array([None], pa.large_binary())])
    assert [r["b"] for r in _rows(t)] == [b"v0", None, b"v2", b"x3", b"v4", b"v5"]
    # descriptors of the newest values
    d = t.copy({"blob-as-descriptor": "true"})
    assert [r["b"] is None for r in _rows(d)] == [False, True, False, False, False, False]


def test_a_blob_and_a_normal_column_updated_together(tmp_path):
    t = _table(tmp_path, {"blob.target-file-size": "8b"})
    write_arrow(t, pa.table({"id": list(range(5)), "b": [b"v%d" % i for i in range(5)]}, schema=SCH))
    msgs = _update(t, [2, 0], ["id", "b"], [pa.array([20, 0]), pa.array([b"n2", b"n0"], pa.large_binary())])
    files = sorted((f.file_name.rsplit(".", 1)[1], f.first_row_id, f.row_count) for m in msgs for f in m.new_files)
    # the data file of the group's range, the .blob files (rolled at 8 bytes) of rows 0..2
    assert files[-1] == ("parquet", 0, 5) and sum(r for k, _, r in files if k == "blob") == 3
    assert [(r["id"], r["b"]) for r in _rows(t)] == [(0, b"n0"), (1, b"v1"), (20, b"n2"), (3, b"v3"), (4, b"v4")]


def test_an_array_of_blob_column_is_updated(tmp_path):
    sch = pa.schema([("id", pa.int64()), ("a", pa.list_(pa.large_binary()))])
    t = _table(tmp_path, schema=sch)
    write_arrow(t, pa.table({"id": [0, 1, 2], "a": [[b"p"], None, [b"q", None]]}, schema=sch))
    _update(t, [1], ["a"], [pa.array([[b"r", b"s"]], sch.field("a").type)])
    assert [r["a"] for r in _rows(t, ("_ROW_ID", "a"))] == [[b"p"], [b"r", b"s"], [b"q", None]]


def test_a_null_into_a_not_null_blob_column_is_refused(tmp_path):
    sch = pa.schema([("id", pa.int64()), pa.field("b", pa.large_binary(), False)])
    t = _table(tmp_path, schema=sch)
    write_arrow(t, pa.table({"id": [0, 1, 2], "b": [b"a", b"b", b"c"]}, schema=sch))
    with pytest.raises(SchemaMismatchError, match="NOT NULL BLOB column 'b'.*db.t"):
        _update(t, [1], ["b"], [pa.array([None], pa.large_binary())])
    # the core refuses it too (a caller past the Python layer)
    sid = t.latest_snapshot_id()
    batch = pa.RecordBatch.from_arrays([pa.array([None, None, None], pa.large_binary())], names=["b"])
    with pytest.raises(SchemaMismatchError, match="NOT NULL BLOB column 'b'"):
        t._core.write_row_id_update(sid, 0, batch, [1])
    assert [r["b"] for r in _rows(t)] == [b"a", b"b", b"c"]


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_updates_against_a_model(tmp_path_factory, data):
    path = tmp_path_factory.mktemp("m")
    size = data.draw(st.sampled_from(["8b", "64mb"]))
    t = _table(path, {"blob.target-file-size": size})
    model = {}
    for n in data.draw(st.lists(st.integers(1, 6), min_size=1, max_size=3)):
        first = len(model)
        vals = [b"w%d" % (first + i) if (first + i) % 3 else None for i in range(n)]
        write_arrow(t, pa.table({"id": list(range(first, first + n)), "b": vals}, schema=SCH))
        model.update({first + i: v for i, v in enumerate(vals)})
    for k in range(data.draw(st.integers(1, 4))):
        ids = data.draw(st.lists(st.sampled_from(sorted(model)), min_size=1, max_size=5, unique=True))
        vals = [data.draw(st.sampled_from([None, b"u%d-%d" % (k, i), b""])) for i in ids]
        _update(t, ids, ["b"], [pa.array(vals, pa.large_binary())])
        model.update(dict(zip(ids, vals)))
        assert [(r["_ROW_ID"], r["b"]) for r in _rows(t)] == sorted(model.items())


def _prepare(t, ids, col, values):
    wb = t.new_batch_write_builder()
    msgs = wb.new_update().with_update_type([col]).update_by_arrow_with_row_id(
        pa.table({"_ROW_ID": pa.array(ids, pa.int64()), col: values}))
    return wb, msgs


def test_concurrent_updates_of_the_same_blob_rows_conflict(tmp_path):
    t = _table(tmp_path)
    write_arrow(t, pa.table({"id": list(range(4)), "b": [b"v%d" % i for i in range(4)]}, schema=SCH))
    one = _prepare(t, [1], "b", pa.array([b"A"], pa.large_binary()))
    two = _prepare(t, [1], "b", pa.array([b"B"], pa.large_binary()))
    one[0].new_commit().commit(one[1])
    with pytest.raises(CommitConflictError, match="multiple 'MERGE INTO' operations have encountered conflicts"):
        two[0].new_commit().commit(two[1])
    assert [r["b"] for r in _rows(t)] == [b"v0", b"A", b"v2", b"v3"]


def test_concurrent_blob_update_without_a_baseline_file_does_not_erase_another(tmp_path):
    # a BLOB column added by alter: an update writes the whole group (nulls at the other rows),
    # so a concurrent update of another row of the group is a conflict, not an erasure
    sch = pa.schema([("id", pa.int64())])
    t = _table(tmp_path, schema=sch)
    write_arrow(t, pa.table({"id": list(range(4))}, schema=sch))
    c = CatalogFactory.create({"warehouse": str(tmp_path)})
    c.alter_table("db.t", [SchemaChange.add_column("b", "BLOB")], False)
    t = c.get_table("db.t")
    one = _prepare(t, [0], "b", pa.array([b"A0"], pa.large_binary()))
    two = _prepare(t, [2], "b", pa.array([b"B2"], pa.large_binary()))
    one[0].new_commit().commit(one[1])
    with pytest.raises(CommitConflictError, match="MERGE INTO"):
        two[0].new_commit().commit(two[1])
    assert [r["b"] for r in _rows(c.get_table("db.t"))] == [b"A0", None, None, None]
    # an update of another column of the same rows does not conflict with it
    three = _prepare(t, [0], "id", pa.array([10], pa.int64()))
    four = _prepare(t, [0], "b", pa.array([b"C0"], pa.large_binary()))
    three[0].new_commit().commit(three[1])
    four[0].new_commit().commit(four[1])
    assert [(r["id"], r["b"]) for r in _rows(c.get_table("db.t"))][0] == (10, b"C0")


@pytest.mark.parametrize("bad", [0, -3, "x", True, 1.5])
def test_blob_parallelism_is_validated_as_parallelism(tmp_path, bad):
    t = _table(tmp_path)
    write_arrow(t, pa.table({"id": [0], "b": [b"v"]}, schema=SCH))
    rb = t.new_read_builder()
    splits = rb.new_scan().plan().splits()
    with pytest.raises(ValueError, match="blob_parallelism must be an int >= 1"):
        rb.new_read().to_arrow(splits, blob_parallelism=bad)
    with pytest.raises(ValueError, match="blob_parallelism must be an int >= 1"):
        rb.new_read().to_arrow_batch_reader(splits, blob_parallelism=bad)
    assert rb.new_read().to_arrow(splits, blob_parallelism=2).num_rows == 1
