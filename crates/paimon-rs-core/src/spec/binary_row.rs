//! BinaryRow: Paimon's row serialization, used for partition values, min/max keys, stats and
//! bucket hashing (paimon-format.md §5). Byte-compatible with Java's `BinaryRowWriter`,
//! including its quirk for NULL non-compact DECIMAL/TIMESTAMP cells (§5.3).
//!
//! Two encoders share one writer: [`encode_row`] for [`Datum`] rows (partition values, stats)
//! and [`RowEncoder`] for Arrow columns on the write path (no per-row allocation).

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Date32Type, Decimal128Type, Float32Type, Float64Type, Int16Type, Int32Type, Int64Type,
    Int8Type, Time32MillisecondType, Time32SecondType, Time64MicrosecondType, Time64NanosecondType,
    TimestampMicrosecondType, TimestampMillisecondType, TimestampNanosecondType,
    TimestampSecondType,
};
use arrow_array::{
    Array, ArrayRef, BinaryArray, BinaryViewArray, BooleanArray, Date32Array, Decimal128Array,
    FixedSizeBinaryArray, Float32Array, Float64Array, Int16Array, Int32Array, Int64Array,
    Int8Array, LargeBinaryArray, LargeStringArray, StringArray, StringViewArray,
    Time32MillisecondArray, Time32SecondArray, Time64MicrosecondArray, Time64NanosecondArray,
    TimestampMicrosecondArray, TimestampMillisecondArray, TimestampNanosecondArray,
    TimestampSecondArray,
};
use arrow_buffer::NullBuffer;
use arrow_schema::{DataType as ArrowType, TimeUnit};
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::spec::datum::Datum;
use crate::spec::types::{DataType, TypeKind};

/// DECIMAL precisions up to this are stored "compact" (unscaled value as an 8-byte slot).
pub const MAX_COMPACT_DECIMAL_PRECISION: u32 = 18;
/// TIMESTAMP precisions up to this are stored "compact" (epoch millis as an 8-byte slot).
pub const MAX_COMPACT_TIMESTAMP_PRECISION: u32 = 3;
/// Strings and binaries up to this many bytes are stored inline in their slot.
const MAX_INLINE_LEN: usize = 7;
/// Offsets and sizes in slots are Java ints.
const MAX_ROW_SIZE: usize = i32::MAX as usize;

/// Width in bytes of the header + null bitset of a row with `arity` fields (§5.2).
#[inline]
pub fn null_bits_size_in_bytes(arity: usize) -> usize {
    arity.saturating_add(63 + 8) / 64 * 8
}

/// Byte length of the header + fixed part (slots) of a row with `arity` fields.
#[inline]
pub fn fixed_part_size(arity: usize) -> usize {
    null_bits_size_in_bytes(arity).saturating_add(arity.saturating_mul(8))
}

/// The serialized (manifest) form of a row with no fields: arity 0 + an 8-byte header.
pub fn empty_row() -> Vec<u8> {
    vec![0u8; 12]
}

/// Row bytes **without** the arity prefix, as hashed for bucket assignment (§7).
/// `values[i]` is encoded with `types[i]`; `None` is a null cell.
pub fn encode_row(types: &[DataType], values: &[Option<Datum>]) -> Result<Vec<u8>> {
    let mut out = Vec::with_capacity(fixed_part_size(types.len()));
    encode_row_into(types, values, &mut out)?;
    Ok(out)
}

/// Like [`encode_row`], writing into `out` (cleared first) to reuse its allocation.
pub fn encode_row_into(
    types: &[DataType],
    values: &[Option<Datum>],
    out: &mut Vec<u8>,
) -> Result<()> {
    if types.len() != values.len() {
        return Err(Error::invalid(format!(
            "BinaryRow: {} values for {} field types",
            values.len(),
            types.len()
        )));
    }
    let mut w = Writer::new(out, types.len());
    for (i, (t, v)) in types.iter().zip(values).enumerate() {
        match v {
            None => w.write_null(i, Layout::of(t))?,
            Some(d) => write_datum(&mut w, i, t, d)?,
        }
    }
    Ok(())
}

/// Manifest form of a row: 4-byte big-endian arity followed by the row bytes (§5.1).
pub fn serialize_row(types: &[DataType], values: &[Option<Datum>]) -> Result<Vec<u8>> {
    let row = encode_row(types, values)?;
    let mut out = Vec::with_capacity(4 + row.len());
    out.extend_from_slice(&(types.len() as u32).to_be_bytes());
    out.extend_from_slice(&row);
    Ok(out)
}

/// Decode the manifest form (arity prefix + row bytes) with the given field types.
/// Errors (never panics) on an arity mismatch, truncated bytes or out-of-range offsets.
pub fn deserialize_row(types: &[DataType], bytes: &[u8]) -> Result<Vec<Option<Datum>>> {
    let prefix: [u8; 4] = bytes
        .get(..4)
        .and_then(|b| b.try_into().ok())
        .ok_or_else(|| {
            Error::invalid(format!(
                "BinaryRow too short for its arity prefix: {} bytes",
                bytes.len()
            ))
        })?;
    let arity = i32::from_be_bytes(prefix);
    if arity < 0 || arity as usize != types.len() {
        return Err(Error::invalid(format!(
            "BinaryRow arity {arity} does not match the {} expected fields",
            types.len()
        )));
    }
    decode_row(types, &bytes[4..])
}

/// Decode row bytes **without** the arity prefix (see [`deserialize_row`]).
pub fn decode_row(types: &[DataType], row: &[u8]) -> Result<Vec<Option<Datum>>> {
    let null_bits = null_bits_size_in_bytes(types.len());
    let fixed = fixed_part_size(types.len());
    if row.len() < fixed {
        return Err(Error::invalid(format!(
            "BinaryRow truncated: {} bytes, but {} fields need a fixed part of {fixed} bytes",
            row.len(),
            types.len()
        )));
    }
    types
        .iter()
        .enumerate()
        .map(|(i, t)| decode_field(row, null_bits, i, t))
        .collect()
}

// ------------------------------------------------------------------------------------------
// Writer
// ------------------------------------------------------------------------------------------

/// How a field occupies the row (decides the NULL encoding too).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Layout {
    /// Value in the 8-byte slot (or nested types, which only support NULL here).
    Fixed,
    /// String/binary: inline if short, else out of line.
    Var,
    /// DECIMAL p > 18: 16 bytes reserved in the variable part, even for NULL.
    BigDecimal,
    /// TIMESTAMP p > 3: 8 bytes of millis in the variable part, even for NULL.
    BigTimestamp,
}

impl Layout {
    fn of(t: &DataType) -> Layout {
        use TypeKind as K;
        match &t.kind {
            K::Decimal { precision, .. } if *precision > MAX_COMPACT_DECIMAL_PRECISION => {
                Layout::BigDecimal
            }
            K::Timestamp(p) | K::LocalZonedTimestamp(p) if *p > MAX_COMPACT_TIMESTAMP_PRECISION => {
                Layout::BigTimestamp
            }
            K::Char(_) | K::VarChar(_) | K::Binary(_) | K::VarBinary(_) => Layout::Var,
            _ => Layout::Fixed,
        }
    }
}

/// Appends one row to a buffer the way Java's `BinaryRowWriter` does on a fresh segment.
struct Writer<'a> {
    buf: &'a mut Vec<u8>,
    null_bits: usize,
}

impl<'a> Writer<'a> {
    fn new(buf: &'a mut Vec<u8>, arity: usize) -> Self {
        let null_bits = null_bits_size_in_bytes(arity);
        buf.clear();
        buf.resize(null_bits + 8 * arity, 0);
        Writer { buf, null_bits }
    }

