//! The sort keys of sort compaction (paimon-behaviour.md §16): z-order and hilbert indexes
//! with Java Paimon's byte layout per type, so that files we cluster prune like files Java
//! clusters, and the plain lexicographic order of `order_strategy = order`.
//!
//! Z-order (Java's `ZIndexer` / `ZOrderByteUtils`): every order column becomes a fixed-width
//! byte string (8 bytes; `zorder.var-length-contribution` bytes for CHAR / VARCHAR / BINARY /
//! VARBINARY), null = all zero bytes, and the index interleaves their bits, most significant
//! first: bit 7 of byte 0 of each column in turn, then bit 6, and so on; a column shorter than
//! the others drops out once its bytes are used up. Per type:
//! * TINYINT, SMALLINT, INT, DATE, TIME (millis of day), BIGINT: the value widened to a long,
//!   sign bit flipped, big-endian;
//! * TIMESTAMP, TIMESTAMP_LTZ: epoch milliseconds (floored) as BIGINT;
//! * FLOAT, DOUBLE: the bits of the value as a double (`Double.doubleToLongBits`, NaN made
//!   canonical) `l ^ ((l >> 31) | i64::MIN)` — Java shifts by `Integer.SIZE - 1`, so only
//!   the low half of a negative value's bits is flipped; kept as Java does it;
//! * BOOLEAN: first byte 0x81 for true, 0 for false;
//! * DECIMAL: the unscaled value's minimal big-endian two's-complement bytes
//!   (`BigInteger.toByteArray`), truncated or zero-filled on the right to 8 bytes;
//! * strings and binaries: the first bytes (UTF-8), zero-filled on the right.
//!
//! Hilbert (Java's `HilbertIndexer`, at least two columns): every column becomes a long —
//! TINYINT as its unsigned byte, SMALLINT / INT / DATE / TIME / BIGINT widened, TIMESTAMP as
//! epoch millis, FLOAT / DOUBLE as `Double.doubleToLongBits`, DECIMAL as its integer part
//! (`BigDecimal.longValue`), BOOLEAN true = `Long.MAX_VALUE` and false = 0, strings and
//! binaries as their first 8 bytes read big-endian (fewer bytes are right-aligned), null =
//! `Long.MAX_VALUE` — and the index is the point's distance along a 63-bit hilbert curve of
//! that many dimensions, as a big-endian two's-complement integer left-padded (or truncated,
//! keeping the high bytes) to 63 bytes. The curve is John Skilling's "Programming the Hilbert
//! curve" (AIP Conf. Proc. 707, 2004; AxesToTranspose, then the transposed bits read
//! dimension-interleaved from the high bit), which is what Java's dependency
//! (davidmoten/hilbert-curve, `HilbertCurve.index`) implements.

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Date32Type, Decimal128Type, Float32Type, Float64Type, Int16Type, Int32Type, Int64Type,
    Int8Type, Time32MillisecondType, TimestampMicrosecondType, TimestampMillisecondType,
    TimestampNanosecondType, TimestampSecondType,
};
use arrow_array::{Array, ArrayRef};
use arrow_schema::{DataType as ArrowType, TimeUnit};
use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::spec::types::{DataType, TypeKind};

/// Java's `PRIMITIVE_BUFFER_SIZE`: the bytes a fixed-width column contributes to a z-index.
pub const Z_PRIMITIVE_BYTES: usize = 8;
/// Bits per dimension of Java's hilbert curve (`HilbertIndexer.BITS_NUM`).
const H_BITS: u32 = 63;
/// Bytes of a hilbert index (Java pads the index to `BITS_NUM` bytes).
pub const H_INDEX_BYTES: usize = 63;
/// A null (and `true`) in a hilbert column (`HilbertIndexer.PRIMITIVE_EMPTY`).
const H_EMPTY: i64 = i64::MAX;

/// The sort strategies of sort compaction (Java's `OrderType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OrderStrategy {
    Order,
    ZOrder,
    Hilbert,
}

impl OrderStrategy {
    /// `order`, `zorder` or `hilbert` (any case, as Java's `OrderType.of`).
    pub fn parse(s: &str) -> Result<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "order" => Ok(OrderStrategy::Order),
            "zorder" => Ok(OrderStrategy::ZOrder),
            "hilbert" => Ok(OrderStrategy::Hilbert),
            _ => Err(Error::invalid(format!(
                "order_strategy must be 'order', 'zorder' or 'hilbert', got '{s}'"
            ))),
        }
    }

    pub fn name(&self) -> &'static str {
        match self {
            OrderStrategy::Order => "order",
            OrderStrategy::ZOrder => "zorder",
            OrderStrategy::Hilbert => "hilbert",
        }
    }
}

fn is_var(t: &DataType) -> bool {
    matches!(
        t.kind,
        TypeKind::Char(_) | TypeKind::VarChar(_) | TypeKind::Binary(_) | TypeKind::VarBinary(_)
    )
}

/// Whether a column of type `t` can be a sort column (Java's indexers refuse nested types).
pub fn check_sortable(column: &str, t: &DataType) -> Result<()> {
    if t.is_nested() {
        return Err(Error::unsupported(format!(
            "sort compaction by column '{column}' of type {t:?}: only atomic types can be \
             order columns (Java's ZIndexer / HilbertIndexer refuse nested types too)"
        )));
    }
    Ok(())
}

fn bad_array(column: &str, t: &DataType, a: &dyn Array) -> Error {
    Error::invalid(format!(
        "sort column '{column}' of type {t:?} came as an Arrow {} array",
        a.data_type()
    ))
}

/// Epoch milliseconds (floored, as Java's `Timestamp.getMillisecond`) of a timestamp array.
fn timestamp_millis(a: &dyn Array, unit: &TimeUnit, i: usize) -> i64 {
    match unit {
        TimeUnit::Second => a.as_primitive::<TimestampSecondType>().value(i) * 1000,
        TimeUnit::Millisecond => a.as_primitive::<TimestampMillisecondType>().value(i),
        TimeUnit::Microsecond => a
            .as_primitive::<TimestampMicrosecondType>()
            .value(i)
            .div_euclid(1000),
        TimeUnit::Nanosecond => a
            .as_primitive::<TimestampNanosecondType>()
            .value(i)
            .div_euclid(1_000_000),
    }
}

