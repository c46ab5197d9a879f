"""Row updates of data-evolution tables by ``_ROW_ID`` (pypaimon's ``new_update()``):
``with_update_type`` + ``update_by_arrow_with_row_id`` write one file of the updated columns per
touched file group (``write_cols``, the group's ``first_row_id``), the commit stamps it with
the snapshot's id, and reads merge it. The checks (unknown, null, duplicate row ids, partition
columns) refuse before anything is written; the members paimon_rs does not implement are
refused by name. Interop with pypaimon: tests/compat/test_pypaimon_data_evolution_write.py."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paimon_rs import CatalogFactory, Schema
from paimon_rs.exceptions import CommitConflictError, InvalidArgumentError, UnsupportedError

from unit_helpers import write_arrow

SCH = pa.schema([("id", pa.int64()), ("a", pa.int64()), ("b", pa.string())])
DE = {"row-tracking.enabled": "true", "data-evolution.enabled": "true"}
COLS = ["_ROW_ID", "id", "a", "b"]


def _table(path, options=None, name="db.t", schema=SCH, partition_keys=None):
    c = CatalogFactory.create({"warehouse": str(path)})
    c.create_database("db", True)
    c.create_table(name, Schema.from_pyarrow_schema(schema, partition_keys=partition_keys,
                                                    options=options or DE), True)
    return c.get_table(name)


def _update(t, data, cols=None):
    wb = t.new_batch_write_builder()
    u = wb.new_update()
    if cols is not None:
        u.with_update_type(cols)
    msgs = u.update_by_arrow_with_row_id(data)
    c = wb.new_commit()
    c.commit(msgs)
    c.close()
    return msgs


def _read(t, cols=COLS):
    rb = t.new_read_builder().with_projection(cols)
    return sorted(rb.new_read().to_arrow(rb.new_scan().plan().splits()).to_pylist(),
                  key=lambda r: r["_ROW_ID"])


def test_update_some_columns_of_some_rows(tmp_path):
    t = _table(tmp_path)
    write_arrow(t, pa.table({"id": [1, 2, 3], "a": [10, 20, 30], "b": ["x", "y", "z"]}, schema=SCH))
    write_arrow(t, pa.table({"id": [4, 5], "a": [40, 50], "b": ["u", "v"]}, schema=SCH))
    msgs = _update(t, pa.table({"_ROW_ID": pa.array([4, 1], pa.int64()), "a": [-5, -2]}), ["a"])
    # one file per touched group, of the group's whole range
    assert sorted(m.row_count for m in msgs) == [2, 3]
    assert _read(t) == [
        {"_ROW_ID": 0, "id": 1, "a": 10, "b": "x"}, {"_ROW_ID": 1, "id": 2, "a": -2, "b": "y"},
        {"_ROW_ID": 2, "id": 3, "a": 30, "b": "z"}, {"_ROW_ID": 3, "id": 4, "a": 40, "b": "u"},
        {"_ROW_ID": 4, "id": 5, "a": -5, "b": "v"}]
    # the update keeps nextRowId; a later append numbers on
    snap = json.loads((tmp_path / "db.db" / "t" / "snapshot" / "snapshot-3").read_text())
    assert snap["nextRowId"] == 5 and snap["commitKind"] == "APPEND"
    _update(t, pa.table({"_ROW_ID": pa.array([1], pa.int64()), "b": ["q"], "a": [7]}))
    write_arrow(t, pa.table({"id": [6], "a": [60], "b": ["w"]}, schema=SCH))
    got = _read(t, COLS + ["_SEQUENCE_NUMBER"])
    assert [(r["_ROW_ID"], r["a"], r["b"]) for r in got] == [
        (0, 10, "x"), (1, 7, "q"), (2, 30, "z"), (3, 40, "u"), (4, -5, "v"), (5, 60, "w")]


def test_a_large_group_is_one_file(tmp_path):
    # more rows than the writer checks its size after (4096): still one file of the group
    t = _table(tmp_path)
    n = 10_000
    write_arrow(t, pa.table({"id": list(range(n)), "a": list(range(n)), "b": ["s"] * n}, schema=SCH))
    msgs = _update(t, pa.table({"_ROW_ID": pa.array([0, 5000, n - 1], pa.int64()), "a": [-1, -2, -3]}), ["a"])
    assert [len(m.file_names) for m in msgs] == [1] and msgs[0].row_count == n
    got = _read(t, ["_ROW_ID", "a"])
    assert [r["a"] for r in got if r["a"] < 0] == [-1, -2, -3] and len(got) == n


def test_stream_update_and_batches(tmp_path):
    t = _table(tmp_path)
    write_arrow(t, pa.table({"id": [1, 2], "a": [10, 20], "b": ["x", "y"]}, schema=SCH))
    write_arrow(t, pa.table({"id": [3], "a": [30], "b": ["z"]}, schema=SCH))
    wb = t.new_batch_write_builder()
    msgs = wb.new_update().with_update_type(["b"]).update_by_arrow_batches_with_row_id([
        pa.table({"_ROW_ID": pa.array([0], pa.int64()), "b": ["p"]}),
        pa.table({"_ROW_ID": pa.array([2], pa.int64()), "b": ["r"]})])
    wb.new_commit().commit(msgs)
    # per column, two batches must not touch the same group (pypaimon's check)
    with pytest.raises(InvalidArgumentError, match="overlapping"):
        wb.new_update().with_update_type(["b"]).update_by_arrow_batches_with_row_id([
            pa.table({"_ROW_ID": pa.array([0], pa.int64()), "b": ["p"]}),
            pa.table({"_ROW_ID": pa.array([1], pa.int64()), "b": ["r"]})])
    sb = t.new_stream_write_builder()
    msgs = sb.new_update().with_update_type(["a"]).update_by_arrow_with_row_id(
        pa.table({"_ROW_ID": pa.array([1], pa.int64()), "a": [99]}), 1)
    sb.new_commit().commit(msgs, 1)
    assert [(r["a"], r["b"]) for r in _read(t)] == [(10, "p"), (99, "y"), (30, "r")]


def test_bad_updates_are_refused_and_nothing_is_committed(tmp_path):
    t = _table(tmp_path)
    write_arrow(t, pa.table({"id": [1, 2], "a": [10, 20], "b": ["x", "y"]}, schema=SCH))
    before = t.latest_snapshot_id()
    u = t.new_batch_write_builder().new_update().with_update_type(["a"])
    cases = [
        (pa.table({"_ROW_ID": pa.array([2], pa.int64()), "a": [1]}), "Row ID 2 does not belong to any valid range"),
        (pa.table({"_ROW_ID": pa.array([-1], pa.int64()), "a": [1]}), "Row ID -1 does not belong"),
        (pa.table({"_ROW_ID": pa.array([0, 0], pa.int64()), "a": [1, 2]}), "duplicate"),
        (pa.table({"_ROW_ID": pa.array([None], pa.int64()), "a": [1]}), "null"),
        (pa.table({"a": [1]}), "_ROW_ID"),
        (pa.table({"_ROW_ID": pa.array([0], pa.int64()), "b": ["q"]}), "no column a"),
    ]
    for data, msg in cases:
        with pytest.raises(InvalidArgumentError, match=msg):
            u.update_by_arrow_with_row_id(data)
    with pytest.raises(InvalidArgumentError, match="not in table schema"):
        u.with_update_type(["nope"])
    for name in ["new_update_by_row_id"]:
        with pytest.raises(UnsupportedError, match=name):
            getattr(u, name)([0])
    assert t.latest_snapshot_id() == before
    assert [r["a"] for r in _read(t)] == [10, 20]
    # no data-evolution: refused
    plain = _table(tmp_path, {"row-tracking.enabled": "true"}, name="db.p")
    write_arrow(plain, pa.table({"id": [1], "a": [1], "b": ["x"]}, schema=SCH))
    with pytest.raises(UnsupportedError, match="data-evolution"):
        plain.new_batch_write_builder().new_update().update_by_arrow_with_row_id(
            pa.table({"_ROW_ID": pa.array([0], pa.int64()), "a": [2]}))


def test_update_of_rows_replaced_since_is_a_conflict(tmp_path):
    t = _table(tmp_path)
    write_arrow(t, pa.table({"id": [1, 2], "a": [10, 20], "b": ["x", "y"]}, schema=SCH))
    wb = t.new_batch_write_builder()
    first = wb.new_update().with_update_type(["a"]).update_by_arrow_with_row_id(
        pa.table({"_ROW_ID": pa.array([0], pa.int64()), "a": [1]}))
    second = wb.new_update().with_update_type(["b"]).update_by_arrow_with_row_id(
        pa.table({"_ROW_ID": pa.array([1], pa.int64()), "b": ["q"]}))
    # two updates read from the same snapshot: the group is still there, both commit
    wb.new_commit().commit(first)
    wb.new_commit().commit(second)
    assert [(r["a"], r["b"]) for r in _read(t)] == [(1, "x"), (20, "q")]
    stale = wb.new_update().with_update_type(["a"]).update_by_arrow_with_row_id(
        pa.table({"_ROW_ID": pa.array([1], pa.int64()), "a": [5]}))
    ow = t.new_batch_write_builder().overwrite()
    w = ow.new_write()
    w.write_arrow(pa.table({"id": [7, 8], "a": [70, 80], "b": ["s", "t"]}, schema=SCH))
    ow.new_commit().commit(w.prepare_commit())
    # the rows 0..2 are gone (the overwrite numbered its rows 2..4): the update is refused
    before = t.latest_snapshot_id()
    with pytest.raises(CommitConflictError, match="no live file group"):
        t.new_batch_write_builder().new_commit().commit(stale)
    assert t.latest_snapshot_id() == before
    assert [(r["_ROW_ID"], r["a"]) for r in _read(t)] == [(2, 70), (3, 80)]


def test_update_by_predicate(tmp_path):
    t = _table(tmp_path)
    write_arrow(t, pa.table({"id": [1, 2, 3], "a": [10, 20, 30], "b": ["x", "y", "z"]}, schema=SCH))
    write_arrow(t, pa.table({"id": [4, 5], "a": [40, 50], "b": ["u", "v"]}, schema=SCH))
    wb = t.new_batch_write_builder()
    u = wb.new_update()
    pb = u.new_predicate_builder()
    # literal
    wb.new_commit().commit(u.update_by_predicate(pb.greater_than("a", 25), {"b": "big"}))
    # callable per file group, reading other columns
    calls = []

    def double(group):
        assert group.column_names == ["a", "_ROW_ID"]  # read_columns, then _ROW_ID (pypaimon's)
        calls.append(group.column("_ROW_ID").to_pylist())
        return pc.multiply(group.column("a"), 2)

    wb.new_commit().commit(u.update_by_predicate(pb.is_in("id", [1, 2, 5]), {"a": double},
                                                 read_columns=["a"]))
    assert sorted(calls) == [[0, 1], [4]]
    # array of the matched rows in _ROW_ID order; no predicate: every row
    wb.new_commit().commit(u.update_by_predicate(pb.equal("b", "big"), {"id": pa.array([-3, -4, -5])}))
    assert [(r["id"], r["a"], r["b"]) for r in _read(t)] == [
        (1, 20, "x"), (2, 40, "y"), (-3, 30, "big"), (-4, 40, "big"), (-5, 100, "big")]
    assert u.update_by_predicate(pb.equal("id", 99), {"a": 1}) == []
    for args, msg in [(({"a": double},), "require read_columns"), (({},), "must not be empty"),
                      (({"a": 1}, ["a"]), "requires a callable"),
                      (({"a": pa.array([1])},), "1 != 5"),
                      (({"a": lambda g: [1]}, ["a"]), "must return a pyarrow")]:
        with pytest.raises(InvalidArgumentError, match=msg):
            u.update_by_predicate(None, *args)


def test_partitioned_table(tmp_path):
    sch = pa.schema([("p", pa.string()), ("id", pa.int64()), ("a", pa.int64())])
    t = _table(tmp_path, schema=sch, partition_keys=["p"])
    write_arrow(t, pa.table({"p": ["x", "y", "x"], "id": [1, 2, 3], "a": [1, 2, 3]}, schema=sch))
    ids = {r["id"]: r["_ROW_ID"] for r in _read(t, ["_ROW_ID", "id"])}
    _update(t, pa.table({"_ROW_ID": pa.array([ids[2], ids[3]], pa.int64()), "a": [20, 30]}), ["a"])
    assert sorted((r["id"], r["a"]) for r in _read(t, ["_ROW_ID", "id", "a"])) == [
        (1, 1), (2, 20), (3, 30)]
    with pytest.raises(UnsupportedError, match="partition column"):
        t.new_batch_write_builder().new_update().with_update_type(["p"]).update_by_arrow_with_row_id(
            pa.table({"_ROW_ID": pa.array([0], pa.int64()), "p": ["z"]}))


_ops = st.lists(st.one_of(
    st.tuples(st.just("append"), st.integers(1, 4)),
    st.tuples(st.just("update"), st.sampled_from([["a"], ["b"], ["a", "b"]]),
              st.lists(st.integers(0, 40), min_size=1, max_size=6, unique=True)),
), min_size=1, max_size=7)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=_ops)
def test_reads_equal_a_model_keyed_by_row_id(tmp_path_factory, ops):
    t = _table(tmp_path_factory.mktemp("m"))
    model: dict = {}
    k = 0
    for op in ops:
        if op[0] == "append" or not model:
            n = op[1] if op[0] == "append" else 2
            rows = [{"id": k + i, "a": k + i, "b": f"s{k + i}"} for i in range(n)]
            write_arrow(t, pa.Table.from_pylist(rows, schema=SCH))
            for r in rows:
                model[len(model)] = dict(r)
            k += n
            continue
        cols, picks = op[1], op[2]
        rids = sorted({p % len(model) for p in picks})
        upd = {"_ROW_ID": pa.array(rids, pa.int64())}
        for c in cols:
            vals = [-(r * 7 + len(c)) if c == "a" else f"u{r}-{k}" for r in rids]
            upd[c] = pa.array(vals, SCH.field(c).type)
            for r, v in zip(rids, vals):
                model[r][c] = v
        k += 1
        _update(t, pa.table(upd), cols)
    assert _read(t) == [{"_ROW_ID": r, **model[r]} for r in sorted(model)]


def test_two_updates_of_one_column_of_a_group_in_one_commit_are_refused(tmp_path):
    """Each update file holds the group's whole column: two in one commit would undo one
    another, so the commit is refused (nothing committed); other columns may share it."""
    t = _table(tmp_path)
    write_arrow(t, pa.table({"id": [1, 2], "a": [10, 20], "b": ["x", "y"]}, schema=SCH))
    wb = t.new_batch_write_builder()
    m1 = wb.new_update().with_update_type(["a"]).update_by_arrow_with_row_id(
        pa.table({"_ROW_ID": pa.array([0], pa.int64()), "a": [-1]}))
    m2 = wb.new_update().with_update_type(["a"]).update_by_arrow_with_row_id(
        pa.table({"_ROW_ID": pa.array([1], pa.int64()), "a": [-2]}))
    m3 = wb.new_update().with_update_type(["b"]).update_by_arrow_with_row_id(
        pa.table({"_ROW_ID": pa.array([1], pa.int64()), "b": ["q"]}))
    before = t.latest_snapshot_id()
    with pytest.raises(InvalidArgumentError, match="two updates of column 'a'"):
        wb.new_commit().commit(m1 + m2)
    assert t.latest_snapshot_id() == before
    wb.new_commit().commit(m1 + m3)
    assert [(r["a"], r["b"]) for r in _read(t)] == [(-1, "x"), (20, "q")]


def test_blob_columns_are_updated(tmp_path):
    """Once refused; now written as pypaimon does (tests/unit/test_blob_update.py)."""
    schema = pa.schema([("id", pa.int64()), ("blob", pa.large_binary())])
    t = _table(tmp_path, schema=schema, name="db.bl")
    write_arrow(t, pa.table({"id": [1], "blob": [b"x"]}, schema=schema))
    _update(t, pa.table({"_ROW_ID": pa.array([0], pa.int64()), "blob": pa.array([b"y"], pa.large_binary())}),
            ["blob"])
    assert [r["blob"] for r in _read(t, ["_ROW_ID", "blob"])] == [b"y"]


def test_a_failed_update_leaves_no_files(tmp_path):
    """An update failing at its second group (a value that does not cast) deletes the first
    group's file, already written."""
    import os

    t = _table(tmp_path)
    write_arrow(t, pa.table({"id": [1], "a": [10], "b": ["x"]}, schema=SCH))
    write_arrow(t, pa.table({"id": [2], "a": [20], "b": ["y"]}, schema=SCH))
    files = lambda: sorted(f for _, _, fs in os.walk(t.table_path) for f in fs if f.startswith("data-"))  # noqa: E731
    before = files()
    u = t.new_batch_write_builder().new_update().with_update_type(["a"])
    data = pa.table({"_ROW_ID": pa.array([0, 1], pa.int64()), "a": pa.array(["1", "not a number"])})
    with pytest.raises(pa.ArrowInvalid):
        u.update_by_arrow_with_row_id(data)
    assert files() == before


