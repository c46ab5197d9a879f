"""``TableUpdate`` as pypaimon 2.1.0 and Java behave: the words of commit conflicts callers
retry or match on ('MERGE INTO' for racing column updates, "Deletion vector index conflict" for
racing deletes, "Overwrite conflict" for a partition delete whose partitions changed), a
delete by a partition-only predicate dropping the partitions (any table, deletion vectors or
not), ``commit.user-prefix``, predicate updates reading the table's time-travel snapshot and
refusing partition columns with a ``ValueError``, MAP columns given as pairs or dicts, and
``new_shard_updator``. Interop with pypaimon: tests/compat/test_pypaimon_table_update.py."""

from __future__ import annotations

import pyarrow as pa
import pytest

from paimon_rs import CatalogFactory, Schema
from paimon_rs.exceptions import CommitConflictError, InvalidArgumentError

from unit_helpers import write_arrow

SCH = pa.schema([("id", pa.int32()), ("name", pa.string()), ("age", pa.int32()), ("city", pa.string())])
DE = {"row-tracking.enabled": "true", "data-evolution.enabled": "true"}
DV = {**DE, "deletion-vectors.enabled": "true"}


def _table(path, options=DE, partition_keys=None, schema=SCH, name="db.t"):
    c = CatalogFactory.create({"warehouse": str(path)})
    c.create_database("db", True)
    c.create_table(name, Schema.from_pyarrow_schema(schema, partition_keys=partition_keys, options=options),
                   True)
    return c.get_table(name)


def _seeded(path, options=DE, partition_keys=None):
    t = _table(path, options, partition_keys)
    write_arrow(t, pa.table({"id": [1, 2], "name": ["A", "B"], "age": [25, 30], "city": ["NYC", "LA"]},
                            schema=SCH))
    write_arrow(t, pa.table({"id": [3, 4, 5], "name": ["C", "D", "E"], "age": [35, 40, 45],
                             "city": ["Chicago", "LA", "Phoenix"]}, schema=SCH))
    return t


def _read(t, key="id"):
    rb = t.new_read_builder()
    return rb.new_read().to_arrow(rb.new_scan().plan().splits()).sort_by(key)


def _commit(t, msgs):
    c = t.new_batch_write_builder().new_commit()
    c.commit(msgs)
    c.close()


def _pred(t):
    return t.new_read_builder().new_predicate_builder()


# --- conflict messages ---

def test_racing_updates_carry_javas_merge_into_words(tmp_path):
    """A caller retries on Java's / pypaimon's 'MERGE INTO' words; ours follow them."""
    t = _seeded(tmp_path)
    upd = lambda age: t.new_batch_write_builder().new_update().with_update_type(["age"]) \
        .update_by_arrow_with_row_id(pa.table({"_ROW_ID": pa.array([0], pa.int64()),  # noqa: E731
                                               "age": pa.array([age], pa.int32())}))
    first, second = upd(1), upd(2)
    _commit(t, first)
    with pytest.raises(CommitConflictError) as e:
        _commit(t, second)
    assert "For Data Evolution table, multiple 'MERGE INTO' operations have encountered conflicts" in str(e.value)
    assert "data-" in str(e.value)  # our detail: the files
    # read again, the retry commits
    _commit(t, upd(3))
    assert _read(t)["age"].to_pylist()[0] == 3


def test_racing_deletes_of_one_file_are_a_deletion_vector_index_conflict(tmp_path):
    t = _seeded(tmp_path, DV)
    pb = _pred(t)
    first = t.new_batch_write_builder().new_update().delete_by_predicate(pb.equal("id", 1))
    _commit(t, t.new_batch_write_builder().new_update().delete_by_predicate(pb.equal("id", 2)))
    with pytest.raises(CommitConflictError, match="Deletion vector index conflict detected: "):
        _commit(t, first)
    assert _read(t)["id"].to_pylist() == [1, 3, 4, 5]


# --- commit.user-prefix ---

def test_commit_user_prefix_names_the_builders_commit_user(tmp_path):
    t = _seeded(tmp_path).copy({"commit.user-prefix": "w1"})
    wb = t.new_batch_write_builder()
    assert wb.commit_user.startswith("w1_") and len(wb.commit_user) == 3 + 36
    assert t.new_stream_write_builder().commit_user.startswith("w1_")
    w = wb.new_write()
    w.write_arrow(pa.table({"id": [6], "name": ["F"], "age": [1], "city": ["X"]}, schema=SCH))
    wb.new_commit().commit(w.prepare_commit())
    assert t.snapshot_manager().get_latest_snapshot().commit_user == wb.commit_user
    assert not _seeded(tmp_path / "other").new_batch_write_builder().commit_user.startswith("w1_")


