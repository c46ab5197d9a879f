"""``table.delete(filter)`` and ``table.merge(source, on=...)`` (issue 31) on primary-key and
append tables: each one snapshot, read back and compared to a dict model."""

from __future__ import annotations

import random
from typing import Any, Dict, Tuple

import pyarrow as pa
import pytest

from paimon_rs import InvalidArgumentError, Schema, SchemaMismatchError, UnsupportedError
from paimon_rs.mutations import DeleteResult, MergeResult

from unit_helpers import PK_SCHEMA

Key = Tuple[str, int]


def rows(dt, ids, names, price=1.0):
    n = len(ids)
    names = names if isinstance(names, list) else [names] * n
    return pa.table({"dt": [dt] * n, "id": ids, "name": names, "price": [float(price)] * n},
                    schema=PK_SCHEMA)


def model_of(t: pa.Table) -> Dict[Key, Tuple[Any, float]]:
    return {(r["dt"], r["id"]): (r["name"], r["price"]) for r in t.to_pylist()}


def snapshot_count(table) -> int:
    return len(table.snapshot_manager().list_snapshots())


@pytest.fixture
def append_table(catalog):
    catalog.create_table("db.a", Schema.from_pyarrow_schema(PK_SCHEMA, partition_keys=["dt"]), False)
    return catalog.get_table("db.a")


@pytest.fixture
def flat_table(catalog):
    catalog.create_table("db.flat", Schema.from_pyarrow_schema(PK_SCHEMA), False)
    return catalog.get_table("db.flat")


# --- delete ----------------------------------------------------------------------------------

def test_pk_delete_writes_deletes_in_one_snapshot(pk_table):
    pk_table.write(rows("a", [1, 2, 3, 4], ["x", "y", "x", None]))
    pk_table.write(rows("b", [1, 2], "x"))
    model = model_of(pk_table.to_arrow())
    r = pk_table.delete("name = 'x' AND id <= 2")
    assert r == DeleteResult(3, 3)
    for k in [("a", 1), ("b", 1), ("b", 2)]:
        del model[k]
    assert model_of(pk_table.to_arrow()) == model
    assert pk_table.snapshot_manager().get_latest_snapshot().commit_kind == "APPEND"
    pb = pk_table.new_read_builder().new_predicate_builder()
    assert pk_table.delete(pb.is_null("name")).num_deleted_rows == 1
    del model[("a", 4)]
    assert model_of(pk_table.to_arrow()) == model
    # nothing matches: nothing is committed
    assert pk_table.delete("id > 100") == DeleteResult(0, None)
    assert snapshot_count(pk_table) == 4
    # older snapshots still hold the deleted rows
    assert len(pk_table.to_arrow(snapshot_id=2)) == 6
    assert model_of(pk_table.to_arrow(snapshot_id=3)) == {**model, ("a", 4): (None, 1.0)}


def test_delete_refusals(pk_table, catalog):
    with pytest.raises(InvalidArgumentError, match="a filter is required"):
        pk_table.delete(None)
    with pytest.raises(InvalidArgumentError, match="did you mean 'name'"):
        pk_table.delete("nme = 'x'")
    catalog.create_table("db.pu", Schema.from_pyarrow_schema(
        PK_SCHEMA, primary_keys=["dt", "id"], options={"bucket": "1", "merge-engine": "partial-update"}), False)
    with pytest.raises(UnsupportedError, match="'partial-update' merge engine"):
        catalog.get_table("db.pu").delete("id = 1")
    assert pk_table.delete("id = 1") == DeleteResult(0, None)  # an empty table
    pk_table.write(rows("a", [1], "x"))
    with pytest.raises(InvalidArgumentError, match="this handle reads a past state"):
        pk_table.copy({"scan.snapshot-id": "1"}).delete("id = 1")
    with pytest.raises(InvalidArgumentError, match="this handle reads a past state"):
        pk_table.copy({"scan.snapshot-id": "1"}).merge(rows("a", [1], "y"), on=["dt", "id"])


