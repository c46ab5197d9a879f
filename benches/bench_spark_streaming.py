"""A CDC pipeline on Spark Structured Streaming, end to end (issue 27, "Must show").

Two queries run side by side in one local[2] session, as a user's pipeline would:

  write  CDC files (Parquet, ``rowkind`` + the table's columns) -> ``paimon_rs.spark.distribute``
         -> ``writeStream.format("paimon_rs")`` into a primary-key table with
         ``changelog-producer = lookup`` (each micro-batch one commit, its lookup compaction
         writing the changelog), bucket 4
  read   ``readStream.format("paimon_rs_audit_log")`` of that table (offsets = snapshot ids),
         ``foreachBatch`` collecting the changelog rows

The table is seeded with ``--base`` rows first (the read query starts from that full state).
Then, one at a time, a CDC file of ``--rows`` records (a quarter updates as -U/+U, a tenth
deletes, the rest inserts) is moved into the write query's source directory, and the clock runs
until the read query has delivered that batch's changelog: the end-to-end latency of the batch
(file in -> changelog out). Printed per batch, then the median (batch 0, which starts the
queries' Python workers, left out) and the throughput (rows / median latency); and the write
query's own progress (median trigger time).

Checked at the end: the table equals a dict model of the CDC input, and the changelog the read
query delivered (from the seeded state on) replayed onto an empty map equals the table.

    python benches/bench_spark_streaming.py                     # 20 batches of 20k rows, base 200k
    python benches/bench_spark_streaming.py --smoke             # 3 batches of 1k rows, base 5k
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Dict, List, Tuple

import pyarrow as pa
import pyarrow.parquet as pq

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), pa.field("v", pa.string())])
Row = Tuple[str, int, str]


def cdc_batches(base: int, rows: int, batches: int, seed: int) -> Tuple[Dict[int, str], List[List[Row]]]:
    """The seeded state and ``batches`` CDC batches over it; values carry their batch number."""
    rng = random.Random(seed)
    state = {k: f"base:{k}" for k in range(base)}
    next_k = base
    out = []
    for b in range(batches):
        recs: List[Row] = []
        keys = rng.sample(sorted(state), min(len(state), rows // 4 + rows // 10))
        for k in keys[: rows // 4]:
            recs.append(("-U", k, state[k]))
            state[k] = f"{b}:{k}"
            recs.append(("+U", k, state[k]))
        for k in keys[rows // 4:]:
            recs.append(("-D", k, state.pop(k)))
        while len(recs) < rows:
            state[next_k] = f"{b}:{next_k}"
            recs.append(("+I", next_k, state[next_k]))
            next_k += 1
        out.append(recs)
    return {k: f"base:{k}" for k in range(base)}, out


class Collector:
    """The read query's sink: changelog rows in order, and when each batch's rows arrived."""

    def __init__(self) -> None:
        self.rows: List[Row] = []
        self.seen: Dict[int, float] = {}
        self.lock = threading.Lock()

    def __call__(self, df, _batch_id: int) -> None:
        got = [(r["rowkind"], r["k"], r["v"]) for r in df.collect()]
        now = time.perf_counter()
        with self.lock:
            self.rows.extend(got)
            for kind, _k, v in got:
                if kind in ("+I", "+U") and v is not None and not v.startswith("base:"):
                    self.seen.setdefault(int(v.split(":", 1)[0]), now)


def replay(rows: List[Row]) -> Dict[int, str]:
    state: Dict[int, str] = {}
    for kind, k, v in rows:
        if kind in ("+I", "+U"):
            state[k] = v
        else:
            state.pop(k, None)
    return state


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", type=int, default=200_000)
    ap.add_argument("--rows", type=int, default=20_000)
    ap.add_argument("--batches", type=int, default=20)
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds to wait for one batch")
    args = ap.parse_args(argv)
    if args.smoke:
        args.base, args.rows, args.batches = 5_000, 1_000, 3

    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    import paimon_rs.spark as ps
    from paimon_rs import CatalogFactory, Schema

    work = Path(tempfile.mkdtemp(prefix="paimon_rs_stream_bench_"))
    spark = (SparkSession.builder.master("local[2]").appName("paimon_rs-stream-bench")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "4").config("spark.default.parallelism", "2")
             .config("spark.sql.session.timeZone", "UTC").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    ps.register_data_source(spark)
    try:
        cat = CatalogFactory.create({"warehouse": str(work / "wh")})
        cat.create_database("db", True)
        cat.create_table("db.cdc", Schema.from_pyarrow_schema(SCHEMA, primary_keys=["k"], options={
            "bucket": "4", "changelog-producer": "lookup"}), False)
        t = cat.get_table("db.cdc")
        seeded, batches = cdc_batches(args.base, args.rows, args.batches, seed=27)
        t.write(pa.table({"k": list(seeded), "v": list(seeded.values())}, schema=SCHEMA))

        src, staging = work / "cdc", work / "staging"
        src.mkdir()
        staging.mkdir()
        df = (spark.readStream.schema("rowkind string, k bigint, v string").option("maxFilesPerTrigger", 1)
              .parquet(str(src)))
        wq = (ps.distribute(df, t).writeStream.format("paimon_rs")
              .option("checkpointLocation", str(work / "ck-write")).start(t.table_path))
        sink = Collector()
        rq = (spark.readStream.format("paimon_rs_audit_log").load(t.table_path).writeStream.foreachBatch(sink)
              .option("checkpointLocation", str(work / "ck-read")).start())

        latencies: List[float] = []
        print(f"{args.batches} micro-batches of {args.rows:,} CDC rows into a lookup-changelog table "
              f"(base {args.base:,}), bucket 4, local[2]")
        print(f"{'batch':>5} {'rows':>7} {'latency s':>10}")
        for b, recs in enumerate(batches):
            f = staging / f"part-{b:04d}.parquet"
            pq.write_table(pa.table({"rowkind": [r[0] for r in recs], "k": [r[1] for r in recs],
                                     "v": [r[2] for r in recs]}), f)
            t0 = time.perf_counter()
            shutil.move(str(f), str(src / f.name))  # same filesystem: a rename, seen whole
            while b not in sink.seen:
                for q in (wq, rq):
                    if q.exception() is not None:
                        raise RuntimeError(f"query failed: {q.exception()}")
                if time.perf_counter() - t0 > args.timeout:
                    raise TimeoutError(f"batch {b}: no changelog after {args.timeout} s")
                time.sleep(0.01)
            latencies.append(sink.seen[b] - t0)
            print(f"{b:>5} {len(recs):>7,} {latencies[-1]:>10.3f}")
        wq.processAllAvailable()
        rq.processAllAvailable()
        progress = [p for p in wq.recentProgress if p.get("numInputRows", 0) > 0]
        trigger_ms = [p["durationMs"]["triggerExecution"] for p in progress][1:]
        wq.stop()
        rq.stop()

        model = dict(seeded)
        for recs in batches:
            for kind, k, v in recs:
                if kind in ("+I", "+U"):
                    model[k] = v
                else:
                    model.pop(k, None)
        rb = t.new_read_builder()
        d = rb.new_read().to_arrow(rb.new_scan().plan().splits()).to_pydict()
        table = dict(zip(d["k"], d["v"]))
        assert table == model, "the table differs from the CDC model"
        assert replay(sink.rows) == table, "the streamed changelog does not replay to the table"
        # the first batch starts both queries' Python workers and JIT: reported, not in the stats
        steady = latencies[1:] or latencies
        med = statistics.median(steady)
        print(f"end-to-end latency (file in -> changelog out), batches 1..: median {med:.3f} s, "
              f"p90 {sorted(steady)[int(0.9 * (len(steady) - 1))]:.3f} s, max {max(steady):.3f} s "
              f"(batch 0, warming up: {latencies[0]:.3f} s)")
        print(f"throughput: {args.rows / med:,.0f} CDC rows/s at the median latency")
        if trigger_ms:
            print(f"write query: median trigger {statistics.median(trigger_ms) / 1000:.3f} s over "
                  f"{len(trigger_ms)} micro-batches")
        print(f"checked: table == CDC model ({len(table):,} rows); changelog replayed == table "
              f"({len(sink.rows):,} changelog rows)")
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
