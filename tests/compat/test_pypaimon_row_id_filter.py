"""Filters naming ``_ROW_ID`` against pypaimon 2.1.0 (a predicate builder of a read projecting
``_ROW_ID``; ``file_scanner._row_ranges_from_predicate`` prunes a data-evolution plan by the
ids of ``=`` / ``IN`` / ``BETWEEN``): on tables both libraries wrote (appends, an update by
``_ROW_ID``), every operator, AND / OR with another column, and ``with_slice``, read the same
rows in both."""

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
SCH = pa.schema([("id", pa.int64()), ("a", pa.int64())])

def append(cat, name, ids):
    wb = cat.get_table(name).new_batch_write_builder(); w = wb.new_write()
    w.write_arrow(pa.table({"id": ids, "a": [i % 4 for i in ids]}, schema=SCH))
    cm = wb.new_commit(); cm.commit(w.prepare_commit()); w.close(); cm.close()

CASES = {
    "eq": lambda pb: pb.equal("_ROW_ID", 5),
    "in": lambda pb: pb.is_in("_ROW_ID", [1, 9, 30]),
    "between": lambda pb: pb.between("_ROW_ID", 3, 6),
    "lt": lambda pb: pb.less_than("_ROW_ID", 3),
    "gt": lambda pb: pb.greater_than("_ROW_ID", 9),
    "ge": lambda pb: pb.greater_or_equal("_ROW_ID", 9),
    "ne": lambda pb: pb.not_equal("_ROW_ID", 9),
    "not_in": lambda pb: pb.is_not_in("_ROW_ID", list(range(9))),
    "is_null": lambda pb: pb.is_null("_ROW_ID"),
    "and": lambda pb: pb.and_predicates([pb.between("_ROW_ID", 2, 9), pb.greater_than("id", 5)]),
    "or": lambda pb: pb.or_predicates([pb.equal("_ROW_ID", 2), pb.equal("a", 101)]),
    "or_ids": lambda pb: pb.or_predicates([pb.equal("_ROW_ID", 2), pb.equal("_ROW_ID", 11)]),
}

def read(cat, name, make, slice_=None):
    rb = cat.get_table(name).new_read_builder().with_projection(["_ROW_ID", "id", "a"])
    rb = rb.with_filter(make(rb.new_predicate_builder()))
    s = rb.new_scan()
    if slice_ is not None:
        s = s.with_slice(*slice_)
    return sorted(rb.new_read().to_arrow(s.plan().splits()).to_pylist(), key=lambda r: r["_ROW_ID"])

out = {}
for name, de in [("db.de", "true"), ("db.rt", "false")]:
    rc.create_table(name, RSchema.from_pyarrow_schema(SCH, options={
        "row-tracking.enabled": "true", "data-evolution.enabled": de}), False)
    for i, cat in enumerate([pc, rc, pc]):
        append(cat, name, list(range(i * 4, i * 4 + 4)))
    if de == "true":
        wb = pc.get_table(name).new_batch_write_builder()
        u = wb.new_update().with_update_type(["a"])
        t = pa.table({"_ROW_ID": pa.array(range(2, 8), pa.int64()),
                      "a": pa.array([100 + i for i in range(6)], pa.int64())})
        cm = wb.new_commit(); cm.commit(u.update_by_arrow_with_row_id(t)); cm.close()
    res = {}
    for case, make in CASES.items():
        res[case] = [read(pc, name, make), read(rc, name, make)]
    if de == "true":
        for lo, hi in [(0, 4), (3, 9), (8, 12)]:
            for case in ("between", "ge", "or_ids"):
                key = "%s@%d-%d" % (case, lo, hi)
                res[key] = [read(pc, name, CASES[case], (lo, hi)),
                            read(rc, name, CASES[case], (lo, hi))]
    rb = rc.get_table(name).new_read_builder().with_projection(["_ROW_ID", "id", "a"])
    res["full"] = rb.new_read().to_arrow(rb.new_scan().plan().splits()).to_pylist()
    out[name] = res
print(json.dumps(out))
'''


def test_row_id_filters_match_pypaimon(pypaimon_venv, tmp_path):
    got = pypaimon_env.run_script_with_paimon_rs(pypaimon_venv, SCRIPT, str(tmp_path))
    assert set(got) == {"db.de", "db.rt"}
    for name, res in got.items():
        assert [r["_ROW_ID"] for r in res["eq"][1]] == [5], name
        full = res.pop("full")
        bad = [case for case, (py, rs) in res.items() if rs != py]
        # pypaimon 2.1.0's plan of `_ROW_ID BETWEEN 2 AND 9 AND id > 5` on the plain table
        # leaves out the file paimon_rs wrote (row ids 4..7, ids 4..7: rows 6 and 7 match),
        # while `id > 5` alone keeps it (a pypaimon statistics test of the predicate built
        # under a projection with `_ROW_ID`); paimon_rs gives the exact rows, checked here
        # on the model
        if name == "db.rt":
            want = sorted((r for r in full if 2 <= r["_ROW_ID"] <= 9 and r["id"] > 5),
                          key=lambda r: r["_ROW_ID"])
            assert res["and"][1] == want
            bad = [b for b in bad if b != "and"]
        assert not bad, (name, bad)
