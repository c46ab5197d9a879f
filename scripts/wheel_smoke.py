"""Smoke-test an installed paimon_rs wheel as a new user would meet it: run from a directory
outside the source tree, a relative warehouse, a primary-key table upserted until it compacts,
read back; the CLI's --version. Exits non-zero on any failure. Used by scripts/build_wheel.sh,
tests/unit/test_wheel.py and the release workflow."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile

import pyarrow as pa


def main() -> int:
    import paimon_rs
    from paimon_rs import CatalogFactory, Schema

    print(f"paimon_rs {paimon_rs.__version__} from {os.path.dirname(paimon_rs.__file__)}")
    with tempfile.TemporaryDirectory() as d:
        os.chdir(d)
        catalog = CatalogFactory.create({"warehouse": "wh"})
        catalog.create_database("db", True)
        schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
        catalog.create_table("db.t", Schema.from_pyarrow_schema(schema, primary_keys=["id"],
                                                                  options={"bucket": "1"}), False)
        table = catalog.get_table("db.t")
        for i in range(8):
            wb = table.new_batch_write_builder()
            w, c = wb.new_write(), wb.new_commit()
            w.write_arrow(pa.table({"id": [i, i + 1], "v": [f"a{i}", f"b{i}"]}, schema=schema))
            c.commit(w.prepare_commit())
            w.close()
            c.close()
        rb = table.new_read_builder()
        got = rb.new_read().to_arrow(rb.new_scan().plan().splits()).sort_by("id")
        want = [f"a{i}" for i in range(8)] + ["b7"]
        if got.column("v").to_pylist() != want:
            print(f"read back {got.to_pylist()}, expected v = {want}", file=sys.stderr)
            return 1
    out = subprocess.run([sys.executable, "-m", "paimon_rs", "--version"], capture_output=True, text=True)
    if out.returncode != 0 or paimon_rs.__version__ not in out.stdout:
        print(f"paimon-rs --version: exit {out.returncode}: {out.stdout!r} {out.stderr!r}", file=sys.stderr)
        return 1
    print("wheel smoke test passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
