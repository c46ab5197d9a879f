"""Sort compaction (issue #28): ``table.sort_compact(order_strategy, order_by, partitions)``
rewrites a bucket-unaware append table's files clustered by order / z-order / hilbert (Java's
index bytes), in one OVERWRITE snapshot of exactly the files read; the rows stay the same and
the files hold disjoint stretches of the curve, so filters on the order columns skip files."""

from __future__ import annotations

import random
from collections import Counter
from typing import Dict, List

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from paimon_rs import Schema
from paimon_rs.exceptions import InvalidArgumentError, UnsupportedError

from unit_helpers import read, snapshots, write

SCHEMA = pa.schema([("dt", pa.string()), ("x", pa.int64()), ("y", pa.int32()),
                    ("s", pa.string()), ("d", pa.float64())])


def make(catalog, name: str, options: Dict[str, str], partitioned: bool = False):
    opts = {"bucket": "-1", "target-file-size": "8kb", **options}
    schema = Schema.from_pyarrow_schema(SCHEMA, partition_keys=["dt"] if partitioned else None,
                                        options=opts)
    catalog.create_table(f"db.{name}", schema, False)
    return catalog.get_table(f"db.{name}")


def rows(n: int, seed: int, dt: str = "a") -> pa.Table:
    r = random.Random(seed)
    xs = [r.randrange(0, 1000) for _ in range(n)]
    ys = [r.randrange(-500, 500) if r.random() > 0.05 else None for _ in range(n)]
    return pa.table({"dt": [dt] * n, "x": xs, "y": ys,
                     "s": [f"s{r.randrange(0, 50):03d}" for _ in range(n)],
                     "d": [r.uniform(-1e3, 1e3) for _ in range(n)]}, schema=SCHEMA)


def multiset(t: pa.Table) -> Counter:
    return Counter(tuple(r.values()) for r in t.to_pylist())


def table_files(catalog, table) -> List[str]:
    """The live data files' paths, from the ``$files`` system table."""
    files = catalog.get_table(f"{table.identifier}$files")
    return read(files).column("file_path").to_pylist()


def curve_keys(table, strategy: str, cols: List[str], path: str) -> List[bytes]:
    batch = pq.read_table(path).combine_chunks().to_batches()
    out: List[bytes] = []
    for b in batch:
        b = b.select([f.name for f in SCHEMA])
        out.extend(table._core.sort_index(strategy, cols, b))
    return out


@pytest.mark.parametrize("strategy,cols", [("order", ["x", "y"]), ("zorder", ["x", "y"]),
                                           ("hilbert", ["x", "y"]), ("zorder", ["s", "d", "y"])])
def test_sort_compaction_keeps_rows_and_orders_files_by_the_curve(catalog, strategy, cols):
    t = make(catalog, f"t_{strategy}_{len(cols)}", {})
    for seed in range(4):
        write(t, rows(6000, seed))
    before = read(t)
    files_before = table_files(catalog, t)
    sid = t.sort_compact(strategy, cols)
    assert sid is not None
    assert snapshots(t)[-1]["commitKind"] == "OVERWRITE"
    after = read(t)
    assert multiset(after) == multiset(before)
    files = table_files(catalog, t)
    assert len(files) > 2 and not set(files) & set(files_before)
    # every file sorted by the curve, and the files disjoint stretches of it
    ranges = []
    for f in files:
        keys = curve_keys(t, strategy, cols, f)
        assert keys == sorted(keys), f
        ranges.append((keys[0], keys[-1]))
    ranges.sort()
    for a, b in zip(ranges, ranges[1:]):
        assert a[1] <= b[0]


def test_partitions_and_concurrent_files_outside_them_stay(catalog):
    t = make(catalog, "parts", {}, partitioned=True)
    write(t, rows(500, 1, "a"))
    write(t, rows(500, 2, "b"))
    b_files = {f for f in table_files(catalog, t) if "dt=b" in f}
    before = read(t)
    assert t.sort_compact("zorder", ["x", "y"], partitions=[{"dt": "a"}]) is not None
    assert multiset(read(t)) == multiset(before)
    assert {f for f in table_files(catalog, t) if "dt=b" in f} == b_files


