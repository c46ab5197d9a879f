"""Data files in every ``file.format`` paimon_rs writes (issue #29): Avro (and ORC) tables written,
upserted, deleted from and compacted, primary-key and append, read back equal to a dict model;
their files carry the format's extension and codec, roll on ``target-file-size``, and record the
same statistics as Parquet files of the same rows; what a format cannot hold is refused naming
the table and column. Java reads what is written here (tests/compat/test_java_interop.py)."""

from __future__ import annotations

import datetime
import decimal
import os
from typing import Dict, List

import pyarrow as pa
import pytest

import paimon_rs
from paimon_rs import Schema

from unit_helpers import read, write

FORMATS = ["avro", "orc"]

# every type both formats hold (ORC: flat columns written by orc-rust; a table with DECIMAL or
# nested columns has every file written by paimon_rs's own ORC writer, io/orc_write.rs)
FLAT = pa.schema([
    ("id", pa.int64()),
    ("b", pa.bool_()),
    ("i8", pa.int8()),
    ("i16", pa.int16()),
    ("i32", pa.int32()),
    ("f", pa.float32()),
    ("d", pa.float64()),
    ("s", pa.string()),
    ("bin", pa.binary()),
    ("dt", pa.date32()),
    ("ts3", pa.timestamp("ms")),
    ("ts6", pa.timestamp("us")),
    ("ltz", pa.timestamp("us", tz="UTC")),
])
DECIMAL = pa.schema([("dec", pa.decimal128(12, 3)), ("t", pa.time32("ms"))])
NESTED = pa.schema([
    ("arr", pa.list_(pa.int32())),
    ("m", pa.map_(pa.string(), pa.int64())),
    ("im", pa.map_(pa.int32(), pa.string())),
    ("r", pa.struct([("x", pa.int32()), ("y", pa.string())])),
])


def schema_of(fmt: str) -> pa.Schema:
    return pa.schema(list(FLAT) + list(DECIMAL) + list(NESTED))


def rows(fmt: str, ids: List[int], tag: str = "") -> pa.Table:
    """Rows of every column for ``ids``, every 5th value null (``tag`` changes the values)."""
    def v(i, x):
        return None if i % 5 == 4 else x

    base = datetime.datetime(2026, 1, 2, 3, 4, 5)
    cols = {
        "id": ids,
        "b": [v(i, i % 2 == 0) for i in ids],
        "i8": [v(i, i % 100 - 50) for i in ids],
        "i16": [v(i, i * 7 % 30000) for i in ids],
        "i32": [v(i, i * 1000 + 1) for i in ids],
        "f": [v(i, i / 4) for i in ids],
        "d": [v(i, i * 1.5) for i in ids],
        "s": [v(i, f"s{i}{tag}") for i in ids],
        "bin": [v(i, bytes([i % 256, 7])) for i in ids],
        "dt": [v(i, datetime.date(2020, 1, 1) + datetime.timedelta(days=i)) for i in ids],
        "ts3": [v(i, base + datetime.timedelta(milliseconds=i * 1001)) for i in ids],
        "ts6": [v(i, base + datetime.timedelta(microseconds=i * 1000003)) for i in ids],
        "ltz": [v(i, (base + datetime.timedelta(seconds=i)).replace(tzinfo=datetime.timezone.utc))
                for i in ids],
    }
    cols.update({
        "dec": [v(i, decimal.Decimal(i * 1000 + 123) / 1000) for i in ids],
        "t": [v(i, datetime.time(i % 24, i % 60, 1, 123000)) for i in ids],
        "arr": [v(i, [i, None, i + 1][: i % 4]) for i in ids],
        "m": [v(i, [("a", i), ("b", None)]) for i in ids],
        "im": [v(i, [(i, f"x{tag}"), (i + 1, None)]) for i in ids],
        "r": [v(i, {"x": i, "y": None if i % 3 else f"y{i}"}) for i in ids],
    })
    return pa.table(cols, schema=schema_of(fmt))


def as_dict(t: pa.Table) -> Dict[int, dict]:
    return {r["id"]: r for r in t.to_pylist()}