def _updater(t, cols, rows):
    """Update messages of ``cols`` for the row ids ``rows`` (values: -row id), not committed."""
    data = {"_ROW_ID": pa.array(rows, pa.int64())}
    for c in cols:
        data[c] = pa.array([-r if c == "a" else f"u{r}" for r in rows], SCH.field(c).type)
    return t.new_batch_write_builder().new_update().with_update_type(cols).update_by_arrow_with_row_id(
        pa.table(data))


def test_racing_updates_of_one_column_of_a_group_are_a_conflict(tmp_path):
    """Two updates read from the same snapshot: the second to commit would put the group's
    column as of that snapshot over the first's (undoing it), so it is refused when the columns
    and rows meet; other columns, and other groups, of the same snapshot still commit (Java's
    `checkForRowIdFromSnapshot`)."""
    t = _table(tmp_path)
    write_arrow(t, pa.table({"id": [1, 2], "a": [10, 20], "b": ["x", "y"]}, schema=SCH))
    write_arrow(t, pa.table({"id": [3], "a": [30], "b": ["z"]}, schema=SCH))
    first = _updater(t, ["a"], [0])
    same_column = _updater(t, ["a", "b"], [1])
    other_column = _updater(t, ["b"], [1])
    other_group = _updater(t, ["a"], [2])
    commit = lambda m: t.new_batch_write_builder().new_commit().commit(m)  # noqa: E731
    commit(first)
    before = t.latest_snapshot_id()
    # Java's / pypaimon's words, which callers that retry such conflicts look for, then ours
    with pytest.raises(CommitConflictError, match="multiple 'MERGE INTO' operations have encountered "
                       "conflicts.*Concurrent updates of the same rows and columns"):
        commit(same_column)
    assert t.latest_snapshot_id() == before
    commit(other_column)
    commit(other_group)
    assert [(r["a"], r["b"]) for r in _read(t)] == [(0, "x"), (20, "u1"), (-2, "z")]
    # read again from the latest snapshot, the update commits
    commit(_updater(t, ["a"], [1]))
    assert [r["a"] for r in _read(t)] == [0, -1, -2]


