"""paimon_rs.spark.read's hybrid path: splits that are a plain scan of Parquet files are read by
Spark's own Parquet reader (paimon_rs.spark.parquet). Every read here is compared with the
engine-only read (``spark_parquet=False``): the same rows and the same Spark types (up to
nullability: Spark's file sources make every column nullable)."""

import datetime as dt
import decimal
from pathlib import Path

import pyarrow as pa
import pytest

import paimon_rs.spark as ps
from paimon_rs import CatalogFactory
from paimon_rs.predicate import PredicateBuilder
from paimon_rs.spark import parquet as sp

from spark_helpers import WIDE, create, to_spark

# every type family with nulls: decimals (INT32/INT64/fixed), timestamps (ms/us, with and
# without time zone), nested types (list of struct, map of lists, struct)
EXT = pa.schema(list(WIDE) + [
    pa.field("ts_ms", pa.timestamp("ms")),
    pa.field("tsz_ms", pa.timestamp("ms", tz="UTC")),
    pa.field("small", pa.decimal128(5, 2)),
    pa.field("big", pa.decimal128(38, 10)),
    pa.field("items", pa.list_(pa.struct([pa.field("k", pa.string()), pa.field("d", pa.decimal128(10, 4))]))),
    pa.field("lists", pa.map_(pa.string(), pa.list_(pa.int32()))),
])


def ext_rows(ids, dts, version=0) -> pa.Table:
    ids = list(ids)
    base = dt.datetime(2026, 1, 2, 3, 4, 5, 678901)

    def nul(i, v):
        return None if (i + version) % 5 == 0 else v

    cols = {
        "dt": [dts[i % len(dts)] for i in range(len(ids))],
        "id": ids,
        "v": [nul(i, f"v{i}-{version}") for i in ids],
        "i8": [nul(i, i % 100 - 50) for i in ids],
        "i16": [nul(i, i % 30000) for i in ids],
        "i32": [nul(i, i * 3 - 1000) for i in ids],
        "f32": [nul(i, i / 4) for i in ids],
        "f64": [nul(i, float("nan") if i % 11 == 0 else i / 3) for i in ids],
        "flag": [nul(i, i % 2 == 0) for i in ids],
        "amount": [nul(i, decimal.Decimal(i * 1001 + version).scaleb(-3)) for i in ids],
        # before 1582 too: Spark must not rebase (Paimon writes the proleptic calendar)
        "day": [nul(i, dt.date(1500 if i % 13 == 0 else 2026, 1, 1) + dt.timedelta(days=i % 365)) for i in ids],
        "ts": [nul(i, base + dt.timedelta(seconds=i)) for i in ids],
        "tsz": [nul(i, (base + dt.timedelta(minutes=i)).replace(tzinfo=dt.timezone.utc)) for i in ids],
        "bin": [nul(i, bytes([i % 256, version])) for i in ids],
        "tags": [nul(i, [f"t{i}", None] if i % 3 else []) for i in ids],
        "attrs": [nul(i, [("a", i), ("b", None)]) for i in ids],
        "point": [nul(i, {"x": i / 2, "y": None if i % 4 == 0 else i}) for i in ids],
        "ts_ms": [nul(i, dt.datetime(2026, 3, 4, 5, 6, 7, 123000) + dt.timedelta(hours=i)) for i in ids],
        "tsz_ms": [nul(i, dt.datetime(1969, 12, 31, 23, 59, 59, 999000, tzinfo=dt.timezone.utc)
                       + dt.timedelta(seconds=i)) for i in ids],
        "small": [nul(i, decimal.Decimal(i % 999).scaleb(-2)) for i in ids],
        "big": [nul(i, decimal.Decimal(10 ** 27 + i * 7 + version).scaleb(-10)) for i in ids],
        "items": [nul(i, [{"k": f"k{i}", "d": decimal.Decimal(i).scaleb(-4)}, {"k": None, "d": None}]) for i in ids],
        "lists": [nul(i, [("x", [i, None]), ("y", [])]) for i in ids],
    }
    return pa.table(cols, schema=EXT)


@pytest.fixture
def catalog(tmp_path):
    return CatalogFactory.create({"warehouse": str(tmp_path / "wh")})


def plan_of(df) -> str:
    return df._jdf.queryExecution().executedPlan().toString()


