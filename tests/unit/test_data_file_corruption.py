"""Issue 9, item 8: a damaged data file gives an error naming the file, never wrong rows.

A primary-key table (two overlapping commits, so the read merges) and an append table are
written, then one data file of each is damaged: a byte flipped at deterministic offsets (a seeded
sample of the whole file plus every 4th byte of the footer region), truncated, emptied. Each read
must raise ``CorruptFileError`` naming the file or return exactly the original rows. The outcome
counts are printed (``pytest -s``) for benches/RESULTS.md.
"""

from __future__ import annotations

import glob
import os
import random
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pytest

import paimon_rs
from paimon_rs import Schema

from unit_helpers import read, write

ROWS = 3000
SAMPLE = 120  # seeded offsets over the whole file
FOOTER = 512  # every 4th byte of the last FOOTER bytes (footer, its length, the magic)


def _data(lo: int, hi: int, tag: str) -> pa.Table:
    ids = list(range(lo, hi))
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "name": pa.array([f"{tag}-{i:06d}-{(i * 7919) % 1000:03d}" for i in ids]),
        "price": pa.array([i * 0.25 for i in ids], pa.float64()),
    })


def _table(catalog, name: str, pk: bool):
    schema = Schema.from_pyarrow_schema(
        pa.schema([("id", pa.int64()), ("name", pa.string()), ("price", pa.float64())]),
        primary_keys=["id"] if pk else None,
        options={"bucket": "1"} if pk else {"bucket": "-1"},
    )
    catalog.create_table(f"db.{name}", schema, False)
    return catalog.get_table(f"db.{name}")


def _offsets(size: int) -> list[int]:
    rng = random.Random(8)
    sample = rng.sample(range(size), min(SAMPLE, size))
    footer = range(max(0, size - FOOTER), size, 4)
    return sorted(set(sample) | set(footer))


def _damage_outcomes(label: str, table, path: str, want: pa.Table) -> Counter:
    """Flip, truncate and empty `path`; classify each read. Restores the file afterwards."""
    original = Path(path).read_bytes()
    name = os.path.basename(path)
    outcomes: Counter = Counter()
    wrong: list[str] = []

    def attempt(damage: str, content: bytes) -> None:
        Path(path).write_bytes(content)
        try:
            got = read(table, sort=["id"])
        except paimon_rs.CorruptFileError as e:
            assert name in str(e), f"{damage}: error does not name the file: {e}"
            outcomes["CorruptFileError"] += 1
            return
        if got.equals(want):
            outcomes["original rows"] += 1
        else:
            outcomes["WRONG ROWS"] += 1
            wrong.append(damage)

    try:
        for off in _offsets(len(original)):
            flipped = bytearray(original)
            flipped[off] ^= 0xFF
            attempt(f"flip at {off}", bytes(flipped))
        for keep in (0, 4, len(original) // 2, len(original) - 8, len(original) - 1):
            attempt(f"truncated to {keep}", original[:keep])
    finally:
        Path(path).write_bytes(original)
    print(f"\n{label} data file, {len(original)} bytes, {sum(outcomes.values())} damages: "
          f"{dict(outcomes)}; wrong rows at {wrong[:10]}")
    assert got_back(table, want)
    assert not wrong, f"silently wrong rows for {len(wrong)} damages: {wrong[:10]}"
    return outcomes


def got_back(table, want: pa.Table) -> bool:
    return read(table, sort=["id"]).equals(want)


def _newest_data_file(table_dir: Path) -> str:
    files = [f for f in glob.glob(str(table_dir / "bucket-*" / "data-*"))]
    assert files, f"no data file under {table_dir}"
    return max(files, key=os.path.getmtime)


def test_damaged_primary_key_file_is_an_error_or_original_rows(catalog, tmp_path) -> None:
    t = _table(catalog, "pk", pk=True)
    write(t, _data(0, ROWS, "a"))
    write(t, _data(ROWS // 2, ROWS + ROWS // 2, "b"))  # overlaps: the read merges two runs
    want = read(t, sort=["id"])
    assert want.num_rows == ROWS + ROWS // 2
    path = _newest_data_file(tmp_path / "wh" / "db.db" / "pk")
    _damage_outcomes("primary-key", t, path, want)


def test_damaged_append_file_is_an_error_or_original_rows(catalog, tmp_path) -> None:
    t = _table(catalog, "ap", pk=False)
    write(t, _data(0, ROWS, "a"))
    want = read(t, sort=["id"])
    path = _newest_data_file(tmp_path / "wh" / "db.db" / "ap")
    _damage_outcomes("append", t, path, want)


@pytest.mark.parametrize("pk", [True, False])
def test_missing_data_file_names_the_file(catalog, tmp_path, pk: bool) -> None:
    name = "pk" if pk else "ap"
    t = _table(catalog, name, pk=pk)
    write(t, _data(0, 100, "a"))
    path = _newest_data_file(tmp_path / "wh" / "db.db" / name)
    os.remove(path)
    with pytest.raises(paimon_rs.CorruptFileError, match=os.path.basename(path)):
        read(t)
