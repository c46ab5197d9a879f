"""Random histories through both engines: each commit made by Java Paimon or paimon_rs at random.

Hypothesis draws a table kind (every merge engine paimon_rs supports, with its options:
``sequence.field``, ``ignore-delete``, row kinds from ``rowkind.field``, several partitions and
buckets, Java's automatic compactions) and a history of steps: commits of upserts and
retractions (``+I`` / ``+U`` / ``-U`` / ``-D``) written by Java or by paimon_rs, static-partition
or whole-table overwrites by either engine, Java compactions (full or not, of every bucket or of
one), tags created by Java. After every step both engines read the table, at its latest snapshot
and at every tag created so far, and each read must equal a dict model of the rows (hence also
each other).

The model keeps every record of a key in arrival order and folds them with the merge engine's
rule. The histories stay where that fold is exact whatever the engines merged before (at a
write-buffer flush, in a compaction, at read): retractions only on keys that hold a row for
aggregation (sum; ``max`` and ``last_non_null_value`` with ``ignore-retract``), none with a
``sequence.field`` (a full compaction drops a winning ``-D``, after which an older-sequenced
insert shows: Paimon's documented behaviour, not a fold), none for partial-update unless
``ignore-delete`` is set (Java 1.0 refuses them).

``test_random_histories`` (default suite): one derandomized history of up to 5 steps per table
kind. ``test_random_histories_long`` (marker ``long``): ``PAIMON_RS_JAVA_HISTORIES`` random
histories (default 10) of up to 14 steps per table kind; see tests/compat/README.md.
"""

from __future__ import annotations

import itertools
import os
import random
from dataclasses import dataclass, field
from typing import Any, Optional

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.strategies import DataObject
from test_java_interop import DB, check, java_create, ours_create

from paimon_rs import CatalogFactory, UnsupportedError

import java_values as jv
from java_env import JavaPaimon

pytestmark = pytest.mark.java

DT = ["2026-11-01", "2026-11-02", "2026-11-03"]
F_DT = ("dt", "STRING", pa.string())
F_ID = ("id", "INT", pa.int32())
F_TS = ("ts", "INT", pa.int32())
F_V = ("v", "BIGINT", pa.int64())
F_S = ("s", "STRING", pa.string())
F_OP = ("op", "STRING", pa.string())
INSERTS = ("+I", "+U")


@dataclass
class HKind:
    name: str
    engine: str              # deduplicate | partial-update | aggregation | first-row
    partitioned: bool
    options: dict
    retract: bool = False    # commits carry -U / -D rows (rowkind.field = op)
    seq: bool = False        # sequence.field = ts
    ignore_delete: bool = False
    ours_writes: bool = True  # False: paimon_rs refuses to write it; every commit is Java's

    @property
    def fields(self) -> list:
        return ([F_DT] if self.partitioned else []) + [F_ID, F_TS, F_V, F_S, F_OP]

    @property
    def names(self) -> list:
        return [f[0] for f in self.fields]

    @property
    def pk(self) -> list:
        return ["dt", "id"] if self.partitioned else ["id"]

    @property
    def part(self) -> list:
        return ["dt"] if self.partitioned else []

    @property
    def table_options(self) -> dict:
        o = dict(self.options)
        if self.retract or self.ignore_delete:
            o["rowkind.field"] = "op"
        if self.seq:
            o["sequence.field"] = "ts"
        if self.ignore_delete:
            o["ignore-delete"] = "true"
        if self.engine != "deduplicate":
            o["merge-engine"] = self.engine
        return o


_AGG = {"fields.v.aggregate-function": "sum", "fields.ts.aggregate-function": "max",
        "fields.ts.ignore-retract": "true", "fields.s.ignore-retract": "true", "fields.op.ignore-retract": "true"}

HKINDS = {k.name: k for k in [
    HKind("dedup_part", "deduplicate", True, {"bucket": "2"}, retract=True),
    HKind("dedup_seq", "deduplicate", False, {"bucket": "3"}, seq=True),
    HKind("dedup_ignore_delete", "deduplicate", True, {"bucket": "2"}, ignore_delete=True),
    # Java compacts on its own while it writes (sorted-run trigger 2, full every 2nd commit)
    HKind("dedup_auto_compact", "deduplicate", True,
          {"bucket": "2", "num-sorted-run.compaction-trigger": "2", "full-compaction.delta-commits": "2"},
          retract=True),
    HKind("partial_part", "partial-update", True, {"bucket": "2"}),
    HKind("partial_seq", "partial-update", False, {"bucket": "2"}, seq=True),
    HKind("partial_ignore_delete", "partial-update", False, {"bucket": "3"}, ignore_delete=True),
    HKind("agg_part", "aggregation", True, {"bucket": "2", **_AGG}, retract=True),
    HKind("agg_seq", "aggregation", False, {"bucket": "1", "fields.v.aggregate-function": "sum",
                                            "fields.s.aggregate-function": "last_value"}, seq=True),
    HKind("first_row", "first-row", True, {"bucket": "2"}),
]}


