//! `ARRAY<BLOB>` and `MAP<X, BLOB>` columns (pypaimon 2.1.0's `is_array_blob_type` /
//! `is_map_blob_type`) between Arrow and their `.blob` records (io/blob.rs): the map keys'
//! serialization (pypaimon's `common/map_blob_key_serializer.py`, Java's
//! `MapBlobKeySerializer`) and the Arrow column read back from a column's `.blob` files.
//!
//! Keys, little endian: TINYINT / SMALLINT / INT / BIGINT as 1 / 2 / 4 / 8 bytes, BOOLEAN one
//! byte (0 or 1), DATE days since the epoch (4 bytes), TIME milliseconds of the day (4 bytes),
//! DECIMAL of precision up to 18 its unscaled value (8 bytes), a wider DECIMAL its unscaled
//! value's minimal big-endian two's complement (Java's `BigInteger.toByteArray`), CHAR /
//! VARCHAR / STRING their UTF-8, BINARY / VARBINARY / BYTES the bytes. Other key types are
//! refused, as pypaimon refuses them.

use std::borrow::Cow;
use std::path::PathBuf;
use std::sync::Arc;

use arrow_array::builder::{ArrayBuilder, LargeBinaryBuilder};
use arrow_array::cast::AsArray;
use arrow_array::types::{
    Date32Type, Decimal128Type, Int16Type, Int32Type, Int64Type, Int8Type, Time32MillisecondType,
};
use arrow_array::{
    Array, ArrayRef, BinaryArray, BooleanArray, Date32Array, Decimal128Array, Int16Array,
    Int32Array, Int64Array, Int8Array, ListArray, MapArray, StringArray, StructArray,
    Time32MillisecondArray,
};
use arrow_buffer::{NullBuffer, OffsetBuffer};
use arrow_schema::DataType as ArrowType;

use crate::error::{Error, Result};
use crate::io::blob::{self, BlobSlot, BlobValue, Nested};
use crate::io::data_file::Source;
use crate::io::remote::ReadAt;
use crate::spec::types::{DataType, TypeKind};

/// Whether `t` is `ARRAY<BLOB>` or `MAP<X, BLOB>` (X not holding a BLOB).
pub fn is_nested_blob(t: &DataType) -> bool {
    match &t.kind {
        TypeKind::Array(e) => e.is_blob(),
        TypeKind::Map(k, v) => v.is_blob() && !k.contains_blob(),
        _ => false,
    }
}

/// Whether a column of type `t` lives in `.blob` files (pypaimon's `is_blob_file_type`):
/// BLOB, `ARRAY<BLOB>` or `MAP<X, BLOB>`.
pub fn is_blob_file_type(t: &DataType) -> bool {
    t.is_blob() || is_nested_blob(t)
}

/// Checks that `k` can key a `MAP<X, BLOB>` (pypaimon's `create_map_blob_key_serializer`).
pub fn check_key_type(k: &DataType) -> Result<()> {
    use TypeKind::*;
    match &k.kind {
        TinyInt
        | SmallInt
        | Int
        | BigInt
        | Boolean
        | Date
        | Time(_)
        | Decimal { .. }
        | Char(_)
        | VarChar(_)
        | Binary(_)
        | VarBinary(_) => Ok(()),
        _ => Err(Error::unsupported(format!(
            "Unsupported key type for MAP<X, BLOB>: {}",
            k.sql_string()
        ))),
    }
}

fn compact(precision: u32) -> bool {
    precision <= 18
}

/// Whether an unscaled decimal value has at most `precision` digits (DECIMAL's range).
fn fits_precision(v: i128, precision: u32) -> bool {
    10i128
        .checked_pow(precision)
        .is_none_or(|bound| v.unsigned_abs() < bound.unsigned_abs())
}

