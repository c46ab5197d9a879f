"""Row tracking (``row-tracking.enabled``) between paimon_rs and pypaimon 2.1.0 (the oracle: the
Java 1.0 jar of the compat driver predates row tracking). A script runs in pypaimon's venv
with paimon_rs on its path: each library writes row-tracking append tables (several commits,
several files per commit, and both libraries committing to the same table in turn) that both
read with ``_ROW_ID`` and ``_SEQUENCE_NUMBER``; a data-evolution table whose files hold
different columns of the same rows (pypaimon's ``update_by_arrow_with_row_id``) is read merged
by columns (more in test_pypaimon_data_evolution.py)."""

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
LIBS = {"pypaimon": (PCF.create({"warehouse": wh}), PSchema),
        "paimon_rs": (RCF.create({"warehouse": wh}), RSchema)}
for c, _ in LIBS.values():
    c.create_database("db", True)
SCH = pa.schema([("id", pa.int64()), ("p", pa.string()), ("v", pa.string())])
COLS = ["id", "p", "_ROW_ID", "_SEQUENCE_NUMBER"]

def rows(ids):
    return pa.table({"id": ids, "p": ["a" if i % 3 else "b" for i in ids],
                     "v": ["v%d" % i for i in ids]}, schema=SCH)

def write(lib, name, data):
    tb = LIBS[lib][0].get_table(name)
    wb = tb.new_batch_write_builder(); w = wb.new_write(); w.write_arrow(data)
    cm = wb.new_commit(); cm.commit(w.prepare_commit()); w.close(); cm.close()

def read(lib, name, cols=COLS, pred=None):
    tb = LIBS[lib][0].get_table(name)
    rb = tb.new_read_builder().with_projection(cols)
    if pred is not None:
        rb = rb.with_filter(pred(rb.new_predicate_builder()))
    return sorted(rb.new_read().to_arrow(rb.new_scan().plan().splits()).to_pylist(),
                  key=lambda r: r["id"])

def next_row_id(name):
    d = wh + "/db.db/" + name.split(".")[1] + "/snapshot/"
    latest = open(d + "LATEST").read().strip()
    return json.load(open(d + "snapshot-" + latest)).get("nextRowId")

def create(lib, name, options):
    c, S = LIBS[lib]
    c.create_table(name, S.from_pyarrow_schema(SCH, partition_keys=["p"], options=options), False)

out = {}
opts = {"row-tracking.enabled": "true"}
# each library writes a table alone, then both commit to one table in turn
for name, writers in (("db.by_pypaimon", ["pypaimon"] * 3), ("db.by_paimon_rs", ["paimon_rs"] * 3),
                      ("db.mixed", ["pypaimon", "paimon_rs", "pypaimon", "paimon_rs"])):
    create(writers[0], name, opts)
    n = 0
    for lib in writers:
        write(lib, name, rows(list(range(n, n + 7))))  # two partitions: two files a commit
        n += 7
    got = {lib: read(lib, name) for lib in LIBS}
    # (pypaimon 2.1.0 fails on a filter that leaves a file's batch empty: filtered here)
    flt = {"paimon_rs": read("paimon_rs", name, pred=lambda pb: pb.greater_than("id", 9)),
           "pypaimon": [r for r in got["pypaimon"] if r["id"] > 9]}
    ids = sorted(r["_ROW_ID"] for r in got["pypaimon"])
    out[name] = {"same": got["pypaimon"] == got["paimon_rs"], "ids": ids == list(range(n)),
                 "next": next_row_id(name) == n,
                 "filtered": flt["pypaimon"] == flt["paimon_rs"] and len(flt["pypaimon"]) == n - 10,
                 "seqs": sorted({r["_SEQUENCE_NUMBER"] for r in got["paimon_rs"]}),
                 "plain": read("paimon_rs", name, ["id", "v"]) == read("pypaimon", name, ["id", "v"])}

# a delete that marks deletion vectors keeps the other rows' ids
create("paimon_rs", "db.dv", dict(opts, **{"deletion-vectors.enabled": "true"}))
write("paimon_rs", "db.dv", rows(list(range(6))))
before = read("paimon_rs", "db.dv")
LIBS["paimon_rs"][0].get_table("db.dv").delete("id = 2")
got = {lib: read(lib, "db.dv") for lib in LIBS}
out["dv"] = [got["pypaimon"] == got["paimon_rs"],
             got["paimon_rs"] == [r for r in before if r["id"] != 2],
             sorted(r["_ROW_ID"] for r in before) == list(range(6))]

# data evolution: pypaimon updates column v of rows 0..2 in a file of its own
create("pypaimon", "db.de", dict(opts, **{"data-evolution.enabled": "true"}))
write("pypaimon", "db.de", pa.table({"id": [1, 2, 3], "p": ["a"] * 3, "v": ["x", "y", "z"]}, schema=SCH))
tb = LIBS["pypaimon"][0].get_table("db.de")
wb = tb.new_batch_write_builder(); up = wb.new_update().with_update_type(["v"])
msgs = up.update_by_arrow_with_row_id(pa.table({"_ROW_ID": pa.array([0, 1, 2], pa.int64()),
                                               "p": ["a"] * 3, "v": ["X", "Y", "Z"]}))
cm = wb.new_commit(); cm.commit(msgs); cm.close()
out["de_pypaimon"] = [r["v"] for r in read("pypaimon", "db.de", ["id", "v"])]
try:
    out["de_paimon_rs"] = read("paimon_rs", "db.de", ["id", "v"])
except Exception as e:
    out["de_paimon_rs"] = "%s: %s" % (type(e).__name__, e)
print(json.dumps(out))
'''


def test_row_tracking_between_paimon_rs_and_pypaimon(pypaimon_venv, tmp_path):
    got = pypaimon_env.run_script_with_paimon_rs(pypaimon_venv, SCRIPT, str(tmp_path))
    for name, commits in (("db.by_pypaimon", 3), ("db.by_paimon_rs", 3), ("db.mixed", 4)):
        r = got[name]
        assert r["same"] and r["ids"] and r["next"] and r["filtered"] and r["plain"], (name, r)
        # a row's _SEQUENCE_NUMBER is the snapshot that added it
        assert r["seqs"] == list(range(1, commits + 1)), (name, r)
    assert got["dv"] == [True, True, True]
    assert got["de_pypaimon"] == ["X", "Y", "Z"]
    assert got["de_paimon_rs"] == [{"id": 1, "v": "X"}, {"id": 2, "v": "Y"}, {"id": 3, "v": "Z"}]
