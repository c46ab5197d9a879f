"""Fuzzed write inputs (run by rel_worker.py in a subprocess, so a crash is seen as an exit code).

Case ``i`` of seed ``s`` is fully determined by (s, i): a random table (primary-key or append,
1-4 value columns of assorted types) and a random batch, then one mutation from MUTATIONS. The
expected outcome of each mutation is "accept" (must be accepted and read back exactly), "refuse"
(must raise a PaimonRsError subclass) or "either" (one of the two, never wrong rows).
"""

from __future__ import annotations

import datetime
import decimal
import math
import random
import traceback
from typing import Any, Dict, List, Optional, Tuple

import pyarrow as pa

VALUE_TYPES: List[pa.DataType] = [pa.int16(), pa.int32(), pa.int64(), pa.float32(), pa.float64(), pa.string(),
                                  pa.bool_(), pa.binary(), pa.date32(), pa.timestamp("us"), pa.decimal128(10, 2)]

# mutation -> expected outcome
MUTATIONS: Dict[str, str] = {
    "none": "accept",
    "reordered_columns": "accept",
    "empty_batch": "accept",
    "null_in_key": "refuse",
    "wrong_type": "refuse",
    "unknown_column": "refuse",
    "missing_key_column": "refuse",
    "narrower_int": "either",  # int8 data for a wider column: lossless widening
    "wider_int": "either",  # int64 data for an INT column
    "missing_value_column": "either",
    "widening_int32": "accept",
    # issue #9 item 12 and item 7, fixed on branch `inputs`:
    "duplicate_column": "refuse",
    "empty_unknown_column": "refuse",
    "widening_uint8": "accept",
    "bad_utf8": "refuse",
    "bad_offsets": "refuse",
}
NEEDS_INPUTS = {"duplicate_column", "empty_unknown_column", "widening_uint8", "bad_utf8", "bad_offsets"}


def _value(t: pa.DataType, rng: random.Random) -> Any:
    if pa.types.is_integer(t):
        bits = t.bit_width - 1
        return rng.choice([0, 1, -1, 2**bits - 1, -(2**bits), rng.randint(-1000, 1000)])
    if pa.types.is_floating(t):
        v = rng.choice([0.0, -0.0, 1.5, -2.25, float("inf"), float("-inf"), float("nan"), rng.uniform(-1e6, 1e6)])
        return v if t == pa.float64() or not math.isfinite(v) else float(pa.scalar(v, pa.float32()).as_py())
    if pa.types.is_string(t):
        return rng.choice(["", "a", "ünïcödé", "日本", "x" * rng.randint(0, 300), "\x00nul", "🙂"])
    if pa.types.is_binary(t):
        return bytes(rng.randrange(256) for _ in range(rng.randint(0, 20)))
    if pa.types.is_boolean(t):
        return rng.random() < 0.5
    if pa.types.is_date(t):
        return datetime.date(1970, 1, 1) + datetime.timedelta(days=rng.randint(-30000, 30000))
    if pa.types.is_timestamp(t):
        return datetime.datetime(1970, 1, 1) + datetime.timedelta(microseconds=rng.randint(-2**50, 2**50))
    if pa.types.is_decimal(t):
        return decimal.Decimal(rng.randint(-10**9, 10**9)).scaleb(-2)
    raise AssertionError(t)


def make_case(seed: int, i: int) -> Dict[str, Any]:
    rng = random.Random(f"{seed}-{i}")
    mutation = list(MUTATIONS)[i % len(MUTATIONS)]
    pk = rng.random() < 0.7
    key_type = rng.choice([pa.int64(), pa.string()])
    cols = [(f"c{j}", rng.choice(VALUE_TYPES)) for j in range(rng.randint(1, 4))]
    if mutation.startswith("widening") or mutation in ("narrower_int", "wider_int"):
        cols[0] = ("c0", pa.int64() if mutation in ("widening_int32", "narrower_int") else pa.int32())
    if mutation in ("bad_utf8", "bad_offsets"):
        cols[0] = ("c0", pa.string())
    schema = pa.schema([pa.field("id", key_type, nullable=not pk)] + [pa.field(n, t) for n, t in cols])
    n = 0 if mutation in ("empty_batch", "empty_unknown_column") else rng.choice([1, 2, 5, 20, 200])
    if mutation == "bad_offsets":
        n = max(n, 3)  # offsets can only be non-monotonic inside an array of 3 values or more
    keys = [rng.randrange(max(1, n)) for _ in range(n)]  # duplicates on purpose
    rows: List[Dict[str, Any]] = []
    for k in keys:
        r: Dict[str, Any] = {"id": k if key_type == pa.int64() else f"k{k}"}
        for name, t in cols:
            r[name] = None if rng.random() < 0.2 else _value(t, rng)
        rows.append(r)
    return {"mutation": mutation, "expect": MUTATIONS[mutation], "pk": pk, "schema": schema, "rows": rows,
            "buckets": rng.randint(1, 3), "entry": rng.choice(["table", "batch", "reader"]), "rng": rng}


def _bad_string_array(n: int, bad_offsets: bool) -> pa.Array:
    data = b"ok" + b"\xff\xfe\xc3" + b"tail"
    offsets = [min(i, len(data)) for i in range(n)] + [len(data)]
    if bad_offsets:
        # decreasing offsets inside the array: pyarrow's cheap validation (first and last offset)
        # passes them, a reader trusting them would slice backwards
        data = b"plain ascii text"
        offsets = [0] + [len(data) - (i % 5) * 3 for i in range(1, n)] + [len(data)]
    return pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(pa.array(offsets, pa.int32()).buffers()[1]),
                                                  pa.py_buffer(data)])


