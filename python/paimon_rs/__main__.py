"""``python -m paimon_rs compact <table> [--full] [--partition k=v ...] [--plan]``: compact a
table (a table directory ``<warehouse>/<db>.db/<table>``, or ``<warehouse> <db>.<table>``) and
print a summary; ``--plan`` prints :meth:`Table.compaction_plan` instead. Exit codes: 0 done,
2 usage error, 1 error (the message on stderr)."""

from __future__ import annotations

import argparse
import sys
import threading
import time
from typing import Any, Dict, List, Optional, Sequence

from paimon_rs.compaction import CompactionSummary
from paimon_rs.exceptions import InvalidArgumentError, PaimonRsError


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m paimon_rs", description="paimon_rs maintenance")
    sub = p.add_subparsers(dest="command", required=True)
    c = sub.add_parser("compact", help="compact a table (one COMPACT snapshot)")
    c.add_argument("table", nargs="+",
                   help="a table directory <warehouse>/<db>.db/<table>, or <warehouse> <db>.<table>")
    c.add_argument("--full", action="store_true", help="full compaction")
    c.add_argument("--partition", action="append", default=[], metavar="K=V[,K=V]",
                   help="only this partition (repeatable); values as in the partition path")
    c.add_argument("--plan", action="store_true", help="print the compaction plan, compact nothing")
    c.add_argument("--quiet", action="store_true", help="no progress bar")
    return p


def _partition(arg: str) -> Dict[str, str]:
    spec: Dict[str, str] = {}
    for part in arg.split(","):
        k, sep, v = part.partition("=")
        if not sep or not k:
            raise InvalidArgumentError(f"--partition '{arg}': expected k=v[,k=v]")
        spec[k.strip()] = v
    return spec


def _open(args: Sequence[str]) -> Any:
    from paimon_rs.table import Table
    if len(args) == 1:
        return Table.from_path(args[0])
    if len(args) == 2:
        from paimon_rs.catalog import CatalogFactory
        return CatalogFactory.create({"warehouse": args[0]}).get_table(args[1])
    raise InvalidArgumentError("compact: expected <table path> or <warehouse> <db>.<table>")


class _Spinner:
    """A progress bar while the compaction runs (tqdm where installed, a plain line otherwise);
    the engine reports no intermediate progress, so it shows elapsed time."""

    def __init__(self, enabled: bool, desc: str):
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self._bar: Any = None
        if not enabled:
            return
        try:
            from tqdm import tqdm  # type: ignore[import-untyped]
            self._bar = tqdm(total=None, desc=desc, unit="s", file=sys.stderr)
        except ImportError:
            print(f"{desc} ...", file=sys.stderr, flush=True)
            return
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.5):
            self._bar.update(0)
            self._bar.refresh()

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self._bar is not None:
            self._bar.close()


def compact(table: Any, full: bool, partitions: Optional[List[Dict[str, str]]],
            progress: bool = True) -> CompactionSummary:
    """Compact ``table`` and summarize the snapshot it committed."""
    from paimon_rs import _core
    start = time.monotonic()
    bar = _Spinner(progress, f"compacting {table.identifier}")
    try:
        sid = table.compact(full=full, partitions=partitions)
    finally:
        bar.close()
    secs = time.monotonic() - start
    if sid is None:
        return CompactionSummary(None, seconds=secs)
    return CompactionSummary(sid, *_core.compaction_summary(table._core, sid), seconds=secs)


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the CLI; returns the exit code."""
    try:
        args = _parser().parse_args(argv)
    except SystemExit as e:
        return 0 if e.code == 0 else 2
    try:
        parts = [_partition(a) for a in args.partition] or None
        if len(args.table) > 2:
            raise InvalidArgumentError("compact: expected <table path> or <warehouse> <db>.<table>")
    except InvalidArgumentError as e:
        print(f"usage error: {e}", file=sys.stderr)
        return 2
    try:
        table = _open(args.table)
        if args.plan:
            plans = table.compaction_plan()
            if not plans:
                print("the table has no data files")
            for p in plans:
                if parts is None or any(all(f"{k}={v}/" in p.partition for k, v in s.items())
                                        for s in parts):
                    print(p)
            return 0
        summary = compact(table, args.full, parts, progress=not args.quiet)
        print(summary)
        return 0
    except (PaimonRsError, OSError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
