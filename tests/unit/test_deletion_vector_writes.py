"""Deletion-vector tables written by paimon_rs (issue 27): upserts and deletes read back as the
model after every commit (reads skip level 0, so each commit's lookup compaction must have moved
its rows up and marked what they replace), the snapshot lists the bucket's index file, and a
separate compaction of such a table is refused."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest

from paimon_rs import CatalogFactory, Schema, UnsupportedError

SCHEMA = pa.schema([pa.field("k", pa.int64(), False), ("v", pa.string()), ("op", pa.string())])


def test_upserts_and_deletes_through_deletion_vectors(tmp_path):
    cat = CatalogFactory.create({"warehouse": str(tmp_path)})
    cat.create_database("db", True)
    cat.create_table("db.t", Schema.from_pyarrow_schema(SCHEMA, primary_keys=["k"], options={
        "bucket": "1", "deletion-vectors.enabled": "true", "rowkind.field": "op"}), False)
    t = cat.get_table("db.t")
    model = {}
    commits = [[(k, f"a{k}", "+I") for k in range(20)],
               [(k, f"b{k}", "+U") for k in range(0, 20, 3)] + [(1, None, "-D"), (2, None, "-D")],
               [(2, "c2", "+I"), (4, None, "-D")] + [(k, f"c{k}", "+I") for k in range(20, 25)],
               [(k, None, "-D") for k in range(5, 10)]]
    for rows in commits:
        t.write(pa.table({"k": [r[0] for r in rows], "v": [r[1] for r in rows], "op": [r[2] for r in rows]},
                         schema=SCHEMA))
        for k, v, op in rows:
            if op in ("+I", "+U"):
                model[k] = v
            else:
                model.pop(k, None)
        got = {r["k"]: r["v"] for r in t.to_arrow().to_pylist()}
        assert got == model
    snap = json.loads(sorted(Path(t.table_path.removeprefix("file:"), "snapshot").glob("snapshot-*"),
                             key=lambda p: int(p.name.split("-")[1]))[-1].read_text())
    assert snap["indexManifest"], "the snapshot lists the bucket's deletion vectors"
    assert len(list(Path(t.table_path.removeprefix("file:"), "index").glob("index-*"))) >= 1
    with pytest.raises(UnsupportedError, match="deletion-vector table"):
        t.compact(full=True)
    assert {r["k"]: r["v"] for r in t.to_arrow().to_pylist()} == model
