"""MERGE INTO a data-evolution table (pypaimon 2.1.0's ``TableUpdate.merge_into(source, *, on,
when_matched=(), when_not_matched=())``), on top of the row updates, appends and deletes of
``table_update`` / ``table_delete``.

The target's live rows of the latest snapshot are joined with the source on ``on`` (column
names, or a mapping target column -> source column; null keys match nothing, as SQL): a target
row matched by a source row gets the ``when_matched`` clause (``WhenMatched.update(spec)``: its
columns set by ``_ROW_ID``; ``WhenMatched.delete()``: deleted through deletion vectors), a
source row matching no target row is inserted by the ``when_not_matched`` clause
(``WhenNotMatched(insert=spec)``; the columns the spec leaves out are null). A spec is ``"*"``
(every column from the source column of the same name, ``on``'s mapping applied) or a mapping
column -> value: ``"s.col"`` / ``source_col(col)``, ``"t.col"`` / ``target_col(col)`` (not in
inserts), ``lit(v)`` or any other value as a literal. A target row matched by several source
rows is an error (except for a sole unconditional delete), as pypaimon's. All of it is returned
as one list of commit messages.

Not implemented (``UnsupportedError``): clause conditions (SQL expressions, which pypaimon
evaluates with DataFusion) and a self-merge (the source being the target table).

The clause and value classes are pypaimon's (``pypaimon.ray``'s ``WhenMatched``,
``WhenNotMatched``, ``source_col``, ``target_col``, ``lit``), defined here too; pypaimon's own
objects are accepted as well.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Sequence, Tuple

import pyarrow as pa
import pyarrow.compute as pc

from paimon_rs.exceptions import InvalidArgumentError, UnsupportedError

if TYPE_CHECKING:
    from paimon_rs.table import CommitMessage
    from paimon_rs.table_update import TableUpdate

ROW_ID = "_ROW_ID"


@dataclass(frozen=True)
class SourceColumnRef:
    """A source column (``s.col``) as a clause value."""

    column: str


@dataclass(frozen=True)
class TargetColumnRef:
    """A target column (``t.col``) as a clause value (not in inserts)."""

    column: str


@dataclass(frozen=True)
class LiteralValue:
    """A literal as a clause value."""

    value: Any


def source_col(name: str) -> SourceColumnRef:
    """The source column ``name`` as a clause value."""
    return SourceColumnRef(name)


def target_col(name: str) -> TargetColumnRef:
    """The target column ``name`` as a clause value."""
    return TargetColumnRef(name)


def lit(value: Any) -> LiteralValue:
    """The literal ``value`` as a clause value."""
    return LiteralValue(value)


class WhenMatched:
    """What a matched target row gets: ``WhenMatched.update(spec)`` or ``WhenMatched.delete()``
    (pypaimon's; a ``condition`` is refused by paimon_rs's ``merge_into``)."""

    def __init__(self, action: str, *, update: Any = None, condition: Optional[str] = None):
        if action not in ("update", "delete"):
            raise InvalidArgumentError("WhenMatched action must be 'update' or 'delete'.")
        if action == "update" and update is None:
            raise InvalidArgumentError("WhenMatched.update requires an update spec.")
        if action == "delete" and update is not None:
            raise InvalidArgumentError("WhenMatched.delete must not specify update.")
        self.update = update
        self.condition = condition
        self.delete = action == "delete"

    @classmethod
    def update(cls, update: Any = "*", condition: Optional[str] = None) -> WhenMatched:  # type: ignore[no-redef]
        """Set the columns of ``update`` (``"*"``: all from the source)."""
        return cls("update", update=update, condition=condition)

    @classmethod
    def delete(cls, condition: Optional[str] = None) -> WhenMatched:  # type: ignore[no-redef]
        """Delete the matched row (through deletion vectors)."""
        return cls("delete", condition=condition)


@dataclass
class WhenNotMatched:
    """What an unmatched source row gets: inserted with the columns of ``insert``."""

    insert: Any
    condition: Optional[str] = None

# a normalized value: ("s", source column) | ("t", target column) | ("lit", value)
_Value = Tuple[str, Any]


def _kind(val: Any) -> str:
    """pypaimon's ``SourceColumnRef`` / ``TargetColumnRef`` / ``LiteralValue`` (by class name:
    pypaimon's own objects are accepted) or ``""``."""
    return {"SourceColumnRef": "s", "TargetColumnRef": "t", "LiteralValue": "lit"}.get(
        type(val).__name__, "")


