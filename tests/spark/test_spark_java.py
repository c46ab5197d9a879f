"""Java Paimon reads what Spark wrote through paimon_rs (its own JVM, tests/compat/java_env.py,
next to Spark's: two JVM processes, nothing shared)."""

import sys
from pathlib import Path

import pyarrow as pa
import pytest

import paimon_rs.spark as ps
from paimon_rs import CatalogFactory

from spark_helpers import create, to_spark

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "compat"))

import java_env  # noqa: E402

pytestmark = pytest.mark.java


@pytest.fixture(scope="module")
def java(tmp_path_factory):
    jvm = java_env.JavaPaimon.start("1.0", tmp_path_factory.mktemp("jvm-1.0"))
    yield jvm
    jvm.close()


def test_java_reads_what_spark_wrote(spark, java, tmp_path):
    wh = tmp_path / "wh"
    catalog = CatalogFactory.create({"warehouse": str(wh)})
    schema = pa.schema([pa.field("dt", pa.string(), nullable=False), pa.field("id", pa.int64(), nullable=False),
                        pa.field("v", pa.string()), pa.field("amount", pa.decimal128(10, 2)),
                        pa.field("op", pa.string())])
    t = create(catalog, "db.j", schema, ["dt"], ["dt", "id"], bucket="3", **{"rowkind.field": "op"})
    import decimal

    def rows(ids, op="+I", v="a"):
        ids = list(ids)
        return pa.table({"dt": ["x" if i % 2 else "y" for i in ids], "id": ids, "v": [f"{v}{i}" for i in ids],
                         "amount": [decimal.Decimal(i).scaleb(-2) for i in ids], "op": [op] * len(ids)},
                        schema=schema)

    ps.write(to_spark(spark, rows(range(300))), t)
    ps.write(to_spark(spark, pa.concat_tables([rows(range(10), v="b"), rows(range(10, 20), op="-D")])), t)
    got = java.call("read", warehouse=str(wh), table="db.j")["rows"]
    want = {i: (f"b{i}" if i < 10 else f"a{i}") for i in range(300) if not 10 <= i < 20}
    by_id = {r[1]: r[2] for r in got}
    assert by_id == want


def test_java_reads_what_spark_compacted(spark, java, tmp_path):
    wh = tmp_path / "wh"
    catalog = CatalogFactory.create({"warehouse": str(wh)})
    schema = pa.schema([pa.field("dt", pa.string(), nullable=False), pa.field("id", pa.int64(), nullable=False),
                        pa.field("v", pa.string())])
    t = create(catalog, "db.c", schema, ["dt"], ["dt", "id"], bucket="2")
    w = t.copy({"write-only": "true"})
    model = {}
    for k in range(4):
        ids = list(range(k * 20, k * 20 + 50))
        ps.write(to_spark(spark, pa.table({"dt": ["x" if i % 2 else "y" for i in ids], "id": ids,
                                           "v": [f"w{k}_{i}" for i in ids]}, schema=schema)), w)
        model.update({i: f"w{k}_{i}" for i in ids})
    assert ps.compact(spark, t, full=True) is not None
    got = java.call("read", warehouse=str(wh), table="db.c")["rows"]
    assert {r[1]: r[2] for r in got} == model and len(got) == len(model)
    levels = {f["level"] for f in java.call("files", warehouse=str(wh), table="db.c")}
    assert levels == {5}