/// A column's values widened to a long, for the fixed-width integer-like types (None for
/// the others).
fn long_value(a: &dyn Array, i: usize) -> Option<i64> {
    Some(match a.data_type() {
        ArrowType::Int8 => a.as_primitive::<Int8Type>().value(i) as i64,
        ArrowType::Int16 => a.as_primitive::<Int16Type>().value(i) as i64,
        ArrowType::Int32 => a.as_primitive::<Int32Type>().value(i) as i64,
        ArrowType::Int64 => a.as_primitive::<Int64Type>().value(i),
        ArrowType::Date32 => a.as_primitive::<Date32Type>().value(i) as i64,
        ArrowType::Time32(TimeUnit::Millisecond) => {
            a.as_primitive::<Time32MillisecondType>().value(i) as i64
        }
        ArrowType::Timestamp(unit, _) => timestamp_millis(a, unit, i),
        _ => return None,
    })
}

/// Java's `Double.doubleToLongBits` of a value (every NaN as the canonical one).
fn double_bits(v: f64) -> i64 {
    if v.is_nan() {
        0x7ff8_0000_0000_0000
    } else {
        v.to_bits() as i64
    }
}

fn float_value(a: &dyn Array, i: usize) -> Option<f64> {
    match a.data_type() {
        ArrowType::Float32 => Some(a.as_primitive::<Float32Type>().value(i) as f64),
        ArrowType::Float64 => Some(a.as_primitive::<Float64Type>().value(i)),
        _ => None,
    }
}

/// `BigInteger.toByteArray` of an i128: minimal big-endian two's complement (at least 1 byte).
fn big_integer_bytes(v: i128) -> Vec<u8> {
    let b = v.to_be_bytes();
    let mut start = 0;
    // drop a leading byte while the next one carries the same sign
    while start < 15 {
        let (hi, next) = (b[start], b[start + 1]);
        if (hi == 0x00 && next & 0x80 == 0) || (hi == 0xff && next & 0x80 != 0) {
            start += 1;
        } else {
            break;
        }
    }
    b[start..].to_vec()
}

/// Copy `src` into `dst`, truncated or zero-filled on the right (`byteTruncateOrFill`).
fn truncate_or_fill(src: &[u8], dst: &mut [u8]) {
    let n = src.len().min(dst.len());
    dst[..n].copy_from_slice(&src[..n]);
    dst[n..].fill(0);
}

fn bytes_value(a: &dyn Array, i: usize) -> Option<&[u8]> {
    match a.data_type() {
        ArrowType::Utf8 => Some(a.as_string::<i32>().value(i).as_bytes()),
        ArrowType::LargeUtf8 => Some(a.as_string::<i64>().value(i).as_bytes()),
        ArrowType::Utf8View => Some(a.as_string_view().value(i).as_bytes()),
        ArrowType::Binary => Some(a.as_binary::<i32>().value(i)),
        ArrowType::LargeBinary => Some(a.as_binary::<i64>().value(i)),
        ArrowType::BinaryView => Some(a.as_binary_view().value(i)),
        ArrowType::FixedSizeBinary(_) => Some(a.as_fixed_size_binary().value(i)),
        _ => None,
    }
}

/// The z-order contribution of one column: `rows × width` bytes, row after row.
fn z_column(column: &str, t: &DataType, a: &dyn Array, width: usize) -> Result<Vec<u8>> {
    check_sortable(column, t)?;
    let rows = a.len();
    let mut out = vec![0u8; rows * width];
    for (i, slot) in out.chunks_exact_mut(width).enumerate() {
        if a.is_null(i) {
            continue; // Java's NULL_BYTES: all zero
        }
        match &t.kind {
            TypeKind::Boolean => {
                if a.as_boolean_opt()
                    .ok_or_else(|| bad_array(column, t, a))?
                    .value(i)
                {
                    slot[0] = 0x81; // Java's (byte) -127
                }
            }
            TypeKind::Float | TypeKind::Double => {
                let v = float_value(a, i).ok_or_else(|| bad_array(column, t, a))?;
                let mut l = double_bits(v);
                l ^= (l >> 31) | i64::MIN;
                slot.copy_from_slice(&l.to_be_bytes());
            }
            TypeKind::Decimal { .. } => {
                let d = a
                    .as_primitive_opt::<Decimal128Type>()
                    .ok_or_else(|| bad_array(column, t, a))?;
                truncate_or_fill(&big_integer_bytes(d.value(i)), slot);
            }
            TypeKind::Char(_)
            | TypeKind::VarChar(_)
            | TypeKind::Binary(_)
            | TypeKind::VarBinary(_) => {
                let b = bytes_value(a, i).ok_or_else(|| bad_array(column, t, a))?;
                truncate_or_fill(b, slot);
            }
            _ => {
                let v = long_value(a, i).ok_or_else(|| bad_array(column, t, a))?;
                slot.copy_from_slice(&((v as u64) ^ (1u64 << 63)).to_be_bytes());
            }
        }
    }
    Ok(out)
}

/// Interleave the bits of one row's column contributions into `out` (Java's
/// `ZOrderByteUtils.interleaveBits`): bit 7 of byte 0 of each column, then bit 6, ..., then
/// byte 1; columns whose bytes are used up are skipped. `out` is as long as all of them.
fn interleave(columns: &[&[u8]], out: &mut [u8]) {
    out.fill(0);
    let total_bits = out.len() * 8;
    let mut written = 0usize;
    let longest = columns.iter().map(|c| c.len()).max().unwrap_or(0);
    for byte in 0..longest {
        for bit in (0..8).rev() {
            for c in columns.iter().filter(|c| c.len() > byte) {
                if written == total_bits {
                    return;
                }
                if c[byte] & (1 << bit) != 0 {
                    out[written / 8] |= 0x80 >> (written % 8);
                }
                written += 1;
            }
        }
    }
}

/// [`interleave`] for the common case of 2 to 8 columns of one width (every primitive column
/// contributes 8 bytes, as do strings at the default `zorder.var-length-contribution`): the
/// bits of byte `b` of every column become bytes `b * k .. (b + 1) * k` of the index, so each
/// byte is spread through a table (bit `j` of a byte to bit `k * j + k - 1` of a `u64`) and
/// the columns' spreads shifted into one another: the same bits in the same places as the
/// bit-by-bit loop, a table lookup per byte instead of a branch per bit.
struct Spread {
    k: usize,
    width: usize,
    table: [u64; 256],
}

