"""Sort compaction (#28): files a range query reads, unsorted vs order / zorder / hilbert, and
the time the sort compaction takes.

One bucket-unaware append table (``x``, ``y`` BIGINT uniform in [0, 1,000,000), ``v`` STRING),
written unsorted in ``--commits`` commits with ``target-file-size`` = ``--file-size``, so every
file spans the whole (x, y) square. The query ``x < 100,000 AND y < 100,000`` (1% of the square)
is planned with the filter pushed down (files pruned by their min/max statistics) and the files
of its splits counted. Then, for each strategy, ``table.sort_compact(strategy, ["x", "y"])`` is
timed from the unsorted table (rolled back to the unsorted snapshot between strategies), the
query's files counted again, and the query's rows checked equal to the unsorted answer.

The peer (``--peers delta``, the default): delta-rs (``deltalake``, pinned in the pypaimon venv,
benches/_delta_peer.py) gets the same rows in the same commits (Arrow IPC files), written with
the same target file size and zstd level 1, then ``optimize.z_order(["x", "y"])`` at that size;
its files read by the query are those its min/max statistics admit (Delta's data skipping). The
issue's aims: z-order reads no more files than delta-rs's, and our z-order sort compaction runs
at least 1.5x delta-rs's z-order rewrite (wall, same run).

    python benches/bench_sort_compact.py            # 10,000,000 rows, 10 commits, 2 MB files
    python benches/bench_sort_compact.py --smoke    # 200,000 rows, 4 commits, 256 KB files
    python benches/bench_sort_compact.py --peers '' # paimon_rs alone
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from paimon_rs import CatalogFactory, Schema

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benches"))
sys.path.insert(0, str(ROOT / "tests" / "compat"))
from _peer_common import run_peer  # noqa: E402

SCHEMA = pa.schema([("x", pa.int64()), ("y", pa.int64()), ("v", pa.string())])
SIDE = 1_000_000


def batch(n: int, rng: np.random.Generator) -> pa.Table:
    x = rng.integers(0, SIDE, n)
    y = rng.integers(0, SIDE, n)
    v = pa.array(np.char.add("v", (x % 100_000).astype(str)).tolist(), pa.string())
    return pa.table({"x": pa.array(x, pa.int64()), "y": pa.array(y, pa.int64()), "v": v}, schema=SCHEMA)


def query(table, hi: int) -> tuple[int, int, int, int]:
    """(files planned, total live files, rows matching, bytes of the files planned) of
    ``x < hi AND y < hi``."""
    rb = table.new_read_builder()
    pb = rb.new_predicate_builder()
    pred = pb.and_predicates([pb.less_than("x", hi), pb.less_than("y", hi)])
    rb = rb.with_filter(pred)
    splits = rb.new_scan().plan().splits()
    files = sum(len(s.file_paths) for s in splits)
    size = sum(s.file_size for s in splits)
    got = rb.new_read().to_arrow(splits)
    rows = got.filter(pc.and_(pc.less(got["x"], hi), pc.less(got["y"], hi))).num_rows
    all_splits = table.new_read_builder().new_scan().plan().splits()
    return files, sum(len(s.file_paths) for s in all_splits), rows, size


def file_sizes(cat, t) -> str:
    """min / median / max size (KB) of the live data files, from the ``$files`` system table."""
    files = cat.get_table("db.t$files")
    rb = files.new_read_builder()
    sizes = sorted(rb.new_read().to_arrow(rb.new_scan().plan().splits()).column("file_size_in_bytes").to_pylist())
    return f"{sizes[0] >> 10}/{sizes[len(sizes) // 2] >> 10}/{sizes[-1] >> 10}"


def _bytes(size: str) -> int:
    """``2mb`` / ``256kb`` as bytes."""
    s = size.strip().lower()
    for unit, mult in (("kb", 1 << 10), ("mb", 1 << 20), ("gb", 1 << 30), ("b", 1)):
        if s.endswith(unit):
            return int(float(s[: -len(unit)]) * mult)
    return int(s)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--commits", type=int, default=10)
    ap.add_argument("--file-size", default="2mb")
    ap.add_argument("--strategies", default="order,zorder,hilbert")
    ap.add_argument("--peers", default="delta", help="comma-separated peers: delta, or '' for none")
    ap.add_argument("--smoke", action="store_true")
    a = ap.parse_args()
    if a.smoke:
        a.rows, a.commits, a.file_size = 200_000, 4, "256kb"
    hi = SIDE // 10
    rng = np.random.default_rng(28)
    with tempfile.TemporaryDirectory(prefix="bench-sort-") as wh:
        cat = CatalogFactory.create({"warehouse": wh})
        cat.create_database("db", True)
        opts = {"bucket": "-1", "target-file-size": a.file_size}
        cat.create_table("db.t", Schema.from_pyarrow_schema(SCHEMA, options=opts), False)
        t = cat.get_table("db.t")
        t0 = time.perf_counter()
        per = a.rows // a.commits
        ipcs = []
        for i in range(a.commits):
            data = batch(per, rng)
            if a.peers:
                ipcs.append(os.path.join(wh, f"commit-{i}.arrow"))
                with pa.OSFile(ipcs[-1], "wb") as f, pa.ipc.new_file(f, data.schema) as ipc:
                    ipc.write_table(data)
            wb = t.new_batch_write_builder()
            w, c = wb.new_write(), wb.new_commit()
            w.write_arrow(data)
            c.commit(w.prepare_commit())
            w.close()
            c.close()
        write_s = time.perf_counter() - t0
        unsorted_id = t.latest_snapshot_id()
        files, total, rows, size = query(t, hi)
        print(f"{a.rows:,} rows written unsorted in {a.commits} commits: {write_s:.1f} s; "
              f"cpus {os.cpu_count()}, load {os.getloadavg()[0]:.1f}")
        print(f"query x < {hi:,} AND y < {hi:,} ({rows:,} rows)\n")
        print(f"{'layout':<22} {'files read':>10} {'of files':>9} {'share':>7} {'MB read':>8} {'sort s':>8} "
              f"{'cpu s':>7} {'rows/s':>11}  file KB min/median/max")
        print(f"{'unsorted':<22} {files:>10} {total:>9} {files / total:>7.1%} {size / 2**20:>8.1f} {'':>8} {'':>7} "
              f"{'':>11}  {file_sizes(cat, t)}")
        walls = {}
        for strategy in a.strategies.split(","):
            t0, c0 = time.perf_counter(), time.process_time()
            t.sort_compact(strategy, ["x", "y"])
            secs, cpu = time.perf_counter() - t0, time.process_time() - c0
            walls[strategy] = secs
            f, n, r, b = query(t, hi)
            assert r == rows, (strategy, r, rows)
            print(f"{strategy:<22} {f:>10} {n:>9} {f / n:>7.1%} {b / 2**20:>8.1f} {secs:>8.1f} {cpu:>7.1f} "
                  f"{a.rows / secs:>11,.0f}  {file_sizes(cat, t)}")
            t.rollback_to(unsorted_id)
        if "delta" in a.peers.split(","):
            size = _bytes(a.file_size)
            d = run_peer("_delta_peer.py", {"path": os.path.join(wh, "delta"), "ipcs": ipcs,
                                            "file_size": size, "hi": hi}, timeout=7200)
            assert d["rows"] == rows and d["zorder_rows"] == rows, (d, rows)
            print(f"{'delta-rs unsorted':<22} {d['files']:>10} {d['total']:>9} {d['files'] / d['total']:>7.1%} "
                  f"{d['bytes'] / 2**20:>8.1f}")
            print(f"{'delta-rs z_order':<22} {d['zorder_files']:>10} {d['zorder_total']:>9} "
                  f"{d['zorder_files'] / d['zorder_total']:>7.1%} {d['zorder_bytes'] / 2**20:>8.1f} "
                  f"{d['zorder_s']:>8.1f} {d['zorder_cpu_s']:>7.1f} {a.rows / d['zorder_s']:>11,.0f}")
            if "zorder" in walls:
                print(f"\nzorder sort compaction vs delta-rs z_order (wall): {d['zorder_s'] / walls['zorder']:.2f}x "
                      f"(aim >= 1.5x); delta-rs wrote its {a.commits} commits in {d['write_s']:.1f} s")
        print(f"\nload after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
