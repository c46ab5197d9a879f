"""Deletion vectors on append tables against Java Paimon 1.0 (issue 27), both ways: Java reads
our table after our deletes, merges and compaction row for row; we read Java's after Java's
deletes (Java's `AppendDeletionFileMaintainer`s, as Spark's DELETE writes them); mixed
histories (Java deletes, we delete, Java reads; we delete, Java deletes, we read). Bucket-
unaware (index files of a partition under bucket 0) and fixed-bucket tables. Java 1.0 reads
32-bit vectors only (`deletion-vectors.bitmap64` is newer): the 64-bit ones are checked by the
unit tests."""

from __future__ import annotations

from typing import List, Tuple

import pyarrow as pa
import pytest

from paimon_rs import CatalogFactory, Schema

pytestmark = pytest.mark.java

SCHEMA = pa.schema([pa.field("id", pa.int32(), nullable=False), ("v", pa.string()), ("dt", pa.string())])

LAYOUTS = [
    ({"bucket": "-1"}, ["dt"]),
    ({"bucket": "-1"}, []),
    ({"bucket": "2", "bucket-key": "id"}, ["dt"]),
]


def _table(tmp_path, options, parts):
    wh = str(tmp_path / "wh")
    cat = CatalogFactory.create({"warehouse": wh})
    cat.create_database("db", True)
    options = {"deletion-vectors.enabled": "true", **options}
    cat.create_table("db.a", Schema.from_pyarrow_schema(SCHEMA, partition_keys=parts, options=options), False)
    return wh, cat


def _rows(ids: List[int], tag: str = "v") -> pa.Table:
    return pa.table({"id": ids, "v": [f"{tag}{i}" for i in ids], "dt": ["a" if i % 2 else "b" for i in ids]},
                    schema=SCHEMA)


def _ours(cat) -> List[Tuple[int, str, str]]:
    return sorted((r["id"], r["v"], r["dt"]) for r in cat.get_table("db.a").to_arrow().to_pylist())


def _java(java, wh) -> List[Tuple[int, str, str]]:
    return sorted((r[0], r[1], r[2]) for r in java.call("read", warehouse=wh, table="db.a")["rows"])


def _fill(cat):
    t = cat.get_table("db.a")
    for c in range(3):
        t.write(_rows(list(range(c * 20, c * 20 + 20))))
    return t


@pytest.mark.parametrize("options,parts", LAYOUTS)
def test_java_reads_our_deletes_merges_and_compaction(java, tmp_path, options, parts):
    wh, cat = _table(tmp_path, options, parts)
    t = _fill(cat)
    model = {i: (f"v{i}", "a" if i % 2 else "b") for i in range(60)}
    assert t.delete("id < 5 OR id IN (25, 26, 47)").num_deleted_rows == 8
    for i in [0, 1, 2, 3, 4, 25, 26, 47]:
        model.pop(i)
    expect = sorted((i, v, d) for i, (v, d) in model.items())
    assert _ours(cat) == expect
    assert _java(java, wh) == expect
    src = _rows([30, 31, 100], "m")
    (t.merge(src, on=["id", "dt"]).when_matched_update_all().when_not_matched_insert_all().execute())
    for i in [30, 31, 100]:
        model[i] = (f"m{i}", "a" if i % 2 else "b")
    expect = sorted((i, v, d) for i, (v, d) in model.items())
    assert _java(java, wh) == expect
    assert t.compact(full=True) is not None
    assert _ours(cat) == expect
    assert _java(java, wh) == expect
    # Java writes and deletes on top of our compacted table
    java.call("dv_delete", warehouse=wh, table="db.a", filter={"op": "in", "field": "id", "values": [6, 31]})
    for i in [6, 31]:
        model.pop(i)
    expect = sorted((i, v, d) for i, (v, d) in model.items())
    assert _ours(cat) == expect
    assert _java(java, wh) == expect


