//! The Parquet Variant binary encoding, checked, and VARIANT path reads over Arrow columns: the
//! per-row kernel of `paimon_rs.variant_get` (python/paimon_rs/variant_path.py is the API layer
//! and the reference: the checks, their order and their messages are the same).

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{
    Array, ArrayRef, BinaryArray, BooleanArray, Float32Array, Float64Array, Int16Array, Int32Array,
    Int64Array, Int8Array, LargeBinaryArray, LargeStringArray, StringArray, StructArray,
};
use arrow_schema::DataType;

const PRIMITIVE: u8 = 0;
const SHORT_STR: u8 = 1;
const OBJECT: u8 = 2;
const ARRAY: u8 = 3;
const NULL: u8 = 0;
const TRUE: u8 = 1;
const FALSE: u8 = 2;
const INT8: u8 = 3;
const INT64: u8 = 6;
const DOUBLE: u8 = 7;
const DECIMAL4: u8 = 8;
const DECIMAL16: u8 = 10;
const FLOAT: u8 = 14;
const BINARY: u8 = 15;
const STRING: u8 = 16;
const VERSION: u8 = 1;

/// Why a row could not be read.
#[derive(Debug, PartialEq, Eq)]
pub enum VariantFail {
    /// The bytes are not a valid encoding: `MALFORMED_VARIANT: <message>`.
    Malformed(String),
    /// The value at path number `.0` is not of the requested type.
    Mismatch(usize),
    /// A case this kernel leaves to the Python reference (e.g. an integer out of the Arrow
    /// type's range, invalid UTF-8 in a string, a null child): the caller redoes the chunk there.
    Unsupported,
}

type Res<T> = Result<T, VariantFail>;

fn malformed<T>(what: &str) -> Res<T> {
    Err(VariantFail::Malformed(what.to_string()))
}

/// One path segment.
#[derive(Debug, Clone)]
pub enum Seg {
    Key(String),
    Index(usize),
}

/// The Arrow types the kernel reads (exactly: no casts).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Bool,
    Int8,
    Int16,
    Int32,
    Int64,
    Float32,
    Float64,
    Utf8,
    LargeUtf8,
    Binary,
    LargeBinary,
}

fn need(pos: usize, size: usize, limit: usize) -> Res<()> {
    match pos.checked_add(size) {
        Some(e) if e <= limit => Ok(()),
        _ => malformed("value is truncated"),
    }
}

fn uint(d: &[u8], pos: usize, n: usize) -> usize {
    let mut v = 0usize;
    for i in (0..n).rev() {
        v = (v << 8) | d.get(pos + i).copied().unwrap_or(0) as usize;
    }
    v
}

fn fixed_size(info: u8) -> Option<usize> {
    Some(match info {
        0..=2 => 0,
        3 => 1,
        4 => 2,
        5 => 4,
        6 | 7 => 8,
        8 => 5,
        9 => 9,
        10 => 17,
        11 => 4,
        12 | 13 => 8,
        14 => 4,
        17..=19 => 8,
        20 => 16,
        _ => return None,
    })
}

/// The metadata dictionary's keys (checked whole) and their ids.
struct Keys<'a> {
    keys: Vec<&'a [u8]>,
    ids: HashMap<&'a [u8], usize>,
}

fn metadata_keys(m: &[u8]) -> Res<Keys<'_>> {
    if m.is_empty() {
        return malformed("empty metadata");
    }
    if m[0] & 0x0F != VERSION {
        return malformed("invalid metadata version");
    }
    let w = (((m[0] >> 6) & 3) + 1) as usize;
    need(1, w, m.len())?;
    let n = uint(m, 1, w);
    let strings = (n as u128 + 2) * w as u128 + 1;
    need(1 + w, (n + 1) * w, m.len())?;
    let offsets: Vec<usize> = (0..=n).map(|i| uint(m, 1 + (i + 1) * w, w)).collect();
    let last = offsets.last().copied().unwrap_or(0) as u128;
    if offsets.first() != Some(&0)
        || m.len() as u128 != strings + last
        || offsets.windows(2).any(|p| p[1] < p[0])
    {
        return malformed("invalid metadata offsets");
    }
    let base = strings as usize;
    let mut keys = Vec::with_capacity(n);
    for p in offsets.windows(2) {
        let k = &m[base + p[0]..base + p[1]];
        if std::str::from_utf8(k).is_err() {
            return malformed("invalid metadata string");
        }
        keys.push(k);
    }
    let ids: HashMap<&[u8], usize> = keys.iter().enumerate().map(|(i, k)| (*k, i)).collect();
    if ids.len() != keys.len() {
        return malformed("duplicate metadata key");
    }
    Ok(Keys { keys, ids })
}

