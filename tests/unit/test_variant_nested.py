"""variant_get of nested result types (structs, lists, large and fixed-size lists, string-keyed
maps, any depth) through the Rust kernel ``_core.variant_get_nested``, against the Python
reference ``_read_exact`` (the kernel switched off) on random variants and types."""

from __future__ import annotations

import datetime
import decimal
from unittest import mock

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_variant_path import _KEYS, _spell, col, path_into, random_columns

from paimon_rs import _core, variant_get
from paimon_rs import variant_path as vp


def outcome(f):
    """``["ok", type, rows]`` or ``["error", class, message]``; the arrays beside."""
    try:
        out = f()
    except (TypeError, ValueError, OverflowError) as e:  # pa.ArrowInvalid is a ValueError
        return ["error", type(e).__name__, str(e)], None
    out = out if isinstance(out, dict) else {"": out}
    return ["ok", {k: [str(v.type), v.to_pylist()] for k, v in out.items()}], out


def reference(f):
    """``outcome`` of ``f`` with both kernels switched off (the per-row Python path)."""
    with mock.patch.object(vp, "_nested_paths", return_value=None), \
            mock.patch.object(vp, "_kernel_paths", return_value=None):
        return outcome(f)


def kernel(f):
    """``outcome`` of ``f`` and whether each ``variant_get_nested`` call read its chunk."""
    read = []
    real = vp._core.variant_get_nested

    def spy(*a):
        read.append(True)  # a refusal raised by the kernel counts as read there
        got = real(*a)
        read[-1] = got is not None
        return got

    with mock.patch.object(vp._core, "variant_get_nested", side_effect=spy):
        return outcome(f), read


def same(f):
    """The kernel and the reference agree on ``f`` (values, types, nulls, chunks, errors);
    whether the kernel read every chunk itself."""
    (got, arrays), read = kernel(f)
    want, expected = reference(f)
    assert got == want
    if arrays is not None:
        for k, a in arrays.items():
            assert a.equals(expected[k]), k
            assert isinstance(a, pa.ChunkedArray) == isinstance(expected[k], pa.ChunkedArray)
    return bool(read) and all(read)


_leaf = st.one_of(
    st.none(), st.booleans(), st.integers(-2**63, 2**63 - 1), st.integers(-300, 300),
    st.floats(allow_nan=False), st.text(max_size=3), st.binary(max_size=4), st.dates(),
    st.datetimes(), st.datetimes(timezones=st.just(datetime.timezone.utc)),
    st.decimals(min_value=-10**6, max_value=10**6, places=2, allow_nan=False))
_values = st.recursive(_leaf, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(_KEYS), inner, max_size=4)),
    max_leaves=10)
_LEAF_TYPES = [pa.bool_(), pa.int8(), pa.int16(), pa.int64(), pa.float32(), pa.float64(),
               pa.string(), pa.large_string(), pa.binary(), pa.large_binary(), pa.date32(),
               pa.timestamp("us"), pa.timestamp("us", tz="UTC"), pa.decimal128(8, 2),
               pa.decimal128(38, 2), pa.decimal128(4, 0)]


def _any_type(depth):
    if depth == 0:
        return st.sampled_from(_LEAF_TYPES)
    inner = _any_type(depth - 1)
    return st.one_of(
        st.sampled_from(_LEAF_TYPES),
        st.lists(st.tuples(st.sampled_from(_KEYS + ["zz"]), inner), max_size=3,
                 unique_by=lambda f: f[0]).map(pa.struct),
        inner.map(pa.list_), inner.map(pa.large_list),
        st.tuples(inner, st.integers(0, 3)).map(lambda a: pa.list_(a[0], a[1])),
        st.tuples(st.sampled_from([pa.string(), pa.large_string()]), inner).map(
            lambda a: pa.map_(*a)))


