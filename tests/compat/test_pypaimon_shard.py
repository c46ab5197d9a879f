"""``with_shard(i, n)`` against pypaimon 2.1.0 on append and data-evolution tables both wrote
(partitions, several commits, a filter on a non-partition column): pypaimon splits a plan by
row count (``_compute_shard_range``; a data-evolution plan by row id,
``_divide_ranges_by_position``), so worker i reads the same rows in both libraries and a job
mixing paimon_rs and pypaimon workers reads every row once (on an append table: when the two
plans list the (partition, bucket) groups in the same order, see docs/api.md)."""

from __future__ import annotations

import pytest

import pypaimon_env

pytestmark = pytest.mark.compat

SCRIPT = r'''
import json, sys
import pyarrow as pa
from pypaimon import CatalogFactory as PCF
from paimon_rs import CatalogFactory as RCF, Schema as RSchema

wh = sys.argv[1]
pc, rc = PCF.create({"warehouse": wh}), RCF.create({"warehouse": wh})
rc.create_database("db", True)
SCH = pa.schema([("id", pa.int64()), ("a", pa.int64()), ("p", pa.string())])
TABLES = {"db.append": {},
          "db.evo": {"row-tracking.enabled": "true", "data-evolution.enabled": "true"}}
for name, opts in TABLES.items():
    rc.create_table(name, RSchema.from_pyarrow_schema(SCH, partition_keys=["p"], options=opts), False)
    for i, n in enumerate([5, 7, 3, 6, 4]):
        cat = [pc, rc][i % 2]
        ids = list(range(i * 10, i * 10 + n))
        t = cat.get_table(name); wb = t.new_batch_write_builder(); w = wb.new_write()
        # pypaimon plans (partition, bucket) groups in the order the manifests first name them,
        # paimon_rs in partition order: the append table's first commit is to the first
        # partition, so the plans agree; a data-evolution shard counts row ids, whatever the order
        parts = ["x", "y", "x"] if name == "db.append" else ["y", "x", "y"]
        w.write_arrow(pa.table({"id": ids, "a": ids, "p": [parts[i % 3]] * n}, schema=SCH))
        cm = wb.new_commit(); cm.commit(w.prepare_commit()); w.close(); cm.close()

def read(cat, name, shard=None, filt=None):
    rb = cat.get_table(name).new_read_builder()
    if filt is not None:
        rb = rb.with_filter(filt(rb.new_predicate_builder()))
    rb = rb.with_projection(["id"])
    s = rb.new_scan()
    if shard is not None:
        s = s.with_shard(*shard)
    splits = s.plan().splits()
    return sorted(rb.new_read().to_arrow(splits).column("id").to_pylist()) if splits else []

FILTERS = {"none": None,
           "id": lambda pb: pb.greater_or_equal("id", 30),
           "part": lambda pb: pb.equal("p", "x"),
           "both": lambda pb: pb.and_predicates([pb.equal("p", "x"), pb.greater_or_equal("id", 30)])}
out = {}
for name in TABLES:
    for fname, filt in FILTERS.items():
        for n in (1, 2, 3, 4, 7):
            out["%s/%s/%d" % (name, fname, n)] = {
                "shards": [[read(pc, name, (i, n), filt), read(rc, name, (i, n), filt)] for i in range(n)],
                "full": read(rc, name, None, filt)}
print(json.dumps(out))
'''


def test_shards_match_pypaimon(pypaimon_venv, tmp_path):
    got = pypaimon_env.run_script_with_paimon_rs(pypaimon_venv, SCRIPT, str(tmp_path))
    assert len(got) == 2 * 4 * 5
    for key, res in got.items():
        union = []
        for i, (py, rs) in enumerate(res["shards"]):
            assert rs == py, (key, i)
            union += rs
        assert sorted(union) == res["full"], key
        assert res["full"], key


PK = r'''
import json, sys
import pyarrow as pa
from pypaimon import CatalogFactory as PCF
from paimon_rs import CatalogFactory as RCF, Schema as RSchema

wh = sys.argv[1]
pc, rc = PCF.create({"warehouse": wh}), RCF.create({"warehouse": wh})
rc.create_database("db", True)
SCH = pa.schema([pa.field("id", pa.int64(), nullable=False), ("a", pa.int64())])
TABLES = {"db.dv": {"deletion-vectors.enabled": "true"}, "db.fr": {"merge-engine": "first-row"}, "db.plain": {}}
out = {}
for name, opts in TABLES.items():
    # small target files: compactions leave several files per bucket, which a shard by file
    # name deals to different workers
    rc.create_table(name, RSchema.from_pyarrow_schema(
        SCH, primary_keys=["id"], options={"bucket": "2", "target-file-size": "2kb", **opts}), False)
    for i in range(6):
        cat = [pc, rc][i % 2]
        ids = list(range(i * 150, i * 150 + 400))
        t = cat.get_table(name); wb = t.new_batch_write_builder(); w = wb.new_write()
        w.write_arrow(pa.table({"id": ids, "a": [i] * len(ids)}, schema=SCH))
        cm = wb.new_commit(); cm.commit(w.prepare_commit()); w.close(); cm.close()

    def read(cat, shard=None):
        rb = cat.get_table(name).new_read_builder()
        s = rb.new_scan()
        if shard is not None:
            s = s.with_shard(*shard)
        splits = s.plan().splits()
        return sorted([r["id"], r["a"]] for r in rb.new_read().to_arrow(splits).to_pylist()) if splits else []
    files = sum(len(s.files) for s in rc.get_table(name).new_read_builder().new_scan().plan().splits())
    out[name] = {"full": read(rc), "files": files,
                 "shards": [[read(pc, (i, 3)), read(rc, (i, 3))] for i in range(3)]}
print(json.dumps(out))
'''


def test_primary_key_shards_match_pypaimon(pypaimon_venv, tmp_path):
    """Deletion-vector and first-row tables go by a hash of the file name (Java's
    ``SnapshotReaderImpl``, pypaimon's ``_filter_by_shard``), other primary-key tables by
    bucket: worker i reads the same rows in both libraries."""
    got = pypaimon_env.run_script_with_paimon_rs(pypaimon_venv, PK, str(tmp_path))
    for name, res in got.items():
        assert res["files"] > 2, name
        union = []
        for i, (py, rs) in enumerate(res["shards"]):
            assert rs == py, (name, i)
            union += rs
        assert sorted(union) == res["full"] and res["full"], name
