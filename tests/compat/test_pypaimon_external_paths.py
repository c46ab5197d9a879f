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


def test_external_paths_between_paimon_rs_and_pypaimon(pypaimon_venv, tmp_path):
    got = pypaimon_env.run_script_with_paimon_rs(pypaimon_venv, SCRIPT, str(tmp_path))
    wh = str(tmp_path)
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
    for name, g in got.items():
        # no data file in the table's directory; both libraries see the same external paths,
        # each `file:<root>/dt=d<n>/bucket-<b>/<file>`
        assert g["in_table_dir"] == [], name
        assert g["ext_py"] == g["ext_rs"] and g["ext_rs"], name
        for p in g["ext_rs"]:
            assert p.startswith((f"file:{wh}/ext_a/dt=d", f"file:{wh}/ext_b/dt=d")), p
            assert p.split("/")[-2].startswith("bucket-"), p
