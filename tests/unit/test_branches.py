"""Branches as Java Paimon lays them out (``<table>/branch/branch-<name>/``): create (empty or
from a tag), read and write through the ``branch`` option and ``db.t$branch_b``, delete, rename,
fast-forward, against a model of each branch's rows; expiry and orphan clean of one branch never
delete what another references."""

from __future__ import annotations

import os
import pickle
import random
import time

import pyarrow as pa
import pytest
from table_ops_helpers import SCHEMA, Model, history, make_table, orphans, read_rows

from paimon_rs import SchemaChange
from paimon_rs.exceptions import InvalidArgumentError, TableNotFoundError, UnsupportedError


def branch_dir(t, name: str) -> str:
    return os.path.join(t.table_path, "branch", f"branch-{name}")


def ids_in(d: str) -> list:
    d = os.path.join(d, "snapshot")
    if not os.path.isdir(d):
        return []
    return sorted(int(f.split("-")[1]) for f in os.listdir(d) if f.startswith("snapshot-"))



def test_branch_from_tag_reads_the_tag_then_writes_its_own_snapshots(catalog):
    t = make_table(catalog, "db.t")
    m = history(t, 4)
    t.create_tag("t2", snapshot_id=2)
    t.create_branch("b", "t2")
    d = branch_dir(t, "b")
    # Java's layout: the tag, its snapshot and the schemas up to its schema are copied
    assert sorted(os.listdir(os.path.join(d, "tag"))) == ["tag-t2"]
    assert ids_in(d) == [2]
    assert sorted(os.listdir(os.path.join(d, "schema"))) == ["schema-0"]
    b = catalog.get_table("db.t$branch_b")
    assert b.current_branch() == "b" and str(b.identifier) == "db.t$branch_b"
    assert read_rows(b) == m.snapshots[2]
    bm = Model(b)
    bm.snapshots = {2: dict(m.snapshots[2])}
    sid = bm.upsert({100: "branch"})
    assert sid == 3 and ids_in(d) == [2, 3], "the branch commits into its own snapshot dir"
    assert read_rows(b) == {**m.snapshots[2], 100: "branch"}
    # main is untouched; a handle switched with the option reads the same branch
    assert read_rows(t) == m.current() and ids_in(t.table_path) == [1, 2, 3, 4]
    assert read_rows(t.copy({"branch": "b"})) == read_rows(b)
    assert t.copy({"branch": "b"}).current_branch() == "b"
    assert t.current_branch() == "main" and b.copy({"branch": "main"}).current_branch() == "main"
    # time travel inside the branch, and its tags are its own
    assert read_rows(b, {"scan.snapshot-id": "2"}) == m.snapshots[2]
    assert b.list_tags() == ["t2"]
    b.create_tag("on-branch")
    assert "on-branch" not in t.list_tags()
    assert os.path.exists(os.path.join(d, "tag", "tag-on-branch"))
    # snapshot API of a branch handle
    assert b.snapshot_manager().get_latest_snapshot().id == 3
    assert b.snapshot_manager().snapshot_dir.endswith("branch/branch-b/snapshot")
    # a branch handle survives pickling (Spark tasks reopen it)
    assert pickle.loads(pickle.dumps(b)).current_branch() == "b"


def test_empty_branch_starts_with_the_latest_schema(catalog):
    t = make_table(catalog, "db.t")
    history(t, 2)
    t.create_branch("e")
    assert t.list_branches() == ["e"]
    d = branch_dir(t, "e")
    assert ids_in(d) == [] and os.listdir(os.path.join(d, "schema")) == ["schema-0"]
    e = t.copy({"branch": "e"})
    assert read_rows(e) == {}
    assert Model(e).upsert({7: "e"}) == 1, "the branch's first commit is snapshot 1"
    assert read_rows(e) == {7: "e"} and ids_in(d) == [1]
    assert read_rows(t) == {0: "v0", 1: "v1", 10: "x", 11: "x"}


