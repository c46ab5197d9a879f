"""File indexes against Java Paimon (issue #28): the bloom-filter index we write for a file is
byte-for-byte the one Java writes for the same rows (every type the bloom filter hashes, 22
indexed columns so Java's HashMap order of the head is exercised past a resize); Java's scan
skips files by our embedded index and reads our tables (index in the manifest and in
``.index`` files); our scan skips files by Java's indexes, embedded and in ``.index`` files."""

from __future__ import annotations

import base64
import random
from collections import Counter

import pytest

from paimon_rs import CatalogFactory, _core

import java_values as jv
from java_env import JavaPaimon

pytestmark = pytest.mark.java

DB = "db"
HASHABLE = [tc for tc in jv.TYPES
            if jv.root(tc.ptype) not in ("ARRAY", "MAP", "ROW", "MULTISET", "BOOLEAN", "DECIMAL")]


def _create(java: JavaPaimon, wh, name: str, names: list, ptypes: list, options: dict) -> None:
    java.call("create_table", warehouse=str(wh), table=f"{DB}.{name}",
              fields=[{"name": n, "type": t} for n, t in zip(names, ptypes)], primary_keys=[],
              partition_keys=[], table_options={"bucket": "-1", **options})


def _ours_write(wh, name: str, rows: list) -> None:
    t = CatalogFactory.create({"warehouse": str(wh)}).get_table(f"{DB}.{name}")
    w = t.new_batch_write_builder()
    tw, tc = w.new_write(), w.new_commit()
    tw.write_arrow(jv.to_arrow(rows, t.arrow_schema.names, list(t.arrow_schema.types)))
    tc.commit(tw.prepare_commit())
    tw.close()
    tc.close()


def _java_files(java: JavaPaimon, wh, name: str, flt=None) -> list:
    return java.call("files", warehouse=str(wh), table=f"{DB}.{name}", filter=flt)


def _ours_plan(wh, name: str, flt: str):
    t = CatalogFactory.create({"warehouse": str(wh)}).get_table(f"{DB}.{name}")
    rb = t.new_read_builder().with_filter(flt)
    splits = rb.new_scan().plan().splits()
    got = jv.from_arrow(rb.new_read().to_arrow(splits))
    return sum(len(s.file_paths) for s in splits), got


def test_our_index_bytes_equal_javas_for_every_hashable_type(java, tmp_path):
    names = [f"c_{tc.id}" for tc in HASHABLE]
    ptypes = [tc.ptype for tc in HASHABLE]
    options = {"file-index.bloom-filter.columns": ",".join(names),
               "file-index.in-manifest-threshold": "1 mb"}
    for i, n in enumerate(names):
        options[f"file-index.bloom-filter.{n}.items"] = str(20 + 7 * i)
        options[f"file-index.bloom-filter.{n}.fpp"] = str(0.01 + 0.01 * (i % 5))
    rng = random.Random(28)
    rows = [[None if rng.random() < 0.1 else tc.gen(rng) for tc in HASHABLE] for _ in range(60)]
    _create(java, tmp_path, "java", names, ptypes, options)
    _create(java, tmp_path, "ours", names, ptypes, options)
    java.call("write", warehouse=str(tmp_path), table=f"{DB}.java", commits=[{"rows": rows}])
    _ours_write(tmp_path, "ours", rows)
    (theirs,) = _java_files(java, tmp_path, "java")
    (ours,) = _java_files(java, tmp_path, "ours")
    assert theirs["extra_files"] == ours["extra_files"] == []
    a, b = base64.b64decode(ours["embedded_index"]), base64.b64decode(theirs["embedded_index"])
    assert len(a) == len(b) and a == b


def _ids_table(java, wh, name, options, writer):
    """Four files (one commit each), ids i, i+4, ... so min/max prune nothing."""
    _create(java, wh, name, ["id", "s"], ["BIGINT", "STRING"],
            {"file-index.bloom-filter.columns": "id,s", **options})
    for c in range(4):
        rows = [[c + 4 * j, f"s{c + 4 * j}"] for j in range(25)]
        if writer == "java":
            java.call("write", warehouse=str(wh), table=f"{DB}.{name}", commits=[{"rows": rows}])
        else:
            _ours_write(wh, name, rows)


EQ_ABSENT = {"op": "equal", "field": "s", "value": "s5x"}
# (id 7 is a false positive of another file's filter, for Java's bytes as for ours)
EQ_8 = {"op": "equal", "field": "id", "value": 8}