def build_input(case: Dict[str, Any]) -> Tuple[pa.Table, Optional[List[Dict[str, Any]]]]:
    """The input table and the rows it should read back as, in table column order (None: no
    defined read-back, the batch must be refused)."""
    schema, rows, m, rng = case["schema"], case["rows"], case["mutation"], case["rng"]
    arrays = {f.name: pa.array([r[f.name] for r in rows], type=f.type) for f in schema}
    fields = list(schema)
    names = [f.name for f in fields]
    expected: Optional[List[Dict[str, Any]]] = [dict(r) for r in rows]
    if m == "null_in_key" and rows:
        if case["pk"]:
            arrays["id"] = pa.array([None] + [r["id"] for r in rows[1:]], type=fields[0].type)
            expected = None
        else:
            case["expect"] = "either"  # an append table's key column is nullable
            arrays["id"] = pa.array([None] + [r["id"] for r in rows[1:]], type=fields[0].type)
            expected[0]["id"] = None  # type: ignore[index]
    elif m == "wrong_type":
        t = fields[0].type
        arrays["id"] = pa.array([f"s{j}" for j in range(len(rows))]) if t == pa.int64() else \
            pa.array([1.5] * len(rows))
        expected = None
    elif m in ("unknown_column", "empty_unknown_column"):
        names.append("zz_unknown")
        arrays["zz_unknown"] = pa.array([1] * len(rows), pa.int64())
        expected = None
    elif m == "missing_key_column":
        names.remove("id")
        expected = None
    elif m == "duplicate_column":
        names.append("c0")
        expected = None
    elif m == "missing_value_column":
        names.remove("c0")
        for r in expected:
            r["c0"] = None
    elif m == "reordered_columns":
        rng.shuffle(names)
    elif m in ("widening_uint8", "narrower_int"):
        vals = [None if r["c0"] is None else abs(r["c0"]) % 100 for r in rows]
        arrays["c0"] = pa.array(vals, pa.uint8() if m == "widening_uint8" else pa.int8())
        for r, v in zip(expected, vals):
            r["c0"] = v
    elif m in ("widening_int32", "wider_int"):
        vals = [None if r["c0"] is None else int(r["c0"]) % 30000 for r in rows]
        arrays["c0"] = pa.array(vals, pa.int32() if m == "widening_int32" else pa.int64())
        for r, v in zip(expected, vals):
            r["c0"] = v
    elif m in ("bad_utf8", "bad_offsets"):
        if rows:
            arrays["c0"] = _bad_string_array(len(rows), m == "bad_offsets")
            expected = None
        else:
            case["expect"] = "either"
    cols = [arrays[nm] if nm in arrays else pa.array([None] * len(rows)) for nm in names]
    data = pa.Table.from_arrays(cols, names=names)
    return data, expected


def _canon(v: Any) -> Any:
    if isinstance(v, float):
        return "nan" if math.isnan(v) else (repr(v) if v == 0 else v)
    return v


def _canon_rows(rows: List[Dict[str, Any]], names: List[str]) -> List[Tuple[Any, ...]]:
    return sorted((tuple(_canon(r.get(n)) for n in names) for r in rows), key=repr)


def run_case(warehouse: str, seed: int, i: int) -> Dict[str, Any]:
    from paimon_rs import CatalogFactory, PaimonRsError, Schema

    case = make_case(seed, i)
    out: Dict[str, Any] = {"i": i, "mutation": case["mutation"]}
    catalog = CatalogFactory.create({"warehouse": warehouse})
    catalog.create_database("db", True)
    name = f"db.f{i}"
    opts = {"bucket": str(case["buckets"])} if case["pk"] else {}
    catalog.create_table(name, Schema.from_pyarrow_schema(case["schema"], primary_keys=["id"] if case["pk"] else None,
                                                          options=opts), False)
    table = catalog.get_table(name)
    try:
        data, expected = build_input(case)
    except (pa.ArrowInvalid, pa.ArrowTypeError) as e:  # pyarrow itself refused to build it
        return {**out, "outcome": "unbuildable", "msg": str(e)}
    out["expect"] = case["expect"]
    wb = table.new_batch_write_builder()
    w, c = wb.new_write(), wb.new_commit()
    try:
        if case["entry"] == "table":
            w.write_arrow(data)
        elif case["entry"] == "batch":
            for b in data.to_batches() or [pa.RecordBatch.from_pylist([], schema=data.schema)]:
                w.write_arrow_batch(b)
        else:
            w.write_arrow(pa.RecordBatchReader.from_batches(data.schema, data.to_batches()))
        c.commit(w.prepare_commit())
    except PaimonRsError as e:
        w.close()
        return {**out, "outcome": "refused", "cls": type(e).__name__, "msg": str(e)[:300]}
    except Exception as e:  # noqa: BLE001 - anything but a PaimonRsError is a failure the parent reports
        return {**out, "outcome": "foreign error", "cls": type(e).__name__, "msg": str(e)[:300],
                "tb": traceback.format_exc()[-1500:]}
    w.close()
    out["outcome"] = "accepted"
    if expected is None:
        out["exact"] = False
        out["detail"] = "accepted a batch that must be refused"
        return out
    rb = table.new_read_builder()
    got = rb.new_read().to_arrow(rb.new_scan().plan().splits()).to_pylist()
    if case["pk"]:  # deduplicate: the last row of a key wins
        last: Dict[Any, Dict[str, Any]] = {}
        for r in expected:
            last[r["id"]] = r
        expected = list(last.values())
    names = case["schema"].names
    out["exact"] = _canon_rows(got, names) == _canon_rows(expected, names)
    if not out["exact"]:
        out["detail"] = f"read {_canon_rows(got, names)[:3]} wanted {_canon_rows(expected, names)[:3]}"[:600]
    return out
