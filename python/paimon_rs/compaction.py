"""The universal compaction picker of Paimon, for simulation: which sorted runs of a bucket a
writer would merge, and into which level (paimon-behaviour.md §3)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

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


__all__: List[str] = ["CompactUnit", "UniversalCompaction"]
