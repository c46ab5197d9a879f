//! The Parquet Variant binary encoding, checked, and VARIANT path reads over Arrow columns: the
//! per-row kernel of `paimon_rs.variant_get` (python/paimon_rs/variant_path.py is the API layer
//! and the reference: the checks, their order and their messages are the same).

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{
    Array, ArrayRef, BinaryArray, BooleanArray, Date32Array, Decimal128Array, Float32Array,
    Float64Array, Int16Array, Int32Array, Int64Array, Int8Array, LargeBinaryArray,
    LargeStringArray, StringArray, StructArray, TimestampMicrosecondArray,
};
use arrow_schema::DataType;

mod nested;
pub use nested::variant_get_nested;

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
const DECIMAL8: u8 = 9;
const DECIMAL16: u8 = 10;
const DATE: u8 = 11;
const TIMESTAMP: u8 = 12;
const TIMESTAMP_NTZ: u8 = 13;
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
    /// `variant_get` of a nested type: in path number `.0`, a value is not of the type at
    /// node `.1` of the requested type (its nodes numbered in preorder: a struct's fields in
    /// order, a list's item, a map's item; node 0 is the type itself).
    MismatchAt(usize, usize),
    /// A case this kernel leaves to the Python reference (e.g. an integer out of the Arrow
    /// type's range, invalid UTF-8 in a string, a null child): the caller redoes the chunk there.
    Unsupported,
    /// `variant_replace(strict=True)`: path number `.0` is missing in a row.
    Missing(usize),
    /// `variant_set`: a parent of path number `.0` is missing.
    NoParent(usize),
    /// `variant_set`: path number `.0` ends in an array index past the end.
    IndexInsert(usize),
    /// `variant_set`: the parent of path number `.0` is not an object.
    NotObject(usize),
    /// A rebuilt value or metadata is over the 128 MiB VARIANT limit.
    SizeLimit,
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
#[derive(Debug, Clone, PartialEq, Eq)]
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
    /// `date32`: a stored DATE.
    Date32,
    /// `timestamp[us]` (a stored TIMESTAMP_NTZ) or, with its time zone, `timestamp[us, tz]`
    /// (a stored TIMESTAMP).
    TimestampMicros(Option<Arc<str>>),
    /// `decimal128(precision, scale)`: a stored DECIMAL4/8/16 of exactly this scale.
    Decimal128(u8, i8),
}

/// Days from 1970-01-01 to Python's `date.min` / `date.max` (the reference decodes through
/// `datetime`: past them it raises, so the kernel leaves such rows to it).
const DATE_DAYS: std::ops::RangeInclusive<i64> = -719_162..=2_932_896;
/// Microseconds from the epoch to Python's `datetime.min` / `datetime.max`.
const TS_MICROS: std::ops::RangeInclusive<i64> = -62_135_596_800_000_000..=253_402_300_799_999_999;

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
    let mut children = Children::new();
    check_object(v, pos, end, &mut children, &mut Vec::new())?;
    let size_w = if (v[pos] >> 6) & 1 == 1 { 4 } else { 1 };
    let (n, id_w, _, id_start, _, _) = object_layout(v, pos, size_w);
    let ids = (0..n).map(|i| uint(v, id_start + i * id_w, id_w)).collect();
    Ok((ids, children))
}

/// Checks the object at [pos, end) (its header, offsets and size; not its children), appends
/// the (start, end) of each child in stored order to `children`; its largest field id (None:
/// no fields). `tmp` is scratch space: no allocation once it has grown (the check's hot path).
fn check_object(
    v: &[u8],
    pos: usize,
    end: usize,
    children: &mut Children,
    tmp: &mut Vec<usize>,
) -> Res<Option<usize>> {
    need(pos, 2, end)?;
    let info = v[pos] >> 2;
    let size_w = if (info >> 4) & 1 == 1 { 4 } else { 1 };
    need(pos + 1, size_w, end)?;
    let (n, id_w, off_w, id_start, off_start, data) = object_layout(v, pos, size_w);
    need(pos, data - pos, end)?;
    let total = uint(v, off_start + n * off_w, off_w);
    if data.checked_add(total) != Some(end) {
        return malformed("object size does not match its container");
    }
    tmp.clear();
    tmp.extend((0..n).map(|i| uint(v, id_start + i * id_w, id_w)));
    tmp.sort_unstable();
    if tmp.windows(2).any(|p| p[0] == p[1]) {
        return malformed("duplicate object field id");
    }
    let max_id = tmp.last().copied();
    tmp.clear();
    tmp.extend((0..n).map(|i| uint(v, off_start + i * off_w, off_w)));
    tmp.sort_unstable();
    if tmp.windows(2).any(|p| p[0] == p[1])
        || tmp.last().is_some_and(|&o| o >= total)
        || (n > 0 && tmp[0] != 0)
        || (n == 0 && total != 0)
    {
        return malformed("invalid object offsets");
    }
    tmp.push(total);
    for i in 0..n {
        let o = uint(v, off_start + i * off_w, off_w);
        // the child ends where the next larger start begins (distinct: found exactly)
        let at = tmp.partition_point(|&x| x <= o);
        children.push((data + o, data + tmp[at]));
    }
    Ok(max_id)
}

fn array(v: &[u8], pos: usize, end: usize) -> Res<Children> {
    let mut children = Children::new();
    check_array(v, pos, end, &mut children)?;
    Ok(children)
}

