"""Tables and checks shared by the Spark tests."""

import datetime as dt
import decimal
import os
from typing import Dict, List, Optional, Set

import pyarrow as pa

import paimon_rs
from paimon_rs import Schema

METADATA = {"snapshot", "schema", "manifest", "index", "statistics", "tag", "changelog", "branch"}

# every type family: decimals, timestamps with and without time zone, nested types
WIDE = pa.schema([
    pa.field("dt", pa.string(), nullable=False),
    pa.field("id", pa.int64(), nullable=False),
    pa.field("v", pa.string()),
    pa.field("i8", pa.int8()),
    pa.field("i16", pa.int16()),
    pa.field("i32", pa.int32()),
    pa.field("f32", pa.float32()),
    pa.field("f64", pa.float64()),
    pa.field("flag", pa.bool_()),
    pa.field("amount", pa.decimal128(12, 3)),
    pa.field("day", pa.date32()),
    pa.field("ts", pa.timestamp("us")),
    pa.field("tsz", pa.timestamp("us", tz="UTC")),
    pa.field("bin", pa.binary()),
    pa.field("tags", pa.list_(pa.string())),
    pa.field("attrs", pa.map_(pa.string(), pa.int64())),
    pa.field("point", pa.struct([pa.field("x", pa.float64()), pa.field("y", pa.int32())])),
])


def wide_rows(ids: range, dts: List[str], version: int = 0) -> pa.Table:
    n = len(ids)
    base = dt.datetime(2026, 1, 2, 3, 4, 5, 678901)
    return pa.table({
        "dt": [dts[i % len(dts)] for i in range(n)],
        "id": list(ids),
        "v": [None if i % 7 == 0 else f"v{i}-{version}" for i in ids],
        "i8": [i % 100 for i in ids],
        "i16": [i % 30000 for i in ids],
        "i32": [i * 3 for i in ids],
        "f32": [i / 4 for i in ids],
        "f64": [i / 3 for i in ids],
        "flag": [i % 2 == 0 for i in ids],
        "amount": [decimal.Decimal(i * 1001 + version).scaleb(-3) for i in ids],
        "day": [dt.date(2026, 1, 1) + dt.timedelta(days=i % 365) for i in ids],
        "ts": [base + dt.timedelta(seconds=i) for i in ids],
        "tsz": [(base + dt.timedelta(minutes=i)).replace(tzinfo=dt.timezone.utc) for i in ids],
        "bin": [bytes([i % 256, version]) for i in ids],
        "tags": [[f"t{i}", "x"] if i % 3 else [] for i in ids],
        "attrs": [[("a", i), ("b", version)] for i in ids],
        "point": [{"x": i / 2, "y": i} for i in ids],
    }, schema=WIDE)


def create(catalog, name: str, schema: pa.Schema, partition_keys: List[str], primary_keys: List[str],
           **options: str):
    catalog.create_database(name.split(".")[0], True)
    catalog.create_table(name, Schema.from_pyarrow_schema(schema, partition_keys=partition_keys,
                                                          primary_keys=primary_keys, options=options), False)
    return catalog.get_table(name)


def plain_read(table, sort: Optional[List[str]] = None) -> pa.Table:
    t = paimon_rs.Table.open(table.table_path, name=table.identifier)
    rb = t.new_read_builder()
    out = rb.new_read().to_arrow(rb.new_scan().plan().splits())
    return out.sort_by([(c, "ascending") for c in sort]) if sort else out


def data_files(table) -> Set[str]:
    out = set()
    for d, dirs, fs in os.walk(table.table_path):
        if d == table.table_path:
            dirs[:] = [x for x in dirs if x not in METADATA]
        out.update(os.path.join(d, f) for f in fs if f.endswith(".parquet"))
    return out


def live_files(table) -> Set[str]:
    t = paimon_rs.Table.open(table.table_path, name=table.identifier)
    rb = t.new_read_builder()
    return {os.path.join(table.table_path, p) for s in rb.new_scan().plan().splits() for p in s.file_paths}


def orphans(table) -> Set[str]:
    """Data files no snapshot references (every test here keeps all snapshots)."""
    res = table.remove_orphan_files(older_than=dt.timedelta(0), dry_run=True)
    return {str(f) for f in res.files if str(f).endswith(".parquet")}


def to_spark(spark, t: pa.Table):
    return spark.createDataFrame(t)


def rows_of(df, sort: List[str]) -> List[Dict]:
    return sorted((r.asDict(recursive=True) for r in df.collect()), key=lambda r: tuple(r[c] for c in sort))
