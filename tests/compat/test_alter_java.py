"""ALTER TABLE across engines: Java Paimon reads (and writes) tables paimon_rs altered, and
paimon_rs alters further, writes and reads tables Java altered. Java's own view of the schema
(field ids, names, types) must equal ours after each alter."""

from __future__ import annotations

from decimal import Decimal

import pyarrow as pa
import pytest
from test_java_interop import DB, _alter, _tname, check, java_create, java_read, java_write, ours_create, ours_read

from paimon_rs import CatalogFactory, Move, SchemaChange
from paimon_rs.data_types import type_dict

pytestmark = pytest.mark.java


def _ours(wh):
    return CatalogFactory.create({"warehouse": str(wh)})


def _write(wh, t: str, rows: list) -> None:
    table = _ours(wh).get_table(f"{DB}.{t}")
    wb = table.new_batch_write_builder()
    w, c = wb.new_write(), wb.new_commit()
    try:
        w.write_arrow(pa.Table.from_pylist(rows, schema=table.arrow_schema))
        c.commit(w.prepare_commit())
    finally:
        w.close()
        c.close()


def _same_schema(java, wh, t: str) -> list:
    """Java's fields of the table equal ours (id, name, type); returns Java's [(name, type)]."""
    js = java.call("schema", warehouse=str(wh), table=f"{DB}.{t}")
    ours = _ours(wh).get_table(f"{DB}.{t}").table_schema
    assert [(f["id"], f["name"]) for f in js["fields"]] == [(f.id, f.name) for f in ours.fields]
    assert [f["type"] for f in js["fields"]] == [type_dict(f.type) for f in ours.fields]
    return [(f["name"], f["type"]) for f in js["fields"]]


@pytest.mark.parametrize("pk", [True, False], ids=["pk", "append"])
def test_java_reads_and_writes_a_table_paimon_rs_altered(java, tmp_path, request, pk):
    t, wh = _tname(request), tmp_path
    ours_create(wh, t, [("id", "INT", pa.int32()), ("a", "INT", pa.int32()), ("b", "STRING", pa.string()),
                        ("f", "FLOAT", pa.float32())],
                ["id"] if pk else [], [], {"bucket": "2"} if pk else {})
    model: dict = {}
    rows0 = [{"id": i, "a": i * 10, "b": f"b{i}", "f": i / 4} for i in range(20)]
    _write(wh, t, rows0)
    for r in rows0:
        model[r["id"]] = {"id": r["id"], "c": None, "a": r["a"], "b2": r["b"]}
    _ours(wh).alter_table(f"{DB}.{t}", [
        SchemaChange.add_column("c", pa.string(), "added by paimon_rs", Move.after("c", "id")),
        SchemaChange.rename_column("b", "b2"),
        SchemaChange.update_column_type("a", pa.int64()),
        SchemaChange.drop_column("f"),
        SchemaChange.set_option("write-buffer-size", "64 mb"),
        SchemaChange.update_comment("altered"),
    ])
    types = [ty for _n, ty in _same_schema(java, wh, t)]
    assert types == ["INT NOT NULL" if pk else "INT", "STRING", "BIGINT", "STRING"]
    rows1 = [{"id": i, "c": f"c{i}", "a": 2**40 + i, "b2": f"n{i}"} for i in range(10, 30)]
    _write(wh, t, rows1)
    for r in rows1:
        key = r["id"] if pk else ("new", r["id"])
        model[key] = r
    expected = [[r["id"], r["c"], r["a"], r["b2"]] for r in model.values()]
    check(java_read(java, wh, t), expected, types, "Java reads paimon_rs's altered table")
    # Java writes under the new schema; we read both engines' files of both schemas
    java_write(java, wh, t, [[100, "j", 7, "java"]])
    expected.append([100, "j", 7, "java"])
    check(ours_read(wh, t), expected, types, "paimon_rs reads after Java's write")
    check(java_read(java, wh, t), expected, types, "Java reads after its write")


