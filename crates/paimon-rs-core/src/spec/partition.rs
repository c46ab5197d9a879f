//! Partition directory names (paimon-format.md §8), as Java's `InternalRowPartitionComputer`
//! and `PartitionPathUtils` build them: `k1=v1/k2=v2/`, names and values escaped.
//!
//! Value text follows Java:
//! * `partition.legacy-name=true` (default): `toString()` of the internal value. DATE and TIME
//!   are their ints (days since epoch, millis of day); TIMESTAMP/LTZ is
//!   `LocalDateTime.toString()` of the stored (UTC) fields (`2024-01-01T00:00`,
//!   `2024-01-01T00:00:01.500`); BINARY is rejected (Java would print `[B@<hash>`).
//! * `legacy-name=false`: Paimon's CAST to STRING. DATE `yyyy-MM-dd`; TIME `HH:mm:ss[.fff]`;
//!   TIMESTAMP `yyyy-MM-dd HH:mm:ss[.fraction]` (trailing zeros trimmed down to the type's
//!   precision); BINARY decoded as UTF-8. LTZ is rendered in UTC (Java uses the JVM's zone).
//! * Both: integers in decimal, BOOLEAN `true`/`false`, DECIMAL plain (`12.30`, `-0.05`),
//!   FLOAT/DOUBLE as Java's `Float/Double.toString` (shortest round-trip digits, as JDK 19+;
//!   plain for 1e-3 <= |v| < 1e7 else `d.dddE±n`; `NaN`, `Infinity`), strings as-is.

use crate::error::{Error, Result};
use crate::spec::datum::Datum;
use crate::spec::types::{DataType, TypeKind};

/// Java's `partition.default-name` default.
pub const DEFAULT_PARTITION_NAME: &str = "__DEFAULT_PARTITION__";

#[inline]
fn needs_escaping(c: char) -> bool {
    matches!(
        c,
        '\u{00}'
            ..='\u{1F}'
                | '"'
                | '#'
                | '%'
                | '\''
                | '*'
                | '/'
                | ':'
                | '='
                | '?'
                | '\\'
                | '\u{7F}'
                | '{'
                | '}'
                | '['
                | ']'
                | '^'
    )
}

/// A partition filter of an overwrite: equality on some partition columns (all if empty).
pub type PartitionSpec = Vec<(String, Option<Datum>)>;

