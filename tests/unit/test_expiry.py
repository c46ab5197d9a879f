"""Snapshot expiry: on commit (table options) and on demand (`Table.expire_snapshots`), against a
model of every snapshot's rows; what is deleted is exactly what no remaining snapshot or tag
references."""

from __future__ import annotations

import json

import pytest
from table_ops_helpers import Model, disk_usage, make_table, orphans, read_rows, snapshot_ids

import paimon_rs
from paimon_rs import _core

import stores

# every test runs on local disk and on S3 (tests/stores.py); on S3 only under -m long (CI covers
# expiry on S3 in test_object_store.py and test_expire_keeps_retain_max_and_reclaims_unreferenced_files)
pytestmark = pytest.mark.stores("local", "s3-long")


def history(table, n: int) -> Model:
    m = Model(table)
    for i in range(n):
        m.upsert({i % 7: f"v{i}", 100 + i: "x"})
        if i % 5 == 4:
            m.compact()
    return m


def check_retained(table, m: Model) -> None:
    for sid in snapshot_ids(table):
        assert read_rows(table, {"scan.snapshot-id": str(sid)}) == m.snapshots[sid], sid


@pytest.mark.stores
def test_expire_keeps_retain_max_and_reclaims_unreferenced_files(catalog):
    t = make_table(catalog)
    m = history(t, 12)
    latest = t.latest_snapshot_id()
    before = disk_usage(t)
    r = t.expire_snapshots(retain_min=1, retain_max=3)
    assert snapshot_ids(t) == [latest - 2, latest - 1, latest]
    assert sorted(r.snapshots) == list(range(1, latest - 2))
    assert r.bytes > 0 and len(r.files) > 0
    after = disk_usage(t)
    assert after[1] <= before[1] - r.bytes  # and the snapshot files
    assert int(stores.read_text(stores.join(t.table_path, "snapshot", "EARLIEST"))) == latest - 2
    check_retained(t, m)
    assert orphans(t) == [], "everything left is referenced"
    # nothing referenced was deleted: every file of the retained snapshots exists (reads passed)
    # and the table still takes commits
    m.upsert({1: "after"})
    check_retained(t, m)


def test_time_retention_and_retain_min_protect(catalog):
    t = make_table(catalog)
    history(t, 5)
    # default: 1 h retention, 10 minimum: nothing is old enough
    assert t.expire_snapshots().snapshots == []
    assert t.expire_snapshots(retain_min=1).snapshots == []
    # everything is old enough, but 4 are retained at minimum
    r = t.expire_snapshots(retain_min=4, older_than=0)
    assert len(snapshot_ids(t)) == 4 and r.snapshots


def test_expire_limit(catalog):
    t = make_table(catalog)
    history(t, 8)
    r = t.expire_snapshots(retain_min=1, older_than=0, max_deletes=2)
    assert r.snapshots == [1, 2]
    assert snapshot_ids(t)[0] == 3


def test_tag_keeps_files_of_expired_snapshot(catalog):
    t = make_table(catalog)
    m = history(t, 6)
    t.create_tag("keep", snapshot_id=2)
    t.expire_snapshots(retain_min=1, retain_max=1, older_than=0)
    assert snapshot_ids(t) == [t.latest_snapshot_id()]
    assert read_rows(t, {"scan.tag-name": "keep"}) == m.snapshots[2]
    assert orphans(t) == []
    # deleting the tag now frees what only it referenced
    before = disk_usage(t)[1]
    assert t.delete_tag("keep")
    assert disk_usage(t)[1] < before
    assert orphans(t) == []
    check_retained(t, m)


def test_expiry_on_commit_follows_table_options(catalog):
    t = make_table(catalog, options={"snapshot.num-retained.min": "2", "snapshot.num-retained.max": "3"})
    m = Model(t)
    for i in range(8):
        m.upsert({i: "v"})
        assert len(snapshot_ids(t)) <= 3
    latest = t.latest_snapshot_id()
    assert snapshot_ids(t) == [latest - 2, latest - 1, latest]
    check_retained(t, m)
    assert orphans(t) == []


