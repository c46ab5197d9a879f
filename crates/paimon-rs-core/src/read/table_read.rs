//! Reading splits into Arrow batches with the table's (projected) schema.
//!
//! Streaming: a split is read as a lazy iterator. A split that needs a merge is merged section by
//! section (interval partition); each sorted run of a section is a lazy chain of its files, each
//! file a lazy Parquet reader, so memory is one decoded batch per run plus the merge output
//! (issue 4) instead of the whole split. A raw split is the lazy concatenation of its files.
//!
//! Columns decoded: a merge read decodes `_KEY_*`, `_SEQUENCE_NUMBER`, `_VALUE_KIND` and the
//! needed value columns except the primary-key ones, which are copies of `_KEY_*` (Paimon writes
//! the key twice) and are taken from the merged key columns. A raw read needs no key or
//! sequence column: it decodes `_VALUE_KIND` (to drop retractions) and the needed columns.

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int8Type;
use arrow_array::{ArrayRef, BooleanArray, RecordBatch};
use arrow_schema::{Field, Schema, SchemaRef};
use rayon::prelude::*;

use super::data_evolution::{merged_groups, row_id_groups};
use super::deletion::DeletionFile;
use super::evolution::SchemaCache;
use super::row_tracking::{files_with_tracking, filter_column_type, Tracking};
use super::split::Split;
use crate::compact::interval::interval_partition;
use crate::compact::leveled_runs;
use crate::error::{Error, Result};
use crate::kv::reader::{
    column_plan, file_path, with_deletions, with_deletions_of_rows, ColumnPlan, FileChain,
    PlanInput,
};
use crate::merge::engine::EngineKind;
use crate::merge::reader::MergeHooks;
use crate::merge::{merge_sorted_runs, merge_sorted_runs_with, BatchIter, KvLayout, MergeEngine};
use crate::predicate::Predicate;
use crate::sort::{SpillOptions, Spiller};
use crate::spec::manifest::DataFileMeta;
use crate::spec::row_kind::is_retract_byte as is_retract;
use crate::spec::row_kind::RowKind;
use crate::spec::types::DataType;
use crate::table::live::expired_or;
use crate::table::FileStoreTable;

pub struct TableRead {
    ctx: Arc<ReadCtx>,
}

/// Everything a (lazy, `'static`) split stream needs of the read.
struct ReadCtx {
    table: FileStoreTable,
    /// Output columns (indices into the table fields).
    projection: Vec<usize>,
    /// System columns of a row-tracking table asked for, with their place in the output
    /// (among the projected columns, which hold the others in order).
    tracking: Vec<(usize, Tracking)>,
    filter: Option<Predicate>,
    /// System columns the filter names (`_ROW_ID = 5`): read with the rows, filtered on, and
    /// output only when also in `tracking`.
    filter_tracking: Vec<Tracking>,
    /// The `needed` columns, named as the table's, then the `filter_tracking` columns: what
    /// the filter evaluates.
    filter_schema: SchemaRef,
    /// Table columns that must be read (projection plus filter and merge columns).
    needed: Vec<usize>,
    output_schema: SchemaRef,
    engine: MergeEngine,
    /// Schemas of the data files (schema evolution: files are read by field id).
    schemas: Arc<SchemaCache>,
    /// An incremental read of a primary-key table: retractions are kept and each row's kind
    /// (`+I`, `-U`, `+U`, `-D`) is the leading `rowkind` column, as Java's `audit_log`. Delta
    /// files are merged by key first; changelog splits are not merged.
    row_kind: bool,
}

/// The leading column of an incremental read of a primary-key table.
pub const ROW_KIND_COLUMN: &str = "rowkind";

impl TableRead {
    pub fn new(
        table: FileStoreTable,
        projection: Option<Vec<String>>,
        filter: Option<Predicate>,
    ) -> Result<Self> {
        Self::build(table, projection, filter, false)
    }

    /// A batch read of a primary-key table that keeps each merged record's kind as the leading
    /// `rowkind` column and keeps retractions (Java's `audit_log` system table, whose read is
    /// the data read with `forceKeepDelete`); an incremental read does so anyway.
    pub fn with_row_kinds(
        table: FileStoreTable,
        projection: Option<Vec<String>>,
        filter: Option<Predicate>,
    ) -> Result<Self> {
        Self::build(table, projection, filter, true)
    }

