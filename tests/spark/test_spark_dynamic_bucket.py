"""paimon_rs.spark.write into dynamic-bucket primary-key tables (bucket = -1, #28): the assign
stage, the bucket writers' hash index files, exactly once, and the table against a dict model
with no key in two buckets."""

import json
import os
import random
import time
from collections import Counter
from pathlib import Path
from typing import Dict, Tuple

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import paimon_rs.spark as ps
from paimon_rs import _core
from paimon_rs.exceptions import UnsupportedError
from paimon_rs.spark import dynamic

import table_writes
from spark_helpers import create, data_files, live_files, orphans, to_spark

SCHEMA = pa.schema([
    pa.field("dt", pa.string(), nullable=False),
    pa.field("id", pa.int64(), nullable=False),
    pa.field("v", pa.string()),
    pa.field("op", pa.string()),
])

DTS = ["a", "b"]


def rows(ids, v="v", op="+I"):
    ids = list(ids)
    return pa.table({"dt": [DTS[i % 2] for i in ids], "id": ids, "v": [f"{v}{i}" for i in ids],
                     "op": [op] * len(ids)}, schema=SCHEMA)


def apply(model: Dict[Tuple[str, int], str], t: pa.Table) -> None:
    for r in t.to_pylist():
        if r["op"] in ("+I", "+U"):
            model[(r["dt"], r["id"])] = r["v"]
        else:
            model.pop((r["dt"], r["id"]), None)


def by_bucket(table) -> Dict[Tuple[str, int], Dict[int, str]]:
    """(dt, bucket) -> id -> v, read split by split."""
    rb = table.new_read_builder()
    out: Dict[Tuple[str, int], Dict[int, str]] = {}
    for split in rb.new_scan().plan().splits():
        for r in rb.new_read().to_arrow([split]).to_pylist():
            out.setdefault((r["dt"], split.bucket), {})[r["id"]] = r["v"]
    return out


def check(table, model, target: int) -> Dict[Tuple[str, int], Dict[int, str]]:
    """The table equals the model, no key is in two buckets, buckets hold the target at most,
    and every bucket has one live hash index file listing at least its live keys."""
    got = by_bucket(table)
    keys = Counter((dt, k) for (dt, _), m in got.items() for k in m)
    assert all(n == 1 for n in keys.values()), [k for k, n in keys.items() if n > 1]
    flat = {(dt, k): v for (dt, _), m in got.items() for k, v in m.items()}
    assert flat == model
    assert all(len(m) <= target for m in got.values()), {b: len(m) for b, m in got.items()}
    index = [r for r in _core.index_files(table._core) if r[2] == "HASH"]
    per_bucket = Counter((r[0], r[1]) for r in index)
    assert all(n == 1 for n in per_bucket.values()), per_bucket
    counts = {(r[0], r[1]): r[5] for r in index}
    for (dt, b), m in got.items():
        assert counts[(f"{{{dt}}}", b)] >= len(m), (dt, b)
    return got


def index_dir_files(table):
    """The index files in ``index/`` (not a Data Source write's ended markers)."""
    d = os.path.join(table.table_path, "index")
    return {f for f in os.listdir(d) if not f.endswith("-ended")} if os.path.isdir(d) else set()


@pytest.mark.parametrize("assigners", ["1", "3"])
def test_spark_writes_a_dynamic_bucket_table_like_the_model(spark, catalog, assigners):
    target = 40
    t = create(catalog, "db.dyn", SCHEMA, ["dt"], ["dt", "id"], bucket="-1",
               **{"rowkind.field": "op", "dynamic-bucket.target-row-num": str(target),
                  "dynamic-bucket.assigner-parallelism": assigners})
    model: Dict[Tuple[str, int], str] = {}
    first = rows(range(300))
    assert ps.write(to_spark(spark, first).repartition(3), t) == 1
    apply(model, first)
    got = check(t, model, target)
    assert len([b for (dt, b) in got if dt == "a"]) >= 150 // target
    if assigners == "3":
        assert {b % 3 for (_, b) in got} == {0, 1, 2}  # each assigner opened buckets of its own

    # updates of known keys, deletes, and many new keys: new buckets open, known keys stay
    second = pa.concat_tables([rows(range(0, 100), v="u", op="+U"), rows(range(100, 120), op="-D"),
                               rows(range(300, 900), v="n")])
    assert ps.write(to_spark(spark, second).repartition(4), t) == 2
    apply(model, second)
    after = check(t, model, target)
    for (dt, b), m in got.items():
        for k in m:
            if (dt, k) in model:
                assert k in after[(dt, b)], f"key {k} of {dt} left bucket {b}"
    assert len(after) > len(got)

    # a local write afterwards continues the same index
    w = t.new_batch_write_builder()
    tw = w.new_write()
    third = pa.concat_tables([rows(range(0, 900, 7), v="l", op="+U"), rows(range(900, 1000), v="m")])
    tw.write_arrow(third)
    w.new_commit().commit(tw.prepare_commit())
    tw.close()
    apply(model, third)
    check(t, model, target)
    assert data_files(t) >= live_files(t) and not orphans(t)
    live_index = {r[3] for r in _core.index_files(t._core)}
    assert live_index <= index_dir_files(t)


