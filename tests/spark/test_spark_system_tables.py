"""``paimon_rs.spark.read`` of a system table (``catalog.get_table("db.t$files")``): the rows
the Python read returns, with the system table's schema."""

import pyarrow as pa

import paimon_rs.spark as ps
from paimon_rs import Schema
from paimon_rs.predicate import PredicateBuilder


def test_read_system_tables_as_dataframes(spark, catalog):
    catalog.create_database("db", True)
    schema = pa.schema([("dt", pa.string()), ("id", pa.int64())])
    catalog.create_table("db.t", Schema.from_pyarrow_schema(schema, partition_keys=["dt"], primary_keys=["dt", "id"],
                                                            options={"bucket": "1"}), False)
    t = catalog.get_table("db.t")
    for ids in ([1, 2], [3]):
        wb = t.new_batch_write_builder()
        w, c = wb.new_write(), wb.new_commit()
        w.write_arrow(pa.table({"dt": ["a"] * len(ids), "id": ids}, schema=schema))
        c.commit(w.prepare_commit())
        w.close()
    snaps = catalog.get_table("db.t$snapshots")
    df = ps.read(spark, snaps)
    assert [r.snapshot_id for r in df.orderBy("snapshot_id").collect()] == [1, 2]
    assert dict(df.dtypes)["commit_time"] == "timestamp_ntz"
    files = catalog.get_table("db.t$files")
    pred = PredicateBuilder(files.arrow_schema).equal("level", 0)
    df = ps.read(spark, files, columns=["file_path", "record_count"], filter=pred, snapshot_id=1)
    rows = df.collect()
    assert df.columns == ["file_path", "record_count"] and [r.record_count for r in rows] == [2]
    want = files.to_arrow(pred, ["file_path", "record_count"], snapshot_id=1).to_pylist()
    assert [r.asDict() for r in rows] == want
