"""pypaimon's ``ShardTableUpdator`` (``TableUpdate.new_shard_updator(shard_num, total)``): one
worker of a scan-and-rewrite column update of a data-evolution table.

The worker reads its share of the table (``arrow_reader``: the read projection of
``with_read_projection``, in ``_ROW_ID`` order), computes the update columns
(``with_update_type``) of the same rows in the same order and hands them to
``update_by_arrow_batch``; ``prepare_commit`` returns the commit messages, committed with the
builder's ``new_commit()`` (one commit for all workers, or one each).

The share is pypaimon's: the table's file groups (files sharing a row-id range), in row-id
order, dealt as balanced contiguous runs (``table_ops.shard_range`` over the groups: ``n //
total`` each, the first ``n % total`` one more). Each group gets one update file of the update
columns covering its whole row range, written as soon as its rows are in (as
``update_by_arrow_with_row_id`` writes it); the commit refuses it if a concurrent commit wrote
the same columns of the same rows since the snapshot the worker read
(``CommitConflictError``, Java's 'MERGE INTO' conflict).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, List, Optional, Tuple

import pyarrow as pa
import pyarrow.compute as pc

from paimon_rs.exceptions import InvalidArgumentError
from paimon_rs.table_ops import shard_range
from paimon_rs.table_update import coerce_column

if TYPE_CHECKING:
    from paimon_rs.table import CommitMessage, Table

ROW_ID = "_ROW_ID"


class ShardTableUpdator:
    """Worker ``shard_num`` of ``total_shard_count`` of a scan-and-rewrite update (pypaimon's
    ``ShardTableUpdator``): ``arrow_reader()``, then ``update_by_arrow_batch`` with the update
    columns of every row read, in order, then ``prepare_commit()``."""

    def __init__(self, table: Table, projection: Optional[List[str]], update_cols: Optional[List[str]],
                 commit_user: str, shard_num: int, total_shard_count: int):
        for v in (shard_num, total_shard_count):
            if isinstance(v, bool) or not isinstance(v, int):
                raise InvalidArgumentError(f"new_shard_updator: shard numbers are ints, got {v!r}")
        if total_shard_count <= 0 or not 0 <= shard_num < total_shard_count:
            raise InvalidArgumentError(
                f"new_shard_updator: shard_num must be in [0, {total_shard_count}), got {shard_num}")
        self.table = table
        self.projection = None if projection is None else list(projection)
        self.update_cols = None if update_cols is None else list(update_cols)
        self.commit_user = commit_user
        self.shard_num = shard_num
        self.total_shard_count = total_shard_count
        sid = table.latest_snapshot_id()
        self.snapshot_id: Optional[int] = sid
        groups = table._core.row_id_groups(sid) if sid is not None else []
        lo, hi = shard_range(len(groups), shard_num, total_shard_count)
        self.groups: List[Tuple[int, int]] = groups[lo:hi]
        # positions of the shard in the plan (with_slice's: row ids counted in row-id order)
        self._slice = (sum(n for _, n in groups[:lo]), sum(n for _, n in groups[:hi]))
        self._live: Optional[List[List[int]]] = None  # per group: its live row ids
        self._next = 0  # the group the next rows belong to
        self._pending: List[pa.RecordBatch] = []
        self._pending_rows = 0
        self._messages: List[CommitMessage] = []

    def _read(self, projection: List[str]) -> pa.RecordBatchReader:
        """The shard's rows of the snapshot read (``projection``), in ``_ROW_ID`` order."""
        t = self.table.copy_without_time_travel({"scan.snapshot-id": str(self.snapshot_id)})
        rb = t.new_read_builder().with_projection(projection)
        splits = rb.new_scan().with_slice(*self._slice).plan().splits()
        return rb.new_read().to_arrow_batch_reader(splits)

    def arrow_reader(self) -> pa.RecordBatchReader:
        """The shard's rows (the read projection, every column without one) in ``_ROW_ID``
        order: the rows ``update_by_arrow_batch`` must receive, in the same order. The shard
        is read whole and sorted by ``_ROW_ID`` (a partitioned table's scan is not in row-id
        order), so it is held in memory."""
        if not self.groups:
            names = self.projection if self.projection is not None else self.table.field_names
            schema = self.table.arrow_schema
            fields = [pa.field(ROW_ID, pa.int64(), nullable=False) if n == ROW_ID else schema.field(n)
                      for n in names]
            return pa.RecordBatchReader.from_batches(pa.schema(fields), [])
        names = self.projection if self.projection is not None else list(self.table.field_names)
        # the scan returns splits partition by partition, not in _ROW_ID order: read the row
        # ids too and sort by them (update_by_arrow_batch maps the i-th row given to the i-th
        # live row id), dropping _ROW_ID again when it was not projected
        rows = self._read(names if ROW_ID in names else [*names, ROW_ID]).read_all()
        rows = rows.take(pc.sort_indices(rows.column(ROW_ID)))
        if ROW_ID not in names:
            rows = rows.drop_columns([ROW_ID])
        return pa.RecordBatchReader.from_batches(rows.schema, rows.to_batches())

    def _live_ids(self) -> List[List[int]]:
        if self._live is None:
            ids = self._read([ROW_ID]).read_all().column(ROW_ID).to_pylist() if self.groups else []
            ids.sort()
            live: List[List[int]] = []
            i = 0
            for first, n in self.groups:
                j = i
                while j < len(ids) and ids[j] < first + n:
                    j += 1
                live.append(ids[i:j])
                i = j
            self._live = live
        return self._live

    def update_by_arrow_batch(self, data: pa.RecordBatch) -> None:
        """The update columns of the next ``data.num_rows`` rows read (a ``RecordBatch`` or
        ``Table``); a group's update file is written once all its rows are in."""
        if isinstance(data, pa.Table):
            data = data.combine_chunks().to_batches()[0] if data.num_rows else pa.RecordBatch.from_pylist(
                [], schema=data.schema)
        if not isinstance(data, pa.RecordBatch):
            raise InvalidArgumentError(
                f"update_by_arrow_batch: expected a pyarrow.RecordBatch, got {type(data).__name__}")
        live = self._live_ids()
        total = sum(len(g) for g in live[self._next:])
        if self._pending_rows + data.num_rows > total:
            self._abort()  # the update files of the groups already written go too
            raise InvalidArgumentError(
                f"update_by_arrow_batch: No more row ranges to write: shard {self.shard_num} of "
                f"{self.total_shard_count} of {self.table.identifier} has {total} rows left to write and "
                f"{self._pending_rows + data.num_rows} were given. Ensure you write exactly the same "
                "number of rows as read from this shard.")
        self._pending.append(data)
        self._pending_rows += data.num_rows
        try:
            while self._next < len(live) and self._pending_rows >= len(live[self._next]):
                self._flush_group(live[self._next])
        except BaseException:
            self._abort()
            raise

    def _flush_group(self, ids: List[int]) -> None:
        """Write the update file of group ``self._next`` from the first ``len(ids)`` pending
        rows."""
        first, n = self.groups[self._next]
        self._next += 1
        if not ids:  # every row of the group is deleted
            return
        rows = pa.Table.from_batches(self._pending)
        cols = self._columns(rows.column_names)
        mine, rest = rows.slice(0, len(ids)), rows.slice(len(ids))
        self._pending = rest.to_batches()
        self._pending_rows = rest.num_rows
        # position p of the group: the row with id first + p; a deleted row (never read) gets
        # null, or in a NOT NULL column the group's first live row's value
        at = {r - first: j for j, r in enumerate(ids)}
        schema = self.table.arrow_schema
        arrays = []
        for c in cols:
            field = schema.field(c)
            take = pa.array([at.get(p, None if field.nullable else 0) for p in range(n)], pa.int64())
            arrays.append(coerce_column(mine.column(c), field.type, c).take(take).combine_chunks())
        batch = pa.RecordBatch.from_arrays(arrays, names=cols)
        self._messages.append(self.table._core.write_row_id_update(self.snapshot_id, first, batch))

    def _columns(self, given: List[str]) -> List[str]:
        """The columns to update: ``with_update_type``'s, else every column ``given`` but
        ``_ROW_ID``; each a column of the table, not a partition key, in ``given``."""
        cols = self.update_cols if self.update_cols is not None else [c for c in given if c != ROW_ID]
        problems = [
            ("are not in table schema", [c for c in cols if c not in self.table.field_names]),
            ("are missing from the input", [c for c in cols if c not in given]),
            ("are partition columns (a row would stay in its old partition)",
             [c for c in cols if c in self.table.partition_keys]),
        ]
        for what, bad in problems:
            if bad:
                raise InvalidArgumentError(f"update_by_arrow_batch: the update columns {bad} of "
                                           f"{self.table.identifier} {what}")
        return cols

    def _abort(self) -> None:
        if self._messages:
            self.table._core.new_commit(self.commit_user).abort(self._messages)
            self._messages = []

    def prepare_commit(self) -> List[CommitMessage]:
        """The commit messages of the shard's update files (nothing committed). Every row
        read must have been given to ``update_by_arrow_batch``."""
        live = self._live_ids()
        left = sum(len(g) for g in live[self._next:]) - self._pending_rows
        if left:
            self._abort()
            raise InvalidArgumentError(
                f"prepare_commit: shard {self.shard_num} of {self.total_shard_count} of "
                f"{self.table.identifier}: {left} rows read were not given to update_by_arrow_batch "
                "(write exactly the rows read from this shard, in order); nothing was committed")
        out, self._messages = self._messages, []
        return out
