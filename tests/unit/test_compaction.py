"""``Table.compact`` (issue #11): full and picked compaction of primary-key tables, committed as
one COMPACT snapshot. Reads are the same before and after for every merge engine; a full
compaction leaves each bucket one sorted run at the top level with no retraction left."""

from __future__ import annotations

import logging
from collections import defaultdict
from typing import Any, Dict, List

import pyarrow as pa
import pytest

from paimon_rs import Schema

import stores
import table_writes

# every test runs on local disk and on S3 (tests/stores.py); on S3 only under -m long but for the
# tests marked stores below (full compaction per merge engine, writes that compact, record expiry),
# to keep CI short: moto costs ~0.5 s of CPU per test
pytestmark = pytest.mark.stores("local", "s3-long")

SCHEMA = pa.schema([
    ("dt", pa.string()),
    ("id", pa.int64()),
    ("v", pa.int64()),
    ("op", pa.string()),
])
MAX_LEVEL = 5  # num-levels = num-sorted-run.compaction-trigger (5) + 1

ENGINES: Dict[str, Dict[str, str]] = {
    "deduplicate": {},
    "partial-update": {"merge-engine": "partial-update",
                       "partial-update.remove-record-on-delete": "true"},
    "aggregation": {"merge-engine": "aggregation", "fields.v.aggregate-function": "sum"},
}


def make(catalog, name: str, options: Dict[str, str]):
    opts = {"bucket": "2", "rowkind.field": "op", **options}
    schema = Schema.from_pyarrow_schema(SCHEMA, partition_keys=["dt"], primary_keys=["dt", "id"],
                                        options=opts)
    catalog.create_table(f"db.{name}", schema, False)
    return catalog.get_table(f"db.{name}")


def write(table, rows: List[tuple]) -> None:
    data = pa.table({"dt": [r[0] for r in rows], "id": [r[1] for r in rows],
                     "v": [r[2] for r in rows], "op": [r[3] for r in rows]}, schema=SCHEMA)
    table_writes.write(table, data)


def history(table) -> None:
    for i in range(4):
        write(table, [(dt, k, k * 10 + i, "+I") for dt in ("a", "b") for k in range(i, i + 20)])
    write(table, [("a", 3, None, "-D"), ("b", 7, None, "-D"), ("a", 50, 1, "+I")])


def content(table) -> List[tuple]:
    rb = table.new_read_builder().with_projection(["dt", "id", "v"])
    t = rb.new_read().to_arrow(rb.new_scan().plan().splits())
    return sorted(zip(t.column("dt").to_pylist(), t.column("id").to_pylist(), t.column("v").to_pylist()))


def live_files(table) -> Dict[Any, List[Any]]:
    """Live files per (partition path, bucket)."""
    out: Dict[Any, List[Any]] = defaultdict(list)
    for s in table.new_read_builder().new_scan().plan().splits():
        out[(s.bucket_path, s.bucket)].extend(s.files)
    return out


def snapshot(table, sid: int) -> Dict[str, Any]:
    return stores.read_json(stores.join(table.table_path, "snapshot", f"snapshot-{sid}"))


@pytest.mark.stores
@pytest.mark.parametrize("engine", list(ENGINES))
def test_full_compaction_keeps_reads_and_leaves_one_top_run_per_bucket(catalog, engine):
    t = make(catalog, engine.replace("-", "_"), ENGINES[engine])
    history(t)
    before = content(t)
    assert before
    assert any(len(fs) > 1 for fs in live_files(t).values())
    sid = t.compact()
    assert sid is not None
    assert snapshot(t, sid)["commitKind"] == "COMPACT"
    assert content(t) == before
    for fs in live_files(t).values():
        assert {f.level for f in fs} == {MAX_LEVEL}
        # deletes are dropped at the top level: nothing older can need them
        assert all(f.delete_row_count == 0 for f in fs)
    # all at the top level already: nothing left to do
    assert t.compact() is None
    # writing on top and compacting again still reads the same as before the compaction
    write(t, [("a", 1, 5, "+I"), ("a", 50, None, "-D")])
    before = content(t)
    assert t.compact() is not None
    assert content(t) == before


