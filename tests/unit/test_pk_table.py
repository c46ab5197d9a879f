"""Primary-key tables through the Python API: upserts, deletes, row kinds, layout on disk."""

from __future__ import annotations

import pickle

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import paimon_rs
from paimon_rs import Schema

import stores
from unit_helpers import PK_SCHEMA, read, write

# every test runs on local disk and on S3 (tests/stores.py)
pytestmark = pytest.mark.stores


def rows(dt, ids, names, prices):
    return pa.table({"dt": dt, "id": ids, "name": names, "price": prices}, schema=PK_SCHEMA)


def as_dict(t):
    return {(r["dt"], r["id"]): (r["name"], r["price"]) for r in t.to_pylist()}


def test_write_upsert_read(pk_table):
    assert read(pk_table).num_rows == 0  # empty table reads empty
    assert write(pk_table, rows(["a", "a", "b"], [1, 2, 1], ["x", "y", "z"], [1.0, 2.0, 3.0])) == 1
    assert write(pk_table, rows(["a", "b"], [1, 7], ["x2", "w"], [10.0, None])) == 2
    assert as_dict(read(pk_table)) == {
        ("a", 1): ("x2", 10.0), ("a", 2): ("y", 2.0), ("b", 1): ("z", 3.0), ("b", 7): ("w", None)}


def test_duplicates_in_one_batch_last_wins(pk_table):
    write(pk_table, rows(["a"] * 4, [1, 1, 2, 1], ["p", "q", "r", "s"], [1.0, 2.0, 3.0, 4.0]))
    assert as_dict(read(pk_table)) == {("a", 1): ("s", 4.0), ("a", 2): ("r", 3.0)}
    # the file holds each key once
    files = [f for f in stores.walk_files(pk_table.table_path)
             if f.rsplit("/", 1)[1].startswith("data-") and f.endswith(".parquet")]
    total = sum(pq.read_metadata(stores.parquet(f)).num_rows for f in files)
    assert total == 2


def test_row_kinds_delete_and_update(catalog):
    schema = Schema.from_pyarrow_schema(
        pa.schema([("id", pa.int32()), ("v", pa.string()), ("op", pa.string())]),
        primary_keys=["id"], options={"bucket": "3", "rowkind.field": "op"})
    catalog.create_table("db.k", schema, False)
    t = catalog.get_table("db.k")
    write(t, pa.table({"id": pa.array([1, 2, 3], pa.int32()), "v": ["a", "b", "c"], "op": ["+I"] * 3}))
    write(t, pa.table({"id": pa.array([1, 2, 4, 4], pa.int32()), "v": ["a", "B", "d", "d"],
                       "op": ["-D", "+U", "+I", "-D"]}))
    got = {r["id"]: r["v"] for r in read(t).to_pylist()}
    assert got == {2: "B", 3: "c"}
    write(t, pa.table({"id": pa.array([3], pa.int32()), "v": ["c"], "op": ["-U"]}))
    assert {r["id"] for r in read(t).to_pylist()} == {2}
    with pytest.raises(paimon_rs.SchemaMismatchError, match="rowkind.field 'op' has 'X'"):
        write(t, pa.table({"id": pa.array([5], pa.int32()), "v": ["e"], "op": ["X"]}))


def test_ignore_delete(catalog):
    schema = Schema.from_pyarrow_schema(
        pa.schema([("id", pa.int64()), ("op", pa.string())]), primary_keys=["id"],
        options={"bucket": "1", "rowkind.field": "op", "ignore-delete": "true"})
    catalog.create_table("db.i", schema, False)
    t = catalog.get_table("db.i")
    write(t, pa.table({"id": [1, 2], "op": ["+I", "+I"]}))
    write(t, pa.table({"id": [1], "op": ["-D"]}))
    assert sorted(read(t).column("id").to_pylist()) == [1, 2]


