"""Property test: random commit sequences on a dynamic-bucket primary-key table (``bucket`` = -1,
a tiny ``dynamic-bucket.target-row-num`` so many buckets open) against a dict model: the table
equals the model and no key is ever in two buckets (read per bucket through the scan's splits),
whatever the mix of new keys, upserts, deletes, compactions and writer sessions."""

from __future__ import annotations

import tempfile
from collections import Counter

import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paimon_rs import CatalogFactory, Schema

SCHEMA = pa.schema([("p", pa.string()), ("k", pa.int64()), ("s", pa.string()), ("v", pa.int64()),
                    ("op", pa.string())])

op_st = st.sampled_from(["+I", "+I", "+U", "-D"])
row_st = st.tuples(st.sampled_from(["a", "b"]), st.integers(0, 40), st.sampled_from(["x", "yy", "zzz"]),
                   st.one_of(st.none(), st.integers(-100, 100)), op_st)
# a commit: its rows, and whether a full compaction follows it
commits_st = st.lists(st.tuples(st.lists(row_st, min_size=0, max_size=30), st.booleans()),
                      min_size=1, max_size=6)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(commits=commits_st, target=st.integers(1, 6), max_buckets=st.sampled_from([-1, 3]),
       string_key=st.booleans())
def test_dynamic_buckets_match_dict_model(commits, target, max_buckets, string_key):
    options = {"bucket": "-1", "rowkind.field": "op", "dynamic-bucket.target-row-num": str(target),
               "dynamic-bucket.max-buckets": str(max_buckets)}
    schema = Schema.from_pyarrow_schema(SCHEMA, partition_keys=["p"],
                                        primary_keys=["p", "k", "s"] if string_key else ["p", "k"], options=options)
    with tempfile.TemporaryDirectory() as wh:
        catalog = CatalogFactory.create({"warehouse": wh})
        catalog.create_database("db", True)
        catalog.create_table("db.t", schema, False)
        table = catalog.get_table("db.t")
        model: dict = {}

        def key_of(r):
            return (r[0], r[1], r[2]) if string_key else (r[0], r[1])

        for rows, compact in commits:
            wb = table.new_batch_write_builder()
            w, c = wb.new_write(), wb.new_commit()
            if rows:
                w.write_arrow(pa.Table.from_pylist([dict(zip(SCHEMA.names, r)) for r in rows], schema=SCHEMA))
            c.commit(w.prepare_commit())
            w.close()
            for r in rows:
                if r[4] in ("+I", "+U"):
                    model[key_of(r)] = tuple(r)
                else:
                    model.pop(key_of(r), None)
            if compact:
                table.compact(full=True)
            rb = table.new_read_builder()
            splits = rb.new_scan().plan().splits()
            slices: dict = {}
            got = {}
            for split in splits:
                for r in rb.new_read().to_arrow([split]).to_pylist():
                    t = tuple(r[n] for n in SCHEMA.names)
                    slices.setdefault(split.bucket_path, set()).add(key_of(t))
                    assert key_of(t) not in got, f"key {key_of(t)} read twice"
                    got[key_of(t)] = t
                if max_buckets != -1:
                    assert split.bucket < max_buckets, split.bucket_path
            assert got == model
            # every key written (deleted ones too) stays in one bucket: no slice shares a key
            per_key = Counter(k for keys in slices.values() for k in keys)
            assert all(n == 1 for n in per_key.values()), per_key
