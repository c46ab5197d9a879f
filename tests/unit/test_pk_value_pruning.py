"""A primary-key table's scan prunes by the filter on value statistics as Java's
``KeyValueFileStoreScan.filterWholeBucketByStats`` does (docs/paimon-behaviour.md §6.3): a bucket
none of whose files may hold a matching row is dropped; files that do not overlap (one file, or
all at one level above 0) are pruned one by one; partial-update and aggregation buckets whose
files overlap are kept whole (a merged row is bounded by no single file's statistics). Each case
checks the planned files and that the answer equals the filtered merge read."""

from __future__ import annotations

import pyarrow as pa
import pytest

from paimon_rs import Schema

from unit_helpers import read, write

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("a", pa.int64()), ("b", pa.int64())])


def table(catalog, name, **options):
    opts = {"bucket": "1", "write-only": "true", **options}
    catalog.create_table(f"db.{name}", Schema.from_pyarrow_schema(SCHEMA, primary_keys=["id"], options=opts),
                         False)
    return catalog.get_table(f"db.{name}")


def rows(ids, a, b):
    return pa.table({"id": ids, "a": a, "b": b}, schema=SCHEMA)


def planned(t, pred) -> int:
    rb = t.new_read_builder().with_filter(pred)
    return sum(len(s.file_paths) for s in rb.new_scan().plan().splits())


def answer(t, pred):
    return sorted(read(t, predicate=pred).to_pylist(), key=lambda r: r["id"])


def filtered_merge(t, keep):
    return sorted((r for r in read(t).to_pylist() if keep(r)), key=lambda r: r["id"])


def test_a_bucket_no_file_of_which_matches_is_dropped_and_a_newer_version_is_never_lost(catalog):
    t = table(catalog, "dedup")
    write(t, rows([1, 2], [10, 20], [0, 0]))
    write(t, rows([1], [100], [0]))  # two level-0 files: they overlap
    pb = t.new_read_builder().new_predicate_builder()
    # no file holds a = 5: the bucket is dropped
    assert planned(t, pb.equal("a", 5)) == 0
    assert answer(t, pb.equal("a", 5)) == []
    # the first file holds a = 10, so the bucket is read whole and merged: id 1 is now 100
    assert planned(t, pb.equal("a", 10)) == 2
    assert answer(t, pb.equal("a", 10)) == []
    assert answer(t, pb.equal("a", 100)) == [{"id": 1, "a": 100, "b": 0}]


def test_files_that_do_not_overlap_are_pruned_one_by_one(catalog):
    t = table(catalog, "levels", **{"target-file-size": "32kb", "write-only": "false"})
    write(t, rows(list(range(60_000)), list(range(60_000)), [0] * 60_000))
    t.compact(full=True)  # one sorted run of several files at the top level
    n = len(read(catalog.get_table("db.levels$files")))
    assert n >= 3
    pb = t.new_read_builder().new_predicate_builder()
    pred = pb.less_than("a", 100)
    assert 1 <= planned(t, pred) < n
    assert answer(t, pred) == filtered_merge(t, lambda r: r["a"] < 100)


@pytest.mark.parametrize("engine", ["partial-update", "aggregation"])
def test_merging_engines_keep_overlapping_buckets_whole(catalog, engine):
    opts = {"merge-engine": engine}
    if engine == "aggregation":
        opts.update({"fields.a.aggregate-function": "max", "fields.b.aggregate-function": "max"})
    t = table(catalog, engine.replace("-", "_"), **opts)
    write(t, rows([1], [1], [None]))
    write(t, rows([1], [None], [2]))
    pb = t.new_read_builder().new_predicate_builder()
    # neither file alone has a = 1 and b = 2; the merged row has both
    pred = pb.and_predicates([pb.equal("a", 1), pb.equal("b", 2)])
    assert planned(t, pred) == 2
    assert answer(t, pred) == [{"id": 1, "a": 1, "b": 2}]
