"""Nested-field projection, ``with_projection(["s.a"])`` as pypaimon (issue 29)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from paimon_rs import Schema
from paimon_rs.exceptions import InvalidArgumentError, SchemaMismatchError

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


def _pk_table(catalog, name, **options):
    """A primary-key table whose rows were upserted over two commits (the read merges)."""
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("mv", pa.struct([("v", pa.int64()),
                                                                                     ("w", pa.string())])),
                        ("val", pa.string())])
    catalog.create_table(f"db.{name}", Schema.from_pyarrow_schema(schema, primary_keys=["id"],
                                                                 options={"bucket": "1", **options}), False)
    t = catalog.get_table(f"db.{name}")
    for rows in ([(1, 100, "x"), (2, 200, "y"), (3, 300, "z")], [(1, 50, "x2"), (4, None, "n")]):
        t.write(pa.Table.from_pylist(
            [{"id": i, "mv": None if v is None else {"v": v, "w": f"w{v}"}, "val": s} for i, v, s in rows],
            schema=schema))
    return t


@pytest.mark.parametrize("options", [{}, {"deletion-vectors.enabled": "true"}])
def test_filter_on_a_projected_nested_leaf(catalog, options):
    """pypaimon's names: a predicate on the projected leaf's output name filters the rows
    after the pick (pypaimon re-applies it there too: the leaf is not pushed down)."""
    t = _pk_table(catalog, "pkn" + str(len(options)), **options)
    rb = t.new_read_builder().with_projection(["id", "mv.v"])
    pb = rb.new_predicate_builder()
    # numbered by the projected rows, as pypaimon's builder of the read type
    assert [pb.greater_than("mv_v", 150).index, pb.equal("id", 2).index] == [1, 0]
    assert pb.greater_than("mv_v", 150).test((2, 200)) and pb.equal("val", "y").index is None
    rb = rb.with_filter(pb.greater_than("mv_v", 150))
    assert _read(rb).to_pylist() == [{"id": 2, "mv_v": 200}, {"id": 3, "mv_v": 300}]
    # the merged value counts (id 1 became 50), a null parent never matches a comparison
    rb = t.new_read_builder().with_projection(["id", "mv.v"]).with_filter("mv_v < 150 OR mv_v IS NULL")
    assert _read(rb).to_pylist() == [{"id": 1, "mv_v": 50}, {"id": 4, "mv_v": None}]
    # mixed with a pushed-down conjunct and one on a column not projected, then a limit
    rb = t.new_read_builder().with_projection(["mv.v"])
    pb = rb.new_predicate_builder()
    pred = pb.and_predicates([pb.greater_than("id", 1),
                              pb.or_predicates([pb.greater_than("mv_v", 250), pb.equal("val", "y")])])
    rb = rb.with_filter(pred)
    out = rb.new_read().to_arrow(rb.new_scan().plan().splits())
    assert sorted(out.column("mv_v").to_pylist()) == [200, 300] and out.column_names == ["mv_v"]
    batches = list(rb.new_read().to_arrow_batch_reader(rb.new_scan().plan().splits()))
    assert sorted(v for b in batches for v in b.column("mv_v").to_pylist()) == [200, 300]
    out = rb.with_limit(1).new_read().to_arrow(rb.new_scan().plan().splits())
    assert out.num_rows == 1 and out.column("mv_v")[0].as_py() in (200, 300)


def test_filter_names_outside_the_projection_are_refused(catalog):
    t = _pk_table(catalog, "pkr")
    rb = t.new_read_builder().with_projection(["id", "mv.v"])
    with pytest.raises(InvalidArgumentError, match="mv_q"):
        rb.new_predicate_builder().equal("mv_q", 1)
    with pytest.raises(InvalidArgumentError, match="mv_w"):
        rb.with_filter("mv_w = 'a'")
    # an output name of a projection the builder no longer has
    from paimon_rs import PredicateBuilder
    stale = PredicateBuilder(rb._filter_schema()).greater_than("mv_v", 1)
    rb2 = t.new_read_builder().with_projection(["id", "mv.w"]).with_filter(stale)
    with pytest.raises(InvalidArgumentError, match="mv_v"):
        rb2.new_read()


def test_nested_field_beside_a_system_column(catalog):
    """``_ROW_ID`` next to a nested path on a row-tracking table (an assert used to fail:
    the nested projection looked the system column up among the table's columns)."""
    opts = {"row-tracking.enabled": "true", "data-evolution.enabled": "true"}
    sch = pa.schema([("id", pa.int64()), ("s", S)])
    catalog.create_table("db.nested_rt", Schema.from_pyarrow_schema(sch, options=opts), False)
    t = catalog.get_table("db.nested_rt")
    wb = t.new_batch_write_builder()
    w = wb.new_write()
    w.write_arrow(pa.table({"id": [1, 2], "s": pa.array([{"a": 10, "b": None}, None], S)}, schema=sch))
    wb.new_commit().commit(w.prepare_commit())
    w.close()
    rb = t.new_read_builder().with_projection(["s.a", "_ROW_ID"]).with_filter("_ROW_ID >= 1")
    out = rb.new_read().to_arrow(rb.new_scan().plan().splits())
    assert out.column_names == ["s_a", "_ROW_ID"]
    assert out.to_pydict() == {"s_a": [None], "_ROW_ID": [1]}
    assert rb.new_read().schema.names == ["s_a", "_ROW_ID"]


def test_empty_projection_gives_the_rows_without_columns(table):
    """``with_projection([])``: as pypaimon, the rows the filter keeps and no column (the
    engine was asked for no column and blamed the data file)."""
    rb = table.new_read_builder().with_projection([])
    out = rb.new_read().to_arrow(rb.new_scan().plan().splits())
    assert (out.num_rows, out.num_columns) == (3, 0)
    rb = table.new_read_builder().with_projection([]).with_filter("id > 1")
    splits = rb.new_scan().plan().splits()
    assert rb.new_read().to_arrow(splits).num_rows == 2
    assert sum(b.num_rows for b in rb.new_read().to_arrow_batch_reader(splits)) == 2
    assert rb.new_read().schema == pa.schema([])