@pytest.mark.parametrize("filter_, path", [
    ("dt = 'a' AND id = 1", "static: one partition keeps rows"),
    ("dt = 'a'", "static: one partition emptied"),
    ("id = 1", "dynamic: every partition keeps rows"),
    ("id = 1 OR dt = 'b'", "whole table: one of several partitions emptied"),
])
def test_append_delete_rewrites_the_partitions(append_table, filter_, path):
    t = append_table
    t.write(rows("a", [1, 2, 1], ["x", "y", "z"]))
    t.write(rows("b", [1, 3], "x"))
    t.write(rows("c", [5, 6], "w"))
    before = t.to_arrow().to_pylist()
    from paimon_rs.filter_parser import parse_filter
    from paimon_rs.mutations import predicate_mask
    all_rows = t.to_arrow()
    mask = predicate_mask(parse_filter(filter_, t.arrow_schema), all_rows).to_pylist()
    expected = sorted((r for r, m in zip(before, mask) if not m), key=str)
    r = t.delete(filter_)
    assert r.num_deleted_rows == len(before) - len(expected), path
    assert sorted(t.to_arrow().to_pylist(), key=str) == expected, path
    assert snapshot_count(t) == 4
    assert t.snapshot_manager().get_latest_snapshot().commit_kind == "OVERWRITE"
    # the untouched partition 'c' was not rewritten unless the whole table had to be
    if "whole" not in path:
        assert sorted(t.to_arrow("dt = 'c'").column("id").to_pylist()) == [5, 6]


def test_unpartitioned_append_delete(flat_table):
    flat_table.write(rows("a", [1, 2, 3], ["x", None, "z"]))
    assert flat_table.delete("name IS NULL OR id = 3").num_deleted_rows == 2
    assert flat_table.to_arrow().to_pylist() == [{"dt": "a", "id": 1, "name": "x", "price": 1.0}]
    assert flat_table.delete("id > 0").num_deleted_rows == 1
    assert flat_table.to_arrow().num_rows == 0


# --- merge -----------------------------------------------------------------------------------

def test_pk_merge_upsert_and_delete_in_one_snapshot(pk_table):
    pk_table.write(rows("a", [1, 2, 3], ["x", "y", "z"]))
    source = pa.table({"dt": ["a", "a", "a", "b"], "id": [1, 2, 9, 1], "name": ["X", "Y", "N", "M"],
                       "price": [5.0, 6.0, 7.0, 8.0], "deleted": [False, True, False, False]})
    r = (pk_table.merge(source, on=["dt", "id"])
         .when_matched_delete("source.deleted = TRUE")
         .when_matched_update(set={"name": "source.name", "price": 0})
         .when_not_matched_insert(values={"dt": "source.dt", "id": "source.id", "name": "'new'",
                                          "price": "source.price"}, predicate="source.price > 7.5")
         .execute())
    assert r == MergeResult(num_inserted_rows=1, num_updated_rows=1, num_deleted_rows=1, snapshot_id=2)
    assert model_of(pk_table.to_arrow()) == {("a", 1): ("X", 0.0), ("a", 3): ("z", 1.0),
                                             ("b", 1): ("new", 8.0)}
    assert snapshot_count(pk_table) == 2


def test_pk_merge_update_all_insert_all_from_pandas_and_polars(pk_table):
    pd = pytest.importorskip("pandas")
    pk_table.write(rows("a", [1, 2], "x"))
    df = pd.DataFrame({"dt": ["a", "a"], "id": [2, 3], "name": ["u", "i"], "price": [2.0, 3.0]})
    r = pk_table.merge(df, on=["dt", "id"]).when_matched_update_all().when_not_matched_insert_all().execute()
    assert (r.num_updated_rows, r.num_inserted_rows, r.num_deleted_rows) == (1, 1, 0)
    assert model_of(pk_table.to_arrow()) == {("a", 1): ("x", 1.0), ("a", 2): ("u", 2.0), ("a", 3): ("i", 3.0)}
    try:
        import polars as pl
    except ImportError:
        return
    src = pl.DataFrame({"dt": ["a"], "id": [1], "name": ["p"], "price": [9.0]})
    pk_table.merge(src, on=["dt", "id"]).when_matched_update_all().execute()
    assert model_of(pk_table.to_arrow())[("a", 1)] == ("p", 9.0)


