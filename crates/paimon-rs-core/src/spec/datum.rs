//! A single typed value, used where values are handled one at a time: partition values, min/max
//! keys and stats (BinaryRow cells), predicate literals. Hot paths stay columnar (Arrow).

use std::cmp::Ordering;

#[derive(Debug, Clone, PartialEq)]
pub enum Datum {
    Bool(bool),
    TinyInt(i8),
    SmallInt(i16),
    Int(i32),
    BigInt(i64),
    Float(f32),
    Double(f64),
    /// Unscaled value; precision and scale come from the column type.
    Decimal(i128),
    String(String),
    Bytes(Vec<u8>),
    /// Days since 1970-01-01.
    Date(i32),
    /// Milliseconds of the day.
    Time(i32),
    /// Epoch milliseconds plus nanoseconds within the millisecond (0..999_999). For TIMESTAMP
    /// without zone the wall-clock fields as if UTC; for LTZ the UTC instant.
    Timestamp {
        millis: i64,
        nanos: i32,
    },
}

impl Datum {
    /// Paimon's key comparator for two values of the same column type: numbers by value,
    /// strings and binary by unsigned bytes. `None` if the variants differ (a caller bug).
    pub fn compare(&self, other: &Datum) -> Option<Ordering> {
        use Datum::*;
        Some(match (self, other) {
            (Bool(a), Bool(b)) => a.cmp(b),
            (TinyInt(a), TinyInt(b)) => a.cmp(b),
            (SmallInt(a), SmallInt(b)) => a.cmp(b),
            (Int(a), Int(b)) | (Date(a), Date(b)) | (Time(a), Time(b)) => a.cmp(b),
            (BigInt(a), BigInt(b)) => a.cmp(b),
            (Float(a), Float(b)) => a.total_cmp(b),
            (Double(a), Double(b)) => a.total_cmp(b),
            (Decimal(a), Decimal(b)) => a.cmp(b),
            (String(a), String(b)) => a.as_bytes().cmp(b.as_bytes()),
            (Bytes(a), Bytes(b)) => a.cmp(b),
            (
                Timestamp {
                    millis: a,
                    nanos: x,
                },
                Timestamp {
                    millis: b,
                    nanos: y,
                },
            ) => (a, x).cmp(&(b, y)),
            _ => return None,
        })
    }
}

/// Compare two nullable cells with nulls first (Paimon's key order).
pub fn compare_nullable(a: &Option<Datum>, b: &Option<Datum>) -> Ordering {
    match (a, b) {
        (None, None) => Ordering::Equal,
        (None, Some(_)) => Ordering::Less,
        (Some(_), None) => Ordering::Greater,
        (Some(x), Some(y)) => x.compare(y).unwrap_or(Ordering::Equal),
    }
}

/// Compare two rows field by field, nulls first.
pub fn compare_rows(a: &[Option<Datum>], b: &[Option<Datum>]) -> Ordering {
    for (x, y) in a.iter().zip(b.iter()) {
        let o = compare_nullable(x, y);
        if o != Ordering::Equal {
            return o;
        }
    }
    a.len().cmp(&b.len())
}
