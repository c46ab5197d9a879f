"""Formats and codecs per LSM level against Java Paimon (issue #29): a primary-key table with
``file.format.per.level = 0:avro,5:orc``, ``file.compression.per.level = 0:zstd,5:lz4`` and
``file.compression = snappy`` (so Parquet levels are snappy, level 0 zstandard Avro: the 1.0
bundle's shaded Avro has no snappy, and Java 1.0 gives an Avro file a codec other than zstd from
``avro.codec`` (default snappy) rather than the codec asked for, docs/formats.md) written
by one engine, read and continued by the other, each engine's files in its level's format.

The bundled Java jar is Paimon 1.0-SNAPSHOT: it has both per-level options but not
``changelog-file.format`` / ``.compression`` / ``.stats-mode`` (Paimon 1.1), so those are
tested against paimon_rs alone (tests/unit/test_per_level_format.py); Java 1.0 reads the
changelog files they make like any other (their format is their extension)."""

from __future__ import annotations

import os
from typing import Dict, List

import pyarrow as pa
import pytest

from paimon_rs import CatalogFactory

from java_env import JavaPaimon

pytestmark = pytest.mark.java

DB = "db"
FIELDS = [{"name": "id", "type": "BIGINT NOT NULL"}, {"name": "v", "type": "STRING"},
          {"name": "n", "type": "BIGINT"}]
OPTIONS = {"bucket": "2", "file.format.per.level": "0:avro,5:orc", "file.compression.per.level": "0:zstd,5:lz4",
           "file.compression": "snappy"}
PER_LEVEL = {0: "avro", 5: "orc"}


def _rows(ids: List[int], tag: str) -> List[list]:
    return [[i, f"{tag}{i}", i * 3] for i in ids]


def _create(java: JavaPaimon, wh, name: str, options: Dict[str, str]) -> None:
    java.call("create_table", warehouse=str(wh), table=f"{DB}.{name}", fields=FIELDS, primary_keys=["id"],
              partition_keys=[], table_options=options)


def _java_write(java: JavaPaimon, wh, name: str, rows: List[list], kinds=None) -> None:
    java.call("write", warehouse=str(wh), table=f"{DB}.{name}", commits=[{"rows": rows, "kinds": kinds}])


def _table(wh, name: str):
    return CatalogFactory.create({"warehouse": str(wh)}).get_table(f"{DB}.{name}")


def _ours_write(wh, name: str, rows: List[list]) -> None:
    t = _table(wh, name)
    w = t.new_batch_write_builder()
    tw, tc = w.new_write(), w.new_commit()
    tw.write_arrow(pa.table({"id": [r[0] for r in rows], "v": [r[1] for r in rows], "n": [r[2] for r in rows]},
                            schema=t.arrow_schema))
    tc.commit(tw.prepare_commit())
    tw.close()
    tc.close()


def _ours_read(wh, name: str) -> List[list]:
    t = _table(wh, name)
    rb = t.new_read_builder()
    got = rb.new_read().to_arrow(rb.new_scan().plan().splits()).to_pylist()
    return sorted([r["id"], r["v"], r["n"]] for r in got)


def _java_read(java: JavaPaimon, wh, name: str) -> List[list]:
    return sorted(java.call("read", warehouse=str(wh), table=f"{DB}.{name}")["rows"])


def _java_files(java: JavaPaimon, wh, name: str) -> List[dict]:
    return java.call("files", warehouse=str(wh), table=f"{DB}.{name}")


def _model(model: Dict[int, str]) -> List[list]:
    return sorted([k, f"{t}{k}", k * 3] for k, t in model.items())