def test_merge_refusals_at_builder_time(pk_table):
    pk_table.write(rows("a", [1], "x"))
    src = rows("a", [1], "y")
    with pytest.raises(InvalidArgumentError, match=r"on=\['id'\] must be the primary key \['dt', 'id'\]"):
        pk_table.merge(src, on=["id"])
    with pytest.raises(InvalidArgumentError, match="unknown 'on' column .*'idd'"):
        pk_table.merge(src, on=["dt", "idd"])
    m = pk_table.merge(src, on=["dt", "id"])
    with pytest.raises(InvalidArgumentError, match="unknown table column 'nmae'; did you mean 'name'"):
        m.when_matched_update(set={"nmae": "source.name"})
    with pytest.raises(InvalidArgumentError, match="unknown column 'source.nme'; did you mean 'source.name'"):
        m.when_matched_update(set={"name": "source.nme"})
    with pytest.raises(InvalidArgumentError, match="a value is source.<col> or target.<col>, a SQL literal"):
        m.when_matched_update(set={"name": "hello world"})
    with pytest.raises(InvalidArgumentError, match="cannot set key or partition columns \\['id'\\]"):
        m.when_matched_update(set={"id": 5})
    with pytest.raises(InvalidArgumentError, match="the string 'abc' for column 'price' of type double"):
        m.when_matched_update(set={"price": "'abc'"})
    with pytest.raises(InvalidArgumentError, match="'abc' does not fit column 'price'"):
        m.when_matched_update(set={"price": b"abc"})
    with pytest.raises(InvalidArgumentError, match="unknown column 'abc'"):
        m.when_matched_update(set={"price": "abc"})
    with pytest.raises(InvalidArgumentError, match="unknown column 'target.nam'"):
        m.when_matched_delete("target.nam = 'x'")
    with pytest.raises(InvalidArgumentError, match="no target row"):
        m.when_not_matched_insert_all("target.name = 'x'")
    with pytest.raises(InvalidArgumentError, match="must set the 'on' columns \\['id'\\]"):
        m.when_not_matched_insert(values={"dt": "source.dt"})
    m.when_matched_delete()
    with pytest.raises(InvalidArgumentError, match="after an unconditional one"):
        m.when_matched_update_all()
    with pytest.raises(InvalidArgumentError, match="more than once"):
        pk_table.merge(pa.concat_tables([src, src]), on=["dt", "id"])
    with pytest.raises(SchemaMismatchError, match="lacks \\['price'\\]"):
        pk_table.merge(src.drop_columns(["price"]), on=["dt", "id"]).when_not_matched_insert_all()
    with pytest.raises(InvalidArgumentError, match="no when_matched"):
        pk_table.merge(src, on=["dt", "id"]).execute()
    assert snapshot_count(pk_table) == 1


def test_pk_merge_matches_a_dict_model(pk_table):
    """Random sources merged with every clause, against a dict model."""
    rnd = random.Random(7)
    model: Dict[Key, Tuple[Any, float]] = {}
    for step in range(8):
        keys = rnd.sample([(dt, i) for dt in "ab" for i in range(12)], rnd.randint(1, 10))
        src = pa.table({"dt": [k[0] for k in keys], "id": [k[1] for k in keys],
                        "name": [rnd.choice(["p", "q", None]) for _ in keys],
                        "price": [float(rnd.randint(0, 9)) for _ in keys]}, schema=PK_SCHEMA)
        r = (pk_table.merge(src, on=["dt", "id"])
             .when_matched_delete("source.price < 2")
             .when_matched_update({"name": "source.name"}, "target.price >= 5")
             .when_matched_update_all("source.name IS NOT NULL")
             .when_not_matched_insert_all("source.price > 3")
             .execute())
        counts = [0, 0, 0]
        for s in src.to_pylist():
            k = (s["dt"], s["id"])
            if k in model:
                name, price = model[k]
                if s["price"] < 2:
                    del model[k]
                    counts[2] += 1
                elif price >= 5:
                    model[k] = (s["name"], price)
                    counts[1] += 1
                elif s["name"] is not None:
                    model[k] = (s["name"], s["price"])
                    counts[1] += 1
            elif s["price"] > 3:
                model[k] = (s["name"], s["price"])
                counts[0] += 1
        assert [r.num_inserted_rows, r.num_updated_rows, r.num_deleted_rows] == counts, step
        assert model_of(pk_table.to_arrow()) == model, step


def test_append_merge_rewrites_changed_partitions(append_table):
    t = append_table
    t.write(rows("a", [1, 2, 2], ["x", "y", "z"]))
    t.write(rows("b", [3], "w"))
    t.write(rows("c", [4], "v"))
    source = pa.table({"dt": ["a", "b", "d"], "id": [2, 3, 7], "name": ["N", "-", "I"],
                       "price": [5.0, 0.0, 1.0]})
    r = (t.merge(source, on=["dt", "id"])
         .when_matched_delete("source.name = '-'")
         .when_matched_update({"price": "source.price"}, "target.name = 'y'")
         .when_not_matched_insert_all()
         .execute())
    assert (r.num_inserted_rows, r.num_updated_rows, r.num_deleted_rows) == (1, 1, 1)
    got = sorted(t.to_arrow().to_pylist(), key=lambda d: (d["dt"], d["id"], d["name"]))
    assert got == [
        {"dt": "a", "id": 1, "name": "x", "price": 1.0},
        {"dt": "a", "id": 2, "name": "y", "price": 5.0},
        {"dt": "a", "id": 2, "name": "z", "price": 1.0},  # matched, but no clause took it
        {"dt": "c", "id": 4, "name": "v", "price": 1.0},
        {"dt": "d", "id": 7, "name": "I", "price": 1.0},
    ]
    assert snapshot_count(t) == 4


