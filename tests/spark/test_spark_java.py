"""Java Paimon reads what Spark wrote through paimon_rs (its own JVM, tests/compat/java_env.py,
next to Spark's: two JVM processes, nothing shared)."""

import sys
from pathlib import Path

import pyarrow as pa
import pytest

import paimon_rs.spark as ps
from paimon_rs import CatalogFactory

from spark_helpers import create, to_spark

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "compat"))

import java_env  # noqa: E402

pytestmark = pytest.mark.java


@pytest.fixture(scope="module")
def java(tmp_path_factory):
    jvm = java_env.JavaPaimon.start("1.0", tmp_path_factory.mktemp("jvm-1.0"))
    yield jvm
    jvm.close()


def test_java_reads_what_spark_wrote(spark, java, tmp_path):
    wh = tmp_path / "wh"
    catalog = CatalogFactory.create({"warehouse": str(wh)})
    schema = pa.schema([pa.field("dt", pa.string(), nullable=False), pa.field("id", pa.int64(), nullable=False),
                        pa.field("v", pa.string()), pa.field("amount", pa.decimal128(10, 2)),
                        pa.field("op", pa.string())])
    t = create(catalog, "db.j", schema, ["dt"], ["dt", "id"], bucket="3", **{"rowkind.field": "op"})
    import decimal

    def rows(ids, op="+I", v="a"):
        ids = list(ids)
        return pa.table({"dt": ["x" if i % 2 else "y" for i in ids], "id": ids, "v": [f"{v}{i}" for i in ids],
                         "amount": [decimal.Decimal(i).scaleb(-2) for i in ids], "op": [op] * len(ids)},
                        schema=schema)

    ps.write(to_spark(spark, rows(range(300))), t)
    ps.write(to_spark(spark, pa.concat_tables([rows(range(10), v="b"), rows(range(10, 20), op="-D")])), t)
    got = java.call("read", warehouse=str(wh), table="db.j")["rows"]
    want = {i: (f"b{i}" if i < 10 else f"a{i}") for i in range(300) if not 10 <= i < 20}
    by_id = {r[1]: r[2] for r in got}
    assert by_id == want
