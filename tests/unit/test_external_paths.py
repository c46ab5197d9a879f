"""``data-file.external-paths``: new data files written under other roots (Java's
``ExternalPathProvider``), found there by every read, compaction, expiry and abort."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pyarrow as pa
import pytest

from paimon_rs import (
    CorruptFileError,
    InvalidArgumentError,
    PaimonIOError,
    PredicateBuilder,
    Schema,
    SchemaChange,
    UnsupportedError,
)

from unit_helpers import PK_SCHEMA, read, write


def data_files(root: Path) -> list[Path]:
    """Every data file (and file index) under ``root``."""
    return sorted(p for p in root.rglob("*") if p.is_file()
                  and (p.suffix in (".parquet", ".orc", ".avro") or p.name.endswith(".index")))


def ext_options(tmp_path: Path, strategy: str = "round-robin", **more: str) -> dict:
    return {"data-file.external-paths": f"file://{tmp_path / 'ext_a'},file://{tmp_path / 'ext_b'}",
            "data-file.external-paths.strategy": strategy, **more}


def rows(ids, tag="v"):
    return pa.table({"dt": ["d1" if i % 2 else "d2" for i in ids], "id": ids,
                     "name": [f"{tag}{i}" for i in ids], "price": [float(i) for i in ids]},
                    schema=PK_SCHEMA)


def table_files(table) -> list[str]:
    """The data files under the table's own directory."""
    root = Path(table.table_path)
    return [str(p) for p in root.rglob("*") if p.is_file() and p.parent.name.startswith("bucket-")]


def test_pk_table_writes_reads_compacts_and_expires_under_the_external_roots(catalog, tmp_path):
    schema = Schema.from_pyarrow_schema(
        PK_SCHEMA, partition_keys=["dt"], primary_keys=["dt", "id"],
        options={"bucket": "2", **ext_options(tmp_path),
                 "snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1"})
    catalog.create_table("db.t", schema, False)
    t = catalog.get_table("db.t")
    model = {}
    for n, ids in enumerate([range(0, 40), range(20, 60), range(50, 70)]):
        data = rows(list(ids), tag=f"c{n}-")
        write(t, data)
        for r in data.to_pylist():
            model[(r["dt"], r["id"])] = r
    got = read(t, sort=["dt", "id"]).to_pylist()
    assert got == [model[k] for k in sorted(model)]
    # nothing in the table's own bucket directories; both roots used, Paimon's layout under them
    assert table_files(t) == []
    a = data_files(tmp_path / "ext_a")
    b = data_files(tmp_path / "ext_b")
    assert a and b
    for p in a + b:
        rel = p.relative_to(tmp_path).parts
        assert rel[1] in ("dt=d1", "dt=d2") and rel[2] in ("bucket-0", "bucket-1"), p
    # the manifests name each file by its external path (Java's `file:/...` form)
    splits = t.new_read_builder().new_scan().plan().splits()
    ext = [f.external_path for s in splits for f in s.files]
    assert ext and all(e.startswith(f"file:{tmp_path}/ext_") for e in ext), ext[:3]
    # a full compaction writes its output there too; expiry deletes the inputs from there
    before = set(a + b)
    t.compact(full=True)
    assert read(t, sort=["dt", "id"]).to_pylist() == [model[k] for k in sorted(model)]
    t.expire_snapshots(retain_min=1, retain_max=1, older_than=0)
    after = set(data_files(tmp_path / "ext_a") + data_files(tmp_path / "ext_b"))
    assert after and not (after & before), "the compacted inputs were not expired"
    assert table_files(t) == []
    assert read(t, sort=["dt", "id"]).to_pylist() == [model[k] for k in sorted(model)]