def same(spark, t, **kw):
    """The hybrid read equals the engine-only read; returns the hybrid frame's physical plan."""
    hybrid = ps.read(spark, t, **kw)
    engine = ps.read(spark, t, spark_parquet=False, **kw)
    assert hybrid.schema == sp.as_nullable(engine.schema)
    # as multisets of rows (repr: NaN equals NaN); the Arrow types are Spark's on both sides
    got = sorted(repr(r) for b in hybrid._collect_as_arrow() for r in b.to_pylist())
    want = sorted(repr(r) for b in engine._collect_as_arrow() for r in b.to_pylist())
    assert len(got) == len(want) and got == want
    return plan_of(hybrid)


def filters(t):
    pb = PredicateBuilder(t.arrow_schema)
    return [
        pb.and_predicates([pb.equal("dt", "2026-01-02"), pb.less_than("id", 150)]),
        pb.or_predicates([pb.is_null("v"), pb.between("amount", decimal.Decimal("10.000"),
                                                      decimal.Decimal("90.500"))]),
        pb.and_predicates([pb.is_in("i8", [1, 2, 3, -7]), pb.greater_or_equal("day", dt.date(2026, 1, 1))]),
        pb.and_predicates([pb.is_not_in("dt", ["2026-01-01"]), pb.startswith("v", "v1"),
                           pb.not_equal("flag", True)]),
        pb.or_predicates([pb.endswith("v", "7-0"), pb.contains("v", "33"), pb.not_between("i32", 0, 300)]),
    ]


@pytest.mark.parametrize("kind", ["pk", "append-bucketed", "append-unaware"])
def test_hybrid_read_equals_the_engine_read(spark, catalog, kind):
    if kind == "pk":
        t = create(catalog, "db.h", EXT, ["dt"], ["dt", "id"], bucket="2")
    else:
        t = create(catalog, "db.h", EXT, ["dt"], [], bucket="2" if kind == "append-bucketed" else "-1",
                   **({"bucket-key": "id"} if kind == "append-bucketed" else {}))
    ps.write(to_spark(spark, ext_rows(range(0, 300), ["2026-01-01", "2026-01-02"])), t)
    # partition 2026-01-01 written twice: its primary-key buckets need a merge (engine), the
    # other partition's are one file each (Spark's reader)
    ps.write(to_spark(spark, ext_rows(range(0, 300, 2), ["2026-01-01"], version=1)), t)
    plan = same(spark, t)
    assert "FileScan parquet" in plan
    if kind == "pk":
        assert "MapInArrow" in plan  # the merged buckets
    for f in filters(t):
        assert "FileScan parquet" in same(spark, t, filter=f)
    assert "FileScan parquet" in same(spark, t, columns=["id", "tsz", "items", "big"], filter=filters(t)[0])
    assert "FileScan parquet" in same(spark, t, columns=["lists", "dt"], filter=filters(t)[3])
    same(spark, t, snapshot_id=1)
    assert "FileScan" not in plan_of(ps.read(spark, t, spark_parquet=False))


def test_older_schema_files_and_compacted_tables(spark, catalog):
    t = create(catalog, "db.evo", EXT, ["dt"], ["dt", "id"], bucket="2")
    ps.write(to_spark(spark, ext_rows(range(0, 200), ["2026-01-01", "2026-01-02"])), t)
    ps.compact(spark, t, full=True)
    same(spark, t)
    splits = t._core.plan(None, None)[1]
    assert all(sp.split_fits(s, t.table_schema.id, t.table_path) for s in splits)  # top level, raw
    catalog.alter_table("db.evo", [__import__("paimon_rs").SchemaChange.add_column("extra", pa.int32())], False)
    t = catalog.get_table("db.evo")
    # files of schema 0 are evolved by the engine, never handed to Spark's reader by name
    splits = t._core.plan(None, None)[1]
    assert not any(sp.split_fits(s, t.table_schema.id, t.table_path) for s in splits)
    assert "FileScan" not in plan_of(ps.read(spark, t))
    same(spark, t)


