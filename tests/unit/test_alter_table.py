"""catalog.alter_table with pypaimon's SchemaChange API, checked against a model of the rows.

The model keeps each row as {field id: value}; a schema change renames, drops, adds or casts
columns by id, as Paimon reads older files by field id."""

from __future__ import annotations

import json
import os
import pickle
import threading
from decimal import Decimal

import pyarrow as pa
import pytest

from paimon_rs import (
    AtomicType,
    ColumnAlreadyExistException,
    ColumnNotExistException,
    InvalidArgumentError,
    Move,
    Schema,
    SchemaChange,
    TableNotExistException,
    UnsupportedError,
)

import stores
from unit_helpers import read, write


def _schema_files(table):
    d = stores.join(table.table_path, "schema")
    return sorted(int(f.split("-")[1]) for f in stores.listdir(d) if f.startswith("schema-"))


class Model:
    """Rows by primary key, as {column name: value} under the current schema."""

    def __init__(self, key):
        self.key = key
        self.rows = {}

    def upsert(self, table: pa.Table):
        for r in table.to_pylist():
            self.rows[r[self.key]] = r

    def add(self, name):
        for r in self.rows.values():
            r[name] = None

    def rename(self, old, new):
        for r in self.rows.values():
            r[new] = r.pop(old)

    def drop(self, name):
        for r in self.rows.values():
            r.pop(name)

    def expected(self, columns):
        return [{c: r[c] for c in columns} for _, r in sorted(self.rows.items())]


def _check(table, model):
    got = read(table, sort=[model.key]).to_pylist()
    assert got == model.expected(table.field_names)


@pytest.fixture
def kv(catalog):
    schema = Schema.from_pyarrow_schema(
        pa.schema([("id", pa.int64()), ("a", pa.int32()), ("b", pa.string()), ("f", pa.float32())]),
        primary_keys=["id"], options={"bucket": "2"})
    catalog.create_table("db.kv", schema, False)
    return catalog.get_table("db.kv")


def _rows(ids, **cols):
    d = {"id": pa.array(ids, pa.int64())}
    for k, (t, f) in cols.items():
        d[k] = pa.array([f(i) for i in ids], t)
    return pa.table(d)


def test_add_rename_drop_and_widen_keep_reading_by_field_id(catalog, kv):
    """Each change then a write; reads merge files of four schemas by field id."""
    m = Model("id")
    d0 = _rows(range(10), a=(pa.int32(), lambda i: i), b=(pa.string(), lambda i: f"b{i}"),
               f=(pa.float32(), lambda i: i / 2))
    write(kv, d0)
    m.upsert(d0)

    catalog.alter_table("db.kv", [SchemaChange.add_column("c", pa.string(), "new", Move.after("c", "id")),
                                  SchemaChange.rename_column("b", "b2")])
    m.add("c")
    m.rename("b", "b2")
    t = catalog.get_table("db.kv")
    assert t.field_names == ["id", "c", "a", "b2", "f"]
    assert [(f.id, f.name) for f in t.table_schema.fields] == [(0, "id"), (4, "c"), (1, "a"), (2, "b2"), (3, "f")]
    assert t.table_schema.highest_field_id == 4 and t.table_schema.fields[1].description == "new"
    _check(t, m)
    d1 = _rows(range(5, 15), c=(pa.string(), lambda i: f"c{i}"), a=(pa.int32(), lambda i: -i),
               b2=(pa.string(), lambda i: f"n{i}"), f=(pa.float32(), lambda i: 0.25))
    write(t, d1)
    m.upsert(d1)
    _check(t, m)

    catalog.alter_table("db.kv", [SchemaChange.update_column_type("a", pa.int64()),
                                  SchemaChange.update_column_type("f", "DOUBLE"),
                                  SchemaChange.drop_column("c")])
    m.drop("c")
    t = catalog.get_table("db.kv")
    assert t.arrow_schema.field("a").type == pa.int64() and t.arrow_schema.field("f").type == pa.float64()
    _check(t, m)

    # re-added under the same name: a new field id, so the old values stay gone
    catalog.alter_table("db.kv", [SchemaChange.add_column("c", pa.string(), move=Move.first("c"))])
    m.add("c")
    t = catalog.get_table("db.kv")
    assert t.field_names[0] == "c" and t.table_schema.fields[0].id == 5
    _check(t, m)
    d2 = _rows([0, 14, 20], c=(pa.string(), lambda i: "again"), a=(pa.int64(), lambda i: 2**40 + i),
               b2=(pa.string(), lambda i: "x"), f=(pa.float64(), lambda i: 1.0))
    write(t, d2)
    m.upsert(d2)
    _check(t, m)
    assert _schema_files(t) == [0, 1, 2, 3]
    # compaction rewrites files of every schema into the latest one
    t.compact(full=True)
    _check(catalog.get_table("db.kv"), m)