def test_partitions_limit_the_compaction(catalog):
    t = make(catalog, "parts", {"write-only": "true"})
    history(t)
    before = content(t)
    assert t.compact(partitions=[{"dt": "a"}]) is not None
    levels = {k[0].split("/")[0]: {f.level for f in fs} for k, fs in live_files(t).items()}
    assert levels["dt=a"] == {MAX_LEVEL}
    assert 0 in levels["dt=b"]
    assert content(t) == before


def test_picked_compaction_runs_the_picker_per_bucket(catalog):
    # write-only: the writers leave the runs to this compaction (a dedicated compaction job)
    t = make(catalog, "picked", {"num-sorted-run.compaction-trigger": "3", "write-only": "true"})
    write(t, [("a", 1, 1, "+I")])
    # below the trigger: nothing to do
    assert t.compact(full=False) is None
    for i in range(3):
        write(t, [("a", k, i, "+I") for k in range(1, 30)])
    before = content(t)
    runs_before = max(len(fs) for fs in live_files(t).values())
    assert t.compact(full=False) is not None
    assert content(t) == before
    assert max(len({(f.level if f.level else f.file_name) for f in fs})
               for fs in live_files(t).values()) < runs_before


def test_compacting_an_empty_table_or_an_append_table(catalog):
    t = make(catalog, "empty", {})
    assert t.compact() is None
    schema = Schema.from_pyarrow_schema(pa.schema([("x", pa.int64())]))
    catalog.create_table("db.app", schema, False)
    # append tables compact too (tests/unit/test_append_compaction.py); without data: nothing
    assert catalog.get_table("db.app").compact() is None


@pytest.mark.stores
def test_writes_compact_as_java_batch_writes(catalog):
    """A batch write picks a compaction per written bucket at prepare_commit: the sorted runs
    never pile up past the compaction trigger, and reads stay the same."""
    t = make(catalog, "auto", {"num-sorted-run.compaction-trigger": "3", "bucket": "1"})
    model: Dict[int, int] = {}
    for i in range(8):
        rows = [("a", k, i, "+I") for k in range(i, i + 10)]
        write(t, rows)
        model.update({k: i for _, k, _, _ in rows})
        runs = {(f.level if f.level else f.file_name) for fs in live_files(t).values() for f in fs}
        assert len(runs) <= 3
    assert content(t) == sorted(("a", k, v) for k, v in model.items())


def test_write_only_never_compacts(catalog):
    t = make(catalog, "wo", {"write-only": "true", "bucket": "1"})
    for i in range(7):
        write(t, [("a", k, i, "+I") for k in range(10)])
    assert {f.level for fs in live_files(t).values() for f in fs} == {0}
    assert len(next(iter(live_files(t).values()))) == 7


def test_full_compaction_delta_commits_leaves_one_top_run(catalog):
    t = make(catalog, "cow", {"full-compaction.delta-commits": "1"})
    history(t)
    for fs in live_files(t).values():
        assert {f.level for f in fs} == {MAX_LEVEL}
    assert all(s.raw_convertible for s in t.new_read_builder().new_scan().plan().splits())


def test_first_row_tables_are_written_and_visible(catalog):
    t = make(catalog, "fr", {"merge-engine": "first-row"})
    write(t, [("a", 1, 1, "+I"), ("a", 2, 2, "+I")])
    assert content(t) == [("a", 1, 1), ("a", 2, 2)]
    write(t, [("a", 1, 10, "+I"), ("a", 3, 3, "+I")])
    # the first row of a key wins
    assert content(t) == [("a", 1, 1), ("a", 2, 2), ("a", 3, 3)]
    # the writers left every bucket one top-level run: nothing to compact
    assert t.compact() is None
    # a write-only writer leaves level 0 to a compaction job: invisible until it runs (Java)
    wo = make(catalog, "fr_wo", {"merge-engine": "first-row", "write-only": "true"})
    write(wo, [("a", 1, 1, "+I")])
    write(wo, [("a", 1, 2, "+I"), ("a", 2, 2, "+I")])
    assert content(wo) == []
    assert wo.compact(full=False) is not None
    assert content(wo) == [("a", 1, 1), ("a", 2, 2)]


