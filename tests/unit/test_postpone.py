"""Postpone-bucket primary-key tables (``bucket = -2``, issue #29): writes land in
``bucket-postpone`` (Avro, Java's writer-prefixed names), reads skip them, ``compact()`` moves
them into real buckets (``postpone.*`` options) where later writes win."""

from __future__ import annotations

import os
from typing import Any, Dict, Optional

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import paimon_rs
from paimon_rs import Schema

from unit_helpers import read, snapshots, write

SCHEMA = pa.schema([("dt", pa.string()), ("k", pa.int64()), ("v", pa.string()),
                    ("op", pa.string())])


def make(catalog, name="db.p", partitioned=True, **options: str):
    opts = {"bucket": "-2", "rowkind.field": "op", **options}
    schema = Schema.from_pyarrow_schema(
        SCHEMA, partition_keys=["dt"] if partitioned else None,
        primary_keys=["dt", "k"] if partitioned else ["k"], options=opts)
    catalog.create_table(name, schema, False)
    return catalog.get_table(name)


def rows(dt, ks, vs, ops=None):
    """Rows (``vs`` None: a delete, ``-D``)."""
    ops = ops or ["+I" if v is not None else "-D" for v in vs]
    return pa.table({"dt": dt, "k": ks, "v": vs, "op": ops}, schema=SCHEMA)


def as_dict(t) -> Dict[Any, Any]:
    return {(r["dt"], r["k"]): r["v"] for r in read(t).to_pylist()}


def bucket_dirs(table) -> Dict[str, list]:
    """Per bucket directory (relative to the table), its data file names."""
    out: Dict[str, list] = {}
    for root, _, files in os.walk(table.table_path):
        name = os.path.basename(root)
        if name.startswith("bucket-"):
            rel = os.path.relpath(root, table.table_path)
            out[rel] = sorted(f for f in files if f.startswith("data-"))
    return out


def total_buckets(table) -> set:
    """The bucket counts the splits of the latest snapshot carry (their manifest entries')."""
    return {s.total_buckets for s in table.new_read_builder().new_scan().plan().splits()}


def test_writes_land_in_bucket_postpone_invisible_until_compacted(catalog):
    t = make(catalog)
    write(t, rows(["a", "a", "b", "a"], [3, 1, 2, 1], ["c", "a", "b", "a2"]))
    assert read(t).num_rows == 0  # invisible, as in Java
    dirs = bucket_dirs(t)
    assert set(dirs) == {"dt=a/bucket-postpone", "dt=b/bucket-postpone"}
    name = dirs["dt=a/bucket-postpone"][0]
    # Java's PostponeBucketFileStoreWrite: "<data-file.prefix>-u-<user>-s-<n>-w-", Avro
    assert name.startswith("data--u-") and "-s-" in name and "-w-" in name, name
    assert name.endswith(".avro"), name
    sid = t.compact()
    assert sid is not None
    assert as_dict(t) == {("a", 1): "a2", ("a", 3): "c", ("b", 2): "b"}
    dirs = bucket_dirs(t)
    # the postpone files were removed by the compaction's snapshot (still on disk until expiry)
    assert any(d.startswith("dt=a/bucket-0") for d in dirs)
    assert snapshots(t)[-1]["commitKind"] == "COMPACT"


def test_manifest_records_bucket_minus_two(catalog):
    t = make(catalog, partitioned=False)
    write(t, rows(["x", "x"], [1, 2], ["a", "b"]))
    entries = t.new_read_builder().new_scan().plan().splits()
    assert entries == []  # no split of bucket-postpone
    sys = catalog.get_table("db.p$files")
    got = sys.new_read_builder().new_read().to_arrow(
        sys.new_read_builder().new_scan().plan().splits()).to_pylist()
    assert [r["bucket"] for r in got] == [-2]
    assert got[0]["file_format"] == "avro"
    assert got[0]["level"] == 0


