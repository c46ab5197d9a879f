"""Write path (issue 3): memory-bounded write buffer and bulk-write throughput.

Part ``rss``: stream ``--rss-rows`` rows (default 10,000,000; the bench_foundation
shape: BIGINT pk + int64, float64, ~16-char string, ~64-char string, int32, bool;
bucket = 4, unique keys in random order) in ``--batch-rows`` batches through
``write_arrow_batch``, then prepare_commit + commit, once per ``write-buffer-size``
in ``--buffer-sizes`` (default 64 mb and the default 256 mb). Each run is a fresh
subprocess: the baseline is its RSS after ``import pyarrow, paimon_rs``, the peak
is ``ru_maxrss`` (psutil polling every 10 ms splits it into the write and the
commit phase). Each batch is generated just before it is written and dropped
after, so the input adds one batch to the peak; generation is not timed.
Aim: peak - baseline <= write-buffer-size + 250 MB.

Part ``bulk``: bulk write of ``--rows`` rows (default 2,000,000; one pyarrow Table,
one ``write_arrow`` call) side by side with
  pyarrow-floor    in this process: bucket = id mod 4, sort each bucket by id
                   (pyarrow.compute), one zstd(1) Parquet file per bucket
  pypaimon-native  pypaimon 2.1.0 + write/read/scan/commit native options } in the pypaimon venv
  pypaimon-rust    pypaimon_rust 0.4.0's own API                          } (bench_foundation)
  pypaimon         pure pypaimon 2.1.0 (slow; only with --impls)
paimon_rs and the floor alternate within each repeat; peers time the same API
calls as bench_foundation (new_batch_write_builder .. commit). Medians reported.
Aims: paimon_rs >= 3x the best peer, >= 1.5x the pyarrow floor.

    python benches/bench_write.py                       # both parts, 3 repeats
    python benches/bench_write.py --parts bulk --repeat 5
    python benches/bench_write.py --parts rss --buffer-sizes "16 mb,64 mb,256 mb"
    python benches/bench_write.py --smoke               # CI: tiny sizes, 1 repeat, < 30 s
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_foundation import _fmt_rate, _median, _rate, bench_peer, make_data, read_ipc, write_ipc  # noqa: E402

PEERS = ["pypaimon-native", "pypaimon-rust", "pypaimon"]
DEFAULT_PEERS = ["pypaimon-native", "pypaimon-rust"]
MB = 1 << 20


# --------------------------------------------------------------------------
# data: bench_foundation's columns, streamed


def unique_keys(start: int, n: int) -> np.ndarray:
    """Keys start..start+n mapped through a bijection of [0, 2**62): unique, random order."""
    mask = np.uint64((1 << 62) - 1)
    x = np.arange(start, start + n, dtype=np.uint64)
    x = (x * np.uint64(0x9E3779B97F4A7C15)) & mask
    x ^= x >> np.uint64(29)
    x = (x * np.uint64(0xBF58476D1CE4E5B9)) & mask
    return x.astype(np.int64)


def make_batch(i: int, n: int) -> pa.RecordBatch:
    t = make_data(n, seed=1000 + i)
    t = t.set_column(0, t.schema.field(0), pa.array(unique_keys(i * n, n)))
    return t.combine_chunks().to_batches()[0]


def parse_size(s: str) -> int:
    s = s.strip().lower().replace(" ", "")
    for suffix, mul in (("gb", 1 << 30), ("mb", MB), ("kb", 1 << 10), ("b", 1)):
        if s.endswith(suffix):
            return int(float(s[: -len(suffix)]) * mul)
    return int(s)


# --------------------------------------------------------------------------
# part rss: one configuration in a fresh process


def _child_rss(cfg: dict) -> dict:
    import resource
    import threading

    import psutil

    import paimon_rs  # noqa: F401 - part of the baseline

    proc = psutil.Process()
    gc.collect()
    baseline = proc.memory_info().rss
    if cfg.get("generate_only"):
        # the data generator's own share of the peak: same batches, nothing written
        for i in range(0, (cfg["rows"] + cfg["batch_rows"] - 1) // cfg["batch_rows"]):
            batch = make_batch(i, min(cfg["batch_rows"], cfg["rows"] - i * cfg["batch_rows"]))
            del batch
        return {"baseline": baseline, "peak": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}
    phase = {"name": "setup"}
    peaks = {"setup": 0, "write": 0, "commit": 0}
    stop = threading.Event()

    def poll():
        while not stop.is_set():
            rss = proc.memory_info().rss
            p = phase["name"]
            peaks[p] = max(peaks[p], rss)
            stop.wait(0.01)

    from paimon_rs import CatalogFactory, Schema

    wh = Path(cfg["warehouse"])
    cat = CatalogFactory.create({"warehouse": str(wh)})
    cat.create_database("db", True)
    schema = make_batch(0, 8).schema
    cat.create_table("db.bench", Schema.from_pyarrow_schema(schema, primary_keys=["id"], options={
        "bucket": str(cfg["buckets"]), "write-buffer-size": cfg["buffer"]}), False)
    table = cat.get_table("db.bench")
    poller = threading.Thread(target=poll, daemon=True)
    poller.start()
    rows, batch_rows = cfg["rows"], cfg["batch_rows"]
    wb = table.new_batch_write_builder()
    w, c = wb.new_write(), wb.new_commit()
    write_s = gen_s = 0.0
    phase["name"] = "write"
    for i in range(0, (rows + batch_rows - 1) // batch_rows):
        t0 = time.perf_counter()
        batch = make_batch(i, min(batch_rows, rows - i * batch_rows))
        t1 = time.perf_counter()
        w.write_arrow_batch(batch)
        write_s += time.perf_counter() - t1
        gen_s += t1 - t0
        del batch
    phase["name"] = "commit"
    t0 = time.perf_counter()
    c.commit(w.prepare_commit())
    w.close()
    c.close()
    commit_s = time.perf_counter() - t0
    stop.set()
    poller.join()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux
    files = list(wh.rglob("*.parquet"))
    out = {
        "baseline": baseline, "peak": peak, "peak_write": peaks["write"], "peak_commit": peaks["commit"],
        "write_s": write_s, "commit_s": commit_s, "gen_s": gen_s, "files": len(files),
        "bytes": sum(f.stat().st_size for f in files),
    }
    shutil.rmtree(wh, ignore_errors=True)
    return out


def run_rss(args, workdir: Path) -> list[str]:
    sizes = [s.strip() for s in args.buffer_sizes.split(",") if s.strip()]
    print(f"\n[rss] {args.rss_rows:,} rows streamed in {args.batch_rows:,}-row batches, bucket={args.buckets}, "
          f"write-buffer-size in {sizes}, {args.repeat} repeat(s), fresh process each", flush=True)
    res: dict[str, list[dict]] = {s: [] for s in sizes}
    for r in range(args.repeat):
        for s in sizes if r % 2 == 0 else sizes[::-1]:
            cfg = {"warehouse": str(workdir / f"rss-{r}"), "rows": args.rss_rows, "batch_rows": args.batch_rows,
                   "buckets": args.buckets, "buffer": s}
            p = subprocess.run([sys.executable, __file__, "--child-rss", json.dumps(cfg)],
                               capture_output=True, text=True, timeout=3600)
            if p.returncode != 0:
                raise RuntimeError(f"rss child ({s}) failed:\n{p.stderr[-3000:]}")
            out = json.loads(p.stdout.strip().splitlines()[-1])
            res[s].append(out)
            print(f"  {s:>8} rep {r}: {(out['peak'] - out['baseline']) / MB:7.0f} MB over baseline, "
                  f"{_fmt_rate(_rate(args.rss_rows, out['write_s'] + out['commit_s']))} rows/s", flush=True)
    gen_cfg = {"rows": args.rss_rows, "batch_rows": args.batch_rows, "generate_only": True}
    p = subprocess.run([sys.executable, __file__, "--child-rss", json.dumps(gen_cfg)],
                       capture_output=True, text=True, timeout=3600)
    if p.returncode != 0:
        raise RuntimeError(f"rss child (generator only) failed:\n{p.stderr[-3000:]}")
    gen = json.loads(p.stdout.strip().splitlines()[-1])
    header = (f"{'write-buffer-size':<18}{'baseline MB':>12}{'peak-base MB':>13}{'write-phase':>12}"
              f"{'commit-phase':>13}{'limit MB':>9}{'rows/s':>9}{'write s':>9}{'commit s':>9}{'files':>6}  aim")
    lines = [header, "-" * len(header)]
    fails = []
    for s in sizes:
        rs = res[s]
        base = _median([o["baseline"] for o in rs])
        over = max(o["peak"] - o["baseline"] for o in rs)
        over_w = max(o["peak_write"] - o["baseline"] for o in rs)
        over_c = max(o["peak_commit"] - o["baseline"] for o in rs)
        limit = parse_size(s) + 250 * MB
        w = _median([o["write_s"] for o in rs])
        cm = _median([o["commit_s"] for o in rs])
        rate = _median([_rate(args.rss_rows, o["write_s"] + o["commit_s"]) for o in rs])
        ok = over <= limit
        if not ok:
            fails.append(s)
        lines.append(f"{s:<18}{base / MB:>12.0f}{over / MB:>13.0f}{over_w / MB:>12.0f}{over_c / MB:>13.0f}"
                     f"{limit / MB:>9.0f}{_fmt_rate(rate):>9}{w:>9.2f}{cm:>9.2f}{rs[0]['files']:>6}  "
                     f"{'met' if ok else 'NOT met'}")
    lines.append("(peak-base: max over repeats of ru_maxrss - baseline; write-/commit-phase: polled peaks of "
                 "those phases; rows/s = rows / median(write + prepare_commit + commit))")
    lines.append(f"(the data generator alone, the same batches with nothing written, peaks at "
                 f"{(gen['peak'] - gen['baseline']) / MB:.0f} MB over baseline: part of every peak above)")
    print("\n" + "\n".join(lines))
    return fails


# --------------------------------------------------------------------------
# part bulk


def write_paimon_rs(data: pa.Table, wh: Path, buckets: int) -> float:
    from paimon_rs import CatalogFactory, Schema

    cat = CatalogFactory.create({"warehouse": str(wh)})
    cat.create_database("db", True)
    cat.create_table("db.bench", Schema.from_pyarrow_schema(
        data.schema, primary_keys=["id"], options={"bucket": str(buckets)}), False)
    table = cat.get_table("db.bench")
    gc.collect()
    t0 = time.perf_counter()
    wb = table.new_batch_write_builder()
    w, c = wb.new_write(), wb.new_commit()
    w.write_arrow(data)
    c.commit(w.prepare_commit())
    w.close()
    c.close()
    return time.perf_counter() - t0


def write_pyarrow_floor(data: pa.Table, out: Path, buckets: int) -> float:
    out.mkdir(parents=True, exist_ok=True)
    gc.collect()
    t0 = time.perf_counter()
    bucket = pc.bit_wise_and(data.column("id"), buckets - 1) if buckets & (buckets - 1) == 0 \
        else pc.abs(pc.remainder(data.column("id"), buckets))
    written = 0
    for b in range(buckets):
        part = data.filter(pc.equal(bucket, b)).sort_by("id")
        pq.write_table(part, str(out / f"bucket-{b}.parquet"), compression="zstd", compression_level=1)
        written += part.num_rows
    t = time.perf_counter() - t0
    assert written == data.num_rows, (written, data.num_rows)
    return t


def run_bulk(args, workdir: Path, impls: list[str]) -> list[str]:
    t0 = time.perf_counter()
    data = make_data(args.rows)
    data_ipc = write_ipc(workdir / "data.arrow", data)
    del data
    print(f"\n[bulk] {args.rows:,} rows (BIGINT pk + 6 value columns), bucket={args.buckets}, one write_arrow "
          f"call, {args.repeat} repeat(s), median; data generated in {time.perf_counter() - t0:.1f}s", flush=True)
    data = read_ipc(data_ipc)
    times: dict[str, list[float]] = {"paimon_rs": [], "pyarrow-floor": []}
    for r in [-1] + list(range(args.repeat)):  # -1: untimed warm-up on 1000 rows
        d = data.slice(0, 1000) if r < 0 else data
        order = ["paimon_rs", "pyarrow-floor"] if r % 2 == 0 else ["pyarrow-floor", "paimon_rs"]
        for impl in order:
            target = workdir / f"{impl}-{r}"
            if impl == "paimon_rs":
                t = write_paimon_rs(d, target, args.buckets)
            else:
                t = write_pyarrow_floor(d, target, args.buckets)
            shutil.rmtree(target, ignore_errors=True)
            if r >= 0:
                times[impl].append(t)
    print(f"  paimon_rs, pyarrow-floor: ok ({time.perf_counter() - t0:.1f}s wall)", flush=True)
    errors = {}
    for impl in impls:
        t = time.perf_counter()
        try:
            times[impl] = bench_peer(impl, workdir, data_ipc, None, {"bucket": str(args.buckets)}, args.repeat)[
                "write_s"]
        except Exception as e:  # noqa: BLE001 - reported below
            errors[impl] = f"{type(e).__name__}: {e}"
        print(f"  {impl}: {'ok' if impl in times else 'FAILED'} ({time.perf_counter() - t:.1f}s wall)", flush=True)

    header = f"{'implementation':<17}{'write rows/s':>14}{'median s':>10}{'min s':>9}{'max s':>9}"
    lines = [header, "-" * len(header)]
    rates = {}
    for impl in ["paimon_rs", "pyarrow-floor"] + impls:
        if impl not in times:
            lines.append(f"{impl:<17}failed: {errors[impl].splitlines()[0][:80]}")
            continue
        ts = times[impl]
        rates[impl] = _rate(args.rows, _median(ts))
        lines.append(f"{impl:<17}{_fmt_rate(rates[impl]):>14}{_median(ts):>10.3f}{min(ts):>9.3f}{max(ts):>9.3f}")
    lines.append("")
    fails = []
    ours = rates["paimon_rs"]
    peers = {i: rates[i] for i in impls if i in rates}
    if peers:
        best = max(peers, key=peers.get)
        ratio = ours / peers[best]
        ok = ratio >= 3
        lines.append(f"paimon_rs vs best peer ({best}): {ratio:.2f}x  (aim >= 3x: {'met' if ok else 'NOT met'})")
        if not ok:
            fails.append("vs best peer")
        for i in peers:
            if i != best:
                lines.append(f"paimon_rs vs {i}: {ours / peers[i]:.2f}x")
    ratio = ours / rates["pyarrow-floor"]
    ok = ratio >= 1.5
    lines.append(f"paimon_rs vs pyarrow floor: {ratio:.2f}x  (aim >= 1.5x: {'met' if ok else 'NOT met'})")
    if not ok:
        fails.append("vs pyarrow floor")
    print("\n" + "\n".join(lines))
    for impl, err in errors.items():
        print(f"\n{impl} failed:\n{err[-3000:]}", file=sys.stderr)
    return fails


# --------------------------------------------------------------------------


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--parts", default="rss,bulk", help="comma list of rss, bulk")
    ap.add_argument("--rows", type=int, default=2_000_000, help="rows of the bulk part")
    ap.add_argument("--rss-rows", type=int, default=10_000_000, help="rows of the rss part")
    ap.add_argument("--batch-rows", type=int, default=100_000, help="rows per streamed batch (rss part)")
    ap.add_argument("--buffer-sizes", default="64 mb,256 mb", help="write-buffer-size values (rss part)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--buckets", type=int, default=4)
    ap.add_argument("--impls", default=",".join(DEFAULT_PEERS), help=f"peers of the bulk part, from {PEERS}")
    ap.add_argument("--smoke", action="store_true", help="tiny sizes, 1 repeat (CI, < 30 s)")
    ap.add_argument("--check-aims", action="store_true", help="exit non-zero if an aim is not met")
    ap.add_argument("--workdir", default=None, help="scratch directory (default: a temp dir)")
    ap.add_argument("--child-rss", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child_rss:
        print(json.dumps(_child_rss(json.loads(args.child_rss))))
        return 0
    if args.smoke:
        args.rows, args.rss_rows, args.batch_rows, args.repeat = 20_000, 200_000, 20_000, 1
        args.buffer_sizes = "1 mb,256 mb"
    impls = [i.strip() for i in args.impls.split(",") if i.strip()]
    parts = [p.strip() for p in args.parts.split(",") if p.strip()]
    if set(impls) - set(PEERS) or set(parts) - {"rss", "bulk"}:
        ap.error("unknown implementation or part")
    import paimon_rs

    print(f"bench_write: machine {platform.machine()}, {os.cpu_count()} cpus, Python {platform.python_version()}, "
          f"pyarrow {pa.__version__}, paimon_rs from {Path(paimon_rs.__file__).parent}")
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="paimon-bench-write-"))
    workdir.mkdir(parents=True, exist_ok=True)
    fails = []
    try:
        if "rss" in parts:
            fails += [f"rss {s}" for s in run_rss(args, workdir)]
        if "bulk" in parts:
            fails += run_bulk(args, workdir, impls)
    finally:
        if not args.workdir:
            shutil.rmtree(workdir, ignore_errors=True)
    if fails:
        print(f"\naims not met: {', '.join(fails)}")
    return 1 if fails and args.check_aims else 0


if __name__ == "__main__":
    sys.exit(main())
