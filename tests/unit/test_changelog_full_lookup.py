"""``changelog-producer = full-compaction`` with ``force-lookup`` (issue 27; Java's
``MergeTreeCompactManagerFactory``: ``ForceUpLevel0Compaction``, the
``FullChangelogMergeTreeCompactRewriter`` and the ``LookupMergeFunction``): every commit forces
level 0 up; a commit that is not a full compaction (``full-compaction.delta-commits``) writes
no changelog; a full compaction's changelog is each key's diff against the previous full
compaction. Checked against a dict model: the changelog read (``incremental-between`` in
``changelog`` mode) between two full compactions is the diff of the model at the two, and the
whole changelog replays to the table."""

from __future__ import annotations

import tempfile
from typing import Dict, List, Optional, Tuple

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paimon_rs import CatalogFactory, Schema

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.int64())])

ENGINES = {
    "deduplicate": {},
    "sum": {"merge-engine": "aggregation", "fields.v.aggregate-function": "sum"},
    "partial-update": {"merge-engine": "partial-update"},
}


def _table(wh: str, engine: str, delta_commits: int, buckets: int = 1, force_lookup: str = "true"):
    cat = CatalogFactory.create({"warehouse": wh})
    cat.create_database("db", True)
    options = {"bucket": str(buckets), "changelog-producer": "full-compaction", "force-lookup": force_lookup,
               "full-compaction.delta-commits": str(delta_commits), **ENGINES[engine]}
    cat.create_table("db.t", Schema.from_pyarrow_schema(SCHEMA, primary_keys=["k"], options=options), False)
    return cat.get_table("db.t")


def _commit(table, rows: List[Tuple[int, Optional[int]]], ident: int) -> None:
    """One streaming commit with ``ident``: its writer compacts fully when ``ident`` is a
    multiple of ``full-compaction.delta-commits``, else forces level 0 up."""
    wb = table.new_batch_write_builder()
    w, c = wb.new_write(), wb.new_commit()
    if rows:
        w.write_arrow(pa.table({"k": [r[0] for r in rows], "v": [r[1] for r in rows]}, schema=SCHEMA))
    c.commit(w._prepare_commit(ident), ident)
    w.close()


def _apply(model: Dict[int, Optional[int]], engine: str, rows) -> None:
    for k, v in rows:
        if engine == "deduplicate" or k not in model:
            model[k] = v
        elif engine == "sum":
            model[k] = v if model[k] is None else (model[k] if v is None else model[k] + v)
        elif v is not None:  # partial-update: a null leaves the column be
            model[k] = v


def _state(table) -> Dict[int, Optional[int]]:
    return {r["k"]: r["v"] for r in table.to_arrow().to_pylist()}


def _changelog(table, start: int, end: int) -> List[Tuple[str, int, Optional[int]]]:
    t = table.copy({"incremental-between": f"{start},{end}", "incremental-between-scan-mode": "changelog"})
    rb = t.new_read_builder()
    return [(r["rowkind"], r["k"], r["v"]) for r in rb.new_read().to_arrow(rb.new_scan().plan().splits()).to_pylist()]


def _diff(before: Dict[int, Optional[int]], after: Dict[int, Optional[int]]):
    out = []
    for k in sorted(set(before) | set(after)):
        if k not in after:
            out.append(("-D", k, before[k]))
        elif k not in before:
            out.append(("+I", k, after[k]))
        else:  # no row-deduplicate: a rewritten equal value is -U/+U too
            out += [("-U", k, before[k]), ("+U", k, after[k])]
    return out


