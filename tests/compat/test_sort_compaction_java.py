"""Sort compaction against Java Paimon (issue #28): our z-order and hilbert index bytes equal
Java's ``ZIndexer`` / ``HilbertIndexer`` for every atomic type (nulls and extreme values
included), and Java reads a table we sort-compacted (row multiset unchanged)."""

from __future__ import annotations

import base64
import random
from collections import Counter

import pyarrow as pa
import pytest

from paimon_rs import CatalogFactory, Schema

import java_values as jv
from java_env import JavaPaimon

pytestmark = pytest.mark.java

DB = "db"
NESTED = ("ARRAY", "MAP", "ROW", "MULTISET")
ATOMIC = [tc for tc in jv.TYPES if jv.root(tc.ptype) not in NESTED]
ROWS = 80


def _rows(rng: random.Random) -> list:
    out = []
    for _ in range(ROWS):
        row = [rng.randint(-1000, 1000) if rng.random() > 0.1 else None]
        row += [None if rng.random() < 0.1 else tc.gen(rng) for tc in ATOMIC]
        out.append(row)
    return out


@pytest.fixture(scope="module")
def typed_table(java: JavaPaimon, tmp_path_factory):
    """A Java-created append table with `k INT` and one column per atomic type, and rows."""
    wh = tmp_path_factory.mktemp("sortidx")
    names = ["k"] + [f"c_{tc.id}" for tc in ATOMIC]
    ptypes = ["INT"] + [tc.ptype for tc in ATOMIC]
    java.call("create_table", warehouse=str(wh), table=f"{DB}.idx",
              fields=[{"name": n, "type": t} for n, t in zip(names, ptypes)], primary_keys=[],
              partition_keys=[], table_options={"bucket": "-1"})
    rows = _rows(random.Random(28))
    table = CatalogFactory.create({"warehouse": str(wh)}).get_table(f"{DB}.idx")
    schema = table.arrow_schema
    batch = jv.to_arrow(rows, names, [f.type for f in schema]).to_batches()[0]
    return wh, table, rows, batch


def _java_index(java: JavaPaimon, wh, rows: list, strategy: str, cols: list, var_size: int = 8) -> list:
    got = java.call("sort_index", warehouse=str(wh), table=f"{DB}.idx", strategy=strategy,
                    columns=cols, rows=rows, var_size=var_size)
    return [base64.b64decode(b) for b in got]


@pytest.mark.parametrize("type_id", [tc.id for tc in ATOMIC])
def test_index_bytes_equal_java(java, typed_table, type_id):
    wh, table, rows, batch = typed_table
    col = f"c_{type_id}"
    for strategy, cols in [("zorder", [col]), ("zorder", [col, "k"]), ("hilbert", [col, "k"]),
                           ("hilbert", ["k", col])]:
        ours = table._core.sort_index(strategy, cols, batch)
        theirs = _java_index(java, wh, rows, strategy, cols)
        for i, (a, b) in enumerate(zip(ours, theirs)):
            assert a == b, f"{strategy} {cols} row {i} {rows[i]}: ours {a.hex()} java {b.hex()}"
        assert len(ours) == len(theirs) == ROWS


def test_index_bytes_equal_java_many_columns_and_var_length(java, typed_table):
    wh, table, rows, batch = typed_table
    cols = ["c_string", "c_bigint", "c_double", "c_varbinary_30", "c_decimal_38_10", "c_timestamp_9",
            "c_boolean", "c_date", "c_char_5"]
    for strategy, var_size in [("zorder", 8), ("zorder", 3), ("zorder", 13), ("hilbert", 8)]:
        t = table.copy({"zorder.var-length-contribution": str(var_size)})
        ours = t._core.sort_index(strategy, cols, batch)
        assert ours == _java_index(java, wh, rows, strategy, cols, var_size), (strategy, var_size)
    # nine hilbert dimensions: Java cuts the 64-byte index to its first 63 bytes
    assert all(len(k) == 63 for k in table._core.sort_index("hilbert", cols, batch))