def test_names_and_refusals_are_javas(catalog):
    t = make_table(catalog, "db.t")
    history(t, 1)
    t.create_branch("b")
    for name, msg in [
        ("main", "Branch name 'main' is the default branch and cannot be used."),
        ("  ", "Branch name '  ' is blank."),
        ("123", "Branch name cannot be pure numeric string but is '123'."),
        ("b", "Branch name 'b' already exists."),
    ]:
        with pytest.raises(InvalidArgumentError, match=msg):
            t.create_branch(name)
    t.create_branch("b", ignore_if_exists=True)
    with pytest.raises(InvalidArgumentError, match="Tag 'nope' doesn't exist."):
        t.create_branch("c", "nope")
    with pytest.raises(InvalidArgumentError, match="Branch name 'nope' doesn't exist."):
        t.delete_branch("nope")
    with pytest.raises(InvalidArgumentError, match="Branch nope does not exist"):
        t.copy({"branch": "nope"})
    with pytest.raises(TableNotFoundError):
        catalog.get_table("db.t$branch_nope")
    with pytest.raises(InvalidArgumentError, match="unknown system table"):
        catalog.get_table("db.t$snapshotz")
    with pytest.raises(InvalidArgumentError, match="names a branch"):
        catalog.drop_table("db.t$branch_b")
    # paimon_rs does not read with a fallback branch: refused when typed
    with pytest.raises(UnsupportedError, match="scan.fallback-branch"):
        read_rows(t, {"scan.fallback-branch": "b"})
    # a table Java configured with one (stored option): Java refuses deleting the fallback
    # branch, and paimon_rs refuses reading it rather than missing its partitions
    _store_option(t, "scan.fallback-branch", "b")
    stored = catalog.get_table("db.t")
    with pytest.raises(InvalidArgumentError, match="configured as 'scan.fallback-branch'"):
        stored.delete_branch("b")
    with pytest.raises(UnsupportedError, match="scan.fallback-branch"):
        read_rows(stored, {})


def test_delete_and_rename(catalog):
    t = make_table(catalog, "db.t")
    m = history(t, 3)
    t.create_tag("t1", snapshot_id=1)
    t.create_branch("a", "t1")
    t.create_branch("z")
    assert catalog.list_branches("db.t") == ["a", "z"]
    t.rename_branch("a", "renamed")
    assert t.list_branches() == ["renamed", "z"]
    assert not os.path.exists(branch_dir(t, "a"))
    assert read_rows(t, {"branch": "renamed"}) == m.snapshots[1]
    with pytest.raises(InvalidArgumentError, match="Cannot rename the main branch."):
        t.rename_branch("main", "x")
    with pytest.raises(InvalidArgumentError, match="Branch name 'z' already exists."):
        t.rename_branch("renamed", "z")
    catalog.drop_branch("db.t", "z")
    t.branch_manager().drop_branch("renamed")
    assert t.list_branches() == [] and not t.branch_manager().branch_exists("z")
    assert read_rows(t) == m.current()
    # the branch was deleted; its data files are the table's to clean (none were only its own)
    assert orphans(t) == []


def test_fast_forward_replaces_mains_later_history(catalog):
    t = make_table(catalog, "db.t")
    m = history(t, 5)
    t.create_tag("t2", snapshot_id=2)
    t.create_tag("t4", snapshot_id=4)
    t.create_tag("t1", snapshot_id=1)
    t.create_branch("b", "t2")
    b = t.copy({"branch": "b"})
    bm = Model(b)
    bm.snapshots = {2: dict(m.snapshots[2])}
    bm.upsert({50: "b"})
    bm.upsert({51: "b"})
    b.create_tag("bt")
    with pytest.raises(InvalidArgumentError, match="Branch name 'main' do not use in fast-forward."):
        t.fast_forward("main")
    with pytest.raises(InvalidArgumentError, match="Fast-forward from the current branch 'b' is not allowed."):
        b.fast_forward("b")
    with pytest.raises(InvalidArgumentError, match="Branch name 'x' doesn't exist."):
        t.fast_forward("x")
    t.create_branch("empty")
    with pytest.raises(InvalidArgumentError, match="because it does not have snapshot"):
        t.fast_forward("empty")
    catalog.fast_forward("db.t", "b")
    t = catalog.get_table("db.t")
    # main: its own snapshot 1, then the branch's 2..4; its snapshot 5 and the tag on 4 gone
    assert ids_in(t.table_path) == [1, 2, 3, 4]
    assert read_rows(t) == bm.snapshots[4]
    assert read_rows(t, {"scan.snapshot-id": "1"}) == m.snapshots[1]
    assert read_rows(t, {"scan.snapshot-id": "3"}) == bm.snapshots[3]
    assert sorted(t.list_tags()) == ["bt", "t1", "t2"]
    with open(os.path.join(t.table_path, "snapshot", "LATEST")) as f:
        assert f.read().strip() == "4"
    # main goes on from the branch's latest; the branch is still there
    Model(t).upsert({60: "main"})
    assert ids_in(t.table_path)[:5] == [1, 2, 3, 4, 5]  # (+ a COMPACT snapshot maybe)
    assert read_rows(t) == {**bm.snapshots[4], 60: "main"}
    assert read_rows(b) == bm.snapshots[4]


