"""pypaimon 2.1.0's public API on paimon_rs: what a user of pypaimon touches, written against our
names (issue 13). Each test uses the member as pypaimon documents it."""

from __future__ import annotations

import pickle

import pyarrow as pa
import pytest

import paimon_rs
from paimon_rs import (
    AtomicType,
    CatalogFactory,
    CoreOptions,
    DatabaseNotExistException,
    FileSystemCatalog,
    Identifier,
    Schema,
    TableAlreadyExistException,
    TableNotExistException,
)
from paimon_rs.exceptions import (
    DatabaseNotEmptyError,
    DatabaseNotFoundError,
    InvalidArgumentError,
    SchemaMismatchError,
    TableNotFoundError,
    UnsupportedError,
)

import stores
from unit_helpers import read, write

APPEND_SCHEMA = pa.schema([("id", pa.int64()), ("s", pa.string())])


def append_table(catalog, name="db.a", options=None):
    catalog.create_table(name, Schema.from_pyarrow_schema(APPEND_SCHEMA, options=options or {}), False)
    return catalog.get_table(name)


def rows(n0, n1):
    return pa.table({"id": list(range(n0, n1)), "s": [f"v{i}" for i in range(n0, n1)]})


# --- exceptions ------------------------------------------------------------------------------

def test_pypaimon_exception_names_are_our_classes(catalog):
    assert TableNotExistException is TableNotFoundError
    assert DatabaseNotExistException is DatabaseNotFoundError
    assert paimon_rs.DatabaseNotEmptyException is DatabaseNotEmptyError
    with pytest.raises(TableNotExistException):
        catalog.get_table("db.missing")
    with pytest.raises(paimon_rs.CatalogException):
        catalog.get_database("nope")
    append_table(catalog)
    with pytest.raises(TableAlreadyExistException):
        catalog.create_table("db.a", Schema.from_pyarrow_schema(APPEND_SCHEMA), False)


# --- catalog ---------------------------------------------------------------------------------

def test_catalog_factory_returns_the_filesystem_catalog(tmp_path):
    c = CatalogFactory.create({"warehouse": str(tmp_path)})
    assert isinstance(c, FileSystemCatalog)
    assert c.DB_SUFFIX == ".db" and c.DEFAULT_DATABASE == "default" and c.OWNER_PROP == "owner"
    assert c.catalog_options == {"warehouse": str(tmp_path)}
    assert not c.supports_version_management()


def test_get_database_and_paths(catalog):
    db = catalog.get_database("db")
    assert db.name == "db" and db.options == {} and db.comment is None
    with pytest.raises(DatabaseNotExistException):
        catalog.get_database("other")
    assert catalog.get_table_path("db.t").endswith("db.db/t")
    assert catalog.get_table_path(Identifier.create("db", "t")) == catalog.get_table_path("db.t")


def test_create_database_refuses_a_location_and_warns_on_other_properties(catalog):
    with pytest.raises(InvalidArgumentError, match="location"):
        catalog.create_database("x", False, {"location": "/elsewhere"})
    with pytest.warns(RuntimeWarning, match="discarded"):
        catalog.create_database("y", False, {"owner": "me"})
    assert "y" in catalog.list_databases()


@pytest.mark.stores
def test_drop_database(catalog, warehouse):
    catalog.create_database("d2", False)
    write(append_table(catalog, "d2.a"), rows(0, 10))
    d2 = stores.join(warehouse.uri, "d2.db")
    assert stores.walk_files(d2)
    with pytest.raises(DatabaseNotEmptyError, match="cascade"):
        catalog.drop_database("d2")
    with pytest.raises(ValueError):  # pypaimon raises ValueError here
        catalog.drop_database("d2", cascade=False)
    assert catalog.list_tables("d2") == ["a"], "refused: nothing deleted"
    catalog.drop_database("d2", cascade=True)
    assert "d2" not in catalog.list_databases() and "db" in catalog.list_databases()
    assert stores.walk_files(d2) == []
    with pytest.raises(DatabaseNotExistException):
        catalog.drop_database("d2")
    catalog.drop_database("d2", ignore_if_not_exists=True)
    catalog.create_database("d3", False)
    catalog.drop_database("d3")
    assert "d3" not in catalog.list_databases()