def test_layout_on_disk(pk_table):
    write(pk_table, rows(["2026-11-01", "x/y"], [1, 2], ["a", "b"], [1.0, 2.0]))
    root = pk_table.table_path
    assert stores.read_text(stores.join(root, "snapshot", "LATEST")) == "1"
    snap = stores.read_json(stores.join(root, "snapshot", "snapshot-1"))
    for key in ["version", "id", "schemaId", "baseManifestList", "deltaManifestList", "commitUser",
                "commitIdentifier", "commitKind", "timeMillis", "totalRecordCount", "deltaRecordCount"]:
        assert key in snap
    assert snap["commitKind"] == "APPEND" and snap["totalRecordCount"] == 2
    assert stores.isdir(stores.join(root, "dt=2026-11-01"))
    assert stores.isdir(stores.join(root, "dt=x%2Fy"))
    schema = stores.read_json(stores.join(root, "schema", "schema-0"))
    assert schema["primaryKeys"] == ["dt", "id"]
    assert [f["type"] for f in schema["fields"]] == ["STRING NOT NULL", "BIGINT NOT NULL", "STRING", "DOUBLE"]
    f = next(x for x in stores.walk_files(root) if x.endswith(".parquet"))
    names = pq.read_schema(stores.parquet(f)).names
    assert names == ["_KEY_id", "_SEQUENCE_NUMBER", "_VALUE_KIND", "dt", "id", "name", "price"]
    # no temp files left anywhere
    assert not [x for x in stores.walk_files(root) if x.endswith(".tmp")]


def test_sequence_numbers_continue_per_bucket(pk_table):
    write(pk_table, rows(["a", "a"], [1, 1], ["x", "y"], [1.0, 2.0]))
    write(pk_table, rows(["a"], [1], ["z"], [3.0]))
    seqs = []
    for x in stores.walk_files(pk_table.table_path):
        if x.endswith(".parquet"):
            seqs.append(pq.read_table(stores.parquet(x)).column("_SEQUENCE_NUMBER").to_pylist())
    # first commit assigned 0,1 and kept 1; second continues at 2
    assert sorted(seqs) == [[1], [2]]
    assert as_dict(read(pk_table)) == {("a", 1): ("z", 3.0)}


def test_projection_and_filters(pk_table):
    write(pk_table, rows(["a", "a", "b", "b"], [1, 2, 3, 4], ["x", None, "xz", "w"], [1.0, 2.0, 3.0, 4.0]))
    rb = pk_table.new_read_builder()
    pb = rb.new_predicate_builder()
    cases = [
        (pb.equal("id", 2), {2}),
        (pb.not_equal("id", 2), {1, 3, 4}),
        (pb.less_than("id", 2), {1}),
        (pb.less_or_equal("id", 2), {1, 2}),
        (pb.greater_than("price", 2.5), {3, 4}),
        (pb.greater_or_equal("price", 3.0), {3, 4}),
        (pb.is_null("name"), {2}),
        (pb.is_not_null("name"), {1, 3, 4}),
        (pb.is_in("id", [1, 4, 9]), {1, 4}),
        (pb.is_not_in("id", [1, 4]), {2, 3}),
        (pb.between("id", 2, 3), {2, 3}),
        (pb.startswith("name", "x"), {1, 3}),
        (pb.equal("dt", "b"), {3, 4}),
        (pb.and_predicates([pb.equal("dt", "a"), pb.greater_than("id", 1)]), {2}),
        (pb.or_predicates([pb.equal("id", 1), pb.equal("name", "w")]), {1, 4}),
    ]
    for pred, want in cases:
        got = read(pk_table, projection=["id", "name"], predicate=pred)
        assert got.column_names == ["id", "name"]
        assert set(got.column("id").to_pylist()) == want, pred


def test_partition_pruning_plans_fewer_splits(pk_table):
    write(pk_table, rows(["a", "b", "c"], [1, 2, 3], ["x", "y", "z"], [1.0, 2.0, 3.0]))
    rb = pk_table.new_read_builder()
    all_splits = rb.new_scan().plan().splits()
    pb = rb.new_predicate_builder()
    some = rb.with_filter(pb.equal("dt", "b")).new_scan().plan().splits()
    assert len(some) == 1 < len(all_splits)
    assert some[0].bucket_path.startswith("dt=b/bucket-")


def test_filter_after_merge_does_not_resurrect(pk_table):
    # the new version fails the filter; the old one passes: the key must not come back
    write(pk_table, rows(["a"], [1], ["old"], [1.0]))
    write(pk_table, rows(["a"], [1], ["new"], [100.0]))
    rb = pk_table.new_read_builder()
    pb = rb.new_predicate_builder()
    assert read(pk_table, predicate=pb.less_than("price", 50.0)).num_rows == 0


