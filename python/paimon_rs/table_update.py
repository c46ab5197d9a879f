"""Updates of existing rows of data-evolution tables by ``_ROW_ID`` (pypaimon 2.1.0's
``write_builder.new_update()``): ``with_update_type(cols)`` then
``update_by_arrow_with_row_id(data)`` returns the commit messages of the update, committed with
the builder's ``new_commit()``; ``update_by_predicate`` updates the rows a predicate matches.

The rows of a data-evolution table live in file groups (the files sharing a ``first_row_id``).
For each group holding an updated row, one file of the group's whole row range is written with
only the updated columns (``write_cols``): the updated rows' new values and the other rows'
current ones, as pypaimon writes it; the commit gives it the snapshot's id as sequence number,
so reads (paimon_rs's, pypaimon's, Java's) take those columns from it. See docs/formats.md,
"Data-evolution tables".
"""

from __future__ import annotations

import bisect
from typing import TYPE_CHECKING, Any, Iterable, List, Mapping, Optional, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from paimon_rs.blob_view import inline_blob_fields
from paimon_rs.exceptions import InvalidArgumentError, SchemaMismatchError, UnsupportedError
from paimon_rs.options import TIME_TRAVEL_OPTIONS
from paimon_rs.predicate import Predicate, PredicateBuilder

if TYPE_CHECKING:
    from paimon_rs.shard_updator import ShardTableUpdator
    from paimon_rs.table import CommitMessage, Table

ROW_ID = "_ROW_ID"


def coerce_column(col: Any, typ: pa.DataType, name: str) -> Any:
    """``col`` (an array or chunked array of the input) as the table column ``name``'s type
    ``typ``: a cast, or, where pyarrow casts no such pair, the values rebuilt (pypaimon's
    ``_coerce_column``): a MAP column given as lists of (key, value) pairs (what
    ``pa.Table.from_pydict`` infers from tuples) or as dicts (inferred as a struct)."""
    try:
        return col.cast(typ)
    except (pa.ArrowNotImplementedError, pa.ArrowTypeError):
        if not pa.types.is_map(typ):
            raise
    rows = []
    for row in col.to_pylist():
        if row is None:
            rows.append(None)
        elif isinstance(row, dict):
            if pa.types.is_struct(col.type) and any(v is None for v in row.values()):
                # a struct inferred from dicts holds None for a key another dict has
                raise InvalidArgumentError(
                    f"column {name}: Cannot coerce schema-less dict input with null values to map "
                    "type (pyarrow makes a key missing from a dict and a null value both None); "
                    "pass an explicit map-typed array or lists of (key, value) pairs instead.")
            rows.append(list(row.items()))
        else:
            rows.append([tuple(pair) for pair in row])
    out = pa.array(rows, type=typ)
    return pa.chunked_array([out], typ) if isinstance(col, pa.ChunkedArray) else out


def _assignment(col: str, value: Any, typ: pa.DataType, n: int) -> Any:
    """The column ``col`` of ``n`` matched rows that ``value`` (a literal or an array) gives."""
    if isinstance(value, (pa.Array, pa.ChunkedArray)):
        if len(value) != n:
            raise InvalidArgumentError(
                f"update_by_predicate: Assignment array length must match matched row count: "
                f"{len(value)} != {n} (column {col}).")
        return coerce_column(value, typ, col)
    if isinstance(value, pa.Scalar):
        value = value.as_py()
    return pa.array([value] * n, type=typ)


def _refused(what: str) -> UnsupportedError:
    return UnsupportedError(
        f"TableUpdate.{what}: not implemented by paimon_rs (update_by_arrow_with_row_id, "
        "update_by_arrow_batches_with_row_id and update_by_predicate of data-evolution tables are)")


