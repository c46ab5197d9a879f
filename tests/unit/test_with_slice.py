"""``TableScan.with_slice(start, end)`` (pypaimon's): the rows at positions ``[start, end)`` of
an append table's plan, files in plan order, a file partly in the range read in part. Against
the model "the whole plan read in order, then cut": with several commits, partitions and
buckets, batches smaller than a file, deletion vectors (positions count before them) and row
tracking (``_ROW_ID`` of a part stays the file's)."""

from __future__ import annotations

import pickle
from typing import List

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paimon_rs import InvalidArgumentError, Schema, UnsupportedError

SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64())])


def make(catalog, name: str, options: dict, commits: List[int]):
    catalog.create_table(f"db.{name}", Schema.from_pyarrow_schema(SCHEMA, partition_keys=["dt"], options=options),
                         False)
    t = catalog.get_table(f"db.{name}")
    start = 0
    for n in commits:
        ids = list(range(start, start + n))
        t.write(pa.table({"dt": ["a" if i % 3 else "b" for i in ids], "id": ids}, schema=SCHEMA))
        start += n
    return t


def read(t, scan, columns=None):
    rb = t.new_read_builder()
    if columns:
        rb = rb.with_projection(columns)
    s = rb.new_scan()
    if scan is not None:
        s = s.with_slice(*scan)
    return rb.new_read().to_arrow(s.plan().splits())


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(commits=st.lists(st.integers(1, 40), min_size=1, max_size=4),
       cuts=st.lists(st.integers(0, 130), min_size=1, max_size=4),
       bucketed=st.booleans(), fmt=st.sampled_from(["parquet", "avro", "orc"]))
def test_a_slice_is_the_plan_cut_at_its_positions(catalog, commits, cuts, bucketed, fmt):
    # Parquet parts are read from the page holding their first row, Avro and ORC from the start
    name = f"t{abs(hash((tuple(commits), tuple(cuts), bucketed, fmt)))}"
    options = {"read.batch-size": "7", "file.format": fmt}
    if bucketed:
        options.update({"bucket": "2", "bucket-key": "id"})
    t = make(catalog, name, options, commits)
    whole = read(t, None).column("id").to_pylist()
    bounds = sorted({0, *cuts, len(whole) + 5})
    got: List[int] = []
    for a, b in zip(bounds, bounds[1:]):
        part = read(t, (a, b)).column("id").to_pylist()
        assert part == whole[a:b]
        got += part
    assert got == whole


def test_positions_count_rows_before_deletion_vectors(catalog):
    t = make(catalog, "dv", {"deletion-vectors.enabled": "true", "bucket": "-1"}, [20, 20])
    before = read(t, None).column("id").to_pylist()
    t.delete(f"id IN ({', '.join(str(i) for i in range(1, 40, 4))})")
    after = set(read(t, None).column("id").to_pylist())
    for a, b in [(0, 5), (5, 23), (23, 40), (3, 4)]:
        part = read(t, (a, b)).column("id").to_pylist()
        assert part == [i for i in before[a:b] if i in after]


def test_row_ids_of_a_part_are_the_files(catalog):
    t = make(catalog, "rt", {"row-tracking.enabled": "true", "read.batch-size": "4"}, [13, 9])
    cols = ["id", "_ROW_ID"]
    whole = read(t, None, cols).to_pylist()
    for a, b in [(2, 11), (11, 16), (0, 22)]:
        assert read(t, (a, b), cols).to_pylist() == whole[a:b]


def test_split_counts_and_pickling(catalog):
    t = make(catalog, "cnt", {}, [10, 10])
    splits = t.new_read_builder().new_scan().with_slice(4, 13).plan().splits()
    assert sum(s.row_count for s in splits) == 9
    assert sum(s.merged_row_count() for s in splits) == 9
    back = pickle.loads(pickle.dumps(splits))
    rb = t.new_read_builder()
    assert rb.new_read().to_arrow(back).column("id").to_pylist() == read(t, None).column("id").to_pylist()[4:13]


def test_refusals(catalog):
    t = make(catalog, "ref", {}, [3])
    scan = t.new_read_builder().new_scan()
    for a, b in [(-1, 2), (2, 2), (3, 1)]:
        with pytest.raises(InvalidArgumentError, match="start_pos"):
            scan.with_slice(a, b)
    with pytest.raises(InvalidArgumentError, match="ints"):
        scan.with_slice(0, 2.5)
    with pytest.raises(InvalidArgumentError, match="together"):
        t.new_read_builder().new_scan().with_shard(0, 2).with_slice(0, 1)
    with pytest.raises(InvalidArgumentError, match="together"):
        t.new_read_builder().new_scan().with_slice(0, 1).with_shard(0, 2)
    catalog.create_table("db.pk", Schema.from_pyarrow_schema(SCHEMA, primary_keys=["id"], options={"bucket": "1"}),
                         False)
    with pytest.raises(UnsupportedError, match="with_shard"):
        catalog.get_table("db.pk").new_read_builder().new_scan().with_slice(0, 1)


def test_a_slice_of_a_large_parquet_file_crosses_pages(catalog):
    """One Parquet file of several pages (1 MiB each): parts starting and ending inside pages
    read exactly their rows (the pages before a part are skipped by the file's offset index)."""
    n = 400_000
    t = make(catalog, "big", {}, [])
    t.write(pa.table({"dt": ["a"] * n, "id": list(range(n))}, schema=SCHEMA))
    for a, b in [(0, 1), (123_456, 234_567), (399_999, 400_000), (200_000, 400_000), (7, 399_993)]:
        assert read(t, (a, b)).column("id").to_pylist() == list(range(a, b))


@pytest.mark.stores("s3")
def test_a_slice_of_a_large_object_reads_its_pages(catalog):
    """A Parquet file larger than an object is fetched whole (16 MiB), read in parts on S3:
    only the pages holding a part's rows are fetched ahead (the reader stays inside them; the
    Rust test `a_part_prefetches_only_its_pages` pins that), and each part is exactly its rows."""
    import numpy as np

    n = 2_500_000
    rng = np.random.default_rng(7)
    t = make(catalog, "huge", {"file.compression": "none", "target-file-size": "1 gb"}, [])
    ids = rng.permutation(n).astype("int64")
    t.write(pa.table({"dt": pa.array(["a"] * n), "id": ids}, schema=SCHEMA))
    for a, b in [(0, 10), (1_234_567, 1_300_000), (n - 5, n)]:
        assert read(t, (a, b)).column("id").to_pylist() == ids[a:b].tolist()
