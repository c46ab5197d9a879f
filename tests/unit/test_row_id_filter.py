"""Filters naming ``_ROW_ID`` on row-tracking tables (plain append and data-evolution), as
pypaimon 2.1.0: every operator filters the rows exactly, alone or mixed with other columns
under AND / OR, whether ``_ROW_ID`` is projected or not, with updates, deletion vectors and
``with_slice``; a table without row tracking still refuses the column (before: refused
everywhere, "The field _ROW_ID is not in field list")."""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paimon_rs import CatalogFactory, Schema
from paimon_rs.exceptions import InvalidArgumentError

SCH = pa.schema([("id", pa.int64()), ("a", pa.int64())])
DE = {"row-tracking.enabled": "true", "data-evolution.enabled": "true"}
RT = {"row-tracking.enabled": "true", "deletion-vectors.enabled": "true"}


def _table(path, options):
    c = CatalogFactory.create({"warehouse": str(path)})
    c.create_database("db", True)
    c.create_table("db.t", Schema.from_pyarrow_schema(SCH, options=options), False)
    return c.get_table("db.t")


def _commit(t, ids):
    wb = t.new_batch_write_builder()
    w = wb.new_write()
    w.write_arrow(pa.table({"id": ids, "a": [i % 4 for i in ids]}, schema=SCH))
    wb.new_commit().commit(w.prepare_commit())
    w.close()


def _filled(path, options):
    """12 rows in 3 files (row ids 0..11); on the data-evolution table `a` of rows 2..7 is
    updated (an update file over the first two groups), on the plain one rows with id 5 and 9
    are deleted by deletion vectors."""
    t = _table(path, options)
    for i in range(3):
        _commit(t, list(range(i * 4, i * 4 + 4)))
    if options is DE:
        wb = t.new_batch_write_builder()
        data = pa.table({"_ROW_ID": pa.array(range(2, 8), pa.int64()),
                         "a": pa.array([100 + i for i in range(6)], pa.int64())})
        wb.new_commit().commit(wb.new_update().with_update_type(["a"])
                               .update_by_arrow_with_row_id(data))
    else:
        t.delete("id = 5 OR id = 9")
    return t


@pytest.fixture(scope="module", params=["de", "plain"])
def table(request, tmp_path_factory):
    path = tmp_path_factory.mktemp(request.param)
    return _filled(path, DE if request.param == "de" else RT)


def _read(t, cols, make=None, slice_=None):
    rb = t.new_read_builder().with_projection(cols)
    if make is not None:
        rb = rb.with_filter(make(rb.new_predicate_builder()))
    scan = rb.new_scan()
    if slice_ is not None:
        scan = scan.with_slice(*slice_)
    return rb.new_read().to_arrow(scan.plan().splits())


def _model(t, keep):
    rows = _read(t, ["_ROW_ID", "id", "a"]).to_pylist()
    return sorted((r["_ROW_ID"], r["id"], r["a"]) for r in rows if keep(r))


