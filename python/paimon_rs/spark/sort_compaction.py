"""``sort_compact``: sort compaction on Spark (issue #28; Java's Spark ``CompactProcedure`` with
``order_strategy`` / ``order_by``). The driver plans the selected partitions' files at the latest
snapshot; Spark reads exactly that snapshot, a ``mapInArrow`` adds each row's sort key (Java's
z-order / hilbert index bytes, or the comparable encoding of the order columns), Spark's own
``repartitionByRange`` samples the key and range-partitions the rows (partition columns first),
``sortWithinPartitions`` sorts each task's rows, and each task writes each table partition's
share of them, held whole with the key, into files cut at curve cells as the local sort cuts a
partition (``_core.sort_write_run``, core ``write_sorted_run``: target-file-size x [3/4, 5/4] at
the highest key bit that changes; files named per task attempt). The range bounds are Spark's,
not snapped to cells. The driver collects the messages once, keeps
one attempt per task (the others' files are deleted) and commits one OVERWRITE snapshot that
removes exactly the files it planned (``commit_rewrite``): an append committed meanwhile stays,
a commit that removed one of those files fails the job with ``CommitConflictError`` and the
written files are deleted.

A dynamic-bucket primary-key table (``bucket = -1``; paimon-behaviour.md §16, as the local
``Table.sort_compact``, core compact/sort_compact.rs): Spark reads the planned splits (one per
bucket of the selected partitions at the pinned snapshot, every level, a deletion-vector table's
vectors attached) merged (one row per key, deleted rows left out), range-partitions and sorts
them as above into ``n``
tasks, and each task assigns its rows fresh buckets in that order, as the local overwrite writer
does with one assigner: per table partition, buckets ``task, task + n, task + 2n, ...`` each
cut at curve cells within ``dynamic-bucket.target-row-num`` x [1/2, 1] (``_core.sort_key_buckets``,
as the local sort cuts its buckets; so each bucket holds whole cells of one stretch of the curve). A
key is one row of the merged read, so it lands in one task and one bucket, and no two tasks open
the same bucket (``b % n`` is the task). The task writes its buckets itself with ``write``'s
overwrite writer (``writer._write_task``: previous files and hash index ignored, a fresh HASH
index file per bucket named after the attempt), so no second shuffle is needed and a retried
attempt may assign differently (ties in the sort key): only one attempt's files are committed.
The driver commits one OVERWRITE of the partitions written (``dynamic-partition-overwrite =
false``: the whole table, so a selection of partitions is refused), exactly as the local path
(``_core.sort_compaction_commit``): it must replace exactly the planned data files and those
partitions' index files (hash index, deletion vectors), so any commit into them since the plan
(an upsert, a delete, a compaction; Java's overwrite would replace it and lose the rows) makes
the job fail with ``CommitConflictError``: nothing is lost, the job is wasted and its files are
deleted.
"""

import math
import uuid
from dataclasses import dataclass
from typing import Any, Dict, Iterator, List, Optional, Tuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from paimon_rs import _core
from paimon_rs.exceptions import UnsupportedError
from paimon_rs.spark import writer as _writer
from paimon_rs.spark.commit import (
    _MESSAGE_SCHEMA,
    _choose_attempts,
    _collect_attempts,
    _collect_settled,
    _sweep,
    _task_options,
)
from paimon_rs.spark.common import _bind, _open_cached, _task_context, _with_context, spark_schema_of
from paimon_rs.spark.compaction import _message_batch, _partition_specs
from paimon_rs.spark.dynamic import BUCKET_COLUMN, is_dynamic
from paimon_rs.spark.reader import read, splits_frame
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
    #: the table's partition columns, and the planned splits (bytes; one per partition)
    partition_keys: List[str]
    splits: List[bytes]
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


def _partition_runs(batches: Iterator[pa.RecordBatch], keys: List[str]
                    ) -> Iterator[Tuple[Tuple[Any, ...], pa.RecordBatch]]:
    """A task's rows (sorted by the partition columns ``keys`` first) as one batch per
    contiguous run of one partition: (the partition's values, the run's rows). A run is held
    whole: its files (or buckets) are cut at curve cells, which needs the rows past each cut."""
    cur: Optional[Tuple[Any, ...]] = None
    pending: List[pa.RecordBatch] = []

    def run() -> pa.RecordBatch:
        return pa.Table.from_batches(pending).combine_chunks().to_batches()[0]

    for b in batches:
        if not b.num_rows:
            continue
        new, _ = _partition_starts(b, keys, cur)
        bounds = [*np.flatnonzero(new).tolist(), b.num_rows]
        if bounds[0] > 0:
            pending.append(b.slice(0, bounds[0]))
        for start, end in zip(bounds, bounds[1:]):
            if pending:
                yield cur or (), run()
            pending = [b.slice(start, end - start)]
            cur = tuple(b.column(c)[start].as_py() for c in keys)
    if pending:
        yield cur or (), run()


