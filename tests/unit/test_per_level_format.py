"""Formats and codecs per LSM level and of changelog files (issue #29): ``file.format.per.level``,
``file.compression.per.level``, ``changelog-file.format`` / ``.compression`` / ``.stats-mode``.

Every data file of a primary-key table is written in its level's format (flushes at level 0,
compactions at their output level), changelog files in ``changelog-file.format`` (else their
level's); the manifest's file names carry the format (``t$files``), the files its codec, and
reads merge buckets that mix formats. Append tables write every file in ``file.format`` (Java's
append writers ignore the per-level options). Java reads and continues such tables:
tests/compat/test_per_level_format_java.py."""

from __future__ import annotations

import os
from typing import Dict, List

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import paimon_rs
from paimon_rs import Schema

from unit_helpers import read, write

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string()), ("n", pa.int64())])


def make(catalog, name: str, options: Dict[str, str], pk: bool = True):
    opts = {"bucket": "1" if pk else "-1", **options}
    catalog.create_table(f"db.{name}", Schema.from_pyarrow_schema(
        SCHEMA, primary_keys=["id"] if pk else None, options=opts), False)
    return catalog.get_table(f"db.{name}")


def batch(ids: List[int], tag: str) -> pa.Table:
    return pa.table({"id": ids, "v": [f"{tag}{i}" for i in ids], "n": [i * 3 for i in ids]}, schema=SCHEMA)


def model_rows(model: Dict[int, str]) -> List[dict]:
    return [{"id": k, "v": f"{t}{k}", "n": k * 3} for k, t in sorted(model.items())]


def rows(t) -> List[dict]:
    return sorted(read(t).to_pylist(), key=lambda r: r["id"])


def files(catalog, name: str) -> List[dict]:
    """The live data files of ``t$files``: (level, file_format, file_path)."""
    return catalog.get_table(f"db.{name}$files").to_arrow().to_pylist()


def local(path: str) -> str:
    return path.removeprefix("file:")


def changelog_files(t) -> List[str]:
    out = []
    for root, _, names in os.walk(local(t.table_path)):
        out += [os.path.join(root, n) for n in names if n.startswith("changelog-")]
    return sorted(out)


def avro_codec(path: str) -> bytes:
    with open(local(path), "rb") as fh:
        head = fh.read(4096)
    assert head.startswith(b"Obj\x01")
    i = head.index(b"\x14avro.codec") + len(b"\x14avro.codec")
    n = head[i] // 2
    return head[i + 1:i + 1 + n]


def expect_format(level: int, per_level: Dict[int, str], default: str = "parquet") -> str:
    return per_level.get(level, default)


def test_each_level_is_written_in_its_format_and_codec(catalog):
    """Level 0 Avro (snappy), the max level ORC (lz4), other levels Parquet (zstd); a bucket
    holding Avro level-0 files over an ORC max level merges on read to the model, and so after
    the compactions that follow."""
    per_level = {0: "avro", 5: "orc"}
    t = make(catalog, "lv", {"file.format.per.level": "0:avro,5:orc",
                             "file.compression.per.level": "0:snappy,5:lz4"})
    model: Dict[int, str] = {}

    def commit(c: int) -> None:
        ids = list(range(c * 20, c * 20 + 40))
        write(t, batch(ids, f"c{c}-"))
        model.update({i: f"c{c}-" for i in ids})

    def check() -> List[dict]:
        fs = files(catalog, "lv")
        for f in fs:
            want = expect_format(f["level"], per_level)
            assert f["file_format"] == want and f["file_path"].endswith(f".{want}"), f
            if want == "avro":
                assert avro_codec(f["file_path"]) == b"snappy"
            if want == "parquet":
                meta = pq.ParquetFile(local(f["file_path"])).metadata
                assert meta.row_group(0).column(0).compression == "ZSTD"
        assert rows(t) == model_rows(model)
        return fs

    for c in range(3):
        commit(c)
    t.compact(full=True)
    for c in range(3, 5):
        commit(c)
    t.delete("id < 10")
    model = {k: v for k, v in model.items() if k >= 10}
    assert {f["level"] for f in check()} == {0, 5}
    for c in range(6, 12):  # the writer's own compactions
        commit(c)
        check()
    t.compact(full=True)
    assert {(f["level"], f["file_format"]) for f in check()} == {(5, "orc")}


