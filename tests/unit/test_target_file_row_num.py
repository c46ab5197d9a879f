"""`target-file-row-num` (Java's CoreOptions, pypaimon's data-evolution writers): a data file
written rolls at that many rows, or at `target-file-size` first; compaction rolls by size only."""

from __future__ import annotations

import pyarrow as pa
import pytest

from paimon_rs import InvalidArgumentError, Schema

SCHEMA = pa.schema([("id", pa.int32()), ("name", pa.string())])
DE = {"row-tracking.enabled": "true", "data-evolution.enabled": "true"}


def make(catalog, name, options, primary_keys=None):
    catalog.create_table(f"db.{name}", Schema.from_pyarrow_schema(
        SCHEMA, primary_keys=primary_keys, options=options), False)
    return catalog.get_table(f"db.{name}")


def write(t, ids, name="n"):
    wb = t.new_batch_write_builder()
    w = wb.new_write()
    w.write_arrow(pa.table({"id": ids, "name": [f"{name}{i}" for i in ids]}, schema=SCHEMA))
    msgs = w.prepare_commit()
    wb.new_commit().commit(msgs)
    w.close()
    return sorted(f.row_count for m in msgs for f in m.new_files)


def read(t):
    rb = t.new_read_builder()
    out = rb.new_read().to_arrow(rb.new_scan().plan().splits())
    return sorted(zip(out["id"].to_pylist(), out["name"].to_pylist()))


@pytest.mark.parametrize("options", [{}, DE, {"bucket": "1", "bucket-key": "id"}],
                         ids=["append", "data-evolution", "bucketed-append"])
def test_append_files_roll_at_the_row_limit(catalog, options):
    t = make(catalog, "a", {**options, "target-file-row-num": "3"})
    assert write(t, list(range(10))) == [1, 3, 3, 3]
    assert write(t, list(range(10, 16))) == [3, 3]
    assert read(t) == [(i, f"n{i}") for i in range(16)]


def test_below_the_limit_and_unset_make_one_file(catalog):
    assert write(make(catalog, "b", {"target-file-row-num": "100"}), list(range(10))) == [10]
    assert write(make(catalog, "c", {}), list(range(5000))) == [5000]


def test_a_batch_larger_than_a_chunk_is_cut_exactly(catalog):
    t = make(catalog, "big", {"target-file-row-num": "5000"})
    assert write(t, list(range(12_345))) == [2345, 5000, 5000]


def test_size_rolls_first(catalog):
    # the size is checked every 4096 rows: files of a chunk each, far below the row limit
    t = make(catalog, "s", {"target-file-row-num": "9000", "target-file-size": "64 kb"})
    wb = t.new_batch_write_builder()
    w = wb.new_write()
    ids = list(range(20_000))
    w.write_arrow(pa.table({"id": ids, "name": [f"{i * 7919:x}" * 20 for i in ids]}, schema=SCHEMA))
    msgs = w.prepare_commit()
    w.close()
    counts = [f.row_count for m in msgs for f in m.new_files]
    assert len(counts) > 3 and sum(counts) == 20_000 and max(counts) <= 4096


def test_primary_key_writes_roll_and_compaction_does_not(catalog):
    t = make(catalog, "pk", {"bucket": "1", "target-file-row-num": "4",
                             "write-only": "true"}, primary_keys=["id"])
    assert write(t, list(range(10))) == [2, 4, 4]
    assert write(t, list(range(5, 15)), name="m") == [2, 4, 4]
    assert read(t) == [(i, f"n{i}") for i in range(5)] + [(i, f"m{i}") for i in range(5, 15)]
    t.compact(full=True)
    files = [f for s in t.new_read_builder().new_scan().plan().splits() for f in s.files]
    assert [f.row_count for f in files] == [15]
    assert read(t) == [(i, f"n{i}") for i in range(5)] + [(i, f"m{i}") for i in range(5, 15)]


@pytest.mark.parametrize("value", ["0", "-3"])
def test_a_limit_below_one_is_refused(catalog, value):
    with pytest.raises(InvalidArgumentError, match="target-file-row-num"):
        make(catalog, "z", {"target-file-row-num": value})
