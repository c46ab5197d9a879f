"""Batch writes of a postpone-bucket table (``bucket = -2``) straight into fixed buckets
(pypaimon's ``new_postpone_fixed_bucket_write_builder``, Java's batch sinks with
``postpone.batch-write-fixed-bucket``).

A plain write of a postpone-bucket table lands in ``bucket-postpone``, invisible to readers
until a compaction moves it. This write instead gives every partition a real bucket count and
writes the rows into those buckets, readable at once:

- a partition that already has real buckets keeps their count;
- a new partition gets ``postpone.default-bucket-num`` when set, else its rows (with the rows
  still waiting in its ``bucket-postpone``) over ``postpone.target-row-num-per-bucket`` when
  set, else their size as Java's ``BinaryRow`` over ``postpone.target-size-per-bucket``,
  rounded up, at least 1, at most ``postpone.batch-write-fixed-bucket.max-parallelism``;
- ``with_bucket_plan`` fixes the counts instead (a coordinator's plan shared by workers).

The rows are buffered until ``prepare_commit`` (the counts depend on all of them). A commit
whose messages disagree on a partition's count, or differ from its live files' count, is
refused (``CommitConflictError``: "Total buckets ..."); an overwrite may rescale the
partitions it replaces.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

import pyarrow as pa
import pyarrow.compute as pc

from paimon_rs import _core
from paimon_rs.exceptions import InvalidArgumentError, PaimonRsError
from paimon_rs.table import BatchTableWrite, BatchWriteBuilder, BucketMode, Table, _partition_batch

__all__ = ["PostponeBucketPlan", "PostponeFixedBucketWriteBuilder", "PostponeFixedBucketBatchTableWrite"]

_MAX_BUCKETS = 2147483647


def _ceil_div(a: int, b: int) -> int:
    return (a + b - 1) // b


def _word(n: int) -> int:
    return _ceil_div(n, 8) * 8


class PostponeBucketPlan:
    """Bucket counts by partition (a tuple of the partition values, in partition-key order)."""

    def __init__(self, num_buckets: Dict[Tuple[Any, ...], int]):
        plan = {}
        for partition, count in dict(num_buckets).items():
            if isinstance(count, bool) or not isinstance(count, int) or not 0 < count <= _MAX_BUCKETS:
                raise InvalidArgumentError(
                    f"bucket plan: the bucket count of {partition!r} must be a positive 32-bit integer, "
                    f"got {count!r}")
            plan[tuple(partition)] = count
        self._num_buckets = plan

    def contains(self, partition: Tuple[Any, ...]) -> bool:
        """Whether the plan gives ``partition`` a bucket count."""
        return tuple(partition) in self._num_buckets

    def num_buckets(self, partition: Tuple[Any, ...]) -> int:
        """The bucket count of ``partition`` (``InvalidArgumentError`` when the plan has none)."""
        partition = tuple(partition)
        if partition not in self._num_buckets:
            raise InvalidArgumentError(f"Missing bucket plan for partition {partition}")
        return self._num_buckets[partition]

    def as_dict(self) -> Dict[Tuple[Any, ...], int]:
        """The counts as a new dict."""
        return dict(self._num_buckets)


def _as_plan(plan: Any) -> PostponeBucketPlan:
    if isinstance(plan, PostponeBucketPlan):
        return plan
    if isinstance(plan, dict):
        return PostponeBucketPlan(plan)
    if hasattr(plan, "as_dict"):  # pypaimon's PostponeBucketPlan
        return PostponeBucketPlan(plan.as_dict())
    raise TypeError(f"with_bucket_plan expects a PostponeBucketPlan or a dict, got {type(plan).__name__}")


class PostponeFixedBucketWriteBuilder(BatchWriteBuilder):
    """The batch write builder of ``Table.new_postpone_fixed_bucket_write_builder()`` (see the
    module): ``overwrite``, ``with_commit_user`` and ``new_commit`` as a ``BatchWriteBuilder``'s."""

    def __init__(self, table: Table):
        if table.bucket_mode() != BucketMode.POSTPONE_MODE:
            raise InvalidArgumentError(
                f"Postpone fixed-bucket write requires a postpone-bucket table (a primary-key table "
                f"with bucket = -2); {table.identifier} is {table.bucket_mode()}")
        super().__init__(table)
        self._bucket_plan: Optional[PostponeBucketPlan] = None

    def with_bucket_plan(self, bucket_plan: Any) -> PostponeFixedBucketWriteBuilder:
        """Use these bucket counts (a ``PostponeBucketPlan``, pypaimon's, or a dict partition
        tuple -> count) instead of planning them; a written partition the plan misses is
        refused."""
        self._bucket_plan = _as_plan(bucket_plan)
        return self

    def new_write(self) -> PostponeFixedBucketBatchTableWrite:
        """A write that plans each partition's bucket count at ``prepare_commit``."""
        return PostponeFixedBucketBatchTableWrite(self.table, self._overwrite, self._bucket_plan)


