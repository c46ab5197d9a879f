"""pypaimon's ``Schema(fields=[DataField...])``, ``CoreOptions(options)`` and
``ReadBuilder.explain()`` (issue 29: the causes of scripts/pypaimon_suite.py's failures)."""

from __future__ import annotations

import datetime

import pyarrow as pa
import pytest

from paimon_rs import (
    ArrayType,
    AtomicType,
    CoreOptions,
    DataField,
    InvalidArgumentError,
    MapType,
    MultisetType,
    RowType,
    Schema,
    UnsupportedError,
)
from paimon_rs.data_types import parse_data_type, type_string
from paimon_rs.explain import ExplainResult
from paimon_rs.options import MemorySize, Options

ATOMIC = ["TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE", "BOOLEAN", "DECIMAL(10, 2)",
          "DECIMAL(38, 0)", "CHAR(3)", "VARCHAR(10)", "STRING", "BINARY(4)", "VARBINARY(8)", "BYTES",
          "DATE", "TIME(0)", "TIME(3)", "TIMESTAMP(0)", "TIMESTAMP(3)", "TIMESTAMP(6)", "TIMESTAMP(9)",
          "TIMESTAMP(3) WITH LOCAL TIME ZONE", "TIMESTAMP(6) WITH LOCAL TIME ZONE"]


def _types():
    out = [AtomicType(t) for t in ATOMIC] + [AtomicType(t, nullable=False) for t in ATOMIC]
    out += [
        ArrayType(True, AtomicType("INT")),
        ArrayType(False, AtomicType("INT", nullable=False)),
        MultisetType(True, AtomicType("VARCHAR(5)")),
        MapType(True, AtomicType("STRING", nullable=False), AtomicType("DECIMAL(10, 2)")),
        RowType(True, [DataField(0, "a", AtomicType("INT")),
                       DataField(1, "b", ArrayType(True, AtomicType("CHAR(2)")))]),
        ArrayType(True, RowType(True, [DataField(0, "x", AtomicType("TIME(3)"))])),
    ]
    return out


def _no_ids(t):
    """A type's text without nested field ids (ids are assigned on create)."""
    return type_string(t)


def test_schema_of_paimon_fields_round_trips_every_type(catalog):
    types = _types()
    fields = [DataField(i, f"c{i}", t, f"column {i}" if i % 3 == 0 else None) for i, t in enumerate(types)]
    schema = Schema(fields=fields, options={"bucket": "-1"}, comment="all types")
    catalog.create_table("db.types", schema, False)
    table = catalog.get_table("db.types")
    got = [DataField.from_dict(f.to_dict()) for f in table.fields]
    assert [f.name for f in got] == [f.name for f in fields]
    assert [_no_ids(f.type) for f in got] == [_no_ids(t) for t in types]
    assert [f.description for f in got] == [f.description for f in fields]
    # the Arrow form the Schema gives is what the table reads and writes as
    assert schema.pa_schema.remove_metadata().equals(table.arrow_schema.remove_metadata())
    assert [f.name for f in schema.pa_schema] == [f.name for f in table.arrow_schema]
    assert [a.type for a in schema.pa_schema] == [a.type for a in table.arrow_schema]
    # and the table's schema gives a Schema that creates the same table again
    catalog.create_table("db.types2", table.table_schema.to_schema(), False)
    again = catalog.get_table("db.types2")
    assert [(f.name, f.type, f.description) for f in again.fields] == \
        [(f.name, f.type, f.description) for f in table.fields]


def test_types_arrow_cannot_name_survive_a_write_and_read(catalog):
    fields = [DataField(0, "id", AtomicType("INT")), DataField(1, "code", AtomicType("VARCHAR(4)")),
              DataField(2, "t", AtomicType("TIME(3)"))]
    catalog.create_table("db.t", Schema(fields=fields, primary_keys=["id"], options={"bucket": "1"}), False)
    table = catalog.get_table("db.t")
    assert [str(f.type) for f in table.fields] == ["INT NOT NULL", "VARCHAR(4)", "TIME(3)"]
    data = pa.table({"id": pa.array([1, 2], pa.int32()), "code": ["ab", "cd"],
                     "t": pa.array([datetime.time(1, 2, 3, 4000), None], pa.time32("ms"))})
    wb = table.new_batch_write_builder()
    w = wb.new_write()
    w.write_arrow(data.cast(table.arrow_schema))
    wb.new_commit().commit(w.prepare_commit())
    w.close()
    assert table.to_arrow().sort_by("id").column("code").to_pylist() == ["ab", "cd"]


