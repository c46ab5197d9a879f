"""Streaming reads in Python (``table.new_stream_read_builder()``), pypaimon 2.1.0's API.

A streaming scan yields one ``Plan`` per snapshot as snapshots are committed, polling for new
ones; the builder's ``new_read()`` reads a plan's splits::

    builder = table.new_stream_read_builder().with_include_row_kind()
    scan, read = builder.new_streaming_scan(), builder.new_read()
    for plan in scan.stream_sync():          # or: async for plan in scan.stream()
        changes = read.to_arrow(plan.splits())

Semantics, as Java's ``DataTableStreamScan`` (and the Spark streaming source,
``paimon_rs.spark.streaming``, which plans with the same functions):

- where it starts (the table's ``scan.mode``, set with ``table.copy``): ``latest-full`` (the
  default) first yields the latest snapshot's rows (as ``+I``), then each later snapshot's
  changes; ``latest`` only the changes of snapshots committed after the scan started;
  ``from-snapshot`` (``scan.snapshot-id`` = s) the changes of snapshot s and later;
  ``from-snapshot-full`` the rows of snapshot s, then the changes after it. A table without a
  snapshot yet: the changes of its first snapshot and later. Other start options
  (``scan.timestamp-millis``, ``scan.tag-name``, ...) are refused, never ignored.
- a snapshot's changes: its changelog files where the table has a ``changelog-producer``, else
  its delta files (the files an APPEND snapshot added; COMPACT and OVERWRITE snapshots bring
  nothing and are not yielded), as Java's ``ChangelogFollowUpScanner`` /
  ``DeltaFollowUpScanner``; the table option ``incremental-between-scan-mode`` (``delta`` /
  ``changelog``) chooses one. Changes are read as stored, unmerged, in order.
- ``with_consumer_id``: the scan starts where the consumer (``<table>/consumer/consumer-<id>``,
  Java's file) left off, and moves it past a plan when the caller asks for the next one (after
  it has processed the plan: at-least-once), as pypaimon; expiry keeps what it still needs.
- ``with_include_row_kind``: a leading ``_row_kind`` string column (``+I``/``-U``/``+U``/``-D``);
  without it the rows come without their kinds (retractions included), as pypaimon.

Planning and reading run in Rust with the GIL released; ``stream()`` plans in a worker thread,
so an event loop keeps running while it waits.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any, AsyncIterator, Callable, Dict, Iterator, List, Optional, Tuple, Union

import pyarrow as pa

from paimon_rs import consumer as consumers
from paimon_rs.changelog import ROW_KIND_COLUMN
from paimon_rs.exceptions import InvalidArgumentError, UnsupportedError
from paimon_rs.predicate import Predicate

if TYPE_CHECKING:
    from paimon_rs.table import Plan, Table

#: the row kind column of a streaming read with ``with_include_row_kind`` (pypaimon's name)
STREAM_ROW_KIND_COLUMN = "_row_kind"

#: ``scan.mode`` values of a streaming read: (starts with the full state, starts at a snapshot)
SCAN_MODES = {
    "default": (True, False), "latest-full": (True, False), "full": (True, False), "latest": (False, False),
    "from-snapshot": (False, True), "from-snapshot-full": (True, True),
}

#: table options that choose another start than the scan modes above: refused, not ignored
_REFUSED_START_OPTIONS = ("scan.timestamp-millis", "scan.timestamp", "scan.tag-name", "scan.watermark",
                          "scan.file-creation-time-millis", "scan.version", "incremental-between",
                          "incremental-between-timestamp", "incremental-to-auto-tag")


def resolved_mode(table: Table, mode: str) -> str:
    """``auto``: ``changelog`` where the table has a changelog producer, else ``delta``."""
    if mode != "auto":
        return mode
    return "changelog" if table.options.changelog_producer() != "none" else "delta"


def parse_start(what: str, scan_mode: Any, snapshot: Any) -> Tuple[bool, Optional[int]]:
    """A streaming read's start from ``scan.mode`` and ``scan.snapshot-id`` (strings or None):
    (starts with the full state, the snapshot it starts at). ``what`` names the read in errors."""
    raw_mode = str(scan_mode or "").strip().lower()
    if not raw_mode:
        raw_mode = "from-snapshot" if snapshot is not None else "latest-full"
    if raw_mode not in SCAN_MODES:
        raise UnsupportedError(f"{what}: scan.mode '{raw_mode}' (a streaming read takes {', '.join(SCAN_MODES)})")
    full_first, at_snapshot = SCAN_MODES[raw_mode]
    if at_snapshot != (snapshot is not None):
        raise InvalidArgumentError(f"{what}: scan.mode '{raw_mode}' "
                                   + ("needs scan.snapshot-id" if at_snapshot else "takes no scan.snapshot-id"))
    try:
        start = int(snapshot) if snapshot is not None else None
    except ValueError:
        raise InvalidArgumentError(f"{what}: scan.snapshot-id is a snapshot id, not {snapshot!r}") from None
    if start is not None and start < 1:
        raise InvalidArgumentError(f"{what}: scan.snapshot-id must be >= 1, got {start}")
    return full_first, start


def parse_between_mode(what: str, raw: Any) -> str:
    """``incremental-between-scan-mode`` of a streaming read (auto, delta or changelog), unresolved."""
    mode = str(raw or "auto").strip().lower()
    if mode not in ("auto", "delta", "changelog"):
        raise UnsupportedError(f"{what}: incremental-between-scan-mode '{mode}' (a streaming read takes auto, "
                               "delta or changelog)")
    return mode


def _stream_mode(table: Table) -> str:
    """The table's ``incremental-between-scan-mode`` for a streaming read, resolved."""
    what = f"streaming read of {table.identifier}"
    return resolved_mode(table, parse_between_mode(what, table.options.get("incremental-between-scan-mode")))