def test_an_update_racing_an_append_is_not_a_conflict(tmp_path):
    """A partial-column write (``with_write_type``) after the update's snapshot makes new rows,
    not the update's: no conflict."""
    t = _table(tmp_path)
    write_arrow(t, pa.table({"id": [1], "a": [10], "b": ["x"]}, schema=SCH))
    upd = _updater(t, ["a"], [0])
    wb = t.new_batch_write_builder()
    w = wb.new_write()
    w.with_write_type(["id", "a"])
    w.write_arrow(pa.table({"id": [2], "a": [20]}))
    wb.new_commit().commit(w.prepare_commit())
    t.new_batch_write_builder().new_commit().commit(upd)
    assert [(r["_ROW_ID"], r["a"]) for r in _read(t)] == [(0, 0), (1, 20)]


def test_racing_updaters_in_threads_never_lose_an_update(tmp_path):
    """Updaters in threads, each setting column ``a`` of its own row of one file group and
    retrying on a conflict: each update file holds the whole group's column as of the snapshot
    it read, so an undetected race would put the other rows' old values back. Every update
    survives: the read shows each thread's value in its row."""
    import threading

    t = _table(tmp_path)
    write_arrow(t, pa.table({"id": [1, 2, 3, 4], "a": [0] * 4, "b": ["x"] * 4}, schema=SCH))
    lock, committed, conflicts, errors = threading.Lock(), [], [], []
    barrier = threading.Barrier(4)

    def run(k):
        try:
            attempt(k)
        except Exception as e:  # noqa: BLE001 - reported by the assertion below
            errors.append(repr(e))

    def attempt(k):
        tt = CatalogFactory.create({"warehouse": str(tmp_path)}).get_table("db.t")
        for n in range(20):
            wb = tt.new_batch_write_builder()
            msgs = wb.new_update().with_update_type(["a"]).update_by_arrow_with_row_id(
                pa.table({"_ROW_ID": pa.array([k], pa.int64()), "a": [100 + k]}))
            if n == 0:
                barrier.wait()  # every thread has read the same snapshot
            try:
                wb.new_commit().commit(msgs)
            except CommitConflictError:
                with lock:
                    conflicts.append(k)
                continue
            with lock:
                committed.append(k)
            return

    threads = [threading.Thread(target=run, args=(k,)) for k in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert errors == []
    assert sorted(committed) == [0, 1, 2, 3], conflicts
    assert conflicts, "the first updates all read one snapshot: all but one must conflict"
    assert [r["a"] for r in _read(t)] == [100, 101, 102, 103]


def test_updates_are_not_committed_as_an_overwrite(tmp_path):
    t = _table(tmp_path)
    write_arrow(t, pa.table({"id": [1, 2], "a": [10, 20], "b": ["x", "y"]}, schema=SCH))
    msgs = _updater(t, ["a"], [0])
    before = t.latest_snapshot_id()
    with pytest.raises(InvalidArgumentError, match="cannot be committed as an overwrite"):
        t.new_batch_write_builder().overwrite().new_commit().commit(msgs)
    assert t.latest_snapshot_id() == before
    assert [(r["a"], r["b"]) for r in _read(t)] == [(10, "x"), (20, "y")]


def test_an_update_committed_twice_is_a_duplicate(tmp_path):
    from paimon_rs.exceptions import PaimonRsError

    t = _table(tmp_path)
    write_arrow(t, pa.table({"id": [1], "a": [10], "b": ["x"]}, schema=SCH))
    msgs = _updater(t, ["a"], [0])
    t.new_batch_write_builder().new_commit().commit(msgs)
    before = t.latest_snapshot_id()
    with pytest.raises(PaimonRsError, match="already"):
        t.new_batch_write_builder().new_commit().commit(msgs)
    assert t.latest_snapshot_id() == before
    assert [r["a"] for r in _read(t)] == [0]


def test_updates_after_an_alter_read_the_current_columns(tmp_path):
    """ALTER makes no snapshot: an update right after one reads the rows' current values with
    the current columns (pypaimon's ``copy_without_time_travel``), not the snapshot's schema: a
    column added since is filled by row id, and a dropped and re-added column stays null where
    not updated (the dropped values do not come back)."""
    from paimon_rs import AtomicType, SchemaChange

    c = CatalogFactory.create({"warehouse": str(tmp_path)})
    t = _table(tmp_path)
    write_arrow(t, pa.table({"id": [1, 2, 3], "a": [10, 20, 30], "b": ["x", "y", "z"]}, schema=SCH))
    c.alter_table("db.t", [SchemaChange.add_column("c", AtomicType("STRING"))], False)
    t = c.get_table("db.t")
    _update(t, pa.table({"_ROW_ID": pa.array([1], pa.int64()), "c": ["new"]}), ["c"])
    assert [(r["a"], r["c"]) for r in _read(t, COLS + ["c"])] == [(10, None), (20, "new"), (30, None)]
    c.alter_table("db.t", [SchemaChange.drop_column("a")], False)
    c.alter_table("db.t", [SchemaChange.add_column("a", AtomicType("BIGINT"))], False)
    t = c.get_table("db.t")
    _update(t, pa.table({"_ROW_ID": pa.array([1], pa.int64()), "a": [5]}), ["a"])
    assert [r["a"] for r in _read(t, ["_ROW_ID", "a"])] == [None, 5, None]
    # update_by_predicate reads the same way
    wb = t.new_batch_write_builder()
    pb = t.new_read_builder().new_predicate_builder()
    msgs = wb.new_update().update_by_predicate(pb.equal("id", 3), {"c": "p"})
    wb.new_commit().commit(msgs)
    assert [r["c"] for r in _read(t, ["_ROW_ID", "c"])] == [None, "new", "p"]


def test_copy_without_time_travel_keeps_the_current_schema(tmp_path):
    from paimon_rs import AtomicType, SchemaChange

    c = CatalogFactory.create({"warehouse": str(tmp_path)})
    t = _table(tmp_path)
    write_arrow(t, pa.table({"id": [1], "a": [10], "b": ["x"]}, schema=SCH))
    c.alter_table("db.t", [SchemaChange.add_column("c", AtomicType("STRING"))], False)
    t = c.get_table("db.t")
    travelled = t.copy({"scan.snapshot-id": "1"})
    assert "c" not in travelled.field_names
    kept = t.copy_without_time_travel({"scan.snapshot-id": "1"})
    assert "c" in kept.field_names
    rb = kept.new_read_builder()
    assert rb.new_read().to_arrow(rb.new_scan().plan().splits()).to_pylist() == [
        {"id": 1, "a": 10, "b": "x", "c": None}]


def test_groups_of_a_snapshot_id_reused_after_a_rollback(tmp_path):
    """The groups of the last snapshot asked for are kept (an update asks once per touched
    group), keyed by the snapshot's manifest lists: snapshot 2 committed again after a rollback
    is a new snapshot, and an update of its rows sees its groups."""
    t = _table(tmp_path)
    write_arrow(t, pa.table({"id": [1, 2], "a": [10, 20], "b": ["x", "y"]}, schema=SCH))
    write_arrow(t, pa.table({"id": [3], "a": [30], "b": ["z"]}, schema=SCH))
    assert t._core.row_id_groups(2) == [(0, 2), (2, 1)]
    t.rollback_to(1)
    write_arrow(t, pa.table({"id": [4, 5, 6], "a": [40, 50, 60], "b": ["u", "v", "w"]}, schema=SCH))
    assert t.latest_snapshot_id() == 2
    assert t._core.row_id_groups(2) == [(0, 2), (2, 3)]
    _update(t, pa.table({"_ROW_ID": pa.array([4], pa.int64()), "a": [-4]}), ["a"])
    assert [r["a"] for r in _read(t)] == [10, 20, 40, 50, -4]