def test_overwrite_partition_and_table(pk_table):
    write(pk_table, rows(["a", "a", "b"], [1, 2, 3], ["x", "y", "z"], [1.0, 2.0, 3.0]))
    write(pk_table, rows(["a"], [9], ["n"], [9.0]), overwrite={"dt": "a"})
    assert as_dict(read(pk_table)) == {("a", 9): ("n", 9.0), ("b", 3): ("z", 3.0)}
    with pytest.raises(paimon_rs.InvalidArgumentError, match="outside the partition"):
        write(pk_table, rows(["b"], [1], ["n"], [1.0]), overwrite={"dt": "a"})
    write(pk_table, rows(["c"], [5], ["q"], [5.0]), overwrite={})
    assert as_dict(read(pk_table)) == {("c", 5): ("q", 5.0)}
    snap = stores.read_json(stores.join(pk_table.table_path, "snapshot", "snapshot-3"))
    assert snap["commitKind"] == "OVERWRITE"


def test_input_kinds(pk_table):
    import pandas as pd
    import polars as pl

    write(pk_table, rows(["a"], [1], ["arrow"], [1.0]).to_batches()[0])
    write(pk_table, pl.DataFrame({"dt": ["a"], "id": [2], "name": ["polars"], "price": [2.0]}))
    wb = pk_table.new_batch_write_builder()
    w, c = wb.new_write(), wb.new_commit()
    w.write_pandas(pd.DataFrame({"dt": ["a"], "id": [3], "name": ["pandas"], "price": [3.0]}))
    w.write_arrow_batch(rows(["a"], [4], ["batch"], [4.0]).to_batches()[0])
    w.write_arrow(pa.RecordBatchReader.from_batches(PK_SCHEMA, rows(["a"], [5], ["reader"], [5.0]).to_batches()))
    c.commit(w.prepare_commit())
    got = as_dict(read(pk_table))
    assert {v[0] for v in got.values()} == {"arrow", "polars", "pandas", "batch", "reader"}


def test_batch_reader_pandas_and_pickle(pk_table):
    write(pk_table, rows(["a", "b"], [1, 2], ["x", "y"], [1.0, 2.0]))
    rb = pk_table.new_read_builder()
    splits = rb.new_scan().plan().splits()
    splits2 = [pickle.loads(pickle.dumps(s)) for s in splits]
    reader = rb.new_read().to_arrow_batch_reader(splits2)
    assert isinstance(reader, pa.RecordBatchReader)
    assert reader.read_all().num_rows == 2
    assert len(rb.new_read().to_pandas(splits)) == 2
    assert rb.with_limit(1).new_read().to_arrow(splits).num_rows == 1
    wb = pk_table.new_batch_write_builder()
    w, c = wb.new_write(), wb.new_commit()
    w.write_arrow(rows(["a"], [3], ["z"], [3.0]))
    msgs = [pickle.loads(pickle.dumps(m)) for m in w.prepare_commit()]
    c.commit(msgs)
    assert read(pk_table).num_rows == 3


def test_a_raw_read_yields_large_batches_and_a_merge_read_the_same_rows(catalog):
    """A split read without a merge (one sorted run) holds one batch at a time, so it decodes
    batches far larger than a merge's 16K rows (a consumer such as Spark's Arrow hop pays per
    batch); a split that needs a merge still reads the same rows."""
    schema = Schema.from_pyarrow_schema(pa.schema([pa.field("id", pa.int64(), nullable=False),
                                                   pa.field("v", pa.int32())]),
                                        primary_keys=["id"], options={"bucket": "1"})
    catalog.create_table("db.big", schema, False)
    t = catalog.get_table("db.big")
    n = 200_000
    write(t, pa.table({"id": pa.array(range(n), pa.int64()), "v": pa.array(range(n), pa.int32())}))
    rb = t.new_read_builder()
    splits = rb.new_scan().plan().splits()
    assert len(splits) == 1 and splits[0].raw_convertible
    sizes = [b.num_rows for b in t._core.new_read(None, None).stream(splits)]
    assert sum(sizes) == n and max(sizes) > 16 * 1024, sizes
    write(t, pa.table({"id": pa.array([5], pa.int64()), "v": pa.array([-5], pa.int32())}))
    splits = rb.new_scan().plan().splits()
    assert not splits[0].raw_convertible
    got = rb.new_read().to_arrow(splits)
    assert got.num_rows == n and got.filter(pa.compute.equal(got["id"], 5))["v"].to_pylist() == [-5]
