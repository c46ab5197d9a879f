"""PySpark integration without a JVM connector: any PySpark 4 drives the engine through
``DataFrame.mapInArrow`` (docs/spark-integration.md has the design and its measurements).

- ``write(df, table, overwrite=False)``: a ``mapInArrow`` computes each row's (partition,
  bucket) with the engine's own bucket hash and packs the rows of each into Arrow IPC blobs; the
  blobs are shuffled so that every row of one (partition, bucket) meets in one task; the task
  runs the table's writer over them and yields serialized commit messages (without a JVM
  handle, Spark Connect: every row is shuffled, as ``distribute``, and a second ``mapInArrow``
  writes); the driver collects them once and commits one
  snapshot, keeping exactly one task attempt per Spark partition and deleting the files of the
  others (failed, retried or speculative attempts).
- ``read(spark, table, columns=None, filter=None, snapshot_id=None)``: splits are planned on
  the driver and shipped as rows of a DataFrame (one split per task); ``mapInArrow`` reads them
  into the table's schema mapped to Spark types.
- ``register_data_source(spark)``: ``spark.read.format("paimon_rs")`` and
  ``df.write.format("paimon_rs")`` through the Python Data Source API (paimon_rs.spark_source).

Nothing a task runs depends on driver-local state: tables pickle as path plus options and are
reopened once per Python worker process.

- ``compact(spark, table, full=False, partitions=None)``: the driver plans the buckets that need compaction,
  one task per bucket rewrites them and returns a commit message, the driver commits one
  COMPACT snapshot (exactly once, as ``write``).
"""

import contextlib
import logging
import os
import threading
import time
import uuid
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Set, Tuple, Union

import pyarrow as pa

from paimon_rs import _core
from paimon_rs.exceptions import InvalidArgumentError, PaimonRsError
from paimon_rs.predicate import Predicate
from paimon_rs.table import CommitMessage, Table

__all__ = ["write", "read", "compact", "distribute", "register_data_source", "spark_schema_of", "WRITE_KEY_COLUMN"]

#: the column the write adds for its shuffle (dropped before the rows reach the writer)
WRITE_KEY_COLUMN = "_paimon_rs_shuffle_key"

#: one row per commit message a write task yields
_MESSAGE_SCHEMA = (
    "spark_partition int, attempt int, task_attempt_id long, bucket int, "
    "partition binary, message binary"
)

# Directories of a table that never hold data files of a write.
_METADATA_DIRS = {"snapshot", "schema", "manifest", "index", "statistics", "tag", "changelog", "branch"}


# ---------------------------------------------------------------------------------------------
# per-process state (Spark's Python workers are forked; a forked child starts afresh)

_state_lock = threading.Lock()
_state_pid: Optional[int] = None
_tables: Dict[Tuple[str, str, Tuple[Tuple[str, str], ...]], Table] = {}


def _open_cached(table: Table) -> Table:
    """The table reopened once per Python worker process (a task receives the pickled handle,
    path plus options; reopening reads the schema file)."""
    global _state_pid
    key = (table.table_path, table.identifier, tuple(sorted(table._dynamic_options.items())))
    with _state_lock:
        if _state_pid != os.getpid():
            _tables.clear()
            _state_pid = os.getpid()
        t = _tables.get(key)
        if t is None:
            t = _tables[key] = Table.open(table.table_path, table._dynamic_options, table.identifier)
        return t


# ---------------------------------------------------------------------------------------------
# Spark's hash partitioner (Murmur3_x86_32 of an int, seed 42, then pmod): for the identity
# shuffle, where task i receives exactly bucket i


def _spark_hash_int(v: int) -> int:
    """Spark's ``hash(int_column)`` (``Murmur3_x86_32.hashInt(v, 42)``), as a signed int."""
    m = 0xFFFFFFFF

    def rotl(x: int, r: int) -> int:
        return ((x << r) | (x >> (32 - r))) & m

    k1 = (v & m) * 0xCC9E2D51 & m
    k1 = rotl(k1, 15) * 0x1B873593 & m
    h1 = 42 ^ k1
    h1 = (rotl(h1, 13) * 5 + 0xE6546B64) & m
    h1 ^= 4
    h1 ^= h1 >> 16
    h1 = h1 * 0x85EBCA6B & m
    h1 ^= h1 >> 13
    h1 = h1 * 0xC2B2AE35 & m
    h1 ^= h1 >> 16
    return h1 - (1 << 32) if h1 & 0x80000000 else h1


def _identity_keys(n: int) -> List[int]:
    """``keys[b]`` is an int that ``repartition(n, col)`` sends to shuffle partition ``b``."""
    keys: List[Optional[int]] = [None] * n
    missing, v = n, 0
    while missing:
        p = _spark_hash_int(v) % n
        if keys[p] is None:
            keys[p] = v
            missing -= 1
        v += 1
    return [int(k) for k in keys if k is not None]


# ---------------------------------------------------------------------------------------------
# types