    fn build(
        table: FileStoreTable,
        projection: Option<Vec<String>>,
        filter: Option<Predicate>,
        row_kinds: bool,
    ) -> Result<Self> {
        let fields = &table.schema.fields;
        let mut tracking = vec![];
        let projection: Vec<usize> = match projection {
            None => (0..fields.len()).collect(),
            Some(names) => {
                let mut idx = vec![];
                for (at, n) in names.iter().enumerate() {
                    if let Some(t) = Tracking::of(&table, n)? {
                        tracking.push((at, t));
                        continue;
                    }
                    idx.push(table.schema.field_index(n).ok_or_else(|| {
                        Error::schema(format!("projected column '{n}' is not in the table"))
                            .with_table(&table.name)
                    })?);
                }
                idx
            }
        };
        let mut needed = projection.clone();
        // only system columns asked for: the files' rows are counted through their first column
        let mut filter_tracking = vec![];
        if let Some(f) = &filter {
            for name in f.fields() {
                match Tracking::of(&table, &name)? {
                    Some(t) if !filter_tracking.contains(&t) => filter_tracking.push(t),
                    _ => {}
                }
            }
        }
        if needed.is_empty()
            && !(tracking.is_empty() && filter_tracking.is_empty())
            && !fields.is_empty()
        {
            needed.push(0);
        }
        let engine = if table.is_primary_key() {
            table.merge_engine()?
        } else {
            MergeEngine::Deduplicate
        };
        // columns the merge needs (sequence fields, sequence-group ordering fields)
        for name in engine.required_fields() {
            if let Some(i) = table.schema.field_index(&name) {
                if !needed.contains(&i) {
                    needed.push(i);
                }
            }
        }
        if let Some(f) = &filter {
            for name in f.fields() {
                if Tracking::of(&table, &name)?.is_some() {
                    continue;
                }
                let i = table.schema.field_index(&name).ok_or_else(|| {
                    Error::schema(format!("filter column '{name}' is not in the table"))
                        .with_table(&table.name)
                })?;
                if !needed.contains(&i) {
                    needed.push(i);
                }
            }
        }
        let field_of = |i: usize, nullable: bool| {
            let f = &fields[i];
            Field::new(&f.name, f.data_type.to_arrow(), nullable)
        };
        let schemas = Arc::new(SchemaCache::new(table.meta_path(), &table.schema));
        let row_kind = table.is_primary_key()
            && (row_kinds
                || matches!(
                    table.options.scan,
                    crate::scan_options::ScanStart::Incremental(..)
                ));
        let kind_field =
            row_kind.then(|| Field::new(ROW_KIND_COLUMN, arrow_schema::DataType::Utf8, false));
        let mut out_fields: Vec<Field> = projection
            .iter()
            .map(|&i| field_of(i, fields[i].data_type.nullable))
            .collect();
        for &(at, t) in &tracking {
            out_fields.insert(at, t.field());
        }
        let output_schema = Arc::new(Schema::new(
            kind_field.into_iter().chain(out_fields).collect::<Vec<_>>(),
        ));
        let needed_schema = Arc::new(Schema::new(
            needed
                .iter()
                .map(|&i| field_of(i, true))
                .collect::<Vec<_>>(),
        ));
        let filter_schema = Arc::new(Schema::new(
            needed_schema
                .fields()
                .iter()
                .map(|f| f.as_ref().clone())
                .chain(filter_tracking.iter().map(|t| t.field()))
                .collect::<Vec<_>>(),
        ));
        Ok(TableRead {
            ctx: Arc::new(ReadCtx {
                table,
                projection,
                tracking,
                filter,
                filter_tracking,
                filter_schema,
                needed,
                output_schema,
                engine,
                schemas,
                row_kind,
            }),
        })
    }

    pub fn output_schema(&self) -> SchemaRef {
        self.ctx.output_schema.clone()
    }

