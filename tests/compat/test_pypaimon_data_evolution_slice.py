"""Slices of data-evolution plans against pypaimon 2.1.0 (``DataEvolutionSplitGenerator``'s
``with_slice``, ``DataEvolutionChunkShuffleSplitGenerator``'s ``with_chunk_shuffle``): on tables
both wrote (whole-row appends, ``with_write_type`` writes, files whose ``first_row_id`` the
caller set, updates by ``_ROW_ID``, partitions), each slice and each worker's chunks read the
same rows in both libraries (positions count the row ids of groups, in row-id order)."""

from __future__ import annotations

import pytest

import pypaimon_env

pytestmark = pytest.mark.compat

SCRIPT = r'''
import json, random, sys
import pyarrow as pa
from pypaimon import CatalogFactory as PCF
from paimon_rs import CatalogFactory as RCF, Schema as RSchema

wh = sys.argv[1]
pc, rc = PCF.create({"warehouse": wh}), RCF.create({"warehouse": wh})
rc.create_database("db", True)
SCH = pa.schema([("id", pa.int64()), ("a", pa.int64()), ("b", pa.string()), ("p", pa.string())])
COLS = ["_ROW_ID", "id", "a", "b", "p"]

def append(cat, name, data, cols=None, first=None):
    tb = cat.get_table(name)
    wb = tb.new_batch_write_builder(); w = wb.new_write()
    if cols:
        w.with_write_type(cols)
    w.write_arrow(data)
    msgs = w.prepare_commit()
    if first is not None:
        for m in msgs:
            for f in m.new_files:
                f.first_row_id = first
    cm = wb.new_commit(); cm.commit(msgs); w.close(); cm.close()

def update(cat, name, ids, col, vals):
    wb = cat.get_table(name).new_batch_write_builder()
    u = wb.new_update().with_update_type([col])
    t = pa.table({"_ROW_ID": pa.array(ids, pa.int64()), col: vals})
    cm = wb.new_commit(); cm.commit(u.update_by_arrow_with_row_id(t)); cm.close()

def read(cat, name, scan):
    rb = cat.get_table(name).new_read_builder().with_projection(COLS)
    s = scan(rb.new_scan())
    return sorted(rb.new_read().to_arrow(s.plan().splits()).to_pylist(), key=lambda r: r["_ROW_ID"])

def counts(cat, name, scan):
    splits = scan(cat.get_table(name).new_read_builder().new_scan()).plan().splits()
    return [sum(s.row_count for s in splits), sum(s.merged_row_count() for s in splits)]

out = {}
for seed in range(int(sys.argv[2])):
    rnd = random.Random(seed)
    name = "db.s%d" % seed
    parts = ["x", "y"] if seed % 2 else None
    rc.create_table(name, RSchema.from_pyarrow_schema(
        SCH, partition_keys=["p"] if parts else None,
        options={"row-tracking.enabled": "true", "data-evolution.enabled": "true"}), False)
    k, nxt = 0, 0
    for step in range(6):
        cat = rnd.choice([pc, rc])
        n = rnd.randint(1, 5)
        kind = rnd.choice(["append", "sub", "update", "colset"]) if nxt else "append"
        p = rnd.choice(parts) if parts else "x"
        if kind == "append":
            append(cat, name, pa.table({"id": list(range(k, k + n)), "a": list(range(n)),
                                        "b": ["b%d" % (k + i) for i in range(n)], "p": [p] * n}, schema=SCH))
            nxt += n
        elif kind == "sub":
            append(cat, name, pa.table({"id": list(range(k, k + n)), "p": [p] * n},
                                       schema=pa.schema([SCH.field("id"), SCH.field("p")])), ["id", "p"])
            nxt += n
        elif kind == "update":
            ids = sorted(rnd.sample(range(nxt), min(nxt, rnd.randint(1, 4))))
            update(cat, name, ids, "a", [rnd.randint(100, 999) for _ in ids])
        else:
            # new rows numbered by the caller from nextRowId on: two files of one group
            append(cat, name, pa.table({"id": list(range(k, k + n)), "p": [p] * n},
                                       schema=pa.schema([SCH.field("id"), SCH.field("p")])), ["id", "p"], nxt)
            append(cat, name, pa.table({"b": ["c%d" % i for i in range(n)], "p": [p] * n},
                                       schema=pa.schema([SCH.field("b"), SCH.field("p")])), ["b", "p"], nxt)
            append(cat, name, pa.table({"id": list(range(k, k + n)), "a": list(range(n)),
                                        "b": ["d%d" % i for i in range(n)], "p": [p] * n}, schema=SCH))
            nxt += n
        k += n
    cuts = sorted(set([0] + [rnd.randint(0, nxt) for _ in range(3)] + [nxt + 2]))
    res = {"cuts": cuts, "slices": [], "chunks": [], "counts": []}
    for lo, hi in zip(cuts, cuts[1:]):
        if lo == hi:
            continue
        f = lambda s, lo=lo, hi=hi: s.with_slice(lo, hi)
        res["slices"].append([read(pc, name, f), read(rc, name, f)])
        res["counts"].append([counts(pc, name, f), counts(rc, name, f)])
    for i in range(3):
        f = lambda s, i=i: s.with_chunk_shuffle(seed=seed, chunk_size=3).with_shard(i, 3)
        res["chunks"].append([read(pc, name, f), read(rc, name, f)])
    res["full"] = read(rc, name, lambda s: s)
    out[name] = res
print(json.dumps(out))
'''


