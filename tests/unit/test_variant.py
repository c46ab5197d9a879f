"""VARIANT columns: GenericVariant's encoding (the Parquet Variant binary spec) and the column
through write / compaction / read of append and primary-key tables, refusals included."""

from __future__ import annotations

import datetime
import decimal
import uuid

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from paimon_rs import CatalogFactory, GenericVariant, Schema
from paimon_rs.exceptions import PaimonRsError

from unit_helpers import write_arrow

EVERY_KIND = [
    None, True, False, 0, -128, 127, 128, -32769, 2**31, -(2**63), 2**63 - 1,
    1.5, -0.0, 1e300, float("inf"),
    decimal.Decimal("3.14"), decimal.Decimal("-12345678901234.5678"),
    decimal.Decimal("12345678901234567890123456789.012345678"),
    "", "short", "long " * 40, "日本語", b"", b"\x00\xff",
    datetime.date(1969, 12, 31), datetime.date(2100, 1, 1),
    datetime.datetime(2024, 1, 2, 3, 4, 5, 678901, tzinfo=datetime.timezone.utc),
    datetime.datetime(1960, 1, 2, 3, 4, 5, 6),
    uuid.UUID("12345678-1234-5678-1234-567812345678"),
    [], [1, "two", None, [3.0, {"k": False}]], {},
    {"b": 1, "a": {"z": [True], "y": None}},
    {f"k{i}": i for i in range(300)},  # large object: 4-byte size, 2-byte ids
    [{"x": i} for i in range(300)],  # large array, a key shared by 300 objects
]


def test_spec_bytes_of_primitives():
    """Byte layouts straight from the Parquet Variant encoding spec."""
    empty_meta = b"\x01\x00\x00"  # version 1, offset width 1, no keys, one offset 0
    cases = [
        (None, b"\x00"), (True, b"\x04"), (False, b"\x08"),
        (5, b"\x0c\x05"), (-2, b"\x0c\xfe"), (300, b"\x10\x2c\x01"),
        (70000, b"\x14\x70\x11\x01\x00"), (2**40, b"\x18" + (2**40).to_bytes(8, "little")),
        ("ab", b"\x09ab"),  # short string: length 2 << 2 | 1
        (decimal.Decimal("1.5"), b"\x20\x01\x0f\x00\x00\x00"),  # DECIMAL4, scale 1, 15
        (datetime.date(1970, 1, 2), b"\x2c\x01\x00\x00\x00"),
        (b"\x07", b"\x3c\x01\x00\x00\x00\x07"),
    ]
    for obj, value in cases:
        v = GenericVariant.from_python(obj)
        assert v.value() == value, obj
        assert v.metadata() == empty_meta, obj
        assert v.to_python() == obj
    # object {"b": 1, "a": 2}: keys in first-seen order in the dictionary, fields sorted by key,
    # values in insertion order
    v = GenericVariant.from_python({"b": 1, "a": 2})
    assert v.metadata() == b"\x01\x02\x00\x01\x02ba"
    assert v.value() == b"\x02\x02\x01\x00\x02\x00\x04" + b"\x0c\x01\x0c\x02"
    assert list(v.to_python().items()) == [("a", 2), ("b", 1)]
    # array [1, "x"]
    assert GenericVariant.from_python([1, "x"]).value() == b"\x03\x02\x00\x02\x04\x0c\x01\x05x"


def test_every_kind_round_trips_through_the_value_api():
    for obj in EVERY_KIND:
        v = GenericVariant.from_python(obj)
        assert v.to_python() == obj, obj
        assert GenericVariant(v.value(), v.metadata()) == v
        assert hash(GenericVariant.from_arrow_struct({"value": v.value(), "metadata": v.metadata()})) == hash(v)
        if not isinstance(obj, dict):  # an object decodes with its keys sorted
            assert repr(v) == f"GenericVariant({obj!r})"
    aware = datetime.datetime(2024, 1, 1, 8, tzinfo=datetime.timezone(datetime.timedelta(hours=8)))
    assert GenericVariant.from_python(aware).to_python() == aware  # stored as the UTC instant
    assert GenericVariant.from_python(aware).to_python().tzinfo == datetime.timezone.utc
    assert GenericVariant.from_python(decimal.Decimal("1E+3")).to_python() == 1000.0  # as a double