def data_files(table) -> List[str]:
    out = []
    for root, _, names in os.walk(table.table_path.removeprefix("file:")):
        out += [os.path.join(root, n) for n in names if n.startswith("data-")]
    return sorted(out)


def make(catalog, name: str, fmt: str, pk: bool, options: Dict[str, str] = None):
    opts = {"file.format": fmt, "bucket": "2" if pk else "-1", **(options or {})}
    schema = Schema.from_pyarrow_schema(schema_of(fmt), primary_keys=["id"] if pk else None,
                                        options=opts)
    catalog.create_table(f"db.{name}", schema, False)
    return catalog.get_table(f"db.{name}")


@pytest.mark.parametrize("fmt", FORMATS)
def test_primary_key_table_write_upsert_delete_compact(catalog, fmt):
    t = make(catalog, "pk", fmt, pk=True, options={"write-only": "true"})
    model = as_dict(rows(fmt, list(range(40))))
    write(t, rows(fmt, list(range(40))))
    upsert = rows(fmt, list(range(30, 60)), tag="u")
    write(t, upsert)
    model.update(as_dict(upsert))
    t.delete("id < 5")  # -D records of the matching keys
    model = {k: v for k, v in model.items() if k >= 5}
    assert as_dict(read(t)) == model
    files = data_files(t)
    assert files and all(f.endswith(f".{fmt}") for f in files)
    before = len(files)
    assert t.compact(full=True) is not None
    assert as_dict(read(t)) == model
    # every bucket compacted into one file at the top level, in the same format
    live = {os.path.basename(f.file_path) for s in t.new_read_builder().new_scan().plan().splits()
            for f in s.files}
    assert len(live) <= 2 and all(n.endswith(f".{fmt}") for n in live)
    assert len(data_files(t)) > before - 1


@pytest.mark.parametrize("fmt", FORMATS)
def test_append_table_write_and_compact(catalog, fmt):
    t = make(catalog, "ap", fmt, pk=False, options={"write-only": "true"})
    want = []
    for c in range(6):
        b = rows(fmt, list(range(c * 10, c * 10 + 10)))
        write(t, b)
        want += b.to_pylist()
    assert sorted(read(t).to_pylist(), key=lambda r: r["id"]) == want
    assert t.compact(full=True) is not None
    got = read(t)
    assert got.to_pylist() == want  # an unaware-bucket table keeps the files' sequence order
    assert all(f.endswith(f".{fmt}") for f in data_files(t))


@pytest.mark.parametrize("fmt", FORMATS)
def test_files_roll_on_target_file_size(catalog, fmt):
    t = make(catalog, "roll", fmt, pk=False, options={"target-file-size": "64kb"})
    n = 20_000
    write(t, rows(fmt, list(range(n))))
    files = [f for s in t.new_read_builder().new_scan().plan().splits() for f in s.files]
    assert len(files) > 2
    assert sum(f.row_count for f in files) == n
    assert len(data_files(t)) == len(files)
    for f in data_files(t):
        assert os.path.getsize(f) < 256 << 10
    assert read(t).num_rows == n


@pytest.mark.parametrize("fmt", FORMATS)
def test_stats_are_those_of_parquet_files(catalog, fmt):
    """The manifest's statistics come from the rows, not the format: the same as Parquet's."""
    got = {}
    for f in (fmt, "parquet"):
        t = make(catalog, f"st_{f}", fmt if f == "parquet" else f, pk=True)
        t = catalog.get_table(f"db.st_{f}")
        write(t, rows(fmt, list(range(50))))
        files = catalog.get_table(f"db.st_{f}$files").to_arrow().to_pylist()
        got[f] = sorted(
            (r["bucket"], r["record_count"], r["min_key"], r["max_key"], r["null_value_counts"],
             r["min_value_stats"], r["max_value_stats"], r["file_format"]) for r in files)
    assert [r[:-1] for r in got[fmt]] == [r[:-1] for r in got["parquet"]]
    assert {r[-1] for r in got[fmt]} == {fmt}


