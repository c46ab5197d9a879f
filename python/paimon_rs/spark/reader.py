"""``read``: a table as a DataFrame, the splits planned on the driver and read by the engine
in the executors (those that are a plain scan of Parquet files by Spark's own reader, see
``paimon_rs.spark.parquet``). ``_read_split`` is the one place a task reads a split: the Data
Source and the streaming read use it too."""

from typing import Any, Iterator, List, Optional, Tuple

import pyarrow as pa

from paimon_rs import _core
from paimon_rs.data_types import type_dict
from paimon_rs.exceptions import PaimonRsError
from paimon_rs.predicate import Predicate
from paimon_rs.spark import parquet as sp
from paimon_rs.spark.common import (
    _arrow_target,
    _bind,
    _conform,
    _has_spark_context,
    _large_var_types,
    _log,
    _open_cached,
    _with_context,
    spark_schema_of,
)
from paimon_rs.table import Table

#: batches the engine decodes ahead of the one a read task hands to Spark (a thread per task,
#: GIL released: decoding overlaps the Arrow hop to the JVM); 0 decodes on demand
_DECODE_AHEAD = 2


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
    ``paimon_rs.spark.parquet``) are read by Spark's own Parquet reader over their exact file
    paths, the others by the engine, and the two are unioned: the same rows, but every column
    is declared nullable (Spark's file sources do). ``False``: every split through the engine,
    with the table's nullability."""
    from paimon_rs.system_tables import SystemTable

    if isinstance(table, SystemTable):
        return _read_system_table(spark, table, columns, filter, snapshot_id)
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
        spark_schema = sp.as_nullable(spark_schema)
        stored = table.table_schema  # the schema the handle reads with (ids, Paimon types)
        why = sp.unfit_read(table.table_path, schema, columns if columns is not None else table.arrow_schema.names,
                            table.arrow_schema, filter, {f.name: type_dict(f.type) for f in stored.fields})
        if why is None:
            parquet_files, retract, splits = sp.route(splits, stored.id, table.table_path)
        else:
            _log.info("paimon_rs.spark.read of %s: every split through the engine: %s", table.identifier, why)
    frames = []
    if parquet_files:
        frames.append(sp.parquet_frame(spark, parquet_files, spark_schema, table.arrow_schema, filter,
                                       bool(table.primary_keys), retract))
    if splits:
        frames.append(splits_frame(spark, table, [s.to_bytes() for s in splits], columns, filt, spark_schema))
    if not frames:
        return spark.createDataFrame([], spark_schema)
    out = frames[0]
    for f in frames[1:]:
        out = out.union(f)
    return out


def splits_frame(spark: Any, table: Table, splits: List[bytes], columns: Optional[List[str]], filt: Any,
                 spark_schema: Any) -> Any:
    """The rows of the serialized ``splits`` (planned on the driver) as a DataFrame of
    ``spark_schema``: one task per split, read by the engine in the executors."""
    target = _arrow_target(spark_schema, _large_var_types(spark))
    rows = list(enumerate(splits))
    if _has_spark_context(spark):
        idx = spark.createDataFrame(spark.sparkContext.parallelize(rows, len(rows)), "i int, split binary")
    else:  # Spark Connect
        idx = spark.createDataFrame(rows, "i int, split binary").repartition(len(rows), "i")
    return idx.mapInArrow(_bind(_read_task, table, columns, filt, target, _DECODE_AHEAD), spark_schema)


def _read_system_table(spark: Any, table: Any, columns: Optional[List[str]], filter: Optional[Predicate],
                       snapshot_id: Optional[int]) -> Any:
    """A system table (``catalog.get_table("db.t$files")``) as a DataFrame: its rows are built
    on the driver from the table's metadata (small: one row per snapshot, file, ...) and handed
    to Spark with the system table's schema."""
    rows = table.to_arrow(filter=filter, projection=list(columns) if columns is not None else None,
                          snapshot_id=snapshot_id)
    return spark.createDataFrame(rows, schema=spark_schema_of(rows.schema))