/// Key `i` of `keys` (an Arrow array of `k`'s type) serialized.
pub fn key_bytes(keys: &dyn Array, i: usize, k: &DataType) -> Result<Vec<u8>> {
    use TypeKind::*;
    let wrong = || {
        Error::invalid(format!(
            "MAP<X, BLOB> key: expected {} (arrow {}), got arrow {}",
            k.sql_string(),
            k.to_arrow(),
            keys.data_type()
        ))
    };
    Ok(match (&k.kind, keys.data_type()) {
        (TinyInt, ArrowType::Int8) => keys
            .as_primitive::<Int8Type>()
            .value(i)
            .to_le_bytes()
            .into(),
        (SmallInt, ArrowType::Int16) => keys
            .as_primitive::<Int16Type>()
            .value(i)
            .to_le_bytes()
            .into(),
        (Int, ArrowType::Int32) => keys
            .as_primitive::<Int32Type>()
            .value(i)
            .to_le_bytes()
            .into(),
        (BigInt, ArrowType::Int64) => keys
            .as_primitive::<Int64Type>()
            .value(i)
            .to_le_bytes()
            .into(),
        (Date, ArrowType::Date32) => keys
            .as_primitive::<Date32Type>()
            .value(i)
            .to_le_bytes()
            .into(),
        (Time(_), ArrowType::Time32(arrow_schema::TimeUnit::Millisecond)) => keys
            .as_primitive::<Time32MillisecondType>()
            .value(i)
            .to_le_bytes()
            .into(),
        (Boolean, ArrowType::Boolean) => vec![u8::from(keys.as_boolean().value(i))],
        (Decimal { precision, scale }, ArrowType::Decimal128(p, s)) => {
            let v = keys.as_primitive::<Decimal128Type>().value(i);
            if i32::from(*s) != *scale as i32 || u32::from(*p) > *precision {
                return Err(wrong());
            }
            if !fits_precision(v, *precision) {
                return Err(Error::invalid(format!(
                    "MAP<X, BLOB> key {v} (unscaled) does not fit {}",
                    k.sql_string()
                )));
            }
            if compact(*precision) {
                i64::try_from(v).map_err(|_| wrong())?.to_le_bytes().into()
            } else {
                minimal_twos_complement(v)
            }
        }
        (Char(_) | VarChar(_), ArrowType::Utf8) => {
            keys.as_string::<i32>().value(i).as_bytes().into()
        }
        (Char(_) | VarChar(_), ArrowType::LargeUtf8) => {
            keys.as_string::<i64>().value(i).as_bytes().into()
        }
        (Char(_) | VarChar(_), ArrowType::Utf8View) => {
            keys.as_string_view().value(i).as_bytes().into()
        }
        (Binary(_) | VarBinary(_), _) => match blob_bytes(keys, i)? {
            Some(b) => b.into(),
            None => return Err(wrong()),
        },
        _ => {
            check_key_type(k)?;
            return Err(wrong());
        }
    })
}

/// Java's `BigInteger.toByteArray`: the shortest big-endian two's complement of `v`.
fn minimal_twos_complement(v: i128) -> Vec<u8> {
    let b = v.to_be_bytes();
    let mut start = 0;
    while start < 15 {
        let (hi, next) = (b[start], b[start + 1]);
        let redundant = (hi == 0 && next & 0x80 == 0) || (hi == 0xff && next & 0x80 != 0);
        if !redundant {
            break;
        }
        start += 1;
    }
    b[start..].to_vec()
}

/// The bytes of row `i` of a binary array (None a null), any of Arrow's binary layouts.
pub fn blob_bytes(a: &dyn Array, i: usize) -> Result<Option<&[u8]>> {
    if a.is_null(i) {
        return Ok(None);
    }
    Ok(Some(match a.data_type() {
        ArrowType::LargeBinary => a.as_binary::<i64>().value(i),
        ArrowType::Binary => a.as_binary::<i32>().value(i),
        ArrowType::BinaryView => a.as_binary_view().value(i),
        ArrowType::FixedSizeBinary(_) => a.as_fixed_size_binary().value(i),
        t => {
            return Err(Error::invalid(format!(
                "BLOB values must be bytes, got Arrow {t}"
            )))
        }
    }))
}

/// Error of key `i` (its index in the keys converted together).
type KeyError<'a> = &'a dyn Fn(usize, String) -> Error;