/// Java `PartitionPathUtils.escapePathName`: the characters of §8 become `%XX` (uppercase hex);
/// everything else (space and non-ASCII included) is kept.
pub fn escape_path_name(s: &str) -> String {
    if !s.chars().any(needs_escaping) {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if needs_escaping(c) {
            out.push_str(&format!("%{:02X}", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}

/// Java's `Character.isWhitespace` (by char; supplementary characters never are).
fn java_is_whitespace(c: char) -> bool {
    matches!(c,
        '\t' | '\n' | '\u{0B}' | '\u{0C}' | '\r' | '\u{1C}'..='\u{1F}' | ' ' | '\u{1680}'
        | '\u{2000}'..='\u{2006}' | '\u{2008}'..='\u{200A}' | '\u{2028}' | '\u{2029}'
        | '\u{205F}' | '\u{3000}')
}

/// Java `StringUtils.isNullOrWhitespaceOnly` for a present string.
fn is_blank(s: &str) -> bool {
    s.chars().all(java_is_whitespace)
}

/// The text of one partition value (module docs), `None` for null. The caller replaces `None`
/// and blank text by the default partition name ([`partition_path`] does). Errors on a value
/// that does not match `t`, on BINARY in legacy mode, and on nested types.
pub fn partition_value_string(
    value: &Option<Datum>,
    t: &DataType,
    legacy_name: bool,
) -> Result<Option<String>> {
    use TypeKind as K;
    let Some(d) = value else {
        return Ok(None);
    };
    let mismatch = || Error::invalid(format!("partition value {d:?} does not match type {t}"));
    let s = match (&t.kind, d) {
        (K::Boolean, Datum::Bool(v)) => v.to_string(),
        (K::TinyInt, Datum::TinyInt(v)) => v.to_string(),
        (K::SmallInt, Datum::SmallInt(v)) => v.to_string(),
        (K::Int, Datum::Int(v)) => v.to_string(),
        (K::BigInt, Datum::BigInt(v)) => v.to_string(),
        (K::Float, Datum::Float(v)) => java_float_to_string(*v),
        (K::Double, Datum::Double(v)) => java_double_to_string(*v),
        (K::Decimal { scale, .. }, Datum::Decimal(v)) => decimal_plain_string(*v, *scale),
        (K::Char(_) | K::VarChar(_), Datum::String(v)) => v.clone(),
        (K::Binary(_) | K::VarBinary(_), Datum::Bytes(v)) => {
            if legacy_name {
                return Err(Error::unsupported(format!(
                    "BINARY partition column ({t}) with partition.legacy-name=true"
                )));
            }
            String::from_utf8_lossy(v).into_owned()
        }
        (K::Date, Datum::Date(v)) => {
            if legacy_name {
                v.to_string()
            } else {
                let (y, m, d) = civil_from_days(*v as i64);
                format!("{}-{m:02}-{d:02}", java_int4(y)?)
            }
        }
        (K::Time(p), Datum::Time(v)) => {
            if legacy_name {
                v.to_string()
            } else {
                format_time_millis(*v, *p)
            }
        }
        (K::Timestamp(p) | K::LocalZonedTimestamp(p), Datum::Timestamp { millis, nanos }) => {
            if !(0..=999_999).contains(nanos) {
                return Err(Error::invalid(format!(
                    "timestamp nano-of-millisecond {nanos} out of range"
                )));
            }
            let f = DateTimeFields::from_timestamp(*millis, *nanos);
            if legacy_name {
                f.java_local_date_time()
            } else {
                f.sql_timestamp(*p)?
            }
        }
        _ if t.is_nested() => {
            return Err(Error::unsupported(format!("partition column of type {t}")))
        }
        _ => return Err(mismatch()),
    };
    Ok(Some(s))
}

/// Relative partition directory `k1=v1/k2=v2/` (trailing slash; `""` with no partition keys).
/// Null, empty and whitespace-only values become `default_name`; names and values are escaped.
pub fn partition_path(
    names: &[String],
    types: &[DataType],
    values: &[Option<Datum>],
    default_name: &str,
    legacy_name: bool,
) -> Result<String> {
    if names.len() != types.len() || names.len() != values.len() {
        return Err(Error::invalid(format!(
            "partition: {} names, {} types, {} values",
            names.len(),
            types.len(),
            values.len()
        )));
    }
    let mut out = String::new();
    for ((name, t), v) in names.iter().zip(types).zip(values) {
        let text = partition_value_string(v, t, legacy_name)?;
        let text = match text.as_deref() {
            Some(s) if !is_blank(s) => s,
            _ => default_name,
        };
        out.push_str(&escape_path_name(name));
        out.push('=');
        out.push_str(&escape_path_name(text));
        out.push('/');
    }
    Ok(out)
}

// ------------------------------------------------------------------------------------------
// Number formatting
// ------------------------------------------------------------------------------------------

/// `BigDecimal.toPlainString()` of `unscaled * 10^-scale`.
fn decimal_plain_string(unscaled: i128, scale: u32) -> String {
    let digits = unscaled.unsigned_abs().to_string();
    let sign = if unscaled < 0 { "-" } else { "" };
    let scale = scale as usize;
    if scale == 0 {
        return format!("{sign}{digits}");
    }
    if digits.len() > scale {
        let (i, f) = digits.split_at(digits.len() - scale);
        format!("{sign}{i}.{f}")
    } else {
        format!("{sign}0.{}{digits}", "0".repeat(scale - digits.len()))
    }
}

/// Split Rust's `{:e}` output (`-1.25e-3`) into significant digits and decimal exponent.
fn sci_parts(sci: &str) -> (String, i32) {
    let body = sci.trim_start_matches('-');
    let (mantissa, exp) = body.split_once('e').unwrap_or((body, "0"));
    let digits = mantissa.chars().filter(|c| *c != '.').collect();
    (digits, exp.parse().unwrap_or(0))
}

/// Java's `Double/Float.toString` layout of a finite non-zero value. `shortest` is Rust's
/// shortest round-trip `{:e}` form; `two_digits` the `{:.1e}` form, used when the shortest has
/// one digit (Java then picks the closest two-digit decimal: `4.9E-324`, not `5.0E-324`).
fn java_fp_layout(shortest: &str, two_digits: &str, negative: bool) -> String {
    let sign = if negative { "-" } else { "" };
    let (mut digits, mut exp) = sci_parts(shortest);
    if digits.len() == 1 {
        (digits, exp) = sci_parts(two_digits);
        while digits.len() > 1 && digits.ends_with('0') {
            digits.pop();
        }
    }
    if (-3..7).contains(&exp) {
        if exp >= 0 {
            let int_len = exp as usize + 1;
            if digits.len() > int_len {
                format!("{sign}{}.{}", &digits[..int_len], &digits[int_len..])
            } else {
                format!("{sign}{digits}{}.0", "0".repeat(int_len - digits.len()))
            }
        } else {
            format!("{sign}0.{}{digits}", "0".repeat((-exp - 1) as usize))
        }
    } else {
        let frac = if digits.len() > 1 { &digits[1..] } else { "0" };
        format!("{sign}{}.{frac}E{exp}", &digits[..1])
    }
}

/// Java `Double.toString` (JDK 19+ algorithm: shortest digits that round-trip).
pub fn java_double_to_string(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v < 0.0 { "-Infinity" } else { "Infinity" }.into()
    } else if v == 0.0 {
        if v.is_sign_negative() { "-0.0" } else { "0.0" }.into()
    } else {
        java_fp_layout(&format!("{v:e}"), &format!("{v:.1e}"), v < 0.0)
    }
}

/// Java `Float.toString` (JDK 19+ algorithm: shortest digits that round-trip as a float).
pub fn java_float_to_string(v: f32) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v < 0.0 { "-Infinity" } else { "Infinity" }.into()
    } else if v == 0.0 {
        if v.is_sign_negative() { "-0.0" } else { "0.0" }.into()
    } else {
        java_fp_layout(&format!("{v:e}"), &format!("{v:.1e}"), v < 0.0)
    }
}

// ------------------------------------------------------------------------------------------
// Date/time formatting
// ------------------------------------------------------------------------------------------

/// (year, month, day) of a day count since 1970-01-01, proleptic Gregorian.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + (m <= 2) as i64, m, d)
}

