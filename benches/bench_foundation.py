"""Bulk write + full read: paimon_rs side by side with pypaimon 2.1.0.

Table: BIGINT primary key ``id`` + 6 value columns (int64, float64, ~16-char
string, ~64-char string, int32, bool), ``bucket`` = 4, unpartitioned. The data
is generated once (fixed seed, shuffled keys) into an Arrow IPC file that every
implementation reads before its clock starts.

Implementations:
  paimon_rs        this project, in this process
  pypaimon         pypaimon 2.1.0, pure Python       } in the pypaimon venv
  pypaimon-native  pypaimon 2.1.0 + pypaimon-rust,   } (tests/compat/pypaimon_env.py),
                   table options write.native.enabled, read.native.enabled,
                   scan.native-plan.enabled, commit.native.enabled = true
                   (the native commit only applies to REST catalogs; with a
                   filesystem catalog pypaimon commits in Python)
  pypaimon-rust    pypaimon_rust 0.4.0's own API (pypaimon_rust.datafusion)

Times cover the API calls only (write: new_batch_write_builder .. commit; read:
new_read_builder .. to_arrow), measured inside each process; each repeat uses a
fresh table. Medians are reported.

    python benches/bench_foundation.py                 # 2,000,000 rows, 3 repeats
    python benches/bench_foundation.py --rows 500000 --repeat 5
    python benches/bench_foundation.py --update-frac 0.2   # 2nd commit -> merge read
    python benches/bench_foundation.py --smoke         # CI: 20,000 rows, 1 repeat
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "compat"))

NATIVE_OPTIONS = {
    "write.native.enabled": "true",
    "read.native.enabled": "true",
    "scan.native-plan.enabled": "true",
    "commit.native.enabled": "true",
}
IMPLS = ["paimon_rs", "pypaimon", "pypaimon-native", "pypaimon-rust"]


# --------------------------------------------------------------------------
# data


def _strings(rng: np.random.Generator, n: int, lo: int, hi: int) -> pa.Array:
    lengths = rng.integers(lo, hi + 1, size=n, dtype=np.int32)
    offsets = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(lengths, out=offsets[1:])
    alphabet = np.frombuffer(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_",
                             dtype=np.uint8)
    data = alphabet[rng.integers(0, len(alphabet), size=int(offsets[-1]), dtype=np.int32)]
    return pa.StringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(data.tobytes()))


def make_data(n: int, seed: int = 42) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table({
        "id": pa.array(rng.permutation(n).astype(np.int64)),
        "v_i64": pa.array(rng.integers(-(2 ** 62), 2 ** 62, size=n, dtype=np.int64)),
        "v_f64": pa.array(rng.standard_normal(n)),
        "v_s16": _strings(rng, n, 12, 20),
        "v_s64": _strings(rng, n, 56, 72),
        "v_i32": pa.array(rng.integers(-(2 ** 31), 2 ** 31, size=n, dtype=np.int32)),
        "v_bool": pa.array(rng.integers(0, 2, size=n).astype(bool)),
    }).cast(pa.schema([
        pa.field("id", pa.int64(), nullable=False), ("v_i64", pa.int64()), ("v_f64", pa.float64()),
        ("v_s16", pa.string()), ("v_s64", pa.string()), ("v_i32", pa.int32()), ("v_bool", pa.bool_()),
    ]))


def make_update(data: pa.Table, frac: float, seed: int = 7) -> pa.Table | None:
    if frac <= 0:
        return None
    rng = np.random.default_rng(seed)
    n = data.num_rows
    idx = rng.choice(n, size=max(1, int(n * frac)), replace=False)
    upd = data.take(pa.array(idx))
    return upd.set_column(1, "v_i64", pa.array(rng.integers(0, 2 ** 62, size=len(idx), dtype=np.int64)))


def write_ipc(path: Path, table: pa.Table) -> str:
    with pa.OSFile(str(path), "wb") as f, pa.ipc.new_file(f, table.schema) as w:
        w.write_table(table, max_chunksize=64 * 1024)
    return str(path)


def read_ipc(path: str) -> pa.Table:
    with pa.memory_map(path) as f:
        return pa.ipc.open_file(f).read_all()


def _checksum(col) -> int:
    """Sum of the low 16 bits (no int64 overflow); same formula as pypaimon_driver."""
    return pc.sum(pc.bit_wise_and(col, 0xFFFF)).as_py() or 0


# --------------------------------------------------------------------------
# paimon_rs (in process)


def bench_paimon_rs(workdir: Path, data_ipc: str, update_ipc: str | None, options: dict, repeat: int):
    from paimon_rs import CatalogFactory, Schema

    data = read_ipc(data_ipc)
    update = read_ipc(update_ipc) if update_ipc else None
    out = {"write_s": [], "update_s": [], "read_s": [], "rows_read": [], "check": {}}
    full_data, full_update = data, update
    for i in [-1] + list(range(repeat)):  # -1: untimed warm-up on 1000 rows
        wh = workdir / (f"paimon_rs-rep{i}" if i >= 0 else "paimon_rs-warmup")
        data, update = (full_data.slice(0, 1000), None) if i < 0 else (full_data, full_update)
        cat = CatalogFactory.create({"warehouse": str(wh)})
        cat.create_database("db", True)
        cat.create_table("db.bench", Schema.from_pyarrow_schema(
            data.schema, primary_keys=["id"], options=dict(options)), False)

        def write(t, cat=cat):
            table = cat.get_table("db.bench")
            gc.collect()
            t0 = time.perf_counter()
            wb = table.new_batch_write_builder()
            w, c = wb.new_write(), wb.new_commit()
            w.write_arrow(t)
            c.commit(w.prepare_commit())
            w.close()
            c.close()
            return time.perf_counter() - t0

        w_t = write(data)
        u_t = write(update) if update is not None else None
        table = cat.get_table("db.bench")
        gc.collect()
        t0 = time.perf_counter()
        rb = table.new_read_builder()
        result = rb.new_read().to_arrow(rb.new_scan().plan().splits())
        r_t = time.perf_counter() - t0
        shutil.rmtree(wh, ignore_errors=True)
        if i < 0:
            continue
        out["write_s"].append(w_t)
        if u_t is not None:
            out["update_s"].append(u_t)
        out["read_s"].append(r_t)
        out["rows_read"].append(result.num_rows)
        if i == 0:
            out["check"] = {"sum": _checksum(result.column("v_i64"))}
        del result
    return out


# --------------------------------------------------------------------------
# peers (pypaimon venv)


def bench_peer(impl: str, workdir: Path, data_ipc: str, update_ipc: str | None, options: dict, repeat: int):
    from pypaimon_env import run_pypaimon

    opts = dict(options)
    if impl == "pypaimon-native":
        opts.update(NATIVE_OPTIONS)
    wh = workdir / impl
    try:
        return run_pypaimon("bench", {
            "impl": "pypaimon_rust" if impl == "pypaimon-rust" else "pypaimon",
            "warehouse": str(wh), "data_ipc": data_ipc, "update_ipc": update_ipc,
            "primary_keys": ["id"], "options": opts, "repeat": repeat, "checksum_column": "v_i64",
        }, timeout=3600)
    finally:
        shutil.rmtree(wh, ignore_errors=True)


# --------------------------------------------------------------------------


def _median(xs):
    return statistics.median(xs) if xs else float("nan")


def _rate(n, s):
    return n / s if s and s == s else float("nan")


def _fmt_rate(r):
    if r != r:
        return "n/a"
    return f"{r / 1e6:.2f}M" if r >= 1e6 else f"{r / 1e3:.0f}k"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--buckets", type=int, default=4)
    ap.add_argument("--update-frac", type=float, default=0.0,
                    help="also commit updates of this fraction of the keys before the read (merge read)")
    ap.add_argument("--impls", default=",".join(IMPLS), help=f"comma list of {IMPLS}")
    ap.add_argument("--smoke", action="store_true", help="20,000 rows, 1 repeat (CI)")
    ap.add_argument("--require-peers", action="store_true", help="exit non-zero if a peer fails")
    ap.add_argument("--workdir", default=None, help="scratch directory (default: a temp dir)")
    args = ap.parse_args(argv)
    if args.smoke:
        args.rows, args.repeat = 20_000, 1
    impls = [i.strip() for i in args.impls.split(",") if i.strip()]
    unknown = set(impls) - set(IMPLS)
    if unknown:
        ap.error(f"unknown implementation(s) {sorted(unknown)}")

    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="paimon-bench-"))
    workdir.mkdir(parents=True, exist_ok=True)
    options = {"bucket": str(args.buckets)}
    t0 = time.perf_counter()
    data = make_data(args.rows)
    data_ipc = write_ipc(workdir / "data.arrow", data)
    update = make_update(data, args.update_frac)
    update_ipc = write_ipc(workdir / "update.arrow", update) if update is not None else None
    n_upd = update.num_rows if update is not None else 0
    del data, update
    print(f"bench_foundation: {args.rows:,} rows (BIGINT pk + 6 value columns), bucket={args.buckets}, "
          f"unpartitioned, {args.repeat} repeat(s), median; update commit: {n_upd:,} rows; "
          f"data generated in {time.perf_counter() - t0:.1f}s")
    print(f"machine: {platform.machine()}, {os.cpu_count()} cpus, Python {platform.python_version()}, "
          f"pyarrow {pa.__version__}")

    results, errors = {}, {}
    for impl in impls:
        t = time.perf_counter()
        try:
            if impl == "paimon_rs":
                results[impl] = bench_paimon_rs(workdir, data_ipc, update_ipc, options, args.repeat)
            else:
                results[impl] = bench_peer(impl, workdir, data_ipc, update_ipc, options, args.repeat)
        except Exception as e:  # noqa: BLE001 - reported below
            errors[impl] = f"{type(e).__name__}: {e}"
        print(f"  {impl}: {'ok' if impl in results else 'FAILED'} ({time.perf_counter() - t:.1f}s wall)",
              flush=True)

    expected_rows = args.rows
    header = f"{'implementation':<17}{'write rows/s':>14}{'write s':>10}"
    if n_upd:
        header += f"{'update s':>10}"
    header += f"{'read rows/s':>14}{'read s':>10}  check"
    print()
    print(header)
    print("-" * len(header))
    rates = {}
    ref_sum = None
    bad = []
    for impl in impls:
        if impl not in results:
            print(f"{impl:<17}{'failed: ' + errors[impl].splitlines()[0][:80]}")
            continue
        r = results[impl]
        w, rd = _median(r["write_s"]), _median(r["read_s"])
        rates[impl] = (_rate(args.rows, w), _rate(expected_rows, rd))
        ok = all(n == expected_rows for n in r["rows_read"])
        s = r.get("check", {}).get("sum")
        ref_sum = s if ref_sum is None else ref_sum
        ok = ok and s == ref_sum
        if not ok:
            bad.append(impl)
        line = f"{impl:<17}{_fmt_rate(rates[impl][0]):>14}{w:>10.3f}"
        if n_upd:
            line += f"{_median(r['update_s']):>10.3f}"
        line += f"{_fmt_rate(rates[impl][1]):>14}{rd:>10.3f}  "
        line += "ok" if ok else f"MISMATCH rows={r['rows_read']} sum={s}"
        info = r.get("info") or {}
        if impl == "pypaimon-native":
            line += f" (writer {info.get('writer')}, native plan {info.get('native_plan')})"
        print(line)

    if "paimon_rs" in rates:
        ours = rates["paimon_rs"]
        print()
        for impl in impls:
            if impl != "paimon_rs" and impl in rates:
                pw, pr = rates[impl]
                print(f"paimon_rs vs {impl:<15} write {ours[0] / pw:6.2f}x   read {ours[1] / pr:6.2f}x")
    for impl, err in errors.items():
        print(f"\n{impl} failed:\n{err[-3000:]}", file=sys.stderr)
    if not args.workdir:
        shutil.rmtree(workdir, ignore_errors=True)
    if "paimon_rs" in errors or "paimon_rs" in bad:
        return 1
    if args.require_peers and (errors or bad):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
