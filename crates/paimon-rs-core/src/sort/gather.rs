//! Gathers of picked rows `(array, row)` across several arrays, for the write buffer's sorted
//! output: the same result as `arrow_select::interleave::interleave`, with the next rows'
//! offsets and values prefetched while the current row is copied. A sorted buffer's rows are a
//! random permutation of its input, so arrow's gather waits on a cache miss per row and column
//! (the gather was ~25% of a 2M-row primary-key write's CPU, session 25); reading a few rows
//! ahead overlaps those misses. Strings and binaries (i32 and i64 offsets), fixed-width
//! primitives and booleans take this path; other types (dictionaries, nested) go to arrow's.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{BinaryType, ByteArrayType, LargeBinaryType, LargeUtf8Type, Utf8Type};
use arrow_array::{
    downcast_primitive, Array, ArrayRef, ArrowPrimitiveType, BooleanArray, GenericByteArray,
    OffsetSizeTrait, PrimitiveArray,
};
use arrow_buffer::{
    ArrowNativeType, BooleanBuffer, BooleanBufferBuilder, Buffer, NullBuffer, OffsetBuffer,
    ScalarBuffer,
};
use arrow_schema::{ArrowError, DataType};

use crate::error::Result;

/// How many picks ahead of the copied one are prefetched: enough to cover a miss to memory at
/// the copy rate of short strings, few enough that the lines are still cached when copied.
const AHEAD: usize = 16;

