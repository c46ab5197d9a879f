"""Decoupled changelog retention (``changelog.num-retained.*``, ``changelog.time-retained``):
expired snapshots kept as ``changelog/changelog-<id>``, read by ``Table.changelog`` and
incremental reads, expired by their own retention, removed by rollback, kept by the orphan
clean. Java is the oracle in tests/compat/test_java_changelog_retention.py."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pyarrow as pa
import pytest

from paimon_rs import InvalidArgumentError, Schema

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string()), ("op", pa.string())])

Rec = Tuple[str, int, Any]

RETAIN = {"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "2", "changelog.num-retained.max": "50"}


def _create(catalog: Any, name: str, options: Dict[str, str]) -> Any:
    catalog.create_table(f"db.{name}", Schema.from_pyarrow_schema(
        SCHEMA, primary_keys=["k"], options=dict({"bucket": "1", "rowkind.field": "op"}, **options)), False)
    return catalog.get_table(f"db.{name}")


def _write(t: Any, rows: List[Rec]) -> None:
    wb = t.new_batch_write_builder()
    w, c = wb.new_write(), wb.new_commit()
    w.write_arrow(pa.table({"k": [r[1] for r in rows], "v": [r[2] for r in rows], "op": [r[0] for r in rows]},
                           schema=SCHEMA))
    c.commit(w.prepare_commit())
    w.close()
    c.close()


def _recs(tbl: pa.Table) -> List[Rec]:
    d = tbl.to_pydict()
    return list(zip(d["rowkind"], d["k"], d["v"]))


def _root(t: Any) -> Path:
    return Path(t.table_path[len("file:"):] if t.table_path.startswith("file:") else t.table_path)


def _ids(t: Any, sub: str) -> List[int]:
    d = _root(t) / sub
    prefix = f"{sub}-"
    if not d.exists():
        return []
    return sorted(int(n[len(prefix):]) for n in os.listdir(d) if n.startswith(prefix) and n[len(prefix):].isdigit())


def _commits(n: int) -> List[List[Rec]]:
    out: List[List[Rec]] = []
    for c in range(n):
        first: List[Rec] = [("+I", 1, "v0")] if c == 0 else [("-U", 1, f"v{c - 1}"), ("+U", 1, f"v{c}")]
        out.append(first + [("+I", 100 + c, f"n{c}")])
    return out


def _age(root: Path) -> None:
    old = time.time() - 2 * 86400
    for dirpath, _dirs, files in os.walk(root):
        for f in files:
            os.utime(os.path.join(dirpath, f), (old, old))


def test_expired_snapshots_keep_their_changelog(catalog):
    t = _create(catalog, "kept", dict(RETAIN, **{"changelog-producer": "input"}))
    commits = _commits(6)
    for c in commits:
        _write(t, c)
    latest = t.latest_snapshot_id()
    assert _ids(t, "snapshot") == [latest - 1, latest]
    assert _ids(t, "changelog") == list(range(1, latest - 1))
    assert (_root(t) / "changelog" / "LATEST").read_text() == str(latest - 2)
    # the whole changelog, though most of its snapshots expired; and any range of it
    assert _recs(t.changelog(0)) == [r for c in commits for r in c]
    assert _recs(t.changelog(1, 2)) == commits[1]
    _age(_root(t))
    assert t.remove_orphan_files().files == []
    assert _recs(t.changelog(0)) == [r for c in commits for r in c]


def test_changelogs_expire_by_their_own_retention(catalog):
    t = _create(catalog, "own", dict(RETAIN, **{"changelog-producer": "input"}))
    for c in _commits(6):
        _write(t, c)
    latest = t.latest_snapshot_id()
    before = {p.name for p in (_root(t) / "bucket-0").iterdir() if p.name.startswith("changelog-")}
    r = t.copy({"changelog.num-retained.max": "3"}).expire_snapshots()
    assert _ids(t, "changelog") == [latest - 2]
    assert r.changelogs == list(range(1, latest - 2))
    assert (_root(t) / "changelog" / "EARLIEST").read_text() == str(latest - 2)
    after = {p.name for p in (_root(t) / "bucket-0").iterdir() if p.name.startswith("changelog-")}
    assert after < before
    assert {os.path.basename(p) for p in r.files} >= before - after
    with pytest.raises(InvalidArgumentError, match="expired"):
        t.changelog(0)
    assert len(_recs(t.changelog(latest - 3))) > 0
    _age(_root(t))
    assert t.remove_orphan_files().files == []


def test_rollback_removes_newer_changelogs(catalog):
    t = _create(catalog, "rb", dict(RETAIN, **{"changelog-producer": "input"}))
    commits = _commits(6)
    _write(t, commits[0])
    _write(t, commits[1])
    t.create_tag("two", 2)
    for c in commits[2:]:
        _write(t, c)
    assert 3 in _ids(t, "changelog")
    t.rollback_to("two")
    assert _ids(t, "changelog") == [1, 2]
    assert _recs(t.changelog(0)) == commits[0] + commits[1]
    _age(_root(t))
    assert t.remove_orphan_files().files == []


def test_without_a_producer_expired_deltas_stay_readable(catalog):
    t = _create(catalog, "delta", dict(RETAIN, **{"num-sorted-run.compaction-trigger": "2"}))
    rows = [[("+I", c, f"v{c}")] for c in range(6)]
    for c in rows:
        _write(t, c)
    latest = t.latest_snapshot_id()
    assert latest > 6  # compactions replaced the appended files
    rb = t.copy({"incremental-between": f"0,{latest}", "incremental-between-scan-mode": "delta"}).new_read_builder()
    assert sorted(_recs(rb.new_read().to_arrow(rb.new_scan().plan().splits()))) == sorted(r for c in rows for r in c)


@pytest.mark.parametrize("options, message", [
    ({"changelog.num-retained.min": "0"}, "changelog.num-retained.min should be at least 1"),
    ({"changelog.num-retained.min": "5", "changelog.num-retained.max": "3"},
     "changelog.num-retained.min should not be larger than changelog.num-retained.max"),
    ({"changelog.time-retained": "soon"}, "changelog.time-retained"),
])
def test_bad_retention_options_are_refused_as_java(catalog, options, message):
    with pytest.raises(InvalidArgumentError, match=message):
        t = _create(catalog, "bad", options)
        _write(t, [("+I", 1, "a")])
