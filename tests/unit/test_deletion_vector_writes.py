"""Deletion-vector tables written by paimon_rs (issue 27): upserts and deletes read back as the
model after every commit (reads skip level 0, so each commit's lookup compaction must have moved
its rows up and marked what they replace), the snapshot lists the bucket's index file, mostly
deleted max-level files are rewritten (paimon-behaviour.md §3.8), and a dedicated compaction
(``table.compact()``, as Java's compaction job behind ``write-only`` writers) keeps the vectors as
a writer does."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest

from paimon_rs import CatalogFactory, Schema

SCHEMA = pa.schema([pa.field("k", pa.int64(), False), ("v", pa.string()), ("op", pa.string())])


def test_upserts_and_deletes_through_deletion_vectors(tmp_path):
    cat = CatalogFactory.create({"warehouse": str(tmp_path)})
    cat.create_database("db", True)
    # threshold 1: the max-level file keeps its vector however much it marks (§3.8 would
    # rewrite this small table's file at every commit, leaving no vector to list)
    cat.create_table("db.t", Schema.from_pyarrow_schema(SCHEMA, primary_keys=["k"], options={
        "bucket": "1", "deletion-vectors.enabled": "true", "rowkind.field": "op",
        "compaction.delete-ratio-threshold": "1"}), False)
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
    # a full compaction rewrites every run into the max level: no vector is left
    assert t.compact(full=True) is not None
    assert {r["k"]: r["v"] for r in t.to_arrow().to_pylist()} == model
    at_top, marked = _files_and_vectors(cat, "db.t")
    assert sum(at_top.values()) == len(model) and not marked
    assert t.compact(full=True) is None


def _files_and_vectors(cat, name):
    """(max-level files as {file name: row count}, {file name: rows its vector marks})."""
    files = cat.get_table(f"{name}$files").to_arrow().to_pylist()
    top = max(f["level"] for f in files)
    at_top = {f["file_path"].rsplit("/", 1)[-1]: f["record_count"] for f in files if f["level"] == top}
    marked = {}
    for ix in cat.get_table(f"{name}$table_indexes").to_arrow().to_pylist():
        for r in ix["dv_ranges"] or []:
            marked[r["f0"]] = r["_CARDINALITY"]
    return at_top, marked


@pytest.mark.parametrize("threshold", [None, "0.5"])
def test_a_mostly_deleted_max_level_file_is_rewritten_without_its_deleted_rows(tmp_path, threshold):
    """paimon-behaviour.md §3.8: once a max-level file's vector marks more than
    ``compaction.delete-ratio-threshold`` (0.2) of its rows, the commit rewrites it without them."""
    cat = CatalogFactory.create({"warehouse": str(tmp_path)})
    cat.create_database("db", True)
    options = {"bucket": "1", "deletion-vectors.enabled": "true"}
    if threshold:
        options["compaction.delete-ratio-threshold"] = threshold
    schema = pa.schema([pa.field("k", pa.int64(), False), ("v", pa.string())])
    cat.create_table("db.t", Schema.from_pyarrow_schema(schema, primary_keys=["k"], options=options), False)
    t = cat.get_table("db.t")
    model = {k: "a" for k in range(1000)}
    t.write(pa.table({"k": list(model), "v": list(model.values())}, schema=schema))
    (base, rows), = _files_and_vectors(cat, "db.t")[0].items()
    assert rows == 1000
    for lo, hi in [(0, 100), (100, 250)]:  # 10% of the base file's rows, then 25% in all
        t.write(pa.table({"k": list(range(lo, hi)), "v": ["b"] * (hi - lo)}, schema=schema))
        model.update({k: "b" for k in range(lo, hi)})
        assert {r["k"]: r["v"] for r in t.to_arrow().to_pylist()} == model
        at_top, marked = _files_and_vectors(cat, "db.t")
        if hi == 100 or threshold:
            assert base in at_top and marked[base] == hi, (at_top, marked)
        else:
            # rewritten: the base file and its vector are gone, its 750 live rows in a new file
            assert base not in at_top and base not in marked, (at_top, marked)
            assert sorted(at_top.values()) == [750]
    assert {r["k"]: r["v"] for r in t.to_arrow().to_pylist()} == model


def test_dedicated_compaction_behind_write_only_writers(tmp_path):
    """Java's deployment of a deletion-vector table: ``write-only`` writers leave level-0 files
    (invisible to reads, which skip level 0), a compaction job moves them up by lookup, marking
    the rows they supersede; the bucket's new index file replaces the old one."""
    cat = CatalogFactory.create({"warehouse": str(tmp_path)})
    cat.create_database("db", True)
    schema = pa.schema([pa.field("k", pa.int64(), False), ("v", pa.string())])
    cat.create_table("db.t", Schema.from_pyarrow_schema(schema, primary_keys=["k"], options={
        "bucket": "2", "deletion-vectors.enabled": "true", "write-only": "true",
        "compaction.delete-ratio-threshold": "1"}), False)
    t = cat.get_table("db.t")
    model = {}
    for c, keys in enumerate([range(0, 4000), range(0, 4000, 97), range(3990, 4020), range(5, 4000, 101)]):
        t.write(pa.table({"k": list(keys), "v": [f"{c}"] * len(keys)}, schema=schema))
        model.update({k: f"{c}" for k in keys})
        if c == 0:
            assert t.to_arrow().num_rows == 0, "level 0 is not read"
            assert t.compact(full=False) is not None
            assert {r["k"]: r["v"] for r in t.to_arrow().to_pylist()} == model
    assert t.to_arrow().num_rows < len(model), "the later commits wait in level 0"
    assert t.compact(full=False) is not None
    assert {r["k"]: r["v"] for r in t.to_arrow().to_pylist()} == model
    files = cat.get_table("db.t$files").to_arrow().to_pylist()
    assert files and all(f["level"] > 0 for f in files)
    _, marked = _files_and_vectors(cat, "db.t")
    # the first compaction's files hold the superseded versions, now marked
    assert marked and sum(marked.values()) == sum(f["record_count"] for f in files) - len(model)
    indexes = cat.get_table("db.t$table_indexes").to_arrow().to_pylist()
    assert sorted(ix["bucket"] for ix in indexes) == [0, 1], "one live index file per bucket"


