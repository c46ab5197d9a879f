"""Edges of deletes, upserts and MERGE INTO on data-evolution tables: the deletion-vector index
files a delete writes before its commit are removed by an abort (a failed ``merge_into`` aborts
its delete part; ``TableCommit.abort`` of delete messages), and mutations through a table
pinned to a tag read at the snapshot they match against (the tag's scan key is replaced, as
pypaimon's updates clear their ``SCAN_KEYS``)."""

from __future__ import annotations

import os

import pyarrow as pa
import pytest

from paimon_rs import CatalogFactory, Schema
from paimon_rs.table_merge_into import WhenMatched, WhenNotMatched

from unit_helpers import write_arrow

SCH = pa.schema([("id", pa.int64()), ("a", pa.int64()), ("b", pa.string())])
DV = {"row-tracking.enabled": "true", "data-evolution.enabled": "true", "deletion-vectors.enabled": "true"}


def _table(path):
    c = CatalogFactory.create({"warehouse": str(path)})
    c.create_database("db", True)
    c.create_table("db.t", Schema.from_pyarrow_schema(SCH, options=DV), True)
    t = c.get_table("db.t")
    write_arrow(t, pa.table({"id": [0, 1, 2], "a": [0, 10, 20], "b": ["a", "b", "c"]}, schema=SCH))
    return t


def _files(t, prefix):
    return sorted(n for _, _, names in os.walk(t.table_path) for n in names if n.startswith(prefix))


def _read(t):
    rb = t.new_read_builder().with_projection(["_ROW_ID", "id", "a"])
    return sorted(rb.new_read().to_arrow(rb.new_scan().plan().splits()).to_pylist(), key=lambda r: r["_ROW_ID"])


def test_aborted_deletes_leave_no_index_files(tmp_path):
    t = _table(tmp_path)
    before = _files(t, "index-")
    wb = t.new_batch_write_builder()
    msgs = wb.new_update().delete_by_row_id([0])
    assert _files(t, "index-") != before  # the vector is written before the commit
    cm = wb.new_commit()
    cm.abort(msgs)
    cm.close()
    assert _files(t, "index-") == before
    # a merge whose insert fails after its delete part was written leaves nothing either
    src = pa.table({"id": [1, 7], "a": ["x", "not-an-int"], "b": ["q", "r"]})
    with pytest.raises(Exception, match="does not cast"):
        t.new_batch_write_builder().new_update().merge_into(
            src, on=["id"], when_matched=[WhenMatched.delete()], when_not_matched=[WhenNotMatched(insert="*")])
    assert _files(t, "index-") == before
    # a committed delete's vector is referenced: an abort of its messages keeps it
    msgs = wb.new_update().delete_by_row_id([2])
    wb.new_commit().commit(msgs)
    kept = _files(t, "index-")
    with pytest.warns(RuntimeWarning, match="snapshots reference"):
        wb.new_commit().abort(msgs)
    assert _files(t, "index-") == kept
    assert [r["id"] for r in _read(t)] == [0, 1]


def test_mutations_through_a_table_pinned_to_a_tag(tmp_path):
    t = _table(tmp_path)
    t.create_tag("t1")
    write_arrow(t, pa.table({"id": [3, 4], "a": [30, 40], "b": ["d", "e"]}, schema=SCH))
    tagged = t.copy({"scan.tag-name": "t1"})
    assert [r["id"] for r in _read(tagged)] == [0, 1, 2]
    wb = tagged.new_batch_write_builder()
    pb = tagged.new_read_builder().new_predicate_builder()
    wb.new_commit().commit(wb.new_update().delete_by_predicate(pb.equal("id", 1)))
    wb.new_commit().commit(wb.new_update().upsert_by_arrow_with_key(
        pa.table({"id": [4], "a": [444], "b": ["X"]}, schema=SCH), ["id"]))
    assert [(r["id"], r["a"]) for r in _read(t)] == [(0, 0), (2, 20), (3, 30), (4, 444)]


def test_an_update_of_a_group_with_deleted_rows_keeps_no_copy_in_their_slots(tmp_path):
    """The update file covers the whole group; a deleted row's slot (hidden by the deletion
    vector) holds null, not another row's value (a copy of live data would come back if the
    vector were ever dropped)."""
    import pyarrow.parquet as pq

    t = _table(tmp_path)
    wb = t.new_batch_write_builder()
    wb.new_commit().commit(wb.new_update().delete_by_row_id([1]))
    msgs = wb.new_update().with_update_type(["a"]).update_by_arrow_with_row_id(
        pa.table({"_ROW_ID": pa.array([2], pa.int64()), "a": [222]}))
    wb.new_commit().commit(msgs)
    assert [(r["_ROW_ID"], r["a"]) for r in _read(t)] == [(0, 0), (2, 222)]
    (name,) = [f.file_name for m in msgs for f in m.new_files]
    (path,) = [os.path.join(d, n) for d, _, ns in os.walk(t.table_path) for n in ns if n == name]
    assert pq.read_table(path).column("a").to_pylist() == [0, None, 222]
