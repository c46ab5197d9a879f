"""Property test (issue 27): random histories of appends, deletes by filter, merges and
compactions on append tables with deletion vectors, against a multiset model of rows.

A history is a table layout (bucket-unaware partitioned or not, two fixed buckets; 32- or 64-bit
vectors; a small ``target-file-size`` so compaction rewrites into several files) and a list of
steps: an append of rows, a ``table.delete(filter)`` (``id`` below a bound, ``id`` in a set, or a
value match), a ``table.merge`` updating matched rows and inserting the others, an auto or a
full ``table.compact``. After every step the table reads as the model, as a multiset (append
tables keep duplicate rows; a delete or update takes every copy).

``pytest tests/property/test_append_dv_model.py`` draws a few histories per layout (fast, CI);
``-m long`` draws many.
"""

from __future__ import annotations

import os
import tempfile
from collections import Counter
from typing import Any, Dict, List, Tuple

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from paimon_rs import CatalogFactory, Schema

SCHEMA = pa.schema([("dt", pa.string()), pa.field("id", pa.int64(), False), ("v", pa.int64())])

LAYOUTS: Dict[str, Tuple[Dict[str, str], List[str]]] = {
    "unaware": ({"bucket": "-1"}, ["dt"]),
    "unaware-flat": ({"bucket": "-1"}, []),
    "bucketed": ({"bucket": "2", "bucket-key": "id"}, ["dt"]),
}

Row = Tuple[str, int, int]

ids = st.integers(min_value=0, max_value=30)
rows_st = st.lists(st.tuples(st.sampled_from(["a", "b"]), ids, st.integers(0, 5)), min_size=1, max_size=25)
step_st = st.one_of(
    st.tuples(st.just("append"), rows_st),
    st.tuples(st.just("delete_below"), ids),
    st.tuples(st.just("delete_in"), st.lists(ids, min_size=1, max_size=5)),
    st.tuples(st.just("delete_v"), st.integers(0, 5)),
    st.tuples(st.just("merge"), st.lists(st.tuples(st.sampled_from(["a", "b"]), ids, st.integers(6, 9)),
                                         min_size=1, max_size=6, unique_by=lambda r: (r[0], r[1]))),
    st.tuples(st.just("compact"), st.booleans()),
)


def _table(root: str, layout: str, bitmap64: bool) -> Any:
    options, parts = LAYOUTS[layout]
    options = {"deletion-vectors.enabled": "true", "target-file-size": "2 kb",
               "compaction.min.file-num": "2", **options}
    if bitmap64:
        options["deletion-vectors.bitmap64"] = "true"
    cat = CatalogFactory.create({"warehouse": root})
    cat.create_database("db", True)
    cat.create_table("db.t", Schema.from_pyarrow_schema(SCHEMA, partition_keys=parts, options=options), False)
    return cat.get_table("db.t")


def _arrow(rows: List[Row]) -> pa.Table:
    return pa.table({"dt": [r[0] for r in rows], "id": [r[1] for r in rows], "v": [r[2] for r in rows]},
                    schema=SCHEMA)


def _read(t: Any) -> Counter:
    return Counter((r["dt"], r["id"], r["v"]) for r in t.to_arrow().to_pylist())


def run_history(layout: str, bitmap64: bool, steps: List[Tuple[Any, Any]]) -> None:
    with tempfile.TemporaryDirectory() as root:
        t = _table(root, layout, bitmap64)
        model: Counter = Counter()
        for i, (kind, arg) in enumerate(steps):
            if kind == "append":
                t.write(_arrow(arg))
                model.update(arg)
            elif kind == "delete_below":
                n = t.delete(f"id < {arg}").num_deleted_rows
                gone = [r for r in model if r[1] < arg]
                assert n == sum(model[r] for r in gone)
                for r in gone:
                    del model[r]
            elif kind == "delete_in":
                t.delete(f"id IN ({', '.join(map(str, arg))})")
                for r in [r for r in model if r[1] in arg]:
                    del model[r]
            elif kind == "delete_v":
                t.delete(f"v = {arg}")
                for r in [r for r in model if r[2] == arg]:
                    del model[r]
            elif kind == "merge":
                src = _arrow(arg)
                t.merge(src, on=["dt", "id"]).when_matched_update({"v": "source.v"}).when_not_matched_insert_all() \
                    .execute()
                for dt, id_, v in arg:
                    hit = [r for r in model if (r[0], r[1]) == (dt, id_)]
                    if hit:
                        for r in hit:
                            c = model.pop(r)
                            model[(dt, id_, v)] += c
                    else:
                        model[(dt, id_, v)] += 1
            else:
                t.compact(full=arg)
            assert _read(t) == model, f"step {i} {kind} {arg!r} of {steps!r}"