    /// Read several splits (in parallel on the rayon pool), results in split order.
    ///
    /// On an object store the splits are taken in order and a split's data files are fetched
    /// a round ahead ([`in_rounds`]): once a split's first batch is decoded (its files are in),
    /// the whole-object GETs of the split `threads` further on start, so they arrive while
    /// this round decodes instead of after it (each split used to wait for its files as it
    /// started: two rounds of waiting on the 4-bucket bench table).
    pub fn read_splits(&self, splits: &[Split]) -> Result<Vec<RecordBatch>> {
        if !crate::io::is_remote(&self.ctx.table.path) {
            let parts: Vec<Result<Vec<RecordBatch>>> =
                splits.par_iter().map(|s| self.read_split(s)).collect();
            return concat_parts(parts);
        }
        // GETs sent ahead that no open took are given up when the read ends (or unwinds)
        let sent = ForgetAhead(std::sync::Mutex::new(vec![]));
        let prepare = |j: usize| {
            let s = &splits[j];
            let dir = crate::io::resolve(&self.ctx.table.path, &s.bucket_path);
            let files: Vec<_> = s
                .files
                .iter()
                .map(|f| (file_path(&dir, f), f.file_size.max(0) as u64))
                .collect();
            let got = crate::io::remote::fetch_ahead(&files);
            if let Ok(mut v) = sent.0.lock() {
                v.extend(got);
            }
        };
        let read = |i: usize, ahead: &dyn Fn()| -> Result<Vec<RecordBatch>> {
            let mut it = self.split_stream(&splits[i])?;
            let mut out = vec![];
            if let Some(b) = it.next() {
                out.push(b?);
            }
            ahead();
            for b in it {
                out.push(b?);
            }
            Ok(out)
        };
        let parts = in_rounds(splits.len(), rayon::current_num_threads(), prepare, read);
        drop(sent);
        concat_parts(
            parts
                .into_iter()
                .map(|p| p.unwrap_or_else(|| Err(Error::Internal("a split was not read".into()))))
                .collect(),
        )
    }
    /// Read one split into memory.
    pub fn read_split(&self, split: &Split) -> Result<Vec<RecordBatch>> {
        self.split_stream(split)?.collect()
    }

    /// Read one split lazily: batches are decoded and merged as they are pulled.
    pub fn split_stream(&self, split: &Split) -> Result<BatchIter> {
        let table = self.ctx.table.clone();
        let id = split.snapshot_id;
        let it = split_stream(self.ctx.clone(), split).map_err(|e| expired_or(&table, id, e))?;
        Ok(Box::new(
            it.map(move |r| r.map_err(|e| expired_or(&table, id, e))),
        ))
    }

    /// [`Self::split_stream`] of an append table's raw split with the deletion vectors
    /// `vectors` (data file name → deleted row positions, held in memory: a writer's, with
    /// marks not yet in an index file) in place of the split's deletion files: the reader's
    /// one path that drops marked rows (append compaction of a deletion-vector table).
    pub fn split_stream_with_vectors(
        &self,
        split: &Split,
        vectors: Arc<BTreeMap<String, roaring::RoaringBitmap>>,
    ) -> Result<BatchIter> {
        let table = self.ctx.table.clone();
        let id = split.snapshot_id;
        let it = split_stream_with(self.ctx.clone(), split, Some(vectors))
            .map_err(|e| expired_or(&table, id, e))?;
        Ok(Box::new(
            it.map(move |r| r.map_err(|e| expired_or(&table, id, e))),
        ))
    }

    /// Read splits one after the other, lazily (bounded memory, no parallelism across splits).
    pub fn stream(&self, splits: Vec<Split>) -> BatchIter {
        let ctx = self.ctx.clone();
        let it = splits.into_iter().flat_map(move |s| -> BatchIter {
            let table = ctx.table.clone();
            let id = s.snapshot_id;
            match split_stream(ctx.clone(), &s) {
                Ok(it) => Box::new(it.map(move |r| r.map_err(|e| expired_or(&table, id, e)))),
                Err(e) => Box::new(std::iter::once(Err(expired_or(&table, id, e)))),
            }
        });
        Box::new(it)
    }
}

/// Paths of whole-object GETs a read sent ahead ([`crate::io::remote::fetch_ahead`]): those no
/// open took are given up when it is dropped.
struct ForgetAhead(std::sync::Mutex<Vec<std::path::PathBuf>>);

impl Drop for ForgetAhead {
    fn drop(&mut self) {
        if let Ok(paths) = self.0.get_mut() {
            crate::io::remote::forget_ahead(paths);
        }
    }
}

/// The batches of `parts` (splits' results, in split order) one after the other; the first
/// error.
fn concat_parts(parts: Vec<Result<Vec<RecordBatch>>>) -> Result<Vec<RecordBatch>> {
    let mut out = vec![];
    for p in parts {
        out.extend(p?);
    }
    Ok(out)
}