/// Java `DateTimeUtils.int4` (4 digits, the year modulo 10000); negative years are rejected
/// (Java would print garbage characters).
fn java_int4(year: i64) -> Result<String> {
    if year < 0 {
        return Err(Error::unsupported(format!(
            "formatting year {year} as a partition value"
        )));
    }
    Ok(format!("{:04}", year % 10_000))
}

/// Java `DateTimeUtils.formatTimestampMillis(time, precision)` (CAST(TIME AS STRING)).
fn format_time_millis(time: i32, precision: u32) -> String {
    let mut time = time as i64;
    while time < 0 {
        time += 86_400_000;
    }
    let h = time / 3_600_000;
    let m = time % 3_600_000 / 60_000;
    let s = time % 60_000 / 1000;
    let mut ms = time % 1000;
    let int2 = |i: i64| format!("{}{}", (i / 10) % 10, i % 10);
    let mut out = format!("{}:{}:{}", int2(h), int2(m), int2(s));
    if precision > 0 {
        out.push('.');
        let mut p = precision;
        while p > 0 {
            out.push(char::from(b'0' + (ms / 100) as u8));
            ms = ms % 100 * 10;
            if ms == 0 {
                break;
            }
            p -= 1;
        }
    }
    out
}

/// Calendar fields of a Paimon timestamp (millis + nano-of-milli), as
/// `Timestamp.toLocalDateTime()` computes them.
struct DateTimeFields {
    year: i64,
    month: u32,
    day: u32,
    hour: u32,
    minute: u32,
    second: u32,
    nano: u32,
}

