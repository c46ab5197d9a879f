"""Subprocess side of the reliability suites: ``python rel_worker.py MODE CONFIG_JSON``.

Every line it prints is flushed at once, so a parent that kills it knows exactly what it had
acknowledged. Modes:

- ``killwriter``: commit batches in a loop, printing ``W b`` / ``P b`` / ``C b`` before the write,
  prepare_commit and commit of batch ``b`` and ``A b snapshot_id`` once the commit returned.
- ``race``: in rounds driven by stdin, commit ``n`` batches, printing ``A proc c snapshot_id``
  or ``X proc c`` (CommitConflictError).
- ``fuzz``: run fuzzed write cases (fuzz_cases.py), one JSON line per case.
- ``corrupt``: read / write / read damaged table copies, one JSON line per copy.
- ``commitpickled``: commit pickled messages (a retry from another process).
- ``zygote``: fork server of ``killwriter`` children (see mode_zygote).
"""

from __future__ import annotations

import json
import random
import sys
import traceback
from typing import Any, Dict, List

import pyarrow as pa

from paimon_rs import CatalogFactory, CommitConflictError, PaimonRsError

KILL_SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), ("b", pa.int64())])


def open_table(cfg: Dict[str, Any]) -> Any:
    """The table ``cfg["table"]`` of ``cfg["warehouse"]``, reached with the store options
    ``cfg["store"]`` (an S3 warehouse) if any."""
    return CatalogFactory.create({"warehouse": cfg["warehouse"], **cfg.get("store", {})}).get_table(cfg["table"])


def say(*parts: Any) -> None:
    sys.stdout.write(" ".join(str(p) for p in parts) + "\n")
    sys.stdout.flush()


def kill_batch(b: int, seed_rows: int, rows: int, upserts: int) -> pa.Table:
    """Batch ``b``: ``rows`` new keys of its own plus ``upserts`` keys of the seed data."""
    new = list(range(seed_rows + b * rows, seed_rows + (b + 1) * rows))
    up = sorted({(b * 7919 + j * 104729) % seed_rows for j in range(upserts)})
    ids = new + up
    return pa.table({"id": ids, "v": [f"b{b}-{i}" for i in ids], "b": [b] * len(ids)}, schema=KILL_SCHEMA)


def upserted_keys(b: int, seed_rows: int, upserts: int) -> List[int]:
    return sorted({(b * 7919 + j * 104729) % seed_rows for j in range(upserts)})


def mode_killwriter(cfg: Dict[str, Any]) -> None:
    table = open_table(cfg)
    if cfg.get("options"):
        table = table.copy(cfg["options"])
    for b in range(cfg["start"], cfg["start"] + cfg["batches"]):
        data = kill_batch(b, cfg["seed_rows"], cfg["rows"], cfg["upserts"])
        wb = table.new_batch_write_builder()
        w, c = wb.new_write(), wb.new_commit()
        say("W", b)
        w.write_arrow(data)
        say("P", b)
        msgs = w.prepare_commit()
        say("C", b)
        sid = c.commit(msgs)
        say("A", b, sid)
        w.close()


