//! Compaction of primary-key buckets: the rewriter that merges sorted runs into new files, a
//! bucket's compactor (levels + picker + task, Java's `MergeTreeCompactManager`), and
//! `compact_table` (a full or picked compaction of every bucket, committed as one COMPACT
//! snapshot).

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use rayon::prelude::*;

use super::expire::RecordExpire;
use super::full_changelog::FullChangelogWrapper;
use super::levels::Levels;
use super::lookup_rewrite::{
    level0_keys, leveled_runs, write_seeding, ChangelogMode, LookupSettings, LookupWrapper,
    LOOKUP_LEVEL,
};
use super::progress::{ProgressSink, Tracker};
use super::task::{
    plan_task, run_task, CompactResult, CompactRewriter, DvMarks, Rewritten, Sections, TaskOptions,
    Upgraded,
};
use super::universal::{PickClock, UniversalCompaction};
use super::work::{bool_opt, bucket_splits, commit_compactions, ratio_option, small_file_ratio};
use crate::commit::{CommitMessage, CompactIncrement, DataIncrement};
use crate::error::{Error, Result};
use crate::kv::{file_context, FileSource, KvFileReader};
use crate::lookup::LookupLevels;
use crate::merge::reader::{ChangelogSink, MergeHooks, WrapFn};
use crate::merge::{merge_sorted_runs_with, BatchIter, MergeEngine};
use crate::options::ChangelogProducer;
use crate::read::split::Split;
use crate::spec::manifest::{DataFileMeta, IndexManifestEntry};
use crate::spec::partition::PartitionSpec;
use crate::spec::types::DataType;
use crate::table::FileStoreTable;
use crate::write::deletion_vectors::DeletionVectorsMaintainer;
use crate::write::rolling::{FileWriterContext, RollingFileWriter};

/// How a changelog rewrite merges one section: changelog batches into the sink, deletion
/// marks into the marks.
type SectionMerge<'a> =
    dyn Fn(&[Vec<DataFileMeta>], &ChangelogSink, &Arc<Mutex<DvMarks>>) -> Result<BatchIter> + 'a;

/// The compaction options of a table (paimon-behaviour.md §13) a bucket compactor needs.
#[derive(Debug, Clone)]
pub struct CompactSettings {
    pub num_levels: usize,
    /// `num-sorted-run.stop-trigger`, never below the compaction trigger.
    pub stop_trigger: usize,
    /// `target-file-size × compaction.small-file-ratio`.
    pub min_file_size: u64,
    /// `compaction.force-rewrite-all-files`.
    pub force_rewrite_all: bool,
    /// Tables that need lookup (`CoreOptions::needs_lookup`: first-row, `changelog-producer =
    /// lookup`, deletion vectors, `force-lookup`): their compaction looks level-0 keys up in
    /// higher levels (§9.3), through one lookup cache shared by every bucket compacted with
    /// these settings.
    pub lookup: Option<LookupSettings>,
    /// `changelog-producer = full-compaction`: rewrites into the max level make changelog
    /// (§9.4, [`super::full_changelog`]).
    pub full_changelog: Option<ChangelogMode>,
    /// `deletion-vectors.enabled`: every compaction to a level > 0 drops retractions (§3.6).
    pub deletion_vectors: bool,
    /// `compaction.delete-ratio-threshold` (0.2) of a deletion-vector table: a max-level file
    /// whose vector marks more than this share of its rows is rewritten on its own after the
    /// picker's unit ([`BucketCompactor::compact_deleted`], §3.8). None: not a deletion-vector
    /// table, or its rewrites into the max level make changelog (`full-compaction`).
    pub delete_ratio_threshold: Option<f64>,
    /// `record-level.expire-time` / `record-level.time-field` (§11).
    pub expire: Option<RecordExpire>,
    options: BTreeMap<String, String>,
}

impl CompactSettings {
    pub fn from_table(table: &FileStoreTable) -> Result<Self> {
        let o = &table.options;
        let ratio = small_file_ratio(&o.raw)?;
        Ok(CompactSettings {
            num_levels: o.num_levels,
            stop_trigger: o
                .num_sorted_run_stop_trigger
                .max(o.num_sorted_run_compaction_trigger),
            min_file_size: (o.target_file_size() as f64 * ratio) as u64,
            force_rewrite_all: bool_opt(&o.raw, "compaction.force-rewrite-all-files")?,
            lookup: LookupSettings::from_table(table)?,
            full_changelog: if o.changelog_producer == ChangelogProducer::FullCompaction {
                Some(ChangelogMode::from_table(table)?)
            } else {
                None
            },
            deletion_vectors: o.deletion_vectors()?,
            delete_ratio_threshold: match o.deletion_vectors()?
                && o.changelog_producer != ChangelogProducer::FullCompaction
            {
                true => Some(ratio_option(
                    &o.raw,
                    "compaction.delete-ratio-threshold",
                    0.2,
                )?),
                false => None,
            },
            expire: RecordExpire::from_table(table)?,
            options: o.raw.clone(),
        })
    }

    pub fn picker(&self) -> Result<UniversalCompaction> {
        UniversalCompaction::from_options(&self.options)
    }
}