    #[inline]
    fn set_slot(&mut self, i: usize, v: u64) {
        let p = self.null_bits + 8 * i;
        self.buf[p..p + 8].copy_from_slice(&v.to_le_bytes());
    }

    #[inline]
    fn set_null_bit(&mut self, i: usize) {
        let b = i + 8;
        self.buf[b >> 3] |= 1 << (b & 7);
    }

    /// Start of a new variable-part chunk of `size` bytes (already a multiple of 8).
    #[inline]
    fn reserve_chunk(&mut self, size: usize) -> Result<usize> {
        let off = self.buf.len();
        if off + size > MAX_ROW_SIZE {
            return Err(Error::invalid("BinaryRow larger than 2 GiB"));
        }
        self.buf.resize(off + size, 0);
        Ok(off)
    }

    #[inline]
    fn write_var(&mut self, i: usize, bytes: &[u8]) -> Result<()> {
        let len = bytes.len();
        if len <= MAX_INLINE_LEN {
            let mut s = [0u8; 8];
            s[..len].copy_from_slice(bytes);
            s[7] = 0x80 | len as u8;
            let p = self.null_bits + 8 * i;
            self.buf[p..p + 8].copy_from_slice(&s);
        } else {
            if len > MAX_ROW_SIZE {
                return Err(Error::invalid("BinaryRow field larger than 2 GiB"));
            }
            let off = self.reserve_chunk((len + 7) & !7)?;
            self.buf[off..off + len].copy_from_slice(bytes);
            self.set_slot(i, ((off as u64) << 32) | len as u64);
        }
        Ok(())
    }

    /// Non-compact DECIMAL; `None` is Java's NULL quirk (zero chunk, slot `offset << 32`).
    fn write_big_decimal(&mut self, i: usize, v: Option<i128>) -> Result<()> {
        let off = self.reserve_chunk(16)?;
        match v {
            None => {
                self.set_null_bit(i);
                self.set_slot(i, (off as u64) << 32);
            }
            Some(v) => {
                let be = v.to_be_bytes();
                let bytes = &be[minimal_twos_complement_start(&be)..];
                self.buf[off..off + bytes.len()].copy_from_slice(bytes);
                self.set_slot(i, ((off as u64) << 32) | bytes.len() as u64);
            }
        }
        Ok(())
    }

    /// Non-compact TIMESTAMP; `None` is Java's NULL quirk (zero chunk, slot `offset << 32`).
    fn write_big_timestamp(&mut self, i: usize, v: Option<(i64, i32)>) -> Result<()> {
        let off = self.reserve_chunk(8)?;
        match v {
            None => {
                self.set_null_bit(i);
                self.set_slot(i, (off as u64) << 32);
            }
            Some((millis, nanos)) => {
                check_nanos(nanos)?;
                self.buf[off..off + 8].copy_from_slice(&millis.to_le_bytes());
                self.set_slot(i, ((off as u64) << 32) | nanos as u32 as u64);
            }
        }
        Ok(())
    }

    #[inline]
    fn write_null(&mut self, i: usize, layout: Layout) -> Result<()> {
        match layout {
            // The slot is already zero.
            Layout::Fixed | Layout::Var => {
                self.set_null_bit(i);
                Ok(())
            }
            Layout::BigDecimal => self.write_big_decimal(i, None),
            Layout::BigTimestamp => self.write_big_timestamp(i, None),
        }
    }

    #[inline]
    fn write_decimal(&mut self, i: usize, v: i128, precision: u32) -> Result<()> {
        check_decimal(v, precision)?;
        if precision <= MAX_COMPACT_DECIMAL_PRECISION {
            self.set_slot(i, v as i64 as u64);
            Ok(())
        } else {
            self.write_big_decimal(i, Some(v))
        }
    }

    #[inline]
    fn write_timestamp(&mut self, i: usize, millis: i64, nanos: i32, precision: u32) -> Result<()> {
        if precision <= MAX_COMPACT_TIMESTAMP_PRECISION {
            self.set_slot(i, millis as u64);
            Ok(())
        } else {
            self.write_big_timestamp(i, Some((millis, nanos)))
        }
    }
}

/// Index of the first byte of the minimal big-endian two's-complement form (Java's
/// `BigInteger.toByteArray()`: at least one byte, 0 => `[0x00]`).
fn minimal_twos_complement_start(be: &[u8; 16]) -> usize {
    let mut s = 0;
    while s < 15
        && ((be[s] == 0 && be[s + 1] & 0x80 == 0) || (be[s] == 0xff && be[s + 1] & 0x80 != 0))
    {
        s += 1;
    }
    s
}

const POW10: [u128; 39] = {
    let mut t = [1u128; 39];
    let mut i = 1;
    while i < 39 {
        t[i] = t[i - 1] * 10;
        i += 1;
    }
    t
};

#[inline]
fn check_decimal(v: i128, precision: u32) -> Result<()> {
    if v.unsigned_abs() >= POW10[precision.min(38) as usize] {
        return Err(Error::invalid(format!(
            "decimal unscaled value {v} does not fit DECIMAL precision {precision}"
        )));
    }
    Ok(())
}

#[inline]
fn check_nanos(nanos: i32) -> Result<()> {
    if !(0..=999_999).contains(&nanos) {
        return Err(Error::invalid(format!(
            "timestamp nano-of-millisecond {nanos} out of range 0..=999999"
        )));
    }
    Ok(())
}

fn write_datum(w: &mut Writer, i: usize, t: &DataType, d: &Datum) -> Result<()> {
    use TypeKind as K;
    match (&t.kind, d) {
        (K::Boolean, Datum::Bool(b)) => w.set_slot(i, *b as u64),
        (K::TinyInt, Datum::TinyInt(v)) => w.set_slot(i, *v as u8 as u64),
        (K::SmallInt, Datum::SmallInt(v)) => w.set_slot(i, *v as u16 as u64),
        (K::Int, Datum::Int(v)) | (K::Date, Datum::Date(v)) | (K::Time(_), Datum::Time(v)) => {
            w.set_slot(i, *v as u32 as u64)
        }
        (K::BigInt, Datum::BigInt(v)) => w.set_slot(i, *v as u64),
        (K::Float, Datum::Float(v)) => w.set_slot(i, v.to_bits() as u64),
        (K::Double, Datum::Double(v)) => w.set_slot(i, v.to_bits()),
        (K::Decimal { precision, .. }, Datum::Decimal(v)) => w.write_decimal(i, *v, *precision)?,
        (K::Char(_) | K::VarChar(_), Datum::String(s)) => w.write_var(i, s.as_bytes())?,
        (K::Binary(_) | K::VarBinary(_), Datum::Bytes(b)) => w.write_var(i, b)?,
        (K::Timestamp(p) | K::LocalZonedTimestamp(p), Datum::Timestamp { millis, nanos }) => {
            w.write_timestamp(i, *millis, *nanos, *p)?
        }
        _ if t.is_nested() => {
            return Err(Error::unsupported(format!(
                "BinaryRow encoding of a {t} value"
            )))
        }
        _ => return Err(mismatch(d, t)),
    }
    Ok(())
}

fn mismatch(d: &Datum, t: &DataType) -> Error {
    Error::invalid(format!("value {d:?} does not match column type {t}"))
}

// ------------------------------------------------------------------------------------------
// Decoding
// ------------------------------------------------------------------------------------------

