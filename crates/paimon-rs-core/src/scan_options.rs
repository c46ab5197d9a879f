//! Batch scan modes: which snapshot a read plans from (Java's `CoreOptions.startupMode`,
//! `SchemaValidation.validateStartupMode` and the batch `StartingScanner`s; paimon-behaviour.md
//! §13). Parsed and validated with the other options, so `table.copy({...})` refuses a bad
//! combination at once; the snapshot itself is resolved when a scan plans.

use std::collections::BTreeMap;

use crate::error::{Error, Result};

const SCAN_MODE: &str = "scan.mode";
const SNAPSHOT_ID: &str = "scan.snapshot-id";
const TAG_NAME: &str = "scan.tag-name";
const WATERMARK: &str = "scan.watermark";
const VERSION: &str = "scan.version";
const TIMESTAMP: &str = "scan.timestamp";
const TIMESTAMP_MILLIS: &str = "scan.timestamp-millis";
const FILE_CREATION_TIME_MILLIS: &str = "scan.file-creation-time-millis";
const CREATION_TIME_MILLIS: &str = "scan.creation-time-millis";
const INCREMENTAL_BETWEEN: &str = "incremental-between";
const INCREMENTAL_BETWEEN_TIMESTAMP: &str = "incremental-between-timestamp";
const INCREMENTAL_TO_AUTO_TAG: &str = "incremental-to-auto-tag";
const INCREMENTAL_BETWEEN_SCAN_MODE: &str = "incremental-between-scan-mode";
const INCREMENTAL_BETWEEN_TAG_TO_SNAPSHOT: &str = "incremental-between-tag-to-snapshot";

/// Every option that chooses where a scan starts.
pub(crate) const STARTING_KEYS: &[&str] = &[
    SNAPSHOT_ID,
    TAG_NAME,
    WATERMARK,
    VERSION,
    TIMESTAMP,
    TIMESTAMP_MILLIS,
    FILE_CREATION_TIME_MILLIS,
    CREATION_TIME_MILLIS,
    INCREMENTAL_BETWEEN,
    INCREMENTAL_BETWEEN_TIMESTAMP,
    INCREMENTAL_TO_AUTO_TAG,
    INCREMENTAL_BETWEEN_SCAN_MODE,
    INCREMENTAL_BETWEEN_TAG_TO_SNAPSHOT,
];

/// Where a batch scan starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScanStart {
    /// The latest snapshot (`default`, `latest`, `latest-full`, `full`).
    Latest,
    /// `scan.snapshot-id` (`from-snapshot`, `from-snapshot-full`).
    Snapshot(i64),
    /// `scan.tag-name`: the snapshot stored in `tag/tag-<name>`.
    Tag(String),
    /// `scan.timestamp-millis` / `scan.timestamp`: the newest snapshot committed at or before.
    Timestamp(i64),
    /// `scan.file-creation-time-millis`: the latest snapshot, only files created at or after.
    FileCreationTime(i64),
    /// `compacted-full`: the newest COMPACT snapshot (a full compaction's one when
    /// `full-compaction.delta-commits` or `changelog-producer = full-compaction` is set), else
    /// the latest snapshot.
    CompactedFull {
        full_compaction_delta_commits: Option<i64>,
    },
    /// `incremental-between` / `incremental-between-timestamp`: what changed after the start
    /// (exclusive) up to the end (inclusive), read as `incremental-between-scan-mode` says.
    Incremental(Incremental, IncrementalMode),
    /// A mode whose read paimon_rs does not implement: refused when a scan plans.
    Unsupported(String),
}

/// The range of an incremental read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Incremental {
    /// Snapshot ids.
    Snapshots(i64, i64),
    /// Tag names.
    Tags(String, String),
    /// Epoch millis.
    Timestamps(i64, i64),
}

