"""Property test: random commit sequences on a primary-key table against a dict model."""

from __future__ import annotations

import tempfile

import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paimon_rs import CatalogFactory, Schema

SCHEMA = pa.schema([("p", pa.string()), ("k", pa.int64()), ("s", pa.string()), ("v", pa.int64()),
                    ("op", pa.string())])

op_st = st.sampled_from(["+I", "+U", "-U", "-D"])
row_st = st.tuples(st.sampled_from(["a", "b"]), st.integers(0, 15), st.sampled_from(["x", "yy", "zzz"]),
                   st.one_of(st.none(), st.integers(-100, 100)), op_st)
commits_st = st.lists(st.lists(row_st, min_size=0, max_size=25), min_size=1, max_size=5)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(commits=commits_st, buckets=st.integers(1, 4), string_key=st.booleans())
def test_matches_dict_model(commits, buckets, string_key):
    with tempfile.TemporaryDirectory() as wh:
        catalog = CatalogFactory.create({"warehouse": wh})
        catalog.create_database("db", True)
        pk = ["p", "k", "s"] if string_key else ["p", "k"]
        catalog.create_table("db.t", Schema.from_pyarrow_schema(
            SCHEMA, partition_keys=["p"], primary_keys=pk,
            options={"bucket": str(buckets), "rowkind.field": "op"}), False)
        table = catalog.get_table("db.t")
        model = {}
        for rows in commits:
            wb = table.new_batch_write_builder()
            w, c = wb.new_write(), wb.new_commit()
            if rows:
                w.write_arrow(pa.Table.from_pylist(
                    [dict(zip(SCHEMA.names, r)) for r in rows], schema=SCHEMA))
            c.commit(w.prepare_commit())
            w.close()
            for p, k, s, v, op in rows:
                key = (p, k, s) if string_key else (p, k)
                if op in ("+I", "+U"):
                    model[key] = (p, k, s, v, op)
                else:
                    model.pop(key, None)
            rb = table.new_read_builder()
            got = rb.new_read().to_arrow(rb.new_scan().plan().splits()).to_pylist()
            got_map = {((r["p"], r["k"], r["s"]) if string_key else (r["p"], r["k"])):
                       tuple(r[n] for n in SCHEMA.names) for r in got}
            assert len(got) == len(got_map)
            assert got_map == model
