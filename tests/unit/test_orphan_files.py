"""Crash leftovers: ``table.remove_orphan_files`` and the sweep of killed writers' spill directories."""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
import uuid

import pyarrow as pa
import pytest

import paimon_rs
from paimon_rs import Schema

from unit_helpers import PK_SCHEMA, read, write

TWO_DAYS = 2 * 86_400


def rows(dt_: str, ids: range, name: str = "n") -> pa.Table:
    return pa.table({"dt": [dt_] * len(ids), "id": list(ids), "name": [name] * len(ids),
                     "price": [float(i) for i in ids]}, schema=PK_SCHEMA)


def make_table(catalog, name: str = "db.t", **options):
    schema = Schema.from_pyarrow_schema(PK_SCHEMA, partition_keys=["dt"], primary_keys=["dt", "id"],
                                        options={"bucket": "2", **options})
    catalog.create_table(name, schema, False)
    return catalog.get_table(name)


def files_under(root) -> set[str]:
    return {os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs}


def age(root, seconds: int = TWO_DAYS) -> None:
    """Make every file and directory under `root` look `seconds` old, as leftovers of a crash
    long ago (the clean keeps files younger than its limit)."""
    t = time.time() - seconds
    for d, dirs, fs in os.walk(root):
        for n in fs + dirs:
            os.utime(os.path.join(d, n), (t, t), follow_symlinks=False)


def snapshot_of(t) -> pa.Table:
    return read(t, sort=["dt", "id"])


def run_child(code: str, *args: str, **kw) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(code), *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **kw)


KILLED_AFTER_PREPARE = """
    import os, signal, sys
    import pyarrow as pa
    from paimon_rs import CatalogFactory
    t = CatalogFactory.create({"warehouse": sys.argv[1]}).get_table("db.t")
    w = t.new_batch_write_builder().new_write()
    w.write_arrow(pa.table({"dt": ["a"] * 50 + ["new"] * 50, "id": list(range(100)),
                            "name": ["killed"] * 100, "price": [1.0] * 100}))
    w.prepare_commit()
    os.kill(os.getpid(), signal.SIGKILL)
"""


def test_leftovers_of_a_writer_killed_after_prepare_commit(catalog, tmp_path):
    t = make_table(catalog)
    write(t, rows("a", range(10)))
    write(t, rows("b", range(10)))
    expected = snapshot_of(t)
    before = files_under(t.table_path)
    child = subprocess.run([sys.executable, "-c", textwrap.dedent(KILLED_AFTER_PREPARE), str(tmp_path / "wh")],
                           capture_output=True, text=True)
    assert child.returncode == -signal.SIGKILL, child.stderr
    leftovers = files_under(t.table_path) - before
    assert leftovers and all(f.endswith(".parquet") for f in leftovers)
    assert os.path.isdir(os.path.join(t.table_path, "dt=new"))

    # young: the default limit (1 day) keeps them, as it keeps the files of a write in flight
    assert len(t.remove_orphan_files()) == 0
    assert files_under(t.table_path) == before | leftovers

    age(t.table_path)
    dry = t.remove_orphan_files(dry_run=True)
    assert set(dry.files) == leftovers and dry.bytes == sum(os.path.getsize(f) for f in leftovers)
    assert files_under(t.table_path) == before | leftovers, "a dry run deletes nothing"

    res = t.remove_orphan_files()
    assert set(res.files) == leftovers and res.bytes == dry.bytes
    assert files_under(t.table_path) == before
    # the partition only the killed writer wrote is removed with its bucket directory
    assert not os.path.exists(os.path.join(t.table_path, "dt=new"))
    assert os.path.join(t.table_path, "dt=new") in res.directories
    assert snapshot_of(t).equals(expected)
    # the table stays writable
    write(t, rows("new", range(3)))
    assert read(t).num_rows == 23


