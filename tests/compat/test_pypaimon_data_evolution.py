"""Data-evolution tables (``data-evolution.enabled``) written by pypaimon 2.1.0 and read by
paimon_rs (read/data_evolution.rs): pypaimon's row-id updates
(``new_update().with_update_type(...).update_by_arrow_with_row_id``) and writes of a column
subset (``with_write_type``) add files that hold some columns of rows other files hold; the
column-merged read takes each column from the newest file that holds it. Random rounds
(seeded) of inserts, full and partial updates across partitions are checked against a dict
model of row id -> columns and against pypaimon's own read, with projections, filters and
``_ROW_ID`` / ``_SEQUENCE_NUMBER``."""

from __future__ import annotations

import pytest

import pypaimon_env

pytestmark = pytest.mark.compat

SCRIPT = r'''
import json, random, sys
import pyarrow as pa
from pypaimon import CatalogFactory as PCF, Schema as PSchema
from paimon_rs import CatalogFactory as RCF

wh = sys.argv[1]
pc, rc = PCF.create({"warehouse": wh}), RCF.create({"warehouse": wh})
pc.create_database("db", True)
SCH = pa.schema([("id", pa.int64()), ("p", pa.string()), ("a", pa.int64()), ("b", pa.string())])
OPTS = {"row-tracking.enabled": "true", "data-evolution.enabled": "true"}
COLS = ["id", "p", "a", "b"]

def commit(wb, msgs):
    cm = wb.new_commit(); cm.commit(msgs); cm.close()

def insert(name, ids, model, p, write_cols=None):
    tb = pc.get_table(name)
    wb = tb.new_batch_write_builder(); w = wb.new_write()
    data = {"id": ids, "p": [p] * len(ids), "a": [i * 10 for i in ids], "b": ["b%d" % i for i in ids]}
    cols = write_cols or COLS
    if write_cols:
        w.with_write_type(write_cols)
    w.write_arrow(pa.table({c: data[c] for c in cols}, schema=pa.schema([SCH.field(c) for c in cols])))
    commit(wb, w.prepare_commit()); w.close()

def read(cat, name, cols, pred=None):
    tb = cat.get_table(name)
    rb = tb.new_read_builder().with_projection(cols)
    if pred is not None:
        rb = rb.with_filter(pred(rb.new_predicate_builder()))
    t = rb.new_read().to_arrow(rb.new_scan().plan().splits())
    return sorted(t.to_pylist(), key=lambda r: json.dumps(r, sort_keys=True))

out = {}
for seed in range(int(sys.argv[2])):
    rnd = random.Random(seed)
    name = "db.de%d" % seed
    pc.create_table(name, PSchema.from_pyarrow_schema(SCH, partition_keys=["p"], options=OPTS), False)
    model = {}  # row id -> row
    nxt = 0
    for rnd_i in range(rnd.randint(3, 6)):
        if not model or rnd.random() < 0.35:
            n = rnd.randint(1, 6)
            ids = list(range(100 * rnd_i, 100 * rnd_i + n))
            p = rnd.choice(["x", "y"])
            insert(name, ids, model, p)
            for i in ids:
                model[nxt] = {"id": i, "p": p, "a": i * 10, "b": "b%d" % i}
                nxt += 1
            continue
        cols = rnd.choice([["a"], ["b"], ["a", "b"]])
        rids = sorted(rnd.sample(sorted(model), rnd.randint(1, len(model))))
        upd = {"_ROW_ID": pa.array(rids, pa.int64())}
        for c in cols:
            vals = [rnd.randint(0, 99) if c == "a" else "u%d" % rnd.randint(0, 99) for _ in rids]
            if rnd.random() < 0.2:
                vals[0] = None
            upd[c] = pa.array(vals, SCH.field(c).type)
            for r, v in zip(rids, vals):
                model[r][c] = v
        tb = pc.get_table(name)
        wb = tb.new_batch_write_builder()
        up = wb.new_update().with_update_type(cols)
        commit(wb, up.update_by_arrow_with_row_id(pa.table(upd)))
    want = sorted(model.values(), key=lambda r: json.dumps(r, sort_keys=True))
    res = {"model": read(rc, name, COLS) == want,
           "pypaimon": read(pc, name, COLS) == want}
    for proj in (["b"], ["a", "id"], ["id", "_ROW_ID"], ["_ROW_ID", "b", "_SEQUENCE_NUMBER"]):
        res["proj " + ",".join(proj)] = read(rc, name, proj) == read(pc, name, proj)
    # row ids as the model numbers them
    res["row_ids"] = sorted((r["_ROW_ID"], r["id"]) for r in read(rc, name, ["_ROW_ID", "id"])) == \
        sorted((k, v["id"]) for k, v in model.items())
    # a filter on an updated column
    got = read(rc, name, COLS, lambda pb: pb.greater_than("a", 40))
    res["filter"] = got == [r for r in want if r["a"] is not None and r["a"] > 40]
    got = read(rc, name, COLS, lambda pb: pb.equal("p", "x"))
    res["partition"] = got == [r for r in want if r["p"] == "x"]
    out[name] = res

# a write of a column subset (with_write_type): new rows with the other columns null
pc.create_table("db.sub", PSchema.from_pyarrow_schema(SCH, options=OPTS), False)
insert("db.sub", [1, 2], {}, "x")
insert("db.sub", [3, 4], {}, "x", write_cols=["id", "p", "a"])
out["subset"] = [read(rc, "db.sub", COLS) == read(pc, "db.sub", COLS), read(rc, "db.sub", COLS)]
print(json.dumps(out))
'''


def test_pypaimon_data_evolution_rounds_read_by_paimon_rs(pypaimon_venv, tmp_path):
    got = pypaimon_env.run_script_with_paimon_rs(pypaimon_venv, SCRIPT, str(tmp_path), "12")
    assert len(got) == 13
    for name, r in got.items():
        if name == "subset":
            continue
        assert all(r.values()), (name, r)
    same, rows = got["subset"]
    assert same, rows
    assert {(r["id"], r["b"]) for r in rows} == {(1, "b1"), (2, "b2"), (3, None), (4, None)}