def test_a_level_named_only_by_its_codec_keeps_file_format(catalog):
    t = make(catalog, "codec", {"file.compression.per.level": "0:none", "file.format": "avro",
                                "write-only": "true"})
    write(t, batch(list(range(10)), "a"))
    write(t, batch(list(range(5)), "b"))
    fs = files(catalog, "codec")
    assert {(f["level"], f["file_format"], avro_codec(f["file_path"])) for f in fs} == {(0, "avro", b"null")}
    t.compact(full=True)  # two overlapping files: rewritten at level 5 in its codec
    (f,) = files(catalog, "codec")
    assert (f["level"], f["file_format"]) == (5, "avro") and avro_codec(f["file_path"]) == b"zstandard"
    assert rows(t) == model_rows({i: "b" if i < 5 else "a" for i in range(10)})


def test_input_changelog_files_have_their_own_format(catalog):
    t = make(catalog, "cin", {"changelog-producer": "input", "file.format.per.level": "0:avro",
                              "changelog-file.format": "orc", "changelog-file.compression": "snappy",
                              "changelog-file.stats-mode": "none", "write-only": "true"})
    write(t, batch([1, 2, 3], "a"))
    write(t, batch([2], "b"))
    cl = changelog_files(t)
    assert len(cl) == 2 and all(p.endswith(".orc") for p in cl), cl
    assert {f["file_format"] for f in files(catalog, "cin")} == {"avro"}
    got = t.changelog(0).to_pydict()
    assert list(zip(got["rowkind"], got["id"], got["v"])) == [
        ("+I", 1, "a1"), ("+I", 2, "a2"), ("+I", 3, "a3"), ("+I", 2, "b2")]
    assert rows(t) == model_rows({1: "a", 2: "b", 3: "a"})


def test_changelog_files_without_their_options_follow_the_level(catalog):
    """A lookup table: changelog files are written by compactions at their output level, in that
    level's format; a level-0 Avro file upgraded to a Parquet level is rewritten, never moved
    (Java's LookupMergeTreeCompactRewriter), so no Avro file sits above level 0."""
    t = make(catalog, "clk", {"changelog-producer": "lookup", "file.format.per.level": "0:avro,5:orc"})
    model: Dict[int, str] = {}
    for c in range(4):
        ids = list(range(c * 5, c * 5 + 10))
        write(t, batch(ids, f"c{c}-"))
        model.update({i: f"c{c}-" for i in ids})
    fs = files(catalog, "clk")
    assert fs and all(f["level"] > 0 and f["file_format"] == expect_format(f["level"], {5: "orc"})
                      for f in fs), fs
    cl = changelog_files(t)
    assert cl and all(p.endswith(".orc") for p in cl), cl
    got = t.changelog(0).to_pydict()
    last: Dict[int, str] = {}
    for kind, k, v in zip(got["rowkind"], got["id"], got["v"]):
        if kind in ("+I", "+U"):
            last[k] = v
    assert last == {k: f"{v}{k}" for k, v in model.items()}
    assert rows(t) == model_rows(model)


def test_deletion_vector_table_with_avro_level_zero(catalog):
    t = make(catalog, "dv", {"deletion-vectors.enabled": "true", "file.format.per.level": "0:avro",
                             "file.compression.per.level": "0:deflate"})
    model: Dict[int, str] = {}
    for c in range(5):
        ids = list(range(c * 7, c * 7 + 15))
        write(t, batch(ids, f"c{c}-"))
        model.update({i: f"c{c}-" for i in ids})
    t.delete("id IN (0, 4, 8, 12, 16, 20) OR v = 'c4-40'")
    model = {k: v for k, v in model.items() if k not in (0, 4, 8, 12, 16, 20, 40)}
    assert rows(t) == model_rows(model)
    fs = files(catalog, "dv")
    assert all(f["file_format"] == ("avro" if f["level"] == 0 else "parquet") for f in fs), fs
    assert any(f["level"] > 0 for f in fs)
    # merge-on-read sees the level-0 Avro files too
    mor = t.copy({"deletion-vectors.merge-on-read": "true"})
    assert rows(mor) == model_rows(model)


def test_append_tables_write_file_format_at_every_file(catalog):
    """Java's append writers take ``file.format`` / ``file.compression`` for every file."""
    t = make(catalog, "ap", {"file.format.per.level": "0:avro", "file.compression.per.level": "0:snappy",
                             "changelog-file.format": "orc"}, pk=False)
    for c in range(6):
        write(t, batch(list(range(c * 3, c * 3 + 3)), "a"))
    t.compact(full=True)
    fs = files(catalog, "ap")
    assert fs and {f["file_format"] for f in fs} == {"parquet"}
    assert len(rows(t)) == 18