/// `read(i)` for i in `0..n` on `workers` tasks of the rayon pool, which take the indices in
/// ascending order; results in index order (None only for an index no task reached, which a
/// panic would propagate first). `read(i, ahead)` calls `ahead()` when its own inputs are in:
/// that runs `prepare(i + workers)`, the index taken a round later, so its inputs come while
/// this round works.
pub(crate) fn in_rounds<T: Send>(
    n: usize,
    workers: usize,
    prepare: impl Fn(usize) + Sync,
    read: impl Fn(usize, &dyn Fn()) -> T + Sync,
) -> Vec<Option<T>> {
    use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
    // each index's state: untouched, being prepared, prepared, taken by its reader. A reader
    // that takes an index being prepared waits for the preparation (it only starts GETs), so
    // its opens find them; a preparation never starts once the reader has taken the index.
    const UNTOUCHED: u8 = 0;
    const PREPARING: u8 = 1;
    const PREPARED: u8 = 2;
    const TAKEN: u8 = 3;
    /// Marks an index prepared when its preparation ends, even by a panic (its reader waits).
    struct Prepared<'a>(&'a AtomicU8);
    impl Drop for Prepared<'_> {
        fn drop(&mut self) {
            self.0.store(PREPARED, Ordering::SeqCst);
        }
    }
    let workers = workers.clamp(1, n.max(1));
    let next = AtomicUsize::new(0);
    let state: Vec<AtomicU8> = (0..n).map(|_| AtomicU8::new(UNTOUCHED)).collect();
    let out: Vec<std::sync::Mutex<Option<T>>> =
        (0..n).map(|_| std::sync::Mutex::new(None)).collect();
    (0..workers)
        .into_par_iter()
        .with_max_len(1)
        .for_each(|_| loop {
            let i = next.fetch_add(1, Ordering::SeqCst);
            if i >= n {
                break;
            }
            while let Err(PREPARING) =
                state[i].compare_exchange(UNTOUCHED, TAKEN, Ordering::SeqCst, Ordering::SeqCst)
            {
                std::thread::yield_now();
            }
            let ahead = || {
                let j = i + workers;
                if j < n
                    && state[j]
                        .compare_exchange(UNTOUCHED, PREPARING, Ordering::SeqCst, Ordering::SeqCst)
                        .is_ok()
                {
                    let _done = Prepared(&state[j]);
                    prepare(j);
                }
            };
            let r = read(i, &ahead);
            if let Ok(mut slot) = out[i].lock() {
                *slot = Some(r);
            }
        });
    out.into_iter()
        .map(|m| m.into_inner().ok().flatten())
        .collect()
}

fn split_stream(ctx: Arc<ReadCtx>, split: &Split) -> Result<BatchIter> {
    split_stream_with(ctx, split, None)
}

