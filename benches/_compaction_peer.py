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

from _peer_common import check_sum, create_bench_table, load_ipc, rust_commit, rust_read


def main() -> None:
    p = json.loads(sys.argv[1])
    from pypaimon import CatalogFactory, Schema

    wh = p["warehouse"]
    cat = CatalogFactory.create({"warehouse": wh})
    create_bench_table(cat, Schema, load_ipc(p["ipcs"][0]), p["options"])

    checkpoints = {int(k) for k in p["checkpoints"]}
    commit_s, reads = [], {}
    for i, ipc in enumerate(p["ipcs"]):
        batches = load_ipc(ipc).to_batches()
        gc.collect()
        t0 = time.perf_counter()
        rust_commit(wh, batches)
        commit_s.append(time.perf_counter() - t0)
        del batches
        if i in checkpoints:
            rust_read(wh)  # warm-up
            times, rows, check = [], 0, 0
            for _ in range(int(p["repeat"])):
                gc.collect()
                t0 = time.perf_counter()
                result = rust_read(wh)
                times.append(time.perf_counter() - t0)
                rows = result.num_rows
                check = check_sum(result)
                del result
            reads[str(i)] = {"read_s": times, "rows": rows, "check": check}
    print(json.dumps({"base_s": commit_s[0], "commit_s": commit_s[1:], "reads": reads}))


if __name__ == "__main__":
    main()
