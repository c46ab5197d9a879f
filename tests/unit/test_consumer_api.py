"""pypaimon's ``Consumer`` / ``ConsumerManager`` (``Table.consumer_manager()``) over paimon_rs's
``FileIO`` (issue 29): the files Java's ``ConsumerManager`` writes, which snapshot expiry keeps."""

from __future__ import annotations

import json
import os
from datetime import datetime, timedelta

import pyarrow as pa
import pytest

from paimon_rs import Consumer, ConsumerManager, InvalidArgumentError, Schema
from paimon_rs.consumer import next_snapshot


def test_consumer_json():
    assert json.loads(Consumer(42).to_json()) == {"nextSnapshot": 42}
    assert Consumer.from_json('{"nextSnapshot": 7, "other": 1}') == Consumer(next_snapshot=7)
    with pytest.raises(InvalidArgumentError):
        Consumer.from_json('{"next": 7}')


def _table(catalog, n=3):
    catalog.create_table("db.c", Schema.from_pyarrow_schema(pa.schema([("id", pa.int64())])), False)
    t = catalog.get_table("db.c")
    for i in range(n):
        t.write(pa.table({"id": [i]}))
    return t


def test_manager_crud_and_branches(catalog):
    t = _table(catalog, 1)
    m = t.consumer_manager()
    assert m.consumer("a") is None and m.list_all_ids() == [] and m.min_next_snapshot() is None
    m.reset_consumer("a", Consumer(5))
    m.reset_consumer("b-1", Consumer(3))
    assert m.consumer("a") == Consumer(5) and m.consumers() == {"a": 5, "b-1": 3}
    assert m.min_next_snapshot() == 3
    # the file Java reads, and the one paimon_rs's streaming read keeps
    with open(os.path.join(t.table_path, "consumer", "consumer-a")) as f:
        assert json.load(f) == {"nextSnapshot": 5}
    assert next_snapshot(t, "a") == 5
    m.reset_consumer("a", Consumer(9))
    assert m.consumer("a").next_snapshot == 9
    m.clear_consumers("b.*")
    assert m.list_all_ids() == ["a"]
    m.reset_consumer("x", Consumer(1))
    m.clear_consumers(".*", "a")
    assert m.list_all_ids() == ["a"]
    m.delete_consumer("a")
    assert m.consumers() == {}
    for bad in ("", "../x", "."):
        with pytest.raises(InvalidArgumentError):
            m.reset_consumer(bad, Consumer(1))
    t.create_branch("b1")
    bm = m.with_branch("b1")
    bm.reset_consumer("c", Consumer(1))
    assert os.path.exists(os.path.join(t.table_path, "branch", "branch-b1", "consumer", "consumer-c"))
    assert m.list_all_ids() == [] and ConsumerManager(t.file_io, t.table_path, "b1").list_all_ids() == ["c"]
    assert t.switch_to_branch("b1").consumer_manager().consumers() == {"c": 1}
    # expire: consumers written before the time are deleted
    bm.expire(datetime.now() - timedelta(hours=1))
    assert bm.list_all_ids() == ["c"]
    bm.expire(datetime.now() + timedelta(hours=1))
    assert bm.list_all_ids() == []


def test_a_consumer_keeps_its_snapshots_from_expiry(catalog):
    t = _table(catalog, 4)
    t.consumer_manager().reset_consumer("reader", Consumer(2))
    t.expire_snapshots(retain_min=1, retain_max=1, older_than=0)
    assert [s.id for s in t.snapshot_manager().list_snapshots()] == [2, 3, 4]


def test_unreadable_file_is_retried_then_refused(catalog, monkeypatch):
    t = _table(catalog, 1)
    d = os.path.join(t.table_path, "consumer")
    os.makedirs(d)
    with open(os.path.join(d, "consumer-bad"), "w") as f:
        f.write("not json")
    sleeps = []
    monkeypatch.setattr("paimon_rs.consumer.time.sleep", sleeps.append)
    with pytest.raises(RuntimeError, match="Retry fail after 10 times"):
        t.consumer_manager().consumer("bad")
    assert len(sleeps) == 10
