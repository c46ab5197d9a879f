"""Structured Streaming (paimon_rs.spark.streaming): a stream of a table's changes
(``format("paimon_rs_audit_log")``, offsets = snapshot ids, ``scan.mode``, ``consumer-id``) and a
stream write (``format("paimon_rs")``, each micro-batch one commit, the batch id its identifier),
each against a dict model."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Dict, List, Tuple

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import paimon_rs.spark as ps
from paimon_rs import consumer
from paimon_rs.exceptions import InvalidArgumentError, UnsupportedError
from paimon_rs.spark.sink import kind_runs
from paimon_rs.spark.streaming import read_options

from spark_helpers import create

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), pa.field("v", pa.string())])

Row = Tuple[str, int, str]


def commit(t, upserts=(), deletes=()) -> int:
    """One snapshot of upserts ``{k: v}`` and deletes (keys), by the Python writer."""
    if upserts:
        wb = t.new_batch_write_builder()
        w = wb.new_write()
        w.write_arrow(pa.table({"k": list(upserts), "v": list(upserts.values())}, schema=SCHEMA))
        wb.new_commit().commit(w.prepare_commit())
        w.close()
    if deletes:
        t.delete(f"k IN ({', '.join(str(k) for k in deletes)})")
    return t.latest_snapshot_id()


def table_rows(t) -> Dict[int, str]:
    rb = t.new_read_builder()
    d = rb.new_read().to_arrow(rb.new_scan().plan().splits()).to_pydict()
    return dict(zip(d["k"], d["v"]))


def replay(model: Dict[int, str], rows: List[Row]) -> Dict[int, str]:
    for kind, k, v in rows:
        if kind in ("+I", "+U"):
            model[k] = v
        else:
            assert model.pop(k, None) is not None or kind == "-U", (kind, k, v)
    return model


class Collector:
    """A ``foreachBatch`` sink keeping each micro-batch's rows (in the batch's order)."""

    def __init__(self) -> None:
        self.batches: List[Tuple[int, List[Row]]] = []

    def __call__(self, df, batch_id: int) -> None:
        self.batches.append((batch_id, [(r["rowkind"], r["k"], r["v"]) for r in df.collect()]))

    def rows(self) -> List[Row]:
        return [r for _, rows in self.batches for r in rows]


def audit_log(spark, t, **options):
    reader = spark.readStream.format("paimon_rs_audit_log")
    for k, v in options.items():
        reader = reader.option(k, v)
    return reader.load(t.table_path)


def test_stream_read_follows_the_writer_and_restarts_from_its_checkpoint(registered, catalog, tmp_path):
    spark = registered
    t = create(catalog, "db.follow", SCHEMA, [], ["k"], bucket="2")
    commit(t, {1: "a", 2: "b", 3: "c"})  # snapshot 1: the full state the query starts with
    sink = Collector()
    ckpt = str(tmp_path / "ckpt")
    q = audit_log(spark, t).writeStream.foreachBatch(sink).option("checkpointLocation", ckpt).start()
    try:
        q.processAllAvailable()
        assert sorted(sink.rows()) == [("+I", 1, "a"), ("+I", 2, "b"), ("+I", 3, "c")]
        expected: List[Row] = []
        for upserts, deletes in (({1: "a2", 4: "d"}, ()), ({}, (2,)), ({5: "e", 3: "c2"}, (4,))):
            commit(t, upserts, deletes)
            expected += [("+I", k, v) for k, v in upserts.items()] + [("-D", k, None) for k in deletes]
            q.processAllAvailable()
        t.compact(full=True)  # a COMPACT snapshot: no rows
        q.processAllAvailable()
    finally:
        q.stop()
    got = sink.rows()[3:]
    assert sorted((kind, k) for kind, k, _ in got) == sorted((kind, k) for kind, k, _ in expected)
    assert replay({}, sink.rows()) == table_rows(t) == {1: "a2", 3: "c2", 5: "e"}

    # restarted from the checkpoint: only what was committed since, nothing twice
    before = len(sink.rows())
    commit(t, {6: "f"}, (1,))
    q = (audit_log(spark, t).writeStream.foreachBatch(sink).option("checkpointLocation", ckpt)
         .trigger(availableNow=True).start())
    q.awaitTermination(120)
    assert sorted((kind, k) for kind, k, _ in sink.rows()[before:]) == [("+I", 6), ("-D", 1)]
    assert replay({}, sink.rows()) == table_rows(t)


def test_stream_read_of_a_deletion_vector_table(registered, catalog, tmp_path):
    """A deletion-vector table compacts after every commit; its stream is the APPEND snapshots'
    records (paimon-behaviour.md §9.7), replaying to the table."""
    spark = registered
    t = create(catalog, "db.dvstream", SCHEMA, [], ["k"], **{"bucket": "2", "deletion-vectors.enabled": "true"})
    commit(t, {1: "a", 2: "b", 3: "c"})
    sink = Collector()
    q = (audit_log(spark, t).writeStream.foreachBatch(sink)
         .option("checkpointLocation", str(tmp_path / "ckpt")).start())
    try:
        q.processAllAvailable()
        for upserts, deletes in (({1: "a2", 4: "d"}, ()), ({}, (2,)), ({5: "e", 3: "c2"}, (4,))):
            commit(t, upserts, deletes)
            q.processAllAvailable()
    finally:
        q.stop()
    assert sorted((kind, k) for kind, k, _ in sink.rows()[3:]) == sorted(
        [("+I", 1), ("+I", 4), ("-D", 2), ("+I", 5), ("+I", 3), ("-D", 4)])
    assert replay({}, sink.rows()) == table_rows(t) == {1: "a2", 3: "c2", 5: "e"}


def test_consumer_id_resumes_without_a_checkpoint_and_scan_modes(registered, catalog, tmp_path):
    spark = registered
    t = create(catalog, "db.consumer", SCHEMA, [], ["k"], bucket="1")
    s1 = commit(t, {1: "a"})
    s2 = commit(t, {2: "b"})

    def run(ckpt: str, **options) -> List[Row]:
        sink = Collector()
        q = (audit_log(spark, t, **options).writeStream.foreachBatch(sink)
             .option("checkpointLocation", str(tmp_path / ckpt)).trigger(availableNow=True).start())
        q.awaitTermination(120)
        assert q.exception() is None
        return sorted(sink.rows())

    assert run("c1", **{"consumer-id": "etl"}) == [("+I", 1, "a"), ("+I", 2, "b")]  # latest-full
    assert consumer.next_snapshot(t, "etl") == s2 + 1
    doc = json.loads(Path(consumer.consumer_dir(t), "consumer-etl").read_text())
    assert doc == {"nextSnapshot": s2 + 1}  # Java's ConsumerManager format
    commit(t, {3: "c"}, (1,))
    # a fresh checkpoint, the same consumer: from where it stopped, no full read again
    assert [(kind, k) for kind, k, _ in run("c2", **{"consumer-id": "etl"})] == [("+I", 3), ("-D", 1)]
    assert consumer.next_snapshot(t, "etl") == t.latest_snapshot_id() + 1
    # scan modes (no consumer)
    assert [(kind, k) for kind, k, _ in run("m2", **{"scan.mode": "from-snapshot", "scan.snapshot-id": str(s2)})] == [
        ("+I", 2), ("+I", 3), ("-D", 1)]
    assert [(kind, k) for kind, k, _ in run("m3", **{"scan.mode": "from-snapshot-full", "scan.snapshot-id": str(s1)})
            ] == [("+I", 1), ("+I", 2), ("+I", 3), ("-D", 1)]


def test_stream_read_options_are_checked():
    with pytest.raises(InvalidArgumentError, match="not taken"):
        read_options({"path": "/x", "scan.tag-name": "t1"})
    with pytest.raises(UnsupportedError, match="compacted-full"):
        read_options({"path": "/x", "scan.mode": "compacted-full"})
    with pytest.raises(InvalidArgumentError, match="needs scan.snapshot-id"):
        read_options({"path": "/x", "scan.mode": "from-snapshot"})
    with pytest.raises(InvalidArgumentError, match="takes no scan.snapshot-id"):
        read_options({"path": "/x", "scan.mode": "latest", "scan.snapshot-id": "2"})
    assert read_options({"path": "/x", "scan.snapshot-id": "2"}).start_snapshot == 2
    assert kind_runs(pa.array(["+I", "+I", "-D", "+I"])) == [(0, 2, "+I"), (2, 1, "-D"), (3, 1, "+I")]
    with pytest.raises(InvalidArgumentError, match="'x'"):
        kind_runs(pa.array(["+I", "x"]))


def write_parquet_batches(d: Path, batches: List[List[Row]]) -> None:
    """Each batch a parquet file: with ``maxFilesPerTrigger`` 1, one micro-batch each."""
    d.mkdir()
    base = time.time() - 10 * len(batches)
    for i, rows in enumerate(batches):
        f = d / f"part-{i:03d}.parquet"
        pq.write_table(pa.table({"rowkind": [r[0] for r in rows], "k": [r[1] for r in rows],
                                 "v": [r[2] for r in rows]}), f)
        # Spark's file source takes files in modification-time order, ties in listing order:
        # files written within one clock tick could be replayed out of order (seen in CI).
        os.utime(f, (base + 10 * i, base + 10 * i))


def test_stream_write_one_commit_per_micro_batch_and_a_replayed_batch_lands_nothing(registered, catalog, tmp_path):
    spark = registered
    t = create(catalog, "db.sink", SCHEMA, [], ["k"], bucket="2")
    batches: List[List[Row]] = [
        [("+I", 1, "a"), ("+I", 2, "b"), ("+I", 3, "c")],
        [("-U", 1, "a"), ("+U", 1, "a2"), ("-D", 2, "b"), ("+I", 4, "d")],
        [("-D", 3, "c"), ("+I", 3, "c3"), ("+I", 5, "e"), ("-D", 5, "e")],
    ]
    src = tmp_path / "cdc"
    write_parquet_batches(src, batches)
    ckpt = tmp_path / "ckpt"

    def run() -> None:
        df = (spark.readStream.schema("rowkind string, k bigint, v string").option("maxFilesPerTrigger", 1)
              .parquet(str(src)))
        q = (ps.distribute(df, t).writeStream.format("paimon_rs").option("checkpointLocation", str(ckpt))
             .trigger(availableNow=True).start(t.table_path))
        q.awaitTermination(120)
        assert q.exception() is None

    run()
    model = replay({}, [r for b in batches for r in b])
    assert table_rows(t) == model == {1: "a2", 3: "c3", 4: "d"}
    snaps = [json.loads(p.read_text()) for p in sorted(Path(t.table_path, "snapshot").glob("snapshot-*"))]
    assert [s["commitIdentifier"] for s in snaps] == [0, 1, 2]
    assert len({s["commitUser"] for s in snaps}) == 1 and snaps[0]["commitUser"].startswith("spark-stream-")

    # Spark lost its record of batch 2's commit (a crash between the sink's commit and the
    # checkpoint's): the restarted query runs batch 2 again; the sink finds it committed
    for name in ("2", ".2.crc"):
        os.remove(ckpt / "commits" / name)
    files = sorted(p.name for p in Path(t.table_path).glob("bucket-*/*"))
    run()
    assert t.latest_snapshot_id() == 3
    assert sorted(p.name for p in Path(t.table_path).glob("bucket-*/*")) == files  # the rerun's deleted, no other
    assert table_rows(t) == model


def test_stream_write_full_compaction_takes_every_bucket_written_in_the_window(registered, catalog, tmp_path):
    """changelog-producer = full-compaction, full-compaction.delta-commits = 2: micro-batch 2
    writes one key (one bucket); its full compaction also takes the bucket micro-batch 1 wrote
    (Flink's GlobalFullCompactionSinkWrite; the driver finds the window in the query's
    snapshots), so the changelog up to it replays to the table."""
    spark = registered
    t = create(catalog, "db.full", SCHEMA, [], ["k"], bucket="2", **{
        "changelog-producer": "full-compaction", "full-compaction.delta-commits": "2"})
    batches: List[List[Row]] = [
        [("+I", k, f"v{k}") for k in range(1, 9)],
        [("+U", k, f"w{k}") for k in range(1, 9)],
        [("+U", 1, "x1")],
    ]
    src = tmp_path / "cdc"
    write_parquet_batches(src, batches)
    df = (spark.readStream.schema("rowkind string, k bigint, v string").option("maxFilesPerTrigger", 1)
          .parquet(str(src)))
    q = (ps.distribute(df, t).writeStream.format("paimon_rs").option("checkpointLocation", str(tmp_path / "ck"))
         .trigger(availableNow=True).start(t.table_path))
    q.awaitTermination(120)
    assert q.exception() is None
    model = replay({}, [r for b in batches for r in b])
    assert table_rows(t) == model
    snaps = t.snapshot_manager().list_snapshots()
    assert [(s.commit_kind, s.commit_identifier) for s in snaps] == [
        ("APPEND", 0), ("COMPACT", 0), ("APPEND", 1), ("APPEND", 2), ("COMPACT", 2)]
    rows = [(r["rowkind"], r["k"], r["v"]) for r in t.changelog(0).to_pylist()]
    assert replay({}, rows) == model


def test_stream_write_refuses_row_kinds_into_an_append_table(registered, catalog, tmp_path):
    spark = registered
    t = create(catalog, "db.append", SCHEMA, [], [], bucket="-1")
    src = tmp_path / "cdc"
    write_parquet_batches(src, [[("+I", 1, "a")]])
    df = spark.readStream.schema("rowkind string, k bigint, v string").parquet(str(src))
    q = (df.writeStream.format("paimon_rs").option("checkpointLocation", str(tmp_path / "ck"))
         .trigger(availableNow=True).start(t.table_path))
    with pytest.raises(Exception, match="only a primary-key table takes"):
        q.awaitTermination(120)
    assert t.latest_snapshot_id() is None


def test_cdc_pipeline_table_to_table(registered, catalog, tmp_path):
    """CDC in (a PK table's changes, deletes included, streamed), a PK table out, equal to the
    model; the target's changes streamed back are the same changes."""
    spark = registered
    src = create(catalog, "db.cdc_src", SCHEMA, [], ["k"], bucket="2")
    dst = create(catalog, "db.cdc_dst", SCHEMA, [], ["k"], bucket="2")
    model: Dict[int, str] = {}
    history = [({1: "a", 2: "b", 3: "c", 4: "d"}, ()), ({2: "b2", 5: "e"}, (1,)), ({}, (3, 5)), ({1: "a3"}, (4,))]
    for upserts, deletes in history:
        commit(src, upserts, deletes)
        model.update(upserts)
        for k in deletes:
            model.pop(k)
    changes = audit_log(spark, src, **{"scan.mode": "from-snapshot", "scan.snapshot-id": "1"})
    q = (ps.distribute(changes, dst).writeStream.format("paimon_rs")
         .option("checkpointLocation", str(tmp_path / "ck")).trigger(availableNow=True).start(dst.table_path))
    q.awaitTermination(120)
    assert q.exception() is None
    assert table_rows(dst) == table_rows(src) == model


KIND_SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string()), ("op", pa.string())])


