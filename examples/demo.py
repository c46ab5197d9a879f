"""paimon_rs demo: a primary-key table in a local warehouse, written, upserted, deleted from,
compacted and read back. Run with `bash scripts/demo.sh` (it builds everything first)."""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile

import pyarrow as pa

from paimon_rs import CatalogFactory, Schema


def commit(table, data: pa.Table) -> int:
    wb = table.new_batch_write_builder()
    w, c = wb.new_write(), wb.new_commit()
    w.write_arrow(data)
    snapshot = c.commit(w.prepare_commit())
    w.close()
    c.close()
    return snapshot


def show(title: str, table, **filters) -> pa.Table:
    rb = table.new_read_builder()
    if filters:
        pb = rb.new_predicate_builder()
        rb = rb.with_filter(pb.and_predicates([pb.equal(k, v) for k, v in filters.items()]))
    result = rb.new_read().to_arrow(rb.new_scan().plan().splits()).sort_by([("dt", "ascending"), ("id", "ascending")])
    print(f"\n{title} ({result.num_rows} rows)")
    print(result.to_pandas().to_string(index=False))
    return result


def data_files(table) -> str:
    """The data files a read of ``table`` merges, per bucket (level of each file)."""
    splits = table.new_read_builder().new_scan().plan().splits()
    per_bucket = [f"{s.partition_batch().column('dt')[0]}/bucket-{s.bucket}: levels "
                  f"{[f.level for f in s.files]}" for s in splits]
    return "; ".join(sorted(per_bucket))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--warehouse", help="warehouse directory (default: a fresh temp dir)")
    args = ap.parse_args()
    warehouse = args.warehouse or tempfile.mkdtemp(prefix="paimon_rs_demo_")
    if args.warehouse and os.path.exists(os.path.join(warehouse, "demo.db")):
        shutil.rmtree(os.path.join(warehouse, "demo.db"))

    catalog = CatalogFactory.create({"warehouse": warehouse})
    catalog.create_database("demo", True)
    schema = Schema.from_pyarrow_schema(
        pa.schema([("dt", pa.string()), ("id", pa.int64()), ("name", pa.string()),
                   ("price", pa.float64()), ("op", pa.string())]),
        partition_keys=["dt"],
        primary_keys=["dt", "id"],
        options={"bucket": "2", "rowkind.field": "op"},
    )
    catalog.create_table("demo.products", schema, False)
    table = catalog.get_table("demo.products")

    commit(table, pa.table({
        "dt": ["2026-11-01"] * 3 + ["2026-11-02"] * 2,
        "id": [1, 2, 3, 1, 2],
        "name": ["apple", "pear", "plum", "fig", "kiwi"],
        "price": [1.0, 2.0, 3.0, 4.0, 5.0],
        "op": ["+I"] * 5,
    }))
    show("after the first write", table)

    # upsert: new price for (2026-11-01, 1), a new key, and a delete of (2026-11-02, 2)
    commit(table, pa.table({
        "dt": ["2026-11-01", "2026-11-01", "2026-11-02"],
        "id": [1, 4, 2],
        "name": ["apple", "cherry", "kiwi"],
        "price": [1.5, 9.0, 5.0],
        "op": ["+U", "+I", "-D"],
    }))
    result = show("after upsert and delete", table)
    show("filtered: dt = 2026-11-01 and id = 1", table, dt="2026-11-01", id=1)

    # each commit added a sorted run per bucket (level 0); a full compaction merges every
    # bucket's runs into one file at the top level, dropping the deleted row for good
    print(f"\nbefore compaction: {data_files(table)}")
    compacted = table.compact(full=True)
    print(f"after compaction (snapshot {compacted}): {data_files(table)}")
    after = show("after compaction", table)
    assert after.equals(result), "compaction changed the rows"
    assert all(f.level > 0 for s in table.new_read_builder().new_scan().plan().splits() for f in s.files)

    expected = {("2026-11-01", 1): 1.5, ("2026-11-01", 2): 2.0, ("2026-11-01", 3): 3.0,
                ("2026-11-01", 4): 9.0, ("2026-11-02", 1): 4.0}
    got = {(r["dt"], r["id"]): r["price"] for r in result.to_pylist()}
    assert got == expected, f"unexpected result {got}"
    print(f"\nsnapshots: {table.latest_snapshot_id()}; warehouse: {warehouse}")
    print("demo OK")


if __name__ == "__main__":
    main()
