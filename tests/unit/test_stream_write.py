"""``Table.new_stream_write_builder()`` with pypaimon's names: one write kept across commits,
identifiers honoured once per commit user, commit callbacks per commit (issue 29)."""

from __future__ import annotations

import os
import random

import pyarrow as pa
import pytest

from paimon_rs import (
    CommitCallback,
    InvalidArgumentError,
    PaimonRsError,
    Schema,
    StreamTableCommit,
    StreamTableWrite,
    UnsupportedError,
)

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string()),
                    pa.field("dt", pa.string(), nullable=False)])


def _table(catalog, name, **kw):
    catalog.create_table(f"db.{name}", Schema.from_pyarrow_schema(SCHEMA, **kw), False)
    return catalog.get_table(f"db.{name}")


def _rows(table):
    rb = table.new_read_builder()
    out = rb.new_read().to_arrow(rb.new_scan().plan().splits())
    return sorted(zip(*(out.column(n).to_pylist() for n in ("k", "v", "dt"))))


def _batch(rows):
    return pa.Table.from_pylist([{"k": k, "v": v, "dt": dt} for k, v, dt in rows], schema=SCHEMA)


class Recording(CommitCallback):
    def __init__(self):
        self.calls = []

    def call(self, context) -> None:
        self.calls.append((context.snapshot.id, context.identifier))


@pytest.mark.parametrize("kind", ["pk", "pk-dv", "append"])
def test_one_write_many_commits_matches_a_dict_model(catalog, kind):
    """Random upserts over 12 commits of one write: after each commit the table holds what a
    dict model (primary key) or a list (append) holds; a primary-key table compacts across
    commits (its sorted runs reach the trigger), so later commits rewrite files of earlier
    ones."""
    kw = {"partition_keys": ["dt"]}
    if kind != "append":
        kw.update(primary_keys=["k", "dt"], options={"bucket": "2"})
    if kind == "pk-dv":
        kw["options"].update({"deletion-vectors.enabled": "true"})
    t = _table(catalog, f"s_{kind.replace('-', '_')}", **kw)
    rng = random.Random(7)
    model, appended = {}, []
    wb = t.new_stream_write_builder()
    w, c = wb.new_write(), wb.new_commit()
    assert isinstance(w, StreamTableWrite) and isinstance(c, StreamTableCommit)
    compacted = False
    for ident in range(12):
        rows = [(rng.randrange(40), f"v{ident}-{i}", rng.choice(["a", "b"])) for i in range(15)]
        w.write_arrow(_batch(rows))
        for k, v, dt in rows:
            model[(k, dt)] = v
        appended += rows
        msgs = w.prepare_commit(ident)
        compacted |= any(m.compact_before for m in msgs)
        sid = c.commit(msgs, ident)
        assert sid == t.latest_snapshot_id()
        expected = sorted((k, v, dt) for (k, dt), v in model.items()) if kind != "append" else sorted(appended)
        assert _rows(t) == expected
    w.close()
    c.close()
    assert compacted == (kind != "append")
    snaps = t.snapshot_manager().get_latest_snapshot()
    assert snaps.commit_user == wb.commit_user and snaps.commit_identifier == 11


def test_repeated_identifier_lands_once_across_builders(catalog):
    """A restarted job (same commit user, a new builder) re-committing a checkpoint that
    already landed gets that snapshot back and writes nothing (Java's filterAndCommit)."""
    t = _table(catalog, "s_retry", primary_keys=["k", "dt"], options={"bucket": "1"})
    wb = t.new_stream_write_builder().with_commit_user("job-1")
    w, c = wb.new_write(), wb.new_commit()
    w.write_arrow(_batch([(1, "a", "x")]))
    msgs = w.prepare_commit(5)
    assert c.commit(msgs, 5) == 1
    # the response was lost: the restarted job commits identifier 5 again
    wb2 = t.new_stream_write_builder().with_commit_user("job-1")
    c2 = wb2.new_commit()
    cb = Recording()
    c2.add_commit_callback(cb)
    assert c2.commit(msgs, 5) == 1
    assert cb.calls == [(1, 5)]  # callbacks run again for the retried identifier (Java's retry)
    assert t.latest_snapshot_id() == 1 and _rows(t) == [(1, "a", "x")]
    # an identifier below the user's latest that never landed is out of order
    w2 = wb2.new_write()
    w2.write_arrow(_batch([(9, "z", "x")]))
    late = w2.prepare_commit(3)
    with pytest.raises(InvalidArgumentError, match="identifiers must increase"):
        c2.commit(late, 3)
    c2.abort(late)
    w2.close()
    # the kept write continues at the next identifier
    w.write_arrow(_batch([(1, "b", "x"), (2, "c", "x")]))
    assert c.commit(w.prepare_commit(6), 6) == 2
    assert _rows(t) == [(1, "b", "x"), (2, "c", "x")]
    w.close()


