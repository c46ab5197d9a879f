//! Planning: snapshot -> manifests -> live files -> splits, pruning by partition and by file
//! statistics (paimon-format.md §4.5, paimon-behaviour.md §6).

use rayon::prelude::*;
use std::collections::BTreeMap;

use super::data_evolution::row_id_groups;
use super::deletion::{deletion_files_of, DeletionFile};
use super::evolution::{field_by_id, same_type, SchemaCache};
use super::interval::{ordered_pack, split_bucket};
use super::row_tracking::{row_id_filter_ranges, Tracking, ROW_ID, SEQUENCE_NUMBER};
use super::split::{
    cut_to_row_ids, prune_to_row_id_ranges, row_id_slice_range, slice_splits_by_row_id, DiffBefore,
    Split,
};
use crate::error::{Error, Result};
use crate::options::{ChangelogProducer, MergeEngineKind};
use crate::predicate::LeafOp;
use crate::predicate::{ColumnStat, Predicate};
use crate::scan_options::{local_to_epoch_millis, Incremental, IncrementalMode, ScanStart};
use crate::spec::binary_row::{deserialize_row, encode_row};
use crate::spec::bucket::{bucket_of, hash_bytes};
use crate::spec::datum::Datum;
use crate::spec::manifest::{DataFileMeta, FileKind, ManifestEntry};
use crate::spec::partition::partition_path;
use crate::spec::schema::TableSchema;
use crate::spec::snapshot::{CommitKind, Snapshot};
use crate::spec::types::DataType;
use crate::table::live::{live_entries_filtered, live_entries_of, stats_lookup, test_stats};
use crate::table::FileStoreTable;

/// Column stats of a file written with `file_schema`, named by the current schema (Java's
/// `SimpleStatsEvolution`): matched by field id; a column the file lacks is all NULL there; a
/// column whose type changed since has no usable stats (the file is not pruned by it).
fn evolve_stats(
    current: &TableSchema,
    file_schema: &TableSchema,
    stats: Vec<(String, ColumnStat)>,
    row_count: i64,
) -> Vec<(String, ColumnStat)> {
    if current.id == file_schema.id {
        return stats;
    }
    current
        .fields
        .iter()
        .filter_map(|c| match field_by_id(file_schema, c.id) {
            Some(ff) if same_type(&ff.data_type, &c.data_type) => stats
                .iter()
                .find(|(n, _)| n == &ff.name)
                .map(|(_, s)| (c.name.clone(), s.clone())),
            Some(_) => None,
            None => Some((
                c.name.clone(),
                ColumnStat {
                    min: None,
                    max: None,
                    null_count: Some(row_count),
                    row_count,
                },
            )),
        })
        .collect()
}

/// Manifest entries by (partition, bucket): the bucket's total buckets and its files.
type BucketGroups = BTreeMap<(Vec<u8>, i32), (i32, Vec<DataFileMeta>)>;

/// `entries` grouped by (partition, bucket), each group's files in manifest order. A
/// postpone-bucket table's bucket-postpone (-2) is left out: its rows are invisible to every
/// read until a compaction moves them into real buckets (Java's `onlyReadRealBuckets`;
/// `postpone.merge-on-read` is refused).
fn by_bucket(entries: Vec<ManifestEntry>) -> BucketGroups {
    let mut groups = BucketGroups::new();
    for e in entries.into_iter().filter(|e| e.bucket != -2) {
        let g = groups
            .entry((e.partition, e.bucket))
            .or_insert((e.total_buckets, vec![]));
        g.1.push(e.file);
    }
    groups
}

pub struct TableScan {
    table: FileStoreTable,
    filter: Option<Predicate>,
    snapshot_id: Option<i64>,
    /// See [`Self::with_all_levels`].
    all_levels: bool,
    /// See [`Self::with_top_level_only`].
    top_level_only: bool,
    /// See [`Self::with_level0_hidden`].
    level0_hidden: bool,
    /// See [`Self::with_stats`].
    count_live: bool,
    /// See [`Self::with_row_id_slice`].
    row_id_slice: Option<(i64, i64)>,
}

pub struct Plan {
    pub snapshot_id: Option<i64>,
    pub splits: Vec<Split>,
    /// What each pruning stage kept (`ReadBuilder.explain`'s counters).
    pub stats: ScanStats,
}

/// The files a plan's pruning stages kept, as pypaimon's `ScanStats` funnel: the snapshot's
/// live files, then those of the partitions the filter may match, then of the buckets its
/// equalities on the bucket key may reach, then those whose statistics (and level, index)
/// may hold a matching row, which the splits read.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ScanStats {
    /// Live files of the snapshot (from its manifest lists' counts; only with
    /// [`TableScan::with_stats`]).
    pub live_files: Option<i64>,
    pub after_partition: usize,
    /// None: no bucket was selected (no equality on every bucket key, or not fixed buckets).
    pub after_bucket: Option<usize>,
    pub after_stats: usize,
}

/// The hashes of the bucket-key values a filter's top-level conjuncts pin (`k = v`,
/// `k IN (...)` on every bucket key; Java's `BucketSelectConverter`): a file of bucket `b` of
/// `n` buckets may hold a matching row only if some hash gives `b`. None: no selection (a key
/// without such a conjunct, not fixed buckets, or more than 1024 combinations).
fn bucket_selection(
    table: &FileStoreTable,
    filter: Option<&Predicate>,
) -> Result<Option<Vec<i32>>> {
    let Some(filter) = filter else {
        return Ok(None);
    };
    if table.options.bucket <= 0 {
        return Ok(None);
    }
    fn conjuncts<'a>(p: &'a Predicate, out: &mut Vec<&'a Predicate>) {
        match p {
            Predicate::And(c) => c.iter().for_each(|c| conjuncts(c, out)),
            p => out.push(p),
        }
    }
    let mut all = vec![];
    conjuncts(filter, &mut all);
    let keys = table.bucket_keys();
    let types = table.schema.types_of(&keys)?;
    let mut values: Vec<Vec<Datum>> = Vec::with_capacity(keys.len());
    for k in &keys {
        let found = all.iter().find_map(|p| match p {
            Predicate::Leaf {
                field,
                op: LeafOp::Equal | LeafOp::In,
                literals,
            } if field == k => Some(literals.iter().flatten().cloned().collect::<Vec<_>>()),
            _ => None,
        });
        match found {
            Some(v) => values.push(v),
            None => return Ok(None),
        }
    }
    let combos = values
        .iter()
        .try_fold(1usize, |n, v| n.checked_mul(v.len()));
    if combos.is_none_or(|n| n > 1024) {
        return Ok(None);
    }
    let mut rows: Vec<Vec<Option<Datum>>> = vec![vec![]];
    for v in &values {
        rows = rows
            .into_iter()
            .flat_map(|r| {
                v.iter().map(move |d| {
                    let mut r = r.clone();
                    r.push(Some(d.clone()));
                    r
                })
            })
            .collect();
    }
    rows.iter()
        .map(|r| Ok(hash_bytes(&encode_row(&types, r)?)))
        .collect::<Result<Vec<i32>>>()
        .map(Some)
}