/// [`split_stream`], with `memory`: deletion vectors held in memory that replace the split's
/// deletion files (raw splits only).
fn split_stream_with(
    ctx: Arc<ReadCtx>,
    split: &Split,
    memory: Option<Arc<BTreeMap<String, roaring::RoaringBitmap>>>,
) -> Result<BatchIter> {
    if let Some(before) = &split.diff_before {
        return diff_stream(&ctx, split, before);
    }
    let dir = crate::io::resolve(&ctx.table.path, &split.bucket_path);
    let pk = ctx.table.is_primary_key();
    let key_names = ctx.table.trimmed_primary_keys();
    if split.changelog && pk && !ctx.row_kind {
        return Err(Error::invalid(format!(
            "a changelog split of table '{}' (bucket {}) is read by an incremental read, which \
             returns each record's row kind",
            ctx.table.name, split.bucket_path
        )));
    }
    // changelog files are read as stored: no merge, every record with its kind
    let merge = pk && !split.changelog && (!split.raw_convertible || ctx.row_kind);
    let row_kind = ctx.row_kind;
    let required = ctx.engine.required_fields();
    let mut plan = column_plan(
        PlanInput {
            table: &ctx.table,
            schemas: &ctx.schemas,
            needed: &ctx.needed,
            required: &required,
            pk,
            merge,
            own_key_values: false,
        },
        &key_names,
    )?;
    if split.changelog {
        plan.drop_retract_at = None; // -U and -D are changes too
    }
    let plan = Arc::new(plan);
    let layout = KvLayout {
        num_keys: key_names.len(),
    };
    if !split.row_slices.is_empty() && (pk || split.changelog) {
        return Err(Error::unsupported(format!(
            "reading part of a file (a slice of the plan's rows) in a {} split: only append \
             tables' splits are sliced",
            if split.changelog {
                "changelog"
            } else {
                "primary-key table's"
            }
        ))
        .with_table(&ctx.table.name));
    }
    if memory.is_some() && (merge || split.changelog) {
        return Err(Error::Internal(format!(
            "deletion vectors in memory for a split of table '{}' that is not read raw",
            ctx.table.name
        )));
    }
    // a data-evolution table whose files hold different columns of the same rows: merged by
    // columns (read/data_evolution.rs)
    if !pk && !split.changelog && ctx.table.options.data_evolution()? {
        let groups = row_id_groups(&ctx.table.name, &split.files)?;
        if groups.iter().any(|g| g.len() > 1) {
            if memory.is_some() {
                return Err(Error::unsupported(
                    "reading a data-evolution table with deletion vectors held in memory whose \
                     files hold different columns of the same rows: not implemented by paimon_rs",
                )
                .with_table(&ctx.table.name));
            }
            let sub_plan = |mine: &[usize]| -> Result<Arc<ColumnPlan>> {
                let sub: Vec<usize> = mine.iter().map(|&k| ctx.needed[k]).collect();
                Ok(Arc::new(column_plan(
                    PlanInput {
                        table: &ctx.table,
                        schemas: &ctx.schemas,
                        needed: &sub,
                        required: &[],
                        pk: false,
                        merge: false,
                        own_key_values: false,
                    },
                    &[],
                )?))
            };
            let batches = merged_groups(
                &ctx.table,
                &ctx.schemas,
                &dir,
                groups,
                &split.deletion_files,
                &split.row_slices,
                &plan,
                &sub_plan,
                ctx.reads_tracking(),
            )?;
            return Ok(finished(ctx, plan, batches));
        }
    }
    if ctx.reads_tracking() {
        if merge || split.changelog || memory.is_some() {
            return Err(Error::Internal(format!(
                "_ROW_ID of table '{}' asked of a split that is not read raw",
                ctx.table.name
            )));
        }
        let dvs = Arc::new(split.deletion_files.clone());
        let batches = files_with_tracking(
            &ctx.table,
            &dir,
            &split.files,
            &dvs,
            &split.row_slices,
            &plan,
        )?;
        return Ok(finished(ctx, plan, batches));
    }
    let batches: BatchIter = if merge {
        // Merge each section of overlapping files; one lazy run per sorted run of the section.
        let key_types = ctx.table.schema.types_of(&key_names)?;
        let sections = interval_partition(split.files.clone(), &key_types)?;
        let engine = ctx.engine.clone();
        let plan = plan.clone();
        let (root, dvs) = (
            ctx.table.path.clone(),
            Arc::new(split.deletion_files.clone()),
        );
        let options = &ctx.table.options;
        // spill files live as long as the stream (the spiller removes its directory when dropped)
        let spill = options.sort_spill_threshold.map(|t| {
            (
                t,
                Arc::new(Spiller::new(SpillOptions::from_options(options))),
            )
        });
        // a table that needs lookup merges a key's lowest level > 0 only (Java's
        // `LookupMergeFunction`): lookup compaction keeps each higher-level record embodying
        // the older ones below it; it matters to engines that combine records
        let leveled = ctx.table.options.needs_lookup()?
            && matches!(
                engine.kind,
                EngineKind::Aggregation | EngineKind::PartialUpdate | EngineKind::Deduplicate
            )
            && !engine.is_plain_deduplicate();
        Box::new(sections.into_iter().flat_map(move |runs| -> BatchIter {
            let merged = (|| {
                let (runs, run_levels) = if leveled {
                    let (r, l) = leveled_runs(&runs, &key_types)?;
                    (r, Some(l))
                } else {
                    (runs, None)
                };
                let mut iters: Vec<(u64, BatchIter)> = runs
                    .iter()
                    .map(|run| {
                        let size = run.iter().map(|f| f.file_size.max(0) as u64).sum();
                        if !dvs.is_empty() {
                            return (
                                size,
                                with_deletions(&root, &dir, run, &dvs, None, &plan, false),
                            );
                        }
                        let files = run
                            .iter()
                            .map(|f| (file_path(&dir, f), f.clone()))
                            .collect();
                        (
                            size,
                            Box::new(FileChain::new(files, plan.clone())) as BatchIter,
                        )
                    })
                    .collect();
                // a pre-merge of spilled runs would lose their levels
                if let (Some((threshold, spiller)), None) = (&spill, &run_levels) {
                    iters = spill_smallest_runs(iters, *threshold, spiller, &plan.schema, layout)?;
                }
                let iters = iters.into_iter().map(|(_, it)| it).collect();
                merge_sorted_runs_with(
                    iters,
                    layout,
                    engine.clone(),
                    !row_kind,
                    MergeHooks {
                        run_levels,
                        ..Default::default()
                    },
                )
            })();
            match merged {
                Ok(it) => it,
                Err(e) => Box::new(std::iter::once(Err(e))),
            }
        }))
    } else if let Some(memory) = &memory {
        let none = Arc::new(BTreeMap::new());
        with_deletions_of_rows(
            &ctx.table.path,
            &dir,
            &split.files,
            &none,
            Some(memory),
            &split.row_slices,
            &plan,
            true,
        )
    } else if !split.changelog && (!split.deletion_files.is_empty() || !split.row_slices.is_empty())
    {
        let dvs = Arc::new(split.deletion_files.clone());
        with_deletions_of_rows(
            &ctx.table.path,
            &dir,
            &split.files,
            &dvs,
            None,
            &split.row_slices,
            &plan,
            true,
        )
    } else if let Some(selected) = bitmap_selected(&ctx, split, &dir, &plan)? {
        selected
    } else {
        // raw files, and changelog files: each as stored, in the split's (snapshot) order; no
        // deletion vectors apply to changelog files
        let files = split
            .files
            .iter()
            .map(|f| (file_path(&dir, f), f.clone()))
            .collect();
        Box::new(FileChain::raw(files, plan.clone()))
    };
    Ok(finished(ctx, plan, batches))
}

