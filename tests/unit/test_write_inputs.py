"""What ``write_arrow`` accepts and refuses (issue 9, items 7 and 12): malformed string data,
empty and duplicated columns, integer and float widenings, and inputs that are not tables. Every
refusal names the column, and nothing of a refused batch reaches the table."""

from __future__ import annotations

import struct

import pyarrow as pa
import pytest

import paimon_rs
from paimon_rs import Schema

from unit_helpers import read, write

# on local disk, and on S3 under -m long (tests/stores.py)
pytestmark = pytest.mark.stores("local", "s3-long")

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


@pytest.fixture
def table(catalog):
    catalog.create_table("db.s", Schema.from_pyarrow_schema(SCHEMA, primary_keys=["id"],
                                                            options={"bucket": "1"}), False)
    return catalog.get_table("db.s")


def new_table(catalog, name, schema, pk=None):
    options = {"bucket": "1"} if pk else {}
    catalog.create_table(f"db.{name}", Schema.from_pyarrow_schema(schema, primary_keys=pk, options=options), False)
    return catalog.get_table(f"db.{name}")


def offsets(*values: int) -> pa.Buffer:
    return pa.py_buffer(struct.pack(f"<{len(values)}i", *values))


def raw_strings(offs: tuple, data: bytes) -> pa.Array:
    """A string array built without validation, as a C Data Interface producer may hand it over."""
    return pa.Array.from_buffers(pa.string(), len(offs) - 1, [None, offsets(*offs), pa.py_buffer(data)])


def refused(table, data, match, exc=paimon_rs.SchemaMismatchError):
    """Writing `data` raises `exc` matching `match`, and the table is unchanged."""
    before = table.latest_snapshot_id()
    wb = table.new_batch_write_builder()
    w = wb.new_write()
    with pytest.raises(exc, match=match):
        w.write_arrow(data)
    assert w.prepare_commit() == []  # nothing of it was buffered
    w.close()
    assert table.latest_snapshot_id() == before


# ---------------------------------------------------------------- item 7: string data


def test_invalid_utf8_is_refused_naming_column_and_row(table):
    write(table, pa.table({"id": [9], "v": ["kept"]}))
    bad = raw_strings((0, 1, 3, 4), b"a\xff\xfeb")
    data = pa.table({"id": [1, 2, 3], "v": bad})
    refused(table, data, r"column 'v'.*row 1.*invalid UTF-8")
    refused(table, data.to_reader(), r"column 'v'.*row 1")
    w = table.new_batch_write_builder().new_write()
    with pytest.raises(paimon_rs.SchemaMismatchError, match=r"column 'v'.*row 1"):
        w.write_arrow_batch(data.to_batches()[0])
    w.close()
    assert read(table).to_pylist() == [{"id": 9, "v": "kept"}]  # still readable


def test_row_counts_across_the_batches_of_a_stream(table):
    good = pa.record_batch({"id": [1, 2, 3], "v": ["a", "b", "c"]}, schema=SCHEMA)
    bad = pa.record_batch({"id": [4, 5], "v": raw_strings((0, 1, 2), b"d\xc3")}, schema=SCHEMA)
    refused(table, pa.RecordBatchReader.from_batches(SCHEMA, [good, bad]), r"column 'v'.*row 4")


@pytest.mark.parametrize("offs,data,match", [
    ((0, 9, 3), b"abc", r"row 0.*beyond the values buffer"),
    ((0, 2, 1, 3), b"abc", r"row 1.*offsets decrease"),
    ((0, 2, 3), "aé".encode(), r"row 0.*invalid UTF-8"),  # an offset inside a character
])
def test_bad_offsets_are_refused(table, offs, data, match):
    n = len(offs) - 1
    refused(table, pa.table({"id": list(range(n)), "v": raw_strings(offs, data)}), "column 'v'.*" + match)


def test_invalid_utf8_in_string_view_and_large_string(table):
    # a view of 2 inline bytes 0xff 0xfe in row 1
    views = struct.pack("<i12s", 1, b"a") + struct.pack("<i12s", 2, b"\xff\xfe")
    view = pa.Array.from_buffers(pa.string_view(), 2, [None, pa.py_buffer(views)])
    refused(table, pa.table({"id": [1, 2], "v": view}), r"column 'v'.*row 1.*invalid UTF-8")
    large = pa.Array.from_buffers(pa.large_string(), 2, [None, pa.py_buffer(struct.pack("<3q", 0, 1, 2)),
                                                         pa.py_buffer(b"a\xff")])
    refused(table, pa.table({"id": [1, 2], "v": large}), r"column 'v'.*row 1")