def test_schema_primary_keys_not_null_and_caller_fields_unchanged():
    f = DataField(0, "id", AtomicType("BIGINT"))
    s = Schema(fields=[f, DataField(1, "v", AtomicType("STRING"))], primary_keys=["id"])
    assert s.fields[0].type == AtomicType("BIGINT", nullable=False)
    assert f.type.nullable  # the caller's field is not changed
    assert s.pa_schema.field("id").nullable is False
    assert s.pa_schema.field("v").type == pa.string()


def test_schema_from_pyarrow_gives_paimon_fields_with_pypaimon_ids():
    s = Schema.from_pyarrow_schema(pa.schema([
        ("a", pa.int64()),
        ("s", pa.struct([("x", pa.int32()), ("y", pa.list_(pa.string()))])),
        pa.field("b", pa.timestamp("ms"), metadata={"description": "when"}),
    ]))
    assert [(f.id, f.name) for f in s.fields] == [(0, "a"), (1, "s"), (4, "b")]
    assert [(f.id, f.name) for f in s.fields[1].type.fields] == [(2, "x"), (3, "y")]
    assert s.fields[2].type == AtomicType("TIMESTAMP(3)") and s.fields[2].description == "when"
    assert Schema(s.pa_schema) == s  # pyarrow as the first argument, as before


@pytest.mark.parametrize("stored", [{"type": "VECTOR", "element": "FLOAT", "length": 3}])
def test_types_paimon_rs_cannot_hold_are_refused_naming_the_field(stored):
    with pytest.raises((UnsupportedError, ValueError), match="'vec'"):
        Schema(fields=[DataField(0, "id", AtomicType("INT")),
                       DataField.from_dict({"id": 1, "name": "vec", "type": stored})])


def test_blob_fields_are_held_and_created_under_pypaimons_rules(tmp_path):
    fields = [DataField(0, "id", AtomicType("INT")), DataField.from_dict({"id": 1, "name": "b", "type": "BLOB"})]
    s = Schema(fields=fields)
    assert s.fields[1].type == AtomicType("BLOB")
    assert s.pa_schema.field("b").type == pa.large_binary()
    from paimon_rs import CatalogFactory
    c = CatalogFactory.create({"warehouse": str(tmp_path)})
    c.create_database("db", True)
    with pytest.raises(ValueError, match="row-tracking.enabled"):
        c.create_table("db.t", s, False)
    c.create_table("db.t", Schema(fields=fields, options={"row-tracking.enabled": "true",
                                                          "data-evolution.enabled": "true"}), False)
    assert [str(f.type) for f in c.get_table("db.t").fields] == ["INT", "BLOB"]


def test_variant_fields_are_held():
    s = Schema(fields=[DataField(0, "id", AtomicType("INT")),
                       DataField.from_dict({"id": 1, "name": "v", "type": "VARIANT"})])
    assert s.fields[1].type == AtomicType("VARIANT")
    assert s.pa_schema.field("v").type == pa.struct([pa.field("value", pa.binary(), False),
                                                     pa.field("metadata", pa.binary(), False)])


def test_schema_refuses_what_pypaimon_refuses():
    with pytest.raises(ValueError, match="primary-key.nullable"):
        Schema(fields=[DataField(0, "a", AtomicType("INT"))], options={"primary-key.nullable": "true"})
    with pytest.raises(ValueError, match="changelog-producer"):
        Schema(fields=[DataField(0, "a", AtomicType("INT"))], options={"changelog-producer": "input"})
    with pytest.raises(TypeError, match="DataField"):
        Schema(fields=[("a", "INT")])


def test_paimon_typed_schema_reaches_pypaimon_type_strings():
    # what pypaimon's tests write: DataField types from parse_data_type's schema-file forms
    t = parse_data_type({"type": "MAP", "key": "STRING NOT NULL", "value": {"type": "ARRAY", "element": "INT"}})
    s = Schema(fields=[DataField(0, "m", t)])
    assert s.pa_schema.field("m").type == pa.map_(pa.string(), pa.list_(pa.field("element", pa.int32())))


