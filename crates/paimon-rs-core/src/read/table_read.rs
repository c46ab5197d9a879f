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

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int8Type;
use arrow_array::{new_null_array, ArrayRef, BooleanArray, RecordBatch};
use arrow_schema::{DataType as ArrowType, Field, Schema, SchemaRef};
use parquet::arrow::arrow_reader::ParquetRecordBatchReader;
use rayon::prelude::*;

use super::evolution::{conform_physical, evolve_array, field_by_id, same_type, SchemaCache};
use super::interval::interval_partition;
use super::split::Split;
use crate::error::{Error, Result};
use crate::io::parquet::open_reader;
use crate::merge::{merge_sorted_runs, BatchIter, KvLayout, MergeEngine};
use crate::predicate::Predicate;
use crate::sort::{SpillOptions, Spiller};
use crate::spec::manifest::DataFileMeta;
use crate::spec::types::DataType;
use crate::table::FileStoreTable;
use crate::write::input::is_retract;
use crate::write::table_write::{KEY_PREFIX, SEQUENCE_NUMBER, VALUE_KIND};

/// Rows per decoded Parquet batch (per run of a merge: the unit of its memory bound).
const READ_BATCH_ROWS: usize = 16 * 1024;

pub struct TableRead {
    ctx: Arc<ReadCtx>,
}

/// Everything a (lazy, `'static`) split stream needs of the read.
struct ReadCtx {
    table: FileStoreTable,
    /// Output columns (indices into the table fields).
    projection: Vec<usize>,
    filter: Option<Predicate>,
    /// Table columns that must be read (projection plus filter and merge columns).
    needed: Vec<usize>,
    /// Schema of the `needed` columns, named as the table's (what the filter sees).
    needed_schema: SchemaRef,
    output_schema: SchemaRef,
    engine: MergeEngine,
    /// Schemas of the data files (schema evolution: files are read by field id).
    schemas: Arc<SchemaCache>,
}

/// A file column to decode: name (in the current schema), target Arrow type, whether a file may
/// lack it (a value column added by a later schema reads as nulls), and the table field it
/// holds (None: a system column, found by name).
#[derive(Debug, Clone)]
struct Wanted {
    name: String,
    dtype: ArrowType,
    nullable_ok: bool,
    field: Option<WantedField>,
}

/// A table field to find in a data file by its id: under the name the file's schema gives it
/// (`_KEY_` + name for a key column), cast from the file's type.
#[derive(Debug, Clone)]
struct WantedField {
    id: i32,
    key: bool,
    data_type: DataType,
}

/// Where each wanted column is in one data file: (file column name, (file type, table type)
/// for a table field), None if the file's schema lacks the field.
type FileColumns = Vec<Option<(String, Option<(DataType, DataType)>)>>;

/// What to decode from each file of a split, and where each needed table column is found in the
/// (merged) batches.
struct ColumnPlan {
    wanted: Vec<Wanted>,
    schema: SchemaRef,
    /// For each entry of `ReadCtx::needed`: its column index in the decoded batch.
    needed_at: Vec<usize>,
    /// Column of `_VALUE_KIND` when retractions must be dropped here (raw primary-key reads;
    /// a merge drops them itself).
    drop_retract_at: Option<usize>,
    /// Data file schemas (None: columns are matched by name, for tests without a table).
    schemas: Option<Arc<SchemaCache>>,
}

