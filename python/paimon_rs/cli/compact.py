"""``paimon-rs compact <table> [--full] [--partition k=v ...] [--plan] [--quiet]``: compact a
table (one COMPACT snapshot) and print a summary; ``--plan`` prints
:meth:`Table.compaction_plan` instead and commits nothing. With ``--order-strategy
order|zorder|hilbert --order-by a,b``: sort compaction (:meth:`Table.sort_compact`, one
OVERWRITE snapshot), as Java's ``compact --order_strategy ... --order_by ...``."""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from typing import Any, Dict, List, Optional

from paimon_rs.cli.base import (
    Output,
    Text,
    UsageError,
    add_command,
    add_table_argument,
    human_size,
    open_table,
    parse_partition,
)
from paimon_rs.compaction import CompactionSummary
from paimon_rs.progress import Progress, ProgressCallback, TqdmProgress


def register(subparsers: Any) -> None:
    p = add_command(subparsers, "compact", run, help="compact a table (one COMPACT snapshot)")
    add_table_argument(p)
    p.add_argument("--full", action="store_true", help="full compaction")
    p.add_argument("--partition", action="append", default=[], metavar="K=V[,K=V]",
                   help="only this partition (repeatable); values as in the partition path")
    p.add_argument("--plan", action="store_true", help="print the compaction plan, compact nothing")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    p.add_argument("--order-strategy", "--order_strategy", dest="order_strategy",
                   choices=["order", "zorder", "hilbert"],
                   help="sort compaction: rewrite the files in this order (needs --order-by)")
    p.add_argument("--order-by", "--order_by", dest="order_by", metavar="COL[,COL]",
                   help="sort compaction: the order columns, comma separated")


class _StderrProgress:
    """Compaction progress on stderr without tqdm: one line per tenth of the buckets."""

    def __init__(self, desc: str):
        self._desc = desc
        self._shown = -1

    def __call__(self, p: Progress) -> None:
        total = p.total_buckets or 0
        step = 10 * (p.buckets or 0) // total if total else 10
        if step > self._shown:  # the summary follows the done event
            self._shown = step
            print(f"{self._desc}: {p.buckets}/{total} buckets, {p.files} files ({human_size(p.bytes)}, "
                  f"{p.rows} rows) -> {p.files_out} files",
                  file=sys.stderr, flush=True)


def _progress(desc: str) -> ProgressCallback:
    try:
        import tqdm  # type: ignore[import-untyped]  # noqa: F401
    except ImportError:
        return _StderrProgress(desc)
    return TqdmProgress(desc=desc, file=sys.stderr)


def compact(table: Any, full: bool, partitions: Optional[List[Dict[str, str]]],
            progress: bool = True) -> CompactionSummary:
    """Compact ``table`` and summarize the snapshot it committed."""
    from paimon_rs import _core
    start = time.monotonic()
    sid = table.compact(full=full, partitions=partitions,
                        progress=_progress(f"compacting {table.identifier}") if progress else None)
    secs = time.monotonic() - start
    if sid is None:
        return CompactionSummary(None, seconds=secs)
    return CompactionSummary(sid, *_core.compaction_summary(table._core, sid), seconds=secs)


def sort_compact(table: Any, order_strategy: str, order_by: List[str],
                 partitions: Optional[List[Dict[str, str]]]) -> CompactionSummary:
    """Sort-compact ``table`` and summarize the snapshot it committed."""
    from paimon_rs import _core
    start = time.monotonic()
    sid = table.sort_compact(order_strategy, order_by, partitions=partitions)
    secs = time.monotonic() - start
    if sid is None:
        return CompactionSummary(None, seconds=secs)
    return CompactionSummary(sid, *_core.compaction_summary(table._core, sid), seconds=secs)


def run(args: argparse.Namespace) -> Output:
    parts = [parse_partition(a) for a in args.partition] or None
    if (args.order_strategy is None) != (args.order_by is None):
        raise UsageError("--order-strategy and --order-by go together")
    table = open_table(args)
    if args.order_strategy is not None:
        if args.plan or args.full:
            raise UsageError("--order-strategy sorts all files: no --plan or --full with it")
        summary = sort_compact(table, args.order_strategy,
                               [c.strip() for c in args.order_by.split(",") if c.strip()], parts)
        return Text("compaction", str(summary), dataclasses.asdict(summary))
    if args.plan:
        plans = [p for p in table.compaction_plan()
                 if parts is None or any(all(f"{k}={v}/" in p.partition for k, v in s.items()) for s in parts)]
        text = "\n".join(str(p) for p in plans) if plans else "the table has no data files"
        return Text("plan", text, [dataclasses.asdict(p) for p in plans])
    summary = compact(table, args.full, parts, progress=not (args.quiet or args.json))
    return Text("compaction", str(summary), dataclasses.asdict(summary))
