#!/usr/bin/env python3
"""Generate the pypaimon 2.1.0 manifest fixtures used by spec::manifest tests.

Run in a venv with `pip install 'pypaimon==2.1.0' 'pyarrow<20'`:

    python gen_fixtures.py OUT_DIR

Creates a tiny partitioned primary-key table (bucket=2, rowkind.field=op,
metadata.stats-mode=full) with two commits, the second one containing a -D row,
then copies into OUT_DIR:
  * manifest-commit2.avro       the manifest written by commit 2 (zstandard)
  * manifest-list-snap2-base.avro the base manifest list of snapshot 2
  * expected.json               every field of both files as decoded by fastavro
                                (bytes as lower-case hex, timestamps as epoch ms)
"""
import json
import os
import shutil
import sys
import tempfile
from datetime import datetime, timezone

import fastavro
import pyarrow as pa
from pypaimon import CatalogFactory, Schema


def plain(v):
    if isinstance(v, bytes):
        return v.hex()
    if isinstance(v, datetime):
        if v.tzinfo is None:
            v = v.replace(tzinfo=timezone.utc)
        return int(round(v.timestamp() * 1000))
    if isinstance(v, dict):
        return {k: plain(x) for k, x in v.items()}
    if isinstance(v, list):
        return [plain(x) for x in v]
    return v


def read_avro(path):
    with open(path, "rb") as f:
        r = fastavro.reader(f)
        codec = r.codec
        return codec, [plain(rec) for rec in r]


def main(out_dir):
    warehouse = tempfile.mkdtemp(prefix="pp-fixture-")
    catalog = CatalogFactory.create({"warehouse": warehouse})
    catalog.create_database("db", False)
    pa_schema = pa.schema([
        pa.field("dt", pa.string(), nullable=False),
        pa.field("id", pa.int32(), nullable=False),
        pa.field("name", pa.string()),
        pa.field("price", pa.float64()),
        pa.field("op", pa.string()),
    ])
    schema = Schema.from_pyarrow_schema(
        pa_schema, partition_keys=["dt"], primary_keys=["dt", "id"],
        options={"bucket": "2", "file.format": "parquet", "rowkind.field": "op",
                 "metadata.stats-mode": "full"})
    catalog.create_table("db.t", schema, False)
    table = catalog.get_table("db.t")

    def commit(rows):
        wb = table.new_batch_write_builder()
        w = wb.new_write()
        c = wb.new_commit()
        w.write_arrow(pa.Table.from_pylist(rows, schema=pa_schema))
        c.commit(w.prepare_commit())
        w.close()
        c.close()

    commit([
        {"dt": "2024-01-01", "id": 1, "name": "a", "price": 1.5, "op": "+I"},
        {"dt": "2024-01-01", "id": 2, "name": "b", "price": 2.5, "op": "+I"},
        {"dt": "2024-01-02", "id": 3, "name": "a-very-long-name", "price": None, "op": "+I"},
    ])
    commit([
        {"dt": "2024-01-01", "id": 1, "name": "a2", "price": 10.0, "op": "+U"},
        {"dt": "2024-01-01", "id": 2, "name": "b", "price": 2.5, "op": "-D"},
        {"dt": "2024-01-02", "id": 4, "name": None, "price": 4.0, "op": "+I"},
    ])

    tdir = os.path.join(warehouse, "db.db", "t")
    with open(os.path.join(tdir, "snapshot", "snapshot-2")) as f:
        snap2 = json.load(f)
    mdir = os.path.join(tdir, "manifest")
    _, delta = read_avro(os.path.join(mdir, snap2["deltaManifestList"]))
    assert len(delta) == 1, delta
    manifest_name = delta[0]["_FILE_NAME"]

    os.makedirs(out_dir, exist_ok=True)
    shutil.copy(os.path.join(mdir, manifest_name), os.path.join(out_dir, "manifest-commit2.avro"))
    shutil.copy(os.path.join(mdir, snap2["baseManifestList"]),
                os.path.join(out_dir, "manifest-list-snap2-base.avro"))

    m_codec, m_recs = read_avro(os.path.join(out_dir, "manifest-commit2.avro"))
    l_codec, l_recs = read_avro(os.path.join(out_dir, "manifest-list-snap2-base.avro"))
    expected = {
        "generator": "pypaimon 2.1.0 via gen_fixtures.py",
        "manifest": {"codec": m_codec, "records": m_recs},
        "manifest_list": {"codec": l_codec, "records": l_recs},
    }
    with open(os.path.join(out_dir, "expected.json"), "w") as f:
        json.dump(expected, f, indent=1, sort_keys=True)
        f.write("\n")
    print("rows read back:", table.new_read_builder().new_read().to_arrow(
        table.new_read_builder().new_scan().plan().splits()).to_pylist())
    shutil.rmtree(warehouse)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__)))
