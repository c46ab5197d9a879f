"""Cross-partition upsert: the key index in memory against the key index spilled to disk.

A cross-partition upsert table (``bucket`` = -1, primary key ``id`` without the partition ``dt``;
paimon-behaviour.md §1.8) gets a base commit of ``--rows`` keys over ``--partitions`` partitions;
then ``--commits`` upsert commits of ``--update-rows`` rows (half of them existing keys moved to
another partition, half new keys), each by a new batch writer, which bootstraps its key index from
the table at its first write. Each run is timed twice: with the default ``lookup.cache-max-memory-size`` (256 mb:
the index stays in memory) and with ``--budget`` (the index spills to a local redb file:
write/key_index.rs). Runs alternate (memory, spill, memory, ...) over ``--repeat`` fresh tables;
the table prints median seconds of the first upsert commit (bootstrap included) and of all of them,
and the ratio spill / memory.

    python benches/bench_cross_partition.py            # 1,000,000 keys, 3 x 200,000 upserts, 3 repeats
    python benches/bench_cross_partition.py --smoke    # 50,000 keys, 2 x 10,000 upserts, 1 repeat

``--assign-tasks N`` (issue #28, the distributed write's bootstrap): the base table only, then the
bootstrap of the N assign tasks of ``paimon_rs.spark.write`` (``_core.CrossPartitionAssignTask``,
each reading every key of the snapshot and keeping its own) timed one after the other, against
the alternative of reading the keys once (on the driver) and shipping each task its slice: that
read, split by channel into N Arrow IPC (lz4) slices, timed with the slices' bytes. The read of
all keys inside one task is estimated by a task of a 256-way shard (its own keys ~0).

    python benches/bench_cross_partition.py --assign-tasks 4 --repeat 3
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

import numpy as np
import pyarrow as pa

from paimon_rs import CatalogFactory, Schema

SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.int64())])


def batch(ids: np.ndarray, parts: np.ndarray) -> pa.Table:
    return pa.table({"dt": pa.array([f"p{p}" for p in parts], pa.string()), "id": pa.array(ids, pa.int64()),
                     "v": pa.array(ids * 7, pa.int64())}, schema=SCHEMA)


def run(rows: int, partitions: int, commits: int, update_rows: int, budget: str | None, seed: int) -> tuple:
    rng = np.random.default_rng(seed)
    with tempfile.TemporaryDirectory() as wh:
        t = base_table(wh, rows, partitions, budget)
        next_id = rows
        times = []
        for _ in range(commits):
            old = rng.choice(rows, update_rows // 2, replace=False)
            new = np.arange(next_id, next_id + update_rows - len(old))
            next_id += len(new)
            up = np.concatenate([old, new])
            data = batch(up, (up + 1 + rng.integers(0, partitions - 1, len(up))) % partitions)
            t0 = time.perf_counter()
            # a batch write commits once: each commit's writer bootstraps its index from the table
            wb = t.new_batch_write_builder()
            w, c = wb.new_write(), wb.new_commit()
            w.write_arrow(data)
            c.commit(w.prepare_commit())
            w.close()
            times.append(time.perf_counter() - t0)
        return times[0], sum(times)


def base_table(wh: str, rows: int, partitions: int, budget: str | None = None):
    """A cross-partition table of ``rows`` keys over ``partitions`` partitions, one commit;
    ``budget``: its ``lookup.cache-max-memory-size``."""
    cat = CatalogFactory.create({"warehouse": wh})
    cat.create_database("db", True)
    opts = {"bucket": "-1", "dynamic-bucket.target-row-num": str(max(rows // partitions // 4, 1))}
    if budget:
        opts["lookup.cache-max-memory-size"] = budget
    cat.create_table("db.t", Schema.from_pyarrow_schema(SCHEMA, partition_keys=["dt"], primary_keys=["id"],
                                                        options=opts), False)
    t = cat.get_table("db.t")
    ids = np.arange(rows)
    wb = t.new_batch_write_builder()
    w, c = wb.new_write(), wb.new_commit()
    w.write_arrow(batch(ids, ids % partitions))
    c.commit(w.prepare_commit())
    w.close()
    return t


def bootstrap_tasks(t, n: int, tasks: range) -> list:
    """Seconds of the bootstrap of assign tasks ``tasks`` of ``n`` (each fed one row of its own:
    the bootstrap runs at the first row)."""
    from paimon_rs import _core

    snap = t.latest_snapshot_id()
    probe = batch(np.arange(-1, -20000, -1), np.zeros(19999, dtype=np.int64)).to_batches()[0]
    channel = np.asarray(_core.cross_partition_channels(t._core, probe, n)[0])
    out = []
    for i in tasks:
        own = probe.slice(int(np.flatnonzero(channel == i)[0]), 1)
        t0 = time.perf_counter()
        task = _core.CrossPartitionAssignTask(t._core, n, i, snap)
        task.assign(own)
        out.append(time.perf_counter() - t0)
        task.close()
    return out


def driver_slices(t, n: int) -> tuple:
    """Seconds and bytes of reading every key once with its (partition, bucket) and cutting it
    into ``n`` Arrow IPC slices by assign channel."""
    from paimon_rs import _core

    t0 = time.perf_counter()
    rb = t.new_read_builder().with_projection(["dt", "id"])
    read = rb.new_read()
    parts = []
    for split in rb.new_scan().plan().splits():
        for b in read.to_arrow([split]).to_batches():
            parts.append(b.append_column("bucket", pa.array(np.full(b.num_rows, split.bucket, np.int32))))
    keys = pa.Table.from_batches(parts).combine_chunks().to_batches()[0]
    channel = pa.array(_core.cross_partition_channels(t._core, keys, n)[0])
    total = 0
    for i in range(n):
        sink = pa.BufferOutputStream()
        part = keys.filter(pa.compute.equal(channel, i))
        with pa.ipc.new_stream(sink, part.schema, options=pa.ipc.IpcWriteOptions(compression="lz4")) as w:
            w.write_batch(part)
        total += sink.getvalue().size
    return time.perf_counter() - t0, total


def assign_tasks_mode(a: argparse.Namespace) -> None:
    import pyarrow.compute  # noqa: F401 (pa.compute in driver_slices)

    res: dict = {"tasks": [], "read": [], "driver": [], "bytes": []}
    for _ in range(a.repeat):
        with tempfile.TemporaryDirectory() as wh:
            t = base_table(wh, a.rows, a.partitions)
            res["tasks"].append(bootstrap_tasks(t, a.assign_tasks, range(a.assign_tasks)))
            res["read"].append(statistics.median(bootstrap_tasks(t, 256, range(4))))
            secs, size = driver_slices(t, a.assign_tasks)
            res["driver"].append(secs)
            res["bytes"].append(size)
    n = a.assign_tasks
    print(f"{a.rows:,} keys in {a.partitions} partitions, {n} assign tasks, median of {a.repeat}")
    tasks = [statistics.median(r[i] for r in res["tasks"]) for i in range(n)]
    read = statistics.median(res["read"])
    print(f"per-task bootstrap s: {[round(x, 3) for x in tasks]} (sum {sum(tasks):.3f}, max {max(tasks):.3f})")
    print(f"read of all keys in one task s: {read:.3f} (x{n} tasks: {n * read:.3f}, "
          f"{n * read / sum(tasks):.0%} of the bootstrap's sum)")
    print(f"driver read once + {n} slices s: {statistics.median(res['driver']):.3f}, "
          f"{statistics.median(res['bytes']) / 1e6:.1f} MB to ship")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--partitions", type=int, default=8)
    ap.add_argument("--commits", type=int, default=3)
    ap.add_argument("--update-rows", type=int, default=200_000)
    ap.add_argument("--budget", default="4 mb", help="lookup.cache-max-memory-size of the spilling runs")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--assign-tasks", type=int, default=0, help="time the N assign tasks' bootstrap instead")
    a = ap.parse_args()
    if a.assign_tasks:
        assign_tasks_mode(a)
        return
    if a.smoke:
        a.rows, a.commits, a.update_rows, a.repeat = 50_000, 2, 10_000, 1
    res: dict = {"memory": [], "spill": []}
    for i in range(a.repeat):
        res["memory"].append(run(a.rows, a.partitions, a.commits, a.update_rows, None, i))
        res["spill"].append(run(a.rows, a.partitions, a.commits, a.update_rows, a.budget, i))
    print(f"{a.rows:,} keys in {a.partitions} partitions, {a.commits} x {a.update_rows:,} upserts "
          f"(half moving partitions), spill budget {a.budget!r}, median of {a.repeat}")
    print(f"{'index':<8} {'bootstrap+1st commit s':>24} {'all upserts s':>14} {'upserts rows/s':>15}")
    med = {}
    for k, v in res.items():
        first = statistics.median(x[0] for x in v)
        total = statistics.median(x[1] for x in v)
        med[k] = (first, total)
        print(f"{k:<8} {first:>24.2f} {total:>14.2f} {a.commits * a.update_rows / total:>15,.0f}")
    print(f"spill / memory: bootstrap+1st {med['spill'][0] / med['memory'][0]:.2f}x, "
          f"all {med['spill'][1] / med['memory'][1]:.2f}x")


if __name__ == "__main__":
    main()
