"""``write``: a DataFrame into a table as one snapshot, exactly once (the packed shuffle of
``paimon_rs.spark.shuffle``, the table's writer in each task, one commit on the driver)."""

import os
import uuid
from dataclasses import dataclass
from typing import Any, Dict, Iterator, List, Optional, Tuple, Union

import pyarrow as pa

from paimon_rs.exceptions import InvalidArgumentError, UnsupportedError
from paimon_rs.spark.commit import (
    _MESSAGE_SCHEMA,
    _choose_attempts,
    _collect_settled,
    _commit_collected,
    _index_prefix,
    _sweep,
    _task_options,
)
from paimon_rs.spark.common import (
    _bind,
    _conform,
    _groups_of,
    _has_spark_context,
    _open_cached,
    _session_confs,
    _task_context,
    _with_context,
)
from paimon_rs.spark.dynamic import BUCKET_COLUMN, ROW_KIND_COLUMN, assigned_frame, is_dynamic
from paimon_rs.spark.shuffle import WRITE_KEY_COLUMN, _blob_rdd, _check_bucketed, _packed_frame, distribute
from paimon_rs.table import Table


@dataclass
class _WriteSpec:
    """What a write task needs: small and picklable (the table pickles as path + options)."""

    table: Table
    write_id: str
    file_prefix: str
    columns: List[str]
    #: test hook: a path; while it exists, the first attempt of every task fails after writing
    fail_first_attempt_marker: Optional[str] = None
    #: test hook: (marker path, seconds); while it exists, attempt 0 of Spark partition 0 sleeps
    #: after writing (a straggler for speculative execution)
    slow_first_attempt: Optional[Tuple[str, float]] = None
    #: test hook: a directory; each task appends the row counts of the batches it writes to a
    #: file of its own there
    batch_rows_log: Optional[str] = None
    #: a dynamic-bucket table: the rows carry their bucket (``dynamic.BUCKET_COLUMN``) and the
    #: writers restore the snapshot the assign stage read (``dynamic_snapshot``)
    dynamic: bool = False
    dynamic_snapshot: Optional[int] = None
    #: an overwrite: the writers ignore the replaced files and hash index
    overwrite: bool = False
    #: the operation, as errors name it
    what: str = "paimon_rs.spark.write"

    def task_prefix(self, spark_partition: int, attempt: int) -> str:
        return f"{self.file_prefix}p{spark_partition}-a{attempt}-"


#: ``write`` ships its rows through the shuffle packed (``_pack_task``) where the session has a
#: JVM (classic Spark); False, or Spark Connect: row by row, as ``distribute`` (tests set it)
_SHUFFLE_PACKED = True