def _check(layout: str, examples: int) -> None:
    @settings(max_examples=examples, deadline=None, derandomize=examples <= 10,
              phases=[Phase.explicit, Phase.reuse, Phase.generate], suppress_health_check=list(HealthCheck))
    @given(st.booleans(), st.lists(step_st, min_size=1, max_size=10))
    def prop(bitmap64: bool, steps: List[Tuple[Any, Any]]) -> None:
        run_history(layout, bitmap64, steps)

    prop()


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_append_dv_histories_match_the_model(layout: str) -> None:
    _check(layout, 8)


@pytest.mark.long
@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_append_dv_histories_match_the_model_long(layout: str) -> None:
    _check(layout, int(os.environ.get("PAIMON_RS_APPEND_DV_EXAMPLES", "150")))


# --- issue 27: the writers of a bucketed table compact with the buckets' deletion vectors ---

loop_step_st = st.tuples(rows_st, st.one_of(st.none(), st.tuples(st.sampled_from(["below", "in", "v"]),
                                                                  st.lists(ids, min_size=1, max_size=4))))


def _live_files(t: Any) -> int:
    return sum(len(s.files) for s in t.new_read_builder().new_scan().plan().splits())


def _deleted_by(kind: str, arg: List[int], r: Row) -> bool:
    if kind == "below":
        return r[1] < arg[0]
    if kind == "in":
        return r[1] in arg
    return r[2] == arg[0] % 6


def run_writer_loop(bitmap64: bool, steps: List[Tuple[List[Row], Any]]) -> None:
    """Appends, each followed by a delete or not, on a two-bucket table whose writers compact
    at three files: after every commit the table reads as the model (no deleted row comes back)
    and each (partition, bucket) holds at most three files, without ``table.compact()``."""
    with tempfile.TemporaryDirectory() as root:
        t = _table(root, "bucketed", bitmap64).copy({"compaction.min.file-num": "3"})
        model: Counter = Counter()
        for i, (new, delete) in enumerate(steps):
            t.write(_arrow(new))
            model.update(new)
            assert _read(t) == model, f"step {i} append of {steps!r}"
            if delete is not None:
                kind, arg = delete
                cond = {"below": f"id < {arg[0]}", "in": f"id IN ({', '.join(map(str, arg))})",
                        "v": f"v = {arg[0] % 6}"}[kind]
                t.delete(cond)
                for r in [r for r in model if _deleted_by(kind, arg, r)]:
                    del model[r]
                assert _read(t) == model, f"step {i} delete {cond} of {steps!r}"
            # 2 partitions x 2 buckets, each compacted by its writer once it holds 3 files
            assert _live_files(t) <= 2 * 2 * 3, f"step {i} of {steps!r}"


def _check_loop(examples: int) -> None:
    @settings(max_examples=examples, deadline=None, derandomize=examples <= 10,
              phases=[Phase.explicit, Phase.reuse, Phase.generate], suppress_health_check=list(HealthCheck))
    @given(st.booleans(), st.lists(loop_step_st, min_size=1, max_size=12))
    def prop(bitmap64: bool, steps: List[Tuple[List[Row], Any]]) -> None:
        run_writer_loop(bitmap64, steps)

    prop()


def test_bucketed_writers_compact_with_vectors() -> None:
    _check_loop(8)


@pytest.mark.long
def test_bucketed_writers_compact_with_vectors_long() -> None:
    _check_loop(int(os.environ.get("PAIMON_RS_APPEND_DV_EXAMPLES", "150")))
