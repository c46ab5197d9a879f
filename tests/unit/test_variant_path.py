"""VARIANT path functions (``paimon_rs.variant_get`` / ``variant_replace`` / ``variant_set`` /
``variant_to_pylist``, pypaimon's ``pypaimon.data`` names) over Arrow VARIANT columns: every path
form, missing paths, arrays, nested objects, replace / set round trips, refusals."""

from __future__ import annotations

import datetime
import decimal
import re

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import paimon_rs
from paimon_rs import GenericVariant, variant_get, variant_replace, variant_set, variant_to_pylist
from paimon_rs.variant_path import _build_array, _build_object, _metadata_keys


def col(values):
    return GenericVariant.to_arrow_array(
        [None if v is None else GenericVariant.from_python(v) for v in values])


def dec(column):
    return [None if r is None else GenericVariant.from_arrow_struct(r).to_python()
            for r in column.to_pylist()]


def test_names_mirror_pypaimon_data():
    from paimon_rs import variant_path

    for name in ("variant_get", "variant_replace", "variant_set", "variant_to_pylist"):
        assert getattr(paimon_rs, name) is getattr(variant_path, name)
        assert name in paimon_rs.__all__


@pytest.mark.parametrize("path,expected", [
    ("$", [{"a": {"b": [10, {"c": 5}]}, "x.y": 7, "q'": 1}]),
    ("$.a.b[0]", [10]),
    ("$.a.b[1].c", [5]),
    ("$['a']['b'][1]['c']", [5]),
    ('$["x.y"]', [7]),
    ('$["q\'"]', [1]),
    ("$.a.b[2]", [None]),      # index past the end
    ("$.a.nope", [None]),      # missing key
    ("$.a.b.c", [None]),       # key into an array
    ("$.a[0]", [None]),        # index into an object
    ("$.x.y", [None]),         # '.x.y' is two keys, not the key 'x.y'
])
def test_every_path_form(path, expected):
    column = col([{"a": {"b": [10, {"c": 5}]}, "x.y": 7, "q'": 1}])
    if path == "$":
        t = pa.struct([("a", pa.struct([("b", pa.list_(pa.int64()))]))])
        with pytest.raises(TypeError, match="does not match"):  # b[1] is an object
            variant_get(column, path, t)
        assert variant_to_pylist(column, ["a", "x.y", "q'"]) == expected
        return
    assert variant_get(column, path, pa.int64()).to_pylist() == expected


@pytest.mark.parametrize("bad", ["a", "", "$a", "$.", "$[", "$[x]", "$['a", "$.a[-1]", 3, None])
def test_invalid_paths(bad):
    with pytest.raises(ValueError, match="Invalid VARIANT path"):
        variant_get(col([1]), bad, pa.int64())


def test_get_types_nulls_and_chunks():
    ts = datetime.datetime(2026, 1, 2, 3, 4, 5, 6)
    rows = [{"i": 7, "f": 1.5, "s": "x" * 70, "b": b"\x00", "d": decimal.Decimal("1.25"),
             "dt": datetime.date(2020, 2, 2), "ts": ts, "t": True, "n": None,
             "o": {"k": 1, "z": [1, 2]}, "l": [1, None, 3]}, None]
    column = pa.chunked_array([col(rows), col([{"i": 8}])])
    got = variant_get(column, {
        "$.i": pa.int8(), "$.f": pa.float64(), "$.s": pa.string(), "$.b": pa.binary(),
        "$.d": pa.decimal128(5, 2), "$.dt": pa.date32(), "$.ts": pa.timestamp("us"),
        "$.t": pa.bool_(), "$.n": pa.float64(), "$.l": pa.list_(pa.int64()),
        "$.o": pa.struct([("k", pa.int64()), ("missing", pa.string())]),
        "$.o.z": pa.list_(pa.int16(), 2), "$.m": pa.map_(pa.string(), pa.int64()),
    })
    assert isinstance(got["$.i"], pa.ChunkedArray) and got["$.i"].num_chunks == 2
    assert {p: a.to_pylist()[0] for p, a in got.items()} == {
        "$.i": 7, "$.f": 1.5, "$.s": "x" * 70, "$.b": b"\x00", "$.d": decimal.Decimal("1.25"),
        "$.dt": datetime.date(2020, 2, 2), "$.ts": ts, "$.t": True, "$.n": None,
        "$.l": [1, None, 3], "$.o": {"k": 1, "missing": None}, "$.o.z": [1, 2], "$.m": None}
    assert got["$.i"].to_pylist() == [7, None, 8]  # SQL null row, then the second chunk
    assert variant_get(col([{"k": 1, "j": 2}]), "$", pa.map_(pa.string(), pa.int64())).to_pylist() \
        == [[("j", 2), ("k", 1)]]


