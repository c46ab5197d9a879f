"""Reading a table's changelog (``Table.changelog``): the changelog files written for
``changelog-producer`` = ``input`` (by paimon_rs or Java Paimon) / ``lookup`` /
``full-compaction`` (Java Paimon) tables, read as
an incremental read with ``incremental-between-scan-mode = changelog``.

Every record is returned as stored (no merge by key), in snapshot order, with its row kind
(``+I``, ``-U``, ``+U``, ``-D``) as the leading ``rowkind`` string column, as Java's incremental
changelog read and its ``audit_log`` table give it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, List, Optional

import pyarrow as pa

from paimon_rs.exceptions import InvalidArgumentError
from paimon_rs.predicate import Predicate

if TYPE_CHECKING:
    from paimon_rs.table import Table

#: The leading column of an incremental read of a primary-key table: each record's row kind.
ROW_KIND_COLUMN = "rowkind"


def read_changelog(table: Table, start_snapshot: int, end_snapshot: Optional[int] = None,
                   filter: Optional[Predicate] = None, projection: Optional[List[str]] = None) -> pa.Table:
    """The changelog records of the snapshots after ``start_snapshot`` (exclusive) up to
    ``end_snapshot`` (inclusive; default the latest snapshot) of ``table`` (``Table.changelog``).

    Each snapshot of the range contributes the files of its changelog manifest list (APPEND
    snapshots for ``changelog-producer = input``, COMPACT ones for ``lookup`` /
    ``full-compaction``; OVERWRITE ones are skipped, as Java); a snapshot without one
    contributes nothing, so a table without a changelog producer has an empty changelog (as
    Java). Records are not merged by key, as Paimon after 1.0 reads them (Java 1.0 merges a
    range's files: docs/paimon-behaviour.md §9.6). The records are returned as
    stored, in snapshot order, a primary-key table's with its row kind as the leading
    ``rowkind`` column (``+I``/``-U``/``+U``/``-D``); ``filter`` (a ``paimon_rs.predicate``
    predicate) keeps the records that match, ``projection`` names the other columns.

    A snapshot of the range that expired while the table's changelog retention
    (``changelog.num-retained.*`` / ``changelog.time-retained``) outlives its snapshots is read
    from its long-lived changelog (``changelog/changelog-<id>``), as Java's streaming read does.

    Raises what an incremental read raises: ``InvalidArgumentError`` when the start is after
    the end, an error naming the snapshot when one of the range is no longer there.
    """
    for name, v in (("start_snapshot", start_snapshot), ("end_snapshot", end_snapshot)):
        if v is not None and (isinstance(v, bool) or not isinstance(v, int)):
            raise InvalidArgumentError(
                f"changelog of {table.identifier}: {name} must be a snapshot id (int), not {type(v).__name__}")
    latest = table.latest_snapshot_id() if end_snapshot is None else end_snapshot
    t = table.copy({
        "incremental-between": f"{start_snapshot},{start_snapshot if latest is None else latest}",
        "incremental-between-scan-mode": "changelog",
    })
    rb = t.new_read_builder().with_filter(filter)
    if projection is not None:
        rb = rb.with_projection(list(projection))
    if latest is None:  # no snapshot yet: nothing has changed
        return rb.read_type().empty_table()
    return rb.new_read().to_arrow(rb.new_scan().plan().splits())


__all__ = ["ROW_KIND_COLUMN", "read_changelog"]
