//! Avro manifest files (paimon-format.md §4): manifest lists (`ManifestFileMeta` records),
//! manifests (`ManifestEntry` records with a nested `DataFileMeta`) and the ADD/DELETE merge
//! that turns a sequence of entries into the live-file set.
//!
//! Writing uses the Java reference's record names (`org.apache.paimon.avro.generated.record`,
//! `…record__FILE`, `…record__FILE__KEY_STATS`) and writes every field of §4.2/§4.3, including
//! `_WRITE_COLS_SEQUENCES` (Paimon 2.1, also written by pypaimon 2.1.0). Reading resolves
//! fields **by name** from the writer schema, as Java and pypaimon do: record names and field
//! order do not matter, unknown fields are skipped and missing nullable fields read as `None`.

use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::fmt::Display;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::sync::OnceLock;

use super::avro_names::install_name_validators;
use apache_avro::error::Details;
use apache_avro::types::Value;
use apache_avro::{Codec, DeflateSettings, Reader, Schema, Writer, ZstandardSettings};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::error::{Error, Result};

/// `_VERSION` of `ManifestEntry` and `ManifestFileMeta` records; Java rejects any other value.
pub const MANIFEST_VERSION: i32 = 2;

/// The arity-0 BinaryRow in manifest form: 4-byte BE arity 0, then the 8-byte header.
const EMPTY_ROW: [u8; 12] = [0; 12];

const JAVA_RECORD: &str = "org.apache.paimon.avro.generated.record";

// ---------------------------------------------------------------------------------------------
// Data model
// ---------------------------------------------------------------------------------------------

/// Per-column min/max/null-count statistics (§4.4), e.g. `_KEY_STATS` or `_PARTITION_STATS`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct SimpleStats {
    /// BinaryRow of per-column minimums in manifest form (4-byte BE arity prefix, §5.1).
    pub min_values: Vec<u8>,
    /// BinaryRow of per-column maximums in manifest form.
    pub max_values: Vec<u8>,
    /// Per-column null counts; `None` = unknown. Written as an array, never as Avro null.
    pub null_counts: Vec<Option<i64>>,
}

impl SimpleStats {
    /// Stats with no columns: arity-0 min/max rows and no null counts (always safe to write).
    pub fn empty() -> Self {
        SimpleStats {
            min_values: EMPTY_ROW.to_vec(),
            max_values: EMPTY_ROW.to_vec(),
            null_counts: Vec::new(),
        }
    }
}

/// Metadata of one data file (§4.3, Paimon field ids 0–20).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DataFileMeta {
    /// File name only; the directory is derived from partition and bucket.
    pub file_name: String,
    /// File size in bytes.
    pub file_size: i64,
    /// Number of rows, including -U/-D rows.
    pub row_count: i64,
    /// BinaryRow (manifest form) of the trimmed primary key of the first row.
    pub min_key: Vec<u8>,
    /// BinaryRow (manifest form) of the trimmed primary key of the last row.
    pub max_key: Vec<u8>,
    /// Stats over the trimmed primary-key columns.
    pub key_stats: SimpleStats,
    /// Stats over the value columns listed by `value_stats_cols` (all if `None`).
    pub value_stats: SimpleStats,
    /// Smallest `_SEQUENCE_NUMBER` in the file.
    pub min_sequence_number: i64,
    /// Largest `_SEQUENCE_NUMBER` in the file.
    pub max_sequence_number: i64,
    /// Id of the schema the file was written with.
    pub schema_id: i64,
    /// LSM level (new writes: 0).
    pub level: i32,
    /// Sidecar files; usually empty.
    pub extra_files: Vec<String>,
    /// Creation time as epoch millis of the local wall clock encoded as if UTC.
    pub creation_time: Option<i64>,
    /// Number of -U/-D rows; `None` = unknown.
    pub delete_row_count: Option<i64>,
    /// Small inline file index (bloom/bitmap), if any.
    pub embedded_index: Option<Vec<u8>>,
    /// 0 = APPEND, 1 = COMPACT.
    pub file_source: Option<i32>,
    /// Columns covered by `value_stats`; `None` = all, `[]` = none.
    pub value_stats_cols: Option<Vec<String>>,
    /// Absolute path if the file lives outside the table directory.
    pub external_path: Option<String>,
    /// First row id (row tracking only).
    pub first_row_id: Option<i64>,
    /// Columns written to this file (data evolution); `None` = all.
    pub write_cols: Option<Vec<String>>,
    /// Per-column max sequence numbers (Paimon 2.1).
    pub write_cols_sequences: Option<Vec<i64>>,
}

/// Kind of a manifest entry (`_KIND`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum FileKind {
    /// The file becomes live.
    Add = 0,
    /// The file stops being live.
    Delete = 1,
}

impl FileKind {
    /// The on-disk `_KIND` value.
    pub fn to_byte(self) -> i32 {
        self as i32
    }

    /// Parses an on-disk `_KIND` value.
    pub fn from_byte(v: i32) -> Option<FileKind> {
        match v {
            0 => Some(FileKind::Add),
            1 => Some(FileKind::Delete),
            _ => None,
        }
    }
}

/// One record of a manifest file (§4.3).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestEntry {
    /// ADD or DELETE.
    pub kind: FileKind,
    /// BinaryRow (manifest form) of the partition values; arity-0 row if unpartitioned.
    pub partition: Vec<u8>,
    /// Bucket id.
    pub bucket: i32,
    /// Bucket count of the partition when written (-1 for unaware-bucket append tables).
    pub total_buckets: i32,
    /// The data file.
    pub file: DataFileMeta,
}

/// Identity of a data file across manifest entries (§4.5).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FileIdentifier {
    /// Partition BinaryRow bytes.
    pub partition: Vec<u8>,
    /// Bucket id.
    pub bucket: i32,
    /// LSM level.
    pub level: i32,
    /// Data file name.
    pub file_name: String,
    /// Sidecar files.
    pub extra_files: Vec<String>,
    /// Inline file index.
    pub embedded_index: Option<Vec<u8>>,
    /// External path.
    pub external_path: Option<String>,
}

impl ManifestEntry {
    /// The identity used by [`merge_entries`]: partition, bucket, level, file name, extra files,
    /// embedded index and external path.
    pub fn identifier(&self) -> FileIdentifier {
        FileIdentifier {
            partition: self.partition.clone(),
            bucket: self.bucket,
            level: self.file.level,
            file_name: self.file.file_name.clone(),
            extra_files: self.file.extra_files.clone(),
            embedded_index: self.file.embedded_index.clone(),
            external_path: self.file.external_path.clone(),
        }
    }
}

/// One record of a manifest list (§4.2): a manifest file and its summary.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestFileMeta {
    /// Manifest file name (in `manifest/`).
    pub file_name: String,
    /// Its size in bytes.
    pub file_size: i64,
    /// Number of ADD entries.
    pub num_added_files: i64,
    /// Number of DELETE entries.
    pub num_deleted_files: i64,
    /// Min/max/null counts per partition column over the entries.
    pub partition_stats: SimpleStats,
    /// Max schema id of the entries.
    pub schema_id: i64,
    /// Smallest bucket of the entries.
    pub min_bucket: Option<i32>,
    /// Largest bucket of the entries.
    pub max_bucket: Option<i32>,
    /// Smallest level of the entries.
    pub min_level: Option<i32>,
    /// Largest level of the entries.
    pub max_level: Option<i32>,
    /// Smallest row id (row tracking only).
    pub min_row_id: Option<i64>,
    /// Largest row id (row tracking only).
    pub max_row_id: Option<i64>,
}

// ---------------------------------------------------------------------------------------------
// Schemas (Java names and field order)
// ---------------------------------------------------------------------------------------------

fn nullable(name: &str, ty: serde_json::Value) -> serde_json::Value {
    json!({"name": name, "type": ["null", ty], "default": null})
}

fn stats_schema(name: String) -> serde_json::Value {
    json!({"type": "record", "name": name, "fields": [
        {"name": "_MIN_VALUES", "type": "bytes"},
        {"name": "_MAX_VALUES", "type": "bytes"},
        nullable("_NULL_COUNTS", json!({"type": "array", "items": ["null", "long"]})),
    ]})
}

fn manifest_entry_schema_json() -> serde_json::Value {
    let file = format!("{JAVA_RECORD}__FILE");
    let strings = || json!({"type": "array", "items": "string"});
    json!({"type": "record", "name": JAVA_RECORD, "fields": [
        {"name": "_VERSION", "type": "int"},
        {"name": "_KIND", "type": "int"},
        {"name": "_PARTITION", "type": "bytes"},
        {"name": "_BUCKET", "type": "int"},
        {"name": "_TOTAL_BUCKETS", "type": "int"},
        {"name": "_FILE", "type": {"type": "record", "name": file, "fields": [
            {"name": "_FILE_NAME", "type": "string"},
            {"name": "_FILE_SIZE", "type": "long"},
            {"name": "_ROW_COUNT", "type": "long"},
            {"name": "_MIN_KEY", "type": "bytes"},
            {"name": "_MAX_KEY", "type": "bytes"},
            {"name": "_KEY_STATS", "type": stats_schema(format!("{file}__KEY_STATS"))},
            {"name": "_VALUE_STATS", "type": stats_schema(format!("{file}__VALUE_STATS"))},
            {"name": "_MIN_SEQUENCE_NUMBER", "type": "long"},
            {"name": "_MAX_SEQUENCE_NUMBER", "type": "long"},
            {"name": "_SCHEMA_ID", "type": "long"},
            {"name": "_LEVEL", "type": "int"},
            {"name": "_EXTRA_FILES", "type": strings()},
            nullable("_CREATION_TIME", json!({"type": "long", "logicalType": "timestamp-millis"})),
            nullable("_DELETE_ROW_COUNT", json!("long")),
            nullable("_EMBEDDED_FILE_INDEX", json!("bytes")),
            nullable("_FILE_SOURCE", json!("int")),
            nullable("_VALUE_STATS_COLS", strings()),
            nullable("_EXTERNAL_PATH", json!("string")),
            nullable("_FIRST_ROW_ID", json!("long")),
            nullable("_WRITE_COLS", strings()),
            nullable("_WRITE_COLS_SEQUENCES", json!({"type": "array", "items": "long"})),
        ]}},
    ]})
}

fn manifest_file_meta_schema_json() -> serde_json::Value {
    json!({"type": "record", "name": JAVA_RECORD, "fields": [
        {"name": "_VERSION", "type": "int"},
        {"name": "_FILE_NAME", "type": "string"},
        {"name": "_FILE_SIZE", "type": "long"},
        {"name": "_NUM_ADDED_FILES", "type": "long"},
        {"name": "_NUM_DELETED_FILES", "type": "long"},
        {"name": "_PARTITION_STATS", "type": stats_schema(format!("{JAVA_RECORD}__PARTITION_STATS"))},
        {"name": "_SCHEMA_ID", "type": "long"},
        nullable("_MIN_BUCKET", json!("int")),
        nullable("_MAX_BUCKET", json!("int")),
        nullable("_MIN_LEVEL", json!("int")),
        nullable("_MAX_LEVEL", json!("int")),
        nullable("_MIN_ROW_ID", json!("long")),
        nullable("_MAX_ROW_ID", json!("long")),
    ]})
}