@pytest.mark.stores("s3")
def test_a_commit_with_nothing_to_expire_sends_no_list(catalog):
    """Issue #14: the expiry after a commit lists `snapshot/` and `consumer/` only when it may
    expire something (the `EARLIEST` hint, written by the first expiry, names the earliest)."""
    t = make_table(catalog, options={"snapshot.num-retained.min": "2", "snapshot.num-retained.max": "3",
                                     "tag.time-expire-enabled": "false"})
    m = Model(t)
    m.upsert({0: "v"})
    earliest = stores.join(t.table_path, "snapshot", "EARLIEST")
    assert stores.read_text(earliest) == "1", "written by the first commit's expiry"
    _core.object_store_requests(reset=True)
    m.upsert({1: "v"})  # two snapshots, two retained at least
    quiet = _core.object_store_requests(reset=True)
    assert quiet["LIST"] == 0, quiet
    while len(snapshot_ids(t)) < 3:
        m.upsert({2: "v"})
    _core.object_store_requests(reset=True)
    m.upsert({3: "v"})  # more than three: the oldest expire
    expiring = _core.object_store_requests(reset=True)
    latest = t.latest_snapshot_id()
    assert snapshot_ids(t) == [latest - 2, latest - 1, latest]
    assert stores.read_text(earliest) == str(latest - 2)
    assert expiring["LIST"] >= 1 and expiring["DELETE"] >= 1, expiring  # consumer/ is read
    check_retained(t, m)
    print(f"\nrequests of a commit with nothing to expire: {quiet}\nwith an expiry: {expiring}")


def test_write_only_does_not_expire(catalog):
    t = make_table(catalog, options={"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1",
                                     "write-only": "true"})
    m = Model(t)
    for i in range(3):
        m.upsert({i: "v"})
    assert snapshot_ids(t) == [1, 2, 3]


def test_reading_an_expired_snapshot_is_a_clear_error(catalog):
    t = make_table(catalog)
    history(t, 6)  # a full compaction at the 5th commit: snapshot 1's files are not live
    old = t.copy({"scan.snapshot-id": "1"})
    rb = old.new_read_builder()
    splits = rb.new_scan().plan().splits()
    t.expire_snapshots(retain_min=1, older_than=0)
    with pytest.raises(paimon_rs.SnapshotExpiredError, match="snapshot 1"):
        rb.new_read().to_arrow(splits)
    with pytest.raises(paimon_rs.InvalidArgumentError, match="expired"):
        read_rows(t, {"scan.snapshot-id": "1"})


def test_bad_options_are_refused(catalog):
    t = make_table(catalog)
    history(t, 2)
    with pytest.raises(paimon_rs.InvalidArgumentError, match=">= 1"):
        t.expire_snapshots(retain_min=0)
    with pytest.raises(paimon_rs.InvalidArgumentError, match="maximum"):
        t.expire_snapshots(retain_min=5, retain_max=2)
    with pytest.raises(paimon_rs.InvalidArgumentError, match="maximum"):
        make_table(catalog, "db.bad", {"snapshot.num-retained.max": "3"}).new_batch_write_builder().new_write()


def test_changelog_options_without_changelogs_expire_normally(catalog):
    t = make_table(catalog, options={"changelog.num-retained.max": "100"})
    m = history(t, 4)
    r = t.expire_snapshots(retain_min=1, older_than=0)
    assert r.snapshots
    check_retained(t, m)


def test_changelog_decoupling_keeps_the_expired_snapshots_changelog(catalog):
    """``changelog.time-retained`` above the snapshots' (here 0): the expired snapshots stay as
    long-lived changelogs, their changelog files with them (tests/unit/test_changelog_retention.py
    has the rest)."""
    t = make_table(catalog, options={"changelog.time-retained": "1 d"})
    history(t, 3)
    p = stores.join(t.table_path, "snapshot", "snapshot-1")
    s = stores.read_json(p)
    s["changelogManifestList"] = s["deltaManifestList"]  # its delta files as its changelog
    stores.write_bytes(p, json.dumps(s).encode())
    want = t.changelog(0, 1).to_pylist()
    assert want
    r = t.expire_snapshots(retain_min=1, older_than=0)
    assert r.snapshots == [1, 2] and r.changelogs == []
    assert snapshot_ids(t) == [3]
    assert stores.read_json(stores.join(t.table_path, "changelog", "changelog-1")) == s
    assert stores.read_text(stores.join(t.table_path, "changelog", "LATEST")) == "2"
    assert t.changelog(0, 1).to_pylist() == want


def test_fifty_commit_history_reclaims_disk(catalog):
    """The must-show: expiry reclaiming the disk of a 50-commit history."""
    t = make_table(catalog)
    m = Model(t)
    for i in range(50):
        m.upsert({k: f"v{i}" for k in range(i % 10 * 20, i % 10 * 20 + 20)})
        if i % 10 == 9:
            m.compact()
    files0, bytes0 = disk_usage(t)
    r = t.expire_snapshots(retain_min=1, older_than=0)
    r2 = t.expire_snapshots(retain_min=1, older_than=0)
    files1, bytes1 = disk_usage(t)
    print(f"\n50-commit history: {files0} files / {bytes0} bytes -> {files1} files / {bytes1} bytes "
          f"({len(r.snapshots) + len(r2.snapshots)} snapshots expired)")
    assert bytes1 < bytes0 / 2
    check_retained(t, m)
    assert orphans(t) == []