def commit_kinds(t, commits) -> None:
    """One commit per list of (row kind, k, v), the kind in the ``op`` column."""
    for c in commits:
        wb = t.new_batch_write_builder()
        w = wb.new_write()
        w.write_arrow(pa.table({"k": [r[1] for r in c], "v": [r[2] for r in c], "op": [r[0] for r in c]},
                               schema=KIND_SCHEMA))
        wb.new_commit().commit(w.prepare_commit())
        w.close()


def stream_from_first(spark, t, ckpt: str) -> List[Row]:
    """An availableNow stream of ``t``'s changes from snapshot 1, its rows in order."""
    got: List[Row] = []
    q = (audit_log(spark, t, **{"scan.mode": "from-snapshot", "scan.snapshot-id": "1", "columns": "k,v"})
         .writeStream.foreachBatch(lambda df, _: got.extend((r["rowkind"], r["k"], r["v"]) for r in df.collect()))
         .option("checkpointLocation", ckpt).trigger(availableNow=True).start())
    q.awaitTermination(120)
    assert q.exception() is None
    return got


def test_stream_of_a_changelog_table_reads_its_changelog_files(registered, catalog, tmp_path):
    """``changelog`` mode of a ``changelog-producer = input`` table written by paimon_rs:
    each snapshot's changelog files, the input with every kind (-U included), what
    ``Table.changelog`` returns; the default (auto) mode picks the changelog for such a table."""
    t = create(catalog, "db.cl", KIND_SCHEMA, [], ["k"], bucket="2",
               **{"rowkind.field": "op", "changelog-producer": "input"})
    commits = ([("+I", 1, "a"), ("+I", 2, "b")], [("-U", 1, "a"), ("+U", 1, "a2")], [("-D", 2, "b"), ("+I", 3, "c")])
    commit_kinds(t, commits)
    got = stream_from_first(registered, t, str(tmp_path / "ck"))
    expected = t.changelog(0).select(["rowkind", "k", "v"]).to_pylist()
    assert sorted(got) == sorted((r["rowkind"], r["k"], r["v"]) for r in expected)
    assert sorted(got) == sorted(r for c in commits for r in c)  # the input, -U included


