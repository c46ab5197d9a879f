"""``data-file.external-paths`` between paimon_rs and pypaimon 2.1.0 (the Java jars of the compat
driver predate external paths, so pypaimon, which writes them as Java's
``ExternalPathProvider`` does, is the oracle): each reads the primary-key and append tables the
other wrote with data files under two external roots, after more writes and a compaction by
the other side; both write the same ``_EXTERNAL_PATH`` form and directory layout."""

from __future__ import annotations

import pytest

import pypaimon_env

pytestmark = pytest.mark.compat

SCRIPT = r'''
import json, os, sys
import pyarrow as pa
from pypaimon import CatalogFactory as PCF, Schema as PSchema
from paimon_rs import CatalogFactory as RCF, Schema as RSchema

wh = sys.argv[1]
SCHEMA = pa.schema([("dt", pa.string()), ("k", pa.int64()), ("v", pa.string())])
EXT = {"data-file.external-paths": "file://%s/ext_a,file://%s/ext_b" % (wh, wh),
       "data-file.external-paths.strategy": "round-robin"}

def write(tb, ks, tag):
    d = pa.table({"dt": ["d%d" % (k % 2) for k in ks], "k": ks, "v": ["%s%d" % (tag, k) for k in ks]},
                 schema=SCHEMA)
    wb = tb.new_batch_write_builder(); w = wb.new_write(); w.write_arrow(d)
    c = wb.new_commit(); c.commit(w.prepare_commit()); w.close(); c.close()

def rows(tb):
    rb = tb.new_read_builder()
    t = rb.new_read().to_arrow(rb.new_scan().plan().splits())
    return sorted((r["dt"], r["k"], r["v"]) for r in t.to_pylist())

def ext_paths(tb):
    rb = tb.new_read_builder()
    return sorted(f.external_path for s in rb.new_scan().plan().splits() for f in s.files)

def in_table_dir(name):
    root = os.path.join(wh, "db.db", name)
    return [f for d, _, fs in os.walk(root) for f in fs if f.endswith(".parquet")]

out = {}
pc, rc = PCF.create({"warehouse": wh}), RCF.create({"warehouse": wh})
pc.create_database("db", True)
for name, pk, first, second in [("pk_py", True, pc, rc), ("pk_rs", True, rc, pc),
                                ("ap_py", False, pc, rc), ("ap_rs", False, rc, pc)]:
    schema_cls = PSchema if first is pc else RSchema
    opts = dict(EXT, bucket="2") if pk else dict(EXT)
    first.create_table("db." + name, schema_cls.from_pyarrow_schema(
        SCHEMA, partition_keys=["dt"], primary_keys=["dt", "k"] if pk else None, options=opts), False)
    write(first.get_table("db." + name), list(range(0, 10)), "a")
    write(second.get_table("db." + name), list(range(5, 15)), "b")
    if pk and second is rc:
        rc.get_table("db." + name).compact(full=True)
    write(first.get_table("db." + name), list(range(12, 16)), "c")
    out[name] = {"py": rows(pc.get_table("db." + name)), "rs": rows(rc.get_table("db." + name)),
                 "ext_py": ext_paths(pc.get_table("db." + name)),
                 "ext_rs": ext_paths(rc.get_table("db." + name)),
                 "in_table_dir": in_table_dir(name)}
print(json.dumps(out))
'''


def check_rows(got: dict) -> None:
    """The rows both libraries read back from each table of ``SCRIPT``'s sequence: three writes
    (keys 0-9, 5-14, 12-15), the primary-key tables keeping the newest row of a key."""
    for name in ("pk_py", "pk_rs"):
        model = {}
        for ks, tag in ((range(0, 10), "a"), (range(5, 15), "b"), (range(12, 16), "c")):
            for k in ks:
                model[k] = f"{tag}{k}"
        want = sorted([f"d{k % 2}", k, v] for k, v in model.items())
        assert got[name]["py"] == got[name]["rs"] == want, name
    for name in ("ap_py", "ap_rs"):
        want = sorted([f"d{k % 2}", k, f"{tag}{k}"] for ks, tag in (
            (range(0, 10), "a"), (range(5, 15), "b"), (range(12, 16), "c")) for k in ks)
        assert got[name]["py"] == got[name]["rs"] == want, name