def test_zorder_clustering_lets_filters_skip_files(catalog):
    t = make(catalog, "skip", {"target-file-size": "8kb"})
    for seed in range(4):
        write(t, rows(6000, seed))
    pb = t.new_read_builder().new_predicate_builder()
    pred = pb.and_predicates([pb.between("x", 0, 200), pb.between("y", -500, -300)])

    def files_read() -> int:
        b = t.new_read_builder().with_filter(pred)
        return sum(len(s.file_paths) for s in b.new_scan().plan().splits())

    def exact(tab: pa.Table) -> Counter:
        c = pa.compute
        m = c.and_(c.and_(c.greater_equal(tab["x"], 0), c.less_equal(tab["x"], 200)),
                   c.and_(c.greater_equal(tab["y"], -500), c.less_equal(tab["y"], -300)))
        return multiset(tab.filter(m))

    # unsorted: every file spans the whole range
    assert files_read() == len(table_files(catalog, t))
    want = exact(read(t, predicate=pred))
    t.sort_compact("zorder", ["x", "y"])
    total = len(table_files(catalog, t))
    # 24000 rows roll every 4096 rows here: 6 files, of which the query's corner needs 1 or 2
    assert total >= 5
    assert files_read() <= 2
    assert exact(read(t, predicate=pred)) == want


def test_refusals(catalog):
    t = make(catalog, "bad", {})
    write(t, rows(10, 1))
    with pytest.raises(InvalidArgumentError, match="order_strategy"):
        t.sort_compact("random", ["x"])
    with pytest.raises(InvalidArgumentError, match="can't find column 'nope'.*dt,x,y,s,d"):
        t.sort_compact("zorder", ["nope"])
    with pytest.raises(InvalidArgumentError, match="at least two columns"):
        t.sort_compact("hilbert", ["x"])
    with pytest.raises(InvalidArgumentError, match="should not be empty"):
        t.sort_compact("order", [])
    fixed = Schema.from_pyarrow_schema(SCHEMA, options={"bucket": "2", "bucket-key": "x"})
    catalog.create_table("db.fixed", fixed, False)
    with pytest.raises(InvalidArgumentError, match="only supports bucket=-1"):
        catalog.get_table("db.fixed").sort_compact("zorder", ["x", "y"])
    # a cross-partition upsert table (the key lacks the partition key): not HASH_DYNAMIC in Java
    cross = Schema.from_pyarrow_schema(SCHEMA, partition_keys=["dt"], primary_keys=["x"],
                                       options={"bucket": "-1"})
    catalog.create_table("db.cross", cross, False)
    with pytest.raises(InvalidArgumentError, match="only supports bucket=-1.*cross-partition"):
        catalog.get_table("db.cross").sort_compact("zorder", ["x", "y"])
    nested = pa.schema([("a", pa.int64()), ("l", pa.list_(pa.int64()))])
    catalog.create_table("db.nested", Schema.from_pyarrow_schema(nested, options={"bucket": "-1"}),
                         False)
    with pytest.raises(UnsupportedError, match="'l'"):
        catalog.get_table("db.nested").sort_compact("zorder", ["a", "l"])


def test_empty_table_commits_nothing(catalog):
    t = make(catalog, "empty", {})
    assert t.sort_compact("zorder", ["x", "y"]) is None


def test_cli_sort_compaction(catalog, capsys):
    from paimon_rs.__main__ import main
    t = make(catalog, "cli", {})
    for seed in range(2):
        write(t, rows(3000, seed))
    before = read(t)
    assert main(["compact", t.table_path, "--order-strategy", "hilbert", "--order-by", "x,y"]) == 0
    assert "snapshot 3" in capsys.readouterr().out
    assert snapshots(t)[-1]["commitKind"] == "OVERWRITE"
    assert multiset(read(t)) == multiset(before)
    assert main(["compact", t.table_path, "--order-strategy", "zorder"]) == 2
    assert main(["compact", t.table_path, "--order-strategy", "zorder", "--order-by", "nope"]) == 1


def test_sort_options_are_taken_and_checked(catalog):
    t = make(catalog, "opts", {"zorder.var-length-contribution": "3",
                               "sort-compaction.local-sample.magnification": "20"})
    write(t, rows(500, 1))  # the options do not block writes
    before = read(t)
    assert t.sort_compact("zorder", ["s", "x"]) is not None
    assert multiset(read(t)) == multiset(before)
    b = read(t).to_batches()[0].select(SCHEMA.names)
    assert len(t._core.sort_index("zorder", ["s", "x"], b)[0]) == 3 + 8
    low = t.copy({"sort-compaction.local-sample.magnification": "19"})
    with pytest.raises(InvalidArgumentError, match="greater than or equal to 20"):
        low.sort_compact("zorder", ["x"])
    with pytest.raises(InvalidArgumentError, match="var-length-contribution"):
        t.copy({"zorder.var-length-contribution": "0"}).sort_compact("zorder", ["x"])


