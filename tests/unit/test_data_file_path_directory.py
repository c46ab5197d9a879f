"""``data-file.path-directory``: data files under ``<table>/<dir>/<partition>/bucket-<n>/``
(Java's ``FileStorePathFactory.relativeBucketPath``), found there by every read, compaction,
expiry, orphan clean and drop; manifests, snapshots and index files stay where they are."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pytest
from test_external_paths import aged_with_stray, lost_attempt

from paimon_rs import PaimonRsError, Schema, SchemaChange

from unit_helpers import PK_SCHEMA, read, write


def rows(ids, tag="v"):
    return pa.table({"dt": ["d1" if i % 2 else "d2" for i in ids], "id": ids,
                     "name": [f"{tag}{i}" for i in ids], "price": [float(i) for i in ids]},
                    schema=PK_SCHEMA)


def data_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file() and p.parent.name.startswith("bucket-"))


def make(catalog, name="db.t", pk=True, **opts):
    schema = Schema.from_pyarrow_schema(
        PK_SCHEMA, partition_keys=["dt"], primary_keys=["dt", "id"] if pk else None,
        options={"bucket": "2", **({} if pk else {"bucket-key": "id"}),
                 "data-file.path-directory": "data", **opts})
    catalog.create_table(name, schema, False)
    return catalog.get_table(name)


@pytest.mark.parametrize("pk", [True, False])
def test_writes_reads_compacts_and_expires_under_the_directory(catalog, pk):
    t = make(catalog, pk=pk, **{"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1"})
    root = Path(t.table_path)
    model = {}
    for n, ids in enumerate([range(0, 40), range(20, 60), range(50, 70)]):
        data = rows(list(ids), tag=f"c{n}-")
        write(t, data)
        for r in data.to_pylist():
            if pk:
                model[(r["dt"], r["id"])] = r
            else:
                model[(r["dt"], r["id"], n)] = r
    want = sorted(model.values(), key=lambda r: (r["dt"], r["id"], r["name"]))
    got = sorted(read(t).to_pylist(), key=lambda r: (r["dt"], r["id"], r["name"]))
    assert got == want
    files = data_files(root)
    assert files and all(p.relative_to(root).parts[0] == "data" for p in files), files[:3]
    assert not (root / "dt=d1").exists() and not (root / "dt=d2").exists()
    assert (root / "manifest").is_dir() and (root / "snapshot").is_dir()
    # the plan names the partition as its directory, not the data directory
    assert sorted({p.partition for p in t.compaction_plan()}) == ["dt=d1/", "dt=d2/"]
    before = set(files)
    t.compact(full=True)
    t.expire_snapshots(retain_min=1, retain_max=1, older_than=0)
    after = set(data_files(root))
    assert after and all(p.relative_to(root).parts[0] == "data" for p in after)
    assert not (after & before), "the compacted inputs were not expired"
    got = sorted(read(t).to_pylist(), key=lambda r: (r["dt"], r["id"], r["name"]))
    assert got == want


def test_nested_directory_and_external_paths(catalog, tmp_path):
    ext = tmp_path / "ext"
    t = make(catalog, **{"data-file.path-directory": "./a//b/",
                         "data-file.external-paths": f"file://{ext}",
                         "data-file.external-paths.strategy": "round-robin"})
    write(t, rows(list(range(10))))
    assert read(t).num_rows == 10
    files = data_files(ext)
    # Java: `<root>/<dir>/<partition>/bucket-<n>/` (the relative bucket path holds the directory)
    assert files and all(p.relative_to(ext).parts[:2] == ("a", "b") for p in files), files
    assert data_files(Path(t.table_path)) == []
    # a drop deletes them with the layout directories they leave, the directory's included
    catalog.drop_table("db.t")
    assert list(ext.iterdir()) == []


def test_orphan_clean_and_drop_find_the_directory(catalog):
    t = make(catalog)
    write(t, rows(list(range(20))))
    root = Path(t.table_path)
    live = data_files(root)
    stray = aged_with_stray(live)
    res = t.remove_orphan_files()
    assert [os.path.basename(f) for f in res.files] == ["data-deadbeef-0.parquet"]
    assert not stray.exists() and all(p.exists() for p in live)
    assert read(t).num_rows == 20
    t.drop_partitions([{"dt": "d1"}])
    assert read(t).num_rows == 10
    catalog.drop_table("db.t")
    assert not root.exists()


def test_option_is_immutable_and_checked(catalog):
    t = make(catalog)
    write(t, rows([1, 2]))
    with pytest.raises(PaimonRsError, match="data-file.path-directory"):
        catalog.alter_table("db.t", [SchemaChange.set_option("data-file.path-directory", "other")])
    assert read(t).num_rows == 2
    for bad in ["/abs", "../up", "a/../../b", "s3://b/x", ""]:
        with pytest.raises(PaimonRsError, match="data-file.path-directory"):
            make(catalog, name="db.bad", **{"data-file.path-directory": bad})


def test_files_system_table_and_commit_callback_name_the_real_paths(catalog):
    t = make(catalog)
    write(t, rows(list(range(6))))
    paths = read(catalog.get_table("db.t$files")).column("file_path").to_pylist()
    assert paths and all(os.path.exists(p) and "/data/dt=" in p for p in paths), paths
    from paimon_rs.commit_callback import commit_entries
    entries = commit_entries(t._core, 1)
    assert entries and all(os.path.exists(e.file.file_path) for e in entries)


def test_a_copy_cannot_change_the_directory(catalog):
    t = make(catalog)
    write(t, rows([1, 2]))
    with pytest.raises(Exception, match="data-file.path-directory"):
        t.copy({"data-file.path-directory": "other"})


def test_spark_sweep_finds_a_lost_attempts_files_under_the_directory(catalog, tmp_path):
    from paimon_rs.spark.commit import _sweep

    ext = tmp_path / "ext"
    t = make(catalog, **{"data-file.external-paths": f"file://{ext}",
                         "data-file.external-paths.strategy": "round-robin"})
    lost_attempt(t, "data-job1-a2-", rows(list(range(10))))
    left = data_files(ext)
    assert left and all(p.relative_to(ext).parts[0] == "data" for p in left)
    deleted = _sweep(t, "data-job1-", set())
    assert sorted(os.path.basename(p) for p in deleted) == sorted(p.name for p in left)
    assert data_files(ext) == []
