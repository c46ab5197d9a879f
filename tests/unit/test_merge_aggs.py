"""Aggregate functions over nested and binary values through the Python API (paimon-behaviour.md
§8.4; Java's FieldCollectAgg, FieldMergeMapAgg, FieldMergeMapWithKeyTimeAgg, FieldNestedUpdateAgg,
FieldNestedPartialUpdateAgg, FieldRoaringBitmap32Agg, FieldRoaringBitmap64Agg, FieldThetaSketchAgg, FieldHllSketchAgg).

Each case runs twice (one commit per record: merged by the reader; one commit: merged by the
write-buffer flush) and both must agree (`both`).
"""

from __future__ import annotations

from typing import Any

import datasketches as ds
import pyarrow as pa
import pytest
from java_rbm64 import bitmap_of as rbm64
from pyroaring import BitMap
from test_merge_engines import both, make

import paimon_rs

# on local disk, and on S3 under -m long (tests/stores.py)
pytestmark = pytest.mark.stores("local", "s3-long")

N = None
I64 = pa.int64()
AGG = {"merge-engine": "aggregation"}


def agg(field: str, func: str, **extra: str) -> dict[str, str]:
    opts = {**AGG, f"fields.{field}.aggregate-function": func}
    opts.update({f"fields.{field}.{k.replace('_', '-')}": v for k, v in extra.items()})
    return opts


def one(catalog, name, t, opts, vals, kinds=None) -> Any:
    """Aggregate `vals` of a column of type `t` under key 1; the merged value."""
    got = both(catalog, name, [("k", I64), ("v", t)], opts, [(1, v) for v in vals], kinds)
    assert len(got) <= 1, got
    return got[0][1] if got else "<no row>"


# ---------------------------------------------------------------------------------------------
# rbm32


def rbm(*vals: int) -> bytes:
    return BitMap(vals).serialize()


def test_rbm32_union(catalog):
    got = one(catalog, "rbm", pa.binary(), agg("v", "rbm32"),
              [rbm(1, 5), N, rbm(), rbm(5, 70000, 1 << 31)])
    assert BitMap.deserialize(got) == BitMap([1, 5, 70000, 1 << 31])
    assert got == rbm(1, 5, 70000, 1 << 31)  # byte-identical to the portable serialization


def test_rbm32_retraction_refused_unless_ignored(catalog):
    with pytest.raises(paimon_rs.PaimonRsError, match="ignore-retract"):
        one(catalog, "rbmr", pa.binary(), agg("v", "rbm32"), [rbm(1), rbm(1)], ["+I", "-U"])
    got = one(catalog, "rbmi", pa.binary(), agg("v", "rbm32", ignore_retract="true"),
              [rbm(1), rbm(2), rbm(3)], ["+I", "-U", "+U"])
    assert BitMap.deserialize(got) == BitMap([1, 3])


def test_rbm32_bad_bytes_and_types(catalog):
    with pytest.raises(paimon_rs.PaimonRsError, match="rbm32.*'v'|'v'.*rbm32"):
        one(catalog, "rbmb", pa.binary(), agg("v", "rbm32"), [b"\x01\x02", rbm(1)])
    with pytest.raises(paimon_rs.PaimonRsError, match="rbm32.*'v'.*VarBinaryType"):
        make(catalog, "rbmt", [("k", I64), ("v", I64)], agg("v", "rbm32"))


# ---------------------------------------------------------------------------------------------
# rbm64: Java Roaring64Bitmap bytes (RoaringBitmap 1.2.1's ART layout), hand-traced (java_rbm64)


def test_rbm64_union_matches_java_bytes(catalog):
    # Java Paimon's FieldAggregatorTest: agg(bitmapOf(2, 3), bitmapOf(1)) == bitmapOf(1, 2, 3)
    got = one(catalog, "r64", pa.binary(), agg("v", "rbm64"), [rbm64(2, 3), N, rbm64(), rbm64(1)])
    assert got == rbm64(1, 2, 3)
    high = 0xABCD_EF01_2345 << 16
    got = one(catalog, "r64h", pa.binary(), agg("v", "rbm64"),
              [rbm64(high + 5), rbm64(high + 2, high + 5)])
    assert got == rbm64(high + 5, high + 2)