/// Merges sections of a bucket's sorted runs into new files (§4.2): each run a lazy chain of
/// its files, sort-merged, equal keys combined by the table's merge engine, written by a
/// rolling writer at the output level with file source COMPACT. In a table that needs lookup
/// (§9.3) the merge keeps only a key's lowest level > 0, and a rewrite of level-0 files to a
/// level > 0 looks keys up below the output ([`super::lookup_rewrite`]). In a
/// `full-compaction` table a rewrite into the max level, and an upgrade to it, make the
/// changelog of the bucket since its previous full compaction ([`super::full_changelog`]).
pub struct MergeTreeRewriter {
    dir: PathBuf,
    /// Expired records are dropped from every run before the merge (§11): the expiry and the
    /// time field's column in the KV batches.
    expire: Option<(RecordExpire, usize)>,
    reader: KvFileReader,
    file_ctx: FileWriterContext,
    engine: MergeEngine,
    key_types: Vec<DataType>,
    lookup: Option<LookupSettings>,
    /// `changelog-producer = full-compaction`.
    full_changelog: Option<ChangelogMode>,
    /// The bucket's max level as the current task sees it.
    max_level: Cell<i32>,
    /// `changelog-file.prefix`.
    changelog_prefix: String,
    /// `file.format.per.level` and `file.format`: a lookup upgrade of a level-0 file to a
    /// level of another format rewrites it (Java's `LookupMergeTreeCompactRewriter`).
    level_formats: BTreeMap<i32, String>,
    file_format: String,
    /// The bucket's levels ≥ 1 as the current task's lookups see them.
    levels: RefCell<Option<LookupLevels>>,
    /// Deletion vectors of the bucket's files (a writer's, with its pending marks): rows they
    /// remove are not read into a rewrite, or a rewrite would bring them back.
    vectors: RefCell<Arc<BTreeMap<String, roaring::RoaringBitmap>>>,
}

impl MergeTreeRewriter {
    pub fn new(
        table: &FileStoreTable,
        bucket_dir: PathBuf,
        expire: Option<RecordExpire>,
        lookup: Option<LookupSettings>,
        full_changelog: Option<ChangelogMode>,
    ) -> Result<Self> {
        let mut file_ctx = file_context(table, 0, FileSource::Compact)?;
        file_ctx.dir = bucket_dir.clone();
        let reader = KvFileReader::new(table)?;
        let offset = reader.layout().value_offset();
        Ok(MergeTreeRewriter {
            dir: bucket_dir,
            expire: expire.map(|e| {
                let col = offset + e.field_index();
                (e, col)
            }),
            reader,
            file_ctx,
            engine: table.merge_engine()?,
            key_types: table.schema.types_of(&table.trimmed_primary_keys())?,
            lookup,
            full_changelog,
            max_level: Cell::new(table.options.num_levels as i32 - 1),
            changelog_prefix: table.options.changelog_file_prefix.clone(),
            level_formats: table.options.file_format_per_level.clone(),
            file_format: table.options.file_format.clone(),
            levels: RefCell::new(None),
            vectors: RefCell::new(Arc::new(BTreeMap::new())),
        })
    }

    /// Before a task: the bucket's max level, and the levels its lookups see (the bucket's,
    /// before the task).
    fn prepare(&self, levels: &Levels) -> Result<()> {
        self.max_level.set(levels.max_level());
        let Some(l) = &self.lookup else {
            return Ok(());
        };
        if !l.looks_up() {
            return Ok(());
        }
        *self.levels.borrow_mut() = Some(LookupLevels::new(
            l.cache.clone(),
            self.reader.clone(),
            self.dir.clone(),
            &self.key_types,
            levels,
        )?);
        Ok(())
    }

    /// The runs of a section, expiry applied, with their levels if `leveled` (one run per
    /// level, so the merge knows each record's level: lookup tables, changelog rewrites).
    fn runs(
        &self,
        runs: &[Vec<DataFileMeta>],
        leveled: bool,
    ) -> Result<(Vec<BatchIter>, Option<Vec<i32>>)> {
        let (runs, levels) = if leveled {
            let (r, l) = leveled_runs(runs, &self.key_types)?;
            (r, Some(l))
        } else {
            (runs.to_vec(), None)
        };
        let vectors = Arc::clone(&self.vectors.borrow());
        let mut iters = self
            .reader
            .read_runs_with_vectors(&self.dir, &runs, &vectors);
        if let Some((e, col)) = &self.expire {
            iters = iters.into_iter().map(|it| e.filter(it, *col)).collect();
        }
        Ok((iters, levels))
    }

    /// A section merged through lookup (§9.3): its level-0 keys looked up in levels
    /// `output_level + 1` and above, the found records a run of their own, the wrapper making
    /// changelog into `changelog` and deletion marks into `dv`.
    fn merge_with_lookup(
        &self,
        output_level: i32,
        drop_delete: bool,
        section: &[Vec<DataFileMeta>],
        changelog: Option<&ChangelogSink>,
        dv: &Arc<Mutex<DvMarks>>,
    ) -> Result<BatchIter> {
        let Some(settings) = &self.lookup else {
            return Err(Error::Internal("lookup merge without lookup".into()));
        };
        let (mut iters, levels) = self.runs(section, true)?;
        let mut levels = levels.unwrap_or_default();
        let mut hits = vec![];
        let mut lookup_run = None;
        let level0: Vec<Vec<DataFileMeta>> = section
            .iter()
            .flatten()
            .filter(|f| f.level == 0)
            .map(|f| vec![f.clone()])
            .collect();
        if let Some(lookup) = self.levels.borrow().as_ref() {
            if !level0.is_empty() {
                let no_dvs = BTreeMap::new();
                let keys = level0_keys(
                    lookup,
                    self.reader.read_runs(&self.dir, &level0, &no_dvs),
                    self.reader.layout().num_keys,
                )?;
                let vectors = Arc::clone(&self.vectors.borrow());
                let found = lookup.lookup(&keys, output_level + 1, &vectors)?;
                if let Some(batch) = found.batch {
                    lookup_run = Some(iters.len() as u32);
                    iters.push(super::lookup_rewrite::lookup_run(batch));
                    levels.push(LOOKUP_LEVEL);
                    hits = found.hits;
                }
            }
        }
        let wrapper = LookupWrapper {
            inner: Box::new(crate::merge::engine::DeduplicateFunction),
            lookup_run,
            hits: Arc::new(hits),
            first_row: settings.first_row,
            changelog: settings.changelog.clone(),
            dv: settings.dv.then(|| dv.clone()),
        };
        let wrap: WrapFn = Box::new(move |inner| Box::new(LookupWrapper { inner, ..wrapper }));
        self.merge_wrapped(iters, levels, wrap, changelog, drop_delete)
    }