class PostponeFixedBucketBatchTableWrite(BatchTableWrite):
    """Buffers the rows; ``prepare_commit`` plans the bucket count of each partition and writes
    the rows into those buckets (Parquet or the table's ``file.format``, as a fixed-bucket
    table's)."""

    def __init__(self, table: Table, overwrite: bool = False, bucket_plan: Optional[PostponeBucketPlan] = None):
        # no engine writer of its own: one per bucket count at prepare_commit
        self.table = table
        self._closed = False
        self._prepared = False
        self._rows: List[Dict[str, Any]] = []
        self._write_cols: Optional[List[str]] = None
        self._progress = None
        self._done = (0, 0)
        self._overwrite = overwrite
        self._plan = bucket_plan
        self._inputs: List[pa.Table] = []
        self._writers: List[BatchTableWrite] = []
        self._planner = _Planner(table)  # validates the options now, as pypaimon does

    def write_arrow(self, data: Any) -> None:
        """Buffer a pyarrow Table (or any ``__arrow_c_stream__`` / ``__arrow_c_array__``
        exporter) until ``prepare_commit``."""
        self._check_open()
        data = self._fill_left_out(data)
        if isinstance(data, pa.RecordBatch):
            data = pa.Table.from_batches([data])
        elif not isinstance(data, pa.Table):
            data = pa.table(data)
        missing = [k for k in self.table.partition_keys if k not in data.schema.names]
        if missing:
            raise InvalidArgumentError(f"write on {self.table.identifier}: partition columns {missing} missing")
        self._inputs.append(data)

    def write_pandas(self, df: Any) -> None:
        """Buffer a pandas DataFrame (as ``BatchTableWrite.write_pandas`` converts it)."""
        self.write_arrow(pa.Table.from_pandas(df, preserve_index=False))

    def _prepare_commit(self, commit_identifier: Optional[int],
                        wait_compaction: bool = True) -> List[_core.CommitMessage]:
        self._check_open()
        self._flush_rows()
        self._prepared = True
        inputs, self._inputs = self._inputs, []
        if not inputs:
            return []
        # each input as it came (the engine checks and converts its columns), planned together
        parts = [self._planner.partitions_of(data) for data in inputs]
        plan = self._plan
        if plan is None:
            known = {} if self._overwrite else None
            plan = self._planner.plan(inputs, parts, known, include_postpone_rows=not self._overwrite)
        writers: Dict[int, BatchTableWrite] = {}
        for data, data_parts in zip(inputs, parts):
            by_count: Dict[int, List[int]] = {}
            for i, p in enumerate(data_parts):
                by_count.setdefault(plan.num_buckets(p), []).append(i)
            for n, rows in sorted(by_count.items()):
                subset = data if len(rows) == data.num_rows else data.take(pa.array(rows, type=pa.int64()))
                if n not in writers:
                    writers[n] = BatchTableWrite(self.table.copy({"bucket": str(n)}),
                                                 ignore_previous_files=self._overwrite)
                    self._writers.append(writers[n])
                writers[n].write_arrow(subset)
        messages: List[_core.CommitMessage] = []
        for n in sorted(writers):
            messages.extend(writers[n]._prepare_commit(commit_identifier, wait_compaction))
        return messages

    def abort(self) -> None:
        """Drop the buffered rows and the files written (nothing reaches the table)."""
        if not self._closed:
            self._closed = True
            self._inputs, self._rows = [], []
            for w in self._writers:
                w.abort()

    def close(self) -> None:
        """Release the buffers (without a prepare_commit nothing reaches the table)."""
        if not self._closed:
            self._closed = True
            self._inputs, self._rows = [], []
            for w in self._writers:
                w.close()


