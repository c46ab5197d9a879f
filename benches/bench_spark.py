"""paimon_rs.spark against Spark's own paths, side by side in one session (issue #12, "Must show").

Rows: BIGINT key (xxhash64, unique, unordered) + 6 value columns; a primary-key table with 8
buckets; local[2].

  write  (a) Spark's bucketed, sorted Parquet write of the same frame
             (repartition(8, bucket).sortWithinPartitions(id).write.parquet)
         (b) a mapInArrow identity pass-through (the ceiling of any mapInArrow writer)
         (c) paimon_rs.spark.write
         (s) the shuffle alone: paimon_rs.spark.distribute(frame) into a noop sink (key + shuffle,
             no writer): with (b), the structural floor of (c)
  read   (d) spark.read.parquet of (a)'s files      (e) paimon_rs.spark.read of (c)'s table
         (f) format("paimon_rs") (the Python Data Source) of (c)'s table
         (g) the floor of any mapInArrow reader: the same tasks yielding (c)'s batches already
             decoded (cached in the Python workers by a first pass), no engine work
         (h) spark.read.parquet of (c)'s own data files (the table's columns only): Spark's
             reader on the same bytes and codec as (e) (Paimon writes zstd, Spark's (a) snappy)
         (e0) (e) without decode-ahead (each task decodes a batch, then hands it to Spark)
  cluster (--cluster) (c) again on a standalone master + worker on 127.0.0.1 (2 cores)

Every read ends in write.format("noop") (all rows materialised, nothing written). The first
``--warmup`` rep(s) (default 1) run every case but are not timed: the JVM's JIT and the Python
workers warm up there, so the medians compare steady states of every case alike.

    python benches/bench_spark.py --rows 10000000 [--reps 3] [--warmup 1] [--cluster]
"""

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "spark"))

import paimon_rs.spark as ps  # noqa: E402
from paimon_rs import CatalogFactory, Schema  # noqa: E402

from standalone import Standalone, session  # noqa: E402

BUCKETS = 8
SCHEMA = pa.schema([
    pa.field("id", pa.int64(), nullable=False), pa.field("v_int", pa.int32()), pa.field("v_long", pa.int64()),
    pa.field("v_double", pa.float64()), pa.field("v_double2", pa.float64()), pa.field("v_str", pa.string()),
    pa.field("v_date", pa.date32()),
])


def frame(spark, n: int):
    return spark.range(n).selectExpr(
        "xxhash64(id) AS id", "CAST(id % 1000000 AS INT) AS v_int", "id * 7 AS v_long",
        "CAST(id AS DOUBLE) / 3 AS v_double", "rand(7) AS v_double2", "concat('value-', id % 100000) AS v_str",
        "date_add(DATE'2026-01-01', CAST(id % 1000 AS INT)) AS v_date",
    )


def new_table(wh: Path, name: str):
    cat = CatalogFactory.create({"warehouse": str(wh)})
    cat.create_database("db", True)
    cat.create_table(f"db.{name}", Schema.from_pyarrow_schema(SCHEMA, primary_keys=["id"],
                                                             options={"bucket": str(BUCKETS)}), False)
    return cat.get_table(f"db.{name}")


def cached_batches(spark, table):
    """(g): one task per split yielding the split's batches, decoded once per Python worker and
    kept there: what a mapInArrow reader costs when the engine costs nothing."""
    _, splits, schema = ps.plan_splits(table)

    def task(it):
        import builtins

        from paimon_rs import _core

        cache = builtins.__dict__.setdefault("_paimon_rs_bench_cache", {})  # per worker process
        for b in it:
            for raw in b.column("split").to_pylist():
                if raw not in cache:
                    t = ps._open_cached(table)
                    cache[raw] = list(t._core.new_read(None, None).stream([_core.Split.from_bytes(raw)]))
                yield from cache[raw]

    idx = spark.createDataFrame(spark.sparkContext.parallelize(list(enumerate(splits)), len(splits)),
                                "i int, split binary")
    return idx.mapInArrow(task, ps.spark_schema_of(schema))


