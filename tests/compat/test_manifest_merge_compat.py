"""Tables whose manifests paimon_rs merged at commit (minor merges and full rewrites that drop
cancelled ADD/DELETE pairs) read the same in pypaimon 2.1.0."""

from __future__ import annotations

import pyarrow as pa
import pytest

from paimon_rs import CatalogFactory, Schema

from pypaimon_env import read_ipc, run_pypaimon

pytestmark = pytest.mark.compat


@pytest.mark.parametrize("options", [
    {"manifest.merge-min-count": "2"},
    {"manifest.full-compaction-threshold-size": "1 b"},
])
def test_pypaimon_reads_tables_with_merged_manifests(tmp_path, options):
    wh = str(tmp_path / "wh")
    catalog = CatalogFactory.create({"warehouse": wh})
    catalog.create_database("db", True)
    schema = pa.schema([("p", pa.string()), ("k", pa.int64()), ("v", pa.string())])
    catalog.create_table("db.m", Schema.from_pyarrow_schema(
        schema, partition_keys=["p"], primary_keys=["p", "k"],
        options={"bucket": "2", **options}), False)
    t = catalog.get_table("db.m")
    expected: dict[tuple[str, int], str] = {}
    for i in range(8):
        rows = {"p": ["a", "b", "c"], "k": [i % 5, i, i + 1], "v": [f"v{i}"] * 3}
        wb = t.new_batch_write_builder()
        if i == 5:  # replace partition "a": DELETE entries for its files
            wb = wb.overwrite({"p": "a"})
            rows = {"p": ["a"], "k": [100], "v": ["new"]}
            expected = {pk: v for pk, v in expected.items() if pk[0] != "a"}
        w, c = wb.new_write(), wb.new_commit()
        w.write_arrow(pa.table(rows, schema=schema))
        c.commit(w.prepare_commit())
        w.close()
        for p, k, v in zip(rows["p"], rows["k"], rows["v"]):
            expected[(p, k)] = v
    ours = t.new_read_builder()
    mine = ours.new_read().to_arrow(ours.new_scan().plan().splits())
    assert {(r["p"], r["k"]): r["v"] for r in mine.to_pylist()} == expected
    out = str(tmp_path / "out.arrow")
    run_pypaimon("read", {"warehouse": wh, "table": "db.m", "out": out})
    got = read_ipc(out)
    assert got.num_rows == len(expected)
    assert {(r["p"], r["k"]): r["v"] for r in got.to_pylist()} == expected