class _Planner:
    """Bucket counts of new partitions (pypaimon's ``PostponeBucketPlanner``)."""

    def __init__(self, table: Table):
        self.table = table
        opts = table.options
        if str(opts.get("bucket-function.type", "default")).strip().lower() != "default":
            raise InvalidArgumentError(
                "Postpone fixed bucket writes only support bucket-function.type=default")
        self.default_num = opts.postpone_default_bucket_num()
        self.max_num = int(opts.postpone_batch_write_fixed_bucket_max_parallelism())
        if self.max_num <= 0:
            raise InvalidArgumentError(
                f"postpone.batch-write-fixed-bucket.max-parallelism must be positive, got {self.max_num}")
        rows = opts.postpone_target_row_num_per_bucket()
        self.target_rows = None if rows is None else int(rows)
        if self.target_rows is not None and self.target_rows <= 0:
            raise InvalidArgumentError(
                f"postpone.target-row-num-per-bucket must be positive, got {self.target_rows}")
        self.target_size = int(opts.postpone_target_size_per_bucket())
        if self.target_size <= 0:
            raise InvalidArgumentError(
                f"postpone.target-size-per-bucket must be positive, got {self.target_size}")

    def partitions_of(self, data: pa.Table) -> List[Tuple[Any, ...]]:
        keys = self.table.partition_keys
        if not keys:
            return [()] * data.num_rows
        cols = [data.column(k).to_pylist() for k in keys]
        return list(zip(*cols))

    def existing(self) -> Tuple[Dict[Tuple[Any, ...], int], Dict[Tuple[Any, ...], int]]:
        """The bucket count of each partition with real buckets and the rows waiting in each
        partition's ``bucket-postpone``, from the latest snapshot's manifests."""
        core = self.table._core
        if self.table.latest_snapshot_id() is None:
            return {}, {}
        default = self.table.options.get("partition.default-name", "__DEFAULT_PARTITION__")
        schema = self.table.arrow_schema
        values: Dict[str, Tuple[Any, ...]] = {}
        for spec, ppath, *_ in _core.partition_stats(core, None):
            spec_d = {k: None if v == default else _path_value(v, schema.field(k).type) for k, v in spec}
            row = _partition_batch(schema, spec_d, "postpone bucket plan") if spec_d else None
            values[ppath] = tuple(row.column(k)[0].as_py() for k in self.table.partition_keys) if row else ()
        known: Dict[Tuple[Any, ...], int] = {}
        waiting: Dict[Tuple[Any, ...], int] = {}
        for ppath, bucket, total, _name, _level, _size, nrows, *_ in _core.live_files(core, None):
            part = values.get(ppath, ())
            if bucket == -2:
                waiting[part] = waiting.get(part, 0) + nrows
            elif bucket >= 0 and total > 0:
                if known.setdefault(part, total) != total:
                    raise PaimonRsError(
                        f"Partition {part} has different total buckets {known[part]} and {total}")
        return known, waiting

    def plan(self, inputs: List[pa.Table], parts: List[List[Tuple[Any, ...]]],
             known: Optional[Dict[Tuple[Any, ...], int]], include_postpone_rows: bool) -> PostponeBucketPlan:
        """The bucket counts of ``known`` (None: the table's) and of the new partitions of
        ``inputs`` (``parts``: each input's partition per row)."""
        waiting: Dict[Tuple[Any, ...], int] = {}
        if known is None:
            known, waiting = self.existing()
        known = dict(known)
        by_size = self.default_num is None and self.target_rows is None
        stats: Dict[Tuple[Any, ...], Tuple[int, int]] = {}
        for data, data_parts in zip(inputs, parts):
            new = [i for i, p in enumerate(data_parts) if p not in known]
            if not new:
                continue
            sizes = self.row_sizes(data) if by_size else None
            for i in new:
                rows, size = stats.get(data_parts[i], (0, 0))
                stats[data_parts[i]] = (rows + 1, size + (sizes[i] if sizes is not None else 0))
        for part, (rows, size) in stats.items():
            known[part] = self.num_buckets(rows, size, waiting.get(part, 0) if include_postpone_rows else 0)
        return PostponeBucketPlan(known)

    def num_buckets(self, rows: int, size: int, waiting: int) -> int:
        """The bucket count of a new partition of ``rows`` rows of ``size`` bytes (Java's
        ``BinaryRow``) with ``waiting`` rows in its ``bucket-postpone``."""
        if self.default_num is not None:
            return int(self.default_num)
        if self.target_rows is not None:
            n = max(1, _ceil_div(rows + waiting, self.target_rows))
        else:
            if waiting and rows:
                size = _ceil_div(size * (rows + waiting), rows)
            n = max(1, _ceil_div(size, self.target_size))
        return min(n, self.max_num)

    def row_sizes(self, data: pa.Table) -> List[int]:
        """Each row's size as Java's ``BinaryRow`` (fixed part plus variable part)."""
        n = data.num_columns
        fixed = ((n + 71) // 64) * 8 + n * 8
        total = [fixed] * data.num_rows
        paimon_types = {f.name: str(f.type).upper() for f in self.table.fields}
        for name in data.schema.names:
            col = data.column(name)
            ptype = paimon_types.get(name, "")
            sizes = _column_sizes(col, ptype)
            if sizes is not None:
                total = [a + b for a, b in zip(total, sizes)]
        return total


def _path_value(v: str, t: pa.DataType) -> Any:
    """A partition directory's value as the column holds it (``partition.legacy-name``, the
    default, renders a DATE as its day number)."""
    if pa.types.is_date32(t) and v.lstrip("-").isdigit():
        return pa.scalar(int(v), pa.int32()).cast(t).as_py()
    return v


def _column_sizes(col: pa.ChunkedArray, ptype: str) -> Optional[List[int]]:
    """Bytes a column adds to each row's variable part (None: none, a fixed-width column)."""
    t = col.type
    if pa.types.is_decimal(t):
        return [16] * len(col) if t.precision > 18 else None
    if pa.types.is_timestamp(t):
        return [8] * len(col) if t.unit in ("us", "ns") else None
    if ptype.startswith("VARIANT"):
        return [_variant_size(v) for v in col.to_pylist()]
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t) \
            or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        lengths = pc.binary_length(col) if not pa.types.is_fixed_size_binary(t) else \
            pa.chunked_array([pa.array([t.byte_width] * len(col))])
        return [0 if n is None or n <= 7 else _word(n) for n in lengths.to_pylist()]
    if pa.types.is_nested(t):
        return [0 if v is None else _nested_size(v, t) for v in col.to_pylist()]
    return None


