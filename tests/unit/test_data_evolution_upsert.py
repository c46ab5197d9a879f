"""Upserts by key and deletes of data-evolution tables (pypaimon's ``upsert_by_arrow_with_key``
/ ``upsert_by_key``, ``paimon_rs.table_upsert``; ``delete_by_row_id`` / ``delete_by_predicate``,
``paimon_rs.table_delete``): matched rows are updated by ``_ROW_ID``, the others appended, in
one commit; deletes mark deletion vectors; a model keyed by ``_ROW_ID`` checks the reads. Interop with
pypaimon: tests/compat/test_pypaimon_data_evolution_upsert.py."""

from __future__ import annotations

import os

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paimon_rs import CatalogFactory, Schema
from paimon_rs.exceptions import InvalidArgumentError
from paimon_rs.table_merge_into import WhenMatched, WhenNotMatched, lit

from unit_helpers import write_arrow

SCH = pa.schema([("id", pa.int64()), ("a", pa.int64()), ("b", pa.string())])
DE = {"row-tracking.enabled": "true", "data-evolution.enabled": "true"}
DV = {**DE, "deletion-vectors.enabled": "true"}
COLS = ["_ROW_ID", "id", "a", "b"]


def _table(path, options=None, schema=SCH, partition_keys=None):
    c = CatalogFactory.create({"warehouse": str(path)})
    c.create_database("db", True)
    c.create_table("db.t", Schema.from_pyarrow_schema(schema, partition_keys=partition_keys,
                                                      options=options or DE), True)
    return c.get_table("db.t")


def _commit(t, make):
    wb = t.new_batch_write_builder()
    msgs = make(wb.new_update())
    c = wb.new_commit()
    c.commit(msgs)
    c.close()
    return msgs


def _upsert(t, data, keys, cols=None):
    def make(u):
        if cols is not None:
            u.with_update_type(cols)
        return u.upsert_by_arrow_with_key(data, keys)
    return _commit(t, make)


def _read(t, cols=COLS):
    rb = t.new_read_builder().with_projection(cols)
    return sorted(rb.new_read().to_arrow(rb.new_scan().plan().splits()).to_pylist(),
                  key=lambda r: r["_ROW_ID"])


def _files(t):
    out = []
    for _root, _, names in os.walk(t.table_path):
        out += [n for n in names if n.startswith("data-")]
    return sorted(out)


def test_matched_rows_are_updated_the_rest_appended_in_one_commit(tmp_path):
    t = _table(tmp_path)
    write_arrow(t, pa.table({"id": [1, 2, 3], "a": [10, 20, 30], "b": ["x", "y", "z"]}, schema=SCH))
    before = t.latest_snapshot_id()
    _upsert(t, pa.table({"id": [3, 9, 1], "a": [300, 900, 100], "b": ["Z", "N", "X"]}, schema=SCH),
            ["id"])
    assert t.latest_snapshot_id() == before + 1
    assert _read(t) == [
        {"_ROW_ID": 0, "id": 1, "a": 100, "b": "X"},
        {"_ROW_ID": 1, "id": 2, "a": 20, "b": "y"},
        {"_ROW_ID": 2, "id": 3, "a": 300, "b": "Z"},
        {"_ROW_ID": 3, "id": 9, "a": 900, "b": "N"},
    ]


def test_duplicate_input_keys_last_wins_and_a_key_of_several_rows_updates_all(tmp_path):
    t = _table(tmp_path)
    write_arrow(t, pa.table({"id": [1, 1, 2], "a": [1, 2, 3], "b": ["p", "q", "r"]}, schema=SCH))
    _upsert(t, pa.table({"id": [1, 5, 1, 5], "a": [7, 50, 8, 51], "b": ["s", "t", "u", "v"]},
                        schema=SCH), ["id"])
    assert _read(t) == [
        {"_ROW_ID": 0, "id": 1, "a": 8, "b": "u"},
        {"_ROW_ID": 1, "id": 1, "a": 8, "b": "u"},
        {"_ROW_ID": 2, "id": 2, "a": 3, "b": "r"},
        {"_ROW_ID": 3, "id": 5, "a": 51, "b": "v"},
    ]


