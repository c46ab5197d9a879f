//! The key-value file reader: the files of one bucket read as sorted runs of KV batches.
//!
//! A sorted run is a lazy chain of its files ([`FileChain`]), each file a lazy Parquet reader
//! whose columns are found by field id under the names of the schema that wrote it and cast to
//! the current schema's types ([`conform`]); rows a deletion vector marks are dropped
//! ([`with_deletions`]). What to decode is a [`ColumnPlan`]; batches are verified against the
//! file's manifest entry as they are decoded ([`verify_batch`]).
//!
//! Used by the table read (`read::table_read`, projected columns) and by compaction
//! ([`KvFileReader`]: every column of the KV file layout).

use std::collections::{BTreeMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, Int64Type, Int8Type};
use arrow_array::{new_null_array, ArrayRef, RecordBatch};
use arrow_ord::ord::{make_comparator, DynComparator};
use arrow_schema::SortOptions;
use arrow_schema::{DataType as ArrowType, Field, Schema, SchemaRef};
use std::cmp::Ordering;

use super::{KEY_PREFIX, SEQUENCE_NUMBER, VALUE_KIND};
use crate::error::{Error, Result};
use crate::io::data_file::{DataFileReader, FileExpect};
use crate::io::format::{open_data_file, open_data_file_rows, open_data_file_selected};
use crate::merge::{BatchIter, KvLayout};
use crate::read::deletion::{DeletionFile, DeletionFilter};
use crate::read::evolution::{conform_physical, evolve_array, field_by_id, same_type, SchemaCache};
use crate::spec::binary_row::{datum_from_arrow, deserialize_row};
use crate::spec::datum::{compare_rows, Datum};
use crate::spec::manifest::DataFileMeta;
use crate::spec::row_kind::RowKind;
use crate::spec::types::DataType;
use crate::table::FileStoreTable;

/// Rows per decoded Parquet batch (per run of a merge: the unit of its memory bound).
pub(crate) const READ_BATCH_ROWS: usize = 16 * 1024;

/// Decoded bytes a batch of a raw read (no merge: one batch in memory at a time) aims at.
const RAW_BATCH_BYTES: u64 = 8 << 20;

/// Most rows per batch of a raw read.
const RAW_BATCH_MAX_ROWS: usize = 128 * 1024;

/// Rows per batch of a raw read of `files`: about [`RAW_BATCH_BYTES`] decoded (estimated at
/// three times the on-disk bytes per row of the widest file), between [`READ_BATCH_ROWS`] and
/// [`RAW_BATCH_MAX_ROWS`]. Larger batches than a merge's cost the same memory (a raw read
/// holds one batch, a merge one per run) and much less per batch downstream: a consumer such
/// as Spark's Arrow hop (`paimon_rs.spark.read`) pays per batch (measured on 10M rows: 16K-row
/// batches took 1.3-1.5x the CPU of 64K-row ones in the JVM and the Python worker).
pub(crate) fn raw_batch_rows<'a>(files: impl IntoIterator<Item = &'a DataFileMeta>) -> usize {
    let widest = files
        .into_iter()
        .filter(|f| f.row_count > 0)
        .map(|f| (f.file_size.max(0) as u64).div_ceil(f.row_count as u64))
        .max()
        .unwrap_or(0);
    if widest == 0 {
        return READ_BATCH_ROWS;
    }
    let rows = RAW_BATCH_BYTES / (3 * widest);
    (rows as usize).clamp(READ_BATCH_ROWS, RAW_BATCH_MAX_ROWS)
}

/// A file column to decode: name (in the current schema), target Arrow type, whether a file may
/// lack it (a value column added by a later schema reads as nulls), and the table field it
/// holds (None: a system column, found by name).
#[derive(Debug, Clone)]
pub(crate) struct Wanted {
    pub(crate) name: String,
    pub(crate) dtype: ArrowType,
    pub(crate) nullable_ok: bool,
    pub(crate) field: Option<WantedField>,
}

/// A table field to find in a data file by its id: under the name the file's schema gives it
/// (`_KEY_` + name for a key column), cast from the file's type.
#[derive(Debug, Clone)]
pub(crate) struct WantedField {
    pub(crate) id: i32,
    pub(crate) key: bool,
    pub(crate) data_type: DataType,
}

/// Where each wanted column is in one data file: (file column name, (file type, table type)
/// for a table field), None if the file's schema lacks the field.
pub(crate) type FileColumns = Vec<Option<(String, Option<(DataType, DataType)>)>>;

/// What to decode from each file of a split, and where each needed table column is found in the
/// (merged) batches.
pub(crate) struct ColumnPlan {
    pub(crate) wanted: Vec<Wanted>,
    pub(crate) schema: SchemaRef,
    /// For each entry of `ReadCtx::needed`: its column index in the decoded batch.
    pub(crate) needed_at: Vec<usize>,
    /// Column of `_VALUE_KIND` when retractions must be dropped here (raw primary-key reads;
    /// a merge drops them itself).
    pub(crate) drop_retract_at: Option<usize>,
    /// What the decoded columns let us verify against the manifest (see [`FileCheck`]).
    pub(crate) check: CheckPlan,
    /// Data file schemas (None: columns are matched by name, for tests without a table).
    pub(crate) schemas: Option<Arc<SchemaCache>>,
}

/// Decoded columns a file is verified by: the trimmed primary key (the first `key_types.len()`
/// columns, merge reads only), `_SEQUENCE_NUMBER` and `_VALUE_KIND` (primary-key files).
#[derive(Debug, Clone, Default)]
pub(crate) struct CheckPlan {
    pub(crate) key_types: Vec<DataType>,
    pub(crate) seq_at: Option<usize>,
    pub(crate) kind_at: Option<usize>,
}

impl ColumnPlan {
    pub(crate) fn new(
        wanted: Vec<Wanted>,
        needed_at: Vec<usize>,
        drop_retract_at: Option<usize>,
        check: CheckPlan,
    ) -> Self {
        let schema = Arc::new(Schema::new(
            wanted
                .iter()
                .map(|w| Field::new(&w.name, w.dtype.clone(), true))
                .collect::<Vec<_>>(),
        ));
        ColumnPlan {
            wanted,
            schema,
            needed_at,
            drop_retract_at,
            check,
            schemas: None,
        }
    }

    /// The columns of a data file written with schema `schema_id` that hold the wanted ones:
    /// matched by field id, named as in that schema (Java's `SchemaEvolutionUtil`).
    pub(crate) fn file_columns(&self, schema_id: i64) -> Result<FileColumns> {
        let file_schema = match &self.schemas {
            Some(c) => Some(c.get(schema_id)?),
            None => None,
        };
        Ok(self
            .wanted
            .iter()
            .map(|w| match (&w.field, &file_schema) {
                (Some(f), Some(fs)) => field_by_id(fs, f.id).map(|ff| {
                    let prefix = if f.key { KEY_PREFIX } else { "" };
                    (
                        format!("{prefix}{}", ff.name),
                        Some((ff.data_type.clone(), f.data_type.clone())),
                    )
                }),
                _ => Some((w.name.clone(), None)),
            })
            .collect())
    }
}

