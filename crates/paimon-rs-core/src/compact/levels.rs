//! The LSM levels of one (partition, bucket) (paimon-behaviour.md §2): level 0 holds any number
//! of files, each its own sorted run; every level ≥ 1 is one sorted run (key-disjoint files in
//! key order). Restored from a snapshot's live files, listed newest first for the picker, and
//! updated with each compaction's before/after files (Java's `Levels`).

use std::cmp::Ordering;

use super::universal::RunShape;
use crate::error::{Error, Result};
use crate::spec::binary_row::deserialize_row;
use crate::spec::datum::{compare_rows, Datum};
use crate::spec::manifest::DataFileMeta;
use crate::spec::types::DataType;

/// A sorted run with its level: one level-0 file, or all files of a level ≥ 1.
#[derive(Debug, Clone, PartialEq)]
pub struct LevelRun {
    pub level: i32,
    pub files: Vec<DataFileMeta>,
}

impl LevelRun {
    pub fn size(&self) -> u64 {
        self.files.iter().map(|f| f.file_size.max(0) as u64).sum()
    }
}

#[derive(Debug, Clone)]
pub struct Levels {
    key_types: Vec<DataType>,
    /// Newest first: max sequence number descending (§2.2).
    level0: Vec<DataFileMeta>,
    /// `levels[i]` is level `i + 1`, its files in key order.
    levels: Vec<Vec<DataFileMeta>>,
}

/// Level-0 order (§2.2): larger max sequence number first; ties: smaller min sequence number,
/// then older creation time, then file name (files of concurrent writers may share a max).
fn level0_order(a: &DataFileMeta, b: &DataFileMeta) -> Ordering {
    b.max_sequence_number
        .cmp(&a.max_sequence_number)
        .then(a.min_sequence_number.cmp(&b.min_sequence_number))
        .then(a.creation_time.cmp(&b.creation_time))
        .then(a.file_name.cmp(&b.file_name))
}

impl Levels {
    /// Levels of `files` (one bucket's live files). The level count is
    /// `max(num_levels, highest file level + 1)`, as Java widens it for files written by a
    /// writer with more levels; fewer than 2 levels is an error.
    pub fn new(
        key_types: &[DataType],
        files: Vec<DataFileMeta>,
        num_levels: usize,
    ) -> Result<Self> {
        if let Some(f) = files.iter().find(|f| f.level < 0) {
            return Err(Error::invalid(format!(
                "data file {} has a negative level {}",
                f.file_name, f.level
            )));
        }
        let highest = files
            .iter()
            .map(|f| f.level as usize + 1)
            .max()
            .unwrap_or(0);
        let n = num_levels.max(highest);
        if n < 2 {
            return Err(Error::invalid(format!(
                "option 'num-levels' = {num_levels}: the number of levels must be at least 2"
            )));
        }
        let mut levels = Levels {
            key_types: key_types.to_vec(),
            level0: vec![],
            levels: vec![vec![]; n - 1],
        };
        levels.update(&[], &files)?;
        Ok(levels)
    }

    pub fn number_of_levels(&self) -> usize {
        self.levels.len() + 1
    }

    pub fn max_level(&self) -> i32 {
        self.levels.len() as i32
    }

    pub fn level0(&self) -> &[DataFileMeta] {
        &self.level0
    }

    /// Level-0 files plus non-empty levels ≥ 1 (§2.3).
    pub fn number_of_sorted_runs(&self) -> usize {
        self.level0.len() + self.levels.iter().filter(|l| !l.is_empty()).count()
    }

    /// The highest non-empty level ≥ 1; 0 if only level 0 has files; -1 if empty (§2.1).
    pub fn non_empty_highest_level(&self) -> i32 {
        match self.levels.iter().rposition(|l| !l.is_empty()) {
            Some(i) => i as i32 + 1,
            None if self.level0.is_empty() => -1,
            None => 0,
        }
    }

