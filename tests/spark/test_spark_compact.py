"""paimon_rs.spark.compact in local[2,4]: the driver plans the buckets, one task per bucket
compacts, the driver commits one COMPACT snapshot, exactly once under task retries."""

import json
import os
from typing import Dict, Tuple

import pyarrow as pa
import pytest

import paimon_rs.spark as ps
from paimon_rs import CatalogFactory
from paimon_rs.spark import compaction

from spark_helpers import create, data_files, live_files, orphans, plain_read, to_spark

SCHEMA = pa.schema([
    pa.field("dt", pa.string(), nullable=False),
    pa.field("id", pa.int64(), nullable=False),
    pa.field("v", pa.string()),
    pa.field("op", pa.string()),
])
APPEND = pa.schema([pa.field("dt", pa.string(), nullable=False), pa.field("id", pa.int64()),
                    pa.field("v", pa.string())])
DTS = ["a", "b"]


@pytest.fixture
def catalog(tmp_path):
    return CatalogFactory.create({"warehouse": str(tmp_path / "wh")})


def rows(ids, tag: str, op: str = "+I") -> pa.Table:
    ids = list(ids)
    return pa.table({"dt": [DTS[i % 2] for i in ids], "id": ids, "v": [f"{tag}{i}" for i in ids],
                     "op": [op] * len(ids)}, schema=SCHEMA)


def pk_history(spark, catalog, name: str, **options: str) -> Tuple[object, Dict[Tuple[str, int], str]]:
    """A partitioned PK table written by four Spark writes (updates and deletes) that leave
    level-0 runs behind (write-only writers), and its model."""
    t = create(catalog, name, SCHEMA, ["dt"], ["dt", "id"], bucket="3", **{"rowkind.field": "op"}, **options)
    w = t.copy({"write-only": "true"})
    model: Dict[Tuple[str, int], str] = {}
    for k, (lo, hi) in enumerate([(0, 120), (50, 150), (100, 200), (0, 30)]):
        data = rows(range(lo, hi), f"w{k}_")
        ps.write(to_spark(spark, data), w)
        model.update({(DTS[i % 2], i): f"w{k}_{i}" for i in range(lo, hi)})
    ps.write(to_spark(spark, rows(range(60, 80), "x", op="-D")), w)
    for i in range(60, 80):
        del model[(DTS[i % 2], i)]
    return t, model


def as_model(table) -> Dict[Tuple[str, int], str]:
    got = plain_read(table)
    return {(d, i): v for d, i, v in zip(got.column("dt").to_pylist(), got.column("id").to_pylist(),
                                        got.column("v").to_pylist())}


def runs_per_bucket(table) -> Dict[Tuple[str, int], int]:
    return {(p.partition, p.bucket): len(p.runs) for p in table.compaction_plan()}


def snapshot_kind(table, snapshot_id: int) -> str:
    with open(os.path.join(table.table_path, "snapshot", f"snapshot-{snapshot_id}")) as f:
        return json.load(f)["commitKind"]


def test_compact_picked_then_full(spark, catalog):
    t, model = pk_history(spark, catalog, "db.c", **{"num-sorted-run.compaction-trigger": "3"})
    before = runs_per_bucket(t)
    assert len(before) == 6 and min(before.values()) >= 4, before
    snap = ps.compact(spark, t)  # the picker: more runs than the trigger in every bucket
    assert snap is not None and snapshot_kind(t, snap) == "COMPACT"
    assert as_model(t) == model
    picked = runs_per_bucket(t)
    assert all(picked[b] < before[b] for b in before), (before, picked)
    # one more write leaves a level-0 file in every bucket; full compaction merges it all
    ps.write(to_spark(spark, rows(range(190, 230), "late")), t.copy({"write-only": "true"}))
    model.update({(DTS[i % 2], i): f"late{i}" for i in range(190, 230)})
    assert min(runs_per_bucket(t).values()) >= 2
    snap2 = ps.compact(spark, t, full=True)
    assert snap2 == snap + 2 and snapshot_kind(t, snap2) == "COMPACT"
    assert set(runs_per_bucket(t).values()) == {1}
    assert as_model(t) == model
    assert {(r["dt"], r["id"]): r["v"] for r in ps.read(spark, t).collect()} == model
    # nothing left to do; no files but the live ones
    assert ps.compact(spark, t, full=True) is None
    assert orphans(t) == set()


def test_compact_deletion_vector_table(spark, catalog):
    """A deletion-vector table behind write-only writers: its level 0 is invisible to reads until
    Spark's compaction moves it up by lookup; each bucket's task restores, marks and writes back
    its vectors (the driver commits the new index files with the COMPACT snapshot)."""
    t, model = pk_history(spark, catalog, "db.dv", **{"deletion-vectors.enabled": "true"})
    assert as_model(t) != model, "level 0 is not read"
    snap = ps.compact(spark, t)
    assert snap is not None and snapshot_kind(t, snap) == "COMPACT"
    assert as_model(t) == model
    assert {(r["dt"], r["id"]): r["v"] for r in ps.read(spark, t).collect()} == model
    # a few updates: their lookup finds the old rows in the max level and marks them
    ps.write(to_spark(spark, rows(range(0, 200, 9), "y")), t.copy({"write-only": "true"}))
    model.update({(DTS[i % 2], i): f"y{i}" for i in range(0, 200, 9)})
    assert ps.compact(spark, t) is not None
    assert as_model(t) == model
    vectors = catalog.get_table("db.dv$table_indexes").to_arrow()
    assert vectors.num_rows > 0 and set(vectors.column("index_type").to_pylist()) == {"DELETION_VECTORS"}
    assert orphans(t) == set()


