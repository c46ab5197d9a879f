"""paimon_rs.spark in local[2,4]: write, read, exactly once, errors, pickling."""

import pickle

import pyarrow as pa
import pytest

import paimon_rs
import paimon_rs.spark as ps
from paimon_rs import CatalogFactory
from paimon_rs.spark import commit, common, writer
from paimon_rs.spark import shuffle as sh

from spark_helpers import WIDE, create, data_files, live_files, orphans, plain_read, to_spark, wide_rows

PK_SCHEMA = pa.schema([
    pa.field("dt", pa.string(), nullable=False),
    pa.field("id", pa.int64(), nullable=False),
    pa.field("v", pa.string()),
    pa.field("op", pa.string()),
])


@pytest.fixture
def catalog(tmp_path):
    return CatalogFactory.create({"warehouse": str(tmp_path / "wh")})


@pytest.fixture(params=[True, False], ids=["packed", "rows"])
def shuffle(request, monkeypatch):
    """write's shuffle both ways: rows packed into Arrow IPC blobs (classic Spark's default) and
    row by row (Spark Connect's, and the Data Source write's)."""
    monkeypatch.setattr(writer, "_SHUFFLE_PACKED", request.param)
    return request.param


def pk_rows(ids, dts, v="a", op="+I"):
    ids = list(ids)
    return pa.table({"dt": [dts[i % len(dts)] for i in range(len(ids))], "id": ids,
                     "v": [f"{v}{i}" for i in ids], "op": [op] * len(ids)}, schema=PK_SCHEMA)


def test_identity_shuffle_keys_are_sparks_own_hash(spark):
    from pyspark.sql import functions as F

    vals = list(range(-50, 2000, 7)) + [2**31 - 1, -(2**31)]
    df = spark.createDataFrame([(v,) for v in vals], "v int").select("v", F.hash("v").alias("h"))
    got = {r["v"]: r["h"] for r in df.collect()}
    assert got == {v: sh._spark_hash_int(v) for v in vals}
    # task i receives exactly bucket i
    for n in (1, 3, 8):
        keys = sh._identity_keys(n)
        parts = (spark.createDataFrame([(k,) for k in keys], "k int").repartition(n, "k")
                 .rdd.mapPartitionsWithIndex(lambda i, it: [(i, r["k"]) for r in it]).collect())
        assert sorted(parts) == [(b, keys[b]) for b in range(n)]


def test_table_pickles_as_path_and_options(catalog):
    t = create(catalog, "db.p", PK_SCHEMA, ["dt"], ["dt", "id"], bucket="2")
    c = t.copy({"write-buffer-size": "64 mb"})
    data = pickle.dumps(c)
    assert len(data) < 400 and b"write-buffer-size" in data
    back = pickle.loads(data)
    assert str(back.identifier) == "db.p" and back.table_path == t.table_path
    assert back.options["write-buffer-size"] == "64 mb"


def test_round_trip_partitioned_pk_table(spark, catalog, shuffle):
    t = create(catalog, "db.wide", WIDE, ["dt"], ["dt", "id"], bucket="3")
    data = wide_rows(range(0, 600), ["2026-01-01", "2026-01-02", "2026-01-03"])
    snap = ps.write(to_spark(spark, data), t)
    assert snap == 1
    expected = data.sort_by([("dt", "ascending"), ("id", "ascending")])
    assert plain_read(t, ["dt", "id"]).equals(expected)
    df = ps.read(spark, t)
    assert df.schema.simpleString().startswith("struct<dt:string,id:bigint,v:string,i8:tinyint")
    types = {f.name: f.dataType.simpleString() for f in df.schema.fields}
    assert types["amount"] == "decimal(12,3)" and types["ts"] == "timestamp_ntz" and types["tsz"] == "timestamp"
    assert types["attrs"] == "map<string,bigint>" and types["point"] == "struct<x:double,y:int>"
    back = pa.Table.from_batches(df._collect_as_arrow()).sort_by([("dt", "ascending"), ("id", "ascending")])
    assert back.num_rows == 600
    for name in expected.column_names:
        want = expected.column(name)
        got = back.column(name)
        if name == "tsz":
            got = got.cast(pa.timestamp("us", tz="UTC"))
        assert got.to_pylist() == want.to_pylist(), name
    # projection, filter, time travel
    pb = t.new_read_builder().new_predicate_builder()
    f = pb.and_predicates([pb.equal("dt", "2026-01-02"), pb.less_than("id", 50)])
    rows = ps.read(spark, t, columns=["id", "v"], filter=f).collect()
    assert sorted(r["id"] for r in rows) == [i for i in range(50) if i % 3 == 1]
    assert ps.read(spark, t, snapshot_id=1).count() == 600