@st.composite
def _fitting(draw, x, depth=3):
    """A type ``x`` mostly reads as (sometimes a random one: mismatches, deeper down too)."""
    if depth == 0 or draw(st.integers(0, 9)) == 0:
        return draw(_any_type(min(depth, 2)))
    if isinstance(x, dict):
        if x and draw(st.booleans()):  # a map of the first field's type
            return pa.map_(draw(st.sampled_from([pa.string(), pa.large_string()])),
                           draw(_fitting(next(iter(x.values())), depth - 1)))
        names = draw(st.lists(st.sampled_from(sorted(x) + ["zz"]), max_size=4, unique=True))
        return pa.struct([(n, draw(_fitting(x.get(n), depth - 1))) for n in names])
    if isinstance(x, list):
        item = draw(_fitting(x[0] if x else None, depth - 1))
        return draw(st.sampled_from([pa.list_(item), pa.large_list(item),
                                     pa.list_(item, len(x))]))
    if isinstance(x, bool):
        return pa.bool_()
    if isinstance(x, int):
        return draw(st.sampled_from([pa.int64(), pa.int16(), pa.int8()]))
    if isinstance(x, float):
        return pa.float64()
    if isinstance(x, str):
        return draw(st.sampled_from([pa.string(), pa.large_string()]))
    if isinstance(x, bytes):
        return pa.binary()
    if isinstance(x, datetime.datetime):
        return pa.timestamp("us", tz="UTC" if x.tzinfo else None)
    if isinstance(x, datetime.date):
        return pa.date32()
    if isinstance(x, decimal.Decimal):
        return draw(st.sampled_from([pa.decimal128(38, 2), pa.decimal128(6, 2)]))
    return draw(st.sampled_from(_LEAF_TYPES))


_STATS = None  # a list: whether the kernel read each example itself (to judge the generator)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_nested_kernel_matches_the_python_reference(data):
    rows, column = data.draw(random_columns(_values))
    wanted = {}
    for _ in range(data.draw(st.integers(1, 3))):  # paths into a row's shape, typed to fit
        path, here = data.draw(path_into(rows))
        t = data.draw(_fitting(here))
        if not isinstance(t, (pa.StructType, pa.ListType, pa.LargeListType,
                              pa.FixedSizeListType, pa.MapType)):
            t = pa.list_(t) if data.draw(st.booleans()) else pa.struct([("a", t)])
        wanted[_spell(path)] = t
    read = same(lambda: variant_get(column, wanted))
    if _STATS is not None:
        _STATS.append(read)


def test_struct_list_map_read_in_rust():
    c = col([{"v": {"x": 1.0, "y": 2.0}, "l": [1, 2, None], "m": {"b": None, "a": 1}}, None,
             {"v": None, "l": [], "m": {}}, {"v": {"x": 3.0}}])
    xy = pa.struct([("x", pa.float64()), ("y", pa.float64())])
    assert variant_get(c, "$.v", xy).to_pylist() == [
        {"x": 1.0, "y": 2.0}, None, None, {"x": 3.0, "y": None}]
    assert variant_get(c, "$.m", pa.map_(pa.string(), pa.int64())).to_pylist() == [
        [("a", 1), ("b", None)], None, [], None]  # in stored (key) order
    for path, t in [("$.v", xy), ("$.l", pa.list_(pa.int64())), ("$.l", pa.large_list(pa.int8())),
                    ("$.l", pa.list_(pa.int64(), 3)), ("$.m", pa.map_(pa.large_string(), pa.int16())),
                    ("$", pa.struct([("l", pa.list_(pa.int32())), ("v", xy), ("zz", pa.int8()),
                                     ("m", pa.map_(pa.string(), pa.int64()))])),
                    ("$", pa.struct([]))]:
        assert same(lambda p=path, t=t: variant_get(c, p, t)), (path, t)
    parsed = [("$.l", vp._parse_path("$.l"), pa.list_(pa.int64()))]
    got = _core.variant_get_nested(c, vp._nested_paths(parsed))
    assert got is not None and got[0].type == pa.list_(pa.int64())
    # a mapping of paths mixing scalar and nested types: all in the nested kernel
    assert same(lambda: variant_get(c, {"$.v.x": pa.float64(), "$.l": pa.list_(pa.int8())}))


