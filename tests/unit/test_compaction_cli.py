"""``python -m paimon_rs compact`` (issue #11): summary, plan, exit codes; and dedicated
compaction: a ``write-only=true`` writer and a separate process running the CLI over and over
on the same table, concurrently, never losing a row (checked against a dict model)."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import threading
from typing import Dict, List, Tuple

import pyarrow as pa
import pytest

from paimon_rs import Schema
from paimon_rs.__main__ import main

from unit_helpers import read, snapshots, write

SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.string())])
PK_SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])


def append_table(catalog, name: str, options: Dict[str, str]):
    catalog.create_table(f"db.{name}", Schema.from_pyarrow_schema(SCHEMA, partition_keys=["dt"],
                                                                  options=options), False)
    return catalog.get_table(f"db.{name}")


def rows(ids: List[int], dt: str = "a") -> pa.Table:
    return pa.table({"dt": [dt] * len(ids), "id": ids, "v": [f"v{i}" for i in ids]}, schema=SCHEMA)


def run_cli(args: List[str]) -> Tuple[int, str, str]:
    p = subprocess.run([sys.executable, "-m", "paimon_rs", *args], capture_output=True, text=True,
                       timeout=300)
    return p.returncode, p.stdout, p.stderr


def test_cli_compacts_and_prints_a_summary(catalog, capsys):
    t = append_table(catalog, "s", {"bucket": "1", "bucket-key": "id", "write-only": "true"})
    for c in range(6):
        write(t, rows([c * 10 + i for i in range(10)]))
    assert main(["compact", t.table_path, "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "files 5 -> 1" in out and "rows 50 -> 50" in out and "snapshot 7" in out
    assert main(["compact", t.table_path, "--quiet"]) == 0
    assert "nothing to compact" in capsys.readouterr().out
    # warehouse + db.table form, full compaction of one partition (at least 3 files, as Java)
    write(t, rows(list(range(60, 70))))
    wh = os.path.dirname(os.path.dirname(t.table_path))
    assert main(["compact", wh, "db.s", "--full", "--partition", "dt=a", "--quiet"]) == 0
    assert "files 3 -> 1" in capsys.readouterr().out
    assert sorted(read(t).column("id").to_pylist()) == list(range(70))


def test_cli_plan_prints_the_picks(catalog, capsys):
    t = append_table(catalog, "pl", {"bucket": "1", "bucket-key": "id", "write-only": "true"})
    for c in range(5):
        write(t, rows([c], "a"))
        write(t, rows([c], "b"))
    assert main(["compact", t.table_path, "--plan", "--partition", "dt=b"]) == 0
    out = capsys.readouterr().out
    assert "dt=b/bucket-0" in out and "small-files: 5 file(s)" in out and "dt=a/" not in out
    assert t.latest_snapshot_id() == 10  # nothing committed


def test_cli_exit_codes(catalog, tmp_path):
    t = append_table(catalog, "e", {"bucket": "-1"})
    write(t, rows([1]))
    code, _, err = run_cli([])
    assert code == 2
    code, _, err = run_cli(["compact", t.table_path, "--partition", "nokey"])
    assert code == 2 and "k=v" in err
    code, _, err = run_cli(["compact", str(tmp_path / "wh" / "db.db" / "missing")])
    assert code == 1 and "missing" in err
    code, _, err = run_cli(["compact", t.table_path, "--partition", "nope=1"])
    assert code == 1 and "nope" in err
    code, out, _ = run_cli(["compact", t.table_path, "--full"])
    assert code == 0 and "nothing to compact" in out


class Compactor(threading.Thread):
    """Runs the CLI in a separate process, again and again, until stopped."""

    def __init__(self, path: str):
        super().__init__(daemon=True)
        self.path = path
        self.stop = threading.Event()
        self.results: List[Tuple[int, str, str]] = []

    def run(self) -> None:
        while not self.stop.is_set():
            self.results.append(run_cli(["compact", self.path, "--quiet"]))


def check_compactor(c: Compactor) -> None:
    c.stop.set()
    c.join(timeout=600)
    assert c.results
    for code, out, err in c.results:
        # a compaction whose inputs another commit changed is refused and reported
        assert code == 0 or (code == 1 and "onflict" in err), (code, out, err)
    print(f"compactor: {len(c.results)} runs, {sum('snapshot' in o for _, o, _ in c.results)} compacted, "
          f"{sum(code == 1 for code, _, _ in c.results)} conflicts")


def test_dedicated_compaction_of_an_append_table(catalog):
    t = append_table(catalog, "da", {"bucket": "2", "bucket-key": "id", "write-only": "true",
                                     "compaction.min.file-num": "2"})
    model: Dict[int, str] = {}
    c = Compactor(t.table_path)
    c.start()
    nxt = 0
    n = 0
    while n < 25 or (len(c.results) < 3 and n < 300):  # until the compactor ran a few times
        n += 1
        ids = list(range(nxt, nxt + 40))
        nxt += 40
        write(t, pa.concat_tables([rows(ids[:20], "a"), rows(ids[20:], "b")]))
        model.update({i: f"v{i}" for i in ids})
    check_compactor(c)
    assert run_cli(["compact", t.table_path, "--full", "--quiet"])[0] == 0
    got = read(t)
    assert sorted(got.column("id").to_pylist()) == sorted(model)
    assert dict(zip(got.column("id").to_pylist(), got.column("v").to_pylist())) == model
    assert sum(s["commitKind"] == "COMPACT" for s in snapshots(t)) >= 1


def test_dedicated_compaction_of_a_primary_key_table(catalog):
    catalog.create_table("db.dp", Schema.from_pyarrow_schema(
        PK_SCHEMA, primary_keys=["id"],
        options={"bucket": "2", "write-only": "true", "num-sorted-run.compaction-trigger": "2"}), False)
    t = catalog.get_table("db.dp")
    rng = random.Random(11)
    model: Dict[int, str] = {}
    c = Compactor(t.table_path)
    c.start()
    n = 0
    while n < 25 or (len(c.results) < 3 and n < 300):  # until the compactor ran a few times
        n += 1
        ids = sorted(set(rng.randrange(300) for _ in range(60)))
        vals = [f"c{n}-{i}" for i in ids]
        write(t, pa.table({"id": ids, "v": vals}, schema=PK_SCHEMA))
        model.update(zip(ids, vals))
    check_compactor(c)
    assert run_cli(["compact", t.table_path, "--full", "--quiet"])[0] == 0
    got = read(t)
    assert dict(zip(got.column("id").to_pylist(), got.column("v").to_pylist())) == model
    assert got.num_rows == len(model)
    assert sum(s["commitKind"] == "COMPACT" for s in snapshots(t)) >= 1


@pytest.mark.parametrize("full", [False, True])
def test_compact_of_a_table_without_snapshots(catalog, full):
    t = append_table(catalog, "empty" + str(full), {"bucket": "-1"})
    assert t.compact(full=full) is None
    assert t.compaction_plan() == []
