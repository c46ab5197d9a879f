"""Read-only snapshot and partition API (issue 15): ``table.snapshot_manager()`` with pypaimon
2.1.0's names, ``table.snapshots()`` as Arrow, ``table.list_partitions()`` from the manifests,
checked against the snapshot files we committed and the files our scans see."""

from __future__ import annotations

import time
from collections import defaultdict

import pyarrow as pa
import pytest

from paimon_rs import Schema
from paimon_rs.snapshot import BATCH_COMMIT_IDENTIFIER, Partition, Snapshot

import stores
from unit_helpers import snapshots, write

# on local disk, and on S3 under -m long (tests/stores.py)
pytestmark = pytest.mark.stores("local", "s3-long")

SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.string())])
JSON_NAMES = {"schemaId": "schema_id", "baseManifestList": "base_manifest_list",
              "deltaManifestList": "delta_manifest_list", "totalRecordCount": "total_record_count",
              "deltaRecordCount": "delta_record_count", "commitUser": "commit_user",
              "commitIdentifier": "commit_identifier", "commitKind": "commit_kind", "timeMillis": "time_millis",
              "baseManifestListSize": "base_manifest_list_size",
              "deltaManifestListSize": "delta_manifest_list_size", "indexManifest": "index_manifest",
              "changelogManifestList": "changelog_manifest_list", "writerVersion": "writer_version",
              "nextRowId": "next_row_id", "changelogRecordCount": "changelog_record_count"}


def rows(ids, dt="a"):
    return pa.table({"dt": [dt] * len(ids), "id": ids, "v": [f"v{i}" for i in ids]}, schema=SCHEMA)


def table(catalog, name="t", partitioned=True, **options):
    catalog.create_table(f"db.{name}", Schema.from_pyarrow_schema(
        SCHEMA, partition_keys=["dt"] if partitioned else None, options={"bucket": "2", "bucket-key": "id",
                                                                        **options}), False)
    return catalog.get_table(f"db.{name}")


def as_fields(raw: dict) -> dict:
    return {JSON_NAMES.get(k, k): v for k, v in raw.items()}


def test_a_new_table_has_no_snapshots(catalog):
    t = table(catalog)
    sm = t.snapshot_manager()
    assert sm.get_latest_snapshot() is None and sm.try_get_earliest_snapshot() is None
    assert sm.list_snapshots() == [] and list(sm) == [] and len(sm) == 0
    assert sm.get_snapshot_by_id(1) is None
    assert t.snapshots().num_rows == 0 and t.list_partitions() == []


def test_snapshots_carry_the_fields_we_committed(catalog):
    t = table(catalog, bucket="1")
    t0 = int(time.time() * 1000)
    write(t, rows([1, 2, 3]))
    wb = t.new_batch_write_builder().with_commit_user("alice")
    w, c = wb.new_write(), wb.new_commit()
    w.write_arrow(rows([4, 5], "b"))
    c.commit(w.prepare_commit())
    w.close()
    write(t, rows([9]), overwrite={"dt": "a"})
    write(t, rows([10]))
    write(t, rows([11]))
    assert t.compact(full=True) == 6
    sm = t.snapshot_manager()
    got = sm.list_snapshots()
    raw = snapshots(t)
    assert [s.id for s in got] == [r["id"] for r in raw] == [1, 2, 3, 4, 5, 6]
    for s, r in zip(got, raw):
        fields = s.to_dict()
        for k, v in as_fields(r).items():
            assert fields[k] == v, k
        assert Snapshot.from_json(s.to_json()) == s
    assert [s.commit_kind for s in got] == ["APPEND", "APPEND", "OVERWRITE", "APPEND", "APPEND", "COMPACT"]
    assert [s.total_record_count for s in got] == [3, 5, 3, 4, 5, 5]
    assert [s.delta_record_count for s in got] == [3, 2, -2, 1, 1, 0]
    assert got[1].commit_user == "alice" and got[0].commit_user != "alice"
    assert all(s.commit_identifier == BATCH_COMMIT_IDENTIFIER for s in got)
    assert all(t0 - 1000 <= s.time_millis <= int(time.time() * 1000) for s in got)
    assert sm.get_latest_snapshot() == got[-1] and sm.get_snapshot_by_id(2) == got[1]
    assert sm.try_get_earliest_snapshot() == got[0] and sm.get_snapshot_by_id(99) is None
    assert list(sm) == got and sm.snapshot_ids() == [1, 2, 3, 4, 5, 6]
    assert sm.get_snapshots_batch([2, 7]) == {2: got[1], 7: None}
    assert sm.earlier_or_equal_time_mills(got[2].time_millis) in (got[2], got[3])
    assert sm.earlier_or_equal_time_mills(t0 - 10_000) is None

    arrow = t.snapshots()
    assert arrow.column("snapshot_id").to_pylist() == [1, 2, 3, 4, 5, 6]
    assert arrow.column("commit_kind").to_pylist() == [s.commit_kind for s in got]
    assert arrow.column("total_record_count").to_pylist() == [3, 5, 3, 4, 5, 5]
    assert arrow.schema.field("commit_time").type == pa.timestamp("ms")
    assert [v.value for v in arrow.column("commit_time")] == [s.time_millis for s in got]