# --------------------------------------------------------------------------- the model


@dataclass
class Model:
    kind: HKind
    records: dict = field(default_factory=dict)   # key -> [(row kind, row)] in arrival order

    def copy(self) -> Model:
        return Model(self.kind, {k: list(v) for k, v in self.records.items()})

    def key(self, row: list) -> tuple:
        return tuple(row[self.kind.names.index(k)] for k in self.kind.pk)

    def apply(self, rows: list, kinds: list) -> None:
        for row, rk in zip(rows, kinds):
            if self.kind.ignore_delete and rk not in INSERTS:
                continue
            self.records.setdefault(self.key(row), []).append((rk, row))

    def overwrite(self, partition: Optional[str], rows: list) -> None:
        """INSERT OVERWRITE of one partition (``None``: the whole table) with ``rows``."""
        for key in [k for k in self.records if partition is None or k[0] == partition]:
            del self.records[key]
        self.apply(rows, ["+I"] * len(rows))

    def live_keys(self) -> list:
        return [k for k in self.records if self._fold(k) is not None]

    def expected(self) -> list:
        return [r for r in (self._fold(k) for k in self.records) if r is not None]

    def _fold(self, key: tuple) -> Optional[list]:
        k, recs = self.kind, self.records[key]
        ts = k.names.index("ts")
        if k.seq:  # stable: equal sequence fields keep arrival (sequence number) order
            recs = sorted(recs, key=lambda r: r[1][ts])
        if k.engine == "deduplicate":
            rk, row = recs[-1]
            return row if rk in INSERTS else None
        if k.engine == "first-row":
            return next((row for rk, row in recs if rk in INSERTS), None)
        acc: list = [None] * len(k.names)
        for rk, row in recs:
            for i, name in enumerate(k.names):
                new = row[i]
                if name in k.pk:
                    acc[i] = new
                elif k.engine == "partial-update":
                    acc[i] = new if new is not None else acc[i]
                elif name == "v" and k.options.get("fields.v.aggregate-function") == "sum":
                    if new is not None:
                        d = new if rk in INSERTS else -new
                        acc[i] = d if acc[i] is None else acc[i] + d
                elif rk not in INSERTS:
                    pass  # ignore-retract
                elif k.options.get(f"fields.{name}.aggregate-function") == "max":
                    acc[i] = new if acc[i] is None else acc[i] if new is None else max(acc[i], new)
                elif k.options.get(f"fields.{name}.aggregate-function") == "last_value":
                    acc[i] = new
                else:  # last_non_null_value
                    acc[i] = new if new is not None else acc[i]
        return acc


# --------------------------------------------------------------------------- both engines


class Tables:
    """One table of a history, in a warehouse both engines share."""

    def __init__(self, java: JavaPaimon, wh, name: str, kind: HKind):
        self.java, self.wh, self.name, self.kind = java, str(wh), name, kind
        self.full = f"{DB}.{name}"

    def jcall(self, cmd: str, **kw: Any) -> Any:
        return self.java.call(cmd, warehouse=self.wh, table=self.full, **kw)

    def write(self, engine: str, rows: list, kinds: list, overwrite: Optional[dict] = None) -> None:
        if engine == "java":
            commit: dict = {"rows": rows, "kinds": kinds}
            if overwrite is None:
                self.jcall("write", commits=[commit])
                return
            # INSERT OVERWRITE of a static partition, as Flink SQL runs it: Java's core API
            # applies dynamic-partition-overwrite (default true) to a static partition too, so
            # an empty overwrite would leave the partition as it is; Flink turns it off when
            # the statement names a partition (paimon_rs's static overwrite does the same)
            commit["overwrite"] = overwrite
            self.jcall("write", commits=[commit], options={"dynamic-partition-overwrite": "false"})
            return
        k = self.kind
        t = CatalogFactory.create({"warehouse": self.wh}).get_table(self.full)
        wb = t.new_batch_write_builder()
        if overwrite is not None:
            wb = wb.overwrite(overwrite)
        w, c = wb.new_write(), wb.new_commit()
        try:
            if rows:
                w.write_arrow(jv.to_arrow(rows, k.names, [f[2] for f in k.fields]))
            c.commit(w.prepare_commit())
        finally:
            w.close()
            c.close()

    def read_ours(self, tag: Optional[str] = None) -> list:
        t = CatalogFactory.create({"warehouse": self.wh}).get_table(self.full)
        if tag is not None:
            t = t.copy({"scan.tag-name": tag})
        rb = t.new_read_builder()
        return jv.from_arrow(rb.new_read().to_arrow(rb.new_scan().plan().splits()))

    def read_java(self, tag: Optional[str] = None) -> list:
        return self.jcall("read", tag=tag)["rows"]


