"""paimon_rs.spark.sort_compact in local[2,4]: the sort key per row, Spark's repartitionByRange and
sortWithinPartitions over it, tasks writing in that order, one OVERWRITE snapshot removing
exactly the planned files; exactly once under task retries."""

import os
import random
from collections import Counter

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import paimon_rs.spark as ps
from paimon_rs import CatalogFactory
from paimon_rs.exceptions import InvalidArgumentError, UnsupportedError

from spark_helpers import create, data_files, live_files, orphans, plain_read

SCHEMA = pa.schema([pa.field("dt", pa.string(), nullable=False), pa.field("x", pa.int64()),
                    pa.field("y", pa.int32()), pa.field("s", pa.string())])


@pytest.fixture
def catalog(tmp_path):
    return CatalogFactory.create({"warehouse": str(tmp_path / "wh")})


def rows(n: int, seed: int) -> pa.Table:
    r = random.Random(seed)
    return pa.table({"dt": [r.choice(["a", "b"]) for _ in range(n)], "x": [r.randrange(1000) for _ in range(n)],
                     "y": [r.randrange(-500, 500) if r.random() > 0.05 else None for _ in range(n)],
                     "s": [f"s{r.randrange(50)}" for _ in range(n)]}, schema=SCHEMA)


def table_with_rows(catalog, name: str):
    t = create(catalog, f"db.{name}", SCHEMA, ["dt"], [], bucket="-1", **{"target-file-size": "8kb"})
    model: Counter = Counter()
    for seed in range(3):
        data = rows(4000, seed)
        w = t.new_batch_write_builder()
        tw, tc = w.new_write(), w.new_commit()
        tw.write_arrow(data)
        tc.commit(tw.prepare_commit())
        tw.close()
        tc.close()
        model.update(tuple(r.values()) for r in data.to_pylist())
    return t, model


def multiset(t: pa.Table) -> Counter:
    return Counter(tuple(r.values()) for r in t.to_pylist())


def file_keys(t, strategy, cols, path):
    import pyarrow.parquet as pq
    b = pq.read_table(path).combine_chunks().to_batches()
    return [k for x in b for k in t._core.sort_index(strategy, cols, x.select(SCHEMA.names))]


@pytest.mark.parametrize("strategy", ["zorder", "hilbert", "order"])
def test_sort_compact_on_spark(spark, catalog, strategy):
    t, model = table_with_rows(catalog, f"s_{strategy}")
    before = live_files(t)
    sid = ps.sort_compact(spark, t, strategy, ["x", "y"], num_partitions=3)
    assert sid is not None
    assert t.snapshot_manager().get_snapshot_by_id(sid).commit_kind == "OVERWRITE"
    assert multiset(plain_read(t)) == model
    after = live_files(t)
    assert not before & after
    assert not orphans(t) - before  # no file of the job left behind
    # each file sorted by the curve; within a partition the files are disjoint stretches of it
    by_part = {}
    for f in after:
        keys = file_keys(t, strategy, ["x", "y"], f)
        assert keys == sorted(keys)
        by_part.setdefault(os.path.basename(os.path.dirname(os.path.dirname(f))), []).append((keys[0], keys[-1]))
    for ranges in by_part.values():
        ranges.sort()
        for a, b in zip(ranges, ranges[1:]):
            assert a[1] <= b[0]


def test_sort_compact_exactly_once_under_task_retries(spark, catalog, tmp_path):
    t, model = table_with_rows(catalog, "retry")
    b_before = {f for f in live_files(t) if "/dt=b/" in f}
    marker = tmp_path / "fail-first"
    marker.write_text("x")
    sid = ps.sort_compact(spark, t, "zorder", ["x", "y"], partitions=[{"dt": "a"}],
                          _fail_first_attempt_marker=str(marker))
    assert sid is not None
    assert multiset(plain_read(t)) == model
    # the failed first attempts' files were deleted: no data file is unreferenced
    assert not orphans(t)
    assert len(data_files(t)) > len(live_files(t))  # the rewritten files stay for old snapshots
    # dt=a is rewritten by the job's tasks, dt=b is left as it was
    assert {f for f in live_files(t) if "/dt=b/" in f} == b_before
    assert all("sort-" in os.path.basename(f) for f in live_files(t) if "/dt=a/" in f)


