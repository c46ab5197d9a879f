"""Commit callbacks with pypaimon's names (``add_commit_callback``), issue 29."""

from __future__ import annotations

import pyarrow as pa
import pytest

from paimon_rs import CommitCallback, CommitCallbackContext, Schema
from paimon_rs.commit_callback import ADD, DELETE

SCHEMA = pa.schema([("id", pa.int32()), ("name", pa.string()), ("dt", pa.string())])


class Recording(CommitCallback):
    def __init__(self):
        self.contexts = []
        self.closed = False

    def call(self, context: CommitCallbackContext) -> None:
        self.contexts.append(context)

    def close(self) -> None:
        self.closed = True


def _table(catalog, name, **kw):
    catalog.create_table(f"db.{name}", Schema.from_pyarrow_schema(SCHEMA, **kw), False)
    return catalog.get_table(f"db.{name}")


def _commit(table, data, cbs=(), overwrite=False):
    wb = table.new_batch_write_builder()
    if overwrite:
        wb = wb.overwrite()
    w = wb.new_write()
    c = wb.new_commit()
    for cb in cbs:
        c.add_commit_callback(cb)
    w.write_arrow(pa.Table.from_pydict(data, schema=SCHEMA))
    try:
        return c.commit(w.prepare_commit())
    finally:
        w.close()
        c.close()


def test_callback_gets_snapshot_and_entries(catalog):
    t = _table(catalog, "cb", partition_keys=["dt"])
    cb1, cb2 = Recording(), Recording()
    sid = _commit(t, {"id": [1, 2, 3], "name": ["a", "b", "c"], "dt": ["p1", "p1", "p2"]}, [cb1, cb2])
    assert cb1.closed and cb2.closed
    assert len(cb1.contexts) == 1 and cb2.contexts[0].snapshot.id == sid == 1
    ctx = cb1.contexts[0]
    assert ctx.snapshot.commit_kind == "APPEND" and ctx.snapshot.delta_record_count == 3
    assert ctx.identifier == 2**63 - 1
    assert {e.kind for e in ctx.commit_entries} == {ADD}
    by_part = {e.partition["dt"]: e.file.row_count for e in ctx.commit_entries}
    assert by_part == {"p1": 2, "p2": 1}
    for e in ctx.commit_entries:
        assert e.file.file_name.startswith("data-") and e.bucket == 0
        assert t.file_io.exists(e.file.file_path)
        assert e.file.file_path.endswith(f"dt={e.partition['dt']}/bucket-0/{e.file.file_name}")


def test_overwrite_entries_delete_the_old_files(catalog):
    t = _table(catalog, "cbo")
    _commit(t, {"id": [1], "name": ["a"], "dt": ["p"]})
    cb = Recording()
    _commit(t, {"id": [2], "name": ["b"], "dt": ["p"]}, [cb], overwrite=True)
    ctx = cb.contexts[0]
    assert ctx.snapshot.commit_kind == "OVERWRITE"
    kinds = sorted(e.kind for e in ctx.commit_entries)
    assert kinds == [ADD, DELETE]


def test_no_call_without_a_commit_and_errors_after_the_commit(catalog):
    t = _table(catalog, "cbe")
    cb = Recording()
    wb = t.new_batch_write_builder()
    w, c = wb.new_write(), wb.new_commit()
    c.add_commit_callback(cb)
    assert c.commit(w.prepare_commit()) is None
    assert cb.contexts == []

    err = RuntimeError("callback failed")

    class Failing(CommitCallback):
        def call(self, context):
            raise err

    wb = t.new_batch_write_builder()
    w, c = wb.new_write(), wb.new_commit()
    c.add_commit_callback(Failing())
    w.write_arrow(pa.Table.from_pydict({"id": [1], "name": ["x"], "dt": ["p"]}, schema=SCHEMA))
    with pytest.raises(RuntimeError) as e:
        c.commit(w.prepare_commit())
    assert e.value is err
    assert t.snapshot_manager().get_latest_snapshot().id == 1  # committed all the same
    rb = t.new_read_builder()
    assert rb.new_read().to_arrow(rb.new_scan().plan().splits()).num_rows == 1