impl Spread {
    fn for_columns(widths: &[usize]) -> Option<Self> {
        let k = widths.len();
        let width = *widths.first()?;
        if !(2..=8).contains(&k) || widths.iter().any(|&w| w != width) {
            return None;
        }
        let mut table = [0u64; 256];
        for (byte, slot) in table.iter_mut().enumerate() {
            for bit in 0..8 {
                if byte & (1 << bit) != 0 {
                    *slot |= 1u64 << (k * bit + k - 1);
                }
            }
        }
        Some(Spread { k, width, table })
    }

    /// The bits of `words` (one `u64` per column, `width` 8) interleaved into `out` (`8 * k`
    /// bytes), most significant bits first: [`Self::interleave`] of their big-endian bytes.
    fn interleave_words(&self, words: &[u64], out: &mut [u8]) {
        let k = self.k;
        for b in 0..8 {
            let mut v = 0u64;
            for (c, w) in words.iter().enumerate() {
                v |= self.table[(w >> (56 - 8 * b)) as u8 as usize] >> c;
            }
            out[b * k..(b + 1) * k].copy_from_slice(&v.to_be_bytes()[8 - k..]);
        }
    }

    /// Row `row`'s index into `out` (`k * width` bytes) from `parts` (each column's
    /// `width`-byte contributions of every row).
    fn interleave(&self, parts: &[Vec<u8>], row: usize, out: &mut [u8]) {
        let (k, w) = (self.k, self.width);
        for b in 0..w {
            let mut v = 0u64;
            for (c, p) in parts.iter().enumerate() {
                v |= self.table[p[row * w + b] as usize] >> c;
            }
            // the 8k bits of `v`, most significant first
            out[b * k..(b + 1) * k].copy_from_slice(&v.to_be_bytes()[8 - k..]);
        }
    }
}

/// The order of `rows` keys (`key(i)` the bytes of row `i`'s key) by the keys' bytes, equal
/// keys in row order (a stable sort). Each key's first 16 bytes (zero-padded) are compared as
/// one big-endian `u128` held beside the row number (no indirection, no `memcmp` call per
/// comparison); whole keys only between rows whose first 16 bytes are equal, and not even then
/// when `fixed16` says every key has the same length of at most 16 bytes.
pub fn sort_permutation<'a, F>(rows: usize, key: F, fixed16: bool) -> Vec<u32>
where
    F: Fn(usize) -> &'a [u8] + Sync,
{
    sorted_prefixes(rows, &key, fixed16)
        .into_iter()
        .map(|(_, i)| i)
        .collect()
}

/// [`sort_permutation`] and the [`boundary_depths`] of the order, read off the sorted 16-byte
/// prefixes when the keys are of one length (one pass over them in order; the keys themselves
/// only where two neighbours share their first 16 bytes, unless `fixed16`): no random access
/// to the keys per row, which for the `order` strategy's row-encoded keys (an offset and a key
/// per row, both out of cache in sorted order) cost as much as the sort. Keys of several
/// lengths (strings in `order`): [`boundary_depths`] over the keys.
pub fn sort_cells<'a, F>(rows: usize, key: F, fixed16: bool) -> (Vec<u32>, Vec<u16>)
where
    F: Fn(usize) -> &'a [u8] + Sync,
{
    // keys of one length: two prefixes that differ differ within both keys (zero padding
    // past a shorter key would otherwise look like a difference)
    let uniform = rows == 0 || (1..rows).all(|i| key(i).len() == key(0).len());
    if !uniform {
        let perm = sort_permutation(rows, &key, fixed16);
        let depth = boundary_depths(&perm, &key);
        return (perm, depth);
    }
    let keyed = sorted_prefixes(rows, &key, fixed16);
    let mut depth = vec![0u16; keyed.len()];
    if keyed.len() > 1 {
        depth[1..]
            .par_iter_mut()
            .zip(keyed.par_windows(2))
            .for_each(|(d, w)| {
                *d = match w[0].0 ^ w[1].0 {
                    0 if fixed16 => SAME_CELL,
                    0 => common_prefix_bits(key(w[0].1 as usize), key(w[1].1 as usize)),
                    x => x.leading_zeros() as u16,
                }
            });
    }
    (keyed.into_iter().map(|(_, i)| i).collect(), depth)
}

/// (first 16 bytes of the key as a big-endian `u128`, row) of every row, sorted as
/// [`sort_permutation`] describes.
fn sorted_prefixes<'a, F>(rows: usize, key: &F, fixed16: bool) -> Vec<(u128, u32)>
where
    F: Fn(usize) -> &'a [u8] + Sync,
{
    use rayon::slice::ParallelSliceMut;

    let mut keyed: Vec<(u128, u32)> = (0..rows)
        .map(|i| {
            let k = key(i);
            let mut buf = [0u8; 16];
            let n = k.len().min(16);
            buf[..n].copy_from_slice(&k[..n]);
            (u128::from_be_bytes(buf), i as u32)
        })
        .collect();
    if fixed16 {
        keyed.par_sort_unstable();
    } else {
        keyed.par_sort_unstable_by(|a, b| {
            a.0.cmp(&b.0)
                .then_with(|| key(a.1 as usize).cmp(key(b.1 as usize)))
                .then(a.1.cmp(&b.1))
        });
    }
    keyed
}

/// [`boundary_depths`] of two equal keys: no cell boundary between them.
pub const SAME_CELL: u16 = u16::MAX;

/// The leading bits `a` and `b` share ([`SAME_CELL`] when they are equal; at most
/// `SAME_CELL - 1` otherwise): a cut between two rows sorted by these keys is the boundary of
/// the aligned curve cell of that many leading bits, so the fewer, the larger the cell.
pub fn common_prefix_bits(a: &[u8], b: &[u8]) -> u16 {
    let n = a.len().min(b.len());
    let same = a[..n]
        .iter()
        .zip(&b[..n])
        .take_while(|(x, y)| x == y)
        .count();
    let bits = if same < n {
        same * 8 + (a[same] ^ b[same]).leading_zeros() as usize
    } else if a.len() == b.len() {
        return SAME_CELL;
    } else {
        n * 8
    };
    bits.min(SAME_CELL as usize - 1) as u16
}

