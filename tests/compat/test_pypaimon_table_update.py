"""``TableUpdate`` of paimon_rs against pypaimon 2.1.0 on one warehouse: a delete by a
partition-only predicate (both drop the partitions; each reads the other's result, with and
without deletion vectors), and ``new_shard_updator`` (both deal the same rows to each worker;
workers of both libraries fill one column together, both read the result)."""

from __future__ import annotations

import pytest

import pypaimon_env

pytestmark = pytest.mark.compat

PRELUDE = r'''
import json, sys
import pyarrow as pa
from pypaimon import CatalogFactory as PCF, Schema as PSchema
from paimon_rs import CatalogFactory as RCF, Schema as RSchema

wh = sys.argv[1]
pc, rc = PCF.create({"warehouse": wh}), RCF.create({"warehouse": wh})
rc.create_database("db", True)
DE = {"row-tracking.enabled": "true", "data-evolution.enabled": "true"}

def append(cat, name, data, cols=None):
    wb = cat.get_table(name).new_batch_write_builder()
    w = wb.new_write().with_write_type(cols) if cols else wb.new_write()
    w.write_arrow(data)
    wb.new_commit().commit(w.prepare_commit())

def read(cat, name, key):
    rb = cat.get_table(name).new_read_builder()
    return rb.new_read().to_arrow(rb.new_scan().plan().splits()).sort_by(key).to_pylist()
'''

PARTITION_DELETE = PRELUDE + r'''
SCH = pa.schema([("id", pa.int32()), ("age", pa.int32()), ("city", pa.string())])
out = {}
# each matches LA only (contains / endswith once dropped every partition in paimon_rs)
PREDS = {"eq": lambda pb: pb.equal("city", "LA"), "ends": lambda pb: pb.endswith("city", "A"),
         "contains": lambda pb: pb.contains("city", "L")}
for (pname, pred), opts, deleter in [(p, o, d) for p in PREDS.items()
                                      for o in ({}, DE, dict(DE, **{"deletion-vectors.enabled": "true"}))
                                      for d in (rc, pc)]:
    name = "db.p%d_%s_%s" % (len(opts), "rs" if deleter is rc else "py", pname)
    rc.create_table(name, RSchema.from_pyarrow_schema(SCH, partition_keys=["city"], options=opts), False)
    append(rc, name, pa.table({"id": [1, 2], "age": [25, 30], "city": ["NYC", "LA"]}, schema=SCH))
    append(pc, name, pa.table({"id": [3, 4], "age": [35, 40], "city": ["LA", "SF"]}, schema=SCH))
    tb = deleter.get_table(name)
    wb = tb.new_batch_write_builder()
    pb = tb.new_read_builder().new_predicate_builder()
    msgs = wb.new_update().delete_by_predicate(pred(pb))
    deleted = sum(len(m.deleted_files) for m in msgs)
    cm = wb.new_commit(); cm.commit(msgs); cm.close()
    out[name] = [deleted, read(rc, name, "id"), read(pc, name, "id")]
print(json.dumps(out))
'''

SHARDS = PRELUDE + r'''
SCH = pa.schema([("a", pa.int32()), ("b", pa.int32()), ("d", pa.int32())])
AB = pa.schema([SCH.field("a"), SCH.field("b")])
rc.create_table("db.s", RSchema.from_pyarrow_schema(SCH, options=DE), False)
k = 0
for i, n in enumerate([2, 3, 1, 2, 2]):
    append(rc if i % 2 else pc, "db.s", pa.table({"a": list(range(k, k + n)),
                                                   "b": [10 * j for j in range(k, k + n)]}, schema=AB),
           ["a", "b"])
    k += n

def run(cat, i, count, write):
    wb = cat.get_table("db.s").new_batch_write_builder()
    upd = wb.new_update()
    upd.with_read_projection(["a", "b", "_ROW_ID"])
    upd.with_update_type(["d"])
    shard = upd.new_shard_updator(i, count)
    ids = []
    for batch in iter(shard.arrow_reader().read_next_batch, None):
        ids += batch.column("_ROW_ID").to_pylist()
        a, b = batch.column("a").to_pylist(), batch.column("b").to_pylist()
        shard.update_by_arrow_batch(pa.RecordBatch.from_pydict(
            {"d": pa.array([x + y for x, y in zip(a, b)], pa.int32())}))
    msgs = shard.prepare_commit()
    if write:
        cm = wb.new_commit(); cm.commit(msgs); cm.close()
    return ids

out = {"ids": [[run(cat, i, 3, False) for i in range(3)] for cat in (rc, pc)]}
# workers of both libraries fill d together, one commit each
for i, cat in enumerate((rc, pc, rc)):
    run(cat, i, 3, True)
out["rs"], out["py"] = read(rc, "db.s", "a"), read(pc, "db.s", "a")
print(json.dumps(out))
'''


def test_partition_delete_by_both(pypaimon_venv, tmp_path):
    got = pypaimon_env.run_script_with_paimon_rs(pypaimon_venv, PARTITION_DELETE, str(tmp_path))
    assert len(got) == 18
    for name, (deleted, rs, py) in got.items():
        assert deleted == 2, name  # one file of each write in LA
        assert rs == py == [{"id": 1, "age": 25, "city": "NYC"}, {"id": 4, "age": 40, "city": "SF"}], name


def test_shard_updators_of_both(pypaimon_venv, tmp_path):
    got = pypaimon_env.run_script_with_paimon_rs(pypaimon_venv, SHARDS, str(tmp_path))
    rs_ids, py_ids = got["ids"]
    assert rs_ids == py_ids == [[0, 1, 2, 3, 4], [5, 6, 7], [8, 9]]
    want = [{"a": a, "b": 10 * a, "d": 11 * a} for a in range(10)]
    assert got["rs"] == got["py"] == want
