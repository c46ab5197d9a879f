"""Compaction against Java Paimon (issue #11): Java reads what paimon_rs compacted (by
``Table.compact`` and by its writers), paimon_rs reads what Java compacted, and histories mixing
both compact on top of each other."""

from __future__ import annotations

from typing import Dict, List

import pyarrow as pa
import pytest

from paimon_rs import CatalogFactory, Schema

pytestmark = pytest.mark.java

SCHEMA = pa.schema([pa.field("id", pa.int32(), nullable=False), ("v", pa.string())])
MAX_LEVEL = 5

ENGINES: Dict[str, Dict[str, str]] = {
    "deduplicate": {},
    "partial-update": {"merge-engine": "partial-update"},
    "first-row": {"merge-engine": "first-row"},
}


def _table(wh: str, name: str, options: Dict[str, str]):
    cat = CatalogFactory.create({"warehouse": wh})
    cat.create_database("db", True)
    cat.create_table(f"db.{name}", Schema.from_pyarrow_schema(SCHEMA, primary_keys=["id"],
                                                              options={"bucket": "2", **options}), False)
    return cat.get_table(f"db.{name}")


def _write(t, ids: List[int], tag: str) -> None:
    wb = t.new_batch_write_builder()
    w, c = wb.new_write(), wb.new_commit()
    try:
        w.write_arrow(pa.table({"id": ids, "v": [f"{tag}{i}" for i in ids]}, schema=SCHEMA))
        c.commit(w.prepare_commit())
    finally:
        w.close()
        c.close()


def _read(t) -> List[tuple]:
    rb = t.new_read_builder()
    got = rb.new_read().to_arrow(rb.new_scan().plan().splits())
    return sorted(zip(got.column("id").to_pylist(), got.column("v").to_pylist()))


def _java_read(java, wh: str, name: str) -> List[tuple]:
    return sorted((r[0], r[1]) for r in java.call("read", warehouse=wh, table=f"db.{name}")["rows"])


@pytest.mark.parametrize("engine", list(ENGINES))
def test_java_reads_what_we_compacted(java, tmp_path, engine):
    wh, name = str(tmp_path / "wh"), engine.replace("-", "_")
    t = _table(wh, name, {"write-only": "true", **ENGINES[engine]})
    for i in range(4):
        _write(t, list(range(i * 5, i * 5 + 12)), f"c{i}_")
    assert t.compact() is not None
    expected = _read(t)
    assert expected
    assert _java_read(java, wh, name) == expected
    levels = {f["level"] for f in java.call("files", warehouse=wh, table=f"db.{name}")}
    assert levels == {MAX_LEVEL}


def test_java_reads_what_our_writers_compacted(java, tmp_path):
    wh = str(tmp_path / "wh")
    t = _table(wh, "auto", {"num-sorted-run.compaction-trigger": "3"})
    for i in range(8):
        _write(t, list(range(i * 3, i * 3 + 10)), f"c{i}_")
    expected = _read(t)
    assert _java_read(java, wh, "auto") == expected
    assert any(f["level"] > 0 for f in java.call("files", warehouse=wh, table="db.auto"))


def test_mixed_histories_compact_on_top_of_each_other(java, tmp_path):
    wh = str(tmp_path / "wh")
    # write-only for this process only: Java's compaction job refuses a write-only table
    t = _table(wh, "mixed", {}).copy({"write-only": "true"})
    model: Dict[int, str] = {}
    for i in range(3):
        ids = list(range(i * 4, i * 4 + 10))
        _write(t, ids, f"rs{i}_")
        model.update({k: f"rs{i}_{k}" for k in ids})
    # Java writes and compacts fully on top of our level-0 files
    java.call("write", warehouse=wh, table="db.mixed", options={"write-only": "true"},
              commits=[{"rows": [[1, "java1"], [100, "java100"]], "kinds": None}])
    model.update({1: "java1", 100: "java100"})
    java.call("compact", warehouse=wh, table="db.mixed", full=True)
    t = CatalogFactory.create({"warehouse": wh}).get_table("db.mixed")
    expected = sorted(model.items())
    assert _read(t) == expected
    # we write on top of Java's compacted files and compact (picked, then full)
    _write(t, [2, 3, 200], "rs9_")
    model.update({k: f"rs9_{k}" for k in (2, 3, 200)})
    t.compact(full=False)
    assert t.compact() is not None
    expected = sorted(model.items())
    assert _read(t) == expected
    assert _java_read(java, wh, "mixed") == expected
    # and Java compacts what we compacted
    java.call("write", warehouse=wh, table="db.mixed", commits=[{"rows": [[3, "java3"]], "kinds": None}])
    java.call("compact", warehouse=wh, table="db.mixed", full=True)
    model[3] = "java3"
    assert _read(CatalogFactory.create({"warehouse": wh}).get_table("db.mixed")) == sorted(model.items())
