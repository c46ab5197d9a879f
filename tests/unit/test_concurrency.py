"""Concurrent commits: every one lands exactly once, snapshot ids stay consecutive."""

from __future__ import annotations

import json
import os
import threading

import pyarrow as pa

from unit_helpers import PK_SCHEMA, read


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
    snap_dir = os.path.join(pk_table.table_path, "snapshot")
    ids = sorted(int(f.split("-")[1]) for f in os.listdir(snap_dir) if f.startswith("snapshot-"))
    assert ids == list(range(1, n + 1))
    users = {json.load(open(os.path.join(snap_dir, f"snapshot-{i}")))["commitUser"] for i in ids}
    assert len(users) == n
    last = json.load(open(os.path.join(snap_dir, f"snapshot-{n}")))
    assert last["totalRecordCount"] == n