@pytest.mark.parametrize("value,t", [
    (1, pa.float64()), (1.5, pa.float32()), (1.5, pa.int64()), ("1", pa.int64()),
    ({"a": 1}, pa.string()), ([1], pa.string()), ([1], pa.list_(pa.string())),
    (decimal.Decimal("1.5"), pa.decimal128(5, 2)), (datetime.datetime(2020, 1, 1), pa.date32()),
    (datetime.datetime(2020, 1, 1), pa.timestamp("us", tz="UTC")), ([1, 2], pa.list_(pa.int64(), 3)),
])
def test_get_never_casts(value, t):
    with pytest.raises(TypeError, match="does not match"):
        variant_get(col([value]), "$", t)


def test_get_argument_errors():
    column = col([{"a": 1}])
    with pytest.raises(TypeError, match="Unsupported exact"):
        variant_get(column, "$.a", pa.uint32())
    with pytest.raises(TypeError, match="Unsupported exact"):
        variant_get(column, "$.a", pa.timestamp("ms"))
    with pytest.raises(TypeError, match="PyArrow data type"):
        variant_get(column, "$.a", "BIGINT")
    with pytest.raises(TypeError, match="PyArrow data type"):
        variant_get(column, "$.a")
    with pytest.raises(TypeError, match="must be omitted"):
        variant_get(column, {"$.a": pa.int64()}, pa.int64())
    with pytest.raises(ValueError, match="non-negative"):
        variant_get(column, "$.a", pa.decimal128(5, -1))
    with pytest.raises(TypeError, match="PyArrow Array or ChunkedArray"):
        variant_get([1], "$.a", pa.int64())
    with pytest.raises(TypeError, match="value and metadata"):
        variant_get(pa.array([1]), "$.a", pa.int64())


def test_replace_round_trip_keeps_everything_else():
    rows = [{"v": {"x": float(i), "y": -float(i)}, "pad": "p" * i, "tag": "t"} for i in range(5)]
    column = pa.chunked_array([col(rows[:2]), col([None]), col(rows[2:])])
    cur = variant_get(column, {"$.v.x": pa.float64(), "$.v.y": pa.float64()})
    out = variant_replace(column, {p: pc.negate(a) for p, a in cur.items()})
    assert [len(c) for c in out.chunks] == [2, 1, 3]
    want = [{"v": {"x": -r["v"]["x"], "y": -r["v"]["y"]}, "pad": r["pad"], "tag": "t"} for r in rows]
    assert dec(out) == want[:2] + [None] + want[2:]
    assert out.chunk(1).equals(column.chunk(1))  # an unchanged chunk is returned as it is
    # back again (the object is re-laid out, its fields' data in field order: same values)
    back = variant_replace(out, {p: a for p, a in cur.items()})
    assert dec(back) == dec(column)
    assert [r and r["metadata"] for r in back.to_pylist()] == [r and r["metadata"] for r in column.to_pylist()]