def test_composite_and_null_keys(tmp_path):
    t = _table(tmp_path)
    write_arrow(t, pa.table({"id": [1, 1, None], "a": [1, 2, 3], "b": ["p", "q", "r"]}, schema=SCH))
    _upsert(t, pa.table({"id": [1, None], "a": [2, 3], "b": ["Q", "R"]}, schema=SCH), ["id", "a"])
    assert [(r["id"], r["a"], r["b"]) for r in _read(t)] == [(1, 1, "p"), (1, 2, "Q"), (None, 3, "R")]


def test_update_type_limits_the_updated_columns_and_appends_write_what_the_input_has(tmp_path):
    t = _table(tmp_path)
    write_arrow(t, pa.table({"id": [1, 2], "a": [10, 20], "b": ["x", "y"]}, schema=SCH))
    _upsert(t, pa.table({"id": [2, 3], "a": [-2, -3], "b": ["Y", "Z"]}, schema=SCH), ["id"], ["a"])
    _upsert(t, pa.table({"id": [4], "a": [40]}), ["id"])
    assert [(r["id"], r["a"], r["b"]) for r in _read(t)] == [
        (1, 10, "x"), (2, -2, "y"), (3, -3, "Z"), (4, 40, None)]


def test_partitioned_keys_match_within_their_partition(tmp_path):
    sch = pa.schema([("id", pa.int64()), ("a", pa.int64()), ("p", pa.string())])
    t = _table(tmp_path, schema=sch, partition_keys=["p"])
    write_arrow(t, pa.table({"id": [1, 1], "a": [10, 20], "p": ["x", "y"]}, schema=sch))
    _upsert(t, pa.table({"id": [1, 1], "a": [11, 31], "p": ["x", "z"]}, schema=sch), ["id", "p"])
    got = sorted((r["p"], r["id"], r["a"]) for r in _read(t, ["_ROW_ID", "id", "a", "p"]))
    assert got == [("x", 1, 11), ("y", 1, 20), ("z", 1, 31)]


def test_upsert_by_key_rows_and_the_stream_builder(tmp_path):
    t = _table(tmp_path)
    write_arrow(t, pa.table({"id": [1], "a": [10], "b": ["x"]}, schema=SCH))
    _commit(t, lambda u: u.upsert_by_key([{"id": 1, "a": 11, "b": "X"}, (2, 20, "y")], ["id"]))
    wb = t.new_stream_write_builder()
    msgs = wb.new_update().upsert_by_arrow_with_key(
        pa.table({"id": [2], "a": [21], "b": ["Y"]}, schema=SCH), ["id"], 7)
    c = wb.new_commit()
    c.commit(msgs, 7)
    c.close()
    assert [(r["id"], r["a"], r["b"]) for r in _read(t)] == [(1, 11, "X"), (2, 21, "Y")]


