//! paimon_rs's own ORC writer, for the tables orc-rust 0.9 cannot write ([`needed`]): DECIMAL,
//! CHAR(n), VARCHAR(n), ARRAY, MAP and ROW columns (orc-rust encodes flat columns of a few types
//! only). A table whose columns orc-rust can write keeps orc-rust's writer ([`super::orc`]); one
//! that needs this writer has every file written by it, every column included.
//!
//! The file is laid out as the ORC v1 specification says: the `ORC` magic, stripes (data streams
//! then the stripe footer, no row index), empty file metadata, the footer (types, stripes, row
//! count; no column statistics, as orc-rust's files), the postscript and its length byte; the
//! protobuf messages are orc-rust's `proto` types, encoded with prost. Every column is encoded
//! DIRECT (run-length encoding v1, which every ORC reader reads): integers, dates, TIME (ORC int,
//! milliseconds of the day, as Java writes it) and the LENGTH of strings, lists and maps as
//! integer RLE v1; booleans and PRESENT as bit-packed byte RLE; tinyint as byte RLE; floats as
//! IEEE 754 little endian; strings and binaries as LENGTH + DATA; DECIMAL as zigzag varints of the
//! unscaled values (DATA) and their scale (SECONDARY, signed RLE v1; Java writes DIRECT_V2 there,
//! its reader reads both); TIMESTAMP as seconds from 2015-01-01 (writer time zone UTC, as
//! orc-rust writes) and nanoseconds with their trailing zeros removed, TIMESTAMP WITH LOCAL
//! TIME ZONE as ORC `timestamp with local time zone`. CHAR(n) and VARCHAR(n) values are written
//! as the rows hold them (Java's ORC writer pads CHAR to n; here the file must hold the values
//! the manifest's statistics and key ranges were taken from). A list's, map's or struct's children hold
//! entries for its present rows only. Streams are compressed in 256 KiB chunks, each behind the
//! 3-byte ORC chunk header (stored as is when compression does not shrink it).
//!
//! The Arrow schema does not carry CHAR and VARCHAR lengths: [`annotate`] puts the Paimon type
//! of such a column in the field's metadata ([`ORC_TYPE_KEY`]) when the table writes ORC.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Date32Type, Decimal128Type, Float32Type, Float64Type, Int16Type, Int32Type, Int64Type,
    Int8Type, Time32MillisecondType, TimestampMicrosecondType, TimestampMillisecondType,
    TimestampNanosecondType, TimestampSecondType,
};
use arrow_array::{Array, RecordBatch};
use arrow_schema::{DataType as ArrowType, Field, Schema, SchemaRef, TimeUnit};
use orc_rust::proto;
use prost::Message;

use super::file_write::{to_file_types, StagedFile};
use super::orc::OrcCompression;
use crate::error::{Error, Result};
use crate::spec::types::{DataField, DataType, TypeKind, MAX_LEN};

/// Arrow field metadata holding the Paimon type (schema JSON) of a column whose ORC type the
/// Arrow type does not say (CHAR(n), VARCHAR(n), or a nested type holding one).
pub const ORC_TYPE_KEY: &str = "paimon.orc.type";

/// ORC timestamps count seconds from 2015-01-01 00:00:00 (UTC: the writer's zone).
const ORC_EPOCH_SECONDS: i64 = 1_420_070_400;

/// The uncompressed size of a compression chunk (ORC's default block size).
const CHUNK: usize = 256 * 1024;

/// Arrow memory of the rows buffered in a stripe before it is written out.
const STRIPE_ARROW_BYTES: usize = 16 << 20;

/// Whether `t` is or holds a CHAR or a bounded VARCHAR.
fn holds_sized_string(t: &DataType) -> bool {
    match &t.kind {
        TypeKind::Char(_) => true,
        TypeKind::VarChar(n) => *n != MAX_LEN,
        TypeKind::Array(e) | TypeKind::Multiset(e) => holds_sized_string(e),
        TypeKind::Map(k, v) => holds_sized_string(k) || holds_sized_string(v),
        TypeKind::Row(fs) => fs.iter().any(|f| holds_sized_string(&f.data_type)),
        _ => false,
    }
}

/// `schema` (the file schema of a table writing ORC, with columns named as `fields` or, for
/// primary-key tables, `_KEY_` + a key's name) with the Paimon type of each CHAR / VARCHAR(n)
/// column (or nested column holding one) in its field metadata ([`ORC_TYPE_KEY`]).
pub fn annotate(schema: SchemaRef, fields: &[DataField]) -> SchemaRef {
    let type_of = |name: &str| {
        fields
            .iter()
            .find(|f| f.name == name)
            .or_else(|| {
                let key = name.strip_prefix(crate::kv::KEY_PREFIX)?;
                fields.iter().find(|f| f.name == key)
            })
            .map(|f| &f.data_type)
    };
    if !schema
        .fields()
        .iter()
        .any(|f| type_of(f.name()).is_some_and(holds_sized_string))
    {
        return schema;
    }
    let out: Vec<Field> = schema
        .fields()
        .iter()
        .map(|f| match type_of(f.name()) {
            Some(t) if holds_sized_string(t) => {
                let mut md = f.metadata().clone();
                md.insert(ORC_TYPE_KEY.to_string(), t.to_json().to_string());
                f.as_ref().clone().with_metadata(md)
            }
            _ => f.as_ref().clone(),
        })
        .collect();
    Arc::new(Schema::new_with_metadata(out, schema.metadata().clone()))
}

/// Whether files of `schema` need this writer: a column orc-rust cannot write (DECIMAL, a
/// nested type, or one [`annotate`]d as CHAR / VARCHAR(n)).
pub fn needed(schema: &Schema) -> bool {
    schema.fields().iter().any(|f| {
        f.metadata().contains_key(ORC_TYPE_KEY)
            || matches!(
                f.data_type(),
                ArrowType::Decimal128(..)
                    | ArrowType::List(_)
                    | ArrowType::LargeList(_)
                    | ArrowType::Map(..)
                    | ArrowType::Struct(_)
            )
    })
}