def test_positions_comments_nullability_and_table_comment(catalog, kv):
    # read from the options before the alter, as Java does: its own alter does not count
    catalog.alter_table("db.kv", [SchemaChange.set_option("alter-column-null-to-not-null.disabled", "false")])
    catalog.alter_table("db.kv", [
        SchemaChange.update_column_position(Move.first("f")),
        SchemaChange.update_column_position(Move.before("b", "a")),
        SchemaChange.update_column_position(Move.last("id")),
        SchemaChange.update_column_comment("a", "the a"),
        SchemaChange.update_column_nullability("b", False),
        SchemaChange.update_comment("a table"),
    ], ignore_if_not_exists=False)
    t = catalog.get_table("db.kv")
    assert t.field_names == ["f", "b", "a", "id"]
    assert t.table_schema.fields[2].description == "the a"
    assert t.table_schema.fields[1].type == AtomicType("STRING", nullable=False)
    assert t.table_schema.comment == "a table" and t.comment() == "a table"
    with pytest.raises(InvalidArgumentError, match="Cannot move itself for column f"):
        catalog.alter_table("db.kv", [SchemaChange.update_column_position(Move.first("f"))])
    with pytest.raises(InvalidArgumentError, match="Field name not found: nope"):
        catalog.alter_table("db.kv", [SchemaChange.update_column_position(Move.first("nope"))])


def test_null_to_not_null_is_refused_unless_enabled(catalog, kv):
    with pytest.raises(InvalidArgumentError, match="Cannot update column type from nullable to non nullable for b"):
        catalog.alter_table("db.kv", [SchemaChange.update_column_type("b", "STRING NOT NULL")])
    with pytest.raises(InvalidArgumentError, match="from nullable to non nullable for a"):
        catalog.alter_table("db.kv", [SchemaChange.update_column_nullability("a", False)])
    catalog.alter_table("db.kv", [SchemaChange.update_column_type("b", "STRING NOT NULL", keep_nullability=True)])
    assert catalog.get_table("db.kv").table_schema.fields[2].type == AtomicType("STRING")


def test_add_column_before_partition(catalog):
    schema = Schema.from_pyarrow_schema(pa.schema([("v", pa.int64()), ("dt", pa.string())]),
                                        partition_keys=["dt"],
                                        options={"add-column-before-partition": "true"})
    catalog.create_table("db.ap", schema, False)
    catalog.alter_table("db.ap", [SchemaChange.add_column("w", pa.int32())])
    assert catalog.get_table("db.ap").field_names == ["v", "w", "dt"]


