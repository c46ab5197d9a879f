"""File indexes (#28): bloom filters (``file-index.bloom-filter.columns``) written with every
data file, in the manifest or in a ``<data file>.index`` file, and used by the scan to skip files
that cannot hold an ``=`` / ``IN`` value (docs/paimon-behaviour.md §6.3a)."""

from __future__ import annotations

import os
import time

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import paimon_rs
from paimon_rs import Schema

from unit_helpers import write

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("v", pa.float64())])
SMALL = {"file-index.bloom-filter.columns": "id,name",
         "file-index.bloom-filter.id.items": "100", "file-index.bloom-filter.name.items": "100"}


def _table(catalog, name, options, schema=SCHEMA, **kw):
    catalog.create_table(f"db.{name}", Schema.from_pyarrow_schema(schema, options=options, **kw), False)
    return catalog.get_table(f"db.{name}")


def _commits(t, n=5):
    """Commit c holds ids c, c+5, ... c+95: every file's id range covers the others', so min/max
    statistics prune nothing and only the index can."""
    for c in range(n):
        ids = [c + 5 * j for j in range(20)]
        write(t, pa.table({"id": ids, "name": [f"n{i}" for i in ids], "v": [i / 2 for i in ids]},
                          schema=SCHEMA))


def _plan(t, flt):
    rb = t.new_read_builder().with_filter(flt)
    splits = rb.new_scan().plan().splits()
    return sum(len(s.file_paths) for s in splits), rb.new_read().to_arrow(splits)


def _bucket_dir(t):
    return os.path.join(t.table_path, "bucket-0")


def test_equal_and_in_skip_files_by_the_bloom_filter(catalog):
    t = _table(catalog, "a", SMALL)
    _commits(t)
    assert _plan(t, "v > -1")[0] == 5
    n, got = _plan(t, "id = 7")
    assert n == 1 and got.column("id").to_pylist() == [7]
    n, got = _plan(t, "id IN (7, 13)")
    assert n == 2 and sorted(got.column("id").to_pylist()) == [7, 13]
    n, got = _plan(t, "name = 'n42'")
    assert n == 1 and got.column("id").to_pylist() == [42]
    # absent values inside every file's min/max range: no file
    assert _plan(t, "name = 'n5x'")[0] == 0
    assert _plan(t, "name IN ('n5x', 'n42x') OR name = 'n7x'")[0] == 0
    # AND: one indexed side rules a file out; OR keeps what either side keeps
    assert _plan(t, "id = 7 AND v > 0")[0] == 1
    assert _plan(t, "id = 7 OR v > 40")[0] == 5
    # an operator the index cannot answer keeps every file
    assert _plan(t, "id <> 7")[0] == 5
    # the manifest holds these small indexes: no index file
    files = [f for s in t.new_read_builder().new_scan().plan().splits() for f in s.files]
    assert all(f.extra_files == [] for f in files)
    assert not [x for x in os.listdir(_bucket_dir(t)) if x.endswith(".index")]


def test_read_enabled_false_and_tables_without_index_keep_every_file(catalog):
    t = _table(catalog, "off", {**SMALL, "file-index.read.enabled": "false"})
    _commits(t)
    assert _plan(t, "id = 7")[0] == 5
    t = _table(catalog, "none", {})
    _commits(t)
    assert _plan(t, "id = 7")[0] == 5


def test_large_index_goes_to_an_index_file_beside_the_data_file(catalog):
    # Java's default items (1 000 000) make a 585 KB filter: over the 500 B threshold
    t = _table(catalog, "big", {"file-index.bloom-filter.columns": "id"})
    _commits(t, 3)
    files = [f for s in t.new_read_builder().new_scan().plan().splits() for f in s.files]
    assert len(files) == 3
    for f in files:
        assert f.extra_files == [f.file_name + ".index"]
        assert os.path.getsize(os.path.join(_bucket_dir(t), f.extra_files[0])) > 500_000
    n, got = _plan(t, "id = 7")
    assert n == 1 and got.column("id").to_pylist() == [7]
    # the threshold moves it into the manifest
    t = _table(catalog, "thr", {"file-index.bloom-filter.columns": "id",
                                "file-index.in-manifest-threshold": "1 mb"})
    _commits(t, 2)
    files = [f for s in t.new_read_builder().new_scan().plan().splits() for f in s.files]
    assert all(f.extra_files == [] for f in files)
    assert _plan(t, "id = 7")[0] == 0


def test_index_files_are_read_only_for_lookups_of_indexed_columns(catalog):
    t = _table(catalog, "lost", {"file-index.bloom-filter.columns": "id"})
    _commits(t, 2)
    for x in os.listdir(_bucket_dir(t)):
        if x.endswith(".index"):
            os.remove(os.path.join(_bucket_dir(t), x))
    # a filter that cannot use the index does not read it
    assert _plan(t, "name = 'n5'")[0] == 2
    # one that can fails on the lost index file, naming it (never a silent answer)
    with pytest.raises(paimon_rs.PaimonRsError, match=r"\.index"):
        _plan(t, "id = 5")