def test_bad_upserts_are_refused_and_nothing_is_written(tmp_path):
    t = _table(tmp_path)
    write_arrow(t, pa.table({"id": [1], "a": [10], "b": ["x"]}, schema=SCH))
    files = _files(t)
    u = t.new_batch_write_builder().new_update()
    data = pa.table({"id": [1], "a": [2], "b": ["y"]}, schema=SCH)
    with pytest.raises(InvalidArgumentError, match="upsert_keys must not be empty"):
        u.upsert_by_arrow_with_key(data, [])
    with pytest.raises(InvalidArgumentError, match="not in table schema"):
        u.upsert_by_arrow_with_key(data, ["nope"])
    with pytest.raises(InvalidArgumentError, match="not in input data columns"):
        u.upsert_by_arrow_with_key(pa.table({"a": [1]}), ["id"])
    with pytest.raises(InvalidArgumentError, match="Input data is empty"):
        u.upsert_by_arrow_with_key(data.slice(0, 0), ["id"])
    with pytest.raises(InvalidArgumentError, match="has no column b"):
        u.upsert_by_arrow_with_key(pa.table({"id": [1], "a": [3]}), ["id"])
    with pytest.raises(InvalidArgumentError, match="rows must not be empty"):
        u.upsert_by_key([], ["id"])
    plain = _table(tmp_path / "plain", options={"row-tracking.enabled": "true"})
    with pytest.raises(InvalidArgumentError, match="data-evolution.enabled"):
        plain.new_batch_write_builder().new_update().upsert_by_arrow_with_key(data, ["id"])
    sch = pa.schema([("id", pa.int64()), ("p", pa.string())])
    part = _table(tmp_path / "part", schema=sch, partition_keys=["p"])
    with pytest.raises(InvalidArgumentError, match="partition key"):
        part.new_batch_write_builder().new_update().upsert_by_arrow_with_key(
            pa.table({"id": [1]}), ["id"])
    assert _files(t) == files


def test_deletes_by_row_id_and_predicate_then_updates_of_their_groups(tmp_path):
    t = _table(tmp_path, options=DV)
    write_arrow(t, pa.table({"id": [1, 2, 3, 4], "a": [10, 20, 30, 40], "b": list("wxyz")}, schema=SCH))
    _upsert(t, pa.table({"id": [2], "a": [21], "b": ["X"]}, schema=SCH), ["id"])
    msgs = _commit(t, lambda u: u.delete_by_row_id([0, 0]))
    assert len(msgs) == 1 and all(m.row_count == 0 for m in msgs)
    assert [r["id"] for r in _read(t)] == [2, 3, 4]
    _commit(t, lambda u: u.delete_by_predicate(u.new_predicate_builder().equal("b", "y")))
    assert [r["id"] for r in _read(t)] == [2, 4]
    # the group with deleted rows is updated again, and upserted into
    _upsert(t, pa.table({"id": [4, 5], "a": [41, 50], "b": ["Z", "v"]}, schema=SCH), ["id"], ["a"])
    assert _read(t) == [
        {"_ROW_ID": 1, "id": 2, "a": 21, "b": "X"},
        {"_ROW_ID": 3, "id": 4, "a": 41, "b": "z"},
        {"_ROW_ID": 4, "id": 5, "a": 50, "b": "v"},
    ]
    with pytest.raises(InvalidArgumentError, match="is deleted"):
        _commit(t, lambda u: u.with_update_type(["a"]).update_by_arrow_with_row_id(
            pa.table({"_ROW_ID": pa.array([0], pa.int64()), "a": [1]})))
    assert _commit(t, lambda u: u.delete_by_row_id([])) == []
    with pytest.raises(InvalidArgumentError, match="does not belong to any valid range"):
        t.new_batch_write_builder().new_update().delete_by_row_id([99])
    with pytest.raises(InvalidArgumentError, match="must not be null"):
        t.new_batch_write_builder().new_update().delete_by_row_id([None])
    # the stream builder, and a delete of everything
    wb = t.new_stream_write_builder()
    msgs = wb.new_update().delete_by_predicate(None, 3)
    c = wb.new_commit()
    c.commit(msgs, 3)
    c.close()
    assert _read(t) == []


def test_deletes_need_deletion_vectors(tmp_path):
    t = _table(tmp_path)
    write_arrow(t, pa.table({"id": [1], "a": [10], "b": ["x"]}, schema=SCH))
    with pytest.raises(InvalidArgumentError, match="deletion-vectors.enabled"):
        t.new_batch_write_builder().new_update().delete_by_row_id([0])


