"""Merge engines through the Python API: every worked example of paimon-behaviour.md §8.

Each example is run twice: one commit per record (merged by the sort-merge reader across level-0
files) and all records in one commit (merged by the write-buffer flush). Both must agree.
"""

from __future__ import annotations

import pyarrow as pa
import pytest

import paimon_rs
from paimon_rs import Schema

from unit_helpers import read, write

# every test runs on local disk and on S3 (tests/stores.py); on S3 only under -m long but for the
# tests marked stores below (one per merge engine), to keep CI short: moto costs ~0.5 s of CPU per test
pytestmark = pytest.mark.stores("local", "s3-long")

N = None


def make(catalog, name, fields, options, pk=("k",)):
    schema = Schema.from_pyarrow_schema(
        pa.schema(fields), primary_keys=list(pk), options={"bucket": "1", **options})
    catalog.create_table(f"db.{name}", schema, False)
    return catalog.get_table(f"db.{name}")


def batch(fields, rows, kinds=None):
    names = [f[0] for f in fields]
    cols = {n: [r[i] for r in rows] for i, n in enumerate(names)}
    if kinds is not None:
        cols["op"] = kinds
        fields = [*fields, ("op", pa.string())]
    return pa.table(cols, schema=pa.schema(fields))


def run(catalog, name, fields, options, rows, kinds=None, split_commits=True):
    """Write `rows` (one commit each, or one commit) and return the sorted read result."""
    opts = dict(options)
    tfields = list(fields)
    if kinds is not None:
        opts["rowkind.field"] = "op"
        tfields = [*fields, ("op", pa.string())]
    t = make(catalog, name, tfields, opts)
    if split_commits:
        for i, r in enumerate(rows):
            write(t, batch(fields, [r], None if kinds is None else [kinds[i]]))
    else:
        write(t, batch(fields, rows, kinds))
    out = read(t).to_pylist()
    names = [f[0] for f in fields]
    return sorted(tuple(r[n] for n in names) for r in out)


def both(catalog, name, fields, options, rows, kinds=None):
    a = run(catalog, name + "_a", fields, options, rows, kinds, True)
    b = run(catalog, name + "_b", fields, options, rows, kinds, False)
    assert a == b, (a, b)
    return a


I64 = pa.int64()


def f(*names, t=I64):
    return [(n, t) for n in names]


@pytest.mark.stores
def test_partial_update_basic(catalog):
    fields = [("k", I64), ("a", pa.float64()), ("b", I64), ("c", pa.string())]
    got = both(catalog, "pu", fields, {"merge-engine": "partial-update"},
               [(1, 23.0, 10, N), (1, N, N, "book"), (1, 25.2, N, N)])
    assert got == [(1, 25.2, 10, "book")]


def test_partial_update_rejects_delete_but_lone_delete_is_fine(catalog):
    fields = f("k", "a")
    # a lone -D never reaches the merge function: invisible, no error
    assert run(catalog, "pud1", fields, {"merge-engine": "partial-update"}, [(1, 1)], ["-D"]) == []
    with pytest.raises(paimon_rs.PaimonRsError, match="Partial update can not accept delete records"):
        run(catalog, "pud2", fields, {"merge-engine": "partial-update"}, [(1, 1), (1, 1)],
            ["+I", "-D"])
    # ignore-delete drops it at write
    assert run(catalog, "pud3", fields,
               {"merge-engine": "partial-update", "ignore-delete": "true"},
               [(1, 1), (1, 1)], ["+I", "-D"]) == [(1, 1)]


def test_partial_update_remove_record_on_delete(catalog):
    fields = f("k", "a", "b")
    opts = {"merge-engine": "partial-update", "partial-update.remove-record-on-delete": "true"}
    assert run(catalog, "rr1", fields, opts, [(1, 1, 1), (1, 1, 1)], ["+I", "-D"]) == []
    # +I(1,1,1), -D(1,1,1), +I(1,2,NULL) -> +I(1,2,1) (the add lands on the -D row's values)
    assert both(catalog, "rr2", fields, opts, [(1, 1, 1), (1, 1, 1), (1, 2, N)],
                ["+I", "-D", "+I"]) == [(1, 2, 1)]


def test_sequence_groups_doc_example_1(catalog):
    fields = f("k", "a", "b", "g_1", "c", "d", "g_2")
    opts = {"merge-engine": "partial-update", "fields.g_1.sequence-group": "a,b",
            "fields.g_2.sequence-group": "c,d"}
    rows = [(1, 1, 1, 1, 1, 1, 1), (1, 2, 2, 2, 2, 2, N)]
    assert both(catalog, "sg1", fields, opts, rows) == [(1, 2, 2, 2, 1, 1, 1)]
    rows.append((1, 3, 3, 1, 3, 3, 3))
    assert both(catalog, "sg1b", fields, opts, rows) == [(1, 2, 2, 2, 3, 3, 3)]


