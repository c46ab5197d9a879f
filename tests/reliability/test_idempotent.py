"""Idempotent retries: commit messages land at most once, whatever is retried and from where.

- the same messages committed twice (new commit object, new builder, pickled into another
  process) are refused with DuplicateCommitError (or, by the same commit user, answered with the
  first commit's snapshot id), the table unchanged and readable (item 1);
- a retry with the same (commit user, commit identifier) lands once, across processes (Also);
- after a CommitConflictError, committing the same messages again either is refused
  (StaleCommitMessageError / CommitConflictError, table unchanged) or lands as the latest commit
  of the key, never pointing at deleted files; writing the data again lands (item 2);
- ``abort()`` of committed messages deletes nothing the table references (item 3).

Each test runs a number of rounds (``ROUNDS``, more under ``-m long``) and the retried commits
go through a subprocess where the issue says "across processes".
"""

from __future__ import annotations

import json
import os
import pickle
from typing import Any, Dict, List

import pyarrow as pa
import pytest

from paimon_rs import CommitConflictError, DuplicateCommitError, StaleCommitMessageError

from rel_helpers import create_table, env_int, figure, read_table, run_worker, snapshot_ids

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])
ROUNDS = 10


def batch(ids: List[int], tag: str) -> pa.Table:
    return pa.table({"id": ids, "v": [f"{tag}-{i}" for i in ids]}, schema=SCHEMA)


def rows(table: Any) -> Dict[int, str]:
    return {r["id"]: r["v"] for r in read_table(table).to_pylist()}


def prepare(table: Any, data: pa.Table) -> Any:
    wb = table.new_batch_write_builder()
    w = wb.new_write()
    w.write_arrow(data)
    msgs = w.prepare_commit()
    w.close()
    return wb, msgs


def commit_elsewhere(tmp_path: Any, table: Any, msgs: Any, commit_user: str, identifier: Any = None) -> Dict[str, Any]:
    """Commit pickled messages in another interpreter; returns its outcome."""
    path = str(tmp_path / "msgs.pickle")
    with open(path, "wb") as f:
        pickle.dump(msgs, f)
    os.makedirs(tmp_path / "spill", exist_ok=True)
    rc, lines, err = run_worker("commitpickled", {"warehouse": table_warehouse(table), "table": "db.i",
                                                  "pickle": path, "commit_user": commit_user,
                                                  "identifier": identifier}, str(tmp_path / "spill"))
    assert rc == 0, err
    return json.loads(lines[-1])


def table_warehouse(table: Any) -> str:
    return os.path.dirname(os.path.dirname(table.table_path))


def new_table(tmp_path: Any) -> Any:
    # write-only: the messages hold new files only (a compacting writer's re-committed message
    # is refused by its compaction, whose inputs it already compacted: CommitConflictError)
    t = create_table(str(tmp_path / "wh"), "i", SCHEMA, primary_keys=["id"],
                     options={"bucket": "2", "write-only": "true"})
    wb, msgs = prepare(t, batch(list(range(100)), "seed"))
    wb.new_commit().commit(msgs)
    return t


def check_duplicates(tmp_path: Any, rounds: int) -> Dict[str, Any]:
    table = new_table(tmp_path)
    refused = 0
    for r in range(rounds):
        wb, msgs = prepare(table, batch([r, 1000 + r], f"r{r}"))
        sid = wb.new_commit().commit(msgs)
        before, snaps = rows(table), snapshot_ids(table.table_path)
        how = ("same builder, new commit", "new builder", "pickled, another process")[r % 3]
        # the same commit user may be answered as an idempotent retry (the first commit's
        # snapshot id, nothing committed); another user must be refused
        if how == "pickled, another process":
            out = commit_elsewhere(tmp_path, table, msgs, wb.commit_user)
            assert out.get("cls") == "DuplicateCommitError" or (out["ok"] and out["value"] == sid), out
        elif how == "new builder":
            with pytest.raises(DuplicateCommitError):
                table.new_batch_write_builder().new_commit().commit(msgs)
        else:
            try:
                assert wb.new_commit().commit(msgs) == sid
            except DuplicateCommitError:
                pass
        refused += 1
        assert snapshot_ids(table.table_path) == snaps, f"{how}: a snapshot was written"
        assert rows(table) == before, f"{how}: the table changed"
    # still writable, and the abort of committed messages deletes nothing (item 3)
    wb, msgs = prepare(table, batch([5000], "last"))
    wb.new_commit().commit(msgs)
    table.new_batch_write_builder().new_commit().abort(msgs)
    got = rows(table)
    assert got[5000] == "last-5000" and len(got) == 100 + rounds + 1
    return {"rounds": rounds, "duplicates refused or answered idempotently": refused, "failures": 0}


