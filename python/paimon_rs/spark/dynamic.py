"""The assign stage of ``write`` into a dynamic-bucket primary-key table (``bucket = -1``,
paimon-behaviour.md §1.7), as Java's Spark writer (``PaimonSparkWriter``, ``HASH_DYNAMIC``):

1. each row's assign task, by its partition and key hash (Java's
   ``BucketAssigner.computeAssigner``), and the rows shuffled to it, sorted by key hash;
2. each assign task is one assigner (``_core.DynamicAssignTask``, Java's ``HashBucketAssigner``)
   over the hash index of the snapshot the driver pinned: a known key keeps its bucket, a new
   one fills the task's own buckets (``bucket % n == task``), so two tasks never open the same
   bucket nor see the same key; each row leaves with its bucket;
3. the rows shuffled by (partition, bucket) to the bucket writers, which restore the same
   snapshot and write the buckets' new hash index files (Java's ``DynamicBucketIndexMaintainer``
   in the writers): the files are in the writers' commit messages, so exactly the winning
   attempts' files are committed and the driver's sweep deletes the others'.

Why sorted: Spark may run an assign task again after writers read its first output (a lost
shuffle file), and a new key's bucket depends on the order the task sees keys in. The order of
key hashes is the same in every attempt, and rows of equal hash get equal buckets, so every
attempt assigns every key the same bucket.

A cross-partition upsert table (its primary key lacks a partition key, paimon-behaviour.md §1.8;
Java's ``KEY_DYNAMIC``) goes through the same three stages, as Java's Spark/Flink writers do:
rows go to their assign task by the hash of the whole primary key (``_core.
cross_partition_channels``), whatever their partition, so that a key meets one task; that task
(``_core.CrossPartitionAssignTask``, Java's ``GlobalIndexAssigner``) bootstraps the keys of the
pinned snapshot whose hash is its own into its key index (spilling to local disk past
``lookup.cache-max-memory-size``) and routes each row: its (partition, bucket), and for a key that
moves partitions a ``-D`` into the old one (``deduplicate``), the row into the old partition
(``partial-update``, ``aggregation``) or nothing (``first-row``); rows leave with their bucket and
row kind (``ROW_KIND_COLUMN``). Here the sort is by key hash, then the primary key and the
partition: rows of one key in two partitions of one write are routed in the same order in every
attempt.
"""

import hashlib
import os
from dataclasses import dataclass
from typing import Any, Callable, Iterator, List, Optional, Tuple

import pyarrow as pa
import pyarrow.compute as pc

from paimon_rs import _core
from paimon_rs.exceptions import InvalidArgumentError, UnsupportedError
from paimon_rs.spark import shuffle
from paimon_rs.spark.common import (
    _arrow_target,
    _bind,
    _has_spark_context,
    _large_var_types,
    _num_buckets,
    _open_cached,
    _task_context,
    _with_context,
)
from paimon_rs.spark.shuffle import _identity_keys
from paimon_rs.table import Table

#: the shuffle key of the assign stage (the assign task's identity key), dropped by it
ASSIGN_KEY_COLUMN = "_paimon_rs_assign_key"
#: each row's key hash: the assign task's sort order, dropped by it
KEY_HASH_COLUMN = "_paimon_rs_key_hash"
#: each row's dynamic bucket, from the assign task to the writers
BUCKET_COLUMN = "_paimon_rs_bucket"
#: each row's row kind (int8) from a cross-partition assign task to the writers
ROW_KIND_COLUMN = "_paimon_rs_row_kind"
#: ``distribute``'s frame of a dynamic-bucket table: the snapshot its assign stage read (the
#: writers restore it; null: the table was empty), the same in every row
ASSIGN_SNAPSHOT_COLUMN = "_paimon_rs_assign_snapshot"
#: ``distribute``'s frame of a dynamic-bucket table: the id of its assign stage, the same in
#: every row (a positive long): 23 random bits, the number of assign tasks (16 bits) and the table's fingerprint
#: (24 bits, ``table_fingerprint``), high to low; a write whose rows come from two assign stages
#: (a union of two distributed frames, each opening buckets of its own) is refused
ASSIGN_ID_COLUMN = "_paimon_rs_assign_id"
#: ``distribute``'s frame: the assign task each row came from
ASSIGN_TASK_COLUMN = "_paimon_rs_assign_task"
#: ``distribute``'s frame: null in the rows; each assign task ends its output with one more row,
#: its count row (every other column null but ``ASSIGN_TASK_COLUMN``), holding the number of rows
#: it emitted: the Data Source's commit checks that its writers received exactly those rows, so
#: a frame changed between ``distribute`` and ``save`` (rows filtered out, limited, sampled,
#: duplicated) is refused instead of committing, e.g., a moved key without the -D of its old
#: partition
ASSIGN_ROWS_COLUMN = "_paimon_rs_assign_rows"

