"""Reading the changelog (issue 27): Java Paimon 1.0 writes ``changelog-producer`` tables
(``input``; ``lookup`` and ``full-compaction`` with Java's compactions), paimon_rs reads their
changelog (``Table.changelog``, ``incremental-between-scan-mode``) and must return what the
producer made of the input, record for record and kind for kind, and what Java's own
incremental changelog read (of the ``$audit_log`` table, which carries the row kind) returns.

Java 1.0 plans an incremental read as batch splits and so merges the changelog files of a
bucket by key (a key's records of several files collapse; Paimon later reads them as streaming
splits, unmerged: apache/paimon#5361, "Incremental delta scan should be in stream mode, not
merging"). paimon_rs reads them unmerged, as newer Java does. Java 1.0 and paimon_rs therefore
agree snapshot by snapshot (one changelog file per bucket and snapshot, nothing to merge) and
over a range paimon_rs's records are the concatenation of those; Java 1.0's merged range read
is checked for what it is (the last record of each key's merge groups)."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

import pyarrow as pa
import pytest

from paimon_rs import CatalogFactory

from java_env import JavaPaimon

pytestmark = pytest.mark.java

DB = "db"
FIELDS = [{"name": "id", "type": "INT NOT NULL"}, {"name": "v", "type": "STRING"}]

Rec = Tuple[str, int, Optional[str]]  # (row kind, id, v)

# Three commits with every row kind: inserts, an update as -U/+U, a delete.
COMMITS: List[List[Rec]] = [
    [("+I", 1, "a"), ("+I", 2, "b"), ("+I", 3, "c")],
    [("-U", 1, "a"), ("+U", 1, "a2"), ("-D", 2, "b")],
    [("-U", 3, "c"), ("+U", 3, "c2"), ("+I", 4, "d")],
]


def _tname(request: Any) -> str:
    return "t_" + "".join(c if c.isalnum() else "_" for c in request.node.name)[-80:]


def _create(java: JavaPaimon, wh: Any, t: str, options: Dict[str, str]) -> None:
    java.call("create_table", warehouse=str(wh), table=f"{DB}.{t}", fields=FIELDS, primary_keys=["id"],
              partition_keys=[], table_options=options)


def _write(java: JavaPaimon, wh: Any, t: str, commit: List[Rec], full_compaction: bool = False) -> None:
    """One commit through Java's writer; ``full_compaction``: it compacts the buckets it wrote
    fully, as Flink's writer of a ``full-compaction`` table does at each commit."""
    java.call("write", warehouse=str(wh), table=f"{DB}.{t}",
              commits=[{"rows": [[i, v] for _, i, v in commit], "kinds": [k for k, _, _ in commit],
                        "full_compaction": full_compaction}])


def _java_incremental(java: JavaPaimon, wh: Any, t: str, start: int, end: int,
                      mode: Optional[str]) -> List[Rec]:
    """Java's incremental read of ``t$audit_log`` (rowkind, id, v)."""
    opts = {"incremental-between": f"{start},{end}"}
    if mode is not None:
        opts["incremental-between-scan-mode"] = mode
    r = java.call("read", warehouse=str(wh), table=f"{DB}.{t}$audit_log", options=opts)
    assert r["fields"] == ["rowkind", "id", "v"], r["fields"]
    return [(k, i, v) for k, i, v in r["rows"]]


def _java_by_snapshot(java: JavaPaimon, wh: Any, t: str, end: int, mode: Optional[str] = "changelog") -> List[Rec]:
    """Java's changelog read snapshot by snapshot, concatenated."""
    return [r for s in range(end) for r in _java_incremental(java, wh, t, s, s + 1, mode)]


def _merged_1_0(files: List[List[Rec]]) -> List[Rec]:
    """What Java 1.0's batch read makes of changelog ``files`` (each sorted by key) of one
    bucket: a k-way merge by (key, file order) where each pop takes the heads of every file at
    that key, emitting the newest of them (deduplicate), so a file's second record of a key
    starts a group of its own."""
    heads = [0] * len(files)
    out: List[Rec] = []
    while True:
        live = [(f[h][1], i) for i, (f, h) in enumerate(zip(files, heads)) if h < len(f)]
        if not live:
            return out
        key = min(k for k, _ in live)
        group = [i for k, i in live if k == key]
        out.append(files[group[-1]][heads[group[-1]]])
        for i in group:
            heads[i] += 1


def _table(wh: Any, t: str) -> Any:
    return CatalogFactory.create({"warehouse": str(wh)}).get_table(f"{DB}.{t}")


def _recs(tbl: pa.Table) -> List[Rec]:
    assert tbl.column_names[0] == "rowkind", tbl.column_names
    d = tbl.to_pydict()
    return list(zip(d["rowkind"], d["id"], d["v"]))


def _ours_incremental(wh: Any, t: str, start: int, end: int, mode: Optional[str]) -> List[Rec]:
    opts = {"incremental-between": f"{start},{end}"}
    if mode is not None:
        opts["incremental-between-scan-mode"] = mode
    rb = _table(wh, t).copy(opts).new_read_builder()
    return _recs(rb.new_read().to_arrow(rb.new_scan().plan().splits()))


