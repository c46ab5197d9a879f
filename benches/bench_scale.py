"""How the #30 figures grow with the table: 2M -> 20M -> 100M rows, paimon_rs side by side with
pypaimon_rust 0.4.0, with each phase's peak RSS.

At each scale N (bench_merge_read's table and ratios): BIGINT key ``id``, ``v`` int64, ``f``
float64, ``s`` 16-char string; bucket = 4 (``--buckets``), deduplicate engine. A base commit of N
rows, then 5 upsert commits of N/5 rows each (half updates of existing keys, half new keys).
Each implementation runs three phases, each in a process of its own (benches/_scale_child.py),
so a phase's peak RSS is its own; phase by phase, the implementations run one after the other:

  write    bulk write of the base commit; raw read of it (1 file per bucket); the 5 upsert
           commits (paimon_rs compacts as its writer does by default; pypaimon_rust never does)
  read     merge-on-read of the result, after a warm-up
  compact  paimon_rs only: a full compaction, reads after it, and the same live rows written
           afresh into an empty table (full compaction / fresh write is #30's ratio)

A read materialises the whole table (``to_arrow``, as the other benches): its peak RSS includes
the Arrow result, printed beside it. The data sets are Arrow IPC files in ``--workdir``
(default: a temp dir; 100M rows need ~9 GB for them plus ~4 GB per implementation's table).

    python benches/bench_scale.py                          # 2M, 20M, 100M; reads repeated 3x
    python benches/bench_scale.py --scales 2M,20M --repeat 3
    python benches/bench_scale.py --smoke                  # 200k rows, 1 repeat, paimon_rs only
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "compat"))
sys.path.insert(0, str(ROOT / "benches"))

from _peer_common import run_peer  # noqa: E402
from bench_merge_read import key_sets  # noqa: E402

IMPLS = ["paimon_rs", "pypaimon_rust"]
CHUNK = 5_000_000


def parse_scale(s: str) -> int:
    s = s.strip().upper()
    mult = {"K": 1_000, "M": 1_000_000}.get(s[-1:], 1)
    return int(float(s[:-1] if mult > 1 else s) * mult)


def _chunk(ids: np.ndarray, rng: np.random.Generator) -> pa.RecordBatch:
    n = len(ids)
    digits = pc.utf8_lpad(pc.cast(pa.array(rng.integers(0, 10**15, n)), pa.string()), 15, "0")
    s = pc.binary_join_element_wise(pa.scalar("s"), digits, "")
    return pa.record_batch({"id": pa.array(ids, pa.int64()),
                            "v": pa.array(rng.integers(0, 1 << 40, n), pa.int64()),
                            "f": pa.array(rng.random(n)), "s": s})


def _write_ipc(path: Path, ids: np.ndarray, seed: int) -> str:
    rng = np.random.default_rng(seed)
    schema = _chunk(ids[:1], np.random.default_rng(0)).schema
    with pa.OSFile(str(path), "wb") as f, pa.ipc.new_file(f, schema) as w:
        for at in range(0, len(ids), CHUNK):
            w.write_batch(_chunk(ids[at:at + CHUNK], rng))
    return str(path)


def data_sets(rows: int, workdir: Path, commits: int = 5) -> tuple[list[str], int]:
    """The base IPC file of ``rows`` rows and ``commits`` upsert files of rows/5 each
    (bench_merge_read's keys; the values generated in chunks, vectorised)."""
    base_ids, upserts, live = key_sets(rows, rows // 5, commits)
    paths = [_write_ipc(workdir / "base.arrow", base_ids, 2)]
    for c, ids in enumerate(upserts):
        paths.append(_write_ipc(workdir / f"upd{c}.arrow", ids, 10 + c))
    return paths, live


def run_phase(impl: str, payload: dict) -> dict:
    payload = dict(payload, impl=impl)
    if impl == "pypaimon_rust":
        return run_peer("_scale_child.py", payload, timeout=7200)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(ROOT / "python"), str(ROOT / "benches"), os.environ.get("PYTHONPATH", "")]))
    r = subprocess.run([sys.executable, str(ROOT / "benches" / "_scale_child.py"), json.dumps(payload)],
                       capture_output=True, text=True, env=env, timeout=7200)
    if r.returncode != 0:
        raise RuntimeError(r.stderr.strip()[-2000:])
    return json.loads(r.stdout.strip().splitlines()[-1])


def _load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def bench_scale(rows: int, impls: list[str], buckets: int, repeat: int, workdir: Path) -> dict:
    t0 = time.perf_counter()
    ipcs, live = data_sets(rows, workdir)
    print(f"\n== {rows:,} rows + 5 x {rows // 5:,} upserts -> {live:,} live rows; bucket={buckets}; "
          f"data generated in {time.perf_counter() - t0:.0f} s; load {_load()}", flush=True)
    options = {"bucket": str(buckets)}
    res: dict[str, dict] = {impl: {"times": {}, "rss": {}, "result_mb": {}} for impl in impls}
    # phase by phase, the implementations one after the other: both see the same load
    for phase in ("write", "read", "compact"):
        for impl in impls:
            r = res[impl]
            if "error" in r or (phase == "compact" and impl != "paimon_rs"):
                continue
            payload = {"warehouse": str(workdir / f"wh-{impl}"), "ipcs": ipcs, "options": options,
                       "repeat": repeat, "phase": phase}
            try:
                out = run_phase(impl, payload)
            except Exception as e:  # noqa: BLE001 - reported in the table
                r["error"] = str(e)
                print(f"  {impl} {phase} failed: {str(e).splitlines()[-1][:200]}", flush=True)
                continue
            r["times"].update(out["times"])
            r["rss"][phase] = out["peak_rss_mb"]
            r["result_mb"][phase] = out.get("result_mb")
            if phase == "read":
                r["rows"], r["check"] = out["rows"], out["check"]
            print(f"  {impl} {phase}: {_fmt_times(out['times'])}; peak RSS {out['peak_rss_mb']:,.0f} MB "
                  f"(result {out.get('result_mb')} MB); load {_load()}", flush=True)
    for impl in impls:
        shutil.rmtree(workdir / f"wh-{impl}", ignore_errors=True)
    for p in ipcs:
        Path(p).unlink(missing_ok=True)
    return res