def test_invalid_utf8_nested_in_list_and_struct(catalog):
    t = new_table(catalog, "n", pa.schema([("id", pa.int64()), ("tags", pa.list_(pa.string())),
                                           ("s", pa.struct([("name", pa.string())]))]))
    tags = pa.ListArray.from_arrays(pa.array([0, 1, 1, 3], pa.int32()), raw_strings((0, 1, 2, 3), b"ab\xff"))
    ok_s = pa.array([{"name": "x"}] * 3)
    refused(t, pa.table({"id": [1, 2, 3], "tags": tags, "s": ok_s}), r"column 'tags' \(at tags\[\]\).*row 2")
    ok_tags = pa.array([["a"], [], ["b"]])
    bad_s = pa.StructArray.from_arrays([raw_strings((0, 1, 2, 3), b"a\xffc")], names=["name"])
    refused(t, pa.table({"id": [1, 2, 3], "tags": ok_tags, "s": bad_s}), r"column 's' \(at s\.name\).*row 1")


def test_valid_strings_of_every_layout_are_written(catalog):
    values = ["a", "", None, "héllo wörld", "日本語のテキスト", "emoji 🎉🎉", "x" * 40]
    t = new_table(catalog, "ok", pa.schema([("id", pa.int64()), ("v", pa.string()),
                                            ("l", pa.list_(pa.string())), ("m", pa.map_(pa.string(), pa.string()))]))
    n = len(values)
    lists = [[v, v] for v in values]
    maps = [[("k" + str(i), v)] for i, v in enumerate(values)]
    rows = []
    for i, typ in enumerate([pa.string(), pa.large_string(), pa.string_view(), pa.dictionary(pa.int32(), pa.string())]):
        ids = list(range(i * n, (i + 1) * n))
        data = pa.table({"id": ids, "v": pa.array(values).cast(typ), "l": pa.array(lists), "m": pa.array(
            maps, pa.map_(pa.string(), pa.string()))})
        write(t, data.slice(1))  # sliced input: offsets do not start at 0
        rows += data.slice(1).to_pylist()
    got = read(t, sort=["id"]).to_pylist()
    assert [r["v"] for r in got] == [r["v"] for r in rows]
    assert [r["l"] for r in got] == [r["l"] for r in rows]


# ---------------------------------------------------------------- item 12: input gaps


def test_empty_table_is_checked_like_any_batch(table):
    empty = pa.table({"id": pa.array([], pa.int64()), "v": pa.array([], pa.string()), "zz": pa.array([], pa.int64())})
    assert empty.to_batches() == []  # an empty pyarrow table is a stream without batches
    refused(table, empty, "unknown column 'zz'")
    refused(table, pa.RecordBatchReader.from_batches(pa.schema([("id", pa.int64())]), []), "missing column 'v'")
    refused(table, pa.table({"id": pa.array([], pa.string()), "v": pa.array([], pa.string())}), "column 'id'")
    assert write(table, SCHEMA.empty_table()) is None  # a fitting empty table: nothing to commit


def test_duplicate_column_names_are_refused(table):
    data = pa.Table.from_arrays([pa.array([1]), pa.array(["a"]), pa.array(["b"])], names=["id", "v", "v"])
    refused(table, data, "column 'v' appears more than once")


INTS = {"TINYINT": pa.int8(), "SMALLINT": pa.int16(), "INT": pa.int32(), "BIGINT": pa.int64()}
WIDENINGS = [
    (pa.uint8(), "SMALLINT"), (pa.uint8(), "INT"), (pa.uint8(), "BIGINT"),
    (pa.uint16(), "INT"), (pa.uint16(), "BIGINT"), (pa.uint32(), "BIGINT"),
    (pa.int8(), "SMALLINT"), (pa.int8(), "BIGINT"), (pa.int16(), "INT"), (pa.int32(), "BIGINT"),
]


@pytest.mark.parametrize("src,target", WIDENINGS, ids=[f"{s}-{t}" for s, t in WIDENINGS])
def test_lossless_integer_widenings_are_accepted(catalog, src, target):
    t = new_table(catalog, "w", pa.schema([("id", pa.int64()), ("x", INTS[target])]), pk=["id"])
    top = {8: 2**8 - 1, 16: 2**16 - 1, 32: 2**32 - 1}[src.bit_width] if pa.types.is_unsigned_integer(src) \
        else 2 ** (src.bit_width - 1) - 1
    low = 0 if pa.types.is_unsigned_integer(src) else -top - 1
    write(t, pa.table({"id": [1, 2, 3], "x": pa.array([low, top, None], src)}))
    assert read(t, sort=["id"]).column("x").to_pylist() == [low, top, None]