@pytest.mark.stores
def test_rename_table(catalog, warehouse):
    """On an object store the table's objects are copied, then deleted."""
    t = append_table(catalog)
    write(t, rows(0, 3))
    write(t, rows(3, 5))
    files = [f[len(t.table_path):] for f in stores.walk_files(t.table_path)]
    catalog.create_database("d2", False)
    catalog.rename_table("db.a", "d2.b")
    assert "a" not in catalog.list_tables("db") and catalog.list_tables("d2") == ["b"]
    moved = catalog.get_table("d2.b")
    assert stores.walk_files(t.table_path) == []
    assert [f[len(moved.table_path):] for f in stores.walk_files(moved.table_path)] == files
    assert read(moved, sort=["id"])["id"].to_pylist() == [0, 1, 2, 3, 4]
    # the moved table takes commits at its new place
    write(moved, rows(100, 101))
    assert read(moved).num_rows == 6
    with pytest.raises(TableNotExistException):
        catalog.rename_table("db.a", "db.c")
    append_table(catalog, "db.c")
    with pytest.raises(TableAlreadyExistException):
        catalog.rename_table("d2.b", "db.c")
    with pytest.raises(DatabaseNotExistException):
        catalog.rename_table("d2.b", "nodb.c")
    assert catalog.list_tables("d2") == ["b"]


def test_alter_database_is_refused_as_by_filesystem_catalogs(catalog):
    with pytest.raises(NotImplementedError):
        catalog.alter_database("db", [])
    with pytest.raises(DatabaseNotExistException):
        catalog.alter_database("nope", [])


# --- table -----------------------------------------------------------------------------------

def test_table_schema_options_and_keys(catalog, pk_table):
    t = pk_table
    ts = t.table_schema
    assert [f.name for f in ts.fields] == ["dt", "id", "name", "price"]
    # pypaimon's: the stored type parsed into a type object
    assert ts.fields[1].type == AtomicType("BIGINT", nullable=False) and ts.fields[0].id == 0
    assert ts.fields[1].type.type == "BIGINT" and not ts.fields[1].type.nullable
    assert ts.primary_keys == ["dt", "id"] and ts.partition_keys == ["dt"]
    assert t.schema() == ts and t.comment() is None
    assert t.options["bucket"] == "2" and t.options.bucket() == 2 and t.total_buckets == 2
    assert t.options.get(CoreOptions.BUCKET) == "2" and t.options.contains(CoreOptions.BUCKET)
    assert t.options.options.to_map() == dict(t.options)
    assert t.options.merge_engine() == "deduplicate" and t.options.file_format() == "parquet"
    assert t.partition_keys == ["dt"] and t.primary_keys == ["dt", "id"]
    assert t.trimmed_primary_keys == ["id"] and [f.name for f in t.trimmed_primary_keys_fields] == ["id"]
    assert t.field_names == ["dt", "id", "name", "price"] and set(t.field_dict) == set(t.field_names)
    assert t.is_primary_key_table and not t.cross_partition_update
    assert str(t.bucket_mode()) == "HASH_FIXED" and t.current_branch() == "main"
    assert t.identifier.get_full_name() == "db.t" and str(t.identifier) == "db.t"
    assert t.list_tags() == []
    a = append_table(catalog)
    assert str(a.bucket_mode()) == "BUCKET_UNAWARE" and not a.is_primary_key_table


def test_core_options_constants_are_the_option_keys(catalog):
    assert CoreOptions.BUCKET.key() == "bucket" and str(CoreOptions.MERGE_ENGINE) == "merge-engine"
    assert CoreOptions.SCAN_SNAPSHOT_ID.key() == "scan.snapshot-id"
    assert CoreOptions.WRITE_BUFFER_SIZE.key() == "write-buffer-size"  # paimon_rs option
    t = append_table(catalog, options={CoreOptions.TARGET_FILE_SIZE.key(): "1 mb"})
    assert t.options["target-file-size"] == "1 mb"


