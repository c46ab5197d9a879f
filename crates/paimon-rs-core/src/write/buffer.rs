//! Per-bucket write buffers (paimon-behaviour.md §1.3). A primary-key bucket buffers key-value
//! batches in arrival (= sequence) order; when the writer's memory budget runs out the largest
//! buffer is sorted and spilled to disk as a sorted run (or, when spilling is off or the spill
//! disk cap is reached, flushed to level-0 files). At flush the in-memory run and the spilled
//! runs are merged through the table's merge function, so each key appears once per flush.

use arrow_array::{ArrayRef, RecordBatch, UInt32Array};
use arrow_schema::SchemaRef;

use crate::error::Result;
use crate::merge::{sort_by_key, BatchIter, KvLayout};
use crate::sort::{SpillFile, Spiller};

/// Rows per batch of a sorted run handed to spill files and the merge.
const RUN_BATCH_ROWS: usize = 64 * 1024;

/// The key-value rows of one bucket not yet written to a data file.
pub struct SortBuffer {
    schema: SchemaRef,
    layout: KvLayout,
    batches: Vec<RecordBatch>,
    bytes: usize,
    rows: usize,
    spills: Vec<SpillFile>,
}

impl SortBuffer {
    pub fn new(schema: SchemaRef, layout: KvLayout) -> Self {
        SortBuffer {
            schema,
            layout,
            batches: vec![],
            bytes: 0,
            rows: 0,
            spills: vec![],
        }
    }

    /// Add key-value rows whose sequence numbers are higher than all buffered ones.
    pub fn put(&mut self, batch: RecordBatch) {
        if batch.num_rows() == 0 {
            return;
        }
        self.bytes += batch.get_array_memory_size();
        self.rows += batch.num_rows();
        self.batches.push(batch);
    }

    /// Arrow memory held in memory (spilled runs not counted).
    pub fn memory_size(&self) -> usize {
        self.bytes
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

    /// Sort the in-memory rows by (key, sequence) and take them out as one run (duplicates of a
    /// key stay, in sequence order).
    fn take_sorted_run(&mut self) -> Result<Vec<RecordBatch>> {
        self.take_sorted(false)
    }

    /// With nothing spilled, the newest record of each key, sorted by key, gathered in one pass
    /// (the deduplicate engine needs no merge). None if runs were spilled.
    pub fn take_deduplicated(&mut self) -> Result<Option<Vec<RecordBatch>>> {
        if !self.spills.is_empty() {
            return Ok(None);
        }
        self.take_sorted(true).map(Some)
    }

    fn take_sorted(&mut self, last_per_key: bool) -> Result<Vec<RecordBatch>> {
        if self.rows == 0 {
            return Ok(vec![]);
        }
        let batches = std::mem::take(&mut self.batches);
        self.rows = 0;
        self.bytes = 0;
        let all = if batches.len() == 1 {
            batches
                .into_iter()
                .next()
                .unwrap_or_else(|| RecordBatch::new_empty(self.schema.clone()))
        } else {
            arrow_select::concat::concat_batches(&self.schema, &batches)?
        };
        let keys: Vec<ArrayRef> = all.columns()[..self.layout.num_keys].to_vec();
        // positions are in sequence order, so ties on the key keep sequence order
        let (sorted, bounds) = sort_by_key(&keys, None, all.num_rows())?;
        let sorted = if last_per_key {
            bounds[1..].iter().map(|&end| sorted[end - 1]).collect()
        } else {
            sorted
        };
        let mut out = Vec::with_capacity(sorted.len().div_ceil(RUN_BATCH_ROWS));
        for chunk in sorted.chunks(RUN_BATCH_ROWS) {
            let idx = UInt32Array::from(chunk.to_vec());
            out.push(arrow_select::take::take_record_batch(&all, &idx)?);
        }
        Ok(out)
    }

    /// Estimated bytes a spill of the in-memory rows needs on disk (uncompressed upper bound).
    pub fn spill_estimate(&self) -> u64 {
        self.bytes as u64
    }

    /// Sort the in-memory rows and write them to a spill file.
    pub fn spill(&mut self, spiller: &Spiller) -> Result<()> {
        let run = self.take_sorted_run()?;
        if run.is_empty() {
            return Ok(());
        }
        let f = spiller.spill(&self.schema, run.into_iter().map(Ok))?;
        self.spills.push(f);
        Ok(())
    }

    /// Everything buffered as sorted runs (spilled runs reduced to the fan-in), emptying the
    /// buffer. Returns the runs and the spill bytes they hold (to release once consumed).
    pub fn take_runs(&mut self, spiller: &Spiller) -> Result<(Vec<BatchIter>, u64)> {
        let memory = self.take_sorted_run()?;
        let extra = usize::from(!memory.is_empty());
        let files = std::mem::take(&mut self.spills);
        let files = spiller.reduce_runs(&self.schema, self.layout, files, extra)?;
        let bytes = files.iter().map(|f| f.bytes).sum();
        // older runs first: spilled runs hold lower sequence numbers than the in-memory one
        let mut runs: Vec<BatchIter> = files
            .into_iter()
            .map(SpillFile::into_batches)
            .collect::<Result<_>>()?;
        if !memory.is_empty() {
            runs.push(Box::new(memory.into_iter().map(Ok)));
        }
        Ok((runs, bytes))
    }
}
