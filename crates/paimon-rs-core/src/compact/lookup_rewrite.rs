//! Lookup compaction's rewrite (paimon-behaviour.md §9.3, §10, §8.5; Java's
//! `LookupMergeTreeCompactRewriter`, `LookupChangelogMergeFunctionWrapper`,
//! `FirstRowMergeFunctionWrapper`): in a table that needs lookup, a key's records are merged
//! with only the lowest level > 0 kept (`LookupMergeFunction`); a rewrite to a level > 0 that
//! holds level-0 files looks every level-0 key without a higher record in the rewrite up in
//! the levels below the output, joins the found record to the merge, and from each key with a
//! level-0 record makes changelog (`changelog-producer = lookup`), deletion-vector marks
//! (`deletion-vectors.enabled`) or, for first-row, drops keys that already exist.
//!
//! How the merge sees levels: each section's files are regrouped into one run per level
//! ([`leveled_runs`], a level's files are key-disjoint) so each record's run tells its level;
//! the records found by lookup are one more run, after the others, with a level above all.

use std::sync::{Arc, Mutex};

use arrow_array::{ArrayRef, RecordBatch};

use crate::kv::KvFileReader;
use crate::write::pipeline::write_pipelined;
use crate::write::rolling::RollingFileWriter;

use super::task::DvMarks;
use crate::error::{Error, Result};
use crate::lookup::{Hit, LookupCache, LookupLevels};
use crate::merge::engine::{Bound, MergeFunction};
use crate::merge::source::{Rec, Source};
use crate::merge::BatchIter;
use crate::options::{parse_bool, ChangelogProducer, CoreOptions, MergeEngineKind};
use crate::spec::binary_row::deserialize_row;
use crate::spec::datum::compare_rows;
use crate::spec::manifest::DataFileMeta;
use crate::spec::row_kind::{is_retract_byte as is_retract, RowKind};
use crate::spec::types::DataType;
use crate::table::FileStoreTable;

/// Level given to the records found by lookup: above every real level, so a record of the
/// rewrite's own levels > 0 is preferred (it is newer, and embodies the found one).
pub const LOOKUP_LEVEL: i32 = i32::MAX;

/// `changelog-producer.row-deduplicate` and its ignored fields.
#[derive(Debug, Clone, PartialEq)]
pub struct ChangelogMode {
    pub row_deduplicate: bool,
    pub ignore_fields: Vec<String>,
}

impl ChangelogMode {
    /// `changelog-producer.row-deduplicate` and `…-ignore-fields` of `table` (the `lookup` and
    /// `full-compaction` producers).
    pub fn from_table(table: &FileStoreTable) -> Result<Self> {
        let get = |k: &str| table.options.raw.get(k).map(|v| v.trim());
        let row_deduplicate = match get("changelog-producer.row-deduplicate") {
            Some(v) => parse_bool("changelog-producer.row-deduplicate", v)?,
            None => false,
        };
        let ignore_fields: Vec<String> = get("changelog-producer.row-deduplicate-ignore-fields")
            .map(|v| {
                v.split(',')
                    .map(|s| s.trim().to_string())
                    .filter(|s| !s.is_empty())
                    .collect()
            })
            .unwrap_or_default();
        for f in &ignore_fields {
            if table.schema.field(f).is_none() {
                return Err(Error::invalid(format!(
                    "option 'changelog-producer.row-deduplicate-ignore-fields': field '{f}' is \
                     not a column of the table"
                )));
            }
        }
        Ok(ChangelogMode {
            row_deduplicate,
            ignore_fields,
        })
    }
}

/// What a table's lookup compaction does, from its options.
#[derive(Debug, Clone)]
pub struct LookupSettings {
    pub cache: Arc<LookupCache>,
    /// `changelog-producer = lookup`.
    pub changelog: Option<ChangelogMode>,
    /// `deletion-vectors.enabled`.
    pub dv: bool,
    pub first_row: bool,
    /// Deduplicate without `sequence.field`: merging with a found record changes nothing, so
    /// such a table looks up only for changelog or deletion vectors, and upgrades level-0
    /// files without rewriting them.
    pub plain_dedup: bool,
}