def test_paimon_refusals_in_javas_words(catalog):
    schema = Schema.from_pyarrow_schema(
        pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.int64())]),
        partition_keys=["dt"], primary_keys=["dt", "id"], options={"bucket": "1"})
    catalog.create_table("db.p", schema, False)
    cases = [
        (SchemaChange.drop_column("id"), "Cannot drop partition key or primary key: \\[id\\]"),
        (SchemaChange.drop_column("dt"), "Cannot drop partition key or primary key: \\[dt\\]"),
        (SchemaChange.rename_column("dt", "day"), "Cannot rename partition column: \\[dt\\]"),
        (SchemaChange.update_column_type("dt", "VARCHAR(5)"), "Cannot update partition column: \\[dt\\]"),
        (SchemaChange.update_column_type("id", "DECIMAL(20, 0)"), "Cannot update primary key"),
        (SchemaChange.update_column_nullability("id", True), "Cannot change nullability of primary key"),
        (SchemaChange.add_column("x", "INT NOT NULL"), "Column x cannot specify NOT NULL in the db.p table."),
        (SchemaChange.update_column_type("v", "DATE"), "Column type v\\[BIGINT\\] cannot be converted to DATE "
                                                       "without losing information."),
        (SchemaChange.set_option("type", "format-table"), "Change 'type' is not supported yet."),
    ]
    for change, msg in cases:
        with pytest.raises(InvalidArgumentError, match=msg) as e:
            catalog.alter_table("db.p", [change])
        # pypaimon's alter_table raises every refusal as RuntimeError: so does this one
        assert isinstance(e.value, RuntimeError) and type(e.value).__name__ == "InvalidArgumentError"
    with pytest.raises(ColumnAlreadyExistException, match="Column v already exists in the db.p table.") as e:
        catalog.alter_table("db.p", [SchemaChange.add_column("v", pa.int32())])
    assert isinstance(e.value, RuntimeError)
    assert type(pickle.loads(pickle.dumps(e.value))) is ColumnAlreadyExistException
    with pytest.raises(ColumnAlreadyExistException, match="Column v already exists"):
        catalog.alter_table("db.p", [SchemaChange.rename_column("id", "v")])
    with pytest.raises(ColumnNotExistException, match="Column nope does not exist in the db.p table."):
        catalog.alter_table("db.p", [SchemaChange.drop_column("nope")])
    with pytest.raises(ColumnNotExistException, match="Column nope does not exist"):
        catalog.alter_table("db.p", [SchemaChange.add_column("x", pa.int32(), move=Move.after("x", "nope"))])
    with pytest.raises(TableNotExistException) as e:
        catalog.alter_table("db.missing", [SchemaChange.add_column("x", pa.int32())])
    assert not isinstance(e.value, RuntimeError)  # as pypaimon: the missing table is not wrapped
    catalog.alter_table("db.missing", [SchemaChange.add_column("x", pa.int32())], ignore_if_not_exists=True)
    # nothing was written by any refused change
    assert _schema_files(catalog.get_table("db.p")) == [0]


def test_blob_columns_cannot_be_renamed(catalog):
    schema = Schema.from_pyarrow_schema(
        pa.schema([("id", pa.int64()), ("pic", pa.large_binary()), ("v", pa.string())]),
        options={"row-tracking.enabled": "true", "data-evolution.enabled": "true"})
    catalog.create_table("db.blobs", schema, False)
    # a `.blob` file names its column: a renamed one would not be found again (Java refuses too)
    with pytest.raises(InvalidArgumentError,
                       match=r"Cannot rename BLOB, ARRAY<BLOB> or MAP<X, BLOB> column: \[pic\]"):
        catalog.alter_table("db.blobs", [SchemaChange.rename_column("pic", "picture")])
    catalog.alter_table("db.blobs", [SchemaChange.rename_column("v", "w")])
    assert catalog.get_table("db.blobs").field_names == ["id", "pic", "w"]


def test_narrowing_needs_explicit_casts_and_a_cast_paimon_rs_can_read(catalog, kv):
    """Java allows explicit (narrowing) casts unless 'disable-explicit-type-casting'; paimon_rs
    applies Java's numeric narrowing to older files and refuses the casts it could not apply,
    instead of reading them differently."""
    write(kv, pa.table({"id": [1, 2], "a": pa.array([70000, -5], pa.int32()), "b": ["x", "y"],
                        "f": pa.array([2.75, float("nan")], pa.float32())}))
    catalog.alter_table("db.kv", [SchemaChange.update_column_type("a", pa.int16()),
                                  SchemaChange.update_column_type("f", pa.int32())])
    got = read(catalog.get_table("db.kv"), sort=["id"]).to_pydict()
    assert got["a"] == [4464, -5] and got["f"] == [2, 0]  # (short) 70000; (int) 2.75f, (int) NaN
    # INT -> DECIMAL is read as Java reads it, but the files of schema 0 hold FLOAT, which would
    # be read straight as DECIMAL (Java's FLOAT -> DECIMAL goes through Double.toString)
    with pytest.raises(UnsupportedError, match="schema 0 hold it as FLOAT"):
        catalog.alter_table("db.kv", [SchemaChange.update_column_type("f", "DECIMAL(12, 0)")])
    catalog.alter_table("db.kv", [SchemaChange.set_option("disable-explicit-type-casting", "true")])
    with pytest.raises(InvalidArgumentError, match="cannot be converted to TINYINT without losing"):
        catalog.alter_table("db.kv", [SchemaChange.update_column_type("a", pa.int8())])
    # widenings stay allowed
    catalog.alter_table("db.kv", [SchemaChange.update_column_type("a", "DECIMAL(12, 2)"),
                                  SchemaChange.update_column_type("b", "STRING")])
    write(catalog.get_table("db.kv"), pa.table({"id": [1], "a": [Decimal("1.50")], "b": ["x"],
                                                "f": pa.array([1], pa.int32())}))


