//! Per-bucket write buffers (paimon-behaviour.md §1.3). A primary-key bucket buffers its rows in
//! arrival (= sequence) order; when the writer's memory budget runs out buffers are sorted and
//! spilled to disk as sorted runs (or, when spilling is off or the spill disk cap is reached,
//! flushed to level-0 files). At flush the in-memory run and the spilled runs are merged through
//! the table's merge function, so each key appears once per flush.
//!
//! Rows are copied once: a bucket does not copy the rows routed to it but keeps the input batch
//! (shared by every bucket it feeds, see [`SharedInput`]) and the indices of its rows. The key
//! value layout (`_KEY_*`, `_SEQUENCE_NUMBER`, `_VALUE_KIND`, values) is built only when the
//! sorted rows are gathered, chunk by chunk, for a spill file or a data file.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, Int64Array, Int8Array, RecordBatch, UInt32Array};
use arrow_schema::SchemaRef;

use crate::error::{Error, Result};
use crate::io::parquet::ROW_GROUP_BYTES;
use crate::merge::{merge_order, sort_by_key, BatchIter, KvLayout};
use crate::sort::{gather, Duplicates, SpillFile, Spiller};

/// Rows per batch of a sorted run that goes to a spill file or into the merge: the merge holds
/// one batch per run, so small batches keep a many-run merge within memory (10M rows with a
/// 64 mb buffer, ~19 runs per bucket: 8k-row batches peaked at 296-305 MB over baseline, 4k at
/// 254 MB).
pub const RUN_BATCH_ROWS: usize = 4 * 1024;

/// Rows per batch handed straight to the file writer (no merge): bigger batches cost the
/// Parquet writer less per row (2M-row write 0.95 s -> 0.88 s against 8k batches).
const WRITE_BATCH_ROWS: usize = 64 * 1024;

/// Rows per slice, on average, below which sorted slices are concatenated and sorted rather
/// than merged (a merge of thousands of tiny runs gains nothing on a sort).
const MERGE_MIN_RUN_ROWS: usize = 256;

/// Bytes of Arrow memory the buffers of one writer hold, counted once per input batch however
/// many buckets share it. Charges are released when what they count is dropped.
#[derive(Clone, Default, Debug)]
pub struct MemoryCounter(Arc<AtomicUsize>);

impl MemoryCounter {
    pub fn get(&self) -> usize {
        self.0.load(Ordering::Relaxed)
    }

    fn charge(&self, bytes: usize) -> MemoryCharge {
        self.0.fetch_add(bytes, Ordering::Relaxed);
        MemoryCharge {
            counter: self.clone(),
            bytes,
        }
    }
}

/// Bytes counted in a [`MemoryCounter`] until this is dropped.
#[derive(Debug)]
struct MemoryCharge {
    counter: MemoryCounter,
    bytes: usize,
}

impl Drop for MemoryCharge {
    fn drop(&mut self) {
        self.counter.0.fetch_sub(self.bytes, Ordering::Relaxed);
    }
}

/// One checked input batch (the table's columns) and the row kinds of its rows (None: all
/// +I), shared by the buckets its rows are routed to. Its memory is charged once and released
/// when the last bucket holding rows of it has spilled, flushed or compacted them.
#[derive(Debug)]
pub struct SharedInput {
    batch: RecordBatch,
    kinds: Option<Int8Array>,
    _charge: MemoryCharge,
}

impl SharedInput {
    pub fn new(batch: RecordBatch, kinds: Option<Int8Array>, counter: &MemoryCounter) -> Self {
        let bytes = batch
            .columns()
            .iter()
            .map(|c| slice_bytes(c))
            .sum::<usize>()
            + kinds.as_ref().map_or(0, |k| slice_bytes(k));
        SharedInput {
            batch,
            kinds,
            _charge: counter.charge(bytes),
        }
    }

    fn bytes(&self) -> usize {
        self._charge.bytes
    }
}

/// Bytes of `a`'s rows: a slice of a bigger array (pyarrow's `to_batches(n)`, `slice`) counts
/// only its own rows, not the whole buffers it shares with its siblings, which would charge the
/// same memory once per slice (13x for `to_batches` of one array, and a spill every few rows).
fn slice_bytes(a: &dyn Array) -> usize {
    a.to_data()
        .get_slice_memory_size()
        .unwrap_or_else(|_| a.get_array_memory_size())
}

/// Rows of one input batch routed to one bucket, with consecutive sequence numbers from
/// `first_seq`.
#[derive(Debug)]
struct Slice {
    input: Arc<SharedInput>,
    /// Row indices into the input, ascending; None = every row.
    rows: Option<Vec<u32>>,
    len: usize,
    first_seq: i64,
    _charge: Option<MemoryCharge>,
}

impl Slice {
    fn row(&self, j: usize) -> usize {
        match &self.rows {
            Some(r) => r[j] as usize,
            None => j,
        }
    }
}

/// The rows of one primary-key bucket not yet written to a data file.
pub struct SortBuffer {
    schema: SchemaRef,
    layout: KvLayout,
    /// Positions of the (trimmed) primary-key columns in the input batches.
    key_idx: Vec<usize>,
    counter: MemoryCounter,
    slices: Vec<Slice>,
    share: usize,
    rows: usize,
    spills: Vec<SpillFile>,
    /// Bytes per row of the largest run spilled so far (sizes the final merge).
    spilled_row_bytes: usize,
}