def test_overwrite_after_enough_commits_to_compact(catalog):
    """An overwrite writer does not compact with the files it replaces (which the commit
    removes), so the overwrite lands even when the picker would fire."""
    t = make(catalog, "ow", {"bucket": "1", "full-compaction.delta-commits": "1"})
    for i in range(4):
        write(t, [("a", k, i, "+I") for k in range(10)] + [("b", 1, i, "+I")])
    wb = t.new_batch_write_builder().overwrite({"dt": "a"})
    w, c = wb.new_write(), wb.new_commit()
    w.write_arrow(pa.table({"dt": ["a"], "id": [100], "v": [1], "op": ["+I"]}, schema=SCHEMA))
    c.commit(w.prepare_commit())
    w.close()
    c.close()
    assert content(t) == [("a", 100, 1), ("b", 1, 3)]


@pytest.mark.stores
def test_record_level_expire_drops_old_records_when_compacting(catalog):
    """``record-level.expire-time``: compaction keeps a record iff its time is null or recent
    (reads never filter); a top-level file with expired records is rewritten by a full
    compaction."""
    import time
    now = int(time.time())
    t = make(catalog, "exp", {"bucket": "1", "write-only": "true", "record-level.expire-time": "1 h",
                              "record-level.time-field": "v"})
    write(t, [("a", 1, now, "+I"), ("a", 2, now - 7200, "+I"), ("a", 3, None, "+I")])
    write(t, [("a", 4, (now - 10) * 1000, "+I"), ("a", 5, 5, "+I")])  # millis, and 1970
    assert len(content(t)) == 5  # reads never filter
    assert t.compact() is not None
    assert content(t) == [("a", 1, now), ("a", 3, None), ("a", 4, (now - 10) * 1000)]
    # an expired record lands in the top-level run: the next full compaction rewrites that file
    t2 = make(catalog, "exp2", {"bucket": "1", "write-only": "true"})
    write(t2, [("a", 1, now, "+I"), ("a", 2, 5, "+I")])
    assert t2.compact() is not None
    t2 = t2.copy({"record-level.expire-time": "1 h", "record-level.time-field": "v"})
    assert t2.compact() is not None
    assert content(t2) == [("a", 1, now)]


def test_first_row_overwrite_is_visible(catalog):
    """An overwrite's writer compacts its own new files (ignoring the replaced ones), so a
    first-row table shows the overwritten partition at once."""
    t = make(catalog, "frow", {"merge-engine": "first-row", "bucket": "1"})
    write(t, [("a", 1, 1, "+I"), ("b", 2, 2, "+I")])
    wb = t.new_batch_write_builder().overwrite({"dt": "a"})
    w, c = wb.new_write(), wb.new_commit()
    w.write_arrow(pa.table({"dt": ["a"], "id": [7], "v": [7], "op": ["+I"]}, schema=SCHEMA))
    c.commit(w.prepare_commit())
    w.close()
    c.close()
    assert content(t) == [("a", 7, 7), ("b", 2, 2)]


def _many_flushes(t, batches: int) -> None:
    """One commit of `batches` overlapping upserts; the table's tiny buffer flushes each."""
    wb = t.new_batch_write_builder()
    w, c = wb.new_write(), wb.new_commit()
    try:
        for i in range(batches):
            rows = [("a", k, i, "+I") for k in range(i % 4 * 10, i % 4 * 10 + 30)]
            w.write_arrow(pa.table({"dt": [r[0] for r in rows], "id": [r[1] for r in rows],
                                    "v": [r[2] for r in rows], "op": [r[3] for r in rows]},
                                   schema=SCHEMA))
        c.commit(w.prepare_commit())
    finally:
        w.close()
        c.close()


