"""Progress of long reads and writes: a callback gets a :class:`Progress` after each step, and
:class:`TqdmProgress` shows it as a tqdm bar (rows, bytes, files).

    from paimon_rs.progress import TqdmProgress

    rb = table.new_read_builder().with_progress(TqdmProgress())
    rb.new_read().to_arrow(rb.new_scan().plan().splits())

    wb = table.new_batch_write_builder().with_progress(TqdmProgress(desc="write"))
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional


@dataclass(frozen=True)
class Progress:
    """Where a read or write stands. Counts are cumulative for the operation.

    ``phase``: ``"read"``, ``"write"`` (rows handed to ``write_*``) or ``"prepare_commit"`` (data
    files written). ``rows``/``bytes``: rows and Arrow bytes read or handed over so far;
    ``files``: data files read (whole splits) or written. ``total_rows``/``total_files``: what
    the whole read covers, when known (a read's ``total_rows`` counts the files' rows, an upper
    bound of what a primary-key merge returns). ``done``: the operation finished."""

    phase: str
    rows: int
    bytes: int
    files: int
    total_rows: Optional[int] = None
    total_files: Optional[int] = None
    done: bool = False


ProgressCallback = Callable[[Progress], Any]


class TqdmProgress:
    """A progress callback that drives a ``tqdm`` bar counting rows, with bytes and files as
    postfix. Needs the ``tqdm`` package (imported at the first event). One instance per
    operation; the bar closes when the operation is done."""

    def __init__(self, desc: Optional[str] = None, **tqdm_kwargs: Any):
        self._desc = desc
        self._kwargs = tqdm_kwargs
        self._bar: Any = None
        self._rows = 0

    def __call__(self, p: Progress) -> None:
        if self._bar is None:
            try:
                from tqdm.auto import tqdm
            except ImportError as e:
                raise ImportError("TqdmProgress needs the 'tqdm' package: pip install tqdm") from e
            self._bar = tqdm(total=p.total_rows, desc=self._desc or p.phase, unit="rows",
                             unit_scale=True, **self._kwargs)
        if p.total_rows is not None and self._bar.total != p.total_rows:
            self._bar.total = p.total_rows
        self._bar.update(max(0, p.rows - self._rows))
        self._rows = p.rows
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
