"""Postpone-bucket tables (``bucket = -2``) between paimon_rs and pypaimon 2.1.0 (the Java 1.0
jar of the compat driver predates ``PostponeUtils``' bucket resolution, so pypaimon, which
writes postpone files as Java's ``PostponeBucketFileStoreWrite`` does, is the oracle): pypaimon
writes postpone rows that paimon_rs compacts and reads, pypaimon reads after paimon_rs's
compaction; paimon_rs's postpone files and manifest entries look like pypaimon's (Avro, writer
prefix, bucket and total buckets -2) and both keep them invisible until compacted."""

from __future__ import annotations

import pytest

import pypaimon_env

pytestmark = pytest.mark.compat

SCRIPT = r'''
import glob, json, os, sys
import fastavro
import pyarrow as pa
from pypaimon import CatalogFactory as PCF, Schema as PSchema
from paimon_rs import CatalogFactory as RCF, Schema as RSchema

wh = sys.argv[1]
SCHEMA = pa.schema([("dt", pa.string()), ("k", pa.int64()), ("v", pa.string())])
OPTS = {"bucket": "-2", "postpone.default-bucket-num": "3"}

def data(dt, ks, vs):
    return pa.table({"dt": dt, "k": ks, "v": vs}, schema=SCHEMA)

def write(tb, d):
    wb = tb.new_batch_write_builder(); w = wb.new_write(); w.write_arrow(d)
    c = wb.new_commit(); c.commit(w.prepare_commit()); w.close(); c.close()

def rows(tb):
    rb = tb.new_read_builder()
    t = rb.new_read().to_arrow(rb.new_scan().plan().splits())
    return sorted((r["dt"], r["k"], r["v"]) for r in t.to_pylist())

def entries(path):
    """Live data-file entries of the latest snapshot: (bucket, total buckets, file name)."""
    snap = json.load(open(os.path.join(path, "snapshot", "snapshot-%s" % open(
        os.path.join(path, "snapshot", "LATEST")).read().strip())))
    live = {}
    for lst in (snap["baseManifestList"], snap["deltaManifestList"]):
        for m in fastavro.reader(open(os.path.join(path, "manifest", lst), "rb")):
            for e in fastavro.reader(open(os.path.join(path, "manifest", m["_FILE_NAME"]), "rb")):
                key = (e["_PARTITION"], e["_BUCKET"], e["_FILE"]["_FILE_NAME"])
                if e["_KIND"] == 0:
                    live[key] = (e["_BUCKET"], e["_TOTAL_BUCKETS"], e["_FILE"]["_FILE_NAME"],
                                 e["_FILE"]["_LEVEL"])
                else:
                    live.pop(key, None)
    return sorted(live.values())

out = {}
pc, rc = PCF.create({"warehouse": wh}), RCF.create({"warehouse": wh})
pc.create_database("db", True)

# pypaimon writes, paimon_rs compacts and reads, pypaimon reads what paimon_rs compacted
pc.create_table("db.by_pypaimon", PSchema.from_pyarrow_schema(
    SCHEMA, partition_keys=["dt"], primary_keys=["dt", "k"], options=OPTS), False)
pt = pc.get_table("db.by_pypaimon")
write(pt, data(["a", "a", "b", "a"], [3, 1, 2, 1], ["c", "a", "b", "a2"]))
write(pt, data(["a", "b"], [3, 5], ["c2", "e"]))
rt = rc.get_table("db.by_pypaimon")
out["py_before"] = [rows(pt), rows(rt)]
out["rs_compact"] = rt.compact() is not None
out["py_after"] = [rows(rc.get_table("db.by_pypaimon")), rows(pc.get_table("db.by_pypaimon"))]
out["py_entries"] = [(b, t, lvl) for b, t, _, lvl in entries(os.path.join(wh, "db.db", "by_pypaimon"))]
# pypaimon writes again into the compacted table: paimon_rs merges it into the same 3 buckets
write(pc.get_table("db.by_pypaimon"), data(["a"], [1], ["a3"]))
rc.get_table("db.by_pypaimon").compact()
out["py_again"] = rows(pc.get_table("db.by_pypaimon"))

# paimon_rs writes; pypaimon sees nothing until paimon_rs compacts
rc.create_table("db.by_rs", RSchema.from_pyarrow_schema(
    SCHEMA, partition_keys=["dt"], primary_keys=["dt", "k"], options=OPTS), False)
rt = rc.get_table("db.by_rs")
write(rt, data(["a", "a", "b", "a"], [3, 1, 2, 1], ["c", "a", "b", "a2"]))
path = os.path.join(wh, "db.db", "by_rs")
out["rs_before"] = [rows(pc.get_table("db.by_rs")), rows(rt)]
out["rs_postpone_entries"] = [(b, t, lvl) for b, t, _, lvl in entries(path)]
files = sorted(glob.glob(os.path.join(path, "dt=a", "bucket-postpone", "*")))
out["rs_files"] = [os.path.basename(f) for f in files]
rd = fastavro.reader(open(files[0], "rb"))
ws = rd.writer_schema
ws = [x for x in ws if x != "null"][0] if isinstance(ws, list) else ws
out["rs_avro_fields"] = [f["name"] for f in ws["fields"]]
rt.compact()
out["rs_after"] = rows(pc.get_table("db.by_rs"))
out["rs_entries"] = sorted({(b, t) for b, t, _, _ in entries(path)})
print(json.dumps(out))
'''


def test_postpone_tables_between_paimon_rs_and_pypaimon(pypaimon_venv, tmp_path):
    got = pypaimon_env.run_script_with_paimon_rs(pypaimon_venv, SCRIPT, str(tmp_path))
    # invisible until compacted, to both
    assert got["py_before"] == [[], []]
    assert got["rs_compact"] is True
    want = [["a", 1, "a2"], ["a", 3, "c2"], ["b", 2, "b"], ["b", 5, "e"]]
    assert got["py_after"] == [want, want]
    # real buckets of postpone.default-bucket-num = 3, none left in bucket-postpone
    assert {(b, t) for b, t, _ in got["py_entries"]} <= {(0, 3), (1, 3), (2, 3)}
    assert got["py_again"] == [["a", 1, "a3"], ["a", 3, "c2"], ["b", 2, "b"], ["b", 5, "e"]]
    # paimon_rs's postpone files: as pypaimon's (Java's) names, format and manifest entries
    assert got["rs_before"] == [[], []]
    assert got["rs_postpone_entries"] == [[-2, -2, 0], [-2, -2, 0]]
    name = got["rs_files"][0]
    assert name.startswith("data--u-") and "-s-" in name and "-w-" in name and name.endswith(".avro")
    assert got["rs_avro_fields"] == ["_KEY_k", "_SEQUENCE_NUMBER", "_VALUE_KIND", "dt", "k", "v"]
    assert got["rs_after"] == [["a", 1, "a2"], ["a", 3, "c"], ["b", 2, "b"]]
    assert set(map(tuple, got["rs_entries"])) <= {(0, 3), (1, 3), (2, 3)}
