"""Bitmap file indexes narrowing the rows of a raw read (docs/paimon-behaviour.md §6.3a).

An append table of N rows (one data file), a bitmap index on ``k`` (1000 distinct values), read
with ``k = 7`` (0.1% of the rows): CPU of the read (getrusage user+sys) with the index
(``file-index.read.enabled`` true: only the pages holding the selected rows are decoded) and
without (false: every row decoded, then filtered by value). Two layouts: ``clustered`` (rows
written in ``k`` order, a value's rows in a few pages) and ``spread`` (``k = i % 1000``: every
page holds a selected row, so no page is skipped).

    python benches/bench_bitmap_rows.py [--rows 5000000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import resource
import tempfile

import pyarrow as pa
import pyarrow.compute as pc

import paimon_rs
from paimon_rs import Schema, _core


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def build(catalog, name: str, n: int, clustered: bool):
    schema = pa.schema([("id", pa.int64()), ("k", pa.int32()), ("v", pa.float64()),
                        ("s", pa.string())])
    catalog.create_table(f"db.{name}", Schema.from_pyarrow_schema(
        schema, options={"file-index.bitmap.columns": "k", "target-file-size": "1 gb"}), False)
    t = catalog.get_table(f"db.{name}")
    step = 1_000_000
    wb = t.new_batch_write_builder()
    w, c = wb.new_write(), wb.new_commit()
    for lo in range(0, n, step):
        ids = pa.array(range(lo, min(n, lo + step)), pa.int64())
        if clustered:
            k = pc.cast(pc.divide(ids, n // 1000), pa.int32())
        else:
            k = pc.cast(pc.remainder(ids, 1000), pa.int32())
        w.write_arrow(pa.table({"id": ids, "k": k,
                                "v": pc.cast(ids, pa.float64()),
                                "s": pc.cast(ids, pa.string())}, schema=schema))
    c.commit(w.prepare_commit())
    w.close()
    return t


def read(t, flt: str):
    rb = t.new_read_builder().with_filter(flt)
    splits = rb.new_scan().plan().splits()
    c = cpu()
    out = rb.new_read().to_arrow(splits)
    return cpu() - c, out.num_rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=5_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as wh:
        catalog = paimon_rs.CatalogFactory.create({"warehouse": wh})
        catalog.create_database("db", True)
        print(f"{a.rows} rows, k = 7 (0.1%), CPU s of the read (best of {a.repeat})")
        print("| layout | without the index (every row) | with it (selected rows) | rows asked |")
        print("|---|---|---|---|")
        for layout in ["clustered", "spread"]:
            t = build(catalog, layout, a.rows, layout == "clustered")
            off = t.copy({"file-index.read.enabled": "false"})
            s0 = _core.bitmap_selection_stats()
            best = {}
            for _ in range(a.repeat):
                for key, tab in [("off", off), ("on", t)]:
                    secs, n = read(tab, "k = 7")
                    best[key] = min(best.get(key, secs), secs)
            s1 = _core.bitmap_selection_stats()
            asked = (s1[0] - s0[0]) // a.repeat
            print(f"| {layout} | {best['off']:.3f} | {best['on']:.3f} | {asked} of {a.rows} "
                  f"({n} returned) |")


if __name__ == "__main__":
    main()
