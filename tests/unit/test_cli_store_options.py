"""The CLI on object stores (issue #14): ``-o/--option key=value`` (repeatable, before or after
the command) become catalog options with the Python API's names; without them the store is
configured from the environment as before. Each CLI run is a fresh process (``python -m
paimon_rs``), as a user's is: the stores this test process configured do not leak into it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Dict, List, Optional

import pyarrow as pa
import pytest

from paimon_rs import Schema
from paimon_rs.cli import main

from stores import Warehouse
from unit_helpers import PK_SCHEMA, write


def cli(*args: str, env: Optional[Dict[str, str]] = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "paimon_rs", *args], capture_output=True, text=True,
                          timeout=120, env=env)


def o_args(options: Dict[str, str]) -> List[str]:
    return [a for k, v in options.items() for a in ("-o", f"{k}={v}")]


def make_table(warehouse: Warehouse):
    c = warehouse.catalog()
    schema = Schema.from_pyarrow_schema(PK_SCHEMA, partition_keys=["dt"], primary_keys=["dt", "id"],
                                        options={"bucket": "1"})
    c.create_table("db.t", schema, False)
    t = c.get_table("db.t")
    write(t, pa.table({"dt": ["a"] * 3, "id": [1, 2, 3], "name": ["x"] * 3, "price": [1.0, 2.0, 3.0]},
                      schema=PK_SCHEMA))
    return t


@pytest.mark.stores("local", "s3", "gcs")
def test_options_reach_the_store_before_and_after_the_command(warehouse):
    t = make_table(warehouse)
    opts = o_args(warehouse.options)
    # after the command, with the table path
    r = cli("snapshots", t.table_path, "--json", *opts)
    assert r.returncode == 0, r.stderr
    assert [s["id"] for s in json.loads(r.stdout)] == [1]
    # before the command, with <warehouse> <db>.<table>; and `tables`
    r = cli(*opts, "files", warehouse.uri, "db.t", "--json")
    assert r.returncode == 0, r.stderr
    assert sum(f["row_count"] for f in json.loads(r.stdout)) == 3
    r = cli(*opts, "tables", warehouse.uri, "--json")
    assert r.returncode == 0, r.stderr
    assert [(x["database"], x["table"]) for x in json.loads(r.stdout)] == [("db", "t")]
    # alter opens the owning catalog with the same options
    r = cli("alter", t.table_path, "--set", "snapshot.num-retained.max=70", "--json", *opts)
    assert r.returncode == 0, r.stderr
    assert warehouse.catalog().get_table("db.t").options["snapshot.num-retained.max"] == "70"


@pytest.mark.stores("s3")
def test_the_environment_still_configures_the_store(warehouse):
    """No -o: the standard variables configure the store (object_store reads AWS_*)."""
    t = make_table(warehouse)
    o = warehouse.options
    env = {**os.environ, "AWS_ENDPOINT_URL": o["s3.endpoint"], "AWS_ACCESS_KEY_ID": o["s3.access-key"],
           "AWS_SECRET_ACCESS_KEY": o["s3.secret-key"], "AWS_REGION": o["s3.region"], "AWS_ALLOW_HTTP": "true",
           "AWS_VIRTUAL_HOSTED_STYLE_REQUEST": "false"}
    r = cli("snapshots", t.table_path, "--json", env=env)
    assert r.returncode == 0, r.stderr
    assert [s["id"] for s in json.loads(r.stdout)] == [1]


def test_malformed_options_are_usage_errors(tmp_path, capsys):
    path = str(tmp_path / "wh" / "db.db" / "t")
    for bad, msg in [(["-o", "s3.endpoint"], "expected key=value"),
                     (["-o", "=x"], "expected key=value"),
                     (["-o", "a=1", "-o", "a=2"], "given twice"),
                     (["-o", "warehouse=/x"], "the warehouse is the table argument")]:
        assert main(["schema", path, *bad]) == 2, bad
        assert msg in capsys.readouterr().err, bad
    assert main(["-o", "nokey", "tables", str(tmp_path)]) == 2
    assert "expected key=value" in capsys.readouterr().err


def test_unknown_store_options_are_errors(tmp_path, capsys):
    assert main(["tables", str(tmp_path), "-o", "s3.endpiont=http://127.0.0.1:1"]) == 1
    assert "s3.endpiont" in capsys.readouterr().err
    assert main(["schema", "gs://b/wh/db.db/t", "-o", "fs.gs.auth.type=COMPUTE_ENGINE"]) == 1
    assert "COMPUTE_ENGINE" in capsys.readouterr().err


def test_a_path_that_is_not_in_a_warehouse_with_options(tmp_path, capsys):
    assert main(["schema", str(tmp_path / "t"), "-o", "a=b"]) == 2
    assert "<warehouse>/<db>.db/<table>" in capsys.readouterr().err
