"""Commit latency on an object store with a round trip (#30): small upsert commits into a
4-bucket primary-key table on moto's S3 server behind a proxy that holds every request for
``--delay-ms`` (a stand-in for S3's per-request latency: moto on this box answers in ~1-3 ms,
real S3 in ~10-30 ms, so what a commit costs there is mostly its serial round trips).

Each commit opens the table, writes ``--rows`` rows (half updates), and commits (the writer's
restore, the data file PUTs, the existence check of the new files, the commit, the snapshot
expiry after it). Prints, per delay, the median commit time, the requests per commit, and the
commit time over the delay ("round trips": the serial requests the commit waits for, plus the
local work divided by the delay).

    python benches/bench_s3_commit.py [--commits 12] [--delays 0,20]

Pair two builds with ``PYTHONPATH=<other package> python benches/bench_s3_commit.py``.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from s3_server import MotoServer, free_port  # noqa: E402


async def _pipe(r: asyncio.StreamReader, w: asyncio.StreamWriter, delay: float) -> None:
    try:
        while True:
            b = await r.read(65536)
            if not b:
                break
            if delay:
                await asyncio.sleep(delay)
            w.write(b)
            await w.drain()
    except (ConnectionError, asyncio.CancelledError):
        pass
    finally:
        w.close()


async def _proxy(listen: int, target: int, delay: float) -> None:
    async def handle(cr: asyncio.StreamReader, cw: asyncio.StreamWriter) -> None:
        sr, sw = await asyncio.open_connection("127.0.0.1", target)
        await asyncio.gather(_pipe(cr, sw, delay), _pipe(sr, cw, 0.0))

    server = await asyncio.start_server(handle, "127.0.0.1", listen)
    async with server:
        await server.serve_forever()


def run_proxy(listen: int, target: int, delay_ms: float) -> None:
    """The proxy's process: every chunk from a client held ``delay_ms`` before it goes on (on
    a kept-alive connection, one request)."""
    asyncio.run(_proxy(listen, target, delay_ms / 1000))


def bench(delay_ms: float, commits: int, rows: int) -> dict:
    import pyarrow as pa

    from paimon_rs import CatalogFactory, Schema, _core

    srv = MotoServer()
    port = free_port()
    proxy = subprocess.Popen([sys.executable, __file__, "--proxy", str(port), str(srv.port), str(delay_ms)])
    try:
        time.sleep(0.5)
        opts = {**srv.options(), "s3.endpoint": f"http://127.0.0.1:{port}"}
        cat = CatalogFactory.create({"warehouse": f"s3://{srv.new_bucket()}/wh", **opts})
        cat.create_database("db", True)
        schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.string())])
        cat.create_table("db.t", Schema.from_pyarrow_schema(schema, primary_keys=["id"], options={"bucket": "4"}),
                         False)
        times = []
        _core.object_store_requests(reset=True)
        for i in range(commits + 1):
            if i == 1:  # the first commit (a new table's) is not counted
                _core.object_store_requests(reset=True)
            t0 = time.perf_counter()
            t = cat.get_table("db.t")
            wb = t.new_batch_write_builder()
            w = wb.new_write()
            ids = list(range(i * rows // 2, i * rows // 2 + rows))
            w.write_arrow(pa.table({"id": ids, "v": [f"v{i}"] * rows}, schema=schema))
            wb.new_commit().commit(w.prepare_commit())
            w.close()
            times.append(time.perf_counter() - t0)
        req = _core.object_store_requests(reset=True)
        return {"median_s": statistics.median(times[1:]),
                "requests": {k: v / commits for k, v in req.items() if v and k != "GET_AHEAD"}}
    finally:
        proxy.terminate()
        srv.stop()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--commits", type=int, default=12)
    ap.add_argument("--rows", type=int, default=1000)
    ap.add_argument("--delays", default="0,20", help="comma list of per-request delays in ms")
    ap.add_argument("--proxy", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.proxy:
        run_proxy(int(args.proxy[0]), int(args.proxy[1]), float(args.proxy[2]))
        return 0
    print(f"{args.commits} upsert commits of {args.rows:,} rows, 4 buckets, moto behind a delaying proxy\n")
    print("| delay per request | commit (median) | round trips (commit / delay) | requests per commit |")
    print("|---|---|---|---|")
    for d in (float(x) for x in args.delays.split(",")):
        r = bench(d, args.commits, args.rows)
        trips = f"{r['median_s'] * 1000 / d:.1f}" if d else "-"
        req = ", ".join(f"{k} {v:.1f}" for k, v in sorted(r["requests"].items()))
        print(f"| {d:g} ms | {r['median_s'] * 1000:.1f} ms | {trips} | {req} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
