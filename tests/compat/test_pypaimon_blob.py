"""BLOB values and tables between paimon_rs and pypaimon 2.1.0: descriptors serialize byte for byte as
pypaimon's (version 2, little-endian), each library deserializes the other's bytes (version 1
too), ``Blob.from_bytes`` classifies the same bytes the same way; BLOB tables either library
creates and writes (alternating writers, rolled ``.blob`` files) read the same in both."""

from __future__ import annotations

import pytest

import pypaimon_env

pytestmark = pytest.mark.compat

SCRIPT = r'''
import json, random, struct, sys
from pypaimon.table.row.blob import Blob as PBlob, BlobData as PData, BlobDescriptor as PD
from paimon_rs import Blob as RBlob, BlobData as RData, BlobDescriptor as RD, FileIO

rnd = random.Random(7)
cases = [("", 0, 0), ("/tmp/a.blob", 0, -1), ("oss://bucket/p/ä€😀", 2**63 - 1, -2**63)]
for _ in range(300):
    uri = "".join(rnd.choice("ab/:.é界") for _ in range(rnd.randrange(60)))
    cases.append((uri, rnd.randrange(-2**63, 2**63), rnd.randrange(-2**63, 2**63)))
out = {"same_bytes": 0, "p_reads_r": 0, "r_reads_p": 0, "v1": 0, "from_bytes": 0}
for uri, off, ln in cases:
    r, p = RD(uri, off, ln).serialize(), PD(uri, off, ln).serialize()
    out["same_bytes"] += r == p
    q = PD.deserialize(r)
    out["p_reads_r"] += (q.uri, q.offset, q.length, q.version) == (uri, off, ln, 2)
    back = RD.deserialize(p)
    out["r_reads_p"] += (back.uri, back.offset, back.length, back.version) == (uri, off, ln, 2)
    v1 = b"\x01" + struct.pack("<i", len(uri.encode())) + uri.encode() + struct.pack("<qq", off, ln)
    a, b = RD.deserialize(v1), PD.deserialize(v1)
    out["v1"] += (a.uri, a.offset, a.length, a.version, a.serialize()) == (
        b.uri, b.offset, b.length, b.version, b.serialize())
    for raw in (r, v1, uri.encode()):
        x = RBlob.from_bytes(raw, file_io=FileIO())
        y = PBlob.from_bytes(raw, file_io=object())
        out["from_bytes"] += (type(x).__name__ == type(y).__name__
                              and x.to_data() == y.to_data() if isinstance(x, RData)
                              else x.to_descriptor().serialize() == y.to_descriptor().serialize())
out["cases"] = len(cases)
print(json.dumps(out))
'''


def test_blob_descriptors_between_paimon_rs_and_pypaimon(pypaimon_venv, tmp_path):
    got = pypaimon_env.run_script_with_paimon_rs(pypaimon_venv, SCRIPT, str(tmp_path))
    n = got.pop("cases")
    assert got == {"same_bytes": n, "p_reads_r": n, "r_reads_p": n, "v1": n, "from_bytes": 3 * n}


READ_SCRIPT = r'''
import json, sys
import pyarrow as pa
from pypaimon import CatalogFactory as PCF, Schema as PSchema
from paimon_rs import CatalogFactory as RCF, DataField, Schema as RSchema, AtomicType

wh = sys.argv[1]


def resolve(raw):
    if raw is None:
        return None
    from pypaimon.table.row.blob import BlobDescriptor
    d = BlobDescriptor.deserialize(raw)
    with open(d.uri.removeprefix("file://"), "rb") as f:
        f.seek(d.offset)
        return f.read(d.length)


pc = PCF.create({"warehouse": wh}); pc.create_database("db", True)
pa_schema = pa.schema([("id", pa.int32()), ("name", pa.string()), ("b", pa.large_binary())])
out = {}
for name, opts in [("plain", {}), ("desc", {"blob-as-descriptor": "true"}),
                   ("rolled", {"blob.target-file-size": "40b"})]:
    o = {"row-tracking.enabled": "true", "data-evolution.enabled": "true"}
    o.update(opts)
    pc.create_table("db." + name, PSchema.from_pyarrow_schema(pa_schema, options=o), False)
    t = pc.get_table("db." + name)
    rt = RCF.create({"warehouse": wh}).get_table("db." + name)
    # writers alternate: pypaimon, pypaimon, paimon_rs, pypaimon, paimon_rs
    model = []  # the rows written, what both readers must return
    for k, tw in enumerate((t, t, rt, t, rt)):
        wb = tw.new_batch_write_builder(); w = wb.new_write()
        data = {
            "id": [10 * k + i for i in range(6)], "name": ["n%d" % i for i in range(6)],
            "b": [None if i == 2 else (b"v%d-%d\x00" % (k, i)) * (i * 7 + 1) for i in range(6)]}
        model += [dict(zip(data, vals)) for vals in zip(*data.values())]
        w.write_arrow(pa.Table.from_pydict(data, schema=pa_schema))
        c = wb.new_commit(); c.commit(w.prepare_commit()); w.close(); c.close()
    res = {"types": [str(f.type) for f in rt.fields]}
    for proj in (None, ["id"], ["b"], ["b", "id"]):
        want = sorted(({c: r[c] for c in proj or r} for r in model), key=repr)
        got = []
        for lib, tb in (("p", pc.get_table("db." + name)), ("r", rt)):
            rb = tb.new_read_builder()
            if proj:
                rb = rb.with_projection(proj)
            a = rb.new_read().to_arrow(rb.new_scan().plan().splits())
            rows = a.to_pylist()
            if opts.get("blob-as-descriptor"):
                # each reader returns descriptors here: resolve them to the bytes they point at
                rows = [{c: resolve(v) if c == "b" else v for c, v in r.items()} for r in rows]
            got.append((str(a.schema), sorted(rows, key=repr)))
        res[str(proj)] = [got[0][0] == got[1][0], got[0][1] == want, got[1][1] == want, len(want)]
    res["blob_files"] = len([f for f in __import__("os").listdir(wh + "/db.db/" + name + "/bucket-0")
                             if f.endswith(".blob")])
    out[name] = res
try:
    RCF.create({"warehouse": wh}).create_table(
        "db.new", RSchema([DataField(0, "b", AtomicType("BLOB"))]), False)
    out["create"] = "created"
except Exception as e:
    out["create"] = "%s: %s" % (type(e).__name__, e)
print(json.dumps(out))
'''


