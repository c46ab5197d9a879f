"""Branches across engines: Java Paimon (1.0) reads and writes branches we created and wrote
(``t$branch_b``), we read and write branches Java created and wrote, and each side
fast-forwards and deletes the other's branches. Rows are compared with a dict model."""

from __future__ import annotations

import os
import time

import pytest
from test_java_table_ops import ARROW, Both, history, tname

from paimon_rs import CatalogFactory

from table_writes import write_rows

pytestmark = pytest.mark.java


def ours(b: Both, branch: str):
    return CatalogFactory.create({"warehouse": b.wh}).get_table(f"{b.ident}$branch_{branch}")


def rows_of(t, options=None) -> dict:
    if options:
        t = t.copy(options)
    rb = t.new_read_builder()
    d = rb.new_read().to_arrow(rb.new_scan().plan().splits()).to_pydict()
    return dict(zip(d["k"], d["v"]))


def java_rows(b: Both, branch: str, **kw) -> dict:
    r = b.java.call("read", warehouse=b.wh, table=f"{b.ident}$branch_{branch}", **kw)["rows"]
    return {x[0]: x[1] for x in r}


def java_write(b: Both, branch: str, rows: dict) -> None:
    b.java.call("write", warehouse=b.wh, table=f"{b.ident}$branch_{branch}",
                commits=[{"rows": [[k, v] for k, v in rows.items()], "kinds": None}])


def test_java_reads_and_writes_our_branches(java, tmp_path, request):
    b = Both(java, tmp_path, tname(request), java_creates=False)
    history(b, 4)
    t = b.ours()
    t.create_tag("t2", snapshot_id=2)
    t.create_branch("fromtag", "t2")
    t.create_branch("empty")
    assert java.call("list_branches", warehouse=b.wh, table=b.ident) == ["empty", "fromtag"]
    # our writes into both branches, Java reads them
    write_rows(ours(b, "fromtag"), {100: "ours"}, ARROW)
    write_rows(ours(b, "empty"), {7: "e"}, ARROW)
    expected = {**b.models[2], 100: "ours"}
    assert java_rows(b, "fromtag") == expected
    assert java_rows(b, "empty") == {7: "e"}
    assert java_rows(b, "fromtag", tag="t2") == b.models[2]
    # Java writes on top, we read; main is untouched
    java_write(b, "fromtag", {101: "java"})
    expected[101] = "java"
    assert rows_of(ours(b, "fromtag")) == expected
    assert b.our_rows() == b.state() == b.java_rows()
    # Java fast-forwards main to our branch; we read main as the branch
    java.call("fast_forward", warehouse=b.wh, table=b.ident, name="fromtag")
    assert b.our_rows() == expected
    write_rows(b.ours(), {102: "after-ff"}, ARROW)
    assert b.java_rows() == {**expected, 102: "after-ff"}
    # Java deletes our branch; we see it gone
    java.call("delete_branch", warehouse=b.wh, table=b.ident, name="empty")
    assert b.ours().list_branches() == ["fromtag"]


def test_we_read_and_write_javas_branches(java, tmp_path, request):
    b = Both(java, tmp_path, tname(request), java_creates=True)
    history(b, 4, writer="java")
    java.call("create_tag", warehouse=b.wh, table=b.ident, name="j2", snapshot_id=2)
    java.call("create_branch", warehouse=b.wh, table=b.ident, name="jb", tag="j2")
    java.call("create_branch", warehouse=b.wh, table=b.ident, name="je")
    java_write(b, "jb", {200: "java"})
    java_write(b, "je", {1: "je"})
    t = b.ours()
    assert t.list_branches() == ["jb", "je"]
    assert rows_of(ours(b, "jb")) == {**b.models[2], 200: "java"}
    assert rows_of(ours(b, "je")) == {1: "je"}
    assert rows_of(t.copy({"branch": "jb"}), {"scan.tag-name": "j2"}) == b.models[2]
    # we write into Java's branch, Java reads it
    write_rows(ours(b, "jb"), {201: "ours"}, ARROW)
    expected = {**b.models[2], 200: "java", 201: "ours"}
    assert java_rows(b, "jb") == expected
    # main writes go on; expiry of main and our orphan clean keep the branch's files
    history(b, 3)
    t = b.ours()
    t.expire_snapshots(retain_min=1, older_than=0)
    # our tag deletion keeps what the branch created from the tag references (Java's
    # deleteTag does not look at branches: it would delete the branch's files here)
    t.delete_tag("j2")
    time.sleep(0.01)
    t.remove_orphan_files(older_than=int(time.time() * 1000))
    assert rows_of(ours(b, "jb")) == expected == java_rows(b, "jb")
    assert b.our_rows() == b.state() == b.java_rows()
    # we fast-forward main to Java's branch, Java reads main
    t.fast_forward("jb")
    assert b.java_rows() == expected
    assert b.our_rows() == expected
    # we delete Java's other branch; Java sees it gone
    t.delete_branch("je")
    assert java.call("list_branches", warehouse=b.wh, table=b.ident) == ["jb"]
    assert not os.path.exists(os.path.join(t.table_path, "branch", "branch-je"))
