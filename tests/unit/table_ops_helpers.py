"""Helpers of the table-operation tests (tags, rollback, expiry): a primary-key table written
commit by commit next to a model of every snapshot's rows."""

from __future__ import annotations

import time
from typing import Dict, List, Tuple

import pyarrow as pa

from paimon_rs import Schema

import stores
from table_writes import write_rows

SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.string())])

Rows = Dict[int, str]


def make_table(catalog, name: str = "db.ops", options: Dict[str, str] = None, pk: bool = True):
    opts = {"bucket": "2"} if pk else {"bucket": "-1"}
    opts.update(options or {})
    schema = Schema.from_pyarrow_schema(SCHEMA, primary_keys=["k"] if pk else None, options=opts)
    catalog.create_table(name, schema, False)
    return catalog.get_table(name)


class Model:
    """The rows of every snapshot of a primary-key table (key -> value)."""

    def __init__(self, table) -> None:
        self.table = table
        self.snapshots: Dict[int, Rows] = {}

    def current(self) -> Rows:
        latest = self.table.latest_snapshot_id()
        return dict(self.snapshots.get(latest, {})) if latest else {}

    def _record(self, before, state: Rows) -> int:
        """A commit may write an APPEND and a COMPACT snapshot: both hold the new state."""
        sid = self.table.latest_snapshot_id()
        for i in range((before or 0) + 1, sid + 1):
            self.snapshots[i] = dict(state)
        return sid

    def upsert(self, rows: Dict[int, str]) -> int:
        before = self.table.latest_snapshot_id()
        write_rows(self.table, rows, SCHEMA)
        state = dict(self.snapshots.get(before, {})) if before else {}
        state.update(rows)
        return self._record(before, state)

    def compact(self) -> None:
        before = self.table.latest_snapshot_id()
        state = self.current()
        self.table.compact(full=True)
        self._record(before, state)


def read_rows(table, options: Dict[str, str] = None) -> Rows:
    t = table.copy(options) if options else table
    rb = t.new_read_builder()
    out = rb.new_read().to_arrow(rb.new_scan().plan().splits()).to_pydict()
    return dict(zip(out["k"], out["v"]))


def snapshot_ids(table) -> List[int]:
    return stores.snapshot_ids(table.table_path)


def disk_usage(table) -> Tuple[int, int]:
    """(files, bytes) under the table directory (on local disk or S3: tests/stores.py)."""
    return stores.usage(table.table_path)


def orphans(table) -> List[str]:
    """Files no snapshot or tag references (a dry-run orphan clean of everything up to now)."""
    return table.remove_orphan_files(older_than=int(time.time() * 1000), dry_run=True).files


def history(t, n: int = 5) -> Model:
    """``n`` upserts (two keys overwritten in turn, one new key each) recorded in a model."""
    m = Model(t)
    for i in range(n):
        m.upsert({i % 2: f"v{i}", 10 + i: "x"})
    return m