def _latest(wh: Any, t: str) -> int:
    sid = _table(wh, t).latest_snapshot_id()
    assert sid is not None
    return sid


def _commit_kinds(wh: Any, t: str) -> List[str]:
    return [s.commit_kind for s in _table(wh, t).snapshot_manager().list_snapshots()]


def test_input_producer_changelog_is_the_input(java, tmp_path, request):
    """changelog-producer = input: each APPEND snapshot carries its input records as written."""
    t = _tname(request)
    _create(java, tmp_path, t, {"bucket": "1", "changelog-producer": "input"})
    for c in COMMITS:
        _write(java, tmp_path, t, c)
    end = _latest(tmp_path, t)
    want = [r for c in COMMITS for r in c]
    ours = _recs(_table(tmp_path, t).changelog(0))
    assert ours == want, "the changelog is the input"
    assert _java_by_snapshot(java, tmp_path, t, end) == want, "Java's changelog, snapshot by snapshot"
    for s in range(end):
        assert _recs(_table(tmp_path, t).changelog(s, s + 1)) == _java_incremental(java, tmp_path, t, s, s + 1, None)
    # Java 1.0 merges the files of a range read (see the module docstring)
    assert _java_incremental(java, tmp_path, t, 0, end, "changelog") == _merged_1_0(COMMITS)
    # auto on a changelog-producer table is the changelog, for both engines
    assert _ours_incremental(tmp_path, t, 0, end, None) == want
    assert _java_by_snapshot(java, tmp_path, t, end, None) == want
    # a range, a filter and a projection
    assert _recs(_table(tmp_path, t).changelog(1, 2)) == COMMITS[1]
    tb = _table(tmp_path, t)
    pb = tb.new_read_builder().new_predicate_builder()
    got = tb.changelog(0, end, filter=pb.equal("id", 1))
    assert _recs(got) == [r for r in want if r[1] == 1]
    got = tb.changelog(0, end, projection=["v"])
    assert got.column_names == ["rowkind", "v"]
    assert list(zip(*got.to_pydict().values())) == [(k, v) for k, _, v in want]
    # delta mode still reads the data files (merged by key over the range, as Java 1.0)
    assert _ours_incremental(tmp_path, t, 0, end, "delta") == \
        _java_incremental(java, tmp_path, t, 0, end, "delta") == \
        [("+U", 1, "a2"), ("-D", 2, "b"), ("+U", 3, "c2"), ("+I", 4, "d")]


def test_input_producer_changelog_over_buckets_matches_java(java, tmp_path, request):
    """Two buckets: the same records as Java, in the same order within each key."""
    t = _tname(request)
    _create(java, tmp_path, t, {"bucket": "2", "changelog-producer": "input"})
    for c in COMMITS:
        _write(java, tmp_path, t, c)
    end = _latest(tmp_path, t)
    java_rows = _java_by_snapshot(java, tmp_path, t, end)
    ours = _recs(_table(tmp_path, t).changelog(0))
    assert sorted(ours) == sorted(java_rows) == sorted(r for c in COMMITS for r in c)
    for k in (1, 2, 3, 4):
        assert [r for r in ours if r[1] == k] == [r for r in java_rows if r[1] == k]
    splits = _table(tmp_path, t).copy({"incremental-between": f"0,{end}"}).new_read_builder() \
        .new_scan().plan().splits()
    assert {s.bucket for s in splits} == {0, 1} and all(s.changelog for s in splits)


@pytest.mark.parametrize("producer", ["lookup", "full-compaction"])
def test_compaction_producer_changelog_matches_java(java, tmp_path, request, producer):
    """lookup / full-compaction: COMPACT snapshots carry the changelog; APPEND ones none."""
    t = _tname(request)
    _create(java, tmp_path, t, {"bucket": "1", "changelog-producer": producer})
    for c in COMMITS:
        _write(java, tmp_path, t, c)
        java.call("compact", warehouse=str(tmp_path), table=f"{DB}.{t}", full=True)
    end = _latest(tmp_path, t)
    assert "COMPACT" in _commit_kinds(tmp_path, t)
    java_rows = _java_by_snapshot(java, tmp_path, t, end)
    # each commit was compacted on its own: the changelog is the commits' changes
    assert java_rows == [r for c in COMMITS for r in c], java_rows
    assert _recs(_table(tmp_path, t).changelog(0)) == java_rows
    assert _ours_incremental(tmp_path, t, 0, end, None) == java_rows
    # snapshot by snapshot, as Java
    for s in range(end):
        assert _recs(_table(tmp_path, t).changelog(s, s + 1)) == \
            _java_incremental(java, tmp_path, t, s, s + 1, "changelog"), f"snapshot {s + 1}"