def test_rbm64_union_keeps_javas_container_order(catalog):
    # new high keys of the input are appended after the accumulator's containers
    got = one(catalog, "r64o", pa.binary(), agg("v", "rbm64"), [rbm64(9 << 16), rbm64(1 << 16 | 7)])
    assert got == rbm64(9 << 16, 1 << 16 | 7)
    assert got != rbm64(1 << 16 | 7, 9 << 16)


def test_rbm64_run_containers_and_four_keys(catalog):
    # 0..9 under one key: runOptimize makes a run container; four keys under one Node4
    got = one(catalog, "r64n", pa.binary(), agg("v", "rbm64"),
              [rbm64(*range(5), 3 << 16), rbm64(*range(5, 10), 1 << 16, 2 << 16 | 9)])
    assert got == rbm64(*range(10), 3 << 16, 1 << 16, 2 << 16 | 9)


def test_rbm64_retraction_refused_unless_ignored(catalog):
    with pytest.raises(paimon_rs.PaimonRsError, match="ignore-retract"):
        one(catalog, "r64r", pa.binary(), agg("v", "rbm64"), [rbm64(1), rbm64(1)], ["+I", "-U"])
    got = one(catalog, "r64i", pa.binary(), agg("v", "rbm64", ignore_retract="true"),
              [rbm64(1), rbm64(2), rbm64(3)], ["+I", "-U", "+U"])
    assert got == rbm64(1, 3)


def test_rbm64_bad_bytes_and_types(catalog):
    with pytest.raises(paimon_rs.PaimonRsError, match="rbm64.*'v'.*Roaring64Bitmap"):
        one(catalog, "r64b", pa.binary(), agg("v", "rbm64"), [rbm64(1), rbm64(1)[:-3]])
    with pytest.raises(paimon_rs.PaimonRsError, match="rbm64.*'v'.*Roaring64Bitmap"):
        # the portable 64-bit format (what pyroaring's BitMap64 writes) is not Java's
        one(catalog, "r64p", pa.binary(), agg("v", "rbm64"), [rbm64(1), b"\x01\x00\x00\x00"])
    with pytest.raises(paimon_rs.PaimonRsError, match="rbm64.*'v'.*VarBinaryType"):
        make(catalog, "r64t", [("k", I64), ("v", I64)], agg("v", "rbm64"))


# ---------------------------------------------------------------------------------------------
# theta_sketch / hll_sketch, checked against Apache DataSketches' own Python binding


def theta(*vals: int) -> bytes:
    s = ds.update_theta_sketch()
    for v in vals:
        s.update(v)
    return s.compact().serialize()


def theta_union_ref(a: bytes, b: bytes) -> bytes:
    u = ds.theta_union()
    u.update(ds.compact_theta_sketch.deserialize(a))
    u.update(ds.compact_theta_sketch.deserialize(b))
    return u.get_result().serialize()


def test_theta_sketch_union_matches_datasketches(catalog):
    a, b, c = theta(*range(0, 3000)), theta(*range(2000, 9000)), theta(1, 2, 3)
    got = one(catalog, "th", pa.binary(), agg("v", "theta_sketch"), [a, N, b, c])
    assert got == theta_union_ref(theta_union_ref(a, b), c)
    est = ds.compact_theta_sketch.deserialize(got).get_estimate()
    assert abs(est - 9000) / 9000 < 0.05


def test_theta_sketch_small_is_exact(catalog):
    got = one(catalog, "th2", pa.binary(), agg("v", "theta_sketch"), [theta(1, 2), theta(2, 3)])
    assert ds.compact_theta_sketch.deserialize(got).get_estimate() == 3
    assert got == theta_union_ref(theta(1, 2), theta(2, 3))


