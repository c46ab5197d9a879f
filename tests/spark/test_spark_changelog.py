"""A changelog read through Spark (``paimon_rs.spark.read`` of a table copied with
``incremental-between-scan-mode = changelog``): the changelog splits are pickled to the tasks and
read there unmerged, with their row kinds. The first test relabels delta files as changelog
files (tests/unit/test_changelog.py does the same) so that the read is tested on its own; the
later ones read changelogs the producers wrote (input, full-compaction) through Spark writes."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest

import paimon_rs.spark as ps
from paimon_rs import CatalogFactory, Schema, _core

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string()), ("op", pa.string())])


@pytest.fixture
def catalog(tmp_path):
    return CatalogFactory.create({"warehouse": str(tmp_path / "wh")})


def test_spark_reads_the_changelog_unmerged(spark, catalog):
    catalog.create_database("db", True)
    catalog.create_table("db.cl", Schema.from_pyarrow_schema(
        SCHEMA, primary_keys=["k"], options={"bucket": "2", "rowkind.field": "op"}), False)
    t = catalog.get_table("db.cl")
    commits = [[("+I", 1, "a"), ("+I", 2, "b")], [("+U", 1, "a2")], [("-D", 2, "b"), ("+I", 3, "c")]]
    for c in commits:
        wb = t.new_batch_write_builder()
        w, cm = wb.new_write(), wb.new_commit()
        w.write_arrow(pa.table({"k": [r[1] for r in c], "v": [r[2] for r in c], "op": [r[0] for r in c]},
                               schema=SCHEMA))
        cm.commit(w.prepare_commit())
        w.close()
        cm.close()
    for p in Path(t.table_path.removeprefix("file:"), "snapshot").glob("snapshot-*"):
        j = json.loads(p.read_text())
        j["changelogManifestList"] = j["deltaManifestList"]
        p.write_text(json.dumps(j))
    cl = t.copy({"incremental-between": "0,3", "incremental-between-scan-mode": "changelog"})
    rows = ps.read(spark, cl, columns=["k", "v"]).collect()
    got = sorted((r["rowkind"], r["k"], r["v"]) for r in rows)
    assert got == sorted(r for c in commits for r in c)
    assert got == sorted(tuple(x) for x in zip(*t.changelog(0).select(["rowkind", "k", "v"]).to_pydict().values()))


def test_spark_writes_an_input_changelog(spark, catalog):
    """``changelog-producer = input`` through ``paimon_rs.spark.write``: the tasks' changelog
    files travel in the pickled commit messages and the driver lists them in the snapshot's
    changelog manifest list, so each write's changelog is its input, -U included."""
    catalog.create_database("db", True)
    catalog.create_table("db.wcl", Schema.from_pyarrow_schema(
        SCHEMA, primary_keys=["k"], options={"bucket": "2", "rowkind.field": "op", "changelog-producer": "input"}),
        False)
    t = catalog.get_table("db.wcl")
    commits = [[("+I", 1, "a"), ("+I", 2, "b"), ("+I", 3, "c")], [("-U", 1, "a"), ("+U", 1, "a2"), ("-D", 2, "b")]]
    for c in commits:
        df = spark.createDataFrame([(k, v, op) for op, k, v in c], "k bigint, v string, op string")
        ps.write(df, t)
    got = t.changelog(0).select(["rowkind", "k", "v"]).to_pylist()
    assert sorted((r["rowkind"], r["k"], r["v"]) for r in got) == sorted(r for c in commits for r in c)
    assert [s.changelog_record_count for s in t.snapshot_manager().list_snapshots()] == [3, 3]
    assert sorted(t.to_arrow().select(["k", "v"]).to_pylist(), key=lambda r: r["k"]) == \
        [{"k": 1, "v": "a2"}, {"k": 3, "v": "c"}]


def test_spark_writes_a_full_compaction_changelog(spark, catalog):
    """``changelog-producer = full-compaction`` through ``paimon_rs.spark.write`` (a batch
    commit): each task compacts the buckets it wrote fully, and the COMPACT snapshot's changelog
    is the write's effect on the table (-U/+U of the previous value, -D of a removed key)."""
    catalog.create_database("db", True)
    catalog.create_table("db.fcl", Schema.from_pyarrow_schema(
        SCHEMA, primary_keys=["k"],
        options={"bucket": "2", "rowkind.field": "op", "changelog-producer": "full-compaction"}), False)
    t = catalog.get_table("db.fcl")
    commits = [[("+I", 1, "a"), ("+I", 2, "b"), ("+I", 3, "c")], [("+U", 1, "a2"), ("-D", 2, "b")]]
    for c in commits:
        df = spark.createDataFrame([(k, v, op) for op, k, v in c], "k bigint, v string, op string")
        ps.write(df, t)
    assert [s.commit_kind for s in t.snapshot_manager().list_snapshots()] == ["APPEND", "COMPACT"] * 2
    got = t.changelog(0).select(["rowkind", "k", "v"]).to_pylist()
    assert sorted((r["rowkind"], r["k"], r["v"]) for r in got) == sorted(
        [("+I", 1, "a"), ("+I", 2, "b"), ("+I", 3, "c"), ("-U", 1, "a"), ("+U", 1, "a2"), ("-D", 2, "b")])
    assert sorted(t.to_arrow().select(["k", "v"]).to_pylist(), key=lambda r: r["k"]) == \
        [{"k": 1, "v": "a2"}, {"k": 3, "v": "c"}]


@pytest.mark.parametrize("producer", ["input", "lookup"])
def test_failed_attempts_leave_no_changelog_files(spark, catalog, tmp_path, producer):
    """Every task's first attempt writes its data and changelog files, then fails; the retries
    commit. The failed attempts' changelog files are swept with their data files (they are
    named by the attempt, as the data files are): only what the snapshots list stays."""
    catalog.create_database("db", True)
    catalog.create_table("db.rcl", Schema.from_pyarrow_schema(
        SCHEMA, primary_keys=["k"], options={"bucket": "2", "changelog-producer": producer}), False)
    t = catalog.get_table("db.rcl")
    marker = tmp_path / "fail-first-attempt"
    for n in (40, 60):  # the second write updates keys of the first: -U/+U from lookup
        marker.write_text("1")
        df = spark.createDataFrame([(k, f"v{n}", "+I") for k in range(n)], "k bigint, v string, op string")
        ps.write(df, t, num_tasks=2, _fail_first_attempt_marker=str(marker))
    root = Path(t.table_path.removeprefix("file:"))
    on_disk = {p.name for p in root.glob("bucket-*/changelog-*")}
    listed = {row[3] for _, row in _core.changelog_files(t._core, None)}
    assert on_disk and all("-a1-" in n for n in on_disk), on_disk  # only the retries' files
    assert on_disk == listed
    got = t.changelog(0).select(["rowkind", "k"]).to_pylist()
    assert sum(r["rowkind"] in ("+I", "+U") for r in got) == 40 + 60
    assert t.to_arrow().num_rows == 60