def test_expiry_and_orphan_clean_keep_what_a_branch_references(catalog):
    t = make_table(catalog, "db.t")
    m = history(t, 4)
    t.create_tag("t2", snapshot_id=2)
    t.create_branch("b", "t2")
    b = t.copy({"branch": "b"})
    bm = Model(b)
    bm.snapshots = {2: dict(m.snapshots[2])}
    for i in range(4):
        bm.upsert({200 + i: "b"})
    # main moves on and compacts, then expires everything but its latest snapshot and drops
    # the tag: the files of snapshot 2 are referenced by the branch alone now
    m.upsert({0: "late"})
    m.compact()
    t.delete_tag("t2")
    t.expire_snapshots(retain_min=1, older_than=0)
    assert ids_in(t.table_path) == [t.latest_snapshot_id()]
    assert read_rows(t) == m.current()
    for sid in ids_in(branch_dir(t, "b")):
        assert read_rows(b, {"scan.snapshot-id": str(sid)}) == bm.snapshots[sid]
    assert orphans(t) == [] and orphans(b) == []
    # expiry on the branch expires the branch's snapshots only
    main_ids = ids_in(t.table_path)
    r = b.expire_snapshots(retain_min=1, older_than=0)
    assert r.snapshots and ids_in(branch_dir(t, "b")) == [b.latest_snapshot_id()]
    assert ids_in(t.table_path) == main_ids
    assert read_rows(b) == bm.current() and read_rows(t) == m.current()
    assert orphans(t) == []
    # rollback of the branch stays in the branch
    b.create_tag("keep")
    bm.upsert({300: "b"})
    b.rollback_to("keep")
    assert read_rows(b) == bm.snapshots[b.latest_snapshot_id()]
    assert read_rows(t) == m.current() and ids_in(t.table_path) == main_ids


def test_alter_table_of_a_branch_changes_the_branch_only(catalog):
    t = make_table(catalog, "db.t")
    history(t, 1)
    t.create_branch("b")
    catalog.alter_table("db.t$branch_b", [SchemaChange.add_column("extra", pa.int32())])
    b = catalog.get_table("db.t$branch_b")
    assert "extra" in b.arrow_schema.names
    assert "extra" not in catalog.get_table("db.t").arrow_schema.names
    assert sorted(os.listdir(os.path.join(branch_dir(t, "b"), "schema"))) == ["schema-0", "schema-1"]
    assert sorted(os.listdir(os.path.join(t.table_path, "schema"))) == ["schema-0"]