def _spec(spec: Any, names: Sequence[str], on_map: Mapping[str, str],
          allow_target: bool) -> Dict[str, _Value]:
    """pypaimon's ``_normalize_set_spec``."""
    if isinstance(spec, str) and spec == "*":
        return {c: ("s", on_map.get(c, c)) for c in names}
    if not isinstance(spec, Mapping):
        raise TypeError(f"SET spec must be '*' or a mapping, got {type(spec).__name__}")
    if not spec:
        raise InvalidArgumentError("SET spec must not be empty")
    out: Dict[str, _Value] = {}
    for key, val in spec.items():
        if key not in names:
            raise InvalidArgumentError(f"SET spec references unknown target column '{key}'")
        kind = _kind(val)
        if callable(val) and not isinstance(val, type) and not kind:
            raise TypeError("SET values must be source_col(), target_col(), lit(), or literals; "
                            "callables are only supported for self-merge")
        if kind == "s" or (isinstance(val, str) and val.startswith("s.")):
            out[key] = ("s", val.column if kind else val[2:])
        elif kind == "t" or (isinstance(val, str) and val.startswith("t.")):
            ref = val.column if kind else val[2:]
            if not allow_target:
                raise InvalidArgumentError(
                    f"INSERT spec must not reference target columns (t.*), but found: 't.{ref}'")
            if ref not in names:
                raise InvalidArgumentError(f"SET spec references unknown target column '{ref}'")
            if ref != key:
                out[key] = ("t", ref)
        else:
            out[key] = ("lit", val.value if kind == "lit" else val)
    return out


def _source_table(source: Any) -> pa.Table:
    from paimon_rs.mutations import _to_table

    if hasattr(source, "new_read_builder"):  # a table: its rows as its options select them
        rb = source.new_read_builder()
        return rb.new_read().to_arrow(rb.new_scan().plan().splits())
    return _to_table(source, "merge_into")


def _join(left: pa.Table, right: pa.Table, lkeys: List[str], rkeys: List[str],
          how: str) -> pa.Table:
    """The row indices of ``left`` and (inner joins) ``right`` whose keys are equal."""
    names = [f"k{i}" for i in range(len(lkeys))]
    lt = left.select(lkeys).rename_columns(names).append_column(
        "li", pa.array(range(left.num_rows), pa.int64()))
    rt = right.select(rkeys).rename_columns(names)
    if how == "inner":
        rt = rt.append_column("ri", pa.array(range(right.num_rows), pa.int64()))
    return lt.join(rt, keys=names, join_type=how, use_threads=False)


def _column(v: _Value, n: int, typ: pa.DataType, src: pa.Table, tgt: pa.Table) -> pa.Array:
    kind, x = v
    if kind == "lit":
        return pa.array([x] * n, typ)
    col = (src if kind == "s" else tgt).column(x)
    try:
        return col.cast(typ).combine_chunks()
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as e:
        raise InvalidArgumentError(f"merge_into: column {x} does not cast to {typ}: {e}") from e


