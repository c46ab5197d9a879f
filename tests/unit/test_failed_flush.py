"""A flush of an append bucket that fails part way (here a BLOB descriptor refused in the second
4096-row chunk of a batch) leaves no part of the write to be committed: the open file, holding
the rows before the failure, is removed, and the writer refuses further writes and commits, so a
caller who catches the error cannot commit half of what it was told failed."""

from __future__ import annotations

import os

import pyarrow as pa
import pytest

from paimon_rs import BlobDescriptor, CatalogFactory, Schema
from paimon_rs.exceptions import InvalidArgumentError

SCH = pa.schema([("id", pa.int32()), ("b", pa.large_binary())])
DE = {"row-tracking.enabled": "true", "data-evolution.enabled": "true"}


def test_a_failed_flush_commits_nothing_more(tmp_path):
    src = tmp_path / "src.bin"
    src.write_bytes(b"0123456789")
    c = CatalogFactory.create({"warehouse": str(tmp_path / "wh")})
    c.create_database("db", True)
    c.create_table("db.t", Schema.from_pyarrow_schema(SCH, options=DE), False)
    t = c.get_table("db.t")
    n = 5000
    vals = [b"v"] * n
    vals[4500] = BlobDescriptor(str(src), 8, 100).serialize()  # past the file's end
    wb = t.new_stream_write_builder()
    w, cm = wb.new_write(), wb.new_commit()
    w.write_arrow(pa.table({"id": pa.array(range(n), pa.int32()), "b": pa.array(vals, pa.large_binary())}))
    with pytest.raises(InvalidArgumentError, match="points at bytes 8..108"):
        w.prepare_commit(1)
    with pytest.raises(InvalidArgumentError, match="an earlier flush .* failed"):
        w.write_arrow(pa.table({"id": pa.array([-1], pa.int32()), "b": pa.array([b"ok"], pa.large_binary())}))
    with pytest.raises(InvalidArgumentError, match="an earlier flush .* failed"):
        w.prepare_commit(2)
    w.close()
    cm.close()
    assert t.latest_snapshot_id() is None
    left = [f for _, _, fs in os.walk(t.table_path) for f in fs if f.endswith((".parquet", ".blob"))]
    assert left == []
    # a new write of the table works
    wb = t.new_batch_write_builder()
    w = wb.new_write()
    w.write_arrow(pa.table({"id": pa.array([1], pa.int32()), "b": pa.array([b"x"], pa.large_binary())}))
    wb.new_commit().commit(w.prepare_commit())
    rb = t.new_read_builder()
    assert rb.new_read().to_arrow(rb.new_scan().plan().splits()).to_pylist() == [{"id": 1, "b": b"x"}]