def test_upserts_and_deletes_from_spark(spark, catalog, shuffle):
    t = create(catalog, "db.kinds", PK_SCHEMA, ["dt"], ["dt", "id"], bucket="4", **{"rowkind.field": "op"})
    ps.write(to_spark(spark, pk_rows(range(100), ["a", "b"])), t)
    changes = pa.concat_tables([
        pk_rows(range(0, 20), ["a", "b"], v="new"),        # upserts
        pk_rows(range(20, 30), ["a", "b"], op="-D"),       # deletes
        pk_rows(range(100, 105), ["a", "b"], v="n"),       # inserts
    ])
    ps.write(to_spark(spark, changes), t)
    got = {(r["dt"], r["id"]): r["v"] for r in ps.read(spark, t).collect()}
    want = {(["a", "b"][i % 2], i): f"a{i}" for i in range(100)}
    for i in range(20):
        want[(["a", "b"][i % 2], i)] = f"new{i}"
    for i in range(20, 30):
        del want[(["a", "b"][i % 2], i)]
    for i in range(100, 105):
        want[(["a", "b"][i % 2], i)] = f"n{i}"
    assert got == want
    assert plain_read(t).num_rows == len(want)


def test_relative_warehouse_write_compact_read(spark, tmp_path, monkeypatch):
    """A catalog over a relative warehouse (issue 31): the driver's paths are absolute, so the
    executors (whose working directory is the JVM's, not this test's) write, compact and read
    the same table; eight one-bucket commits make the writers compact, as in the issue."""
    monkeypatch.chdir(tmp_path)
    rel = CatalogFactory.create({"warehouse": "wh"})
    t = create(rel, "db.rel", PK_SCHEMA, [], ["id"], bucket="1")
    want = {}
    for i in range(8):
        batch = pk_rows([i, i + 1], ["a"], v=f"c{i}-")
        ps.write(to_spark(spark, batch), t)
        want.update({r["id"]: r["v"] for r in batch.to_pylist()})
    ps.compact(spark, t, full=True)
    got = {r["id"]: r["v"] for r in ps.read(spark, t).collect()}
    assert got == want
    assert not (tmp_path / "wh" / "db.db" / "rel" / "wh").exists()


def test_unpartitioned_table_one_task_per_bucket(spark, catalog, shuffle):
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.string())])
    t = create(catalog, "db.u", schema, [], ["id"], bucket="5")
    data = pa.table({"id": list(range(1000)), "v": [str(i) for i in range(1000)]}, schema=schema)
    ps.write(to_spark(spark, data).repartition(3), t)
    # one writer per bucket: one file per bucket, 5 buckets
    files = data_files(t)
    assert len(files) == 5 and {f.split("/")[-2] for f in files} == {f"bucket-{b}" for b in range(5)}
    assert plain_read(t, ["id"]).equals(data)


def _max_batch_rows(spark) -> int:
    def sizes(it):
        for b in it:
            yield pa.record_batch({"n": pa.array([b.num_rows], pa.int64())})

    return max(r["n"] for r in spark.range(0, 250_000, 1, 1).mapInArrow(sizes, "n long").collect())


