"""``new_postpone_fixed_bucket_write_builder`` between paimon_rs and pypaimon 2.1.0: the same
batch written by each into a twin postpone-bucket table plans the same bucket count per
partition (Java BinaryRow sizes over ``postpone.target-size-per-bucket``, capped by
``postpone.batch-write-fixed-bucket.max-parallelism``), puts every key in the same bucket, and
each library reads the other's table; a second write keeps the partition's count."""

from __future__ import annotations

import pytest

import pypaimon_env

pytestmark = pytest.mark.compat

SCRIPT = r'''
import json, sys
import pyarrow as pa
from pypaimon import CatalogFactory as PCF, Schema as PSchema
from paimon_rs import CatalogFactory as RCF, Schema as RSchema

wh = sys.argv[1]
SCHEMA = pa.schema([pa.field("id", pa.int32(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                    ("v", pa.string())])
OPTS = {"bucket": "-2", "postpone.target-size-per-bucket": "200 b",
        "postpone.batch-write-fixed-bucket.max-parallelism": "4"}
FIRST = pa.table({"id": list(range(12)), "dt": ["s"] * 2 + ["l"] * 10,
                  "v": ["x"] * 2 + ["y" * 40] * 10}, schema=SCHEMA)
SECOND = pa.table({"id": [100, 101], "dt": ["l", "n"], "v": ["z" * 300, "w"]}, schema=SCHEMA)

def write(tb, d):
    b = tb.new_postpone_fixed_bucket_write_builder(); w = b.new_write(); c = b.new_commit()
    w.write_arrow(d); msgs = w.prepare_commit(); c.commit(msgs); w.close(); c.close()
    return msgs

def layout(tb):
    rb = tb.new_read_builder()
    out = []
    for s in rb.new_scan().plan().splits():
        for r in rb.new_read().to_arrow([s]).to_pylist():
            out.append((r["dt"], r["id"], s.bucket))
    return sorted(out)

pc, rc = PCF.create({"warehouse": wh}), RCF.create({"warehouse": wh})
pc.create_database("db", True)
for name, cat, S in (("py", pc, PSchema), ("rs", rc, RSchema)):
    cat.create_table("db." + name, S.from_pyarrow_schema(
        SCHEMA, partition_keys=["dt"], primary_keys=["id", "dt"], options=OPTS), False)
out = {}
for name, cat in (("py", pc), ("rs", rc)):
    t = cat.get_table("db." + name)
    first = write(t, FIRST)
    second = write(cat.get_table("db." + name), SECOND)
    out[name + "_counts"] = sorted({m.total_buckets for m in first}), sorted({m.total_buckets for m in second})
for name in ("py", "rs"):
    out[name + "_by_py"] = layout(pc.get_table("db." + name))
    out[name + "_by_rs"] = layout(rc.get_table("db." + name))
print(json.dumps(out))
'''


def test_fixed_bucket_writes_match_pypaimon(pypaimon_venv, tmp_path):
    got = pypaimon_env.run_script_with_paimon_rs(pypaimon_venv, SCRIPT, str(tmp_path))
    assert got["rs_counts"] == got["py_counts"]
    # s: 2 rows of 32 bytes -> 1 bucket; l: 10 rows of 80 bytes -> 4; n (new) 1, l kept
    assert got["rs_counts"] == [[1, 4], [1, 4]]
    # the same key in the same bucket, each library reading either table
    assert got["rs_by_py"] == got["py_by_py"] == got["rs_by_rs"] == got["py_by_rs"]
    assert len(got["rs_by_rs"]) == 14
