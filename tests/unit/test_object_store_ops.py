"""A process forked after using an object store (issue #14; moto's S3 server on 127.0.0.1)
reads and commits in the child. (``drop_database`` and ``rename_table`` on S3: the tests of
test_pypaimon_parity.py run on both stores.)"""

from __future__ import annotations

import multiprocessing

import pyarrow as pa
import pytest

from paimon_rs import CatalogFactory

from unit_helpers import PK_SCHEMA, read, write


def rows(ids, name="n"):
    ids = list(ids)
    return pa.table({"dt": ["a"] * len(ids), "id": ids, "name": [name] * len(ids),
                     "price": [float(i) for i in ids]}, schema=PK_SCHEMA)


def _child(warehouse: str, options: dict, q) -> None:
    try:
        c = CatalogFactory.create({"warehouse": warehouse, **options})
        t = c.get_table("db.t")
        n = read(t).num_rows
        write(t, rows(range(100, 110), "child"))
        q.put(("ok", n, read(t).num_rows))
    except BaseException as e:  # noqa: BLE001 - reported to the parent
        q.put(("error", repr(e), 0))


@pytest.mark.stores("s3")
def test_a_process_forked_after_using_the_store_uses_it(warehouse, pk_table):
    """A child forked after the parent read and wrote through the store (its runtime's threads
    and connection pools do not survive the fork) reads and commits; so does the parent after."""
    t = pk_table
    write(t, rows(range(50)))
    assert read(t).num_rows == 50
    ctx = multiprocessing.get_context("fork")
    q = ctx.Queue()
    p = ctx.Process(target=_child, args=(warehouse.uri, warehouse.options, q))
    p.start()
    p.join(120)  # a hang guard, not a timing assertion
    if p.is_alive():
        p.kill()
        pytest.fail("the forked child hung on its first request")
    assert q.get(timeout=10) == ("ok", 50, 60)
    assert p.exitcode == 0
    assert read(warehouse.catalog().get_table("db.t")).num_rows == 60
