"""Values for the Java interop tests: the driver's canonical JSON form, Arrow conversions, types.

Canonical form (what ``java/PaimonDriver.java`` sends and takes): BOOLEAN -> bool, integers,
DATE -> days, TIME -> millis of day, FLOAT/DOUBLE -> string (``repr``-like, ``NaN``,
``Infinity``), DECIMAL -> plain string, CHAR/VARCHAR -> str, BINARY/VARBINARY -> base64,
TIMESTAMP / TIMESTAMP_LTZ -> int epoch nanoseconds, ARRAY -> list, MAP -> list of [key, value],
ROW -> list of the field values. Paimon types are schema-file JSON: ``"INT NOT NULL"``,
``{"type": "ARRAY", "element": ...}``, ``{"type": "MAP", "key": ..., "value": ...}``,
``{"type": "ROW", "fields": [{"id": 0, "name": ..., "type": ...}]}``.
"""

from __future__ import annotations

import base64
import math
import random
import struct
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Callable, Optional

import pyarrow as pa

NS = {"s": 10**9, "ms": 10**6, "us": 10**3, "ns": 1}
STR_POOL = ["", "a", "abc", "héllo", "中文字符", "🙂 emoji", "with space", "quote'\"", "x" * 40]


# --------------------------------------------------------------------------- Paimon types


def root(t: Any) -> str:
    """``"DECIMAL(38, 10) NOT NULL"`` -> ``"DECIMAL"``; ``{"type": "ARRAY", ...}`` -> ``"ARRAY"``."""
    s = t["type"] if isinstance(t, dict) else t
    return s.split("(")[0].split(" ")[0].upper()


def not_null(t: Any) -> Any:
    if isinstance(t, dict):
        return {**t, "type": t["type"] + " NOT NULL"}
    return t + " NOT NULL"


def array_of(e: Any) -> dict:
    return {"type": "ARRAY", "element": e}


def map_of(k: Any, v: Any) -> dict:
    return {"type": "MAP", "key": not_null(k), "value": v}


def row_of(*fields: tuple[str, Any]) -> dict:
    return {"type": "ROW", "fields": [{"id": i, "name": n, "type": t} for i, (n, t) in enumerate(fields)]}


def norm(v: Any, t: Any, java: bool = False) -> Any:
    """A comparable form of a canonical value: floats as floats (NaN as "NaN"), decimals as
    Decimal, containers as tuples. ``java``: a ROW whose fields are all null counts as a null ROW
    (JAVA_ALL_NULL_ROW: the 1.0 jar's Parquet reader cannot tell them apart)."""
    if v is None:
        return None
    r = root(t)
    if r in ("FLOAT", "DOUBLE"):
        f = float(v)
        return "NaN" if math.isnan(f) else f
    if r == "DECIMAL":
        return Decimal(v)
    if r == "ARRAY":
        return tuple(norm(x, t["element"], java) for x in v)
    if r == "MAP":
        return tuple(sorted(((norm(k, t["key"], java), norm(x, t["value"], java)) for k, x in v), key=repr))
    if r == "ROW":
        out = tuple(norm(x, f["type"], java) for x, f in zip(v, t["fields"]))
        return None if java and all(x is None for x in out) else out
    return v


def norm_row(row: list, types: list, java: bool = False) -> tuple:
    return tuple(norm(v, t, java) for v, t in zip(row, types))


# Bugs of the reference (the Java 1.0-SNAPSHOT bundle's Parquet reader reading its own files),
# found by these tests; the data and comparisons avoid them:
JAVA_INT96_PRE_EPOCH = ("Java's INT96 reader fails (IllegalArgumentException in Timestamp.<init>) on a "
                        "TIMESTAMP(7..9) before 1970 with a sub-millisecond part")
JAVA_ALL_NULL_ROW = "Java reads a non-null ROW whose fields are all null as a null ROW"
JAVA_NULL_ROW_OF_ROW = ("Java's NestedColumnReader.readRow throws ArrayIndexOutOfBoundsException on a null ROW "
                        "that contains a ROW")


# --------------------------------------------------------------------------- Arrow <-> canonical


def _float_str(f: float) -> str:
    if math.isnan(f):
        return "NaN"
    if math.isinf(f):
        return "Infinity" if f > 0 else "-Infinity"
    return repr(f)


