"""Append-only tables (no primary key)."""

from __future__ import annotations

import datetime
import decimal

import pyarrow as pa
import pytest

import paimon_rs
from paimon_rs import Schema

from unit_helpers import read, write

# every test runs on local disk and on S3 (tests/stores.py)
pytestmark = pytest.mark.stores


def test_append_unaware_bucket(catalog):
    schema = pa.schema([("k", pa.string()), ("v", pa.int64())])
    catalog.create_table("db.a", Schema.from_pyarrow_schema(schema, partition_keys=["k"]), False)
    t = catalog.get_table("db.a")
    write(t, pa.table({"k": ["x", "y", "x"], "v": [1, 2, 3]}))
    write(t, pa.table({"k": ["x"], "v": [1]}))  # duplicates are kept
    got = read(t, sort=["k", "v"])
    assert got.to_pylist() == [{"k": "x", "v": 1}, {"k": "x", "v": 1}, {"k": "x", "v": 3}, {"k": "y", "v": 2}]
    splits = t.new_read_builder().new_scan().plan().splits()
    assert all(s.bucket == 0 for s in splits)


def test_append_fixed_bucket_needs_bucket_key(catalog):
    schema = pa.schema([("k", pa.int32()), ("v", pa.int64())])
    with pytest.raises(paimon_rs.InvalidArgumentError, match="bucket-key"):
        catalog.create_table("db.b", Schema.from_pyarrow_schema(schema, options={"bucket": "4"}), False)
    catalog.create_table("db.b", Schema.from_pyarrow_schema(
        schema, options={"bucket": "4", "bucket-key": "k"}), False)
    t = catalog.get_table("db.b")
    write(t, pa.table({"k": pa.array(range(20), pa.int32()), "v": list(range(20))}))
    assert len({s.bucket for s in t.new_read_builder().new_scan().plan().splits()}) > 1
    assert read(t).num_rows == 20


def test_value_stats_prune_files(catalog):
    schema = pa.schema([("v", pa.int64())])
    catalog.create_table("db.p", Schema.from_pyarrow_schema(schema), False)
    t = catalog.get_table("db.p")
    write(t, pa.table({"v": [1, 2, 3]}))
    write(t, pa.table({"v": [100, 200]}))
    rb = t.new_read_builder()
    pb = rb.new_predicate_builder()
    rb = rb.with_filter(pb.greater_than("v", 50))
    splits = rb.new_scan().plan().splits()
    assert sum(len(s.file_paths) for s in splits) == 1
    assert sorted(rb.new_read().to_arrow(splits).column("v").to_pylist()) == [100, 200]


def test_all_types_round_trip(catalog):
    schema = pa.schema([
        ("b", pa.bool_()), ("i8", pa.int8()), ("i16", pa.int16()), ("i32", pa.int32()), ("i64", pa.int64()),
        ("f32", pa.float32()), ("f64", pa.float64()), ("d1", pa.decimal128(10, 2)), ("d2", pa.decimal128(25, 5)),
        ("s", pa.string()), ("bin", pa.binary()), ("date", pa.date32()), ("time", pa.time32("ms")),
        ("ts3", pa.timestamp("ms")), ("ts6", pa.timestamp("us")), ("ltz", pa.timestamp("us", tz="UTC")),
        ("arr", pa.list_(pa.int32())), ("m", pa.map_(pa.string(), pa.int64())),
        ("row", pa.struct([("x", pa.int32()), ("y", pa.string())])),
    ])
    catalog.create_table("db.types", Schema.from_pyarrow_schema(schema, options={"metadata.stats-mode": "full"}), False)
    t = catalog.get_table("db.types")
    row = {
        "b": True, "i8": -8, "i16": 16, "i32": 32, "i64": 64, "f32": 1.5, "f64": 2.25,
        "d1": decimal.Decimal("12.34"), "d2": decimal.Decimal("12345678901234567890.12345"),
        "s": "héllo", "bin": b"\x00\xff", "date": datetime.date(2024, 1, 1),
        "time": datetime.time(12, 30, 1), "ts3": datetime.datetime(2024, 5, 6, 7, 8, 9, 123000),
        "ts6": datetime.datetime(2024, 5, 6, 7, 8, 9, 123456),
        "ltz": datetime.datetime(2024, 5, 6, 7, 8, 9, 123456, tzinfo=datetime.timezone.utc),
        "arr": [1, None, 3], "m": [("a", 1)], "row": {"x": 1, "y": "z"},
    }
    nulls = {k: None for k in row}
    write(t, pa.Table.from_pylist([row, nulls], schema=schema))
    got = read(t).to_pylist()
    assert row in got and nulls in got
    rb = t.new_read_builder()
    pb = rb.new_predicate_builder()
    for pred in [pb.equal("d2", decimal.Decimal("12345678901234567890.12345")),
                 pb.equal("ts6", datetime.datetime(2024, 5, 6, 7, 8, 9, 123456)),
                 pb.equal("date", datetime.date(2024, 1, 1)), pb.equal("bin", b"\x00\xff")]:
        assert read(t, predicate=pred).to_pylist() == [row]
