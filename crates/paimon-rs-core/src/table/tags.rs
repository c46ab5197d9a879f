//! Tags (Java's `TagManager`, `TagAutoCreation`, `TagTimeExpire`): `tag/tag-<name>` holds the
//! tagged snapshot's JSON, plus `tagCreateTime` (a `LocalDateTime` as Jackson writes it,
//! `[y, M, d, H, m, s, nanos]`) and `tagTimeRetained` (a `Duration` in decimal seconds) when the
//! tag has a retention, as Java and pypaimon write them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use chrono::{Datelike, NaiveDateTime, TimeZone, Timelike};

use crate::error::{Error, Result};
use crate::io;
use crate::options::{parse_bool, parse_duration_ms};
use crate::spec::snapshot::Snapshot;
use crate::table::file_deletion::{all_kept, delete_unreferenced, Reclaimed};
use crate::table::snapshot_manager::SnapshotManager;
use crate::table::FileStoreTable;

/// A tag as listed: its name, snapshot and retention.
#[derive(Debug, Clone)]
pub struct TagInfo {
    pub name: String,
    pub snapshot: Snapshot,
    /// `tagCreateTime` as local wall-clock time, if recorded.
    pub create_time: Option<NaiveDateTime>,
    /// `tagTimeRetained` in milliseconds, if any.
    pub time_retained_ms: Option<i64>,
}

fn local_datetime_json(t: NaiveDateTime) -> serde_json::Value {
    serde_json::json!([
        t.year(),
        t.month(),
        t.day(),
        t.hour(),
        t.minute(),
        t.second(),
        t.nanosecond()
    ])
}

fn parse_local_datetime(v: &serde_json::Value) -> Option<NaiveDateTime> {
    let a: Vec<i64> = v
        .as_array()?
        .iter()
        .map(|x| x.as_i64())
        .collect::<Option<_>>()?;
    if a.len() < 5 {
        return None;
    }
    let d = chrono::NaiveDate::from_ymd_opt(a[0] as i32, a[1] as u32, a[2] as u32)?;
    d.and_hms_nano_opt(
        a[3] as u32,
        a[4] as u32,
        a.get(5).copied().unwrap_or(0) as u32,
        a.get(6).copied().unwrap_or(0) as u32,
    )
}

/// Read a tag file with its tag fields.
pub fn read_tag(sm: &SnapshotManager, name: &str) -> Result<TagInfo> {
    let snapshot = sm.tag(name)?;
    let p = sm.tag_path(name);
    let v: serde_json::Value =
        serde_json::from_slice(&io::read(&p)?).map_err(|e| Error::corrupt(&p, e.to_string()))?;
    let create_time = v.get("tagCreateTime").and_then(parse_local_datetime);
    let time_retained_ms = v
        .get("tagTimeRetained")
        .and_then(serde_json::Value::as_f64)
        .map(|s| (s * 1000.0).round() as i64);
    Ok(TagInfo {
        name: name.to_string(),
        snapshot,
        create_time,
        time_retained_ms,
    })
}

/// Every tag with its fields, by name.
pub fn list_tags(table: &FileStoreTable) -> Result<Vec<TagInfo>> {
    let sm = table.snapshot_manager();
    sm.tags()?
        .into_iter()
        .map(|(n, _)| read_tag(&sm, &n))
        .collect()
}

fn tag_json(snapshot: &Snapshot, time_retained_ms: Option<i64>) -> Result<Vec<u8>> {
    let mut v = serde_json::to_value(snapshot)
        .map_err(|e| Error::Internal(format!("tag serialization: {e}")))?;
    if let (Some(ms), Some(obj)) = (time_retained_ms, v.as_object_mut()) {
        obj.insert(
            "tagCreateTime".into(),
            local_datetime_json(chrono::Local::now().naive_local()),
        );
        let secs = serde_json::Number::from_f64(ms as f64 / 1000.0)
            .ok_or_else(|| Error::invalid(format!("tag retention {ms} ms")))?;
        obj.insert("tagTimeRetained".into(), serde_json::Value::Number(secs));
    }
    serde_json::to_vec_pretty(&v).map_err(|e| Error::Internal(format!("tag serialization: {e}")))
}

/// `tag.default-time-retained`, used when a tag is created without a retention (as Java).
fn default_time_retained(table: &FileStoreTable) -> Result<Option<i64>> {
    table
        .options
        .raw
        .get("tag.default-time-retained")
        .map(|v| parse_duration_ms("tag.default-time-retained", v).map(|ms| ms as i64))
        .transpose()
}

