"""A hypothesis RuleBasedStateMachine against a dict model: writes (row kinds +I / +U / -U / -D
through ``rowkind.field``, as in tests/property), commits, aborts, reopens, static-partition
overwrites, reads; with the fixes of the other branches also retries of committed messages
(refused, table unchanged), dynamic partition overwrites and time-travel reads of every earlier
snapshot.

CI: 25 examples of up to 20 steps per machine. Long (``-m long``):
``PAIMON_RS_RELIABILITY_SM_EXAMPLES`` (default 400) examples of up to 40 steps.
"""

from __future__ import annotations

import shutil
import tempfile
from typing import Any, Dict, List, Optional, Tuple

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule, run_state_machine_as_test

from paimon_rs import CatalogFactory, DuplicateCommitError, Schema

from rel_helpers import env_int, figure

SCHEMA = pa.schema([("p", pa.string()), ("k", pa.int64()), ("v", pa.int64()), ("op", pa.string())])
Key = Tuple[str, int]
row_st = st.tuples(st.sampled_from(["a", "b"]), st.integers(0, 12), st.integers(-50, 50),
                   st.sampled_from(["+I", "+I", "+U", "-U", "-D"]))
COUNTS: Dict[str, int] = {}


def apply(model: Dict[Key, Any], rows: List[Tuple[str, int, int, str]]) -> None:
    for p, k, v, op in rows:
        if op in ("+I", "+U"):
            model[(p, k)] = (v, op)
        else:
            model.pop((p, k), None)


def to_arrow(rows: List[Tuple[str, int, int, str]]) -> pa.Table:
    return pa.Table.from_pylist([dict(zip(SCHEMA.names, r)) for r in rows], schema=SCHEMA)


def read_model(table: Any) -> Dict[Key, Any]:
    rb = table.new_read_builder()
    got = rb.new_read().to_arrow(rb.new_scan().plan().splits()).to_pylist()
    out = {(r["p"], r["k"]): (r["v"], r["op"]) for r in got}
    assert len(out) == len(got), "a key was read twice"
    return out


