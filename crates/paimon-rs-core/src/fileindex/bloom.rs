//! Java Paimon's `BloomFilter64` (paimon-common `utils/BloomFilter64`) and the per-type hashes
//! of its bloom-filter file index (`fileindex/bloomfilter/FastHash`): XXH64 (seed 0) of the
//! bytes for strings and binary, Thomas Wang's 64-bit integer hash for numbers, dates, times
//! and timestamps (milliseconds up to precision 3, microseconds above). Serialized as the index
//! type `bloom-filter` stores it: the number of hash functions (big-endian i32), then the bit
//! set, bit `i` in byte `i / 8` at bit `i % 8` (docs/paimon-format.md §13).

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Date32Type, Float32Type, Float64Type, Int16Type, Int32Type, Int64Type, Int8Type,
    Time32MillisecondType, TimestampMicrosecondType, TimestampMillisecondType,
    TimestampNanosecondType, TimestampSecondType,
};
use arrow_array::Array;
use arrow_schema::{DataType as ArrowType, TimeUnit};

use crate::error::{Error, Result};
use crate::spec::datum::Datum;
use crate::spec::types::{DataType, TypeKind};

const P1: u64 = 0x9E37_79B1_85EB_CA87;
const P2: u64 = 0xC2B2_AE3D_27D4_EB4F;
const P3: u64 = 0x1656_67B1_9E37_79F9;
const P4: u64 = 0x85EB_CA77_C2B2_AE63;
const P5: u64 = 0x27D4_EB2F_1656_67C5;

fn le64(b: &[u8]) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[..8]);
    u64::from_le_bytes(a)
}

fn le32(b: &[u8]) -> u64 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[..4]);
    u32::from_le_bytes(a) as u64
}

fn round(acc: u64, lane: u64) -> u64 {
    acc.wrapping_add(lane.wrapping_mul(P2))
        .rotate_left(31)
        .wrapping_mul(P1)
}

fn merge(acc: u64, v: u64) -> u64 {
    (acc ^ round(0, v)).wrapping_mul(P1).wrapping_add(P4)
}

/// XXH64 with seed 0 (zero-allocation-hashing's `LongHashFunction.xx()`, which Java's
/// `FastHash.hash64` uses), as a signed long.
pub(crate) fn xxh64(data: &[u8]) -> i64 {
    let n = data.len();
    let mut rest = data;
    let mut h = if n >= 32 {
        let mut v = [P1.wrapping_add(P2), P2, 0, 0u64.wrapping_sub(P1)];
        while rest.len() >= 32 {
            for (i, acc) in v.iter_mut().enumerate() {
                *acc = round(*acc, le64(&rest[i * 8..]));
            }
            rest = &rest[32..];
        }
        let mut h = v[0]
            .rotate_left(1)
            .wrapping_add(v[1].rotate_left(7))
            .wrapping_add(v[2].rotate_left(12))
            .wrapping_add(v[3].rotate_left(18));
        for x in v {
            h = merge(h, x);
        }
        h
    } else {
        P5
    };
    h = h.wrapping_add(n as u64);
    while rest.len() >= 8 {
        h = (h ^ round(0, le64(rest)))
            .rotate_left(27)
            .wrapping_mul(P1)
            .wrapping_add(P4);
        rest = &rest[8..];
    }
    if rest.len() >= 4 {
        h = (h ^ le32(rest).wrapping_mul(P1))
            .rotate_left(23)
            .wrapping_mul(P2)
            .wrapping_add(P3);
        rest = &rest[4..];
    }
    for &b in rest {
        h = (h ^ (b as u64).wrapping_mul(P5))
            .rotate_left(11)
            .wrapping_mul(P1);
    }
    h ^= h >> 33;
    h = h.wrapping_mul(P2);
    h ^= h >> 29;
    h = h.wrapping_mul(P3);
    h ^= h >> 32;
    h as i64
}

