//! Fixed-bucket assignment (paimon-format.md §7): MurmurHash3-x86_32 over the BinaryRow bytes of
//! the bucket key (word variant, seed 42, as Java's `BinaryRow.hashCode()`), then
//! `abs(hash % numBuckets)`.

use arrow_array::cast::AsArray;
use arrow_array::types::{Date32Type, Int32Type, Int64Type};
use arrow_array::{Array, ArrayRef};
use arrow_schema::DataType as ArrowType;

use crate::error::{Error, Result};
use crate::spec::binary_row::RowEncoder;
use crate::spec::types::{DataType, TypeKind};

const SEED: u32 = 42;
const C1: u32 = 0xcc9e_2d51;
const C2: u32 = 0x1b87_3593;

#[inline(always)]
const fn mix_k1(k: u32) -> u32 {
    k.wrapping_mul(C1).rotate_left(15).wrapping_mul(C2)
}

#[inline(always)]
const fn mix_h1(h: u32, k: u32) -> u32 {
    (h ^ mix_k1(k))
        .rotate_left(13)
        .wrapping_mul(5)
        .wrapping_add(0xe654_6b64)
}

#[inline(always)]
const fn fmix(h: u32, len: u32) -> u32 {
    let mut h = h ^ len;
    h ^= h >> 16;
    h = h.wrapping_mul(0x85eb_ca6b);
    h ^= h >> 13;
    h = h.wrapping_mul(0xc2b2_ae35);
    h ^= h >> 16;
    h
}

/// Hash state after the 8-byte header of a row whose first 56 fields are all non-null.
const H_HEADER: u32 = mix_h1(mix_h1(SEED, 0), 0);
/// Hash state after the header of a one-field row whose field is null (byte 1 = 0x01).
const H_HEADER_NULL0: u32 = mix_h1(mix_h1(SEED, 0x100), 0);

/// MurmurHash3-x86_32, word variant with seed 42 (Java `MurmurHashUtils.hashBytesByWords`):
/// mixes each 4-byte little-endian word, then `fmix(h ^ len)`. Row bytes are always a multiple
/// of 8 long; a trailing partial word (which Java rejects) is ignored but counted in `len`.
pub fn hash_bytes(bytes: &[u8]) -> i32 {
    let mut h = SEED;
    let mut words = bytes.chunks_exact(4);
    for w in &mut words {
        h = mix_h1(h, u32::from_le_bytes([w[0], w[1], w[2], w[3]]));
    }
    debug_assert!(
        words.remainder().is_empty(),
        "hash_bytes over a partial word"
    );
    fmix(h, bytes.len() as u32) as i32
}

/// MurmurHash3-x86_32 of `bytes` with `seed`, tail bytes included (Guava's
/// `Hashing.murmur3_32(seed)`, which Java's entropy-inject external paths use on file names).
pub fn murmur3_32(bytes: &[u8], seed: u32) -> i32 {
    let mut h = seed;
    let mut words = bytes.chunks_exact(4);
    for w in &mut words {
        h = mix_h1(h, u32::from_le_bytes([w[0], w[1], w[2], w[3]]));
    }
    let tail = words.remainder();
    if !tail.is_empty() {
        let mut k = 0u32;
        for (i, b) in tail.iter().enumerate() {
            k |= u32::from(*b) << (8 * i);
        }
        h ^= mix_k1(k);
    }
    fmix(h, bytes.len() as u32) as i32
}

/// Java's `Math.abs(hash % numBuckets)` (truncating `%`). `num_buckets` must be positive;
/// for 0 (which Java rejects with an exception) this returns 0 instead of panicking.
#[inline]
pub fn bucket_of(hash: i32, num_buckets: i32) -> i32 {
    // |hash % n| < |n| so the abs cannot overflow; checked_rem covers n == 0 and MIN % -1.
    hash.checked_rem(num_buckets).map_or(0, i32::wrapping_abs)
}

/// Hash of a one-field row whose 8-byte slot is `slot` (fixed-size types, short strings).
#[inline(always)]
fn hash_single_slot(slot: u64) -> i32 {
    let h = mix_h1(mix_h1(H_HEADER, slot as u32), (slot >> 32) as u32);
    fmix(h, 16) as i32
}

/// Hash of a one-field row holding a null (fixed-slot null encoding).
const HASH_SINGLE_NULL: i32 = fmix(mix_h1(mix_h1(H_HEADER_NULL0, 0), 0), 16) as i32;