@pytest.mark.parametrize("options, error, needle", [
    ({"file.format.per.level": "0:csv"}, paimon_rs.UnsupportedError, "'file.format.per.level (level 0)' = 'csv'"),
    ({"file.format.per.level": "0avro"}, paimon_rs.InvalidArgumentError, "'file.format.per.level'"),
    ({"file.format.per.level": "0:avro,0:orc"}, paimon_rs.InvalidArgumentError, "Duplicate key 0"),
    ({"file.compression.per.level": "x:lz4"}, paimon_rs.InvalidArgumentError, "level 'x'"),
    ({"file.format.per.level": "0:avro", "file.compression.per.level": "0:lz4"},
     paimon_rs.UnsupportedError, "'file.compression.per.level (level 0)' = 'lz4' for Avro"),
    ({"changelog-file.format": "json"}, paimon_rs.UnsupportedError, "'changelog-file.format' = 'json'"),
    ({"changelog-file.compression": "brotli"}, paimon_rs.UnsupportedError, "'changelog-file.compression'"),
    ({"changelog-file.stats-mode": "some"}, paimon_rs.InvalidArgumentError, "'changelog-file.stats-mode'"),
])
def test_bad_values_are_refused_naming_the_option(catalog, options, error, needle):
    with pytest.raises(error) as e:
        make(catalog, "bad", options)
    assert needle in str(e.value)


def test_options_are_exposed(catalog):
    t = make(catalog, "ex", {"file.format.per.level": "0:avro, 3:orc", "changelog-file.format": "avro",
                             "file.compression.per.level": "0:snappy"})
    o = t.options
    assert o.file_format_per_level() == {"0": "avro", "3": "orc"}
    assert o.file_compression_per_level() == {"0": "snappy"}
    assert o.changelog_file_format() == "avro"
    assert o.get(paimon_rs.options.CoreOptions.FILE_FORMAT_PER_LEVEL) == "0:avro, 3:orc"


# a history of upserts, deletes and compactions of a table with three formats, against a dict
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.one_of(
    st.tuples(st.just("w"), st.lists(st.integers(0, 60), min_size=1, max_size=30), st.integers(0, 9)),
    st.tuples(st.just("d"), st.integers(0, 60), st.just(0)),
    st.tuples(st.just("c"), st.booleans(), st.just(0)),
), min_size=1, max_size=10))
def test_histories_read_as_the_model(tmp_path_factory, steps):
    cat = paimon_rs.CatalogFactory.create({"warehouse": str(tmp_path_factory.mktemp("h"))})
    cat.create_database("db", True)
    t = make(cat, "h", {"file.format.per.level": "0:avro,2:orc", "file.compression.per.level": "1:snappy",
                        "num-sorted-run.compaction-trigger": "2", "num-levels": "4"})
    model: Dict[int, str] = {}
    for kind, arg, tag in steps:
        if kind == "w":
            ids = sorted(set(arg))
            write(t, batch(ids, f"t{tag}-"))
            model.update({i: f"t{tag}-" for i in ids})
        elif kind == "d":
            t.delete(f"id < {arg}")
            model = {k: v for k, v in model.items() if k >= arg}
        else:
            t.compact(full=arg)
    assert rows(t) == model_rows(model)
    per_level = {0: "avro", 2: "orc"}
    for f in files(cat, "h"):
        # written at its level, or upgraded from a lower one without a rewrite (a lone file is
        # only relabelled, keeping its format, as Java's MergeTreeCompactTask.upgrade)
        assert f["file_format"] in {expect_format(lv, per_level) for lv in range(f["level"] + 1)}, f


def test_every_format_carries_the_bloom_filter_index(catalog):
    """Files of every level format carry the file index; the scan of a deletion-vector table
    (files above level 0 hold final rows) skips every file for a value no file holds."""
    t = make(catalog, "ix", {"deletion-vectors.enabled": "true", "file.format.per.level": "0:avro,4:orc",
                             "file-index.bloom-filter.columns": "v", "file-index.bloom-filter.v.items": "100"})
    for c in range(4):
        write(t, batch(list(range(c, 100, 4)), f"c{c}-"))
    t.compact(full=True)
    write(t, batch([1, 2, 3], "z"))
    t.compact(full=False)
    fs = files(catalog, "ix")
    assert {f["file_format"] for f in fs} <= {"orc", "parquet"} and len(fs) >= 2, fs

    def plan(flt: str):
        rb = t.new_read_builder().with_filter(flt)
        splits = rb.new_scan().plan().splits()
        return sum(len(s.file_paths) for s in splits), rb.new_read().to_arrow(splits).to_pylist()

    assert plan("v = 'absent'") == (0, [])
    assert plan("v = 'z2'")[1] == [{"id": 2, "v": "z2", "n": 6}]
    assert plan("v = 'c1-5'")[1] == [{"id": 5, "v": "c1-5", "n": 15}]