def test_leftovers_of_a_commit_killed_midway(catalog, tmp_path):
    """A commit killed after writing its manifest and manifest lists (and a temp snapshot file):
    the files are dropped in as such a crash leaves them: fresh names, real content."""
    t = make_table(catalog)
    write(t, rows("a", range(10)))
    write(t, rows("a", range(5, 15), "upd"))
    expected = snapshot_of(t)
    before = files_under(t.table_path)
    mdir = os.path.join(t.table_path, "manifest")
    lists = sorted(f for f in os.listdir(mdir) if f.startswith("manifest-list-"))
    manifests = sorted(f for f in os.listdir(mdir) if f.startswith("manifest-") and f not in lists)
    crash = uuid.uuid4()
    dropped = [shutil.copy(os.path.join(mdir, manifests[0]), os.path.join(mdir, f"manifest-{crash}-0")),
               shutil.copy(os.path.join(mdir, lists[0]), os.path.join(mdir, f"manifest-list-{crash}-0")),
               shutil.copy(os.path.join(mdir, lists[1]), os.path.join(mdir, f"manifest-list-{crash}-1"))]
    sdir = os.path.join(t.table_path, "snapshot")
    tmp_snapshot = os.path.join(sdir, f".snapshot-3.{uuid.uuid4()}.tmp")
    shutil.copy(os.path.join(sdir, "snapshot-2"), tmp_snapshot)
    age(t.table_path)
    res = t.remove_orphan_files(older_than=dt.timedelta(hours=1))
    assert set(res.files) == set(dropped) | {tmp_snapshot}
    assert files_under(t.table_path) == before
    assert snapshot_of(t).equals(expected)


KILLED_WRITER_LOOP = """
    import sys
    import pyarrow as pa
    from paimon_rs import CatalogFactory
    t = CatalogFactory.create({"warehouse": sys.argv[1]}).get_table("db.t")
    n = 0
    print("ready", flush=True)
    while True:
        wb = t.new_batch_write_builder()
        w, c = wb.new_write(), wb.new_commit()
        ids = list(range(n * 100, n * 100 + 100))
        w.write_arrow(pa.table({"dt": [["a", "b", "c"][n % 3]] * 100, "id": ids,
                                "name": ["x"] * 100, "price": [1.0] * 100}))
        c.commit(w.prepare_commit())
        n += 1
"""


def test_writers_killed_at_random_points(catalog, tmp_path):
    """SIGKILL a writer that commits in a loop, a few times, at arbitrary points (writing, committing):
    afterwards every file left is referenced (a second clean finds nothing, every read works) and
    the rows are those of the last snapshot."""
    t = make_table(catalog)
    write(t, rows("a", range(5)))
    kills = int(os.environ.get("PAIMON_RS_ORPHAN_KILLS", "5"))
    for i in range(kills):
        child = run_child(KILLED_WRITER_LOOP, str(tmp_path / "wh"))
        assert child.stdout is not None and child.stdout.readline().strip() == "ready"
        time.sleep(0.2 + 0.25 * (i % 6))
        child.send_signal(signal.SIGKILL)
        child.communicate()
    t = catalog.get_table("db.t")
    expected = snapshot_of(t)
    before = files_under(t.table_path)
    age(t.table_path)
    res = t.remove_orphan_files()
    assert files_under(t.table_path) == before - set(res.files)
    assert snapshot_of(t).equals(expected)
    assert len(t.remove_orphan_files()) == 0
    # what was removed was never part of a snapshot: every snapshot still reads
    for sid in range(1, t.latest_snapshot_id() + 1):
        rb = t.new_read_builder()
        plan = paimon_rs.table.TableScan(t, None, sid).plan()
        rb.new_read().to_arrow(plan.splits())