class TableUpdate:
    """pypaimon's ``TableUpdate``: column updates of existing rows by ``_ROW_ID``."""

    def __init__(self, table: Table, commit_user: str):
        self.table = table
        self.commit_user = commit_user
        self.update_cols: Optional[List[str]] = None
        self.projection: Optional[List[str]] = None

    def with_update_type(self, update_cols: List[str]) -> TableUpdate:
        """Update the columns ``update_cols`` (default: every column of the input except
        ``_ROW_ID``)."""
        cols = list(dict.fromkeys(update_cols))
        names = self.table.field_names
        for c in cols:
            if c not in names:
                raise InvalidArgumentError(f"with_update_type: column {c} is not in table schema")
        self.update_cols = None if len(cols) == len(names) else cols
        return self

    def with_read_projection(self, projection: List[str]) -> None:
        """The columns ``new_shard_updator``'s ``arrow_reader`` reads (``_ROW_ID`` allowed;
        default: every column)."""
        self.projection = list(projection)

    def new_predicate_builder(self) -> PredicateBuilder:
        """A predicate builder over the table's columns."""
        return self.table.new_read_builder().new_predicate_builder()

    def _check_data_evolution(self, what: str) -> None:
        if self.table.options.get("data-evolution.enabled", "false").strip().lower() != "true":
            raise UnsupportedError(
                f"{what} of {self.table.identifier}: the table does not set "
                "'data-evolution.enabled' (only data-evolution tables keep a row's other columns "
                "when some are rewritten)")

    def _update(self, tables: Iterable[Any], cols: Optional[List[str]] = None,
                sid: Optional[int] = None) -> List[CommitMessage]:
        from paimon_rs.mutations import _to_table

        self._check_data_evolution("update by _ROW_ID")
        if sid is None:
            sid = self.table.latest_snapshot_id()
        messages: List[CommitMessage] = []
        done: dict = {}  # column -> first_row_ids of groups written (pypaimon's overlap check)
        try:
            for data in tables:
                data = _to_table(data, "update_by_arrow_with_row_id")
                self._update_one(data, sid, done, cols, messages)
        except BaseException:
            if messages:
                self.table._core.new_commit(self.commit_user).abort(messages)
            raise
        return messages

    def _update_one(self, data: pa.Table, sid: Optional[int], done: dict,
                    cols: Optional[List[str]], out: List[CommitMessage]) -> None:
        """Write the update files of ``data`` into ``out`` (each as soon as it is written, so
        that a failure later aborts it with the others)."""
        if ROW_ID not in data.column_names:
            raise InvalidArgumentError(f"update by _ROW_ID: the input must contain a {ROW_ID} column")
        if cols is None:
            cols = self.update_cols
        if cols is None:
            cols = [c for c in data.column_names if c != ROW_ID]
        if not cols:
            raise InvalidArgumentError("update by _ROW_ID: no column to update")
        # BLOB columns (BLOB, ARRAY<BLOB>, MAP<X, BLOB>: .blob files of their own) are written
        # from the updated rows alone (placeholders at the others): their current values are
        # not read
        # (`blob-descriptor-field` / `blob-view-field` columns live in the data file: updated there)
        descriptor, view = inline_blob_fields(self.table.options)
        blobs = {f.name for f in self.table.fields
                 if _is_blob_file_type(str(f.type)) and f.name not in descriptor | view}
        for f in self.table.fields:
            if f.name in blobs and f.name in cols and f.name in data.column_names \
                    and not f.type.nullable and data.column(f.name).null_count:
                raise SchemaMismatchError(
                    f"update by _ROW_ID: null for the NOT NULL BLOB column '{f.name}' of table "
                    f"{self.table.identifier}")
        for c in cols:
            if c not in self.table.field_names:
                raise InvalidArgumentError(f"update by _ROW_ID: column {c} not found in table schema")
            if c not in data.column_names:
                raise InvalidArgumentError(f"update by _ROW_ID: the input has no column {c}")
            if c in self.table.partition_keys:
                raise UnsupportedError(
                    f"update by _ROW_ID: partition column '{c}' of {self.table.identifier} cannot be "
                    "updated (the row would stay in its old partition)")
        if data.num_rows == 0:
            return
        rid_col = data.column(ROW_ID)
        if rid_col.null_count:
            raise InvalidArgumentError("update by _ROW_ID: the input has null _ROW_ID values")
        row_ids = pc.cast(rid_col, pa.int64()).to_pylist()
        if len(set(row_ids)) != len(row_ids):
            raise InvalidArgumentError("update by _ROW_ID: the input contains duplicate _ROW_ID values")
        groups = self.table._core.row_id_groups(sid) if sid is not None else []
        firsts = [g[0] for g in groups]
        by_group: dict = {}
        for i, r in enumerate(row_ids):
            k = bisect.bisect_right(firsts, r) - 1
            if k < 0 or r >= groups[k][0] + groups[k][1]:
                raise InvalidArgumentError(
                    f"update by _ROW_ID: Row ID {r} does not belong to any valid range (not a row "
                    f"of {self.table.identifier})")
            by_group.setdefault(k, []).append(i)
        overlap = {c: sorted(done.get(c, set()) & {groups[k][0] for k in by_group}) for c in cols}
        overlap = {c: v for c, v in overlap.items() if v}
        if overlap:
            raise InvalidArgumentError(
                f"update by _ROW_ID: input batches contain overlapping first_row_ids by column: {overlap}")
        assert sid is not None  # groups is empty without a snapshot
        current = self._current(sid, [c for c in cols if c not in blobs], [groups[k] for k in by_group])
        cur_ids = current.column(ROW_ID).to_numpy()
        ncur = current.num_rows
        for k, rows in sorted(by_group.items()):
            first, n = groups[k]
            lo = int(bisect.bisect_left(cur_ids, first))
            hi = int(bisect.bisect_left(cur_ids, first + n))
            # position p of the group: the update's row j where p == row id - first, else the
            # live row p; a deleted row (its position marked in the group's deletion vector,
            # never read) gets null (a NOT NULL column: the first updated row's value), so the
            # file covers every id and no deleted slot holds a copy of a live row's data
            idx = [ncur] * n
            for j in range(lo, hi):
                idx[int(cur_ids[j]) - first] = j
            deleted = {p for p, v in enumerate(idx) if v == ncur}
            for j, i in enumerate(rows):
                if idx[row_ids[i] - first] == ncur:
                    raise InvalidArgumentError(
                        f"update by _ROW_ID: Row ID {row_ids[i]} does not belong to any valid range "
                        f"(the row of {self.table.identifier} is deleted)")
                idx[row_ids[i] - first] = ncur + j
            take = pa.array(idx, pa.int64())
            take_or_null = pa.array([None if p in deleted else v for p, v in enumerate(idx)], pa.int64())
            upd = data.take(pa.array(rows, pa.int64()))
            arrays = []
            at: List[Optional[int]] = [None] * n  # position -> the update's row
            for j, i in enumerate(rows):
                at[row_ids[i] - first] = j
            for c in cols:
                if c in blobs:
                    # the updated rows' values at their positions (the others are not written)
                    arrays.append(upd.column(c).take(pa.array(at, pa.int64())).combine_chunks())
                    continue
                field = current.schema.field(c)
                new = coerce_column(upd.column(c), field.type, c)
                both = pa.chunked_array(current.column(c).chunks + new.chunks, field.type)
                arrays.append(both.take(take_or_null if field.nullable else take).combine_chunks())
            batch = pa.RecordBatch.from_arrays(arrays, names=cols)
            updated = sorted(row_ids[i] - first for i in rows) if blobs & set(cols) else None
            out.append(self.table._core.write_row_id_update(sid, first, batch, updated))
        for c in cols:
            done.setdefault(c, set()).update(groups[k][0] for k in by_group)

    def _current(self, sid: int, cols: List[str], groups: Sequence[tuple]) -> pa.Table:
        """The current values of ``cols`` of the rows of ``groups`` in snapshot ``sid``,
        ordered by ``_ROW_ID``."""
        opts = {"scan.snapshot-id": str(sid)}
        if any(inline_blob_fields(self.table.options)):
            # the stored descriptors / view structs, not what they resolve to: they are
            # written back as they are into the update file
            opts.update({"blob-as-descriptor": "true", "blob-view.resolve.enabled": "false"})
        t = self.table.copy_without_time_travel(opts)
        rb = t.new_read_builder().with_projection([ROW_ID] + cols)
        data = rb.new_read().to_arrow(rb.new_scan().plan().splits())
        ids = data.column(ROW_ID)
        keep = None
        for first, n in groups:
            m = pc.and_(pc.greater_equal(ids, first), pc.less(ids, first + n))
            keep = m if keep is None else pc.or_(keep, m)
        data = data.filter(keep)
        return data.sort_by(ROW_ID)

    def _scan_snapshot_id(self) -> Optional[int]:
        """The snapshot a predicate update reads its rows from: the one the table's time
        travel options name (``scan.snapshot-id``, ``scan.tag-name``, a timestamp, ...), else
        the latest (pypaimon's); the commit then refuses it if a later snapshot wrote the same
        columns of the same rows."""
        opts = self.table.options
        if "scan.mode" in opts or any(k in opts for k in TIME_TRAVEL_OPTIONS):
            return self.table.new_read_builder().with_projection([ROW_ID]).new_scan().plan().snapshot_id
        return self.table.latest_snapshot_id()

    def _update_by_predicate(self, predicate: Optional[Predicate], assignments: Mapping[str, Any],
                             read_columns: Optional[Sequence[str]]) -> List[CommitMessage]:
        """pypaimon's ``update_by_predicate``: the rows ``predicate`` matches (all if None) in
        the snapshot the table reads (``_scan_snapshot_id``) get ``assignments``: per column a
        literal, a pyarrow array of the matched rows (in ``_ROW_ID`` order) or a callable that
        receives the matched rows of one file group (``read_columns`` then ``_ROW_ID``) and
        returns the column's array."""
        from paimon_rs.mutations import predicate_mask

        self._check_data_evolution("update_by_predicate")
        names = self.table.field_names
        read_columns = list(dict.fromkeys(read_columns or ()))
        has_callable = any(callable(v) for v in assignments.values())
        has_array = any(isinstance(v, (pa.Array, pa.ChunkedArray)) for v in assignments.values())
        if not assignments:
            raise InvalidArgumentError("update_by_predicate: assignments must not be empty")
        if read_columns and not has_callable:
            raise InvalidArgumentError("update_by_predicate: read_columns requires a callable assignment")
        if has_callable and has_array:
            raise InvalidArgumentError(
                "update_by_predicate: callable assignments cannot be combined with Arrow array assignments")
        if has_callable and not read_columns:
            raise InvalidArgumentError("update_by_predicate: Callable assignments require read_columns.")
        for c in list(read_columns) + list(assignments):
            if c not in names:
                raise InvalidArgumentError(f"update_by_predicate: Column {c} is not in table schema.")
        for c in assignments:
            if c in self.table.partition_keys:  # a ValueError, as pypaimon's
                raise InvalidArgumentError(
                    f"update_by_predicate does not support updating partition column '{c}' of "
                    f"{self.table.identifier} (the row would stay in its old partition).")
        sid = self._scan_snapshot_id()
        if sid is None:
            return []
        needed = sorted(predicate.fields()) if predicate is not None else []
        proj = list(dict.fromkeys([ROW_ID] + read_columns + needed))
        at = self.table.copy_without_time_travel({"scan.snapshot-id": str(sid)})
        rb = at.new_read_builder().with_projection(proj)
        if predicate is not None:
            rb = rb.with_filter(predicate)
        matched = rb.new_read().to_arrow(rb.new_scan().plan().splits())
        if predicate is not None:  # exact, whatever the read pruned
            matched = matched.filter(predicate_mask(predicate, matched))
        matched = matched.sort_by(ROW_ID).select(read_columns + [ROW_ID])  # pypaimon's order
        if matched.num_rows == 0:
            return []
        parts = [matched]
        if has_callable:  # one call per file group, as pypaimon
            ids = matched.column(ROW_ID).to_numpy()
            parts = []
            for first, n in self.table._core.row_id_groups(sid):
                lo, hi = int(bisect.bisect_left(ids, first)), int(bisect.bisect_left(ids, first + n))
                if hi > lo:
                    parts.append(matched.slice(lo, hi - lo))
        schema = self.table.arrow_schema
        pieces = []
        for part in parts:
            arrays = {ROW_ID: part.column(ROW_ID)}
            for c, v in assignments.items():
                if callable(v):
                    v = v(part)
                    if not isinstance(v, (pa.Array, pa.ChunkedArray)):
                        raise InvalidArgumentError(
                            f"update_by_predicate: the callable assignment of {c} must return a "
                            "pyarrow.Array or pyarrow.ChunkedArray")
                arrays[c] = _assignment(c, v, schema.field(c).type, part.num_rows)
            pieces.append(pa.table(arrays))
        return self._update([pa.concat_tables(pieces)], list(assignments), sid)

    def _upsert(self, data: Any, upsert_keys: List[str]) -> List[CommitMessage]:
        from paimon_rs.mutations import _to_table
        from paimon_rs.table_upsert import upsert

        data = _to_table(data, "upsert_by_arrow_with_key")
        return upsert(self, data, list(upsert_keys), "upsert_by_arrow_with_key")

    def _upsert_rows(self, rows: Any, upsert_keys: List[str]) -> List[CommitMessage]:
        from paimon_rs.table_upsert import upsert_rows

        return upsert_rows(self, rows, list(upsert_keys))

    def _delete_by_row_id(self, row_ids: Sequence[int]) -> List[CommitMessage]:
        from paimon_rs.table_delete import delete_row_ids

        return delete_row_ids(self, row_ids)

    def _delete_by_predicate(self, predicate: Optional[Predicate]) -> List[CommitMessage]:
        from paimon_rs.table_delete import delete_by_predicate

        return delete_by_predicate(self, predicate)

    def _merge_into(self, source: Any, on: Any, when_matched: Sequence[Any],
                    when_not_matched: Sequence[Any]) -> List[CommitMessage]:
        from paimon_rs.table_merge_into import merge_into

        return merge_into(self, source, on, when_matched, when_not_matched)

    def new_shard_updator(self, shard_num: int, total_shard_count: int) -> ShardTableUpdator:
        """Worker ``shard_num`` of ``total_shard_count`` of a scan-and-rewrite update of the
        ``with_update_type`` columns (pypaimon's): its ``arrow_reader()`` reads the worker's
        file groups (``with_read_projection``), ``update_by_arrow_batch`` takes the new values
        of the same rows in the same order, ``prepare_commit()`` returns the commit messages
        (``paimon_rs.shard_updator``)."""
        from paimon_rs.shard_updator import ShardTableUpdator

        self._check_data_evolution("new_shard_updator")
        return ShardTableUpdator(self.table, self.projection, self.update_cols, self.commit_user,
                                 shard_num, total_shard_count)

    # --- what paimon_rs does not do ---

    def new_update_by_row_id(self, *args: Any, **kwargs: Any) -> Any:
        """pypaimon's low-level row-id updater: refused; use ``update_by_arrow_with_row_id``."""
        raise _refused("new_update_by_row_id")



