"""Property test (issue #11): random histories of upserts, deletes and compactions against a dict
model, for every merge engine.

A history is a table (merge engine, compaction trigger, ``full-compaction.delta-commits``,
``write-only``, a tiny non-spillable write buffer so flushes stall on
``num-sorted-run.stop-trigger``) and a list of steps: a commit of one or more batches, an auto
compaction (``table.compact(full=False)``, the picker per bucket, as the dedicated compaction job
of a ``write-only`` writer) or a full one. After every step the table reads as the model, and a
writer that compacts leaves no bucket above the stop trigger.

The model folds every record of a key in arrival (= sequence) order. It is exact whatever was
merged when (flush, writer compaction, dedicated compaction, dropping retractions at the top
level), because the histories are drawn so the merges are associative: deletes carry no values
(partial-update / aggregation remove the whole record) and a removed key is never written again
(``remove-record-on-delete`` is not associative, in Java as here: a delete and a later insert
merged by one flush become an insert that no longer removes what older files hold), partial-update
sequence groups order by sequence fields, aggregation uses sum, max, min and last_non_null_value
without retraction.

The ``rowkind.field`` column ``op`` is NOT NULL: a merge result (a removed record, a retraction)
must never write null into it.

``pytest tests/property/test_compaction_model.py`` draws a few histories per engine (fast, CI);
``-m long`` draws many.
"""

from __future__ import annotations

import os
import tempfile
from typing import Any, Dict, List, Optional, Tuple

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, Phase, assume, given, settings
from hypothesis import strategies as st

from paimon_rs import CatalogFactory, Schema

from table_writes import write

SCHEMA = pa.schema([
    pa.field("k", pa.int64(), False),
    ("s1", pa.int64()),
    ("s2", pa.int64()),
    ("a", pa.int64()),
    ("b", pa.int64()),
    pa.field("op", pa.string(), False),
])
VALUES = ("s1", "s2", "a", "b")

ENGINES: Dict[str, Dict[str, str]] = {
    "deduplicate": {},
    "partial-update": {"merge-engine": "partial-update",
                       "partial-update.remove-record-on-delete": "true"},
    # group 1: s1 orders a (s1 drawn increasing, so its deletes may remove the record);
    # group 2: s2 orders b (small values, ties: the later record wins)
    "partial-update-groups": {"merge-engine": "partial-update",
                              "fields.s1.sequence-group": "a",
                              "fields.s2.sequence-group": "b",
                              "partial-update.remove-record-on-sequence-group": "s1"},
    "aggregation": {"merge-engine": "aggregation",
                    "aggregation.remove-record-on-delete": "true",
                    "fields.a.aggregate-function": "sum",
                    "fields.b.aggregate-function": "max",
                    "fields.s1.aggregate-function": "last_non_null_value",
                    "fields.s2.aggregate-function": "min"},
    "first-row": {"merge-engine": "first-row"},
}
# the merging engines again through lookup compaction (issue #27): level 0 forced up at every
# commit, level-0 keys looked up below the output, reads merging a key's lowest level only
for _e in ("partial-update", "aggregation"):
    ENGINES[f"{_e}-lookup"] = {**ENGINES[_e], "force-lookup": "true"}
# deletion vectors (merge-on-write): lookup compaction marks superseded rows, reads skip level 0
# and merge nothing; the writer compacts (table.compact() of such a table is refused)
ENGINES["deduplicate-dv"] = {"deletion-vectors.enabled": "true"}
for _e in ("partial-update", "aggregation"):
    ENGINES[f"{_e}-dv"] = {**ENGINES[_e], "deletion-vectors.enabled": "true"}

Row = Tuple[int, Optional[int], Optional[int], Optional[int], Optional[int], str]
small = st.one_of(st.none(), st.integers(-4, 4))
keys = st.integers(0, 24)


def row_st(engine: str) -> st.SearchStrategy:
    """(k, s1, s2, a, b, op); s1 of partial-update-groups is replaced by an increasing counter."""
    upsert = st.tuples(keys, small, small, small, small,
                       st.sampled_from(["+I", "+U"]))
    if engine == "first-row":
        return upsert
    if engine in ("deduplicate", "deduplicate-dv"):
        return st.tuples(keys, small, small, small, small,
                         st.sampled_from(["+I", "+U", "-U", "-D"]))
    delete = st.tuples(keys, st.none(), st.none(), st.none(), st.none(),
                       st.just("-D"))
    return st.one_of(upsert, upsert, delete)


