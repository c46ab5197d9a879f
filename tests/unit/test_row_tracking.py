"""Row tracking (``row-tracking.enabled``) in paimon_rs alone: row ids assigned at commit,
``_ROW_ID`` / ``_SEQUENCE_NUMBER`` projected anywhere among the columns and filtered with the
rows, and what would renumber rows refused (pypaimon interop:
tests/compat/test_pypaimon_row_tracking.py)."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

from paimon_rs import CatalogFactory, Schema
from paimon_rs.exceptions import InvalidArgumentError, UnsupportedError

SCH = pa.schema([("id", pa.int64()), ("v", pa.string())])


def _table(tmp_path, options, pk=None):
    c = CatalogFactory.create({"warehouse": str(tmp_path)})
    c.create_database("db", True)
    c.create_table("db.t", Schema.from_pyarrow_schema(SCH, primary_keys=pk, options=options), False)
    return c.get_table("db.t")


def _write(t, ids):
    wb = t.new_batch_write_builder()
    w = wb.new_write()
    w.write_arrow(pa.table({"id": ids, "v": [f"v{i}" for i in ids]}, schema=SCH))
    c = wb.new_commit()
    c.commit(w.prepare_commit())
    w.close()
    c.close()


def _read(t, cols, flt=None):
    rb = t.new_read_builder().with_projection(cols)
    if flt:
        rb = rb.with_filter(flt)
    return rb.new_read().to_arrow(rb.new_scan().plan().splits())


def test_row_ids_and_sequence_numbers(tmp_path):
    t = _table(tmp_path, {"row-tracking.enabled": "true"})
    _write(t, [10, 11, 12])
    _write(t, [13, 14])
    got = _read(t, ["_SEQUENCE_NUMBER", "id", "_ROW_ID"])
    assert got.schema.names == ["_SEQUENCE_NUMBER", "id", "_ROW_ID"]
    rows = sorted(got.to_pylist(), key=lambda r: r["id"])
    assert [(r["id"], r["_ROW_ID"], r["_SEQUENCE_NUMBER"]) for r in rows] == [
        (10, 0, 1), (11, 1, 1), (12, 2, 1), (13, 3, 2), (14, 4, 2)]
    # the filter drops the rows' ids with them
    got = _read(t, ["_ROW_ID", "v"], "id >= 12")
    assert sorted(got.column("_ROW_ID").to_pylist()) == [2, 3, 4]
    # not read unless asked for
    assert _read(t, ["id"]).schema.names == ["id"]
    assert t.new_read_builder().new_read().to_arrow(
        t.new_read_builder().new_scan().plan().splits()).schema.names == ["id", "v"]
    snap = json.loads((tmp_path / "db.db" / "t" / "snapshot" / "snapshot-2").read_text())
    assert snap["nextRowId"] == 5


def test_system_columns_only_on_row_tracking_tables(tmp_path):
    t = _table(tmp_path, {})
    with pytest.raises(Exception, match="_ROW_ID"):
        t.new_read_builder().with_projection(["id", "_ROW_ID"])


def test_what_would_renumber_rows_is_refused(tmp_path):
    t = _table(tmp_path, {"row-tracking.enabled": "true"})
    _write(t, [1, 2, 3])
    _write(t, [4])
    with pytest.raises(UnsupportedError, match="row-tracking"):
        t.compact(full=True)
    with pytest.raises(UnsupportedError, match="new _ROW_IDs"):
        t.delete("id = 1")
    with pytest.raises(UnsupportedError, match="new _ROW_IDs"):
        t.merge(pa.table({"id": [1], "v": ["x"]}, schema=SCH), on=["id"]).when_matched_update_all().execute()
    assert sorted(_read(t, ["_ROW_ID"]).column("_ROW_ID").to_pylist()) == [0, 1, 2, 3]


def test_delete_with_deletion_vectors_keeps_row_ids(tmp_path):
    t = _table(tmp_path, {"row-tracking.enabled": "true", "deletion-vectors.enabled": "true"})
    _write(t, [1, 2, 3, 4])
    t.delete("id = 2")
    rows = sorted(_read(t, ["id", "_ROW_ID"]).to_pylist(), key=lambda r: r["id"])
    assert rows == [{"id": 1, "_ROW_ID": 0}, {"id": 3, "_ROW_ID": 2}, {"id": 4, "_ROW_ID": 3}]


@pytest.mark.parametrize("options, pk, error, message", [
    ({"row-tracking.enabled": "true", "bucket": "2", "bucket-key": "id"}, None,
     InvalidArgumentError, "only support bucket = -1"),
    ({"row-tracking.enabled": "true", "bucket": "2"}, ["id"], InvalidArgumentError, "primary-key"),
    # Java's SchemaValidation (more in test_data_evolution_write.py)
    ({"data-evolution.enabled": "true"}, None, InvalidArgumentError,
     "Data evolution config must enabled with row-tracking.enabled"),
])
def test_create_checks(tmp_path, options, pk, error, message):
    with pytest.raises(error, match=message):
        _table(tmp_path, options, pk)
