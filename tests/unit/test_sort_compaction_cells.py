"""Sort compaction cuts its files at curve-cell boundaries (issue #28): after a z-order or
hilbert sort compaction of a uniform 2-D table, a range query reads exactly the files holding
rows in its box (min/max boxes are tight), one file for a box inside one small cell, and the
rows are unchanged."""

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
    # boxes inside one cell of 1/256 of the square (x, y < 4096; and one in the middle)
    for (x0, x1), (y0, y1) in [((100, 3000), (100, 3000)), ((37000, 40000), (21000, 24000))]:
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
        assert planned == holding == 1, (strategy, (x0, y0), planned, holding, len(files))
