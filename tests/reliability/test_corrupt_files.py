"""Every kind of table file damaged: truncated, byte-flipped (16 bytes XOR 0xFF at random
offsets), emptied, deleted; and every snapshot file deleted with the hints left. A read, a
write and a second read of the damaged table each either
raise a PaimonRsError subclass whose message names the damaged file (or, for a hint, the snapshot
it names), or return exactly the committed rows; never wrong rows, never an interpreter crash (the
reads run in a subprocess, see rel_helpers.run_batched).

CI: 6 flips per kind (12 in the data file). Long (``-m long``): ``PAIMON_RS_RELIABILITY_FLIPS``
(default 60) per kind.
"""

from __future__ import annotations

import collections
import glob
import json
import os
import random
import shutil
from typing import Any, Dict, List, Tuple

import pyarrow as pa
import pytest

from rel_helpers import create_table, data_files, env_int, figure, run_batched, write_commit

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])
NEW_IDS = [1000, 1001, 1002]
# commit 1 writes ids 0..299, commit 2 upserts 0..99 and adds 300..399
COMMITTED = sorted([i, f"c2-{i}" if i < 100 or i >= 300 else f"c1-{i}"] for i in range(400))


def make_template(path: str) -> str:
    table = create_table(path, "c", SCHEMA, primary_keys=["id"], options={"bucket": "2"})
    write_commit(table, pa.table({"id": list(range(300)), "v": [f"c1-{i}" for i in range(300)]}, schema=SCHEMA))
    ids = list(range(100)) + list(range(300, 400))
    write_commit(table, pa.table({"id": ids, "v": [f"c2-{i}" for i in ids]}, schema=SCHEMA))
    earliest = os.path.join(table.table_path, "snapshot", "EARLIEST")
    if not os.path.exists(earliest):  # written by Java's snapshot expiration; paimon_rs does not expire yet
        with open(earliest, "w") as f:
            f.write("1")
    return table.table_path


def file_of_kind(table_path: str, kind: str) -> str:
    if kind == "every snapshot file":
        return os.path.join(table_path, "snapshot", "snapshot-*")
    snap_dir = os.path.join(table_path, "snapshot")
    with open(os.path.join(snap_dir, "snapshot-2")) as f:
        snap = json.load(f)
    manifest_dir = os.path.join(table_path, "manifest")
    return {
        "snapshot (latest)": os.path.join(snap_dir, "snapshot-2"),
        "snapshot (older)": os.path.join(snap_dir, "snapshot-1"),
        "LATEST hint": os.path.join(snap_dir, "LATEST"),
        "EARLIEST hint": os.path.join(snap_dir, "EARLIEST"),
        "schema": os.path.join(table_path, "schema", "schema-0"),
        "manifest list (base)": os.path.join(manifest_dir, snap["baseManifestList"]),
        "manifest list (delta)": os.path.join(manifest_dir, snap["deltaManifestList"]),
        "manifest": sorted(os.path.join(manifest_dir, f) for f in os.listdir(manifest_dir)
                           if f.startswith("manifest-") and not f.startswith("manifest-list-"))[0],
        "data file": data_files(table_path)[0],
    }[kind]


def damages(size: int, flips: int, rng: random.Random) -> List[Tuple[str, Any]]:
    out: List[Tuple[str, Any]] = [("truncate", None), ("empty", None), ("delete", None)]
    out += [("flip", rng.randrange(max(1, size))) for _ in range(flips)]
    return out