def test_files_of_old_snapshots_and_tags_are_kept(catalog, tmp_path):
    t = make_table(catalog)
    write(t, rows("a", range(10)))
    write(t, rows("a", range(3)), overwrite={"dt": "a"})  # snapshot 2 drops snapshot 1's files
    write(t, rows("b", range(3)))
    sdir = os.path.join(t.table_path, "snapshot")
    # tag snapshot 1, then expire it: only the tag references its files
    os.makedirs(os.path.join(t.table_path, "tag"))
    shutil.copy(os.path.join(sdir, "snapshot-1"), os.path.join(t.table_path, "tag", "tag-first"))
    os.remove(os.path.join(sdir, "snapshot-1"))
    with open(os.path.join(sdir, "EARLIEST"), "w") as f:
        f.write("2")
    before = files_under(t.table_path)
    expected = snapshot_of(t)
    age(t.table_path)
    res = t.remove_orphan_files(older_than=int(time.time() * 1000))
    assert res.files == [] and res.directories == []
    assert files_under(t.table_path) == before
    assert snapshot_of(t).equals(expected)
    # only the tag references snapshot 1's manifest lists (its manifest, and so its data files,
    # are still named by snapshot 2's base list, as in Java: they go with snapshot expiry)
    with open(os.path.join(t.table_path, "tag", "tag-first")) as f:
        tag = json.load(f)
    only_tagged = {os.path.join(t.table_path, "manifest", tag[k]) for k in ("baseManifestList", "deltaManifestList")}
    os.remove(os.path.join(t.table_path, "tag", "tag-first"))
    res = t.remove_orphan_files(older_than=dt.datetime.now())
    assert set(res.files) == only_tagged
    assert snapshot_of(t).equals(expected)


def test_refuses_when_a_referenced_file_is_missing_or_corrupt(catalog, tmp_path):
    t = make_table(catalog)
    write(t, rows("a", range(10)))
    write(t, rows("b", range(10)))
    child = subprocess.run([sys.executable, "-c", textwrap.dedent(KILLED_AFTER_PREPARE), str(tmp_path / "wh")],
                           capture_output=True, text=True)
    assert child.returncode == -signal.SIGKILL
    age(t.table_path)
    mdir = os.path.join(t.table_path, "manifest")
    victims = [os.path.join(mdir, f) for f in sorted(os.listdir(mdir)) if f.startswith("manifest-")]
    victims.append(os.path.join(t.table_path, "snapshot", "snapshot-1"))
    before = files_under(t.table_path)
    aside = str(tmp_path / "aside")
    for victim in victims:
        os.rename(victim, aside)
        with pytest.raises(paimon_rs.CorruptFileError, match="refusing"):
            t.remove_orphan_files()
        assert files_under(t.table_path) == before - {victim}
        os.rename(aside, victim)
        # a corrupt one is refused too
        with open(victim, "rb") as f:
            content = f.read()
        with open(victim, "wb") as f:
            f.write(b"\xff not avro nor json")
        with pytest.raises(paimon_rs.CorruptFileError):
            t.remove_orphan_files(dry_run=True)
        with open(victim, "wb") as f:
            f.write(content)
        age(t.table_path)
    assert files_under(t.table_path) == before
    assert len(t.remove_orphan_files()) > 0


def test_older_than_arguments(catalog):
    t = make_table(catalog)
    write(t, rows("a", range(3)))
    for bad in ["1 day", 1.5, True]:
        with pytest.raises(paimon_rs.InvalidArgumentError, match="older_than"):
            t.remove_orphan_files(older_than=bad)
    with pytest.raises(paimon_rs.InvalidArgumentError, match="future"):
        t.remove_orphan_files(older_than=dt.datetime.now() + dt.timedelta(hours=1))
    with pytest.raises(paimon_rs.InvalidArgumentError, match="future"):
        t.remove_orphan_files(older_than=-dt.timedelta(hours=1))
    assert len(t.remove_orphan_files(older_than=dt.datetime.now(dt.timezone.utc))) == 0


# ---- spill directories of killed writers ----------------------------------------------------

SPILLING_WRITER = """
    import sys
    import pyarrow as pa
    from paimon_rs import CatalogFactory
    t = CatalogFactory.create({"warehouse": sys.argv[1]}).get_table("db.s")
    w = t.new_batch_write_builder().new_write()
    for s in range(0, 20_000, 1000):
        w.write_arrow(pa.table({"k": list(range(s, s + 1000)), "v": ["value-%08d" % k for k in range(s, s + 1000)]}))
    print(w._core.spill_info()[1], flush=True)
    sys.stdin.readline()  # alive until told
"""


