"""Table definitions and merges Java Paimon refuses: paimon_rs refuses them too, with Java's sentence.

Each case is a table definition (columns, keys, options) given to Java (driver ``create_table``,
then a write of the case's rows, since Java refuses some definitions only when it first builds
its merge function, and some merges only when it meets the records) and to paimon_rs
(``create_table``, then the same write). Both must accept, or both refuse; when they refuse,
paimon_rs's message must contain ``sentence`` verbatim: Java's own words (from the current Java
sources, ``SchemaValidation``, ``PartialUpdateMergeFunction``, ``AggregateMergeFunction``,
``FieldAggregatorFactory`` and the aggregators), so that a user who searches for it finds Paimon's
documentation; paimon_rs keeps its own context (table, option, field) around it.

The reference here is the 1.0-SNAPSHOT jar (Sept 2024). Where its words differ from the current
sources', ``java10`` is the part of the sentence it prints; where it accepts what newer Java
refuses (or the reverse), ``java10`` is ``ACCEPTS`` (``REFUSES``) and the case is checked against
the current sources' behaviour only (paimon_rs follows them).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import pyarrow as pa
import pytest
from test_java_interop import DB, java_create, ours_create

from paimon_rs import CatalogFactory, PaimonRsError

import java_values as jv
from java_env import JavaError

pytestmark = pytest.mark.java

ACCEPTS, REFUSES = "<Java 1.0 accepts>", "<Java 1.0 refuses>"

F = {
    "id": ("id", "INT", pa.int32()),
    "dt": ("dt", "STRING", pa.string()),
    "a": ("a", "BIGINT", pa.int64()),
    "b": ("b", "BIGINT", pa.int64()),
    "g": ("g", "INT", pa.int32()),
    "s": ("s", "STRING", pa.string()),
    "f": ("f", "BOOLEAN", pa.bool_()),
    "op": ("op", "STRING", pa.string()),
    "arr": ("arr", {"type": "ARRAY", "element": "INT"}, pa.list_(pa.int32())),
}


@dataclass
class Case:
    id: str
    options: dict
    sentence: Optional[str]           # None: both accept
    java10: Optional[str] = None      # what the 1.0 jar prints instead (or ACCEPTS / REFUSES)
    cols: list = field(default_factory=lambda: ["id", "a", "b", "g", "s", "op"])
    pk: list = field(default_factory=lambda: ["id"])
    part: list = field(default_factory=list)
    # the write: (id, a, b, g, s, op) rows with their row kinds (rowkind.field = op is set)
    rows: list = field(default_factory=lambda: [[1, 1, 1, 1, "x", "+I"], [1, 2, 2, 2, "y", "+I"]])

    @property
    def fields(self) -> list:
        return [F[c] for c in self.cols]


PU = {"merge-engine": "partial-update"}
AGG = {"merge-engine": "aggregation"}
RETRACT_ROWS = [[1, 1, 1, 1, "x", "+I"], [1, 1, 1, 1, "x", "-U"], [1, 2, 2, 2, "y", "+U"]]
DELETE_ROWS = [[1, 1, 1, 1, "x", "+I"], [1, 1, 1, 1, "x", "-D"]]

CASES = [
    # ---------------------------------------------------------------- partial-update
    Case("pu_agg_without_sequence_group", {**PU, "fields.a.aggregate-function": "sum"},
         "Must use sequence group for aggregation functions but not found for field a.",
         java10="Must use sequence group for aggregation functions."),
    Case("pu_default_agg_without_sequence_group", {**PU, "fields.default-aggregate-function": "sum"},
         "Must use sequence group for aggregation functions but not found for field a.",
         java10="Must use sequence group for aggregation functions."),
    Case("pu_last_non_null_value_without_sequence_group",
         {**PU, "fields.a.aggregate-function": "last_non_null_value"}, None, java10=REFUSES),
    Case("pu_agg_in_sequence_group",
         {**PU, "fields.g.sequence-group": "a", "fields.a.aggregate-function": "sum"}, None),
    Case("pu_agg_on_primary_key_is_ignored",
         {**PU, "fields.g.sequence-group": "a", "fields.id.aggregate-function": "sum"}, None),
    Case("pu_agg_on_group_ordering_field_is_ignored",
         {**PU, "fields.g.sequence-group": "a", "fields.g.aggregate-function": "sum"}, None, java10=REFUSES),
    Case("pu_last_non_null_value_outside_groups",
         {**PU, "fields.g.sequence-group": "a", "fields.b.aggregate-function": "last_non_null_value"}, None),
    Case("pu_agg_outside_groups",
         {**PU, "fields.g.sequence-group": "a", "fields.b.aggregate-function": "sum"},
         "Must use sequence group for aggregation functions but not found for field b.", java10=ACCEPTS),
    Case("pu_sequence_group_unknown_field", {**PU, "fields.nope.sequence-group": "a"},
         "Field nope can not be found in table schema."),
    Case("pu_sequence_group_unknown_protected_field", {**PU, "fields.g.sequence-group": "nope"},
         "Field nope can not be found in table schema"),
    Case("pu_field_in_two_sequence_groups",
         {**PU, "fields.g.sequence-group": "a", "fields.b.sequence-group": "a"},
         "Field a is defined repeatedly by multiple groups"),
    Case("pu_sequence_group_holds_primary_key", {**PU, "fields.g.sequence-group": "id"},
         "Primary key columns cannot be put in sequence-group.", java10=ACCEPTS),
    Case("pu_delete_refused", {**PU, "rowkind.field": "op"},
         "By default, Partial update can not accept delete records, you can choose one of the following "
         "solutions:", rows=DELETE_ROWS),
    Case("pu_delete_ignored", {**PU, "rowkind.field": "op", "ignore-delete": "true"}, None, rows=DELETE_ROWS),
    Case("pu_delete_removes_record", {**PU, "rowkind.field": "op", "partial-update.remove-record-on-delete": "true"},
         None, rows=DELETE_ROWS),
    Case("pu_remove_record_on_delete_and_ignore_delete",
         {**PU, "partial-update.remove-record-on-delete": "true", "ignore-delete": "true"},
         "ignore-delete and partial-update.remove-record-on-delete have conflicting behavior so should not be "
         "enabled at the same time.", java10="have conflicting behavior so should not be enabled at the same time."),
    Case("pu_remove_record_on_delete_and_sequence_group",
         {**PU, "partial-update.remove-record-on-delete": "true", "fields.g.sequence-group": "a"},
         "sequence-group and partial-update.remove-record-on-delete have conflicting behavior so should not be "
         "enabled at the same time.", java10="have conflicting behavior so should not be enabled at the same time."),
    Case("pu_remove_record_on_sequence_group_not_a_group",
         {**PU, "fields.g.sequence-group": "a", "partial-update.remove-record-on-sequence-group": "b"},
         "field 'b' defined in 'partial-update.remove-record-on-sequence-group' option must be part of sequence "
         "groups", java10=ACCEPTS),
    # ---------------------------------------------------------------- aggregation
    Case("agg_unknown_function", {**AGG, "fields.a.aggregate-function": "count"},
         "Use unsupported aggregation: count or spell aggregate function incorrectly!"),
    Case("dedup_unknown_function_is_ignored", {"fields.a.aggregate-function": "count"}, None),
    Case("agg_sum_on_string", {**AGG, "fields.s.aggregate-function": "sum"},
         "Data type for sum column must be 'NumericType' but was 'STRING'.", java10="type VARCHAR not support in"),
    Case("agg_default_sum_on_string", {**AGG, "fields.default-aggregate-function": "sum"},
         "Data type for sum column must be 'NumericType' but was 'STRING'.", java10="type VARCHAR not support in"),
    Case("agg_product_on_string", {**AGG, "fields.s.aggregate-function": "product"},
         "Data type for product column must be 'NumericType' but was 'STRING'.",
         java10="type VARCHAR not support in"),
    Case("agg_listagg_on_bigint", {**AGG, "fields.a.aggregate-function": "listagg"},
         "Data type for list agg column must be 'VarCharType' but was 'BIGINT'.", java10="type BIGINT not support in"),
    Case("agg_bool_and_on_bigint", {**AGG, "fields.a.aggregate-function": "bool_and"},
         "Data type for bool and column must be 'BooleanType' but was 'BIGINT'.",
         java10="type BIGINT not support in"),
    Case("agg_max_on_array", {**AGG, "fields.arr.aggregate-function": "max"},
         "Data type for max column 'arr' must be comparable but was 'ARRAY<INT>'.", java10=ACCEPTS,
         cols=["id", "a", "b", "g", "s", "op", "arr"]),
    Case("agg_collect_on_bigint", {**AGG, "fields.a.aggregate-function": "collect"},
         "Data type for collect column must be 'Array' but was 'BIGINT'."),
    Case("agg_merge_map_on_bigint", {**AGG, "fields.a.aggregate-function": "merge_map"},
         "Data type for merge map column must be 'MAP' but was 'BIGINT'",
         java10="Data type of merge map column must be 'MAP' but was 'BIGINT'"),
    Case("agg_rbm32_on_bigint", {**AGG, "fields.a.aggregate-function": "rbm32"},
         "Data type for roaring bitmap column must be 'VarBinaryType' but was 'BIGINT'."),
    Case("agg_unknown_field", {**AGG, "fields.nope.aggregate-function": "sum"},
         "Field nope can not be found in table schema."),
    Case("agg_on_primary_key_is_ignored", {**AGG, "fields.id.aggregate-function": "sum"}, None),
    Case("agg_on_sequence_field", {**AGG, "sequence.field": "g", "fields.g.aggregate-function": "max"},
         "Should not define aggregation on sequence field: 'g'."),
    Case("dedup_agg_on_sequence_field", {"sequence.field": "g", "fields.g.aggregate-function": "max"},
         "Should not define aggregation on sequence field: 'g'."),
    Case("agg_max_retraction", {**AGG, "rowkind.field": "op", "fields.a.aggregate-function": "max"},
         "Aggregate function 'max' does not support retraction, If you allow this function to ignore retraction "
         "messages, you can configure 'fields.${field_name}.ignore-retract'='true'.", rows=RETRACT_ROWS),
    Case("agg_max_retraction_ignored", {**AGG, "rowkind.field": "op", "fields.a.aggregate-function": "max",
                                        "fields.a.ignore-retract": "true", "fields.s.ignore-retract": "true",
                                        "fields.op.ignore-retract": "true"}, None, rows=RETRACT_ROWS),
    Case("agg_sum_retraction", {**AGG, "rowkind.field": "op", "fields.a.aggregate-function": "sum",
                                "fields.b.aggregate-function": "sum", "fields.g.aggregate-function": "sum"},
         None, rows=RETRACT_ROWS),
    Case("agg_sequence_group_is_ignored", {**AGG, "fields.g.sequence-group": "a"}, None),
    Case("dedup_with_aggregate_function_is_ignored", {"fields.a.aggregate-function": "sum"}, None),
    Case("first_row_with_aggregate_function_is_ignored",
         {"merge-engine": "first-row", "fields.a.aggregate-function": "sum"}, None),
    # ---------------------------------------------------------------- sequence.field
    Case("sequence_field_unknown", {"sequence.field": "nope"},
         "Sequence field: 'nope' can not be found in table schema."),
    Case("sequence_field_repeated", {"sequence.field": "g,g"}, "Sequence field 'g' is defined repeatedly."),
    Case("sequence_field_first_row", {"merge-engine": "first-row", "sequence.field": "g"},
         "Do not support use sequence field on FIRST_ROW merge engine.",
         java10="Do not support use sequence field on FIRST_"),
    Case("rowkind_field_unknown", {"rowkind.field": "nope"},
         "Rowkind field: 'nope' can not be found in table schema."),
    # ---------------------------------------------------------------- buckets and keys
    Case("bucket_zero", {"bucket": "0"}, "The number of buckets needs to be greater than 0."),
    Case("bucket_minus_three", {"bucket": "-3"}, "The number of buckets needs to be greater than 0."),
    Case("append_bucket_without_bucket_key", {"bucket": "2"}, "You should define a 'bucket-key' for bucketed "
         "append mode.", pk=[]),
    Case("bucket_key_with_dynamic_bucket", {"bucket": "-1", "bucket-key": "a"},
         "Cannot define 'bucket-key' with bucket = -1, please remove the 'bucket-key' setting or specify a "
         "bucket number.", pk=[], java10="Cannot define 'bucket-key' with bucket"),
    Case("bucket_key_not_a_column", {"bucket": "2", "bucket-key": "nope"},
         "Field names [id, a, b, g, s, op] should contains all bucket keys [nope].", pk=[]),
    Case("bucket_key_outside_primary_key", {"bucket": "2", "bucket-key": "a"},
         "Primary keys [id] should contains all bucket keys [a]."),
    Case("bucket_key_in_partition", {"bucket": "2", "bucket-key": "dt"},
         "Bucket keys [dt] should not in partition keys [dt].", cols=["dt", "id", "a", "b", "g", "s", "op"],
         pk=[], part=["dt"]),
    Case("bucket_key_nested", {"bucket": "2", "bucket-key": "arr"},
         "nested type can not in bucket-key, in your table these key are [arr]",
         cols=["id", "a", "b", "g", "s", "op", "arr"], pk=[]),
    Case("primary_key_is_partition", {"bucket": "2"},
         "Primary key constraint [dt] should not be same with partition fields [dt], this will result in only "
         "one record in a partition", cols=["dt", "id", "a", "b", "g", "s", "op"], pk=["dt"], part=["dt"]),
    Case("primary_key_array", {"bucket": "2"}, "The type ArrayType in primary key field arr is unsupported",
         cols=["id", "a", "b", "g", "s", "op", "arr"], pk=["arr"]),
    # ---------------------------------------------------------------- option values
    Case("merge_engine_unknown", {"merge-engine": "nope"}, "Could not parse value 'nope' for key 'merge-engine'."),
    Case("bucket_not_a_number", {"bucket": "two"}, "Could not parse value 'two' for key 'bucket'."),
    Case("ignore_delete_not_a_boolean", {"ignore-delete": "maybe"},
         "Could not parse value 'maybe' for key 'ignore-delete'."),
]

for _c in CASES:
    _c.options.setdefault("bucket", "1")


def _java_outcome(java, wh, t: str, case: Case) -> Optional[str]:
    """None if Java accepts the definition and the write, else its error (message and causes)."""
    try:
        java_create(java, wh, t, case.fields, case.pk, case.part, case.options)
        java.call("write", warehouse=str(wh), table=f"{DB}.{t}",
                  commits=[{"rows": _rows(case), "kinds": [r[case.cols.index("op")] for r in _rows(case)]}])
        java.call("read", warehouse=str(wh), table=f"{DB}.{t}")
    except JavaError as e:
        return e.error + "\n" + e.trace
    return None


def _rows(case: Case) -> list:
    base = ["id", "a", "b", "g", "s", "op"]
    out = []
    for r in case.rows:
        d = dict(zip(base, r))
        d.setdefault("dt", "2026-11-01")
        out.append([d.get(c) for c in case.cols])
    return out


def _first_row(case: Case) -> bool:
    return case.options.get("merge-engine") == "first-row"


def _ours_outcome(wh, t: str, case: Case, java_wh) -> Optional[str]:
    """paimon_rs creates the table, writes the rows and reads them back; a first-row table,
    which paimon_rs does not write, is the one Java created (if it did): opened and read."""
    try:
        if _first_row(case) and (java_wh / f"{DB}.db" / t / "schema").exists():
            tb = CatalogFactory.create({"warehouse": str(java_wh)}).get_table(f"{DB}.{t}")
            rb = tb.new_read_builder()
            rb.new_read().to_arrow(rb.new_scan().plan().splits())
            return None
        ours_create(wh, t, case.fields, case.pk, case.part, case.options)
        tb = CatalogFactory.create({"warehouse": str(wh)}).get_table(f"{DB}.{t}")
        wb = tb.new_batch_write_builder()
        w, c = wb.new_write(), wb.new_commit()
        try:
            w.write_arrow(jv.to_arrow(_rows(case), [f[0] for f in case.fields], [f[2] for f in case.fields]))
            c.commit(w.prepare_commit())
        finally:
            w.close()
            c.close()
        rb = tb.new_read_builder()
        rb.new_read().to_arrow(rb.new_scan().plan().splits())
    except PaimonRsError as e:
        return str(e)
    return None


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_validation_like_java(java, tmp_path, case):
    t = "t_" + case.id
    java_err = _java_outcome(java, tmp_path / "java", t, case)
    ours_err = _ours_outcome(tmp_path / "ours", t, case, tmp_path / "java")
    if case.java10 == ACCEPTS:
        assert java_err is None, f"Java 1.0 refused: {java_err[:600]}"
    elif case.java10 == REFUSES or case.sentence is not None:
        assert java_err is not None, "Java accepted"
        assert (case.java10 if case.java10 not in (None, REFUSES) else case.sentence or "") in java_err, java_err[:800]
    else:
        assert java_err is None, f"Java refused: {java_err[:800]}"
    if case.sentence is None:
        assert ours_err is None, f"paimon_rs refused: {ours_err}"
    else:
        assert ours_err is not None, "paimon_rs accepted"
        assert case.sentence in ours_err, ours_err