_ops = st.lists(st.one_of(
    st.tuples(st.just("append"), st.lists(st.integers(0, 12), min_size=1, max_size=4)),
    st.tuples(st.just("upsert"), st.sampled_from([None, ["a"], ["b"]]),
              st.lists(st.integers(0, 12), min_size=1, max_size=6)),
    st.tuples(st.just("delete"), st.lists(st.integers(0, 40), min_size=1, max_size=3)),
    st.tuples(st.just("delete_pred"), st.integers(0, 12)),
    st.tuples(st.just("merge"), st.lists(st.integers(0, 12), min_size=1, max_size=4, unique=True),
              st.booleans()),
), min_size=1, max_size=7)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=_ops)
def test_reads_equal_a_model_keyed_by_row_id(tmp_path_factory, ops):
    t = _table(tmp_path_factory.mktemp("m"), options=DV)
    model: dict = {}
    next_id = 0
    step = 0
    for op in ops:
        step += 1
        if op[0] == "append":
            rows = [{"id": k, "a": step, "b": f"s{step}"} for k in op[1]]
            write_arrow(t, pa.Table.from_pylist(rows, schema=SCH))
            for r in rows:
                model[next_id] = dict(r)
                next_id += 1
            continue
        if op[0] == "delete":
            if not model:
                continue
            live = sorted(model)
            rids = sorted({live[p % len(live)] for p in op[1]})
            _commit(t, lambda u, rids=rids: u.delete_by_row_id(rids))
            for r in rids:
                del model[r]
            continue
        if op[0] == "delete_pred":
            cut = op[1]
            _commit(t, lambda u, cut=cut: u.delete_by_predicate(
                u.new_predicate_builder().greater_than("id", cut)))
            for r in [r for r, m in model.items() if m["id"] > cut]:
                del model[r]
            continue
        if op[0] == "merge":
            # matched rows: a set to the source's (or deleted); unmatched source rows inserted
            # in source order
            keys, delete = op[1], op[2]
            src = pa.table({"id": pa.array(keys, pa.int64()),
                            "a": [step * 100 + i for i in range(len(keys))]})
            when = WhenMatched.delete() if delete else WhenMatched.update({"a": "s.a"})
            _commit(t, lambda u, src=src, when=when: u.merge_into(
                src, on=["id"], when_matched=[when],
                when_not_matched=[WhenNotMatched(insert={"a": "s.a", "b": lit("new")})]))
            present = {m["id"] for m in model.values()}
            for rid, m in list(model.items()):
                if m["id"] in keys:
                    if delete:
                        del model[rid]
                    else:
                        m["a"] = step * 100 + keys.index(m["id"])
            for i, k in enumerate(keys):
                if k not in present:
                    model[next_id] = {"id": k, "a": step * 100 + i, "b": "new"}
                    next_id += 1
            continue
        cols, keys = op[1], op[2]
        rows = [{"id": k, "a": step * 100 + i, "b": f"u{step}-{i}"} for i, k in enumerate(keys)]
        _upsert(t, pa.Table.from_pylist(rows, schema=SCH), ["id"], cols)
        last = {r["id"]: i for i, r in enumerate(rows)}  # last write wins, in input order
        for i in sorted(last.values()):
            k, r = rows[i]["id"], rows[i]
            hits = [rid for rid, m in model.items() if m["id"] == k]
            for rid in hits:
                for c in cols or ["a", "b"]:
                    model[rid][c] = r[c]
            if not hits:
                model[next_id] = dict(r)
                next_id += 1
    assert _read(t) == [{"_ROW_ID": r, **model[r]} for r in sorted(model)]


