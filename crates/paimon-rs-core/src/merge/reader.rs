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
use arrow_row::{RowConverter, SortField};
use arrow_schema::{DataType as ArrowType, SchemaRef};

use super::engine::{Bound, MergeEngine, MergeFunction};
use super::loser_tree::{KeyedLoserTree, LoserTree};
use super::source::{Keys, Rec, Source};
use super::{BatchIter, KvLayout};
use crate::error::{Error, Result};
use crate::spec::row_kind::is_retract_byte as is_retract;

/// Output batch size in rows.
pub const BATCH_ROWS: usize = 8192;

/// The comparison state of a run's current record, kept apart from the cursors so that tree
/// replays touch one small contiguous array: the i64 key (integer-key mode), the sequence number
/// and a tie-breaker `DONE | ADD | run index` (retraction before add, exhausted runs last).
#[derive(Debug, Clone, Copy)]
struct Head {
    key: i64,
    seq: i64,
    tie: u32,
}

const DONE: u32 = 1 << 31;
const ADD: u32 = 1 << 30;
const LEAF: u32 = ADD - 1;

/// The tree over the runs: integer keys keep the heads in the nodes, row keys compare through
/// the cursors.
enum Tree {
    Int(KeyedLoserTree),
    Rows(LoserTree),
}

impl Head {
    /// An exhausted run: greater than every live record (key and sequence number at their
    /// maximum, and the DONE bit decides a tie with a live record at the maximum).
    fn done(idx: usize) -> Head {
        Head {
            key: i64::MAX,
            seq: i64::MAX,
            tie: DONE | idx as u32,
        }
    }
}

struct Cursor {
    run: BatchIter,
    /// Index of the run among the reader's inputs.
    run_idx: u32,
    src: usize,
    pos: usize,
    len: usize,
    /// The current batch's i64 keys (integer-key mode; empty otherwise), sequence numbers and
    /// row kinds, held here so that advancing does not go through `sources`.
    keys: ScalarBuffer<i64>,
    seq: ScalarBuffer<i64>,
    kind: ScalarBuffer<i8>,
}

impl Cursor {
    fn attach(&mut self, s: &Source, src: usize) {
        self.src = src;
        self.pos = 0;
        self.len = s.batch.num_rows();
        self.keys = match &s.keys {
            Keys::I64(k) => k.clone(),
            Keys::Rows(_) => ScalarBuffer::from(Vec::<i64>::new()),
        };
        self.seq = s.seq.clone();
        self.kind = s.kind.clone();
    }