/// Hint the CPU to load the cache line at `p`; never faults (an address-only hint), so any
/// pointer, even one past an array's end, is fine.
#[inline(always)]
pub(crate) fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `_mm_prefetch` only hints the cache; it reads nothing and cannot fault, whatever
    // the address. SSE is part of the x86_64 baseline.
    unsafe {
        std::arch::x86_64::_mm_prefetch(p.cast::<i8>(), std::arch::x86_64::_MM_HINT_T0)
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// Rows `picks` = (array, row) of `arrays` (all of one type) as one array.
pub(crate) fn interleave(arrays: &[&dyn Array], picks: &[(usize, usize)]) -> Result<ArrayRef> {
    let Some(first) = arrays.first() else {
        return Ok(arrow_select::interleave::interleave(arrays, picks)?);
    };
    let dt = first.data_type().clone();
    if arrays.iter().any(|a| a.data_type() != &dt) {
        // arrow refuses mixed types with its own message
        return Ok(arrow_select::interleave::interleave(arrays, picks)?);
    }
    macro_rules! primitive_helper {
        ($t:ty, $arrays:expr, $picks:expr, $dt:expr) => {
            primitive::<$t>($arrays, $picks, $dt)
        };
    }
    if dt == DataType::Boolean {
        return boolean(arrays, picks);
    }
    let dtr = &dt;
    downcast_primitive! {
        dt => (primitive_helper, arrays, picks, dtr),
        DataType::Utf8 => bytes::<Utf8Type>(arrays, picks),
        DataType::LargeUtf8 => bytes::<LargeUtf8Type>(arrays, picks),
        DataType::Binary => bytes::<BinaryType>(arrays, picks),
        DataType::LargeBinary => bytes::<LargeBinaryType>(arrays, picks),
        _ => Ok(arrow_select::interleave::interleave(arrays, picks)?),
    }
}

/// The validity of the picked rows; none when no input has nulls.
fn nulls(arrays: &[&dyn Array], picks: &[(usize, usize)]) -> Option<NullBuffer> {
    let sources: Vec<Option<&NullBuffer>> = arrays.iter().map(|a| a.nulls()).collect();
    if sources.iter().all(Option::is_none) {
        return None;
    }
    let mut b = BooleanBufferBuilder::new(picks.len());
    for &(a, r) in picks {
        b.append(sources[a].is_none_or(|n| n.is_valid(r)));
    }
    Some(NullBuffer::new(b.finish())).filter(|n| n.null_count() > 0)
}

fn primitive<T: ArrowPrimitiveType>(
    arrays: &[&dyn Array],
    picks: &[(usize, usize)],
    dt: &DataType,
) -> Result<ArrayRef> {
    let values: Vec<&[T::Native]> = arrays
        .iter()
        .map(|a| a.as_primitive::<T>().values().as_ref())
        .collect();
    let mut out = Vec::with_capacity(picks.len());
    for (i, &(a, r)) in picks.iter().enumerate() {
        if let Some(&(na, nr)) = picks.get(i + AHEAD) {
            if let Some(v) = values.get(na) {
                prefetch(v.as_ptr().wrapping_add(nr));
            }
        }
        out.push(values[a][r]);
    }
    let array = PrimitiveArray::<T>::try_new(ScalarBuffer::from(out), nulls(arrays, picks))?
        .with_data_type(dt.clone());
    Ok(Arc::new(array))
}

/// Booleans a 64-bit word at a time (arrow's gather appends bit by bit through `value`).
fn boolean(arrays: &[&dyn Array], picks: &[(usize, usize)]) -> Result<ArrayRef> {
    let values: Vec<&BooleanBuffer> = arrays.iter().map(|a| a.as_boolean().values()).collect();
    let mut words: Vec<u64> = Vec::with_capacity(picks.len().div_ceil(64));
    for chunk in picks.chunks(64) {
        let mut w = 0u64;
        for (j, &(a, r)) in chunk.iter().enumerate() {
            w |= u64::from(values[a].value(r)) << j;
        }
        words.push(w);
    }
    let bits = BooleanBuffer::new(Buffer::from_vec(words), 0, picks.len());
    Ok(Arc::new(BooleanArray::new(bits, nulls(arrays, picks))))
}

fn bytes<T: ByteArrayType>(arrays: &[&dyn Array], picks: &[(usize, usize)]) -> Result<ArrayRef>
where
    T::Offset: OffsetSizeTrait,
{
    let typed: Vec<&GenericByteArray<T>> = arrays.iter().map(|a| a.as_bytes::<T>()).collect();
    let offsets: Vec<&[T::Offset]> = typed.iter().map(|a| a.value_offsets()).collect();
    let values: Vec<&[u8]> = typed.iter().map(|a| a.values().as_slice()).collect();
    // pass 1: where each picked value is (its offsets prefetched ahead), and the output offsets
    let mut spans: Vec<(u32, usize, usize)> = Vec::with_capacity(picks.len());
    let mut out_offsets: Vec<T::Offset> = Vec::with_capacity(picks.len() + 1);
    out_offsets.push(T::Offset::usize_as(0));
    let mut len = 0usize;
    for (i, &(a, r)) in picks.iter().enumerate() {
        if let Some(&(na, nr)) = picks.get(i + AHEAD) {
            if let Some(o) = offsets.get(na) {
                prefetch(o.as_ptr().wrapping_add(nr));
            }
        }
        let o = offsets[a];
        let (start, end) = (o[r].as_usize(), o[r + 1].as_usize());
        spans.push((a as u32, start, end));
        len += end - start;
        out_offsets.push(T::Offset::from_usize(len).ok_or(ArrowError::OffsetOverflowError(len))?);
    }
    // pass 2: the values, in pick order (each value's first line prefetched ahead). A short
    // value is copied as a fixed `SHORT`-byte block (inlined moves instead of a `memcpy` call)
    // and the bytes past it cut off again; the output keeps `SHORT` bytes of slack for that.
    const SHORT: usize = 32;
    let mut out: Vec<u8> = Vec::with_capacity(len + SHORT);
    for (i, &(a, start, end)) in spans.iter().enumerate() {
        if let Some(&(na, ns, _)) = spans.get(i + AHEAD) {
            if let Some(v) = values.get(na as usize) {
                prefetch(v.as_ptr().wrapping_add(ns));
            }
        }
        let v = values[a as usize];
        let block: Option<&[u8; SHORT]> = if end - start <= SHORT {
            v.get(start..start + SHORT).and_then(|b| b.try_into().ok())
        } else {
            None
        };
        match block {
            Some(b) => {
                let keep = out.len() + (end - start);
                out.extend_from_slice(b);
                out.truncate(keep);
            }
            None => out.extend_from_slice(&v[start..end]),
        }
    }
    let nulls = nulls(arrays, picks);
    // SAFETY: the offsets are monotonic from 0 to `out.len()` by construction, and every value
    // is a whole value copied from an array of type `T`, so a Utf8 output is valid UTF-8.
    let array = unsafe {
        GenericByteArray::<T>::new_unchecked(
            OffsetBuffer::new_unchecked(ScalarBuffer::from(out_offsets)),
            out.into(),
            nulls,
        )
    };
    Ok(Arc::new(array))
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{
        BinaryArray, BooleanArray, Int32Array, LargeStringArray, StringArray,
        TimestampMicrosecondArray,
    };

    fn same(arrays: &[&dyn Array], picks: &[(usize, usize)]) {
        let ours = interleave(arrays, picks).expect("gather");
        let arrow = arrow_select::interleave::interleave(arrays, picks).expect("arrow");
        assert_eq!(ours.data_type(), arrow.data_type());
        assert_eq!(ours.to_data(), arrow.to_data());
    }

    fn picks(n: usize, lens: &[usize]) -> Vec<(usize, usize)> {
        // a fixed scramble over every source, longer than `AHEAD`
        (0..n)
            .map(|i| {
                let a = (i * 7 + 3) % lens.len();
                (a, (i * 13 + 5) % lens[a])
            })
            .collect()
    }

    #[test]
    fn gathers_as_arrow_does() {
        let s1 = StringArray::from(vec![Some("a"), None, Some("ccc"), Some(""), Some("ddddd")]);
        // values longer than the short block, and short ones too near the buffer's end for it
        let long = "l".repeat(70);
        let s2 = StringArray::from(vec![
            Some(long.as_str()),
            Some("yy"),
            Some("zzzzzzzzzzzzzzz"),
        ]);
        let sliced = s1.slice(1, 3);
        let p = picks(100, &[5, 3]);
        same(&[&s1, &s2], &p);
        same(&[&sliced, &s2], &picks(100, &[3, 3]));
        let l1 = LargeStringArray::from(vec!["p", "qq"]);
        let l2 = LargeStringArray::from(vec!["r"]);
        same(&[&l1, &l2], &picks(40, &[2, 1]));
        let b1 = BinaryArray::from(vec![&b"\x00\x01"[..], b"", b"\xff"]);
        same(&[&b1], &picks(40, &[3]));
        let i1 = Int32Array::from(vec![Some(1), None, Some(3)]);
        let i2 = Int32Array::from(vec![7, 8]);
        same(&[&i1, &i2], &picks(50, &[3, 2]));
        let t1 = TimestampMicrosecondArray::from(vec![1, 2, 3]).with_timezone("UTC");
        let t2 = TimestampMicrosecondArray::from(vec![4]).with_timezone("UTC");
        same(&[&t1, &t2], &picks(30, &[3, 1]));
        // booleans word by word: more than 64 picks, sliced (bit offset) sources and nulls
        let f1 = BooleanArray::from(vec![true, false]);
        same(&[&f1], &picks(30, &[2]));
        let f2 = BooleanArray::from(vec![Some(false), None, Some(true), Some(true), None]);
        let f3 = BooleanArray::from((0..70).map(|i| i % 3 == 0).collect::<Vec<_>>()).slice(3, 61);
        same(&[&f1, &f2, &f3], &picks(200, &[2, 5, 61]));
        same(&[&f3], &picks(130, &[61]));
        same(&[&s1], &[]);
    }

    #[test]
    fn mixed_types_are_refused() {
        let s = StringArray::from(vec!["a"]);
        let i = Int32Array::from(vec![1]);
        assert!(interleave(&[&s, &i], &[(0, 0), (1, 0)]).is_err());
    }
}
