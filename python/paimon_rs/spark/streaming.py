"""Spark Structured Streaming through PySpark's Python Data Source streaming API (Spark >= 4.0).

Read, ``spark.readStream.format("paimon_rs_audit_log").load(path)``: the table's changes, each
row with its row kind first in ``rowkind`` (``+I``/``-U``/``+U``/``-D``, as
``paimon_rs.changelog`` and Java's ``audit_log`` name it). Offsets are snapshot ids
(``{"snapshot": id, "full": bool}``: every change up to snapshot ``id`` delivered; ``full``: the
full state of ``id`` not yet). The first micro-batch follows ``scan.mode``:

- ``latest-full`` (default; also ``default``, ``full``): the latest snapshot's rows as ``+I``,
  then each later snapshot's changes, as Java's streaming read;
- ``latest``: only the changes of snapshots committed after the query started;
- ``from-snapshot`` (``scan.snapshot-id`` = s): the changes of snapshot s and later;
- ``from-snapshot-full``: the rows of snapshot s as ``+I``, then the changes after it.

A snapshot's changes are its changelog files where the table has a ``changelog-producer``
(``incremental-between-scan-mode`` = ``changelog``, what ``Table.changelog`` returns), else its
delta files (``delta``: the data files an APPEND snapshot added; COMPACT and OVERWRITE snapshots
bring no rows), as Java's ``auto``; the option ``incremental-between-scan-mode`` chooses one.
A snapshot that expired while the table's changelog retention (``changelog.num-retained.*`` /
``changelog.time-retained``) outlives its snapshots is read from its long-lived changelog
(``changelog/changelog-<id>``), as Java's streaming read does (``from-snapshot`` below the
earliest changelog is refused as expired, where Java starts at the earliest one).
Each micro-batch is one Spark partition per bucket (partition directory and bucket), planned on
the driver: that bucket's splits in snapshot order, read on the executors by the engine
(``paimon_rs.spark.reader._read_split``, as every other read), so a key's changes keep their
order. ``consumer-id``: when the query commits a micro-batch the source writes
``<table>/consumer/consumer-<id>`` (``{"nextSnapshot": N}``, Java's format, written atomically:
``paimon_rs.consumer``); a query started without a checkpoint resumes from it
(``consumer.ignore-progress`` = true: not), and expiry keeps the snapshots it still needs.
With a checkpoint, Spark's offsets decide. ``trigger(availableNow=True)`` reads up to the
snapshot that was the latest when the query started.

Write, ``df.writeStream.format("paimon_rs").option("checkpointLocation", ...).start(path)``:
each micro-batch is one commit whose commit identifier is the batch id, under the commit user
``spark-stream-<query id>`` (Spark keeps the query id in the checkpoint): a batch that a
restarted query runs again finds its identifier committed and commits nothing, deleting the
files it wrote. A ``rowkind`` column that the table does not have carries each row's kind into a
primary-key table (``-D``/``-U`` retract, ``+I``/``+U`` add), written in the order the task
receives them; an append table refuses it. As the Data Source's batch write, each task writes
the rows it has: a bucketed table's stream is passed through ``paimon_rs.spark.distribute``
first (a primary-key bucket written by two tasks is refused and nothing is committed). A
dynamic-bucket or cross-partition upsert table is refused when the query starts, before a task
writes: a sink cannot shuffle, so it cannot assign buckets; ``foreachBatch`` calling
``paimon_rs.spark.write(batch, table, commit_user=<one per query>, commit_identifier=batch_id)``
writes each micro-batch exactly once (a replayed batch finds its identifier committed).
"""

import dataclasses
import uuid
from collections import OrderedDict
from typing import Any, Iterator, List, Mapping, Optional, Sequence, Tuple

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSourceStreamArrowWriter,
    DataSourceStreamReader,
    InputPartition,
    WriterCommitMessage,
)