def test_core_options_typed_accessors_and_paimon_defaults():
    o = CoreOptions.from_dict({})
    assert (o.bucket(), o.file_format(), o.file_compression(), o.merge_engine(), o.changelog_producer()) == \
        (-1, "parquet", "zstd", "deduplicate", "none")
    assert o.target_file_size(True) == 128 << 20 and o.target_file_size(False) == 256 << 20
    assert o.manifest_target_size() == 8 << 20 and o.source_split_target_size() == 128 << 20
    assert (o.commit_max_retries(), o.commit_min_retry_wait(), o.commit_max_retry_wait()) == (10, 10, 10_000)
    assert o.sequence_field() == [] and o.ignore_delete() is False and o.deletion_vectors_enabled() is False
    assert o.read_batch_size() == 1024 and o.read_parallelism() is None
    assert o.get(CoreOptions.METADATA_STATS_MODE) == "truncate(16)"
    assert CoreOptions.BUCKET.default_value() == -1 and CoreOptions.BUCKET_KEY.default_value() is None


def test_core_options_parse_values_as_paimon():
    o = CoreOptions(Options({"bucket": "4", "target-file-size": "64 mb", "commit.timeout": "1 min",
                             "sequence.field": "a, b,", "deletion-vectors.enabled": "TRUE",
                             "data-file.external-paths.weights": "10,5", "first-row.ignore-delete": "true"}))
    assert o.bucket() == 4 and o.target_file_size(True) == 64 << 20
    assert o.commit_timeout() == 60_000
    assert o.sequence_field() == ["a", "b"] and o.deletion_vectors_enabled() is True
    assert o.data_file_external_paths_weights() == [10, 5] and o.ignore_delete() is True
    assert MemorySize.parse("256 kb").get_bytes() == 256 << 10
    modes = CoreOptions.from_dict({"global-index.search-mode": "full", "vector-index.search-mode": "detail"})
    assert (modes.scalar_index_search_mode(), modes.vector_index_search_mode()) == ("full", "detail")
    assert CoreOptions.from_dict({}).full_text_index_search_mode() == "fast"
    o.set(CoreOptions.BUCKET, 8)
    assert o.to_map()["bucket"] == "8" and CoreOptions.copy(o).bucket() == 8
    with pytest.raises(ValueError, match="'bucket'"):
        CoreOptions.from_dict({"bucket": "four"}).bucket()
    with pytest.raises(ValueError, match="'target-file-size'"):
        CoreOptions.from_dict({"target-file-size": "big"}).target_file_size(True)
    with pytest.raises(ValueError, match="positive"):
        CoreOptions.from_dict({"data-file.external-paths.weights": "1,0"}).data_file_external_paths_weights()


def test_core_options_takes_any_options_object_with_to_map():
    class PypaimonOptions:  # pypaimon's Options: a ``data`` map behind ``to_map()``
        def __init__(self, data):
            self.data = data

        def to_map(self):
            return self.data

    raw = {"bucket": "3"}
    o = CoreOptions(PypaimonOptions(raw))
    assert o.bucket() == 3
    o.set(CoreOptions.FILE_FORMAT, "orc")
    assert raw["file.format"] == "orc"  # the same map, as pypaimon shares it
    with pytest.raises(TypeError, match="CoreOptions takes"):
        CoreOptions(42)


def test_table_options_answer_every_core_options_accessor(pk_table):
    assert pk_table.options.target_file_size(True) == 128 << 20
    assert pk_table.options.commit_max_retries() == 10
    with pytest.raises(AttributeError, match="no_such_accessor"):
        pk_table.options.no_such_accessor()


def _write(table, rows):
    wb = table.new_batch_write_builder()
    w = wb.new_write()
    w.write_arrow(pa.Table.from_pylist(rows, schema=table.arrow_schema))
    wb.new_commit().commit(w.prepare_commit())
    w.close()


