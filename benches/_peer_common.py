"""What the bench drivers and their peer scripts (``_*_peer.py``, run in the pypaimon 2.1.0 venv
with this folder first on ``sys.path``) share: loading the data sets, one commit and one full
read through the pypaimon-style API (paimon_rs and pypaimon alike), the same with pypaimon_rust,
the checksum that compares implementations, and running a peer script. Imports neither
paimon_rs nor pypaimon at module level, so both venvs can import it. Not a test.
"""

from __future__ import annotations

import json
import resource
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

TABLE = "db.bench"


def cpu_seconds() -> float:
    """The CPU seconds (user + sys, ``getrusage``) this process has used so far."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def load_ipc(path: str) -> pa.Table:
    """The table stored in the Arrow IPC file ``path`` (memory-mapped)."""
    with pa.memory_map(path) as f:
        return pa.ipc.open_file(f).read_all()


def check_sum(t: pa.Table) -> int:
    """A cheap checksum of a read: the sum of the low 16 bits of column ``v``."""
    return pc.sum(pc.bit_wise_and(t.column("v"), 0xFFFF)).as_py() or 0


def create_bench_table(cat: Any, schema_cls: Any, first: pa.Table, options: dict) -> None:
    """Create database ``db`` and the table ``db.bench`` (primary key ``id``) of ``first``'s schema
    in ``cat``, a catalog of paimon_rs or pypaimon (``schema_cls`` is that library's ``Schema``)."""
    cat.create_database("db", True)
    cat.create_table(TABLE, schema_cls.from_pyarrow_schema(
        first.schema, primary_keys=["id"], options=options), False)


def commit_arrow(cat: Any, data: pa.Table, name: str = TABLE) -> None:
    """Write ``data`` to the table ``name`` of ``cat`` as one batch commit (pypaimon-style API)."""
    t = cat.get_table(name)
    wb = t.new_batch_write_builder()
    w, c = wb.new_write(), wb.new_commit()
    w.write_arrow(data)
    c.commit(w.prepare_commit())
    w.close()
    c.close()


def read_table(cat: Any) -> pa.Table:
    """A full read of ``db.bench`` of ``cat`` (pypaimon-style API)."""
    t = cat.get_table(TABLE)
    rb = t.new_read_builder()
    return rb.new_read().to_arrow(rb.new_scan().plan().splits())


def rust_commit(wh: str, batches: list) -> None:
    """Write ``batches`` to ``db.bench`` in ``wh`` as one commit with pypaimon_rust's writer."""
    from pypaimon_rust.datafusion import PaimonCatalog

    t = PaimonCatalog({"warehouse": wh}).get_table(TABLE)
    wb = t.new_batch_write_builder()
    w = wb.new_write()
    for b in batches:
        w.write_arrow(b)
    wb.new_commit().commit(w.prepare_commit())
    w.close()


def rust_read(wh: str) -> pa.Table:
    """A full read of ``db.bench`` in ``wh`` with pypaimon_rust."""
    from pypaimon_rust.datafusion import PaimonCatalog

    t = PaimonCatalog({"warehouse": wh}).get_table(TABLE)
    rb = t.new_read_builder()
    return pa.Table.from_batches(list(rb.new_read().read_arrow(rb.new_scan().plan().splits())))


def run_peer(script: str, payload: dict, timeout: int) -> dict:
    """Run ``benches/<script>`` in the pypaimon venv with ``payload``; the JSON line it prints."""
    import subprocess
    from pathlib import Path

    from pypaimon_env import _clean_env, _venv_python, ensure_venv

    ensure_venv()
    r = subprocess.run([str(_venv_python()), str(Path(__file__).resolve().parent / script),
                        json.dumps(payload)], capture_output=True, text=True, env=_clean_env(),
                       timeout=timeout)
    if r.returncode != 0:
        raise RuntimeError(r.stderr.strip()[-2000:])
    return json.loads(r.stdout.strip().splitlines()[-1])
