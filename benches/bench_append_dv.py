"""DELETE on an append table: deletion vectors vs the partition rewrite (issue 27).

Table: ``id`` BIGINT, ``k`` BIGINT (= id % 100), ``v`` float64, ``s`` string; bucket-unaware,
unpartitioned, ``--rows`` rows written in ``--files`` commits. Two tables with the same rows:
``deletion-vectors.enabled = true`` (``table.delete`` marks the rows in vectors, commits index
files only) and a plain one (``table.delete`` reads the table and writes it back without the rows,
an INSERT OVERWRITE). Each deletes ``k = 7`` (1% of the rows, spread over every file), then
reads the whole table back. Reported: the delete's seconds, the full read's seconds after it
(median of ``--repeat``), and the read of the DV table after ``table.compact()``.

    python benches/bench_append_dv.py                 # 2M rows in 20 files, 3 repeats
    python benches/bench_append_dv.py --smoke         # 20k rows
    python benches/bench_append_dv.py --bucketed      # the writers' compaction (below)

``--bucketed``: a bucketed append table (``bucket`` = 2, ``bucket-key`` = ``id``) with deletion
vectors, ``--rounds`` rounds of (append ``--round-rows`` rows; delete 5% of them), written with
the writers' compaction (default: each writer compacts its bucket's small files with the
bucket's vectors, dropping marked rows) and with ``write-only = true`` (never compacts). Reported
per variant: the rounds' seconds, the live data files after them and a full read's seconds
(median of ``--repeat``).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

import pyarrow as pa

from paimon_rs import CatalogFactory, Schema

SCHEMA = pa.schema([pa.field("id", pa.int64(), False), ("k", pa.int64()), ("v", pa.float64()),
                    ("s", pa.string())])


def _rows(lo: int, hi: int) -> pa.Table:
    ids = pa.array(range(lo, hi), pa.int64())
    return pa.table({"id": ids, "k": pa.array([i % 100 for i in range(lo, hi)], pa.int64()),
                     "v": pa.array([i * 0.5 for i in range(lo, hi)]),
                     "s": pa.array([f"row-{i}" for i in range(lo, hi)])}, schema=SCHEMA)


def _timed(f):
    t0 = time.perf_counter()
    out = f()
    return time.perf_counter() - t0, out


def _median_read(t, repeat: int) -> tuple:
    """The median seconds of ``repeat`` full reads after a warm-up, and the rows read."""
    reads = []
    n = 0
    for _ in range(repeat + 1):
        s, got = _timed(t.to_arrow)
        reads.append(s)
        n = got.num_rows
    return statistics.median(reads[1:]), n


def bucketed(a: argparse.Namespace) -> None:
    """The bucketed variant (``--bucketed``): writer compaction vs write-only."""
    with tempfile.TemporaryDirectory() as root:
        cat = CatalogFactory.create({"warehouse": root})
        cat.create_database("db", True)
        print(f"{a.rounds} rounds of {a.round_rows} rows appended + 5% deleted; bucket 2")
        print(f"{'variant':12} {'rounds s':>9} {'files':>6} {'read s':>8} {'rows':>9}")
        for name, extra in (("compacting", {}), ("write-only", {"write-only": "true"})):
            cat.create_table(f"db.{name.replace('-', '_')}", Schema.from_pyarrow_schema(
                SCHEMA, options={"bucket": "2", "bucket-key": "id",
                                 "deletion-vectors.enabled": "true", **extra}), False)
            t = cat.get_table(f"db.{name.replace('-', '_')}")
            t0 = time.perf_counter()
            for r in range(a.rounds):
                lo = r * a.round_rows
                t.write(_rows(lo, lo + a.round_rows))
                t.delete(f"id >= {lo} AND id < {lo + a.round_rows} AND k IN (0, 1, 2, 3, 4)")
            secs = time.perf_counter() - t0
            files = cat.get_table(f"db.{name.replace('-', '_')}$files").to_arrow().num_rows
            read_s, n = _median_read(t, a.repeat)
            print(f"{name:12} {secs:9.3f} {files:6} {read_s:8.3f} {n:9}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--files", type=int, default=20)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--bucketed", action="store_true", help="writer compaction vs write-only")
    ap.add_argument("--rounds", type=int, default=40)
    ap.add_argument("--round-rows", type=int, default=1000)
    a = ap.parse_args()
    if a.smoke:
        a.rows, a.files, a.repeat, a.rounds = 20_000, 4, 1, 4
    if a.bucketed:
        bucketed(a)
        return
    with tempfile.TemporaryDirectory() as root:
        cat = CatalogFactory.create({"warehouse": root})
        cat.create_database("db", True)
        tables = {}
        for name, extra in (("dv", {"deletion-vectors.enabled": "true"}), ("rewrite", {})):
            cat.create_table(f"db.{name}", Schema.from_pyarrow_schema(
                SCHEMA, options={"bucket": "-1", **extra}), False)
            t = cat.get_table(f"db.{name}")
            step = a.rows // a.files
            for i in range(a.files):
                t.write(_rows(i * step, (i + 1) * step))
            tables[name] = t
        print(f"{a.rows} rows in {a.files} files; delete k = 7 ({a.rows // 100} rows)")
        print(f"{'variant':10} {'delete s':>9} {'read s':>8} {'rows':>9}")
        for name, t in tables.items():
            secs, _ = _timed(lambda t=t: t.delete("k = 7"))
            read_s, n = _median_read(t, a.repeat)
            assert n == a.rows - a.rows // 100, (name, n)
            print(f"{name:10} {secs:9.3f} {read_s:8.3f} {n:9}")
        dv = tables["dv"]
        csecs, _ = _timed(lambda: dv.compact(full=True))
        reads = [_timed(dv.to_arrow)[0] for _ in range(a.repeat + 1)]
        print(f"dv compact {csecs:.3f} s; read after it {statistics.median(reads[1:]):.3f} s")


if __name__ == "__main__":
    main()