// ---------------------------------------------------------------- stream encodings

fn put_varint(out: &mut Vec<u8>, mut v: u128) {
    loop {
        let b = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(b);
            return;
        }
        out.push(b | 0x80);
    }
}

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

fn zigzag128(v: i128) -> u128 {
    ((v << 1) ^ (v >> 127)) as u128
}

/// Byte run-length encoding: runs of 3 to 130 equal bytes, literals of 1 to 128 bytes.
fn byte_rle(values: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(values.len() + values.len() / 128 + 2);
    let mut lit_start = 0;
    let mut i = 0;
    let flush = |out: &mut Vec<u8>, lit: &[u8]| {
        for c in lit.chunks(128) {
            out.push((-(c.len() as i32)) as u8);
            out.extend_from_slice(c);
        }
    };
    while i < values.len() {
        let mut run = 1;
        while i + run < values.len() && run < 130 && values[i + run] == values[i] {
            run += 1;
        }
        if run >= 3 {
            flush(&mut out, &values[lit_start..i]);
            out.push((run - 3) as u8);
            out.push(values[i]);
            i += run;
            lit_start = i;
        } else {
            i += run;
        }
    }
    flush(&mut out, &values[lit_start..]);
    out
}

/// Booleans packed 8 to a byte, most significant bit first, then byte RLE.
fn bool_rle(values: &[bool]) -> Vec<u8> {
    let bytes: Vec<u8> = values
        .chunks(8)
        .map(|c| {
            c.iter()
                .enumerate()
                .fold(0u8, |b, (k, &v)| if v { b | (0x80 >> k) } else { b })
        })
        .collect();
    byte_rle(&bytes)
}

/// Integer run-length encoding v1: runs of 3 to 130 values of a constant delta (-128..=127),
/// literals of 1 to 128 varints (zigzag when `signed`).
fn int_rle_v1(values: &[i64], signed: bool) -> Vec<u8> {
    let mut out = Vec::with_capacity(values.len() * 2 + 2);
    let enc = |out: &mut Vec<u8>, v: i64| {
        let u = if signed { zigzag(v) } else { v as u64 };
        put_varint(out, u as u128);
    };
    let flush = |out: &mut Vec<u8>, lit: &[i64]| {
        for c in lit.chunks(128) {
            out.push((-(c.len() as i32)) as u8);
            for &v in c {
                enc(out, v);
            }
        }
    };
    let mut lit_start = 0;
    let mut i = 0;
    while i < values.len() {
        if i + 1 < values.len() {
            let delta = values[i + 1] as i128 - values[i] as i128;
            if (-128..=127).contains(&delta) {
                let mut run = 2;
                while i + run < values.len()
                    && run < 130
                    && values[i + run] as i128 - values[i + run - 1] as i128 == delta
                {
                    run += 1;
                }
                if run >= 3 {
                    flush(&mut out, &values[lit_start..i]);
                    out.push((run - 3) as u8);
                    out.push(delta as i8 as u8);
                    enc(&mut out, values[i]);
                    i += run;
                    lit_start = i;
                    continue;
                }
            }
        }
        i += 1;
    }
    flush(&mut out, &values[lit_start..]);
    out
}

/// The nanoseconds of an ORC timestamp: trailing decimal zeros (2 to 8 of them) removed, their
/// count less one in the low 3 bits.
fn encode_nanos(nanos: i64) -> i64 {
    if nanos == 0 || nanos % 100 != 0 {
        return nanos << 3;
    }
    let mut n = nanos / 100;
    let mut zeros = 1;
    while n % 10 == 0 && zeros < 7 {
        n /= 10;
        zeros += 1;
    }
    (n << 3) | zeros
}

// ---------------------------------------------------------------- columns

/// What a column holds and how it is encoded.
enum Kind {
    Boolean,
    Byte,
    /// Any integer type, DATE and TIME (ORC int): signed integer RLE.
    Int,
    Float,
    Double,
    /// String, CHAR(n), VARCHAR(n), binary: LENGTH + DATA.
    Bytes,
    Decimal(u32),
    Timestamp,
    List(Box<Column>),
    Map(Box<Column>, Box<Column>),
    Struct(Vec<Column>),
}

/// One ORC column of a stripe being written: its id (pre-order), kind and buffered values.
struct Column {
    id: u32,
    kind: Kind,
    present: Vec<bool>,
    has_null: bool,
    /// DATA of integers, timestamps' seconds; LENGTH of strings, lists, maps.
    ints: Vec<i64>,
    /// SECONDARY: timestamps' nanoseconds, decimals' scales.
    secondary: Vec<i64>,
    /// DATA bytes (strings, floats, decimals' varints, tinyints).
    bytes: Vec<u8>,
    bools: Vec<bool>,
}

impl Column {
    fn new(id: u32, kind: Kind) -> Column {
        Column {
            id,
            kind,
            present: vec![],
            has_null: false,
            ints: vec![],
            secondary: vec![],
            bytes: vec![],
            bools: vec![],
        }
    }

