//! Table options with Paimon's keys and defaults (paimon-format.md §11,
//! paimon-behaviour.md §13). Options are validated when a table is created and when it is opened
//! for writing: an option the engine does not implement is refused, never silently ignored.

use std::collections::BTreeMap;

use crate::error::{Error, Result};

pub mod defs;

pub use defs::{OptionDef, Status as OptionStatus};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatsMode {
    None,
    Counts,
    Full,
    Truncate(usize),
}

/// `merge-engine` (paimon-behaviour.md §8).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MergeEngineKind {
    Deduplicate,
    PartialUpdate,
    Aggregation,
    FirstRow,
}

impl MergeEngineKind {
    pub fn parse(v: &str) -> Result<Self> {
        Ok(match v {
            "deduplicate" => MergeEngineKind::Deduplicate,
            "partial-update" => MergeEngineKind::PartialUpdate,
            "aggregation" => MergeEngineKind::Aggregation,
            "first-row" => MergeEngineKind::FirstRow,
            other => {
                return Err(cannot_parse(
                    "merge-engine",
                    other,
                    "deduplicate, partial-update, aggregation or first-row",
                ))
            }
        })
    }

    /// The engine's own `<engine>.ignore-delete` key (a fallback of `ignore-delete`).
    pub fn ignore_delete_key(self) -> &'static str {
        match self {
            MergeEngineKind::FirstRow => "first-row.ignore-delete",
            MergeEngineKind::PartialUpdate => "partial-update.ignore-delete",
            _ => "deduplicate.ignore-delete",
        }
    }
}

/// `changelog-producer`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangelogProducer {
    None,
    Input,
    FullCompaction,
    Lookup,
}

impl ChangelogProducer {
    pub fn parse(v: &str) -> Result<Self> {
        Ok(match v.trim().to_ascii_lowercase().as_str() {
            "none" => ChangelogProducer::None,
            "input" => ChangelogProducer::Input,
            "full-compaction" => ChangelogProducer::FullCompaction,
            "lookup" => ChangelogProducer::Lookup,
            _ => {
                return Err(bad(
                    "changelog-producer",
                    v,
                    "expected none, input, full-compaction or lookup",
                ))
            }
        })
    }
}

#[derive(Debug, Clone)]
pub struct CoreOptions {
    pub raw: BTreeMap<String, String>,
    pub bucket: i32,
    pub bucket_key: Option<Vec<String>>,
    pub file_format: String,
    pub file_compression: String,
    pub zstd_level: i32,
    pub target_file_size: Option<u64>,
    /// `target-file-row-num`: a data file written (not compacted) rolls when it holds this
    /// many rows or reaches `target-file-size`, whichever comes first (Java's default
    /// `Long.MAX_VALUE`: no row limit).
    pub target_file_row_num: u64,
    pub write_buffer_size: u64,
    pub write_buffer_spillable: bool,
    pub spill_max_disk_size: Option<u64>,
    pub spill_compression: Option<arrow_ipc::CompressionType>,
    /// `spill-compression.zstd-level` (default 1, as Java Paimon spills).
    pub spill_zstd_level: i32,
    pub local_sort_max_num_file_handles: usize,
    /// `sort-spill-threshold`: a merge read of more sorted runs than this first merges the
    /// smallest runs into one spilled run (None: never).
    pub sort_spill_threshold: Option<usize>,
    /// Where spill files go: `write-buffer-spill.dir` (paimon_rs option), else the environment
    /// variable `PAIMON_RS_TMP_DIR`, else the system temp dir.
    pub tmp_dir: std::path::PathBuf,
    pub manifest_compression: String,
    /// Manifest merging at commit (Java's ManifestFileMerger): merged manifests aim at
    /// `manifest.target-file-size`; at least `manifest.merge-min-count` small ones are merged;
    /// a full rewrite once small or delete-carrying manifests reach
    /// `manifest.full-compaction-threshold-size`.
    pub manifest_target_file_size: u64,
    pub manifest_merge_min_count: usize,
    pub manifest_full_compaction_threshold_size: u64,
    pub partition_default_name: String,
    pub partition_legacy_name: bool,
    pub rowkind_field: Option<String>,
    /// `ignore-delete` or the engine's fallback key (`first-row.ignore-delete`,
    /// `deduplicate.ignore-delete`, `partial-update.ignore-delete`): -U/-D dropped at write.
    pub ignore_delete: bool,
    /// `ignore-update-before`: -U dropped at write.
    pub ignore_update_before: bool,
    pub stats_mode: StatsMode,
    /// `file.format.per.level` (`0:avro,3:parquet`): the format of a primary-key table's data
    /// files at a level, lower-cased; levels not named use `file.format`.
    pub file_format_per_level: BTreeMap<i32, String>,
    /// `file.compression.per.level` (`0:lz4`): their codec; levels not named use
    /// `file.compression`.
    pub file_compression_per_level: BTreeMap<i32, String>,
    /// `changelog-file.format`, `changelog-file.compression`, `changelog-file.stats-mode`: those
    /// of changelog files, which otherwise follow the level they are written at.
    pub changelog_file_format: Option<String>,
    pub changelog_file_compression: Option<String>,
    pub changelog_file_stats_mode: Option<StatsMode>,
    /// `metadata.stats-mode.per.level` (`0:none`): the stats mode of a level's files.
    pub stats_mode_per_level: BTreeMap<i32, StatsMode>,
    pub commit_max_retries: u32,
    pub commit_min_retry_wait_ms: u64,
    pub commit_max_retry_wait_ms: u64,
    /// `dynamic-partition-overwrite` (default true): an overwrite without a static partition
    /// replaces only the partitions present in the data.
    pub dynamic_partition_overwrite: bool,
    pub split_target_size: u64,
    pub split_open_file_cost: u64,
    pub data_file_prefix: String,
    /// `data-file.path-directory`: the directory under the table its data files live in
    /// (`<table>/<dir>/<partition>/bucket-<n>/`); None: the table's own directory.
    pub data_file_path_directory: Option<String>,
    /// `changelog-file.prefix` (default `changelog-`): the name prefix of changelog files.
    pub changelog_file_prefix: String,
    /// `merge-engine` (default deduplicate).
    pub merge_engine: MergeEngineKind,
    /// `changelog-producer` (default none).
    pub changelog_producer: ChangelogProducer,
    /// `num-sorted-run.compaction-trigger` (default 5): sorted runs of a bucket that trigger a
    /// compaction.
    pub num_sorted_run_compaction_trigger: usize,
    /// `num-sorted-run.stop-trigger` (default compaction trigger + 3): sorted runs that stall
    /// writes. Java's effective value is never below the compaction trigger.
    pub num_sorted_run_stop_trigger: usize,
    /// `num-levels` (default compaction trigger + 1).
    pub num_levels: usize,
    /// `compaction.max-size-amplification-percent` (default 200).
    pub compaction_max_size_amplification_percent: u64,
    /// `compaction.size-ratio` (default 1, percent).
    pub compaction_size_ratio: u64,
    /// `full-compaction.delta-commits` (default unset).
    pub full_compaction_delta_commits: Option<u32>,
    /// `write-only` (default false): this writer never compacts.
    pub write_only: bool,
    /// `compaction.min.file-num` (default 5): append-table compaction needs at least this many
    /// small files.
    pub compaction_min_file_num: usize,
    /// `compaction.max.file-num` (default 50, Java 1.x): append-table compaction picks at most
    /// this many files.
    pub compaction_max_file_num: usize,
    /// Where a batch scan starts (`scan.mode`, `scan.snapshot-id`, ...); writers ignore it.
    pub scan: crate::scan_options::ScanStart,
    /// `data-file.external-paths` (with a strategy other than `none`): where new data files go.
    pub external_paths: Option<std::sync::Arc<crate::write::external_path::ExternalPaths>>,
}

/// The known option closest to a misspelt `key`: at most 2 edits away (1 for short keys).
/// Candidates: every declared option ([`defs::OPTIONS`]).
pub fn did_you_mean(key: &str) -> Option<&'static str> {
    let max = if key.len() <= 6 { 1 } else { 2 };
    defs::OPTIONS
        .iter()
        .map(|d| (edit_distance(key, d.key), d.key))
        .filter(|(d, k)| *d <= max && *k != key)
        .min()
        .map(|(_, k)| k)
}