def _split_run(run: pa.RecordBatch, schema: pa.Schema) -> Tuple[pa.RecordBatch, pa.Array]:
    """A run's rows as the table's columns, and their sort keys (binary)."""
    keys = run.column(SORT_KEY_COLUMN).cast(pa.binary())
    return run.select(schema.names), keys


def _write_task(spec: _SortSpec) -> Any:
    import os

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        pid, attempt, task_attempt_id = _task_context()
        t = _open_cached(spec.table)
        t = t.copy(_task_options(t, spec.task_prefix(pid, attempt)))
        schema = t.arrow_schema
        where = f"paimon_rs.spark.sort_compact of {t.identifier} (Spark partition {pid}, attempt {attempt})"
        keyed = pa.schema([*schema, pa.field(SORT_KEY_COLUMN, pa.binary())])

        def conformed() -> Iterator[pa.RecordBatch]:
            for b in batches:
                if b.num_rows:
                    yield _conform(b, keyed)

        msgs = []
        try:
            # each partition's rows written as the local sort writes a partition: files cut at
            # curve cells (core write_sorted_run, which finds the partition's planned split)
            for _, rows in _partition_runs(conformed(), spec.partition_keys):
                data, keys = _split_run(rows, schema)
                m = _core.sort_write_run(t._core, spec.splits, data, keys)
                if not m.is_empty():
                    msgs.append(m.to_bytes())
        except Exception as e:
            raise _with_context(e, where) from e
        if spec.fail_first_attempt_marker and attempt == 0 and os.path.exists(spec.fail_first_attempt_marker):
            raise RuntimeError(f"{where}: injected failure after writing (test hook)")
        if msgs:
            yield _message_batch(pid, attempt, task_attempt_id, msgs)

    return run


@dataclass
class _BucketSpec:
    """What a dynamic-bucket sort compaction's write task needs besides ``_writer._WriteSpec``."""

    write: Any  # _writer._WriteSpec
    partition_keys: List[str]
    #: the range partitions requested: a task's buckets are ``b % stride == task``
    stride: int
    target: int


def _partition_starts(b: pa.RecordBatch, keys: List[str], last: Optional[Tuple[Any, ...]]
                      ) -> Tuple[np.ndarray, Optional[Tuple[Any, ...]]]:
    """Rows of ``b`` (sorted by the partition columns ``keys``) whose partition differs from
    the row before (the first row: from ``last``, the previous batch's last partition), and the
    last row's partition."""
    n = b.num_rows
    new = np.zeros(n, dtype=bool)
    if not keys:
        new[0] = last is None
        return new, ()
    for c in keys:
        col = b.column(c)
        if n > 1:
            cur, prev = col.slice(1), col.slice(0, n - 1)
            differs = pc.or_(pc.fill_null(pc.not_equal(cur, prev), False),
                             pc.xor(pc.is_null(cur), pc.is_null(prev)))
            new[1:] |= differs.to_numpy(zero_copy_only=False)
    new[0] = tuple(b.column(c)[0].as_py() for c in keys) != last
    return new, tuple(b.column(c)[n - 1].as_py() for c in keys)