def test_failed_writer_attempts_leave_no_index_files(spark, catalog, tmp_path):
    """Every writer task's first attempt writes its data and hash index files, then fails; the
    retries commit, and the driver's sweep deletes the first attempts' index files too."""
    t = create(catalog, "db.dynretry", SCHEMA, ["dt"], ["dt", "id"], bucket="-1",
               **{"dynamic-bucket.target-row-num": "30"})
    marker = tmp_path / "fail-first-attempt"
    marker.write_text("1")
    data = rows(range(200))
    ps.write(to_spark(spark, data), t, num_tasks=3, _fail_first_attempt_marker=str(marker))
    model: Dict[Tuple[str, int], str] = {}
    apply(model, data)
    got = check(t, model, 30)
    files = index_dir_files(t)
    assert files == {r[3] for r in _core.index_files(t._core)}
    assert len(files) == len(got) and all("-a1-" in f for f in files), files
    assert data_files(t) == live_files(t) and not orphans(t)


def test_assign_tasks_assign_alike_whatever_the_order_of_equal_hashes(catalog):
    """An assign task's input sorted by key hash: any order of its rows with equal hashes (and
    any batching) gives every key the same bucket, so a retried assign task agrees with the
    writers that read its first attempt's output."""
    t = create(catalog, "db.dynorder", SCHEMA, ["dt"], ["dt", "id"], bucket="-1",
               **{"dynamic-bucket.target-row-num": "5"})
    data = pa.concat_tables([rows(range(60)), rows(range(0, 60, 3), v="again")])
    batch = data.combine_chunks().to_batches()[0]
    channel, key_hash = _core.assigner_channels(t._core, batch, 2)
    results = []
    for seed in range(3):
        order = sorted(range(batch.num_rows), key=lambda i: (key_hash[i].as_py(), random.Random(seed).random()))
        sorted_batch = batch.take(pa.array(order))
        sorted_channel = channel.take(pa.array(order))
        assigned = {}
        for task_id in range(2):
            task = _core.DynamicAssignTask(t._core, 2, task_id, None)
            mine = sorted_batch.filter(pc.equal(sorted_channel, task_id))
            step = 7 + seed  # batching differs too
            for off in range(0, mine.num_rows, step):
                part = mine.slice(off, step)
                for r, b in zip(part.to_pylist(), task.assign(part).to_pylist()):
                    assert assigned.setdefault((r["dt"], r["id"]), b) == b
                    assert b % 2 == task_id
        results.append(assigned)
    assert results[0] == results[1] == results[2]


@pytest.mark.parametrize("cross", [False, True])
def test_data_source_writes_a_distributed_dynamic_frame(registered, catalog, cross):
    """``distribute`` runs the assign stage for a dynamic-bucket (and cross-partition) table; the
    Data Source writes its frame (the writers restore the pinned snapshot and write the hash
    index): the table equals the model, no key in two buckets (or partitions), a later
    ``spark.write`` continues the index."""
    spark = registered
    pk = ["id"] if cross else ["dt", "id"]
    t = create(catalog, f"db.dyndist{int(cross)}", SCHEMA, ["dt"], pk, bucket="-1",
               **{"rowkind.field": "op", "dynamic-bucket.target-row-num": "25",
                  "dynamic-bucket.assigner-parallelism": "2"})
    assert dynamic.is_dynamic(t)
    model_d: Dict[Tuple[str, int], str] = {}
    model_c: Dict[int, Tuple[str, str]] = {}

    def save(data: pa.Table) -> None:
        framed = ps.distribute(to_spark(spark, data).repartition(3), t)
        assert dynamic.BUCKET_COLUMN in framed.columns
        framed.write.format("paimon_rs").mode("append").save(t.table_path)
        apply_cross(model_c, data) if cross else apply(model_d, data)

    def verify() -> None:
        check_cross(t, model_c, 25) if cross else check(t, model_d, 25)

    save(rows(range(200)))
    verify()
    # updates, deletes, new keys; into the cross table also keys moving to a partition "c" (their
    # old rows deleted by the assign stage's -D, written by another task's bucket writer)
    moved = [cross_rows(range(100, 130), "c", v="m", op="+U")] if cross else []
    save(pa.concat_tables([rows(range(1, 60, 2), v="u", op="+U"), rows(range(60, 80), op="-D"),
                           rows(range(200, 320), v="n"), *moved]))
    verify()
    if cross:
        assert all(model_c[k][0] == "c" for k in range(100, 130))
    last = rows(range(0, 320, 9), v="w", op="+U")
    ps.write(to_spark(spark, last), t)
    apply_cross(model_c, last) if cross else apply(model_d, last)
    verify()
    assert t.latest_snapshot_id() == 3
    assert data_files(t) >= live_files(t) and not orphans(t)