/// What a table option key is to paimon_rs ([`classify`]).
#[derive(Debug, Clone, Copy)]
pub enum KeyClass {
    /// Declared, or of a validated family (`fields.*`, `file-index.*`) or a store option.
    Known(Option<&'static OptionDef>),
    /// Not declared, in Paimon's namespaces or close to a declared key: a misspelling or an
    /// option paimon_rs does not know.
    Unknown(Option<&'static str>),
    /// Outside Paimon's namespaces (a user's own `myapp.owner`): kept, never read.
    Foreign,
}

/// Classify `key` against the declaration.
pub fn classify(key: &str) -> KeyClass {
    if let Some(d) = defs::find(key) {
        return KeyClass::Known(Some(d));
    }
    if crate::io::store::is_store_option(key)
        || defs::PATTERNS.iter().any(|(p, _)| key.starts_with(p))
    {
        return KeyClass::Known(None);
    }
    let close = did_you_mean(key);
    if close.is_some() || defs::in_paimon_namespace(key) {
        KeyClass::Unknown(close)
    } else {
        KeyClass::Foreign
    }
}

/// A declared option set to something other than its default that paimon_rs does not
/// implement (set to its default it changes nothing).
fn refused_value(d: &OptionDef, value: &str) -> bool {
    d.status == OptionStatus::Refused
        && d.default
            .is_none_or(|def| !def.trim().eq_ignore_ascii_case(value.trim()))
}

/// Check the options a user typed (`create_table`, `alter_table` set-option, `table.copy` and
/// the read options that go through it) on table `table`: an unknown key in Paimon's
/// namespaces (or close to a known one) is refused naming the closest known key, a known
/// option paimon_rs does not implement is refused, a key outside Paimon's namespaces is kept
/// and logged once per table. Values and combinations are checked by `CoreOptions::new` /
/// `check_supported` as before.
pub fn check_user_options<'a>(
    table: &str,
    options: impl IntoIterator<Item = (&'a String, &'a String)>,
) -> Result<()> {
    let mut foreign = vec![];
    for (k, v) in options {
        match classify(k) {
            KeyClass::Known(Some(d)) if refused_value(d, v) => {
                return Err(Error::Unsupported {
                    table: Some(table.to_string()),
                    message: format!("table option '{k}' is not implemented by paimon_rs"),
                });
            }
            KeyClass::Known(_) => {}
            KeyClass::Unknown(None) if defs::format_option(k).is_some() => {
                return Err(Error::Unsupported {
                    table: Some(table.to_string()),
                    message: format!(
                        "table option '{k}' (an option of the {} writer) is not implemented by \
                         paimon_rs",
                        defs::format_option(k).unwrap_or_default()
                    ),
                });
            }
            KeyClass::Unknown(close) => {
                let hint = close
                    .map(|c| format!(" (did you mean '{c}'?)"))
                    .unwrap_or_default();
                return Err(Error::InvalidArgument {
                    table: Some(table.to_string()),
                    message: format!(
                        "unknown table option '{k}'{hint}: not an option of Paimon that \
                         paimon_rs knows (docs/options-reference.md lists them)"
                    ),
                });
            }
            KeyClass::Foreign => foreign.push(k.as_str()),
        }
    }
    if !foreign.is_empty() {
        warn_foreign_once(table, &foreign);
    }
    Ok(())
}

/// Log the keys outside Paimon's namespaces a table carries, once per table and process.
fn warn_foreign_once(table: &str, keys: &[&str]) {
    use std::collections::HashSet;
    use std::sync::{Mutex, OnceLock};
    static WARNED: OnceLock<Mutex<HashSet<String>>> = OnceLock::new();
    let mut warned = WARNED
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if warned.insert(table.to_string()) {
        log::warn!(
            target: "paimon_rs.options",
            "table {table}: options {keys:?} are not Paimon options; kept in the schema, \
             paimon_rs does not read them"
        );
    }
}

/// Levenshtein distance over bytes (option keys are ASCII).
fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != cb);
            cur[j + 1] = sub.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

fn bad(key: &str, value: &str, expect: &str) -> Error {
    Error::invalid(format!("option '{key}' = '{value}': {expect}"))
}

/// `data-file.path-directory`: a relative path under the table (`.` segments and repeated or
/// trailing slashes dropped). Empty is refused as pypaimon does; an absolute path, a URI or a
/// `..` segment (Java would resolve them outside the table) is refused: orphan clean, drop and
/// file deletion only sweep under the table's own directory.
pub fn parse_data_file_path_directory(v: &str) -> Result<String> {
    let key = "data-file.path-directory";
    if v.starts_with('/') || v.starts_with('\\') || v.contains(':') {
        return Err(Error::unsupported(format!(
            "{key} = '{v}': only a directory relative to the table is supported (an absolute \
             path or URI would put data files outside the table, where drop and orphan clean \
             do not look)"
        )));
    }
    let mut parts = vec![];
    for seg in v.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                return Err(Error::unsupported(format!(
                    "{key} = '{v}': a '..' segment would leave the table's directory"
                )))
            }
            s => parts.push(s),
        }
    }
    if parts.is_empty() {
        return Err(Error::invalid(format!(
            "{key} must not be empty (got '{v}')"
        )));
    }
    Ok(parts.join("/"))
}

/// Parse a Paimon memory size such as `128 mb`, `64mb`, `1 gb`, `4096`, `256 kb`.
pub fn parse_memory_size(key: &str, v: &str) -> Result<u64> {
    let s = v.trim().to_ascii_lowercase();
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let n: u64 = num
        .parse()
        .map_err(|_| bad(key, v, "expected a memory size like '128 mb'"))?;
    let mult: u64 = match unit.trim() {
        "" | "b" | "bytes" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        "t" | "tb" | "tib" => 1 << 40,
        _ => return Err(bad(key, v, "unknown memory unit")),
    };
    n.checked_mul(mult).ok_or_else(|| bad(key, v, "too large"))
}

/// Parse a Paimon duration (`10 ms`, `10s`, `1 min`, `500`) into milliseconds.
pub fn parse_duration_ms(key: &str, v: &str) -> Result<u64> {
    let s = v.trim().to_ascii_lowercase();
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let n: u64 = num
        .parse()
        .map_err(|_| bad(key, v, "expected a duration like '10 s'"))?;
    let mult = match unit.trim() {
        "" | "ms" | "milli" | "millis" => 1,
        "s" | "sec" | "secs" | "second" | "seconds" => 1000,
        "min" | "m" | "minute" | "minutes" => 60_000,
        "h" | "hour" | "hours" => 3_600_000,
        "d" | "day" | "days" => 86_400_000,
        _ => return Err(bad(key, v, "unknown duration unit")),
    };
    Ok(n * mult)
}

/// Map `spill-compression` to an IPC codec.
fn parse_spill_compression(v: &str) -> Result<Option<arrow_ipc::CompressionType>> {
    Ok(match v.trim().to_ascii_lowercase().as_str() {
        "zstd" => Some(arrow_ipc::CompressionType::ZSTD),
        "lz4" => Some(arrow_ipc::CompressionType::LZ4_FRAME),
        "none" | "uncompressed" => None,
        other => {
            return Err(Error::invalid(format!(
                "option 'spill-compression' = '{other}': expected zstd, lz4 or none"
            )))
        }
    })
}

/// Check `spill-compression.zstd-level` against the levels zstd accepts.
fn check_spill_zstd_level(level: i32) -> Result<i32> {
    // zstd's ZSTD_minCLevel() ..= ZSTD_maxCLevel()
    if (-(1 << 17)..=22).contains(&level) {
        Ok(level)
    } else {
        Err(Error::invalid(format!(
            "option 'spill-compression.zstd-level' = '{level}': expected a zstd level, at most 22"
        )))
    }
}

/// The BLOB columns stored inline in the data files instead of `.blob` files: those of
/// `blob-descriptor-field` (its fallback key `blob.stored-descriptor-fields` when it is absent,
/// as Java's) and those of `blob-view-field`, as (descriptor fields, view fields).
pub fn blob_inline_fields(
    raw: &BTreeMap<String, String>,
) -> (
    std::collections::BTreeSet<String>,
    std::collections::BTreeSet<String>,
) {
    let set = |v: Option<&String>| {
        v.map(|v| {
            v.split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(String::from)
                .collect()
        })
        .unwrap_or_default()
    };
    let descriptor = raw
        .get("blob-descriptor-field")
        .or_else(|| raw.get("blob.stored-descriptor-fields"));
    (set(descriptor), set(raw.get("blob-view-field")))
}

/// Whether column `name` is a BLOB stored inline (`blob-descriptor-field` / `blob-view-field`).
pub fn is_inline_blob(raw: &BTreeMap<String, String>, name: &str) -> bool {
    let (d, v) = blob_inline_fields(raw);
    d.contains(name) || v.contains(name)
}

/// `orc.timestamp-ltz.legacy.type` (Java's `OrcOptions`, default true): Java's ORC writer
/// stores a TIMESTAMP_LTZ as an ORC `timestamp with local time zone` either way; legacy (true)
/// first reads the value's UTC wall clock in the JVM's default zone (and its reader undoes
/// that), false stores the instant. paimon_rs writes ORC as a writer in UTC (TIMESTAMP's writer
/// zone is UTC too), where both store the instant itself: both values are honoured, and
/// Parquet / Avro tables (Java hands `orc.*` to the ORC format only) are unaffected.
pub(crate) const ORC_TIMESTAMP_LTZ_LEGACY: &str = "orc.timestamp-ltz.legacy.type";

pub(crate) fn parse_bool(key: &str, v: &str) -> Result<bool> {
    match v.trim().to_ascii_lowercase().as_str() {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(cannot_parse(key, v, "true or false")),
    }
}

/// Java's `Options.get` refusing a value (its words), with what paimon_rs expected.
fn cannot_parse(key: &str, v: &str, expected: &str) -> Error {
    Error::invalid(format!(
        "Could not parse value '{v}' for key '{key}'. (expected {expected})"
    ))
}

fn parse_int<T: std::str::FromStr>(key: &str, v: &str) -> Result<T> {
    v.trim()
        .parse::<T>()
        .map_err(|_| cannot_parse(key, v, "an integer"))
}