def test_avro_codec_is_the_tables(catalog):
    for name, opts, codec in [("c1", {}, b"zstandard"), ("c2", {"file.compression": "snappy"}, b"snappy"),
                              ("c3", {"avro.codec": "deflate"}, b"deflate"),
                              ("c4", {"file.compression": "none"}, b"null")]:
        t = make(catalog, name, "avro", pk=False, options=opts)
        write(t, rows("avro", list(range(10))))
        (f,) = data_files(t)
        with open(f, "rb") as fh:
            head = fh.read(4096)
        assert head.startswith(b"Obj\x01") and b"avro.codec" in head
        assert b"\x14avro.codec" + bytes([len(codec) * 2]) + codec in head
        assert read(t).num_rows == 10


def test_what_avro_cannot_hold_is_refused(catalog):
    for name, schema, needle in [
        ("r1", pa.schema([("id", pa.int64()), ("ts", pa.timestamp("ns"))]), "column 'ts' is TIMESTAMP(9)"),
        ("r2", pa.schema([("id", pa.int64()), ("a", pa.list_(pa.timestamp("ns", tz="UTC")))]),
         "column 'a.element' is TIMESTAMP(9) WITH LOCAL TIME ZONE"),
    ]:
        with pytest.raises(paimon_rs.UnsupportedError, match=needle.replace("(", r"\(").replace(")", r"\)")):
            catalog.create_table(f"db.{name}", Schema.from_pyarrow_schema(
                schema, options={"file.format": "avro"}), False)
    for opts, needle in [({"file.compression": "lz4"}, "'file.compression' = 'lz4'"),
                         ({"avro.codec": "xz"}, "'avro.codec' = 'xz'"),
                         ({"file.format": "csv"}, "'file.format' = 'csv'")]:
        with pytest.raises(paimon_rs.UnsupportedError, match=needle):
            catalog.create_table("db.r3", Schema.from_pyarrow_schema(
                pa.schema([("id", pa.int64())]), options={"file.format": "avro", **opts}), False)


def test_orc_compression_and_what_orc_cannot_hold(catalog):
    for name, opts in [("o1", {}), ("o2", {"file.compression": "lz4"}), ("o3", {"file.compression": "none"}),
                       ("o4", {"file.compression.zstd-level": "3"})]:
        t = make(catalog, name, "orc", pk=True, options=opts)
        write(t, rows("orc", list(range(20))))
        assert as_dict(read(t)) == as_dict(rows("orc", list(range(20))))
        assert all(f.endswith(".orc") for f in data_files(t))
    for schema, opts, needle in [
        (pa.schema([("id", pa.int64())]), {"file.compression": "gzip"}, "'file.compression' = 'gzip'"),
        (pa.schema([("id", pa.int64())]), {"file.compression.zstd-level": "9"},
         "'file.compression.zstd-level' = '9'"),
        (pa.schema([("id", pa.int64())]), {"orc.bloom.filter.columns": "id"}, "orc.bloom.filter.columns"),
    ]:
        with pytest.raises(paimon_rs.UnsupportedError, match=needle.replace("(", r"\(").replace(")", r"\)")):
            catalog.create_table("db.bad", Schema.from_pyarrow_schema(
                schema, options={"file.format": "orc", **opts}), False)


@pytest.mark.parametrize("fmt", ["parquet", "avro", "orc"])
@pytest.mark.parametrize("legacy", ["true", "false"])
def test_orc_timestamp_ltz_legacy_type_is_accepted(catalog, fmt, legacy):
    """``orc.timestamp-ltz.legacy.type`` (Java's ORC option, which pypaimon's Java-interop tests
    set on every table, Parquet ones too) was refused as an unknown ``orc.*`` option. Both
    values are honoured: paimon_rs writes ORC as a writer in UTC, where Java's legacy mapping
    and the instant are the same value, so an ORC file holds the instants either way."""
    t = make(catalog, f"ltz_{fmt}_{legacy}", fmt, pk=False,
             options={"orc.timestamp-ltz.legacy.type": legacy})
    want = rows(fmt, list(range(10)))
    write(t, want)
    got = as_dict(read(t))
    assert {k: v["ltz"] for k, v in got.items()} == {r["id"]: r["ltz"] for r in want.to_pylist()}
    if fmt == "orc":
        import pyarrow.orc as po

        (f,) = data_files(t)
        stored = po.ORCFile(f).read(columns=["id", "ltz"]).to_pylist()
        assert {r["id"]: r["ltz"] for r in stored} == {r["id"]: r["ltz"] for r in want.to_pylist()}