def test_replace_scalar_types_and_nulls():
    column = col([{"i": 1, "s": "a", "b": True, "n": None, "arr": [1, "x"]}] * 2)
    out = variant_replace(column, {
        "$.i": pa.array([2**40, None], pa.int64()),   # any int width; Arrow null -> VARIANT null
        "$.s": pa.scalar("long " * 30),
        "$.b": pa.scalar(None, pa.bool_()),
        "$.n": pa.scalar(1.5),                        # a VARIANT null takes any type
        "$.arr[1]": pa.scalar("yy"),
    })
    assert dec(out) == [
        {"i": 2**40, "s": "long " * 30, "b": None, "n": 1.5, "arr": [1, "yy"]},
        {"i": None, "s": "long " * 30, "b": None, "n": 1.5, "arr": [1, "yy"]}]
    assert out.null_count == 0
    root = variant_replace(col([1, 2]), "$", pa.scalar(-3, pa.int8()))
    assert variant_get(root, "$", pa.int32()).to_pylist() == [-3, -3]


def test_replace_missing_paths():
    column = col([{"a": 1}, {"b": 1}])
    assert variant_replace(column, "$.zz", pa.scalar(1)) is column
    out = variant_replace(column, "$.a", pa.scalar(5))
    assert dec(out) == [{"a": 5}, {"b": 1}]
    with pytest.raises(ValueError, match=r"path does not exist: \$\.a"):
        variant_replace(column, "$.a", pa.scalar(5), strict=True)


def test_replace_errors():
    column = col([{"a": 1.0, "o": {"k": 1}}, {"a": 2.0, "o": {"k": 2}}])
    cases = [
        ("$.a", pa.scalar("x"), TypeError, "does not match string"),
        ("$.a", pa.scalar(1.0, pa.float32()), TypeError, "does not match float"),
        ("$.a", pa.array([1, 2]), TypeError, "does not match int64"),
        ("$.o", pa.scalar(1), TypeError, "does not match"),
        ("$.a", pa.array([1.0]), ValueError, "length must match"),
        ("$.a", 1.0, TypeError, "Arrow Scalar or Array"),
        ("$.a", pa.scalar(1, pa.uint8()), TypeError, "Unsupported exact"),
        ("$.a", pa.scalar([1]), TypeError, "Unsupported exact"),
        ("a", pa.scalar(1.0), ValueError, "Invalid VARIANT path"),
    ]
    for path, repl, err, msg in cases:
        with pytest.raises(err, match=msg):
            variant_replace(column, path, repl)
    with pytest.raises(TypeError, match="strict must be a boolean"):
        variant_replace(column, "$.a", pa.scalar(1.0), strict=1)
    with pytest.raises(TypeError, match="must be omitted"):
        variant_replace(column, {"$.a": pa.scalar(1.0)}, pa.scalar(1.0))
    for paths in (["$.o", "$.o.k"], ["$.a", "$['a']"], ["$", "$.a"]):
        with pytest.raises(ValueError, match="must not overlap"):
            variant_replace(column, {p: pa.scalar(1.0) for p in paths})
    assert variant_replace(column, {}) is column


def test_set_inserts_sorted_and_extends_metadata():
    column = col([{"m": 1, "z": 2}, {"m": 3, "flag": False}, None])
    out = variant_set(column, {"$.flag": pa.scalar(True), "$.a": pa.array([1, 2, 3], pa.int64())})
    assert dec(out) == [{"a": 1, "flag": True, "m": 1, "z": 2}, {"a": 2, "flag": True, "m": 3}, None]
    assert all(list(r) == sorted(r) for r in dec(out)[:2])  # Java's binary search needs it
    meta = [r["metadata"] for r in out.to_pylist()[:2]]
    assert _metadata_keys(meta[0]) == ["m", "z", "flag", "a"]  # appended, ids kept
    assert _metadata_keys(meta[1]) == ["m", "flag", "a"]
    assert out.is_null().to_pylist() == [False, False, True]
    # a key the dictionary already holds: the metadata child is reused as it is
    again = variant_set(out, "$.m", pa.scalar(9))
    assert again.field("metadata").buffers()[2].address == out.field("metadata").buffers()[2].address
    assert dec(again)[1] == {"a": 2, "flag": True, "m": 9}