/// `incremental-between-scan-mode`: which files an incremental read between snapshots returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IncrementalMode {
    /// `auto` (the default): `changelog` when the table has a `changelog-producer`, else
    /// `delta` (Java's `IncrementalBetweenScanMode.AUTO`).
    Auto,
    /// The data files the APPEND snapshots of the range added.
    Delta,
    /// The changelog files of every snapshot of the range (its `changelogManifestList`), each
    /// record as stored with its row kind, unmerged.
    Changelog,
}

impl IncrementalMode {
    /// `Delta` or `Changelog`: `Auto` resolved for a table whose changelog producer is or is
    /// not `none`.
    pub fn resolve(self, has_changelog_producer: bool) -> IncrementalMode {
        match self {
            IncrementalMode::Auto if has_changelog_producer => IncrementalMode::Changelog,
            IncrementalMode::Auto => IncrementalMode::Delta,
            m => m,
        }
    }
}

/// `a,b` of an incremental option.
fn pair<'a>(key: &str, v: &'a str) -> Result<(&'a str, &'a str)> {
    match v.split(',').map(str::trim).collect::<Vec<_>>()[..] {
        [a, b] if !a.is_empty() && !b.is_empty() => Ok((a, b)),
        _ => Err(Error::invalid(format!(
            "option '{key}' = '{v}': expected 'start,end' (start exclusive, end inclusive)"
        ))),
    }
}

fn incremental(raw: &BTreeMap<String, String>) -> Result<ScanStart> {
    let unsupported = |what: String| Ok(ScanStart::Unsupported(what));
    for k in [INCREMENTAL_TO_AUTO_TAG, INCREMENTAL_BETWEEN_TAG_TO_SNAPSHOT] {
        if raw.contains_key(k) {
            return unsupported(format!("option '{k}' (incremental reads take incremental-between or incremental-between-timestamp)"));
        }
    }
    let mode = match raw.get(INCREMENTAL_BETWEEN_SCAN_MODE).map(|s| s.trim().to_ascii_lowercase()) {
        None => IncrementalMode::Auto,
        Some(m) if m == "auto" => IncrementalMode::Auto,
        Some(m) if m == "delta" => IncrementalMode::Delta,
        Some(m) if m == "changelog" => IncrementalMode::Changelog,
        Some(m) if m == "diff" => {
            return unsupported(format!(
                "{INCREMENTAL_BETWEEN_SCAN_MODE} = '{m}' (paimon_rs reads auto, delta and changelog)"
            ))
        }
        Some(m) => {
            return Err(Error::invalid(format!(
                "Could not parse value '{m}' for key '{INCREMENTAL_BETWEEN_SCAN_MODE}'. (expected auto, delta, changelog or diff)"
            )))
        }
    };
    if let Some(v) = raw.get(INCREMENTAL_BETWEEN) {
        let (a, b) = pair(INCREMENTAL_BETWEEN, v)?;
        let range = match (a.parse::<i64>(), b.parse::<i64>()) {
            (Ok(a), Ok(b)) => Incremental::Snapshots(a, b),
            _ => Incremental::Tags(a.to_string(), b.to_string()),
        };
        if matches!(range, Incremental::Tags(..)) && mode == IncrementalMode::Changelog {
            // Java reads between two tags as the difference of their files whatever the mode
            return unsupported(format!(
                "{INCREMENTAL_BETWEEN_SCAN_MODE} = 'changelog' between tags (an incremental read \
                 between tags is the difference of their files; give snapshot ids)"
            ));
        }
        return Ok(ScanStart::Incremental(range, mode));
    }
    let v = raw
        .get(INCREMENTAL_BETWEEN_TIMESTAMP)
        .map(String::as_str)
        .unwrap_or_default();
    let (a, b) = pair(INCREMENTAL_BETWEEN_TIMESTAMP, v)?;
    match (a.parse::<i64>(), b.parse::<i64>()) {
        (Ok(a), Ok(b)) => Ok(ScanStart::Incremental(Incremental::Timestamps(a, b), mode)),
        _ => Err(Error::invalid(format!(
            "option '{INCREMENTAL_BETWEEN_TIMESTAMP}' = '{v}': expected epoch millis 'start,end'"
        ))),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Default,
    LatestFull,
    Full,
    Latest,
    LatestDelta,
    CompactedFull,
    FromTimestamp,
    FromCreationTimestamp,
    FromFileCreationTime,
    FromSnapshot,
    FromSnapshotFull,
    Incremental,
}

impl Mode {
    const ALL: &'static [(&'static str, Mode)] = &[
        ("default", Mode::Default),
        ("latest-full", Mode::LatestFull),
        ("full", Mode::Full),
        ("latest", Mode::Latest),
        ("latest-delta", Mode::LatestDelta),
        ("compacted-full", Mode::CompactedFull),
        ("from-timestamp", Mode::FromTimestamp),
        ("from-creation-timestamp", Mode::FromCreationTimestamp),
        ("from-file-creation-time", Mode::FromFileCreationTime),
        ("from-snapshot", Mode::FromSnapshot),
        ("from-snapshot-full", Mode::FromSnapshotFull),
        ("incremental", Mode::Incremental),
    ];

    fn name(self) -> &'static str {
        Mode::ALL
            .iter()
            .find(|(_, m)| *m == self)
            .map(|(n, _)| *n)
            .unwrap_or("default")
    }
}

