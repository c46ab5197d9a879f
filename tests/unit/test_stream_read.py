"""Streaming reads in Python (``table.new_stream_read_builder()``, paimon_rs.stream_read):
replaying the stream onto a dict gives the table at every snapshot, for each way a table
records its changes; start modes, consumers, buckets, row kinds, the async form."""

import asyncio
import threading
import time
from typing import Dict, List

import pyarrow as pa
import pytest

import paimon_rs
from paimon_rs import CatalogFactory, Schema
from paimon_rs.stream_read import StreamSplit

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])


@pytest.fixture()
def catalog(tmp_path):
    cat = CatalogFactory.create({"warehouse": str(tmp_path / "wh")})
    cat.create_database("db", True)
    return cat


def make(catalog, name: str, options: Dict[str, str], pk: bool = True):
    schema = Schema.from_pyarrow_schema(SCHEMA, primary_keys=["id"] if pk else None, options=options)
    catalog.create_table(f"db.{name}", schema, False)
    return catalog.get_table(f"db.{name}")


def write(table, ids: List[int], v: str) -> None:
    wb = table.new_batch_write_builder()
    w, c = wb.new_write(), wb.new_commit()
    w.write_arrow(pa.table({"id": ids, "v": [f"{v}{i}" for i in ids]}, schema=SCHEMA))
    c.commit(w.prepare_commit())
    w.close()
    c.close()


def state(table) -> Dict[int, str]:
    rb = table.new_read_builder()
    t = rb.new_read().to_arrow(rb.new_scan().plan().splits())
    return dict(zip(t.column("id").to_pylist(), t.column("v").to_pylist()))


def replay(model: Dict[int, str], rows: pa.Table) -> None:
    for kind, k, v in zip(rows.column("_row_kind").to_pylist(), rows.column("id").to_pylist(),
                          rows.column("v").to_pylist()):
        if kind in ("+I", "+U"):
            model[k] = v
        elif kind == "-D":
            model.pop(k, None)


def next_after(it, action):
    """``next(it)`` started (the scan begins and waits for a snapshot), then ``action``."""
    plans = []
    waiting = threading.Thread(target=lambda: plans.append(next(it)), daemon=True)
    waiting.start()
    time.sleep(0.3)
    assert not plans, "the scan yielded before the commit it waits for"
    action()
    waiting.join(10)
    assert plans, "the scan did not see the commit"
    return plans[0]


def scannable_after(table, start: int, mode: str) -> List[int]:
    """Snapshot ids from ``start`` on that bring changes in ``mode`` (what the scan yields)."""
    sm = table.snapshot_manager()
    out = []
    for sid in range(start, (table.latest_snapshot_id() or 0) + 1):
        snap = sm.get_snapshot_by_id(sid)
        if mode == "delta" and snap.commit_kind == "APPEND":
            out.append(sid)
        elif mode == "changelog" and snap.changelog_manifest_list is not None:
            out.append(sid)
    return out


@pytest.mark.parametrize("options, mode", [
    ({"bucket": "2"}, "delta"),
    ({"bucket": "2", "changelog-producer": "input"}, "changelog"),
    ({"bucket": "2", "changelog-producer": "lookup"}, "changelog"),
    ({"bucket": "2", "changelog-producer": "full-compaction"}, "changelog"),
    ({"bucket": "-1"}, "delta"),
])
def test_replaying_the_stream_gives_the_table_at_every_snapshot(catalog, options, mode):
    t = make(catalog, "t", options)
    write(t, [1, 2, 3], "a")
    builder = t.new_stream_read_builder().with_include_row_kind().with_poll_interval_ms(0)
    scan, read = builder.new_streaming_scan(), builder.new_read()
    it = scan.stream_sync()
    first = next(it)
    assert first.snapshot_id == t.latest_snapshot_id()
    assert all(isinstance(s, StreamSplit) and s.kind == "full" for s in first.splits())
    model: Dict[int, str] = {}
    rows = read.to_arrow(first.splits())
    assert set(rows.column("_row_kind").to_pylist()) == {"+I"}
    replay(model, rows)
    assert model == state(t)
    steps = [([2, 4], "b", None), ([], "", [1]), ([3, 5, 6], "c", None), ([6], "d", None)]
    for ids, v, dels in steps:
        if ids:
            write(t, ids, v)
        if dels:
            t.delete(f"id IN ({', '.join(map(str, dels))})")
        if mode == "changelog" and options.get("changelog-producer") == "full-compaction":
            t.compact(full=True)
        expected = scannable_after(t, scan.next_snapshot_id, mode)
        got = []
        for _ in expected:
            plan = next(it)
            got.append(plan.snapshot_id)
            replay(model, read.to_arrow(plan.splits()))
        assert got == expected
        assert model == state(t), (ids, v, dels)


