"""We read the snapshots, partitions and files of a table Java Paimon wrote, compacted, tagged
and expired (issue 15): ``snapshot_manager()`` against the snapshot files Java wrote,
``list_partitions()`` and the CLI's ``files`` against the files Java's own scan plans."""

from __future__ import annotations

import json
import os
from collections import defaultdict

import pytest
from test_java_interop import DB, java_create

from paimon_rs import CatalogFactory
from paimon_rs.cli import main

pytestmark = pytest.mark.java

FIELDS = [("dt", "STRING", None), ("id", "INT", None), ("v", "BIGINT", None)]
KEYS = {"version": "version", "id": "id", "schemaId": "schema_id", "baseManifestList": "base_manifest_list",
        "deltaManifestList": "delta_manifest_list", "changelogManifestList": "changelog_manifest_list",
        "indexManifest": "index_manifest", "commitUser": "commit_user", "commitIdentifier": "commit_identifier",
        "commitKind": "commit_kind", "timeMillis": "time_millis", "totalRecordCount": "total_record_count",
        "deltaRecordCount": "delta_record_count", "changelogRecordCount": "changelog_record_count",
        "watermark": "watermark", "baseManifestListSize": "base_manifest_list_size",
        "deltaManifestListSize": "delta_manifest_list_size", "statistics": "statistics",
        "properties": "properties", "nextRowId": "next_row_id", "logOffsets": None}


def test_we_read_what_java_committed(java, tmp_path, capsys):
    wh = str(tmp_path / "wh")
    java_create(java, wh, "s", FIELDS, ["dt", "id"], ["dt"], {"bucket": "2"})
    for c in range(5):
        java.call("write", warehouse=wh, table=f"{DB}.s", commits=[{
            "rows": [[dt, c * 10 + i, c] for dt in ("2026-11-01", "2026-11-02") for i in range(10)],
            "kinds": None}])
    java.call("compact", warehouse=wh, table=f"{DB}.s", full=True)
    java.call("create_tag", warehouse=wh, table=f"{DB}.s", name="t1")
    java.call("write", warehouse=wh, table=f"{DB}.s", commits=[{"rows": [["2026-11-03", 1, 9]], "kinds": None}])
    java.call("expire_snapshots", warehouse=wh, table=f"{DB}.s", retain_max=3, retain_min=3)

    t = CatalogFactory.create({"warehouse": wh}).get_table(f"{DB}.s")
    sdir = os.path.join(t.table_path, "snapshot")
    present = sorted(int(n.split("-")[1]) for n in os.listdir(sdir) if n.startswith("snapshot-"))
    assert len(present) == 3 and present[-1] >= 7, present
    sm = t.snapshot_manager()
    got = sm.list_snapshots()
    assert [s.id for s in got] == present
    assert sm.try_get_earliest_snapshot().id == present[0] and sm.get_snapshot_by_id(1) is None
    assert sm.get_latest_snapshot().id == present[-1]
    for s in got:
        with open(os.path.join(sdir, f"snapshot-{s.id}")) as f:
            raw = json.load(f)
        fields = s.to_dict()
        for k, v in raw.items():
            assert KEYS.get(k, k) is None or fields[KEYS.get(k, k)] == v, (s.id, k)
    kinds = [s.commit_kind for s in got]
    assert kinds[-1] == "APPEND" and "COMPACT" in kinds
    assert got[-1].total_record_count == 101
    assert t.snapshots().column("snapshot_id").to_pylist() == present

    # partitions and files against the files Java plans
    jfiles = java.call("files", warehouse=wh, table=f"{DB}.s")
    expect = defaultdict(lambda: [0, 0, 0, set()])
    for f in jfiles:
        e = expect[f["partition"][0]]
        e[0] += f["rows"]
        e[1] += f["size"]
        e[2] += 1
        e[3].add(f["bucket"])
    parts = t.list_partitions()
    assert {p.spec["dt"]: (p.record_count, p.file_size_in_bytes, p.file_count, p.total_buckets) for p in parts} == \
        {k: (r, b, n, len(bs)) for k, (r, b, n, bs) in expect.items()}
    assert main(["files", t.table_path, "--json"]) == 0
    ours = json.loads(capsys.readouterr().out)
    assert sorted((f["file_name"], f["bucket"], f["level"], f["row_count"], f["file_size"], f["schema_id"])
                  for f in ours) == \
        sorted((f["file"], f["bucket"], f["level"], f["rows"], f["size"], f["schema_id"]) for f in jfiles)
    assert {f["partition"] for f in ours} == {f"dt={d}/" for d in expect}
