"""Clustering at write time (issue #28): ``clustering.columns`` / ``clustering.strategy`` (Java's
fallback keys ``sink.clustering.by-columns`` / ``sink.clustering.strategy``) on a bucket-unaware
append table sort the rows of each write, per partition, by the curve before the files are cut:
every file is sorted and the files of a write hold disjoint stretches of the curve, also when
the write buffer spills; the rows are unchanged. Tables Java's sink skips are refused."""

from __future__ import annotations

from typing import Dict, List, Tuple

import pyarrow as pa
import pytest
from test_sort_compaction import SCHEMA, curve_keys, multiset, rows, table_files

from paimon_rs import Schema
from paimon_rs.exceptions import InvalidArgumentError, UnsupportedError

from unit_helpers import read, write


def make(catalog, name: str, options: Dict[str, str], partitioned: bool = False, pk=None):
    opts = {"bucket": "-1", "target-file-size": "8kb", **options}
    schema = Schema.from_pyarrow_schema(SCHEMA, partition_keys=["dt"] if partitioned else None,
                                        primary_keys=pk, options=opts)
    catalog.create_table(f"db.{name}", schema, False)
    return catalog.get_table(f"db.{name}")


def ranges(t, strategy: str, cols: List[str], files: List[str]) -> List[Tuple[bytes, bytes]]:
    """Each file's first and last curve key; asserts every file is sorted by the curve."""
    out = []
    for f in files:
        keys = curve_keys(t, strategy, cols, f)
        assert keys == sorted(keys), f
        out.append((keys[0], keys[-1]))
    return sorted(out)


def overlaps(rs: List[Tuple[bytes, bytes]]) -> int:
    return sum(1 for a, b in zip(rs, rs[1:]) if a[1] > b[0])


def one_write(t, batches: List[pa.Table]) -> None:
    w = t.new_batch_write_builder()
    tw, tc = w.new_write(), w.new_commit()
    for b in batches:
        tw.write_arrow(b)
    tc.commit(tw.prepare_commit())
    tw.close()
    tc.close()


@pytest.mark.parametrize("options,strategy,cols", [
    ({"clustering.columns": "x"}, "order", ["x"]),
    ({"clustering.columns": "y"}, "order", ["y"]),  # nullable: nulls first
    ({"clustering.columns": "x,y"}, "zorder", ["x", "y"]),
    ({"clustering.columns": "x, y", "clustering.strategy": "hilbert"}, "hilbert", ["x", "y"]),
    ({"clustering.columns": "x,y", "clustering.strategy": "order"}, "order", ["x", "y"]),
    # Java's fallback keys
    ({"sink.clustering.by-columns": "s,d,y", "sink.clustering.strategy": "zorder"}, "zorder",
     ["s", "d", "y"]),
])
def test_a_clustered_write_cuts_sorted_disjoint_files(catalog, options, strategy, cols):
    keys = "sink" if "sink.clustering.by-columns" in options else "core"
    name = f"c_{strategy}_{'_'.join(cols)}_{len(options)}_{keys}"
    t = make(catalog, name, options)
    data = [rows(6000, seed) for seed in range(4)]
    one_write(t, data)
    assert multiset(read(t)) == multiset(pa.concat_tables(data))
    files = table_files(catalog, t)
    assert len(files) > 2
    assert overlaps(ranges(t, strategy, cols, files)) == 0


def test_without_clustering_files_overlap(catalog):
    """The baseline the clustered tests beat: an unclustered write's files span the curve."""
    t = make(catalog, "plain", {})
    one_write(t, [rows(6000, seed) for seed in range(4)])
    files = table_files(catalog, t)
    rs = [(min(k), max(k)) for k in (curve_keys(t, "zorder", ["x", "y"], f) for f in files)]
    assert overlaps(sorted(rs)) == len(files) - 1


def test_the_sort_spills_under_a_small_write_buffer(catalog):
    t = make(catalog, "spilled", {"clustering.columns": "x,y", "write-buffer-size": "256kb",
                                  "target-file-size": "64kb"})
    data = [rows(2000, seed) for seed in range(20)]
    w = t.new_batch_write_builder()
    tw, tc = w.new_write(), w.new_commit()
    for b in data:
        tw.write_arrow(b)
        assert tw._core.memory_size() <= 256 * 1024 + b.get_total_buffer_size() * 2
    count, spill_dir = tw._core.spill_info()
    assert count > 2 and spill_dir is not None
    tc.commit(tw.prepare_commit())
    tw.close()
    tc.close()
    assert multiset(read(t)) == multiset(pa.concat_tables(data))
    files = table_files(catalog, t)
    assert len(files) > 2
    assert overlaps(ranges(t, "zorder", ["x", "y"], files)) == 0


def test_without_spilling_each_flush_is_a_sorted_run(catalog):
    """``write-buffer-spillable = false``: a full buffer is written out sorted, so every file
    is sorted (each flush's run here is smaller than a file, so the files overlap)."""
    t = make(catalog, "nospill", {"clustering.columns": "x", "write-buffer-size": "256kb",
                                  "write-buffer-spillable": "false", "target-file-size": "64kb"})
    data = [rows(2000, seed) for seed in range(20)]
    one_write(t, data)
    assert multiset(read(t)) == multiset(pa.concat_tables(data))
    files = table_files(catalog, t)
    assert len(files) > 2
    ranges(t, "order", ["x"], files)


def test_each_partition_is_clustered(catalog):
    t = make(catalog, "parts", {"clustering.columns": "x,y"}, partitioned=True)
    data = [rows(6000, 1, "a"), rows(6000, 2, "b")]
    one_write(t, data)
    assert multiset(read(t)) == multiset(pa.concat_tables(data))
    for dt in ("a", "b"):
        files = [f for f in table_files(catalog, t) if f"dt={dt}" in f]
        assert len(files) > 1
        assert overlaps(ranges(t, "zorder", ["x", "y"], files)) == 0


@pytest.mark.parametrize("options,pk,error,match", [
    ({"clustering.columns": "x"}, ["x"], UnsupportedError, "bucket unaware table without primary"),
    ({"clustering.columns": "x", "bucket": "2", "bucket-key": "x"}, None, UnsupportedError,
     "bucket unaware table without primary"),
    ({"clustering.columns": "x,nope"}, None, InvalidArgumentError,
     "should contains all clustering column names"),
    ({"clustering.columns": "x", "sink.clustering.sample-factor": "10"}, None,
     InvalidArgumentError, "minimum allowed sink.clustering.sample-factor is 20"),
    ({"clustering.columns": "x", "sink.clustering.sort-in-cluster": "false"}, None,
     UnsupportedError, "sort-in-cluster"),
    ({"clustering.columns": "x", "clustering.strategy": "hilbert"}, None, InvalidArgumentError,
     "hilbert"),
    ({"clustering.columns": "x", "clustering.strategy": "spiral"}, None, InvalidArgumentError,
     "spiral"),
])
def test_what_cannot_be_clustered_is_refused(catalog, options, pk, error, match):
    name = f"bad_{abs(hash(tuple(sorted(options.items())))) % 10**8}_{bool(pk)}"
    opts = {k: v for k, v in options.items() if k != "bucket"}
    if pk:
        opts["bucket"] = "2"
    elif "bucket" in options:
        opts["bucket"] = options["bucket"]
    try:
        t = make(catalog, name, opts, pk=pk)
    except (UnsupportedError, InvalidArgumentError) as e:  # refused when the table is created
        assert match in str(e)
        return
    with pytest.raises(error, match=match):
        write(t, rows(100, 1))
    assert read(t).num_rows == 0