def test_write_tasks_get_larger_arrow_batches_unless_the_session_sets_them(spark, catalog):
    """write's job runs with WRITE_BATCH_ROWS rows per Arrow batch (Spark's default 10,000 costs
    the Python writers ~11% more CPU) and Spark's per-row byte check off (~25% of the job's
    CPU); settings the session makes stand; the session is left as it was."""
    rows, cap = ps.ARROW_BATCH_CONF, ps.ARROW_BYTES_CONF
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.string())])
    t = create(catalog, "db.batch_rows", schema, [], ["id"], bucket="2")
    confs = writer._write_batch_confs(t)
    assert confs == {rows: str(ps.WRITE_BATCH_ROWS), cap: str(2**31 - 1)}
    assert rows not in spark.conf.getAll and cap not in spark.conf.getAll
    with common._session_confs(spark, confs):
        assert spark.conf.get(cap) == "2147483647"  # Int.MaxValue: Spark skips the check
        assert _max_batch_rows(spark) == ps.WRITE_BATCH_ROWS
    assert rows not in spark.conf.getAll and cap not in spark.conf.getAll
    assert _max_batch_rows(spark) == 10_000
    for key, value in ((rows, "5000"), (cap, "1000000")):
        spark.conf.set(key, value)
        try:
            with common._session_confs(spark, confs):
                # either set: both as the session has them (a chosen size keeps Spark's cap)
                assert spark.conf.getAll[key] == value
                assert (rows if key == cap else cap) not in spark.conf.getAll
            assert spark.conf.getAll[key] == value
        finally:
            spark.conf.unset(key)
    ps.write(to_spark(spark, pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"]}, schema=schema)), t)
    assert rows not in spark.conf.getAll and cap not in spark.conf.getAll and plain_read(t).num_rows == 3


def test_the_writers_get_the_write_jobs_batch_size(spark, catalog, tmp_path, shuffle):
    """Both stages of write run inside the job's settings: the rows reach the writers in
    batches of WRITE_BATCH_ROWS (packed: the pack stage's input batches, sliced by bucket; one
    bucket here). Building the RDD of the packed frame runs the pack stage (AQE); built before
    the settings were made, it ran with Spark's 10,000 and the per-row byte check."""
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.string())])
    t = create(catalog, "db.writer_rows", schema, [], ["id"], bucket="1")
    log = tmp_path / "rows"
    log.mkdir()
    df = spark.range(0, 250_000, 1, 1).selectExpr("id", "CAST(id AS STRING) AS v")
    ps.write(df, t, _batch_rows_log=str(log))
    sizes = [int(x) for f in log.iterdir() for x in f.read_text().split()]
    assert sum(sizes) == 250_000 and max(sizes) == ps.WRITE_BATCH_ROWS, sorted(sizes)[-5:]
    assert plain_read(t).num_rows == 250_000


def test_write_under_large_var_types(spark, catalog, shuffle):
    """With spark.sql.execution.arrow.useLargeVarTypes on, Spark hands and takes large_string /
    large_binary: the pack stage emits its blobs as large_binary and the writers take the
    strings as the table's."""
    t = create(catalog, "db.large_vt", PK_SCHEMA, ["dt"], ["dt", "id"], bucket="3")
    data = pk_rows(range(2000), ["a", "b"])
    spark.conf.set("spark.sql.execution.arrow.useLargeVarTypes", "true")
    try:
        ps.write(to_spark(spark, data), t)
    finally:
        spark.conf.unset("spark.sql.execution.arrow.useLargeVarTypes")
    assert plain_read(t).sort_by([("dt", "ascending"), ("id", "ascending")]).equals(
        data.sort_by([("dt", "ascending"), ("id", "ascending")]))


def test_a_null_key_fails_the_write_naming_the_table_and_leaves_nothing(spark, catalog, shuffle):
    """A null in a primary-key column reaches the driver as an error naming the table and the
    column, from either shuffle; nothing is committed and no file is left."""
    t = create(catalog, "db.null_key", PK_SCHEMA, ["dt"], ["dt", "id"], bucket="2")
    schema = pa.schema([f.with_nullable(True) for f in PK_SCHEMA])
    data = pa.table({"dt": ["a", "a", "b"], "id": [1, None, 3], "v": ["x", "y", "z"], "op": ["+I"] * 3},
                    schema=schema)
    with pytest.raises(Exception) as e:
        ps.write(to_spark(spark, data), t)
    msg = str(e.value)
    assert "db.null_key" in msg and "'id'" in msg and "null" in msg, msg[-2000:]
    assert t._core.latest_snapshot_id() is None and not data_files(t)


class _Columns:
    def __init__(self, columns):
        self.columns = columns


