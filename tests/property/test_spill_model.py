"""Property test: a tiny, spilling write buffer (multi-pass merge with fan-in 2) gives exactly the
read result of a huge buffer, and of a dict model, with -U/-D rows and duplicate keys in a batch."""

from __future__ import annotations

import os
import tempfile

import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paimon_rs import CatalogFactory, Schema

SCHEMA = pa.schema([("k", pa.int64()), ("s", pa.string()), ("v", pa.int64()), ("op", pa.string())])
row_st = st.tuples(st.integers(0, 30), st.sampled_from(["a", "bb", None]), st.integers(-50, 50),
                   st.sampled_from(["+I", "+U", "-U", "-D"]))
commits_st = st.lists(st.lists(row_st, max_size=40), min_size=1, max_size=4)


def _table(wh, name, options):
    catalog = CatalogFactory.create({"warehouse": wh})
    catalog.create_database("db", True)
    catalog.create_table(f"db.{name}", Schema.from_pyarrow_schema(
        SCHEMA, primary_keys=["k"], options={"bucket": "2", "rowkind.field": "op", **options}), False)
    return catalog.get_table(f"db.{name}")


def _read(t):
    rb = t.new_read_builder()
    return sorted(rb.new_read().to_arrow(rb.new_scan().plan().splits()).to_pylist(), key=lambda r: r["k"])


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(commits=commits_st, chunk=st.integers(1, 6), spillable=st.booleans())
def test_tiny_buffer_equals_huge_buffer(commits, chunk, spillable):
    with tempfile.TemporaryDirectory() as wh, tempfile.TemporaryDirectory() as spill:
        huge = _table(wh, "huge", {})
        tiny = _table(wh, "tiny", {"write-buffer-size": "1 b", "local-sort.max-num-file-handles": "2",
                                   "write-buffer-spillable": str(spillable).lower(),
                                   "write-buffer-spill.dir": spill})
        model = {}
        for rows in commits:
            data = pa.Table.from_pylist([dict(zip(SCHEMA.names, r)) for r in rows], schema=SCHEMA)
            for t, size in ((huge, len(rows) or 1), (tiny, chunk)):
                wb = t.new_batch_write_builder()
                w, c = wb.new_write(), wb.new_commit()
                for b in data.to_batches(max_chunksize=size):
                    w.write_arrow_batch(b)
                c.commit(w.prepare_commit())
                w.close()
            for k, s, v, op in rows:
                if op in ("+I", "+U"):
                    model[k] = {"k": k, "s": s, "v": v, "op": op}
                else:
                    model.pop(k, None)
            want = [model[k] for k in sorted(model)]
            assert _read(huge) == want
            assert _read(tiny) == want
        assert os.listdir(spill) == []
