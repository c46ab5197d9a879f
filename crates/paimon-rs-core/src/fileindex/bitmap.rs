//! Java Paimon's bitmap file index (`BitmapFileIndex`, versions 1 and 2; docs/paimon-format.md
//! §13.3): per data file and column, a dictionary of the column's distinct values, each mapped
//! to the Roaring bitmap of the rows holding it, plus the bitmap of the null rows.
//!
//! ```text
//! version            u8    1 or 2 (Java writes 2 unless `file-index.bitmap.<col>.version`)
//! row count          i32
//! distinct values    i32   (nulls not counted)
//! has nulls          bool
//! [null offset       i32]  -1 - row when one row is null, else 0 (the body's first bitmap)
//! version 1:         per value: key, offset i32 (into the body; -1 - row for a value held by one row)
//! version 2:         [null bitmap length i32]
//!                    block count i32, per block: first key, offset i32 (into the blocks)
//!                    blocks length i32
//!                    per block (at most `index-block-size`, 16 kb): entry count i32,
//!                        per entry: key, offset i32, length i32 (-1 for one row)
//! body               the null bitmap (when more than one row is null), then the values' bitmaps
//! ```
//!
//! A key is written as Java's `DataOutput` does: strings as an i32 length and UTF-8 bytes,
//! integers big-endian at their width (dates and times as ints, timestamps as a long of epoch
//! milliseconds up to precision 3, of microseconds above), floats by their bits, booleans as a
//! byte. Bitmaps are portable Roaring (`RoaringBitmap32.serialize`). Version 2 sorts the keys
//! (Java's `Comparator` per type: strings by unsigned bytes, floats by `Float.compare`); Java
//! writes the body in its `HashMap`'s order, we write it in key order: the offsets say where
//! each bitmap is, so either reads the other's.
//!
//! paimon_rs uses the index to skip files (Java's `FileIndexPredicate`: a file whose result
//! bitmap is empty holds no row passing the filter) and, for raw reads, to read only the rows
//! the result bitmap selects (Java's `BitmapIndexResult` applied by `RawFileSplitRead`; see
//! `super::row_selection`).

use std::collections::HashMap;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Date32Type, Float32Type, Float64Type, Int16Type, Int32Type, Int64Type, Int8Type,
    Time32MillisecondType, TimestampMicrosecondType, TimestampMillisecondType,
    TimestampNanosecondType, TimestampSecondType,
};
use arrow_array::Array;
use arrow_schema::{DataType as ArrowType, TimeUnit};
use roaring::RoaringBitmap;

use crate::error::{Error, Result};
use crate::spec::datum::Datum;
use crate::spec::types::{DataType, TypeKind};

use super::format::Cursor;

pub(crate) const VERSION_1: u8 = 1;
pub(crate) const VERSION_2: u8 = 2;
/// Java's `index-block-size` default (16 kb).
pub(crate) const DEFAULT_BLOCK_SIZE: u64 = 16 * 1024;

/// How a column's values are keyed (Java's `BitmapTypeVisitor`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum KeyKind {
    Str,
    Bool,
    I8,
    I16,
    I32,
    I64,
    F32,
    F64,
}

/// One distinct value. Floats are kept as their ordered bits (see [`f32_key`]) so that `Ord`
/// is Java's `Float.compare` / `Double.compare` and equality is Java's `equals` (all NaNs one
/// key, `0.0` and `-0.0` two).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum Key {
    Bool(bool),
    I8(i8),
    I16(i16),
    I32(i32),
    I64(i64),
    F32(i32),
    F64(i64),
    Str(Vec<u8>),
}

fn f32_key(f: f32) -> Key {
    let b = if f.is_nan() {
        0x7fc0_0000
    } else {
        f.to_bits() as i32
    };
    Key::F32(if b < 0 { b ^ i32::MAX } else { b })
}

fn f64_key(f: f64) -> Key {
    let b = if f.is_nan() {
        0x7ff8_0000_0000_0000
    } else {
        f.to_bits() as i64
    };
    Key::F64(if b < 0 { b ^ i64::MAX } else { b })
}

fn unorder32(k: i32) -> i32 {
    if k < 0 {
        k ^ i32::MAX
    } else {
        k
    }
}

fn unorder64(k: i64) -> i64 {
    if k < 0 {
        k ^ i64::MAX
    } else {
        k
    }
}

