"""A relative warehouse (or table) path is made absolute once, when the catalog or table is
opened (core ``io::absolute``): every later path is a join onto that root. Before, a relative
root was joined twice from the first compaction on (``wh/db.db/t/wh/db.db/t/bucket-0/...``:
"data file referenced by the manifest is missing"), issue 31."""

import os

import pyarrow as pa
import pytest

from paimon_rs import CatalogFactory, Schema, Table

from unit_helpers import read, write

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])


def _read(table):
    return read(table, sort=["id"]).to_pylist()


def _new_user_history(table):
    """Eight commits of two rows into a one-bucket table, as in the issue: the universal picker
    compacts from the sixth on (num-sorted-run.compaction-trigger = 5)."""
    model = {}
    for i in range(8):
        rows = {"id": [i, i + 1], "v": [f"c{i}", f"c{i}'"]}
        write(table, pa.table(rows, schema=SCHEMA))
        model.update(zip(rows["id"], rows["v"]))
    return [{"id": k, "v": v} for k, v in sorted(model.items())]


def test_relative_warehouse_survives_compaction(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    catalog = CatalogFactory.create({"warehouse": "wh"})
    assert os.path.isabs(catalog.warehouse)
    assert catalog.warehouse == str(tmp_path / "wh")
    catalog.create_database("db", True)
    catalog.create_table("db.t", Schema.from_pyarrow_schema(SCHEMA, primary_keys=["id"],
                                                              options={"bucket": "1"}), False)
    table = catalog.get_table("db.t")
    assert table.table_path == str(tmp_path / "wh" / "db.db" / "t")
    expected = _new_user_history(table)
    # the writes compacted (level > 0 files exist), and every file lives under the table
    splits = table.new_read_builder().new_scan().plan().splits()
    assert any(f.level > 0 for s in splits for f in s.files)
    assert _read(table) == expected
    table.compact(full=True)
    assert _read(table) == expected
    # nothing landed in a doubled path
    assert not (tmp_path / "wh" / "db.db" / "t" / "wh").exists()


def test_table_opened_relative_keeps_working_after_chdir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    catalog = CatalogFactory.create({"warehouse": "./wh/../wh"})
    catalog.create_database("db", True)
    catalog.create_table("db.t", Schema.from_pyarrow_schema(SCHEMA, primary_keys=["id"],
                                                              options={"bucket": "1"}), False)
    table = catalog.get_table("db.t")
    by_path = Table.from_path("wh/db.db/t")
    other = tmp_path / "elsewhere"
    other.mkdir()
    monkeypatch.chdir(other)
    # the roots were made absolute when opened: a later chdir changes nothing
    expected = _new_user_history(table)
    assert _read(by_path) == expected
    assert _read(catalog.get_table("db.t")) == expected
    assert not (other / "wh").exists()


def test_file_uri_warehouse_and_table_path_are_local_absolute_paths(tmp_path):
    catalog = CatalogFactory.create({"warehouse": f"file://{tmp_path}/wh"})
    assert catalog.warehouse == str(tmp_path / "wh")
    catalog.create_database("db", True)
    catalog.create_table("db.t", Schema.from_pyarrow_schema(SCHEMA, primary_keys=["id"],
                                                              options={"bucket": "1"}), False)
    write(catalog.get_table("db.t"), pa.table({"id": [1], "v": ["a"]}, schema=SCHEMA))
    for uri in (f"file://{tmp_path}/wh/db.db/t", f"file:{tmp_path}/wh/db.db/t"):
        t = Table.from_path(uri)
        assert t.table_path == str(tmp_path / "wh" / "db.db" / "t")
        assert _read(t) == [{"id": 1, "v": "a"}]


def test_empty_warehouse_is_refused():
    with pytest.raises(ValueError, match="warehouse"):
        CatalogFactory.create({"warehouse": ""})
