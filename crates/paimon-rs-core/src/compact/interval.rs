//! Interval partition of a primary-key bucket's files (paimon-behaviour.md §5): sections of
//! overlapping files, each a list of sorted runs. A merge read merges each section; compaction
//! partitions its unit the same way.

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

#[cfg(test)]
pub(crate) mod tests {
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
}