@pytest.mark.parametrize("dv", [False, True], ids=["compacted", "deletion-vectors"])
def test_spark_reads_what_java_wrote_and_compacted(spark, java, tmp_path, dv):
    """Java writes several commits of upserts and deletes into a partitioned PK table (with
    deletion vectors: Java's compaction writes them) and compacts; Spark reads it through
    paimon_rs.spark.read and the Python Data Source, as Java does."""
    wh = tmp_path / "wh"
    options = {"bucket": "2"}
    if dv:
        options["deletion-vectors.enabled"] = "true"
    java.call("create_table", warehouse=str(wh), table="db.jw",
              fields=[{"name": "dt", "type": "STRING"}, {"name": "id", "type": "BIGINT"},
                      {"name": "v", "type": "STRING"}],
              primary_keys=["dt", "id"], partition_keys=["dt"], table_options=options)
    model = {}
    for k in range(4):
        ids = list(range(k * 15, k * 15 + 40))
        kinds = ["-D" if (k == 3 and i % 5 == 0) else "+I" for i in ids]
        java.call("write", warehouse=str(wh), table="db.jw",
                  commits=[{"rows": [["x" if i % 2 else "y", i, f"j{k}_{i}"] for i in ids], "kinds": kinds}])
        for i, kind in zip(ids, kinds):
            if kind == "-D":
                model.pop(i, None)
            else:
                model[i] = f"j{k}_{i}"
        if dv:  # a picked compaction after each commit marks the replaced rows in deletion vectors
            java.call("compact", warehouse=str(wh), table="db.jw", full=False)
        elif k == 1:
            java.call("compact", warehouse=str(wh), table="db.jw", full=True)
    if dv:
        index = wh / "db.db" / "jw" / "index"
        assert index.is_dir() and any(index.iterdir()), "Java wrote no deletion vector index"
    java_rows = java.call("read", warehouse=str(wh), table="db.jw")["rows"]
    assert {r[1]: r[2] for r in java_rows} == model
    t = CatalogFactory.create({"warehouse": str(wh)}).get_table("db.jw")
    got = ps.read(spark, t).collect()
    assert {r["id"]: r["v"] for r in got} == model and len(got) == len(model)
    pb = t.new_read_builder().new_predicate_builder()
    filtered = ps.read(spark, t, columns=["id", "v"], filter=pb.greater_than("id", 30)).collect()
    assert {r["id"]: r["v"] for r in filtered} == {i: v for i, v in model.items() if i > 30}
    ps.register_data_source(spark)
    df = spark.read.format("paimon_rs").load(t.table_path)
    assert {r["id"]: r["v"] for r in df.collect()} == model
    assert {r["id"] for r in df.where("id > 30").select("id").collect()} == {i for i in model if i > 30}


def dynamic_table(tmp_path, name: str, **options: str):
    """(warehouse, a dynamic-bucket table ``name`` (dt, id, v; 25 keys a bucket; ``options``
    besides), rows(ids, v))."""
    wh = tmp_path / "wh"
    catalog = CatalogFactory.create({"warehouse": str(wh)})
    schema = pa.schema([pa.field("dt", pa.string(), nullable=False), pa.field("id", pa.int64(), nullable=False),
                        pa.field("v", pa.string())])
    t = create(catalog, name, schema, ["dt"], ["dt", "id"], bucket="-1",
               **{"dynamic-bucket.target-row-num": "25", **options})

    def rows(ids, v):
        ids = list(ids)
        return pa.table({"dt": ["x" if i % 2 else "y" for i in ids], "id": ids, "v": [f"{v}{i}" for i in ids]},
                        schema=schema)

    return wh, t, rows


def test_java_reads_a_dynamic_bucket_table_spark_wrote_and_overwrote(spark, java, tmp_path):
    """A dynamic-bucket table (#28) written by Spark's assign stage and bucket writers, then
    partly overwritten: Java reads the model."""
    wh, t, rows = dynamic_table(tmp_path, "db.d")
    ps.write(to_spark(spark, rows(range(200), "a")), t)
    ps.write(to_spark(spark, rows(range(100, 300), "b")), t)
    ps.write(to_spark(spark, rows(range(1, 40, 2), "o")), t, overwrite={"dt": "x"})
    want = {i: ("o" if i % 2 else "b" if i >= 100 else "a") + str(i) for i in range(300) if i % 2 == 0}
    want.update({i: f"o{i}" for i in range(1, 40, 2)})
    got = java.call("read", warehouse=str(wh), table="db.d")["rows"]
    assert {r[1]: r[2] for r in got} == want


