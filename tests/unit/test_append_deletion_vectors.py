"""Deletion vectors on append tables (issue 27): ``table.delete`` and ``table.merge`` on an
append table with ``deletion-vectors.enabled`` mark rows in deletion vectors (only index files
are committed, no data file is rewritten), reads honour them, a concurrent delete of the same
files conflicts instead of losing rows, and append compaction rewrites files without their
deleted rows and drops their vectors. Bucket-unaware (``bucket = -1``) and fixed-bucket tables,
partitioned and not."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pyarrow as pa
import pytest

from paimon_rs import CommitConflictError, Schema, _core
from paimon_rs.mutations import _positions, _read_with_positions

SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.string())])

LAYOUTS = {
    "unaware": ({"bucket": "-1"}, ["dt"]),
    "unaware-unpartitioned": ({"bucket": "-1"}, []),
    "bucketed": ({"bucket": "2", "bucket-key": "id"}, ["dt"]),
}


def make(catalog, layout: str, extra: Dict[str, str] = {}):  # noqa: B006 - never mutated
    options, parts = LAYOUTS[layout]
    options = {"deletion-vectors.enabled": "true", **options, **extra}
    catalog.create_table("db.a", Schema.from_pyarrow_schema(SCHEMA, partition_keys=parts,
                                                            options=options), False)
    return catalog.get_table("db.a")


def rows(dt: str, ids: List[int], v: str = "x") -> pa.Table:
    return pa.table({"dt": [dt] * len(ids), "id": ids, "v": [f"{v}{i}" for i in ids]}, schema=SCHEMA)


def content(t) -> List[Tuple[Any, ...]]:
    return sorted((r["dt"], r["id"], r["v"]) for r in t.to_arrow().to_pylist())


def root(t) -> Path:
    return Path(t.table_path.removeprefix("file:"))


def data_files(t) -> List[str]:
    return sorted(p.name for p in root(t).rglob("data-*"))


def latest_snapshot(t) -> Dict[str, Any]:
    snaps = sorted(root(t).joinpath("snapshot").glob("snapshot-*"), key=lambda p: int(p.name.split("-")[1]))
    return json.loads(snaps[-1].read_text())


def filled(catalog, layout: str):
    t = make(catalog, layout)
    t.write(pa.concat_tables([rows("a", list(range(10))), rows("b", list(range(10, 16)))]))
    t.write(pa.concat_tables([rows("a", list(range(100, 105))), rows("b", [200])]))
    return t


@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("bitmap64", [False, True])
def test_delete_marks_vectors_and_rewrites_no_data_file(catalog, layout, bitmap64):
    t = filled(catalog, layout)
    if bitmap64:
        t = t.copy({"deletion-vectors.bitmap64": "true"})
    model = content(t)
    files = data_files(t)
    res = t.delete("id IN (1, 3, 12, 101, 200) OR v = 'x104'")
    assert res.num_deleted_rows == 6
    model = [r for r in model if r[1] not in (1, 3, 12, 101, 200, 104)]
    assert content(t) == model
    assert data_files(t) == files, "no data file is written or removed"
    snap = latest_snapshot(t)
    assert snap["commitKind"] == "OVERWRITE" and snap["indexManifest"]
    assert snap["id"] == res.snapshot_id
    assert list(root(t).joinpath("index").glob("index-*"))
    # a second delete of the same files, with a row already deleted: counted once
    res = t.delete("id IN (1, 2, 13)")
    assert res.num_deleted_rows == 2
    model = [r for r in model if r[1] not in (2, 13)]
    assert content(t) == model
    assert t.delete("id = 999") .snapshot_id is None
    # the rows read with a filter, projected, and counted
    assert sorted(r["id"] for r in t.to_arrow(filter="id < 5", projection=["id"]).to_pylist()) == [0, 4]
    assert t.to_arrow().num_rows == len(model)


def test_unaware_deletes_across_files_and_index_files(catalog):
    t = make(catalog, "unaware-unpartitioned")
    for i in range(3):
        t.write(rows("a", list(range(i * 10, i * 10 + 10))))
    t.delete("id = 1")
    t.delete("id = 11")  # another file: a second index file of the partition
    t.delete("id IN (2, 21)")  # replaces the first index file, adds one for the third file
    assert content(t) == sorted(("a", i, f"x{i}") for i in range(30) if i not in (1, 2, 11, 21))
    assert t.to_arrow(filter="id >= 10 AND id < 20").num_rows == 9


@pytest.mark.parametrize("layout", ["unaware", "bucketed"])
def test_merge_updates_through_vectors(catalog, layout):
    t = filled(catalog, layout)
    files = set(data_files(t))
    src = pa.table({"dt": ["a", "a", "b", "c"], "id": [2, 100, 11, 500], "v": ["u2", "u100", "del", "new"]},
                   schema=SCHEMA)
    res = (t.merge(src, on=["dt", "id"])
           .when_matched_delete("source.v = 'del'")
           .when_matched_update({"v": "source.v"})
           .when_not_matched_insert_all()
           .execute())
    assert (res.num_inserted_rows, res.num_updated_rows, res.num_deleted_rows) == (1, 2, 1)
    got = content(t)
    assert ("a", 2, "u2") in got and ("a", 100, "u100") in got and ("c", 500, "new") in got
    assert not any(r[1] == 11 for r in got) and ("a", 2, "x2") not in got
    assert len(got) == 22 + 1 - 1
    assert files <= set(data_files(t)), "old files stay, rows are marked"
    assert latest_snapshot(t)["id"] == res.snapshot_id


def test_concurrent_delete_of_the_same_file_conflicts_and_is_redone(catalog):
    t = make(catalog, "unaware-unpartitioned")
    t.write(rows("a", list(range(10))))
    sid = t.latest_snapshot_id()
    # a delete computed on sid that lands after another delete of the same file
    stale = _read_with_positions(t, sid, None, [])
    stale = stale.filter(pa.compute.equal(stale["_ROW_POSITION"], 5))
    msgs, n = t._core.delete_positions(sid, _positions(stale))
    assert n == 1
    t.delete("id = 7")
    with pytest.raises(CommitConflictError, match="deletion vector"):
        t.new_batch_write_builder().new_commit().commit(msgs)
    assert content(t) == [("a", i, f"x{i}") for i in range(10) if i != 7]
    # table.delete itself redoes its attempt when it lost the race: nothing is lost
    t.delete("id = 5")
    assert content(t) == [("a", i, f"x{i}") for i in range(10) if i not in (5, 7)]


def test_bucketed_concurrent_delete_conflicts(catalog):
    t = make(catalog, "bucketed")
    t.write(rows("a", list(range(10))))
    sid = t.latest_snapshot_id()
    hits = _read_with_positions(t, sid, None, ["id"])
    one_file = hits.filter(pa.compute.equal(hits["_FILE_NAME"], hits["_FILE_NAME"][0]))
    assert one_file.num_rows >= 2
    msgs, _ = t._core.delete_positions(sid, _positions(one_file.slice(0, 1)))
    t.delete(f"id = {one_file['id'][1].as_py()}")  # the same bucket's vectors, replaced first
    with pytest.raises(CommitConflictError):
        t.new_batch_write_builder().new_commit().commit(msgs)


def test_errors_are_clear(catalog):
    t = make(catalog, "unaware-unpartitioned")
    t.write(rows("a", [1, 2]))
    sid = t.latest_snapshot_id()
    bad = pa.RecordBatch.from_arrays([pa.array(["data-nope.parquet"]), pa.array([0], pa.int64())],
                                     names=["_FILE_NAME", "_ROW_POSITION"])
    from paimon_rs import InvalidArgumentError
    with pytest.raises(InvalidArgumentError, match="not live in snapshot"):
        t._core.delete_positions(sid, bad)
    pos = _read_with_positions(t, sid, None, [])
    past = pa.RecordBatch.from_arrays([pos["_FILE_NAME"].combine_chunks()[:1], pa.array([99], pa.int64())],
                                      names=["_FILE_NAME", "_ROW_POSITION"])
    with pytest.raises(InvalidArgumentError, match="past the end"):
        t._core.delete_positions(sid, past)


def test_new_rows_after_deletes_are_plain_files(catalog):
    t = filled(catalog, "unaware")
    t.delete("id < 5")
    t.write(rows("a", [1, 2]))
    got = content(t)
    assert ("a", 1, "x1") in got and ("a", 0, "x0") not in got
    assert len(got) == 22 - 5 + 2


def _has_vectors(t) -> bool:
    return any(s.has_deletion_vectors for s in t.new_read_builder().new_scan().plan().splits())


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_compaction_rewrites_without_deleted_rows_and_drops_vectors(catalog, layout):
    t = filled(catalog, layout)
    t.delete("id IN (0, 5, 13, 102)")
    model = content(t)
    assert _has_vectors(t)
    sid = t.compact(full=True)
    assert sid is not None
    assert latest_snapshot(t)["commitKind"] == "COMPACT"
    assert content(t) == model
    assert not _has_vectors(t), "the rewritten files' vectors are dropped with them"
    rows_in_files = sum(s.row_count for s in t.new_read_builder().new_scan().plan().splits())
    assert rows_in_files == len(model), "the deleted rows are gone from the files"
    # deletes go on after the compaction, on the new files
    t.delete("id = 1")
    assert content(t) == [r for r in model if r[1] != 1]


def test_unaware_compaction_picks_a_large_file_by_its_deleted_rows(catalog):
    t = make(catalog, "unaware-unpartitioned", {"target-file-size": "1 kb", "compaction.min.file-num": "5"})
    t.write(rows("a", list(range(200))))
    t.write(rows("a", list(range(200, 400))))
    t.delete("id < 10")  # 5% of the first file: below the 20% threshold, and the file is large
    assert t.compact(full=False) is None
    t.delete("id < 60")  # 30%
    assert t.compact(full=False) is not None
    assert content(t) == [("a", i, f"x{i}") for i in range(60, 400)]
    assert not _has_vectors(t)


def test_a_delete_racing_a_compaction_of_its_file_conflicts(catalog):
    t = make(catalog, "unaware-unpartitioned", {"compaction.min.file-num": "2"})
    t.write(rows("a", list(range(5))))
    t.write(rows("a", list(range(5, 10))))
    sid = t.latest_snapshot_id()
    hits = _read_with_positions(t, sid, None, [])
    msgs, _ = t._core.delete_positions(sid, _positions(hits.slice(0, 1)))
    assert t.compact(full=True) is not None  # rewrites the file the delete marks
    with pytest.raises(CommitConflictError, match="removed"):
        t.new_batch_write_builder().new_commit().commit(msgs)
    assert len(content(t)) == 10


@pytest.mark.parametrize("layout", ["unaware", "bucketed"])
def test_overwrite_drops_the_replaced_partitions_vectors(catalog, layout):
    """INSERT OVERWRITE of a partition drops its deletion-vector index entries with its files (as
    Java's overwrite does); the other partition keeps its vectors."""
    t = filled(catalog, layout)
    t.delete("id IN (0, 5, 13)")

    def vector_partitions():
        return sorted({r[0] for r in _core.index_files(t._core) if r[2] == "DELETION_VECTORS"})

    assert vector_partitions() == ["{a}", "{b}"]
    wb = t.new_batch_write_builder().overwrite({"dt": "a"})
    w = wb.new_write()
    w.write_arrow(rows("a", [7, 8]))
    wb.new_commit().commit(w.prepare_commit())
    w.close()
    assert vector_partitions() == ["{b}"]
    assert content(t) == [("a", 7, "x7"), ("a", 8, "x8")] + [("b", i, f"x{i}") for i in (10, 11, 12, 14, 15, 200)]


def _live_files(t) -> List[Any]:
    return [f for s in t.new_read_builder().new_scan().plan().splits() for f in s.files]


def test_bucketed_writer_compacts_with_vectors_in_a_loop(catalog):
    """A bucketed table written in a loop with deletes between the commits: each commit's
    writer compacts its buckets (it holds their deletion vectors, as Java's writer), so the
    file count stays bounded without ``table.compact()``; deleted rows never come back, and the
    compacted files hold no deleted row."""
    t = make(catalog, "bucketed", {"compaction.min.file-num": "3"})
    model: Dict[int, Tuple[Any, ...]] = {}
    compacted = 0
    for i in range(12):
        ids = list(range(i * 10, i * 10 + 10))
        t.write(rows("a", ids))
        model.update({k: ("a", k, f"x{k}") for k in ids})
        if latest_snapshot(t)["commitKind"] == "COMPACT":
            compacted += 1
        gone = [k for k in model if k % 7 == i % 7][:3]
        if gone:
            t.delete(f"id IN ({', '.join(map(str, gone))})")
            for k in gone:
                del model[k]
        assert content(t) == sorted(model.values()), f"round {i}"
        # 2 buckets, each compacted once it holds 3 files
        assert len(_live_files(t)) <= 2 * 3, f"round {i}"
    assert compacted >= 4, "the writers compacted"
    # what the compactions dropped is gone from the files, not only hidden by vectors
    in_files = sum(f.row_count for f in _live_files(t))
    deleted_in_files = in_files - len(model)
    assert deleted_in_files < 12 * 3


def test_bucketed_writer_compaction_racing_a_delete_conflicts(catalog):
    """A writer's compaction prepared before a delete of its bucket committed: the commit is
    refused as a conflict before anything lands (the rows neither), so the deleted row does not
    come back; the write done again lands."""
    t = make(catalog, "bucketed", {"bucket": "1", "compaction.min.file-num": "3"})
    t.write(rows("a", list(range(5))))
    t.write(rows("a", list(range(5, 10))))
    t.delete("id = 1")
    builder = t.new_batch_write_builder()
    w = builder.new_write()
    w.write_arrow(rows("a", list(range(10, 15))))
    messages = w.prepare_commit()
    w.close()
    assert any(m.compact_before for m in messages), "the writer compacted its bucket"
    res = t.delete("id IN (2, 7)")  # the files the writer rewrote get vectors
    with pytest.raises(CommitConflictError, match="deletion vector|index file"):
        builder.new_commit().commit(messages)
    builder.new_commit().abort(messages)
    assert t.latest_snapshot_id() == res.snapshot_id, "nothing of the write landed"
    want = [("a", i, f"x{i}") for i in range(10) if i not in (1, 2, 7)]
    assert content(t) == want
    t.write(rows("a", list(range(10, 15))))
    assert content(t) == sorted(want + [("a", i, f"x{i}") for i in range(10, 15)])
    assert latest_snapshot(t)["commitKind"] == "COMPACT"
    assert sum(f.row_count for f in _live_files(t)) == len(want) + 5


def test_compaction_plan_shows_picks_by_deletion_vectors(catalog):
    """``compaction_plan()`` reads a deletion-vector table's vectors: a bucket-unaware table's
    large file picked because of its deleted rows shows as a ``deletion-vectors`` pick (the one
    ``compact(full=False)`` then makes); a bucketed table's plan names the files with vectors
    a full compaction rewrites."""
    t = make(catalog, "unaware-unpartitioned", {"target-file-size": "1 kb", "compaction.min.file-num": "5"})
    t.write(rows("a", list(range(200))))
    t.write(rows("a", list(range(200, 400))))
    assert t.compaction_plan()[0].picks == []
    t.delete("id < 60")  # 30% of the first file
    plan = t.compaction_plan()
    assert [(p.files, p.rows, p.reason) for p in plan[0].picks] == [(1, 200, "deletion-vectors")]
    assert "1 files have deletion vectors (60 deleted rows" in plan[0].explanation
    assert t.compact(full=False) is not None
    assert t.compaction_plan()[0].picks == []


def test_compaction_plan_of_a_bucketed_table_names_its_vectors(catalog):
    """A bucketed table's non-full pick is by size and count only (as Java's writer): its plan
    names the files with vectors, which ``compact(full=True)`` rewrites whatever their size."""
    t = make(catalog, "bucketed", {"bucket": "1", "write-only": "true"})
    for i in range(3):
        t.write(rows("a", [i]))
    plan = t.compaction_plan()
    assert [p.reason for p in plan[0].picks] == []  # 3 files, compaction.min.file-num 5
    assert "deletion vectors" not in plan[0].explanation
    t.delete("id = 1")
    plan = t.compaction_plan()
    assert "1 files have deletion vectors (1 deleted rows: compact(full=True) rewrites them" in plan[0].explanation