/// Where the data file `f` of the bucket directory `dir` is: its external path, if it has one.
pub(crate) fn file_path(dir: &Path, f: &DataFileMeta) -> PathBuf {
    match &f.external_path {
        Some(p) => crate::io::external_file(p),
        None => dir.join(&f.file_name),
    }
}

/// The directory of the data file `f` of the bucket directory `dir`, where its extra files
/// (`<data file>.index`) are (Java's `DataFilePathFactory.toAlignedPath`).
pub(crate) fn file_dir(dir: &Path, f: &DataFileMeta) -> PathBuf {
    match &f.external_path {
        Some(p) => crate::io::external_file(p)
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default(),
        None => dir.to_path_buf(),
    }
}

/// Files read one after the other (lazily, as `FileChain`), each without the rows its deletion
/// vector marks (deletion-vector tables); `raw`: nothing else is in memory (no merge), so the
/// batches are [`raw_batch_rows`] large.
pub(crate) fn with_deletions(
    root: &Path,
    dir: &Path,
    files: &[DataFileMeta],
    dvs: &Arc<std::collections::BTreeMap<String, DeletionFile>>,
    memory: Option<&std::collections::BTreeMap<String, roaring::RoaringBitmap>>,
    plan: &Arc<ColumnPlan>,
    raw: bool,
) -> BatchIter {
    with_deletions_of_rows(
        root,
        dir,
        files,
        dvs,
        memory,
        &Default::default(),
        plan,
        raw,
    )
}

/// [`with_deletions`], the files named in `slices` read in part (the rows at positions
/// `[begin, end)`, `Split::row_slices`).
#[allow(clippy::too_many_arguments)]
pub(crate) fn with_deletions_of_rows(
    root: &Path,
    dir: &Path,
    files: &[DataFileMeta],
    dvs: &Arc<std::collections::BTreeMap<String, DeletionFile>>,
    memory: Option<&std::collections::BTreeMap<String, roaring::RoaringBitmap>>,
    slices: &std::collections::BTreeMap<String, (i64, i64)>,
    plan: &Arc<ColumnPlan>,
    raw: bool,
) -> BatchIter {
    let streams: Vec<BatchIter> = files
        .iter()
        .map(|f| -> BatchIter {
            let (begin, end) = crate::read::split::part_of(slices, f);
            let chain = file_rows(file_path(dir, f), f, plan, raw, (begin, end));
            let memory = memory.and_then(|m| m.get(&f.file_name));
            DeletionFilter::over(chain, root, f, dvs.get(&f.file_name), memory, (begin, end))
        })
        .collect();
    Box::new(streams.into_iter().flatten())
}

/// The rows at positions `[begin, end)` of the file `f` at `path` (`raw`: [`FileChain::raw`]'s
/// batches): the whole file's chain, or one reading only that part ([`FileChain::part`]).
pub(crate) fn file_rows(
    path: PathBuf,
    f: &DataFileMeta,
    plan: &Arc<ColumnPlan>,
    raw: bool,
    (begin, end): (u64, u64),
) -> BatchIter {
    let one = VecDeque::from([(path, f.clone())]);
    let batch_rows = match raw {
        true => raw_batch_rows([f]),
        false => READ_BATCH_ROWS,
    };
    let part = ((begin, end) != (0, f.row_count.max(0) as u64)).then_some((begin, end));
    Box::new(FileChain::build(one, plan.clone(), batch_rows, part))
}

/// A sorted run (or a raw split): its files read one after the other, each opened only when the
/// previous one is exhausted, decoded batch by batch, and verified against what the manifest
/// records of it (see [`verify_batch`]).
pub(crate) struct FileChain {
    files: VecDeque<(PathBuf, DataFileMeta)>,
    cur: Option<OpenFile>,
    plan: Arc<ColumnPlan>,
    /// The run's last key so far (1-row arrays): the next key, in this file or in the next
    /// file of the run, must be greater.
    last_key: Option<Vec<ArrayRef>>,
    /// On an object store, the next file being opened (its footer and projected column chunks
    /// fetched) on another thread while this one is decoded.
    next: Option<Prefetch>,
    /// Rows per decoded batch.
    batch_rows: usize,
    /// A chain of one file read in part: the rows at positions `[begin, end)` only (a Parquet
    /// file is read from the page holding `begin`, another from its start; each cut here).
    part: Option<(u64, u64)>,
    /// A chain of one file read at these positions only (a bitmap index's selection,
    /// [`FileChain::selected`]): the rows come without their positions.
    selection: Option<Arc<roaring::RoaringBitmap>>,
}

/// The open file's columns, its reader, the position of the first row the reader yields and
/// the count its rows reach at the file's end (the file's row count; of a selection, its size).
type Opened = Result<(FileColumns, DataFileReader, u64, u64)>;

/// A file of the chain opened ahead, and the memory it holds against [`PREFETCH_BUDGET`].
struct Prefetch {
    path: PathBuf,
    meta: DataFileMeta,
    rx: std::sync::mpsc::Receiver<Opened>,
    _budget: Budget,
}

/// Bytes of data files being opened ahead (all chains of the process): a file is opened ahead
/// only while the total stays under this.
const PREFETCH_BUDGET: u64 = 512 << 20;
static PREFETCH_BYTES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// `n` bytes of [`PREFETCH_BUDGET`], given back when dropped.
struct Budget(u64);

impl Budget {
    fn take(n: u64) -> Option<Budget> {
        use std::sync::atomic::Ordering::SeqCst;
        PREFETCH_BYTES
            .fetch_update(SeqCst, SeqCst, |cur| {
                (cur + n <= PREFETCH_BUDGET).then_some(cur + n)
            })
            .ok()
            .map(|_| Budget(n))
    }
}

impl Drop for Budget {
    fn drop(&mut self) {
        PREFETCH_BYTES.fetch_sub(self.0, std::sync::atomic::Ordering::SeqCst);
    }
}

/// Open `path` (a file of `plan`'s chain) for its planned columns (`part`: the rows at
/// those positions; `selection`: the rows at its positions, where the format can skip the
/// others), checked against `meta`.
fn open_file(
    plan: &ColumnPlan,
    path: &Path,
    meta: &DataFileMeta,
    batch_rows: usize,
    part: Option<(u64, u64)>,
    selection: Option<&roaring::RoaringBitmap>,
) -> Opened {
    let expect = Some(FileExpect {
        size: meta.file_size.max(0) as u64,
        rows: meta.row_count.max(0) as u64,
    });
    let cols = plan.file_columns(meta.schema_id)?;
    let names: Vec<String> = cols.iter().flatten().map(|(n, _)| n.clone()).collect();
    let all = meta.row_count.max(0) as u64;
    if let Some(s) = selection {
        if let Some(r) = open_data_file_selected(path, Some(&names), batch_rows, expect, s)? {
            crate::fileindex::count_selected(s.len(), all);
            return Ok((cols, r, 0, s.len()));
        }
    }
    let (r, first) = match part {
        Some(rows) => open_data_file_rows(path, Some(&names), batch_rows, expect, rows)?,
        None => (open_data_file(path, Some(&names), batch_rows, expect)?, 0),
    };
    Ok((cols, r, first, all))
}