@pytest.mark.parametrize("seed", range(8))
def test_random_branch_histories_match_the_model(catalog, seed):
    """Random writes, branch creations (from tags or empty), deletions and fast-forwards over
    main and its branches: every branch reads its model rows after each step."""
    rnd = random.Random(seed)
    t = make_table(catalog, f"db.r{seed}")
    model = {"main": {}}  # branch -> {snapshot id: rows}
    tags = {}  # (branch, tag) -> rows
    handles = {"main": t}

    def latest(name):
        snaps = model[name]
        return snaps[max(snaps)] if snaps else {}

    for step in range(18):
        op = rnd.choice(["write", "write", "tag", "branch", "delete", "ff"])
        name = rnd.choice(sorted(model))
        h = handles[name]
        if op == "write":
            rows = {rnd.randrange(8): f"s{step}" for _ in range(rnd.randint(1, 3))}
            mm = Model(h)
            mm.snapshots = dict(model[name])
            mm.upsert(rows)
            model[name] = mm.snapshots
        elif op == "tag" and model[name]:
            tag = f"g{step}"
            h.create_tag(tag)
            tags[(name, tag)] = latest(name)
        elif op == "branch":
            new = f"br{step}"
            own = [tg for (br, tg) in tags if br == name]
            if own and rnd.random() < 0.7:
                tag = rnd.choice(own)
                h.create_branch(new, tag)
                sid = {ti.name: ti.snapshot_id for ti in h.tags()}[tag]
                model[new] = {sid: dict(tags[(name, tag)])}
                tags[(new, tag)] = tags[(name, tag)]
            else:
                h.create_branch(new)
                model[new] = {}
            handles[new] = t.copy({"branch": new})
        elif op == "delete" and name != "main":
            t.delete_branch(name)
            del model[name], handles[name]
            tags = {k: v for k, v in tags.items() if k[0] != name}
        elif op == "ff" and name != "main" and model[name]:
            earliest = min(model[name])
            t.fast_forward(name)
            kept = {s: r for s, r in model["main"].items() if s < earliest}
            model["main"] = {**kept, **model[name]}
            handles["main"] = t = catalog.get_table(f"db.r{seed}")
            tags = {k: v for k, v in tags.items() if k[0] != "main"}
            tags.update({("main", ti.name): model["main"][ti.snapshot_id] for ti in t.tags()})
        for br in model:
            assert read_rows(handles[br]) == latest(br), (seed, step, op, br)
        assert sorted(t.list_branches()) == sorted(b for b in model if b != "main")
    # deleted branches and fast-forwards leave orphans (as in Java); the orphan clean removes
    # them and nothing any branch's snapshot still reads
    time.sleep(0.01)
    t.remove_orphan_files(older_than=int(time.time() * 1000))
    assert orphans(t) == []
    for br, snaps in model.items():
        for sid in ids_in(branch_dir(t, br) if br != "main" else t.table_path):
            assert read_rows(handles[br], {"scan.snapshot-id": str(sid)}) == snaps[sid], (seed, br, sid)


def test_cli_branch_commands(catalog, capsys):
    import json

    from paimon_rs.cli import main

    def run_json(*args: str):
        assert main([*args, "--json"]) == 0
        return json.loads(capsys.readouterr().out)

    t = make_table(catalog, "db.t")
    m = history(t, 3)
    t.create_tag("t1", snapshot_id=1)
    path = t.table_path
    assert run_json("create-branch", path, "--name", "b", "--tag", "t1") == {"name": "b", "from_tag": "t1"}
    assert run_json("create-branch", path, "--name", "e")["name"] == "e"
    got = run_json("branches", path)
    assert [(x["name"], x["latest_snapshot"], x["tags"]) for x in got] == [("b", 1, 1), ("e", None, 0)]
    # any command reads a branch named <db>.<table>$branch_<b>
    wh = os.path.dirname(os.path.dirname(path))
    assert [s["id"] for s in run_json("snapshots", wh, "db.t$branch_b")] == [1]
    Model(t.copy({"branch": "b"})).upsert({77: "b"})
    assert run_json("fast-forward", path, "--name", "b") == {"name": "b", "latest": 2}
    assert read_rows(catalog.get_table("db.t")) == {**m.snapshots[1], 77: "b"}
    assert run_json("delete-branch", path, "--name", "e") == {"name": "e"}
    assert main(["delete-branch", path, "--name", "e"]) == 1
    assert "doesn't exist" in capsys.readouterr().err


def test_abort_never_deletes_files_another_branch_committed(catalog):
    """A commit's abort keeps files any branch references: messages committed on a branch and
    then aborted from a main handle (or a stale retry) leave the branch readable."""
    t = make_table(catalog, "db.t")
    history(t, 1)
    t.create_branch("b")
    b = t.copy({"branch": "b"})
    wb = b.new_batch_write_builder()
    w, c = wb.new_write(), wb.new_commit()
    w.write_arrow(pa.table({"k": [1, 2], "v": ["x", "y"]}, schema=SCHEMA))
    msgs = w.prepare_commit()
    c.commit(msgs)
    w.close()
    with pytest.warns(RuntimeWarning):
        t.new_batch_write_builder().new_commit().abort(msgs)
    assert read_rows(b) == {1: "x", 2: "y"}