def _is_blob_file_type(t: str) -> bool:
    """Whether a column of type ``t`` (its SQL string) lives in ``.blob`` files: BLOB,
    ``ARRAY<BLOB>`` or ``MAP<X, BLOB>``."""
    t = t.upper().replace(" NOT NULL", "")
    return t == "BLOB" or t == "ARRAY<BLOB>" or (t.startswith("MAP<") and t.endswith(", BLOB>"))


class BatchTableUpdate(TableUpdate):
    """The update of a batch write builder (``BatchWriteBuilder.new_update``)."""

    def update_by_arrow_with_row_id(self, table: Any) -> List[CommitMessage]:
        """Set the update columns of the rows ``_ROW_ID`` names (existing rows of the latest
        snapshot, each once) to ``table``'s values; returns the commit messages (commit them
        with ``new_commit().commit``). Nothing is written if a check fails."""
        return self._update([table])

    def update_by_arrow_batches_with_row_id(self, tables: Iterable[Any]) -> List[CommitMessage]:
        """``update_by_arrow_with_row_id`` of several inputs into one list of messages; per
        column, the inputs must update rows of different file groups (pypaimon's check)."""
        return self._update(tables)

    def update_by_predicate(self, predicate: Optional[Predicate], assignments: Mapping[str, Any],
                            read_columns: Optional[Sequence[str]] = None) -> List[CommitMessage]:
        """Update the rows ``predicate`` matches (all if None): ``assignments`` maps a column to
        a literal, a pyarrow array of the matched rows in ``_ROW_ID`` order, or a callable
        taking one file group's matched rows (``read_columns`` + ``_ROW_ID``) and returning
        the column (pypaimon's). Returns the commit messages; nothing is committed."""
        return self._update_by_predicate(predicate, assignments, read_columns)


    def upsert_by_arrow_with_key(self, table: Any, upsert_keys: List[str]) -> List[CommitMessage]:
        """Upsert ``table``'s rows by the key columns ``upsert_keys``: the rows of the latest
        snapshot with an input row's key get its update columns (every such row), the other
        input rows are appended (``paimon_rs.table_upsert``). Returns the commit messages of
        both; nothing is committed."""
        return self._upsert(table, upsert_keys)

    def upsert_by_key(self, rows: Any, upsert_keys: List[str]) -> List[CommitMessage]:
        """``upsert_by_arrow_with_key`` of rows (dicts, tuples in column order, or row
        objects with ``fields`` and ``values``), all naming the same columns."""
        return self._upsert_rows(rows, upsert_keys)

    def delete_by_row_id(self, row_ids: Sequence[int]) -> List[CommitMessage]:
        """Delete the rows ``row_ids`` through deletion vectors (``paimon_rs.table_delete``;
        the table must set ``deletion-vectors.enabled``). Returns the commit messages of the
        new deletion-vector index files; nothing is committed."""
        return self._delete_by_row_id(row_ids)

    def delete_by_predicate(self, predicate: Optional[Predicate]) -> List[CommitMessage]:
        """Delete the rows ``predicate`` matches (all if None) through deletion vectors, as
        ``delete_by_row_id``; a predicate on partition columns only drops the partitions it
        matches instead, on any table (``paimon_rs.table_delete.partition_delete``)."""
        return self._delete_by_predicate(predicate)

    def merge_into(self, source: Any, *, on: Any, when_matched: Sequence[Any] = (),
                   when_not_matched: Sequence[Any] = ()) -> List[CommitMessage]:
        """MERGE INTO this table from ``source`` (an Arrow table or stream, or a table) on the
        key columns ``on`` (names, or a mapping target -> source): matched rows updated or
        deleted (``WhenMatched``), unmatched source rows inserted (``WhenNotMatched``); clause
        conditions are refused (``paimon_rs.table_merge_into``). Returns the commit messages;
        nothing is committed."""
        return self._merge_into(source, on, when_matched, when_not_matched)