/// The index manifest as Java 1.x writes it (`IndexManifestEntrySerializer`): Java 0.9 and 1.0
/// read it too (a field they do not know, `_EXTERNAL_PATH`, is skipped by name).
fn index_manifest_schema_json() -> serde_json::Value {
    let range = json!({"type": "record", "name": format!("{JAVA_RECORD}__DELETIONS_VECTORS_RANGES"),
    "fields": [
        {"name": "f0", "type": "string"},
        {"name": "f1", "type": "int"},
        {"name": "f2", "type": "int"},
        nullable("_CARDINALITY", json!("long")),
    ]});
    json!({"type": "record", "name": JAVA_RECORD, "fields": [
        {"name": "_VERSION", "type": "int"},
        {"name": "_KIND", "type": "int"},
        {"name": "_PARTITION", "type": "bytes"},
        {"name": "_BUCKET", "type": "int"},
        {"name": "_INDEX_TYPE", "type": "string"},
        {"name": "_FILE_NAME", "type": "string"},
        {"name": "_FILE_SIZE", "type": "long"},
        {"name": "_ROW_COUNT", "type": "long"},
        nullable("_DELETIONS_VECTORS_RANGES", json!({"type": "array", "items": ["null", range]})),
        nullable("_EXTERNAL_PATH", json!("string")),
        nullable("_GLOBAL_INDEX", global_index_schema_json()),
    ]})
}

/// Java's `GlobalIndexMeta.SCHEMA` (a global index file's row range and indexed fields).
fn global_index_schema_json() -> serde_json::Value {
    json!({"type": "record", "name": format!("{JAVA_RECORD}__GLOBAL_INDEX"), "fields": [
        {"name": "_ROW_RANGE_START", "type": "long"},
        {"name": "_ROW_RANGE_END", "type": "long"},
        {"name": "_INDEX_FIELD_ID", "type": "int"},
        nullable("_EXTRA_FIELD_IDS", json!({"type": "array", "items": "int"})),
        nullable("_INDEX_META", json!("bytes")),
        nullable("_SOURCE_META", json!("bytes")),
    ]})
}

type SchemaCell = OnceLock<std::result::Result<Schema, String>>;

fn cached_schema(
    cell: &'static SchemaCell,
    make: fn() -> serde_json::Value,
) -> Result<&'static Schema> {
    cell.get_or_init(|| {
        install_name_validators();
        Schema::parse(&make()).map_err(|e| e.to_string())
    })
    .as_ref()
    .map_err(|e| Error::Internal(format!("invalid built-in manifest Avro schema: {e}")))
}

fn manifest_entry_schema() -> Result<&'static Schema> {
    static CELL: SchemaCell = OnceLock::new();
    cached_schema(&CELL, manifest_entry_schema_json)
}

fn manifest_file_meta_schema() -> Result<&'static Schema> {
    static CELL: SchemaCell = OnceLock::new();
    cached_schema(&CELL, manifest_file_meta_schema_json)
}

fn index_manifest_schema() -> Result<&'static Schema> {
    static CELL: SchemaCell = OnceLock::new();
    cached_schema(&CELL, index_manifest_schema_json)
}

// ---------------------------------------------------------------------------------------------
// Writing
// ---------------------------------------------------------------------------------------------

/// Maps a Paimon `manifest.compression` value to the Avro codec.
fn avro_codec(compression: &str) -> Result<Codec> {
    match compression.to_ascii_lowercase().as_str() {
        "zstd" | "zstandard" => Ok(Codec::Zstandard(ZstandardSettings::default())),
        "null" | "none" => Ok(Codec::Null),
        "deflate" => Ok(Codec::Deflate(DeflateSettings::default())),
        "snappy" => Ok(Codec::Snappy),
        _ => Err(Error::unsupported(format!(
            "manifest.compression '{compression}' (supported: zstd, none, deflate, snappy)"
        ))),
    }
}

fn union_null() -> Value {
    Value::Union(0, Box::new(Value::Null))
}

fn union_some(v: Value) -> Value {
    Value::Union(1, Box::new(v))
}

fn opt_value<T>(v: Option<T>, f: impl FnOnce(T) -> Value) -> Value {
    match v {
        None => union_null(),
        Some(x) => union_some(f(x)),
    }
}

fn string_array(v: &[String]) -> Value {
    Value::Array(v.iter().map(|s| Value::String(s.clone())).collect())
}

fn field(name: &str, v: Value) -> (String, Value) {
    (name.to_string(), v)
}

fn stats_value(s: &SimpleStats) -> Value {
    let counts = s
        .null_counts
        .iter()
        .map(|c| opt_value(*c, Value::Long))
        .collect();
    Value::Record(vec![
        field("_MIN_VALUES", Value::Bytes(s.min_values.clone())),
        field("_MAX_VALUES", Value::Bytes(s.max_values.clone())),
        field("_NULL_COUNTS", union_some(Value::Array(counts))),
    ])
}

fn data_file_value(f: &DataFileMeta) -> Value {
    Value::Record(vec![
        field("_FILE_NAME", Value::String(f.file_name.clone())),
        field("_FILE_SIZE", Value::Long(f.file_size)),
        field("_ROW_COUNT", Value::Long(f.row_count)),
        field("_MIN_KEY", Value::Bytes(f.min_key.clone())),
        field("_MAX_KEY", Value::Bytes(f.max_key.clone())),
        field("_KEY_STATS", stats_value(&f.key_stats)),
        field("_VALUE_STATS", stats_value(&f.value_stats)),
        field("_MIN_SEQUENCE_NUMBER", Value::Long(f.min_sequence_number)),
        field("_MAX_SEQUENCE_NUMBER", Value::Long(f.max_sequence_number)),
        field("_SCHEMA_ID", Value::Long(f.schema_id)),
        field("_LEVEL", Value::Int(f.level)),
        field("_EXTRA_FILES", string_array(&f.extra_files)),
        field(
            "_CREATION_TIME",
            opt_value(f.creation_time, Value::TimestampMillis),
        ),
        field(
            "_DELETE_ROW_COUNT",
            opt_value(f.delete_row_count, Value::Long),
        ),
        field(
            "_EMBEDDED_FILE_INDEX",
            opt_value(f.embedded_index.clone(), Value::Bytes),
        ),
        field("_FILE_SOURCE", opt_value(f.file_source, Value::Int)),
        field(
            "_VALUE_STATS_COLS",
            opt_value(f.value_stats_cols.as_deref(), string_array),
        ),
        field(
            "_EXTERNAL_PATH",
            opt_value(f.external_path.clone(), Value::String),
        ),
        field("_FIRST_ROW_ID", opt_value(f.first_row_id, Value::Long)),
        field(
            "_WRITE_COLS",
            opt_value(f.write_cols.as_deref(), string_array),
        ),
        field(
            "_WRITE_COLS_SEQUENCES",
            opt_value(f.write_cols_sequences.as_deref(), |v| {
                Value::Array(v.iter().map(|x| Value::Long(*x)).collect())
            }),
        ),
    ])
}

fn manifest_entry_value(e: &ManifestEntry) -> Value {
    Value::Record(vec![
        field("_VERSION", Value::Int(MANIFEST_VERSION)),
        field("_KIND", Value::Int(e.kind.to_byte())),
        field("_PARTITION", Value::Bytes(e.partition.clone())),
        field("_BUCKET", Value::Int(e.bucket)),
        field("_TOTAL_BUCKETS", Value::Int(e.total_buckets)),
        field("_FILE", data_file_value(&e.file)),
    ])
}

fn manifest_file_meta_value(m: &ManifestFileMeta) -> Value {
    Value::Record(vec![
        field("_VERSION", Value::Int(MANIFEST_VERSION)),
        field("_FILE_NAME", Value::String(m.file_name.clone())),
        field("_FILE_SIZE", Value::Long(m.file_size)),
        field("_NUM_ADDED_FILES", Value::Long(m.num_added_files)),
        field("_NUM_DELETED_FILES", Value::Long(m.num_deleted_files)),
        field("_PARTITION_STATS", stats_value(&m.partition_stats)),
        field("_SCHEMA_ID", Value::Long(m.schema_id)),
        field("_MIN_BUCKET", opt_value(m.min_bucket, Value::Int)),
        field("_MAX_BUCKET", opt_value(m.max_bucket, Value::Int)),
        field("_MIN_LEVEL", opt_value(m.min_level, Value::Int)),
        field("_MAX_LEVEL", opt_value(m.max_level, Value::Int)),
        field("_MIN_ROW_ID", opt_value(m.min_row_id, Value::Long)),
        field("_MAX_ROW_ID", opt_value(m.max_row_id, Value::Long)),
    ])
}

fn index_manifest_entry_value(e: &IndexManifestEntry) -> Value {
    let range = |r: &DeletionVectorRange| {
        union_some(Value::Record(vec![
            field("f0", Value::String(r.data_file.clone())),
            field("f1", Value::Int(r.offset)),
            field("f2", Value::Int(r.length)),
            field("_CARDINALITY", opt_value(r.cardinality, Value::Long)),
        ]))
    };
    Value::Record(vec![
        field("_VERSION", Value::Int(INDEX_MANIFEST_VERSION)),
        field("_KIND", Value::Int(e.kind.to_byte())),
        field("_PARTITION", Value::Bytes(e.partition.clone())),
        field("_BUCKET", Value::Int(e.bucket)),
        field("_INDEX_TYPE", Value::String(e.index_type.clone())),
        field("_FILE_NAME", Value::String(e.file_name.clone())),
        field("_FILE_SIZE", Value::Long(e.file_size)),
        field("_ROW_COUNT", Value::Long(e.row_count)),
        field(
            "_DELETIONS_VECTORS_RANGES",
            opt_value(e.dv_ranges.as_deref(), |rs| {
                Value::Array(rs.iter().map(range).collect())
            }),
        ),
        field(
            "_EXTERNAL_PATH",
            opt_value(e.external_path.clone(), Value::String),
        ),
        field(
            "_GLOBAL_INDEX",
            opt_value(e.global_index.as_ref(), global_index_value),
        ),
    ])
}

