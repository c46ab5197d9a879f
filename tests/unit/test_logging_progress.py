"""Engine log records reach Python's logging under paimon_rs.* loggers; progress callbacks and
the tqdm adapter (issue 13)."""

from __future__ import annotations

import logging
import sys

import pyarrow as pa
import pytest

from paimon_rs import Schema
from paimon_rs.progress import Progress, TqdmProgress

from unit_helpers import fake_tqdm, write

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string())])


def table(catalog, name="db.l", **opts):
    catalog.create_table(name, Schema.from_pyarrow_schema(
        SCHEMA, primary_keys=["k"], options={"bucket": "1", **opts}), False)
    return catalog.get_table(name)


def data(lo, hi):
    ks = list(range(lo, hi))
    return pa.table({"k": ks, "v": [f"value-{k:08d}" for k in ks]}, schema=SCHEMA)


def test_commits_are_logged_with_timings_at_debug(catalog, caplog):
    t = table(catalog)
    with caplog.at_level(logging.DEBUG, logger="paimon_rs"):
        write(t, data(0, 10))
    commit = [r for r in caplog.records if r.name == "paimon_rs.commit"]
    infos = [r.getMessage() for r in commit if r.levelno == logging.INFO]
    debugs = [r.getMessage() for r in commit if r.levelno == logging.DEBUG]
    assert any("db.l: committed snapshot 1" in m and "1 files added" in m for m in infos), infos
    assert any("commit of snapshot 1 took" in m and "1 attempt(s)" in m for m in debugs), debugs


def test_levels_follow_the_python_logger(catalog, caplog):
    t = table(catalog)
    with caplog.at_level(logging.WARNING, logger="paimon_rs"):
        write(t, data(0, 10))
    assert not [r for r in caplog.records if r.name.startswith("paimon_rs.")]
    with caplog.at_level(logging.INFO, logger="paimon_rs"):
        write(t, data(10, 20))
    msgs = [(r.levelno, r.getMessage()) for r in caplog.records if r.name == "paimon_rs.commit"]
    assert [lv for lv, _ in msgs] == [logging.INFO] and "snapshot 2" in msgs[0][1]


def test_spills_are_logged(catalog, caplog, tmp_path):
    t = table(catalog, **{"write-buffer-size": "64 kb", "write-buffer-spill.dir": str(tmp_path / "spill")})
    with caplog.at_level(logging.DEBUG, logger="paimon_rs"):
        wb = t.new_batch_write_builder()
        w, c = wb.new_write(), wb.new_commit()
        for lo in range(0, 20_000, 1000):
            w.write_arrow(data(lo, lo + 1000))
        c.commit(w.prepare_commit())
        w.close()
    spills = [r.getMessage() for r in caplog.records if r.name == "paimon_rs.spill"]
    assert any(m.startswith("spilled a sorted run of") for m in spills), spills
    assert any("took" in m for m in spills)


def test_read_progress(catalog):
    t = table(catalog)
    for lo in range(0, 30, 10):
        write(t, data(lo, lo + 10))
    events = []
    rb = t.new_read_builder().with_progress(events.append)
    splits = rb.new_scan().plan().splits()
    out = rb.new_read().to_arrow(splits, parallelism=1)
    assert out.num_rows == 30 and sorted(out["k"].to_pylist()) == list(range(30))
    assert events and events[-1].done and not any(e.done for e in events[:-1])
    last = events[-1]
    assert (last.phase, last.rows, last.files, last.total_files) == ("read", 30, 3, 3)
    assert last.total_rows == 30 and last.bytes > 0
    assert [e.rows for e in events] == sorted(e.rows for e in events)


def test_write_progress(catalog):
    t = table(catalog)
    events = []
    wb = t.new_batch_write_builder().with_progress(events.append)
    w, c = wb.new_write(), wb.new_commit()
    w.write_arrow(data(0, 10))
    w.write_arrow(data(10, 25))
    c.commit(w.prepare_commit())
    w.close()
    assert [(e.phase, e.rows) for e in events] == [("write", 10), ("write", 25), ("prepare_commit", 25)]
    assert events[-1].files == 1 and events[-1].done and events[1].bytes > events[0].bytes > 0


def test_tqdm_adapter(monkeypatch):
    bars = fake_tqdm(monkeypatch)
    p = TqdmProgress(desc="read")
    p(Progress("read", 10, 2048, 1, total_rows=30, total_files=3))
    p(Progress("read", 30, 4096, 3, total_rows=30, total_files=3, done=True))
    (bar,) = bars
    assert (bar.total, bar.desc, bar.n, bar.closed) == (30, "read", 30, True)
    assert bar.postfix == {"bytes": "4.0 kB", "files": "3/3", "phase": "read"}


def test_tqdm_adapter_without_tqdm_names_the_package(monkeypatch):
    monkeypatch.setitem(sys.modules, "tqdm", None)
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)
    with pytest.raises(ImportError, match="pip install tqdm"):
        TqdmProgress()(Progress("read", 1, 1, 1))


def test_compactions_are_logged(catalog, caplog):
    t = table(catalog, **{"write-only": "true"})
    for lo in range(0, 30, 10):
        write(t, data(lo, lo + 10))
    with caplog.at_level(logging.DEBUG, logger="paimon_rs"):
        assert t.compact(full=True) is not None
    recs = [r for r in caplog.records if r.name == "paimon_rs.compaction"]
    infos = [r.getMessage() for r in recs if r.levelno == logging.INFO]
    assert any("db.l (bucket-0): compacted 3 files" in m and "30 rows" in m and "full" in m
               for m in infos), infos
    assert any("compaction took" in r.getMessage() for r in recs if r.levelno == logging.DEBUG)