type Children = Vec<(usize, usize)>;

/// An object header's field count, id and offset widths, and where its ids, offsets and data
/// start (`size_w` bytes of count at `pos + 1`, known to be in range).
fn object_layout(
    v: &[u8],
    pos: usize,
    size_w: usize,
) -> (usize, usize, usize, usize, usize, usize) {
    let info = v[pos] >> 2;
    let n = uint(v, pos + 1, size_w);
    let id_w = (((info >> 2) & 3) + 1) as usize;
    let off_w = ((info & 3) + 1) as usize;
    let id_start = pos + 1 + size_w;
    let off_start = id_start + n * id_w;
    (
        n,
        id_w,
        off_w,
        id_start,
        off_start,
        off_start + (n + 1) * off_w,
    )
}

fn object(v: &[u8], pos: usize, end: usize) -> Res<(Vec<usize>, Children)> {
    need(pos, 2, end)?;
    let info = v[pos] >> 2;
    let size_w = if (info >> 4) & 1 == 1 { 4 } else { 1 };
    need(pos + 1, size_w, end)?;
    let (n, id_w, off_w, id_start, off_start, data) = object_layout(v, pos, size_w);
    need(pos, data - pos, end)?;
    let ids: Vec<usize> = (0..n).map(|i| uint(v, id_start + i * id_w, id_w)).collect();
    let offsets: Vec<usize> = (0..=n)
        .map(|i| uint(v, off_start + i * off_w, off_w))
        .collect();
    let total = offsets[n];
    if data.checked_add(total) != Some(end) {
        return malformed("object size does not match its container");
    }
    let mut sorted_ids = ids.clone();
    sorted_ids.sort_unstable();
    if sorted_ids.windows(2).any(|p| p[0] == p[1]) {
        return malformed("duplicate object field id");
    }
    let starts = &offsets[..n];
    let mut ordered = starts.to_vec();
    ordered.sort_unstable();
    if ordered.windows(2).any(|p| p[0] == p[1])
        || starts.iter().any(|&o| o >= total)
        || (n > 0 && ordered[0] != 0)
        || (n == 0 && total != 0)
    {
        return malformed("invalid object offsets");
    }
    ordered.push(total);
    let children = starts
        .iter()
        .map(|&o| {
            // the child ends where the next larger start begins (distinct: found exactly)
            let at = ordered.partition_point(|&x| x <= o);
            (data + o, data + ordered[at])
        })
        .collect();
    Ok((ids, children))
}

fn array(v: &[u8], pos: usize, end: usize) -> Res<Children> {
    need(pos, 2, end)?;
    let info = v[pos] >> 2;
    let size_w = if (info >> 2) & 1 == 1 { 4 } else { 1 };
    need(pos + 1, size_w, end)?;
    let n = uint(v, pos + 1, size_w);
    let off_w = ((info & 3) + 1) as usize;
    let off_start = pos + 1 + size_w;
    let data = off_start + (n + 1) * off_w;
    need(pos, data - pos, end)?;
    let offsets: Vec<usize> = (0..=n)
        .map(|i| uint(v, off_start + i * off_w, off_w))
        .collect();
    if offsets[0] != 0 || offsets.windows(2).any(|p| p[1] < p[0]) {
        return malformed("invalid array offsets");
    }
    if data.checked_add(offsets[n]) != Some(end) {
        return malformed("array size does not match its container");
    }
    Ok(offsets
        .windows(2)
        .map(|p| (data + p[0], data + p[1]))
        .collect())
}