def test_an_append_table_streams_its_appended_rows(catalog):
    t = make(catalog, "a", {"bucket": "-1"}, pk=False)
    builder = t.new_stream_read_builder().with_poll_interval_ms(10)
    scan, read = builder.new_streaming_scan(), builder.new_read()
    it = scan.stream_sync()
    # the scan starts on a table without a snapshot and waits; its first snapshot's rows come
    # as that snapshot's changes
    plan = next_after(it, lambda: write(t, [1, 2], "a"))
    assert plan.snapshot_id == 1 and all(s.is_streaming for s in plan.splits())
    assert read.to_arrow(plan.splits()).to_pydict() == {"id": [1, 2], "v": ["a1", "a2"]}
    write(t, [1], "b")
    assert read.to_arrow(next(it).splits()).to_pydict() == {"id": [1], "v": ["b1"]}


def test_start_modes(catalog):
    t = make(catalog, "t", {"bucket": "1"})
    for i in range(3):
        write(t, [i], "s")

    def first_plan(table):
        b = table.new_stream_read_builder().with_poll_interval_ms(0)
        return b, next(b.new_streaming_scan().stream_sync())

    b, p = first_plan(t.copy({"scan.mode": "from-snapshot", "scan.snapshot-id": "2"}))
    assert p.snapshot_id == 2 and b.new_read().to_arrow(p.splits()).to_pydict() == {"id": [1], "v": ["s1"]}
    b, p = first_plan(t.copy({"scan.mode": "from-snapshot-full", "scan.snapshot-id": "2"}))
    assert p.snapshot_id == 2 and b.new_read().to_arrow(p.splits()).column("id").to_pylist() == [0, 1]
    b, p = first_plan(t.copy({"scan.snapshot-id": "3"}))  # from-snapshot when only the id is set
    assert p.snapshot_id == 3
    latest = t.copy({"scan.mode": "latest"}).new_stream_read_builder().with_poll_interval_ms(10)
    p = next_after(latest.new_streaming_scan().stream_sync(), lambda: write(t, [9], "n"))
    assert p.snapshot_id == 4 and latest.new_read().to_arrow(p.splits()).column("id").to_pylist() == [9]
    t.create_tag("x")
    with pytest.raises(paimon_rs.UnsupportedError, match="scan.tag-name"):
        t.copy({"scan.tag-name": "x"}).new_stream_read_builder().new_streaming_scan()
    with pytest.raises(paimon_rs.InvalidArgumentError, match="'scan.snapshot-id' must be set"):
        t.copy({"scan.mode": "from-snapshot-full"})
    with pytest.raises(paimon_rs.InvalidArgumentError, match="must be >= 1, got 0"):
        t.copy({"scan.snapshot-id": "0"}).new_stream_read_builder().new_streaming_scan()


def test_the_consumer_moves_once_the_plan_is_processed_and_a_new_scan_resumes_there(catalog):
    t = make(catalog, "t", {"bucket": "1"})
    write(t, [1], "a")
    b = t.new_stream_read_builder().with_consumer_id("job").with_poll_interval_ms(0)
    it = b.new_streaming_scan().stream_sync()
    assert next(it).snapshot_id == 1  # the full read of snapshot 1
    assert t.consumer_manager().consumer("job") is None  # not processed yet
    write(t, [2], "b")
    write(t, [3], "c")
    assert next(it).snapshot_id == 2
    assert t.consumer_manager().consumer("job").next_snapshot == 2  # snapshot 1 processed
    # a new scan of the same consumer (the first process died before finishing plan 2)
    b2 = t.new_stream_read_builder().with_consumer_id("job").with_poll_interval_ms(0)
    it2 = b2.new_streaming_scan().stream_sync()
    p = next(it2)
    assert p.snapshot_id == 2  # at least once: plan 2 again
    assert b2.new_read().to_arrow(p.splits()).column("id").to_pylist() == [2]
    assert next(it2).snapshot_id == 3
    assert t.consumer_manager().consumer("job").next_snapshot == 3


def test_bucket_filters_share_the_stream(catalog):
    t = make(catalog, "t", {"bucket": "4"})
    write(t, list(range(40)), "a")
    parts = []
    for buckets in ([0, 1], [2, 3]):
        b = t.new_stream_read_builder().with_buckets(buckets).with_poll_interval_ms(0)
        plan = next(b.new_streaming_scan().stream_sync())
        assert {s.bucket for s in plan.splits()} <= set(buckets)
        parts.append(set(b.new_read().to_arrow(plan.splits()).column("id").to_pylist()))
    assert parts[0] | parts[1] == set(range(40)) and not parts[0] & parts[1]


