"""kill -9 loop: writer subprocesses are killed at random points (during write, prepare_commit,
commit, or between commits) on a table already holding data. After every kill the table is
reopened and read: every acknowledged commit is there with its exact rows, an unacknowledged one is
there completely or not at all, upserts show the latest committed batch, snapshot ids are 1..n.

Every test runs on local disk and on S3 (moto: a kill there lands between the PUTs of a commit, or
during the conditional PUT of its snapshot file); on S3 the CI loop in CI, the others under
``-m long``.

CI: 100 kills on local disk, 12 on S3. Long (``-m long``): ``PAIMON_RS_RELIABILITY_KILLS`` kills
(default 1000).
"""

from __future__ import annotations

import collections
import datetime
import json
import os
import random
import shutil
import signal
import subprocess
import time
from typing import Any, Dict, List, Optional, Set, Tuple

import pyarrow as pa
import pytest

from paimon_rs import CatalogFactory, InvalidArgumentError, Table

from rel_helpers import (
    check_snapshots,
    create_table,
    data_files,
    env_int,
    figure,
    percentile,
    read_table,
    reopen_and_read,
    run_worker,
    snapshot_ids,
    worker_cmd,
    worker_env,
    write_commit,
)
from rel_worker import KILL_SCHEMA, kill_batch, upserted_keys
from stores import Warehouse

# the CI loop runs on S3 with fewer kills; the other S3 variants only under -m long (moto is slow)
pytestmark = pytest.mark.stores("local", "s3-long")

SEED_ROWS = 2000
ROWS = 200
UPSERTS = 20
PHASES = {"W": "write", "P": "prepare_commit", "C": "commit", "A": "after commit"}


def verify(rows: pa.Table, acked: Dict[int, int], attempted: Set[int]) -> Set[int]:
    """The table holds the seed, every acknowledged batch whole, possibly the in-flight batch
    whole, nothing else; a seed key shows the latest present batch that upserted it."""
    by_id: Dict[int, Any] = {}
    for r in rows.to_pylist():
        assert r["id"] not in by_id, f"key {r['id']} read twice"
        by_id[r["id"]] = r
    present: Dict[int, int] = collections.Counter()
    for i, r in by_id.items():
        if i >= SEED_ROWS:
            b = (i - SEED_ROWS) // ROWS
            assert r["b"] == b and r["v"] == f"b{b}-{i}", f"row {r} is not batch {b}'s"
            present[b] += 1
    missing = set(acked) - set(present)
    assert not missing, f"acknowledged batches lost: {sorted(missing)}"
    assert set(present) <= attempted, f"rows of batches never written: {set(present) - attempted}"
    partial = {b: n for b, n in present.items() if n != ROWS}
    assert not partial, f"partially committed batches (batch: rows): {partial}"
    last_upsert: Dict[int, int] = {}
    for b in sorted(present):
        for k in upserted_keys(b, SEED_ROWS, UPSERTS):
            last_upsert[k] = b
    for k in range(SEED_ROWS):
        r = by_id.get(k)
        assert r is not None, f"seed key {k} lost"
        b = last_upsert.get(k)
        want = ("seed", -1) if b is None else (f"b{b}-{k}", b)
        assert (r["v"], r["b"]) == want, f"key {k}: {r} but the latest committed upsert is {want}"
    return set(present)


# how long after the marker of the phase to kill: the write and prepare_commit of a 220-row batch
# take ~3 ms each, a commit ~30 ms
DELAYS = {"W": 0.004, "P": 0.004, "C": 0.035, "A": 0.002}
# on moto a commit's requests take longer: stretch the delays so kills still spread over the commit
S3_STRETCH = 6


def kill_one(z: Any, cfg: Dict[str, Any], target: str, skip: int, delay: float,
             stderr: Any) -> Tuple[List[List[str]], int]:
    """Run one writer (forked by the zygote ``z``, or a fresh interpreter if ``z`` is None) and kill -9
    it ``delay`` s after its ``skip``+1-th ``target`` marker; returns its lines and exit code."""
    if z is None:
        p = subprocess.Popen(worker_cmd("killwriter", cfg), stdout=subprocess.PIPE, stderr=stderr, text=True,
                             env=worker_env(cfg["spill"]))
        pid: Optional[int] = p.pid
        out = p.stdout
    else:
        z.stdin.write(json.dumps(cfg) + "\n")
        z.stdin.flush()
        pid, out = None, z.stdout
    assert out is not None
    lines: List[List[str]] = []
    seen, due = 0, False
    for line in out:
        parts = line.split()
        if parts[0] == "PID":
            pid = int(parts[1])
        elif parts[0] == "EXIT":
            return lines, int(parts[2])
        else:
            lines.append(parts)
            if parts[0] == target and not due:
                due = seen == skip
                seen += 1
                if due:
                    time.sleep(delay)
        if due and pid is not None:
            os.kill(pid, signal.SIGKILL)
            pid = None
            if z is None:
                break
    if z is None:
        lines += [ln.split() for ln in p.stdout.read().splitlines()]  # type: ignore[union-attr]
        return lines, p.wait()
    pytest.fail("the zygote died")


