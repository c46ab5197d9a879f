"""The ``paimon_rs`` Python Data Source (Spark >= 4.0), backed by the same engine and the same
split planning as ``paimon_rs.spark``; register it with ``paimon_rs.spark.register_data_source``.

Read: ``spark.read.format("paimon_rs").load(path)``. Options: ``columns`` (comma list:
projection push-down; a schema given with ``.schema(...)`` projects too), ``snapshot_id``;
any other option is a dynamic table option (``scan.tag-name``, ...) and is validated as such.
Filters Spark hands to ``pushFilters`` become engine predicates (partition and file pruning,
exact filtering); those the engine cannot take stay with Spark.

Filter push-down and Spark's conf: Spark (4.1+) calls ``pushFilters`` only when
``spark.sql.python.filterPushdown.enabled`` is true, and refuses a reader that implements it
while the conf is false (``DATA_SOURCE_PUSHDOWN_DISABLED``). The conf is not passed to
``DataSource.reader()`` (the planner worker keeps it to itself), so a reader cannot adapt to it;
the API's contract is "implement ``pushFilters`` and require the conf". So the reader always
implements it, ``register_data_source`` switches the conf on for its session (unless
``filter_pushdown=False``), and ``.option("filter_pushdown", "false")`` gives a reader without
it, for a session that keeps the conf off (Spark then filters every row itself).

Write: ``df.write.format("paimon_rs").mode("append" | "overwrite").save(path)``. The Data Source
API cannot ask Spark for a distribution, so each task writes the rows it has: on a table with
fixed buckets, pass the frame through ``paimon_rs.spark.distribute(df, table)`` first (one task
per (partition, bucket)); a primary-key commit where two tasks wrote one bucket is refused,
nothing is committed and the files are deleted. ``paimon_rs.spark.write`` does all this itself
and is the faster path. A dynamic-bucket or cross-partition upsert table (``bucket = -1`` with a
primary key) takes only ``distribute``'s frame (its assign stage gives each row its bucket; the
writers restore the snapshot it read), appended; any other frame, and ``mode("overwrite")``, is
refused in ``writer()``, before a task runs.
"""

import uuid
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    InputPartition,
    WriterCommitMessage,
)

from paimon_rs.exceptions import InvalidArgumentError, PaimonRsError, UnsupportedError
from paimon_rs.predicate import Predicate
from paimon_rs.spark import reader as _reader_mod
from paimon_rs.spark.commit import _choose_attempts, _commit_collected, _sweep, mark_ended
from paimon_rs.spark.common import (
    _arrow_target,
    _open_cached,
    spark_schema_of,
)
from paimon_rs.spark.dynamic import (
    ASSIGN_ID_COLUMN,
    ASSIGN_ROWS_COLUMN,
    ASSIGN_SNAPSHOT_COLUMN,
    ASSIGN_TASK_COLUMN,
    BUCKET_COLUMN,
    is_dynamic,
)
from paimon_rs.spark.dynamic import ROW_KIND_COLUMN as DYNAMIC_ROW_KIND_COLUMN
from paimon_rs.spark.reader import _read_split, plan_splits
from paimon_rs.spark.sink import (
    _TaskMessages,
    abort_job,
    check_assign_counts,
    message_rows,
    write_assigned_task,
    write_task,
)
from paimon_rs.spark.streaming import PaimonRsStreamReader, PaimonRsStreamWriter, audit_log_schema, read_options
from paimon_rs.table import Table


