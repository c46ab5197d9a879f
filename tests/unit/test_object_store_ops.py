"""Catalog operations and process forks on an object store (issue #14): ``drop_database`` and
``rename_table`` on S3 (moto's server on 127.0.0.1), and a process forked after using the store
reading and committing in the child."""

from __future__ import annotations

import multiprocessing
from typing import Iterator, Tuple

import pyarrow as pa
import pytest

from paimon_rs import CatalogFactory, Schema
from paimon_rs.exceptions import (
    DatabaseNotEmptyError,
    DatabaseNotFoundError,
    TableAlreadyExistsError,
    TableNotFoundError,
)

from s3_server import MotoServer
from unit_helpers import PK_SCHEMA, read, write


@pytest.fixture(scope="module")
def moto() -> Iterator[MotoServer]:
    pytest.importorskip("moto")
    pytest.importorskip("boto3")
    server = MotoServer()
    yield server
    server.stop()


def s3_catalog(moto: MotoServer) -> Tuple[object, str]:
    bucket = moto.new_bucket()
    c = CatalogFactory.create({"warehouse": f"s3://{bucket}/wh", **moto.options()})
    c.create_database("db", True)
    return c, bucket


def make(catalog, name: str):
    schema = Schema.from_pyarrow_schema(PK_SCHEMA, partition_keys=["dt"], primary_keys=["dt", "id"],
                                        options={"bucket": "2"})
    catalog.create_table(name, schema, False)
    return catalog.get_table(name)


def rows(ids, name="n"):
    ids = list(ids)
    return pa.table({"dt": ["a"] * len(ids), "id": ids, "name": [name] * len(ids),
                     "price": [float(i) for i in ids]}, schema=PK_SCHEMA)


def test_drop_database_on_s3_deletes_its_objects(moto):
    catalog, bucket = s3_catalog(moto)
    catalog.create_database("d2", False)
    write(make(catalog, "d2.a"), rows(range(10)))
    assert moto.keys(bucket, "wh/d2.db/")
    with pytest.raises(DatabaseNotEmptyError, match="cascade"):
        catalog.drop_database("d2")
    assert catalog.list_tables("d2") == ["a"], "refused: nothing deleted"
    catalog.drop_database("d2", cascade=True)
    assert "d2" not in catalog.list_databases()
    assert moto.keys(bucket, "wh/d2.db/") == []
    assert moto.keys(bucket, "wh/db.db/"), "the other database is kept"
    with pytest.raises(DatabaseNotFoundError):
        catalog.drop_database("d2")
    catalog.drop_database("d2", ignore_if_not_exists=True)
    catalog.create_database("d3", False)
    catalog.drop_database("d3")
    assert "d3" not in catalog.list_databases()


def test_rename_table_on_s3_copies_then_deletes(moto):
    catalog, bucket = s3_catalog(moto)
    t = make(catalog, "db.a")
    write(t, rows(range(5), "v1"))
    write(t, rows(range(3, 8), "v2"))
    before = read(t, sort=["id"])
    n_objects = len(moto.keys(bucket, "wh/db.db/a/"))
    catalog.create_database("d2", False)
    catalog.rename_table("db.a", "d2.b")
    assert moto.keys(bucket, "wh/db.db/a/") == []
    assert len(moto.keys(bucket, "wh/d2.db/b/")) == n_objects
    assert catalog.list_tables("db") == [] and catalog.list_tables("d2") == ["b"]
    moved = catalog.get_table("d2.b")
    assert read(moved, sort=["id"]).equals(before)
    # the moved table takes commits at its new place
    write(moved, rows([100]))
    assert read(moved).num_rows == 9
    with pytest.raises(TableNotFoundError):
        catalog.rename_table("db.a", "db.c")
    make(catalog, "db.c")
    with pytest.raises(TableAlreadyExistsError):
        catalog.rename_table("d2.b", "db.c")
    with pytest.raises(DatabaseNotFoundError):
        catalog.rename_table("d2.b", "nodb.c")
    assert catalog.list_tables("d2") == ["b"]


def _child(warehouse: str, options: dict, q) -> None:
    try:
        c = CatalogFactory.create({"warehouse": warehouse, **options})
        t = c.get_table("db.t")
        n = read(t).num_rows
        write(t, rows(range(100, 110), "child"))
        q.put(("ok", n, read(t).num_rows))
    except BaseException as e:  # noqa: BLE001 - reported to the parent
        q.put(("error", repr(e), 0))


def test_a_process_forked_after_using_the_store_uses_it(moto):
    """A child forked after the parent read and wrote through the store (its runtime's threads
    and connection pools do not survive the fork) reads and commits; so does the parent after."""
    catalog, bucket = s3_catalog(moto)
    t = make(catalog, "db.t")
    write(t, rows(range(50)))
    assert read(t).num_rows == 50
    ctx = multiprocessing.get_context("fork")
    q = ctx.Queue()
    p = ctx.Process(target=_child, args=(f"s3://{bucket}/wh", moto.options(), q))
    p.start()
    p.join(120)  # a hang guard, not a timing assertion
    if p.is_alive():
        p.kill()
        pytest.fail("the forked child hung on its first request")
    assert q.get(timeout=10) == ("ok", 50, 60)
    assert p.exitcode == 0
    assert read(catalog.get_table("db.t")).num_rows == 60