/// Create tag `name` on snapshot `snapshot_id` (the latest if None). Refused if the tag exists
/// (unless `ignore_if_exists`) or the snapshot does not. The tag file is created exclusively;
/// if the snapshot was expired while the tag was written (its files may be going), the tag is
/// removed again and `SnapshotExpired` raised.
pub fn create_tag(
    table: &FileStoreTable,
    name: &str,
    snapshot_id: Option<i64>,
    time_retained: Option<&str>,
    ignore_if_exists: bool,
) -> Result<()> {
    table.named(|| {
        SnapshotManager::check_tag_name(name)?;
        let sm = table.snapshot_manager();
        let retained = match time_retained {
            Some(v) => Some(parse_duration_ms("time_retained", v)? as i64),
            None => default_time_retained(table)?,
        };
        let snapshot = match snapshot_id {
            Some(id) => sm.snapshot_for_read(id)?,
            None => sm
                .latest()?
                .ok_or_else(|| Error::invalid("No snapshot exists in this table."))?,
        };
        if io::exists(&sm.tag_path(name)) {
            if ignore_if_exists {
                return Ok(());
            }
            return Err(Error::invalid(format!("Tag name '{name}' already exists.")));
        }
        let bytes = tag_json(&snapshot, retained)?;
        if !io::create_exclusive(&sm.tag_path(name), &bytes)? {
            if ignore_if_exists {
                return Ok(());
            }
            return Err(Error::invalid(format!("Tag name '{name}' already exists.")));
        }
        if sm.try_snapshot(snapshot.id)?.is_none() {
            io::remove_file_if_exists(&sm.tag_path(name))?;
            return Err(Error::SnapshotExpired {
                table: table.name.clone(),
                message: format!(
                    "snapshot {} was expired while tag '{name}' was being created; the tag was not \
                     created",
                    snapshot.id
                ),
            });
        }
        log::info!(target: "paimon_rs.tags", "{}: created tag '{name}' on snapshot {}",
            table.name, snapshot.id);
        Ok(())
    })
}

/// Delete the files only tag `tag` (file `p`, deleted or replaced) kept: none while its
/// snapshot is still present (that references everything the tag does).
fn clean_after_tag(
    table: &FileStoreTable,
    p: &Path,
    tag: &Snapshot,
    why: &'static str,
) -> Result<Vec<(PathBuf, u64)>> {
    let alive = table
        .snapshot_manager()
        .try_snapshot(tag.id)?
        .is_some_and(|s| {
            s.base_manifest_list == tag.base_manifest_list
                && s.delta_manifest_list == tag.delta_manifest_list
        });
    if alive {
        return Ok(vec![]);
    }
    let kept = all_kept(table)?;
    delete_unreferenced(table, &[(p.to_path_buf(), tag.clone())], &kept, why)
}

/// Delete tag `name` and the files only it referenced (its snapshot expired). Returns None if
/// there is no such tag.
pub fn delete_tag(table: &FileStoreTable, name: &str) -> Result<Option<Reclaimed>> {
    table.named(|| {
        let sm = table.snapshot_manager();
        SnapshotManager::check_tag_name(name)?;
        let p = sm.tag_path(name);
        if !io::exists(&p) {
            return Ok(None);
        }
        let tag = sm.tag(name)?;
        io::remove_file_if_exists(&p)?;
        let why = "refusing to clean the deleted tag's files";
        let out = Reclaimed {
            files: clean_after_tag(table, &p, &tag, why)?,
            ..Reclaimed::default()
        };
        log::info!(target: "paimon_rs.tags", "{}: deleted tag '{name}' ({} files deleted)",
            table.name, out.files.len());
        Ok(Some(out))
    })
}

/// Rename tag `from` to `to` (Java's `TagManager.renameTag`, its refusals and messages). The
/// new tag file is created exclusively, then the old one deleted.
pub fn rename_tag(table: &FileStoreTable, from: &str, to: &str) -> Result<()> {
    table.named(|| {
        let sm = table.snapshot_manager();
        if from.trim().is_empty() {
            return Err(Error::invalid("Original tag name shouldn't be blank."));
        }
        SnapshotManager::check_tag_name(from)?;
        if !io::exists(&sm.tag_path(from)) {
            return Err(Error::invalid(format!("Tag '{from}' doesn't exist.")));
        }
        if to.trim().is_empty() {
            return Err(Error::invalid("New tag name shouldn't be blank."));
        }
        SnapshotManager::check_tag_name(to)?;
        let bytes = io::read(&sm.tag_path(from))?;
        if io::exists(&sm.tag_path(to)) || !io::create_exclusive(&sm.tag_path(to), &bytes)? {
            return Err(Error::invalid(format!("Tag '{to}' already exists.")));
        }
        io::remove_file_if_exists(&sm.tag_path(from))?;
        log::info!(target: "paimon_rs.tags", "{}: renamed tag '{from}' to '{to}'", table.name);
        Ok(())
    })
}

