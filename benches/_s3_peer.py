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

from _peer_common import check_sum, commit_arrow, create_bench_table, load_ipc, read_table


def main() -> None:
    p = json.loads(sys.argv[1])
    from pypaimon import CatalogFactory, Schema

    cat = CatalogFactory.create({"warehouse": p["warehouse"], **p["catalog"]})
    data = [load_ipc(i) for i in p["ipcs"]]
    create_bench_table(cat, Schema, data[0], p["options"])
    t0 = time.perf_counter()
    for d in data:
        commit_arrow(cat, d)
    write_s = time.perf_counter() - t0

    read_table(cat)
    times = []
    for _ in range(int(p["repeat"])):
        t0 = time.perf_counter()
        r = read_table(cat)
        times.append(time.perf_counter() - t0)
    print(json.dumps({"write_s": write_s, "read_s": times, "rows": r.num_rows, "check": check_sum(r)}))


if __name__ == "__main__":
    main()