CASES = {
    "eq": (lambda pb: pb.equal("_ROW_ID", 5), lambda r: r["_ROW_ID"] == 5),
    "in": (lambda pb: pb.is_in("_ROW_ID", [1, 9, 30]), lambda r: r["_ROW_ID"] in (1, 9, 30)),
    "between": (lambda pb: pb.between("_ROW_ID", 3, 6), lambda r: 3 <= r["_ROW_ID"] <= 6),
    "lt": (lambda pb: pb.less_than("_ROW_ID", 3), lambda r: r["_ROW_ID"] < 3),
    "le": (lambda pb: pb.less_or_equal("_ROW_ID", 3), lambda r: r["_ROW_ID"] <= 3),
    "gt": (lambda pb: pb.greater_than("_ROW_ID", 9), lambda r: r["_ROW_ID"] > 9),
    "ge": (lambda pb: pb.greater_or_equal("_ROW_ID", 9), lambda r: r["_ROW_ID"] >= 9),
    "ne": (lambda pb: pb.not_equal("_ROW_ID", 9), lambda r: r["_ROW_ID"] != 9),
    "not_in": (lambda pb: pb.is_not_in("_ROW_ID", list(range(9))), lambda r: r["_ROW_ID"] >= 9),
    "is_null": (lambda pb: pb.is_null("_ROW_ID"), lambda r: False),
    "is_not_null": (lambda pb: pb.is_not_null("_ROW_ID"), lambda r: True),
    "and": (lambda pb: pb.and_predicates([pb.between("_ROW_ID", 2, 9), pb.greater_than("id", 5)]),
            lambda r: 2 <= r["_ROW_ID"] <= 9 and r["id"] > 5),
    "or": (lambda pb: pb.or_predicates([pb.equal("_ROW_ID", 2), pb.equal("a", 101)]),
           lambda r: r["_ROW_ID"] == 2 or r["a"] == 101),
    "or_ids": (lambda pb: pb.or_predicates([pb.equal("_ROW_ID", 2), pb.equal("_ROW_ID", 11)]),
               lambda r: r["_ROW_ID"] in (2, 11)),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_every_operator_filters_rows_exactly(table, case):
    make, keep = CASES[case]
    got = _read(table, ["_ROW_ID", "id", "a"], make).to_pylist()
    assert sorted((r["_ROW_ID"], r["id"], r["a"]) for r in got) == _model(table, keep)


@pytest.mark.parametrize("case", ["eq", "between", "or", "ne"])
def test_row_id_filtered_but_not_projected(table, case):
    make, keep = CASES[case]
    got = _read(table, ["id"], make)
    assert got.schema.names == ["id"]
    assert sorted(got.column("id").to_pylist()) == [r[1] for r in sorted(
        _model(table, keep), key=lambda r: r[1])]
    # a filter string too, and a read of every column (no projection)
    rb = table.new_read_builder().with_filter("_ROW_ID >= 10")
    out = rb.new_read().to_arrow(rb.new_scan().plan().splits())
    assert out.schema.names == ["id", "a"]
    assert sorted(out.column("id").to_pylist()) == [r[1] for r in _model(
        table, lambda r: r["_ROW_ID"] >= 10)]
    # and the one-line reads (Table.to_arrow parsed filter strings against the table's columns)
    assert sorted(table.to_arrow("_ROW_ID >= 10").column("id").to_pylist()) == [r[1] for r in _model(
        table, lambda r: r["_ROW_ID"] >= 10)]


def test_with_slice_counts_positions_before_the_filter(table):
    """Positions of a slice count the rows of the plan before the filter (pypaimon's order);
    the filter then keeps its rows of the slice."""
    full = _model(table, lambda r: True)
    for lo, hi in [(0, 4), (3, 9), (8, 12)]:
        in_slice = {r["_ROW_ID"] for r in _read(table, ["_ROW_ID"], slice_=(lo, hi)).to_pylist()}
        got = _read(table, ["_ROW_ID", "id", "a"], lambda pb: pb.greater_or_equal("_ROW_ID", 5),
                    slice_=(lo, hi)).to_pylist()
        want = [r for r in full if r[0] in in_slice and r[0] >= 5]
        assert sorted((r["_ROW_ID"], r["id"], r["a"]) for r in got) == want


_OPS = st.sampled_from(["equal", "not_equal", "less_than", "less_or_equal", "greater_than",
                        "greater_or_equal", "is_in", "is_not_in", "between"])
_PY = {"equal": lambda v, x: v == x[0], "not_equal": lambda v, x: v != x[0],
       "less_than": lambda v, x: v < x[0], "less_or_equal": lambda v, x: v <= x[0],
       "greater_than": lambda v, x: v > x[0], "greater_or_equal": lambda v, x: v >= x[0],
       "is_in": lambda v, x: v in x, "is_not_in": lambda v, x: v not in x,
       "between": lambda v, x: x[0] <= v <= x[1]}


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(leaves=st.lists(st.tuples(_OPS, st.sampled_from(["_ROW_ID", "id", "a"]),
                                 st.lists(st.integers(-1, 13), min_size=2, max_size=3)),
                       min_size=1, max_size=3),
       conj=st.booleans())
def test_random_filters_match_the_model(table, leaves, conj):
    def make(pb):
        ps = []
        for op, col, lits in leaves:
            f = getattr(pb, op)
            ps.append(f(col, lits) if op in ("is_in", "is_not_in") else
                      f(col, lits[0], lits[1]) if op == "between" else f(col, lits[0]))
        return pb.and_predicates(ps) if conj else pb.or_predicates(ps)

    def keep(r):
        hits = [_PY[op](r[col], lits) for op, col, lits in leaves]
        return all(hits) if conj else any(hits)

    got = _read(table, ["id", "a", "_ROW_ID"], make).to_pylist()
    assert sorted((r["_ROW_ID"], r["id"], r["a"]) for r in got) == _model(table, keep)


def test_refused_without_row_tracking(tmp_path):
    t = _table(tmp_path, {})
    _commit(t, [1, 2])
    with pytest.raises(InvalidArgumentError, match="_ROW_ID"):
        t.new_read_builder().new_predicate_builder().equal("_ROW_ID", 1)
    with pytest.raises(InvalidArgumentError, match="_ROW_ID"):
        t.new_read_builder().with_filter("_ROW_ID = 1")


@pytest.mark.parametrize("flt, groups", [
    (None, [0, 4, 8]), ("_ROW_ID = 9", [8]), ("_ROW_ID IN (1, 9)", [0, 8]),
    ("_ROW_ID BETWEEN 3 AND 5", [0, 4]), ("_ROW_ID = 9 AND id > 0", [8]),
    ("_ROW_ID = 30", []),
    # no ids from these: every group kept, the filter still exact on the rows
    ("_ROW_ID < 3", [0, 4, 8]), ("_ROW_ID = 9 OR id = 1", [0, 4, 8]),
])
def test_data_evolution_plan_keeps_the_groups_of_the_ids(tmp_path, flt, groups):
    """pypaimon's `_row_ranges_from_predicate`: `=` / `IN` / `BETWEEN` on `_ROW_ID` (under
    AND / OR) keep only the row-id groups holding those ids, every file of a group."""
    t = _filled(tmp_path, DE)
    rb = t.new_read_builder().with_projection(["_ROW_ID", "id"]).with_filter(flt)
    splits = rb.new_scan().plan().splits()
    firsts = sorted({f.first_row_id for s in splits for f in s.files})
    assert firsts == groups
    # an update file rides with its group
    assert sum(len(s.files) for s in splits) == len(groups) + len({0, 4} & set(groups))


def test_sequence_number_filters_too(table):
    rows = _read(table, ["id", "_SEQUENCE_NUMBER"]).to_pylist()
    seq = max(r["_SEQUENCE_NUMBER"] for r in rows)
    got = _read(table, ["id"], lambda pb: pb.equal("_SEQUENCE_NUMBER", seq))
    assert got.schema.names == ["id"]
    assert sorted(got.column("id").to_pylist()) == sorted(
        r["id"] for r in rows if r["_SEQUENCE_NUMBER"] == seq)


def test_chunk_shuffle_refuses_it_as_pypaimon(tmp_path):
    """pypaimon's `_validate_chunk_shuffle_compat`: a chunk-shuffle filter names partition
    keys only, `_ROW_ID` included."""
    t = _filled(tmp_path, DE)
    rb = t.new_read_builder().with_filter("_ROW_ID IN (1, 9)")
    with pytest.raises(InvalidArgumentError, match="_ROW_ID"):
        rb.new_scan().with_chunk_shuffle(seed=1, chunk_size=2).with_shard(0, 2).plan()


@pytest.mark.parametrize("options", [DE, RT], ids=["data-evolution", "deletion-vectors"])
def test_streaming_read_filters_by_row_id(tmp_path, options):
    """A streaming read takes a ``_ROW_ID`` filter as a batch read does, for the first full
    plan and for later snapshots' changes (before: the scan refused it without naming the
    table, "filter column '_ROW_ID' is not in the table")."""
    t = _table(tmp_path, options)
    _commit(t, [0, 1, 2, 3])
    sb = (t.new_stream_read_builder().with_filter("_ROW_ID >= 2")
          .with_projection(["id", "_ROW_ID"]))
    plans = iter(sb.new_streaming_scan().stream_sync())
    read = sb.new_read()
    assert read.to_arrow(next(plans).splits()).to_pydict() == {"id": [2, 3], "_ROW_ID": [2, 3]}
    _commit(t, [10, 11])
    assert read.to_arrow(next(plans).splits()).to_pydict() == {"id": [10, 11], "_ROW_ID": [4, 5]}


def test_delete_by_row_id_is_refused_naming_the_table(tmp_path):
    """``table.delete`` filters on the table's own columns: a system column is refused by name,
    an unknown column too, each message naming the table."""
    from paimon_rs.exceptions import UnsupportedError

    t = _table(tmp_path, RT)
    _commit(t, [0, 1, 2])
    with pytest.raises(UnsupportedError, match=r"delete on db\.t: .*'_ROW_ID'"):
        t.delete("_ROW_ID = 1")
    with pytest.raises(UnsupportedError, match=r"delete on db\.t: .*'_ROW_ID'"):
        t.delete(t.new_read_builder().new_predicate_builder().equal("_ROW_ID", 1))
    with pytest.raises(InvalidArgumentError, match=r"delete on db\.t: .*'nope'"):
        t.delete("nope = 1")
    assert _read(t, ["id"]).num_rows == 3  # nothing deleted