def test_no_producer_changelog_is_empty_and_auto_is_delta(java, tmp_path, request):
    """A table without a changelog producer has no changelog files: changelog mode returns
    nothing, as Java's; auto reads the delta files, as Java's."""
    t = _tname(request)
    _create(java, tmp_path, t, {"bucket": "1"})
    for c in COMMITS:
        _write(java, tmp_path, t, c)
    end = _latest(tmp_path, t)
    assert _java_incremental(java, tmp_path, t, 0, end, "changelog") == []
    assert _recs(_table(tmp_path, t).changelog(0)) == []
    assert _ours_incremental(tmp_path, t, 0, end, "changelog") == []
    java_auto = _java_incremental(java, tmp_path, t, 0, end, None)
    assert java_auto == _java_incremental(java, tmp_path, t, 0, end, "delta")
    assert _ours_incremental(tmp_path, t, 0, end, None) == java_auto
    # and Java's changelog of a compacted table without a producer: still nothing
    java.call("compact", warehouse=str(tmp_path), table=f"{DB}.{t}", full=True)
    assert _java_incremental(java, tmp_path, t, 0, _latest(tmp_path, t), "changelog") == []
    assert _recs(_table(tmp_path, t).changelog(0)) == []


def test_overwrite_contributes_no_changelog(java, tmp_path, request):
    """An INSERT OVERWRITE commits no changelog in Java, whose changelog mode also skips
    OVERWRITE snapshots: both engines return nothing for it, and the rest as before."""
    t = _tname(request)
    _create(java, tmp_path, t, {"bucket": "1", "changelog-producer": "input"})
    _write(java, tmp_path, t, COMMITS[0])
    java.call("write", warehouse=str(tmp_path), table=f"{DB}.{t}",
              commits=[{"rows": [[7, "x"]], "kinds": ["+I"], "overwrite": {}}])
    _write(java, tmp_path, t, COMMITS[1])
    assert _commit_kinds(tmp_path, t) == ["APPEND", "OVERWRITE", "APPEND"]
    assert _java_incremental(java, tmp_path, t, 1, 2, "changelog") == []
    assert _recs(_table(tmp_path, t).changelog(1, 2)) == []
    assert _recs(_table(tmp_path, t).changelog(0)) == COMMITS[0] + COMMITS[1]
    assert _java_by_snapshot(java, tmp_path, t, 3) == COMMITS[0] + COMMITS[1]


# --- paimon_rs writes the changelog, Java reads it -------------------------------------------

def _our_write(wh: Any, t: str, commit: List[Rec], overwrite: bool = False, ident: Optional[int] = None) -> None:
    """One commit of ``commit`` through paimon_rs, each record with its row kind in order;
    ``ident``: a streaming commit with that identifier (a ``full-compaction`` table's writer
    compacts fully only on every ``full-compaction.delta-commits``-th), else a batch commit."""
    from paimon_rs.mutations import _write_kind

    tbl = _table(wh, t)
    wb = tbl.new_batch_write_builder()
    if overwrite:
        wb = wb.overwrite()
    w, c = wb.new_write(), wb.new_commit()
    schema = pa.schema([("id", pa.int32(), False), ("v", pa.string())])
    for kind, i, v in commit:
        _write_kind(w, pa.table({"id": [i], "v": [v]}, schema=schema), kind)
    if ident is None:
        c.commit(w.prepare_commit())
    else:
        c.commit(w._prepare_commit(ident), ident)
    w.close()


def _our_create(wh: Any, t: str, options: Dict[str, str]) -> None:
    from paimon_rs import Schema

    cat = CatalogFactory.create({"warehouse": str(wh)})
    cat.create_database(DB, True)
    schema = pa.schema([("id", pa.int32(), False), ("v", pa.string())])
    cat.create_table(f"{DB}.{t}", Schema.from_pyarrow_schema(schema, primary_keys=["id"], options=options),
                     False)


@pytest.mark.parametrize("buckets", ["1", "2"])
def test_java_reads_our_input_changelog(java, tmp_path, request, buckets):
    """changelog-producer = input written by paimon_rs: Java's changelog read returns the
    input snapshot by snapshot, as for Java's own writes, and the data as the merged input."""
    t = _tname(request)
    _our_create(tmp_path, t, {"bucket": buckets, "changelog-producer": "input"})
    for c in COMMITS:
        _our_write(tmp_path, t, c)
    end = _latest(tmp_path, t)
    assert _commit_kinds(tmp_path, t) == ["APPEND"] * 3
    want = [r for c in COMMITS for r in c]
    java_rows = _java_by_snapshot(java, tmp_path, t, end)
    ours = _recs(_table(tmp_path, t).changelog(0))
    assert sorted(java_rows) == sorted(ours) == sorted(want)
    for k in (1, 2, 3, 4):  # per key, the input order
        assert [r for r in java_rows if r[1] == k] == [r for r in want if r[1] == k]
        assert [r for r in ours if r[1] == k] == [r for r in want if r[1] == k]
    snaps = _table(tmp_path, t).snapshot_manager().list_snapshots()
    assert [s.changelog_record_count for s in snaps] == [len(c) for c in COMMITS]
    data = java.call("read", warehouse=str(tmp_path), table=f"{DB}.{t}")
    assert sorted(map(tuple, data["rows"])) == [(1, "a2"), (3, "c2"), (4, "d")]


