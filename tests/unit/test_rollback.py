"""Rollback to a snapshot or a tag (Java's RollbackHelper), against a model of every snapshot's
rows; a rollback racing a writer loses no commit acknowledged after the rollback returned."""

from __future__ import annotations

import threading

import pyarrow as pa
import pytest
from table_ops_helpers import SCHEMA, Model, make_table, orphans, read_rows, snapshot_ids

import paimon_rs

import stores

# on local disk, and on S3 under -m long (tests/stores.py)
pytestmark = pytest.mark.stores("local", "s3-long")


def history(t, n=6) -> Model:
    m = Model(t)
    for i in range(n):
        m.upsert({i % 3: f"v{i}", 10 + i: "x"})
        if i == 3:
            m.compact()
    return m


def test_rollback_to_snapshot(catalog):
    t = make_table(catalog)
    m = history(t)
    t.create_tag("early", snapshot_id=2)
    t.create_tag("late", snapshot_id=t.latest_snapshot_id())
    r = t.rollback_to(3)
    assert snapshot_ids(t) == [1, 2, 3]
    assert read_rows(t) == m.snapshots[3]
    assert t.list_tags() == ["early"], "tags on discarded snapshots go, as in Java"
    assert r.files and r.bytes > 0
    assert orphans(t) == [], "what only the discarded snapshots referenced is deleted"
    assert stores.read_text(stores.join(t.table_path, "snapshot", "LATEST")).strip() == "3"
    # the table goes on from snapshot 3
    m2 = Model(t)
    m2.snapshots = {k: v for k, v in m.snapshots.items() if k <= 3}
    sid = m2.upsert({99: "new"})
    assert sid == 4 and read_rows(t) == {**m.snapshots[3], 99: "new"}


def test_rollback_to_tag_of_an_expired_snapshot(catalog):
    t = make_table(catalog)
    m = history(t)
    t.create_tag("t2", snapshot_id=2)
    t.expire_snapshots(retain_min=1, older_than=0)
    assert 2 not in snapshot_ids(t)
    t.rollback_to("t2")
    assert snapshot_ids(t) == [2]
    assert read_rows(t) == m.snapshots[2]
    assert stores.read_text(stores.join(t.table_path, "snapshot", "EARLIEST")).strip() == "2"
    assert orphans(t) == []
    # rolling back to the expired snapshot's id finds it through the tag too
    t2 = make_table(catalog, "db.other")
    m2 = history(t2)
    t2.create_tag("keep", snapshot_id=1)
    t2.expire_snapshots(retain_min=1, older_than=0)
    t2.rollback_to(1)
    assert read_rows(t2) == m2.snapshots[1]


def test_refusals(catalog):
    t = make_table(catalog)
    history(t, 3)
    with pytest.raises(ValueError, match="doesn't exist"):
        t.rollback_to(9)
    with pytest.raises(ValueError, match="tag .nope. doesn.t exist"):
        t.rollback_to("nope")
    with pytest.raises(ValueError, match="Unsupported rollback target"):
        t.rollback_to(1.5)  # type: ignore[arg-type]
    assert snapshot_ids(t) == [1, 2, 3]


def test_rollback_racing_a_writer_loses_nothing_acknowledged_after_it(catalog):
    t = make_table(catalog, options={"commit.max-retries": "50"})
    history(t, 3)
    acked = []  # (key, acknowledged after the rollback returned)
    done = threading.Event()
    errors = []

    def writer():
        k = 1000
        while not done.is_set() or k < 1010:
            wb = t.new_batch_write_builder()
            w, c = wb.new_write(), wb.new_commit()
            try:
                w.write_arrow(pa.table({"k": [k], "v": ["w"]}, schema=SCHEMA))
                c.commit(w.prepare_commit())
                acked.append((k, done.is_set()))
            except paimon_rs.PaimonRsError as e:  # a commit whose files the rollback removed
                errors.append(e)
            finally:
                w.close()
                c.close()
            k += 1

    th = threading.Thread(target=writer)
    th.start()
    try:
        t.rollback_to(2)
    finally:
        done.set()
        th.join()
    rows = read_rows(t)
    after = [k for k, late in acked if late]
    assert after, "the writer committed after the rollback"
    for k in after:
        assert rows.get(k) == "w", k
    for e in errors:
        assert isinstance(e, (paimon_rs.StaleCommitMessageError, paimon_rs.CommitConflictError)), e
    ids = snapshot_ids(t)
    assert ids == list(range(ids[0], ids[-1] + 1)), "no gap"