def _dynamic_write_task(spec: _BucketSpec, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """One range of a dynamic-bucket table's sorted rows: each row's fresh bucket (see the
    module's doc), then ``write``'s writer task over the rows with their buckets."""
    pid, attempt, _ = _task_context()
    if pid >= spec.stride:
        raise UnsupportedError(f"paimon_rs.spark.sort_compact of {spec.write.table.identifier}: task {pid} of "
                               f"{spec.stride} range partitions "
                               "(Spark ran more tasks than requested; buckets would collide)")

    def assigned() -> Iterator[pa.RecordBatch]:
        # each partition's rows cut into buckets pid, pid + stride, ... at curve cells near
        # the target row count, as the local sort cuts its buckets (core sorted_key_buckets)
        for _, rows in _partition_runs(batches, spec.partition_keys):
            keys = rows.column(SORT_KEY_COLUMN).cast(pa.binary())
            buckets = pa.array(_core.sort_key_buckets(keys, spec.target, pid, spec.stride))
            yield rows.drop_columns([SORT_KEY_COLUMN]).append_column(BUCKET_COLUMN, buckets)

    yield from _writer._write_task(spec.write, assigned())


def _sort_compact_dynamic(spark: Any, table: Table, ordered: Any, n: int, snapshot_id: int, specs: Any,
                          file_prefix: str, fail_marker: Optional[str]) -> Optional[int]:
    """The write and commit of a dynamic-bucket table's sort compaction (the module's doc)."""
    write_spec = _writer._WriteSpec(table=table, write_id="", file_prefix=file_prefix,
                                    columns=list(table.arrow_schema.names), fail_first_attempt_marker=fail_marker,
                                    dynamic=True, dynamic_snapshot=snapshot_id, overwrite=True,
                                    what="paimon_rs.spark.sort_compact")
    target = int(table.options.get("dynamic-bucket.target-row-num", "2000000"))
    spec = _BucketSpec(write=write_spec, partition_keys=list(table.partition_keys), stride=n, target=target)
    job = ordered.mapInArrow(_bind(_dynamic_write_task, spec), _MESSAGE_SCHEMA).collect
    collected = _collect_attempts(spark, job, True, table, file_prefix)
    if collected is None:
        return None
    try:
        # one OVERWRITE of the partitions written (the whole table with
        # dynamic-partition-overwrite = false; the plan refused a selection then) that must
        # replace exactly what was planned at snapshot_id, else CommitConflictError
        sid = _core.sort_compaction_commit(table._core, snapshot_id, collected.messages, specs)
    except BaseException:
        # the core removed the written data files; the task attempts' index files go too
        _sweep(table, file_prefix, set())
        raise
    _sweep(table, file_prefix, collected.files)
    return sid


def _dynamic_tasks(spark: Any, table: Table, items: List[bytes], num_partitions: Optional[int]) -> int:
    """Range partitions of a dynamic-bucket table's sort compaction: ``num_partitions``, else
    about one bucket's rows (``dynamic-bucket.target-row-num``, by the planned files' row
    counts, an upper bound of the merged rows) per task, at most ``spark.sql.shuffle.partitions``.
    ``dynamic-bucket.max-buckets`` is refused: the tasks open buckets each on their own."""
    max_buckets = int(table.options.get("dynamic-bucket.max-buckets", "-1"))
    if max_buckets != -1:
        raise UnsupportedError(
            f"paimon_rs.spark.sort_compact of {table.identifier}: dynamic-bucket.max-buckets = {max_buckets} (the "
            "distributed sort opens buckets per task and cannot keep a cap); run table.sort_compact (one process)")
    if num_partitions:
        return int(num_partitions)
    rows = sum(_core.Split.from_bytes(bytes(i)).row_count for i in items)
    target = int(table.options.get("dynamic-bucket.target-row-num", "2000000"))
    return max(1, min(int(spark.conf.get("spark.sql.shuffle.partitions")), math.ceil(rows / target)))


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
    removed files this one rewrites: ``CommitConflictError``), leaves the table as it was.

    A dynamic-bucket primary-key table (deletion vectors or not) is read merged and its sorted
    rows assigned fresh buckets in the tasks (the module's doc); ``num_partitions`` defaults to
    about one ``dynamic-bucket.target-row-num`` of rows per task; the commit is one OVERWRITE of
    the partitions written, as ``Table.sort_compact``, and conflicts with any commit into them
    since the plan."""
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
    splits = [bytes(i) for i in items]
    spec = _SortSpec(table=table, strategy=order_strategy, order_by=order_by, file_prefix=file_prefix,
                     partition_keys=list(table.partition_keys), splits=splits,
                     fail_first_attempt_marker=_fail_first_attempt_marker)
    from pyspark.sql.types import BinaryType, StructField, StructType

    dynamic = is_dynamic(table)
    n = (_dynamic_tasks(spark, table, items, num_partitions) if dynamic
         else int(num_partitions or spark.conf.get("spark.sql.shuffle.partitions")))
    if dynamic:
        # the planned splits (all levels, a deletion-vector table's vectors attached) merged:
        # exactly the files the commit must replace
        schema = table._core.new_read(None, None).output_schema()
        df = splits_frame(spark, table, [bytes(i) for i in items], None, None, spark_schema_of(schema))
    else:
        df = read(spark, table, filter=filt, snapshot_id=snapshot_id, spark_parquet=False)
    keyed_schema = StructType(df.schema.fields + [StructField(SORT_KEY_COLUMN, BinaryType(), True)])
    keyed = df.mapInArrow(_key_task(spec), keyed_schema)
    cols = [*table.partition_keys, SORT_KEY_COLUMN]
    # the tasks keep the key: their files (buckets) are cut where it changes most (curve cells)
    ordered = keyed.repartitionByRange(n, *cols).sortWithinPartitions(*cols)
    if dynamic:
        return _sort_compact_dynamic(spark, table, ordered, n, snapshot_id, specs, file_prefix,
                                     _fail_first_attempt_marker)
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
