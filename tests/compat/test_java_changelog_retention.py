"""Decoupled changelog retention (issue 27): with ``changelog.num-retained.*`` /
``changelog.time-retained`` longer than the snapshot retention, an expiry keeps each expired
snapshot as ``changelog/changelog-<id>`` and its changelog (or, without a producer, its delta
files) until the changelog's own retention expires it (Java's ``ExpireSnapshotsImpl`` /
``ExpireChangelogImpl``). Java Paimon 1.0 is the oracle both ways: its streaming read (which
falls back to ``changelog/`` for an expired snapshot) reads what our expiry kept, and we read,
clean and expire what Java's expiry kept."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any, Dict, List

import pytest
from test_java_changelog import DB, Rec, _create, _our_create, _our_write, _recs, _table, _tname, _write

from paimon_rs.exceptions import InvalidArgumentError

from java_env import JavaPaimon

pytestmark = pytest.mark.java

#: snapshots: 1..2 kept; changelogs: 20
DECOUPLED = {"bucket": "1", "snapshot.num-retained.min": "1", "snapshot.num-retained.max": "2",
             "changelog.num-retained.max": "20"}


def _commits(n: int) -> List[List[Rec]]:
    """``n`` commits, each in key order (an input changelog file holds its records sorted by
    key): commit c updates key 1 (-U/+U after the first) and inserts key 100 + c."""
    out: List[List[Rec]] = []
    for c in range(n):
        first: List[Rec] = [("+I", 1, "v0")] if c == 0 else [("-U", 1, f"v{c - 1}"), ("+U", 1, f"v{c}")]
        out.append(first + [("+I", 100 + c, f"n{c}")])
    return out


def _java_stream(java: JavaPaimon, wh: Any, t: str) -> List[Rec]:
    """Java's streaming read of ``t$audit_log`` from snapshot 1 (from the earliest changelog or
    snapshot, when 1 is gone), every plan until none is left."""
    r = java.call("stream_read", warehouse=str(wh), table=f"{DB}.{t}$audit_log",
                  options={"scan.mode": "from-snapshot", "scan.snapshot-id": "1"})
    assert r["fields"] == ["rowkind", "id", "v"], r["fields"]
    return [(k, i, v) for k, i, v in r["rows"]]


def _ids(table_dir: Path, sub: str, prefix: str) -> List[int]:
    d = table_dir / sub
    if not d.exists():
        return []
    return sorted(int(n[len(prefix):]) for n in os.listdir(d) if n.startswith(prefix) and n[len(prefix):].isdigit())


def _age(root: Path) -> None:
    """Every file two days old: the orphan clean (default: older than one day) considers all."""
    old = time.time() - 2 * 86400
    for dirpath, _dirs, files in os.walk(root):
        for f in files:
            os.utime(os.path.join(dirpath, f), (old, old))


def _flat(commits: List[List[Rec]]) -> List[Rec]:
    return [r for c in commits for r in c]


def _by_snapshot(wh: Any, t: str, ids: List[int]) -> Dict[int, List[Rec]]:
    tb = _table(wh, t)
    return {s: _recs(tb.changelog(s - 1, s)) for s in ids}


def test_java_streams_the_changelog_our_decoupled_expiry_kept(java, tmp_path, request):
    t = _tname(request)
    _our_create(tmp_path, t, dict(DECOUPLED, **{"changelog-producer": "input"}))
    commits = _commits(8)
    for c in commits:
        _our_write(tmp_path, t, c)
    tdir = tmp_path / f"{DB}.db" / t
    latest = _table(tmp_path, t).latest_snapshot_id()
    # the snapshots expired as the options say, their changelogs stayed
    assert _ids(tdir, "snapshot", "snapshot-") == [latest - 1, latest]
    assert _ids(tdir, "changelog", "changelog-") == list(range(1, latest - 1))
    assert (tdir / "changelog" / "LATEST").read_text() == str(latest - 2)
    assert _recs(_table(tmp_path, t).changelog(0)) == _flat(commits)
    assert _java_stream(java, tmp_path, t) == _flat(commits)

    # the changelogs' own retention: 4 (the newest snapshot's and 3 changelogs)
    small = _table(tmp_path, t).copy({"changelog.num-retained.max": "4"})
    r = small.expire_snapshots()
    kept = _ids(tdir, "changelog", "changelog-")
    assert kept == [latest - 3, latest - 2], r
    ours = _recs(_table(tmp_path, t).changelog(latest - 4))
    assert _java_stream(java, tmp_path, t) == ours
    assert ours == _flat([recs for recs in _by_snapshot(tmp_path, t, list(range(latest - 3, latest + 1))).values()])
    with pytest.raises(InvalidArgumentError, match="expired"):
        _table(tmp_path, t).changelog(0)
    # nothing left behind, nothing the changelogs need taken
    _age(tdir)
    assert _table(tmp_path, t).remove_orphan_files().files == []
    assert _java_stream(java, tmp_path, t) == ours
    data = java.call("read", warehouse=str(tmp_path), table=f"{DB}.{t}")["rows"]
    assert sorted(data) == sorted([[1, "v7"]] + [[100 + c, f"n{c}"] for c in range(8)])


def test_we_read_clean_and_expire_javas_decoupled_changelog(java, tmp_path, request):
    t = _tname(request)
    _create(java, tmp_path, t, dict(DECOUPLED, **{"changelog-producer": "input"}))
    commits = _commits(8)
    for c in commits:
        _write(java, tmp_path, t, c)
    tdir = tmp_path / f"{DB}.db" / t
    latest = _table(tmp_path, t).latest_snapshot_id()
    assert _ids(tdir, "snapshot", "snapshot-") == [latest - 1, latest]
    assert _ids(tdir, "changelog", "changelog-") == list(range(1, latest - 1))
    # Java deleted the changelogs' base and delta lists: we read the changelog lists only
    assert _recs(_table(tmp_path, t).changelog(0)) == _flat(commits)
    _age(tdir)
    assert _table(tmp_path, t).remove_orphan_files().files == []
    # our commit expires (and keeps) as Java's did
    more = [("-U", 1, "v7"), ("+U", 1, "v8")]
    _our_write(tmp_path, t, more)
    latest = _table(tmp_path, t).latest_snapshot_id()  # (and maybe a compaction)
    assert _ids(tdir, "snapshot", "snapshot-") == [latest - 1, latest]
    assert _ids(tdir, "changelog", "changelog-") == list(range(1, latest - 1))
    assert _java_stream(java, tmp_path, t) == _flat(commits) + more
    # and their own retention
    _table(tmp_path, t).copy({"changelog.num-retained.max": "3"}).expire_snapshots()
    assert _ids(tdir, "changelog", "changelog-") == [latest - 2]
    assert _java_stream(java, tmp_path, t) == _recs(_table(tmp_path, t).changelog(latest - 3))
    _age(tdir)
    assert _table(tmp_path, t).remove_orphan_files().files == []
    _write(java, tmp_path, t, [("+I", 500, "z")])
    assert _recs(_table(tmp_path, t).changelog(latest - 3))[-1] == ("+I", 500, "z")


def test_without_a_producer_the_expired_deltas_stay_readable(java, tmp_path, request):
    """No producer: Java keeps the APPEND files and the base/delta lists of expired snapshots
    for the changelog (its streaming read reads their deltas); we read them as a delta read,
    and our expiry keeps them for Java the same way."""
    t = _tname(request)
    _create(java, tmp_path, t, dict(DECOUPLED, **{"num-sorted-run.compaction-trigger": "3"}))
    rows = [[("+I", 1, f"v{c}"), ("+I", 100 + c, f"n{c}")] for c in range(4)]
    for c in rows:
        _write(java, tmp_path, t, c)
    for c in range(4, 8):
        rows.append([("+I", 1, f"v{c}"), ("+I", 100 + c, f"n{c}")])
        _our_write(tmp_path, t, rows[-1])
    latest = _table(tmp_path, t).latest_snapshot_id()
    tdir = tmp_path / f"{DB}.db" / t
    assert len(_ids(tdir, "snapshot", "snapshot-")) == 2
    assert latest > 8, "compactions replaced the appended files"
    tb = _table(tmp_path, t).copy({"incremental-between": f"0,{latest}", "incremental-between-scan-mode": "delta"})
    rb = tb.new_read_builder()
    ours = _recs(rb.new_read().to_arrow(rb.new_scan().plan().splits()))
    # a delta read of a range merges by key (as Java 1.0's batch incremental read)
    assert sorted(ours) == sorted([("+I", 1, "v7")] + [("+I", 100 + c, f"n{c}") for c in range(8)])
    assert _java_stream(java, tmp_path, t) == _flat(rows)
    _age(tdir)
    assert _table(tmp_path, t).remove_orphan_files().files == []