/// A postpone-bucket table's compaction options ([`CoreOptions::postpone`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PostponeOptions {
    /// `postpone.default-bucket-num`: the exact bucket count of a partition with no real
    /// bucket yet.
    pub default_bucket_num: Option<i32>,
    /// `postpone.target-row-num-per-bucket` (before the size target when set).
    pub target_row_num_per_bucket: Option<i64>,
    /// `postpone.target-size-per-bucket` in bytes (default 1 GiB).
    pub target_size_per_bucket: u64,
}

/// Options of dynamic bucket mode ([`CoreOptions::dynamic_bucket`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DynamicBucketOptions {
    /// `dynamic-bucket.target-row-num`: keys per bucket before a new bucket opens.
    pub target_row_num: i64,
    /// `dynamic-bucket.max-buckets`: buckets per partition, -1 = unlimited.
    pub max_buckets: i32,
    /// `dynamic-bucket.initial-buckets`: number of assigners of a distributed write (Java:
    /// `min(initial-buckets, assigner parallelism)`).
    pub initial_buckets: Option<i32>,
    /// `dynamic-bucket.assigner-parallelism`: tasks of a distributed write's assign stage.
    pub assigner_parallelism: Option<i32>,
}

impl CoreOptions {
    /// Parse and validate. `primary_key` tells which defaults apply (target file size).
    pub fn new(raw: &BTreeMap<String, String>, primary_key: bool) -> Result<Self> {
        let get = |k: &str| raw.get(k).map(String::as_str);
        let bucket = match get("bucket") {
            Some(v) => parse_int::<i32>("bucket", v)?,
            None => -1,
        };
        if bucket == 0 || bucket < -2 {
            return Err(bad(
                "bucket",
                &bucket.to_string(),
                "The number of buckets needs to be greater than 0. (or -1: dynamic bucket mode, \
                 -2: postpone bucket mode)",
            ));
        }
        if let Some(v) = get(ORC_TIMESTAMP_LTZ_LEGACY) {
            // Java's OrcFileFormat option (pypaimon's Java-interop tests set it on every table):
            // either value is honoured, see ORC_TIMESTAMP_LTZ_LEGACY
            parse_bool(ORC_TIMESTAMP_LTZ_LEGACY, v)?;
        }
        let stats_mode = match get("metadata.stats-mode") {
            None => StatsMode::Truncate(16),
            Some(v) => parse_stats_mode(v)?,
        };
        let target_file_size = match get("target-file-size") {
            Some(v) => Some(parse_memory_size("target-file-size", v)?),
            None => None,
        };
        let merge_engine = MergeEngineKind::parse(get("merge-engine").unwrap_or("deduplicate"))?;
        let changelog_producer = match get("changelog-producer") {
            Some(v) => ChangelogProducer::parse(v)?,
            None => ChangelogProducer::None,
        };
        let positive = |k: &str, default: usize| -> Result<usize> {
            match get(k) {
                Some(v) => {
                    let n: usize = parse_int(k, v)?;
                    if n < 1 {
                        return Err(bad(k, v, "must be at least 1"));
                    }
                    Ok(n)
                }
                None => Ok(default),
            }
        };
        let trigger = positive("num-sorted-run.compaction-trigger", 5)?;
        let stop_trigger = positive("num-sorted-run.stop-trigger", trigger + 3)?;
        let num_levels = positive("num-levels", trigger + 1)?;
        if num_levels < 2 {
            return Err(bad(
                "num-levels",
                &num_levels.to_string(),
                "must be at least 2",
            ));
        }
        let opts = CoreOptions {
            raw: raw.clone(),
            merge_engine,
            changelog_producer,
            num_sorted_run_compaction_trigger: trigger,
            num_sorted_run_stop_trigger: stop_trigger,
            num_levels,
            compaction_max_size_amplification_percent: match get(
                "compaction.max-size-amplification-percent",
            ) {
                Some(v) => parse_int("compaction.max-size-amplification-percent", v)?,
                None => 200,
            },
            compaction_size_ratio: match get("compaction.size-ratio") {
                Some(v) => parse_int("compaction.size-ratio", v)?,
                None => 1,
            },
            full_compaction_delta_commits: match get("full-compaction.delta-commits") {
                Some(v) => {
                    let n: u32 = parse_int("full-compaction.delta-commits", v)?;
                    if n < 1 {
                        return Err(bad(
                            "full-compaction.delta-commits",
                            v,
                            "must be at least 1",
                        ));
                    }
                    Some(n)
                }
                None => None,
            },
            write_only: match get("write-only") {
                Some(v) => parse_bool("write-only", v)?,
                None => false,
            },
            compaction_min_file_num: positive("compaction.min.file-num", 5)?,
            compaction_max_file_num: positive("compaction.max.file-num", 50)?,
            bucket,
            bucket_key: get("bucket-key").map(|s| {
                s.split(',')
                    .map(|x| x.trim().to_string())
                    .filter(|x| !x.is_empty())
                    .collect()
            }),
            file_format: get("file.format").unwrap_or("parquet").to_ascii_lowercase(),
            file_compression: get("file.compression")
                .unwrap_or("zstd")
                .to_ascii_lowercase(),
            zstd_level: match get("file.compression.zstd-level") {
                Some(v) => parse_int("file.compression.zstd-level", v)?,
                None => 1,
            },
            target_file_size: Some(target_file_size.unwrap_or(if primary_key {
                128 << 20
            } else {
                256 << 20
            })),
            target_file_row_num: match get("target-file-row-num") {
                // Java's CatalogUtils.validateCreateTable: at least 1
                Some(v) => match parse_int::<i64>("target-file-row-num", v)? {
                    n if n >= 1 => n as u64,
                    _ => return Err(bad("target-file-row-num", v, "should be at least 1")),
                },
                None => i64::MAX as u64,
            },
            write_buffer_size: match get("write-buffer-size") {
                Some(v) => parse_memory_size("write-buffer-size", v)?,
                None => 256 << 20,
            },
            write_buffer_spillable: match get("write-buffer-spillable") {
                Some(v) => parse_bool("write-buffer-spillable", v)?,
                None => true,
            },
            spill_max_disk_size: match get("write-buffer-spill.max-disk-size") {
                Some(v) => Some(parse_memory_size("write-buffer-spill.max-disk-size", v)?),
                None => None,
            },
            spill_compression: parse_spill_compression(get("spill-compression").unwrap_or("zstd"))?,
            spill_zstd_level: match get("spill-compression.zstd-level") {
                Some(v) => check_spill_zstd_level(parse_int("spill-compression.zstd-level", v)?)?,
                None => 1,
            },
            local_sort_max_num_file_handles: match get("local-sort.max-num-file-handles") {
                Some(v) => {
                    let n: usize = parse_int("local-sort.max-num-file-handles", v)?;
                    if n < 2 {
                        return Err(bad(
                            "local-sort.max-num-file-handles",
                            v,
                            "must be at least 2",
                        ));
                    }
                    n
                }
                None => 128,
            },
            sort_spill_threshold: match get("sort-spill-threshold") {
                Some(v) => {
                    let n: usize = parse_int("sort-spill-threshold", v)?;
                    if n < 2 {
                        return Err(bad("sort-spill-threshold", v, "must be at least 2"));
                    }
                    Some(n)
                }
                None => None,
            },
            tmp_dir: match get("write-buffer-spill.dir") {
                Some(d) => std::path::PathBuf::from(d),
                None => std::env::var_os("PAIMON_RS_TMP_DIR")
                    .map(std::path::PathBuf::from)
                    .unwrap_or_else(std::env::temp_dir),
            },
            manifest_compression: get("manifest.compression").unwrap_or("zstd").to_string(),
            manifest_target_file_size: match get("manifest.target-file-size") {
                Some(v) => parse_memory_size("manifest.target-file-size", v)?,
                None => 8 << 20,
            },
            manifest_merge_min_count: match get("manifest.merge-min-count") {
                Some(v) => parse_int("manifest.merge-min-count", v)?,
                None => 30,
            },
            manifest_full_compaction_threshold_size: match get(
                "manifest.full-compaction-threshold-size",
            ) {
                Some(v) => parse_memory_size("manifest.full-compaction-threshold-size", v)?,
                None => 16 << 20,
            },
            partition_default_name: get("partition.default-name")
                .unwrap_or(crate::spec::partition::DEFAULT_PARTITION_NAME)
                .to_string(),
            partition_legacy_name: match get("partition.legacy-name") {
                Some(v) => parse_bool("partition.legacy-name", v)?,
                None => true,
            },
            rowkind_field: get("rowkind.field").map(str::to_string),
            ignore_delete: {
                let mut b = false;
                for k in ["ignore-delete", merge_engine.ignore_delete_key()] {
                    if let Some(v) = get(k) {
                        b |= parse_bool(k, v)?;
                    }
                }
                b
            },
            ignore_update_before: match get("ignore-update-before") {
                Some(v) => parse_bool("ignore-update-before", v)?,
                None => false,
            },
            stats_mode,
            file_format_per_level: match get("file.format.per.level") {
                Some(v) => parse_level_map("file.format.per.level", v)?
                    .into_iter()
                    .map(|(l, f)| (l, f.to_ascii_lowercase()))
                    .collect(),
                None => BTreeMap::new(),
            },
            file_compression_per_level: match get("file.compression.per.level") {
                Some(v) => parse_level_map("file.compression.per.level", v)?
                    .into_iter()
                    .map(|(l, c)| (l, c.to_ascii_lowercase()))
                    .collect(),
                None => BTreeMap::new(),
            },
            changelog_file_format: get("changelog-file.format").map(str::to_ascii_lowercase),
            changelog_file_compression: get("changelog-file.compression")
                .map(str::to_ascii_lowercase),
            changelog_file_stats_mode: match get("changelog-file.stats-mode") {
                Some(v) => Some(parse_stats_mode_of("changelog-file.stats-mode", v)?),
                None => None,
            },
            stats_mode_per_level: match get("metadata.stats-mode.per.level") {
                Some(v) => parse_level_map("metadata.stats-mode.per.level", v)?
                    .into_iter()
                    .map(|(l, m)| {
                        Ok((l, parse_stats_mode_of("metadata.stats-mode.per.level", &m)?))
                    })
                    .collect::<Result<_>>()?,
                None => BTreeMap::new(),
            },
            commit_max_retries: match get("commit.max-retries") {
                Some(v) => parse_int("commit.max-retries", v)?,
                None => 10,
            },
            commit_min_retry_wait_ms: match get("commit.min-retry-wait") {
                Some(v) => parse_duration_ms("commit.min-retry-wait", v)?,
                None => 10,
            },
            commit_max_retry_wait_ms: match get("commit.max-retry-wait") {
                Some(v) => parse_duration_ms("commit.max-retry-wait", v)?,
                None => 10_000,
            },
            dynamic_partition_overwrite: match get("dynamic-partition-overwrite") {
                Some(v) => parse_bool("dynamic-partition-overwrite", v)?,
                None => true,
            },
            split_target_size: match get("source.split.target-size") {
                Some(v) => parse_memory_size("source.split.target-size", v)?,
                None => 128 << 20,
            },
            split_open_file_cost: match get("source.split.open-file-cost") {
                Some(v) => parse_memory_size("source.split.open-file-cost", v)?,
                None => 4 << 20,
            },
            data_file_prefix: get("data-file.prefix").unwrap_or("data-").to_string(),
            data_file_path_directory: get("data-file.path-directory")
                .map(parse_data_file_path_directory)
                .transpose()?,
            changelog_file_prefix: get("changelog-file.prefix")
                .unwrap_or("changelog-")
                .to_string(),
            scan: crate::scan_options::parse_scan_start(raw)?,
            external_paths: crate::write::external_path::ExternalPaths::from_options(&get)?
                .map(std::sync::Arc::new),
        };
        if !matches!(
            opts.file_compression.as_str(),
            "zstd" | "snappy" | "lz4" | "gzip" | "none" | "uncompressed"
        ) {
            return Err(bad(
                "file.compression",
                &opts.file_compression,
                "expected zstd, snappy, lz4, gzip or none",
            ));
        }
        if opts.write_buffer_size == 0 {
            return Err(bad("write-buffer-size", "0", "must be positive"));
        }
        for (k, v) in [
            ("manifest.target-file-size", opts.manifest_target_file_size),
            (
                "manifest.full-compaction-threshold-size",
                opts.manifest_full_compaction_threshold_size,
            ),
        ] {
            if v == 0 {
                return Err(bad(k, "0", "must be positive"));
            }
        }
        if opts.target_file_size == Some(0) {
            return Err(bad("target-file-size", "0", "must be positive"));
        }
        Ok(opts)
    }

