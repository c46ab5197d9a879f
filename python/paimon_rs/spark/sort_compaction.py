"""``sort_compact``: sort compaction on Spark (issue #28; Java's Spark ``CompactProcedure`` with
``order_strategy`` / ``order_by``). The driver plans the selected partitions' files at the latest
snapshot; Spark reads exactly that snapshot, a ``mapInArrow`` adds each row's sort key (Java's
z-order / hilbert index bytes, or the comparable encoding of the order columns), Spark's own
``repartitionByRange`` samples the key and range-partitions the rows (partition columns first),
``sortWithinPartitions`` sorts each task's rows, and each task writes them in that order with
the table's writer (files named per task attempt). The driver collects the messages once, keeps
one attempt per task (the others' files are deleted) and commits one OVERWRITE snapshot that
removes exactly the files it planned (``commit_rewrite``): an append committed meanwhile stays,
a commit that removed one of those files fails the job with ``CommitConflictError`` and the
written files are deleted."""

import uuid
from dataclasses import dataclass
from typing import Any, Dict, Iterator, List, Optional

import pyarrow as pa

from paimon_rs import _core
from paimon_rs.spark.commit import (
    _MESSAGE_SCHEMA,
    _choose_attempts,
    _collect_settled,
    _sweep,
    _task_options,
)
from paimon_rs.spark.common import _open_cached, _task_context, _with_context
from paimon_rs.spark.compaction import _message_batch, _partition_specs
from paimon_rs.spark.reader import read
from paimon_rs.table import BATCH_COMMIT_IDENTIFIER, Table

#: the sort key column the job adds (and drops before writing)
SORT_KEY_COLUMN = "_paimon_rs_sort_key"


@dataclass
class _SortSpec:
    """What the tasks need: small and picklable."""

    table: Table
    strategy: str
    order_by: List[str]
    file_prefix: str
    #: test hook: a path; while it exists, the first attempt of every write task fails after writing
    fail_first_attempt_marker: Optional[str] = None

    def task_prefix(self, spark_partition: int, attempt: int) -> str:
        return f"{self.file_prefix}p{spark_partition}-a{attempt}-"


def _conform(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    """``batch`` (Spark's Arrow types) as the table's Arrow schema."""
    cols = [batch.column(f.name).cast(f.type) for f in schema]
    return pa.RecordBatch.from_arrays(cols, schema=schema)


def _key_task(spec: _SortSpec) -> Any:
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        t = _open_cached(spec.table)
        schema = t.arrow_schema
        for b in batches:
            keys = t._core.sort_index(spec.strategy, spec.order_by, _conform(b, schema))
            yield b.append_column(SORT_KEY_COLUMN, pa.array(keys, pa.binary()))

    return run


def _write_task(spec: _SortSpec) -> Any:
    import os

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        pid, attempt, task_attempt_id = _task_context()
        t = _open_cached(spec.table)
        t = t.copy(_task_options(t, spec.task_prefix(pid, attempt)))
        schema = t.arrow_schema
        where = f"paimon_rs.spark.sort_compact of {t.identifier} (Spark partition {pid}, attempt {attempt})"
        w = t.new_batch_write_builder().new_write()
        try:
            for b in batches:
                if b.num_rows:
                    w.write_arrow_batch(_conform(b, schema))
            msgs = [m.to_bytes() for m in w.prepare_commit() if not m.is_empty()]
        except Exception as e:
            raise _with_context(e, where) from e
        finally:
            w.close()
        if spec.fail_first_attempt_marker and attempt == 0 and os.path.exists(spec.fail_first_attempt_marker):
            raise RuntimeError(f"{where}: injected failure after writing (test hook)")
        if msgs:
            yield _message_batch(pid, attempt, task_attempt_id, msgs)

    return run


def sort_compact(spark: Any, table: Table, order_strategy: str, order_by: List[str],
                 partitions: Optional[List[Dict[str, Any]]] = None, *, num_partitions: Optional[int] = None,
                 _fail_first_attempt_marker: Optional[str] = None) -> Optional[int]:
    """Sort-compact ``table`` on Spark (see :meth:`paimon_rs.Table.sort_compact` for the
    strategies and what is refused) and commit one OVERWRITE snapshot; returns its id (None if
    the selected partitions hold no file).

    The rows are range-partitioned by (partition columns, sort key) into ``num_partitions``
    tasks (default ``spark.sql.shuffle.partitions``) with Spark's ``repartitionByRange``, sorted
    within each task and written in that order, so each task's files hold one stretch of the
    curve. Exactly once: one attempt per task is committed, the files of failed, retried and
    speculative attempts are deleted; a failed job, or a commit that conflicts (another commit
    removed files this one rewrites: ``CommitConflictError``), leaves the table as it was."""
    if not isinstance(table, Table):
        raise TypeError("table must be a paimon_rs Table (catalog.get_table(...))")
    specs = _partition_specs(table, partitions, "sort_compact")
    order_by = [str(c) for c in order_by]
    plan = _core.sort_compaction_plan(table._core, order_strategy, order_by, specs)
    if plan is None or not plan[1]:
        return None
    snapshot_id, items = plan
    filt = None
    if partitions is not None:
        pb = table.new_read_builder().new_predicate_builder()
        filt = pb.or_predicates([pb.and_predicates([pb.equal(k, v) for k, v in p.items()]) for p in partitions])
    file_prefix = f"{table.options.get('data-file.prefix', 'data-')}sort-{uuid.uuid4().hex}-"
    spec = _SortSpec(table=table, strategy=order_strategy, order_by=order_by, file_prefix=file_prefix,
                     fail_first_attempt_marker=_fail_first_attempt_marker)
    from pyspark.sql.types import BinaryType, StructField, StructType

    df = read(spark, table, filter=filt, snapshot_id=snapshot_id, spark_parquet=False)
    keyed_schema = StructType(df.schema.fields + [StructField(SORT_KEY_COLUMN, BinaryType(), True)])
    keyed = df.mapInArrow(_key_task(spec), keyed_schema)
    n = int(num_partitions or spark.conf.get("spark.sql.shuffle.partitions"))
    cols = [*table.partition_keys, SORT_KEY_COLUMN]
    ordered = keyed.repartitionByRange(n, *cols).sortWithinPartitions(*cols).drop(SORT_KEY_COLUMN)
    try:
        got = _collect_settled(spark, ordered.mapInArrow(_write_task(spec), _MESSAGE_SCHEMA).collect)
        collected = _choose_attempts(got, False, table)
        messages = _core.sort_compaction_messages(table._core, list(items), collected.messages)
    except BaseException:
        _sweep(table, file_prefix, set())
        raise
    builder = table.new_batch_write_builder()
    builder.with_commit_user(f"sort-compact-{uuid.uuid4()}")
    commit = builder.new_commit()
    try:
        sid = commit._core.commit_rewrite(messages, BATCH_COMMIT_IDENTIFIER)
    except BaseException:
        commit._core.abort(messages)  # never deletes a file a snapshot references
        _sweep(table, file_prefix, set())
        raise
    _sweep(table, file_prefix, collected.files)
    return sid
