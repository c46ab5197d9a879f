"""Deletes of rows of data-evolution tables (pypaimon 2.1.0's ``TableUpdate.delete_by_row_id``
and ``delete_by_predicate``), through deletion vectors, as pypaimon's ``TableDeleteByRowId``
writes them: a deleted row's position (its ``_ROW_ID`` minus its file group's
``first_row_id``) is marked in the deletion vector of the group's anchor file (its oldest
data file: the least ``(max_sequence_number, file_name)`` of the files that are not ``.blob``
files); only deletion-vector index files are committed, no data file is rewritten. Reads
(paimon_rs's ``read/data_evolution.rs``, pypaimon's, Java's) drop the marked rows of the group.
The table must set ``deletion-vectors.enabled`` (pypaimon's check), except for a
``delete_by_predicate`` on partition columns only, which drops the partitions it matches
(``partition_delete``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Tuple

import pyarrow as pa

from paimon_rs.exceptions import InvalidArgumentError

if TYPE_CHECKING:
    from paimon_rs.predicate import Predicate
    from paimon_rs.table import CommitMessage
    from paimon_rs.table_update import TableUpdate

ROW_ID = "_ROW_ID"


def _check(upd: TableUpdate) -> None:
    opts = upd.table.options
    for opt in ("data-evolution.enabled", "row-tracking.enabled", "deletion-vectors.enabled"):
        if opts.get(opt, "false").strip().lower() != "true":
            raise InvalidArgumentError(f"delete requires '{opt}' = 'true'.")


def _anchors(upd: TableUpdate, sid: int) -> Tuple[List[int], List[Tuple[int, int, str]]]:
    """The file groups of snapshot ``sid`` as ``(first_row_id, row_count, anchor file)``,
    ordered by ``first_row_id``, and their first row ids."""
    t = upd.table.copy_without_time_travel({"scan.snapshot-id": str(sid)})
    best: Dict[int, Tuple[int, str, int]] = {}
    for split in t.new_read_builder().new_scan().plan().splits():
        for f in split.files:
            if f.first_row_id is None or f.file_name.endswith(".blob"):
                continue
            key = (f.max_sequence_number, f.file_name, f.row_count)
            if f.first_row_id not in best or key < best[f.first_row_id]:
                best[f.first_row_id] = key
    groups = sorted((first, rows, name) for first, (_, name, rows) in best.items())
    return [g[0] for g in groups], groups


def delete_row_ids(upd: TableUpdate, row_ids: Sequence[Any],
                   sid: Optional[int] = None) -> List[CommitMessage]:
    """The commit messages deleting the rows ``row_ids`` (ids of live rows of the latest
    snapshot, or of ``sid``; repeated ids count once). Nothing is committed."""
    import bisect

    _check(upd)
    ids: List[int] = []
    seen = set()
    for r in row_ids:
        if r is None:
            raise InvalidArgumentError("_ROW_ID value must not be null.")
        r = int(r)
        if r not in seen:
            seen.add(r)
            ids.append(r)
    if not ids:
        return []
    if sid is None:
        sid = upd.table.latest_snapshot_id()
    if sid is None:
        raise InvalidArgumentError(f"Row ID {ids[0]} does not belong to any valid range []")
    firsts, groups = _anchors(upd, sid)
    files: List[str] = []
    positions: List[int] = []
    for r in ids:
        k = bisect.bisect_right(firsts, r) - 1
        if k < 0 or r >= groups[k][0] + groups[k][1]:
            ranges = [f"[{g[0]}, {g[0] + g[1] - 1}]" for g in groups]
            raise InvalidArgumentError(f"Row ID {r} does not belong to any valid range {ranges}")
        files.append(groups[k][2])
        positions.append(r - groups[k][0])
    batch = pa.RecordBatch.from_arrays(
        [pa.array(files, pa.string()), pa.array(positions, pa.int64())],
        names=["_FILE_NAME", "_ROW_POSITION"])
    messages, _ = upd.table._core.delete_positions(sid, batch)
    return list(messages)


def delete_by_predicate(upd: TableUpdate, predicate: Optional[Predicate]) -> List[CommitMessage]:
    """The commit messages deleting the live rows of the latest snapshot that ``predicate``
    matches (all rows if None; the predicate applied exactly after the read). A predicate on
    partition columns only drops the partitions it matches instead, on any table
    (``partition_delete``)."""
    from paimon_rs.mutations import predicate_mask

    keys = upd.table.partition_keys
    if predicate is not None and keys and predicate.fields() and set(predicate.fields()) <= set(keys):
        return partition_delete(upd, predicate)
    _check(upd)
    sid = upd.table.latest_snapshot_id()
    if sid is None:
        return []
    needed = sorted(predicate.fields()) if predicate is not None else []
    t = upd.table.copy_without_time_travel({"scan.snapshot-id": str(sid)})
    rb = t.new_read_builder().with_projection(list(dict.fromkeys([ROW_ID] + needed)))
    if predicate is not None:
        rb = rb.with_filter(predicate)
    matched = rb.new_read().to_arrow(rb.new_scan().plan().splits())
    if predicate is not None:
        matched = matched.filter(predicate_mask(predicate, matched))
    return delete_row_ids(upd, matched.column(ROW_ID).to_pylist(), sid)


def partition_delete(upd: TableUpdate, predicate: Predicate) -> List[CommitMessage]:
    """The commit messages dropping the partitions of the latest snapshot that ``predicate``
    (on partition columns only) matches, as pypaimon's ``delete_by_predicate`` and Java's
    Spark ``DELETE`` (a ``truncatePartitions``): per partition and bucket, its data files and
    index files listed as deleted. Committed, they are an OVERWRITE of those partitions that
    must replace exactly those files: a commit to one of them since (a write, a delete, a
    compaction) makes it fail with ``CommitConflictError`` ("Overwrite conflict detected")."""
    sid = upd.table.latest_snapshot_id()
    if sid is None:
        return []
    return list(upd.table._core.partition_delete_messages(sid, predicate.to_core(upd.table.arrow_schema)))