def damage(path: str, how: str, at: Any) -> None:
    if path.endswith("*"):  # every snapshot file: the hints stay, the snapshots go
        for f in glob.glob(path):
            os.remove(f)
        return
    if how == "delete":
        os.remove(path)
        return
    with open(path, "rb") as f:
        data = bytearray(f.read())
    if how == "truncate":
        data = data[: len(data) // 2]
    elif how == "empty":
        data = bytearray()
    else:
        for i in range(at, min(len(data), at + 16)):
            data[i] ^= 0xFF
    with open(path, "wb") as f:
        f.write(bytes(data))


def names_file(msg: str, path: str, table_path: str) -> bool:
    name = os.path.basename(path)
    if name == "snapshot-*":
        return "snapshot" in msg
    if name in msg:
        return True
    if name in ("LATEST", "EARLIEST"):  # a damaged hint may be reported as the snapshot it names
        return "snapshot-" in msg
    if name.startswith("schema-"):  # no schema file: the table does not exist (as in Java)
        return "table not found" in msg
    return False


def check_kind(tmp_path: Any, kind: str, flips: int, corrupt_class: bool = False) -> Dict[str, Any]:
    """``corrupt_class``: an error must also be a CorruptFileError (item 11: a damaged or missing
    file the table references is corruption, not an I/O error)."""
    template_wh = str(tmp_path / "template")
    template = make_template(template_wh)
    rel = os.path.relpath(file_of_kind(template, kind), template_wh)
    rng = random.Random(f"{kind}-{flips}")
    if rel.endswith("*"):
        cases: List[Tuple[str, Any]] = [("delete", None)]
    else:
        cases = damages(os.path.getsize(os.path.join(template_wh, rel)), flips, rng)
    whs = []
    for n, (how, at) in enumerate(cases):
        wh = str(tmp_path / f"case{n}")
        shutil.copytree(template_wh, wh)
        damage(os.path.join(wh, rel), how, at)
        whs.append(wh)
    os.makedirs(tmp_path / "spill")
    results = run_batched("corrupt", {"warehouses": whs, "new_ids": NEW_IDS}, len(whs), str(tmp_path / "spill"))
    bad, errors, exact = [], 0, 0
    classes: Dict[str, int] = collections.Counter()
    after_write = sorted(COMMITTED + [[i, f"new-{i}"] for i in NEW_IDS])
    for n, (how, at) in enumerate(cases):
        r = results.get(n)
        label = f"{how}@{at}" if at is not None else how
        if r is None or "crash" in r:
            bad.append(f"{label}: worker crashed {r}")
            continue
        wrote = r["write"]["ok"]
        for step, want in (("read", COMMITTED), ("reread", after_write if wrote else COMMITTED)):
            o = r[step]
            if o["ok"]:
                if o["value"] == want:
                    exact += 1
                else:
                    got = o["value"]
                    bad.append(f"{label} {step}: wrong rows ({len(got)} rows, wanted {len(want)}; "
                               f"first differences {[x for x in got if x not in want][:3]})")
            elif not o["paimon"]:
                bad.append(f"{label} {step}: {o['cls']} is not a PaimonRsError: {o['msg']}\n{o.get('tb')}")
            elif not names_file(o["msg"], rel, wh):
                bad.append(f"{label} {step}: {o['cls']} does not name {os.path.basename(rel)}: {o['msg']}")
            elif corrupt_class and o["cls"] not in ("CorruptFileError", "TableNotFoundError"):
                bad.append(f"{label} {step}: {o['cls']} where CorruptFileError is meant: {o['msg']}")
            else:
                errors += 1
                classes[o["cls"]] += 1
        if not wrote and not r["write"]["paimon"]:
            bad.append(f"{label} write: {r['write']['cls']} is not a PaimonRsError: {r['write']['msg']}")
    assert not bad, f"{kind}: {len(bad)} of {len(cases)} damages misbehaved:\n" + "\n".join(bad)
    return {"cases": len(cases), "reads exact": exact, "clear errors": errors, "error classes": dict(classes),
            "failures": 0}


KINDS = {
    "snapshot (latest)": None,
    "snapshot (older)": None,
    "every snapshot file": None,
    "LATEST hint": None,
    "EARLIEST hint": None,
    "schema": None,
    "manifest list (base)": None,
    "manifest list (delta)": None,
    "manifest": None,
    "data file": None,
}


def kind_params(long: bool) -> List[Any]:
    marks = [pytest.mark.long] if long else []
    return [pytest.param(k, marks=marks + ([pytest.mark.xfail(strict=True, reason=r)] if r else []), id=k)
            for k, r in KINDS.items()]


@pytest.mark.parametrize("kind", kind_params(False))
def test_damaged_file(tmp_path, kind):
    flips = 12 if kind == "data file" else 6
    figure(f"damaged {kind}", **check_kind(tmp_path, kind, flips))


@pytest.mark.parametrize("kind", ["schema", "manifest list (base)", "manifest"])
def test_damaged_file_error_class(tmp_path, kind):
    check_kind(tmp_path, kind, 6, corrupt_class=True)


@pytest.mark.parametrize("kind", kind_params(True))
def test_damaged_file_long(tmp_path, kind):
    n = env_int("PAIMON_RS_RELIABILITY_FLIPS", 60)
    figure(f"damaged {kind} (long)", **check_kind(tmp_path, kind, n))