def test_stream_reads_the_changelog_of_expired_snapshots(registered, catalog, tmp_path):
    """A decoupled changelog retention (``changelog.num-retained.max`` above the snapshots'):
    the snapshots of the stream's range expired, their changes are read from the long-lived
    changelogs (``changelog/changelog-<id>``), as Java's streaming read does."""
    t = create(catalog, "db.retained", KIND_SCHEMA, [], ["k"], bucket="1",
               **{"rowkind.field": "op", "changelog-producer": "input", "snapshot.num-retained.min": "1",
                  "snapshot.num-retained.max": "2", "changelog.num-retained.max": "50"})
    commits = [[("+I", 1, "a"), ("+I", 2, "b")], [("-U", 1, "a"), ("+U", 1, "a2")], [("-D", 2, "b"), ("+I", 3, "c")],
               [("+I", 4, "d")], [("-U", 3, "c"), ("+U", 3, "c2")]]
    commit_kinds(t, commits)
    root = Path(t.table_path.removeprefix("file:"))
    assert len(list((root / "snapshot").glob("snapshot-*"))) == 2
    assert (root / "changelog" / "changelog-1").exists()
    got = stream_from_first(registered, t, str(tmp_path / "ck"))
    assert sorted(got) == sorted(r for c in commits for r in c)
    assert replay({}, got) == table_rows(t)


