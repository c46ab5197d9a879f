"""``paimon-rs schema <table>``: the table's current schema (columns with field ids and types,
keys, options, comment)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from paimon_rs.cli.base import Column, Output, Record, Rows, add_command, add_table_argument, open_table
from paimon_rs.data_types import type_dict


def register(subparsers: Any) -> None:
    p = add_command(subparsers, "schema", run, help="show a table's schema")
    add_table_argument(p)


def _type(t: Any) -> str:
    """The stored form of a field's type: its string, or the JSON of a nested type."""
    stored = type_dict(t)
    return stored if isinstance(stored, str) else json.dumps(stored)


def run(args: argparse.Namespace) -> Output:
    t = open_table(args)
    s = t.table_schema
    info = Record("table", {
        "table": str(t.identifier), "path": t.table_path, "schema_id": s.id,
        "primary_keys": s.primary_keys, "partition_keys": s.partition_keys,
        "comment": s.comment, "time_millis": s.time_millis,
    }, kinds={"time_millis": "millis"})
    fields = Rows("fields", [Column("id", "int"), Column("name"), Column("type"), Column("description")],
                  [{"id": f.id, "name": f.name, "type": _type(f.type), "description": f.description}
                   for f in s.fields], title="columns")
    options = Record("options", dict(sorted(s.options.items())), title="options")
    return [info, fields, options]