def timed(fn) -> float:
    t0 = time.monotonic()
    fn()
    return time.monotonic() - t0


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--reps", type=int, default=1)
    ap.add_argument("--warmup", type=int, default=1, help="untimed reps first (JIT and worker warm-up)")
    ap.add_argument("--cluster", action="store_true")
    ap.add_argument("--dir", default=None)
    args = ap.parse_args()
    n = args.rows
    root = Path(args.dir or tempfile.mkdtemp(prefix="bench-spark-"))
    os.environ["PYSPARK_PYTHON"] = sys.executable
    spark = session("local[2]", "bench_spark", {"spark.driver.memory": "6g", "spark.sql.shuffle.partitions": "8"})
    spark.sparkContext.setLogLevel("ERROR")
    df = frame(spark, n)
    ps.register_data_source(spark)
    times = {k: [] for k in ["a", "b", "c", "s", "d", "e", "e0", "f", "g", "h"]}
    spark.range(1000).mapInArrow(lambda it: it, "id long").count()  # start the Python workers
    for rep in range(args.warmup + args.reps):
        pq = root / f"parquet-{rep}"
        times["a"].append(timed(lambda pq=pq: df.withColumn("b", (df.id % BUCKETS)).repartition(BUCKETS, "b")
                                .sortWithinPartitions("id").drop("b").write.parquet(str(pq))))
        times["b"].append(timed(lambda: df.mapInArrow(lambda it: it, df.schema).write.format("noop")
                                .mode("overwrite").save()))
        t = new_table(root / f"wh-{rep}", "t")
        times["c"].append(timed(lambda t=t: ps.write(df, t)))
        times["s"].append(timed(lambda t=t: ps.distribute(df, t).write.format("noop").mode("overwrite").save()))
        times["d"].append(timed(lambda pq=pq: spark.read.parquet(str(pq)).write.format("noop")
                                .mode("overwrite").save()))
        ahead = ps._DECODE_AHEAD
        for k in (["e", "e0"] if rep % 2 == 0 else ["e0", "e"]):  # neither always reads the fresh table first
            ps._DECODE_AHEAD = ahead if k == "e" else 0
            times[k].append(timed(lambda t=t: ps.read(spark, t).write.format("noop").mode("overwrite").save()))
        ps._DECODE_AHEAD = ahead
        times["f"].append(timed(lambda t=t: spark.read.format("paimon_rs").load(t.table_path)
                                .write.format("noop").mode("overwrite").save()))
        data_dirs = sorted(str(p) for p in Path(t.table_path).glob("bucket-*"))
        times["h"].append(timed(lambda d=data_dirs: spark.read.parquet(*d).select(*SCHEMA.names)
                                .write.format("noop").mode("overwrite").save()))
        floor = cached_batches(spark, t)
        floor.write.format("noop").mode("overwrite").save()  # fill the caches
        times["g"].append(timed(lambda floor=floor: floor.write.format("noop").mode("overwrite").save()))
        assert ps.read(spark, t).count() == n
        shutil.rmtree(pq)
        shutil.rmtree(root / f"wh-{rep}", ignore_errors=True)
    times = {k: v[args.warmup:] for k, v in times.items()}  # the warm-up reps are not counted
    spark.stop()
    cluster = []
    if args.cluster:
        with Standalone(root / "cluster") as c:
            cs = session(c.url, "bench_spark_cluster", {"spark.sql.shuffle.partitions": "8"})
            cs.sparkContext.setLogLevel("ERROR")
            cdf = frame(cs, n)
            cs.range(1000).mapInArrow(lambda it: it, "id long").count()
            for rep in range(args.reps):
                t = new_table(root / f"wh-cluster-{rep}", "t")
                cluster.append(timed(lambda t=t, cdf=cdf: ps.write(cdf, t)))
            cs.stop()
    med = {k: statistics.median(v) for k, v in times.items()}
    names = {
        "a": "(a) Spark bucketed+sorted parquet write", "b": "(b) mapInArrow pass-through",
        "c": "(c) paimon_rs.spark.write", "d": "(d) spark.read.parquet", "e": "(e) paimon_rs.spark.read",
        "e0": "(e0) (e) without decode-ahead",
        "f": "(f) format('paimon_rs') read", "s": "(s) distribute only (key + shuffle, noop)",
        "g": "(g) mapInArrow of cached decoded batches",
        "h": "(h) spark.read.parquet of (c)'s files (zstd)",
    }
    print(f"\n{n:,} rows, {BUCKETS} buckets, local[2], median of {args.reps} "
          f"(after {args.warmup} untimed warm-up rep(s))")
    print(f"| {'case':42} | {'s':>7} | {'M rows/s':>8} | runs (s) |")
    print(f"|{'-' * 44}|{'-' * 9}|{'-' * 10}|----------|")
    for k, label in names.items():
        runs = ", ".join(f"{x:.1f}" for x in times[k])
        print(f"| {label:42} | {med[k]:7.2f} | {n / med[k] / 1e6:8.2f} | {runs} |")
    if cluster:
        c = statistics.median(cluster)
        print(f"| {'(c) on the standalone cluster':42} | {c:7.2f} | {n / c / 1e6:8.2f} | "
              f"{', '.join(f'{x:.1f}' for x in cluster)} |")
    print(f"\nwrite (c)/(a) = {med['a'] / med['c']:.2f}x, (c)/(b) = {med['b'] / med['c']:.2f}x of the "
          f"pass-through (floor (b)/((b)+(s)) = {med['b'] / (med['b'] + med['s']):.2f}x); read (e)/(d) = "
          f"{med['d'] / med['e']:.2f}x (without decode-ahead {med['d'] / med['e0']:.2f}x), "
          f"(g)/(d) = {med['d'] / med['g']:.2f}x, (f)/(d) = {med['d'] / med['f']:.2f}x, "
          f"(e)/(h) = {med['h'] / med['e']:.2f}x (same files)")
    shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
