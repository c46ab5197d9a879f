"""Row-level changes: ``table.delete(filter)`` and ``table.merge(source, on=[...])``.

Primary-key tables (``deduplicate`` merge engine): the rows to delete are read with the filter
and written back as ``-D`` rows, updates and inserts as ``+U`` / ``+I`` rows, all in one write
and one commit (one snapshot). Append tables with ``deletion-vectors.enabled``: the affected
rows are marked deleted in deletion vectors (their positions in their data files; only index
files are committed), updated and inserted rows appended, in one snapshot. Other append
tables: each partition holding an affected row is read, changed in memory and written back
with an INSERT OVERWRITE of those partitions, in one snapshot. See docs/python-api.md, "Deletes and merges".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Tuple, Union

import pyarrow as pa
import pyarrow.compute as pc

from paimon_rs.exceptions import (
    CommitConflictError,
    InvalidArgumentError,
    SchemaMismatchError,
    UnsupportedError,
)
from paimon_rs.filter_parser import optional_filter, parse_value
from paimon_rs.options import TIME_TRAVEL_OPTIONS
from paimon_rs.predicate import Predicate, PredicateBuilder, suggest_column

if TYPE_CHECKING:
    from paimon_rs.table import BatchTableWrite, BatchWriteBuilder, CommitMessage, Table

ATTEMPTS = 3  # a delete / merge whose table changed while it read is redone this many times


@dataclass(frozen=True)
class DeleteResult:
    """What ``table.delete`` did: rows deleted and the snapshot committed (None: nothing
    matched, nothing was committed)."""

    num_deleted_rows: int
    snapshot_id: Optional[int]


@dataclass(frozen=True)
class MergeResult:
    """What ``MergeBuilder.execute`` did: rows inserted, updated and deleted, and the one
    snapshot committed (None: nothing changed, nothing was committed). The counts are the rows
    written as such; on a primary-key table with a ``sequence.field`` an update or insert whose
    sequence value is below the stored row's is written but loses, as Paimon merges."""

    num_inserted_rows: int
    num_updated_rows: int
    num_deleted_rows: int
    snapshot_id: Optional[int]


# --- predicates evaluated on Arrow tables ----------------------------------------------------

def predicate_mask(p: Predicate, data: pa.Table) -> pa.ChunkedArray:
    """Where ``p`` is TRUE on the rows of ``data`` (NULL counts as not true), as a boolean
    array without nulls; SQL semantics, as the engine's row filter."""
    return pc.fill_null(_eval(p, data), False)


def _eval(p: Predicate, data: pa.Table) -> Any:
    if p.method == "and":
        out = _eval(p.children[0], data)
        for c in p.children[1:]:
            out = pc.and_kleene(out, _eval(c, data))
        return out
    if p.method == "or":
        out = _eval(p.children[0], data)
        for c in p.children[1:]:
            out = pc.or_kleene(out, _eval(c, data))
        return out
    assert p.field is not None
    col = data.column(p.field)
    lits = [pa.scalar(v, type=col.type) for v in (p.literals or [])]
    m = p.builder_method
    if m == "equal":
        return pc.equal(col, lits[0])
    if m == "not_equal":
        return pc.not_equal(col, lits[0])
    if m == "less_than":
        return pc.less(col, lits[0])
    if m == "less_or_equal":
        return pc.less_equal(col, lits[0])
    if m == "greater_than":
        return pc.greater(col, lits[0])
    if m == "greater_or_equal":
        return pc.greater_equal(col, lits[0])
    if m == "is_null":
        return pc.is_null(col)
    if m == "is_not_null":
        return pc.is_valid(col)
    if m in ("is_in", "is_not_in"):
        found = pc.is_in(col, value_set=pa.array(p.literals or [], type=col.type))
        # a NULL value is in no list and out of none (SQL: NULL)
        found = pc.if_else(pc.is_null(col), pa.scalar(None, pa.bool_()), found)
        return found if m == "is_in" else pc.invert(found)
    if m == "between":
        return pc.and_kleene(pc.greater_equal(col, lits[0]), pc.less_equal(col, lits[1]))
    if m == "not_between":
        return pc.or_kleene(pc.less(col, lits[0]), pc.greater(col, lits[1]))
    pattern = (p.literals or [""])[0]
    if m == "startswith":
        return pc.starts_with(col, pattern=pattern)
    if m == "endswith":
        return pc.ends_with(col, pattern=pattern)
    if m == "contains":
        return pc.match_substring(col, pattern=pattern)
    if m == "like":
        return pc.match_like(col, pattern=pattern)
    raise UnsupportedError(f"predicate method '{m}' cannot be evaluated on Arrow data")


# --- shared checks ---------------------------------------------------------------------------

