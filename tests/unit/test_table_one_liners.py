"""One-line reads and writes on a Table (issue 31): ``table.to_arrow / to_pandas / to_polars``
(filter, projection, snapshot_id, tag, limit), ``table.write(data, mode, overwrite_partition)``,
and ``snapshot_id=`` / ``tag=`` on ``new_read_builder``, checked against a dict model."""

from __future__ import annotations

import sys
from typing import Dict, Tuple

import pyarrow as pa
import pytest

from paimon_rs import InvalidArgumentError, Schema, SchemaMismatchError

from unit_helpers import PK_SCHEMA, read, write

Key = Tuple[str, int]


def rows(dt, ids, name, price=1.0):
    n = len(ids)
    return pa.table({"dt": [dt] * n, "id": ids, "name": [name] * n, "price": [float(price)] * n},
                    schema=PK_SCHEMA)


def as_model(t: pa.Table) -> Dict[Key, Tuple[str, float]]:
    return {(r["dt"], r["id"]): (r["name"], r["price"]) for r in t.to_pylist()}


@pytest.fixture
def append_table(catalog):
    catalog.create_table("db.a", Schema.from_pyarrow_schema(PK_SCHEMA, partition_keys=["dt"]), False)
    return catalog.get_table("db.a")


def test_write_then_to_arrow_with_filter_projection_limit(pk_table):
    model: Dict[Key, Tuple[str, float]] = {}
    sid = pk_table.write(rows("a", [1, 2, 3], "x", 1.5))
    assert sid == 1
    model.update({("a", i): ("x", 1.5) for i in (1, 2, 3)})
    assert pk_table.write(rows("b", [1, 4], "y")) == 2
    model.update({("b", i): ("y", 1.0) for i in (1, 4)})
    assert pk_table.write(rows("a", [2], "z")) == 3  # upsert by key
    model[("a", 2)] = ("z", 1.0)
    assert as_model(pk_table.to_arrow()) == model
    got = pk_table.to_arrow(filter="dt = 'a' AND id >= 2")
    assert as_model(got) == {k: v for k, v in model.items() if k[0] == "a" and k[1] >= 2}
    got = pk_table.to_arrow(filter=pk_table.new_read_builder().new_predicate_builder().equal("id", 1),
                            projection=["name", "id"])
    assert got.column_names == ["name", "id"]
    assert sorted(got.to_pylist(), key=str) == sorted(
        [{"name": v[0], "id": k[1]} for k, v in model.items() if k[1] == 1], key=str)
    assert pk_table.to_arrow(limit=2).num_rows == 2
    assert pk_table.to_arrow(limit=0).num_rows == 0


def test_to_arrow_snapshot_id_and_tag(pk_table):
    pk_table.write(rows("a", [1, 2], "v1"))
    pk_table.write(rows("a", [1], "v2"))
    pk_table.create_tag("first", snapshot_id=1)
    v1 = {("a", 1): ("v1", 1.0), ("a", 2): ("v1", 1.0)}
    v2 = {("a", 1): ("v2", 1.0), ("a", 2): ("v1", 1.0)}
    assert as_model(pk_table.to_arrow(snapshot_id=1)) == v1
    assert as_model(pk_table.to_arrow(snapshot_id=2)) == v2
    assert as_model(pk_table.to_arrow(tag="first")) == v1
    assert as_model(pk_table.to_arrow()) == v2
    # the keyword maps onto the scan.snapshot-id option: the same rows as the copy
    assert as_model(read(pk_table.copy({"scan.snapshot-id": "1"}))) == v1
    rb = pk_table.new_read_builder(snapshot_id=1)
    assert rb.table.options["scan.snapshot-id"] == "1"
    plan = rb.new_scan().plan()
    assert plan.snapshot_id == 1
    assert as_model(rb.new_read().to_arrow(plan.splits())) == v1
    assert pk_table.new_read_builder(tag="first").table.options["scan.tag-name"] == "first"


def test_missing_snapshot_or_tag_is_refused_at_once(pk_table):
    with pytest.raises(InvalidArgumentError, match="snapshot 1 of db.t does not exist .*no snapshot"):
        pk_table.new_read_builder(snapshot_id=1)
    pk_table.write(rows("a", [1], "v1"))
    pk_table.write(rows("a", [2], "v1"))
    with pytest.raises(InvalidArgumentError, match=r"snapshot 7 of db.t does not exist \(the table has snapshots 1..2"):
        pk_table.new_read_builder(snapshot_id=7)
    with pytest.raises(InvalidArgumentError, match="snapshot 0 of db.t does not exist"):
        pk_table.to_arrow(snapshot_id=0)
    with pytest.raises(InvalidArgumentError, match="snapshot_id must be an int"):
        pk_table.new_read_builder(snapshot_id="1")
    pk_table.create_tag("release")
    with pytest.raises(InvalidArgumentError, match="tag 'relase' of db.t doesn't exist; did you mean 'release'"):
        pk_table.new_read_builder(tag="relase")
    with pytest.raises(InvalidArgumentError, match="not both"):
        pk_table.new_read_builder(snapshot_id=1, tag="release")
    with pytest.raises(InvalidArgumentError, match="already travels in time"):
        pk_table.copy({"scan.tag-name": "release"}).new_read_builder(snapshot_id=1)


