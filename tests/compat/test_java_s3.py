"""Java Paimon and paimon_rs on one S3 warehouse (issue 14): moto's S3 server, Java Paimon 1.0
through Hadoop's S3A (JVM "1.0-s3", java_env.py: the bundle has no S3 support of its own, so
Hadoop 3 from pyspark and hadoop-aws from the sagemaker_pyspark sdist go before it). Each engine
reads what the other wrote, on the same ``s3://`` URI."""

from __future__ import annotations

from typing import Any, Dict, List

import pyarrow as pa
import pytest

from paimon_rs import CatalogFactory, Schema

import java_env
from s3_server import ACCESS_KEY, SECRET_KEY, MotoServer

pytestmark = pytest.mark.java

SCHEMA = pa.schema([pa.field("dt", pa.string(), nullable=False), pa.field("id", pa.int32(), nullable=False),
                    pa.field("v", pa.string())])
FIELDS = [{"name": "dt", "type": "STRING NOT NULL"}, {"name": "id", "type": "INT NOT NULL"},
          {"name": "v", "type": "STRING"}]


@pytest.fixture(scope="module")
def java_s3(tmp_path_factory):
    """One JVM running Java Paimon 1.0 with S3A for this module."""
    jvm = java_env.JavaPaimon.start("1.0-s3", tmp_path_factory.mktemp("jvm-1.0-s3"))
    yield jvm
    jvm.close()


def java_opts(moto: MotoServer) -> Dict[str, str]:
    return java_env.s3_catalog_options(moto.endpoint, ACCESS_KEY, SECRET_KEY)


def ours(moto: MotoServer, wh: str) -> Any:
    c = CatalogFactory.create({"warehouse": wh, **moto.options()})
    c.create_database("db", True)
    return c


def ours_write(table: Any, rows: List[list]) -> None:
    wb = table.new_batch_write_builder()
    w, c = wb.new_write(), wb.new_commit()
    w.write_arrow(pa.table({n: [r[i] for r in rows] for i, n in enumerate(SCHEMA.names)}, schema=SCHEMA))
    c.commit(w.prepare_commit())
    w.close()
    c.close()


def ours_rows(table: Any) -> List[tuple]:
    rb = table.new_read_builder()
    return sorted(tuple(r.values()) for r in rb.new_read().to_arrow(rb.new_scan().plan().splits()).to_pylist())


def java_rows(jvm: Any, moto: MotoServer, wh: str, table: str) -> List[tuple]:
    got = jvm.call("read", warehouse=wh, table=table, catalog_options=java_opts(moto))
    return sorted(tuple(r) for r in got["rows"])


@pytest.mark.parametrize("pk", [True, False], ids=["pk", "append"])
def test_java_reads_our_s3_table(java_s3, moto, pk):
    wh = f"s3://{moto.new_bucket()}/wh"
    c = ours(moto, wh)
    opts = {"bucket": "2"} if pk else {}
    c.create_table("db.t", Schema.from_pyarrow_schema(SCHEMA, partition_keys=["dt"],
                                                      primary_keys=["dt", "id"] if pk else None, options=opts), False)
    t = c.get_table("db.t")
    ours_write(t, [[d, i, f"{d}{i}"] for d in ("a", "b") for i in range(50)])
    ours_write(t, [["a", i, "upd"] for i in range(0, 50, 5)])
    if pk:
        t.compact(full=True)
    want = ours_rows(t)
    assert len(want) == (100 if pk else 110)
    assert java_rows(java_s3, moto, wh, "db.t") == want


def test_we_read_javas_s3_table_and_java_reads_our_commit_on_it(java_s3, moto):
    wh = f"s3://{moto.new_bucket()}/wh"
    java_s3.call("create_table", warehouse=wh, table="db.j", fields=FIELDS, primary_keys=["dt", "id"],
                 partition_keys=["dt"], table_options={"bucket": "2"}, catalog_options=java_opts(moto))
    java_s3.call("write", warehouse=wh, table="db.j", catalog_options=java_opts(moto), commits=[
        {"rows": [[d, i, f"j{i}"] for d in ("a", "b") for i in range(30)]},
        {"rows": [["a", i, "j-upd"] for i in range(10)], "kinds": ["+U"] * 10},
        {"rows": [["b", 0, None]], "kinds": ["-D"]},
    ])
    t = ours(moto, wh).get_table("db.j")
    got = ours_rows(t)
    assert len(got) == 59 and ("a", 3, "j-upd") in got and ("b", 0, "j0") not in got
    assert got == java_rows(java_s3, moto, wh, "db.j")
    # we commit on top of Java's snapshots; Java reads it
    ours_write(t, [["b", 0, "back"], ["c", 1, "new"]])
    got = ours_rows(t)
    assert len(got) == 61 and ("b", 0, "back") in got
    assert java_rows(java_s3, moto, wh, "db.j") == got
