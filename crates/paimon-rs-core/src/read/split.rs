//! Splits: the unit of read work. Serializable so that a distributed engine (Spark) can ship
//! them to tasks.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::deletion::DeletionFile;

use super::row_tracking::{intersect_ranges, merge_ranges};
use crate::error::{Error, Result};
use crate::spec::manifest::DataFileMeta;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Split {
    pub snapshot_id: i64,
    /// Serialized partition BinaryRow.
    pub partition: Vec<u8>,
    pub bucket: i32,
    pub total_buckets: i32,
    /// Bucket directory relative to the table root, e.g. `dt=2024-01-01/bucket-0`.
    pub bucket_path: String,
    pub files: Vec<DataFileMeta>,
    /// The files can be read by concatenation (no two share a key).
    pub raw_convertible: bool,
    /// Deletion vectors of the files (by data file name; deletion-vector tables): where each is,
    /// read when its file is read.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub deletion_files: BTreeMap<String, DeletionFile>,
    /// The files are changelog files (an incremental read in `changelog` mode): read without
    /// merging, every record as stored with its row kind, in file order.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub changelog: bool,
    /// An incremental read between two tags of a primary-key deletion-vector table (Java's
    /// `IncrementalSplit`, read by `IncrementalDiffSplitRead`): `files` and `deletion_files`
    /// are the end tag's side, this the start tag's; the read returns the key diff of the two
    /// (`read::diff`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diff_before: Option<DiffBefore>,
    /// Files read in part (a slice of the plan's rows, [`slice_splits`]): by data file name,
    /// the physical row positions `[begin, end)` read of it, before its deletion vector; a
    /// file not named is read whole. Only splits of append tables are sliced (a data-evolution
    /// row-id group: the same part on each of its data files, [`slice_splits_by_row_id`]).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub row_slices: BTreeMap<String, (i64, i64)>,
    /// The row ids `[from, to)` a data-evolution split cut to a slice reads (sorted, disjoint:
    /// pypaimon's `IndexedSplit` row ranges, whose rows `row_count` reports); empty: not cut.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub row_id_ranges: Vec<(i64, i64)>,
}

/// The start tag's side of a diff split: its files of the bucket that are not in the end tag
/// with the same deletion vector, and their vectors in the start tag.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DiffBefore {
    pub files: Vec<DataFileMeta>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub deletion_files: BTreeMap<String, DeletionFile>,
}

impl Split {
    /// Rows of the split's files (of the part read, for a file read in part), before deletion
    /// vectors.
    /// A data-evolution split cut to a slice: the rows of its row-id ranges (each row once,
    /// however many files hold its columns), as pypaimon's `IndexedSplit.row_count`.
    pub fn row_count(&self) -> i64 {
        if !self.row_id_ranges.is_empty() {
            return self.row_id_ranges.iter().map(|(f, t)| t - f).sum();
        }
        self.files.iter().map(|f| self.rows_of(f)).sum()
    }

    /// Rows of `file` this split reads, before its deletion vector.
    pub fn rows_of(&self, file: &DataFileMeta) -> i64 {
        match self.row_slices.get(&file.file_name) {
            Some(&(begin, end)) => end - begin,
            None => file.row_count,
        }
    }

    pub fn file_size(&self) -> i64 {
        self.files.iter().map(|f| f.file_size).sum()
    }

    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        serde_json::to_vec(self).map_err(|e| Error::Internal(format!("split serialization: {e}")))
    }

    pub fn from_bytes(b: &[u8]) -> Result<Self> {
        serde_json::from_slice(b)
            .map_err(|e| Error::invalid(format!("not a serialized split: {e}")))
    }
}

