"""Commit safety (issue #9): duplicate and stale messages, retries, abort, dynamic partition
overwrite, concurrent writers of the same keys, commit identifiers."""

from __future__ import annotations

import json
import multiprocessing as mp
import pickle
import subprocess
import sys
import warnings

import pyarrow as pa
import pytest

from paimon_rs import (
    CommitConflictError,
    DuplicateCommitError,
    InvalidArgumentError,
    Schema,
    StaleCommitMessageError,
)
from paimon_rs._core import CommitMessage

import stores
from unit_helpers import PK_SCHEMA, read, write

# every test runs on local disk and on S3 (tests/stores.py); on S3 only under -m long but for the
# tests marked stores below (a retry after a conflict, stale messages, abort, a commit identifier
# across processes), to keep CI short
pytestmark = pytest.mark.stores("local", "s3-long")


def rows(dts, ids, names=None):
    names = names or [f"n{i}" for i in ids]
    return pa.table({"dt": dts, "id": ids, "name": names, "price": [float(i) for i in ids]},
                    schema=PK_SCHEMA)


def prepared(table, data):
    w = table.new_batch_write_builder().new_write()
    w.write_arrow(data)
    msgs = w.prepare_commit()
    w.close()
    return msgs


def snapshot_ids(table):
    return stores.snapshot_ids(table.table_path)


def data_files(table, msgs):
    """Paths of the messages' data files (each message is one bucket of one partition)."""
    out = []
    for m in msgs:
        out += [p for p in stores.walk_files(table.table_path) if p.rsplit("/", 1)[1] in m.file_names]
    return out


def read_at(table, snapshot_id):
    from paimon_rs.table import TableScan
    rb = table.new_read_builder()
    plan = TableScan(table, None, snapshot_id).plan()
    return rb.new_read().to_arrow(plan.splits())


def ids_names(t):
    return sorted(zip(t.column("id").to_pylist(), t.column("name").to_pylist()))


# -- 1 / 11: the same messages twice ------------------------------------------------------------

@pytest.mark.parametrize("how", ["same_builder", "new_builder", "pickled", "one_call"])
def test_same_messages_twice_are_refused_and_kept(pk_table, how):
    wb = pk_table.new_batch_write_builder()
    w = wb.new_write()
    w.write_arrow(rows(["a", "b", "a"], [1, 2, 3]))
    msgs = w.prepare_commit()
    w.close()
    if how == "one_call":
        with pytest.raises(DuplicateCommitError, match="twice"):
            wb.new_commit().commit(msgs + msgs)
        assert snapshot_ids(pk_table) == []
        assert all(stores.exists(p) for p in data_files(pk_table, msgs))
        return
    assert wb.new_commit().commit(msgs) == 1
    if how == "same_builder":
        again, c = msgs, wb.new_commit()
    elif how == "new_builder":
        again, c = msgs, pk_table.new_batch_write_builder().new_commit()
    else:
        again = pickle.loads(pickle.dumps(msgs))
        c = pk_table.new_batch_write_builder().new_commit()
    with pytest.raises(DuplicateCommitError) as e:
        c.commit(again)
    assert not isinstance(e.value, InvalidArgumentError)  # item 11: its own class
    assert "already added" in str(e.value)
    assert any(f in str(e.value) for m in msgs for f in m.file_names)
    # refused before anything was written; the live files are intact and the table reads
    assert snapshot_ids(pk_table) == [1]
    assert all(stores.exists(p) for p in data_files(pk_table, msgs))
    assert ids_names(read(pk_table)) == [(1, "n1"), (2, "n2"), (3, "n3")]
    write(pk_table, rows(["a"], [4]))
    assert len(read(pk_table)) == 4


# -- 2: retry after CommitConflictError, stale messages -----------------------------------------

@pytest.mark.stores
def test_conflict_keeps_files_and_a_retry_lands(pk_table):
    """A commit that fails with CommitConflictError (here: the partition's bucket count
    differs) leaves the table unchanged and keeps the data files, so once the cause is gone the
    same messages land and read back (before: the files were deleted and the retry committed a
    snapshot pointing at them)."""
    write(pk_table, rows(["a", "b"], [1, 2]))
    three = pk_table.copy({"bucket": "3"})
    msgs = prepared(three, rows(["a", "a"], [10, 11]))
    c = three.new_batch_write_builder().new_commit()
    with pytest.raises(CommitConflictError, match="Total buckets of partition 'dt=a' differ: the table has 2 "
                                                  "buckets in partition 'dt=a', this commit writes 3"):
        c.commit(msgs)
    assert isinstance(CommitConflictError("x"), RuntimeError)
    assert snapshot_ids(pk_table) == [1]
    assert all(stores.exists(p) for p in data_files(pk_table, msgs))
    # the cause goes away: partition a is emptied
    write(pk_table, pa.table({c: [] for c in PK_SCHEMA.names}, schema=PK_SCHEMA), overwrite={"dt": "a"})
    assert c.commit(msgs) == 3  # the same commit object may retry after a failure
    assert ids_names(read(pk_table)) == [(2, "n2"), (10, "n10"), (11, "n11")]


