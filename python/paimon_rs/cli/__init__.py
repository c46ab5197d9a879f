"""The ``paimon-rs`` / ``python -m paimon_rs`` command line: one sub-command per module.

To add a command, write a module under ``paimon_rs/cli/`` with a ``register(subparsers)``
function (see :mod:`paimon_rs.cli.base` for ``add_command``, ``Rows``, ``Record``, ...) and add
its name to :data:`COMMAND_MODULES`. Exit codes: 0 done, 2 usage error, 1 error (the message on
stderr), 141 (128 + SIGPIPE, what a shell reports for a program SIGPIPE ended) when the reader of
stdout went away (``paimon-rs read ... | head``), silently.
"""

from __future__ import annotations

import argparse
import importlib
import os
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
    "paimon_rs.cli.read",
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


#: The exit code when stdout's reader went away (128 + SIGPIPE, as a shell reports ``cat`` ended
#: by SIGPIPE in ``cat big | head``; ``set -o pipefail`` scripts see the same as for any program).
EXIT_BROKEN_PIPE = 141


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the CLI on ``argv`` (default ``sys.argv[1:]``); returns the exit code."""
    try:
        code = _run(argv)
        sys.stdout.flush()  # here, not at exit, so that EPIPE is handled below
        return code
    except BrokenPipeError:
        _stdout_to_devnull()
        return EXIT_BROKEN_PIPE


def _run(argv: Optional[Sequence[str]]) -> int:
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
    except BrokenPipeError:
        raise
    except (PaimonRsError, OSError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1


def _stdout_to_devnull() -> None:
    """After EPIPE on stdout: point its descriptor at /dev/null, so that the interpreter's flush
    at exit does not fail again and print "Exception ignored ... BrokenPipeError" (the Python
    docs' recipe, "Note on SIGPIPE" in the ``signal`` module's page)."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # not a real file (a test's capture): nothing to flush at exit
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, fd)
    finally:
        os.close(devnull)


def console_main() -> None:
    """Entry point of the ``paimon-rs`` console script."""
    sys.exit(main())


__all__ = ["COMMAND_MODULES", "EXIT_BROKEN_PIPE", "build_parser", "console_main", "main"]