/// The keys `keys` (serialized) as an Arrow array of `k`'s type; a key of the wrong length
/// or an invalid value is an error (`bad`, given the key's index).
fn keys_to_arrow(k: &DataType, keys: &[&[u8]], bad: KeyError<'_>) -> Result<ArrayRef> {
    use TypeKind::*;
    fn fixed<const N: usize>(b: &[u8], i: usize, bad: KeyError<'_>) -> Result<[u8; N]> {
        b.try_into()
            .map_err(|_| bad(i, format!("expected {N} key bytes, found {}", b.len())))
    }
    let ints = |n: usize| -> Result<Vec<i64>> {
        keys.iter()
            .enumerate()
            .map(|(i, b)| {
                Ok(match n {
                    1 => i64::from(i8::from_le_bytes(fixed::<1>(b, i, bad)?)),
                    2 => i64::from(i16::from_le_bytes(fixed::<2>(b, i, bad)?)),
                    4 => i64::from(i32::from_le_bytes(fixed::<4>(b, i, bad)?)),
                    _ => i64::from_le_bytes(fixed::<8>(b, i, bad)?),
                })
            })
            .collect()
    };
    Ok(match &k.kind {
        TinyInt => Arc::new(Int8Array::from_iter_values(
            ints(1)?.into_iter().map(|v| v as i8),
        )),
        SmallInt => Arc::new(Int16Array::from_iter_values(
            ints(2)?.into_iter().map(|v| v as i16),
        )),
        Int => Arc::new(Int32Array::from_iter_values(
            ints(4)?.into_iter().map(|v| v as i32),
        )),
        BigInt => Arc::new(Int64Array::from_iter_values(ints(8)?)),
        Date => Arc::new(Date32Array::from_iter_values(
            ints(4)?.into_iter().map(|v| v as i32),
        )),
        Time(_) => Arc::new(Time32MillisecondArray::from_iter_values(
            ints(4)?.into_iter().map(|v| v as i32),
        )),
        Boolean => {
            let v = keys
                .iter()
                .enumerate()
                .map(|(i, b)| match fixed::<1>(b, i, bad)? {
                    [0] => Ok(false),
                    [1] => Ok(true),
                    _ => Err(bad(i, "invalid boolean key".into())),
                })
                .collect::<Result<Vec<bool>>>()?;
            Arc::new(BooleanArray::from(v))
        }
        Decimal { precision, scale } => {
            let v = keys
                .iter()
                .enumerate()
                .map(|(i, b)| {
                    let v = if compact(*precision) {
                        i128::from(i64::from_le_bytes(fixed::<8>(b, i, bad)?))
                    } else {
                        if b.is_empty() || b.len() > 16 {
                            return Err(bad(i, format!("invalid decimal key of {} bytes", b.len())));
                        }
                        let fill = if b[0] & 0x80 != 0 { 0xff } else { 0 };
                        let mut full = [fill; 16];
                        full[16 - b.len()..].copy_from_slice(b);
                        i128::from_be_bytes(full)
                    };
                    if !fits_precision(v, *precision) {
                        return Err(bad(
                            i,
                            format!(
                                "decimal key {v} (unscaled) does not fit DECIMAL({precision}, {scale})"
                            ),
                        ));
                    }
                    Ok(v)
                })
                .collect::<Result<Vec<i128>>>()?;
            Arc::new(
                Decimal128Array::from_iter_values(v)
                    .with_precision_and_scale(*precision as u8, *scale as i8)?,
            )
        }
        Char(_) | VarChar(_) => {
            let v = keys
                .iter()
                .enumerate()
                .map(|(i, b)| {
                    std::str::from_utf8(b).map_err(|_| bad(i, "invalid string key".into()))
                })
                .collect::<Result<Vec<&str>>>()?;
            Arc::new(StringArray::from(v))
        }
        Binary(_) | VarBinary(_) => Arc::new(BinaryArray::from_iter_values(keys.iter())),
        _ => {
            check_key_type(k)?;
            return Err(Error::Internal(format!(
                "MAP<X, BLOB> key type {}",
                k.sql_string()
            )));
        }
    })
}