# --- delete by a partition-only predicate ---

@pytest.mark.parametrize("options", [DE, DV, {}], ids=["data-evolution", "deletion-vectors", "append"])
def test_partition_predicate_delete_drops_the_partitions(tmp_path, options):
    """Java's Spark DELETE with a partition filter truncates the partitions; pypaimon's
    delete_by_predicate drops their files: any table, with deletion vectors or without."""
    t = _seeded(tmp_path, options, ["city"])
    if options is DV:  # a row of the partition deleted first: its vector goes with it
        _commit(t, t.new_batch_write_builder().new_update().delete_by_predicate(_pred(t).equal("id", 2)))
    msgs = t.new_batch_write_builder().new_update().delete_by_predicate(_pred(t).equal("city", "LA"))
    assert sum(len(m.deleted_files) for m in msgs) == (2 if options is not DV else 2)
    assert sum(len(m.index_adds) for m in msgs) == 0
    assert sum(len(m.index_deletes) for m in msgs) == (1 if options is DV else 0)
    before = t.latest_snapshot_id()
    _commit(t, msgs)
    assert _read(t)["id"].to_pylist() == [1, 3, 5]
    snap = t.snapshot_manager().get_latest_snapshot()
    assert snap.id == before + 1 and snap.commit_kind == "OVERWRITE"


_EXACT_CASES = {  # predicate on (city, name) -> the model of the partitions it matches (SQL nulls)
    "equal": (lambda pb: pb.equal("city", "LA"), lambda c, n: c == "LA"),
    "not_equal": (lambda pb: pb.not_equal("city", "LA"), lambda c, n: c is not None and c != "LA"),
    "in": (lambda pb: pb.is_in("city", ["LA", "SF"]), lambda c, n: c in ("LA", "SF")),
    "not_in": (lambda pb: pb.is_not_in("city", ["LA", "SF"]),
               lambda c, n: c is not None and c not in ("LA", "SF")),
    "between": (lambda pb: pb.between("city", "LA", "NYC"), lambda c, n: c is not None and "LA" <= c <= "NYC"),
    "less_than": (lambda pb: pb.less_than("city", "NYC"), lambda c, n: c is not None and c < "NYC"),
    "startswith": (lambda pb: pb.startswith("city", "L"), lambda c, n: c is not None and c.startswith("L")),
    "endswith": (lambda pb: pb.endswith("city", "X"), lambda c, n: c is not None and c.endswith("X")),
    "contains": (lambda pb: pb.contains("city", "A"), lambda c, n: c is not None and "A" in c),
    "contains_none": (lambda pb: pb.contains("city", "Q"), lambda c, n: False),
    "like": (lambda pb: pb.like("city", "%F"), lambda c, n: c is not None and c.endswith("F")),
    "is_null": (lambda pb: pb.is_null("city"), lambda c, n: c is None),
    "and": (lambda pb: pb.and_predicates([pb.endswith("city", "A"), pb.equal("name", "B")]),
            lambda c, n: c is not None and c.endswith("A") and n == "B"),
    "or": (lambda pb: pb.or_predicates([pb.contains("city", "X"), pb.equal("name", "A")]),
           lambda c, n: (c is not None and "X" in c) or n == "A"),
}


@pytest.mark.parametrize("case", sorted(_EXACT_CASES))
@pytest.mark.parametrize("kind", ["append", "data-evolution", "pk-deletion-vectors"])
def test_partition_predicate_delete_drops_exactly_the_matching_partitions(tmp_path, case, kind):
    """Each partition is decided exactly (row-wise on its values, nulls as SQL), not by the
    stats test's "might match": contains/endswith/like once dropped every non-null partition."""
    pk = kind == "pk-deletion-vectors"
    options = {"deletion-vectors.enabled": "true", "bucket": "1"} if pk else (DE if kind == "data-evolution" else {})
    schema = pa.schema([pa.field("id", pa.int32(), nullable=not pk), pa.field("name", pa.string(), nullable=not pk),
                        pa.field("age", pa.int32()), pa.field("city", pa.string(), nullable=not pk)])
    c = CatalogFactory.create({"warehouse": str(tmp_path)})
    c.create_database("db", True)
    c.create_table("db.t", Schema.from_pyarrow_schema(schema, partition_keys=["city", "name"],
                                                      primary_keys=["id", "city", "name"] if pk else None,
                                                      options=options), True)
    t = c.get_table("db.t")
    cities = ["NYC", "LA", "LAX", "SF", "NYC", "LA", "NUL" if pk else None]
    names = ["A", "A", "B", "B", "B", "B", "A"]
    write_arrow(t, pa.table({"id": list(range(len(cities))), "name": names, "age": [1] * len(cities),
                             "city": cities}, schema=schema))
    pred, model = _EXACT_CASES[case]
    msgs = t.new_batch_write_builder().new_update().delete_by_predicate(pred(_pred(t)))
    if msgs:
        _commit(t, msgs)
    want = [i for i in range(len(cities)) if not model(cities[i], names[i])]
    assert _read(t)["id"].to_pylist() == want


