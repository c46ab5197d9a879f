"""Members pypaimon's own test suite exercises that a user calls (issue 29; scripts/pypaimon_suite.py
finds them): catalog-level tag CRUD, ``Table.tag_manager()``, pypaimon's schema type classes,
``DataField.from_dict``."""

from __future__ import annotations

import datetime
import json

import pyarrow as pa
import pytest

import paimon_rs
from paimon_rs import (
    ArrayType,
    AtomicType,
    DataField,
    Identifier,
    InvalidArgumentError,
    MapType,
    MultisetType,
    RowType,
    Schema,
    TableNotExistException,
    Tag,
    TagAlreadyExistException,
    TagManager,
    TagNotExistException,
)
from paimon_rs.snapshot import GetTagResponse, PagedList, Snapshot

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


@pytest.fixture
def tagged(catalog):
    """``db.t`` with two snapshots."""
    catalog.create_table("db.t", Schema.from_pyarrow_schema(SCHEMA), False)
    t = catalog.get_table("db.t")
    for i in range(2):
        wb = t.new_batch_write_builder()
        w = wb.new_write()
        w.write_arrow(pa.table({"id": [i], "v": [str(i)]}, schema=SCHEMA))
        wb.new_commit().commit(w.prepare_commit())
        w.close()
    return catalog


def test_catalog_create_and_get_tag(tagged):
    tagged.create_tag("db.t", "plain", snapshot_id=1)
    got = tagged.get_tag(Identifier.from_string("db.t"), "plain")
    assert isinstance(got, GetTagResponse) and isinstance(got.snapshot, Snapshot)
    assert (got.tag_name, got.snapshot.id, got.tag_create_time, got.tag_time_retained) == ("plain", 1, None, None)
    before = int(datetime.datetime.now().timestamp() * 1000) - 1000
    tagged.create_tag("db.t", "kept", None, "1 d")  # pypaimon's order: snapshot_id, time_retained
    kept = tagged.get_tag("db.t", "kept")
    assert kept.snapshot.id == 2 and kept.tag_time_retained == "PT24H"
    assert before <= kept.tag_create_time <= before + 60_000


def test_catalog_create_tag_refusals(tagged):
    tagged.create_tag("db.t", "t1")
    with pytest.raises(TagAlreadyExistException) as e:
        tagged.create_tag("db.t", "t1")
    assert e.value.tag == "t1" and isinstance(e.value, ValueError)
    tagged.create_tag("db.t", "t1", ignore_if_exists=True)
    with pytest.raises(TableNotExistException):
        tagged.create_tag("db.nope", "t1")
    with pytest.raises(TagNotExistException) as e:
        tagged.get_tag("db.t", "absent")
    assert e.value.tag == "absent"


def test_catalog_delete_tag(tagged):
    tagged.create_tag("db.t", "t1")
    tagged.delete_tag("db.t", "t1")
    assert tagged.list_tags_paged("db.t").elements == []
    with pytest.raises(TagNotExistException):
        tagged.delete_tag("db.t", "t1")


def test_catalog_list_tags_paged(tagged):
    for name in ("prod_v2", "dev_v1", "prod_v1"):
        tagged.create_tag("db.t", name)
    assert tagged.list_tags_paged("db.t") == PagedList(["dev_v1", "prod_v1", "prod_v2"], None)
    first = tagged.list_tags_paged("db.t", max_results=2)
    assert first == PagedList(["dev_v1", "prod_v1"], "prod_v1")
    assert tagged.list_tags_paged("db.t", 2, first.next_page_token) == PagedList(["prod_v2"], None)
    assert tagged.list_tags_paged("db.t", tag_name_prefix="prod_").elements == ["prod_v1", "prod_v2"]