/// The values of an `ARRAY<BLOB>` / `MAP<X, BLOB>` column of type `t` read from its `.blob`
/// `files` (each with the rows its manifest entry says), as pypaimon returns them: the bytes,
/// or with `as_descriptor` each element's (value's) serialized `BlobDescriptor`. A row that
/// is a placeholder (a data-evolution update's row whose value is in an older file) reads as
/// null and is marked in `placeholders` (one flag per row read). Descriptors need only each file's index
/// and each record's head, indexes and keys: the elements' bytes are not read (nor their CRC
/// checked, as for a BLOB column's descriptors).
pub fn read_column(
    files: &[(PathBuf, usize)],
    t: &DataType,
    as_descriptor: bool,
    placeholders: &mut Vec<bool>,
) -> Result<ArrayRef> {
    let (field, map_fields) = match (t.to_arrow(), &t.kind) {
        (ArrowType::List(f), TypeKind::Array(_)) => (f, None),
        (ArrowType::Map(f, _), TypeKind::Map(k, _)) => match f.data_type() {
            ArrowType::Struct(fs) => (f.clone(), Some((fs.clone(), k.as_ref().clone()))),
            _ => return Err(Error::Internal(format!("map type {t}"))),
        },
        _ => {
            return Err(Error::Internal(format!(
                "{} is not ARRAY<BLOB> nor MAP<X, BLOB>",
                t.sql_string()
            )))
        }
    };
    let map = map_fields.is_some();
    let mut out = Rows::default();
    let mut key_arrays: Vec<ArrayRef> = vec![];
    for (path, rows) in files {
        let count = |n: usize| -> Result<()> {
            if n == *rows {
                return Ok(());
            }
            Err(Error::corrupt(
                path.clone(),
                format!("{n} rows in the .blob file, its manifest entry says {rows}"),
            ))
        };
        let (mut keys, mut key_rows): (Vec<Vec<u8>>, Vec<usize>) = (vec![], vec![]);
        if as_descriptor {
            let uri = path.to_string_lossy();
            let (src, len) = crate::io::data_file::open_checked(path, None, false)?;
            let src: &dyn ReadAt = match &src {
                Source::Local(f) => f,
                Source::Remote(o) => o,
            };
            let slots = blob::read_index_at(len, |at, n| src.read_at(at, n), path)?;
            count(slots.len())?;
            for (row, slot) in slots.into_iter().enumerate() {
                placeholders.push(slot == BlobSlot::PlaceHolder);
                let (base, length) = match slot {
                    BlobSlot::Null | BlobSlot::PlaceHolder => {
                        out.null();
                        continue;
                    }
                    BlobSlot::Data { offset, length } => (offset, length),
                };
                let length = usize::try_from(length).map_err(|_| {
                    Error::corrupt(path.clone(), format!("row {row}: record length"))
                })?;
                let get = |at: usize, n: usize| -> Result<Cow<'static, [u8]>> {
                    let b = src
                        .read_at(base + at as u64, n)
                        .map_err(|e| Error::io(path, e))?;
                    Ok(Cow::Owned(b.to_vec()))
                };
                let nested = blob::parse_nested_with(length, &get, map, path, row)?;
                out.record(nested, row, &mut keys, &mut key_rows, |(s, l)| {
                    Ok(Cow::Owned(blob::descriptor_bytes(
                        &uri,
                        base + s as u64,
                        l as u64,
                    )?))
                })?;
            }
        } else {
            let bytes = crate::io::read(path)?;
            let records = blob::decode(&bytes, path)?;
            count(records.len())?;
            for (row, v) in records.into_iter().enumerate() {
                placeholders.push(matches!(v, BlobValue::PlaceHolder));
                let data = match v {
                    BlobValue::Null | BlobValue::PlaceHolder => {
                        out.null();
                        continue;
                    }
                    BlobValue::Data(d) => d,
                };
                let nested = blob::parse_nested(data, map, path, row)?;
                out.record(nested, row, &mut keys, &mut key_rows, |(s, l)| {
                    Ok(Cow::Borrowed(&data[s..s + l]))
                })?;
            }
        }
        if let Some((_, k)) = &map_fields {
            // this file's keys, a bad one named by file and row
            let bad = |i: usize, m: String| {
                let row = key_rows.get(i).copied().unwrap_or_default();
                Error::corrupt(path.clone(), format!("row {row}: MAP<X, BLOB> key: {m}"))
            };
            let refs: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
            key_arrays.push(keys_to_arrow(k, &refs, &bad)?);
        }
    }
    let nulls = Some(NullBuffer::from(out.valid));
    let offsets = OffsetBuffer::new(out.offsets.into());
    let values: ArrayRef = Arc::new(out.values.finish());
    Ok(match map_fields {
        None => Arc::new(ListArray::try_new(field, offsets, values, nulls)?),
        Some((fs, k)) => {
            let keys = match key_arrays.as_slice() {
                [] => keys_to_arrow(&k, &[], &|_, m| Error::Internal(m))?,
                [one] => one.clone(),
                many => {
                    let refs: Vec<&dyn Array> = many.iter().map(|a| a.as_ref()).collect();
                    arrow_select::concat::concat(&refs)?
                }
            };
            let entries = StructArray::try_new(fs, vec![keys, values], None)?;
            Arc::new(MapArray::try_new(field, offsets, entries, nulls, false)?)
        }
    })
}