impl LookupSettings {
    /// The lookup settings of `table` (None: its compaction does not look up).
    pub fn from_table(table: &FileStoreTable) -> Result<Option<Self>> {
        let o = &table.options;
        let Some(cache) = crate::lookup::cache_for(table)? else {
            return Ok(None);
        };
        check_lookup_wait(o)?;
        let changelog = if o.changelog_producer == ChangelogProducer::Lookup {
            Some(ChangelogMode::from_table(table)?)
        } else {
            None
        };
        let engine = table.merge_engine()?;
        Ok(Some(LookupSettings {
            cache,
            changelog,
            dv: o.deletion_vectors()?,
            first_row: o.merge_engine == MergeEngineKind::FirstRow,
            plain_dedup: engine.is_plain_deduplicate(),
        }))
    }

    /// Whether the merge of a level-0 key needs the record found in higher levels.
    pub fn looks_up(&self) -> bool {
        !self.plain_dedup || self.changelog.is_some() || self.dv
    }
}

/// [`write_pipelined`] of a compaction's merged records into `writer` (at `output_level`),
/// the rows written kept for the lookup cache ([`LookupCache::seed`]) when the table looks
/// keys up and the output level is ≥ 1: a later lookup in one of these files indexes the rows
/// it was handed instead of decoding the file just encoded. Nothing is kept past
/// `lookup.cache-max-memory-size` (the files are then read when first probed).
pub fn write_seeding(
    lookup: Option<&LookupSettings>,
    reader: &KvFileReader,
    output_level: i32,
    writer: RollingFileWriter,
    merged: impl Iterator<Item = Result<RecordBatch>>,
) -> Result<Vec<DataFileMeta>> {
    let Some(l) = lookup.filter(|l| output_level > 0 && l.looks_up()) else {
        return write_pipelined(writer, merged);
    };
    let budget = l.cache.max_memory() as usize;
    let mut kept: Option<Vec<RecordBatch>> = Some(vec![]);
    let mut bytes = 0usize;
    let merged = merged.inspect(|b| {
        if let (Ok(b), Some(k)) = (b, kept.as_mut()) {
            bytes += b.get_array_memory_size();
            if bytes > budget {
                kept = None;
            } else {
                k.push(b.clone());
            }
        }
    });
    let files = write_pipelined(writer, merged)?;
    if let Some(k) = kept {
        l.cache.seed(reader, &files, &k);
    }
    Ok(files)
}

/// `lookup-wait`: our writer compacts synchronously inside the commit, which is Java's
/// `lookup-wait = true` (the commit waits for lookup compaction, so a commit's changelog and
/// deletion vectors are in that commit). `false` (Java lets the commit go without waiting,
/// and the compaction's results land in a later commit) is refused rather than ignored.
fn check_lookup_wait(o: &CoreOptions) -> Result<()> {
    match o.raw.get("lookup-wait") {
        Some(v) if !parse_bool("lookup-wait", v)? => Err(Error::unsupported(
            "lookup-wait = false: paimon_rs compacts inside the commit, so a commit always \
             waits for its lookup compaction (lookup-wait = true)",
        )),
        _ => Ok(()),
    }
}

/// The files of a section regrouped into sorted runs by level: each level-0 file its own run,
/// each level ≥ 1 one run (its files are key-disjoint), in key order. Returns the runs and the
/// level of each.
pub fn leveled_runs(
    section: &[Vec<DataFileMeta>],
    key_types: &[DataType],
) -> Result<(Vec<Vec<DataFileMeta>>, Vec<i32>)> {
    let mut runs = vec![];
    let mut levels = vec![];
    let mut by_level: std::collections::BTreeMap<i32, Vec<DataFileMeta>> = Default::default();
    for f in section.iter().flatten() {
        if f.level == 0 {
            runs.push(vec![f.clone()]);
            levels.push(0);
        } else {
            by_level.entry(f.level).or_default().push(f.clone());
        }
    }
    for (level, files) in by_level {
        let mut keyed = Vec::with_capacity(files.len());
        for f in files {
            keyed.push((deserialize_row(key_types, &f.min_key)?, f));
        }
        keyed.sort_by(|a, b| compare_rows(&a.0, &b.0));
        runs.push(keyed.into_iter().map(|(_, f)| f).collect());
        levels.push(level);
    }
    Ok((runs, levels))
}