#: the most assign tasks a distributed frame's assign id can name (16 bits)
MAX_DISTRIBUTED_ASSIGN_TASKS = 0xFFFF


def is_dynamic(table: Table) -> bool:
    """Whether ``table`` is a primary-key table in dynamic bucket mode (``bucket = -1``)."""
    return _num_buckets(table) == -1 and bool(table.primary_keys)


@dataclass
class _AssignSpec:
    """What the assign stage's tasks need (small and picklable)."""

    table: Table
    columns: List[str]
    num_assigners: int
    #: assign task -> an int Spark's hash partitioner sends to that task
    identity_keys: List[int]
    #: the snapshot whose hash index the assigners read (None: the table is empty)
    snapshot_id: Optional[int]
    #: a cross-partition upsert table: the assigners hold the key index (see the module doc)
    cross: bool = False
    #: the call the user made, as errors name it
    what: str = "paimon_rs.spark.write"
    #: ``distribute``: each row with its assign task, each task's output ended by its count row
    #: (``ASSIGN_ROWS_COLUMN``) of this Arrow schema (the stage's output, as Spark expects it)
    counted: Optional[pa.Schema] = None


def _channel_task(spec: _AssignSpec, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Stage 1: each row's assign task (as its shuffle key) and key hash appended."""
    table = _open_cached(spec.table)
    keys = pa.array(spec.identity_keys, pa.int32())
    channels = _core.cross_partition_channels if spec.cross else _core.assigner_channels
    for b in batches:
        channel, key_hash = channels(table._core, b, spec.num_assigners)
        shuffle_key = pc.take(keys, pa.array(channel))
        yield pa.RecordBatch.from_arrays(
            [*b.columns, shuffle_key, pa.array(key_hash)],
            names=[*b.schema.names, ASSIGN_KEY_COLUMN, KEY_HASH_COLUMN],
        )


def _assign_task(spec: _AssignSpec, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Stage 2: assign task ``i`` (the Spark partition) is assigner ``i``; each row leaves with
    its bucket (``BUCKET_COLUMN``) in place of the stage's two columns (``spec.counted``: and its
    assign task, the output ended by the task's count row)."""
    pid, attempt, _ = _task_context()
    table = _open_cached(spec.table)
    out = (_cross_assign_task(spec, table, pid, attempt, batches) if spec.cross
           else _bucket_assign_task(spec, table, pid, attempt, batches))
    if not spec.counted:
        yield from out
        return
    emitted = 0
    for b in out:
        emitted += b.num_rows
        yield pa.RecordBatch.from_arrays(
            [*b.columns, pa.array([pid] * b.num_rows, pa.int32()), pa.nulls(b.num_rows, pa.int64())],
            names=[*b.schema.names, ASSIGN_TASK_COLUMN, ASSIGN_ROWS_COLUMN])
    fields = list(spec.counted)[:-2]
    yield pa.RecordBatch.from_arrays(
        [*[pa.nulls(1, f.type) for f in fields], pa.array([pid], pa.int32()), pa.array([emitted], pa.int64())],
        schema=spec.counted)


def _bucket_assign_task(spec: _AssignSpec, table: Table, pid: int, attempt: int,
                        batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Stage 2 of a dynamic-bucket table: each row with its bucket from assigner ``pid``."""
    where = (f"{spec.what} into {table.identifier}: dynamic bucket assigner {pid} of "
             f"{spec.num_assigners} (attempt {attempt})")
    new_task = lambda: _core.DynamicAssignTask(table._core, spec.num_assigners, pid, spec.snapshot_id)  # noqa: E731
    for data, buckets in _assign_each(spec, where, new_task, batches):
        yield pa.RecordBatch.from_arrays([*data.columns, buckets], names=[*spec.columns, BUCKET_COLUMN])


def _assign_each(spec: _AssignSpec, where: str, new_task: Callable[[], Any],
                 batches: Iterator[pa.RecordBatch]) -> Iterator[Tuple[pa.RecordBatch, Any]]:
    """(the table's columns of each non-empty batch, the answer of the assign task ``new_task()``
    for them); errors say ``where``; a task with ``close`` is closed at the end."""
    try:
        task = new_task()
    except Exception as e:
        raise _with_context(e, where) from e
    try:
        for b in batches:
            if b.num_rows == 0:
                continue
            data = b.select(spec.columns)
            try:
                out = task.assign(data)
            except Exception as e:
                raise _with_context(e, where) from e
            yield data, out
    finally:
        if hasattr(task, "close"):
            task.close()


def _cross_assign_task(spec: _AssignSpec, table: Table, pid: int, attempt: int,
                       batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Stage 2 of a cross-partition table: the rows routed through assign task ``pid``'s key
    index, each with its bucket and row kind; the index's spill files go when the task ends."""
    where = (f"{spec.what} into {table.identifier}: cross-partition assigner {pid} of "
             f"{spec.num_assigners} (attempt {attempt})")
    new_task = lambda: _core.CrossPartitionAssignTask(table._core, spec.num_assigners, pid, spec.snapshot_id)  # noqa: E731
    for data, routed in _assign_each(spec, where, new_task, batches):
        if routed is None:
            continue
        rows, kinds, buckets = routed
        # the index's rows carry the table's Arrow types: back to the frame's
        columns = [rows.column(i).cast(data.schema.field(i).type) for i in range(len(spec.columns))]
        yield pa.RecordBatch.from_arrays([*columns, buckets, kinds],
                                         names=[*spec.columns, BUCKET_COLUMN, ROW_KIND_COLUMN])


def assigned_frame(df: Any, table: Table, snapshot_id: Optional[int], overwrite: bool,
                   num_tasks: Optional[int], what: str = "paimon_rs.spark.write",
                   counted: bool = False) -> Tuple[Any, int]:
    """``df`` (the table's columns) with each row's dynamic bucket in ``BUCKET_COLUMN``, from
    the hash index of snapshot ``snapshot_id`` (an ``overwrite`` starts from no index: the
    partitions it writes are replaced, their index with them), shuffled so that every (partition, bucket) meets
    in one writer task (``num_tasks``, default Spark's default parallelism); and the number of
    assign tasks. Errors name ``what``; ``counted``: rows with their assign task and each task's
    count row (``ASSIGN_ROWS_COLUMN``)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import ByteType, IntegerType, LongType, StructField, StructType

    spark = df.sparkSession
    parallelism = spark.sparkContext.defaultParallelism if _has_spark_context(spark) else 1
    n = _core.num_assign_tasks(table._core, parallelism)
    columns = list(df.columns)
    cross = table.cross_partition_update
    spec = _AssignSpec(table=table, columns=columns, num_assigners=n, identity_keys=_identity_keys(n),
                       snapshot_id=None if overwrite else snapshot_id, cross=cross, what=what)
    # nullable all: an Arrow batch built by the tasks says nothing of nullability
    fields = [StructField(f.name, f.dataType, True) for f in df.schema.fields]
    keyed_schema = StructType([*fields, StructField(ASSIGN_KEY_COLUMN, IntegerType()),
                               StructField(KEY_HASH_COLUMN, IntegerType())])
    keyed = df.mapInArrow(_bind(_channel_task, spec), keyed_schema)
    # the assign task's input in key-hash order: every attempt of it assigns alike
    order = [KEY_HASH_COLUMN]
    if cross:
        # one key in two partitions of this write: the same order in every attempt
        order += [*table.primary_keys, *[p for p in table.partition_keys if p not in table.primary_keys]]
    routed = keyed.repartition(n, F.col(ASSIGN_KEY_COLUMN)).sortWithinPartitions(*order)
    extra = [StructField(ROW_KIND_COLUMN, ByteType())] if cross else []
    if counted:
        extra += [StructField(ASSIGN_TASK_COLUMN, IntegerType()), StructField(ASSIGN_ROWS_COLUMN, LongType())]
    assigned_schema = StructType([*fields, StructField(BUCKET_COLUMN, IntegerType()), *extra])
    if counted:
        spec.counted = _arrow_target(assigned_schema, _large_var_types(spark))
    assigned = routed.mapInArrow(_bind(_assign_task, spec), assigned_schema)
    writers = num_tasks or max(parallelism, 1)
    return assigned.repartition(writers, *[F.col(c) for c in table.partition_keys], F.col(BUCKET_COLUMN)), n


def table_fingerprint(table: Table) -> int:
    """24 bits of the table's path and branch, the low bits of a distributed frame's assign id:
    the Data Source refuses a frame ``distribute`` made for another table or branch (its buckets
    and snapshot mean nothing there)."""
    ident = f"{table.table_path}\x00{table.current_branch()}".encode()
    return int.from_bytes(hashlib.sha256(ident).digest()[:3], "big")


def distribute(df: Any, table: Table, num_tasks: Optional[int] = None) -> Any:
    """``df`` shuffled so that every row of one (partition, bucket) of ``table`` lands in one
    task: the first half of ``df.write.format("paimon_rs")`` (``paimon_rs.spark.write`` does it
    all itself and is the faster path).

    A table with fixed buckets: ``shuffle.distribute`` (the shuffle key as an extra column
    ``WRITE_KEY_COLUMN``, which the writers drop). A dynamic-bucket or cross-partition upsert
    table (``bucket = -1`` with a primary key): ``write``'s assign stage over the hash index (or
    key index) of the latest snapshot, the rows leaving with their bucket (``BUCKET_COLUMN``, and
    ``ROW_KIND_COLUMN`` for a cross-partition table), its assign task (``ASSIGN_TASK_COLUMN``),
    that snapshot (``ASSIGN_SNAPSHOT_COLUMN``) and the stage's id (``ASSIGN_ID_COLUMN``), and one
    count row per assign task (``ASSIGN_ROWS_COLUMN``), shuffled by (partition, bucket); the Data
    Source's writers restore that snapshot, so a commit of another writer after it that the
    assignment relied on fails the write's commit (``CommitConflictError``: the hash index / key
    index conflict check). Save the frame as it is: rows dropped or duplicated afterwards (a
    filter, limit, union) are refused at commit by the count rows, a frame repartitioned
    afterwards puts a bucket in two tasks (refused at commit), and a union of two distributed
    frames, or a frame distributed for another table or branch, is refused. Errors of the assign
    stage (it runs when the frame is saved) name ``paimon_rs.spark.distribute``. A streaming
    DataFrame into a dynamic-bucket table is refused:
    every micro-batch needs the index of the previous one (``foreachBatch`` with
    ``paimon_rs.spark.write``, docs/spark.md)."""
    if not is_dynamic(table):
        return shuffle.distribute(df, table, num_tasks)
    from pyspark.sql import functions as F

    if df.isStreaming:
        raise UnsupportedError(
            f"paimon_rs.spark.distribute of a stream into {table.identifier}, a dynamic-bucket table (bucket = -1): "
            "each micro-batch's buckets depend on the index the previous one committed, which one assign stage "
            "planned at the query's start cannot know; write each micro-batch with df.writeStream.foreachBatch("
            "lambda batch, batch_id: paimon_rs.spark.write(batch, table, commit_user=<one per query>, "
            "commit_identifier=batch_id)) (exactly once: a replayed batch lands nothing)")
    names = list(table.arrow_schema.names)
    missing = [c for c in names if c not in df.columns]
    if missing:
        raise InvalidArgumentError(f"paimon_rs.spark.distribute into {table.identifier}: the DataFrame "
                                   f"lacks the table's columns {missing}")
    snapshot_id = table._core.latest_snapshot_id()
    what = "paimon_rs.spark.distribute (saved with format('paimon_rs'))"
    frame, n = assigned_frame(df.select(*names), table, snapshot_id, False, num_tasks, what, counted=True)
    if n > MAX_DISTRIBUTED_ASSIGN_TASKS:
        raise UnsupportedError(
            f"paimon_rs.spark.distribute into {table.identifier}: {n} assign tasks (dynamic-bucket."
            f"assigner-parallelism or Spark's default parallelism); a distributed frame takes at most "
            f"{MAX_DISTRIBUTED_ASSIGN_TASKS}: set dynamic-bucket.assigner-parallelism lower")
    assign_id = ((int.from_bytes(os.urandom(3), "big") & 0x7FFFFF) << 40) | (n << 24) | table_fingerprint(table)
    return frame.select("*", F.lit(snapshot_id).cast("long").alias(ASSIGN_SNAPSHOT_COLUMN),
                        F.lit(assign_id).cast("long").alias(ASSIGN_ID_COLUMN))
