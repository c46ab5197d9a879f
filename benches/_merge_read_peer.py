"""Peer side of benches/bench_merge_read.py; runs inside the pypaimon 2.1.0 venv
(tests/compat/pypaimon_env.py). Not a test, not imported by paimon_rs.

    python _merge_read_peer.py '<json payload>'   ->  prints one JSON line

payload: impl ("pypaimon" | "pypaimon_rust"), warehouse, ipcs (base first, then the upsert
commits), options, repeat. Writes every IPC file as one commit with the peer itself, then times
a full read `repeat` times. Prints {"read_s": [...], "rows": n, "check": sum}.
"""

from __future__ import annotations

import gc
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

    wh, name = p["warehouse"], "db.bench"
    cat = CatalogFactory.create({"warehouse": wh})
    cat.create_database("db", True)
    first = _load(p["ipcs"][0])
    cat.create_table(name, Schema.from_pyarrow_schema(
        first.schema, primary_keys=["id"], options=p["options"]), False)
    del first
    if p["impl"] == "pypaimon_rust":
        from pypaimon_rust.datafusion import PaimonCatalog

        for ipc in p["ipcs"]:
            t = PaimonCatalog({"warehouse": wh}).get_table(name)
            wb = t.new_batch_write_builder()
            w = wb.new_write()
            for b in _load(ipc).to_batches():
                w.write_arrow(b)
            wb.new_commit().commit(w.prepare_commit())
            w.close()

        def read():
            t = PaimonCatalog({"warehouse": wh}).get_table(name)
            rb = t.new_read_builder()
            batches = list(rb.new_read().read_arrow(rb.new_scan().plan().splits()))
            return pa.Table.from_batches(batches)
    else:
        for ipc in p["ipcs"]:
            t = cat.get_table(name)
            wb = t.new_batch_write_builder()
            w, c = wb.new_write(), wb.new_commit()
            w.write_arrow(_load(ipc))
            c.commit(w.prepare_commit())
            w.close()
            c.close()

        def read():
            t = cat.get_table(name)
            rb = t.new_read_builder()
            return rb.new_read().to_arrow(rb.new_scan().plan().splits())

    read()  # warm-up (imports, native library load)
    times, rows, check = [], 0, 0
    for _ in range(int(p["repeat"])):
        gc.collect()
        t0 = time.perf_counter()
        result = read()
        times.append(time.perf_counter() - t0)
        rows = result.num_rows
        check = pc.sum(pc.bit_wise_and(result.column("v"), 0xFFFF)).as_py() or 0
        del result
    print(json.dumps({"read_s": times, "rows": rows, "check": check}))


if __name__ == "__main__":
    main()
