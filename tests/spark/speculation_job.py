"""The speculation run of test_cluster.py, in a process of its own: ``python speculation_job.py
MASTER WAREHOUSE MARKER`` prints one JSON line. Task 0's first attempt writes its files, then
sleeps; Spark launches a speculative copy on the other host, which wins."""

import datetime
import json
import sys
import time
from pathlib import Path

import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent))

import paimon_rs.spark as ps  # noqa: E402
from paimon_rs import CatalogFactory, Schema  # noqa: E402

from standalone import session  # noqa: E402

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.string())])


def main(master: str, wh: str, marker: str) -> dict:
    spark = session(master, "paimon_rs-speculation-test", {
        "spark.speculation": "true", "spark.speculation.interval": "200ms", "spark.speculation.multiplier": "2",
        "spark.speculation.quantile": "0.5", "spark.speculation.minTaskRuntime": "1s",
    })
    cat = CatalogFactory.create({"warehouse": wh})
    cat.create_database("db", True)
    cat.create_table("db.s", Schema.from_pyarrow_schema(SCHEMA, [], ["id"], {"bucket": "4"}), False)
    t = cat.get_table("db.s")
    df = spark.range(4000).selectExpr("id", "concat('v', id) AS v")
    t0 = time.monotonic()
    snap = ps.write(df, t, _slow_first_attempt=(marker, 40.0))
    took = time.monotonic() - t0
    time.sleep(2)  # let the killed straggler's worker settle before the files are listed
    rows = ps.read(spark, t).count()
    spark.stop()
    files = sorted(p.name for p in Path(t.table_path).rglob("*.parquet"))
    left = t.remove_orphan_files(older_than=datetime.timedelta(0), dry_run=True).files
    return {"snapshot": snap, "rows": rows, "files": files, "orphans": [f for f in left if f.endswith(".parquet")],
            "write_s": round(took, 1)}


if __name__ == "__main__":
    print(json.dumps(main(*sys.argv[1:4])), flush=True)