def spark_schema_of(schema: pa.Schema) -> Any:
    """The Spark ``StructType`` of an Arrow schema of the engine (Paimon types): TIMESTAMP
    (without time zone) is ``TimestampNTZType``, TIMESTAMP_LTZ ``TimestampType``, DECIMAL(p, s)
    ``DecimalType(p, s)``, ARRAY/MAP/ROW the nested types; nullability is kept."""
    from pyspark.sql.pandas.types import from_arrow_type
    from pyspark.sql.types import StructField, StructType

    fields = []
    for f in schema:
        if pa.types.is_time(f.type):
            raise _unsupported(f"column '{f.name}' is a TIME ({f.type}), which Spark cannot read from Arrow")
        fields.append(StructField(f.name, from_arrow_type(f.type, prefer_timestamp_ntz=True), f.nullable))
    return StructType(fields)


def _unsupported(msg: str) -> PaimonRsError:
    from paimon_rs.exceptions import UnsupportedError

    return UnsupportedError(msg)


def _arrow_target(spark_schema: Any, large_var_types: bool) -> pa.Schema:
    """The Arrow schema Spark expects of ``mapInArrow`` output for ``spark_schema`` (names,
    order, types: Spark takes the columns by position)."""
    from pyspark.sql.pandas.types import to_arrow_type

    return pa.schema([
        pa.field(f.name, to_arrow_type(f.dataType, timezone="UTC", prefers_large_types=large_var_types),
                 f.nullable)
        for f in spark_schema.fields
    ])


def _conform(batch: pa.RecordBatch, target: pa.Schema, what: str) -> pa.RecordBatch:
    """``batch`` with exactly the names, order and types of ``target`` (a safe cast: a value
    that would change, e.g. nanoseconds into Spark's microseconds, is refused)."""
    if batch.schema.equals(target):
        return batch
    cols = []
    for f in target:
        c = batch.column(batch.schema.get_field_index(f.name))
        if c.type != f.type:
            try:
                c = c.cast(f.type)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
                raise InvalidArgumentError(f"{what}: column '{f.name}' ({c.type}) cannot be given "
                                           f"to Spark as {f.type}: {e}") from e
        cols.append(c)
    return pa.RecordBatch.from_arrays(cols, schema=target)


def _large_var_types(spark: Any) -> bool:
    try:
        return str(spark.conf.get("spark.sql.execution.arrow.useLargeVarTypes", "false")).lower() == "true"
    except Exception:  # noqa: BLE001 (a conf that cannot be read: Spark's default)
        return False


# ---------------------------------------------------------------------------------------------
# write


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

    def task_prefix(self, spark_partition: int, attempt: int) -> str:
        return f"{self.file_prefix}p{spark_partition}-a{attempt}-"


@dataclass
class _ShuffleSpec:
    """What the key UDF needs: the table, the columns it receives, and for the identity shuffle
    (unpartitioned tables) the shuffle key of each bucket."""

    table: Table
    key_columns: List[str]
    #: bucket -> shuffle key (identity shuffle), or None: hash of (partition, bucket)
    identity_keys: Optional[List[int]]


def _shuffle_keys(spec: _ShuffleSpec, table: Table, batch: pa.RecordBatch) -> pa.Array:
    """The int32 shuffle key of each row of ``batch`` (the key columns at least): the bucket's
    identity key, or the (partition, bucket) hash; the engine's, as the pack stage groups by."""
    return _core.shuffle_keys(table._core, batch, spec.identity_keys)


def _shuffle_key_fn(spec: _ShuffleSpec) -> Callable[..., pa.Array]:
    """The key UDF's body: (partition, bucket) of each row -> an int32 shuffle key."""
    names = list(spec.key_columns)

    def key(*cols: pa.Array) -> pa.Array:
        batch = pa.RecordBatch.from_arrays([c if isinstance(c, pa.Array) else pa.array(c) for c in cols],
                                           names=names)
        return _shuffle_keys(spec, _open_cached(spec.table), batch)

    return key


def _num_buckets(table: Table) -> int:
    return int(table.options.get("bucket", "-1"))


def _shuffle_spec(df: Any, table: Table) -> _ShuffleSpec:
    """The shuffle of ``df`` into ``table``'s (partition, bucket) groups (a bucketed table)."""
    spec = _ShuffleSpec(
        table=table,
        key_columns=list(dict.fromkeys(table.partition_keys + _bucket_keys(table))),
        identity_keys=None if table.partition_keys else _identity_keys(_num_buckets(table)),
    )
    missing = [c for c in spec.key_columns if c not in df.columns]
    if missing:
        raise InvalidArgumentError(f"paimon_rs.spark: the DataFrame lacks {missing}, partition or bucket "
                                   f"key columns of {table.identifier}")
    return spec


def _shuffle_tasks(df: Any, table: Table, num_tasks: Optional[int]) -> int:
    """Tasks of the shuffle: one per bucket (unpartitioned), else ``num_tasks`` (default: the
    bucket count, at least Spark's default parallelism)."""
    num_buckets = _num_buckets(table)
    if not table.partition_keys:
        return num_buckets
    spark = df.sparkSession
    parallelism = spark.sparkContext.defaultParallelism if _has_spark_context(spark) else 1
    return num_tasks or max(num_buckets, parallelism)


