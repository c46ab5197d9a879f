"""System tables (``catalog.get_table("db.t$files")``, paimon_rs.system_tables): Java's columns
and types, each table's rows checked against what the table API says of the same table (a
partitioned primary-key table and a partitioned append table), time travel, the read surface
(filter, projection, limit) and the refusals (writes, unknown names, time travel where Java
has none)."""

from __future__ import annotations

import datetime
import json
import os

import pyarrow as pa
import pytest

from paimon_rs import Identifier, Schema
from paimon_rs.consumer import write_next_snapshot
from paimon_rs.exceptions import InvalidArgumentError, SchemaMismatchError, UnsupportedError
from paimon_rs.snapshot import java_duration
from paimon_rs.system_tables import SYSTEM_TABLES, SystemTable

from unit_helpers import PK_SCHEMA, write

ROWS = pa.table({"dt": ["a", "a", "b"], "id": [1, 2, 3], "name": ["x", None, "z"],
                 "price": [1.5, 2.5, 3.5]}, schema=PK_SCHEMA)


def _pk(catalog, name="db.pk", bucket="2"):
    schema = Schema.from_pyarrow_schema(PK_SCHEMA, partition_keys=["dt"], primary_keys=["dt", "id"],
                                        options={"bucket": bucket})
    catalog.create_table(name, schema, False)
    t = catalog.get_table(name)
    write(t, ROWS)
    write(t, pa.table({"dt": ["a"], "id": [1], "name": ["y"], "price": [9.0]}, schema=PK_SCHEMA))
    return t


def _append(catalog):
    schema = Schema.from_pyarrow_schema(PK_SCHEMA, partition_keys=["dt"], options={"bucket": "-1"})
    catalog.create_table("db.ap", schema, False)
    t = catalog.get_table("db.ap")
    write(t, ROWS)
    return t


def sys(catalog, name):
    st = catalog.get_table(name)
    assert isinstance(st, SystemTable)
    return st.to_arrow()


def test_every_system_table_has_javas_columns_and_types(catalog):
    _pk(catalog)
    t = catalog.get_table("db.pk")
    for name, d in SYSTEM_TABLES.items():
        out = sys(catalog, f"db.pk${name}")
        assert out.schema == (d.schema if d.schema_of is None else d.schema_of(t)), name
    assert catalog.get_table("db.pk$audit_log").arrow_schema.names == ["rowkind", *t.arrow_schema.names]
    files = catalog.get_table("db.pk$files").arrow_schema
    assert files.names[:8] == ["partition", "bucket", "file_path", "file_format", "schema_id", "level",
                               "record_count", "file_size_in_bytes"]
    assert files.field("bucket").type == pa.int32() and files.field("creation_time").type == pa.timestamp("ms")
    assert catalog.get_table("db.pk$snapshots").arrow_schema.field("commit_time").type == pa.timestamp("ms")


@pytest.mark.parametrize("make", [_pk, _append])
def test_snapshots_schemas_options_match_the_table(catalog, make):
    t = make(catalog)
    name = t.identifier.get_object_name()
    snaps = sys(catalog, f"db.{name}$snapshots").to_pylist()
    api = t.snapshot_manager().list_snapshots()
    assert [r["snapshot_id"] for r in snaps] == [s.id for s in api]
    for r, s in zip(snaps, api):
        assert (r["schema_id"], r["commit_user"], r["commit_kind"], r["total_record_count"],
                r["delta_record_count"], r["base_manifest_list"]) == (
            s.schema_id, s.commit_user, s.commit_kind, s.total_record_count, s.delta_record_count,
            s.base_manifest_list)
        assert r["commit_time"] == datetime.datetime.fromtimestamp(s.time_millis / 1000).replace(
            microsecond=(s.time_millis % 1000) * 1000)
    schemas = sys(catalog, f"db.{name}$schemas").to_pylist()
    assert [r["schema_id"] for r in schemas] == [0]
    assert json.loads(schemas[0]["partition_keys"]) == ["dt"]
    assert json.loads(schemas[0]["primary_keys"]) == t.primary_keys
    assert [f["name"] for f in json.loads(schemas[0]["fields"])] == PK_SCHEMA.names
    opts = {r["key"]: r["value"] for r in sys(catalog, f"db.{name}$options").to_pylist()}
    assert opts == json.loads(t._core.schema_json)["options"]
    assert opts["bucket"] == ("2" if t.primary_keys else "-1")