def test_value_api_refusals():
    with pytest.raises(TypeError, match="set"):
        GenericVariant.from_python({1, 2})
    with pytest.raises(TypeError, match="keys must be str"):
        GenericVariant.from_python({1: 2})
    with pytest.raises(ValueError, match="metadata version"):
        GenericVariant(b"\x00", b"\x02\x00\x00")
    with pytest.raises(ValueError, match="64 bits"):
        GenericVariant.from_python(2**64)


def _catalog(tmp_path):
    c = CatalogFactory.create({"warehouse": str(tmp_path)})
    c.create_database("db", True)
    return c


def _data(ids, objs):
    col = GenericVariant.to_arrow_array([None if o == "SQL NULL" else GenericVariant.from_python(o) for o in objs])
    return pa.table({"id": pa.array(ids, pa.int64()), "v": col})


_write = write_arrow


def _read(table):
    rb = table.new_read_builder()
    out = rb.new_read().to_arrow(rb.new_scan().plan().splits()).sort_by("id")
    return [None if r is None else GenericVariant.from_arrow_struct(r).to_python()
            for r in out.column("v").to_pylist()], out


@pytest.mark.parametrize("pk", [False, True])
def test_every_kind_through_a_table(tmp_path, pk):
    c = _catalog(tmp_path)
    objs = EVERY_KIND + ["SQL NULL"]
    data = _data(range(len(objs)), objs)
    schema = Schema.from_pyarrow_schema(data.schema, primary_keys=["id"] if pk else None,
                                        options={"bucket": "2"} if pk else {})
    c.create_table("db.t", schema, False)
    t = c.get_table("db.t")
    assert str([f.type for f in t.fields][1]) == "VARIANT"
    assert '"VARIANT"' in (tmp_path / "db.db" / "t" / "schema" / "schema-0").read_text()
    _write(t, data)
    got, out = _read(t)
    assert got == EVERY_KIND + [None]
    assert out.schema.field("v").type == pa.struct([pa.field("value", pa.binary(), False),
                                                    pa.field("metadata", pa.binary(), False)])
    # the file: a group of required value (id 0) and metadata (id 1), as Java writes it
    f = next((tmp_path / "db.db" / "t").rglob("*.parquet"))
    fs = pq.read_schema(f)
    v = fs.field("v").type
    assert [(v[i].name, v[i].nullable, v[i].metadata[b"PARQUET:field_id"]) for i in range(2)] == \
        [("value", False, b"0"), ("metadata", False, b"1")]
    if pk:  # a newer value wins through the merge, and compaction keeps the bytes
        _write(t, _data([0, 1], [{"new": 1}, "SQL NULL"]))
        t.compact(full=True)
        got, _ = _read(t)
        assert got[:2] == [{"new": 1}, None] and got[2:] == EVERY_KIND[2:] + [None]


def test_variant_key_partition_and_shredding_are_refused(tmp_path):
    c = _catalog(tmp_path)
    data = _data([1], [{"a": 1}])
    with pytest.raises(PaimonRsError, match="VariantType in primary key field v is unsupported"):
        c.create_table("db.k", Schema.from_pyarrow_schema(data.schema, primary_keys=["v"]), False)
    with pytest.raises(PaimonRsError, match="VariantType in partition field v is unsupported"):
        c.create_table("db.p", Schema.from_pyarrow_schema(data.schema, partition_keys=["v"]), False)
    # static shredding (Java's and pypaimon's 'variant.shreddingSchema') is not written
    with pytest.raises(PaimonRsError, match="variant.shreddingSchema"):
        c.create_table("db.s", Schema.from_pyarrow_schema(
            data.schema, options={"variant.shreddingSchema": '{"type": "ROW", "fields": []}'}), False)


@pytest.mark.parametrize("fmt", ["orc", "avro"])
def test_variant_in_orc_or_avro_is_refused(tmp_path, fmt):
    """Java writes VARIANT to Parquet only (ORC's FieldWriterFactory, AvroSchemaConverter throw)."""
    c = _catalog(tmp_path)
    data = _data([1], [{"a": 1}])
    with pytest.raises(PaimonRsError, match="data files cannot hold VARIANT"):
        c.create_table("db.t", Schema.from_pyarrow_schema(data.schema, options={"file.format": fmt}), False)
        _write(c.get_table("db.t"), data)