def test_duplicate_commits_refused(tmp_path):
    figure("idempotent: same messages twice", **check_duplicates(tmp_path, ROUNDS))


def check_identifier(tmp_path: Any, rounds: int) -> Dict[str, Any]:
    table = new_table(tmp_path)
    landed_once = 0
    for r in range(rounds):
        user = f"job-{r % 2}"
        wb, msgs = prepare(table, batch([200 + r], f"id{r}"))
        wb.with_commit_user(user)
        sid = wb.new_commit().commit(msgs, commit_identifier=r)
        snaps = snapshot_ids(table.table_path)
        # the retry: another process, the same user and identifier, the same (pickled) messages
        out = commit_elsewhere(tmp_path, table, msgs, user, identifier=r)
        assert out["ok"] and out["value"] in (None, sid), out
        assert snapshot_ids(table.table_path) == snaps
        landed_once += 1
    want = {i: f"seed-{i}" for i in range(100)}
    want.update({200 + r: f"id{r}-{200 + r}" for r in range(rounds)})
    assert rows(table) == want
    return {"rounds": rounds, "retries landed once": landed_once, "failures": 0}


def test_commit_identifier_retry_lands_once(tmp_path):
    figure("idempotent: commit identifier retry", **check_identifier(tmp_path, ROUNDS))


def check_conflict_retry(tmp_path: Any, rounds: int) -> Dict[str, Any]:
    table = new_table(tmp_path)
    conflicts = retries_refused = 0
    for r in range(rounds):
        key = r % 10
        wb_a, msgs_a = prepare(table, batch([key], f"a{r}"))
        wb_b, msgs_b = prepare(table, batch([key], f"b{r}"))  # same key, same bucket, same start
        wb_a.new_commit().commit(msgs_a)
        with pytest.raises(CommitConflictError):
            wb_b.new_commit().commit(msgs_b)
        conflicts += 1
        assert rows(table)[key] == f"a{r}-{key}"
        # committing the same messages again either is refused (their files may be gone, or they
        # still conflict) and changes nothing, or lands as the latest commit of the key
        try:
            table.new_batch_write_builder().new_commit().commit(msgs_b)
        except (StaleCommitMessageError, CommitConflictError):
            assert rows(table)[key] == f"a{r}-{key}"
            wb_c, msgs_c = prepare(table, batch([key], f"b{r}"))  # the sure retry: write again
            wb_c.new_commit().commit(msgs_c)
            retries_refused += 1
        assert rows(table)[key] == f"b{r}-{key}"
    return {"rounds": rounds, "conflicts raised": conflicts, "same-message retries refused": retries_refused,
            "failures": 0}


def test_retry_after_conflict(tmp_path):
    figure("idempotent: retry after CommitConflictError", **check_conflict_retry(tmp_path, ROUNDS))


@pytest.mark.long
def test_idempotent_long(tmp_path):
    n = env_int("PAIMON_RS_RELIABILITY_RETRY_ROUNDS", 100)
    for d in "dic":
        (tmp_path / d).mkdir()
    figure("idempotent (long)", **check_duplicates(tmp_path / "d", n), **{
        f"identifier {k}": v for k, v in check_identifier(tmp_path / "i", n).items()}, **{
        f"conflict {k}": v for k, v in check_conflict_retry(tmp_path / "c", n).items()})