def to_py(v: Any, at: pa.DataType) -> Any:
    """Canonical value -> what ``pa.array(..., type=at)`` takes."""
    if v is None:
        return None
    if pa.types.is_floating(at):
        return float(v)
    if pa.types.is_decimal(at):
        return Decimal(v)
    if pa.types.is_binary(at) or pa.types.is_fixed_size_binary(at) or pa.types.is_large_binary(at):
        return base64.b64decode(v)
    if pa.types.is_timestamp(at):
        q, r = divmod(v, NS[at.unit])
        assert r == 0, f"{v} ns does not fit {at}"
        return q
    if pa.types.is_time32(at) or pa.types.is_time64(at):
        return v * {"s": 1, "ms": 1, "us": 1000, "ns": 10**6}[at.unit] // (1000 if at.unit == "s" else 1)
    if pa.types.is_map(at):
        return [(to_py(k, at.key_type), to_py(x, at.item_type)) for k, x in v]
    if pa.types.is_list(at) or pa.types.is_large_list(at):
        return [to_py(x, at.value_type) for x in v]
    if pa.types.is_struct(at):
        return {at.field(i).name: to_py(x, at.field(i).type) for i, x in enumerate(v)}
    return v


def to_arrow(rows: list, names: list, arrow_types: list) -> pa.Table:
    cols = [pa.array([to_py(r[i], at) for r in rows], type=at) for i, at in enumerate(arrow_types)]
    return pa.Table.from_arrays(cols, names=names)


def _physical(at: pa.DataType) -> pa.DataType:
    """``at`` with temporal types replaced by their integer storage (a cast keeps the values)."""
    if pa.types.is_timestamp(at) or pa.types.is_time64(at):
        return pa.int64()
    if pa.types.is_date32(at) or pa.types.is_time32(at):
        return pa.int32()
    if pa.types.is_map(at):
        return pa.map_(pa.field("key", _physical(at.key_type), nullable=False),
                       pa.field("value", _physical(at.item_type)))
    if pa.types.is_list(at):
        return pa.list_(pa.field(at.value_field.name, _physical(at.value_type)))
    if pa.types.is_struct(at):
        return pa.struct([pa.field(f.name, _physical(f.type), f.nullable) for f in at])
    return at