def test_index_files_go_with_their_data_files(catalog):
    t = _table(catalog, "exp", {"file-index.bloom-filter.columns": "id"})
    _commits(t, 3)
    before = sorted(x for x in os.listdir(_bucket_dir(t)) if x.endswith(".index"))
    assert len(before) == 3
    t.compact(full=True)
    t = catalog.get_table("db.exp")
    live = [f for s in t.new_read_builder().new_scan().plan().splits() for f in s.files]
    assert len(live) == 1 and live[0].extra_files == [live[0].file_name + ".index"]
    assert _plan(t, "id = 7")[0] == 1
    t.expire_snapshots(retain_min=1, retain_max=1)
    left = sorted(x for x in os.listdir(_bucket_dir(t)) if x.endswith(".index"))
    assert left == live[0].extra_files


@pytest.mark.parametrize("extra", [{}, {"clustering.columns": "v"}])
def test_sort_compaction_and_clustering_write_indexes(catalog, extra):
    # threshold 0: every index in a .index file, so each file's index shows in extra_files
    t = _table(catalog, "sc", {**SMALL, "file-index.in-manifest-threshold": "0",
                               "target-file-size": "2 kb", **extra})
    _commits(t)
    t.sort_compact("zorder", ["v", "name"])
    t = catalog.get_table("db.sc")
    files = [f for s in t.new_read_builder().new_scan().plan().splits() for f in s.files]
    assert files and all(f.extra_files == [f.file_name + ".index"] for f in files)
    n, got = _plan(t, "id IN (7, 77)")
    assert sorted(got.column("id").to_pylist()) == [7, 77] and n <= 2
    assert _plan(t, "name = 'n5x'")[0] == 0


def test_abort_and_orphan_clean_remove_index_files(catalog):
    import datetime as dt

    t = _table(catalog, "orph", {"file-index.bloom-filter.columns": "id"})
    _commits(t, 1)
    live = set(os.listdir(_bucket_dir(t)))
    assert len([x for x in live if x.endswith(".index")]) == 1

    def prepared():
        w = t.new_batch_write_builder()
        tw, tc = w.new_write(), w.new_commit()
        tw.write_arrow(pa.table({"id": [1000], "name": ["x"], "v": [0.0]}, schema=SCHEMA))
        return tw, tc, tw.prepare_commit()

    # an aborted commit's data file goes with its index file
    tw, tc, msgs = prepared()
    assert len(set(os.listdir(_bucket_dir(t))) - live) == 2
    tc.abort(msgs)
    tw.close()
    assert set(os.listdir(_bucket_dir(t))) == live
    # a writer that never commits leaves both; the orphan clean removes both, keeps the live ones
    prepared()
    left = set(os.listdir(_bucket_dir(t))) - live
    assert len(left) == 2 and len([x for x in left if x.endswith(".index")]) == 1
    # the clean keeps files modified in its own millisecond (mtime < older_than): let the clock move
    time.sleep(0.01)
    res = t.remove_orphan_files(older_than=dt.timedelta(seconds=0))
    assert {os.path.basename(f) for f in res.files} == left
    assert set(os.listdir(_bucket_dir(t))) == live
    assert _plan(t, "id = 5")[0] == 1


def test_primary_key_tables(catalog):
    # deletion vectors: files above level 0 hold final rows, so the index skips them
    opts = {**SMALL, "bucket": "1", "deletion-vectors.enabled": "true"}
    t = _table(catalog, "pkdv", opts, primary_keys=["id"])
    _commits(t)
    t.compact(full=True)
    t = catalog.get_table("db.pkdv")
    write(t, pa.table({"id": [7], "name": ["changed"], "v": [0.0]}, schema=SCHEMA))
    t.compact(full=False)
    t = catalog.get_table("db.pkdv")
    n, got = _plan(t, "name = 'n7'")
    assert got.num_rows == 0
    n, got = _plan(t, "name = 'changed'")
    assert got.column("id").to_pylist() == [7]
    n, _ = _plan(t, "name = 'n5x'")
    assert n == 0
    # without deletion vectors a file's rows may be superseded: nothing is skipped by index
    t = _table(catalog, "pk", {**SMALL, "bucket": "1"}, primary_keys=["id"])
    _commits(t)
    n, got = _plan(t, "name = 'n5x'")
    assert n == _plan(t, "v > -1")[0] >= 1 and got.num_rows == 0


