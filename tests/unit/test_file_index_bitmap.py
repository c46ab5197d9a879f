"""Bitmap file indexes (``file-index.bitmap.columns``): Java's ``BitmapFileIndex`` (versions 1
and 2) written with every data file, in the manifest or in a ``<data file>.index`` file, and used
by the scan to skip files that cannot hold a row passing ``=`` / ``IN`` / ``<>`` / ``NOT IN`` /
``IS NULL`` / ``IS NOT NULL`` (docs/paimon-behaviour.md §6.3a). Java interop is in
tests/compat/test_file_index_java.py."""

from __future__ import annotations

import os

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import paimon_rs
from paimon_rs import Schema

from unit_helpers import write

SCHEMA = pa.schema([("id", pa.int32()), ("name", pa.string()), ("flag", pa.bool_()),
                    ("v", pa.float64())])
BITMAP = {"file-index.bitmap.columns": "id,name,flag"}


def _table(catalog, name, options, schema=SCHEMA, **kw):
    catalog.create_table(f"db.{name}", Schema.from_pyarrow_schema(schema, options=options, **kw), False)
    return catalog.get_table(f"db.{name}")


def _plan(t, flt):
    rb = t.new_read_builder().with_filter(flt)
    splits = rb.new_scan().plan().splits()
    return sum(len(s.file_paths) for s in splits), rb.new_read().to_arrow(splits)


def _rows(ids):
    return pa.table({"id": ids, "name": [None if i is None else f"n{i}" for i in ids],
                     "flag": [None if i is None else i % 2 == 0 for i in ids],
                     "v": [float(i or 0) for i in ids]}, schema=SCHEMA)


def _files(t):
    """File c holds ids c, c+4, ... (and file 3 a null id): min/max prune nothing."""
    for c in range(4):
        ids = [c + 4 * j for j in range(10)] + ([None] if c == 3 else [])
        write(t, _rows(ids))


@pytest.mark.parametrize("extra", [{}, {"file-index.bitmap.id.version": "1",
                                        "file-index.bitmap.name.version": "1"},
                                   {"file-index.bitmap.name.index-block-size": "32 b"},
                                   {"file-index.in-manifest-threshold": "1 b"}])
def test_leaves_skip_files_by_the_bitmap(catalog, extra):
    t = _table(catalog, "a", {**BITMAP, **extra})
    _files(t)
    if "file-index.in-manifest-threshold" in extra:
        assert len([f for f in os.listdir(os.path.join(t.table_path, "bucket-0"))
                    if f.endswith(".index")]) == 4
    assert _plan(t, "v > -1")[0] == 4
    n, got = _plan(t, "id = 9")
    assert n == 1 and got.column("id").to_pylist() == [9]
    n, got = _plan(t, "id IN (9, 14)")
    assert n == 2 and sorted(got.column("id").to_pylist()) == [9, 14]
    assert _plan(t, "id IN (41, 42)")[0] == 0
    n, got = _plan(t, "name = 'n6'")
    assert n == 1 and got.column("id").to_pylist() == [6]
    assert _plan(t, "name = 'n6x'")[0] == 0
    n, got = _plan(t, "id IS NULL")
    assert n == 1 and got.column("id").to_pylist() == [None]
    assert _plan(t, "id IS NOT NULL")[0] == 4
    # files 0 and 2 hold only even ids: flag is true in all their rows
    n, got = _plan(t, "flag = false")
    assert n == 2 and sorted(got.column("id").to_pylist()) == [1, 3, 5, 7, 9, 11, 13, 15, 17, 19,
                                                               21, 23, 25, 27, 29, 31, 33, 35, 37, 39]
    n, _ = _plan(t, "flag <> true")
    assert n == 2
    # AND: one leaf rules a file out; OR: every leaf must
    assert _plan(t, "id = 9 AND name = 'n10'")[0] == 0
    assert _plan(t, "id = 9 OR name = 'n10'")[0] == 2


def test_not_in_skips_a_file_holding_only_those_values(catalog):
    t = _table(catalog, "b", {"file-index.bitmap.columns": "name"})
    for ids, names in [([1, 2, 3], ["x", "y", "x"]), ([4, 5, 6], ["x", None, "y"]), ([7], ["z"])]:
        write(t, pa.table({"id": ids, "name": names, "flag": [True] * len(ids),
                           "v": [0.0] * len(ids)}, schema=SCHEMA))
    # min/max ('x'..'y') cannot rule out the first file; its bitmap can. The second holds a
    # null: kept (Java's NOT IN answer counts null rows)
    n, got = _plan(t, "name NOT IN ('x', 'y')")
    assert n == 2 and got.column("id").to_pylist() == [7]
    assert _plan(t.copy({"file-index.read.enabled": "false"}), "name NOT IN ('x', 'y')")[0] == 3


