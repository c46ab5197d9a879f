//! Min / max / null-count statistics of data files (SimpleStats, paimon-format.md §4.4),
//! collected incrementally batch by batch. Stats are only an optimisation, but wrong stats make
//! readers skip files: when in doubt a cell is left null ("unknown").

use arrow::compute::{max, max_boolean, min, min_boolean};
use arrow_array::cast::AsArray;
use arrow_array::types::*;
use arrow_array::Array;
use arrow_schema::{DataType as ArrowType, TimeUnit};

use crate::error::{Error, Result};
use crate::options::StatsMode;
use crate::spec::binary_row::serialize_row;
use crate::spec::datum::Datum;
use crate::spec::manifest::SimpleStats;
use crate::spec::types::DataType;

/// Split an epoch value in `unit` into (millis, nano-of-milli).
pub fn timestamp_parts(v: i64, unit: &TimeUnit) -> (i64, i32) {
    match unit {
        TimeUnit::Second => (v.saturating_mul(1000), 0),
        TimeUnit::Millisecond => (v, 0),
        TimeUnit::Microsecond => (v.div_euclid(1000), (v.rem_euclid(1000) * 1000) as i32),
        TimeUnit::Nanosecond => (v.div_euclid(1_000_000), v.rem_euclid(1_000_000) as i32),
    }
}

/// (min, max) of the non-null values of `array`, or None if there are none or the type has no
/// ordering stats (nested types).
pub fn min_max(array: &dyn Array) -> Option<(Datum, Datum)> {
    macro_rules! prim {
        ($t:ty, $wrap:expr) => {{
            let a = array.as_primitive::<$t>();
            match (min(a), max(a)) {
                (Some(x), Some(y)) => Some(($wrap(x), $wrap(y))),
                _ => None,
            }
        }};
    }
    match array.data_type() {
        ArrowType::Boolean => {
            let a = array.as_boolean();
            match (min_boolean(a), max_boolean(a)) {
                (Some(x), Some(y)) => Some((Datum::Bool(x), Datum::Bool(y))),
                _ => None,
            }
        }
        ArrowType::Int8 => prim!(Int8Type, Datum::TinyInt),
        ArrowType::Int16 => prim!(Int16Type, Datum::SmallInt),
        ArrowType::Int32 => prim!(Int32Type, Datum::Int),
        ArrowType::Int64 => prim!(Int64Type, Datum::BigInt),
        ArrowType::Float32 => {
            let a = array.as_primitive::<Float32Type>();
            // NaN makes min/max meaningless for pruning: leave unknown
            if a.iter().flatten().any(f32::is_nan) {
                return None;
            }
            prim!(Float32Type, Datum::Float)
        }
        ArrowType::Float64 => {
            let a = array.as_primitive::<Float64Type>();
            if a.iter().flatten().any(f64::is_nan) {
                return None;
            }
            prim!(Float64Type, Datum::Double)
        }
        ArrowType::Decimal128(..) => prim!(Decimal128Type, Datum::Decimal),
        ArrowType::Date32 => prim!(Date32Type, Datum::Date),
        ArrowType::Time32(TimeUnit::Millisecond) => prim!(Time32MillisecondType, Datum::Time),
        ArrowType::Timestamp(unit, _) => {
            let unit = *unit;
            let wrap = move |v: i64| {
                let (millis, nanos) = timestamp_parts(v, &unit);
                Datum::Timestamp { millis, nanos }
            };
            match array.data_type() {
                ArrowType::Timestamp(TimeUnit::Second, _) => prim!(TimestampSecondType, wrap),
                ArrowType::Timestamp(TimeUnit::Millisecond, _) => {
                    prim!(TimestampMillisecondType, wrap)
                }
                ArrowType::Timestamp(TimeUnit::Microsecond, _) => {
                    prim!(TimestampMicrosecondType, wrap)
                }
                _ => prim!(TimestampNanosecondType, wrap),
            }
        }
        ArrowType::Utf8 => {
            let a = array.as_string::<i32>();
            // UTF-8 byte order is code point order, as arrow's min_string / max_string
            let (x, y) = bytes_min_max(a.iter().map(|v| v.map(str::as_bytes)))?;
            let s = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
            Some((Datum::String(s(x)), Datum::String(s(y))))
        }
        ArrowType::Binary => {
            let a = array.as_binary::<i32>();
            let (x, y) = bytes_min_max(a.iter())?;
            Some((Datum::Bytes(x.to_vec()), Datum::Bytes(y.to_vec())))
        }
        _ => None,
    }
}

