"""Data-evolution tables (``data-evolution.enabled``) written by paimon_rs and pypaimon 2.1.0 in
turn: paimon_rs creates the table and appends whole rows, both append
and column subsets (``with_write_type``: files of those columns, ``write_cols`` set, as pypaimon
writes them), both write new values of some columns of a file group (``with_write_type`` and
``first_row_id`` set on the files before the commit), and both update rows of both by ``_ROW_ID``
(``new_update().with_update_type(...).update_by_arrow_with_row_id``: paimon_rs's update files
read by pypaimon and the other way round), paimon_rs appends again.
After every commit both libraries read the same rows, ``_ROW_ID`` and the model's values (a dict
keyed by row id); pypaimon's create of such a table is read and appended to by paimon_rs."""

from __future__ import annotations

import pytest

import pypaimon_env

pytestmark = pytest.mark.compat

# both scripts: the two catalogs over one warehouse, the table's schema and options
PRELUDE = r'''
import json, random, sys
import pyarrow as pa
from pypaimon import CatalogFactory as PCF, Schema as PSchema
from paimon_rs import CatalogFactory as RCF, Schema as RSchema

wh = sys.argv[1]
pc, rc = PCF.create({"warehouse": wh}), RCF.create({"warehouse": wh})
rc.create_database("db", True)
SCH = pa.schema([("id", pa.int64()), ("a", pa.int64()), ("b", pa.string())])
OPTS = {"row-tracking.enabled": "true", "data-evolution.enabled": "true"}
'''

SCRIPT = PRELUDE + r'''
COLS = ["_ROW_ID", "id", "a", "b"]

def append(cat, name, data, cols=None):
    tb = cat.get_table(name)
    wb = tb.new_batch_write_builder(); w = wb.new_write()
    if cols:
        w.with_write_type(cols)
    w.write_arrow(data)
    cm = wb.new_commit(); cm.commit(w.prepare_commit()); w.close(); cm.close()

def read(cat, name):
    rb = cat.get_table(name).new_read_builder().with_projection(COLS)
    t = rb.new_read().to_arrow(rb.new_scan().plan().splits())
    return sorted(t.to_pylist(), key=lambda r: r["_ROW_ID"])

out = {}
for seed in range(int(sys.argv[2])):
    rnd = random.Random(seed)
    name = "db.w%d" % seed
    creator = rc if seed % 2 == 0 else pc
    S = RSchema if creator is rc else PSchema
    creator.create_table(name, S.from_pyarrow_schema(SCH, options=OPTS), False)
    model, k, ok, groups = {}, 0, [], []
    for step in range(8):
        kind = rnd.choice(["rs", "rs_sub", "py_sub", "py_update", "rs_update", "rs_update",
                           "rs_colset", "py_colset"]) if model else "rs"
        if kind.endswith("_colset"):
            # with_write_type + first_row_id set on the files: new values of some columns of
            # one file group (each append commit is one group here)
            first, n = rnd.choice(groups)
            cols = rnd.choice([["a"], ["b"], ["a", "b"]])
            vals = {c: [rnd.randint(0, 99) if c == "a" else "c%d" % rnd.randint(0, 99) for _ in range(n)]
                    for c in cols}
            tb = (pc if kind == "py_colset" else rc).get_table(name)
            wb = tb.new_batch_write_builder(); w = wb.new_write().with_write_type(cols)
            w.write_arrow(pa.table(vals, schema=pa.schema([SCH.field(c) for c in cols])))
            msgs = w.prepare_commit()
            for m in msgs:
                for f in m.new_files:
                    assert sorted(f.write_cols) == sorted(cols), (kind, f.write_cols)
                    f.first_row_id = first
            cm = wb.new_commit(); cm.commit(msgs); w.close(); cm.close()
            for i in range(n):
                for c in cols:
                    model[first + i][c] = vals[c][i]
        elif kind.endswith("_update"):
            cols = rnd.choice([["a"], ["b"], ["a", "b"]])
            rids = sorted(rnd.sample(sorted(model), rnd.randint(1, len(model))))
            upd = {"_ROW_ID": pa.array(rids, pa.int64())}
            for c in cols:
                vals = [rnd.randint(0, 99) if c == "a" else "u%d" % rnd.randint(0, 99) for _ in rids]
                upd[c] = pa.array(vals, SCH.field(c).type)
                for r, v in zip(rids, vals):
                    model[r][c] = v
            wb = (pc if kind == "py_update" else rc).get_table(name).new_batch_write_builder()
            up = wb.new_update().with_update_type(cols)
            msgs = up.update_by_arrow_with_row_id(pa.table(upd))
            cm = wb.new_commit(); cm.commit(msgs); cm.close()
        else:
            n = rnd.randint(1, 4)
            data = {"id": list(range(k, k + n)), "a": [i * 10 for i in range(k, k + n)],
                    "b": ["b%d" % i for i in range(k, k + n)]}
            k += n
            cols = None if kind == "rs" else rnd.choice([["id", "a"], ["id", "b"]])
            full = cols or ["id", "a", "b"]
            t = pa.table({c: data[c] for c in full}, schema=pa.schema([SCH.field(c) for c in full]))
            append(rc if kind.startswith("rs") else pc, name, t, cols)
            base = len(model)
            groups.append((base, n))
            for i in range(n):
                model[base + i] = {c: (data[c][i] if c in full else None) for c in ("id", "a", "b")}
        want = [dict(_ROW_ID=r, **v) for r, v in sorted(model.items())]
        got_rs, got_py = read(rc, name), read(pc, name)
        ok.append([kind, got_rs == want, got_py == want])
    out[name] = ok
print(json.dumps(out))
'''


