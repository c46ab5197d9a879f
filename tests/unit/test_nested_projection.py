"""Nested-field projection, ``with_projection(["s.a"])`` as pypaimon (issue 29)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from paimon_rs import Schema
from paimon_rs.exceptions import SchemaMismatchError

INNER = pa.struct([("z", pa.string())])
S = pa.struct([("a", pa.int64()), ("b", INNER)])
SCHEMA = pa.schema([("id", pa.int64()), ("s", S), ("s.a", pa.string())])


@pytest.fixture
def table(catalog):
    catalog.create_table("db.nested", Schema.from_pyarrow_schema(SCHEMA), False)
    t = catalog.get_table("db.nested")
    wb = t.new_batch_write_builder()
    w = wb.new_write()
    w.write_arrow(pa.table({
        "id": [1, 2, 3],
        "s": pa.array([{"a": 10, "b": {"z": "x"}}, None, {"a": None, "b": None}], S),
        "s.a": ["top1", "top2", "top3"],
    }, schema=SCHEMA))
    wb.new_commit().commit(w.prepare_commit())
    w.close()
    return t


def _read(rb):
    return rb.new_read().to_arrow(rb.new_scan().plan().splits()).sort_by("id")


def test_nested_leaf_named_by_its_path(table):
    rb = table.new_read_builder().with_projection(["id", "s.b.z", "s.b"])
    out = _read(rb)
    assert out.column_names == ["id", "s_b_z", "s_b"]
    assert out.column("s_b_z").to_pylist() == ["x", None, None]  # a null parent: null
    assert out.column("s_b").to_pylist() == [{"z": "x"}, None, None]
    assert rb.new_read().schema == out.schema
    assert out.schema.field("s_b_z").type == pa.string()
    batches = list(rb.new_read().to_arrow_batch_reader(rb.new_scan().plan().splits()))
    assert sum(b.num_rows for b in batches) == 3
    assert batches[0].schema == out.schema


def test_top_level_name_with_a_dot_wins(table):
    out = _read(table.new_read_builder().with_projection(["id", "s.a"]))
    assert out.column("s.a").to_pylist() == ["top1", "top2", "top3"]


def test_repeated_and_unknown_paths(table):
    out = _read(table.new_read_builder().with_projection(["id", "s.b.z", "s.b.z"]))
    assert out.column_names == ["id", "s_b_z", "s_b_z__0"]
    with pytest.raises(SchemaMismatchError, match="s.b.q"):
        table.new_read_builder().with_projection(["s.b.q"])
    with pytest.raises(SchemaMismatchError, match="id.x"):
        table.new_read_builder().with_projection(["id.x"])  # not a struct


def test_nested_projection_with_filter_and_limit(table):
    rb = table.new_read_builder().with_projection(["s.b.z"]).with_filter("id = 1").with_limit(1)
    out = rb.new_read().to_arrow(rb.new_scan().plan().splits())
    assert out.column_names == ["s_b_z"] and out.to_pylist() == [{"s_b_z": "x"}]