def test_data_source_refuses_dynamic_frames_it_cannot_write_up_front(registered, catalog, tmp_path):
    """Into a dynamic-bucket table the Data Source takes only ``distribute``'s frame, appended:
    any other frame (and overwrite) is refused in ``writer()``, before a task wrote a file; a
    union of two distributed frames at commit, nothing committed and no file left; a stream
    (``distribute`` and the sink) is refused, naming foreachBatch."""
    spark = registered
    t = create(catalog, "db.dynrefuse", SCHEMA, ["dt"], ["dt", "id"], bucket="-1")
    df = to_spark(spark, rows(range(50))).repartition(2)
    with pytest.raises(Exception, match=r"db.dynrefuse.*paimon_rs.spark.distribute\(df, table\)"):
        df.write.format("paimon_rs").mode("append").save(t.table_path)
    with pytest.raises(Exception, match=r"mode\('overwrite'\) is not supported.*overwrite=True"):
        ps.distribute(df, t).write.format("paimon_rs").mode("overwrite").save(t.table_path)
    assert t.latest_snapshot_id() is None and not data_files(t)

    union = ps.distribute(to_spark(spark, rows(range(0, 50))), t, num_tasks=2).union(
        ps.distribute(to_spark(spark, rows(range(50, 100))), t, num_tasks=2))
    with pytest.raises(Exception, match="distribute calls"):
        union.write.format("paimon_rs").mode("append").save(t.table_path)
    assert t.latest_snapshot_id() is None and not data_files(t) and not index_dir_files(t)

    # a frame distributed for another table: its buckets and snapshot belong there
    other = create(catalog, "db.dynrefuse_other", SCHEMA, ["dt"], ["dt", "id"], bucket="-1")
    with pytest.raises(Exception, match="distribute for another table"):
        ps.distribute(df, other, num_tasks=2).write.format("paimon_rs").mode("append").save(t.table_path)
    assert t.latest_snapshot_id() is None and not data_files(t) and not index_dir_files(t)

    src = tmp_path / "src"
    src.mkdir()
    pq.write_table(rows(range(5)), src / "part-0.parquet")
    stream = spark.readStream.schema(to_spark(spark, rows(range(1))).schema).parquet(str(src))
    with pytest.raises(UnsupportedError, match="foreachBatch"):
        ps.distribute(stream, t)
    q = (stream.writeStream.format("paimon_rs").option("checkpointLocation", str(tmp_path / "ck"))
         .trigger(availableNow=True).start(t.table_path))
    with pytest.raises(Exception, match=r"db.dynrefuse.*foreachBatch"):
        q.awaitTermination(120)
    assert t.latest_snapshot_id() is None and not data_files(t)


@pytest.mark.parametrize("cross", [False, True])
def test_foreach_batch_write_is_exactly_once_for_a_replayed_batch(spark, catalog, tmp_path, cross):
    """A stream into a dynamic-bucket (or cross-partition) table through ``foreachBatch`` calling
    ``spark.write`` with a commit user and the batch id as commit identifier: one snapshot per
    micro-batch; a batch Spark runs again after a restart (its commit not recorded in the
    checkpoint) lands nothing and leaves no file."""
    pk = ["id"] if cross else ["dt", "id"]
    t = create(catalog, f"db.dynstream{int(cross)}", SCHEMA, ["dt"], pk, bucket="-1",
               **{"rowkind.field": "op", "dynamic-bucket.target-row-num": "20"})
    batches = [rows(range(0, 60)), pa.concat_tables([rows(range(0, 30), v="u", op="+U"), rows(range(60, 90))]),
               pa.concat_tables([rows(range(30, 40), op="-D"), rows(range(90, 130), v="z")])]
    src = tmp_path / "src"
    src.mkdir()
    base = time.time() - 100
    for i, b in enumerate(batches):
        f = src / f"part-{i:03d}.parquet"
        pq.write_table(b, f)
        os.utime(f, (base + 10 * i, base + 10 * i))  # Spark's file source: modification-time order
    ckpt = tmp_path / "ckpt"

    def run() -> None:
        df = spark.readStream.schema(to_spark(spark, rows(range(1))).schema).option("maxFilesPerTrigger", 1) \
            .parquet(str(src))
        q = (df.writeStream.foreachBatch(lambda batch, batch_id: ps.write(batch, t, commit_user="etl-dyn",
                                                                          commit_identifier=batch_id))
             .option("checkpointLocation", str(ckpt)).trigger(availableNow=True).start())
        q.awaitTermination(180)
        assert q.exception() is None

    run()
    model_d: Dict[Tuple[str, int], str] = {}
    model_c: Dict[int, Tuple[str, str]] = {}
    for b in batches:
        apply_cross(model_c, b) if cross else apply(model_d, b)

    def verify() -> None:
        check_cross(t, model_c, 20) if cross else check(t, model_d, 20)

    verify()
    assert t.latest_snapshot_id() == 3
    snaps = [json.loads(p.read_text()) for p in sorted(Path(t.table_path, "snapshot").glob("snapshot-*"))]
    assert [(s["commitUser"], s["commitIdentifier"]) for s in snaps] == [("etl-dyn", 0), ("etl-dyn", 1),
                                                                         ("etl-dyn", 2)]
    for name in ("2", ".2.crc"):
        os.remove(ckpt / "commits" / name)
    files = sorted(p.name for p in Path(t.table_path).rglob("*") if p.is_file() and "snapshot" not in p.parts)
    run()
    assert t.latest_snapshot_id() == 3
    after = sorted(p.name for p in Path(t.table_path).rglob("*") if p.is_file() and "snapshot" not in p.parts)
    assert after == files  # the replay's data and index files deleted, no other
    verify()


def cross_rows(ids, dt, v="v", op="+I"):
    ids = list(ids)
    return pa.table({"dt": [dt] * len(ids), "id": ids, "v": [f"{v}{i}" for i in ids], "op": [op] * len(ids)},
                    schema=SCHEMA)


def apply_cross(model: Dict[int, Tuple[str, str]], t: pa.Table) -> None:
    for r in t.to_pylist():
        if r["op"] in ("+I", "+U"):
            model[r["id"]] = (r["dt"], r["v"])
        else:
            model.pop(r["id"], None)