def test_write_overwrite_modes(append_table):
    t = append_table
    t.write(rows("a", [1, 2], "x"))
    t.write(rows("b", [3], "y"))
    # a static partition
    t.write(rows("a", [9], "z"), mode="overwrite", overwrite_partition={"dt": "a"})
    assert as_model(t.to_arrow()) == {("a", 9): ("z", 1.0), ("b", 3): ("y", 1.0)}
    # None: the partitions in the data (dynamic-partition-overwrite, Paimon's default)
    t.write(rows("b", [4], "w"), mode="overwrite")
    assert as_model(t.to_arrow()) == {("a", 9): ("z", 1.0), ("b", 4): ("w", 1.0)}
    # {}: the whole table
    sid = t.write(rows("c", [5], "v"), mode="overwrite", overwrite_partition={})
    assert as_model(t.to_arrow()) == {("c", 5): ("v", 1.0)}
    assert t.snapshot_manager().get_latest_snapshot().commit_kind == "OVERWRITE"
    assert sid == t.latest_snapshot_id()


def test_write_refusals(append_table):
    t = append_table
    with pytest.raises(InvalidArgumentError, match="mode must be 'append' or 'overwrite', got 'upsert'"):
        t.write(rows("a", [1], "x"), mode="upsert")
    with pytest.raises(InvalidArgumentError, match="needs mode='overwrite'"):
        t.write(rows("a", [1], "x"), overwrite_partition={"dt": "a"})
    with pytest.raises(InvalidArgumentError, match="'id' is not a partition key"):
        t.write(rows("a", [1], "x"), mode="overwrite", overwrite_partition={"id": 1})
    with pytest.raises(TypeError, match=r"got list \(pa.Table.from_pylist\(rows\)"):
        t.write([{"dt": "a", "id": 1, "name": "x", "price": 1.0}])
    with pytest.raises(SchemaMismatchError):
        t.write(pa.table({"dt": ["a"], "nope": [1]}))
    assert t.latest_snapshot_id() is None  # nothing committed by any of them


def test_write_aborts_the_files_of_a_failed_commit(append_table, monkeypatch):
    import os

    from paimon_rs import table as table_mod

    def failing_commit(self, messages, commit_identifier=None):
        raise RuntimeError("commit failed")

    monkeypatch.setattr(table_mod.BatchTableCommit, "commit", failing_commit)
    with pytest.raises(RuntimeError, match="commit failed"):
        append_table.write(rows("a", [1, 2], "x"))
    monkeypatch.undo()
    assert append_table.latest_snapshot_id() is None
    if "://" not in append_table.table_path:
        files = [f for _, _, fs in os.walk(append_table.table_path) for f in fs if f.endswith(".parquet")]
        assert files == []  # the aborted messages' data files are gone


def test_write_takes_pandas_polars_and_streams(append_table):
    pd = pytest.importorskip("pandas")
    t = append_table
    t.write(pd.DataFrame({"dt": ["a"], "id": [1], "name": ["p"], "price": [2.0]}))
    t.write(rows("b", [2], "r").to_reader())
    t.write(rows("b", [3], "s").to_batches()[0])
    expected = {("a", 1): ("p", 2.0), ("b", 2): ("r", 1.0), ("b", 3): ("s", 1.0)}
    try:
        import polars as pl
    except ImportError:
        pl = None
    if pl is not None:
        t.write(pl.from_arrow(rows("c", [4], "q")))
        expected[("c", 4)] = ("q", 1.0)
    assert as_model(t.to_arrow()) == expected
    df = t.to_pandas(filter="id = 1")
    assert df.to_dict("records") == [{"dt": "a", "id": 1, "name": "p", "price": 2.0}]
    if pl is not None:
        assert t.to_polars(filter="id > 1", projection=["id"]).sort("id")["id"].to_list() == [2, 3, 4]


def test_to_pandas_and_to_polars_name_the_missing_package(pk_table, monkeypatch):
    write(pk_table, rows("a", [1], "x"))
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(ImportError, match="pip install pandas"):
        pk_table.to_pandas()
    rb = pk_table.new_read_builder()
    with pytest.raises(ImportError, match="pip install pandas"):
        rb.new_read().to_pandas(rb.new_scan().plan().splits())
    monkeypatch.setitem(sys.modules, "polars", None)
    with pytest.raises(ImportError, match="pip install polars"):
        pk_table.to_polars()


def test_bad_limit_and_projection_are_refused(pk_table):
    with pytest.raises(InvalidArgumentError, match="limit must be an int >= 0"):
        pk_table.to_arrow(limit=-1)
    with pytest.raises(SchemaMismatchError, match="projected column 'nmae' is not in the table; did you mean 'name'"):
        pk_table.to_arrow(projection=["nmae"])
    with pytest.raises(SchemaMismatchError, match="did you mean 'name'"):
        pk_table.new_read_builder().with_projection(["nmae"])  # at the call
    with pytest.raises(TypeError, match="list of column names"):
        pk_table.new_read_builder().with_projection("name")
