"""Property test: random histories of writes, compactions, tags, rollbacks and expiries on a
primary-key table against a model of every snapshot's rows. After each operation every retained
snapshot and every tag reads exactly its model rows (so no file a snapshot or tag references was
deleted), and nothing unreferenced is left behind by expiry, rollback or tag deletion."""

from __future__ import annotations

import os
import tempfile
import time

import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paimon_rs import CatalogFactory, Schema

from table_writes import write_rows

SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.string())])

op_st = st.one_of(
    st.tuples(st.just("write"), st.dictionaries(st.integers(0, 12), st.sampled_from(["a", "b", "c"]),
                                                min_size=1, max_size=6)),
    st.tuples(st.just("compact"), st.booleans()),
    st.tuples(st.just("tag"), st.integers(0, 50)),
    st.tuples(st.just("delete_tag"), st.integers(0, 50)),
    st.tuples(st.just("rollback"), st.integers(0, 50)),
    st.tuples(st.just("expire"), st.tuples(st.integers(1, 3), st.integers(1, 4))),
)


def ids(table) -> list:
    d = os.path.join(table.table_path, "snapshot")
    if not os.path.isdir(d):
        return []
    return sorted(int(f.split("-")[1]) for f in os.listdir(d) if f.startswith("snapshot-"))


def rows(table, options=None) -> dict:
    t = table.copy(options) if options else table
    rb = t.new_read_builder()
    d = rb.new_read().to_arrow(rb.new_scan().plan().splits()).to_pydict()
    return dict(zip(d["k"], d["v"]))


@settings(max_examples=int(os.environ.get("PAIMON_RS_OPS_EXAMPLES", "25")), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(ops=st.lists(op_st, min_size=1, max_size=14))
def test_operations_match_model(ops):
    with tempfile.TemporaryDirectory() as wh:
        cat = CatalogFactory.create({"warehouse": wh})
        cat.create_database("db", True)
        cat.create_table("db.t", Schema.from_pyarrow_schema(SCHEMA, primary_keys=["k"], options={"bucket": "2"}),
                         False)
        t = cat.get_table("db.t")
        model: dict = {}   # snapshot id -> rows
        tags: dict = {}    # name -> rows
        tag_ids: dict = {}  # name -> snapshot id
        n = 0

        def record(before, state):
            for i in range((before or 0) + 1, (t.latest_snapshot_id() or 0) + 1):
                model[i] = dict(state)

        for op, arg in ops:
            latest = t.latest_snapshot_id()
            state = dict(model.get(latest, {})) if latest else {}
            cleans = False
            if op == "write":
                write_rows(t, arg, SCHEMA)
                state.update(arg)
                record(latest, state)
            elif op == "compact" and latest:
                t.compact(full=arg)
                record(latest, state)
            elif op == "tag" and latest:
                live = ids(t)
                sid = live[arg % len(live)]
                name = f"tag{n}"
                n += 1
                t.create_tag(name, snapshot_id=sid)
                tags[name], tag_ids[name] = dict(model[sid]), sid
            elif op == "delete_tag" and tags:
                name = sorted(tags)[arg % len(tags)]
                assert t.delete_tag(name)
                del tags[name], tag_ids[name]
                cleans = True
            elif op == "rollback" and latest:
                live = ids(t)
                targets = live + sorted(tags)
                target = targets[arg % len(targets)]
                t.rollback_to(target)
                r = target if isinstance(target, int) else tag_ids[target]
                for i in [i for i in model if i > r]:
                    del model[i]
                for name in [x for x, i in tag_ids.items() if i > r]:
                    del tags[name], tag_ids[name]
                assert t.latest_snapshot_id() == r
                cleans = True
            elif op == "expire" and latest:
                retain_min, retain_max = arg
                live_before = len(ids(t))
                t.expire_snapshots(retain_min=retain_min, retain_max=max(retain_min, retain_max), older_than=0)
                assert len(ids(t)) == min(retain_min, live_before)
                cleans = True
            # every retained snapshot and every tag reads its model rows
            for sid in ids(t):
                assert rows(t, {"scan.snapshot-id": str(sid)}) == model[sid], ("snapshot", sid, op)
            for name, expected in tags.items():
                assert rows(t, {"scan.tag-name": name}) == expected, ("tag", name, op)
            assert sorted(t.list_tags()) == sorted(tags)
            if cleans:
                left = t.remove_orphan_files(older_than=int(time.time() * 1000) + 0, dry_run=True).files
                assert left == [], (op, left)