/// The splits holding the plan's rows at positions `[start, end)`, counting every file's rows
/// (before deletion vectors) in plan order, files in split order: pypaimon's `with_slice` of an
/// append table (`scan_distribution.slice_append_splits`). A split with no row in the range
/// is left out; a file partly in it is read in part (`row_slices`); a range beyond the plan's
/// rows is clamped. Every worker that plans the same snapshot with the same filter gets the
/// same positions, so slices `[0, a)`, `[a, b)`, ... of one plan are disjoint and cover it.
pub fn slice_splits(splits: Vec<Split>, start: i64, end: i64) -> Vec<Split> {
    let mut out = Vec::new();
    let mut offset: i64 = 0;
    for mut split in splits {
        if offset >= end {
            break;
        }
        let mut kept = Vec::with_capacity(split.files.len());
        let mut slices = BTreeMap::new();
        for f in std::mem::take(&mut split.files) {
            let rows = split.rows_of(&f);
            let base = split.row_slices.get(&f.file_name).map_or(0, |s| s.0);
            let (begin, stop) = ((start - offset).max(0), (end - offset).min(rows));
            offset += rows;
            if begin < stop {
                let part = (base + begin, base + stop);
                if part != (0, f.row_count) {
                    slices.insert(f.file_name.clone(), part);
                }
                kept.push(f);
            }
        }
        keep_part(&mut out, split, kept, slices);
    }
    out
}

/// The slice `[start, end)` of a data-evolution plan (pypaimon's `with_slice` of such a table,
/// `DataEvolutionSplitGenerator._calculate_slice_row_ranges`): positions count the row ids of
/// the plan's files (overlapping ranges merged, so the rows of a group of files holding
/// different columns count once), in row-id order across the whole plan; the slice is the
/// row ids from the one at `start` to the one before `end` (clamped to the plan). Each split
/// keeps the row-id groups (read/data_evolution.rs `row_id_groups`: files of the same ids and
/// the `.blob` files inside them) that meet it, every file of a group together; a group partly
/// in the slice has the same part (`row_slices`) set on each of its data files (its `.blob`
/// files stay whole: the reader cuts the merged rows). A split without a group in the slice
/// is left out. Refused: a file without a first row id, a split already sliced.
pub fn slice_splits_by_row_id(
    table: &str,
    splits: Vec<Split>,
    start: i64,
    end: i64,
) -> Result<Vec<Split>> {
    if splits.iter().any(|s| !s.row_slices.is_empty()) {
        return Err(Error::unsupported(
            "slicing a slice of a data-evolution plan: slice the whole plan",
        )
        .with_table(table));
    }
    let files = splits.iter().flat_map(|s| s.files.iter());
    match row_id_slice_range(table, files, start, end)? {
        Some((from, to)) => cut_to_row_ids(table, splits, from, to),
        None => Ok(vec![]),
    }
}

/// The row ids `[from, to)` at positions `[start, end)` of a data-evolution plan of `files`
/// (see [`slice_splits_by_row_id`]): positions count the row ids the files cover, overlapping
/// ranges merged, in row-id order; None when the plan has no row at `start`. Refused: a file
/// without a first row id.
pub(crate) fn row_id_slice_range<'a>(
    table: &str,
    files: impl Iterator<Item = &'a DataFileMeta>,
    start: i64,
    end: i64,
) -> Result<Option<(i64, i64)>> {
    let mut ranges: Vec<(i64, i64)> = Vec::new();
    for f in files {
        let Some(first) = f.first_row_id else {
            return Err(Error::unsupported(format!(
                "slicing a data-evolution plan by row id: file '{}' has no first row id",
                f.file_name
            ))
            .with_table(table));
        };
        ranges.push((first, first + f.row_count));
    }
    ranges.sort_unstable();
    let mut merged: Vec<(i64, i64)> = Vec::with_capacity(ranges.len());
    for (f, t) in ranges {
        match merged.last_mut() {
            Some(last) if f < last.1 => last.1 = last.1.max(t),
            _ => merged.push((f, t)),
        }
    }
    let (mut from, mut to) = (None, None);
    let mut pos = 0i64;
    for &(f, t) in &merged {
        let next = pos + (t - f);
        if from.is_none() && start < next {
            from = Some(f + (start - pos).max(0));
        }
        if end <= next {
            to = Some(f + (end - pos));
            break;
        }
        pos = next;
    }
    let Some(from) = from else {
        return Ok(None);
    };
    let to = to.unwrap_or_else(|| merged.last().map_or(from, |r| r.1));
    Ok(Some((from, to)))
}

