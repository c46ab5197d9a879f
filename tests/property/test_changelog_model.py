"""Property test (issue 27): for each changelog producer paimon_rs writes, the table's
changelog replayed onto an empty map equals the table at every snapshot, and each key's
changelog records are what the producer makes of that key's input. A ``full-compaction``
table's batch commits each compact fully, so every snapshot is a full compaction's."""

from __future__ import annotations

import tempfile
from typing import Dict, List, Tuple

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paimon_rs import CatalogFactory, Schema

SCHEMA = pa.schema([("p", pa.string()), ("k", pa.int64()), ("v", pa.int64()), ("op", pa.string())])

row_st = st.tuples(st.sampled_from(["a", "b"]), st.integers(0, 12),
                   st.one_of(st.none(), st.integers(-100, 100)),
                   st.sampled_from(["+I", "+U", "-U", "-D"]))
commits_st = st.lists(st.lists(row_st, min_size=0, max_size=20), min_size=1, max_size=5)

Key = Tuple[str, int]


def _replay(changelog: pa.Table) -> Dict[Key, Tuple]:
    state: Dict[Key, Tuple] = {}
    for r in changelog.to_pylist():
        key = (r["p"], r["k"])
        if r["rowkind"] in ("+I", "+U"):
            state[key] = (r["p"], r["k"], r["v"])
        else:
            state.pop(key, None)
    return state


def _by_key(records: List[Tuple[str, str, int, object]]) -> Dict[Key, List[Tuple]]:
    out: Dict[Key, List[Tuple]] = {}
    for kind, p, k, v in records:
        out.setdefault((p, k), []).append((kind, v))
    return out


# lookup-dv: the lookup producer on a deletion-vector table; a key deleted (its rows removed by
# vectors) and written again must find nothing (+I), not its deleted row (-U/+U)
@pytest.mark.parametrize("producer", ["input", "lookup", "lookup-dv", "full-compaction"])
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(commits=commits_st, buckets=st.integers(1, 3), small_buffer=st.booleans())
def test_changelog_replays_to_the_table(producer, commits, buckets, small_buffer):
    options = {"bucket": str(buckets), "rowkind.field": "op",
               "changelog-producer": producer.removesuffix("-dv")}
    if producer.endswith("-dv"):
        options["deletion-vectors.enabled"] = "true"
    if small_buffer:  # flushes and spills inside a commit: several changelog files a bucket
        options.update({"write-buffer-size": "64 kb", "write-buffer-spillable": "true"})
    with tempfile.TemporaryDirectory() as wh:
        catalog = CatalogFactory.create({"warehouse": wh})
        catalog.create_database("db", True)
        catalog.create_table("db.t", Schema.from_pyarrow_schema(
            SCHEMA, partition_keys=["p"], primary_keys=["p", "k"], options=options), False)
        table = catalog.get_table("db.t")
        model: Dict[Key, Tuple] = {}
        inputs: List[Tuple[str, str, int, object]] = []
        for rows in commits:
            before = table.latest_snapshot_id() or 0
            wb = table.new_batch_write_builder()
            w, c = wb.new_write(), wb.new_commit()
            if rows:
                w.write_arrow(pa.Table.from_pylist(
                    [dict(zip(SCHEMA.names, r)) for r in rows], schema=SCHEMA))
            c.commit(w.prepare_commit())
            w.close()
            for p, k, v, op in rows:
                inputs.append((op, p, k, v))
                if op in ("+I", "+U"):
                    model[(p, k)] = (p, k, v)
                else:
                    model.pop((p, k), None)
            rb = table.new_read_builder()
            got = rb.new_read().to_arrow(rb.new_scan().plan().splits()).to_pylist()
            assert {(r["p"], r["k"]): (r["p"], r["k"], r["v"]) for r in got} == model
            if table.latest_snapshot_id() is None:
                continue
            changelog = table.changelog(0)
            assert _replay(changelog) == model
            if producer == "full-compaction":
                # the commit's full compaction describes only the keys the commit wrote
                touched = {(p, k) for p, k, _, _ in rows}
                assert {(r["p"], r["k"]) for r in table.changelog(before).to_pylist()} <= touched
            if producer == "input":
                # every input record, in input order per key, with its row kind
                d = changelog.to_pydict()
                recs = list(zip(d["rowkind"], d["p"], d["k"], d["v"]))
                assert _by_key(recs) == _by_key(inputs)