    /// Refuse what this engine cannot honour. `for_write` is stricter: a reader can still read a
    /// table whose write-side options it does not implement.
    pub fn check_supported(&self, primary_key: bool, for_write: bool) -> Result<()> {
        let get = |k: &str| self.raw.get(k).map(String::as_str);
        // first-row tables hide level-0 files from reads: a writer that does not compact them
        // up (`write-only`) leaves its data invisible until a compaction job runs, as in Java
        if let Some(v) = get("sequence.snapshot-ordering") {
            if parse_bool("sequence.snapshot-ordering", v)? {
                return Err(Error::unsupported("sequence.snapshot-ordering = true"));
            }
        }
        // Java's SchemaValidation: a changelog needs a key to describe its rows by
        if !primary_key && self.changelog_producer != ChangelogProducer::None {
            return Err(Error::invalid(
                "Can not set changelog-producer on table without primary keys, please define \
                 primary keys.",
            ));
        }
        // the table's kind first: its refusal says more than an option it needs
        if primary_key {
            if self.bucket == -1 {
                self.dynamic_bucket()?;
            }
            if self.bucket == -2 {
                self.postpone()?;
            }
        } else if self.bucket > 0 && self.bucket_key.is_none() {
            return Err(Error::invalid(format!(
                "option 'bucket' = '{}': You should define a 'bucket-key' for bucketed append \
                 mode.",
                self.bucket
            )));
        } else if self.bucket == -2 {
            return Err(Error::unsupported(
                "postpone bucket mode (bucket = -2) on a table without a primary key",
            ));
        }
        // Java's SchemaValidation.validateRowTracking
        if self.row_tracking()? {
            if primary_key {
                return Err(Error::invalid(
                    "Cannot define primary-key for row tracking table.",
                ));
            }
            if self.bucket != -1 {
                return Err(Error::invalid(
                    "Cannot define bucket for row tracking table, it only support bucket = -1",
                ));
            }
        }
        // Java's SchemaValidation.validateRowTracking, data evolution part
        if self.data_evolution()? {
            if !self.row_tracking()? {
                return Err(Error::invalid(
                    "Data evolution config must enabled with row-tracking.enabled",
                ));
            }
            if get("clustering.incremental").is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
            {
                return Err(Error::invalid(
                    "Data evolution config must disabled with clustering.incremental",
                ));
            }
        }
        if self.deletion_vectors()? {
            self.check_deletion_vectors()?;
        }
        if for_write {
            // `input` is written by flushes, `lookup` by lookup compaction
            // (compact/lookup_rewrite.rs), `full-compaction` by compactions into the max level
            // (compact/full_changelog.rs). Java's SchemaValidation refuses the first-row engine
            // with any producer but these two
            if self.merge_engine == MergeEngineKind::FirstRow
                && !matches!(
                    self.changelog_producer,
                    ChangelogProducer::None | ChangelogProducer::Lookup
                )
            {
                return Err(Error::invalid(
                    "Only support 'none' and 'lookup' changelog-producer on FIRST_MERGE merge \
                     engine",
                ));
            }
            // full-compaction with force-lookup (first-row and deletion vectors are refused
            // above and in check_deletion_vectors, with Java's messages) is written: level 0
            // forced up, changelog from full compactions only (compact/full_changelog.rs)
            if self.changelog_producer == ChangelogProducer::Lookup
                && get("full-compaction.delta-commits").is_some()
            {
                return Err(Error::invalid(
                    "option 'full-compaction.delta-commits' cannot be combined with \
                     changelog-producer = lookup (use changelog-producer = full-compaction)",
                ));
            }
            // the format, its codec options and the columns it can hold are checked with the
            // table's columns: io::format::check_write_format
            // a stored option paimon_rs does not implement, or one it does not know in
            // Paimon's namespaces (a newer Java's), would be ignored by this write: refused.
            // Keys outside Paimon's namespaces (a user's own) are kept and never read.
            for (key, value) in &self.raw {
                // the closest known key, which classify has already looked for
                let refused = match classify(key) {
                    KeyClass::Known(Some(d)) => refused_value(d, value).then_some(None),
                    KeyClass::Known(None) | KeyClass::Foreign => None,
                    KeyClass::Unknown(close) => Some(close),
                };
                if let Some(close) = refused {
                    let hint = close
                        .map(|k| format!(" (did you mean '{k}'?)"))
                        .unwrap_or_default();
                    return Err(Error::unsupported(format!(
                        "table option '{key}' is not implemented by paimon_rs{hint}"
                    )));
                }
            }
            // expiry's and automatic tags' options (they run after each commit) are checked by
            // `FileStoreTable::check_writable`, beside the code that parses them
            for key in ["read.parallelism", "read.batch-size"] {
                if let Some(v) = get(key) {
                    if !matches!(v.trim().parse::<i64>(), Ok(n) if n >= 1) {
                        return Err(cannot_parse(key, v, "an integer >= 1"));
                    }
                }
            }
            if let Some(v) = get("snapshot.expire.execution-mode") {
                let v = v.trim().to_ascii_lowercase();
                if v != "sync" && v != "async" {
                    return Err(cannot_parse(
                        "snapshot.expire.execution-mode",
                        &v,
                        "sync or async",
                    ));
                }
            }
        }
        Ok(())
    }

    /// A table with deletion vectors: Java's `SchemaValidation.validateForDeletionVectors`,
    /// and what paimon_rs maintains (primary-key tables; append tables, write/append_dv.rs).
    /// Lookups (compact/lookup_rewrite.rs) do not yet skip rows a deletion vector removed, so
    /// a key deleted and written again would find its deleted row: harmless for plain deduplicate (the row is marked again and the newer
    /// record wins), wrong for engines that merge the found row, for `sequence.field` (an older
    /// row could win) and for the lookup changelog (its before-image); those are refused.
    fn check_deletion_vectors(&self) -> Result<()> {
        if !matches!(
            self.changelog_producer,
            ChangelogProducer::None | ChangelogProducer::Input | ChangelogProducer::Lookup
        ) {
            return Err(Error::invalid(
                "Deletion vectors mode is only supported for NONE/INPUT/LOOKUP changelog \
                 producer now.",
            ));
        }
        if self.merge_engine == MergeEngineKind::FirstRow {
            return Err(Error::invalid(
                "First row merge engine does not need deletion vectors because there is no \
                 deletion of old data in this merge engine.",
            ));
        }
        // append tables: new rows are written as plain files; DELETE / UPDATE / MERGE mark
        // deleted rows in deletion vectors (write/append_dv.rs), append compaction drops them
        Ok(())
    }

