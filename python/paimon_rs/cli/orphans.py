"""``paimon-rs remove-orphans <table> [--older-than DURATION] [--dry-run]``: remove files no
snapshot, tag or branch references (crash leftovers), as ``Table.remove_orphan_files``."""

from __future__ import annotations

import argparse
import datetime as _dt
import os
import re
from typing import Any

from paimon_rs.cli.base import Column, Output, Record, Rows, UsageError, add_command, add_table_argument, open_table

_UNITS = {"s": 1, "m": 60, "min": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_duration(text: str) -> _dt.timedelta:
    """``90s``, ``30m``/``30min``, ``12h``, ``1d``, ``2w`` (a bare number is seconds)."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*", text.lower())
    if m is None or m.group(2) not in ("", *_UNITS):
        raise UsageError(f"--older-than '{text}': expected a duration such as 90s, 30m, 12h, 1d or 2w")
    return _dt.timedelta(seconds=float(m.group(1)) * _UNITS.get(m.group(2) or "s", 1))


def register(subparsers: Any) -> None:
    p = add_command(subparsers, "remove-orphans", run,
                    help="remove files no snapshot references (crash leftovers)")
    add_table_argument(p)
    p.add_argument("--older-than", default="1d", metavar="DURATION",
                   help="only files last modified longer ago than this (default 1d, as Java Paimon)")
    p.add_argument("--dry-run", action="store_true", help="list what would be removed, remove nothing")


def run(args: argparse.Namespace) -> Output:
    older = parse_duration(args.older_than)
    table = open_table(args)
    r = table.remove_orphan_files(older_than=older, dry_run=args.dry_run)
    root = table.table_path.rstrip("/") + "/"

    def rel(p: str) -> str:
        return p[len(root):] if p.startswith(root) else os.path.relpath(p, root)
    summary = Record("summary", {"dry_run": r.dry_run, "files": len(r.files), "bytes": r.bytes,
                                 "directories": len(r.directories)},
                     title="would remove (dry run)" if r.dry_run else "removed", kinds={"bytes": "bytes"})
    files = Rows("files", [Column("path")], [{"path": rel(p)} for p in r.files + r.directories])
    return [summary, files]