fn scalar_size(v: &[u8], pos: usize, end: usize) -> Res<usize> {
    let (basic, info) = (v[pos] & 3, v[pos] >> 2);
    if basic == SHORT_STR {
        return Ok(1 + info as usize);
    }
    if info == BINARY || info == STRING {
        need(pos + 1, 4, end)?;
        return Ok(5 + uint(v, pos + 1, 4));
    }
    let Some(fixed) = fixed_size(info) else {
        return Err(VariantFail::Malformed(format!(
            "unknown primitive type {info}"
        )));
    };
    let size = 1 + fixed;
    if (DECIMAL4..=DECIMAL16).contains(&info) {
        need(pos, size, end)?;
        let max = [9u32, 18, 38][(info - DECIMAL4) as usize];
        let mut raw = [0u8; 16];
        let bytes = &v[pos + 2..pos + size];
        raw[..bytes.len()].copy_from_slice(bytes);
        if bytes.last().is_some_and(|b| b & 0x80 != 0) {
            raw[bytes.len()..].fill(0xFF);
        }
        let unscaled = i128::from_le_bytes(raw).unsigned_abs();
        let digits = unscaled.checked_ilog10().map_or(1, |d| d + 1);
        if v[pos + 1] as u32 > max || digits > max {
            return malformed("invalid decimal precision or scale");
        }
    }
    Ok(size)
}

/// The (start, end) of field `kid` of the object at `pos`, already checked by [`object`]
/// (no allocation: the walk's hot path); None: no such field.
fn object_child(v: &[u8], pos: usize, kid: usize) -> Option<(usize, usize)> {
    let size_w = if (v[pos] >> 6) & 1 == 1 { 4 } else { 1 };
    let (n, id_w, off_w, id_start, off_start, data) = object_layout(v, pos, size_w);
    let j = (0..n).find(|&i| uint(v, id_start + i * id_w, id_w) == kid)?;
    let start = uint(v, off_start + j * off_w, off_w);
    // ends where the next larger start begins (starts are distinct), or at the total size
    let end = (0..=n)
        .map(|i| uint(v, off_start + i * off_w, off_w))
        .filter(|&o| o > start)
        .min()?;
    Some((data + start, data + end))
}

/// The (start, end) of element `i` of the array at `pos`, already checked by [`array`].
fn array_child(v: &[u8], pos: usize, i: usize) -> Option<(usize, usize)> {
    let info = v[pos] >> 2;
    let size_w = if (info >> 2) & 1 == 1 { 4 } else { 1 };
    let n = uint(v, pos + 1, size_w);
    if i >= n {
        return None;
    }
    let off_w = ((info & 3) + 1) as usize;
    let off_start = pos + 1 + size_w;
    let data = off_start + (n + 1) * off_w;
    let a = uint(v, off_start + i * off_w, off_w);
    let b = uint(v, off_start + (i + 1) * off_w, off_w);
    Some((data + a, data + b))
}

/// One row: its value, metadata and (parsed on first use, shared with the previous row when
/// the metadata bytes are the same) the dictionary.
struct Row<'a, 'c> {
    value: &'a [u8],
    metadata: &'a [u8],
    cache: &'c mut Option<(&'a [u8], Keys<'a>)>,
}

impl<'a> Row<'a, '_> {
    fn keys(&mut self) -> Res<&Keys<'a>> {
        let hit = matches!(self.cache, Some((m, _)) if *m == self.metadata);
        if !hit {
            *self.cache = Some((self.metadata, metadata_keys(self.metadata)?));
        }
        match self.cache {
            Some((_, k)) => Ok(k),
            None => Err(VariantFail::Unsupported),
        }
    }

    /// Checks the row whole (iteratively, in the Python reference's order).
    fn check(&mut self) -> Res<()> {
        if self.metadata.is_empty() {
            return malformed("empty metadata");
        }
        if self.metadata[0] & 0x0F != VERSION {
            return malformed("invalid metadata version");
        }
        let v = self.value;
        let mut stack = vec![(0usize, v.len())];
        while let Some((p, e)) = stack.pop() {
            need(p, 1, e)?;
            match v[p] & 3 {
                OBJECT => {
                    let (ids, children) = object(v, p, e)?;
                    if let Some(&max) = ids.iter().max() {
                        if max >= self.keys()?.keys.len() {
                            return malformed("object field id is not in the metadata dictionary");
                        }
                    }
                    stack.extend(children);
                }
                ARRAY => stack.extend(array(v, p, e)?),
                _ => {
                    if scalar_size(v, p, e)? != e - p {
                        return malformed("child size does not match container offsets");
                    }
                }
            }
        }
        Ok(())
    }

    /// The (start, end) of the path's target; None: missing.
    fn walk(&mut self, path: &[Seg]) -> Res<Option<(usize, usize)>> {
        let v = self.value;
        let mut here = (0, v.len());
        for seg in path {
            let p = here.0;
            let basic = v[p] & 3;
            match seg {
                Seg::Key(k) => {
                    let Some(&kid) = self.keys()?.ids.get(k.as_bytes()) else {
                        return Ok(None);
                    };
                    if basic != OBJECT {
                        return Ok(None);
                    }
                    match object_child(v, p, kid) {
                        Some(c) => here = c,
                        None => return Ok(None),
                    }
                }
                Seg::Index(i) => {
                    if basic != ARRAY {
                        return Ok(None);
                    }
                    match array_child(v, p, *i) {
                        Some(c) => here = c,
                        None => return Ok(None),
                    }
                }
            }
        }
        Ok(Some(here))
    }
}