def test_set_nested_deep_and_utf8_order():
    column = col([{"l": {}, "r": {"x": [{"y": 1}]}}])
    out = variant_set(column, {"$.l.k": pa.scalar("v"), "$.r.x[0].w": pa.scalar(2),
                               "$.r.x[0].y": pa.scalar(3)})
    assert dec(out) == [{"l": {"k": "v"}, "r": {"x": [{"w": 2, "y": 3}]}}]
    keys = {chr(0xE000): 1, chr(0x10000): 2}
    got = dec(variant_set(col([keys]), "$.a", pa.scalar(0)))[0]
    assert list(got) == sorted(got, key=lambda k: k.encode("utf-8"))
    meta = GenericVariant.from_python({"t": 0, "d": 0}).metadata()
    deep = _build_object([(1, b"\x0c\x00")])  # {"d": 0}
    for _ in range(1100):  # deeper than Python's recursion limit: walked and rebuilt iteratively
        deep = _build_array([deep])
    column = GenericVariant.to_arrow_array([GenericVariant(_build_object([(0, deep)]), meta)])
    path = "$.t" + "[0]" * 1100
    out = variant_set(column, {path + ".new": pa.scalar(True), path + ".d": pa.scalar(4)})
    assert variant_get(out, path + ".new", pa.bool_()).to_pylist() == [True]
    assert variant_get(out, path, pa.struct([("d", pa.int64())])).to_pylist() == [{"d": 4}]


def test_set_refusals():
    column = col([{"v": 1.0, "n": None, "a": [1]}])
    for path, msg in [("$.missing.child", "parent path does not exist"),
                      ("$.v.child", "parent path is not an object"),
                      ("$.n.child", "parent path is not an object"),
                      ("$.a[3]", "array index insertion is not supported"),
                      ("$.a[0].x.y", "parent path does not exist")]:
        with pytest.raises(ValueError, match=msg):
            variant_set(column, path, pa.scalar(1.0))
    with pytest.raises(TypeError, match="must be omitted"):
        variant_set(column, {"$.v": pa.scalar(1.0)}, pa.scalar(1.0))
    assert dec(variant_set(column, "$.a[0]", pa.scalar(5)))[0]["a"] == [5]


def test_large_binary_and_sliced_input_are_kept_and_untouched():
    base = col([{"v": float(i), "pad": "x" * 50} for i in range(10)])
    sliced = base.slice(4, 3)
    before = sliced.to_pylist()
    out = variant_set(sliced, {"$.v": pa.scalar(-1.0), "$.new": pa.scalar(1)})
    assert [(r["v"], r["new"]) for r in dec(out)] == [(-1.0, 1)] * 3
    assert sliced.to_pylist() == before
    large = pa.StructArray.from_arrays(
        [base.field("value").cast(pa.large_binary()), base.field("metadata").cast(pa.large_binary())],
        names=["value", "metadata"])
    out = variant_set(large, "$.p", pa.scalar(True))
    assert pa.types.is_large_binary(out.type[0].type) and pa.types.is_large_binary(out.type[1].type)
    assert dec(out)[0] == {"v": 0.0, "pad": "x" * 50, "p": True}


def test_malformed_rows_are_refused():
    good = GenericVariant.from_python({"a": 1.0, "b": 2.0})

    def one(value, metadata=None):
        return pa.StructArray.from_arrays(
            [pa.array([value]), pa.array([good.metadata() if metadata is None else metadata])],
            names=["value", "metadata"])

    v = good.value()
    for value, metadata in [(v[:-1], None), (v + b"\x00", None), (v, good.metadata()[:-1]),
                            (v, b"\x02\x00\x00"), (v, b"")]:
        with pytest.raises(ValueError, match="MALFORMED_VARIANT"):
            variant_get(one(value, metadata), "$.a", pa.float64())
        with pytest.raises(ValueError, match="MALFORMED_VARIANT"):
            variant_set(one(value, metadata), "$.c", pa.scalar(True))
    dup = bytearray(v)
    dup[3] = dup[2]  # two fields with the same id
    with pytest.raises(ValueError, match="MALFORMED_VARIANT"):
        variant_replace(one(bytes(dup)), "$.a", pa.scalar(3.0))