def test_data_evolution_written_by_both(pypaimon_venv, tmp_path):
    got = pypaimon_env.run_script_with_paimon_rs(pypaimon_venv, SCRIPT, str(tmp_path), "8")
    assert len(got) == 8
    for name, steps in got.items():
        for _kind, rs, py in steps:
            assert rs and py, (name, steps)


GLOBAL_INDEX = PRELUDE + r'''
from paimon_rs.exceptions import UnsupportedError
rc.create_table("db.g", RSchema.from_pyarrow_schema(SCH, options=OPTS), False)

def append(data):
    wb = rc.get_table("db.g").new_batch_write_builder(); w = wb.new_write()
    w.write_arrow(pa.table(data, schema=SCH)); wb.new_commit().commit(w.prepare_commit())

def update(col, value):
    wb = rc.get_table("db.g").new_batch_write_builder()
    msgs = wb.new_update().with_update_type([col]).update_by_arrow_with_row_id(
        pa.table({"_ROW_ID": pa.array([0], pa.int64()), col: pa.array([value], SCH.field(col).type)}))
    wb.new_commit().commit(msgs)

append({"id": [1, 2, 3], "a": [10, 20, 30], "b": ["x", "y", "z"]})
out = {"indexed": pc.get_table("db.g").create_global_index("a", "btree")}
append({"id": [4], "a": [40], "b": ["w"]})
before = rc.get_table("db.g").latest_snapshot_id()
try:
    update("a", 5)
    out["a"] = "committed"
except UnsupportedError as e:
    out["a"] = str(e)
out["unchanged"] = rc.get_table("db.g").latest_snapshot_id() == before
update("b", "q")
pt = pc.get_table("db.g")
rb = pt.new_read_builder()
out["py"] = sorted(rb.new_read().to_arrow(rb.new_scan().plan().splits()).to_pylist(), key=lambda r: r["id"])
rb = pt.new_read_builder().with_filter(pt.new_read_builder().new_predicate_builder().equal("a", 20))
out["py_a20"] = rb.new_read().to_arrow(rb.new_scan().plan().splits()).to_pylist()
print(json.dumps(out))
'''


def test_updates_of_globally_indexed_columns_are_refused(pypaimon_venv, tmp_path):
    """pypaimon builds a btree global index over ``a`` of a table paimon_rs wrote: paimon_rs's
    appends keep it, an update of ``a`` is refused before anything is committed (the index would
    answer with the old values; pypaimon's THROW_ERROR), an update of ``b`` commits, and
    pypaimon's indexed lookup still finds its rows."""
    got = pypaimon_env.run_script_with_paimon_rs(pypaimon_venv, GLOBAL_INDEX, str(tmp_path))
    assert got["indexed"] >= 1
    assert "global index" in got["a"] and "btree" in got["a"], got["a"]
    assert got["unchanged"]
    assert got["py"] == [{"id": 1, "a": 10, "b": "q"}, {"id": 2, "a": 20, "b": "y"},
                         {"id": 3, "a": 30, "b": "z"}, {"id": 4, "a": 40, "b": "w"}]
    assert got["py_a20"] == [{"id": 2, "a": 20, "b": "y"}]
