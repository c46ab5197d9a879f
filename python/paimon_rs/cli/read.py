"""``paimon-rs read <table> [--select a,b] [--where "..."] [--limit N] [--snapshot ID]
[--format table|csv|json|jsonl]``: a table's rows, streamed batch by batch
(``to_arrow_batch_reader``), so ``paimon-rs read ... | head`` reads only what it shows.

``--where`` is a filter string as ``read_builder.with_filter`` takes it
(:mod:`paimon_rs.filter_parser`). Formats: ``table``
(aligned text, the default; column widths come from the first rows), ``csv`` (a header line,
RFC 4180 quoting, NULL as an empty field), ``json`` (one array of objects, ``--json`` means
this), ``jsonl`` (one object per line). In CSV and JSON, booleans are ``true``/``false``, dates
and timestamps ISO 8601, decimals exact (a JSON string), binary base64 (a JSON string)."""

from __future__ import annotations

import argparse
import base64
import csv
import datetime as _dt
import decimal
import json
from typing import IO, Any, Callable, Dict, Iterator, List, Optional

import pyarrow as pa

from paimon_rs.cli.base import (
    Column,
    Output,
    PlainRowsWriter,
    Stream,
    UsageError,
    add_command,
    add_table_argument,
    open_table,
)
from paimon_rs.exceptions import InvalidArgumentError
from paimon_rs.filter_parser import parse_filter

FORMATS = ("table", "csv", "json", "jsonl")

#: Rows converted and written at a time: a broken pipe (``| head``) is noticed after this many.
CHUNK_ROWS = 1024


def register(subparsers: Any) -> None:
    p = add_command(subparsers, "read", run, help="print a table's rows (streamed)")
    add_table_argument(p)
    p.add_argument("--select", metavar="COL[,COL...]", help="only these columns, in this order")
    p.add_argument("--where", metavar="FILTER",
                   help="only rows matching a filter string, as read_builder.with_filter takes it "
                        "(e.g. \"id >= 10 AND v LIKE 'a%%'\"; strings in single quotes)")
    p.add_argument("--limit", type=int, metavar="N", help="at most N rows")
    p.add_argument("--snapshot", type=int, metavar="ID", help="as of this snapshot (default: latest)")
    p.add_argument("--format", choices=FORMATS, default=None,
                   help="table (aligned text; the default), csv, json (an array; as --json) or jsonl")


def _format(args: argparse.Namespace) -> str:
    if args.json and args.format not in (None, "json"):
        raise UsageError(f"read: --json and --format {args.format} disagree (--json is --format json)")
    return "json" if args.json else (args.format or "table")


def _projection(select: Optional[str], schema: pa.Schema) -> Optional[List[str]]:
    if select is None:
        return None
    cols = [c.strip() for c in select.split(",")]
    if not all(cols):
        raise UsageError(f"--select '{select}': expected COL[,COL...] (an empty column name)")
    unknown = [c for c in cols if schema.get_field_index(c) < 0]
    if unknown:
        raise UsageError(f"--select: no column {', '.join(repr(c) for c in unknown)} in the table "
                         f"(columns: {', '.join(schema.names)})")
    dup = sorted({c for c in cols if cols.count(c) > 1})
    if dup:
        raise UsageError(f"--select: column {', '.join(repr(c) for c in dup)} given twice")
    return cols


def run(args: argparse.Namespace) -> Output:
    fmt = _format(args)
    if args.limit is not None and args.limit < 0:
        raise UsageError("read: --limit must be >= 0")
    table = open_table(args)
    if args.snapshot is not None:
        table = table.copy({"scan.snapshot-id": str(args.snapshot)})
    schema = table.arrow_schema
    rb = table.new_read_builder()
    projection = _projection(args.select, schema)
    if projection is not None:
        rb = rb.with_projection(projection)
    if args.where is not None:
        try:
            rb = rb.with_filter(parse_filter(args.where, schema, where="--where"))
        except InvalidArgumentError as e:
            raise UsageError(str(e)) from None
    if args.limit is not None:
        rb = rb.with_limit(args.limit)
    read = rb.new_read()
    splits = rb.new_scan().plan().splits()  # planning errors (a missing snapshot) before any output

    def write(out: IO[str]) -> None:
        reader = read.to_arrow_batch_reader(splits)
        WRITERS[fmt](reader.schema, _chunks(reader), out)
    return Stream("rows", write)


def _chunks(reader: pa.RecordBatchReader) -> Iterator[List[Dict[str, Any]]]:
    """The reader's rows as lists of dicts, at most :data:`CHUNK_ROWS` at a time."""
    for batch in reader:
        for start in range(0, batch.num_rows, CHUNK_ROWS):
            yield batch.slice(start, CHUNK_ROWS).to_pylist()


def _kind(t: pa.DataType) -> str:
    if pa.types.is_boolean(t):
        return "bool"
    if pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t):
        return "int"  # right-aligned
    return "text"


def _write_table(schema: pa.Schema, chunks: Iterator[List[Dict[str, Any]]], out: IO[str]) -> None:
    w = PlainRowsWriter([Column(f.name, _kind(f.type)) for f in schema], out)
    for rows in chunks:
        w.write(rows)
        out.flush()
    w.close()


def _json_default(v: Any) -> Any:
    if isinstance(v, (_dt.datetime, _dt.date, _dt.time)):
        return v.isoformat()
    if isinstance(v, decimal.Decimal):
        return str(v)
    if isinstance(v, (bytes, bytearray)):
        return base64.b64encode(v).decode("ascii")
    if isinstance(v, _dt.timedelta):
        return v.total_seconds()
    raise TypeError(f"cannot write {type(v).__name__} as JSON: {v!r}")


def _json_row(row: Dict[str, Any]) -> str:
    return json.dumps(row, default=_json_default, ensure_ascii=False)


def _write_json(schema: pa.Schema, chunks: Iterator[List[Dict[str, Any]]], out: IO[str]) -> None:
    first = True
    for rows in chunks:
        if not rows:
            continue
        out.write(("[\n" if first else ",\n") + ",\n".join(_json_row(r) for r in rows))
        first = False
        out.flush()
    out.write("[]\n" if first else "\n]\n")


def _write_jsonl(schema: pa.Schema, chunks: Iterator[List[Dict[str, Any]]], out: IO[str]) -> None:
    for rows in chunks:
        out.write("".join(_json_row(r) + "\n" for r in rows))
        out.flush()


def _csv_value(v: Any) -> Any:
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (_dt.datetime, _dt.date, _dt.time)):
        return v.isoformat()
    if isinstance(v, (bytes, bytearray)):
        return base64.b64encode(v).decode("ascii")
    if isinstance(v, (list, dict, tuple)):
        return json.dumps(v, default=_json_default, ensure_ascii=False)
    return v


def _write_csv(schema: pa.Schema, chunks: Iterator[List[Dict[str, Any]]], out: IO[str]) -> None:
    w = csv.writer(out, lineterminator="\n")
    w.writerow(schema.names)
    for rows in chunks:
        w.writerows([_csv_value(r[n]) for n in schema.names] for r in rows)
        out.flush()


WRITERS: Dict[str, Callable[[pa.Schema, Iterator[List[Dict[str, Any]]], IO[str]], None]] = {
    "table": _write_table, "csv": _write_csv, "json": _write_json, "jsonl": _write_jsonl}
