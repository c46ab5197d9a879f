"""Lost or damaged snapshot metadata is a CorruptFileError naming the file, for reads and writes
alike: never an empty (or older) table that the next commit starts over from (issue #9, items 6
and 11)."""

from __future__ import annotations

import glob
import json
import os
import time

import pyarrow as pa
import pytest

import paimon_rs

from unit_helpers import PK_SCHEMA, read, write


def rows(ids, name="x"):
    n = len(ids)
    return pa.table({"dt": ["a"] * n, "id": ids, "name": [name] * n, "price": [1.0] * n},
                    schema=PK_SCHEMA)


def snap_dir(table):
    return os.path.join(table.table_path, "snapshot")


def snapshot_names(table):
    return sorted(n for n in os.listdir(snap_dir(table)) if n.startswith("snapshot-"))


def hint(table, name, value=None):
    p = os.path.join(snap_dir(table), name)
    if value is None:
        if os.path.exists(p):
            os.remove(p)
    else:
        with open(p, "w") as f:
            f.write(str(value))


def age_manifests(table, seconds=3600):
    past = time.time() - seconds
    for p in glob.glob(os.path.join(table.table_path, "manifest", "*")):
        os.utime(p, (past, past))


def assert_reads_and_writes_refused(table, match, latest_id=True):
    with pytest.raises(paimon_rs.CorruptFileError, match=match):
        read(table)
    if latest_id:  # the latest id alone (without reading the snapshot) is refused too
        with pytest.raises(paimon_rs.CorruptFileError, match=match):
            table.latest_snapshot_id()
    with pytest.raises(paimon_rs.CorruptFileError, match=match):
        write(table, rows([9]))


def test_latest_hint_naming_a_deleted_snapshot(pk_table):
    write(pk_table, rows([1, 2]))
    os.remove(os.path.join(snap_dir(pk_table), "snapshot-1"))  # LATEST still says 1
    assert_reads_and_writes_refused(pk_table, "snapshot-1.*LATEST hint")
    assert snapshot_names(pk_table) == []  # no fresh snapshot-1 holding only the new rows


def test_latest_hint_beyond_the_newest_snapshot(pk_table):
    for i in range(3):
        write(pk_table, rows([i]))
    os.remove(os.path.join(snap_dir(pk_table), "snapshot-3"))  # would silently read snapshot 2
    assert_reads_and_writes_refused(pk_table, "snapshot-3.*newest snapshot left is 2")
    assert snapshot_names(pk_table) == ["snapshot-1", "snapshot-2"]


def test_hints_without_any_snapshot(pk_table):
    write(pk_table, rows([1]))
    os.remove(os.path.join(snap_dir(pk_table), "snapshot-1"))
    hint(pk_table, "LATEST")
    hint(pk_table, "EARLIEST", 1)
    assert_reads_and_writes_refused(pk_table, "EARLIEST.*holds no snapshot")


def test_manifests_without_any_snapshot(pk_table):
    write(pk_table, rows([1]))
    os.remove(os.path.join(snap_dir(pk_table), "snapshot-1"))
    hint(pk_table, "LATEST")
    hint(pk_table, "EARLIEST")  # a crashed first commit has no hint (its expiry writes it)
    age_manifests(pk_table)
    # the message tells how to recover from a crashed first commit, and warns about lost ones
    assert_reads_and_writes_refused(pk_table, "manifest.*without any snapshot.*remove_orphan_files")
    assert snapshot_names(pk_table) == []


def test_manifests_of_a_first_commit_in_flight_do_not_block(pk_table):
    # manifests younger than the grace period may be another process's first commit, between
    # its manifests and its snapshot: the table is still empty, and committing is allowed
    write(pk_table, rows([1]))
    os.remove(os.path.join(snap_dir(pk_table), "snapshot-1"))
    hint(pk_table, "LATEST")
    hint(pk_table, "EARLIEST")  # a crashed first commit has no hint (its expiry writes it)
    assert read(pk_table).num_rows == 0
    assert write(pk_table, rows([2])) == 1


def test_stale_hints_are_only_hints(pk_table):
    for i in range(3):
        write(pk_table, rows([i]))
    hint(pk_table, "LATEST", 2)  # a hint that lags (its update failed): newer snapshot listed
    assert pk_table.latest_snapshot_id() == 3
    hint(pk_table, "LATEST", "garbage")  # unreadable hint: listed, as Java does
    assert pk_table.latest_snapshot_id() == 3
    hint(pk_table, "LATEST")
    assert pk_table.latest_snapshot_id() == 3
    # expired snapshots (deleted from the low end, EARLIEST moved) are normal
    os.remove(os.path.join(snap_dir(pk_table), "snapshot-1"))
    hint(pk_table, "EARLIEST", 2)
    assert read(pk_table).num_rows == 3
    assert write(pk_table, rows([7])) == 4


def test_invalid_utf8_in_snapshot_json(pk_table):
    write(pk_table, rows([1]))
    p = os.path.join(snap_dir(pk_table), "snapshot-1")
    data = open(p, "rb").read().replace(b'"APPEND"', b'"APP\xff\xfeND"')
    os.chmod(p, 0o644)
    with open(p, "wb") as f:
        f.write(data)
    assert_reads_and_writes_refused(pk_table, "snapshot-1.*UTF-8", latest_id=False)


def test_invalid_utf8_in_schema_json(catalog, pk_table):
    p = os.path.join(pk_table.table_path, "schema", "schema-0")
    data = open(p, "rb").read().replace(b'"id"', b'"i\xffd"', 1)
    os.chmod(p, 0o644)
    with open(p, "wb") as f:
        f.write(data)
    with pytest.raises(paimon_rs.CorruptFileError, match="schema-0.*UTF-8"):
        catalog.get_table("db.t")


def test_missing_manifest_list_names_file_and_snapshot(pk_table):
    write(pk_table, rows([1]))
    write(pk_table, rows([2]))
    snap = json.load(open(os.path.join(snap_dir(pk_table), "snapshot-2")))
    os.remove(os.path.join(pk_table.table_path, "manifest", snap["deltaManifestList"]))
    match = f"{snap['deltaManifestList']}.*missing.*snapshot 2"
    with pytest.raises(paimon_rs.CorruptFileError, match=match):
        read(pk_table)
    with pytest.raises(paimon_rs.CorruptFileError, match=snap["deltaManifestList"]):
        write(pk_table, rows([3]))


def test_missing_manifest_names_file_and_snapshot(pk_table):
    write(pk_table, rows([1]))
    manifests = [p for p in glob.glob(os.path.join(pk_table.table_path, "manifest", "manifest-*"))
                 if not os.path.basename(p).startswith("manifest-list-")]
    assert len(manifests) == 1
    os.remove(manifests[0])
    name = os.path.basename(manifests[0])
    with pytest.raises(paimon_rs.CorruptFileError, match=f"{name}.*missing.*snapshot 1"):
        read(pk_table)
    with pytest.raises(paimon_rs.CorruptFileError, match=name):
        write(pk_table, rows([3]))
