"""Table operations across engines: Java Paimon (1.0) reads our table after each of our tags,
expiries and rollbacks, and we read tables on which Java created tags, rolled back and expired.
Rows are compared with a dict model per snapshot."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

from paimon_rs import CatalogFactory, Schema

from table_writes import write_rows

pytestmark = pytest.mark.java

DB = "db"
FIELDS = [{"name": "k", "type": "INT NOT NULL"}, {"name": "v", "type": "STRING"}]
ARROW = pa.schema([("k", pa.int32(), False), ("v", pa.string())])


def tname(request) -> str:
    return "t_" + "".join(c if c.isalnum() else "_" for c in request.node.name)[-60:]


class Both:
    """One table, written by either engine, with the rows of each snapshot."""

    def __init__(self, java, wh, name: str, java_creates: bool) -> None:
        self.java, self.wh, self.name = java, str(wh), name
        self.ident = f"{DB}.{name}"
        self.models: dict = {}
        if java_creates:
            java.call("create_table", warehouse=self.wh, table=self.ident, fields=FIELDS, primary_keys=["k"],
                      partition_keys=[], table_options={"bucket": "2"})
        else:
            cat = CatalogFactory.create({"warehouse": self.wh})
            cat.create_database(DB, True)
            cat.create_table(self.ident, Schema.from_pyarrow_schema(ARROW, primary_keys=["k"],
                                                                    options={"bucket": "2"}), False)

    def ours(self):
        return CatalogFactory.create({"warehouse": self.wh}).get_table(self.ident)

    def _record(self, before, state) -> None:
        latest = self.ours().latest_snapshot_id()
        for i in range((before or 0) + 1, latest + 1):
            self.models[i] = dict(state)

    def state(self) -> dict:
        latest = self.ours().latest_snapshot_id()
        return dict(self.models.get(latest, {})) if latest else {}

    def write_ours(self, rows: dict) -> None:
        t = self.ours()
        before, state = t.latest_snapshot_id(), self.state()
        write_rows(t, rows, ARROW)
        state.update(rows)
        self._record(before, state)

    def write_java(self, rows: dict) -> None:
        before, state = self.ours().latest_snapshot_id(), self.state()
        self.java.call("write", warehouse=self.wh, table=self.ident,
                       commits=[{"rows": [[k, v] for k, v in rows.items()], "kinds": None}])
        state.update(rows)
        self._record(before, state)

    def java_rows(self, **kw) -> dict:
        return {r[0]: r[1] for r in self.java.call("read", warehouse=self.wh, table=self.ident, **kw)["rows"]}

    def our_rows(self, options=None) -> dict:
        t = self.ours()
        if options:
            t = t.copy(options)
        rb = t.new_read_builder()
        d = rb.new_read().to_arrow(rb.new_scan().plan().splits()).to_pydict()
        return dict(zip(d["k"], d["v"]))

    def snapshot_ids(self) -> list:
        d = self.ours().table_path + "/snapshot"
        import os
        return sorted(int(f.split("-")[1]) for f in os.listdir(d) if f.startswith("snapshot-"))


def history(b: Both, n: int, writer: str = "ours") -> None:
    for i in range(n):
        rows = {i % 4: f"v{i}", 10 + i: "x"}
        (b.write_ours if writer == "ours" else b.write_java)(rows)


def test_java_reads_our_tags(java, tmp_path, request):
    b = Both(java, tmp_path, tname(request), java_creates=False)
    history(b, 4)
    t = b.ours()
    t.create_tag("plain", snapshot_id=2)
    t.create_tag("kept", snapshot_id=3, time_retained="2 d")
    tags = java.call("list_tags", warehouse=b.wh, table=b.ident)
    assert tags == {"plain": 2, "kept": 3}
    assert b.java_rows(tag="plain") == b.models[2]
    assert b.java_rows(tag="kept") == b.models[3]
    # Java deletes our tag; we see it gone
    java.call("delete_tag", warehouse=b.wh, table=b.ident, name="plain")
    assert b.ours().list_tags() == ["kept"]


def test_java_reads_after_our_expiry_and_rollback(java, tmp_path, request):
    b = Both(java, tmp_path, tname(request), java_creates=False)
    history(b, 6)
    t = b.ours()
    t.create_tag("t2", snapshot_id=2)
    t.expire_snapshots(retain_min=3, older_than=0)
    assert len(b.snapshot_ids()) == 3
    assert b.java_rows() == b.state()
    assert b.java_rows(tag="t2") == b.models[2]
    for sid in b.snapshot_ids():
        assert b.java_rows(snapshot_id=sid) == b.models[sid]
    latest = t.latest_snapshot_id()
    t.rollback_to(latest - 1)
    assert b.java_rows() == b.models[latest - 1]
    t.rollback_to("t2")
    assert b.snapshot_ids() == [2]
    assert b.java_rows() == b.models[2]
    # Java writes on top of our rolled-back table, we read
    b.write_java({100: "java"})
    assert b.our_rows() == b.state() and b.java_rows() == b.state()


def test_we_read_after_java_tags_rollback_and_expiry(java, tmp_path, request):
    b = Both(java, tmp_path, tname(request), java_creates=True)
    history(b, 6, writer="java")
    java.call("create_tag", warehouse=b.wh, table=b.ident, name="j2", snapshot_id=2)
    java.call("create_tag", warehouse=b.wh, table=b.ident, name="j5", snapshot_id=5)
    assert [i.name for i in b.ours().tags()] == ["j2", "j5"]
    assert b.our_rows({"scan.tag-name": "j2"}) == b.models[2]
    java.call("rollback", warehouse=b.wh, table=b.ident, snapshot_id=4)
    assert b.snapshot_ids()[-1] == 4 and b.ours().list_tags() == ["j2"]
    assert b.our_rows() == b.models[4]
    java.call("expire_snapshots", warehouse=b.wh, table=b.ident, retain_max=1, retain_min=1)
    assert b.snapshot_ids() == [4]
    assert b.our_rows() == b.models[4]
    assert b.our_rows({"scan.tag-name": "j2"}) == b.models[2]
    # our operations on Java's table: a write, our rollback to Java's tag, our expiry
    b.write_ours({200: "ours"})
    assert b.java_rows() == b.state()
    b.ours().rollback_to("j2")
    assert b.our_rows() == b.models[2] == b.java_rows()
    java.call("rollback", warehouse=b.wh, table=b.ident, tag="j2")
    assert b.our_rows() == b.models[2]


def test_our_incremental_read_of_java_commits(java, tmp_path, request):
    b = Both(java, tmp_path, tname(request), java_creates=True)
    b.write_java({1: "a", 2: "b"})
    b.write_java({2: "b2", 3: "c"})
    b.write_java({4: "d"})
    t = b.ours().copy({"incremental-between": "1,3"})
    rb = t.new_read_builder()
    d = rb.new_read().to_arrow(rb.new_scan().plan().splits()).to_pydict()
    assert sorted(zip(d["rowkind"], d["k"], d["v"])) == [("+I", 2, "b2"), ("+I", 3, "c"), ("+I", 4, "d")]


def test_tag_file_fields_match_javas(java, tmp_path, request):
    """Our tag file has the fields of Java's (a snapshot's JSON; Java reads the retention too)."""
    b = Both(java, tmp_path, tname(request), java_creates=True)
    history(b, 2, writer="java")
    java.call("create_tag", warehouse=b.wh, table=b.ident, name="java_tag", snapshot_id=1)
    b.ours().create_tag("our_tag", snapshot_id=1)
    base = b.ours().table_path + "/tag/"
    with open(base + "tag-java_tag") as f:
        jt = json.load(f)
    with open(base + "tag-our_tag") as f:
        ot = json.load(f)
    core = {"id", "schemaId", "baseManifestList", "deltaManifestList", "commitUser", "commitKind", "timeMillis"}
    assert core <= set(jt) and core <= set(ot)
    assert {k: jt[k] for k in core} == {k: ot[k] for k in core}