def test_atomic_type_forms():
    t = AtomicType("DECIMAL(10, 2)", nullable=False)
    assert (t.type, t.nullable, t.to_dict(), str(t)) == ("DECIMAL(10, 2)", False, "DECIMAL(10, 2) NOT NULL",
                                                         "DECIMAL(10, 2) NOT NULL")
    assert AtomicType("INT") == AtomicType("INT", True) != AtomicType("INT", False)
    assert AtomicType.from_dict("BIGINT NOT NULL") == AtomicType("BIGINT", False)
    assert hash(AtomicType("INT")) == hash(AtomicType("INT"))


def test_nested_types_round_trip_the_schema_file_form():
    stored = {"type": "ROW NOT NULL", "fields": [
        {"id": 1, "name": "a", "type": {"type": "ARRAY", "element": "INT NOT NULL"}},
        {"id": 2, "name": "m", "type": {"type": "MAP", "key": "STRING NOT NULL", "value": "DOUBLE"}},
        {"id": 3, "name": "s", "type": {"type": "MULTISET NOT NULL", "element": "STRING"}, "description": "d"},
    ]}
    row = RowType.from_dict(stored)
    assert isinstance(row, RowType) and not row.nullable
    a, m, s = (f.type for f in row.fields)
    assert a == ArrayType(True, AtomicType("INT", False))
    assert m == MapType(True, AtomicType("STRING", False), AtomicType("DOUBLE"))
    assert s == MultisetType(False, AtomicType("STRING"))
    assert row.to_dict() == stored
    assert str(row) == ("ROW<a: ARRAY<INT NOT NULL>, m: MAP<STRING NOT NULL, DOUBLE>, "
                        "s: MULTISET<STRING> NOT NULL> NOT NULL")
    with pytest.raises(ValueError, match="unknown nested type"):
        ArrayType.from_dict({"type": "VARIANT_ROW"})


def test_data_field_from_dict_and_to_dict(catalog):
    f = DataField.from_dict({"id": 3, "name": "price", "type": "DECIMAL(12, 2) NOT NULL",
                             "description": "in EUR", "defaultValue": "0"})
    assert f == DataField(3, "price", AtomicType("DECIMAL(12, 2)", False), "in EUR", "0")
    assert f.to_dict() == {"id": 3, "name": "price", "type": "DECIMAL(12, 2) NOT NULL",
                           "description": "in EUR", "defaultValue": "0"}
    # the table's fields keep the stored form; from_dict / to_dict go between both
    catalog.create_table("db.f", Schema.from_pyarrow_schema(
        pa.schema([pa.field("id", pa.int64(), nullable=False), ("xs", pa.list_(pa.int32()))])), False)
    t = catalog.get_table("db.f")
    stored = json.loads(t._core.schema_json)["fields"]
    assert [x.to_dict() for x in t.fields] == stored
    parsed = [DataField.from_dict(x.to_dict()) for x in t.fields]
    assert parsed[0].type == AtomicType("BIGINT", False)
    assert parsed[1].type == ArrayType(True, AtomicType("INT"))


def test_names_are_exported():
    for name in ("AtomicType", "ArrayType", "MapType", "MultisetType", "RowType", "DataType",
                 "TagAlreadyExistException"):
        assert name in paimon_rs.__all__ and hasattr(paimon_rs, name)


def test_table_tag_manager(tagged):
    t = tagged.get_table("db.t")
    tm = t.tag_manager()
    assert isinstance(tm, TagManager)
    assert tm.tag_path("v1") == t.table_path.rstrip("/") + "/tag/tag-v1"
    s1 = t.snapshot_manager().get_snapshot_by_id(1)
    tm.create_tag(s1, "v1")
    tm.create_tag(s1, "v1", ignore_if_exists=True)
    with pytest.raises(ValueError, match="already exists"):
        tm.create_tag(s1, "v1")
    tag = tm.get("v1")
    assert isinstance(tag, Tag) and tag.id == 1 and tag.tag_create_time is None and tag.tag_time_retained is None
    assert tag.trim_to_snapshot() == s1 and type(tag.trim_to_snapshot()) is Snapshot
    assert tm.get("nope") is None and tm.tag_exists("v1") and not tm.tag_exists("nope")
    with pytest.raises(ValueError, match="doesn't exist"):
        tm.get_or_throw("nope")
    with pytest.raises(ValueError, match="blank"):
        tm.get(" ")
    tm.replace_tag(t.snapshot_manager().get_latest_snapshot(), "v1", time_retained="2 h")
    tag = tm.get_or_throw("v1")
    assert tag.id == 2 and tag.tag_time_retained == datetime.timedelta(hours=2)
    assert isinstance(tag.tag_create_time, datetime.datetime)
    tm.rename_tag("v1", "v2")
    assert tm.list_tags() == ["v2"]
    assert tm.delete_tag("v2") and not tm.delete_tag("v2") and tm.list_tags() == []