def test_external_paths_between_paimon_rs_and_pypaimon(pypaimon_venv, tmp_path):
    got = pypaimon_env.run_script_with_paimon_rs(pypaimon_venv, SCRIPT, str(tmp_path))
    wh = str(tmp_path)
    check_rows(got)
    for name, g in got.items():
        # no data file in the table's directory; both libraries see the same external paths,
        # each `file:<root>/dt=d<n>/bucket-<b>/<file>`
        assert g["in_table_dir"] == [], name
        assert g["ext_py"] == g["ext_rs"] and g["ext_rs"], name
        for p in g["ext_rs"]:
            assert p.startswith((f"file:{wh}/ext_a/dt=d", f"file:{wh}/ext_b/dt=d")), p
            assert p.split("/")[-2].startswith("bucket-"), p


BLOB_SCRIPT = r'''
import json, os, sys
import pyarrow as pa
from pypaimon import CatalogFactory as PCF, Schema as PSchema
from paimon_rs import CatalogFactory as RCF, Schema as RSchema

wh = sys.argv[1]
SCHEMA = pa.schema([("id", pa.int32()), ("b", pa.large_binary())])
OPTS = {"row-tracking.enabled": "true", "data-evolution.enabled": "true",
        "data-file.external-paths": "file://%s/ext_a,file://%s/ext_b" % (wh, wh),
        "data-file.external-paths.strategy": "round-robin"}

def write(tb, ids):
    d = pa.table({"id": ids, "b": [bytes([i % 256]) * (i + 1) for i in ids]}, schema=SCHEMA)
    wb = tb.new_batch_write_builder(); w = wb.new_write(); w.write_arrow(d)
    c = wb.new_commit(); c.commit(w.prepare_commit()); w.close(); c.close()

def rows(tb):
    rb = tb.new_read_builder()
    t = rb.new_read().to_arrow(rb.new_scan().plan().splits())
    return sorted((r["id"], r["b"].hex()) for r in t.to_pylist())

def in_table_dir(name):
    root = os.path.join(wh, "db.db", name)
    return [f for d, _, fs in os.walk(root) for f in fs if f.endswith((".blob", ".parquet"))]

def ext_blobs():
    return len([f for r in ("ext_a", "ext_b") for d, _, fs in os.walk(os.path.join(wh, r))
                for f in fs if f.endswith(".blob")])

out = {}
pc, rc = PCF.create({"warehouse": wh}), RCF.create({"warehouse": wh})
pc.create_database("db", True)
for name, first, second in [("blob_py", pc, rc), ("blob_rs", rc, pc)]:
    schema_cls = PSchema if first is pc else RSchema
    first.create_table("db." + name, schema_cls.from_pyarrow_schema(SCHEMA, options=OPTS), False)
    before = ext_blobs()
    write(first.get_table("db." + name), list(range(0, 6)))
    write(second.get_table("db." + name), list(range(6, 10)))
    out[name] = {"py": rows(pc.get_table("db." + name)), "rs": rows(rc.get_table("db." + name)),
                 "ext_blobs": ext_blobs() - before, "in_table_dir": in_table_dir(name)}
print(json.dumps(out))
'''


def test_blob_tables_with_external_paths_between_paimon_rs_and_pypaimon(pypaimon_venv, tmp_path):
    # pypaimon 2.1.0 puts .blob files under the roots (its blob writer asks the external path
    # provider, as Java's DataFilePathFactory.newBlobPath); so does paimon_rs: each reads the
    # other's, nothing in the table directory
    got = pypaimon_env.run_script_with_paimon_rs(pypaimon_venv, BLOB_SCRIPT, str(tmp_path))
    want = sorted([i, (bytes([i % 256]) * (i + 1)).hex()] for i in range(10))
    for name in ("blob_py", "blob_rs"):
        assert got[name]["py"] == got[name]["rs"] == want, name
        assert got[name]["in_table_dir"] == [], name
        assert got[name]["ext_blobs"] == 2, name