def test_float_widens_to_double(catalog):
    t = new_table(catalog, "f", pa.schema([("x", pa.float64())]))
    write(t, pa.table({"x": pa.array([1.5, None], pa.float32())}))
    assert read(t).column("x").to_pylist() == [1.5, None]


@pytest.mark.parametrize("src,values,target,match", [
    (pa.uint8(), [1, 200], pa.int8(), r"column 'x': cannot convert UInt8 to TINYINT \(row 1\)"),
    (pa.uint64(), [2**63], pa.int64(), r"column 'x': cannot convert UInt64 to BIGINT \(row 0\)"),
    (pa.int64(), [1, 2, 2**40], pa.int32(), r"column 'x': cannot convert Int64 to INT \(row 2\)"),
    (pa.float64(), [1.5, 0.1], pa.float32(), r"column 'x': row 1 holds 0.1 \(Float64\), which FLOAT cannot hold"),
    (pa.int64(), [1, 2**53 + 1], pa.float64(), r"column 'x': row 1 holds 9007199254740993 \(Int64\), which DOUBLE"),
    (pa.float64(), [2.0, 2.5], pa.int64(), r"column 'x': row 1 holds 2.5 \(Float64\), which BIGINT"),
    (pa.timestamp("ns"), [10**9, 10**9 + 1], pa.timestamp("us"), r"column 'x': row 1 holds .* which TIMESTAMP\(6\)"),
    (pa.string(), ["1"], pa.int32(), r"column 'x': expected INT .* got arrow Utf8"),
    (pa.string(), ["2024-01-01"], pa.date32(), r"column 'x': expected DATE .* got arrow Utf8"),
])
def test_lossy_conversions_are_refused_naming_column_and_types(catalog, src, values, target, match):
    t = new_table(catalog, "l", pa.schema([("x", target)]))
    refused(t, pa.table({"x": pa.array(values, src)}), match)


# The one widening rule (issue 31): a value goes into a column of another type when the column
# holds it exactly; write_arrow and write_pandas accept and refuse the same inputs.
EXACT = [
    (pa.int64(), [1, -(2**53), None], pa.float64(), [1.0, -(2.0**53), None]),
    (pa.int32(), [7, None], pa.float32(), [7.0, None]),
    (pa.uint64(), [2**40], pa.float64(), [2.0**40]),
    (pa.float64(), [1.0, -3.0, None], pa.int64(), [1, -3, None]),
    (pa.float64(), [1.5, None], pa.float32(), [1.5, None]),
    (pa.timestamp("ns"), [1_000_000_000_000, None], pa.timestamp("us"), [1_000_000_000, None]),
    (pa.timestamp("us"), [5_000], pa.timestamp("ms"), [5]),
]


@pytest.mark.parametrize("src,values,target,back", EXACT, ids=[f"{c[0]}-{c[2]}" for c in EXACT])
def test_exact_conversions_are_accepted_by_write_arrow_and_write_pandas(catalog, src, values, target, back):
    t = new_table(catalog, "e", pa.schema([("id", pa.int64()), ("x", target)]), pk=["id"])
    data = pa.table({"id": list(range(len(values))), "x": pa.array(values, src)})
    write(t, data)
    got = read(t, sort=["id"]).column("x").cast(pa.int64() if pa.types.is_timestamp(target) else target)
    assert got.to_pylist() == back
    pd = pytest.importorskip("pandas")
    t2 = new_table(catalog, "e2", pa.schema([("id", pa.int64()), ("x", target)]), pk=["id"])
    wb = t2.new_batch_write_builder()
    w, c = wb.new_write(), wb.new_commit()
    df = data.to_pandas()
    assert isinstance(df, pd.DataFrame)
    w.write_pandas(df)
    c.commit(w.prepare_commit())
    assert read(t2, sort=["id"]).equals(read(t, sort=["id"]))


LOSSY = [
    (pa.float64(), [2.5], pa.int64()),
    (pa.int64(), [2**53 + 1], pa.float64()),
    (pa.timestamp("ns"), [1_000_000_000_001], pa.timestamp("us")),
    (pa.string(), ["1"], pa.int64()),
    (pa.string(), ["1.5"], pa.float64()),
]