    /// The column for `t` (Paimon type `paimon` where known, for CHAR / VARCHAR lengths), its
    /// children numbered after it; appends its ORC types to `types` in pre-order.
    fn build(
        t: &ArrowType,
        paimon: Option<&DataType>,
        types: &mut Vec<proto::Type>,
    ) -> std::result::Result<Column, String> {
        use proto::r#type::Kind as K;
        let id = types.len() as u32;
        let ty = |k: K| proto::Type {
            kind: Some(k.into()),
            ..Default::default()
        };
        types.push(ty(K::Struct));
        let pk = paimon.map(|p| &p.kind);
        let (kind, orc) = match t {
            ArrowType::Boolean => (Kind::Boolean, ty(K::Boolean)),
            ArrowType::Int8 => (Kind::Byte, ty(K::Byte)),
            ArrowType::Int16 => (Kind::Int, ty(K::Short)),
            ArrowType::Int32 | ArrowType::Time32(TimeUnit::Millisecond) => (Kind::Int, ty(K::Int)),
            ArrowType::Int64 => (Kind::Int, ty(K::Long)),
            ArrowType::Date32 => (Kind::Int, ty(K::Date)),
            ArrowType::Float32 => (Kind::Float, ty(K::Float)),
            ArrowType::Float64 => (Kind::Double, ty(K::Double)),
            ArrowType::Utf8 | ArrowType::LargeUtf8 => match pk {
                Some(TypeKind::Char(n)) => (
                    Kind::Bytes,
                    proto::Type {
                        maximum_length: Some(*n),
                        ..ty(K::Char)
                    },
                ),
                Some(TypeKind::VarChar(n)) if *n != MAX_LEN => (
                    Kind::Bytes,
                    proto::Type {
                        maximum_length: Some(*n),
                        ..ty(K::Varchar)
                    },
                ),
                _ => (Kind::Bytes, ty(K::String)),
            },
            ArrowType::Binary | ArrowType::LargeBinary => (Kind::Bytes, ty(K::Binary)),
            ArrowType::Decimal128(p, s) if *s >= 0 => (
                Kind::Decimal(*s as u32),
                proto::Type {
                    precision: Some(*p as u32),
                    scale: Some(*s as u32),
                    ..ty(K::Decimal)
                },
            ),
            ArrowType::Timestamp(_, None) => (Kind::Timestamp, ty(K::Timestamp)),
            ArrowType::Timestamp(_, Some(tz)) if tz.as_ref() == "UTC" => {
                (Kind::Timestamp, ty(K::TimestampInstant))
            }
            ArrowType::List(f) | ArrowType::LargeList(f) => {
                let pe = match pk {
                    Some(TypeKind::Array(e)) => Some(e.as_ref()),
                    _ => None,
                };
                let child = Column::build(f.data_type(), pe, types)?;
                let orc = proto::Type {
                    subtypes: vec![child.id],
                    ..ty(K::List)
                };
                (Kind::List(Box::new(child)), orc)
            }
            ArrowType::Map(entries, _) => {
                let ArrowType::Struct(kv) = entries.data_type() else {
                    return Err(format!("a map of {}", entries.data_type()));
                };
                if kv.len() != 2 {
                    return Err(format!("a map of {}", entries.data_type()));
                }
                let (pkey, pval) = match pk {
                    Some(TypeKind::Map(k, v)) => (Some(k.as_ref()), Some(v.as_ref())),
                    _ => (None, None),
                };
                let key = Column::build(kv[0].data_type(), pkey, types)?;
                let val = Column::build(kv[1].data_type(), pval, types)?;
                let orc = proto::Type {
                    subtypes: vec![key.id, val.id],
                    ..ty(K::Map)
                };
                (Kind::Map(Box::new(key), Box::new(val)), orc)
            }
            ArrowType::Struct(fs) => {
                let mut children = vec![];
                for f in fs {
                    let pf = match pk {
                        Some(TypeKind::Row(pfs)) => pfs
                            .iter()
                            .find(|x| &x.name == f.name())
                            .map(|x| &x.data_type),
                        _ => None,
                    };
                    children.push(Column::build(f.data_type(), pf, types)?);
                }
                let orc = proto::Type {
                    subtypes: children.iter().map(|c| c.id).collect(),
                    field_names: fs.iter().map(|f| f.name().clone()).collect(),
                    ..ty(K::Struct)
                };
                (Kind::Struct(children), orc)
            }
            other => return Err(format!("a column of type {other}")),
        };
        types[id as usize] = orc;
        Ok(Column::new(id, kind))
    }