struct OpenFile {
    path: PathBuf,
    meta: DataFileMeta,
    /// Where the wanted columns are in this file (by field id, under its schema's names).
    cols: FileColumns,
    reader: DataFileReader,
    /// Rows decoded so far.
    rows: u64,
    /// What `rows` reaches at the reader's end (see [`Opened`]).
    end: u64,
}

impl FileChain {
    pub(crate) fn new(files: VecDeque<(PathBuf, DataFileMeta)>, plan: Arc<ColumnPlan>) -> Self {
        Self::build(files, plan, READ_BATCH_ROWS, None)
    }

    /// A chain read with nothing else in memory (no merge): batches of [`raw_batch_rows`].
    pub(crate) fn raw(files: VecDeque<(PathBuf, DataFileMeta)>, plan: Arc<ColumnPlan>) -> Self {
        let batch_rows = raw_batch_rows(files.iter().map(|(_, m)| m));
        Self::build(files, plan, batch_rows, None)
    }

    /// The raw chain of the file `meta` at `path` reading only the rows at the positions
    /// `selection` holds (a bitmap index's selection: `crate::fileindex::row_selection`) where
    /// its format can skip the others (Parquet), the whole file otherwise. The rows come
    /// without their positions: not for reads that need them (deletion vectors, row ids).
    pub(crate) fn selected(
        path: PathBuf,
        meta: DataFileMeta,
        plan: Arc<ColumnPlan>,
        selection: roaring::RoaringBitmap,
    ) -> Self {
        let batch_rows = raw_batch_rows([&meta]);
        let files = VecDeque::from([(path, meta)]);
        Self::build_with(files, plan, batch_rows, None, Some(Arc::new(selection)))
    }

    /// `part`: only with one file (see [`FileChain::part`]).
    fn build(
        files: VecDeque<(PathBuf, DataFileMeta)>,
        plan: Arc<ColumnPlan>,
        batch_rows: usize,
        part: Option<(u64, u64)>,
    ) -> Self {
        Self::build_with(files, plan, batch_rows, part, None)
    }

    /// `part` and `selection`: only with one file.
    fn build_with(
        files: VecDeque<(PathBuf, DataFileMeta)>,
        plan: Arc<ColumnPlan>,
        batch_rows: usize,
        part: Option<(u64, u64)>,
        selection: Option<Arc<roaring::RoaringBitmap>>,
    ) -> Self {
        debug_assert!(part.is_none() || files.len() == 1);
        let mut chain = FileChain {
            files,
            cur: None,
            plan,
            last_key: None,
            next: None,
            batch_rows,
            part,
            selection,
        };
        // the first file of every run of a merge starts coming at once
        chain.open_ahead();
        chain
    }

    /// On an object store, start opening the chain's next file on another thread (within
    /// [`PREFETCH_BUDGET`]); local files are opened when reached, as before.
    fn open_ahead(&mut self) {
        if self.next.is_some() {
            return;
        }
        let Some((path, meta)) = self.files.front() else {
            return;
        };
        if !crate::io::is_remote(path) {
            return;
        }
        let Some(budget) = Budget::take(meta.file_size.max(0) as u64) else {
            return;
        };
        let Some((path, meta)) = self.files.pop_front() else {
            return;
        };
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        let (plan, p, m, rows, part, sel) = (
            self.plan.clone(),
            path.clone(),
            meta.clone(),
            self.batch_rows,
            self.part,
            self.selection.clone(),
        );
        let spawned = std::thread::Builder::new()
            .name("paimon-rs-open".into())
            .spawn(move || {
                let _ = tx.send(open_file(&plan, &p, &m, rows, part, sel.as_deref()));
            });
        match spawned {
            Ok(_) => {
                self.next = Some(Prefetch {
                    path,
                    meta,
                    rx,
                    _budget: budget,
                })
            }
            // no thread to spare: open it when it is reached
            Err(_) => self.files.push_front((path, meta)),
        }
    }

    /// The open file's next batch, conformed and verified; `None` at its end (verified too).
    fn next_of_file(&mut self) -> Option<Result<RecordBatch>> {
        let f = self.cur.as_mut()?;
        match f.reader.next() {
            Some(Ok(b)) => Some(conform(&f.path, &self.plan, &f.cols, b).and_then(|b| {
                verify_batch(&self.plan.check, &mut self.last_key, f, &b)?;
                Ok(b)
            })),
            Some(Err(e)) => Some(Err(e)),
            None => verify_end(&self.plan.check, self.last_key.as_deref(), f)
                .err()
                .map(Err),
        }
    }
}

impl Iterator for FileChain {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if self.cur.is_none() {
                let (path, meta, opened) = match self.next.take() {
                    Some(p) => {
                        let opened = p.rx.recv().unwrap_or_else(|_| {
                            Err(Error::Internal(format!(
                                "opening {} ahead: the thread ended without a result",
                                p.path.display()
                            )))
                        });
                        (p.path, p.meta, opened)
                    }
                    None => {
                        let (path, meta) = self.files.pop_front()?;
                        let opened = open_file(
                            &self.plan,
                            &path,
                            &meta,
                            self.batch_rows,
                            self.part,
                            self.selection.as_deref(),
                        );
                        (path, meta, opened)
                    }
                };
                // the next file comes while this one is decoded
                self.open_ahead();
                match opened {
                    Ok((cols, reader, first, end)) => {
                        self.cur = Some(OpenFile {
                            path,
                            meta,
                            cols,
                            reader,
                            rows: first,
                            end,
                        })
                    }
                    Err(e) => {
                        self.files.clear();
                        self.next = None;
                        return Some(Err(e));
                    }
                }
            }
            if let (Some((_, end)), Some(f)) = (self.part, &self.cur) {
                if f.rows >= end {
                    // the part is read: the rest of the file is not decoded
                    self.cur = None;
                    self.files.clear();
                    return None;
                }
            }
            match self.next_of_file() {
                Some(Ok(b)) => match self.part {
                    None => return Some(Ok(b)),
                    Some((begin, end)) => {
                        // the batch's rows are at positions [at, to) of the file
                        let to = self.cur.as_ref().map_or(0, |f| f.rows);
                        let at = to.saturating_sub(b.num_rows() as u64);
                        let (lo, hi) = (begin.max(at), end.min(to));
                        if lo < hi {
                            return Some(Ok(b.slice((lo - at) as usize, (hi - lo) as usize)));
                        }
                    }
                },
                Some(Err(e)) => {
                    self.cur = None;
                    self.files.clear();
                    self.next = None;
                    return Some(Err(e));
                }
                None => self.cur = None,
            }
        }
    }
}