@pytest.mark.parametrize("options", [
    {"file-index.bloom-filter.id.items": "100", "file-index.bloom-filter.s.items": "100"},  # embedded
    {},  # Java's default 1M items: <data file>.index files
])
def test_java_reads_and_skips_by_our_index(java, tmp_path, options):
    _ids_table(java, tmp_path, "t", options, "ours")
    files = _java_files(java, tmp_path, "t")
    assert len(files) == 4
    embedded = bool(options)
    for f in files:
        assert (f["embedded_index"] is not None) == embedded
        assert f["extra_files"] == ([] if embedded else [f["file"] + ".index"])
    if embedded:
        # Java's scan skips by embedded indexes only (the .index files serve its reader)
        assert len(_java_files(java, tmp_path, "t", EQ_8)) == 1
        assert len(_java_files(java, tmp_path, "t", EQ_ABSENT)) == 0
    got = java.call("read", warehouse=str(tmp_path), table=f"{DB}.t", filter=EQ_8)["rows"]
    assert got == [[8, "s8"]]
    assert java.call("read", warehouse=str(tmp_path), table=f"{DB}.t", filter=EQ_ABSENT)["rows"] == []


@pytest.mark.parametrize("options", [
    {"file-index.bloom-filter.id.items": "100", "file-index.bloom-filter.s.items": "100"},
    {},
])
def test_we_skip_by_javas_index(java, tmp_path, options):
    _ids_table(java, tmp_path, "t", options, "java")
    files = _java_files(java, tmp_path, "t")
    assert all((f["extra_files"] == []) == bool(options) for f in files)
    n, got = _ours_plan(tmp_path, "t", "id = 8")
    assert n == 1 and got == [[8, "s8"]]
    n, got = _ours_plan(tmp_path, "t", "s IN ('s5x', 's9x')")
    assert n == 0 and got == []
    n, got = _ours_plan(tmp_path, "t", "id IN (8, 13)")
    assert n == 2 and Counter(map(tuple, got)) == Counter([(8, "s8"), (13, "s13")])


@pytest.mark.parametrize("pk", [False, True])
def test_java_expires_our_index_files_and_reads_our_primary_key_tables(java, tmp_path, pk):
    """Java 1.0 indexes append files only; our primary-key files carry the index of their value
    columns (as Java since 1.1): Java reads such tables, and its expiry deletes a compacted-away
    file's .index file with it, as ours does."""
    options = {"file-index.bloom-filter.columns": "s"}
    if pk:
        options.update({"bucket": "1", "deletion-vectors.enabled": "true"})
    java.call("create_table", warehouse=str(tmp_path), table=f"{DB}.t",
              fields=[{"name": "id", "type": "BIGINT NOT NULL" if pk else "BIGINT"},
                      {"name": "s", "type": "STRING"}],
              primary_keys=["id"] if pk else [], partition_keys=[],
              table_options=options if pk else {"bucket": "-1", **options})
    for c in range(3):
        _ours_write(tmp_path, "t", [[c + 3 * j, f"s{c + 3 * j}"] for j in range(10)])
    t = CatalogFactory.create({"warehouse": str(tmp_path)}).get_table(f"{DB}.t")
    t.compact(full=True)
    bucket = tmp_path / f"{DB}.db" / "t" / "bucket-0"
    live = [f for f in _java_files(java, tmp_path, "t")]
    assert live and all(f["extra_files"] == [f["file"] + ".index"] for f in live)
    assert len(list(bucket.glob("*.index"))) > len(live)
    java.call("expire_snapshots", warehouse=str(tmp_path), table=f"{DB}.t", retain_max=1, retain_min=1)
    assert sorted(p.name for p in bucket.glob("*.index")) == sorted(f["extra_files"][0] for f in live)
    got = java.call("read", warehouse=str(tmp_path), table=f"{DB}.t",
                    filter={"op": "equal", "field": "s", "value": "s7"})["rows"]
    assert got == [[7, "s7"]]
    n, ours = _ours_plan(tmp_path, "t", "s = 's7x'")
    assert n == 0 and ours == []


# ---- bitmap file indexes (file-index.bitmap.columns) ----

# BOOLEAN too in Java's sources (one byte, as ours); the driver's jar keys it as a TINYINT and
# fails to write it (ClassCastException Boolean -> Byte), so it is left out here
BITMAPPABLE = [tc for tc in jv.TYPES
               if jv.root(tc.ptype) not in ("ARRAY", "MAP", "ROW", "MULTISET", "DECIMAL", "BINARY",
                                            "VARBINARY", "BYTES", "BOOLEAN")]


def _typed_rows(seed: int, n: int) -> list:
    """Rows of an id and every bitmap-indexable type, values drawn from a few per column so
    files share some and not others; a tenth null."""
    rng = random.Random(seed)
    pools = [[tc.gen(rng) for _ in range(4)] for tc in BITMAPPABLE]
    return [[seed * 1000 + i] + [None if rng.random() < 0.1 else rng.choice(p) for p in pools]
            for i in range(n)]