/// The distinct keys of level-0 runs, ascending and row-encoded for `levels`.
pub fn level0_keys(
    lookup: &LookupLevels,
    runs: Vec<BatchIter>,
    num_keys: usize,
) -> Result<arrow_row::Rows> {
    let mut cols: Vec<Vec<ArrayRef>> = vec![vec![]; num_keys];
    for run in runs {
        for b in run {
            let b = b?;
            for (c, col) in cols.iter_mut().enumerate() {
                col.push(b.column(c).clone());
            }
        }
    }
    let cols: Vec<ArrayRef> = cols
        .into_iter()
        .map(|parts| {
            let refs: Vec<&dyn arrow_array::Array> = parts.iter().map(|a| a.as_ref()).collect();
            arrow_select::concat::concat(&refs)
        })
        .collect::<std::result::Result<_, _>>()?;
    let rows = lookup.encode_keys(&cols)?;
    let mut idx: Vec<u32> = (0..rows.num_rows() as u32).collect();
    idx.sort_unstable_by(|&a, &b| rows.row(a as usize).cmp(&rows.row(b as usize)));
    idx.dedup_by(|a, b| rows.row(*a as usize) == rows.row(*b as usize));
    let take = arrow_array::UInt32Array::from(idx);
    let sorted: Vec<ArrayRef> = cols
        .iter()
        .map(|c| arrow_select::take::take(c.as_ref(), &take, None))
        .collect::<std::result::Result<_, _>>()?;
    lookup.encode_keys(&sorted)
}

/// The merge function of a lookup rewrite (Java's `LookupChangelogMergeFunctionWrapper`, and
/// `FirstRowMergeFunctionWrapper` for first-row) around the engine's function.
pub struct LookupWrapper {
    pub inner: Box<dyn MergeFunction>,
    /// The run of the records found by lookup (its one batch's row `i` is `hits[i]`).
    pub lookup_run: Option<u32>,
    pub hits: Arc<Vec<Hit>>,
    pub first_row: bool,
    pub changelog: Option<ChangelogMode>,
    pub dv: Option<Arc<Mutex<DvMarks>>>,
}

const INSERT: i8 = RowKind::Insert.byte();
const UPDATE_BEFORE: i8 = RowKind::UpdateBefore.byte();
const UPDATE_AFTER: i8 = RowKind::UpdateAfter.byte();
const DELETE: i8 = RowKind::Delete.byte();

impl MergeFunction for LookupWrapper {
    fn merge(&mut self, b: &mut Bound, group: &[Rec], sources: &[Source]) -> Result<()> {
        let high = b.high_level(group, sources);
        let contains_level0 = group.iter().any(|&r| b.level_of(sources, r) <= 0);
        let looked_up = high.filter(|h| Some(sources[h.src as usize].run) == self.lookup_run);
        let lowest = b.lowest_level_only(group, sources);
        let before_len = b.out_len();
        if self.first_row {
            if looked_up.is_some() {
                // the key exists in a higher level: its first row is there (§8.5)
                return Ok(());
            }
            b.merge_inner(self.inner.as_mut(), &lowest, sources)?;
            if self.changelog.is_some() && contains_level0 && high.is_none() {
                if let Some((k, seq, kind, cells)) = merge_result(b, sources, before_len) {
                    if !is_retract(kind) {
                        b.push_changelog(k, seq, INSERT, cells);
                    }
                }
            }
            return Ok(());
        }
        if let (Some(h), Some(dv)) = (looked_up, &self.dv) {
            let hit = self
                .hits
                .get(h.row as usize)
                .ok_or_else(|| Error::Internal("lookup hit out of range".into()))?;
            dv.lock()
                .map_err(|_| Error::Internal("deletion marks poisoned".into()))?
                .entry(hit.file.clone())
                .or_default()
                .insert(hit.position);
        }
        b.merge_inner(self.inner.as_mut(), &lowest, sources)?;
        let Some(mode) = &self.changelog else {
            return Ok(());
        };
        if !contains_level0 {
            return Ok(());
        }
        let after = merge_result(b, sources, before_len);
        let before = high.filter(|h| !is_retract(b.kind_of(sources, *h)));
        diff_changelog(b, sources, mode, before, after)?;
        Ok(())
    }
}

/// The merge result of the group just merged, if the merge output one (its output grew past
/// `before_len`).
pub(super) fn merge_result(
    b: &Bound,
    sources: &[Source],
    before_len: usize,
) -> Option<(Rec, i64, i8, Vec<crate::merge::agg::Cell>)> {
    if b.out_len() > before_len {
        b.last_result(sources)
    } else {
        None
    }
}