enum Out<'a> {
    Bool(Vec<Option<bool>>),
    Int(Vec<Option<i64>>),
    F32(Vec<Option<f32>>),
    F64(Vec<Option<f64>>),
    Bytes(Vec<Option<&'a [u8]>>),
}

fn le<const N: usize>(v: &[u8], pos: usize) -> [u8; N] {
    let mut b = [0u8; N];
    if let Some(s) = v.get(pos..pos + N) {
        b.copy_from_slice(s);
    }
    b
}

/// Reads the scalar at `pos` (checked) as `kind` into `out`; `Mismatch(at)` when its stored
/// type is not exactly `kind`'s.
fn read<'a>(v: &'a [u8], pos: usize, kind: Kind, at: usize, out: &mut Out<'a>) -> Res<()> {
    let (basic, info) = match (v[pos] & 3, v[pos] >> 2) {
        (SHORT_STR, _) => (PRIMITIVE, STRING),
        x => x,
    };
    let null = basic == PRIMITIVE && info == NULL;
    let mismatch = Err(VariantFail::Mismatch(at));
    if basic != PRIMITIVE && !null {
        return mismatch;
    }
    match out {
        Out::Bool(o) => o.push(match info {
            _ if null => None,
            TRUE => Some(true),
            FALSE => Some(false),
            _ => return mismatch,
        }),
        Out::Int(o) => {
            if null {
                o.push(None);
            } else if (INT8..=INT64).contains(&info) {
                let x = match info {
                    INT8 => i8::from_le_bytes(le(v, pos + 1)) as i64,
                    4 => i16::from_le_bytes(le(v, pos + 1)) as i64,
                    5 => i32::from_le_bytes(le(v, pos + 1)) as i64,
                    _ => i64::from_le_bytes(le(v, pos + 1)),
                };
                let fits = match kind {
                    Kind::Int8 => i8::try_from(x).is_ok(),
                    Kind::Int16 => i16::try_from(x).is_ok(),
                    Kind::Int32 => i32::try_from(x).is_ok(),
                    _ => true,
                };
                if !fits {
                    return Err(VariantFail::Unsupported);
                }
                o.push(Some(x));
            } else {
                return mismatch;
            }
        }
        Out::F32(o) => o.push(match info {
            _ if null => None,
            FLOAT => Some(f32::from_le_bytes(le(v, pos + 1))),
            _ => return mismatch,
        }),
        Out::F64(o) => o.push(match info {
            _ if null => None,
            DOUBLE => Some(f64::from_le_bytes(le(v, pos + 1))),
            _ => return mismatch,
        }),
        Out::Bytes(o) => {
            let want_str = matches!(kind, Kind::Utf8 | Kind::LargeUtf8);
            if null {
                o.push(None);
            } else if want_str && info == STRING {
                let s = if v[pos] & 3 == SHORT_STR {
                    v.get(pos + 1..pos + 1 + (v[pos] >> 2) as usize)
                } else {
                    v.get(pos + 5..pos + 5 + uint(v, pos + 1, 4))
                };
                match s {
                    Some(s) if std::str::from_utf8(s).is_ok() => o.push(Some(s)),
                    _ => return Err(VariantFail::Unsupported),
                }
            } else if !want_str && info == BINARY {
                match v.get(pos + 5..pos + 5 + uint(v, pos + 1, 4)) {
                    Some(s) => o.push(Some(s)),
                    None => return Err(VariantFail::Unsupported),
                }
            } else {
                return mismatch;
            }
        }
    }
    Ok(())
}

