"""Lookup compaction, changelog producers and deletion vectors (issue 27 "Must show").

Table: as bench_merge_read (BIGINT key ``id``, ``v`` int64, ``f`` float64, ``s`` string),
bucket = 4, unpartitioned; a base commit of ``--rows`` rows, then ``--commits`` upsert commits of
``--update-rows`` rows (half updates, half new keys). Each variant writes its own table with
paimon_rs's writer (which compacts at every commit), in a fresh subprocess:

  none:      default options (merge-on-read, universal compaction)
  input:     changelog-producer = input
  lookup:    changelog-producer = lookup (lookup compaction; lookup files on local disk)
  dv:        deletion-vectors.enabled = true (lookup compaction marks superseded rows; reads take
             the raw path, no merge)
  first_row: merge-engine = first-row (lookup compaction; before issue 27 a full compaction
             whenever level 0 had files)

Per variant: the median seconds of the upsert commits and rows/s at that median; the
sustained throughput (all upsert rows over all commits' seconds: the median hides the commits
that compact, which is most of ``none``'s work, and the issue's aim is a throughput); a full
read after commit 1 and
after the last commit (``--repeat`` times after a warm-up, median), their ratio (N/1, time) and the
ratio of their speeds per live row (N/1 r/s: the table holds more rows after N commits, as half
of each commit's rows are new keys); the peak RSS (ru_maxrss) and,
for lookup / dv, the largest local lookup directory seen (bytes).
Aims (issue 27): dv read after the last commit >= 0.9x dv read after commit 1 and >= 2x the
``none`` read after the last commit (our own merge-on-read of the same data); lookup commit
throughput (sustained) >= 0.5x ``none``; lookup files within ``lookup.cache-max-disk-size``.

    python benches/bench_lookup.py                       # 2M rows + 20 x 100k, 3 repeats
    python benches/bench_lookup.py --smoke               # 20k rows + 5 x 4k, 1 repeat
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benches"))

from _peer_common import commit_arrow, create_bench_table, load_ipc, read_table  # noqa: E402
from bench_merge_read import data_sets  # noqa: E402

VARIANTS = {
    "none": {},
    "input": {"changelog-producer": "input"},
    "lookup": {"changelog-producer": "lookup"},
    "dv": {"deletion-vectors.enabled": "true"},
    "first_row": {"merge-engine": "first-row"},
}


def _dir_bytes(d: Path) -> int:
    return sum(p.stat().st_size for p in d.rglob("*") if p.is_file()) if d.exists() else 0


def run_variant(name: str, ipcs: list, repeat: int, workdir: str) -> dict:
    """One variant, in this process (a fresh subprocess of ``main``)."""
    from paimon_rs import CatalogFactory, Schema

    lookup_dir = Path(workdir) / "lookup-tmp"
    os.environ["PAIMON_RS_TMP_DIR"] = str(lookup_dir)  # lookup files and spills land here, measured
    lookup_dir.mkdir(parents=True, exist_ok=True)
    cat = CatalogFactory.create({"warehouse": str(Path(workdir) / "wh")})
    options = {"bucket": "4", **VARIANTS[name]}
    create_bench_table(cat, Schema, load_ipc(ipcs[0]), options)
    commit_arrow(cat, load_ipc(ipcs[0]))

    def timed_read() -> tuple:
        read_table(cat)  # warm-up
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            n = read_table(cat).num_rows
            times.append(time.perf_counter() - t0)
        assert n > 0
        return statistics.median(times), n

    # lookup files live in the writer's spill directory, removed with the writer at the end of
    # each commit: sample the directory while commits run
    peak = [0]
    running = threading.Event()
    running.set()

    def sample() -> None:
        while running.is_set():
            try:
                peak[0] = max(peak[0], _dir_bytes(lookup_dir))
            except FileNotFoundError:  # a file removed while listed
                pass
            time.sleep(0.02)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    commit_s = []
    read_first = None
    for i, ipc in enumerate(ipcs[1:], 1):
        data = load_ipc(ipc)
        t0 = time.perf_counter()
        commit_arrow(cat, data)
        commit_s.append(time.perf_counter() - t0)
        if i == 1:
            read_first, rows_first = timed_read()
    running.clear()
    sampler.join()
    peak_lookup = peak[0]
    read_last, rows_last = timed_read()
    rows = load_ipc(ipcs[1]).num_rows
    return {
        "variant": name,
        "commit_median_s": statistics.median(commit_s),
        "rows_per_s": rows / statistics.median(commit_s),
        # sustained: every commit's rows over every commit's time, the compactions included
        "commit_total_s": sum(commit_s),
        "throughput": rows * len(commit_s) / sum(commit_s),
        "read_after_1_s": read_first,
        "read_after_last_s": read_last,
        # the table grows (half of each commit's rows are new keys): read speed per live row
        "read_rows_per_s_1": rows_first / read_first,
        "read_rows_per_s_last": rows_last / read_last,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "lookup_dir_peak_bytes": peak_lookup,
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--update-rows", type=int, default=100_000)
    ap.add_argument("--commits", type=int, default=20)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--_one", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args._one:
        spec = json.loads(args._one)
        print(json.dumps(run_variant(spec["name"], spec["ipcs"], spec["repeat"], spec["workdir"])))
        return 0
    if args.smoke:
        args.rows, args.update_rows, args.commits, args.repeat = 20_000, 4_000, 5, 1
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        ipcs, _ = data_sets(args.rows, args.update_rows, args.commits, Path(tmp))
        for name in args.variants.split(","):
            wd = Path(tmp) / name
            wd.mkdir()
            spec = {"name": name, "ipcs": ipcs, "repeat": args.repeat, "workdir": str(wd)}
            out = subprocess.run([sys.executable, __file__, "--_one", json.dumps(spec)],
                                 check=True, capture_output=True, text=True)
            results.append(json.loads(out.stdout.strip().splitlines()[-1]))
    base = {r["variant"]: r for r in results}
    print(f"{args.rows:,} rows + {args.commits} x {args.update_rows:,} upserts, bucket 4, repeat {args.repeat}")
    print(f"{'variant':<8} {'commit s':>9} {'rows/s':>10} {'vs none':>8} {'total s':>8} {'tput r/s':>9} "
          f"{'vs none':>8} {'read@1 s':>9} {'read@N s':>9} {'N/1':>5} {'N/1 r/s':>7} {'RSS MB':>7} "
          f"{'lookup MB':>9}")
    for r in results:
        nan = float("nan")
        vs = base["none"]["commit_median_s"] / r["commit_median_s"] if "none" in base else nan
        vs_t = r["throughput"] / base["none"]["throughput"] if "none" in base else nan
        print(f"{r['variant']:<8} {r['commit_median_s']:>9.3f} {r['rows_per_s']:>10,.0f} {vs:>7.2f}x "
              f"{r['commit_total_s']:>8.2f} {r['throughput']:>9,.0f} {vs_t:>7.2f}x "
              f"{r['read_after_1_s']:>9.3f} {r['read_after_last_s']:>9.3f} "
              f"{r['read_after_1_s'] / r['read_after_last_s']:>5.2f} "
              f"{r['read_rows_per_s_last'] / r['read_rows_per_s_1']:>7.2f} {r['peak_rss_mb']:>7.0f} "
              f"{r['lookup_dir_peak_bytes'] / 2**20:>9.1f}")
    if "dv" in base and "none" in base:
        print(f"dv read after {args.commits} commits vs none (merge-on-read): "
              f"{base['none']['read_after_last_s'] / base['dv']['read_after_last_s']:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
