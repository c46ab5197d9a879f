"""Progress of long reads, writes and compactions: a callback gets a :class:`Progress` after each step, and
:class:`TqdmProgress` shows it as a tqdm bar (rows, bytes, files).

    from paimon_rs.progress import TqdmProgress

    rb = table.new_read_builder().with_progress(TqdmProgress())
    rb.new_read().to_arrow(rb.new_scan().plan().splits())

    wb = table.new_batch_write_builder().with_progress(TqdmProgress(desc="write"))

    table.compact(progress=TqdmProgress(desc="compact"))
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional


@dataclass(frozen=True)
class Progress:
    """Where a read or write stands. Counts are cumulative for the operation.

    ``phase``: ``"read"``, ``"write"`` (rows handed to ``write_*``), ``"prepare_commit"`` (data
    files written) or ``"compact"``. ``rows``/``bytes``: rows and Arrow bytes read or handed over
    so far; ``files``: data files read (whole splits) or written. ``total_rows``/``total_files``:
    what the whole read covers, when known (a read's ``total_rows`` counts the files' rows, an
    upper bound of what a primary-key merge returns). ``done``: the operation finished (a
    compaction: committed, or found nothing to do).

    A compaction reports after each (partition, bucket) it finished: ``buckets`` of
    ``total_buckets`` done; ``rows``/``bytes``/``files`` are what the finished buckets removed
    (the files rewritten; ``bytes`` are file sizes) and ``rows_out``/``bytes_out``/``files_out``
    what they wrote. The final counts equal the ``paimon_rs.compaction.CompactionSummary`` of
    the committed snapshot (``*_before`` and ``*_after``)."""

    phase: str
    rows: int
    bytes: int
    files: int
    total_rows: Optional[int] = None
    total_files: Optional[int] = None
    done: bool = False
    buckets: Optional[int] = None
    total_buckets: Optional[int] = None
    rows_out: Optional[int] = None
    bytes_out: Optional[int] = None
    files_out: Optional[int] = None


ProgressCallback = Callable[[Progress], Any]


class TqdmProgress:
    """A progress callback that drives a ``tqdm`` bar counting rows, with bytes and files as
    postfix (a compaction's bar counts buckets, with the rows, bytes and files rewritten as
    postfix). Needs the ``tqdm`` package (imported at the first event). One instance per
    operation; the bar closes when the operation is done."""

    def __init__(self, desc: Optional[str] = None, **tqdm_kwargs: Any):
        self._desc = desc
        self._kwargs = tqdm_kwargs
        self._bar: Any = None
        self._rows = 0

    def __call__(self, p: Progress) -> None:
        by_bucket = p.phase == "compact"
        count, total = (p.buckets or 0, p.total_buckets) if by_bucket else (p.rows, p.total_rows)
        if self._bar is None:
            try:
                from tqdm.auto import tqdm
            except ImportError as e:
                raise ImportError("TqdmProgress needs the 'tqdm' package: pip install tqdm") from e
            self._bar = tqdm(total=total, desc=self._desc or p.phase, unit="buckets" if by_bucket else "rows",
                             unit_scale=not by_bucket, **self._kwargs)
        if total is not None and self._bar.total != total:
            self._bar.total = total
        self._bar.update(max(0, count - self._rows))
        self._rows = count
        if by_bucket:
            self._bar.set_postfix(rows=p.rows, bytes=_human(p.bytes), files=f"{p.files}->{p.files_out or 0}",
                                  refresh=False)
        else:
            files = f"{p.files}/{p.total_files}" if p.total_files is not None else str(p.files)
            self._bar.set_postfix(bytes=_human(p.bytes), files=files, phase=p.phase, refresh=False)
        if p.done:
            self._bar.close()


def _human(n: int) -> str:
    size = float(n)
    for unit in ("B", "kB", "MB", "GB"):
        if size < 1024:
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} TB"


__all__ = ["Progress", "ProgressCallback", "TqdmProgress"]
