"""Branches on the command line: ``branches``, ``create-branch``, ``delete-branch``,
``fast-forward`` (``Table.list_branches``, ``create_branch``, ``delete_branch``,
``fast_forward``). Any command reads a branch given as ``<warehouse> <db>.<table>$branch_<b>``."""

from __future__ import annotations

import argparse
from typing import Any

from paimon_rs.cli.base import Column, Output, Record, Rows, add_command, add_table_argument, open_table


def register(subparsers: Any) -> None:
    p = add_command(subparsers, "branches", run_branches,
                    help="list the branches with their latest snapshots")
    add_table_argument(p)

    p = add_command(subparsers, "create-branch", run_create_branch,
                    help="create a branch, empty or from a tag")
    add_table_argument(p)
    p.add_argument("--name", required=True, help="the branch's name")
    p.add_argument("--tag", default=None, help="start the branch at this tag (default: empty)")

    p = add_command(subparsers, "delete-branch", run_delete_branch, help="delete a branch")
    add_table_argument(p)
    p.add_argument("--name", required=True, help="the branch's name")

    p = add_command(subparsers, "fast-forward", run_fast_forward,
                    help="make the table take over a branch's history")
    add_table_argument(p)
    p.add_argument("--name", required=True, help="the branch to fast-forward to")


def run_branches(args: argparse.Namespace) -> Output:
    table = open_table(args)
    rows = []
    for name in table.list_branches():
        b = table.switch_to_branch(name)
        s = b.snapshot_manager().get_latest_snapshot()
        rows.append({"name": name, "latest_snapshot": s.id if s else None,
                     "committed": s.time_millis if s else None, "tags": len(b.list_tags())})
    cols = [Column("name"), Column("latest_snapshot", "int", "latest snapshot"),
            Column("committed", "millis"), Column("tags", "int")]
    return Rows("branches", cols, rows)


def run_create_branch(args: argparse.Namespace) -> Output:
    table = open_table(args)
    table.create_branch(args.name, args.tag)
    return Record("branch", {"name": args.name, "from_tag": args.tag}, title="created branch", hide_none=True)


def run_delete_branch(args: argparse.Namespace) -> Output:
    open_table(args).delete_branch(args.name)
    return Record("branch", {"name": args.name}, title="deleted branch")


def run_fast_forward(args: argparse.Namespace) -> Output:
    table = open_table(args)
    table.fast_forward(args.name)
    return Record("branch", {"name": args.name, "latest": table.latest_snapshot_id()},
                  title=f"fast-forwarded {table.current_branch()} to")
