"""Sort compaction of deletion-vector tables (issue #28; paimon-behaviour.md §16): the rows the
vectors mark are not written again, the rewritten files' vectors leave the index manifest with
their index files, and a delete racing the sort conflicts (either commit) instead of being undone
or lost. Bucket-unaware append tables and dynamic-bucket primary-key tables."""

from __future__ import annotations

import random
from collections import Counter
from typing import Any, Dict, Set, Tuple

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from paimon_rs import CommitConflictError, Schema, _core
from paimon_rs.mutations import _positions, _read_with_positions

from unit_helpers import read

SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("x", pa.int64()), ("y", pa.int64())])
Row = Tuple[str, int, int, int]


def make(catalog, name: str, pk: bool = False):
    opts = {"bucket": "-1", "deletion-vectors.enabled": "true", "target-file-size": "16kb"}
    schema = Schema.from_pyarrow_schema(SCHEMA, partition_keys=["dt"], primary_keys=["dt", "id"] if pk else None,
                                        options=opts)
    catalog.create_table(f"db.{name}", schema, False)
    return catalog.get_table(f"db.{name}")


def batch(rows) -> pa.Table:
    cols = list(zip(*rows)) if rows else [[], [], [], []]
    return pa.table({n: list(c) for n, c in zip(SCHEMA.names, cols)}, schema=SCHEMA)


def content(t) -> Counter:
    return Counter(tuple(r.values()) for r in read(t).to_pylist())


def live_files(catalog, name: str) -> Set[str]:
    return {f["file_path"].rsplit("/", 1)[-1] for f in catalog.get_table(f"db.{name}$files").to_arrow().to_pylist()}


def vectors(catalog, name: str) -> Dict[str, Any]:
    """Data file → index file of its vector, as the latest index manifest lists them."""
    out = {}
    for ix in catalog.get_table(f"db.{name}$table_indexes").to_arrow().to_pylist():
        for r in ix["dv_ranges"] or []:
            out[r["f0"]] = ix["file_name"]
    return out


def random_rows(r: random.Random, dt: str, ids, n_x: int = 1000) -> list:
    return [(dt, i, r.randrange(n_x), r.randrange(-50, 50)) for i in ids]


@pytest.mark.parametrize("seed", [0, 1])
def test_append_rows_after_deletes_and_sort_compaction_match_a_model(catalog, seed):
    r = random.Random(seed)
    t = make(catalog, f"app{seed}")
    model: Counter = Counter()
    next_id = 0
    for step in range(8):
        dt = r.choice(["a", "b"])
        rows = random_rows(r, dt, range(next_id, next_id + r.randrange(200, 600)))
        next_id += len(rows)
        t.write(batch(rows))
        model.update(rows)
        if step % 2:
            lo = r.randrange(900)
            n = t.delete(f"x >= {lo} AND x < {lo + 60}").num_deleted_rows
            gone = [k for k in model.elements() if lo <= k[2] < lo + 60]
            assert n == len(gone)
            model.subtract(gone)
            model = +model
        if step in (3, 7):
            files = live_files(catalog, f"app{seed}")
            assert vectors(catalog, f"app{seed}")
            sid = t.sort_compact("zorder", ["x", "y"], partitions=[{"dt": "a"}] if step == 3 else None)
            assert sid is not None
            assert content(t) == model
            marked = vectors(catalog, f"app{seed}")
            # no vector of a dropped file is left; a partition not selected keeps its vectors
            assert set(marked) <= live_files(catalog, f"app{seed}")
            if step == 7:
                assert not marked and not (files & live_files(catalog, f"app{seed}"))
                # the rows the vectors marked were not written again
                stored = catalog.get_table(f"db.app{seed}$files").to_arrow()["record_count"].to_pylist()
                assert sum(stored) == sum(model.values())
    # the table goes on: deletes of sorted files, an append compaction
    t.delete("x < 100")
    model = Counter({k: v for k, v in model.items() if k[2] >= 100})
    assert content(t) == model
    t.compact(full=True)
    assert content(t) == model


def test_primary_key_table_matches_a_dict_model(catalog):
    r = random.Random(7)
    t = make(catalog, "pk", pk=True)
    model: Dict[Tuple[str, int], Row] = {}
    for step in range(6):
        dt = r.choice(["a", "b"])
        rows = random_rows(r, dt, r.sample(range(400), 150))
        t.write(batch(rows))
        model.update({(row[0], row[1]): row for row in rows})
        if step % 2:
            t.delete(f"dt = '{dt}' AND x < 300")
            model = {k: v for k, v in model.items() if not (k[0] == dt and v[2] < 300)}
    assert vectors(catalog, "pk"), "upserts marked rows through deletion vectors"
    old_index = {ix["file_name"] for ix in catalog.get_table("db.pk$table_indexes").to_arrow().to_pylist()}
    assert t.sort_compact("hilbert", ["x", "y"]) is not None
    assert content(t) == Counter(model.values())
    new_index = {ix["file_name"] for ix in catalog.get_table("db.pk$table_indexes").to_arrow().to_pylist()}
    assert not (old_index & new_index), "the overwritten partitions' index files left the index manifest"
    assert set(vectors(catalog, "pk")) <= live_files(catalog, "pk")
    # upserts and deletes go on
    t.write(batch([("a", 1, 5, 5)]))
    model[("a", 1)] = ("a", 1, 5, 5)
    t.delete("x >= 900")
    model = {k: v for k, v in model.items() if v[2] < 900}
    assert content(t) == Counter(model.values())


def test_a_delete_racing_the_sort_conflicts_and_nothing_is_lost(catalog):
    t = make(catalog, "race")
    t.write(batch([("a", i, i, -i) for i in range(300)]))
    t.delete("id < 10")
    # a delete computed before the sort and committed after it: its file is gone
    sid = t.latest_snapshot_id()
    hits = _read_with_positions(t, sid, None, ["id"])
    hits = hits.filter(pc.equal(hits["id"], 50))
    msgs, n = t._core.delete_positions(sid, _positions(hits))
    assert n == 1
    assert t.sort_compact("order", ["y"]) is not None
    before = content(t)
    with pytest.raises(CommitConflictError):
        t.new_batch_write_builder().new_commit().commit(msgs)
    assert content(t) == before and len(before) == 290
    assert t.delete("id = 50").num_deleted_rows == 1  # done again on the sorted files

    # the sort's commit after a delete that marked rows of a file it rewrites (as the Spark
    # driver commits: planned files, the tasks' new files, the partition's vectors dropped)
    sid, items = _core.sort_compaction_plan(t._core, "order", ["x"])
    rows = read(t).sort_by("x")
    w = t.new_batch_write_builder().new_write()
    w.write_arrow(rows)
    written = w.prepare_commit()
    w.close()
    messages = _core.sort_compaction_messages(t._core, list(items), written)
    t.delete("id = 60")
    expected = content(t)
    commit = t.new_batch_write_builder().new_commit()
    with pytest.raises(CommitConflictError):
        commit._core.commit_rewrite(messages, 2**63 - 1)
    commit._core.abort(messages)
    assert content(t) == expected and len(expected) == 288
    assert all(row[1] not in (50, 60) for row in expected)