def _write_task(spec: _WriteSpec, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """One write task: every row it receives goes through the table's writer; yields one row
    per commit message (none for an empty task)."""
    pid, attempt, task_attempt_id = _task_context()
    base = _open_cached(spec.table)
    table = base.copy(_task_options(base, spec.task_prefix(pid, attempt)))
    where = f"{spec.what} into {table.identifier} (Spark partition {pid}, attempt {attempt})"
    builder = table.new_batch_write_builder()
    w = (builder.overwrite() if spec.overwrite else builder).new_write()
    try:
        if spec.dynamic:
            w._core.restore_from(spec.dynamic_snapshot)
            w._core.set_index_file_prefix(_index_prefix(base, spec.task_prefix(pid, attempt)))
        target = table.arrow_schema
        columns_schema = pa.schema([target.field(c) for c in spec.columns])
        for b in batches:
            if b.num_rows == 0:
                continue
            if spec.batch_rows_log:
                with open(os.path.join(spec.batch_rows_log, f"p{pid}-a{attempt}-{os.getpid()}"), "a") as f:
                    f.write(f"{b.num_rows}\n")
            buckets = b.column(BUCKET_COLUMN) if spec.dynamic else None
            kinds = b.column(ROW_KIND_COLUMN) if ROW_KIND_COLUMN in b.schema.names else None
            b = b.select(spec.columns)
            try:
                b = _conform(b, columns_schema, where)
                if buckets is not None:
                    w._check_open()
                    w._core.write_assigned(b, buckets, kinds)
                else:
                    w.write_arrow_batch(b)
            except Exception as e:
                raise _with_context(e, f"{where}, {_groups_of(table, b)}") from e
        try:
            msgs = w.prepare_commit()
        except Exception as e:
            raise _with_context(e, f"{where}: writing the buffered buckets failed") from e
        if spec.slow_first_attempt and pid == 0 and attempt == 0 and os.path.exists(spec.slow_first_attempt[0]):
            import time

            time.sleep(spec.slow_first_attempt[1])
        if spec.fail_first_attempt_marker and attempt == 0 and os.path.exists(spec.fail_first_attempt_marker):
            raise RuntimeError(f"{where}: injected failure after writing {len(msgs)} bucket(s) (test hook)")
        msgs = [m for m in msgs if not m.is_empty()]
        if msgs:
            yield pa.RecordBatch.from_pydict({
                "spark_partition": pa.array([pid] * len(msgs), pa.int32()),
                "attempt": pa.array([attempt] * len(msgs), pa.int32()),
                "task_attempt_id": pa.array([task_attempt_id] * len(msgs), pa.int64()),
                "bucket": pa.array([m.bucket for m in msgs], pa.int32()),
                "partition": pa.array([m.partition for m in msgs], pa.binary()),
                "message": pa.array([m.to_bytes() for m in msgs], pa.binary()),
            })
    finally:
        w.close()


def _write_blobs_task(spec: _WriteSpec, blobs: Iterator[bytes]) -> Iterator[Dict[str, Any]]:
    """``_write_task`` over the rows of a packed frame's blobs (``_pack_task``): yields one dict
    per commit message."""

    def batches() -> Iterator[pa.RecordBatch]:
        for blob in blobs:
            yield from pa.ipc.open_stream(blob)

    for rows in _write_task(spec, batches()):
        yield from rows.to_pylist()


def write(df: Any, table: Table, overwrite: Union[bool, Dict[str, Any]] = False, *,
          commit_user: Optional[str] = None, commit_identifier: Optional[int] = None,
          num_tasks: Optional[int] = None, _fail_first_attempt_marker: Optional[str] = None,
          _slow_first_attempt: Optional[Tuple[str, float]] = None,
          _batch_rows_log: Optional[str] = None) -> Optional[int]:
    """Write a Spark DataFrame into ``table`` as one snapshot; returns its id (None if nothing
    was written).

    Columns are matched by name (all of the table's, in any order; ``rowkind.field`` carries
    -U/-D rows). ``overwrite=True`` is INSERT OVERWRITE as ``BatchWriteBuilder.overwrite()``
    (the partitions written, with ``dynamic-partition-overwrite``, else the table);
    ``overwrite={"dt": ...}`` replaces that static partition.

    Exactly once: each Spark partition's winning task attempt is committed, once; the files of
    failed, retried and speculative attempts are deleted after the commit; a failed job commits
    nothing and deletes its files. With ``commit_user`` and ``commit_identifier`` (increasing per
    user) a job run again after it committed writes nothing and returns the same snapshot.

    ``num_tasks``: write tasks of a partitioned table (default: the bucket count, at least
    Spark's default parallelism); an unpartitioned table gets one task per bucket.
    """
    if not isinstance(table, Table):
        raise TypeError("table must be a paimon_rs Table (catalog.get_table(...))")
    if table.total_buckets == -2 and table.primary_keys:
        raise UnsupportedError(
            f"paimon_rs.spark.write into {table.identifier}: a postpone-bucket table (bucket = -2); "
            "write it with the table's own BatchTableWrite (into bucket-postpone)")
    builder = table.new_batch_write_builder()
    if commit_user is not None:
        builder.with_commit_user(commit_user)
    if overwrite is True:
        builder.overwrite()
    elif isinstance(overwrite, dict):
        builder.overwrite(overwrite)
    elif overwrite is not False:
        raise InvalidArgumentError(f"overwrite must be False, True or a partition dict, got {overwrite!r}")
    if commit_identifier is not None:
        landed = builder.new_commit()._core.committed_snapshot(commit_identifier)
        if landed is not None:
            return landed

    names = list(table.arrow_schema.names)
    missing = [c for c in names if c not in df.columns]
    extra = [c for c in df.columns if c not in names]
    if missing or extra:
        raise InvalidArgumentError(
            f"paimon_rs.spark.write into {table.identifier}: the DataFrame's columns do not match the table's"
            + (f"; missing {missing}" if missing else "") + (f"; not in the table {extra}" if extra else "")
        )
    dynamic = is_dynamic(table)
    if dynamic and table.cross_partition_update and overwrite is not False:
        # as the local writer (docs/write-path.md, "Cross-partition upsert")
        raise UnsupportedError(
            f"paimon_rs.spark.write into {table.identifier}: INSERT OVERWRITE of a cross-partition upsert table "
            "(its primary key lacks a partition key): a key's row may live in a partition the overwrite does not "
            "replace, so the table would hold the key twice")
    bucketed = dynamic or _check_bucketed(table)
    write_id = uuid.uuid4().hex
    file_prefix = f"{table.options.get('data-file.prefix', 'data-')}{write_id}-"
    spec = _WriteSpec(table=table, write_id=write_id, file_prefix=file_prefix, columns=names,
                      fail_first_attempt_marker=_fail_first_attempt_marker, slow_first_attempt=_slow_first_attempt,
                      batch_rows_log=_batch_rows_log)
    if dynamic:
        # one snapshot for the assign stage's hash index and the writers' restore: the commit's
        # hash-index conflict check starts from it (commit/hash_index.rs)
        spec.dynamic = True
        spec.dynamic_snapshot = table._core.latest_snapshot_id()
        spec.overwrite = overwrite is not False
        frame, _ = assigned_frame(df.select(*names), table, spec.dynamic_snapshot, spec.overwrite, num_tasks)
        job = frame.mapInArrow(_bind(_write_task, spec), _MESSAGE_SCHEMA).collect
    elif bucketed and _SHUFFLE_PACKED and _has_spark_context(df.sparkSession):
        packed = _packed_frame(df.select(*names), table, num_tasks)

        def job() -> List[Any]:
            # the RDD is built here, in the job's group and confs: AQE runs the pack stage then
            return _blob_rdd(packed).mapPartitions(_bind(_write_blobs_task, spec)).collect()
    else:
        frame = distribute(df.select(*names), table, num_tasks)
        if WRITE_KEY_COLUMN in frame.columns:
            # the shuffle has used it; dropped after the exchange, the JVM converts one column
            # fewer to Arrow for the writers
            frame = frame.drop(WRITE_KEY_COLUMN)
        job = frame.mapInArrow(_bind(_write_task, spec), _MESSAGE_SCHEMA).collect
    try:
        with _session_confs(df.sparkSession, _write_batch_confs(table)):
            rows = _collect_settled(df.sparkSession, job)
    except BaseException:
        _sweep(table, file_prefix, set())
        raise
    try:
        collected = _choose_attempts(rows, bucketed, table)
    except BaseException:
        _sweep(table, file_prefix, set())
        raise
    return _commit_collected(table, builder, collected, file_prefix, commit_identifier)


#: Spark's Arrow batch size: the rows per batch the JVM hands a mapInArrow task
ARROW_BATCH_CONF = "spark.sql.execution.arrow.maxRecordsPerBatch"

#: Spark's cap on an Arrow batch's bytes (Spark >= 4.0, internal, default 64 MB). Spark checks it
#: after every row it adds to a batch by asking every column vector for its size (the columns
#: of a mapInArrow input are one struct vector, so each check walks all of them): ~25% of the
#: CPU of write's whole job at 10M rows of bench_spark's 7 columns (tree CPU 16.9 vs 22.6 CPU-s,
#: JVM task threads 9.4 vs 15.3, medians of 4 interleaved runs). ``NO_BYTE_CAP`` (Int.MaxValue,
#: the largest value Spark accepts) is the one value that skips the check.
ARROW_BYTES_CONF = "spark.sql.execution.arrow.maxBytesPerBatch"
NO_BYTE_CAP = 2**31 - 1

#: rows per Arrow batch of ``write``'s tasks at most. Spark's default (10,000) costs ~11% more
#: CPU in the Python writers (2M rows, paired runs: per-batch work in PySpark's deserializer,
#: the task loop and the writer's input path); a batch of 100,000 rows of the bench's 7 columns
#: is ~7 MB.
WRITE_BATCH_ROWS = 100_000

#: bytes of an Arrow batch of ``write``'s tasks by the schema's estimate (``_row_bytes``): the
#: bound Spark's byte cap (64 MB by default) kept, which the job turns off
WRITE_BATCH_BYTES = 64 << 20

#: a variable-width value (string, binary) in ``_row_bytes``'s estimate
_VAR_WIDTH_BYTES = 64


def _row_bytes(schema: pa.Schema) -> int:
    """An estimate of one row's bytes in an Arrow batch of ``schema``: exact for fixed-width
    columns, ``_VAR_WIDTH_BYTES`` per variable-width value, nested types by their leaves (a list
    or map counted as holding 4 elements)."""

    def width(t: pa.DataType) -> int:
        if pa.types.is_struct(t):
            return sum(width(t.field(i).type) for i in range(t.num_fields))
        if pa.types.is_map(t):
            return 4 + 4 * (width(t.key_type) + width(t.item_type))
        if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
            return 4 + 4 * width(t.value_type)
        try:
            return max(1, t.bit_width // 8)
        except ValueError:  # variable width
            return 4 + _VAR_WIDTH_BYTES

    return max(1, sum(width(f.type) for f in schema))


def _write_batch_confs(table: Table) -> Dict[str, str]:
    """The Arrow batch settings of ``write``'s job: at most ``WRITE_BATCH_ROWS`` rows and, by
    the schema's estimate, ``WRITE_BATCH_BYTES``; Spark's per-row byte check off."""
    rows = max(1, min(WRITE_BATCH_ROWS, WRITE_BATCH_BYTES // _row_bytes(table.arrow_schema)))
    return {ARROW_BATCH_CONF: str(rows), ARROW_BYTES_CONF: str(NO_BYTE_CAP)}