def test_variant_to_pylist():
    column = col([{"a": 1, "b": {"c": [1]}, "n": None}, None, {"b": "x"}])
    assert variant_to_pylist(column, ["b", "a", "n", "zz", "a"]) == [
        {"b": {"c": [1]}, "a": 1, "n": None}, None, {"b": "x"}]
    with pytest.raises(TypeError, match="root must be an object"):
        variant_to_pylist(col([[1]]), ["a"])
    with pytest.raises(TypeError, match="sequence of field names"):
        variant_to_pylist(column, "a")
    with pytest.raises(TypeError, match="must be strings"):
        variant_to_pylist(column, [1])


def test_large_objects_and_arrays():
    big = {f"k{i:03d}": i for i in range(300)}  # 4-byte size, a header past the 1 KiB cache limit
    column = col([big, {"arr": list(range(300))}])
    assert variant_get(column, "$.k299", pa.int64()).to_pylist() == [299, None]
    assert variant_get(column, "$.arr[299]", pa.int64()).to_pylist() == [None, 299]
    out = variant_set(column, {"$.k150": pa.scalar(-1), "$.a": pa.scalar(True)})
    first = dec(out)[0]
    assert first["k150"] == -1 and first["a"] is True and len(first) == 301
    assert list(first) == sorted(first)
    assert dec(variant_replace(out, "$.arr[299]", pa.scalar(7)))[1]["arr"][299] == 7


def test_scalar_reads_go_through_the_rust_kernel_and_agree_with_the_python_path():
    from paimon_rs import _core
    from paimon_rs.variant_path import _kernel_paths, _parse_path

    c = col([{"a": 1.5, "s": "x" * 70, "i": 300, "b": True}, None, {"a": None}, {"s": "é"}])
    for path, t in [("$.a", pa.float64()), ("$.s", pa.string()), ("$.s", pa.large_string()),
                    ("$.i", pa.int64()), ("$.i", pa.int16()), ("$.b", pa.bool_()), ("$.z", pa.int32())]:
        got = _core.variant_get_scalars(c, _kernel_paths([(path, _parse_path(path), t)]))
        assert got is not None and got[0].type == t
        assert got[0].to_pylist() == variant_get(c, path, t).to_pylist()
    # an integer out of the Arrow type's range is left to the Python path (pyarrow's overflow)
    assert _core.variant_get_scalars(c, _kernel_paths([("$.i", _parse_path("$.i"), pa.int8())])) is None
    with pytest.raises(pa.ArrowInvalid):
        variant_get(c, "$.i", pa.int8())
    with pytest.raises(TypeError, match="VARIANT path type does not match float"):
        variant_get(c, "$.a", pa.float32())


# ---------------------------------------------------------------------------------------------
# the Rust kernel of variant_replace / variant_set against the Python reference, on random
# variants, paths and replacements

from unittest import mock  # noqa: E402

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_KEYS = ["a", "b", "c", "x.y", "é"]
_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-2**63, 2**63 - 1), st.integers(-300, 300),
    st.floats(allow_nan=False), st.text(max_size=3), st.text(min_size=64, max_size=70),
    st.binary(max_size=4), st.dates(), st.datetimes(),
    st.decimals(min_value=-10**6, max_value=10**6, places=2, allow_nan=False))
_values = st.recursive(_scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(_KEYS), inner, max_size=4)),
    max_leaves=12)
_segment = st.one_of(st.integers(0, 3).map(lambda i: ("index", i)),
                     st.sampled_from(_KEYS).map(lambda k: ("key", k)))


def _spell(path):
    out = "$"
    for kind, seg in path:
        out += f"[{seg}]" if kind == "index" else (f".{seg}" if seg.isalpha() else f'["{seg}"]')
    return out