class TableMachine(RuleBasedStateMachine):
    RETRY = False  # retry committed messages (refused), abort them (nothing lost)
    DYNAMIC_OVERWRITE = False  # overwrite() replaces the partitions present in the data
    TIME_TRAVEL = False

    def __init__(self) -> None:
        super().__init__()
        self.dir = tempfile.mkdtemp(prefix="paimon_rs_sm_")
        self.catalog = CatalogFactory.create({"warehouse": self.dir})
        self.catalog.create_database("db", True)
        self.catalog.create_table("db.t", Schema.from_pyarrow_schema(
            SCHEMA, partition_keys=["p"], primary_keys=["p", "k"],
            options={"bucket": "2", "rowkind.field": "op"}), False)
        self.table = self.catalog.get_table("db.t")
        self.model: Dict[Key, Any] = {}
        self.history: Dict[int, Dict[Key, Any]] = {}
        self.writer: Any = None
        self.builder: Any = None
        self.pending: List[Tuple[str, int, int, str]] = []
        self.last_committed: Optional[Any] = None

    def teardown(self) -> None:
        if self.writer is not None:
            self.writer.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def count(self, what: str) -> None:
        COUNTS[what] = COUNTS.get(what, 0) + 1

    @rule(rows=st.lists(row_st, min_size=1, max_size=20))
    def write(self, rows: List[Tuple[str, int, int, str]]) -> None:
        if self.writer is None:
            self.builder = self.table.new_batch_write_builder()
            self.writer = self.builder.new_write()
        self.writer.write_arrow(to_arrow(rows))
        self.pending += rows
        self.count("write")

    def _prepare(self) -> Any:
        if self.writer is None:
            self.builder = self.table.new_batch_write_builder()
            self.writer = self.builder.new_write()
        msgs = self.writer.prepare_commit()
        self.writer.close()
        self.writer = None
        return msgs

    @rule()
    def commit(self) -> None:
        msgs = self._prepare()
        sid = self.builder.new_commit().commit(msgs)
        apply(self.model, self.pending)
        self.pending = []
        if sid is not None:
            self.history[sid] = dict(self.model)
            self.last_committed = msgs
        self.count("commit")

    @rule()
    def abort(self) -> None:
        msgs = self._prepare()
        self.builder.new_commit().abort(msgs)
        self.pending = []
        self.count("abort")

    @precondition(lambda self: self.RETRY and self.last_committed is not None)
    @rule(new_builder=st.booleans())
    def retry_committed(self, new_builder: bool) -> None:
        """The last committed messages again: refused, nothing changes; their abort deletes
        nothing the table references."""
        builder = self.table.new_batch_write_builder() if new_builder else self.builder
        try:
            builder.new_commit().commit(self.last_committed)
        except DuplicateCommitError:
            pass
        else:
            raise AssertionError("committed messages were accepted a second time")
        builder.new_commit().abort(self.last_committed)
        self.count("retry")

    @precondition(lambda self: not self.pending and self.writer is None)
    @rule()
    def reopen(self) -> None:
        self.catalog = CatalogFactory.create({"warehouse": self.dir})
        self.table = self.catalog.get_table("db.t")
        self.count("reopen")

    @precondition(lambda self: not self.pending and self.writer is None)
    @rule(p=st.sampled_from(["a", "b"]), rows=st.lists(row_st, max_size=10))
    def overwrite(self, p: str, rows: List[Tuple[str, int, int, str]]) -> None:
        rows = [(p, k, v, op) for _, k, v, op in rows]
        wb = self.table.new_batch_write_builder().overwrite({"p": p})
        w, c = wb.new_write(), wb.new_commit()
        if rows:
            w.write_arrow(to_arrow(rows))
        sid = c.commit(w.prepare_commit())
        w.close()
        for key in [key for key in self.model if key[0] == p]:
            del self.model[key]
        apply(self.model, rows)
        if sid is not None:
            self.history[sid] = dict(self.model)
        self.count("overwrite")

    @precondition(lambda self: self.DYNAMIC_OVERWRITE and not self.pending and self.writer is None)
    @rule(rows=st.lists(row_st, max_size=10))
    def overwrite_dynamic(self, rows: List[Tuple[str, int, int, str]]) -> None:
        """``overwrite()`` without a partition: Paimon's dynamic partition overwrite replaces
        only the partitions the data has rows in (item 5)."""
        wb = self.table.new_batch_write_builder().overwrite()
        w, c = wb.new_write(), wb.new_commit()
        if rows:
            w.write_arrow(to_arrow(rows))
        sid = c.commit(w.prepare_commit())
        w.close()
        touched = {p for p, _k, _v, _op in rows}
        for key in [key for key in self.model if key[0] in touched]:
            del self.model[key]
        apply(self.model, rows)
        if sid is not None:
            self.history[sid] = dict(self.model)
        self.count("dynamic overwrite")

    @precondition(lambda self: self.TIME_TRAVEL and self.history)
    @rule(data=st.data())
    def time_travel(self, data: Any) -> None:
        sid = data.draw(st.sampled_from(sorted(self.history)))
        assert read_model(self.table.copy({"scan.snapshot-id": str(sid)})) == self.history[sid], f"snapshot {sid}"
        self.count("time travel")

    @invariant()
    def reads_the_model(self) -> None:
        assert read_model(self.table) == self.model


class RetryMachine(TableMachine):
    RETRY = True
    DYNAMIC_OVERWRITE = True


class TimeTravelMachine(TableMachine):
    TIME_TRAVEL = True


def run(machine: Any, examples: int, steps: int) -> Dict[str, Any]:
    COUNTS.clear()
    run_state_machine_as_test(machine, settings=settings(
        max_examples=examples, stateful_step_count=steps, deadline=None,
        # no shrinking: a failure is reported as found (shrinking a table history takes minutes)
        phases=[Phase.explicit, Phase.reuse, Phase.generate],
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much]))
    return {"examples": examples, **dict(sorted(COUNTS.items())), "failures": 0}


def test_state_machine():
    figure("state machine", **run(TableMachine, 25, 20))


def test_state_machine_retry():
    figure("state machine + retry", **run(RetryMachine, 25, 20))


def test_state_machine_time_travel():
    figure("state machine + time travel", **run(TimeTravelMachine, 25, 20))


@pytest.mark.long
def test_state_machine_long():
    figure("state machine (long)", **run(TableMachine, env_int("PAIMON_RS_RELIABILITY_SM_EXAMPLES", 400), 40))


@pytest.mark.long
def test_state_machine_all_long():
    class All(TableMachine):
        RETRY = True
        DYNAMIC_OVERWRITE = True
        TIME_TRAVEL = True

    figure("state machine + retry + time travel (long)",
           **run(All, env_int("PAIMON_RS_RELIABILITY_SM_EXAMPLES", 400), 40))