class PaimonRsDataSource(DataSource):
    """``format("paimon_rs")``: a table directory as a Spark source and sink."""

    @classmethod
    def name(cls) -> str:
        return "paimon_rs"

    def _split_options(self) -> Tuple[str, Optional[List[str]], Optional[int], Dict[str, str]]:
        opts = {str(k): str(v) for k, v in self.options.items()}
        path = opts.pop("path", None)
        if not path:
            raise InvalidArgumentError("format('paimon_rs') needs a table path: .load(path) / .save(path)")
        opts.pop("filter_pushdown", None)
        cols = opts.pop("columns", None)
        columns = [c.strip() for c in cols.split(",") if c.strip()] if cols else None
        snap = opts.pop("snapshot_id", None)
        return path, columns, int(snap) if snap is not None else None, opts

    def _table(self) -> Table:
        path, _, _, dynamic = self._split_options()
        return Table.open(path, dynamic)

    def _check_read_options(self) -> None:
        _, _, _, dynamic = self._split_options()
        bad = sorted(k for k in dynamic if not k.startswith(("scan.", "source.split.")))
        if bad:
            raise InvalidArgumentError(
                f"format('paimon_rs') read: option(s) {bad} are not read options (path, columns, snapshot_id, "
                "filter_pushdown, scan.*, source.split.*); nothing is ignored"
            )

    def schema(self) -> Any:
        self._check_read_options()
        _, columns, _, _ = self._split_options()
        t = self._table()
        schema = t._core.new_read(columns, None).output_schema()
        return spark_schema_of(schema)

    def reader(self, schema: Any) -> "DataSourceReader":
        self._check_read_options()
        _, columns, snapshot_id, _ = self._split_options()
        t = self._table()
        names = [f.name for f in schema.fields]
        if names != list(t.arrow_schema.names):
            columns = names  # a schema given with .schema(...) or the columns option: projection
        opt = str(self.options.get("filter_pushdown", "true")).lower()
        if opt not in ("true", "false"):
            raise InvalidArgumentError(f"format('paimon_rs'): option filter_pushdown is true or false, not {opt!r}")
        return (_PushdownReader if opt == "true" else _Reader)(t, columns, snapshot_id, schema)

    def writer(self, schema: Any, overwrite: bool) -> "_Writer":
        t = self._table()
        if is_dynamic(t):
            _check_assigned(t, [f.name for f in schema.fields], overwrite)
        return _Writer(t, overwrite, uuid.uuid4().hex)

    def streamWriter(self, schema: Any, overwrite: bool) -> PaimonRsStreamWriter:
        """``df.writeStream.format("paimon_rs")``: each micro-batch one commit (``streaming``)."""
        if overwrite:
            raise UnsupportedError("format('paimon_rs') stream write: the complete output mode (an overwrite per "
                                   "micro-batch) is not supported; use append or update")
        opts = {str(k): str(v) for k, v in self.options.items()}
        path = opts.pop("path", None)
        if not path:
            raise InvalidArgumentError("format('paimon_rs') needs a table path: .start(path)")
        opts.pop("checkpointlocation", None)  # Spark's own, passed along to the sink
        return PaimonRsStreamWriter(Table.open(path, opts), schema)

    def streamReader(self, schema: Any) -> Any:
        raise UnsupportedError("a stream of a paimon_rs table's changes is "
                               "spark.readStream.format('paimon_rs_audit_log') (rows with their row kind)")


# ---------------------------------------------------------------------------------------------
# read


def _predicate_of(table: Table, f: Any) -> Optional[Predicate]:
    """An engine predicate for a Spark data source filter, None if it has none."""
    from pyspark.sql import datasource as ds

    pb = table.new_read_builder().new_predicate_builder()
    names = set(table.arrow_schema.names)

    def col(f: Any) -> Optional[str]:
        a = getattr(f, "attribute", None)
        return a[0] if a and len(a) == 1 and a[0] in names else None

    c = col(f)
    if isinstance(f, ds.Not):
        inner = f.child
        ci = col(inner)
        if ci is None:
            return None
        if isinstance(inner, ds.EqualTo):
            return pb.not_equal(ci, inner.value)
        if isinstance(inner, ds.In):
            return pb.is_not_in(ci, list(inner.value))
        if isinstance(inner, ds.IsNull):
            return pb.is_not_null(ci)
        return None
    if c is None:
        return None
    if isinstance(f, ds.EqualTo):
        return pb.equal(c, f.value)
    if isinstance(f, ds.GreaterThan):
        return pb.greater_than(c, f.value)
    if isinstance(f, ds.GreaterThanOrEqual):
        return pb.greater_or_equal(c, f.value)
    if isinstance(f, ds.LessThan):
        return pb.less_than(c, f.value)
    if isinstance(f, ds.LessThanOrEqual):
        return pb.less_or_equal(c, f.value)
    if isinstance(f, ds.In):
        return pb.is_in(c, list(f.value))
    if isinstance(f, ds.IsNull):
        return pb.is_null(c)
    if isinstance(f, ds.IsNotNull):
        return pb.is_not_null(c)
    if isinstance(f, ds.StringStartsWith):
        return pb.startswith(c, f.value)
    return None