def _fmt_times(t: dict) -> str:
    return ", ".join(f"{k} {sum(v) if k == 'upserts' else _med(v):.2f} s" for k, v in t.items())


def _med(v: list[float]) -> float:
    return statistics.median(v) if len(v) > 1 else sum(v)


def report(all_res: dict[int, dict], impls: list[str]) -> None:
    rows_of = {"bulk_write": "bulk write (s)", "raw_read": "raw read (s, median)",
               "upserts": "5 upsert commits (s, total)", "merge_read": "merge-on-read (s, median)"}
    print("\n| measure | " + " | ".join(f"{n:,}" for n in all_res) + " |")
    print("|---|" + "---|" * len(all_res))
    for key, title in rows_of.items():
        for impl in impls:
            cells = []
            for res in all_res.values():
                t = res.get(impl, {}).get("times", {}).get(key)
                cells.append("-" if not t else (f"{sum(t):.2f}" if key == "upserts" else f"{_med(t):.2f}"))
            print(f"| {title} {impl} | " + " | ".join(cells) + " |")
        if "pypaimon_rust" in impls and "paimon_rs" in impls:
            cells = []
            for res in all_res.values():
                a = res.get("paimon_rs", {}).get("times", {}).get(key)
                b = res.get("pypaimon_rust", {}).get("times", {}).get(key)
                agg = sum if key == "upserts" else _med
                cells.append(f"{agg(b) / agg(a):.2f}x" if a and b else "-")
            print(f"| {title} paimon_rs vs pypaimon_rust | " + " | ".join(cells) + " |")
    cells = []
    for res in all_res.values():
        t = res.get("paimon_rs", {}).get("times", {})
        fc, fw = t.get("full_compaction"), t.get("fresh_write")
        cells.append(f"{fc[0]:.2f} / {fw[0]:.2f} = {fw[0] / fc[0]:.2f}x" if fc and fw else "-")
    print("| full compaction / fresh write of the live rows paimon_rs (s; speed ratio) | "
          + " | ".join(cells) + " |")
    for impl in impls:
        for phase in ("write", "read", "compact"):
            cells = []
            for res in all_res.values():
                r = res.get(impl, {})
                mb, out = r.get("rss", {}).get(phase), r.get("result_mb", {}).get(phase)
                cells.append("-" if mb is None else f"{mb:,.0f}" + (f" ({out:,.0f})" if out else ""))
            if any(c != "-" for c in cells):
                print(f"| peak RSS MB {impl} {phase} (Arrow result of one read) | " + " | ".join(cells) + " |")
    for n, res in all_res.items():
        a, b = res.get("paimon_rs", {}), res.get("pypaimon_rust", {})
        if "check" in a and "check" in b and (a["check"], a["rows"]) != (b["check"], b["rows"]):
            print(f"MISMATCH at {n:,} rows: paimon_rs {a['rows']:,} rows sum {a['check']}, "
                  f"pypaimon_rust {b['rows']:,} rows sum {b['check']}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scales", default="2M,20M,100M", help="comma list of base row counts (k/M suffixes)")
    ap.add_argument("--impls", default=",".join(IMPLS), help=f"from {IMPLS}")
    ap.add_argument("--buckets", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=3, help="reads per phase (medians)")
    ap.add_argument("--workdir", default=None, help="scratch directory (default: a temp dir)")
    ap.add_argument("--smoke", action="store_true", help="200k rows, 1 repeat, paimon_rs only")
    args = ap.parse_args(argv)
    if args.smoke:
        args.scales, args.repeat, args.impls = "200k", 1, "paimon_rs"
    impls = [i.strip() for i in args.impls.split(",") if i.strip()]
    unknown = set(impls) - set(IMPLS)
    if unknown:
        ap.error(f"unknown implementation(s) {sorted(unknown)}; known: {IMPLS}")
    scales = [parse_scale(s) for s in args.scales.split(",") if s.strip()]
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="paimon-scale-bench-"))
    workdir.mkdir(parents=True, exist_ok=True)
    print(f"bench_scale: scales {[f'{n:,}' for n in scales]}, impls {impls}, {os.cpu_count()} cores, "
          f"load {_load()}")
    try:
        all_res = {n: bench_scale(n, impls, args.buckets, args.repeat, workdir) for n in scales}
        report(all_res, impls)
        return 0 if all("error" not in r.get("paimon_rs", {}) for r in all_res.values()) else 1
    finally:
        if not args.workdir:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