def test_partition_delete_of_a_bucket_holding_only_an_index_file(tmp_path):
    """A dynamic-bucket partition whose bucket 0 lost all its rows (deleted, compacted away)
    keeps only its hash index there: that bucket's message deletes the index file alone and is
    committed with the others (it was refused as 'together with new files')."""
    sch = pa.schema([pa.field("id", pa.int32(), nullable=False), ("v", pa.string()),
                     pa.field("city", pa.string(), nullable=False)])
    c = CatalogFactory.create({"warehouse": str(tmp_path)})
    c.create_database("db", True)
    c.create_table("db.t", Schema.from_pyarrow_schema(sch, partition_keys=["city"], primary_keys=["id", "city"],
                                                      options={"bucket": "-1", "rowkind.field": "v",
                                                               "dynamic-bucket.target-row-num": "1"}), False)
    t = c.get_table("db.t")
    write_arrow(t, pa.table({"id": [1, 2, 3], "v": ["+I"] * 3, "city": ["LA", "LA", "SF"]}, schema=sch))
    write_arrow(t, pa.table({"id": [1], "v": ["-D"], "city": ["LA"]}, schema=sch))
    t.compact()
    msgs = t.new_batch_write_builder().new_update().delete_by_predicate(_pred(t).equal("city", "LA"))
    assert sorted((len(m.deleted_files), len(m.index_deletes)) for m in msgs) == [(0, 1), (1, 1)]
    _commit(t, msgs)
    assert _read(t)["id"].to_pylist() == [3]


def test_partition_predicate_delete_conflicts_when_the_partition_changed(tmp_path):
    t = _seeded(tmp_path, DE, ["city"])
    msgs = t.new_batch_write_builder().new_update().delete_by_predicate(_pred(t).equal("city", "LA"))
    write_arrow(t, pa.table({"id": [6], "name": ["F"], "age": [28], "city": ["LA"]}, schema=SCH))
    before = t.latest_snapshot_id()
    with pytest.raises(CommitConflictError, match="Overwrite conflict detected"):
        _commit(t, msgs)
    assert t.latest_snapshot_id() == before
    assert _read(t)["id"].to_pylist() == [1, 2, 3, 4, 5, 6]
    # a write to another partition does not conflict
    msgs = t.new_batch_write_builder().new_update().delete_by_predicate(_pred(t).equal("city", "LA"))
    write_arrow(t, pa.table({"id": [7], "name": ["G"], "age": [28], "city": ["NYC"]}, schema=SCH))
    _commit(t, msgs)
    assert _read(t)["id"].to_pylist() == [1, 3, 5, 7]


def test_partition_delete_messages_are_committed_alone(tmp_path):
    t = _seeded(tmp_path, DE, ["city"])
    msgs = t.new_batch_write_builder().new_update().delete_by_predicate(_pred(t).equal("city", "LA"))
    w = t.new_batch_write_builder().new_write()
    w.write_arrow(pa.table({"id": [6], "name": ["F"], "age": [28], "city": ["NYC"]}, schema=SCH))
    with pytest.raises(NotImplementedError, match="commit it alone"):
        _commit(t, msgs + w.prepare_commit())


def test_mixed_predicate_delete_still_needs_deletion_vectors(tmp_path):
    t = _seeded(tmp_path, DE, ["city"])
    pb = _pred(t)
    with pytest.raises(ValueError, match="deletion-vectors.enabled"):
        t.new_batch_write_builder().new_update().delete_by_predicate(
            pb.and_predicates([pb.equal("city", "LA"), pb.equal("age", 30)]))