class _Split(InputPartition):
    def __init__(self, split: Optional[bytes]):
        super().__init__(split)


class _Reader(DataSourceReader):
    def __init__(self, table: Table, columns: Optional[List[str]], snapshot_id: Optional[int], schema: Any):
        self.table = table
        self.columns = columns
        self.snapshot_id = snapshot_id
        self.target = _arrow_target(schema, False)
        self.predicates: List[Predicate] = []
        self.decode_ahead = _reader_mod._DECODE_AHEAD

    def _predicate(self) -> Optional[Predicate]:
        if not self.predicates:
            return None
        pb = self.table.new_read_builder().new_predicate_builder()
        return self.predicates[0] if len(self.predicates) == 1 else pb.and_predicates(self.predicates)

    def partitions(self) -> Sequence[InputPartition]:
        _, splits, _ = plan_splits(self.table, self.columns, self._predicate(), self.snapshot_id)
        return [_Split(s) for s in splits] or [_Split(None)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if partition.value is None:
            return
        p = self._predicate()
        filt = p.to_core(self.table.arrow_schema) if p is not None else None
        t = _open_cached(self.table)
        yield from _read_split(t, t._core.new_read(self.columns, filt), partition.value, self.target,
                                  self.decode_ahead, "format('paimon_rs') read")


class _PushdownReader(_Reader):
    """A reader that takes Spark's filters (partition and file pruning, exact filtering); Spark
    needs ``spark.sql.python.filterPushdown.enabled=true`` for it (see the module's doc)."""

    def pushFilters(self, filters: List[Any]) -> Iterator[Any]:
        for f in filters:
            try:
                p = _predicate_of(self.table, f)
                if p is not None:
                    p.to_core(self.table.arrow_schema)  # a value the column cannot take: keep it in Spark
            except (PaimonRsError, ValueError, TypeError, pa.ArrowException):
                p = None
            if p is None:
                yield f
            else:
                self.predicates.append(p)


# ---------------------------------------------------------------------------------------------
# write


def _check_assigned(table: Table, names: List[str], overwrite: bool) -> None:
    """A batch write into a dynamic-bucket table (``bucket = -1`` with a primary key) takes only
    the frame ``paimon_rs.spark.distribute`` makes (rows with their assigned bucket), appended:
    refused here, on the driver, before any task writes a file."""
    kind = ("a cross-partition upsert table (bucket = -1, primary key without a partition key)"
            if table.cross_partition_update else "a dynamic-bucket table (bucket = -1)")
    if overwrite:
        raise UnsupportedError(
            f"format('paimon_rs') write into {table.identifier}, {kind}: mode('overwrite') is not supported by the "
            "Data Source (distribute assigns buckets against the index the overwrite replaces); use "
            "paimon_rs.spark.write(df, table, overwrite=True)")
    needed = [BUCKET_COLUMN, ASSIGN_SNAPSHOT_COLUMN, ASSIGN_ID_COLUMN, ASSIGN_TASK_COLUMN, ASSIGN_ROWS_COLUMN]
    if table.cross_partition_update:
        needed.append(DYNAMIC_ROW_KIND_COLUMN)
    if any(c not in names for c in needed):
        raise UnsupportedError(
            f"format('paimon_rs') write into {table.identifier}, {kind}: a Data Source writer cannot shuffle, and "
            "tasks assigning buckets on their own would put one key in two buckets; write "
            "paimon_rs.spark.distribute(df, table) (it assigns each row its bucket and puts each bucket in one "
            "task) with format('paimon_rs'), or call paimon_rs.spark.write(df, table) (faster)")


class _Writer(DataSourceArrowWriter):
    #: test hook (dynamic-bucket writes): a path; while it exists, the first attempt of every
    #: task fails after writing its files
    fail_first_attempt_marker: Optional[str] = None

    def __init__(self, table: Table, overwrite: bool, write_id: str):
        self.table = table
        self.overwrite = overwrite
        self.dynamic = is_dynamic(table)
        self.file_prefix = f"{table.options.get('data-file.prefix', 'data-')}{write_id}-"

    def write(self, iterator: Iterator[pa.RecordBatch]) -> _TaskMessages:
        if self.dynamic:
            return write_assigned_task(self.table, self.file_prefix, iterator, "format('paimon_rs') write",
                                       self.fail_first_attempt_marker)
        return write_task(self.table, self.file_prefix, iterator, "format('paimon_rs') write",
                           withdraw_when_ended=True)

    def commit(self, messages: List[Optional[WriterCommitMessage]]) -> None:
        table = _open_cached(self.table)
        # No SparkContext here to wait for attempts still running (a speculative copy): mark the
        # write ended before any listing of its files; an attempt ending later finds the marker
        # and deletes its own files (sink.withdraw_if_ended, docs/spark-integration.md).
        mark_ended(table, self.file_prefix)
        builder = table.new_batch_write_builder()
        if self.overwrite:
            builder.overwrite()
        try:
            stages = {m.assign_id for m in messages if isinstance(m, _TaskMessages) and m.assign_id is not None}
            if len(stages) > 1:
                raise InvalidArgumentError(
                    f"format('paimon_rs') write into {table.identifier}: its rows come from {len(stages)} "
                    "paimon_rs.spark.distribute calls (a union of distributed frames: each assigned buckets of its "
                    "own, so a key could land in two buckets); write one distributed frame as it is, nothing was "
                    "committed")
            if self.dynamic:
                check_assign_counts(table, messages, "format('paimon_rs') write")
            collected = _choose_attempts(message_rows(messages), bool(table.primary_keys), table)
        except BaseException:
            _sweep(table, self.file_prefix, set())
            raise
        _commit_collected(table, builder, collected, self.file_prefix, None)

    def abort(self, messages: List[Optional[WriterCommitMessage]]) -> None:
        mark_ended(_open_cached(self.table), self.file_prefix)
        abort_job(self.table, messages, self.file_prefix)


class PaimonRsAuditLogSource(PaimonRsDataSource):
    """``format("paimon_rs_audit_log")``: a table's changes with their row kinds, as a stream
    (``spark.readStream``). A batch read of changes is ``format("paimon_rs")`` with
    ``incremental-between`` options; writes go through ``format("paimon_rs")``."""

    @classmethod
    def name(cls) -> str:
        return "paimon_rs_audit_log"

    def schema(self) -> Any:
        o = read_options(self.options)
        return audit_log_schema(Table.open(o.path), o.columns)

    def reader(self, schema: Any) -> Any:
        raise UnsupportedError("format('paimon_rs_audit_log') is read as a stream (spark.readStream); a batch "
                               "read of changes is format('paimon_rs') with incremental-between options")

    def streamReader(self, schema: Any) -> PaimonRsStreamReader:
        return PaimonRsStreamReader(read_options(self.options), schema)

    def writer(self, schema: Any, overwrite: bool) -> Any:
        raise UnsupportedError("format('paimon_rs_audit_log') is read only; write with format('paimon_rs')")

    def streamWriter(self, schema: Any, overwrite: bool) -> Any:
        return self.writer(schema, overwrite)


DefaultSource = PaimonRsDataSource
