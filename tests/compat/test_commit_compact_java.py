"""Java Paimon reads a table paimon_rs compacted (issue #11, the commit side): the compaction
messages are built by hand (the bucket's rows rewritten as one file at the top level, plus new
files), committed as APPEND then COMPACT snapshots; Java reads the rows, restores the levels
and compacts the table again."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

from paimon_rs import CatalogFactory, Schema
from paimon_rs._core import CommitMessage

pytestmark = pytest.mark.java

SCHEMA = pa.schema([pa.field("id", pa.int32(), nullable=False), ("v", pa.string())])


def _prepared(t, ids, tag):
    w = t.new_batch_write_builder().new_write()
    w.write_arrow(pa.table({"id": ids, "v": [f"{tag}{i}" for i in ids]}, schema=SCHEMA))
    msgs = w.prepare_commit()
    w.close()
    return msgs


def _commit(t, msgs):
    c = t.new_batch_write_builder().new_commit()
    try:
        return c.commit(msgs)
    finally:
        c.close()


def _read(t):
    rb = t.new_read_builder()
    got = rb.new_read().to_arrow(rb.new_scan().plan().splits())
    return sorted(zip(got.column("id").to_pylist(), got.column("v").to_pylist()))


def _files(msgs):
    return [f for m in msgs for f in json.loads(m.to_bytes())["new_files"]]


def test_java_reads_and_compacts_a_table_paimon_rs_compacted(java, tmp_path):
    wh = str(tmp_path / "wh")
    cat = CatalogFactory.create({"warehouse": wh})
    cat.create_database("db", True)
    cat.create_table("db.c", Schema.from_pyarrow_schema(SCHEMA, primary_keys=["id"],
                                                        options={"bucket": "1"}), False)
    t = cat.get_table("db.c")
    inputs = []
    for i in range(3):
        msgs = _prepared(t, list(range(i * 5, i * 5 + 10)), f"c{i}_")
        _commit(t, msgs)
        inputs += msgs
    expected = _read(t)
    rewritten = _rewrite(t, t.new_read_builder())
    new = _prepared(t, [100, 101], "new")
    d = json.loads(inputs[0].to_bytes())
    d.update(new_files=_files(new), compact_before=_files(inputs),
             compact_after=[dict(f, level=5, file_source=1) for f in _files(rewritten)])
    assert _commit(t, [CommitMessage.from_bytes(json.dumps(d).encode())]) == 5
    expected += [(100, "new100"), (101, "new101")]
    assert _read(t) == expected
    got = java.call("read", warehouse=wh, table="db.c")["rows"]
    assert sorted((r[0], r[1]) for r in got) == expected
    levels = sorted(f["level"] for f in java.call("files", warehouse=wh, table="db.c"))
    assert levels == [0, 5]
    # Java restores the levels of our COMPACT snapshot and compacts on top of it
    java.call("write", warehouse=wh, table="db.c", commits=[{"rows": [[1, "java1"], [200, "java200"]], "kinds": None}])
    java.call("compact", warehouse=wh, table="db.c", full=True)
    expected = sorted([r for r in expected if r[0] != 1] + [(1, "java1"), (200, "java200")])
    got = java.call("read", warehouse=wh, table="db.c")["rows"]
    assert sorted((r[0], r[1]) for r in got) == expected
    assert _read(cat.get_table("db.c")) == expected


def _rewrite(t, rb):
    """The bucket's rows written back as one (uncommitted) file: a compaction's output."""
    data = rb.new_read().to_arrow(rb.new_scan().plan().splits())
    w = t.new_batch_write_builder().new_write()
    w.write_arrow(data.cast(SCHEMA))
    msgs = w.prepare_commit()
    w.close()
    return msgs