    /// The postpone bucket options of a primary-key table with `bucket = -2` (Java's
    /// `CoreOptions.postpone*`), validated: `default-bucket-num`, `target-row-num-per-bucket`
    /// and `target-size-per-bucket` > 0; `postpone.merge-on-read = true` refused (reads skip
    /// the postpone bucket until a compaction moves its rows, paimon-behaviour.md).
    pub fn postpone(&self) -> Result<PostponeOptions> {
        let get = |k: &str| self.raw.get(k).map(String::as_str);
        if self.changelog_producer == ChangelogProducer::Input {
            return Err(Error::unsupported(
                "changelog-producer = input on a postpone-bucket table (bucket = -2)",
            ));
        }
        if let Some(v) = get("postpone.merge-on-read") {
            if parse_bool("postpone.merge-on-read", v)? {
                return Err(Error::unsupported(
                    "postpone.merge-on-read = true (reads merging bucket-postpone into the real \
                     buckets; compact the table to make its rows visible)",
                ));
            }
        }
        let default_bucket_num = self.positive::<i32>("postpone.default-bucket-num")?;
        let size_key = "postpone.target-size-per-bucket";
        let target_size_per_bucket = match get(size_key) {
            None => 1 << 30,
            Some(v) => match parse_memory_size(size_key, v)? {
                0 => return Err(bad(size_key, v, "must be greater than 0")),
                n => n,
            },
        };
        Ok(PostponeOptions {
            default_bucket_num,
            target_row_num_per_bucket: self
                .positive::<i64>("postpone.target-row-num-per-bucket")?,
            target_size_per_bucket,
        })
    }

    /// The dynamic bucket options of a primary-key table with `bucket = -1` (Java's
    /// `CoreOptions.dynamicBucket*`), validated: `target-row-num` > 0, `max-buckets` -1
    /// (unlimited) or > 0, `initial-buckets` and `assigner-parallelism` > 0.
    pub fn dynamic_bucket(&self) -> Result<DynamicBucketOptions> {
        let get = |k: &str| self.raw.get(k).map(String::as_str);
        let (target, max) = (
            "dynamic-bucket.target-row-num",
            "dynamic-bucket.max-buckets",
        );
        let target_row_num = get(target).map_or(Ok(2_000_000), |v| parse_int::<i64>(target, v))?;
        if target_row_num <= 0 {
            return Err(bad(target, &target_row_num.to_string(), "must be positive"));
        }
        let max_buckets = get(max).map_or(Ok(-1), |v| parse_int::<i32>(max, v))?;
        if max_buckets == 0 || max_buckets < -1 {
            let expect = "must be -1 (unlimited) or greater than 0";
            return Err(bad(max, &max_buckets.to_string(), expect));
        }
        Ok(DynamicBucketOptions {
            target_row_num,
            max_buckets,
            initial_buckets: self.positive::<i32>("dynamic-bucket.initial-buckets")?,
            assigner_parallelism: self.positive::<i32>("dynamic-bucket.assigner-parallelism")?,
        })
    }

    /// Integer option `k` if set, which must be positive.
    fn positive<T: std::str::FromStr + PartialOrd + Default>(&self, k: &str) -> Result<Option<T>> {
        let Some(v) = self.raw.get(k) else {
            return Ok(None);
        };
        let n = parse_int::<T>(k, v)?;
        if n <= T::default() {
            return Err(bad(k, v, "must be positive"));
        }
        Ok(Some(n))
    }

    /// `deletion-vectors.enabled`.
    pub fn deletion_vectors(&self) -> Result<bool> {
        match self.raw.get("deletion-vectors.enabled") {
            Some(v) => parse_bool("deletion-vectors.enabled", v),
            None => Ok(false),
        }
    }

    /// `row-tracking.enabled` (default false): each row of an append table has a `_ROW_ID`,
    /// assigned at commit from the snapshot's `nextRowId` (paimon-behaviour.md, row tracking).
    pub fn row_tracking(&self) -> Result<bool> {
        match self.raw.get("row-tracking.enabled") {
            Some(v) => parse_bool("row-tracking.enabled", v),
            None => Ok(false),
        }
    }

    /// `data-evolution.enabled` (default false): files may hold some columns (`write_cols`) of
    /// rows whose ids another file holds; a read merges them by columns.
    pub fn data_evolution(&self) -> Result<bool> {
        match self.raw.get("data-evolution.enabled") {
            Some(v) => parse_bool("data-evolution.enabled", v),
            None => Ok(false),
        }
    }

    /// `deletion-vectors.bitmap64` (default false): vectors written as 64-bit Roaring bitmaps.
    pub fn deletion_vectors_bitmap64(&self) -> Result<bool> {
        match self.raw.get("deletion-vectors.bitmap64") {
            Some(v) => parse_bool("deletion-vectors.bitmap64", v),
            None => Ok(false),
        }
    }

    /// Java's `CoreOptions.needLookup()`: a primary-key table whose compaction must look keys
    /// up in higher levels, so it forces level-0 files up (paimon-behaviour.md §3.5): deletion
    /// vectors, `changelog-producer = lookup`, `force-lookup`, and the first-row engine.
    pub fn needs_lookup(&self) -> Result<bool> {
        let force = self
            .raw
            .get("force-lookup")
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"));
        Ok(self.deletion_vectors()?
            || force
            || self.changelog_producer == ChangelogProducer::Lookup
            || self.merge_engine == MergeEngineKind::FirstRow)
    }

    /// Java's `batchScanSkipLevel0`: a batch read of a primary-key table hides level-0 files
    /// when deletion vectors are enabled (unless `deletion-vectors.merge-on-read`) and for
    /// first-row tables (paimon-behaviour.md §6.1).
    pub fn batch_scan_skip_level0(&self) -> Result<bool> {
        if self.deletion_vectors()? {
            return Ok(!match self.raw.get("deletion-vectors.merge-on-read") {
                Some(v) => parse_bool("deletion-vectors.merge-on-read", v)?,
                None => false,
            });
        }
        Ok(self.merge_engine == MergeEngineKind::FirstRow)
    }

    pub fn target_file_size(&self) -> u64 {
        self.target_file_size.unwrap_or(128 << 20)
    }
}

fn parse_stats_mode(v: &str) -> Result<StatsMode> {
    parse_stats_mode_of("metadata.stats-mode", v)
}

fn parse_stats_mode_of(key: &str, v: &str) -> Result<StatsMode> {
    let s = v.trim().to_ascii_lowercase();
    Ok(match s.as_str() {
        "none" => StatsMode::None,
        "counts" => StatsMode::Counts,
        "full" => StatsMode::Full,
        _ if s.starts_with("truncate(") && s.ends_with(')') => {
            let n = &s["truncate(".len()..s.len() - 1];
            StatsMode::Truncate(parse_int(key, n)?)
        }
        _ => return Err(bad(key, v, "expected none, counts, full or truncate(N)")),
    })
}

/// What a data file is written as: its level, and whether it is a changelog file (Java's
/// `KeyValueFileWriterFactory.WriteFormatKey`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FileKind {
    pub level: i32,
    pub changelog: bool,
}

impl CoreOptions {
    /// The format of a file of `kind` (paimon-behaviour.md §1.3): `changelog-file.format` for a
    /// changelog file when set, else the level's entry of `file.format.per.level`, else
    /// `file.format`; with the option that decided it (for messages).
    pub fn file_format_of(&self, kind: FileKind) -> (&str, String) {
        if kind.changelog {
            if let Some(f) = &self.changelog_file_format {
                return (f, "changelog-file.format".into());
            }
        }
        match self.file_format_per_level.get(&kind.level) {
            Some(f) => (f, format!("file.format.per.level (level {})", kind.level)),
            None => (&self.file_format, "file.format".into()),
        }
    }

    /// The codec of a file of `kind`: `changelog-file.compression` for a changelog file when
    /// set, else the level's entry of `file.compression.per.level`, else `file.compression`
    /// (chosen apart from the format, as Java does); with the option that decided it.
    pub fn file_compression_of(&self, kind: FileKind) -> (&str, String) {
        if kind.changelog {
            if let Some(c) = &self.changelog_file_compression {
                return (c, "changelog-file.compression".into());
            }
        }
        match self.file_compression_per_level.get(&kind.level) {
            Some(c) => (
                c,
                format!("file.compression.per.level (level {})", kind.level),
            ),
            None => (&self.file_compression, "file.compression".into()),
        }
    }

    /// The stats mode of a file of `kind`: `changelog-file.stats-mode` for a changelog file
    /// when set, else the level's entry of `metadata.stats-mode.per.level`, else
    /// `metadata.stats-mode`.
    pub fn stats_mode_of(&self, kind: FileKind) -> StatsMode {
        match self.changelog_file_stats_mode {
            Some(m) if kind.changelog => m,
            _ => *self
                .stats_mode_per_level
                .get(&kind.level)
                .unwrap_or(&self.stats_mode),
        }
    }