/// Verify a decoded batch of `f` against its manifest entry, cheaply (one pass over columns
/// already decoded, no extra I/O): `_VALUE_KIND` holds row kinds, `_SEQUENCE_NUMBER` lies in
/// the file's recorded sequence range, and (merge reads, which decode the key) keys strictly
/// increase within the file and across the files of its sorted run, the file's first key being
/// its recorded `min_key`. A difference is a [`Error::CorruptFile`] naming the file and row.
fn verify_batch(
    check: &CheckPlan,
    last_key: &mut Option<Vec<ArrayRef>>,
    f: &mut OpenFile,
    b: &RecordBatch,
) -> Result<()> {
    let first_row = f.rows;
    f.rows += b.num_rows() as u64;
    let n = b.num_rows();
    if n == 0 {
        return Ok(());
    }
    let corrupt = |msg: String| Error::corrupt(f.path.as_path(), msg);
    if let Some(k) = check.kind_at {
        let kinds = b.column(k).as_primitive::<Int8Type>().values();
        if let Some(i) = kinds.iter().position(|&v| RowKind::from_byte(v).is_none()) {
            return Err(corrupt(format!(
                "row {}: _VALUE_KIND {} is not a row kind",
                first_row + i as u64,
                kinds[i]
            )));
        }
    }
    if let Some(s) = check.seq_at {
        let seq = b.column(s).as_primitive::<Int64Type>().values();
        let (lo, hi) = (f.meta.min_sequence_number, f.meta.max_sequence_number);
        let (min, max) = seq
            .iter()
            .fold((i64::MAX, i64::MIN), |(a, b), &v| (a.min(v), b.max(v)));
        if min < lo || max > hi {
            let i = seq.iter().position(|v| !(lo..=hi).contains(v)).unwrap_or(0);
            return Err(corrupt(format!(
                "row {}: _SEQUENCE_NUMBER {} is outside the range the manifest records \
                 [{lo}, {hi}]",
                first_row + i as u64,
                seq[i]
            )));
        }
    }
    let nk = check.key_types.len();
    if nk == 0 {
        return Ok(());
    }
    let keys = &b.columns()[..nk];
    if first_row == 0 {
        let first = key_datums(keys, 0, &check.key_types)?;
        let min = deserialize_row(&check.key_types, &f.meta.min_key)?;
        // A bound, not an equality: Java's compaction output can record a wider range than the
        // keys it kept (seen on dynamic-bucket tables written and compacted by Java 1.0).
        if compare_rows(&first, &min) == Ordering::Less {
            return Err(corrupt(format!(
                "key range: the first key {first:?} is below the min_key {min:?} the manifest \
                 records"
            )));
        }
    }
    if let Some(i) = first_unordered(last_key.as_deref(), keys)? {
        let row = first_row + i as u64;
        return Err(corrupt(if row == 0 {
            "key order: the first key is not greater than the last key of the previous file \
             of its sorted run"
                .to_string()
        } else {
            format!("key order: the key at row {row} is not greater than the one before it")
        }));
    }
    *last_key = Some(keys.iter().map(|c| c.slice(n - 1, 1)).collect());
    Ok(())
}

/// At the end of file `f`: as many rows as the manifest records, and (merge reads) the last key
/// being its recorded `max_key`.
fn verify_end(check: &CheckPlan, last_key: Option<&[ArrayRef]>, f: &OpenFile) -> Result<()> {
    let corrupt = |msg: String| Error::corrupt(f.path.as_path(), msg);
    if f.rows != f.end {
        return Err(corrupt(format!(
            "row count: {} rows decoded, the manifest records {}{}",
            f.rows,
            f.meta.row_count,
            if f.end != f.meta.row_count.max(0) as u64 {
                format!(" ({} selected by its bitmap index)", f.end)
            } else {
                String::new()
            }
        )));
    }
    if let (false, Some(keys), true) = (check.key_types.is_empty(), last_key, f.rows > 0) {
        let last = key_datums(keys, 0, &check.key_types)?;
        let max = deserialize_row(&check.key_types, &f.meta.max_key)?;
        if compare_rows(&last, &max) == Ordering::Greater {
            return Err(corrupt(format!(
                "key range: the last key {last:?} is above the max_key {max:?} the manifest records"
            )));
        }
    }
    Ok(())
}

fn key_datums(keys: &[ArrayRef], row: usize, types: &[DataType]) -> Result<Vec<Option<Datum>>> {
    keys.iter()
        .zip(types)
        .map(|(c, t)| datum_from_arrow(c.as_ref(), row, t))
        .collect()
}

/// The first row `i` whose key is not greater than the key before it (for row 0: than `prev`,
/// the run's last key so far), in the order the merge compares keys (arrow-row order: numbers
/// by value, floats by total order, strings and binaries by bytes).
fn first_unordered(prev: Option<&[ArrayRef]>, keys: &[ArrayRef]) -> Result<Option<usize>> {
    let opts = SortOptions::default();
    if let Some(p) = prev {
        let cmps = p
            .iter()
            .zip(keys)
            .map(|(a, b)| make_comparator(a.as_ref(), b.as_ref(), opts))
            .collect::<std::result::Result<Vec<_>, _>>()?;
        if lexicographic(&cmps, 0, 0) != Ordering::Less {
            return Ok(Some(0));
        }
    }
    let n = keys[0].len();
    if let [k] = keys {
        // the common single integer key: one vectorisable pass
        if let (Some(a), 0) = (k.as_primitive_opt::<Int64Type>(), k.null_count()) {
            return Ok(a
                .values()
                .windows(2)
                .position(|w| w[0] >= w[1])
                .map(|i| i + 1));
        }
        if let (Some(a), 0) = (k.as_primitive_opt::<Int32Type>(), k.null_count()) {
            return Ok(a
                .values()
                .windows(2)
                .position(|w| w[0] >= w[1])
                .map(|i| i + 1));
        }
    }
    let cmps = keys
        .iter()
        .map(|c| make_comparator(c.as_ref(), c.as_ref(), opts))
        .collect::<std::result::Result<Vec<_>, _>>()?;
    Ok((1..n).find(|&i| lexicographic(&cmps, i - 1, i) != Ordering::Less))
}

fn lexicographic(cmps: &[DynComparator], a: usize, b: usize) -> Ordering {
    for c in cmps {
        match c(a, b) {
            Ordering::Equal => continue,
            o => return o,
        }
    }
    Ordering::Equal
}