def _check_mutable(table: Table, what: str) -> None:
    travel = {k: v for k, v in table.options.items() if k in TIME_TRAVEL_OPTIONS}
    if travel:
        raise InvalidArgumentError(f"{what} on {table.identifier}: this handle reads a past state "
                                   f"({travel}); {what} changes the latest one: use a handle without "
                                   "these options")
    # row tracking: Java keeps an updated or rewritten row's _ROW_ID (stored in the new file);
    # paimon_rs's rewrites and appended updates would give the rows new ids. A delete that only
    # marks deletion vectors keeps the other rows where they are
    # data evolution: Java's and pypaimon's updates write files of some columns of existing row
    # ids (and Java's merge-into / deletes keep the ids); paimon_rs writes only appends there
    if table.options.get("data-evolution.enabled", "false").strip().lower() == "true":
        raise UnsupportedError(
            f"{what} on {table.identifier}: the table sets 'data-evolution.enabled'; paimon_rs "
            "appends to data-evolution tables and updates their rows by _ROW_ID "
            "(write_builder.new_update().update_by_arrow_with_row_id) only")
    row_tracking = table.options.get("row-tracking.enabled", "false").strip().lower() == "true"
    if row_tracking and not (what == "delete" and _uses_deletion_vectors(table)):
        raise UnsupportedError(
            f"{what} on {table.identifier}: the table sets 'row-tracking.enabled' and paimon_rs "
            f"would give the rows it rewrites or updates new _ROW_IDs (Java keeps them); only a "
            "delete on a table with 'deletion-vectors.enabled' is supported")
    if not table.is_primary_key_table:
        return
    engine = table.options.merge_engine()
    if engine != "deduplicate":
        raise UnsupportedError(
            f"{what} on {table.identifier}: the '{engine}' merge engine does not apply -D rows "
            "and full-row updates as a delete or an update (only 'deduplicate' tables support "
            f"{what})")
    if table.options.get("ignore-delete", "false").lower() == "true":
        raise UnsupportedError(f"{what} on {table.identifier}: the table sets 'ignore-delete' = "
                               "true, so its -D rows would be dropped")
    # dynamic buckets (-1): the -D / +U rows go through the table's writer, whose hash index
    # keeps every known key in its bucket (a deleted key keeps its hash there, as Java's
    # DynamicBucketIndexMaintainer: paimon-behaviour.md §1.7)
    if table.total_buckets == -2:
        raise UnsupportedError(f"{what} on {table.identifier}: a postpone-bucket table's "
                               "rows still in bucket-postpone are invisible to the read it "
                               "would be based on; compact the table first")


def _write_kind(w: BatchTableWrite, data: pa.Table, kind: str) -> None:
    """Write every row of ``data`` with row kind ``kind`` (the engine's
    ``write_stream_kind``), whatever the table's ``rowkind.field``."""
    if data.num_rows == 0:
        return
    w._check_open()
    w._core.write_stream_kind(data, kind)


def _to_table(data: Any, what: str) -> pa.Table:
    """A pyarrow Table of ``data`` (pyarrow, pandas, polars, any ``__arrow_c_stream__``)."""
    if isinstance(data, pa.Table):
        return data
    if isinstance(data, pa.RecordBatch):
        return pa.Table.from_batches([data])
    if isinstance(data, pa.RecordBatchReader):
        return data.read_all()
    cls = type(data)
    if cls.__module__.split(".")[0] == "pandas" and cls.__name__ == "DataFrame":
        return pa.Table.from_pandas(data, preserve_index=False)
    if hasattr(data, "__arrow_c_stream__"):
        return pa.table(data)
    raise TypeError(f"{what}: expected a pyarrow Table, a pandas or polars DataFrame or an object "
                    f"with __arrow_c_stream__, got {cls.__name__}")


def _plain(typ: pa.DataType) -> pa.DataType:
    """``typ`` with view types (polars' strings) as their plain form."""
    text = str(typ)
    if text == "string_view":
        return pa.large_string()
    if text == "binary_view":
        return pa.large_binary()
    return typ


def _unknown(name: str, names: Sequence[str], where: str, what: str) -> InvalidArgumentError:
    return InvalidArgumentError(f"{where}: unknown {what} '{name}'{suggest_column(name, names)}")


# --- delete ----------------------------------------------------------------------------------

def delete(table: Table, predicate: Union[Predicate, str]) -> DeleteResult:
    """``Table.delete`` (see there)."""
    if predicate is None:
        raise InvalidArgumentError(
            f"delete on {table.identifier}: a filter is required (to delete every row: "
            "new_batch_write_builder().new_commit().truncate_table())")
    from paimon_rs.table import _with_system_columns

    what = f"delete on {table.identifier}"
    # parsed against the system columns too, so that one is refused by name below rather than
    # reported unknown
    pred = optional_filter(predicate, _with_system_columns(table), what)
    assert pred is not None
    outside = sorted(pred.fields() - set(table.arrow_schema.names))
    system = [c for c in outside if c in _with_system_columns(table).names]
    if system:
        raise UnsupportedError(f"{what}: the filter names the system column(s) {system}; a delete "
                               "filters on the table's own columns")
    if outside:
        raise InvalidArgumentError(f"{what}: the filter names {outside}, not columns of the "
                                   f"table{suggest_column(outside[0], table.arrow_schema.names)}")
    _check_mutable(table, "delete")
    if table.is_primary_key_table:
        return _retry(table, "delete", lambda: _delete_pk(table, pred))
    if _uses_deletion_vectors(table):
        return _retry(table, "delete", lambda: _delete_dv(table, pred))
    return _retry(table, "delete", lambda: _delete_append(table, pred))