/// An incremental read of a data-evolution table (`data-evolution.enabled`) whose delta holds
/// a file with some of the columns (`write_cols`) of rows whose other columns live in files
/// outside the delta: refused (a batch read merges such files by columns,
/// read/data_evolution.rs).
fn check_no_partial_delta(table: &FileStoreTable, entries: &[ManifestEntry]) -> Result<()> {
    let columns = table.schema.fields.len();
    let partial = |f: &DataFileMeta| f.write_cols.as_ref().is_some_and(|c| c.len() < columns);
    if let Some(f) = entries.iter().map(|e| &e.file).find(|f| partial(f)) {
        return Err(Error::unsupported(format!(
            "an incremental read of a data-evolution table whose delta file '{}' holds only \
             columns {:?} (the other columns of its rows are outside the delta): not \
             implemented by paimon_rs",
            f.file_name,
            f.write_cols.as_deref().unwrap_or_default()
        ))
        .with_table(&table.name));
    }
    Ok(())
}

impl TableScan {
    pub fn new(table: FileStoreTable, filter: Option<Predicate>) -> Self {
        TableScan {
            table,
            filter,
            snapshot_id: None,
            all_levels: false,
            top_level_only: false,
            level0_hidden: false,
            count_live: false,
            row_id_slice: None,
        }
    }

    /// Plan only the rows at positions `[start, end)` of a data-evolution table's plan, as
    /// pypaimon's `with_slice` (`DataEvolutionSplitGenerator`): positions count the row ids of
    /// every file the partition filter (and bucket selection) keeps, before the statistics of
    /// the filter drop groups (read/split.rs `slice_splits_by_row_id`), so workers mixing
    /// paimon_rs and pypaimon share one filtered sliced plan. Other tables: refused at plan.
    pub fn with_row_id_slice(mut self, start: i64, end: i64) -> Self {
        self.row_id_slice = Some((start, end));
        self
    }

    /// Count the snapshot's live files too (`ScanStats::live_files`: the manifest lists'
    /// counts, which a plan that prunes partitions does not otherwise read whole): explain.
    pub fn with_stats(mut self) -> Self {
        self.count_live = true;
        self
    }

    /// Read this snapshot instead of the latest (time travel).
    pub fn with_snapshot(mut self, id: i64) -> Self {
        self.snapshot_id = Some(id);
        self
    }

    /// Plan level 0 too in first-row and deletion-vector tables, which a batch read skips
    /// (paimon-behaviour.md §6.1): every live key, as a cross-partition writer's index
    /// bootstrap reads them (Java's `IndexBootstrap`, `withLevelFilter(level -> true)`) and a
    /// streaming read's first full scan does (Java's `DataTableStreamScan` has no level filter).
    pub fn with_all_levels(mut self) -> Self {
        self.all_levels = true;
        self
    }

    /// Plan a primary-key table's files above level 0 only (and merge them as usual): a
    /// streaming read's first full scan of a `changelog-producer = lookup` table, whose level-0
    /// rows reach the stream later as the changelog their compaction produces (Java's
    /// `DataTableStreamScan.tryFirstPlan`).
    pub fn with_level0_hidden(mut self) -> Self {
        self.level0_hidden = true;
        self
    }

    /// Plan only a primary-key table's files at the top level (`num-levels` − 1): Java's
    /// read-optimized system table `$ro`, read without a merge (the top level is one sorted
    /// run), so it lags the table by what compaction has not yet reached the top.
    pub fn with_top_level_only(mut self) -> Self {
        self.top_level_only = true;
        self
    }

    /// May a file hold rows that pass the filter? Primary-key tables are pruned by key columns
    /// only: pruning on values could drop a newer version and resurrect an older one.
    fn file_may_match(
        &self,
        f: &DataFileMeta,
        key_names: &[String],
        key_types: &[DataType],
        key_stats_ok: &BTreeMap<i64, bool>,
        schemas: &SchemaCache,
    ) -> bool {
        let Some(filter) = &self.filter else {
            return true;
        };
        if self.table.is_primary_key() {
            if !key_stats_ok.get(&f.schema_id).copied().unwrap_or(true) {
                return true; // key stats in other key types (see key_stats_usable)
            }
            let Some(kf) = filter.restrict_to(key_names) else {
                return true;
            };
            match stats_lookup(&f.key_stats, key_names, key_types, f.row_count) {
                Some(s) => test_stats(&kf, &s),
                None => true,
            }
        } else {
            self.value_stats_may_match(f, schemas, filter)
        }
    }

    /// May `f` hold a row passing `filter`, by its value statistics? (Every row of an append
    /// file is final; a primary-key file's rows only with [`Self::filter_whole_bucket`].)
    fn value_stats_may_match(
        &self,
        f: &DataFileMeta,
        schemas: &SchemaCache,
        filter: &Predicate,
    ) -> bool {
        // value stats are named and typed by the file's schema (the read fails on a schema
        // that cannot be read; pruning just does not happen)
        let Ok(file_schema) = schemas.get(f.schema_id) else {
            return true;
        };
        let fields = &file_schema.fields;
        let (names, types): (Vec<String>, Vec<DataType>) = match &f.value_stats_cols {
            Some(cols) if cols.is_empty() => return true,
            Some(cols) => {
                let mut names = vec![];
                let mut types = vec![];
                for c in cols {
                    match fields.iter().find(|x| &x.name == c) {
                        Some(x) => {
                            names.push(c.clone());
                            types.push(x.data_type.clone());
                        }
                        None => return true,
                    }
                }
                (names, types)
            }
            None => (
                fields.iter().map(|x| x.name.clone()).collect(),
                fields.iter().map(|x| x.data_type.clone()).collect(),
            ),
        };
        match stats_lookup(&f.value_stats, &names, &types, f.row_count) {
            Some(s) => test_stats(
                filter,
                &evolve_stats(&self.table.schema, &file_schema, s, f.row_count),
            ),
            None => true,
        }
    }

