//! Streaming sort-merge of K sorted runs with a loser tree (paimon-behaviour.md §7).
//!
//! Memory: the current batch of each run plus the batches the pending output still refers to;
//! output is emitted every `BATCH_ROWS` rows and whenever a run moved to its next batch, so the
//! exhausted batches are released. Keys are compared as i64 (single integer key) or as arrow-row
//! bytes; equal keys by sequence number, then retraction before add, then run index. A group of
//! equal keys is handed to the merge function ([`Bound::finish`]), which orders it by
//! `sequence.field` when configured.

use std::cmp::Ordering;

use arrow_array::cast::AsArray;
use arrow_array::types::{Int64Type, Int8Type};
use arrow_array::{Array, RecordBatch};
use arrow_buffer::ScalarBuffer;
use arrow_row::{RowConverter, Rows, SortField};
use arrow_schema::{DataType as ArrowType, SchemaRef};

use super::engine::{Bound, MergeEngine};
use super::loser_tree::LoserTree;
use super::{BatchIter, KvLayout};
use crate::error::{Error, Result};
use crate::write::input::is_retract;

/// Output batch size in rows.
pub const BATCH_ROWS: usize = 8192;

enum Keys {
    I64(ScalarBuffer<i64>),
    Rows(Rows),
}

/// One input batch, kept while the output may refer to it.
pub struct Source {
    pub batch: RecordBatch,
    keys: Keys,
    pub seq: ScalarBuffer<i64>,
    pub kind: ScalarBuffer<i8>,
}

/// A record: row `row` of source `src`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rec {
    pub src: u32,
    pub row: u32,
}

struct Cursor {
    run: BatchIter,
    src: usize,
    pos: usize,
    len: usize,
    done: bool,
    /// The current record's i64 key (integer-key mode), sequence number and add-ness, cached
    /// so that tree comparisons touch only the cursors.
    key: i64,
    seq: i64,
    add: bool,
}

impl Cursor {
    #[inline]
    fn load(&mut self, sources: &[Source]) {
        let s = &sources[self.src];
        if let Keys::I64(k) = &s.keys {
            self.key = k[self.pos];
        }
        self.seq = s.seq[self.pos];
        self.add = !is_retract(s.kind[self.pos]);
    }
}

enum KeyConv {
    I64,
    Rows(RowConverter),
}

fn int_key(t: &ArrowType) -> bool {
    matches!(
        t,
        ArrowType::Int64
            | ArrowType::Int32
            | ArrowType::Int16
            | ArrowType::Int8
            | ArrowType::Date32
    )
}

impl KeyConv {
    fn new(schema: &SchemaRef, layout: KvLayout) -> Result<Self> {
        let f = schema.fields();
        if layout.num_keys == 1 && int_key(f[0].data_type()) {
            return Ok(KeyConv::I64);
        }
        let sort: Vec<SortField> = f[..layout.num_keys]
            .iter()
            .map(|x| SortField::new(x.data_type().clone()))
            .collect();
        Ok(KeyConv::Rows(RowConverter::new(sort)?))
    }

    fn source(&self, batch: RecordBatch, layout: KvLayout) -> Result<Source> {
        let keys = match self {
            KeyConv::I64 => {
                let c = batch.column(0);
                let c = if c.data_type() == &ArrowType::Int64 {
                    c.clone()
                } else {
                    arrow_cast::cast(c, &ArrowType::Int64)?
                };
                Keys::I64(c.as_primitive::<Int64Type>().values().clone())
            }
            KeyConv::Rows(conv) => {
                Keys::Rows(conv.convert_columns(&batch.columns()[..layout.num_keys])?)
            }
        };
        let seq = batch
            .column(layout.seq_col())
            .as_primitive_opt::<Int64Type>()
            .ok_or_else(|| Error::Internal("_SEQUENCE_NUMBER is not BIGINT".into()))?
            .values()
            .clone();
        let kind = batch
            .column(layout.kind_col())
            .as_primitive_opt::<Int8Type>()
            .ok_or_else(|| Error::Internal("_VALUE_KIND is not TINYINT".into()))?
            .values()
            .clone();
        Ok(Source {
            batch,
            keys,
            seq,
            kind,
        })
    }
}