def test_append_merge_inserts_only_appends(append_table):
    append_table.write(rows("a", [1], "x"))
    r = append_table.merge(rows("b", [1], "y"), on=["dt", "id"]).when_not_matched_insert_all().execute()
    assert r.num_inserted_rows == 1
    assert append_table.snapshot_manager().get_latest_snapshot().commit_kind == "APPEND"
    assert model_of(append_table.to_arrow()) == {("a", 1): ("x", 1.0), ("b", 1): ("y", 1.0)}


def test_append_merge_update_all_can_move_a_row_to_another_partition(append_table):
    t = append_table
    t.write(rows("a", [1, 2], ["x", "y"]))
    t.write(rows("c", [3], "z"))
    source = pa.table({"dt": ["b"], "id": [1], "name": ["moved"], "price": [4.0]})
    r = t.merge(source, on=["id"]).when_matched_update_all().execute()
    assert (r.num_inserted_rows, r.num_updated_rows, r.num_deleted_rows) == (0, 1, 0)
    assert model_of(t.to_arrow()) == {("b", 1): ("moved", 4.0), ("a", 2): ("y", 1.0), ("c", 3): ("z", 1.0)}


def test_a_commit_landing_while_delete_reads_makes_it_read_again(pk_table, monkeypatch):
    """Key 1 is updated to 'y' by another writer after the delete read it as 'x': the delete
    must not remove the new row (it would, written from the stale read)."""
    pk_table.write(rows("a", [1, 2], "x"))
    from paimon_rs.table import Table
    real = Table.to_arrow
    calls = []

    def racing_to_arrow(self, *args, **kwargs):
        out = real(self, *args, **kwargs)
        if not calls:
            pk_table.write(rows("a", [1], "y"))  # lands after the read
        calls.append(1)
        return out

    monkeypatch.setattr(Table, "to_arrow", racing_to_arrow)
    r = pk_table.delete("name = 'x'")
    monkeypatch.undo()
    assert len(calls) == 2  # read again
    assert r == DeleteResult(1, 3)
    assert model_of(pk_table.to_arrow()) == {("a", 1): ("y", 1.0)}


def test_a_table_that_keeps_changing_raises_commit_conflict(append_table, monkeypatch):
    from paimon_rs import CommitConflictError
    from paimon_rs.table import Table
    append_table.write(rows("a", [1, 2], "x"))
    real = Table.to_arrow

    def racing_to_arrow(self, *args, **kwargs):
        out = real(self, *args, **kwargs)
        append_table.write(rows("b", [9], "w"))
        return out

    monkeypatch.setattr(Table, "to_arrow", racing_to_arrow)
    with pytest.raises(CommitConflictError, match="changed the table while it read, 3 times; nothing was committed"):
        append_table.delete("id = 1")
    monkeypatch.undo()
    # nothing of the delete landed, and no file of its attempts was left behind
    assert sorted(append_table.to_arrow("dt = 'a'").column("id").to_pylist()) == [1, 2]