def test_mixed_writers_continue_each_others_input_changelog(java, tmp_path, request):
    """Java, paimon_rs, Java: one changelog, each snapshot's the input of its writer, read
    alike by both engines (and Java's compaction of our files leaves it alone)."""
    t = _tname(request)
    _create(java, tmp_path, t, {"bucket": "1", "changelog-producer": "input"})
    _write(java, tmp_path, t, COMMITS[0])
    _our_write(tmp_path, t, COMMITS[1])
    _write(java, tmp_path, t, COMMITS[2])
    java.call("compact", warehouse=str(tmp_path), table=f"{DB}.{t}", full=True)
    end = _latest(tmp_path, t)
    want = [r for c in COMMITS for r in c]
    assert _java_by_snapshot(java, tmp_path, t, end) == want
    assert _recs(_table(tmp_path, t).changelog(0)) == want
    for s in range(end):
        assert _recs(_table(tmp_path, t).changelog(s, s + 1)) == \
            _java_incremental(java, tmp_path, t, s, s + 1, "changelog"), f"snapshot {s + 1}"


def test_our_overwrite_commits_no_changelog_and_leaves_no_files(java, tmp_path, request):
    """As Java, an overwrite commits no changelog; unlike Java, its changelog files are
    deleted rather than left for orphan cleaning."""
    t = _tname(request)
    _our_create(tmp_path, t, {"bucket": "1", "changelog-producer": "input"})
    _our_write(tmp_path, t, COMMITS[0])
    _our_write(tmp_path, t, [("+I", 7, "x")], overwrite=True)
    _our_write(tmp_path, t, COMMITS[1])
    assert _commit_kinds(tmp_path, t) == ["APPEND", "OVERWRITE", "APPEND"]
    assert _java_incremental(java, tmp_path, t, 1, 2, "changelog") == []
    assert _recs(_table(tmp_path, t).changelog(0)) == COMMITS[0] + COMMITS[1]
    assert _java_by_snapshot(java, tmp_path, t, 3) == COMMITS[0] + COMMITS[1]
    bucket = tmp_path / f"{DB}.db" / t / "bucket-0"
    changelogs = sorted(p.name for p in bucket.iterdir() if p.name.startswith("changelog-"))
    assert len(changelogs) == 2, changelogs  # the two APPEND snapshots' files only


# --- lookup compaction written by paimon_rs: Java is the oracle --------------------------------

LOOKUP_KINDS = {
    "lookup": {"changelog-producer": "lookup"},
    "lookup_dedup_rows": {"changelog-producer": "lookup", "changelog-producer.row-deduplicate": "true"},
    "first_row_lookup": {"merge-engine": "first-row", "changelog-producer": "lookup"},
    "first_row": {"merge-engine": "first-row"},
    "deletion_vectors": {"deletion-vectors.enabled": "true"},
    "deletion_vectors_input": {"deletion-vectors.enabled": "true", "changelog-producer": "input"},
    # lookups that must skip rows deletion vectors removed: a key deleted, then written again,
    # finds nothing (+I; a partial update starts afresh), and merging engines merge what they find
    "deletion_vectors_lookup": {"deletion-vectors.enabled": "true", "changelog-producer": "lookup"},
    "deletion_vectors_partial_update": {"deletion-vectors.enabled": "true", "merge-engine": "partial-update",
                                        "partial-update.remove-record-on-delete": "true"},
    "deletion_vectors_aggregation": {"deletion-vectors.enabled": "true", "merge-engine": "aggregation",
                                     "fields.v.aggregate-function": "listagg"},
    "deletion_vectors_sequence_field": {"deletion-vectors.enabled": "true", "sequence.field": "v"},
}

# Four commits with every row kind and a repeated value (row-deduplicate drops -U/+U of it).
LOOKUP_COMMITS: List[List[Rec]] = COMMITS + [[("+I", 4, "d"), ("+I", 5, "e"), ("-D", 1, "a2")]]


# A first commit of many keys: the max level then dwarfs each later level-0 file, so lookup
# compaction moves those up below it (looking keys up, marking rows deleted) instead of
# rewriting everything into one run, where deletion vectors would never be needed.
BASE: List[Rec] = [("+I", i, f"f{i}") for i in range(100, 700)]

# Histories of the kinds above that need their own (default: LOOKUP_COMMITS).
KIND_COMMITS: Dict[str, List[List[Rec]]] = {
    # keys of BASE deleted, then written again: their old rows at the max level are removed by
    # vectors, which a lookup must skip (+I, not -U/+U of the deleted row)
    "deletion_vectors_lookup": [BASE] + LOOKUP_COMMITS + [
        [("+I", 1, "a3"), ("+I", 2, "b2"), ("-D", 150, "f150"), ("-D", 151, "f151")],
        [("+I", 1, "a4"), ("+I", 150, "g150")],
        [("+I", 151, "g151")]],
    "deletion_vectors_partial_update": [
        BASE,
        [("+I", 1, "a"), ("+I", 2, "b"), ("+I", 3, "c")],
        [("+I", 1, None), ("-D", 2, None)],
        [("+I", 2, None), ("+I", 3, None)],
        [("+I", 2, "b3"), ("+I", 4, None), ("-D", 150, None)],
        [("+I", 150, None), ("+I", 151, None)],
    ],
    "deletion_vectors_aggregation": [
        BASE,
        [("+I", 1, "a"), ("+I", 2, "b")],
        [("+I", 1, "x")],
        [("+I", 1, "y"), ("+I", 3, "c")],
    ],
    "deletion_vectors_sequence_field": [
        BASE,
        [("+I", 1, "m"), ("+I", 2, "m")],
        [("+I", 1, "a"), ("+I", 2, "z")],
        [("+I", 1, "b"), ("-D", 2, "a")],
    ],
}