impl DateTimeFields {
    fn from_timestamp(millis: i64, nanos: i32) -> Self {
        let days = millis.div_euclid(86_400_000);
        let ms = millis.rem_euclid(86_400_000) as u32;
        let (year, month, day) = civil_from_days(days);
        DateTimeFields {
            year,
            month,
            day,
            hour: ms / 3_600_000,
            minute: ms % 3_600_000 / 60_000,
            second: ms % 60_000 / 1000,
            nano: ms % 1000 * 1_000_000 + nanos as u32,
        }
    }

    /// `LocalDateTime.toString()`: `yyyy-MM-ddTHH:mm[:ss[.SSS|.SSSSSS|.SSSSSSSSS]]`.
    fn java_local_date_time(&self) -> String {
        let y = self.year;
        let year = if y.abs() < 1000 {
            if y < 0 {
                format!("-{:04}", -y)
            } else {
                format!("{y:04}")
            }
        } else if y > 9999 {
            format!("+{y}")
        } else {
            y.to_string()
        };
        let mut out = format!(
            "{year}-{:02}-{:02}T{:02}:{:02}",
            self.month, self.day, self.hour, self.minute
        );
        if self.second > 0 || self.nano > 0 {
            out.push_str(&format!(":{:02}", self.second));
            let n = self.nano;
            if n > 0 {
                if n.is_multiple_of(1_000_000) {
                    out.push_str(&format!(".{:03}", n / 1_000_000));
                } else if n.is_multiple_of(1000) {
                    out.push_str(&format!(".{:06}", n / 1000));
                } else {
                    out.push_str(&format!(".{n:09}"));
                }
            }
        }
        out
    }