from paimon_rs import _core
from paimon_rs import consumer as consumers
from paimon_rs.changelog import ROW_KIND_COLUMN
from paimon_rs.exceptions import InvalidArgumentError, UnsupportedError
from paimon_rs.spark import reader as _reader_mod
from paimon_rs.spark.commit import _choose_attempts, _commit_collected, _sweep, mark_ended
from paimon_rs.spark.common import (
    _arrow_target,
    _open_cached,
    spark_schema_of,
)
from paimon_rs.spark.dynamic import is_dynamic
from paimon_rs.spark.reader import _read_split
from paimon_rs.spark.sink import _TaskMessages, abort_job, message_rows, write_task
from paimon_rs.stream_read import parse_between_mode, parse_start, resolved_mode, snapshot_changes, snapshot_rows
from paimon_rs.table import Table

try:  # Spark >= 4.1
    from pyspark.sql.streaming.datasource import SupportsTriggerAvailableNow
except ImportError:  # pragma: no cover (Spark 4.0: availableNow runs as a plain trigger)
    class SupportsTriggerAvailableNow:  # type: ignore[no-redef]
        """Stand-in where Spark has no availableNow support for Python sources."""

#: the read options the streaming source takes; every other one is refused
READ_OPTIONS = ("path", "columns", "scan.mode", "scan.snapshot-id", "consumer-id", "consumer.ignore-progress",
                "incremental-between-scan-mode")


#: the task-local property Spark sets to the micro-batch id, and the one holding the query id
_BATCH_ID_PROP = "streaming.sql.batchId"
_QUERY_ID_PROP = "sql.streaming.queryId"



# ---------------------------------------------------------------------------------------------
# read


@dataclasses.dataclass
class _ReadOptions:
    path: str
    columns: Optional[List[str]]
    full_first: bool
    start_snapshot: Optional[int]
    consumer_id: Optional[str]
    ignore_progress: bool
    mode: str


def read_options(options: Mapping[str, str]) -> _ReadOptions:
    """The streaming read's options, checked: nothing is ignored."""
    opts = {str(k): str(v) for k, v in options.items()}
    path = opts.get("path")
    if not path:
        raise InvalidArgumentError("format('paimon_rs_audit_log') needs a table path: .load(path)")
    bad = sorted(k for k in opts if k not in READ_OPTIONS)
    if bad:
        raise InvalidArgumentError(
            f"format('paimon_rs_audit_log') streaming read: option(s) {bad} are not taken (it takes "
            f"{', '.join(READ_OPTIONS)}); nothing is ignored")
    what = "format('paimon_rs_audit_log') streaming read"
    full_first, start = parse_start(what, opts.get("scan.mode"), opts.get("scan.snapshot-id"))
    mode = parse_between_mode(what, opts.get("incremental-between-scan-mode"))
    ignore = opts.get("consumer.ignore-progress", "false").strip().lower()
    if ignore not in ("true", "false"):
        raise InvalidArgumentError(f"format('paimon_rs_audit_log'): consumer.ignore-progress is true or "
                                   f"false, not {ignore!r}")
    cols = opts.get("columns")
    columns = [c.strip() for c in cols.split(",") if c.strip()] if cols else None
    consumer_id = opts.get("consumer-id") or None
    if consumer_id is not None:
        consumers.check_id(consumer_id)
    return _ReadOptions(path, columns, full_first, start, consumer_id, ignore == "true", mode)


def _data_schema(table: Table, columns: Optional[List[str]]) -> pa.Schema:
    """The Arrow schema of the table's columns a streaming read gives (after ``rowkind``)."""
    return table._core.new_read(columns, None).output_schema()


def audit_log_schema(table: Table, columns: Optional[List[str]] = None) -> Any:
    """The Spark schema of a streaming read: ``rowkind`` (string, not null) then the columns."""
    from pyspark.sql.types import StringType, StructField, StructType

    data = spark_schema_of(_data_schema(table, columns))
    if ROW_KIND_COLUMN in data.names:
        raise UnsupportedError(f"{table.identifier} has a column named '{ROW_KIND_COLUMN}', the streaming "
                               "read's row kind column")
    return StructType([StructField(ROW_KIND_COLUMN, StringType(), False), *data.fields])