def test_callbacks_fire_per_commit_and_empty_commits_write_nothing(catalog):
    t = _table(catalog, "s_cb", partition_keys=["dt"])
    wb = t.new_stream_write_builder()
    w, c = wb.new_write(), wb.new_commit()
    cb = Recording()
    c.add_commit_callback(cb)
    for i in range(3):
        w.write_arrow(_batch([(i, f"v{i}", "p")]))
        c.commit(w.prepare_commit(i), commit_identifier=i)
    # nothing written: no snapshot (pypaimon's snapshot.ignore-empty-commit default)
    assert c.commit(w.prepare_commit(3), 3) is None
    assert cb.calls == [(1, 0), (2, 1), (3, 2)]
    w.close()
    c.close()


def test_close_drops_what_was_not_prepared(catalog, tmp_path):
    t = _table(catalog, "s_close", options={"bucket": "-1"})
    wb = t.new_stream_write_builder()
    w, c = wb.new_write(), wb.new_commit()
    w.write_arrow(_batch([(1, "a", "x")]))
    c.commit(w.prepare_commit(0), 0)
    w.write_arrow(_batch([(2, "b", "x")]))
    w.close()
    assert _rows(t) == [(1, "a", "x")]
    with pytest.raises(PaimonRsError, match="closed"):
        w.write_arrow(_batch([(3, "c", "x")]))
    with pytest.raises(PaimonRsError, match="closed"):
        w.prepare_commit(1)


@pytest.mark.parametrize("bad", [None, True, 1.0, "1", 2**63 - 1])
def test_identifiers_are_checked(catalog, bad):
    t = _table(catalog, "s_bad")
    wb = t.new_stream_write_builder()
    w, c = wb.new_write(), wb.new_commit()
    with pytest.raises(InvalidArgumentError, match="commit_identifier"):
        w.prepare_commit(bad)
    with pytest.raises(InvalidArgumentError, match="commit_identifier"):
        c.commit([], bad)
    w.close()


def test_refused_surface(catalog):
    t = _table(catalog, "s_refused")
    wb = t.new_stream_write_builder()
    with pytest.raises(InvalidArgumentError):
        wb.with_commit_user("")
    with pytest.raises(UnsupportedError, match="with_restore_snapshot"):
        wb.with_restore_snapshot(1)
    w, c = wb.new_write(), wb.new_commit()
    w.write_arrow(_batch([(1, "a", "x")]))
    msgs = w.prepare_commit(0)
    with pytest.raises(UnsupportedError, match="snapshot_properties"):
        c.commit(msgs, 0, snapshot_properties={"a": "b"})
    assert t.latest_snapshot_id() is None
    c.abort(msgs)
    w.close()
    with pytest.raises(UnsupportedError, match="read-only"):
        catalog.get_table("db.s_refused$snapshots").new_stream_write_builder()


def _runs_per_bucket(catalog, name):
    """Sorted runs of each (partition, bucket) of the latest snapshot: its level-0 files plus
    one per non-empty level above."""
    runs = {}
    for f in catalog.get_table(f"db.{name}$files").to_arrow().to_pylist():
        level0, upper = runs.setdefault((f["partition"], f["bucket"]), [0, set()])
        if f["level"] == 0:
            runs[(f["partition"], f["bucket"])][0] += 1
        else:
            upper.add(f["level"])
    return {b: n + len(levels) for b, (n, levels) in runs.items()}


def _data_files_on_disk(t):
    root = t.table_path.removeprefix("file:")
    out = set()
    for dirpath, _, names in os.walk(root):
        if os.path.basename(dirpath).startswith("bucket-"):
            out.update(n for n in names if n.startswith("data-"))
    return out