impl SortBuffer {
    /// `schema` is the key-value schema of the runs the buffer produces; `key_idx` the
    /// positions of the key columns in the input batches.
    pub fn new(
        schema: SchemaRef,
        layout: KvLayout,
        key_idx: Vec<usize>,
        counter: MemoryCounter,
    ) -> Self {
        SortBuffer {
            schema,
            layout,
            key_idx,
            counter,
            slices: vec![],
            share: 0,
            rows: 0,
            spills: vec![],
            spilled_row_bytes: 0,
        }
    }

    /// Add rows of `input` (ascending indices; None = all) whose sequence numbers are
    /// `first_seq..` and higher than all buffered ones.
    pub fn put(&mut self, input: &Arc<SharedInput>, rows: Option<Vec<u32>>, first_seq: i64) {
        let total = input.batch.num_rows();
        let len = rows.as_ref().map_or(total, Vec::len);
        if len == 0 {
            return;
        }
        let index_bytes = rows.as_ref().map_or(0, |r| r.capacity() * 4);
        let share = input.bytes() * len / total.max(1) + index_bytes;
        self.share += share;
        self.rows += len;
        self.slices.push(Slice {
            input: input.clone(),
            rows,
            len,
            first_seq,
            _charge: (index_bytes > 0).then(|| self.counter.charge(index_bytes)),
        });
    }

    /// This buffer's share of the writer's memory: its rows' part of the input batches it
    /// holds rows of (an input shared by several buckets is freed when all of them let go).
    pub fn memory_size(&self) -> usize {
        self.share
    }

    pub fn in_memory_rows(&self) -> usize {
        self.rows
    }

    pub fn spill_count(&self) -> usize {
        self.spills.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rows == 0 && self.spills.is_empty()
    }

    /// Bytes per in-memory row (0 if empty).
    pub fn row_bytes(&self) -> usize {
        self.share / self.rows.max(1)
    }

    /// Bytes per row of the runs a final merge reads: in memory or spilled, the larger.
    pub fn run_row_bytes(&self) -> usize {
        self.row_bytes().max(self.spilled_row_bytes)
    }

    /// Whether the buffer keeps input batches alive that hold rows of other buckets too.
    pub fn holds_shared_rows(&self) -> bool {
        self.slices.iter().any(|s| s.rows.is_some())
    }

    /// Copy this buffer's rows out of the shared input batches into one batch of its own, so
    /// the inputs can be freed once the other buckets let go of them. Sequence numbers stay.
    pub fn compact(&mut self) -> Result<()> {
        if !self.holds_shared_rows() {
            return Ok(());
        }
        let slices = std::mem::take(&mut self.slices);
        self.share = 0;
        self.rows = 0;
        // rows copied out before stay as they are (each row is copied out once); runs of
        // shared slices become one batch each, in arrival order
        let mut shared: Vec<Slice> = vec![];
        for s in slices {
            if s.rows.is_some() {
                shared.push(s);
            } else {
                self.copy_out(&mut shared)?;
                self.put(&s.input, None, s.first_seq);
            }
        }
        self.copy_out(&mut shared)
    }

    /// Gather the rows of consecutive `slices` into a batch of their own and buffer that.
    fn copy_out(&mut self, slices: &mut Vec<Slice>) -> Result<()> {
        let Some(first) = slices.first() else {
            return Ok(());
        };
        let first_seq = first.first_seq;
        let pairs: Vec<(usize, usize)> = slices
            .iter()
            .enumerate()
            .flat_map(|(s, sl)| (0..sl.len).map(move |j| (s, sl.row(j))))
            .collect();
        let (batch, kinds) = gather_rows(slices, &pairs)?;
        slices.clear();
        let input = Arc::new(SharedInput::new(batch, kinds, &self.counter));
        self.put(&input, None, first_seq);
        Ok(())
    }

    /// Sort the in-memory rows by (key, sequence) and take them out as one run (duplicates of a
    /// key stay, in sequence order). None if nothing is buffered.
    fn take_sorted_run(&mut self) -> Result<Option<BatchIter>> {
        self.take_sorted(false, RUN_BATCH_ROWS)
    }

    /// With nothing spilled, the newest record of each key, sorted by key (the deduplicate
    /// engine needs no merge). Outer None if runs were spilled, inner None if empty.
    pub fn take_deduplicated(&mut self) -> Result<Option<Option<BatchIter>>> {
        if !self.spills.is_empty() {
            return Ok(None);
        }
        self.take_sorted(true, WRITE_BATCH_ROWS).map(Some)
    }

