"""``blob-as-descriptor`` on reads of a BLOB table pypaimon 2.1.0 wrote: set through
``table.copy`` (any spelling of a boolean, as Java's ``Options`` parses it) the BLOB column reads
as serialized ``BlobDescriptor``s whose bytes are the values; a value that is not a boolean is an
error naming the option, never read as false."""

from __future__ import annotations

import pytest

import pypaimon_env

pytestmark = pytest.mark.compat

SCRIPT = r'''
import json, sys
import pyarrow as pa
from pypaimon import CatalogFactory as PCF, Schema as PSchema
from paimon_rs import BlobDescriptor, CatalogFactory as RCF

wh = sys.argv[1]
pc = PCF.create({"warehouse": wh}); pc.create_database("db", True)
schema = pa.schema([("id", pa.int32()), ("b", pa.large_binary())])
pc.create_table("db.t", PSchema.from_pyarrow_schema(schema, options={
    "row-tracking.enabled": "true", "data-evolution.enabled": "true"}), False)
t = pc.get_table("db.t")
values = [b"v%d\x00" % i * (i + 1) for i in range(5)] + [None]
wb = t.new_batch_write_builder(); w = wb.new_write()
w.write_arrow(pa.Table.from_pydict({"id": list(range(6)), "b": values}, schema=schema))
c = wb.new_commit(); c.commit(w.prepare_commit()); w.close(); c.close()

rt = RCF.create({"warehouse": wh}).get_table("db.t")
out = {}
for spelling in ("TRUE", "true", "false"):
    tb = rt.copy({"blob-as-descriptor": spelling})
    rb = tb.new_read_builder()
    rows = sorted(rb.new_read().to_arrow(rb.new_scan().plan().splits()).to_pylist(),
                  key=lambda r: r["id"])
    got = []
    for r in rows:
        v = r["b"]
        if v is not None and spelling != "false":
            d = BlobDescriptor.deserialize(v)
            with open(d.uri, "rb") as f:
                f.seek(d.offset)
                v = f.read(d.length)
        got.append(v)
    out[spelling] = got == values
try:
    tb = rt.copy({"blob-as-descriptor": "yes"})
    rb = tb.new_read_builder()
    rb.new_read().to_arrow(rb.new_scan().plan().splits())
    out["yes"] = "read"
except Exception as e:
    out["yes"] = "%s: %s" % (type(e).__name__, e)
print(json.dumps(out))
'''


def test_blob_as_descriptor_read_option(pypaimon_venv, tmp_path):
    got = pypaimon_env.run_script_with_paimon_rs(pypaimon_venv, SCRIPT, str(tmp_path))
    yes = got.pop("yes")
    assert yes.startswith("InvalidArgumentError") and "blob-as-descriptor" in yes, yes
    assert got == {"TRUE": True, "true": True, "false": True}