class StreamTableUpdate(TableUpdate):
    """The update of a stream write builder (``StreamWriteBuilder.new_update``)."""

    def update_by_arrow_with_row_id(self, table: Any, commit_identifier: int) -> List[CommitMessage]:
        """As ``BatchTableUpdate.update_by_arrow_with_row_id``; the messages carry no identifier
        in paimon_rs: pass ``commit_identifier`` to ``StreamTableCommit.commit``."""
        return self._update([table])

    def update_by_predicate(self, predicate: Optional[Predicate], assignments: Mapping[str, Any],
                            commit_identifier: int,
                            read_columns: Optional[Sequence[str]] = None) -> List[CommitMessage]:
        """As ``BatchTableUpdate.update_by_predicate``; pass ``commit_identifier`` to
        ``StreamTableCommit.commit``."""
        return self._update_by_predicate(predicate, assignments, read_columns)

    def upsert_by_arrow_with_key(self, table: Any, upsert_keys: List[str],
                                 commit_identifier: int) -> List[CommitMessage]:
        """As ``BatchTableUpdate.upsert_by_arrow_with_key``; pass ``commit_identifier`` to
        ``StreamTableCommit.commit``."""
        return self._upsert(table, upsert_keys)

    def upsert_by_key(self, rows: Any, upsert_keys: List[str],
                      commit_identifier: int) -> List[CommitMessage]:
        """As ``BatchTableUpdate.upsert_by_key``; pass ``commit_identifier`` to
        ``StreamTableCommit.commit``."""
        return self._upsert_rows(rows, upsert_keys)

    def delete_by_row_id(self, row_ids: Sequence[int], commit_identifier: int) -> List[CommitMessage]:
        """As ``BatchTableUpdate.delete_by_row_id``; pass ``commit_identifier`` to
        ``StreamTableCommit.commit``."""
        return self._delete_by_row_id(row_ids)

    def delete_by_predicate(self, predicate: Optional[Predicate],
                            commit_identifier: int) -> List[CommitMessage]:
        """As ``BatchTableUpdate.delete_by_predicate``; pass ``commit_identifier`` to
        ``StreamTableCommit.commit``."""
        return self._delete_by_predicate(predicate)

    def merge_into(self, source: Any, *, on: Any, when_matched: Sequence[Any] = (),
                   when_not_matched: Sequence[Any] = (),
                   commit_identifier: int) -> List[CommitMessage]:
        """As ``BatchTableUpdate.merge_into``; pass ``commit_identifier`` to
        ``StreamTableCommit.commit``."""
        return self._merge_into(source, on, when_matched, when_not_matched)