def test_strings_to_integers_are_parsed_as_java_parses_them(catalog, kv):
    """STRING -> BIGINT / INT (Java's StringToNumericPrimitiveCastRule): old files' values are
    parsed at read as Java's BinaryStringUtils.toLong / toInt do; one Java cannot parse fails the
    read with Java's reason, naming the file and column."""
    write(kv, pa.table({"id": [1, 2, 3], "a": pa.array([1, 2, 3], pa.int32()), "b": ["12", "-7.9", None],
                        "f": pa.array([1.0, 2.0, 3.0], pa.float32())}))
    catalog.alter_table("db.kv", [SchemaChange.update_column_type("b", pa.int64())])
    t = catalog.get_table("db.kv")
    write(t, pa.table({"id": [4], "a": pa.array([4], pa.int32()), "b": [2**40], "f": pa.array([4.0], pa.float32())}))
    assert read(t, sort=["id"]).column("b").to_pylist() == [12, -7, None, 2**40]
    catalog.create_table("db.bad", Schema.from_pyarrow_schema(pa.schema([("id", pa.int64()), ("b", pa.string())]),
                                                              primary_keys=["id"], options={"bucket": "1"}), False)
    write(catalog.get_table("db.bad"), pa.table({"id": [1], "b": [" 5"]}))
    catalog.alter_table("db.bad", [SchemaChange.update_column_type("b", pa.int32())])
    with pytest.raises(UnsupportedError, match=r"data-.*column 'b'.*For input string: ' 5'. Invalid character found"):
        read(catalog.get_table("db.bad"))


def test_immutable_and_bucket_options_once_the_table_has_snapshots(catalog, kv):
    # before the first snapshot Java lets structural options change
    catalog.alter_table("db.kv", [SchemaChange.set_option("merge-engine", "partial-update")])
    catalog.alter_table("db.kv", [SchemaChange.remove_option("merge-engine")])
    write(catalog.get_table("db.kv"), _rows([1], a=(pa.int32(), lambda i: 1), b=(pa.string(), lambda i: "x"),
                                             f=(pa.float32(), lambda i: 1.0)))
    with pytest.raises(InvalidArgumentError, match="Change 'merge-engine' is not supported yet."):
        catalog.alter_table("db.kv", [SchemaChange.set_option("merge-engine", "first-row")])
    with pytest.raises(InvalidArgumentError, match="Change 'bucket-key' is not supported yet."):
        catalog.alter_table("db.kv", [SchemaChange.remove_option("bucket-key")])
    with pytest.raises(InvalidArgumentError, match="Cannot reset bucket."):
        catalog.alter_table("db.kv", [SchemaChange.remove_option("bucket")])
    with pytest.raises(InvalidArgumentError, match="Cannot change bucket to -1."):
        catalog.alter_table("db.kv", [SchemaChange.set_option("bucket", "-1")])
    with pytest.raises(UnsupportedError, match="rescale"):
        catalog.alter_table("db.kv", [SchemaChange.set_option("bucket", "4")])
    catalog.alter_table("db.kv", [SchemaChange.set_option("ignore-delete", "true")])
    with pytest.raises(InvalidArgumentError, match="Cannot change ignore-delete from true to false."):
        catalog.alter_table("db.kv", [SchemaChange.set_option("ignore-delete", "false")])
    # the unchanged value is no change at all
    catalog.alter_table("db.kv", [SchemaChange.set_option("bucket", "2")])


def test_options_persist_and_dynamic_options_still_apply(catalog, kv):
    catalog.alter_table("db.kv", [SchemaChange.set_option("write-buffer-size", "32 mb"),
                                  SchemaChange.set_option("partition.expiration-time", "7 d")])
    t = catalog.get_table("db.kv")
    assert t.options["write-buffer-size"] == "32 mb"
    c = t.copy({"write-buffer-size": "64 mb"})
    assert c.options["write-buffer-size"] == "64 mb"
    assert catalog.get_table("db.kv").options["write-buffer-size"] == "32 mb"
    catalog.alter_table("db.kv", [SchemaChange.remove_option("write-buffer-size")])
    assert "write-buffer-size" not in catalog.get_table("db.kv").options
    # a misspelt option is refused naming the one meant
    with pytest.raises(InvalidArgumentError, match="did you mean 'write-buffer-size'"):
        catalog.alter_table("db.kv", [SchemaChange.set_option("write-bufer-size", "1 mb")])


