"""The pieces every CLI command uses: registering a sub-command, naming a table, and results
that render as a rich table in a terminal (when ``rich`` is installed), as plain aligned text
otherwise, or as JSON with ``--json``.

A command module (listed in :data:`paimon_rs.cli.COMMAND_MODULES`) has one function::

    def register(subparsers):
        p = add_command(subparsers, "snapshots", run, help="list the table's snapshots")
        add_table_argument(p)

    def run(args) -> Output:
        table = open_table(args)
        return Rows("snapshots", [Column("id", "int"), ...], [{"id": 1, ...}, ...])

``run`` returns what to show (:class:`Rows`, :class:`Record`, or a list of them); the framework
prints it. Raise :class:`UsageError` for a bad command line (exit code 2); any other
``PaimonRsError`` or ``OSError`` exits with 1 and its message on stderr.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import difflib
import io
import json
import os
import sys
from dataclasses import dataclass, field
from typing import IO, Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

from paimon_rs.exceptions import (
    CatalogError,
    DatabaseNotFoundError,
    InvalidArgumentError,
    TableNotFoundError,
)
from paimon_rs.identifier import Identifier


class UsageError(InvalidArgumentError):
    """A bad command line (exit code 2)."""


@dataclass(frozen=True)
class Column:
    """A column of a :class:`Rows` result. ``kind`` says how a terminal shows its values
    (``--json`` always prints them raw): ``"text"``, ``"int"`` (right-aligned), ``"bytes"``
    (a size: ``1.5 MiB``), ``"millis"`` (epoch millis as local date and time), ``"bool"``."""

    name: str
    kind: str = "text"
    title: Optional[str] = None

    @property
    def header(self) -> str:
        return self.title or self.name


@dataclass
class Rows:
    """A table of results: ``rows`` are dicts keyed by the columns' names (``--json`` prints
    them as a list of objects, with any keys no column shows after the columns' ones). ``name``
    is the key when a command prints several results."""

    name: str
    columns: List[Column]
    rows: List[Dict[str, Any]]
    title: Optional[str] = None

    def to_json(self) -> Any:
        names = [c.name for c in self.columns]
        return [{**{n: r.get(n) for n in names}, **{k: v for k, v in r.items() if k not in names}}
                for r in self.rows]


@dataclass
class Record:
    """One object: ``fields`` shown as ``key  value`` lines (``--json``: an object). ``kinds``
    gives a field a :class:`Column` kind (``bytes``, ``millis``, ...)."""

    name: str
    fields: Dict[str, Any]
    title: Optional[str] = None
    kinds: Dict[str, str] = field(default_factory=dict)
    hide_none: bool = False
    """A terminal leaves out fields whose value is None (``--json`` keeps them as null)."""

    def to_json(self) -> Any:
        return dict(self.fields)

    def shown(self) -> Dict[str, Any]:
        return {k: v for k, v in self.fields.items() if not (self.hide_none and v is None)}


@dataclass
class Text:
    """Free text for a terminal (printed as is, plain or rich) with ``data`` for ``--json``."""

    name: str
    text: str
    data: Any = None

    def to_json(self) -> Any:
        return self.data


@dataclass
class Stream:
    """Output written while it is produced (``read``'s rows, batch by batch), in the format
    ``write`` was built for (it decides JSON or text itself): ``write(stream)`` writes it all."""

    name: str
    write: Callable[[IO[str]], None]


Result = Union[Rows, Record, Text]
Output = Union[Result, List[Result], Stream, None]

RunFn = Callable[[argparse.Namespace], Output]


def add_command(subparsers: Any, name: str, run: RunFn, help: str,
                description: Optional[str] = None) -> argparse.ArgumentParser:
    """Add sub-command ``name`` whose ``run(args)`` computes the output; the parser gets the
    common options (``--json``, ``--plain``). Returns the parser for the command's own
    arguments."""
    p: argparse.ArgumentParser = subparsers.add_parser(
        name, help=help, description=description or help, parents=[_common_options()])
    p.set_defaults(run=run, command=name)
    return p


def _common_options() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(add_help=False)
    g = p.add_argument_group("output")
    g.add_argument("--json", action="store_true", help="print the result as JSON")
    g.add_argument("--plain", action="store_true",
                   help="plain aligned text even in a terminal with rich installed")
    add_option_argument(p, "options_kv")
    return p


OPTION_HELP = ("a catalog option key=value (repeatable), with the Python API's names: the object "
               "store's (s3.endpoint, s3.access-key, gs.endpoint, azure.account-name, ...; "
               "docs/object-stores.md); without them the store is configured from the environment")


def add_option_argument(p: argparse.ArgumentParser, dest: str) -> None:
    """``-o/--option key=value`` (repeatable) into ``args.<dest>`` (see :func:`catalog_options`)."""
    p.add_argument("-o", "--option", dest=dest, action="append", default=None, metavar="KEY=VALUE",
                   help=OPTION_HELP)


def catalog_options(args: argparse.Namespace) -> Dict[str, str]:
    """The ``-o key=value`` pairs given before the command and after it, as catalog options. A
    pair without ``=`` or without a key, or a key given twice with different values, is a usage
    error."""
    out: Dict[str, str] = {}
    for pair in (getattr(args, "global_options_kv", None) or []) + (getattr(args, "options_kv", None) or []):
        key, sep, value = pair.partition("=")
        key = key.strip()
        if not sep or not key:
            raise UsageError(f"-o '{pair}': expected key=value (e.g. -o s3.endpoint=http://127.0.0.1:9000)")
        if key in out and out[key] != value:
            raise UsageError(f"-o {key}: given twice ('{out[key]}' and '{value}')")
        out[key] = value
    return out


def split_table_path(path: str, command: str) -> Tuple[str, str, str]:
    """``<warehouse>/<db>.db/<table>`` as (warehouse, db, table). An object store URI is split on
    ``/`` (normpath would turn ``s3://b/wh`` into the local path ``s3:/b/wh``)."""
    if "://" in path and not path.startswith("file://"):
        p = path.rstrip("/")
        db_dir, _, name = p.rpartition("/")
        warehouse, _, db = db_dir.rpartition("/")
    else:
        p = os.path.normpath(path[len("file://"):] if path.startswith("file://") else path)
        db_dir, name = os.path.split(p)
        warehouse, db = os.path.split(db_dir)
    if not db.endswith(".db") or not name or not warehouse:
        raise UsageError(f"{command}: {path} is not a table in a warehouse (<warehouse>/<db>.db/<table>)")
    return warehouse, db[:-3], name


def add_table_argument(p: argparse.ArgumentParser) -> None:
    """The table a command works on: ``<warehouse>/<db>.db/<table>`` or ``<warehouse>
    <db>.<table>`` (``args.table``, a list of one or two strings; :func:`open_table`)."""
    p.add_argument("table", nargs="+", metavar="TABLE",
                   help="a table directory <warehouse>/<db>.db/<table>, or <warehouse> <db>.<table>")


def open_table(args: argparse.Namespace) -> Any:
    """The ``paimon_rs.Table`` named by ``args.table`` (see :func:`add_table_argument`), through
    a catalog with the ``-o`` options, in the ``--warehouse`` given before the command if any."""
    return open_table_from(args.table, args.command, catalog_options(args),
                           warehouse=getattr(args, "global_warehouse", None))


def is_local(warehouse: str) -> bool:
    """Whether ``warehouse`` is a local path (or ``file://`` URI), not an object store URI."""
    return "://" not in warehouse or warehouse.startswith("file://")


def _local_path(path: str) -> str:
    return path[len("file://"):] if path.startswith("file://") else path


def _did_you_mean(name: str, candidates: Sequence[str]) -> str:
    close = difflib.get_close_matches(name, list(candidates), n=1)
    return f" (did you mean '{close[0]}'?)" if close else ""


def _subdirs(path: str, suffix: str = "", containing: str = "") -> List[str]:
    """The names of ``path``'s sub-directories ending in ``suffix`` (stripped) that hold
    ``containing``."""
    try:
        names = os.listdir(path)
    except OSError:
        return []
    return sorted(n[:len(n) - len(suffix)] for n in names
                  if n.endswith(suffix) and os.path.isdir(os.path.join(path, n, containing)))


def require_warehouse(warehouse: str, what: str = "") -> None:
    """Refuse a local ``warehouse`` that is not an existing directory (the catalog would create
    it): ``CatalogError`` ``[<what>: ]warehouse '<warehouse>' does not exist``. An object store
    warehouse is not checked (it has no directories)."""
    if not is_local(warehouse):
        return
    path = _local_path(warehouse)
    if not os.path.isdir(path):
        state = "is not a directory" if os.path.exists(path) else "does not exist"
        msg = f"warehouse '{warehouse}' {state}"
        raise CatalogError(f"{what}: {msg}" if what else msg)


def require_database(warehouse: str, database: str, what: str = "") -> None:
    """Refuse a database the local ``warehouse`` does not have (``DatabaseNotFoundError`` naming
    it, with the closest existing name if one is close); ``warehouse`` must exist
    (:func:`require_warehouse`). Object store warehouses are not checked."""
    require_warehouse(warehouse, what)
    if not is_local(warehouse):
        return
    root = _local_path(warehouse)
    if not os.path.isdir(os.path.join(root, database + ".db")):
        msg = (f"database '{database}' does not exist in warehouse '{warehouse}'"
               f"{_did_you_mean(database, _subdirs(root, '.db'))}")
        raise DatabaseNotFoundError(f"{what}: {msg}" if what else msg)


def require_table(warehouse: str, identifier: str) -> None:
    """Refuse a table (``db.t``, or ``db.t$branch_b``: the branch is the engine's to check) the
    local ``warehouse`` does not have, naming what is missing: the warehouse, the database
    (closest existing name suggested) or the table (likewise). Object store warehouses are not
    checked (the catalog reports a missing table itself)."""
    try:
        ident = Identifier.from_string(identifier)
    except InvalidArgumentError as e:
        raise UsageError(str(e)) from e
    db, name = ident.get_database_name(), ident.get_table_name()
    what = f"table '{db}.{name}'"
    require_database(warehouse, db, what)
    if not is_local(warehouse):
        return
    db_dir = os.path.join(_local_path(warehouse), db + ".db")
    if not os.path.isdir(os.path.join(db_dir, name, "schema")):
        raise TableNotFoundError(f"{what} does not exist in warehouse '{warehouse}'"
                                 f"{_did_you_mean(name, _subdirs(db_dir, containing='schema'))}")


def open_catalog(warehouse: str, options: Optional[Dict[str, str]] = None) -> Any:
    """The filesystem catalog of ``warehouse`` with ``options`` (``-o``). A local warehouse
    must exist (:func:`require_warehouse`): the CLI never creates one."""
    from paimon_rs.catalog import CatalogFactory
    require_warehouse(warehouse)
    return CatalogFactory.create({**(options or {}), "warehouse": warehouse})


def open_table_from(spec: Sequence[str], command: str, options: Optional[Dict[str, str]] = None,
                    warehouse: Optional[str] = None) -> Any:
    """Open ``[path]`` or ``[warehouse, "db.table"]`` (or ``["db.table"]`` with ``warehouse``,
    the ``--warehouse`` given before the command), with catalog ``options`` (``-o``). A local
    table that does not exist is an error naming the missing warehouse, database or table
    (:func:`require_table`); nothing is created."""
    if "warehouse" in (options or {}):
        raise UsageError(f"{command}: -o warehouse=...: the warehouse is the table argument")
    if warehouse is not None:
        if len(spec) != 1 or "/" in spec[0]:
            raise UsageError(f"{command}: with --warehouse, name the table as <db>.<table> "
                             f"(got {' '.join(spec)})")
        spec = [warehouse, spec[0]]
    if len(spec) == 1:
        if is_local(spec[0]):
            wh, db, name = split_table_path(spec[0], command)
            require_table(wh, f"{db}.{name}")
        if not options and "$" not in spec[0].rstrip("/").rsplit("/", 1)[-1]:
            from paimon_rs.table import Table
            # from_path takes a file:// URI for a relative path: give it the path
            return Table.from_path(_local_path(spec[0]) if is_local(spec[0]) else spec[0])
        wh, db, name = split_table_path(spec[0], command)
        return open_catalog(wh, options).get_table(f"{db}.{name}")
    if len(spec) == 2:
        require_table(spec[0], spec[1])
        return open_catalog(spec[0], options).get_table(spec[1])
    raise UsageError(f"{command}: expected <table path> or <warehouse> <db>.<table>")


def parse_partition(arg: str) -> Dict[str, str]:
    """``k=v[,k=v]`` as a partition spec (values as in the partition path)."""
    spec: Dict[str, str] = {}
    for part in arg.split(","):
        k, sep, v = part.partition("=")
        if not sep or not k:
            raise UsageError(f"--partition '{arg}': expected k=v[,k=v]")
        spec[k.strip()] = v
    return spec


# ---- rendering ---------------------------------------------------------------------------------

def render(out: Output, as_json: bool, plain: bool, stream: Optional[IO[str]] = None) -> None:
    """Print a command's output: JSON, a rich table (a terminal with ``rich`` installed and not
    ``plain``) or aligned text."""
    out_stream: IO[str] = stream if stream is not None else sys.stdout
    if isinstance(out, Stream):
        out.write(out_stream)
        return
    results: List[Result] = [] if out is None else (list(out) if isinstance(out, list) else [out])
    if as_json:
        data: Any
        if len(results) == 1:
            data = results[0].to_json()
        else:
            data = {r.name: r.to_json() for r in results}
        json.dump(data, out_stream, indent=2, default=str)
        out_stream.write("\n")
        return
    console = None if plain else _rich_console(out_stream)
    for i, r in enumerate(results):
        if isinstance(r, Text):
            out_stream.write(r.text if r.text.endswith("\n") or not r.text else r.text + "\n")
        elif console is not None:
            _render_rich(console, r)
        else:
            if i:
                out_stream.write("\n")
            out_stream.write(_render_plain(r))


def _rich_console(stream: IO[str]) -> Any:
    if os.environ.get("PAIMON_RS_PLAIN") or not stream.isatty():
        return None
    try:
        from rich.console import Console
    except ImportError:
        return None
    return Console(file=stream)


def _render_rich(console: Any, r: Union[Rows, Record]) -> None:
    from rich.table import Table as RichTable
    if isinstance(r, Rows):
        t = RichTable(title=r.title, title_justify="left")
        for c in r.columns:
            t.add_column(c.header, justify="right" if c.kind in ("int", "bytes") else "left",
                         no_wrap=c.kind != "text", overflow="fold")
        for row in r.rows:
            t.add_row(*(format_value(row.get(c.name), c.kind) for c in r.columns))
        console.print(t)
    else:
        t = RichTable(title=r.title, title_justify="left", show_header=False)
        t.add_column("field", style="bold", no_wrap=True)
        t.add_column("value", overflow="fold")
        for k, v in r.shown().items():
            t.add_row(k, format_value(v, r.kinds.get(k, "text")))
        console.print(t)


class PlainRowsWriter:
    """Rows as :func:`render`'s aligned plain text, written a chunk at a time (``read`` streams a
    table through it): the header and the column widths come with the first rows written (a
    longer value later widens only its own line); :meth:`close` writes the header and
    ``(none)`` if no row came."""

    def __init__(self, columns: Sequence[Column], stream: IO[str]):
        self._columns = list(columns)
        self._stream = stream
        self._widths: Optional[List[int]] = None
        self._right = [c.kind in ("int", "bytes") for c in self._columns]

    def _line(self, vals: List[str]) -> str:
        assert self._widths is not None
        return "  ".join(v.rjust(w) if rt else v.ljust(w)
                         for v, w, rt in zip(vals, self._widths, self._right)).rstrip() + "\n"

    def _header(self, cells: List[List[str]]) -> None:
        self._widths = [max([len(c.header)] + [len(row[i]) for row in cells]) for i, c in enumerate(self._columns)]
        self._stream.write(self._line([c.header for c in self._columns]))
        self._stream.write("  ".join("-" * w for w in self._widths) + "\n")

    def write(self, rows: Sequence[Dict[str, Any]]) -> None:
        """Write ``rows`` (dicts keyed by the columns' names)."""
        if not rows:
            return
        cells = [[format_value(row.get(c.name), c.kind) for c in self._columns] for row in rows]
        if self._widths is None:
            self._header(cells)
        self._stream.write("".join(self._line(row) for row in cells))

    def close(self) -> None:
        """End the table: the header and ``(none)`` if no row was written."""
        if self._widths is None:
            self._header([])
            self._stream.write("(none)\n")


def _render_plain(r: Union[Rows, Record]) -> str:
    lines: List[str] = []
    if r.title:
        lines.append(r.title)
    if isinstance(r, Rows):
        buf = io.StringIO()
        w = PlainRowsWriter(r.columns, buf)
        w.write(r.rows)
        w.close()
        lines.append(buf.getvalue().rstrip("\n"))
    else:
        width = max((len(k) for k in r.shown()), default=0)
        for k, v in r.shown().items():
            lines.append(f"{k.ljust(width)}  {format_value(v, r.kinds.get(k, 'text'))}")
    return "\n".join(lines) + "\n"


def format_value(v: Any, kind: str = "text") -> str:
    """A value as a terminal shows it (see :class:`Column` for the kinds)."""
    if v is None:
        return ""
    if kind == "bytes" and isinstance(v, int):
        return human_size(v)
    if kind == "millis" and isinstance(v, int):
        return _dt.datetime.fromtimestamp(v / 1000).isoformat(sep=" ", timespec="milliseconds")
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (list, tuple)):
        return ", ".join(format_value(x) for x in v)
    if isinstance(v, dict):
        return ", ".join(f"{k}={format_value(x)}" for k, x in v.items())
    return str(v)


def human_size(n: int) -> str:
    """``1536`` -> ``1.5 KiB``."""
    v = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if v < 1024 or unit == "TiB":
            return f"{n} B" if unit == "B" else f"{v:.1f} {unit}"
        v /= 1024
    return f"{n} B"


__all__ = ["Column", "Output", "PlainRowsWriter", "Record", "Result", "Rows", "Stream", "Text", "UsageError",
           "add_command", "add_option_argument", "add_table_argument", "catalog_options", "format_value",
           "human_size", "is_local", "open_catalog", "open_table", "open_table_from", "parse_partition", "render",
           "require_database", "require_table", "require_warehouse", "split_table_path"]