fn decode_field(row: &[u8], null_bits: usize, i: usize, t: &DataType) -> Result<Option<Datum>> {
    use TypeKind as K;
    let b = i + 8;
    if row[b >> 3] & (1 << (b & 7)) != 0 {
        return Ok(None);
    }
    let p = null_bits + 8 * i;
    let mut s = [0u8; 8];
    s.copy_from_slice(&row[p..p + 8]);
    let slot = u64::from_le_bytes(s);
    let d = match &t.kind {
        K::Boolean => Datum::Bool(s[0] != 0),
        K::TinyInt => Datum::TinyInt(s[0] as i8),
        K::SmallInt => Datum::SmallInt(slot as u16 as i16),
        K::Int => Datum::Int(slot as u32 as i32),
        K::Date => Datum::Date(slot as u32 as i32),
        K::Time(_) => Datum::Time(slot as u32 as i32),
        K::BigInt => Datum::BigInt(slot as i64),
        K::Float => Datum::Float(f32::from_bits(slot as u32)),
        K::Double => Datum::Double(f64::from_bits(slot)),
        K::Decimal { precision, .. } if *precision <= MAX_COMPACT_DECIMAL_PRECISION => {
            Datum::Decimal(slot as i64 as i128)
        }
        K::Decimal { .. } => {
            let n = (slot & 0xffff_ffff) as usize;
            if n == 0 || n > 16 {
                return Err(Error::invalid(format!(
                    "BinaryRow field {i}: non-compact decimal of {n} bytes (expected 1..=16)"
                )));
            }
            let bytes = chunk(row, i, slot >> 32, n)?;
            let mut be = if bytes[0] & 0x80 != 0 {
                [0xffu8; 16]
            } else {
                [0u8; 16]
            };
            be[16 - n..].copy_from_slice(bytes);
            Datum::Decimal(i128::from_be_bytes(be))
        }
        K::Char(_) | K::VarChar(_) => {
            let bytes = var_bytes(row, i, &s, slot)?;
            let s = std::str::from_utf8(bytes).map_err(|e| {
                Error::invalid(format!("BinaryRow field {i}: string is not UTF-8: {e}"))
            })?;
            Datum::String(s.to_string())
        }
        K::Binary(_) | K::VarBinary(_) => Datum::Bytes(var_bytes(row, i, &s, slot)?.to_vec()),
        K::Timestamp(p) | K::LocalZonedTimestamp(p) if *p <= MAX_COMPACT_TIMESTAMP_PRECISION => {
            Datum::Timestamp {
                millis: slot as i64,
                nanos: 0,
            }
        }
        K::Timestamp(_) | K::LocalZonedTimestamp(_) => {
            let nanos = slot as u32 as i32;
            check_nanos(nanos).map_err(|e| Error::invalid(format!("BinaryRow field {i}: {e}")))?;
            let mut m = [0u8; 8];
            m.copy_from_slice(chunk(row, i, slot >> 32, 8)?);
            Datum::Timestamp {
                millis: i64::from_le_bytes(m),
                nanos,
            }
        }
        _ => {
            return Err(Error::unsupported(format!(
                "BinaryRow decoding of a non-null {t} field ({i})"
            )))
        }
    };
    Ok(Some(d))
}

/// Bytes of a string/binary cell: inline in the slot or out of line.
fn var_bytes<'r>(row: &'r [u8], i: usize, slot_bytes: &'r [u8; 8], slot: u64) -> Result<&'r [u8]> {
    if slot & (1 << 63) != 0 {
        let len = (slot_bytes[7] & 0x7f) as usize;
        if len > MAX_INLINE_LEN {
            return Err(Error::invalid(format!(
                "BinaryRow field {i}: inline length {len} exceeds {MAX_INLINE_LEN}"
            )));
        }
        Ok(&slot_bytes[..len])
    } else {
        chunk(row, i, slot >> 32, (slot & 0xffff_ffff) as usize)
    }
}

fn chunk(row: &[u8], i: usize, offset: u64, len: usize) -> Result<&[u8]> {
    let off = offset as usize;
    off.checked_add(len)
        .filter(|end| *end <= row.len())
        .map(|end| &row[off..end])
        .ok_or_else(|| {
            Error::invalid(format!(
                "BinaryRow field {i}: variable part [{off}, +{len}) outside the {}-byte row",
                row.len()
            ))
        })
}

// ------------------------------------------------------------------------------------------
// Arrow columns
// ------------------------------------------------------------------------------------------

/// One Arrow column viewed as a Paimon column (typed array cloned once: buffers are shared).
enum ColData {
    AllNull,
    Bool(BooleanArray),
    I8(Int8Array),
    I16(Int16Array),
    I32(Int32Array),
    I64(Int64Array),
    F32(Float32Array),
    F64(Float64Array),
    Date(Date32Array),
    TimeS(Time32SecondArray),
    TimeMs(Time32MillisecondArray),
    TimeUs(Time64MicrosecondArray),
    TimeNs(Time64NanosecondArray),
    Dec(Decimal128Array),
    Utf8(StringArray),
    LargeUtf8(LargeStringArray),
    Utf8View(StringViewArray),
    Bin(BinaryArray),
    LargeBin(LargeBinaryArray),
    BinView(BinaryViewArray),
    FixedBin(FixedSizeBinaryArray),
    TsS(TimestampSecondArray),
    TsMs(TimestampMillisecondArray),
    TsUs(TimestampMicrosecondArray),
    TsNs(TimestampNanosecondArray),
}

struct Col {
    data: ColData,
    nulls: Option<NullBuffer>,
    layout: Layout,
    /// DECIMAL or TIMESTAMP precision (0 otherwise).
    precision: u32,
    len: usize,
}

impl Col {
    fn new(array: &dyn Array, t: &DataType) -> Result<Col> {
        use ArrowType as A;
        use TypeKind as K;
        let at = array.data_type();
        let bad = || {
            Error::schema(format!(
                "cannot encode Arrow type {at} as Paimon {t} (expected {})",
                t.to_arrow()
            ))
        };
        if t.is_nested() {
            return Err(Error::unsupported(format!(
                "BinaryRow encoding of {t} columns"
            )));
        }
        macro_rules! prim {
            ($ty:ty, $variant:ident) => {
                array
                    .as_primitive_opt::<$ty>()
                    .cloned()
                    .map(ColData::$variant)
                    .ok_or_else(bad)?
            };
        }
        let data = match (&t.kind, at) {
            (_, A::Null) => ColData::AllNull,
            (K::Boolean, A::Boolean) => array
                .as_boolean_opt()
                .cloned()
                .map(ColData::Bool)
                .ok_or_else(bad)?,
            (K::TinyInt, A::Int8) => prim!(Int8Type, I8),
            (K::SmallInt, A::Int16) => prim!(Int16Type, I16),
            (K::Int, A::Int32) => prim!(Int32Type, I32),
            (K::BigInt, A::Int64) => prim!(Int64Type, I64),
            (K::Float, A::Float32) => prim!(Float32Type, F32),
            (K::Double, A::Float64) => prim!(Float64Type, F64),
            (K::Date, A::Date32) => prim!(Date32Type, Date),
            (K::Time(_), A::Time32(TimeUnit::Second)) => prim!(Time32SecondType, TimeS),
            (K::Time(_), A::Time32(TimeUnit::Millisecond)) => prim!(Time32MillisecondType, TimeMs),
            (K::Time(_), A::Time64(TimeUnit::Microsecond)) => prim!(Time64MicrosecondType, TimeUs),
            (K::Time(_), A::Time64(TimeUnit::Nanosecond)) => prim!(Time64NanosecondType, TimeNs),
            (K::Decimal { scale, .. }, A::Decimal128(_, s)) if *s as i64 == *scale as i64 => {
                prim!(Decimal128Type, Dec)
            }
            (K::Char(_) | K::VarChar(_), A::Utf8) => array
                .as_string_opt::<i32>()
                .cloned()
                .map(ColData::Utf8)
                .ok_or_else(bad)?,
            (K::Char(_) | K::VarChar(_), A::LargeUtf8) => array
                .as_string_opt::<i64>()
                .cloned()
                .map(ColData::LargeUtf8)
                .ok_or_else(bad)?,
            (K::Char(_) | K::VarChar(_), A::Utf8View) => array
                .as_string_view_opt()
                .cloned()
                .map(ColData::Utf8View)
                .ok_or_else(bad)?,
            (K::Binary(_) | K::VarBinary(_), A::Binary) => array
                .as_binary_opt::<i32>()
                .cloned()
                .map(ColData::Bin)
                .ok_or_else(bad)?,
            (K::Binary(_) | K::VarBinary(_), A::LargeBinary) => array
                .as_binary_opt::<i64>()
                .cloned()
                .map(ColData::LargeBin)
                .ok_or_else(bad)?,
            (K::Binary(_) | K::VarBinary(_), A::BinaryView) => array
                .as_binary_view_opt()
                .cloned()
                .map(ColData::BinView)
                .ok_or_else(bad)?,
            (K::Binary(_) | K::VarBinary(_), A::FixedSizeBinary(_)) => array
                .as_fixed_size_binary_opt()
                .cloned()
                .map(ColData::FixedBin)
                .ok_or_else(bad)?,
            (K::Timestamp(_) | K::LocalZonedTimestamp(_), A::Timestamp(u, _)) => match u {
                TimeUnit::Second => prim!(TimestampSecondType, TsS),
                TimeUnit::Millisecond => prim!(TimestampMillisecondType, TsMs),
                TimeUnit::Microsecond => prim!(TimestampMicrosecondType, TsUs),
                TimeUnit::Nanosecond => prim!(TimestampNanosecondType, TsNs),
            },
            _ => return Err(bad()),
        };
        let precision = match &t.kind {
            K::Decimal { precision, .. } => *precision,
            K::Timestamp(p) | K::LocalZonedTimestamp(p) => *p,
            _ => 0,
        };
        Ok(Col {
            data,
            nulls: array.logical_nulls(),
            layout: Layout::of(t),
            precision,
            len: array.len(),
        })
    }