def merge_into(upd: TableUpdate, source: Any, on: Any, when_matched: Sequence[Any],
               when_not_matched: Sequence[Any]) -> List[CommitMessage]:
    """The commit messages of the MERGE INTO (see the module)."""
    from paimon_rs.table_delete import delete_row_ids
    from paimon_rs.table_upsert import append

    table = upd.table
    matched, not_matched = list(when_matched), list(when_not_matched)
    if not matched and not not_matched:
        raise InvalidArgumentError("At least one of when_matched or when_not_matched must be non-empty.")
    for label, clauses in (("when_matched", matched), ("when_not_matched", not_matched)):
        for i, c in enumerate(clauses[:-1]):
            if getattr(c, "condition", None) is None:
                raise InvalidArgumentError(
                    f"Only the last {label} clause may omit its condition. Clause at index {i} "
                    "has no condition, making subsequent clauses unreachable.")
    if any(getattr(c, "condition", None) is not None for c in matched + not_matched):
        raise UnsupportedError(
            "merge_into: clause conditions (SQL over s.* / t.* columns, which pypaimon evaluates "
            "with DataFusion) are not implemented by paimon_rs; filter the source instead")
    if isinstance(on, Mapping):
        tkeys, skeys = list(on.keys()), list(on.values())
    else:
        tkeys = skeys = list(on)
    if not tkeys:
        raise InvalidArgumentError("'on' must be non-empty.")
    opts = table.options
    for opt in ("data-evolution.enabled", "row-tracking.enabled"):
        if opts.get(opt, "false").strip().lower() != "true":
            raise InvalidArgumentError(f"merge_into requires '{opt}' = 'true' on target table.")
    deletes = [c for c in matched if getattr(c, "delete", False)]
    if deletes and opts.get("deletion-vectors.enabled", "false").strip().lower() != "true":
        raise InvalidArgumentError(
            "merge_into DELETE requires 'deletion-vectors.enabled' = 'true' on target table.")
    if source is table or (hasattr(source, "identifier") and hasattr(source, "new_read_builder")
                           and str(source.identifier) == str(table.identifier)
                           and getattr(source, "table_path", None) == table.table_path):
        raise UnsupportedError("merge_into: a self-merge (the source is the target table) is not "
                               "implemented by paimon_rs")
    names = list(table.field_names)
    on_map = dict(zip(tkeys, skeys))
    upd_spec = None if not matched or deletes else _spec(matched[0].update, names, on_map, True)
    if upd_spec:
        moved = sorted(set(table.partition_keys) & set(upd_spec))
        if moved:
            raise InvalidArgumentError(
                f"merge_into does not support updating partition columns {moved}; "
                "cross-partition row movement is not implemented.")
    ins_spec = None
    if not_matched:
        ins_spec = _spec(not_matched[0].insert, names, on_map, False)
        for t, s in on_map.items():
            if t in names and t not in ins_spec:
                ins_spec[t] = ("s", s)
    src = _source_table(source)
    for s in skeys:
        if s not in src.column_names:
            raise InvalidArgumentError(f"merge_into: 'on' column '{s}' is not in the source")
    for spec in (upd_spec or {}, ins_spec or {}):
        for kind, x in spec.values():
            if kind == "s" and x not in src.column_names:
                raise InvalidArgumentError(f"merge_into: source column '{x}' is not in the source")
    for t in tkeys:
        if t not in names and t != ROW_ID:
            raise InvalidArgumentError(f"merge_into: 'on' column '{t}' is not in the target")
    sid = table.latest_snapshot_id()
    schema = table.arrow_schema
    messages: List[CommitMessage] = []
    try:
        tgt = None
        if sid is not None:
            refs = [x for k, x in (upd_spec or {}).values() if k == "t"]
            proj = list(dict.fromkeys([ROW_ID] + [t for t in tkeys if t != ROW_ID] + refs))
            rb = table.copy_without_time_travel({"scan.snapshot-id": str(sid)}).new_read_builder().with_projection(proj)
            tgt = rb.new_read().to_arrow(rb.new_scan().plan().splits())
        if matched and tgt is not None and tgt.num_rows and src.num_rows:
            j = _join(tgt, src, tkeys, skeys, "inner")
            sole_delete = len(matched) == 1 and bool(deletes)
            li = j.column("li")
            if not sole_delete and pc.count_distinct(li).as_py() != j.num_rows:
                raise InvalidArgumentError(
                    "MERGE matched multiple source rows to the same target _ROW_ID. "
                    "Deduplicate the source before merging.")
            t_rows, s_rows = tgt.take(li), src.take(j.column("ri"))
            if deletes:
                ids = pc.unique(t_rows.column(ROW_ID)).to_pylist()
                messages.extend(delete_row_ids(upd, ids, sid))
            elif upd_spec and j.num_rows:
                cols = [c for c in names if c in upd_spec]
                arrays = {ROW_ID: t_rows.column(ROW_ID)}
                for c in cols:
                    arrays[c] = _column(upd_spec[c], j.num_rows, schema.field(c).type, s_rows, t_rows)
                messages.extend(upd._update([pa.table(arrays)], cols, sid))
        if ins_spec is not None and src.num_rows:
            if tgt is not None and tgt.num_rows:
                rest = src.take(_join(src, tgt, skeys, tkeys, "left anti").column("li").sort())
            else:
                rest = src
            if rest.num_rows:
                n = rest.num_rows
                data = pa.table({c: (_column(ins_spec[c], n, schema.field(c).type, rest, rest)
                                     if c in ins_spec else pa.nulls(n, schema.field(c).type))
                                 for c in names})
                messages.extend(append(table, data))
    except BaseException:
        if messages:
            table._core.new_commit(upd.commit_user).abort(messages)
        raise
    return messages