# --- update_by_predicate ---

def test_update_by_predicate_refuses_partition_columns_with_a_value_error(tmp_path):
    t = _seeded(tmp_path, DE, ["city"])
    with pytest.raises(InvalidArgumentError, match="partition column 'city'"):
        t.new_batch_write_builder().new_update().update_by_predicate(_pred(t).equal("id", 1), {"city": "X"})


@pytest.mark.parametrize("travel", ["snapshot", "tag", "timestamp"])
def test_update_by_predicate_reads_the_time_travel_snapshot(tmp_path, travel):
    t = _table(tmp_path)
    write_arrow(t, pa.table({"id": [1], "name": ["old"], "age": [10], "city": ["NYC"]}, schema=SCH))
    snap = t.snapshot_manager().get_latest_snapshot()
    t.create_tag("before")
    write_arrow(t, pa.table({"id": [2], "name": ["new"], "age": [20], "city": ["LA"]}, schema=SCH))
    opts = {"snapshot": {"scan.snapshot-id": str(snap.id)}, "tag": {"scan.tag-name": "before"},
            "timestamp": {"scan.mode": "from-timestamp", "scan.timestamp-millis": str(snap.time_millis)}}
    travel_table = t.copy(opts[travel])
    upd = travel_table.new_batch_write_builder().new_update()
    # 'new' is not a row of the snapshot read: nothing to update
    assert upd.update_by_predicate(_pred(t).equal("name", "new"), {"age": 21}) == []
    # 'old' is: its update is checked against the snapshots since, which did not touch it
    _commit(t, upd.update_by_predicate(_pred(t).equal("name", "old"), {"age": 11}))
    assert _read(t)["age"].to_pylist() == [11, 20]


def test_update_of_map_columns_given_as_pairs_or_dicts(tmp_path):
    sch = pa.schema([("id", pa.int32()), ("meta", pa.map_(pa.string(), pa.string()))])
    t = _table(tmp_path, schema=sch)
    write_arrow(t, pa.table({"id": [1, 2], "meta": [[("k1", "v1")], [("k2", "v2")]]}, schema=sch))
    wb = t.new_batch_write_builder()
    upd = lambda data: _commit(t, wb.new_update().with_update_type(["meta"])  # noqa: E731
                               .update_by_arrow_with_row_id(pa.Table.from_pydict(data)))
    upd({"_ROW_ID": pa.array([0], pa.int64()), "meta": [[("k1", "new")]]})  # list<list<string>>
    upd({"_ROW_ID": pa.array([1], pa.int64()), "meta": [{"k2": "dict"}]})  # a struct
    assert _read(t)["meta"].to_pylist() == [[("k1", "new")], [("k2", "dict")]]
    with pytest.raises(InvalidArgumentError, match="schema-less dict"):
        upd({"_ROW_ID": pa.array([0, 1], pa.int64()), "meta": [{"a": "1"}, {"b": "2"}]})


# --- new_shard_updator ---

ABCD = pa.schema([("a", pa.int32()), ("b", pa.int32()), ("d", pa.int32())])


def _abcd(path, groups):
    t = _table(path, schema=ABCD)
    k = 0
    for n in groups:
        wb = t.new_batch_write_builder()
        w = wb.new_write().with_write_type(["a", "b"])
        w.write_arrow(pa.table({"a": list(range(k, k + n)), "b": [10 * i for i in range(k, k + n)]},
                               schema=pa.schema([ABCD.field("a"), ABCD.field("b")])))
        wb.new_commit().commit(w.prepare_commit())
        k += n
    return t


def _run_shard(t, i, count, fn=lambda a, b: a + b):
    """Worker ``i`` of ``count`` fills ``d = fn(a, b)``, handing its rows over in batches of
    2 (across file groups); returns its messages and the ``_ROW_ID`` it read."""
    upd = t.new_batch_write_builder().new_update().with_update_type(["d"])
    upd.with_read_projection(["_ROW_ID", "a", "b"])
    shard = upd.new_shard_updator(i, count)
    rows = shard.arrow_reader().read_all()
    d = pa.array([fn(r["a"], r["b"]) for r in rows.to_pylist()], pa.int32())
    for k in range(0, len(d), 2):
        shard.update_by_arrow_batch(pa.table({"d": d[k:k + 2]}))
    return shard.prepare_commit(), rows.column("_ROW_ID").to_pylist()


