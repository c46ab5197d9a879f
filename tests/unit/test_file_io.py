"""``Table.file_io``: pypaimon's FileIO over paimon_rs's store (local disk and S3), issue 29."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.fs as pafs
import pytest

from paimon_rs import Schema
from paimon_rs.exceptions import UnsupportedError
from paimon_rs.file_io import FileIO

pytestmark = pytest.mark.stores("local", "s3")


@pytest.fixture
def table(catalog):
    schema = Schema.from_pyarrow_schema(pa.schema([("id", pa.int64()), ("v", pa.string())]))
    catalog.create_table("db.fio", schema, False)
    t = catalog.get_table("db.fio")
    wb = t.new_batch_write_builder()
    w = wb.new_write()
    w.write_arrow(pa.table({"id": [1, 2], "v": ["a", "b"]}))
    wb.new_commit().commit(w.prepare_commit())
    w.close()
    return t


def test_reads_what_the_table_wrote(table):
    fio = table.file_io
    assert isinstance(fio, FileIO)
    root = table.table_path.rstrip("/")
    snap = json.loads(fio.read_file_utf8(f"{root}/snapshot/snapshot-1"))
    assert snap["id"] == 1
    assert fio.exists(f"{root}/snapshot") and fio.is_dir(f"{root}/snapshot")
    assert not fio.exists(f"{root}/snapshot/snapshot-9")
    names = {i.base_name for i in fio.list_status(f"{root}/snapshot")}
    assert "snapshot-1" in names
    info = fio.get_file_status(f"{root}/snapshot/snapshot-1")
    assert info.type == pafs.FileType.File and info.size == fio.get_file_size(f"{root}/snapshot/snapshot-1")
    with fio.new_input_stream(f"{root}/snapshot/snapshot-1") as s:
        assert json.loads(s.read().decode())["id"] == 1
    with pytest.raises(FileNotFoundError):
        fio.read_file_utf8(f"{root}/snapshot/snapshot-9")
    with pytest.raises(FileNotFoundError):
        fio.get_file_status(f"{root}/nothing")
    assert fio.list_status(f"{root}/nothing") == []


def test_writes_renames_and_deletes(table):
    fio = table.file_io
    d = f"{table.table_path.rstrip('/')}/extra"
    assert fio.mkdirs(d)
    p = f"{d}/a.json"
    assert fio.try_to_write_atomic(p, '{"x": 1}')
    assert not fio.try_to_write_atomic(p, '{"x": 2}')  # exists: pypaimon's rename fails
    assert fio.read_file_utf8(p) == '{"x": 1}'
    with pytest.raises(FileExistsError):
        fio.write_file(p, "y")
    fio.write_file(p, "z", overwrite=True)
    assert fio.read_file_utf8(p) == "z"
    with fio.new_output_stream(f"{d}/b.bin") as out:
        out.write(b"\x00\x01")
        out.write(b"\x02")
    assert fio.new_input_stream(f"{d}/b.bin").read_at(2, 1) == b"\x01\x02"
    with pytest.raises(RuntimeError), fio.new_output_stream(f"{d}/failed.bin") as out:
        out.write(b"partial")
        raise RuntimeError("the block fails")
    assert not fio.exists(f"{d}/failed.bin")  # written whole or not at all
    assert fio.read_file_range(f"{d}/b.bin", 1, -1) == b"\x01\x02"
    assert fio.rename(f"{d}/b.bin", f"{d}/c.bin")
    assert not fio.exists(f"{d}/b.bin") and fio.get_file_size(f"{d}/c.bin") == 3
    assert not fio.rename(f"{d}/c.bin", p)  # target exists
    assert not fio.rename(f"{d}/missing", f"{d}/m2")
    fio.copy_file(p, f"{d}/copy.json")
    assert fio.read_file_utf8(f"{d}/copy.json") == "z"
    with pytest.raises(FileExistsError):
        fio.mkdirs(p)
    if not table.table_path.startswith("s3://"):  # an object store has no empty directories
        with pytest.raises(OSError, match="not empty"):
            fio.delete(d)
    assert fio.delete(p)
    assert not fio.delete(p)
    assert fio.delete(d, recursive=True)
    assert not fio.exists(d) and not fio.exists(f"{d}/c.bin")
    # the table is untouched
    assert table.new_read_builder().new_read().to_arrow(
        table.new_read_builder().new_scan().plan().splits()).num_rows == 2


def test_refuses_what_it_cannot_do(table):
    fio = table.file_io
    with pytest.raises(UnsupportedError, match="pyarrow file system"):
        fio.filesystem  # noqa: B018
    with pytest.raises(UnsupportedError, match="table writes"):
        fio.write_parquet("x.parquet", pa.table({"a": [1]}))