def test_a_late_speculative_attempt_of_a_micro_batch_leaves_no_file(registered, catalog, monkeypatch):
    """A speculative attempt of a micro-batch's task still running when the sink's ``commit``
    ran (the stream sink's commit, like the batch Data Source's, has no SparkContext to wait
    with): driven in-process, task 0 of batch 0 commits, then a second attempt of it writes the
    same rows. The commit wrote the micro-batch's ended marker (its prefix is this run's) before
    its sweep; the late attempt finds it, deletes its files and returns no message: the table is
    as committed and no orphan is left. Without the marker the attempt's files stayed as orphans."""
    import pyspark

    from paimon_rs.spark import sink
    from paimon_rs.spark.source import PaimonRsDataSource

    t = create(catalog, "db.sinklate", SCHEMA, [], ["k"], bucket="2")

    class Ctx:
        def getLocalProperty(self, key: str) -> str:  # noqa: N802 (Spark's name)
            return {"streaming.sql.batchId": "0", "sql.streaming.queryId": "q1"}[key]

    monkeypatch.setattr(pyspark.TaskContext, "get", staticmethod(lambda: Ctx()))
    monkeypatch.setattr(sink, "_task_context", lambda: (0, 0, 11))
    batch = pa.record_batch({"k": pa.array([1, 2, 3], pa.int64()), "v": ["a", "b", "c"]})
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    spark_schema = StructType([StructField("k", LongType(), False), StructField("v", StringType())])
    w = PaimonRsDataSource({"path": t.table_path}).streamWriter(spark_schema, False)
    won = w.write(iter([batch]))
    w.commit([won], 0)
    assert t.latest_snapshot_id() == 1 and table_rows(t) == {1: "a", 2: "b", 3: "c"}
    committed = sorted(p.name for p in Path(t.table_path).glob("bucket-*/*"))
    monkeypatch.setattr(sink, "_task_context", lambda: (0, 1, 12))
    late = w.write(iter([batch]))
    assert not late.messages and t.latest_snapshot_id() == 1
    assert sorted(p.name for p in Path(t.table_path).glob("bucket-*/*")) == committed
    assert table_rows(t) == {1: "a", 2: "b", 3: "c"}
    assert [p.name for p in Path(t.table_path, "index").iterdir()] == [f"write-{w._prefix('q1', '0')[5:]}ended"]
