"""Updates of BLOB columns by ``_ROW_ID`` between paimon_rs and pypaimon 2.1.0 (issue #29): the
two libraries update the same table in turn (scattered rows, a null, a rolled ``.blob``
target size, two file groups), and after each update both read every row alike, equal to a dict
model; the update ``.blob`` files paimon_rs writes have pypaimon's record lengths (placeholders
-2 from the group's first row to the last updated one)."""

from __future__ import annotations

import pytest

import pypaimon_env

pytestmark = pytest.mark.compat

# a pypaimon table of (id INT, b BLOB), data evolution, .blob files rolled at SIZE
PRELUDE = r'''
import json, sys
import pyarrow as pa
from pypaimon import CatalogFactory as PCF, Schema as PSchema
from paimon_rs import CatalogFactory as RCF

wh = sys.argv[1]
pc = PCF.create({"warehouse": wh}); pc.create_database("db", True)
s = pa.schema([("id", pa.int32()), ("b", pa.large_binary())])
o = {"row-tracking.enabled": "true", "data-evolution.enabled": "true", "blob.target-file-size": "SIZE"}
pc.create_table("db.t", PSchema.from_pyarrow_schema(s, options=o), False)
'''

SCRIPT = PRELUDE.replace("SIZE", "60b") + r'''
rc = RCF.create({"warehouse": wh})
model = {}
for k in range(2):
    t = pc.get_table("db.t") if k == 0 else rc.get_table("db.t")
    ids = list(range(10 * k, 10 * k + 10))
    vals = [b"v%d" % i if i % 4 else None for i in ids]
    wb = t.new_batch_write_builder(); w = wb.new_write()
    w.write_arrow(pa.table({"id": ids, "b": vals}, schema=s))
    wb.new_commit().commit(w.prepare_commit()); w.close()
    model.update(zip(ids, vals))


def read(t):
    rb = t.new_read_builder()
    rows = rb.new_read().to_arrow(rb.new_scan().plan().splits()).to_pylist()
    return sorted([r["id"], None if r["b"] is None else r["b"].decode()] for r in rows)


out = {"steps": []}
updates = [("r", [2, 5, 13]), ("p", [5, 0, 19]), ("r", [1, 5]), ("p", [13]), ("r", [19, 3, 10])]
for n, (lib, ids) in enumerate(updates):
    t = rc.get_table("db.t") if lib == "r" else pc.get_table("db.t")
    vals = [None if (n + i) % 5 == 0 else b"u%d-%d" % (n, i) for i in ids]
    ub = t.new_batch_write_builder(); u = ub.new_update().with_update_type(["b"])
    msgs = u.update_by_arrow_with_row_id(pa.table({"_ROW_ID": pa.array(ids, pa.int64()),
                                                   "b": pa.array(vals, pa.large_binary())}))
    if lib == "r":
        out.setdefault("r_files", []).append(sorted((f.first_row_id, f.row_count) for m in msgs
                                                    for f in m.new_files))
    ub.new_commit().commit(msgs)
    model.update(zip(ids, vals))
    want = sorted([i, None if v is None else v.decode()] for i, v in model.items())
    out["steps"].append([read(pc.get_table("db.t")) == want, read(rc.get_table("db.t")) == want])
print(json.dumps(out))
'''


def test_blob_updates_in_turn_read_alike(pypaimon_venv, tmp_path):
    got = pypaimon_env.run_script_with_paimon_rs(pypaimon_venv, SCRIPT, str(tmp_path))
    # [pypaimon reads the model, paimon_rs reads the model] after each update
    assert got["steps"] == [[True, True]] * 5, got
    # paimon_rs's files: per touched group, from its first row to the last updated one (rolled
    # at 60 bytes: several files tiling that span)
    spans = [{(a, a + n) for a, n in step} for step in got["r_files"]]
    assert min(a for a, _ in spans[0]) == 0 and max(b for _, b in spans[0]) == 14, spans


ROLLED = PRELUDE.replace("SIZE", "100b") + r'''
t = pc.get_table("db.t")
for k in range(2):
    wb = t.new_batch_write_builder(); w = wb.new_write()
    ids = list(range(100 * k, 100 * k + 100))
    w.write_arrow(pa.table({"id": ids, "b": [b"v%d" % i for i in ids]}, schema=s))
    wb.new_commit().commit(w.prepare_commit()); w.close()
rt = RCF.create({"warehouse": wh}).get_table("db.t")
ub = rt.new_batch_write_builder(); u = ub.new_update().with_update_type(["b"])
ids = [5, 150, 199]
msgs = u.update_by_arrow_with_row_id(pa.table({"_ROW_ID": pa.array(ids, pa.int64()),
                                               "b": pa.array([b"R%d" % i for i in ids], pa.large_binary())}))
ub.new_commit().commit(msgs)


def read(t):
    rb = t.new_read_builder()
    rows = rb.new_read().to_arrow(rb.new_scan().plan().splits()).to_pylist()
    return {r["id"]: r["b"].decode() for r in rows if r["id"] in (4, 5, 150, 199)}


print(json.dumps({"py": read(pc.get_table("db.t")),
                  "rs": read(RCF.create({"warehouse": wh}).get_table("db.t"))}))
'''


def test_paimon_rs_update_outranks_pypaimons_rolled_blob_files(pypaimon_venv, tmp_path):
    # pypaimon stamps rolled .blob files with per-row sequence numbers (above the snapshot id
    # an update gets): paimon_rs's update .blob file must still win in both readers
    got = pypaimon_env.run_script_with_paimon_rs(pypaimon_venv, ROLLED, str(tmp_path))
    want = {"4": "v4", "5": "R5", "150": "R150", "199": "R199"}
    assert got == {"py": want, "rs": want}, got