    #[inline]
    fn is_null(&self, row: usize) -> bool {
        self.nulls.as_ref().is_some_and(|n| n.is_null(row))
    }

    /// Write cell `row` as field `i`. `row < self.len` is checked by the caller.
    #[inline]
    fn write(&self, w: &mut Writer, i: usize, row: usize) -> Result<()> {
        use ColData as C;
        if self.is_null(row) {
            return w.write_null(i, self.layout);
        }
        match &self.data {
            C::AllNull => w.write_null(i, self.layout)?,
            C::Bool(a) => w.set_slot(i, a.value(row) as u64),
            C::I8(a) => w.set_slot(i, a.value(row) as u8 as u64),
            C::I16(a) => w.set_slot(i, a.value(row) as u16 as u64),
            C::I32(a) => w.set_slot(i, a.value(row) as u32 as u64),
            C::I64(a) => w.set_slot(i, a.value(row) as u64),
            C::F32(a) => w.set_slot(i, a.value(row).to_bits() as u64),
            C::F64(a) => w.set_slot(i, a.value(row).to_bits()),
            C::Date(a) => w.set_slot(i, a.value(row) as u32 as u64),
            C::TimeS(_) | C::TimeMs(_) | C::TimeUs(_) | C::TimeNs(_) => {
                w.set_slot(i, self.time_millis(row)? as u32 as u64)
            }
            C::Dec(a) => w.write_decimal(i, a.value(row), self.precision)?,
            C::Utf8(a) => w.write_var(i, a.value(row).as_bytes())?,
            C::LargeUtf8(a) => w.write_var(i, a.value(row).as_bytes())?,
            C::Utf8View(a) => w.write_var(i, a.value(row).as_bytes())?,
            C::Bin(a) => w.write_var(i, a.value(row))?,
            C::LargeBin(a) => w.write_var(i, a.value(row))?,
            C::BinView(a) => w.write_var(i, a.value(row))?,
            C::FixedBin(a) => w.write_var(i, a.value(row))?,
            C::TsS(_) | C::TsMs(_) | C::TsUs(_) | C::TsNs(_) => {
                let (millis, nanos) = self.timestamp(row)?;
                w.write_timestamp(i, millis, nanos, self.precision)?
            }
        }
        Ok(())
    }

    fn time_millis(&self, row: usize) -> Result<i32> {
        let v: i64 = match &self.data {
            ColData::TimeS(a) => a.value(row) as i64 * 1000,
            ColData::TimeMs(a) => return Ok(a.value(row)),
            ColData::TimeUs(a) => a.value(row).div_euclid(1000),
            ColData::TimeNs(a) => a.value(row).div_euclid(1_000_000),
            _ => return Err(Error::Internal("time_millis on a non-time column".into())),
        };
        i32::try_from(v).map_err(|_| Error::invalid(format!("TIME value out of range: {v} ms")))
    }

    /// (epoch millis, nano-of-millisecond) of a timestamp cell.
    #[inline]
    fn timestamp(&self, row: usize) -> Result<(i64, i32)> {
        Ok(match &self.data {
            ColData::TsS(a) => {
                let v = a.value(row);
                let m = v.checked_mul(1000).ok_or_else(|| {
                    Error::invalid(format!("timestamp {v} s out of range for milliseconds"))
                })?;
                (m, 0)
            }
            ColData::TsMs(a) => (a.value(row), 0),
            ColData::TsUs(a) => {
                let v = a.value(row);
                (v.div_euclid(1000), (v.rem_euclid(1000) * 1000) as i32)
            }
            ColData::TsNs(a) => {
                let v = a.value(row);
                (v.div_euclid(1_000_000), v.rem_euclid(1_000_000) as i32)
            }
            _ => {
                return Err(Error::Internal(
                    "timestamp on a non-timestamp column".into(),
                ))
            }
        })
    }

    fn datum(&self, row: usize) -> Result<Option<Datum>> {
        use ColData as C;
        if row >= self.len {
            return Err(Error::invalid(format!(
                "row {row} out of range ({} rows)",
                self.len
            )));
        }
        if self.is_null(row) {
            return Ok(None);
        }
        Ok(Some(match &self.data {
            C::AllNull => return Ok(None),
            C::Bool(a) => Datum::Bool(a.value(row)),
            C::I8(a) => Datum::TinyInt(a.value(row)),
            C::I16(a) => Datum::SmallInt(a.value(row)),
            C::I32(a) => Datum::Int(a.value(row)),
            C::I64(a) => Datum::BigInt(a.value(row)),
            C::F32(a) => Datum::Float(a.value(row)),
            C::F64(a) => Datum::Double(a.value(row)),
            C::Date(a) => Datum::Date(a.value(row)),
            C::TimeS(_) | C::TimeMs(_) | C::TimeUs(_) | C::TimeNs(_) => {
                Datum::Time(self.time_millis(row)?)
            }
            C::Dec(a) => Datum::Decimal(a.value(row)),
            C::Utf8(a) => Datum::String(a.value(row).to_string()),
            C::LargeUtf8(a) => Datum::String(a.value(row).to_string()),
            C::Utf8View(a) => Datum::String(a.value(row).to_string()),
            C::Bin(a) => Datum::Bytes(a.value(row).to_vec()),
            C::LargeBin(a) => Datum::Bytes(a.value(row).to_vec()),
            C::BinView(a) => Datum::Bytes(a.value(row).to_vec()),
            C::FixedBin(a) => Datum::Bytes(a.value(row).to_vec()),
            C::TsS(_) | C::TsMs(_) | C::TsUs(_) | C::TsNs(_) => {
                let (millis, nanos) = self.timestamp(row)?;
                // Compact timestamps keep millisecond precision only (as Java stores them).
                let nanos = if self.precision <= MAX_COMPACT_TIMESTAMP_PRECISION {
                    0
                } else {
                    nanos
                };
                Datum::Timestamp { millis, nanos }
            }
        }))
    }
}