def _without_start_options(table: Table) -> Table:
    """``table`` without its ``scan.*`` options (a copy's ``scan.snapshot-id`` would pin every
    plan and read to that snapshot and its schema), reopened as a pickled table is."""
    from paimon_rs.table import _reopen

    opts = {k: v for k, v in table._dynamic_options.items() if not k.startswith("scan.")}
    if len(opts) == len(table._dynamic_options):
        return table
    if table.current_branch() != "main":
        opts["branch"] = table.current_branch()
    return _reopen(table.table_path, opts, str(table.identifier))


def snapshot_rows(table: Table, snapshot_id: int, core_filter: Any = None) -> Tuple[Optional[int], List[Any]]:
    """The splits of snapshot ``snapshot_id``'s rows for a streaming read's first plan, by the
    levels Java's ``DataTableStreamScan.tryFirstPlan`` takes: a ``lookup`` table's levels above 0
    (its level-0 rows come later, as the changelog their compaction produces), a
    ``full-compaction`` table's top level (likewise, from the next full compaction), every level
    otherwise, level 0 included where a batch read hides it (deletion-vector and first-row
    tables: rows written but not yet compacted are not lost to the stream)."""
    producer = table.options.changelog_producer() if table.is_primary_key_table else "none"
    levels = {"lookup": "above-zero", "full-compaction": "top"}.get(producer, "all")
    sid, splits = table._core.plan(core_filter, snapshot_id, levels=levels)
    return sid, list(splits)


def snapshot_changes(table: Table, snapshot_id: int, mode: str, core_filter: Any = None) -> List[Any]:
    """The splits of snapshot ``snapshot_id``'s changes (``mode`` ``delta`` or ``changelog``):
    an incremental plan of ``(snapshot_id - 1, snapshot_id]``."""
    t = table.copy({"incremental-between": f"{snapshot_id - 1},{snapshot_id}",
                    "incremental-between-scan-mode": mode})
    _, splits = t._core.plan(core_filter, None)
    return list(splits)


class StreamSplit:
    """A split of a streaming plan: the rows of a snapshot (``kind`` ``full``, read as ``+I``)
    or a snapshot's changes (``changes``). Every attribute of the engine's split
    (``bucket``, ``row_count``, ``file_paths``, ...) reads through."""

    def __init__(self, split: Any, kind: str):
        self.split = split
        self.kind = kind

    @property
    def is_streaming(self) -> bool:
        """pypaimon's flag: the split's changes are read unmerged."""
        return self.kind == "changes"

    def __getattr__(self, name: str) -> Any:
        return getattr(self.split, name)

    def __repr__(self) -> str:
        return f"StreamSplit({self.kind}, bucket {self.split.bucket_path}, {self.split.row_count} rows)"


