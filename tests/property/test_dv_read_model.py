"""Property test (issue #27): a deletion-vector table reads as the merge-on-read of the same
history, with projections, predicates and limits.

Two tables take the same commits: one with ``deletion-vectors.enabled`` (its writer's lookup
compaction marks superseded rows; reads take the raw path and drop marked rows batch by batch)
and one without (reads merge). The base file is large enough to be read in several batches
(``raw_batch_rows``: 16Ki-128Ki rows), so the drawn upserts and deletes put marks at a file's
first and last rows, on both sides of a batch boundary, in runs, and on every row of a small
file: the edge cases of dropping marked rows batch by batch (positions counted across batches).
"""

from __future__ import annotations

from typing import List, Tuple

import pyarrow as pa
import pyarrow.compute as pc
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from paimon_rs import CatalogFactory, Schema

from table_writes import write

SCHEMA = pa.schema([
    pa.field("k", pa.int64(), False),
    ("v", pa.int64()),
    ("s", pa.string()),
    ("f", pa.float64()),
    pa.field("op", pa.string(), False),
])
BASE = 300_000  # keys 0..BASE in one base commit: one file, several batches
SMALL = 1_000_000  # a small second file at these keys (all of its rows may be deleted)

# key sets drawn: the base file's ends, batch boundaries of 16Ki / 64Ki / 128Ki rows, runs, random
_edges = [0, 1, BASE - 1, BASE - 2, 16_383, 16_384, 65_535, 65_536, 131_071, 131_072]
keys_st = st.one_of(
    st.sets(st.sampled_from(_edges), min_size=1),
    st.builds(lambda a, n: set(range(a, min(a + n, BASE))), st.integers(0, BASE - 1),
              st.integers(1, 3000)),
    st.sets(st.integers(0, BASE - 1), min_size=1, max_size=200),
    st.just(set(range(SMALL, SMALL + 10))),
)
step_st = st.tuples(keys_st, st.sampled_from(["+U", "-D"]))


def _rows(keys, op: str, salt: int) -> pa.Table:
    keys = sorted(keys)
    return pa.table({
        "k": keys,
        "v": [None if (k + salt) % 11 == 0 else k * 7 + salt for k in keys],
        "s": [None if (k + salt) % 13 == 0 else f"s{k % 97}-{salt}" * (k % 3) for k in keys],
        "f": [k / 3 + salt for k in keys],
        "op": [op] * len(keys),
    }, schema=SCHEMA)


def _table(wh: str, dv: bool):
    cat = CatalogFactory.create({"warehouse": wh})
    cat.create_database("db", True)
    opts = {"bucket": "1", "rowkind.field": "op"}
    if dv:
        opts["deletion-vectors.enabled"] = "true"
    cat.create_table("db.t", Schema.from_pyarrow_schema(SCHEMA, primary_keys=["k"], options=opts), False)
    return cat.get_table("db.t")


def _read(table, projection=None, where=None, limit=None) -> pa.Table:
    rb = table.new_read_builder()
    if projection is not None:
        rb = rb.with_projection(projection)
    if where is not None:
        rb = rb.with_filter(where)
    if limit is not None:
        rb = rb.with_limit(limit)
    return rb.new_read().to_arrow(rb.new_scan().plan().splits())


def _sorted(t: pa.Table) -> pa.Table:
    return t.sort_by([(t.column_names[0], "ascending")]) if t.num_rows else t


def check(tmp_path, steps: List[Tuple[set, str]]) -> None:
    dv, mor = _table(str(tmp_path / "dv"), True), _table(str(tmp_path / "mor"), False)
    base = [_rows(range(BASE), "+I", 0), _rows(range(SMALL, SMALL + 10), "+I", 0)]
    for t in (dv, mor):
        write(t, base)
    seen_dv = False
    for i, (keys, op) in enumerate(steps, 1):
        for t in (dv, mor):
            write(t, _rows(keys, op, i))
        splits = dv.new_read_builder().new_scan().plan().splits()
        seen_dv = seen_dv or any(s.has_deletion_vectors for s in splits)
        want = _read(mor)
        got = _read(dv)
        assert got.num_rows == want.num_rows, f"step {i}"
        assert _sorted(got).equals(_sorted(want)), f"step {i}: {steps!r}"
    # the history exercised the path: some read dropped marked rows
    assert seen_dv, steps
    for proj in (["s", "k"], ["f"], ["k", "v"]):
        got, want = _read(dv, proj), _read(mor, proj)
        assert got.column_names == proj
        assert sorted(got.to_pylist(), key=repr) == sorted(want.to_pylist(), key=repr)
    for where in ("v > 1000000", "k >= 131000 AND k < 131100", "s IS NULL"):
        got, want = _read(dv, where=where), _read(mor, where=where)
        # a predicate may leave rows of the pages it cannot skip: compare what matches it
        expr = {"v > 1000000": pc.field("v") > 1_000_000,
                "k >= 131000 AND k < 131100": (pc.field("k") >= 131_000) & (pc.field("k") < 131_100),
                "s IS NULL": pc.field("s").is_null()}[where]
        assert _sorted(got.filter(expr)).equals(_sorted(want.filter(expr))), where
    live = set(_read(mor, ["k"]).column("k").to_pylist())
    got = _read(dv, limit=5)
    assert got.num_rows >= min(5, len(live))
    assert set(got.column("k").to_pylist()) <= live


@settings(max_examples=4, deadline=None, derandomize=True,
          phases=[Phase.explicit, Phase.reuse, Phase.generate],
          suppress_health_check=list(HealthCheck))
@given(st.lists(step_st, min_size=1, max_size=4))
def test_dv_reads_equal_the_merge_on_read(tmp_path_factory, steps) -> None:
    check(tmp_path_factory.mktemp("dvread"), steps)


def test_dv_read_of_marks_at_every_edge(tmp_path) -> None:
    """The explicit edge cases in one history: both ends of the file and of batches, a run
    across a batch boundary, every row of the small file deleted, a delete of an updated key."""
    check(tmp_path, [
        (set(_edges), "+U"),
        (set(range(16_000, 17_000)) | {BASE - 1}, "-D"),
        (set(range(SMALL, SMALL + 10)), "-D"),
        ({0, 5, 65_536}, "-D"),
    ])