    /// Append rows `rows` of `a` (an array of this column's type).
    fn push<'a>(&mut self, a: &'a dyn Array, rows: &[usize]) -> std::result::Result<(), String> {
        let valid: Vec<usize> = rows.iter().copied().filter(|&r| a.is_valid(r)).collect();
        if valid.len() != rows.len() {
            self.has_null = true;
        }
        self.present.extend(rows.iter().map(|&r| a.is_valid(r)));
        match &mut self.kind {
            Kind::Boolean => {
                let b = a.as_boolean();
                self.bools.extend(valid.iter().map(|&r| b.value(r)));
            }
            Kind::Byte => {
                let b = a.as_primitive::<Int8Type>();
                self.bytes.extend(valid.iter().map(|&r| b.value(r) as u8));
            }
            Kind::Int => {
                let v: Box<dyn Fn(usize) -> i64> = match a.data_type() {
                    ArrowType::Int16 => {
                        let p = a.as_primitive::<Int16Type>();
                        Box::new(move |r| p.value(r) as i64)
                    }
                    ArrowType::Int32 => {
                        let p = a.as_primitive::<Int32Type>();
                        Box::new(move |r| p.value(r) as i64)
                    }
                    ArrowType::Int64 => {
                        let p = a.as_primitive::<Int64Type>();
                        Box::new(move |r| p.value(r))
                    }
                    ArrowType::Date32 => {
                        let p = a.as_primitive::<Date32Type>();
                        Box::new(move |r| p.value(r) as i64)
                    }
                    ArrowType::Time32(_) => {
                        let p = a.as_primitive::<Time32MillisecondType>();
                        Box::new(move |r| p.value(r) as i64)
                    }
                    t => return Err(format!("an integer column of type {t}")),
                };
                self.ints.extend(valid.iter().map(|&r| v(r)));
            }
            Kind::Float => {
                let p = a.as_primitive::<Float32Type>();
                for &r in &valid {
                    self.bytes.extend_from_slice(&p.value(r).to_le_bytes());
                }
            }
            Kind::Double => {
                let p = a.as_primitive::<Float64Type>();
                for &r in &valid {
                    self.bytes.extend_from_slice(&p.value(r).to_le_bytes());
                }
            }
            Kind::Bytes => {
                let get: Box<dyn Fn(usize) -> &'a [u8] + 'a> = match a.data_type() {
                    ArrowType::Utf8 => {
                        let s = a.as_string::<i32>();
                        Box::new(move |r| s.value(r).as_bytes())
                    }
                    ArrowType::LargeUtf8 => {
                        let s = a.as_string::<i64>();
                        Box::new(move |r| s.value(r).as_bytes())
                    }
                    ArrowType::Binary => {
                        let s = a.as_binary::<i32>();
                        Box::new(move |r| s.value(r))
                    }
                    ArrowType::LargeBinary => {
                        let s = a.as_binary::<i64>();
                        Box::new(move |r| s.value(r))
                    }
                    t => return Err(format!("a string column of type {t}")),
                };
                for &r in &valid {
                    let v = get(r);
                    self.bytes.extend_from_slice(v);
                    self.ints.push(v.len() as i64);
                }
            }
            Kind::Decimal(scale) => {
                let p = a.as_primitive::<Decimal128Type>();
                for &r in &valid {
                    put_varint(&mut self.bytes, zigzag128(p.value(r)));
                    self.secondary.push(*scale as i64);
                }
            }
            Kind::Timestamp => {
                let (per_second, nanos_per_unit, v): (i64, i64, Box<dyn Fn(usize) -> i64>) =
                    match a.data_type() {
                        ArrowType::Timestamp(TimeUnit::Second, _) => {
                            let p = a.as_primitive::<TimestampSecondType>();
                            (1, 1_000_000_000, Box::new(move |r| p.value(r)))
                        }
                        ArrowType::Timestamp(TimeUnit::Millisecond, _) => {
                            let p = a.as_primitive::<TimestampMillisecondType>();
                            (1_000, 1_000_000, Box::new(move |r| p.value(r)))
                        }
                        ArrowType::Timestamp(TimeUnit::Microsecond, _) => {
                            let p = a.as_primitive::<TimestampMicrosecondType>();
                            (1_000_000, 1_000, Box::new(move |r| p.value(r)))
                        }
                        ArrowType::Timestamp(TimeUnit::Nanosecond, _) => {
                            let p = a.as_primitive::<TimestampNanosecondType>();
                            (1_000_000_000, 1, Box::new(move |r| p.value(r)))
                        }
                        t => return Err(format!("a timestamp column of type {t}")),
                    };
                for &r in &valid {
                    let value = v(r);
                    let mut secs = value.div_euclid(per_second);
                    let nanos = value.rem_euclid(per_second) * nanos_per_unit;
                    // ORC-763: Java's reader takes a second before 1970 with a fraction as
                    // another instant; refused (as orc-rust does), never written wrong
                    if secs == -1 && nanos > 999_999 {
                        return Err(format!(
                            "timestamp {value} ({:?}): an instant in the second before 1970 \
                             with a fraction of a second cannot be written to ORC (ORC-763)",
                            a.data_type()
                        ));
                    }
                    if secs < 0 && nanos > 999_999 {
                        secs += 1;
                    }
                    let secs = secs
                        .checked_sub(ORC_EPOCH_SECONDS)
                        .ok_or_else(|| format!("timestamp {value} out of ORC's range"))?;
                    self.ints.push(secs);
                    self.secondary.push(encode_nanos(nanos));
                }
            }
            Kind::List(child) => {
                let (offsets, values): (Vec<(usize, usize)>, _) = match a.data_type() {
                    ArrowType::List(_) => {
                        let l = a.as_list::<i32>();
                        let o = l.value_offsets();
                        (
                            valid
                                .iter()
                                .map(|&r| (o[r] as usize, o[r + 1] as usize))
                                .collect(),
                            l.values().clone(),
                        )
                    }
                    ArrowType::LargeList(_) => {
                        let l = a.as_list::<i64>();
                        let o = l.value_offsets();
                        (
                            valid
                                .iter()
                                .map(|&r| (o[r] as usize, o[r + 1] as usize))
                                .collect(),
                            l.values().clone(),
                        )
                    }
                    t => return Err(format!("a list column of type {t}")),
                };
                let mut child_rows = vec![];
                for (s, e) in offsets {
                    self.ints.push((e - s) as i64);
                    child_rows.extend(s..e);
                }
                child.push(values.as_ref(), &child_rows)?;
            }
            Kind::Map(key, val) => {
                let m = a.as_map();
                let o = m.value_offsets();
                let mut child_rows = vec![];
                for &r in &valid {
                    let (s, e) = (o[r] as usize, o[r + 1] as usize);
                    self.ints.push((e - s) as i64);
                    child_rows.extend(s..e);
                }
                key.push(m.keys().as_ref(), &child_rows)?;
                val.push(m.values().as_ref(), &child_rows)?;
            }
            Kind::Struct(children) => {
                let s = a.as_struct();
                for (c, col) in children.iter_mut().zip(s.columns()) {
                    c.push(col.as_ref(), &valid)?;
                }
            }
        }
        Ok(())
    }

    /// The stripe's streams of this column and its children, in pre-order, with each column's
    /// encoding; the buffers are emptied for the next stripe.
    fn finish(
        &mut self,
        streams: &mut Vec<(proto::stream::Kind, u32, Vec<u8>)>,
        encodings: &mut Vec<proto::ColumnEncoding>,
    ) {
        use proto::stream::Kind as S;
        let id = self.id;
        encodings.push(proto::ColumnEncoding {
            kind: Some(proto::column_encoding::Kind::Direct.into()),
            ..Default::default()
        });
        if self.has_null {
            streams.push((S::Present, id, bool_rle(&self.present)));
        }
        let ints = std::mem::take(&mut self.ints);
        let secondary = std::mem::take(&mut self.secondary);
        let bytes = std::mem::take(&mut self.bytes);
        let bools = std::mem::take(&mut self.bools);
        self.present.clear();
        self.has_null = false;
        match &mut self.kind {
            Kind::Boolean => streams.push((S::Data, id, bool_rle(&bools))),
            Kind::Byte => streams.push((S::Data, id, byte_rle(&bytes))),
            Kind::Int => streams.push((S::Data, id, int_rle_v1(&ints, true))),
            Kind::Float | Kind::Double => streams.push((S::Data, id, bytes)),
            Kind::Bytes => {
                streams.push((S::Data, id, bytes));
                streams.push((S::Length, id, int_rle_v1(&ints, false)));
            }
            Kind::Decimal(_) => {
                streams.push((S::Data, id, bytes));
                streams.push((S::Secondary, id, int_rle_v1(&secondary, true)));
            }
            Kind::Timestamp => {
                streams.push((S::Data, id, int_rle_v1(&ints, true)));
                streams.push((S::Secondary, id, int_rle_v1(&secondary, false)));
            }
            Kind::List(c) => {
                streams.push((S::Length, id, int_rle_v1(&ints, false)));
                c.finish(streams, encodings);
            }
            Kind::Map(k, v) => {
                streams.push((S::Length, id, int_rle_v1(&ints, false)));
                k.finish(streams, encodings);
                v.finish(streams, encodings);
            }
            Kind::Struct(cs) => {
                for c in cs {
                    c.finish(streams, encodings);
                }
            }
        }
    }
}