def _variant_size(v: Any) -> int:
    if v is None:
        return 0
    value, metadata = (v["value"], v["metadata"]) if isinstance(v, dict) else (v.value(), v.metadata())
    return _word(4 + len(bytes(value)) + len(bytes(metadata)))


def _value_size(v: Any, t: pa.DataType) -> int:
    """The variable bytes of one (non-null) value of type ``t`` in a BinaryRow / BinaryArray."""
    if pa.types.is_decimal(t):
        return 16 if t.precision > 18 else 0
    if pa.types.is_timestamp(t):
        return 8 if t.unit in ("us", "ns") else 0
    if isinstance(v, str):
        v = v.encode("utf-8")
    if isinstance(v, (bytes, bytearray)):
        return 0 if len(v) <= 7 else _word(len(v))
    if pa.types.is_nested(t):
        return _nested_size(v, t)
    return 0


def _fixed_width(t: pa.DataType) -> int:
    if pa.types.is_boolean(t) or pa.types.is_int8(t):
        return 1
    if pa.types.is_int16(t):
        return 2
    if pa.types.is_int32(t) or pa.types.is_float32(t) or pa.types.is_date32(t) or pa.types.is_time32(t):
        return 4
    return 8


def _array_size(values: List[Any], t: pa.DataType) -> int:
    header = 4 + ((len(values) + 31) // 32) * 4
    size = _word(header + len(values) * _fixed_width(t))
    return size + sum(_value_size(v, t) for v in values if v is not None)


def _nested_size(v: Any, t: pa.DataType) -> int:
    if pa.types.is_fixed_size_list(t) and not pa.types.is_nested(t.value_type):
        # Paimon's VECTOR: a length word and the primitive elements
        return _word(4 + t.list_size * _fixed_width(t.value_type))
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return _word(_array_size(list(v), t.value_type))
    if pa.types.is_map(t):
        items = list(v.items()) if isinstance(v, dict) else list(v)
        return _word(4 + _array_size([k for k, _ in items], t.key_type)
                     + _array_size([x for _, x in items], t.item_type))
    if pa.types.is_struct(t):
        fields = [t.field(i) for i in range(t.num_fields)]
        n = len(fields)
        size = ((n + 71) // 64) * 8 + n * 8
        size += sum(_value_size(v.get(f.name), f.type) for f in fields if v.get(f.name) is not None)
        return _word(size)
    return 0