def test_blob_tables_pypaimon_writes_read_equal(pypaimon_venv, tmp_path):
    got = pypaimon_env.run_script_with_paimon_rs(pypaimon_venv, READ_SCRIPT, str(tmp_path))
    for name in ("plain", "desc", "rolled"):
        res = got[name]
        assert res.pop("types") == ["INT", "STRING", "BLOB"], name
        blob_files = res.pop("blob_files")
        # one .blob file per commit, several when rolled at 40 bytes
        assert blob_files == 5 if name != "rolled" else blob_files > 10, (name, blob_files)
        # [same schema, pypaimon's rows == the model, paimon_rs's rows == the model, rows]
        assert res == {k: [True, True, True, 30] for k in ("None", "['id']", "['b']", "['b', 'id']")}, \
            (name, res)
    # pypaimon's rule: a BLOB table needs a normal column
    assert got["create"].startswith("InvalidArgumentError") and "other normal columns" in got["create"], \
        got["create"]


WRITE_SCRIPT = r'''
import json, sys
import pyarrow as pa
from pypaimon import CatalogFactory as PCF
from paimon_rs import CatalogFactory as RCF, Schema as RSchema

wh = sys.argv[1]
rc = RCF.create({"warehouse": wh}); rc.create_database("db", True)
pa_schema = pa.schema([("id", pa.int64()), ("p", pa.string()), ("b", pa.large_binary()),
                       ("c", pa.large_binary())])
out = {}
for name, opts, part in [("plain", {}, []), ("rolled", {"blob.target-file-size": "100b"}, []),
                         ("part", {"blob.target-file-size": "64b"}, ["p"])]:
    o = {"row-tracking.enabled": "true", "data-evolution.enabled": "true"}
    o.update(opts)
    rc.create_table("db." + name, RSchema.from_pyarrow_schema(pa_schema, partition_keys=part, options=o), False)
    rt = rc.get_table("db." + name)
    pt = PCF.create({"warehouse": wh}).get_table("db." + name)
    # paimon_rs, paimon_rs, pypaimon, paimon_rs
    model = []  # the rows written, what both readers must return
    for k, tw in enumerate((rt, rt, pt, rt)):
        n = 7 + k
        wb = tw.new_batch_write_builder(); w = wb.new_write()
        data = {
            "id": [100 * k + i for i in range(n)], "p": ["x" if i % 2 else "y" for i in range(n)],
            "b": [None if i == 3 else bytes([k, i]) * (i * 5 + 1) for i in range(n)],
            "c": [b"c%d" % i if i % 4 else None for i in range(n)]}
        model += [dict(zip(data, vals)) for vals in zip(*data.values())]
        w.write_arrow(pa.Table.from_pydict(data, schema=pa_schema))
        c = wb.new_commit(); c.commit(w.prepare_commit()); w.close(); c.close()
    res = {"types": [str(f.type) for f in pt.fields]}
    for proj in (None, ["b"], ["id", "c"], ["c", "b", "p"]):
        want = sorted(({c: r[c] for c in proj or r} for r in model), key=repr)
        got = []
        for tb in (PCF.create({"warehouse": wh}).get_table("db." + name), rc.get_table("db." + name)):
            rb = tb.new_read_builder()
            if proj:
                rb = rb.with_projection(proj)
            a = rb.new_read().to_arrow(rb.new_scan().plan().splits())
            got.append(sorted(a.to_pylist(), key=repr))
        res[str(proj)] = [got[0] == want, got[1] == want, len(want)]
    out[name] = res
print(json.dumps(out))
'''


def test_blob_tables_paimon_rs_writes_read_equal_in_pypaimon(pypaimon_venv, tmp_path):
    got = pypaimon_env.run_script_with_paimon_rs(pypaimon_venv, WRITE_SCRIPT, str(tmp_path))
    for name in ("plain", "rolled", "part"):
        res = got[name]
        assert res.pop("types") == ["BIGINT", "STRING", "BLOB", "BLOB"], name
        # [pypaimon's rows == the model, paimon_rs's rows == the model, rows]
        assert res == {k: [True, True, 34] for k in ("None", "['b']", "['id', 'c']", "['c', 'b', 'p']")}, \
            (name, res)