def check_cross(table, model: Dict[int, Tuple[str, str]], target: int) -> Dict[Tuple[str, int], int]:
    """The table equals the model, no key is in two partitions or buckets, buckets hold the target
    at most, and no hash index files (cross-partition tables keep none)."""
    got = by_bucket(table)
    keys = Counter(k for m in got.values() for k in m)
    assert all(n == 1 for n in keys.values()), [k for k, n in keys.items() if n > 1]
    assert {k: (dt, v) for (dt, _), m in got.items() for k, v in m.items()} == model
    assert all(len(m) <= target for m in got.values()), {b: len(m) for b, m in got.items()}
    assert not [r for r in _core.index_files(table._core) if r[2] == "HASH"]
    return {b: len(m) for b, m in got.items()}


@pytest.mark.parametrize("assigners", ["1", "3"])
def test_spark_writes_a_cross_partition_table_like_the_model(spark, catalog, assigners):
    """A cross-partition upsert table (primary key ``id`` without the partition ``dt``) from Spark: the
    assign tasks (by key hash) hold the key index of the pinned snapshot, spilled to disk past a tiny
    ``lookup.cache-max-memory-size``; keys move partitions over two Spark writes (their old row
    deleted), deletes find the key's partition, new keys fill buckets; the table equals the dict
    model, no key twice; a local write continues; INSERT OVERWRITE is refused."""
    target = 30
    t = create(catalog, f"db.dyncross{assigners}", SCHEMA, ["dt"], ["id"], bucket="-1",
               **{"rowkind.field": "op", "dynamic-bucket.target-row-num": str(target),
                  "dynamic-bucket.assigner-parallelism": assigners, "lookup.cache-max-memory-size": "2 kb"})
    model: Dict[int, Tuple[str, str]] = {}
    first = pa.concat_tables([cross_rows(range(0, 150), "a"), cross_rows(range(150, 300), "b")])
    assert ps.write(to_spark(spark, first).repartition(3), t) == 1
    apply_cross(model, first)
    got = check_cross(t, model, target)
    if assigners == "3":
        assert {b % 3 for (_, b) in got} == {0, 1, 2}  # each assigner opened buckets of its own

    # 0..100 move a -> c, 150..170 move b -> a, 120..140 deleted (in a, the row says b), new keys
    second = pa.concat_tables([cross_rows(range(0, 100), "c", v="m", op="+U"),
                               cross_rows(range(150, 170), "a", v="back", op="+U"),
                               cross_rows(range(120, 140), "b", op="-D"),
                               cross_rows(range(300, 400), "b", v="n")])
    assert ps.write(to_spark(spark, second).repartition(4), t) == 2
    apply_cross(model, second)
    check_cross(t, model, target)
    assert not [k for k, (dt, _) in model.items() if k < 100 and dt != "c"]

    # moved again, from Spark, then a local write
    third = cross_rows(range(0, 400, 5), "d", v="again")
    assert ps.write(to_spark(spark, third), t) == 3
    apply_cross(model, third)
    check_cross(t, model, target)
    w = t.new_batch_write_builder()
    tw = w.new_write()
    fourth = cross_rows(range(0, 400, 7), "a", v="l", op="+U")
    tw.write_arrow(fourth)
    w.new_commit().commit(tw.prepare_commit())
    tw.close()
    apply_cross(model, fourth)
    check_cross(t, model, target)
    assert data_files(t) >= live_files(t) and not orphans(t)

    with pytest.raises(UnsupportedError, match="OVERWRITE of a cross-partition"):
        ps.write(to_spark(spark, cross_rows(range(3), "a")), t, overwrite=True)
    with pytest.raises(UnsupportedError, match="cross-partition"):
        _core.DynamicAssignTask(t._core, 1, 0, None)
    check_cross(t, model, target)


def test_failed_writer_attempts_of_a_cross_partition_write_commit_once(spark, catalog, tmp_path):
    """Every writer task's first attempt writes its rows (the -D of moved keys included), then fails;
    the retries commit once: moved keys are in their new partition only, and no file of the failed
    attempts is left."""
    t = create(catalog, "db.crossretry", SCHEMA, ["dt"], ["id"], bucket="-1",
               **{"dynamic-bucket.target-row-num": "30", "lookup.cache-max-memory-size": "1 kb"})
    model: Dict[int, Tuple[str, str]] = {}
    first = cross_rows(range(100), "a")
    ps.write(to_spark(spark, first), t)
    apply_cross(model, first)
    marker = tmp_path / "fail-first-attempt"
    marker.write_text("1")
    second = pa.concat_tables([cross_rows(range(0, 100, 2), "b", v="m"), cross_rows(range(100, 130), "b")])
    ps.write(to_spark(spark, second), t, num_tasks=3, _fail_first_attempt_marker=str(marker))
    apply_cross(model, second)
    check_cross(t, model, 30)
    assert data_files(t) == live_files(t) and not orphans(t)


