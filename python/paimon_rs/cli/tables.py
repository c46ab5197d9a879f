"""``paimon-rs tables <warehouse> [db]``: the databases and tables of a warehouse, with their keys,
buckets and latest snapshot (a table that cannot be opened is listed with the error)."""

from __future__ import annotations

import argparse
from typing import Any, Dict, List

from paimon_rs.cli.base import Column, Output, Rows, UsageError, add_command, catalog_options, open_catalog
from paimon_rs.exceptions import PaimonRsError


def register(subparsers: Any) -> None:
    p = add_command(subparsers, "tables", run, help="list the tables of a warehouse (or of one database)")
    p.add_argument("warehouse", help="the warehouse directory")
    p.add_argument("database", nargs="?", help="only this database")


def run(args: argparse.Namespace) -> Output:
    from paimon_rs.table import Table
    if "warehouse" in catalog_options(args):
        raise UsageError("tables: -o warehouse=...: the warehouse is the first argument")
    catalog = open_catalog(args.warehouse, catalog_options(args))
    dbs = [args.database] if args.database else catalog.list_databases()
    rows: List[Dict[str, Any]] = []
    for db in dbs:
        for name in catalog.list_tables(db):
            try:
                t: Table = catalog.get_table(f"{db}.{name}")
                latest = t.snapshot_manager().get_latest_snapshot()
            except PaimonRsError as e:  # one table we cannot open does not hide the others
                rows.append({"database": db, "table": name, "error": str(e)})
                continue
            rows.append({
                "database": db, "table": name,
                "primary_keys": t.primary_keys, "partition_keys": t.partition_keys,
                "bucket": t.total_buckets,
                "latest_snapshot": None if latest is None else latest.id,
                "records": None if latest is None else latest.total_record_count,
                "last_commit": None if latest is None else latest.time_millis,
            })
    return Rows("tables", [
        Column("database"), Column("table"), Column("primary_keys", title="primary keys"),
        Column("partition_keys", title="partition keys"), Column("bucket", "int"),
        Column("latest_snapshot", "int", "snapshot"), Column("records", "int"),
        Column("last_commit", "millis", "last commit"),
    ] + ([Column("error")] if any("error" in r for r in rows) else []), rows)