/// The changelog of one key from its record `before` (an add, or None: the key was absent) and
/// the merge result `after` (§9.3, §9.4; Java's `LookupChangelogMergeFunctionWrapper` and
/// `FullChangelogMergeFunctionWrapper` alike): absent → add: `+I after`; add → retraction or
/// nothing: `-D before`; add → add: `-U before`, `+U after`, unless `row-deduplicate` finds the
/// values equal. Each record carries the sequence number of the record it describes.
pub(super) fn diff_changelog(
    b: &mut Bound,
    sources: &[Source],
    mode: &ChangelogMode,
    before: Option<Rec>,
    after: Option<(Rec, i64, i8, Vec<crate::merge::agg::Cell>)>,
) -> Result<()> {
    let after = after.filter(|a| !is_retract(a.2));
    match (before, after) {
        (None, Some((k, seq, _, cells))) => b.push_changelog(k, seq, INSERT, cells),
        (None, None) => {}
        (Some(h), after) => {
            let before_seq = sources[h.src as usize].seq[h.row as usize];
            let before_cells = b.cells_of(h);
            match after {
                Some((k, seq, _, cells)) => {
                    let same = mode.row_deduplicate
                        && b.cells_equal(sources, &before_cells, &cells, &mode.ignore_fields)?;
                    if !same {
                        b.push_changelog(h, before_seq, UPDATE_BEFORE, before_cells);
                        b.push_changelog(k, seq, UPDATE_AFTER, cells);
                    }
                }
                None => b.push_changelog(h, before_seq, DELETE, before_cells),
            }
        }
    }
    Ok(())
}

/// A one-batch run of the records found by lookup.
pub fn lookup_run(batch: RecordBatch) -> BatchIter {
    Box::new(std::iter::once(Ok(batch)))
}

#[cfg(test)]
mod tests {
    use crate::compact::{BucketCompactor, CompactSettings};
    use crate::lookup::tests::data_file;
    use crate::write::table_write::tests::table;

    /// §10: a level-0 key found by lookup in a higher level marks that row of that file
    /// deleted; keys the higher levels do not hold mark nothing. A plain deduplicate file is
    /// upgraded (not rewritten) below the max level, its marks still made.
    #[test]
    fn deletion_vector_marks_rows_that_level0_keys_supersede() {
        let dir = tempfile::tempdir().unwrap();
        // written as a plain table: deletion-vector writes are refused until the index files
        // are written
        let t = table(dir.path(), &[("bucket", "1")]);
        let dv = [("deletion-vectors.enabled".to_string(), "true".to_string())];
        let t = t.copy(&dv.into_iter().collect()).unwrap();
        let keys: Vec<i64> = (0..2000).collect();
        let big = data_file(&t, 5, &keys, 0);
        let small = data_file(&t, 0, &[3, 50, 5000], 10_000);
        let settings = CompactSettings::from_table(&t).unwrap();
        let mut c = BucketCompactor::new(
            &t,
            &settings,
            t.path.join("bucket-0"),
            vec![big.clone(), small.clone()],
        )
        .unwrap();
        let r = c.compact(false).unwrap().unwrap();
        // the level-0 file went up below the max level, as it is
        assert_eq!(r.before, vec![small.clone()]);
        assert_eq!(r.after.len(), 1);
        assert_eq!(r.after[0].file_name, small.file_name);
        assert_eq!(r.after[0].level, 4);
        assert!(r.changelog.is_empty());
        let marks: Vec<(String, Vec<u64>)> = r
            .dv_marks
            .iter()
            .map(|(f, m)| (f.clone(), m.iter().collect()))
            .collect();
        assert_eq!(marks, vec![(big.file_name.clone(), vec![3, 50])]);
    }

    /// A compaction of the same commit that rewrites a marked file takes its marks away (the
    /// rewritten file holds no superseded row); marks of other files stay.
    #[test]
    fn absorbing_a_rewrite_drops_the_marks_of_the_rewritten_file() {
        use crate::compact::levels::tests::file;
        use crate::compact::CompactResult;
        let mut acc = CompactResult::default();
        acc.dv_marks.entry("a".into()).or_default().insert(1);
        acc.dv_marks.entry("b".into()).or_default().insert(2);
        let mut later = CompactResult::of(
            vec![file("a", 3, 0, 9, 10, 0)],
            vec![file("new", 4, 0, 9, 10, 0)],
        );
        later.dv_marks.entry("b".into()).or_default().insert(7);
        acc.absorb(later);
        let marks: Vec<(String, Vec<u64>)> = acc
            .dv_marks
            .iter()
            .map(|(f, m)| (f.clone(), m.iter().collect()))
            .collect();
        assert_eq!(marks, vec![("b".into(), vec![2, 7])]);
    }
}