def dynamic_table(catalog, name: str, options: Dict[str, str]):
    schema = Schema.from_pyarrow_schema(SCHEMA, partition_keys=["dt"], primary_keys=["dt", "x"],
                                        options={"bucket": "-1", "dynamic-bucket.target-row-num": "500",
                                                 **options})
    catalog.create_table(f"db.{name}", schema, False)
    return catalog.get_table(f"db.{name}")


def upserts(model: Dict, n: int, seed: int, dt: str) -> pa.Table:
    r = random.Random(seed)
    t = rows(n, seed, dt)
    xs = [r.randrange(0, 3000) for _ in range(n)]
    t = t.set_column(1, "x", pa.array(xs, pa.int64()))
    for row in t.to_pylist():
        model[(row["dt"], row["x"])] = tuple(row.values())
    return t


def bucket_curve_ranges(catalog, t, strategy: str, cols: List[str], dt: str):
    """Per bucket of partition ``dt``: (first, last) curve key of its rows."""
    files = read(catalog.get_table(f"{t.identifier}$files")).to_pylist()
    keys: Dict[int, List[bytes]] = {}
    for f in files:
        if f"dt={dt}" in f["file_path"]:
            keys.setdefault(f["bucket"], []).extend(curve_keys(t, strategy, cols, f["file_path"]))
    return sorted((min(k), max(k)) for k in keys.values())


@pytest.mark.parametrize("strategy,cols", [("order", ["y"]), ("zorder", ["x", "y"]),
                                           ("hilbert", ["y", "d"])])
def test_dynamic_bucket_table_is_sorted_into_buckets(catalog, strategy, cols):
    """Java's SortCompactAction on a HASH_DYNAMIC table: the rows, sorted, go through the
    overwrite writer, so keys land in fresh buckets in sort order (each bucket a stretch of the
    curve) and the hash index is written anew: later upserts still find their key's bucket."""
    t = dynamic_table(catalog, f"dyn_{strategy}", {})
    model: Dict = {}
    for seed in range(4):
        write(t, pa.concat_tables([upserts(model, 1500, seed, "a"), upserts(model, 300, 10 + seed, "b")]))
    assert multiset(read(t)) == Counter(model.values())
    sid = t.sort_compact(strategy, cols)
    assert sid is not None and snapshots(t)[-1]["commitKind"] == "OVERWRITE"
    got = read(t)
    assert multiset(got) == Counter(model.values())
    ranges = bucket_curve_ranges(catalog, t, strategy, cols, "a")
    assert len(ranges) >= 3
    for a, b in zip(ranges, ranges[1:]):
        assert a[1] <= b[0]
    # the index was rebuilt: upserting known keys replaces them (no key in two buckets)
    write(t, upserts(model, 800, 99, "a"))
    after = read(t)
    assert after.num_rows == len(model)
    assert multiset(after) == Counter(model.values())


def test_dynamic_bucket_sort_of_one_partition_keeps_the_others(catalog):
    t = dynamic_table(catalog, "dyn_part", {})
    model: Dict = {}
    write(t, pa.concat_tables([upserts(model, 2000, 1, "a"), upserts(model, 2000, 2, "b")]))
    b_files = {f for f in table_files(catalog, t) if "dt=b" in f}
    assert t.sort_compact("zorder", ["x", "y"], partitions=[{"dt": "a"}]) is not None
    assert multiset(read(t)) == Counter(model.values())
    assert {f for f in table_files(catalog, t) if "dt=b" in f} == b_files
    write(t, upserts(model, 500, 3, "b"))
    assert read(t).num_rows == len(model)
    off = dynamic_table(catalog, "dyn_static", {"dynamic-partition-overwrite": "false"})
    write(off, upserts({}, 100, 1, "a"))
    with pytest.raises(UnsupportedError, match="dynamic-partition-overwrite"):
        off.sort_compact("zorder", ["x", "y"], partitions=[{"dt": "a"}])
