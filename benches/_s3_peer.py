"""Peer side of benches/bench_s3.py; runs inside the pypaimon 2.1.0 venv
(tests/compat/pypaimon_env.py). Not a test, not imported by paimon_rs.

    python _s3_peer.py '<json payload>'   ->  prints one JSON line

payload: warehouse (s3://... or a local path), catalog options, ipcs (base first, then the
upsert commits), table options, repeat. Writes every IPC file as one commit (timed), then times a
full read `repeat` times. Prints {"write_s": s, "read_s": [...], "rows": n, "check": sum}.
"""

from __future__ import annotations

import json
import sys
import time

import pyarrow as pa
import pyarrow.compute as pc


def _load(path):
    with pa.memory_map(path) as f:
        return pa.ipc.open_file(f).read_all()


def main():
    p = json.loads(sys.argv[1])
    from pypaimon import CatalogFactory, Schema

    cat = CatalogFactory.create({"warehouse": p["warehouse"], **p["catalog"]})
    cat.create_database("db", True)
    first = _load(p["ipcs"][0])
    cat.create_table("db.bench", Schema.from_pyarrow_schema(
        first.schema, primary_keys=["id"], options=p["options"]), False)
    data = [_load(i) for i in p["ipcs"]]
    t0 = time.perf_counter()
    for d in data:
        t = cat.get_table("db.bench")
        wb = t.new_batch_write_builder()
        w, c = wb.new_write(), wb.new_commit()
        w.write_arrow(d)
        c.commit(w.prepare_commit())
        w.close()
        c.close()
    write_s = time.perf_counter() - t0

    def read():
        t = cat.get_table("db.bench")
        rb = t.new_read_builder()
        return rb.new_read().to_arrow(rb.new_scan().plan().splits())

    read()
    times = []
    for _ in range(int(p["repeat"])):
        t0 = time.perf_counter()
        r = read()
        times.append(time.perf_counter() - t0)
    check = pc.sum(pc.bit_wise_and(r.column("v"), 0xFFFF)).as_py() or 0
    print(json.dumps({"write_s": write_s, "read_s": times, "rows": r.num_rows, "check": check}))


if __name__ == "__main__":
    main()
