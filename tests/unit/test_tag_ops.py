"""rename_tag, replace_tag and rollback_to_timestamp (pypaimon's names, Java's semantics and
refusals), against a model of every snapshot's rows."""

from __future__ import annotations

import json
import os

import pytest
from table_ops_helpers import history, make_table, orphans, read_rows, snapshot_ids

from paimon_rs.exceptions import InvalidArgumentError


def test_rename_tag(catalog):
    t = make_table(catalog)
    m = history(t)
    t.create_tag("a", snapshot_id=2)
    t.create_tag("b", snapshot_id=3)
    t.rename_tag("a", "renamed")
    assert t.list_tags() == ["b", "renamed"]
    assert read_rows(t, {"scan.tag-name": "renamed"}) == m.snapshots[2]
    for old, new, msg in [
        ("", "x", "Original tag name shouldn't be blank."),
        ("nope", "x", "Tag 'nope' doesn't exist."),
        ("b", " ", "New tag name shouldn't be blank."),
        ("b", "renamed", "Tag 'renamed' already exists."),
    ]:
        with pytest.raises(InvalidArgumentError, match=msg):
            t.rename_tag(old, new)
    assert t.list_tags() == ["b", "renamed"]


def test_replace_tag(catalog):
    t = make_table(catalog)
    m = history(t)
    t.create_tag("a", snapshot_id=2)
    t.replace_tag("a", 4)
    assert read_rows(t, {"scan.tag-name": "a"}) == m.snapshots[4]
    # no snapshot id: the latest; a retention is written as Java writes it
    t.replace_tag("a", time_retained="1 d")
    info = {i.name: i for i in t.tags()}["a"]
    assert info.snapshot_id == t.latest_snapshot_id() and info.time_retained_millis == 86_400_000
    with open(os.path.join(t.table_path, "tag", "tag-a")) as f:
        assert json.load(f)["tagTimeRetained"] == 86400.0
    with pytest.raises(InvalidArgumentError, match="Tag 'nope' doesn't exist."):
        t.replace_tag("nope", 1)
    with pytest.raises(InvalidArgumentError, match="Snapshot id '99' doesn't exist."):
        t.replace_tag("a", 99)
    with pytest.raises(InvalidArgumentError, match="Tag name shouldn't be blank."):
        t.replace_tag(" ", 1)
    empty = make_table(catalog, "db.empty")
    with pytest.raises(InvalidArgumentError, match="latest snapshot doesn't exist"):
        empty.replace_tag("a")


def test_replace_tag_of_an_expired_snapshot_deletes_what_only_it_kept(catalog):
    t = make_table(catalog)
    m = history(t)
    m.compact()
    t.create_tag("old", snapshot_id=1)
    t.expire_snapshots(retain_min=1, older_than=0)
    assert 1 not in snapshot_ids(t) and read_rows(t, {"scan.tag-name": "old"}) == m.snapshots[1]
    r = t.replace_tag("old")
    assert r.files, "the files only the old tag kept are deleted"
    assert orphans(t) == []
    assert read_rows(t, {"scan.tag-name": "old"}) == m.current() == read_rows(t)


def test_rollback_to_timestamp(catalog):
    t = make_table(catalog)
    m = history(t)
    times = {s.id: s.time_millis for s in t.snapshot_manager().list_snapshots()}

    def newest_at(ms):  # Java's earlierOrEqualTimeMills on the model
        return max(i for i, tm in times.items() if tm <= ms)

    # exactly at snapshot 3's commit time, then one millisecond before it
    for ms in (times[3], times[3] - 1):
        want = newest_at(ms)
        t.rollback_to_timestamp(ms)
        assert snapshot_ids(t) == list(range(1, want + 1)) and read_rows(t) == m.snapshots[want]
    with pytest.raises(InvalidArgumentError,
                       match="No snapshot found with timestamp earlier than or equal to 5ms."):
        t.rollback_to_timestamp(5)
    assert snapshot_ids(t)[0] == 1
