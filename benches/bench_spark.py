"""paimon_rs.spark against Spark's own paths, side by side in one session (issue #12, "Must show").

Rows: BIGINT key (xxhash64, unique, unordered) + 6 value columns; a primary-key table with 8
buckets; local[2].

  write  (a) Spark's bucketed, sorted Parquet write of the same frame
             (repartition(8, bucket).sortWithinPartitions(id).write.parquet)
         (a-zstd) (a) writing zstd (``.option("compression", "zstd")``): Spark's write at Paimon's
             default codec (``file.compression`` = zstd; Spark's own default is snappy); (c)'s table
             options are not changed
         (b) a mapInArrow identity pass-through (the ceiling of any mapInArrow writer)
         (b0) (b) with Spark's per-row Arrow byte check off, as (c)'s job runs
             (``spark.sql.execution.arrow.maxBytesPerBatch`` = Int.MaxValue, 100,000-row batches)
         (c) paimon_rs.spark.write
         (s) (c)'s first half alone: the rows packed by bucket (paimon_rs.spark._packed_frame:
             bucket hash and Arrow IPC blobs in a mapInArrow) and shuffled, into a noop sink
         (s0) the row shuffle of the Data Source write alone: paimon_rs.spark.distribute(frame)
             (bucket hash in Spark SQL, every row shuffled) into a noop sink
  read   (d) spark.read.parquet of (a)'s files
         (e) paimon_rs.spark.read of (c)'s table (default: splits that are a plain scan of Parquet
             files go through Spark's own Parquet reader, the rest through mapInArrow)
         (e1) (e) with spark_parquet=False: every split through the engine and mapInArrow
         (f) format("paimon_rs") (the Python Data Source) of (c)'s table
         (g) the floor of any mapInArrow reader: the same tasks yielding (c)'s batches already
             decoded (cached in the Python workers by a first pass), no engine work
         (h) spark.read.parquet of (c)'s own data files (the table's columns only): Spark's
             reader on the same bytes and codec as (e) (Paimon writes zstd, Spark's (a) snappy)
         (e0) (e1) without decode-ahead (each task decodes a batch, then hands it to Spark)
  cluster (--cluster) (c) again on a standalone master + worker on 127.0.0.1 (2 cores)

Every read ends in write.format("noop") (all rows materialised, nothing written). The first
``--warmup`` rep(s) (default 1) run every case but are not timed: the JVM's JIT and the Python
workers warm up there, so the medians compare steady states of every case alike. Besides the
wall time, each case's CPU seconds of the whole process tree (driver, JVM, Python workers;
psutil) are printed: on a shared box they move far less than wall time.

``--cases d,e,e1`` runs only those cases (in that order each rep, so paired cases interleave;
a case may be listed twice, e.g. ``d,e,e,d``);
without a write case among them the table and the Parquet copy are written once, untimed, and
every rep reads them.

``--task-cpu`` adds Spark's own ``executorCpuTime`` of each case's stages (the task threads only:
no GC/JIT threads, driver or Python workers; through the UI's REST API, so the UI is on): on a
busy box the one figure that compares (d) and (e)'s per-task work (session 28).

    python benches/bench_spark.py --rows 10000000 [--reps 3] [--warmup 1] [--cases ...] [--cluster] [--task-cpu]
"""

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Optional

import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "spark"))

import paimon_rs.spark as ps  # noqa: E402
from paimon_rs import CatalogFactory, Schema  # noqa: E402
from paimon_rs.spark import common, reader, shuffle, writer  # noqa: E402

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
                    t = common._open_cached(table)
                    cache[raw] = list(t._core.new_read(None, None).stream([_core.Split.from_bytes(raw)]))
                yield from cache[raw]

    idx = spark.createDataFrame(spark.sparkContext.parallelize(list(enumerate(splits)), len(splits)),
                                "i int, split binary")
    return idx.mapInArrow(task, ps.spark_schema_of(schema))


def tree_cpu() -> float:
    """CPU seconds (user + system) of this process and all its descendants still alive (the
    JVM and Spark's Python workers, which are reused across tasks), each with its reaped
    children's: a Python worker Spark stops (idle for a minute) leaves the tree, and without
    its parent's (the daemon's) count of it the delta of the case it ends in fell by all the
    worker had used since it started (negative deltas, session 11)."""
    import psutil

    me = psutil.Process()
    total = 0.0
    for p in [me] + me.children(recursive=True):
        try:
            t = p.cpu_times()
            total += t.user + t.system + t.children_user + t.children_system
        except psutil.Error:
            pass
    return total


CPU = {}
#: --task-cpu: key -> Spark's executorCpuTime (s) of the case's stages: the task threads' CPU
#: alone, without the JVM's GC and JIT threads, the driver and the Python workers
TASK_CPU = {}
#: the Spark UI's REST root (--task-cpu), e.g. http://host:4040/api/v1/applications/<app>
REST = []


def _stages() -> dict:
    """stage id -> executorCpuTime (ns) of the completed stages (Spark's REST API)."""
    import json
    import urllib.request

    with urllib.request.urlopen(f"{REST[0]}/stages?status=complete") as r:
        return {s["stageId"]: s["executorCpuTime"] for s in json.load(r)}