fn global_index_value(g: &GlobalIndexMeta) -> Value {
    let bytes = |b: &Option<Vec<u8>>| opt_value(b.clone(), Value::Bytes);
    Value::Record(vec![
        field("_ROW_RANGE_START", Value::Long(g.row_range_start)),
        field("_ROW_RANGE_END", Value::Long(g.row_range_end)),
        field("_INDEX_FIELD_ID", Value::Int(g.index_field_id)),
        field(
            "_EXTRA_FIELD_IDS",
            opt_value(g.extra_field_ids.as_deref(), |ids| {
                Value::Array(ids.iter().map(|&i| Value::Int(i)).collect())
            }),
        ),
        field("_INDEX_META", bytes(&g.index_meta)),
        field("_SOURCE_META", bytes(&g.source_meta)),
    ])
}

fn write_avro<T>(
    schema: &Schema,
    codec: Codec,
    items: &[T],
    to_value: fn(&T) -> Value,
    what: &str,
) -> Result<Vec<u8>> {
    let encode_err = |e: apache_avro::Error| Error::Internal(format!("encoding {what}: {e}"));
    let mut writer = Writer::with_codec(schema, Vec::new(), codec);
    for item in items {
        writer.append(to_value(item)).map_err(encode_err)?;
    }
    writer.into_inner().map_err(encode_err)
}

/// Encodes manifest entries as an Avro manifest file. `codec` is the `manifest.compression`
/// option value (`zstd`, `none`/`null`, `deflate`, `snappy`); others are `Error::Unsupported`.
pub fn write_manifest_entries(entries: &[ManifestEntry], codec: &str) -> Result<Vec<u8>> {
    let codec = avro_codec(codec)?;
    write_avro(
        manifest_entry_schema()?,
        codec,
        entries,
        manifest_entry_value,
        "manifest entries",
    )
}

/// Encodes an index manifest (a snapshot's live index files, ADD entries). `codec` as for
/// [`write_manifest_entries`].
pub fn write_index_manifest(entries: &[IndexManifestEntry], codec: &str) -> Result<Vec<u8>> {
    let codec = avro_codec(codec)?;
    write_avro(
        index_manifest_schema()?,
        codec,
        entries,
        index_manifest_entry_value,
        "index manifest",
    )
}

/// Encodes a manifest list. `codec` as for [`write_manifest_entries`].
pub fn write_manifest_list(metas: &[ManifestFileMeta], codec: &str) -> Result<Vec<u8>> {
    let codec = avro_codec(codec)?;
    write_avro(
        manifest_file_meta_schema()?,
        codec,
        metas,
        manifest_file_meta_value,
        "manifest list",
    )
}

// ---------------------------------------------------------------------------------------------
// Reading
// ---------------------------------------------------------------------------------------------

/// Error context of one record being decoded.
struct Ctx<'a> {
    path: &'a Path,
    what: &'static str,
    index: usize,
}

impl Ctx<'_> {
    fn err(&self, field: &str, msg: impl Display) -> Error {
        Error::corrupt(
            self.path,
            format!("{} #{}: field {field}: {msg}", self.what, self.index),
        )
    }
}

fn strip_union(v: Value) -> Value {
    match v {
        Value::Union(_, inner) => strip_union(*inner),
        other => other,
    }
}

fn kind_name(v: &Value) -> String {
    let dbg = format!("{v:?}");
    match dbg.find('(') {
        Some(i) => dbg[..i].to_string(),
        None => dbg,
    }
}

/// A value of a non-nullable field: missing or null is corrupt.
fn required(v: Option<Value>, field: &str, ctx: &Ctx) -> Result<Value> {
    match v.map(strip_union) {
        None => Err(ctx.err(field, "missing from the writer schema")),
        Some(Value::Null) => Err(ctx.err(field, "null in a non-nullable field")),
        Some(v) => Ok(v),
    }
}

/// A value of a nullable field: missing or null is `None`.
fn optional(v: Option<Value>) -> Option<Value> {
    match v.map(strip_union) {
        None | Some(Value::Null) => None,
        Some(v) => Some(v),
    }
}

fn to_i32(v: Value, field: &str, ctx: &Ctx) -> Result<i32> {
    match v {
        Value::Int(i) => Ok(i),
        Value::Long(l) => {
            i32::try_from(l).map_err(|_| ctx.err(field, format!("{l} out of int range")))
        }
        other => Err(ctx.err(field, format!("expected int, found {}", kind_name(&other)))),
    }
}

fn to_i64(v: Value, field: &str, ctx: &Ctx) -> Result<i64> {
    match v {
        Value::Long(l) | Value::TimestampMillis(l) | Value::LocalTimestampMillis(l) => Ok(l),
        Value::TimestampMicros(l) | Value::LocalTimestampMicros(l) => Ok(l.div_euclid(1000)),
        Value::Int(i) => Ok(i64::from(i)),
        other => Err(ctx.err(field, format!("expected long, found {}", kind_name(&other)))),
    }
}

fn to_bytes(v: Value, field: &str, ctx: &Ctx) -> Result<Vec<u8>> {
    match v {
        Value::Bytes(b) | Value::Fixed(_, b) => Ok(b),
        other => Err(ctx.err(
            field,
            format!("expected bytes, found {}", kind_name(&other)),
        )),
    }
}

fn to_string(v: Value, field: &str, ctx: &Ctx) -> Result<String> {
    match v {
        Value::String(s) => Ok(s),
        other => Err(ctx.err(
            field,
            format!("expected string, found {}", kind_name(&other)),
        )),
    }
}

fn to_array(v: Value, field: &str, ctx: &Ctx) -> Result<Vec<Value>> {
    match v {
        Value::Array(a) => Ok(a),
        other => Err(ctx.err(
            field,
            format!("expected array, found {}", kind_name(&other)),
        )),
    }
}

fn to_string_vec(v: Value, field: &str, ctx: &Ctx) -> Result<Vec<String>> {
    to_array(v, field, ctx)?
        .into_iter()
        .map(|x| to_string(strip_union(x), field, ctx))
        .collect()
}

fn to_i64_vec(v: Value, field: &str, ctx: &Ctx) -> Result<Vec<i64>> {
    to_array(v, field, ctx)?
        .into_iter()
        .map(|x| to_i64(strip_union(x), field, ctx))
        .collect()
}

fn to_record(v: Value, field: &str, ctx: &Ctx) -> Result<Vec<(String, Value)>> {
    match v {
        Value::Record(fields) => Ok(fields),
        other => Err(ctx.err(
            field,
            format!("expected record, found {}", kind_name(&other)),
        )),
    }
}

fn to_stats(v: Value, field: &str, ctx: &Ctx) -> Result<SimpleStats> {
    let (mut min, mut max, mut counts) = (None, None, None);
    for (name, value) in to_record(v, field, ctx)? {
        match name.as_str() {
            "_MIN_VALUES" => min = Some(value),
            "_MAX_VALUES" => max = Some(value),
            "_NULL_COUNTS" => counts = Some(value),
            _ => {}
        }
    }
    let sub = |name: &str| format!("{field}.{name}");
    let min_values = to_bytes(
        required(min, &sub("_MIN_VALUES"), ctx)?,
        &sub("_MIN_VALUES"),
        ctx,
    )?;
    let max_values = to_bytes(
        required(max, &sub("_MAX_VALUES"), ctx)?,
        &sub("_MAX_VALUES"),
        ctx,
    )?;
    // A null `_NULL_COUNTS` (which Java cannot read) is taken as "no null counts known".
    let null_counts = match optional(counts) {
        None => Vec::new(),
        Some(a) => to_array(a, &sub("_NULL_COUNTS"), ctx)?
            .into_iter()
            .map(|c| match strip_union(c) {
                Value::Null => Ok(None),
                c => to_i64(c, &sub("_NULL_COUNTS"), ctx).map(Some),
            })
            .collect::<Result<_>>()?,
    };
    Ok(SimpleStats {
        min_values,
        max_values,
        null_counts,
    })
}

fn check_version(v: Option<Value>, ctx: &Ctx) -> Result<()> {
    let version = to_i32(required(v, "_VERSION", ctx)?, "_VERSION", ctx)?;
    if version != MANIFEST_VERSION {
        return Err(ctx.err(
            "_VERSION",
            format!("unsupported format version {version} (expected {MANIFEST_VERSION})"),
        ));
    }
    Ok(())
}

fn to_data_file(v: Value, ctx: &Ctx) -> Result<DataFileMeta> {
    let mut f: [Option<Value>; 21] = Default::default();
    for (name, value) in to_record(v, "_FILE", ctx)? {
        let slot = match name.as_str() {
            "_FILE_NAME" => 0,
            "_FILE_SIZE" => 1,
            "_ROW_COUNT" => 2,
            "_MIN_KEY" => 3,
            "_MAX_KEY" => 4,
            "_KEY_STATS" => 5,
            "_VALUE_STATS" => 6,
            "_MIN_SEQUENCE_NUMBER" => 7,
            "_MAX_SEQUENCE_NUMBER" => 8,
            "_SCHEMA_ID" => 9,
            "_LEVEL" => 10,
            "_EXTRA_FILES" => 11,
            "_CREATION_TIME" => 12,
            "_DELETE_ROW_COUNT" => 13,
            "_EMBEDDED_FILE_INDEX" => 14,
            "_FILE_SOURCE" => 15,
            "_VALUE_STATS_COLS" => 16,
            "_EXTERNAL_PATH" => 17,
            "_FIRST_ROW_ID" => 18,
            "_WRITE_COLS" => 19,
            "_WRITE_COLS_SEQUENCES" => 20,
            _ => continue,
        };
        f[slot] = Some(value);
    }
    let [file_name, file_size, row_count, min_key, max_key, key_stats, value_stats, min_seq, max_seq, schema_id, level, extra_files, creation_time, delete_row_count, embedded_index, file_source, value_stats_cols, external_path, first_row_id, write_cols, write_cols_sequences] =
        f;
    let req = |v: Option<Value>, name: &'static str| -> Result<(Value, String)> {
        let name = format!("_FILE.{name}");
        Ok((required(v, &name, ctx)?, name))
    };
    let (v, n) = req(file_name, "_FILE_NAME")?;
    let file_name = to_string(v, &n, ctx)?;
    let (v, n) = req(file_size, "_FILE_SIZE")?;
    let file_size = to_i64(v, &n, ctx)?;
    let (v, n) = req(row_count, "_ROW_COUNT")?;
    let row_count = to_i64(v, &n, ctx)?;
    let (v, n) = req(min_key, "_MIN_KEY")?;
    let min_key = to_bytes(v, &n, ctx)?;
    let (v, n) = req(max_key, "_MAX_KEY")?;
    let max_key = to_bytes(v, &n, ctx)?;
    let (v, n) = req(key_stats, "_KEY_STATS")?;
    let key_stats = to_stats(v, &n, ctx)?;
    let (v, n) = req(value_stats, "_VALUE_STATS")?;
    let value_stats = to_stats(v, &n, ctx)?;
    let (v, n) = req(min_seq, "_MIN_SEQUENCE_NUMBER")?;
    let min_sequence_number = to_i64(v, &n, ctx)?;
    let (v, n) = req(max_seq, "_MAX_SEQUENCE_NUMBER")?;
    let max_sequence_number = to_i64(v, &n, ctx)?;
    let (v, n) = req(schema_id, "_SCHEMA_ID")?;
    let schema_id = to_i64(v, &n, ctx)?;
    let (v, n) = req(level, "_LEVEL")?;
    let level = to_i32(v, &n, ctx)?;
    let (v, n) = req(extra_files, "_EXTRA_FILES")?;
    let extra_files = to_string_vec(v, &n, ctx)?;
    Ok(DataFileMeta {
        file_name,
        file_size,
        row_count,
        min_key,
        max_key,
        key_stats,
        value_stats,
        min_sequence_number,
        max_sequence_number,
        schema_id,
        level,
        extra_files,
        creation_time: optional(creation_time)
            .map(|v| to_i64(v, "_FILE._CREATION_TIME", ctx))
            .transpose()?,
        delete_row_count: optional(delete_row_count)
            .map(|v| to_i64(v, "_FILE._DELETE_ROW_COUNT", ctx))
            .transpose()?,
        embedded_index: optional(embedded_index)
            .map(|v| to_bytes(v, "_FILE._EMBEDDED_FILE_INDEX", ctx))
            .transpose()?,
        file_source: optional(file_source)
            .map(|v| to_i32(v, "_FILE._FILE_SOURCE", ctx))
            .transpose()?,
        value_stats_cols: optional(value_stats_cols)
            .map(|v| to_string_vec(v, "_FILE._VALUE_STATS_COLS", ctx))
            .transpose()?,
        external_path: optional(external_path)
            .map(|v| to_string(v, "_FILE._EXTERNAL_PATH", ctx))
            .transpose()?,
        first_row_id: optional(first_row_id)
            .map(|v| to_i64(v, "_FILE._FIRST_ROW_ID", ctx))
            .transpose()?,
        write_cols: optional(write_cols)
            .map(|v| to_string_vec(v, "_FILE._WRITE_COLS", ctx))
            .transpose()?,
        write_cols_sequences: optional(write_cols_sequences)
            .map(|v| to_i64_vec(v, "_FILE._WRITE_COLS_SEQUENCES", ctx))
            .transpose()?,
    })
}