/// Checks the array at [pos, end) (header, offsets, size; not its elements), appends the
/// (start, end) of each element to `children`.
fn check_array(v: &[u8], pos: usize, end: usize, children: &mut Children) -> Res<()> {
    need(pos, 2, end)?;
    let info = v[pos] >> 2;
    let size_w = if (info >> 2) & 1 == 1 { 4 } else { 1 };
    need(pos + 1, size_w, end)?;
    let n = uint(v, pos + 1, size_w);
    let off_w = ((info & 3) + 1) as usize;
    let off_start = pos + 1 + size_w;
    let data = off_start + (n + 1) * off_w;
    need(pos, data - pos, end)?;
    let first = children.len();
    let mut prev = uint(v, off_start, off_w);
    if prev != 0 {
        return malformed("invalid array offsets");
    }
    for i in 1..=n {
        let o = uint(v, off_start + i * off_w, off_w);
        if o < prev {
            children.truncate(first);
            return malformed("invalid array offsets");
        }
        children.push((data + prev, data + o));
        prev = o;
    }
    if data.checked_add(prev) != Some(end) {
        children.truncate(first);
        return malformed("array size does not match its container");
    }
    Ok(())
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

impl<'a, 'c> Row<'a, 'c> {
    /// Row `r` of a chunk's children, checked whole (a null child: left to the reference).
    fn checked(
        values: &Bin<'a>,
        metas: &Bin<'a>,
        r: usize,
        cache: &'c mut Option<(&'a [u8], Keys<'a>)>,
        scratch: &mut Scratch,
    ) -> Res<Self> {
        let (Some(value), Some(metadata)) = (values.get(r), metas.get(r)) else {
            return Err(VariantFail::Unsupported);
        };
        let mut row = Row {
            value,
            metadata,
            cache,
        };
        row.check(scratch)?;
        Ok(row)
    }

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
    /// `scratch`: reused between rows (no allocation per row).
    fn check(&mut self, scratch: &mut Scratch) -> Res<()> {
        if self.metadata.is_empty() {
            return malformed("empty metadata");
        }
        if self.metadata[0] & 0x0F != VERSION {
            return malformed("invalid metadata version");
        }
        let v = self.value;
        let Scratch(stack, tmp) = scratch;
        stack.clear();
        stack.push((0usize, v.len()));
        while let Some((p, e)) = stack.pop() {
            need(p, 1, e)?;
            match v[p] & 3 {
                OBJECT => {
                    if let Some(max) = check_object(v, p, e, stack, tmp)? {
                        if max >= self.keys()?.keys.len() {
                            return malformed("object field id is not in the metadata dictionary");
                        }
                    }
                }
                ARRAY => check_array(v, p, e, stack)?,
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
    fn walk(&mut self, path: &[Seg], frames: &mut Frames) -> Res<Option<(usize, usize)>> {
        let v = self.value;
        walk_frames(v, path, |k| Ok(self.keys()?.ids.get(k).copied()), frames)
    }
}

type Frames = Vec<(usize, usize)>;

/// Scratch space of [`Row::check`]: its stack and a buffer for sorting ids and offsets.
#[derive(Default)]
struct Scratch(Frames, Vec<usize>);

/// The (start, end) of the path's target in the checked value `v`, the (start, end) of each
/// container visited on `frames` (the reference's `_Row.walk`); None: missing. `lookup` gives
/// a key's id in the row's dictionary (None: not there).
fn walk_frames(
    v: &[u8],
    path: &[Seg],
    mut lookup: impl FnMut(&[u8]) -> Res<Option<usize>>,
    frames: &mut Frames,
) -> Res<Option<(usize, usize)>> {
    frames.clear();
    let mut here = (0, v.len());
    for seg in path {
        frames.push(here);
        let p = here.0;
        let Some(&head) = v.get(p) else {
            return malformed("value is truncated");
        };
        let next = match seg {
            Seg::Key(k) => {
                let Some(kid) = lookup(k.as_bytes())? else {
                    return Ok(None);
                };
                if head & 3 != OBJECT {
                    return Ok(None);
                }
                object_child(v, p, kid)
            }
            Seg::Index(i) => {
                if head & 3 != ARRAY {
                    return Ok(None);
                }
                array_child(v, p, *i)
            }
        };
        match next {
            Some(c) => here = c,
            None => return Ok(None),
        }
    }
    Ok(Some(here))
}

enum Out<'a> {
    Bool(Vec<Option<bool>>),
    Int(Vec<Option<i64>>),
    F32(Vec<Option<f32>>),
    F64(Vec<Option<f64>>),
    Bytes(Vec<Option<&'a [u8]>>),
    Dec(Vec<Option<i128>>),
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
fn read<'a>(v: &'a [u8], pos: usize, kind: &Kind, at: usize, out: &mut Out<'a>) -> Res<()> {
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
        Out::Int(o) if matches!(kind, Kind::Date32 | Kind::TimestampMicros(_)) => {
            let (want, range) = match kind {
                Kind::Date32 => (DATE, &DATE_DAYS),
                Kind::TimestampMicros(Some(_)) => (TIMESTAMP, &TS_MICROS),
                _ => (TIMESTAMP_NTZ, &TS_MICROS),
            };
            if null {
                o.push(None);
            } else if info == want {
                let x = if want == DATE {
                    i32::from_le_bytes(le(v, pos + 1)) as i64
                } else {
                    i64::from_le_bytes(le(v, pos + 1))
                };
                if !range.contains(&x) {
                    return Err(VariantFail::Unsupported);
                }
                o.push(Some(x));
            } else {
                return mismatch;
            }
        }
        Out::Dec(o) => {
            let Kind::Decimal128(precision, scale) = *kind else {
                return Err(VariantFail::Unsupported);
            };
            if null {
                o.push(None);
            } else if matches!(info, DECIMAL4..=DECIMAL16)
                && i16::from(v[pos + 1]) == i16::from(scale)
            {
                let x = match info {
                    DECIMAL4 => i32::from_le_bytes(le(v, pos + 2)) as i128,
                    DECIMAL8 => i64::from_le_bytes(le(v, pos + 2)) as i128,
                    _ => i128::from_le_bytes(le(v, pos + 2)),
                };
                // past the precision the reference's pa.array raises: its message, not ours
                if 10u128
                    .checked_pow(u32::from(precision))
                    .is_some_and(|max| x.unsigned_abs() >= max)
                {
                    return Err(VariantFail::Unsupported);
                }
                o.push(Some(x));
            } else {
                return mismatch;
            }
        }
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
        Out::Dec(o) => o.push(None),
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
    let mut outs: Vec<Out<'_>> = paths.iter().map(|(_, k)| out_for(k, n)).collect();
    let mut cache = None;
    let mut frames = Frames::new();
    let mut scratch = Scratch::default();
    for r in 0..n {
        if chunk.is_null(r) {
            outs.iter_mut().for_each(push_null);
            continue;
        }
        let mut row = Row::checked(&values, &metas, r, &mut cache, &mut scratch)?;
        let value = row.value;
        for (at, ((path, kind), out)) in paths.iter().zip(outs.iter_mut()).enumerate() {
            match row.walk(path, &mut frames)? {
                Some((p, _)) => read(value, p, kind, at, out)?,
                None => push_null(out),
            }
        }
    }
    paths
        .iter()
        .zip(outs)
        .map(|((_, kind), out)| finish(kind, out))
        .collect()
}

/// An empty output column of `kind`, room for `n` rows.
fn out_for<'a>(kind: &Kind, n: usize) -> Out<'a> {
    match kind {
        Kind::Bool => Out::Bool(Vec::with_capacity(n)),
        Kind::Int8
        | Kind::Int16
        | Kind::Int32
        | Kind::Int64
        | Kind::Date32
        | Kind::TimestampMicros(_) => Out::Int(Vec::with_capacity(n)),
        Kind::Decimal128(..) => Out::Dec(Vec::with_capacity(n)),
        Kind::Float32 => Out::F32(Vec::with_capacity(n)),
        Kind::Float64 => Out::F64(Vec::with_capacity(n)),
        _ => Out::Bytes(Vec::with_capacity(n)),
    }
}

/// The Arrow array of `kind` of an output column filled by [`read`] / [`push_null`].
fn finish(kind: &Kind, out: Out<'_>) -> Res<ArrayRef> {
    Ok(match (kind, out) {
        (Kind::Date32, Out::Int(o)) => Arc::new(
            o.into_iter()
                .map(|x| x.map(|x| x as i32))
                .collect::<Date32Array>(),
        ),
        (Kind::TimestampMicros(tz), Out::Int(o)) => {
            Arc::new(TimestampMicrosecondArray::from(o).with_timezone_opt(tz.clone()))
        }
        (Kind::Decimal128(p, s), Out::Dec(o)) => Arc::new(
            Decimal128Array::from(o)
                .with_precision_and_scale(*p, *s)
                .map_err(|_| VariantFail::Unsupported)?,
        ),
        (_, Out::Dec(_)) => return Err(VariantFail::Unsupported),
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
    })
}

// ---------------------------------------------------------------------------------------------
// variant_replace / variant_set

/// Java's GenericVariant / BinaryVariant size limit (128 MiB), value and metadata alike.
const SIZE_LIMIT: usize = 128 * 1024 * 1024;
const MAX_SHORT_STR: usize = 63;

/// The Arrow type of a replacement: what its values encode to, and the stored type it
/// replaces (exactly; a VARIANT null matches any, a null replacement any stored value).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Repl {
    Null,
    Bool,
    Int,
    F32,
    F64,
    Str,
    Bin,
    Date,
    /// TIMESTAMP (with a time zone) or TIMESTAMP_NTZ.
    Ts(bool),
    /// Precision and scale.
    Dec(u8, u8),
}

fn repl_of(t: &DataType) -> Option<Repl> {
    use arrow_schema::TimeUnit;
    Some(match t {
        DataType::Null => Repl::Null,
        DataType::Boolean => Repl::Bool,
        DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::Int64 => Repl::Int,
        DataType::Float32 => Repl::F32,
        DataType::Float64 => Repl::F64,
        DataType::Utf8 | DataType::LargeUtf8 => Repl::Str,
        DataType::Binary | DataType::LargeBinary => Repl::Bin,
        DataType::Date32 => Repl::Date,
        DataType::Timestamp(TimeUnit::Microsecond, tz) => Repl::Ts(tz.is_some()),
        DataType::Decimal128(p, s) => Repl::Dec(*p, u8::try_from(*s).ok()?),
        _ => return None,
    })
}

/// Whether the stored scalar at `pos` may be replaced by a value of `t` (the reference's
/// `_scalar_matches`).
fn repl_matches(v: &[u8], pos: usize, t: Repl) -> bool {
    let Some(&head) = v.get(pos) else {
        return false;
    };
    let (basic, info) = match (head & 3, head >> 2) {
        (SHORT_STR, _) => (PRIMITIVE, STRING),
        x => x,
    };
    if t == Repl::Null || (basic == PRIMITIVE && info == NULL) {
        return true;
    }
    if basic != PRIMITIVE {
        return false;
    }
    match t {
        Repl::Null => true,
        Repl::Bool => info == TRUE || info == FALSE,
        Repl::Int => (INT8..=INT64).contains(&info),
        Repl::F32 => info == FLOAT,
        Repl::F64 => info == DOUBLE,
        Repl::Str => info == STRING,
        Repl::Bin => info == BINARY,
        Repl::Date => info == DATE,
        Repl::Ts(tz) => info == if tz { TIMESTAMP } else { TIMESTAMP_NTZ },
        Repl::Dec(_, scale) => {
            (DECIMAL4..=DECIMAL16).contains(&info) && v.get(pos + 1) == Some(&scale)
        }
    }
}

fn len_prefixed(out: &mut Vec<u8>, info: u8, b: &[u8]) -> Res<()> {
    let n = u32::try_from(b.len()).map_err(|_| VariantFail::SizeLimit)?;
    out.push(info << 2 | PRIMITIVE);
    out.extend_from_slice(&n.to_le_bytes());
    out.extend_from_slice(b);
    Ok(())
}

/// Encodes row `i` of the replacement array `a` (of type `t`) into `out` as the reference's
/// `_encode_scalar` does: integers in the narrowest width, short strings up to 63 bytes,
/// decimals in the narrowest of DECIMAL4/8/16 their digits and scale allow.
fn encode(a: &dyn Array, i: usize, t: Repl, out: &mut Vec<u8>) -> Res<()> {
    use arrow_array::types::{
        Date32Type, Decimal128Type, Float32Type, Float64Type, Int16Type, Int32Type, Int64Type,
        Int8Type, TimestampMicrosecondType,
    };
    out.clear();
    if t == Repl::Null || a.is_null(i) {
        out.push(NULL << 2 | PRIMITIVE);
        return Ok(());
    }
    let prim = |out: &mut Vec<u8>, info: u8, payload: &[u8]| {
        out.push(info << 2 | PRIMITIVE);
        out.extend_from_slice(payload);
    };
    match t {
        Repl::Null => out.push(NULL << 2 | PRIMITIVE),
        Repl::Bool => prim(out, if a.as_boolean().value(i) { TRUE } else { FALSE }, &[]),
        Repl::Int => {
            let x = match a.data_type() {
                DataType::Int8 => a.as_primitive::<Int8Type>().value(i) as i64,
                DataType::Int16 => a.as_primitive::<Int16Type>().value(i) as i64,
                DataType::Int32 => a.as_primitive::<Int32Type>().value(i) as i64,
                _ => a.as_primitive::<Int64Type>().value(i),
            };
            if let Ok(x) = i8::try_from(x) {
                prim(out, INT8, &x.to_le_bytes());
            } else if let Ok(x) = i16::try_from(x) {
                prim(out, INT8 + 1, &x.to_le_bytes());
            } else if let Ok(x) = i32::try_from(x) {
                prim(out, INT8 + 2, &x.to_le_bytes());
            } else {
                prim(out, INT64, &x.to_le_bytes());
            }
        }
        Repl::F32 => prim(
            out,
            FLOAT,
            &a.as_primitive::<Float32Type>().value(i).to_le_bytes(),
        ),
        Repl::F64 => prim(
            out,
            DOUBLE,
            &a.as_primitive::<Float64Type>().value(i).to_le_bytes(),
        ),
        Repl::Str => {
            let s = match a.data_type() {
                DataType::LargeUtf8 => a.as_string::<i64>().value(i),
                _ => a.as_string::<i32>().value(i),
            };
            if s.len() <= MAX_SHORT_STR {
                out.push((s.len() as u8) << 2 | SHORT_STR);
                out.extend_from_slice(s.as_bytes());
            } else {
                len_prefixed(out, STRING, s.as_bytes())?;
            }
        }
        Repl::Bin => {
            let b = match a.data_type() {
                DataType::LargeBinary => a.as_binary::<i64>().value(i),
                _ => a.as_binary::<i32>().value(i),
            };
            len_prefixed(out, BINARY, b)?;
        }
        Repl::Date => prim(
            out,
            DATE,
            &a.as_primitive::<Date32Type>().value(i).to_le_bytes(),
        ),
        Repl::Ts(tz) => {
            let x = a.as_primitive::<TimestampMicrosecondType>().value(i);
            prim(
                out,
                if tz { TIMESTAMP } else { TIMESTAMP_NTZ },
                &x.to_le_bytes(),
            );
        }
        Repl::Dec(precision, scale) => {
            let x = a.as_primitive::<Decimal128Type>().value(i);
            let digits = x.unsigned_abs().checked_ilog10().map_or(1, |d| d + 1);
            if digits > precision as u32 {
                // the reference raises "<value> exceeds Arrow precision <p>"
                return Err(VariantFail::Unsupported);
            }
            let (info, width) = if digits <= 9 && scale <= 9 {
                (DECIMAL4, 4)
            } else if digits <= 18 && scale <= 18 {
                (DECIMAL8, 8)
            } else {
                (DECIMAL16, 16)
            };
            out.push(info << 2 | PRIMITIVE);
            out.push(scale);
            out.extend_from_slice(&x.to_le_bytes()[..width]);
        }
    }
    Ok(())
}

/// Bytes (1-4) an unsigned `n` needs.
fn width(n: usize) -> usize {
    match n {
        0..=0xFF => 1,
        0x100..=0xFFFF => 2,
        0x1_0000..=0xFF_FFFF => 3,
        _ => 4,
    }
}

fn push_uint(out: &mut Vec<u8>, x: usize, w: usize) {
    out.extend_from_slice(&(x as u64).to_le_bytes()[..w]);
}

/// An object of `fields` (id, encoded value) in this order, the data laid out in it, the
/// narrowest widths (the reference's `_build_object`).
fn build_object(fields: &[(usize, &[u8])]) -> Vec<u8> {
    let n = fields.len();
    let size: usize = fields.iter().map(|(_, b)| b.len()).sum();
    let id_w = width(fields.iter().map(|(i, _)| *i).max().unwrap_or(0));
    let off_w = width(size);
    let large = n > 0xFF;
    let mut out = Vec::with_capacity(1 + 4 + n * id_w + (n + 1) * off_w + size);
    out.push((((large as u8) << 4 | ((id_w - 1) as u8) << 2 | (off_w - 1) as u8) << 2) | OBJECT);
    push_uint(&mut out, n, if large { 4 } else { 1 });
    for (i, _) in fields {
        push_uint(&mut out, *i, id_w);
    }
    push_parts(&mut out, fields.iter().map(|(_, b)| *b), off_w);
    out
}

/// The offsets (`w` bytes each, the total last) of `parts`, then the parts.
fn push_parts<'b>(out: &mut Vec<u8>, parts: impl Iterator<Item = &'b [u8]> + Clone, w: usize) {
    let mut off = 0;
    for b in parts.clone() {
        push_uint(out, off, w);
        off += b.len();
    }
    push_uint(out, off, w);
    for b in parts {
        out.extend_from_slice(b);
    }
}

/// An array of `items` (the reference's `_build_array`).
fn build_array(items: &[&[u8]]) -> Vec<u8> {
    let n = items.len();
    let size: usize = items.iter().map(|b| b.len()).sum();
    let off_w = width(size);
    let large = n > 0xFF;
    let mut out = Vec::with_capacity(1 + 4 + (n + 1) * off_w + size);
    out.push((((large as u8) << 2 | (off_w - 1) as u8) << 2) | ARRAY);
    push_uint(&mut out, n, if large { 4 } else { 1 });
    push_parts(&mut out, items.iter().copied(), off_w);
    out
}

/// A metadata dictionary of `keys` in this order (the reference's `_metadata_with`).
fn metadata_with(keys: &[&[u8]]) -> Vec<u8> {
    let total: usize = keys.iter().map(|k| k.len()).sum();
    let w = width(total.max(keys.len()));
    let mut out = Vec::with_capacity(1 + (keys.len() + 2) * w + total);
    out.push(VERSION | ((w - 1) as u8) << 6);
    push_uint(&mut out, keys.len(), w);
    push_parts(&mut out, keys.iter().copied(), w);
    out
}

/// A row's dictionary while it is edited: the parsed keys and those appended for new fields.
struct Dict<'k, 'p> {
    base: Option<&'k Keys<'k>>,
    extra: Vec<&'p [u8]>,
}

impl Dict<'_, '_> {
    fn base_len(&self) -> usize {
        self.base.map_or(0, |k| k.keys.len())
    }
    fn id(&self, key: &[u8]) -> Option<usize> {
        self.base
            .and_then(|k| k.ids.get(key).copied())
            .or_else(|| Some(self.base_len() + self.extra.iter().position(|e| *e == key)?))
    }
    fn name(&self, id: usize) -> Option<&[u8]> {
        match self.base {
            Some(k) if id < k.keys.len() => Some(k.keys[id]),
            _ => self.extra.get(id.checked_sub(self.base_len())?).copied(),
        }
    }
}

/// The value `v` with the target of `path` (its containers `frames`) replaced by `new`, or,
/// with `insert` (the key's id), `new` added to the object at the last frame under the path's
/// last key, placed before the first field whose name is greater in UTF-8 bytes (the
/// reference's `_rebuild`): every enclosing container is rebuilt bottom-up.
fn rebuild(
    v: &[u8],
    path: &[Seg],
    frames: &[(usize, usize)],
    new: Vec<u8>,
    insert: Option<usize>,
    dict: &Dict<'_, '_>,
) -> Res<Vec<u8>> {
    let mut child = new;
    for (depth, &(p, e)) in frames.iter().enumerate().rev() {
        child = match &path[depth] {
            Seg::Key(k) => {
                let (ids, children) = object(v, p, e)?;
                let mut fields: Vec<(usize, &[u8])> = ids
                    .iter()
                    .zip(&children)
                    .map(|(&i, &(a, b))| (i, &v[a..b]))
                    .collect();
                match insert.filter(|_| depth + 1 == frames.len()) {
                    Some(kid) => {
                        let mut at = fields.len();
                        for (j, (i, _)) in fields.iter().enumerate() {
                            if dict.name(*i).ok_or(VariantFail::Unsupported)? > k.as_bytes() {
                                at = j;
                                break;
                            }
                        }
                        fields.insert(at, (kid, &child));
                    }
                    None => {
                        let kid = dict.id(k.as_bytes());
                        let j = ids
                            .iter()
                            .position(|&i| Some(i) == kid)
                            .ok_or(VariantFail::Unsupported)?;
                        fields[j].1 = &child;
                    }
                }
                build_object(&fields)
            }
            Seg::Index(i) => {
                let mut items: Vec<&[u8]> =
                    array(v, p, e)?.iter().map(|&(a, b)| &v[a..b]).collect();
                *items.get_mut(*i).ok_or(VariantFail::Unsupported)? = &child;
                build_array(&items)
            }
        };
    }
    Ok(child)
}

/// One path of `variant_replace` / `variant_set` and its replacement values: row `r` of the
/// chunk takes `values[r]`, or `values[0]` when `broadcast` (a `pa.Scalar`).
pub struct VariantEdit {
    pub path: Vec<Seg>,
    pub values: ArrayRef,
    pub broadcast: bool,
}

/// The last rebuilt metadata: the row's metadata, the keys appended, the index in `built`.
type LastMeta<'a> = (&'a [u8], Vec<&'a [u8]>, usize);

/// The binary children of a chunk, written row by row.
enum BinOut {
    Small(arrow_array::builder::BinaryBuilder),
    Large(arrow_array::builder::LargeBinaryBuilder),
}

impl BinOut {
    fn like(b: &Bin<'_>, rows: usize, bytes: usize) -> Self {
        match b {
            Bin::Small(_) => BinOut::Small(arrow_array::builder::BinaryBuilder::with_capacity(
                rows, bytes,
            )),
            Bin::Large(_) => BinOut::Large(
                arrow_array::builder::LargeBinaryBuilder::with_capacity(rows, bytes),
            ),
        }
    }
    fn push(&mut self, x: Option<&[u8]>) {
        match (self, x) {
            (BinOut::Small(b), Some(x)) => b.append_value(x),
            (BinOut::Small(b), None) => b.append_null(),
            (BinOut::Large(b), Some(x)) => b.append_value(x),
            (BinOut::Large(b), None) => b.append_null(),
        }
    }
    fn finish(self) -> ArrayRef {
        match self {
            BinOut::Small(mut b) => Arc::new(b.finish()),
            BinOut::Large(mut b) => Arc::new(b.finish()),
        }
    }
}

impl Bin<'_> {
    /// Where row `i`'s bytes start in the values buffer.
    fn start(&self, i: usize) -> usize {
        match self {
            Bin::Small(a) => a.value_offsets()[i] as usize,
            Bin::Large(a) => a.value_offsets()[i] as usize,
        }
    }
    /// The whole values buffer (the offsets index it).
    fn data(&self) -> &[u8] {
        match self {
            Bin::Small(a) => a.values().as_slice(),
            Bin::Large(a) => a.values().as_slice(),
        }
    }
    /// The same offsets and nulls over `data` (as long as the values buffer).
    fn with_data(&self, data: Vec<u8>) -> ArrayRef {
        let data = arrow_buffer::Buffer::from_vec(data);
        match self {
            Bin::Small(a) => Arc::new(BinaryArray::new(
                a.offsets().clone(),
                data,
                a.nulls().cloned(),
            )),
            Bin::Large(a) => Arc::new(LargeBinaryArray::new(
                a.offsets().clone(),
                data,
                a.nulls().cloned(),
            )),
        }
    }
    fn value_bytes(&self) -> usize {
        match self {
            Bin::Small(a) => a.values().len(),
            Bin::Large(a) => a.values().len(),
        }
    }
}

/// `variant_replace` (`upsert` false) / `variant_set` (`upsert` true) of one chunk: the
/// rebuilt chunk, or None when no row changed. As the reference `_edit` does: each valid row
/// is checked whole, each path located (missing: refused with `strict`, or by `variant_set`
/// when its parent is missing, is not an object, or it ends in an index) and the stored type
/// checked, every row before any is rebuilt; then row by row the new keys are appended to the
/// row's dictionary and each path replaced or inserted in order. A replacement as long as the
/// value it replaces is written in place (the offsets stay), else the enclosing containers are
/// rebuilt. The metadata child is reused when no key was added.
pub fn variant_edit(
    chunk: &StructArray,
    edits: &[VariantEdit],
    strict: bool,
    upsert: bool,
) -> Res<Option<StructArray>> {
    if chunk.num_columns() != 2 {
        return Err(VariantFail::Unsupported);
    }
    let kinds = edits
        .iter()
        .map(|e| repl_of(e.values.data_type()).ok_or(VariantFail::Unsupported))
        .collect::<Res<Vec<_>>>()?;
    match edit_in_place(chunk, edits, &kinds, (strict, upsert))? {
        InPlace::Done(out) => Ok(out),
        InPlace::Rebuild => edit_rebuilding(chunk, edits, &kinds, strict, upsert),
    }
}

/// The rows' planned edits: the edit's number and its target's (start, end), None: an insert.
type Plans = Vec<(usize, Option<(usize, usize)>)>;

/// Locates each edit's path in the checked `row` and checks the stored type, as the reference
/// does (missing: refused with `strict`, or by `variant_set` when its parent is missing, is not
/// an object, or it ends in an index); `plans` gets the edits to apply.
fn plan_row(
    row: &mut Row<'_, '_>,
    edits: &[VariantEdit],
    kinds: &[Repl],
    (strict, upsert): (bool, bool),
    frames: &mut Frames,
    plans: &mut Plans,
) -> Res<()> {
    let value = row.value;
    plans.clear();
    for (at, e) in edits.iter().enumerate() {
        match row.walk(&e.path, frames)? {
            Some((p, end)) => {
                if !repl_matches(value, p, kinds[at]) {
                    return Err(VariantFail::Mismatch(at));
                }
                plans.push((at, Some((p, end))));
            }
            None if !upsert => {
                if strict {
                    return Err(VariantFail::Missing(at));
                }
            }
            None => {
                if frames.len() < e.path.len() {
                    return Err(VariantFail::NoParent(at));
                }
                if matches!(e.path.last(), Some(Seg::Index(_))) {
                    return Err(VariantFail::IndexInsert(at));
                }
                let parent = frames.last().map_or(0, |f| f.0);
                if value.get(parent).map(|h| h & 3) != Some(OBJECT) {
                    return Err(VariantFail::NotObject(at));
                }
                plans.push((at, None));
            }
        }
    }
    Ok(())
}

enum InPlace {
    /// Every edit was a same-size replacement: the patched chunk (None: no byte changed).
    Done(Option<StructArray>),
    /// A row needs an insert or a rebuilt container: redo the chunk by [`edit_rebuilding`].
    Rebuild,
}

/// The common case of `variant_replace`, as pypaimon patches it: every replacement has the
/// size of the value it replaces, so the offsets stay and the value bytes are copied once and
/// patched (no per-row buffer). Each valid row is still checked whole and planned by
/// [`plan_row`] in row order, so the refusals are the rebuilding path's; the first row that
/// needs an insert or a resize hands the chunk to [`edit_rebuilding`] (which checks again).
fn edit_in_place(
    chunk: &StructArray,
    edits: &[VariantEdit],
    kinds: &[Repl],
    mode: (bool, bool),
) -> Res<InPlace> {
    let values = Bin::of(chunk.column(0))?;
    let metas = Bin::of(chunk.column(1))?;
    // the patched copy is of the whole values buffer: a slice of a larger column (its offsets
    // not spanning the buffer) is rebuilt instead, holding only its own rows' bytes
    if values.start(0) != 0 || values.start(chunk.len()) != values.value_bytes() {
        return Ok(InPlace::Rebuild);
    }
    // a broadcast replacement is encoded once
    let mut once: Vec<Option<Vec<u8>>> = vec![None; edits.len()];
    for (at, e) in edits.iter().enumerate() {
        if e.broadcast {
            let mut enc = Vec::new();
            encode(e.values.as_ref(), 0, kinds[at], &mut enc)?;
            once[at] = Some(enc);
        }
    }
    let (mut cache, mut frames, mut scratch) = (None, Frames::new(), Scratch::default());
    let (mut plans, mut enc) = (Plans::new(), Vec::new());
    // (position in the values buffer, start in `bytes`, length)
    let mut patches: Vec<(usize, usize, usize)> = Vec::new();
    let mut bytes = Vec::new();
    for r in 0..chunk.len() {
        if chunk.is_null(r) {
            continue;
        }
        let mut row = Row::checked(&values, &metas, r, &mut cache, &mut scratch)?;
        plan_row(&mut row, edits, kinds, mode, &mut frames, &mut plans)?;
        let (value, start) = (row.value, values.start(r));
        for &(at, target) in &plans {
            let Some((a, b)) = target else {
                return Ok(InPlace::Rebuild);
            };
            let new = match &once[at] {
                Some(x) => x.as_slice(),
                None => {
                    encode(edits[at].values.as_ref(), r, kinds[at], &mut enc)?;
                    enc.as_slice()
                }
            };
            if b - a != new.len() || value.len() > SIZE_LIMIT {
                return Ok(InPlace::Rebuild);
            }
            if value[a..b] != *new {
                patches.push((start + a, bytes.len(), new.len()));
                bytes.extend_from_slice(new);
            }
        }
    }
    if patches.is_empty() {
        return Ok(InPlace::Done(None));
    }
    let mut data = values.data().to_vec();
    for &(at, from, len) in &patches {
        data[at..at + len].copy_from_slice(&bytes[from..from + len]);
    }
    let patched = values.with_data(data);
    let DataType::Struct(fields) = chunk.data_type() else {
        return Err(VariantFail::Unsupported);
    };
    StructArray::try_new(
        fields.clone(),
        vec![patched, chunk.column(1).clone()],
        chunk.nulls().cloned(),
    )
    .map(|a| InPlace::Done(Some(a)))
    .map_err(|_| VariantFail::Unsupported)
}

/// [`variant_edit`] row by row into new children: inserts and resized values rebuild their
/// enclosing containers, new keys extend the row's dictionary.
fn edit_rebuilding(
    chunk: &StructArray,
    edits: &[VariantEdit],
    kinds: &[Repl],
    strict: bool,
    upsert: bool,
) -> Res<Option<StructArray>> {
    let values = Bin::of(chunk.column(0))?;
    let metas = Bin::of(chunk.column(1))?;
    let n = chunk.len();
    let mut out_values = BinOut::like(&values, n, values.value_bytes());
    // rows given new metadata: (row, index into `built`)
    let mut new_metas: Vec<(usize, usize)> = Vec::new();
    let mut built: Vec<Vec<u8>> = Vec::new();
    let mut last_meta: Option<LastMeta<'_>> = None;
    let mut cache = None;
    let mut frames = Frames::new();
    let mut scratch = Scratch::default();
    let mut enc = Vec::new();
    let mut plans: Plans = Vec::new();
    let mut too_large = false;
    let mut touched = false;
    for r in 0..n {
        let original = values.get(r);
        if chunk.is_null(r) {
            out_values.push(original);
            continue;
        }
        let mut row = Row::checked(&values, &metas, r, &mut cache, &mut scratch)?;
        let (value, metadata) = (row.value, row.metadata);
        plan_row(
            &mut row,
            edits,
            kinds,
            (strict, upsert),
            &mut frames,
            &mut plans,
        )?;
        if plans.is_empty() || too_large {
            out_values.push(original);
            continue;
        }
        // the rebuild (all checks of this row passed)
        let needs_keys = plans
            .iter()
            .any(|(at, _)| edits[*at].path.iter().any(|s| matches!(s, Seg::Key(_))));
        let plans = plans.iter().map(|&(at, target)| (at, target.is_none()));
        let mut dict = Dict {
            base: if needs_keys { Some(row.keys()?) } else { None },
            extra: Vec::new(),
        };
        for (at, insert) in plans.clone() {
            if let (true, Some(Seg::Key(k))) = (insert, edits[at].path.last()) {
                if dict.id(k.as_bytes()).is_none() {
                    dict.extra.push(k.as_bytes());
                }
            }
        }
        let mut cur = std::borrow::Cow::Borrowed(value);
        for (at, insert) in plans {
            let e = &edits[at];
            encode(
                e.values.as_ref(),
                if e.broadcast { 0 } else { r },
                kinds[at],
                &mut enc,
            )?;
            let target = walk_frames(&cur, &e.path, |k| Ok(dict.id(k)), &mut frames)?;
            cur = match (target, insert) {
                (Some((a, b)), _) if b - a == enc.len() => {
                    let mut owned = cur.into_owned();
                    owned[a..b].copy_from_slice(&enc);
                    std::borrow::Cow::Owned(owned)
                }
                (Some(_), _) => std::borrow::Cow::Owned(rebuild(
                    &cur,
                    &e.path,
                    &frames,
                    enc.clone(),
                    None,
                    &dict,
                )?),
                (None, true) => {
                    let Some(Seg::Key(k)) = e.path.last() else {
                        return Err(VariantFail::Unsupported);
                    };
                    let kid = dict.id(k.as_bytes()).ok_or(VariantFail::Unsupported)?;
                    std::borrow::Cow::Owned(rebuild(
                        &cur,
                        &e.path,
                        &frames,
                        enc.clone(),
                        Some(kid),
                        &dict,
                    )?)
                }
                (None, false) => return Err(VariantFail::Unsupported),
            };
        }
        let meta_len = if dict.extra.is_empty() {
            metadata.len()
        } else {
            let hit = matches!(&last_meta, Some((m, x, _)) if *m == metadata && *x == dict.extra);
            if !hit {
                let base = dict.base.map(|k| k.keys.as_slice()).unwrap_or(&[]);
                let keys: Vec<&[u8]> = base.iter().chain(&dict.extra).copied().collect();
                built.push(metadata_with(&keys));
                last_meta = Some((metadata, dict.extra.clone(), built.len() - 1));
            }
            let idx = last_meta.as_ref().map_or(0, |l| l.2);
            new_metas.push((r, idx));
            built[idx].len()
        };
        if cur.len() > SIZE_LIMIT || meta_len > SIZE_LIMIT {
            // raised once every row is checked (the reference checks all rows first)
            too_large = true;
        }
        if !dict.extra.is_empty() || *cur != *value {
            touched = true;
        }
        out_values.push(Some(&cur));
    }
    if too_large {
        return Err(VariantFail::SizeLimit);
    }
    if !touched {
        return Ok(None);
    }
    let meta_col = if new_metas.is_empty() {
        chunk.column(1).clone()
    } else {
        let mut out = BinOut::like(&metas, n, metas.value_bytes());
        let mut next = new_metas.iter().peekable();
        for r in 0..n {
            match next.peek() {
                Some(&&(row, idx)) if row == r => {
                    out.push(Some(&built[idx]));
                    next.next();
                }
                _ => out.push(metas.get(r)),
            }
        }
        out.finish()
    };
    let DataType::Struct(fields) = chunk.data_type() else {
        return Err(VariantFail::Unsupported);
    };
    StructArray::try_new(
        fields.clone(),
        vec![out_values.finish(), meta_col],
        chunk.nulls().cloned(),
    )
    .map(Some)
    .map_err(|_| VariantFail::Unsupported)
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

    /// {"a": x} with x the primitive of type `info` and payload `b`; metadata ["a"].
    fn prim_row(info: u8, b: &[u8]) -> (Vec<u8>, Vec<u8>) {
        let mut v = vec![OBJECT, 1, 0, 0, (1 + b.len()) as u8, info << 2];
        v.extend_from_slice(b);
        (v, vec![VERSION, 1, 0, 1, b'a'])
    }

    #[test]
    fn variant_get_reads_dates_timestamps_and_decimals_exactly() {
        let date = prim_row(DATE, &19_782i32.to_le_bytes());
        let ts = prim_row(TIMESTAMP, &1_700_000_000_000_001i64.to_le_bytes());
        let ntz = prim_row(TIMESTAMP_NTZ, &(-5i64).to_le_bytes());
        let mut d = vec![2u8];
        d.extend_from_slice(&(-1234i64).to_le_bytes());
        let dec = prim_row(DECIMAL8, &d);
        let col = column(&[Some(date), Some(ts), Some(ntz), Some(dec), None]);
        let utc: Option<Arc<str>> = Some("UTC".into());
        let read = |k: Kind| variant_get_scalars(&col.slice(0, 1), &[(path("a"), k)]);
        let out = read(Kind::Date32).expect("date");
        assert_eq!(
            out[0]
                .as_primitive::<arrow_array::types::Date32Type>()
                .value(0),
            19_782
        );
        let one = |r: usize, k: Kind| variant_get_scalars(&col.slice(r, 1), &[(path("a"), k)]);
        let out = one(1, Kind::TimestampMicros(utc.clone())).expect("timestamp");
        assert_eq!(
            out[0].data_type(),
            &DataType::Timestamp(arrow_schema::TimeUnit::Microsecond, utc.clone())
        );
        assert_eq!(
            out[0]
                .as_primitive::<arrow_array::types::TimestampMicrosecondType>()
                .value(0),
            1_700_000_000_000_001
        );
        let out = one(2, Kind::TimestampMicros(None)).expect("timestamp_ntz");
        assert_eq!(
            out[0]
                .as_primitive::<arrow_array::types::TimestampMicrosecondType>()
                .value(0),
            -5
        );
        let out = one(3, Kind::Decimal128(6, 2)).expect("decimal");
        assert_eq!(out[0].data_type(), &DataType::Decimal128(6, 2));
        assert_eq!(
            out[0]
                .as_primitive::<arrow_array::types::Decimal128Type>()
                .value(0),
            -1234
        );
        // exactly: a TIMESTAMP is no TIMESTAMP_NTZ, a DATE no timestamp, the scale must match
        assert_eq!(
            one(1, Kind::TimestampMicros(None)).err(),
            Some(VariantFail::Mismatch(0))
        );
        assert_eq!(
            one(2, Kind::TimestampMicros(utc)).err(),
            Some(VariantFail::Mismatch(0))
        );
        assert_eq!(
            one(0, Kind::TimestampMicros(None)).err(),
            Some(VariantFail::Mismatch(0))
        );
        assert_eq!(
            one(3, Kind::Decimal128(6, 3)).err(),
            Some(VariantFail::Mismatch(0))
        );
        // past the precision, or a date past Python's: left to the reference (its own error)
        assert_eq!(
            one(3, Kind::Decimal128(3, 2)).err(),
            Some(VariantFail::Unsupported)
        );
        let far = column(&[Some(prim_row(DATE, &i32::MAX.to_le_bytes()))]);
        let got = variant_get_scalars(&far, &[(path("a"), Kind::Date32)]);
        assert_eq!(got.err(), Some(VariantFail::Unsupported));
        let out = one(4, Kind::Decimal128(6, 2)).expect("null row");
        assert_eq!(out[0].null_count(), 1);
    }

    fn edit(path: &str, values: ArrayRef) -> VariantEdit {
        VariantEdit {
            path: vec![Seg::Key(path.into())],
            values,
            broadcast: true,
        }
    }

    #[test]
    fn variant_edit_replaces_in_place_and_inserts_new_keys() {
        let col = column(&[Some(row(1.5)), None]);
        let one = |x: f64| -> ArrayRef { Arc::new(Float64Array::from(vec![x])) };
        let out = variant_edit(&col, &[edit("a", one(2.5))], false, false)
            .expect("replace")
            .expect("changed");
        assert!(out.is_null(1));
        assert_eq!(out.column(0).as_binary::<i32>().value(0), row(2.5).0);
        assert!(Arc::ptr_eq(out.column(1), col.column(1)), "metadata reused");
        // the same value again: nothing changed
        let same = variant_edit(&col, &[edit("a", one(1.5))], false, false).expect("replace");
        assert!(same.is_none());
        // variant_set of a new key "0" (sorts before "a"): the dictionary grows, the field first
        let out = variant_edit(&col, &[edit("0", one(7.0))], false, true)
            .expect("set")
            .expect("changed");
        assert_eq!(
            out.column(1).as_binary::<i32>().value(0),
            &[VERSION, 2, 0, 1, 2, b'a', b'0']
        );
        let v = out.column(0).as_binary::<i32>().value(0);
        assert_eq!(&v[..6], &[OBJECT, 2, 1, 0, 0, 9]);
    }

    #[test]
    fn variant_edit_refusals() {
        let col = column(&[Some(row(1.5))]);
        let int: ArrayRef = Arc::new(Int64Array::from(vec![1]));
        let got = variant_edit(&col, &[edit("a", int.clone())], false, false);
        assert_eq!(got.err(), Some(VariantFail::Mismatch(0)));
        let got = variant_edit(&col, &[edit("zz", int.clone())], true, false);
        assert_eq!(got.err(), Some(VariantFail::Missing(0)));
        let deep = VariantEdit {
            path: vec![Seg::Key("a".into()), Seg::Key("b".into())],
            values: int.clone(),
            broadcast: true,
        };
        let got = variant_edit(&col, &[deep], false, true);
        assert_eq!(got.err(), Some(VariantFail::NotObject(0)));
        let index = VariantEdit {
            path: vec![Seg::Index(0)],
            values: int,
            broadcast: true,
        };
        let got = variant_edit(&col, &[index], false, true);
        assert_eq!(got.err(), Some(VariantFail::IndexInsert(0)));
    }
}
