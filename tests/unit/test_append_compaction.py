"""Append-table compaction (issue #11): small files of a bucket rewritten in sequence order into
target-size files (Java's BucketedAppendCompactManager, AppendCompactCoordinator for
bucket = -1), committed as one COMPACT snapshot; ``compaction_plan()`` explains it."""

from __future__ import annotations

from typing import Dict, List

import pyarrow as pa
import pytest

from paimon_rs import Schema
from paimon_rs.compaction import BucketCompactionPlan

from unit_helpers import read, snapshots, write

# every test runs on local disk and on S3 (tests/stores.py)
pytestmark = pytest.mark.stores

SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.string())])


def make(catalog, name: str, options: Dict[str, str], partitioned: bool = False):
    schema = Schema.from_pyarrow_schema(SCHEMA, partition_keys=["dt"] if partitioned else None,
                                        options=options)
    catalog.create_table(f"db.{name}", schema, False)
    return catalog.get_table(f"db.{name}")


def batch(ids: List[int], dt: str = "a") -> pa.Table:
    return pa.table({"dt": [dt] * len(ids), "id": ids, "v": [f"v{i}" for i in ids]}, schema=SCHEMA)


def file_count(table) -> int:
    return sum(r.files for p in table.compaction_plan() for r in p.runs)


def test_bucketed_auto_compaction_keeps_sequence_order(catalog):
    t = make(catalog, "b1", {"bucket": "1", "bucket-key": "id", "write-only": "true"})
    for c in range(6):
        write(t, batch(list(range(c * 10, c * 10 + 10))))
    assert file_count(t) == 6
    plan = t.compaction_plan()
    assert len(plan) == 1 and isinstance(plan[0], BucketCompactionPlan)
    # compaction.min.file-num = 5: the five oldest files
    assert [(p.files, p.reason) for p in plan[0].picks] == [(5, "small-files")]
    assert "bucket-0" in str(plan[0]) and "small-files" in str(plan[0])
    sid = t.compact(full=False)
    assert sid == 7
    assert snapshots(t)[-1]["commitKind"] == "COMPACT"
    assert file_count(t) == 2
    # an append bucket reads in sequence order: the compacted file first, then the newest
    assert read(t).column("id").to_pylist() == list(range(60))
    assert t.compaction_plan()[0].picks == []
    assert t.compact(full=False) is None


def test_full_compaction_of_a_bucketed_table(catalog):
    t = make(catalog, "b2", {"bucket": "2", "bucket-key": "id", "write-only": "true"})
    for c in range(3):
        write(t, batch(list(range(c * 100, c * 100 + 100))))
    assert t.compact(full=False) is None  # 3 files per bucket < compaction.min.file-num
    before = read(t, sort=["id"])
    assert t.compact(full=True) is not None
    assert file_count(t) == 2
    assert read(t, sort=["id"]).equals(before)
    assert t.compact(full=True) is None  # one file per bucket: nothing to do


def test_bucket_unaware_table_packs_small_files(catalog):
    t = make(catalog, "u", {"bucket": "-1"})
    for c in range(4):
        write(t, batch([c * 2, c * 2 + 1]))
    assert t.compact(full=False) is None  # 4 small files < compaction.min.file-num 5
    sid = t.compact(full=True)
    assert sid is not None and snapshots(t)[-1]["commitKind"] == "COMPACT"
    assert file_count(t) == 1
    assert sorted(read(t).column("id").to_pylist()) == list(range(8))
    t2 = t.copy({"compaction.min.file-num": "2"})
    write(t2, batch([100]))
    write(t2, batch([101]))
    assert t2.compact(full=False) is not None  # the two new small files and the compacted one
    assert sorted(read(t2).column("id").to_pylist()) == list(range(8)) + [100, 101]


def test_partition_filter_compacts_only_that_partition(catalog):
    t = make(catalog, "p", {"bucket": "1", "bucket-key": "id", "write-only": "true"}, partitioned=True)
    for c in range(5):
        write(t, pa.concat_tables([batch([c], "a"), batch([c], "b")]))
    assert t.compact(partitions=[{"dt": "b"}]) is not None
    files = {p.partition: sum(r.files for r in p.runs) for p in t.compaction_plan()}
    assert files == {"dt=a/": 5, "dt=b/": 1}
    assert sorted(read(t).column("id").to_pylist()) == sorted(list(range(5)) * 2)


def test_target_file_size_rolls_the_output(catalog):
    t = make(catalog, "r", {"bucket": "1", "bucket-key": "id", "write-only": "true",
                            "compaction.min.file-num": "2"})
    for c in range(4):
        write(t, batch(list(range(c * 20000, (c + 1) * 20000))))
    # every file is small against a target that rolls the rewrite into several files
    size = max(r.bytes for r in t.compaction_plan()[0].runs) // 4
    t = t.copy({"target-file-size": f"{3 * size} b"})
    assert t.compact(full=True) is not None
    assert file_count(t) > 1
    assert read(t).column("id").to_pylist() == list(range(80000))


def test_plan_of_a_primary_key_table_names_the_picker_rule(pk_table):
    from unit_helpers import PK_SCHEMA
    t = pk_table.copy({"write-only": "true"})  # writers would compact the runs away
    data = pa.table({"dt": ["a"] * 4, "id": [1, 2, 3, 4], "name": ["x"] * 4, "price": [1.0] * 4},
                    schema=PK_SCHEMA)
    write(t, data)
    plan = t.compaction_plan()
    assert plan and all(p.primary_key and p.picks == [] for p in plan)
    assert all("no rule fired" in p.explanation for p in plan)
    for _ in range(6):
        write(t, data)
    plan = [p for p in t.compaction_plan() if p.picks]
    assert plan, [str(p) for p in t.compaction_plan()]
    for p in plan:
        assert len(p.runs) == 7 and all(r.level == 0 for r in p.runs)
        (pick,) = p.picks
        assert pick.reason in {"size-amplification", "run-count", "size-ratio"}
        assert pick.reason in p.explanation and pick.reason in str(p)
    sid = t.compact(full=False)
    assert sid is not None
    assert all(len(p.runs) < 7 for p in t.compaction_plan())


def test_bucketed_append_writers_compact_at_prepare_commit(catalog):
    """As Java's writer (BucketedAppendCompactManager): once a bucket holds
    compaction.min.file-num small files, prepare_commit compacts them (APPEND then COMPACT
    snapshot); write-only writers and bucket-unaware tables do not."""
    t = make(catalog, "w", {"bucket": "1", "bucket-key": "id"})
    for c in range(5):
        write(t, batch([c]))
    assert [s["commitKind"] for s in snapshots(t)] == ["APPEND"] * 5 + ["COMPACT"]
    assert file_count(t) == 1
    assert read(t).column("id").to_pylist() == list(range(5))
    wo = make(catalog, "wo", {"bucket": "1", "bucket-key": "id", "write-only": "true"})
    un = make(catalog, "un", {"bucket": "-1"})
    for c in range(6):
        write(wo, batch([c]))
        write(un, batch([c]))
    assert file_count(wo) == 6 and file_count(un) == 6