@pytest.mark.parametrize("writer", ["java", "ours"])
@pytest.mark.parametrize("version", ["1"])
def test_bitmap_indexes_both_ways_for_every_type(java, tmp_path, writer, version):
    """Three files of every bitmap-indexable type, written by one side and read by the other:
    for a value of each column in one file, the reader keeps every file holding it and returns
    exactly the rows holding it (Java drops rows by our bitmap, we filter by value); Java's
    ``IS NULL`` keeps exactly the files with a null. Version 1 only: the driver's jars predate
    version 2 (Java's default since 1.1), which tests/unit/test_file_index_bitmap.py covers
    (and which was checked once against Java master's classes: docs/paimon-format.md §13)."""
    names = ["id"] + [f"c_{tc.id}" for tc in BITMAPPABLE]
    ptypes = ["INT"] + [tc.ptype for tc in BITMAPPABLE]
    options = {"file-index.bitmap.columns": ",".join(names[1:]), "file-index.in-manifest-threshold": "1 mb"}
    for n in names[1:]:
        options[f"file-index.bitmap.{n}.version"] = version
    _create(java, tmp_path, "t", names, ptypes, options)
    files_rows = [_typed_rows(s, 12) for s in range(3)]
    for rows in files_rows:
        if writer == "java":
            java.call("write", warehouse=str(tmp_path), table=f"{DB}.t", commits=[{"rows": rows}])
        else:
            _ours_write(tmp_path, "t", rows)
    files = _java_files(java, tmp_path, "t")
    assert len(files) == 3 and all(f["embedded_index"] for f in files)
    every = [r for rows in files_rows for r in rows]
    asked_before = _core.bitmap_selection_stats()
    for ci in range(1, len(names)):
        value = next(r[ci] for r in files_rows[1] if r[ci] is not None)
        want = sorted(r[0] for r in every if r[ci] == value)
        flt = {"op": "equal", "field": names[ci], "value": value}
        if writer == "ours":
            holding = sum(1 for rows in files_rows if any(r[ci] == value for r in rows))
            kept = _java_files(java, tmp_path, "t", flt)
            assert holding <= len(kept), names[ci]
            if jv.root(ptypes[ci]) in ("TINYINT", "SMALLINT"):
                continue  # the jar's Parquet row-group filter fails on a Byte / Short literal
            got = java.call("read", warehouse=str(tmp_path), table=f"{DB}.t", filter=flt,
                            projection=["id", names[ci]])["rows"]
            # Java drops the rows our bitmap rules out (and filters nothing else here)
            assert sorted(r[0] for r in got) == want, (names[ci], got)
        else:
            t = CatalogFactory.create({"warehouse": str(tmp_path)}).get_table(f"{DB}.t")
            rb = t.new_read_builder().with_filter(
                t.new_read_builder().new_predicate_builder().equal(names[ci], jv.to_arrow(
                    [[value]], [names[ci]], [t.arrow_schema.field(names[ci]).type]).column(0)[0].as_py()))
            splits = rb.new_scan().plan().splits()
            got = rb.new_read().to_arrow(splits).column("id").to_pylist()
            assert sorted(got) == want, names[ci]
    if writer == "java":
        # our raw reads read only the rows Java's bitmaps select (paimon-behaviour.md §6.3a)
        asked, of = (a - b for a, b in zip(_core.bitmap_selection_stats(), asked_before))
        assert 0 < asked < of
    # nulls: IS NULL keeps only files holding a null of that column
    for ci in range(1, len(names)):
        holding = sum(1 for rows in files_rows if any(r[ci] is None for r in rows))
        if writer == "ours":
            kept = _java_files(java, tmp_path, "t", {"op": "is_null", "field": names[ci]})
            assert len(kept) == holding, names[ci]


def test_bitmap_files_skipped_both_ways(java, tmp_path):
    """The ids table with bitmaps: Java's scan skips our files by them, ours skips Java's."""
    for writer in ("java", "ours"):
        name = f"b_{writer}"
        _create(java, tmp_path, name, ["id", "s"], ["BIGINT", "STRING"],
                {"file-index.bitmap.columns": "id,s", "file-index.in-manifest-threshold": "1 mb",
                 "file-index.bitmap.id.version": "1", "file-index.bitmap.s.version": "1"})
        for c in range(4):
            rows = [[c + 4 * j, f"s{c + 4 * j}"] for j in range(25)] + ([[None, None]] if c == 2 else [])
            if writer == "java":
                java.call("write", warehouse=str(tmp_path), table=f"{DB}.{name}", commits=[{"rows": rows}])
            else:
                _ours_write(tmp_path, name, rows)
        if writer == "ours":
            assert len(_java_files(java, tmp_path, name, EQ_8)) == 1
            assert len(_java_files(java, tmp_path, name, {"op": "equal", "field": "s", "value": "s5x"})) == 0
            assert len(_java_files(java, tmp_path, name, {"op": "is_null", "field": "s"})) == 1
            got = java.call("read", warehouse=str(tmp_path), table=f"{DB}.{name}", filter=EQ_8)["rows"]
            assert got == [[8, "s8"]]
        else:
            n, got = _ours_plan(tmp_path, name, "id = 8")
            assert n == 1 and got == [[8, "s8"]]
            assert _ours_plan(tmp_path, name, "s IN ('s5x', 's9x')")[0] == 0
            n, got = _ours_plan(tmp_path, name, "s IS NULL")
            assert n == 1 and got == [[None, None]]
            n, _ = _ours_plan(tmp_path, name, "id NOT IN (2, 6)")
            assert n == 4
