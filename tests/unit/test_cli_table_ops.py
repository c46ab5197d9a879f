"""CLI commands of the table operations: ``tags``, ``create-tag``, ``rollback``, ``expire``
(their JSON against the Python API, exit codes)."""

from __future__ import annotations

import json
from typing import Any

from table_ops_helpers import Model, make_table, read_rows, snapshot_ids

from paimon_rs.cli import main


def run_json(capsys, *args: str) -> Any:
    assert main([*args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_tags_create_rollback_expire(catalog, capsys):
    t = make_table(catalog)
    m = Model(t)
    for i in range(5):
        m.upsert({i: "v", 0: f"z{i}"})
    path = t.table_path
    got = run_json(capsys, "create-tag", path, "--name", "t2", "--snapshot", "2", "--time-retained", "1d")
    assert got == {"name": "t2", "snapshot": 2}
    tags = run_json(capsys, "tags", path)
    assert [(x["name"], x["snapshot_id"], x["time_retained_millis"]) for x in tags] == [("t2", 2, 86_400_000)]
    got = run_json(capsys, "rollback", path, "--snapshot", "4")
    assert got["summary"]["latest"] == 4 and got["summary"]["snapshots"] >= 1
    assert read_rows(t) == m.snapshots[4]
    got = run_json(capsys, "expire", path, "--retain-min", "1", "--older-than", "0s")
    assert got["summary"]["snapshots"] == 3 and got["summary"]["bytes"] > 0
    assert snapshot_ids(t) == [4]
    assert read_rows(t, {"scan.tag-name": "t2"}) == m.snapshots[2]
    got = run_json(capsys, "rollback", path, "--tag", "t2")
    assert got["summary"]["latest"] == 2
    out = main(["tags", path])
    assert out == 0 and "t2" in capsys.readouterr().out


def test_errors_exit_codes(catalog, capsys):
    t = make_table(catalog)
    Model(t).upsert({1: "a"})
    assert main(["rollback", t.table_path, "--snapshot", "9"]) == 1
    assert "doesn't exist" in capsys.readouterr().err
    assert main(["rollback", t.table_path]) == 2
    assert main(["create-tag", t.table_path, "--name", "x", "--snapshot", "7"]) == 1
