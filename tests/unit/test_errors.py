"""Bad input gets a clear error naming what is wrong, and nothing of it reaches the table."""

from __future__ import annotations

import glob
import os

import pyarrow as pa
import pytest

import paimon_rs
from paimon_rs import CatalogFactory, Schema

from unit_helpers import PK_SCHEMA, read, write


def good_rows():
    return pa.table({"dt": ["a"], "id": [1], "name": ["x"], "price": [1.0]}, schema=PK_SCHEMA)


def test_exception_tree():
    assert issubclass(paimon_rs.TableNotFoundError, FileNotFoundError)
    assert issubclass(paimon_rs.SchemaMismatchError, ValueError)
    assert issubclass(paimon_rs.UnsupportedError, NotImplementedError)
    for e in [paimon_rs.TableNotFoundError, paimon_rs.SchemaMismatchError, paimon_rs.CommitConflictError,
              paimon_rs.CorruptFileError, paimon_rs.UnsupportedError]:
        assert issubclass(e, paimon_rs.PaimonRsError)


def test_catalog_errors(catalog, tmp_path):
    with pytest.raises(paimon_rs.TableNotFoundError, match="db.nope"):
        catalog.get_table("db.nope")
    with pytest.raises(paimon_rs.DatabaseNotFoundError):
        catalog.create_table("nodb.t", Schema.from_pyarrow_schema(pa.schema([("a", pa.int32())])), False)
    with pytest.raises(paimon_rs.InvalidArgumentError, match="database.table"):
        catalog.get_table("no_dot")
    s = Schema.from_pyarrow_schema(pa.schema([("a", pa.int32())]))
    catalog.create_table("db.a", s, False)
    catalog.create_table("db.a", s, True)
    with pytest.raises(paimon_rs.TableAlreadyExistsError):
        catalog.create_table("db.a", s, False)
    assert catalog.list_tables("db") == ["a"]
    with pytest.raises(paimon_rs.UnsupportedError):
        CatalogFactory.create({"warehouse": "hdfs://namenode/wh"})  # s3:// is served (issue 14)


@pytest.mark.parametrize("options,exc,match", [
    ({"dynamic-bucket.target-row-num": "0"}, paimon_rs.InvalidArgumentError, "dynamic-bucket.target-row-num"),
    ({"dynamic-bucket.max-buckets": "0"}, paimon_rs.InvalidArgumentError, "dynamic-bucket.max-buckets"),
    # a Paimon option paimon_rs does not implement; an unknown key of Paimon's namespaces
    # (a user's own `no.such.option` is kept: test_options_strict.py)
    ({"bucket": "2", "snapshot.clean-empty-directories": "true"}, paimon_rs.UnsupportedError,
     "snapshot.clean-empty-directories"),
    ({"bucket": "2", "snapshot.no-such-option": "1"}, paimon_rs.InvalidArgumentError, "snapshot.no-such-option"),
    ({"bucket": "two"}, paimon_rs.InvalidArgumentError, "'bucket'"),
    ({"bucket": "2", "write-buffer-size": "lots"}, paimon_rs.InvalidArgumentError, "write-buffer-size"),
    ({"bucket": "2", "deletion-vectors.enabled": "true", "merge-engine": "first-row"}, paimon_rs.InvalidArgumentError,
     "does not need deletion vectors"),
    # Java's refusals of the full-compaction producer (SchemaValidation), with its messages
    ({"bucket": "2", "changelog-producer": "full-compaction", "merge-engine": "first-row"},
     paimon_rs.InvalidArgumentError, "Only support 'none' and 'lookup' changelog-producer"),
    ({"bucket": "2", "changelog-producer": "full-compaction", "deletion-vectors.enabled": "true"},
     paimon_rs.InvalidArgumentError, "NONE/INPUT/LOOKUP"),
])
def test_options_refused_at_create(catalog, options, exc, match):
    s = Schema.from_pyarrow_schema(PK_SCHEMA, partition_keys=["dt"], primary_keys=["dt", "id"], options=options)
    with pytest.raises(exc, match=match):
        catalog.create_table("db.o", s, False)
    assert "o" not in catalog.list_tables("db")


def test_bad_schemas(catalog):
    with pytest.raises(paimon_rs.SchemaMismatchError, match="'nope'"):
        catalog.create_table("db.s", Schema.from_pyarrow_schema(
            PK_SCHEMA, primary_keys=["nope"], options={"bucket": "1"}), False)