// ---------------------------------------------------------------- compression

/// `data` as ORC stores a stream or metadata section compressed with `c`: chunks of
/// [`CHUNK`] bytes, each behind a 3-byte header (length << 1, | 1 when stored as is).
fn compress(c: OrcCompression, data: Vec<u8>) -> std::result::Result<Vec<u8>, String> {
    if c == OrcCompression::None {
        return Ok(data);
    }
    let mut out = Vec::with_capacity(data.len() / 2 + 8);
    for chunk in data.chunks(CHUNK) {
        let z: Vec<u8> = match c {
            OrcCompression::Zlib => {
                let mut e = flate2::write::DeflateEncoder::new(
                    Vec::with_capacity(chunk.len() / 2),
                    flate2::Compression::default(),
                );
                e.write_all(chunk).map_err(|e| e.to_string())?;
                e.finish().map_err(|e| e.to_string())?
            }
            OrcCompression::Snappy => snap::raw::Encoder::new()
                .compress_vec(chunk)
                .map_err(|e| e.to_string())?,
            OrcCompression::Lz4 => lz4_flex::block::compress(chunk),
            OrcCompression::Zstd => zstd::bulk::compress(chunk, super::orc::ORC_ZSTD_LEVEL)
                .map_err(|e| e.to_string())?,
            OrcCompression::None => chunk.to_vec(),
        };
        let (header, body) = if z.len() < chunk.len() {
            ((z.len() as u32) << 1, z.as_slice())
        } else {
            (((chunk.len() as u32) << 1) | 1, chunk)
        };
        out.extend_from_slice(&header.to_le_bytes()[..3]);
        out.extend_from_slice(body);
    }
    Ok(out)
}

// ---------------------------------------------------------------- the file

/// One ORC data file being written by this module's writer (see the module docs). Written
/// under a temp name and published on `close`, as the other writers do.
pub struct OrcOwnWriter {
    staged: StagedFile,
    out: Option<BufWriter<File>>,
    file_schema: SchemaRef,
    compression: OrcCompression,
    columns: Vec<Column>,
    types: Vec<proto::Type>,
    stripes: Vec<proto::StripeInformation>,
    /// Bytes written so far (the magic included).
    offset: u64,
    rows: u64,
    stripe_rows: u64,
    /// Arrow bytes of the open stripe, and of the stripes written with the bytes they took.
    pending: usize,
    flushed_arrow: u64,
    flushed_bytes: u64,
}

impl OrcOwnWriter {
    /// Create the data file `path` holding columns `schema` (the file's Arrow types, CHAR /
    /// VARCHAR lengths in [`ORC_TYPE_KEY`] metadata).
    pub fn create(path: PathBuf, schema: SchemaRef, compression: OrcCompression) -> Result<Self> {
        let mut types = vec![proto::Type {
            kind: Some(proto::r#type::Kind::Struct.into()),
            field_names: schema.fields().iter().map(|f| f.name().clone()).collect(),
            ..Default::default()
        }];
        let mut columns = vec![];
        for f in schema.fields() {
            let paimon = match f.metadata().get(ORC_TYPE_KEY) {
                Some(j) => Some(
                    serde_json::from_str(j)
                        .map_err(|e| e.to_string())
                        .and_then(|v| DataType::from_json(&v).map_err(|e| e.to_string()))
                        .map_err(|e| {
                            Error::Internal(format!("column '{}': {ORC_TYPE_KEY}: {e}", f.name()))
                        })?,
                ),
                None => None,
            };
            let c = Column::build(f.data_type(), paimon.as_ref(), &mut types).map_err(|m| {
                Error::unsupported(format!(
                    "ORC data file {}: cannot write column '{}': {m}",
                    path.display(),
                    f.name()
                ))
            })?;
            columns.push(c);
        }
        types[0].subtypes = columns.iter().map(|c| c.id).collect();
        let (staged, file) = StagedFile::create(path)?;
        let mut out = BufWriter::with_capacity(1 << 20, file);
        out.write_all(b"ORC")
            .map_err(|e| Error::io(&staged.tmp, e))?;
        Ok(OrcOwnWriter {
            staged,
            out: Some(out),
            file_schema: schema,
            compression,
            columns,
            types,
            stripes: vec![],
            offset: 3,
            rows: 0,
            stripe_rows: 0,
            pending: 0,
            flushed_arrow: 0,
            flushed_bytes: 0,
        })
    }

    fn orc_err(&self, e: impl std::fmt::Display) -> Error {
        Error::Internal(format!(
            "writing ORC data file {}: {e}",
            self.staged.path.display()
        ))
    }

    fn emit(&mut self, bytes: &[u8]) -> Result<()> {
        let out = self
            .out
            .as_mut()
            .ok_or_else(|| Error::Internal("ORC writer closed".into()))?;
        out.write_all(bytes)
            .map_err(|e| Error::io(&self.staged.tmp, e))?;
        self.offset += bytes.len() as u64;
        Ok(())
    }

    pub fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        if batch.num_rows() == 0 {
            return Ok(());
        }
        let b = to_file_types(batch, &self.file_schema)?;
        let rows: Vec<usize> = (0..b.num_rows()).collect();
        for (i, c) in b.columns().iter().enumerate() {
            if let Err(e) = self.columns[i].push(c.as_ref(), &rows) {
                return Err(self.orc_err(e));
            }
        }
        self.pending += b.get_array_memory_size();
        self.rows += b.num_rows() as u64;
        self.stripe_rows += b.num_rows() as u64;
        if self.pending >= STRIPE_ARROW_BYTES {
            self.flush_stripe()?;
        }
        Ok(())
    }

