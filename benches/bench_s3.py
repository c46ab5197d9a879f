"""Object stores (issue 14 "Must show"): bulk write and merge read of a primary-key table on a
local S3 API (moto's server on 127.0.0.1) next to the same on local disk, and next to pypaimon
2.1.0 on the same server; with the requests paimon_rs sent per commit and per read.

Table: BIGINT primary key ``id``, ``v`` (int64), ``f`` (float64), ``s`` (16-char string), as
bench_merge_read; bucket = 4, unpartitioned. Data: a base of ``--rows`` rows, then ``--commits``
upsert commits of ``--update-rows`` rows (half updates). ``write`` is the time of all commits
(one commit per data set); ``read`` the median full merge read of ``--repeat`` after a warm-up,
our local and S3 reads interleaved (local, S3, local, S3, ...) so that their ratio is taken
under the same load (also the median of the ratios of the pairs, and CPU-seconds: ours, and the
S3 server's apart).
Aims: ours on S3 >= 3x pypaimon on S3; our S3 read within 1.5x of our local-disk read.

moto keeps objects in its own process's memory and serves them over HTTP on loopback: it is a
functional S3, not a performance model of one (no network latency, a Python server that closes
the connection after every response and spends ~0.09 CPU-s per read on the same cores as the
reader); both implementations pay the same server. ``--server s3s`` (or ``moto,s3s``: both,
each with its own copy of the table, their reads interleaved with the local ones) adds s3s-fs,
a Rust S3 server over a directory (scripts/install_s3s.sh builds it into ~/.cache/paimon_rs on
first use), keep-alive connections and a fraction of moto's CPU per request: closer to what a
remote store costs the reading machine (nothing). moto stays the default and the headline.

    python benches/bench_s3.py                     # 2,000,000 rows + 2 x 400,000 upserts
    python benches/bench_s3.py --rows 200000 --update-rows 40000   # reduced size
    python benches/bench_s3.py --no-peer --repeat 7 --server moto,s3s   # both servers, paired
    python benches/bench_s3.py --smoke             # CI: 20,000 rows
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "compat"))
sys.path.insert(0, str(ROOT / "tests" / "unit"))
sys.path.insert(0, str(ROOT / "tests"))  # s3_server
sys.path.insert(0, str(ROOT / "benches"))

from _peer_common import check_sum, commit_arrow, create_bench_table, load_ipc, read_table, run_peer  # noqa: E402
from bench_merge_read import data_sets  # noqa: E402


def write_ours(wh: str, catalog: dict, ipcs: list, options: dict) -> dict:
    """Create ``db.bench`` in ``wh`` and commit every data set; the seconds and requests."""
    from paimon_rs import CatalogFactory, Schema, _core

    cat = CatalogFactory.create({"warehouse": wh, **catalog})
    data = [load_ipc(i) for i in ipcs]
    create_bench_table(cat, Schema, data[0], options)
    _core.object_store_requests(reset=True)
    t0 = time.perf_counter()
    commits = []
    for d in data:
        commit_arrow(cat, d)
        commits.append(_core.object_store_requests(reset=True))
    return {"cat": cat, "write_s": time.perf_counter() - t0, "requests_per_commit": commits,
            "read_s": [], "cpu_s": [], "server_cpu_s": [], "requests": {}}


def server_cpu(server: Any) -> float:
    """CPU-seconds of the S3 server process so far (0 without psutil or for local disk)."""
    if server is None:
        return 0.0
    try:
        import psutil
    except ImportError:
        return 0.0
    t = psutil.Process(server.proc.pid).cpu_times()
    return float(t.user + t.system)


def read_once(r: dict) -> None:
    """One full read of ``r``'s table: wall and CPU seconds (ours; its server's apart), rows,
    checksum, and the requests it sent, added to ``r``."""
    from paimon_rs import _core

    server = r.get("server")
    _core.object_store_requests(reset=True)
    c0, s0, t0 = time.process_time(), server_cpu(server), time.perf_counter()
    t = read_table(r["cat"])
    r["read_s"].append(time.perf_counter() - t0)
    r["cpu_s"].append(time.process_time() - c0)
    r["server_cpu_s"].append(server_cpu(server) - s0)
    for k, v in _core.object_store_requests(reset=True).items():
        r["requests"][k] = r["requests"].get(k, 0) + v
    r["rows"], r["check"] = t.num_rows, check_sum(t)


def s3_case(server: str) -> str:
    """The name of our case on ``server``."""
    return f"paimon_rs S3 {server}"


def bench_peer(wh: str, catalog: dict, ipcs: list, options: dict, repeat: int) -> dict:
    payload = {"warehouse": wh, "catalog": catalog, "ipcs": ipcs, "options": options, "repeat": repeat}
    return run_peer("_s3_peer.py", payload, timeout=7200)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--update-rows", type=int, default=400_000)
    ap.add_argument("--commits", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--smoke", action="store_true", help="20,000 rows, 1 repeat")
    ap.add_argument("--no-peer", action="store_true", help="leave pypaimon out (it takes minutes)")
    ap.add_argument("--server", default="moto",
                    help="S3 server(s), comma-separated: moto (default; the tests' server), s3s (s3s-fs); "
                         "pypaimon runs on the first")
    args = ap.parse_args(argv)
    if args.smoke:
        args.rows, args.update_rows, args.repeat = 20_000, 4_000, 1
    from s3_server import MotoServer, S3sServer

    kinds = {"moto": MotoServer, "s3s": S3sServer}
    names = [n.strip() for n in args.server.split(",") if n.strip()]
    unknown = [n for n in names if n not in kinds]
    if unknown or not names or len(set(names)) != len(names):
        ap.error(f"--server: {args.server!r}: a comma-separated list of distinct names of {sorted(kinds)}")
    workdir = Path(tempfile.mkdtemp(prefix="paimon-s3-bench-"))
    servers: dict = {}
    options = {"bucket": "4"}
    try:
        for n in names:
            servers[n] = kinds[n]()
        ipcs, total = data_sets(args.rows, args.update_rows, args.commits, workdir)
        print(f"bench_s3: base {args.rows:,} rows + {args.commits} upsert commits of {args.update_rows:,} "
              f"-> {total:,} live rows; bucket=4; read median of {args.repeat}; "
              + ", ".join(f"{n} server {srv.endpoint}" for n, srv in servers.items()))
        # pypaimon reads the same option names
        cases = [("paimon_rs local", "ours", str(workdir / "wh-local"), {}, None)]
        cases += [(s3_case(n), "ours", f"s3://{srv.new_bucket()}/wh", srv.options(), n) for n, srv in servers.items()]
        first = servers[names[0]]
        if not args.no_peer:
            cases.append(("pypaimon 2.1.0 S3", "peer", f"s3://{first.new_bucket()}/wh", first.options(), names[0]))
        results: dict = {}
        for name, impl, wh, cat, srv in cases:
            try:
                if impl == "ours":
                    results[name] = write_ours(wh, cat, ipcs, options)
                    results[name]["server"] = servers.get(srv)
                else:
                    results[name] = bench_peer(wh, cat, ipcs, options, args.repeat)
            except Exception as e:  # noqa: BLE001 - reported in the table
                results[name] = {"error": str(e)}
        # reads of ours interleaved (local, S3, local, S3, ...) after a warm-up of each, so the
        # ratio compares reads taken under the same load of a shared box
        mine = [c[0] for c in cases if c[1] == "ours" and "error" not in results[c[0]]]
        for rep in range(args.repeat + 1):
            for n in list(mine):
                r = results[n]
                try:
                    read_once(r)
                except Exception as e:  # noqa: BLE001 - reported in the table
                    results[n] = {"error": str(e)}
                    mine.remove(n)
                    continue
                if rep == 0:  # the warm-up is not counted
                    for k in ("read_s", "cpu_s", "server_cpu_s"):
                        r[k].clear()
                    r["requests"].clear()
        for n in mine:
            r = results[n]
            r["requests_per_read"] = {k: v // max(args.repeat, 1) for k, v in r["requests"].items()}
        ref = results.get("paimon_rs local", {})
        print(f"\n{'case':<20}{'write s':>9}{'write rows/s':>14}{'read s':>9}{'read rows/s':>13}  check")
        written = args.rows + args.commits * args.update_rows
        for name, r in results.items():
            if "error" in r:
                print(f"{name:<20}failed: {r['error'].splitlines()[-1][:100]}")
                continue
            m = statistics.median(r["read_s"])
            ok = "ok" if r["check"] == ref.get("check") and r["rows"] == ref.get("rows") else "MISMATCH"
            print(f"{name:<20}{r['write_s']:>9.2f}{written / r['write_s'] / 1e6:>13.2f}M{m:>9.3f}"
                  f"{r['rows'] / m / 1e6:>12.2f}M  {ok}")
            if "cpu_s" in r:
                print(f"{'':<20}reads (s): {', '.join(f'{x:.3f}' for x in r['read_s'])}; CPU-s median "
                      f"{statistics.median(r['cpu_s']):.3f} (server {statistics.median(r['server_cpu_s']):.3f})")
        print()
        for n in names:
            ours = results.get(s3_case(n), {})
            if "read_s" in ours and "read_s" in ref:
                pairs = sorted(s / x for s, x in zip(ours["read_s"], ref["read_s"]))
                cpu = statistics.median(ours["cpu_s"]) + statistics.median(ours["server_cpu_s"])
                print(f"S3 read ({n}) / local read: "
                      f"{statistics.median(ours['read_s']) / statistics.median(ref['read_s']):.2f}x"
                      f" of the medians, {statistics.median(pairs):.2f}x median of the interleaved pairs"
                      f" ({', '.join(f'{p:.2f}' for p in pairs)}) (aim <= 1.5x); CPU-s per read ours + "
                      f"server / local: {cpu / statistics.median(ref['cpu_s']):.2f}x")
        ours, peer = results.get(s3_case(names[0]), {}), results.get("pypaimon 2.1.0 S3", {})
        if "read_s" in ours and "read_s" in peer:
            print(f"vs pypaimon on S3 ({names[0]}): write {peer['write_s'] / ours['write_s']:.1f}x, read "
                  f"{statistics.median(peer['read_s']) / statistics.median(ours['read_s']):.1f}x (aim >= 3x)")
        if "requests_per_commit" in ours:
            for i, c in enumerate(ours["requests_per_commit"]):
                print(f"requests, commit {i + 1}: {c}")
        for n in names:
            if "requests_per_read" in results.get(s3_case(n), {}):
                print(f"requests per full read ({n}): {results[s3_case(n)]['requests_per_read']}")
    finally:
        for srv in servers.values():
            srv.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