@pytest.mark.parametrize("make", [_pk, _append])
def test_files_partitions_buckets_match_the_live_files(catalog, make):
    t = make(catalog)
    name = t.identifier.get_object_name()
    files = sys(catalog, f"db.{name}$files").to_pylist()
    splits = t.new_read_builder().new_scan().plan().splits()
    live = sorted((os.path.basename(f.file_path), f.row_count) for s in splits for f in s.files)
    assert sorted((os.path.basename(r["file_path"]), r["record_count"]) for r in files) == live
    for r in files:
        assert os.path.exists(r["file_path"].removeprefix("file:")), r["file_path"]
        assert r["partition"] in ("{a}", "{b}")
        assert r["file_format"] == "parquet"
        assert r["file_source"] == "APPEND"
        # the value statistics as Java's TreeMap renders them: sorted names
        assert r["null_value_counts"].startswith("{dt=0, id=0, name=")
        if t.primary_keys:
            assert r["min_key"].startswith("[") and r["max_key"].endswith("]")
        else:
            assert r["min_key"] is None
    a_files = [r for r in files if r["partition"] == "{a}"]
    if t.primary_keys:
        # the trimmed primary key (the partition key left out), as the files store it
        assert {r["min_key"] for r in a_files} <= {"[1]", "[2]"}
    else:
        (f,) = a_files
        assert f["min_value_stats"] == "{dt=a, id=1, name=x, price=1.5}"
        assert f["max_value_stats"] == "{dt=a, id=2, name=x, price=2.5}"
        assert f["null_value_counts"] == "{dt=0, id=0, name=1, price=0}"
    parts = sys(catalog, f"db.{name}$partitions").to_pylist()
    api = {p.spec["dt"]: p for p in t.list_partitions()}
    assert [r["partition"] for r in parts] == ["dt=a", "dt=b"]
    for r in parts:
        p = api[r["partition"][3:]]
        assert (r["record_count"], r["file_size_in_bytes"], r["file_count"]) == (
            p.record_count, p.file_size_in_bytes, p.file_count)
        assert r["done"] is False and r["deleted_record_count"] == 0
        assert r["total_buckets"] == (2 if t.primary_keys else -1)
    buckets = sys(catalog, f"db.{name}$buckets").to_pylist()
    assert sum(b["file_count"] for b in buckets) == len(files)
    assert sum(b["record_count"] for b in buckets) == sum(r["record_count"] for r in files)
    assert {(b["partition"], b["bucket"]) for b in buckets} == {(r["partition"], r["bucket"]) for r in files}
    manifests = sys(catalog, f"db.{name}$manifests").to_pylist()
    assert sum(m["num_added_files"] - m["num_deleted_files"] for m in manifests) == len(files)
    assert all(m["min_partition_stats"] == "{a}" and m["max_partition_stats"] in ("{a}", "{b}")
               for m in manifests)


def test_files_time_travel(catalog):
    t = _pk(catalog)
    first = sys(catalog, "db.pk$files")
    st = catalog.get_table("db.pk$files")
    at1 = st.to_arrow(snapshot_id=1)
    assert at1.num_rows == 2 and first.num_rows == 3
    assert st.copy({"scan.snapshot-id": "1"}).to_arrow().equals(at1)
    t.create_tag("v1", snapshot_id=1)
    assert st.to_arrow(tag="v1").equals(at1)
    assert catalog.get_table("db.pk$manifests").to_arrow(snapshot_id=1).num_rows == 1
    parts = catalog.get_table("db.pk$partitions")
    assert parts.to_arrow("partition = 'dt=a'", snapshot_id=1)["record_count"].to_pylist() == [2]
    assert parts.to_arrow("partition = 'dt=a'")["record_count"].to_pylist() == [3]
    buckets = catalog.get_table("db.pk$buckets")
    assert sum(buckets.to_arrow(snapshot_id=1)["file_count"].to_pylist()) == 2
    with pytest.raises(InvalidArgumentError, match="snapshot 7 does not exist"):
        st.to_arrow(snapshot_id=7)
    with pytest.raises(UnsupportedError, match="time travel"):
        catalog.get_table("db.pk$snapshots").to_arrow(snapshot_id=1)