def test_explain_sums_the_plan(pk_table):
    empty = pk_table.new_read_builder().explain()
    assert isinstance(empty, ExplainResult) and empty.snapshot_id is None and empty.split_count == 0
    assert "<none>" in str(empty)
    for _ in range(2):
        _write(pk_table, [{"dt": d, "id": i, "name": "n", "price": 1.0} for d in ("a", "b") for i in range(6)])
    rb = pk_table.new_read_builder().with_filter("dt = 'a'").with_projection(["id"]).with_limit(3)
    r = rb.explain(verbose=True)
    splits = rb.new_scan().plan().splits()
    assert (r.snapshot_id, r.schema_id, r.is_primary_key_table, r.bucket_mode) == (2, 0, True, "HASH_FIXED")
    assert r.predicate == "dt = 'a'" and r.projection == ["id"] and r.limit == 3
    assert r.split_count == len(splits) > 0
    assert r.file_count == sum(len(s.files) for s in splits)
    assert r.total_file_size == sum(s.file_size for s in splits)
    assert r.estimated_row_count == sum(s.row_count for s in splits) == 12
    assert r.level_histogram == {0: r.file_count}  # two overlapping writes, not compacted
    assert r.splits_raw_convertible == 0 and r.splits_all_above_l0 == 0
    assert r.estimated_merged_row_count is None  # files to merge: not known without reading
    assert [set(i.file_paths) for i in r.splits] == [set(s.file_paths) for s in splits]
    assert all(i.partition == {"dt": "a"} for i in r.splits)
    # the funnel: the live files of both partitions, those of 'a', no bucket key pinned
    assert (r.partition_pruning.before, r.partition_pruning.after) == (2 * r.file_count, r.file_count)
    assert r.bucket_pruning is None
    assert (r.file_skipping.before, r.file_skipping.after) == (r.file_count, r.file_count)
    text = str(r)
    for anchor in ("Snapshot:           2  (schema 0)", "Splits:", "raw-convertible:", "with DV:", "size/split:",
                   "Files:", "Total size:", "Level histogram:    L0=", "Partition pruning:  ", "Splits[]"):
        assert anchor in text, anchor
    assert "Splits[]" not in str(rb.explain())


def test_read_options_are_honoured(catalog):
    schema = pa.schema([("id", pa.int64())])
    catalog.create_table("db.r", Schema.from_pyarrow_schema(
        schema, options={"read.batch-size": "3", "read.parallelism": "1"}), False)
    table = catalog.get_table("db.r")
    _write(table, [{"id": i} for i in range(10)])
    _write(table, [{"id": i} for i in range(10, 12)])
    rb = table.new_read_builder()
    splits = rb.new_scan().plan().splits()
    sizes = [b.num_rows for b in rb.new_read().to_arrow_batch_reader(splits)]
    assert max(sizes) <= 3 and sum(sizes) == 12
    assert rb.new_read()._parallelism == 1
    assert sorted(rb.new_read().to_arrow(splits).column("id").to_pylist()) == list(range(12))
    # a dynamic option overrides, and a value that is not a positive integer is refused
    wide = table.copy({"read.batch-size": "100"}).new_read_builder()
    assert [b.num_rows for b in wide.new_read().to_arrow_batch_reader(splits)] == [10, 2]
    with pytest.raises(InvalidArgumentError, match="read.parallelism"):
        table.copy({"read.parallelism": "0"}).new_read_builder().new_read()
    with pytest.raises(InvalidArgumentError, match="read.batch-size"):
        catalog.create_table("db.bad", Schema.from_pyarrow_schema(schema, options={"read.batch-size": "x"}), False)


def test_enum_option_values_are_stored_as_their_values():
    import enum

    from paimon_rs import SchemaChange

    class Strategy(str, enum.Enum):  # pypaimon's ExternalPathStrategy is such a str enum
        ROUND_ROBIN = "round-robin"

    class Level(enum.Enum):
        ON = True

    s = Schema.from_pyarrow_schema(pa.schema([("id", pa.int64())]), options={
        "data-file.external-paths.strategy": Strategy.ROUND_ROBIN, "x": Level.ON, "bucket": 2})
    assert s.options == {"data-file.external-paths.strategy": "round-robin", "x": "true",
                         "bucket": "2"}
    assert SchemaChange.set_option("k", Strategy.ROUND_ROBIN).value == "round-robin"