def _check_bucketed(table: Table) -> bool:
    """Whether ``table`` has fixed buckets (a write shuffles); a primary-key table without is
    refused."""
    if _num_buckets(table) > 0:
        return True
    if table.primary_keys:
        raise _unsupported(f"paimon_rs.spark: writing {table.identifier}, a primary-key table, needs a "
                           f"fixed 'bucket' > 0 (got {table.options.get('bucket', 'dynamic (-1)')})")
    return False


def distribute(df: Any, table: Table, num_tasks: Optional[int] = None) -> Any:
    """``df`` shuffled so that every row of one (partition, bucket) of ``table`` lands in one
    task, with the shuffle key as an extra column ``WRITE_KEY_COLUMN`` (writers drop it): the
    first half of ``df.write.format("paimon_rs")`` (``write`` ships the rows packed, see
    ``_pack_task``). Unpartitioned tables get one task per bucket (task i holds bucket i);
    partitioned ones ``num_tasks`` (default: the bucket count, at least Spark's default
    parallelism). A bucket-unaware append table (``bucket`` = -1) is returned as it is: any
    task may write any partition."""
    from pyspark.sql import functions as F

    if not _check_bucketed(table):
        return df
    spec = _shuffle_spec(df, table)
    num_buckets = _num_buckets(table)
    jvm_key = _jvm_bucket_column(table, df, num_buckets)
    if jvm_key is not None:
        # the engine's bucket hash as a Spark expression: no Python hop before the shuffle
        steps, bucket = jvm_key
        frame = _with_steps(df, steps)
        if spec.identity_keys is not None:
            key = F.element_at(F.array(*[F.lit(k) for k in spec.identity_keys]), F.col(bucket) + 1).cast("int")
        else:
            key = F.col(bucket)
        # one projection: df's columns and the key, without the steps
        kept = [F.col("`" + c.replace("`", "``") + "`") for c in df.columns if c != WRITE_KEY_COLUMN]
        frame = frame.select(*kept, key.alias(WRITE_KEY_COLUMN))
    else:
        frame = df.withColumn(WRITE_KEY_COLUMN, _key_udf(spec)(*[F.col(c) for c in spec.key_columns]))
    n = _shuffle_tasks(df, table, num_tasks)
    if table.partition_keys and jvm_key is not None:
        # equal (partition values, bucket), equal Spark hash: a group never spans two tasks
        return frame.repartition(n, *[F.col(c) for c in table.partition_keys], F.col(WRITE_KEY_COLUMN))
    return frame.repartition(n, F.col(WRITE_KEY_COLUMN))


# ---------------------------------------------------------------------------------------------
# the packed shuffle of ``write``

#: ``write`` ships its rows through the shuffle packed (``_pack_task``) where the session has a
#: JVM (classic Spark); False, or Spark Connect: row by row, as ``distribute`` (tests set it)
_SHUFFLE_PACKED = True

#: the packed frame: a shuffle key and an Arrow IPC stream of rows that all have that key
_PACKED_SCHEMA = "k int, blob binary"

#: bytes of Arrow batches a pack task holds before it emits its blobs (and rows per blob: the
#: fewer blobs, the less per-blob work in the shuffle and the writers)
PACK_BUFFER_BYTES = 32 << 20

#: codec of the blobs' Arrow IPC buffers. Spark compresses its shuffle (lz4) on the JVM side
#: too, but every copy the JVM makes of a blob (Arrow to row, the shuffle's pages, the fetch,
#: the RDD's byte array) moves fewer bytes: 10M rows of bench_spark's 7 columns, paired runs
#: (session 12, the pack then in pyarrow), JVM 8.2 vs 9.9 CPU-s and the Python workers
#: unchanged (7.2 vs 7.3); zstd alike (8.1 / 7.4)
_PACK_COMPRESSION: Optional[str] = "lz4"

#: an emitted batch of blobs at most (Arrow binary offsets are 32-bit)
_PACK_BATCH_BYTES = 1 << 30