def _retry(table: Table, what: str, attempt: Any) -> Any:
    """Run ``attempt`` (read, compute, write, commit) again while another commit got in the
    way: one that landed after its read (``_TableChanged``), or one the commit's own check found
    writing the same keys (``CommitConflictError``; the attempt's files are aborted)."""
    last: Optional[Exception] = None
    for _ in range(ATTEMPTS):
        try:
            return attempt()
        except (_TableChanged, CommitConflictError) as e:
            last = e
    raise CommitConflictError(f"{what} on {table.identifier}: other commits changed the table while "
                              f"it read, {ATTEMPTS} times; nothing was committed ({last})")


class _TableChanged(Exception):
    pass


def commit_or_abort(builder: BatchWriteBuilder, messages: List[CommitMessage]) -> Optional[int]:
    """Commit ``messages`` as one snapshot; on failure abort them (delete their files) and
    re-raise the commit's error."""
    commit = builder.new_commit()
    try:
        return commit.commit(messages)
    except BaseException:
        commit.abort(messages)
        raise


def _commit_pinned(table: Table, builder: Any, w: BatchTableWrite, snapshot_id: Optional[int],
                   extra: Sequence[Any] = ()) -> Optional[int]:
    """Prepare and commit ``w``'s rows (and the ``extra`` messages: deletion vectors) as one
    snapshot, unless a commit landed after ``snapshot_id`` (what the rows were computed from):
    then abort and raise ``_TableChanged``. A commit landing after this check is caught by the
    commit's own conflict check (the writer restored from ``snapshot_id``; deletion vectors
    restored from it) or, for overwrites, replaced as a whole."""
    messages = w.prepare_commit() + list(extra)
    if table.latest_snapshot_id() != snapshot_id:
        builder.new_commit().abort(messages)
        raise _TableChanged(f"snapshot {table.latest_snapshot_id()} landed after {snapshot_id}")
    if not any(not m.is_empty() for m in messages) and not builder._overwrite:
        return None
    return commit_or_abort(builder, messages)


def _uses_deletion_vectors(table: Table) -> bool:
    """An append table with ``deletion-vectors.enabled``: deletes and updates mark rows in
    deletion vectors instead of rewriting partitions."""
    return (not table.is_primary_key_table
            and table.options.get("deletion-vectors.enabled", "false").strip().lower() == "true")


def _positions(rows: pa.Table) -> pa.RecordBatch:
    """The ``_FILE_NAME`` / ``_ROW_POSITION`` columns of ``rows`` (read with positions) as one
    batch, as ``delete_positions`` takes them."""
    return pa.RecordBatch.from_arrays([rows.column(c).combine_chunks() for c in _POSITION_COLUMNS],
                                      names=list(_POSITION_COLUMNS))


_POSITION_COLUMNS = ("_FILE_NAME", "_ROW_POSITION")


def _read_with_positions(table: Table, sid: int, pred: Optional[Predicate],
                         projection: Optional[List[str]]) -> pa.Table:
    filt = pred.to_core(table.arrow_schema) if pred is not None else None
    return table._core.read_with_positions(sid, filt, projection).read_all()


def _delete_dv(table: Table, pred: Predicate) -> DeleteResult:
    """Append tables with deletion vectors: the matching rows' positions in their data files
    are marked in deletion vectors; only index files are committed (Java's DELETE on such a
    table), in one snapshot."""
    sid = table.latest_snapshot_id()
    if sid is None:
        return DeleteResult(0, None)
    hits = _read_with_positions(table, sid, pred, [])
    if hits.num_rows == 0:
        return DeleteResult(0, None)
    messages, deleted = table._core.delete_positions(sid, _positions(hits))
    builder = table.new_batch_write_builder()
    with builder.new_write() as w:
        snapshot = _commit_pinned(table, builder, w, sid, messages)
    return DeleteResult(deleted, snapshot)


def _delete_pk(table: Table, pred: Predicate) -> DeleteResult:
    sid = table.latest_snapshot_id()
    if sid is None:
        return DeleteResult(0, None)
    rows = table.to_arrow(filter=pred, snapshot_id=sid)
    if rows.num_rows == 0:
        return DeleteResult(0, None)
    builder = table.new_batch_write_builder()
    with builder.new_write() as w:
        _write_kind(w, rows, "-D")
        snapshot = _commit_pinned(table, builder, w, sid)
    return DeleteResult(rows.num_rows, snapshot)


# --- append tables: rewrite the affected partitions ------------------------------------------

