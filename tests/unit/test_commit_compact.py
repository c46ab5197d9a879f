"""The commit side of compaction (issue #11): messages carrying ``compact_before`` /
``compact_after`` files, built here by hand from serialized messages, commit as Java Paimon's
FileStoreCommitImpl does: new files as an APPEND snapshot, then the compaction as a COMPACT
snapshot; compaction inputs no longer live, and overlapping files of one level above 0, are
refused with CommitConflictError and leave the table unchanged."""

from __future__ import annotations

import json
import pickle
from typing import Any, Dict, List

import pyarrow as pa
import pytest

from paimon_rs import CommitConflictError, DuplicateCommitError, Schema
from paimon_rs._core import CommitMessage

import stores
from unit_helpers import PK_SCHEMA, read, snapshots

# every test runs on local disk and on S3 (tests/stores.py)
pytestmark = pytest.mark.stores

MAX_LEVEL = 5  # num-levels defaults to num-sorted-run.compaction-trigger (5) + 1


@pytest.fixture
def table(catalog):
    schema = Schema.from_pyarrow_schema(PK_SCHEMA, partition_keys=["dt"], primary_keys=["dt", "id"],
                                        options={"bucket": "1"})
    catalog.create_table("db.c", schema, False)
    return catalog.get_table("db.c")


def rows(ids: List[int], tag: str = "n") -> pa.Table:
    return pa.table({"dt": ["a"] * len(ids), "id": ids, "name": [f"{tag}{i}" for i in ids],
                     "price": [float(i) for i in ids]}, schema=PK_SCHEMA)


def prepared(table, data: pa.Table) -> List[CommitMessage]:
    w = table.new_batch_write_builder().new_write()
    w.write_arrow(data)
    msgs = w.prepare_commit()
    w.close()
    return msgs


def commit(table, msgs: List[CommitMessage]):
    c = table.new_batch_write_builder().new_commit()
    try:
        return c.commit(msgs)
    finally:
        c.close()


def files(msgs: List[CommitMessage]) -> List[Dict[str, Any]]:
    """The new files of (serialized) messages: DataFileMeta as JSON objects."""
    return [f for m in msgs for f in json.loads(m.to_bytes())["new_files"]]


def at(fs: List[Dict[str, Any]], level: int, source: int = 0) -> List[Dict[str, Any]]:
    return [dict(f, level=level, file_source=source) for f in fs]


def compaction(template: CommitMessage, before, after, new_files=()) -> CommitMessage:
    d = json.loads(template.to_bytes())
    d.update(new_files=[f for m in new_files for f in json.loads(m.to_bytes())["new_files"]],
             compact_before=before, compact_after=after)
    return CommitMessage.from_bytes(json.dumps(d).encode())


def content(table) -> List[tuple]:
    t = read(table)
    return sorted(zip(t.column("id").to_pylist(), t.column("name").to_pylist()))


def three_commits(table, disjoint: bool) -> List[CommitMessage]:
    out = []
    for i in range(3):
        ids = list(range(10 * i, 10 * i + 10)) if disjoint else list(range(i, i + 10))
        msgs = prepared(table, rows(ids, f"c{i}_"))
        commit(table, msgs)
        out += msgs
    return out


def test_upgrade_writes_one_compact_snapshot(table):
    msgs = three_commits(table, disjoint=True)
    before = content(table)
    m = compaction(msgs[0], files(msgs), at(files(msgs), MAX_LEVEL))
    assert m.compact_before == m.compact_after == [f for x in msgs for f in x.file_names]
    assert m.file_names == []
    again = pickle.loads(pickle.dumps(m))
    assert again.to_bytes() == m.to_bytes()
    assert commit(table, [again]) == 4
    s = snapshots(table)
    assert [x["commitKind"] for x in s] == ["APPEND", "APPEND", "APPEND", "COMPACT"]
    assert (s[3]["deltaRecordCount"], s[3]["totalRecordCount"]) == (0, 30)
    assert content(table) == before