def timed(fn, key=None) -> float:
    s0 = _stages() if REST else None
    c0 = tree_cpu()
    t0 = time.monotonic()
    fn()
    wall = time.monotonic() - t0
    if key is not None:
        CPU.setdefault(key, []).append(tree_cpu() - c0)
    if s0 is not None:
        for _ in range(50):  # the UI's listener reports a stage's end asynchronously
            time.sleep(0.1)
            s1 = _stages()
            if len(s1) > len(s0):
                break
        if key is not None:
            TASK_CPU.setdefault(key, []).append(sum(v for k, v in s1.items() if k not in s0) / 1e9)
    return wall


ALL = ["a", "a-zstd", "b", "b0", "c", "s", "s0", "d", "e", "e1", "e0", "f", "h", "g"]
WRITES = {"a", "a-zstd", "b", "b0", "c", "s", "s0"}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--reps", type=int, default=1)
    ap.add_argument("--warmup", type=int, default=1, help="untimed reps first (JIT and worker warm-up)")
    ap.add_argument("--cases", default=",".join(ALL), help=f"comma-separated subset of {','.join(ALL)}")
    ap.add_argument("--cluster", action="store_true")
    ap.add_argument("--dir", default=None)
    ap.add_argument("--task-cpu", action="store_true",
                    help="also report Spark's executorCpuTime per case (task threads only; turns the UI on)")
    args = ap.parse_args()
    cases = [c for c in args.cases.split(",") if c]
    unknown = [c for c in cases if c not in ALL]
    if unknown:
        ap.error(f"unknown cases {unknown}; known: {ALL}")
    n = args.rows
    root = Path(args.dir or tempfile.mkdtemp(prefix="bench-spark-"))
    os.environ["PYSPARK_PYTHON"] = sys.executable
    confs = {"spark.driver.memory": "6g", "spark.sql.shuffle.partitions": "8"}
    if args.task_cpu:
        confs["spark.ui.enabled"] = "true"
    spark = session("local[2]", "bench_spark", confs)
    if args.task_cpu:
        REST.append(f"{spark.sparkContext.uiWebUrl}/api/v1/applications/{spark.sparkContext.applicationId}")
    spark.sparkContext.setLogLevel("ERROR")
    df = frame(spark, n)
    ps.register_data_source(spark)
    times = {k: [] for k in cases}
    spark.range(1000).mapInArrow(lambda it: it, "id long").count()  # start the Python workers
    write_each_rep = bool(WRITES & set(cases))

    def write_parquet(pq, compression=None):
        w = df.withColumn("b", (df.id % BUCKETS)).repartition(BUCKETS, "b").sortWithinPartitions("id") \
            .drop("b").write
        if compression:
            w = w.option("compression", compression)
        w.parquet(str(pq))

    def noop(frame_):
        frame_.write.format("noop").mode("overwrite").save()

    def read_e(t, spark_parquet, ahead):
        saved = reader._DECODE_AHEAD
        reader._DECODE_AHEAD = ahead
        try:
            noop(ps.read(spark, t, spark_parquet=spark_parquet))
        finally:
            reader._DECODE_AHEAD = saved

    shared = None
    if not write_each_rep:
        pq, t = root / "parquet", new_table(root / "wh", "t")
        write_parquet(pq)
        ps.write(df, t)
        shared = (pq, t)
    for rep in range(args.warmup + args.reps):
        timed_rep = rep >= args.warmup
        if shared is None:
            pq, t = root / f"parquet-{rep}", new_table(root / f"wh-{rep}", "t")
        else:
            pq, t = shared
        floor = None
        # rotate the order each rep: no case always runs first (on a fresh table, a cold cache)
        order = cases[rep % len(cases):] + cases[:rep % len(cases)] if shared is not None else cases
        for k in order:
            key = k if timed_rep else None
            if k == "a":
                w = timed(lambda pq=pq: write_parquet(pq), key)
            elif k == "a-zstd":
                w = timed(lambda pq=pq: write_parquet(pq.with_name(pq.name + "-zstd"), "zstd"), key)
                shutil.rmtree(pq.with_name(pq.name + "-zstd"), ignore_errors=True)
            elif k == "b":
                w = timed(lambda: noop(df.mapInArrow(lambda it: it, df.schema)), key)
            elif k == "b0":
                def b0():
                    with common._session_confs(spark, {ps.ARROW_BATCH_CONF: str(ps.WRITE_BATCH_ROWS),
                                                   ps.ARROW_BYTES_CONF: str(ps.NO_BYTE_CAP)}):
                        noop(df.mapInArrow(lambda it: it, df.schema))
                w = timed(b0, key)
            elif k == "c":
                w = timed(lambda t=t: ps.write(df, t), key)
            elif k == "s":
                def s_(t=t):
                    with common._session_confs(spark, writer._write_batch_confs(t)):
                        noop(shuffle._packed_frame(df, t))
                w = timed(s_, key)
            elif k == "s0":
                w = timed(lambda t=t: noop(ps.distribute(df, t)), key)
            elif k == "d":
                if not pq.exists():
                    write_parquet(pq)
                w = timed(lambda pq=pq: noop(spark.read.parquet(str(pq))), key)
            elif k in ("e", "e1", "e0"):
                if t._core.latest_snapshot_id() is None:
                    ps.write(df, t)
                w = timed(lambda t=t, k=k: read_e(t, k == "e", 0 if k == "e0" else reader._DECODE_AHEAD), key)
            elif k == "f":
                w = timed(lambda t=t: noop(spark.read.format("paimon_rs").load(t.table_path)), key)
            elif k == "h":
                data_dirs = sorted(str(p) for p in Path(t.table_path).glob("bucket-*"))
                w = timed(lambda d=data_dirs: noop(spark.read.parquet(*d).select(*SCHEMA.names)), key)
            elif k == "g":
                if floor is None:
                    floor = cached_batches(spark, t)
                    noop(floor)  # fill the caches
                w = timed(lambda floor=floor: noop(floor), key)
            times[k].append(w)
        if rep == 0 and ("c" in cases or shared is not None):  # t holds the frame's rows
            assert ps.read(spark, t).count() == n and ps.read(spark, t, spark_parquet=False).count() == n
        if shared is None:
            shutil.rmtree(pq, ignore_errors=True)
            shutil.rmtree(root / f"wh-{rep}", ignore_errors=True)
    # the warm-up reps are not counted (a case listed twice runs twice in each)
    times = {k: v[args.warmup * cases.count(k):] for k, v in times.items()}
    spark.stop()
    REST.clear()  # the local session's UI is gone; the cluster's (c) is timed without task CPU
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
    cpu = {k: statistics.median(v) for k, v in CPU.items()}
    task_cpu = {k: statistics.median(v) for k, v in TASK_CPU.items()}
    names = {
        "a": "(a) Spark bucketed+sorted parquet write", "a-zstd": "(a-zstd) (a) with compression zstd",
        "b": "(b) mapInArrow pass-through", "b0": "(b0) (b), byte check off as (c)",
        "c": "(c) paimon_rs.spark.write", "d": "(d) spark.read.parquet", "e": "(e) paimon_rs.spark.read",
        "e1": "(e1) (e) engine only (spark_parquet=False)", "e0": "(e0) (e1) without decode-ahead",
        "f": "(f) format('paimon_rs') read", "s": "(s) packed shuffle only (noop)",
        "s0": "(s0) distribute only (row shuffle, noop)",
        "g": "(g) mapInArrow of cached decoded batches",
        "h": "(h) spark.read.parquet of (c)'s files (zstd)",
    }
    print(f"\n{n:,} rows, {BUCKETS} buckets, local[2], median of {args.reps} "
          f"(after {args.warmup} untimed warm-up rep(s))")
    tc_head, tc_rule = (f" {'task cpu s':>10} |", f"{'-' * 12}|") if task_cpu else ("", "")
    print(f"| {'case':44} | {'s':>7} | {'M rows/s':>8} | {'cpu s':>6} |{tc_head} runs (s) |")
    print(f"|{'-' * 46}|{'-' * 9}|{'-' * 10}|{'-' * 8}|{tc_rule}----------|")
    for k in [k for k in ALL if k in times]:
        runs = ", ".join(f"{x:.2f}" for x in times[k])
        tc = f" {task_cpu.get(k, 0):10.2f} |" if task_cpu else ""
        print(f"| {names[k]:44} | {med[k]:7.2f} | {n / med[k] / 1e6:8.2f} | {cpu.get(k, 0):6.1f} |{tc} {runs} |")
    if cluster:
        c = statistics.median(cluster)
        print(f"| {'(c) on the standalone cluster':44} | {c:7.2f} | {n / c / 1e6:8.2f} | {'':6} | "
              f"{', '.join(f'{x:.1f}' for x in cluster)} |")

    def ratio(num: str, den: str, what: str) -> Optional[str]:
        if num in med and den in med:
            return (f"{what} = {med[den] / med[num]:.2f}x (cpu {cpu[den] / cpu[num]:.2f}x)"
                    if num in cpu and den in cpu and cpu[num] else f"{what} = {med[den] / med[num]:.2f}x")
        return None

    lines = [
        ratio("c", "a", "write (c)/(a)"), ratio("c", "b", "(c)/(b)"), ratio("c", "b0", "(c)/(b0)"),
        ratio("c", "a-zstd", "same codec (c)/(a-zstd) (both zstd)"),
        ratio("e", "d", "read (e)/(d)"), ratio("e1", "d", "(e1)/(d) engine only"),
        ratio("e0", "d", "(e0)/(d) no decode-ahead"), ratio("g", "d", "(g)/(d) mapInArrow floor"),
        ratio("f", "d", "(f)/(d)"), ratio("e", "h", "(e)/(h) same files"),
    ]
    if task_cpu and "e" in task_cpu and "d" in task_cpu and task_cpu["e"]:
        lines.append(f"task cpu (d)/(e) = {task_cpu['d'] / task_cpu['e']:.2f}x")
    print("\n" + "\n".join(x for x in lines if x))
    shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