def test_append_file_index_beside_its_external_data_file(catalog, tmp_path):
    schema = Schema.from_pyarrow_schema(
        pa.schema([("id", pa.int64()), ("s", pa.string())]),
        options={**ext_options(tmp_path), "file-index.bloom-filter.columns": "s",
                 "file-index.in-manifest-threshold": "1 b"})
    catalog.create_table("db.a", schema, False)
    t = catalog.get_table("db.a")
    write(t, pa.table({"id": list(range(100)), "s": [f"s{i}" for i in range(100)]}))
    write(t, pa.table({"id": list(range(100, 200)), "s": [f"s{i}" for i in range(100, 200)]}))
    files = data_files(tmp_path / "ext_a") + data_files(tmp_path / "ext_b")
    index_files = [p for p in files if p.name.endswith(".index")]
    assert len(index_files) == 2
    for ix in index_files:
        assert ix.with_name(ix.name[: -len(".index")]).exists()
    pb = PredicateBuilder(t.fields)
    got = read(t, predicate=pb.equal("s", "s150")).to_pylist()
    assert got == [{"id": 150, "s": "s150"}]
    # one file holds s150: the other's index, read from its external directory, skips it
    plan = t.new_read_builder().with_filter(pb.equal("s", "s150")).new_scan().plan()
    assert sum(len(s.files) for s in plan.splits()) == 1


def test_abort_deletes_the_external_files(catalog, tmp_path):
    schema = Schema.from_pyarrow_schema(PK_SCHEMA, primary_keys=["dt", "id"],
                                        options={"bucket": "1", **ext_options(tmp_path)})
    catalog.create_table("db.t", schema, False)
    t = catalog.get_table("db.t")
    wb = t.new_batch_write_builder()
    w = wb.new_write()
    w.write_arrow(rows(list(range(10))))
    msgs = w.prepare_commit()
    assert data_files(tmp_path / "ext_a") + data_files(tmp_path / "ext_b")
    wb.new_commit().abort(msgs)
    assert data_files(tmp_path / "ext_a") + data_files(tmp_path / "ext_b") == []


@pytest.mark.parametrize("strategy,more", [
    ("entropy-inject", {}),
    ("weight-robin", {"data-file.external-paths.weights": "1,3"}),
    ("specific-fs", {"data-file.external-paths.specific-fs": "file"}),
])
def test_every_strategy_writes_readable_files(catalog, tmp_path, strategy, more):
    schema = Schema.from_pyarrow_schema(PK_SCHEMA, primary_keys=["dt", "id"],
                                        options={"bucket": "1", **ext_options(tmp_path, strategy, **more)})
    catalog.create_table("db.t", schema, False)
    t = catalog.get_table("db.t")
    for k in range(4):
        write(t, rows(list(range(k * 10, k * 10 + 10))))
    assert read(t, sort=["dt", "id"]).num_rows == 40
    assert table_files(t) == []
    files = [p for p in tmp_path.rglob("*.parquet")]
    assert len(files) == 4
    if strategy == "entropy-inject":
        # <root>/bucket-0/xxxx/xxxx/xxxx/xxxxxxxx/<file>
        for p in files:
            dirs = p.relative_to(tmp_path).parts[2:-1]
            assert [len(d) for d in dirs] == [4, 4, 4, 8] and set("".join(dirs)) <= {"0", "1"}, p


def test_refusals_name_the_option(catalog, tmp_path):
    def create(opts, name="db.bad", schema=PK_SCHEMA):
        catalog.create_table(name, Schema.from_pyarrow_schema(
            schema, primary_keys=["dt", "id"] if schema is PK_SCHEMA else None,
            options={"bucket": "1", **opts} if schema is PK_SCHEMA else opts), False)

    with pytest.raises(InvalidArgumentError, match="no scheme"):
        create({"data-file.external-paths": str(tmp_path / "x"),
                "data-file.external-paths.strategy": "round-robin"})
    with pytest.raises(InvalidArgumentError, match="specific-fs"):
        create({"data-file.external-paths": f"file://{tmp_path}",
                "data-file.external-paths.strategy": "specific-fs"})
    with pytest.raises(InvalidArgumentError, match="1 weights for 2"):
        create(ext_options(tmp_path, "weight-robin", **{"data-file.external-paths.weights": "1"}))
    with pytest.raises(InvalidArgumentError, match="data-file.external-paths.strategy"):
        create(ext_options(tmp_path, "fastest"))
    # a file: URI with a host is refused, never written under /host/...
    with pytest.raises(InvalidArgumentError, match="data-file.external-paths.*host 'server'"):
        create({"data-file.external-paths": f"file://server{tmp_path}/x",
                "data-file.external-paths.strategy": "round-robin"})