#[inline]
fn key_cmp(a: &Source, ra: usize, b: &Source, rb: usize) -> Ordering {
    match (&a.keys, &b.keys) {
        (Keys::I64(x), Keys::I64(y)) => x[ra].cmp(&y[rb]),
        (Keys::Rows(x), Keys::Rows(y)) => x.row(ra).cmp(&y.row(rb)),
        _ => Ordering::Equal,
    }
}

#[inline]
fn less(cursors: &[Cursor], sources: &[Source], rows: bool, a: usize, b: usize) -> bool {
    let (ca, cb) = (&cursors[a], &cursors[b]);
    if ca.done {
        return false;
    }
    if cb.done {
        return true;
    }
    let o = if rows {
        key_cmp(&sources[ca.src], ca.pos, &sources[cb.src], cb.pos)
    } else {
        ca.key.cmp(&cb.key)
    };
    o.then(ca.seq.cmp(&cb.seq))
        .then(ca.add.cmp(&cb.add))
        .then(a.cmp(&b))
        == Ordering::Less
}

/// Next non-empty batch of a run.
fn next_batch(run: &mut BatchIter) -> Result<Option<RecordBatch>> {
    for b in run.by_ref() {
        let b = b?;
        if b.num_rows() > 0 {
            return Ok(Some(b));
        }
    }
    Ok(None)
}

pub struct SortMergeReader {
    cursors: Vec<Cursor>,
    sources: Vec<Source>,
    tree: LoserTree,
    conv: KeyConv,
    layout: KvLayout,
    schema: SchemaRef,
    bound: Bound,
    group: Vec<Rec>,
    /// Plain deduplicate: only the newest record of a key matters, no group is collected.
    last_only: bool,
    rows_mode: bool,
    group_key: i64,
    drop_delete: bool,
    /// A run moved to a new batch since the last emit: emit soon to release the old one.
    dirty: bool,
    finished: bool,
}

impl SortMergeReader {
    /// `Ok(None)` when every run is empty.
    pub fn new(
        runs: Vec<BatchIter>,
        layout: KvLayout,
        engine: &MergeEngine,
        drop_delete: bool,
    ) -> Result<Option<Self>> {
        let mut firsts = Vec::with_capacity(runs.len());
        for mut run in runs {
            let b = next_batch(&mut run)?;
            firsts.push((run, b));
        }
        let Some(schema) = firsts
            .iter()
            .find_map(|(_, b)| b.as_ref().map(|b| b.schema()))
        else {
            return Ok(None);
        };
        let conv = KeyConv::new(&schema, layout)?;
        let bound = engine.bind(&schema, layout)?;
        let mut cursors = Vec::with_capacity(firsts.len());
        let mut sources = vec![];
        for (run, b) in firsts {
            let Some(b) = b else { continue };
            let len = b.num_rows();
            sources.push(conv.source(b, layout)?);
            let mut c = Cursor {
                run,
                src: sources.len() - 1,
                pos: 0,
                len,
                done: false,
                key: 0,
                seq: 0,
                add: true,
            };
            c.load(&sources);
            cursors.push(c);
        }
        let rows_mode = matches!(conv, KeyConv::Rows(_));
        let tree = LoserTree::new(cursors.len(), |a, b| {
            less(&cursors, &sources, rows_mode, a, b)
        });
        let last_only = bound.last_only();
        Ok(Some(SortMergeReader {
            cursors,
            sources,
            tree,
            conv,
            layout,
            schema,
            bound,
            group: Vec::with_capacity(16),
            last_only,
            rows_mode,
            group_key: 0,
            drop_delete,
            dirty: false,
            finished: false,
        }))
    }

    fn advance(&mut self, w: usize) -> Result<()> {
        let c = &mut self.cursors[w];
        c.pos += 1;
        if c.pos < c.len {
            c.load(&self.sources);
            return Ok(());
        }
        self.dirty = true;
        match next_batch(&mut c.run)? {
            Some(b) => {
                c.len = b.num_rows();
                c.pos = 0;
                self.sources.push(self.conv.source(b, self.layout)?);
                c.src = self.sources.len() - 1;
                c.load(&self.sources);
            }
            None => c.done = true,
        }
        Ok(())
    }