class StreamReadBuilder:
    """A builder of a streaming read (pypaimon's ``StreamReadBuilder``): filter, projection,
    poll interval, row kinds, consumer and buckets, then ``new_streaming_scan()`` and
    ``new_read()``. The module's docstring has the semantics."""

    def __init__(self, table: Table):
        self.table = table
        self._read_builder = table.new_read_builder()
        self._predicate: Optional[Predicate] = None
        self._projection: Optional[List[str]] = None
        self._poll_interval_ms = 1000
        self._include_row_kind = False
        self._consumer_id: Optional[str] = None
        self._bucket_filter: Optional[Callable[[int], bool]] = None

    def with_filter(self, predicate: Union[Predicate, str, None]) -> StreamReadBuilder:
        """Only the rows (changes) matching ``predicate`` (a Predicate, a filter string, or None),
        as ``ReadBuilder.with_filter``."""
        self._read_builder.with_filter(predicate)
        self._predicate = self._read_builder._predicate
        return self

    def with_projection(self, projection: List[str]) -> StreamReadBuilder:
        """Only these columns, in this order (top-level columns)."""
        if any("." in c and c not in self.table.arrow_schema.names for c in projection):
            raise UnsupportedError(f"streaming read of {self.table.identifier}: nested projection "
                                   f"{projection!r} (a streaming read takes top-level columns)")
        self._read_builder.with_projection(projection)
        self._projection = list(projection)
        return self

    def with_poll_interval_ms(self, poll_interval_ms: int) -> StreamReadBuilder:
        """How long the scan waits before looking for a new snapshot again (default 1000 ms)."""
        if isinstance(poll_interval_ms, bool) or not isinstance(poll_interval_ms, int) or poll_interval_ms < 0:
            raise InvalidArgumentError(f"with_poll_interval_ms: a number of milliseconds >= 0, "
                                       f"got {poll_interval_ms!r}")
        self._poll_interval_ms = poll_interval_ms
        return self

    def with_include_row_kind(self, include: bool = True) -> StreamReadBuilder:
        """Give each row's kind (``+I``/``-U``/``+U``/``-D``) as a leading ``_row_kind`` column."""
        self._include_row_kind = bool(include)
        return self

    def with_consumer_id(self, consumer_id: str) -> StreamReadBuilder:
        """Start where consumer ``consumer_id`` left off and record the progress there."""
        consumers.check_id(consumer_id)
        self._consumer_id = consumer_id
        return self

    def with_bucket_filter(self, bucket_filter: Callable[[int], bool]) -> StreamReadBuilder:
        """Only the splits of the buckets for which ``bucket_filter(bucket)`` is true (to share
        a table's stream among readers)."""
        if not callable(bucket_filter):
            raise TypeError(f"with_bucket_filter takes a function of the bucket, not {bucket_filter!r}")
        self._bucket_filter = bucket_filter
        return self

    def with_buckets(self, bucket_ids: List[int]) -> StreamReadBuilder:
        """Only these buckets' splits."""
        wanted = {int(b) for b in bucket_ids}
        return self.with_bucket_filter(lambda bucket: bucket in wanted)

    def new_streaming_scan(self) -> StreamingTableScan:
        """The scan: ``stream()`` (async) or ``stream_sync()`` yield a plan per snapshot."""
        return StreamingTableScan(self.table, self._predicate, self._poll_interval_ms, self._bucket_filter,
                                  self._consumer_id)

    def new_read(self) -> StreamTableRead:
        """The read of the scan's plans (``to_arrow(plan.splits())``, ...)."""
        return StreamTableRead(self.table, self._projection, self._predicate, self._include_row_kind)

    def new_predicate_builder(self) -> Any:
        """A PredicateBuilder over the table's columns."""
        return self._read_builder.new_predicate_builder()

    def read_type(self) -> Any:
        """The fields read (after the projection), without the row kind column."""
        return self._read_builder.read_type()


