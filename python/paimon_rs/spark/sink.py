"""The task side of the Data Source writers, batch (``df.write.format("paimon_rs")``) and stream
(``df.writeStream.format("paimon_rs")``): a task's rows through the table's writer (row kinds of
a ``rowkind`` column by runs), its commit messages back to the driver, and the driver's view of
them for ``paimon_rs.spark.commit``; and an aborted job's clean-up."""

import dataclasses
import itertools
from typing import Any, Dict, Iterator, List, Optional, Tuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.datasource import WriterCommitMessage

from paimon_rs.changelog import ROW_KIND_COLUMN
from paimon_rs.exceptions import InvalidArgumentError
from paimon_rs.spark import writer as _writer
from paimon_rs.spark.commit import _sweep, _task_options, withdraw_if_ended
from paimon_rs.spark.common import _conform, _groups_of, _open_cached, _task_context, _with_context
from paimon_rs.spark.dynamic import (
    ASSIGN_ID_COLUMN,
    ASSIGN_ROWS_COLUMN,
    ASSIGN_SNAPSHOT_COLUMN,
    ASSIGN_TASK_COLUMN,
    table_fingerprint,
)
from paimon_rs.table import CommitMessage, Table

_ROW_KINDS = ("+I", "-U", "+U", "-D")


@dataclasses.dataclass
class _TaskMessages(WriterCommitMessage):
    spark_partition: int
    task_attempt_id: int
    #: (partition bytes, bucket, serialized commit message)
    messages: List[Tuple[bytes, int, bytes]] = dataclasses.field(default_factory=list)
    #: a stream write's query (Spark keeps its id in the checkpoint); "" for a batch write
    query_id: str = ""
    #: a dynamic-bucket write: the id of the assign stage its rows came from (``distribute``)
    assign_id: Optional[int] = None
    #: a dynamic-bucket write: assign task -> the rows of it this task received
    assign_rows: Dict[int, int] = dataclasses.field(default_factory=dict)
    #: a dynamic-bucket write: the count rows this task received, (assign task, rows it emitted)
    assign_counts: List[Tuple[int, int]] = dataclasses.field(default_factory=list)


def kind_runs(kinds: pa.Array) -> List[Tuple[int, int, str]]:
    """``(offset, length, kind)`` of each run of equal row kinds, in order; a value that is not
    one of ``+I``/``-U``/``+U``/``-D`` (or null) is refused."""
    if kinds.null_count:
        raise InvalidArgumentError(f"the '{ROW_KIND_COLUMN}' column holds nulls (expected +I, -U, +U or -D)")
    values = np.asarray(kinds.to_pylist(), dtype=object)
    bad = set(values.tolist()) - set(_ROW_KINDS)
    if bad:
        raise InvalidArgumentError(f"the '{ROW_KIND_COLUMN}' column holds {sorted(bad)} (expected +I, -U, +U or -D)")
    if len(values) == 0:
        return []
    starts = [0, *(np.flatnonzero(values[1:] != values[:-1]) + 1).tolist()]
    ends = [*starts[1:], len(values)]
    return [(s, e - s, str(values[s])) for s, e in zip(starts, ends)]


def write_task(table: Table, file_prefix: str, iterator: Iterator[pa.RecordBatch], what: str,
               with_kind: bool = False, query_id: str = "",
               commit_identifier: Optional[int] = None, withdraw_when_ended: bool = False) -> _TaskMessages:
    """One task: every row of ``iterator`` through ``table``'s writer, files named
    ``file_prefix`` + this attempt; ``with_kind``: each row's kind from its ``rowkind`` column
    (runs of one kind written in order); ``commit_identifier``: the identifier of the commit
    its messages go into (a micro-batch's; None: a batch write), which decides whether a
    ``full-compaction`` table compacts its buckets fully; ``withdraw_when_ended``: a task of a
    Data Source write (batch, or a micro-batch of the stream sink), which withdraws (deletes its
    files, returns no message) when the write's driver side already ended
    (``commit.withdraw_if_ended``). Returns the task's commit messages."""
    pid, attempt, tid = _task_context()
    base = _open_cached(table)
    t = base.copy(_task_options(base, f"{file_prefix}p{pid}-a{attempt}-"))
    where = f"{what} into {t.identifier} (Spark partition {pid}, attempt {attempt})"
    names = list(t.arrow_schema.names)
    target = t.arrow_schema
    w = t.new_batch_write_builder().new_write()
    try:
        for b in iterator:
            if b.num_rows == 0:
                continue
            data = b.select(names)
            try:
                data = _conform(data, target, where)
                if not with_kind:
                    w.write_arrow_batch(data)
                    continue
                for offset, length, kind in kind_runs(b.column(ROW_KIND_COLUMN)):
                    w._check_open()
                    w._core.write_stream_kind(pa.Table.from_batches([data.slice(offset, length)]), kind)
            except Exception as e:
                raise _with_context(e, f"{where}, {_groups_of(t, data)}") from e
        msgs = [m for m in w._prepare_commit(commit_identifier) if not m.is_empty()]
    finally:
        w.close()
    if withdraw_when_ended and withdraw_if_ended(base, file_prefix, f"{file_prefix}p{pid}-a{attempt}-"):
        return _TaskMessages(pid, tid, [], query_id)
    return _TaskMessages(pid, tid, [(m.partition, m.bucket, m.to_bytes()) for m in msgs], query_id)


