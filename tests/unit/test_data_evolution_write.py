"""Writing data-evolution tables (``row-tracking.enabled`` + ``data-evolution.enabled``) with
paimon_rs alone: Java's create checks, whole-row appends numbered by the commit, appends of a
column subset (``with_write_type``: whole-row files, the other columns null), and what paimon_rs
does not write there (delete, merge, compaction, the other data-evolution options) refused.
Interop with pypaimon: tests/compat/test_pypaimon_data_evolution_write.py."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from paimon_rs import CatalogFactory, Schema
from paimon_rs.exceptions import InvalidArgumentError, SchemaMismatchError, UnsupportedError

SCH = pa.schema([("id", pa.int64()), ("a", pa.int64()), ("b", pa.string())])
DE = {"row-tracking.enabled": "true", "data-evolution.enabled": "true"}


def _table(path, options=None, pk=None, name="db.t"):
    c = CatalogFactory.create({"warehouse": str(path)})
    c.create_database("db", True)
    c.create_table(name, Schema.from_pyarrow_schema(SCH, primary_keys=pk, options=options or DE), False)
    return c.get_table(name)


def _write(t, data, cols=None):
    wb = t.new_batch_write_builder()
    w = wb.new_write()
    if cols is not None:
        w.with_write_type(cols)
    w.write_arrow(data)
    c = wb.new_commit()
    c.commit(w.prepare_commit())
    w.close()
    c.close()


def _read(t, cols):
    rb = t.new_read_builder().with_projection(cols)
    return sorted(rb.new_read().to_arrow(rb.new_scan().plan().splits()).to_pylist(),
                  key=lambda r: r["_ROW_ID"])


@pytest.mark.parametrize("options, pk, error, message", [
    ({"data-evolution.enabled": "true"}, None, InvalidArgumentError,
     "Data evolution config must enabled with row-tracking.enabled"),
    (DE, ["id"], InvalidArgumentError, "primary-key"),
    (dict(DE, bucket="2", **{"bucket-key": "id"}), None, InvalidArgumentError, "only support bucket = -1"),
    # the rest of the family: not implemented, refused by name
    (dict(DE, **{"data-evolution.row-sidecar.enabled": "true"}), None, UnsupportedError,
     "data-evolution.row-sidecar.enabled"),
])
def test_create_checks(tmp_path, options, pk, error, message):
    with pytest.raises(error, match=message):
        _table(tmp_path, options, pk)


def test_appends_numbered_by_commit(tmp_path):
    t = _table(tmp_path)
    _write(t, pa.table({"id": [1, 2, 3], "a": [10, 20, 30], "b": ["x", "y", "z"]}, schema=SCH))
    _write(t, pa.table({"id": [4, 5], "a": [40, 50], "b": ["u", "v"]}, schema=SCH))
    got = _read(t, ["_ROW_ID", "id", "a", "b", "_SEQUENCE_NUMBER"])
    assert [(r["_ROW_ID"], r["id"], r["_SEQUENCE_NUMBER"]) for r in got] == [
        (0, 1, 1), (1, 2, 1), (2, 3, 1), (3, 4, 2), (4, 5, 2)]
    snap = json.loads((tmp_path / "db.db" / "t" / "snapshot" / "snapshot-2").read_text())
    assert snap["nextRowId"] == 5


def test_column_subset_append(tmp_path):
    t = _table(tmp_path)
    _write(t, pa.table({"id": [1, 2], "a": [10, 20], "b": ["x", "y"]}, schema=SCH))
    _write(t, pa.table({"id": [3], "b": ["z"]}), cols=["id", "b"])
    got = _read(t, ["_ROW_ID", "id", "a", "b"])
    assert got == [{"_ROW_ID": 0, "id": 1, "a": 10, "b": "x"}, {"_ROW_ID": 1, "id": 2, "a": 20, "b": "y"},
                   {"_ROW_ID": 2, "id": 3, "a": None, "b": "z"}]
    with pytest.raises(SchemaMismatchError, match="with_write_type"):
        _write(t, pa.table({"id": [4], "a": [1]}), cols=["id", "b"])


def test_what_is_not_written_is_refused(tmp_path):
    t = _table(tmp_path, dict(DE, **{"deletion-vectors.enabled": "true"}))
    _write(t, pa.table({"id": [1, 2], "a": [10, 20], "b": ["x", "y"]}, schema=SCH))
    with pytest.raises(UnsupportedError, match="data-evolution"):
        t.delete("id = 1")
    with pytest.raises(UnsupportedError, match="data-evolution"):
        t.merge(pa.table({"id": [1], "a": [1], "b": ["q"]}, schema=SCH), on=["id"]) \
            .when_matched_update_all().execute()
    with pytest.raises(UnsupportedError, match="data-evolution.enabled = true"):
        t.compact(full=True)
    # nothing changed
    assert [r["id"] for r in _read(t, ["_ROW_ID", "id"])] == [1, 2]


_rows = st.lists(st.tuples(st.integers(-5, 5), st.one_of(st.none(), st.text("xy", max_size=2))),
                 min_size=1, max_size=5)


@settings(max_examples=15, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([None, ["id", "a"], ["id", "b"], ["b", "id"]]), _rows),
                min_size=1, max_size=4))
def test_appends_against_a_model(tmp_path_factory, commits):
    """Whole-row and column-subset appends against a dict model keyed by _ROW_ID."""
    t = _table(tmp_path_factory.mktemp("de"))
    model, nxt, k = {}, 0, 0
    for cols, rows in commits:
        data = {"id": [], "a": [], "b": []}
        for a, b in rows:
            data["id"].append(k)
            data["a"].append(a)
            data["b"].append(b)
            k += 1
        full = cols or ["id", "a", "b"]
        _write(t, pa.table({c: data[c] for c in full}, schema=pa.schema([SCH.field(c) for c in full])), cols)
        for i in range(len(rows)):
            model[nxt] = {c: (data[c][i] if c in full else None) for c in ("id", "a", "b")}
            nxt += 1
    got = {r.pop("_ROW_ID"): r for r in _read(t, ["_ROW_ID", "id", "a", "b"])}
    assert got == model