fn parse_long(raw: &BTreeMap<String, String>, key: &str) -> Result<Option<i64>> {
    raw.get(key)
        .map(|v| {
            v.trim()
                .parse::<i64>()
                .map_err(|_| Error::invalid(format!("option '{key}' = '{v}': expected an integer")))
        })
        .transpose()
}

/// Java's `CoreOptions.startupMode()`: `default` resolved by the options present, `full` as
/// `latest-full`.
fn resolve(mode: Mode, has: &dyn Fn(&str) -> bool) -> Mode {
    match mode {
        Mode::Default => {
            if has(TIMESTAMP_MILLIS) || has(TIMESTAMP) {
                Mode::FromTimestamp
            } else if has(SNAPSHOT_ID) || has(TAG_NAME) || has(WATERMARK) || has(VERSION) {
                Mode::FromSnapshot
            } else if has(FILE_CREATION_TIME_MILLIS) {
                Mode::FromFileCreationTime
            } else if has(CREATION_TIME_MILLIS) {
                Mode::FromCreationTimestamp
            } else if has(INCREMENTAL_BETWEEN) || has(INCREMENTAL_BETWEEN_TIMESTAMP) {
                Mode::Incremental
            } else {
                Mode::LatestFull
            }
        }
        Mode::Full => Mode::LatestFull,
        m => m,
    }
}