def test_table_from_path(catalog):
    t = append_table(catalog)
    write(t, rows(0, 2))
    t2 = paimon_rs.Table.from_path(t.table_path)
    assert read(t2, sort=["id"])["id"].to_pylist() == [0, 1]
    with pytest.raises(TableNotFoundError):
        paimon_rs.Table.from_path(t.table_path + "-missing")


# --- splits ----------------------------------------------------------------------------------

def test_split_files_partition_bucket_row_count(catalog):
    schema = pa.schema([("dt", pa.int32()), ("d", pa.date32()), ("id", pa.int64()), ("v", pa.string())])
    catalog.create_table("db.p", Schema.from_pyarrow_schema(
        schema, partition_keys=["dt", "d"], primary_keys=["dt", "d", "id"], options={"bucket": "1"}), False)
    t = catalog.get_table("db.p")
    import datetime
    day = datetime.date(2024, 5, 6)
    write(t, pa.table({"dt": pa.array([7, 7, 8], pa.int32()), "d": [day, day, day], "id": [1, 2, 3],
                       "v": ["a", "b", "c"]}))
    splits = t.new_read_builder().new_scan().plan().splits()
    by_part = {s.partition.to_dict()["dt"]: s for s in splits}
    assert set(by_part) == {7, 8}
    s7 = by_part[7]
    assert s7.partition.to_dict() == {"dt": 7, "d": day} and s7.partition.values == [7, day]
    assert [f.name for f in s7.partition.fields] == ["dt", "d"] and len(s7.partition) == 2
    assert s7.bucket == 0 and s7.row_count == 2
    assert len(s7.files) == 1 and s7.files[0].row_count == 2 and s7.files[0].level == 0
    assert s7.files[0].file_path.endswith(s7.files[0].file_name) and s7.files[0].file_size > 0
    back = pickle.loads(pickle.dumps(s7))
    assert back.partition == s7.partition and back.row_count == 2
    # unpartitioned: an empty row
    a = append_table(catalog)
    write(a, rows(0, 2))
    (sp,) = a.new_read_builder().new_scan().plan().splits()
    assert sp.partition.to_dict() == {} and len(sp.partition) == 0


# --- reads -----------------------------------------------------------------------------------

def test_to_arrow_parallelism(catalog):
    t = append_table(catalog)
    for i in range(4):
        write(t, rows(i * 10, i * 10 + 10))
    rb = t.new_read_builder()
    splits = rb.new_scan().plan().splits()
    r = rb.new_read()
    full = r.to_arrow(splits)
    assert r.to_arrow(splits, parallelism=1).equals(full)
    assert r.to_arrow(splits, parallelism=3).equals(full)
    assert r.to_pandas(splits, parallelism=2).shape == (40, 2)
    with pytest.raises(InvalidArgumentError, match="parallelism"):
        r.to_arrow(splits, parallelism=0)


def test_with_shard_partitions_the_splits(catalog, pk_table):
    a = append_table(catalog)
    for i in range(5):
        write(a, rows(i * 10, i * 10 + 10))
    for table in (a, pk_table):
        if table is pk_table:
            write(table, pa.table({"dt": ["x"] * 20, "id": list(range(20)), "name": ["n"] * 20,
                                   "price": [1.0] * 20}))
        all_ids = sorted(read(table)["id"].to_pylist())
        got = []
        for i in range(3):
            rb = table.new_read_builder()
            splits = rb.new_scan().with_shard(i, 3).plan().splits()
            if table is pk_table:
                assert all(s.bucket % 3 == i for s in splits)
            got += rb.new_read().to_arrow(splits)["id"].to_pylist()
        assert sorted(got) == all_ids
        rb = table.new_read_builder().with_shard(1, 2)
        assert sorted(rb.new_read().to_arrow(rb.new_scan().plan().splits())["id"].to_pylist()) == sorted(
            table.new_read_builder().new_read().to_arrow(
                table.new_read_builder().new_scan().with_shard(1, 2).plan().splits())["id"].to_pylist())
    with pytest.raises(InvalidArgumentError):
        a.new_read_builder().new_scan().with_shard(3, 3)
    with pytest.raises(InvalidArgumentError):
        a.new_read_builder().with_shard(0, 0)