def test_orc_timestamp_ltz_legacy_type_must_be_a_boolean(catalog):
    with pytest.raises(paimon_rs.InvalidArgumentError, match="orc.timestamp-ltz.legacy.type"):
        make(catalog, "ltz_bad", "orc", pk=False, options={"orc.timestamp-ltz.legacy.type": "maybe"})


def test_orc_char_varchar_decimal_nested_pk_table_against_a_model(catalog):
    """CHAR(n), VARCHAR(n), DECIMAL and nested columns in an ORC primary-key table (paimon_rs's
    own ORC writer): written, upserted, compacted, read back equal to a dict model, the key a
    CHAR too (values written as the rows hold them: the key ranges the manifest records hold)."""
    from paimon_rs import ArrayType, AtomicType, DataField, MapType, RowType

    fields = [DataField(0, "k", AtomicType("CHAR(4)", nullable=False)),
              DataField(1, "v", AtomicType("VARCHAR(6)")),
              DataField(2, "d", AtomicType("DECIMAL(38, 10)")),
              DataField(3, "a", ArrayType(True, AtomicType("VARCHAR(3)"))),
              DataField(4, "m", MapType(True, AtomicType("INT", nullable=False), AtomicType("DECIMAL(5, 2)"))),
              DataField(5, "r", RowType(True, [DataField(6, "c", AtomicType("CHAR(2)")),
                                               DataField(7, "n", AtomicType("BIGINT"))]))]
    catalog.create_table("db.oc", paimon_rs.Schema(fields=fields, primary_keys=["k"], options={
        "file.format": "orc", "bucket": "2", "file.compression": "snappy"}), False)
    t = catalog.get_table("db.oc")

    def batch(ids, tag):
        def v(i, x):
            return None if i % 6 == 5 else x
        return pa.table({
            "k": [f"k{i}" for i in ids],
            "v": [v(i, f"{tag}{i}") for i in ids],
            "d": [v(i, decimal.Decimal(i * 7919 - 50000).scaleb(-10) * (-1) ** i) for i in ids],
            "a": [v(i, [f"a{i % 9}", None, "zz"][: i % 4]) for i in ids],
            "m": [v(i, [(i, decimal.Decimal(i % 1000) / 100), (-i - 1, None)]) for i in ids],
            "r": [v(i, {"c": None if i % 4 == 0 else f"c{i % 10}"[:2], "n": i * -3}) for i in ids],
        }, schema=t.arrow_schema)

    model: dict = {}

    def put(b):
        model.update({r["k"]: r for r in b.to_pylist()})

    for ids, tag in [(range(0, 50), "a"), (range(30, 80), "b"), (range(70, 99), "c")]:
        b = batch(list(ids), tag)
        write(t, b)
        put(b)
    t.compact(full=True)
    got = read(t).to_pylist()
    for r in got:
        r["m"] = r["m"] and sorted(r["m"])
    want = list(model.values())
    for r in want:
        r["m"] = r["m"] and sorted(r["m"])
    assert sorted(got, key=lambda r: r["k"]) == sorted(want, key=lambda r: r["k"])
    assert all(f.endswith(".orc") for f in data_files(t))


def test_orc_refuses_multiset(catalog):
    from paimon_rs import AtomicType, DataField, MultisetType

    with pytest.raises(paimon_rs.UnsupportedError, match="column 'ms' is MULTISET<INT>"):
        catalog.create_table("db.ms", paimon_rs.Schema(fields=[
            DataField(0, "id", AtomicType("INT")), DataField(1, "ms", MultisetType(True, AtomicType("INT")))],
            options={"file.format": "orc"}), False)