def test_merge_into_updates_matched_inserts_unmatched_and_deletes(tmp_path):
    from paimon_rs.table_merge_into import source_col, target_col

    t = _table(tmp_path, options=DV)
    write_arrow(t, pa.table({"id": [1, 2, 3], "a": [10, 20, 30], "b": ["x", "y", "z"]}, schema=SCH))
    src = pa.table({"id": [2, 4, None], "v": [200, 400, 0], "w": ["Y", "W", "N"]})
    _commit(t, lambda u: u.merge_into(
        src, on=["id"],
        when_matched=[WhenMatched.update({"a": source_col("v"), "b": lit("L")})],
        when_not_matched=[WhenNotMatched(insert={"a": "s.v", "b": "s.w"})]))
    # a null key matches nothing: inserted
    assert _read(t) == [
        {"_ROW_ID": 0, "id": 1, "a": 10, "b": "x"},
        {"_ROW_ID": 1, "id": 2, "a": 200, "b": "L"},
        {"_ROW_ID": 2, "id": 3, "a": 30, "b": "z"},
        {"_ROW_ID": 3, "id": 4, "a": 400, "b": "W"},
        {"_ROW_ID": 4, "id": None, "a": 0, "b": "N"},
    ]
    _commit(t, lambda u: u.merge_into(pa.table({"k": [3, 3]}), on={"id": "k"},
                                      when_matched=[WhenMatched.delete()]))
    _commit(t, lambda u: u.merge_into(pa.table({"id": [1], "a": [5]}), on=["id"],
                                      when_matched=[WhenMatched.update({"b": target_col("a")})]))
    assert [(r["id"], r["a"], r["b"]) for r in _read(t)] == [
        (1, 10, "10"), (2, 200, "L"), (4, 400, "W"), (None, 0, "N")]


def test_bad_merges_are_refused(tmp_path):
    from paimon_rs.exceptions import UnsupportedError

    t = _table(tmp_path)
    write_arrow(t, pa.table({"id": [1, 2], "a": [10, 20], "b": ["x", "y"]}, schema=SCH))
    u = t.new_batch_write_builder().new_update()
    src = pa.table({"id": [1, 1], "a": [5, 6], "b": ["p", "q"]})
    with pytest.raises(InvalidArgumentError, match="multiple source rows"):
        u.merge_into(src, on=["id"], when_matched=[WhenMatched.update()])
    with pytest.raises(InvalidArgumentError, match="At least one"):
        u.merge_into(src, on=["id"])
    with pytest.raises(UnsupportedError, match="conditions"):
        u.merge_into(src, on=["id"], when_matched=[WhenMatched.update(condition="s.a > 1")])
    with pytest.raises(InvalidArgumentError, match="deletion-vectors.enabled"):
        u.merge_into(src, on=["id"], when_matched=[WhenMatched.delete()])
    with pytest.raises(InvalidArgumentError, match="must not reference target columns"):
        u.merge_into(src, on=["id"], when_not_matched=[WhenNotMatched(insert={"a": "t.a"})])
    with pytest.raises(UnsupportedError, match="self-merge"):
        u.merge_into(t, on=["_ROW_ID"], when_matched=[WhenMatched.update({"a": 1})])
    assert t.latest_snapshot_id() == 1


def test_upserts_deletes_and_merges_after_an_alter_read_the_current_columns(tmp_path):
    """ALTER makes no snapshot: the key and predicate reads right after one use the current
    columns (``copy_without_time_travel``), so a column added since can key an upsert, filter a
    delete and key a merge."""
    from paimon_rs import AtomicType, SchemaChange

    c = CatalogFactory.create({"warehouse": str(tmp_path)})
    t = _table(tmp_path, options=DV)
    write_arrow(t, pa.table({"id": [1, 2], "a": [10, 20], "b": ["x", "y"]}, schema=SCH))
    c.alter_table("db.t", [SchemaChange.add_column("c", AtomicType("STRING"))], False)
    t = c.get_table("db.t")
    _upsert(t, pa.table({"id": [1], "c": [None]}), ["id", "c"], ["id"])
    _commit(t, lambda u: u.merge_into(pa.table({"k": ["q"]}), on={"c": "k"},
                                      when_not_matched=[WhenNotMatched(insert={"id": lit(9)})]))
    _commit(t, lambda u: u.delete_by_predicate(u.new_predicate_builder().equal("c", "q")))
    assert [(r["id"], r["c"]) for r in _read(t, COLS + ["c"])] == [(1, None), (2, None)]