def test_paimon_rs_alters_a_table_java_altered(java, tmp_path, request):
    """Java alters (add with a position, rename, comment), then paimon_rs alters again on top
    (widen, drop, re-add), writes; both read the same rows."""
    t, wh = _tname(request), tmp_path
    java_create(java, wh, t, [("dt", "STRING"), ("id", "INT"), ("a", "INT"), ("b", "STRING")], ["dt", "id"],
                ["dt"], {"bucket": "2"})
    java_write(java, wh, t, [["d1", i, i, f"b{i}"] for i in range(10)])
    _alter(java, wh, t, {"op": "add_column", "name": "c", "type": "INT", "comment": "by java",
                         "move": {"type": "AFTER", "field": "c", "ref": "id"}},
           {"op": "rename_column", "name": "b", "new_name": "b2"})
    java_write(java, wh, t, [["d2", i, i, i * 2, f"j{i}"] for i in range(5)])
    assert [n for n, _ in _same_schema(java, wh, t)] == ["dt", "id", "c", "a", "b2"]
    _ours(wh).alter_table(f"{DB}.{t}", [
        SchemaChange.update_column_type("c", pa.int64()),
        SchemaChange.drop_column("a"),
        SchemaChange.add_column("a", pa.string(), move=Move.first("a")),
    ])
    fields = _same_schema(java, wh, t)
    assert fields == [("a", "STRING"), ("dt", "STRING NOT NULL"), ("id", "INT NOT NULL"), ("c", "BIGINT"),
                      ("b2", "STRING")]
    _write(wh, t, [{"a": "ours", "dt": "d3", "id": 1, "c": 2**40, "b2": "o"}])
    types = [ty for _n, ty in fields]
    expected = ([[None, "d1", i, None, f"b{i}"] for i in range(10)]
                + [[None, "d2", i, i, f"j{i}"] for i in range(5)]
                + [["ours", "d3", 1, 2**40, "o"]])
    check(java_read(java, wh, t), expected, types, "Java reads after paimon_rs's alter and write")
    check(ours_read(wh, t), expected, types, "paimon_rs reads its alter over Java's")
    # the comment Java gave the column survived our alter
    assert _ours(wh).get_table(f"{DB}.{t}").table_schema.fields[3].description == "by java"


def test_java_position_and_nullability_changes_read_by_paimon_rs(java, tmp_path, request):
    t, wh = _tname(request), tmp_path
    java_create(java, wh, t, [("id", "INT"), ("a", "INT"), ("b", "STRING")], [], [], {})
    java_write(java, wh, t, [[1, 1, "x"], [2, None, "y"]])
    _alter(java, wh, t, {"op": "update_column_position", "move": {"type": "FIRST", "field": "b"}},
           {"op": "update_column_comment", "name": "a", "comment": "ca"},
           {"op": "update_comment", "comment": "tc"})
    fields = _same_schema(java, wh, t)
    table = _ours(wh).get_table(f"{DB}.{t}")
    assert table.table_schema.comment == "tc" and table.table_schema.fields[2].description == "ca"
    check(ours_read(wh, t), [["x", 1, 1], ["y", 2, None]], [ty for _n, ty in fields],
          "paimon_rs reads Java's reordered columns")


def test_strings_changed_to_integers_read_as_java_reads_them(java, tmp_path, request):
    """STRING -> BIGINT: the values of the files written before are parsed at read; Java
    (StringToNumericPrimitiveCastRule) and paimon_rs read the same numbers."""
    t, wh = _tname(request), tmp_path
    ours_create(wh, t, [("id", "INT", pa.int32()), ("s", "STRING", pa.string())], ["id"], [], {"bucket": "1"})
    values = ["12", "-7.9", "+3", "0.", "-9223372036854775808", None]
    _write(wh, t, [{"id": i, "s": v} for i, v in enumerate(values)])
    _ours(wh).alter_table(f"{DB}.{t}", [SchemaChange.update_column_type("s", pa.int64())])
    types = [ty for _n, ty in _same_schema(java, wh, t)]
    expected = [[0, 12], [1, -7], [2, 3], [3, 0], [4, -2**63], [5, None]]
    check(java_read(java, wh, t), expected, types, "Java reads the old strings as BIGINT")
    check(ours_read(wh, t), expected, types, "paimon_rs reads them as Java does")