    /// The sorted runs, newest first (§2.2).
    pub fn level_sorted_runs(&self) -> Vec<LevelRun> {
        let mut runs: Vec<LevelRun> = self
            .level0
            .iter()
            .map(|f| LevelRun {
                level: 0,
                files: vec![f.clone()],
            })
            .collect();
        for (i, files) in self.levels.iter().enumerate() {
            if !files.is_empty() {
                runs.push(LevelRun {
                    level: i as i32 + 1,
                    files: files.clone(),
                });
            }
        }
        runs
    }

    /// What the picker sees of [`Self::level_sorted_runs`].
    pub fn run_shapes(&self) -> Vec<RunShape> {
        self.level_sorted_runs()
            .iter()
            .map(|r| RunShape {
                level: r.level,
                size: r.size(),
            })
            .collect()
    }

    pub fn all_files(&self) -> Vec<DataFileMeta> {
        self.level_sorted_runs()
            .into_iter()
            .flat_map(|r| r.files)
            .collect()
    }

    /// Apply a compaction result: remove `before` from their levels, add `after` to theirs. An
    /// upgraded file appears in both, under one name and two levels.
    pub fn update(&mut self, before: &[DataFileMeta], after: &[DataFileMeta]) -> Result<()> {
        if let Some(f) = after
            .iter()
            .find(|f| f.level < 0 || f.level as usize >= self.number_of_levels())
        {
            return Err(Error::Internal(format!(
                "file {} has level {}, outside the bucket's {} levels",
                f.file_name,
                f.level,
                self.number_of_levels()
            )));
        }
        let same = |a: &DataFileMeta, b: &DataFileMeta| a.file_name == b.file_name;
        for b in before {
            let gone = if b.level == 0 {
                let n = self.level0.len();
                self.level0.retain(|f| !same(f, b));
                n != self.level0.len()
            } else {
                match self.levels.get_mut(b.level as usize - 1) {
                    Some(l) => {
                        let n = l.len();
                        l.retain(|f| !same(f, b));
                        n != l.len()
                    }
                    None => false,
                }
            };
            if !gone {
                return Err(Error::Internal(format!(
                    "compaction input {} (level {}) is not in the bucket's levels",
                    b.file_name, b.level
                )));
            }
        }
        let mut touched = vec![false; self.levels.len()];
        for a in after {
            if a.level == 0 {
                self.level0.push(a.clone());
            } else {
                let i = a.level as usize - 1;
                self.levels[i].push(a.clone());
                touched[i] = true;
            }
        }
        self.level0.sort_by(level0_order);
        for (i, t) in touched.into_iter().enumerate() {
            if t {
                self.sort_level(i)?;
            }
        }
        Ok(())
    }

