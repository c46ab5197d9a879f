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


def new_table(wh: str, schema: Schema):
    """``db.t`` of ``schema`` in a new warehouse ``wh``."""
    catalog = CatalogFactory.create({"warehouse": wh})
    catalog.create_database("db", True)
    catalog.create_table("db.t", schema, False)
    return catalog.get_table("db.t")


def commit_rows(table, rows) -> None:
    """One batch write of ``rows`` (tuples in SCHEMA's order), committed."""
    wb = table.new_batch_write_builder()
    w, c = wb.new_write(), wb.new_commit()
    if rows:
        w.write_arrow(pa.Table.from_pylist([dict(zip(SCHEMA.names, r)) for r in rows], schema=SCHEMA))
    c.commit(w.prepare_commit())
    w.close()


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(commits=commits_st, target=st.integers(1, 6), max_buckets=st.sampled_from([-1, 3]),
       string_key=st.booleans())
def test_dynamic_buckets_match_dict_model(commits, target, max_buckets, string_key):
    options = {"bucket": "-1", "rowkind.field": "op", "dynamic-bucket.target-row-num": str(target),
               "dynamic-bucket.max-buckets": str(max_buckets)}
    schema = Schema.from_pyarrow_schema(SCHEMA, partition_keys=["p"],
                                        primary_keys=["p", "k", "s"] if string_key else ["p", "k"], options=options)
    with tempfile.TemporaryDirectory() as wh:
        table = new_table(wh, schema)
        model: dict = {}

        def key_of(r):
            return (r[0], r[1], r[2]) if string_key else (r[0], r[1])

        for rows, compact in commits:
            commit_rows(table, rows)
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


cross_row_st = st.tuples(st.sampled_from(["a", "b", "c"]), st.integers(0, 30), st.sampled_from(["x", "yy", "zzz"]),
                         st.one_of(st.none(), st.integers(-100, 100)), op_st)
cross_commits_st = st.lists(st.tuples(st.lists(cross_row_st, min_size=0, max_size=30), st.booleans()),
                            min_size=1, max_size=6)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(commits=cross_commits_st, target=st.integers(1, 6),
       engine=st.sampled_from(["deduplicate", "partial-update", "first-row"]),
       spill=st.booleans())
def test_cross_partition_upserts_match_dict_model(commits, target, engine, spill):
    """Cross-partition upsert (the key ``k`` without the partition ``p``): a key is in one partition
    and one bucket of the whole table after any history. deduplicate: the newest row wins and moves
    the key (a -D deletes it wherever it is); partial-update: the key stays in its first partition and
    takes the non-null fields; first-row: the first row stays. Each commit's writer bootstraps its key
    index from the table (``spill``: an index of a few keys in memory, the rest spilled to disk)."""
    options = {"bucket": "-1", "dynamic-bucket.target-row-num": str(target), "merge-engine": engine}
    if spill:
        # the key index holds a few keys in memory and spills the rest (write/key_index.rs)
        options["lookup.cache-max-memory-size"] = "256 b"
    if engine == "deduplicate":
        options["rowkind.field"] = "op"
    schema = Schema.from_pyarrow_schema(SCHEMA, partition_keys=["p"], primary_keys=["k"], options=options)
    with tempfile.TemporaryDirectory() as wh:
        table = new_table(wh, schema)
        model: dict = {}
        for rows, compact in commits:
            if engine != "deduplicate":
                rows = [(*r[:4], "+I") for r in rows]
            commit_rows(table, rows)
            for r in rows:
                k, old = r[1], model.get(r[1])
                if engine == "deduplicate":
                    if r[4] in ("+I", "+U"):
                        model[k] = tuple(r)
                    else:
                        model.pop(k, None)
                elif engine == "first-row":
                    model.setdefault(k, tuple(r))
                else:
                    model[k] = tuple(r) if old is None else (
                        old[0], k, r[2] if r[2] is not None else old[2], r[3] if r[3] is not None else old[3], "+I")
            if compact:
                table.compact(full=True)
            rb = table.new_read_builder()
            got: dict = {}
            places: dict = {}
            for split in rb.new_scan().plan().splits():
                for r in rb.new_read().to_arrow([split]).to_pylist():
                    t = tuple(r[n] for n in SCHEMA.names)
                    assert t[1] not in got, f"key {t[1]} in {split.bucket_path} and {places[t[1]]}"
                    got[t[1]] = t
                    places[t[1]] = split.bucket_path
            want = {k: v[:4] for k, v in model.items()}
            assert {k: v[:4] for k, v in got.items()} == want
