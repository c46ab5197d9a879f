"""Four writer processes race on one table.

- distinct keys: nothing is lost (every acknowledged commit's rows are there, a commit refused with
  CommitConflictError left nothing), snapshot ids are contiguous, one snapshot per acknowledged
  commit.
- shared keys: every key shows the value of the acknowledged commit with the highest snapshot id
  that wrote it: a later commit is never hidden by an earlier one (a commit that could be hidden
  must raise CommitConflictError instead; the conflicts raised are counted).

CI: 4 x 25 commits each, on local disk and on S3 (moto; the snapshot file is a conditional
create-only PUT there). Long (``-m long``): 4 x ``PAIMON_RS_RELIABILITY_RACE_COMMITS`` (200).
"""

from __future__ import annotations

import json
import os
import subprocess
from typing import Any, Dict, Tuple

import pyarrow as pa
import pytest

from rel_helpers import check_snapshots, create_table, env_int, figure, read_table, worker_cmd, worker_env
from rel_worker import race_batch
from stores import Warehouse

# on S3 and GCS only under -m long (~40 s of CPU per race on moto); CI races 4 processes on S3
# and on GCS in tests/unit/test_object_store.py
pytestmark = pytest.mark.stores("local", "s3-long", "gcs-long")

PROCS = 4
RACE_SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.int64())])


def race(tmp_path: Any, warehouse: Warehouse, shared: bool,
         commits: int) -> Tuple[Any, Dict[Tuple[int, int], int], int]:
    wh = warehouse.uri
    spill = str(tmp_path / "spill")
    os.makedirs(spill, exist_ok=True)
    # write-only: one snapshot per commit (compacting writers add COMPACT snapshots and their
    # compactions of shared buckets conflict, as Java's concurrent writers do)
    table = create_table(wh, "r", RACE_SCHEMA, primary_keys=["id"], options={"bucket": "2", "write-only": "true"},
                         store=warehouse.options)
    cfg = {"warehouse": wh, "store": warehouse.options, "table": "db.r", "commits": commits, "shared": shared,
           "keys": 64, "rows": 50}
    procs = []
    for p in range(PROCS):
        err = open(tmp_path / f"err{p}.txt", "w")
        procs.append((subprocess.Popen(worker_cmd("race", {**cfg, "proc": p}), stdin=subprocess.PIPE,
                                       stdout=subprocess.PIPE, stderr=err, text=True, env=worker_env(spill)), err))
    for p, _ in procs:
        assert p.stdout is not None and p.stdout.readline().strip() == "READY"
    acked: Dict[Tuple[int, int], int] = {}
    conflicts = 0

    def step(want: str) -> None:
        nonlocal conflicts
        for _p, _err in procs:
            assert _p.stdin is not None
            _p.stdin.write("go\n")
            _p.stdin.flush()
        for i, (_p, _err) in enumerate(procs):
            assert _p.stdout is not None
            line = _p.stdout.readline()
            parts = line.split(" ", 3)
            if parts[0] == "A":
                acked[(int(parts[1]), int(parts[2]))] = int(parts[3])
            elif parts[0] == "X":
                conflicts += 1
                assert "conflict" in json.loads(parts[3]).lower()
            if parts[0] not in want:
                _p.kill()
                pytest.fail(f"racer {i} said {line!r}:\n{(tmp_path / f'err{i}.txt').read_text()}")

    for _c in range(commits):
        step("P")
        step("AX")
    for i, (p, err) in enumerate(procs):
        assert p.wait(timeout=60) == 0, (tmp_path / f"err{i}.txt").read_text()
        err.close()
    ids = check_snapshots(table.table_path)
    assert sorted(acked.values()) == ids, "snapshots do not match the acknowledged commits one to one"
    return table, acked, conflicts


def test_race_distinct_keys(tmp_path, warehouse, commits=25):
    table, acked, conflicts = race(tmp_path, warehouse, shared=False, commits=commits)
    got = sorted((r["id"], r["v"]) for r in read_table(table).to_pylist())
    cfg = {"shared": False, "rows": 50, "keys": 64}
    want = sorted((i, proc * 100_000 + c) for (proc, c) in acked
                  for i in race_batch(proc, c, cfg).column("id").to_pylist())
    assert got == want
    figure(f"4-process race, distinct keys ({commits}/process, {warehouse.store})", commits=PROCS * commits,
           acknowledged=len(acked), conflicts_raised=conflicts, lost_rows=0, failures=0)


def shared_expected(acked: Dict[Tuple[int, int], int]) -> Dict[int, int]:
    cfg = {"shared": True, "rows": 50, "keys": 64}
    want: Dict[int, int] = {}
    for (proc, c), _sid in sorted(acked.items(), key=lambda kv: kv[1]):
        for i in race_batch(proc, c, cfg).column("id").to_pylist():
            want[i] = proc * 100_000 + c
    return want


def check_shared(tmp_path: Any, warehouse: Warehouse, commits: int) -> Dict[str, Any]:
    table, acked, conflicts = race(tmp_path, warehouse, shared=True, commits=commits)
    got = {r["id"]: r["v"] for r in read_table(table).to_pylist()}
    want = shared_expected(acked)
    by_value = {proc * 100_000 + c: sid for (proc, c), sid in acked.items()}
    hidden = {k: (got.get(k), want[k]) for k in want if got.get(k) != want[k]}
    assert set(got) == set(want)
    assert not hidden, (f"{len(hidden)} of {len(want)} keys show an earlier commit than the latest acknowledged "
                        f"one (key: (value read, snapshot of it), (value wanted, its snapshot)): "
                        f"{ {k: ((g, by_value.get(g)), (w, by_value[w])) for k, (g, w) in list(hidden.items())[:5]} }")
    return {"commits": PROCS * commits, "acknowledged": len(acked), "conflicts_raised": conflicts,
            "hidden_keys": 0, "failures": 0}


def test_race_shared_keys(tmp_path, warehouse):
    figure(f"4-process race, shared keys (25/process, {warehouse.store})", **check_shared(tmp_path, warehouse, 25))


@pytest.mark.long
def test_race_distinct_keys_long(tmp_path, warehouse):
    test_race_distinct_keys(tmp_path, warehouse, commits=env_int("PAIMON_RS_RELIABILITY_RACE_COMMITS", 200))


@pytest.mark.long
def test_race_shared_keys_long(tmp_path, warehouse):
    n = env_int("PAIMON_RS_RELIABILITY_RACE_COMMITS", 200)
    figure(f"4-process race, shared keys ({n}/process, {warehouse.store})", **check_shared(tmp_path, warehouse, n))