def test_renamed_columns_follow_into_options_and_primary_keys(catalog):
    schema = Schema.from_pyarrow_schema(
        pa.schema([("id", pa.int64()), ("ts", pa.int64()), ("v", pa.int64())]),
        primary_keys=["id"],
        options={"bucket": "1", "sequence.field": "ts", "merge-engine": "aggregation",
                 "fields.v.aggregate-function": "sum"})
    catalog.create_table("db.agg", schema, False)
    t = catalog.get_table("db.agg")
    write(t, pa.table({"id": [1, 1], "ts": [1, 2], "v": [10, 5]}))
    catalog.alter_table("db.agg", [SchemaChange.rename_column("ts", "ts2"),
                                   SchemaChange.rename_column("v", "total"),
                                   SchemaChange.rename_column("id", "key")])
    t = catalog.get_table("db.agg")
    assert t.options["sequence.field"] == "ts2"
    assert t.options["fields.total.aggregate-function"] == "sum" and "fields.v.aggregate-function" not in t.options
    assert t.table_schema.primary_keys == ["key"]
    write(t, pa.table({"key": [1, 2], "ts2": [3, 1], "total": [1, 7]}))
    assert read(t, sort=["key"]).to_pylist() == [{"key": 1, "ts2": 3, "total": 16},
                                                 {"key": 2, "ts2": 1, "total": 7}]


def test_nested_row_fields(catalog):
    schema = Schema.from_pyarrow_schema(
        pa.schema([("id", pa.int64()), ("s", pa.struct([("x", pa.int32()), ("y", pa.string())]))]))
    catalog.create_table("db.n", schema, False)
    t = catalog.get_table("db.n")
    write(t, pa.table({"id": [1], "s": [{"x": 1, "y": "a"}]}))
    catalog.alter_table("db.n", [SchemaChange.add_column(["s", "z"], pa.int64()),
                                 SchemaChange.rename_column(["s", "y"], "y2"),
                                 SchemaChange.update_column_type(["s", "x"], pa.int64())])
    t = catalog.get_table("db.n")
    fields = t.table_schema.fields[1].type.fields
    assert [(f.id, f.name, str(f.type)) for f in fields] == [(2, "x", "BIGINT"), (3, "y2", "STRING"),
                                                             (4, "z", "BIGINT")]
    write(t, pa.table({"id": [2], "s": [{"x": 2**40, "y2": "b", "z": 3}]}))
    assert read(t, sort=["id"]).to_pylist() == [{"id": 1, "s": {"x": 1, "y2": "a", "z": None}},
                                                {"id": 2, "s": {"x": 2**40, "y2": "b", "z": 3}}]
    with pytest.raises(ColumnNotExistException, match="Column s.nope does not exist"):
        catalog.alter_table("db.n", [SchemaChange.drop_column(["s", "nope"])])
    # A nested column's own type never changes: the refusal says so, not just Java's words.
    catalog.create_table("db.m", Schema.from_pyarrow_schema(
        pa.schema([("id", pa.int64()), ("m", pa.map_(pa.int32(), pa.string()))])), False)
    with pytest.raises(InvalidArgumentError, match=r"cannot be converted to MAP<BIGINT NOT NULL, STRING> without "
                       r"losing information\. \(a nested column keeps its type: only the fields of nested ROW"):
        catalog.alter_table("db.m", [SchemaChange.update_column_type("m", pa.map_(pa.int64(), pa.string()))])


def test_concurrent_alters_all_land_with_distinct_ids(catalog, kv):
    """Alters racing for the next schema id: the loser applies its change again on top of the
    winner's schema (Java's commitChanges loop), so every column lands once."""
    n = 6
    barrier = threading.Barrier(n)
    errors = []

    def add(i):
        try:
            barrier.wait()
            catalog.alter_table("db.kv", [SchemaChange.add_column(f"c{i}", pa.int32())])
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=add, args=(i,)) for i in range(n)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors
    t = catalog.get_table("db.kv")
    assert sorted(t.field_names[4:]) == [f"c{i}" for i in range(n)]
    ids = [f.id for f in t.table_schema.fields]
    assert len(set(ids)) == len(ids) and t.table_schema.highest_field_id == 3 + n
    assert _schema_files(t) == list(range(n + 1))
    # a concurrent alter that makes ours invalid: ours is refused, never written over it
    with pytest.raises(ColumnAlreadyExistException):
        catalog.alter_table("db.kv", [SchemaChange.add_column("c0", pa.int32())])