def test_slices_match_pypaimon(pypaimon_venv, tmp_path):
    got = pypaimon_env.run_script_with_paimon_rs(pypaimon_venv, SCRIPT, str(tmp_path), "6")
    assert len(got) == 6
    for name, res in got.items():
        union = []
        for i, (py, rs) in enumerate(res["slices"]):
            assert rs == py, (name, res["cuts"], i)
            union += rs
        assert sorted(union, key=lambda r: r["_ROW_ID"]) == res["full"], name
        # Split.row_count / merged_row_count of a slice: its row-id ranges' rows (pypaimon's
        # IndexedSplit), each row once however many files hold its columns
        for i, (py, rs) in enumerate(res["counts"]):
            assert rs == py, (name, res["cuts"], i)
            assert rs[0] == len(res["slices"][i][1]), (name, i)
        union = []
        for i, (py, rs) in enumerate(res["chunks"]):
            assert rs == py, (name, "chunk shard", i)
            union += rs
        assert sorted(union, key=lambda r: r["_ROW_ID"]) == res["full"], name


FILTERED = r'''
import json, sys
import pyarrow as pa
from pypaimon import CatalogFactory as PCF
from paimon_rs import CatalogFactory as RCF, Schema as RSchema

wh = sys.argv[1]
pc, rc = PCF.create({"warehouse": wh}), RCF.create({"warehouse": wh})
rc.create_database("db", True)
SCH = pa.schema([("id", pa.int64()), ("a", pa.int64()), ("p", pa.string())])
name = "db.f"
rc.create_table(name, RSchema.from_pyarrow_schema(
    SCH, partition_keys=["p"],
    options={"row-tracking.enabled": "true", "data-evolution.enabled": "true"}), False)
for i, cat in enumerate([rc, pc, rc, pc, rc, pc]):
    tb = cat.get_table(name)
    wb = tb.new_batch_write_builder(); w = wb.new_write()
    ids = list(range(i * 5, i * 5 + 5))
    w.write_arrow(pa.table({"id": ids, "a": ids, "p": ["x" if i % 2 else "y"] * 5}, schema=SCH))
    cm = wb.new_commit(); cm.commit(w.prepare_commit()); w.close(); cm.close()

def read(cat, lo=None, hi=None, part=False):
    rb = cat.get_table(name).new_read_builder()
    pb = rb.new_predicate_builder()
    f = pb.greater_or_equal("id", 12)
    if part:
        f = pb.and_predicates([f, pb.equal("p", "x")])
    rb = rb.with_filter(f).with_projection(["_ROW_ID", "id", "a", "p"])
    s = rb.new_scan()
    if lo is not None:
        s = s.with_slice(lo, hi)
    return sorted(rb.new_read().to_arrow(s.plan().splits()).to_pylist(), key=lambda r: r["_ROW_ID"])

out = {}
for part in (False, True):
    cuts = [0, 4, 11, 17, 40]
    out[str(part)] = {"slices": [[read(pc, lo, hi, part), read(rc, lo, hi, part)]
                                 for lo, hi in zip(cuts, cuts[1:])],
                      "full": read(rc, part=part)}
print(json.dumps(out))
'''


def test_filtered_slices_count_before_statistics_as_pypaimon(pypaimon_venv, tmp_path):
    """A filter on a non-partition column whose statistics rule out whole groups: positions
    still count every row id after partition pruning (pypaimon's order), so slice k reads the
    same rows in both libraries and the slices cover the filtered read once."""
    got = pypaimon_env.run_script_with_paimon_rs(pypaimon_venv, FILTERED, str(tmp_path))
    for part, res in got.items():
        union = []
        for i, (py, rs) in enumerate(res["slices"]):
            assert rs == py, (part, i)
            union += rs
        assert sorted(union, key=lambda r: r["_ROW_ID"]) == res["full"], part
        assert res["full"], part
