"""Inline BLOB columns (issue #29): ``blob-descriptor-field`` columns keep serialized
BlobDescriptors in the data file and read as the bytes they point at; ``blob-view-field``
columns keep serialized BlobViewStructs and read as the upstream table's BLOB of that row
(``blob-view.resolve.enabled`` = false: the struct bytes), as Java Paimon and pypaimon 2.1.0."""

from __future__ import annotations

import os

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from paimon_rs import BlobDescriptor, CatalogFactory, Schema
from paimon_rs.blob_view import BlobViewStruct, inline_blob_fields
from paimon_rs.exceptions import InvalidArgumentError

DE = {"row-tracking.enabled": "true", "data-evolution.enabled": "true"}
PA = pa.schema([("id", pa.int32()), ("picture", pa.large_binary())])


def _catalog(path):
    c = CatalogFactory.create({"warehouse": str(path)})
    c.create_database("db", True)
    return c


def _table(catalog, name, schema=PA, **options):
    catalog.create_table(name, Schema.from_pyarrow_schema(schema, options={**DE, **options}), False)
    return catalog.get_table(name)


def _write(table, data):
    wb = table.new_batch_write_builder()
    w = wb.new_write()
    w.write_arrow(data)
    c = wb.new_commit()
    msgs = w.prepare_commit()
    c.commit(msgs)
    w.close()
    c.close()
    return msgs


def _read(table, projection=None):
    rb = table.new_read_builder()
    if projection:
        rb = rb.with_projection(projection)
    return rb.new_read().to_arrow(rb.new_scan().plan().splits()).sort_by("id")


def _files(path, ext):
    return sorted(f for _, _, fs in os.walk(path) for f in fs if f.endswith(ext))


def _source(catalog, payloads):
    src = _table(catalog, "db.src")
    _write(src, pa.table({"id": list(range(len(payloads))), "picture": payloads}, schema=PA))
    fid = next(f.id for f in src.table_schema.fields if f.name == "picture")
    return src, fid


def test_descriptor_field_stays_inline_and_reads_the_bytes_it_points_at(tmp_path):
    c = _catalog(tmp_path / "wh")
    ext = tmp_path / "ext.bin"
    ext.write_bytes(b"0123456789")
    s = pa.schema([("id", pa.int32()), ("pic1", pa.large_binary()), ("pic2", pa.large_binary())])
    t = _table(c, "db.t", s, **{"blob-descriptor-field": "pic2"})
    d = BlobDescriptor(str(ext), 2, 5).serialize()
    msgs = _write(t, pa.table({"id": [1, 2], "pic1": [b"a", b"b"], "pic2": [d, None]}, schema=s))
    blob_files = [f for m in msgs for f in m.new_files if f.file_name.endswith(".blob")]
    assert blob_files and all(f.write_cols == ["pic1"] for f in blob_files)
    got = _read(t)
    assert got.column("pic1").to_pylist() == [b"a", b"b"]
    assert got.column("pic2").to_pylist() == [b"23456", None]
    # blob-as-descriptor: the stored descriptor as it is
    raw = _read(t.copy({"blob-as-descriptor": "true"}))
    assert raw.column("pic2").to_pylist() == [d, None]
    # the streaming read resolves the same way
    rb = t.new_read_builder()
    streamed = pa.Table.from_batches(list(rb.new_read().to_arrow_batch_reader(rb.new_scan().plan().splits())))
    assert streamed.sort_by("id").column("pic2").to_pylist() == [b"23456", None]


def test_stored_descriptor_fields_is_the_fallback_key(tmp_path):
    assert inline_blob_fields({"blob.stored-descriptor-fields": "a, b"}) == ({"a", "b"}, set())
    assert inline_blob_fields({"blob-descriptor-field": "c",
                               "blob.stored-descriptor-fields": "a"}) == ({"c"}, set())
    c = _catalog(tmp_path)
    t = _table(c, "db.t", **{"blob.stored-descriptor-fields": "picture"})
    ext = tmp_path / "x.bin"
    ext.write_bytes(b"xyz")
    _write(t, pa.table({"id": [1], "picture": [BlobDescriptor(str(ext), 0, -1).serialize()]}, schema=PA))
    assert not _files(t.table_path, ".blob")
    assert _read(t).column("picture").to_pylist() == [b"xyz"]