def write_assigned_task(table: Table, file_prefix: str, iterator: Iterator[pa.RecordBatch],
                        what: str, fail_first_attempt_marker: Optional[str] = None) -> _TaskMessages:
    """One task of a Data Source write into a dynamic-bucket table, over rows of
    ``paimon_rs.spark.distribute``'s frame (each with its bucket, the assign stage's snapshot
    and id): ``paimon_rs.spark.write``'s writer task (``writer._write_task``: it restores that
    snapshot and writes the buckets' hash index files, named after this attempt). Rows of two
    assign stages in one task are refused; the driver checks across tasks. A late attempt, run
    when the write's driver side already ended, withdraws (``commit.withdraw_if_ended``)."""
    pid, attempt, tid = _task_context()
    batches = (b for b in iterator if b.num_rows)
    first = next(batches, None)
    if first is None:
        return _TaskMessages(pid, tid)
    snapshot = first.column(ASSIGN_SNAPSHOT_COLUMN)[0].as_py()
    assign_id = first.column(ASSIGN_ID_COLUMN)[0].as_py()
    if assign_id is None or assign_id & 0xFFFFFF != table_fingerprint(table):
        raise InvalidArgumentError(
            f"{what} into {table.identifier}: the frame was made by paimon_rs.spark.distribute for another table "
            "or branch (its buckets and snapshot belong there); distribute the DataFrame for this table")
    names = list(table.arrow_schema.names)
    received: Dict[int, int] = {}
    counts: List[Tuple[int, int]] = []

    def checked() -> Iterator[pa.RecordBatch]:
        for b in itertools.chain([first], batches):
            ids = set(b.column(ASSIGN_ID_COLUMN).unique().to_pylist())
            if ids != {assign_id}:
                raise InvalidArgumentError(
                    f"{what} into {table.identifier}: one task holds rows of two paimon_rs.spark.distribute calls "
                    "(each assigned buckets of its own, so a key could land in two buckets); write one distributed "
                    "frame as it is, nothing was committed")
            # the assign tasks' count rows out, the rows counted per assign task (checked at commit)
            is_count = b.column(ASSIGN_ROWS_COLUMN).is_valid()
            if pc.any(is_count).as_py():
                c = b.filter(is_count)
                counts.extend(zip(c.column(ASSIGN_TASK_COLUMN).to_pylist(), c.column(ASSIGN_ROWS_COLUMN).to_pylist()))
                b = b.filter(pc.invert(is_count))
            for v in pc.value_counts(b.column(ASSIGN_TASK_COLUMN)).to_pylist():
                received[v["values"]] = received.get(v["values"], 0) + v["counts"]
            yield b

    spec = _writer._WriteSpec(table=table, write_id="", file_prefix=file_prefix, columns=names, dynamic=True,
                              dynamic_snapshot=snapshot, what=what,
                              fail_first_attempt_marker=fail_first_attempt_marker)
    out = [r for b in _writer._write_task(spec, checked()) for r in b.to_pylist()]
    if withdraw_if_ended(table, file_prefix, spec.task_prefix(pid, attempt)):
        return _TaskMessages(pid, tid)
    return _TaskMessages(pid, tid, [(r["partition"], r["bucket"], r["message"]) for r in out], assign_id=assign_id,
                         assign_rows=received, assign_counts=counts)


def check_assign_counts(table: Table, messages: List[Optional[WriterCommitMessage]], what: str) -> None:
    """The rows of a distributed frame's assign stage (``distribute``), as the writer tasks
    received them, against the count rows its assign tasks emitted: each assign task's count row
    exactly once, and exactly its rows. Refuses a frame changed between ``distribute`` and the
    write (rows dropped or duplicated), which could, e.g., leave a moved key's old row without its
    -D (a key in two partitions); a frame whose every row was dropped writes nothing and passes."""
    tasks = [m for m in messages if isinstance(m, _TaskMessages) and m.assign_id is not None]
    if not tasks:
        return
    n = (tasks[0].assign_id >> 24) & 0xFFFF
    received: Dict[int, int] = {}
    counts: Dict[int, List[int]] = {}
    for m in tasks:
        for k, v in m.assign_rows.items():
            received[k] = received.get(k, 0) + v
        for k, v in m.assign_counts:
            counts.setdefault(k, []).append(v)
    bad = []
    for k in sorted(set(range(n)) | set(received) | set(counts)):
        got, emitted = received.get(k, 0), counts.get(k, [])
        if len(emitted) != 1 or emitted[0] != got:
            said = ("its count row is missing" if not emitted else
                    f"its count row came {len(emitted)} times" if len(emitted) > 1 else f"it emitted {emitted[0]}")
            bad.append(f"assign task {k}: the writers received {got} row(s), {said}")
    if bad:
        raise InvalidArgumentError(
            f"{what} into {table.identifier}: the frame paimon_rs.spark.distribute made was changed before it was "
            f"saved ({'; '.join(bad[:5])}{'; ...' if len(bad) > 5 else ''}): rows the assign stage routed were "
            "dropped or duplicated (a filter, limit, sample, distinct or union after distribute), which can leave a "
            "key in two buckets or partitions; filter the DataFrame before distribute and save its frame as it is. "
            "Nothing was committed")


def message_rows(messages: List[Optional[WriterCommitMessage]]) -> List[Dict[str, Any]]:
    """The tasks' messages as the rows ``commit._choose_attempts`` takes."""
    return [
        {"spark_partition": m.spark_partition, "task_attempt_id": m.task_attempt_id, "partition": p,
         "bucket": b, "message": raw}
        for m in messages if isinstance(m, _TaskMessages) for (p, b, raw) in m.messages
    ]


def abort_job(table: Table, messages: List[Optional[WriterCommitMessage]], file_prefix: str) -> None:
    """A failed job: its files go (``abort`` never deletes one a snapshot references)."""
    t = _open_cached(table)
    msgs = [CommitMessage.from_bytes(r["message"]) for r in message_rows(messages)]
    if msgs:
        t.new_batch_write_builder().new_commit().abort(msgs)
    _sweep(t, file_prefix, set())
