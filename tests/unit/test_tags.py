"""Tags: create, list, read by `scan.tag-name`, delete (with the files only a tag kept),
retention, and automatic creation on commit, against a model of every snapshot's rows."""

from __future__ import annotations

import datetime as dt
import time

import pytest
from table_ops_helpers import Model, disk_usage, make_table, orphans, read_rows, snapshot_ids

import paimon_rs

import stores

# on local disk, and on S3 under -m long (tests/stores.py)
pytestmark = pytest.mark.stores("local", "s3-long")


def tag_json(table, name):
    return stores.read_json(stores.join(table.table_path, "tag", f"tag-{name}"))


def test_create_list_read_and_delete(catalog):
    t = make_table(catalog)
    m = Model(t)
    for i in range(4):
        m.upsert({i: f"v{i}", 0: f"zero{i}"})
    t.create_tag("latest")
    t.create_tag("second", snapshot_id=2)
    assert t.list_tags() == ["latest", "second"]
    infos = {i.name: i for i in t.tags()}
    assert infos["second"].snapshot_id == 2 and infos["latest"].snapshot_id == t.latest_snapshot_id()
    assert read_rows(t, {"scan.tag-name": "second"}) == m.snapshots[2]
    assert read_rows(t, {"scan.tag-name": "latest"}) == m.current()
    # Paimon's tag file: the snapshot's JSON; no retention fields without a retention
    j = tag_json(t, "second")
    assert j["id"] == 2 and "tagCreateTime" not in j and "tagTimeRetained" not in j
    assert t.delete_tag("second") is True
    assert t.delete_tag("second") is False
    assert t.list_tags() == ["latest"]


def test_create_refusals(catalog):
    t = make_table(catalog)
    with pytest.raises(ValueError, match="No snapshot"):
        t.create_tag("a")
    Model(t).upsert({1: "a"})
    t.create_tag("a")
    with pytest.raises(ValueError, match="already exists"):
        t.create_tag("a")
    t.create_tag("a", ignore_if_exists=True)
    with pytest.raises(ValueError, match="does not exist"):
        t.create_tag("b", snapshot_id=9)
    with pytest.raises(ValueError, match="not a valid tag name"):
        t.create_tag("x/y")
    with pytest.raises(paimon_rs.InvalidArgumentError):
        t.create_tag(" ")


def test_retention_fields_and_time_expiry(catalog):
    t = make_table(catalog)
    m = Model(t)
    m.upsert({1: "a"})
    t.create_tag("day", time_retained="1 d")
    t.create_tag("short", time_retained=dt.timedelta(milliseconds=1))
    j = tag_json(t, "day")
    assert j["tagTimeRetained"] == 86400.0
    assert len(j["tagCreateTime"]) == 7 and j["tagCreateTime"][0] >= 2024
    info = {i.name: i for i in t.tags()}
    assert info["day"].time_retained_millis == 86_400_000
    time.sleep(0.05)
    m.upsert({2: "b"})  # a commit expires tags past their retention (Java's TagTimeExpire)
    assert t.list_tags() == ["day"]


def test_time_expiry_follows_tag_time_expire_enabled(catalog):
    t = make_table(catalog, options={"tag.time-expire-enabled": "false"})
    m = Model(t)
    m.upsert({1: "a"})
    t.create_tag("short", time_retained=dt.timedelta(milliseconds=1))
    time.sleep(0.05)
    m.upsert({2: "b"})  # Java's commit expires no tag by time under this option
    assert t.list_tags() == ["short"]
    with pytest.raises(ValueError, match="tag.time-expire-enabled"):
        make_table(catalog, name="db.bad", options={"tag.time-expire-enabled": "sometimes"})


def test_deleting_the_tag_of_an_expired_snapshot_frees_its_files(catalog):
    t = make_table(catalog)
    m = Model(t)
    for i in range(6):
        m.upsert({i % 2: f"v{i}"})
        if i == 3:
            m.compact()
    t.create_tag("old", snapshot_id=1)
    t.expire_snapshots(retain_min=1, older_than=0)
    assert read_rows(t, {"scan.tag-name": "old"}) == m.snapshots[1]
    before = disk_usage(t)[1]
    t.delete_tag("old")
    assert disk_usage(t)[1] < before
    assert read_rows(t) == m.current()
    assert orphans(t) == []


def test_automatic_creation_process_time(catalog):
    t = make_table(catalog, options={"tag.automatic-creation": "process-time",
                                     "tag.creation-period": "daily"})
    m = Model(t)
    m.upsert({1: "a"})
    yesterday = (dt.datetime.now() - dt.timedelta(days=1)).strftime("%Y-%m-%d")
    assert t.list_tags() == [yesterday]
    m.upsert({2: "b"})
    assert t.list_tags() == [yesterday], "the next tag is due only after today ends"
    assert read_rows(t, {"scan.tag-name": yesterday}) == m.snapshots[1]


def test_automatic_creation_keeps_num_retained_max_and_leaves_manual_tags(catalog):
    t = make_table(catalog)
    Model(t).upsert({1: "a"})
    # older automatic tags (as if created on earlier days) and a manual one
    for name in ["2020-01-01 00", "2020-01-02 05"]:
        t.create_tag(name)
    t.create_tag("manual")
    auto = t.copy({"tag.automatic-creation": "process-time", "tag.creation-period": "hourly",
                   "tag.num-retained-max": "1"})
    Model(auto).upsert({2: "b"})
    hour = (dt.datetime.now() - dt.timedelta(hours=1)).strftime("%Y-%m-%d %H")
    assert t.list_tags() == sorted([hour, "manual"])
    assert {i.name: i.snapshot_id for i in t.tags()}[hour] == 2


def test_automatic_creation_refuses_what_it_cannot_honour(catalog):
    with pytest.raises(paimon_rs.UnsupportedError, match="batch"):
        t = make_table(catalog, options={"tag.automatic-creation": "batch"})
        t.new_batch_write_builder().new_write()
    with pytest.raises(paimon_rs.InvalidArgumentError, match="tag.creation-period"):
        t = make_table(catalog, "db.t2", options={"tag.automatic-creation": "process-time",
                                                  "tag.creation-period": "weekly"})
        t.new_batch_write_builder().new_write()


def test_watermark_mode_without_watermarks_creates_nothing(catalog):
    t = make_table(catalog, options={"tag.automatic-creation": "watermark"})
    Model(t).upsert({1: "a"})
    assert t.list_tags() == [] and snapshot_ids(t) == [1]
