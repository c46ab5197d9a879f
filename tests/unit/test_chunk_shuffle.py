"""``TableScan.with_chunk_shuffle`` (pypaimon's ML data-loading shuffle): chunks of at most
``chunk_size`` rows within one partition, shuffled by the seed, dealt to ``with_shard`` workers
as balanced runs; the workers' reads are disjoint and together the whole table."""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paimon_rs import Schema
from paimon_rs.exceptions import InvalidArgumentError

SCHEMA = pa.schema([("id", pa.int64()), ("part", pa.string())])


def make(catalog, name, batches, partitioned=False, **options):
    schema = Schema.from_pyarrow_schema(SCHEMA, partition_keys=["part"] if partitioned else None,
                                        options=options)
    catalog.create_table(name, schema, False)
    t = catalog.get_table(name)
    for ids, part in batches:
        b = t.new_batch_write_builder()
        with b.new_write() as w, b.new_commit() as c:
            w.write_arrow(pa.table({"id": ids, "part": [part] * len(ids)}, schema=SCHEMA))
            c.commit(w.prepare_commit())
    return t


def worker_ids(t, seed, size, workers):
    rb = t.new_read_builder()
    out = []
    for w in range(workers):
        splits = rb.new_scan().with_chunk_shuffle(seed=seed, chunk_size=size).with_shard(w, workers).plan().splits()
        out.append(rb.new_read().to_arrow(splits).column("id").to_pylist() if splits else [])
    return out


def test_workers_union_is_the_table_in_chunks_of_at_most_the_size(catalog):
    t = make(catalog, "db.cs", [(list(range(c * 50, c * 50 + 50)), "p1") for c in range(4)])
    per_worker = worker_ids(t, 123, 37, 3)
    assert sorted(i for ids in per_worker for i in ids) == list(range(200))
    rb = t.new_read_builder()
    splits = rb.new_scan().with_chunk_shuffle(seed=123, chunk_size=37).plan().splits()
    # 4 files of 50 rows: a chunk of 37 may span two files, never more rows than 37
    chunks = [rb.new_read().to_arrow([s]).num_rows for s in splits]
    assert sum(chunks) == 200 and max(chunks) <= 37


def test_same_seed_same_plan_other_seed_other_order(catalog):
    t = make(catalog, "db.cs", [(list(range(100)), "p")])
    assert worker_ids(t, 42, 10, 3) == worker_ids(t, 42, 10, 3)
    one = [ids[0] for ids in worker_ids(t, 1, 10, 10)]
    two = [ids[0] for ids in worker_ids(t, 2, 10, 10)]
    assert sorted(one) == sorted(two) == list(range(0, 100, 10)) and one != two


def test_chunks_stay_within_a_partition(catalog):
    t = make(catalog, "db.cs", [([1, 2, 3], "a"), ([4, 5, 6], "b")], partitioned=True)
    rb = t.new_read_builder()
    for s in rb.new_scan().with_chunk_shuffle(seed=7, chunk_size=4).plan().splits():
        assert len(set(rb.new_read().to_arrow([s]).column("part").to_pylist())) == 1
    # a partition filter is allowed
    pred = rb.new_predicate_builder().equal("part", "a")
    rb = t.new_read_builder().with_filter(pred)
    splits = rb.new_scan().with_chunk_shuffle(seed=7, chunk_size=2).plan().splits()
    assert sorted(rb.new_read().to_arrow(splits).column("id").to_pylist()) == [1, 2, 3]


def test_refusals(catalog):
    t = make(catalog, "db.cs", [([1], "a")], partitioned=True)
    scan = t.new_read_builder().new_scan()
    for bad in (0, -5, True, 1.5):
        with pytest.raises(InvalidArgumentError, match="chunk_size"):
            scan.with_chunk_shuffle(seed=1, chunk_size=bad)
    with pytest.raises(InvalidArgumentError, match="seed"):
        scan.with_chunk_shuffle(seed="1", chunk_size=1)
    with pytest.raises(InvalidArgumentError, match="limit"):
        t.new_read_builder().with_limit(5).new_scan().with_chunk_shuffle(1, 10).plan()
    with pytest.raises(InvalidArgumentError, match="with_slice"):
        t.new_read_builder().new_scan().with_slice(0, 1).with_chunk_shuffle(1, 10).plan()
    rb = t.new_read_builder()
    rb = rb.with_filter(rb.new_predicate_builder().equal("id", 1))
    with pytest.raises(InvalidArgumentError, match="partition keys"):
        rb.new_scan().with_chunk_shuffle(1, 10).plan()
    pk = Schema.from_pyarrow_schema(pa.schema([pa.field("id", pa.int64(), nullable=False)]),
                                    primary_keys=["id"], options={"bucket": "1"})
    catalog.create_table("db.pk", pk, False)
    with pytest.raises(InvalidArgumentError, match="only supports append tables"):
        catalog.get_table("db.pk").new_read_builder().new_scan().with_chunk_shuffle(1, 10).plan()


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sizes=st.lists(st.integers(1, 30), min_size=1, max_size=4), chunk=st.integers(1, 40),
       workers=st.integers(1, 5), seed=st.integers(-5, 5))
def test_workers_partition_the_rows_model(tmp_path_factory, sizes, chunk, workers, seed):
    from paimon_rs import CatalogFactory

    catalog = CatalogFactory.create({"warehouse": str(tmp_path_factory.mktemp("w"))})
    catalog.create_database("db", True)
    batches, start = [], 0
    for n in sizes:
        batches.append((list(range(start, start + n)), "p"))
        start += n
    t = make(catalog, "db.m", batches)
    per_worker = worker_ids(t, seed, chunk, workers)
    flat = [i for ids in per_worker for i in ids]
    assert sorted(flat) == list(range(start))
    # every chunk is read as one split or more
    counts = []
    for w in range(workers):
        scan = t.new_read_builder().new_scan().with_chunk_shuffle(seed, chunk).with_shard(w, workers)
        counts.append(len(scan.plan().splits()))
    assert sum(counts) >= -(-start // chunk)