    /// May a row-id group of several files (a data-evolution table's files sharing row ids,
    /// each holding some columns) hold a row passing the filter, by the group's merged
    /// statistics? As pypaimon 2.1.0's `DataEvolutionGroupStatsFilter`: each column's stats are
    /// those of the newest file (max sequence number) holding it, usable only when that file
    /// covers the whole group's row ids, has the column's current type and stats for it; a
    /// column two files tie on, or a BLOB file holds, is unknown (never prunes); a column no file
    /// holds is null in every row. Anything unreadable keeps the group.
    fn group_may_match(&self, g: &[DataFileMeta], schemas: &SchemaCache) -> bool {
        let Some(filter) = &self.filter else {
            return true;
        };
        let mut ranges = vec![];
        for f in g {
            let Some(first) = f.first_row_id else {
                return true;
            };
            ranges.push((first, first + f.row_count));
        }
        let (Some(start), Some(end)) = (
            ranges.iter().map(|r| r.0).min(),
            ranges.iter().map(|r| r.1).max(),
        ) else {
            return true;
        };
        let rows = end - start;
        // each file's schema and the fields it holds (its write_cols, else every field)
        let mut layouts = vec![];
        for f in g {
            let Ok(fs) = schemas.get(f.schema_id) else {
                return true;
            };
            let held: Vec<crate::spec::types::DataField> = match &f.write_cols {
                None => fs.fields.clone(),
                Some(cols) => {
                    let mut v = vec![];
                    for c in cols {
                        match fs.fields.iter().find(|x| &x.name == c) {
                            Some(x) => v.push(x.clone()),
                            // the row-tracking columns a file may hold: no table field
                            None if c == ROW_ID || c == SEQUENCE_NUMBER => {}
                            None => return true,
                        }
                    }
                    v
                }
            };
            layouts.push(held);
        }
        // field id -> (the newest file holding it, tied with another)
        let mut providers: BTreeMap<i32, (usize, bool)> = BTreeMap::new();
        let mut in_blob_files = std::collections::BTreeSet::new();
        for (i, (f, held)) in g.iter().zip(&layouts).enumerate() {
            if f.file_name.ends_with(".blob") {
                in_blob_files.extend(held.iter().map(|x| x.id));
                continue;
            }
            for x in held {
                let p = providers.entry(x.id).or_insert((i, false));
                if p.0 == i {
                    continue;
                }
                let (mine, theirs) = (f.max_sequence_number, g[p.0].max_sequence_number);
                if mine > theirs {
                    *p = (i, false);
                } else if mine == theirs {
                    p.1 = true;
                }
            }
        }
        let mut stats: Vec<(String, ColumnStat)> = vec![];
        for c in &self.table.schema.fields {
            let (i, tied) = match providers.get(&c.id) {
                Some(&p) => p,
                None if in_blob_files.contains(&c.id) => continue, // unknown
                None => {
                    stats.push((
                        c.name.clone(),
                        ColumnStat {
                            min: None,
                            max: None,
                            null_count: Some(rows),
                            row_count: rows,
                        },
                    ));
                    continue;
                }
            };
            if tied || ranges[i] != (start, end) {
                continue; // unknown: a tie, or stats of part of the group
            }
            let (f, held) = (&g[i], &layouts[i]);
            let Some(ff) = held.iter().find(|x| x.id == c.id) else {
                continue;
            };
            if !same_type(&ff.data_type, &c.data_type) {
                continue;
            }
            // the file's stats columns: value_stats_cols, else the fields it holds
            let stat_fields: Vec<&crate::spec::types::DataField> = match &f.value_stats_cols {
                None => held.iter().collect(),
                Some(cols) => cols
                    .iter()
                    .filter_map(|n| held.iter().find(|x| &x.name == n))
                    .collect(),
            };
            if f.value_stats_cols
                .as_ref()
                .is_some_and(|cols| cols.len() != stat_fields.len())
            {
                continue; // stats of columns the file does not hold: not understood
            }
            let names: Vec<String> = stat_fields.iter().map(|x| x.name.clone()).collect();
            let types: Vec<DataType> = stat_fields.iter().map(|x| x.data_type.clone()).collect();
            if !names.contains(&ff.name) {
                continue;
            }
            let Some(file_stats) = stats_lookup(&f.value_stats, &names, &types, rows) else {
                continue;
            };
            if let Some((_, st)) = file_stats.into_iter().find(|(n, _)| n == &ff.name) {
                stats.push((c.name.clone(), st));
            }
        }
        test_stats(filter, &stats)
    }

    /// A primary-key bucket's files pruned by the filter on their value statistics (Java's
    /// `KeyValueFileStoreScan.filterWholeBucketByStats`, batch scans of the whole table): files
    /// that do not overlap (one file, or all at one level above 0: each key in one file) are
    /// kept or dropped each on its own; otherwise the bucket is dropped when no file may hold a
    /// matching row (the answer's rows are stored rows of its files), except for partial-update
    /// and aggregation unless read raw with deletion vectors (`raw_dv`), whose merged rows no
    /// file's statistics bound.
    fn filter_whole_bucket(
        &self,
        files: Vec<DataFileMeta>,
        schemas: &SchemaCache,
        raw_dv: bool,
    ) -> Vec<DataFileMeta> {
        let Some(filter) = &self.filter else {
            return files;
        };
        let no_overlap = files.len() <= 1 || {
            let level = files[0].level;
            level != 0 && files.iter().all(|f| f.level == level)
        };
        if no_overlap {
            return files
                .into_iter()
                .filter(|f| self.value_stats_may_match(f, schemas, filter))
                .collect();
        }
        if !raw_dv
            && matches!(
                self.table.options.merge_engine,
                MergeEngineKind::PartialUpdate | MergeEngineKind::Aggregation
            )
        {
            return files;
        }
        if files
            .iter()
            .any(|f| self.value_stats_may_match(f, schemas, filter))
        {
            files
        } else {
            vec![]
        }
    }

    /// May `f` hold a row passing the filter, by its file index (bloom filters, in the
    /// manifest or in its `.index` file under `dir`; paimon-behaviour.md §6.3a)? Java's
    /// `FileIndexPredicate` over the filter's `=` / `IN` on indexed columns, the filter's columns
    /// named as in the file's schema (by field id, same type). Off with
    /// `file-index.read.enabled = false`.
    fn index_may_match(
        &self,
        f: &DataFileMeta,
        dir: &std::path::Path,
        schemas: &SchemaCache,
        filter: &Predicate,
        configured: &crate::fileindex::ConfiguredColumns,
    ) -> Result<bool> {
        if f.embedded_index.is_none() && f.extra_files.is_empty() {
            return Ok(true);
        }
        let Ok(file_schema) = schemas.get(f.schema_id) else {
            return Ok(true);
        };
        let current = &self.table.schema;
        let column = |name: &str| {
            let cf = current.fields.iter().find(|x| x.name == name)?;
            let ff = file_schema.fields.iter().find(|x| x.id == cf.id)?;
            same_type(&ff.data_type, &cf.data_type).then(|| (ff.name.clone(), ff.data_type.clone()))
        };
        crate::fileindex::may_match(filter, f, dir, &column, configured)
            .map_err(|e| e.with_table(&self.table.name))
    }