def hll(*vals: int, lg_k: int = 12) -> bytes:
    s = ds.hll_sketch(lg_k, ds.tgt_hll_type.HLL_4)
    for v in vals:
        s.update(v)
    return s.serialize_compact()


def hll_union_ref(a: bytes, b: bytes) -> bytes:
    # Java: Union.heapify(b) (lg_max_k = b's lg_k), update(a), result as HLL_4, compact
    sb = ds.hll_sketch.deserialize(b)
    u = ds.hll_union(sb.lg_config_k)
    u.update(sb)
    u.update(ds.hll_sketch.deserialize(a))
    return u.get_result(ds.tgt_hll_type.HLL_4).serialize_compact()


def test_hll_sketch_union_matches_datasketches(catalog):
    a, b = hll(*range(0, 5000)), hll(*range(4000, 20000))
    got = one(catalog, "hl", pa.binary(), agg("v", "hll_sketch"), [a, N, b])
    est = ds.hll_sketch.deserialize(got).get_estimate()
    ref = hll_union_ref(a, b)
    # byte-identical to DataSketches' own union except preamble byte 4 (lgArr), which the C++
    # library fills with its aux-map size and datasketches-rust with 0; in HLL mode readers
    # recompute it from the aux count of a compact sketch
    assert len(got) == len(ref) and got[:4] + got[5:] == ref[:4] + ref[5:]
    assert est == pytest.approx(ds.hll_sketch.deserialize(ref).get_estimate(), rel=1e-9)
    assert abs(est - 20000) / 20000 < 0.05
    small = one(catalog, "hl2", pa.binary(), agg("v", "hll_sketch"), [hll(1, 2), hll(2, 3)])
    assert ds.hll_sketch.deserialize(small).get_estimate() == pytest.approx(3, rel=1e-6)


def test_sketches_refuse_retraction_bad_bytes_and_types(catalog):
    with pytest.raises(paimon_rs.PaimonRsError, match="theta_sketch.*ignore-retract"):
        one(catalog, "thr", pa.binary(), agg("v", "theta_sketch"), [theta(1), theta(1)],
            ["+I", "-D"])
    with pytest.raises(paimon_rs.PaimonRsError, match="hll_sketch.*'v'.*HLL sketch"):
        one(catalog, "hlb", pa.binary(), agg("v", "hll_sketch"), [hll(1), b"junk"])
    with pytest.raises(paimon_rs.PaimonRsError, match="hll_sketch.*'v'.*VarBinaryType"):
        make(catalog, "hlt", [("k", I64), ("v", pa.string())], agg("v", "hll_sketch"))


# ---------------------------------------------------------------------------------------------
# collect


LI = pa.list_(I64)


def test_collect_concatenates_and_distinct(catalog):
    assert one(catalog, "co", LI, agg("v", "collect"), [[1, 2], N, [], [2, N, 3]]) \
        == [1, 2, 2, N, 3]
    assert one(catalog, "cod", LI, agg("v", "collect", distinct="true"),
               [[1, 2, 1], N, [2, 3, N], [N, 4]]) == [1, 2, 3, N, 4]
    assert one(catalog, "con", LI, agg("v", "collect"), [N, N]) is None


def test_collect_retraction(catalog):
    # -U removes one occurrence per retracted element; a retraction reaching a null
    # accumulator leaves null (doc: out-of-order -U['A'] before +I['A','B'] leaves ['A','B'])
    t = pa.list_(pa.string())
    assert one(catalog, "cr", t, agg("v", "collect"), [["A", "B", "A"], ["A"], ["C"]],
               ["+I", "-U", "+U"]) == ["B", "A", "C"]
    assert one(catalog, "cr2", t, agg("v", "collect"), [["A"], ["A", "B"]],
               ["-U", "+I"]) == ["A", "B"]
    assert one(catalog, "cr3", t, agg("v", "collect", ignore_retract="true"),
               [["A"], ["A"]], ["+I", "-D"]) == ["A"]