class Draw:
    """The choices of a history: from hypothesis (``data``: shrinkable) or from a seeded
    ``random.Random`` (the default suite's fixed histories)."""

    def __init__(self, data: Optional[DataObject] = None, rng: Optional[random.Random] = None):
        self.data, self.rng = data, rng

    def integer(self, lo: int, hi: int, label: str = "") -> int:
        if self.data is not None:
            return self.data.draw(st.integers(lo, hi), label=label or None)
        assert self.rng is not None
        return self.rng.randint(lo, hi)

    def choice(self, seq: list, label: str = "") -> Any:
        return seq[self.integer(0, len(seq) - 1, label)]

    def maybe(self, value: Any, null_one_in: int = 5) -> Any:
        return None if self.integer(0, null_one_in - 1) == 0 else value


def _row(d: Draw, kind: HKind, key: Optional[tuple] = None, dt: Optional[str] = None, ts0: int = 0) -> list:
    """A row (canonical values, op ``+I``) on a small key space, so commits update each other;
    ``ts`` in ``ts0 + [0, 5]``."""
    part, i = d.choice(DT), d.integer(0, 11)
    if key is not None:
        part, i = key if kind.partitioned else (part, key[0])
    row = [i, ts0 + d.integer(0, 5), d.maybe(d.integer(-100, 100)),
           d.maybe(d.choice(["a", "b", "héllo", "", "中文"])), "+I"]
    return [dt or part, *row] if kind.partitioned else row


def _ts0(kind: HKind, commit_no: int) -> int:
    """partial-update folds non-null values in sequence.field order, but a merge of some of a
    key's records (flush, compaction) carries the largest ``ts`` of them with the last non-null
    values, so a later merge with a record of a ``ts`` in between differs from the fold (Paimon's
    behaviour): each commit of ``partial_seq`` draws ``ts`` from a band of its own."""
    return 10 * commit_no if kind.engine == "partial-update" and kind.seq else 0


def _commit_rows(d: Draw, kind: HKind, model: Model, n_max: int, ts0: int = 0) -> tuple[list, list]:
    rows, kinds = [], []
    live = model.live_keys() if kind.engine == "aggregation" else list(model.records)
    for _ in range(d.integer(1, n_max, "rows")):
        rk = "+I"
        if (kind.retract or kind.ignore_delete) and d.integer(0, 3) == 0:
            rk = d.choice(["-D", "-U", "+U"])
        if rk in INSERTS or (kind.engine == "aggregation" and not live):
            rk = rk if rk in INSERTS else "+I"
            row = _row(d, kind, ts0=ts0)
        elif kind.engine == "aggregation" or (live and d.integer(0, 1)):
            row = _row(d, kind, key=d.choice(live), ts0=ts0)
        else:  # a retraction of a key that may hold no row
            row = _row(d, kind, ts0=ts0)
        row[-1] = rk
        rows.append(row)
        kinds.append(rk)
    return rows, kinds


