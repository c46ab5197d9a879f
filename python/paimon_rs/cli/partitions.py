"""``paimon-rs partitions <table>``: per partition, records, size, files, buckets and the last
file creation time, from the manifests."""

from __future__ import annotations

import argparse
from typing import Any

from paimon_rs.cli.base import Column, Output, Rows, add_command, add_table_argument, open_table


def register(subparsers: Any) -> None:
    p = add_command(subparsers, "partitions", run, help="list a table's partitions with their sizes")
    add_table_argument(p)
    p.add_argument("--snapshot", type=int, metavar="ID", help="as of this snapshot (default: latest)")


def run(args: argparse.Namespace) -> Output:
    parts = open_table(args).list_partitions(args.snapshot)
    rows = [{"partition": ",".join(f"{k}={v}" for k, v in p.spec.items()) or "(unpartitioned)",
             "spec": p.spec, "record_count": p.record_count, "file_size_in_bytes": p.file_size_in_bytes,
             "file_count": p.file_count, "total_buckets": p.total_buckets,
             "last_file_creation_time": p.last_file_creation_time or None}
            for p in parts]
    return Rows("partitions", [
        Column("partition"), Column("record_count", "int", "records"),
        Column("file_size_in_bytes", "bytes", "size"), Column("file_count", "int", "files"),
        Column("total_buckets", "int", "buckets"),
        Column("last_file_creation_time", "millis", "last file created"),
    ], rows)