def kill_loop(tmp_path: Any, warehouse: Warehouse, kills: int, seed: int,
              acked_out: Optional[Dict[int, int]] = None,
              table_options: Optional[Dict[str, str]] = None,
              after_kill: Optional[Any] = None) -> Dict[str, Any]:
    wh, store = warehouse.uri, warehouse.options
    spill = str(tmp_path / "spill")
    os.makedirs(spill)
    stretch = S3_STRETCH if warehouse.is_s3 else 1
    # write-only: no compaction runs here, so every file a snapshot committed stays live
    options = table_options or {"bucket": "2", "write-only": "true"}
    table = create_table(wh, "k", KILL_SCHEMA, primary_keys=["id"], options=options, store=store)
    ids = list(range(SEED_ROWS))
    write_commit(table, pa.table({"id": ids, "v": ["seed"] * SEED_ROWS, "b": [-1] * SEED_ROWS}, schema=KILL_SCHEMA))
    rng = random.Random(seed)
    acked: Dict[int, int] = {} if acked_out is None else acked_out
    attempted: Set[int] = set()
    next_b = 0
    reopen_s = []
    killed_in: Dict[str, int] = collections.Counter()
    unacked_landed = 0
    err = open(tmp_path / "stderr.txt", "w")
    zygote = subprocess.Popen(worker_cmd("zygote", {}), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err,
                              text=True, env=worker_env(spill))
    t_start = time.perf_counter()
    try:
        for k in range(kills):
            # on S3 (fewer kills) two in five land in a commit: between its PUTs
            target = rng.choice("WPCCA" if warehouse.is_s3 else "WPCA")
            cfg = {"warehouse": wh, "store": store, "table": "db.k", "start": next_b, "batches": 1000,
                   "seed_rows": SEED_ROWS, "rows": ROWS, "upserts": UPSERTS, "spill": spill,
                   # every third writer spills (a 4 kb buffer) so kills also land in spills
                   "options": {"write-buffer-size": "4 kb"} if k % 3 == 0 else {}}
            # every tenth writer is a fresh interpreter rather than a fork of the zygote
            lines, rc = kill_one(None if k % 10 == 0 else zygote, cfg, target, rng.randint(0, 2),
                                 rng.uniform(0, DELAYS[target] * stretch), err)
            if rc != -signal.SIGKILL:
                err.flush()
                pytest.fail(f"writer exited with {rc} before the kill:\n{(tmp_path / 'stderr.txt').read_text()}")
            for parts in lines:
                if parts[0] == "W":
                    attempted.add(int(parts[1]))
                elif parts[0] == "A":
                    acked[int(parts[1])] = int(parts[2])
            killed_in[PHASES[lines[-1][0]] if lines else "start-up"] += 1
            rows, dt = reopen_and_read(wh, "k", store)
            reopen_s.append(dt)
            present = verify(rows, acked, attempted)
            unacked_landed += len({b for b in present if b >= next_b} - set(acked))
            next_b = max(attempted) + 1 if attempted else next_b
            ids_now = check_snapshots(table.table_path)
            assert len(set(acked.values())) == len(acked), "two batches acknowledged one snapshot"
            assert not acked or max(acked.values()) <= ids_now[-1]
            if after_kill is not None:
                after_kill(CatalogFactory.create({"warehouse": wh, **store}).get_table("db.k"), rows)
    finally:
        zygote.stdin.close()  # type: ignore[union-attr]
        zygote.wait(timeout=60)
        err.close()
    elapsed = time.perf_counter() - t_start
    # what the kills left behind: data files no snapshot references, spill directories
    fresh = CatalogFactory.create({"warehouse": wh, **store}).get_table("db.k")
    return {"store": warehouse.store, "kills": kills, "killed_in": dict(killed_in), "acknowledged commits": len(acked),
            "unacknowledged commits that landed (whole)": unacked_landed,
            "snapshots": len(snapshot_ids(table.table_path)),
            "rows": read_table(fresh).num_rows,
            "reopen+read s median": round(percentile(reopen_s, 0.5), 4),
            "reopen+read s max": round(max(reopen_s), 4),
            # (with compaction, compacted-away files stay until expiry: not orphans of a kill)
            "orphan data files": len(orphan_data_files(fresh)) if options.get("write-only") else "n/a",
            "spill entries left": len(os.listdir(spill)),
            "failures": 0, "seconds": round(elapsed, 1)}