def test_tag_from_snapshot_and_tag_ttl(tagged):
    s1 = tagged.get_table("db.t").snapshot_manager().get_snapshot_by_id(1)
    made = datetime.datetime(2024, 6, 25, 10, 30, 45)
    tag = Tag.from_snapshot_and_tag_ttl(s1, datetime.timedelta(days=1), made)
    assert isinstance(tag, Tag) and tag.trim_to_snapshot() == s1
    assert (tag.tag_create_time, tag.tag_time_retained) == (made, datetime.timedelta(days=1))
    assert Tag.from_snapshot_and_tag_ttl(s1, None, made).tag_time_retained is None
    with pytest.raises(ValueError, match="takes a Snapshot, got dict"):
        Tag.from_snapshot_and_tag_ttl({"id": 1}, None, made)


def test_snapshot_manager_of_a_table_as_pypaimon_documents(tagged):
    # pypaimon's docs: ``from pypaimon.snapshot.snapshot_manager import SnapshotManager``;
    # ``SnapshotManager(table)``
    t = tagged.get_table("db.t")
    sm = paimon_rs.SnapshotManager(t)
    assert sm.get_latest_snapshot().id == 2
    assert [s.id for s in sm] == [s.id for s in t.snapshot_manager()] == [1, 2]


def test_snapshot_manager_of_a_file_io_and_path(tagged):
    """pypaimon's internal ``SnapshotManager(file_io, table_path, branch)``: a paimon_rs FileIO
    (``table.file_io``); another file IO (pypaimon's, a mock) is refused by name, as the engine
    reads the snapshots through none."""
    t = tagged.get_table("db.t")
    sm = paimon_rs.SnapshotManager(t.file_io, t.table_path)
    assert sm.get_latest_snapshot().id == 2 and sm.branch == "main"

    class OtherFileIO:
        pass

    with pytest.raises(TypeError, match="takes a paimon_rs FileIO .*got OtherFileIO"):
        paimon_rs.SnapshotManager(OtherFileIO(), t.table_path)


def test_snapshot_manager_branch(tagged):
    """pypaimon's ``SnapshotManager.branch``: ``"main"``, or the branch of a branch's table."""
    t = tagged.get_table("db.t")
    assert t.snapshot_manager().branch == "main"
    t.create_branch("b1")
    sm = t.switch_to_branch("b1").snapshot_manager()
    assert sm.branch == "b1" and sm.snapshot_dir.endswith("/branch/branch-b1/snapshot")


def test_rest_only_catalog_exceptions_exist_with_pypaimon_arguments():
    # never raised by a filesystem catalog; ``except``/imports written for pypaimon still work
    ident = Identifier.from_string("db.t")
    e = paimon_rs.TableNoPermissionException(ident)
    assert isinstance(e, paimon_rs.CatalogException) and e.identifier is ident
    assert str(e) == "No permission to access table db.t"
    e = paimon_rs.DialectAlreadyExistException(ident, "spark")
    assert (e.identifier, e.dialect, str(e)) == (ident, "spark", "Dialect spark already exists in db.t")
    assert str(paimon_rs.DatabaseNoPermissionException("db")) == "No permission to access database db"
    assert issubclass(paimon_rs.IllegalStateError, paimon_rs.CatalogException)


