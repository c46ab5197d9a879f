"""The shuffle of a write: each row's (partition, bucket) by the engine's bucket hash, as a
Spark SQL expression (one INT/BIGINT bucket key) or an Arrow UDF, the packed shuffle of
``write`` (rows grouped into Arrow IPC blobs) and ``distribute`` (row by row, for the Data
Source write)."""

from dataclasses import dataclass
from typing import Any, Callable, Iterator, List, Optional, Tuple

import pyarrow as pa

from paimon_rs import _core
from paimon_rs.exceptions import InvalidArgumentError
from paimon_rs.spark.common import (
    _bind,
    _bucket_keys,
    _groups_of,
    _has_spark_context,
    _large_var_types,
    _num_buckets,
    _open_cached,
    _task_context,
    _unsupported,
    _with_context,
)
from paimon_rs.table import Table

#: the column the write adds for its shuffle (dropped before the rows reach the writer)
WRITE_KEY_COLUMN = "_paimon_rs_shuffle_key"

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
        raise _unsupported(f"paimon_rs.spark: this shuffle of {table.identifier}, a primary-key table, needs "
                           f"a fixed 'bucket' > 0 (got {table.options.get('bucket', 'dynamic (-1)')}); "
                           "paimon_rs.spark.write and paimon_rs.spark.distribute assign dynamic buckets "
                           "(an assign stage)")
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
