"""Sort compaction cuts its files at curve-cell boundaries (issue #28): after a z-order or
hilbert sort compaction of a uniform 2-D table, a range query reads exactly the files holding
rows in its box (min/max boxes are tight), one file for a box inside one small cell, and the
rows are unchanged. A dynamic-bucket primary-key table's buckets are cut at cells the same way
(near dynamic-bucket.target-row-num rows)."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from paimon_rs import Schema

from unit_helpers import read, write

SCHEMA = pa.schema([("x", pa.int64()), ("y", pa.int64()), ("v", pa.string())])


def files_of(catalog, table):
    f = catalog.get_table(f"{table.identifier}$files")
    return read(f).column("file_path").to_pylist()


def box_reads(t, files, box):
    """(files the scan plans for the box query, files holding a row in the box)."""
    (x0, x1), (y0, y1) = box
    pb = t.new_read_builder().new_predicate_builder()
    pred = pb.and_predicates([pb.between("x", x0, x1), pb.between("y", y0, y1)])
    rb = t.new_read_builder().with_filter(pred)
    planned = sum(len(s.file_paths) for s in rb.new_scan().plan().splits())
    holding = 0
    for f in files:
        d = pq.read_table(f, columns=["x", "y"])
        m = pc.and_(pc.and_(pc.greater_equal(d["x"], x0), pc.less_equal(d["x"], x1)),
                    pc.and_(pc.greater_equal(d["y"], y0), pc.less_equal(d["y"], y1)))
        holding += pc.any(m).as_py() is True
    return planned, holding


def stats_reads(files, box) -> int:
    """Files whose min/max box (their Parquet statistics of x, y) meets ``box``: what a scan
    pruning by value statistics reads (a primary-key scan drops a bucket whose files all miss the
    box, and prunes non-overlapping files one by one: Java's filterWholeBucketByStats)."""
    (x0, x1), (y0, y1) = box
    n = 0
    for f in files:
        md = pq.ParquetFile(f).metadata
        lo, hi = {}, {}
        for g in range(md.num_row_groups):
            for c in range(md.num_columns):
                col = md.row_group(g).column(c)
                name, st = col.path_in_schema, col.statistics
                if name in ("x", "y") and st is not None and st.has_min_max:
                    lo[name] = min(lo.get(name, st.min), st.min)
                    hi[name] = max(hi.get(name, st.max), st.max)
        n += lo["x"] <= x1 and hi["x"] >= x0 and lo["y"] <= y1 and hi["y"] >= y0
    return n


# boxes inside one cell of 1/256 of the square [0, 2^16)^2 (x, y < 4096; the middle; a corner)
BOXES = [((100, 3000), (100, 3000)), ((37000, 40000), (21000, 24000)), ((61500, 65000), (45500, 48000))]


@pytest.mark.parametrize("strategy", ["zorder", "hilbert"])
def test_dynamic_bucket_table_buckets_are_cut_at_cells(catalog, strategy):
    """The local sort compaction of a dynamic-bucket table assigns its sorted rows fresh buckets
    cut at curve cells (within target-row-num x [1/2, 1]): each bucket's file holds whole
    cells, so a box inside one small cell meets one file's min/max box (a size cut at exactly target-row-num
    rows leaves buckets straddling cells, whose boxes span the cells' neighbours)."""
    schema = Schema.from_pyarrow_schema(pa.schema([("id", pa.int64()), *SCHEMA]), primary_keys=["id"],
                                        options={"bucket": "-1", "dynamic-bucket.target-row-num": "12000"})
    catalog.create_table(f"db.dyn_cells_{strategy}", schema, False)
    t = catalog.get_table(f"db.dyn_cells_{strategy}")
    rng = np.random.default_rng(27)
    for i in range(4):
        x, y = rng.integers(0, 1 << 16, 40_000), rng.integers(0, 1 << 16, 40_000)
        write(t, pa.table({"id": np.arange(i * 40_000, (i + 1) * 40_000), "x": x, "y": y,
                           "v": [f"v{j % 997}" for j in x]}, schema=t.arrow_schema))
    before = Counter(tuple(r.values()) for r in read(t).to_pylist())
    t.sort_compact(strategy, ["x", "y"])
    assert Counter(tuple(r.values()) for r in read(t).to_pylist()) == before
    files = files_of(catalog, t)
    buckets = read(catalog.get_table(f"{t.identifier}$files")).column("bucket").to_pylist()
    assert len(set(buckets)) == len(files) >= 12  # one file per bucket
    for box in BOXES:
        planned, holding = box_reads(t, files, box)
        # the scan plans the one file: a bucket of one file is pruned by its value statistics
        # (KeyValueFileStoreScan.filterWholeBucketByStats)
        assert planned == stats_reads(files, box) == holding == 1, (strategy, box, planned, len(files))


@pytest.mark.parametrize("strategy", ["zorder", "hilbert"])
def test_a_box_inside_one_cell_reads_one_file(catalog, strategy):
    schema = Schema.from_pyarrow_schema(SCHEMA, options={"bucket": "-1", "target-file-size": "64kb"})
    catalog.create_table(f"db.cells_{strategy}", schema, False)
    t = catalog.get_table(f"db.cells_{strategy}")
    rng = np.random.default_rng(28)
    for _ in range(4):
        x, y = rng.integers(0, 1 << 16, 50_000), rng.integers(0, 1 << 16, 50_000)
        write(t, pa.table({"x": x, "y": y, "v": [f"v{i % 997}" for i in x]}, schema=SCHEMA))
    before = Counter(tuple(r.values()) for r in read(t).to_pylist())
    t.sort_compact(strategy, ["x", "y"])
    assert Counter(tuple(r.values()) for r in read(t).to_pylist()) == before
    files = files_of(catalog, t)
    assert len(files) >= 8
    for box in BOXES[:2]:
        planned, holding = box_reads(t, files, box)
        assert planned == holding == 1, (strategy, box, planned, holding, len(files))
