"""Expiry reclaiming the disk of a 50-commit history (issue 15 must-show).

A primary-key table (2 buckets) gets 50 upsert commits of 2,000 rows each over 20,000 keys, with
a full compaction every 10 commits; then ``expire_snapshots`` keeps the latest snapshot only
(``retain_min=1, older_than=0``). Prints files and bytes of the table directory before and after,
and checks that the latest snapshot still reads every key.

    python benches/bench_expiry.py [--commits 50] [--rows 2000]

``--on-commit``: the cost expiry adds to each commit instead. A primary-key table (2 buckets)
with ``snapshot.num-retained.max`` = ``--retain`` (30) gets ``--commits`` (200) commits of
``--rows`` new keys each (the table grows; the writers' compactions add COMPACT snapshots), so
that every commit past the first ``--retain`` expires what falls out of the window. Prints the
median commit time without expiry (nothing is old enough) and with it, over the commits that expired
something, and the last ones.

    python benches/bench_expiry.py --on-commit [--commits 200] [--rows 200] [--retain 30]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

import pyarrow as pa

from paimon_rs import CatalogFactory, Schema


def usage(path: str) -> tuple:
    n = b = 0
    for root, _, files in os.walk(path):
        for f in files:
            n += 1
            b += os.path.getsize(os.path.join(root, f))
    return n, b


def commit_times(wh: str, name: str, commits: int, rows: int, options: dict) -> list:
    """Seconds of each of `commits` commits of `rows` new keys to a new table."""
    cat = CatalogFactory.create({"warehouse": wh})
    cat.create_database("db", True)
    schema = pa.schema([("k", pa.int64()), ("v", pa.string())])
    cat.create_table(name, Schema.from_pyarrow_schema(schema, primary_keys=["k"],
                                                     options={"bucket": "2", **options}), False)
    t = cat.get_table(name)
    out = []
    for i in range(commits):
        ks = list(range(i * rows, (i + 1) * rows))
        wb = t.new_batch_write_builder()
        w, c = wb.new_write(), wb.new_commit()
        w.write_arrow(pa.table({"k": ks, "v": [f"value-{i}-{k}" for k in ks]}, schema=schema))
        msgs = w.prepare_commit()
        start = time.perf_counter()
        c.commit(msgs)
        out.append(time.perf_counter() - start)
        w.close()
        c.close()
    return out


def on_commit(a: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as wh:
        keep = {"snapshot.num-retained.min": "1", "snapshot.num-retained.max": str(a.retain)}
        # the default time retention (1 h) keeps every snapshot of the plain table
        plain = commit_times(wh, "db.plain", a.commits, a.rows, {"snapshot.num-retained.min": "1"})
        expiring = commit_times(wh, "db.exp", a.commits, a.rows, keep)
    tail = a.commits // 4
    med = statistics.median
    print(f"{a.commits} commits of {a.rows} new keys, retain max {a.retain}: median commit "
          f"{med(plain[a.retain:]) * 1e3:.1f} ms without expiry, {med(expiring[a.retain:]) * 1e3:.1f} ms "
          f"with (last {tail}: {med(plain[-tail:]) * 1e3:.1f} ms / {med(expiring[-tail:]) * 1e3:.1f} ms)")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--commits", type=int, default=None)
    ap.add_argument("--rows", type=int, default=None)
    ap.add_argument("--on-commit", action="store_true")
    ap.add_argument("--retain", type=int, default=30)
    a = ap.parse_args()
    if a.on_commit:
        a.commits, a.rows = a.commits or 200, a.rows or 200
        on_commit(a)
        return
    a.commits, a.rows = a.commits or 50, a.rows or 2000
    with tempfile.TemporaryDirectory() as wh:
        cat = CatalogFactory.create({"warehouse": wh})
        cat.create_database("db", True)
        schema = pa.schema([("k", pa.int64()), ("v", pa.string()), ("x", pa.float64())])
        cat.create_table("db.t", Schema.from_pyarrow_schema(schema, primary_keys=["k"], options={"bucket": "2"}),
                         False)
        t = cat.get_table("db.t")
        keys = a.rows * 10
        for i in range(a.commits):
            lo = (i * a.rows) % keys
            ks = list(range(lo, lo + a.rows))
            wb = t.new_batch_write_builder()
            w, c = wb.new_write(), wb.new_commit()
            w.write_arrow(pa.table({"k": ks, "v": [f"value-{i}-{k}" for k in ks], "x": [k * 0.5 for k in ks]},
                                   schema=schema))
            c.commit(w.prepare_commit())
            w.close()
            c.close()
            if i % 10 == 9:
                t.compact(full=True)
        snaps = t.latest_snapshot_id()
        n0, b0 = usage(t.table_path)
        start = time.perf_counter()
        r = t.expire_snapshots(retain_min=1, older_than=0, max_deletes=1000)
        secs = time.perf_counter() - start
        n1, b1 = usage(t.table_path)
        rb = t.new_read_builder()
        rows = rb.new_read().to_arrow(rb.new_scan().plan().splits()).num_rows
        assert rows == min(keys, a.commits * a.rows), rows
        print(f"{a.commits} commits ({snaps} snapshots): {n0} files, {b0 / 1e6:.2f} MB before; "
              f"{n1} files, {b1 / 1e6:.2f} MB after expiry ({len(r.snapshots)} snapshots expired, "
              f"{len(r.files)} files / {r.bytes / 1e6:.2f} MB deleted, {secs:.2f} s); latest reads {rows} rows")


if __name__ == "__main__":
    main()
