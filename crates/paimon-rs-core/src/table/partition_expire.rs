//! Partition expiration (Java's `NormalPartitionExpire` with the `values-time` strategy,
//! `PartitionTimeExtractor`): a partition whose time, read from its values, is older than
//! `partition.expiration-time` is dropped in an OVERWRITE snapshot.
//!
//! After a commit, when `partition.expiration-check-interval` (default 1 h) has passed since the
//! commit object's last check (which starts a random part of an interval in the past, as in
//! Java), or always with an interval of 0, or at the end of a batch job with
//! `end-input.check-partition-expire`. `expire_partitions` runs it on demand. The partition time
//! is the first partition value, or `partition.timestamp-pattern` (`$dt $hour:00:00`) filled
//! with the values, parsed with `partition.timestamp-formatter` (Java's `DateTimeFormatter`
//! letters y M d H m s) or else as `yyyy-MM-dd[ HH:mm:ss[.S…]]`; values that do not parse, and
//! NULL values, never expire (Java logs them and keeps the partition).

use std::collections::BTreeMap;

use chrono::{NaiveDate, NaiveDateTime};

use super::FileStoreTable;
use crate::error::{Error, Result};
use crate::options::parse_duration_ms;
use crate::spec::binary_row::deserialize_row;
use crate::spec::partition::{partition_value_string, PartitionSpec};
use crate::spec::snapshot::BATCH_COMMIT_IDENTIFIER;

/// The table's partition expiration settings; None when `partition.expiration-time` is unset or
/// the table has no partitions.
#[derive(Debug, Clone)]
pub struct PartitionExpire {
    expiration_ms: i64,
    pub(crate) check_interval_ms: i64,
    max_num: usize,
    batch_size: Option<usize>,
    pattern: Option<String>,
    /// `partition.timestamp-formatter` in chrono's syntax
    formatter: Option<String>,
    end_input: bool,
}

fn bad(key: &str, v: &str, why: &str) -> Error {
    Error::invalid(format!("option '{key}' = '{v}': {why}"))
}

/// A Java `DateTimeFormatter` pattern as a chrono format (letters y M d H m s, quoted literals).
fn java_formatter_to_chrono(p: &str) -> Result<String> {
    let key = "partition.timestamp-formatter";
    let chars: Vec<char> = p.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '\'' {
            let end = chars[i + 1..]
                .iter()
                .position(|&x| x == '\'')
                .ok_or_else(|| bad(key, p, "unterminated quote"))?;
            for &x in &chars[i + 1..i + 1 + end] {
                if x == '%' {
                    out.push_str("%%");
                } else {
                    out.push(x);
                }
            }
            i += end + 2;
            continue;
        }
        if c.is_ascii_alphabetic() {
            let n = chars[i..].iter().take_while(|&&x| x == c).count();
            let spec = match (c, n) {
                ('y' | 'u', 4) => "%Y",
                ('y' | 'u', 2) => "%y",
                ('M', 1 | 2) => "%m",
                ('d', 1 | 2) => "%d",
                ('H', 1 | 2) => "%H",
                ('m', 1 | 2) => "%M",
                ('s', 1 | 2) => "%S",
                _ => {
                    return Err(Error::unsupported(format!(
                        "option 'partition.timestamp-formatter' = '{p}': pattern letters \
                         '{}' are not supported by paimon_rs (only yyyy, yy, MM, dd, HH, mm, ss \
                         and quoted literals)",
                        c.to_string().repeat(n)
                    )))
                }
            };
            out.push_str(spec);
            i += n;
            continue;
        }
        if c == '%' {
            out.push_str("%%");
        } else {
            out.push(c);
        }
        i += 1;
    }
    Ok(out)
}