impl KeyKind {
    fn of(t: &DataType) -> Option<KeyKind> {
        use TypeKind as K;
        Some(match t.kind {
            K::Char(_) | K::VarChar(_) => KeyKind::Str,
            K::Boolean => KeyKind::Bool,
            K::TinyInt => KeyKind::I8,
            K::SmallInt => KeyKind::I16,
            K::Int | K::Date | K::Time(_) => KeyKind::I32,
            K::BigInt | K::Timestamp(_) | K::LocalZonedTimestamp(_) => KeyKind::I64,
            K::Float => KeyKind::F32,
            K::Double => KeyKind::F64,
            _ => return None,
        })
    }

    fn write(self, k: &Key, out: &mut Vec<u8>) -> Result<()> {
        match (self, k) {
            (KeyKind::Str, Key::Str(b)) => {
                let n = i32::try_from(b.len()).map_err(|_| {
                    Error::invalid("bitmap file index: a value over 2 GB".to_string())
                })?;
                out.extend_from_slice(&n.to_be_bytes());
                out.extend_from_slice(b);
            }
            (KeyKind::Bool, Key::Bool(v)) => out.push(*v as u8),
            (KeyKind::I8, Key::I8(v)) => out.push(*v as u8),
            (KeyKind::I16, Key::I16(v)) => out.extend_from_slice(&v.to_be_bytes()),
            (KeyKind::I32, Key::I32(v)) => out.extend_from_slice(&v.to_be_bytes()),
            (KeyKind::I64, Key::I64(v)) => out.extend_from_slice(&v.to_be_bytes()),
            (KeyKind::F32, Key::F32(v)) => out.extend_from_slice(&unorder32(*v).to_be_bytes()),
            (KeyKind::F64, Key::F64(v)) => out.extend_from_slice(&unorder64(*v).to_be_bytes()),
            _ => {
                return Err(Error::invalid(format!(
                    "bitmap file index: a {k:?} key in a {self:?} column"
                )))
            }
        }
        Ok(())
    }

    fn size(self, k: &Key) -> usize {
        match (self, k) {
            (_, Key::Str(b)) => 4 + b.len(),
            (KeyKind::Bool | KeyKind::I8, _) => 1,
            (KeyKind::I16, _) => 2,
            (KeyKind::I32 | KeyKind::F32, _) => 4,
            _ => 8,
        }
    }

    fn read(self, c: &mut Cursor<'_>) -> Result<Key> {
        Ok(match self {
            KeyKind::Str => {
                let n = c.i32()?;
                let n = usize::try_from(n)
                    .map_err(|_| c.corrupt(&format!("bitmap file index: a key of length {n}")))?;
                Key::Str(c.take(n)?.to_vec())
            }
            KeyKind::Bool => Key::Bool(c.take(1)?[0] != 0),
            KeyKind::I8 => Key::I8(c.take(1)?[0] as i8),
            KeyKind::I16 => {
                let b = c.take(2)?;
                Key::I16(i16::from_be_bytes([b[0], b[1]]))
            }
            KeyKind::I32 => Key::I32(c.i32()?),
            KeyKind::I64 => Key::I64(c.i64()?),
            KeyKind::F32 => f32_key(f32::from_bits(c.i32()? as u32)),
            KeyKind::F64 => f64_key(f64::from_bits(c.i64()? as u64)),
        })
    }
}

/// Can a bitmap index be built on a column of type `t`? (Java refuses binary, decimal and
/// nested types when it creates the writer.)
pub(crate) fn indexable(t: &DataType) -> bool {
    KeyKind::of(t).is_some()
}

fn ts_precision(t: &DataType) -> u32 {
    match t.kind {
        TypeKind::Timestamp(p) | TypeKind::LocalZonedTimestamp(p) => p,
        _ => 0,
    }
}