def test_forced_retry_of_compact_tasks_leaves_no_duplicate_or_orphan(spark, catalog, tmp_path):
    t, model = pk_history(spark, catalog, "db.r")
    marker = tmp_path / "fail-first"
    marker.write_text("x")
    latest = t.latest_snapshot_id()
    snap = ps.compact(spark, t, full=True, _fail_first_attempt_marker=str(marker))
    assert snap == latest + 1 and snapshot_kind(t, snap) == "COMPACT"  # one commit
    assert as_model(t) == model
    assert set(runs_per_bucket(t).values()) == {1}
    # every first attempt wrote files and failed: all of them are gone
    assert orphans(t) == set()
    compacted = [os.path.basename(f) for f in data_files(t) if "compact-" in os.path.basename(f)]
    assert compacted and not [f for f in compacted if "-a0-" in f] and all("-a1-" in f for f in compacted)


def test_failed_compaction_job_leaves_the_table_as_it_was(spark, catalog, tmp_path, monkeypatch):
    t, model = pk_history(spark, catalog, "db.f")
    files = data_files(t)
    marker = tmp_path / "fail-always"
    marker.write_text("x")
    orig = compaction._compact_task

    def always_fail(spec, table, item, spark_partition, attempt):
        orig(spec, table, item, spark_partition, attempt)
        raise RuntimeError("boom after compacting (test)")

    monkeypatch.setattr(compaction, "_compact_task", always_fail)
    with pytest.raises(Exception, match="boom after compacting"):
        ps.compact(spark, t, full=True)
    assert data_files(t) == files
    assert as_model(t) == model


@pytest.mark.long  # 35-75 s: the stragglers wait out partition 0's four attempts on 2 cores
def test_failed_compaction_job_waits_for_attempts_still_running_before_cleaning(
        spark, catalog, tmp_path, monkeypatch):
    """The job fails (partition 0's fourth attempt) while other tasks are still compacting: their
    files land after Spark aborted the job. The driver waits for those attempts to end before it
    deletes the job's files, so none is left (before: it swept at once and they stayed)."""
    import time

    t, model = pk_history(spark, catalog, "db.straggle")
    files = data_files(t)
    last_failed = tmp_path / "partition-0-gave-up"
    orig = compaction._compact_task

    def fail_first_partition(spec, table, item, spark_partition, attempt):
        if spark_partition == 0:
            if attempt == 3:
                last_failed.write_text("x")
            raise RuntimeError("boom in partition 0 (test)")
        deadline = time.monotonic() + 30
        while not last_failed.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(0.3)  # the job is aborted by now; compact anyway, as a straggler does
        return orig(spec, table, item, spark_partition, attempt)

    monkeypatch.setattr(compaction, "_compact_task", fail_first_partition)
    with pytest.raises(Exception, match="boom in partition 0"):
        ps.compact(spark, t, full=True)
    time.sleep(3)  # a straggler the driver did not wait for would have written by now
    assert data_files(t) == files
    assert as_model(t) == model


def test_compact_append_table_from_spark(spark, catalog):
    t = create(catalog, "db.app", APPEND, ["dt"], [])
    want = []
    for k in range(4):
        ids = list(range(k * 50, k * 50 + 50))
        data = pa.table({"dt": [DTS[i % 2] for i in ids], "id": ids, "v": [f"v{i}" for i in ids]}, schema=APPEND)
        ps.write(to_spark(spark, data).repartition(2), t)
        want.extend(zip(data.column("id").to_pylist(), data.column("v").to_pylist()))
    n_before = len(data_files(t))
    assert n_before >= 8
    snap = ps.compact(spark, t, full=True)
    assert snap is not None and snapshot_kind(t, snap) == "COMPACT"
    got = plain_read(t)
    assert sorted(zip(got.column("id").to_pylist(), got.column("v").to_pylist())) == sorted(want)
    assert len(live_files(t)) == 2  # one file per partition
    assert orphans(t) == set()


def test_compact_empty_table_is_none(spark, catalog):
    t = create(catalog, "db.empty", SCHEMA, ["dt"], ["dt", "id"], bucket="2")
    assert ps.compact(spark, t) is None
    assert ps.compact(spark, t, full=True) is None


def test_compact_only_the_given_partitions(spark, catalog):
    t, model = pk_history(spark, catalog, "db.p")
    before = runs_per_bucket(t)
    a = [k for k in before if k[0].startswith("dt=a")]
    b = [k for k in before if k[0].startswith("dt=b")]
    assert len(a) == len(b) == 3 and min(before.values()) >= 2, before
    snap = ps.compact(spark, t, full=True, partitions=[{"dt": "a"}])
    assert snap is not None and snapshot_kind(t, snap) == "COMPACT"
    after = runs_per_bucket(t)
    assert all(after[k] == 1 for k in a), after  # compacted
    assert all(after[k] == before[k] for k in b), (before, after)  # untouched
    assert as_model(t) == model
    # a spec matching no partition compacts nothing; a non-partition key is refused
    assert ps.compact(spark, t, full=True, partitions=[{"dt": "zz"}]) is None
    with pytest.raises(Exception, match="not a partition key"):
        ps.compact(spark, t, partitions=[{"id": 1}])
    assert ps.compact(spark, t, full=True, partitions=[{"dt": "b"}]) == snap + 1
    assert set(runs_per_bucket(t).values()) == {1}
    assert as_model(t) == model
    assert orphans(t) == set()