/// (min, max) of the non-null values in one pass (a value above the min is compared with the
/// max only; arrow's min_* and max_* make two passes, a comparison per value each). Each value
/// is first compared by its first 8 bytes as a big-endian integer, held for the current min and
/// max ([`prefix8`]); only an equal prefix goes to the byte-slice comparison (a `memcmp` call
/// per comparison was ~2% of a bulk write's CPU, session 26).
fn bytes_min_max<'a>(
    values: impl Iterator<Item = Option<&'a [u8]>>,
) -> Option<(&'a [u8], &'a [u8])> {
    let mut values = values.flatten();
    let first = values.next()?;
    let (mut lo, mut hi) = (first, first);
    let (mut plo, mut phi) = (prefix8(first), prefix8(first));
    for v in values {
        let p = prefix8(v);
        let below = if p != plo { p < plo } else { v < lo };
        if below {
            (lo, plo) = (v, p);
            continue;
        }
        let above = if p != phi { p > phi } else { v > hi };
        if above {
            (hi, phi) = (v, p);
        }
    }
    Some((lo, hi))
}

/// The first 8 bytes of `v` as a big-endian integer, zero-padded. Two values whose prefixes
/// differ compare as their prefixes do: at the first differing byte both either hold real bytes,
/// or the shorter value's padding 0 meets a real byte > 0 of the longer one, whose prefix the
/// shorter value then is. Equal prefixes say nothing (`"a"` and `"a\0"`).
#[inline(always)]
fn prefix8(v: &[u8]) -> u64 {
    match v.first_chunk::<8>() {
        Some(b) => u64::from_be_bytes(*b),
        None => {
            let mut b = [0u8; 8];
            for (d, s) in b.iter_mut().zip(v) {
                *d = *s;
            }
            u64::from_be_bytes(b)
        }
    }
}

/// Truncate a string min to `n` chars (still a lower bound).
fn truncate_min(s: &str, n: usize) -> String {
    s.chars().take(n).collect()
}

/// Truncate a string max to `n` chars and bump the last char so it stays an upper bound;
/// None if no bound can be formed.
fn truncate_max(s: &str, n: usize) -> Option<String> {
    if s.chars().count() <= n {
        return Some(s.to_string());
    }
    let mut chars: Vec<char> = s.chars().take(n).collect();
    while let Some(last) = chars.pop() {
        if let Some(next) = char::from_u32(last as u32 + 1) {
            chars.push(next);
            return Some(chars.into_iter().collect());
        }
    }
    None
}

/// Incremental stats of one column.
#[derive(Debug, Clone)]
pub struct ColumnStats {
    min: Option<Datum>,
    max: Option<Datum>,
    nulls: i64,
    mode: StatsMode,
    ordered: bool,
}

impl ColumnStats {
    pub fn new(t: &DataType, mode: StatsMode) -> Self {
        ColumnStats {
            min: None,
            max: None,
            nulls: 0,
            mode,
            ordered: !t.is_nested(),
        }
    }

    pub fn update(&mut self, array: &dyn Array) {
        self.nulls += array.null_count() as i64;
        if !self.ordered || matches!(self.mode, StatsMode::None | StatsMode::Counts) {
            return;
        }
        if let Some((lo, hi)) = min_max(array) {
            let take_lo = match &self.min {
                None => true,
                Some(m) => lo.compare(m) == Some(std::cmp::Ordering::Less),
            };
            if take_lo {
                self.min = Some(lo);
            }
            let take_hi = match &self.max {
                None => true,
                Some(m) => hi.compare(m) == Some(std::cmp::Ordering::Greater),
            };
            if take_hi {
                self.max = Some(hi);
            }
        }
    }