def step_st(engine: str) -> st.SearchStrategy:
    batch = st.lists(row_st(engine), min_size=1, max_size=10)
    commit = st.tuples(st.just("commit"), st.lists(batch, min_size=1, max_size=3))
    return st.one_of(commit, commit, commit,
                     st.tuples(st.just("compact"), st.booleans()))


def table_st() -> st.SearchStrategy:
    return st.fixed_dictionaries({
        "num-sorted-run.compaction-trigger": st.sampled_from(["2", "3"]),
        "delta": st.sampled_from([None, "1", "2"]),
        "write-only": st.booleans(),
        "tiny-buffer": st.booleans(),
    })


class Model:
    """The expected row of every key, folding its records in arrival order."""

    def __init__(self, engine: str):
        self.engine = engine
        self.records: Dict[int, List[Row]] = {}

    def add(self, r: Row) -> None:
        self.records.setdefault(r[0], []).append(r)

    def rows(self) -> Dict[int, Tuple[Any, ...]]:
        out = {}
        # a lookup table reads as its engine without lookup
        fold = getattr(self, self.engine.removesuffix("-lookup").removesuffix("-dv").replace("-", "_"))
        for k, recs in self.records.items():
            v = fold(recs)
            if v is not None:
                out[k] = v
        return out

    @staticmethod
    def deduplicate(recs: List[Row]) -> Optional[Tuple[Any, ...]]:
        last = recs[-1]
        return None if last[5] in ("-U", "-D") else last[1:5]

    @staticmethod
    def first_row(recs: List[Row]) -> Optional[Tuple[Any, ...]]:
        return recs[0][1:5]

    @staticmethod
    def _fold(recs: List[Row], step) -> Optional[Tuple[Any, ...]]:
        """``step(acc, r)`` over the records in order from four nulls; a delete removes the key
        (what follows starts from nulls again)."""
        acc: Optional[List[Any]] = None
        for r in recs:
            if r[5] == "-D":
                acc = None
                continue
            if acc is None:
                acc = [None] * 4
            step(acc, r)
        return tuple(acc) if acc is not None else None

    @staticmethod
    def partial_update(recs: List[Row]) -> Optional[Tuple[Any, ...]]:
        def step(acc: List[Any], r: Row) -> None:
            for i in range(4):
                if r[1 + i] is not None:
                    acc[i] = r[1 + i]
        return Model._fold(recs, step)

    @staticmethod
    def partial_update_groups(recs: List[Row]) -> Optional[Tuple[Any, ...]]:
        if len(recs) == 1 and recs[0][5] != "-D":
            # a lone record is never merged (Java's ReducerMergeFunctionWrapper): its groups
            # with a null sequence field keep their values
            return recs[0][1:5]

        # (s1, s2, a, b): a follows sequence field s1, b follows s2; s1 grows, so a delete always
        # wins its group: the record is removed
        def step(acc: List[Any], r: Row) -> None:
            if r[1] is not None and (acc[0] is None or r[1] >= acc[0]):
                acc[0], acc[2] = r[1], r[3]
            if r[2] is not None and (acc[1] is None or r[2] >= acc[1]):
                acc[1], acc[3] = r[2], r[4]
        return Model._fold(recs, step)

    @staticmethod
    def aggregation(recs: List[Row]) -> Optional[Tuple[Any, ...]]:
        # s1 last non-null, s2 min, a sum, b max
        def step(acc: List[Any], r: Row) -> None:
            if r[1] is not None:
                acc[0] = r[1]
            if r[2] is not None:
                acc[1] = r[2] if acc[1] is None else min(acc[1], r[2])
            if r[3] is not None:
                acc[2] = r[3] if acc[2] is None else acc[2] + r[3]
            if r[4] is not None:
                acc[3] = r[4] if acc[3] is None else max(acc[3], r[4])
        return Model._fold(recs, step)


