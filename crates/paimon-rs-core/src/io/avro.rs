//! Avro data files (`file.format` = avro), read with arrow-rs's Avro reader (arrow-avro).
//!
//! Java Paimon writes an object container file of records whose fields are the data file's
//! columns (`AvroSchemaConverter`): nullable types as `["null", T]` unions, TINYINT and SMALLINT
//! as int, TIMESTAMP(p) as `timestamp-millis`/`-micros` longs (p <= 6), TIMESTAMP_LTZ as
//! `local-timestamp-*`, DECIMAL as bytes with the decimal logical type, maps with string keys as
//! Avro maps and other maps as arrays of {key, value} records. They decode to the nearest Arrow
//! types; the reader casts each to the table's type (a map stored as an array of records becomes
//! a map there, see `read::evolution::conform_physical`). Projection is pushed down to the
//! decoder (a reader schema holding only the named fields: the others are skipped, not built).
//!
//! Writing ([`AvroFileWriter`]) produces the file Java's `AvroFileFormat` writes: the same schema
//! (Java's `AvroSchemaConverter` naming: the row `org.apache.paimon.avro.generated.record`, a
//! nested row `<parent name>_<field>`, nullable types as `["null", T]` with a null default, the
//! row itself nullable), the row encoded as that union's branch 1, blocks of about 64 000 bytes
//! (Avro's default sync interval) compressed with the table's codec ([`AvroCodec`]). arrow-avro
//! encodes the rows; the container (header, blocks, codec) is written here, so that the zstd
//! level is the table's and the header holds Java's schema. The types Java refuses for Avro
//! (TIMESTAMP(7..9), TIME(4..9)) are refused as the table is created or opened for writing
//! ([`check_schema`]); so is MULTISET (held as an array here, a map of counts in Java's files).

use std::fs::File;
use std::io::{BufReader, BufWriter, Cursor, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, Int32Array, ListArray, MapArray, RecordBatch, StructArray};
use arrow_avro::reader::ReaderBuilder;
use arrow_avro::writer::format::AvroBinaryFormat;
use arrow_avro::writer::{Encoder, WriterBuilder};
use arrow_schema::{DataType as ArrowType, Field, Fields, Schema, SchemaRef, TimeUnit};
use serde_json::{json, Value};

use super::data_file::{contain_panic, open_checked, DataFileReader, FileExpect};
use super::file_write::StagedFile;
use crate::error::{Error, Result};
use crate::options::CoreOptions;
use crate::spec::types::{DataField, DataType, TypeKind};

/// Open an Avro data file (see [`super::format::open_data_file`]). Avro records no row count
/// up front: the rows decoded are checked against the manifest at the file's end (the caller).
pub fn open_reader(
    path: &Path,
    columns: Option<&[String]>,
    batch_size: usize,
    expect: Option<FileExpect>,
) -> Result<DataFileReader> {
    let reader = contain_panic(path, "Avro", || {
        let corrupt = |e: arrow_schema::ArrowError| Error::corrupt(path, e.to_string());
        let builder = || ReaderBuilder::new().with_batch_size(batch_size);
        let all = builder()
            .build(row_record_input(path, expect)?)
            .map_err(corrupt)?;
        let schema = all.schema();
        let idx: Vec<usize> = match columns {
            Some(cols) => cols
                .iter()
                .filter_map(|c| schema.index_of(c).ok())
                .collect(),
            None => (0..schema.fields().len())
                .filter(|&i| schema.field(i).name() != BRANCH)
                .collect(),
        };
        if idx.len() == schema.fields().len() && idx.iter().enumerate().all(|(i, &j)| i == j) {
            return Ok(all);
        }
        drop(all);
        builder()
            .with_projection(idx)
            .build(row_record_input(path, expect)?)
            .map_err(corrupt)
    })?;
    let p = path.to_path_buf();
    Ok(DataFileReader::new(
        path,
        "Avro",
        reader.map(move |r| r.map_err(|e| Error::corrupt(&p, e.to_string()))),
    ))
}

/// Name of the column standing for the row's union branch (see [`row_record_input`]).
const BRANCH: &str = "_paimon_rs_row_branch";

type Input = BufReader<std::io::Chain<Cursor<Vec<u8>>, BufReader<Box<dyn Read + Send>>>>;

/// The Avro object container file `path` as arrow-avro 60 can read it. Java writes the rows as a
/// nullable row, the union `["null", record]`, and arrow-avro reads only a record at the top. A
/// union value is encoded as its branch index (a zigzag varint) then the branch's value; the
/// record branch's index 1 is the byte 0x02, the very encoding of an `int` holding 1. So the
/// header's schema is replaced by the record with a leading `int` field [`BRANCH`] (the data
/// blocks, compressed or not, are left as they are: their sync marker is kept) and that column is
/// never projected. A file whose schema is a record already is read as it is.
fn row_record_input(path: &Path, expect: Option<FileExpect>) -> Result<Input> {
    let bad = |m: String| Error::corrupt(path, format!("Avro header: {m}"));
    let (f, _) = open_checked(path, expect, true)?;
    let mut r = BufReader::new(f.into_read());
    let mut magic = [0u8; 4];
    r.read_exact(&mut magic).map_err(|e| bad(e.to_string()))?;
    if &magic != b"Obj\x01" {
        return Err(bad("not an Avro object container file".into()));
    }
    let mut meta: Vec<(Vec<u8>, Vec<u8>)> = vec![];
    loop {
        let mut n = read_long(&mut r).map_err(&bad)?;
        if n == 0 {
            break;
        }
        if n < 0 {
            n = -n;
            read_long(&mut r).map_err(&bad)?;
        }
        for _ in 0..n {
            let k = read_bytes(&mut r).map_err(&bad)?;
            let v = read_bytes(&mut r).map_err(&bad)?;
            meta.push((k, v));
        }
    }
    let mut sync = [0u8; 16];
    r.read_exact(&mut sync).map_err(|e| bad(e.to_string()))?;
    for (k, v) in meta.iter_mut() {
        if k.as_slice() != b"avro.schema" {
            continue;
        }
        let schema: serde_json::Value =
            serde_json::from_slice(v).map_err(|e| bad(format!("schema: {e}")))?;
        if let serde_json::Value::Array(branches) = &schema {
            let at = branches
                .iter()
                .position(|b| b.get("type").and_then(|t| t.as_str()) == Some("record"))
                .ok_or_else(|| bad("a union without a record branch at the top".into()))?;
            let mut record = branches[at].clone();
            let fields = record
                .get_mut("fields")
                .and_then(|f| f.as_array_mut())
                .ok_or_else(|| bad("a record without fields".into()))?;
            if at != 1 {
                return Err(bad(format!("the row is branch {at} of the top union")));
            }
            fields.insert(0, serde_json::json!({"name": BRANCH, "type": "int"}));
            *v = serde_json::to_vec(&record).map_err(|e| bad(e.to_string()))?;
        }
    }
    let mut header = b"Obj\x01".to_vec();
    write_long(&mut header, meta.len() as i64);
    for (k, v) in &meta {
        write_long(&mut header, k.len() as i64);
        header.extend_from_slice(k);
        write_long(&mut header, v.len() as i64);
        header.extend_from_slice(v);
    }
    write_long(&mut header, 0);
    header.extend_from_slice(&sync);
    Ok(BufReader::new(Cursor::new(header).chain(r)))
}

