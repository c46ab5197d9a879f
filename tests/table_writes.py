"""One commit through the public write API, shared by every test folder (tests/ is on the path
of all of them): ``write`` commits Arrow tables, ``write_rows`` a ``{key: value}`` dict."""

from __future__ import annotations

from typing import Any, Dict, Optional

import pyarrow as pa


def write(table: Any, data: Any, overwrite: Optional[dict] = None) -> Any:
    """One commit of ``data`` (anything ``write_arrow`` takes, or a list/tuple of those written in
    order); ``overwrite`` as the write builder's. Returns what the commit returns."""
    wb = table.new_batch_write_builder()
    if overwrite is not None:
        wb.overwrite(overwrite)
    w, c = wb.new_write(), wb.new_commit()
    try:
        for t in data if isinstance(data, (list, tuple)) else [data]:
            w.write_arrow(t)
        return c.commit(w.prepare_commit())
    finally:
        w.close()
        c.close()


def write_rows(table: Any, rows: Dict[Any, Any], schema: pa.Schema) -> Any:
    """One commit of ``rows`` ``{k: v}`` into a table of two columns ``schema`` (key, value)."""
    k, v = schema.names
    return write(table, pa.table({k: list(rows), v: list(rows.values())}, schema=schema))
