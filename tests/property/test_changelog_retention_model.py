"""Property test (issue 27, decoupled changelog retention): after any sequence of commits and
expiries (snapshots retained 1..2, long-lived changelogs by a random retention), the changelog
retained from the earliest point still readable (a long-lived changelog or a snapshot),
replayed onto the model's state at that point, equals the model; and the orphan clean finds
nothing to remove (no file leaked, none the changelogs need deleted). ``input`` producer: the
changelog read; no producer: the delta read of the APPEND snapshots."""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Optional

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paimon_rs import CatalogFactory, Schema

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.int64()), ("op", pa.string())])

row_st = st.tuples(st.integers(0, 8), st.integers(-50, 50), st.sampled_from(["+I", "+U", "-D"]))
# a step: a commit of rows, or an expiry keeping that many changelogs
step_st = st.one_of(st.lists(row_st, min_size=1, max_size=8), st.integers(2, 6))


def _ids(root: Path, sub: str) -> List[int]:
    d = root / sub
    prefix = f"{sub}-"
    if not d.exists():
        return []
    return sorted(int(n[len(prefix):]) for n in os.listdir(d) if n.startswith(prefix) and n[len(prefix):].isdigit())


def _replay(state: Dict[int, int], records: List[dict]) -> Dict[int, int]:
    out = dict(state)
    for r in records:
        if r["rowkind"] in ("+I", "+U"):
            out[r["k"]] = r["v"]
        else:
            out.pop(r["k"], None)
    return out


@pytest.mark.parametrize("producer", ["input", "none"])
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=st.lists(step_st, min_size=1, max_size=10))
def test_retained_changelog_replays_to_the_table(producer, steps):
    options = {"bucket": "1", "rowkind.field": "op", "changelog-producer": producer,
               "num-sorted-run.compaction-trigger": "3", "snapshot.num-retained.min": "1",
               "snapshot.num-retained.max": "2", "changelog.num-retained.max": "100"}
    mode = "changelog" if producer == "input" else "delta"
    with tempfile.TemporaryDirectory() as wh:
        catalog = CatalogFactory.create({"warehouse": wh})
        catalog.create_database("db", True)
        catalog.create_table("db.t", Schema.from_pyarrow_schema(SCHEMA, primary_keys=["k"], options=options), False)
        table = catalog.get_table("db.t")
        root = Path(table.table_path.removeprefix("file:"))
        model: Dict[int, int] = {}
        #: the model's state at each snapshot id
        states: Dict[int, Dict[int, int]] = {0: {}}
        for step in steps:
            if isinstance(step, int):
                table.copy({"changelog.num-retained.max": str(step)}).expire_snapshots()
            else:
                wb = table.new_batch_write_builder()
                w, c = wb.new_write(), wb.new_commit()
                w.write_arrow(pa.Table.from_pylist([{"k": k, "v": v, "op": op} for k, v, op in step], schema=SCHEMA))
                c.commit(w.prepare_commit())
                w.close()
                for k, v, op in step:
                    if op == "-D":
                        model.pop(k, None)
                    else:
                        model[k] = v
                latest = table.latest_snapshot_id()
                for sid in range(max(states) + 1, latest + 1):
                    states[sid] = dict(model)
            latest: Optional[int] = table.latest_snapshot_id()
            if latest is None:
                continue
            assert len(_ids(root, "snapshot")) <= 2  # the rest expired into changelogs
            readable = _ids(root, "changelog") + _ids(root, "snapshot")
            start = min(readable) - 1
            # snapshot by snapshot, as a streaming read (a delta read of a range merges by
            # sequence number, which a writer restarts when a compaction left no file)
            got: List[dict] = []
            for sid in range(start + 1, latest + 1):
                rb = table.copy({"incremental-between": f"{sid - 1},{sid}",
                                 "incremental-between-scan-mode": mode}).new_read_builder()
                got += rb.new_read().to_arrow(rb.new_scan().plan().splits()).to_pylist()
            assert _replay(states[start], got) == model, (start, latest, readable)
        old = time.time() - 2 * 86400
        for dirpath, _dirs, files in os.walk(root):
            for f in files:
                os.utime(os.path.join(dirpath, f), (old, old))
        assert table.remove_orphan_files().files == []