def test_sort_compact_refusals_and_empty(spark, catalog):
    t = create(catalog, "db.e", SCHEMA, ["dt"], [], bucket="-1")
    assert ps.sort_compact(spark, t, "zorder", ["x", "y"]) is None
    with pytest.raises(InvalidArgumentError, match="can't find column"):
        ps.sort_compact(spark, t, "zorder", ["nope"])
    # a dynamic-bucket primary-key table (test_spark_dynamic_bucket.py sorts them): a bucket cap is
    # refused (the tasks open buckets each on their own), an empty table is nothing to do
    dyn = create(catalog, "db.dyn", SCHEMA, ["dt"], ["dt", "x"], bucket="-1", **{"dynamic-bucket.max-buckets": "4"})
    assert ps.sort_compact(spark, dyn, "zorder", ["x", "y"]) is None
    w = dyn.new_batch_write_builder()
    tw = w.new_write()
    tw.write_arrow(rows(10, 1))
    w.new_commit().commit(tw.prepare_commit())
    tw.close()
    with pytest.raises(UnsupportedError, match="max-buckets"):
        ps.sort_compact(spark, dyn, "zorder", ["x", "y"])
    # some partitions of one whose overwrite replaces the whole table
    whole = create(catalog, "db.dynwhole", SCHEMA, ["dt"], ["dt", "x"], bucket="-1",
                   **{"dynamic-partition-overwrite": "false"})
    with pytest.raises(UnsupportedError, match="dynamic-partition-overwrite = false"):
        ps.sort_compact(spark, whole, "zorder", ["x", "y"], partitions=[{"dt": "a"}])


def test_sort_compact_of_a_deletion_vector_table_on_spark(spark, catalog):
    """The tasks read the planned snapshot with its vectors applied, the commit drops the
    partitions' index files with the rewritten files; a delete then goes on on the sorted files."""
    t = create(catalog, "db.dv", SCHEMA, ["dt"], [], bucket="-1",
               **{"target-file-size": "8kb", "deletion-vectors.enabled": "true"})
    data = rows(3000, 5)
    w = t.new_batch_write_builder()
    tw = w.new_write()
    tw.write_arrow(data)
    w.new_commit().commit(tw.prepare_commit())
    tw.close()
    model = Counter(tuple(r.values()) for r in data.to_pylist())
    t.delete("x < 300")
    model = Counter({k: v for k, v in model.items() if k[1] >= 300})
    indexes = catalog.get_table("db.dv$table_indexes")
    assert indexes.to_arrow().num_rows > 0
    sid = ps.sort_compact(spark, t, "zorder", ["x", "y"], num_partitions=2)
    assert sid is not None
    assert multiset(plain_read(t)) == model
    assert catalog.get_table("db.dv$table_indexes").to_arrow().num_rows == 0
    assert sum(pq.read_metadata(f).num_rows for f in live_files(t)) == sum(model.values())
    t.delete("x >= 900")
    model = Counter({k: v for k, v in model.items() if k[1] < 900})
    assert multiset(plain_read(t)) == model


def upsert(t, data: pa.Table) -> None:
    w = t.new_batch_write_builder()
    tw = w.new_write()
    tw.write_arrow(data)
    w.new_commit().commit(tw.prepare_commit())
    tw.close()


def keyed(t: pa.Table) -> dict:
    out = {}
    for r in t.to_pylist():
        assert (r["dt"], r["x"]) not in out, "a key read twice"
        out[(r["dt"], r["x"])] = (r["y"], r["s"])
    return out


def dynamic_dv_table(catalog, name: str, dv: bool = True):
    """A dynamic-bucket primary-key table (dt, x), deletion vectors when ``dv``, upserted and
    deleted in several commits (level 0 files and vectors live), and its model."""
    opts = {"dynamic-bucket.target-row-num": "200"}
    if dv:
        opts["deletion-vectors.enabled"] = "true"
    t = create(catalog, f"db.{name}", SCHEMA, ["dt"], ["dt", "x"], bucket="-1", **opts)
    model: dict = {}
    for seed in range(3):
        data = rows(600, seed)
        # one row per key per commit (the model's last-one-wins needs no in-batch order)
        data = pa.Table.from_pylist(list(keyed_last(data).values()), schema=SCHEMA)
        upsert(t, data)
        model.update({(r["dt"], r["x"]): (r["y"], r["s"]) for r in data.to_pylist()})
    t.delete("x < 100")
    model = {k: v for k, v in model.items() if k[1] >= 100}
    return t, model