class _Bucket(InputPartition):
    """One bucket's work in a micro-batch: ``(kind, serialized split)`` in snapshot order, kind
    ``full`` (rows of a snapshot, as ``+I``) or ``incr`` (a snapshot's changes)."""

    def __init__(self, items: List[Tuple[str, bytes]]):
        super().__init__(items)


class PaimonRsStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """The streaming read of a table's changes (the module's doc has the semantics)."""

    def __init__(self, options: _ReadOptions, schema: Any):
        self.options = options
        self.table = Table.open(options.path)
        names = [f.name for f in schema.fields]
        self.columns = names[1:] if names[1:] != list(self.table.arrow_schema.names) else None
        self.mode = resolved_mode(self.table, options.mode)
        # a handle whose reads yield row kinds; the range itself is given by each split
        self.incremental = self.table.copy({"incremental-between": "0,1", "incremental-between-scan-mode": self.mode})
        self.target = _arrow_target(schema, False)
        self.data_target = pa.schema([f for f in self.target if f.name != ROW_KIND_COLUMN])
        self.available_now: Optional[int] = None
        #: the consumer's next snapshot as last written by this reader
        self.recorded: Optional[int] = None

    # -- driver: offsets and planning --------------------------------------------------------

    def _latest(self) -> int:
        latest = Table.open(self.options.path).latest_snapshot_id()  # a fresh handle: no cache
        return 0 if latest is None else int(latest)

    def initialOffset(self) -> dict:
        """Where a query without a checkpoint starts: the consumer's progress, else
        ``scan.mode``."""
        o = self.options
        if o.consumer_id is not None and not o.ignore_progress:
            nxt = consumers.next_snapshot(self.table, o.consumer_id)
            if nxt is not None:
                return {"snapshot": nxt - 1, "full": False}
        if o.start_snapshot is not None:
            if o.full_first:
                return {"snapshot": o.start_snapshot, "full": True}
            return {"snapshot": o.start_snapshot - 1, "full": False}
        latest = self._latest()
        return {"snapshot": latest, "full": o.full_first and latest > 0}

    def prepareForTriggerAvailableNow(self) -> None:
        """``trigger(availableNow=True)``: read up to the snapshot that is the latest now."""
        self.available_now = self._latest()

    def latestOffset(self, start: dict, limit: Any) -> dict:
        """Every snapshot up to the latest (or availableNow's target); ``start`` when nothing new.

        Spark asks only once the micro-batch ending at ``start`` is processed and committed, so
        the consumer (if any) moves to ``start`` here too: Spark calls ``commit(end)`` for a
        batch only when it plans the next one, never for the last batch of an availableNow
        query or of a stopped one."""
        if not start.get("full"):
            self._record(start)
        latest = self._latest() if self.available_now is None else self.available_now
        end = max(latest, int(start["snapshot"]))
        if end == int(start["snapshot"]) and not start.get("full"):
            return start
        return {"snapshot": end, "full": False}

    def partitions(self, start: dict, end: dict) -> Sequence[InputPartition]:
        """One partition per bucket: its splits of the full read (``full``) and of every
        snapshot in (start, end], in that order."""
        buckets: OrderedDict[Tuple[Any, ...], List[Tuple[str, bytes]]] = OrderedDict()

        def add(kind: str, splits: Sequence[Any]) -> None:
            for s in splits:
                buckets.setdefault((s.bucket_path,), []).append((kind, s.to_bytes()))

        first = int(start["snapshot"])
        if start.get("full") and first > 0:
            add("full", snapshot_rows(self.table, first)[1])
        table = Table.open(self.options.path)
        for s in range(first + 1, int(end["snapshot"]) + 1):
            add("incr", snapshot_changes(table, s, self.mode))
        return [_Bucket(items) for items in buckets.values()]

    def commit(self, end: dict) -> None:
        """Spark is done with every offset up to ``end``: the consumer (if any) moves on."""
        self._record(end)

    def _record(self, done: dict) -> None:
        """The consumer's next snapshot: the one after ``done`` (every change up to it read)."""
        nxt = int(done["snapshot"]) + 1
        if self.options.consumer_id is None or nxt == self.recorded:
            return
        consumers.write_next_snapshot(self.table, self.options.consumer_id, nxt)
        self.recorded = nxt

    # -- executors ---------------------------------------------------------------------------

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """One bucket's rows of the micro-batch, row kind first, in snapshot order."""
        full = _open_cached(self.table)
        incr = _open_cached(self.incremental)
        readers = {"full": full._core.new_read(self.columns, None), "incr": incr._core.new_read(self.columns, None)}
        has_kind = {k: ROW_KIND_COLUMN in r.output_schema().names for k, r in readers.items()}
        ahead = _reader_mod._DECODE_AHEAD
        for kind, raw in partition.value:
            t = full if kind == "full" else incr
            if has_kind[kind]:
                yield from _read_split(t, readers[kind], raw, self.target, ahead, "paimon_rs_audit_log read")
                continue
            for b in _read_split(t, readers[kind], raw, self.data_target, ahead, "paimon_rs_audit_log read"):
                kinds = pa.array(["+I"] * b.num_rows, pa.string())
                yield pa.RecordBatch.from_arrays([kinds, *b.columns], schema=self.target)