    /// (min, max, null count) as written to the manifest.
    pub fn finish(&self) -> (Option<Datum>, Option<Datum>, Option<i64>) {
        if matches!(self.mode, StatsMode::None) {
            return (None, None, None);
        }
        let (mut lo, mut hi) = (self.min.clone(), self.max.clone());
        if let StatsMode::Truncate(n) = self.mode {
            if let Some(Datum::String(s)) = &lo {
                lo = Some(Datum::String(truncate_min(s, n)));
            }
            if let Some(Datum::String(s)) = &hi {
                hi = truncate_max(s, n).map(Datum::String);
            }
            if let Some(Datum::Bytes(b)) = &lo {
                lo = Some(Datum::Bytes(b.iter().take(n).copied().collect()));
            }
            if let Some(Datum::Bytes(b)) = &hi {
                if b.len() > n {
                    hi = None;
                }
            }
        }
        (lo, hi, Some(self.nulls))
    }
}

/// Stats of several columns, serialized as SimpleStats.
#[derive(Debug, Clone)]
pub struct StatsCollector {
    types: Vec<DataType>,
    cols: Vec<ColumnStats>,
}

impl StatsCollector {
    pub fn new(types: &[DataType], mode: StatsMode) -> Self {
        StatsCollector {
            types: types.to_vec(),
            cols: types.iter().map(|t| ColumnStats::new(t, mode)).collect(),
        }
    }

    pub fn update(&mut self, arrays: &[&dyn Array]) -> Result<()> {
        if arrays.len() != self.cols.len() {
            return Err(Error::Internal("stats column count mismatch".into()));
        }
        for (c, a) in self.cols.iter_mut().zip(arrays) {
            c.update(*a);
        }
        Ok(())
    }

    pub fn finish(&self) -> Result<SimpleStats> {
        let mut mins = Vec::with_capacity(self.cols.len());
        let mut maxs = Vec::with_capacity(self.cols.len());
        let mut nulls = Vec::with_capacity(self.cols.len());
        for c in &self.cols {
            let (lo, hi, n) = c.finish();
            mins.push(lo);
            maxs.push(hi);
            nulls.push(n);
        }
        Ok(SimpleStats {
            min_values: serialize_row(&self.types, &mins)?,
            max_values: serialize_row(&self.types, &maxs)?,
            null_counts: nulls,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncation_keeps_bounds() {
        assert_eq!(truncate_min("abcdef", 3), "abc");
        assert_eq!(truncate_max("abcdef", 3).as_deref(), Some("abd"));
        assert_eq!(truncate_max("ab", 3).as_deref(), Some("ab"));
    }

    proptest::proptest! {
        #[test]
        fn string_and_binary_min_max_equal_arrow(
            // shared prefixes, NULs and values of up to 8 bytes besides longer ones: the
            // 8-byte prefix comparison's edge cases
            vals in proptest::collection::vec(
                proptest::option::of("([ab\\x00]{0,10}|.{0,12})"), 0..60),
        ) {
            use arrow::compute::{max_binary, max_string, min_binary, min_string};
            use arrow_array::{BinaryArray, StringArray};
            let s = StringArray::from(vals.clone());
            let want = min_string(&s).zip(max_string(&s)).map(|(x, y)| {
                (Datum::String(x.into()), Datum::String(y.into()))
            });
            proptest::prop_assert_eq!(min_max(&s), want);
            let b = BinaryArray::from(
                vals.iter().map(|v| v.as_deref().map(str::as_bytes)).collect::<Vec<_>>(),
            );
            let want = min_binary(&b).zip(max_binary(&b)).map(|(x, y)| {
                (Datum::Bytes(x.to_vec()), Datum::Bytes(y.to_vec()))
            });
            proptest::prop_assert_eq!(min_max(&b), want);
        }
    }

    #[test]
    fn incremental_min_max() {
        use arrow_array::Int64Array;
        let t = DataType::new(crate::spec::types::TypeKind::BigInt);
        let mut c = ColumnStats::new(&t, StatsMode::Full);
        c.update(&Int64Array::from(vec![Some(5), None, Some(9)]));
        c.update(&Int64Array::from(vec![Some(-1), Some(3)]));
        assert_eq!(
            c.finish(),
            (Some(Datum::BigInt(-1)), Some(Datum::BigInt(9)), Some(1))
        );
    }
}
