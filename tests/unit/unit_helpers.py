"""Shared helpers of the unit tests (a module name no other test folder uses)."""

from __future__ import annotations

import json
import os
from typing import Any, Dict, List

import pyarrow as pa

PK_SCHEMA = pa.schema([
    ("dt", pa.string()),
    ("id", pa.int64()),
    ("name", pa.string()),
    ("price", pa.float64()),
])


def write(table, data, overwrite=None):
    wb = table.new_batch_write_builder()
    if overwrite is not None:
        wb.overwrite(overwrite)
    w, c = wb.new_write(), wb.new_commit()
    try:
        w.write_arrow(data)
        return c.commit(w.prepare_commit())
    finally:
        w.close()
        c.close()


def read(table, projection=None, predicate=None, sort=None):
    rb = table.new_read_builder()
    if projection:
        rb = rb.with_projection(projection)
    if predicate is not None:
        rb = rb.with_filter(predicate)
    t = rb.new_read().to_arrow(rb.new_scan().plan().splits())
    if sort:
        t = t.sort_by([(k, "ascending") for k in sort])
    return t


def snapshots(table) -> List[Dict[str, Any]]:
    """The table's snapshot files (JSON), oldest first."""
    d = os.path.join(table.table_path, "snapshot")
    ids = sorted(int(f.split("-")[1]) for f in os.listdir(d) if f.startswith("snapshot-"))
    out = []
    for i in ids:
        with open(os.path.join(d, f"snapshot-{i}")) as f:
            out.append(json.load(f))
    return out