def test_narrowed_numbers_read_as_java_reads_them(java, tmp_path, request):
    """BIGINT -> SMALLINT, DOUBLE -> INT / TINYINT, DECIMAL -> a narrower DECIMAL or INT, BIGINT ->
    a narrow DECIMAL (explicit casts): the older files' values converted as Java's cast rules
    convert them (wrap, truncate, HALF_UP, NULL past the precision), in both engines."""
    t, wh = _tname(request), tmp_path
    ours_create(wh, t, [("id", "INT", pa.int32()), ("l", "BIGINT", pa.int64()), ("d", "DOUBLE", pa.float64()),
                        ("e", "DOUBLE", pa.float64()), ("m", "DECIMAL(6, 3)", pa.decimal128(6, 3)),
                        ("n", "DECIMAL(6, 3)", pa.decimal128(6, 3)), ("k", "BIGINT", pa.int64())],
                ["id"], [], {"bucket": "1"})
    D = Decimal
    rows = [(70000, 2.75, 300.0, D("1.250"), D("123.456"), 5),
            (-129, float("nan"), -1e20, D("-1.250"), D("-2.5"), -123456),
            (2**40 + 5, -3.5, 127.9, D("999.999"), D("0.001"), 99), (None, None, None, None, None, None)]
    _write(wh, t, [{"id": i, "l": a, "d": b, "e": c, "m": m, "n": n, "k": k}
                   for i, (a, b, c, m, n, k) in enumerate(rows)])
    _ours(wh).alter_table(f"{DB}.{t}", [SchemaChange.update_column_type("l", pa.int16()),
                                        SchemaChange.update_column_type("d", pa.int32()),
                                        SchemaChange.update_column_type("e", pa.int8()),
                                        SchemaChange.update_column_type("m", "DECIMAL(4, 1)"),
                                        SchemaChange.update_column_type("n", pa.int32()),
                                        SchemaChange.update_column_type("k", "DECIMAL(4, 1)")])
    types = [ty for _n, ty in _same_schema(java, wh, t)]
    expected = [[0, 4464, 2, 44, D("1.3"), 123, D("5.0")], [1, -129, 0, 0, D("-1.3"), -2, None],
                [2, 5, -3, 127, None, 0, D("99.0")], [3, None, None, None, None, None, None]]
    check(java_read(java, wh, t), expected, types, "Java reads the narrowed numbers")
    check(ours_read(wh, t), expected, types, "paimon_rs narrows them as Java does")


def test_booleans_converted_read_as_java_reads_them(java, tmp_path, request):
    """STRING -> BOOLEAN (Java's word lists), INT -> BOOLEAN (!= 0), BOOLEAN -> INT (1 / 0)."""
    t, wh = _tname(request), tmp_path
    ours_create(wh, t, [("id", "INT", pa.int32()), ("s", "STRING", pa.string()), ("i", "INT", pa.int32()),
                        ("b", "BOOLEAN", pa.bool_())], ["id"], [], {"bucket": "1"})
    rows = [("TRUE", 0, True), ("no", -3, False), ("1", 7, None), (None, None, True)]
    _write(wh, t, [{"id": n, "s": s, "i": i, "b": b} for n, (s, i, b) in enumerate(rows)])
    _ours(wh).alter_table(f"{DB}.{t}", [SchemaChange.update_column_type("s", pa.bool_()),
                                        SchemaChange.update_column_type("i", pa.bool_()),
                                        SchemaChange.update_column_type("b", pa.int32())])
    types = [ty for _n, ty in _same_schema(java, wh, t)]
    expected = [[0, True, False, 1], [1, False, True, 0], [2, True, True, None], [3, None, None, 1]]
    check(java_read(java, wh, t), expected, types, "Java reads the converted booleans")
    check(ours_read(wh, t), expected, types, "paimon_rs converts them as Java does")