def test_compaction_plan_shows_the_deleted_rows_pick(tmp_path):
    """§3.8 in ``compaction_plan``: a max-level file whose vector marks more than the threshold is
    listed as a ``deleted-rows`` pick (from the vectors' cardinalities), which ``compact()`` runs."""
    cat = CatalogFactory.create({"warehouse": str(tmp_path)})
    cat.create_database("db", True)
    schema = pa.schema([pa.field("k", pa.int64(), False), ("v", pa.string())])
    cat.create_table("db.t", Schema.from_pyarrow_schema(schema, primary_keys=["k"], options={
        "bucket": "1", "deletion-vectors.enabled": "true", "compaction.delete-ratio-threshold": "0.5"}), False)
    t = cat.get_table("db.t")
    t.write(pa.table({"k": list(range(1000)), "v": ["a"] * 1000}, schema=schema))
    t.write(pa.table({"k": list(range(300)), "v": ["b"] * 300}, schema=schema))
    (base, _), = [(f, n) for f, n in _files_and_vectors(cat, "db.t")[0].items() if n == 1000]
    assert _files_and_vectors(cat, "db.t")[1][base] == 300
    # 30% marked: under the table's 0.5, no pick of it
    (plan,) = t.compaction_plan()
    assert "deleted-rows" not in [p.reason for p in plan.picks], plan
    # under 0.2 the plan shows it, and the compaction it describes rewrites the file
    t2 = t.copy({"compaction.delete-ratio-threshold": "0.2"})
    (plan,) = t2.compaction_plan()
    deleted = [p for p in plan.picks if p.reason == "deleted-rows"]
    assert len(deleted) == 1 and deleted[0].files == 1 and deleted[0].rows == 1000, plan
    assert deleted[0].output_level == max(r.level for r in plan.runs)
    assert "compaction.delete-ratio-threshold" in plan.explanation
    assert t2.compact(full=False) is not None
    at_top, marked = _files_and_vectors(cat, "db.t")
    assert base not in at_top and base not in marked
    assert {r["k"]: r["v"] for r in t.to_arrow().to_pylist()} == {k: "b" if k < 300 else "a" for k in range(1000)}
    (plan,) = t2.compaction_plan()
    assert "deleted-rows" not in [p.reason for p in plan.picks], plan