    /// Whether any per-level or changelog-file option is set: files of some level or changelog
    /// files may differ from `file.format` / `file.compression` / `metadata.stats-mode`.
    pub fn has_file_kind_options(&self) -> bool {
        !self.file_format_per_level.is_empty()
            || !self.file_compression_per_level.is_empty()
            || self.changelog_file_format.is_some()
            || self.changelog_file_compression.is_some()
            || self.changelog_file_stats_mode.is_some()
            || !self.stats_mode_per_level.is_empty()
    }

    /// Every file kind whose format or codec an option names, beside `file.format` at level 0:
    /// the kinds [`crate::io::format::check_write_format`] checks.
    pub fn file_kinds_named(&self) -> Vec<FileKind> {
        let mut levels: Vec<i32> = vec![0];
        levels.extend(self.file_format_per_level.keys());
        levels.extend(self.file_compression_per_level.keys());
        levels.sort_unstable();
        levels.dedup();
        let mut out: Vec<FileKind> = levels
            .iter()
            .map(|&level| FileKind {
                level,
                changelog: false,
            })
            .collect();
        if self.changelog_file_format.is_some() || self.changelog_file_compression.is_some() {
            out.extend(levels.iter().map(|&level| FileKind {
                level,
                changelog: true,
            }));
        }
        out
    }
}

/// Java's map-typed option value (`OptionsUtils.convertToProperties`): `k:v` items split on
/// `,` then `:`, either part quoted with `'` or `"` (a quote doubled inside), unquoted parts
/// trimmed; an item without exactly one `:` is refused, then each key is parsed as a level
/// (Java's `Integer.valueOf`), a level named twice refused.
fn parse_level_map(key: &str, v: &str) -> Result<BTreeMap<i32, String>> {
    let mut out = BTreeMap::new();
    for item in split_escaped(key, v, ',')? {
        let pair = split_escaped(key, &item, ':')?;
        let [level, value] = pair.as_slice() else {
            return Err(bad(
                key,
                v,
                "Map item is not a key-value pair (missing ':'?): expected items like '0:avro' \
                 separated by ','",
            ));
        };
        let level: i32 = level
            .parse()
            .map_err(|_| bad(key, v, &format!("level '{level}' is not an integer")))?;
        if out.insert(level, value.clone()).is_some() {
            return Err(bad(key, v, &format!("Duplicate key {level}")));
        }
    }
    Ok(out)
}

/// Java's `StructuredOptionsSplitter.splitEscaped`.
fn split_escaped(key: &str, v: &str, delimiter: char) -> Result<Vec<String>> {
    enum Tok {
        Quoted(String),
        Plain(String),
        Delim,
    }
    let chars: Vec<char> = v.chars().collect();
    let mut toks = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '\'' || c == '"' {
            let mut s = String::new();
            let mut j = i + 1;
            loop {
                if j >= chars.len() {
                    return Err(bad(
                        key,
                        v,
                        "Could not split string. Quoting was not closed properly.",
                    ));
                }
                if chars[j] == c {
                    if chars.get(j + 1) == Some(&c) {
                        s.push(c);
                        j += 2;
                        continue;
                    }
                    break;
                }
                s.push(chars[j]);
                j += 1;
            }
            toks.push(Tok::Quoted(s));
            i = j + 1;
        } else if c == delimiter {
            toks.push(Tok::Delim);
            i += 1;
        } else if c.is_whitespace() {
            i += 1;
        } else {
            let mut j = i;
            while j < chars.len() && chars[j] != delimiter {
                j += 1;
            }
            let s: String = chars[i..j].iter().collect();
            toks.push(Tok::Plain(s.trim().to_string()));
            i = j;
        }
    }
    let mut out = Vec::new();
    for (n, t) in toks.iter().enumerate() {
        match t {
            Tok::Quoted(s) => {
                if matches!(toks.get(n + 1), Some(Tok::Quoted(_) | Tok::Plain(_))) {
                    return Err(bad(
                        key,
                        v,
                        "Could not split string. Illegal quoting (text after a closing quote)",
                    ));
                }
                out.push(s.clone());
            }
            Tok::Plain(s) => out.push(s.clone()),
            Tok::Delim => {
                if matches!(toks.get(n + 1), Some(Tok::Delim)) {
                    out.push(String::new());
                }
            }
        }
    }
    Ok(out)
}

