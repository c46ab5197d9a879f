"""Dropping partitions (one OVERWRITE snapshot, as Java's dropPartitions) and partition
expiration (partition.expiration-time, values-time), checked against a model of the rows."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest

from paimon_rs import InvalidArgumentError, Schema, UnsupportedError

from unit_helpers import read, snapshots, write

# on local disk, and on S3 under -m long (tests/stores.py)
pytestmark = pytest.mark.stores("local", "s3-long")

SCHEMA = pa.schema([("dt", pa.string()), ("hr", pa.int32()), ("id", pa.int64()), ("v", pa.string())])


def _table(catalog, name="p", options=None, pk=True):
    opts = {"bucket": "2"} if pk else {}
    opts.update(options or {})
    schema = Schema.from_pyarrow_schema(SCHEMA, partition_keys=["dt", "hr"],
                                        primary_keys=["dt", "hr", "id"] if pk else None, options=opts)
    catalog.create_table(f"db.{name}", schema, False)
    return catalog.get_table(f"db.{name}")


def _rows(parts, n=3):
    rows = [{"dt": d, "hr": h, "id": i, "v": f"{d}/{h}/{i}"} for d, h in parts for i in range(n)]
    return pa.Table.from_pylist(rows, schema=SCHEMA)


def _key(d, h, i):
    return (d is None, d or "", h, i)


def _left(table):
    return sorted(_key(r["dt"], r["hr"], r["id"]) for r in read(table).to_pylist())


def _model(parts, n=3):
    return sorted(_key(d, h, i) for d, h in parts for i in range(n))


@pytest.mark.parametrize("pk", [True, False], ids=["pk", "append"])
def test_drop_partitions_is_one_overwrite_snapshot(catalog, pk):
    t = _table(catalog, pk=pk)
    parts = [("a", 1), ("a", 2), ("b", 1), ("c", 1)] + ([] if pk else [(None, 1)])
    write(t, _rows(parts))
    before = len(snapshots(t))
    # a full spec, a prefix of the keys, and the default partition name for NULL
    sid = t.drop_partitions([{"dt": "a", "hr": 2}, {"dt": "b"}, {"dt": "__DEFAULT_PARTITION__"}])
    snaps = snapshots(t)
    assert len(snaps) == before + 1 and snaps[-1]["id"] == sid
    assert snaps[-1]["commitKind"] == "OVERWRITE"
    assert _left(t) == _model([("a", 1), ("c", 1)])
    catalog.drop_partitions("db.p", [{"dt": "c", "hr": 1}])
    assert _left(t) == _model([("a", 1)])
    # nothing in them: no snapshot
    assert t.drop_partitions([{"dt": "zzz"}]) is None
    assert len(snapshots(t)) == before + 2
    # time travel still sees the dropped rows
    assert len(read(t.copy({"scan.snapshot-id": str(before)}))) == 3 * len(parts)


def test_drop_partitions_refusals(catalog):
    t = _table(catalog)
    write(t, _rows([("a", 1)]))
    with pytest.raises(InvalidArgumentError, match="Partitions list cannot be empty"):
        t.drop_partitions([])
    with pytest.raises(InvalidArgumentError, match="Partitions list cannot be empty"):
        catalog.drop_partitions("db.p", [])
    with pytest.raises(InvalidArgumentError, match="'id' is not a partition column"):
        t.drop_partitions([{"id": 1}])
    with pytest.raises(InvalidArgumentError, match="does not fit 'hr'"):
        t.drop_partitions([{"dt": "a", "hr": "x"}])
    with t.new_batch_write_builder().new_commit() as c:
        c.truncate_partitions([{"dt": "a"}])
        assert c.batch_committed
    assert _left(t) == []


def _day(days_ago: int, fmt: str = "%Y%m%d") -> str:
    return (dt.datetime.now() - dt.timedelta(days=days_ago)).strftime(fmt)


def test_partitions_expire_after_a_commit(catalog):
    """check-interval 0: every commit checks; the expired partitions go in their own OVERWRITE
    snapshot after the commit's APPEND. A value that is not a time, and NULL, never expire."""
    t = _table(catalog, pk=False, options={"partition.expiration-time": "2 d",
                                           "partition.expiration-check-interval": "0 s",
                                           "partition.timestamp-formatter": "yyyyMMdd"})
    old, older, new = _day(5), _day(30), _day(0)
    write(t, _rows([(old, 1), (older, 3), (new, 1), ("not-a-date", 1), (None, 2)]))
    snaps = snapshots(t)
    assert [s["commitKind"] for s in snaps] == ["APPEND", "OVERWRITE"]
    assert _left(t) == _model([(new, 1), ("not-a-date", 1), (None, 2)])
    write(t, _rows([(new, 2)]))
    assert [s["commitKind"] for s in snapshots(t)] == ["APPEND", "OVERWRITE", "APPEND"]


def test_timestamp_pattern_and_max_num(catalog):
    t = _table(catalog, options={"partition.expiration-time": "1 h",
                                 "partition.expiration-check-interval": "0 s",
                                 "partition.expiration-max-num": "2",
                                 "partition.timestamp-pattern": "$dt $hr:00:00"})
    d = _day(3, "%Y-%m-%d")
    now = _day(0, "%Y-%m-%d")
    hour = dt.datetime.now().hour
    write(t, _rows([(d, 1), (d, 2), (d, 3), (now, hour)]))
    # the two smallest (by values) of the three expired ones; the third goes next commit
    assert _left(t) == _model([(d, 3), (now, hour)])
    write(t, _rows([(now, hour)], n=1))
    assert _left(t) == _model([(now, hour)])


def test_default_interval_waits_and_expire_partitions_runs_now(catalog):
    """With the default check interval (1 h) a new commit object does not check yet (its last
    check is at most an interval ago, as in Java); expire_partitions() runs now."""
    t = _table(catalog, options={"partition.expiration-time": "1 d"})
    old = _day(10, "%Y-%m-%d")
    write(t, _rows([(old, 1), (_day(0, "%Y-%m-%d"), 1)]))
    assert len(_left(t)) == 6
    assert t.expire_partitions() == [{"dt": old, "hr": "1"}]
    assert len(_left(t)) == 3
    assert t.expire_partitions() == []


def test_unsupported_expiration_settings_refuse_the_commit(catalog):
    t = _table(catalog, options={"partition.expiration-time": "1 d",
                                 "partition.expiration-strategy": "update-time"})
    with pytest.raises(UnsupportedError, match="update-time"):
        write(t, _rows([("2020-01-01", 1)]))
    assert t.latest_snapshot_id() is None
    t2 = _table(catalog, "p2", options={"partition.expiration-time": "1 d",
                                        "partition.timestamp-formatter": "yyyy-MM-dd EEE"})
    with pytest.raises(UnsupportedError, match="EEE"):
        write(t2, _rows([("2020-01-01", 1)]))
    # an unpartitioned table has nothing to expire: the option never blocks its writes
    s = Schema.from_pyarrow_schema(pa.schema([("id", pa.int64())]),
                                   options={"partition.expiration-time": "1 d"})
    catalog.create_table("db.u", s, False)
    write(catalog.get_table("db.u"), pa.table({"id": [1]}))