fn to_manifest_entry(v: Value, ctx: &Ctx) -> Result<ManifestEntry> {
    let (mut version, mut kind, mut partition, mut bucket, mut total_buckets, mut file) =
        (None, None, None, None, None, None);
    for (name, value) in to_record(strip_union(v), "<record>", ctx)? {
        match name.as_str() {
            "_VERSION" => version = Some(value),
            "_KIND" => kind = Some(value),
            "_PARTITION" => partition = Some(value),
            "_BUCKET" => bucket = Some(value),
            "_TOTAL_BUCKETS" => total_buckets = Some(value),
            "_FILE" => file = Some(value),
            _ => {}
        }
    }
    check_version(version, ctx)?;
    let kind_raw = to_i32(required(kind, "_KIND", ctx)?, "_KIND", ctx)?;
    let kind = FileKind::from_byte(kind_raw)
        .ok_or_else(|| ctx.err("_KIND", format!("unknown file kind {kind_raw}")))?;
    Ok(ManifestEntry {
        kind,
        partition: to_bytes(required(partition, "_PARTITION", ctx)?, "_PARTITION", ctx)?,
        bucket: to_i32(required(bucket, "_BUCKET", ctx)?, "_BUCKET", ctx)?,
        total_buckets: to_i32(
            required(total_buckets, "_TOTAL_BUCKETS", ctx)?,
            "_TOTAL_BUCKETS",
            ctx,
        )?,
        file: to_data_file(required(file, "_FILE", ctx)?, ctx)?,
    })
}

fn to_manifest_file_meta(v: Value, ctx: &Ctx) -> Result<ManifestFileMeta> {
    let mut f: [Option<Value>; 13] = Default::default();
    for (name, value) in to_record(strip_union(v), "<record>", ctx)? {
        let slot = match name.as_str() {
            "_VERSION" => 0,
            "_FILE_NAME" => 1,
            "_FILE_SIZE" => 2,
            "_NUM_ADDED_FILES" => 3,
            "_NUM_DELETED_FILES" => 4,
            "_PARTITION_STATS" => 5,
            "_SCHEMA_ID" => 6,
            "_MIN_BUCKET" => 7,
            "_MAX_BUCKET" => 8,
            "_MIN_LEVEL" => 9,
            "_MAX_LEVEL" => 10,
            "_MIN_ROW_ID" => 11,
            "_MAX_ROW_ID" => 12,
            _ => continue,
        };
        f[slot] = Some(value);
    }
    let [version, file_name, file_size, num_added, num_deleted, stats, schema_id, min_bucket, max_bucket, min_level, max_level, min_row_id, max_row_id] =
        f;
    check_version(version, ctx)?;
    let opt_i32 = |v: Option<Value>, n: &str| optional(v).map(|v| to_i32(v, n, ctx)).transpose();
    let opt_i64 = |v: Option<Value>, n: &str| optional(v).map(|v| to_i64(v, n, ctx)).transpose();
    Ok(ManifestFileMeta {
        file_name: to_string(required(file_name, "_FILE_NAME", ctx)?, "_FILE_NAME", ctx)?,
        file_size: to_i64(required(file_size, "_FILE_SIZE", ctx)?, "_FILE_SIZE", ctx)?,
        num_added_files: to_i64(
            required(num_added, "_NUM_ADDED_FILES", ctx)?,
            "_NUM_ADDED_FILES",
            ctx,
        )?,
        num_deleted_files: to_i64(
            required(num_deleted, "_NUM_DELETED_FILES", ctx)?,
            "_NUM_DELETED_FILES",
            ctx,
        )?,
        partition_stats: to_stats(
            required(stats, "_PARTITION_STATS", ctx)?,
            "_PARTITION_STATS",
            ctx,
        )?,
        schema_id: to_i64(required(schema_id, "_SCHEMA_ID", ctx)?, "_SCHEMA_ID", ctx)?,
        min_bucket: opt_i32(min_bucket, "_MIN_BUCKET")?,
        max_bucket: opt_i32(max_bucket, "_MAX_BUCKET")?,
        min_level: opt_i32(min_level, "_MIN_LEVEL")?,
        max_level: opt_i32(max_level, "_MAX_LEVEL")?,
        min_row_id: opt_i64(min_row_id, "_MIN_ROW_ID")?,
        max_row_id: opt_i64(max_row_id, "_MAX_ROW_ID")?,
    })
}

fn avro_read_err(path: &Path, e: apache_avro::Error) -> Error {
    match e.details() {
        Details::CodecNotSupported(codec) => Error::unsupported(format!(
            "Avro codec '{codec}' of {} (supported: null, deflate, snappy, zstandard)",
            path.display()
        )),
        _ => Error::corrupt(path, format!("invalid Avro data: {e}")),
    }
}

/// Largest single allocation the Avro decoder may make while reading manifests.
const MAX_AVRO_ALLOCATION: usize = 16 << 20;

/// Decodes every record of an Avro object container file with `convert`. The Avro crate can
/// panic on some malformed blocks (e.g. a snappy block shorter than its checksum); such a panic
/// is turned into a corrupt-file error instead of unwinding into the caller.
fn read_avro<T>(
    bytes: &[u8],
    path: &Path,
    what: &'static str,
    convert: fn(Value, &Ctx) -> Result<T>,
) -> Result<Vec<T>> {
    // A corrupt length or count field must not make the decoder reserve gigabytes: cap every
    // single allocation (process-wide, first call wins; nothing in a manifest comes close).
    apache_avro::util::max_allocation_bytes(MAX_AVRO_ALLOCATION);
    install_name_validators();
    let decode = || -> Result<Vec<T>> {
        let reader = Reader::new(bytes).map_err(|e| avro_read_err(path, e))?;
        let mut out = Vec::new();
        for (index, value) in reader.enumerate() {
            let value = value.map_err(|e| avro_read_err(path, e))?;
            out.push(convert(value, &Ctx { path, what, index })?);
        }
        Ok(out)
    };
    catch_unwind(AssertUnwindSafe(decode)).unwrap_or_else(|_| {
        Err(Error::corrupt(
            path,
            format!("malformed Avro {what} file (decoder panicked)"),
        ))
    })
}

/// Decodes an Avro manifest file (written by Java, pypaimon or this crate). `path` is only
/// used in error messages.
pub fn read_manifest_entries(bytes: &[u8], path: &Path) -> Result<Vec<ManifestEntry>> {
    read_avro(bytes, path, "manifest entry", to_manifest_entry)
}

/// Decodes an Avro manifest list. `path` is only used in error messages.
pub fn read_manifest_list(bytes: &[u8], path: &Path) -> Result<Vec<ManifestFileMeta>> {
    read_avro(bytes, path, "manifest file meta", to_manifest_file_meta)
}

// ---------------------------------------------------------------------------------------------
// Index manifest (§4.6)
// ---------------------------------------------------------------------------------------------

/// Index type of deletion-vector index files (`DeletionVectorsIndexFile.DELETION_VECTORS_INDEX`).
pub const DELETION_VECTORS_INDEX: &str = "DELETION_VECTORS";

/// Index type of dynamic-bucket hash index files (`HashIndexFile.HASH_INDEX`, §4.6): one per
/// (partition, bucket), the big-endian int32 hashes of the bucket's trimmed primary keys.
pub const HASH_INDEX: &str = "HASH";

/// `_VERSION` of index manifest entries (Java's `IndexManifestEntrySerializer`).
pub const INDEX_MANIFEST_VERSION: i32 = 1;

/// Where one data file's deletion vector lies in a `DELETION_VECTORS` index file (Java's
/// `DeletionVectorMeta`, record `f0, f1, f2, _CARDINALITY`; 0.9 has no cardinality).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeletionVectorRange {
    /// The data file the vector belongs to.
    pub data_file: String,
    /// Offset of the vector's size field in the index file.
    pub offset: i32,
    /// The size field's value (32-bit bitmaps) or the whole entry's length (64-bit bitmaps).
    pub length: i32,
    /// Number of deleted rows (Paimon >= 1.0).
    pub cardinality: Option<i64>,
}

/// An index file of a bucket (Java's `IndexFileMeta`): deletion vectors or a hash index, as
/// a commit message adds or removes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IndexFileMeta {
    /// `DELETION_VECTORS`, `HASH`, ...
    pub index_type: String,
    /// File name in `index/`.
    pub file_name: String,
    pub file_size: i64,
    pub row_count: i64,
    /// Deletion vector locations (`DELETION_VECTORS` only).
    pub dv_ranges: Option<Vec<DeletionVectorRange>>,
    /// Absolute location when the index file lives outside the table.
    pub external_path: Option<String>,
    /// A global index file's meta (Java / pypaimon `create_global_index`); paimon_rs writes
    /// none and carries those it reads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub global_index: Option<GlobalIndexMeta>,
}

