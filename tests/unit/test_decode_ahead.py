"""Decode-ahead reads (``TableRead.stream(splits, decode_ahead=n)``, what ``paimon_rs.spark.read``
uses): a thread decodes the next batches while the caller works on the current one. An error
in the middle reaches the caller in order, naming the file; stopping early frees the thread; a
forked child reads (its own thread) and never hangs on a stream its parent started."""

import gc
import glob
import os
import subprocess
import sys
import textwrap
import time

import pyarrow as pa
import pytest

from paimon_rs import CatalogFactory, Schema, _core
from paimon_rs.exceptions import PaimonRsError
from paimon_rs.spark import reader

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])
COMMITS = 4  # one file per commit and bucket: a split of several files
ROWS = 100_000  # per commit: a split holds more rows than a raw batch (at most 128K rows)


def _table(tmp_path, buckets: int = 2):
    cat = CatalogFactory.create({"warehouse": str(tmp_path)})
    cat.create_database("db", True)
    opts = {"bucket": str(buckets), "bucket-key": "id"}
    cat.create_table("db.t", Schema.from_pyarrow_schema(SCHEMA, options=opts), False)
    t = cat.get_table("db.t")
    for c in range(COMMITS):
        wb = t.new_batch_write_builder()
        w = wb.new_write()
        ids = pa.array(range(c * ROWS, (c + 1) * ROWS), pa.int64())
        w.write_arrow(pa.table({"id": ids, "v": ids.cast(pa.string())}, schema=SCHEMA))
        wb.new_commit().commit(w.prepare_commit())
        w.close()
    return t


def _splits(t):
    _, splits = t._core.plan(None, None)
    return sorted(splits, key=lambda s: s.bucket_path)


def _wait_no_threads() -> int:
    deadline = time.monotonic() + 30
    while _core.decode_ahead_threads() and time.monotonic() < deadline:
        time.sleep(0.01)
    return _core.decode_ahead_threads()


@pytest.mark.parametrize("depth", [0, 1, 3])
def test_decode_ahead_yields_what_the_plain_stream_yields(tmp_path, depth):
    t = _table(tmp_path)
    r = t._core.new_read(None, None)
    plain = [b for b in r.stream(_splits(t))]
    ahead = [b for b in r.stream(_splits(t), depth)]
    assert len(plain) >= 4  # several batches per split
    assert pa.Table.from_batches(ahead).equals(pa.Table.from_batches(plain))
    assert _wait_no_threads() == 0


def test_an_error_in_the_middle_reaches_the_caller_naming_the_file(tmp_path):
    t = _table(tmp_path)
    first, second = _splits(t)
    # damage a file of the second split: the first split's batches come out, then the error
    victim = sorted(glob.glob(os.path.join(t.table_path, second.bucket_path, "data-*")))[0]
    with open(victim, "r+b") as f:
        f.truncate(os.path.getsize(victim) // 2)
    got = 0
    with pytest.raises(PaimonRsError) as e:
        for b in t._core.new_read(None, None).stream([first, second], 1):
            got += b.num_rows
    assert got > 0
    assert os.path.basename(victim) in str(e.value)
    # the Spark task's wrapper adds the table and the bucket
    with pytest.raises(PaimonRsError) as e:
        list(reader._read_split(t, t._core.new_read(None, None), second.to_bytes(), t.arrow_schema, 1,
                            "paimon_rs.spark.read"))
    assert os.path.basename(victim) in str(e.value)
    assert second.bucket_path in str(e.value) and "db.t" in str(e.value)
    assert _wait_no_threads() == 0


def test_stopping_early_frees_the_thread(tmp_path):
    t = _table(tmp_path)
    r = t._core.new_read(None, None)
    s = r.stream(_splits(t), 2)
    assert next(s).num_rows > 0
    assert _core.decode_ahead_threads() == 1
    s.close()  # joins the thread
    assert _core.decode_ahead_threads() == 0
    assert list(s) == []

    # a Spark read task stopped by a limit: the generator is closed, the stream with it
    gen = reader._read_split(t, r, _splits(t)[0].to_bytes(), t.arrow_schema, 2, "paimon_rs.spark.read")
    assert next(gen).num_rows > 0
    gen.close()
    assert _core.decode_ahead_threads() == 0

    # dropped without close: the thread ends on its own
    s = r.stream(_splits(t), 1)
    next(s)
    del s
    gc.collect()
    assert _wait_no_threads() == 0


def test_a_forked_child_reads_with_decode_ahead(tmp_path):
    _table(tmp_path)
    code = textwrap.dedent(f"""
        import os
        from paimon_rs import CatalogFactory
        t = CatalogFactory.create({{"warehouse": {str(tmp_path)!r}}}).get_table("db.t")
        _, splits = t._core.plan(None, None)
        r = t._core.new_read(None, None)
        print("parent", sum(b.num_rows for b in r.stream(list(splits), 1)), flush=True)
        started = r.stream(list(splits), 2)
        next(started)  # the parent's thread is running, a batch may be queued
        pid = os.fork()
        if pid == 0:
            try:
                next(started)
                print("child continued the parent's stream", flush=True)
            except Exception as e:
                print("inherited", "forked" in str(e), flush=True)
            del started
            n = sum(b.num_rows for b in r.stream(list(splits), 2))
            print("child", n, flush=True)
            os._exit(0)
        _, status = os.waitpid(pid, 0)
        started.close()
        print("status", status, flush=True)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    n = str(COMMITS * ROWS)
    assert out.stdout.split() == ["parent", n, "inherited", "True", "child", n, "status", "0"], out.stdout