def test_cross_partition_assign_tasks_route_alike_whatever_the_order_of_equal_hashes(catalog):
    """A cross-partition assign task's input sorted by (key hash, key, partition): any order of rows
    that agree on those (and any batching) routes every row alike, so a retried assign task agrees with
    the writers that read its first attempt's output; each task opens only its own buckets and
    refuses a key of another task."""
    t = create(catalog, "db.crossorder", SCHEMA, ["dt"], ["id"], bucket="-1",
               **{"dynamic-bucket.target-row-num": "5", "lookup.cache-max-memory-size": "1 kb"})
    data = pa.concat_tables([cross_rows(range(60), "a"), cross_rows(range(0, 60, 3), "b", v="again")])
    batch = data.combine_chunks().to_batches()[0]
    channel, key_hash = _core.cross_partition_channels(t._core, batch, 2)
    results = []
    for seed in range(3):
        order = sorted(range(batch.num_rows),
                       key=lambda i: (key_hash[i].as_py(), batch.column(1)[i].as_py(), batch.column(0)[i].as_py(),
                                      random.Random(seed).random()))
        sorted_batch = batch.take(pa.array(order))
        sorted_channel = channel.take(pa.array(order))
        routed = []
        for task_id in range(2):
            task = _core.CrossPartitionAssignTask(t._core, 2, task_id, None)
            mine = sorted_batch.filter(pc.equal(sorted_channel, task_id))
            step = 7 + seed  # batching differs too
            for off in range(0, mine.num_rows, step):
                out = task.assign(mine.slice(off, step))
                assert out is not None
                rows_out, kinds, buckets = out
                for r, k, b in zip(rows_out.to_pylist(), kinds.to_pylist(), buckets.to_pylist()):
                    assert b % 2 == task_id
                    routed.append((r["dt"], r["id"], r["v"], k, b))
            task.close()
        results.append(sorted(routed))
    assert results[0] == results[1] == results[2]
    # the keys of partition b moved: a -D in a for each
    deletes = [r for r in results[0] if r[3] == 3]
    assert sorted(r[1] for r in deletes) == list(range(0, 60, 3)) and all(r[0] == "a" for r in deletes)
    other = _core.CrossPartitionAssignTask(t._core, 2, 0, None)
    wrong = batch.filter(pc.equal(channel, 1)).slice(0, 1)
    with pytest.raises(Exception, match="assigner 0 of 2"):
        other.assign(wrong)


def test_spark_overwrite_of_a_dynamic_bucket_table_drops_the_old_index(spark, catalog):
    """INSERT OVERWRITE from Spark: the assign stage starts from no index, the commit drops the
    replaced partitions' hash index, so old keys no longer in the data pin no bucket."""
    t = create(catalog, "db.dynow", SCHEMA, ["dt"], ["dt", "id"], bucket="-1",
               **{"dynamic-bucket.target-row-num": "20"})
    ps.write(to_spark(spark, rows(range(200))), t)
    ps.write(to_spark(spark, rows(range(1000, 1010), v="o")), t, overwrite=True)  # a and b
    model: Dict[Tuple[str, int], str] = {}
    apply(model, rows(range(1000, 1010), v="o"))
    got = check(t, model, 20)
    assert sum(r[5] for r in _core.index_files(t._core) if r[2] == "HASH") == 10
    assert len(got) <= 2 * 2  # a few buckets per partition, not the old 5 + 5
    ps.write(to_spark(spark, rows(range(0, 80, 2), v="back")), t, overwrite={"dt": "a"})  # even ids: a
    model = {k: v for k, v in model.items() if k[0] != "a"}
    apply(model, rows(range(0, 80, 2), v="back"))
    check(t, model, 20)
    assert sum(r[5] for r in _core.index_files(t._core) if r[2] == "HASH" and r[0] == "{a}") == 40
    assert not orphans(t)


@pytest.mark.parametrize("strategy,order_by", [
    ("order", ["v"]),
    # the z-order curve itself is checked locally (test_sort_compact*); on Spark under -m long
    pytest.param("zorder", ["id", "v"], marks=pytest.mark.long),
])
def test_spark_sort_compact_of_a_dynamic_bucket_table(spark, catalog, tmp_path, strategy, order_by):
    """Spark's sort compaction of a dynamic-bucket table: the merged rows range-partitioned and
    sorted, each task assigning fresh buckets of its own (``b % n == task``) in sort order, every
    first task attempt failing after writing (the retries commit, once): one OVERWRITE snapshot,
    the table equals the model, no key in two buckets, one fresh hash index file per bucket, each
    bucket one stretch of the sort order, no file of the failed attempts left; a Spark write and a
    local write afterwards continue the new index."""
    target = 30
    t = create(catalog, f"db.dynsort{strategy}", SCHEMA, ["dt"], ["dt", "id"], bucket="-1",
               **{"rowkind.field": "op", "dynamic-bucket.target-row-num": str(target),
                  "dynamic-bucket.assigner-parallelism": "2"})
    model: Dict[Tuple[str, int], str] = {}
    rng = random.Random(7)
    for k in range(3):
        ids = rng.sample(range(400), 200)
        vs = [f"{rng.randrange(1000):03d}-{k}" for _ in ids]
        data = pa.table({"dt": [DTS[i % 2] for i in ids], "id": ids, "v": vs, "op": ["+I"] * len(ids)}, schema=SCHEMA)
        ps.write(to_spark(spark, data), t)
        apply(model, data)
    deletes = rows(range(0, 400, 11), op="-D")
    ps.write(to_spark(spark, deletes), t)
    apply(model, deletes)
    before = t.latest_snapshot_id()
    marker = tmp_path / "fail-first-attempt"
    marker.write_text("1")
    n = 3
    sid = ps.sort_compact(spark, t, strategy, order_by, num_partitions=n, _fail_first_attempt_marker=str(marker))
    assert sid == before + 1
    snap = json.loads(Path(t.table_path, "snapshot", f"snapshot-{sid}").read_text())
    assert snap["commitKind"] == "OVERWRITE"
    got = check(t, model, target)
    # every bucket is one stretch of the sort order: per partition, their key ranges do not overlap
    rb = t.new_read_builder()
    ranges: Dict[str, list] = {}
    for split in rb.new_scan().plan().splits():
        b = rb.new_read().to_arrow([split]).select(SCHEMA.names).combine_chunks().to_batches()[0]
        keys = sorted(t._core.sort_index(strategy, order_by, b))
        dt = b.column(0)[0].as_py()
        ranges.setdefault(dt, []).append((keys[0], keys[-1], split.bucket))
    for dt, rs in ranges.items():
        rs.sort()
        assert all(a[1] <= b[0] for a, b in zip(rs, rs[1:])), (dt, rs)
        # range task i owns buckets i, i + n, ...: in sort order the tasks come one after the
        # other, and each task's buckets count up
        owners = [(b % n, b) for (_, _, b) in rs]
        assert owners == sorted(owners), (dt, owners)
    assert len(got) >= len(model) // target
    files = index_dir_files(t)
    live_index = {r[3] for r in _core.index_files(t._core)}
    assert live_index <= files and not orphans(t)
    assert all("-a1-" in f for f in live_index)
    marker.unlink()
    # a Spark write and a local one continue the fresh index
    more = pa.concat_tables([rows(range(0, 400, 3), v="u", op="+U"), rows(range(400, 480), v="n")])
    ps.write(to_spark(spark, more), t)
    apply(model, more)
    check(t, model, target)
    w = t.new_batch_write_builder()
    tw = w.new_write()
    last = rows(range(0, 480, 5), v="l", op="+U")
    tw.write_arrow(last)
    w.new_commit().commit(tw.prepare_commit())
    tw.close()
    apply(model, last)
    check(t, model, target)


