"""Merge-on-read and raw read: paimon_rs side by side with pypaimon 2.1.0 (+ native options)
and pypaimon_rust 0.4.0.

Table: BIGINT primary key ``id``, values ``v`` (int64), ``f`` (float64), ``s`` (~16-char
string); bucket = 4, unpartitioned; deduplicate engine.
  merge read: a base commit of 2,000,000 rows, then 5 upsert commits of 400,000 rows each (half
              updates of existing keys, half new keys) -> 6 overlapping level-0 files per bucket.
  raw read:   the base commit only (one file per bucket, no merge).
Each implementation writes its own table with its own writer (same data), then the full read
is timed `--repeat` times after one warm-up; medians are reported.

Peers run in the pypaimon venv of tests/compat/pypaimon_env.py through
benches/_merge_read_peer.py (the shared compat driver's ``bench`` command has a single update
commit only).

    python benches/bench_merge_read.py            # full size, 5 repeats
    python benches/bench_merge_read.py --smoke    # CI: 20,000 rows, 1 repeat

Before/after: ``--baseline DIR`` adds the implementation ``paimon_rs-baseline``: another build of
paimon_rs (e.g. ``pip install --no-deps --target DIR <wheel of main>``) run by the same code in a
subprocess with DIR first on PYTHONPATH, side by side with the others in the same run.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "compat"))
sys.path.insert(0, str(ROOT / "benches"))

from _peer_common import check_sum, commit_arrow, create_bench_table, load_ipc, read_table, run_peer  # noqa: E402

NATIVE = {"read.native.enabled": "true", "scan.native-plan.enabled": "true",
          "write.native.enabled": "true"}
IMPLS = ["paimon_rs", "pypaimon", "pypaimon-native", "pypaimon-rust"]


def make(n: int, ids: np.ndarray, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    s = pa.array([f"s{x:015d}" for x in rng.integers(0, 10**15, n)])
    return pa.table({"id": pa.array(ids, pa.int64()),
                     "v": pa.array(rng.integers(0, 1 << 40, n), pa.int64()),
                     "f": pa.array(rng.random(n)), "s": s})


def key_sets(rows: int, upd: int, commits: int) -> tuple[np.ndarray, list[np.ndarray], int]:
    """The base commit's keys (a permutation of 0..rows), each upsert commit's keys (half of
    them updates of base keys, half new keys, shuffled) and the number of live keys."""
    rng = np.random.default_rng(1)
    base_ids = rng.permutation(rows).astype(np.int64)
    upserts, next_id = [], rows
    for _ in range(commits):
        old = rng.choice(rows, upd // 2, replace=False).astype(np.int64)
        new = np.arange(next_id, next_id + upd - upd // 2, dtype=np.int64)
        next_id += len(new)
        upserts.append(rng.permutation(np.concatenate([old, new])))
    return base_ids, upserts, next_id


def data_sets(rows: int, upd: int, commits: int, workdir: Path) -> tuple[list[str], int]:
    base_ids, upserts, live = key_sets(rows, upd, commits)
    paths = [_ipc(workdir / "base.arrow", make(rows, base_ids, 2))]
    for c, ids in enumerate(upserts):
        paths.append(_ipc(workdir / f"upd{c}.arrow", make(len(ids), ids, 10 + c)))
    return paths, live


def _ipc(path: Path, t: pa.Table) -> str:
    with pa.OSFile(str(path), "wb") as f, pa.ipc.new_file(f, t.schema) as w:
        w.write_table(t)
    return str(path)


def bench_ours(wh: Path, ipcs: list[str], options: dict, repeat: int) -> dict:
    from paimon_rs import CatalogFactory, Schema

    cat = CatalogFactory.create({"warehouse": str(wh)})
    create_bench_table(cat, Schema, load_ipc(ipcs[0]), options)
    for ipc in ipcs:
        commit_arrow(cat, load_ipc(ipc))

    def read():
        return read_table(cat)

    read()
    times, cpu = [], []
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        r = read()
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return {"read_s": times, "cpu_s": cpu, "rows": r.num_rows, "check": check_sum(r)}


def bench_baseline(path: str, wh: Path, ipcs: list[str], options: dict, repeat: int) -> dict:
    import os
    code = ("import json, sys; sys.path.insert(0, sys.argv[1]); import bench_merge_read as b; "
            "from pathlib import Path; "
            "print(json.dumps(b.bench_ours(Path(sys.argv[2]), json.loads(sys.argv[3]), "
            "json.loads(sys.argv[4]), int(sys.argv[5]))))")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([path, os.environ.get("PYTHONPATH", "")]))
    r = subprocess.run([sys.executable, "-c", code, str(ROOT / "benches"), str(wh),
                        json.dumps(ipcs), json.dumps(options), str(repeat)],
                       capture_output=True, text=True, env=env, timeout=3600)
    if r.returncode != 0:
        raise RuntimeError(r.stderr.strip()[-2000:])
    return json.loads(r.stdout.strip().splitlines()[-1])


def bench_peer(impl: str, wh: Path, ipcs: list[str], options: dict, repeat: int) -> dict:
    opts = dict(options)
    if impl == "pypaimon-native":
        opts.update(NATIVE)
    payload = {"impl": "pypaimon_rust" if impl == "pypaimon-rust" else "pypaimon",
               "warehouse": str(wh), "ipcs": ipcs, "options": opts, "repeat": repeat}
    return run_peer("_merge_read_peer.py", payload, timeout=3600)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--update-rows", type=int, default=400_000)
    ap.add_argument("--commits", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--impls", default=",".join(IMPLS))
    ap.add_argument("--smoke", action="store_true", help="20,000 rows, 1 repeat (CI)")
    ap.add_argument("--baseline", default=None,
                    help="a directory holding another paimon_rs build: adds paimon_rs-baseline")
    args = ap.parse_args(argv)
    if args.smoke:
        args.rows, args.update_rows, args.repeat = 20_000, 4_000, 1
    impls = [i.strip() for i in args.impls.split(",") if i.strip()]
    if args.baseline and "paimon_rs-baseline" not in impls:
        impls.insert(1, "paimon_rs-baseline")
    workdir = Path(tempfile.mkdtemp(prefix="paimon-merge-bench-"))
    options = {"bucket": "4"}
    try:
        ipcs, total = data_sets(args.rows, args.update_rows, args.commits, workdir)
        print(f"bench_merge_read: base {args.rows:,} rows + {args.commits} upsert commits of "
              f"{args.update_rows:,} (half updates) -> {total:,} live rows; bucket=4; "
              f"median of {args.repeat}")
        results: dict[str, dict[str, dict]] = {}
        for case, files in (("merge", ipcs), ("raw", ipcs[:1])):
            for impl in impls:
                wh = workdir / f"{case}-{impl}"
                try:
                    if impl == "paimon_rs":
                        r = bench_ours(wh, files, options, args.repeat)
                    elif impl == "paimon_rs-baseline":
                        r = bench_baseline(args.baseline, wh, files, options, args.repeat)
                    else:
                        r = bench_peer(impl, wh, files, options, args.repeat)
                    results.setdefault(case, {})[impl] = r
                except Exception as e:  # noqa: BLE001 - reported in the table
                    results.setdefault(case, {})[impl] = {"error": str(e)}
                shutil.rmtree(wh, ignore_errors=True)
        for case, per in results.items():
            print(f"\n{case} read ({'6 overlapping files/bucket' if case == 'merge' else '1 file/bucket'})")
            print(f"{'implementation':<19}{'median s':>10}{'rows/s':>12}{'rows':>11}  check")
            ours = per.get("paimon_rs", {})
            ref = ours.get("check")
            for impl in impls:
                r = per.get(impl, {})
                if "error" in r:
                    print(f"{impl:<19}failed: {r['error'].splitlines()[-1][:90]}")
                    continue
                m = statistics.median(r["read_s"])
                ok = "ok" if r["check"] == ref and r["rows"] == ours.get("rows") else "MISMATCH"
                print(f"{impl:<19}{m:>10.3f}{r['rows'] / m / 1e6:>11.2f}M{r['rows']:>11,}  {ok}")
            for impl in impls:
                if "cpu_s" in per.get(impl, {}):
                    print(f"  {impl}: median CPU s of a read (all threads) "
                          f"{statistics.median(per[impl]['cpu_s']):.3f}")
            if "read_s" in ours:
                mo = statistics.median(ours["read_s"])
                for impl in impls:
                    r = per.get(impl, {})
                    if impl != "paimon_rs" and "read_s" in r:
                        print(f"  paimon_rs vs {impl}: {statistics.median(r['read_s']) / mo:.2f}x")
        return 0 if all("error" not in per.get("paimon_rs", {}) for per in results.values()) else 1
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