def keyed_last(data: pa.Table) -> dict:
    return {(r["dt"], r["x"]): r for r in data.to_pylist()}


def test_sort_compact_of_a_dynamic_deletion_vector_table_on_spark(spark, catalog):
    """A dynamic-bucket primary-key table with deletion vectors: the tasks read the planned
    splits merged (all levels, vectors applied), sort them and assign fresh buckets; the
    driver's one OVERWRITE replaces the table and its index files (hash index, vectors); the
    table equals the model, each key once, and goes on with upserts and deletes."""
    t, model = dynamic_dv_table(catalog, "dyndv")
    indexes = catalog.get_table("db.dyndv$table_indexes").to_arrow()
    assert "DELETION_VECTORS" in indexes.column("index_type").to_pylist()
    old_index = set(indexes.column("file_name").to_pylist())
    before = t.latest_snapshot_id()
    sid = ps.sort_compact(spark, t, "zorder", ["x", "y"], num_partitions=2)
    assert sid is not None
    # the OVERWRITE (and, when the tasks' writers compacted level 0 into vectors, its COMPACT)
    kinds = [t.snapshot_manager().get_snapshot_by_id(i).commit_kind for i in range(before + 1, sid + 1)]
    assert kinds[0] == "OVERWRITE" and set(kinds[1:]) <= {"COMPACT"}, kinds
    assert keyed(plain_read(t)) == model
    now = catalog.get_table("db.dyndv$table_indexes").to_arrow()
    assert not old_index & set(now.column("file_name").to_pylist())
    assert "DELETION_VECTORS" not in now.column("index_type").to_pylist()
    assert not orphans(t)
    more = rows(300, 11)
    more = pa.Table.from_pylist(list(keyed_last(more).values()), schema=SCHEMA)
    upsert(t, more)
    model.update({(r["dt"], r["x"]): (r["y"], r["s"]) for r in more.to_pylist()})
    t.delete("x >= 900")
    model = {k: v for k, v in model.items() if k[1] < 900}
    assert keyed(plain_read(t)) == model


@pytest.mark.parametrize("dv", [True, False], ids=["deletion-vectors", "no-vectors"])
def test_a_racing_upsert_makes_the_dynamic_sort_compaction_conflict_on_spark(spark, catalog, monkeypatch, dv):
    """An upsert of existing keys committed while the tasks sort (after the plan, before the
    driver's commit) would be replaced by the overwrite (Java loses it); the commit conflicts
    instead, the upsert stays, and the job's files are deleted."""
    from paimon_rs.exceptions import CommitConflictError
    from paimon_rs.spark import commit as spark_commit

    t, model = dynamic_dv_table(catalog, f"race{int(dv)}", dv)
    key = next(iter(sorted(model)))
    racing = pa.table({"dt": [key[0]], "x": [key[1]], "y": [4242], "s": ["racing"]}, schema=SCHEMA)
    collect = spark_commit._collect_settled

    def collect_then_upsert(spark_, job):
        got = collect(spark_, job)
        upsert(t, racing)
        return got

    monkeypatch.setattr(spark_commit, "_collect_settled", collect_then_upsert)
    with pytest.raises(CommitConflictError, match="changed after snapshot"):
        ps.sort_compact(spark, t, "order", ["y"], num_partitions=2)
    model[key] = (4242, "racing")
    assert keyed(plain_read(t)) == model
    assert not orphans(t), "the job's data files were deleted"
    index_dir = os.path.join(t.table_path, "index")
    assert not [f for f in os.listdir(index_dir) if f.startswith("index-sort-")], "and its index files"