def test_total_buckets_conflict_of_an_unpartitioned_table_names_the_table_once(catalog):
    """The message said "the unpartitioned table" twice and told to overwrite "the partition"
    (review34d F9)."""
    schema = Schema.from_pyarrow_schema(PK_SCHEMA, primary_keys=["id"], options={"bucket": "2"})
    catalog.create_table("db.u", schema, False)
    t = catalog.get_table("db.u")
    write(t, rows(["a", "b"], [1, 2]))
    msgs = prepared(t.copy({"bucket": "3"}), rows(["a"], [10]))
    with pytest.raises(CommitConflictError) as e:
        t.copy({"bucket": "3"}).new_batch_write_builder().new_commit().commit(msgs)
    msg = str(e.value)
    assert "Total buckets of the unpartitioned table differ: the table has 2 buckets, this commit writes 3" in msg
    assert msg.count("unpartitioned") == 1
    assert "overwrite the table to change its bucket count" in msg


@pytest.mark.stores
def test_messages_whose_files_are_gone_are_stale(pk_table):
    wb = pk_table.new_batch_write_builder()
    msgs = prepared(pk_table, rows(["a", "b"], [1, 2]))
    wb.new_commit().abort(msgs)
    with pytest.raises(StaleCommitMessageError) as e:
        wb.new_commit().commit(msgs)
    assert any(f in str(e.value) for m in msgs for f in m.file_names)
    assert snapshot_ids(pk_table) == []
    # a file removed by hand
    msgs = prepared(pk_table, rows(["a"], [1]))
    stores.remove(data_files(pk_table, msgs)[0])
    with pytest.raises(StaleCommitMessageError, match=msgs[0].file_names[0]):
        wb.new_commit().commit(msgs)
    assert snapshot_ids(pk_table) == []


# -- 3: abort of committed messages ---------------------------------------------------------------

def test_abort_of_committed_messages_keeps_live_files(pk_table):
    wb = pk_table.new_batch_write_builder()
    msgs = prepared(pk_table, rows(["a", "b"], [1, 2]))
    wb.new_commit().commit(msgs)
    with pytest.warns(RuntimeWarning, match="kept 2 data file"):
        wb.new_commit().abort(msgs)
    assert all(stores.exists(p) for p in data_files(pk_table, msgs))
    assert ids_names(read(pk_table)) == [(1, "n1"), (2, "n2")]


def test_abort_keeps_files_older_snapshots_reference(pk_table):
    """Overwritten files are not live any more but snapshot 1 still reads them (time travel)."""
    msgs = prepared(pk_table, rows(["a", "b"], [1, 2]))
    pk_table.new_batch_write_builder().new_commit().commit(msgs)
    write(pk_table, rows(["c"], [3]), overwrite={})
    assert ids_names(read(pk_table)) == [(3, "n3")]
    with pytest.warns(RuntimeWarning, match="kept 2"):
        pk_table.new_batch_write_builder().new_commit().abort(msgs)
    assert ids_names(read_at(pk_table, 1)) == [(1, "n1"), (2, "n2")]


@pytest.mark.stores
def test_abort_of_uncommitted_messages_deletes_their_files(pk_table):
    msgs = prepared(pk_table, rows(["a", "b"], [1, 2]))
    paths = data_files(pk_table, msgs)
    assert len(paths) == 2
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pk_table.new_batch_write_builder().new_commit().abort(msgs)
    assert not any(stores.exists(p) for p in paths)


def test_abort_in_except_does_not_mask_the_commit_error(pk_table):
    msgs = prepared(pk_table, rows(["a"], [1]))
    pk_table.new_batch_write_builder().new_commit().commit(msgs)
    c = pk_table.new_batch_write_builder().new_commit()
    with pytest.raises(DuplicateCommitError), pytest.warns(RuntimeWarning):
        try:
            c.commit(msgs)
        except Exception:
            c.abort(msgs)
            raise
    assert ids_names(read(pk_table)) == [(1, "n1")]


def test_abort_with_unreadable_metadata_deletes_nothing(pk_table):
    write(pk_table, rows(["a"], [1]))
    msgs = prepared(pk_table, rows(["a"], [2]))
    stores.write_bytes(stores.join(pk_table.table_path, "snapshot", "snapshot-1"), b"{not json")
    with pytest.warns(RuntimeWarning, match="deleted no file"):
        pk_table.new_batch_write_builder().new_commit().abort(msgs)
    assert all(stores.exists(p) for p in data_files(pk_table, msgs))


