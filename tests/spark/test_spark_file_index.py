"""File indexes (bloom filters, ``file-index.bloom-filter.columns``, #28) on Spark: the files
that ``paimon_rs.spark.write``, the Data Source, Spark compaction and Spark sort compaction write
carry the index (in the manifest, or in a ``<data file>.index`` extra file past
``file-index.in-manifest-threshold``), and ``paimon_rs.spark.read`` and the Data Source's reader
skip files by it for an ``=`` filter (the planned file counts)."""

import os
from typing import List

import pyarrow as pa
import pytest
from pyspark.sql.datasource import EqualTo

import paimon_rs.spark as ps
from paimon_rs import _core
from paimon_rs.spark.reader import plan_splits
from paimon_rs.spark.source import PaimonRsDataSource

from spark_helpers import create, orphans, to_spark

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("s", pa.string()),
                    pa.field("v", pa.float64())])
#: small filters: in the manifest (the data file's embedded index)
EMBEDDED = {"file-index.bloom-filter.columns": "id,s", "file-index.bloom-filter.id.items": "200",
            "file-index.bloom-filter.s.items": "200"}
#: every filter in a ``<data file>.index`` extra file
INDEX_FILES = {**EMBEDDED, "file-index.in-manifest-threshold": "0"}


def rows(ids) -> pa.Table:
    ids = list(ids)
    return pa.table({"id": ids, "s": [f"s{i}" for i in ids], "v": [i / 2 for i in ids]}, schema=SCHEMA)


def spread(c: int, n: int = 4) -> pa.Table:
    """Commit ``c`` of ``n``: ids c, c + n, ... below 200, so every file's id (and s) range covers
    the others' and min/max statistics prune nothing: only the index can."""
    return rows(range(c, 200, n))


def live(t) -> List:
    return [f for s in t.new_read_builder().new_scan().plan().splits() for f in s.files]


def planned_files(t, column: str, value) -> int:
    """Files ``paimon_rs.spark.read``'s planning keeps for ``column = value``."""
    pb = t.new_read_builder().new_predicate_builder()
    _, splits, _ = plan_splits(t, None, pb.equal(column, value))
    return sum(len(_core.Split.from_bytes(s).file_paths) for s in splits)


def source_files(t, column: str, value) -> int:
    """Files the Data Source's reader plans once Spark pushed ``column = value`` to it."""
    src = PaimonRsDataSource({"path": t.table_path})
    reader = src.reader(src.schema())
    assert list(reader.pushFilters([EqualTo((column,), value)])) == []  # taken, not left to Spark
    parts = [p.value for p in reader.partitions() if p.value is not None]
    return sum(len(_core.Split.from_bytes(v).file_paths) for v in parts)


def check_indexed(t, index_files: bool) -> int:
    """Every live file carries its index (an extra ``.index`` file on disk, or none: in the
    manifest) and both read paths skip by it; returns the live file count."""
    files = live(t)
    for f in files:
        if index_files:
            assert f.extra_files == [f.file_name + ".index"], f.file_name
            assert os.path.exists(os.path.join(t.table_path, os.path.dirname(f.file_path), f.extra_files[0]))
        else:
            assert f.extra_files == [], f.file_name
    # s5x lies inside every file's s range (s5.. < s5x < s6..): min/max keep it, the index not
    assert planned_files(t, "s", "s5x") == 0 and source_files(t, "s", "s5x") == 0
    n = planned_files(t, "id", 7)
    assert 1 <= n < len(files) and source_files(t, "id", 7) == n, (n, len(files))
    return len(files)


@pytest.mark.parametrize("options", [EMBEDDED, INDEX_FILES], ids=["embedded", "index-files"])
def test_spark_writes_and_compactions_carry_the_index_and_reads_skip_by_it(registered, catalog, options):
    """An append table: four ``spark.write`` commits, then a Data Source write, a Spark full
    compaction and a Spark sort compaction; after each every live file carries the bloom filter
    and ``spark.read`` / the Data Source plan only files that may hold the value; Spark reads
    the right rows with the filter."""
    spark = registered
    index_files = options is INDEX_FILES
    t = create(catalog, f"db.fi{int(index_files)}", SCHEMA, [], [], bucket="-1", **options)
    for c in range(4):
        ps.write(to_spark(spark, spread(c)), t)
    assert check_indexed(t, index_files) >= 4
    to_spark(spark, rows(range(200, 260))).write.format("paimon_rs").mode("append").save(t.table_path)
    check_indexed(t, index_files)
    pb = t.new_read_builder().new_predicate_builder()
    assert [r["id"] for r in ps.read(spark, t, filter=pb.equal("id", 7)).collect()] == [7]
    df = spark.read.format("paimon_rs").load(t.table_path)
    assert [r["s"] for r in df.filter("id = 230").collect()] == ["s230"]
    assert df.filter("s = 's5x'").count() == 0

    # the rewritten files carry the index too: a full compaction (one file), then a sort
    # compaction over three tasks (a file each)
    assert ps.compact(spark, t, full=True) is not None
    assert len(live(t)) == 1 and planned_files(t, "s", "s5x") == 0
    assert ps.sort_compact(spark, t, "zorder", ["v", "s"], num_partitions=3) is not None
    check_indexed(t, index_files)
    got = ps.read(spark, t, filter=pb.equal("id", 77)).collect()
    assert [(r["id"], r["s"]) for r in got] == [(77, "s77")]
    assert sorted(r["id"] for r in ps.read(spark, t).collect()) == list(range(260))


def test_primary_key_tables_with_deletion_vectors_from_spark(registered, catalog, tmp_path):
    """A primary-key table with deletion vectors (the index skips its files above level 0):
    ``spark.write`` (every first task attempt failing after writing), a distributed Data Source
    write and a Spark full compaction write every file with its ``.index`` file, which the
    driver's sweep keeps with its data file (it deleted them before: named after the data file,
    they were taken for files of no commit) while the failed attempts' go; after the compaction an
    absent value plans no file, an update's old value is not found."""
    spark = registered
    t = create(catalog, "db.fipk", SCHEMA, [], ["id"], bucket="2",
               **{**INDEX_FILES, "deletion-vectors.enabled": "true"})
    marker = tmp_path / "fail-first-attempt"
    marker.write_text("1")
    for c in range(4):
        ps.write(to_spark(spark, spread(c)), t, _fail_first_attempt_marker=str(marker) if c == 0 else None)
    on_disk = {f for _, _, fs in os.walk(t.table_path) for f in fs}
    assert not [f for f in on_disk if f.endswith(".index") and f[:-len(".index")] not in on_disk]
    assert len([f for f in on_disk if f.endswith(".index")]) >= 4 and not orphans(t)  # the failed attempts' went
    changed = pa.table({"id": [7], "s": ["changed"], "v": [0.0]}, schema=SCHEMA)
    ps.distribute(to_spark(spark, changed), t).write.format("paimon_rs").mode("append").save(t.table_path)
    assert all(f.extra_files == [f.file_name + ".index"] for f in live(t))
    assert ps.compact(spark, t, full=True) is not None
    files = live(t)
    assert files and all(f.extra_files == [f.file_name + ".index"] and f.level > 0 for f in files)
    assert planned_files(t, "s", "s5x") == 0 and source_files(t, "s", "s5x") == 0
    assert 1 <= planned_files(t, "s", "changed") < len(files)
    pb = t.new_read_builder().new_predicate_builder()
    assert ps.read(spark, t, filter=pb.equal("s", "s7")).count() == 0
    assert [r["id"] for r in ps.read(spark, t, filter=pb.equal("s", "changed")).collect()] == [7]