/// Hash of a one-field row holding the string/binary `b`, without building the row.
#[inline]
fn hash_single_var(b: &[u8]) -> i32 {
    let len = b.len();
    if len <= 7 {
        let mut s = [0u8; 8];
        s[..len].copy_from_slice(b);
        s[7] = 0x80 | len as u8;
        return hash_single_slot(u64::from_le_bytes(s));
    }
    // Slot = (16 << 32) | len; then the bytes, zero-padded to a multiple of 8.
    let mut h = mix_h1(mix_h1(H_HEADER, len as u32), 16);
    let mut words = b.chunks_exact(4);
    for w in &mut words {
        h = mix_h1(h, u32::from_le_bytes([w[0], w[1], w[2], w[3]]));
    }
    let rem = words.remainder();
    let mut n_words = len / 4;
    if !rem.is_empty() {
        let mut w = [0u8; 4];
        w[..rem.len()].copy_from_slice(rem);
        h = mix_h1(h, u32::from_le_bytes(w));
        n_words += 1;
    }
    if n_words % 2 == 1 {
        h = mix_h1(h, 0);
    }
    let rounded = (len + 7) & !7;
    fmix(h, (16 + rounded) as u32) as i32
}

/// Per-row hashes of a primitive column, honouring nulls.
#[inline]
fn fixed_hashes<T: Copy>(
    values: &[T],
    nulls: Option<&arrow_buffer::NullBuffer>,
    slot: impl Fn(T) -> u64,
) -> Vec<i32> {
    match nulls {
        None => values.iter().map(|v| hash_single_slot(slot(*v))).collect(),
        Some(nb) => values
            .iter()
            .enumerate()
            .map(|(i, v)| {
                if nb.is_null(i) {
                    HASH_SINGLE_NULL
                } else {
                    hash_single_slot(slot(*v))
                }
            })
            .collect(),
    }
}

/// Bucket of every row for the bucket-key columns `key_arrays` (Paimon types `key_types`, the
/// table's declared types; Arrow arrays as for [`RowEncoder`]): `abs(hash % num_buckets)` of
/// [`compute_hashes`].
pub fn compute_buckets(
    key_arrays: &[ArrayRef],
    key_types: &[DataType],
    num_buckets: i32,
) -> Result<Vec<i32>> {
    if num_buckets <= 0 {
        return Err(Error::invalid(format!(
            "fixed bucket count must be positive, got {num_buckets}"
        )));
    }
    let mut hashes = compute_hashes(key_arrays, key_types)?;
    for h in &mut hashes {
        *h = bucket_of(*h, num_buckets);
    }
    Ok(hashes)
}

/// Java's `BinaryRow.hashCode()` of every row of the key columns `key_arrays` (Paimon types
/// `key_types`): the fixed bucket's hash of the bucket key, and the dynamic bucket assigner's
/// hash of the trimmed primary key (§7). Null key cells hash as BinaryRow null cells. Single
/// INT/BIGINT/DATE and single STRING keys take allocation-free fast paths; everything else
/// encodes each row with a reused buffer.
pub fn compute_hashes(key_arrays: &[ArrayRef], key_types: &[DataType]) -> Result<Vec<i32>> {
    if key_arrays.is_empty() || key_arrays.len() != key_types.len() {
        return Err(Error::invalid(format!(
            "bucket key: {} arrays for {} key types (need at least one)",
            key_arrays.len(),
            key_types.len()
        )));
    }
    if let [a] = key_arrays {
        if let Some(h) = single_key_fast_path(a.as_ref(), &key_types[0]) {
            return Ok(h);
        }
    }
    let enc = RowEncoder::new(key_types, key_arrays)?;
    let mut buf = Vec::with_capacity(64);
    let mut out = Vec::with_capacity(enc.num_rows());
    for row in 0..enc.num_rows() {
        enc.encode(row, &mut buf)?;
        out.push(hash_bytes(&buf));
    }
    Ok(out)
}