def _first_row(commits: List[List[Rec]]) -> List[Rec]:
    return [r for c in commits for r in c if r[0] in ("+I", "+U")]


@pytest.mark.parametrize("kind", sorted(LOOKUP_KINDS))
def test_our_lookup_tables_match_javas(java, tmp_path, request, kind):
    """The same commits through Java's writer and through ours, each table compacted at every
    commit by its own writer's lookup compaction: the same data, the same changelog snapshot
    by snapshot, and each engine reads the other's table alike."""
    options = {"bucket": "2", **LOOKUP_KINDS[kind]}
    commits = KIND_COMMITS.get(kind, LOOKUP_COMMITS)
    if options.get("merge-engine") == "first-row":  # first-row takes no retractions
        commits = [[r for r in c if r[0] in ("+I", "+U")] for c in commits]
    jt, ot = _tname(request) + "_j", _tname(request) + "_o"
    _create(java, tmp_path, jt, options)
    _our_create(tmp_path, ot, options)
    for c in commits:
        _write(java, tmp_path, jt, c)
        _our_write(tmp_path, ot, c)
    assert _commit_kinds(tmp_path, ot) == _commit_kinds(tmp_path, jt)
    java_data = {t: sorted(map(tuple, java.call("read", warehouse=str(tmp_path), table=f"{DB}.{t}")["rows"]))
                 for t in (jt, ot)}
    ours_data = {t: sorted((r["id"], r["v"]) for r in _table(tmp_path, t).to_arrow().to_pylist()) for t in (jt, ot)}
    assert java_data[ot] == java_data[jt] == ours_data[ot] == ours_data[jt]
    end = _latest(tmp_path, ot)
    # Java 1.0 plans a changelog read as batch splits, which on a deletion-vector table skip
    # level 0 and so every changelog file: it returns nothing for both tables; paimon_rs reads
    # the files (unmerged, as later Paimon), which hold the input
    java_skips_changelog = "deletion-vectors.enabled" in options
    for s in range(end):
        theirs = _java_incremental(java, tmp_path, jt, s, s + 1, "changelog")
        java_of_ours = _java_incremental(java, tmp_path, ot, s, s + 1, "changelog")
        assert sorted(java_of_ours) == sorted(theirs), f"snapshot {s + 1}"
        if java_skips_changelog and options.get("changelog-producer") != "lookup":
            assert theirs == []
            continue
        assert sorted(_recs(_table(tmp_path, ot).changelog(s, s + 1))) == sorted(theirs), f"snapshot {s + 1}"
    if java_skips_changelog and options.get("changelog-producer") == "input":
        got = _recs(_table(tmp_path, ot).changelog(0))
        for k in {r[1] for c in commits for r in c}:  # each key's input, in order
            assert [r for r in got if r[1] == k] == [r for c in commits for r in c if r[1] == k]
    if options.get("changelog-producer") == "lookup" and options.get("merge-engine") == "first-row":
        assert sorted(_recs(_table(tmp_path, ot).changelog(0))) == sorted(
            {r[1]: r for r in reversed(_first_row(commits))}.values())


@pytest.mark.parametrize("kind", ["lookup", "deletion_vectors", "first_row_lookup", "deletion_vectors_lookup",
                                  "deletion_vectors_partial_update"])
def test_mixed_writers_continue_each_others_lookup_tables(java, tmp_path, request, kind):
    """Java, paimon_rs, Java, paimon_rs on one table: each continues the other's levels,
    deletion vectors and changelog; both read the result alike."""
    options = {"bucket": "1", **LOOKUP_KINDS[kind]}
    commits = KIND_COMMITS.get(kind, LOOKUP_COMMITS)
    if options.get("merge-engine") == "first-row":
        commits = [[r for r in c if r[0] in ("+I", "+U")] for c in commits]
    t = _tname(request)
    _create(java, tmp_path, t, options)
    ref = _tname(request) + "_ref"
    _create(java, tmp_path, ref, options)
    for i, c in enumerate(commits):
        (_write(java, tmp_path, t, c) if i % 2 == 0 else _our_write(tmp_path, t, c))
        _write(java, tmp_path, ref, c)
    want = sorted(map(tuple, java.call("read", warehouse=str(tmp_path), table=f"{DB}.{ref}")["rows"]))
    assert sorted(map(tuple, java.call("read", warehouse=str(tmp_path), table=f"{DB}.{t}")["rows"])) == want
    assert sorted((r["id"], r["v"]) for r in _table(tmp_path, t).to_arrow().to_pylist()) == want
    if options.get("changelog-producer") == "lookup":
        end = _latest(tmp_path, t)
        got = _java_by_snapshot(java, tmp_path, t, end)
        assert sorted(got) == sorted(_java_by_snapshot(java, tmp_path, ref, _latest(tmp_path, ref)))
        assert sorted(_recs(_table(tmp_path, t).changelog(0))) == sorted(got)