/// A raw split of data files (no merge, no deletion vectors, no slices, no row ids: the rows'
/// positions are not needed) read file by file at the rows their bitmap indexes select for the
/// filter (Java's `BitmapIndexResult` applied by `RawFileSplitRead`; paimon-behaviour.md
/// §6.3a): only the pages holding them are decoded, the filter by value still applies after.
/// None when no file of the split can be read so (no filter on a bitmap-indexed column,
/// `file-index.read.enabled = false`, a changelog split): the caller reads it whole.
fn bitmap_selected(
    ctx: &Arc<ReadCtx>,
    split: &Split,
    dir: &std::path::Path,
    plan: &Arc<ColumnPlan>,
) -> Result<Option<BatchIter>> {
    let Some(filter) = &ctx.filter else {
        return Ok(None);
    };
    let raw_opts = &ctx.table.options.raw;
    if split.changelog
        || !split
            .files
            .iter()
            .any(|f| f.embedded_index.is_some() || !f.extra_files.is_empty())
        || !crate::fileindex::read_enabled(raw_opts)?
    {
        return Ok(None);
    }
    let configured = Arc::new(crate::fileindex::configured_columns(raw_opts));
    if !configured.has_bitmaps() {
        return Ok(None);
    }
    let (ctx, dir, plan) = (ctx.clone(), dir.to_path_buf(), plan.clone());
    let filter = filter.clone();
    let files = split.files.clone();
    Ok(Some(Box::new(files.into_iter().flat_map(
        move |f| -> BatchIter {
            let path = file_path(&dir, &f);
            let selection = (|| {
                let file_schema = ctx.schemas.get(f.schema_id)?;
                let current = &ctx.table.schema;
                let column = |name: &str| {
                    let cf = current.fields.iter().find(|x| x.name == name)?;
                    let ff = file_schema.fields.iter().find(|x| x.id == cf.id)?;
                    crate::read::evolution::same_type(&ff.data_type, &cf.data_type)
                        .then(|| (ff.name.clone(), ff.data_type.clone()))
                };
                crate::fileindex::row_selection(&filter, &f, &dir, &column, &configured)
            })();
            match selection {
                Ok(Some(s)) if s.is_empty() => Box::new(std::iter::empty()),
                Ok(Some(s)) => Box::new(FileChain::selected(path, f, plan.clone(), s)),
                Ok(None) => Box::new(FileChain::raw(
                    std::collections::VecDeque::from([(path, f)]),
                    plan.clone(),
                )),
                Err(e) => Box::new(std::iter::once(Err(e.with_table(&ctx.table.name)))),
            }
        },
    ))))
}

/// `batches` through [`ReadCtx::finish_batch`], empty results left out.
fn finished(ctx: Arc<ReadCtx>, plan: Arc<ColumnPlan>, batches: BatchIter) -> BatchIter {
    Box::new(batches.filter_map(move |b| match b {
        Ok(b) => match ctx.finish_batch(&b, &plan) {
            Ok(out) if out.num_rows() == 0 => None,
            r => Some(r),
        },
        Err(e) => Some(Err(e)),
    }))
}

