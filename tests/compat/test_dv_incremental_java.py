"""Incremental (delta) reads of deletion-vector tables (issue 27), checked through Java Paimon.

Newer Java (`IncrementalDeltaStartingScanner`, and `AbstractBatchTableScan` no longer skipping
level 0 for incremental scans) reads, between two snapshots, the files the APPEND snapshots
added, without deletion vectors: the same rows as the same history written into a table without
deletion vectors. Java 1.0 cannot be the reference here (paimon-behaviour.md §9.7): its batch
scan keeps only files above level 0 for a primary-key deletion-vector table (an empty delta),
and its delta read of an append table with deletion vectors fails in `DeletionFile.factory`.
So each test writes one history twice with our writer, into a deletion-vector table and a twin
without them, and compares our delta reads of the first with Java's of the twin.
"""

from __future__ import annotations

from typing import Any, Dict, List, Tuple

import pyarrow as pa
import pytest

from paimon_rs import CatalogFactory, Schema

pytestmark = pytest.mark.java

SCHEMA = pa.schema([pa.field("id", pa.int32(), nullable=False), ("v", pa.string())])


def _tables(tmp_path, options: Dict[str, str], pk: bool):
    wh = str(tmp_path / "wh")
    cat = CatalogFactory.create({"warehouse": wh})
    cat.create_database("db", True)
    for name, dv in (("dv", "true"), ("twin", "false")):
        cat.create_table(f"db.{name}", Schema.from_pyarrow_schema(
            SCHEMA, primary_keys=["id"] if pk else None,
            options={"deletion-vectors.enabled": dv, **options}), False)
    return wh, cat


def _rows(ids: List[int], tag: str) -> pa.Table:
    return pa.table({"id": ids, "v": [f"{tag}{i}" for i in ids]}, schema=SCHEMA)


def _ours(cat, name: str, rng: str) -> List[Tuple[Any, ...]]:
    t = cat.get_table(f"db.{name}").copy({"incremental-between": rng})
    rb = t.new_read_builder()
    d = rb.new_read().to_arrow(rb.new_scan().plan().splits()).to_pylist()
    return sorted(tuple(r.values()) for r in d)


def _java(java, wh, name: str, rng: str) -> List[Tuple[Any, ...]]:
    r = java.call("read", warehouse=wh, table=name, options={"incremental-between": rng})
    return sorted(tuple(x) for x in r["rows"])


def _history(cat, steps) -> Dict[str, List[int]]:
    """Run ``steps`` (callables of a table) on both tables; the snapshot ids after each step."""
    ids: Dict[str, List[int]] = {"dv": [0], "twin": [0]}
    for step in steps:
        for name in ids:
            step(cat.get_table(f"db.{name}"))
            ids[name].append(cat.get_table(f"db.{name}").latest_snapshot_id())
    return ids


def _check_ranges(java, wh, cat, ids, audit: bool) -> int:
    n = 0
    steps = len(ids["dv"])
    for a in range(steps):
        for b in range(a + 1, steps):
            ours = _ours(cat, "dv", f"{ids['dv'][a]},{ids['dv'][b]}")
            twin = "db.twin$audit_log" if audit else "db.twin"
            theirs = _java(java, wh, twin, f"{ids['twin'][a]},{ids['twin'][b]}")
            assert ours == theirs, (a, b)
            n += len(ours)
    return n


@pytest.mark.parametrize("options", [{"bucket": "-1"}, {"bucket": "2", "bucket-key": "id"}])
def test_append_delta_read_keeps_rows_deleted_later(java, tmp_path, options):
    wh, cat = _tables(tmp_path, options, pk=False)
    steps = [lambda t, c=c: t.write(_rows(list(range(c * 10, c * 10 + 10)), f"c{c}")) for c in range(3)]
    steps.append(lambda t: t.delete("id IN (3, 15, 27)"))
    steps.append(lambda t: t.write(_rows([100, 101], "c3")))
    ids = _history(cat, steps)
    assert _check_ranges(java, wh, cat, ids, audit=False) > 0
    # the rows deleted after they were appended are in the delta, as Java's
    full = _ours(cat, "dv", f"0,{ids['dv'][-1]}")
    assert (3, "c03") in full and len(full) == 32
    # while a plain read does not show them
    assert len(cat.get_table("db.dv").to_arrow()) == 29


def test_pk_delta_read_is_the_level0_records_of_append_snapshots(java, tmp_path):
    wh, cat = _tables(tmp_path, {"bucket": "2"}, pk=True)
    steps = [
        lambda t: t.write(_rows(list(range(10)), "a")),
        lambda t: t.write(_rows([1, 2, 11], "b")),
        lambda t: t.delete("id IN (4, 11)"),
        lambda t: t.write(_rows([2, 4, 12], "c")),
    ]
    ids = _history(cat, steps)
    # the deletion-vector table compacts after each commit (APPEND + COMPACT snapshots)
    assert ids["dv"][-1] > ids["twin"][-1]
    assert _check_ranges(java, wh, cat, ids, audit=True) > 0
    rng = f"{ids['dv'][2]},{ids['dv'][3]}"
    assert _ours(cat, "dv", rng) == [("-D", 4, "a4"), ("-D", 11, "b11")]


def test_pk_read_between_tags_is_the_key_diff_of_javas_reads_at_the_tags(java, tmp_path):
    """Between two tags of a primary-key deletion-vector table paimon_rs diffs the tags' rows by
    key (newer Java's `IncrementalDiffSplitRead`, paimon-behaviour.md §9.7). Java 1.0 reads a tag
    range as the end tag's new files, so it is the reference only for what it reads right: the
    table at each tag (`scan.tag-name`), whose key diff must be our read."""
    wh, cat = _tables(tmp_path, {"bucket": "2"}, pk=True)
    t = cat.get_table("db.dv")
    t.write(_rows(list(range(100)), "a"))
    t.create_tag("t1")
    t.write(_rows([1, 2, 150], "b"))
    t.delete("id IN (3, 4, 150)")
    t.create_tag("t2")
    t.write(_rows([2, 5], "c"))
    t.create_tag("t3")

    def at(tag: str) -> Dict[int, str]:
        r = java.call("read", warehouse=wh, table="db.dv", options={"scan.tag-name": tag})
        return {i: v for i, v in r["rows"]}

    tags = ["t1", "t2", "t3"]
    for i, a in enumerate(tags):
        for b in tags[i + 1:]:
            before, after = at(a), at(b)
            want = sorted([("-D", k, v) for k, v in before.items() if k not in after]
                          + [("+I", k, v) for k, v in after.items() if before.get(k) != v])
            assert _ours(cat, "dv", f"{a},{b}") == want, (a, b)
            assert want