def _partition_specs(table: Table, rows: pa.Table) -> List[Dict[str, Any]]:
    """The distinct partitions (``{key: value}``) of ``rows``."""
    keys = table.partition_keys
    if not keys or rows.num_rows == 0:
        return []
    distinct = rows.select(keys).group_by(keys).aggregate([])
    return distinct.to_pylist()


def _partition_filter(table: Table, specs: List[Dict[str, Any]]) -> Optional[Predicate]:
    pb = PredicateBuilder(table.arrow_schema)
    ors = []
    for spec in specs:
        ands = [pb.is_null(k) if v is None else pb.equal(k, v) for k, v in spec.items()]
        p = pb.and_predicates(ands)
        assert p is not None
        ors.append(p)
    return pb.or_predicates(ors)


def _rewrite(table: Table, sid: int, specs: List[Dict[str, Any]], new_rows: pa.Table) -> Optional[int]:
    """Replace the rows of partitions ``specs`` (every row if the table is unpartitioned) with
    ``new_rows`` in one OVERWRITE snapshot, unless the table moved past ``sid``."""
    keys = table.partition_keys
    present = {tuple(d[k] for k in keys) for d in _partition_specs(table, new_rows)} if keys else set()
    wanted = {tuple(d[k] for k in keys) for d in specs}
    if not keys:
        target, spec = table, {}  # the whole table
    elif len(wanted) == 1 and present <= wanted:
        target, spec = table, specs[0]  # one partition: a static overwrite (empties it if need be)
    elif present == wanted:
        # every partition keeps rows: a dynamic overwrite replaces exactly those
        target, spec = table.copy({"dynamic-partition-overwrite": "true"}), None
    else:
        # several partitions, some left empty: only a whole-table overwrite replaces them all in
        # one snapshot, so the other partitions are read and written back unchanged
        others = _partition_filter(table, specs)
        assert others is not None
        rest = table.to_arrow(snapshot_id=sid)
        rest = rest.filter(pc.invert(predicate_mask(others, rest)))
        new_rows = pa.concat_tables([rest, new_rows.select(rest.schema.names).cast(rest.schema)])
        target, spec = table, {}
    builder = target.new_batch_write_builder().overwrite(spec)
    with builder.new_write() as w:
        if new_rows.num_rows:
            w.write_arrow(new_rows)
        return _commit_pinned(table, builder, w, sid)


def _delete_append(table: Table, pred: Predicate) -> DeleteResult:
    sid = table.latest_snapshot_id()
    if sid is None:
        return DeleteResult(0, None)
    keys = table.partition_keys
    matched = table.to_arrow(filter=pred, snapshot_id=sid, projection=keys or None)
    if matched.num_rows == 0:
        return DeleteResult(0, None)
    specs = _partition_specs(table, matched)
    rows = table.to_arrow(filter=_partition_filter(table, specs), snapshot_id=sid)
    mask = predicate_mask(pred, rows)
    hit = pc.sum(mask).as_py() or 0
    if hit != matched.num_rows:
        raise UnsupportedError(
            f"delete on {table.identifier}: the filter selects {matched.num_rows} rows when read "
            f"but {hit} when evaluated in Arrow; nothing was deleted (please report this filter)")
    snapshot = _rewrite(table, sid, specs, rows.filter(pc.invert(mask)))
    return DeleteResult(hit, snapshot)


# --- merge -----------------------------------------------------------------------------------

_Value = Tuple[str, Any]  # ("column", "source.v") or ("literal", value)


@dataclass
class _Clause:
    kind: str  # update, update_all, delete, insert, insert_all
    predicate: Optional[Predicate]
    values: Dict[str, _Value]