    /// `files` without those [`Self::index_may_match`] rules out.
    fn index_filter(
        &self,
        files: Vec<DataFileMeta>,
        bucket_path: &str,
        schemas: &SchemaCache,
    ) -> Result<Vec<DataFileMeta>> {
        let Some(filter) = &self.filter else {
            return Ok(files);
        };
        let raw = &self.table.options.raw;
        if !crate::fileindex::read_enabled(raw)? {
            return Ok(files);
        }
        let configured = crate::fileindex::configured_columns(raw);
        let dir = crate::io::resolve(&self.table.path, bucket_path);
        // an index in a `.index` file is a read each (a GET on an object store): in parallel
        let reads = files.iter().filter(|f| !f.extra_files.is_empty()).count();
        if reads < 2 {
            let mut kept = Vec::with_capacity(files.len());
            for f in files {
                if self.index_may_match(&f, &dir, schemas, filter, &configured)? {
                    kept.push(f);
                }
            }
            return Ok(kept);
        }
        let kept: Vec<Option<DataFileMeta>> = files
            .into_par_iter()
            .map(|f| {
                Ok(self
                    .index_may_match(&f, &dir, schemas, filter, &configured)?
                    .then_some(f))
            })
            .collect::<Result<_>>()?;
        Ok(kept.into_iter().flatten().collect())
    }

    /// The directory prefix (`dt=a/`, empty when unpartitioned) of a serialized partition.
    fn partition_dir(
        &self,
        pkeys: &[String],
        ptypes: &[DataType],
        partition: &[u8],
    ) -> Result<String> {
        let o = &self.table.options;
        let vals = deserialize_row(ptypes, partition)?;
        partition_path(
            pkeys,
            ptypes,
            &vals,
            &o.partition_default_name,
            o.partition_legacy_name,
        )
    }

    /// [`Self::key_stats_usable`] for the files of `groups` when a filter on a primary-key
    /// table can prune by key; nothing otherwise.
    fn key_stats_of(
        &self,
        cache: &SchemaCache,
        groups: &BucketGroups,
    ) -> Result<BTreeMap<i64, bool>> {
        if self.filter.is_some() && self.table.is_primary_key() {
            self.key_stats_usable(cache, groups.values().flat_map(|(_, fs)| fs))
        } else {
            Ok(BTreeMap::new())
        }
    }

