"""``Table.new_postpone_fixed_bucket_write_builder`` (pypaimon's, issue #29): a postpone-bucket
table's batch written straight into fixed buckets, a partition's bucket count kept once it has
real buckets, planned from the ``postpone.*`` options for a new one, and a commit whose
messages disagree on a partition's count refused."""

from __future__ import annotations

import os

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paimon_rs import Schema
from paimon_rs.exceptions import CommitConflictError, InvalidArgumentError
from paimon_rs.postpone_write import PostponeBucketPlan, _Planner

SCHEMA = pa.schema([pa.field("id", pa.int32(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                    ("value", pa.string())])


def make(catalog, name="db.pf", partitioned=True, **options):
    opts = {"bucket": "-2", **{k: str(v) for k, v in options.items()}}
    schema = Schema.from_pyarrow_schema(
        SCHEMA, partition_keys=["dt"] if partitioned else None,
        primary_keys=["id", "dt"] if partitioned else ["id"], options=opts)
    catalog.create_table(name, schema, False)
    return catalog.get_table(name)


def data(ids, dts, values=None):
    return pa.table({"id": ids, "dt": dts, "value": values or ["x"] * len(ids)}, schema=SCHEMA)


def write(table, batch, overwrite=None, plan=None):
    b = table.new_postpone_fixed_bucket_write_builder()
    if overwrite is not None:
        b.overwrite(overwrite)
    if plan is not None:
        b.with_bucket_plan(plan)
    with b.new_write() as w, b.new_commit() as c:
        w.write_arrow(batch)
        msgs = w.prepare_commit()
        c.commit(msgs)
    return msgs


def counts(msgs):
    """Bucket count by partition value (the partition BinaryRow's last string byte is enough
    here: tests use one-letter partitions)."""
    return {m.partition: m.total_buckets for m in msgs}


def ids(table):
    return sorted(table.to_arrow().column("id").to_pylist())


def bucket_dirs(table):
    out = set()
    for root, _, files in os.walk(table.table_path):
        if os.path.basename(root).startswith("bucket-") and any(f.startswith("data-") for f in files):
            out.add(os.path.relpath(root, table.table_path))
    return out


def test_rows_land_in_real_buckets_readable_at_once(catalog):
    t = make(catalog, **{"postpone.target-size-per-bucket": "1 b",
                         "postpone.batch-write-fixed-bucket.max-parallelism": 2})
    msgs = write(t, data([1, 2, 3, 4], ["a", "a", "a", "a"]))
    assert {m.total_buckets for m in msgs} == {2}
    assert ids(t) == [1, 2, 3, 4]  # no compaction needed
    assert bucket_dirs(t) <= {"dt=a/bucket-0", "dt=a/bucket-1"}
    # a plain write still lands in bucket-postpone, invisible until compacted
    b = t.new_batch_write_builder()
    with b.new_write() as w, b.new_commit() as c:
        w.write_arrow(data([9], ["a"]))
        c.commit(w.prepare_commit())
    assert ids(t) == [1, 2, 3, 4] and "dt=a/bucket-postpone" in bucket_dirs(t)


def test_size_plan_per_partition_capped_by_max_parallelism(catalog):
    t = make(catalog, **{"postpone.target-size-per-bucket": "100 b",
                         "postpone.batch-write-fixed-bucket.max-parallelism": 3})
    # Java BinaryRow: 8 (null bits) + 3 * 8; 'x' * 500 adds 504: 1 bucket and ceil(536/100)
    # = 6, capped at 3
    msgs = write(t, data([1, 2], ["s", "l"], ["x", "x" * 500]))
    assert {m.total_buckets for m in msgs} == {1, 3}
    assert ids(t) == [1, 2]


def test_row_target_wins_over_size(catalog):
    t = make(catalog, **{"postpone.target-row-num-per-bucket": 1, "postpone.target-size-per-bucket": "1 gb",
                         "postpone.batch-write-fixed-bucket.max-parallelism": 8})
    msgs = write(t, data(list(range(8)), ["p"] * 8))
    assert {m.total_buckets for m in msgs} == {8}
    assert ids(t) == list(range(8))


def test_default_bucket_num_is_exact(catalog):
    t = make(catalog, **{"postpone.default-bucket-num": 5, "postpone.target-row-num-per-bucket": 1})
    assert t.options.postpone_default_bucket_num() == 5
    msgs = write(t, data(list(range(20)), ["p"] * 20))
    assert {m.total_buckets for m in msgs} == {5}


def test_existing_partition_keeps_its_count_new_one_is_planned(catalog):
    t = make(catalog, **{"postpone.target-size-per-bucket": "1 b",
                         "postpone.batch-write-fixed-bucket.max-parallelism": 2})
    write(t, data([1], ["a"]))
    wider = catalog.get_table("db.pf").copy({"postpone.batch-write-fixed-bucket.max-parallelism": 3})
    msgs = write(wider, data([2, 3], ["a", "b"]))
    by_part = {bytes(m.partition)[-9:]: m.total_buckets for m in msgs}
    assert sorted(by_part.values()) == [2, 3]
    assert ids(t) == [1, 2, 3]


def test_unpartitioned_table(catalog):
    t = make(catalog, partitioned=False, **{"postpone.default-bucket-num": 3})
    write(t, data([1, 2, 3], ["a", "b", "c"]))
    write(t, data([1], ["z"], ["new"]))  # same bucket count: the key's bucket, later wins
    rows = {r["id"]: r["value"] for r in t.to_arrow().to_pylist()}
    assert rows == {1: "new", 2: "x", 3: "x"}


def test_two_writers_disagreeing_on_a_new_partition_are_refused(catalog):
    t = make(catalog, **{"postpone.target-size-per-bucket": "100 b",
                         "postpone.batch-write-fixed-bucket.max-parallelism": 3})
    small, large = t.new_postpone_fixed_bucket_write_builder(), t.new_postpone_fixed_bucket_write_builder()
    ws, wl = small.new_write(), large.new_write()
    ws.write_arrow(data([1], ["p"]))
    wl.write_arrow(data([2], ["p"], ["x" * 500]))
    msgs = ws.prepare_commit() + wl.prepare_commit()
    assert {m.total_buckets for m in msgs} == {1, 3}
    with pytest.raises(CommitConflictError,
                       match=r"Total buckets of partition 'dt=p' differ: "
                             r"files of this commit disagree \((1 vs 3|3 vs 1)\)"):
        small.new_commit().commit(msgs)
    assert t.latest_snapshot_id() is None
    ws.close()
    wl.close()


def test_count_differing_from_live_files_is_refused_unless_overwritten(catalog):
    t = make(catalog, **{"postpone.default-bucket-num": 2})
    write(t, data([1], ["p"]))
    with pytest.raises(CommitConflictError,
                       match="Total buckets of partition 'dt=p' differ: the table has 2 buckets in partition 'dt=p', "
                             "this commit writes 3 .file 'dt=p/bucket-"):
        write(t, data([2], ["p"]), plan=PostponeBucketPlan({("p",): 3}))
    msgs = write(t, data([3], ["p"]), overwrite={"dt": "p"}, plan={("p",): 3})
    assert {m.total_buckets for m in msgs} == {3}
    assert ids(t) == [3]


def test_plan_missing_a_partition_is_refused(catalog):
    t = make(catalog)
    with pytest.raises(InvalidArgumentError, match="Missing bucket plan"):
        write(t, data([1], ["q"]), plan=PostponeBucketPlan({("p",): 2}))


def test_refused_on_other_tables_and_bad_options(catalog):
    schema = Schema.from_pyarrow_schema(SCHEMA, primary_keys=["id"], options={"bucket": "2"})
    catalog.create_table("db.fixed", schema, False)
    with pytest.raises(InvalidArgumentError, match="postpone-bucket table"):
        catalog.get_table("db.fixed").new_postpone_fixed_bucket_write_builder()
    t = make(catalog, **{"postpone.batch-write-fixed-bucket.max-parallelism": 0})
    with pytest.raises(InvalidArgumentError, match="max-parallelism must be positive"):
        t.new_postpone_fixed_bucket_write_builder().new_write()
    with pytest.raises(InvalidArgumentError, match="positive 32-bit"):
        PostponeBucketPlan({("p",): 0})


def test_binary_row_size_matches_java(catalog):
    """pypaimon's Java fixture: (INT, 'k', 'v') is 32 bytes; nested values as Java lays them."""
    t = make(catalog, partitioned=False)
    p = _Planner(t)
    assert p.row_sizes(data([1, 2], ["k", "k"], ["v", "v"])) == [32, 32]
    # a string over 7 bytes goes to the variable part, rounded to words
    assert p.row_sizes(data([1], ["k"], ["12345678"])) == [40]
    nested = pa.table({"a": pa.array([[1, 2, 3]], pa.list_(pa.int32())),
                       "e": pa.array([[1.0, 2.0]], pa.list_(pa.float32(), 2))})
    # 8 + 2 * 8 fixed; list: header 4 + 4, 3 ints -> 24; vector: 4 + 2 * 4 -> 16
    assert p.row_sizes(nested) == [24 + 24 + 16]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.integers(1, 10_000), size=st.integers(0, 10**9), waiting=st.integers(0, 10_000),
       target=st.integers(1, 10**6), cap=st.integers(1, 64), by_rows=st.booleans())
def test_num_buckets_model(catalog, rows, size, waiting, target, cap, by_rows):
    """The count pypaimon's planner gives: ceil over the target, at least 1, at most the cap."""
    p = _Planner.__new__(_Planner)
    p.default_num, p.max_num = None, cap
    p.target_rows, p.target_size = (target, 1) if by_rows else (None, target)
    if by_rows:
        want = -(-(rows + waiting) // target)
    else:
        est = -(-(size * (rows + waiting)) // rows) if waiting else size
        want = -(-est // target)
    assert p.num_buckets(rows, size, waiting) == min(max(1, want), cap)


def test_inputs_of_other_types_and_rows_are_planned_together(catalog):
    t = make(catalog, **{"postpone.target-row-num-per-bucket": 2,
                         "postpone.batch-write-fixed-bucket.max-parallelism": 8})
    b = t.new_postpone_fixed_bucket_write_builder()
    with b.new_write() as w, b.new_commit() as c:
        # int64 ids for the INT column: the engine converts each input as a plain write does
        w.write_arrow(pa.table({"id": pa.array([1, 2], pa.int64()), "dt": ["p", "p"], "value": ["a", "b"]}))
        w.write_arrow_batch(pa.record_batch({"id": pa.array([3], pa.int32()), "dt": ["p"], "value": ["c"]}))
        w.write_row({"id": 4, "dt": "p", "value": "d"})
        w.write_row((5, "p", "e"))
        msgs = w.prepare_commit()
        # 5 rows of one new partition over 2 per bucket: 3 buckets, whatever the inputs
        assert {m.total_buckets for m in msgs} == {3}
        c.commit(msgs)
    assert ids(t) == [1, 2, 3, 4, 5]