class StreamingTableScan:
    """Yields a ``Plan`` per snapshot as they are committed (pypaimon's
    ``AsyncStreamingTableScan``): ``stream()`` is an async generator, ``stream_sync()`` its
    blocking form. ``next_snapshot_id`` is the snapshot whose changes come next."""

    def __init__(self, table: Table, predicate: Optional[Predicate], poll_interval_ms: int = 1000,
                 bucket_filter: Optional[Callable[[int], bool]] = None, consumer_id: Optional[str] = None):
        from paimon_rs.table import _with_system_columns

        opts = table.options
        refused = [k for k in _REFUSED_START_OPTIONS if opts.get(k) is not None]
        if refused:
            raise UnsupportedError(f"streaming read of {table.identifier}: option(s) {refused} (a streaming "
                                   f"read starts by scan.mode: {', '.join(SCAN_MODES)})")
        what = f"streaming read of {table.identifier}"
        self._full_first, self._start = parse_start(what, opts.get("scan.mode"), opts.get("scan.snapshot-id"))
        self.mode = _stream_mode(table)
        self.table = _without_start_options(table)
        self.predicate = predicate
        # a row-tracking table's _ROW_ID / _SEQUENCE_NUMBER too, as a batch read's filter
        self._filter = predicate.to_core(_with_system_columns(table)) if predicate is not None else None
        self.poll_interval = poll_interval_ms / 1000.0
        self._bucket_filter = bucket_filter
        self._consumer_id = consumer_id
        self.next_snapshot_id: Optional[int] = None
        self._pending_consumer: Optional[int] = None

    # -- planning (blocking; the GIL is released inside the engine) ------------------------

    def _splits(self, splits: List[Any], kind: str) -> List[StreamSplit]:
        keep = self._bucket_filter
        return [StreamSplit(s, kind) for s in splits if keep is None or keep(s.bucket)]

    def _plan_full(self, snapshot_id: int) -> Plan:
        from paimon_rs.table import Plan

        sid, splits = snapshot_rows(self.table, snapshot_id, self._filter)
        return Plan(sid, self._splits(splits, "full"))

    def _scannable(self, snapshot_id: int) -> Optional[bool]:
        """Whether the snapshot brings changes in this mode (None: its file is gone)."""
        snap = self.table.snapshot_manager().get_snapshot_by_id(snapshot_id)
        if snap is None:
            return None
        if self.mode == "delta":
            return snap.commit_kind == "APPEND"
        return snap.changelog_manifest_list is not None

    def _start_position(self) -> Tuple[Optional[Plan], int]:
        """The first plan (a full read, or None) and the next snapshot whose changes follow."""
        if self._consumer_id is not None:
            nxt = consumers.next_snapshot(self.table, self._consumer_id)
            if nxt is not None:
                return None, nxt
        if self._start is not None:
            if self._full_first:
                return self._plan_full(self._start), self._start + 1
            return None, self._start
        latest = self.table.latest_snapshot_id()
        if latest is None:
            return None, 1
        if self._full_first:
            return self._plan_full(latest), latest + 1
        return None, latest + 1

    def _next_plan(self) -> Optional[Plan]:
        """The next snapshot's plan, skipping snapshots without changes; None: no new snapshot."""
        from paimon_rs.table import Plan

        assert self.next_snapshot_id is not None
        latest = self.table.latest_snapshot_id()  # once per look, not once per skipped snapshot
        while True:
            sid = self.next_snapshot_id
            if latest is None or sid > latest:
                return None
            scannable = self._scannable(sid)
            if scannable is False:
                self.next_snapshot_id = sid + 1
                continue
            # an expired snapshot (None) is planned all the same: its long-lived changelog is
            # read, or the engine says it is gone
            try:
                splits = snapshot_changes(self.table, sid, self.mode, self._filter)
            except InvalidArgumentError as e:
                if scannable is None and self._consumer_id is None:
                    # Java's hint (DataTableStreamScan): a consumer keeps the snapshots it needs
                    raise InvalidArgumentError(
                        f"{e} (the streaming read of {self.table.identifier} fell behind snapshot "
                        f"expiry: read with a consumer id, with_consumer_id(...), so that expiry keeps "
                        "the snapshots it has not read)") from e
                raise
            self.next_snapshot_id = sid + 1
            if scannable is None and not splits:
                continue
            return Plan(sid, self._splits(splits, "changes"))

    def _stage(self) -> None:
        if self._consumer_id is not None and self.next_snapshot_id is not None:
            self._pending_consumer = self.next_snapshot_id

    def _flush(self) -> None:
        if self._consumer_id is not None and self._pending_consumer is not None:
            consumers.write_next_snapshot(self.table, self._consumer_id, self._pending_consumer)
            self._pending_consumer = None

    # -- iteration -------------------------------------------------------------------------

    async def stream(self) -> AsyncIterator[Plan]:
        """Yield a plan per snapshot, forever: the first (per the start mode), then each new
        snapshot's changes as it is committed, waiting ``poll_interval`` between looks. The
        consumer (if any) moves past a plan when the next one is asked for."""
        if self.next_snapshot_id is None:
            first, self.next_snapshot_id = await asyncio.to_thread(self._start_position)
            if first is not None:
                self._stage()
                yield first
        while True:
            await asyncio.to_thread(self._flush)
            plan = await asyncio.to_thread(self._next_plan)
            if plan is None:
                await asyncio.sleep(self.poll_interval)
                continue
            self._stage()
            yield plan

    def stream_sync(self) -> Iterator[Plan]:
        """The blocking form of ``stream()`` (no event loop needed)."""
        if self.next_snapshot_id is None:
            first, self.next_snapshot_id = self._start_position()
            if first is not None:
                self._stage()
                yield first
        while True:
            self._flush()
            plan = self._next_plan()
            if plan is None:
                time.sleep(self.poll_interval)
                continue
            self._stage()
            yield plan


