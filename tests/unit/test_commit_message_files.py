"""``CommitMessage.new_files`` as pypaimon's: ``first_row_id`` set on one of a message's files
(pypaimon's data-evolution writes name the rows a file of some columns updates that way) is
set in the message, so the commit sees it; a split's files are copies."""

from __future__ import annotations

import pickle

import pyarrow as pa
import pytest

from paimon_rs import InvalidArgumentError, Schema

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


@pytest.fixture
def table(catalog):
    schema = Schema.from_pyarrow_schema(SCHEMA, options={"row-tracking.enabled": "true"})
    catalog.create_table("db.rt", schema, False)
    return catalog.get_table("db.rt")


def prepared(table, ids):
    w = table.new_batch_write_builder().new_write()
    w.write_arrow(pa.table({"id": ids, "v": [str(i) for i in ids]}, schema=SCHEMA))
    return w.prepare_commit()


def commit(table, msgs):
    c = table.new_batch_write_builder().new_commit()
    c.commit(msgs)
    c.close()


def test_first_row_id_set_on_a_new_file_is_set_in_the_message(table):
    msgs = prepared(table, [1, 2])
    assert msgs[0].new_files[0].first_row_id is None
    f = msgs[0].new_files[0]
    f.first_row_id = 7
    assert f.first_row_id == 7
    # a fresh `new_files` (a new list each time, as the message's current files) sees it
    assert msgs[0].new_files[0].first_row_id == 7
    # and so does a pickled copy (what Spark ships back to the driver)
    assert pickle.loads(pickle.dumps(msgs[0])).new_files[0].first_row_id == 7
    f.first_row_id = None
    assert msgs[0].new_files[0].first_row_id is None


def test_first_row_id_set_reaches_the_commit(table):
    commit(table, prepared(table, [1, 2]))
    msgs = prepared(table, [3, 4])
    # row ids 0-1 exist: a file naming them would hold the same rows again, which only a
    # data-evolution table merges (Java commits it; its reads then show the ids twice)
    msgs[0].new_files[0].first_row_id = 0
    with pytest.raises(InvalidArgumentError, match="data-evolution"):
        commit(table, msgs)
    # left as the writer made it, the commit gives the file the next free row ids
    msgs = prepared(table, [3, 4])
    commit(table, msgs)
    firsts = sorted(f.first_row_id for s in table.new_read_builder().new_scan().plan().splits()
                    for f in s.files)
    assert firsts == [0, 2]


def test_a_split_file_is_a_copy(table):
    commit(table, prepared(table, [1, 2]))
    split = table.new_read_builder().new_scan().plan().splits()[0]
    f = split.files[0]
    f.first_row_id = 5
    assert f.first_row_id == 5
    assert split.files[0].first_row_id == 0
    assert table.new_read_builder().new_scan().plan().splits()[0].files[0].first_row_id == 0


def test_caller_row_ids_past_next_row_id_are_refused_without_data_evolution(table):
    """From ``nextRowId`` on the table's counter does not move for a caller's file, so the next
    append would be numbered over its ids: two appends under one ``_ROW_ID`` (review33b F3)."""
    msgs = prepared(table, [1, 2])
    msgs[0].new_files[0].first_row_id = 0  # the table is empty: nextRowId is 0
    with pytest.raises(InvalidArgumentError, match="data-evolution"):
        commit(table, msgs)
    commit(table, prepared(table, [1, 2]))
    commit(table, prepared(table, [3, 4]))
    rb = table.new_read_builder().with_projection(["_ROW_ID", "id"])
    got = rb.new_read().to_arrow(rb.new_scan().plan().splits()).to_pylist()
    assert sorted((r["_ROW_ID"], r["id"]) for r in got) == [(0, 1), (1, 2), (2, 3), (3, 4)]
