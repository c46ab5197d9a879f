"""Expiry reclaiming the disk of a 50-commit history (issue 15 must-show).

A primary-key table (2 buckets) gets 50 upsert commits of 2,000 rows each over 20,000 keys, with
a full compaction every 10 commits; then ``expire_snapshots`` keeps the latest snapshot only
(``retain_min=1, older_than=0``). Prints files and bytes of the table directory before and after,
and checks that the latest snapshot still reads every key.

    python benches/bench_expiry.py [--commits 50] [--rows 2000]
"""

from __future__ import annotations

import argparse
import os
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


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--commits", type=int, default=50)
    ap.add_argument("--rows", type=int, default=2000)
    a = ap.parse_args()
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