def test_file_uri_with_localhost_is_the_local_disk(catalog, tmp_path):
    schema = Schema.from_pyarrow_schema(PK_SCHEMA, primary_keys=["dt", "id"], options={
        "bucket": "1", "data-file.external-paths": f"file://localhost{tmp_path / 'ext_l'}",
        "data-file.external-paths.strategy": "round-robin"})
    catalog.create_table("db.t", schema, False)
    t = catalog.get_table("db.t")
    write(t, rows(list(range(4))))
    # under the root itself, not under /localhost/...
    assert data_files(tmp_path / "ext_l") and read(t).num_rows == 4


def lost_attempt(t, prefix: str, data: pa.Table) -> None:
    """A Spark task attempt that lost: ``data`` written under the file prefix ``prefix``,
    prepared, never committed."""
    from paimon_rs.spark.commit import _task_options

    loser = t.copy(_task_options(t, prefix))
    wb = loser.new_batch_write_builder()
    w = wb.new_write()
    w.write_arrow(data)
    w.prepare_commit()
    w.close()


def test_spark_sweep_deletes_a_lost_attempts_files_under_the_roots(catalog, tmp_path):
    from paimon_rs.spark.commit import _sweep

    schema = Schema.from_pyarrow_schema(
        PK_SCHEMA, primary_keys=["dt", "id"],
        options={"bucket": "1", "changelog-producer": "input", **ext_options(tmp_path)})
    catalog.create_table("db.t", schema, False)
    t = catalog.get_table("db.t")
    # a task attempt that lost: its files written under its prefix, never committed
    lost_attempt(t, "data-job1-a2-", rows(list(range(10))))
    left = [p.name for p in tmp_path.glob("ext_*/**/*.parquet")]
    assert any(n.startswith("data-job1-a2-") for n in left)
    assert any(n.startswith("changelog-job1-a2-") for n in left)
    deleted = _sweep(t, "data-job1-", set())
    assert sorted(os.path.basename(p) for p in deleted) == sorted(left)
    assert list(tmp_path.glob("ext_*/**/*.parquet")) == []


def test_orphan_clean_lists_the_external_roots(catalog, tmp_path):
    import time

    schema = Schema.from_pyarrow_schema(PK_SCHEMA, partition_keys=["dt"], primary_keys=["dt", "id"],
                                        options={"bucket": "1", **ext_options(tmp_path)})
    catalog.create_table("db.t", schema, False)
    t = catalog.get_table("db.t")
    write(t, rows(list(range(20))))
    live = data_files(tmp_path / "ext_a") + data_files(tmp_path / "ext_b")
    # a killed writer's file under a root, and one in the table's own bucket directory
    stray = live[0].with_name("data-deadbeef-0.parquet")
    stray.write_bytes(b"x")
    own = Path(t.table_path) / "dt=d1" / "bucket-0" / "data-deadbeef-1.parquet"
    own.parent.mkdir(parents=True, exist_ok=True)
    own.write_bytes(b"y")
    old = time.time() - 3 * 86400
    for p in live + [stray, own]:
        os.utime(p, (old, old))
    res = t.remove_orphan_files()
    assert sorted(os.path.basename(f) for f in res.files) == ["data-deadbeef-0.parquet",
                                                             "data-deadbeef-1.parquet"]
    assert not stray.exists() and not own.exists() and all(p.exists() for p in live)
    assert read(t).num_rows == 20