/// `splits` with only the row-id groups (read/data_evolution.rs `row_id_groups`) holding row
/// ids in `[from, to)`, every file of a group together; a group partly in the range has the
/// same part (`row_slices`) set on each of its data files (its `.blob` files stay whole: the
/// reader cuts the merged rows). A split left without a group is dropped.
pub(crate) fn cut_to_row_ids(
    table: &str,
    splits: Vec<Split>,
    from: i64,
    to: i64,
) -> Result<Vec<Split>> {
    let mut out = Vec::new();
    for split in splits {
        let groups = crate::read::data_evolution::row_id_groups(table, &split.files)?;
        let mut kept = Vec::with_capacity(split.files.len());
        let mut slices = BTreeMap::new();
        let mut ids: Vec<(i64, i64)> = vec![];
        for g in groups {
            let (first, rows) = (g[0].first_row_id.unwrap_or_default(), g[0].row_count);
            let (lo, hi) = (from.max(first), to.min(first + rows));
            if lo >= hi {
                continue;
            }
            ids.push((lo, hi));
            let part = (lo - first, hi - first);
            for f in g {
                if part != (0, rows) && !f.file_name.ends_with(".blob") {
                    slices.insert(f.file_name.clone(), part);
                }
                kept.push(f);
            }
        }
        ids.sort_unstable();
        let mut split = split;
        split.row_id_ranges = ids.into_iter().fold(vec![], |mut v, (f, t)| {
            match v.last_mut() {
                Some((_, end)) if *end == f => *end = t,
                _ => v.push((f, t)),
            }
            v
        });
        keep_part(&mut out, split, kept, slices);
    }
    Ok(out)
}

/// `splits` with only the row-id groups (read/data_evolution.rs `row_id_groups`) meeting
/// `ranges` (sorted, disjoint row ids `[from, to)`: what a filter's `_ROW_ID` `=` / `IN` /
/// `BETWEEN` can match, read/row_tracking.rs `row_id_filter_ranges`), every file of a group
/// together and read in the part it was (a slice's). A split left without a group is dropped;
/// a cut split's `row_id_ranges` keep the ids of its kept groups. The filter itself still
/// applies to the rows read (a group is kept whole).
pub(crate) fn prune_to_row_id_ranges(
    table: &str,
    splits: Vec<Split>,
    ranges: &[(i64, i64)],
) -> Result<Vec<Split>> {
    let mut out = Vec::new();
    for mut split in splits {
        let groups = crate::read::data_evolution::row_id_groups(table, &split.files)?;
        let mut kept = Vec::with_capacity(split.files.len());
        let mut spans = vec![];
        for g in groups {
            let Some(first) = g.first().and_then(|f| f.first_row_id) else {
                kept.extend(g); // no row id to judge by: kept (the reader names it)
                continue;
            };
            let span = (first, first + g[0].row_count);
            if intersect_ranges(&[span], ranges).is_empty() {
                continue;
            }
            spans.push(span);
            kept.extend(g);
        }
        if !split.row_id_ranges.is_empty() {
            split.row_id_ranges = intersect_ranges(&split.row_id_ranges, &merge_ranges(spans));
        }
        let mut slices = std::mem::take(&mut split.row_slices);
        slices.retain(|name, _| kept.iter().any(|f| &f.file_name == name));
        keep_part(&mut out, split, kept, slices);
    }
    Ok(out)
}

