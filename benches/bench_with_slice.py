"""CPU of a sharded read: an append table of one 2M-row Parquet file read as ``--shards``
parts with ``scan.with_slice(start, end)`` (pypaimon's API for splitting a read between
workers), each part checked for its row count. Prints the CPU seconds (getrusage user + sys)
of each round; the whole file read once is printed beside for scale.

    python benches/bench_with_slice.py [--rows 2000000] [--shards 10] [--rounds 3]
"""

from __future__ import annotations

import argparse
import tempfile

import pyarrow as pa
from _peer_common import cpu_seconds as cpu

import paimon_rs
from paimon_rs import Schema


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--shards", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    n = a.rows
    c = paimon_rs.CatalogFactory.create({"warehouse": tempfile.mkdtemp()})
    c.create_database("db", True)
    s = pa.schema([("id", pa.int64()), ("v", pa.string())])
    c.create_table("db.t", Schema.from_pyarrow_schema(s), False)
    t = c.get_table("db.t")
    t.write(pa.table({"id": pa.array(range(n), pa.int64()),
                      "v": pa.array([f"value-{i:09d}" for i in range(n)])}, schema=s))
    print(f"| round | {a.shards} shards, CPU s | whole file once, CPU s |")
    print("|---|---|---|")
    for r in range(a.rounds):
        c0 = cpu()
        for k in range(a.shards):
            rb = t.new_read_builder()
            scan = rb.new_scan().with_slice(k * n // a.shards, (k + 1) * n // a.shards)
            got = rb.new_read().to_arrow(scan.plan().splits())
            assert got.num_rows == (k + 1) * n // a.shards - k * n // a.shards
        sharded = cpu() - c0
        c0 = cpu()
        rb = t.new_read_builder()
        assert rb.new_read().to_arrow(rb.new_scan().plan().splits()).num_rows == n
        print(f"| {r + 1} | {sharded:.3f} | {cpu() - c0:.3f} |")


if __name__ == "__main__":
    main()