/// Point the existing tag `name` at snapshot `snapshot_id` (the latest if None), with
/// `time_retained` (none if None), as Java's `replaceTag`. The files only the old tag kept
/// (its snapshot expired) are deleted, as `delete_tag` does.
pub fn replace_tag(
    table: &FileStoreTable,
    name: &str,
    snapshot_id: Option<i64>,
    time_retained: Option<&str>,
) -> Result<Reclaimed> {
    table.named(|| {
        let sm = table.snapshot_manager();
        let snapshot = match snapshot_id {
            None => sm.latest()?.ok_or_else(|| {
                Error::invalid("Cannot replace tag because latest snapshot doesn't exist.")
            })?,
            Some(id) => sm
                .try_snapshot(id)?
                .ok_or_else(|| Error::invalid(format!("Snapshot id '{id}' doesn't exist.")))?,
        };
        if name.trim().is_empty() {
            return Err(Error::invalid("Tag name shouldn't be blank."));
        }
        SnapshotManager::check_tag_name(name)?;
        let p = sm.tag_path(name);
        if !io::exists(&p) {
            return Err(Error::invalid(format!("Tag '{name}' doesn't exist.")));
        }
        let retained = time_retained
            .map(|v| parse_duration_ms("time_retained", v).map(|ms| ms as i64))
            .transpose()?;
        let old = sm.tag(name)?;
        io::write_new(&p, &tag_json(&snapshot, retained)?)?;
        let mut out = Reclaimed::default();
        if old.id != snapshot.id {
            let why = "refusing to clean the replaced tag's files";
            out.files = clean_after_tag(table, &p, &old, why)?;
        }
        log::info!(target: "paimon_rs.tags", "{}: tag '{name}' now on snapshot {} (was {})",
            table.name, snapshot.id, old.id);
        Ok(out)
    })
}

/// `tag.time-expire-enabled` (true): whether a commit expires tags by their retained time.
pub fn time_expire_enabled(raw: &BTreeMap<String, String>) -> Result<bool> {
    raw.get("tag.time-expire-enabled")
        .map_or(Ok(true), |v| parse_bool("tag.time-expire-enabled", v))
}

/// After a commit, delete tags whose `tagCreateTime + tagTimeRetained` is before `now` (Java's
/// `TagTimeExpire`, which its commit creates only under `tag.time-expire-enabled`).
pub fn expire_tags_by_time(table: &FileStoreTable, now: NaiveDateTime) -> Result<Vec<String>> {
    if !time_expire_enabled(&table.options.raw).map_err(|e| e.with_table(&table.name))? {
        return Ok(vec![]);
    }
    let mut out = vec![];
    for t in list_tags(table)? {
        if let (Some(created), Some(ms)) = (t.create_time, t.time_retained_ms) {
            if created + chrono::Duration::milliseconds(ms) < now {
                delete_tag(table, &t.name)?;
                out.push(t.name);
            }
        }
    }
    Ok(out)
}

/// `tag.automatic-creation` and its options (Java's `TagAutoCreation`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AutoTag {
    /// true: the snapshot's watermark (UTC), false: the commit time (local time zone).
    watermark: bool,
    period: Period,
    dashes: bool,
    delay_ms: i64,
    num_retained_max: Option<usize>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Period {
    Daily,
    Hourly,
    TwoHours,
}

impl Period {
    fn millis(self) -> i64 {
        match self {
            Period::Daily => 86_400_000,
            Period::Hourly => 3_600_000,
            Period::TwoHours => 7_200_000,
        }
    }
}