def orphan_data_files(table: Any) -> List[str]:
    """Data files no split of the latest snapshot reads (no compaction or expiry runs here, so
    every file a snapshot ever committed is still live)."""
    live = {full_path(table.table_path, p)
            for s in table.new_read_builder().new_scan().plan().splits() for p in s.file_paths}
    return [f for f in data_files(table.table_path) if full_path(table.table_path, f) not in live]


def full_path(table_path: str, p: str) -> str:
    """A data file's path, relative to the table or absolute (a local path or a URI), made absolute
    and normal."""
    if "://" in p:
        return p
    return os.path.normpath(os.path.join(table_path, p)) if "://" not in table_path else f"{table_path}/{p}"


@pytest.mark.stores
def test_kill_loop_ci(tmp_path, warehouse):
    kills = 12 if warehouse.is_s3 else 100
    figure(f"kill -9 loop (CI, {warehouse.store})", **kill_loop(tmp_path, warehouse, kills, seed=9))


def test_kill_loop_deletion_vectors(tmp_path):
    """kill -9 of writers of a deletion-vector table, whose every commit runs lookup compaction
    (marking superseded rows) and writes the bucket's index file: after each kill the table
    reads every acknowledged batch whole and no partial one (a killed commit's APPEND snapshot
    may land without its COMPACT one: its level-0 rows stay hidden until the next writer
    compacts them up)."""
    figure("kill -9 loop (deletion vectors, local)",
           **kill_loop(tmp_path, Warehouse(str(tmp_path / "wh")), 30, seed=27,
                       table_options={"bucket": "2", "deletion-vectors.enabled": "true"}))


def _replayed(table: Table) -> Dict[int, Tuple[Any, ...]]:
    """The table's changelog replayed onto an empty map: id -> (v, b)."""
    state: Dict[int, Tuple[Any, ...]] = {}
    for r in table.changelog(0).to_pylist():
        if r["rowkind"] in ("+I", "+U"):
            state[r["id"]] = (r["v"], r["b"])
        else:
            state.pop(r["id"], None)
    return state


@pytest.mark.parametrize("producer", ["lookup", "full-compaction"])
def test_kill_loop_changelog_producers(tmp_path, producer):
    """kill -9 of writers of a ``changelog-producer = lookup`` table (each commit's lookup
    compaction writes the changelog into its COMPACT snapshot, the lookup cache shared by the
    writers of a process) or ``full-compaction`` (each batch commit compacts its buckets fully
    and writes the changelog against the previous full compaction's result): every
    acknowledged batch reads whole, no partial one, and whenever
    the latest snapshot is a COMPACT one (the last commit's changelog landed with it) the
    changelog replayed equals the table. A kill between a commit's APPEND and COMPACT
    snapshots leaves rows whose changelog the next writer's compaction writes; after a last
    clean commit the two agree again."""
    checked = [0]

    def after_kill(table: Table, rows: pa.Table) -> None:
        snaps = table.snapshot_manager().list_snapshots()
        if snaps and snaps[-1].commit_kind == "COMPACT":
            want = {r["id"]: (r["v"], r["b"]) for r in rows.to_pylist()}
            assert _replayed(table) == want, f"after snapshot {snaps[-1].id}"
            checked[0] += 1

    figures = kill_loop(tmp_path, Warehouse(str(tmp_path / "wh")), 30, seed=31,
                        table_options={"bucket": "2", "changelog-producer": producer}, after_kill=after_kill)
    table = CatalogFactory.create({"warehouse": str(tmp_path / "wh")}).get_table("db.k")
    write_commit(table, pa.table({"id": [0], "v": ["last"], "b": [-2]}, schema=KILL_SCHEMA))
    assert table.snapshot_manager().list_snapshots()[-1].commit_kind == "COMPACT"
    assert _replayed(table) == {r["id"]: (r["v"], r["b"]) for r in read_table(table).to_pylist()}
    assert checked[0] > 0, "no kill left a COMPACT snapshot last"
    figure(f"kill -9 loop ({producer} changelog, local)", **figures, changelog_checks=checked[0])