/// For each position `i` of the sorted order `perm` (`key(r)` the sort key of row `r`), the
/// leading bits the keys of `perm[i - 1]` and `perm[i]` share ([`common_prefix_bits`]; 0 at
/// position 0): where a file may be cut so that the files fill whole cells ([`cell_cut`]).
pub fn boundary_depths<'a, F>(perm: &[u32], key: F) -> Vec<u16>
where
    F: Fn(usize) -> &'a [u8] + Sync,
{
    let mut out = vec![0u16; perm.len()];
    if perm.len() > 1 {
        out[1..]
            .par_iter_mut()
            .zip(perm.par_windows(2))
            .for_each(|(d, w)| *d = common_prefix_bits(key(w[0] as usize), key(w[1] as usize)));
    }
    out
}

/// Where to cut a sorted run of rows whose boundary depths are `depth` ([`boundary_depths`]),
/// the cut to fall in `window` (positions; the rows before the cut go to one file, the rest
/// to the next): the position of the shallowest boundary in it, the highest curve-index bit
/// that changes there, the boundary of the largest aligned cell. It is unique: between two
/// boundaries of one depth the keys' shorter prefix changes, a shallower boundary. `target`
/// (clamped into the window) when every key in the window is the same (no boundary to
/// prefer: the size cut).
pub fn cell_cut(depth: &[u16], window: std::ops::RangeInclusive<usize>, target: usize) -> usize {
    let (lo, hi) = (
        *window.start(),
        (*window.end()).min(depth.len().saturating_sub(1)),
    );
    let target = target.clamp(lo, hi.max(lo));
    if lo >= hi {
        return target;
    }
    let mut best = (SAME_CELL, target);
    for (i, &d) in depth[lo..=hi].iter().enumerate() {
        if d < best.0 {
            best = (d, lo + i);
        }
    }
    best.1
}

/// Where to cut a sorted run of rows whose boundary depths are `depth` ([`boundary_depths`])
/// into pieces of `min` to `max` rows (a dynamic-bucket table's buckets: `max` is
/// `dynamic-bucket.target-row-num`, which a bucket never exceeds, as Java's assigner fills
/// it): each piece is cut at the shallowest boundary ([`cell_cut`]) once it holds `min` rows
/// and before it holds more than `max`, so each piece fills whole aligned cells (with `min` =
/// `max / 2`, one cell size of uniform keys always fits); no boundary there: `max` rows. The
/// rest of the run is one piece when it fits under `max`. The start of every piece but the
/// first (ascending).
pub fn cell_pieces(depth: &[u16], min: usize, max: usize) -> Vec<usize> {
    let max = max.max(1);
    let min = min.clamp(1, max);
    let n = depth.len();
    let mut cuts = vec![];
    let mut pos = 0;
    while n - pos > max {
        // a piece of at least one row
        let cut = cell_cut(depth, pos + min..=pos + max, pos + max).max(pos + 1);
        cuts.push(cut);
        pos = cut;
    }
    cuts
}

/// The z-order indexes of `rows` rows, Java's `ZIndexer` bytes: `columns` are the order
/// columns (name, Paimon type, values); `var_width` is `zorder.var-length-contribution`.
/// Returns (index width, `rows × width` bytes).
pub fn z_indexes(
    columns: &[(&str, &DataType, &ArrayRef)],
    var_width: usize,
) -> Result<(usize, Vec<u8>)> {
    if columns.is_empty() {
        return Err(Error::invalid("order column names should not be empty"));
    }
    let rows = columns[0].2.len();
    let widths: Vec<usize> = columns
        .iter()
        .map(|(_, t, _)| {
            if is_var(t) {
                var_width
            } else {
                Z_PRIMITIVE_BYTES
            }
        })
        .collect();
    let parts = columns
        .iter()
        .zip(&widths)
        .map(|((n, t, a), &w)| z_column(n, t, a.as_ref(), w))
        .collect::<Result<Vec<_>>>()?;
    let width: usize = widths.iter().sum();
    let mut out = vec![0u8; rows * width];
    if let Some(spread) = Spread::for_columns(&widths) {
        for (i, slot) in out.chunks_exact_mut(width.max(1)).enumerate() {
            spread.interleave(&parts, i, slot);
        }
        return Ok((width, out));
    }
    let mut row_parts: Vec<&[u8]> = Vec::with_capacity(parts.len());
    for (i, slot) in out.chunks_exact_mut(width.max(1)).enumerate() {
        row_parts.clear();
        row_parts.extend(
            parts
                .iter()
                .zip(&widths)
                .map(|(p, &w)| &p[i * w..(i + 1) * w]),
        );
        interleave(&row_parts, slot);
    }
    Ok((width, out))
}

/// Java's `ConvertBinaryUtil.convertBytesToLong`: the first 8 bytes (fewer right-aligned),
/// big-endian.
fn bytes_to_long(b: &[u8]) -> i64 {
    let mut buf = [0u8; 8];
    if b.len() >= 8 {
        buf.copy_from_slice(&b[..8]);
    } else {
        buf[8 - b.len()..].copy_from_slice(b);
    }
    i64::from_be_bytes(buf)
}

/// One column of a hilbert index as Java's `HilbertIndexer` maps it to a long.
fn h_column(column: &str, t: &DataType, a: &dyn Array) -> Result<Vec<i64>> {
    check_sortable(column, t)?;
    (0..a.len())
        .map(|i| {
            if a.is_null(i) {
                return Ok(H_EMPTY);
            }
            let bad = || bad_array(column, t, a);
            Ok(match &t.kind {
                TypeKind::Boolean => {
                    if a.as_boolean_opt().ok_or_else(bad)?.value(i) {
                        H_EMPTY
                    } else {
                        0
                    }
                }
                TypeKind::TinyInt => {
                    let v = long_value(a, i).ok_or_else(bad)?;
                    (v as u8) as i64 // convertBytesToLong(new byte[] {b})
                }
                TypeKind::Float | TypeKind::Double => {
                    double_bits(float_value(a, i).ok_or_else(bad)?)
                }
                TypeKind::Decimal { scale, .. } => {
                    let d = a.as_primitive_opt::<Decimal128Type>().ok_or_else(bad)?;
                    // BigDecimal.longValue: the integer part (towards zero), low 64 bits
                    let p = 10i128.checked_pow(*scale).ok_or_else(bad)?;
                    (d.value(i) / p) as i64
                }
                TypeKind::Char(_)
                | TypeKind::VarChar(_)
                | TypeKind::Binary(_)
                | TypeKind::VarBinary(_) => bytes_to_long(bytes_value(a, i).ok_or_else(bad)?),
                _ => long_value(a, i).ok_or_else(bad)?,
            })
        })
        .collect()
}