/// Pushes `split` to `out` with only the files `kept` (and their deletion vectors), read in
/// the parts `slices` gives; nothing when no file is kept.
fn keep_part(
    out: &mut Vec<Split>,
    mut split: Split,
    kept: Vec<DataFileMeta>,
    slices: BTreeMap<String, (i64, i64)>,
) {
    if kept.is_empty() {
        return;
    }
    let names: std::collections::BTreeSet<&str> =
        kept.iter().map(|f| f.file_name.as_str()).collect();
    split
        .deletion_files
        .retain(|k, _| names.contains(k.as_str()));
    split.files = kept;
    split.row_slices = slices;
    out.push(split);
}

/// The positions `[begin, end)` of `f` read: its part in `slices`, else all its rows.
pub(crate) fn part_of(slices: &BTreeMap<String, (i64, i64)>, f: &DataFileMeta) -> (u64, u64) {
    slices
        .get(&f.file_name)
        .map_or((0, f.row_count.max(0) as u64), |&(b, e)| {
            (b.max(0) as u64, e.max(0) as u64)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(changelog: bool) -> Split {
        Split {
            snapshot_id: 3,
            partition: vec![0; 8],
            bucket: 1,
            total_buckets: 2,
            bucket_path: "bucket-1".into(),
            files: vec![],
            raw_convertible: false,
            deletion_files: BTreeMap::new(),
            changelog,
            diff_before: None,
            row_slices: BTreeMap::new(),
            row_id_ranges: Vec::new(),
        }
    }

    /// The changelog flag survives serialization (the binding pickles splits for Spark), and a
    /// split serialized before the flag existed reads as a data split.
    #[test]
    fn changelog_flag_round_trips_and_defaults_to_data() {
        for c in [false, true] {
            let s = split(c);
            let b = s.to_bytes().unwrap();
            assert_eq!(Split::from_bytes(&b).unwrap(), s);
            assert_eq!(String::from_utf8_lossy(&b).contains("changelog"), c);
        }
        let old = br#"{"snapshot_id":3,"partition":[0,0,0,0,0,0,0,0],"bucket":1,"total_buckets":2,"bucket_path":"bucket-1","files":[],"raw_convertible":true}"#;
        assert!(!Split::from_bytes(old).unwrap().changelog);
        assert!(Split::from_bytes(old).unwrap().diff_before.is_none());
    }

    /// A diff split's start-tag side survives serialization (Spark ships it to a task).
    #[test]
    fn diff_side_round_trips() {
        let mut s = split(false);
        s.diff_before = Some(DiffBefore {
            files: vec![],
            deletion_files: BTreeMap::new(),
        });
        let b = s.to_bytes().unwrap();
        assert!(String::from_utf8_lossy(&b).contains("diff_before"));
        assert_eq!(Split::from_bytes(&b).unwrap(), s);
        assert!(!String::from_utf8_lossy(&split(false).to_bytes().unwrap()).contains("diff_before"));
    }

    /// pypaimon's `slice_append_splits`: positions over the files in plan order; partial
    /// files read in part; splits without a row in the range dropped; a slice of a slice
    /// counts from the slice; slices of one plan are disjoint and cover it.
    #[test]
    fn slices_cover_the_plan_once_in_order() {
        use crate::compact::interval::tests::file as kv_file;
        let file = |n: &str| kv_file(n, 0, 1, 10, 0);
        let mk = |names: &[(&str, i64)]| {
            let mut s = split(false);
            s.files = names
                .iter()
                .map(|(n, rows)| {
                    let mut f = file(n);
                    f.row_count = *rows;
                    f
                })
                .collect();
            s
        };
        let plan = vec![mk(&[("a", 3), ("b", 2)]), mk(&[("c", 4)])];
        let got = slice_splits(plan.clone(), 2, 6);
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].files.len(), 2);
        assert_eq!(got[0].row_slices.get("a"), Some(&(2, 3)));
        assert_eq!(got[0].row_slices.get("b"), None); // whole
        assert_eq!(got[1].row_slices.get("c"), Some(&(0, 1)));
        assert_eq!(got.iter().map(Split::row_count).sum::<i64>(), 4);
        assert!(slice_splits(plan.clone(), 9, 12).is_empty());
        assert_eq!(slice_splits(plan.clone(), 0, 100), plan);
        // a slice of a slice: positions relative to it, stored as file positions
        let inner = slice_splits(got, 1, 4);
        assert_eq!(inner[0].files[0].file_name, "b");
        assert_eq!(inner[1].row_slices.get("c"), Some(&(0, 1)));
        // disjoint cover: every (file, position) once
        let mut seen = std::collections::BTreeSet::new();
        for (a, b) in [(0, 1), (1, 4), (4, 5), (5, 9)] {
            for s in slice_splits(plan.clone(), a, b) {
                for f in &s.files {
                    let (lo, hi) = s
                        .row_slices
                        .get(&f.file_name)
                        .copied()
                        .unwrap_or((0, f.row_count));
                    for p in lo..hi {
                        assert!(seen.insert((f.file_name.clone(), p)));
                    }
                }
            }
        }
        assert_eq!(seen.len(), 9);
        // a sliced split survives serialization (Spark ships it)
        let s = &slice_splits(plan, 2, 6)[0];
        assert_eq!(&Split::from_bytes(&s.to_bytes().unwrap()).unwrap(), s);
    }

    /// pypaimon's data-evolution `with_slice`: positions over the merged row-id ranges (a group
    /// of files counts its rows once, gaps in the ids do not count), groups kept whole with the
    /// same part on their data files, `.blob` files whole.
    #[test]
    fn data_evolution_slices_count_row_ids_and_keep_groups() {
        use crate::compact::interval::tests::file as kv_file;
        let file = |n: &str, first: i64, rows: i64| {
            let mut f = kv_file(n, 0, 1, 10, 0);
            f.first_row_id = Some(first);
            f.row_count = rows;
            f
        };
        // group 0..4 (data + update), group 4..6, gap, group 10..13 with a .blob file
        let mut s = split(false);
        s.files = vec![
            file("d0", 0, 4),
            file("u0", 0, 4),
            file("d1", 4, 2),
            file("d2", 10, 3),
            file("b2.blob", 10, 3),
        ];
        let plan = vec![s];
        let names = |v: &[Split]| -> Vec<String> {
            v.iter()
                .flat_map(|s| s.files.iter().map(|f| f.file_name.clone()))
                .collect()
        };
        let got = slice_splits_by_row_id("t", plan.clone(), 2, 7).unwrap();
        assert_eq!(names(&got), ["d0", "u0", "d1", "d2", "b2.blob"]);
        let slices = &got[0].row_slices;
        assert_eq!(slices.get("d0"), Some(&(2, 4)));
        assert_eq!(slices.get("u0"), Some(&(2, 4)));
        assert_eq!(slices.get("d1"), None); // whole
        assert_eq!(slices.get("d2"), Some(&(0, 1))); // position 6 = row id 10
        assert_eq!(slices.get("b2.blob"), None);
        // the rows read: row ids 2..11 of the plan, each once (pypaimon's IndexedSplit), not
        // per file (d0 and u0 hold the same rows, b2.blob is whole)
        assert_eq!(got[0].row_id_ranges, [(2, 6), (10, 11)]);
        assert_eq!(got[0].row_count(), 5);
        assert_eq!(
            &Split::from_bytes(&got[0].to_bytes().unwrap()).unwrap(),
            &got[0]
        );
        // past the end: clamped; beyond the rows: nothing
        let tail = slice_splits_by_row_id("t", plan.clone(), 8, 100).unwrap();
        assert_eq!(names(&tail), ["d2", "b2.blob"]);
        assert_eq!(tail[0].row_slices.get("d2"), Some(&(2, 3)));
        assert!(slice_splits_by_row_id("t", plan.clone(), 9, 12)
            .unwrap()
            .is_empty());
        // a file without a row id: refused
        let mut bad = plan.clone();
        bad[0].files[2].first_row_id = None;
        assert!(slice_splits_by_row_id("t", bad, 0, 1).is_err());
    }
}