/// A diff split (an incremental read between two tags of a primary-key deletion-vector
/// table, paimon-behaviour.md §9.7): each side read whole as the table at its tag (every
/// column, row kinds kept, its own deletion vectors), the key diff of the two
/// ([`super::diff::diff_sides`]), then the read's filter and projection. Both sides of the
/// bucket are held in memory: only the files that differ between the tags (their own, or
/// with another vector) are read.
fn diff_stream(
    ctx: &ReadCtx,
    split: &Split,
    before: &super::split::DiffBefore,
) -> Result<BatchIter> {
    if !ctx.row_kind {
        return Err(Error::invalid(format!(
            "a diff split of table '{}' (bucket {}) is read by an incremental read, which \
             returns each row's kind",
            ctx.table.name, split.bucket_path
        )));
    }
    let full = TableRead::with_row_kinds(ctx.table.clone(), None, None)?.ctx;
    let side =
        |files: &[DataFileMeta], dvs: &BTreeMap<String, DeletionFile>| -> Result<RecordBatch> {
            let s = Split {
                files: files.to_vec(),
                deletion_files: dvs.clone(),
                raw_convertible: false,
                changelog: false,
                diff_before: None,
                row_slices: Default::default(),
                row_id_ranges: Vec::new(),
                ..split.clone()
            };
            let parts: Vec<RecordBatch> = split_stream(full.clone(), &s)?.collect::<Result<_>>()?;
            Ok(arrow_select::concat::concat_batches(
                &full.output_schema,
                &parts,
            )?)
        };
    let (b, a) = (
        side(&before.files, &before.deletion_files)?,
        side(&split.files, &split.deletion_files)?,
    );
    let keys: Vec<usize> = ctx
        .table
        .trimmed_primary_keys()
        .iter()
        .chain(ctx.table.partition_keys())
        .map(|k| {
            ctx.table
                .schema
                .field_index(k)
                .map(|i| i + 1)
                .ok_or_else(|| {
                    Error::Internal(format!("diff read: key column '{k}' is not in the table"))
                })
        })
        .collect::<Result<_>>()?;
    let diff = super::diff::diff_sides(&b, &a, &keys)?;
    // the read's filter and projection over the table's columns (after the row kind)
    let mut cols: Vec<ArrayRef> = vec![diff.column(0).clone()];
    let values = diff.project(&(1..diff.num_columns()).collect::<Vec<_>>())?;
    let mask = match &ctx.filter {
        None => None,
        Some(f) => {
            let type_of = |n: &str| -> Option<DataType> {
                ctx.table.schema.field(n).map(|x| x.data_type.clone())
            };
            Some(f.evaluate(&values, &type_of)?)
        }
    };
    cols.extend(ctx.projection.iter().map(|&i| values.column(i).clone()));
    let mut out = RecordBatch::try_new(ctx.output_schema.clone(), cols)?;
    if let Some(m) = mask {
        out = arrow_select::filter::filter_record_batch(&out, &m)?;
    }
    Ok(Box::new(
        (out.num_rows() > 0).then_some(Ok(out)).into_iter(),
    ))
}

/// `sort-spill-threshold`: with more than `threshold` sorted runs, merge the smallest runs
/// (by file size) into one run spilled to local disk, so the final merge reads `threshold`
/// runs and holds a batch of each. The pre-merge keeps every record (`KeepAll`): records of a
/// key still reach the merge function in sequence order, so the result is the same.
fn spill_smallest_runs(
    mut runs: Vec<(u64, BatchIter)>,
    threshold: usize,
    spiller: &Spiller,
    schema: &SchemaRef,
    layout: KvLayout,
) -> Result<Vec<(u64, BatchIter)>> {
    if runs.len() <= threshold {
        return Ok(runs);
    }
    runs.sort_by_key(|(size, _)| std::cmp::Reverse(*size));
    let smallest = runs.split_off(threshold - 1);
    let size = smallest.iter().map(|(s, _)| s).sum();
    let merged = merge_sorted_runs(
        smallest.into_iter().map(|(_, it)| it).collect(),
        layout,
        MergeEngine::KeepAll,
        false,
    )?;
    let spilled = spiller.spill(schema, merged)?;
    runs.push((size, spilled.into_batches()?));
    Ok(runs)
}

impl ReadCtx {
    /// Does a split's read number its rows (`_ROW_ID` / `_SEQUENCE_NUMBER` output or filtered)?
    fn reads_tracking(&self) -> bool {
        !(self.tracking.is_empty() && self.filter_tracking.is_empty())
    }