@pytest.mark.parametrize("src,values,target", LOSSY, ids=[f"{c[0]}-{c[2]}" for c in LOSSY])
def test_lossy_inputs_are_refused_by_write_arrow_and_write_pandas_alike(catalog, src, values, target):
    t = new_table(catalog, "x", pa.schema([("x", target)]))
    data = pa.table({"x": pa.array(values, src)})
    refused(t, data, "column 'x'")
    pytest.importorskip("pandas")
    w = t.new_batch_write_builder().new_write()
    with pytest.raises(ValueError, match="column 'x'"):
        w.write_pandas(data.to_pandas())
    w.close()
    assert read(t).num_rows == 0


def test_arrays_are_not_tables(table):
    refused(table, pa.array([1, 2]), "wrap it in a table", TypeError)
    refused(table, pa.chunked_array([[1, 2]]), "wrap it in a table", TypeError)


def test_polars_inputs_get_a_hint(table):
    pl = pytest.importorskip("polars")
    refused(table, pl.DataFrame({"id": [1, 2], "v": [None, None]}),
            r"column 'v' \(cast it to STRING\).*Arrow type null.*cast the column to the table's type")
    refused(table, pl.Series("id", [1, 2]), r"polars Series: call \.to_frame\(\)", TypeError)
    refused(table, pl.DataFrame({"id": [1], "v": ["a"]}).lazy(), r"polars LazyFrame: call \.collect\(\)", TypeError)
    bad = pl.from_arrow(pa.table({"id": [1]}))
    refused(table, bad, "missing column 'v'")
    write(table, pl.DataFrame({"id": [1, 2], "v": ["é", None]}))  # polars strings are string views
    assert read(table, sort=["id"]).to_pylist() == [{"id": 1, "v": "é"}, {"id": 2, "v": None}]


def test_nested_sub_millisecond_check_sees_only_the_rows_written(catalog):
    """The sub-millisecond TIME check of nested columns (review34c F2) reads only what a row
    references: a slice that leaves out the sub-ms row is written, a null list or struct whose
    hidden children are sub-ms is written, and a refusal names the top-level row."""
    import datetime

    sub, whole = datetime.time(1, 0, 0, 1), datetime.time(2)
    lt = pa.list_(pa.time64("us"))
    t = new_table(catalog, "tl", pa.schema([("id", pa.int64()), ("lt", lt)]))
    data = pa.table({"id": [1, 2, 3], "lt": pa.array([[sub], [whole], [whole, sub]], type=lt)})
    write(t, data.slice(1, 1))
    refused(t, data.slice(1), r"column 'lt': row 1 holds, in a nested value, .*sub-millisecond")
    # a null list slot over sub-ms values: offsets that reach them, validity off
    hidden = pa.ListArray.from_arrays(pa.array([0, 1, 2], pa.int32()), pa.array([sub, whole], pa.time64("us")),
                                      mask=pa.array([True, False]))
    write(t, pa.table({"id": [4, 5], "lt": hidden}))
    st = pa.struct([("t", pa.time64("us"))])
    t2 = new_table(catalog, "ts", pa.schema([("id", pa.int64()), ("st", st)]))
    nulls = pa.StructArray.from_arrays([pa.array([sub, whole], pa.time64("us"))], names=["t"],
                                       mask=pa.array([True, False]))
    write(t2, pa.table({"id": [1, 2], "st": nulls}))
    assert sorted(r["id"] for r in read(t).to_pylist()) == [2, 4, 5]
    assert read(t2).sort_by("id").column("st").to_pylist() == [None, {"t": whole}]
    # map keys (offsets) and a large list, sliced past the sub-ms row
    mt = pa.map_(pa.time64("ns"), pa.int32())
    t3 = new_table(catalog, "tm", pa.schema([("id", pa.int64()), ("m", mt), ("ll", pa.large_list(pa.time64("us")))]))
    maps = pa.table({"id": [1, 2], "m": pa.array([[(1, 1)], [(2_000_000, 2)]], type=mt),
                     "ll": pa.array([[whole], [whole]], type=pa.large_list(pa.time64("us")))})
    write(t3, maps.slice(1))
    refused(t3, maps, r"column 'm': row 0 holds, in a nested value, the time 1 ns")
    large = maps.set_column(2, "ll", pa.array([[whole], [whole, None, sub]], type=pa.large_list(pa.time64("us"))))
    refused(t3, large.slice(1), r"column 'll': row 0 holds, in a nested value, the time 3600000001 us")
    assert read(t3).column("id").to_pylist() == [2]
