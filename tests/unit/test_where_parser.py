"""pypaimon's WHERE-clause strings (``parse_where_clause``, issue 29) and pypaimon's names of
the predicate operators (``Predicate.method``)."""

from __future__ import annotations

import datetime
import decimal
import re

import pyarrow as pa
import pytest

from paimon_rs import (
    ArrayType,
    AtomicType,
    DataField,
    InvalidArgumentError,
    Predicate,
    PredicateBuilder,
    Schema,
    parse_where_clause,
)
from paimon_rs.where_parser import extract_fields_from_where

FIELDS = [
    DataField(0, "id", AtomicType("INT")),
    DataField(1, "name", AtomicType("STRING")),
    DataField(2, "score", AtomicType("DOUBLE")),
    DataField(3, "active", AtomicType("BOOLEAN")),
    DataField(4, "price", AtomicType("DECIMAL(10, 2)")),
    DataField(5, "day", AtomicType("DATE")),
    DataField(6, "n", AtomicType("BIGINT NOT NULL")),
    DataField(7, "tags", ArrayType(True, AtomicType("STRING"))),
    DataField(8, "at", AtomicType("TIME")),
    DataField(9, "ts", AtomicType("TIMESTAMP(3)")),
]


def leaf(text):
    p = parse_where_clause(text, FIELDS)
    return p.method, p.field, p.literals


@pytest.mark.parametrize("text, expected", [
    ("id = 1", ("equal", "id", [1])),
    ("id != 1", ("notEqual", "id", [1])),
    ("id <> 1", ("notEqual", "id", [1])),
    ("id < 1", ("lessThan", "id", [1])),
    ("id <= 1", ("lessOrEqual", "id", [1])),
    ("id > 1", ("greaterThan", "id", [1])),
    ("id >= 1", ("greaterOrEqual", "id", [1])),
    ("name IS NULL", ("isNull", "name", [])),
    ("name is not null", ("isNotNull", "name", [])),
    ("id IN (1, 2,3)", ("in", "id", [1, 2, 3])),
    ("name NOT IN ('a', \"b\")", ("notIn", "name", ["a", "b"])),
    ("score BETWEEN 1 AND 2.5", ("between", "score", [1.0, 2.5])),
    ("score not between 1 and 2", ("notBetween", "score", [1.0, 2.0])),
    ("name LIKE 'A%'", ("like", "name", ["A%"])),
    ("active = TRUE", ("equal", "active", [True])),
    ("active = 0", ("equal", "active", [False])),
    ("price > 9.99", ("greaterThan", "price", [decimal.Decimal("9.99")])),
    ("price = 50", ("equal", "price", [decimal.Decimal("50.00")])),  # at the column's scale
    ("price < 1.234", ("lessThan", "price", [decimal.Decimal("1.234")])),  # not exact there
    ("at >= '12:30'", ("greaterOrEqual", "at", [datetime.time(12, 30)])),
    ("ts < '2024-01-02 03:04:05'", ("lessThan", "ts", [datetime.datetime(2024, 1, 2, 3, 4, 5)])),
    ("day >= '2024-01-02'", ("greaterOrEqual", "day", [datetime.date(2024, 1, 2)])),
    ("n = 7", ("equal", "n", [7])),
    ("name = Bob", ("equal", "name", ["Bob"])),  # pypaimon: a bare word is a string
])
def test_conditions(text, expected):
    assert leaf(text) == expected


def test_precedence_and_groups():
    p = parse_where_clause("id = 1 OR id = 2 AND name = 'a'", FIELDS)
    assert p.method == "or" and [c.method for c in p.literals] == ["equal", "and"]
    assert p.literals == p.children and len(p.literals[1].literals) == 2
    p = parse_where_clause("(id = 1 OR id = 2) AND score BETWEEN 1 AND 2 AND name IS NULL", FIELDS)
    assert p.method == "and" and [c.method for c in p.children] == ["or", "between", "isNull"]
    assert parse_where_clause("  ", FIELDS) is None and parse_where_clause("", FIELDS) is None