impl AutoTag {
    /// None if `tag.automatic-creation` is unset or `none`; refuses what paimon_rs cannot honour.
    pub fn from_options(raw: &BTreeMap<String, String>) -> Result<Option<Self>> {
        let mode = raw
            .get("tag.automatic-creation")
            .map(|s| s.trim().to_ascii_lowercase())
            .unwrap_or_else(|| "none".into());
        let watermark =
            match mode.as_str() {
                "none" => return Ok(None),
                "process-time" => false,
                "watermark" => true,
                "batch" => return Err(Error::unsupported(
                    "tag.automatic-creation = 'batch' (paimon_rs creates tags by process-time or \
                     watermark only)",
                )),
                other => {
                    return Err(Error::invalid(format!(
                    "Could not parse value '{other}' for key 'tag.automatic-creation'. (expected \
                     none, process-time, watermark or batch)"
                )))
                }
            };
        let period = match raw
            .get("tag.creation-period")
            .map(|s| s.trim().to_ascii_lowercase())
            .as_deref()
        {
            None | Some("daily") => Period::Daily,
            Some("hourly") => Period::Hourly,
            Some("two-hours") => Period::TwoHours,
            Some(other) => {
                return Err(Error::invalid(format!(
                    "Could not parse value '{other}' for key 'tag.creation-period'. (expected \
                     daily, hourly or two-hours)"
                )))
            }
        };
        let dashes = match raw
            .get("tag.period-formatter")
            .map(|s| s.trim().to_ascii_lowercase())
            .as_deref()
        {
            None | Some("with_dashes") => true,
            Some("without_dashes") => false,
            Some(other) => {
                return Err(Error::unsupported(format!(
                    "tag.period-formatter = '{other}' (supported: with_dashes, without_dashes)"
                )))
            }
        };
        for key in [
            "tag.automatic-completion",
            "tag.creation-period-duration",
            "tag.batch.customized-name",
        ] {
            if let Some(v) = raw.get(key) {
                if key != "tag.automatic-completion" || v.trim() != "false" {
                    return Err(Error::unsupported(format!(
                        "option '{key}' = '{v}' with tag.automatic-creation"
                    )));
                }
            }
        }
        let delay_ms = match raw.get("tag.creation-delay") {
            Some(v) => parse_duration_ms("tag.creation-delay", v)? as i64,
            None => 0,
        };
        let num_retained_max = match raw.get("tag.num-retained-max") {
            Some(v) => Some(v.trim().parse::<usize>().map_err(|_| {
                Error::invalid(format!(
                    "Could not parse value '{v}' for key 'tag.num-retained-max'. (expected an \
                     integer)"
                ))
            })?),
            None => None,
        };
        Ok(Some(AutoTag {
            watermark,
            period,
            dashes,
            delay_ms,
            num_retained_max,
        }))
    }