    /// Write the open stripe out, freeing its memory; the file stays open.
    pub fn flush_stripe(&mut self) -> Result<()> {
        if self.stripe_rows == 0 {
            return Ok(());
        }
        let start = self.offset;
        let mut streams = vec![];
        let mut encodings = vec![proto::ColumnEncoding {
            kind: Some(proto::column_encoding::Kind::Direct.into()),
            ..Default::default()
        }];
        for c in &mut self.columns {
            c.finish(&mut streams, &mut encodings);
        }
        let mut infos = vec![];
        for (kind, column, bytes) in streams {
            let z = compress(self.compression, bytes).map_err(|e| self.orc_err(e))?;
            self.emit(&z)?;
            infos.push(proto::Stream {
                kind: Some(kind.into()),
                column: Some(column),
                length: Some(z.len() as u64),
            });
        }
        let data_length = self.offset - start;
        let footer = proto::StripeFooter {
            streams: infos,
            columns: encodings,
            writer_timezone: Some("UTC".into()),
            encryption: vec![],
        };
        let footer =
            compress(self.compression, footer.encode_to_vec()).map_err(|e| self.orc_err(e))?;
        self.emit(&footer)?;
        self.stripes.push(proto::StripeInformation {
            offset: Some(start),
            index_length: Some(0),
            data_length: Some(data_length),
            footer_length: Some(footer.len() as u64),
            number_of_rows: Some(self.stripe_rows),
            ..Default::default()
        });
        self.flushed_bytes += self.offset - start;
        self.flushed_arrow += self.pending as u64;
        self.pending = 0;
        self.stripe_rows = 0;
        Ok(())
    }

    /// Bytes written so far plus the open stripe, at the ratio of encoded to Arrow bytes of the
    /// stripes written (1 before the first).
    pub fn estimated_size(&self) -> u64 {
        let pending = if self.flushed_arrow > 0 {
            (self.pending as f64 * self.flushed_bytes as f64 / self.flushed_arrow as f64) as u64
        } else {
            self.pending as u64
        };
        self.offset + pending
    }

    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// Arrow memory of the rows of the open stripe (an estimate of its encoded streams).
    pub fn buffered_bytes(&self) -> usize {
        self.pending
    }

    /// Finish the file; returns its size in bytes.
    pub fn close(mut self) -> Result<u64> {
        self.flush_stripe()?;
        let metadata = compress(self.compression, proto::Metadata::default().encode_to_vec())
            .map_err(|e| self.orc_err(e))?;
        let content_length = self.offset;
        let footer = proto::Footer {
            header_length: Some(3),
            content_length: Some(content_length),
            stripes: std::mem::take(&mut self.stripes),
            types: std::mem::take(&mut self.types),
            number_of_rows: Some(self.rows),
            writer: Some(u32::MAX),
            ..Default::default()
        };
        let footer =
            compress(self.compression, footer.encode_to_vec()).map_err(|e| self.orc_err(e))?;
        let kind = match self.compression {
            OrcCompression::None => proto::CompressionKind::None,
            OrcCompression::Zlib => proto::CompressionKind::Zlib,
            OrcCompression::Snappy => proto::CompressionKind::Snappy,
            OrcCompression::Lz4 => proto::CompressionKind::Lz4,
            OrcCompression::Zstd => proto::CompressionKind::Zstd,
        };
        let postscript = proto::PostScript {
            footer_length: Some(footer.len() as u64),
            compression: Some(kind.into()),
            compression_block_size: (self.compression != OrcCompression::None)
                .then_some(CHUNK as u64),
            version: vec![0, 12],
            metadata_length: Some(metadata.len() as u64),
            writer_version: Some(u32::MAX),
            stripe_statistics_length: None,
            magic: Some("ORC".into()),
        }
        .encode_to_vec();
        let ps_len = u8::try_from(postscript.len())
            .map_err(|_| self.orc_err("postscript longer than 255 bytes"))?;
        self.emit(&metadata)?;
        self.emit(&footer)?;
        self.emit(&postscript)?;
        self.emit(&[ps_len])?;
        let out = self
            .out
            .take()
            .ok_or_else(|| Error::Internal("ORC writer closed".into()))?;
        let file = out
            .into_inner()
            .map_err(|e| Error::io(&self.staged.tmp, e.into_error()))?;
        self.staged.publish(file)
    }
}