    /// Sort by key (ties keep arrival = sequence order) and return the key-value rows as a
    /// stream of batches gathered chunk by chunk from the input batches: the sorted copy never
    /// exists in full next to the buffer, so a spill or flush needs little memory beyond it.
    fn take_sorted(&mut self, last_per_key: bool, batch_rows: usize) -> Result<Option<BatchIter>> {
        if self.rows == 0 {
            return Ok(None);
        }
        let slices = std::mem::take(&mut self.slices);
        let n = self.rows;
        self.rows = 0;
        self.share = 0;
        let (slices, sorted, bounds) = match merge_sorted_slices(&slices, &self.key_idx)? {
            Some((sorted, bounds)) => (slices, sorted, bounds),
            None => {
                let slices = consolidate(slices, &self.counter)?;
                let keys: Vec<ArrayRef> = self
                    .key_idx
                    .iter()
                    .map(|&c| gather_column(&slices, c))
                    .collect::<Result<_>>()?;
                let (sorted, bounds) = sort_by_key(&keys, None, n)?;
                (slices, sorted, bounds)
            }
        };
        let order: Vec<u32> = if last_per_key {
            bounds[1..].iter().map(|&end| sorted[end - 1]).collect()
        } else {
            sorted
        };
        let sources = Sources::new(&slices);
        let schema = self.schema.clone();
        let layout = self.layout;
        let key_idx = self.key_idx.clone();
        let mut pos = 0usize;
        Ok(Some(Box::new(std::iter::from_fn(move || {
            if pos >= order.len() {
                return None;
            }
            let end = (pos + batch_rows).min(order.len());
            let chunk = &order[pos..end];
            pos = end;
            Some(kv_chunk(
                &schema, layout, &key_idx, &slices, &sources, chunk,
            ))
        }))))
    }

    /// Estimated bytes a spill of the in-memory rows needs on disk (uncompressed upper bound).
    pub fn spill_estimate(&self) -> u64 {
        self.share as u64
    }

    /// Sort the in-memory rows and write them to a spill file.
    pub fn spill(&mut self, spiller: &Spiller) -> Result<()> {
        self.spilled_row_bytes = self.spilled_row_bytes.max(self.row_bytes());
        let started = std::time::Instant::now();
        let Some(run) = self.take_sorted_run()? else {
            return Ok(());
        };
        // the key columns are the value key columns again (`kv_chunk`): stored once
        let duplicates = Duplicates::of_keys(
            self.layout.num_keys,
            self.layout.value_offset(),
            &self.key_idx,
        )?;
        let f = spiller.spill_deduplicated(&self.schema, &duplicates, run)?;
        log::info!(
            target: "paimon_rs.spill",
            "spilled a sorted run of {} rows ({} bytes) to {}",
            f.rows,
            f.bytes,
            f.path().display()
        );
        log::debug!(
            target: "paimon_rs.spill",
            "sorting and spilling {} rows took {} ms",
            f.rows,
            started.elapsed().as_millis()
        );
        self.spills.push(f);
        Ok(())
    }

    /// Everything buffered as sorted runs (spilled runs reduced to at most `fan_in` runs, and
    /// to `local-sort.max-num-file-handles`), emptying the buffer. Returns the runs and the
    /// spill bytes they hold (to release once consumed).
    pub fn take_runs(&mut self, spiller: &Spiller, fan_in: usize) -> Result<(Vec<BatchIter>, u64)> {
        let memory = self.take_sorted_run()?;
        let extra = usize::from(memory.is_some());
        let files = std::mem::take(&mut self.spills);
        let files = spiller.reduce_runs(&self.schema, self.layout, files, extra, fan_in)?;
        let bytes = files.iter().map(|f| f.bytes).sum();
        // older runs first: spilled runs hold lower sequence numbers than the in-memory one
        let mut runs: Vec<BatchIter> = files
            .into_iter()
            .map(SpillFile::into_batches)
            .collect::<Result<_>>()?;
        if let Some(m) = memory {
            runs.push(m);
        }
        Ok((runs, bytes))
    }
}

/// The rows of `slices` as one slice of one batch of their own, when every input batch is held
/// by this buffer alone and the slices' sequence numbers are consecutive; else `slices` as they
/// are. Gathering sorted rows from one batch (`take`) costs less than from many
/// (`interleave`, a slice lookup per row): 125 input batches of a 1.25M-row bucket, ~20% of a
/// flush. Columns are copied one at a time and each input column is freed once copied, so
/// memory grows by one column, not by the buffer.
fn consolidate(slices: Vec<Slice>, counter: &MemoryCounter) -> Result<Vec<Slice>> {
    let contiguous = slices
        .windows(2)
        .all(|w| w[0].first_seq + w[0].len as i64 == w[1].first_seq);
    if slices.len() < 2 || !contiguous || slices.iter().any(|s| Arc::strong_count(&s.input) > 1) {
        return Ok(slices);
    }
    let first_seq = slices[0].first_seq;
    let schema = slices[0].input.batch.schema();
    let with_kinds = slices.iter().any(|s| s.input.kinds.is_some());
    let n: usize = slices.iter().map(|s| s.len).sum();
    // the inputs' columns, owned here alone (each input is dropped with its charge)
    #[allow(clippy::type_complexity)]
    let mut parts: Vec<(
        Vec<Option<ArrayRef>>,
        Option<UInt32Array>,
        Option<Int8Array>,
        usize,
    )> = slices
        .into_iter()
        .map(|s| {
            let cols = s.input.batch.columns().iter().cloned().map(Some).collect();
            (
                cols,
                s.rows.map(UInt32Array::from),
                s.input.kinds.clone(),
                s.len,
            )
        })
        .collect();
    let kinds = with_kinds.then(|| {
        let mut out = Vec::with_capacity(n);
        for (_, rows, kinds, len) in &parts {
            match (kinds, rows) {
                (Some(k), Some(r)) => out.extend(r.values().iter().map(|&i| k.value(i as usize))),
                (Some(k), None) => out.extend_from_slice(&k.values()[..*len]),
                (None, _) => out.resize(out.len() + len, 0),
            }
        }
        Int8Array::from(out)
    });
    let mut cols = Vec::with_capacity(schema.fields().len());
    for c in 0..schema.fields().len() {
        let pieces: Vec<ArrayRef> = parts
            .iter_mut()
            .map(|(cols, rows, _, _)| {
                let col = cols[c]
                    .take()
                    .ok_or_else(|| Error::Internal("write buffer: column taken twice".into()))?;
                match rows {
                    None => Ok(col),
                    Some(r) => Ok(arrow_select::take::take(col.as_ref(), r, None)?),
                }
            })
            .collect::<Result<_>>()?;
        let refs: Vec<&dyn Array> = pieces.iter().map(|a| a.as_ref()).collect();
        cols.push(arrow_select::concat::concat(&refs)?);
    }
    let batch = RecordBatch::try_new(schema, cols).map_err(|e| Error::Arrow {
        context: Some("write buffer: consolidating the input batches".into()),
        source: e,
    })?;
    let input = Arc::new(SharedInput::new(batch, kinds, counter));
    Ok(vec![Slice {
        input,
        rows: None,
        len: n,
        first_seq,
        _charge: None,
    }])
}

