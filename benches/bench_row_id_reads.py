"""Reads of a data-evolution table by row id, CPU seconds (user + sys of this process, so a
busy box does not inflate them): a merged row-id group read in slices (``with_slice`` decodes
only each slice's rows of the group's files) and a filter on ``_ROW_ID`` (``=`` prunes the plan
to the group holding the id; a range of ``<`` / ``>`` does not prune, pypaimon's rule).

``IN`` over many ids (``_ROW_ID IN`` and a data column ``id IN``, ``--in-ids`` ids over
``--in-rows`` rows) is evaluated with one hash lookup per row, not once per row and id.

    python benches/bench_row_id_reads.py [--rows 1000000] [--files 40] [--repeat 3]
        [--in-rows 200000] [--in-ids 40000]
"""

from __future__ import annotations

import argparse
import resource
import tempfile
from typing import Callable, List

import pyarrow as pa

from paimon_rs import CatalogFactory, Schema

DE = {"row-tracking.enabled": "true", "data-evolution.enabled": "true"}


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def best(fn: Callable[[], object], repeat: int) -> float:
    times: List[float] = []
    for _ in range(repeat):
        t0 = cpu()
        fn()
        times.append(cpu() - t0)
    return min(times)


def commit(t, table: pa.Table, write_type=None, first_row_id=None) -> None:
    wb = t.new_batch_write_builder()
    w = wb.new_write()
    if write_type:
        w = w.with_write_type(write_type)
    w.write_arrow(table)
    msgs = w.prepare_commit()
    if first_row_id is not None:
        for m in msgs:
            for f in m.new_files:
                f.first_row_id = first_row_id
    wb.new_commit().commit(msgs)
    w.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--files", type=int, default=40)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--in-rows", type=int, default=200_000)
    ap.add_argument("--in-ids", type=int, default=40_000)
    args = ap.parse_args()
    n = args.rows
    cat = CatalogFactory.create({"warehouse": tempfile.mkdtemp(prefix="bench-rowid-")})
    cat.create_database("db", True)
    sch = pa.schema([("id", pa.int64()), ("a", pa.int64()), ("b", pa.string())])

    # one group of n rows, its column `a` updated by a second file: a merged group
    cat.create_table("db.g", Schema.from_pyarrow_schema(sch, options=DE), False)
    g = cat.get_table("db.g")
    commit(g, pa.table({"id": pa.array(range(n), pa.int64()), "a": pa.array(range(n), pa.int64()),
                        "b": pa.array([f"v{i}" for i in range(n)])}, schema=sch))
    commit(g, pa.table({"a": pa.array(range(n, 2 * n), pa.int64())}), ["a"], 0)

    def read(t, rb, part=None) -> int:
        scan = rb.new_scan()
        if part is not None:
            scan = scan.with_slice(*part)
        return rb.new_read().to_arrow(scan.plan().splits()).num_rows

    def whole() -> None:
        assert read(g, g.new_read_builder()) == n

    def sliced() -> None:
        k = 8
        got = sum(read(g, g.new_read_builder(), (i * n // k, (i + 1) * n // k)) for i in range(k))
        assert got == n

    # many groups: `_ROW_ID = x` keeps one of them
    cat.create_table("db.m", Schema.from_pyarrow_schema(sch, options=DE), False)
    m = cat.get_table("db.m")
    per = max(1, n // args.files)
    for f in range(args.files):
        ids = range(f * per, (f + 1) * per)
        commit(m, pa.table({"id": pa.array(ids, pa.int64()), "a": pa.array(ids, pa.int64()),
                            "b": pa.array([f"v{i}" for i in ids])}, schema=sch))
    x = per * args.files // 2 + 3

    def by_eq() -> None:
        assert read(m, m.new_read_builder().with_filter(f"_ROW_ID = {x}")) == 1

    def by_range() -> None:
        assert read(m, m.new_read_builder().with_filter(f"_ROW_ID > {x - 1} AND _ROW_ID < {x + 1}")) == 1

    # IN over many values: every 5th id of an in_rows-row table
    cat.create_table("db.i", Schema.from_pyarrow_schema(sch, options=DE), False)
    it = cat.get_table("db.i")
    ni = args.in_rows
    commit(it, pa.table({"id": pa.array(range(ni), pa.int64()), "a": pa.array(range(ni), pa.int64()),
                         "b": pa.array([f"v{i}" for i in range(ni)])}, schema=sch))
    step = max(1, ni // args.in_ids)
    ids = list(range(0, ni, step))[: args.in_ids]

    def in_col(col: str) -> Callable[[], None]:
        def go() -> None:
            rb = it.new_read_builder()
            rb = rb.with_filter(rb.new_predicate_builder().is_in(col, ids))
            assert read(it, rb) == len(ids)
        return go

    def in_str() -> None:
        rb = it.new_read_builder()
        rb = rb.with_filter(rb.new_predicate_builder().is_in("b", [f"v{i}" for i in ids]))
        assert read(it, rb) == len(ids)

    rows = [
        (f"merged group of {n:,} rows, whole", best(whole, args.repeat)),
        ("the same in 8 with_slice parts", best(sliced, args.repeat)),
        (f"{args.files} groups x {per:,} rows, _ROW_ID = x (plan pruned)", best(by_eq, args.repeat)),
        ("the same row by _ROW_ID > x-1 AND < x+1 (not pruned)", best(by_range, args.repeat)),
        (f"_ROW_ID IN {len(ids):,} ids over {ni:,} rows", best(in_col("_ROW_ID"), args.repeat)),
        (f"id IN {len(ids):,} ids over {ni:,} rows (BIGINT)", best(in_col("id"), args.repeat)),
        (f"b IN {len(ids):,} strings over {ni:,} rows (STRING)", best(in_str, args.repeat)),
    ]
    width = max(len(r[0]) for r in rows)
    print(f"{'read':<{width}}  CPU s (best of {args.repeat})")
    for name, s in rows:
        print(f"{name:<{width}}  {s:.3f}")


if __name__ == "__main__":
    main()
