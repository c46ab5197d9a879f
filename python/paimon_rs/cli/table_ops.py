"""Table operations on the command line: ``tags``, ``create-tag``, ``rollback``, ``expire``
(``Table.tags``, ``create_tag``, ``rollback_to``, ``expire_snapshots``)."""

from __future__ import annotations

import argparse
import os
from typing import Any, List

from paimon_rs.cli.base import Column, Output, Record, Rows, add_command, add_table_argument, open_table
from paimon_rs.cli.orphans import parse_duration


def register(subparsers: Any) -> None:
    p = add_command(subparsers, "tags", run_tags, help="list the tags with their snapshots")
    add_table_argument(p)

    p = add_command(subparsers, "create-tag", run_create_tag, help="tag a snapshot (the latest by default)")
    add_table_argument(p)
    p.add_argument("--name", required=True, help="the tag's name")
    p.add_argument("--snapshot", type=int, default=None, help="snapshot id (default: the latest)")
    p.add_argument("--time-retained", default=None, metavar="DURATION",
                   help="delete the tag once it is this old (e.g. 1d, 12h)")

    p = add_command(subparsers, "rollback", run_rollback,
                    help="roll back to a snapshot or tag; newer snapshots and their files go")
    add_table_argument(p)
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--snapshot", type=int, help="snapshot id to roll back to")
    g.add_argument("--tag", help="tag to roll back to")

    p = add_command(subparsers, "expire", run_expire,
                    help="expire snapshots and delete the files only they referenced")
    add_table_argument(p)
    p.add_argument("--retain-min", type=int, default=None,
                   help="keep at least this many snapshots (default: snapshot.num-retained.min, 10)")
    p.add_argument("--retain-max", type=int, default=None,
                   help="keep at most this many (default: snapshot.num-retained.max)")
    p.add_argument("--older-than", default=None, metavar="DURATION",
                   help="expire snapshots older than this (default: snapshot.time-retained, 1h)")
    p.add_argument("--max-deletes", type=int, default=None,
                   help="expire at most this many snapshots (default: snapshot.expire.limit, 50)")


def run_tags(args: argparse.Namespace) -> Output:
    tags = open_table(args).tags()
    cols = [Column("name"), Column("snapshot_id", "int", "snapshot"), Column("snapshot_time_millis", "millis",
                                                                            "committed"),
            Column("create_time", title="tag created"), Column("time_retained_millis", "int", "retained ms")]
    return Rows("tags", cols, [t.__dict__.copy() for t in tags])


def run_create_tag(args: argparse.Namespace) -> Output:
    table = open_table(args)
    retained = None
    if args.time_retained is not None:
        retained = parse_duration(args.time_retained)
    table.create_tag(args.name, snapshot_id=args.snapshot, time_retained=retained)
    info = {t.name: t for t in table.tags()}[args.name]
    return Record("tag", {"name": info.name, "snapshot": info.snapshot_id}, title="created tag")


def _reclaimed(table: Any, r: Any, title: str) -> List[Any]:
    root = table.table_path.rstrip("/") + "/"

    def rel(p: str) -> str:
        return p[len(root):] if p.startswith(root) else os.path.relpath(p, root)
    summary = Record("summary", {"snapshots": len(r.snapshots), "files": len(r.files), "bytes": r.bytes,
                                 "latest": table.latest_snapshot_id()},
                     title=title, kinds={"bytes": "bytes"})
    return [summary, Rows("files", [Column("path")], [{"path": rel(p)} for p in r.files])]


def run_rollback(args: argparse.Namespace) -> Output:
    table = open_table(args)
    r = table.rollback_to(args.tag if args.tag is not None else args.snapshot)
    return _reclaimed(table, r, "rolled back")


def run_expire(args: argparse.Namespace) -> Output:
    table = open_table(args)
    older = parse_duration(args.older_than) if args.older_than is not None else None
    r = table.expire_snapshots(retain_min=args.retain_min, retain_max=args.retain_max, older_than=older,
                               max_deletes=args.max_deletes)
    return _reclaimed(table, r, "expired")