def test_to_polars_duckdb_ray(catalog):
    t = append_table(catalog)
    write(t, rows(0, 3))
    rb = t.new_read_builder()
    splits = rb.new_scan().plan().splits()
    pl = pytest.importorskip("polars")
    df = rb.new_read().to_polars(splits)
    assert isinstance(df, pl.DataFrame) and sorted(df["id"].to_list()) == [0, 1, 2]
    for method, module, args in (("to_duckdb", "duckdb", (splits, "t")), ("to_ray", "ray", (splits,))):
        try:
            __import__(module)
        except ImportError:
            with pytest.raises(ImportError, match=f"{method} needs the '{module}' package"):
                getattr(rb.new_read(), method)(*args)


def test_with_partition_filter_and_read_type(catalog, pk_table):
    write(pk_table, pa.table({"dt": ["a", "b"], "id": [1, 2], "name": ["x", "y"], "price": [1.0, 2.0]}))
    rb = pk_table.new_read_builder()
    pb = rb.new_predicate_builder()
    rb.with_partition_filter(pb.equal("dt", "b")).with_read_type(pk_table.fields[1:3])
    out = rb.new_read().to_arrow(rb.new_scan().plan().splits())
    assert out.column_names == ["id", "name"] and out["id"].to_pylist() == [2]
    with pytest.raises(InvalidArgumentError, match="not partition keys"):
        rb.with_partition_filter(pb.equal("id", 1))


def test_to_pandas_nullable_ints_and_time(catalog):
    import datetime
    schema = pa.schema([("i", pa.int32()), ("b", pa.bool_()), ("t", pa.time64("us")), ("big", pa.int64()),
                        ("full", pa.int64())])
    catalog.create_table("db.n", Schema.from_pyarrow_schema(schema), False)
    t = catalog.get_table("db.n")
    write(t, pa.table({"i": pa.array([1, None], pa.int32()), "b": [True, None],
                       "t": pa.array([1_500_000, 2_000], pa.time64("us")),
                       "big": [2**53 + 1, None], "full": [1, 2]}))
    df = read_pandas(t)
    assert str(df["i"].dtype) == "Int32" and df["i"].isna().tolist() == [False, True]
    assert str(df["b"].dtype) == "boolean"
    assert df["big"][0] == 2**53 + 1  # float64 would round it
    assert str(df["full"].dtype) == "int64"  # no NULLs: numpy dtype, as pypaimon
    assert df["t"].tolist() == [datetime.time(0, 0, 1, 500_000), datetime.time(0, 0, 0, 2_000)]


def read_pandas(t):
    rb = t.new_read_builder()
    return rb.new_read().to_pandas(rb.new_scan().plan().splits()).sort_values("i").reset_index(drop=True)


def test_sub_millisecond_times_are_refused_not_truncated(catalog):
    catalog.create_table("db.tm", Schema.from_pyarrow_schema(pa.schema([("t", pa.time64("us"))])), False)
    t = catalog.get_table("db.tm")
    with pytest.raises(SchemaMismatchError, match=r"column 't': row 1 .*sub-millisecond"):
        write(t, pa.table({"t": pa.array([1000, 1001], pa.time64("us"))}))
    with pytest.raises(SchemaMismatchError, match="sub-millisecond"):
        write(t, pa.table({"t": pa.array([1], pa.time64("ns"))}))
    assert read(t).num_rows == 0