def spilling_table(catalog, spill_dir):
    schema = Schema.from_pyarrow_schema(pa.schema([("k", pa.int64()), ("v", pa.string())]), primary_keys=["k"],
                                        options={"bucket": "1", "write-buffer-size": "64 kb",
                                                 "write-buffer-spill.dir": str(spill_dir)})
    catalog.create_table("db.s", schema, False)
    return catalog.get_table("db.s")


def spill_once(t) -> str:
    w = t.new_batch_write_builder().new_write()
    for s in range(0, 20_000, 1000):
        w.write_arrow(pa.table({"k": list(range(s, s + 1000)), "v": [f"value-{k:08d}" for k in range(s, s + 1000)]}))
    count, d = w._core.spill_info()
    assert count > 0 and d is not None and os.path.isdir(d)
    w.close()
    return d


def test_killed_writers_spill_directory_is_swept_live_ones_are_not(catalog, tmp_path):
    spill = tmp_path / "spill"
    t = spilling_table(catalog, spill)
    child = run_child(SPILLING_WRITER, str(tmp_path / "wh"), stdin=subprocess.PIPE)
    try:
        assert child.stdout is not None
        child_dir = child.stdout.readline().strip()
        assert child_dir, child.stderr.read() if child.stderr else ""
        # named after its owner
        assert os.path.basename(child_dir).startswith(f"paimon-rs-spill-{child.pid}-")
        assert os.listdir(child_dir)
        # another writer spills next to it: a live writer's directory is never taken
        mine = spill_once(t)
        assert os.path.dirname(mine) == os.path.dirname(child_dir) and mine != child_dir
        assert os.path.isdir(child_dir) and os.listdir(child_dir)
    finally:
        child.kill()
        child.communicate()
    assert child.returncode == -signal.SIGKILL
    assert os.path.isdir(child_dir), "a killed writer leaves its spill directory behind"
    # the next writer that spills sweeps it
    spill_once(t)
    assert not os.path.exists(child_dir)
    assert os.listdir(spill) == []


def _crash_first_commit(t, data: pa.Table) -> None:
    """What a first commit killed after writing its manifests and manifest lists, before
    ``snapshot-1``, leaves: its files without the snapshot (and without the hint written after
    it)."""
    write(t, data)
    sdir = os.path.join(t.table_path, "snapshot")
    for f in os.listdir(sdir):
        os.remove(os.path.join(sdir, f))


def test_crashed_first_commit_next_commit_and_clean(catalog):
    """The next commit (within the grace period) starts the table with its own rows only; the
    crashed commit's manifests, lists and data files are then ordinary orphans."""
    t = make_table(catalog)
    _crash_first_commit(t, rows("a", range(10), "crashed"))
    crashed = files_under(t.table_path) - files_under(os.path.join(t.table_path, "schema"))
    assert any("manifest-list-" in f for f in crashed)
    write(t, rows("b", range(5)))
    assert t.latest_snapshot_id() == 1
    assert read(t).column("dt").to_pylist() == ["b"] * 5
    age(t.table_path)
    res = t.remove_orphan_files(older_than=dt.timedelta(hours=1))
    assert set(res.files) == crashed
    assert read(t).column("dt").to_pylist() == ["b"] * 5


def test_crashed_first_commit_cleaned_when_old(catalog):
    """Once old, manifests without any snapshot refuse reads and writes (they could be a lost
    history); the message names remove_orphan_files, which recognises a crashed first commit and
    removes everything it wrote; then the next commit starts the table. A lost history of two
    snapshots is refused, nothing deleted."""
    t = make_table(catalog)
    _crash_first_commit(t, rows("a", range(10), "crashed"))
    schema = files_under(os.path.join(t.table_path, "schema"))
    age(t.table_path)
    with pytest.raises(paimon_rs.CorruptFileError, match="remove_orphan_files"):
        write(t, rows("b", range(5)))
    res = t.remove_orphan_files(older_than=dt.timedelta(hours=1))
    assert res.files and files_under(t.table_path) == schema
    write(t, rows("b", range(5)))
    assert t.latest_snapshot_id() == 1
    assert read(t).column("dt").to_pylist() == ["b"] * 5
    assert len(t.remove_orphan_files(older_than=dt.timedelta(hours=1))) == 0

    lost = make_table(catalog, "db.lost")
    write(lost, rows("a", range(3)))
    write(lost, rows("a", range(3), "upd"))
    _crash_first_commit(lost, rows("c", range(3)))  # the snapshots go with it
    age(lost.table_path)
    before = files_under(lost.table_path)
    with pytest.raises(paimon_rs.CorruptFileError, match="snapshots lost"):
        lost.remove_orphan_files(older_than=dt.timedelta(hours=1))
    assert files_under(lost.table_path) == before