def test_catalog_branch_exceptions_are_pypaimons(catalog):
    """pypaimon's FileSystemCatalog branch CRUD: its typed exceptions and identifier forms."""
    from paimon_rs import (
        BranchAlreadyExistException,
        BranchNotExistException,
        Identifier,
        TableNotExistException,
        TagNotExistException,
    )

    t = make_table(catalog, "db.t")
    history(t, 1)
    ident = Identifier.from_string("db.t")
    catalog.create_branch(ident, "b1")
    with pytest.raises(BranchAlreadyExistException) as e:
        catalog.create_branch(ident, "b1")
    assert e.value.branch == "b1" and isinstance(e.value, InvalidArgumentError)
    with pytest.raises(TagNotExistException) as e:
        catalog.create_branch(ident, "b2", tag_name="absent")
    assert e.value.tag == "absent"
    with pytest.raises(BranchNotExistException) as e:
        catalog.drop_branch(ident, "absent")
    assert e.value.branch == "absent"
    with pytest.raises(BranchNotExistException):
        catalog.fast_forward(ident, "absent")
    catalog.create_branch(ident, "b2")
    with pytest.raises(BranchAlreadyExistException) as e:
        catalog.rename_branch(ident, "b1", "b2")
    assert e.value.branch == "b2"
    with pytest.raises(BranchNotExistException):
        catalog.rename_branch(ident, "absent", "b3")
    with pytest.raises(TableNotExistException):
        catalog.list_branches("db.nope")
    # built by a caller from a name alone: Java's words ("doesn't exist"), which pypaimon's
    # CatalogBranchManager also raises
    assert str(BranchNotExistException("x")) == "Branch x doesn't exist."
    assert str(TagNotExistException("t1")) == "Tag t1 doesn't exist."
    # Identifier(db, table, branch=...) names the branch, as pypaimon's
    bi = Identifier("db", "t", branch="b1")
    assert str(bi) == "db.t$branch_b1" and bi.get_branch_name() == "b1" and bi.get_table_name() == "t"
    assert Identifier("db", "t", branch="main") == ident
    catalog.alter_table(bi, [SchemaChange.add_column("c", pa.string())])
    assert "c" in catalog.get_table(bi).arrow_schema.names
    assert "c" not in catalog.get_table(ident).arrow_schema.names
    assert catalog.get_table_path(bi) == catalog.get_table_path(ident)


def test_compaction_and_inspection_of_a_branch(catalog):
    t = make_table(catalog, "db.t")
    history(t, 2)
    t.create_tag("t1", snapshot_id=1)
    t.create_branch("b", "t1")
    b = t.switch_to_branch("b")
    bm = Model(b)
    bm.snapshots = {1: read_rows(b)}
    for i in range(3):
        bm.upsert({i: f"b{i}"})
    main_ids, before = ids_in(t.table_path), bm.current()
    sid = b.compact(full=True)
    assert sid is not None and ids_in(branch_dir(t, "b"))[-1] == sid
    assert ids_in(t.table_path) == main_ids, "the branch's compaction commits into the branch"
    assert read_rows(b) == before
    bm.snapshots[sid] = before
    assert sum(p.record_count for p in b.list_partitions()) == len(bm.current())
    assert [s.id for s in b.snapshot_manager()] == ids_in(branch_dir(t, "b"))


def _store_option(table, key, value):
    """Set ``key`` in the table's latest schema file, as Java's ALTER TABLE would (paimon_rs
    refuses setting an option it does not implement)."""
    import json

    import stores

    d = stores.join(table.table_path, "schema")
    latest = max(int(f.split("-")[1]) for f in stores.listdir(d) if f.startswith("schema-"))
    p = stores.join(d, f"schema-{latest}")
    schema = json.loads(stores.read_text(p))
    schema["options"][key] = value
    stores.write_bytes(p, json.dumps(schema).encode())