def test_collect_nested_elements_distinct(catalog):
    t = pa.list_(pa.struct([("a", I64), ("b", pa.string())]))
    got = one(catalog, "cs", t, agg("v", "collect", distinct="true"),
              [[{"a": 1, "b": "x"}], [{"a": 1, "b": "x"}, {"a": 1, "b": N}]])
    assert got == [{"a": 1, "b": "x"}, {"a": 1, "b": N}]
    tb = pa.list_(pa.binary())
    assert one(catalog, "cb", tb, agg("v", "collect", distinct="true"),
               [[b"a", b"b"], [b"a"]]) == [b"a", b"b"]


def test_collect_wrong_type(catalog):
    with pytest.raises(paimon_rs.PaimonRsError, match="collect.*'v'.*'Array'"):
        make(catalog, "cw", [("k", I64), ("v", I64)], agg("v", "collect"))


# ---------------------------------------------------------------------------------------------
# merge_map / merge_map_with_keytime


MSS = pa.map_(pa.string(), pa.string())


def test_merge_map_union_and_retraction(catalog):
    got = one(catalog, "mm", MSS, agg("v", "merge_map"),
              [[("a", "1"), ("b", "2")], N, [("b", "3"), ("c", N)]])
    assert dict(got) == {"a": "1", "b": "3", "c": N}
    # doc: +I{1->A}, +I{1->B}, -D{1->B} leaves {}
    t = pa.map_(pa.int32(), pa.string())
    assert one(catalog, "mmr", t, agg("v", "merge_map"), [[(1, "A")], [(1, "B")], [(1, "B")]],
               ["+I", "+I", "-D"]) == []
    assert dict(one(catalog, "mmr2", t, agg("v", "merge_map"),
                    [[(1, "A"), (2, "B")], [(2, "zzz")]], ["+I", "-U"])) == {1: "A"}
    # a retraction onto a null accumulator stays null, then adds start over
    assert dict(one(catalog, "mmr3", t, agg("v", "merge_map"), [[(1, "A")], [(2, "B")]],
                    ["-U", "+I"])) == {2: "B"}


def test_merge_map_wrong_type(catalog):
    with pytest.raises(paimon_rs.PaimonRsError, match="merge_map.*'v'.*MAP"):
        make(catalog, "mmw", [("k", I64), ("v", LI)], agg("v", "merge_map"))


KT = pa.map_(pa.string(), pa.struct([("val", I64), ("ts", pa.string())]))


def e(val: int | None, ts: str | None) -> dict[str, Any]:
    return {"val": val, "ts": ts}


def test_merge_map_with_keytime(catalog):
    got = one(catalog, "kt", KT, agg("v", "merge_map_with_keytime"), [
        [("a", e(1, "2024-01-02")), ("b", e(2, "2024-01-01")), ("c", e(3, "1"))],
        [("a", e(10, "2024-01-01")), ("b", e(20, "2024-01-03")), ("c", N), ("d", e(4, N))],
    ])
    # a: older input loses; b: newer wins; c: a null row removes the key; d: null ts skipped
    assert dict(got) == {"a": e(1, "2024-01-02"), "b": e(20, "2024-01-03")}


def test_merge_map_with_keytime_compares_strings(catalog):
    # paimon-behaviour.md §14.2: "50" > "100" as strings, so the docs' example does not hold
    got = one(catalog, "kts", KT, agg("v", "merge_map_with_keytime"),
              [[("a", e(1, "50"))], [("a", e(2, "100"))]])
    assert dict(got) == {"a": e(1, "50")}


def test_merge_map_with_keytime_ts_field_option(catalog):
    t = pa.map_(pa.string(), pa.struct([("ts", pa.string()), ("val", I64)]))
    got = one(catalog, "ktf", t, agg("v", "merge_map_with_keytime", ts_field="ts"),
              [[("a", {"ts": "2", "val": 1})], [("a", {"ts": "1", "val": 2})]])
    assert dict(got) == {"a": {"ts": "2", "val": 1}}
    with pytest.raises(paimon_rs.PaimonRsError, match="fields.v.ts-field.*nope"):
        make(catalog, "ktf2", [("k", I64), ("v", t)],
             agg("v", "merge_map_with_keytime", ts_field="nope"))