    fn same_key(&self, a: Rec, b: Rec) -> bool {
        key_cmp(
            &self.sources[a.src as usize],
            a.row as usize,
            &self.sources[b.src as usize],
            b.row as usize,
        ) == Ordering::Equal
    }

    fn finish_group(&mut self) -> Result<()> {
        if self.group.is_empty() {
            return Ok(());
        }
        let mut group = std::mem::take(&mut self.group);
        let r = self.bound.finish(&mut group, &self.sources);
        group.clear();
        self.group = group;
        r
    }

    /// Build the pending output, then release sources no cursor needs.
    fn emit(&mut self) -> Result<Option<RecordBatch>> {
        let out = self.bound.build(&self.schema, &self.sources)?;
        if self.dirty || self.finished {
            let mut keep: Vec<Option<usize>> = vec![None; self.sources.len()];
            let mut kept = vec![];
            let old = std::mem::take(&mut self.sources);
            let mut old: Vec<Option<Source>> = old.into_iter().map(Some).collect();
            for c in self.cursors.iter_mut().filter(|c| !c.done) {
                let ni = match keep[c.src] {
                    Some(i) => i,
                    None => {
                        let s = old[c.src]
                            .take()
                            .ok_or_else(|| Error::Internal("merge source".into()))?;
                        kept.push(s);
                        keep[c.src] = Some(kept.len() - 1);
                        kept.len() - 1
                    }
                };
                c.src = ni;
            }
            self.sources = kept;
            self.dirty = false;
        }
        let Some(mut out) = out else { return Ok(None) };
        if self.drop_delete {
            let kinds = out
                .column(self.layout.kind_col())
                .as_primitive::<Int8Type>();
            if kinds.values().iter().any(|&k| is_retract(k)) {
                let keep: arrow_array::BooleanArray = kinds
                    .values()
                    .iter()
                    .map(|&k| Some(!is_retract(k)))
                    .collect();
                out = arrow_select::filter::filter_record_batch(&out, &keep)?;
            }
        }
        Ok((out.num_rows() > 0).then_some(out))
    }

    fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        loop {
            if self.finished {
                return Ok(None);
            }
            let w = self.tree.winner();
            if self.cursors.get(w).is_none_or(|c| c.done) {
                self.finish_group()?;
                self.finished = true;
                return self.emit();
            }
            let c = &self.cursors[w];
            let ckey = c.key;
            let rec = Rec {
                src: c.src as u32,
                row: c.pos as u32,
            };
            if let Some(&first) = self.group.first() {
                let same = if self.rows_mode {
                    self.same_key(first, rec)
                } else {
                    // integer keys: the group's key is the previous winner's
                    self.group_key == ckey
                };
                if !same {
                    self.finish_group()?;
                    // Emit a full batch, or earlier when exhausted input batches pile up
                    // (bounded memory: at most about two batches per run are held).
                    let pile = self.sources.len() > 2 * self.cursors.len() + 2;
                    if self.bound.out_len() >= BATCH_ROWS || (self.dirty && pile) {
                        if let Some(b) = self.emit()? {
                            return Ok(Some(b));
                        }
                        continue;
                    }
                }
            }
            self.group_key = ckey;
            if self.last_only {
                // plain deduplicate: the group is only ever its newest record
                match self.group.first_mut() {
                    Some(g) => *g = rec,
                    None => self.group.push(rec),
                }
            } else {
                self.group.push(rec);
            }
            self.advance(w)?;
            let (cursors, sources, rm) = (&self.cursors, &self.sources, self.rows_mode);
            self.tree.replay(|a, b| less(cursors, sources, rm, a, b));
        }
    }
}

impl Iterator for SortMergeReader {
    type Item = Result<RecordBatch>;
    fn next(&mut self) -> Option<Self::Item> {
        match self.next_batch() {
            Ok(Some(b)) => Some(Ok(b)),
            Ok(None) => None,
            Err(e) => {
                self.finished = true;
                Some(Err(e))
            }
        }
    }
}