@pytest.mark.parametrize("options,parts", LAYOUTS)
def test_we_read_javas_deletes_and_mixed_histories(java, tmp_path, options, parts):
    wh, cat = _table(tmp_path, options, parts)
    _fill(cat)
    model = {i: (f"v{i}", "a" if i % 2 else "b") for i in range(60)}
    r = java.call("dv_delete", warehouse=wh, table="db.a",
                  filter={"op": "between", "field": "id", "low": 10, "high": 14})
    assert r["deleted"] == 5
    for i in range(10, 15):
        model.pop(i)
    expect = sorted((i, v, d) for i, (v, d) in model.items())
    assert _ours(cat) == expect
    # we delete more rows of the same files (their vectors grow), then Java reads
    t = cat.get_table("db.a")
    assert t.delete("id IN (9, 10, 15, 40)").num_deleted_rows == 3
    for i in [9, 15, 40]:
        model.pop(i)
    expect = sorted((i, v, d) for i, (v, d) in model.items())
    assert _ours(cat) == expect
    assert _java(java, wh) == expect
    # Java again on top of ours
    java.call("dv_delete", warehouse=wh, table="db.a", filter={"op": "in", "field": "id", "values": [16, 41, 59]})
    for i in [16, 41, 59]:
        model.pop(i)
    expect = sorted((i, v, d) for i, (v, d) in model.items())
    assert _ours(cat) == expect
    assert _java(java, wh) == expect
    # our compaction of Java's vectors
    assert cat.get_table("db.a").compact(full=True) is not None
    assert _ours(cat) == expect
    assert _java(java, wh) == expect


def test_our_writers_compact_with_vectors_and_java_continues(java, tmp_path):
    """A bucketed table our writers compact with their buckets' deletion vectors (issue 27),
    written in a loop with deletes: Java reads every state; Java's writer (which compacts with
    the vectors it restores from our index files) and Java's deletes continue it, and ours
    again after Java's."""
    wh, cat = _table(tmp_path, {"bucket": "2", "bucket-key": "id", "compaction.min.file-num": "3"}, ["dt"])
    t = cat.get_table("db.a")
    model = {}
    for c in range(6):
        ids = list(range(c * 10, c * 10 + 10))
        t.write(_rows(ids))
        model.update({i: (f"v{i}", "a" if i % 2 else "b") for i in ids})
        gone = [i for i in model if i % 5 == c % 5][:2]
        t.delete(f"id IN ({', '.join(map(str, gone))})")
        for i in gone:
            model.pop(i)
        expect = sorted((i, v, d) for i, (v, d) in model.items())
        assert _ours(cat) == expect
        assert _java(java, wh) == expect, f"round {c}"
    kinds = cat.get_table("db.a").snapshots().column("commit_kind").to_pylist()
    assert "COMPACT" in kinds, "our writers compacted"
    assert len(java.call("files", warehouse=wh, table="db.a")) <= 2 * 2 * 3
    # Java's writer and Java's deletes on top of ours
    for c in range(3):
        ids = list(range(100 + c * 10, 110 + c * 10))
        java.call("write", warehouse=wh, table="db.a",
                  commits=[{"rows": [[i, f"j{i}", "a" if i % 2 else "b"] for i in ids], "kinds": None}])
        model.update({i: (f"j{i}", "a" if i % 2 else "b") for i in ids})
        java.call("dv_delete", warehouse=wh, table="db.a",
                  filter={"op": "in", "field": "id", "values": [ids[0], 50 + c]})
        for i in [ids[0], 50 + c]:
            model.pop(i, None)
        expect = sorted((i, v, d) for i, (v, d) in model.items())
        assert _ours(cat) == expect, f"java round {c}"
        assert _java(java, wh) == expect, f"java round {c}"
    # ours again, compacting what Java wrote and deleted
    for c in range(3):
        ids = list(range(200 + c * 10, 210 + c * 10))
        cat.get_table("db.a").write(_rows(ids))
        model.update({i: (f"v{i}", "a" if i % 2 else "b") for i in ids})
        expect = sorted((i, v, d) for i, (v, d) in model.items())
        assert _ours(cat) == expect
        assert _java(java, wh) == expect
    assert len(java.call("files", warehouse=wh, table="db.a")) <= 2 * 2 * 3