def _replay(records) -> Dict[int, Optional[int]]:
    state: Dict[int, Optional[int]] = {}
    for kind, k, v in records:
        if kind in ("+I", "+U"):
            state[k] = v
        else:
            state.pop(k, None)
    return state


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_force_ups_write_no_changelog_and_full_compactions_diff_the_previous(engine):
    commits = [
        [(i, i) for i in range(1, 300)],  # a large max level: later level-0 files go up below it
        [(1, 10), (2, 20), (500, 5)],
        [(1, 100), (3, None), (501, 1)],
        [(2, 2000)],
        [(1, 7), (502, 2)],
        [(3, 4)],
    ]
    with tempfile.TemporaryDirectory() as wh:
        table = _table(wh, engine, delta_commits=2)
        model: Dict[int, Optional[int]] = {}
        full_model: Dict[int, Optional[int]] = {}
        last_full, since = 0, set()
        for i, rows in enumerate(commits, start=1):
            before = table.latest_snapshot_id() or 0
            _commit(table, rows, i)
            _apply(model, engine, rows)
            since |= {k for k, _ in rows}
            assert _state(table) == model, i
            end = table.latest_snapshot_id()
            got = _changelog(table, before, end)
            if i == 1:  # an empty bucket: level 0 goes up into the max level, each row +I
                assert sorted(got) == [("+I", k, v) for k, v in sorted(model.items())]
            elif i % 2 == 1:  # forced up below the max level: no changelog
                assert got == [], i
                continue
            else:  # a full compaction: each key written since the last one against its max-level row
                got = _changelog(table, last_full, end)
                assert sorted(got) == sorted(r for r in _diff(full_model, model) if r[1] in since), i
            full_model, last_full, since = dict(model), end, set()
            assert _replay(_changelog(table, 0, end)) == model
        # Table.changelog reads the same records
        assert [(r["rowkind"], r["k"], r["v"]) for r in table.changelog(0).to_pylist()] == \
            _changelog(table, 0, last_full)


commit_st = st.lists(st.tuples(st.integers(0, 15), st.one_of(st.none(), st.integers(-50, 50))), max_size=12)


@pytest.mark.parametrize("engine", sorted(ENGINES))
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(commits=st.lists(commit_st, min_size=1, max_size=6), delta=st.integers(1, 3))
def test_changelog_replays_to_the_model_at_each_full_compaction(engine, commits, delta):
    # one bucket: a commit compacts fully only the buckets it wrote (Flink's writer, the buckets
    # written since its last full compaction), so another bucket's changelog may lag
    with tempfile.TemporaryDirectory() as wh:
        table = _table(wh, engine, delta_commits=delta)
        model: Dict[int, Optional[int]] = {}
        for i, rows in enumerate(commits, start=1):
            if not rows:  # a writer compacts the buckets it wrote
                continue
            _commit(table, rows, i)
            _apply(model, engine, rows)
            assert _state(table) == model
            end = table.latest_snapshot_id()
            if end is not None and i % delta == 0 and rows:
                assert _replay(_changelog(table, 0, end)) == model


def _stream_commit(table, rows: List[Tuple[int, Optional[int]]], ident: int, user: str) -> None:
    """One micro-batch of a streaming writer that lives for one commit (a Spark micro-batch's
    tasks), as ``paimon_rs.spark``'s stream writer commits it: the writer compacts the buckets
    it wrote when ``ident`` is a full compaction's, and the driver adds the full compaction of
    the buckets the commit user wrote earlier in the window (``compact_full_window``)."""
    from paimon_rs import _core

    wb = table.new_batch_write_builder().with_commit_user(user)
    w, c = wb.new_write(), wb.new_commit()
    if rows:
        w.write_arrow(pa.table({"k": [r[0] for r in rows], "v": [r[1] for r in rows]}, schema=SCHEMA))
    msgs = [m for m in w._prepare_commit(ident) if not m.is_empty()]
    msgs += _core.compact_full_window(table._core, user, ident, [(m.partition, m.bucket) for m in msgs])
    if msgs:
        c.commit(msgs, ident)
    w.close()


@pytest.mark.parametrize("force_lookup", ["true", "false"])
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(commits=st.lists(commit_st, min_size=1, max_size=7), delta=st.integers(1, 3))
def test_every_bucket_written_in_the_window_has_its_changelog_at_each_full_compaction(force_lookup, commits, delta):
    # four buckets, commits that write some of them: the full compaction of each
    # delta-commits-th identifier takes every bucket written since the previous one (Flink's
    # GlobalFullCompactionSinkWrite), so the whole changelog replays to the table there
    with tempfile.TemporaryDirectory() as wh:
        table = _table(wh, "deduplicate", delta_commits=delta, buckets=4, force_lookup=force_lookup)
        model: Dict[int, Optional[int]] = {}
        for i, rows in enumerate(commits, start=1):
            _stream_commit(table, rows, i, "stream-user")
            _apply(model, "deduplicate", rows)
            assert _state(table) == model
            end = table.latest_snapshot_id()
            if end is not None and i % delta == 0:
                assert _replay(_changelog(table, 0, end)) == model, i