/// Java's `GlobalIndexMeta`: the row-id range a global index file covers and the fields (ids)
/// it indexes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GlobalIndexMeta {
    pub row_range_start: i64,
    pub row_range_end: i64,
    pub index_field_id: i32,
    pub extra_field_ids: Option<Vec<i32>>,
    pub index_meta: Option<Vec<u8>>,
    pub source_meta: Option<Vec<u8>>,
}

impl GlobalIndexMeta {
    /// The ids of the fields the index covers.
    pub fn field_ids(&self) -> impl Iterator<Item = i32> + '_ {
        std::iter::once(self.index_field_id).chain(self.extra_field_ids.iter().flatten().copied())
    }
}

/// One record of an index manifest (§4.6).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexManifestEntry {
    pub kind: FileKind,
    pub partition: Vec<u8>,
    pub bucket: i32,
    /// `DELETION_VECTORS`, `HASH`, ...
    pub index_type: String,
    /// File name in `index/`.
    pub file_name: String,
    pub file_size: i64,
    pub row_count: i64,
    /// Deletion vector locations (`DELETION_VECTORS` only).
    pub dv_ranges: Option<Vec<DeletionVectorRange>>,
    /// Absolute location when the index file lives outside the table (newer Java).
    pub external_path: Option<String>,
    /// A global index file's meta (see [`IndexFileMeta::global_index`]).
    pub global_index: Option<GlobalIndexMeta>,
}

impl IndexManifestEntry {
    /// An entry of `kind` for the index file `f` of (partition, bucket).
    pub fn of(kind: FileKind, partition: &[u8], bucket: i32, f: &IndexFileMeta) -> Self {
        IndexManifestEntry {
            kind,
            partition: partition.to_vec(),
            bucket,
            index_type: f.index_type.clone(),
            file_name: f.file_name.clone(),
            file_size: f.file_size,
            row_count: f.row_count,
            dv_ranges: f.dv_ranges.clone(),
            external_path: f.external_path.clone(),
            global_index: f.global_index.clone(),
        }
    }

    /// The index file this entry lists.
    pub fn index_file(&self) -> IndexFileMeta {
        IndexFileMeta {
            index_type: self.index_type.clone(),
            file_name: self.file_name.clone(),
            file_size: self.file_size,
            row_count: self.row_count,
            dv_ranges: self.dv_ranges.clone(),
            external_path: self.external_path.clone(),
            global_index: self.global_index.clone(),
        }
    }
}

fn to_global_index(v: Value, ctx: &Ctx) -> Result<GlobalIndexMeta> {
    const F: &str = "_GLOBAL_INDEX";
    let mut f: [Option<Value>; 6] = Default::default();
    for (n, value) in to_record(strip_union(v), F, ctx)? {
        let slot = match n.as_str() {
            "_ROW_RANGE_START" => 0,
            "_ROW_RANGE_END" => 1,
            "_INDEX_FIELD_ID" => 2,
            "_EXTRA_FIELD_IDS" => 3,
            "_INDEX_META" => 4,
            "_SOURCE_META" => 5,
            _ => continue,
        };
        f[slot] = Some(value);
    }
    let [start, end, id, extra, meta, source] = f;
    let bytes = |v: Option<Value>| optional(v).map(|v| to_bytes(v, F, ctx)).transpose();
    Ok(GlobalIndexMeta {
        row_range_start: to_i64(required(start, "_ROW_RANGE_START", ctx)?, F, ctx)?,
        row_range_end: to_i64(required(end, "_ROW_RANGE_END", ctx)?, F, ctx)?,
        index_field_id: to_i32(required(id, "_INDEX_FIELD_ID", ctx)?, F, ctx)?,
        extra_field_ids: optional(extra)
            .map(|v| {
                to_array(v, F, ctx)?
                    .into_iter()
                    .map(|x| to_i32(strip_union(x), F, ctx))
                    .collect::<Result<Vec<_>>>()
            })
            .transpose()?,
        index_meta: bytes(meta)?,
        source_meta: bytes(source)?,
    })
}

fn to_dv_range(v: Value, ctx: &Ctx) -> Result<DeletionVectorRange> {
    const F: &str = "_DELETIONS_VECTORS_RANGES";
    let (mut name, mut offset, mut length, mut card) = (None, None, None, None);
    for (n, value) in to_record(strip_union(v), F, ctx)? {
        match n.as_str() {
            "f0" => name = Some(value),
            "f1" => offset = Some(value),
            "f2" => length = Some(value),
            "_CARDINALITY" => card = Some(value),
            _ => {}
        }
    }
    Ok(DeletionVectorRange {
        data_file: to_string(required(name, "f0", ctx)?, F, ctx)?,
        offset: to_i32(required(offset, "f1", ctx)?, F, ctx)?,
        length: to_i32(required(length, "f2", ctx)?, F, ctx)?,
        cardinality: optional(card).map(|v| to_i64(v, F, ctx)).transpose()?,
    })
}

fn to_index_manifest_entry(v: Value, ctx: &Ctx) -> Result<IndexManifestEntry> {
    let mut f: [Option<Value>; 11] = Default::default();
    for (name, value) in to_record(strip_union(v), "<record>", ctx)? {
        let slot = match name.as_str() {
            "_VERSION" => 0,
            "_KIND" => 1,
            "_PARTITION" => 2,
            "_BUCKET" => 3,
            "_INDEX_TYPE" => 4,
            "_FILE_NAME" => 5,
            "_FILE_SIZE" => 6,
            "_ROW_COUNT" => 7,
            "_DELETIONS_VECTORS_RANGES" => 8,
            "_EXTERNAL_PATH" => 9,
            "_GLOBAL_INDEX" => 10,
            _ => continue,
        };
        f[slot] = Some(value);
    }
    let [version, kind, partition, bucket, index_type, file_name, file_size, row_count, ranges, external, global] =
        f;
    let version = to_i32(required(version, "_VERSION", ctx)?, "_VERSION", ctx)?;
    if version != INDEX_MANIFEST_VERSION {
        return Err(ctx.err(
            "_VERSION",
            format!("unsupported format version {version} (expected {INDEX_MANIFEST_VERSION})"),
        ));
    }
    let kind_raw = to_i32(required(kind, "_KIND", ctx)?, "_KIND", ctx)?;
    let kind = FileKind::from_byte(kind_raw)
        .ok_or_else(|| ctx.err("_KIND", format!("unknown file kind {kind_raw}")))?;
    let dv_ranges = match optional(ranges) {
        None => None,
        Some(v) => Some(
            to_array(v, "_DELETIONS_VECTORS_RANGES", ctx)?
                .into_iter()
                .map(|r| to_dv_range(r, ctx))
                .collect::<Result<Vec<_>>>()?,
        ),
    };
    Ok(IndexManifestEntry {
        kind,
        partition: to_bytes(required(partition, "_PARTITION", ctx)?, "_PARTITION", ctx)?,
        bucket: to_i32(required(bucket, "_BUCKET", ctx)?, "_BUCKET", ctx)?,
        index_type: to_string(
            required(index_type, "_INDEX_TYPE", ctx)?,
            "_INDEX_TYPE",
            ctx,
        )?,
        file_name: to_string(required(file_name, "_FILE_NAME", ctx)?, "_FILE_NAME", ctx)?,
        file_size: to_i64(required(file_size, "_FILE_SIZE", ctx)?, "_FILE_SIZE", ctx)?,
        row_count: to_i64(required(row_count, "_ROW_COUNT", ctx)?, "_ROW_COUNT", ctx)?,
        dv_ranges,
        external_path: optional(external)
            .map(|v| to_string(v, "_EXTERNAL_PATH", ctx))
            .transpose()?,
        global_index: optional(global)
            .map(|v| to_global_index(v, ctx))
            .transpose()?,
    })
}

/// Decodes an index manifest (Java 0.9 and later). `path` is only used in error messages.
pub fn read_index_manifest(bytes: &[u8], path: &Path) -> Result<Vec<IndexManifestEntry>> {
    read_avro(bytes, path, "index manifest entry", to_index_manifest_entry)
}

/// The live index files of an index manifest: Java stores only ADD entries (each snapshot's
/// index manifest is cumulative), but a DELETE cancels an earlier ADD of the same
/// (partition, bucket, file) should one appear.
pub fn live_index_entries(entries: Vec<IndexManifestEntry>) -> Vec<IndexManifestEntry> {
    let mut live: Vec<IndexManifestEntry> = Vec::with_capacity(entries.len());
    for e in entries {
        match e.kind {
            FileKind::Add => live.push(e),
            FileKind::Delete => live.retain(|x| {
                (&x.partition, x.bucket, &x.file_name) != (&e.partition, e.bucket, &e.file_name)
            }),
        }
    }
    live
}

// ---------------------------------------------------------------------------------------------
// ADD / DELETE merge (§4.5)
// ---------------------------------------------------------------------------------------------

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Java's `FileEntry.mergeEntries`: entries in manifest order, ADD inserts its identity (error if
/// already present), DELETE removes a present identity or else is kept as a pending tombstone.
/// Returns the surviving entries (ADDs and pending DELETEs) in insertion order.
pub fn merge_entries_keep_deletes(
    entries: impl IntoIterator<Item = ManifestEntry>,
) -> Result<Vec<ManifestEntry>> {
    let mut slots: Vec<Option<ManifestEntry>> = Vec::new();
    let mut index: HashMap<FileIdentifier, usize> = HashMap::new();
    for entry in entries {
        match (entry.kind, index.entry(entry.identifier())) {
            (FileKind::Add, Entry::Occupied(_)) => {
                // The manifests themselves are inconsistent (a commit referenced one data file
                // twice): the table's metadata is corrupt, not the caller's argument.
                return Err(Error::corrupt(
                    &entry.file.file_name,
                    format!(
                    "trying to add file {} (partition {}, bucket {}, level {}) which is already added: \
                     the table's manifests reference this data file twice",
                    entry.file.file_name,
                    hex(&entry.partition),
                    entry.bucket,
                    entry.file.level
                )));
            }
            (FileKind::Delete, Entry::Occupied(o)) => {
                if let Some(slot) = slots.get_mut(o.remove()) {
                    *slot = None;
                }
            }
            (_, Entry::Vacant(v)) => {
                v.insert(slots.len());
                slots.push(Some(entry));
            }
        }
    }
    Ok(slots.into_iter().flatten().collect())
}

