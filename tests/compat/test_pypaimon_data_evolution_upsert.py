"""Upserts by key, MERGE INTO and deletes of data-evolution tables, paimon_rs and pypaimon 2.1.0
in turn: each seeded run appends, upserts (``upsert_by_arrow_with_key``), merges
(``merge_into``: matched rows updated, an unmatched one inserted), updates by ``_ROW_ID``,
deletes by row id and by predicate (deletion vectors on the groups' anchor files) with a
randomly chosen library each step; after every commit both libraries read the same rows as a
dict model keyed by ``_ROW_ID`` (so pypaimon reads paimon_rs's upserts and deletes row for
row, and paimon_rs reads pypaimon's)."""

from __future__ import annotations

import pytest
from test_pypaimon_data_evolution_write import PRELUDE

import pypaimon_env

pytestmark = pytest.mark.compat

# the write test's prelude (both catalogs over one warehouse, the schema), with deletion vectors
SCRIPT = PRELUDE + r'''
OPTS = dict(OPTS, **{"deletion-vectors.enabled": "true"})
COLS = ["_ROW_ID", "id", "a", "b"]

def read(cat, name):
    rb = cat.get_table(name).new_read_builder().with_projection(COLS)
    t = rb.new_read().to_arrow(rb.new_scan().plan().splits())
    return sorted(t.to_pylist(), key=lambda r: r["_ROW_ID"])

def commit(cat, name, make):
    wb = cat.get_table(name).new_batch_write_builder()
    msgs = make(wb)
    cm = wb.new_commit(); cm.commit(msgs); cm.close()

out = {}
for seed in range(int(sys.argv[2])):
    rnd = random.Random(seed)
    name = "db.u%d" % seed
    creator = rc if seed % 2 == 0 else pc
    S = RSchema if creator is rc else PSchema
    creator.create_table(name, S.from_pyarrow_schema(SCH, options=OPTS), False)
    model, next_id, ok = {}, 0, []
    for step in range(1, 10):
        lib = rnd.choice([rc, pc])
        who = "rs" if lib is rc else "py"
        kind = rnd.choice(["append", "upsert", "upsert", "update", "delete", "delete_pred", "merge"]
                          if model else ["append", "upsert", "merge"])
        if kind in ("append", "upsert"):
            keys = [rnd.randint(0, 12) for _ in range(rnd.randint(1, 4))]
            rows = [{"id": k, "a": step * 10 + i, "b": "%s%d-%d" % (kind[0], step, i)}
                    for i, k in enumerate(keys)]
            data = pa.Table.from_pylist(rows, schema=SCH)
            if kind == "append":
                def make(wb, data=data):
                    w = wb.new_write(); w.write_arrow(data); return w.prepare_commit()
                for r in rows:
                    model[next_id] = dict(r); next_id += 1
            else:
                def make(wb, data=data):
                    return wb.new_update().upsert_by_arrow_with_key(data, ["id"])
                last = {r["id"]: i for i, r in enumerate(rows)}
                for i in sorted(last.values()):
                    r = rows[i]
                    hits = [rid for rid, m in model.items() if m["id"] == r["id"]]
                    for rid in hits:
                        model[rid] = dict(r)
                    if not hits:
                        model[next_id] = dict(r); next_id += 1
        elif kind == "merge":
            # unique source keys (a target row matched twice is an error), at most one new key
            # (the order of several inserted rows is the join's)
            known = sorted({m["id"] for m in model.values()})
            keys = rnd.sample(known, min(len(known), rnd.randint(0, 2))) + [100 + step]
            src = pa.table({"id": pa.array(keys, pa.int64()), "a": [step * 7 + i for i in range(len(keys))],
                            "b": ["m%d-%d" % (step, i) for i in range(len(keys))]})
            def make(wb, src=src, lib=lib):
                if lib is rc:
                    from paimon_rs.table_merge_into import WhenMatched, WhenNotMatched
                else:
                    from pypaimon.ray.data_evolution_merge_transform import WhenMatched, WhenNotMatched
                return wb.new_update().merge_into(src, on=["id"], when_matched=[WhenMatched.update({"a": "s.a"})],
                                                  when_not_matched=[WhenNotMatched(insert="*")])
            by_key = {r["id"]: r for r in src.to_pylist()}
            for m in model.values():
                if m["id"] in by_key:
                    m["a"] = by_key[m["id"]]["a"]
            model[next_id] = by_key[100 + step]; next_id += 1
        elif kind == "update":
            rids = sorted(rnd.sample(sorted(model), rnd.randint(1, len(model))))
            vals = [rnd.randint(100, 199) for _ in rids]
            def make(wb, rids=rids, vals=vals):
                return wb.new_update().with_update_type(["a"]).update_by_arrow_with_row_id(
                    pa.table({"_ROW_ID": pa.array(rids, pa.int64()), "a": pa.array(vals, pa.int64())}))
            for r, v in zip(rids, vals):
                model[r]["a"] = v
        elif kind == "delete":
            rids = sorted(rnd.sample(sorted(model), rnd.randint(1, max(1, len(model) // 2))))
            def make(wb, rids=rids):
                return wb.new_update().delete_by_row_id(rids)
            for r in rids:
                del model[r]
        else:
            cut = rnd.randint(0, 12)
            def make(wb, cut=cut):
                u = wb.new_update()
                return u.delete_by_predicate(u.new_predicate_builder().less_than("id", cut))
            for r in [r for r, m in model.items() if m["id"] < cut]:
                del model[r]
        try:
            commit(lib, name, make)
        except Exception as e:
            ok.append([who, kind, "error: %s: %s" % (type(e).__name__, e), False])
            break
        want = [dict(_ROW_ID=r, **v) for r, v in sorted(model.items())]
        got_rs, got_py = read(rc, name), read(pc, name)
        ok.append([who, kind, got_rs == want, got_py == want])
        if not (got_rs == want and got_py == want):
            ok.append({"want": want, "rs": got_rs, "py": got_py})
            break
    out[name] = ok
print(json.dumps(out))
'''


def test_upserts_and_deletes_written_by_both(pypaimon_venv, tmp_path):
    got = pypaimon_env.run_script_with_paimon_rs(pypaimon_venv, SCRIPT, str(tmp_path), "10")
    assert len(got) == 10
    for name, steps in got.items():
        for step in steps:
            assert isinstance(step, list) and step[2] is True and step[3] is True, (name, steps)