@pytest.mark.parametrize("kind", ["deletion_vectors", "deletion_vectors_lookup", "deletion_vectors_partial_update"])
def test_our_dedicated_compaction_of_javas_write_only_tables(java, tmp_path, request, kind):
    """Java's deployment of a deletion-vector table: Java's ``write-only`` writers leave level 0
    to a compaction job, here ``table.compact()`` of paimon_rs (lookup compaction, the bucket's
    vectors restored, marked and written back); Java reads the result as its own writers' table
    and continues it."""
    options = {"bucket": "1", **LOOKUP_KINDS[kind]}
    commits = KIND_COMMITS.get(kind, LOOKUP_COMMITS)
    t = _tname(request)
    ref = t + "_ref"
    _create(java, tmp_path, t, {**options, "write-only": "true"})
    _create(java, tmp_path, ref, options)
    for i, c in enumerate(commits):
        _write(java, tmp_path, t, c)
        _write(java, tmp_path, ref, c)
        if i % 2 == 1:
            assert _table(tmp_path, t).compact(full=False) is not None
    _table(tmp_path, t).compact(full=False)
    want = sorted(map(tuple, java.call("read", warehouse=str(tmp_path), table=f"{DB}.{ref}")["rows"]))
    assert sorted(map(tuple, java.call("read", warehouse=str(tmp_path), table=f"{DB}.{t}")["rows"])) == want
    assert sorted((r["id"], r["v"]) for r in _table(tmp_path, t).to_arrow().to_pylist()) == want
    assert "COMPACT" in _commit_kinds(tmp_path, t)


# --- full-compaction written by paimon_rs: Java is the oracle ----------------------------------

FULL_KINDS = {
    "full": {"changelog-producer": "full-compaction"},
    "full_dedup_rows": {"changelog-producer": "full-compaction", "changelog-producer.row-deduplicate": "true"},
    "full_aggregation": {"changelog-producer": "full-compaction", "merge-engine": "aggregation",
                         "fields.v.aggregate-function": "listagg"},
}


def _full_commits(options: Dict[str, str]) -> List[List[Rec]]:
    commits = LOOKUP_COMMITS
    if options.get("merge-engine") == "aggregation":  # listagg takes no retractions
        commits = [[r for r in c if r[0] in ("+I", "+U")] for c in commits]
    return commits


@pytest.mark.parametrize("kind", sorted(FULL_KINDS))
def test_our_full_compaction_tables_match_javas(java, tmp_path, request, kind):
    """changelog-producer = full-compaction: the same commits through Java's writer (each
    commit compacting its buckets fully, as Flink's) and through ours (a batch commit compacts
    fully): the same snapshots, data and changelog snapshot by snapshot, each engine reading
    both tables alike."""
    options = {"bucket": "2", **FULL_KINDS[kind]}
    commits = _full_commits(options)
    jt, ot = _tname(request) + "_j", _tname(request) + "_o"
    _create(java, tmp_path, jt, options)
    _our_create(tmp_path, ot, options)
    for c in commits:
        _write(java, tmp_path, jt, c, full_compaction=True)
        _our_write(tmp_path, ot, c)
    assert _commit_kinds(tmp_path, ot) == _commit_kinds(tmp_path, jt) == ["APPEND", "COMPACT"] * len(commits)
    java_data = {t: sorted(map(tuple, java.call("read", warehouse=str(tmp_path), table=f"{DB}.{t}")["rows"]))
                 for t in (jt, ot)}
    ours_data = {t: sorted((r["id"], r["v"]) for r in _table(tmp_path, t).to_arrow().to_pylist()) for t in (jt, ot)}
    assert java_data[ot] == java_data[jt] == ours_data[ot] == ours_data[jt]
    end = _latest(tmp_path, ot)
    for s in range(end):
        theirs = _java_incremental(java, tmp_path, jt, s, s + 1, "changelog")
        assert sorted(_java_incremental(java, tmp_path, ot, s, s + 1, "changelog")) == sorted(theirs), \
            f"snapshot {s + 1}"
        assert sorted(_recs(_table(tmp_path, ot).changelog(s, s + 1))) == sorted(theirs), f"snapshot {s + 1}"
        assert sorted(_recs(_table(tmp_path, jt).changelog(s, s + 1))) == sorted(theirs), f"snapshot {s + 1}"
    if kind == "full":
        # each commit compacted on its own: its changelog is its changes, a rewritten equal value
        # as -U/+U (no row-deduplicate); per key in order (buckets may interleave)
        want = [("+I", 1, "a"), ("+I", 2, "b"), ("+I", 3, "c"),
                ("-U", 1, "a"), ("+U", 1, "a2"), ("-D", 2, "b"),
                ("-U", 3, "c"), ("+U", 3, "c2"), ("+I", 4, "d"),
                ("-U", 4, "d"), ("+U", 4, "d"), ("+I", 5, "e"), ("-D", 1, "a2")]
        got = _recs(_table(tmp_path, ot).changelog(0))
        for k in (1, 2, 3, 4, 5):
            assert [r for r in got if r[1] == k] == [r for r in want if r[1] == k], k