def _splits(table):
    return table.new_read_builder().new_scan().plan().splits()


def test_split_merged_row_count(catalog):
    """pypaimon's ``Split.merged_row_count()``: the rows a read returns when the files' counts
    tell it (raw-convertible, minus the rows deletion vectors mark), else None."""
    kv = pa.schema([pa.field("k", pa.int64(), False), ("v", pa.string())])
    catalog.create_table("db.a", Schema.from_pyarrow_schema(kv), False)
    catalog.create_table("db.pk", Schema.from_pyarrow_schema(kv, primary_keys=["k"], options={
        "bucket": "1", "num-sorted-run.compaction-trigger": "10"}), False)
    catalog.create_table("db.dv", Schema.from_pyarrow_schema(kv, primary_keys=["k"], options={
        "bucket": "1", "deletion-vectors.enabled": "true"}), False)
    for name in ("db.a", "db.pk", "db.dv"):
        t = catalog.get_table(name)
        t.write(pa.table({"k": list(range(1000)), "v": ["a"] * 1000}, schema=kv))
        t.write(pa.table({"k": list(range(100)), "v": ["b"] * 100}, schema=kv))
    (append,) = _splits(catalog.get_table("db.a"))
    assert append.merged_row_count() == append.row_count == 1100
    (pk,) = _splits(catalog.get_table("db.pk"))
    assert not pk.raw_convertible and pk.merged_row_count() is None  # two runs to merge
    dv_table = catalog.get_table("db.dv")
    (dv,) = _splits(dv_table)
    assert dv.has_deletion_vectors and dv.row_count == 1100
    assert dv.merged_row_count() == dv_table.to_arrow().num_rows == 1000


def test_identifier_with_a_system_table():
    assert Identifier("db", "t", system_table="files").get_full_name() == "db.t$files"
    ident = Identifier.create("db", "t", "b", "snapshots")
    assert ident.get_full_name() == "db.t$branch_b$snapshots"
    assert (ident.get_table_name(), ident.get_branch_name(), ident.get_system_table_name()) == ("t", "b", "snapshots")
    assert Identifier("db", "t", branch="main", system_table="files") == Identifier.from_string("db.t$files")