def _unpack(out):
    """(key, rows) of every blob of a pack task's output batches."""
    got = []
    for b in out:
        assert b.schema.names == ["k", "blob"]
        keys = b.column("k").to_pylist()
        assert len(set(keys)) == len(keys), keys  # one blob per key per emitted batch
        for k, blob in zip(keys, b.column("blob").to_pylist()):
            got.append((k, pa.ipc.open_stream(blob).read_all()))
    return got


@pytest.mark.parametrize("partitioned", [False, True], ids=["unpartitioned", "partitioned"])
def test_pack_groups_every_row_under_its_shuffle_key(catalog, monkeypatch, partitioned):
    """The pack stage (no Spark needed): every input row comes out once, in a blob whose key is
    the row's shuffle key (unpartitioned: the bucket's identity key); a small buffer emits
    several times, so a key has several blobs, each whole."""
    t = create(catalog, f"db.pack_{partitioned}", PK_SCHEMA, ["dt"] if partitioned else [], ["dt", "id"], bucket="4")
    data = pk_rows(range(5000), ["a", "b", "c"])
    spec = sh._shuffle_spec(_Columns(data.column_names), t)
    monkeypatch.setattr(sh, "PACK_BUFFER_BYTES", 40_000)
    out = list(sh._pack_task(spec, False, iter(data.to_batches(700))))
    assert len(out) > 2
    got = _unpack(out)
    for k, rows in got:
        for b in rows.to_batches():
            assert set(sh._shuffle_keys(spec, t, b.select(spec.key_columns)).to_pylist()) == {k}
        if not partitioned:
            assert k in spec.identity_keys
    back = pa.concat_tables([rows for _, rows in got]).sort_by("id")
    assert back.equals(data.sort_by("id"))
    assert len({k for k, _ in got}) < len(got)  # several blobs of one key


def test_pack_splits_emitted_batches_and_follows_large_var_types(catalog, monkeypatch):
    """Emitted batches stay under _PACK_BATCH_BYTES (Arrow binary offsets are 32-bit); with
    Spark's large variable-width types on, the blob column is large_binary."""
    t = create(catalog, "db.pack_split", PK_SCHEMA, [], ["dt", "id"], bucket="3")
    data = pk_rows(range(3000), ["a"])
    spec = sh._shuffle_spec(_Columns(data.column_names), t)
    monkeypatch.setattr(sh, "_PACK_BATCH_BYTES", 1)
    for large in (False, True):
        out = list(sh._pack_task(spec, large, iter(data.to_batches())))
        assert [b.num_rows for b in out] == [1, 1, 1]
        assert {b.schema.field("blob").type for b in out} == {pa.large_binary() if large else pa.binary()}
        assert sum(rows.num_rows for _, rows in _unpack(out)) == 3000