/// Skilling's AxesToTranspose on the low `H_BITS` bits of each coordinate, in place: the
/// point's hilbert distance in transposed form (the distance's bits dealt round-robin to the
/// coordinates, high bits first).
fn axes_to_transpose(x: &mut [u64]) {
    let n = x.len();
    let top = 1u64 << (H_BITS - 1);
    // inverse undo: walk the bits from the top, reflecting or exchanging the lower ones
    let mut q = top;
    while q > 1 {
        let p = q - 1;
        for i in 0..n {
            if x[i] & q != 0 {
                x[0] ^= p;
            } else {
                let t = (x[0] ^ x[i]) & p;
                x[0] ^= t;
                x[i] ^= t;
            }
        }
        q >>= 1;
    }
    // gray encode
    for i in 1..n {
        x[i] ^= x[i - 1];
    }
    let mut t = 0u64;
    let mut q = top;
    while q > 1 {
        if x[n - 1] & q != 0 {
            t ^= q - 1;
        }
        q >>= 1;
    }
    for v in x.iter_mut() {
        *v ^= t;
    }
}

/// The hilbert index of one point (its coordinates as Java's longs), as the magnitude bytes
/// of the distance: `ceil(63 × dims / 8)` bytes, big-endian.
fn hilbert_magnitude(point: &[i64], out: &mut Vec<u8>, spread: Option<&Spread>) {
    let mut buf = [0u64; 16];
    let mut heap;
    let x: &mut [u64] = if point.len() <= buf.len() {
        &mut buf[..point.len()]
    } else {
        heap = vec![0u64; point.len()];
        &mut heap
    };
    for (x, &v) in x.iter_mut().zip(point) {
        *x = v as u64;
    }
    axes_to_transpose(x);
    let bits = H_BITS as usize * x.len();
    let len = bits.div_ceil(8);
    out.clear();
    out.resize(len, 0);
    if let Some(spread) = spread.filter(|s| s.k == x.len() && s.width == 8) {
        // the distance's bits are the coordinates' 63 bits interleaved, most significant
        // first: interleave them shifted to the top of each word (8n bytes, the distance
        // followed by n zero bits), then shift the n zero bits out
        let n = x.len();
        for v in x.iter_mut() {
            *v <<= 64 - H_BITS;
        }
        let mut wide = [0u8; 64];
        spread.interleave_words(x, &mut wide[..8 * n]);
        let wide = &wide[..8 * n];
        // `wide` >> n, as `len` bytes: byte i of the result ends at bit 8 * (8n - len + i)
        let skip = 8 * n - len; // whole bytes of `wide` before the result's first byte
        for (i, o) in out.iter_mut().enumerate() {
            let hi = if skip + i >= 1 { wide[skip + i - 1] } else { 0 };
            let lo = wide[skip + i];
            // the 16 bits hi:lo shifted right by n (1..=8), low byte
            *o = ((u16::from(hi) << 8 | u16::from(lo)) >> n) as u8;
        }
        return;
    }
    // distance bit (bits - 1 - k) is bit (62 - k / n) of coordinate k % n
    for k in 0..bits {
        let (level, dim) = (k / x.len(), k % x.len());
        if x[dim] >> (H_BITS as usize - 1 - level) & 1 != 0 {
            let pos = bits - 1 - k; // from the least significant bit
            out[len - 1 - pos / 8] |= 1 << (pos % 8);
        }
    }
}

/// Java's 63-byte hilbert index of a magnitude: `BigInteger.toByteArray` (a leading zero
/// byte when the top bit is set; one zero byte for 0), then left-padded with zeros or cut to
/// its first 63 bytes (`ConvertBinaryUtil.paddingToNByte`).
fn java_hilbert_bytes(magnitude: &[u8]) -> Vec<u8> {
    let first = magnitude.iter().position(|&b| b != 0);
    let mut big: Vec<u8> = match first {
        None => vec![0],
        Some(f) if magnitude[f] & 0x80 != 0 => {
            let mut v = vec![0];
            v.extend_from_slice(&magnitude[f..]);
            v
        }
        Some(f) => magnitude[f..].to_vec(),
    };
    if big.len() >= H_INDEX_BYTES {
        big.truncate(H_INDEX_BYTES);
        return big;
    }
    let mut out = vec![0u8; H_INDEX_BYTES - big.len()];
    out.append(&mut big);
    out
}

/// The hilbert indexes of the rows, Java's `HilbertIndexer` bytes (63 per row). Needs at
/// least two columns, as Java.
pub fn hilbert_indexes(columns: &[(&str, &DataType, &ArrayRef)]) -> Result<Vec<Vec<u8>>> {
    let (width, flat) = hilbert_sort_keys(columns)?;
    Ok(flat
        .chunks_exact(width)
        .map(|k| {
            if width == H_INDEX_BYTES {
                k.to_vec()
            } else {
                let mut v = vec![0u8; H_INDEX_BYTES - width];
                v.extend_from_slice(k);
                v
            }
        })
        .collect())
}