/// The keys a literal of a column of type `t` may be stored under: none (keep the file) if the
/// literal does not fit the column or is finer than it stores. With `both_zeros` a float zero
/// is both signs (two keys in Java's map; for `=` / `IN`, where looking up more keeps more
/// files), else only its own bits (for `<>` / `NOT IN`, where the row filter and Java tell
/// `-0.0` from `0.0`).
fn datum_keys(t: &DataType, d: &Datum, both_zeros: bool) -> Option<Vec<Key>> {
    let kind = KeyKind::of(t)?;
    let int = |v: i64| -> Option<Vec<Key>> {
        Some(vec![match kind {
            KeyKind::I8 => Key::I8(i8::try_from(v).ok()?),
            KeyKind::I16 => Key::I16(i16::try_from(v).ok()?),
            KeyKind::I32 => Key::I32(i32::try_from(v).ok()?),
            KeyKind::I64 => Key::I64(v),
            _ => return None,
        }])
    };
    use TypeKind as K;
    match (&t.kind, d) {
        (K::TinyInt | K::SmallInt | K::Int | K::BigInt, Datum::TinyInt(v)) => int(*v as i64),
        (K::TinyInt | K::SmallInt | K::Int | K::BigInt, Datum::SmallInt(v)) => int(*v as i64),
        (K::TinyInt | K::SmallInt | K::Int | K::BigInt, Datum::Int(v)) => int(*v as i64),
        (K::TinyInt | K::SmallInt | K::Int | K::BigInt, Datum::BigInt(v)) => int(*v),
        (K::Date, Datum::Date(v)) | (K::Time(_), Datum::Time(v)) => int(*v as i64),
        (K::Boolean, Datum::Bool(b)) => Some(vec![Key::Bool(*b)]),
        (K::Float, Datum::Float(f)) => Some(if both_zeros && *f == 0.0 {
            vec![f32_key(0.0), f32_key(-0.0)]
        } else {
            vec![f32_key(*f)]
        }),
        (K::Double, Datum::Double(f)) => Some(if both_zeros && *f == 0.0 {
            vec![f64_key(0.0), f64_key(-0.0)]
        } else {
            vec![f64_key(*f)]
        }),
        (K::Char(_) | K::VarChar(_), Datum::String(s)) => Some(vec![Key::Str(s.as_bytes().into())]),
        (K::Timestamp(_) | K::LocalZonedTimestamp(_), Datum::Timestamp { millis, nanos }) => {
            if ts_precision(t) <= 3 {
                (*nanos == 0).then(|| vec![Key::I64(*millis)])
            } else {
                let micros = millis.checked_mul(1000)? + (*nanos / 1000) as i64;
                (*nanos % 1000 == 0).then(|| vec![Key::I64(micros)])
            }
        }
        _ => None,
    }
}

/// The key of every row of `col` (a column of type `t`, in the Arrow type the writer holds it
/// in), None for a null, as Java's `getValueMapper` keys the same value.
fn array_keys(t: &DataType, col: &dyn Array, out: &mut Vec<Option<Key>>) -> Result<()> {
    macro_rules! prim {
        ($ty:ty, $f:expr) => {{
            let a = col.as_primitive::<$ty>();
            out.extend((0..a.len()).map(|i| a.is_valid(i).then(|| $f(a.value(i)))));
        }};
    }
    let p = ts_precision(t);
    let ts = |v: i64, per_ms: i64| -> Key { Key::I64(super::bloom::java_ts(p, v, per_ms)) };
    match col.data_type() {
        ArrowType::Boolean => {
            let a = col.as_boolean();
            out.extend((0..a.len()).map(|i| a.is_valid(i).then(|| Key::Bool(a.value(i)))));
        }
        ArrowType::Int8 => prim!(Int8Type, Key::I8),
        ArrowType::Int16 => prim!(Int16Type, Key::I16),
        ArrowType::Int32 => prim!(Int32Type, Key::I32),
        ArrowType::Int64 => prim!(Int64Type, Key::I64),
        ArrowType::Date32 => prim!(Date32Type, Key::I32),
        ArrowType::Time32(TimeUnit::Millisecond) => prim!(Time32MillisecondType, Key::I32),
        ArrowType::Float32 => prim!(Float32Type, f32_key),
        ArrowType::Float64 => prim!(Float64Type, f64_key),
        ArrowType::Timestamp(TimeUnit::Second, _) => {
            prim!(TimestampSecondType, |v: i64| ts(v.wrapping_mul(1000), 1))
        }
        ArrowType::Timestamp(TimeUnit::Millisecond, _) => {
            prim!(TimestampMillisecondType, |v: i64| ts(v, 1))
        }
        ArrowType::Timestamp(TimeUnit::Microsecond, _) => {
            prim!(TimestampMicrosecondType, |v: i64| ts(v, 1000))
        }
        ArrowType::Timestamp(TimeUnit::Nanosecond, _) => {
            prim!(TimestampNanosecondType, |v: i64| ts(v, 1_000_000))
        }
        ArrowType::Utf8 => out.extend(
            col.as_string::<i32>()
                .iter()
                .map(|s| s.map(|s| Key::Str(s.as_bytes().into()))),
        ),
        ArrowType::LargeUtf8 => out.extend(
            col.as_string::<i64>()
                .iter()
                .map(|s| s.map(|s| Key::Str(s.as_bytes().into()))),
        ),
        ArrowType::Utf8View => out.extend(
            col.as_string_view()
                .iter()
                .map(|s| s.map(|s| Key::Str(s.as_bytes().into()))),
        ),
        other => {
            return Err(Error::unsupported(format!(
                "bitmap file index of a {t} column held as Arrow {other}"
            )))
        }
    }
    Ok(())
}