def test_reads_that_cannot_take_sparks_reader_say_why():
    schema = pa.schema([pa.field("id", pa.int64()), pa.field("f", pa.float64()), pa.field("ns", pa.timestamp("ns")),
                        pa.field("s", pa.string()), pa.field("S2", pa.string()), pa.field("s2", pa.string())])
    pb = PredicateBuilder(schema)
    out = pa.schema(list(schema)[:1])
    assert sp.unfit_read("/tmp/t", out, ["id"], pa.schema(list(schema)[:4]), None) is None
    assert "s3://" in sp.unfit_read("s3://b/t", out, ["id"], schema, None)
    assert "ns" in sp.unfit_read("/tmp/t", schema, schema.names, pa.schema(list(schema)[:4]), None)
    assert "case" in sp.unfit_read("/tmp/t", out, ["id"], schema, None)
    small = pa.schema(list(schema)[:4])
    assert "'f'" in sp.unfit_read("/tmp/t", out, ["id"], small, pb.greater_than("f", 1.0))
    assert "like" in sp.unfit_read("/tmp/t", out, ["id"], small, pb.like("s", "a%"))
    assert "NULL" in sp.unfit_read("/tmp/t", out, ["id"], small, pb.is_in("id", [1, None]))
    assert "MULTISET" in sp.unfit_read("/tmp/t", out, ["id"], small, None,
                                       {"id": {"type": "MULTISET", "element": "INT"}})
    assert "BINARY(4)" in sp.unfit_read("/tmp/t", out, ["id"], small, None,
                                        {"id": {"type": "ROW", "fields": [{"name": "b", "type": "BINARY(4)"}]}})
    assert sp.unfit_read("/tmp/t", out, ["id"], small, None, {"id": "VARBINARY(10)"}) is None
    rk = pa.schema([pa.field("rowkind", pa.string())] + list(out))
    assert "row kinds" in sp.unfit_read("/tmp/t", rk, ["id"], small, None)


def test_session_confs_do_not_change_what_sparks_reader_returns(spark, catalog):
    """A session that rebases old dates (LEGACY) or skips missing files still gets the engine's
    rows, or the engine's error: the read sets its own options."""
    t = create(catalog, "db.confs", EXT, ["dt"], [], bucket="-1")
    ps.write(to_spark(spark, ext_rows(range(0, 60), ["2026-01-01"])), t)
    saved = {k: spark.conf.get(k) for k in ("spark.sql.parquet.datetimeRebaseModeInRead",
                                            "spark.sql.files.ignoreMissingFiles")}
    try:
        spark.conf.set("spark.sql.parquet.datetimeRebaseModeInRead", "LEGACY")
        spark.conf.set("spark.sql.files.ignoreMissingFiles", "true")
        assert "FileScan parquet" in same(spark, t, columns=["id", "day", "ts", "tsz_ms"])
        df = ps.read(spark, t)
        for s in t._core.plan(None, None)[1]:
            for f in s.files:
                (Path(t.table_path) / s.bucket_path / f.file_name).unlink()
        with pytest.raises(Exception, match="(?i)(not exist|not found|FileNotFound)"):
            df.collect()
    finally:
        for k, v in saved.items():
            spark.conf.set(k, v)


def test_many_files_are_not_listed_by_a_spark_job(spark, catalog):
    """More than 32 files (Spark's parallelPartitionDiscovery.threshold): Spark's file index
    would list the exact paths the read gives it in a Spark job (1.6 s at 100 files); the read
    builds its frame without one, leaves the session's conf as it was, and honours a threshold
    the session sets itself."""
    t = create(catalog, "db.many", EXT, ["dt"], ["dt", "id"], bucket="20")
    ps.write(to_spark(spark, ext_rows(range(0, 400), ["2026-01-01", "2026-01-02"])), t)
    files, _, rest = sp.route(t._core.plan(None, None)[1], t.table_schema.id, t.table_path)
    assert len(files) > sp._LISTING_DEFAULT and not rest  # every file through Spark's reader
    tracker = spark.sparkContext.statusTracker()

    def jobs_of_building():
        before = set(tracker.getJobIdsForGroup(None))
        ps.read(spark, t)
        return set(tracker.getJobIdsForGroup(None)) - before

    assert sp._LISTING_CONF not in spark.conf.getAll
    assert jobs_of_building() == set()
    assert sp._LISTING_CONF not in spark.conf.getAll  # unset again
    same(spark, t)
    spark.conf.set(sp._LISTING_CONF, "8")
    try:
        assert jobs_of_building()  # the session's own setting stands: Spark lists in a job
        assert spark.conf.get(sp._LISTING_CONF) == "8"
    finally:
        spark.conf.unset(sp._LISTING_CONF)
