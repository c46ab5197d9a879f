"""``paimon-rs files <table>``: the live data files per partition and bucket, with levels, sizes,
rows and sequence numbers, then the bucket's changelog files (``kind`` = ``changelog``; those of
the snapshots still present up to the one shown, each with the ``snapshot`` that added it: what
``Table.changelog`` reads; the kind and snapshot columns show when the table has any).
``--summary``: one line per partition and bucket (data files; changelog files and size apart).
``--json`` adds ``kind``, ``snapshot`` (None for data files), ``total_buckets`` and
``creation_time`` (epoch millis)."""

from __future__ import annotations

import argparse
import datetime as _dt
from typing import Any, Dict, List, Optional, Tuple

from paimon_rs import _core
from paimon_rs.cli.base import Column, Output, Rows, add_command, add_table_argument, open_table


def register(subparsers: Any) -> None:
    p = add_command(subparsers, "files", run,
                    help="list a table's data and changelog files per partition and bucket")
    add_table_argument(p)
    p.add_argument("--snapshot", type=int, metavar="ID", help="as of this snapshot (default: latest)")
    p.add_argument("--summary", action="store_true",
                   help="one line per partition and bucket (files and sizes per level)")


FileRow = Tuple[str, int, int, str, int, int, int, Optional[int], int, int, int, Optional[int]]


def _file(row: FileRow, kind: str, snapshot: Optional[int]) -> Dict[str, Any]:
    (part, bucket, total, name, level, size, rows, deletes, min_seq, max_seq, schema_id, created) = row
    return {"partition": part or "/", "bucket": bucket, "kind": kind, "snapshot": snapshot,
            "total_buckets": total, "file_name": name, "level": level, "file_size": size, "row_count": rows,
            "delete_row_count": deletes, "min_sequence_number": min_seq, "max_sequence_number": max_seq,
            "schema_id": schema_id, "creation_time": _epoch_millis(created)}


def run(args: argparse.Namespace) -> Output:
    t = open_table(args)
    data = [_file(r, "data", None) for r in _core.live_files(t._core, args.snapshot)]
    changelog = [_file(r, "changelog", sid) for sid, r in _core.changelog_files(t._core, args.snapshot)]
    # per partition and bucket: its data files, then its changelog files (both lists are sorted)
    files = sorted(data + changelog, key=lambda f: (f["partition"], f["bucket"], f["kind"] == "changelog"))
    if args.summary:
        return _summary(files, bool(changelog))
    # the kind and changelog columns only show for a table that has changelog files (--json
    # always has "kind" and "snapshot")
    kind = [Column("kind")] if changelog else []
    of = [Column("snapshot", "int", "changelog of")] if changelog else []
    return Rows("files", [
        Column("partition"), Column("bucket", "int"), *kind, Column("level", "int"),
        Column("file_name", title="file"),
        Column("file_size", "bytes", "size"), Column("row_count", "int", "rows"),
        Column("delete_row_count", "int", "deletes"), Column("min_sequence_number", "int", "min seq"),
        Column("max_sequence_number", "int", "max seq"), Column("schema_id", "int", "schema"),
        *of,
    ], files)


def _epoch_millis(local_millis: Optional[int]) -> Optional[int]:
    """A manifest's creation time (the writer's local wall clock encoded as UTC millis) as epoch
    millis, reading the wall clock in this process's time zone (as Java's
    ``creationTimeEpochMillis``)."""
    if local_millis is None:
        return None
    wall = _dt.datetime.fromtimestamp(local_millis / 1000, tz=_dt.timezone.utc).replace(tzinfo=None)
    return int(wall.timestamp() * 1000)


def _summary(files: List[Dict[str, Any]], has_changelog: bool) -> Rows:
    acc: Dict[Tuple[str, int], Dict[str, Any]] = {}
    for f in files:
        b = acc.setdefault((f["partition"], f["bucket"]), {
            "partition": f["partition"], "bucket": f["bucket"], "files": 0, "bytes": 0, "rows": 0,
            "levels": {}, "changelog_files": 0, "changelog_bytes": 0})
        if f["kind"] == "changelog":
            b["changelog_files"] += 1
            b["changelog_bytes"] += f["file_size"]
            continue
        b["files"] += 1
        b["bytes"] += f["file_size"]
        b["rows"] += f["row_count"]
        b["levels"][f["level"]] = b["levels"].get(f["level"], 0) + 1
    rows = []
    for b in acc.values():
        b["levels"] = {f"L{lv}": n for lv, n in sorted(b["levels"].items())}
        rows.append(b)
    return Rows("buckets", [
        Column("partition"), Column("bucket", "int"), Column("files", "int"), Column("bytes", "bytes", "size"),
        Column("rows", "int"), Column("levels", title="files per level"),
        *([Column("changelog_files", "int", "changelog files"),
           Column("changelog_bytes", "bytes", "changelog size")] if has_changelog else []),
    ], rows)
