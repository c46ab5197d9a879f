"""Deletes, merges, updates, INSERT OVERWRITE and truncate on dynamic-bucket primary-key tables
(``bucket = -1``, #28): the table equals a dict model, no key is ever in two buckets, and an
overwrite drops the replaced partitions' hash index (paimon-behaviour.md §1.7)."""

from __future__ import annotations

import random
from collections import Counter
from typing import Any, Dict, Tuple

import pyarrow as pa
import pytest

from paimon_rs import Schema, _core

from unit_helpers import PK_SCHEMA

Key = Tuple[str, int]


@pytest.fixture
def dyn_table(catalog):
    schema = Schema.from_pyarrow_schema(PK_SCHEMA, partition_keys=["dt"], primary_keys=["dt", "id"],
                                        options={"bucket": "-1", "dynamic-bucket.target-row-num": "5"})
    catalog.create_table("db.dyn", schema, False)
    return catalog.get_table("db.dyn")


def rows(dt, ids, name="n", price=1.0):
    ids = list(ids)
    return pa.table({"dt": [dt] * len(ids), "id": ids, "name": [f"{name}{i}" for i in ids],
                     "price": [float(price)] * len(ids)}, schema=PK_SCHEMA)


def write(table, data, overwrite=None):
    wb = table.new_batch_write_builder()
    if overwrite == "dynamic":
        wb.overwrite()
    elif overwrite is not None:
        wb.overwrite(overwrite)
    w = wb.new_write()
    w.write_arrow(data)
    wb.new_commit().commit(w.prepare_commit())
    w.close()


def by_bucket(table) -> Dict[Tuple[str, int], Dict[int, Tuple[Any, float]]]:
    rb = table.new_read_builder()
    out: Dict[Tuple[str, int], Dict[int, Tuple[Any, float]]] = {}
    for split in rb.new_scan().plan().splits():
        for r in rb.new_read().to_arrow([split]).to_pylist():
            out.setdefault((r["dt"], split.bucket), {})[r["id"]] = (r["name"], r["price"])
    return out


def check(table, model: Dict[Key, Tuple[Any, float]]) -> Dict[Tuple[str, int], Dict[int, Any]]:
    got = by_bucket(table)
    keys = Counter((dt, k) for (dt, _), m in got.items() for k in m)
    assert all(n == 1 for n in keys.values()), [k for k, n in keys.items() if n > 1]
    assert {(dt, k): v for (dt, _), m in got.items() for k, v in m.items()} == model
    return got


def hash_rows(table, dt):
    """Hashes listed by the live HASH index files of partition ``dt``."""
    return sum(r[5] for r in _core.index_files(table._core) if r[2] == "HASH" and r[0] == f"{{{dt}}}")


def test_delete_merge_update_keep_keys_in_their_buckets(dyn_table):
    model: Dict[Key, Tuple[Any, float]] = {}
    rnd = random.Random(28)
    write(dyn_table, pa.concat_tables([rows("a", range(30)), rows("b", range(12))]))
    for t in (rows("a", range(30)), rows("b", range(12))):
        model.update({(r["dt"], r["id"]): (r["name"], r["price"]) for r in t.to_pylist()})
    before = check(dyn_table, model)
    bucket_of = {(dt, k): b for (dt, b), m in before.items() for k in m}

    r = dyn_table.delete("dt = 'a' AND id < 8")
    assert r.num_deleted_rows == 8
    for i in range(8):
        del model[("a", i)]
    check(dyn_table, model)
    # a deleted key keeps its hash in the index (as Java): partition a still lists 30
    assert hash_rows(dyn_table, "a") == 30

    for step in range(6):
        keys = rnd.sample([(dt, i) for dt in "ab" for i in range(40)], 15)
        src = pa.table({"dt": [k[0] for k in keys], "id": [k[1] for k in keys],
                        "name": [f"s{step}"] * len(keys),
                        "price": [float(rnd.randint(0, 9)) for _ in keys]}, schema=PK_SCHEMA)
        (dyn_table.merge(src, on=["dt", "id"])
         .when_matched_delete("source.price < 2")
         .when_matched_update_all()
         .when_not_matched_insert_all()
         .execute())
        for s in src.to_pylist():
            k = (s["dt"], s["id"])
            if k in model and s["price"] < 2:
                del model[k]
            else:
                model[k] = (s["name"], s["price"])
        got = check(dyn_table, model)
        for (dt, b), m in got.items():
            for k in m:
                assert bucket_of.setdefault((dt, k), b) == b, f"key {k} of {dt} moved"


def test_overwrite_drops_the_replaced_partitions_hash_index(dyn_table):
    write(dyn_table, pa.concat_tables([rows("a", range(40)), rows("b", range(10))]))
    assert hash_rows(dyn_table, "a") == 40
    # INSERT OVERWRITE partition a with 3 new keys: the old 40 must not pin buckets 0..7
    write(dyn_table, rows("a", range(100, 103), name="o"), overwrite={"dt": "a"})
    model = {("a", i): (f"o{i}", 1.0) for i in range(100, 103)}
    model.update({("b", i): (f"n{i}", 1.0) for i in range(10)})
    got = check(dyn_table, model)
    assert hash_rows(dyn_table, "a") == 3 and hash_rows(dyn_table, "b") == 10
    assert sorted(b for (dt, b) in got if dt == "a") == [0]
    # old keys come back: they fill bucket 0 then new buckets, one bucket each
    write(dyn_table, rows("a", range(0, 12)))
    model.update({("a", i): (f"n{i}", 1.0) for i in range(12)})
    got = check(dyn_table, model)
    assert sorted(b for (dt, b) in got if dt == "a") == [0, 1, 2]
    assert hash_rows(dyn_table, "a") == 15
    # a dynamic overwrite (no partition given) replaces only the partitions written
    write(dyn_table, rows("b", range(50, 52), name="d"), overwrite="dynamic")
    del_b = {k for k in model if k[0] == "b"}
    for k in del_b:
        del model[k]
    model.update({("b", i): (f"d{i}", 1.0) for i in range(50, 52)})
    check(dyn_table, model)
    assert hash_rows(dyn_table, "b") == 2 and hash_rows(dyn_table, "a") == 15


def test_truncate_drops_the_hash_index(dyn_table):
    write(dyn_table, pa.concat_tables([rows("a", range(20)), rows("b", range(10))]))
    dyn_table.new_batch_write_builder().new_commit().truncate_partitions([{"dt": "b"}])
    assert hash_rows(dyn_table, "b") == 0 and hash_rows(dyn_table, "a") == 20
    dyn_table.new_batch_write_builder().new_commit().truncate_table()
    assert [r for r in _core.index_files(dyn_table._core) if r[2] == "HASH"] == []
    write(dyn_table, rows("a", range(100, 104)))
    got = check(dyn_table, {("a", i): (f"n{i}", 1.0) for i in range(100, 104)})
    assert list(got) == [("a", 0)]