/// The rows of one value: one row kept inline (Java writes it as `-1 - row`, no bitmap).
enum Rows {
    One(u32),
    Many(RoaringBitmap),
}

impl Rows {
    fn add(&mut self, row: u32) {
        match self {
            Rows::One(r) => {
                let mut b = RoaringBitmap::new();
                b.insert(*r);
                b.insert(row);
                *self = Rows::Many(b);
            }
            Rows::Many(b) => {
                b.insert(row);
            }
        }
    }
}

fn serialize(b: &RoaringBitmap) -> Result<Vec<u8>> {
    let mut out = Vec::with_capacity(b.serialized_size());
    b.serialize_into(&mut out)
        .map_err(|e| Error::invalid(format!("bitmap file index: {e}")))?;
    Ok(out)
}

/// The bitmap index of one column of a data file being written.
pub(crate) struct BitmapBuilder {
    t: DataType,
    kind: KeyKind,
    version: u8,
    block_size: u64,
    rows: u32,
    nulls: RoaringBitmap,
    values: HashMap<Key, Rows>,
    scratch: Vec<Option<Key>>,
}

impl BitmapBuilder {
    pub(crate) fn new(t: &DataType, version: u8, block_size: u64) -> Result<Self> {
        let kind = KeyKind::of(t)
            .ok_or_else(|| Error::unsupported(format!("a bitmap file index on a {t} column")))?;
        Ok(BitmapBuilder {
            t: t.clone(),
            kind,
            version,
            block_size,
            rows: 0,
            nulls: RoaringBitmap::new(),
            values: HashMap::new(),
            scratch: vec![],
        })
    }

    /// Add the rows of `col` (the next rows of the file, in order).
    pub(crate) fn update(&mut self, col: &dyn Array) -> Result<()> {
        let mut keys = std::mem::take(&mut self.scratch);
        keys.clear();
        array_keys(&self.t, col, &mut keys)?;
        for k in keys.drain(..) {
            let row = self.rows;
            self.rows = self.rows.checked_add(1).ok_or_else(|| {
                Error::invalid("bitmap file index: a file of over 2^32 rows".to_string())
            })?;
            match k {
                None => {
                    self.nulls.insert(row);
                }
                Some(k) => match self.values.get_mut(&k) {
                    Some(r) => r.add(row),
                    None => {
                        self.values.insert(k, Rows::One(row));
                    }
                },
            }
        }
        self.scratch = keys;
        Ok(())
    }

