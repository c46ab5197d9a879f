"""Peer side of benches/bench_sort_compact.py: delta-rs (the ``deltalake`` package) on the same
data. Runs inside the pypaimon 2.1.0 venv (tests/compat/pypaimon_env.py, where deltalake is
pinned). Not a test, not imported by paimon_rs.

    python _delta_peer.py '<json payload>'   ->  prints one JSON line

payload: ``path`` (an empty directory), ``ipcs`` (one Arrow IPC file per commit, the rows the
paimon_rs table got), ``file_size`` (bytes: the writer's and z-order's target file size),
``hi`` (the query ``x < hi AND y < hi``). Writes every IPC file as one append commit (zstd level
1, as Paimon's default), counts the files the query reads (a file is read unless its min/max
statistics of ``x`` or ``y`` exclude it: Delta's data skipping), runs
``DeltaTable.optimize.z_order(["x", "y"], target_size=file_size)`` timed (wall and this
process's CPU), and counts again. Delta-rs's defaults otherwise: its z-order (1.6.6) writes a
partition's rows as one file whatever ``target_size`` says (tried: ``delta.targetFileSize``
and 64k-row row groups change nothing but make it slower), so compare bytes read as well as
files. Prints {"write_s", "files", "total", "rows", "zorder_s",
"zorder_cpu_s", "zorder_files", "zorder_total", "zorder_rows", "bytes", "zorder_bytes"}.
"""

from __future__ import annotations

import json
import sys
import time

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
from _peer_common import load_ipc


def query(dt, hi: int) -> tuple[int, int, int, int]:
    """(files whose statistics admit ``x < hi AND y < hi``, live files, rows matching, bytes of
    the files admitted)."""
    adds = dt.get_add_actions(flatten=True)
    adds = pa.table(adds) if not isinstance(adds, pa.Table) else adds
    keep = pc.and_(pc.less(adds["min.x"], hi), pc.less(adds["min.y"], hi))
    files = pc.sum(pc.cast(keep, pa.int64())).as_py() or 0
    size = pc.sum(adds.filter(keep)["size_bytes"]).as_py() or 0
    data = ds.dataset(dt.file_uris(), format="parquet")
    rows = data.count_rows(filter=(ds.field("x") < hi) & (ds.field("y") < hi))
    return files, adds.num_rows, rows, size


def main() -> None:
    p = json.loads(sys.argv[1])
    from deltalake import DeltaTable, WriterProperties, write_deltalake

    props = WriterProperties(compression="ZSTD", compression_level=1)
    path, size, hi = p["path"], int(p["file_size"]), int(p["hi"])
    t0 = time.perf_counter()
    for ipc in p["ipcs"]:
        write_deltalake(path, load_ipc(ipc), mode="append", target_file_size=size,
                        writer_properties=props)
    write_s = time.perf_counter() - t0
    dt = DeltaTable(path)
    files, total, rows, size = query(dt, hi)
    t0, c0 = time.perf_counter(), time.process_time()
    dt.optimize.z_order(["x", "y"], target_size=size, writer_properties=props)
    zorder_s, zorder_cpu = time.perf_counter() - t0, time.process_time() - c0
    dt = DeltaTable(path)
    zfiles, ztotal, zrows, zsize = query(dt, hi)
    print(json.dumps({"write_s": write_s, "files": files, "total": total, "rows": rows, "bytes": size,
                      "zorder_s": zorder_s, "zorder_cpu_s": zorder_cpu, "zorder_files": zfiles,
                      "zorder_total": ztotal, "zorder_rows": zrows, "zorder_bytes": zsize}))


if __name__ == "__main__":
    main()