/// Thomas Wang's 64-bit integer hash (Java's `FastHash.getLongHash`, arithmetic shifts).
pub(crate) fn long_hash(key: i64) -> i64 {
    let mut k = (!key).wrapping_add(key.wrapping_shl(21));
    k ^= k >> 24;
    k = k
        .wrapping_add(k.wrapping_shl(3))
        .wrapping_add(k.wrapping_shl(8));
    k ^= k >> 14;
    k = k
        .wrapping_add(k.wrapping_shl(2))
        .wrapping_add(k.wrapping_shl(4));
    k ^= k >> 28;
    k.wrapping_add(k.wrapping_shl(31))
}

/// Java's `Float.floatToIntBits` (every NaN as the canonical one).
fn float_bits(f: f32) -> i64 {
    if f.is_nan() {
        0x7fc0_0000
    } else {
        f.to_bits() as i32 as i64
    }
}

/// Java's `Double.doubleToLongBits` (every NaN as the canonical one).
fn double_bits(f: f64) -> i64 {
    if f.is_nan() {
        0x7ff8_0000_0000_0000
    } else {
        f.to_bits() as i64
    }
}

/// Can a `bloom-filter` index be built on a column of this type? Java's `FastHash` refuses
/// boolean, decimal and the nested types.
pub(crate) fn hashable(t: &DataType) -> bool {
    use TypeKind::*;
    matches!(
        t.kind,
        TinyInt
            | SmallInt
            | Int
            | BigInt
            | Float
            | Double
            | Char(_)
            | VarChar(_)
            | Binary(_)
            | VarBinary(_)
            | Date
            | Time(_)
            | Timestamp(_)
            | LocalZonedTimestamp(_)
    )
}

fn ts_precision(t: &DataType) -> Option<u32> {
    match t.kind {
        TypeKind::Timestamp(p) | TypeKind::LocalZonedTimestamp(p) => Some(p),
        _ => None,
    }
}

/// The hashes a value of a column of type `t` may have, for a lookup: none if the literal's
/// kind does not fit the column (the caller then keeps the file). Integers of any width hash
/// alike (Java widens them to a long); a float zero hashes both signs (`0.0 = -0.0` in SQL,
/// but their bits differ).
pub(crate) fn datum_hashes(t: &DataType, d: &Datum) -> Option<Vec<i64>> {
    use TypeKind as K;
    let int = |v: i64| Some(vec![long_hash(v)]);
    match (&t.kind, d) {
        (K::TinyInt | K::SmallInt | K::Int | K::BigInt, Datum::TinyInt(v)) => int(*v as i64),
        (K::TinyInt | K::SmallInt | K::Int | K::BigInt, Datum::SmallInt(v)) => int(*v as i64),
        (K::TinyInt | K::SmallInt | K::Int | K::BigInt, Datum::Int(v)) => int(*v as i64),
        (K::TinyInt | K::SmallInt | K::Int | K::BigInt, Datum::BigInt(v)) => int(*v),
        (K::Date, Datum::Date(v)) | (K::Time(_), Datum::Time(v)) => int(*v as i64),
        (K::Float, Datum::Float(f)) => Some(if *f == 0.0 {
            vec![long_hash(float_bits(0.0)), long_hash(float_bits(-0.0))]
        } else {
            vec![long_hash(float_bits(*f))]
        }),
        (K::Double, Datum::Double(f)) => Some(if *f == 0.0 {
            vec![long_hash(double_bits(0.0)), long_hash(double_bits(-0.0))]
        } else {
            vec![long_hash(double_bits(*f))]
        }),
        (K::Char(_) | K::VarChar(_), Datum::String(s)) => Some(vec![xxh64(s.as_bytes())]),
        (K::Binary(_) | K::VarBinary(_), Datum::Bytes(b)) => Some(vec![xxh64(b)]),
        (K::Timestamp(_) | K::LocalZonedTimestamp(_), Datum::Timestamp { millis, nanos }) => {
            let p = ts_precision(t)?;
            let v = if p <= 3 {
                *millis
            } else {
                millis.checked_mul(1000)? + (*nanos / 1000) as i64
            };
            int(v)
        }
        _ => None,
    }
}

