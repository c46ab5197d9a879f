"""Shared helpers of the unit tests (a module name no other test folder uses)."""

from __future__ import annotations

from typing import Any, Dict, List

import pyarrow as pa

from table_writes import write  # noqa: F401 - the unit tests import it from here

PK_SCHEMA = pa.schema([
    ("dt", pa.string()),
    ("id", pa.int64()),
    ("name", pa.string()),
    ("price", pa.float64()),
])


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
    """The table's snapshot files (JSON), oldest first (on local disk or S3: tests/stores.py)."""
    import stores

    return stores.snapshots(table.table_path)


def fake_tqdm(monkeypatch) -> List[Any]:
    """Install a fake ``tqdm.auto.tqdm`` recording its bars (total, desc, unit, n, postfix,
    closed); returns the list the bars are appended to."""
    import sys
    import types
    bars: List[Any] = []

    class FakeBar:
        def __init__(self, total=None, desc=None, unit=None, **kw):
            self.total, self.desc, self.unit, self.n, self.postfix, self.closed = total, desc, unit, 0, None, False
            bars.append(self)

        def update(self, n):
            self.n += n

        def set_postfix(self, refresh=True, **kw):
            self.postfix = kw

        def close(self):
            self.closed = True

    auto = types.ModuleType("tqdm.auto")
    auto.tqdm = FakeBar  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "tqdm", types.ModuleType("tqdm"))
    monkeypatch.setitem(sys.modules, "tqdm.auto", auto)
    return bars


def write_arrow(table, data) -> None:
    """Append ``data`` (a pyarrow Table) to ``table`` in one batch write and commit."""
    wb = table.new_batch_write_builder()
    w = wb.new_write()
    w.write_arrow(data)
    c = wb.new_commit()
    c.commit(w.prepare_commit())
    w.close()
    c.close()


def commit_columns(t, data, cols=None, first=None) -> None:
    """Commit ``data`` to ``t`` in one batch write: of the columns ``cols`` only
    (``with_write_type``) when given, its files given ``first_row_id`` ``first`` when given
    (new values of those columns of a data-evolution file group)."""
    wb = t.new_batch_write_builder()
    w = wb.new_write()
    if cols:
        w.with_write_type(cols)
    w.write_arrow(data)
    msgs = w.prepare_commit()
    if first is not None:
        for m in msgs:
            for f in m.new_files:
                f.first_row_id = first
    wb.new_commit().commit(msgs)
    w.close()