def test_entropy_inject_sweep_and_orphan_clean_find_files_in_the_hash_directories(catalog, tmp_path):
    import time

    from paimon_rs.spark.commit import _external_walks, _sweep, _task_options

    schema = Schema.from_pyarrow_schema(
        PK_SCHEMA, partition_keys=["dt"], primary_keys=["dt", "id"],
        options={"bucket": "1", **ext_options(tmp_path, "entropy-inject")})
    catalog.create_table("db.t", schema, False)
    t = catalog.get_table("db.t")
    # the engine's parse of the roots, as the sweep uses it
    assert _external_walks(t) == [(str(tmp_path / "ext_a"), False, 4), (str(tmp_path / "ext_b"), False, 4)]
    write(t, rows(list(range(20))))
    committed = data_files(tmp_path / "ext_a") + data_files(tmp_path / "ext_b")
    assert committed and all(len(p.relative_to(tmp_path).parts) == 8 for p in committed), committed
    # a lost Spark attempt, under its own hash directories: the sweep deletes it, keeps the rest
    loser = t.copy(_task_options(t, "data-job1-a2-"))
    w = loser.new_batch_write_builder().new_write()
    w.write_arrow(rows(list(range(100, 110))))
    w.prepare_commit()
    w.close()
    lost = [p for p in data_files(tmp_path / "ext_a") + data_files(tmp_path / "ext_b") if p not in committed]
    assert lost and all(p.name.startswith("data-job1-a2-") for p in lost)
    # a file of the attempt outside this table's layout under the root is not listed
    foreign = tmp_path / "ext_a" / "other" / "data-job1-a2-x.parquet"
    foreign.parent.mkdir(parents=True)
    foreign.write_bytes(b"z")
    deleted = _sweep(t, "data-job1-", set())
    assert sorted(deleted) == sorted(str(p) for p in lost)
    assert foreign.exists()
    # an orphan deep in the hash directories: removed with the directories it leaves empty;
    # the committed files stay
    stray_dir = tmp_path / "ext_b" / "dt=d1" / "bucket-0" / "0101" / "0000" / "1111" / "00110011"
    stray_dir.mkdir(parents=True)
    stray = stray_dir / "data-deadbeef-0.parquet"
    stray.write_bytes(b"x")
    old = time.time() - 3 * 86400
    for p in committed + [stray, foreign]:
        os.utime(p, (old, old))
    for d in sorted((tmp_path / "ext_b").rglob("*"), reverse=True):
        if d.is_dir():
            os.utime(d, (old, old))
    res = t.remove_orphan_files()
    assert [os.path.basename(f) for f in res.files] == ["data-deadbeef-0.parquet"]
    assert not stray.exists() and not (tmp_path / "ext_b" / "dt=d1" / "bucket-0" / "0101").exists()
    assert all(p.exists() for p in committed) and foreign.exists()
    assert read(t).num_rows == 20


@pytest.mark.parametrize("strategy", ["round-robin", "entropy-inject"])
def test_drop_table_deletes_its_files_under_a_shared_root_and_nothing_else(catalog, tmp_path, strategy):
    def create(name):
        schema = Schema.from_pyarrow_schema(
            PK_SCHEMA, partition_keys=["dt"], primary_keys=["dt", "id"],
            options={"bucket": "1", "changelog-producer": "input", "file-index.bloom-filter.columns": "name",
                     "file-index.in-manifest-threshold": "1 b", **ext_options(tmp_path, strategy)})
        catalog.create_table(name, schema, False)
        return catalog.get_table(name)

    a, b = create("db.a"), create("db.b")
    write(b, rows(list(range(30)), tag="b"))
    before_a = set(data_files(tmp_path / "ext_a") + data_files(tmp_path / "ext_b"))
    for k in range(3):
        write(a, rows(list(range(k * 10, k * 10 + 15)), tag="a"))
    a.create_tag("t1")
    a.compact(full=True)
    files_a = set(data_files(tmp_path / "ext_a") + data_files(tmp_path / "ext_b")) - before_a
    assert any(p.name.endswith(".index") for p in files_a)
    assert any(p.name.startswith("changelog-") for p in files_a)
    # a file nobody's manifest names, in a bucket directory of the shared root
    foreign = next(iter(before_a)).with_name("data-foreign-0.parquet")
    foreign.write_bytes(b"f")
    catalog.drop_table("db.a")
    left = set(data_files(tmp_path / "ext_a") + data_files(tmp_path / "ext_b"))
    assert left == before_a | {foreign}
    assert not os.path.exists(a.table_path)
    got = read(b, sort=["dt", "id"]).to_pylist()
    assert got == rows(list(range(30)), tag="b").sort_by([("dt", "ascending"), ("id", "ascending")]).to_pylist()
    # the directories only the dropped table used are gone; the roots stay
    assert (tmp_path / "ext_a").is_dir() and (tmp_path / "ext_b").is_dir()
    for d in (tmp_path / "ext_a").rglob("*"):
        if d.is_dir():
            assert any(p.is_file() for p in d.rglob("*")), d
    # a database dropped with its tables deletes theirs too
    catalog.drop_database("db", ignore_if_not_exists=False, cascade=True)
    assert data_files(tmp_path / "ext_a") + data_files(tmp_path / "ext_b") == [foreign]