def test_commit_message_new_files(catalog):
    """pypaimon's ``CommitMessage.new_files``: the data files a message adds, as DataFileMeta
    (pypaimon's tests read ``file_name``, ``row_count``, ``first_row_id`` from them)."""
    catalog.create_table("db.nf", Schema.from_pyarrow_schema(SCHEMA, options={"bucket": "-1"}), False)
    t = catalog.get_table("db.nf")
    wb = t.new_batch_write_builder()
    w = wb.new_write()
    w.write_arrow(pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"]}, schema=SCHEMA))
    msgs = w.prepare_commit()
    w.close()
    files = [f for m in msgs for f in m.new_files]
    assert [f.file_name for f in files] == [n for m in msgs for n in m.file_names]
    assert sum(f.row_count for f in files) == 3
    f = files[0]
    assert f.file_path == f.file_name and f.external_path is None
    assert f.level == 0 and f.schema_id == 0 and f.first_row_id is None and f.write_cols is None
    wb.new_commit().commit(msgs)
    split_files = [sf for s in t.new_read_builder().new_scan().plan().splits() for sf in s.files]
    assert [sf.file_name for sf in split_files] == [f.file_name for f in files]
    assert split_files[0].file_path.endswith("/" + f.file_name)


def test_table_read_read_type(catalog):
    """pypaimon's ``TableRead.read_type``: the fields the read returns (projection applied)."""
    catalog.create_table("db.rt", Schema.from_pyarrow_schema(SCHEMA), False)
    t = catalog.get_table("db.rt")
    read = t.new_read_builder().with_projection(["v"]).new_read()
    assert [f.name for f in read.read_type] == ["v"] and len(read.read_type) == 1
    assert t.new_read_builder().new_read().read_type == t.new_read_builder().read_type()


def test_table_copy_takes_pypaimon_option_values(catalog):
    """``table.copy`` with non-string values, as pypaimon's tests pass them (``{"bucket": 2}``,
    booleans): stored as Paimon's strings, as ``Schema``'s options are."""
    catalog.create_table("db.cp", Schema.from_pyarrow_schema(SCHEMA), False)
    t = catalog.get_table("db.cp").copy({"read.batch-size": 2, "write-only": True})
    assert t.options["read.batch-size"] == "2" and t.options["write-only"] == "true"
    w = t.new_batch_write_builder()
    wr = w.new_write()
    wr.write_arrow(pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"]}, schema=SCHEMA))
    w.new_commit().commit(wr.prepare_commit())
    wr.close()
    rb = t.new_read_builder()
    batches = list(rb.new_read().to_arrow_batch_reader(rb.new_scan().plan().splits()))
    assert max(b.num_rows for b in batches) <= 2 and sum(b.num_rows for b in batches) == 3
    # None (pypaimon's copy removes the option) is refused, never stored as the text "None"
    with pytest.raises(InvalidArgumentError, match="scan.tag-name"):
        t.copy({"scan.tag-name": None})
    with pytest.raises(InvalidArgumentError, match="bucket"):
        Schema.from_pyarrow_schema(SCHEMA, options={"bucket": None})


def test_identifier_branch_attribute():
    """pypaimon's ``Identifier.branch`` (read): the branch encoded in the object name."""
    assert Identifier("db", "tbl", branch="dev").branch == "dev"
    assert Identifier("db", "tbl$branch_dev").branch == "dev"
    assert Identifier("db", "tbl").branch is None
    assert Identifier.from_string("db.t$branch_b$files").branch == "b"


@pytest.mark.parametrize("options, mode", [
    ({}, "latest-full"),
    ({"scan.mode": "latest"}, "latest"),
    ({"scan.timestamp-millis": "123"}, "from-timestamp"),
    ({"scan.mode": "default", "scan.snapshot-id": "1"}, "from-snapshot"),
    ({"scan.tag-name": "t"}, "from-snapshot"),
    ({"scan.creation-time-millis": "5"}, "from-creation-timestamp"),
    ({"incremental-between": "1,2"}, "incremental"),
    ({"scan.file-creation-time-millis": "5", "incremental-between": "1,2"}, "from-file-creation-time"),
])
def test_core_options_startup_mode(options, mode):
    """pypaimon's ``CoreOptions.startup_mode()``: ``scan.mode`` resolved as Java's
    ``CoreOptions.startupMode()`` (a str equal to pypaimon's ``StartupMode`` member)."""
    assert paimon_rs.CoreOptions.from_dict(options).startup_mode() == mode


def test_core_options_startup_mode_full_is_deprecated():
    with pytest.warns(DeprecationWarning, match="latest-full"):
        assert paimon_rs.CoreOptions.from_dict({"scan.mode": "full"}).startup_mode() == "latest-full"


def test_core_options_startup_mode_unknown_is_refused():
    with pytest.raises(InvalidArgumentError, match="scan.mode 'bogus'.*latest-full"):
        paimon_rs.CoreOptions.from_dict({"scan.mode": "bogus"}).startup_mode()


def test_core_options_local_cache_sizes():
    """pypaimon's ``local_cache_max_size()`` / ``local_cache_block_size()``: MemorySize (or
    None when unset), as its caching FileIO's options test reads them."""
    opts = paimon_rs.CoreOptions.from_dict({})
    assert opts.local_cache_max_size() is None
    assert opts.local_cache_block_size().get_bytes() == 1024 * 1024
    opts = paimon_rs.CoreOptions.from_dict({"local-cache.max-size": "2 gb", "local-cache.block-size": "4 mb"})
    assert opts.local_cache_max_size().get_bytes() == 2 * 1024 ** 3
    assert opts.local_cache_block_size().get_bytes() == 4 * 1024 ** 2
