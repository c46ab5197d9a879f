"""Reading the changelog (``Table.changelog``, ``incremental-between-scan-mode = changelog``).

paimon_rs writes no changelog files, so these tables' delta files are relabelled as changelog
files (the same key-value layout): each snapshot's ``changelogManifestList`` is set to its delta
manifest list, as an ``input`` producer would have written it. Java-written changelogs are
tests/compat/test_java_changelog.py's."""

from __future__ import annotations

import json
import pickle
from pathlib import Path
from typing import Any, List, Tuple

import pyarrow as pa
import pytest

from paimon_rs import InvalidArgumentError, Schema, UnsupportedError
from paimon_rs.cli import main

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string()), ("op", pa.string())])

Rec = Tuple[str, int, Any]


def _table(catalog: Any, buckets: int = 1) -> Any:
    catalog.create_table("db.cl", Schema.from_pyarrow_schema(
        SCHEMA, primary_keys=["k"], options={"bucket": str(buckets), "rowkind.field": "op"}), False)
    return catalog.get_table("db.cl")


def _write(t: Any, rows: List[Rec]) -> None:
    wb = t.new_batch_write_builder()
    w, c = wb.new_write(), wb.new_commit()
    w.write_arrow(pa.table({"k": [r[1] for r in rows], "v": [r[2] for r in rows],
                            "op": [r[0] for r in rows]}, schema=SCHEMA))
    c.commit(w.prepare_commit())
    w.close()
    c.close()


def _relabel(t: Any) -> None:
    """Make every snapshot's delta files its changelog files."""
    root = t.table_path[len("file:"):] if t.table_path.startswith("file:") else t.table_path
    for p in sorted(Path(root, "snapshot").glob("snapshot-*")):
        j = json.loads(p.read_text())
        j["changelogManifestList"] = j["deltaManifestList"]
        p.write_text(json.dumps(j))


def _recs(tbl: pa.Table) -> List[Rec]:
    assert tbl.column_names[0] == "rowkind"
    d = tbl.to_pydict()
    return list(zip(d["rowkind"], d["k"], d["v"]))


COMMITS: List[List[Rec]] = [
    [("+I", 1, "a"), ("+I", 2, "b")],
    [("+U", 1, "a2")],
    [("-D", 2, "b"), ("+I", 3, "c")],
]
ALL = [r for c in COMMITS for r in c]


@pytest.fixture
def history(catalog):
    t = _table(catalog)
    for c in COMMITS:
        _write(t, c)
    return t


def test_no_changelog_files_means_an_empty_changelog(history):
    got = history.changelog(0)
    assert got.num_rows == 0
    assert got.column_names == ["rowkind", "k", "v", "op"]
    # auto on a table without a changelog producer is the delta read (merged by key)
    rb = history.copy({"incremental-between": "0,3"}).new_read_builder()
    assert sorted(_recs(rb.new_read().to_arrow(rb.new_scan().plan().splits()))) == \
        [("+I", 3, "c"), ("+U", 1, "a2"), ("-D", 2, "b")]


def test_changelog_is_every_record_unmerged_with_its_kind(history):
    _relabel(history)
    assert _recs(history.changelog(0)) == ALL
    assert _recs(history.changelog(0, 3)) == ALL
    assert _recs(history.changelog(1, 2)) == COMMITS[1]
    assert _recs(history.changelog(3)) == []
    pb = history.new_read_builder().new_predicate_builder()
    assert _recs(history.changelog(0, filter=pb.equal("k", 2))) == [("+I", 2, "b"), ("-D", 2, "b")]
    got = history.changelog(0, projection=["v"])
    assert got.column_names == ["rowkind", "v"]
    assert got.column("v").to_pylist() == [r[2] for r in ALL]
    # auto on a changelog-producer table reads the changelog; delta still the data files
    opts = {"incremental-between": "0,3", "changelog-producer": "input"}
    rb = history.copy(opts).new_read_builder()
    assert _recs(rb.new_read().to_arrow(rb.new_scan().plan().splits())) == ALL
    rb = history.copy({**opts, "incremental-between-scan-mode": "delta"}).new_read_builder()
    assert len(_recs(rb.new_read().to_arrow(rb.new_scan().plan().splits()))) == 3


def test_changelog_splits_survive_pickling(history):
    """Spark pickles splits to its tasks: the changelog flag must come along."""
    _relabel(history)
    rb = history.copy({"incremental-between": "0,3", "incremental-between-scan-mode": "changelog"}) \
        .new_read_builder()
    splits = rb.new_scan().plan().splits()
    assert splits and all(s.changelog and not s.raw_convertible for s in splits)
    back = [pickle.loads(pickle.dumps(s)) for s in splits]
    assert all(s.changelog for s in back)
    assert _recs(rb.new_read().to_arrow(back)) == ALL
    # a plain read's splits are not changelog splits
    assert not any(s.changelog for s in history.new_read_builder().new_scan().plan().splits())
    # a batch read refuses a changelog split (it would have no row kinds)
    with pytest.raises(InvalidArgumentError, match="changelog split"):
        history.new_read_builder().new_read().to_arrow(back)


def test_bad_ranges_are_refused(history):
    with pytest.raises(InvalidArgumentError, match="start snapshot 3 is after the end 1"):
        history.changelog(3, 1)
    with pytest.raises(InvalidArgumentError, match="snapshot id"):
        history.changelog("1")  # type: ignore[arg-type]
    with pytest.raises(UnsupportedError, match="between tags"):
        rb = history.copy({"incremental-between": "a,b", "incremental-between-scan-mode": "changelog"}) \
            .new_read_builder()
        rb.new_scan().plan()


def test_empty_table_has_an_empty_changelog(catalog):
    t = _table(catalog)
    got = t.changelog(0)
    assert got.num_rows == 0 and got.column_names == ["rowkind", "k", "v", "op"]


def test_cli_files_lists_changelog_files(history, capsys):
    plain = _cli_json(capsys, "files", history.table_path)
    assert {f["kind"] for f in plain} == {"data"} and all(f["snapshot"] is None for f in plain)
    assert "changelog" not in _cli_text(capsys, "files", history.table_path)
    _relabel(history)
    got = _cli_json(capsys, "files", history.table_path)
    data = [f for f in got if f["kind"] == "data"]
    changelog = [f for f in got if f["kind"] == "changelog"]
    assert len(data) == len(plain) and len(changelog) == 3
    assert [f["snapshot"] for f in changelog] == [1, 2, 3]
    assert sum(f["row_count"] for f in changelog) == len(ALL)
    # as of snapshot 2: the changelog files of snapshots 1 and 2
    assert [f["snapshot"] for f in _cli_json(capsys, "files", history.table_path, "--snapshot", "2")
            if f["kind"] == "changelog"] == [1, 2]
    text = _cli_text(capsys, "files", history.table_path)
    assert "changelog" in text
    summary = _cli_json(capsys, "files", history.table_path, "--summary")
    assert [(b["files"], b["changelog_files"]) for b in summary] == [(len(data), 3)]


def _cli_json(capsys: Any, *args: str) -> Any:
    assert main([*args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def _cli_text(capsys: Any, *args: str) -> str:
    assert main([*args]) == 0
    return capsys.readouterr().out
