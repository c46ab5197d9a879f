"""Rollback and expiry racing a writer, in separate processes (issue 15: "rollback and expiry
racing a writer lose nothing acknowledged").

One process commits one new key per commit (a primary-key table whose writers compact, so
COMPACT snapshots and their conflicts are part of the race); another repeatedly expires
everything but the latest snapshot (the tag keeps the first one's files) and rolls back to the
tag, which recreates the expired tagged snapshot. Shared counters order the two: a commit that
began after every rollback had returned must be in the table; a commit acknowledged before a
rollback began must not (the tag is older than every commit of the writer); commits that
overlapped a rollback may be either. Afterwards every snapshot and the tag read whole, and the
orphan clean's strict walk finds every referenced file.

CI: 20 commits, 3 rollbacks. Long (``-m long``): ``PAIMON_RS_RELIABILITY_OPS_COMMITS`` (300)
commits, ``PAIMON_RS_RELIABILITY_OPS_ROLLBACKS`` (40) rollbacks.
"""

from __future__ import annotations

import multiprocessing as mp
import time
from typing import Any, Dict, List

import pyarrow as pa
import pytest

from rel_helpers import create_table, env_int, figure, open_catalog, read_table, snapshot_ids

SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.string())])
STARTED, DONE = 0, 1  # indices of the rollback counters


def _commit(table: Any, k: int) -> None:
    wb = table.new_batch_write_builder()
    w, c = wb.new_write(), wb.new_commit()
    try:
        w.write_arrow(pa.table({"k": [k], "v": [f"w{k}"]}, schema=SCHEMA))
        c.commit(w.prepare_commit())
    finally:
        w.close()
        c.close()


def writer(wh: str, commits: int, rolls: Any, first_ack: Any, maintainer_done: Any, out: Any) -> None:
    """Commit keys 1000.. until `commits` are done and then 3 more after the maintainer stopped;
    report ("A", key, rollbacks done before the commit began, rollbacks started after its
    acknowledgement) or ("X", key, error)."""
    import paimon_rs

    t = open_catalog(wh).get_table("db.r")
    k, after_stop = 1000, 0
    while k < 1000 + commits or after_stop < 3:
        if maintainer_done.is_set():
            after_stop += 1
        done_before = rolls[DONE]
        try:
            _commit(t, k)
            out.put(("A", k, done_before, rolls[STARTED]))
            first_ack.set()
        except (paimon_rs.CommitConflictError, paimon_rs.StaleCommitMessageError) as e:
            # a compaction whose inputs a rollback removed (an APPEND snapshot may have landed
            # before its COMPACT one failed): not acknowledged
            out.put(("X", k, repr(e)))
        k += 1
    out.put(("END",))


def maintainer(wh: str, rollbacks: int, rolls: Any, first_ack: Any, maintainer_done: Any, out: Any) -> None:
    """After the writer's first acknowledged commit: expire all but the latest snapshot, then roll
    back to the tag, `rollbacks` times."""
    t = open_catalog(wh).get_table("db.r")
    first_ack.wait(60)
    expired = 0
    try:
        for _ in range(rollbacks):
            expired += len(t.expire_snapshots(retain_min=1, older_than=0).snapshots)
            with rolls.get_lock():
                rolls[STARTED] += 1
            t.rollback_to("base")
            with rolls.get_lock():
                rolls[DONE] += 1
            time.sleep(0.05)
    finally:
        maintainer_done.set()
        out.put(("M", expired))


def race(tmp_path: Any, commits: int, rollbacks: int) -> Dict[str, Any]:
    wh = str(tmp_path / "wh")
    t = create_table(wh, "r", SCHEMA, primary_keys=["k"],
                     options={"bucket": "1", "commit.max-retries": "50", "num-sorted-run.compaction-trigger": "3"})
    _commit(t, 0)
    t.create_tag("base", snapshot_id=1)
    ctx = mp.get_context("spawn")
    rolls = ctx.Array("i", 2)
    first_ack, maintainer_done = ctx.Event(), ctx.Event()
    out = ctx.Queue()
    procs = [ctx.Process(target=writer, args=(wh, commits, rolls, first_ack, maintainer_done, out)),
             ctx.Process(target=maintainer, args=(wh, rollbacks, rolls, first_ack, maintainer_done, out))]
    for p in procs:
        p.start()
    msgs: List[Any] = []
    ended = 0
    while ended < 2:
        m = out.get(timeout=300)
        msgs.append(m)
        ended += m[0] in ("END", "M")
    for p in procs:
        p.join(60)
        assert p.exitcode == 0, p
    n = rolls[DONE]
    assert n == rollbacks == rolls[STARTED]

    rows = dict(zip(*read_table(t).select(["k", "v"]).to_pydict().values()))
    acked = [m for m in msgs if m[0] == "A"]
    failed = {m[1] for m in msgs if m[0] == "X"}
    must_stay = [k for _, k, done_before, _ in acked if done_before == n]
    must_go = [k for _, k, _, started_after in acked if started_after < n]
    for k in must_stay:
        assert rows.get(k) == f"w{k}", f"key {k}, acknowledged after the last rollback, is lost"
    for k in must_go:
        assert k not in rows, f"key {k} was acknowledged before a rollback to the tag, yet is there"
    written = {m[1] for m in acked} | failed | {0}
    assert set(rows) <= written and all(v == f"w{k}" for k, v in rows.items())
    assert rows.get(0) == "w0", "the tagged row"
    assert must_stay and must_go, (len(must_stay), len(must_go))

    # nothing referenced is missing: every snapshot and the tag read whole, and the orphan
    # clean's strict walk over all of them refuses if any referenced file is gone
    ids = snapshot_ids(t.table_path)
    assert ids == list(range(ids[0], ids[-1] + 1)), ids
    for sid in ids:
        read_table(t.copy({"scan.snapshot-id": str(sid)}))
    assert read_table(t.copy({"scan.tag-name": "base"})).num_rows == 1
    t.remove_orphan_files(older_than=int(time.time() * 1000), dry_run=True)
    expired = sum(m[1] for m in msgs if m[0] == "M")
    return {"acknowledged": len(acked), "failed": len(failed), "rollbacks": n, "expired": expired,
            "kept_after_last_rollback": len(must_stay), "rolled_back": len(must_go), "snapshots": len(ids)}


def test_rollback_and_expiry_racing_a_writer(tmp_path):
    figure("test_ops_race.py::test_rollback_and_expiry_racing_a_writer", **race(tmp_path, 20, 3))


@pytest.mark.long
def test_rollback_and_expiry_racing_a_writer_long(tmp_path):
    commits = env_int("PAIMON_RS_RELIABILITY_OPS_COMMITS", 300)
    rollbacks = env_int("PAIMON_RS_RELIABILITY_OPS_ROLLBACKS", 40)
    figure("test_ops_race.py::test_rollback_and_expiry_racing_a_writer_long", **race(tmp_path, commits, rollbacks))