def test_tags_branches_consumers(catalog):
    t = _pk(catalog)
    assert sys(catalog, "db.pk$tags").num_rows == 0
    t.create_tag("v2", snapshot_id=2, time_retained="1 h")
    t.create_tag("v1", snapshot_id=1)
    tags = sys(catalog, "db.pk$tags").to_pylist()
    assert [(r["tag_name"], r["snapshot_id"], r["record_count"]) for r in tags] == [("v1", 1, 3), ("v2", 2, 4)]
    assert tags[1]["time_retained"] == "PT1H" and tags[0]["time_retained"] is None
    assert tags[1]["create_time"] is not None  # recorded with a time_retained
    t.create_branch("b", "v1")
    br = sys(catalog, "db.pk$branches").to_pylist()
    assert [r["branch_name"] for r in br] == t.list_branches()
    assert abs(br[0]["create_time"] - datetime.datetime.now()) < datetime.timedelta(minutes=5)
    # a branch's system tables: t$branch_b$<name>
    assert sys(catalog, "db.pk$branch_b$snapshots")["snapshot_id"].to_pylist() == [1]
    assert sys(catalog, "db.pk$branch_b$files").num_rows == 2
    ident = Identifier.from_string("db.pk$branch_b$FILES")
    assert ident.is_system_table() and ident.get_system_table_name() == "FILES"
    assert ident.get_branch_name() == "b" and ident.get_table_name() == "pk"
    assert not Identifier.from_string("db.pk$branch_b").is_system_table()
    assert sys(catalog, "db.pk$consumers").num_rows == 0
    write_next_snapshot(t, "c1", 2)
    assert sys(catalog, "db.pk$consumers").to_pylist() == [{"consumer_id": "c1", "next_snapshot_id": 2}]


def test_table_indexes_of_a_deletion_vector_table(catalog):
    schema = Schema.from_pyarrow_schema(PK_SCHEMA, partition_keys=["dt"], primary_keys=["dt", "id"],
                                        options={"bucket": "1", "deletion-vectors.enabled": "true",
                                                 # keep the vector of a small file (§3.8)
                                                 "compaction.delete-ratio-threshold": "1"})
    catalog.create_table("db.dv", schema, False)
    t = catalog.get_table("db.dv")
    write(t, ROWS)  # its writers compact at every commit: the upsert marks a row deleted
    write(t, pa.table({"dt": ["a"], "id": [1], "name": ["y"], "price": [9.0]}, schema=PK_SCHEMA))
    idx = sys(catalog, "db.dv$table_indexes").to_pylist()
    dv = [r for r in idx if r["index_type"] == "DELETION_VECTORS"]
    assert dv
    for r in dv:
        assert r["partition"] in ("{a}", "{b}") and r["bucket"] == 0
        assert all(set(d) == {"f0", "f1", "f2", "_CARDINALITY"} for d in r["dv_ranges"])
    parts = {r["partition"]: r["deleted_record_count"] for r in sys(catalog, "db.dv$partitions").to_pylist()}
    deleted = sum(d["_CARDINALITY"] or 0 for r in dv for d in r["dv_ranges"])
    assert sum(parts.values()) == deleted


def test_read_surface_filter_projection_limit(catalog):
    _pk(catalog)
    st = catalog.get_table("db.pk$files")
    rb = st.new_read_builder().with_filter("partition = '{a}'").with_projection(["bucket", "record_count"])
    out = rb.new_read().to_arrow(rb.new_scan().plan().splits())
    assert out.schema.names == ["bucket", "record_count"] and out.num_rows == 2
    pb = st.new_read_builder().new_predicate_builder()
    rb = st.new_read_builder().with_filter(pb.equal("level", 0)).with_limit(1)
    assert rb.new_read().to_arrow(rb.new_scan().plan().splits()).num_rows == 1
    assert st.to_pandas(projection=["file_path"]).shape == (3, 1)
    assert catalog.get_table("db.pk$SNAPSHOTS").to_arrow("commit_kind = 'APPEND'").num_rows == 2
    with pytest.raises(SchemaMismatchError, match="did you mean 'file_path'"):
        st.new_read_builder().with_projection(["file_pth"])


def test_refusals(catalog):
    _pk(catalog)
    st = catalog.get_table("db.pk$files")
    for op in (lambda: st.new_batch_write_builder(), lambda: st.write(ROWS), lambda: st.delete("id = 1")):
        with pytest.raises(UnsupportedError, match=r"db.pk\$files is a system table \(read-only\)"):
            op()
    with pytest.raises(AttributeError, match="system table"):
        st.create_tag("x")  # type: ignore[attr-defined]
    with pytest.raises(InvalidArgumentError, match=r"unknown system table '\$file'.*did you mean '\$files'"):
        catalog.get_table("db.pk$file")
    with pytest.raises(UnsupportedError, match=r"does not provide \$statistics"):
        catalog.get_table("db.pk$statistics")
    with pytest.raises(InvalidArgumentError, match="at most"):
        catalog.get_table("db.pk$a$b$c")
    with pytest.raises(UnsupportedError, match="read-only view"):
        catalog.drop_table("db.pk$files")
    assert catalog.get_table("db.pk").to_arrow().num_rows == 3  # still there