@pytest.mark.parametrize("data,match", [
    (pa.table({"dt": ["a"], "id": [1], "name": ["x"]}), "missing column 'price'"),
    (pa.table({"dt": ["a"], "id": [1], "name": ["x"], "price": [1.0], "extra": [1]}), "unknown column 'extra'"),
    (pa.table({"dt": ["a"], "id": ["1"], "name": ["x"], "price": [1.0]}), "column 'id'"),
    (pa.table({"dt": ["a"], "id": pa.array([None], pa.int64()), "name": ["x"], "price": [1.0]}),
     "column 'id' is a primary-key column"),
    (pa.table({"dt": pa.array([None], pa.string()), "id": [1], "name": ["x"], "price": [1.0]}), "column 'dt'"),
])
def test_bad_batches_are_refused_and_nothing_lands(pk_table, data, match):
    write(pk_table, good_rows())
    wb = pk_table.new_batch_write_builder()
    w = wb.new_write()
    w.write_arrow(pa.table({"dt": ["a"], "id": [2], "name": ["y"], "price": [2.0]}))
    with pytest.raises(paimon_rs.SchemaMismatchError, match=match) as e:
        w.write_arrow(data)
    # pypaimon's words first (its users match them), then what exactly does not fit
    assert str(e.value).startswith("Input schema isn't consistent with table schema and write cols. ")
    with pytest.raises(paimon_rs.SchemaMismatchError, match="^Input schema isn't consistent"):
        w.write_pandas(data.to_pandas())
    w.close()  # closed without commit
    assert read(pk_table).num_rows == 1
    assert pk_table.latest_snapshot_id() == 1


def test_batch_with_one_bad_record_batch_leaves_nothing(pk_table):
    good = good_rows().to_batches()[0]
    bad = pa.record_batch({"dt": ["a"], "id": pa.array([None], pa.int64()), "name": ["x"], "price": [1.0]},
                          schema=PK_SCHEMA)
    wb = pk_table.new_batch_write_builder()
    w, c = wb.new_write(), wb.new_commit()
    with pytest.raises(paimon_rs.SchemaMismatchError):
        w.write_arrow(pa.RecordBatchReader.from_batches(PK_SCHEMA, [good, bad]))
    assert c.commit(w.prepare_commit()) is None  # nothing was buffered
    assert read(pk_table).num_rows == 0


def test_narrowing_integer_overflow_is_refused(catalog):
    s = Schema.from_pyarrow_schema(pa.schema([("id", pa.int32()), ("v", pa.int8())]), primary_keys=["id"],
                                   options={"bucket": "1"})
    catalog.create_table("db.n", s, False)
    t = catalog.get_table("db.n")
    write(t, pa.table({"id": [1, 2], "v": [3, 4]}))  # int64 input fits: accepted
    with pytest.raises(paimon_rs.SchemaMismatchError, match="column 'v'"):
        write(t, pa.table({"id": [3], "v": [1000]}))
    assert sorted(read(t).column("v").to_pylist()) == [3, 4]


def test_corrupt_files_are_named(pk_table):
    write(pk_table, good_rows())
    data = glob.glob(os.path.join(pk_table.table_path, "dt=a", "bucket-*", "data-*.parquet"))[0]
    with open(data, "r+b") as f:
        f.truncate(10)
    with pytest.raises(paimon_rs.CorruptFileError, match=os.path.basename(data)):
        read(pk_table)
    os.remove(data)
    with pytest.raises(paimon_rs.CorruptFileError, match="missing"):
        read(pk_table)


def test_corrupt_manifest_is_named(pk_table):
    write(pk_table, good_rows())
    mf = [p for p in glob.glob(os.path.join(pk_table.table_path, "manifest", "manifest-*"))
          if "manifest-list" not in p][0]
    with open(mf, "wb") as f:
        f.write(b"not avro")
    with pytest.raises(paimon_rs.CorruptFileError, match=os.path.basename(mf)):
        read(pk_table)


def test_commit_twice_refused(pk_table):
    wb = pk_table.new_batch_write_builder()
    w, c = wb.new_write(), wb.new_commit()
    w.write_arrow(good_rows())
    msgs = w.prepare_commit()
    c.commit(msgs)
    with pytest.raises(paimon_rs.PaimonRsError, match="once"):
        c.commit(msgs)
    assert read(pk_table).num_rows == 1