    /// Sort level `i + 1` by key and check it is a sorted run (key-disjoint files).
    fn sort_level(&mut self, i: usize) -> Result<()> {
        let types = &self.key_types;
        type Keyed = (Vec<Option<Datum>>, Vec<Option<Datum>>, DataFileMeta);
        let mut keyed: Vec<Keyed> = self.levels[i]
            .drain(..)
            .map(|f| {
                Ok((
                    deserialize_row(types, &f.min_key)?,
                    deserialize_row(types, &f.max_key)?,
                    f,
                ))
            })
            .collect::<Result<_>>()?;
        keyed.sort_by(|a, b| compare_rows(&a.0, &b.0).then(compare_rows(&a.1, &b.1)));
        for w in keyed.windows(2) {
            if compare_rows(&w[1].0, &w[0].1) != Ordering::Greater {
                return Err(Error::corrupt(
                    &w[1].2.file_name,
                    format!(
                        "level {} holds files {} and {} whose key ranges overlap; a level \
                         above 0 must be one sorted run",
                        i + 1,
                        w[0].2.file_name,
                        w[1].2.file_name
                    ),
                ));
            }
        }
        self.levels[i] = keyed.into_iter().map(|(_, _, f)| f).collect();
        Ok(())
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::spec::binary_row::serialize_row;
    use crate::spec::manifest::SimpleStats;
    use crate::spec::types::TypeKind;

    pub(crate) fn key_types() -> Vec<DataType> {
        vec![DataType::new(TypeKind::BigInt).not_null()]
    }

    /// A file of keys `[min, max]` at `level`, `size` bytes, sequence numbers `[seq, seq]`.
    pub(crate) fn file(
        name: &str,
        level: i32,
        min: i64,
        max: i64,
        size: i64,
        seq: i64,
    ) -> DataFileMeta {
        let t = key_types();
        let key = |k: i64| serialize_row(&t, &[Some(Datum::BigInt(k))]).unwrap();
        DataFileMeta {
            file_name: name.to_string(),
            file_size: size,
            row_count: max - min + 1,
            min_key: key(min),
            max_key: key(max),
            key_stats: SimpleStats::empty(),
            value_stats: SimpleStats::empty(),
            min_sequence_number: seq,
            max_sequence_number: seq,
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

    fn shapes(l: &Levels) -> Vec<(i32, u64)> {
        l.run_shapes().iter().map(|r| (r.level, r.size)).collect()
    }

    #[test]
    fn restored_runs_are_listed_newest_first() {
        let files = vec![
            file("a", 0, 1, 5, 10, 3),
            file("b", 0, 1, 5, 20, 7),
            file("c", 2, 6, 9, 40, 1),
            file("d", 2, 1, 5, 30, 1),
            file("e", 1, 1, 9, 5, 2),
        ];
        let l = Levels::new(&key_types(), files, 6).unwrap();
        assert_eq!(shapes(&l), vec![(0, 20), (0, 10), (1, 5), (2, 70)]);
        assert_eq!(l.number_of_sorted_runs(), 4);
        assert_eq!(l.non_empty_highest_level(), 2);
        let runs = l.level_sorted_runs();
        let names: Vec<&str> = runs[3].files.iter().map(|f| f.file_name.as_str()).collect();
        assert_eq!(names, vec!["d", "c"], "level 2 in key order");
    }

    #[test]
    fn level_count_widens_to_the_highest_file_level_and_needs_two() {
        let l = Levels::new(&key_types(), vec![file("a", 7, 1, 2, 1, 0)], 3).unwrap();
        assert_eq!(l.number_of_levels(), 8);
        assert_eq!(l.max_level(), 7);
        let e = Levels::new(&key_types(), vec![], 1).unwrap_err();
        assert!(e.to_string().contains("at least 2"), "{e}");
        assert_eq!(
            Levels::new(&key_types(), vec![], 2)
                .unwrap()
                .non_empty_highest_level(),
            -1
        );
        let only0 = Levels::new(&key_types(), vec![file("a", 0, 1, 2, 1, 0)], 3).unwrap();
        assert_eq!(only0.non_empty_highest_level(), 0);
    }

    #[test]
    fn overlapping_files_in_one_level_are_refused() {
        let e = Levels::new(
            &key_types(),
            vec![file("a", 1, 1, 5, 1, 0), file("b", 1, 5, 9, 1, 0)],
            3,
        )
        .unwrap_err();
        assert!(e.to_string().contains("overlap"), "{e}");
    }

    #[test]
    fn update_moves_files_between_levels() {
        let a = file("a", 0, 1, 5, 10, 3);
        let b = file("b", 0, 6, 9, 20, 4);
        let c = file("c", 2, 1, 9, 40, 1);
        let mut l = Levels::new(&key_types(), vec![a.clone(), b.clone(), c.clone()], 3).unwrap();
        // upgrade b to level 1 (same name), rewrite a + c into d at level 2
        let mut b1 = b.clone();
        b1.level = 1;
        let d = file("d", 2, 1, 5, 45, 3);
        l.update(&[a.clone(), b.clone(), c.clone()], &[b1, d])
            .unwrap();
        assert_eq!(shapes(&l), vec![(1, 20), (2, 45)]);
        // an input that is not there is an internal error, not a silent no-op
        assert!(l.update(&[a], &[]).is_err());
    }
}