def test_sub_millisecond_times_inside_nested_types_are_refused(catalog):
    """ARRAY<TIME> elements, MAP<TIME, X> keys and ROW fields are milliseconds too: their
    sub-millisecond digits are refused, not truncated (review34 F6)."""
    s = pa.schema([("id", pa.int32()), ("a", pa.list_(pa.time64("us"))),
                   ("m", pa.map_(pa.time64("ns"), pa.int32())), ("r", pa.struct([("t", pa.time64("us"))]))])
    catalog.create_table("db.tn", Schema.from_pyarrow_schema(s), False)
    t = catalog.get_table("db.tn")

    def rows(a, m, r):
        return pa.Table.from_pydict({"id": [1], "a": [a], "m": [m], "r": [{"t": r}]}, schema=s)

    with pytest.raises(SchemaMismatchError, match=r"column 'a': row 0 holds, in a nested value, .*sub-millisecond"):
        write(t, rows([1000, 1001], [(2_000_000, 1)], 3000))
    with pytest.raises(SchemaMismatchError, match=r"column 'm': .*sub-millisecond"):
        write(t, rows([1000], [(2_000_001, 1)], 3000))
    with pytest.raises(SchemaMismatchError, match=r"column 'r': .*sub-millisecond"):
        write(t, rows([1000], [(2_000_000, 1)], 3001))
    assert read(t).num_rows == 0
    write(t, rows([1000, None], [(2_000_000, 1)], 3000))
    got = read(t).to_pylist()
    assert [v.microsecond for v in got[0]["a"] if v is not None] == [1000] and got[0]["r"]["t"].microsecond == 3000


# --- predicates ------------------------------------------------------------------------------

WORDS = ["apple", "banana", "cherry", "grape", "pineapple", "a_b", "a%b", None]


def test_string_predicates_match_python(catalog):
    t = append_table(catalog)
    # one file per word: pruning by statistics would show as missing rows
    for i, w in enumerate(WORDS):
        write(t, pa.table({"id": [i], "s": pa.array([w], pa.string())}))
    pb = t.new_read_builder().new_predicate_builder()
    cases = [
        (pb.endswith("s", "apple"), lambda w: w.endswith("apple")),
        (pb.contains("s", "an"), lambda w: "an" in w),
        (pb.like("s", "%app%"), lambda w: "app" in w),
        (pb.like("s", "_r%"), lambda w: len(w) > 1 and w[1] == "r"),
        (pb.like("s", "a\\_b"), lambda w: w == "a_b"),
        (pb.like("s", "a\\%b"), lambda w: w == "a%b"),
        (pb.like("s", "a_b"), lambda w: len(w) == 3 and w[0] == "a" and w[2] == "b"),
    ]
    for p, f in cases:
        want = sorted(i for i, w in enumerate(WORDS) if w is not None and f(w))
        assert sorted(read(t, predicate=p)["id"].to_pylist()) == want, p
    with pytest.raises(InvalidArgumentError, match="invalid escape"):
        pb.like("s", "a\\b")
    with pytest.raises(InvalidArgumentError, match="string pattern"):
        pb.contains("s", 1)


def test_not_between_reads_exactly_and_prunes_files_inside_the_range(catalog):
    t = append_table(catalog)
    for lo in (0, 10, 20):
        write(t, rows(lo, lo + 10))
    rb = t.new_read_builder()
    pb = rb.new_predicate_builder()
    rb.with_filter(pb.not_between("id", 10, 19))
    splits = rb.new_scan().plan().splits()
    assert sum(len(s.files) for s in splits) == 2  # the file of 10..19 cannot match
    assert sorted(rb.new_read().to_arrow(splits)["id"].to_pylist()) == list(range(10)) + list(range(20, 30))
    rb = t.new_read_builder()
    rb.with_filter(pb.not_between("id", 5, 14))  # every file holds a match
    splits = rb.new_scan().plan().splits()
    assert sum(len(s.files) for s in splits) == 3
    assert sorted(rb.new_read().to_arrow(splits)["id"].to_pylist()) == list(range(5)) + list(range(15, 30))


