//! Interval partition and split packing of a primary-key bucket (paimon-behaviour.md §5, §6.2).

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

use crate::error::Result;
use crate::spec::binary_row::deserialize_row;
use crate::spec::datum::{compare_rows, Datum};
use crate::spec::manifest::DataFileMeta;
use crate::spec::types::DataType;

/// A file with its decoded key range.
struct Ranged {
    min: Vec<Option<Datum>>,
    max: Vec<Option<Datum>>,
    file: DataFileMeta,
}

/// Sections (key-disjoint, in key order) of sorted runs (files with disjoint key ranges, in key
/// order). Touching ranges (`[0,9]`, `[9,15]`) overlap.
pub fn interval_partition(
    files: Vec<DataFileMeta>,
    key_types: &[DataType],
) -> Result<Vec<Vec<Vec<DataFileMeta>>>> {
    let mut ranged: Vec<Ranged> = files
        .into_iter()
        .map(|f| {
            Ok(Ranged {
                min: deserialize_row(key_types, &f.min_key)?,
                max: deserialize_row(key_types, &f.max_key)?,
                file: f,
            })
        })
        .collect::<Result<_>>()?;
    ranged.sort_by(|a, b| compare_rows(&a.min, &b.min).then(compare_rows(&a.max, &b.max)));
    let mut sections = vec![];
    let mut cur: Vec<Ranged> = vec![];
    let mut bound: Option<Vec<Option<Datum>>> = None;
    for r in ranged {
        if let Some(b) = &bound {
            if !cur.is_empty() && compare_rows(&r.min, b) == Ordering::Greater {
                sections.push(partition_runs(std::mem::take(&mut cur)));
                bound = None;
            }
        }
        let bigger = match &bound {
            None => true,
            Some(b) => compare_rows(&r.max, b) == Ordering::Greater,
        };
        if bigger {
            bound = Some(r.max.clone());
        }
        cur.push(r);
    }
    if !cur.is_empty() {
        sections.push(partition_runs(cur));
    }
    Ok(sections)
}

/// Heap entry: a run ordered by the max key of its last file (smallest first).
struct RunEnd {
    max: Vec<Option<Datum>>,
    idx: usize,
}