/// Options from `(key, value)` pairs (tests).
#[cfg(test)]
pub(crate) fn opts(kv: &[(&str, &str)]) -> BTreeMap<String, String> {
    kv.iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_file_path_directory_is_a_relative_path_inside_the_table() {
        use super::parse_data_file_path_directory as parse;
        assert_eq!(parse("data").unwrap(), "data");
        assert_eq!(parse("./a//b/").unwrap(), "a/b");
        for bad in [
            "",
            "/",
            ".",
            "/abs",
            "../up",
            "a/../../b",
            "s3://b/x",
            "c:/x",
        ] {
            let e = parse(bad).unwrap_err().to_string();
            assert!(e.contains("data-file.path-directory"), "{bad}: {e}");
        }
    }

    #[test]
    fn memory_sizes() {
        assert_eq!(parse_memory_size("k", "128 mb").unwrap(), 128 << 20);
        assert_eq!(parse_memory_size("k", "64MB").unwrap(), 64 << 20);
        assert_eq!(parse_memory_size("k", "4096").unwrap(), 4096);
        assert!(parse_memory_size("k", "lots")
            .unwrap_err()
            .to_string()
            .contains("'k'"));
    }

    #[test]
    fn pk_table_dynamic_bucket_options() {
        let o = CoreOptions::new(&opts(&[]), true).unwrap();
        o.check_supported(true, true).unwrap(); // dynamic bucket tables are written
        o.check_supported(true, false).unwrap();
        assert_eq!(
            o.dynamic_bucket().unwrap(),
            DynamicBucketOptions {
                target_row_num: 2_000_000,
                max_buckets: -1,
                initial_buckets: None,
                assigner_parallelism: None
            }
        );
        let o = CoreOptions::new(
            &opts(&[
                ("dynamic-bucket.target-row-num", "10"),
                ("dynamic-bucket.max-buckets", "3"),
                ("dynamic-bucket.initial-buckets", "2"),
                ("dynamic-bucket.assigner-parallelism", "4"),
            ]),
            true,
        )
        .unwrap();
        o.check_supported(true, true).unwrap();
        let d = o.dynamic_bucket().unwrap();
        assert_eq!((d.target_row_num, d.max_buckets), (10, 3));
        assert_eq!(
            (d.initial_buckets, d.assigner_parallelism),
            (Some(2), Some(4))
        );
        for (k, v) in [
            ("dynamic-bucket.target-row-num", "0"),
            ("dynamic-bucket.max-buckets", "0"),
            ("dynamic-bucket.max-buckets", "-2"),
            ("dynamic-bucket.initial-buckets", "0"),
            ("dynamic-bucket.assigner-parallelism", "x"),
        ] {
            let o = CoreOptions::new(&opts(&[(k, v)]), true).unwrap();
            let e = o.check_supported(true, true).unwrap_err().to_string();
            assert!(e.contains(k), "{e}");
        }
        let o = CoreOptions::new(&opts(&[("bucket", "4")]), true).unwrap();
        o.check_supported(true, true).unwrap();
        assert_eq!(o.target_file_size(), 128 << 20);
    }

    #[test]
    fn data_evolution_tables_checked_as_java() {
        let base = [("bucket", "-1"), ("data-evolution.enabled", "true")];
        let de = |extra: &[(&str, &str)]| {
            CoreOptions::new(&opts(&[&base[..], extra].concat()), false).unwrap()
        };
        let o = de(&[("row-tracking.enabled", "true")]);
        o.check_supported(false, true).unwrap();
        assert!(o.data_evolution().unwrap());
        for (extra, pk, want) in [
            (vec![], false, "must enabled with row-tracking.enabled"),
            (vec![("row-tracking.enabled", "true")], true, "primary-key"),
            (
                vec![
                    ("row-tracking.enabled", "true"),
                    ("clustering.incremental", "true"),
                ],
                false,
                "must disabled with clustering.incremental",
            ),
            (
                vec![
                    ("row-tracking.enabled", "true"),
                    ("data-evolution.row-sidecar.enabled", "true"),
                ],
                false,
                "data-evolution.row-sidecar.enabled",
            ),
        ] {
            let e = de(&extra)
                .check_supported(pk, true)
                .unwrap_err()
                .to_string();
            assert!(e.contains(want), "{e}");
        }
    }

    #[test]
    fn deletion_vector_tables_written_read_and_refused() {
        let dv = |extra: &[(&str, &str)]| {
            let mut kv = vec![("bucket", "2"), ("deletion-vectors.enabled", "true")];
            kv.extend_from_slice(extra);
            CoreOptions::new(&opts(&kv), true).unwrap()
        };
        let o = dv(&[]);
        o.check_supported(true, false).unwrap();
        o.check_supported(true, true).unwrap();
        // lookups skip the rows vectors removed: merging engines, sequence.field and the
        // lookup producer are written too
        for extra in [
            ("changelog-producer", "input"),
            ("changelog-producer", "lookup"),
            ("merge-engine", "aggregation"),
            ("merge-engine", "partial-update"),
            ("sequence.field", "v"),
        ] {
            dv(&[extra]).check_supported(true, true).unwrap();
        }
        // append tables (write/append_dv.rs), fixed-bucket and bucket-unaware, also with
        // 64-bit vectors
        let append = dv(&[("bucket-key", "k")]);
        append.check_supported(false, true).unwrap();
        append.check_supported(false, false).unwrap();
        let unaware = CoreOptions::new(
            &opts(&[
                ("bucket", "-1"),
                ("deletion-vectors.enabled", "true"),
                ("deletion-vectors.bitmap64", "true"),
            ]),
            false,
        )
        .unwrap();
        unaware.check_supported(false, true).unwrap();
        // Java's own refusals
        for (extra, want) in [
            (("merge-engine", "first-row"), "First row merge engine"),
            (
                ("changelog-producer", "full-compaction"),
                "NONE/INPUT/LOOKUP",
            ),
        ] {
            let e = dv(&[extra]).check_supported(true, false).unwrap_err();
            assert!(e.to_string().contains(want), "{e}");
        }
        assert!(o.batch_scan_skip_level0().unwrap());
        let mor = dv(&[("deletion-vectors.merge-on-read", "true")]);
        assert!(!mor.batch_scan_skip_level0().unwrap());
        let fr = CoreOptions::new(&opts(&[("merge-engine", "first-row")]), true).unwrap();
        assert!(fr.batch_scan_skip_level0().unwrap());
        assert!(!CoreOptions::new(&opts(&[]), true)
            .unwrap()
            .batch_scan_skip_level0()
            .unwrap());
    }

    /// `target-file-row-num`: unset is Java's `Long.MAX_VALUE`; below 1 is refused, as Java's
    /// `CatalogUtils.validateCreateTable` does.
    #[test]
    fn target_file_row_num_is_at_least_one() {
        let o = |kv: &[(&str, &str)]| CoreOptions::new(&opts(kv), false);
        assert_eq!(o(&[]).unwrap().target_file_row_num, i64::MAX as u64);
        let three = o(&[("target-file-row-num", "3")]).unwrap();
        assert_eq!(three.target_file_row_num, 3);
        three.check_supported(false, true).unwrap();
        for bad in ["0", "-1", "x"] {
            let e = o(&[("target-file-row-num", bad)]).unwrap_err();
            assert!(matches!(e, Error::InvalidArgument { .. }), "{e}");
        }
    }

    /// `full-compaction` is written, with force-lookup too; Java's refusals of it stay
    /// (first-row, deletion vectors, with Java's messages).
    #[test]
    fn full_compaction_producer_is_written_with_javas_refusals() {
        let o = |kv: &[(&str, &str)]| {
            let mut all = vec![("bucket", "1"), ("changelog-producer", "full-compaction")];
            all.extend_from_slice(kv);
            CoreOptions::new(&opts(&all), true).unwrap()
        };
        o(&[]).check_supported(true, true).unwrap();
        let e = o(&[("merge-engine", "first-row")])
            .check_supported(true, true)
            .unwrap_err();
        assert!(matches!(e, Error::InvalidArgument { .. }), "{e}");
        assert!(
            e.to_string().contains("Only support 'none' and 'lookup'"),
            "{e}"
        );
        let e = o(&[("deletion-vectors.enabled", "true")])
            .check_supported(true, true)
            .unwrap_err();
        assert!(e.to_string().contains("NONE/INPUT/LOOKUP"), "{e}");
        // force-lookup with it is written (level 0 forced up, changelog from full compactions)
        o(&[("force-lookup", "true")])
            .check_supported(true, true)
            .unwrap();
    }

    #[test]
    fn lookup_is_needed_by_first_row_dv_lookup_changelog_and_force() {
        let needs = |kv: &[(&str, &str)]| {
            CoreOptions::new(&opts(kv), true)
                .unwrap()
                .needs_lookup()
                .unwrap()
        };
        assert!(!needs(&[]));
        assert!(!needs(&[("merge-engine", "partial-update")]));
        assert!(needs(&[("merge-engine", "first-row")]));
        assert!(needs(&[("deletion-vectors.enabled", "true")]));
        assert!(needs(&[("changelog-producer", "lookup")]));
        assert!(!needs(&[("changelog-producer", "input")]));
        assert!(needs(&[("force-lookup", " TRUE ")]));
        assert!(!needs(&[("force-lookup", "false")]));
    }

    #[test]
    fn unknown_and_unsupported_options_are_refused() {
        let o = CoreOptions::new(
            &opts(&[("bucket", "2"), ("merge-engine", "first-row")]),
            true,
        )
        .unwrap();
        o.check_supported(true, false).unwrap();
        // writable since writers compact level 0 up (issue #11)
        o.check_supported(true, true).unwrap();
        assert!(
            CoreOptions::new(&opts(&[("bucket", "2"), ("merge-engine", "x")]), true)
                .unwrap_err()
                .to_string()
                .contains("'merge-engine'")
        );
        // an option of Paimon's namespaces paimon_rs does not know blocks a write
        let o = CoreOptions::new(
            &opts(&[("bucket", "2"), ("compaction.future-option", "1")]),
            true,
        )
        .unwrap();
        assert!(o
            .check_supported(true, true)
            .unwrap_err()
            .to_string()
            .contains("compaction.future-option"));
        // a user's own key does not
        let o = CoreOptions::new(&opts(&[("bucket", "2"), ("foo.bar", "1")]), true).unwrap();
        o.check_supported(true, true).unwrap();
        assert!(CoreOptions::new(&opts(&[("bucket", "x")]), true).is_err());
        assert!(CoreOptions::new(&opts(&[("bucket", "0")]), true).is_err());
        let o = CoreOptions::new(
            &opts(&[("bucket", "2"), ("compaction.size-ratio", "1")]),
            true,
        )
        .unwrap();
        o.check_supported(true, true).unwrap();
    }

    #[test]
    fn compaction_settings_have_paimons_defaults_and_follow_the_trigger() {
        let o = CoreOptions::new(&opts(&[]), true).unwrap();
        assert_eq!(o.merge_engine, MergeEngineKind::Deduplicate);
        assert_eq!(o.changelog_producer, ChangelogProducer::None);
        assert_eq!(o.num_sorted_run_compaction_trigger, 5);
        assert_eq!(o.num_sorted_run_stop_trigger, 8);
        assert_eq!(o.num_levels, 6);
        assert_eq!(o.compaction_max_size_amplification_percent, 200);
        assert_eq!(o.compaction_size_ratio, 1);
        assert_eq!(o.full_compaction_delta_commits, None);
        assert!(!o.write_only);
        assert_eq!(
            (o.compaction_min_file_num, o.compaction_max_file_num),
            (5, 50)
        );
        let o = CoreOptions::new(
            &opts(&[
                ("num-sorted-run.compaction-trigger", "3"),
                ("merge-engine", "partial-update"),
                ("changelog-producer", "lookup"),
                ("full-compaction.delta-commits", "2"),
                ("write-only", "true"),
            ]),
            true,
        )
        .unwrap();
        assert_eq!(
            (o.num_sorted_run_stop_trigger, o.num_levels),
            (6, 4),
            "defaults follow the trigger"
        );
        assert_eq!(o.merge_engine, MergeEngineKind::PartialUpdate);
        assert_eq!(o.changelog_producer, ChangelogProducer::Lookup);
        assert_eq!(o.full_compaction_delta_commits, Some(2));
        assert!(o.write_only);
        for (k, v) in [
            ("num-sorted-run.compaction-trigger", "0"),
            ("num-levels", "1"),
            ("changelog-producer", "sometimes"),
            ("write-only", "yes"),
        ] {
            let e = CoreOptions::new(&opts(&[(k, v)]), true).unwrap_err();
            assert!(e.to_string().contains(k), "{e}");
        }
    }

    #[test]
    fn misspelt_option_names_the_one_meant() {
        let o = CoreOptions::new(&opts(&[("bucket", "2"), ("merge-engin", "x")]), true).unwrap();
        let msg = o.check_supported(true, true).unwrap_err().to_string();
        assert!(msg.contains("did you mean 'merge-engine'"), "{msg}");
        let o = CoreOptions::new(&opts(&[("bucket", "2"), ("scan.snapshotid", "1")]), true);
        let msg = o
            .unwrap()
            .check_supported(true, true)
            .unwrap_err()
            .to_string();
        assert!(msg.contains("did you mean 'scan.snapshot-id'"), "{msg}");
        // nothing close: no guess
        let o = CoreOptions::new(
            &opts(&[("bucket", "2"), ("compaction.zzzzzzzzzzzz", "1")]),
            true,
        )
        .unwrap();
        let msg = o.check_supported(true, true).unwrap_err().to_string();
        assert!(!msg.contains("did you mean"), "{msg}");
    }

    /// `key = value` is refused by `CoreOptions::new`, the message naming `key`.
    fn refused_naming_the_option(key: &str, value: &str) {
        let e = CoreOptions::new(&opts(&[(key, value)]), true).unwrap_err();
        assert!(e.to_string().contains(&format!("'{key}'")), "{e}");
    }

    /// `file.format.per.level` / `file.compression.per.level` parse as Java's map options
    /// (`OptionsUtils.convertToProperties`), formats lower-cased; bad items are refused naming
    /// the option.
    #[test]
    fn per_level_maps_parse_as_java_does() {
        let m = |v: &str| parse_level_map("file.format.per.level", v);
        let want: BTreeMap<i32, String> =
            [(0, "avro".to_string()), (3, "parquet".to_string())].into();
        assert_eq!(m("0:avro,3:parquet").unwrap(), want);
        assert_eq!(m(" 0 : avro , 3:parquet ").unwrap(), want);
        // an item quoted whole, or a part of it (Java's splitter: a quote closes a part)
        assert_eq!(m("'0:avro',3:\"parquet\"").unwrap(), want);
        assert_eq!(m("").unwrap(), BTreeMap::new());
        assert_eq!(m("-1:orc").unwrap(), [(-1, "orc".to_string())].into());
        for (bad, why) in [
            ("0", "missing ':'"),
            ("0:", "missing ':'"),
            (":avro", "missing ':'"),
            ("0::avro", "missing ':'"),
            ("x:avro", "level 'x'"),
            ("0:avro,0:orc", "Duplicate key 0"),
            ("0:'avro", "Quoting was not closed"),
            ("0:'avro'x", "Illegal quoting"),
            ("'0':avro", "Illegal quoting"),
        ] {
            let e = m(bad).unwrap_err().to_string();
            assert!(
                e.contains("'file.format.per.level'") && e.contains(why),
                "{bad}: {e}"
            );
        }
        let o = CoreOptions::new(
            &opts(&[
                ("file.format.per.level", "0:AVRO,3:orc"),
                ("file.compression.per.level", "0:LZ4"),
                ("file.compression", "snappy"),
            ]),
            true,
        )
        .unwrap();
        o.check_supported(true, true).unwrap();
        let k = |level, changelog| FileKind { level, changelog };
        assert_eq!(o.file_format_of(k(0, false)).0, "avro");
        assert_eq!(o.file_format_of(k(3, false)).0, "orc");
        assert_eq!(o.file_format_of(k(1, false)).0, "parquet");
        assert_eq!(o.file_compression_of(k(0, false)).0, "lz4");
        assert_eq!(o.file_compression_of(k(3, false)).0, "snappy");
        // changelog files follow their level without changelog-file.* options
        assert_eq!(o.file_format_of(k(0, true)).0, "avro");
        assert_eq!(
            o.file_compression_of(k(0, true)).1,
            "file.compression.per.level (level 0)"
        );
        refused_naming_the_option("file.compression.per.level", "0");
    }

    /// `changelog-file.*` decide changelog files only, each falling back on its own (format on
    /// the level's format, codec on the level's codec, stats mode on `metadata.stats-mode`).
    #[test]
    fn changelog_file_options_fall_back_one_by_one() {
        let o = CoreOptions::new(
            &opts(&[
                ("file.format.per.level", "0:avro"),
                ("changelog-file.format", "ORC"),
                ("changelog-file.stats-mode", "none"),
                ("metadata.stats-mode", "full"),
            ]),
            true,
        )
        .unwrap();
        o.check_supported(true, true).unwrap();
        let k = |level, changelog| FileKind { level, changelog };
        assert_eq!(o.file_format_of(k(0, true)).0, "orc");
        assert_eq!(o.file_format_of(k(0, false)).0, "avro");
        assert_eq!(o.file_compression_of(k(0, true)).0, "zstd");
        assert_eq!(o.stats_mode_of(k(0, true)), StatsMode::None);
        assert_eq!(o.stats_mode_of(k(0, false)), StatsMode::Full);
        assert!(o.has_file_kind_options());
        assert_eq!(
            o.file_kinds_named(),
            vec![k(0, false), k(0, true)],
            "level 0 and its changelog files"
        );
        refused_naming_the_option("changelog-file.stats-mode", "most");
        assert!(!CoreOptions::new(&opts(&[]), true)
            .unwrap()
            .has_file_kind_options());
        let o = CoreOptions::new(
            &opts(&[
                ("metadata.stats-mode.per.level", "0:none,5:counts"),
                ("changelog-file.stats-mode", "full"),
            ]),
            true,
        )
        .unwrap();
        o.check_supported(true, true).unwrap();
        assert_eq!(o.stats_mode_of(k(0, false)), StatsMode::None);
        assert_eq!(o.stats_mode_of(k(5, false)), StatsMode::Counts);
        assert_eq!(o.stats_mode_of(k(1, false)), StatsMode::Truncate(16));
        assert_eq!(o.stats_mode_of(k(0, true)), StatsMode::Full);
        refused_naming_the_option("metadata.stats-mode.per.level", "0:few");
    }

    #[test]
    fn descriptive_options_never_block_a_write() {
        let o = CoreOptions::new(
            &opts(&[
                ("bucket", "2"),
                ("owner", "data-team"),
                ("comment", "orders"),
                ("partition.expiration-time", "7 d"),
                ("partition.expiration-check-interval", "1 h"),
            ]),
            true,
        )
        .unwrap();
        o.check_supported(true, true).unwrap();
    }

    /// The declaration: sorted (so `find` can search it), one entry per key, documented; every
    /// honoured option's example passes the user check and parses; enum defaults are values.
    #[test]
    fn declaration_is_sorted_documented_and_its_examples_parse() {
        for w in defs::OPTIONS.windows(2) {
            assert!(w[0].key < w[1].key, "{} before {}", w[0].key, w[1].key);
        }
        let mut bad = vec![];
        for d in defs::OPTIONS {
            assert!(!d.doc.is_empty(), "{}", d.key);
            assert_eq!(defs::find(d.key).map(|f| f.key), Some(d.key));
            if let (defs::Kind::Enum(values), Some(def)) = (d.kind, d.default) {
                assert!(values.contains(&def), "{}: default {def}", d.key);
            }
            let Some(example) = d.example else { continue };
            assert_eq!(d.status, OptionStatus::Honoured, "{}", d.key);
            let kv = opts(&[(d.key, example)]);
            check_user_options("db.t", &kv).unwrap();
            if let Err(e) = CoreOptions::new(&kv, true) {
                bad.push(format!("{}: {e}", d.key));
            }
            if let defs::Kind::Enum(values) = d.kind {
                assert!(values.contains(&example), "{}: example {example}", d.key);
            }
        }
        assert!(bad.is_empty(), "examples that do not parse alone: {bad:#?}");
        // what the old lists accepted (a sample) is still honoured
        for k in [
            "bucket",
            "compaction.size-ratio",
            "num-sorted-run.stop-trigger",
            "tag.automatic-creation",
            "snapshot.num-retained.max",
            "scan.snapshot-id",
            "incremental-between",
            "lookup.cache-max-disk-size",
        ] {
            assert_eq!(
                defs::find(k).map(|d| d.status),
                Some(OptionStatus::Honoured),
                "{k}"
            );
        }
    }

    #[test]
    fn keys_are_classified_against_the_declaration() {
        let known = |k: &str| matches!(classify(k), KeyClass::Known(_));
        assert!(known("bucket") && known("fields.v.aggregate-function") && known("s3.endpoint"));
        assert!(known("file-index.bloom-filter.columns") && known("sink.parallelism"));
        let unknown = |k: &str| match classify(k) {
            KeyClass::Unknown(c) => c,
            other => panic!("{k}: {other:?}"),
        };
        assert_eq!(
            unknown("compaction.size-ration"),
            Some("compaction.size-ratio")
        );
        assert_eq!(
            unknown("num-sorted-run.compaction-triger"),
            Some("num-sorted-run.compaction-trigger")
        );
        assert_eq!(unknown("scan.snapshotid"), Some("scan.snapshot-id"));
        // no dot: known only by its distance to a declared key
        assert_eq!(unknown("incremental-betwen"), Some("incremental-between"));
        assert_eq!(unknown("tag.zzzzzzzzzzzzzzzz"), None);
        assert!(matches!(
            classify("orc.bloom.filter.columns"),
            KeyClass::Unknown(None)
        ));
        let e = check_user_options("db.t", &opts(&[("orc.bloom.filter.columns", "id")]));
        assert!(matches!(e, Err(Error::Unsupported { .. })), "{e:?}");
        for k in ["myapp.owner", "spark.sql.x", "owner2x-team"] {
            assert!(matches!(classify(k), KeyClass::Foreign), "{k}");
        }
    }

    #[test]
    fn user_options_refuse_typos_and_unimplemented_accept_other_engines() {
        let check = |k: &str, v: &str| check_user_options("db.t", &opts(&[(k, v)]));
        let e = check("compaction.size-ration", "3").unwrap_err();
        assert!(matches!(e, Error::InvalidArgument { .. }), "{e}");
        let msg = e.to_string();
        assert!(
            msg.contains("db.t") && msg.contains("did you mean 'compaction.size-ratio'"),
            "{msg}"
        );
        let e = check("snapshot.clean-empty-directories", "true").unwrap_err();
        assert!(matches!(e, Error::Unsupported { .. }), "{e}");
        assert!(e.to_string().contains("db.t"), "{e}");
        // set to its default it changes nothing
        check("snapshot.clean-empty-directories", "false").unwrap();
        check("sink.parallelism", "4").unwrap();
        check("myapp.owner", "me").unwrap();
        check("s3.endpoint", "http://x").unwrap();
        // a stored option paimon_rs does not implement: read, not written
        let o =
            CoreOptions::new(&opts(&[("snapshot.clean-empty-directories", "true")]), true).unwrap();
        o.check_supported(true, false).unwrap();
        let e = o.check_supported(true, true).unwrap_err().to_string();
        assert!(e.contains("snapshot.clean-empty-directories"), "{e}");
    }
}
