"""Cross-partition upsert tables (``bucket`` = -1, a primary key without the partition key) through
the Python API: a key lives in one partition of the whole table (docs/write-path.md, Cross-partition
upsert; paimon-behaviour.md §1.8)."""

from __future__ import annotations

import time

import pyarrow as pa
import pytest

import paimon_rs
from paimon_rs import Schema

SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("name", pa.string()), ("n", pa.int64())])


def create(catalog, options=None, name="db.x"):
    opts = {"bucket": "-1", **(options or {})}
    catalog.create_table(name, Schema.from_pyarrow_schema(SCHEMA, partition_keys=["dt"], primary_keys=["id"],
                                                          options=opts), False)
    return catalog.get_table(name)


def write(table, rows, builder=None):
    wb = builder or table.new_batch_write_builder()
    w, c = wb.new_write(), wb.new_commit()
    w.write_arrow(pa.Table.from_pylist([dict(zip(SCHEMA.names, r)) for r in rows], schema=SCHEMA))
    c.commit(w.prepare_commit())
    w.close()


def rows_of(table):
    rb = table.new_read_builder()
    out = rb.new_read().to_arrow(rb.new_scan().plan().splits()).to_pylist()
    return sorted((r["dt"], r["id"], r["name"], r["n"]) for r in out)


def test_a_key_moves_to_its_newest_partition(catalog):
    t = create(catalog, {"dynamic-bucket.target-row-num": "2"})
    write(t, [("a", 1, "x", 1), ("a", 2, "y", 2), ("a", 3, "z", 3)])
    write(t, [("b", 1, "x2", 10), ("c", 4, "w", 4)])
    write(t, [("a", 1, "x3", 11), ("b", 2, "y2", 12)])
    assert rows_of(t) == [("a", 1, "x3", 11), ("a", 3, "z", 3), ("b", 2, "y2", 12), ("c", 4, "w", 4)]
    # partition a filled bucket 0 with two keys, then opened bucket 1 (3 moved away later)
    paths = {s.bucket_path
             for s in t.new_read_builder().new_scan().plan().splits()}
    assert any(p.endswith("dt=a/bucket-1") for p in paths), paths


def test_partial_update_keeps_the_key_in_its_first_partition(catalog):
    t = create(catalog, {"merge-engine": "partial-update"})
    write(t, [("a", 1, "x", None)])
    write(t, [("b", 1, None, 5)])
    assert rows_of(t) == [("a", 1, "x", 5)]


def test_first_row_keeps_the_first_row(catalog):
    t = create(catalog, {"merge-engine": "first-row"})
    write(t, [("a", 1, "x", 1)])
    write(t, [("b", 1, "y", 2), ("b", 2, "z", 3)])
    assert rows_of(t) == [("a", 1, "x", 1), ("b", 2, "z", 3)]


def test_a_concurrent_writer_is_a_commit_conflict(catalog):
    t = create(catalog)
    write(t, [("a", 1, "x", 1)])
    w1b, w2b = t.new_batch_write_builder(), t.new_batch_write_builder()
    w1, w2 = w1b.new_write(), w2b.new_write()
    w1.write_arrow(pa.Table.from_pylist([{"dt": "b", "id": 1, "name": "p", "n": 2}], schema=SCHEMA))
    # a key new to w2's index, which w1 may have written elsewhere
    w2.write_arrow(pa.Table.from_pylist([{"dt": "c", "id": 2, "name": "q", "n": 3}], schema=SCHEMA))
    m1, m2 = w1.prepare_commit(), w2.prepare_commit()
    w1b.new_commit().commit(m1)
    with pytest.raises(paimon_rs.CommitConflictError, match="cross-partition"):
        w2b.new_commit().commit(m2)
    assert rows_of(t) == [("b", 1, "p", 2)]


def test_index_ttl_forgets_old_keys_as_java_does(catalog):
    """With ``cross-partition-upsert.index-ttl``, buckets whose files are older than the TTL are
    not bootstrapped: their keys are new to the writer (Java's documented trade-off)."""
    t = create(catalog, {"cross-partition-upsert.index-ttl": "1 ms"})
    write(t, [("a", 1, "x", 1)])
    time.sleep(0.05)
    write(t, [("b", 1, "y", 2)])
    assert rows_of(t) == [("a", 1, "x", 1), ("b", 1, "y", 2)]