FORCE_LOOKUP_KINDS = {
    "full_force_lookup": {"changelog-producer": "full-compaction", "force-lookup": "true"},
    "full_force_lookup_aggregation": {"changelog-producer": "full-compaction", "force-lookup": "true",
                                      "merge-engine": "aggregation", "fields.v.aggregate-function": "listagg"},
}


@pytest.mark.parametrize("force_lookup", [False, True])
def test_mixed_writers_continue_each_others_full_compaction_tables(java, tmp_path, request, force_lookup):
    """Java, paimon_rs, Java, paimon_rs on one full-compaction table: each continues the other's
    max level; data and changelog as a table Java alone wrote. With force-lookup (deduplicate)
    full compactions fall on every second commit and the others force level 0 up: Java forces
    up, paimon_rs compacts fully, and again."""
    options = {"bucket": "1", "changelog-producer": "full-compaction"}
    commits = LOOKUP_COMMITS
    full = [True] * len(commits)
    if force_lookup:
        options = {"bucket": "1", "full-compaction.delta-commits": "2", **FORCE_LOOKUP_KINDS["full_force_lookup"]}
        commits = [BASE] + LOOKUP_COMMITS
        full = [i % 2 == 1 for i in range(len(commits))]
    t, ref = _tname(request), _tname(request) + "_ref"
    _create(java, tmp_path, t, options)
    _create(java, tmp_path, ref, options)
    for i, c in enumerate(commits):
        (_write(java, tmp_path, t, c, full_compaction=full[i]) if i % 2 == 0
         else _our_write(tmp_path, t, c, ident=i + 1 if force_lookup else None))
        _write(java, tmp_path, ref, c, full_compaction=full[i])
    want = sorted(map(tuple, java.call("read", warehouse=str(tmp_path), table=f"{DB}.{ref}")["rows"]))
    assert sorted(map(tuple, java.call("read", warehouse=str(tmp_path), table=f"{DB}.{t}")["rows"])) == want
    assert sorted((r["id"], r["v"]) for r in _table(tmp_path, t).to_arrow().to_pylist()) == want
    end = _latest(tmp_path, t)
    assert end == _latest(tmp_path, ref)
    assert _java_by_snapshot(java, tmp_path, t, end) == _java_by_snapshot(java, tmp_path, ref, end)
    assert _recs(_table(tmp_path, t).changelog(0)) == _java_by_snapshot(java, tmp_path, ref, end)




@pytest.mark.parametrize("kind", sorted(FORCE_LOOKUP_KINDS))
def test_our_full_compaction_force_lookup_tables_match_javas(java, tmp_path, request, kind):
    """changelog-producer = full-compaction with force-lookup, full compactions at every second
    commit (``full-compaction.delta-commits = 2`` for ours; Java's writer compacts fully when
    told, as Flink's at every second checkpoint): the commits between force level 0 up below the
    max level with no changelog (Java's ``ForceUpLevel0Compaction``), the full compactions diff
    against the max level; the same snapshots, data and changelog snapshot by snapshot as Java's
    table, each engine reading both alike."""
    options = {"bucket": "1", "full-compaction.delta-commits": "2", **FORCE_LOOKUP_KINDS[kind]}
    commits = [BASE] + _full_commits(options)
    jt, ot = _tname(request) + "_j", _tname(request) + "_o"
    _create(java, tmp_path, jt, options)
    _our_create(tmp_path, ot, options)
    for i, c in enumerate(commits):
        _write(java, tmp_path, jt, c, full_compaction=i % 2 == 1)
        _our_write(tmp_path, ot, c, ident=i + 1)
    assert _commit_kinds(tmp_path, ot) == _commit_kinds(tmp_path, jt)
    java_data = {t: sorted(map(tuple, java.call("read", warehouse=str(tmp_path), table=f"{DB}.{t}")["rows"]))
                 for t in (jt, ot)}
    ours_data = {t: sorted((r["id"], r["v"]) for r in _table(tmp_path, t).to_arrow().to_pylist()) for t in (jt, ot)}
    end = _latest(tmp_path, ot)
    if options.get("merge-engine") != "aggregation":
        assert java_data[ot] == java_data[jt] == ours_data[ot] == ours_data[jt]
    else:
        # the model: each key's values joined in order; `at_full`: at the last full compaction
        model: Dict[int, str] = {}
        at_full: Dict[int, str] = {}
        for n, c in enumerate(commits):
            for _, i, v in c:
                model[i] = v if i not in model else f"{model[i]},{v}"
            if n % 2 == 1:
                at_full = dict(model)
        assert java_data[ot] == ours_data[ot]
        assert ours_data[ot] == sorted(model.items())
        # Java 1.0's writer forces level 0 up below the max level without looking keys up
        # (its full-compaction rewriter has no lookup), and its LookupMergeFunction then merges
        # only a key's lowest level: a key written again after a force-up loses its older
        # values (1: 'a2', not 'a,a2'). paimon_rs looks keys up in that force-up instead
        # (paimon-behaviour.md §9.4), so its table reads as the model, in Java too
        assert (1, "a2") in java_data[jt] and (1, "a,a2") in java_data[ot]
        got = _recs(_table(tmp_path, ot).changelog(0))
        state: Dict[int, Optional[str]] = {}
        for k, i, v in got:
            if k in ("+I", "+U"):
                state[i] = v
            else:
                state.pop(i, None)
        # the changelog ends at the last full compaction (the last commit forced level 0 up)
        assert sorted(state.items()) == sorted(at_full.items()) != sorted(model.items())
        for s in range(end):
            assert sorted(_java_incremental(java, tmp_path, ot, s, s + 1, "changelog")) == \
                sorted(_recs(_table(tmp_path, ot).changelog(s, s + 1))), f"snapshot {s + 1}"
        return
    levels = []
    for s in range(end):
        theirs = _java_incremental(java, tmp_path, jt, s, s + 1, "changelog")
        assert sorted(_java_incremental(java, tmp_path, ot, s, s + 1, "changelog")) == sorted(theirs), \
            f"snapshot {s + 1}"
        assert sorted(_recs(_table(tmp_path, ot).changelog(s, s + 1))) == sorted(theirs), f"snapshot {s + 1}"
        levels.append(len(theirs))
    assert any(levels) and not all(levels)  # force-ups without changelog, full compactions with



