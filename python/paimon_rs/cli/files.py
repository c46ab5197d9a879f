"""``paimon-rs files <table>``: the live data files per partition and bucket, with levels, sizes,
rows and sequence numbers (``--summary``: one line per partition and bucket)."""

from __future__ import annotations

import argparse
from typing import Any, Dict, List, Tuple

from paimon_rs import _core
from paimon_rs.cli.base import Column, Output, Rows, add_command, add_table_argument, open_table


def register(subparsers: Any) -> None:
    p = add_command(subparsers, "files", run, help="list a table's data files per partition and bucket")
    add_table_argument(p)
    p.add_argument("--snapshot", type=int, metavar="ID", help="as of this snapshot (default: latest)")
    p.add_argument("--summary", action="store_true",
                   help="one line per partition and bucket (files and sizes per level)")


def run(args: argparse.Namespace) -> Output:
    t = open_table(args)
    files = [{"partition": part or "/", "bucket": bucket, "total_buckets": total, "file_name": name,
              "level": level, "file_size": size, "row_count": rows, "delete_row_count": deletes,
              "min_sequence_number": min_seq, "max_sequence_number": max_seq, "schema_id": schema_id,
              "creation_time": created}
             for (part, bucket, total, name, level, size, rows, deletes, min_seq, max_seq, schema_id,
                  created) in _core.live_files(t._core, args.snapshot)]
    if args.summary:
        return _summary(files)
    return Rows("files", [
        Column("partition"), Column("bucket", "int"), Column("level", "int"), Column("file_name", title="file"),
        Column("file_size", "bytes", "size"), Column("row_count", "int", "rows"),
        Column("delete_row_count", "int", "deletes"), Column("min_sequence_number", "int", "min seq"),
        Column("max_sequence_number", "int", "max seq"), Column("schema_id", "int", "schema"),
    ], files)


def _summary(files: List[Dict[str, Any]]) -> Rows:
    acc: Dict[Tuple[str, int], Dict[str, Any]] = {}
    for f in files:
        b = acc.setdefault((f["partition"], f["bucket"]), {
            "partition": f["partition"], "bucket": f["bucket"], "files": 0, "bytes": 0, "rows": 0,
            "levels": {}})
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
    ], rows)