/// A decoded batch in the plan's columns and types: each column found by field id under the
/// file schema's name and cast from the file's type; a value column the file's schema lacks
/// (added by a later schema) reads as nulls.
fn conform(
    path: &Path,
    plan: &ColumnPlan,
    file_cols: &FileColumns,
    b: RecordBatch,
) -> Result<RecordBatch> {
    let file_schema = b.schema();
    let rows = b.num_rows();
    let mut cols = Vec::with_capacity(plan.wanted.len());
    for (w, src) in plan.wanted.iter().zip(file_cols) {
        let found = src
            .as_ref()
            .and_then(|(name, types)| Some((name, types, file_schema.index_of(name).ok()?)));
        let col: ArrayRef = match found {
            Some((name, types, i)) => {
                let c = b.column(i);
                if crate::read::evolution::is_shredded_variant(c, &w.dtype) {
                    return Err(Error::unsupported(format!(
                        "data file {}: column '{name}' (table column '{}') is a shredded VARIANT \
                         (written with 'variant.shreddingSchema'): paimon_rs reads unshredded \
                         VARIANT columns only",
                        path.display(),
                        w.name
                    )));
                }
                let converted = match types {
                    Some((from, to)) => evolve_array(c, from, to, &w.dtype),
                    None => conform_physical(c, &w.dtype),
                };
                converted.map_err(|e| {
                    let msg = format!(
                        "column '{name}' (table column '{}') of type {} cannot be read as {}: {e}",
                        w.name,
                        c.data_type(),
                        w.dtype
                    );
                    match types {
                        Some((from, to)) if !same_type(from, to) => Error::unsupported(format!(
                            "schema evolution of data file {}: {msg}",
                            path.display()
                        )),
                        _ => Error::corrupt(path, msg),
                    }
                })?
            }
            None if w.nullable_ok || rows == 0 => new_null_array(&w.dtype, rows),
            None => {
                let name = src.as_ref().map_or(w.name.as_str(), |(n, _)| n.as_str());
                return Err(Error::corrupt(path, format!("missing column '{name}'")));
            }
        };
        cols.push(col);
    }
    RecordBatch::try_new(plan.schema.clone(), cols).map_err(|e| Error::corrupt(path, e.to_string()))
}

/// What a [`column_plan`] decodes: the table, the data file schemas, and the table columns
/// (indices into its fields) the caller needs.
pub(crate) struct PlanInput<'a> {
    pub table: &'a FileStoreTable,
    pub schemas: &'a Arc<SchemaCache>,
    pub needed: &'a [usize],
    /// Columns the merge engine reads by name (`MergeEngine::required_fields`).
    pub required: &'a [String],
    /// A primary-key table.
    pub pk: bool,
    /// Key-value layout (keys, sequence, kind, values) for a merge.
    pub merge: bool,
    /// Every needed column decoded as a value column of its own, primary-key columns too (the
    /// KV file layout compaction rewrites); else a key column's values are the `_KEY_` column.
    pub own_key_values: bool,
}

/// Columns to decode for a split. `merge`: key-value layout (keys, sequence, kind, then the
/// non-key needed values); raw primary-key read: kind then needed; append table: needed.
pub(crate) fn column_plan(input: PlanInput<'_>, key_names: &[String]) -> Result<ColumnPlan> {
    let PlanInput {
        table,
        schemas,
        needed,
        required,
        pk,
        merge,
        own_key_values,
    } = input;
    let fields = &table.schema.fields;
    let mut wanted: Vec<Wanted> = vec![];
    let mut key_at: Vec<(usize, usize)> = vec![]; // (table field, key column)
    let mut kind_at = None;
    if merge {
        for k in key_names {
            let i = table
                .schema
                .field_index(k)
                .ok_or_else(|| Error::Internal(format!("primary key '{k}' not in schema")))?;
            key_at.push((i, wanted.len()));
            wanted.push(Wanted {
                name: format!("{KEY_PREFIX}{k}"),
                dtype: fields[i].data_type.to_arrow(),
                nullable_ok: false,
                field: Some(WantedField {
                    id: fields[i].id,
                    key: true,
                    data_type: fields[i].data_type.clone(),
                }),
            });
        }
        wanted.push(Wanted {
            name: SEQUENCE_NUMBER.into(),
            dtype: ArrowType::Int64,
            nullable_ok: false,
            field: None,
        });
    }
    if pk {
        kind_at = Some(wanted.len());
        wanted.push(Wanted {
            name: VALUE_KIND.into(),
            dtype: ArrowType::Int8,
            nullable_ok: false,
            field: None,
        });
    }
    let mut needed_at = Vec::with_capacity(needed.len());
    for &i in needed {
        let f = &fields[i];
        // a key column's values are the `_KEY_` column's (unless the engine merges it as a
        // value column: then it must be in the merge input by name)
        if let Some(&(_, at)) = key_at.iter().find(|(k, _)| *k == i) {
            if !own_key_values && !required.contains(&f.name) {
                needed_at.push(at);
                continue;
            }
        }
        needed_at.push(wanted.len());
        wanted.push(Wanted {
            name: f.name.clone(),
            dtype: f.data_type.to_arrow(),
            nullable_ok: true,
            field: Some(WantedField {
                id: f.id,
                key: false,
                data_type: f.data_type.clone(),
            }),
        });
    }
    let drop_retract_at = if merge { None } else { kind_at };
    let check = CheckPlan {
        key_types: if merge {
            table.schema.types_of(key_names)?
        } else {
            vec![]
        },
        seq_at: merge.then_some(key_names.len()),
        kind_at,
    };
    let mut plan = ColumnPlan::new(wanted, needed_at, drop_retract_at, check);
    plan.schemas = Some(schemas.clone());
    Ok(plan)
}

/// Reads the data files of one bucket of a primary-key table as sorted runs of KV batches in
/// the KV file layout: `_KEY_*` (trimmed primary key), `_SEQUENCE_NUMBER`, `_VALUE_KIND`, then
/// every table column (current schema: files of older schemas are evolved by field id). Each
/// batch is verified against its file's manifest entry. This is what a compaction task merges
/// (with [`crate::merge::merge_sorted_runs`]) and writes back through a rolling writer made
/// from [`super::file_context`].
#[derive(Clone)]
pub struct KvFileReader {
    table_path: PathBuf,
    plan: Arc<ColumnPlan>,
    layout: KvLayout,
}

impl KvFileReader {
    /// A reader of `table`'s KV files (a primary-key table).
    pub fn new(table: &FileStoreTable) -> Result<Self> {
        if !table.is_primary_key() {
            return Err(Error::invalid(format!(
                "table '{}' has no primary key: its files are not key-value files",
                table.name
            )));
        }
        let key_names = table.trimmed_primary_keys();
        let schemas = Arc::new(SchemaCache::new(table.meta_path(), &table.schema));
        let needed: Vec<usize> = (0..table.schema.fields.len()).collect();
        let plan = column_plan(
            PlanInput {
                table,
                schemas: &schemas,
                needed: &needed,
                required: &[],
                pk: true,
                merge: true,
                own_key_values: true,
            },
            &key_names,
        )
        .map_err(|e| e.with_table(&table.name))?;
        Ok(KvFileReader {
            table_path: table.path.clone(),
            plan: Arc::new(plan),
            layout: KvLayout {
                num_keys: key_names.len(),
            },
        })
    }

    /// Schema of the batches (in-memory Arrow types, the layout of
    /// `kv_arrow_schema(table, false)`).
    pub fn schema(&self) -> SchemaRef {
        self.plan.schema.clone()
    }

    /// Where key, sequence, kind and values are in the batches.
    pub fn layout(&self) -> KvLayout {
        self.layout
    }

    /// One sorted run: its files (key order, non-overlapping) read lazily one after the other,
    /// from the bucket directory `bucket_dir` (absolute, or relative to the table: e.g.
    /// `dt=1/bucket-0`), without the rows `deletion_files` (by file name) mark deleted.
    pub fn read_run(
        &self,
        bucket_dir: &Path,
        run: &[DataFileMeta],
        deletion_files: &BTreeMap<String, DeletionFile>,
    ) -> BatchIter {
        let dir = crate::io::resolve(&self.table_path, bucket_dir);
        if deletion_files.is_empty() {
            let files = run
                .iter()
                .map(|f| (file_path(&dir, f), f.clone()))
                .collect();
            return Box::new(FileChain::new(files, self.plan.clone()));
        }
        with_deletions(
            &self.table_path,
            &dir,
            run,
            &Arc::new(deletion_files.clone()),
            None,
            &self.plan,
            false,
        )
    }

