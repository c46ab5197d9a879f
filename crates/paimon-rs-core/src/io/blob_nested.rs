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

use std::path::PathBuf;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Date32Type, Decimal128Type, Int16Type, Int32Type, Int64Type, Int8Type, Time32MillisecondType,
};
use arrow_array::{
    Array, ArrayRef, BinaryArray, BooleanArray, Date32Array, Decimal128Array, Int16Array,
    Int32Array, Int64Array, Int8Array, LargeBinaryArray, ListArray, MapArray, StringArray,
    StructArray, Time32MillisecondArray,
};
use arrow_buffer::{NullBuffer, OffsetBuffer};
use arrow_schema::DataType as ArrowType;

use crate::error::{Error, Result};
use crate::io::blob::{self, BlobValue, Nested};
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
        (Decimal { precision, .. }, ArrowType::Decimal128(..)) => {
            let v = keys.as_primitive::<Decimal128Type>().value(i);
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

/// The keys `keys` (serialized) as an Arrow array of `k`'s type; a key of the wrong length
/// or an invalid value is an error (`bad`).
fn keys_to_arrow(k: &DataType, keys: &[&[u8]], bad: &dyn Fn(String) -> Error) -> Result<ArrayRef> {
    use TypeKind::*;
    fn fixed<const N: usize>(b: &[u8], bad: &dyn Fn(String) -> Error) -> Result<[u8; N]> {
        b.try_into()
            .map_err(|_| bad(format!("expected {N} key bytes, found {}", b.len())))
    }
    let ints = |n: usize| -> Result<Vec<i64>> {
        keys.iter()
            .map(|b| {
                Ok(match n {
                    1 => i64::from(i8::from_le_bytes(fixed::<1>(b, bad)?)),
                    2 => i64::from(i16::from_le_bytes(fixed::<2>(b, bad)?)),
                    4 => i64::from(i32::from_le_bytes(fixed::<4>(b, bad)?)),
                    _ => i64::from_le_bytes(fixed::<8>(b, bad)?),
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
                .map(|b| match fixed::<1>(b, bad)? {
                    [0] => Ok(false),
                    [1] => Ok(true),
                    _ => Err(bad("invalid boolean key".into())),
                })
                .collect::<Result<Vec<bool>>>()?;
            Arc::new(BooleanArray::from(v))
        }
        Decimal { precision, scale } => {
            let v = keys
                .iter()
                .map(|b| {
                    if compact(*precision) {
                        return Ok(i128::from(i64::from_le_bytes(fixed::<8>(b, bad)?)));
                    }
                    if b.is_empty() || b.len() > 16 {
                        return Err(bad(format!("invalid decimal key of {} bytes", b.len())));
                    }
                    let fill = if b[0] & 0x80 != 0 { 0xff } else { 0 };
                    let mut full = [fill; 16];
                    full[16 - b.len()..].copy_from_slice(b);
                    Ok(i128::from_be_bytes(full))
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
                .map(|b| std::str::from_utf8(b).map_err(|_| bad("invalid string key".into())))
                .collect::<Result<Vec<&str>>>()?;
            Arc::new(StringArray::from(v))
        }
        Binary(_) | VarBinary(_) => Arc::new(BinaryArray::from_iter_values(keys.iter())),
        _ => {
            check_key_type(k)?;
            return Err(bad(format!("key type {}", k.sql_string())));
        }
    })
}

/// The values of an `ARRAY<BLOB>` / `MAP<X, BLOB>` column of type `t` read from its `.blob`
/// `files` (each with the rows its manifest entry says), as pypaimon returns them: the bytes,
/// or with `as_descriptor` each element's (value's) serialized `BlobDescriptor`. A row that
/// is a placeholder (an updated column) is refused.
pub fn read_column(
    files: &[(PathBuf, usize)],
    t: &DataType,
    as_descriptor: bool,
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
    let mut offsets: Vec<i32> = vec![0];
    let mut valid: Vec<bool> = vec![];
    let mut values: Vec<Option<Vec<u8>>> = vec![];
    let mut keys: Vec<Vec<u8>> = vec![];
    for (path, rows) in files {
        let bytes = crate::io::read(path)?;
        let slots = blob::read_index(&bytes, path)?;
        let records = blob::decode_records(&bytes, path)?;
        if records.len() != *rows {
            return Err(Error::corrupt(
                path.clone(),
                format!(
                    "{} rows in the .blob file, its manifest entry says {rows}",
                    records.len()
                ),
            ));
        }
        let uri = path.to_string_lossy();
        for (row, (v, slot)) in records.into_iter().zip(slots).enumerate() {
            let data = match v {
                BlobValue::Null => {
                    valid.push(false);
                    offsets.push(values.len() as i32);
                    continue;
                }
                BlobValue::PlaceHolder => {
                    return Err(Error::unsupported(format!(
                        "row {row} of BLOB file '{}' is a placeholder (its value is in an \
                         older file): updated {} columns are not read by paimon_rs",
                        path.display(),
                        t.sql_string()
                    )))
                }
                BlobValue::Data(d) => d,
            };
            let base = match slot {
                blob::BlobSlot::Data { offset, .. } => offset,
                _ => return Err(Error::Internal("blob slot".into())),
            };
            let value = |r: Option<(usize, usize)>| -> Result<Option<Vec<u8>>> {
                Ok(match r {
                    None => None,
                    Some((s, l)) if as_descriptor => {
                        Some(blob::descriptor_bytes(&uri, base + s as u64, l as u64)?)
                    }
                    Some((s, l)) => Some(data[s..s + l].to_vec()),
                })
            };
            match blob::parse_nested(data, map_fields.is_some(), path, row)? {
                Nested::Array(elements) => {
                    for r in elements {
                        values.push(value(r)?);
                    }
                }
                Nested::Map(entries) => {
                    for (k, r) in entries {
                        keys.push(k.to_vec());
                        values.push(value(r)?);
                    }
                }
            }
            valid.push(true);
            let end = i32::try_from(values.len())
                .map_err(|_| Error::invalid("more than 2^31 BLOB elements in one read"))?;
            offsets.push(end);
        }
    }
    let nulls = Some(NullBuffer::from(valid));
    let offsets = OffsetBuffer::new(offsets.into());
    let values: ArrayRef = Arc::new(LargeBinaryArray::from_iter(values));
    Ok(match map_fields {
        None => Arc::new(ListArray::try_new(field, offsets, values, nulls)?),
        Some((fs, k)) => {
            let path = files.first().map(|f| f.0.clone()).unwrap_or_default();
            let bad = |m: String| Error::corrupt(path.clone(), format!("MAP<X, BLOB> key: {m}"));
            let key_refs: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
            let keys = keys_to_arrow(&k, &key_refs, &bad)?;
            let entries = StructArray::try_new(fs, vec![keys, values], None)?;
            Arc::new(MapArray::try_new(field, offsets, entries, nulls, false)?)
        }
    })
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
        let bad = |m: String| Error::invalid(m);
        let k = DataType::new(TypeKind::Decimal {
            precision: 30,
            scale: 2,
        });
        for v in [0i128, 1, -1, 128, -129, 10i128.pow(29), -(10i128.pow(29))] {
            let b = minimal_twos_complement(v);
            let a = keys_to_arrow(&k, &[&b], &bad).unwrap();
            assert_eq!(a.as_primitive::<Decimal128Type>().value(0), v);
        }
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
