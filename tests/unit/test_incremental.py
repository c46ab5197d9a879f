"""Incremental reads (`incremental-between`, `incremental-between-timestamp`): the rows that
changed between two snapshots, from the delta files of the APPEND snapshots in between, against a
model; primary-key tables carry each row's kind in a leading `rowkind` column."""

from __future__ import annotations

import time

import pyarrow as pa
import pytest
from table_ops_helpers import SCHEMA, Model, make_table

import paimon_rs
from paimon_rs import Schema

import stores

# on local disk, and on S3 under -m long (tests/stores.py)
pytestmark = pytest.mark.stores("local", "s3-long")


def read(table, options):
    t = table.copy(options)
    rb = t.new_read_builder()
    return rb.new_read().to_arrow(rb.new_scan().plan().splits())


def changes(table, options):
    out = read(table, options).to_pydict()
    return sorted(zip(out["rowkind"], out["k"], out["v"]))


def test_between_snapshots_primary_key(catalog):
    t = make_table(catalog)
    m = Model(t)
    m.upsert({1: "a", 2: "b"})          # 1
    s1 = t.latest_snapshot_id()
    m.upsert({2: "b2", 3: "c"})         # 2
    m.upsert({3: "c2"})                  # 3
    s3 = t.latest_snapshot_id()
    assert changes(t, {"incremental-between": f"{s1},{s3}"}) == [("+I", 2, "b2"), ("+I", 3, "c2")]
    assert changes(t, {"incremental-between": f"0,{s1}"}) == [("+I", 1, "a"), ("+I", 2, "b")]
    assert changes(t, {"incremental-between": f"{s3},{s3}"}) == []


def test_deletes_show_as_minus_d(catalog):
    schema = pa.schema([("k", pa.int64()), ("v", pa.string()), ("op", pa.string())])
    catalog.create_table("db.cdc", Schema.from_pyarrow_schema(
        schema, primary_keys=["k"], options={"bucket": "1", "rowkind.field": "op"}), False)
    t = catalog.get_table("db.cdc")

    def write(rows):
        wb = t.new_batch_write_builder()
        w, c = wb.new_write(), wb.new_commit()
        w.write_arrow(pa.table({"k": [r[0] for r in rows], "v": [r[1] for r in rows],
                                "op": [r[2] for r in rows]}, schema=schema))
        c.commit(w.prepare_commit())
        w.close()
        c.close()

    write([(1, "a", "+I"), (2, "b", "+I")])
    write([(1, "a", "-D"), (2, "b2", "+U")])
    out = read(t, {"incremental-between": "1,2"}).to_pydict()
    assert sorted(zip(out["rowkind"], out["k"], out["v"])) == [("+U", 2, "b2"), ("-D", 1, "a")]
    # a plain read of the table shows no deleted key
    assert read(t, {}).column("k").to_pylist() == [2]


def test_compaction_snapshots_are_not_changes(catalog):
    t = make_table(catalog)
    m = Model(t)
    m.upsert({1: "a"})
    s1 = t.latest_snapshot_id()
    m.compact()
    m.upsert({2: "b"})
    assert changes(t, {"incremental-between": f"{s1},{t.latest_snapshot_id()}"}) == [("+I", 2, "b")]


def test_between_tags_and_timestamps(catalog):
    t = make_table(catalog)
    m = Model(t)
    m.upsert({1: "a"})
    t.create_tag("t1")
    time.sleep(0.01)
    m.upsert({2: "b"})
    m.upsert({3: "c"})
    t.create_tag("t2")
    assert changes(t, {"incremental-between": "t1,t2"}) == [("+I", 2, "b"), ("+I", 3, "c")]
    snaps = t.latest_snapshot_id()
    sm = paimon_rs.Table.from_path(t.table_path)
    assert sm.latest_snapshot_id() == snaps
    t1 = stores.read_json(stores.join(t.table_path, "snapshot", "snapshot-1"))["timeMillis"]
    t3 = stores.read_json(stores.join(t.table_path, "snapshot", f"snapshot-{snaps}"))["timeMillis"]
    assert changes(t, {"incremental-between-timestamp": f"{t1},{t3}"}) == [("+I", 2, "b"), ("+I", 3, "c")]
    assert changes(t, {"incremental-between-timestamp": f"{t1 - 1000},{t1}"}) == [("+I", 1, "a")]
    with pytest.raises(ValueError, match="should be >="):
        changes(t, {"incremental-between-timestamp": f"{t3},{t1}"})