def test_schema_file_is_java_shaped(catalog, kv):
    catalog.alter_table("db.kv", [SchemaChange.add_column("c", pa.int64(), "note")])
    with open(os.path.join(kv.table_path, "schema", "schema-1")) as f:
        s = json.load(f)
    assert s["id"] == 1 and s["highestFieldId"] == 4 and s["version"] == 3
    assert s["fields"][-1] == {"id": 4, "name": "c", "type": "BIGINT", "description": "note"}
    assert s["primaryKeys"] == ["id"] and s["options"] == {"bucket": "2"}


def test_time_travel_reads_with_the_snapshots_schema(catalog, kv):
    """Java's tryTimeTravel: a table copied to a past snapshot has that snapshot's columns."""
    write(kv, _rows([1, 2], a=(pa.int32(), lambda i: i), b=(pa.string(), lambda i: f"b{i}"),
                    f=(pa.float32(), lambda i: 0.5)))
    catalog.alter_table("db.kv", [SchemaChange.rename_column("b", "b2"), SchemaChange.add_column("c", pa.int64()),
                                  SchemaChange.update_column_type("a", pa.int64())])
    t = catalog.get_table("db.kv")
    write(t, pa.table({"id": [2, 3], "a": [20, 30], "b2": ["x", "y"], "f": pa.array([1.0, 2.0], pa.float32()),
                       "c": [7, 8]}))
    old = t.copy({"scan.snapshot-id": "1"})
    assert old.field_names == ["id", "a", "b", "f"]
    got = read(old, sort=["id"])
    assert got.schema.field("a").type == pa.int32()
    assert got.to_pylist() == [{"id": 1, "a": 1, "b": "b1", "f": 0.5}, {"id": 2, "a": 2, "b": "b2", "f": 0.5}]
    now = t.copy({"scan.snapshot-id": "2"})
    assert now.field_names == ["id", "a", "b2", "f", "c"]
    assert read(now, sort=["id"]).column("c").to_pylist() == [None, 7, 8]


@pytest.mark.stores
def test_cli_alter(catalog, kv, capsys):
    """`paimon-rs alter`: the changes in one new schema, then the schema as `schema` shows it."""
    from paimon_rs.cli import main

    assert main(["alter", kv.table_path, "--set", "write-buffer-size=32 mb", "--rename", "b", "b2",
                 "--add", "c", "DECIMAL(10, 2)", "--type", "a", "BIGINT", "--move", "c", "after:id",
                 "--column-comment", "c", "money", "--comment", "altered", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["table"]["schema_id"] == 1 and got["table"]["comment"] == "altered"
    assert [(f["name"], f["type"]) for f in got["fields"]] == [
        ("id", "BIGINT NOT NULL"), ("c", "DECIMAL(10, 2)"), ("a", "BIGINT"), ("b2", "STRING"), ("f", "FLOAT")]
    assert got["fields"][1]["description"] == "money" and got["options"]["write-buffer-size"] == "32 mb"
    # a refusal: exit 1, Java's message, nothing written
    wh = kv.table_path.rsplit("/", 2)[0]
    assert main(["alter", wh, "db.kv", "--drop", "id"]) == 1
    assert "Cannot drop partition key or primary key: [id]" in capsys.readouterr().err
    assert main(["alter", kv.table_path]) == 2
    assert _schema_files(kv) == [0, 1]


def test_changes_that_are_not_schema_changes_raise_runtime_error(catalog, kv):
    """pypaimon wraps what its commit raises in ``RuntimeError("Failed to alter table ...")``:
    a change that is no SchemaChange is one too, raised from the TypeError (review34c F6a)."""
    with pytest.raises(RuntimeError, match="Failed to alter table db.kv: ") as e:
        catalog.alter_table("db.kv", ["nope"])
    assert isinstance(e.value.__cause__, TypeError) and type(e.value) is RuntimeError
    with pytest.raises(TableNotExistException):
        catalog.alter_table("db.missing", [SchemaChange.add_column("x", pa.int32())])