def test_clustering_at_write_time_on_spark(spark, catalog):
    """``clustering.columns`` on a Spark write: each task sorts the rows it writes (no range
    shuffle across tasks), so every file is sorted by the curve; the rows are unchanged."""
    t = create(catalog, "db.clus", SCHEMA, ["dt"], [], bucket="-1", **{"clustering.columns": "x,y"})
    rng = random.Random(3)
    rows = [("a", rng.randrange(1000), rng.randrange(-99, 99), f"s{i % 7}") for i in range(4000)]
    ps.write(spark.createDataFrame(rows, "dt string, x long, y int, s string").repartition(2), t)
    assert Counter(tuple(r.values()) for r in plain_read(t).to_pylist()) == Counter(rows)
    files = live_files(t)
    assert files
    for f in files:
        b = pq.read_table(f).select(SCHEMA.names).combine_chunks().to_batches()[0]
        keys = t._core.sort_index("zorder", ["x", "y"], b)
        assert keys == sorted(keys), f


CELL_SCHEMA = pa.schema([pa.field("dt", pa.string(), nullable=False), pa.field("id", pa.int64(), nullable=False),
                         pa.field("x", pa.int64()), pa.field("y", pa.int64())])
# boxes inside one cell of 1/256 of [0, 2^16)^2, away from the middle of the curve (where
# Spark's range bound between the two tasks falls, not snapped to a cell)
CELL_BOXES = [((100, 3000), (100, 3000)), ((61500, 65000), (45500, 48000))]


def cell_rows(n: int, seed: int, dt: str) -> pa.Table:
    import numpy as np

    rng = np.random.default_rng(seed)
    return pa.table({"dt": [dt] * n, "id": np.arange(seed * n, (seed + 1) * n), "x": rng.integers(0, 1 << 16, n),
                     "y": rng.integers(0, 1 << 16, n)}, schema=CELL_SCHEMA)


def box_counts(t, files, box):
    """(files whose min/max box of x, y meets ``box``, files holding a row in it)."""
    import pyarrow.compute as pc

    (x0, x1), (y0, y1) = box
    meets = holding = 0
    for f in files:
        d = pq.read_table(f, columns=["x", "y"])
        xs, ys = d["x"], d["y"]
        meets += (pc.min(xs).as_py() <= x1 and pc.max(xs).as_py() >= x0
                  and pc.min(ys).as_py() <= y1 and pc.max(ys).as_py() >= y0)
        m = pc.and_(pc.and_(pc.greater_equal(xs, x0), pc.less_equal(xs, x1)),
                    pc.and_(pc.greater_equal(ys, y0), pc.less_equal(ys, y1)))
        holding += pc.any(m).as_py() is True
    return meets, holding


@pytest.mark.parametrize("dynamic", [False, True], ids=["append", "dynamic-bucket"])
def test_sort_compact_on_spark_cuts_at_cells(spark, catalog, dynamic):
    """The tasks cut their files (an append table) or buckets (a dynamic-bucket table) at
    curve cells as the local sort does, within target x [3/4, 5/4]: a box inside one small cell
    meets the min/max box of one file (the append table's scan plans exactly that file); cut by
    size alone, files straddle cells and their boxes span the neighbours."""
    opts = ({"dynamic-bucket.target-row-num": "7000"} if dynamic else {"target-file-size": "40kb"})
    t = create(catalog, f"db.cells_{int(dynamic)}", CELL_SCHEMA, ["dt"], ["dt", "id"] if dynamic else [],
               bucket="-1", **opts)
    for seed, dt in enumerate(["a", "b", "a", "b"]):
        upsert(t, cell_rows(50_000, seed, dt))
    model = multiset(plain_read(t))
    sid = ps.sort_compact(spark, t, "zorder", ["x", "y"], num_partitions=2)
    assert sid is not None and multiset(plain_read(t)) == model
    for dt in ["a", "b"]:
        files = sorted(f for f in live_files(t) if f"/dt={dt}/" in f)
        assert len(files) >= 12, len(files)
        for box in CELL_BOXES:
            assert box_counts(t, files, box) == (1, 1), (dt, box, len(files))
            if not dynamic:
                pb = t.new_read_builder().new_predicate_builder()
                pred = pb.and_predicates([pb.equal("dt", dt), pb.between("x", *box[0]), pb.between("y", *box[1])])
                rb = t.new_read_builder().with_filter(pred)
                assert sum(len(s.file_paths) for s in rb.new_scan().plan().splits()) == 1