    /// The index's bytes (Java's `BitmapFileIndex.Writer.serializedBytes`).
    pub(crate) fn finish(self) -> Result<Vec<u8>> {
        let too_big = || Error::invalid("bitmap file index: over 2 GB".to_string());
        let row_count = i32::try_from(self.rows).map_err(|_| too_big())?;
        let mut values: Vec<(Key, Rows)> = self.values.into_iter().collect();
        values.sort_by(|a, b| a.0.cmp(&b.0));
        let null_bytes = serialize(&self.nulls)?;
        let null_count = self.nulls.len();
        let mut body = vec![];
        if null_count > 1 {
            body.extend_from_slice(&null_bytes);
        }
        // (key, offset into the body or -1 - row, length or -1)
        let mut entries: Vec<(Key, i32, i32)> = Vec::with_capacity(values.len());
        for (k, r) in values {
            match r {
                Rows::One(row) => entries.push((k, -1 - row as i32, -1)),
                Rows::Many(b) => {
                    let bytes = serialize(&b)?;
                    let off = i32::try_from(body.len()).map_err(|_| too_big())?;
                    let len = i32::try_from(bytes.len()).map_err(|_| too_big())?;
                    body.extend_from_slice(&bytes);
                    entries.push((k, off, len));
                }
            }
        }
        let null_offset: i32 = match self.nulls.min() {
            Some(row) if null_count == 1 => -1 - row as i32,
            _ => 0,
        };
        let mut out = vec![self.version];
        out.extend_from_slice(&row_count.to_be_bytes());
        out.extend_from_slice(&(entries.len() as i32).to_be_bytes());
        out.push(u8::from(null_count > 0));
        match self.version {
            VERSION_1 => {
                if null_count > 0 {
                    out.extend_from_slice(&null_offset.to_be_bytes());
                }
                for (k, off, _) in &entries {
                    self.kind.write(k, &mut out)?;
                    out.extend_from_slice(&off.to_be_bytes());
                }
            }
            _ => {
                if null_count > 0 {
                    out.extend_from_slice(&null_offset.to_be_bytes());
                    let n = i32::try_from(null_bytes.len()).map_err(|_| too_big())?;
                    out.extend_from_slice(&n.to_be_bytes());
                }
                // blocks of at most `block_size` bytes, as Java's; an entry alone may exceed it in a
                // block of its own (Java's writer throws "index fail" there; readers follow offsets)
                let mut blocks: Vec<(usize, usize, u64)> = vec![]; // (first, end, bytes)
                for (i, (k, _, _)) in entries.iter().enumerate() {
                    let e = 8 + self.kind.size(k) as u64;
                    match blocks.last_mut() {
                        Some(b) if b.2 + e <= self.block_size => {
                            b.1 = i + 1;
                            b.2 += e;
                        }
                        _ => blocks.push((i, i + 1, 4 + e)),
                    }
                }
                out.extend_from_slice(&(blocks.len() as i32).to_be_bytes());
                let mut offset: u64 = 0;
                for b in &blocks {
                    self.kind.write(&entries[b.0].0, &mut out)?;
                    let o = i32::try_from(offset).map_err(|_| too_big())?;
                    out.extend_from_slice(&o.to_be_bytes());
                    offset += b.2;
                }
                let total = i32::try_from(offset).map_err(|_| too_big())?;
                out.extend_from_slice(&total.to_be_bytes());
                for b in &blocks {
                    out.extend_from_slice(&((b.1 - b.0) as i32).to_be_bytes());
                    for (k, off, len) in &entries[b.0..b.1] {
                        self.kind.write(k, &mut out)?;
                        out.extend_from_slice(&off.to_be_bytes());
                        out.extend_from_slice(&len.to_be_bytes());
                    }
                }
            }
        }
        out.extend_from_slice(&body);
        Ok(out)
    }
}

/// Where the rows of one value (or of the nulls) are: one row kept inline (`-1 - row`), or a
/// Roaring bitmap at `offset` into the body (`len` bytes; version 1 does not record it).
#[derive(Debug, Clone, Copy)]
enum Loc {
    One(u32),
    At { offset: usize, len: Option<usize> },
}

impl Loc {
    fn of(offset: i32, len: Option<i32>) -> Loc {
        match u32::try_from(-1i64 - offset as i64) {
            Ok(row) if offset < 0 => Loc::One(row),
            _ => Loc::At {
                offset: offset.max(0) as usize,
                len: len.and_then(|n| usize::try_from(n).ok()),
            },
        }
    }
}

/// What a file's bitmap index of one column says: the values it holds (the dictionary, sorted)
/// and whether it holds nulls, enough to skip files; and where each value's rows are, for
/// [`BitmapIndex::rows_in`] and the other row selections (the bitmaps are read from the
/// index's bytes only when a selection asks for them).
pub(crate) struct BitmapIndex {
    has_nulls: bool,
    values: Vec<Key>,
    /// The rows of `values[i]`.
    locs: Vec<Loc>,
    /// The null rows (None without nulls).
    nulls: Option<Loc>,
    /// The file's row count.
    rows: u32,
    /// Where the body starts in the index's bytes.
    body: usize,
}