/// Sort keys equivalent to Java's hilbert indexes: (width, `rows × width` bytes), where the
/// keys are the last `width` bytes of Java's 63-byte index (the bytes before are always zero
/// when fewer than eight columns make the index shorter), so they compare as Java's do.
pub fn hilbert_sort_keys(columns: &[(&str, &DataType, &ArrayRef)]) -> Result<(usize, Vec<u8>)> {
    if columns.len() < 2 {
        return Err(Error::invalid(
            "hilbert sort needs at least two columns (Java's HilbertIndexer)",
        ));
    }
    let values = columns
        .iter()
        .map(|(n, t, a)| h_column(n, t, a.as_ref()))
        .collect::<Result<Vec<_>>>()?;
    let rows = values[0].len();
    // `BigInteger.toByteArray` of a distance of 63 × n bits has at most 63n/8 + 1 bytes
    let max_len = (H_BITS as usize * columns.len()) / 8 + 1;
    let width = max_len.min(H_INDEX_BYTES);
    let mut out = vec![0u8; rows * width];
    let spread = Spread::for_columns(&vec![8; columns.len()]);
    // rows are independent: computed in parallel, each thread with its own scratch
    out.par_chunks_mut(width).enumerate().for_each_init(
        || (vec![0i64; columns.len()], vec![]),
        |(point, mag), (i, slot)| {
            for (p, v) in point.iter_mut().zip(&values) {
                *p = v[i];
            }
            hilbert_magnitude(point, mag, spread.as_ref());
            if mag.len() < H_INDEX_BYTES {
                // shorter than 63 bytes, Java's bytes are the magnitude left-padded with zeros
                // (a `toByteArray` sign byte is one of them; `width` >= its length): their
                // last `width` bytes without building all 63
                let pad = width - mag.len();
                slot[..pad].fill(0);
                slot[pad..].copy_from_slice(mag);
            } else {
                let java = java_hilbert_bytes(mag);
                slot.copy_from_slice(&java[H_INDEX_BYTES - width..]);
            }
        },
    );
    Ok((width, out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{
        BooleanArray, Date32Array, Decimal128Array, Float32Array, Float64Array, Int32Array,
        Int64Array, Int8Array, StringArray, TimestampMicrosecondArray,
    };
    use std::sync::Arc;

    fn ty(kind: TypeKind) -> DataType {
        DataType::new(kind)
    }

    fn z1(t: TypeKind, a: ArrayRef) -> Vec<u8> {
        let t = ty(t);
        z_indexes(&[("c", &t, &a)], 8).unwrap().1
    }

    #[test]
    fn common_prefix_bits_count_leading_shared_bits() {
        assert_eq!(common_prefix_bits(&[0b1000_0000], &[0b0000_0000]), 0);
        assert_eq!(
            common_prefix_bits(&[0xff, 0b0010_0000], &[0xff, 0b0011_0000]),
            11
        );
        assert_eq!(common_prefix_bits(&[1, 2], &[1, 2]), SAME_CELL);
        // a key that is a prefix of a longer one (order keys of variable length) differs
        assert_eq!(common_prefix_bits(&[1], &[1, 0]), 8);
    }

    /// z-order keys of (x, y) in [0, 16)²: one byte, x's bit then y's bit, high bits first.
    fn z2(x: u8, y: u8) -> u8 {
        (0..4).fold(0, |z, b| {
            z | (((x >> (3 - b)) & 1) << (7 - 2 * b)) | (((y >> (3 - b)) & 1) << (6 - 2 * b))
        })
    }

    #[test]
    fn cell_cut_picks_the_highest_bit_change_in_the_window() {
        // every point of the 16 x 16 grid in z-order: position i holds z = i
        let keys: Vec<[u8; 1]> = (0..16u8)
            .flat_map(|x| (0..16u8).map(move |y| [z2(x, y)]))
            .collect();
        let mut perm: Vec<u32> = (0..256).collect();
        perm.sort_by_key(|&i| keys[i as usize]);
        let depth = boundary_depths(&perm, |i| &keys[i][..]);
        assert_eq!(depth[0], 0);
        assert_eq!(depth[128], 0, "x's top bit changes half way");
        assert_eq!(depth[64], 1, "then y's top bit");
        assert_eq!(depth[32], 2);
        assert_eq!(depth[33], 7);
        // a window holding the quarter boundary (64) and lesser ones: the quarter wins, however
        // near the target the lesser ones are
        assert_eq!(cell_cut(&depth, 50..=90, 80), 64);
        assert_eq!(cell_cut(&depth, 50..=90, 51), 64);
        // the half wins over the quarters
        assert_eq!(cell_cut(&depth, 60..=200, 70), 128);
        // the eighths at 160 and 224 have the three quarters (192) between them
        assert_eq!(cell_cut(&depth, 150..=230, 160), 192);
        assert_eq!(cell_cut(&depth, 150..=190, 180), 160);
        // the window's end may hold the boundary
        assert_eq!(cell_cut(&depth, 100..=128, 110), 128);
        // the rows of every file cut there fill one cell: its box is that cell's
        let cut = cell_cut(&depth, 50..=90, 80);
        let xs: Vec<u8> = perm[..cut].iter().map(|&i| i as u8 / 16).collect();
        let ys: Vec<u8> = perm[..cut].iter().map(|&i| i as u8 % 16).collect();
        assert_eq!((xs.iter().max(), ys.iter().max()), (Some(&7), Some(&7)));
    }

    #[test]
    fn cell_cut_falls_back_to_the_size_cut_without_a_boundary() {
        // all keys equal: no boundary anywhere, the target (clamped into the window)
        let keys = vec![[7u8, 7]; 100];
        let perm: Vec<u32> = (0..100).collect();
        let depth = boundary_depths(&perm, |i| &keys[i][..]);
        assert!(depth[1..].iter().all(|&d| d == SAME_CELL));
        assert_eq!(cell_cut(&depth, 20..=60, 40), 40);
        assert_eq!(cell_cut(&depth, 20..=60, 90), 60);
        assert_eq!(cell_cut(&depth, 20..=60, 5), 20);
        // one change in the window, however deep, beats the size cut
        let mut keys = keys;
        for k in &mut keys[57..] {
            k[1] = 8;
        }
        let depth = boundary_depths(&perm, |i| &keys[i][..]);
        assert_eq!(cell_cut(&depth, 20..=60, 40), 57);
        assert_eq!(cell_cut(&depth, 20..=56, 40), 40);
        // a window past the rows is clamped to them
        assert_eq!(cell_cut(&depth, 90..=500, 95), 95);
    }

    #[test]
    fn sort_cells_depths_equal_boundary_depths() {
        // keys of 1 to 20 bytes from a few symbols (ties, shared prefixes past 16 bytes, keys
        // that are prefixes of others) and 8-byte fixed keys
        // a linear congruential generator (Knuth's MMIX constants), high bits
        let mut state = 28u64;
        let mut next = move || {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            state >> 33
        };
        let var: Vec<Vec<u8>> = (0..3000)
            .map(|_| {
                let len = 1 + (next() % 20) as usize;
                let shared = (next() % 18) as usize;
                (0..len)
                    .map(|j| if j < shared { 7 } else { (next() % 3) as u8 })
                    .collect()
            })
            .collect();
        let fixed: Vec<Vec<u8>> = (0..3000)
            .map(|_| (next() % 64).to_be_bytes().to_vec())
            .collect();
        let long: Vec<Vec<u8>> = (0..3000)
            .map(|_| {
                let shared = (next() % 24) as usize;
                (0..20)
                    .map(|j| if j < shared { 7 } else { (next() % 3) as u8 })
                    .collect()
            })
            .collect();
        for (keys, fixed16) in [(&var, false), (&fixed, true), (&long, false)] {
            let key = |i: usize| &keys[i][..];
            let perm = sort_permutation(keys.len(), key, fixed16);
            let (p, d) = sort_cells(keys.len(), key, fixed16);
            assert_eq!(p, perm);
            assert_eq!(d, boundary_depths(&perm, key));
        }
    }

    #[test]
    fn cell_pieces_cut_runs_at_cells_within_the_row_window() {
        // the 16 x 16 grid in z-order (position i holds z = i)
        let keys: Vec<[u8; 1]> = (0..=255u8).map(|z| [z]).collect();
        let perm: Vec<u32> = (0..256).collect();
        let depth = boundary_depths(&perm, |i| &keys[i][..]);
        // at most 70 rows, at least 35: the quarters (64 rows)
        assert_eq!(cell_pieces(&depth, 35, 70), vec![64, 128, 192]);
        // at most 60: the eighths (32), however near 60 the deeper boundaries are
        assert_eq!(
            cell_pieces(&depth, 30, 60),
            vec![32, 64, 96, 128, 160, 192, 224]
        );
        // a narrow window takes the shallowest boundary inside it: 48 (0b0011_0000) from 0
        assert_eq!(cell_pieces(&depth, 40, 50)[0], 48);
        // the rest fits under the max: no cut
        assert!(cell_pieces(&depth, 128, 256).is_empty());
        // equal keys: cut at the max (the assigner's fill)
        let same = [[9u8]; 100];
        let d = boundary_depths(&(0..100).collect::<Vec<u32>>(), |i| &same[i][..]);
        assert_eq!(cell_pieces(&d, 15, 30), vec![30, 60, 90]);
        assert_eq!(cell_pieces(&d, 0, 1).len(), 99);
        assert!(cell_pieces(&[], 5, 10).is_empty());
    }

    #[test]
    fn z_bytes_per_type_follow_java() {
        // ints: sign flipped, widened to 8 bytes
        let a: ArrayRef = Arc::new(Int32Array::from(vec![Some(1), Some(-1), None]));
        assert_eq!(
            z1(TypeKind::Int, a),
            [
                [0x80, 0, 0, 0, 0, 0, 0, 1],
                [0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff],
                [0; 8]
            ]
            .concat()
        );
        // booleans: 0x81 then zeros
        let a: ArrayRef = Arc::new(BooleanArray::from(vec![true, false]));
        assert_eq!(
            z1(TypeKind::Boolean, a),
            [[0x81, 0, 0, 0, 0, 0, 0, 0], [0; 8]].concat()
        );
        // strings: the first bytes, zero-filled
        let a: ArrayRef = Arc::new(StringArray::from(vec!["ab", "abcdefghij"]));
        assert_eq!(
            z1(TypeKind::VarChar(10), a),
            b"ab\0\0\0\0\0\0abcdefgh".to_vec()
        );
        // decimals: BigInteger.toByteArray, filled on the right: 1 -> [1, 0, ...], -1 -> [ff, 0...]
        let a: ArrayRef = Arc::new(
            Decimal128Array::from(vec![1i128, -1, 128])
                .with_precision_and_scale(10, 2)
                .unwrap(),
        );
        assert_eq!(
            z1(
                TypeKind::Decimal {
                    precision: 10,
                    scale: 2
                },
                a
            ),
            [
                [1, 0, 0, 0, 0, 0, 0, 0],
                [0xff, 0, 0, 0, 0, 0, 0, 0],
                [0, 0x80, 0, 0, 0, 0, 0, 0]
            ]
            .concat()
        );
        // doubles: 1.0 = 0x3ff0...; l >> 31 = 0x7fe0 → xor with 0x8000_0000_7fe0_0000
        let a: ArrayRef = Arc::new(Float64Array::from(vec![1.0]));
        let l: i64 = 0x3ff0_0000_0000_0000;
        let want = (l ^ ((l >> 31) | i64::MIN)).to_be_bytes();
        assert_eq!(z1(TypeKind::Double, a), want);
        // floats are widened to doubles first
        let a: ArrayRef = Arc::new(Float32Array::from(vec![1.0f32]));
        assert_eq!(z1(TypeKind::Float, a), want);
        // timestamps: floored millis
        let a: ArrayRef = Arc::new(TimestampMicrosecondArray::from(vec![-1i64]));
        assert_eq!(
            z1(TypeKind::Timestamp(6), a),
            (-1i64 as u64 ^ (1 << 63)).to_be_bytes()
        );
    }

    proptest::proptest! {
        #[test]
        fn spread_interleaves_as_the_bit_loop(
            k in 2usize..=8,
            width in 1usize..=10,
            seed in proptest::collection::vec(proptest::num::u8::ANY, 1..400),
        ) {
            let rows = 3;
            let parts: Vec<Vec<u8>> = (0..k)
                .map(|c| (0..rows * width).map(|j| seed[(c * 31 + j * 7) % seed.len()] ^ (j as u8)).collect())
                .collect();
            let spread = Spread::for_columns(&vec![width; k]).unwrap();
            for row in 0..rows {
                let row_parts: Vec<&[u8]> =
                    parts.iter().map(|p| &p[row * width..(row + 1) * width]).collect();
                let mut slow = vec![0u8; k * width];
                interleave(&row_parts, &mut slow);
                let mut fast = vec![0u8; k * width];
                spread.interleave(&parts, row, &mut fast);
                proptest::prop_assert_eq!(fast, slow);
            }
        }

        #[test]
        fn hilbert_sort_keys_are_the_tail_of_javas_bytes(
            dims in 2usize..=9,
            values in proptest::collection::vec(proptest::num::i64::ANY, 9 * 4),
        ) {
            let t = ty(TypeKind::BigInt);
            let arrays: Vec<ArrayRef> = (0..dims)
                .map(|d| Arc::new(Int64Array::from(values[d * 4..d * 4 + 4].to_vec())) as ArrayRef)
                .collect();
            let cols: Vec<(&str, &DataType, &ArrayRef)> = arrays.iter().map(|a| ("c", &t, a)).collect();
            let (w, flat) = hilbert_sort_keys(&cols).unwrap();
            for row in 0..4 {
                let point: Vec<i64> = (0..dims).map(|d| values[d * 4 + row]).collect();
                let mut mag = vec![];
                hilbert_magnitude(&point, &mut mag, None);
                let java = java_hilbert_bytes(&mag);
                proptest::prop_assert_eq!(&flat[row * w..(row + 1) * w], &java[H_INDEX_BYTES - w..]);
            }
        }

        #[test]
        fn sort_permutation_is_a_stable_sort_by_the_bytes(
            keys in proptest::collection::vec(proptest::collection::vec(0u8..3, 0..20), 0..200),
            width in 1usize..=20,
        ) {
            // variable-length keys
            let mut want: Vec<u32> = (0..keys.len() as u32).collect();
            want.sort_by(|a, b| keys[*a as usize].cmp(&keys[*b as usize]));
            proptest::prop_assert_eq!(sort_permutation(keys.len(), |i| &keys[i], false), want);
            // fixed-width keys, short (one u128) or long
            let flat: Vec<u8> = keys.iter().flat_map(|k| {
                let mut f = k.clone();
                f.resize(width, 1);
                f
            }).collect();
            let key = |i: usize| &flat[i * width..(i + 1) * width];
            let mut want: Vec<u32> = (0..keys.len() as u32).collect();
            want.sort_by(|a, b| key(*a as usize).cmp(key(*b as usize)));
            proptest::prop_assert_eq!(sort_permutation(keys.len(), key, width <= 16), want);
        }
    }

    #[test]
    fn z_interleaves_most_significant_bits_first() {
        let t = ty(TypeKind::TinyInt);
        let a: ArrayRef = Arc::new(Int8Array::from(vec![0i8]));
        let b: ArrayRef = Arc::new(Int8Array::from(vec![-1i8]));
        // a = 80 00.. 00, b = 7f ff .. ff: bits a7 b7 a6 b6 ... = 1 0 0 1 0 1 0 1 = 0x95, ...
        let (w, k) = z_indexes(&[("a", &t, &a), ("b", &t, &b)], 8).unwrap();
        assert_eq!(w, 16);
        assert_eq!(k[0], 0b1001_0101);
        assert_eq!(k[1], 0b0101_0101);
        assert_eq!(k[2], 0b0101_0101);
        // a varchar of 2 bytes beside an int: after byte 1 only the int is left
        let s = ty(TypeKind::VarChar(5));
        let sa: ArrayRef = Arc::new(StringArray::from(vec!["\u{7f}\u{7f}"]));
        let (w, k) = z_indexes(&[("s", &s, &sa), ("a", &t, &a)], 2).unwrap();
        assert_eq!(w, 10);
        assert_eq!(&k[4..], &[0, 0, 0, 0, 0, 0]);
    }

    #[test]
    fn hilbert_of_two_bits_walks_the_curve() {
        // The first cells of a 2-D hilbert curve: (0,0) (0,1)/(1,0) ... distances 0..3 for the
        // four cells of the low quadrant. With 63-bit coordinates the low corner is still
        // distance 0, and the four unit cells get four different distances < 4.
        let t = ty(TypeKind::BigInt);
        let xs: ArrayRef = Arc::new(Int64Array::from(vec![0, 0, 1, 1]));
        let ys: ArrayRef = Arc::new(Int64Array::from(vec![0, 1, 1, 0]));
        let idx = hilbert_indexes(&[("x", &t, &xs), ("y", &t, &ys)]).unwrap();
        let d: Vec<u8> = idx.iter().map(|k| k[62]).collect();
        assert!(idx
            .iter()
            .all(|k| k.len() == 63 && k[..62].iter().all(|&b| b == 0)));
        let mut sorted = d.clone();
        sorted.sort();
        assert_eq!(sorted, vec![0, 1, 2, 3]);
        assert_eq!(d[0], 0);
        // consecutive distances are neighbouring cells
        let mut cells: Vec<(u8, (i64, i64))> = d
            .iter()
            .zip([(0, 0), (0, 1), (1, 1), (1, 0)])
            .map(|(a, b)| (*a, b))
            .collect();
        cells.sort();
        for w in cells.windows(2) {
            let ((_, a), (_, b)) = (w[0], w[1]);
            assert_eq!((a.0 - b.0).abs() + (a.1 - b.1).abs(), 1);
        }
    }

    #[test]
    fn hilbert_needs_two_columns_and_maps_nulls_to_max() {
        let t = ty(TypeKind::Int);
        let a: ArrayRef = Arc::new(Int32Array::from(vec![Some(1), None]));
        assert!(hilbert_indexes(&[("a", &t, &a)]).is_err());
        let d = ty(TypeKind::Date);
        let b: ArrayRef = Arc::new(Date32Array::from(vec![None, Some(3)]));
        let v = h_column("b", &d, b.as_ref()).unwrap();
        assert_eq!(v, vec![i64::MAX, 3]);
        let s = ty(TypeKind::VarChar(9));
        let c: ArrayRef = Arc::new(StringArray::from(vec!["ab", "abcdefghi"]));
        assert_eq!(
            h_column("c", &s, c.as_ref()).unwrap(),
            vec![0x6162, i64::from_be_bytes(*b"abcdefgh")]
        );
        let t8 = ty(TypeKind::TinyInt);
        let e: ArrayRef = Arc::new(Int8Array::from(vec![-1i8]));
        assert_eq!(h_column("e", &t8, e.as_ref()).unwrap(), vec![255]);
    }

    #[test]
    fn big_integer_bytes_are_minimal_twos_complement() {
        assert_eq!(big_integer_bytes(0), vec![0]);
        assert_eq!(big_integer_bytes(127), vec![0x7f]);
        assert_eq!(big_integer_bytes(128), vec![0, 0x80]);
        assert_eq!(big_integer_bytes(-128), vec![0x80]);
        assert_eq!(big_integer_bytes(-129), vec![0xff, 0x7f]);
        assert_eq!(java_hilbert_bytes(&[0, 0]).len(), 63);
        assert_eq!(java_hilbert_bytes(&[0x80])[61..], [0, 0x80]);
    }
}