@pytest.mark.parametrize("kind", ["pk", "pk-dv"])
def test_background_compaction_over_many_commits(catalog, kind):
    """A primary-key stream write compacting in the background (Java's streaming
    ``MergeTreeWriter``), 30 commits of upserts against a dict model: every commit's snapshot
    reads what the model held then (read again at the end, by snapshot id), no snapshot's
    bucket holds more than stop-trigger + 1 sorted runs, the last commit with
    ``wait_compaction=True`` hands over what still ran, and after ``close`` every data file on
    disk is one a commit referenced. A deletion-vector table (needs lookup) compacts within
    ``prepare_commit`` instead, with the same results."""
    opts = {"bucket": "2", "num-sorted-run.compaction-trigger": "3", "num-sorted-run.stop-trigger": "4"}
    if kind == "pk-dv":
        opts["deletion-vectors.enabled"] = "true"
    name = f"bg_{kind.replace('-', '_')}"
    t = _table(catalog, name, primary_keys=["k", "dt"], partition_keys=["dt"], options=opts)
    wb = t.new_stream_write_builder()
    w, c = wb.new_write(), wb.new_commit()
    assert w._core.compacts_in_background() == (kind == "pk")
    rng = random.Random(11)
    model, at = {}, {}
    referenced = set()
    compacted = 0
    for ident in range(31):
        rows = [(rng.randrange(300), f"v{ident}-{i}", rng.choice(["a", "b"])) for i in range(200)]
        w.write_arrow(_batch(rows))
        for k, v, dt in rows:
            model[(k, dt)] = v
        msgs = w.prepare_commit(ident, wait_compaction=(ident == 30))
        for m in msgs:
            referenced.update(m.file_names, m.compact_after, m.changelog_file_names)
            compacted += bool(m.compact_before)
        sid = c.commit(msgs, ident)
        at[sid] = sorted((k, v, dt) for (k, dt), v in model.items())
        assert _rows(t) == at[sid], ident
        runs = _runs_per_bucket(catalog, name)
        assert max(runs.values()) <= 5, (ident, runs)
    assert compacted >= 3
    w.close()
    c.close()
    for sid, want in at.items():
        assert _rows(t.copy({"scan.snapshot-id": str(sid)})) == want, sid
    orphans = _data_files_on_disk(t) - referenced
    assert not orphans


def test_close_while_compacting_in_the_background_leaves_no_orphans(catalog):
    """``close`` right after a commit that submitted compactions, and after rows flushed under
    memory pressure: the running compactions are cancelled or waited for and their files
    deleted with the flushed ones; the table reads its last commit and every data file on
    disk is one a commit referenced (Java's ``MergeTreeWriter.close``)."""
    opts = {"bucket": "2", "num-sorted-run.compaction-trigger": "2", "write-buffer-size": "64 kb",
            "write-buffer-spillable": "false"}
    for round_ in range(3):
        name = f"bg_close_{round_}"
        t = _table(catalog, name, primary_keys=["k", "dt"], options=opts)
        wb = t.new_stream_write_builder()
        w, c = wb.new_write(), wb.new_commit()
        assert w._core.compacts_in_background()
        referenced = set()
        model = {}
        for ident in range(4):
            rows = [(k, f"v{ident}-{k}", "x") for k in range(ident * 500, ident * 500 + 3000)]
            w.write_arrow(_batch(rows))
            model.update({(k, dt): v for k, v, dt in rows})
            msgs = w.prepare_commit(ident)
            for m in msgs:
                referenced.update(m.file_names, m.compact_after)
            c.commit(msgs, ident)
        # flushes under memory pressure (64 kb buffer), then close mid-compaction
        w.write_arrow(_batch([(k, "late", "x") for k in range(20_000, 20_000 + 4000 * (round_ + 1))]))
        w.close()
        assert _rows(t) == sorted((k, v, dt) for (k, dt), v in model.items())
        assert not (_data_files_on_disk(t) - referenced)


def test_wait_compaction_is_a_bool(catalog):
    t = _table(catalog, "bg_flag", primary_keys=["k", "dt"], options={"bucket": "1"})
    w = t.new_stream_write_builder().new_write()
    with pytest.raises(InvalidArgumentError, match="wait_compaction"):
        w.prepare_commit(1, wait_compaction="yes")
    w.close()