impl BitmapIndex {
    /// Read the dictionary of an index of a column of type `t` (the file's type of it).
    /// `context` names the index (its `.index` file) for errors. None: the column's type has
    /// no bitmap keys (an index this reader cannot use: the file is kept).
    pub(crate) fn read(b: &[u8], t: &DataType, context: &str) -> Result<Option<BitmapIndex>> {
        let Some(kind) = KeyKind::of(t) else {
            return Ok(None);
        };
        let mut c = Cursor::new(b, context);
        let version = c.take(1)?[0];
        let rows = c.i32()?;
        let rows = u32::try_from(rows)
            .map_err(|_| c.corrupt(&format!("bitmap file index: a row count of {rows}")))?;
        let distinct = c.count("bitmap file index: distinct value count")?;
        let has_nulls = c.take(1)?[0] != 0;
        let mut values = Vec::with_capacity(distinct.min(b.len()));
        let mut nulls = None;
        let body;
        match version {
            VERSION_1 => {
                if has_nulls {
                    nulls = Some(Loc::of(c.i32()?, None));
                }
                for _ in 0..distinct {
                    let k = kind.read(&mut c)?;
                    values.push((k, Loc::of(c.i32()?, None)));
                }
                body = c.pos();
            }
            VERSION_2 => {
                if has_nulls {
                    let off = c.i32()?;
                    nulls = Some(Loc::of(off, Some(c.i32()?)));
                }
                let blocks = c.count("bitmap file index: block count")?;
                let mut offsets = Vec::with_capacity(blocks.min(b.len()));
                for _ in 0..blocks {
                    kind.read(&mut c)?;
                    offsets.push(c.count("bitmap file index: block offset")?);
                }
                let blocks_len = c.count("bitmap file index: blocks length")?;
                let start = c.pos();
                body = start.checked_add(blocks_len).ok_or_else(|| {
                    c.corrupt(&format!("bitmap file index: blocks of {blocks_len} bytes"))
                })?;
                for off in offsets {
                    let at = start
                        .checked_add(off)
                        .filter(|p| *p <= b.len())
                        .ok_or_else(|| {
                            c.corrupt(&format!("bitmap file index: a block at {off}"))
                        })?;
                    c.seek(at);
                    let n = c.count("bitmap file index: entry count")?;
                    for _ in 0..n {
                        let k = kind.read(&mut c)?;
                        let off = c.i32()?;
                        values.push((k, Loc::of(off, Some(c.i32()?))));
                    }
                }
                if values.len() != distinct {
                    return Err(c.corrupt(&format!(
                        "bitmap file index: {} values in the blocks, {distinct} in the head",
                        values.len()
                    )));
                }
            }
            v => {
                return Err(Error::unsupported(format!(
                    "{context}: a bitmap file index of version {v} (paimon_rs reads versions \
                     {VERSION_1} and {VERSION_2})"
                )))
            }
        }
        values.sort_by(|a, b| a.0.cmp(&b.0));
        values.dedup_by(|a, b| a.0 == b.0);
        let (values, locs) = values.into_iter().unzip();
        Ok(Some(BitmapIndex {
            has_nulls,
            values,
            locs,
            nulls,
            rows,
            body,
        }))
    }

    /// The rows at `loc` of the index whose bytes are `b`.
    fn bitmap(&self, b: &[u8], loc: Loc, context: &str) -> Result<RoaringBitmap> {
        match loc {
            Loc::One(row) => Ok(RoaringBitmap::from_iter([row])),
            Loc::At { offset, len } => {
                let corrupt = || {
                    Error::corrupt(
                        std::path::Path::new(context),
                        format!("bitmap file index: a bitmap at {offset} of its body"),
                    )
                };
                let from = self.body.checked_add(offset).ok_or_else(corrupt)?;
                let to = match len {
                    Some(n) => from.checked_add(n).ok_or_else(corrupt)?,
                    None => b.len(),
                };
                let bytes = b.get(from..to).ok_or_else(corrupt)?;
                RoaringBitmap::deserialize_from(bytes).map_err(|e| {
                    Error::corrupt(
                        std::path::Path::new(context),
                        format!("bitmap file index: a bitmap at {offset} of its body: {e}"),
                    )
                })
            }
        }
    }

    /// Every row of the file.
    fn all_rows(&self) -> RoaringBitmap {
        let mut r = RoaringBitmap::new();
        r.insert_range(0..self.rows);
        r
    }

    /// The rows holding one of `keys`.
    fn rows_of(&self, b: &[u8], keys: &[Key], context: &str) -> Result<RoaringBitmap> {
        let mut out = RoaringBitmap::new();
        for k in keys {
            if let Ok(i) = self.values.binary_search(k) {
                out |= self.bitmap(b, self.locs[i], context)?;
            }
        }
        Ok(out)
    }

    /// The null rows.
    fn null_rows(&self, b: &[u8], context: &str) -> Result<RoaringBitmap> {
        match self.nulls {
            Some(loc) if self.has_nulls => self.bitmap(b, loc, context),
            _ => Ok(RoaringBitmap::new()),
        }
    }

    /// The rows that may be one of `literals` (`=` / `IN`; a superset: a float zero is both
    /// signs, a timestamp above precision 6 its microsecond), of the index whose bytes are
    /// `b`. None: the index cannot tell (a literal that does not fit the column's keys).
    pub(crate) fn rows_in(
        &self,
        b: &[u8],
        t: &DataType,
        literals: &[Option<Datum>],
        context: &str,
    ) -> Result<Option<RoaringBitmap>> {
        let mut keys = vec![];
        for d in literals.iter().flatten() {
            match datum_keys(t, d, true) {
                Some(ks) => keys.extend(ks),
                None => return Ok(None),
            }
        }
        self.rows_of(b, &keys, context).map(Some)
    }

