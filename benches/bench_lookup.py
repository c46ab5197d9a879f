"""Upsert commit time of tables that compact through lookup (issue #27): first-row, and
aggregation with force-lookup (hash and sort lookup files) vs the same engines without lookup,
one process, same data: 1M rows in one bucket, then 10 commits of 50k upserts, a new writer per
commit (so each commit builds its lookup files again).

    PYTHONPATH=python python benches/bench_lookup.py
"""
import sys, time, tempfile, resource
import pyarrow as pa
from paimon_rs import CatalogFactory, Schema

S = pa.schema([("k", pa.int64()), ("v", pa.int64())])
N, C, U = 1_000_000, 10, 50_000

def run(name, opts):
    d = tempfile.mkdtemp()
    cat = CatalogFactory.create({"warehouse": d})
    cat.create_database("db", True)
    cat.create_table("db.t", Schema.from_pyarrow_schema(S, primary_keys=["k"], options={"bucket": "1", **opts}), False)
    t = cat.get_table("db.t")
    def commit(tb):
        wb = t.new_batch_write_builder(); w, c = wb.new_write(), wb.new_commit()
        w.write_arrow(tb); c.commit(w.prepare_commit()); w.close(); c.close()
    commit(pa.table({"k": pa.array(range(N), pa.int64()), "v": pa.array([1] * N, pa.int64())}, schema=S))
    t0 = time.perf_counter()
    for i in range(C):
        ks = [(i * 7919 + j * 13) % (N + N // 10) for j in range(U)]
        ks = sorted(set(ks))
        commit(pa.table({"k": pa.array(ks, pa.int64()), "v": pa.array([1] * len(ks), pa.int64())}, schema=S))
    dt = time.perf_counter() - t0
    rb = t.new_read_builder(); n = rb.new_read().to_arrow(rb.new_scan().plan().splits()).num_rows
    print(f"{name:28s} {C} commits of {U} upserts: {dt:6.2f} s ({C*U/dt:,.0f} rows/s), {n} rows read")

for name, opts in [
    ("deduplicate (no lookup)", {}),
    ("first-row (lookup)", {"merge-engine": "first-row"}),
    ("aggregation sum", {"merge-engine": "aggregation", "fields.v.aggregate-function": "sum"}),
    ("aggregation sum force-lookup", {"merge-engine": "aggregation", "fields.v.aggregate-function": "sum", "force-lookup": "true"}),
    ("first-row (lookup, sort)", {"merge-engine": "first-row", "lookup.local-file-type": "sort"}),
]:
    run(name, opts)
print("peak RSS MB", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024)