def test_fixed_buckets_keep_a_key_unique_per_partition_only(catalog):
    """Fixed buckets with a primary key that leaves out the partition key (Java since
    apache/paimon#6307): no global index, so a key is unique within its partition; rows of one
    key in two partitions both stay, upserts within a partition merge, compaction keeps that."""
    t = create(catalog, {"bucket": "2"})
    write(t, [("a", 1, "x", 1), ("a", 2, "y", 2)])
    write(t, [("b", 1, "x2", 10), ("a", 2, "y2", 20)])
    want = [("a", 1, "x", 1), ("a", 2, "y2", 20), ("b", 1, "x2", 10)]
    assert rows_of(t) == want
    t.compact(full=True)
    assert rows_of(t) == want
    splits = t.new_read_builder().new_scan().plan().splits()
    assert {s.total_buckets for s in splits} == {2}
    # the bucket of a key is the hash of the whole primary key, the same in either partition
    buckets = {}
    for s in splits:
        ids = t.new_read_builder().new_read().to_arrow([s]).column("id").to_pylist()
        for i in ids:
            buckets.setdefault(i, set()).add(s.bucket)
    assert all(len(b) == 1 for b in buckets.values()), buckets


@pytest.mark.parametrize("options,exc,match", [
    ({"bucket": "2", "sequence.field": "n"}, paimon_rs.SchemaMismatchError, "sequence.field in cross partition"),
    ({"sequence.field": "n"}, paimon_rs.SchemaMismatchError, "sequence.field in cross partition"),
    ({"cross-partition-upsert.bootstrap-parallelism": "0"}, paimon_rs.InvalidArgumentError, "positive"),
    ({"cross-partition-upsert.index-ttl": "soon"}, paimon_rs.PaimonRsError, "index-ttl"),
])
def test_refused(catalog, options, exc, match):
    with pytest.raises(exc, match=match):
        t = create(catalog, options, name="db.r")
        write(t, [("a", 1, "x", 1)])


def test_overwrite_is_refused_and_loses_nothing(catalog):
    """A dynamic overwrite would retract a moved key in its old partition and so replace that
    partition too: refused before anything is written."""
    t = create(catalog)
    write(t, [("a", 1, "x", 1), ("b", 2, "y", 2), ("b", 3, "z", 3)])
    for spec in [None, {"dt": "a"}]:
        wb = t.new_batch_write_builder()
        wb = wb.overwrite() if spec is None else wb.overwrite(spec)
        with pytest.raises(paimon_rs.UnsupportedError, match="OVERWRITE of a cross-partition"):
            wb.new_write()
    assert rows_of(t) == [("a", 1, "x", 1), ("b", 2, "y", 2), ("b", 3, "z", 3)]


def test_key_index_spills_past_its_budget_and_routes_alike(catalog, tmp_path, caplog):
    """``lookup.cache-max-memory-size`` far below the keys: the key index spills to a file in the
    writer's spill directory (``write-buffer-spill.dir``) at bootstrap and while routing, keys spilled
    move partitions (their old row deleted), keys moved after a spill move again, and the table equals
    the dict model with no key in two places; the spill directory is gone once the writer closes."""
    import logging
    import os

    spill = tmp_path / "spill"
    t = create(catalog, {"lookup.cache-max-memory-size": "2 kb", "write-buffer-spill.dir": str(spill),
                         "dynamic-bucket.target-row-num": "64"})
    model = {}

    def put(rows):
        for r in rows:
            model[r[1]] = r

    def index_dirs():
        return [d for d in os.listdir(spill) if os.path.exists(spill / d / "index.redb")] if spill.exists() else []

    with caplog.at_level(logging.INFO, logger="paimon_rs"):
        first = [("a", i, f"x{i}", i) for i in range(400)]
        write(t, first)
        put(first)
        assert any("cross-partition key index spilled" in r.getMessage() for r in caplog.records)
        assert index_dirs() == []  # removed at close
        caplog.clear()
        wb = t.new_batch_write_builder()
        w, c = wb.new_write(), wb.new_commit()
        batches = [[("b", i, f"y{i}", i) for i in range(100, 200)],    # spilled at bootstrap, move to b
                   [("c", i, f"z{i}", i) for i in range(150, 160)],    # moved after a spill, move on
                   [("c", i, f"w{i}", i) for i in range(0, 10)],
                   [("a", i, f"n{i}", i) for i in range(400, 450)]]    # new keys
        for rows in batches:
            w.write_arrow(pa.Table.from_pylist([dict(zip(SCHEMA.names, r)) for r in rows], schema=SCHEMA))
            put(rows)
        assert len(index_dirs()) == 1
        c.commit(w.prepare_commit())
        w.close()
        assert index_dirs() == []
        spills = [r.getMessage() for r in caplog.records if "cross-partition key index spilled" in r.getMessage()]
        assert len(spills) > 3, spills
    assert rows_of(t) == sorted(model.values())
    rb = t.new_read_builder()
    seen = {}
    for split in rb.new_scan().plan().splits():
        for r in rb.new_read().to_arrow([split]).to_pylist():
            assert r["id"] not in seen, f"key {r['id']} in {split.bucket_path} and {seen[r['id']]}"
            seen[r["id"]] = split.bucket_path
    assert len(seen) == 450

