"""Java Paimon reads a table paimon_rs wrote through one ``StreamTableWrite`` kept across
commits (issue 29): rows as a dict model holds them, the snapshots' commit user and
identifiers, and Java restores the levels our kept writer compacted and writes on top."""

from __future__ import annotations

import random

import pyarrow as pa
import pytest

from paimon_rs import CatalogFactory, Schema

pytestmark = pytest.mark.java

SCHEMA = pa.schema([pa.field("id", pa.int32(), nullable=False), ("v", pa.string())])


def _read(t):
    rb = t.new_read_builder()
    got = rb.new_read().to_arrow(rb.new_scan().plan().splits())
    return sorted(zip(got.column("id").to_pylist(), got.column("v").to_pylist()))


@pytest.mark.parametrize("options", [{"bucket": "2"}, {"bucket": "2", "deletion-vectors.enabled": "true"},
                                     {"bucket": "2", "num-sorted-run.compaction-trigger": "2",
                                      "num-sorted-run.stop-trigger": "3"}])
def test_java_reads_a_stream_written_table(java, tmp_path, options):
    """Primary-key buckets compact in the background (all but the deletion-vector table): the
    compactions commits handed over late, and the last commit's waited-for one, are what Java
    reads and restores."""
    wh = str(tmp_path / "wh")
    cat = CatalogFactory.create({"warehouse": wh})
    cat.create_database("db", True)
    cat.create_table("db.s", Schema.from_pyarrow_schema(SCHEMA, primary_keys=["id"], options=options), False)
    t = cat.get_table("db.s")
    wb = t.new_stream_write_builder().with_commit_user("stream-job")
    w, c = wb.new_write(), wb.new_commit()
    rng = random.Random(3)
    model = {}
    for ident in range(8):
        ids = [rng.randrange(30) for _ in range(12)]
        vals = [f"c{ident}_{i}" for i in range(len(ids))]
        w.write_arrow(pa.table({"id": ids, "v": vals}, schema=SCHEMA))
        model.update(zip(ids, vals))
        c.commit(w.prepare_commit(100 + ident, wait_compaction=ident == 7), 100 + ident)
    w.close()
    c.close()
    expected = sorted(model.items())
    assert _read(t) == expected
    got = java.call("read", warehouse=wh, table="db.s")["rows"]
    assert sorted((r[0], r[1]) for r in got) == expected
    snaps = java.call("system_table", warehouse=wh, table="db.s", name="snapshots")
    rows = [dict(zip(snaps["fields"], r)) for r in snaps["rows"]]
    appends = [r for r in rows if r["commit_kind"] == "APPEND"]
    assert {r["commit_user"] for r in rows} == {"stream-job"}
    assert [r["commit_identifier"] for r in appends] == list(range(100, 108))
    assert any(r["commit_kind"] == "COMPACT" for r in rows)
    # Java restores the levels the kept writer left, writes on top and compacts fully
    java.call("write", warehouse=wh, table="db.s", commits=[{"rows": [[1, "java1"], [99, "java99"]], "kinds": None}])
    java.call("compact", warehouse=wh, table="db.s", full=True)
    model.update({1: "java1", 99: "java99"})
    expected = sorted(model.items())
    assert sorted((r[0], r[1]) for r in java.call("read", warehouse=wh, table="db.s")["rows"]) == expected
    assert _read(cat.get_table("db.s")) == expected


@pytest.mark.parametrize("key_type,keys", [("INT", list(range(40))),
                                           ("STRING", [f"key-{i}" for i in range(40)] + ["a string of 20 bytes"]),
                                           ("BIGINT", [i << 36 for i in range(40)])])
def test_bucket_selection_finds_every_key_java_wrote(java, tmp_path, key_type, keys):
    """Bucket selection (explain's bucket_pruning) hashes the filter's literals as Java hashed
    the rows it wrote: every key of a Java-written 4-bucket table is found by ``id = k``, in
    one bucket, and an IN list by the buckets of its keys."""
    wh = str(tmp_path / "wh")
    java.call("create_table", warehouse=wh, table="db.b", fields=[{"name": "id", "type": f"{key_type} NOT NULL"},
                                                                  {"name": "v", "type": "STRING"}],
              primary_keys=["id"], partition_keys=[], table_options={"bucket": "4"})
    java.call("write", warehouse=wh, table="db.b", commits=[{"rows": [[k, f"v{i}"] for i, k in enumerate(keys)],
                                                             "kinds": None}])
    t = CatalogFactory.create({"warehouse": wh}).get_table("db.b")
    for i, k in enumerate(keys):
        rb = t.new_read_builder()
        rb = rb.with_filter(rb.new_predicate_builder().equal("id", k))
        assert _read_kv(rb) == [(k, f"v{i}")], k
        assert rb.explain().bucket_pruning.after < rb.explain().bucket_pruning.before
    rb = t.new_read_builder()
    rb = rb.with_filter(rb.new_predicate_builder().is_in("id", keys[:5]))
    assert sorted(_read_kv(rb)) == sorted((k, f"v{i}") for i, k in enumerate(keys[:5]))


def _read_kv(rb):
    got = rb.new_read().to_arrow(rb.new_scan().plan().splits())
    return list(zip(got.column("id").to_pylist(), got.column("v").to_pylist()))