@pytest.mark.long
def test_kill_loop_long(tmp_path, warehouse):
    n = env_int("PAIMON_RS_RELIABILITY_KILLS", 1000)
    figure(f"kill -9 loop (long, {warehouse.store})",
           **kill_loop(tmp_path, warehouse, n, seed=env_int("PAIMON_RS_RELIABILITY_SEED", 99)))


def test_kill_leftovers_reclaimed(tmp_path, warehouse):
    """After kills: remove_orphan_files removes every unreferenced data file and nothing the table
    reads; a new writer sweeps the spill directories of the killed ones."""
    figures = kill_loop(tmp_path, warehouse, 20, seed=10)
    wh, spill = warehouse.uri, str(tmp_path / "spill")
    table = CatalogFactory.create({"warehouse": wh, **warehouse.options}).get_table("db.k")
    before = read_table(table).sort_by("id")
    assert orphan_data_files(table), "the kills left no orphan to reclaim"
    time.sleep(1.1)
    removed = table.remove_orphan_files(older_than=datetime.datetime.now())
    assert orphan_data_files(table) == []
    assert read_table(table).sort_by("id").equals(before)
    rc, _lines, err = run_worker("killwriter", {"warehouse": wh, "store": warehouse.options, "table": "db.k",
                                                "start": 10_000, "batches": 1, "seed_rows": SEED_ROWS, "rows": ROWS,
                                                "upserts": UPSERTS, "options": {"write-buffer-size": "4 kb"}}, spill)
    assert rc == 0, err
    assert os.listdir(spill) == [], "spill directories of killed writers were not swept"
    figure(f"kill leftovers reclaimed ({warehouse.store})", kills=20,
           orphan_data_files_before=figures["orphan data files"],
           files_removed=len(removed.files), spill_entries_before=figures["spill entries left"], spill_entries_after=0,
           failures=0)


def test_kill_loop_every_snapshot(tmp_path, warehouse):
    """After kills, each acknowledged snapshot, read by time travel, holds exactly the batches
    committed up to it: no snapshot is partial, none shows a later batch."""
    acked: Dict[int, int] = {}
    kill_loop(tmp_path, warehouse, 20, seed=11, acked_out=acked)
    table = CatalogFactory.create({"warehouse": warehouse.uri, **warehouse.options}).get_table("db.k")
    by_snapshot = sorted((sid, b) for b, sid in acked.items())
    for n, (sid, _b) in enumerate(by_snapshot):
        rows = read_table(table.copy({"scan.snapshot-id": str(sid)}))
        present = verify(rows, {x: s for s, x in by_snapshot[: n + 1]}, set(acked) | set(range(max(acked) + 10)))
        later = {x for s, x in by_snapshot if s > sid}
        assert not present & later, f"snapshot {sid} shows batches committed after it: {present & later}"
    figure(f"kill -9 loop, every acknowledged snapshot by time travel ({warehouse.store})",
           snapshots=len(by_snapshot), failures=0)


def rel_files(root: str) -> Set[str]:
    return {os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root) for f in fs}