SCHEMA = pa.schema([("dt", pa.string()), ("x", pa.int64()), ("y", pa.int32()), ("s", pa.string())])


def _table(wh, options: dict, pk=None):
    cat = CatalogFactory.create({"warehouse": str(wh)})
    cat.create_database(DB, True)
    cat.create_table(f"{DB}.t", Schema.from_pyarrow_schema(SCHEMA, ["dt"], pk, options), False)
    return cat.get_table(f"{DB}.t")


def _random_rows(rng: random.Random, n: int, xs: int = 1000) -> list:
    return [[rng.choice(["a", "b"]), rng.randrange(xs), rng.randrange(-99, 99) if rng.random() > 0.1 else None,
             f"s{rng.randrange(40)}"] for _ in range(n)]


def _ours_write(t, rows: list) -> None:
    w = t.new_batch_write_builder()
    tw, tc = w.new_write(), w.new_commit()
    tw.write_arrow(jv.to_arrow(rows, SCHEMA.names, list(SCHEMA.types)))
    tc.commit(tw.prepare_commit())
    tw.close()
    tc.close()


def _ours_read(t) -> Counter:
    rb = t.new_read_builder()
    return Counter(tuple(r) for r in jv.from_arrow(rb.new_read().to_arrow(rb.new_scan().plan().splits())))


def _java_read(java, wh) -> Counter:
    return Counter(tuple(r) for r in java.call("read", warehouse=str(wh), table=f"{DB}.t")["rows"])


@pytest.mark.parametrize("strategy", ["order", "zorder", "hilbert"])
def test_java_reads_sort_compacted_table(java, tmp_path, strategy):
    wh = tmp_path / "wh"
    t = _table(wh, {"bucket": "-1", "target-file-size": "8kb"})
    rng = random.Random(7)
    model: Counter = Counter()
    for _c in range(3):
        rows = _random_rows(rng, 3000)
        model.update(tuple(r) for r in rows)
        _ours_write(t, rows)
    # Java appends a commit too: its files are sorted with ours
    jrows = [["a", 5000 + i, i, "java"] for i in range(50)]
    java.call("write", warehouse=str(wh), table=f"{DB}.t", commits=[{"rows": jrows}])
    model.update(tuple(r) for r in jrows)
    assert t.sort_compact(strategy, ["x", "y"]) is not None
    assert _java_read(java, wh) == model
    assert _ours_read(t) == model


@pytest.mark.parametrize("strategy", ["order", "zorder", "hilbert"])
def test_java_reads_a_table_clustered_at_write_time(java, tmp_path, strategy):
    """``clustering.columns`` (write/clustering.rs): our write sorts each partition's rows by the
    curve before cutting files; Java reads the rows unchanged and appends beside them."""
    wh = tmp_path / "wh"
    t = _table(wh, {"bucket": "-1", "target-file-size": "8kb", "clustering.columns": "x,y",
                    "clustering.strategy": strategy})
    rows = _random_rows(random.Random(11), 6000)
    model = Counter(tuple(r) for r in rows)
    _ours_write(t, rows)
    jrows = [["a", 5000 + i, i, "java"] for i in range(50)]
    java.call("write", warehouse=str(wh), table=f"{DB}.t", commits=[{"rows": jrows}])
    model.update(tuple(r) for r in jrows)
    assert _java_read(java, wh) == model
    assert _ours_read(t) == model