def _our_stream_write(wh: Any, t: str, commit: List[Rec], ident: int, user: str) -> None:
    """One micro-batch as ``paimon_rs.spark``'s stream sink commits it: a writer for this
    commit (it compacts the buckets it wrote when ``ident`` is a full compaction's) and the
    driver's full compaction of the buckets ``user`` wrote earlier in the window."""
    from paimon_rs import _core
    from paimon_rs.mutations import _write_kind

    tbl = _table(wh, t)
    wb = tbl.new_batch_write_builder().with_commit_user(user)
    w, c = wb.new_write(), wb.new_commit()
    schema = pa.schema([("id", pa.int32(), False), ("v", pa.string())])
    for kind, i, v in commit:
        _write_kind(w, pa.table({"id": [i], "v": [v]}, schema=schema), kind)
    msgs = [m for m in w._prepare_commit(ident) if not m.is_empty()]
    msgs += _core.compact_full_window(tbl._core, user, ident, [(m.partition, m.bucket) for m in msgs])
    c.commit(msgs, ident)
    w.close()


def test_java_reads_every_buckets_changelog_at_our_full_compactions(java, tmp_path, request):
    """full-compaction with ``full-compaction.delta-commits = 2`` over two buckets, written as a
    stream (identifiers 1, 2, ...): the commits of even identifiers write one key only, so the
    other bucket was written in the window but not in the commit. Its full compaction takes it
    too (Flink's ``GlobalFullCompactionSinkWrite``): Java's changelog read up to each full
    compaction replays to the table Java reads there, and Java's ``compacted-full`` batch read
    (``FullCompactedStartingScanner``) picks that snapshot."""
    options = {"bucket": "2", "changelog-producer": "full-compaction", "full-compaction.delta-commits": "2"}
    t = _tname(request)
    _our_create(tmp_path, t, options)
    commits: List[List[Rec]] = [
        [("+I", i, f"v{i}") for i in range(1, 9)],
        [("+U", 1, "w1")],
        [("+U", 2, "w2"), ("+U", 3, "w3"), ("-D", 4, "v4"), ("+I", 9, "v9"), ("+U", 5, "w5")],
        [("+U", 1, "x1")],
    ]
    model: Dict[int, str] = {}
    for n, c in enumerate(commits, start=1):
        _our_stream_write(tmp_path, t, c, n, "stream-user")
        for k, i, v in c:
            if k in ("+I", "+U"):
                model[i] = v
            else:
                model.pop(i, None)
        if n % 2:
            continue
        end = _latest(tmp_path, t)
        state: Dict[int, Optional[str]] = {}
        for k, i, v in _java_by_snapshot(java, tmp_path, t, end):
            if k in ("+I", "+U"):
                state[i] = v
            else:
                state.pop(i, None)
        data = java.call("read", warehouse=str(tmp_path), table=f"{DB}.{t}")
        assert sorted(state.items()) == sorted(map(tuple, data["rows"])) == sorted(model.items()), n
        full = java.call("read", warehouse=str(tmp_path), table=f"{DB}.{t}", options={"scan.mode": "compacted-full"})
        assert sorted(map(tuple, full["rows"])) == sorted(model.items()), n
    # both buckets got changelog in each full compaction's COMPACT snapshot
    snaps = _table(tmp_path, t).snapshot_manager().list_snapshots()
    compacts = [s.commit_identifier for s in snaps if s.commit_kind == "COMPACT"]
    assert compacts == [2, 4]