/// Columnar BinaryRow encoder: encodes row `r` of a set of Arrow columns without building
/// [`Datum`]s. Accepted Arrow input per Paimon type: the type of [`DataType::to_arrow`], plus
/// Large/View string and binary variants, FixedSizeBinary, any TIME/TIMESTAMP unit, a
/// Decimal128 of the same scale (any precision; values are checked against the Paimon
/// precision) and `Null` arrays. Nested types are unsupported.
pub struct RowEncoder {
    cols: Vec<Col>,
    num_rows: usize,
}

impl RowEncoder {
    /// Build an encoder over `arrays` (same length each), encoded with `types`.
    pub fn new(types: &[DataType], arrays: &[ArrayRef]) -> Result<Self> {
        if types.len() != arrays.len() {
            return Err(Error::invalid(format!(
                "RowEncoder: {} arrays for {} field types",
                arrays.len(),
                types.len()
            )));
        }
        let cols = types
            .iter()
            .zip(arrays)
            .enumerate()
            .map(|(i, (t, a))| {
                Col::new(a.as_ref(), t).map_err(|e| match e {
                    Error::SchemaMismatch { message, .. } => {
                        Error::schema(format!("key column {i}: {message}"))
                    }
                    other => other,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let num_rows = match cols.first() {
            Some(c) => c.len,
            None => usize::MAX,
        };
        if let Some(c) = cols.iter().find(|c| c.len != num_rows) {
            return Err(Error::invalid(format!(
                "RowEncoder: arrays of different lengths ({} and {num_rows})",
                c.len
            )));
        }
        Ok(RowEncoder { cols, num_rows })
    }

    /// Number of rows of the input arrays (`usize::MAX` with no columns: every row is then the
    /// empty row).
    pub fn num_rows(&self) -> usize {
        self.num_rows
    }

    /// Write the row bytes (no arity prefix) of row `row` into `out` (cleared first).
    #[inline]
    pub fn encode(&self, row: usize, out: &mut Vec<u8>) -> Result<()> {
        if row >= self.num_rows {
            return Err(Error::invalid(format!(
                "RowEncoder: row {row} out of range ({} rows)",
                self.num_rows
            )));
        }
        let mut w = Writer::new(out, self.cols.len());
        for (i, c) in self.cols.iter().enumerate() {
            c.write(&mut w, i, row)?;
        }
        Ok(())
    }

    /// The value of column `col` at row `row` as a [`Datum`] (see [`datum_from_arrow`]).
    #[cfg(test)]
    pub fn datum(&self, col: usize, row: usize) -> Result<Option<Datum>> {
        self.cols
            .get(col)
            .ok_or_else(|| Error::invalid(format!("RowEncoder: no column {col}")))?
            .datum(row)
    }
}

/// One Arrow cell as a [`Datum`] of Paimon type `t` (`None` for null). Accepts the same Arrow
/// types as [`RowEncoder`]. Timestamps: `us`/`ns` values are split into epoch millis
/// (floor) and nano-of-millisecond; for TIMESTAMP(p <= 3) the sub-millisecond part is dropped.
pub fn datum_from_arrow(array: &dyn Array, row: usize, t: &DataType) -> Result<Option<Datum>> {
    Col::new(array, t)?.datum(row)
}

fn collect<'v, T>(
    t: &DataType,
    values: &'v [Option<Datum>],
    f: impl Fn(&'v Datum) -> Option<T>,
) -> Result<Vec<Option<T>>> {
    values
        .iter()
        .map(|v| match v {
            None => Ok(None),
            Some(d) => f(d).map(Some).ok_or_else(|| mismatch(d, t)),
        })
        .collect()
}

/// Build an Arrow array of type `t.to_arrow()` from [`Datum`]s (partition columns, stats).
pub fn datums_to_arrow(t: &DataType, values: &[Option<Datum>]) -> Result<ArrayRef> {
    use TypeKind as K;
    let arr: ArrayRef = match &t.kind {
        K::Boolean => Arc::new(BooleanArray::from(collect(t, values, |d| match d {
            Datum::Bool(v) => Some(*v),
            _ => None,
        })?)),
        K::TinyInt => Arc::new(Int8Array::from(collect(t, values, |d| match d {
            Datum::TinyInt(v) => Some(*v),
            _ => None,
        })?)),
        K::SmallInt => Arc::new(Int16Array::from(collect(t, values, |d| match d {
            Datum::SmallInt(v) => Some(*v),
            _ => None,
        })?)),
        K::Int => Arc::new(Int32Array::from(collect(t, values, |d| match d {
            Datum::Int(v) => Some(*v),
            _ => None,
        })?)),
        K::BigInt => Arc::new(Int64Array::from(collect(t, values, |d| match d {
            Datum::BigInt(v) => Some(*v),
            _ => None,
        })?)),
        K::Float => Arc::new(Float32Array::from(collect(t, values, |d| match d {
            Datum::Float(v) => Some(*v),
            _ => None,
        })?)),
        K::Double => Arc::new(Float64Array::from(collect(t, values, |d| match d {
            Datum::Double(v) => Some(*v),
            _ => None,
        })?)),
        K::Decimal { precision, scale } => {
            let v = collect(t, values, |d| match d {
                Datum::Decimal(v) => Some(*v),
                _ => None,
            })?;
            for x in v.iter().flatten() {
                check_decimal(*x, *precision)?;
            }
            Arc::new(
                Decimal128Array::from(v)
                    .with_precision_and_scale(*precision as u8, *scale as i8)?,
            )
        }
        K::Char(_) | K::VarChar(_) => {
            Arc::new(StringArray::from(collect(t, values, |d| match d {
                Datum::String(v) => Some(v.as_str()),
                _ => None,
            })?))
        }
        K::Binary(_) | K::VarBinary(_) => {
            Arc::new(BinaryArray::from(collect(t, values, |d| match d {
                Datum::Bytes(v) => Some(v.as_slice()),
                _ => None,
            })?))
        }
        K::Date => Arc::new(Date32Array::from(collect(t, values, |d| match d {
            Datum::Date(v) => Some(*v),
            _ => None,
        })?)),
        K::Time(_) => Arc::new(Time32MillisecondArray::from(collect(
            t,
            values,
            |d| match d {
                Datum::Time(v) => Some(*v),
                _ => None,
            },
        )?)),
        K::Timestamp(_) | K::LocalZonedTimestamp(_) => {
            let (unit, tz) = match t.to_arrow() {
                ArrowType::Timestamp(u, tz) => (u, tz),
                other => return Err(Error::Internal(format!("timestamp maps to {other}"))),
            };
            let parts = collect(t, values, |d| match d {
                Datum::Timestamp { millis, nanos } => Some((*millis, *nanos)),
                _ => None,
            })?;
            let overflow = |m: i64| Error::invalid(format!("timestamp {m} ms overflows {unit:?}"));
            let v = parts
                .into_iter()
                .map(|p| {
                    p.map(|(m, n)| {
                        check_nanos(n)?;
                        match unit {
                            TimeUnit::Second => Ok(m.div_euclid(1000)),
                            TimeUnit::Millisecond => Ok(m),
                            TimeUnit::Microsecond => m
                                .checked_mul(1000)
                                .and_then(|x| x.checked_add(n as i64 / 1000))
                                .ok_or_else(|| overflow(m)),
                            TimeUnit::Nanosecond => m
                                .checked_mul(1_000_000)
                                .and_then(|x| x.checked_add(n as i64))
                                .ok_or_else(|| overflow(m)),
                        }
                    })
                    .transpose()
                })
                .collect::<Result<Vec<Option<i64>>>>()?;
            match unit {
                TimeUnit::Second => {
                    Arc::new(TimestampSecondArray::from(v).with_timezone_opt(tz)) as ArrayRef
                }
                TimeUnit::Millisecond => {
                    Arc::new(TimestampMillisecondArray::from(v).with_timezone_opt(tz))
                }
                TimeUnit::Microsecond => {
                    Arc::new(TimestampMicrosecondArray::from(v).with_timezone_opt(tz))
                }
                TimeUnit::Nanosecond => {
                    Arc::new(TimestampNanosecondArray::from(v).with_timezone_opt(tz))
                }
            }
        }
        _ => {
            return Err(Error::unsupported(format!(
                "Arrow conversion of {t} values"
            )))
        }
    };
    Ok(arr)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::types::MAX_LEN;
    use proptest::prelude::*;

    fn ty(k: TypeKind) -> DataType {
        DataType::new(k)
    }
    fn int() -> DataType {
        ty(TypeKind::Int)
    }
    fn string() -> DataType {
        ty(TypeKind::VarChar(MAX_LEN))
    }
    fn hex(s: &str) -> Vec<u8> {
        let s: String = s.chars().filter(|c| !c.is_whitespace()).collect();
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }
    fn s(v: &str) -> Option<Datum> {
        Some(Datum::String(v.into()))
    }

    #[test]
    fn null_bits_width() {
        // 8 header bits + 1 bit per field, rounded up to 64-bit words.
        assert_eq!(null_bits_size_in_bytes(0), 8);
        assert_eq!(null_bits_size_in_bytes(56), 8);
        assert_eq!(null_bits_size_in_bytes(57), 16);
        assert_eq!(null_bits_size_in_bytes(120), 16);
        assert_eq!(null_bits_size_in_bytes(121), 24);
        // Null bit of field 60 lives in the second header word.
        let types: Vec<DataType> = (0..61).map(|_| int()).collect();
        let mut vals: Vec<Option<Datum>> = (0..61).map(|i| Some(Datum::Int(i))).collect();
        vals[60] = None;
        let r = encode_row(&types, &vals).unwrap();
        assert_eq!(r.len(), 16 + 61 * 8);
        assert_eq!(r[(60 + 8) / 8], 1 << ((60 + 8) % 8));
        assert_eq!(decode_row(&types, &r).unwrap(), vals);
    }

    #[test]
    fn worked_example_int_and_short_string() {
        let types = [int(), string()];
        let vals = [Some(Datum::Int(5)), s("abc")];
        let b = serialize_row(&types, &vals).unwrap();
        assert_eq!(
            b,
            hex("00000002 0000000000000000 0500000000000000 6162630000000083")
        );
        assert_eq!(deserialize_row(&types, &b).unwrap(), vals);
    }

    #[test]
    fn worked_example_long_string() {
        let types = [int(), string()];
        let vals = [Some(Datum::Int(5)), s("a-very-long-name")];
        let b = serialize_row(&types, &vals).unwrap();
        assert_eq!(
            b,
            hex("00000002 0000000000000000 0500000000000000 1000000018000000
                 612d766572792d6c6f6e672d6e616d65")
        );
        assert_eq!(deserialize_row(&types, &b).unwrap(), vals);
    }

    #[test]
    fn worked_example_hello_world() {
        let r = encode_row(&[string()], &[s("hello world!")]).unwrap();
        assert_eq!(
            r,
            hex("0000000000000000 0c00000010000000 68656c6c6f20776f726c642100000000")
        );
        assert_eq!(r.len(), 32);
    }

    #[test]
    fn worked_example_partition_and_null_int() {
        let b = serialize_row(&[string()], &[s("2024-01-01")]).unwrap();
        assert_eq!(
            b,
            hex("00000001 0000000000000000 0a00000010000000 323032342d30312d3031000000000000")
        );
        assert_eq!(b.len(), 36);
        let n = serialize_row(&[int()], &[None]).unwrap();
        assert_eq!(n, hex("00000001 0001000000000000 0000000000000000"));
        assert_eq!(deserialize_row(&[int()], &n).unwrap(), vec![None]);
    }

    #[test]
    fn worked_example_timestamp6_decimal_date() {
        // 8 fields; a 16-byte string at 0x48 puts the timestamp chunk at 0x58.
        let mut types = vec![string(), ty(TypeKind::Timestamp(6))];
        types.extend((0..6).map(|_| int()));
        let mut vals = vec![
            s("a-very-long-name"),
            Some(Datum::Timestamp {
                millis: 1714979289123,
                nanos: 456000,
            }),
        ];
        vals.extend((0..6).map(|_| None));
        let r = encode_row(&types, &vals).unwrap();
        assert_eq!(&r[8 + 8..8 + 16], &hex("40f5060058000000")[..]);
        assert_eq!(&r[0x58..0x60], &hex("2338bb4c8f010000")[..]);
        assert_eq!(r.len(), 0x60);
        assert_eq!(decode_row(&types, &r).unwrap(), vals);

        let dec = ty(TypeKind::Decimal {
            precision: 10,
            scale: 2,
        });
        let r = encode_row(&[dec], &[Some(Datum::Decimal(1234))]).unwrap();
        assert_eq!(&r[8..], &hex("d204000000000000")[..]);
        let r = encode_row(&[ty(TypeKind::Date)], &[Some(Datum::Date(19723))]).unwrap();
        assert_eq!(&r[8..], &hex("0b4d000000000000")[..]);
    }

    #[test]
    fn fixed_width_slots() {
        let types = [
            ty(TypeKind::Boolean),
            ty(TypeKind::TinyInt),
            ty(TypeKind::SmallInt),
            ty(TypeKind::BigInt),
            ty(TypeKind::Float),
            ty(TypeKind::Double),
            ty(TypeKind::Time(0)),
            ty(TypeKind::Timestamp(3)),
        ];
        let vals = [
            Some(Datum::Bool(true)),
            Some(Datum::TinyInt(-1)),
            Some(Datum::SmallInt(-2)),
            Some(Datum::BigInt(-3)),
            Some(Datum::Float(1.5)),
            Some(Datum::Double(1.5)),
            Some(Datum::Time(3_600_000)),
            Some(Datum::Timestamp {
                millis: -1,
                nanos: 0,
            }),
        ];
        let r = encode_row(&types, &vals).unwrap();
        assert_eq!(
            r,
            hex(
                "0000000000000000 0100000000000000 ff00000000000000 feff000000000000
                 fdffffffffffffff 0000c03f00000000 000000000000f83f 80ee360000000000
                 ffffffffffffffff"
            )
        );
        assert_eq!(decode_row(&types, &r).unwrap(), vals);
    }

    #[test]
    fn non_compact_decimal_and_java_null_quirk() {
        let dec = ty(TypeKind::Decimal {
            precision: 20,
            scale: 2,
        });
        let r = encode_row(std::slice::from_ref(&dec), &[Some(Datum::Decimal(1234))]).unwrap();
        // slot (16 << 32) | 2; chunk = 04 d2 + 14 zero bytes
        assert_eq!(
            r,
            hex("0000000000000000 0200000010000000 04d2000000000000 0000000000000000")
        );
        let r = encode_row(std::slice::from_ref(&dec), &[Some(Datum::Decimal(-1))]).unwrap();
        assert_eq!(&r[8..24], &hex("0100000010000000 ff00000000000000")[..]);
        let r = encode_row(std::slice::from_ref(&dec), &[Some(Datum::Decimal(0))]).unwrap();
        assert_eq!(&r[8..16], &hex("0100000010000000")[..]);
        let r = encode_row(std::slice::from_ref(&dec), &[Some(Datum::Decimal(128))]).unwrap();
        assert_eq!(&r[8..19], &hex("0200000010000000 0080 00")[..]);
        // NULL: null bit, 16 reserved zero bytes, slot = offset << 32.
        let r = encode_row(std::slice::from_ref(&dec), &[None]).unwrap();
        assert_eq!(
            r,
            hex("0001000000000000 0000000010000000 0000000000000000 0000000000000000")
        );
        assert_eq!(
            decode_row(std::slice::from_ref(&dec), &r).unwrap(),
            vec![None]
        );
        let ts = ty(TypeKind::LocalZonedTimestamp(9));
        let r = encode_row(&[ts], &[None]).unwrap();
        assert_eq!(r, hex("0001000000000000 0000000010000000 0000000000000000"));
        for v in [
            i128::from(i64::MAX) * 1000 + 7,
            -(10i128.pow(20) - 1),
            255,
            -256,
        ] {
            let r = encode_row(std::slice::from_ref(&dec), &[Some(Datum::Decimal(v))]);
            if v.unsigned_abs() >= 10u128.pow(20) {
                assert!(r.is_err());
                continue;
            }
            assert_eq!(
                decode_row(std::slice::from_ref(&dec), &r.unwrap()).unwrap(),
                vec![Some(Datum::Decimal(v))]
            );
        }
    }

    #[test]
    fn encode_errors() {
        let dec = ty(TypeKind::Decimal {
            precision: 4,
            scale: 0,
        });
        assert!(encode_row(&[dec], &[Some(Datum::Decimal(10_000))]).is_err());
        assert!(encode_row(&[int()], &[Some(Datum::BigInt(1))]).is_err());
        assert!(encode_row(&[int()], &[]).is_err());
        let arr = ty(TypeKind::Array(Box::new(int())));
        assert!(matches!(
            encode_row(std::slice::from_ref(&arr), &[Some(Datum::Int(1))]),
            Err(Error::Unsupported { .. })
        ));
        // A null nested cell is fine (stats rows have them).
        assert_eq!(
            encode_row(&[arr], &[None]).unwrap(),
            hex("0001000000000000 0000000000000000")
        );
        let ts = ty(TypeKind::Timestamp(6));
        assert!(encode_row(
            &[ts],
            &[Some(Datum::Timestamp {
                millis: 0,
                nanos: 1_000_000
            })]
        )
        .is_err());
    }

    #[test]
    fn empty_row_is_arity_zero() {
        assert_eq!(empty_row(), serialize_row(&[], &[]).unwrap());
        assert_eq!(empty_row(), hex("00000000 0000000000000000"));
        assert_eq!(deserialize_row(&[], &empty_row()).unwrap(), vec![]);
    }

    #[test]
    fn decode_errors() {
        let types = [int(), string()];
        let good = serialize_row(&types, &[Some(Datum::Int(5)), s("a-very-long-name")]).unwrap();
        assert!(deserialize_row(&types, &good[..3]).is_err());
        assert!(deserialize_row(&types, &good[..20]).is_err()); // truncated fixed part
        assert!(deserialize_row(&types, &good[..30]).is_err()); // truncated var part
        assert!(deserialize_row(&[int()], &good).is_err()); // arity mismatch
        let mut bad = good.clone();
        bad[4 + 16 + 4] = 0xff; // offset way out
        let e = deserialize_row(&types, &bad).unwrap_err().to_string();
        assert!(e.contains("outside"), "{e}");
        let mut neg = good.clone();
        neg[0] = 0x80;
        assert!(deserialize_row(&types, &neg).is_err());
    }

    fn all_types() -> Vec<DataType> {
        vec![
            ty(TypeKind::Boolean),
            ty(TypeKind::TinyInt),
            ty(TypeKind::SmallInt),
            int(),
            ty(TypeKind::BigInt),
            ty(TypeKind::Float),
            ty(TypeKind::Double),
            ty(TypeKind::Decimal {
                precision: 10,
                scale: 2,
            }),
            ty(TypeKind::Decimal {
                precision: 38,
                scale: 4,
            }),
            string(),
            ty(TypeKind::Char(3)),
            ty(TypeKind::VarBinary(MAX_LEN)),
            ty(TypeKind::Date),
            ty(TypeKind::Time(3)),
            ty(TypeKind::Timestamp(3)),
            ty(TypeKind::Timestamp(6)),
            ty(TypeKind::LocalZonedTimestamp(9)),
            ty(TypeKind::LocalZonedTimestamp(0)),
        ]
    }

    /// A random value (or null) for each of `all_types()`.
    fn arb_row() -> impl Strategy<Value = Vec<Option<Datum>>> {
        let p18 = 10i128.pow(10) - 1;
        let p38 = 10i128.pow(38) - 1;
        (
            (
                proptest::option::of(any::<bool>().prop_map(Datum::Bool)),
                proptest::option::of(any::<i8>().prop_map(Datum::TinyInt)),
                proptest::option::of(any::<i16>().prop_map(Datum::SmallInt)),
                proptest::option::of(any::<i32>().prop_map(Datum::Int)),
                proptest::option::of(any::<i64>().prop_map(Datum::BigInt)),
                proptest::option::of((-1e30f32..1e30).prop_map(Datum::Float)),
                proptest::option::of(
                    any::<f64>()
                        .prop_filter("nan", |f| !f.is_nan())
                        .prop_map(Datum::Double),
                ),
                proptest::option::of((-p18..=p18).prop_map(Datum::Decimal)),
                proptest::option::of((-p38..=p38).prop_map(Datum::Decimal)),
            ),
            (
                proptest::option::of(".{0,20}".prop_map(Datum::String)),
                proptest::option::of("[a-z]{0,3}".prop_map(Datum::String)),
                proptest::option::of(
                    proptest::collection::vec(any::<u8>(), 0..20).prop_map(Datum::Bytes),
                ),
                proptest::option::of(any::<i32>().prop_map(Datum::Date)),
                proptest::option::of((0..86_400_000).prop_map(Datum::Time)),
                proptest::option::of(any::<i64>().prop_map(|m| Datum::Timestamp {
                    millis: m,
                    nanos: 0,
                })),
                proptest::option::of(
                    (-9_000_000_000_000_000i64..9_000_000_000_000_000, 0..1000i32).prop_map(
                        |(m, n)| Datum::Timestamp {
                            millis: m,
                            nanos: n * 1000,
                        },
                    ),
                ),
                proptest::option::of(
                    (-9_000_000_000_000i64..9_000_000_000_000, 0..1_000_000i32).prop_map(
                        |(m, n)| Datum::Timestamp {
                            millis: m,
                            nanos: n,
                        },
                    ),
                ),
                // TIMESTAMP_LTZ(0) holds whole seconds (its Arrow type has a second unit)
                proptest::option::of((-9_000_000_000_000_000i64..9_000_000_000_000_000).prop_map(
                    |sec| Datum::Timestamp {
                        millis: sec / 1000 * 1000,
                        nanos: 0,
                    },
                )),
            ),
        )
            .prop_map(|(a, b)| {
                vec![
                    a.0, a.1, a.2, a.3, a.4, a.5, a.6, a.7, a.8, b.0, b.1, b.2, b.3, b.4, b.5, b.6,
                    b.7, b.8,
                ]
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
            let types = all_types();
            let _ = decode_row(&types, &bytes);
            let _ = deserialize_row(&types, &bytes);
            let mut prefixed = (types.len() as u32).to_be_bytes().to_vec();
            prefixed.extend_from_slice(&bytes);
            let _ = deserialize_row(&types, &prefixed);
        }

        #[test]
        fn mutated_rows_never_panic(row in arb_row(), pos in any::<prop::sample::Index>(), byte in any::<u8>()) {
            let types = all_types();
            let mut b = serialize_row(&types, &row).unwrap();
            let i = pos.index(b.len());
            b[i] = byte;
            let _ = deserialize_row(&types, &b);
        }

        #[test]
        fn round_trip(row in arb_row()) {
            let types = all_types();
            let b = serialize_row(&types, &row).unwrap();
            prop_assert_eq!((b.len() - 4) % 8, 0);
            prop_assert_eq!(deserialize_row(&types, &b).unwrap(), row);
        }

        #[test]
        fn arrow_encoder_matches_datum_encoder(rows in proptest::collection::vec(arb_row(), 1..8)) {
            let types = all_types();
            let arrays: Vec<ArrayRef> = types
                .iter()
                .enumerate()
                .map(|(c, t)| {
                    let col: Vec<Option<Datum>> = rows.iter().map(|r| r[c].clone()).collect();
                    datums_to_arrow(t, &col).unwrap()
                })
                .collect();
            let enc = RowEncoder::new(&types, &arrays).unwrap();
            let mut buf = Vec::new();
            for (r, row) in rows.iter().enumerate() {
                enc.encode(r, &mut buf).unwrap();
                prop_assert_eq!(&buf, &encode_row(&types, row).unwrap());
                for (c, t) in types.iter().enumerate() {
                    prop_assert_eq!(&datum_from_arrow(arrays[c].as_ref(), r, t).unwrap(), &row[c]);
                    prop_assert_eq!(&enc.datum(c, r).unwrap(), &row[c]);
                }
            }
        }
    }

    #[test]
    fn arrow_timestamp_conversions() {
        let t6 = ty(TypeKind::Timestamp(6));
        let a = TimestampMicrosecondArray::from(vec![Some(-1), Some(1_714_979_289_123_456), None]);
        assert_eq!(
            datum_from_arrow(&a, 0, &t6).unwrap(),
            Some(Datum::Timestamp {
                millis: -1,
                nanos: 999_000
            })
        );
        assert_eq!(
            datum_from_arrow(&a, 1, &t6).unwrap(),
            Some(Datum::Timestamp {
                millis: 1_714_979_289_123,
                nanos: 456_000
            })
        );
        assert_eq!(datum_from_arrow(&a, 2, &t6).unwrap(), None);
        assert!(datum_from_arrow(&a, 3, &t6).is_err());
        let n = TimestampNanosecondArray::from(vec![-1i64]);
        let t9 = ty(TypeKind::Timestamp(9));
        assert_eq!(
            datum_from_arrow(&n, 0, &t9).unwrap(),
            Some(Datum::Timestamp {
                millis: -1,
                nanos: 999_999
            })
        );
        let sec = TimestampSecondArray::from(vec![2i64]);
        assert_eq!(
            datum_from_arrow(&sec, 0, &ty(TypeKind::Timestamp(0))).unwrap(),
            Some(Datum::Timestamp {
                millis: 2000,
                nanos: 0
            })
        );
        // p <= 3 from microseconds: floor millis, nanos dropped (compact form).
        let t3 = ty(TypeKind::Timestamp(3));
        assert_eq!(
            datum_from_arrow(&a, 0, &t3).unwrap(),
            Some(Datum::Timestamp {
                millis: -1,
                nanos: 0
            })
        );
        let back = datums_to_arrow(
            &t6,
            &[Some(Datum::Timestamp {
                millis: -1,
                nanos: 999_000,
            })],
        )
        .unwrap();
        assert_eq!(back.as_primitive::<TimestampMicrosecondType>().value(0), -1);
        let ltz = datums_to_arrow(&ty(TypeKind::LocalZonedTimestamp(3)), &[None]).unwrap();
        assert_eq!(
            ltz.data_type(),
            &ty(TypeKind::LocalZonedTimestamp(3)).to_arrow()
        );
    }

    #[test]
    fn arrow_input_variants() {
        let t = string();
        let arrays: Vec<ArrayRef> = vec![
            Arc::new(StringArray::from(vec!["a-very-long-name"])),
            Arc::new(LargeStringArray::from(vec!["a-very-long-name"])),
            Arc::new(StringViewArray::from(vec!["a-very-long-name"])),
        ];
        let want = encode_row(std::slice::from_ref(&t), &[s("a-very-long-name")]).unwrap();
        let mut buf = Vec::new();
        for a in arrays {
            RowEncoder::new(std::slice::from_ref(&t), &[a])
                .unwrap()
                .encode(0, &mut buf)
                .unwrap();
            assert_eq!(buf, want);
        }
        let time = ty(TypeKind::Time(0));
        let want = encode_row(std::slice::from_ref(&time), &[Some(Datum::Time(1500))]).unwrap();
        let a: ArrayRef = Arc::new(Time64MicrosecondArray::from(vec![1_500_999]));
        RowEncoder::new(std::slice::from_ref(&time), &[a])
            .unwrap()
            .encode(0, &mut buf)
            .unwrap();
        assert_eq!(buf, want);
        // Nulls from a Null array.
        let a: ArrayRef = Arc::new(arrow_array::NullArray::new(2));
        let dec = ty(TypeKind::Decimal {
            precision: 30,
            scale: 0,
        });
        RowEncoder::new(std::slice::from_ref(&dec), &[a])
            .unwrap()
            .encode(1, &mut buf)
            .unwrap();
        assert_eq!(buf, encode_row(&[dec], &[None]).unwrap());
    }

    #[test]
    fn arrow_input_errors() {
        let a: ArrayRef = Arc::new(Int64Array::from(vec![1]));
        assert!(matches!(
            RowEncoder::new(&[int()], std::slice::from_ref(&a)),
            Err(Error::SchemaMismatch { .. })
        ));
        assert!(RowEncoder::new(&[int(), int()], std::slice::from_ref(&a)).is_err());
        let b: ArrayRef = Arc::new(Int64Array::from(vec![1, 2]));
        let big = ty(TypeKind::BigInt);
        assert!(RowEncoder::new(&[big.clone(), big.clone()], &[a.clone(), b]).is_err());
        let enc = RowEncoder::new(&[big], &[a]).unwrap();
        let mut buf = Vec::new();
        assert!(enc.encode(1, &mut buf).is_err());
        let arr = ty(TypeKind::Array(Box::new(int())));
        let l: ArrayRef = Arc::new(Int32Array::from(vec![1]));
        assert!(matches!(
            RowEncoder::new(&[arr], &[l]),
            Err(Error::Unsupported { .. })
        ));
        let d: ArrayRef = Arc::new(
            Decimal128Array::from(vec![12345])
                .with_precision_and_scale(10, 2)
                .unwrap(),
        );
        let d4 = ty(TypeKind::Decimal {
            precision: 4,
            scale: 2,
        });
        let enc = RowEncoder::new(&[d4], std::slice::from_ref(&d)).unwrap();
        assert!(enc.encode(0, &mut buf).is_err()); // 123.45 does not fit DECIMAL(4, 2)
        let d_scale = ty(TypeKind::Decimal {
            precision: 10,
            scale: 3,
        });
        assert!(RowEncoder::new(&[d_scale], &[d]).is_err());
    }
}