def from_py(v: Any, at: pa.DataType) -> Any:
    """A value of ``_physical(at)``'s ``to_pylist`` -> canonical."""
    if v is None:
        return None
    if pa.types.is_floating(at):
        return _float_str(v)
    if pa.types.is_decimal(at):
        return format(v, "f")
    if pa.types.is_binary(at) or pa.types.is_fixed_size_binary(at) or pa.types.is_large_binary(at):
        return base64.b64encode(v).decode()
    if pa.types.is_timestamp(at):
        return v * NS[at.unit]
    if pa.types.is_time32(at) or pa.types.is_time64(at):
        return {"s": v * 1000, "ms": v, "us": v // 1000, "ns": v // 10**6}[at.unit]
    if pa.types.is_map(at):
        return [[from_py(k, at.key_type), from_py(x, at.item_type)] for k, x in v]
    if pa.types.is_list(at) or pa.types.is_large_list(at):
        return [from_py(x, at.value_type) for x in v]
    if pa.types.is_struct(at):
        return [from_py(v[f.name], f.type) for f in at]
    return v


def from_arrow(table: pa.Table) -> list[list]:
    """Rows of an Arrow table in canonical form."""
    cols = []
    for f, col in zip(table.schema, table.columns):
        vals = col.cast(_physical(f.type)).to_pylist()
        cols.append([from_py(v, f.type) for v in vals])
    return [list(r) for r in zip(*cols)] if cols else []


# --------------------------------------------------------------------------- random values


def _f32(x: float) -> float:
    return struct.unpack("f", struct.pack("f", x))[0]


def _dec(p: int, s: int) -> Callable[[random.Random], str]:
    def gen(rng: random.Random) -> str:
        digits = rng.choice([1, p // 2 or 1, p])
        u = rng.randint(-(10**digits - 1), 10**digits - 1)
        return format(Decimal(u).scaleb(-s), "f")

    return gen


def _ts(p: int, lo_year: Optional[int] = None, hi_year: int = 2200) -> Callable[[random.Random], int]:
    # Java's INT96 reader (TIMESTAMP(7..9)) fails on instants before 1970 with a sub-millisecond
    # part (JAVA_INT96_PRE_EPOCH), so those precisions start at the epoch unless asked otherwise
    lo_year = lo_year if lo_year is not None else (1970 if p > 6 else 1900)
    lo = (lo_year - 1970) * 365 * 86400
    hi = (hi_year - 1970) * 365 * 86400

    def gen(rng: random.Random) -> int:
        secs = rng.randint(lo, hi)
        frac = rng.randrange(10**9) // 10 ** (9 - p) * 10 ** (9 - p)
        return secs * 10**9 + frac

    return gen


def _str(maxlen: Optional[int] = None, exact: Optional[int] = None) -> Callable[[random.Random], str]:
    def gen(rng: random.Random) -> str:
        if exact:
            return "".join(rng.choice("abcdé中🙂") for _ in range(exact))
        s = rng.choice(STR_POOL) + str(rng.randint(0, 10**6))
        return s[:maxlen] if maxlen else s

    return gen


def _bytes(n: Optional[int] = None) -> Callable[[random.Random], str]:
    def gen(rng: random.Random) -> str:
        k = n if n is not None else rng.randint(0, 20)
        return base64.b64encode(bytes(rng.randrange(256) for _ in range(k))).decode()

    return gen


def _float(single: bool) -> Callable[[random.Random], str]:
    special = [0.0, -0.0, 1.5, float("inf"), float("-inf"), float("nan"), 1e-45 if single else 5e-324]

    def gen(rng: random.Random) -> str:
        x = rng.choice(special) if rng.random() < 0.3 else rng.uniform(-1e6, 1e6) * 10 ** rng.randint(-20, 20)
        if single:
            x = _f32(x) if abs(x) < 3e38 or math.isinf(x) or math.isnan(x) else _f32(1.0)
        return _float_str(x)

    return gen


def _list(gen: Callable, n: int = 4) -> Callable[[random.Random], list]:
    return lambda rng: [None if rng.random() < 0.15 else gen(rng) for _ in range(rng.randint(0, n))]


def _map(kgen: Callable, vgen: Callable) -> Callable[[random.Random], list]:
    def gen(rng: random.Random) -> list:
        out, seen = [], set()
        for _ in range(rng.randint(0, 4)):
            k = kgen(rng)
            if k not in seen:
                seen.add(k)
                out.append([k, None if rng.random() < 0.15 else vgen(rng)])
        return out

    return gen


def _row(*gens: Callable) -> Callable[[random.Random], list]:
    return lambda rng: [None if rng.random() < 0.15 else g(rng) for g in gens]


@dataclass(frozen=True)
class TypeCase:
    id: str
    ptype: Any                      # Paimon type (schema-file JSON)
    arrow: Optional[pa.DataType]    # Arrow type paimon_rs creates it from (None: not expressible)
    gen: Callable[[random.Random], Any]
    java_null: bool = True          # False: never null at the top (JAVA_NULL_ROW_OF_ROW)


def _int(bits: int) -> Callable[[random.Random], int]:
    lo, hi = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
    return lambda rng: rng.choice([lo, hi, 0, -1]) if rng.random() < 0.2 else rng.randint(lo, hi)


_INNER_ROW = row_of(("x", "TIMESTAMP(6)"), ("y", "DOUBLE"))
_INNER_ROW_ARROW = pa.struct([("x", pa.timestamp("us")), ("y", pa.float64())])

TYPES: list[TypeCase] = [
    TypeCase("boolean", "BOOLEAN", pa.bool_(), lambda rng: rng.random() < 0.5),
    TypeCase("tinyint", "TINYINT", pa.int8(), _int(8)),
    TypeCase("smallint", "SMALLINT", pa.int16(), _int(16)),
    TypeCase("int", "INT", pa.int32(), _int(32)),
    TypeCase("bigint", "BIGINT", pa.int64(), _int(64)),
    TypeCase("float", "FLOAT", pa.float32(), _float(True)),
    TypeCase("double", "DOUBLE", pa.float64(), _float(False)),
    TypeCase("decimal_9_2", "DECIMAL(9, 2)", pa.decimal128(9, 2), _dec(9, 2)),
    TypeCase("decimal_18_4", "DECIMAL(18, 4)", pa.decimal128(18, 4), _dec(18, 4)),
    TypeCase("decimal_38_10", "DECIMAL(38, 10)", pa.decimal128(38, 10), _dec(38, 10)),
    TypeCase("decimal_25_0", "DECIMAL(25, 0)", pa.decimal128(25, 0), _dec(25, 0)),
    TypeCase("char_5", "CHAR(5)", None, _str(exact=5)),
    TypeCase("varchar_20", "VARCHAR(20)", None, _str(maxlen=20)),
    TypeCase("string", "STRING", pa.string(), _str()),
    TypeCase("binary_4", "BINARY(4)", pa.binary(4), _bytes(4)),
    TypeCase("varbinary_30", "VARBINARY(30)", None, _bytes()),
    TypeCase("bytes", "BYTES", pa.binary(), _bytes()),
    TypeCase("date", "DATE", pa.date32(), lambda rng: rng.randint(-719162, 2932896)),
    TypeCase("time_0", "TIME(0)", pa.time32("ms"), lambda rng: rng.randrange(86400) * 1000),
    TypeCase("time_3", "TIME(3)", None, lambda rng: rng.randrange(86400 * 1000)),
    TypeCase("timestamp_0", "TIMESTAMP(0)", pa.timestamp("s"), _ts(0)),
    TypeCase("timestamp_3", "TIMESTAMP(3)", pa.timestamp("ms"), _ts(3)),
    TypeCase("timestamp_6", "TIMESTAMP(6)", pa.timestamp("us"), _ts(6)),
    TypeCase("timestamp_9", "TIMESTAMP(9)", pa.timestamp("ns"), _ts(9)),
    TypeCase("timestamp_ltz_3", "TIMESTAMP(3) WITH LOCAL TIME ZONE", pa.timestamp("ms", tz="UTC"), _ts(3)),
    TypeCase("timestamp_ltz_6", "TIMESTAMP(6) WITH LOCAL TIME ZONE", pa.timestamp("us", tz="UTC"), _ts(6)),
    TypeCase("timestamp_ltz_9", "TIMESTAMP(9) WITH LOCAL TIME ZONE", pa.timestamp("ns", tz="UTC"), _ts(9)),
    TypeCase("array_int", array_of("INT"), pa.list_(pa.int32()), _list(_int(32))),
    TypeCase("array_string", array_of("STRING"), pa.list_(pa.string()), _list(_str())),
    TypeCase("array_decimal_38", array_of("DECIMAL(38, 10)"), pa.list_(pa.decimal128(38, 10)), _list(_dec(38, 10))),
    TypeCase("array_timestamp_9", array_of("TIMESTAMP(9)"), pa.list_(pa.timestamp("ns")), _list(_ts(9))),
    TypeCase("map_string_bigint", map_of("STRING", "BIGINT"), pa.map_(pa.string(), pa.int64()),
             _map(_str(), _int(64))),
    TypeCase("map_int_array_date", map_of("INT", array_of("DATE")), pa.map_(pa.int32(), pa.list_(pa.date32())),
             _map(_int(32), _list(lambda rng: rng.randint(-719162, 2932896)))),
    TypeCase("row", row_of(("a", "INT"), ("b", "STRING"), ("c", "DECIMAL(38, 10)"), ("d", "TIMESTAMP(3)")),
             pa.struct([("a", pa.int32()), ("b", pa.string()), ("c", pa.decimal128(38, 10)),
                        ("d", pa.timestamp("ms"))]),
             _row(_int(32), _str(), _dec(38, 10), _ts(3))),
    TypeCase("array_row", array_of(_INNER_ROW), pa.list_(_INNER_ROW_ARROW),
             _list(_row(_ts(6), _float(False)))),
    TypeCase("row_nested", row_of(("m", map_of("STRING", "INT")), ("r", _INNER_ROW)),
             pa.struct([("m", pa.map_(pa.string(), pa.int32())), ("r", _INNER_ROW_ARROW)]),
             _row(_map(_str(), _int(32)), _row(_ts(6), _float(False))), java_null=False),
]
TYPE_BY_ID = {t.id: t for t in TYPES}