    /// Sorted runs as [`Self::read_runs`], each file's rows that `vectors` (data file name →
    /// deleted row positions, held in memory: a writer's deletion vectors with its pending
    /// marks) removes left out.
    pub fn read_runs_with_vectors(
        &self,
        bucket_dir: &Path,
        runs: &[Vec<DataFileMeta>],
        vectors: &Arc<BTreeMap<String, roaring::RoaringBitmap>>,
    ) -> Vec<BatchIter> {
        if vectors.is_empty() {
            return self.read_runs(bucket_dir, runs, &BTreeMap::new());
        }
        let dir = crate::io::resolve(&self.table_path, bucket_dir);
        // the writer's vectors, applied as every read applies them (read/deletion.rs)
        let none = Arc::new(BTreeMap::new());
        runs.iter()
            .map(|run| {
                with_deletions(
                    &self.table_path,
                    &dir,
                    run,
                    &none,
                    Some(vectors.as_ref()),
                    &self.plan,
                    false,
                )
            })
            .collect()
    }

    /// Several sorted runs of one bucket (e.g. a compaction unit's, or one section of its
    /// interval partition), each as [`Self::read_run`], ready for
    /// [`crate::merge::merge_sorted_runs`].
    pub fn read_runs(
        &self,
        bucket_dir: &Path,
        runs: &[Vec<DataFileMeta>],
        deletion_files: &BTreeMap<String, DeletionFile>,
    ) -> Vec<BatchIter> {
        runs.iter()
            .map(|r| self.read_run(bucket_dir, r, deletion_files))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::parquet::{writer_properties, ParquetFileWriter};
    use crate::merge::reader::SortMergeReader;
    use crate::merge::MergeEngine;
    use crate::spec::binary_row::serialize_row;
    use crate::spec::manifest::SimpleStats;
    use crate::spec::types::TypeKind;
    use arrow_array::types::Int64Type;
    use arrow_array::{Int64Array, Int8Array};
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn kv_schema() -> SchemaRef {
        Arc::new(Schema::new(vec![
            Field::new("_KEY_id", ArrowType::Int64, false),
            Field::new("_SEQUENCE_NUMBER", ArrowType::Int64, false),
            Field::new("_VALUE_KIND", ArrowType::Int8, false),
            Field::new("id", ArrowType::Int64, false),
            Field::new("v", ArrowType::Int64, true),
        ]))
    }

    fn bigint() -> DataType {
        DataType::new(TypeKind::BigInt).not_null()
    }

    /// A data file of the given keys; sequence numbers `seq0..`, value = key * 10; kinds
    /// `kinds` (all +I if empty). Returns (path, what a manifest records of it).
    fn write_kv(path: &Path, keys: &[i64], seq0: i64, kinds: &[i8]) -> (PathBuf, DataFileMeta) {
        let n = keys.len();
        let k = Arc::new(Int64Array::from(keys.to_vec())) as ArrayRef;
        let kinds = if kinds.is_empty() {
            vec![0i8; n]
        } else {
            kinds.to_vec()
        };
        let b = RecordBatch::try_new(
            kv_schema(),
            vec![
                k.clone(),
                Arc::new(Int64Array::from_iter_values(seq0..seq0 + n as i64)),
                Arc::new(Int8Array::from(kinds)),
                k,
                Arc::new(Int64Array::from_iter_values(keys.iter().map(|x| x * 10))),
            ],
        )
        .unwrap();
        let props = writer_properties("zstd", 1, &[]).unwrap();
        let mut w = ParquetFileWriter::create(path.to_path_buf(), kv_schema(), props).unwrap();
        w.write(&b).unwrap();
        let size = w.close().unwrap();
        let key = |k: i64| serialize_row(&[bigint()], &[Some(Datum::BigInt(k))]).unwrap();
        let meta = DataFileMeta {
            file_name: path.file_name().unwrap().to_string_lossy().into_owned(),
            file_size: size as i64,
            row_count: n as i64,
            min_key: key(keys[0]),
            max_key: key(keys[n - 1]),
            key_stats: SimpleStats::empty(),
            value_stats: SimpleStats::empty(),
            min_sequence_number: seq0,
            max_sequence_number: seq0 + n as i64 - 1,
            schema_id: 0,
            level: 0,
            extra_files: vec![],
            creation_time: None,
            delete_row_count: None,
            embedded_index: None,
            file_source: None,
            value_stats_cols: None,
            external_path: None,
            first_row_id: None,
            write_cols: None,
            write_cols_sequences: None,
        };
        (path.to_path_buf(), meta)
    }

    /// A data file of the given (sorted) keys; sequence numbers `seq0..`, value = key * 10.
    fn write_file(path: &Path, keys: &[i64], seq0: i64) -> (PathBuf, DataFileMeta) {
        write_kv(path, keys, seq0, &[])
    }

    /// The plan of a merge read of `_KEY_id, _SEQUENCE_NUMBER, _VALUE_KIND, v`.
    fn plan() -> Arc<ColumnPlan> {
        let w = |n: &str, t: ArrowType, nullable_ok| Wanted {
            name: n.into(),
            dtype: t,
            nullable_ok,
            field: None,
        };
        Arc::new(ColumnPlan::new(
            vec![
                w("_KEY_id", ArrowType::Int64, false),
                w("_SEQUENCE_NUMBER", ArrowType::Int64, false),
                w("_VALUE_KIND", ArrowType::Int8, false),
                w("v", ArrowType::Int64, true),
            ],
            vec![0, 3],
            None,
            CheckPlan {
                key_types: vec![bigint()],
                seq_at: Some(1),
                kind_at: Some(2),
            },
        ))
    }

    /// A run that counts the batches pulled from it.
    struct Counting {
        inner: FileChain,
        pulled: Arc<AtomicUsize>,
    }

    impl Iterator for Counting {
        type Item = Result<RecordBatch>;
        fn next(&mut self) -> Option<Self::Item> {
            let b = self.inner.next();
            if b.is_some() {
                self.pulled.fetch_add(1, Ordering::SeqCst);
            }
            b
        }
    }

    /// Runs of several files each (interleaved keys: run r holds the keys = r mod K): the merge
    /// reads them lazily, holding at most about two decoded batches per run, never the split.
    #[test]
    fn merge_read_streams_runs_of_files_with_bounded_batches() {
        const K: usize = 3;
        const FILES: usize = 3;
        const PER_FILE: usize = 40_000; // 3 decoded batches of READ_BATCH_ROWS per file
        let dir = tempfile::tempdir().unwrap();
        let mut runs: Vec<BatchIter> = vec![];
        let mut counters = vec![];
        let mut seq = 0i64;
        for r in 0..K {
            let mut paths = VecDeque::new();
            for f in 0..FILES {
                let keys: Vec<i64> = (0..PER_FILE)
                    .map(|i| ((f * PER_FILE + i) * K + r) as i64)
                    .collect();
                let p = dir.path().join(format!("run{r}-file{f}.parquet"));
                paths.push_back(write_file(&p, &keys, seq));
                seq += PER_FILE as i64;
            }
            let pulled = Arc::new(AtomicUsize::new(0));
            counters.push(pulled.clone());
            runs.push(Box::new(Counting {
                inner: FileChain::new(paths, plan()),
                pulled,
            }));
        }
        let batches_per_run = FILES * PER_FILE.div_ceil(READ_BATCH_ROWS);
        let layout = KvLayout { num_keys: 1 };
        let mut m = SortMergeReader::new(runs, layout, &MergeEngine::Deduplicate, true)
            .unwrap()
            .unwrap();
        let (mut rows, mut last, mut max_held, mut outputs) = (0usize, -1i64, 0usize, 0usize);
        while let Some(b) = m.next() {
            let b = b.unwrap();
            outputs += 1;
            max_held = max_held.max(m.held_batches());
            assert!(m.held_batches() <= 2 * K + 2, "held {}", m.held_batches());
            // each run has been read only as far as the merge got (+ the current batch)
            for c in &counters {
                let pulled = c.load(Ordering::SeqCst);
                let needed = (rows + b.num_rows()) / K / READ_BATCH_ROWS + 2;
                assert!(pulled <= needed, "pulled {pulled} batches, needed {needed}");
            }
            let keys = b.column(0).as_primitive::<Int64Type>();
            for &k in keys.values() {
                assert_eq!(k, last + 1);
                last = k;
            }
            let v = b.column(3).as_primitive::<Int64Type>();
            assert_eq!(v.value(0), keys.value(0) * 10);
            rows += b.num_rows();
        }
        assert_eq!(rows, K * FILES * PER_FILE);
        assert!(outputs > batches_per_run, "output comes batch by batch");
        for c in &counters {
            assert_eq!(c.load(Ordering::SeqCst), batches_per_run);
        }
        assert!(max_held >= K);
    }

    /// A run's files are opened one after the other: a missing second file fails only once the
    /// first one has been read.
    #[test]
    fn file_chain_opens_files_lazily() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a.parquet");
        let a = write_file(&a, &(0..40_000).collect::<Vec<_>>(), 0);
        let missing = (dir.path().join("missing.parquet"), a.1.clone());
        let mut chain = FileChain::new(VecDeque::from(vec![a, missing]), plan());
        let mut rows = 0;
        for _ in 0..3 {
            rows += chain.next().unwrap().unwrap().num_rows();
        }
        assert_eq!(rows, 40_000);
        let e = chain.next().unwrap().unwrap_err().to_string();
        assert!(e.contains("missing.parquet"), "{e}");
        assert!(chain.next().is_none());
    }