    /// Merge `iters` (runs at `levels`) through the engine's function wrapped by `wrap`, its
    /// changelog into `changelog`.
    fn merge_wrapped(
        &self,
        iters: Vec<BatchIter>,
        levels: Vec<i32>,
        wrap: WrapFn,
        changelog: Option<&ChangelogSink>,
        drop_delete: bool,
    ) -> Result<BatchIter> {
        let hooks = MergeHooks {
            run_levels: Some(levels),
            wrap: Some(wrap),
            changelog: changelog.cloned(),
        };
        merge_sorted_runs_with(
            iters,
            self.reader.layout(),
            self.engine.clone(),
            drop_delete,
            hooks,
        )
    }

    /// A section merged for a `full-compaction` table's rewrite into the max level (§9.4):
    /// every record merged, the wrapper making the changelog against each key's max-level
    /// record into `changelog`.
    fn merge_full_changelog(
        &self,
        mode: &ChangelogMode,
        drop_delete: bool,
        section: &[Vec<DataFileMeta>],
        changelog: &ChangelogSink,
    ) -> Result<BatchIter> {
        let (iters, levels) = self.runs(section, true)?;
        let wrapper = FullChangelogWrapper {
            inner: Box::new(crate::merge::engine::DeduplicateFunction),
            max_level: self.max_level.get(),
            mode: mode.clone(),
            lookup_merge: self.lookup.is_some(),
        };
        let wrap: WrapFn =
            Box::new(move |inner| Box::new(FullChangelogWrapper { inner, ..wrapper }));
        self.merge_wrapped(
            iters,
            levels.unwrap_or_default(),
            wrap,
            Some(changelog),
            drop_delete,
        )
    }

    /// A lookup rewrite of `sections` (output level > 0, level-0 files in the input): data
    /// files at `output_level` (none unless `write_data`), changelog files and deletion marks.
    fn lookup_rewrite(
        &self,
        output_level: i32,
        drop_delete: bool,
        sections: &Sections,
        write_data: bool,
    ) -> Result<Rewritten> {
        let produce = self.lookup.as_ref().is_some_and(|l| l.changelog.is_some());
        self.changelog_rewrite(output_level, sections, write_data, &|section, sink, dv| {
            self.merge_with_lookup(
                output_level,
                drop_delete,
                section,
                produce.then_some(sink),
                dv,
            )
        })
    }

    /// A `full-compaction` rewrite of `sections` into the max level: data files (none unless
    /// `write_data`) and the changelog files of the full compaction.
    fn full_changelog_rewrite(
        &self,
        mode: &ChangelogMode,
        drop_delete: bool,
        sections: &Sections,
        write_data: bool,
    ) -> Result<Rewritten> {
        let level = self.max_level.get();
        self.changelog_rewrite(level, sections, write_data, &|section, sink, _| {
            self.merge_full_changelog(mode, drop_delete, section, sink)
        })
    }

    /// Java's `ChangelogMergeTreeRewriter.rewriteOrProduceChangelog`: each section merged by
    /// `merge` (which writes changelog batches into the sink and deletion marks into the
    /// marks), the merged records written as data files at `output_level` (none unless
    /// `write_data`) and the changelog as changelog files at the same level.
    fn changelog_rewrite(
        &self,
        output_level: i32,
        sections: &Sections,
        write_data: bool,
        merge: &SectionMerge<'_>,
    ) -> Result<Rewritten> {
        let sink: ChangelogSink = Arc::new(Mutex::new(vec![]));
        let dv = Arc::new(Mutex::new(DvMarks::new()));
        let mut ctx = self.file_ctx.clone();
        ctx.level = output_level;
        let data_writer = RollingFileWriter::new(ctx, 0);
        // Java's ChangelogMergeTreeRewriter writes a compaction's changelog at its output level
        // (`createRollingChangelogFileWriter(outputLevel)`): a reader that skips level 0 (Java
        // 1.0's changelog scan of first-row and deletion-vector tables) still sees it
        let mut cl_ctx = self.file_ctx.clone().into_changelog(&self.changelog_prefix);
        cl_ctx.level = output_level;
        // dropped on an error: removes the changelog files it wrote
        let cl_writer = RefCell::new(RollingFileWriter::new(cl_ctx, 0));
        let drain = |sink: &ChangelogSink| -> Result<()> {
            let batches = std::mem::take(
                &mut *sink
                    .lock()
                    .map_err(|_| Error::Internal("changelog sink poisoned".into()))?,
            );
            for b in batches {
                cl_writer.borrow_mut().write(&b)?;
            }
            Ok(())
        };
        let merged = sections
            .iter()
            .flat_map(|section| {
                merge(section, &sink, &dv).unwrap_or_else(|e| Box::new(std::iter::once(Err(e))))
            })
            .map(|b| {
                // changelog written as the merge goes, on this thread
                drain(&sink)?;
                b
            })
            .filter(|b| !matches!(b, Ok(b) if b.num_rows() == 0));
        let files = if write_data {
            let l = self.lookup.as_ref();
            write_seeding(l, &self.reader, output_level, data_writer, merged)?
        } else {
            for b in merged {
                b?;
            }
            vec![]
        };
        drain(&sink)?;
        let changelog = cl_writer.into_inner().close()?;
        let dv_marks = std::mem::take(
            &mut *dv
                .lock()
                .map_err(|_| Error::Internal("deletion marks poisoned".into()))?,
        );
        Ok(Rewritten {
            files,
            changelog,
            dv_marks,
        })
    }
}