class StreamTableRead:
    """Reads a streaming plan's splits (``to_arrow``, ``to_arrow_batch_reader``,
    ``to_pandas``): a snapshot's rows as ``+I``, changes as stored, in split order."""

    def __init__(self, table: Table, projection: Optional[List[str]], predicate: Optional[Predicate],
                 include_row_kind: bool):
        from paimon_rs.table import TableRead

        if STREAM_ROW_KIND_COLUMN in table.arrow_schema.names and include_row_kind:
            raise UnsupportedError(f"{table.identifier} has a column named '{STREAM_ROW_KIND_COLUMN}', the "
                                   "streaming read's row kind column")
        mode = _stream_mode(table)
        table = _without_start_options(table)
        self.table = table
        self.include_row_kind = include_row_kind
        # the reads of each kind of split: a snapshot's rows, and changes (an incremental
        # handle: its reads give row kinds; the range is each split's own)
        changes = table.copy({"incremental-between": "0,1", "incremental-between-scan-mode": mode})
        self._reads: Dict[str, Any] = {"full": TableRead(table, projection, predicate),
                                       "changes": TableRead(changes, projection, predicate)}
        data = self._reads["full"].schema
        self.schema = pa.schema([pa.field(STREAM_ROW_KIND_COLUMN, pa.string(), False), *data]) \
            if include_row_kind else data

    def _conform(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        names = batch.schema.names
        if ROW_KIND_COLUMN in names and names[0] == ROW_KIND_COLUMN:
            kinds, cols = batch.column(0), batch.columns[1:]
        else:
            kinds, cols = pa.array(["+I"] * batch.num_rows, pa.string()), batch.columns
        if self.include_row_kind:
            cols = [kinds, *cols]
        return pa.RecordBatch.from_arrays(cols, schema=self.schema)

    def _groups(self, splits: List[Any]) -> Iterator[Tuple[str, List[Any]]]:
        """Runs of consecutive splits of one kind (plain splits of ``new_read_builder`` plans
        are read as a snapshot's rows)."""
        run: List[Any] = []
        kind = None
        for s in splits:
            k = s.kind if isinstance(s, StreamSplit) else "full"
            raw = s.split if isinstance(s, StreamSplit) else s
            if run and k != kind:
                yield kind, run  # type: ignore[misc]
                run = []
            kind = k
            run.append(raw)
        if run:
            yield kind, run  # type: ignore[misc]

    def to_arrow_batch_reader(self, splits: List[Any]) -> pa.RecordBatchReader:
        """The splits' rows as a stream of batches (bounded memory)."""
        def batches() -> Iterator[pa.RecordBatch]:
            for kind, run in self._groups(list(splits)):
                for b in self._reads[kind]._core.stream(run):
                    yield self._conform(self._reads[kind]._resolve_blobs(b))
        return pa.RecordBatchReader.from_batches(self.schema, batches())

    def to_arrow(self, splits: List[Any]) -> pa.Table:
        """The splits' rows in one table, in split order."""
        return pa.Table.from_batches(list(self.to_arrow_batch_reader(splits)), schema=self.schema)

    def to_pandas(self, splits: List[Any]) -> Any:
        """``to_arrow(splits)`` as a pandas DataFrame (as ``TableRead.to_pandas``)."""
        from paimon_rs.table import _arrow_to_pandas

        return _arrow_to_pandas(self.to_arrow(splits))


#: pypaimon's name of the scan class
AsyncStreamingTableScan = StreamingTableScan

__all__ = ["AsyncStreamingTableScan", "STREAM_ROW_KIND_COLUMN", "StreamReadBuilder", "StreamSplit",
           "StreamTableRead", "StreamingTableScan", "resolved_mode", "snapshot_changes", "snapshot_rows"]