/// `None` if the key is not one of the fast-path shapes.
fn single_key_fast_path(a: &dyn Array, t: &DataType) -> Option<Vec<i32>> {
    let nulls = a.logical_nulls();
    let nulls = nulls.as_ref();
    match (&t.kind, a.data_type()) {
        (TypeKind::Int, ArrowType::Int32) => {
            let v = a.as_primitive_opt::<Int32Type>()?;
            Some(fixed_hashes(&v.values()[..], nulls, |x| x as u32 as u64))
        }
        (TypeKind::Date, ArrowType::Date32) => {
            let v = a.as_primitive_opt::<Date32Type>()?;
            Some(fixed_hashes(&v.values()[..], nulls, |x| x as u32 as u64))
        }
        (TypeKind::BigInt, ArrowType::Int64) => {
            let v = a.as_primitive_opt::<Int64Type>()?;
            Some(fixed_hashes(&v.values()[..], nulls, |x| x as u64))
        }
        (TypeKind::Char(_) | TypeKind::VarChar(_), ArrowType::Utf8) => {
            let v = a.as_string_opt::<i32>()?;
            Some(
                (0..v.len())
                    .map(|i| {
                        if nulls.is_some_and(|nb| nb.is_null(i)) {
                            HASH_SINGLE_NULL
                        } else {
                            hash_single_var(v.value(i).as_bytes())
                        }
                    })
                    .collect(),
            )
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::binary_row::encode_row;
    use crate::spec::datum::Datum;
    use crate::spec::types::MAX_LEN;
    use arrow_array::{Date32Array, Int32Array, Int64Array, StringArray};
    use proptest::prelude::*;
    use std::sync::Arc;

    #[test]
    fn murmur3_32_matches_the_reference_vectors() {
        // SMHasher's MurmurHash3_x86_32 (= Guava's murmur3_32) of well-known inputs
        assert_eq!(murmur3_32(b"", 0), 0);
        assert_eq!(murmur3_32(b"hello", 0) as u32, 0x248b_fa47);
        assert_eq!(
            murmur3_32(b"The quick brown fox jumps over the lazy dog", 0) as u32,
            0x2e4f_f723
        );
    }

    fn int() -> DataType {
        DataType::new(TypeKind::Int)
    }
    fn string() -> DataType {
        DataType::new(TypeKind::VarChar(MAX_LEN))
    }
    fn s(v: &str) -> Option<Datum> {
        Some(Datum::String(v.into()))
    }

    /// One §7 row: key types, key values, hash, buckets for n = 2, 3, 4, 7, 16.
    type Vector = (Vec<DataType>, Vec<Option<Datum>>, i32, [i32; 5]);

    fn vectors() -> Vec<Vector> {
        let i = |v: i32| (vec![int()], vec![Some(Datum::Int(v))]);
        let mut out = vec![];
        let mut add = |(t, v): (Vec<DataType>, Vec<Option<Datum>>), h: i32, b: [i32; 5]| {
            out.push((t, v, h, b))
        };
        add(i(1), 1465514398, [0, 1, 2, 5, 14]);
        add(i(2), 1340390384, [0, 2, 0, 4, 0]);
        add(i(3), -771300025, [1, 1, 1, 6, 9]);
        add(i(4), 1447522506, [0, 0, 2, 3, 10]);
        add(i(0), -300363099, [1, 0, 3, 1, 11]);
        add(i(-1), 1133687267, [1, 2, 3, 6, 3]);
        add(i(42), 907821237, [1, 0, 1, 1, 5]);
        add(
            (
                vec![DataType::new(TypeKind::BigInt)],
                vec![Some(Datum::BigInt(42))],
            ),
            907821237,
            [1, 0, 1, 1, 5],
        );
        add(
            (vec![string()], vec![s("abc")]),
            -101922419,
            [1, 2, 3, 4, 3],
        );
        add((vec![string()], vec![s("")]), 302122119, [1, 0, 3, 5, 7]);
        add(
            (vec![string()], vec![s("hello world!")]),
            609810467,
            [1, 2, 3, 0, 3],
        );
        add(
            (vec![int(), string()], vec![Some(Datum::Int(5)), s("abc")]),
            761334957,
            [1, 0, 1, 5, 13],
        );
        add(
            (
                vec![int(), string()],
                vec![Some(Datum::Int(5)), s("a-very-long-name")],
            ),
            -155770853,
            [1, 2, 1, 0, 5],
        );
        add((vec![int()], vec![None]), -1748325344, [0, 2, 0, 3, 0]);
        out
    }

    #[test]
    fn spec_vectors_hash_and_buckets() {
        for (types, vals, hash, buckets) in vectors() {
            let row = encode_row(&types, &vals).unwrap();
            assert_eq!(hash_bytes(&row), hash, "{vals:?}");
            for (n, b) in [2, 3, 4, 7, 16].into_iter().zip(buckets) {
                assert_eq!(bucket_of(hash, n), b, "{vals:?} n={n}");
            }
            // The same through compute_buckets (fast or general path).
            let arrays: Vec<ArrayRef> = types
                .iter()
                .enumerate()
                .map(|(c, t)| {
                    crate::spec::binary_row::datums_to_arrow(t, &[vals[c].clone()]).unwrap()
                })
                .collect();
            for (n, b) in [2, 3, 4, 7, 16].into_iter().zip(buckets) {
                assert_eq!(
                    compute_buckets(&arrays, &types, n).unwrap(),
                    vec![b],
                    "{vals:?}"
                );
            }
        }
    }

    #[test]
    fn java_100_bucket_vectors() {
        let ints = |v: &[i32]| -> i32 {
            let types: Vec<DataType> = v.iter().map(|_| int()).collect();
            let vals: Vec<Option<Datum>> = v.iter().map(|x| Some(Datum::Int(*x))).collect();
            bucket_of(hash_bytes(&encode_row(&types, &vals).unwrap()), 100)
        };
        assert_eq!(ints(&[5]), 96);
        assert_eq!(ints(&[5, 6]), 27);
        assert_eq!(ints(&[5, 6, 7]), 40);
        let a: ArrayRef = Arc::new(Int32Array::from(vec![5]));
        let b: ArrayRef = Arc::new(Int32Array::from(vec![6]));
        assert_eq!(
            compute_buckets(std::slice::from_ref(&a), &[int()], 100).unwrap(),
            [96]
        );
        assert_eq!(
            compute_buckets(&[a, b], &[int(), int()], 100).unwrap(),
            [27]
        );
    }

    #[test]
    fn bucket_of_java_semantics() {
        assert_eq!(bucket_of(-7, 3), 1); // Java: -7 % 3 == -1
        assert_eq!(bucket_of(i32::MIN, 1), 0);
        assert_eq!(bucket_of(i32::MIN, 3), 2); // -2147483648 % 3 == -2
        assert_eq!(bucket_of(i32::MIN, i32::MAX), 1);
        assert_eq!(bucket_of(i32::MAX, 16), 15);
        assert_eq!(bucket_of(5, 0), 0);
        assert_eq!(bucket_of(i32::MIN, -1), 0);
    }

    #[test]
    fn compute_buckets_errors() {
        let a: ArrayRef = Arc::new(Int32Array::from(vec![5]));
        assert!(compute_buckets(std::slice::from_ref(&a), &[int()], 0).is_err());
        assert!(compute_buckets(&[], &[], 4).is_err());
        assert!(compute_buckets(std::slice::from_ref(&a), &[int(), int()], 4).is_err());
        // Wrong Arrow type for the Paimon type: no fast path, clear error.
        assert!(compute_buckets(&[a], &[DataType::new(TypeKind::BigInt)], 4).is_err());
    }

    /// Every row encoded as a BinaryRow and hashed: what the fast paths must equal.
    fn general(arrays: &[ArrayRef], types: &[DataType], n: i32) -> Vec<i32> {
        let enc = RowEncoder::new(types, arrays).unwrap();
        let mut buf = vec![];
        (0..enc.num_rows())
            .map(|r| {
                enc.encode(r, &mut buf).unwrap();
                bucket_of(hash_bytes(&buf), n)
            })
            .collect()
    }

    proptest! {
        #[test]
        fn fast_paths_match_general(
            ints in proptest::collection::vec(proptest::option::of(any::<i32>()), 0..50),
            longs in proptest::collection::vec(proptest::option::of(any::<i64>()), 0..50),
            strs in proptest::collection::vec(proptest::option::of(".{0,20}"), 0..50),
            n in 1..1000i32,
        ) {
            let a: ArrayRef = Arc::new(Int32Array::from(ints.clone()));
            prop_assert_eq!(compute_buckets(std::slice::from_ref(&a), &[int()], n).unwrap(), general(&[a], &[int()], n));
            let d: ArrayRef = Arc::new(Date32Array::from(ints));
            let date = DataType::new(TypeKind::Date);
            prop_assert_eq!(compute_buckets(std::slice::from_ref(&d), std::slice::from_ref(&date), n).unwrap(), general(&[d], &[date], n));
            let l: ArrayRef = Arc::new(Int64Array::from(longs));
            let big = DataType::new(TypeKind::BigInt);
            prop_assert_eq!(compute_buckets(std::slice::from_ref(&l), std::slice::from_ref(&big), n).unwrap(), general(&[l], &[big], n));
            let s: ArrayRef = Arc::new(StringArray::from(strs));
            prop_assert_eq!(compute_buckets(std::slice::from_ref(&s), &[string()], n).unwrap(), general(&[s], &[string()], n));
        }
    }
}