# ---------------------------------------------------------------------------------------------
# write


class PaimonRsStreamWriter(DataSourceStreamArrowWriter):
    """Each micro-batch one commit, its identifier the batch id (the module's doc)."""

    def __init__(self, table: Table, schema: Any):
        self.table = table
        if is_dynamic(table):
            raise UnsupportedError(
                f"format('paimon_rs') stream write into {table.identifier}, a dynamic-bucket table (bucket = -1"
                + (", primary key without a partition key" if table.cross_partition_update else "") + "): a "
                "streaming sink cannot shuffle, so it cannot assign buckets (each micro-batch needs the index the "
                "previous one committed); write each micro-batch with df.writeStream.foreachBatch(lambda batch, "
                "batch_id: paimon_rs.spark.write(batch, table, commit_user=<one per query>, "
                "commit_identifier=batch_id)), exactly once: a replayed batch lands nothing")
        names = [f.name for f in schema.fields]
        table_names = list(table.arrow_schema.names)
        self.with_kind = ROW_KIND_COLUMN in names and ROW_KIND_COLUMN not in table_names
        if self.with_kind and not table.primary_keys:
            raise UnsupportedError(
                f"format('paimon_rs') stream write into {table.identifier}: a '{ROW_KIND_COLUMN}' column carries "
                "row kinds, which only a primary-key table takes (an append table keeps every row); drop it")
        if self.with_kind and table.options.get("rowkind.field"):
            raise InvalidArgumentError(
                f"format('paimon_rs') stream write into {table.identifier}: the table takes row kinds from its "
                f"column '{table.options.get('rowkind.field')}' (rowkind.field); a '{ROW_KIND_COLUMN}' column too is "
                "ambiguous")
        from paimon_rs.spark.shuffle import WRITE_KEY_COLUMN

        extra = [n for n in names if n not in table_names and n not in (ROW_KIND_COLUMN, WRITE_KEY_COLUMN)]
        missing = [n for n in table_names if n not in names]
        if extra or missing:
            raise InvalidArgumentError(
                f"format('paimon_rs') stream write into {table.identifier}: the stream's columns do not match the "
                "table's" + (f"; missing {missing}" if missing else "")
                + (f"; not in the table {extra}" if extra else ""))
        self.base_prefix = f"{table.options.get('data-file.prefix', 'data-')}stream-"
        #: this run of the query: a batch run again after a restart writes files of another
        #: prefix, so cleaning up after it never touches the files the first run committed
        self.run = uuid.uuid4().hex[:12]

    def _prefix(self, query_id: str, batch_id: str) -> str:
        """The data file prefix of every task attempt of one micro-batch of one run of a query."""
        return f"{self.base_prefix}{query_id}-{self.run}-b{batch_id}-"

    def write(self, iterator: Iterator[pa.RecordBatch]) -> _TaskMessages:
        """One task: its rows through the table's writer (row kinds by runs), its messages back."""
        from pyspark import TaskContext

        ctx = TaskContext.get()
        batch_id = (ctx.getLocalProperty(_BATCH_ID_PROP) if ctx else None) or "x"
        query_id = (ctx.getLocalProperty(_QUERY_ID_PROP) if ctx else None) or uuid.uuid4().hex
        # the micro-batch's commit carries the batch id: a full-compaction table's writers
        # compact fully on every full-compaction.delta-commits-th one (as Flink's sink counts
        # checkpoints, paimon-behaviour.md §9.4)
        ident = int(batch_id) if batch_id.isdigit() else None
        return write_task(self.table, self._prefix(query_id, batch_id), iterator,
                          f"format('paimon_rs') stream write (batch {batch_id})", self.with_kind, query_id,
                          ident, withdraw_when_ended=True)

    @staticmethod
    def _query_id(messages: List[Optional[WriterCommitMessage]]) -> Optional[str]:
        ids = {m.query_id for m in messages if isinstance(m, _TaskMessages)}
        if len(ids) > 1:
            raise InvalidArgumentError(f"one micro-batch's tasks ran for queries {sorted(ids)}")
        return ids.pop() if ids else None

    def commit(self, messages: List[Optional[WriterCommitMessage]], batchId: int) -> None:
        """One commit of the micro-batch, identifier ``batchId``; nothing if it already landed."""
        query_id = self._query_id(messages)
        if query_id is None:
            return  # no task ran: nothing to commit
        table = _open_cached(self.table)
        prefix = self._prefix(query_id, str(batchId))
        # as the batch Data Source's commit: no SparkContext here to wait for a speculative
        # attempt still running, so mark this run's micro-batch ended before any listing of its
        # files; an attempt ending later deletes its own (the prefix is this run's: a replay of
        # the batch after a restart writes other names and has a marker of its own)
        mark_ended(table, prefix)
        builder = table.new_batch_write_builder()
        builder.with_commit_user(stream_commit_user(query_id))
        rows = message_rows(messages)
        try:
            collected = _choose_attempts(rows, bool(table.primary_keys), table)
        except BaseException:
            _sweep(table, prefix, set())
            raise
        if builder.new_commit()._core.committed_snapshot(batchId) is not None:
            # a batch run again after it committed (the query restarted before Spark recorded it)
            builder.new_commit()._core.abort(collected.messages)
            _sweep(table, prefix, set())
            return
        # a full compaction's micro-batch also compacts the buckets this query wrote earlier in
        # the full-compaction.delta-commits window and not now (Flink's
        # GlobalFullCompactionSinkWrite keeps them in its state; ours is the table's snapshots),
        # so its snapshot holds every bucket's changelog (paimon-behaviour.md §9.4)
        try:
            collected.messages.extend(_core.compact_full_window(
                table._core, stream_commit_user(query_id), batchId,
                [(m.partition, m.bucket) for m in collected.messages]))
        except BaseException:
            builder.new_commit()._core.abort(collected.messages)
            _sweep(table, prefix, set())
            raise
        if not collected.messages:
            _sweep(table, prefix, set())
            return  # an empty micro-batch: no snapshot
        _commit_collected(table, builder, collected, prefix, batchId)

    def abort(self, messages: List[Optional[WriterCommitMessage]], batchId: int) -> None:
        """The micro-batch failed: its files go (never one a snapshot references)."""
        query_id = self._query_id(messages)
        if query_id is not None:
            prefix = self._prefix(query_id, str(batchId))
            mark_ended(_open_cached(self.table), prefix)
            abort_job(self.table, messages, prefix)


def stream_commit_user(query_id: str) -> str:
    """The commit user of a streaming write: stable over the restarts of one query (its id is in
    the checkpoint), so a batch id committed before is found."""
    return f"spark-stream-{query_id}"


__all__ = ["PaimonRsStreamReader", "PaimonRsStreamWriter", "READ_OPTIONS", "audit_log_schema", "read_options",
           "stream_commit_user"]
