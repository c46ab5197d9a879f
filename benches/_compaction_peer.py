"""Peer side of benches/bench_compaction.py; runs inside the pypaimon 2.1.0 venv
(tests/compat/pypaimon_env.py), where pypaimon_rust 0.4.0 is installed. Not a test, not
imported by paimon_rs.

    python _compaction_peer.py '<json payload>'   ->  prints one JSON line

payload: warehouse, ipcs (base first, then the upsert commits), options, repeat, checkpoints
(upsert commit numbers, 1-based, after which reads are timed). Creates the table with pypaimon,
writes every IPC file as one commit with pypaimon_rust's own writer (each commit timed: table
handle .. commit, data loading excluded), and after each checkpoint commit times a full read
`repeat` times after one warm-up. Prints {"base_s": s, "commit_s": [...], "reads": {"k":
{"read_s": [...], "rows": n, "check": sum}}}.
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
    from pypaimon_rust.datafusion import PaimonCatalog

    wh, name = p["warehouse"], "db.bench"
    cat = CatalogFactory.create({"warehouse": wh})
    cat.create_database("db", True)
    first = _load(p["ipcs"][0])
    cat.create_table(name, Schema.from_pyarrow_schema(
        first.schema, primary_keys=["id"], options=p["options"]), False)
    del first

    def read():
        t = PaimonCatalog({"warehouse": wh}).get_table(name)
        rb = t.new_read_builder()
        return pa.Table.from_batches(list(rb.new_read().read_arrow(rb.new_scan().plan().splits())))

    checkpoints = {int(k) for k in p["checkpoints"]}
    commit_s, reads = [], {}
    for i, ipc in enumerate(p["ipcs"]):
        batches = _load(ipc).to_batches()
        gc.collect()
        t0 = time.perf_counter()
        t = PaimonCatalog({"warehouse": wh}).get_table(name)
        wb = t.new_batch_write_builder()
        w = wb.new_write()
        for b in batches:
            w.write_arrow(b)
        wb.new_commit().commit(w.prepare_commit())
        w.close()
        commit_s.append(time.perf_counter() - t0)
        del batches
        if i in checkpoints:
            read()  # warm-up
            times, rows, check = [], 0, 0
            for _ in range(int(p["repeat"])):
                gc.collect()
                t0 = time.perf_counter()
                result = read()
                times.append(time.perf_counter() - t0)
                rows = result.num_rows
                check = pc.sum(pc.bit_wise_and(result.column("v"), 0xFFFF)).as_py() or 0
                del result
            reads[str(i)] = {"read_s": times, "rows": rows, "check": check}
    print(json.dumps({"base_s": commit_s[0], "commit_s": commit_s[1:], "reads": reads}))


if __name__ == "__main__":
    main()
