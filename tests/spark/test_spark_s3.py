"""Spark on an S3 warehouse (issue 14): executors (separate Python workers) unpickle the table
and open the store themselves from the options the table carries; moto's S3 server stands in."""

from __future__ import annotations

import sys
from pathlib import Path

import pyarrow as pa
import pytest

import paimon_rs.spark as ps
from paimon_rs import CatalogFactory, Schema

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from s3_server import MotoServer  # noqa: E402

SCHEMA = pa.schema([pa.field("dt", pa.string(), nullable=False), pa.field("id", pa.int64(), nullable=False),
                    pa.field("v", pa.string())])


@pytest.fixture(scope="module")
def moto():
    pytest.importorskip("moto")
    server = MotoServer()
    yield server
    server.stop()


def test_spark_writes_and_reads_an_s3_table(spark, moto):
    cat = CatalogFactory.create({"warehouse": f"s3://{moto.new_bucket()}/wh", **moto.options()})
    cat.create_database("db", True)
    cat.create_table("db.t", Schema.from_pyarrow_schema(SCHEMA, partition_keys=["dt"], primary_keys=["dt", "id"],
                                                        options={"bucket": "2"}), False)
    t = cat.get_table("db.t")
    data = pa.table({"dt": ["a", "b"] * 50, "id": list(range(100)), "v": [str(i) for i in range(100)]},
                    schema=SCHEMA)
    assert ps.write(spark.createDataFrame(data), t) == 1
    assert ps.write(spark.createDataFrame(data.slice(0, 10).set_column(2, "v", pa.array(["x"] * 10))), t) == 2
    rows = sorted((r["id"], r["v"]) for r in ps.read(spark, t).collect())
    assert len(rows) == 100
    assert rows[:2] == [(0, "x"), (1, "x")] and rows[50] == (50, "50")


def _uncommitted(t, task_prefix: str, data: pa.Table) -> list:
    """Files a task attempt named ``task_prefix`` writes into ``t`` without committing them."""
    from paimon_rs.spark.commit import _task_options

    w = t.copy(_task_options(t, task_prefix)).new_batch_write_builder().new_write()
    w.write_arrow(data)
    msgs = w.prepare_commit()
    w.close()
    return [f for m in msgs for f in m.file_names]


def _data_file_names(t) -> set:
    """Every data file name under the table's bucket directories, listed through its store."""
    from paimon_rs.spark.commit import _walk

    return {f for d, _, fs in _walk(t.table_path, True) if "/bucket-" in d for f in fs}


def test_the_sweep_and_the_ended_marker_work_on_an_object_store(moto):
    """The driver's sweep of a write's uncommitted files and a Data Source write's ended marker
    go through the table's store on ``s3://`` as on a local disk: uncommitted files of the
    write are deleted (others' and committed ones kept), a task attempt that finds the marker
    deletes its own files. Before, both were skipped on object stores (the sweep walked local
    paths only) and every file of a failed or losing attempt there stayed as an orphan."""
    from paimon_rs.spark.commit import _ended_marker, _sweep, mark_ended, withdraw_if_ended

    cat = CatalogFactory.create({"warehouse": f"s3://{moto.new_bucket()}/wh", **moto.options()})
    cat.create_database("db", True)
    cat.create_table("db.sw", Schema.from_pyarrow_schema(SCHEMA, partition_keys=["dt"], primary_keys=["dt", "id"],
                                                         options={"bucket": "2"}), False)
    t = cat.get_table("db.sw")
    data = pa.table({"dt": ["a", "b"] * 20, "id": list(range(40)), "v": [str(i) for i in range(40)]}, schema=SCHEMA)
    wb = t.new_batch_write_builder()
    w = wb.new_write()
    w.write_arrow(data)
    wb.new_commit().commit(w.prepare_commit())
    committed = _data_file_names(t)
    assert committed

    # the sweep: a losing attempt's files go, the taken attempt's and another write's stay
    lost = _uncommitted(t, "data-w1-p0-a0-", data)
    taken = _uncommitted(t, "data-w1-p0-a1-", data)
    other = _uncommitted(t, "data-w2-p0-a0-", data)
    assert set(lost) | set(taken) | set(other) <= _data_file_names(t)
    deleted = _sweep(t, "data-w1-", set(taken))
    assert {p.rsplit("/", 1)[-1] for p in deleted} == set(lost)
    assert _data_file_names(t) == committed | set(taken) | set(other)

    # the marker: absent, an attempt keeps its files; written, a late attempt deletes its own
    late = _uncommitted(t, "data-w3-p0-a1-", data)
    assert not withdraw_if_ended(t, "data-w3-", "data-w3-p0-a1-")
    assert set(late) <= _data_file_names(t)
    mark_ended(t, "data-w3-")
    marker = _ended_marker(t, "data-w3-")
    assert marker.startswith("s3://") and marker.endswith("/index/write-w3-ended")
    assert t.file_io.exists(marker)
    assert withdraw_if_ended(t, "data-w3-", "data-w3-p0-a1-")
    assert not set(late) & _data_file_names(t)
    assert _data_file_names(t) == committed | set(taken) | set(other)
    rows = t.new_read_builder().new_read().to_arrow(t.new_read_builder().new_scan().plan().splits())
    assert rows.num_rows == 40