def test_write_batch_rows_shrink_for_wide_rows():
    """Without Spark's byte cap, write's batches stay near WRITE_BATCH_BYTES by the schema's
    estimate of a row: fixed widths exact, variable-width values counted as 64 bytes."""
    narrow = pa.schema([("a", pa.int64()), ("b", pa.int32()), ("c", pa.bool_()), ("s", pa.string())])
    assert writer._row_bytes(narrow) == 8 + 4 + 1 + 68
    wide = pa.schema([(f"d{i}", pa.float64()) for i in range(200)] + [("m", pa.map_(pa.string(), pa.int64()))])
    assert writer._row_bytes(wide) == 1600 + 4 + 4 * (68 + 8)
    nested = pa.schema([("r", pa.struct([("x", pa.decimal128(20, 2)), ("l", pa.list_(pa.date32()))]))])
    assert writer._row_bytes(nested) == 16 + 4 + 4 * 4

    class T:
        arrow_schema = wide

    assert writer._write_batch_confs(T())[ps.ARROW_BATCH_CONF] == str(ps.WRITE_BATCH_BYTES // writer._row_bytes(wide))


def test_batch_confs_a_spark_refuses_stay_at_its_default():
    """A Spark that refuses one of write's Arrow batch settings (another version's bounds) runs
    the job with the others; only what was set is unset after."""

    class Conf:
        getAll: dict = {}

        def __init__(self):
            self.log = []

        def set(self, k, v):
            if k == ps.ARROW_BYTES_CONF:
                raise ValueError("out of range")
            self.log.append(("set", k, v))

        def unset(self, k):
            self.log.append(("unset", k))

    class Session:
        conf = Conf()

    spark = Session()
    with common._session_confs(spark, {ps.ARROW_BATCH_CONF: "100000", ps.ARROW_BYTES_CONF: "2147483647"}):
        assert spark.conf.log == [("set", ps.ARROW_BATCH_CONF, "100000")]
    assert spark.conf.log[1:] == [("unset", ps.ARROW_BATCH_CONF)]


def test_empty_dataframe_and_empty_tasks(spark, catalog):
    t = create(catalog, "db.e", PK_SCHEMA, ["dt"], ["dt", "id"], bucket="8")
    empty = spark.createDataFrame([], "dt string, id bigint, v string, op string")
    assert ps.write(empty, t) is None
    assert t.latest_snapshot_id() is None
    assert ps.read(spark, t).count() == 0
    # 3 rows into 8 buckets: most tasks get nothing
    assert ps.write(to_spark(spark, pk_rows(range(3), ["x"])), t) == 1
    assert ps.read(spark, t).count() == 3
    assert len(data_files(t)) <= 3 and not orphans(t)


def test_overwrite_dynamic_and_static(spark, catalog):
    t = create(catalog, "db.o", PK_SCHEMA, ["dt"], ["dt", "id"], bucket="2")
    ps.write(to_spark(spark, pk_rows(range(10), ["a", "b"])), t)
    ps.write(to_spark(spark, pk_rows(range(100, 103), ["a"], v="o")), t, overwrite=True)
    got = sorted((r["dt"], r["id"]) for r in ps.read(spark, t).collect())
    assert got == sorted([("a", i) for i in range(100, 103)] + [("b", i) for i in range(1, 10, 2)])
    ps.write(to_spark(spark, pk_rows(range(200, 201), ["b"])), t, overwrite={"dt": "b"})
    got = sorted((r["dt"], r["id"]) for r in ps.read(spark, t).collect())
    assert got == sorted([("a", i) for i in range(100, 103)] + [("b", 200)])
    with pytest.raises(paimon_rs.PaimonRsError, match="outside the partition"):
        ps.write(to_spark(spark, pk_rows(range(1), ["a"])), t, overwrite={"dt": "b"})
    assert not orphans(t)


def test_a_task_that_fails_after_writing_is_retried_once_committed(spark, catalog, tmp_path, shuffle):
    """Every task's first attempt writes its files, then fails; the retries commit. No duplicate
    rows, and the failed attempts' files are gone."""
    t = create(catalog, "db.retry", PK_SCHEMA, ["dt"], ["dt", "id"], bucket="3")
    marker = tmp_path / "fail-first-attempt"
    marker.write_text("1")
    ps.write(to_spark(spark, pk_rows(range(300), ["a", "b"])), t, num_tasks=4,
             _fail_first_attempt_marker=str(marker))
    assert plain_read(t).num_rows == 300
    names = {f.split("/")[-1] for f in data_files(t)}
    assert all("-a1-" in n for n in names), names  # only the retries' files
    assert data_files(t) == live_files(t) and not orphans(t)


def test_a_failed_job_leaves_the_table_and_no_files(spark, catalog):
    t = create(catalog, "db.fail", PK_SCHEMA, ["dt"], ["dt", "id"], bucket="2", **{"rowkind.field": "op"})
    ps.write(to_spark(spark, pk_rows(range(10), ["a"])), t)
    before = plain_read(t, ["id"])
    files_before = data_files(t)
    # a row kind the table cannot take: every attempt fails in the writer, after other rows
    bad = pa.concat_tables([pk_rows(range(10, 200), ["a", "b"]), pk_rows([7], ["a"], op="?X")])
    with pytest.raises(Exception) as e:
        ps.write(to_spark(spark, bad), t)
    msg = str(e.value)
    assert "paimon_rs.spark.write into db.fail" in msg and "bucket" in msg and "dt='a'" in msg, msg
    assert t.latest_snapshot_id() == 1
    assert plain_read(t, ["id"]).equals(before)
    assert data_files(t) == files_before


def test_a_job_retried_with_its_commit_identifier_lands_once(spark, catalog):
    t = create(catalog, "db.ident", PK_SCHEMA, ["dt"], ["dt", "id"], bucket="2")
    df = to_spark(spark, pk_rows(range(50), ["a"]))
    s1 = ps.write(df, t, commit_user="job-42", commit_identifier=7)
    s2 = ps.write(df, t, commit_user="job-42", commit_identifier=7)
    assert s1 == s2 == 1 and t.latest_snapshot_id() == 1
    assert ps.write(df, t, commit_user="job-42", commit_identifier=8) == 2
    assert plain_read(t).num_rows == 50 and not orphans(t)


def test_append_tables_bucketed_and_unaware(spark, catalog):
    schema = pa.schema([pa.field("dt", pa.string()), pa.field("id", pa.int64()), pa.field("v", pa.string())])
    t1 = create(catalog, "db.a1", schema, ["dt"], [], bucket="2", **{"bucket-key": "id"})
    t2 = create(catalog, "db.a2", schema, ["dt"], [])
    data = pa.table({"dt": ["x", "y"] * 50, "id": list(range(100)), "v": ["v"] * 100}, schema=schema)
    for t in (t1, t2):
        ps.write(to_spark(spark, data).repartition(3), t)
        ps.write(to_spark(spark, data), t)
        assert ps.read(spark, t).count() == 200 and plain_read(t).num_rows == 200


def test_columns_must_match(spark, catalog):
    t = create(catalog, "db.cols", PK_SCHEMA, ["dt"], ["dt", "id"], bucket="2")
    df = spark.createDataFrame([("a", 1, "x")], "dt string, id bigint, w string")
    with pytest.raises(paimon_rs.InvalidArgumentError, match=r"missing \['v', 'op'\].*not in the table \['w'\]"):
        ps.write(df, t)


def test_a_second_run_racing_past_the_identifier_check_leaves_no_files(catalog):
    """Two runs of one job (same commit user and identifier) both pass the driver's check before
    either commits: the second commit returns the first's snapshot and writes nothing, and its
    files are deleted, not left as orphans. (No Spark needed: the driver's commit step.)"""
    t = create(catalog, "db.race", PK_SCHEMA, ["dt"], ["dt", "id"], bucket="2")

    def run(prefix):
        w = t.copy({"data-file.prefix": prefix}).new_batch_write_builder().new_write()
        w.write_arrow(pk_rows(range(20), ["a"]))
        msgs = w.prepare_commit()
        w.close()
        builder = t.new_batch_write_builder().with_commit_user("job")
        collected = commit._Collected(msgs, {f for m in msgs for f in m.file_names})
        return commit._commit_collected(t, builder, collected, prefix, 5)

    assert run("data-run1-") == 1
    assert run("data-run2-") == 1
    names = {f.split("/")[-1] for f in data_files(t)}
    assert names and all(n.startswith("data-run1-") for n in names), names
    assert plain_read(t).num_rows == 20 and not orphans(t)


@pytest.mark.parametrize("arrow_type", [pa.int64(), pa.int32()], ids=["bigint", "int"])
def test_bucket_hash_in_spark_sql_is_the_engines(spark, catalog, arrow_type):
    """A one-column INT/BIGINT bucket key is bucketed by a Spark SQL expression (no Python
    hop before the shuffle): it gives the engine's bucket for every value, extremes and NULL
    (a nullable bucket key of an append table) included."""
    bits = 63 if arrow_type == pa.int64() else 31
    vals = [0, 1, -1, 7, -7, 42, 2**bits - 1, -(2**bits), 2**31 - 1, -(2**31), 123456789] + \
        [(i * 2654435761) % (2**bits) - (i % 2) * 2**(bits - 1) for i in range(300)] + [None]
    vals = [v for v in vals if v is None or -(2**bits) <= v < 2**bits]
    schema = pa.schema([pa.field("k", arrow_type), pa.field("v", pa.string())])
    for buckets in (1, 3, 8, 13):
        t = create(catalog, f"db.h{bits}_{buckets}", schema, [], [], bucket=str(buckets), **{"bucket-key": "k"})
        steps, col = sh._jvm_bucket_column(t, None, buckets)
        df = sh._with_steps(spark.createDataFrame(pa.table({"k": pa.array(vals, arrow_type)})), steps)
        got = {r["k"]: r[col] for r in df.select("k", col).collect()}
        _, want = paimon_rs._core.partition_bucket_of(t._core, pa.record_batch({"k": pa.array(vals, arrow_type)}))
        assert [got[v] for v in vals] == want.to_pylist(), buckets
    # other keys keep the Arrow UDF
    s2 = pa.schema([pa.field("k", pa.string())])
    t2 = create(catalog, "db.hs", s2, [], [], bucket="2", **{"bucket-key": "k"})
    assert sh._jvm_bucket_column(t2, None, 2) is None


def test_bucket_steps_without_lateral_aliases(spark, catalog):
    """The bucket steps are one select with lateral column aliases; a session that turns those
    off gets a withColumn per step, with the same buckets."""
    schema = pa.schema([pa.field("k", pa.int64()), pa.field("v", pa.string())])
    t = create(catalog, "db.h_nolca", schema, [], [], bucket="7", **{"bucket-key": "k"})
    vals = [0, 1, -1, 2**63 - 1, -(2**63), 99991, None]
    steps, col = sh._jvm_bucket_column(t, None, 7)
    frame = spark.createDataFrame(pa.table({"k": pa.array(vals, pa.int64())}))

    def buckets():
        got = {r["k"]: r[col] for r in sh._with_steps(frame, steps).select("k", col).collect()}
        return [got[v] for v in vals]

    with_lca = buckets()
    spark.conf.set(sh._LCA_CONF, "false")
    try:
        without = buckets()
    finally:
        spark.conf.unset(sh._LCA_CONF)
    _, want = paimon_rs._core.partition_bucket_of(t._core, pa.record_batch({"k": pa.array(vals, pa.int64())}))
    assert with_lca == without == want.to_pylist()


def _many_batches_table(catalog, name):
    """An append table of 2 buckets, 2 files each, ~200K rows per split: several batches per
    read task, so decode-ahead runs ahead and a limit stops a task in the middle."""
    schema = pa.schema([pa.field("id", pa.int64()), pa.field("v", pa.string())])
    catalog.create_database("db", True)
    catalog.create_table(name, paimon_rs.Schema.from_pyarrow_schema(schema, options={"bucket": "2",
                                                                                       "bucket-key": "id"}), False)
    t = catalog.get_table(name)
    for c in range(2):
        ids = pa.array(range(c * 200_000, (c + 1) * 200_000), pa.int64())
        wb = t.new_batch_write_builder()
        w = wb.new_write()
        w.write_arrow(pa.table({"id": ids, "v": ids.cast(pa.string())}, schema=schema))
        wb.new_commit().commit(w.prepare_commit())
        w.close()
    return t


def test_read_decodes_ahead_stops_at_a_limit_and_names_a_damaged_file(spark, catalog):
    import glob
    import os

    t = _many_batches_table(catalog, "db.many")
    ps.register_data_source(spark)
    # a limit stops the tasks early (their decode-ahead threads with them); the workers read on
    assert len(ps.read(spark, t).limit(5).collect()) == 5
    assert len(spark.read.format("paimon_rs").load(t.table_path).limit(5).collect()) == 5
    assert ps.read(spark, t).count() == 400_000
    assert ps.read(spark, t).agg({"id": "sum"}).collect()[0][0] == sum(range(400_000))
    assert spark.read.format("paimon_rs").load(t.table_path).count() == 400_000
    # a damaged file in the middle of a split: the error reaches the driver naming it
    victim = sorted(glob.glob(os.path.join(t.table_path, "bucket-1", "data-*")))[-1]
    with open(victim, "r+b") as f:
        f.truncate(os.path.getsize(victim) // 2)
    for df in (ps.read(spark, t), spark.read.format("paimon_rs").load(t.table_path)):
        with pytest.raises(Exception) as e:
            df.count()
        assert os.path.basename(victim) in str(e.value) and "bucket-1" in str(e.value)