def test_descriptor_field_refuses_other_bytes(tmp_path):
    t = _table(_catalog(tmp_path), "db.t", **{"blob-descriptor-field": "picture"})
    with pytest.raises(InvalidArgumentError, match="blob-descriptor-field requires blob field value"):
        _write(t, pa.table({"id": [1], "picture": [b"raw bytes"]}, schema=PA))


def test_view_field_resolves_the_upstream_blob(tmp_path):
    c = _catalog(tmp_path)
    payloads = [b"view-source-0", None, b"view-source-2"]
    src, fid = _source(c, payloads)
    t = _table(c, "db.view", **{"blob-view-field": "picture"})
    views = [BlobViewStruct("db.src", fid, r).serialize() for r in (2, 1, 0)] + [None]
    msgs = _write(t, pa.table({"id": [10, 11, 12, 13], "picture": views}, schema=PA))
    assert not any(f.file_name.endswith(".blob") for m in msgs for f in m.new_files)
    assert _read(t).column("picture").to_pylist() == [b"view-source-2", None, b"view-source-0", None]
    # blob-as-descriptor: the upstream BLOB's descriptor
    described = _read(t.copy({"blob-as-descriptor": "true"})).column("picture").to_pylist()
    assert BlobDescriptor.deserialize(described[0]).uri.endswith(".blob")
    assert described[1] is None
    # resolve disabled: the struct bytes, which another view table accepts as they are
    kept = _read(t.copy({"blob-view.resolve.enabled": "false"}))
    assert kept.column("picture").to_pylist() == views
    t2 = _table(c, "db.view2", **{"blob-view-field": "picture"})
    _write(t2, kept)
    assert _read(t2).column("picture").to_pylist() == _read(t).column("picture").to_pylist()
    # a projection without the view column reads no upstream table
    assert _read(t, ["id"]).column("id").to_pylist() == [10, 11, 12, 13]


def test_view_of_a_gone_row_or_table_names_view_field_and_upstream(tmp_path):
    c = _catalog(tmp_path)
    src, fid = _source(c, [b"a"])
    t = _table(c, "db.view", **{"blob-view-field": "picture"})
    _write(t, pa.table({"id": [1], "picture": [BlobViewStruct("db.src", fid, 7).serialize()]}, schema=PA))
    with pytest.raises(InvalidArgumentError, match=r"'picture' of table db\.view.*db\.src.*\[7\]"):
        _read(t)
    t2 = _table(c, "db.view2", **{"blob-view-field": "picture"})
    _write(t2, pa.table({"id": [1], "picture": [BlobViewStruct("db.gone", fid, 0).serialize()]},
                        schema=PA))
    with pytest.raises(InvalidArgumentError, match=r"'picture' of table db\.view2: upstream table db\.gone"):
        _read(t2)


def test_view_field_opened_by_path_finds_the_upstream_beside_it(tmp_path):
    from paimon_rs.table import Table

    c = _catalog(tmp_path)
    src, fid = _source(c, [b"p0"])
    t = _table(c, "db.view", **{"blob-view-field": "picture"})
    _write(t, pa.table({"id": [1], "picture": [BlobViewStruct("db.src", fid, 0).serialize()]}, schema=PA))
    assert _read(Table.from_path(t.table_path)).column("picture").to_pylist() == [b"p0"]


def test_view_field_refuses_other_bytes(tmp_path):
    t = _table(_catalog(tmp_path), "db.t", **{"blob-view-field": "picture"})
    with pytest.raises(ValueError, match="blob-view-field requires blob field value"):
        _write(t, pa.table({"id": [1], "picture": [b"not-a-view-struct"]}, schema=PA))
    trailing = BlobViewStruct("db.x", 1, 0).serialize() + b"\0"
    with pytest.raises(ValueError, match="BlobViewStruct"):
        _write(t, pa.table({"id": [1], "picture": [trailing]}, schema=PA))


@pytest.mark.parametrize("options, message", [
    ({"blob-descriptor-field": "picture", "blob-view-field": "picture"},
     "must not overlap. Overlapping fields: ['picture']"),
    ({"blob-view-field": "missing_picture"},
     "must be blob fields in schema. Non-BLOB fields: ['missing_picture']"),
    ({"blob-descriptor-field": "id"}, "Non-BLOB fields: ['id']"),
])
def test_create_refuses_as_pypaimon(tmp_path, options, message):
    c = _catalog(tmp_path)
    with pytest.raises(ValueError) as e:
        c.create_table("db.t", Schema.from_pyarrow_schema(PA, options={**DE, **options}), False)
    assert message in str(e.value)