    #[inline(always)]
    fn head(&self, idx: usize, int_keys: bool) -> Head {
        let p = self.pos;
        Head {
            key: if int_keys { self.keys[p] } else { 0 },
            seq: self.seq[p],
            tie: idx as u32 | if is_retract(self.kind[p]) { 0 } else { ADD },
        }
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

    fn source(&self, batch: RecordBatch, layout: KvLayout, run: u32) -> Result<Source> {
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
            run,
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

/// Row-encoded keys: the key bytes of the current rows, then (seq, tie).
#[inline]
fn less_rows(heads: &[Head], cursors: &[Cursor], sources: &[Source], a: usize, b: usize) -> bool {
    let (x, y) = (&heads[a], &heads[b]);
    if (x.tie | y.tie) & DONE != 0 {
        return x.tie < y.tie;
    }
    let (ca, cb) = (&cursors[a], &cursors[b]);
    key_cmp(&sources[ca.src], ca.pos, &sources[cb.src], cb.pos)
        .then(x.seq.cmp(&y.seq))
        .then(x.tie.cmp(&y.tie))
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

/// Changelog batches a merge produced, in key order (taken by the writer of changelog files).
pub type ChangelogSink = std::sync::Arc<std::sync::Mutex<Vec<RecordBatch>>>;

/// A merge function wrapper: given the engine's function, the one the merge calls.
pub type WrapFn = Box<dyn FnOnce(Box<dyn MergeFunction>) -> Box<dyn MergeFunction> + Send>;

/// What lookup compaction adds to a merge (Java's `LookupMergeFunction` and its wrappers).
#[derive(Default)]
pub struct MergeHooks {
    /// The level of each input run: of a key's records at levels > 0 only the lowest level's
    /// is merged.
    pub run_levels: Option<Vec<i32>>,
    /// Wraps the merge function; the wrapper sees every group, a lone record too.
    pub wrap: Option<WrapFn>,
    /// Where the wrapper's changelog records go.
    pub changelog: Option<ChangelogSink>,
}

pub struct SortMergeReader {
    cursors: Vec<Cursor>,
    heads: Vec<Head>,
    sources: Vec<Source>,
    tree: Tree,
    conv: KeyConv,
    layout: KvLayout,
    schema: SchemaRef,
    bound: Bound,
    group: Vec<Rec>,
    /// Plain deduplicate: only the newest record of a key matters, no group is collected.
    last_only: bool,
    /// Every group, a lone record too, goes through the bound merge (levels or a wrapper).
    sees_all: bool,
    /// Where the changelog records of a changelog-producing wrapper go, batch by batch.
    changelog: Option<ChangelogSink>,
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
        Self::with_hooks(runs, layout, engine, drop_delete, MergeHooks::default())
    }

    /// [`Self::new`] with the lookup hooks (run levels, a wrapping merge function, a changelog
    /// sink).
    pub fn with_hooks(
        runs: Vec<BatchIter>,
        layout: KvLayout,
        engine: &MergeEngine,
        drop_delete: bool,
        hooks: MergeHooks,
    ) -> Result<Option<Self>> {
        let mut firsts = Vec::with_capacity(runs.len());
        for (i, mut run) in runs.into_iter().enumerate() {
            let b = next_batch(&mut run)?;
            firsts.push((i as u32, run, b));
        }
        let Some(schema) = firsts
            .iter()
            .find_map(|(_, _, b)| b.as_ref().map(|b| b.schema()))
        else {
            return Ok(None);
        };
        let conv = KeyConv::new(&schema, layout)?;
        let rows_mode = matches!(conv, KeyConv::Rows(_));
        let mut bound = engine.bind(&schema, layout)?;
        if let Some(levels) = hooks.run_levels {
            bound.set_run_levels(levels);
        }
        if let Some(wrap) = hooks.wrap {
            bound.wrap(wrap);
        }
        let sees_all = bound.sees_all();
        let mut cursors = Vec::with_capacity(firsts.len());
        let mut heads = Vec::with_capacity(firsts.len());
        let mut sources = vec![];
        for (run_idx, run, b) in firsts {
            let Some(b) = b else { continue };
            sources.push(conv.source(b, layout, run_idx)?);
            let src = sources.len() - 1;
            let mut c = Cursor {
                run,
                run_idx,
                src,
                pos: 0,
                len: 0,
                keys: ScalarBuffer::from(Vec::<i64>::new()),
                seq: ScalarBuffer::from(Vec::<i64>::new()),
                kind: ScalarBuffer::from(Vec::<i8>::new()),
            };
            c.attach(&sources[src], src);
            heads.push(c.head(cursors.len(), !rows_mode));
            cursors.push(c);
        }
        if cursors.len() > LEAF as usize {
            return Err(Error::Internal(format!("merge of {} runs", cursors.len())));
        }
        let tree = if rows_mode {
            Tree::Rows(LoserTree::new(cursors.len(), |a, b| {
                less_rows(&heads, &cursors, &sources, a, b)
            }))
        } else {
            let leaves: Vec<_> = heads.iter().map(|h| (h.key, h.seq, h.tie)).collect();
            match KeyedLoserTree::new(&leaves) {
                Some(t) => Tree::Int(t),
                None => return Ok(None),
            }
        };
        let last_only = bound.last_only() && !sees_all;
        Ok(Some(SortMergeReader {
            cursors,
            heads,
            sources,
            tree,
            conv,
            layout,
            schema,
            bound,
            group: Vec::with_capacity(16),
            last_only,
            sees_all,
            changelog: hooks.changelog,
            rows_mode,
            group_key: 0,
            drop_delete,
            dirty: false,
            finished: false,
        }))
    }

    /// Batches currently held (the current batch of each live run plus exhausted batches the
    /// pending output still refers to).
    #[cfg(test)]
    pub fn held_batches(&self) -> usize {
        self.sources.len()
    }

    /// Move run `w` to its next record and restore the tree.
    #[inline(always)]
    fn advance(&mut self, w: usize) -> Result<()> {
        let c = &mut self.cursors[w];
        c.pos += 1;
        if c.pos < c.len {
            self.heads[w] = c.head(w, !self.rows_mode);
        } else {
            self.dirty = true;
            match next_batch(&mut c.run)? {
                Some(b) => {
                    self.sources
                        .push(self.conv.source(b, self.layout, c.run_idx)?);
                    let src = self.sources.len() - 1;
                    c.attach(&self.sources[src], src);
                    self.heads[w] = c.head(w, !self.rows_mode);
                }
                None => self.heads[w] = Head::done(w),
            }
        }
        match &mut self.tree {
            Tree::Int(t) => {
                let h = self.heads[w];
                t.replay(w, (h.key, h.seq, h.tie));
            }
            Tree::Rows(t) => {
                let (h, c, s) = (&self.heads, &self.cursors, &self.sources);
                t.replay(|a, b| less_rows(h, c, s, a, b));
            }
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
        match self.group.len() {
            0 => Ok(()),
            1 if !self.sees_all => {
                // a lone record (the common case): no take/restore of the group vector
                self.bound.push_row(self.group[0], &self.sources);
                self.group.clear();
                Ok(())
            }
            _ => {
                let mut group = std::mem::take(&mut self.group);
                let r = self.bound.finish(&mut group, &self.sources);
                group.clear();
                self.group = group;
                r
            }
        }
    }

    /// Build the pending output, then release sources no cursor needs.
    fn emit(&mut self) -> Result<Option<RecordBatch>> {
        let out = self.bound.build(&self.schema, &self.sources)?;
        if let Some(sink) = &self.changelog {
            if let Some(c) = self.bound.build_changelog(&self.schema, &self.sources)? {
                sink.lock()
                    .map_err(|_| Error::Internal("changelog sink poisoned".into()))?
                    .push(c);
            }
        }
        if self.dirty || self.finished {
            let mut keep: Vec<Option<usize>> = vec![None; self.sources.len()];
            let mut kept = vec![];
            let old = std::mem::take(&mut self.sources);
            let mut old: Vec<Option<Source>> = old.into_iter().map(Some).collect();
            for (c, h) in self.cursors.iter_mut().zip(&self.heads) {
                if h.tie & DONE != 0 {
                    continue;
                }
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
            let head = match &self.tree {
                Tree::Int(t) => {
                    let (key, seq, tie) = t.winner();
                    Some(Head { key, seq, tie })
                }
                Tree::Rows(t) => self.heads.get(t.winner()).copied(),
            };
            let (w, head) = match head {
                Some(h) if h.tie & DONE == 0 => ((h.tie & LEAF) as usize, h),
                _ => {
                    self.finish_group()?;
                    self.finished = true;
                    return self.emit();
                }
            };
            let c = &self.cursors[w];
            let rec = Rec {
                src: c.src as u32,
                row: c.pos as u32,
            };
            if let Some(&first) = self.group.first() {
                let same = if self.rows_mode {
                    self.same_key(first, rec)
                } else {
                    // integer keys: the group's key is the previous winner's
                    self.group_key == head.key
                };
                if !same {
                    if self.last_only {
                        // the group is its newest record: output it as it is
                        self.bound.push_pick(first);
                        self.group.clear();
                    } else {
                        self.finish_group()?;
                    }
                    // Emit a full batch, or earlier when exhausted input batches pile up
                    // (bounded memory: at most about two batches per run are held).
                    if self.bound.out_len() >= BATCH_ROWS
                        || (self.dirty && self.sources.len() > 2 * self.cursors.len() + 2)
                    {
                        if let Some(b) = self.emit()? {
                            return Ok(Some(b));
                        }
                        continue;
                    }
                }
            }
            self.group_key = head.key;
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