impl ColumnPlan {
    fn new(wanted: Vec<Wanted>, needed_at: Vec<usize>, drop_retract_at: Option<usize>) -> Self {
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
            schemas: None,
        }
    }

    /// The columns of a data file written with schema `schema_id` that hold the wanted ones:
    /// matched by field id, named as in that schema (Java's `SchemaEvolutionUtil`).
    fn file_columns(&self, schema_id: i64) -> Result<FileColumns> {
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

impl TableRead {
    pub fn new(
        table: FileStoreTable,
        projection: Option<Vec<String>>,
        filter: Option<Predicate>,
    ) -> Result<Self> {
        let fields = &table.schema.fields;
        let projection: Vec<usize> = match projection {
            None => (0..fields.len()).collect(),
            Some(names) => names
                .iter()
                .map(|n| {
                    table.schema.field_index(n).ok_or_else(|| {
                        Error::schema(format!("projected column '{n}' is not in the table"))
                            .with_table(&table.name)
                    })
                })
                .collect::<Result<_>>()?,
        };
        let mut needed = projection.clone();
        let engine = if table.is_primary_key() {
            MergeEngine::from_table(&table)?
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
        let schemas = Arc::new(SchemaCache::new(table.path.clone(), &table.schema));
        let output_schema = Arc::new(Schema::new(
            projection
                .iter()
                .map(|&i| field_of(i, fields[i].data_type.nullable))
                .collect::<Vec<_>>(),
        ));
        let needed_schema = Arc::new(Schema::new(
            needed
                .iter()
                .map(|&i| field_of(i, true))
                .collect::<Vec<_>>(),
        ));
        Ok(TableRead {
            ctx: Arc::new(ReadCtx {
                table,
                projection,
                filter,
                needed,
                needed_schema,
                output_schema,
                engine,
                schemas,
            }),
        })
    }

    pub fn output_schema(&self) -> SchemaRef {
        self.ctx.output_schema.clone()
    }

    /// Read several splits (in parallel on the rayon pool), results in split order.
    pub fn read_splits(&self, splits: &[Split]) -> Result<Vec<RecordBatch>> {
        let parts: Vec<Result<Vec<RecordBatch>>> =
            splits.par_iter().map(|s| self.read_split(s)).collect();
        let mut out = vec![];
        for p in parts {
            out.extend(p?);
        }
        Ok(out)
    }

    /// Read one split into memory.
    pub fn read_split(&self, split: &Split) -> Result<Vec<RecordBatch>> {
        self.split_stream(split)?.collect()
    }

    /// Read one split lazily: batches are decoded and merged as they are pulled.
    pub fn split_stream(&self, split: &Split) -> Result<BatchIter> {
        let name = self.ctx.table.name.clone();
        let it = split_stream(self.ctx.clone(), split).map_err(|e| e.with_table(&name))?;
        Ok(Box::new(
            it.map(move |r| r.map_err(|e| e.with_table(&name))),
        ))
    }

    /// Read splits one after the other, lazily (bounded memory, no parallelism across splits).
    pub fn stream(&self, splits: Vec<Split>) -> BatchIter {
        let ctx = self.ctx.clone();
        let name = ctx.table.name.clone();
        let it = splits.into_iter().flat_map(move |s| -> BatchIter {
            match split_stream(ctx.clone(), &s) {
                Ok(it) => it,
                Err(e) => Box::new(std::iter::once(Err(e))),
            }
        });
        Box::new(it.map(move |r| r.map_err(|e| e.with_table(&name))))
    }
}

fn file_path(dir: &Path, f: &DataFileMeta) -> (PathBuf, i64) {
    let p = match &f.external_path {
        Some(p) => PathBuf::from(p.strip_prefix("file:").unwrap_or(p)),
        None => dir.join(&f.file_name),
    };
    (p, f.schema_id)
}

fn split_stream(ctx: Arc<ReadCtx>, split: &Split) -> Result<BatchIter> {
    let dir = ctx.table.path.join(&split.bucket_path);
    let pk = ctx.table.is_primary_key();
    let key_names = ctx.table.trimmed_primary_keys();
    let merge = pk && !split.raw_convertible;
    let plan = Arc::new(ctx.column_plan(pk, merge, &key_names)?);
    let layout = KvLayout {
        num_keys: key_names.len(),
    };
    let batches: BatchIter = if merge {
        // Merge each section of overlapping files; one lazy run per sorted run of the section.
        let key_types = ctx.table.schema.types_of(&key_names)?;
        let sections = interval_partition(split.files.clone(), &key_types)?;
        let engine = ctx.engine.clone();
        let plan = plan.clone();
        let options = &ctx.table.options;
        // spill files live as long as the stream (the spiller removes its directory when dropped)
        let spill = options.sort_spill_threshold.map(|t| {
            (
                t,
                Arc::new(Spiller::new(SpillOptions::from_options(options))),
            )
        });
        Box::new(sections.into_iter().flat_map(move |runs| -> BatchIter {
            let merged = (|| {
                let mut iters: Vec<(u64, BatchIter)> = runs
                    .iter()
                    .map(|run| {
                        let paths = run.iter().map(|f| file_path(&dir, f)).collect();
                        let size = run.iter().map(|f| f.file_size.max(0) as u64).sum();
                        (
                            size,
                            Box::new(FileChain::new(paths, plan.clone())) as BatchIter,
                        )
                    })
                    .collect();
                if let Some((threshold, spiller)) = &spill {
                    iters = spill_smallest_runs(iters, *threshold, spiller, &plan.schema, layout)?;
                }
                let iters = iters.into_iter().map(|(_, it)| it).collect();
                merge_sorted_runs(iters, layout, engine.clone(), true)
            })();
            match merged {
                Ok(it) => it,
                Err(e) => Box::new(std::iter::once(Err(e))),
            }
        }))
    } else {
        let paths = split.files.iter().map(|f| file_path(&dir, f)).collect();
        Box::new(FileChain::new(paths, plan.clone()))
    };
    Ok(Box::new(batches.filter_map(move |b| match b {
        Ok(b) => match ctx.finish_batch(&b, &plan) {
            Ok(out) if out.num_rows() == 0 => None,
            r => Some(r),
        },
        Err(e) => Some(Err(e)),
    })))
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
    /// Columns to decode for a split. `merge`: key-value layout (keys, sequence, kind, then the
    /// non-key needed values); raw primary-key read: kind then needed; append table: needed.
    fn column_plan(&self, pk: bool, merge: bool, key_names: &[String]) -> Result<ColumnPlan> {
        let fields = &self.table.schema.fields;
        let required = self.engine.required_fields();
        let mut wanted: Vec<Wanted> = vec![];
        let mut key_at: Vec<(usize, usize)> = vec![]; // (table field, key column)
        let mut kind_at = None;
        if merge {
            for k in key_names {
                let i =
                    self.table.schema.field_index(k).ok_or_else(|| {
                        Error::Internal(format!("primary key '{k}' not in schema"))
                    })?;
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
        let mut needed_at = Vec::with_capacity(self.needed.len());
        for &i in &self.needed {
            let f = &fields[i];
            // a key column's values are the `_KEY_` column's (unless the engine merges it as a
            // value column: then it must be in the merge input by name)
            if let Some(&(_, at)) = key_at.iter().find(|(k, _)| *k == i) {
                if !required.contains(&f.name) {
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
        let mut plan = ColumnPlan::new(wanted, needed_at, drop_retract_at);
        plan.schemas = Some(self.schemas.clone());
        Ok(plan)
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
        let cols: Vec<ArrayRef> = match &self.filter {
            None => self
                .projection
                .iter()
                .map(|&i| col_of(i))
                .collect::<Result<_>>()?,
            Some(f) => {
                let values = RecordBatch::try_new(
                    self.needed_schema.clone(),
                    plan.needed_at
                        .iter()
                        .map(|&c| batch.column(c).clone())
                        .collect(),
                )?;
                let type_of = |n: &str| -> Option<DataType> {
                    self.table.schema.field(n).map(|x| x.data_type.clone())
                };
                let mask = f.evaluate(&values, &type_of)?;
                let values = arrow_select::filter::filter_record_batch(&values, &mask)?;
                self.projection
                    .iter()
                    .map(|&i| {
                        let pos = self.needed.iter().position(|&x| x == i).unwrap_or(0);
                        values.column(pos).clone()
                    })
                    .collect()
            }
        };
        RecordBatch::try_new(self.output_schema.clone(), cols).map_err(|e| {
            Error::corrupt(
                &self.table.path,
                format!("data does not match the table schema: {e}"),
            )
        })
    }
}

/// A sorted run (or a raw split): its files read one after the other, each opened only when the
/// previous one is exhausted, decoded batch by batch.
struct FileChain {
    /// Files to read, each with the id of the schema it was written with.
    paths: VecDeque<(PathBuf, i64)>,
    cur: Option<(PathBuf, FileColumns, ParquetRecordBatchReader)>,
    plan: Arc<ColumnPlan>,
}

impl FileChain {
    fn new(paths: VecDeque<(PathBuf, i64)>, plan: Arc<ColumnPlan>) -> Self {
        FileChain {
            paths,
            cur: None,
            plan,
        }
    }
}

impl Iterator for FileChain {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if self.cur.is_none() {
                let (path, schema_id) = self.paths.pop_front()?;
                let opened = self.plan.file_columns(schema_id).and_then(|cols| {
                    let names: Vec<String> =
                        cols.iter().flatten().map(|(n, _)| n.clone()).collect();
                    let r = open_reader(&path, Some(&names), READ_BATCH_ROWS)?;
                    Ok((cols, r))
                });
                match opened {
                    Ok((cols, r)) => self.cur = Some((path, cols, r)),
                    Err(e) => {
                        self.paths.clear();
                        return Some(Err(e));
                    }
                }
            }
            let (path, cols, reader) = self.cur.as_mut()?;
            match reader.next() {
                Some(Ok(b)) => return Some(conform(path, &self.plan, cols, b)),
                Some(Err(e)) => {
                    let e = Error::corrupt(path.as_path(), e.to_string());
                    self.cur = None;
                    self.paths.clear();
                    return Some(Err(e));
                }
                None => self.cur = None,
            }
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::parquet::{writer_properties, ParquetFileWriter};
    use crate::merge::reader::SortMergeReader;
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

    /// A data file of the given (sorted) keys; sequence numbers `seq0..`, value = key * 10.
    fn write_file(path: &Path, keys: &[i64], seq0: i64) {
        let n = keys.len();
        let k = Arc::new(Int64Array::from(keys.to_vec())) as ArrayRef;
        let b = RecordBatch::try_new(
            kv_schema(),
            vec![
                k.clone(),
                Arc::new(Int64Array::from_iter_values(seq0..seq0 + n as i64)),
                Arc::new(Int8Array::from(vec![0i8; n])),
                k,
                Arc::new(Int64Array::from_iter_values(keys.iter().map(|x| x * 10))),
            ],
        )
        .unwrap();
        let props = writer_properties("zstd", 1, &[]).unwrap();
        let mut w = ParquetFileWriter::create(path.to_path_buf(), kv_schema(), props).unwrap();
        w.write(&b).unwrap();
        w.close().unwrap();
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
                write_file(&p, &keys, seq);
                seq += PER_FILE as i64;
                paths.push_back((p, 0));
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
        write_file(&a, &(0..40_000).collect::<Vec<_>>(), 0);
        let missing = dir.path().join("missing.parquet");
        let mut chain = FileChain::new(VecDeque::from(vec![(a, 0), (missing, 0)]), plan());
        let mut rows = 0;
        for _ in 0..3 {
            rows += chain.next().unwrap().unwrap().num_rows();
        }
        assert_eq!(rows, 40_000);
        let e = chain.next().unwrap().unwrap_err().to_string();
        assert!(e.contains("missing.parquet"), "{e}");
        assert!(chain.next().is_none());
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
        w.close().unwrap();

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
        );
        plan.schemas = Some(Arc::new(SchemaCache::new(dir.path().to_path_buf(), &s1)));
        let plan = Arc::new(plan);
        let mut chain = FileChain::new(VecDeque::from(vec![(path.clone(), 0)]), plan.clone());
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
        let mut chain = FileChain::new(VecDeque::from(vec![(path, 7)]), plan);
        let e = chain.next().unwrap().unwrap_err();
        assert!(matches!(e, Error::CorruptFile { .. }), "{e}");
        assert!(e.to_string().contains("schema-7"), "{e}");
    }
}
