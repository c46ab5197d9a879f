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

from _peer_common import check_sum, commit_arrow, create_bench_table, load_ipc, read_table, rust_commit, rust_read


def main() -> None:
    p = json.loads(sys.argv[1])
    from pypaimon import CatalogFactory, Schema

    wh = p["warehouse"]
    cat = CatalogFactory.create({"warehouse": wh})
    create_bench_table(cat, Schema, load_ipc(p["ipcs"][0]), p["options"])
    if p["impl"] == "pypaimon_rust":
        for ipc in p["ipcs"]:
            rust_commit(wh, load_ipc(ipc).to_batches())

        def read():
            return rust_read(wh)
    else:
        for ipc in p["ipcs"]:
            commit_arrow(cat, load_ipc(ipc))

        def read():
            return read_table(cat)

    read()  # warm-up (imports, native library load)
    times, rows, check = [], 0, 0
    for _ in range(int(p["repeat"])):
        gc.collect()
        t0 = time.perf_counter()
        result = read()
        times.append(time.perf_counter() - t0)
        rows = result.num_rows
        check = check_sum(result)
        del result
    print(json.dumps({"read_s": times, "rows": rows, "check": check}))


if __name__ == "__main__":
    main()