def race_batch(proc: int, c: int, cfg: Dict[str, Any]) -> pa.Table:
    if cfg["shared"]:
        ids = sorted(random.Random(f"{proc}-{c}").sample(range(cfg["keys"]), cfg["keys"] // 2))
    else:
        ids = list(range(proc * 1_000_000 + c * cfg["rows"], proc * 1_000_000 + (c + 1) * cfg["rows"]))
    v = proc * 100_000 + c
    return pa.table({"id": ids, "v": [v] * len(ids)}, schema=pa.schema([("id", pa.int64()), ("v", pa.int64())]))


def mode_race(cfg: Dict[str, Any]) -> None:
    """In rounds: on ``go`` write and prepare (print ``P``), on the next ``go`` commit, so that
    the racers of a round all start from the same snapshot and commit at once."""
    table = open_table(cfg)
    proc = cfg["proc"]
    race_batch(proc, 0, cfg)  # pa.table() imports pandas on first use
    say("READY")
    for c in range(cfg["commits"]):
        sys.stdin.readline()
        wb = table.new_batch_write_builder()
        w, cm = wb.new_write(), wb.new_commit()
        w.write_arrow(race_batch(proc, c, cfg))
        msgs = w.prepare_commit()
        say("P", proc, c)
        sys.stdin.readline()
        try:
            sid = cm.commit(msgs)
            say("A", proc, c, sid)
        except CommitConflictError as e:
            say("X", proc, c, json.dumps(str(e)[:200]))
        w.close()


def mode_fuzz(cfg: Dict[str, Any]) -> None:
    import fuzz_cases

    for pos in range(cfg["first"], len(cfg["cases"])):
        say("S", pos)
        say("R", json.dumps(fuzz_cases.run_case(cfg["warehouse"], cfg["seed"], cfg["cases"][pos])))


def _outcome(fn: Any) -> Dict[str, Any]:
    try:
        return {"ok": True, "value": fn()}
    except PaimonRsError as e:
        return {"ok": False, "cls": type(e).__name__, "paimon": True, "msg": str(e)}
    except Exception as e:  # noqa: BLE001 - reported to the parent, which fails the test
        return {"ok": False, "cls": type(e).__name__, "paimon": False, "msg": str(e),
                "tb": traceback.format_exc()[-1500:]}


def _rows(table: Any) -> List[List[Any]]:
    rb = table.new_read_builder()
    t = rb.new_read().to_arrow(rb.new_scan().plan().splits())
    return sorted([r["id"], r["v"]] for r in t.to_pylist())


def mode_corrupt(cfg: Dict[str, Any]) -> None:
    """For each damaged table copy: read it, write to it, read again; one JSON line per step."""
    for idx in range(cfg["first"], len(cfg["warehouses"])):
        wh = cfg["warehouses"][idx]
        say("S", idx)

        def get(wh: str = wh) -> Any:
            return CatalogFactory.create({"warehouse": wh}).get_table("db.c")

        def write(get: Any = get) -> Any:
            table = get()
            wb = table.new_batch_write_builder()
            w, c = wb.new_write(), wb.new_commit()
            w.write_arrow(pa.table({"id": cfg["new_ids"], "v": [f"new-{i}" for i in cfg["new_ids"]]},
                                   schema=pa.schema([("id", pa.int64()), ("v", pa.string())])))
            sid = c.commit(w.prepare_commit())
            w.close()
            return sid

        out = {"idx": idx, "read": _outcome(lambda get=get: _rows(get())), "write": _outcome(write)}
        out["reread"] = _outcome(lambda get=get: _rows(get()))
        say("R", json.dumps(out))


def mode_commitpickled(cfg: Dict[str, Any]) -> None:
    """Commit pickled commit messages as ``commit_user`` (with ``identifier`` if given)."""
    import pickle

    with open(cfg["pickle"], "rb") as f:
        msgs = pickle.load(f)
    table = CatalogFactory.create({"warehouse": cfg["warehouse"]}).get_table(cfg["table"])
    wb = table.new_batch_write_builder()
    if hasattr(wb, "with_commit_user"):
        wb.with_commit_user(cfg["commit_user"])
    else:
        wb.commit_user = cfg["commit_user"]
    c = wb.new_commit()
    if cfg.get("identifier") is None:
        say(json.dumps(_outcome(lambda: c.commit(msgs))))
    else:
        say(json.dumps(_outcome(lambda: c.commit(msgs, commit_identifier=cfg["identifier"]))))


def mode_zygote(cfg: Dict[str, Any]) -> None:
    """Fork server for the kill loop (a fresh interpreter per kill would spend ~0.5 s importing
    pyarrow): for each JSON line on stdin, fork a child that runs ``killwriter`` with it, writing
    to this process's stdout, print ``PID pid``, wait for the child and print ``EXIT pid code``
    (a negative code is the signal that ended it)."""
    import os

    kill_batch(0, 10, 2, 1)  # pa.table() imports pandas on first use: do it once, here
    for line in sys.stdin:
        child_cfg = json.loads(line)
        sys.stdout.flush()
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                mode_killwriter(child_cfg)
            except BaseException:  # noqa: BLE001 - reported through the exit code and stderr
                traceback.print_exc()
                code = 1
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
        say("PID", pid)
        _, status = os.waitpid(pid, 0)
        say("EXIT", pid, os.waitstatus_to_exitcode(status))


MODES = {"zygote": mode_zygote, "commitpickled": mode_commitpickled, "killwriter": mode_killwriter,
         "race": mode_race, "fuzz": mode_fuzz, "corrupt": mode_corrupt}

if __name__ == "__main__":
    MODES[sys.argv[1]](json.loads(sys.argv[2]))
