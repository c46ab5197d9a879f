"""The first hour of the Python API (issue 31): docstrings where a newcomer looks, reprs that say
what an object is, predicates that print as filter strings."""

from __future__ import annotations

import datetime
import inspect

import pyarrow as pa
import pytest

from paimon_rs import FileSystemCatalog, PredicateBuilder, Schema
from paimon_rs.filter_parser import parse_filter
from paimon_rs.table import ReadBuilder, Table

from unit_helpers import PK_SCHEMA, write

BUILDER_METHODS = ["equal", "not_equal", "less_than", "less_or_equal", "greater_than",
                   "greater_or_equal", "is_null", "is_not_null", "is_in", "is_not_in", "between",
                   "not_between", "startswith", "endswith", "contains", "like", "and_predicates",
                   "or_predicates"]


@pytest.mark.parametrize("obj", [
    FileSystemCatalog.create_table, FileSystemCatalog.get_table, ReadBuilder.with_filter,
    ReadBuilder.with_projection, Schema.from_pyarrow_schema, Table.to_arrow, Table.to_pandas,
    Table.to_polars, Table.write, Table.delete, Table.merge, Table.new_read_builder,
] + [getattr(PredicateBuilder, m) for m in BUILDER_METHODS], ids=lambda o: o.__qualname__)
def test_docstrings(obj):
    doc = inspect.getdoc(obj)
    assert doc and len(doc) > 60, obj.__qualname__


@pytest.mark.parametrize("name", ["create_table", "get_table", "with_filter", "with_projection",
                                  "from_pyarrow_schema", "to_arrow", "write", "delete", "merge"])
def test_key_docstrings_have_an_example(name):
    owners = [FileSystemCatalog, ReadBuilder, Schema, Table]
    obj = next(getattr(o, name) for o in owners if hasattr(o, name))
    assert "Example" in inspect.getdoc(obj)


def test_table_repr(pk_table, catalog):
    assert repr(pk_table) == "Table('db.t', primary key ['dt', 'id'], bucket=2, partitioned by ['dt'])"
    catalog.create_table("db.a", Schema.from_pyarrow_schema(PK_SCHEMA), False)
    assert repr(catalog.get_table("db.a")) == "Table('db.a', append, bucket=-1)"
    write(pk_table, pa.table({"dt": ["a"], "id": [1], "name": ["x"], "price": [1.0]}, schema=PK_SCHEMA))
    assert repr(pk_table.copy({"scan.snapshot-id": "1"})).endswith("reading {'scan.snapshot-id': '1'})")


def test_read_builder_repr(pk_table):
    rb = pk_table.new_read_builder().with_projection(["id"]).with_filter("id > 1 AND name LIKE 'a%'").with_limit(5)
    assert repr(rb) == "ReadBuilder('db.t', projection=['id'], filter=\"id > 1 AND name LIKE 'a%'\", limit=5)"


def test_schema_repr():
    s = Schema.from_pyarrow_schema(pa.schema([("id", pa.int64()), ("v", pa.string())]),
                                   primary_keys=["id"], options={"bucket": 2})
    assert repr(s) == "Schema([id: int64, v: string], primary_keys=['id'], options={'bucket': '2'})"


def test_snapshot_repr(pk_table):
    write(pk_table, pa.table({"dt": ["a"], "id": [1], "name": ["x"], "price": [1.0]}, schema=PK_SCHEMA))
    snap = pk_table.snapshot_manager().get_latest_snapshot()
    r = repr(snap)
    assert r.startswith("Snapshot(id=1, APPEND, ")
    assert "total_record_count=1, delta_record_count=1, schema_id=0" in r


def test_predicate_prints_as_a_filter_string_that_parses_back():
    schema = pa.schema([("id", pa.int64()), ("v", pa.string()), ("d", pa.date32()), ("select", pa.int32()),
                        ("my col", pa.string())])
    pb = PredicateBuilder(schema)
    preds = [
        pb.and_predicates([pb.equal("id", 1), pb.or_predicates([pb.startswith("v", "a_%'"), pb.is_null("d")])]),
        pb.like("v", "a\\%b_"),
        pb.between("d", datetime.date(2024, 1, 1), datetime.date(2024, 2, 1)),
        pb.is_not_in("select", [1, 2]),
        pb.not_equal("my col", "it's"),
    ]
    assert repr(preds[0]) == "Predicate(id = 1 AND (v LIKE 'a\\_\\%''%' OR d IS NULL))"
    assert str(preds[4]) == "`my col` != 'it''s'"
    for p in preds:
        assert parse_filter(str(p), schema) == p, str(p)


def test_predicate_builder_takes_pypaimons_field_list_and_static_combinators(pk_table):
    from paimon_rs import AtomicType, DataField
    from paimon_rs.exceptions import InvalidArgumentError

    # pypaimon's form: PredicateBuilder(fields), and_/or_predicates called on the class
    pb = PredicateBuilder([DataField(0, "id", AtomicType("INT")), DataField(1, "v", AtomicType("STRING"))])
    assert pb.field_names == ["id", "v"]
    both = PredicateBuilder.and_predicates([pb.equal("id", 1), pb.is_null("v")])
    assert str(both) == "id = 1 AND v IS NULL"
    assert str(PredicateBuilder.or_predicates([pb.equal("id", 1), pb.equal("id", 2)])) == "id = 1 OR id = 2"
    assert PredicateBuilder.and_predicates([]) is None
    assert PredicateBuilder(pk_table.fields).field_names == pk_table.arrow_schema.names
    with pytest.raises(ValueError) as e:
        pb.equal("x", 1)
    assert str(e.value) == "The field x is not in field list ['id', 'v']."  # pypaimon's words
    with pytest.raises(InvalidArgumentError, match="a pyarrow.Schema or a list of DataField, got str"):
        PredicateBuilder("id")


def test_unknown_column_in_the_predicate_builder_suggests_one(pk_table):
    pb = pk_table.new_read_builder().new_predicate_builder()
    with pytest.raises(ValueError, match=r"The field nmae is not in field list \[.*\]\. Did you mean 'name'\?"):
        pb.equal("nmae", "x")


def test_split_and_commit_message_reprs(pk_table):
    wb = pk_table.new_batch_write_builder()
    with wb.new_write() as w:
        w.write_arrow(pa.table({"dt": ["a"], "id": [1], "name": ["x"], "price": [1.0]}, schema=PK_SCHEMA))
        messages = w.prepare_commit()
    (m,) = [m for m in messages if not m.is_empty()]
    assert repr(m) == f"CommitMessage(bucket={m.bucket}, files={m.file_names}, row_count=1)"
    wb.new_commit().commit(messages)
    (split,) = pk_table.new_read_builder().new_scan().plan().splits()
    assert repr(split) == f"Split(partition={{'dt': 'a'}}, bucket={split.bucket}, files=1, row_count=1, snapshot_id=1)"