impl CompactRewriter for MergeTreeRewriter {
    fn rewrite(
        &self,
        output_level: i32,
        drop_delete: bool,
        sections: &Sections,
    ) -> Result<Rewritten> {
        if let Some(mode) = &self.full_changelog {
            if output_level == self.max_level.get() {
                // a full compaction always drops retractions (Java checks it too)
                if !drop_delete {
                    return Err(Error::Internal(
                        "a full compaction that keeps retractions".into(),
                    ));
                }
                return self.full_changelog_rewrite(mode, drop_delete, sections, true);
            }
        }
        let has_level0 = sections.iter().flatten().flatten().any(|f| f.level == 0);
        if self.lookup.is_some() && output_level > 0 && has_level0 {
            return self.lookup_rewrite(output_level, drop_delete, sections, true);
        }
        let mut ctx = self.file_ctx.clone();
        ctx.level = output_level;
        // an error drops the writer, which removes the files it wrote
        let writer = RollingFileWriter::new(ctx, 0);
        // section after section, each lazily: its runs' files decoded, sort-merged
        let merged = sections
            .iter()
            .flat_map(|runs| {
                self.runs(runs, self.lookup.is_some())
                    .and_then(|(iters, levels)| {
                        merge_sorted_runs_with(
                            iters,
                            self.reader.layout(),
                            self.engine.clone(),
                            drop_delete,
                            MergeHooks {
                                run_levels: levels,
                                ..Default::default()
                            },
                        )
                    })
                    .unwrap_or_else(|e| Box::new(std::iter::once(Err(e))))
            })
            .filter(|b| !matches!(b, Ok(b) if b.num_rows() == 0));
        // decoding and merging on this thread, Parquet encoding on a second one (a writer
        // compacts one bucket at a time, and often only one bucket needs it)
        let l = self.lookup.as_ref();
        Ok(write_seeding(l, &self.reader, output_level, writer, merged)?.into())
    }

    /// §9.4's upgrade of a file to the max level of a `full-compaction` table: it moves by
    /// metadata, its records (no retractions: a file with any is rewritten instead, §4.1)
    /// each a `+I` (Java's `CHANGELOG_NO_REWRITE`). §9.3's upgrade of a level-0 file in a
    /// lookup table: merged with what it looks up (changelog, deletion marks), and rewritten
    /// when deletion vectors are on and it may hold retractions, or when below the max level
    /// the merge may change its records (any engine but deduplicate without sequence.field),
    /// or when `file.format.per.level` gives the output level another format than level 0;
    /// otherwise it moves by metadata. A `full-compaction` table with `force-lookup` takes the
    /// first path into the max level and the second below it.
    fn upgrade(&self, opts: &TaskOptions, file: &DataFileMeta) -> Result<Option<Upgraded>> {
        let sections = vec![vec![vec![file.clone()]]];
        if let Some(mode) = &self.full_changelog {
            if file.level == opts.output_level {
                return Ok(None);
            }
            if opts.output_level == self.max_level.get() {
                let r = self.full_changelog_rewrite(mode, opts.drop_delete, &sections, false)?;
                return Ok(Some(Upgraded::Metadata(r)));
            }
            // below the max level no changelog (Java's `NO_CHANGELOG_NO_REWRITE`); a
            // force-lookup table's level-0 file goes through the lookup upgrade below
        }
        let Some(l) = &self.lookup else {
            return Ok(None);
        };
        if opts.output_level == 0 || file.level != 0 {
            return Ok(None);
        }
        let format_of = |level: i32| self.level_formats.get(&level).unwrap_or(&self.file_format);
        let rewrite = format_of(file.level) != format_of(opts.output_level)
            || (l.dv && file.delete_row_count != Some(0))
            || !(opts.output_level == opts.max_level || l.plain_dedup);
        if !rewrite && l.changelog.is_none() && !l.dv {
            return Ok(None);
        }
        let r = self.lookup_rewrite(opts.output_level, opts.drop_delete, &sections, rewrite)?;
        Ok(Some(if rewrite {
            Upgraded::Rewritten(r)
        } else {
            Upgraded::Metadata(r)
        }))
    }

    fn discard(&self, files: &[DataFileMeta]) {
        for f in files {
            let _ = crate::fileindex::remove_data_file(&self.dir, f);
        }
    }
}

/// A unit of compaction: its files, the output level, and whether every file is rewritten
/// (Java's `CompactUnit.fileRewrite`: a full compaction of one max-level run, or §3.8's
/// deleted-rows pick) rather than upgraded where it could be.
pub struct Unit {
    files: Vec<DataFileMeta>,
    output_level: i32,
    rewrite_all: bool,
}

/// One bucket's compaction state: its levels, the picker and the rewriter.
pub struct BucketCompactor {
    pub levels: Levels,
    picker: UniversalCompaction,
    rewriter: MergeTreeRewriter,
    settings: CompactSettings,
    key_types: Vec<DataType>,
    /// `table (partition/bucket-n)`, for the `paimon_rs.compaction` log records.
    label: String,
}

