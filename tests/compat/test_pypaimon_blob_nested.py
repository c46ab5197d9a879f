"""ARRAY<BLOB> and MAP<X, BLOB> columns between paimon_rs and pypaimon 2.1.0 (issue #29): tables
either library creates, written by both in turn (rolled ``.blob`` files too), read row for row
the same by both, with and without ``blob-as-descriptor``."""

from __future__ import annotations

import pytest

import pypaimon_env

pytestmark = pytest.mark.compat

SCRIPT = r'''
import json, sys
import pyarrow as pa
from pypaimon import CatalogFactory as PCF, Schema as PSchema
from paimon_rs import BlobDescriptor, CatalogFactory as RCF, Schema as RSchema

wh = sys.argv[1]


def resolve(raw):
    """The bytes a serialized BlobDescriptor points at."""
    d = None if raw is None else BlobDescriptor.deserialize(raw)
    return None if d is None else open(d.uri.removeprefix("file://"), "rb").read()[d.offset:d.offset + d.length]


def norm(rows, desc):
    """Rows with map entries as sorted pairs and, for descriptors, the bytes they point at."""
    r = resolve if desc else (lambda v: v)
    out = []
    for row in rows:
        x = dict(row)
        if x.get("a") is not None:
            x["a"] = [r(v) for v in x["a"]]
        for c in ("m", "s"):
            if x.get(c) is not None:
                x[c] = sorted((k, r(v)) for k, v in (x[c].items() if isinstance(x[c], dict) else x[c]))
        out.append(x)
    return sorted(out, key=repr)


pc = PCF.create({"warehouse": wh}); pc.create_database("db", True)
rc = RCF.create({"warehouse": wh})
pa_schema = pa.schema([("id", pa.int32()), ("a", pa.list_(pa.large_binary())),
                       ("m", pa.map_(pa.int32(), pa.large_binary())),
                       ("s", pa.map_(pa.string(), pa.large_binary()))])
out = {}
for creator in ("p", "r"):
    for name, opts in [("plain", {}), ("desc", {"blob-as-descriptor": "true"}),
                       ("rolled", {"blob.target-file-size": "60b"})]:
        o = {"row-tracking.enabled": "true", "data-evolution.enabled": "true"}
        o.update(opts)
        full = "db.%s_%s" % (creator, name)
        if creator == "p":
            pc.create_table(full, PSchema.from_pyarrow_schema(pa_schema, options=o), False)
        else:
            rc.create_table(full, RSchema.from_pyarrow_schema(pa_schema, options=o), False)
        model = []
        for k, lib in enumerate("pprpr"):
            tw = pc.get_table(full) if lib == "p" else rc.get_table(full)
            wb = tw.new_batch_write_builder(); w = wb.new_write()
            n = 5
            data = {
                "id": [10 * k + i for i in range(n)],
                "a": [None if i == 1 else [b"a%d-%d" % (k, j) * (j + 1) if j != 1 else None
                                           for j in range(i)] for i in range(n)],
                "m": [None if i == 2 else [(j * 7 - 3, None if j == 2 else b"m%d" % j * (i + 1))
                                           for j in range(i + 1)] for i in range(n)],
                "s": [[("k%d" % j, b"s" * (j + k)) for j in range(i % 3)] for i in range(n)]}
            model += [dict(zip(data, vals)) for vals in zip(*data.values())]
            w.write_arrow(pa.Table.from_pydict(data, schema=pa_schema))
            c = wb.new_commit(); c.commit(w.prepare_commit()); w.close(); c.close()
        res = {"types": [str(f.type) for f in rc.get_table(full).fields],
               "ptypes": [str(f.type) for f in pc.get_table(full).fields]}
        for proj in (None, ["a"], ["m", "id"], ["s"]):
            want = norm([{c: r[c] for c in proj or r} for r in model], False)
            got = []
            for tb in (pc.get_table(full), rc.get_table(full)):
                rb = tb.new_read_builder()
                if proj:
                    rb = rb.with_projection(proj)
                a = rb.new_read().to_arrow(rb.new_scan().plan().splits())
                got.append(norm(a.to_pylist(), "desc" in name))
            res[str(proj)] = [got[0] == want, got[1] == want, len(want)]
        res["blob_files"] = len([f for f in __import__("os").listdir(wh + "/db.db/" + full[3:] + "/bucket-0")
                                 if f.endswith(".blob")])
        out[full] = res
print(json.dumps(out))
'''


def test_nested_blob_tables_read_equal_in_both(pypaimon_venv, tmp_path):
    got = pypaimon_env.run_script_with_paimon_rs(pypaimon_venv, SCRIPT, str(tmp_path))
    for full, res in got.items():
        types = ["INT", "ARRAY<BLOB>", "MAP<INT NOT NULL, BLOB>", "MAP<STRING NOT NULL, BLOB>"]
        assert res.pop("types") == types, full
        assert res.pop("ptypes") == types, full
        blob_files = res.pop("blob_files")
        # three nested columns, one .blob file each per commit; more when rolled at 60 bytes
        assert blob_files == 15 if "rolled" not in full else blob_files > 20, (full, blob_files)
        # [pypaimon's rows == the model, paimon_rs's rows == the model, rows]
        assert res == {k: [True, True, 25] for k in ("None", "['a']", "['m', 'id']", "['s']")}, (full, res)
