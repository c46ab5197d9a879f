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
"""

from dataclasses import dataclass
from typing import Any, Iterator, List, Optional

import pyarrow as pa
import pyarrow.compute as pc

from paimon_rs import _core
from paimon_rs.spark.common import _bind, _has_spark_context, _num_buckets, _open_cached, _task_context, _with_context
from paimon_rs.spark.shuffle import _identity_keys
from paimon_rs.table import Table

#: the shuffle key of the assign stage (the assign task's identity key), dropped by it
ASSIGN_KEY_COLUMN = "_paimon_rs_assign_key"
#: each row's key hash: the assign task's sort order, dropped by it
KEY_HASH_COLUMN = "_paimon_rs_key_hash"
#: each row's dynamic bucket, from the assign task to the writers
BUCKET_COLUMN = "_paimon_rs_bucket"


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


def _channel_task(spec: _AssignSpec, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Stage 1: each row's assign task (as its shuffle key) and key hash appended."""
    table = _open_cached(spec.table)
    keys = pa.array(spec.identity_keys, pa.int32())
    for b in batches:
        channel, key_hash = _core.assigner_channels(table._core, b, spec.num_assigners)
        shuffle_key = pc.take(keys, pa.array(channel))
        yield pa.RecordBatch.from_arrays(
            [*b.columns, shuffle_key, pa.array(key_hash)],
            names=[*b.schema.names, ASSIGN_KEY_COLUMN, KEY_HASH_COLUMN],
        )


def _assign_task(spec: _AssignSpec, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Stage 2: assign task ``i`` (the Spark partition) is assigner ``i``; each row leaves with
    its bucket (``BUCKET_COLUMN``) in place of the stage's two columns."""
    pid, attempt, _ = _task_context()
    table = _open_cached(spec.table)
    where = (f"paimon_rs.spark.write into {table.identifier}: dynamic bucket assigner {pid} of "
             f"{spec.num_assigners} (attempt {attempt})")
    try:
        task = _core.DynamicAssignTask(table._core, spec.num_assigners, pid, spec.snapshot_id)
    except Exception as e:
        raise _with_context(e, where) from e
    for b in batches:
        if b.num_rows == 0:
            continue
        data = b.select(spec.columns)
        try:
            buckets = task.assign(data)
        except Exception as e:
            raise _with_context(e, where) from e
        yield pa.RecordBatch.from_arrays([*data.columns, buckets], names=[*spec.columns, BUCKET_COLUMN])


def assigned_frame(df: Any, table: Table, snapshot_id: Optional[int], overwrite: bool,
                   num_tasks: Optional[int]) -> Any:
    """``df`` (the table's columns) with each row's dynamic bucket in ``BUCKET_COLUMN``, from
    the hash index of snapshot ``snapshot_id`` (an ``overwrite`` starts from no index: the
    partitions it writes are replaced, their index with them), shuffled so that every (partition, bucket) meets
    in one writer task (``num_tasks``, default Spark's default parallelism)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import IntegerType, StructField, StructType

    spark = df.sparkSession
    parallelism = spark.sparkContext.defaultParallelism if _has_spark_context(spark) else 1
    n = _core.num_assign_tasks(table._core, parallelism)
    columns = list(df.columns)
    spec = _AssignSpec(table=table, columns=columns, num_assigners=n, identity_keys=_identity_keys(n),
                       snapshot_id=None if overwrite else snapshot_id)
    # nullable all: an Arrow batch built by the tasks says nothing of nullability
    fields = [StructField(f.name, f.dataType, True) for f in df.schema.fields]
    keyed_schema = StructType([*fields, StructField(ASSIGN_KEY_COLUMN, IntegerType()),
                               StructField(KEY_HASH_COLUMN, IntegerType())])
    keyed = df.mapInArrow(_bind(_channel_task, spec), keyed_schema)
    # the assign task's input in key-hash order: every attempt of it assigns alike
    routed = keyed.repartition(n, F.col(ASSIGN_KEY_COLUMN)).sortWithinPartitions(KEY_HASH_COLUMN)
    assigned_schema = StructType([*fields, StructField(BUCKET_COLUMN, IntegerType())])
    assigned = routed.mapInArrow(_bind(_assign_task, spec), assigned_schema)
    writers = num_tasks or max(parallelism, 1)
    return assigned.repartition(writers, *[F.col(c) for c in table.partition_keys], F.col(BUCKET_COLUMN))