/// A bucket's levels from its live `files`, and the picker whose interval clock starts at the
/// newest file already at the max level (§3.3): for the compactor and for the plan.
pub(super) fn levels_and_picker(
    key_types: &[DataType],
    settings: &CompactSettings,
    files: Vec<DataFileMeta>,
) -> Result<(Levels, UniversalCompaction)> {
    let levels = Levels::new(key_types, files, settings.num_levels)?;
    let mut picker = settings.picker()?;
    let max = levels.max_level();
    picker.set_last_full_compaction(
        levels
            .all_files()
            .iter()
            .filter(|f| f.level == max)
            .filter_map(|f| f.creation_time)
            .max(),
    );
    Ok((levels, picker))
}

impl BucketCompactor {
    /// The compactor of a bucket whose live files are `files`.
    pub fn new(
        table: &FileStoreTable,
        settings: &CompactSettings,
        bucket_dir: PathBuf,
        files: Vec<DataFileMeta>,
    ) -> Result<Self> {
        let key_types = table.schema.types_of(&table.trimmed_primary_keys())?;
        let (levels, picker) = levels_and_picker(&key_types, settings, files)?;
        let label = format!(
            "{} ({})",
            table.name,
            bucket_dir
                .strip_prefix(&table.path)
                .unwrap_or(&bucket_dir)
                .display()
        );
        Ok(BucketCompactor {
            levels,
            picker,
            rewriter: MergeTreeRewriter::new(
                table,
                bucket_dir,
                settings.expire.clone(),
                settings.lookup.clone(),
                settings.full_changelog.clone(),
            )?,
            settings: settings.clone(),
            key_types,
            label,
        })
    }

    /// The unit to compact now: all runs to the max level (`full`, §3.7) or the picker's choice
    /// (§3, discarded when empty or a lone file already at its output level).
    fn pick(&mut self, full: bool) -> Option<Unit> {
        let runs = self.levels.level_sorted_runs();
        let max_level = self.levels.max_level();
        if full {
            if runs.is_empty() {
                return None;
            }
            if runs.len() == 1 && runs[0].level == max_level {
                // one run at the max level: only files that must be rewritten (Java's
                // `pickFullCompaction`: forced, expired records, or a deletion vector)
                let files: Vec<DataFileMeta> = runs[0]
                    .files
                    .iter()
                    .filter(|f| self.must_rewrite(f) || self.deleted_rows(f) > 0)
                    .cloned()
                    .collect();
                return (!files.is_empty()).then_some(Unit {
                    files,
                    output_level: max_level,
                    rewrite_all: true,
                });
            }
            return Some(Unit {
                files: runs.into_iter().flat_map(|r| r.files).collect(),
                output_level: max_level,
                rewrite_all: false,
            });
        }
        let shapes = self.levels.run_shapes();
        let pick = self
            .picker
            .pick(self.levels.number_of_levels(), &shapes, PickClock::now())?;
        let files: Vec<DataFileMeta> = runs
            .into_iter()
            .take(pick.runs)
            .flat_map(|r| r.files)
            .collect();
        if files.is_empty() || (files.len() == 1 && files[0].level == pick.output_level) {
            return None;
        }
        Some(Unit {
            files,
            output_level: pick.output_level,
            rewrite_all: false,
        })
    }

    /// §3.8: the max-level files of a deletion-vector table whose vectors mark more than
    /// `compaction.delete-ratio-threshold` of their rows, each rewritten without those rows.
    fn pick_deleted(&self) -> Option<Unit> {
        let threshold = self.settings.delete_ratio_threshold?;
        let max_level = self.levels.max_level();
        let files: Vec<DataFileMeta> = self
            .levels
            .all_files()
            .into_iter()
            .filter(|f| f.level == max_level && f.row_count > 0)
            .filter(|f| self.deleted_rows(f) as f64 > f.row_count as f64 * threshold)
            .collect();
        (!files.is_empty()).then_some(Unit {
            files,
            output_level: max_level,
            rewrite_all: true,
        })
    }

    /// Rows of `f` its deletion vector (with the commit's pending marks) removes.
    fn deleted_rows(&self, f: &DataFileMeta) -> u64 {
        self.rewriter
            .vectors
            .borrow()
            .get(&f.file_name)
            .map_or(0, |v| v.len())
    }

    /// Files a compaction rewrites even where it could leave them (forced, expired records).
    fn must_rewrite(&self, f: &DataFileMeta) -> bool {
        self.settings.force_rewrite_all || self.is_expire_file(f)
    }

    /// Whether [`Self::compact_commit`] would compact anything now (the driver's plan of a
    /// distributed compaction).
    pub fn would_compact(&mut self, full: bool) -> bool {
        self.pick(full).is_some() || self.pick_deleted().is_some()
    }

    /// Pick and run one compaction; the levels are updated with its result. None if nothing
    /// was picked.
    pub fn compact(&mut self, full: bool) -> Result<Option<CompactResult>> {
        match self.pick(full) {
            Some(unit) => self.run(unit, if full { ", full" } else { "" }).map(Some),
            None => Ok(None),
        }
    }

    /// The picker's unit now (§3), for a compaction run elsewhere by [`Self::run_unit`] (a
    /// stream writer's background compaction: picked on the writer's thread, which sees the
    /// levels, run on the compaction thread).
    pub(crate) fn pick_unit(&mut self) -> Option<Unit> {
        self.pick(false)
    }

    /// Run a unit [`Self::pick_unit`] gave; the levels are updated with its result.
    pub(crate) fn run_unit(&mut self, unit: Unit) -> Result<CompactResult> {
        self.run(unit, ", in the background")
    }

