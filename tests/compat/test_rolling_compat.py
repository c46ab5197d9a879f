"""Files cut by the rolling writer (small target-file-size) and files flushed early under memory
pressure are read by pypaimon 2.1.0 with the right rows."""

from __future__ import annotations

import pyarrow as pa
import pytest

from paimon_rs import CatalogFactory, Schema

from pypaimon_env import read_ipc, run_pypaimon

pytestmark = pytest.mark.compat


def test_pypaimon_reads_rolled_and_spilled_files(tmp_path):
    wh = str(tmp_path / "wh")
    catalog = CatalogFactory.create({"warehouse": wh})
    catalog.create_database("db", True)
    schema = pa.schema([("p", pa.string()), ("k", pa.int64()), ("v", pa.string()), ("op", pa.string())])
    catalog.create_table("db.r", Schema.from_pyarrow_schema(
        schema, partition_keys=["p"], primary_keys=["p", "k"], options={
        "bucket": "2", "target-file-size": "8 kb", "write-buffer-size": "64 kb", "rowkind.field": "op",
        "write-buffer-spill.dir": str(tmp_path / "spill")}), False)
    t = catalog.get_table("db.r")
    n = 20_000
    expected = {}
    for commit in range(2):
        wb = t.new_batch_write_builder()
        w, c = wb.new_write(), wb.new_commit()
        for start in range(0, n, 2000):
            ks = list(range(start, start + 2000))
            ops = ["-D" if (commit == 1 and k % 10 == 0) else "+I" for k in ks]
            rows = {"p": ["x" if k % 3 else "y" for k in ks], "k": ks,
                    "v": [f"c{commit}-{k}" for k in ks], "op": ops}
            w.write_arrow_batch(pa.record_batch(rows, schema=schema))
            for p, k, v, op in zip(rows["p"], ks, rows["v"], ops):
                if op == "-D":
                    expected.pop((p, k), None)
                else:
                    expected[(p, k)] = v
        msgs = w.prepare_commit()
        assert sum(len(m.file_names) for m in msgs) > 4  # rolled
        c.commit(msgs)
        w.close()
    out = str(tmp_path / "out.arrow")
    run_pypaimon("read", {"warehouse": wh, "table": "db.r", "out": out})
    got = read_ipc(out)
    assert {(r["p"], r["k"]): r["v"] for r in got.to_pylist()} == expected
    assert got.num_rows == len(expected)