def test_expiry_racing_writers_loses_nothing_acknowledged(catalog):
    """Writers commit while expiries run (on every commit, with one snapshot retained, and on
    demand): every acknowledged commit is in the table (a commit whose snapshot id an expiry
    freed while it was prepared is withdrawn and retried, commit/mod.rs `withdrawn`), and a
    read of the latest either succeeds or says its snapshot expired."""
    import threading

    import pyarrow as pa
    from table_ops_helpers import SCHEMA

    t = make_table(catalog, options={"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1",
                                     "commit.max-retries": "50"})
    acked, errors = [], []

    def writer(base):
        for i in range(8):
            k = base + i
            wb = t.new_batch_write_builder()
            w, c = wb.new_write(), wb.new_commit()
            try:
                w.write_arrow(pa.table({"k": [k], "v": [f"w{k}"]}, schema=SCHEMA))
                c.commit(w.prepare_commit())
                acked.append(k)
            except paimon_rs.CommitConflictError as e:
                # concurrent writers of one bucket may conflict (key ranges, compaction inputs;
                # see docs/concurrency.md); not acknowledged (an APPEND snapshot may have
                # landed before its COMPACT one failed)
                errors.append((k, e))
            finally:
                w.close()
                c.close()

    threads = [threading.Thread(target=writer, args=(b,)) for b in (0, 100)]
    for th in threads:
        th.start()
    for _ in range(5):
        t.expire_snapshots(retain_min=1, older_than=0)
        try:
            read_rows(t)
        except paimon_rs.SnapshotExpiredError:
            pass  # with one snapshot retained, the latest may expire while it is read: said so
    for th in threads:
        th.join()
    rows = read_rows(t)
    assert set(acked) <= set(rows) <= set(acked) | {k for k, _ in errors}
    assert len(acked) + len(errors) == 16 and len(acked) >= 8
    if not errors:  # a failed commit keeps its files for a retry (abort deletes them)
        assert orphans(t) == []


def test_writer_whose_restored_snapshot_expires_gets_a_commit_conflict(catalog):
    """The race behind the racing-writers test, made deterministic: a writer restores a
    bucket's files, another commit compacts them away and its expiry deletes them and the
    restored snapshot; the first writer's compaction at prepare_commit finds them missing. That
    is a commit conflict (write again), not a corrupt table, and nothing committed is lost."""
    import pyarrow as pa
    from table_ops_helpers import SCHEMA

    t = make_table(catalog, options={"bucket": "1", "snapshot.num-retained.min": "1",
                                     "snapshot.num-retained.max": "1",
                                     "full-compaction.delta-commits": "1"})
    m = Model(t)
    m.upsert({1: "a"})
    m.upsert({2: "b"})
    restored = t.latest_snapshot_id()
    wb = t.new_batch_write_builder()
    w, c = wb.new_write(), wb.new_commit()
    w.write_arrow(pa.table({"k": [3], "v": ["c"]}, schema=SCHEMA))  # restores `restored`
    m.upsert({4: "d"})  # compacts the bucket; its expiry deletes `restored` and its files
    assert restored not in snapshot_ids(t)
    with pytest.raises(paimon_rs.CommitConflictError, match=f"snapshot {restored} .*write the data again"):
        c.commit(w.prepare_commit())
    w.close()
    c.close()
    assert read_rows(t) == m.current()
    assert orphans(t) == [], "the failed writer removed what it had written"


def test_failed_expiry_after_a_commit_is_a_warning_naming_table_and_snapshot(catalog, caplog):
    """The commit has landed when its expiry runs: a failure there (here: a corrupt manifest list
    of the snapshot being expired) is a warning naming the table and the landed snapshot, the
    commit returns normally, and the data is intact."""
    import logging

    t = make_table(catalog, options={"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "2"})
    m = Model(t)
    m.upsert({1: "a"})
    m.upsert({2: "b"})
    delta = stores.read_json(stores.join(t.table_path, "snapshot", "snapshot-1"))["deltaManifestList"]
    stores.write_bytes(stores.join(t.table_path, "manifest", delta), b"not avro")
    with caplog.at_level(logging.WARNING, logger="paimon_rs"):
        sid = m.upsert({3: "c"})  # returns: no exception over the landed commit
    warnings = [r.getMessage() for r in caplog.records if r.name == "paimon_rs.commit" and r.levelno == logging.WARNING]
    assert any(f"db.ops: snapshot {sid} committed, but the maintenance (snapshot expiry, tags) after it failed" in w
               and delta in w for w in warnings), warnings
    assert read_rows(t) == m.snapshots[sid] == {1: "a", 2: "b", 3: "c"}
    check_retained(t, m)
