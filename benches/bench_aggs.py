"""Merge-on-read of aggregation tables, one per aggregate function, paimon_rs side by side with
pypaimon 2.1.0 (pure Python; it implements these functions).

Each table: BIGINT key ``id``, ``v`` BIGINT aggregated with ``sum`` (the checksum column) and,
except in the ``sum`` baseline table, one column aggregated by the function under test:
  collect        ARRAY<BIGINT> of 2 elements per record
  nested_update  ARRAY<ROW<id BIGINT, x BIGINT>> of 2 rows, nested-key id (4 distinct ids)
  rbm32          VARBINARY: a portable Roaring bitmap of 4 values
  rbm64          VARBINARY: a Java Roaring64Bitmap of the same 4 values (paimon_rs only:
                 pypaimon 2.1.0 refuses rbm64)
A base commit of ``--rows`` keys, then ``--commits`` commits updating ``--update-rows`` existing
keys each (bucket 1: every commit is one overlapping level-0 file). The full read is timed
``--repeat`` times after one warm-up; medians are reported, with the ratio to paimon_rs's own
``sum`` table and to pypaimon on the same table.

    python benches/bench_aggs.py                 # 100,000 rows + 2 x 50,000 updates, 3 repeats
    python benches/bench_aggs.py --smoke         # 5,000 rows, 1 repeat
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa
from pyroaring import BitMap

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benches"))
sys.path.insert(0, str(ROOT / "tests" / "compat"))
sys.path.insert(0, str(ROOT / "tests" / "unit"))

from bench_merge_read import _ipc, bench_ours, bench_peer  # noqa: E402
from java_rbm64 import bitmap_of  # noqa: E402

NROW = pa.struct([("id", pa.int64()), ("x", pa.int64())])
FUNCS = {
    "sum": (None, {}),
    "collect": (pa.list_(pa.int64()), {}),
    "nested_update": (pa.list_(NROW), {"fields.a.nested-key": "id"}),
    "rbm32": (pa.binary(), {}),
    "rbm64": (pa.binary(), {}),
}
NO_PEER = {"rbm64"}  # pypaimon 2.1.0 refuses it


def column(func: str, n: int, rng: np.random.Generator) -> pa.Array:
    vals = rng.integers(0, 1 << 20, (n, 4))
    if func == "collect":
        return pa.array(vals[:, :2].tolist(), pa.list_(pa.int64()))
    if func == "nested_update":
        return pa.array([[{"id": int(r[0]) % 4, "x": int(r[1])}, {"id": int(r[2]) % 4, "x": 1}]
                         for r in vals], pa.list_(NROW))
    if func == "rbm64":
        return pa.array([bitmap_of(*r.tolist()) for r in vals], pa.binary())
    return pa.array([BitMap(r.tolist()).serialize() for r in vals], pa.binary())


def data_sets(func: str, rows: int, upd: int, commits: int, workdir: Path) -> list[str]:
    rng = np.random.default_rng(7)
    paths = []
    for c in range(commits + 1):
        ids = np.arange(rows, dtype=np.int64) if c == 0 else rng.choice(rows, upd, replace=False)
        n = len(ids)
        cols = {"id": pa.array(ids, pa.int64()),
                "v": pa.array(rng.integers(0, 1 << 30, n), pa.int64())}
        if FUNCS[func][0] is not None:
            cols["a"] = column(func, n, rng)
        paths.append(_ipc(workdir / f"{func}{c}.arrow", pa.table(cols)))
    return paths


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--update-rows", type=int, default=50_000)
    ap.add_argument("--commits", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-peer", action="store_true")
    ap.add_argument("--smoke", action="store_true")
    a = ap.parse_args(argv)
    if a.smoke:
        a.rows, a.update_rows, a.repeat = 5_000, 2_500, 1
    records = a.rows + a.commits * a.update_rows
    print(f"{a.rows} rows + {a.commits} x {a.update_rows} updates = {records} records, "
          f"bucket 1, medians of {a.repeat}")
    base = None
    print(f"{'function':14} {'paimon_rs':>14} {'vs sum':>7} {'pypaimon':>14} {'ratio':>7}")
    for func, (_, extra) in FUNCS.items():
        opts = {"bucket": "1", "merge-engine": "aggregation",
                "fields.v.aggregate-function": "sum", **extra}
        if func != "sum":
            opts["fields.a.aggregate-function"] = func
        with tempfile.TemporaryDirectory() as tmp:
            ipcs = data_sets(func, a.rows, a.update_rows, a.commits, Path(tmp))
            ours = bench_ours(Path(tmp) / "ours", ipcs, opts, a.repeat)
            ours_s = statistics.median(ours["read_s"])
            base = base or ours_s
            peer_txt, ratio = "-", "-"
            if not a.no_peer and func not in NO_PEER:
                peer = bench_peer("pypaimon", Path(tmp) / "peer", ipcs, opts, a.repeat)
                assert peer["rows"] == ours["rows"] and peer["check"] == ours["check"], func
                peer_s = statistics.median(peer["read_s"])
                peer_txt, ratio = f"{records / peer_s / 1e3:10.0f}k r/s", f"{peer_s / ours_s:6.1f}x"
            print(f"{func:14} {records / ours_s / 1e3:10.0f}k r/s {base / ours_s:6.2f}x "
                  f"{peer_txt:>14} {ratio:>7}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