def test_compaction_merges_with_real_buckets_later_writes_win(catalog):
    t = make(catalog, **{"postpone.default-bucket-num": "3"})
    write(t, rows(["a"] * 4, [1, 2, 3, 4], ["a1", "a2", "a3", "a4"]))
    t.compact()
    assert as_dict(t) == {("a", i): f"a{i}" for i in range(1, 5)}
    # 3 buckets, as postpone.default-bucket-num says
    assert total_buckets(t) == {3}
    real = {d for d in bucket_dirs(t) if "postpone" not in d}
    assert real <= {"dt=a/bucket-0", "dt=a/bucket-1", "dt=a/bucket-2"} and len(real) >= 2
    # two later writes, the second overriding the first, and a delete
    write(t, rows(["a", "a"], [1, 2], ["x1", "x2"]))
    write(t, rows(["a"], [1], ["y1"]))
    write(t, rows(["a"], [4], [None]))
    assert as_dict(t) == {("a", i): f"a{i}" for i in range(1, 5)}  # still invisible
    t.compact(full=False)
    assert as_dict(t) == {("a", 1): "y1", ("a", 2): "x2", ("a", 3): "a3"}
    # the partition keeps its bucket count, whatever the options say now
    t2 = t.copy({"postpone.default-bucket-num": "7"})
    write(t2, rows(["a"], [9], ["n"]))
    t2.compact()
    assert total_buckets(t) == {3}
    real = {d for d in bucket_dirs(t) if "postpone" not in d}
    assert all(d.split("bucket-")[1] in {"0", "1", "2"} for d in real)
    assert as_dict(t)[("a", 9)] == "n"


def test_bucket_count_from_target_row_num(catalog):
    t = make(catalog, **{"postpone.target-row-num-per-bucket": "2"})
    write(t, rows(["a"] * 5, [1, 2, 3, 4, 5], list("abcde")))
    t.compact()
    files = catalog.get_table("db.p$files")
    rb = files.new_read_builder()
    got = rb.new_read().to_arrow(rb.new_scan().plan().splits()).to_pylist()
    # ceil(5 / 2) = 3 buckets; every file says so
    assert {r["bucket"] for r in got} <= {0, 1, 2}
    assert total_buckets(t) == {3}
    assert as_dict(t) == {("a", i): c for i, c in zip(range(1, 6), "abcde")}


def test_options_validated(catalog):
    with pytest.raises(paimon_rs.UnsupportedError, match="postpone.merge-on-read"):
        make(catalog, "db.m", **{"postpone.merge-on-read": "true"})
    with pytest.raises(paimon_rs.PaimonRsError, match="postpone.default-bucket-num.*must be positive"):
        make(catalog, "db.d", **{"postpone.default-bucket-num": "0"})
    with pytest.raises(paimon_rs.UnsupportedError, match="changelog-producer = input"):
        make(catalog, "db.c", **{"changelog-producer": "input"})
    # an append table cannot postpone
    schema = Schema.from_pyarrow_schema(SCHEMA, options={"bucket": "-2"})
    with pytest.raises(paimon_rs.UnsupportedError, match="without a primary key"):
        catalog.create_table("db.a", schema, False)


def test_overwrite_refused(catalog):
    t = make(catalog)
    wb = t.new_batch_write_builder().overwrite()
    with pytest.raises(paimon_rs.UnsupportedError, match="INSERT OVERWRITE of a postpone"):
        w = wb.new_write()
        w.write_arrow(rows(["a"], [1], ["x"]))
        w.prepare_commit()


def test_compact_without_postpone_files_is_a_noop(catalog):
    t = make(catalog)
    assert t.compact() is None
    write(t, rows(["a"], [1], ["x"]))
    assert t.compact() is not None
    assert t.compact() is None


class Model:
    """What a postpone table shows: the rows as of its last compaction."""

    def __init__(self) -> None:
        self.pending: Dict[Any, Optional[str]] = {}
        self.visible: Dict[Any, str] = {}

    def write(self, batch: Dict[int, str]) -> None:
        self.pending.update(batch)

    def compact(self) -> None:
        for k, v in self.pending.items():
            if v is None:
                self.visible.pop(k, None)
            else:
                self.visible[k] = v
        self.pending.clear()