#[cfg(test)]
mod tests {
    use arrow_array::{ArrayRef, Int32Array, ListArray, StringArray, StructArray};
    use arrow_schema::Fields;

    use super::*;
    use crate::io::avro::tests::{assert_column, every_type, nested, ty};
    use crate::io::data_file::FileExpect;

    fn read_all(path: &std::path::Path, rows: u64, size: u64) -> RecordBatch {
        let got: Vec<RecordBatch> =
            super::super::orc::open_reader(path, None, 1000, Some(FileExpect { size, rows }))
                .unwrap()
                .collect::<Result<_>>()
                .unwrap();
        let schema = got
            .first()
            .map(|b| b.schema())
            .unwrap_or_else(|| Arc::new(Schema::empty()));
        arrow_select::concat::concat_batches(&schema, &got).unwrap()
    }

    /// `fields` (named as the batch's columns) as a file schema annotated for ORC.
    fn file_schema(fields: &[DataField]) -> SchemaRef {
        let s = Arc::new(Schema::new(
            fields.iter().map(|f| f.to_arrow_file()).collect::<Vec<_>>(),
        ));
        annotate(s, fields)
    }

    fn as_text(a: &ArrayRef) -> Vec<String> {
        let f =
            arrow::util::display::ArrayFormatter::try_new(a.as_ref(), &Default::default()).unwrap();
        (0..a.len()).map(|i| f.value(i).to_string()).collect()
    }