def test_drop_table_refuses_when_a_manifest_cannot_be_read(catalog, tmp_path):
    schema = Schema.from_pyarrow_schema(PK_SCHEMA, primary_keys=["dt", "id"],
                                        options={"bucket": "1", **ext_options(tmp_path)})
    catalog.create_table("db.t", schema, False)
    t = catalog.get_table("db.t")
    write(t, rows(list(range(10))))
    manifest = next(p for p in (Path(t.table_path) / "manifest").iterdir()
                    if p.name.startswith("manifest-") and not p.name.startswith("manifest-list-"))
    manifest.write_bytes(b"garbage")
    with pytest.raises(CorruptFileError, match="refusing to drop the table") as e:
        catalog.drop_table("db.t")
    # the way out is named
    assert "delete this manifest file" in str(e.value) and "remove the table directory by hand" in str(e.value)
    # nothing deleted: the table and its files are all there
    assert os.path.isdir(t.table_path)
    assert data_files(tmp_path / "ext_a") + data_files(tmp_path / "ext_b")


def _ext_table(catalog, tmp_path, name, root):
    schema = Schema.from_pyarrow_schema(PK_SCHEMA, partition_keys=["dt"], primary_keys=["dt", "id"], options={
        "bucket": "1", "data-file.external-paths": f"file://{tmp_path / root}",
        "data-file.external-paths.strategy": "round-robin"})
    catalog.create_table(name, schema, False)
    t = catalog.get_table(name)
    write(t, rows(list(range(6))))
    return t


def test_drop_reads_no_column_type_and_survives_a_corrupt_schema(catalog, tmp_path):
    # a newer Java's schema with a type paimon_rs cannot hold: the drop still finds the files
    t = _ext_table(catalog, tmp_path, "db.vec", "ext_v")
    s0 = Path(t.table_path) / "schema" / "schema-0"
    j = json.loads(s0.read_text())
    j["fields"].append({"id": 9, "name": "vec", "type": "VECTOR<FLOAT, 3>"})
    (s0.parent / "schema-1").write_text(json.dumps(j))
    catalog.drop_table("db.vec")
    assert not os.path.exists(t.table_path) and data_files(tmp_path / "ext_v") == []
    # a schema that is not JSON: the manifests still say which files are the table's
    t = _ext_table(catalog, tmp_path, "db.bad", "ext_c")
    (Path(t.table_path) / "schema" / "schema-0").write_text("{garbage")
    catalog.drop_table("db.bad")
    assert not os.path.exists(t.table_path) and data_files(tmp_path / "ext_c") == []
    # without external paths, a corrupt schema does not block the drop either
    catalog.create_table("db.plain", Schema.from_pyarrow_schema(PK_SCHEMA), False)
    plain = catalog.get_table("db.plain").table_path
    (Path(plain) / "schema" / "schema-0").write_text("{garbage")
    catalog.drop_table("db.plain")
    assert not os.path.exists(plain)
    # not JSON, and a manifest that cannot be read: dropped, and what may be left is said
    t = _ext_table(catalog, tmp_path, "db.lost", "ext_m")
    (Path(t.table_path) / "schema" / "schema-0").write_text("{garbage")
    manifest = next(p for p in (Path(t.table_path) / "manifest").iterdir()
                    if p.name.startswith("manifest-") and not p.name.startswith("manifest-list-"))
    manifest.write_bytes(b"garbage")
    with pytest.raises(PaimonIOError, match="schema-0 is not readable JSON.*may be left"):
        catalog.drop_table("db.lost")
    assert not os.path.exists(t.table_path)


def test_drop_database_tries_every_table_and_reports_all(catalog, tmp_path):
    tables = [_ext_table(catalog, tmp_path, f"db.t{i}", f"ext_{i}") for i in range(3)]
    # the files of t0 and t2 cannot be deleted (their bucket directory is a file now)
    for i in (0, 2):
        bucket = next((tmp_path / f"ext_{i}").rglob("bucket-0"))
        shutil.move(str(bucket), str(tmp_path / f"moved_{i}"))
        bucket.write_text("not a directory")
    with pytest.raises(PaimonIOError, match="2 table\\(s\\) left files") as e:
        catalog.drop_database("db", ignore_if_not_exists=False, cascade=True)
    assert "table db.t0" in str(e.value) and "table db.t2" in str(e.value)
    assert not any(os.path.exists(t.table_path) for t in tables)
    # t1, after the first failure, was still cleaned
    assert data_files(tmp_path / "ext_1") == []