def test_shard_updators_split_the_file_groups_and_fill_a_column(tmp_path):
    """pypaimon's scan-and-rewrite: 5 groups over 3 workers get 2, 2 and 1 whole groups in
    row-id order; each worker writes one update file per group."""
    t = _abcd(tmp_path, [2, 3, 1, 2, 2])
    msgs, seen = [], []
    for i in range(3):
        m, ids = _run_shard(t, i, 3)
        msgs += m
        seen.append(ids)
    assert seen == [[0, 1, 2, 3, 4], [5, 6, 7], [8, 9]]
    assert [m.row_count for m in msgs] == [2, 3, 1, 2, 2]
    _commit(t, msgs)
    got = _read(t, "a")
    assert got["d"].to_pylist() == [a + 10 * a for a in range(10)]


@pytest.mark.parametrize("projection", [["a"], ["a", "_ROW_ID"]])
def test_shard_updator_on_a_partitioned_table_maps_rows_by_row_id(tmp_path, projection):
    """A partitioned table's scan is not in _ROW_ID order (split by split): the rows
    arrow_reader hands out, and so the values given back, must still land on their rows
    (they once landed in row-id order, on other rows); _ROW_ID is only output if projected."""
    sch = pa.schema([("a", pa.int32()), ("p", pa.string()), ("d", pa.int32())])
    t = _table(tmp_path, DE, ["p"], schema=sch)
    for a in ([0, 1, 2, 3], [4, 5, 6, 7]):
        wb = t.new_batch_write_builder()
        w = wb.new_write().with_write_type(["a", "p"])
        w.write_arrow(pa.table({"a": a, "p": ["x", "y", "x", "y"]}, schema=pa.schema([sch.field("a"), sch.field("p")])))
        wb.new_commit().commit(w.prepare_commit())
    upd = t.new_batch_write_builder().new_update().with_update_type(["d"])
    upd.with_read_projection(projection)
    for i in range(2):
        shard = upd.new_shard_updator(i, 2)
        reader = shard.arrow_reader()
        assert reader.schema.names == projection
        for b in reader:
            shard.update_by_arrow_batch(pa.RecordBatch.from_pydict(
                {"d": pa.array([10 * x for x in b.column("a").to_pylist()], pa.int32())}))
        _commit(t, shard.prepare_commit())
    got = _read(t, "a")
    assert got["d"].to_pylist() == [10 * a for a in got["a"].to_pylist()]


def test_a_shard_with_no_group_reads_nothing(tmp_path):
    t = _abcd(tmp_path, [3])
    msgs, ids = _run_shard(t, 1, 2)
    assert (msgs, ids) == ([], [])


def test_shard_updator_refuses_too_many_or_too_few_rows(tmp_path):
    t = _abcd(tmp_path, [3, 2])
    upd = t.new_batch_write_builder().new_update().with_update_type(["d"])
    shard = upd.new_shard_updator(0, 1)
    with pytest.raises(InvalidArgumentError, match="No more row ranges to write"):
        shard.update_by_arrow_batch(pa.RecordBatch.from_pydict({"d": pa.array(range(6), pa.int32())}))
    shard = upd.new_shard_updator(0, 1)
    shard.update_by_arrow_batch(pa.RecordBatch.from_pydict({"d": pa.array(range(4), pa.int32())}))
    with pytest.raises(InvalidArgumentError, match="1 rows read were not given"):
        shard.prepare_commit()
    # one group written, then too many rows: its update file is removed too
    shard = upd.new_shard_updator(0, 1)
    shard.update_by_arrow_batch(pa.RecordBatch.from_pydict({"d": pa.array(range(3), pa.int32())}))
    before = sorted(p.name for p in tmp_path.rglob("*.parquet"))
    assert len(before) == 3
    with pytest.raises(InvalidArgumentError, match="No more row ranges to write"):
        shard.update_by_arrow_batch(pa.RecordBatch.from_pydict({"d": pa.array(range(3), pa.int32())}))
    assert len(list(tmp_path.rglob("*.parquet"))) == 2
    assert _read(t, "a")["d"].to_pylist() == [None] * 5


def test_racing_shard_updates_conflict(tmp_path):
    t = _abcd(tmp_path, [3])
    first, _ = _run_shard(t, 0, 1)
    second, _ = _run_shard(t, 0, 1, lambda a, b: -a)
    _commit(t, first)
    with pytest.raises(CommitConflictError, match="multiple 'MERGE INTO'"):
        _commit(t, second)
