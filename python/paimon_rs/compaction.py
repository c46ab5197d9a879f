"""The universal compaction picker of Paimon, for simulation: which sorted runs of a bucket a
writer would merge, and into which level (paimon-behaviour.md §3)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

from paimon_rs import _core


@dataclass(frozen=True)
class CompactUnit:
    """A picked compaction: the first ``run_count`` runs (newest first), merged into
    ``output_level``; ``reason`` says which rule fired (``size-amplification``, ``size-ratio``,
    ``run-count``, ``early-full``, ``force-up-level-0``)."""

    run_count: int
    output_level: int
    reason: str


class UniversalCompaction:
    """Paimon's ``UniversalCompaction`` with a table's options (``num-sorted-run.compaction-trigger``,
    ``compaction.max-size-amplification-percent``, ``compaction.size-ratio``, off-peak hours,
    early full compaction, forced level-0 compaction for lookup tables).

    ``legacy_size_ratio_scan=True`` reproduces Paimon 1.0 and older, whose size-ratio scan stops at
    the first failing run (Paimon master keeps absorbing level-0/1 runs once triggered)."""

    def __init__(self, options: Optional[Dict[str, str]] = None, legacy_size_ratio_scan: bool = False):
        self._core = _core.UniversalCompaction(
            {str(k): str(v) for k, v in (options or {}).items()}, legacy_size_ratio_scan
        )

    def pick(self, num_levels: int, runs: Sequence[Tuple[int, int]], now_millis: Optional[int] = None,
             local_hour: Optional[int] = None) -> Optional[CompactUnit]:
        """Pick for ``runs`` = ``[(level, size_bytes), ...]`` listed newest first (level-0 files by
        descending max sequence number, then levels 1, 2, ...). The clock defaults to now; the
        picker remembers its last full compaction, as a writer's does."""
        got = self._core.pick(num_levels, [(int(lv), int(sz)) for lv, sz in runs], now_millis, local_hour)
        return None if got is None else CompactUnit(*got)


@dataclass(frozen=True)
class SortedRun:
    """A sorted run of a bucket: a level-0 file or all files of a level ≥ 1 (append buckets: all
    files at one level). ``bytes`` and ``rows`` are the files' totals."""

    level: int
    files: int
    bytes: int
    rows: int

    def __str__(self) -> str:
        return f"L{self.level}: {self.files} file(s), {_size(self.bytes)}, {self.rows} rows"


@dataclass(frozen=True)
class CompactionPick:
    """One compaction a bucket would run now: ``files`` input files (``bytes``, ``rows``) into
    ``output_level``, because of ``reason`` (``size-amplification``, ``size-ratio``,
    ``run-count``, ``early-full``, ``force-up-level-0``, ``deleted-rows`` for primary-key
    buckets, ``small-files`` for append buckets, ``deletion-vectors`` for a bucket-unaware
    deletion-vector table's files picked by their vectors: grouped by index file and compacted
    whatever their size, as ``compact()`` does)."""

    files: int
    bytes: int
    rows: int
    output_level: int
    reason: str

    def __str__(self) -> str:
        return (f"{self.reason}: {self.files} file(s), {_size(self.bytes)}, {self.rows} rows "
                f"-> level {self.output_level}")


@dataclass(frozen=True)
class BucketCompactionPlan:
    """What ``Table.compact()`` would do in one (partition, bucket) of the latest snapshot:
    its sorted runs (newest first), the picks (empty: nothing to compact) and why."""

    partition: str
    bucket: int
    primary_key: bool
    runs: List[SortedRun]
    picks: List[CompactionPick]
    explanation: str

    def __str__(self) -> str:
        where = f"{self.partition}bucket-{self.bucket}"
        lines = [f"{where}: {len(self.runs)} run(s); {self.explanation}"]
        lines += [f"  run {r}" for r in self.runs]
        lines += [f"  pick {p}" for p in self.picks]
        return "\n".join(lines)


@dataclass(frozen=True)
class CompactionSummary:
    """What a compaction snapshot changed: files, bytes and rows removed (``*_before``) and
    written (``*_after``)."""

    snapshot_id: Optional[int]
    files_before: int = 0
    files_after: int = 0
    bytes_before: int = 0
    bytes_after: int = 0
    rows_before: int = 0
    rows_after: int = 0
    seconds: float = 0.0

    def __str__(self) -> str:
        if self.snapshot_id is None:
            return f"nothing to compact ({self.seconds:.2f} s)"
        return (f"snapshot {self.snapshot_id}: files {self.files_before} -> {self.files_after}, "
                f"bytes {_size(self.bytes_before)} -> {_size(self.bytes_after)}, "
                f"rows {self.rows_before} -> {self.rows_after}, {self.seconds:.2f} s")


def _size(n: int) -> str:
    v = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if v < 1024 or unit == "GiB":
            return f"{v:.0f} {unit}" if unit == "B" else f"{v:.1f} {unit}"
        v /= 1024
    return f"{n} B"


def compaction_plan(core_table: Any) -> List[BucketCompactionPlan]:
    """The plan of a ``_core.Table`` (``Table.compaction_plan()`` calls this)."""
    out = []
    for part, bucket, pk, runs, picks, why in _core.compaction_plan(core_table):
        out.append(BucketCompactionPlan(
            part, bucket, pk, [SortedRun(*r) for r in runs], [CompactionPick(*p) for p in picks], why))
    return out


__all__: List[str] = ["BucketCompactionPlan", "CompactUnit", "CompactionPick", "CompactionSummary",
                      "SortedRun", "UniversalCompaction", "compaction_plan"]