impl PartialEq for RunEnd {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}
impl Eq for RunEnd {}
impl PartialOrd for RunEnd {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for RunEnd {
    fn cmp(&self, o: &Self) -> Ordering {
        compare_rows(&self.max, &o.max).then(self.idx.cmp(&o.idx))
    }
}

/// Greedy minimum number of sorted runs of one section (files sorted by min key).
fn partition_runs(files: Vec<Ranged>) -> Vec<Vec<DataFileMeta>> {
    let mut runs: Vec<Vec<DataFileMeta>> = vec![];
    let mut heap: BinaryHeap<Reverse<RunEnd>> = BinaryHeap::new();
    for f in files {
        let fits = match heap.peek() {
            Some(Reverse(top)) => compare_rows(&f.min, &top.max) == Ordering::Greater,
            None => false,
        };
        if fits {
            if let Some(Reverse(top)) = heap.pop() {
                runs[top.idx].push(f.file);
                heap.push(Reverse(RunEnd {
                    max: f.max,
                    idx: top.idx,
                }));
                continue;
            }
        }
        runs.push(vec![f.file]);
        heap.push(Reverse(RunEnd {
            max: f.max,
            idx: runs.len() - 1,
        }));
    }
    runs
}

/// Ordered bin packing: close the bin before an item that would push it over `target` (unless
/// the bin is empty).
pub fn ordered_pack<T>(items: Vec<T>, weight: impl Fn(&T) -> u64, target: u64) -> Vec<Vec<T>> {
    let mut bins = vec![];
    let mut bin = vec![];
    let mut w = 0u64;
    for it in items {
        let x = weight(&it);
        if !bin.is_empty() && w + x > target {
            bins.push(std::mem::take(&mut bin));
            w = 0;
        }
        w += x;
        bin.push(it);
    }
    if !bin.is_empty() {
        bins.push(bin);
    }
    bins
}

fn no_deletes(f: &DataFileMeta) -> bool {
    f.delete_row_count.unwrap_or(0) == 0
}

/// Split one bucket's files for a batch read: groups of files and whether each group can be read
/// by concatenation (paimon-behaviour.md §6.2). `skip_level0`: the scan hid level 0 (first-row
/// and deletion-vector tables), so files above it hold each key once and need no merge.
pub fn split_bucket(
    files: Vec<DataFileMeta>,
    key_types: &[DataType],
    target: u64,
    open_cost: u64,
    skip_level0: bool,
) -> Result<Vec<(Vec<DataFileMeta>, bool)>> {
    let w = |f: &DataFileMeta| (f.file_size.max(0) as u64).max(open_cost);
    let raw_convertible = files.iter().all(|f| f.level != 0 && no_deletes(f));
    let one_level = files.windows(2).all(|p| p[0].level == p[1].level);
    if raw_convertible && (skip_level0 || one_level) {
        return Ok(ordered_pack(files, w, target)
            .into_iter()
            .map(|g| (g, true))
            .collect());
    }
    let sections: Vec<Vec<DataFileMeta>> = interval_partition(files, key_types)?
        .into_iter()
        .map(|runs| runs.into_iter().flatten().collect())
        .collect();
    let packed = ordered_pack(
        sections,
        |s: &Vec<DataFileMeta>| {
            (s.iter().map(|f| f.file_size.max(0) as u64).sum::<u64>()).max(open_cost)
        },
        target,
    );
    Ok(packed
        .into_iter()
        .map(|secs| {
            let files: Vec<DataFileMeta> = secs.into_iter().flatten().collect();
            let raw = files.len() == 1 && no_deletes(&files[0]);
            (files, raw)
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::binary_row::serialize_row;
    use crate::spec::manifest::SimpleStats;
    use crate::spec::types::TypeKind;

    pub(crate) fn file(name: &str, min: i32, max: i32, size: i64, level: i32) -> DataFileMeta {
        let t = vec![DataType::new(TypeKind::Int)];
        let enc = |v: i32| serialize_row(&t, &[Some(Datum::Int(v))]).unwrap();
        DataFileMeta {
            file_name: name.into(),
            file_size: size,
            row_count: 1,
            min_key: enc(min),
            max_key: enc(max),
            key_stats: SimpleStats::empty(),
            value_stats: SimpleStats::empty(),
            min_sequence_number: 0,
            max_sequence_number: 0,
            schema_id: 0,
            level,
            extra_files: vec![],
            creation_time: None,
            delete_row_count: Some(0),
            embedded_index: None,
            file_source: None,
            value_stats_cols: None,
            external_path: None,
            first_row_id: None,
            write_cols: None,
            write_cols_sequences: None,
        }
    }

    fn names(runs: &[Vec<DataFileMeta>]) -> Vec<Vec<String>> {
        let mut v: Vec<Vec<String>> = runs
            .iter()
            .map(|r| r.iter().map(|f| f.file_name.clone()).collect())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn doc_examples() {
        let t = vec![DataType::new(TypeKind::Int)];
        let fs = vec![
            file("a", 100, 200, 1, 0),
            file("b", 100, 400, 1, 0),
            file("c", 100, 300, 1, 0),
            file("d", 100, 500, 1, 0),
        ];
        let s = interval_partition(fs, &t).unwrap();
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].len(), 4);
        let fs = vec![
            file("0-9", 0, 9, 1, 0),
            file("5-7", 5, 7, 1, 0),
            file("9-15", 9, 15, 1, 0),
            file("16-22", 16, 22, 1, 0),
            file("16-28", 16, 28, 1, 0),
            file("24-32", 24, 32, 1, 0),
        ];
        let s = interval_partition(fs, &t).unwrap();
        assert_eq!(s.len(), 2);
        assert_eq!(
            names(&s[0]),
            vec![vec!["0-9".to_string()], vec!["5-7".into(), "9-15".into()]]
        );
        assert_eq!(
            names(&s[1]),
            vec![
                vec!["16-22".to_string(), "24-32".into()],
                vec!["16-28".into()]
            ]
        );
    }

    #[test]
    fn split_packing_doc_example() {
        let t = vec![DataType::new(TypeKind::Int)];
        let fs = || {
            vec![
                file("1", 0, 10, 11, 0),
                file("2", 0, 12, 13, 0),
                file("3", 15, 60, 46, 0),
                file("4", 18, 40, 23, 0),
                file("5", 82, 85, 4, 0),
                file("6", 100, 200, 101, 0),
            ]
        };
        let ids = |s: Vec<(Vec<DataFileMeta>, bool)>| -> Vec<Vec<String>> {
            s.into_iter()
                .map(|(g, _)| {
                    let mut v: Vec<String> = g.into_iter().map(|f| f.file_name).collect();
                    v.sort();
                    v
                })
                .collect()
        };
        let s = split_bucket(fs(), &t, 100, 2, false).unwrap();
        assert_eq!(ids(s), vec![vec!["1", "2", "3", "4", "5"], vec!["6"]]);
        let s = split_bucket(fs(), &t, 100, 30, false).unwrap();
        let raw: Vec<bool> = s.iter().map(|x| x.1).collect();
        assert_eq!(ids(s), vec![vec!["1", "2", "3", "4"], vec!["5"], vec!["6"]]);
        assert_eq!(raw, vec![false, true, true]);
        // all on one level >= 1 without deletes: files packed raw
        let fs = vec![file("a", 0, 5, 10, 1), file("b", 6, 9, 10, 1)];
        let s = split_bucket(fs, &t, 100, 2, false).unwrap();
        assert_eq!(s.len(), 1);
        assert!(s[0].1);
    }
}
