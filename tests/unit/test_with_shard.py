"""``TableScan.with_shard(i, n)`` on append and data-evolution tables, as pypaimon 2.1.0's: the
plan's rows (a data-evolution table's row ids) cut into ``n`` position ranges, ``total // n``
each and the first ``total % n`` workers one more. Against the model "the whole plan read in
order, then cut at pypaimon's shard bounds": the shards are disjoint, together the table, and
each holds exactly its balanced share. A chunk shuffle of a plan with deletion vectors is
refused (pypaimon sizes chunks in live rows)."""

from __future__ import annotations

from typing import List

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_with_slice import make

from paimon_rs import Schema, UnsupportedError
from paimon_rs.table_ops import java_file_name_shard

DE = {"row-tracking.enabled": "true", "data-evolution.enabled": "true"}


def shard_sizes(total: int, n: int) -> List[int]:
    """pypaimon's balanced shard sizes (``scan_distribution.shard_range``)."""
    return [total // n + (1 if i < total % n else 0) for i in range(n)]


def ids(t, shard=None, columns=("id",)) -> List[int]:
    rb = t.new_read_builder().with_projection(list(columns))
    s = rb.new_scan()
    if shard is not None:
        s = s.with_shard(*shard)
    splits = s.plan().splits()
    return rb.new_read().to_arrow(splits).column(columns[0]).to_pylist() if splits else []


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(commits=st.lists(st.integers(1, 30), min_size=1, max_size=4), workers=st.integers(1, 7),
       evolution=st.booleans())
def test_shards_are_the_plan_cut_into_balanced_row_ranges(catalog, commits, workers, evolution):
    name = f"t{abs(hash((tuple(commits), workers, evolution)))}"
    t = make(catalog, name, {**DE} if evolution else {"read.batch-size": "7"}, commits)
    whole = ids(t)
    got = [ids(t, (i, workers)) for i in range(workers)]
    # as pypaimon: worker i reads the plan's rows at its balanced positions, in plan order
    sizes = shard_sizes(len(whole), workers)
    assert [len(g) for g in got] == sizes
    if not evolution:
        bounds = [sum(sizes[:i]) for i in range(workers + 1)]
        assert got == [whole[a:b] for a, b in zip(bounds, bounds[1:])]
    flat = [x for g in got for x in g]
    assert sorted(flat) == sorted(whole) and len(set(flat)) == len(flat)


def test_a_data_evolution_shard_counts_row_ids_before_statistics(catalog):
    """A filter on a non-partition column: shard bounds count every row id the partition
    filter keeps (pypaimon's ``_divide_ranges_by_position``), not the rows after pruning."""
    t = make(catalog, "de_filtered", dict(DE), [10, 10, 10])
    rowids = sorted(ids(t, columns=("_ROW_ID",)))
    assert rowids == list(range(30))
    rb = t.new_read_builder().with_projection(["_ROW_ID", "id"])
    rb = rb.with_filter(rb.new_predicate_builder().greater_or_equal("id", 20))
    got = []
    for i in range(3):
        splits = rb.new_scan().with_shard(i, 3).plan().splits()
        got.append(sorted(rb.new_read().to_arrow(splits).column("_ROW_ID").to_pylist()) if splits else [])
    # ten row ids per worker over all 30: only the last worker's range holds ids >= 20
    assert got == [[], [], list(range(20, 30))]


def test_a_primary_key_table_is_still_sharded_by_bucket(catalog):
    catalog.create_table("db.pk", Schema.from_pyarrow_schema(
        pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.int64())]), primary_keys=["id"],
        options={"bucket": "4"}), False)
    t = catalog.get_table("db.pk")
    t.write(pa.table({"id": list(range(40)), "v": list(range(40))},
                     schema=pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.int64())])))
    for i in range(2):
        splits = t.new_read_builder().new_scan().with_shard(i, 2).plan().splits()
        assert splits and all(s.bucket % 2 == i for s in splits)


@pytest.mark.parametrize("evolution", [False, True])
def test_chunk_shuffle_of_a_plan_with_deletion_vectors_is_refused(catalog, evolution):
    opts = {**(DE if evolution else {}), "deletion-vectors.enabled": "true"}
    name = f"dv{int(evolution)}"
    t = make(catalog, name, opts, [12])
    # no deletion vector yet: chunks of physical rows are pypaimon's
    assert ids(t) and t.new_read_builder().new_scan().with_chunk_shuffle(7, 3).plan().splits()
    if evolution:
        wb = t.new_batch_write_builder()
        wb.new_commit().commit(wb.new_update().delete_by_row_id([1, 2, 3]))
    else:
        t.delete("id IN (1, 2, 3)")
    with pytest.raises(UnsupportedError, match=f"with_chunk_shuffle on db.{name}.*deletion vectors"):
        t.new_read_builder().new_scan().with_chunk_shuffle(7, 3).with_shard(0, 3).plan()


def test_java_file_name_shard_is_javas_string_hash():
    # "hello".hashCode() == 99162322; "polygenelubricants".hashCode() == Integer.MIN_VALUE,
    # whose abs(h % n) Java takes before abs (no overflow); non-BMP names hash UTF-16 units
    assert java_file_name_shard("hello", 1000) == 99162322 % 1000
    assert java_file_name_shard("polygenelubricants", 7) == 2 ** 31 % 7
    assert java_file_name_shard("\U0001F600", 10) == (31 * 0xD83D + 0xDE00) % 10


@pytest.mark.parametrize("options", [{"deletion-vectors.enabled": "true"}, {"merge-engine": "first-row"}])
def test_raw_primary_key_tables_are_sharded_by_file_name(catalog, options):
    sch = pa.schema([pa.field("id", pa.int64(), nullable=False), ("a", pa.int64())])
    name = "raw" + "".join(sorted(options)).replace("-", "").replace(".", "")
    catalog.create_table(f"db.{name}", Schema.from_pyarrow_schema(
        sch, primary_keys=["id"], options={"bucket": "2", "target-file-size": "2kb", **options}), False)
    t = catalog.get_table(f"db.{name}")
    for i in range(5):
        t.write(pa.table({"id": list(range(i * 150, i * 150 + 400)), "a": [i] * 400}, schema=sch))
    whole = sorted(ids(t))
    files = [f.file_name for s in t.new_read_builder().new_scan().plan().splits() for f in s.files]
    assert len(files) > 2
    got = []
    for i in range(3):
        splits = t.new_read_builder().new_scan().with_shard(i, 3).plan().splits()
        assert all(java_file_name_shard(f.file_name, 3) == i for s in splits for f in s.files)
        got += ids(t, (i, 3))
    assert sorted(got) == whole