fn push_null(out: &mut Out<'_>) {
    match out {
        Out::Bool(o) => o.push(None),
        Out::Int(o) => o.push(None),
        Out::F32(o) => o.push(None),
        Out::F64(o) => o.push(None),
        Out::Bytes(o) => o.push(None),
    }
}

enum Bin<'a> {
    Small(&'a arrow_array::BinaryArray),
    Large(&'a arrow_array::LargeBinaryArray),
}

impl<'a> Bin<'a> {
    fn of(a: &'a ArrayRef) -> Res<Self> {
        match a.data_type() {
            DataType::Binary => Ok(Bin::Small(a.as_binary::<i32>())),
            DataType::LargeBinary => Ok(Bin::Large(a.as_binary::<i64>())),
            _ => Err(VariantFail::Unsupported),
        }
    }
    fn get(&self, i: usize) -> Option<&'a [u8]> {
        match self {
            Bin::Small(a) => a.is_valid(i).then(|| a.value(i)),
            Bin::Large(a) => a.is_valid(i).then(|| a.value(i)),
        }
    }
}

/// `variant_get` of one chunk (a `struct<value: binary, metadata: binary>` array) for scalar
/// types: one Arrow array per path, nulls for SQL null rows, missing paths and VARIANT nulls.
/// Each row is checked whole first, then its paths are read in order, as the reference does.
pub fn variant_get_scalars(chunk: &StructArray, paths: &[(Vec<Seg>, Kind)]) -> Res<Vec<ArrayRef>> {
    if chunk.num_columns() != 2 {
        return Err(VariantFail::Unsupported);
    }
    let values = Bin::of(chunk.column(0))?;
    let metas = Bin::of(chunk.column(1))?;
    let n = chunk.len();
    let mut outs: Vec<Out<'_>> = paths
        .iter()
        .map(|(_, k)| match k {
            Kind::Bool => Out::Bool(Vec::with_capacity(n)),
            Kind::Int8 | Kind::Int16 | Kind::Int32 | Kind::Int64 => Out::Int(Vec::with_capacity(n)),
            Kind::Float32 => Out::F32(Vec::with_capacity(n)),
            Kind::Float64 => Out::F64(Vec::with_capacity(n)),
            _ => Out::Bytes(Vec::with_capacity(n)),
        })
        .collect();
    let mut cache = None;
    for r in 0..n {
        if chunk.is_null(r) {
            outs.iter_mut().for_each(push_null);
            continue;
        }
        let (Some(value), Some(metadata)) = (values.get(r), metas.get(r)) else {
            return Err(VariantFail::Unsupported);
        };
        let mut row = Row {
            value,
            metadata,
            cache: &mut cache,
        };
        row.check()?;
        for (at, ((path, kind), out)) in paths.iter().zip(outs.iter_mut()).enumerate() {
            match row.walk(path)? {
                Some((p, _)) => read(value, p, *kind, at, out)?,
                None => push_null(out),
            }
        }
    }
    Ok(paths
        .iter()
        .zip(outs)
        .map(|((_, kind), out)| -> ArrayRef {
            match (kind, out) {
                (_, Out::Bool(o)) => Arc::new(BooleanArray::from(o)),
                (Kind::Int8, Out::Int(o)) => Arc::new(
                    o.into_iter()
                        .map(|x| x.map(|x| x as i8))
                        .collect::<Int8Array>(),
                ),
                (Kind::Int16, Out::Int(o)) => Arc::new(
                    o.into_iter()
                        .map(|x| x.map(|x| x as i16))
                        .collect::<Int16Array>(),
                ),
                (Kind::Int32, Out::Int(o)) => Arc::new(
                    o.into_iter()
                        .map(|x| x.map(|x| x as i32))
                        .collect::<Int32Array>(),
                ),
                (_, Out::Int(o)) => Arc::new(Int64Array::from(o)),
                (_, Out::F32(o)) => Arc::new(Float32Array::from(o)),
                (_, Out::F64(o)) => Arc::new(Float64Array::from(o)),
                (Kind::Utf8, Out::Bytes(o)) => Arc::new(
                    o.into_iter()
                        .map(|x| x.map(|b| std::str::from_utf8(b).unwrap_or_default()))
                        .collect::<StringArray>(),
                ),
                (Kind::LargeUtf8, Out::Bytes(o)) => Arc::new(
                    o.into_iter()
                        .map(|x| x.map(|b| std::str::from_utf8(b).unwrap_or_default()))
                        .collect::<LargeStringArray>(),
                ),
                (Kind::LargeBinary, Out::Bytes(o)) => Arc::new(LargeBinaryArray::from(o)),
                (_, Out::Bytes(o)) => Arc::new(BinaryArray::from(o)),
            }
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::builder::BinaryBuilder;
    use arrow_schema::{Field, Fields};

    fn column(rows: &[Option<(Vec<u8>, Vec<u8>)>]) -> StructArray {
        let (mut v, mut m) = (BinaryBuilder::new(), BinaryBuilder::new());
        for r in rows {
            match r {
                Some((a, b)) => {
                    v.append_value(a);
                    m.append_value(b);
                }
                None => {
                    v.append_value(b"");
                    m.append_value(b"");
                }
            }
        }
        let fields = Fields::from(vec![
            Field::new("value", DataType::Binary, true),
            Field::new("metadata", DataType::Binary, true),
        ]);
        let nulls =
            arrow_buffer::NullBuffer::from(rows.iter().map(|r| r.is_some()).collect::<Vec<_>>());
        StructArray::new(
            fields,
            vec![Arc::new(v.finish()), Arc::new(m.finish())],
            Some(nulls),
        )
    }

    /// {"a": x} with x a DOUBLE; metadata ["a"].
    fn row(x: f64) -> (Vec<u8>, Vec<u8>) {
        let mut v = vec![OBJECT, 1, 0, 0, 9, DOUBLE << 2];
        v.extend_from_slice(&x.to_le_bytes());
        (v, vec![VERSION, 1, 0, 1, b'a'])
    }

    fn path(k: &str) -> Vec<Seg> {
        vec![Seg::Key(k.into())]
    }

    #[test]
    fn variant_get_reads_doubles_nulls_and_missing() {
        let col = column(&[Some(row(1.5)), None, Some(row(-2.0))]);
        let out = variant_get_scalars(
            &col,
            &[(path("a"), Kind::Float64), (path("b"), Kind::Float64)],
        )
        .expect("read");
        let a = out[0].as_primitive::<arrow_array::types::Float64Type>();
        assert_eq!(
            a.iter().collect::<Vec<_>>(),
            vec![Some(1.5), None, Some(-2.0)]
        );
        assert_eq!(out[1].null_count(), 3);
    }

    #[test]
    fn variant_get_refuses_other_types_and_malformed_rows() {
        let col = column(&[Some(row(1.5))]);
        let got = variant_get_scalars(&col, &[(path("a"), Kind::Float32)]);
        assert_eq!(got.err(), Some(VariantFail::Mismatch(0)));
        let (mut v, m) = row(1.5);
        v.pop();
        let got = variant_get_scalars(
            &column(&[Some((v, m.clone()))]),
            &[(path("a"), Kind::Float64)],
        );
        assert_eq!(
            got.err(),
            Some(VariantFail::Malformed(
                "object size does not match its container".into()
            ))
        );
        let (v, _) = row(1.5);
        let got = variant_get_scalars(&column(&[Some((v, vec![]))]), &[(path("a"), Kind::Float64)]);
        assert_eq!(
            got.err(),
            Some(VariantFail::Malformed("empty metadata".into()))
        );
        // a field id past the dictionary
        let (v, _) = row(1.5);
        let got = variant_get_scalars(
            &column(&[Some((v, vec![VERSION, 0, 0]))]),
            &[(path("a"), Kind::Float64)],
        );
        assert_eq!(
            got.err(),
            Some(VariantFail::Malformed(
                "object field id is not in the metadata dictionary".into()
            ))
        );
    }

    #[test]
    fn variant_get_leaves_integer_overflow_to_the_reference() {
        // {"a": 300 as INT16}
        let v = vec![OBJECT, 1, 0, 0, 3, 4 << 2, 0x2C, 0x01];
        let col = column(&[Some((v, vec![VERSION, 1, 0, 1, b'a']))]);
        let got = variant_get_scalars(&col, &[(path("a"), Kind::Int8)]);
        assert_eq!(got.err(), Some(VariantFail::Unsupported));
        let out = variant_get_scalars(&col, &[(path("a"), Kind::Int64)]).expect("read");
        assert_eq!(
            out[0]
                .as_primitive::<arrow_array::types::Int64Type>()
                .value(0),
            300
        );
    }
}