fn read_long(r: &mut impl Read) -> std::result::Result<i64, String> {
    let mut v: u64 = 0;
    for shift in (0..64).step_by(7) {
        let mut b = [0u8; 1];
        r.read_exact(&mut b).map_err(|e| e.to_string())?;
        v |= u64::from(b[0] & 0x7f) << shift;
        if b[0] & 0x80 == 0 {
            return Ok((v >> 1) as i64 ^ -((v & 1) as i64));
        }
    }
    Err("a varint longer than 64 bits".into())
}

fn read_bytes(r: &mut impl Read) -> std::result::Result<Vec<u8>, String> {
    let n = read_long(r)?;
    if !(0..=(64 << 20)).contains(&n) {
        return Err(format!("a metadata value of {n} bytes"));
    }
    let mut b = vec![0u8; n as usize];
    r.read_exact(&mut b).map_err(|e| e.to_string())?;
    Ok(b)
}

fn write_long(out: &mut Vec<u8>, n: i64) {
    let mut v = ((n << 1) ^ (n >> 63)) as u64;
    while v >= 0x80 {
        out.push((v as u8 & 0x7f) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// The codec of the Avro data files a table writes, as Java's `AvroFileFormat` picks it:
/// `avro.codec` if set (Avro's codec names), else `file.compression` (`zstd` at
/// `file.compression.zstd-level`, or an Avro codec name).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AvroCodec {
    Null,
    Deflate,
    Snappy,
    /// zstandard at this level.
    Zstd(i32),
}

/// zstd level of Avro's `zstandard` codec named by `avro.codec` (Avro's
/// `ZstandardCodec.DEFAULT_COMPRESSION`).
const AVRO_DEFAULT_ZSTD_LEVEL: i32 = 3;

impl AvroCodec {
    /// The codec `opts` ask for; a codec this engine cannot write is refused, naming the option.
    pub fn from_options(opts: &CoreOptions) -> Result<AvroCodec> {
        AvroCodec::for_compression(opts, &opts.file_compression, "file.compression")
    }

    /// The codec of an Avro file compressed with `compression` (the value of option `key`:
    /// `file.compression`, a level's entry of `file.compression.per.level`, ...); `avro.codec`
    /// wins over it, as in Java's `AvroFileFormat.createCodecFactory`.
    pub fn for_compression(opts: &CoreOptions, compression: &str, key: &str) -> Result<AvroCodec> {
        let refuse = |key: &str, v: &str| {
            Error::unsupported(format!(
                "table option '{key}' = '{v}' for Avro data files: paimon_rs writes the Avro \
                 codecs null, deflate, snappy and zstandard (file.compression = zstd, snappy, \
                 deflate or none)"
            ))
        };
        if let Some(v) = opts.raw.get("avro.codec") {
            return match v.trim().to_ascii_lowercase().as_str() {
                "null" => Ok(AvroCodec::Null),
                "deflate" => Ok(AvroCodec::Deflate),
                "snappy" => Ok(AvroCodec::Snappy),
                "zstandard" => Ok(AvroCodec::Zstd(AVRO_DEFAULT_ZSTD_LEVEL)),
                _ => Err(refuse("avro.codec", v)),
            };
        }
        match compression {
            "zstd" => {
                let range = zstd::compression_level_range();
                if !range.contains(&opts.zstd_level) {
                    return Err(Error::invalid(format!(
                        "table option 'file.compression.zstd-level' = '{}': zstd levels are \
                         {}..={}",
                        opts.zstd_level,
                        range.start(),
                        range.end()
                    )));
                }
                Ok(AvroCodec::Zstd(opts.zstd_level))
            }
            "zstandard" => Ok(AvroCodec::Zstd(AVRO_DEFAULT_ZSTD_LEVEL)),
            "snappy" => Ok(AvroCodec::Snappy),
            "deflate" => Ok(AvroCodec::Deflate),
            // Java passes these to Avro's CodecFactory, which knows only `null`: written
            // uncompressed here (any reader, Java's included, reads that)
            "null" | "none" | "uncompressed" => Ok(AvroCodec::Null),
            other => Err(refuse(key, other)),
        }
    }

    /// The header's `avro.codec`.
    fn name(self) -> &'static str {
        match self {
            AvroCodec::Null => "null",
            AvroCodec::Deflate => "deflate",
            AvroCodec::Snappy => "snappy",
            AvroCodec::Zstd(_) => "zstandard",
        }
    }

    /// One block's data, compressed as the Avro specification defines the codec.
    fn compress(self, data: &[u8]) -> std::io::Result<Vec<u8>> {
        match self {
            AvroCodec::Null => Ok(data.to_vec()),
            AvroCodec::Deflate => {
                // raw deflate (no zlib header), at zlib's default level as Java's Deflater
                let mut e = flate2::write::DeflateEncoder::new(
                    Vec::with_capacity(data.len() / 2),
                    flate2::Compression::default(),
                );
                e.write_all(data)?;
                e.finish()
            }
            AvroCodec::Snappy => {
                // the raw snappy block, then the big-endian CRC-32 of the uncompressed data
                let mut out = snap::raw::Encoder::new()
                    .compress_vec(data)
                    .map_err(std::io::Error::other)?;
                out.extend_from_slice(&crc32fast::hash(data).to_be_bytes());
                Ok(out)
            }
            AvroCodec::Zstd(level) => zstd::bulk::compress(data, level),
        }
    }
}

/// Full name of the row record (Java's `AvroSchemaConverter.convertToSchema`).
const ROW_NAME: &str = "org.apache.paimon.avro.generated.record";

/// Uncompressed bytes of a block before it is written (Avro's `DEFAULT_SYNC_INTERVAL`, which
/// Java's `DataFileWriter` uses).
const SYNC_INTERVAL: usize = 64_000;

/// Refuse the columns of `fields` that the Avro data files of `table` cannot hold as Java
/// Paimon writes them, naming the column.
pub fn check_schema(table: &str, fields: &[DataField]) -> Result<()> {
    fn walk(path: &str, t: &DataType) -> std::result::Result<(), String> {
        match &t.kind {
            TypeKind::Timestamp(p) | TypeKind::LocalZonedTimestamp(p) if *p > 6 => Err(format!(
                "column '{path}' is {}: Avro data files hold timestamps of precision 0 to 6 \
                 (millis or micros; Java Paimon refuses the same)",
                t.sql_string()
            )),
            TypeKind::Time(p) if *p > 3 => Err(format!(
                "column '{path}' is {}: Avro data files hold TIME of precision 0 to 3 \
                 (Java Paimon refuses the same)",
                t.sql_string()
            )),
            TypeKind::Multiset(_) => Err(format!(
                "column '{path}' is {}: paimon_rs does not write MULTISET columns to Avro files",
                t.sql_string()
            )),
            TypeKind::Array(e) => walk(&format!("{path}.element"), e),
            TypeKind::Map(k, v) => {
                walk(&format!("{path}.key"), k)?;
                walk(&format!("{path}.value"), v)
            }
            TypeKind::Row(fs) => fs.iter().try_for_each(|f| {
                check_name(&format!("{path}.{}", f.name), &f.name)?;
                walk(&format!("{path}.{}", f.name), &f.data_type)
            }),
            _ => Ok(()),
        }
    }
    fn check_name(path: &str, name: &str) -> std::result::Result<(), String> {
        let mut chars = name.chars();
        let ok = chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
        if ok {
            Ok(())
        } else {
            Err(format!(
                "column '{path}': Avro names are letters, digits and '_', not starting with a \
                 digit (Java's Avro refuses the same)"
            ))
        }
    }
    fields
        .iter()
        .try_for_each(|f| {
            check_name(&f.name, &f.name)?;
            walk(&f.name, &f.data_type)
        })
        .map_err(|m| Error::unsupported(format!("file.format = avro: {m}")).with_table(table))
}

/// The Avro schema of a column of Arrow type `t` (a data file's type, see
/// [`DataType::to_arrow_file`]) named as Java names it under `row_name`.
fn avro_type(t: &ArrowType, nullable: bool, row_name: &str) -> std::result::Result<Value, String> {
    let logical = |base: &str, lt: &str| json!({"type": base, "logicalType": lt});
    let v = match t {
        ArrowType::Boolean => json!("boolean"),
        ArrowType::Int8 | ArrowType::Int16 | ArrowType::Int32 => json!("int"),
        ArrowType::Int64 => json!("long"),
        ArrowType::Float32 => json!("float"),
        ArrowType::Float64 => json!("double"),
        ArrowType::Utf8 => json!("string"),
        ArrowType::Binary => json!("bytes"),
        ArrowType::Decimal128(p, s) => {
            json!({"type": "bytes", "logicalType": "decimal", "precision": p, "scale": s})
        }
        ArrowType::Date32 => logical("int", "date"),
        ArrowType::Time32(TimeUnit::Millisecond) => logical("int", "time-millis"),
        ArrowType::Timestamp(unit, tz) => {
            let local = if tz.is_some() { "local-" } else { "" };
            let unit = match unit {
                TimeUnit::Millisecond => "millis",
                TimeUnit::Microsecond => "micros",
                other => return Err(format!("timestamps of unit {other:?}")),
            };
            logical("long", &format!("{local}timestamp-{unit}"))
        }
        ArrowType::Struct(fields) => record(fields, row_name)?,
        ArrowType::List(e) => {
            json!({"type": "array", "items": avro_type(e.data_type(), e.is_nullable(), row_name)?})
        }
        ArrowType::Map(entries, _) => {
            let ArrowType::Struct(kv) = entries.data_type() else {
                return Err(format!("map entries of type {}", entries.data_type()));
            };
            let (k, v) = (&kv[0], &kv[1]);
            if k.data_type() == &ArrowType::Utf8 {
                json!({"type": "map", "values": avro_type(v.data_type(), v.is_nullable(), row_name)?})
            } else {
                // Avro maps have string keys: any other map is an array of {key, value} records
                // marked with the `map` logical type (Java's `LogicalMap`)
                let key = avro_type(k.data_type(), false, &format!("{row_name}_key"))?;
                let value =
                    avro_type(v.data_type(), v.is_nullable(), &format!("{row_name}_value"))?;
                let mut value_field = json!({"name": "value", "type": value});
                if v.is_nullable() {
                    value_field["default"] = Value::Null;
                }
                json!({
                    "type": "array",
                    "items": {"type": "record", "name": row_name, "fields": [
                        {"name": "key", "type": key}, value_field]},
                    "logicalType": "map",
                })
            }
        }
        other => return Err(format!("Arrow type {other}")),
    };
    Ok(if nullable { json!(["null", v]) } else { v })
}

/// The record of `fields` named `row_name`, its nested rows named `<row_name>_<field>`.
fn record(fields: &Fields, row_name: &str) -> std::result::Result<Value, String> {
    let fields = fields
        .iter()
        .map(|f| {
            let t = avro_type(
                f.data_type(),
                f.is_nullable(),
                &format!("{row_name}_{}", f.name()),
            )?;
            let mut field = json!({"name": f.name(), "type": t});
            if f.is_nullable() {
                field["default"] = Value::Null;
            }
            Ok(field)
        })
        .collect::<std::result::Result<Vec<_>, String>>()?;
    Ok(json!({"type": "record", "name": row_name, "fields": fields}))
}

/// Whether the Arrow type holds a map with non-string keys (written as an array of records).
fn has_array_map(t: &ArrowType) -> bool {
    match t {
        ArrowType::Map(entries, _) => match entries.data_type() {
            ArrowType::Struct(kv) => {
                kv[0].data_type() != &ArrowType::Utf8
                    || kv.iter().any(|f| has_array_map(f.data_type()))
            }
            _ => false,
        },
        ArrowType::List(e) => has_array_map(e.data_type()),
        ArrowType::Struct(fs) => fs.iter().any(|f| has_array_map(f.data_type())),
        _ => false,
    }
}

/// `t` as arrow-avro encodes it: maps with non-string keys as lists of their entries.
fn encoded_type(t: &ArrowType) -> ArrowType {
    let field = |f: &Field| f.clone().with_data_type(encoded_type(f.data_type()));
    match t {
        ArrowType::Map(entries, sorted) => {
            let entries = Arc::new(field(entries));
            match entries.data_type() {
                ArrowType::Struct(kv) if kv[0].data_type() != &ArrowType::Utf8 => {
                    ArrowType::List(entries)
                }
                _ => ArrowType::Map(entries, *sorted),
            }
        }
        ArrowType::List(e) => ArrowType::List(Arc::new(field(e))),
        ArrowType::Struct(fs) => ArrowType::Struct(fs.iter().map(|f| field(f)).collect()),
        other => other.clone(),
    }
}

/// `a` as [`encoded_type`] has it (the same buffers, no copy of values).
fn encoded_array(a: &ArrayRef) -> Result<ArrayRef> {
    if !has_array_map(a.data_type()) {
        return Ok(a.clone());
    }
    let target = encoded_type(a.data_type());
    Ok(match (a.data_type(), &target) {
        (ArrowType::Map(..), ArrowType::List(f)) | (ArrowType::Map(..), ArrowType::Map(f, _)) => {
            let m = a
                .as_any()
                .downcast_ref::<MapArray>()
                .ok_or_else(|| Error::Internal("a map column that is not a MapArray".into()))?;
            let entries: ArrayRef = Arc::new(m.entries().clone());
            let entries = encoded_array(&entries)?;
            let entries = entries
                .as_any()
                .downcast_ref::<StructArray>()
                .ok_or_else(|| Error::Internal("map entries that are not a struct".into()))?
                .clone();
            if matches!(target, ArrowType::List(_)) {
                Arc::new(ListArray::try_new(
                    f.clone(),
                    m.offsets().clone(),
                    Arc::new(entries),
                    m.nulls().cloned(),
                )?)
            } else {
                Arc::new(MapArray::try_new(
                    f.clone(),
                    m.offsets().clone(),
                    entries,
                    m.nulls().cloned(),
                    false,
                )?)
            }
        }
        (ArrowType::List(_), ArrowType::List(f)) => {
            let l = a
                .as_any()
                .downcast_ref::<ListArray>()
                .ok_or_else(|| Error::Internal("a list column that is not a ListArray".into()))?;
            Arc::new(ListArray::try_new(
                f.clone(),
                l.offsets().clone(),
                encoded_array(l.values())?,
                l.nulls().cloned(),
            )?)
        }
        (ArrowType::Struct(_), ArrowType::Struct(fs)) => {
            let s = a
                .as_any()
                .downcast_ref::<StructArray>()
                .ok_or_else(|| Error::Internal("a row column that is not a StructArray".into()))?;
            let cols = s
                .columns()
                .iter()
                .map(encoded_array)
                .collect::<Result<Vec<_>>>()?;
            Arc::new(StructArray::try_new(fs.clone(), cols, s.nulls().cloned())?)
        }
        _ => a.clone(),
    })
}

/// One Avro data file being written (see the module's documentation). It is written under a
/// temp name and published under its own on `close`, as the Parquet writer does.
pub struct AvroFileWriter {
    staged: StagedFile,
    out: Option<BufWriter<File>>,
    encoder: Encoder,
    /// The encoder's input: [`BRANCH`] (always 1, the record branch of the row union), then
    /// the file's columns as [`encoded_type`] has them.
    encoded_schema: SchemaRef,
    codec: AvroCodec,
    sync: [u8; 16],
    /// Encoded rows of the open block, and their count.
    block: Vec<u8>,
    block_rows: i64,
    written: u64,
    rows: u64,
}

impl AvroFileWriter {
    /// Create the data file `path` holding columns `schema` (the file's Arrow types).
    pub fn create(path: PathBuf, schema: SchemaRef, codec: AvroCodec) -> Result<Self> {
        let bad = |m: String| {
            Error::unsupported(format!(
                "Avro data file {}: cannot write {m}",
                path.display()
            ))
        };
        let row = record(schema.fields(), ROW_NAME).map_err(&bad)?;
        // the header's schema, Java's: the nullable row
        let header_schema = json!(["null", row.clone()]);
        // the encoder's: the record with the union's branch index as a leading int
        let mut encoded_row = row;
        if let Some(fs) = encoded_row["fields"].as_array_mut() {
            fs.insert(0, json!({"name": BRANCH, "type": "int"}));
        }
        let mut fields = vec![Arc::new(Field::new(BRANCH, ArrowType::Int32, false))];
        fields.extend(schema.fields().iter().map(|f| {
            Arc::new(
                f.as_ref()
                    .clone()
                    .with_data_type(encoded_type(f.data_type())),
            )
        }));
        let encoded_schema = Arc::new(Schema::new_with_metadata(
            fields,
            std::collections::HashMap::from([(
                arrow_avro::schema::SCHEMA_METADATA_KEY.to_string(),
                encoded_row.to_string(),
            )]),
        ));
        let encoder = WriterBuilder::new(encoded_schema.as_ref().clone())
            .build_encoder::<AvroBinaryFormat>()
            .map_err(|e| bad(e.to_string()))?;
        let (staged, file) = StagedFile::create(path)?;
        let mut w = AvroFileWriter {
            staged,
            out: Some(BufWriter::with_capacity(1 << 16, file)),
            encoder,
            encoded_schema,
            codec,
            sync: *uuid::Uuid::new_v4().as_bytes(),
            block: Vec::with_capacity(SYNC_INTERVAL * 2),
            block_rows: 0,
            written: 0,
            rows: 0,
        };
        let mut header = b"Obj\x01".to_vec();
        write_long(&mut header, 2);
        for (k, v) in [
            ("avro.schema", header_schema.to_string()),
            ("avro.codec", codec.name().to_string()),
        ] {
            write_long(&mut header, k.len() as i64);
            header.extend_from_slice(k.as_bytes());
            write_long(&mut header, v.len() as i64);
            header.extend_from_slice(v.as_bytes());
        }
        write_long(&mut header, 0);
        header.extend_from_slice(&w.sync);
        w.put(&header)?;
        Ok(w)
    }

    fn put(&mut self, bytes: &[u8]) -> Result<()> {
        let out = self
            .out
            .as_mut()
            .ok_or_else(|| Error::Internal("Avro writer closed".into()))?;
        out.write_all(bytes)
            .map_err(|e| Error::io(&self.staged.path, e))?;
        self.written += bytes.len() as u64;
        Ok(())
    }

    /// Encode `batch` (the file's schema) into the open block; a full block is written out.
    pub fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        let n = batch.num_rows();
        if n == 0 {
            return Ok(());
        }
        let mut cols: Vec<ArrayRef> = vec![Arc::new(Int32Array::from_value(1, n))];
        for c in batch.columns() {
            cols.push(encoded_array(c)?);
        }
        let b = RecordBatch::try_new(self.encoded_schema.clone(), cols)?;
        self.encoder.encode(&b).map_err(|e| {
            Error::Internal(format!(
                "encoding Avro data file {}: {e}",
                self.staged.path.display()
            ))
        })?;
        let rows = self.encoder.flush();
        self.block.extend_from_slice(rows.bytes());
        self.block_rows += n as i64;
        self.rows += n as u64;
        if self.block.len() >= SYNC_INTERVAL {
            self.write_block()?;
        }
        Ok(())
    }

    /// Write the open block: its row count, its compressed size and data, the sync marker.
    fn write_block(&mut self) -> Result<()> {
        if self.block_rows == 0 {
            return Ok(());
        }
        let data = self
            .codec
            .compress(&self.block)
            .map_err(|e| Error::io(&self.staged.path, e))?;
        let mut head = Vec::with_capacity(20);
        write_long(&mut head, self.block_rows);
        write_long(&mut head, data.len() as i64);
        self.put(&head)?;
        self.put(&data)?;
        let sync = self.sync;
        self.put(&sync)?;
        self.block.clear();
        self.block_rows = 0;
        Ok(())
    }

    /// Bytes written so far plus the open block (uncompressed: an upper estimate).
    pub fn estimated_size(&self) -> u64 {
        self.written + self.block.len() as u64
    }

    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// Memory held by the open block.
    pub fn buffered_bytes(&self) -> usize {
        self.block.capacity()
    }

    /// Write the open block out, freeing its memory; the file stays open.
    pub fn flush_block(&mut self) -> Result<()> {
        self.write_block()?;
        self.block = Vec::new();
        Ok(())
    }

    /// Finish the file; returns its size in bytes.
    pub fn close(mut self) -> Result<u64> {
        self.write_block()?;
        let out = self
            .out
            .take()
            .ok_or_else(|| Error::Internal("Avro writer closed".into()))?;
        let file = out
            .into_inner()
            .map_err(|e| Error::io(&self.staged.path, e.into_error()))?;
        self.staged.publish(file)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use arrow_array::cast::AsArray;
    use arrow_array::types::Int32Type;
    use arrow_array::RecordBatch;
    use arrow_avro::writer::AvroWriter;

    use super::*;
    use crate::spec::types::DataType;

    fn read(
        path: &Path,
        cols: Option<&[String]>,
        expect: Option<FileExpect>,
    ) -> Result<Vec<RecordBatch>> {
        open_reader(path, cols, 100, expect)?.collect()
    }

    /// arrow-avro's writer stands in for Java's (Java-written files are read in
    /// tests/compat/test_java_interop.py): every row back, projection, and a damaged file is a
    /// CorruptFile error naming it.
    #[test]
    fn avro_files_read_projected_and_damage_is_corrupt() {
        let b = crate::io::orc::tests::batch(1000);
        let b = RecordBatch::try_new(
            std::sync::Arc::new(arrow_schema::Schema::new(
                b.schema()
                    .fields()
                    .iter()
                    .take(2)
                    .cloned()
                    .collect::<Vec<_>>(),
            )),
            b.columns()[..2].to_vec(),
        )
        .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("data-x-0.avro");
        let mut w = AvroWriter::new(
            std::fs::File::create(&path).unwrap(),
            b.schema().as_ref().clone(),
        )
        .unwrap();
        w.write(&b).unwrap();
        w.finish().unwrap();
        drop(w);
        let size = std::fs::metadata(&path).unwrap().len();
        let expect = FileExpect { size, rows: 1000 };

        let got = read(&path, None, Some(expect)).unwrap();
        let all = arrow_select::concat::concat_batches(&got[0].schema(), &got).unwrap();
        assert_eq!(all.num_rows(), 1000);
        for c in 0..2 {
            assert_eq!(all.column(c).as_ref(), b.column(c).as_ref(), "column {c}");
        }
        let cols = ["id".to_string(), "gone".to_string()];
        let got = read(&path, Some(&cols), Some(expect)).unwrap();
        assert_eq!(got[0].num_columns(), 1);
        assert_eq!(got[0].column(0).as_primitive::<Int32Type>().value(3), 3);

        let e = read(
            &path,
            None,
            Some(FileExpect {
                size: size - 1,
                rows: 1000,
            }),
        )
        .unwrap_err();
        assert!(matches!(e, Error::CorruptFile { .. }), "{e}");
        // cut anywhere (no manifest check): the decoder's error naming the file, or (arrow-avro
        // 60 ends quietly at a cut inside the last block) fewer rows, never other ones; a table
        // read catches those by the manifest's file size and row count (read/table_read.rs)
        let bytes = std::fs::read(&path).unwrap();
        for keep in [0, 3, bytes.len() / 2, bytes.len() - 1] {
            std::fs::write(&path, &bytes[..keep]).unwrap();
            match read(&path, None, None) {
                Err(e) => assert!(
                    matches!(e, Error::CorruptFile { .. })
                        && e.to_string().contains("data-x-0.avro"),
                    "cut at {keep}: {e}"
                ),
                Ok(got) => {
                    let rows: usize = got.iter().map(|b| b.num_rows()).sum();
                    assert!(rows < 1000, "cut at {keep}: all rows");
                    if rows > 0 {
                        let got =
                            arrow_select::concat::concat_batches(&got[0].schema(), &got).unwrap();
                        assert_eq!(got, b.slice(0, rows), "cut at {keep}");
                    }
                }
            }
        }
    }

    pub(crate) fn ty(s: &str) -> DataType {
        DataType::from_json(&json!(s)).unwrap()
    }

    pub(crate) fn nested(kind: TypeKind) -> DataType {
        DataType::new(kind)
    }

    fn row(fields: Vec<(&str, DataType)>) -> DataType {
        nested(TypeKind::Row(
            fields
                .into_iter()
                .enumerate()
                .map(|(i, (n, t))| DataField::new(100 + i as i32, n, t))
                .collect(),
        ))
    }

    /// A table's columns of every type Avro data files hold (nullable, with nulls), as batches
    /// of their file types.
    pub(crate) fn every_type() -> (Vec<DataField>, RecordBatch) {
        let cols = [
            ("b", ty("BOOLEAN")),
            ("i8", ty("TINYINT")),
            ("i16", ty("SMALLINT")),
            ("i32", ty("INT")),
            ("i64", ty("BIGINT")),
            ("f", ty("FLOAT")),
            ("d", ty("DOUBLE")),
            ("dec", ty("DECIMAL(10, 2)")),
            ("dec38", ty("DECIMAL(38, 10)")),
            ("c", ty("CHAR(3)")),
            ("s", ty("STRING")),
            ("bin", ty("BINARY(2)")),
            ("vb", ty("BYTES")),
            ("dt", ty("DATE")),
            ("t", ty("TIME(3)")),
            ("ts0", ty("TIMESTAMP(0)")),
            ("ts3", ty("TIMESTAMP(3)")),
            ("ts6", ty("TIMESTAMP(6)")),
            ("ltz3", ty("TIMESTAMP(3) WITH LOCAL TIME ZONE")),
            ("ltz6", ty("TIMESTAMP(6) WITH LOCAL TIME ZONE")),
            ("arr", nested(TypeKind::Array(Box::new(ty("INT"))))),
            (
                "m",
                nested(TypeKind::Map(
                    Box::new(ty("STRING NOT NULL")),
                    Box::new(ty("BIGINT")),
                )),
            ),
            (
                "im",
                nested(TypeKind::Map(
                    Box::new(ty("INT NOT NULL")),
                    Box::new(ty("STRING")),
                )),
            ),
            (
                "r",
                row(vec![
                    ("x", ty("INT")),
                    ("y", ty("STRING")),
                    ("z", row(vec![("q", ty("DOUBLE"))])),
                ]),
            ),
            (
                "ar",
                nested(TypeKind::Array(Box::new(row(vec![
                    ("x", ty("INT NOT NULL")),
                    (
                        "m",
                        nested(TypeKind::Map(
                            Box::new(ty("INT NOT NULL")),
                            Box::new(ty("INT")),
                        )),
                    ),
                ])))),
            ),
        ];
        let fields: Vec<DataField> = cols
            .into_iter()
            .enumerate()
            .map(|(i, (n, t))| DataField::new(i as i32, n, t))
            .collect();
        let schema = Arc::new(Schema::new(
            fields.iter().map(|f| f.to_arrow_file()).collect::<Vec<_>>(),
        ));
        // values: random-ish rows through the JSON of pyarrow-like literals is heavy; build each
        // column with arrow's builders from a generator of i
        let n = 300usize;
        let cols: Vec<ArrayRef> = schema
            .fields()
            .iter()
            .map(|f| column(f.data_type(), f.is_nullable(), n))
            .collect();
        (fields, RecordBatch::try_new(schema, cols).unwrap())
    }

    /// A column of `n` values of type `t`, every 7th null (nested values too).
    pub(crate) fn column(t: &ArrowType, nullable: bool, n: usize) -> ArrayRef {
        use arrow_array::builder::make_builder;
        use arrow_array::*;
        let valid = |i: usize| !nullable || i % 7 != 3;
        let nulls = |m: usize, k: usize| {
            nullable.then(|| arrow_buffer::NullBuffer::from_iter((0..n).map(|i| i % m != k)))
        };
        match t {
            ArrowType::Boolean => Arc::new(BooleanArray::from_iter(
                (0..n).map(|i| valid(i).then_some(i % 2 == 0)),
            )),
            ArrowType::Int8 => Arc::new(Int8Array::from_iter(
                (0..n).map(|i| valid(i).then_some((i as i64 * 37 % 256 - 128) as i8)),
            )),
            ArrowType::Int16 => {
                Arc::new(Int16Array::from_iter((0..n).map(|i| {
                    valid(i).then_some((i as i64 * 997 % 65536 - 32768) as i16)
                })))
            }
            ArrowType::Int32 => Arc::new(Int32Array::from_iter(
                (0..n).map(|i| valid(i).then_some(i as i32 * 7919 - 1_000_000)),
            )),
            ArrowType::Int64 => {
                Arc::new(Int64Array::from_iter((0..n).map(|i| {
                    valid(i).then_some(i as i64 * -7_919_000_003 + i64::MAX / 3)
                })))
            }
            ArrowType::Float32 => Arc::new(Float32Array::from_iter(
                (0..n).map(|i| valid(i).then_some(i as f32 / 3.0 - 7.5)),
            )),
            ArrowType::Float64 => Arc::new(Float64Array::from_iter(
                (0..n).map(|i| valid(i).then_some(i as f64 * -1.25e10)),
            )),
            ArrowType::Decimal128(p, s) => Arc::new(
                Decimal128Array::from_iter((0..n).map(|i| {
                    let max = 10i128.pow(*p as u32) - 1;
                    valid(i).then_some(
                        ((i as i128 * 982_451_653_123) % max) * if i % 2 == 0 { 1 } else { -1 },
                    )
                }))
                .with_precision_and_scale(*p, *s)
                .unwrap(),
            ),
            ArrowType::Utf8 => {
                Arc::new(StringArray::from_iter((0..n).map(|i| {
                    valid(i).then(|| format!("s{i}é{}", "x".repeat(i % 5)))
                })))
            }
            ArrowType::Binary => Arc::new(BinaryArray::from_iter(
                (0..n).map(|i| valid(i).then(|| vec![i as u8, 0, 255 - i as u8])),
            )),
            ArrowType::Date32 => Arc::new(Date32Array::from_iter(
                (0..n).map(|i| valid(i).then_some(i as i32 * 101 - 10_000)),
            )),
            ArrowType::Time32(TimeUnit::Millisecond) => {
                Arc::new(Time32MillisecondArray::from_iter(
                    (0..n).map(|i| valid(i).then_some((i as i32 * 287_123) % 86_400_000)),
                ))
            }
            ArrowType::Timestamp(u, tz) => {
                // before and after 1970, never in the second before it (ORC-763: orc-rust refuses
                // to write those, see the ORC tests)
                let v = (0..n).map(|i| valid(i).then_some((i as i64 - 150) * 1_234_567_891 + 99));
                match u {
                    TimeUnit::Millisecond => Arc::new(
                        TimestampMillisecondArray::from_iter(v).with_timezone_opt(tz.clone()),
                    ),
                    TimeUnit::Microsecond => Arc::new(
                        TimestampMicrosecondArray::from_iter(v).with_timezone_opt(tz.clone()),
                    ),
                    _ => unreachable!(),
                }
            }
            ArrowType::List(e) => {
                let nulls = nulls(5, 1);
                let lens = (0..n).map(|i| {
                    if nulls.as_ref().is_some_and(|b| b.is_null(i)) {
                        0
                    } else {
                        i % 3
                    }
                });
                let offsets = arrow_buffer::OffsetBuffer::<i32>::from_lengths(lens);
                let total = offsets.last() as usize;
                Arc::new(ListArray::new(
                    e.clone(),
                    offsets,
                    column(e.data_type(), e.is_nullable(), total),
                    nulls,
                ))
            }
            ArrowType::Map(entries, _) => {
                let ArrowType::Struct(kv) = entries.data_type() else {
                    unreachable!()
                };
                // distinct keys per map: entries i of map i / 2
                let keys = arrow_cast::cast(
                    &(Arc::new(Int32Array::from_iter_values(0..n as i32)) as ArrayRef),
                    kv[0].data_type(),
                )
                .unwrap();
                let values = column(kv[1].data_type(), kv[1].is_nullable(), n);
                let entries_arr = StructArray::new(kv.clone(), vec![keys, values], None);
                let offsets: Vec<i32> = (0..=n as i32).map(|i| i.min(n as i32)).collect();
                Arc::new(
                    MapArray::try_new(
                        entries.clone(),
                        arrow_buffer::OffsetBuffer::new(offsets.into()),
                        entries_arr,
                        nulls(4, 2),
                        false,
                    )
                    .unwrap(),
                )
            }
            ArrowType::Struct(fs) => {
                let cols = fs
                    .iter()
                    .map(|f| column(f.data_type(), f.is_nullable(), n))
                    .collect();
                Arc::new(StructArray::new(fs.clone(), cols, nulls(6, 4)))
            }
            other => {
                let _ = make_builder(other, 0);
                panic!("no test column of {other}")
            }
        }
    }

    /// `got` (as the reader decodes it) is `want`: equal, or after the reader's cast to the
    /// table's type (Avro ints for TINYINT / SMALLINT, maps with non-string keys as arrays of
    /// records).
    pub(crate) fn assert_column(name: &str, got: &ArrayRef, want: &ArrayRef) {
        if got.data_type() == want.data_type() {
            assert_eq!(got.as_ref(), want.as_ref(), "column {name}");
        } else if has_array_map(want.data_type()) {
            let enc = encoded_array(want).unwrap();
            assert_eq!(
                got.to_data().into_builder().build().unwrap().len(),
                enc.len(),
                "column {name}"
            );
            // compare values through the Arrow row format, which ignores field names
            let fmt = |a: &ArrayRef| {
                arrow::util::display::ArrayFormatter::try_new(a.as_ref(), &Default::default())
                    .map(|f| {
                        (0..a.len())
                            .map(|i| f.value(i).to_string())
                            .collect::<Vec<_>>()
                    })
                    .unwrap()
            };
            assert_eq!(fmt(got), fmt(&enc), "column {name}");
        } else if let (ArrowType::Timestamp(a, _), ArrowType::Timestamp(b, _)) =
            (got.data_type(), want.data_type())
        {
            // the zone's spelling (`+00:00`, `UTC`) and the unit may differ (ORC decodes to
            // nanoseconds): the instants must not
            let nanos = |x: &ArrayRef, u: &TimeUnit| {
                let f = match u {
                    TimeUnit::Second => 1_000_000_000,
                    TimeUnit::Millisecond => 1_000_000,
                    TimeUnit::Microsecond => 1_000,
                    TimeUnit::Nanosecond => 1,
                };
                let i = arrow_cast::cast(x, &ArrowType::Int64).unwrap();
                let i = i.as_primitive::<arrow_array::types::Int64Type>();
                i.iter().map(|v| v.map(|v| v * f)).collect::<Vec<_>>()
            };
            assert_eq!(nanos(got, a), nanos(want, b), "column {name}");
        } else {
            let cast = arrow_cast::cast(got, want.data_type()).unwrap();
            assert_eq!(
                cast.as_ref(),
                want.as_ref(),
                "column {name} ({})",
                got.data_type()
            );
        }
    }

    /// Every type Avro data files hold, written and read back, under every codec; the file
    /// is what Java's `AvroFileFormat` writes: the row union `["null", record]` named as Java
    /// names it (an independent Avro reader, apache-avro, decodes every row as branch 1), and
    /// blocks of about 64 000 bytes.
    #[test]
    fn avro_files_round_trip_every_type_and_codec() {
        let (fields, batch) = every_type();
        check_schema("t", &fields).unwrap();
        let dir = tempfile::tempdir().unwrap();
        for (i, codec) in [
            AvroCodec::Null,
            AvroCodec::Deflate,
            AvroCodec::Snappy,
            AvroCodec::Zstd(1),
            AvroCodec::Zstd(9),
        ]
        .into_iter()
        .enumerate()
        {
            let path = dir.path().join(format!("data-{i}.avro"));
            let mut w = AvroFileWriter::create(path.clone(), batch.schema(), codec).unwrap();
            for k in 0..10 {
                w.write(&batch.slice(k * 30, 30)).unwrap();
            }
            assert_eq!(w.rows(), 300);
            let size = w.close().unwrap();
            assert_eq!(size, std::fs::metadata(&path).unwrap().len());
            let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
            assert_eq!(names.len(), i + 1, "no temp file left");

            let got = read(&path, None, Some(FileExpect { size, rows: 300 })).unwrap();
            let got = arrow_select::concat::concat_batches(&got[0].schema(), &got).unwrap();
            assert_eq!(got.num_rows(), 300);
            for (c, f) in batch.schema().fields().iter().enumerate() {
                let at = got.schema().index_of(f.name()).unwrap();
                assert_column(f.name(), got.column(at), batch.column(c));
            }

            let bytes = std::fs::read(&path).unwrap();
            let r = apache_avro::Reader::new(&bytes[..]).unwrap();
            let schema = r.writer_schema().clone();
            let apache_avro::Schema::Union(u) = &schema else {
                panic!("{schema:?}")
            };
            let apache_avro::Schema::Record(rec) = &u.variants()[1] else {
                panic!("{schema:?}")
            };
            assert_eq!(rec.name.fullname(None), ROW_NAME);
            let mut rows = 0;
            for v in r {
                match v.unwrap() {
                    apache_avro::types::Value::Union(1, _) => rows += 1,
                    other => panic!("{other:?}"),
                }
            }
            assert_eq!(rows, 300);
            let codec_name = match codec {
                AvroCodec::Zstd(_) => "zstandard",
                c => c.name(),
            };
            let header = String::from_utf8_lossy(&bytes[..bytes.len().min(4096)]).to_string();
            assert!(header.contains(codec_name), "{codec:?}");
        }
    }

    #[test]
    fn avro_blocks_are_about_the_sync_interval() {
        let (_, batch) = every_type();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("data-b.avro");
        let mut w = AvroFileWriter::create(path.clone(), batch.schema(), AvroCodec::Null).unwrap();
        let mut max_buffered = 0;
        for _ in 0..100 {
            w.write(&batch.slice(0, 10)).unwrap();
            max_buffered = max_buffered.max(w.block.len());
        }
        assert!(w.estimated_size() > 0);
        let size = w.close().unwrap();
        assert!(max_buffered < SYNC_INTERVAL * 2, "{max_buffered}");
        let got = read(&path, None, Some(FileExpect { size, rows: 1000 })).unwrap();
        assert_eq!(got.iter().map(|b| b.num_rows()).sum::<usize>(), 1000);
    }

    #[test]
    fn what_avro_files_cannot_hold_is_refused_naming_the_column() {
        let field = |name: &str, t: DataType| DataField::new(0, name, t);
        for (f, needle) in [
            (
                field("ts", ty("TIMESTAMP(9)")),
                "column 'ts' is TIMESTAMP(9)",
            ),
            (
                field("ltz", ty("TIMESTAMP(7) WITH LOCAL TIME ZONE")),
                "column 'ltz'",
            ),
            (field("t", ty("TIME(6)")), "column 't' is TIME(6)"),
            (
                field("ms", nested(TypeKind::Multiset(Box::new(ty("INT"))))),
                "column 'ms' is MULTISET<INT>",
            ),
            (field("a-b", ty("INT")), "column 'a-b'"),
            (field("r", row(vec![("x y", ty("INT"))])), "column 'r.x y'"),
            (
                field("a", nested(TypeKind::Array(Box::new(ty("TIMESTAMP(9)"))))),
                "column 'a.element'",
            ),
        ] {
            let e = check_schema("db.t", &[f]).unwrap_err();
            assert!(matches!(e, Error::Unsupported { .. }), "{e}");
            let m = e.to_string();
            assert!(m.contains(needle) && m.contains("db.t"), "{m}");
        }
        check_schema(
            "db.t",
            &[field("ts", ty("TIMESTAMP(6)")), field("t", ty("TIME(3)"))],
        )
        .unwrap();
    }

    #[test]
    fn the_avro_codec_is_java_s() {
        let codec = |kv: &[(&str, &str)]| {
            let raw = kv
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            AvroCodec::from_options(&CoreOptions::new(&raw, false).unwrap())
        };
        assert_eq!(codec(&[]).unwrap(), AvroCodec::Zstd(1));
        let zstd9 = [("file.compression.zstd-level", "9")];
        assert_eq!(codec(&zstd9).unwrap(), AvroCodec::Zstd(9));
        assert_eq!(
            codec(&[("file.compression", "SNAPPY")]).unwrap(),
            AvroCodec::Snappy
        );
        assert_eq!(
            codec(&[("file.compression", "none")]).unwrap(),
            AvroCodec::Null
        );
        assert_eq!(
            codec(&[("file.compression", "snappy"), ("avro.codec", "zstandard")]).unwrap(),
            AvroCodec::Zstd(3)
        );
        assert_eq!(
            codec(&[("avro.codec", "deflate")]).unwrap(),
            AvroCodec::Deflate
        );
        for (k, v) in [("file.compression", "lz4"), ("avro.codec", "xz")] {
            let e = codec(&[(k, v)]).unwrap_err().to_string();
            assert!(e.contains(k) && e.contains(v), "{e}");
        }
    }
}