/// The live-file set of a sequence of manifest entries (base list then delta list, entries in
/// file order): like [`merge_entries_keep_deletes`] but only the ADD entries, in the order they
/// were added. Pending DELETE tombstones (of files added in manifests not passed in) are dropped.
pub fn merge_entries(
    entries: impl IntoIterator<Item = ManifestEntry>,
) -> Result<Vec<ManifestEntry>> {
    let mut merged = merge_entries_keep_deletes(entries)?;
    merged.retain(|e| e.kind == FileKind::Add);
    Ok(merged)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::path::PathBuf;

    const CODECS: [&str; 6] = ["zstd", "ZSTD", "null", "none", "deflate", "snappy"];

    fn fixture_dir() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/pypaimon")
    }

    fn row_int(v: i32) -> Vec<u8> {
        let mut b = vec![0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0];
        b.extend_from_slice(&v.to_le_bytes());
        b.extend_from_slice(&[0; 4]);
        b
    }

    fn full_file(name: &str) -> DataFileMeta {
        DataFileMeta {
            file_name: name.to_string(),
            file_size: 2180,
            row_count: 3,
            min_key: row_int(1),
            max_key: row_int(9),
            key_stats: SimpleStats {
                min_values: row_int(1),
                max_values: row_int(9),
                null_counts: vec![Some(0)],
            },
            value_stats: SimpleStats {
                min_values: row_int(-5),
                max_values: row_int(i32::MAX),
                null_counts: vec![None],
            },
            min_sequence_number: 0,
            max_sequence_number: i64::MAX,
            schema_id: 3,
            level: 5,
            extra_files: vec!["x.index".into(), "y".into()],
            creation_time: Some(1_714_979_289_123),
            delete_row_count: Some(1),
            embedded_index: Some(vec![1, 2, 3, 0, 255]),
            file_source: Some(1),
            value_stats_cols: Some(vec!["price".into()]),
            external_path: Some("s3://b/p/data.parquet".into()),
            first_row_id: Some(-7),
            write_cols: Some(vec!["a".into(), "b".into()]),
            write_cols_sequences: Some(vec![4, i64::MIN]),
        }
    }

    fn minimal_file(name: &str) -> DataFileMeta {
        DataFileMeta {
            file_name: name.to_string(),
            file_size: 1,
            row_count: 0,
            min_key: EMPTY_ROW.to_vec(),
            max_key: EMPTY_ROW.to_vec(),
            key_stats: SimpleStats::empty(),
            value_stats: SimpleStats::empty(),
            min_sequence_number: -1,
            max_sequence_number: -1,
            schema_id: 0,
            level: 0,
            extra_files: vec![],
            creation_time: None,
            delete_row_count: None,
            embedded_index: None,
            file_source: None,
            value_stats_cols: None,
            external_path: None,
            first_row_id: None,
            write_cols: None,
            write_cols_sequences: None,
        }
    }

    fn entry(kind: FileKind, file: DataFileMeta) -> ManifestEntry {
        ManifestEntry {
            kind,
            partition: row_int(20240101),
            bucket: 1,
            total_buckets: 2,
            file,
        }
    }

    pub(super) fn sample_entries() -> Vec<ManifestEntry> {
        vec![
            entry(FileKind::Add, full_file("data-a-0.parquet")),
            entry(FileKind::Delete, minimal_file("data-b-0.parquet")),
            ManifestEntry {
                kind: FileKind::Add,
                partition: EMPTY_ROW.to_vec(),
                bucket: 0,
                total_buckets: -1,
                file: minimal_file("data-c-0.parquet"),
            },
        ]
    }

    fn sample_metas() -> Vec<ManifestFileMeta> {
        vec![
            ManifestFileMeta {
                file_name: "manifest-a-0".into(),
                file_size: 2400,
                num_added_files: 2,
                num_deleted_files: 1,
                partition_stats: SimpleStats {
                    min_values: row_int(1),
                    max_values: row_int(2),
                    null_counts: vec![Some(0)],
                },
                schema_id: 4,
                min_bucket: Some(0),
                max_bucket: Some(1),
                min_level: Some(0),
                max_level: Some(5),
                min_row_id: Some(10),
                max_row_id: Some(20),
            },
            ManifestFileMeta {
                file_name: "manifest-b-0".into(),
                file_size: 1,
                num_added_files: 0,
                num_deleted_files: 0,
                partition_stats: SimpleStats::empty(),
                schema_id: 0,
                min_bucket: None,
                max_bucket: None,
                min_level: None,
                max_level: None,
                min_row_id: None,
                max_row_id: None,
            },
        ]
    }

    fn avro_codec_name(bytes: &[u8]) -> &'static str {
        let has = |s: &str| bytes.windows(s.len()).any(|w| w == s.as_bytes());
        for name in ["zstandard", "deflate", "snappy", "null"] {
            if has(name) {
                return name;
            }
        }
        "?"
    }

    #[test]
    fn simple_stats_empty_is_arity_zero() {
        let s = SimpleStats::empty();
        assert_eq!(s.min_values, vec![0u8; 12]);
        assert_eq!(s.max_values, vec![0u8; 12]);
        assert!(s.null_counts.is_empty());
    }

    #[test]
    fn manifest_round_trip_every_codec() {
        let entries = sample_entries();
        let metas = sample_metas();
        let path = Path::new("mem://manifest");
        for codec in CODECS {
            let bytes = write_manifest_entries(&entries, codec).unwrap();
            let expected_codec = match codec {
                "zstd" | "ZSTD" => "zstandard",
                "none" => "null",
                c => c,
            };
            assert_eq!(avro_codec_name(&bytes), expected_codec, "{codec}");
            assert_eq!(
                read_manifest_entries(&bytes, path).unwrap(),
                entries,
                "{codec}"
            );
            let bytes = write_manifest_list(&metas, codec).unwrap();
            assert_eq!(read_manifest_list(&bytes, path).unwrap(), metas, "{codec}");
            let empty = write_manifest_list(&[], codec).unwrap();
            assert!(read_manifest_list(&empty, path).unwrap().is_empty());
        }
    }

    #[test]
    fn unknown_codec_is_unsupported() {
        for codec in ["lz4", "bzip2", ""] {
            let err = write_manifest_entries(&sample_entries(), codec).unwrap_err();
            assert!(matches!(err, Error::Unsupported { .. }), "{err}");
            assert!(err.to_string().contains(&format!("'{codec}'")), "{err}");
            let err = write_manifest_list(&sample_metas(), codec).unwrap_err();
            assert!(matches!(err, Error::Unsupported { .. }), "{err}");
        }
    }

    #[test]
    fn written_schema_uses_java_names_and_types() {
        let bytes = write_manifest_entries(&sample_entries(), "none").unwrap();
        let reader = Reader::new(&bytes[..]).unwrap();
        let schema = serde_json::to_value(reader.writer_schema()).unwrap();
        let text = schema.to_string();
        let fullname = |v: &serde_json::Value| {
            let ns = v.get("namespace").and_then(|n| n.as_str());
            let name = v["name"].as_str().unwrap_or_default().to_string();
            match ns {
                Some(ns) if !name.contains('.') => format!("{ns}.{name}"),
                _ => name,
            }
        };
        assert_eq!(fullname(&schema), JAVA_RECORD);
        let fields = schema["fields"].as_array().unwrap();
        let names: Vec<&str> = fields.iter().map(|f| f["name"].as_str().unwrap()).collect();
        assert_eq!(
            names,
            [
                "_VERSION",
                "_KIND",
                "_PARTITION",
                "_BUCKET",
                "_TOTAL_BUCKETS",
                "_FILE"
            ]
        );
        let file = &fields[5]["type"];
        assert_eq!(fullname(file), format!("{JAVA_RECORD}__FILE"));
        let file_fields = file["fields"].as_array().unwrap();
        assert_eq!(file_fields.len(), 21);
        assert_eq!(
            fullname(&file_fields[5]["type"]),
            format!("{JAVA_RECORD}__FILE__KEY_STATS")
        );
        assert_eq!(file_fields[12]["name"], "_CREATION_TIME");
        assert_eq!(
            file_fields[12]["type"],
            json!(["null", {"type": "long", "logicalType": "timestamp-millis"}])
        );
        assert_eq!(file_fields[12]["default"], serde_json::Value::Null);
        assert!(file_fields[12].as_object().unwrap().contains_key("default"));
        assert_eq!(file_fields[20]["name"], "_WRITE_COLS_SEQUENCES");
        assert!(text.contains("_NULL_COUNTS"));

        let bytes = write_manifest_list(&sample_metas(), "none").unwrap();
        let reader = Reader::new(&bytes[..]).unwrap();
        let schema = serde_json::to_value(reader.writer_schema()).unwrap();
        assert_eq!(fullname(&schema), JAVA_RECORD);
        assert_eq!(schema["fields"].as_array().unwrap().len(), 13);
        assert_eq!(
            fullname(&schema["fields"][5]["type"]),
            format!("{JAVA_RECORD}__PARTITION_STATS")
        );
    }

    #[test]
    fn empty_null_counts_written_as_array_not_null() {
        let bytes = write_manifest_list(&sample_metas()[1..], "none").unwrap();
        let reader = Reader::new(&bytes[..]).unwrap();
        let rec = reader.into_iter().next().unwrap().unwrap();
        let Value::Record(fields) = rec else { panic!() };
        let stats = &fields
            .iter()
            .find(|(n, _)| n == "_PARTITION_STATS")
            .unwrap()
            .1;
        let Value::Record(sf) = stats else { panic!() };
        assert_eq!(
            sf[2],
            (
                "_NULL_COUNTS".to_string(),
                Value::Union(1, Box::new(Value::Array(vec![])))
            )
        );
    }

    /// Converts a decoded entry into the shape of fastavro's dict (bytes as hex), to compare
    /// with the expected values recorded by gen_fixtures.py.
    fn stats_json(s: &SimpleStats) -> serde_json::Value {
        json!({"_MIN_VALUES": hex(&s.min_values), "_MAX_VALUES": hex(&s.max_values),
               "_NULL_COUNTS": s.null_counts})
    }

    fn entry_json(e: &ManifestEntry) -> serde_json::Value {
        let f = &e.file;
        json!({
            "_VERSION": 2, "_KIND": e.kind.to_byte(), "_PARTITION": hex(&e.partition),
            "_BUCKET": e.bucket, "_TOTAL_BUCKETS": e.total_buckets,
            "_FILE": {
                "_FILE_NAME": f.file_name, "_FILE_SIZE": f.file_size, "_ROW_COUNT": f.row_count,
                "_MIN_KEY": hex(&f.min_key), "_MAX_KEY": hex(&f.max_key),
                "_KEY_STATS": stats_json(&f.key_stats), "_VALUE_STATS": stats_json(&f.value_stats),
                "_MIN_SEQUENCE_NUMBER": f.min_sequence_number,
                "_MAX_SEQUENCE_NUMBER": f.max_sequence_number,
                "_SCHEMA_ID": f.schema_id, "_LEVEL": f.level, "_EXTRA_FILES": f.extra_files,
                "_CREATION_TIME": f.creation_time, "_DELETE_ROW_COUNT": f.delete_row_count,
                "_EMBEDDED_FILE_INDEX": f.embedded_index.as_deref().map(hex),
                "_FILE_SOURCE": f.file_source, "_VALUE_STATS_COLS": f.value_stats_cols,
                "_EXTERNAL_PATH": f.external_path, "_FIRST_ROW_ID": f.first_row_id,
                "_WRITE_COLS": f.write_cols, "_WRITE_COLS_SEQUENCES": f.write_cols_sequences,
            }
        })
    }

    fn meta_json(m: &ManifestFileMeta) -> serde_json::Value {
        json!({
            "_VERSION": 2, "_FILE_NAME": m.file_name, "_FILE_SIZE": m.file_size,
            "_NUM_ADDED_FILES": m.num_added_files, "_NUM_DELETED_FILES": m.num_deleted_files,
            "_PARTITION_STATS": stats_json(&m.partition_stats), "_SCHEMA_ID": m.schema_id,
            "_MIN_BUCKET": m.min_bucket, "_MAX_BUCKET": m.max_bucket,
            "_MIN_LEVEL": m.min_level, "_MAX_LEVEL": m.max_level,
            "_MIN_ROW_ID": m.min_row_id, "_MAX_ROW_ID": m.max_row_id,
        })
    }

    fn expected_fixture() -> serde_json::Value {
        let text = std::fs::read_to_string(fixture_dir().join("expected.json")).unwrap();
        serde_json::from_str(&text).unwrap()
    }

    #[test]
    fn reads_pypaimon_manifest_field_by_field() {
        let path = fixture_dir().join("manifest-commit2.avro");
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(avro_codec_name(&bytes), "zstandard");
        let entries = read_manifest_entries(&bytes, &path).unwrap();
        let expected = expected_fixture();
        let records = expected["manifest"]["records"].as_array().unwrap();
        assert_eq!(entries.len(), records.len());
        for (e, rec) in entries.iter().zip(records) {
            assert_eq!(&entry_json(e), rec);
        }
        // Spot checks independent of the JSON: commit 2 wrote {dt=2024-01-01: +U id1, -D id2}
        // and {dt=2024-01-02: +I id4}; partition dt='2024-01-01' per §5.4.
        let e = &entries[0];
        assert_eq!(e.kind, FileKind::Add);
        assert_eq!(
            hex(&e.partition),
            "0000000100000000000000000a00000010000000323032342d30312d3031000000000000"
        );
        assert_eq!((e.bucket, e.total_buckets, e.file.row_count), (0, 2, 2));
        assert_eq!(e.file.min_key, row_int(1));
        assert_eq!(e.file.max_key, row_int(2));
        assert_eq!(e.file.delete_row_count, Some(0)); // pypaimon always writes 0
        assert_eq!(e.file.value_stats_cols, None);
        assert_eq!(e.file.value_stats.null_counts, vec![Some(0); 5]);
        assert_eq!(entries[1].file.value_stats.null_counts[2], Some(1));
        assert_eq!(merge_entries(entries.clone()).unwrap(), entries);
    }

    #[test]
    fn reads_pypaimon_manifest_list_field_by_field() {
        let path = fixture_dir().join("manifest-list-snap2-base.avro");
        let bytes = std::fs::read(&path).unwrap();
        let metas = read_manifest_list(&bytes, &path).unwrap();
        let expected = expected_fixture();
        let records = expected["manifest_list"]["records"].as_array().unwrap();
        assert_eq!(metas.len(), records.len());
        for (m, rec) in metas.iter().zip(records) {
            let mut rec = rec.clone();
            let obj = rec.as_object_mut().unwrap();
            // pypaimon-only extras, ignored by Java and by us.
            assert!(obj.remove("_TOTAL_BUCKETS").is_some());
            assert!(obj.remove("_EXTRA_FILES").is_some());
            assert_eq!(meta_json(m), rec);
        }
        assert_eq!(metas[0].num_added_files, 2);
        assert_eq!(
            (metas[0].min_bucket, metas[0].max_bucket),
            (Some(0), Some(1))
        );
    }

    /// Writes `value` with an arbitrary writer schema, for reader-tolerance tests.
    fn write_custom(schema: &serde_json::Value, values: Vec<Value>, codec: Codec) -> Vec<u8> {
        let schema = Schema::parse(schema).unwrap();
        let mut w = Writer::with_codec(&schema, Vec::new(), codec);
        for v in values {
            w.append(v).unwrap();
        }
        w.into_inner().unwrap()
    }

    /// Index manifests as Paimon 0.9 (ranges `f0, f1, f2`) and 1.0 (plus `_CARDINALITY`) write
    /// them: DV entries with their ranges, a HASH entry without, a DELETE cancelling an ADD.
    #[test]
    fn reads_index_manifests_of_0_9_and_1_0() {
        for with_card in [false, true] {
            let mut range_fields = vec![
                json!({"name": "f0", "type": "string"}),
                json!({"name": "f1", "type": "int"}),
                json!({"name": "f2", "type": "int"}),
            ];
            if with_card {
                range_fields.push(json!({"name": "_CARDINALITY", "type": ["null", "long"]}));
            }
            let schema = json!({"type": "record", "name": "IndexManifestEntry", "fields": [
                {"name": "_VERSION", "type": "int"},
                {"name": "_KIND", "type": "int"},
                {"name": "_PARTITION", "type": "bytes"},
                {"name": "_BUCKET", "type": "int"},
                {"name": "_INDEX_TYPE", "type": "string"},
                {"name": "_FILE_NAME", "type": "string"},
                {"name": "_FILE_SIZE", "type": "long"},
                {"name": "_ROW_COUNT", "type": "long"},
                {"name": "_DELETIONS_VECTORS_RANGES", "type": ["null", {"type": "array", "items":
                    {"type": "record", "name": "DvMeta", "fields": range_fields}}]},
            ]});
            let range = |name: &str, off: i32, len: i32| {
                let mut f = vec![
                    ("f0".to_string(), Value::String(name.into())),
                    ("f1".to_string(), Value::Int(off)),
                    ("f2".to_string(), Value::Int(len)),
                ];
                if with_card {
                    f.push((
                        "_CARDINALITY".into(),
                        Value::Union(1, Box::new(Value::Long(3))),
                    ));
                }
                Value::Record(f)
            };
            let entry = |kind: i32, ty: &str, file: &str, ranges: Option<Vec<Value>>| {
                Value::Record(vec![
                    ("_VERSION".into(), Value::Int(1)),
                    ("_KIND".into(), Value::Int(kind)),
                    ("_PARTITION".into(), Value::Bytes(vec![0, 0, 0, 0])),
                    ("_BUCKET".into(), Value::Int(1)),
                    ("_INDEX_TYPE".into(), Value::String(ty.into())),
                    ("_FILE_NAME".into(), Value::String(file.into())),
                    ("_FILE_SIZE".into(), Value::Long(35)),
                    ("_ROW_COUNT".into(), Value::Long(2)),
                    (
                        "_DELETIONS_VECTORS_RANGES".into(),
                        match ranges {
                            None => Value::Union(0, Box::new(Value::Null)),
                            Some(r) => Value::Union(1, Box::new(Value::Array(r))),
                        },
                    ),
                ])
            };
            let bytes = write_custom(
                &schema,
                vec![
                    entry(0, "HASH", "index-h-0", None),
                    entry(
                        0,
                        DELETION_VECTORS_INDEX,
                        "index-old-0",
                        Some(vec![range("a", 1, 9)]),
                    ),
                    entry(
                        0,
                        DELETION_VECTORS_INDEX,
                        "index-d-0",
                        Some(vec![range("a", 1, 26), range("b", 35, 26)]),
                    ),
                    entry(1, DELETION_VECTORS_INDEX, "index-old-0", None),
                ],
                Codec::Null,
            );
            let all = read_index_manifest(&bytes, Path::new("index-manifest-x")).unwrap();
            assert_eq!(all.len(), 4);
            let live = live_index_entries(all);
            let names: Vec<&str> = live.iter().map(|e| e.file_name.as_str()).collect();
            assert_eq!(names, ["index-h-0", "index-d-0"]);
            assert_eq!(live[0].dv_ranges, None);
            let card = with_card.then_some(3);
            assert_eq!(
                live[1].dv_ranges.as_deref().unwrap()[1],
                DeletionVectorRange {
                    data_file: "b".into(),
                    offset: 35,
                    length: 26,
                    cardinality: card
                }
            );
            assert_eq!(
                (live[1].bucket, live[1].file_size, live[1].row_count),
                (1, 35, 2)
            );
        }
    }

    /// What we write reads back as written: DV entries with ranges (with and without a
    /// cardinality), a HASH entry without, an external path.
    #[test]
    fn index_manifest_round_trips() {
        let range = |f: &str, card| DeletionVectorRange {
            data_file: f.into(),
            offset: 1,
            length: 22,
            cardinality: card,
        };
        let entries = vec![
            IndexManifestEntry {
                kind: FileKind::Add,
                partition: vec![0, 0, 0, 0],
                bucket: 3,
                index_type: DELETION_VECTORS_INDEX.into(),
                file_name: "index-a-0".into(),
                file_size: 45,
                row_count: 2,
                dv_ranges: Some(vec![range("data-1", Some(4)), range("data-2", None)]),
                external_path: None,
                global_index: None,
            },
            IndexManifestEntry {
                kind: FileKind::Add,
                partition: vec![],
                bucket: 0,
                index_type: "HASH".into(),
                file_name: "index-b-0".into(),
                file_size: 8,
                row_count: 2,
                dv_ranges: None,
                external_path: Some("s3://b/index-b-0".into()),
                global_index: None,
            },
            // a global index file (pypaimon / Java `create_global_index`): carried as read
            IndexManifestEntry {
                kind: FileKind::Add,
                partition: vec![],
                bucket: 0,
                index_type: "btree".into(),
                file_name: "btree-global-index-c.index".into(),
                file_size: 99,
                row_count: 10,
                dv_ranges: None,
                external_path: None,
                global_index: Some(GlobalIndexMeta {
                    row_range_start: 0,
                    row_range_end: 9,
                    index_field_id: 2,
                    extra_field_ids: Some(vec![3, 4]),
                    index_meta: Some(vec![1, 2, 3]),
                    source_meta: None,
                }),
            },
        ];
        for codec in ["zstd", "none"] {
            let bytes = write_index_manifest(&entries, codec).unwrap();
            let back = read_index_manifest(&bytes, Path::new("index-manifest-x")).unwrap();
            assert_eq!(back, entries);
            assert_eq!(
                IndexManifestEntry::of(FileKind::Add, &[0, 0, 0, 0], 3, &back[0].index_file()),
                entries[0]
            );
        }
    }

    fn record_mut(v: &mut Value) -> &mut Vec<(String, Value)> {
        match v {
            Value::Record(f) => f,
            _ => panic!("not a record"),
        }
    }

    #[test]
    fn reads_by_name_with_missing_extra_and_reordered_fields() {
        const DROPPED: [&str; 4] = [
            "_EXTERNAL_PATH",
            "_FIRST_ROW_ID",
            "_WRITE_COLS",
            "_WRITE_COLS_SEQUENCES",
        ];
        let mut schema = manifest_entry_schema_json();
        schema["name"] = json!("ManifestEntry");
        let fields = schema["fields"].as_array_mut().unwrap();
        fields.reverse();
        fields.push(json!({"name": "_UNKNOWN", "type": ["null", "string"], "default": null}));
        let file = &mut fields[0]["type"];
        file["name"] = json!("DataFileMeta");
        let ff = file["fields"].as_array_mut().unwrap();
        ff.retain(|f| !DROPPED.contains(&f["name"].as_str().unwrap()));
        ff[5]["type"]["name"] = json!("record_KEY_STATS");
        ff.swap(0, 10);

        let original = full_file("data-x-0.parquet");
        let mut value = manifest_entry_value(&entry(FileKind::Delete, original.clone()));
        let top = record_mut(&mut value);
        top.reverse();
        top.push(("_UNKNOWN".into(), union_some(Value::String("zzz".into()))));
        let file_fields = record_mut(&mut top[0].1);
        file_fields.retain(|(n, _)| !DROPPED.contains(&n.as_str()));
        file_fields.swap(0, 10);
        // A null _NULL_COUNTS (pypaimon's schema allows it) reads as "no counts".
        let vstats = record_mut(&mut file_fields[6].1);
        assert_eq!(vstats[2].0, "_NULL_COUNTS");
        vstats[2].1 = union_null();

        let bytes = write_custom(&schema, vec![value], Codec::Snappy);
        let got = read_manifest_entries(&bytes, Path::new("m")).unwrap();
        let mut expected = original;
        expected.external_path = None;
        expected.first_row_id = None;
        expected.write_cols = None;
        expected.write_cols_sequences = None;
        expected.value_stats.null_counts = vec![];
        assert_eq!(got, vec![entry(FileKind::Delete, expected)]);
    }

    #[test]
    fn reads_manifest_list_with_pypaimon_extras_and_old_java_fields() {
        // Java 1.x lists have no bucket/level/row-id range; pypaimon adds two extra fields.
        let mut schema = manifest_file_meta_schema_json();
        let fields = schema["fields"].as_array_mut().unwrap();
        fields.truncate(7);
        fields.push(nullable("_TOTAL_BUCKETS", json!("int")));
        fields.push(nullable(
            "_EXTRA_FILES",
            json!({"type": "array", "items": "string"}),
        ));
        let meta = sample_metas().remove(0);
        let mut value = manifest_file_meta_value(&meta);
        let rec = record_mut(&mut value);
        rec.truncate(7);
        rec.push(("_TOTAL_BUCKETS".into(), union_some(Value::Int(2))));
        rec.push(("_EXTRA_FILES".into(), union_null()));
        let bytes = write_custom(
            &schema,
            vec![value],
            Codec::Deflate(DeflateSettings::default()),
        );
        let got = read_manifest_list(&bytes, Path::new("l")).unwrap();
        let expected = ManifestFileMeta {
            min_bucket: None,
            max_bucket: None,
            min_level: None,
            max_level: None,
            min_row_id: None,
            max_row_id: None,
            ..meta
        };
        assert_eq!(got, vec![expected]);
    }

    #[test]
    fn rejects_other_versions_naming_the_path() {
        let schema = manifest_entry_schema_json();
        let mut value = manifest_entry_value(&sample_entries()[0]);
        record_mut(&mut value)[0].1 = Value::Int(1);
        let bytes = write_custom(&schema, vec![value], Codec::Null);
        let err = read_manifest_entries(&bytes, Path::new("/t/manifest/manifest-x-0")).unwrap_err();
        assert!(matches!(err, Error::CorruptFile { .. }), "{err}");
        let msg = err.to_string();
        assert!(
            msg.contains("/t/manifest/manifest-x-0") && msg.contains("version 1"),
            "{msg}"
        );

        let schema = manifest_file_meta_schema_json();
        let mut value = manifest_file_meta_value(&sample_metas()[0]);
        record_mut(&mut value)[0].1 = Value::Int(3);
        let bytes = write_custom(&schema, vec![value], Codec::Null);
        let err = read_manifest_list(&bytes, Path::new("/t/manifest/list-0")).unwrap_err();
        assert!(err.to_string().contains("/t/manifest/list-0"), "{err}");
    }

    #[test]
    fn missing_required_field_and_bad_kind_are_corrupt() {
        let mut schema = manifest_entry_schema_json();
        schema["fields"].as_array_mut().unwrap().remove(3); // _BUCKET
        let mut value = manifest_entry_value(&sample_entries()[0]);
        record_mut(&mut value).remove(3);
        let bytes = write_custom(&schema, vec![value], Codec::Null);
        let err = read_manifest_entries(&bytes, Path::new("p")).unwrap_err();
        assert!(err.to_string().contains("_BUCKET"), "{err}");

        let schema = manifest_entry_schema_json();
        let mut value = manifest_entry_value(&sample_entries()[0]);
        record_mut(&mut value)[1].1 = Value::Int(7);
        let bytes = write_custom(&schema, vec![value], Codec::Null);
        let err = read_manifest_entries(&bytes, Path::new("p")).unwrap_err();
        assert!(err.to_string().contains("unknown file kind 7"), "{err}");
    }

    #[test]
    fn unsupported_codec_on_read() {
        let mut bytes = write_manifest_list(&sample_metas(), "none").unwrap();
        // Rename the codec "null" in the header to "nul2", which no reader knows.
        let pos = bytes.windows(4).position(|w| w == b"null").unwrap();
        bytes[pos + 3] = b'2';
        let err = read_manifest_list(&bytes, Path::new("l")).unwrap_err();
        assert!(err.to_string().contains("nul2"), "{err}");
    }

    #[test]
    fn corrupt_input_is_an_error_never_a_panic() {
        let path = Path::new("/x/manifest-c");
        for bytes in [&b""[..], b"Obj\x01", b"garbage that is not avro"] {
            let err = read_manifest_entries(bytes, path).unwrap_err();
            assert!(matches!(err, Error::CorruptFile { .. }), "{err}");
        }
        // A snappy block shorter than its 4-byte checksum makes apache-avro 0.21 panic
        // (slice index underflow); it must surface as a corrupt-file error.
        let good = write_manifest_entries(&sample_entries(), "snappy").unwrap();
        let sync = &good[good.len() - 16..];
        let header_end = good.windows(16).position(|w| w == sync).unwrap() + 16;
        let mut bad = good[..header_end].to_vec();
        bad.extend_from_slice(&[0x02, 0x04, 0xff, 0xff]); // 1 record, 2 bytes
        bad.extend_from_slice(sync);
        let err = read_manifest_entries(&bad, path).unwrap_err();
        assert!(matches!(err, Error::CorruptFile { .. }), "{err}");
        // Every truncation and every single-byte corruption of small files in each codec.
        for codec in ["snappy", "zstd", "deflate", "none"] {
            let good = write_manifest_entries(&sample_entries()[..2], codec).unwrap();
            for n in 0..good.len() {
                let _ = read_manifest_entries(&good[..n], path);
                let mut bad = good.clone();
                bad[n] ^= 0xa5;
                let _ = read_manifest_entries(&bad, path);
                let _ = read_manifest_list(&bad, path);
            }
        }
    }

    #[test]
    fn merge_add_delete_semantics() {
        let f = |name: &str, level: i32| {
            let mut m = minimal_file(name);
            m.level = level;
            m
        };
        let add = |name: &str, level| entry(FileKind::Add, f(name, level));
        let del = |name: &str, level| entry(FileKind::Delete, f(name, level));
        let names = |v: Vec<ManifestEntry>| {
            v.iter()
                .map(|e| format!("{:?}:{}@{}", e.kind, e.file.file_name, e.file.level))
                .collect::<Vec<_>>()
        };

        // Upgrade without rewrite, delete, pending tombstone of a file not seen.
        let input = vec![
            add("a", 0),
            add("b", 0),
            add("c", 0),
            del("a", 0),
            add("a", 1),
            del("b", 0),
            del("z", 0),
            add("d", 0),
        ];
        assert_eq!(
            names(merge_entries(input.clone()).unwrap()),
            ["Add:c@0", "Add:a@1", "Add:d@0"]
        );
        assert_eq!(
            names(merge_entries_keep_deletes(input).unwrap()),
            ["Add:c@0", "Add:a@1", "Delete:z@0", "Add:d@0"]
        );

        // Same name in another partition or bucket is another file.
        let mut other = add("c", 0);
        other.bucket = 0;
        assert_eq!(merge_entries(vec![add("c", 0), other]).unwrap().len(), 2);

        // Adding a live identity again is an error naming the file.
        let err = merge_entries(vec![add("a", 0), add("b", 0), add("a", 0)]).unwrap_err();
        assert!(err.to_string().contains("trying to add file a "), "{err}");
        assert!(matches!(err, Error::CorruptFile { .. }), "{err}");
        assert!(merge_entries(vec![add("a", 0), del("a", 0), add("a", 0)]).is_ok());
    }

    #[test]
    fn large_manifest_round_trip_and_merge() {
        let n = 20_000;
        let entries: Vec<ManifestEntry> = (0..n)
            .map(|i| {
                let mut e = entry(FileKind::Add, full_file(&format!("data-{i}-0.parquet")));
                e.bucket = i % 7;
                e
            })
            .collect();
        let bytes = write_manifest_entries(&entries, "zstd").unwrap();
        let read = read_manifest_entries(&bytes, Path::new("big")).unwrap();
        assert_eq!(read.len(), entries.len());
        assert_eq!(read[n as usize - 1], entries[n as usize - 1]);
        let deletes = entries.iter().step_by(2).map(|e| ManifestEntry {
            kind: FileKind::Delete,
            ..e.clone()
        });
        let live = merge_entries(entries.iter().cloned().chain(deletes)).unwrap();
        assert_eq!(live.len(), n as usize / 2);
        assert_eq!(live[0].file.file_name, "data-1-0.parquet");
    }

    #[test]
    fn serde_json_round_trip() {
        let e = sample_entries().remove(0);
        let s = serde_json::to_string(&e).unwrap();
        assert_eq!(serde_json::from_str::<ManifestEntry>(&s).unwrap(), e);
    }

    /// Two encoded manifests (one entry; all of the tests' sample entries) with their entries.
    #[allow(clippy::type_complexity)]
    pub(crate) fn write_manifest_entries_for_tests(
    ) -> ((Vec<u8>, Vec<ManifestEntry>), (Vec<u8>, Vec<ManifestEntry>)) {
        let all = sample_entries();
        let one = all[..1].to_vec();
        let encode = |e: &[ManifestEntry]| write_manifest_entries(e, "zstd").expect("encodes");
        ((encode(&one), one), (encode(&all), all))
    }
}