def test_sequence_groups_multi_field_ordering(catalog):
    fields = f("k", "a", "b", "g_1", "c", "d", "g_2", "g_3")
    opts = {"merge-engine": "partial-update", "fields.g_1.sequence-group": "a,b",
            "fields.g_2,g_3.sequence-group": "c,d"}
    rows = [(1, 1, 1, 1, 1, 1, 1, 1), (1, 2, 2, 2, 2, 2, 1, N)]
    assert both(catalog, "sg2", fields, opts, rows) == [(1, 2, 2, 2, 1, 1, 1, 1)]
    rows.append((1, 3, 3, 1, 3, 3, 3, 1))
    assert both(catalog, "sg2b", fields, opts, rows) == [(1, 2, 2, 2, 3, 3, 3, 1)]


def test_sequence_groups_with_aggregation(catalog):
    fields = f("k", "a", "b", "c", "d")
    opts = {"merge-engine": "partial-update", "fields.a.sequence-group": "b",
            "fields.b.aggregate-function": "first_value", "fields.c.sequence-group": "d",
            "fields.d.aggregate-function": "sum"}
    rows = [(1, 1, 1, N, N), (1, N, N, 1, 1), (1, 2, 2, N, N), (1, N, N, 2, 2)]
    assert both(catalog, "sga", fields, opts, rows) == [(1, 2, 1, 2, 3)]
    opts["fields.b.aggregate-function"] = "last_non_null_value"
    assert both(catalog, "sgb", fields, opts, rows) == [(1, 2, 2, 2, 3)]


def test_sequence_group_aggregation_older_record(catalog):
    fields = [("k", I64), ("a", I64), ("b", I64), ("g_1", I64), ("c", pa.string()),
              ("g_2", I64), ("g_3", I64)]
    opts = {"merge-engine": "partial-update", "fields.g_1,g_3.sequence-group": "a",
            "fields.a.aggregate-function": "sum", "fields.g_2.sequence-group": "c"}
    rows = [(1, 1, 1, 1, "1", 1, 1), (1, 2, 2, 2, "2", N, 2)]
    assert both(catalog, "sgo", fields, opts, rows) == [(1, 3, 2, 2, "1", 1, 2)]
    rows.append((1, 3, 3, 2, "3", 3, 1))  # (g_1, g_3) = (2, 1) is older than (2, 2)
    assert both(catalog, "sgo2", fields, opts, rows) == [(1, 6, 3, 2, "3", 3, 2)]


def test_sequence_group_retract_and_remove_on_sequence_group(catalog):
    fields = f("k", "a", "g_1", "b", "g_2")
    opts = {"merge-engine": "partial-update", "fields.g_1.sequence-group": "a",
            "fields.g_2.sequence-group": "b"}
    # -U on group 1 (newer) nulls its protected field and takes its ordering value
    got = both(catalog, "sgr", fields, opts, [(1, 1, 1, 5, 1), (1, 1, 2, N, N)], ["+I", "-U"])
    assert got == [(1, N, 2, 5, 1)]
    opts["partial-update.remove-record-on-sequence-group"] = "g_1"
    assert both(catalog, "sgr2", fields, opts, [(1, 1, 1, 5, 1), (1, 1, 2, N, N)],
                ["+I", "-D"]) == []


@pytest.mark.stores
def test_aggregation_doc_example(catalog):
    fields = [("k", I64), ("price", pa.float64()), ("sales", I64)]
    opts = {"merge-engine": "aggregation", "fields.price.aggregate-function": "max",
            "fields.sales.aggregate-function": "sum"}
    assert both(catalog, "agg", fields, opts, [(1, 23.0, 15), (1, 30.2, 20)]) == [(1, 30.2, 35)]


@pytest.mark.parametrize("func,vals,expect", [
    ("sum", [1, N, 5], 6),
    ("product", [2, 3, N], 6),
    ("max", [1, 9, 3], 9),
    ("min", [4, 2, N], 2),
    ("last_value", [1, 2, N], N),
    ("last_non_null_value", [1, 2, N], 2),
    ("first_value", [N, 2, 3], N),
    ("first_non_null_value", [N, 2, 3], 2),
    ("first_not_null_value", [N, 2, 3], 2),
])
def test_aggregate_functions_int(catalog, func, vals, expect):
    fields = f("k", "v")
    opts = {"merge-engine": "aggregation", "fields.v.aggregate-function": func}
    rows = [(1, v) for v in vals]
    assert both(catalog, "f_" + func, fields, opts, rows) == [(1, expect)]


def test_aggregate_listagg_and_bools(catalog):
    fields = [("k", I64), ("s", pa.string()), ("d", pa.string()), ("ba", pa.bool_()),
              ("bo", pa.bool_())]
    opts = {"merge-engine": "aggregation", "fields.s.aggregate-function": "listagg",
            "fields.d.aggregate-function": "listagg", "fields.d.distinct": "true",
            "fields.d.list-agg-delimiter": ";", "fields.ba.aggregate-function": "bool_and",
            "fields.bo.aggregate-function": "bool_or"}
    rows = [(1, "a", "x;y", True, False), (1, " ", "y;z", True, N), (1, "b", N, False, True)]
    assert both(catalog, "la", fields, opts, rows) == [(1, "a,b", "x;y;z", False, True)]