def test_merge_map_with_keytime_refusals(catalog):
    with pytest.raises(paimon_rs.PaimonRsError, match="merge_map_with_keytime.*'v'.*ROW"):
        make(catalog, "ktw", [("k", I64), ("v", MSS)], agg("v", "merge_map_with_keytime"))
    with pytest.raises(paimon_rs.PaimonRsError, match="'ts' must be a string"):
        make(catalog, "ktw2", [("k", I64), ("v", pa.map_(pa.string(), pa.struct(
            [("val", I64), ("ts", I64)])))], agg("v", "merge_map_with_keytime"))
    with pytest.raises(paimon_rs.PaimonRsError, match="merge_map_with_keytime.*ignore-retract"):
        one(catalog, "ktr", KT, agg("v", "merge_map_with_keytime"),
            [[("a", e(1, "1"))], [("a", e(1, "1"))]], ["+I", "-U"])


# ---------------------------------------------------------------------------------------------
# nested_update / nested_partial_update


ROW = pa.struct([("id", I64), ("name", pa.string()), ("ver", I64)])
NT = pa.list_(ROW)


def r(i: int | None, name: str | None = None, ver: int | None = None) -> dict[str, Any]:
    return {"id": i, "name": name, "ver": ver}


def test_nested_update_by_key(catalog):
    got = one(catalog, "nu", NT, agg("v", "nested_update", nested_key="id"),
              [[r(1, "a"), r(2, "b")], N, [r(2, "B"), N, r(3, "c")]])
    assert got == [r(1, "a"), r(2, "B"), r(3, "c")]


def test_nested_update_without_key_appends(catalog):
    got = one(catalog, "nua", NT, agg("v", "nested_update"),
              [[r(1, "a")], [r(1, "a"), N, r(2, "b")]])
    assert got == [r(1, "a"), r(1, "a"), r(2, "b")]
    got = one(catalog, "nul", NT, agg("v", "nested_update", count_limit="2"),
              [[r(1, "a")], [r(2, "b"), r(3, "c")], [r(4, "d")]])
    assert got == [r(1, "a"), r(2, "b")]


def test_nested_update_sequence_field_and_count_limit(catalog):
    opts = agg("v", "nested_update", nested_key="id", nested_sequence_field="ver")
    got = one(catalog, "nus", NT, opts, [[r(1, "new", 5), r(2, "x", 1)], [r(1, "old", 3)],
                                         [r(2, "y", 1)]])
    # an older nested version loses; equal versions go to the input
    assert got == [r(1, "new", 5), r(2, "y", 1)]
    opts = agg("v", "nested_update", nested_key="id", count_limit="2")
    got = one(catalog, "nuc", NT, opts, [[r(1, "a")], [r(2, "b"), r(3, "c")], [r(1, "A")]])
    # new keys stop at the limit; existing keys still update
    assert got == [r(1, "A"), r(2, "b")]


def test_nested_update_null_key_strategies(catalog):
    rows = [[r(1, "a"), r(N, "n1")], [r(N, "n2")]]
    assert one(catalog, "nnm", NT, agg("v", "nested_update", nested_key="id"), rows) \
        == [r(1, "a"), r(N, "n2")]
    assert one(catalog, "nni", NT, agg("v", "nested_update", nested_key="id",
                                       nested_key_null_strategy="ignore"), rows) == [r(1, "a")]
    with pytest.raises(paimon_rs.PaimonRsError, match="nested key contains null"):
        one(catalog, "nne", NT, agg("v", "nested_update", nested_key="id",
                                    nested_key_null_strategy="error"), rows)