    /// After a commit's compaction, a deletion-vector table's max-level files that its vectors
    /// mostly delete, rewritten without those rows (§3.8); None if none qualifies.
    pub fn compact_deleted(&mut self) -> Result<Option<CompactResult>> {
        match self.pick_deleted() {
            Some(unit) => self.run(unit, ", deleted rows").map(Some),
            None => Ok(None),
        }
    }

    /// Run one unit; the levels are updated with its result.
    fn run(&mut self, unit: Unit, why: &str) -> Result<CompactResult> {
        let Unit {
            files,
            output_level,
            rewrite_all,
        } = unit;
        // §3.6: retractions may go only when nothing older can lie below the output (or
        // deletion vectors already hide the older versions)
        let drop_delete = output_level != 0
            && (output_level >= self.levels.non_empty_highest_level()
                || self.settings.deletion_vectors);
        let opts = TaskOptions {
            output_level,
            max_level: self.levels.max_level(),
            drop_delete,
            min_file_size: self.settings.min_file_size,
            force_rewrite_all: self.settings.force_rewrite_all,
        };
        let started = std::time::Instant::now();
        let steps = plan_task(files, &self.key_types, &opts, &|f| {
            rewrite_all || self.is_expire_file(f)
        })?;
        self.rewriter.prepare(&self.levels)?;
        let result = run_task(steps, &opts, &self.rewriter)?;
        if let Err(e) = self.levels.update(&result.before, &result.after) {
            self.rewriter.discard(&result.written_all());
            return Err(e);
        }
        if let Some(l) = &self.settings.lookup {
            // lookup files of data files that left the levels
            let after: std::collections::HashSet<&str> =
                result.after.iter().map(|f| f.file_name.as_str()).collect();
            l.cache.forget(
                result
                    .before
                    .iter()
                    .map(|f| f.file_name.as_str())
                    .filter(|n| !after.contains(n)),
            );
        }
        let sum = |fs: &[DataFileMeta]| -> (i64, i64) {
            fs.iter()
                .fold((0, 0), |(b, r), f| (b + f.file_size, r + f.row_count))
        };
        let ((bytes_in, rows_in), (bytes_out, rows_out)) =
            (sum(&result.before), sum(&result.after));
        log::info!(
            target: "paimon_rs.compaction",
            "{}: compacted {} files ({bytes_in} bytes, {rows_in} rows) into {} files at level \
             {output_level} ({bytes_out} bytes, {rows_out} rows, {} rewritten){}",
            self.label,
            result.before.len(),
            result.after.len(),
            result.written().len(),
            why
        );
        log::debug!(
            target: "paimon_rs.compaction",
            "{}: compaction took {} ms",
            self.label,
            started.elapsed().as_millis()
        );
        Ok(result)
    }

    fn is_expire_file(&self, f: &DataFileMeta) -> bool {
        self.settings
            .expire
            .as_ref()
            .is_some_and(|e| e.is_expire_file(f))
    }

    /// Remove the files a result wrote (its commit failed).
    pub fn discard(&self, result: &CompactResult) {
        self.rewriter.discard(&result.written_all());
    }

    /// Whether the bucket's compaction moves every level-0 file up before a commit completes
    /// (a table that needs lookup, `lookup-compact = radical`, §3.5).
    pub fn forces_level0_up(&self) -> bool {
        self.settings.lookup.is_some() && self.picker.radical()
    }

    /// The gentle lookup-compact counter (§3.5), kept by a writer across its commits.
    pub fn gentle_counter(&self) -> u32 {
        self.picker.gentle_counter()
    }

    /// The deletion vectors of the bucket's files that rewrites must apply (see
    /// `MergeTreeRewriter::vectors`).
    pub fn set_deletion_vectors(&mut self, vectors: BTreeMap<String, roaring::RoaringBitmap>) {
        *self.rewriter.vectors.borrow_mut() = Arc::new(vectors);
    }

    /// The bucket's vectors `base` with the `pending` marks of this commit's compactions so
    /// far, for the next compaction's reads.
    pub fn give_vectors(
        &mut self,
        base: &BTreeMap<String, roaring::RoaringBitmap>,
        pending: &DvMarks,
    ) {
        let mut vectors = base.clone();
        for (file, rows) in pending {
            let v = vectors.entry(file.clone()).or_default();
            v.extend(rows.iter().filter_map(|r| u32::try_from(r).ok()));
        }
        self.set_deletion_vectors(vectors);
    }

    /// What a commit compacts in the bucket (a writer's at `prepare_commit`, a dedicated
    /// compaction's): the picker's unit (`full`: every run, §3.7); again while a radical
    /// lookup table's level 0 is not empty (§3.5, `lookup-wait`: a pick may leave level-0
    /// files); then §3.8's mostly-deleted max-level files. Each result joins `acc` (this
    /// commit's compactions so far: a writer's stalls'); the rewrites read the bucket's
    /// vectors `base` (a deletion-vector table's) with `acc`'s marks. Files written and
    /// removed again within the commit are deleted.
    pub fn compact_commit(
        &mut self,
        full: bool,
        acc: &mut CompactResult,
        base: Option<&BTreeMap<String, roaring::RoaringBitmap>>,
    ) -> Result<()> {
        let absorb = |c: &mut Self, acc: &mut CompactResult, r: CompactResult| -> Result<()> {
            for f in acc.absorb(r) {
                crate::fileindex::remove_data_file(&c.rewriter.dir, &f)?;
            }
            if let Some(base) = base {
                c.give_vectors(base, &acc.dv_marks);
            }
            Ok(())
        };
        if let Some(base) = base {
            self.give_vectors(base, &acc.dv_marks);
        }
        let mut full = full;
        let mut rounds = 0;
        while let Some(r) = self.compact(full)? {
            absorb(self, acc, r)?;
            full = false;
            rounds += 1;
            if !self.forces_level0_up() || self.levels.level0().is_empty() || rounds > 64 {
                break;
            }
        }
        if let Some(r) = self.compact_deleted()? {
            absorb(self, acc, r)?;
        }
        Ok(())
    }