def run_history(java: JavaPaimon, wh, name: str, kind: HKind, d: Draw, steps: int, n_max: int) -> dict:
    """Draws and runs a history of ``steps`` steps on a ``kind`` table; returns what it did
    (step name -> count)."""
    tbl = Tables(java, wh, name, kind)
    engines = ["java", "ours"] if kind.ours_writes else ["java"]
    creator = d.choice(engines, "created by")
    if creator == "java":
        java_create(java, wh, name, kind.fields, kind.pk, kind.part, kind.table_options)
    else:
        ours_create(wh, name, kind.fields, kind.pk, kind.part, kind.table_options)
    model, tags, done = Model(kind), {}, {"created by " + creator: 1, "histories": 1}
    ops = ["write"] * 4 + ["overwrite", "compact", "tag"]
    commits = 0
    ptypes = [f[1] for f in kind.fields]
    for _ in range(steps):
        step = d.choice(ops, "step")
        if step == "tag" and not commits:
            step = "write"  # Java tags the latest snapshot: there must be one
        if step in ("write", "overwrite"):
            commits += 1
        if step == "write":
            engine = d.choice(engines, "writer")
            rows, kinds = _commit_rows(d, kind, model, n_max, _ts0(kind, commits))
            tbl.write(engine, rows, kinds)
            model.apply(rows, kinds)
        elif step == "overwrite":
            engine = d.choice(engines, "writer")
            dt = d.choice(DT) if kind.partitioned else None
            rows = [_row(d, kind, dt=dt, ts0=_ts0(kind, commits)) for _ in range(d.integer(0, n_max))]
            tbl.write(engine, rows, ["+I"] * len(rows), overwrite={"dt": dt} if dt else {})
            model.overwrite(dt, rows)
        elif step == "compact":
            engine = "java"
            full = bool(d.integer(0, 1, "full"))
            if d.integer(0, 1, "one bucket"):
                part = [d.choice(DT)] if kind.partitioned else []
                tbl.jcall("compact", partition=part, bucket=d.integer(0, int(kind.options["bucket"]) - 1), full=full)
            else:
                tbl.jcall("compact", full=full)
        else:
            engine = "java"
            tag = f"tag{len(tags)}"
            tbl.jcall("create_tag", name=tag)
            tags[tag] = model.copy()
        what = f"{step} by {engine}"
        done[what] = done.get(what, 0) + 1
        java_rows = tbl.read_java()
        check(java_rows, model.expected(), ptypes, f"Java reads after {what} ({kind.name})")
        check(tbl.read_ours(), java_rows, ptypes, f"paimon_rs reads after {what} ({kind.name})")
        for tag, m in tags.items():
            check(tbl.read_java(tag), m.expected(), ptypes, f"Java reads tag {tag} ({kind.name})")
            check(tbl.read_ours(tag), m.expected(), ptypes, f"paimon_rs reads tag {tag} ({kind.name})")
    if not kind.ours_writes:
        with pytest.raises(UnsupportedError):
            tbl.write("ours", *_commit_rows(d, kind, model, 2))
    return done


def _add(totals: dict, done: dict) -> None:
    for k, v in done.items():
        totals[k] = totals.get(k, 0) + v


def _report(kind: HKind, totals: dict) -> None:
    print(f"\njava histories {kind.name}:", ", ".join(f"{k}: {v}" for k, v in sorted(totals.items())))


@pytest.mark.parametrize("kind_name", sorted(HKINDS))
def test_random_histories(java, tmp_path, kind_name):
    """Fixed (seeded) histories of 6 steps per table kind (default suite)."""
    kind, totals = HKINDS[kind_name], {}
    for i in range(int(os.environ.get("PAIMON_RS_JAVA_HISTORIES_CI", "1"))):
        _add(totals, run_history(java, tmp_path, f"h{i}", kind, Draw(rng=random.Random(f"{kind_name}-{i}")),
                                 steps=6, n_max=12))
    _report(kind, totals)


@pytest.mark.long
@pytest.mark.parametrize("kind_name", sorted(HKINDS))
def test_random_histories_long(java, tmp_path, kind_name):
    """``PAIMON_RS_JAVA_HISTORIES`` random histories (default 10) of 2 to 14 steps per table kind,
    drawn (and shrunk on failure) by hypothesis."""
    kind, totals, counter = HKINDS[kind_name], {}, itertools.count()

    @settings(max_examples=int(os.environ.get("PAIMON_RS_JAVA_HISTORIES", "10")), deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(data=st.data())
    def history(data: DataObject) -> None:
        d = Draw(data=data)
        _add(totals, run_history(java, tmp_path, f"h{next(counter)}", kind, d, d.integer(2, 14, "steps"), 30))

    history()
    _report(kind, totals)


@pytest.mark.java09
@pytest.mark.parametrize("kind_name", ["agg_part", "dedup_part", "dedup_seq", "first_row", "partial_part"])
def test_random_histories_java09(java09, tmp_path, kind_name):
    """A fixed history per main table kind with Java Paimon 0.9.0 as the other engine."""
    kind, totals = HKINDS[kind_name], {}
    _add(totals, run_history(java09, tmp_path, "h09", kind, Draw(rng=random.Random(f"0.9-{kind_name}")),
                             steps=6, n_max=12))
    _report(kind, totals)