    fn format(&self) -> &'static str {
        match (self.period, self.dashes) {
            (Period::Daily, true) => "%Y-%m-%d",
            (Period::Daily, false) => "%Y%m%d",
            (_, true) => "%Y-%m-%d %H",
            (_, false) => "%Y%m%d %H",
        }
    }

    fn tag_name(&self, t: NaiveDateTime) -> String {
        t.format(self.format()).to_string()
    }

    /// The time of an automatically created tag's name, None for other tags.
    fn tag_time(&self, name: &str) -> Option<NaiveDateTime> {
        if self.period == Period::Daily {
            chrono::NaiveDate::parse_from_str(name, self.format())
                .ok()
                .and_then(|d| d.and_hms_opt(0, 0, 0))
        } else {
            NaiveDateTime::parse_from_str(&format!("{name}:00"), &format!("{}:%M", self.format()))
                .ok()
        }
    }

    /// The snapshot's time: its commit time in the local time zone, or its watermark (UTC).
    fn time_of(&self, s: &Snapshot) -> Option<NaiveDateTime> {
        if self.watermark {
            let w = s.watermark.filter(|&w| w != i64::MIN)?;
            chrono::DateTime::from_timestamp_millis(w).map(|t| t.naive_utc())
        } else {
            chrono::Local
                .timestamp_millis_opt(s.time_millis)
                .single()
                .map(|t| t.naive_local())
        }
    }

    /// Floor to the period, minus one period (Java's `normalizeToPreviousTag`); the arithmetic
    /// is on the wall-clock time taken as UTC, as Java's `Timestamp.fromLocalDateTime`.
    fn previous_tag(&self, t: NaiveDateTime) -> NaiveDateTime {
        let ms = t.and_utc().timestamp_millis();
        let p = self.period.millis();
        let floored = ms.div_euclid(p) * p - p;
        chrono::DateTime::from_timestamp_millis(floored)
            .map(|d| d.naive_utc())
            .unwrap_or(t)
    }

    /// After a commit of `snapshot`: create the tag of the period that ended, if due, then
    /// delete the oldest automatic tags above `tag.num-retained-max`.
    pub fn run(&self, table: &FileStoreTable, snapshot: &Snapshot) -> Result<Option<String>> {
        let Some(time) = self.time_of(snapshot) else {
            return Ok(None);
        };
        let time = time - chrono::Duration::milliseconds(self.delay_ms);
        let sm = table.snapshot_manager();
        let auto: Vec<(NaiveDateTime, String, i64)> = {
            let mut v: Vec<_> = sm
                .tags()?
                .into_iter()
                .filter_map(|(n, s)| self.tag_time(&n).map(|t| (t, n, s.id)))
                .collect();
            v.sort();
            v
        };
        let period = chrono::Duration::milliseconds(self.period.millis());
        // the next tag is due once its period has ended: one period after the last tag's
        if let Some((last, _, _)) = auto.last() {
            if time < *last + period + period {
                return Ok(None);
            }
        }
        let this = self.previous_tag(time);
        let name = self.tag_name(this);
        let created = if io::exists(&sm.tag_path(&name)) {
            None
        } else {
            create_tag(table, &name, Some(snapshot.id), None, true)?;
            Some(name)
        };
        if let Some(max) = self.num_retained_max {
            let mut auto: Vec<(NaiveDateTime, String, i64)> = sm
                .tags()?
                .into_iter()
                .filter_map(|(n, s)| self.tag_time(&n).map(|t| (t, n, s.id)))
                .collect();
            // Java orders by the tagged snapshot
            auto.sort_by_key(|(_, n, id)| (*id, n.clone()));
            let excess = auto.len().saturating_sub(max);
            for (_, n, _) in auto.into_iter().take(excess) {
                delete_tag(table, &n)?;
            }
        }
        Ok(created)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::opts;

    fn t(s: &str) -> NaiveDateTime {
        NaiveDateTime::parse_from_str(s, "%Y-%m-%d %H:%M:%S").unwrap()
    }

    #[test]
    fn auto_tag_names_and_periods_are_javas() {
        let a = AutoTag::from_options(&opts(&[("tag.automatic-creation", "process-time")]))
            .unwrap()
            .unwrap();
        assert_eq!(
            a.tag_name(a.previous_tag(t("2023-07-18 11:30:00"))),
            "2023-07-17"
        );
        assert_eq!(a.tag_time("2023-07-17"), Some(t("2023-07-17 00:00:00")));
        assert_eq!(a.tag_time("my-tag"), None);
        let h = AutoTag::from_options(&opts(&[
            ("tag.automatic-creation", "watermark"),
            ("tag.creation-period", "hourly"),
            ("tag.period-formatter", "without_dashes"),
        ]))
        .unwrap()
        .unwrap();
        assert_eq!(
            h.tag_name(h.previous_tag(t("2023-07-18 11:30:00"))),
            "20230718 10"
        );
        assert_eq!(h.tag_time("20230718 10"), Some(t("2023-07-18 10:00:00")));
        let two = AutoTag::from_options(&opts(&[
            ("tag.automatic-creation", "process-time"),
            ("tag.creation-period", "two-hours"),
        ]))
        .unwrap()
        .unwrap();
        assert_eq!(
            two.tag_name(two.previous_tag(t("2023-07-18 11:30:00"))),
            "2023-07-18 08"
        );
    }

    #[test]
    fn auto_tag_refuses_what_it_cannot_honour() {
        assert!(AutoTag::from_options(&opts(&[])).unwrap().is_none());
        for kv in [
            vec![("tag.automatic-creation", "batch")],
            vec![
                ("tag.automatic-creation", "process-time"),
                ("tag.automatic-completion", "true"),
            ],
            vec![
                ("tag.automatic-creation", "process-time"),
                ("tag.period-formatter", "x"),
            ],
        ] {
            assert!(AutoTag::from_options(&opts(&kv)).is_err(), "{kv:?}");
        }
        assert!(AutoTag::from_options(&opts(&[("tag.automatic-creation", "sometimes")])).is_err());
    }

    #[test]
    fn tag_create_time_round_trips_as_jackson_writes_it() {
        let x = t("2024-02-03 04:05:06");
        assert_eq!(parse_local_datetime(&local_datetime_json(x)), Some(x));
        // Jackson leaves out zero seconds and nanos
        let v = serde_json::json!([2024, 2, 3, 4, 5]);
        assert_eq!(parse_local_datetime(&v), Some(t("2024-02-03 04:05:00")));
    }
}