def failing_first_source(marker: str):
    """A ``paimon_rs`` Data Source whose writer tasks' first attempts fail after writing their
    files (defined here so that Spark pickles it by value)."""
    from paimon_rs.spark.source import PaimonRsDataSource

    class FailFirst(PaimonRsDataSource):
        @classmethod
        def name(cls) -> str:
            return "paimon_rs_fail_first"

        def writer(self, schema, overwrite):
            w = super().writer(schema, overwrite)
            w.fail_first_attempt_marker = marker
            return w

    return FailFirst


@pytest.mark.parametrize("cross", [False, True])
def test_data_source_write_of_a_distributed_frame_is_exactly_once_under_retries(registered, catalog, tmp_path, cross):
    """Every Data Source writer task's first attempt writes its data and hash index files (and a
    cross-partition table's -D of moved keys), then fails; Spark runs it again and the commit takes
    the messages Spark passes (one attempt per task): the table equals the model, no key in two
    buckets or partitions, and none of the failed attempts' data or index files is left."""
    spark = registered
    pk = ["id"] if cross else ["dt", "id"]
    t = create(catalog, f"db.dsretry{int(cross)}", SCHEMA, ["dt"], pk, bucket="-1",
               **{"rowkind.field": "op", "dynamic-bucket.target-row-num": "20",
                  "dynamic-bucket.assigner-parallelism": "2"})
    model_d: Dict[Tuple[str, int], str] = {}
    model_c: Dict[int, Tuple[str, str]] = {}
    first = rows(range(120))
    ps.write(to_spark(spark, first), t)
    apply_cross(model_c, first) if cross else apply(model_d, first)
    marker = tmp_path / "fail-first-attempt"
    marker.write_text("1")
    spark.dataSource.register(failing_first_source(str(marker)))
    before, index_before = data_files(t), index_dir_files(t)
    moved = [cross_rows(range(0, 40, 2), "c", v="m", op="+U")] if cross else []
    second = pa.concat_tables([rows(range(1, 60, 2), v="u", op="+U"), rows(range(60, 70), op="-D"),
                               rows(range(120, 200), v="n"), *moved])
    ps.distribute(to_spark(spark, second).repartition(3), t, num_tasks=3) \
        .write.format("paimon_rs_fail_first").mode("append").save(t.table_path)
    apply_cross(model_c, second) if cross else apply(model_d, second)
    assert t.latest_snapshot_id() == 2
    check_cross(t, model_c, 20) if cross else check(t, model_d, 20)
    written = [os.path.basename(f) for f in data_files(t) - before]
    assert written and all("-a1-" in f for f in written), written
    assert data_files(t) >= live_files(t) and not orphans(t)
    if not cross:
        files = index_dir_files(t)
        assert files == {r[3] for r in _core.index_files(t._core)} | index_before
        assert all("-a1-" in f for f in files - index_before), files


