"""The lookup cache of a table outlives its writers (issue 27): a writer per commit reuses the
lookup files of unchanged data files; ``paimon_rs.release_lookup_caches`` frees what no writer
holds, after which writes build them again and stay right."""

from __future__ import annotations

import pyarrow as pa

import paimon_rs
from paimon_rs import CatalogFactory, Schema

SCHEMA = pa.schema([pa.field("k", pa.int64(), False), ("v", pa.int64())])


def test_release_frees_the_cache_and_writes_stay_right(tmp_path):
    cat = CatalogFactory.create({"warehouse": str(tmp_path)})
    cat.create_database("db", True)
    cat.create_table("db.t", Schema.from_pyarrow_schema(SCHEMA, primary_keys=["k"], options={
        "bucket": "1", "changelog-producer": "lookup"}), False)
    t = cat.get_table("db.t")
    model = {k: k for k in range(2000)}
    t.write(pa.table({"k": list(model), "v": list(model.values())}, schema=SCHEMA))
    for i in range(1, 4):
        rows = {k: i * 10_000 + k for k in range(i, 2000, 97)}
        t.write(pa.table({"k": list(rows), "v": list(rows.values())}, schema=SCHEMA))
        model.update(rows)
    assert paimon_rs.release_lookup_caches() > 0, "the table's cache held its lookup files"
    assert paimon_rs.release_lookup_caches() == 0, "nothing left to free"
    rows = {k: -k for k in range(0, 2000, 89)}
    t.write(pa.table({"k": list(rows), "v": list(rows.values())}, schema=SCHEMA))
    model.update(rows)
    assert {r["k"]: r["v"] for r in t.to_arrow().to_pylist()} == model
    # the changelog of the last commit: -U/+U of each updated key, looked up afresh
    last = t.changelog(t.latest_snapshot_id() - 2, t.latest_snapshot_id()).to_pylist()
    assert sorted(r["rowkind"] for r in last) == sorted(["-U", "+U"] * len(rows))
