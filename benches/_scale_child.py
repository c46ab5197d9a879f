"""One phase of benches/bench_scale.py in a process of its own, so its peak RSS is the phase's.
Runs in this project's venv (impl ``paimon_rs``) or in the pypaimon 2.1.0 venv (impl
``pypaimon_rust``, through ``_peer_common.run_peer``). Not a test, not imported by paimon_rs.

    python _scale_child.py '<json payload>'   ->  prints one JSON line

payload: impl, phase, warehouse, ipcs, options, repeat.
  phase "write":   create the table, commit ipcs[0] (timed: bulk write), read it ``repeat``
                   times (timed: raw read, one file per bucket), then commit every other IPC
                   file (timed, one commit each: upserts, compaction included for paimon_rs).
  phase "read":    full read of the table ``repeat`` times after a warm-up (merge-on-read).
  phase "compact": paimon_rs only: a full compaction (timed), ``repeat`` reads, then the live
                   rows written afresh into an empty table (timed: the compaction's reference).
Prints {"times": {name: [seconds]}, "rows": n, "check": sum, "result_mb": MB of one read's
Arrow result, "peak_rss_mb": this process's peak RSS}.
"""

from __future__ import annotations

import gc
import json
import resource
import sys
import time
from typing import Any, Callable

from _peer_common import (
    TABLE,
    check_sum,
    commit_arrow,
    create_bench_table,
    load_ipc,
    read_table,
    rust_commit,
    rust_read,
)


def _timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    gc.collect()
    t0 = time.perf_counter()
    r = fn()
    return time.perf_counter() - t0, r


def main() -> None:
    p = json.loads(sys.argv[1])
    impl, phase, wh = p["impl"], p["phase"], p["warehouse"]
    if impl == "paimon_rs":
        from paimon_rs import CatalogFactory, Schema
    else:
        from pypaimon import CatalogFactory, Schema  # the peer's catalog creates the table
    cat = CatalogFactory.create({"warehouse": wh})

    def commit(path: str) -> None:
        if impl == "pypaimon_rust":
            rust_commit(wh, load_ipc(path).to_batches())
        else:
            commit_arrow(cat, load_ipc(path))

    def read() -> Any:
        return rust_read(wh) if impl == "pypaimon_rust" else read_table(cat)

    times: dict[str, list[float]] = {}
    out: dict[str, Any] = {}

    def reads(name: str) -> None:
        rows = check = 0
        mb = 0.0
        for _ in range(int(p["repeat"])):
            s, r = _timed(read)
            times.setdefault(name, []).append(s)
            rows, check, mb = r.num_rows, check_sum(r), r.nbytes / 2**20
            del r
        out.update(rows=rows, check=check, result_mb=round(mb, 1))

    if phase == "write":
        create_bench_table(cat, Schema, load_ipc(p["ipcs"][0]), p["options"])
        times["bulk_write"] = [_timed(lambda: commit(p["ipcs"][0]))[0]]
        reads("raw_read")
        times["upserts"] = [_timed(lambda ipc=ipc: commit(ipc))[0] for ipc in p["ipcs"][1:]]
    elif phase == "read":
        read()  # warm-up
        reads("merge_read")
    elif phase == "compact":
        t = cat.get_table(TABLE)
        times["full_compaction"] = [_timed(lambda: t.compact(full=True))[0]]
        reads("read_after_compaction")
        # the reference: the same live rows written afresh into an empty table, one commit
        live = read()
        cat.create_table("db.fresh", Schema.from_pyarrow_schema(
            live.schema, primary_keys=["id"], options=p["options"]), False)
        times["fresh_write"] = [_timed(lambda: commit_arrow(cat, live, "db.fresh"))[0]]
    else:
        raise SystemExit(f"unknown phase {phase!r}")
    out["times"] = times
    out["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
