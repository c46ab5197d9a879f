"""Compaction progress (issue 13): ``Table.compact(progress=...)`` reports per (partition,
bucket) from the Rust compaction, with monotone totals whose final values equal the committed
snapshot's summary; an exception from the callback stops the compaction before the commit."""

from __future__ import annotations

from typing import List

import pyarrow as pa
import pytest

from paimon_rs import Schema, _core
from paimon_rs.progress import Progress, TqdmProgress

from unit_helpers import fake_tqdm, read, write

APPEND = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.string())])
PK = pa.schema([("dt", pa.string()), pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])


def rows(schema: pa.Schema, ids: List[int], dt: str) -> pa.Table:
    return pa.table({"dt": [dt] * len(ids), "id": ids, "v": [f"v{i}" for i in ids]}, schema=schema)


def make(catalog, name: str, pk: bool):
    opts = {"bucket": "2", "write-only": "true"}
    if not pk:
        opts["bucket-key"] = "id"
    catalog.create_table(f"db.{name}", Schema.from_pyarrow_schema(
        PK if pk else APPEND, partition_keys=["dt"], primary_keys=["dt", "id"] if pk else None,
        options=opts), False)
    t = catalog.get_table(f"db.{name}")
    for c in range(4):
        for dt in ("a", "b", "c"):
            write(t, rows(t.arrow_schema, [c * 20 + i for i in range(20)], dt))
    return t


def monotone(events: List[Progress], field: str) -> bool:
    vals = [getattr(e, field) for e in events]
    return vals == sorted(vals)


@pytest.mark.parametrize("pk", [True, False], ids=["primary-key", "append"])
def test_progress_totals_are_monotone_and_equal_the_summary(catalog, pk):
    t = make(catalog, "pk" if pk else "ap", pk)
    before = sorted(read(t).column("id").to_pylist())
    events: List[Progress] = []
    sid = t.compact(full=True, progress=events.append)
    assert sid is not None
    files_before, files_after, bytes_before, bytes_after, rows_before, rows_after = \
        _core.compaction_summary(t._core, sid)
    # a start event, one per (partition, bucket), then done after the commit
    assert events[0].buckets == 0 and events[0].total_buckets == 6 and events[0].files == 0
    assert [e.done for e in events] == [False] * (len(events) - 1) + [True]
    assert [e.buckets for e in events[:-1]] == list(range(7))
    assert all(e.phase == "compact" and e.total_buckets == 6 for e in events)
    for f in ("buckets", "files", "bytes", "rows", "files_out", "bytes_out", "rows_out"):
        assert monotone(events, f), f
    last = events[-1]
    assert (last.files, last.bytes, last.rows) == (files_before, bytes_before, rows_before)
    assert (last.files_out, last.bytes_out, last.rows_out) == (files_after, bytes_after, rows_after)
    assert last.files == 24 and last.files_out == 6 and last.rows == 240
    assert sorted(read(t).column("id").to_pylist()) == before


def test_nothing_to_compact_reports_done_with_zeros(catalog):
    t = make(catalog, "z", False)
    assert t.compact(full=True) is not None
    events: List[Progress] = []
    assert t.compact(full=True, progress=events.append) is None
    assert events[-1].done and events[-1].buckets == 6 and events[-1].files == 0 and events[-1].files_out == 0


def test_a_raising_callback_stops_the_compaction_before_the_commit(catalog):
    t = make(catalog, "r", True)
    latest = t.latest_snapshot_id()
    files = sorted(_file_names(t))

    def boom(p: Progress) -> None:
        if p.buckets == 3:
            raise KeyboardInterrupt("stop")

    with pytest.raises(KeyboardInterrupt, match="stop"):
        t.compact(full=True, progress=boom)
    assert t.latest_snapshot_id() == latest
    # the files the finished buckets wrote were removed again
    assert sorted(_file_names(t)) == files


def _file_names(t) -> List[str]:
    import os
    out = []
    for root, _, names in os.walk(t.table_path):
        if "bucket-" in root:
            out += [os.path.join(root, n) for n in names]
    return out


def test_tqdm_adapter_counts_buckets_for_a_compaction(monkeypatch):
    bars = fake_tqdm(monkeypatch)
    p = TqdmProgress()
    p(Progress("compact", 0, 0, 0, buckets=0, total_buckets=4, files_out=0))
    p(Progress("compact", 100, 4096, 8, buckets=4, total_buckets=4, files_out=2, done=True))
    (bar,) = bars
    assert (bar.total, bar.desc, bar.unit, bar.n, bar.closed) == (4, "compact", "buckets", 4, True)
    assert bar.postfix == {"rows": 100, "bytes": "4.0 kB", "files": "8->2"}
