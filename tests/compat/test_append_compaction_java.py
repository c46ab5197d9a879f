"""Java Paimon reads append tables paimon_rs compacted (issue #11): bucketed and bucket-unaware,
rows and (bucketed) their order within the bucket; Java then writes and compacts on top."""

from __future__ import annotations

import pyarrow as pa
import pytest

from paimon_rs import CatalogFactory, Schema

pytestmark = pytest.mark.java

SCHEMA = pa.schema([pa.field("id", pa.int32(), nullable=False), ("v", pa.string())])


def _write(t, ids):
    wb = t.new_batch_write_builder()
    w, c = wb.new_write(), wb.new_commit()
    try:
        w.write_arrow(pa.table({"id": ids, "v": [f"v{i}" for i in ids]}, schema=SCHEMA))
        c.commit(w.prepare_commit())
    finally:
        w.close()
        c.close()


@pytest.mark.parametrize("options", [{"bucket": "1", "bucket-key": "id"}, {"bucket": "-1"}])
def test_java_reads_an_append_table_paimon_rs_compacted(java, tmp_path, options):
    wh = str(tmp_path / "wh")
    cat = CatalogFactory.create({"warehouse": wh})
    cat.create_database("db", True)
    cat.create_table("db.a", Schema.from_pyarrow_schema(SCHEMA, options=options), False)
    t = cat.get_table("db.a").copy({"write-only": "true"})  # our writers would compact already
    ids = []
    for c in range(6):
        batch = [c * 10 + i for i in range(10)]
        _write(t, batch)
        ids += batch
    assert t.compact(full=True) is not None
    assert len(java.call("files", warehouse=wh, table="db.a")) == 1
    got = java.call("read", warehouse=wh, table="db.a")["rows"]
    if options["bucket"] == "1":
        assert [r[0] for r in got] == ids  # one bucket: sequence order survives the rewrite
    assert sorted((r[0], r[1]) for r in got) == sorted((i, f"v{i}") for i in ids)
    java.call("write", warehouse=wh, table="db.a", commits=[{"rows": [[1000, "java"]], "kinds": None}])
    if options["bucket"] == "1":  # Java compacts bucket-unaware tables through a coordinator job
        java.call("compact", warehouse=wh, table="db.a", full=True)
    rb = cat.get_table("db.a").new_read_builder()
    mine = rb.new_read().to_arrow(rb.new_scan().plan().splits())
    assert sorted(mine.column("id").to_pylist()) == sorted(ids + [1000])