/// When every slice's rows are sorted by key (a sorted input batch, e.g. from Spark's pack
/// stage, or a bucket's ascending rows of one): the arrival positions in key order and the key
/// groups, by a merge of the slices ([`merge_order`]) instead of a sort of all their rows. The
/// slices are then gathered from as they are (no [`consolidate`]): the gather reads each slice
/// front to back. None if some slice is not sorted.
fn merge_sorted_slices(
    slices: &[Slice],
    key_idx: &[usize],
) -> Result<Option<(Vec<u32>, Vec<usize>)>> {
    let n: usize = slices.iter().map(|s| s.len).sum();
    if n < slices.len() * MERGE_MIN_RUN_ROWS {
        return Ok(None); // many tiny slices (row-by-row writes): one sort of their concatenation
    }
    let keys_of = |s: &Slice| -> Result<Vec<ArrayRef>> {
        key_idx
            .iter()
            .map(|&c| gather_column(std::slice::from_ref(s), c))
            .collect()
    };
    // the first slice alone first: unsorted input (the common case) costs one slice's keys
    let first = match slices.first() {
        Some(s) => keys_of(s)?,
        None => return Ok(None),
    };
    if slices.len() > 1 && merge_order(std::slice::from_ref(&first))?.is_none() {
        return Ok(None);
    }
    let mut runs = Vec::with_capacity(slices.len());
    runs.push(first);
    for s in &slices[1..] {
        runs.push(keys_of(s)?);
    }
    let Some((order, bounds)) = merge_order(&runs)? else {
        return Ok(None);
    };
    let mut offsets = Vec::with_capacity(slices.len());
    let mut at = 0u32;
    for s in slices {
        offsets.push(at);
        at += s.len as u32;
    }
    let positions = order
        .iter()
        .map(|&(r, p)| offsets[r as usize] + p)
        .collect();
    Ok(Some((positions, bounds)))
}

/// Column `c` of every slice's rows, in arrival order.
fn gather_column(slices: &[Slice], c: usize) -> Result<ArrayRef> {
    let parts: Vec<ArrayRef> = slices
        .iter()
        .map(|s| {
            let col = s.input.batch.column(c);
            match &s.rows {
                None => Ok(col.clone()),
                Some(r) => {
                    let idx = UInt32Array::from(r.clone());
                    arrow_select::take::take(col.as_ref(), &idx, None)
                }
            }
        })
        .collect::<std::result::Result<_, _>>()?;
    if parts.len() == 1 {
        return Ok(parts[0].clone());
    }
    let refs: Vec<&dyn Array> = parts.iter().map(|a| a.as_ref()).collect();
    Ok(arrow_select::concat::concat(&refs)?)
}

