"""The round trip of test_cluster.py (write, update, full compaction, read; then issue #28's
dynamic-bucket, cross-partition and sort-compaction jobs), run in a process of its own (one
SparkContext per process): ``python cluster_job.py MASTER WAREHOUSE MARKER`` prints one JSON line."""

import datetime
import json
import os
import sys
import time
from pathlib import Path

import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent))

import paimon_rs.spark as ps  # noqa: E402
from paimon_rs import CatalogFactory, Schema  # noqa: E402

from standalone import session  # noqa: E402

SCHEMA = pa.schema([pa.field("dt", pa.string(), nullable=False), pa.field("id", pa.int64(), nullable=False),
                    pa.field("v", pa.string()), pa.field("op", pa.string())])


def main(master: str, wh: str, marker: str) -> dict:
    t0 = time.monotonic()
    spark = session(master, "paimon_rs-cluster-test")
    started = time.monotonic() - t0
    cat = CatalogFactory.create({"warehouse": wh})
    cat.create_database("db", True)
    cat.create_table("db.c", Schema.from_pyarrow_schema(SCHEMA, ["dt"], ["dt", "id"],
                                                        {"bucket": "4", "rowkind.field": "op"}), False)
    t = cat.get_table("db.c")
    n = 20_000
    df = spark.range(n).selectExpr("CASE WHEN id % 3 = 0 THEN 'a' ELSE 'b' END AS dt", "id",
                                   "concat('v', id) AS v", "'+I' AS op")
    t1 = time.monotonic()
    s1 = ps.write(df, t, _fail_first_attempt_marker=marker)  # every first attempt fails after writing
    write_s = time.monotonic() - t1
    upd = spark.range(0, 100).selectExpr("CASE WHEN id % 3 = 0 THEN 'a' ELSE 'b' END AS dt", "id",
                                         "'new' AS v", "CASE WHEN id < 50 THEN '+U' ELSE '-D' END AS op")
    s2 = ps.write(upd, t)
    t3 = time.monotonic()
    sc = ps.compact(spark, t, full=True, _fail_first_attempt_marker=marker)  # first attempts fail too
    compact_s = time.monotonic() - t3
    runs_after = sorted({len(p.runs) for p in t.compaction_plan()})
    t2 = time.monotonic()
    rows = ps.read(spark, t).collect()
    read_s = time.monotonic() - t2
    layouts = issue28(spark, cat, df, marker)
    executors = spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size() - 1
    driver_pid = os.getpid()
    pids = set(spark.sparkContext.parallelize(range(4), 4).map(lambda _: os.getpid()).collect())
    spark.stop()
    rb = t.new_read_builder()
    plain = rb.new_read().to_arrow(rb.new_scan().plan().splits())
    left = t.remove_orphan_files(older_than=datetime.timedelta(0), dry_run=True).files
    orphans = [f for f in left if f.endswith(".parquet")]
    return {
        "snapshots": [s1, s2, sc], "runs_after": runs_after, "compact_s": round(compact_s, 1),
        "spark_rows": len(rows), "plain_rows": plain.num_rows,
        "updated": sum(1 for r in rows if r["v"] == "new"), "ids_unique": len({r["id"] for r in rows}) == len(rows),
        "orphans": orphans, "executors": executors, "driver_in_executor": driver_pid in pids,
        "session_s": round(started, 1), "write_s": round(write_s, 1), "read_s": round(read_s, 1),
        **layouts,
    }


def plain_rows(t) -> list:
    rb = t.new_read_builder()
    return rb.new_read().to_arrow(rb.new_scan().plan().splits()).to_pylist()


def issue28(spark, cat, df, marker: str) -> dict:
    """Issue #28's layouts on the cluster, every first task attempt failing after it wrote: a
    dynamic-bucket table and a cross-partition table written through the assign stage (300 keys
    then written again into the other partition), and a z-order sort compaction of an append
    table. What the test checks: rows and keys as the model says, no orphan data file."""
    out = {}
    moved = spark.range(0, 300).selectExpr("CASE WHEN id % 3 = 0 THEN 'b' ELSE 'a' END AS dt", "id",
                                           "'moved' AS v", "'+I' AS op")
    for name, pk in (("dyn", ["dt", "id"]), ("cross", ["id"])):
        cat.create_table(f"db.{name}", Schema.from_pyarrow_schema(
            SCHEMA, ["dt"], pk, {"bucket": "-1", "rowkind.field": "op",
                                 "dynamic-bucket.target-row-num": "2000"}), False)
        t = cat.get_table(f"db.{name}")
        ps.write(df, t, _fail_first_attempt_marker=marker)
        ps.write(moved, t, _fail_first_attempt_marker=marker)
        rows = plain_rows(t)
        keys = [tuple(r[k] for k in pk) for r in rows]
        buckets = {r["bucket"] for r in plain_rows(cat.get_table(f"db.{name}$files"))}
        out[name] = {"rows": len(rows), "keys_unique": len(set(keys)) == len(keys),
                     "moved": sum(r["v"] == "moved" for r in rows), "buckets": len(buckets),
                     "orphans": orphan_data(t)}
    app_schema = pa.schema([pa.field("x", pa.int64()), pa.field("y", pa.int64())])
    cat.create_table("db.app", Schema.from_pyarrow_schema(app_schema, options={"target-file-size": "16kb"}), False)
    app = cat.get_table("db.app")
    ps.write(spark.range(40_000).selectExpr("(id * 7919) % 65536 AS x", "(id * 104729) % 65536 AS y"), app)
    before = sorted((r["x"], r["y"]) for r in plain_rows(app))
    sid = ps.sort_compact(spark, app, "zorder", ["x", "y"], num_partitions=2, _fail_first_attempt_marker=marker)
    pb = app.new_read_builder().new_predicate_builder()
    rb = app.new_read_builder().with_filter(pb.and_predicates([pb.less_than("x", 4096), pb.less_than("y", 4096)]))
    out["sort"] = {"snapshot_kind": app.snapshot_manager().get_snapshot_by_id(sid).commit_kind,
                   "rows_unchanged": sorted((r["x"], r["y"]) for r in plain_rows(app)) == before,
                   "files": len(plain_rows(cat.get_table("db.app$files"))),
                   "planned": sum(len(s.file_paths) for s in rb.new_scan().plan().splits()),
                   "orphans": orphan_data(app)}
    return out


def orphan_data(t) -> list:
    left = t.remove_orphan_files(older_than=datetime.timedelta(0), dry_run=True).files
    return [f for f in left if f.endswith(".parquet")]


if __name__ == "__main__":
    print(json.dumps(main(*sys.argv[1:4])), flush=True)
