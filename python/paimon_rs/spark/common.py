"""What every part of ``paimon_rs.spark`` shares: the per-process table cache, Arrow/Spark
type mapping, task context and error context, session confs. A leaf: it imports no other module
of the package."""

import contextlib
import logging
import os
import threading
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

import pyarrow as pa

from paimon_rs import _core
from paimon_rs.exceptions import InvalidArgumentError, PaimonRsError
from paimon_rs.table import Table

#: the package's logger (why a read takes no split through Spark's Parquet reader, settle
#: warnings, confs a Spark refuses)
_log = logging.getLogger("paimon_rs.spark")

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


def _num_buckets(table: Table) -> int:
    return int(table.options.get("bucket", "-1"))


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