class MergeBuilder:
    """``table.merge(source, on=[...])``: what to do with the target rows whose ``on`` columns
    match a source row, and with the source rows that match none; ``execute()`` applies it in
    one snapshot. Clauses apply in the order given, the first whose predicate holds wins (SQL
    ``MERGE``); a row no clause takes is left as it is (matched) or not inserted (not matched).

    Values and predicates name columns ``source.<col>`` and ``target.<col>`` (``target.`` only
    in ``when_matched_*``); a value is such a column, a SQL literal string (``"'abc'"``,
    ``"1.5"``, ``"TRUE"``, ``"NULL"``, ``"DATE '2024-01-01'"``) or a Python value (``5``,
    ``None``, a ``datetime.date``). Everything is checked when the clause is added.

    Example::

        result = (table.merge(updates, on=["id"])
                  .when_matched_delete("source.deleted = TRUE")
                  .when_matched_update_all()
                  .when_not_matched_insert_all()
                  .execute())
        result.num_updated_rows, result.snapshot_id
    """

    def __init__(self, table: Table, source: Any, on: Sequence[str]):
        self.table = table
        where = f"merge into {table.identifier}"
        self._where = where
        if isinstance(on, str):
            on = [on]
        on = list(on)
        if not on:
            raise InvalidArgumentError(f"{where}: 'on' must name at least one column")
        src = _to_table(source, where)
        tschema = table.arrow_schema
        for c in on:
            if c not in tschema.names:
                raise _unknown(c, tschema.names, where, "'on' column (not in the table)")
            if c not in src.schema.names:
                raise _unknown(c, src.schema.names, where, "'on' column (not in the source)")
        if table.is_primary_key_table and set(on) != set(table.primary_keys):
            raise InvalidArgumentError(
                f"{where}: on={on} must be the primary key {table.primary_keys}: a primary-key "
                "table holds one row per key, so a source row is matched by its key; fewer columns "
                "could match several keys, more would let a 'not matched' insert overwrite the row "
                "of an existing key")
        _check_mutable(table, "merge")
        # the source's columns in the table's types (so that keys join and values are written
        # as they are); view types, which Arrow's join does not take, as their plain types
        for i, f in enumerate(src.schema):
            typ = tschema.field(f.name).type if f.name in tschema.names else _plain(f.type)
            if f.type != typ:
                try:
                    src = src.set_column(i, f.name, src.column(i).cast(typ))
                except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
                    raise SchemaMismatchError(f"{where}: source column '{f.name}' ({f.type}) does "
                                              f"not convert to the table's {typ}: {e}") from e
        nulls = [c for c in on if src.column(c).null_count]
        if nulls:
            raise SchemaMismatchError(f"{where}: source 'on' columns {nulls} hold NULLs, which match "
                                      "nothing")
        if src.num_rows:
            counts = src.group_by(on).aggregate([([], "count_all")])
            dup = counts.filter(pc.greater(counts.column("count_all"), 1))
            if dup.num_rows:
                raise InvalidArgumentError(
                    f"{where}: the source has {dup.num_rows} key(s) more than once, e.g. "
                    f"{ {c: dup.column(c)[0].as_py() for c in on} }: a target row may match one "
                    "source row only")
        self.source = src
        self.on = on
        self._clauses: List[_Clause] = []
        fields = [pa.field(f"target.{f.name}", f.type) for f in tschema] + \
                 [pa.field(f"source.{f.name}", f.type) for f in src.schema]
        self._matched_schema = pa.schema(fields)
        self._source_schema = pa.schema([pa.field(f"source.{f.name}", f.type) for f in src.schema])

    # --- clauses ---

    def _predicate(self, predicate: Union[Predicate, str, None], matched: bool,
                   what: str) -> Optional[Predicate]:
        if predicate is None:
            return None
        schema = self._matched_schema if matched else self._source_schema
        if isinstance(predicate, str):
            try:
                return optional_filter(predicate, schema, f"{self._where}: {what}")
            except InvalidArgumentError as e:
                if not matched and "'target." in str(e):
                    raise InvalidArgumentError(f"{e}\n(a not-matched source row has no target "
                                               "row: use source.<col> only)") from None
                raise
        if isinstance(predicate, Predicate):
            for f in sorted(predicate.fields()):
                if f not in schema.names:
                    raise _unknown(f, schema.names, f"{self._where}: {what}", "column")
            return predicate
        raise TypeError(f"{self._where}: {what}: predicate must be a string, a Predicate or None")

    def _values(self, values: Dict[str, Any], matched: bool, what: str) -> Dict[str, _Value]:
        if not isinstance(values, dict) or not values:
            raise InvalidArgumentError(f"{self._where}: {what} takes a non-empty dict of "
                                       "column -> value")
        tschema = self.table.arrow_schema
        schema = self._matched_schema if matched else self._source_schema
        out: Dict[str, _Value] = {}
        for col, v in values.items():
            name = col[len("target."):] if isinstance(col, str) and col.startswith("target.") else col
            if name not in tschema.names:
                raise _unknown(str(col), tschema.names, f"{self._where}: {what}", "table column")
            field = tschema.field(name)
            if isinstance(v, str):
                try:
                    kind, value = parse_value(v, schema, field, f"{self._where}: {what} '{name}'")
                except InvalidArgumentError as e:
                    raise InvalidArgumentError(
                        f"{e}\n(a value is source.<col>"
                        + (" or target.<col>" if matched else "")
                        + ", a SQL literal such as 'text', 1.5, TRUE, NULL, DATE '2024-01-01', or "
                        "a Python value)") from None
                out[name] = (kind, value)
            else:
                try:
                    pa.array([v], type=field.type)
                except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError) as e:
                    raise InvalidArgumentError(f"{self._where}: {what}: {v!r} does not fit column "
                                               f"'{name}' ({field.type}): {e}") from None
                out[name] = ("literal", v)
        return out

    def _add(self, clause: _Clause, matched: bool) -> MergeBuilder:
        kinds = ("update", "update_all", "delete") if matched else ("insert", "insert_all")
        for c in self._clauses:
            if c.kind in kinds and c.predicate is None:
                raise InvalidArgumentError(
                    f"{self._where}: a when_{'matched' if matched else 'not_matched'} clause after "
                    f"an unconditional one ({c.kind}) would never apply")
        self._clauses.append(clause)
        return self

    def _check_keys_untouched(self, values: Dict[str, _Value], what: str) -> None:
        fixed = set(self.on) | set(self.table.primary_keys) | set(self.table.partition_keys)
        bad = sorted(c for c in values if c in fixed)
        if bad:
            raise InvalidArgumentError(f"{self._where}: {what} cannot set key or partition columns "
                                       f"{bad} (the row would become another row)")

    def _check_source_has_all(self, what: str) -> None:
        missing = [n for n in self.table.arrow_schema.names if n not in self.source.schema.names]
        if missing:
            raise SchemaMismatchError(f"{self._where}: {what} needs every table column in the "
                                      f"source; it lacks {missing} (name the columns with "
                                      f"{what.replace('_all', '')}(...) instead)")

    def when_matched_update(self, set: Dict[str, Any], predicate: Union[Predicate, str, None] = None
                            ) -> MergeBuilder:
        """Update the matched target rows (where ``predicate`` holds, if given): each column of
        ``set`` takes its value (``{"v": "source.v", "n": 0}``); the others keep theirs. Key
        and partition columns cannot be set."""
        values = self._values(set, True, "when_matched_update")
        self._check_keys_untouched(values, "when_matched_update")
        return self._add(_Clause("update", self._predicate(predicate, True, "when_matched_update"),
                                 values), True)

    def when_matched_update_all(self, predicate: Union[Predicate, str, None] = None) -> MergeBuilder:
        """Replace the matched target rows (where ``predicate`` holds) by their source rows;
        the source must hold every table column."""
        self._check_source_has_all("when_matched_update_all")
        values: Dict[str, _Value] = {n: ("column", f"source.{n}") for n in self.table.arrow_schema.names}
        return self._add(_Clause("update_all", self._predicate(predicate, True, "when_matched_update_all"),
                                 values), True)

    def when_matched_delete(self, predicate: Union[Predicate, str, None] = None) -> MergeBuilder:
        """Delete the matched target rows (where ``predicate`` holds, if given)."""
        return self._add(_Clause("delete", self._predicate(predicate, True, "when_matched_delete"), {}),
                         True)

    def when_not_matched_insert(self, values: Dict[str, Any],
                                predicate: Union[Predicate, str, None] = None) -> MergeBuilder:
        """Insert a row for each source row matching no target row (where ``predicate`` on
        ``source.<col>`` holds): ``values`` gives each column's value (``"source.v"`` or a
        literal); columns left out are NULL (they must be nullable). The key columns must be
        given."""
        vals = self._values(values, False, "when_not_matched_insert")
        missing = [c for c in self.on if c not in vals]
        if missing:
            raise InvalidArgumentError(f"{self._where}: when_not_matched_insert must set the 'on' "
                                       f"columns {missing}")
        not_null = [f.name for f in self.table.arrow_schema if f.name not in vals and not f.nullable]
        if not_null:
            raise SchemaMismatchError(f"{self._where}: when_not_matched_insert leaves NOT NULL "
                                      f"columns {not_null} out")
        return self._add(_Clause("insert", self._predicate(predicate, False, "when_not_matched_insert"),
                                 vals), False)

    def when_not_matched_insert_all(self, predicate: Union[Predicate, str, None] = None) -> MergeBuilder:
        """Insert each source row matching no target row (where ``predicate`` holds); the
        source must hold every table column."""
        self._check_source_has_all("when_not_matched_insert_all")
        values: Dict[str, _Value] = {n: ("column", f"source.{n}") for n in self.table.arrow_schema.names}
        return self._add(_Clause("insert_all", self._predicate(predicate, False,
                                                               "when_not_matched_insert_all"), values),
                         False)

    def __repr__(self) -> str:
        clauses = ", ".join(c.kind for c in self._clauses) or "no clause"
        return (f"MergeBuilder({str(self.table.identifier)!r}, on={self.on}, "
                f"source_rows={self.source.num_rows}, {clauses})")

    # --- execution ---

    def execute(self) -> MergeResult:
        """Apply the clauses in one snapshot; returns a ``MergeResult``. Raises
        ``CommitConflictError`` if other commits kept changing the table while it ran (nothing
        is then committed)."""
        if not self._clauses:
            raise InvalidArgumentError(f"{self._where}: no when_matched_* / when_not_matched_* "
                                       "clause: nothing to do")
        return _retry(self.table, "merge", self._attempt)

    def _values_array(self, value: _Value, data: pa.Table, field: pa.Field) -> pa.ChunkedArray:
        kind, v = value
        if kind == "literal":
            return pa.chunked_array([pa.array([v] * data.num_rows, type=field.type)])
        col = data.column(v)
        if col.type == field.type:
            return col
        try:
            return col.cast(field.type)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
            raise SchemaMismatchError(f"{self._where}: {v} ({col.type}) does not convert to column "
                                      f"'{field.name}' ({field.type}): {e}") from e

    def _rows(self, clause: _Clause, data: pa.Table, matched: bool) -> pa.Table:
        """The table rows a clause makes of ``data`` (joined or source rows, prefixed)."""
        schema = self.table.arrow_schema
        cols = []
        for f in schema:
            if f.name in clause.values:
                cols.append(self._values_array(clause.values[f.name], data, f))
            elif matched:
                cols.append(data.column(f"target.{f.name}"))
            else:
                cols.append(pa.chunked_array([pa.nulls(data.num_rows, f.type)]))
        return pa.Table.from_arrays(cols, schema=schema)

    def _apply(self, matched: pa.Table, unmatched: pa.Table
               ) -> Tuple[pa.Table, pa.Table, pa.Table, pa.Table, pa.Table, pa.Table]:
        """(updated rows, inserted rows, deleted target rows, matched target rows no clause
        took, the updated rows as they were, the positions of the deleted and updated target
        rows when the target was read with positions) for the joined ``matched`` and the
        source rows ``unmatched``."""
        schema = self.table.arrow_schema
        empty = schema.empty_table()
        updates, inserts, deletes, before = [empty], [empty], [empty], [empty]
        pos_cols = [f"target.{c}" for c in _POSITION_COLUMNS]
        has_pos = all(c in matched.column_names for c in pos_cols)
        changed = [matched.select(pos_cols).slice(0, 0)] if has_pos else []
        left = pa.chunked_array([pa.array([True] * matched.num_rows, pa.bool_())])
        for c in self._clauses:
            if c.kind not in ("update", "update_all", "delete"):
                continue
            hit = left if c.predicate is None else pc.and_(left, predicate_mask(c.predicate, matched))
            left = pc.and_(left, pc.invert(hit))
            rows = matched.filter(hit)
            if has_pos:
                changed.append(rows.select(pos_cols))
            if c.kind == "delete":
                deletes.append(_target_rows(rows, schema))
            else:
                updates.append(self._rows(c, rows, True))
                before.append(_target_rows(rows, schema))
        untouched = _target_rows(matched.filter(left), schema)
        left = pa.chunked_array([pa.array([True] * unmatched.num_rows, pa.bool_())])
        for c in self._clauses:
            if c.kind not in ("insert", "insert_all"):
                continue
            hit = left if c.predicate is None else pc.and_(left, predicate_mask(c.predicate, unmatched))
            left = pc.and_(left, pc.invert(hit))
            inserts.append(self._rows(c, unmatched.filter(hit), False))
        positions = (pa.concat_tables(changed).rename_columns(list(_POSITION_COLUMNS)) if has_pos
                     else pa.table({c: pa.array([], t) for c, t in zip(_POSITION_COLUMNS,
                                                                        (pa.string(), pa.int64()))}))
        return (pa.concat_tables(updates), pa.concat_tables(inserts), pa.concat_tables(deletes),
                untouched, pa.concat_tables(before), positions)

    def _attempt(self) -> MergeResult:
        table = self.table
        dv = _uses_deletion_vectors(table)
        sid = table.latest_snapshot_id()
        src = self.source.rename_columns([f"source.{n}" for n in self.source.schema.names])
        if sid is None or src.num_rows == 0:
            target = table.arrow_schema.empty_table()
        else:
            pb = PredicateBuilder(table.arrow_schema)
            keys = pb.and_predicates([pb.is_in(k, pc.unique(self.source.column(k)).to_pylist())
                                      for k in self.on])
            if dv:
                target = _read_with_positions(table, sid, keys, None)
            else:
                target = table.to_arrow(filter=keys, snapshot_id=sid)
        if dv and target.num_rows == 0:
            target = _empty_with_positions(table.arrow_schema)
        tgt = target.rename_columns([f"target.{n}" for n in target.schema.names])
        tkeys, skeys = [f"target.{k}" for k in self.on], [f"source.{k}" for k in self.on]
        ti, si = _join_indices(tgt, tkeys, src, skeys, "inner")
        matched = pa.Table.from_arrays(tgt.take(ti).columns + src.take(si).columns,
                                       names=tgt.column_names + src.column_names)
        unmatched = src.take(_join_indices(src, skeys, tgt, tkeys, "left anti")[0])
        updates, inserts, deletes, untouched, before, changed = self._apply(matched, unmatched)
        counts = (inserts.num_rows, updates.num_rows, deletes.num_rows)
        if not any(counts):
            return MergeResult(0, 0, 0, None)
        if dv:
            return MergeResult(*counts, self._apply_dv(sid, changed, pa.concat_tables([updates, inserts])))
        if table.is_primary_key_table:
            builder = table.new_batch_write_builder()
            with builder.new_write() as w:
                _write_kind(w, deletes, "-D")
                _write_kind(w, updates, "+U")
                _write_kind(w, inserts, "+I")
                snapshot = _commit_pinned(table, builder, w, sid)
            return MergeResult(*counts, snapshot)
        return MergeResult(*counts, self._rewrite_append(sid, untouched, updates, before, inserts,
                                                         deletes))

    def _apply_dv(self, sid: Optional[int], changed: pa.Table, new_rows: pa.Table) -> Optional[int]:
        """Append tables with deletion vectors: the deleted and updated target rows (their
        ``changed`` positions) are marked in deletion vectors, the updated and inserted rows
        appended, in one snapshot."""
        table = self.table
        messages: List[Any] = []
        if changed.num_rows:
            assert sid is not None
            messages, _ = table._core.delete_positions(sid, _positions(changed))
        builder = table.new_batch_write_builder()
        # the writer of the new rows does not compact (write-only): a bucketed table's writer
        # compaction replaces its bucket's deletion-vector index file, which these messages
        # replace too; both in one commit would conflict with each other on every attempt
        writer = table.copy({"write-only": "true"}).new_batch_write_builder()
        with writer.new_write() as w:
            if new_rows.num_rows:
                w.write_arrow(new_rows)
            return _commit_pinned(table, builder, w, sid, messages)

    def _rewrite_append(self, sid: Optional[int], untouched: pa.Table, updates: pa.Table,
                        before: pa.Table, inserts: pa.Table, deletes: pa.Table) -> Optional[int]:
        """Append tables: the partitions of changed target rows are rewritten (their other rows
        kept), inserts into other partitions are appended, in one snapshot."""
        table = self.table
        changed = pa.concat_tables([before, deletes])  # the target rows that change
        if changed.num_rows == 0:
            builder = table.new_batch_write_builder()
            with builder.new_write() as w:
                w.write_arrow(inserts)
                return _commit_pinned(table, builder, w, sid)
        assert sid is not None
        keys = table.partition_keys
        # the affected partitions: those of the matched target rows that change (the rows they
        # become may lie in others: update_all can move a row when 'on' leaves out a partition key)
        specs = _partition_specs(table, changed)
        inside = _partition_filter(table, specs) if keys else None
        rows = table.to_arrow(filter=inside, snapshot_id=sid)
        # the partitions' rows: those matching no source row, the matched ones no clause took,
        # the updated ones (the deleted ones are left out)
        src_keys = self.source.select(self.on)
        kept = rows.take(_join_indices(rows, self.on, src_keys, self.on, "left anti")[0])
        untouched_in = untouched.filter(predicate_mask(inside, untouched)) if inside else untouched
        if kept.num_rows + untouched_in.num_rows + changed.num_rows != rows.num_rows:
            raise UnsupportedError(f"{self._where}: internal check failed ({rows.num_rows} rows in the "
                                   f"partitions, {kept.num_rows} unmatched + {untouched_in.num_rows} "
                                   f"untouched + {changed.num_rows} changed); nothing was committed")
        # updated and inserted rows in other partitions: an overwrite of some partitions cannot
        # also append elsewhere, so those partitions are rewritten too (read and written back)
        new_rows = pa.concat_tables([kept, untouched_in, updates, inserts])
        if keys:
            extra = [s for s in _partition_specs(table, pa.concat_tables([updates, inserts]))
                     if s not in specs]
            if extra:
                more = table.to_arrow(filter=_partition_filter(table, extra), snapshot_id=sid)
                new_rows = pa.concat_tables([new_rows, more])
                specs = specs + extra
        return _rewrite(table, sid, specs, new_rows)


