"""``ReadBuilder.explain()``'s pruning funnel (pypaimon's ``partition_pruning``,
``bucket_pruning``, ``file_skipping``) and the bucket selection it reports: a filter pinning
every bucket key of a fixed-bucket table plans only the buckets the keys hash to (Java's
``BucketSelectConverter``), and no row is lost by it (issue 29)."""

from __future__ import annotations

import random

import pyarrow as pa
import pytest

from paimon_rs import Schema

SCHEMA = pa.schema([pa.field("dt", pa.string(), nullable=False), pa.field("id", pa.int32(), nullable=False),
                    ("val", pa.int64())])


def _table(catalog, name, pk=True, **options):
    kw = {"partition_keys": ["dt"], "options": {"bucket": "4", **options}}
    if pk:
        kw["primary_keys"] = ["dt", "id"]
    else:
        kw["options"]["bucket-key"] = "id"
    catalog.create_table(f"db.{name}", Schema.from_pyarrow_schema(SCHEMA, **kw), False)
    t = catalog.get_table(f"db.{name}")
    for day in ("d1", "d2", "d3"):
        t.write(pa.Table.from_pylist([{"dt": day, "id": i, "val": i + 1} for i in range(20)], schema=SCHEMA))
    return t


def _rows(rb):
    out = rb.new_read().to_arrow(rb.new_scan().plan().splits())
    return sorted(zip(out.column("dt").to_pylist(), out.column("id").to_pylist()))


@pytest.mark.parametrize("pk", [True, False])
def test_the_funnel_of_a_partition_and_bucket_key_filter(catalog, pk):
    """pypaimon's read_builder_explain_test case: dt = '...' AND id = 7 drops partitions, then
    buckets; the plan reads what explain says."""
    t = _table(catalog, f"f{int(pk)}", pk=pk)
    rb = t.new_read_builder()
    pb = rb.new_predicate_builder()
    rb = rb.with_filter(pb.and_predicates([pb.equal("dt", "d1"), pb.equal("id", 7)]))
    r = rb.explain()
    live = sum(len(s.files) for s in t.new_read_builder().new_scan().plan().splits())
    assert r.partition_pruning.before == live and r.partition_pruning.after == live // 3
    assert r.bucket_pruning.before == live // 3 > r.bucket_pruning.after > 0
    assert r.file_skipping.before == r.bucket_pruning.after >= r.file_skipping.after == r.file_count
    splits = rb.new_scan().plan().splits()
    assert r.split_count == len(splits) and len({s.bucket for s in splits}) == 1
    assert _rows(rb) == [("d1", 7)]
    assert "Bucket pruning:" in str(r) and "(pruned" in str(r)


def test_bucket_selection_loses_no_row(catalog):
    t = _table(catalog, "every", pk=True)
    rng = random.Random(5)
    for k in range(20):
        assert _rows(t.new_read_builder().with_filter(f"id = {k}")) == [(d, k) for d in ("d1", "d2", "d3")]
    for _ in range(10):
        ks = rng.sample(range(25), 4)  # some absent keys too
        rb = t.new_read_builder().with_filter(f"id IN ({', '.join(map(str, ks))}) AND dt = 'd2'")
        assert _rows(rb) == sorted(("d2", k) for k in ks if k < 20)
    # no equality on the bucket key, or an OR: no bucket selection, every row found
    assert t.new_read_builder().with_filter("id > 17").explain().bucket_pruning is None
    rb = t.new_read_builder().with_filter("id = 3 OR val = 10")
    assert rb.explain().bucket_pruning is None and len(_rows(rb)) == 6


def test_no_filter_no_funnel(catalog):
    t = _table(catalog, "nof", pk=False)
    r = t.new_read_builder().explain()
    assert r.partition_pruning is None and r.bucket_pruning is None and r.file_skipping is None
    assert r.split_count > 0


def test_table_schema_bucket_keys(catalog):
    assert _table(catalog, "bk1", pk=True).table_schema.bucket_keys == ["id"]
    schema = _table(catalog, "bk2", pk=False).table_schema
    assert schema.bucket_keys == ["id"] and [f.name for f in schema.logical_bucket_key_fields] == ["id"]


def test_native_planned_follows_the_option(catalog):
    """pypaimon's flag: True when ``scan.native-plan.enabled`` asks for its native planner and
    there is a snapshot (the counters are there either way in paimon_rs)."""
    t = _table(catalog, "nat", pk=True)
    assert not t.new_read_builder().explain().native_planned
    r = t.copy({"scan.native-plan.enabled": "true"}).new_read_builder().with_filter("id = 1").explain()
    assert r.native_planned and "native" in str(r) and r.bucket_pruning is not None
