//! Per-bucket write buffers. The seam for the memory-bounded, spilling buffer: a buffer accepts
//! batches and hands back everything it holds at flush time.

use arrow_array::{Array, Int8Array, RecordBatch};
use arrow_schema::SchemaRef;

use crate::error::Result;

/// What a bucket writer buffers between flushes.
pub trait WriteBuffer: Send + Sync {
    /// Add rows (already aligned to the table schema) with their row kinds.
    fn put(&mut self, batch: RecordBatch, kinds: Option<Int8Array>) -> Result<()>;
    /// Bytes of Arrow memory held.
    fn memory_size(&self) -> usize;
    fn num_rows(&self) -> usize;
    /// Take everything out, in arrival order, as one batch plus its row kinds.
    fn drain(&mut self) -> Result<Option<(RecordBatch, Int8Array)>>;
}

/// Holds batches in memory as they arrived.
pub struct InMemoryBuffer {
    schema: SchemaRef,
    batches: Vec<RecordBatch>,
    kinds: Vec<Int8Array>,
    rows: usize,
    bytes: usize,
}

impl InMemoryBuffer {
    pub fn new(schema: SchemaRef) -> Self {
        InMemoryBuffer {
            schema,
            batches: vec![],
            kinds: vec![],
            rows: 0,
            bytes: 0,
        }
    }
}

impl WriteBuffer for InMemoryBuffer {
    fn put(&mut self, batch: RecordBatch, kinds: Option<Int8Array>) -> Result<()> {
        let n = batch.num_rows();
        if n == 0 {
            return Ok(());
        }
        let kinds = kinds.unwrap_or_else(|| Int8Array::from(vec![0i8; n]));
        self.bytes += batch.get_array_memory_size() + kinds.get_array_memory_size();
        self.rows += n;
        self.batches.push(batch);
        self.kinds.push(kinds);
        Ok(())
    }

    fn memory_size(&self) -> usize {
        self.bytes
    }

    fn num_rows(&self) -> usize {
        self.rows
    }

    fn drain(&mut self) -> Result<Option<(RecordBatch, Int8Array)>> {
        if self.rows == 0 {
            return Ok(None);
        }
        let batches = std::mem::take(&mut self.batches);
        let kinds = std::mem::take(&mut self.kinds);
        self.rows = 0;
        self.bytes = 0;
        let batch = if batches.len() == 1 {
            batches
                .into_iter()
                .next()
                .unwrap_or_else(|| RecordBatch::new_empty(self.schema.clone()))
        } else {
            arrow_select::concat::concat_batches(&self.schema, &batches)?
        };
        let refs: Vec<&dyn Array> = kinds.iter().map(|k| k as &dyn Array).collect();
        let k = arrow_select::concat::concat(&refs)?;
        let k = k
            .as_any()
            .downcast_ref::<Int8Array>()
            .cloned()
            .ok_or_else(|| crate::error::Error::Internal("kinds concat".into()))?;
        Ok(Some((batch, k)))
    }
}