def test_append_table_rows_and_filter(catalog):
    schema = Schema.from_pyarrow_schema(SCHEMA, options={"bucket": "-1"})
    catalog.create_table("db.app", schema, False)
    t = catalog.get_table("db.app")
    for rows in ([1, 2], [3], [4, 5]):
        wb = t.new_batch_write_builder()
        w, c = wb.new_write(), wb.new_commit()
        w.write_arrow(pa.table({"k": rows, "v": ["x"] * len(rows)}, schema=SCHEMA))
        c.commit(w.prepare_commit())
        w.close()
        c.close()
    out = read(t, {"incremental-between": "1,3"})
    assert out.column_names == ["k", "v"]
    assert sorted(out.column("k").to_pylist()) == [3, 4, 5]
    tt = t.copy({"incremental-between": "1,3"})
    rb = tt.new_read_builder()
    rb = rb.with_filter(rb.new_predicate_builder().greater_than("k", 3))
    assert sorted(rb.new_read().to_arrow(rb.new_scan().plan().splits()).column("k").to_pylist()) == [4, 5]


def test_refusals(catalog):
    t = make_table(catalog)
    Model(t).upsert({1: "a"})
    with pytest.raises(paimon_rs.UnsupportedError, match="diff"):
        read(t, {"incremental-between": "0,1", "incremental-between-scan-mode": "diff"})
    with pytest.raises(ValueError, match="start,end"):
        read(t, {"incremental-between": "1"})
    with pytest.raises(ValueError, match="after the end"):
        read(t, {"incremental-between": "1,0"})
    with pytest.raises(ValueError, match="does not exist"):
        read(t, {"incremental-between": "0,7"})


def test_deletion_vector_primary_key_table_delta(catalog):
    """The delta of a deletion-vector table is its APPEND snapshots' level-0 records, merged per
    key as for any primary-key table, without the vectors (paimon-behaviour.md §9.7); the table
    compacts after each commit, so the COMPACT snapshots in between are not changes."""
    t = make_table(catalog, options={"deletion-vectors.enabled": "true"})
    m = Model(t)
    m.upsert({1: "a", 2: "b", 3: "c"})
    s1 = t.latest_snapshot_id()
    m.upsert({2: "b2", 4: "d"})
    m.upsert({2: "b3"})
    s3 = t.latest_snapshot_id()
    assert s3 > 3, "the writer compacts after each commit (COMPACT snapshots)"
    assert changes(t, {"incremental-between": f"{s1},{s3}"}) == [("+I", 2, "b3"), ("+I", 4, "d")]
    assert changes(t, {"incremental-between": f"0,{s1}"}) == [("+I", 1, "a"), ("+I", 2, "b"), ("+I", 3, "c")]
    assert t.delete("k = 1").num_deleted_rows == 1
    assert changes(t, {"incremental-between": f"{s3},{t.latest_snapshot_id()}"}) == [("-D", 1, "a")]


def _state(table, tag):
    return {r["k"]: r["v"] for r in table.copy({"scan.tag-name": tag}).to_arrow().to_pylist()}


def _diff(before, after):
    out = [("-D", k, v) for k, v in before.items() if k not in after]
    return sorted(out + [("+I", k, v) for k, v in after.items() if before.get(k, object()) != v or k not in before])


