"""``paimon-rs alter <table> [--set K=V] [--add NAME TYPE] [--rename OLD NEW] ...``: ALTER TABLE
through ``catalog.alter_table`` (one new schema with every change), then the new schema.

The changes apply in this order, each option in the order given: ``--set``, ``--unset``,
``--rename``, ``--drop``, ``--add``, ``--type``, ``--not-null`` / ``--nullable``,
``--column-comment``, ``--move``, ``--comment``. Types are Paimon type strings (``BIGINT``,
``DECIMAL(10, 2)``, ``ARRAY<INT>`` is not parsed: use the Python API for nested types)."""

from __future__ import annotations

import argparse
from typing import Any, List

from paimon_rs.cli import schema as schema_cmd
from paimon_rs.cli.base import (
    Output,
    UsageError,
    add_command,
    add_table_argument,
    catalog_options,
    open_catalog,
    open_table,
    split_table_path,
)
from paimon_rs.schema_change import Move, SchemaChange


def register(subparsers: Any) -> None:
    p = add_command(subparsers, "alter", run, help="alter a table's schema (columns, options, comment)")
    add_table_argument(p)
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="set a table option")
    p.add_argument("--unset", action="append", default=[], metavar="KEY", help="remove a table option")
    p.add_argument("--rename", action="append", nargs=2, default=[], metavar=("OLD", "NEW"),
                   help="rename a column")
    p.add_argument("--drop", action="append", default=[], metavar="NAME", help="drop a column")
    p.add_argument("--add", action="append", nargs=2, default=[], metavar=("NAME", "TYPE"),
                   help="add a nullable column of a Paimon type (last, or see --move)")
    p.add_argument("--type", action="append", nargs=2, default=[], metavar=("NAME", "TYPE"),
                   help="change a column's type (Paimon's allowed casts), keeping its nullability")
    p.add_argument("--not-null", action="append", default=[], metavar="NAME", help="make a column NOT NULL")
    p.add_argument("--nullable", action="append", default=[], metavar="NAME", help="make a column nullable")
    p.add_argument("--column-comment", action="append", nargs=2, default=[], metavar=("NAME", "TEXT"),
                   help="set a column's comment")
    p.add_argument("--move", action="append", nargs=2, default=[], metavar=("NAME", "WHERE"),
                   help="move a column: first, last, after:REF or before:REF")
    p.add_argument("--comment", metavar="TEXT", help="set the table's comment")


def _move(name: str, where: str) -> Move:
    kind, _, ref = where.partition(":")
    kind = kind.lower()
    if kind == "first" and not ref:
        return Move.first(name)
    if kind == "last" and not ref:
        return Move.last(name)
    if kind == "after" and ref:
        return Move.after(name, ref)
    if kind == "before" and ref:
        return Move.before(name, ref)
    raise UsageError(f"--move {name} {where}: WHERE is first, last, after:REF or before:REF")


def changes_of(args: argparse.Namespace) -> List[SchemaChange]:
    """The schema changes the options ask for, in the documented order."""
    out: List[SchemaChange] = []
    for kv in args.set:
        k, sep, v = kv.partition("=")
        if not sep or not k:
            raise UsageError(f"--set '{kv}': expected KEY=VALUE")
        out.append(SchemaChange.set_option(k.strip(), v))
    out += [SchemaChange.remove_option(k) for k in args.unset]
    out += [SchemaChange.rename_column(a, b) for a, b in args.rename]
    out += [SchemaChange.drop_column(n) for n in args.drop]
    out += [SchemaChange.add_column(n, t) for n, t in args.add]
    out += [SchemaChange.update_column_type(n, t, keep_nullability=True) for n, t in args.type]
    out += [SchemaChange.update_column_nullability(n, False) for n in args.not_null]
    out += [SchemaChange.update_column_nullability(n, True) for n in args.nullable]
    out += [SchemaChange.update_column_comment(n, c) for n, c in args.column_comment]
    out += [SchemaChange.update_column_position(_move(n, w)) for n, w in args.move]
    if args.comment is not None:
        out.append(SchemaChange.update_comment(args.comment))
    return out


def run(args: argparse.Namespace) -> Output:
    changes = changes_of(args)
    if not changes:
        raise UsageError("alter: give at least one change (--set, --add, --rename, ...; see --help)")
    table = open_table(args)
    # the catalog that owns the table
    path = table.table_path.rstrip("/")
    warehouse, db, name = split_table_path(path, "alter")
    open_catalog(warehouse, catalog_options(args)).alter_table(f"{db}.{name}", changes)
    return schema_cmd.run(argparse.Namespace(**{**vars(args), "table": [path], "command": "schema"}))