    /// `table (partition/bucket-n)`: the bucket, as log records and errors name it.
    pub fn label(&self) -> &str {
        &self.label
    }

    pub fn set_gentle_counter(&mut self, n: u32) {
        self.picker.set_gentle_counter(n);
    }
}

/// Compact every bucket of `table` (of the partitions matching one of `partitions`, all if
/// None): `full` = every bucket's runs into one run at the max level (§3.7), else what the
/// picker chooses per bucket (§3). The results are committed as one COMPACT snapshot, whose id
/// is returned; None if nothing needed compacting. If the commit fails, the files written are
/// removed and the table is as before.
pub fn compact_table(
    table: &FileStoreTable,
    full: bool,
    partitions: Option<&[PartitionSpec]>,
) -> Result<Option<i64>> {
    compact_table_with_progress(table, full, partitions, &super::progress::no_progress)
}

/// [`compact_table`], reporting to `progress` once before the work and after each
/// (partition, bucket) finishes (cumulative totals, in order); an error from `progress` stops
/// the compaction, committing nothing.
pub fn compact_table_with_progress(
    table: &FileStoreTable,
    full: bool,
    partitions: Option<&[PartitionSpec]>,
    progress: ProgressSink<'_>,
) -> Result<Option<i64>> {
    compact_table_inner(table, full, partitions, progress).map_err(|e| e.with_table(&table.name))
}

fn compact_table_inner(
    table: &FileStoreTable,
    full: bool,
    partitions: Option<&[PartitionSpec]>,
    progress: ProgressSink<'_>,
) -> Result<Option<i64>> {
    if !table.is_primary_key() {
        return super::append::compact_append_table(table, full, partitions, progress);
    }
    table.check_writable()?;
    // a postpone-bucket table: its bucket-postpone rows into real buckets first (a snapshot
    // of its own), then its real buckets compacted as any table's
    // (the settings first: an invalid option fails before the move is committed)
    let settings = CompactSettings::from_table(table)?;
    let moved = match super::postpone::is_postpone(table) {
        true => super::postpone::compact_postpone(table, partitions)?,
        false => None,
    };
    let Some(snapshot) = table.snapshot_manager().latest()? else {
        return Ok(None);
    };
    let work = bucket_splits(table, &snapshot, partitions)?;
    let live_index = match settings.deletion_vectors {
        true => Some(DeletionVectorsMaintainer::live_index_of(
            table,
            Some(&snapshot),
        )?),
        false => None,
    };
    let tracker = Tracker::start(work.len(), progress)?;
    let results: Vec<Result<Option<(CommitMessage, BucketCompactor)>>> = work
        .into_par_iter()
        .map(|b| {
            let r = compact_pk_bucket(table, &settings, b, full, live_index.as_deref())?;
            let (before, after): (&[DataFileMeta], &[DataFileMeta]) = match &r {
                None => (&[], &[]),
                Some((m, _)) => (
                    &m.compact_increment.compact_before,
                    &m.compact_increment.compact_after,
                ),
            };
            if let Err(e) = tracker.bucket_done(before, after) {
                if let Some((m, c)) = &r {
                    c.discard(&result_of(m));
                }
                return Err(e);
            }
            Ok(r)
        })
        .collect();
    let compacted = commit_compactions(table, results, |m, c: &BucketCompactor| {
        c.discard(&result_of(m))
    })?;
    Ok(compacted.or(moved))
}

/// The compaction result a message carries (to discard its files).
fn result_of(m: &CommitMessage) -> CompactResult {
    let c = &m.compact_increment;
    CompactResult {
        changelog: c.changelog_files.clone(),
        ..CompactResult::of(c.compact_before.clone(), c.compact_after.clone())
    }
}

/// The compactor of a planned bucket: a deletion-vector table's gets the bucket's vectors as
/// of the split's snapshot (`live_index`: its live index files, read here if None), returned
/// too, which the compaction's marks and removals update as a writer's would.
pub(super) fn bucket_compactor(
    table: &FileStoreTable,
    settings: &CompactSettings,
    b: &Split,
    live_index: Option<&[IndexManifestEntry]>,
) -> Result<(BucketCompactor, Option<DeletionVectorsMaintainer>)> {
    let dir = table.path.join(&b.bucket_path);
    let mut c = BucketCompactor::new(table, settings, dir, b.files.clone())?;
    if !settings.deletion_vectors {
        return Ok((c, None));
    }
    let read;
    let live = match live_index {
        Some(l) => l,
        None => {
            let snapshot = table.snapshot_manager().snapshot(b.snapshot_id)?;
            read = DeletionVectorsMaintainer::live_index_of(table, Some(&snapshot))?;
            &read
        }
    };
    let dv = DeletionVectorsMaintainer::restore(table, live, &b.partition, b.bucket, &b.files)?;
    c.set_deletion_vectors(dv.vectors().clone());
    Ok((c, Some(dv)))
}

