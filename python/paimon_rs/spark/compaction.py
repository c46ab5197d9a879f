"""``compact``: the driver plans the buckets, one task per bucket compacts it, the driver
commits one COMPACT snapshot (exactly once, as ``write``)."""

import os
import uuid
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterator, List, Optional

import pyarrow as pa

from paimon_rs import _core
from paimon_rs.exceptions import InvalidArgumentError, UnsupportedError
from paimon_rs.spark.commit import (
    _MESSAGE_SCHEMA,
    _collect_and_commit,
    _task_options,
)
from paimon_rs.spark.common import _open_cached, _task_context, _with_context
from paimon_rs.table import CommitMessage, Table


@dataclass
class _CompactSpec:
    """What a compaction task needs: small and picklable."""

    table: Table
    full: bool
    file_prefix: str
    #: test hook: a path; while it exists, the first attempt of every task fails after compacting
    fail_first_attempt_marker: Optional[str] = None

    def task_prefix(self, spark_partition: int, attempt: int) -> str:
        return f"{self.file_prefix}p{spark_partition}-a{attempt}-"


def _compact_task(spec: _CompactSpec, table: Table, item: bytes, spark_partition: int,
                  attempt: int) -> List[CommitMessage]:
    """One bucket compacted by this task attempt (files named with the attempt's prefix)."""
    t = table.copy(_task_options(table, spec.task_prefix(spark_partition, attempt)))
    split = _core.Split.from_bytes(item)
    where = (f"paimon_rs.spark.compact of {t.identifier} ({split.bucket_path}, Spark partition "
             f"{spark_partition}, attempt {attempt})")
    try:
        msg = _core.compact_bucket(t._core, item, spec.full)
    except Exception as e:
        raise _with_context(e, where) from e
    if spec.fail_first_attempt_marker and attempt == 0 and os.path.exists(spec.fail_first_attempt_marker):
        raise RuntimeError(f"{where}: injected failure after compacting (test hook)")
    return [] if msg is None else [msg]


def compact(spark: Any, table: Table, full: bool = False, partitions: Optional[List[Dict[str, Any]]] = None, *,
            _fail_first_attempt_marker: Optional[str] = None) -> Optional[int]:
    """Compact ``table`` from Spark and commit one COMPACT snapshot; returns its id (None if
    nothing needed compacting).

    The driver plans: the buckets the table's universal compaction picker would compact now
    (``num-sorted-run.compaction-trigger``, ``compaction.size-ratio``, ...; append tables: their
    small files), or with ``full=True`` every bucket that is not already one sorted run at
    the top level (merged into one run there, as Java's full compaction). ``partitions``
    (``[{"dt": "2024-01-01"}, ...]``, partition keys only, a prefix of them allowed) limits it to
    the buckets of the partitions matching one of the specs, as the ``partitions`` argument of
    Java's compact procedure; other partitions are left as they are. Each bucket is one Spark task, which
    rewrites its files and returns a commit message; the driver commits them all at once.
    Exactly once as ``write``: one attempt per task is committed, the files of failed, retried
    and speculative attempts are deleted, a failed job or a conflicting commit (another writer
    removed the inputs: ``CommitConflictError``) leaves the table as it was."""
    if not isinstance(table, Table):
        raise TypeError("table must be a paimon_rs Table (catalog.get_table(...))")
    if table.total_buckets == -2 and table.primary_keys:
        raise UnsupportedError(
            f"paimon_rs.spark.compact of {table.identifier}: a postpone-bucket table (bucket = -2); "
            "compact it with table.compact(), which moves bucket-postpone into real buckets")
    specs = _partition_specs(table, partitions, "compact")
    work = list(_core.compaction_work(table._core, bool(full), specs))
    if not work:
        return None
    file_prefix = f"{table.options.get('data-file.prefix', 'data-')}compact-{uuid.uuid4().hex}-"
    spec = _CompactSpec(table=table, full=bool(full), file_prefix=file_prefix,
                        fail_first_attempt_marker=_fail_first_attempt_marker)
    builder = table.new_batch_write_builder()
    builder.with_commit_user(f"compact-{uuid.uuid4()}")
    return _run_bucket_tasks(spark, table, work, _bind_compact(spec), builder, file_prefix,
                             f"paimon_rs.spark.compact of {table.identifier}")


def _partition_specs(table: Table, partitions: Optional[List[Dict[str, Any]]], what: str) -> Optional[List[Any]]:
    """``partitions`` (``[{column: value}, ...]``) as the one-row batches the engine takes."""
    if partitions is None:
        return None
    from paimon_rs.table import _partition_batch

    if isinstance(partitions, dict):
        raise InvalidArgumentError(f"paimon_rs.spark.{what}: partitions is a list of {{column: value}} dicts")
    return [_partition_batch(table.arrow_schema, p, what) for p in partitions]


def _message_batch(pid: int, attempt: int, task_attempt_id: int, messages: List[bytes]) -> pa.RecordBatch:
    """A task attempt's serialized commit messages as rows of ``_MESSAGE_SCHEMA`` (partition and
    bucket left out: one task owns what it wrote)."""
    n = len(messages)
    return pa.RecordBatch.from_pydict({
        "spark_partition": pa.array([pid] * n, pa.int32()),
        "attempt": pa.array([attempt] * n, pa.int32()),
        "task_attempt_id": pa.array([task_attempt_id] * n, pa.int64()),
        "bucket": pa.array([0] * n, pa.int32()),
        "partition": pa.array([b""] * n, pa.binary()),
        "message": pa.array(messages, pa.binary()),
    })


def _bind_compact(spec: _CompactSpec) -> Callable[[Table, bytes, int, int], List[CommitMessage]]:
    def task(table: Table, item: bytes, spark_partition: int, attempt: int) -> List[CommitMessage]:
        return _compact_task(spec, table, item, spark_partition, attempt)

    return task


def _run_bucket_tasks(spark: Any, table: Table, work: List[bytes],
                      task: Callable[[Table, bytes, int, int], List[CommitMessage]],
                      builder: Any, file_prefix: str, what: str) -> Optional[int]:
    """Run ``task(table, item, spark_partition, attempt)`` for each serialized per-bucket work
    item, one Spark task each (it names its files ``file_prefix`` + attempt), collect the commit
    messages once, keep one attempt per task and commit them as one snapshot; then delete every
    file named ``file_prefix*`` the commit did not take."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        pid, attempt, task_attempt_id = _task_context()
        t = _open_cached(table)
        out: List[bytes] = []
        for b in batches:
            for item in b.column("item").to_pylist():
                out.extend(m.to_bytes() for m in task(t, item, pid, attempt) if not m.is_empty())
        if out:
            yield _message_batch(pid, attempt, task_attempt_id, out)

    rows = list(enumerate(work))
    idx = spark.createDataFrame(spark.sparkContext.parallelize(rows, len(rows)), "i int, item binary")
    return _collect_and_commit(spark, idx.mapInArrow(run, _MESSAGE_SCHEMA).collect, False, table, builder,
                               file_prefix)