/// The input rows `pairs` (slice, input row) of several slices as one batch: one gather per
/// column, prefetching ahead (`sort::gather`), since the sorted rows are a random permutation of
/// the input and arrow's `interleave` waits on a cache miss per row (0.92x a 2M-row write's CPU).
fn gather_columns(slices: &[Slice], pairs: &[(usize, usize)]) -> Result<RecordBatch> {
    let Some(first) = slices.first() else {
        return Err(Error::Internal("gather of rows from no input".into()));
    };
    let columns = (0..first.input.batch.num_columns())
        .map(|c| {
            let arrays: Vec<&dyn Array> = slices
                .iter()
                .map(|s| s.input.batch.column(c).as_ref())
                .collect();
            gather::interleave(&arrays, pairs)
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(RecordBatch::try_new_with_options(
        first.input.batch.schema(),
        columns,
        &arrow_array::RecordBatchOptions::new().with_row_count(Some(pairs.len())),
    )?)
}

/// The input rows `pairs` (slice, input row) as one batch of the table's columns, and their row
/// kinds if any input has them.
fn gather_rows(
    slices: &[Slice],
    pairs: &[(usize, usize)],
) -> Result<(RecordBatch, Option<Int8Array>)> {
    let Some(first) = slices.first() else {
        return Err(Error::Internal("gather of rows from no input".into()));
    };
    let batch = if slices.len() == 1 {
        // one input: arrow's `take` measured ~3% cheaper in CPU than the prefetching gather
        let idx: UInt32Array = pairs.iter().map(|&(_, r)| r as u32).collect();
        arrow_select::take::take_record_batch(&first.input.batch, &idx)?
    } else {
        gather_columns(slices, pairs)?
    };
    let kinds = if slices.iter().any(|s| s.input.kinds.is_some()) {
        Some(
            pairs
                .iter()
                .map(|&(s, r)| slices[s].input.kinds.as_ref().map_or(0, |k| k.value(r)))
                .collect::<Int8Array>(),
        )
    } else {
        None
    };
    Ok((batch, kinds))
}

/// Where the rows of a buffer of several slices are, by arrival position: the (slice, input row)
/// of each, looked up with one read per sorted row (a slice table plus the slice's row list cost
/// two scattered reads), and their sequence numbers: `base + position` when the slices' numbers
/// are consecutive (each bucket numbers its rows in arrival order), else a table. Empty for one
/// slice, which needs neither.
struct Sources {
    src: Vec<(u32, u32)>,
    seqs: Option<Vec<i64>>,
    base: i64,
}

impl Sources {
    fn new(slices: &[Slice]) -> Self {
        let base = slices.first().map_or(0, |s| s.first_seq);
        if slices.len() < 2 {
            return Sources {
                src: vec![],
                seqs: None,
                base,
            };
        }
        let n: usize = slices.iter().map(|s| s.len).sum();
        let mut src = Vec::with_capacity(n);
        for (i, sl) in slices.iter().enumerate() {
            match &sl.rows {
                Some(r) => src.extend(r.iter().map(|&row| (i as u32, row))),
                None => src.extend((0..sl.len as u32).map(|row| (i as u32, row))),
            }
        }
        let consecutive = slices
            .windows(2)
            .all(|w| w[0].first_seq + w[0].len as i64 == w[1].first_seq);
        let seqs = (!consecutive).then(|| {
            slices
                .iter()
                .flat_map(|sl| (0..sl.len as i64).map(move |j| sl.first_seq + j))
                .collect()
        });
        Sources { src, seqs, base }
    }

    fn seq(&self, g: u32) -> i64 {
        match &self.seqs {
            None => self.base + i64::from(g),
            Some(s) => s[g as usize],
        }
    }
}

/// Key-value rows for the arrival positions `chunk`: key columns (shared with the value
/// columns), sequence numbers, row kinds, values.
fn kv_chunk(
    schema: &SchemaRef,
    layout: KvLayout,
    key_idx: &[usize],
    slices: &[Slice],
    at: &Sources,
    chunk: &[u32],
) -> Result<RecordBatch> {
    let (rows, kinds, seqs) = if let [sl] = slices {
        // one input batch (a bulk write): arrival position = slice position, no lookups
        let idx: UInt32Array = match &sl.rows {
            Some(r) => chunk.iter().map(|&g| r[g as usize]).collect(),
            None => UInt32Array::from(chunk.to_vec()),
        };
        let seqs: Vec<i64> = chunk.iter().map(|&g| sl.first_seq + i64::from(g)).collect();
        let rows = arrow_select::take::take_record_batch(&sl.input.batch, &idx)?;
        let kinds = sl.input.kinds.as_ref().map(|k| {
            Int8Array::from_iter_values(idx.values().iter().map(|&i| k.value(i as usize)))
        });
        (rows, kinds, seqs)
    } else {
        let mut pairs = Vec::with_capacity(chunk.len());
        let mut seqs = Vec::with_capacity(chunk.len());
        for &g in chunk {
            let (s, r) = at.src[g as usize];
            pairs.push((s as usize, r as usize));
            seqs.push(at.seq(g));
        }
        let (rows, kinds) = gather_rows(slices, &pairs)?;
        (rows, kinds, seqs)
    };
    let n = rows.num_rows();
    let mut cols: Vec<ArrayRef> = Vec::with_capacity(schema.fields().len());
    cols.extend(key_idx.iter().map(|&i| rows.column(i).clone()));
    cols.push(Arc::new(Int64Array::from(seqs)));
    cols.push(Arc::new(
        kinds.unwrap_or_else(|| Int8Array::from(vec![0i8; n])),
    ));
    cols.extend(rows.columns().iter().cloned());
    debug_assert_eq!(cols.len(), layout.value_offset() + rows.num_columns());
    RecordBatch::try_new(schema.clone(), cols).map_err(|e| Error::Arrow {
        context: Some("write buffer: key-value batch".into()),
        source: e,
    })
}

/// Working memory of one bucket's final merge: two batches of `RUN_BATCH_ROWS` rows per run
/// (the one being merged and the next, decoded) and the Parquet writer: its open row group
/// (up to `ROW_GROUP_BYTES`) plus a page and a dictionary per column, half as much again.
/// Measured with heaptrack on the 64 mb benchmark (10M rows, 4 buckets, ~20 runs a bucket):
/// 21 MB in the runs and the merge output, 25 MB in the Parquet writer; this gives 42 MB.
pub(crate) fn merge_footprint(buf: &SortBuffer, budget: usize) -> usize {
    let runs = buf.spill_count() + usize::from(buf.in_memory_rows() > 0);
    runs.min(merge_fan_in(buf, budget)) * run_footprint(buf) + ROW_GROUP_BYTES * 3 / 2
}

/// Memory of one run in a merge: the batch being merged and the next, decoded.
fn run_footprint(buf: &SortBuffer) -> usize {
    2 * RUN_BATCH_ROWS * buf.run_row_bytes().max(1)
}

/// Most runs a bucket's final merge reads at once: as many as `budget` holds (at least 2);
/// `local-sort.max-num-file-handles` caps it too. More runs are pre-merged into fewer first,
/// so a small buffer with many spills merges in several passes instead of holding a batch of
/// every run.
pub(crate) fn merge_fan_in(buf: &SortBuffer, budget: usize) -> usize {
    (budget / run_footprint(buf)).max(2)
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::cast::AsArray;
    use arrow_array::types::{Int64Type, Int8Type};
    use arrow_array::StringArray;
    use arrow_schema::{DataType, Field, Schema};

    fn input_schema() -> SchemaRef {
        Arc::new(Schema::new(vec![
            Field::new("k", DataType::Int64, false),
            Field::new("v", DataType::Utf8, true),
        ]))
    }

    fn kv_schema() -> SchemaRef {
        Arc::new(Schema::new(vec![
            Field::new("_KEY_k", DataType::Int64, false),
            Field::new("_SEQUENCE_NUMBER", DataType::Int64, false),
            Field::new("_VALUE_KIND", DataType::Int8, false),
            Field::new("k", DataType::Int64, false),
            Field::new("v", DataType::Utf8, true),
        ]))
    }

    fn input(keys: &[i64], kinds: Option<&[i8]>, counter: &MemoryCounter) -> Arc<SharedInput> {
        let vals: Vec<String> = keys.iter().map(|k| format!("value-{k}")).collect();
        let batch = RecordBatch::try_new(
            input_schema(),
            vec![
                Arc::new(Int64Array::from(keys.to_vec())),
                Arc::new(StringArray::from(vals)),
            ],
        )
        .unwrap();
        Arc::new(SharedInput::new(
            batch,
            kinds.map(|k| Int8Array::from(k.to_vec())),
            counter,
        ))
    }

    #[test]
    fn a_slice_of_a_bigger_batch_charges_its_own_rows() {
        let counter = MemoryCounter::default();
        let keys: Vec<i64> = (0..100_000).collect();
        let whole = input(&keys, None, &counter);
        let whole_bytes = whole.bytes();
        let slices: Vec<SharedInput> = (0..10)
            .map(|i| SharedInput::new(whole.batch.slice(i * 10_000, 10_000), None, &counter))
            .collect();
        let sliced: usize = slices.iter().map(|s| s.bytes()).sum();
        // ten slices of one batch hold its rows once, not ten times
        assert!(
            sliced <= whole_bytes + whole_bytes / 10,
            "10 slices charged {sliced} bytes, the batch {whole_bytes}"
        );
        assert!(sliced >= whole_bytes / 2, "{sliced} vs {whole_bytes}");
    }

    fn buffer(counter: &MemoryCounter) -> SortBuffer {
        SortBuffer::new(
            kv_schema(),
            KvLayout { num_keys: 1 },
            vec![0],
            counter.clone(),
        )
    }

    /// (key, seq, kind, v) of every row of a run.
    fn drain(run: BatchIter) -> Vec<(i64, i64, i8, String)> {
        let mut out = vec![];
        for b in run {
            let b = b.unwrap();
            let key = b.column(0).as_primitive::<Int64Type>();
            let seq = b.column(1).as_primitive::<Int64Type>();
            let kind = b.column(2).as_primitive::<Int8Type>();
            let k = b.column(3).as_primitive::<Int64Type>();
            let v = b.column(4).as_string::<i32>();
            for i in 0..b.num_rows() {
                assert_eq!(key.value(i), k.value(i), "_KEY_k is the key column");
                out.push((
                    key.value(i),
                    seq.value(i),
                    kind.value(i),
                    v.value(i).to_string(),
                ));
            }
        }
        out
    }

    #[test]
    fn shared_input_is_counted_once_and_freed_by_the_last_bucket() {
        let counter = MemoryCounter::default();
        let inp = input(&[5, 1, 4, 2, 3, 0], None, &counter);
        let whole = counter.get();
        let (mut a, mut b) = (buffer(&counter), buffer(&counter));
        a.put(&inp, Some(vec![0, 2, 4]), 10);
        b.put(&inp, Some(vec![1, 3, 5]), 20);
        drop(inp);
        // the input once, plus the two index lists
        assert_eq!(counter.get(), whole + 2 * 3 * 4);
        assert!(a.memory_size() < whole && b.memory_size() < whole);
        let run = a.take_sorted_run().unwrap().unwrap();
        assert_eq!(
            drain(run),
            vec![
                (3, 12, 0, "value-3".into()),
                (4, 11, 0, "value-4".into()),
                (5, 10, 0, "value-5".into())
            ]
        );
        // b still holds rows of the input: it stays
        assert_eq!(counter.get(), whole + 3 * 4);
        drop(b);
        assert_eq!(counter.get(), 0);
    }

    #[test]
    fn compact_copies_own_rows_and_keeps_sequence_numbers() {
        let counter = MemoryCounter::default();
        let first = input(&[9, 8, 7, 6], Some(&[0, 3, 0, 2]), &counter);
        let second = input(&[8, 1], None, &counter);
        let (mut a, mut b) = (buffer(&counter), buffer(&counter));
        a.put(&first, Some(vec![1, 3]), 0);
        a.put(&second, Some(vec![0]), 2);
        b.put(&first, Some(vec![0, 2]), 0);
        b.put(&second, Some(vec![1]), 2);
        drop((first, second));
        assert!(a.holds_shared_rows());
        a.compact().unwrap();
        assert!(!a.holds_shared_rows());
        assert_eq!(a.slices.len(), 1);
        // rows buffered later are copied out on their own; the owned batch is kept as is
        let third = input(&[5, 4], None, &counter);
        a.put(&third, Some(vec![1]), 3);
        b.put(&third, Some(vec![0]), 3);
        drop(third);
        let owned = a.slices[0].input.clone();
        a.compact().unwrap();
        assert_eq!(a.slices.len(), 2);
        assert!(Arc::ptr_eq(&a.slices[0].input, &owned));
        drop(owned);
        // b's rows go to a spill-free sorted run; a's survive the inputs being freed
        drop(b);
        let only_a = counter.get();
        assert!(only_a > 0 && only_a == a.memory_size());
        let run = a.take_sorted_run().unwrap().unwrap();
        // key 8 twice: the -D (seq 0) then the newer +I (seq 2)
        assert_eq!(
            drain(run),
            vec![
                (4, 3, 0, "value-4".into()),
                (6, 1, 2, "value-6".into()),
                (8, 0, 3, "value-8".into()),
                (8, 2, 0, "value-8".into())
            ]
        );
        assert_eq!(counter.get(), 0);
    }

    /// Four inputs (one a slice of a bigger batch, two with row kinds, one routed in part) into
    /// `a`, the same rows into `b` while the test holds the inputs (shared: no consolidation).
    /// Buffers of sorted slices (sorted batches, a sorted batch's ascending rows) are merged,
    /// not sorted, and give the runs a sort gives: rows by (key, sequence), duplicates of a key
    /// in sequence order across and within slices, row kinds and sequence numbers (with a gap
    /// between slices) following their rows; the deduplicated run keeps each key's newest row.
    #[test]
    fn sorted_slices_merge_into_the_runs_a_sort_gives() {
        let counter = MemoryCounter::default();
        let mut state = 0x2545_F491_4F6C_DD1Du64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut model: Vec<(i64, i64, i8, String)> = vec![];
        let mut inputs = vec![];
        let (mut a, mut b, mut seq) = (buffer(&counter), buffer(&counter), 1000i64);
        for bi in 0..4usize {
            let mut keys: Vec<i64> = (0..300 + 50 * bi).map(|_| (next() % 500) as i64).collect();
            keys.sort_unstable();
            let kinds: Vec<i8> = keys.iter().map(|_| (next() % 4) as i8).collect();
            let inp = input(&keys, (bi % 2 == 1).then_some(&kinds[..]), &counter);
            let rows = (bi == 2).then(|| (0..keys.len() as u32).step_by(2).collect::<Vec<u32>>());
            let picked: Vec<usize> = match &rows {
                Some(r) => r.iter().map(|&i| i as usize).collect(),
                None => (0..keys.len()).collect(),
            };
            for (j, &i) in picked.iter().enumerate() {
                let kind = if bi % 2 == 1 { kinds[i] } else { 0 };
                model.push((keys[i], seq + j as i64, kind, format!("value-{}", keys[i])));
            }
            a.put(&inp, rows.clone(), seq);
            b.put(&inp, rows, seq);
            seq += picked.len() as i64 + if bi == 1 { 1000 } else { 0 };
            inputs.push(inp);
        }
        let merged = merge_sorted_slices(&a.slices, &a.key_idx).unwrap();
        assert!(merged.is_some(), "sorted slices take the merge");
        model.sort_by_key(|r| (r.0, r.1));
        let mut last: Vec<(i64, i64, i8, String)> = vec![];
        for r in &model {
            match last.last_mut() {
                Some(l) if l.0 == r.0 => *l = r.clone(),
                _ => last.push(r.clone()),
            }
        }
        assert_eq!(drain(a.take_sorted_run().unwrap().unwrap()), model);
        assert_eq!(
            drain(b.take_deduplicated().unwrap().unwrap().unwrap()),
            last
        );
        // an unsorted slice takes the sort; so do tiny sorted ones (row-by-row writes)
        let mut c = buffer(&counter);
        let desc: Vec<i64> = (0..300).rev().collect();
        c.put(&input(&desc, None, &counter), None, 1);
        assert!(merge_sorted_slices(&c.slices, &c.key_idx)
            .unwrap()
            .is_none());
        let mut d = buffer(&counter);
        d.put(&input(&[1, 2, 3], None, &counter), None, 1);
        assert!(merge_sorted_slices(&d.slices, &d.key_idx)
            .unwrap()
            .is_none());
    }

    fn two_buffers(counter: &MemoryCounter) -> (SortBuffer, SortBuffer, Vec<Arc<SharedInput>>) {
        let big: Vec<i64> = (0..40).map(|i| (i * 7919) % 23).collect();
        let whole = input(&big, None, counter);
        let sliced = Arc::new(SharedInput::new(whole.batch.slice(10, 20), None, counter));
        let inputs = vec![
            input(&[9, 3, 5, 3], Some(&[0, 3, 0, 2]), counter),
            sliced,
            input(&[3, 1, 9], None, counter),
            input(&[4, 3, 8, 0, 7], Some(&[0, 0, 3, 0, 1]), counter),
        ];
        let (mut a, mut b) = (buffer(counter), buffer(counter));
        let mut seq = 100;
        for (i, inp) in inputs.iter().enumerate() {
            let n = inp.batch.num_rows();
            let rows = (i == 3).then(|| vec![0u32, 1, 3, 4]);
            let len = rows.as_ref().map_or(n, Vec::len);
            b.put(inp, rows.clone(), seq);
            // `a` gets its own copy of the input: it alone holds it
            let own = Arc::new(SharedInput::new(
                inp.batch.clone(),
                inp.kinds.clone(),
                counter,
            ));
            a.put(&own, rows, seq);
            seq += len as i64;
        }
        (a, b, inputs)
    }

    #[test]
    fn consolidated_inputs_give_the_same_runs() {
        let counter = MemoryCounter::default();
        let (mut a, mut b, inputs) = two_buffers(&counter);
        let slices = std::mem::take(&mut a.slices);
        let consolidated = consolidate(slices, &counter).unwrap();
        assert_eq!(consolidated.len(), 1, "one batch of the buffer's own");
        assert_eq!(consolidated[0].len, a.rows);
        a.slices = consolidated;
        // b's inputs are held by the test too: left as they are (interleaved at the gather)
        let kept = consolidate(std::mem::take(&mut b.slices), &counter).unwrap();
        assert_eq!(kept.len(), 4);
        b.slices = kept;
        let (ra, rb) = (
            a.take_sorted_run().unwrap().unwrap(),
            b.take_sorted_run().unwrap().unwrap(),
        );
        let (ra, rb) = (drain(ra), drain(rb));
        assert_eq!(ra.len(), 4 + 20 + 3 + 4);
        assert_eq!(ra, rb);
        // -D/-U kinds and sequence numbers followed their rows
        assert!(ra.contains(&(3, 101, 3, "value-3".into())), "{ra:?}");
        assert!(ra.contains(&(7, 130, 1, "value-7".into())), "{ra:?}");
        drop(inputs);
        assert_eq!(counter.get(), 0);
    }

    #[test]
    fn flush_of_a_consolidated_buffer_matches_the_interleaved_one() {
        let counter = MemoryCounter::default();
        let (mut a, mut b, inputs) = two_buffers(&counter);
        let ra = drain(a.take_deduplicated().unwrap().unwrap().unwrap());
        let rb = drain(b.take_deduplicated().unwrap().unwrap().unwrap());
        assert_eq!(ra, rb);
        let keys: Vec<i64> = ra.iter().map(|r| r.0).collect();
        let mut sorted = keys.clone();
        sorted.dedup();
        assert_eq!(keys, sorted, "one row per key, ascending");
        drop(inputs);
    }

    #[test]
    fn consolidating_frees_the_inputs() {
        let counter = MemoryCounter::default();
        let mut a = buffer(&counter);
        for (i, seq) in [(0i64, 0i64), (1000, 1000), (2000, 2000)] {
            let keys: Vec<i64> = (i..i + 1000).rev().collect();
            a.put(&input(&keys, None, &counter), None, seq);
        }
        let before = counter.get();
        a.slices = consolidate(std::mem::take(&mut a.slices), &counter).unwrap();
        assert_eq!(a.slices.len(), 1);
        // the copy replaced the inputs: memory is what it was, not twice that
        let after = counter.get();
        assert!(
            after <= before + before / 10 && after >= before / 2,
            "{before} -> {after}"
        );
        let run = drain(a.take_sorted_run().unwrap().unwrap());
        assert_eq!(
            run.iter().map(|r| r.0).collect::<Vec<_>>(),
            (0..3000).collect::<Vec<_>>()
        );
        // key k arrived at position 999 - k % 1000 of the input whose sequence numbers start at
        // its thousand
        let seq_of = |k: i64| k - k % 1000 + 999 - k % 1000;
        assert!(
            run.iter().all(|r| r.1 == seq_of(r.0)),
            "sequence numbers stay with their rows"
        );
    }

    #[test]
    fn sequence_numbers_follow_rows_across_gaps_between_slices() {
        let counter = MemoryCounter::default();
        let first = input(&[7, 2, 5], None, &counter);
        let second = input(&[4, 2, 9, 1], Some(&[0, 3, 0, 0]), &counter);
        let mut a = buffer(&counter);
        // shared inputs (the test holds them): gathered from several slices, not consolidated
        a.put(&first, Some(vec![0, 2]), 10);
        a.put(&second, None, 40);
        a.put(&first, Some(vec![1]), 90);
        let run = drain(a.take_sorted_run().unwrap().unwrap());
        assert_eq!(
            run,
            vec![
                (1, 43, 0, "value-1".into()),
                (2, 41, 3, "value-2".into()),
                (2, 90, 0, "value-2".into()),
                (4, 40, 0, "value-4".into()),
                (5, 11, 0, "value-5".into()),
                (7, 10, 0, "value-7".into()),
                (9, 42, 0, "value-9".into())
            ]
        );
        drop((first, second));
    }

    #[test]
    fn deduplicated_run_keeps_the_newest_row_per_key() {
        let counter = MemoryCounter::default();
        let mut a = buffer(&counter);
        a.put(&input(&[3, 1, 3], None, &counter), None, 0);
        a.put(&input(&[1, 2], Some(&[0, 3]), &counter), None, 3);
        let run = a.take_deduplicated().unwrap().unwrap().unwrap();
        assert_eq!(
            drain(run),
            vec![
                (1, 3, 0, "value-1".into()),
                (2, 4, 3, "value-2".into()),
                (3, 2, 0, "value-3".into())
            ]
        );
        assert!(a.is_empty());
    }
}
