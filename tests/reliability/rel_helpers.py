"""Shared helpers of the reliability suites (a module name no other test folder uses).

The suites run the code under test in subprocesses (``rel_worker.py``) so that a kill -9, a race
between processes or an interpreter crash is observed from outside, as a user would see it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from typing import Any, Dict, List, Optional, Tuple

import pyarrow as pa

from paimon_rs import CatalogFactory, Schema

import stores
from table_writes import write as write_commit  # noqa: F401 - the suites import it from here

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "rel_worker.py")

# Figures the tests report; printed in the terminal summary (see conftest.py).
FIGURES: List[Tuple[str, Dict[str, Any]]] = []


def figure(test: str, **values: Any) -> None:
    """Record the figures of one test run (printed at the end of the session, and appended as a
    JSON line to $PAIMON_RS_RELIABILITY_FIGURES if set)."""
    FIGURES.append((test, values))
    path = os.environ.get("PAIMON_RS_RELIABILITY_FIGURES")
    if path:
        with open(path, "a") as f:
            f.write(json.dumps({"test": test, **values}) + "\n")


def env_int(name: str, default: int) -> int:
    """A size of a long run, overridable from the environment."""
    v = os.environ.get(name)
    return int(v) if v else default


def worker_cmd(mode: str, cfg: Dict[str, Any]) -> List[str]:
    return [sys.executable, WORKER, mode, json.dumps(cfg)]


def worker_env(tmp_dir: str) -> Dict[str, str]:
    env = dict(os.environ)
    env["PAIMON_RS_TMP_DIR"] = tmp_dir  # spill directories of killed writers stay countable
    env["PYTHONFAULTHANDLER"] = "1"
    return env


def run_worker(mode: str, cfg: Dict[str, Any], tmp_dir: str, timeout: float = 300) -> Tuple[int, List[str], str]:
    """Run one worker to completion: (exit code, stdout lines, stderr). A negative exit code is
    the signal that killed it (an interpreter crash shows as -11 / -6)."""
    p = subprocess.run(worker_cmd(mode, cfg), capture_output=True, text=True, timeout=timeout,
                       env=worker_env(tmp_dir))
    return p.returncode, p.stdout.splitlines(), p.stderr


def open_catalog(warehouse: str, store: Optional[Dict[str, str]] = None) -> Any:
    """A catalog on ``warehouse`` (a path or an object store URI reached with the ``store``
    options), with database ``db``."""
    c = CatalogFactory.create({"warehouse": warehouse, **(store or {})})
    c.create_database("db", True)
    return c


def create_table(warehouse: str, name: str, schema: pa.Schema, primary_keys: Optional[List[str]] = None,
                 partition_keys: Optional[List[str]] = None, options: Optional[Dict[str, str]] = None,
                 store: Optional[Dict[str, str]] = None) -> Any:
    c = open_catalog(warehouse, store)
    c.create_table(f"db.{name}", Schema.from_pyarrow_schema(
        schema, partition_keys=partition_keys, primary_keys=primary_keys, options=options or {}), False)
    return c.get_table(f"db.{name}")


def read_table(table: Any) -> pa.Table:
    rb = table.new_read_builder()
    return rb.new_read().to_arrow(rb.new_scan().plan().splits())


def reopen_and_read(warehouse: str, name: str, store: Optional[Dict[str, str]] = None) -> Tuple[pa.Table, float]:
    """Open the table afresh (a new catalog, as a restarted process would) and read it all;
    returns the rows and the seconds it took."""
    t0 = time.perf_counter()
    table = CatalogFactory.create({"warehouse": warehouse, **(store or {})}).get_table(f"db.{name}")
    rows = read_table(table)
    return rows, time.perf_counter() - t0


def snapshot_ids(table_path: str) -> List[int]:
    """Ids of the snapshot files of a table on local disk or S3 (tests/stores.py)."""
    return stores.snapshot_ids(table_path)


def check_snapshots(table_path: str) -> List[int]:
    """Snapshot ids are 1..n without a gap and every snapshot file is complete JSON naming its
    own id (a torn or partial snapshot file would fail here)."""
    ids = snapshot_ids(table_path)
    assert ids == list(range(1, len(ids) + 1)), f"snapshot ids not contiguous: {ids}"
    for i in ids:
        snap = stores.read_json(stores.join(table_path, "snapshot", f"snapshot-{i}"))
        assert snap["id"] == i
    return ids


def data_files(table_path: str) -> List[str]:
    """Data files under the bucket directories of a table on local disk or S3."""
    out = []
    for f in stores.walk_files(table_path):
        parent, name = f.rsplit("/", 2)[-2:]
        if parent.startswith("bucket-") and name.startswith("data-"):
            out.append(f)
    return sorted(out)


def percentile(xs: List[float], q: float) -> float:
    if not xs:
        return float("nan")
    s = sorted(xs)
    return s[min(len(s) - 1, int(round(q * (len(s) - 1))))]


def run_batched(mode: str, cfg: Dict[str, Any], n: int, tmp_dir: str, timeout: float = 600) -> Dict[int, Any]:
    """Run cases ``0..n`` of a batched worker mode (the worker prints ``S i`` before case i and
    ``R <json>`` after it). A worker that dies (an interpreter crash: exit code != 0) is reported
    for the case it was in as ``{"crash": exit code, "stderr": ...}`` and a new worker goes on
    with the next case."""
    results: Dict[int, Any] = {}
    first = 0
    while first < n:
        rc, lines, err = run_worker(mode, {**cfg, "first": first}, tmp_dir, timeout)
        current = None
        for line in lines:
            tag, _, rest = line.partition(" ")
            if tag == "S":
                current = int(rest)
            elif tag == "R" and current is not None:
                results[current] = json.loads(rest)
                current = None
        if rc == 0 and current is None:
            break
        crashed = current if current is not None else (max(results) + 1 if results else first)
        results[crashed] = {"crash": rc, "stderr": err[-3000:]}
        first = crashed + 1
    return results
