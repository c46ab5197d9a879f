"""pypaimon's own SchemaChange objects (pypaimon.schema.schema_change, its AtomicType) passed to
paimon_rs's alter_table: a script runs in pypaimon's venv with paimon_rs on its path."""

from __future__ import annotations

import pytest

import pypaimon_env

pytestmark = pytest.mark.compat

SCRIPT = """
import json, sys, pyarrow as pa
from pypaimon.schema.schema_change import SchemaChange as PS, Move as PM
from pypaimon.schema.data_types import AtomicType
from paimon_rs import CatalogFactory, Schema
c = CatalogFactory.create({"warehouse": sys.argv[1]})
c.create_database("db", True)
c.create_table("db.t", Schema.from_pyarrow_schema(pa.schema([("id", pa.int64()), ("a", pa.int32())])), False)
c.alter_table("db.t", [PS.add_column("c", AtomicType("BIGINT"), "cc", PM.first("c")),
                       PS.rename_column("a", "a2"), PS.update_column_type("a2", AtomicType("BIGINT")),
                       PS.update_comment("hi"), PS.update_column_position(PM.after("id", "a2")),
                       PS.set_option("write-buffer-size", "8 mb")])
s = c.get_table("db.t").table_schema
print(json.dumps([[f.id, f.name, str(f.type), f.description] for f in s.fields] + [s.comment, s.options]))
"""


def test_pypaimon_schema_change_objects_are_accepted(pypaimon_venv, tmp_path):
    got = pypaimon_env.run_script_with_paimon_rs(pypaimon_venv, SCRIPT, str(tmp_path), timeout=300)
    assert got[:3] == [[2, "c", "BIGINT", "cc"], [1, "a2", "BIGINT", None], [0, "id", "BIGINT", None]]
    assert got[3] == "hi" and got[4]["write-buffer-size"] == "8 mb"
