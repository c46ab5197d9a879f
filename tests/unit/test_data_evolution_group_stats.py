"""A data-evolution plan under a filter on data columns prunes row-id groups of several files
by their merged statistics, as pypaimon 2.1.0's ``DataEvolutionGroupStatsFilter`` (each column's
stats from the newest file holding it for the whole group): before, such a group was always
kept, so ``Split.row_count`` counted groups pypaimon's plan leaves out
(tests/compat/test_pypaimon_data_evolution_group_stats.py compares the two)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from paimon_rs import Schema

from unit_helpers import commit_columns

DE = {"row-tracking.enabled": "true", "data-evolution.enabled": "true"}
SCH = pa.schema([("id", pa.int64()), ("a", pa.int64()), ("b", pa.string())])


@pytest.fixture
def table(catalog):
    """Group 0 (row ids 0..9: ids 0..9, `a` updated to 100..109 by a second file) and group 1
    (row ids 10..19, one whole file: ids and `a` 10..19)."""
    catalog.create_table("db.g", Schema.from_pyarrow_schema(SCH, options=DE), False)
    t = catalog.get_table("db.g")
    for lo in (0, 10):
        ids = pa.array(range(lo, lo + 10), pa.int64())
        commit_columns(t, pa.table({"id": ids, "a": ids,
                                    "b": [f"v{i}" for i in range(lo, lo + 10)]}, schema=SCH))
    commit_columns(t, pa.table({"a": pa.array(range(100, 110), pa.int64())}), ["a"], 0)
    return t


@pytest.mark.parametrize("flt, counts, rows", [
    (None, [30], 20),
    ("id > 15", [10], 4),          # group 0's ids (its whole-row file) are 0..9
    ("a > 105", [20], 4),          # group 0's `a` is the update's 100..109
    ("a < 5", [], 0),              # the whole-row file's 0..9 of `a` is overridden
    ("a < 5 OR id = 3", [20], 1),
    ("b = 'v05'", [20], 0),        # within group 0's v0..v9, not group 1's v10..v19
    ("a IS NULL", [], 0),
])
def test_groups_pruned_by_merged_stats(table, flt, counts, rows):
    rb = table.new_read_builder()
    if flt:
        rb = rb.with_filter(flt)
    splits = rb.new_scan().plan().splits()
    assert [s.row_count for s in splits] == counts
    assert rb.new_read().to_arrow(splits).num_rows == rows
