"""``paimon-rs tables <warehouse> [db]`` (or ``paimon-rs --warehouse <warehouse> tables [db]``): the
databases and tables of a warehouse, with their keys, buckets and latest snapshot (a table that
cannot be opened is listed with the error). A local warehouse or database that does not exist is
an error (nothing is created)."""

from __future__ import annotations

import argparse
from typing import Any, Dict, List

from paimon_rs.cli.base import (
    Column,
    Output,
    Rows,
    UsageError,
    add_command,
    catalog_options,
    open_catalog,
    require_database,
)
from paimon_rs.exceptions import PaimonRsError


def register(subparsers: Any) -> None:
    p = add_command(subparsers, "tables", run, help="list the tables of a warehouse (or of one database)")
    p.add_argument("warehouse", nargs="?",
                   help="the warehouse directory (not with --warehouse before the command)")
    p.add_argument("database", nargs="?", help="only this database")


def run(args: argparse.Namespace) -> Output:
    from paimon_rs.table import Table
    if "warehouse" in catalog_options(args):
        raise UsageError("tables: -o warehouse=...: the warehouse is the first argument")
    warehouse, database = args.warehouse, args.database
    if getattr(args, "global_warehouse", None) is not None:
        if database is not None:
            raise UsageError(f"tables: the warehouse is --warehouse {args.global_warehouse}; "
                             f"give at most a database (got {warehouse} {database})")
        warehouse, database = args.global_warehouse, warehouse
    if warehouse is None:
        raise UsageError("tables: give the warehouse: tables <warehouse> [db], or --warehouse <warehouse> tables [db]")
    if database is not None:
        require_database(warehouse, database)
    catalog = open_catalog(warehouse, catalog_options(args))
    dbs = [database] if database is not None else catalog.list_databases()
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