# --- writes ----------------------------------------------------------------------------------

def test_write_row(catalog, pk_table):
    wb = pk_table.new_batch_write_builder()
    w, c = wb.new_write(), wb.new_commit()
    w.write_row({"dt": "a", "id": 1, "name": "x", "price": 1.0})
    w.write_row(("a", 2, "y", None))
    w.write_row(paimon_rs.GenericRow(["b", 3, "z", 3.0],
                                     [pa.field(n, pa.null()) for n in ("dt", "id", "name", "price")]))
    with pytest.raises(SchemaMismatchError, match="3 values for 4 columns"):
        w.write_row(("a", 4, "w"))
    with pytest.raises(SchemaMismatchError, match="missing columns"):
        w.write_row({"dt": "a", "id": 4})
    c.commit(w.prepare_commit())
    w.close()
    out = read(pk_table, sort=["id"])
    assert out["id"].to_pylist() == [1, 2, 3] and out["price"].to_pylist() == [1.0, None, 3.0]


def test_with_write_type(catalog, pk_table):
    a = append_table(catalog)
    wb = a.new_batch_write_builder()
    w, c = wb.new_write().with_write_type(["id"]), wb.new_commit()
    w.write_arrow(pa.table({"id": [1, 2]}))
    c.commit(w.prepare_commit())
    assert read(a, sort=["id"])["s"].to_pylist() == [None, None]
    with pytest.raises(UnsupportedError, match="deduplicate"):
        pk_table.new_batch_write_builder().new_write().with_write_type(["dt", "id"])
    with pytest.raises(SchemaMismatchError, match="not in"):
        a.new_batch_write_builder().new_write().with_write_type(["nope"])


def test_truncate_table_and_partition(catalog, pk_table):
    write(pk_table, pa.table({"dt": ["a", "b"], "id": [1, 2], "name": ["x", "y"], "price": [1.0, 2.0]}))
    c = pk_table.new_batch_write_builder().new_commit()
    c.truncate_partitions([{"dt": "a"}])
    assert c.batch_committed
    assert read(pk_table)["dt"].to_pylist() == ["b"]
    catalog.drop_partitions("db.t", [{"dt": "b"}])
    assert read(pk_table).num_rows == 0
    a = append_table(catalog)
    write(a, rows(0, 5))
    a.new_batch_write_builder().new_commit().truncate_table()
    assert read(a).num_rows == 0


def test_write_abort_drops_everything(catalog):
    a = append_table(catalog)
    wb = a.new_batch_write_builder()
    w = wb.new_write()
    w.write_arrow(rows(0, 3))
    w.abort()
    assert read(a).num_rows == 0


# --- options ---------------------------------------------------------------------------------

def test_misspelt_option_says_did_you_mean(catalog):
    schema = Schema.from_pyarrow_schema(APPEND_SCHEMA, options={"target-file-sise": "1 mb"})
    with pytest.raises(InvalidArgumentError, match="did you mean 'target-file-size'"):
        catalog.create_table("db.m", schema, False)
    t = append_table(catalog)
    with pytest.raises(InvalidArgumentError, match="did you mean 'write-buffer-size'"):
        t.copy({"write-bufer-size": "64 mb"})


def test_descriptive_options_never_block_a_write(catalog):
    t = append_table(catalog, options={"owner": "data-team", "comment": "c",
                                       "partition.expiration-time": "7 d"})
    write(t, rows(0, 2))
    assert read(t).num_rows == 2


def test_to_iterator_and_batch_reader(catalog):
    t = append_table(catalog)
    write(t, rows(0, 3))
    rb = t.new_read_builder().with_limit(2)
    splits = rb.new_scan().plan().splits()
    got = list(rb.new_read().to_iterator(splits))
    assert len(got) == 2 and all(set(r) == {"id", "s"} for r in got)
    assert rb.new_read().to_arrow_batch_reader(splits).read_all().num_rows == 2