def test_java_duration():
    assert [java_duration(ms) for ms in (0, 500, 1000, 3_600_000, 5_400_000, 86_400_000, 61_500)] == [
        "PT0S", "PT0.5S", "PT1S", "PT1H", "PT1H30M", "PT24H", "PT1M1.5S"]


def test_cli_reads_system_tables(catalog, capsys):
    from paimon_rs.cli import main

    t = _pk(catalog)
    wh = os.path.dirname(os.path.dirname(t.table_path))
    assert main(["read", wh, "db.pk$snapshots", "--json", "--select", "snapshot_id,commit_kind"]) == 0
    assert json.loads(capsys.readouterr().out) == [{"snapshot_id": 1, "commit_kind": "APPEND"},
                                                   {"snapshot_id": 2, "commit_kind": "APPEND"}]
    assert main(["read", t.table_path + "$files", "--json", "--where", "partition = '{b}'",
                 "--snapshot", "1"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert row["record_count"] == 1 and row["partition"] == "{b}"
    assert main(["read", wh, "db.pk$nope", "--json"]) == 1
    assert "unknown system table" in capsys.readouterr().err


def _records(t):
    return sorted(tuple(r.values()) for r in t.to_pylist())


def test_read_optimized_reads_only_the_top_level(catalog):
    """``$ro`` (Java's ReadOptimizedTable): a primary-key table's top-level files, no merge:
    what compaction has not moved up is missing until a full compaction; an append table reads
    whole."""
    t = _pk(catalog)
    assert sys(catalog, "db.pk$ro").num_rows == 0, "two commits in level 0: nothing at the top yet"
    t.compact(full=True)
    assert _records(sys(catalog, "db.pk$ro")) == _records(t.to_arrow())
    write(t, pa.table({"dt": ["b"], "id": [3], "name": ["new"], "price": [0.5]}, schema=PK_SCHEMA))
    ro = catalog.get_table("db.pk$ro")
    assert ("b", 3, "z", 3.5) in _records(ro.to_arrow()), "the top level still holds the old row"
    assert _records(ro.to_arrow(filter="dt = 'a'", projection=["id"])) == [(1,), (2,)]
    # time travel, as the table's
    assert _records(ro.copy({"scan.snapshot-id": "2"}).to_arrow()) == []
    _append(catalog)
    assert _records(sys(catalog, "db.ap$ro")) == _records(catalog.get_table("db.ap").to_arrow())
    with pytest.raises(UnsupportedError, match="read-only"):
        ro.write(ROWS)


def test_audit_log_has_the_row_kind_of_each_merged_record(catalog):
    """``$audit_log`` (Java's AuditLogTable, batch read): the merged records, each with its
    kind first; a deletion not yet compacted away shows as ``-D`` (Java keeps deletes)."""
    t = _pk(catalog, "db.al", bucket="1")
    t.delete("id = 2")
    log = catalog.get_table("db.al$audit_log")
    got = {(r["dt"], r["id"]): r["rowkind"] for r in log.to_arrow().to_pylist()}
    assert got == {("a", 1): "+I", ("b", 3): "+I", ("a", 2): "-D"}
    assert _records(log.to_arrow(filter="rowkind = '-D'", projection=["id"])) == [(2,)]
    # a full compaction drops the deletion
    t.compact(full=True)
    assert {r["rowkind"] for r in log.to_arrow().to_pylist()} == {"+I"}
    ap = _append(catalog)
    assert {r["rowkind"] for r in sys(catalog, "db.ap$audit_log").to_pylist()} == {"+I"}
    assert sys(catalog, "db.ap$audit_log").num_rows == ap.to_arrow().num_rows


def test_binlog_wraps_each_value_in_an_array(catalog):
    """``$binlog`` (Java's BinlogTable, batch read): ``$audit_log``'s rows, each column's value a
    one-element array."""
    t = _pk(catalog, "db.bl", bucket="1")
    t.delete("id = 2")
    log = catalog.get_table("db.bl$binlog")
    assert log.arrow_schema.field("id").type == pa.list_(pa.field("element", pa.int64()))
    got = {r["id"][0]: (r["rowkind"], r["name"], r["price"]) for r in log.to_arrow().to_pylist()}
    assert got == {1: ("+I", ["y"], [9.0]), 2: ("-D", [None], [2.5]), 3: ("+I", ["z"], [3.5])}
    assert log.to_arrow(filter="rowkind = '-D'", projection=["rowkind"]).to_pylist() == [{"rowkind": "-D"}]
