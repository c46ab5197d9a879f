"""Concurrent commits: every one lands exactly once, snapshot ids stay consecutive (on local disk
and on S3, where the snapshot file is a conditional create-only PUT)."""

from __future__ import annotations

import threading

import pyarrow as pa
import pytest

from unit_helpers import PK_SCHEMA, read, snapshots

pytestmark = pytest.mark.stores


def test_concurrent_writers_all_land(pk_table):
    n = 8
    barrier = threading.Barrier(n)
    errors = []

    def job(i):
        try:
            wb = pk_table.new_batch_write_builder()
            w, c = wb.new_write(), wb.new_commit()
            w.write_arrow(pa.table({"dt": [f"p{i % 3}"], "id": [i], "name": [str(i)], "price": [float(i)]},
                                   schema=PK_SCHEMA))
            msgs = w.prepare_commit()
            barrier.wait()
            c.commit(msgs)
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=job, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert sorted(read(pk_table).column("id").to_pylist()) == list(range(n))
    snaps = snapshots(pk_table)
    assert [s["id"] for s in snaps] == list(range(1, n + 1))
    assert len({s["commitUser"] for s in snaps}) == n
    assert snaps[-1]["totalRecordCount"] == n
