"""format("paimon_rs"): the Python Data Source over the same engine."""

import pyarrow as pa
import pytest

import paimon_rs.spark as ps

from spark_helpers import create, data_files, orphans, plain_read, to_spark

SCHEMA = pa.schema([
    pa.field("dt", pa.string(), nullable=False),
    pa.field("id", pa.int64(), nullable=False),
    pa.field("v", pa.string()),
])


def rows(ids, dts, v="a"):
    ids = list(ids)
    return pa.table({"dt": [dts[i % len(dts)] for i in range(len(ids))], "id": ids,
                     "v": [f"{v}{i}" for i in ids]}, schema=SCHEMA)


def test_read_with_filter_and_projection_push_down(registered, catalog):
    spark = registered
    t = create(catalog, "db.src", SCHEMA, ["dt"], ["dt", "id"], bucket="2")
    ps.write(to_spark(spark, rows(range(200), ["a", "b"])), t)
    df = spark.read.format("paimon_rs").load(t.table_path)
    assert df.count() == 200
    assert [f.name for f in df.schema.fields] == ["dt", "id", "v"]
    q = df.filter("dt = 'b' AND id < 20").select("id")
    plan = q._jdf.queryExecution().executedPlan().toString()
    assert "Filter" not in plan.replace("RuntimeFilters", ""), plan  # all pushed: Spark filters nothing
    assert sorted(r["id"] for r in q.collect()) == list(range(1, 20, 2))
    # projection: the columns option, or a schema given to the reader
    p = spark.read.format("paimon_rs").option("columns", "id,v").load(t.table_path)
    assert p.columns == ["id", "v"] and p.count() == 200
    p2 = spark.read.format("paimon_rs").schema("v string, id bigint").load(t.table_path)
    assert {(r["id"], r["v"]) for r in p2.collect()} == {(i, f"a{i}") for i in range(200)}
    # time travel and an unknown option (refused, never ignored)
    ps.write(to_spark(spark, rows(range(200, 210), ["a"])), t)
    assert spark.read.format("paimon_rs").option("snapshot_id", "1").load(t.table_path).count() == 200
    with pytest.raises(Exception, match="no-such-option"):
        spark.read.format("paimon_rs").option("no-such-option", "1").load(t.table_path).count()


def test_write_append_and_overwrite(registered, catalog):
    spark = registered
    t = create(catalog, "db.sink", SCHEMA, ["dt"], ["dt", "id"], bucket="2")
    df = ps.distribute(to_spark(spark, rows(range(100), ["a", "b"])), t)
    df.write.format("paimon_rs").mode("append").save(t.table_path)
    assert plain_read(t).num_rows == 100
    over = ps.distribute(to_spark(spark, rows(range(500, 505), ["a"])), t)
    over.write.format("paimon_rs").mode("overwrite").save(t.table_path)
    got = sorted((r["dt"], r["id"]) for r in plain_read(t).to_pylist())
    assert got == sorted([("a", i) for i in range(500, 505)] + [("b", i) for i in range(1, 100, 2)])
    assert not orphans(t)


def test_a_pk_bucket_written_by_two_tasks_is_refused(registered, catalog):
    """Without distribute(), tasks write whatever rows they hold: two of them wrote one bucket of
    a primary-key table (their sequence numbers would tie): nothing is committed, no file stays."""
    spark = registered
    t = create(catalog, "db.undistributed", SCHEMA, ["dt"], ["dt", "id"], bucket="1")
    df = to_spark(spark, rows(range(100), ["a"])).repartition(3)
    with pytest.raises(Exception, match="written by Spark partitions"):
        df.write.format("paimon_rs").mode("append").save(t.table_path)
    assert t.latest_snapshot_id() is None and not data_files(t)


def test_push_down_follows_the_documented_conf_not_the_call_stack(spark, catalog):
    """The reader implements pushFilters unless told otherwise (no guess from Spark's call
    stack: called outside any Spark worker it still does), register_data_source switches Spark's
    conf on, and a session that keeps it off reads with the filter_pushdown option."""
    from pyspark.sql.datasource import DataSourceReader

    from paimon_rs.spark.source import PaimonRsDataSource

    t = create(catalog, "db.conf", SCHEMA, ["dt"], ["dt", "id"], bucket="2")
    ps.write(to_spark(spark, rows(range(40), ["a", "b"])), t)
    src = PaimonRsDataSource({"path": t.table_path})
    reader = src.reader(src.schema())
    assert getattr(reader.pushFilters, "__func__", None) is not DataSourceReader.pushFilters
    off = PaimonRsDataSource({"path": t.table_path, "filter_pushdown": "false"})
    assert getattr(off.reader(off.schema()).pushFilters, "__func__", None) is DataSourceReader.pushFilters
    conf = ps.FILTER_PUSHDOWN_CONF
    try:
        spark.conf.set(conf, "false")
        ps.register_data_source(spark, filter_pushdown=False)
        assert spark.conf.get(conf) == "false"
        df = spark.read.format("paimon_rs").option("filter_pushdown", "false").load(t.table_path)
        assert sorted(r["id"] for r in df.filter("id < 6").collect()) == list(range(6))
        with pytest.raises(Exception, match="filterPushdown"):  # Spark's refusal names the conf
            spark.read.format("paimon_rs").load(t.table_path).filter("id < 6").collect()
        ps.register_data_source(spark)
        assert spark.conf.get(conf) == "true"
        q = spark.read.format("paimon_rs").load(t.table_path).filter("dt = 'a' AND id < 6")
        assert "Filter" not in q._jdf.queryExecution().executedPlan().toString().replace("RuntimeFilters", "")
        assert sorted(r["id"] for r in q.collect()) == [0, 2, 4]
    finally:
        spark.conf.set(conf, "true")