def test_filter_projection_and_row_kinds(catalog):
    t = make(catalog, "t", {"bucket": "1", "changelog-producer": "input"})
    write(t, [1, 2], "a")
    b = t.new_stream_read_builder().with_filter("id > 1").with_projection(["v", "id"]).with_poll_interval_ms(0)
    it = b.new_streaming_scan().stream_sync()
    r = b.new_read()
    assert r.to_arrow(next(it).splits()).to_pydict() == {"v": ["a2"], "id": [2]}  # no row kind column
    write(t, [1, 2, 3], "b")
    assert r.to_arrow(next(it).splits()).to_pydict() == {"v": ["b2", "b3"], "id": [2, 3]}
    assert b.read_type().names == ["v", "id"]
    with pytest.raises(paimon_rs.InvalidArgumentError, match="did you mean"):
        t.new_stream_read_builder().with_filter("idd > 1")


def test_async_stream_waits_for_a_commit_without_blocking_the_loop(catalog):
    t = make(catalog, "t", {"bucket": "1"})
    write(t, [1], "a")
    b = t.new_stream_read_builder().with_poll_interval_ms(10)
    scan, read = b.new_streaming_scan(), b.new_read()

    async def consume():
        ticks = 0
        got = []

        async def ticker():
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0.005)

        tick = asyncio.ensure_future(ticker())
        agen = scan.stream()
        got.append(read.to_arrow((await agen.__anext__()).splits()).column("id").to_pylist())
        writer = threading.Timer(0.2, lambda: write(t, [2], "b"))
        writer.start()
        got.append(read.to_arrow((await agen.__anext__()).splits()).column("id").to_pylist())
        writer.join()
        tick.cancel()
        await agen.aclose()
        return got, ticks

    got, ticks = asyncio.run(consume())
    assert got == [[1], [2]]
    assert ticks >= 10  # the loop ran while the scan waited for the commit


def test_a_column_named_like_the_row_kind_is_refused(catalog):
    schema = Schema.from_pyarrow_schema(pa.schema([pa.field("id", pa.int64(), False), ("_row_kind", pa.string())]),
                                        primary_keys=["id"], options={"bucket": "1"})
    catalog.create_table("db.k", schema, False)
    t = catalog.get_table("db.k")
    with pytest.raises(paimon_rs.UnsupportedError, match="_row_kind"):
        t.new_stream_read_builder().with_include_row_kind().new_read()
    t.new_stream_read_builder().new_read()  # without row kinds it reads


@pytest.mark.parametrize("options", [
    {"bucket": "1", "deletion-vectors.enabled": "true"},
    {"bucket": "1", "merge-engine": "first-row"},
    {"bucket": "1", "changelog-producer": "lookup"},
    {"bucket": "1", "changelog-producer": "full-compaction"},
])
def test_the_first_plan_takes_the_levels_java_takes(catalog, options):
    # Java's DataTableStreamScan.tryFirstPlan: a batch read of deletion-vector and first-row
    # tables hides level 0 (batchScanSkipLevel0), a streaming read's first plan does not, or
    # rows written but not yet compacted would never reach the stream; a lookup table's first
    # plan takes the levels above 0 and a full-compaction table's the top level: the rest comes
    # as the changelog of their next compaction
    t = make(catalog, "t", options)
    write(t, [1, 2, 3], "a")
    if options.get("changelog-producer") == "full-compaction":
        t.compact(full=True)
    write(t.copy({"write-only": "true"}), [3, 4], "b")  # level 0, not compacted
    b = t.new_stream_read_builder().with_include_row_kind().with_poll_interval_ms(0)
    scan, read = b.new_streaming_scan(), b.new_read()
    it = scan.stream_sync()
    model: Dict[int, str] = {}
    replay(model, read.to_arrow(next(it).splits()))
    producer = options.get("changelog-producer")
    if producer is None:
        first_row = options.get("merge-engine") == "first-row"
        assert model == {1: "a1", 2: "a2", 3: "a3" if first_row else "b3", 4: "b4"}
        return
    assert model == {1: "a1", 2: "a2", 3: "a3"}  # level 0's rows are not in the first plan
    t.compact(full=True)  # ... they come as the changelog the compaction produces
    for _ in scannable_after(t, scan.next_snapshot_id, "changelog"):
        replay(model, read.to_arrow(next(it).splits()))
    assert model == state(t) == {1: "a1", 2: "a2", 3: "b3", 4: "b4"}


def test_falling_behind_expiry_says_how_to_keep_the_snapshots(catalog):
    t = make(catalog, "exp", {"bucket": "1"})
    write(t, [1], "a")
    it = t.new_stream_read_builder().with_poll_interval_ms(0).new_streaming_scan().stream_sync()
    assert next(it).snapshot_id == 1
    for i in range(2, 6):
        write(t, [i], "b")
    t.expire_snapshots(retain_min=1, retain_max=1)
    with pytest.raises(paimon_rs.InvalidArgumentError, match="has expired.*with_consumer_id"):
        next(it)
