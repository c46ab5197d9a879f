"""The ``paimon-rs`` / ``python -m paimon_rs`` command line: one sub-command per module.

To add a command, write a module under ``paimon_rs/cli/`` with a ``register(subparsers)``
function (see :mod:`paimon_rs.cli.base` for ``add_command``, ``Rows``, ``Record``, ...) and add
its name to :data:`COMMAND_MODULES`. Exit codes: 0 done, 2 usage error, 1 error (the message on
stderr).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import List, Optional, Sequence

from paimon_rs.cli.base import UsageError, add_option_argument, render
from paimon_rs.exceptions import PaimonRsError

#: The command modules, in the order ``--help`` lists them. One line each.
COMMAND_MODULES: List[str] = [
    "paimon_rs.cli.tables",
    "paimon_rs.cli.schema",
    "paimon_rs.cli.alter",
    "paimon_rs.cli.snapshots",
    "paimon_rs.cli.partitions",
    "paimon_rs.cli.files",
    "paimon_rs.cli.compact",
    "paimon_rs.cli.orphans",
    "paimon_rs.cli.table_ops",
    "paimon_rs.cli.branches",
]


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every command of :data:`COMMAND_MODULES` registered."""
    from paimon_rs import __version__

    p = argparse.ArgumentParser(prog="paimon-rs", description="Inspect and maintain Paimon tables (paimon_rs)")
    p.add_argument("--version", action="version", version=f"paimon-rs {__version__}")
    p.add_argument("--warehouse", dest="global_warehouse", metavar="WAREHOUSE",
                   help="the warehouse: commands then name a table as <db>.<table>, and `tables` "
                        "takes at most a database")
    add_option_argument(p, "global_options_kv")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the CLI on ``argv`` (default ``sys.argv[1:]``); returns the exit code."""
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as e:
        return 0 if e.code == 0 else 2
    try:
        out = args.run(args)
        render(out, as_json=args.json, plain=args.plain)
        return 0
    except UsageError as e:
        print(f"usage error: {e}", file=sys.stderr)
        return 2
    except (PaimonRsError, OSError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1


def console_main() -> None:
    """Entry point of the ``paimon-rs`` console script."""
    sys.exit(main())


__all__ = ["COMMAND_MODULES", "build_parser", "console_main", "main"]