STALL = {"bucket": "1", "write-buffer-spillable": "false", "write-buffer-size": "1 b",
         "num-sorted-run.compaction-trigger": "2", "num-sorted-run.stop-trigger": "3"}


def _expected(batches: int) -> List[tuple]:
    last: Dict[int, int] = {}
    for i in range(batches):
        for k in range(i % 4 * 10, i % 4 * 10 + 30):
            last[k] = i
    return sorted(("a", k, v) for k, v in last.items())


def test_flushes_stall_for_compaction_above_the_stop_trigger(catalog, caplog):
    """num-sorted-run.stop-trigger (Java's write stall): 20 flushes in one commit, yet the bucket
    never holds more than 3 sorted runs; the stalls are logged and the rows are right."""
    t = make(catalog, "stall", STALL)
    with caplog.at_level(logging.INFO, logger="paimon_rs"):
        _many_flushes(t, 20)
        _many_flushes(t, 20)
    stalls = [r.getMessage() for r in caplog.records
              if "exceed num-sorted-run.stop-trigger 3" in r.getMessage()]
    assert len(stalls) >= 10, stalls
    assert all("4 sorted runs" in m for m in stalls), stalls
    assert max(len(p.runs) for p in t.compaction_plan()) <= 3
    assert content(t) == _expected(20)
    # the APPEND snapshot of the second commit added 20 files, its COMPACT one left <= 3 runs
    files = live_files(t)
    assert len(files) == 1 and len(next(iter(files.values()))) <= 3 * 2


def test_write_only_writers_do_not_stall(catalog, caplog):
    t = make(catalog, "nostall", {**STALL, "write-only": "true"})
    with caplog.at_level(logging.INFO, logger="paimon_rs"):
        _many_flushes(t, 20)
    assert not [r for r in caplog.records if "stop-trigger" in r.getMessage()]
    assert max(len(p.runs) for p in t.compaction_plan()) == 20
    assert content(t) == _expected(20)


def test_a_retraction_may_not_null_a_not_null_rowkind_field(catalog):
    """Aggregation: the `op` (rowkind.field) column's default aggregate, last_non_null_value,
    retracts to null (as Java's). In a NOT NULL `op` the merged row could never be written:
    the writer's compaction refuses it naming table and column (it was Arrow's bare "declared
    as non-nullable but contains null values"), and the failed commit leaves the table as it
    was."""
    from paimon_rs.exceptions import InvalidArgumentError
    schema = pa.schema([pa.field("id", pa.int64(), False), ("v", pa.int64()),
                        pa.field("op", pa.string(), False)])
    # full-compaction.delta-commits: every commit's writer merges the key's records
    opts = {"bucket": "1", "rowkind.field": "op", "merge-engine": "aggregation",
            "fields.v.aggregate-function": "sum", "full-compaction.delta-commits": "1"}
    catalog.create_table("db.aggnn", Schema.from_pyarrow_schema(
        schema, primary_keys=["id"], options=opts), False)
    t = catalog.get_table("db.aggnn")

    def commit(rows):
        table_writes.write(t, pa.Table.from_pylist([dict(zip(schema.names, r)) for r in rows], schema=schema))

    commit([(1, 5, "+I"), (2, 7, "+I")])
    with pytest.raises(InvalidArgumentError, match="db.aggnn.*NOT NULL column 'op' null"):
        commit([(1, 5, "-U")])
    rb = t.new_read_builder()
    got = rb.new_read().to_arrow(rb.new_scan().plan().splits()).to_pylist()
    assert got == [{"id": 1, "v": 5, "op": "+I"}, {"id": 2, "v": 7, "op": "+I"}]