/// A timestamp of precision `p` held in `per_ms` units per millisecond (1 for seconds scaled
/// to millis, 1 000 for micros, 1 000 000 for nanos) as Java keys it: epoch millis up to
/// precision 3, micros above (floored, as Java's timestamps split a value into milliseconds and
/// a non-negative rest).
pub(super) fn java_ts(p: u32, v: i64, per_ms: i64) -> i64 {
    if p <= 3 {
        v.div_euclid(per_ms)
    } else if per_ms >= 1000 {
        v.div_euclid(per_ms / 1000)
    } else {
        v.wrapping_mul(1000 / per_ms)
    }
}

/// The hash of every non-null value of `col` (a column of type `t`, in the Arrow type the
/// writer holds it in), as Java's `FastHash` computes it from the same value.
pub(crate) fn array_hashes(t: &DataType, col: &dyn Array, out: &mut Vec<i64>) -> Result<()> {
    macro_rules! prim {
        ($ty:ty, $f:expr) => {{
            let a = col.as_primitive::<$ty>();
            for i in 0..a.len() {
                if a.is_valid(i) {
                    out.push($f(a.value(i)));
                }
            }
        }};
    }
    let p = ts_precision(t).unwrap_or(0);
    let ts = |v: i64, per_ms: i64| -> i64 { long_hash(java_ts(p, v, per_ms)) };
    match col.data_type() {
        ArrowType::Int8 => prim!(Int8Type, |v: i8| long_hash(v as i64)),
        ArrowType::Int16 => prim!(Int16Type, |v: i16| long_hash(v as i64)),
        ArrowType::Int32 => prim!(Int32Type, |v: i32| long_hash(v as i64)),
        ArrowType::Int64 => prim!(Int64Type, long_hash),
        ArrowType::Date32 => prim!(Date32Type, |v: i32| long_hash(v as i64)),
        ArrowType::Time32(TimeUnit::Millisecond) => {
            prim!(Time32MillisecondType, |v: i32| long_hash(v as i64))
        }
        ArrowType::Float32 => prim!(Float32Type, |v: f32| long_hash(float_bits(v))),
        ArrowType::Float64 => prim!(Float64Type, |v: f64| long_hash(double_bits(v))),
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
        ArrowType::Utf8 => col
            .as_string::<i32>()
            .iter()
            .flatten()
            .for_each(|s| out.push(xxh64(s.as_bytes()))),
        ArrowType::LargeUtf8 => col
            .as_string::<i64>()
            .iter()
            .flatten()
            .for_each(|s| out.push(xxh64(s.as_bytes()))),
        ArrowType::Utf8View => col
            .as_string_view()
            .iter()
            .flatten()
            .for_each(|s| out.push(xxh64(s.as_bytes()))),
        ArrowType::Binary => col
            .as_binary::<i32>()
            .iter()
            .flatten()
            .for_each(|b| out.push(xxh64(b))),
        ArrowType::LargeBinary => col
            .as_binary::<i64>()
            .iter()
            .flatten()
            .for_each(|b| out.push(xxh64(b))),
        ArrowType::BinaryView => col
            .as_binary_view()
            .iter()
            .flatten()
            .for_each(|b| out.push(xxh64(b))),
        ArrowType::FixedSizeBinary(_) => col
            .as_fixed_size_binary()
            .iter()
            .flatten()
            .for_each(|b| out.push(xxh64(b))),
        other => {
            return Err(Error::unsupported(format!(
                "a bloom-filter file index on a {t} column held as Arrow {other}"
            )))
        }
    }
    Ok(())
}

/// Java's `BloomFilter64`: `k` hash functions over `num_bits` bits, probing
/// `h1 + i * h2` (i = 1..=k, int arithmetic, a negative sum bit-flipped) modulo the bit count.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct BloomFilter64 {
    num_hash_functions: i32,
    bits: Vec<u8>,
}