@pytest.mark.parametrize("text, message", [
    ("(id > 1", "Missing closing parenthesis"),
    ("id", "Unexpected end after field name 'id'"),
    ("id IN 1, 2", "Expected '(' after IN"),
    ("id IN (1, 2", "Missing closing ')' in IN list"),
    ("id BETWEEN 1 2", "Expected 'AND' in BETWEEN expression"),
    ("id NOT BETWEEN 1 2", "Expected 'AND' in NOT BETWEEN expression"),
    ("id NOT LIKE 'a'", "Expected 'IN' or 'BETWEEN' after 'NOT'"),
    ("id IS SOMETHING", "Expected 'NULL' or 'NOT NULL' after 'IS'"),
    ("id IS NOT 1", "Expected 'NULL' after 'IS NOT'"),
    ("id > 1 extra", "Unexpected tokens after parsing: extra"),
    ("id ~ 1", "Unsupported operator '~'"),
    ("id >", "Expected a literal value"),
    ("nope = 1", "Unknown field 'nope'"),
    ("tags = 'x'", "Field 'tags' has a non-atomic type"),
    ("id = abc", "Cannot convert literal 'abc' to INT"),
    ("price = abc", "Invalid DECIMAL literal: 'abc'"),
    ("day = '2024-1-32'", "Invalid DATE literal: '2024-1-32'"),
    ("at = '25:00'", "Invalid TIME literal: '25:00'"),
    ("ts = 'soon'", "Invalid TIMESTAMP literal: 'soon'"),
    ("id > 1 AND", "Unexpected end of WHERE clause"),
])
def test_errors_are_pypaimons(text, message):
    with pytest.raises(InvalidArgumentError, match="^" + re.escape(message)) as e:
        parse_where_clause(text, FIELDS)
    assert isinstance(e.value, ValueError)  # pypaimon raises ValueError


def test_extract_fields():
    names = {f.name for f in FIELDS}
    assert extract_fields_from_where("id > 1 AND (name = 'id' OR score IS NULL)", names) == {
        "id", "name", "score"}
    assert extract_fields_from_where("  ", names) == set()


def test_pypaimon_method_names():
    pb = PredicateBuilder(FIELDS)
    got = [pb.not_equal("id", 1), pb.is_in("id", [1]), pb.is_not_in("id", [1]),
           pb.startswith("name", "a"), pb.endswith("name", "a"), pb.is_not_null("id"),
           pb.not_between("id", 1, 2)]
    assert [p.method for p in got] == ["notEqual", "in", "notIn", "startsWith", "endsWith",
                                       "isNotNull", "notBetween"]
    assert [p.builder_method for p in got] == ["not_equal", "is_in", "is_not_in", "startswith",
                                               "endswith", "is_not_null", "not_between"]
    # either spelling makes the same node; pypaimon's and/or with their operands in literals
    assert Predicate("not_equal", 1, "id", [1]) == Predicate("notEqual", 1, "id", [1])
    both = Predicate("and", None, None, [got[0], got[1]])
    assert both.children == [got[0], got[1]] and both == PredicateBuilder.and_predicates(got[:2])
    with pytest.raises(InvalidArgumentError, match="unknown predicate method 'nope'"):
        Predicate("nope", 1, "id", [1])


def test_read_with_a_where_clause(catalog):
    schema = pa.schema([("id", pa.int32()), ("name", pa.string()), ("day", pa.date32()),
                        ("price", pa.decimal128(10, 2))])
    catalog.create_table("db.w", Schema.from_pyarrow_schema(schema), False)
    t = catalog.get_table("db.w")
    wb = t.new_batch_write_builder()
    w = wb.new_write()
    w.write_arrow(pa.table({
        "id": [1, 2, 3, 4], "name": ["a", "b", None, "ab"],
        "day": [datetime.date(2024, 1, d) for d in (1, 2, 3, 4)],
        "price": [decimal.Decimal(x) for x in ("1.50", "2.00", "3.25", "4.00")]}, schema=schema))
    wb.new_commit().commit(w.prepare_commit())
    w.close()

    def ids(text):
        rb = t.new_read_builder().with_filter(parse_where_clause(text, t.fields))
        return sorted(rb.new_read().to_arrow(rb.new_scan().plan().splits())["id"].to_pylist())

    assert ids("id NOT IN (1, 4) OR name LIKE 'a%'") == [1, 2, 3, 4]
    assert ids("name <> 'a' AND id <= 3") == [2]
    assert ids("day BETWEEN '2024-01-02' AND '2024-01-03' AND price > 2") == [3]
    assert ids("name IS NULL OR (price < 2 AND id != 2)") == [1, 3]


def test_decimal_literals_take_the_columns_scale_when_exact():
    assert str(parse_where_clause("price = 50", FIELDS).literals[0]) == "50.00"
    assert str(parse_where_clause("price = 1.234", FIELDS).literals[0]) == "1.234"