/// Parse and validate the scan options of a table (stored plus dynamic).
pub fn parse_scan_start(raw: &BTreeMap<String, String>) -> Result<ScanStart> {
    let has = |k: &str| raw.contains_key(k);
    let mode = match raw.get(SCAN_MODE) {
        None => Mode::Default,
        Some(v) => {
            let lower = v.trim().to_ascii_lowercase();
            Mode::ALL
                .iter()
                .find(|(n, _)| *n == lower)
                .map(|(_, m)| *m)
                .ok_or_else(|| {
                    let names: Vec<&str> = Mode::ALL.iter().map(|(n, _)| *n).collect();
                    Error::invalid(format!(
                        "option '{SCAN_MODE}' = '{v}': expected one of {}",
                        names.join(", ")
                    ))
                })?
        }
    };
    let mode = resolve(mode, &has);
    let m = mode.name();
    // The options each mode needs (exactly one of them) and may use, as Java's
    // SchemaValidation.validateStartupMode; any other starting option is refused (Java lets a
    // few through unused: paimon_rs never ignores an option that changes what a read returns).
    let (exactly_one, allowed): (&[&str], &[&str]) = match mode {
        Mode::FromTimestamp => (
            &[TIMESTAMP_MILLIS, TIMESTAMP],
            &[TIMESTAMP_MILLIS, TIMESTAMP],
        ),
        Mode::FromSnapshot => (
            &[SNAPSHOT_ID, TAG_NAME, WATERMARK],
            &[SNAPSHOT_ID, TAG_NAME, WATERMARK, VERSION],
        ),
        Mode::FromSnapshotFull => (&[SNAPSHOT_ID], &[SNAPSHOT_ID]),
        Mode::FromFileCreationTime => (&[FILE_CREATION_TIME_MILLIS], &[FILE_CREATION_TIME_MILLIS]),
        Mode::FromCreationTimestamp => (&[CREATION_TIME_MILLIS], &[CREATION_TIME_MILLIS]),
        Mode::Incremental => (
            &[
                INCREMENTAL_BETWEEN,
                INCREMENTAL_BETWEEN_TIMESTAMP,
                INCREMENTAL_TO_AUTO_TAG,
            ],
            &[
                INCREMENTAL_BETWEEN,
                INCREMENTAL_BETWEEN_TIMESTAMP,
                INCREMENTAL_TO_AUTO_TAG,
                INCREMENTAL_BETWEEN_SCAN_MODE,
                INCREMENTAL_BETWEEN_TAG_TO_SNAPSHOT,
            ],
        ),
        _ => (&[], &[]),
    };
    for k in STARTING_KEYS {
        if has(k) && !allowed.contains(k) {
            return Err(Error::invalid(if exactly_one.is_empty() {
                format!("option '{k}' must not be set when you use {m} for {SCAN_MODE}")
            } else {
                format!(
                    "option '{k}' must not be set when you set [{}] ({m} for {SCAN_MODE})",
                    exactly_one.join(",")
                )
            }));
        }
    }
    // `scan.version` stands for a snapshot id, tag or watermark (resolved below as refused).
    let set = exactly_one.iter().filter(|k| has(k)).count();
    if !exactly_one.is_empty() && set != 1 && !(set == 0 && has(VERSION)) {
        return Err(Error::invalid(if exactly_one.len() == 1 {
            format!(
                "option '{}' must be set when you use {m} for {SCAN_MODE}",
                exactly_one[0]
            )
        } else {
            format!(
                "set exactly one of [{}] when you use {m} for {SCAN_MODE}",
                exactly_one.join(",")
            )
        }));
    }
    let unsupported = |what: &str| {
        Ok(ScanStart::Unsupported(format!(
            "{what}: paimon_rs reads whole snapshots only (supported: {SCAN_MODE} default, \
             latest, latest-full, full, from-snapshot, from-snapshot-full, from-timestamp, \
             from-file-creation-time, compacted-full; {SNAPSHOT_ID}, {TAG_NAME}, {TIMESTAMP}, \
             {TIMESTAMP_MILLIS}, {FILE_CREATION_TIME_MILLIS})"
        )))
    };
    Ok(match mode {
        Mode::Default | Mode::Full | Mode::LatestFull | Mode::Latest => ScanStart::Latest,
        Mode::LatestDelta => return unsupported("scan.mode 'latest-delta' (a delta read)"),
        Mode::Incremental => return incremental(raw),
        Mode::FromCreationTimestamp => {
            return unsupported("scan.mode 'from-creation-timestamp' (scan.creation-time-millis)")
        }
        Mode::CompactedFull => ScanStart::CompactedFull {
            full_compaction_delta_commits: {
                let d = parse_long(raw, "full-compaction.delta-commits")?;
                let fc = raw
                    .get("changelog-producer")
                    .map(|s| s.trim().to_ascii_lowercase())
                    == Some("full-compaction".to_string());
                match d {
                    Some(d) if d <= 0 => {
                        return Err(Error::invalid(format!(
                            "option 'full-compaction.delta-commits' = '{d}': must be positive"
                        )))
                    }
                    Some(d) => Some(d),
                    None if fc => Some(1),
                    None => None,
                }
            },
        },
        Mode::FromTimestamp => match parse_long(raw, TIMESTAMP_MILLIS)? {
            Some(ms) => ScanStart::Timestamp(ms),
            None => {
                let v = raw.get(TIMESTAMP).map(String::as_str).unwrap_or_default();
                ScanStart::Timestamp(parse_local_timestamp_millis(v).ok_or_else(|| {
                    Error::invalid(format!(
                        "option '{TIMESTAMP}' = '{v}': expected 'yyyy-MM-dd HH:mm:ss[.SSS]' \
                         (local time zone)"
                    ))
                })?)
            }
        },
        Mode::FromFileCreationTime => ScanStart::FileCreationTime(
            parse_long(raw, FILE_CREATION_TIME_MILLIS)?.unwrap_or_default(),
        ),
        Mode::FromSnapshot | Mode::FromSnapshotFull => {
            if has(VERSION) {
                return unsupported("scan.version");
            }
            if let Some(id) = parse_long(raw, SNAPSHOT_ID)? {
                ScanStart::Snapshot(id)
            } else if let Some(tag) = raw.get(TAG_NAME) {
                ScanStart::Tag(tag.clone())
            } else {
                return unsupported("scan.watermark");
            }
        }
    })
}

