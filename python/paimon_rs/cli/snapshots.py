"""``paimon-rs snapshots <table>``: every snapshot still present, oldest first (or one with
``--id``, all its fields)."""

from __future__ import annotations

import argparse
from typing import Any

from paimon_rs.cli.base import Column, Output, Record, Rows, UsageError, add_command, add_table_argument, open_table


def register(subparsers: Any) -> None:
    p = add_command(subparsers, "snapshots", run, help="list a table's snapshots")
    add_table_argument(p)
    p.add_argument("--id", type=int, metavar="N", help="show every field of snapshot N")
    p.add_argument("--limit", type=int, metavar="N", help="only the newest N snapshots")


COLUMNS = [
    Column("id", "int"), Column("schema_id", "int", "schema"), Column("commit_kind", title="kind"),
    Column("time_millis", "millis", "committed"), Column("total_record_count", "int", "records"),
    Column("delta_record_count", "int", "delta"), Column("commit_user", title="user"),
]  # --json and --id give every field


def run(args: argparse.Namespace) -> Output:
    sm = open_table(args).snapshot_manager()
    if args.id is not None:
        s = sm.get_snapshot_by_id(args.id)
        if s is None:
            raise UsageError(f"snapshots: no snapshot {args.id} in {args.table[-1]}")
        return Record("snapshot", s.to_dict(), kinds={"time_millis": "millis"}, hide_none=True)
    if args.limit is not None and args.limit < 0:
        raise UsageError("snapshots: --limit must be >= 0")
    ids = sm.snapshot_ids()
    if args.limit is not None:
        ids = ids[len(ids) - args.limit:] if args.limit else []
    snaps = [s for s in sm.get_snapshots_batch(ids).values() if s is not None]
    return Rows("snapshots", COLUMNS, [s.to_dict() for s in snaps])