impl BloomFilter64 {
    /// Sized for `items` values at false-positive probability `fpp`, as Java sizes it.
    pub(crate) fn new(items: i64, fpp: f64) -> Self {
        let ln2 = std::f64::consts::LN_2;
        let nb = (-(items as f64) * fpp.ln() / (ln2 * ln2)) as i32;
        let num_bits = nb.wrapping_add(8 - nb % 8);
        let k = ((num_bits as f64 / items as f64 * ln2) + 0.5).floor() as i64 as i32;
        BloomFilter64 {
            num_hash_functions: k.max(1),
            bits: vec![0; (num_bits / 8).max(1) as usize],
        }
    }

    fn positions(&self, hash: i64) -> impl Iterator<Item = usize> + '_ {
        let h1 = hash as i32;
        let h2 = ((hash as u64) >> 32) as i32;
        let num_bits = (self.bits.len() * 8) as i32;
        (1..=self.num_hash_functions).map(move |i| {
            let mut c = h1.wrapping_add(i.wrapping_mul(h2));
            if c < 0 {
                c = !c;
            }
            (c % num_bits) as usize
        })
    }

    pub(crate) fn add_hash(&mut self, hash: i64) {
        for p in self.positions(hash).collect::<Vec<_>>() {
            self.bits[p >> 3] |= 1 << (p & 7);
        }
    }

    pub(crate) fn test_hash(&self, hash: i64) -> bool {
        self.positions(hash)
            .all(|p| self.bits[p >> 3] & (1 << (p & 7)) != 0)
    }

    /// The index bytes Java's `BloomFilterFileIndex.Writer.serializedBytes` writes.
    pub(crate) fn serialize(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(4 + self.bits.len());
        out.extend_from_slice(&self.num_hash_functions.to_be_bytes());
        out.extend_from_slice(&self.bits);
        out
    }

    /// A filter from Java's serialized bytes (`context` names the file for errors).
    pub(crate) fn deserialize(b: &[u8], context: &str) -> Result<Self> {
        if b.len() < 5 {
            return Err(Error::corrupt(
                context,
                format!(
                    "a bloom-filter index of {} bytes (at least 5 expected)",
                    b.len()
                ),
            ));
        }
        let k = i32::from_be_bytes([b[0], b[1], b[2], b[3]]);
        if !(1..=1024).contains(&k) || b.len() - 4 > (i32::MAX / 8) as usize {
            return Err(Error::corrupt(
                context,
                format!(
                    "a bloom-filter index with {k} hash functions over {} bytes",
                    b.len() - 4
                ),
            ));
        }
        Ok(BloomFilter64 {
            num_hash_functions: k,
            bits: b[4..].to_vec(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xxh64_matches_the_reference_vectors() {
        // XXH64 seed 0 of "", "a", "abc" and a 39-byte string (the 32-byte stripe path)
        assert_eq!(xxh64(b"") as u64, 0xEF46_DB37_51D8_E999);
        assert_eq!(xxh64(b"a") as u64, 0xD24E_C4F1_A98C_6E5B);
        assert_eq!(xxh64(b"abc") as u64, 0x44BC_2CF5_AD77_0999);
        assert_eq!(
            xxh64(b"Nobody inspects the spammish repetition") as u64,
            0xFBCE_A83C_8A37_8BF1
        );
    }

    #[test]
    fn java_sizes_the_filter() {
        // Java: items 1_000_000, fpp 0.1 -> 4792536 bits, 3 hash functions
        let f = BloomFilter64::new(1_000_000, 0.1);
        assert_eq!(f.bits.len() * 8, 4_792_536);
        assert_eq!(f.num_hash_functions, 3);
        let mut f = BloomFilter64::new(100, 0.01);
        for v in 0..100i64 {
            f.add_hash(long_hash(v));
        }
        assert!((0..100i64).all(|v| f.test_hash(long_hash(v))));
        let fp = (1000..11000i64)
            .filter(|&v| f.test_hash(long_hash(v)))
            .count();
        assert!(fp < 400, "false positives {fp} of 10000 at fpp 0.01");
        let back = BloomFilter64::deserialize(&f.serialize(), "t").expect("bytes");
        assert_eq!(back, f);
    }
}