@pytest.mark.parametrize("bucket", ["-1", "2"])
def test_a_late_speculative_attempt_of_a_data_source_write_leaves_no_file(registered, catalog, monkeypatch, bucket):
    """A speculative attempt still running when the Data Source's ``commit`` ran (the Data Source's
    commit has no SparkContext to wait with, as ``spark.write`` does): driven here in-process,
    task 0 commits through the writer's ``commit`` with the message Spark would pass, then a
    second attempt of task 0 writes the same rows. The commit wrote the write's ended marker
    before its sweep; the late attempt finds it after writing its files, deletes them (data and,
    dynamic, its hash index file) and returns no message: the table is as committed and no orphan
    is left. ``remove_orphan_files`` deletes the marker (unreferenced in ``index/``, as Java's
    OrphanFilesClean would). Without the marker the attempt's files stayed as orphans."""
    from paimon_rs.spark import sink, writer
    from paimon_rs.spark.source import PaimonRsDataSource

    spark = registered
    t = create(catalog, f"db.dslate{bucket.replace('-', 'm')}", SCHEMA, ["dt"], ["dt", "id"], bucket=bucket,
               **{"dynamic-bucket.target-row-num": "20"})
    data = rows(range(50))
    framed = ps.distribute(to_spark(spark, data), t, num_tasks=1)
    batches = framed.toArrow().to_batches()
    src = PaimonRsDataSource({"path": t.table_path})
    w = src.writer(framed.schema, False)
    won = w.write(iter(batches))
    w.commit([won])
    model: Dict[Tuple[str, int], str] = {}
    apply(model, data)

    def same() -> None:
        if bucket == "-1":
            check(t, model, 20)
        else:
            assert {(dt, k): v for (dt, _), m in by_bucket(t).items() for k, v in m.items()} == model

    same()
    committed_data, committed_index = data_files(t), index_dir_files(t)
    for m in (sink, writer):
        monkeypatch.setattr(m, "_task_context", lambda: (0, 1, 77))
    late = w.write(iter(batches))
    assert not late.messages and t.latest_snapshot_id() == 1
    same()
    assert data_files(t) == committed_data and index_dir_files(t) == committed_index
    assert not orphans(t)
    markers = {f for f in os.listdir(os.path.join(t.table_path, "index")) if f.endswith("-ended")}
    assert len(markers) == 1, markers
    import datetime
    removed = t.remove_orphan_files(older_than=datetime.timedelta(0))
    assert {os.path.basename(str(f)) for f in removed.files} == markers
    assert data_files(t) == committed_data and index_dir_files(t) == committed_index
    same()


def save_distributed(spark, t, data: pa.Table) -> None:
    """``data`` through ``distribute`` and the Data Source (two writer tasks)."""
    ps.distribute(to_spark(spark, data), t, num_tasks=2).write.format("paimon_rs").mode("append") \
        .save(t.table_path)


@pytest.mark.parametrize("between", ["new-keys", "overwrite"])
def test_a_commit_between_distribute_and_save_of_a_dynamic_table_conflicts(registered, catalog, between):
    """``distribute`` pins snapshot S; another writer commits into the table before ``save``: new
    keys into a partition the save also adds keys to (both assigned buckets from S's index), or
    an INSERT OVERWRITE of a partition whose known keys the save only updates (the overwrite gave
    them new buckets; the save adds no key, so only the overwrite check sees it). The save fails
    with a commit conflict naming the table: nothing committed, no file left, the other writer's
    rows intact, no key in two buckets. A save whose keys the other commit does not touch (another
    partition) commits."""
    spark = registered
    t = create(catalog, f"db.dynbetween_{between.replace('-', '')}", SCHEMA, ["dt"], ["dt", "id"], bucket="-1",
               **{"rowkind.field": "op", "dynamic-bucket.target-row-num": "10"})
    model: Dict[Tuple[str, int], str] = {}
    first = rows(range(60))
    ps.write(to_spark(spark, first), t)
    apply(model, first)
    if between == "new-keys":
        ours = rows(range(60, 100, 2), v="ours")  # new keys of partition a
        other = rows(range(200, 240, 2), v="other")  # new keys of a, from another writer
        framed = ps.distribute(to_spark(spark, ours), t, num_tasks=2)
        table_writes.write(t, other)
        apply(model, other)
    else:
        ours = rows(range(0, 60, 2), v="ours", op="+U")  # known keys of a only: no new hash index
        other = rows(range(100, 160, 2), v="over")
        framed = ps.distribute(to_spark(spark, ours), t, num_tasks=2)
        table_writes.write(t, other, {"dt": "a"})
        model = {k: v for k, v in model.items() if k[0] != "a"}
        apply(model, other)
    latest = t.latest_snapshot_id()
    files = data_files(t)
    with pytest.raises(Exception, match=r"CommitConflictError.*dynbetween.*partition 'dt=a'") as e:
        framed.write.format("paimon_rs").mode("append").save(t.table_path)
    assert ("overwritten by snapshot" if between == "overwrite" else "hash index of partition") in str(e.value)
    assert t.latest_snapshot_id() == latest and data_files(t) == files
    check(t, model, 10)
    # keys of partition b only: the other commit changed nothing the save relied on
    theirs = rows(range(1, 60, 2), v="b", op="+U")
    save_distributed(spark, t, theirs)
    apply(model, theirs)
    check(t, model, 10)
    assert not orphans(t)


def cross_table_with_keys_in_a(spark, catalog, name: str, n: int):
    """A cross-partition table (2 assigners, 10 rows a bucket) holding keys ``0..n`` in partition
    a, written by Spark; and its model."""
    t = create(catalog, name, SCHEMA, ["dt"], ["id"], bucket="-1",
               **{"dynamic-bucket.target-row-num": "10", "dynamic-bucket.assigner-parallelism": "2"})
    model: Dict[int, Tuple[str, str]] = {}
    first = cross_rows(range(n), "a")
    ps.write(to_spark(spark, first), t)
    apply_cross(model, first)
    return t, model