@pytest.mark.parametrize("partitioned", [True, False])
def test_append_deletes_and_merges_match_a_model(catalog, partitioned):
    """Random appends, deletes (each overwrite path) and merges on an append table, against a
    list-of-rows model (an append table keeps duplicates)."""
    name = "db.m" + ("p" if partitioned else "u")
    catalog.create_table(name, Schema.from_pyarrow_schema(
        PK_SCHEMA, partition_keys=["dt"] if partitioned else []), False)
    t = catalog.get_table(name)
    rnd = random.Random(11 if partitioned else 12)
    model: list = []
    filters = [
        ("id < {k}", lambda r, k, p: r["id"] < k),
        ("dt = '{p}'", lambda r, k, p: r["dt"] == p),
        ("dt = '{p}' AND id >= {k}", lambda r, k, p: r["dt"] == p and r["id"] >= k),
        ("name IS NULL OR id = {k}", lambda r, k, p: r["name"] is None or r["id"] == k),
        ("NOT (dt IN ('{p}', 'c')) AND price BETWEEN 1 AND {k}",
         lambda r, k, p: r["dt"] not in (p, "c") and 1 <= r["price"] <= k),
    ]
    for step in range(30):
        action = rnd.choice(["write", "write", "delete", "merge"])
        if action == "write" or not model:
            new = [{"dt": rnd.choice("abc"), "id": rnd.randint(0, 9), "name": rnd.choice(["x", "y", None]),
                    "price": float(rnd.randint(0, 5))} for _ in range(rnd.randint(1, 6))]
            t.write(pa.Table.from_pylist(new, schema=PK_SCHEMA))
            model += new
        elif action == "delete":
            text, fn = rnd.choice(filters)
            k, p = rnd.randint(0, 9), rnd.choice("abc")
            r = t.delete(text.format(k=k, p=p))
            kept = [row for row in model if not fn(row, k, p)]
            assert r.num_deleted_rows == len(model) - len(kept), (step, text)
            model = kept
        else:
            keys = rnd.sample(range(12), rnd.randint(1, 4))
            src = pa.table({"id": keys, "name": [rnd.choice(["m", None]) for _ in keys],
                            "price": [float(rnd.randint(0, 5)) for _ in keys],
                            "dt": [rnd.choice("abc") for _ in keys]}).select(PK_SCHEMA.names).cast(PK_SCHEMA)
            (t.merge(src, on=["id"])
             .when_matched_delete("source.price < 1")
             .when_matched_update({"name": "source.name"}, "target.price >= 3")
             .when_not_matched_insert_all("source.price > 2")
             .execute())
            by_id = {s["id"]: s for s in src.to_pylist()}
            new_model = []
            for row in model:
                s = by_id.get(row["id"])
                if s is None:
                    new_model.append(row)
                elif s["price"] < 1:
                    continue
                elif row["price"] >= 3:
                    new_model.append({**row, "name": s["name"]})
                else:
                    new_model.append(row)
            present = {row["id"] for row in model}
            new_model += [s for s in src.to_pylist() if s["id"] not in present and s["price"] > 2]
            model = new_model
        got = sorted(t.to_arrow().to_pylist(), key=lambda d: (d["dt"], d["id"], str(d["name"]), d["price"]))
        want = sorted(model, key=lambda d: (d["dt"], d["id"], str(d["name"]), d["price"]))
        assert got == want, (step, action)


def test_a_commit_conflict_is_retried_from_the_read(pk_table, monkeypatch):
    from paimon_rs import CommitConflictError
    from paimon_rs.table import BatchTableCommit
    pk_table.write(rows("a", [1, 2], "x"))
    real = BatchTableCommit.commit
    failures = []

    def conflicting(self, messages, commit_identifier=None):
        if not failures:
            failures.append(1)
            raise CommitConflictError("another writer wrote the same keys")
        return real(self, messages, commit_identifier)

    monkeypatch.setattr(BatchTableCommit, "commit", conflicting)
    r = pk_table.merge(rows("a", [2, 3], "m"), on=["dt", "id"]).when_matched_update_all() \
        .when_not_matched_insert_all().execute()
    monkeypatch.undo()
    assert failures == [1]
    assert (r.num_inserted_rows, r.num_updated_rows, r.snapshot_id) == (1, 1, 2)
    assert model_of(pk_table.to_arrow()) == {("a", 1): ("x", 1.0), ("a", 2): ("m", 1.0), ("a", 3): ("m", 1.0)}


def test_merge_with_nested_columns(catalog):
    """Arrow's join takes no list or map as a non-key column: only keys go through it."""
    schema = pa.schema([("id", pa.int64()), ("tags", pa.list_(pa.string())),
                        ("attrs", pa.map_(pa.string(), pa.int64()))])
    catalog.create_table("db.n", Schema.from_pyarrow_schema(schema, primary_keys=["id"],
                                                            options={"bucket": "1"}), False)
    t = catalog.get_table("db.n")
    t.write(pa.table({"id": [1, 2], "tags": [["a"], ["b"]], "attrs": [[("x", 1)], []]}, schema=schema))
    src = pa.table({"id": [2, 3], "tags": [["B", "b"], None], "attrs": [[("y", 2)], [("z", 3)]]}, schema=schema)
    r = t.merge(src, on=["id"]).when_matched_update_all().when_not_matched_insert_all().execute()
    assert (r.num_updated_rows, r.num_inserted_rows) == (1, 1)
    got = sorted(t.to_arrow().to_pylist(), key=lambda d: d["id"])
    assert got == [{"id": 1, "tags": ["a"], "attrs": [("x", 1)]}, {"id": 2, "tags": ["B", "b"], "attrs": [("y", 2)]},
                   {"id": 3, "tags": None, "attrs": [("z", 3)]}]
    assert t.delete("id = 3").num_deleted_rows == 1
    assert sorted(t.to_arrow().column("id").to_pylist()) == [1, 2]