def _empty_with_positions(schema: pa.Schema) -> pa.Table:
    """No target rows, with the position columns of a read with positions."""
    fields = list(schema) + [pa.field("_FILE_NAME", pa.string(), False),
                             pa.field("_ROW_POSITION", pa.int64(), False)]
    return pa.schema(fields).empty_table()


def _join_indices(left: pa.Table, left_keys: List[str], right: pa.Table, right_keys: List[str],
                  how: str) -> Tuple[pa.ChunkedArray, pa.ChunkedArray]:
    """Row indices of an ``inner`` join (left, right) or a ``left anti`` join (left only) on
    the key columns. Only keys and indices go through Arrow's join, which does not take every
    type (lists, maps, views) as a non-key column."""
    def keyed(t: pa.Table, keys: List[str], index: str) -> pa.Table:
        cols = {f"k{i}": t.column(k) for i, k in enumerate(keys)}
        cols[index] = pa.chunked_array([pa.array(range(t.num_rows), pa.int64())])
        return pa.table(cols)
    names = [f"k{i}" for i in range(len(left_keys))]
    j = keyed(left, left_keys, "__left").join(keyed(right, right_keys, "__right"), keys=names,
                                              join_type=how)
    li = j.column("__left")
    ri = j.column("__right") if "__right" in j.column_names else pa.chunked_array([], pa.int64())
    if how == "inner":
        order = pc.sort_indices(li)  # deterministic: in target order
        return li.take(order), ri.take(order)
    return li.take(pc.sort_indices(li)), ri


def _target_rows(joined: pa.Table, schema: pa.Schema) -> pa.Table:
    return pa.Table.from_arrays([joined.column(f"target.{f.name}") for f in schema], schema=schema)