@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=st.lists(st.one_of(
    st.tuples(st.just("w"), st.dictionaries(
        st.integers(0, 12), st.one_of(st.none(), st.text("abc", max_size=2)),
        min_size=1, max_size=6)),
    st.tuples(st.just("c"), st.booleans())), min_size=1, max_size=8),
       buckets=st.integers(1, 4))
def test_model(tmp_path_factory, ops, buckets):
    cat = paimon_rs.CatalogFactory.create(
        {"warehouse": str(tmp_path_factory.mktemp("wh"))})
    cat.create_database("db", True)
    t = make(cat, partitioned=False, **{"postpone.default-bucket-num": str(buckets)})
    model = Model()
    for op, arg in ops:
        if op == "w":
            ks = sorted(arg)
            write(t, rows(["x"] * len(ks), ks, [arg[k] for k in ks]))
            model.write(arg)
        else:
            t.compact(full=arg)
            model.compact()
        got = {k: v for (_, k), v in as_dict(t).items()}
        assert got == model.visible
    t.compact()
    model.compact()
    assert {k: v for (_, k), v in as_dict(t).items()} == model.visible


def test_spark_write_and_compact_refused(catalog):
    pytest.importorskip("pyspark")
    from paimon_rs.spark import compaction, writer

    t = make(catalog)
    with pytest.raises(paimon_rs.UnsupportedError, match="postpone-bucket table"):
        writer.write(None, t)
    with pytest.raises(paimon_rs.UnsupportedError, match="postpone-bucket table"):
        compaction.compact(None, t)


def test_stream_write_lands_in_bucket_postpone(catalog):
    t = make(catalog, partitioned=False)
    wb = t.new_stream_write_builder()
    w, c = wb.new_write(), wb.new_commit()
    w.write_arrow(rows(["x", "x"], [1, 2], ["a", "b"]))
    c.commit(w.prepare_commit(1), 1)
    w.write_arrow(rows(["x"], [1], ["a2"]))
    c.commit(w.prepare_commit(2), 2)
    w.close()
    c.close()
    assert read(t).num_rows == 0
    assert list(bucket_dirs(t)) == ["bucket-postpone"]
    assert len(bucket_dirs(t)["bucket-postpone"]) == 2
    t.compact()
    assert as_dict(t) == {("x", 1): "a2", ("x", 2): "b"}


def test_incremental_read_skips_bucket_postpone(catalog):
    t = make(catalog, partitioned=False)
    write(t, rows(["x", "x"], [1, 2], ["a", "b"]))
    s1 = t.latest_snapshot_id()
    assert read(t.copy({"incremental-between": f"0,{s1}"})).num_rows == 0
    t.compact()
    assert as_dict(t) == {("x", 1): "a", ("x", 2): "b"}


def test_failed_move_leaves_no_files(catalog):
    """A move that fails part way (the second partition's postpone file is truncated) deletes
    the real-bucket files it had already flushed for the first partition, and commits nothing."""
    t = make(catalog, **{"postpone.default-bucket-num": "2", "write-buffer-size": "64 kb",
                         "write-buffer-spillable": "false"})
    n = 20_000
    write(t, rows(["a"] * n, list(range(n)), [f"value-{i:08d}" for i in range(n)]))
    write(t, rows(["b"], [1], ["x"]))
    before = t.latest_snapshot_id()
    (name,) = bucket_dirs(t)["dt=b/bucket-postpone"]
    path = os.path.join(t.table_path, "dt=b", "bucket-postpone", name)
    with open(path, "r+b") as f:
        f.truncate(os.path.getsize(path) // 2)
    with pytest.raises(paimon_rs.PaimonRsError):
        t.compact()
    assert t.latest_snapshot_id() == before
    leftover = {d: fs for d, fs in bucket_dirs(t).items() if "postpone" not in d and fs}
    assert leftover == {}
