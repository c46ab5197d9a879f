"""Bitmap file indexes narrow the rows of a raw read, not only the files of a scan: the filter
evaluated on a kept file's bitmaps gives the rows that may pass (Java's ``BitmapIndexResult``),
and the Parquet reader reads only the pages holding them; the filter by value still applies after
(docs/paimon-behaviour.md §6.3a). Reads that need the rows' positions (deletion vectors, row ids,
slices) and merge reads read every row."""

from __future__ import annotations

import glob
import os

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import paimon_rs
from paimon_rs import Schema, _core

from unit_helpers import write

SCHEMA = pa.schema([("id", pa.int32()), ("k", pa.int32()), ("s", pa.string()), ("x", pa.int32())])
OPTS = {"file-index.bitmap.columns": "k,s"}


def _table(catalog, name, options, schema=SCHEMA, **kw):
    catalog.create_table(f"db.{name}", Schema.from_pyarrow_schema(schema, options=options, **kw),
                         False)
    return catalog.get_table(f"db.{name}")


def _read(t, flt, projection=None):
    rb = t.new_read_builder().with_filter(flt)
    if projection:
        rb = rb.with_projection(projection)
    return rb.new_read().to_arrow(rb.new_scan().plan().splits())


def _ids(tbl):
    return sorted(tbl.column("id").to_pylist())


def _rows(ids, ks, xs):
    return pa.table({"id": ids, "k": ks, "s": [None if k is None else f"s{k}" for k in ks],
                     "x": xs}, schema=SCHEMA)


def test_a_selective_equal_reads_only_the_selected_rows(catalog):
    t = _table(catalog, "a", OPTS)
    n = 30_000
    write(t, _rows(list(range(n)), [i % 100 for i in range(n)], [i % 7 for i in range(n)]))
    before = _core.bitmap_selection_stats()
    got = _read(t, "k = 7")
    after = _core.bitmap_selection_stats()
    assert _ids(got) == [i for i in range(n) if i % 100 == 7]
    # 300 rows of the file's 30000 asked of the Parquet reader
    assert (after[0] - before[0], after[1] - before[1]) == (300, n)
    # AND with a non-indexed column: the bitmap narrows, the value filter decides
    before = _core.bitmap_selection_stats()
    got = _read(t, "k IN (7, 8) AND x = 3")
    after = _core.bitmap_selection_stats()
    assert _ids(got) == [i for i in range(n) if i % 100 in (7, 8) and i % 7 == 3]
    assert after[0] - before[0] == 600
    # OR with a non-indexed leaf cannot narrow: the whole file is read
    before = _core.bitmap_selection_stats()
    assert _ids(_read(t, "k = 7 OR x = 3")) == [i for i in range(n) if i % 100 == 7 or i % 7 == 3]
    assert _core.bitmap_selection_stats() == before
    # off with file-index.read.enabled = false
    before = _core.bitmap_selection_stats()
    assert _ids(_read(t.copy({"file-index.read.enabled": "false"}), "k = 7")) == [
        i for i in range(n) if i % 100 == 7]
    assert _core.bitmap_selection_stats() == before