@pytest.mark.parametrize("strategy", ["round-robin", "entropy-inject"])
def test_blob_files_go_under_the_roots_too(catalog, tmp_path, strategy):
    # Java's DataFilePathFactory.newBlobPath and pypaimon's blob writer place .blob files as
    # data files: under a root, named by _EXTERNAL_PATH
    blob_schema = pa.schema([("id", pa.int64()), ("pic", pa.large_binary())])
    catalog.create_table("db.blob", Schema.from_pyarrow_schema(
        blob_schema, options={"row-tracking.enabled": "true", "data-evolution.enabled": "true",
                              "blob.target-file-size": "40b", **ext_options(tmp_path, strategy)}), False)
    t = catalog.get_table("db.blob")
    want = []
    for k in range(2):
        data = pa.table({"id": list(range(k * 5, k * 5 + 5)),
                         "pic": [bytes([i]) * (10 + i) if i % 3 else None for i in range(k * 5, k * 5 + 5)]},
                        schema=blob_schema)
        write(t, data)
        want += data.to_pylist()
    assert read(t, sort=["id"]).to_pylist() == want
    blobs = [p for p in tmp_path.glob("ext_*/**/*.blob")]
    assert len(blobs) >= 4, blobs  # rolled at 40 bytes
    assert not [p for p in Path(t.table_path).rglob("*") if p.is_file() and p.suffix in (".blob", ".parquet")]
    splits = t.new_read_builder().new_scan().plan().splits()
    named = {f.file_name: f.external_path for s in splits for f in s.files}
    assert {n for n in named if n.endswith(".blob")} == {p.name for p in blobs}
    assert all(e and e.startswith(f"file:{tmp_path}/ext_") for e in named.values())
    catalog.drop_table("db.blob")
    assert list(tmp_path.glob("ext_*/**/*.*")) == []


def aged_with_stray(live: list[Path]) -> Path:
    """Age ``live`` by three days and put an as old uncommitted data file beside the first."""
    import time

    stray = live[0].with_name("data-deadbeef-0.parquet")
    stray.write_bytes(b"x")
    old = time.time() - 3 * 86400
    for p in live + [stray]:
        os.utime(p, (old, old))
    return stray


def test_orphan_clean_keeps_the_live_files_of_another_table_sharing_a_root(catalog, tmp_path):
    # Java's clean would delete b's live files (no file says which table it belongs to)
    def make(name):
        schema = Schema.from_pyarrow_schema(PK_SCHEMA, partition_keys=["dt"], primary_keys=["dt", "id"],
                                            options={"bucket": "1", **ext_options(tmp_path)})
        catalog.create_table(name, schema, False)
        return catalog.get_table(name)

    a, b = make("db.a"), make("db.b")
    write(a, rows(list(range(10))))
    write(b, rows(list(range(10, 20))))
    live = data_files(tmp_path / "ext_a") + data_files(tmp_path / "ext_b")
    aged_with_stray(live)
    res = a.remove_orphan_files()
    assert [os.path.basename(f) for f in res.files] == ["data-deadbeef-0.parquet"]
    assert all(p.exists() for p in live)
    assert read(a).num_rows == 10 and read(b).num_rows == 10


def _shared(catalog, name: str, root: str, **more: str):
    """Table ``name`` writing round robin under the one external ``root`` (as spelled)."""
    schema = Schema.from_pyarrow_schema(PK_SCHEMA, partition_keys=["dt"], primary_keys=["dt", "id"], options={
        "bucket": "1", "data-file.external-paths": root, "data-file.external-paths.strategy": "round-robin",
        **more})
    catalog.create_table(name, schema, False)
    return catalog.get_table(name)


def _clean_takes_only_the_stray(a, b, root: Path) -> None:
    live = data_files(root)
    aged_with_stray(live)
    res = a.remove_orphan_files()
    assert [os.path.basename(f) for f in res.files] == ["data-deadbeef-0.parquet"]
    assert all(p.exists() for p in live)
    assert read(b).num_rows == 10


@pytest.mark.parametrize("spelling", ["file://localhost{e}", "FILE://{e}", "file:{e}/", "file://{d}/x/../ext",
                                      "file://{d}/link"])
def test_orphan_clean_sees_a_shared_root_however_spelled(catalog, tmp_path, spelling):
    # another table's root spelled otherwise (or through a symbolic link) is the same directory
    ext = tmp_path / "ext"
    ext.mkdir()
    (tmp_path / "x").mkdir()
    os.symlink(ext, tmp_path / "link")
    a = _shared(catalog, "db.a", f"file://{ext}")
    b = _shared(catalog, "db.b", spelling.format(e=ext, d=tmp_path))
    write(a, rows(list(range(10))))
    write(b, rows(list(range(10, 20))))
    _clean_takes_only_the_stray(a, b, ext)