def _pack_task(spec: _ShuffleSpec, large_var_types: bool,
               batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """The first stage of ``write``: each row's shuffle key (the engine's bucket hash), the rows
    grouped by it, and every group emitted as one row (``_PACKED_SCHEMA``) holding the group's
    rows as an Arrow IPC stream (``_core.ShufflePacker``, core ``write::pack``). Spark then
    shuffles a few hundred large rows instead of every row, and the writers receive the rows
    without a row-to-Arrow conversion."""
    pid, attempt, _ = _task_context()
    table = _open_cached(spec.table)
    where = f"paimon_rs.spark.write into {table.identifier} (Spark partition {pid}, attempt {attempt})"
    packer = _core.ShufflePacker(spec.identity_keys, _PACK_COMPRESSION)
    for b in batches:
        if b.num_rows == 0:
            continue
        try:
            packer.push(table._core, b)
        except Exception as e:
            raise _with_context(e, f"{where}, {_groups_of(table, b)}") from e
        if packer.bytes >= PACK_BUFFER_BYTES:
            yield from packer.finish(large_var_types, _PACK_BATCH_BYTES)
    yield from packer.finish(large_var_types, _PACK_BATCH_BYTES)


def _packed_frame(df: Any, table: Table, num_tasks: Optional[int] = None) -> Any:
    """``df`` (a bucketed table's columns) packed by ``_pack_task`` and shuffled so that every
    (partition, bucket) group meets in one task: the first half of ``write``."""
    spec = _shuffle_spec(df, table)
    packed = df.mapInArrow(_bind(_pack_task, spec, _large_var_types(df.sparkSession)), _PACKED_SCHEMA)
    return packed.repartition(_shuffle_tasks(df, table, num_tasks), "k")


def _blob_rdd(packed: Any) -> Any:
    """The blobs of a packed frame as an RDD of ``bytes``, each handed to Python as it is: not
    pickled (PySpark pickles a binary value through a Latin-1 string, which cost more than the
    rest of the transfer) and not through ``mapInArrow``, whose batch sizes are the job's (one
    batch could hold a task's every blob)."""
    from pyspark.rdd import RDD
    from pyspark.serializers import NoOpSerializer

    sc = packed.sparkSession.sparkContext
    binary = sc._jvm.org.apache.spark.sql.Encoders.BINARY()
    jds = getattr(packed.select("blob")._jdf, "as")(binary)  # Dataset[Array[Byte]]
    return RDD(jds.javaRDD(), sc, NoOpSerializer())


# Paimon's bucket hash of a one-column INT/BIGINT bucket key as Spark SQL (spec/bucket.rs): the
# key's BinaryRow is 16 bytes, an 8-byte header (all zero) and the value's 8-byte slot; its
# hash is MurmurHash3-x86_32 over the four little-endian words with seed 42, then
# ``abs(hash % buckets)``. Everything is computed in BIGINT on values below 2**49 (no overflow
# under ANSI mode): products by 32-bit constants are split in 16-bit halves.

_M32 = 0xFFFFFFFF
_C1, _C2 = 0xCC9E2D51, 0x1B873593


def _mix_h1_int(h: int, k: int) -> int:
    def rotl(x: int, r: int) -> int:
        return ((x << r) | (x >> (32 - r))) & _M32

    k = rotl(k * _C1 & _M32, 15) * _C2 & _M32
    return (rotl(h ^ k, 13) * 5 + 0xE6546B64) & _M32


_H_HEADER = _mix_h1_int(_mix_h1_int(42, 0), 0)


def _fmix_int(h: int, length: int) -> int:
    h ^= length
    h ^= h >> 16
    h = h * 0x85EBCA6B & _M32
    h ^= h >> 13
    h = h * 0xC2B2AE35 & _M32
    return h ^ (h >> 16)


def _sql_mul(x: str, c: int) -> str:
    """``x * c mod 2**32`` for ``0 <= x < 2**32`` in BIGINT without overflow."""
    return f"((({x}) * {c & 0xFFFF}L + shiftleft((({x}) * {c >> 16}L) & 65535L, 16)) & {_M32}L)"


def _sql_rotl(x: str, r: int) -> str:
    return f"((shiftleft({x}, {r}) | shiftrightunsigned({x}, {32 - r})) & {_M32}L)"


def _jvm_bucket_column(table: Table, df: Any, num_buckets: int) -> Optional[Tuple[List[Tuple[str, str]], str]]:
    """For a bucket key of one INT or BIGINT column: the steps (column name, SQL expression),
    each referring to earlier ones by name so the plan stays linear, whose last column is the
    row's bucket; None for any other bucket key (the Arrow UDF computes it)."""
    keys = _bucket_keys(table)
    if len(keys) != 1 or num_buckets <= 0:
        return None
    t = table.arrow_schema.field(keys[0]).type
    if t not in (pa.int32(), pa.int64()):
        return None
    p = "_paimon_rs_h"
    k = f"`{keys[0]}`"
    steps: List[Tuple[str, str]] = []

    def step(expr: str) -> str:
        name = f"{p}{len(steps)}"
        steps.append((name, expr))
        return name

    lo = step(f"CAST({k} AS BIGINT) & {_M32}L")
    hi = step(f"shiftrightunsigned(CAST({k} AS BIGINT), 32)" if t == pa.int64() else "0L")
    h = f"{_H_HEADER}L"
    for word in (lo, hi):
        m = step(_sql_mul(word, _C1))
        m = step(_sql_mul(_sql_rotl(m, 15), _C2))
        x = step(f"({h} ^ {m})")
        h = step(f"(({_sql_rotl(x, 13)} * 5L + {0xE6546B64}L) & {_M32}L)")
    f = step(f"({h} ^ 16L)")
    f = step(f"({f} ^ shiftrightunsigned({f}, 16))")
    f = step(_sql_mul(f, 0x85EBCA6B))
    f = step(f"({f} ^ shiftrightunsigned({f}, 13))")
    f = step(_sql_mul(f, 0xC2B2AE35))
    f = step(f"({f} ^ shiftrightunsigned({f}, 16))")
    signed = step(f"IF({f} >= 2147483648L, {f} - 4294967296L, {f})")
    null_hash = _fmix_int(_mix_h1_int(_mix_h1_int(_mix_h1_int(_mix_h1_int(42, 0x100), 0), 0), 0), 16)
    null_hash = null_hash - (1 << 32) if null_hash & 0x80000000 else null_hash
    null_bucket = abs(null_hash) % num_buckets  # = abs(Java's truncating %)
    bucket = step(f"CAST(IF({k} IS NULL, {null_bucket}L, abs({signed} % {num_buckets}L)) AS INT)")
    return steps, bucket


#: Spark's switch for lateral column aliases (a select item referring to an earlier one by name)
_LCA_CONF = "spark.sql.lateralColumnAlias.enableImplicitResolution"


def _with_steps(df: Any, steps: List[Tuple[str, str]]) -> Any:
    """``df`` with the columns of ``steps`` (name, SQL expression over ``df``'s columns and the
    earlier steps) appended: one ``selectExpr`` with lateral column aliases (Spark >= 3.4, on by
    default), i.e. one DataFrame to analyse on the driver instead of one per step; a
    ``withColumn`` per step where lateral aliases are off or a name is taken."""
    from pyspark.sql import functions as F

    try:
        lca = str(df.sparkSession.conf.get(_LCA_CONF, "true")).lower() == "true"
    except Exception:  # noqa: BLE001 (a conf that cannot be read: take the safe path)
        lca = False
    if lca and not set(df.columns) & {name for name, _ in steps}:
        return df.selectExpr("*", *[f"{expr} AS `{name}`" for name, expr in steps])
    for name, expr in steps:
        df = df.withColumn(name, F.expr(expr))
    return df


def _with_context(e: BaseException, where: str) -> BaseException:
    """``e`` with ``where`` (table, Spark partition, partition and bucket) in front of its
    message, keeping its type where the type can be rebuilt from a message (Spark passes the
    message, not the type, to the driver)."""
    msg = f"{where}: {e}"
    try:
        return type(e)(msg)
    except Exception:  # noqa: BLE001
        return PaimonRsError(msg)


def _task_context() -> Tuple[int, int, int]:
    from pyspark import TaskContext

    ctx = TaskContext.get()
    if ctx is None:
        return 0, 0, 0
    return ctx.partitionId(), ctx.attemptNumber(), ctx.taskAttemptId()


def _groups_of(table: Table, batch: pa.RecordBatch) -> str:
    """The (partition, bucket) pairs of ``batch``, for error messages."""
    try:
        cols = [c for c in table.partition_keys + _bucket_keys(table) if c in batch.schema.names]
        cols = list(dict.fromkeys(cols))
        sub = batch.select(cols)
        _, bucket = _core.partition_bucket_of(table._core, sub)
        pairs = set()
        for i in range(min(sub.num_rows, 100_000)):
            part = ", ".join(f"{k}={sub.column(k)[i].as_py()!r}" for k in table.partition_keys)
            pairs.add((part, bucket[i].as_py()))
            if len(pairs) >= 5:
                break
        return "; ".join(f"partition {{{p}}} bucket {b}" if p else f"bucket {b}" for p, b in sorted(pairs))
    except Exception:  # noqa: BLE001 (the original error matters more)
        return "partition/bucket unknown"


def _bucket_keys(table: Table) -> List[str]:
    keys = table.options.get("bucket-key")
    if keys:
        return [k.strip() for k in keys.split(",")]
    return [k for k in table.primary_keys if k not in table.partition_keys]


def _write_task(spec: _WriteSpec, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """One write task: every row it receives goes through the table's writer; yields one row
    per commit message (none for an empty task)."""
    pid, attempt, task_attempt_id = _task_context()
    base = _open_cached(spec.table)
    table = base.copy({"data-file.prefix": spec.task_prefix(pid, attempt)})
    where = f"paimon_rs.spark.write into {table.identifier} (Spark partition {pid}, attempt {attempt})"
    w = table.new_batch_write_builder().new_write()
    try:
        target = table.arrow_schema
        columns_schema = pa.schema([target.field(c) for c in spec.columns])
        for b in batches:
            if b.num_rows == 0:
                continue
            if spec.batch_rows_log:
                with open(os.path.join(spec.batch_rows_log, f"p{pid}-a{attempt}-{os.getpid()}"), "a") as f:
                    f.write(f"{b.num_rows}\n")
            b = b.select(spec.columns)
            try:
                b = _conform(b, columns_schema, where)
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


#: how long the driver waits, after a job, for its task attempts still running to end
SETTLE_TIMEOUT_S = 120.0

#: after attempts were seen running: time for Spark to stop a killed attempt's Python worker
SETTLE_GRACE_S = 0.5

_JOB_GROUP_PROPS = ("spark.jobGroup.id", "spark.job.description", "spark.job.interruptOnCancel")


def _collect_settled(spark: Any, collect: Callable[[], List[Any]]) -> List[Any]:
    """``collect()`` (a ``collect`` of a DataFrame or RDD, which builds it too: building the RDD
    of a DataFrame with a shuffle runs the shuffle's stage under AQE) once (a second action
    would run every task again), in a job group of its own; then, succeeded or failed, wait
    until none of the job's task attempts runs. A job
    fails (or, with speculation, succeeds) while other attempts still run; Spark kills them, but
    one may finish writing its files after ``collect`` returned, and the driver's sweep of the
    files the commit did not take would miss them. The caller's job group is restored."""
    if not _has_spark_context(spark):  # Spark Connect: no status tracker; sweep as is
        return collect()
    sc = spark.sparkContext
    group = f"paimon_rs-{uuid.uuid4().hex}"
    previous = {k: sc.getLocalProperty(k) for k in _JOB_GROUP_PROPS}
    sc.setJobGroup(group, "paimon_rs writers", interruptOnCancel=True)
    try:
        return collect()
    finally:
        for k, v in previous.items():
            sc.setLocalProperty(k, v)  # None removes it
        _wait_for_attempts(sc, group)


def _wait_for_attempts(sc: Any, group: str) -> None:
    """Until no task attempt of the jobs of ``group`` runs (bounded by ``SETTLE_TIMEOUT_S``)."""
    tracker = sc.statusTracker()
    deadline = time.monotonic() + SETTLE_TIMEOUT_S
    seen_running = False
    while True:
        running = 0
        for job in tracker.getJobIdsForGroup(group):
            info = tracker.getJobInfo(job)
            for stage in (info.stageIds if info is not None else []):
                st = tracker.getStageInfo(stage)
                running += st.numActiveTasks if st is not None else 0
        if running == 0:
            break
        seen_running = True
        if time.monotonic() > deadline:
            _log.warning("%d task attempt(s) of job group %s still run after %.0f s; their files, "
                         "if any, are left for remove_orphan_files", running, group, SETTLE_TIMEOUT_S)
            return
        time.sleep(0.05)
    if seen_running:
        time.sleep(SETTLE_GRACE_S)


def _sweep(table: Table, file_prefix: str, keep: Set[str]) -> List[str]:
    """Delete the data files named ``file_prefix*`` (this write's, any task attempt) that are
    not in ``keep``. Returns the deleted paths."""
    deleted: List[str] = []
    root = table.table_path
    for dirpath, dirnames, filenames in os.walk(root):
        if dirpath == root:
            dirnames[:] = [d for d in dirnames if d not in _METADATA_DIRS]
        for f in filenames:
            if f.startswith(file_prefix) and f not in keep:
                p = os.path.join(dirpath, f)
                try:
                    os.remove(p)
                    deleted.append(p)
                except FileNotFoundError:
                    pass
    return deleted


@dataclass
class _Collected:
    """Commit messages of a distributed job, one task attempt per Spark partition."""

    messages: List[CommitMessage]
    files: Set[str]


def _choose_attempts(rows: Sequence[Any], bucketed: bool, table: Table) -> _Collected:
    """Keep one attempt per Spark partition (Spark returns one per partition; a second would be
    a bug) and check that no (partition, bucket) came from two tasks."""
    by_part: Dict[int, int] = {}
    for r in rows:
        by_part.setdefault(r["spark_partition"], r["task_attempt_id"])
    msgs: List[CommitMessage] = []
    owner: Dict[Tuple[bytes, int], int] = {}
    for r in rows:
        if by_part[r["spark_partition"]] != r["task_attempt_id"]:
            continue
        key = (bytes(r["partition"]), r["bucket"])
        if bucketed and owner.setdefault(key, r["spark_partition"]) != r["spark_partition"]:
            raise PaimonRsError(
                f"paimon_rs.spark.write into {table.identifier}: bucket {r['bucket']} of one partition "
                f"was written by Spark partitions {owner[key]} and {r['spark_partition']} (the shuffle must "
                "put a bucket in one task); nothing was committed"
            )
        msgs.append(CommitMessage.from_bytes(bytes(r["message"])))
    files = {f for m in msgs for f in m.file_names + m.compact_after}
    return _Collected(msgs, files)


def _commit_collected(table: Table, builder: Any, collected: _Collected, file_prefix: str,
                      commit_identifier: Optional[int]) -> Optional[int]:
    """Commit once; then delete this write's files that are not committed. On a failed commit
    the files go too, unless the commit landed all the same (its identifier is found)."""
    commit = builder.new_commit()
    try:
        snapshot = commit.commit(collected.messages, commit_identifier=commit_identifier)
    except BaseException:
        landed = None
        if commit_identifier is not None:
            try:
                landed = builder.new_commit()._core.committed_snapshot(commit_identifier)
            except Exception:  # noqa: BLE001 (cannot tell: delete nothing but the losers)
                _sweep(table, file_prefix, collected.files)
                raise
        if landed is None:
            commit.abort(collected.messages)  # never deletes a file a snapshot references
            _sweep(table, file_prefix, set())
        else:
            _sweep(table, file_prefix, collected.files)
        raise
    if commit_identifier is not None and collected.messages:
        # Another run of this job may have committed the identifier meanwhile: the commit then
        # returned that snapshot and wrote nothing. abort deletes our files unless a snapshot
        # references them (ours landed), so they never outlive a commit that did not take them.
        try:
            commit._core.abort(collected.messages)
        except PaimonRsError:
            pass  # the snapshots could not be read: keep what the commit may hold
    _sweep(table, file_prefix, collected.files)
    return snapshot


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
    bucketed = _check_bucketed(table)
    write_id = uuid.uuid4().hex
    file_prefix = f"{table.options.get('data-file.prefix', 'data-')}{write_id}-"
    spec = _WriteSpec(table=table, write_id=write_id, file_prefix=file_prefix, columns=names,
                      fail_first_attempt_marker=_fail_first_attempt_marker, slow_first_attempt=_slow_first_attempt,
                      batch_rows_log=_batch_rows_log)
    if bucketed and _SHUFFLE_PACKED and _has_spark_context(df.sparkSession):
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


@contextlib.contextmanager
def _session_confs(spark: Any, confs: Dict[str, str]) -> Iterator[None]:
    """``confs`` set in ``spark``'s session for the block (the job run in it) and unset after,
    unless the session sets any of them explicitly: then the session's settings all stand (a
    batch size the user chose keeps Spark's byte cap with it). A value this Spark refuses is
    left at Spark's default (these are speed settings, not the write's semantics)."""
    try:
        explicit = bool(set(confs) & set(spark.conf.getAll))  # the settings made, not defaults
    except Exception:  # noqa: BLE001 (a conf that cannot be read: leave it alone)
        explicit = True
    done = []
    try:
        for k, v in ({} if explicit else confs).items():
            try:
                spark.conf.set(k, v)
            except Exception as e:  # noqa: BLE001
                _log.debug("paimon_rs.spark: this Spark refuses %s=%s (%s); left at its default", k, v, e)
                continue
            done.append(k)
        yield
    finally:
        for k in done:
            spark.conf.unset(k)


def _has_spark_context(spark: Any) -> bool:
    try:
        spark.sparkContext  # noqa: B018 (Spark Connect has none)
        return True
    except Exception:  # noqa: BLE001
        return False


def _bind(fn: Callable[..., Any], *args: Any) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    def task(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        return fn(*args, batches)

    return task


def _key_udf(spec: _ShuffleSpec) -> Any:
    body = _shuffle_key_fn(spec)
    try:
        from pyspark.sql.functions import arrow_udf  # Spark >= 4.1

        return arrow_udf(body, "int")  # scalar, from the type hints (pa.Array -> pa.Array)
    except ImportError:
        import pandas as pd
        from pyspark.sql.functions import pandas_udf

        def via_pandas(*cols: pd.Series) -> pd.Series:
            return body(*[pa.Array.from_pandas(c) for c in cols]).to_pandas()

        return pandas_udf(via_pandas, "int")


# ---------------------------------------------------------------------------------------------
# read


#: batches the engine decodes ahead of the one a read task hands to Spark (a thread per task,
#: GIL released: decoding overlaps the Arrow hop to the JVM); 0 decodes on demand
_DECODE_AHEAD = 2

#: why a read takes no split through Spark's Parquet reader (INFO)
_log = logging.getLogger("paimon_rs.spark")


def _read_split(t: Table, reader: Any, raw: bytes, target: pa.Schema, decode_ahead: int,
                where_prefix: str) -> Iterator[pa.RecordBatch]:
    """One serialized split's batches, conformed to ``target``; the decode-ahead thread is
    stopped when the consumer stops early (a limit) or fails."""
    split = _core.Split.from_bytes(raw)
    where = f"{where_prefix} of {t.identifier} ({split.bucket_path})"
    stream = reader.stream([split], decode_ahead)
    try:
        for out in stream:
            if out.num_rows:
                yield _conform(out, target, where)
    except PaimonRsError as e:
        raise _with_context(e, where) from e
    finally:
        stream.close()


def _read_task(table: Table, projection: Optional[List[str]], filt: Any, target: pa.Schema,
               decode_ahead: int, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    t = _open_cached(table)
    reader = t._core.new_read(projection, filt)
    for b in batches:
        for raw in b.column("split").to_pylist():
            yield from _read_split(t, reader, raw, target, decode_ahead, "paimon_rs.spark.read")


def plan_splits(table: Table, columns: Optional[List[str]] = None, filter: Optional[Predicate] = None,
                snapshot_id: Optional[int] = None) -> Tuple[Any, List[bytes], Any]:
    """Driver side of a read: (core filter, serialized splits, Arrow schema of the rows)."""
    filt = filter.to_core(table.arrow_schema) if filter is not None else None
    _, splits = table._core.plan(filt, snapshot_id)
    schema = table._core.new_read(columns, filt).output_schema()
    return filt, [s.to_bytes() for s in splits], schema


def read(spark: Any, table: Table, columns: Optional[List[str]] = None, filter: Optional[Predicate] = None,
         snapshot_id: Optional[int] = None, *, spark_parquet: bool = True) -> Any:
    """The table (``columns`` of it, the rows ``filter`` keeps, at ``snapshot_id``: default the
    latest) as a Spark DataFrame: one task per split, read by the engine in the executors.

    ``spark_parquet=True`` (default): splits that are a plain scan of Parquet files of the
    table's current schema (no merge, no deletion vectors, a local table; see
    ``paimon_rs.spark_parquet``) are read by Spark's own Parquet reader over their exact file
    paths, the others by the engine, and the two are unioned: the same rows, but every column
    is declared nullable (Spark's file sources do). ``False``: every split through the engine,
    with the table's nullability."""
    if not isinstance(table, Table):
        raise TypeError("table must be a paimon_rs Table (catalog.get_table(...))")
    columns = list(columns) if columns is not None else None
    filt = filter.to_core(table.arrow_schema) if filter is not None else None
    _, splits = table._core.plan(filt, snapshot_id)
    schema = table._core.new_read(columns, filt).output_schema()
    spark_schema = spark_schema_of(schema)
    parquet_files: List[str] = []
    retract = False
    if spark_parquet:
        from paimon_rs import spark_parquet as sp

        spark_schema = sp.as_nullable(spark_schema)
        stored = table.table_schema  # the schema the handle reads with (ids, Paimon types)
        why = sp.unfit_read(table.table_path, schema, columns if columns is not None else table.arrow_schema.names,
                            table.arrow_schema, filter, {f.name: f.type for f in stored.fields})
        if why is None:
            parquet_files, retract, splits = sp.route(splits, stored.id, table.table_path)
        else:
            _log.info("paimon_rs.spark.read of %s: every split through the engine: %s", table.identifier, why)
    frames = []
    if parquet_files:
        frames.append(sp.parquet_frame(spark, parquet_files, spark_schema, table.arrow_schema, filter,
                                       bool(table.primary_keys), retract))
    if splits:
        target = _arrow_target(spark_schema, _large_var_types(spark))
        rows = list(enumerate(s.to_bytes() for s in splits))
        if _has_spark_context(spark):
            idx = spark.createDataFrame(spark.sparkContext.parallelize(rows, len(rows)), "i int, split binary")
        else:  # Spark Connect
            idx = spark.createDataFrame(rows, "i int, split binary").repartition(len(rows), "i")
        frames.append(idx.mapInArrow(_bind(_read_task, table, columns, filt, target, _DECODE_AHEAD), spark_schema))
    if not frames:
        return spark.createDataFrame([], spark_schema)
    out = frames[0]
    for f in frames[1:]:
        out = out.union(f)
    return out


# ---------------------------------------------------------------------------------------------
# compact: the driver plans the buckets, one task per bucket compacts it, the driver commits


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
    t = table.copy({"data-file.prefix": spec.task_prefix(spark_partition, attempt)})
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
    specs = None
    if partitions is not None:
        from paimon_rs.table import _partition_batch

        if isinstance(partitions, dict):
            raise InvalidArgumentError("paimon_rs.spark.compact: partitions is a list of {column: value} dicts")
        specs = [_partition_batch(table.arrow_schema, p, "compact") for p in partitions]
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
            yield pa.RecordBatch.from_pydict({
                "spark_partition": pa.array([pid] * len(out), pa.int32()),
                "attempt": pa.array([attempt] * len(out), pa.int32()),
                "task_attempt_id": pa.array([task_attempt_id] * len(out), pa.int64()),
                "bucket": pa.array([0] * len(out), pa.int32()),
                "partition": pa.array([b""] * len(out), pa.binary()),
                "message": pa.array(out, pa.binary()),
            })

    rows = list(enumerate(work))
    idx = spark.createDataFrame(spark.sparkContext.parallelize(rows, len(rows)), "i int, item binary")
    try:
        got = _collect_settled(spark, idx.mapInArrow(run, _MESSAGE_SCHEMA).collect)
        collected = _choose_attempts(got, False, table)
    except BaseException:
        _sweep(table, file_prefix, set())
        raise
    if not collected.messages:
        _sweep(table, file_prefix, set())
        return None
    return _commit_collected(table, builder, collected, file_prefix, None)


#: Spark's switch for ``DataSourceReader.pushFilters`` (off by default in Spark 4.1-4.3)
FILTER_PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"


def register_data_source(spark: Any, filter_pushdown: bool = True) -> None:
    """Register the ``paimon_rs`` Python Data Source: ``spark.read.format("paimon_rs").load(path)``,
    ``df.write.format("paimon_rs").mode("append" | "overwrite").save(path)``.

    ``filter_pushdown=True`` also sets ``spark.sql.python.filterPushdown.enabled=true`` in this
    session: the source's reader implements ``pushFilters``, which Spark refuses
    (``DATA_SOURCE_PUSHDOWN_DISABLED``) while that conf is off. With ``False`` the conf is left
    as it is; a session that keeps it off reads with ``.option("filter_pushdown", "false")``."""
    from paimon_rs.spark_source import PaimonRsDataSource

    if filter_pushdown:
        spark.conf.set(FILTER_PUSHDOWN_CONF, "true")
    spark.dataSource.register(PaimonRsDataSource)
