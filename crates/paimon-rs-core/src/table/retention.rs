//! How long snapshots and long-lived changelogs are kept: Java's `ExpireConfig` (the
//! `snapshot.*` options) and its changelog half (`changelog.*`, see [`super::changelog`]), read
//! from the table options and validated as Java does.

use std::collections::BTreeMap;

use crate::error::{Error, Result};
use crate::options::parse_duration_ms;

/// Java's defaults.
pub const DEFAULT_NUM_RETAINED_MIN: i64 = 10;
pub const DEFAULT_NUM_RETAINED_MAX: i64 = i32::MAX as i64;
pub const DEFAULT_TIME_RETAINED_MS: i64 = 60 * 60 * 1000;
pub const DEFAULT_EXPIRE_LIMIT: i64 = 50;

/// What an expiry keeps: Java's `ExpireConfig`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExpireConfig {
    pub num_retained_min: i64,
    pub num_retained_max: i64,
    pub time_retained_ms: i64,
    pub expire_limit: i64,
}

fn get<'a>(raw: &'a BTreeMap<String, String>, key: &str) -> Option<&'a str> {
    raw.get(key).map(String::as_str)
}

fn int_opt(raw: &BTreeMap<String, String>, key: &str) -> Result<Option<i64>> {
    get(raw, key)
        .map(|v| {
            v.trim().parse::<i64>().map_err(|_| {
                Error::invalid(format!(
                    "Could not parse value '{v}' for key '{key}'. (expected an integer)"
                ))
            })
        })
        .transpose()
}

impl ExpireConfig {
    /// From the table options (`snapshot.num-retained.min`, `.max`, `snapshot.time-retained`,
    /// `snapshot.expire.limit`), validated as Java does.
    pub fn from_options(raw: &BTreeMap<String, String>) -> Result<Self> {
        let time = match get(raw, "snapshot.time-retained") {
            Some(v) => parse_duration_ms("snapshot.time-retained", v)? as i64,
            None => DEFAULT_TIME_RETAINED_MS,
        };
        let c = ExpireConfig {
            num_retained_min: int_opt(raw, "snapshot.num-retained.min")?
                .unwrap_or(DEFAULT_NUM_RETAINED_MIN),
            num_retained_max: int_opt(raw, "snapshot.num-retained.max")?
                .unwrap_or(DEFAULT_NUM_RETAINED_MAX),
            time_retained_ms: time,
            expire_limit: int_opt(raw, "snapshot.expire.limit")?.unwrap_or(DEFAULT_EXPIRE_LIMIT),
        };
        c.validate()?;
        Ok(c)
    }

    /// Java's checks (`ExpireSnapshotsImpl` / `CoreOptions`), in its words.
    pub fn validate(&self) -> Result<()> {
        if self.num_retained_min < 1 {
            return Err(Error::invalid(
                "The minimum number of completed snapshots to retain should be >= 1.",
            ));
        }
        if self.num_retained_max < self.num_retained_min {
            return Err(Error::invalid(
                "The maximum number of snapshots to retain should be >= the minimum number.",
            ));
        }
        if self.expire_limit < 1 {
            return Err(Error::invalid("snapshot.expire.limit should be >= 1."));
        }
        if self.time_retained_ms < 0 {
            return Err(Error::invalid(
                "snapshot.time-retained must not be negative.",
            ));
        }
        Ok(())
    }
}

/// How long changelogs are kept: Java's `ExpireConfig` changelog half. An option not set takes
/// the snapshot option's value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChangelogRetention {
    pub num_retained_min: i64,
    pub num_retained_max: i64,
    pub time_retained_ms: i64,
    pub expire_limit: i64,
}

impl ChangelogRetention {
    /// From the table options `changelog.num-retained.min`, `.max`, `changelog.time-retained`
    /// (each defaulting to `snapshot`'s), validated as Java's `SchemaValidation`.
    pub fn from_options(raw: &BTreeMap<String, String>, snapshot: &ExpireConfig) -> Result<Self> {
        let int = |key: &str| -> Result<Option<i64>> {
            raw.get(key)
                .map(|v| {
                    v.trim().parse::<i64>().map_err(|_| {
                        Error::invalid(format!(
                            "Could not parse value '{v}' for key '{key}'. (expected an integer)"
                        ))
                    })
                })
                .transpose()
        };
        let c = ChangelogRetention {
            num_retained_min: int("changelog.num-retained.min")?
                .unwrap_or(snapshot.num_retained_min),
            num_retained_max: int("changelog.num-retained.max")?
                .unwrap_or(snapshot.num_retained_max),
            time_retained_ms: match raw.get("changelog.time-retained") {
                Some(v) => parse_duration_ms("changelog.time-retained", v)? as i64,
                None => snapshot.time_retained_ms,
            },
            expire_limit: snapshot.expire_limit,
        };
        if c.num_retained_min < 1 {
            return Err(Error::invalid(
                "changelog.num-retained.min should be at least 1",
            ));
        }
        if c.num_retained_min > c.num_retained_max {
            return Err(Error::invalid(
                "changelog.num-retained.min should not be larger than changelog.num-retained.max",
            ));
        }
        Ok(c)
    }

    /// Whether changelogs outlive snapshots (Java's `changelogLifecycleDecoupled`).
    pub fn decoupled(&self, snapshot: &ExpireConfig) -> bool {
        self.num_retained_max > snapshot.num_retained_max
            || self.num_retained_min > snapshot.num_retained_min
            || self.time_retained_ms > snapshot.time_retained_ms
    }
}