@pytest.mark.parametrize("change", ["moved", "reset"])
def test_orphan_clean_sees_a_root_only_an_older_schema_names(catalog, tmp_path, change):
    # b wrote under ext, then moved its root (or stopped writing to roots): its files there live
    ext = tmp_path / "ext"
    a = _shared(catalog, "db.a", f"file://{ext}")
    b = _shared(catalog, "db.b", f"file://{ext}")
    write(a, rows(list(range(10))))
    write(b, rows(list(range(10, 20))))
    option = SchemaChange.set_option("data-file.external-paths", f"file://{tmp_path / 'ext2'}") \
        if change == "moved" else SchemaChange.remove_option("data-file.external-paths")
    catalog.alter_table("db.b", [option])
    _clean_takes_only_the_stray(a, catalog.get_table("db.b"), ext)


def test_orphan_clean_sees_another_tables_root_in_its_own_directory(catalog, tmp_path):
    # a has no external paths; b writes its files into a's directory
    schema = Schema.from_pyarrow_schema(PK_SCHEMA, partition_keys=["dt"], primary_keys=["dt", "id"],
                                        options={"bucket": "1"})
    catalog.create_table("db.a", schema, False)
    a = catalog.get_table("db.a")
    b = _shared(catalog, "db.b", f"file://{a.table_path}")
    write(a, rows(list(range(10))))
    write(b, rows(list(range(10, 20))))
    _clean_takes_only_the_stray(a, b, Path(a.table_path))


def _with_column_of_type(table, typ: str) -> None:
    p = Path(table.table_path) / "schema" / "schema-0"
    j = json.loads(p.read_text())
    j["fields"].append({"id": 9, "name": "v9", "type": typ})
    j["highestFieldId"] = 9
    p.write_text(json.dumps(j))


def test_orphan_clean_is_not_blocked_by_tables_that_share_nothing(catalog, tmp_path):
    ext = tmp_path / "ext"
    a = _shared(catalog, "db.a", f"file://{ext}")
    write(a, rows(list(range(10))))
    plain = Schema.from_pyarrow_schema(PK_SCHEMA, partition_keys=["dt"], primary_keys=["dt", "id"],
                                       options={"bucket": "1"})
    catalog.create_table("db.vec", plain, False)
    _with_column_of_type(catalog.get_table("db.vec"), "VECTOR<FLOAT, 3>")  # a newer Java's type
    catalog.create_table("db.corrupt", plain, False)
    (Path(catalog.get_table("db.corrupt").table_path) / "schema" / "schema-0").write_text("{")
    junk = Path(a.table_path).parent / "junk" / "schema"
    junk.mkdir(parents=True)
    (junk / "schema-0").write_text("not json")
    (Path(a.table_path).parent.parent / "notadb" / "x").mkdir(parents=True)
    _clean_takes_only_the_stray(a, a, ext)


def test_orphan_clean_refuses_when_a_sharing_table_cannot_be_read(catalog, tmp_path):
    ext = tmp_path / "ext"
    a = _shared(catalog, "db.a", f"file://{ext}")
    b = _shared(catalog, "db.b", f"file://{ext}")
    write(a, rows(list(range(10))))
    write(b, rows(list(range(10, 20))))
    live = data_files(ext)
    aged_with_stray(live)
    _with_column_of_type(b, "VECTOR<FLOAT, 3>")
    # the schema reader reports the type it cannot hold as a corrupt schema file
    with pytest.raises((CorruptFileError, UnsupportedError), match="db.b.*VECTOR"):
        a.remove_orphan_files()
    # a schema file that is not JSON beside readable ones may have named the root
    b_schema = Path(b.table_path) / "schema"
    shutil.copy(b_schema / "schema-0", b_schema / "schema-1")
    (b_schema / "schema-0").write_text("{")
    (b_schema / "schema-1").write_text((b_schema / "schema-1").read_text().replace(str(ext), "/elsewhere"))
    with pytest.raises(CorruptFileError, match="not JSON"):
        a.remove_orphan_files()
    assert all(p.exists() for p in live)