_TYPES = [pa.null(), pa.bool_(), pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.float32(),
          pa.float64(), pa.string(), pa.large_string(), pa.binary(), pa.large_binary(),
          pa.date32(), pa.timestamp("us"), pa.timestamp("us", tz="UTC"), pa.decimal128(8, 2),
          pa.decimal128(20, 2), pa.decimal128(38, 10)]


@st.composite
def _replacement(draw, n):
    t = draw(st.sampled_from(_TYPES))
    one = {
        "null": st.none(), "bool": st.booleans(), "int8": st.integers(-128, 127),
        "int16": st.integers(-2**15, 2**15 - 1), "int32": st.integers(-2**31, 2**31 - 1),
        "int64": st.integers(-2**63, 2**63 - 1), "float": st.floats(width=32, allow_nan=False),
        "double": st.floats(allow_nan=False), "string": st.text(max_size=70),
        "large_string": st.text(max_size=70), "binary": st.binary(max_size=70),
        "large_binary": st.binary(max_size=70), "date32[day]": st.dates(),
        "timestamp[us]": st.datetimes(),
        "timestamp[us, tz=UTC]": st.datetimes(timezones=st.just(datetime.timezone.utc)),
    }.get(str(t))
    if one is None:  # decimals within the type's precision
        digits = t.precision - t.scale
        one = st.decimals(min_value=-(10**digits) + 1, max_value=10**digits - 1, places=t.scale,
                          allow_nan=False)
    values = draw(st.lists(st.one_of(st.none(), one), min_size=n, max_size=n))
    if draw(st.booleans()) or not n:
        return pa.scalar(values[0] if values else None, type=t)
    arr = pa.array(values, type=t)
    return pa.chunked_array([arr[:n // 2], arr[n // 2:]], type=t) if n > 1 else arr


def _canon(x):
    """A decoded value with its types and object field order (``==`` on dicts ignores the
    order, on numbers the type)."""
    if isinstance(x, dict):
        return ["object", [[k, _canon(v)] for k, v in x.items()]]
    if isinstance(x, list):
        return ["array", [_canon(v) for v in x]]
    return [type(x).__name__, repr(x)]


def _outcome(f):
    try:
        out = f()
    except (TypeError, ValueError) as e:
        return ["error", type(e).__name__, str(e)]
    rows = [None if r is None else [_canon(GenericVariant.from_arrow_struct(r).to_python()),
                                    _metadata_keys(r["metadata"])] for r in out.to_pylist()]
    return ["ok", str(out.type), rows]


@st.composite
def random_columns(draw, values):
    """Rows (objects or any ``values``, some SQL null) and their VARIANT column: one array, or
    two chunks, maybe with large_binary children."""
    objects = st.dictionaries(st.sampled_from(_KEYS), values, max_size=4)
    rows = draw(st.lists(st.one_of(st.none(), objects, values), min_size=1, max_size=6))
    column = col(rows)
    if draw(st.booleans()):
        if draw(st.booleans()):
            column = pa.StructArray.from_arrays(
                [column.field(0).cast(pa.large_binary()), column.field(1).cast(pa.large_binary())],
                names=["value", "metadata"], mask=column.is_null())
        k = draw(st.integers(0, len(rows)))
        column = pa.chunked_array([column.slice(0, k), column.slice(k)], type=column.type)
    return rows, column


@st.composite
def path_into(draw, rows):
    """A path into one row's shape (a list of segments) and the value it reaches."""
    here, path = draw(st.sampled_from(rows)), []
    while draw(st.booleans()) and isinstance(here, (dict, list)) and here:
        seg = draw(st.sampled_from(sorted(here) if isinstance(here, dict) else range(len(here))))
        path.append(("key" if isinstance(here, dict) else "index", seg))
        here = here[seg]
    return path, here


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_edit_kernel_matches_the_python_reference(data):
    from paimon_rs import variant_path as vp

    rows, column = data.draw(random_columns(_values))
    # random paths (mostly missing or of the wrong kind) and paths into a row's shape (found,
    # or a new last key for variant_set)
    paths = data.draw(st.lists(st.lists(_segment, max_size=3).map(tuple), max_size=1))
    for _ in range(data.draw(st.integers(0 if paths else 1, 3))):
        path, here = data.draw(path_into(rows))
        if isinstance(here, dict) and data.draw(st.booleans()):
            path.append(("key", data.draw(st.sampled_from(_KEYS))))  # often a new one
        if tuple(path) not in paths:
            paths.append(tuple(path))
    edits = {_spell(p): data.draw(_replacement(len(column))) for p in paths}
    upsert, strict = data.draw(st.booleans()), data.draw(st.booleans())
    try:
        parsed = vp._parsed_replacements(edits, None, len(column), "value")
    except (TypeError, ValueError):
        return  # overlapping paths: refused before any row is read
    fallback = []
    with mock.patch.object(vp, "_edit_chunk", side_effect=lambda *a: fallback.append(a)):
        kernel = _outcome(lambda: vp._edit(column, parsed, strict, upsert))
    assert not fallback  # every chunk went through the kernel
    reference = _outcome(lambda: vp._edit(column, parsed, strict, upsert, kernel=False))
    assert kernel == reference
    if _EDIT_STATS is not None:
        _EDIT_STATS.append(kernel[0] == "ok" and kernel[2] != _outcome(lambda: column)[2])


_EDIT_STATS = None  # a list: whether each example changed a row (to judge the generator)


_GET_TYPES = [pa.bool_(), pa.int8(), pa.int64(), pa.float32(), pa.float64(), pa.string(),
              pa.binary(), pa.date32(), pa.timestamp("us"), pa.timestamp("us", tz="UTC"),
              pa.timestamp("us", tz="Asia/Tokyo"), pa.decimal128(8, 2), pa.decimal128(4, 2),
              pa.decimal128(38, 2), pa.decimal128(10, 0)]
_when = st.one_of(st.dates(), st.datetimes(),
                  st.datetimes(timezones=st.just(datetime.timezone.utc)),
                  st.decimals(min_value=-10**6, max_value=10**6, places=0, allow_nan=False))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_get_kernel_matches_the_python_reference(data):
    """variant_get through the Rust kernel (dates, timestamps with and without a zone, decimals
    among the scalars) equals the Python path, values, nulls, chunks and refusals alike."""
    from paimon_rs import variant_path as vp

    values = st.recursive(st.one_of(_scalars, _when), lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(_KEYS), inner, max_size=4)),
        max_leaves=8)
    objects = st.dictionaries(st.sampled_from(_KEYS), values, max_size=4)
    rows = data.draw(st.lists(st.one_of(st.none(), objects, values), min_size=1, max_size=6))
    column = col(rows)
    if data.draw(st.booleans()):
        k = data.draw(st.integers(0, len(rows)))
        column = pa.chunked_array([column.slice(0, k), column.slice(k)], type=column.type)
    paths = {_spell(p): data.draw(st.sampled_from(_GET_TYPES))
             for p in data.draw(st.lists(st.lists(_segment, max_size=2).map(tuple), min_size=1,
                                         max_size=3))}

    def outcome(f):
        try:
            out = f()
        except (TypeError, ValueError, OverflowError) as e:  # pa.ArrowInvalid is a ValueError
            return ["error", type(e).__name__, str(e)]
        return ["ok", {k: [str(v.type), v.to_pylist()] for k, v in out.items()}]

    calls = []
    real = vp._core.variant_get_scalars

    def spy(*a):
        calls.append(a)
        return real(*a)

    with mock.patch.object(vp._core, "variant_get_scalars", side_effect=spy):
        kernel = outcome(lambda: variant_get(column, paths))
    assert calls  # every type here goes to the kernel
    with mock.patch.object(vp, "_kernel_paths", return_value=None):
        reference = outcome(lambda: variant_get(column, paths))
    assert kernel == reference


def test_get_kernel_reads_dates_timestamps_and_decimals():
    from paimon_rs import _core
    from paimon_rs.variant_path import _kernel_paths, _parse_path

    utc = datetime.timezone.utc
    c = col([{"d": datetime.date(2024, 2, 29), "t": datetime.datetime(2024, 1, 2, 3, 4, 5, 6),
              "z": datetime.datetime(2024, 1, 2, 3, 4, 5, 6, tzinfo=utc),
              "m": decimal.Decimal("-12.34"), "big": decimal.Decimal("1234567.89")}, None,
             {"d": None}])
    for path, t in [("$.d", pa.date32()), ("$.t", pa.timestamp("us")),
                    ("$.z", pa.timestamp("us", tz="UTC")), ("$.z", pa.timestamp("us", tz="+05:30")),
                    ("$.m", pa.decimal128(4, 2)), ("$.big", pa.decimal128(38, 2))]:
        got = _core.variant_get_scalars(c, _kernel_paths([(path, _parse_path(path), t)]))
        assert got is not None and got[0].type == t, (path, t)
        with mock.patch("paimon_rs.variant_path._kernel_paths", return_value=None):
            assert got[0].to_pylist() == variant_get(c, path, t).to_pylist()
    assert variant_get(c, "$.z", pa.timestamp("us", tz="UTC"))[0].as_py() == datetime.datetime(
        2024, 1, 2, 3, 4, 5, 6, tzinfo=utc)
    # past the precision: left to the Python path (pyarrow's own error)
    assert _core.variant_get_scalars(c, _kernel_paths([("$.big", _parse_path("$.big"),
                                                         pa.decimal128(8, 2))])) is None
    with pytest.raises(pa.ArrowInvalid):
        variant_get(c, "$.big", pa.decimal128(8, 2))
    for path, t, name in [("$.m", pa.decimal128(8, 3), "decimal128(8, 3)"),
                          ("$.t", pa.timestamp("us", tz="UTC"), "timestamp[us, tz=UTC]"),
                          ("$.z", pa.timestamp("us"), "timestamp[us]"), ("$.t", pa.date32(), "date32")]:
        with pytest.raises(TypeError, match=rf"does not match {re.escape(name)}"):
            variant_get(c, path, t)


def test_same_size_replace_patches_the_value_bytes_and_keeps_the_offsets():
    """A replacement as long as the value it replaces is patched into one copy of the value
    bytes (pypaimon's way): the offsets and the metadata child are the input's buffers."""
    column = col([{"v": {"x": 1.0, "y": -1.0}, "s": "ab"}, None, {"v": {"y": 2.0}}])
    out = variant_replace(column, "$.v.y", pa.scalar(7.0))
    assert out.field(0).buffers()[1].address == column.field(0).buffers()[1].address
    assert out.field(1) is not None and out.field(1).buffers()[2].address == \
        column.field(1).buffers()[2].address
    assert dec(out) == [{"v": {"x": 1.0, "y": 7.0}, "s": "ab"}, None, {"v": {"y": 7.0}}]
    assert dec(column)[0]["v"]["y"] == -1.0  # the input is untouched
    # a longer string: the rebuilding path (new offsets), same results as the reference
    grown = variant_replace(column, "$.s", pa.scalar("abc"))
    assert dec(grown)[0]["s"] == "abc"
    assert grown.field(0).buffers()[1].address != column.field(0).buffers()[1].address


def test_same_size_replace_of_a_slice_holds_only_the_slices_bytes():
    """A slice of a larger column is rebuilt, not patched: the patch copies the whole values
    buffer, and the result must hold only the slice's rows (pypaimon's
    test_copy_on_write_and_sliced_input)."""
    base = col([{"value": float(i), "padding": "x" * 1000} for i in range(100)])
    column = base.slice(50, 3)
    out = variant_replace(column, "$.value", pa.scalar(-1.0))
    assert [r["value"] for r in dec(out)] == [-1.0, -1.0, -1.0]
    assert out.field(0).buffers()[2].size == sum(len(v) for v in column.field(0).to_pylist())
    assert out.field(1).buffers()[2].address == column.field(1).buffers()[2].address