/// Compact one primary-key bucket (`full`, or what the picker chooses, as a writer's commit
/// does: [`BucketCompactor::compact_commit`]): its commit message (COMPACT) and the compactor
/// that can discard the files written; None if nothing to do. A deletion-vector table's
/// bucket vectors are restored from the snapshot (`live_index`, see [`bucket_compactor`]), and
/// the bucket's new index file replaces the old ones in the message, as Java's dedicated
/// compaction writes them; a writer that changed them meanwhile makes one of the two commits
/// a conflict (commit/index.rs).
pub(super) fn compact_pk_bucket(
    table: &FileStoreTable,
    settings: &CompactSettings,
    b: Split,
    full: bool,
    live_index: Option<&[IndexManifestEntry]>,
) -> Result<Option<(CommitMessage, BucketCompactor)>> {
    let (mut c, mut dv) = bucket_compactor(table, settings, &b, live_index)?;
    let mut r = CompactResult::default();
    if let Err(e) = c.compact_commit(full, &mut r, dv.as_ref().map(|d| d.vectors())) {
        c.discard(&r);
        return Err(e);
    }
    if r.is_empty() {
        return Ok(None);
    }
    let mut compact_increment = CompactIncrement {
        changelog_files: std::mem::take(&mut r.changelog),
        ..CompactIncrement::of(r.before.clone(), r.after.clone())
    };
    if let Some(dv) = &mut dv {
        let index = dv
            .apply_compaction(std::mem::take(&mut r.dv_marks), &r.before, &r.after)
            .and_then(|()| dv.prepare_commit(table));
        match index {
            Ok((new, replaced)) => {
                compact_increment.new_index_files = new;
                compact_increment.deleted_index_files = replaced;
            }
            Err(e) => {
                c.discard(&r);
                return Err(e);
            }
        }
    }
    let msg = CommitMessage {
        partition: b.partition,
        bucket: b.bucket,
        total_buckets: b.total_buckets,
        data_increment: DataIncrement::default(),
        compact_increment,
        restored_snapshot: Some(Some(b.snapshot_id)),
    };
    Ok(Some((msg, c)))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use crate::compact::{BucketCompactor, CompactSettings};
    use crate::lookup::tests::data_file;
    use crate::write::table_write::tests::table;

    /// A deletion-vector table (options `extra`) with one bucket whose only file holds keys
    /// 0..2000 at the max level, and a compactor of it whose vector of that file marks
    /// `marked` rows.
    fn marked_max_level(
        extra: &[(&str, &str)],
        marked: u32,
    ) -> (
        tempfile::TempDir,
        crate::spec::manifest::DataFileMeta,
        BucketCompactor,
    ) {
        let dir = tempfile::tempdir().unwrap();
        let t = table(dir.path(), &[("bucket", "1")]);
        let mut o: BTreeMap<String, String> =
            [("deletion-vectors.enabled".to_string(), "true".to_string())].into();
        o.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        let t = t.copy(&o).unwrap();
        let keys: Vec<i64> = (0..2000).collect();
        let big = data_file(&t, 5, &keys, 0);
        let settings = CompactSettings::from_table(&t).unwrap();
        let mut c = BucketCompactor::new(&t, &settings, t.path.join("bucket-0"), vec![big.clone()])
            .unwrap();
        c.set_deletion_vectors([(big.file_name.clone(), (0..marked).collect())].into());
        (dir, big, c)
    }

    /// Java's `pickFullCompaction`: a full compaction of one max-level run rewrites the files
    /// that have a deletion vector, without the rows it marks.
    #[test]
    fn full_compaction_rewrites_max_level_files_with_vectors() {
        let (_dir, big, mut c) = marked_max_level(&[], 2);
        let r = c.compact(true).unwrap().unwrap();
        assert_eq!(r.before, vec![big.clone()]);
        assert_eq!(r.after.len(), 1);
        assert_ne!(r.after[0].file_name, big.file_name);
        assert_eq!((r.after[0].level, r.after[0].row_count), (5, 1998));
        // without vectors there is nothing to do
        let (_, _, mut c) = marked_max_level(&[], 0);
        assert!(c.compact(true).unwrap().is_none());
    }

    /// §3.8: a max-level file whose vector marks more than `compaction.delete-ratio-threshold`
    /// (0.2) of its rows is rewritten without them; at or below the threshold it stays.
    #[test]
    fn a_mostly_deleted_max_level_file_is_rewritten() {
        let (_dir, _, mut c) = marked_max_level(&[], 400); // exactly 20%
        assert!(c.compact(false).unwrap().is_none());
        assert!(c.compact_deleted().unwrap().is_none());
        let (_dir, big, mut c) = marked_max_level(&[], 401);
        let r = c.compact_deleted().unwrap().unwrap();
        assert_eq!(r.before, vec![big.clone()]);
        assert_eq!(r.after.len(), 1);
        assert_eq!((r.after[0].level, r.after[0].row_count), (5, 1599));
        assert_eq!(c.levels.all_files(), r.after);
        // the option moves the line
        let (_dir, _, mut c) =
            marked_max_level(&[("compaction.delete-ratio-threshold", "0.5")], 900);
        assert!(c.compact_deleted().unwrap().is_none());
        let (_dir, _, mut c) =
            marked_max_level(&[("compaction.delete-ratio-threshold", "0.1")], 300);
        assert!(c.compact_deleted().unwrap().is_some());
        let dir = tempfile::tempdir().unwrap();
        let bad = table(dir.path(), &[("bucket", "1")]).copy(
            &[
                ("deletion-vectors.enabled".to_string(), "true".to_string()),
                (
                    "compaction.delete-ratio-threshold".to_string(),
                    "1.5".to_string(),
                ),
            ]
            .into(),
        );
        let err = bad.and_then(|t| CompactSettings::from_table(&t).map(|_| ()));
        assert!(format!("{:?}", err.unwrap_err()).contains("delete-ratio-threshold"));
    }
}