def test_a_commit_between_distribute_and_save_of_a_cross_partition_table_conflicts(registered, catalog):
    """A cross-partition table: ``distribute``'s assign tasks route keys by the key index of S (a
    key's -D into its partition in S); another writer commits before ``save`` (here: new keys the
    save adds too, into another partition: S's key index does not know them). The save fails with a
    commit conflict naming the table (the key index check: any data commit of another user after
    S), nothing committed, no file left, no key in two partitions; distributed again, it lands."""
    spark = registered
    t, model = cross_table_with_keys_in_a(spark, catalog, "db.crossbetween", 50)
    ours = pa.concat_tables([cross_rows(range(0, 50, 2), "b", v="ours"), cross_rows(range(100, 110), "b")])
    framed = ps.distribute(to_spark(spark, ours), t, num_tasks=2)
    other = cross_rows(range(100, 110), "c", v="other")
    table_writes.write(t, other)
    apply_cross(model, other)
    latest = t.latest_snapshot_id()
    files = data_files(t)
    with pytest.raises(Exception, match=r"CommitConflictError.*crossbetween.*key index"):
        framed.write.format("paimon_rs").mode("append").save(t.table_path)
    assert t.latest_snapshot_id() == latest and data_files(t) == files
    check_cross(t, model, 10)
    # distributed again, after the other commit: lands
    save_distributed(spark, t, ours)
    apply_cross(model, ours)
    check_cross(t, model, 10)
    assert not orphans(t)


def test_a_distributed_frame_changed_before_save_is_refused(registered, catalog):
    """Rows dropped or duplicated between ``distribute`` and ``save`` are refused at commit (each
    assign task's count row against the rows the writers received): a filter dropping a
    cross-partition table's -D rows (which would leave the moved keys in two partitions), a filter
    that also drops the count rows, a limit, a union of a frame with itself. Nothing is committed,
    no file is left; the frame saved as it is lands."""
    from pyspark.sql import functions as F

    spark = registered
    t, model = cross_table_with_keys_in_a(spark, catalog, "db.tamper", 40)
    moved = cross_rows(range(0, 40, 2), "b", v="m")
    framed = ps.distribute(to_spark(spark, moved), t, num_tasks=3)
    assert framed.where(F.col(dynamic.ROW_KIND_COLUMN) == 3).count() == 20  # the -D of each moved key in a
    files = data_files(t)
    changed = {
        "without the -D rows": framed.where(F.col(dynamic.ROW_KIND_COLUMN).isNull()
                                            | (F.col(dynamic.ROW_KIND_COLUMN) != 3)),
        "filtered on a column": framed.where("dt = 'b'"),
        "limited": framed.limit(25),
        "twice": framed.union(framed),
    }
    for what, df in changed.items():
        with pytest.raises(Exception, match=r"tamper.*changed before it was saved.*assign task") as e:
            df.write.format("paimon_rs").mode("append").save(t.table_path)
        assert "Nothing was committed" in str(e.value), what
        assert t.latest_snapshot_id() == 1 and data_files(t) == files, what
    check_cross(t, model, 10)
    framed.write.format("paimon_rs").mode("append").save(t.table_path)
    apply_cross(model, moved)
    check_cross(t, model, 10)
    assert not orphans(t)


def test_assign_stage_errors_name_the_call_the_user_made(registered, catalog, monkeypatch):
    """An error of an assign task names the call that planned its stage: ``paimon_rs.spark.write``,
    or for ``distribute`` (the stage runs when its frame is saved) ``paimon_rs.spark.distribute``,
    not ``write``. Driven in-process: a key of assign task 1 given to task 0."""
    import re

    spark = registered
    t = create(catalog, "db.dynerr", SCHEMA, ["dt"], ["dt", "id"], bucket="-1")
    batch = rows(range(40)).combine_chunks().to_batches()[0]
    channel, _ = _core.assigner_channels(t._core, batch, 2)
    wrong = batch.filter(pc.equal(channel, 1))
    seen = []
    orig = dynamic.assigned_frame

    def spy(*args, **kwargs):
        seen.append(args[5] if len(args) > 5 else kwargs.get("what", "paimon_rs.spark.write"))
        return orig(*args, **kwargs)

    monkeypatch.setattr(dynamic, "assigned_frame", spy)
    ps.distribute(to_spark(spark, rows(range(5))), t)
    assert seen == ["paimon_rs.spark.distribute (saved with format('paimon_rs'))"]
    for what in ("paimon_rs.spark.write", seen[0]):
        spec = dynamic._AssignSpec(table=t, columns=list(SCHEMA.names), num_assigners=2, identity_keys=[0, 1],
                                   snapshot_id=None, what=what)
        with pytest.raises(Exception, match=re.escape(f"{what} into db.dynerr: dynamic bucket assigner 0 of 2")):
            list(dynamic._assign_task(spec, iter([wrong])))


def test_the_ended_marker_lives_in_index():
    """The ended marker of a Data Source write is ``index/write-<write>-ended`` under a local (or
    ``file://``) table and an object store's alike, and matches no sweep prefix of the write
    (``test_spark_s3.py`` runs the sweep and the marker on a store)."""
    from types import SimpleNamespace

    from paimon_rs.spark.commit import _changelog_prefix, _ended_marker, _index_prefix

    local = SimpleNamespace(table_path="/wh/db.db/t", options={})
    marker = _ended_marker(local, "data-abc-")
    assert marker == "/wh/db.db/t/index/write-abc-ended"
    name = os.path.basename(marker)
    assert not name.startswith(("data-abc-", _index_prefix(local, "data-abc-"), _changelog_prefix(local, "data-abc-")))
    file_url = SimpleNamespace(table_path="file:///wh/t", options={})
    assert _ended_marker(file_url, "data-x-") == "/wh/t/index/write-x-ended"
    assert _ended_marker(SimpleNamespace(table_path="s3://bucket/wh/t", options={}), "data-x-") == \
        "s3://bucket/wh/t/index/write-x-ended"