def test_java_reads_and_continues_a_sort_compacted_dynamic_bucket_table(java, tmp_path):
    """Sort compaction of a dynamic-bucket primary-key table (Java's SortCompactAction on a
    HASH_DYNAMIC table): the keys move to fresh buckets in sort order with a rebuilt hash index.
    Java reads the rows unchanged, and its upserts of known keys find their new buckets (no key
    in two buckets: Java's read still has one row per key)."""
    wh = tmp_path / "wh"
    t = _table(wh, {"bucket": "-1", "dynamic-bucket.target-row-num": "200"}, pk=["dt", "x"])
    rng = random.Random(5)
    model: dict = {}

    def batch(n: int) -> list:
        rows = _random_rows(rng, n, xs=1500)
        model.update({(r[0], r[1]): tuple(r) for r in rows})
        return rows

    for _c in range(2):
        _ours_write(t, batch(1500))
    java.call("write", warehouse=str(wh), table=f"{DB}.t", commits=[{"rows": batch(300)}])
    assert t.sort_compact("zorder", ["x", "y"]) is not None
    assert _java_read(java, wh) == Counter(model.values())
    java.call("write", warehouse=str(wh), table=f"{DB}.t", commits=[{"rows": batch(600)}])
    assert _java_read(java, wh) == Counter(model.values())
    assert _ours_read(t) == Counter(model.values())


def test_java_reads_and_continues_a_sort_compacted_append_dv_table(java, tmp_path):
    """Deletion vectors (paimon-behaviour.md §16): after our deletes, Java deletes too, then our
    sort compaction drops the marked rows and the partitions' index files; Java reads the rows
    unchanged, then appends and deletes through its own vectors on the sorted files."""
    wh = tmp_path / "wh"
    t = _table(wh, {"bucket": "-1", "target-file-size": "8kb", "deletion-vectors.enabled": "true"})
    rng = random.Random(9)
    rows = _random_rows(rng, 4000)
    model = Counter(tuple(r) for r in rows)
    _ours_write(t, rows)
    t.delete("x < 100")
    java.call("dv_delete", warehouse=str(wh), table=f"{DB}.t",
              filter={"op": "greater_or_equal", "field": "x", "value": 950})
    model = Counter({r: n for r, n in model.items() if 100 <= r[1] < 950})
    assert _ours_read(t) == model
    assert t.sort_compact("zorder", ["x", "y"]) is not None
    assert _java_read(java, wh) == model
    jrows = [["a", 5000 + i, i, "java"] for i in range(50)]
    java.call("write", warehouse=str(wh), table=f"{DB}.t", commits=[{"rows": jrows}])
    model.update(tuple(r) for r in jrows)
    java.call("dv_delete", warehouse=str(wh), table=f"{DB}.t",
              filter={"op": "between", "field": "x", "low": 400, "high": 450})
    model = Counter({r: n for r, n in model.items() if not 400 <= r[1] <= 450})
    assert _java_read(java, wh) == model
    assert _ours_read(t) == model


def test_java_reads_and_continues_a_sort_compacted_dynamic_dv_table(java, tmp_path):
    """A dynamic-bucket primary-key table with deletion vectors: Java reads our sort compaction
    (merged with the vectors applied, one row per key) unchanged, and its upserts and deletes
    of known keys land on the sorted buckets."""
    wh = tmp_path / "wh"
    t = _table(wh, {"bucket": "-1", "deletion-vectors.enabled": "true", "dynamic-bucket.target-row-num": "300"},
               pk=["dt", "x"])
    rng = random.Random(6)
    model: dict = {}

    def batch(n: int) -> list:
        rows = _random_rows(rng, n, xs=1200)
        model.update({(r[0], r[1]): tuple(r) for r in rows})
        return rows

    for _c in range(2):
        _ours_write(t, batch(1000))
    java.call("write", warehouse=str(wh), table=f"{DB}.t", commits=[{"rows": batch(300)}])
    assert _java_read(java, wh) == Counter(model.values())
    assert t.sort_compact("hilbert", ["x", "y"]) is not None
    assert _java_read(java, wh) == Counter(model.values())
    upserts = batch(200)
    drows = [list(model.pop(k)) for k in sorted(model)[:20]]  # deleted after the upserts
    java.call("write", warehouse=str(wh), table=f"{DB}.t",
              commits=[{"rows": upserts}, {"rows": drows, "kinds": ["-D"] * len(drows)}])
    assert _java_read(java, wh) == Counter(model.values())
    assert _ours_read(t) == Counter(model.values())