def test_earliest_follows_expired_snapshots(catalog):
    t = table(catalog)
    for i in range(3):
        write(t, rows([i]))
    stores.remove(stores.join(t.table_path, "snapshot", "snapshot-1"))
    sm = t.snapshot_manager()
    assert sm.try_get_earliest_snapshot().id == 2 and sm.get_snapshot_by_id(1) is None
    assert [s.id for s in sm] == [2, 3]


def _split_totals(t):
    """Per partition: rows, bytes, files, buckets of the files a scan plans."""
    acc = defaultdict(lambda: [0, 0, 0, set()])
    for s in t.new_read_builder().new_scan().plan().splits():
        key = tuple(sorted((k, str(v)) for k, v in s.partition.to_dict().items()))
        for f in s.files:
            a = acc[key]
            a[0] += f.row_count
            a[1] += f.file_size
            a[2] += 1
            a[3].add(s.bucket)
    return {k: (r, b, n, len(bs)) for k, (r, b, n, bs) in acc.items()}


def test_list_partitions_matches_the_planned_files(catalog):
    t = table(catalog)
    t0 = int(time.time() * 1000)
    write(t, rows(list(range(10)), "a"))
    write(t, rows(list(range(10, 15)), "a"))
    write(t, rows([100], "b"))
    parts = t.list_partitions()
    assert [p.spec for p in parts] == [{"dt": "a"}, {"dt": "b"}]
    assert [p.record_count for p in parts] == [15, 1]
    assert [p.path for p in parts] == ["dt=a/", "dt=b/"]
    expected = _split_totals(t)
    for p in parts:
        key = tuple(sorted(p.spec.items()))
        assert (p.record_count, p.file_size_in_bytes, p.file_count, p.total_buckets) == expected[key]
        assert t0 - 1000 <= p.last_file_creation_time <= int(time.time() * 1000) + 1000
    assert parts[1].total_buckets == 1 and parts[0].total_buckets == 2
    # an overwrite of one partition and a compaction change the totals; as of snapshot 3 they
    # are still the old ones
    write(t, rows([7], "a"), overwrite={"dt": "a"})
    assert [(p.spec["dt"], p.record_count, p.file_count) for p in t.list_partitions()] == [("a", 1, 1), ("b", 1, 1)]
    assert t.list_partitions(3) == parts
    assert isinstance(parts[0], Partition)


def test_unpartitioned_and_null_partitions(catalog):
    t = table(catalog, "u", partitioned=False)
    write(t, rows([1, 2, 3]))
    (p,) = t.list_partitions()
    assert p.spec == {} and p.record_count == 3 and p.path == ""
    n = table(catalog, "n")
    write(n, pa.table({"dt": [None, "x"], "id": [1, 2], "v": ["a", "b"]}, schema=SCHEMA))
    assert sorted(p.spec["dt"] for p in n.list_partitions()) == ["__DEFAULT_PARTITION__", "x"]


def test_list_partitions_of_an_unknown_snapshot_is_refused(catalog):
    t = table(catalog)
    write(t, rows([1]))
    with pytest.raises(Exception, match="snapshot"):
        t.list_partitions(5)


def test_catalog_list_partitions_paged(catalog):
    t = table(catalog)
    for dt in ("2024-01-01", "2024-01-02", "2024-02-01", "x"):
        write(t, rows([1], dt))
    page = catalog.list_partitions_paged("db.t")
    assert [p.spec["dt"] for p in page.elements] == ["2024-01-01", "2024-01-02", "2024-02-01", "x"]
    assert page.next_page_token is None
    first = catalog.list_partitions_paged("db.t", max_results=3)
    assert len(first.elements) == 3 and first.next_page_token == "3"
    rest = catalog.list_partitions_paged("db.t", max_results=3, page_token=first.next_page_token)
    assert [p.spec["dt"] for p in rest.elements] == ["x"] and rest.next_page_token is None
    jan = catalog.list_partitions_paged("db.t", partition_name_pattern="dt=2024-01-*")
    assert [p.spec["dt"] for p in jan.elements] == ["2024-01-01", "2024-01-02"]