def stale_snapshot_rounds(tmp_path: Any, rounds: int, seed: int) -> Dict[str, Any]:
    """Each round leaves what a commit killed between creating its snapshot and withdrawing it
    leaves (docs/concurrency.md): its batch is prepared on snapshot n, other writers commit
    n+1 and newer while expiry (2 retained) deletes n+1 again, its exclusive create of n+1
    succeeds, and the process dies. No kill can be aimed at that window, so the round builds the
    state: the crashed commit's files are those of a real commit of the batch on a copy of the
    table at n (data files, manifests, lists, snapshot-(n+1)), moved in once n+1 has expired. In
    every third round LATEST names the stale snapshot (a Java writer, which never withdraws, leaves
    that), in every third EARLIEST is gone. Then a fresh reader sees every acknowledged batch and
    not the crashed one, the listing leaves the stale id out, time travel to it is refused, the
    next commit lands on the newest snapshot and its expiry removes the stale one; at the end the
    orphan clean removes the crashed batches' files and nothing the table reads."""
    rng = random.Random(seed)
    wh = str(tmp_path / "wh")
    opts = {"bucket": "2", "snapshot.num-retained.min": "2", "snapshot.num-retained.max": "2"}
    table = create_table(wh, "s", KILL_SCHEMA, primary_keys=["id"], options=opts)
    seed_ids = list(range(SEED_ROWS))
    write_commit(table, pa.table({"id": seed_ids, "v": ["seed"] * SEED_ROWS, "b": [-1] * SEED_ROWS},
                                 schema=KILL_SCHEMA))
    path = table.table_path
    acked: Dict[int, int] = {}
    crashed: List[int] = []
    crashed_files: Set[str] = set()
    b = 0
    for r in range(rounds):
        n = table.latest_snapshot_id()
        assert n is not None
        copy = str(tmp_path / f"copy-{r}" / "db.db" / "s")
        shutil.copytree(path, copy)
        before = rel_files(copy)
        # write-only: the crashed commit is one APPEND snapshot, nothing compacted or expired
        write_commit(Table.from_path(copy).copy({"write-only": "true"}),
                     kill_batch(b, SEED_ROWS, ROWS, UPSERTS))
        new = rel_files(copy) - before
        assert f"snapshot/snapshot-{n + 1}" in new and not any(
            f.startswith("snapshot/snapshot-") and f != f"snapshot/snapshot-{n + 1}" for f in new)
        crashed.append(b)
        b += 1
        for _ in range(rng.randint(2, 4)):
            acked[b] = write_commit(table, kill_batch(b, SEED_ROWS, ROWS, UPSERTS))
            b += 1
        assert not os.path.exists(os.path.join(path, "snapshot", f"snapshot-{n + 1}")), "not expired"
        for f in sorted(new):
            os.makedirs(os.path.dirname(os.path.join(path, f)), exist_ok=True)
            shutil.copy2(os.path.join(copy, f), os.path.join(path, f))
        crashed_files |= {os.path.basename(f) for f in new if f.startswith("bucket-") or "/bucket-" in f}
        shutil.rmtree(tmp_path / f"copy-{r}")
        if r % 3 == 1:
            with open(os.path.join(path, "snapshot", "LATEST"), "w") as h:
                h.write(str(n + 1))
        elif r % 3 == 2:
            os.remove(os.path.join(path, "snapshot", "EARLIEST"))
        latest = max(acked.values())
        fresh = CatalogFactory.create({"warehouse": wh}).get_table("db.s")
        assert fresh.latest_snapshot_id() == latest
        assert n + 1 in snapshot_ids(path)
        # without EARLIEST, a stale snapshot right below the retained ones is not told from the
        # earliest one (docs/concurrency.md): listed, until the next commit's expiry expires it as one
        untold = r % 3 == 2 and n + 2 == latest - 1
        assert fresh.snapshot_manager().snapshot_ids() == [n + 1] * untold + [latest - 1, latest]
        present = verify(read_table(fresh), acked, set(range(b)))
        assert not present & set(crashed), f"crashed batches read: {present & set(crashed)}"
        if not untold:
            with pytest.raises(InvalidArgumentError, match="stale"):
                read_table(fresh.copy({"scan.snapshot-id": str(n + 1)}))
        # the next commit builds on the newest snapshot; its expiry removes the stale one
        acked[b] = write_commit(fresh, kill_batch(b, SEED_ROWS, ROWS, UPSERTS))
        assert acked[b] in (latest + 1, latest + 2)  # with a writer compaction's snapshot
        assert snapshot_ids(path) == [acked[b] - 1, acked[b]]
        b += 1
        verify(read_table(fresh), acked, set(range(b)))
    before = read_table(table).sort_by("id")
    time.sleep(1.1)
    removed = table.remove_orphan_files(older_than=datetime.datetime.now())
    gone = {os.path.basename(f) for f in removed.files}
    assert crashed_files <= gone, f"crashed commits' data files left: {crashed_files - gone}"
    assert read_table(table).sort_by("id").equals(before)
    return {"rounds": rounds, "crashed commits": len(crashed), "acknowledged commits": len(acked),
            "orphan files removed": len(removed.files), "failures": 0}


def test_stale_snapshot_of_a_killed_commit(tmp_path):
    figure("stale snapshot of a commit killed before withdrawing it (CI)",
           **stale_snapshot_rounds(tmp_path, 3, seed=12))


@pytest.mark.long
def test_stale_snapshot_of_a_killed_commit_long(tmp_path):
    n = env_int("PAIMON_RS_RELIABILITY_STALE_ROUNDS", 60)
    figure("stale snapshot of a commit killed before withdrawing it (long)",
           **stale_snapshot_rounds(tmp_path, n, seed=env_int("PAIMON_RS_RELIABILITY_SEED", 99)))