@pytest.mark.parametrize("buckets", ["1", "2"])
def test_deletion_vector_primary_key_table_between_tags_diffs_rows_by_key(catalog, buckets):
    """Between two tags of a deletion-vector table the rows are diffed by key (Java's
    `IncrementalDiffSplitRead`, paimon-behaviour.md §9.7): keys updated or deleted between the
    tags, whose old rows a vector marked in a file both tags hold, are not missed (the end
    tag's new row, or -D of the start tag's row); unchanged rows are not returned."""
    t = make_table(catalog, options={"deletion-vectors.enabled": "true", "bucket": buckets})
    m = Model(t)
    m.upsert({k: f"a{k}" for k in range(200)})  # a large max level: later files go up below it
    t.create_tag("t1")
    m.upsert({1: "b1", 2: "b2", 500: "new"})
    t.create_tag("t2")
    assert t.delete("k IN (3, 4, 500)").num_deleted_rows == 3
    m.upsert({1: "b1", 5: "c5"})  # 1 rewritten with its own value: no change
    t.create_tag("t3")
    tags = ["t1", "t2", "t3"]
    for i, a in enumerate(tags):
        for b in tags[i:]:
            want = _diff(_state(t, a), _state(t, b))
            assert changes(t, {"incremental-between": f"{a},{b}"}) == want, (a, b)
    # 3 and 4: rows of the first commit's file, which both tags hold, marked by t3's vector
    assert changes(t, {"incremental-between": "t2,t3"}) == [
        ("+I", 5, "c5"), ("-D", 3, "a3"), ("-D", 4, "a4"), ("-D", 500, "new")]
    # the diff keeps the read's projection and filter
    got = read(t, {"incremental-between": "t1,t3"}).filter(pa.compute.field("k") < 10)
    assert sorted(got.column("k").to_pylist()) == [1, 2, 3, 4, 5]
    with pytest.raises(paimon_rs.InvalidArgumentError, match="newer than tag"):
        read(t, {"incremental-between": "t3,t1"})


def test_deletion_vector_append_table_between_tags_reads_new_files_with_vectors(catalog):
    """An append table with deletion vectors: between two tags, the end tag's files the start
    tag lacks, read with the end tag's vectors (Java's `RawFileSplitRead` of an
    `IncrementalSplit` reads the after side only)."""
    t = make_table(catalog, "db.dvapp_tags", {"deletion-vectors.enabled": "true"}, pk=False)
    t.write(pa.table({"k": [1, 2, 3], "v": ["a", "b", "c"]}, schema=SCHEMA))
    t.create_tag("t1")
    t.write(pa.table({"k": [4, 5], "v": ["d", "e"]}, schema=SCHEMA))
    assert t.delete("k IN (2, 4)").num_deleted_rows == 2
    t.create_tag("t2")
    assert sorted(read(t, {"incremental-between": "t1,t2"}).column("k").to_pylist()) == [5]


def test_deletion_vector_append_table_delta_keeps_rows_deleted_later(catalog):
    t = make_table(catalog, "db.dvapp", {"deletion-vectors.enabled": "true"}, pk=False)
    t.write(pa.table({"k": [1, 2, 3], "v": ["a", "b", "c"]}, schema=SCHEMA))
    s1 = t.latest_snapshot_id()
    t.write(pa.table({"k": [4, 5], "v": ["d", "e"]}, schema=SCHEMA))
    assert t.delete("k IN (2, 4)").num_deleted_rows == 2
    s3 = t.latest_snapshot_id()
    # the rows the APPEND snapshots added, as Java's delta read (no deletion vectors) ...
    assert sorted(read(t, {"incremental-between": f"0,{s3}"}).column("k").to_pylist()) == [1, 2, 3, 4, 5]
    assert sorted(read(t, {"incremental-between": f"{s1},{s3}"}).column("k").to_pylist()) == [4, 5]
    # ... a delete adds no rows; a plain read applies the vectors
    assert read(t, {"incremental-between": f"{s3 - 1},{s3}"}).num_rows == 0
    assert sorted(read(t, {}).column("k").to_pylist()) == [1, 3, 5]
