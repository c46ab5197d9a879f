"""What the local S3 server (moto) alone costs for the bytes a bench_s3 read needs: boto3 GETs
of 12 objects of the table's file sizes (4 x 13.3 MB + 8 x 2.6 MB), whole, 8 threads, median
of 7. Compare with bench_s3's S3 read time: the difference is the reader's, not the server's.

    python benches/bench_s3_floor.py
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from s3_server import MotoServer  # noqa: E402

SIZES = [13_300_000] * 4 + [2_600_000] * 8


def main() -> None:
    srv = MotoServer()
    try:
        bucket = srv.new_bucket()
        client = srv.client()
        for i, n in enumerate(SIZES):
            client.put_object(Bucket=bucket, Key=f"f{i}", Body=os.urandom(n))

        def get(i: int) -> int:
            return len(client.get_object(Bucket=bucket, Key=f"f{i}")["Body"].read())

        times = []
        total = 0
        with ThreadPoolExecutor(8) as pool:
            for _ in range(7):
                t0 = time.perf_counter()
                total = sum(pool.map(get, range(len(SIZES))))
                times.append(time.perf_counter() - t0)
        print(f"GET {total / 1e6:.0f} MB whole from moto, 8 threads: median {statistics.median(times):.3f} s "
              f"(min {min(times):.3f})")
    finally:
        srv.stop()


if __name__ == "__main__":
    main()