def test_create_refuses_array_blob_inline(tmp_path):
    s = pa.schema([("id", pa.int32()), ("pics", pa.list_(pa.large_binary()))])
    with pytest.raises(ValueError, match=r"only supported by 'blob-field'. Invalid inline blob fields: \['pics'\]"):
        _catalog(tmp_path).create_table(
            "db.t", Schema.from_pyarrow_schema(s, options={**DE, "blob-view-field": "pics"}), False)


@settings(max_examples=40, deadline=None)
@given(st.text(min_size=1, max_size=30).filter(lambda s: "." not in s and s.strip() == s),
       st.integers(-2**31, 2**31 - 1), st.integers(-2**63, 2**63 - 1))
def test_view_struct_round_trips(name, field_id, row_id):
    s = BlobViewStruct(f"db.{name}", field_id, row_id)
    raw = s.serialize()
    assert BlobViewStruct.is_blob_view_struct(raw)
    assert BlobViewStruct.deserialize(raw) == s
    with pytest.raises(ValueError):
        BlobViewStruct.deserialize(raw + b"\0")


def test_inline_columns_are_updated_by_row_id_in_the_data_file(tmp_path):
    """An update by ``_ROW_ID`` of a ``blob-descriptor-field`` / ``blob-view-field`` column
    writes the new descriptors / structs into the update data file (no ``.blob`` file of
    placeholders, as for managed BLOB columns), as pypaimon's ``_is_blob_column``."""
    c = _catalog(tmp_path)
    src, fid = _source(c, [b"s0", b"s1", b"s2"])
    ext = tmp_path / "ext.bin"
    ext.write_bytes(b"abcdefghij")
    s = pa.schema([("id", pa.int32()), ("desc", pa.large_binary()), ("view", pa.large_binary())])
    t = _table(c, "db.t", s, **{"blob-descriptor-field": "desc", "blob-view-field": "view"})
    d = [BlobDescriptor(str(ext), i, 2).serialize() for i in range(3)]
    v = [BlobViewStruct("db.src", fid, r).serialize() for r in range(3)]
    _write(t, pa.table({"id": [0, 1, 2], "desc": d, "view": v}, schema=s))
    before = _files(t.table_path, ".blob")
    rid = _read(t, ["id", "_ROW_ID"]).column("_ROW_ID").to_pylist()
    tu = t.new_batch_write_builder().new_update()
    tu.with_update_type(["desc", "view"])
    msgs = tu.update_by_arrow_with_row_id(pa.table({
        "_ROW_ID": pa.array([rid[1]], pa.int64()),
        "desc": pa.array([BlobDescriptor(str(ext), 8, 2).serialize()], pa.large_binary()),
        "view": pa.array([BlobViewStruct("db.src", fid, 0).serialize()], pa.large_binary()),
    }))
    t.new_batch_write_builder().new_commit().commit(msgs)
    assert _files(t.table_path, ".blob") == before  # nothing written beside the data file
    got = _read(t)
    assert got.column("desc").to_pylist() == [b"ab", b"ij", b"cd"]
    # the rows left keep their stored descriptors / structs (not the bytes they resolve to)
    raw = _read(t.copy({"blob-as-descriptor": "true", "blob-view.resolve.enabled": "false"}))
    assert raw.column("desc").to_pylist() == [d[0], BlobDescriptor(str(ext), 8, 2).serialize(), d[2]]
    assert raw.column("view").to_pylist() == [v[0], v[0], v[2]]
    assert got.column("view").to_pylist() == [b"s0", b"s0", b"s2"]


@pytest.mark.parametrize("option, value, what", [
    ("blob-descriptor-field", b"raw bytes", "BlobDescriptor"),
    ("blob-view-field", b"not-a-view-struct", "BlobViewStruct"),
])
def test_update_by_row_id_refuses_bytes_the_inline_field_cannot_hold(tmp_path, option, value, what):
    t = _table(_catalog(tmp_path), "db.t", **{option: "picture"})
    _write(t, pa.table({"id": [1, 2], "picture": [None, None]}, schema=PA))
    wb = t.new_batch_write_builder()
    u = wb.new_update().with_update_type(["picture"])
    with pytest.raises(ValueError, match=f"{option} requires blob field value.*{what}"):
        u.update_by_arrow_with_row_id(pa.table({"_ROW_ID": pa.array([1], pa.int64()),
                                                "picture": pa.array([value], pa.large_binary())}))
    assert _read(t).column("picture").to_pylist() == [None, None]
    assert not _files(t.table_path, ".parquet")[1:]  # no update file left behind