/// The rows of a nested BLOB column read so far: list offsets, validity and the elements.
struct Rows {
    offsets: Vec<i32>,
    valid: Vec<bool>,
    values: LargeBinaryBuilder,
}

impl Default for Rows {
    fn default() -> Self {
        Rows {
            offsets: vec![0],
            valid: vec![],
            values: LargeBinaryBuilder::new(),
        }
    }
}

impl Rows {
    fn null(&mut self) {
        self.valid.push(false);
        self.offsets
            .push(self.offsets.last().copied().unwrap_or_default());
    }

    /// Appends row `row`'s record `nested`, each element's value `value(span)`; a map's keys
    /// go to `keys`, their rows to `key_rows`.
    fn record<'d>(
        &mut self,
        nested: Nested<'_>,
        row: usize,
        keys: &mut Vec<Vec<u8>>,
        key_rows: &mut Vec<usize>,
        value: impl Fn(blob::Span) -> Result<Cow<'d, [u8]>>,
    ) -> Result<()> {
        let mut push = |r: Option<blob::Span>| -> Result<()> {
            match r {
                None => self.values.append_null(),
                Some(span) => self.values.append_value(value(span)?),
            }
            Ok(())
        };
        match nested {
            Nested::Array(elements) => {
                for r in elements {
                    push(r)?;
                }
            }
            Nested::Map(entries) => {
                for (k, r) in entries {
                    keys.push(k.into_owned());
                    key_rows.push(row);
                    push(r)?;
                }
            }
        }
        self.valid.push(true);
        let end = i32::try_from(self.values.len())
            .map_err(|_| Error::invalid("more than 2^31 BLOB elements in one read"))?;
        self.offsets.push(end);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blob_nested_decimal_keys_are_java_big_integers() {
        assert_eq!(minimal_twos_complement(0), vec![0]);
        assert_eq!(minimal_twos_complement(127), vec![0x7f]);
        assert_eq!(minimal_twos_complement(128), vec![0, 0x80]);
        assert_eq!(minimal_twos_complement(-1), vec![0xff]);
        assert_eq!(minimal_twos_complement(-129), vec![0xff, 0x7f]);
        let bad = |_: usize, m: String| Error::invalid(m);
        let k = DataType::new(TypeKind::Decimal {
            precision: 30,
            scale: 2,
        });
        for v in [0i128, 1, -1, 128, -129, 10i128.pow(29), -(10i128.pow(29))] {
            let b = minimal_twos_complement(v);
            let a = keys_to_arrow(&k, &[&b], &bad).unwrap();
            assert_eq!(a.as_primitive::<Decimal128Type>().value(0), v);
        }
        // A key past the declared precision is a corrupt file, not a wrong Arrow value.
        let b = minimal_twos_complement(10i128.pow(30));
        let err = keys_to_arrow(&k, &[&b], &bad).unwrap_err().to_string();
        assert!(err.contains("does not fit DECIMAL(30, 2)"), "{err}");
        let small = DataType::new(TypeKind::Decimal {
            precision: 3,
            scale: 1,
        });
        let b = 1000i64.to_le_bytes();
        assert!(keys_to_arrow(&small, &[&b], &bad).is_err());
        // Writing: a value past the precision, or another scale, is refused.
        let keys = Decimal128Array::from_iter_values([1000i128])
            .with_precision_and_scale(3, 1)
            .unwrap();
        let err = key_bytes(&keys, 0, &small).unwrap_err().to_string();
        assert!(err.contains("does not fit DECIMAL(3, 1)"), "{err}");
        let keys = Decimal128Array::from_iter_values([10i128])
            .with_precision_and_scale(3, 2)
            .unwrap();
        assert!(key_bytes(&keys, 0, &small).is_err());
        assert!(
            fits_precision(999, 3) && !fits_precision(-1000, 3) && fits_precision(i128::MAX, 39)
        );
    }

    #[test]
    fn blob_nested_key_types() {
        assert!(check_key_type(&DataType::new(TypeKind::Double)).is_err());
        assert!(check_key_type(&DataType::new(TypeKind::Int)).is_ok());
        let arr = DataType::new(TypeKind::Array(Box::new(DataType::new(TypeKind::Blob))));
        assert!(is_nested_blob(&arr) && is_blob_file_type(&arr));
        assert!(!is_nested_blob(&DataType::new(TypeKind::Blob)));
    }
}