fn digits(s: &str, min: usize, max: usize) -> Option<u32> {
    if s.len() < min || s.len() > max || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// Parse `yyyy-M[M]-d[d]`, optionally followed by ` H[H]:m[m]:s[s][.fraction]` or
/// `TH[H]:m[m][:s[s][.fraction]]` (Java's `DateTimeUtils.DEFAULT_TIMESTAMP_FORMATTER`), the
/// fraction truncated to milliseconds, as a local date-time without zone.
pub fn parse_naive_timestamp(s: &str) -> Option<chrono::NaiveDateTime> {
    let s = s.trim();
    let (date, time, t_sep) = match s.find([' ', 'T']) {
        Some(i) => (&s[..i], Some(&s[i + 1..]), s.as_bytes()[i] == b'T'),
        None => (s, None, false),
    };
    let mut d = date.split('-');
    let (y, mo, da) = (d.next()?, d.next()?, d.next()?);
    if d.next().is_some() {
        return None;
    }
    let date = chrono::NaiveDate::from_ymd_opt(
        digits(y, 4, 4)? as i32,
        digits(mo, 1, 2)?,
        digits(da, 1, 2)?,
    )?;
    let (mut h, mut mi, mut sec, mut nanos) = (0, 0, 0, 0u32);
    if let Some(t) = time {
        let (hms, frac) = match t.split_once('.') {
            Some((a, b)) => (a, Some(b)),
            None => (t, None),
        };
        let parts: Vec<&str> = hms.split(':').collect();
        match (parts.len(), t_sep) {
            (3, _) => {}
            (2, true) if frac.is_none() => {}
            _ => return None,
        }
        h = digits(parts[0], 1, 2)?;
        mi = digits(parts[1], 1, 2)?;
        if let Some(p) = parts.get(2) {
            sec = digits(p, 1, 2)?;
        }
        if let Some(f) = frac {
            if f.is_empty() || f.len() > 9 || !f.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            let ms: u32 = format!("{f:0<3}")[..3].parse().ok()?;
            nanos = ms * 1_000_000;
        }
    }
    date.and_hms_nano_opt(h, mi, sec, nanos)
}

/// A local date-time as epoch milliseconds in the process's time zone (Java's
/// `LocalDateTime.atZone(ZoneId.systemDefault())`: the earlier offset in an overlap, shifted
/// forward by the gap in a gap).
pub fn local_to_epoch_millis(t: chrono::NaiveDateTime) -> Option<i64> {
    use chrono::TimeZone;
    match chrono::Local.from_local_datetime(&t) {
        chrono::LocalResult::Single(x) => Some(x.timestamp_millis()),
        chrono::LocalResult::Ambiguous(a, b) => {
            Some(a.timestamp_millis().min(b.timestamp_millis()))
        }
        chrono::LocalResult::None => {
            // in a gap: Java moves the time forward by the gap's length (an hour, usually)
            let later = t + chrono::Duration::hours(1);
            chrono::Local
                .from_local_datetime(&later)
                .earliest()
                .map(|x| x.timestamp_millis())
        }
    }
}

/// `scan.timestamp`: a local date-time string as epoch milliseconds.
pub fn parse_local_timestamp_millis(s: &str) -> Option<i64> {
    local_to_epoch_millis(parse_naive_timestamp(s)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::opts;

    fn start(kv: &[(&str, &str)]) -> Result<ScanStart> {
        parse_scan_start(&opts(kv))
    }

    #[test]
    fn default_mode_is_resolved_by_the_options_present() {
        assert_eq!(start(&[]).unwrap(), ScanStart::Latest);
        assert_eq!(
            start(&[(SNAPSHOT_ID, "3")]).unwrap(),
            ScanStart::Snapshot(3)
        );
        assert_eq!(
            start(&[(TAG_NAME, "t1")]).unwrap(),
            ScanStart::Tag("t1".into())
        );
        assert_eq!(
            start(&[(TIMESTAMP_MILLIS, "1000")]).unwrap(),
            ScanStart::Timestamp(1000)
        );
        assert_eq!(
            start(&[(FILE_CREATION_TIME_MILLIS, "5")]).unwrap(),
            ScanStart::FileCreationTime(5)
        );
        assert_eq!(
            start(&[(SCAN_MODE, "FULL")]).unwrap(),
            ScanStart::Latest,
            "case-insensitive, full = latest-full"
        );
        assert_eq!(
            start(&[(SCAN_MODE, "from-snapshot-full"), (SNAPSHOT_ID, "2")]).unwrap(),
            ScanStart::Snapshot(2)
        );
        assert_eq!(
            start(&[(SCAN_MODE, "compacted-full")]).unwrap(),
            ScanStart::CompactedFull {
                full_compaction_delta_commits: None
            }
        );
        assert_eq!(
            start(&[
                (SCAN_MODE, "compacted-full"),
                ("changelog-producer", "full-compaction")
            ])
            .unwrap(),
            ScanStart::CompactedFull {
                full_compaction_delta_commits: Some(1)
            }
        );
    }

    #[test]
    fn combinations_are_validated_as_java_does() {
        let err = |kv: &[(&str, &str)]| start(kv).unwrap_err().to_string();
        assert!(err(&[(SCAN_MODE, "latest"), (SNAPSHOT_ID, "1")]).contains("scan.snapshot-id"));
        assert!(err(&[(SNAPSHOT_ID, "1"), (TAG_NAME, "t")]).contains("exactly one"));
        assert!(err(&[(SNAPSHOT_ID, "1"), (TIMESTAMP_MILLIS, "1")]).contains("scan.snapshot-id"));
        assert!(err(&[(TIMESTAMP, "2024-01-01"), (TIMESTAMP_MILLIS, "1")]).contains("exactly one"));
        assert!(err(&[(SCAN_MODE, "from-snapshot")]).contains("exactly one"));
        assert!(
            err(&[(SCAN_MODE, "from-snapshot-full"), (TAG_NAME, "t")]).contains("scan.tag-name")
        );
        assert!(err(&[(SCAN_MODE, "from-timestamp")]).contains("exactly one"));
        assert!(err(&[(SCAN_MODE, "from-file-creation-time")]).contains("must be set"));
        assert!(err(&[(SCAN_MODE, "sideways")]).contains("expected one of"));
        assert!(err(&[(SNAPSHOT_ID, "one")]).contains("integer"));
        assert!(err(&[(TIMESTAMP, "yesterday")]).contains("yyyy-MM-dd"));
        assert_eq!(
            start(&[(SCAN_MODE, "incremental"), (INCREMENTAL_BETWEEN, "1,2")]).unwrap(),
            ScanStart::Incremental(Incremental::Snapshots(1, 2), IncrementalMode::Auto)
        );
        assert_eq!(
            start(&[(INCREMENTAL_BETWEEN, "t1,t2")]).unwrap(),
            ScanStart::Incremental(
                Incremental::Tags("t1".into(), "t2".into()),
                IncrementalMode::Auto
            )
        );
        assert_eq!(
            start(&[(INCREMENTAL_BETWEEN_TIMESTAMP, "1,2")]).unwrap(),
            ScanStart::Incremental(Incremental::Timestamps(1, 2), IncrementalMode::Auto)
        );
        for (m, want) in [
            ("auto", IncrementalMode::Auto),
            ("Delta", IncrementalMode::Delta),
            ("changelog", IncrementalMode::Changelog),
        ] {
            assert_eq!(
                start(&[
                    (INCREMENTAL_BETWEEN, "1,2"),
                    (INCREMENTAL_BETWEEN_SCAN_MODE, m)
                ])
                .unwrap(),
                ScanStart::Incremental(Incremental::Snapshots(1, 2), want),
                "{m}"
            );
        }
        assert_eq!(
            start(&[
                (INCREMENTAL_BETWEEN_TIMESTAMP, "1,2"),
                (INCREMENTAL_BETWEEN_SCAN_MODE, "changelog")
            ])
            .unwrap(),
            ScanStart::Incremental(Incremental::Timestamps(1, 2), IncrementalMode::Changelog)
        );
        assert!(err(&[
            (INCREMENTAL_BETWEEN, "1,2"),
            (INCREMENTAL_BETWEEN_SCAN_MODE, "sideways")
        ])
        .contains("Could not parse"));
        assert_eq!(
            IncrementalMode::Auto.resolve(true),
            IncrementalMode::Changelog
        );
        assert_eq!(IncrementalMode::Auto.resolve(false), IncrementalMode::Delta);
        assert_eq!(IncrementalMode::Delta.resolve(true), IncrementalMode::Delta);
        assert_eq!(
            IncrementalMode::Changelog.resolve(false),
            IncrementalMode::Changelog
        );
        assert!(start(&[(INCREMENTAL_BETWEEN, "1")]).is_err());
        for kv in [
            &[
                (INCREMENTAL_BETWEEN, "1,2"),
                (INCREMENTAL_BETWEEN_SCAN_MODE, "diff"),
            ][..],
            &[
                (INCREMENTAL_BETWEEN, "t1,t2"),
                (INCREMENTAL_BETWEEN_SCAN_MODE, "changelog"),
            ][..],
            &[(SCAN_MODE, "latest-delta")],
            &[(WATERMARK, "5")],
            &[(CREATION_TIME_MILLIS, "5")],
        ] {
            assert!(
                matches!(start(kv).unwrap(), ScanStart::Unsupported(_)),
                "{kv:?}"
            );
        }
    }

    #[test]
    fn timestamps_parse_like_java() {
        let t = |s: &str| parse_naive_timestamp(s).map(|t| t.to_string());
        assert_eq!(t("2024-01-02 03:04:05").unwrap(), "2024-01-02 03:04:05");
        assert_eq!(
            t("2024-1-2 3:04:05.1234").unwrap(),
            "2024-01-02 03:04:05.123"
        );
        assert_eq!(t("2024-01-02").unwrap(), "2024-01-02 00:00:00");
        assert_eq!(t("2024-01-02T03:04").unwrap(), "2024-01-02 03:04:00");
        assert_eq!(
            t("2024-01-02T03:04:05.5").unwrap(),
            "2024-01-02 03:04:05.500"
        );
        for bad in [
            "2024-01-02 03:04",
            "2024-13-01",
            "24-01-01",
            "2024-01-02 03:04:05.",
            "x",
        ] {
            assert!(t(bad).is_none(), "{bad}");
        }
    }
}