    /// Java `DateTimeUtils.formatTimestamp(ts, precision)` (CAST(TIMESTAMP AS STRING)).
    fn sql_timestamp(&self, precision: u32) -> Result<String> {
        let mut fraction = format!("{:09}", self.nano);
        while fraction.len() > precision as usize && fraction.ends_with('0') {
            fraction.pop();
        }
        let mut out = format!(
            "{}-{:02}-{:02} {:02}:{:02}:{:02}",
            java_int4(self.year)?,
            self.month,
            self.day,
            self.hour,
            self.minute,
            self.second
        );
        if !fraction.is_empty() {
            out.push('.');
            out.push_str(&fraction);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::types::MAX_LEN;

    fn ty(k: TypeKind) -> DataType {
        DataType::new(k)
    }
    fn pv(d: Datum, k: TypeKind, legacy: bool) -> String {
        partition_value_string(&Some(d), &ty(k), legacy)
            .unwrap()
            .unwrap()
    }
    fn ts(millis: i64, nanos: i32) -> Datum {
        Datum::Timestamp { millis, nanos }
    }

    #[test]
    fn escaping() {
        assert_eq!(escape_path_name("eu/west 1"), "eu%2Fwest 1");
        assert_eq!(
            escape_path_name("a\"#%'*/:=?\\\u{7f}{}[]^b"),
            "a%22%23%25%27%2A%2F%3A%3D%3F%5C%7F%7B%7D%5B%5D%5Eb"
        );
        assert_eq!(escape_path_name("\u{1}\n\u{1f}"), "%01%0A%1F");
        assert_eq!(
            escape_path_name("héllo wörld-_.,;!@$&()+~`|<>"),
            "héllo wörld-_.,;!@$&()+~`|<>"
        );
    }

    #[test]
    fn paths() {
        let names = vec!["region".to_string(), "dt".to_string()];
        let string = ty(TypeKind::VarChar(MAX_LEN));
        let types = vec![string.clone(), string.clone()];
        let p = partition_path(
            &names,
            &types,
            &[
                Some(Datum::String("eu/west 1".into())),
                Some(Datum::String("2024-01-01".into())),
            ],
            DEFAULT_PARTITION_NAME,
            true,
        )
        .unwrap();
        assert_eq!(p, "region=eu%2Fwest 1/dt=2024-01-01/");
        for blank in [
            None,
            Some(Datum::String("".into())),
            Some(Datum::String(" \t\u{3000}".into())),
        ] {
            let p = partition_path(
                &names[..1],
                &types[..1],
                &[blank],
                DEFAULT_PARTITION_NAME,
                true,
            )
            .unwrap();
            assert_eq!(p, "region=__DEFAULT_PARTITION__/");
        }
        // A non-breaking space is not whitespace for Java.
        let p = partition_path(
            &names[..1],
            &types[..1],
            &[Some(Datum::String("\u{a0}".into()))],
            DEFAULT_PARTITION_NAME,
            true,
        )
        .unwrap();
        assert_eq!(p, "region=\u{a0}/");
        assert_eq!(
            partition_path(&[], &[], &[], DEFAULT_PARTITION_NAME, true).unwrap(),
            ""
        );
        let p = partition_path(
            &["a=b".to_string()],
            &[ty(TypeKind::Int)],
            &[Some(Datum::Int(-3))],
            DEFAULT_PARTITION_NAME,
            true,
        )
        .unwrap();
        assert_eq!(p, "a%3Db=-3/");
        assert!(partition_path(&names, &types, &[None], DEFAULT_PARTITION_NAME, true).is_err());
    }

    #[test]
    fn legacy_values() {
        assert_eq!(pv(Datum::Date(19723), TypeKind::Date, true), "19723");
        assert_eq!(pv(Datum::Time(1500), TypeKind::Time(0), true), "1500");
        assert_eq!(pv(Datum::Bool(true), TypeKind::Boolean, true), "true");
        assert_eq!(pv(Datum::TinyInt(-8), TypeKind::TinyInt, true), "-8");
        assert_eq!(
            pv(Datum::BigInt(i64::MIN), TypeKind::BigInt, true),
            "-9223372036854775808"
        );
        let dec = |p, s| TypeKind::Decimal {
            precision: p,
            scale: s,
        };
        assert_eq!(pv(Datum::Decimal(1230), dec(10, 2), true), "12.30");
        assert_eq!(pv(Datum::Decimal(-5), dec(10, 2), true), "-0.05");
        assert_eq!(pv(Datum::Decimal(0), dec(10, 3), true), "0.000");
        assert_eq!(pv(Datum::Decimal(42), dec(10, 0), true), "42");
        assert_eq!(
            pv(Datum::Decimal(-10i128.pow(37)), dec(38, 37), true),
            "-1.0000000000000000000000000000000000000"
        );
        // 2024-01-01T00:00 = 1704067200000
        let t6 = TypeKind::Timestamp(6);
        assert_eq!(
            pv(ts(1_704_067_200_000, 0), t6.clone(), true),
            "2024-01-01T00:00"
        );
        assert_eq!(
            pv(ts(1_704_067_201_000, 0), t6.clone(), true),
            "2024-01-01T00:00:01"
        );
        assert_eq!(
            pv(ts(1_704_067_200_500, 0), t6.clone(), true),
            "2024-01-01T00:00:00.500"
        );
        assert_eq!(
            pv(ts(1_704_067_200_123, 456_000), t6.clone(), true),
            "2024-01-01T00:00:00.123456"
        );
        assert_eq!(
            pv(ts(1_704_067_200_000, 7), t6.clone(), true),
            "2024-01-01T00:00:00.000000007"
        );
        assert_eq!(
            pv(ts(-1, 0), TypeKind::LocalZonedTimestamp(3), true),
            "1969-12-31T23:59:59.999"
        );
        assert_eq!(
            pv(ts(1_714_979_289_123, 456_000), t6, true),
            "2024-05-06T07:08:09.123456"
        );
        // Year formatting of LocalDate.toString()
        let day_ms = 86_400_000i64;
        assert_eq!(
            pv(ts(-719_528 * day_ms, 0), TypeKind::Timestamp(3), true),
            "0000-01-01T00:00"
        );
        assert_eq!(
            pv(ts(-719_529 * day_ms, 0), TypeKind::Timestamp(3), true),
            "-0001-12-31T00:00"
        );
        assert_eq!(
            pv(ts(2_932_897 * day_ms, 0), TypeKind::Timestamp(3), true),
            "+10000-01-01T00:00"
        );
        let bin = partition_value_string(
            &Some(Datum::Bytes(b"x".to_vec())),
            &ty(TypeKind::VarBinary(MAX_LEN)),
            true,
        );
        assert!(matches!(bin, Err(Error::Unsupported { .. })));
        assert!(partition_value_string(&Some(Datum::Int(1)), &ty(TypeKind::BigInt), true).is_err());
        assert_eq!(
            partition_value_string(&None, &ty(TypeKind::Int), true).unwrap(),
            None
        );
    }

    #[test]
    fn non_legacy_values() {
        assert_eq!(pv(Datum::Date(19723), TypeKind::Date, false), "2024-01-01");
        assert_eq!(pv(Datum::Date(-1), TypeKind::Date, false), "1969-12-31");
        assert_eq!(pv(Datum::Date(0), TypeKind::Date, false), "1970-01-01");
        assert_eq!(pv(Datum::Date(11016), TypeKind::Date, false), "2000-02-29");
        assert_eq!(
            pv(Datum::Time(3_723_000), TypeKind::Time(0), false),
            "01:02:03"
        );
        assert_eq!(
            pv(Datum::Time(3_723_000), TypeKind::Time(3), false),
            "01:02:03.0"
        );
        assert_eq!(
            pv(Datum::Time(3_723_450), TypeKind::Time(3), false),
            "01:02:03.45"
        );
        assert_eq!(
            pv(Datum::Time(3_723_456), TypeKind::Time(2), false),
            "01:02:03.45"
        );
        let t = |p| TypeKind::Timestamp(p);
        assert_eq!(
            pv(ts(1_704_067_200_000, 0), t(0), false),
            "2024-01-01 00:00:00"
        );
        assert_eq!(
            pv(ts(1_704_067_200_000, 0), t(3), false),
            "2024-01-01 00:00:00.000"
        );
        assert_eq!(
            pv(ts(1_704_067_200_500, 0), t(6), false),
            "2024-01-01 00:00:00.500000"
        );
        assert_eq!(
            pv(ts(1_704_067_200_500, 0), t(1), false),
            "2024-01-01 00:00:00.5"
        );
        assert_eq!(
            pv(ts(1_714_979_289_123, 456_000), t(9), false),
            "2024-05-06 07:08:09.123456000"
        );
        assert_eq!(
            pv(
                Datum::Bytes(b"ab".to_vec()),
                TypeKind::VarBinary(MAX_LEN),
                false
            ),
            "ab"
        );
        assert_eq!(pv(Datum::Double(1.5), TypeKind::Double, false), "1.5");
    }

    #[test]
    fn java_floating_point_strings() {
        let d = java_double_to_string;
        assert_eq!(d(1.0), "1.0");
        assert_eq!(d(1.5), "1.5");
        assert_eq!(d(-2.25), "-2.25");
        assert_eq!(d(1.0e10), "1.0E10");
        assert_eq!(d(1.0e7), "1.0E7");
        assert_eq!(d(9_999_999.0), "9999999.0");
        assert_eq!(d(123_456.789), "123456.789");
        assert_eq!(d(0.001), "0.001");
        assert_eq!(d(0.0001), "1.0E-4");
        assert_eq!(d(1.2345e-5), "1.2345E-5");
        assert_eq!(d(0.1), "0.1");
        assert_eq!(d(0.1 + 0.2), "0.30000000000000004");
        assert_eq!(d(100.0), "100.0");
        assert_eq!(d(0.0), "0.0");
        assert_eq!(d(-0.0), "-0.0");
        assert_eq!(d(f64::NAN), "NaN");
        assert_eq!(d(f64::INFINITY), "Infinity");
        assert_eq!(d(f64::NEG_INFINITY), "-Infinity");
        assert_eq!(d(f64::MAX), "1.7976931348623157E308");
        assert_eq!(d(f64::MIN_POSITIVE), "2.2250738585072014E-308");
        assert_eq!(d(5e-324), "4.9E-324");
        assert_eq!(d(1e-323), "9.9E-324");
        assert_eq!(d(1e23), "1.0E23");
        assert_eq!(d(2e-3), "0.002");
        assert_eq!(d(0.3), "0.3");
        assert_eq!(d(-1e-300), "-1.0E-300");
        let f = java_float_to_string;
        assert_eq!(f(1.1), "1.1");
        assert_eq!(f(1.0e10), "1.0E10");
        assert_eq!(f(0.5), "0.5");
        assert_eq!(f(3.4028235e38), "3.4028235E38");
        assert_eq!(f(1.4e-45), "1.4E-45");
    }
}