def test_java_reads_a_dynamic_bucket_table_spark_sort_compacted(spark, java, tmp_path):
    """A dynamic-bucket table (#28) sort-compacted by Spark (the tasks assign fresh buckets and
    write a fresh hash index): Java reads the model, each key once."""
    wh, t, rows = dynamic_table(tmp_path, "db.ds")
    ps.write(to_spark(spark, rows(range(200), "a")), t)
    ps.write(to_spark(spark, rows(range(100, 300), "b")), t)
    assert ps.sort_compact(spark, t, "zorder", ["v", "id"], num_partitions=3) == 3
    want = {i: ("b" if i >= 100 else "a") + str(i) for i in range(300)}
    got = java.call("read", warehouse=str(wh), table="db.ds")["rows"]
    assert {r[1]: r[2] for r in got} == want and len(got) == len(want)


def test_java_reads_and_writes_a_deletion_vector_dynamic_table_spark_sort_compacted(spark, java, tmp_path):
    """A dynamic-bucket table with deletion vectors (#28) upserted and deleted (vectors live),
    sort-compacted by Spark (the tasks read the planned splits merged with their vectors, the
    overwrite drops the old hash index and vectors): Java reads the model, upserts and deletes
    on, and both read the result."""
    wh, t, rows = dynamic_table(tmp_path, "db.dsv", **{"deletion-vectors.enabled": "true"})
    ps.write(to_spark(spark, rows(range(200), "a")), t)
    ps.write(to_spark(spark, rows(range(100, 300), "b")), t)
    t.delete("id < 20")
    want = {i: ("b" if i >= 100 else "a") + str(i) for i in range(20, 300)}
    assert ps.sort_compact(spark, t, "zorder", ["v", "id"], num_partitions=2) is not None
    got = java.call("read", warehouse=str(wh), table="db.dsv")["rows"]
    assert {r[1]: r[2] for r in got} == want and len(got) == len(want)
    ids = list(range(250, 320))
    kinds = ["-D" if i % 7 == 0 else "+I" for i in ids]
    java.call("write", warehouse=str(wh), table="db.dsv",
              commits=[{"rows": [["x" if i % 2 else "y", i, f"j{i}"] for i in ids], "kinds": kinds}])
    for i, k in zip(ids, kinds):
        if k == "-D":
            want.pop(i, None)
        else:
            want[i] = f"j{i}"
    got = java.call("read", warehouse=str(wh), table="db.dsv")["rows"]
    assert {r[1]: r[2] for r in got} == want and len(got) == len(want)
    mine = ps.read(spark, CatalogFactory.create({"warehouse": str(wh)}).get_table("db.dsv")).collect()
    assert {r["id"]: r["v"] for r in mine} == want and len(mine) == len(want)


def test_java_skips_by_the_index_spark_wrote(spark, java, tmp_path):
    """A table with ``file-index.bloom-filter.columns`` written by ``spark.write`` (four commits, each
    file's ids spread over the whole range): Java sees every file's embedded index, its scan keeps one
    file for an ``=`` on an indexed column and none for an absent value, and reads the row."""
    wh = tmp_path / "wh"
    catalog = CatalogFactory.create({"warehouse": str(wh)})
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("s", pa.string())])
    t = create(catalog, "db.fi", schema, [], [], bucket="-1",
               **{"file-index.bloom-filter.columns": "id,s", "file-index.bloom-filter.id.items": "100",
                  "file-index.bloom-filter.s.items": "100"})
    for c in range(4):
        ids = list(range(c, 100, 4))
        ps.write(to_spark(spark, pa.table({"id": ids, "s": [f"s{i}" for i in ids]}, schema=schema)).coalesce(1), t)
    files = java.call("files", warehouse=str(wh), table="db.fi", filter=None)
    assert len(files) == 4 and all(f["embedded_index"] is not None and f["extra_files"] == [] for f in files)
    eq_8 = {"op": "equal", "field": "id", "value": 8}
    absent = {"op": "equal", "field": "s", "value": "s5x"}
    assert len(java.call("files", warehouse=str(wh), table="db.fi", filter=eq_8)) == 1
    assert java.call("files", warehouse=str(wh), table="db.fi", filter=absent) == []
    assert java.call("read", warehouse=str(wh), table="db.fi", filter=eq_8)["rows"] == [[8, "s8"]]