def make_table(engine: str, t: Dict[str, Any], wh: str):
    cat = CatalogFactory.create({"warehouse": wh})
    cat.create_database("db", True)
    opts = {"bucket": "2", "rowkind.field": "op", **ENGINES[engine],
            "num-sorted-run.compaction-trigger": t["num-sorted-run.compaction-trigger"],
            "num-sorted-run.stop-trigger": str(int(t["num-sorted-run.compaction-trigger"]) + 1)}
    if t["delta"] is not None:
        opts["full-compaction.delta-commits"] = t["delta"]
    if t["write-only"]:
        opts["write-only"] = "true"
    if t["tiny-buffer"]:
        # every batch flushes a level-0 file mid-commit; compacting writers stall
        opts["write-buffer-size"] = "1 b"
        opts["write-buffer-spillable"] = "false"
    schema = Schema.from_pyarrow_schema(SCHEMA, primary_keys=["k"], options=opts)
    cat.create_table("db.t", schema, False)
    return cat.get_table("db.t"), opts


def commit(table, batches: List[List[Row]]) -> None:
    write(table, [pa.Table.from_pylist([dict(zip(SCHEMA.names, r)) for r in rows], schema=SCHEMA)
                  for rows in batches])


def read(table) -> Dict[int, Tuple[Any, ...]]:
    rb = table.new_read_builder()
    t = rb.new_read().to_arrow(rb.new_scan().plan().splits())
    assert t.column("op").null_count == 0
    out = {}
    for r in t.to_pylist():
        assert r["k"] not in out, f"key {r['k']} read twice"
        out[r["k"]] = tuple(r[c] for c in VALUES)
    return out


def max_runs(table) -> int:
    return max((len(p.runs) for p in table.compaction_plan()), default=0)


def run_history(engine: str, t: Dict[str, Any], steps: List[Any]) -> None:
    with tempfile.TemporaryDirectory(prefix="paimon_rs_cmodel_") as wh:
        _run_history(engine, t, steps, wh)


def _run_history(engine: str, t: Dict[str, Any], steps: List[Any], wh: str) -> None:
    table, opts = make_table(engine, t, wh)
    model = Model(engine)
    counter = 0
    removed: set = set()  # keys removed by remove-record-on-delete engines
    stop = int(opts["num-sorted-run.stop-trigger"])
    for i, step in enumerate(steps):
        if step[0] == "commit":
            batches = []
            for rows in step[1]:
                if engine not in ("deduplicate", "first-row"):
                    kept = []
                    for r in rows:
                        if r[0] not in removed:
                            kept.append(r)
                        if r[5] == "-D":
                            removed.add(r[0])
                    rows = kept
                if not rows:
                    continue
                if engine == "partial-update-groups":
                    # s1 increases with arrival (null stays null; deletes always carry one)
                    fixed = []
                    for r in rows:
                        counter += 1
                        s1 = counter if r[1] is not None or r[5] == "-D" else None
                        fixed.append((r[0], s1) + r[2:])
                    rows = fixed
                batches.append(rows)
            if not batches:
                continue
            commit(table, batches)
            for rows in batches:
                for r in rows:
                    model.add(r)
        elif engine.endswith("-dv"):
            continue  # its writers compact it; table.compact() is refused (tested elsewhere)
        else:
            table.compact(full=step[1])
        got, want = read(table), model.rows()
        assert got == want, f"step {i} {step[0]} of {steps!r} ({opts})"
        if not t["write-only"]:
            assert max_runs(table) <= stop, f"step {i}: more runs than the stop trigger"


def _check(engine: str, examples: int) -> None:
    # no shrinking: each example is a table and many commits; the failure message is readable
    @settings(max_examples=examples, deadline=None, derandomize=examples <= 10,
              phases=[Phase.explicit, Phase.reuse, Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(table_st(), st.lists(step_st(engine), min_size=1, max_size=8))
    def prop(t, steps):
        # first-row and deletion-vector reads skip level 0: a write-only table shows only what
        # was compacted
        assume(not ((engine == "first-row" or engine.endswith("-dv")) and t["write-only"]))
        run_history(engine, t, steps)

    prop()


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_compaction_histories_match_the_model(engine: str) -> None:
    _check(engine, 6)


@pytest.mark.long
@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_compaction_histories_match_the_model_long(engine: str) -> None:
    _check(engine, int(os.environ.get("PAIMON_RS_COMPACTION_EXAMPLES", "150")))
