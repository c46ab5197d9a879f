"""pypaimon's ``CommitMessage`` index members (``index_adds``, ``index_deletes``,
``compact_index_adds``, ``compact_index_deletes``: the index files a message adds or replaces)
and ``TableScan.plan_for_write`` (every live file, level 0 included where a batch read hides
it)."""

from __future__ import annotations

import os

import pyarrow as pa

from paimon_rs import Schema
from paimon_rs.index_meta import DeletionVectorMeta, IndexFileMeta, IndexManifestEntry

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])


def make(catalog, name, **options):
    schema = Schema.from_pyarrow_schema(SCHEMA, primary_keys=["id"], options=options)
    catalog.create_table(name, schema, False)
    return catalog.get_table(name)


def prepared(table, ids):
    w = table.new_batch_write_builder().new_write()
    w.write_arrow(pa.table({"id": ids, "v": [str(i) for i in ids]}, schema=SCHEMA))
    return w, w.prepare_commit()


def test_dynamic_bucket_write_names_its_hash_index(catalog):
    t = make(catalog, "db.dyn", bucket="-1")
    w, msgs = prepared(t, [1, 2, 3])
    adds = [e for m in msgs for e in m.index_adds]
    assert len(adds) == 1 and not any(m.index_deletes for m in msgs)
    e = adds[0]
    assert isinstance(e, IndexManifestEntry) and e.kind == 0
    assert e.bucket == msgs[0].bucket and e.partition == msgs[0].partition
    f = e.index_file
    assert f.index_type == "HASH" and f.row_count == 3 and f.dv_ranges is None
    assert [f.file_name] == [n for m in msgs for n in m.index_file_names]
    assert os.path.exists(os.path.join(t.table_path, "index", f.file_name))
    assert os.path.getsize(os.path.join(t.table_path, "index", f.file_name)) == f.file_size
    assert not any(m.compact_index_adds or m.compact_index_deletes for m in msgs)
    w.close()


def test_fixed_bucket_write_has_no_index(catalog):
    t = make(catalog, "db.fix", bucket="2")
    w, msgs = prepared(t, [1, 2])
    assert all(m.index_adds == [] and m.index_deletes == [] for m in msgs)
    w.close()


def test_index_file_meta_keys_deletion_vectors_by_data_file():
    f = IndexFileMeta("DELETION_VECTORS", "index-1", 40, 2, [("data-a.parquet", 1, 20, 3)])
    assert f.dv_ranges == {"data-a.parquet": DeletionVectorMeta("data-a.parquet", 1, 20, 3)}


def test_plan_for_write_sees_level0_a_batch_read_hides(catalog):
    # write-only: no compaction, the file stays at level 0, which a deletion-vector table's
    # batch read skips
    t = make(catalog, "db.dv", bucket="1", **{"deletion-vectors.enabled": "true", "write-only": "true"})
    b = t.new_batch_write_builder()
    with b.new_write() as w, b.new_commit() as c:
        w.write_arrow(pa.table({"id": [1, 2], "v": ["a", "b"]}, schema=SCHEMA))
        c.commit(w.prepare_commit())
    scan = t.new_read_builder().new_scan()
    assert scan.plan().splits() == []
    splits = scan.plan_for_write().splits()
    assert len(splits) == 1 and len(splits[0].file_paths) == 1
    # an append table: the same plan
    a = Schema.from_pyarrow_schema(SCHEMA)
    catalog.create_table("db.app", a, False)
    app = catalog.get_table("db.app")
    b = app.new_batch_write_builder()
    with b.new_write() as w, b.new_commit() as c:
        w.write_arrow(pa.table({"id": [1], "v": ["a"]}, schema=SCHEMA))
        c.commit(w.prepare_commit())
    scan = app.new_read_builder().new_scan()
    assert [s.file_paths for s in scan.plan().splits()] == [s.file_paths for s in scan.plan_for_write().splits()]