def test_mismatch_names_the_innermost_type():
    c = col([{"a": [1, "x"], "f": [1, 2]}])
    for path, t, name in [("$", pa.struct([("a", pa.list_(pa.int8()))]), "int8"),
                          ("$.a", pa.map_(pa.string(), pa.int8()), "map<string, int8>"),
                          ("$.f", pa.list_(pa.int8(), 3), "fixed_size_list<item: int8>[3]"),
                          ("$", pa.list_(pa.struct([("a", pa.int8())])),
                           "list<item: struct<a: int8>>"),
                          ("$.f", pa.list_(pa.struct([("a", pa.int8())])), "struct<a: int8>")]:
        with pytest.raises(TypeError, match=f"does not match {__import__('re').escape(name)}$"):
            variant_get(c, path, t)
        assert same(lambda p=path, t=t: variant_get(c, p, t))


def test_rows_the_kernel_leaves_to_the_python_path():
    c = col([{"a": [1, 300], "b": {"x": 1}}, {"a": "s"}])
    # int8 overflow in row 0, a mismatch in row 1: the reference reads every row before
    # pyarrow sees the values, so the mismatch wins
    assert not same(lambda: variant_get(c, "$.a", pa.list_(pa.int8())))
    with pytest.raises(TypeError, match="does not match list<item: int8>"):
        variant_get(c, "$.a", pa.list_(pa.int8()))
    one = c.slice(0, 1)
    assert not same(lambda: variant_get(one, "$.a", pa.list_(pa.int8())))
    # a repeated struct field name (the reference's dict keeps one of them)
    dup = pa.struct([("x", pa.int64()), ("x", pa.int64())])
    parsed = [("$.b", vp._parse_path("$.b"), dup)]
    assert _core.variant_get_nested(one, vp._nested_paths(parsed)) is None
    with mock.patch.object(vp, "_nested_paths", return_value=None):
        assert variant_get(one, "$.b", dup).equals(pa.array([{"x": 1}], dup))
    # a null in a non-nullable child
    strict = pa.struct([pa.field("y", pa.int64(), nullable=False)])
    assert not same(lambda: variant_get(one, "$.b", strict))


def test_empty_objects_never_read_the_dictionary():
    # an empty object over a dictionary whose offsets are cut short: the reference never
    # parses the dictionary, nor does the kernel
    c = pa.StructArray.from_arrays([pa.array([b"\x02\x00\x00"], pa.binary()),
                                    pa.array([b"\x01\x05"], pa.binary())],
                                   names=["value", "metadata"])
    assert same(lambda: variant_get(c, "$", pa.struct([("a", pa.int64())])))
    assert variant_get(c, "$", pa.struct([("a", pa.int64())])).to_pylist() == [{"a": None}]
    assert same(lambda: variant_get(c, "$", pa.map_(pa.string(), pa.int64())))
    bad = pa.StructArray.from_arrays([pa.array([b"\x03\x01\x00\x05\x0c"], pa.binary()),
                                      pa.array([b"\x01\x00\x00"], pa.binary())],
                                     names=["value", "metadata"])
    with pytest.raises(ValueError, match="MALFORMED_VARIANT"):
        variant_get(bad, "$", pa.list_(pa.int8()))
    assert same(lambda: variant_get(bad, "$", pa.list_(pa.int8())))


def test_deep_values_and_fixed_size_list_nulls():
    deep = {"a": 1}
    for _ in range(200):
        deep = {"a": [deep]}
    t = pa.int64()
    for _ in range(40):
        t = pa.struct([("a", pa.list_(t if isinstance(t, pa.StructType) else pa.struct([("a", t)])))])
    c = col([deep, None, {"a": None}])
    assert same(lambda: variant_get(c, "$", t))
    f = col([[1, 2], None, [None, None], {"k": 1}])
    assert same(lambda: variant_get(f.slice(0, 3), "$", pa.list_(pa.int64(), 2)))
    assert variant_get(f.slice(0, 3), "$", pa.list_(pa.int64(), 2)).to_pylist() == [
        [1, 2], None, [None, None]]
    assert same(lambda: variant_get(f, "$", pa.list_(pa.int64(), 2)))  # the object: refused
