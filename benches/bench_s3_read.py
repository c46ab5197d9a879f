"""Merge read on S3 next to local disk, on a table written once (issue 14: "S3 within 1.5x of
local disk for reads"), so that two builds can be compared on the same data, runs alternating.

``setup`` writes bench_s3's table (a base of ``--rows`` rows, then ``--commits`` upsert commits of
``--update-rows``; bucket = 4) to ``s3://<bucket>/wh`` on an S3 server already running at
``--endpoint`` (moto's: ``python -m moto.server -H 127.0.0.1 -p PORT``) and to ``<dir>/wh``.
``read`` reads both ``--repeat`` times, local and S3 alternating, and prints one JSON line: the
median read seconds of each, the median of the per-pair ratios S3 / local, and the requests of
one S3 read.

    python -m moto.server -H 127.0.0.1 -p 5055 &
    python benches/bench_s3_read.py setup --endpoint http://127.0.0.1:5055 --dir /tmp/s3read
    python benches/bench_s3_read.py read --endpoint http://127.0.0.1:5055 --dir /tmp/s3read
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benches"))

BUCKET = "bench-s3-read"


def s3_options(endpoint: str) -> dict:
    return {"s3.endpoint": endpoint, "s3.access-key": "testing", "s3.secret-key": "testing",
            "s3.path.style.access": "true", "s3.region": "us-east-1"}


def setup(args) -> None:
    import boto3
    from _peer_common import commit_arrow, create_bench_table, load_ipc
    from bench_merge_read import data_sets

    from paimon_rs import CatalogFactory, Schema

    boto3.client("s3", endpoint_url=args.endpoint, aws_access_key_id="testing",
                 aws_secret_access_key="testing", region_name="us-east-1").create_bucket(Bucket=BUCKET)
    work = Path(args.dir)
    work.mkdir(parents=True, exist_ok=True)
    ipcs, _ = data_sets(args.rows, args.update_rows, args.commits, work)
    for wh, opts in [(str(work / "wh"), {}), (f"s3://{BUCKET}/wh", s3_options(args.endpoint))]:
        cat = CatalogFactory.create({"warehouse": wh, **opts})
        data = [load_ipc(i) for i in ipcs]
        create_bench_table(cat, Schema, data[0], {"bucket": "4"})
        for d in data:
            commit_arrow(cat, d)


def read(args) -> None:
    from _peer_common import read_table

    from paimon_rs import CatalogFactory, _core

    cats = {"local": CatalogFactory.create({"warehouse": str(Path(args.dir) / "wh")}),
            "s3": CatalogFactory.create({"warehouse": f"s3://{BUCKET}/wh", **s3_options(args.endpoint)})}

    def once(name: str) -> float:
        t0 = time.perf_counter()
        n = read_table(cats[name]).num_rows
        assert n > 0
        return time.perf_counter() - t0

    once("local")
    once("s3")
    times: dict = {"local": [], "s3": []}
    _core.object_store_requests(reset=True)
    for _ in range(args.repeat):
        for name in ("local", "s3"):
            times[name].append(once(name))
    reqs = {k: v // args.repeat for k, v in _core.object_store_requests(reset=True).items() if v}
    ratios = [s / loc for s, loc in zip(times["s3"], times["local"])]
    print(json.dumps({"local_s": round(statistics.median(times["local"]), 3),
                      "s3_s": round(statistics.median(times["s3"]), 3),
                      "ratio": round(statistics.median(ratios), 2), "requests_per_s3_read": reqs}))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", choices=["setup", "read"])
    ap.add_argument("--endpoint", required=True)
    ap.add_argument("--dir", required=True)
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--update-rows", type=int, default=400_000)
    ap.add_argument("--commits", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args(argv)
    setup(args) if args.what == "setup" else read(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
