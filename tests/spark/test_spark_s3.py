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
