"""CPU of row updates by ``_ROW_ID`` of a data-evolution table (pypaimon's
``new_update().update_by_arrow_with_row_id``) that touch many file groups: ``--groups``
appends of 10 rows each (one file group each), then one update of one row in every group
(one update file per group). Prints the CPU seconds (getrusage user + sys) of the update call
(reading the current values, writing the files; the commit excluded), per round.

    python benches/bench_row_update.py [--groups 400] [--rounds 3]
"""

from __future__ import annotations

import argparse
import tempfile

import pyarrow as pa
from _peer_common import cpu_seconds as cpu

import paimon_rs
from paimon_rs import Schema


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--groups", type=int, default=400)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    g = a.groups
    s = pa.schema([("id", pa.int64()), ("a", pa.int64())])
    print(f"| round | update of 1 row in each of {g} groups, CPU s | files |")
    print("|---|---|---|")
    for r in range(a.rounds):
        c = paimon_rs.CatalogFactory.create({"warehouse": tempfile.mkdtemp()})
        c.create_database("db", True)
        opts = {"row-tracking.enabled": "true", "data-evolution.enabled": "true"}
        c.create_table("db.t", Schema.from_pyarrow_schema(s, options=opts), False)
        t = c.get_table("db.t")
        for k in range(g):
            t.write(pa.table({"id": [k * 10 + i for i in range(10)], "a": [0] * 10}, schema=s))
        wb = t.new_batch_write_builder()
        before = cpu()
        msgs = wb.new_update().with_update_type(["a"]).update_by_arrow_with_row_id(
            pa.table({"_ROW_ID": pa.array([k * 10 for k in range(g)], pa.int64()), "a": [1] * g}))
        took = cpu() - before
        wb.new_commit().commit(msgs)
        print(f"| {r + 1} | {took:.3f} | {len(msgs)} |")


if __name__ == "__main__":
    main()