    /// Needed table columns of a decoded (merged) batch, value filter, projection. Raw
    /// primary-key batches first drop their retractions (a -D read raw means the key is absent).
    fn finish_batch(&self, batch: &RecordBatch, plan: &ColumnPlan) -> Result<RecordBatch> {
        let mut batch = std::borrow::Cow::Borrowed(batch);
        if let Some(k) = plan.drop_retract_at {
            let kinds = batch.column(k).as_primitive::<Int8Type>();
            if kinds.values().iter().any(|&k| is_retract(k)) {
                let keep: BooleanArray = kinds
                    .values()
                    .iter()
                    .map(|&k| Some(!is_retract(k)))
                    .collect();
                batch = std::borrow::Cow::Owned(arrow_select::filter::filter_record_batch(
                    &batch, &keep,
                )?);
            }
        }
        let col_of = |i: usize| -> Result<ArrayRef> {
            let pos = self
                .needed
                .iter()
                .position(|&x| x == i)
                .ok_or_else(|| Error::Internal("projected column not read".into()))?;
            Ok(batch.column(plan.needed_at[pos]).clone())
        };
        let kinds: Option<ArrayRef> = match (self.row_kind, plan.check.kind_at) {
            (false, _) => None,
            (true, Some(k)) => {
                let kinds = batch.column(k).as_primitive::<Int8Type>();
                let names: arrow_array::StringArray = kinds
                    .values()
                    .iter()
                    .map(|&b| Some(RowKind::from_byte(b).map_or("?", RowKind::short_string)))
                    .collect();
                Some(Arc::new(names))
            }
            (true, None) => Err(Error::Internal("row kinds not decoded".into()))?,
        };
        let tracked = |t: Tracking| batch.column(t.column_in(plan)).clone();
        let (kinds, mut cols): (Option<ArrayRef>, Vec<ArrayRef>) = match &self.filter {
            None => {
                let mut cols: Vec<ArrayRef> = self
                    .projection
                    .iter()
                    .map(|&i| col_of(i))
                    .collect::<Result<_>>()?;
                for &(at, t) in &self.tracking {
                    cols.insert(at, tracked(t));
                }
                (kinds, cols)
            }
            Some(f) => {
                let values = RecordBatch::try_new(
                    self.filter_schema.clone(),
                    plan.needed_at
                        .iter()
                        .map(|&c| batch.column(c).clone())
                        .chain(self.filter_tracking.iter().map(|&t| tracked(t)))
                        .collect(),
                )?;
                let type_of = |n: &str| -> Option<DataType> {
                    filter_column_type(&self.table, n).ok().flatten()
                };
                let mask = f.evaluate(&values, &type_of)?;
                let values = arrow_select::filter::filter_record_batch(&values, &mask)?;
                let kinds = kinds
                    .map(|k| arrow_select::filter::filter(&k, &mask))
                    .transpose()?;
                let mut cols: Vec<ArrayRef> = self
                    .projection
                    .iter()
                    .map(|&i| {
                        let pos = self.needed.iter().position(|&x| x == i).unwrap_or(0);
                        values.column(pos).clone()
                    })
                    .collect();
                for &(at, t) in &self.tracking {
                    cols.insert(at, arrow_select::filter::filter(&tracked(t), &mask)?);
                }
                (kinds, cols)
            }
        };
        if let Some(k) = kinds {
            cols.insert(0, k);
        }
        RecordBatch::try_new(self.output_schema.clone(), cols).map_err(|e| {
            Error::corrupt(
                &self.table.path,
                format!("data does not match the table schema: {e}"),
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::in_rounds;
    use std::sync::Mutex;

    /// One task: every later index is prepared once the one a round before has its inputs in
    /// (`ahead`), before that index is read; results in index order.
    #[test]
    fn in_rounds_prepares_the_next_round_once_this_ones_inputs_are_in() {
        let log = Mutex::new(vec![]);
        let got = in_rounds(
            3,
            1,
            |j| log.lock().unwrap().push(format!("prepare {j}")),
            |i, ahead| {
                log.lock().unwrap().push(format!("in {i}"));
                ahead();
                log.lock().unwrap().push(format!("done {i}"));
                i * 10
            },
        );
        assert_eq!(got, vec![Some(0), Some(10), Some(20)]);
        assert_eq!(
            log.into_inner().unwrap(),
            [
                "in 0",
                "prepare 1",
                "done 0",
                "in 1",
                "prepare 2",
                "done 1",
                "in 2",
                "done 2"
            ]
        );
    }

    /// Several tasks: every index read once, in order of results, and prepared at most once,
    /// never one of the first round (its own task fetches it) nor one already taken.
    #[test]
    fn in_rounds_reads_every_index_once_on_several_tasks() {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(3)
            .build()
            .unwrap();
        let prepared = Mutex::new(vec![]);
        let read = Mutex::new(vec![]);
        let got = pool.install(|| {
            in_rounds(
                10,
                3,
                |j| prepared.lock().unwrap().push(j),
                |i, ahead| {
                    read.lock().unwrap().push(i);
                    ahead();
                    i
                },
            )
        });
        assert_eq!(got, (0..10).map(Some).collect::<Vec<_>>());
        let mut r = read.into_inner().unwrap();
        r.sort();
        assert_eq!(r, (0..10).collect::<Vec<_>>());
        let mut p = prepared.into_inner().unwrap();
        p.sort();
        let n = p.len();
        p.dedup();
        assert_eq!(p.len(), n, "prepared at most once: {p:?}");
        assert!(p.iter().all(|&j| (3..10).contains(&j)), "{p:?}");
        assert!(in_rounds(0, 2, |_| {}, |i, _| i).is_empty());
    }
}