    /// Read a run of files through the checks: the rows, or the first error's message.
    fn read_run(files: Vec<(PathBuf, DataFileMeta)>) -> std::result::Result<usize, String> {
        let mut rows = 0;
        for b in FileChain::new(files.into(), plan()) {
            rows += b.map_err(|e| e.to_string())?.num_rows();
        }
        Ok(rows)
    }

    fn expect_corrupt(files: Vec<(PathBuf, DataFileMeta)>, file: &str, what: &str) {
        let e = read_run(files).unwrap_err();
        assert!(e.contains("corrupt file") && e.contains(file), "{e}");
        assert!(e.contains(what), "{e}");
    }

    #[test]
    fn a_file_that_matches_its_manifest_entry_reads() {
        let dir = tempfile::tempdir().unwrap();
        let a = write_file(&dir.path().join("a.parquet"), &[1, 5, 9], 0);
        let b = write_file(&dir.path().join("b.parquet"), &[10, 20], 3);
        assert_eq!(read_run(vec![a, b]), Ok(5));
    }

    #[test]
    fn row_count_against_the_manifest() {
        let dir = tempfile::tempdir().unwrap();
        let (p, mut m) = write_file(&dir.path().join("a.parquet"), &[1, 2, 3], 0);
        m.row_count = 4;
        expect_corrupt(
            vec![(p, m)],
            "a.parquet",
            "row count: the footer records 3 rows (3 in its row groups), the manifest 4",
        );
    }

    #[test]
    fn file_size_against_the_manifest() {
        let dir = tempfile::tempdir().unwrap();
        let (p, mut m) = write_file(&dir.path().join("a.parquet"), &[1, 2, 3], 0);
        let real = m.file_size;
        m.file_size += 1;
        let want = format!("file is {real} bytes, the manifest records {}", real + 1);
        expect_corrupt(vec![(p, m)], "a.parquet", &want);
    }

    #[test]
    fn key_order_within_a_file() {
        let dir = tempfile::tempdir().unwrap();
        let a = write_file(&dir.path().join("a.parquet"), &[1, 5, 4, 9], 0);
        expect_corrupt(
            vec![a],
            "a.parquet",
            "key order: the key at row 2 is not greater than the one before it",
        );
        // a repeated key is out of order too: a data file holds each key once
        let b = write_file(&dir.path().join("b.parquet"), &[1, 5, 5, 9], 0);
        expect_corrupt(vec![b], "b.parquet", "key at row 2");
    }

    #[test]
    fn key_order_across_batches_and_files_of_a_run() {
        let dir = tempfile::tempdir().unwrap();
        // the break falls on the first row of the second decoded batch
        let mut keys: Vec<i64> = (0..READ_BATCH_ROWS as i64 + 10).collect();
        keys[READ_BATCH_ROWS] = 3;
        let a = write_file(&dir.path().join("a.parquet"), &keys, 0);
        let want = format!("key at row {READ_BATCH_ROWS} is not greater");
        expect_corrupt(vec![a], "a.parquet", &want);
        // files of a run overlap: the second file's first key is not past the first's last
        let a = write_file(&dir.path().join("c.parquet"), &[1, 2, 3], 0);
        let b = write_file(&dir.path().join("d.parquet"), &[3, 4], 3);
        expect_corrupt(
            vec![a, b],
            "d.parquet",
            "the first key is not greater than the last key of the previous file",
        );
    }

    #[test]
    fn composite_keys_are_checked_in_order() {
        let k = |a: &[i32], b: &[&str]| -> Vec<ArrayRef> {
            vec![
                Arc::new(arrow_array::Int32Array::from(a.to_vec())),
                Arc::new(arrow_array::StringArray::from(b.to_vec())),
            ]
        };
        let ok = k(&[1, 1, 2], &["b", "c", "a"]);
        assert_eq!(first_unordered(None, &ok).unwrap(), None);
        let bad = k(&[1, 1, 2], &["b", "b", "a"]);
        assert_eq!(first_unordered(None, &bad).unwrap(), Some(1));
        let prev = k(&[1], &["c"]);
        assert_eq!(first_unordered(Some(&prev), &ok).unwrap(), Some(0));
        let prev = k(&[0], &["z"]);
        assert_eq!(first_unordered(Some(&prev), &ok).unwrap(), None);
    }