def test_aggregation_retraction(catalog):
    fields = f("k", "s", "m")
    opts = {"merge-engine": "aggregation", "fields.s.aggregate-function": "sum",
            "fields.m.aggregate-function": "max", "fields.m.ignore-retract": "true"}
    # sum of +I 3, -D 3 -> visible row with 0; max ignores the retraction
    assert both(catalog, "ar", fields, opts, [(1, 3, 7), (1, 3, 9)], ["+I", "-D"]) == [(1, 0, 7)]
    opts2 = {"merge-engine": "aggregation", "fields.s.aggregate-function": "sum",
             "aggregation.remove-record-on-delete": "true"}
    assert both(catalog, "ar2", fields, opts2, [(1, 3, N), (1, 4, N), (1, 5, N), (1, 2, N)],
                ["+I", "+I", "-D", "+I"]) == [(1, 7, N)]
    with pytest.raises(paimon_rs.PaimonRsError, match="does not support retraction"):
        run(catalog, "ar3", f("k", "m"), {"merge-engine": "aggregation",
                                           "fields.m.aggregate-function": "max"},
            [(1, 1), (1, 1)], ["+I", "-U"])


def test_deduplicate_retractions_and_ignore_delete(catalog):
    fields = f("k", "v")
    assert both(catalog, "dd", fields, {}, [(1, 1), (1, 1), (2, 2), (2, 2)],
                ["+I", "-D", "+I", "-U"]) == []
    assert both(catalog, "dd2", fields, {"deduplicate.ignore-delete": "true"},
                [(1, 1), (1, 1)], ["+I", "-D"]) == [(1, 1)]
    assert both(catalog, "dd3", fields, {"ignore-update-before": "true"},
                [(1, 1), (1, 1)], ["+I", "-U"]) == [(1, 1)]


@pytest.mark.stores
def test_sequence_field_ordering(catalog):
    fields = f("k", "ts", "v")
    opts = {"sequence.field": "ts"}
    # the record with the larger ts wins, whatever the arrival order; null ts is oldest
    assert both(catalog, "sf", fields, opts, [(1, 5, 50), (1, 3, 30), (2, N, 1), (2, 1, 2)]) \
        == [(1, 5, 50), (2, 1, 2)]
    opts = {"sequence.field": "ts", "sequence.field.sort-order": "descending"}
    assert both(catalog, "sfd", fields, opts, [(1, 5, 50), (1, 3, 30), (2, N, 1), (2, 1, 2)]) \
        == [(1, 3, 30), (2, 1, 2)]
    # sequence.field in aggregation behaves as last_value by ordering
    opts = {"merge-engine": "aggregation", "sequence.field": "ts",
            "fields.v.aggregate-function": "sum"}
    assert both(catalog, "sfa", fields, opts, [(1, 5, 50), (1, 3, 30)]) == [(1, 5, 80)]


def test_sequence_field_projection_reads_it(catalog):
    fields = f("k", "ts", "v")
    t = make(catalog, "sfp", fields, {"sequence.field": "ts"})
    write(t, batch(fields, [(1, 5, 50)]))
    write(t, batch(fields, [(1, 3, 30)]))
    rb = t.new_read_builder().with_projection(["v"])
    got = rb.new_read().to_arrow(rb.new_scan().plan().splits())
    assert got.column_names == ["v"] and got.to_pylist() == [{"v": 50}]


@pytest.mark.stores
def test_first_row_tables_are_writable(catalog):
    """Writers compact first-row tables' level-0 files up (issue #11), so writes are visible."""
    t = make(catalog, "fr", f("k", "v"), {"merge-engine": "first-row"})
    assert t.options["merge-engine"] == "first-row"


@pytest.mark.parametrize("opts,match", [
    ({"merge-engine": "nope"}, "merge-engine"),
    ({"merge-engine": "aggregation", "fields.v.aggregate-function": "median"},
     "fields.v.aggregate-function"),
    ({"merge-engine": "aggregation", "fields.zz.aggregate-function": "sum"}, "zz"),
    ({"sequence.field": "nope"}, "sequence.field"),
    ({"merge-engine": "partial-update", "fields.v.aggregate-function": "sum"},
     "fields.v.aggregate-function"),
    ({"merge-engine": "partial-update", "fields.v.sequence-group": "k"}, "contains primary key field 'k'"),
    ({"merge-engine": "partial-update", "fields.v.sequence-group": "w",
      "partial-update.remove-record-on-delete": "true"}, "remove-record-on-delete"),
    ({"sequence.field.sort-order": "sideways"}, "sequence.field.sort-order"),
])
def test_bad_options_are_named(catalog, opts, match):
    with pytest.raises(paimon_rs.PaimonRsError, match=match):
        make(catalog, "bad", f("k", "v", "w"), opts)


def test_rbm64_is_accepted(catalog):
    # once refused as unimplemented; tests/unit/test_merge_aggs.py covers its semantics
    make(catalog, "th", [("k", I64), ("v", pa.binary())],
         {"merge-engine": "aggregation", "fields.v.aggregate-function": "rbm64"})
