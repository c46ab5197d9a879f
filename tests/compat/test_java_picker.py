"""Our universal compaction picker against Java Paimon's own ``UniversalCompaction`` on generated
run shapes (issue #11: "its decisions equal Java's"). The 1.0 jar predates Paimon master's
level-1 absorption (paimon-behaviour.md §3.2), so it is compared with the legacy scan; master's
rule is pinned by the Rust unit tests."""

from __future__ import annotations

import os
import random

import pytest

from paimon_rs.compaction import UniversalCompaction

pytestmark = pytest.mark.java

SHAPES = int(os.environ.get("PAIMON_RS_PICKER_SHAPES", "1500"))


def _shape(rng: random.Random, num_levels: int):
    runs = [(0, rng.choice([1, 2, 5, rng.randint(1, 200)])) for _ in range(rng.randint(0, 9))]
    for level in range(1, num_levels):
        if rng.random() < 0.5:
            runs.append((level, rng.choice([rng.randint(1, 300), rng.randint(100, 10_000)])))
    return runs


def test_decisions_equal_java_1_0_on_generated_shapes(java):
    rng = random.Random(20261123)
    mismatches, picked = [], 0
    for _ in range(SHAPES):
        num_levels = rng.randint(2, 7)
        runs = _shape(rng, num_levels)
        if not runs:
            continue
        trigger = rng.randint(1, 7)
        amp = rng.choice([1, 50, 100, 200, 400])
        ratio = rng.choice([0, 1, 5, 20])
        ours = UniversalCompaction({
            "num-sorted-run.compaction-trigger": str(trigger),
            "compaction.max-size-amplification-percent": str(amp),
            "compaction.size-ratio": str(ratio),
        }, legacy_size_ratio_scan=True).pick(num_levels, runs)
        theirs = java.call("universal_pick", runs=[list(r) for r in runs], num_levels=num_levels,
                           max_size_amp=amp, size_ratio=ratio, num_run_compaction_trigger=trigger)
        got = None if ours is None else (ours.run_count, ours.output_level)
        want = None if theirs is None else (len(theirs["runs"]), theirs["output_level"])
        if theirs is not None:
            assert theirs["runs"] == list(range(len(theirs["runs"]))), "Java picks a prefix"
            picked += 1
        if got != want:
            mismatches.append((runs, num_levels, trigger, amp, ratio, got, want))
    assert not mismatches, f"{len(mismatches)} of {SHAPES} differ, first: {mismatches[:3]}"
    assert picked > SHAPES // 4, "the generated shapes exercise picking"


def test_master_scan_differs_only_by_level1_absorption(java):
    """The documented difference (§3.2): master absorbs L1 and keeps going; the 1.0 jar stops."""
    runs = [(0, 10), (0, 20), (1, 97), (2, 100)]
    opts = {"num-sorted-run.compaction-trigger": "3"}
    theirs = java.call("universal_pick", runs=[list(r) for r in runs], num_levels=3, max_size_amp=200,
                       size_ratio=1, num_run_compaction_trigger=3)
    assert (len(theirs["runs"]), theirs["output_level"]) == (3, 1)
    legacy = UniversalCompaction(opts, legacy_size_ratio_scan=True).pick(3, runs)
    master = UniversalCompaction(opts).pick(3, runs)
    assert legacy is not None and (legacy.run_count, legacy.output_level) == (3, 1)
    assert master is not None and (master.run_count, master.output_level) == (4, 2)