    /// Every type a table can write to ORC (flat, DECIMAL, CHAR, VARCHAR(n), nested with nulls
    /// at every level), written by this writer under each compression, over several stripes,
    /// and read back through orc-rust's reader.
    #[test]
    fn every_type_round_trips_under_every_compression() {
        let (mut fields, batch) = every_type();
        let n = batch.num_rows();
        let mut cols = batch.columns().to_vec();
        // a VARCHAR(4) and TIMESTAMP(9) columns too
        fields.push(DataField::new(100, "vc", ty("VARCHAR(4)")));
        cols.push(cols[10].clone());
        fields.push(DataField::new(101, "ts9", ty("TIMESTAMP(9)")));
        cols.push(Arc::new(arrow_array::TimestampNanosecondArray::from_iter(
            (0..n).map(|i| (i % 5 != 1).then_some((i as i64 - 100) * 1_234_567_891_013 + 7)),
        )));
        super::super::orc::check_schema("t", &fields).unwrap();
        let schema = file_schema(&fields);
        assert!(needed(&schema));
        let batch = RecordBatch::try_new(schema.clone(), cols).unwrap();
        let dir = tempfile::tempdir().unwrap();
        for (i, c) in [
            OrcCompression::None,
            OrcCompression::Zstd,
            OrcCompression::Zlib,
            OrcCompression::Snappy,
            OrcCompression::Lz4,
        ]
        .into_iter()
        .enumerate()
        {
            let path = dir.path().join(format!("data-{i}.orc"));
            let mut w = OrcOwnWriter::create(path.clone(), schema.clone(), c).unwrap();
            for k in 0..3 {
                w.write(&batch.slice(k * 100, 100)).unwrap();
                if k != 1 {
                    w.flush_stripe().unwrap();
                }
            }
            assert!(w.estimated_size() > 0 && w.rows() == n as u64);
            let size = w.close().unwrap();
            assert_eq!(size, std::fs::metadata(&path).unwrap().len());
            assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), i + 1);
            let got = read_all(&path, n as u64, size);
            assert_eq!(got.num_rows(), n);
            for (k, f) in fields.iter().enumerate() {
                let at = got.schema().index_of(&f.name).unwrap();
                let want = batch.column(k).clone();
                let name = format!("{} {c:?}", f.name);
                if matches!(f.name.as_str(), "im" | "ar") {
                    // maps of int keys (Avro's arrays of records in assert_column): as text
                    assert_eq!(as_text(got.column(at)), as_text(&want), "{name}");
                } else {
                    assert_column(&name, got.column(at), &want);
                }
            }
        }
    }

    /// The ORC types are Java's: CHAR(n), VARCHAR(n) with their lengths, DECIMAL(p, s),
    /// list / map / struct (read from the footer by orc-rust).
    #[test]
    fn the_footer_holds_java_orc_types() {
        let fields = vec![
            DataField::new(0, "c", ty("CHAR(5)")),
            DataField::new(1, "v", ty("VARCHAR(9)")),
            DataField::new(2, "s", ty("STRING")),
            DataField::new(3, "d", ty("DECIMAL(20, 4)")),
            DataField::new(4, "a", nested(TypeKind::Array(Box::new(ty("CHAR(2)"))))),
        ];
        let schema = file_schema(&fields);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("data-t.orc");
        let w = OrcOwnWriter::create(path.clone(), schema, OrcCompression::Zstd).unwrap();
        let size = w.close().unwrap();
        // an empty file: no stripes, no rows, every column typed
        let f = std::fs::File::open(&path).unwrap();
        let b = orc_rust::ArrowReaderBuilder::try_new(f).unwrap();
        let meta = b.file_metadata();
        assert_eq!(meta.number_of_rows(), 0);
        assert_eq!(meta.stripe_metadatas().len(), 0);
        let types: Vec<String> = meta
            .root_data_type()
            .children()
            .iter()
            .map(|c| format!("{:?}", c.data_type()))
            .collect();
        assert!(
            types[0].contains("Char") && types[0].contains('5'),
            "{types:?}"
        );
        assert!(
            types[1].contains("Varchar") && types[1].contains('9'),
            "{types:?}"
        );
        assert!(types[2].contains("String"), "{types:?}");
        assert!(
            types[3].contains("Decimal") && types[3].contains("20") && types[3].contains('4'),
            "{types:?}"
        );
        assert!(
            types[4].contains("List") && types[4].contains("Char"),
            "{types:?}"
        );
        assert_eq!(read_all(&path, 0, size).num_rows(), 0);
    }

    /// Java's ORC writer pads CHAR(n) values to n; its reader right-trims them (Hive's
    /// `CharTreeReader`), and so does ours: a padded value reads as the manifest's statistics
    /// and key ranges (recorded from the unpadded row) hold it.
    #[test]
    fn padded_char_values_read_right_trimmed() {
        use arrow_array::cast::AsArray;
        let fields = vec![
            DataField::new(0, "c", ty("CHAR(4)")),
            DataField::new(1, "v", ty("VARCHAR(4)")),
        ];
        let schema = file_schema(&fields);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("data-pad.orc");
        let mut w =
            OrcOwnWriter::create(path.clone(), schema.clone(), OrcCompression::None).unwrap();
        let cols: Vec<ArrayRef> = vec![
            Arc::new(StringArray::from(vec![
                Some("ab  "),
                None,
                Some("abcd"),
                Some(" x  "),
            ])),
            Arc::new(StringArray::from(vec![
                Some("ab  "),
                None,
                Some("abcd"),
                Some(" x  "),
            ])),
        ];
        w.write(&RecordBatch::try_new(schema, cols).unwrap())
            .unwrap();
        w.close().unwrap();
        let got: Vec<RecordBatch> = crate::io::orc::open_reader(&path, None, 100, None)
            .unwrap()
            .collect::<Result<_>>()
            .unwrap();
        let c: Vec<Option<&str>> = got[0].column(0).as_string::<i32>().iter().collect();
        assert_eq!(c, vec![Some("ab"), None, Some("abcd"), Some(" x")]);
        // VARCHAR keeps its trailing spaces (Java's reader trims CHAR only)
        let v: Vec<Option<&str>> = got[0].column(1).as_string::<i32>().iter().collect();
        assert_eq!(v, vec![Some("ab  "), None, Some("abcd"), Some(" x  ")]);
    }

    /// Nulls at every level of a list of structs: a null list, an empty list, a null struct
    /// in a list, a null field in a struct; a column all null.
    #[test]
    fn nested_nulls_round_trip() {
        let row_fields = Fields::from(vec![
            Field::new("x", ArrowType::Int32, true),
            Field::new("y", ArrowType::Utf8, true),
        ]);
        let items = StructArray::new(
            row_fields.clone(),
            vec![
                Arc::new(Int32Array::from(vec![Some(1), None, Some(3), Some(4)])),
                Arc::new(StringArray::from(vec![
                    Some("a"),
                    Some("b"),
                    None,
                    Some("d"),
                ])),
            ],
            Some(vec![true, true, false, true].into()),
        );
        let item = Arc::new(Field::new("element", ArrowType::Struct(row_fields), true));
        let list = ListArray::new(
            item.clone(),
            arrow_buffer::OffsetBuffer::from_lengths([2, 0, 0, 2]),
            Arc::new(items),
            Some(vec![true, false, true, true].into()),
        );
        let schema = Arc::new(Schema::new(vec![
            Field::new("l", ArrowType::List(item), true),
            Field::new("n", ArrowType::Decimal128(5, 1), true),
        ]));
        let nulls = arrow_array::Decimal128Array::from(vec![None::<i128>; 4])
            .with_precision_and_scale(5, 1)
            .unwrap();
        let batch =
            RecordBatch::try_new(schema.clone(), vec![Arc::new(list), Arc::new(nulls)]).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("data-n.orc");
        let mut w = OrcOwnWriter::create(path.clone(), schema, OrcCompression::Snappy).unwrap();
        w.write(&batch).unwrap();
        let size = w.close().unwrap();
        let got = read_all(&path, 4, size);
        for k in 0..2 {
            assert_column(&k.to_string(), got.column(k), batch.column(k));
        }
    }

    /// The run-length encodings against hand-decoded bytes (ORC specification examples).
    #[test]
    fn run_length_encodings_follow_the_specification() {
        // byte RLE: 100 zeros are a run; [0x44, 0x45] literals
        assert_eq!(byte_rle(&[0; 100]), vec![0x61, 0x00]);
        assert_eq!(byte_rle(&[0x44, 0x45]), vec![0xfe, 0x44, 0x45]);
        // integer RLE v1: [7; 100] is a run of delta 0; 2, 3, 6, 7, 11 literals
        assert_eq!(int_rle_v1(&[7; 100], false), vec![0x61, 0x00, 0x07]);
        assert_eq!(
            int_rle_v1(&[2, 3, 6, 7, 11], false),
            vec![0xfb, 0x02, 0x03, 0x06, 0x07, 0x0b]
        );
        let run: Vec<i64> = (0..10).map(|i| 100 - i * 2).collect();
        assert_eq!(int_rle_v1(&run, true), vec![0x07, 0xfe, 0xc8, 0x01]);
        // booleans, most significant bit first
        let bits = [true, false, false, false, false, false, false, true, true];
        assert_eq!(bool_rle(&bits), vec![0xfe, 0x81, 0x80]);
        assert_eq!(encode_nanos(1_000_000), (1 << 3) | 5);
        assert_eq!(encode_nanos(123_000), (123 << 3) | 2);
        assert_eq!(encode_nanos(7), 7 << 3);
    }

    /// A column type no ORC writer of paimon_rs encodes is refused naming the column.
    #[test]
    fn an_unknown_arrow_type_is_refused() {
        let schema = Arc::new(Schema::new(vec![Field::new(
            "u",
            ArrowType::Duration(TimeUnit::Second),
            true,
        )]));
        let dir = tempfile::tempdir().unwrap();
        let e = OrcOwnWriter::create(dir.path().join("x.orc"), schema, OrcCompression::None)
            .err()
            .unwrap();
        assert!(
            matches!(e, Error::Unsupported { .. }) && e.to_string().contains("'u'"),
            "{e}"
        );
    }
}