/// Java's `PartitionTimeExtractor.replacePattern`: `$key` replaced by its value, longer keys
/// first.
fn replace_pattern(pattern: &str, keys: &[String], values: &[String]) -> String {
    let mut order: Vec<usize> = (0..keys.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(keys[i].len()));
    let mut out = String::new();
    let mut rest = pattern;
    while let Some(c) = rest.chars().next() {
        if c == '$' {
            if let Some(&i) = order.iter().find(|&&i| rest[1..].starts_with(&keys[i])) {
                out.push_str(&values[i]);
                rest = &rest[1 + keys[i].len()..];
                continue;
            }
        }
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out
}

impl PartitionExpire {
    pub fn from_table(table: &FileStoreTable) -> Result<Option<Self>> {
        let raw = &table.options.raw;
        let Some(time) = raw.get("partition.expiration-time") else {
            return Ok(None);
        };
        if table.partition_keys().is_empty() {
            return Ok(None); // Java creates no PartitionExpire for an unpartitioned table
        }
        let expiration_ms = parse_duration_ms("partition.expiration-time", time)? as i64;
        let check_interval_ms = match raw.get("partition.expiration-check-interval") {
            Some(v) => parse_duration_ms("partition.expiration-check-interval", v)? as i64,
            None => 3_600_000,
        };
        if let Some(s) = raw.get("partition.expiration-strategy") {
            if !s.eq_ignore_ascii_case("values-time") {
                return Err(Error::unsupported(format!(
                    "option 'partition.expiration-strategy' = '{s}' (paimon_rs expires \
                     partitions by their values only: 'values-time')"
                )));
            }
        }
        let int = |k: &str| -> Result<Option<usize>> {
            raw.get(k)
                .map(|v| {
                    v.trim()
                        .parse::<usize>()
                        .map_err(|_| bad(k, v, "not a non-negative integer"))
                })
                .transpose()
        };
        let end_input = match raw.get("end-input.check-partition-expire") {
            Some(v) => v
                .trim()
                .parse::<bool>()
                .map_err(|_| bad("end-input.check-partition-expire", v, "not a boolean"))?,
            None => false,
        };
        Ok(Some(PartitionExpire {
            expiration_ms,
            check_interval_ms,
            max_num: int("partition.expiration-max-num")?.unwrap_or(100),
            batch_size: int("partition.expiration-batch-size")?.filter(|&n| n > 0),
            pattern: raw.get("partition.timestamp-pattern").cloned(),
            formatter: raw
                .get("partition.timestamp-formatter")
                .map(|f| java_formatter_to_chrono(f))
                .transpose()?,
            end_input,
        }))
    }

    /// The time of a partition given its value strings (None: not a time, never expires).
    fn partition_time(&self, keys: &[String], values: &[String]) -> Option<NaiveDateTime> {
        let s = match &self.pattern {
            Some(p) => replace_pattern(p, keys, values),
            None => values.first()?.clone(),
        };
        match &self.formatter {
            Some(f) => NaiveDateTime::parse_from_str(&s, f).ok().or_else(|| {
                NaiveDate::parse_from_str(&s, f)
                    .ok()
                    .and_then(|d| d.and_hms_opt(0, 0, 0))
            }),
            None => NaiveDateTime::parse_from_str(&s, "%Y-%m-%d %H:%M:%S%.f")
                .ok()
                .or_else(|| {
                    NaiveDate::parse_from_str(&s, "%Y-%m-%d")
                        .ok()
                        .and_then(|d| d.and_hms_opt(0, 0, 0))
                }),
        }
    }

    /// The live partitions of the latest snapshot whose time is before `now` minus the
    /// expiration time, ordered by their values, at most `partition.expiration-max-num`.
    pub fn expired_partitions(
        &self,
        table: &FileStoreTable,
        now: NaiveDateTime,
    ) -> Result<Vec<PartitionSpec>> {
        let Some(snapshot) = table.snapshot_manager().latest()? else {
            return Ok(vec![]);
        };
        let expire_before = now - chrono::Duration::milliseconds(self.expiration_ms);
        let keys = table.partition_keys().to_vec();
        let types = table.partition_types()?;
        let mut parts: BTreeMap<Vec<u8>, ()> = BTreeMap::new();
        for e in crate::table::live::live_entries(table, &snapshot)? {
            parts.insert(e.partition, ());
        }
        let mut expired: Vec<(String, PartitionSpec)> = vec![];
        for p in parts.keys() {
            let values = deserialize_row(&types, p)?;
            let mut strings = Vec::with_capacity(values.len());
            for (v, t) in values.iter().zip(&types) {
                match partition_value_string(v, t, table.options.partition_legacy_name)? {
                    Some(s) => strings.push(s),
                    None => break, // a NULL value: Java cannot extract a time, keeps it
                }
            }
            if strings.len() != values.len() {
                continue;
            }
            if let Some(t) = self.partition_time(&keys, &strings) {
                if expire_before > t {
                    let spec = keys.iter().cloned().zip(values).collect();
                    expired.push((strings.join(","), spec));
                }
            }
        }
        expired.sort_by(|a, b| a.0.cmp(&b.0));
        expired.truncate(self.max_num);
        Ok(expired.into_iter().map(|(_, s)| s).collect())
    }

    /// How many of `n` expired partitions one OVERWRITE snapshot drops
    /// (`partition.expiration-batch-size`, all of them by default).
    pub(crate) fn batch_len(&self, n: usize) -> usize {
        self.batch_size.unwrap_or(n).max(1)
    }

    /// Whether a commit at `now_ms` whose commit object last checked at `last_ms` checks for
    /// expired partitions: the check interval has passed (always with an interval of 0), or a
    /// batch job ends with `end-input.check-partition-expire`.
    pub(crate) fn due(&self, last_ms: i64, now_ms: i64, commit_identifier: i64) -> bool {
        self.check_interval_ms == 0
            || now_ms > last_ms + self.check_interval_ms
            || (self.end_input && commit_identifier == BATCH_COMMIT_IDENTIFIER)
    }

    /// Where a new commit object's last check starts: a random part of an interval ago (Java
    /// does this so that short jobs still expire now and then).
    pub(crate) fn initial_last_check(interval_ms: i64) -> i64 {
        let now = chrono::Utc::now().timestamp_millis();
        let secs = interval_ms / 1000;
        if secs <= 0 {
            return now;
        }
        let rnd = (uuid::Uuid::new_v4().as_u128() % secs as u128) as i64;
        now - rnd * 1000
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formatter_and_pattern_as_java() {
        assert_eq!(java_formatter_to_chrono("yyyyMMdd").unwrap(), "%Y%m%d");
        assert_eq!(
            java_formatter_to_chrono("yyyy-MM-dd'T'HH").unwrap(),
            "%Y-%m-%dT%H"
        );
        assert!(java_formatter_to_chrono("yyyy-MM-dd EEE").is_err());
        let keys = vec!["dt".to_string(), "dt1".to_string()];
        let vals = vec!["2024-01-02".to_string(), "x".to_string()];
        assert_eq!(replace_pattern("$dt1|$dt", &keys, &vals), "x|2024-01-02");
    }

    #[test]
    fn partition_time_defaults_and_formatter() {
        let pe = |pattern: Option<&str>, formatter: Option<&str>| PartitionExpire {
            expiration_ms: 0,
            check_interval_ms: 0,
            max_num: 100,
            batch_size: None,
            pattern: pattern.map(str::to_string),
            formatter: formatter.map(|f| java_formatter_to_chrono(f).unwrap()),
            end_input: false,
        };
        let k = vec!["dt".to_string(), "hr".to_string()];
        let v = |a: &str, b: &str| vec![a.to_string(), b.to_string()];
        let t = pe(None, None)
            .partition_time(&k, &v("2024-03-05", "7"))
            .unwrap();
        assert_eq!(t.to_string(), "2024-03-05 00:00:00");
        let t = pe(Some("$dt $hr:00:00"), Some("yyyyMMdd HH:mm:ss"))
            .partition_time(&k, &v("20240305", "07"))
            .unwrap();
        assert_eq!(t.to_string(), "2024-03-05 07:00:00");
        assert!(pe(None, None)
            .partition_time(&k, &v("today", "1"))
            .is_none());
    }
}