def test_java_reads_and_continues_our_mixed_format_table(java, tmp_path):
    _create(java, tmp_path, "ours", OPTIONS)
    model: Dict[int, str] = {}
    for c in range(3):
        ids = list(range(c * 10, c * 10 + 25))
        _ours_write(tmp_path, "ours", _rows(ids, f"o{c}-"))
        model.update({i: f"o{c}-" for i in ids})
    _table(tmp_path, "ours").compact(full=True)
    _ours_write(tmp_path, "ours", _rows([1, 2, 100], "late-"))
    model.update({1: "late-", 2: "late-", 100: "late-"})
    files = _java_files(java, tmp_path, "ours")
    assert {(f["level"], f["file"].rsplit(".", 1)[1]) for f in files} == {(0, "avro"), (5, "orc")}
    assert _java_read(java, tmp_path, "ours") == _model(model)
    # Java continues: a write with deletes, a full compaction into ORC at level 5
    _java_write(java, tmp_path, "ours", _rows([3, 200], "j-") + _rows([4], "x"), ["+I", "+I", "-D"])
    model.update({3: "j-", 200: "j-"})
    del model[4]
    assert _ours_read(tmp_path, "ours") == _model(model)
    java.call("compact", warehouse=str(tmp_path), table=f"{DB}.ours", full=True)
    files = _java_files(java, tmp_path, "ours")
    assert files and all(f["level"] == 5 and f["file"].endswith(".orc") for f in files), files
    assert _ours_read(tmp_path, "ours") == _model(model)


def test_we_read_and_continue_javas_mixed_format_table(java, tmp_path):
    _create(java, tmp_path, "java", OPTIONS)
    model: Dict[int, str] = {}
    for c in range(3):
        ids = list(range(c * 10, c * 10 + 25))
        _java_write(java, tmp_path, "java", _rows(ids, f"j{c}-"))
        model.update({i: f"j{c}-" for i in ids})
    java.call("compact", warehouse=str(tmp_path), table=f"{DB}.java", full=True)
    _java_write(java, tmp_path, "java", _rows([5, 300], "jl-"))
    model.update({5: "jl-", 300: "jl-"})
    cat = CatalogFactory.create({"warehouse": str(tmp_path)})
    ours = {(f["level"], f["file_format"]) for f in cat.get_table(f"{DB}.java$files").to_arrow().to_pylist()}
    assert ours == {(0, "avro"), (5, "orc")}, "Java wrote each level in its format"
    assert _ours_read(tmp_path, "java") == _model(model)
    # we continue: our flush is Avro at level 0, our full compaction ORC
    t = _table(tmp_path, "java")
    w = t.new_batch_write_builder()
    tw, tc = w.new_write(), w.new_commit()
    tw.write_arrow(pa.table({"id": [6, 400], "v": ["r-6", "r-400"], "n": [18, 1200]}, schema=t.arrow_schema))
    tc.commit(tw.prepare_commit())
    tw.close()
    tc.close()
    model.update({6: "r-", 400: "r-"})
    assert _java_read(java, tmp_path, "java") == _model(model)
    t.compact(full=True)
    files = _java_files(java, tmp_path, "java")
    assert files and all(f["level"] == 5 and f["file"].endswith(".orc") for f in files), files
    assert _java_read(java, tmp_path, "java") == _model(model)
    assert _ours_read(tmp_path, "java") == _model(model)


def test_java_streams_our_changelog_files_in_their_own_format(java, tmp_path):
    """An ``input`` changelog written as ORC (``changelog-file.format``, which Java 1.0 does not
    know and ignores) beside Avro level-0 data files: Java's streaming read of ``$audit_log``
    reads the changelog files by their extension."""
    _create(java, tmp_path, "cl", {**OPTIONS, "changelog-producer": "input", "changelog-file.format": "orc",
                                   "changelog-file.compression": "zstd"})
    _ours_write(tmp_path, "cl", _rows([1, 2], "a"))
    _ours_write(tmp_path, "cl", _rows([2, 3], "b"))
    root = str(tmp_path / f"{DB}.db" / "cl")
    names = [n for _, _, ns in os.walk(root) for n in ns if n.startswith("changelog-")]
    assert len(names) >= 2 and all(n.endswith(".orc") for n in names), names
    r = java.call("stream_read", warehouse=str(tmp_path), table=f"{DB}.cl$audit_log",
                  options={"scan.mode": "from-snapshot", "scan.snapshot-id": "1"})
    assert sorted(map(tuple, r["rows"])) == sorted([
        ("+I", 1, "a1", 3), ("+I", 2, "a2", 6), ("+I", 2, "b2", 6), ("+I", 3, "b3", 9)])
    assert _java_read(java, tmp_path, "cl") == [[1, "a1", 3], [2, "b2", 6], [3, "b3", 9]]