KILLED_DYNAMIC_WRITER = """
    import os, signal, sys
    import pyarrow as pa
    from paimon_rs import CatalogFactory
    t = CatalogFactory.create({"warehouse": sys.argv[1]}).get_table("db.dyn")
    w = t.new_batch_write_builder().new_write()
    w.write_arrow(pa.table({"dt": ["a"] * 20, "id": list(range(100, 120)), "name": ["killed"] * 20,
                            "price": [1.0] * 20}))
    w.prepare_commit()
    os.kill(os.getpid(), signal.SIGKILL)
"""


def test_index_files_no_snapshot_lists_are_removed(catalog, tmp_path):
    """``index/`` is cleaned too (Java's OrphanFilesClean): the hash index file of a dynamic-bucket
    writer killed after prepare_commit (as a late speculative Spark attempt leaves one) and a
    stray deletion-vector index file go once old enough; the index files a snapshot lists stay
    (tags, branches, changelogs: the unit tests in table/orphan.rs), and deletes and dynamic
    buckets read as before."""
    dyn = make_table(catalog, "db.dyn", bucket="-1")
    write(dyn, rows("a", range(10)))
    app_schema = pa.schema([("dt", pa.string()), ("id", pa.int64())])
    catalog.create_table("db.app", Schema.from_pyarrow_schema(
        app_schema, partition_keys=["dt"], options={"bucket": "-1", "deletion-vectors.enabled": "true"}), False)
    app = catalog.get_table("db.app")
    write(app, pa.table({"dt": ["a"] * 10, "id": list(range(10))}, schema=app_schema))
    assert app.delete("id < 3").num_deleted_rows == 3
    assert app.delete("id = 5").num_deleted_rows == 1  # replaces the first vectors' index file
    dyn_index = os.path.join(dyn.table_path, "index")
    app_index = os.path.join(app.table_path, "index")
    before = files_under(dyn.table_path) | files_under(app.table_path)
    assert len(os.listdir(app_index)) == 2 and len(os.listdir(dyn_index)) == 1
    child = subprocess.run([sys.executable, "-c", textwrap.dedent(KILLED_DYNAMIC_WRITER), str(tmp_path / "wh")],
                           capture_output=True, text=True)
    assert child.returncode == -signal.SIGKILL, child.stderr
    killed_index = {os.path.join(dyn_index, n) for n in os.listdir(dyn_index)} - before
    assert len(killed_index) == 1
    stray = os.path.join(app_index, f"index-{uuid.uuid4()}-0")
    shutil.copy(os.path.join(app_index, sorted(os.listdir(app_index))[0]), stray)
    age(dyn.table_path)
    age(app.table_path)

    dry = dyn.remove_orphan_files(dry_run=True)
    assert killed_index <= set(dry.files)
    assert os.path.exists(next(iter(killed_index))), "a dry run deletes nothing"
    res = dyn.remove_orphan_files()
    assert set(res.files) == set(dry.files) and killed_index <= set(res.files)
    assert files_under(dyn.table_path) <= before
    assert set(os.listdir(dyn_index)) == {os.path.basename(p) for p in before if p.startswith(dyn_index + os.sep)}
    assert read(dyn).num_rows == 10
    write(dyn, rows("a", range(5, 15)))
    assert read(dyn).num_rows == 15

    res = app.remove_orphan_files()
    assert set(res.files) == {stray}
    assert len(os.listdir(app_index)) == 2  # the live one, and the one snapshot 2 lists
    assert sorted(read(app)["id"].to_pylist()) == [3, 4, 6, 7, 8, 9]