def test_new_files_and_a_rewrite_write_append_then_compact(table):
    msgs = three_commits(table, disjoint=False)
    expected = content(table)
    # the compaction: the bucket's rows read back and written as one file at the top level
    rewritten = prepared(table, read(table))
    new = prepared(table, rows([100, 101], "new"))
    m = compaction(msgs[0], files(msgs), at(files(rewritten), MAX_LEVEL, source=1), new_files=new)
    assert commit(table, [m]) == 5
    s = snapshots(table)
    assert [x["commitKind"] for x in s[3:]] == ["APPEND", "COMPACT"]
    assert (s[3]["deltaRecordCount"], s[3]["totalRecordCount"]) == (2, 32)
    # Java: rows of the ADD entries minus rows of the DELETE entries
    assert (s[4]["deltaRecordCount"], s[4]["totalRecordCount"]) == (12 - 30, 32 - 18)
    assert content(table) == sorted(expected + [(100, "new100"), (101, "new101")])
    # the snapshot before the compaction reads the same rows
    from paimon_rs.table import TableScan
    rb = table.new_read_builder()
    old = rb.new_read().to_arrow(TableScan(table, None, 4).plan().splits())
    assert sorted(zip(old.column("id").to_pylist(), old.column("name").to_pylist())) == content(table)


def test_second_compaction_of_the_same_files_conflicts(table):
    msgs = three_commits(table, disjoint=True)
    before = content(table)
    assert commit(table, [compaction(msgs[0], files(msgs), at(files(msgs), 3))]) == 4
    rewritten = prepared(table, read(table))
    second = compaction(msgs[0], files(msgs), at(files(rewritten), MAX_LEVEL))
    with pytest.raises(CommitConflictError, match="no longer live"):
        commit(table, [second])
    # with new files as well: no APPEND snapshot either
    mixed = compaction(msgs[0], files(msgs), at(files(rewritten), MAX_LEVEL),
                       new_files=prepared(table, rows([100])))
    with pytest.raises(CommitConflictError, match="no longer live"):
        commit(table, [mixed])
    assert len(snapshots(table)) == 4
    assert content(table) == before
    # the outputs of the refused compaction are not referenced: abort removes them, not its inputs
    outputs, inputs = _paths(table, rewritten), _paths(table, msgs)
    assert len(outputs) == 1 and len(inputs) == 3
    c = table.new_batch_write_builder().new_commit()
    c.abort([second])
    c.close()
    assert not any(stores.exists(p) for p in outputs)
    assert all(stores.exists(p) for p in inputs)
    assert content(table) == before


def test_overlapping_files_of_one_level_are_refused(table):
    msgs = three_commits(table, disjoint=False)
    before = content(table)
    with pytest.raises(CommitConflictError, match="LSM conflict"):
        commit(table, [compaction(msgs[0], files(msgs), at(files(msgs), 2))])
    assert len(snapshots(table)) == 3
    assert content(table) == before
    # one by one to distinct levels is an LSM
    for i, m in enumerate(msgs):
        commit(table, [compaction(m, files([m]), at(files([m]), MAX_LEVEL - i))])
    assert [x["commitKind"] for x in snapshots(table)][3:] == ["COMPACT"] * 3
    assert content(table) == before


def test_an_output_reusing_an_input_name_must_move_up(table):
    msgs = three_commits(table, disjoint=True)
    with pytest.raises(DuplicateCommitError, match="only an upgrade"):
        commit(table, [compaction(msgs[0], files(msgs[:1]), files(msgs[:1]))])
    assert len(snapshots(table)) == 3


def _paths(table, msgs: List[CommitMessage]) -> List[str]:
    names = {f for m in msgs for f in m.file_names}
    return [p for p in stores.walk_files(table.table_path) if p.rsplit("/", 1)[1] in names]