    #[test]
    fn key_range_against_the_manifest() {
        let dir = tempfile::tempdir().unwrap();
        let key = |k: i64| serialize_row(&[bigint()], &[Some(Datum::BigInt(k))]).unwrap();
        let (p, mut m) = write_file(&dir.path().join("a.parquet"), &[1, 2, 3], 0);
        m.min_key = key(2);
        expect_corrupt(
            vec![(p.clone(), m.clone())],
            "a.parquet",
            "key range: the first key [Some(BigInt(1))] is below the min_key [Some(BigInt(2))]",
        );
        m.min_key = key(1);
        m.max_key = key(2);
        expect_corrupt(
            vec![(p, m)],
            "a.parquet",
            "key range: the last key [Some(BigInt(3))] is above the max_key [Some(BigInt(2))]",
        );
    }

    #[test]
    fn sequence_numbers_and_row_kinds_against_the_manifest() {
        let dir = tempfile::tempdir().unwrap();
        let (p, mut m) = write_file(&dir.path().join("a.parquet"), &[1, 2, 3], 10);
        m.max_sequence_number = 11;
        expect_corrupt(
            vec![(p, m)],
            "a.parquet",
            "row 2: _SEQUENCE_NUMBER 12 is outside the range the manifest records [10, 11]",
        );
        let b = write_kv(&dir.path().join("b.parquet"), &[1, 2, 3], 0, &[0, 3, 7]);
        expect_corrupt(
            vec![b],
            "b.parquet",
            "row 2: _VALUE_KIND 7 is not a row kind",
        );
        let c = write_kv(&dir.path().join("c.parquet"), &[1, 2, 3], 0, &[0, 1, 3]);
        assert_eq!(read_run(vec![c]), Ok(3));
    }

    fn table_schema(id: i64, fields: serde_json::Value) -> crate::spec::schema::TableSchema {
        let v = serde_json::json!({"version": 3, "id": id, "fields": fields,
            "primaryKeys": ["id"], "options": {"bucket": "1"}});
        crate::spec::schema::TableSchema::from_json(&v).unwrap()
    }

    /// A file written with schema 0 (key `id`, `b INT` = field 1, `x` = field 2) read with
    /// schema 1 (key renamed `pk`, which Java 1.0 refuses but later versions allow; `b` renamed
    /// to `b2` and widened to BIGINT, `x` dropped and re-added as field 3): the key comes from
    /// `_KEY_id`, `b2` holds the file's `b` values, `x` is NULL; a file of an unreadable schema
    /// is corrupt.
    #[test]
    fn file_columns_are_matched_by_field_id() {
        use crate::table::snapshot_manager::create_schema;
        use arrow_array::Int32Array;
        use serde_json::json;
        let dir = tempfile::tempdir().unwrap();
        let id = |n: &str| json!({"id": 0, "name": n, "type": "BIGINT NOT NULL"});
        let s0 = table_schema(
            0,
            json!([id("id"), {"id": 1, "name": "b", "type": "INT"},
                   {"id": 2, "name": "x", "type": "INT"}]),
        );
        let s1 = table_schema(
            1,
            json!([id("pk"), {"id": 1, "name": "b2", "type": "BIGINT"},
                   {"id": 3, "name": "x", "type": "INT"}]),
        );
        std::fs::create_dir_all(dir.path().join("schema")).unwrap();
        assert!(create_schema(dir.path(), &s0).unwrap());
        assert!(create_schema(dir.path(), &s1).unwrap());
        let file_schema = Arc::new(Schema::new(vec![
            Field::new("_KEY_id", ArrowType::Int64, false),
            Field::new("_SEQUENCE_NUMBER", ArrowType::Int64, false),
            Field::new("_VALUE_KIND", ArrowType::Int8, false),
            Field::new("id", ArrowType::Int64, false),
            Field::new("b", ArrowType::Int32, true),
            Field::new("x", ArrowType::Int32, true),
        ]));
        let keys: ArrayRef = Arc::new(Int64Array::from(vec![1, 2]));
        let b = RecordBatch::try_new(
            file_schema.clone(),
            vec![
                keys.clone(),
                Arc::new(Int64Array::from(vec![0, 1])),
                Arc::new(Int8Array::from(vec![0, 0])),
                keys,
                Arc::new(Int32Array::from(vec![Some(10), None])),
                Arc::new(Int32Array::from(vec![7, 8])),
            ],
        )
        .unwrap();
        let path = dir.path().join("data-0.parquet");
        let props = writer_properties("zstd", 1, &[]).unwrap();
        let mut w = ParquetFileWriter::create(path.clone(), file_schema, props).unwrap();
        w.write(&b).unwrap();
        let size = w.close().unwrap();
        let (_, mut meta) = write_file(&dir.path().join("other.parquet"), &[1, 2], 0);
        meta.file_name = "data-0.parquet".into();
        meta.file_size = size as i64;
        meta.row_count = 2;
        meta.schema_id = 0;

        let field = |id: i32, key: bool, t: &str| {
            Some(WantedField {
                id,
                key,
                data_type: DataType::from_json(&json!(t)).unwrap(),
            })
        };
        let w = |name: &str, dtype: ArrowType, nullable_ok, field| Wanted {
            name: name.into(),
            dtype,
            nullable_ok,
            field,
        };
        let mut plan = ColumnPlan::new(
            vec![
                w(
                    "_KEY_pk",
                    ArrowType::Int64,
                    false,
                    field(0, true, "BIGINT NOT NULL"),
                ),
                w("_SEQUENCE_NUMBER", ArrowType::Int64, false, None),
                w("_VALUE_KIND", ArrowType::Int8, false, None),
                w("b2", ArrowType::Int64, true, field(1, false, "BIGINT")),
                w("x", ArrowType::Int32, true, field(3, false, "INT")),
            ],
            vec![0, 3, 4],
            None,
            CheckPlan::default(),
        );
        plan.schemas = Some(Arc::new(SchemaCache::new(dir.path().to_path_buf(), &s1)));
        let plan = Arc::new(plan);
        let mut chain = FileChain::new(
            VecDeque::from(vec![(path.clone(), meta.clone())]),
            plan.clone(),
        );
        let out = chain.next().unwrap().unwrap();
        assert!(chain.next().is_none());
        let keys = out.column(0).as_primitive::<Int64Type>();
        assert_eq!(keys.values().to_vec(), vec![1, 2]);
        let b2 = out.column(3).as_primitive::<Int64Type>();
        assert_eq!(b2.iter().collect::<Vec<_>>(), vec![Some(10), None]);
        assert_eq!(
            out.column(4).null_count(),
            2,
            "x of schema 1 is not the file's x"
        );
        // the same file claimed by a schema that does not exist
        meta.schema_id = 7;
        let mut chain = FileChain::new(VecDeque::from(vec![(path, meta)]), plan);
        let e = chain.next().unwrap().unwrap_err();
        assert!(matches!(e, Error::CorruptFile { .. }), "{e}");
        assert!(e.to_string().contains("schema-7"), "{e}");
    }
}