    /// For each schema id of `files`: are key statistics written with that schema in the
    /// current key types (same field ids, same types)? A file of an older schema whose key was
    /// renamed still qualifies (the stats are positional); one whose key type differs is not
    /// pruned. A schema file that cannot be read is a corrupt table.
    fn key_stats_usable<'a>(
        &self,
        cache: &SchemaCache,
        files: impl Iterator<Item = &'a DataFileMeta>,
    ) -> Result<BTreeMap<i64, bool>> {
        let current = &self.table.schema;
        let keys = current.fields_of(&current.trimmed_primary_keys())?;
        let mut out = BTreeMap::new();
        for f in files {
            if out.contains_key(&f.schema_id) {
                continue;
            }
            let s = cache.get(f.schema_id)?;
            let same_keys = s.trimmed_primary_keys().len() == keys.len()
                && keys.iter().all(|k| {
                    field_by_id(&s, k.id).is_some_and(|x| same_type(&x.data_type, &k.data_type))
                });
            out.insert(f.schema_id, same_keys);
        }
        Ok(out)
    }

    /// The snapshot this scan reads (an explicit `with_snapshot`, else the table's scan
    /// options) and, for `scan.file-creation-time-millis`, the creation time files must have.
    pub(crate) fn starting_snapshot(&self) -> Result<(Option<Snapshot>, Option<i64>)> {
        self.table.snapshot_manager().scan_start(
            &self.table.name,
            &self.table.options.scan,
            self.snapshot_id,
        )
    }

    /// The files an incremental read returns, and the snapshot it ends at: the ADD entries of
    /// the APPEND snapshots after the start up to the end (Java's delta mode; compactions and
    /// overwrites are not changes of the data), the changelog files of every snapshot of the
    /// range (changelog mode: APPEND and COMPACT snapshots, in snapshot order, OVERWRITE ones
    /// skipped as Java does; a snapshot without a changelog manifest list has none), or,
    /// between two tags, the files live in the end tag
    /// and not in the start tag (Java's tag diff).
    fn incremental_entries(
        &self,
        range: &Incremental,
        mode: IncrementalMode,
        pfilter: Option<&Predicate>,
    ) -> Result<Option<(Snapshot, Vec<ManifestEntry>)>> {
        let sm = self.table.snapshot_manager();
        let (start, end) = match range {
            Incremental::Tags(a, b) => {
                let (s1, s2) = (sm.tag(a)?, sm.tag(b)?);
                if s1.id > s2.id {
                    return Err(Error::invalid(format!(
                        "incremental-between: tag '{a}' (snapshot {}) is newer than tag '{b}' \
                         (snapshot {})",
                        s1.id, s2.id
                    )));
                }
                let before: std::collections::HashSet<String> =
                    live_entries_filtered(&self.table, &s1, pfilter)?
                        .into_iter()
                        .map(|e| e.file.file_name)
                        .collect();
                let mut entries = live_entries_filtered(&self.table, &s2, pfilter)?;
                entries.retain(|e| !before.contains(&e.file.file_name));
                return Ok(Some((s2, entries)));
            }
            Incremental::Snapshots(a, b) => {
                if a > b {
                    return Err(Error::invalid(format!(
                        "incremental-between: the start snapshot {a} is after the end {b}"
                    )));
                }
                (*a, *b)
            }
            Incremental::Timestamps(t1, t2) => {
                if t1 > t2 {
                    return Err(Error::invalid(format!(
                        "Ending timestamp {t2} should be >= starting timestamp {t1}."
                    )));
                }
                let (Some(earliest), Some(latest)) = (sm.earliest_id()?, sm.latest_id()?) else {
                    return Ok(None);
                };
                let (first, last) = (sm.snapshot_in_history(earliest)?, sm.snapshot(latest)?);
                if t1 == t2 || *t1 > last.time_millis || *t2 < first.time_millis {
                    return Ok(Some((last, vec![])));
                }
                let start = match sm.earlier_or_equal_time_millis(*t1)? {
                    Some(s) if first.time_millis <= *t1 => s.id,
                    _ => earliest - 1,
                };
                let end = sm
                    .earlier_or_equal_time_millis(*t2)?
                    .map_or(latest, |s| s.id);
                (start, end)
            }
        };
        // a snapshot that expired while its changelog is retained (`changelog.num-retained.*`,
        // `changelog.time-retained`) is read from its long-lived changelog, as Java's streaming
        // reads do (`NextSnapshotFetcher`)
        let snapshot_or_changelog = |id: i64, read: &dyn Fn(i64) -> Result<Snapshot>| {
            match crate::table::changelog::snapshot_or_changelog(&self.table, id)? {
                Some(s) => Ok(s),
                None => read(id),
            }
        };
        let end_snapshot = snapshot_or_changelog(end, &|id| sm.snapshot_for_read(id))?;
        let changelog_only = |s: &Snapshot| -> Result<bool> {
            Ok(!crate::io::exists(&sm.snapshot_path(s.id)) && sm.earliest_id()? > Some(s.id))
        };
        let mut entries: Vec<ManifestEntry> = vec![];
        for id in start + 1..=end {
            let s = snapshot_or_changelog(id, &|id| sm.snapshot_in_history(id))?;
            if mode == IncrementalMode::Changelog {
                // Java's changelog mode skips OVERWRITE snapshots (an overwrite commits no
                // changelog there anyway)
                if s.commit_kind == CommitKind::Overwrite {
                    continue;
                }
                let Some(list) = &s.changelog_manifest_list else {
                    continue;
                };
                let metas = crate::table::live::read_list(&self.table, &s, list)?;
                // changelog manifests only add files (in snapshot, then manifest, order)
                let got = live_entries_of(&self.table, metas, pfilter)?;
                entries.extend(got);
                continue;
            }
            if s.commit_kind != CommitKind::Append {
                continue;
            }
            let delta = self.table.manifest_dir().join(&s.delta_manifest_list);
            if !crate::io::exists(&delta) && changelog_only(&s)? {
                return Err(Error::invalid(format!(
                    "incremental-between (delta): snapshot {id} has expired; its long-lived \
                     changelog keeps only its changelog files (the table has a changelog \
                     producer), not its delta; read the range with \
                     incremental-between-scan-mode = changelog"
                )));
            }
            let metas = crate::table::live::read_list(&self.table, &s, &s.delta_manifest_list)?;
            // ADD entries only: an APPEND snapshot deletes nothing
            entries.extend(
                live_entries_of(&self.table, metas, pfilter)?
                    .into_iter()
                    .filter(|e| e.kind == FileKind::Add),
            );
        }
        Ok(Some((end_snapshot, entries)))
    }

    /// `plan` cut to [`Self::with_row_id_slice`]'s rows when set (plans that
    /// [`Self::splits_of`] does not build).
    fn sliced_after(&self, plan: Result<Plan>) -> Result<Plan> {
        let mut plan = plan?;
        let Some((start, end)) = self.row_id_slice else {
            return Ok(plan);
        };
        plan.splits = slice_splits_by_row_id(&self.table.name, plan.splits, start, end)?;
        Ok(plan)
    }

    pub fn plan(&self) -> Result<Plan> {
        // a fallback branch fills the partitions this branch lacks: a read without it would
        // miss rows (Java's `FallbackReadFileStoreTable`)
        if self.table.options.raw.contains_key("scan.fallback-branch") {
            return Err(Error::unsupported(
                "reading a table with 'scan.fallback-branch' (paimon_rs does not read the \
                 fallback branch's partitions; read each branch with the 'branch' option)",
            )
            .with_table(&self.table.name));
        }
        let pkeys = self.table.partition_keys().to_vec();
        let pfilter = self.filter.as_ref().and_then(|f| f.restrict_to(&pkeys));
        if let (None, ScanStart::Incremental(range, mode)) =
            (self.snapshot_id, &self.table.options.scan)
        {
            let mode =
                mode.resolve(self.table.options.changelog_producer != ChangelogProducer::None);
            // between two tags of a deletion-vector table, rows a vector marked in a file
            // both tags hold would be missed by a file diff: the tags' rows are diffed by key
            // (primary keys), or the end tag's new files read with its vectors (append)
            if let Incremental::Tags(a, b) = range {
                if self.table.options.deletion_vectors()? {
                    let plan = self
                        .tag_diff_plan(a, b, pfilter.as_ref())
                        .map_err(|e| e.with_table(&self.table.name));
                    return self.sliced_after(plan);
                }
            }
            let name = &self.table.name;
            let Some((end, entries)) = self
                .incremental_entries(range, mode, pfilter.as_ref())
                .map_err(|e| e.with_table(name))?
            else {
                return Ok(Plan {
                    snapshot_id: None,
                    splits: vec![],
                    stats: ScanStats::default(),
                });
            };
            if mode == IncrementalMode::Changelog {
                return self.sliced_after(self.changelog_splits(&end, entries));
            }
            // deletion-vector tables: the delta between snapshots is the rows the APPEND
            // snapshots added, read without deletion vectors, as newer Java's
            // IncrementalDeltaStartingScanner builds its splits (paimon-behaviour.md §9.7)
            return self.splits_of(&end, entries, true);
        }
        let (snapshot, created_since) = self.starting_snapshot()?;
        let Some(snapshot) = snapshot else {
            return Ok(Plan {
                snapshot_id: None,
                splits: vec![],
                stats: ScanStats::default(),
            });
        };
        let mut entries = live_entries_filtered(&self.table, &snapshot, pfilter.as_ref())?;
        if let Some(ms) = created_since {
            // Java's FileCreationTimeStartingScanner: files created at or after the time; the
            // manifest holds a local wall-clock time, compared in the process's time zone.
            entries.retain(|e| {
                e.file
                    .creation_time
                    .and_then(chrono::DateTime::from_timestamp_millis)
                    .and_then(|t| local_to_epoch_millis(t.naive_utc()))
                    .is_some_and(|t| t >= ms)
            });
        }
        let mut plan = self.splits_of(&snapshot, entries, false)?;
        if self.count_live {
            // a snapshot's manifest lists' ADD minus DELETE entries: its live files
            let mut live = 0;
            for list in [&snapshot.base_manifest_list, &snapshot.delta_manifest_list] {
                for m in crate::table::live::read_list(&self.table, &snapshot, list)? {
                    live += m.num_added_files - m.num_deleted_files;
                }
            }
            plan.stats.live_files = Some(live);
        }
        Ok(plan)
    }

    /// An incremental read between tags `a` and `b` of a deletion-vector table
    /// (paimon-behaviour.md §9.7; Java's `IncrementalDiffStartingScanner.betweenTags`,
    /// `SnapshotReaderImpl.readIncrementalDiff`). A primary-key table: per bucket one diff
    /// split, the end tag's files and vectors against the start tag's, leaving out the files
    /// both tags hold with the same vector (their rows are the same on both sides, and no
    /// other live row of theirs' keys exists: each key is live once above level 0); a file
    /// both hold whose vector changed is read on both sides, so the rows its new marks remove
    /// show as `-D` or as their key's new row. An append table: the end tag's files that the
    /// start tag lacks, with the end tag's vectors (Java's `RawFileSplitRead` ignores the
    /// start side).
    fn tag_diff_plan(&self, a: &str, b: &str, pfilter: Option<&Predicate>) -> Result<Plan> {
        let sm = self.table.snapshot_manager();
        let (s1, s2) = (sm.tag(a)?, sm.tag(b)?);
        if s1.id > s2.id {
            return Err(Error::invalid(format!(
                "incremental-between: tag '{a}' (snapshot {}) is newer than tag '{b}' (snapshot \
                 {})",
                s1.id, s2.id
            )));
        }
        let before_entries = live_entries_filtered(&self.table, &s1, pfilter)?;
        let after_entries = live_entries_filtered(&self.table, &s2, pfilter)?;
        if !self.table.is_primary_key() {
            let before: std::collections::HashSet<&str> = before_entries
                .iter()
                .map(|e| e.file.file_name.as_str())
                .collect();
            let entries = after_entries
                .iter()
                .filter(|e| !before.contains(e.file.file_name.as_str()))
                .cloned()
                .collect();
            return self.splits_of(&s2, entries, false);
        }
        let o = &self.table.options;
        let skip_level0 = o.batch_scan_skip_level0()?;
        let mut before_dvs = deletion_files_of(&self.table, s1.index_manifest.as_deref())?;
        let mut after_dvs = deletion_files_of(&self.table, s2.index_manifest.as_deref())?;
        let mut before = by_bucket(before_entries);
        let after = by_bucket(after_entries);
        let pkeys = self.table.partition_keys().to_vec();
        let ptypes = self.table.partition_types()?;
        let mut keys: Vec<(Vec<u8>, i32)> = before.keys().chain(after.keys()).cloned().collect();
        keys.sort();
        keys.dedup();
        let mut splits = vec![];
        for key in keys {
            let (b_total, b_files) = before.remove(&key).unwrap_or((-1, vec![]));
            let (total_buckets, a_files) = after.get(&key).cloned().unwrap_or((b_total, vec![]));
            let (b_dv, a_dv) = (
                before_dvs.remove(&key).unwrap_or_default(),
                after_dvs.remove(&key).unwrap_or_default(),
            );
            let visible = |f: &DataFileMeta| !(skip_level0 && f.level == 0);
            // a file both tags hold with the same vector (or none in both) is left out
            let unchanged = |f: &DataFileMeta,
                             mine: &BTreeMap<String, DeletionFile>,
                             other: &BTreeMap<String, DeletionFile>,
                             others: &[DataFileMeta]| {
                others.iter().any(|g| g.file_name == f.file_name)
                    && mine.get(&f.file_name) == other.get(&f.file_name)
            };
            let b_keep: Vec<DataFileMeta> = b_files
                .iter()
                .filter(|f| visible(f) && !unchanged(f, &b_dv, &a_dv, &a_files))
                .cloned()
                .collect();
            let a_keep: Vec<DataFileMeta> = a_files
                .iter()
                .filter(|f| visible(f) && !unchanged(f, &a_dv, &b_dv, &b_files))
                .cloned()
                .collect();
            if b_keep.is_empty() && a_keep.is_empty() {
                continue;
            }
            let dvs_of = |files: &[DataFileMeta], dvs: &BTreeMap<String, DeletionFile>| {
                files
                    .iter()
                    .filter_map(|f| Some((f.file_name.clone(), dvs.get(&f.file_name)?.clone())))
                    .collect::<BTreeMap<_, _>>()
            };
            let pp = self.partition_dir(&pkeys, &ptypes, &key.0)?;
            splits.push(Split {
                snapshot_id: s2.id,
                partition: key.0.clone(),
                bucket: key.1,
                total_buckets,
                bucket_path: self.table.bucket_path(&pp, key.1),
                deletion_files: dvs_of(&a_keep, &a_dv),
                files: a_keep,
                raw_convertible: false,
                changelog: false,
                diff_before: Some(DiffBefore {
                    deletion_files: dvs_of(&b_keep, &b_dv),
                    files: b_keep,
                }),
                row_slices: Default::default(),
                row_id_ranges: Vec::new(),
            });
        }
        Ok(Plan {
            snapshot_id: Some(s2.id),
            splits,
            stats: ScanStats::default(),
        })
    }

    /// Splits of changelog files (`entries`, in snapshot order): per (partition, bucket), the
    /// files in that order packed by size, read without merging. Files whose key range cannot
    /// match the filter are pruned (each record is filtered on its own, so this is exact).
    fn changelog_splits(&self, snapshot: &Snapshot, entries: Vec<ManifestEntry>) -> Result<Plan> {
        let pkeys = self.table.partition_keys().to_vec();
        let key_names = self.table.trimmed_primary_keys();
        let key_types = self.table.schema.types_of(&key_names)?;
        let ptypes = self.table.partition_types()?;
        let groups = by_bucket(entries);
        let schemas = SchemaCache::new(self.table.meta_path(), &self.table.schema);
        let key_stats_ok = self.key_stats_of(&schemas, &groups)?;
        let o = &self.table.options;
        let mut splits = vec![];
        for ((partition, bucket), (total_buckets, files)) in groups {
            let pp = self.partition_dir(&pkeys, &ptypes, &partition)?;
            let files: Vec<DataFileMeta> = files
                .into_iter()
                .filter(|f| self.file_may_match(f, &key_names, &key_types, &key_stats_ok, &schemas))
                .collect();
            let w = |f: &DataFileMeta| (f.file_size.max(0) as u64).max(o.split_open_file_cost);
            for files in ordered_pack(files, w, o.split_target_size) {
                splits.push(Split {
                    snapshot_id: snapshot.id,
                    partition: partition.clone(),
                    bucket,
                    total_buckets,
                    bucket_path: self.table.bucket_path(&pp, bucket),
                    files,
                    raw_convertible: false,
                    deletion_files: BTreeMap::new(),
                    changelog: true,
                    diff_before: None,
                    row_slices: Default::default(),
                    row_id_ranges: Vec::new(),
                });
            }
        }
        Ok(Plan {
            snapshot_id: Some(snapshot.id),
            splits,
            stats: ScanStats::default(),
        })
    }

    /// Splits of `entries`: live files of `snapshot` with its deletion vectors, or an
    /// incremental read's files (`incremental`), without them.
    fn splits_of(
        &self,
        snapshot: &Snapshot,
        entries: Vec<ManifestEntry>,
        incremental: bool,
    ) -> Result<Plan> {
        let evolution = self.table.options.data_evolution()?;
        if evolution && incremental {
            check_no_partial_delta(&self.table, &entries)?;
        }
        let pkeys = self.table.partition_keys().to_vec();
        let key_names = self.table.trimmed_primary_keys();
        let key_types = self.table.schema.types_of(&key_names)?;
        let ptypes = self.table.partition_types()?;
        let groups = by_bucket(entries);
        let schemas = SchemaCache::new(self.table.meta_path(), &self.table.schema);
        let key_stats_ok = self.key_stats_of(&schemas, &groups)?;
        let o = &self.table.options;
        let skip_level0 = !incremental
            && !self.all_levels
            && self.table.is_primary_key()
            && o.batch_scan_skip_level0()?;
        // deletion-vector tables: each data file's deletion vector, from the index manifest
        let dv = o.deletion_vectors()?;
        let mut deletion_files = if dv && !incremental {
            deletion_files_of(&self.table, snapshot.index_manifest.as_deref())?
        } else {
            Default::default()
        };
        let mut splits = vec![];
        let selected = bucket_selection(&self.table, self.filter.as_ref())?;
        let mut stats = ScanStats {
            after_partition: groups.values().map(|(_, f)| f.len()).sum(),
            after_bucket: selected.as_ref().map(|_| 0),
            ..ScanStats::default()
        };
        let reached = |bucket: i32, total_buckets: i32| {
            selected.as_ref().is_none_or(|hashes| {
                hashes
                    .iter()
                    .any(|&h| bucket_of(h, total_buckets) == bucket)
            })
        };
        // a slice of a data-evolution plan: the row ids at its positions, counted over every
        // file the partition filter and bucket selection keep, before statistics prune
        let row_id_range = match self.row_id_slice {
            None => None,
            Some(_) if !evolution => {
                return Err(Error::unsupported(
                    "slicing a plan by row id: the table is not a data-evolution table",
                )
                .with_table(&self.table.name))
            }
            Some(_) if incremental => None, // cut below, after the delta's splits
            Some((start, end)) => {
                let files = groups
                    .iter()
                    .filter(|((_, b), (tb, _))| reached(*b, *tb))
                    .flat_map(|(_, (_, fs))| fs.iter());
                Some(row_id_slice_range(&self.table.name, files, start, end)?.unwrap_or((0, 0)))
            }
        };
        for ((partition, bucket), (total_buckets, files)) in groups {
            // the buckets the filter's equalities on the bucket key reach (with the bucket
            // count the files were written with, which a rescale changes)
            if selected.is_some() {
                if !reached(bucket, total_buckets) {
                    continue;
                }
                stats.after_bucket = stats.after_bucket.map(|n| n + files.len());
            }
            let pp = self.partition_dir(&pkeys, &ptypes, &partition)?;
            let bucket_path = self.table.bucket_path(&pp, bucket);
            let groups: Vec<(Vec<DataFileMeta>, bool)> = if self.table.is_primary_key() {
                // Key filters prune whole files (a newer version of a key lives in a file whose
                // key range also holds it, so pruning cannot resurrect an old version).
                // first-row and deletion-vector tables hide level 0 (paimon-behaviour.md §6.1).
                let top = o.num_levels as i32 - 1;
                let files: Vec<DataFileMeta> = files
                    .into_iter()
                    .filter(|f| !((skip_level0 || self.level0_hidden) && f.level == 0))
                    .filter(|f| !self.top_level_only || f.level == top)
                    .filter(|f| {
                        self.file_may_match(f, &key_names, &key_types, &key_stats_ok, &schemas)
                    })
                    .collect();
                // deletion-vector tables read the files above level 0 as they are (each key's
                // live row in one file): a file whose index rules the filter out holds no row
                // of the answer, as Java's KeyValueFileStoreScan skips it by value filter
                let files = if skip_level0 && dv {
                    self.index_filter(files, &bucket_path, &schemas)?
                } else {
                    files
                };
                let files = if incremental {
                    files
                } else {
                    // with vectors read raw (level 0 hidden) no two files merge
                    self.filter_whole_bucket(files, &schemas, dv && skip_level0)
                };
                if files.is_empty() {
                    continue;
                }
                split_bucket(
                    files,
                    &key_types,
                    o.split_target_size,
                    o.split_open_file_cost,
                    skip_level0,
                )?
            } else if evolution && !incremental {
                // data evolution: a file's stats say nothing of the columns other files of its
                // row-id group hold: a whole file of a group of one is pruned by its stats (and
                // index), a group of several by their merged stats (`group_may_match`); a split
                // holds whole groups (read/data_evolution.rs)
                let columns = self.table.schema.fields.len();
                let mut kept: Vec<Vec<DataFileMeta>> = vec![];
                for g in row_id_groups(&self.table.name, &files)? {
                    if let Some((from, to)) = row_id_range {
                        let first = g[0].first_row_id.unwrap_or_default();
                        if from.max(first) >= to.min(first + g[0].row_count) {
                            continue; // outside the slice
                        }
                    }
                    let whole =
                        g.len() == 1 && g[0].write_cols.as_ref().is_none_or(|c| c.len() >= columns);
                    if !whole {
                        if self.group_may_match(&g, &schemas) {
                            kept.push(g);
                        }
                        continue;
                    }
                    let one: Vec<DataFileMeta> = g
                        .into_iter()
                        .filter(|f| {
                            self.file_may_match(f, &key_names, &key_types, &key_stats_ok, &schemas)
                        })
                        .collect();
                    let one = self.index_filter(one, &bucket_path, &schemas)?;
                    if !one.is_empty() {
                        kept.push(one);
                    }
                }
                let w = |g: &Vec<DataFileMeta>| {
                    g.iter()
                        .map(|f| (f.file_size.max(0) as u64).max(o.split_open_file_cost))
                        .sum::<u64>()
                };
                ordered_pack(kept, w, o.split_target_size)
                    .into_iter()
                    .map(|bin| (bin.into_iter().flatten().collect(), true))
                    .collect()
            } else {
                let mut files: Vec<DataFileMeta> = files
                    .into_iter()
                    .filter(|f| {
                        self.file_may_match(f, &key_names, &key_types, &key_stats_ok, &schemas)
                    })
                    .collect();
                // append files hold final rows: Java's AppendOnlyFileStoreScan skips by index
                files = self.index_filter(files, &bucket_path, &schemas)?;
                files.sort_by_key(|f| f.min_sequence_number);
                // ordered bin packing by size (paimon-behaviour.md §6.3)
                let w = |f: &DataFileMeta| (f.file_size.max(0) as u64).max(o.split_open_file_cost);
                ordered_pack(files, w, o.split_target_size)
                    .into_iter()
                    .map(|g| (g, true))
                    .collect()
            };
            let bucket_dvs = deletion_files
                .remove(&(partition.clone(), bucket))
                .unwrap_or_default();
            for (files, raw) in groups {
                let deletion_files = files
                    .iter()
                    .filter_map(|f| {
                        Some((f.file_name.clone(), bucket_dvs.get(&f.file_name)?.clone()))
                    })
                    .collect();
                splits.push(Split {
                    snapshot_id: snapshot.id,
                    partition: partition.clone(),
                    bucket,
                    total_buckets,
                    bucket_path: bucket_path.clone(),
                    files,
                    raw_convertible: raw,
                    deletion_files,
                    changelog: false,
                    diff_before: None,
                    row_slices: Default::default(),
                    row_id_ranges: Vec::new(),
                });
            }
        }
        if let Some((from, to)) = row_id_range {
            splits = cut_to_row_ids(&self.table.name, splits, from, to)?;
        } else if let (Some((start, end)), true) = (self.row_id_slice, incremental) {
            splits = slice_splits_by_row_id(&self.table.name, splits, start, end)?;
        }
        // a filter's `_ROW_ID` =/IN/BETWEEN: only the row-id groups holding those ids (after
        // the slice, whose positions count every row id: pypaimon's order)
        if evolution && Tracking::of(&self.table, ROW_ID)?.is_some() {
            if let Some(ranges) = self.filter.as_ref().and_then(row_id_filter_ranges) {
                splits = prune_to_row_id_ranges(&self.table.name, splits, &ranges)?;
            }
        }
        stats.after_stats = splits.iter().map(|s| s.files.len()).sum();
        Ok(Plan {
            snapshot_id: Some(snapshot.id),
            splits,
            stats,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::predicate::LeafOp;
    use crate::spec::datum::Datum;
    use serde_json::json;

    fn schema(id: i64, fields: serde_json::Value) -> TableSchema {
        TableSchema::from_json(&json!({"version": 3, "id": id, "fields": fields})).unwrap()
    }

    /// The bucket selection hashes a filter's literals as the writer hashes the rows' keys
    /// (`compute_hashes`, its fast paths included), so a pruned bucket never holds the key.
    #[test]
    fn literal_hashes_are_the_writers_row_hashes() {
        use crate::spec::bucket::compute_hashes;
        use crate::spec::types::TypeKind;
        use arrow_array::{ArrayRef, Int32Array, Int64Array, StringArray};
        use std::sync::Arc;
        let int = DataType::new(TypeKind::Int);
        let big = DataType::new(TypeKind::BigInt);
        let text = DataType::new(TypeKind::VarChar(crate::spec::types::MAX_LEN));
        let long = "a string longer than seven bytes";
        type Case = (Vec<DataType>, Vec<ArrayRef>, Vec<Vec<Option<Datum>>>);
        let cases: Vec<Case> = vec![
            (
                vec![int.clone()],
                vec![Arc::new(Int32Array::from(vec![7, -3]))],
                vec![vec![Some(Datum::Int(7))], vec![Some(Datum::Int(-3))]],
            ),
            (
                vec![text.clone()],
                vec![Arc::new(StringArray::from(vec!["ab", long]))],
                vec![
                    vec![Some(Datum::String("ab".into()))],
                    vec![Some(Datum::String(long.into()))],
                ],
            ),
            (
                vec![big, text],
                vec![
                    Arc::new(Int64Array::from(vec![1_i64 << 40])),
                    Arc::new(StringArray::from(vec![long])),
                ],
                vec![vec![
                    Some(Datum::BigInt(1_i64 << 40)),
                    Some(Datum::String(long.into())),
                ]],
            ),
        ];
        for (types, arrays, rows) in cases {
            let want = compute_hashes(&arrays, &types).unwrap();
            let got: Vec<i32> = rows
                .iter()
                .map(|r| hash_bytes(&encode_row(&types, r).unwrap()))
                .collect();
            assert_eq!(got, want, "{types:?}");
        }
    }

    fn stat(v: i64) -> ColumnStat {
        ColumnStat {
            min: Some(Datum::BigInt(v)),
            max: Some(Datum::BigInt(v)),
            null_count: Some(0),
            row_count: 4,
        }
    }

    /// Stats of a file of schema 0 (`a` = 0, `b` = 1) under schema 1 (`b` renamed `b2`, `a`
    /// widened, `c` added): `b2` gets `b`'s stats, `a` none (its type changed), `c` is all NULL.
    #[test]
    fn old_value_stats_are_renamed_by_id() {
        let s0 = schema(
            0,
            json!([{"id": 0, "name": "a", "type": "INT"}, {"id": 1, "name": "b", "type": "BIGINT"}]),
        );
        let s1 = schema(
            1,
            json!([{"id": 0, "name": "a", "type": "BIGINT"}, {"id": 1, "name": "b2", "type": "BIGINT"},
                   {"id": 2, "name": "c", "type": "BIGINT"}]),
        );
        let out = evolve_stats(
            &s1,
            &s0,
            vec![("a".into(), stat(1)), ("b".into(), stat(7))],
            4,
        );
        let names: Vec<&str> = out.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, vec!["b2", "c"]);
        let eq = |f: &str, v: i64| Predicate::leaf(f, LeafOp::Equal, vec![Some(Datum::BigInt(v))]);
        assert!(test_stats(&eq("b2", 7).unwrap(), &out));
        assert!(!test_stats(&eq("b2", 8).unwrap(), &out));
        assert!(
            !test_stats(&eq("c", 1).unwrap(), &out),
            "c is NULL in the old file"
        );
        let c_null = Predicate::leaf("c", LeafOp::IsNull, vec![]).unwrap();
        assert!(test_stats(&c_null, &out));
        assert!(
            test_stats(&eq("a", 99).unwrap(), &out),
            "a's stats are of another type"
        );
    }
}