    /// The rows that may be other than all of `literals` (`<>` / `NOT IN`): every row but
    /// those holding a literal's own key (null rows kept, as Java's). None where a key may
    /// stand for values the row filter tells apart (a null literal, a timestamp above
    /// precision 6, a NaN) or a literal does not fit the column.
    pub(crate) fn rows_not_in(
        &self,
        b: &[u8],
        t: &DataType,
        literals: &[Option<Datum>],
        context: &str,
    ) -> Result<Option<RoaringBitmap>> {
        if literals.iter().any(Option::is_none) || ts_precision(t) > 6 {
            return Ok(None);
        }
        let mut keys = vec![];
        for d in literals.iter().flatten() {
            let nan = match d {
                Datum::Float(f) => f.is_nan(),
                Datum::Double(f) => f.is_nan(),
                _ => false,
            };
            match datum_keys(t, d, false) {
                Some(ks) if !nan => keys.extend(ks),
                _ => return Ok(None),
            }
        }
        Ok(Some(self.all_rows() - self.rows_of(b, &keys, context)?))
    }

    /// The rows `IS NULL` (exact).
    pub(crate) fn rows_null(&self, b: &[u8], context: &str) -> Result<RoaringBitmap> {
        self.null_rows(b, context)
    }

    /// The rows `IS NOT NULL` (exact).
    pub(crate) fn rows_not_null(&self, b: &[u8], context: &str) -> Result<RoaringBitmap> {
        Ok(self.all_rows() - self.null_rows(b, context)?)
    }

    /// The file's row count (as the index records it).
    pub(crate) fn row_count(&self) -> u32 {
        self.rows
    }

    fn holds(&self, k: &Key) -> bool {
        self.values.binary_search(k).is_ok()
    }

    /// May a row of the file be one of `literals` (`=` / `IN`)? A null literal matches no row.
    pub(crate) fn may_be_in(&self, t: &DataType, literals: &[Option<Datum>]) -> bool {
        literals
            .iter()
            .flatten()
            .any(|d| match datum_keys(t, d, true) {
                Some(ks) => ks.iter().any(|k| self.holds(k)),
                None => true,
            })
    }

    /// May a row of the file be other than all of `literals` (`<>` / `NOT IN`)? Java's answer
    /// (the rows not in the literals' bitmaps, null rows included) is empty only without nulls
    /// and when every value is one of the literals.
    /// Above precision 6 a timestamp's key is its microseconds (Java's `toMicros`): values
    /// differing below the microsecond share a key, so the file is kept.
    pub(crate) fn may_be_not_in(&self, t: &DataType, literals: &[Option<Datum>]) -> bool {
        if self.has_nulls || literals.iter().any(Option::is_none) || ts_precision(t) > 6 {
            return true;
        }
        let mut keys = vec![];
        for d in literals.iter().flatten() {
            match datum_keys(t, d, false) {
                Some(ks) => keys.extend(ks),
                None => return true,
            }
        }
        self.values.iter().any(|v| !keys.contains(v))
    }

    pub(crate) fn may_be_null(&self) -> bool {
        self.has_nulls
    }