def test_nested_update_retraction(catalog):
    got = one(catalog, "nur", NT, agg("v", "nested_update", nested_key="id"),
              [[r(1, "a"), r(2, "b")], [r(2, "whatever")], [r(3, "c")]], ["+I", "-U", "+U"])
    assert got == [r(1, "a"), r(3, "c")]
    # without a key, rows equal to a retracted row go (all of them)
    got = one(catalog, "nur2", NT, agg("v", "nested_update"),
              [[r(1, "a"), r(2, "b"), r(1, "a")], [r(1, "a")]], ["+I", "-D"])
    assert got == [r(2, "b")]


def test_nested_partial_update(catalog):
    got = one(catalog, "npu", NT, agg("v", "nested_partial_update", nested_key="id"),
              [[r(1, "a", N), r(2, "b", 1)], [r(1, N, 7), N, r(3, "c")]])
    assert got == [r(1, "a", 7), r(2, "b", 1), r(3, "c")]
    with pytest.raises(paimon_rs.PaimonRsError, match="nested_partial_update.*ignore-retract"):
        one(catalog, "npr", NT, agg("v", "nested_partial_update", nested_key="id"),
            [[r(1)], [r(1)]], ["+I", "-D"])


@pytest.mark.parametrize("func,extra,match", [
    ("nested_update", {}, "nested_update.*'v'.*'Array<Row>'"),
    ("nested_partial_update", {"nested_key": "id"}, "nested_partial_update.*'v'.*'Array<Row>'"),
])
def test_nested_wrong_type(catalog, func, extra, match):
    with pytest.raises(paimon_rs.PaimonRsError, match=match):
        make(catalog, "nw", [("k", I64), ("v", LI)], agg("v", func, **extra))


@pytest.mark.parametrize("func,extra,match", [
    ("nested_update", {"nested_key": "nope"}, "fields.v.nested-key.*nope"),
    ("nested_update", {"nested_sequence_field": "ver"}, "fields.v.nested-key"),
    ("nested_update", {"nested_key_null_strategy": "ignore"}, "fields.v.nested-key"),
    ("nested_update", {"nested_key": "id", "nested_key_null_strategy": "maybe"},
     "nested-key-null-strategy"),
    ("nested_update", {"count_limit": "-1"}, "fields.v.count-limit"),
    ("nested_partial_update", {}, "fields.v.nested-key"),
])
def test_nested_bad_options(catalog, func, extra, match):
    with pytest.raises(paimon_rs.PaimonRsError, match=match):
        make(catalog, "nb", [("k", I64), ("v", NT)], agg("v", func, **extra))


# ---------------------------------------------------------------------------------------------
# nested functions inside partial-update sequence groups


def test_collect_in_sequence_group(catalog):
    fields = [("k", I64), ("g", I64), ("v", LI)]
    opts = {"merge-engine": "partial-update", "fields.g.sequence-group": "v",
            "fields.v.aggregate-function": "collect"}
    # an older record's elements are still collected (collect's aggReversed is agg)
    assert both(catalog, "pcg", fields, opts, [(1, 2, [1]), (1, 1, [2]), (1, 3, [3])]) \
        == [(1, 3, [1, 2, 3])]


# ---------------------------------------------------------------------------------------------
# count is not a Paimon aggregate function


def test_count_is_not_a_paimon_function(catalog):
    with pytest.raises(paimon_rs.PaimonRsError, match="Use unsupported aggregation: count"):
        make(catalog, "cnt", [("k", I64), ("v", I64)], agg("v", "count"))


def test_collect_retraction_in_sequence_group(catalog):
    fields = [("k", I64), ("g", I64), ("v", LI)]
    opts = {"merge-engine": "partial-update", "fields.g.sequence-group": "v",
            "fields.v.aggregate-function": "collect"}
    # a grouped retraction retracts the aggregated field (one equal element per element)
    assert both(catalog, "pcr", fields, opts, [(1, 1, [1, 2, 1]), (1, 2, [1]), (1, 3, [4])],
                ["+I", "-U", "+U"]) == [(1, 3, [2, 1, 4])]