def test_a_dense_scattered_selection_reads_the_file_whole(catalog):
    """Half the rows, one in two: no page can be skipped, so the file is read whole (a selection
    would only cost CPU); half the rows in one run is still narrowed."""
    t = _table(catalog, "dense", OPTS)
    n = 20_000
    write(t, _rows(list(range(n)), [i % 2 for i in range(n)], [0] * n))
    before = _core.bitmap_selection_stats()
    assert _ids(_read(t, "k = 1")) == [i for i in range(n) if i % 2 == 1]
    assert _core.bitmap_selection_stats() == before
    c = _table(catalog, "clustered", OPTS)
    write(c, _rows(list(range(n)), [int(i < n // 2) for i in range(n)], [0] * n))
    assert _ids(_read(c, "k = 1")) == list(range(n // 2))
    after = _core.bitmap_selection_stats()
    assert (after[0] - before[0], after[1] - before[1]) == (n // 2, n)


def test_deletion_vectors_and_row_ids_read_every_row(catalog):
    """Reads that need the rows' positions are not narrowed (and stay right)."""
    n = 5_000
    t = _table(catalog, "dv", {**OPTS, "deletion-vectors.enabled": "true", "bucket": "1"},
               primary_keys=["id"])
    write(t, _rows(list(range(n)), [i % 50 for i in range(n)], [0] * n))
    write(t, _rows([7, 57], [1, 1], [1, 1]))  # deletes the old rows of 7 and 57
    before = _core.bitmap_selection_stats()
    got = _read(t, "k = 7")
    assert _ids(got) == [i for i in range(n) if i % 50 == 7 and i not in (7, 57)]
    assert _ids(_read(t, "k = 1")) == sorted([i for i in range(n) if i % 50 == 1] + [7, 57])
    rt = _table(catalog, "rt", {**OPTS, "row-tracking.enabled": "true"})
    write(rt, _rows(list(range(n)), [i % 50 for i in range(n)], [0] * n))
    got = _read(rt, "k = 7", projection=["id", "_ROW_ID"])
    assert got.column("_ROW_ID").to_pylist() == got.column("id").to_pylist()
    assert _ids(got) == [i for i in range(n) if i % 50 == 7]
    assert _core.bitmap_selection_stats() == before


KS = st.one_of(st.none(), st.integers(0, 5))


def _leaf(draw_kind, v, vals):
    lst = ", ".join(str(a) for a in vals)
    return {
        "eq": (f"k = {v}", lambda k, x: k is not None and k == v),
        "in": (f"k IN ({lst})", lambda k, x: k is not None and k in vals),
        "ne": (f"k <> {v}", lambda k, x: k is not None and k != v),
        "notin": (f"k NOT IN ({lst})", lambda k, x: k is not None and k not in vals),
        "null": ("k IS NULL", lambda k, x: k is None),
        "notnull": ("k IS NOT NULL", lambda k, x: k is not None),
        "s": (f"s = 's{v}'", lambda k, x: k is not None and k == v),
        "x": (f"x = {v}", lambda k, x: x is not None and x == v),
    }[draw_kind]


LEAF = st.tuples(st.sampled_from(["eq", "in", "ne", "notin", "null", "notnull", "s", "x"]),
                 st.integers(0, 5), st.lists(st.integers(0, 5), min_size=1, max_size=3))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(commits=st.lists(st.lists(st.tuples(KS, st.one_of(st.none(), st.integers(0, 5))),
                                 min_size=1, max_size=60), min_size=1, max_size=3),
       leaves=st.lists(LEAF, min_size=1, max_size=3), conj=st.sampled_from(["AND", "OR"]),
       version=st.sampled_from(["1", "2"]))
def test_rows_equal_a_read_without_the_index(tmp_path_factory, commits, leaves, conj, version):
    wh = tmp_path_factory.mktemp("wh")
    catalog = paimon_rs.CatalogFactory.create({"warehouse": str(wh)})
    catalog.create_database("db", True)
    t = _table(catalog, "p", {**OPTS, "file-index.bitmap.k.version": version})
    rows = []
    for c in commits:
        ids = list(range(len(rows), len(rows) + len(c)))
        write(t, _rows(ids, [k for k, _ in c], [x for _, x in c]))
        rows += [(i, k, x) for i, (k, x) in zip(ids, c)]
    preds = [_leaf(*leaf) for leaf in leaves]
    flt = f" {conj} ".join(f"({p[0]})" for p in preds)
    combine = all if conj == "AND" else any
    want = [i for i, k, x in rows if combine(p[1](k, x) for p in preds)]
    assert _ids(_read(t, flt)) == want, flt
    assert _ids(_read(t.copy({"file-index.read.enabled": "false"}), flt)) == want, flt


def test_a_corrupt_bitmap_names_its_index_file(catalog):
    """A bitmap index whose body does not decode fails the read naming the ``.index`` file it
    was read from (with the table's directory), not the data file it indexes."""
    t = _table(catalog, "corrupt", {"file-index.bitmap.columns": "k",
                                    "file-index.in-manifest-threshold": "1 b"})
    write(t, _rows(list(range(1000)), [i % 50 for i in range(1000)], [0] * 1000))
    (ix,) = glob.glob(os.path.join(t.table_path.removeprefix("file:"), "bucket-0", "*.index"))
    b = bytearray(open(ix, "rb").read())
    for i in range(60, 68):  # inside the bitmap's dictionary (after the container's header)
        b[i] ^= 0xFF
    with open(ix, "wb") as f:
        f.write(b)
    with pytest.raises(paimon_rs.CorruptFileError) as e:
        _read(t, "k = 7")
    msg = str(e.value)
    assert msg.startswith(f"corrupt file {ix}:"), msg