# -- 5: dynamic partition overwrite ---------------------------------------------------------------

def overwrite(table, data, *spec):
    wb = table.new_batch_write_builder().overwrite(*spec)
    w, c = wb.new_write(), wb.new_commit()
    w.write_arrow(data)
    sid = c.commit(w.prepare_commit())
    w.close()
    return sid


def test_overwrite_without_partition_replaces_the_written_partitions(pk_table):
    write(pk_table, rows(["a", "a", "b"], [1, 2, 3]))
    overwrite(pk_table, rows(["a"], [9]))
    assert ids_names(read(pk_table)) == [(3, "n3"), (9, "n9")]
    # no data: nothing is replaced, no snapshot (Java skips the commit)
    assert overwrite(pk_table, rows([], [])) is None
    assert snapshot_ids(pk_table) == [1, 2]
    # {} keeps meaning the whole table, a static partition that partition (emptied if no data)
    overwrite(pk_table, rows(["c"], [5]), {"dt": "c"})
    overwrite(pk_table, rows([], []), {"dt": "a"})
    assert ids_names(read(pk_table)) == [(3, "n3"), (5, "n5")]
    overwrite(pk_table, rows(["d"], [6]), {})
    assert ids_names(read(pk_table)) == [(6, "n6")]


def test_dynamic_partition_overwrite_off_replaces_the_table(pk_table):
    write(pk_table, rows(["a", "b"], [1, 2]))
    off = pk_table.copy({"dynamic-partition-overwrite": "false"})
    overwrite(off, rows(["a"], [9]))
    assert ids_names(read(pk_table)) == [(9, "n9")]


def test_dynamic_partition_overwrite_option_is_accepted_and_validated(catalog):
    schema = Schema.from_pyarrow_schema(PK_SCHEMA, partition_keys=["dt"], primary_keys=["dt", "id"],
                                        options={"bucket": "1", "dynamic-partition-overwrite": "false"})
    catalog.create_table("db.off", schema, False)
    t = catalog.get_table("db.off")
    write(t, rows(["a", "b"], [1, 2]))
    overwrite(t, rows(["b"], [3]))
    assert ids_names(read(t)) == [(3, "n3")]
    with pytest.raises(InvalidArgumentError, match="dynamic-partition-overwrite"):
        t.copy({"dynamic-partition-overwrite": "maybe"})


