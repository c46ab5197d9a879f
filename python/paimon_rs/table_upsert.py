"""Upserts by key columns into data-evolution tables (pypaimon 2.1.0's
``TableUpdate.upsert_by_arrow_with_key`` / ``upsert_by_key``), on top of the row updates of
``paimon_rs.table_update``.

Per partition of the input (partition columns take no part in matching: they are equal within
one partition): input rows with the same key collapse to the last one (pypaimon's "last write
wins"); the latest snapshot's live rows of the partition whose key equals an input row's are
updated (every such row, so a key held by several rows updates them all), by ``_ROW_ID``, in
the update columns (``with_update_type``; default every column); the other input rows are
appended as new rows, with the columns the input has. Both go into one list of commit
messages, committed together. Key values compare as Python values (``None`` equals ``None``:
a null key matches a row with a null key, as pypaimon's tuples do).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, List, Tuple

import pyarrow as pa

from paimon_rs.exceptions import InvalidArgumentError

if TYPE_CHECKING:
    from paimon_rs.table import CommitMessage, Table
    from paimon_rs.table_update import TableUpdate

ROW_ID = "_ROW_ID"


def _check(upd: TableUpdate, data: pa.Table, keys: List[str], what: str) -> None:
    """pypaimon's checks of an upsert's input (the same messages)."""
    opts = upd.table.options
    for opt in ("data-evolution.enabled", "row-tracking.enabled"):
        if opts.get(opt, "false").strip().lower() != "true":
            raise InvalidArgumentError(f"{what} requires '{opt}' = 'true'.")
    if not keys:
        raise InvalidArgumentError("upsert_keys must not be empty.")
    names = upd.table.field_names
    for k in keys:
        if k not in names:
            raise InvalidArgumentError(f"upsert_key '{k}' is not in table schema fields: {names}")
        if k not in data.column_names:
            raise InvalidArgumentError(
                f"upsert_key '{k}' is not in input data columns: {data.column_names}")
    missing = [p for p in upd.table.partition_keys if p not in data.column_names]
    if missing:
        raise InvalidArgumentError(
            "For partitioned tables, input data must contain all partition key columns. "
            f"Missing: {missing}")
    unknown = [c for c in data.column_names if c not in names]
    if unknown:
        raise InvalidArgumentError(f"{what}: input columns {unknown} are not in table schema fields: {names}")
    if data.num_rows == 0:
        raise InvalidArgumentError("Input data is empty.")


def _by_partition(data: pa.Table, pkeys: List[str]) -> List[pa.Table]:
    """``data`` split by partition values, in order of first appearance."""
    if not pkeys:
        return [data]
    cols = [data.column(k).to_pylist() for k in pkeys]
    at: Dict[Tuple[Any, ...], List[int]] = {}
    for i in range(data.num_rows):
        at.setdefault(tuple(c[i] for c in cols), []).append(i)
    return [data.take(pa.array(ix, pa.int64())) for ix in at.values()]


def _keys_of(data: pa.Table, keys: List[str]) -> List[Tuple[Any, ...]]:
    cols = [data.column(k).to_pylist() for k in keys]
    return [tuple(c[i] for c in cols) for i in range(data.num_rows)]


def _existing(upd: TableUpdate, sid: int, part: pa.Table, match: List[str],
              wanted: set) -> Dict[Tuple[Any, ...], List[int]]:
    """key -> the ``_ROW_ID``s of the live rows of ``part``'s partition in snapshot ``sid``
    whose key is in ``wanted``."""
    from paimon_rs.mutations import predicate_mask

    table = upd.table.copy_without_time_travel({"scan.snapshot-id": str(sid)})
    rb = table.new_read_builder().with_projection(list(dict.fromkeys(match + [ROW_ID])))
    pkeys = upd.table.partition_keys
    where = None
    if pkeys:
        pb = rb.new_predicate_builder()
        spec = {k: part.column(k)[0].as_py() for k in pkeys}
        where = pb.and_predicates([pb.is_null(k) if v is None else pb.equal(k, v)
                                   for k, v in spec.items()])
        rb = table.new_read_builder().with_projection(
            list(dict.fromkeys(match + pkeys + [ROW_ID]))).with_filter(where)
    out: Dict[Tuple[Any, ...], List[int]] = {}
    reader = rb.new_read().to_arrow_batch_reader(rb.new_scan().plan().splits())
    for batch in reader:
        b = pa.Table.from_batches([batch])
        if where is not None:  # exact: the filter may only prune
            b = b.filter(predicate_mask(where, b))
        ids = b.column(ROW_ID).to_pylist()
        for key, rid in zip(_keys_of(b, match), ids):
            if key in wanted:
                out.setdefault(key, []).append(rid)
    return out


def append(table: Table, rows: pa.Table) -> List[CommitMessage]:
    """The commit messages of an append of ``rows`` (the columns they have, the others null:
    ``with_write_type``)."""
    from paimon_rs.table import BatchTableWrite

    ordered = [c for c in table.field_names if c in rows.column_names]
    w = BatchTableWrite(table)
    try:
        if len(ordered) != len(table.field_names):
            w.with_write_type(ordered)
        w.write_arrow(rows.select(ordered))
        return w.prepare_commit()
    finally:
        w.close()


def upsert(upd: TableUpdate, data: pa.Table, keys: List[str], what: str) -> List[CommitMessage]:
    """The commit messages of the upsert of ``data`` by ``keys`` (see the module)."""
    keys = list(keys)
    _check(upd, data, keys, what)
    table = upd.table
    pkeys = table.partition_keys
    match = [k for k in keys if k not in pkeys]
    if upd.update_cols is not None:
        cols = list(upd.update_cols)
    else:
        cols = list(table.field_names)
    cols = [c for c in cols if c not in pkeys]  # equal within a partition
    sid = table.latest_snapshot_id()
    updates: List[pa.Table] = []
    appends: List[pa.Table] = []
    for part in _by_partition(data, pkeys):
        tuples = _keys_of(part, match)
        last = {k: i for i, k in enumerate(tuples)}  # last write wins
        if len(last) != len(tuples):
            keep = sorted(last.values())
            part = part.take(pa.array(keep, pa.int64()))
            tuples = [tuples[i] for i in keep]
        found = _existing(upd, sid, part, match, set(tuples)) if sid is not None else {}
        src: List[int] = []
        rids: List[int] = []
        new: List[int] = []
        for i, k in enumerate(tuples):
            if k in found:
                for r in found[k]:
                    src.append(i)
                    rids.append(r)
            else:
                new.append(i)
        if src:
            missing = [c for c in cols if c not in part.column_names]
            if missing:
                raise InvalidArgumentError(
                    f"{what}: the input has no column {missing[0]} (an update column of the matched rows)")
            u = part.select(cols).take(pa.array(src, pa.int64()))
            updates.append(u.append_column(ROW_ID, pa.array(rids, pa.int64())))
        if new:
            appends.append(part.take(pa.array(new, pa.int64())))
    messages: List[CommitMessage] = []
    try:
        if updates and cols:
            messages.extend(upd._update([pa.concat_tables(updates)], cols, sid))
        if appends:
            messages.extend(append(table, pa.concat_tables(appends)))
    except BaseException:
        if messages:
            table._core.new_commit(upd.commit_user).abort(messages)
        raise
    return messages


def rows_to_table(upd: TableUpdate, rows: Any, what: str) -> pa.Table:
    """pypaimon's ``upsert_by_key`` rows (dicts by column name, tuples in the table's column
    order, or row objects with ``fields`` and ``values``) as one Arrow table; every row must
    name the same columns."""
    if isinstance(rows, dict) or (hasattr(rows, "fields") and hasattr(rows, "values")):
        rows = [rows]
    rows = list(rows)
    if not rows:
        raise InvalidArgumentError("rows must not be empty.")
    names = upd.table.field_names
    dicts: List[Dict[str, Any]] = []
    for row in rows:
        if isinstance(row, dict):
            values = dict(row)
        elif hasattr(row, "fields") and hasattr(row, "values") and row.fields is not None:
            values = {getattr(f, "name", f): v for f, v in zip(row.fields, row.values)}
        else:
            row = list(row.values if hasattr(row, "values") and not callable(row.values) else row)
            if len(row) != len(names):
                raise InvalidArgumentError(
                    "Rows without field metadata must have the same arity as the table schema: "
                    f"{len(row)} != {len(names)}.")
            values = dict(zip(names, row))
        unknown = [c for c in values if c not in names]
        if unknown:
            raise InvalidArgumentError(
                f"{what} got row field(s) {unknown} that are not in table schema fields: {names}")
        dicts.append(values)
    first = set(dicts[0])
    for d in dicts[1:]:
        if set(d) != first:
            raise InvalidArgumentError(
                f"{what} requires the rows to have the same field set: {sorted(first)} vs {sorted(d)}")
    schema = upd.table.arrow_schema
    target = pa.schema([schema.field(c) for c in names if c in first])
    try:
        return pa.Table.from_pylist(dicts, schema=target)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError) as e:
        raise InvalidArgumentError(f"{what}: {e}") from e


def upsert_rows(upd: TableUpdate, rows: Any, keys: List[str]) -> List[CommitMessage]:
    """``upsert`` of pypaimon's row objects (``upsert_by_key``)."""
    return upsert(upd, rows_to_table(upd, rows, "upsert_by_key"), keys, "upsert_by_key")