@pytest.mark.parametrize("options,error,words", [
    ({"file-index.bitmap.columns": "b"}, paimon_rs.UnsupportedError, "column 'b' of type BYTES"),
    ({"file-index.bitmap.columns": "d"}, paimon_rs.UnsupportedError, "a bitmap file index takes"),
    ({"file-index.bitmap.columns": "zz"}, paimon_rs.InvalidArgumentError, "zz does not exist"),
    ({"file-index.bitmap.columns": "id", "file-index.bitmap.id.version": "3"},
     paimon_rs.InvalidArgumentError, "version 1 or 2"),
    ({"file-index.bitmap.columns": "id", "file-index.bitmap.id.items": "3"},
     paimon_rs.UnsupportedError, "'version' and 'index-block-size'"),
    ({"file-index.bitmap.id.version": "1"}, paimon_rs.InvalidArgumentError, "is not declared"),
])
def test_what_a_bitmap_cannot_index_is_refused(catalog, options, error, words):
    schema = pa.schema([("id", pa.int64()), ("b", pa.binary()), ("d", pa.decimal128(10, 2))])
    with pytest.raises(error, match=words):
        catalog.create_table("db.r", Schema.from_pyarrow_schema(schema, options=options), False)


IDS = st.one_of(st.none(), st.integers(-6, 6))


def _predicate(kind, vals):
    """A filter of ``kind`` over ``vals`` and the model's test of a row (SQL: a null passes no
    comparison)."""
    lst = ", ".join(str(v) for v in vals)
    return {
        "eq": (f"id = {vals[0]}", lambda r: r is not None and r == vals[0]),
        "in": (f"id IN ({lst})", lambda r: r is not None and r in vals),
        "ne": (f"id <> {vals[0]}", lambda r: r is not None and r != vals[0]),
        "notin": (f"id NOT IN ({lst})", lambda r: r is not None and r not in vals),
        "null": ("id IS NULL", lambda r: r is None),
        "notnull": ("id IS NOT NULL", lambda r: r is not None),
        "name": (f"name = 'n{vals[0]}'", lambda r: r is not None and r == vals[0]),
        "or": (f"id IS NULL OR name IN ({', '.join(repr(f'n{v}') for v in vals)})",
               lambda r: r is None or r in vals),
    }[kind]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(commits=st.lists(st.lists(IDS, min_size=1, max_size=10), min_size=1, max_size=4),
       preds=st.lists(st.tuples(st.sampled_from(["eq", "in", "ne", "notin", "null", "notnull",
                                                 "name", "or"]),
                                st.lists(st.integers(-6, 6), min_size=1, max_size=3)),
                      min_size=1, max_size=6),
       version=st.sampled_from(["1", "2"]))
def test_never_a_wrong_answer(tmp_path_factory, commits, preds, version):
    wh = tmp_path_factory.mktemp("wh")
    catalog = paimon_rs.CatalogFactory.create({"warehouse": str(wh)})
    catalog.create_database("db", True)
    t = _table(catalog, "p", {**BITMAP, "file-index.bitmap.id.version": version,
                              "file-index.bitmap.name.version": version,
                              "file-index.bitmap.name.index-block-size": "24 b"})
    for c in commits:
        write(t, _rows(c))
    rows = [i for c in commits for i in c]
    for kind, vals in preds:
        flt, want = _predicate(kind, vals)
        n, got = _plan(t, flt)
        assert sorted(got.column("id").to_pylist(), key=repr) == sorted(
            (r for r in rows if want(r)), key=repr), flt
        # a file holding a wanted row is never skipped
        assert n >= sum(1 for c in commits if any(want(i) for i in c)), flt


@pytest.mark.parametrize("ptype", [pa.float32(), pa.float64()])
def test_float_zeros_and_nan_never_a_wrong_answer(catalog, ptype):
    """-0.0 and 0.0 are two values for the row filter and two keys in the bitmap: no filter on
    either (nor on NaN) skips a file holding a passing row (review34b F1)."""
    schema = pa.schema([("id", pa.int32()), ("v", ptype)])
    t = _table(catalog, "z", {"file-index.bitmap.columns": "v"}, schema=schema)
    plain = _table(catalog, "zp", {}, schema=schema)
    for i, vals in enumerate([[-0.0, -0.0], [0.0], [float("nan"), 1.0], [-0.0, 0.0]]):
        batch = pa.table({"id": [10 * i + j for j in range(len(vals))], "v": vals}, schema=schema)
        write(t, batch)
        write(plain, batch)
    for flt in ["v <> 0", "v <> -0.0", "v NOT IN (-0.0, 1)", "v NOT IN (0.0)", "v = 0", "v = -0.0",
                "v IN (-0.0)", "v <> 1"]:
        assert sorted(_plan(t, flt)[1].column("id").to_pylist()) == sorted(
            _plan(plain, flt)[1].column("id").to_pylist()), flt