@pytest.mark.parametrize("options,error,words", [
    ({"file-index.bsi.columns": "id"}, paimon_rs.UnsupportedError, "'bloom-filter'"),
    ({"file-index.range-bitmap.columns": "id"}, paimon_rs.UnsupportedError, "'bloom-filter'"),
    ({"file-index.bloom-filter.columns": "b"}, paimon_rs.UnsupportedError, "column 'b' of type BOOLEAN"),
    ({"file-index.bloom-filter.columns": "zz"}, paimon_rs.InvalidArgumentError, "zz does not exist"),
    ({"file-index.bloom-filter.columns": "id", "file-index.bloom-filter.id.size": "1"},
     paimon_rs.UnsupportedError, "'items' and 'fpp'"),
    ({"file-index.bloom-filter.x.fpp": "0.1"}, paimon_rs.InvalidArgumentError, "is not declared"),
])
def test_what_is_not_written_is_refused(catalog, options, error, words):
    schema = pa.schema([("id", pa.int64()), ("b", pa.bool_())])
    with pytest.raises(error, match=words):
        catalog.create_table("db.r", Schema.from_pyarrow_schema(schema, options=options), False)


VALUES = st.integers(-20, 20)


def _predicate(kind, vals):
    """A filter of ``kind`` over ``vals`` and the model's test of a row for it."""
    lst = ", ".join(str(v) for v in vals)
    return {
        "eq": (f"id = {vals[0]}", lambda r: r["id"] == vals[0]),
        "in": (f"id IN ({lst})", lambda r: r["id"] in vals),
        "name": (f"name = 'n{vals[0]}'", lambda r: r["name"] == f"n{vals[0]}"),
        "and": (f"id IN ({lst}) AND name = 'n{vals[0]}'",
                lambda r: r["id"] in vals and r["name"] == f"n{vals[0]}"),
        "or": (f"id = {vals[0]} OR v > {vals[-1]}", lambda r: r["id"] == vals[0] or r["v"] > vals[-1]),
    }[kind]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(commits=st.lists(st.lists(VALUES, min_size=1, max_size=12), min_size=1, max_size=5),
       preds=st.lists(st.tuples(st.sampled_from(["eq", "in", "name", "and", "or"]),
                                st.lists(VALUES, min_size=1, max_size=3)), min_size=1, max_size=6))
def test_never_a_wrong_answer(tmp_path_factory, commits, preds):
    wh = tmp_path_factory.mktemp("wh")
    catalog = paimon_rs.CatalogFactory.create({"warehouse": str(wh)})
    catalog.create_database("db", True)
    t = _table(catalog, "p", {**SMALL, "file-index.bloom-filter.id.items": "8",
                              "file-index.bloom-filter.id.fpp": "0.3"})
    rows = []
    for c in commits:
        batch = [{"id": i, "name": f"n{i}", "v": float(i)} for i in c]
        rows += batch
        write(t, pa.Table.from_pylist(batch, schema=SCHEMA))
    for kind, vals in preds:
        flt, want = _predicate(kind, vals)
        n, got = _plan(t, flt)
        assert sorted(got.column("id").to_pylist()) == sorted(r["id"] for r in rows if want(r)), flt
        # a file holding a wanted row is never skipped
        assert n >= sum(1 for c in commits if any(want({"id": i, "name": f"n{i}", "v": float(i)}) for i in c))


@settings(max_examples=25, deadline=None)
@given(steps=st.lists(st.one_of(
    st.lists(st.tuples(st.integers(0, 15), st.integers(0, 9)), min_size=1, max_size=8),
    st.sampled_from(["compact", "full"])), min_size=1, max_size=8),
    names=st.lists(st.integers(0, 12), min_size=1, max_size=3))
def test_deletion_vector_tables_never_a_wrong_answer(tmp_path_factory, steps, names):
    """Primary-key tables with deletion vectors, skipped by index above level 0: after random
    upserts and compactions, every filtered read equals the unfiltered read filtered."""
    wh = tmp_path_factory.mktemp("wh")
    catalog = paimon_rs.CatalogFactory.create({"warehouse": str(wh)})
    catalog.create_database("db", True)
    t = _table(catalog, "p", {**SMALL, "bucket": "1", "deletion-vectors.enabled": "true",
                              "file-index.bloom-filter.name.items": "4"}, primary_keys=["id"])
    model = {}
    for step in steps:
        if step == "compact" or step == "full":
            t.compact(full=step == "full")
            t = catalog.get_table("db.p")
            continue
        batch = {}
        for k, n in step:
            batch[k] = f"n{n}"
        write(t, pa.table({"id": list(batch), "name": list(batch.values()),
                           "v": [0.0] * len(batch)}, schema=SCHEMA))
        model.update(batch)
    # a batch read of a deletion-vector table sees what compaction reached (level 0 is not
    # read): the filtered read must equal the unfiltered one, filtered
    visible = {r["id"]: r["name"] for r in t.to_arrow().to_pylist()}
    assert set(visible) <= set(model)
    lst = ", ".join(f"'n{n}'" for n in names)
    for flt, want in [(f"name = 'n{names[0]}'", {f"n{names[0]}"}), (f"name IN ({lst})", {f"n{n}" for n in names})]:
        _, got = _plan(t, flt)
        assert sorted(got.column("id").to_pylist()) == sorted(k for k, n in visible.items() if n in want), flt