    pub(crate) fn may_be_not_null(&self) -> bool {
        !self.values.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{Int32Array, StringArray};

    fn t(s: &str) -> DataType {
        DataType::new(match s {
            "STRING" => TypeKind::VarChar(100),
            _ => TypeKind::Int,
        })
    }

    #[test]
    fn float_keys_order_as_java_compare() {
        let mut ks = [
            f32_key(f32::NAN),
            f32_key(1.0),
            f32_key(0.0),
            f32_key(-0.0),
            f32_key(-1.0),
            f32_key(f32::NEG_INFINITY),
            f32_key(f32::INFINITY),
        ];
        ks.sort();
        let want = [f32::NEG_INFINITY, -1.0, -0.0, 0.0, 1.0, f32::INFINITY];
        for (k, w) in ks.iter().zip(want) {
            assert_eq!(*k, f32_key(w));
        }
        assert_eq!(ks[6], f32_key(-f32::NAN));
        // bits round trip
        for f in [1.5f32, -2.25, 0.0, -0.0] {
            let Key::F32(o) = f32_key(f) else { panic!() };
            assert_eq!(f32::from_bits(unorder32(o) as u32).to_bits(), f.to_bits());
        }
    }

    #[test]
    fn both_versions_round_trip_the_dictionary() {
        for version in [VERSION_1, VERSION_2] {
            // a tiny block size: many blocks
            let mut b = BitmapBuilder::new(&t("STRING"), version, 40).unwrap();
            let col = StringArray::from(vec![
                Some("b"),
                None,
                Some("a"),
                Some("b"),
                None,
                Some("c"),
                Some("dd"),
            ]);
            b.update(&col).unwrap();
            let bytes = b.finish().unwrap();
            assert_eq!(bytes[0], version);
            let ix = BitmapIndex::read(&bytes, &t("STRING"), "f")
                .unwrap()
                .unwrap();
            let s = |v: &str| Some(Datum::String(v.into()));
            assert!(ix.may_be_null() && ix.may_be_not_null());
            assert!(ix.may_be_in(&t("STRING"), &[s("a")]));
            assert!(!ix.may_be_in(&t("STRING"), &[s("x"), s("y")]));
            assert!(!ix.may_be_in(&t("STRING"), &[None]));
            // nulls: NOT IN keeps the file
            assert!(ix.may_be_not_in(&t("STRING"), &[s("a"), s("b"), s("c"), s("dd")]));
        }
    }

    #[test]
    fn not_in_skips_a_file_of_only_those_values() {
        let mut b = BitmapBuilder::new(&t("INT"), VERSION_2, DEFAULT_BLOCK_SIZE).unwrap();
        b.update(&Int32Array::from(vec![3, 3, 4])).unwrap();
        let ix = BitmapIndex::read(&b.finish().unwrap(), &t("INT"), "f")
            .unwrap()
            .unwrap();
        let i = |v: i32| Some(Datum::Int(v));
        assert!(!ix.may_be_not_in(&t("INT"), &[i(3), i(4)]));
        assert!(ix.may_be_not_in(&t("INT"), &[i(3)]));
        assert!(!ix.may_be_null());
        assert!(!ix.may_be_in(&t("INT"), &[i(5)]));
        assert!(ix.may_be_in(&t("INT"), &[Some(Datum::BigInt(4))]));
        // out of the column's range: kept (conservative)
        assert!(ix.may_be_in(&t("INT"), &[Some(Datum::BigInt(1 << 40))]));
    }

    #[test]
    fn not_in_tells_zero_signs_and_sub_micros_apart() {
        use arrow_array::{Float64Array, TimestampNanosecondArray};
        let dbl = DataType::new(TypeKind::Double);
        let mut b = BitmapBuilder::new(&dbl, VERSION_2, DEFAULT_BLOCK_SIZE).unwrap();
        b.update(&Float64Array::from(vec![-0.0, -0.0])).unwrap();
        let ix = BitmapIndex::read(&b.finish().unwrap(), &dbl, "f")
            .unwrap()
            .unwrap();
        let d = |v: f64| Some(Datum::Double(v));
        // -0.0 <> 0.0 for the row filter (and Java): the file may hold rows passing
        assert!(ix.may_be_not_in(&dbl, &[d(0.0)]));
        assert!(!ix.may_be_not_in(&dbl, &[d(-0.0)]));
        assert!(ix.may_be_in(&dbl, &[d(0.0)]));
        let ts9 = DataType::new(TypeKind::Timestamp(9));
        let mut b = BitmapBuilder::new(&ts9, VERSION_2, DEFAULT_BLOCK_SIZE).unwrap();
        b.update(&TimestampNanosecondArray::from(vec![1_500i64]))
            .unwrap();
        let ix = BitmapIndex::read(&b.finish().unwrap(), &ts9, "f")
            .unwrap()
            .unwrap();
        let lit = Some(Datum::Timestamp {
            millis: 0,
            nanos: 1_000,
        });
        assert!(ix.may_be_not_in(&ts9, &[lit]));
    }

    #[test]
    fn a_truncated_index_is_an_error_naming_the_file() {
        let mut b = BitmapBuilder::new(&t("INT"), VERSION_2, DEFAULT_BLOCK_SIZE).unwrap();
        b.update(&Int32Array::from(vec![1, 2, 2])).unwrap();
        let bytes = b.finish().unwrap();
        let e = BitmapIndex::read(&bytes[..12], &t("INT"), "data-1.parquet")
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.contains("data-1.parquet") && e.contains("truncated"),
            "{e}"
        );
    }
}