def test_overwrite_of_an_unpartitioned_table_replaces_it(catalog):
    schema = Schema.from_pyarrow_schema(PK_SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    catalog.create_table("db.u", schema, False)
    t = catalog.get_table("db.u")
    write(t, rows(["a", "b"], [1, 2]))
    overwrite(t, rows(["c"], [3]))
    assert ids_names(read(t)) == [(3, "n3")]


# -- 9: two writers of the same keys ---------------------------------------------------------------

def test_second_writer_of_the_same_keys_conflicts(pk_table):
    write(pk_table, rows(["a"], [1], ["v0"]))
    # both writers restore sequence numbers from snapshot 1
    first = prepared(pk_table, rows(["a"], [1], ["first"]))
    second = prepared(pk_table, rows(["a"], [1], ["second"]))
    wb = pk_table.new_batch_write_builder()
    assert wb.new_commit().commit(first) == 2
    c = wb.new_commit()
    with pytest.raises(CommitConflictError, match="concurrent writer") as e:
        c.commit(second)
    assert "snapshot 2" in str(e.value)
    assert snapshot_ids(pk_table) == [1, 2]
    assert ids_names(read(pk_table)) == [(1, "first")]
    # the files were kept; abort them and write again: the new write continues after snapshot 2
    c.abort(second)
    assert not any(stores.exists(p) for p in data_files(pk_table, second))
    write(pk_table, rows(["a"], [1], ["second"]))
    assert ids_names(read(pk_table)) == [(1, "second")]


def test_concurrent_writers_of_other_keys_both_land(catalog):
    schema = Schema.from_pyarrow_schema(PK_SCHEMA, partition_keys=["dt"], primary_keys=["dt", "id"],
                                        options={"bucket": "1"})
    catalog.create_table("db.one", schema, False)
    t = catalog.get_table("db.one")
    low = prepared(t, rows(["a", "a"], [1, 2]))
    high = prepared(t, rows(["a", "a"], [10, 11]))
    other = prepared(t, rows(["b"], [1]))
    for m in (low, high, other):
        t.new_batch_write_builder().new_commit().commit(m)
    assert len(read(t)) == 5


def test_old_messages_without_a_restored_snapshot_still_load(pk_table):
    msgs = prepared(pk_table, rows(["a"], [1]))
    doc = json.loads(msgs[0].to_bytes())
    assert doc["restored_snapshot"] is None  # the table was empty
    del doc["restored_snapshot"]
    old = CommitMessage.from_bytes(json.dumps(doc).encode())
    assert pk_table.new_batch_write_builder().new_commit().commit([old]) == 1
    assert ids_names(read(pk_table)) == [(1, "n1")]


def _race_worker(warehouse, options, worker, rounds, out):
    from paimon_rs import CatalogFactory, CommitConflictError
    # write-only: a commit is one snapshot (a compacting writer adds a COMPACT one, and its
    # compactions of the shared bucket would conflict, as Java's concurrent writers do)
    table = CatalogFactory.create({"warehouse": warehouse, **options}).get_table("db.t").copy({"write-only": "true"})
    landed = []
    for i in range(rounds):
        value = f"w{worker}-{i}"
        while True:
            wb = table.new_batch_write_builder()
            w, c = wb.new_write(), wb.new_commit()
            w.write_arrow(rows(["a"], [1], [value]))
            msgs = w.prepare_commit()
            w.close()
            try:
                landed.append((c.commit(msgs), value))
                break
            except CommitConflictError:
                c.abort(msgs)
    out.put(landed)


def test_multi_process_race_no_commit_is_hidden(pk_table, warehouse):
    """Writers in several processes upsert one key; every snapshot must read the value of the
    commit that made it (before: a later commit was often hidden by an earlier one)."""
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    procs = [ctx.Process(target=_race_worker, args=(warehouse.uri, warehouse.options, i, 5, out)) for i in range(3)]
    for p in procs:
        p.start()
    landed = [x for _ in procs for x in out.get(timeout=300)]
    for p in procs:
        p.join()
        assert p.exitcode == 0
    assert sorted(s for s, _ in landed) == list(range(1, 16))
    for sid, value in landed:
        assert ids_names(read_at(pk_table, sid)) == [(1, value)], sid


# -- commit identifier and commit user -------------------------------------------------------------

@pytest.mark.stores
def test_commit_identifier_lands_once_across_processes(pk_table, tmp_path, warehouse):
    msgs = prepared(pk_table, rows(["a", "b"], [1, 2]))
    wb = pk_table.new_batch_write_builder().with_commit_user("job-7")
    assert wb.new_commit().commit_user == "job-7"
    assert wb.new_commit().commit(msgs, commit_identifier=5) == 1
    # a retry with the same (user, identifier) from a new builder: the snapshot's id, no commit
    wb2 = pk_table.new_batch_write_builder().with_commit_user("job-7")
    assert wb2.new_commit().commit(msgs, 5) == 1
    # ... and from another process, with the pickled messages
    blob = tmp_path / "msgs.pkl"
    blob.write_bytes(pickle.dumps(msgs))
    code = (
        "import pickle, sys\n"
        "from paimon_rs import CatalogFactory\n"
        f"t = CatalogFactory.create({{'warehouse': {warehouse.uri!r}, **{warehouse.options!r}}}).get_table('db.t')\n"
        f"msgs = pickle.loads(open({str(blob)!r}, 'rb').read())\n"
        "wb = t.new_batch_write_builder().with_commit_user('job-7')\n"
        "print(wb.new_commit().commit(msgs, commit_identifier=5))\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert res.stdout.strip() == "1"
    assert snapshot_ids(pk_table) == [1]
    snap = stores.read_json(stores.join(pk_table.table_path, "snapshot", "snapshot-1"))
    assert (snap["commitUser"], snap["commitIdentifier"]) == ("job-7", 5)
    # without an identifier (or by another user) it is a duplicate
    with pytest.raises(DuplicateCommitError):
        wb2.new_commit().commit(msgs)
    with pytest.raises(DuplicateCommitError):
        pk_table.new_batch_write_builder().with_commit_user("job-8").new_commit().commit(msgs, 5)
    # identifiers of a user increase
    more = prepared(pk_table, rows(["a"], [3]))
    with pytest.raises(InvalidArgumentError, match="must increase"):
        wb2.new_commit().commit(more, 4)
    assert wb2.new_commit().commit(more, 6) == 2


@pytest.mark.parametrize("bad", [True, 1.5, "5", 2**63 - 1, 2**63])
def test_bad_commit_identifiers_are_refused(pk_table, bad):
    msgs = prepared(pk_table, rows(["a"], [1]))
    with pytest.raises(InvalidArgumentError, match="commit_identifier"):
        pk_table.new_batch_write_builder().new_commit().commit(msgs, bad)


def test_with_commit_user_refuses_an_empty_user(pk_table):
    with pytest.raises(InvalidArgumentError):
        pk_table.new_batch_write_builder().with_commit_user("")

