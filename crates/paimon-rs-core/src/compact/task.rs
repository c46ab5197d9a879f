//! The compaction task (paimon-behaviour.md §4, Java's `MergeTreeCompactTask`): which files of
//! a picked unit are rewritten and which only change level, then the rewrite itself through the
//! sort-merge reader and the merge engine into a rolling writer at the output level.
//!
//! The decisions ([`plan_task`]) are pure and tested on hand-built file sets; the I/O is behind
//! [`CompactRewriter`].

use super::interval::interval_partition;
use crate::error::Result;
use crate::spec::manifest::DataFileMeta;
use crate::spec::types::DataType;

/// Sections (key-disjoint, in key order) of sorted runs, as the interval partition gives them.
pub type Sections = Vec<Vec<Vec<DataFileMeta>>>;

/// What a task is asked to do with a unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskOptions {
    pub output_level: i32,
    pub max_level: i32,
    /// Drop retractions from rewritten output (§3.6).
    pub drop_delete: bool,
    /// `target-file-size × compaction.small-file-ratio`: smaller non-overlapping files are
    /// rewritten with their neighbours instead of upgraded.
    pub min_file_size: u64,
    /// `compaction.force-rewrite-all-files`.
    pub force_rewrite_all: bool,
}

/// One step of a task, in key order.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// The file moves to the output level by a metadata change only (same file name).
    Upgrade(Box<DataFileMeta>),
    /// These sections are merged into new files at the output level (one rolling writer).
    Rewrite(Sections),
}

/// Decide the steps of a task over `files` (§4.1). `expired` tells whether a file may hold
/// records past `record-level.expire-time` (such files are always rewritten).
pub fn plan_task(
    files: Vec<DataFileMeta>,
    key_types: &[DataType],
    opts: &TaskOptions,
    expired: &dyn Fn(&DataFileMeta) -> bool,
) -> Result<Vec<Step>> {
    let mut steps = vec![];
    let mut candidate: Sections = vec![];
    for section in interval_partition(files, key_types)? {
        if section.len() > 1 {
            candidate.push(section);
            continue;
        }
        for file in section.into_iter().flatten() {
            if (file.file_size.max(0) as u64) < opts.min_file_size {
                // small: rewritten with its neighbours
                candidate.push(vec![vec![file]]);
            } else {
                flush_candidate(&mut candidate, opts, expired, &mut steps);
                upgrade(file, opts, expired, &mut steps);
            }
        }
    }
    flush_candidate(&mut candidate, opts, expired, &mut steps);
    Ok(steps)
}

/// Rewrite the pending sections together, except a lone one-run section, whose files are
/// upgraded one by one (a lone small file is not rewritten).
fn flush_candidate(
    candidate: &mut Sections,
    opts: &TaskOptions,
    expired: &dyn Fn(&DataFileMeta) -> bool,
    steps: &mut Vec<Step>,
) {
    if candidate.is_empty() {
        return;
    }
    if candidate.len() == 1 && candidate[0].len() == 1 {
        for file in candidate.remove(0).remove(0) {
            upgrade(file, opts, expired, steps);
        }
        return;
    }
    steps.push(Step::Rewrite(std::mem::take(candidate)));
}

/// Java's `upgrade`: a file already at the output level stays unless it must be rewritten
/// (forced, or expired records); a file that may hold retractions is never moved to the max
/// level as is (it is rewritten, so that the max level holds no retraction that shadows
/// nothing); otherwise only its level changes.
fn upgrade(
    file: DataFileMeta,
    opts: &TaskOptions,
    expired: &dyn Fn(&DataFileMeta) -> bool,
    steps: &mut Vec<Step>,
) {
    let must_rewrite = opts.force_rewrite_all || expired(&file);
    if file.level == opts.output_level {
        if must_rewrite {
            steps.push(Step::Rewrite(vec![vec![vec![file]]]));
        }
        return;
    }
    let no_retractions = file.delete_row_count == Some(0);
    if opts.output_level != opts.max_level || no_retractions {
        if must_rewrite {
            steps.push(Step::Rewrite(vec![vec![vec![file]]]));
        } else {
            steps.push(Step::Upgrade(Box::new(file)));
        }
    } else {
        steps.push(Step::Rewrite(vec![vec![vec![file]]]));
    }
}

/// Deletion-vector marks of a compaction: row positions to delete, by data file name.
pub type DvMarks = std::collections::BTreeMap<String, roaring::RoaringTreemap>;

/// What a rewrite produced: data files at the output level, changelog files (`lookup` and
/// `full-compaction` changelog producers) and deletion-vector marks on files of higher levels.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Rewritten {
    pub files: Vec<DataFileMeta>,
    pub changelog: Vec<DataFileMeta>,
    pub dv_marks: DvMarks,
}

impl From<Vec<DataFileMeta>> for Rewritten {
    fn from(files: Vec<DataFileMeta>) -> Self {
        Rewritten {
            files,
            ..Default::default()
        }
    }
}

/// What a changelog-producing rewriter made of a file's upgrade (a lookup rewriter's of a
/// level-0 file, a `full-compaction` rewriter's of a file going to the max level).
#[derive(Debug)]
pub enum Upgraded {
    /// The file moves up by metadata; the merge made this changelog and these marks.
    Metadata(Rewritten),
    /// The file was rewritten into these files (possibly none).
    Rewritten(Rewritten),
}

/// Writes the merged records of sections into new files.
pub trait CompactRewriter {
    /// Merge each section (its sorted runs through the sort-merge reader and the merge engine;
    /// retractions dropped with `drop_delete`) and write the sections one after another into
    /// new files at `output_level`. Returns the new files (and the changelog and deletion
    /// marks a lookup rewrite makes).
    fn rewrite(
        &self,
        output_level: i32,
        drop_delete: bool,
        sections: &Sections,
    ) -> Result<Rewritten>;

    /// An upgrade of `file` to the output level: None moves it by a metadata change only. A
    /// lookup rewriter merges a level-0 file with what it looks up (changelog, deletion marks,
    /// §9.3), a `full-compaction` one a file going to the max level (its changelog, §9.4), and
    /// says whether the file still moves by metadata or was rewritten.
    fn upgrade(&self, _opts: &TaskOptions, _file: &DataFileMeta) -> Result<Option<Upgraded>> {
        Ok(None)
    }

    /// Remove files written by [`Self::rewrite`] (the task failed later).
    fn discard(&self, files: &[DataFileMeta]);
}

/// A task's result: the files it removed and the files it added. An upgraded file is in both
/// (same name, old and new level).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CompactResult {
    pub before: Vec<DataFileMeta>,
    pub after: Vec<DataFileMeta>,
    /// Changelog files (`changelog-producer = lookup` / `full-compaction`): key-value files at
    /// the output level, for the commit's `CompactIncrement::changelog_files`.
    pub changelog: Vec<DataFileMeta>,
    /// Deletion-vector marks (`deletion-vectors.enabled`): rows of files at levels above the
    /// output that the compaction superseded, by file name.
    pub dv_marks: DvMarks,
}

impl CompactResult {
    pub fn of(before: Vec<DataFileMeta>, after: Vec<DataFileMeta>) -> Self {
        CompactResult {
            before,
            after,
            ..Default::default()
        }
    }

    pub fn is_empty(&self) -> bool {
        self.before.is_empty()
            && self.after.is_empty()
            && self.changelog.is_empty()
            && self.dv_marks.is_empty()
    }

    /// Files the task wrote, changelog files included (what a failure deletes).
    pub fn written_all(&self) -> Vec<DataFileMeta> {
        let mut out = self.written();
        out.extend(self.changelog.iter().cloned());
        out
    }

    fn add(&mut self, r: Rewritten) {
        self.after.extend(r.files);
        self.changelog.extend(r.changelog);
        merge_marks(&mut self.dv_marks, r.dv_marks);
    }

    /// Files of `after` that the task wrote (not upgrades of an input).
    pub fn written(&self) -> Vec<DataFileMeta> {
        let before: std::collections::HashSet<&str> =
            self.before.iter().map(|f| f.file_name.as_str()).collect();
        self.after
            .iter()
            .filter(|f| !before.contains(f.file_name.as_str()))
            .cloned()
            .collect()
    }

    /// Add a later compaction of the same bucket within one commit to this (accumulated)
    /// result, as Java's `MergeTreeWriter.updateCompactResult`: an input that an earlier
    /// compaction of this commit wrote leaves `after` (returned, for the caller to delete,
    /// unless it is an upgrade's input or output and so still named by a snapshot); any other
    /// input joins `before`.
    pub fn absorb(&mut self, r: CompactResult) -> Vec<DataFileMeta> {
        let after_names: std::collections::HashSet<&str> =
            r.after.iter().map(|f| f.file_name.as_str()).collect();
        let mut intermediate = vec![];
        for f in &r.before {
            if let Some(i) = self.after.iter().position(|a| a == f) {
                self.after.remove(i);
                let named_before = self.before.iter().any(|b| b.file_name == f.file_name);
                if !named_before && !after_names.contains(f.file_name.as_str()) {
                    intermediate.push(f.clone());
                }
            } else if !self.before.iter().any(|b| b.file_name == f.file_name) {
                self.before.push(f.clone());
            }
        }
        // a rewritten file's deletion vector goes with it (Java's removeDeletionVectorOf)
        for f in &r.before {
            if !after_names.contains(f.file_name.as_str()) {
                self.dv_marks.remove(&f.file_name);
            }
        }
        self.after.extend(r.after);
        self.changelog.extend(r.changelog);
        merge_marks(&mut self.dv_marks, r.dv_marks);
        intermediate
    }
}

/// Add `more` marks to `marks`.
pub fn merge_marks(marks: &mut DvMarks, more: DvMarks) {
    for (f, m) in more {
        *marks.entry(f).or_default() |= m;
    }
}

/// Run the steps of a task. On an error the files already written are discarded.
pub fn run_task(
    steps: Vec<Step>,
    opts: &TaskOptions,
    rewriter: &dyn CompactRewriter,
) -> Result<CompactResult> {
    let mut result = CompactResult::default();
    for step in steps {
        match step {
            Step::Upgrade(file) => {
                let file = *file;
                let merged = match rewriter.upgrade(opts, &file) {
                    Ok(m) => m,
                    Err(e) => {
                        rewriter.discard(&result.written_all());
                        return Err(e);
                    }
                };
                match merged {
                    Some(Upgraded::Rewritten(r)) => {
                        result.before.push(file);
                        result.add(r);
                    }
                    merged => {
                        let mut up = file.clone();
                        up.level = opts.output_level;
                        result.before.push(file);
                        result.after.push(up);
                        if let Some(Upgraded::Metadata(r)) = merged {
                            result.add(r);
                        }
                    }
                }
            }
            Step::Rewrite(sections) => {
                match rewriter.rewrite(opts.output_level, opts.drop_delete, &sections) {
                    Ok(r) => {
                        result
                            .before
                            .extend(sections.into_iter().flatten().flatten());
                        result.add(r);
                    }
                    Err(e) => {
                        rewriter.discard(&result.written_all());
                        return Err(e);
                    }
                }
            }
        }
    }
    Ok(result)
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;

    use super::*;
    use crate::compact::levels::tests::{file, key_types};

    fn opts(output_level: i32, min_file_size: u64) -> TaskOptions {
        TaskOptions {
            output_level,
            max_level: 2,
            drop_delete: true,
            min_file_size,
            force_rewrite_all: false,
        }
    }

    /// Size = max - min + 1 (§4.3), level and key range; names by position.
    fn f(level: i32, min: i64, max: i64) -> DataFileMeta {
        file(
            &format!("L{level}[{min},{max}]"),
            level,
            min,
            max,
            max - min + 1,
            0,
        )
    }

    /// Steps as strings: "up L0[1,3]" / "rw L0[1,3]+L1[1,5] | L0[6,6]" (sections by " | ").
    fn show(steps: &[Step]) -> Vec<String> {
        steps
            .iter()
            .map(|s| match s {
                Step::Upgrade(f) => format!("up {}", f.file_name),
                Step::Rewrite(sections) => {
                    let secs: Vec<String> = sections
                        .iter()
                        .map(|runs| {
                            let mut names: Vec<String> =
                                runs.iter().flatten().map(|f| f.file_name.clone()).collect();
                            names.sort();
                            names.join("+")
                        })
                        .collect();
                    format!("rw {}", secs.join(" | "))
                }
            })
            .collect()
    }

    fn plan(files: Vec<DataFileMeta>, o: &TaskOptions) -> Vec<String> {
        show(&plan_task(files, &key_types(), o, &|_| false).unwrap())
    }

    /// The worked examples of paimon-behaviour.md §4.3 (numLevels 3, minFileSize 2, full
    /// compaction to level 2).
    #[test]
    fn worked_examples_of_the_semantics_doc() {
        let o = opts(2, 2);
        assert_eq!(
            plan(vec![f(0, 1, 3), f(1, 1, 5), f(1, 6, 7)], &o),
            vec!["rw L0[1,3]+L1[1,5]", "up L1[6,7]"]
        );
        assert_eq!(
            plan(vec![f(0, 1, 3), f(0, 1, 5), f(0, 6, 8)], &o),
            vec!["rw L0[1,3]+L0[1,5]", "up L0[6,8]"]
        );
        assert_eq!(
            plan(vec![f(0, 1, 1), f(0, 2, 2)], &o),
            vec!["rw L0[1,1] | L0[2,2]"]
        );
        assert_eq!(
            plan(vec![f(0, 1, 5), f(0, 6, 6), f(1, 7, 8), f(1, 9, 10)], &o),
            vec!["up L0[1,5]", "up L0[6,6]", "up L1[7,8]", "up L1[9,10]"]
        );
        assert_eq!(
            plan(vec![f(0, 1, 5), f(0, 6, 6), f(1, 7, 7), f(1, 9, 10)], &o),
            vec!["up L0[1,5]", "rw L0[6,6] | L1[7,7]", "up L1[9,10]"]
        );
        let mixed = |last: DataFileMeta| {
            vec![
                f(0, 1, 5),
                f(0, 6, 6),
                f(1, 1, 4),
                f(1, 6, 8),
                last,
                f(2, 1, 3),
                f(2, 4, 6),
            ]
        };
        assert_eq!(
            plan(mixed(f(1, 10, 11)), &o),
            vec![
                "rw L0[1,5]+L0[6,6]+L1[1,4]+L1[6,8]+L2[1,3]+L2[4,6]",
                "up L1[10,11]"
            ]
        );
        assert_eq!(
            plan(mixed(f(1, 10, 10)), &o),
            vec!["rw L0[1,5]+L0[6,6]+L1[1,4]+L1[6,8]+L2[1,3]+L2[4,6] | L1[10,10]"]
        );
    }

    #[test]
    fn a_file_with_retractions_is_rewritten_on_its_way_to_the_max_level_only() {
        let mut d = f(0, 1, 5);
        d.delete_row_count = Some(1);
        assert_eq!(plan(vec![d.clone()], &opts(2, 2)), vec!["rw L0[1,5]"]);
        // to a lower level it is upgraded: older data may still need its retraction
        assert_eq!(plan(vec![d.clone()], &opts(1, 2)), vec!["up L0[1,5]"]);
        // an unknown delete count (old files) counts as "may hold retractions"
        d.delete_row_count = None;
        assert_eq!(plan(vec![d], &opts(2, 2)), vec!["rw L0[1,5]"]);
    }

    #[test]
    fn files_already_at_the_output_level_stay_unless_forced_or_expired() {
        let o = opts(2, 2);
        assert!(plan(vec![f(2, 1, 5)], &o).is_empty());
        let forced = TaskOptions {
            force_rewrite_all: true,
            ..o
        };
        assert_eq!(
            plan(vec![f(2, 1, 5), f(0, 7, 9)], &forced),
            vec!["rw L2[1,5]", "rw L0[7,9]"]
        );
        let steps = plan_task(vec![f(2, 1, 5), f(0, 7, 9)], &key_types(), &o, &|f| {
            f.level == 2
        })
        .unwrap();
        assert_eq!(show(&steps), vec!["rw L2[1,5]", "up L0[7,9]"]);
    }

    /// A rewriter that records its calls and fails on demand.
    struct Fake {
        calls: RefCell<Vec<(i32, bool, usize)>>,
        fail_on: Option<usize>,
        discarded: RefCell<Vec<String>>,
    }

    impl CompactRewriter for Fake {
        fn rewrite(&self, level: i32, drop: bool, sections: &Sections) -> Result<Rewritten> {
            let n = self.calls.borrow().len();
            self.calls.borrow_mut().push((level, drop, sections.len()));
            if self.fail_on == Some(n) {
                return Err(crate::error::Error::Internal("boom".into()));
            }
            Ok(vec![file(&format!("new-{n}"), level, 0, 1, 10, 0)].into())
        }
        fn discard(&self, files: &[DataFileMeta]) {
            self.discarded
                .borrow_mut()
                .extend(files.iter().map(|f| f.file_name.clone()));
        }
    }

    #[test]
    fn run_task_reports_before_and_after_and_discards_on_failure() {
        let o = opts(2, 2);
        let files = vec![f(0, 1, 3), f(1, 1, 5), f(1, 6, 7), f(0, 9, 9), f(1, 10, 10)];
        let steps = plan_task(files, &key_types(), &o, &|_| false).unwrap();
        let ok = Fake {
            calls: RefCell::new(vec![]),
            fail_on: None,
            discarded: RefCell::new(vec![]),
        };
        let r = run_task(steps.clone(), &o, &ok).unwrap();
        assert_eq!(*ok.calls.borrow(), vec![(2, true, 1), (2, true, 2)]);
        let names = |fs: &[DataFileMeta]| -> Vec<String> {
            fs.iter()
                .map(|f| format!("{}@{}", f.file_name, f.level))
                .collect()
        };
        assert_eq!(
            names(&r.before),
            vec![
                "L0[1,3]@0",
                "L1[1,5]@1",
                "L1[6,7]@1",
                "L0[9,9]@0",
                "L1[10,10]@1"
            ]
        );
        assert_eq!(names(&r.after), vec!["new-0@2", "L1[6,7]@2", "new-1@2"]);
        assert_eq!(names(&r.written()), vec!["new-0@2", "new-1@2"]);
        let failing = Fake {
            calls: RefCell::new(vec![]),
            fail_on: Some(1),
            discarded: RefCell::new(vec![]),
        };
        assert!(run_task(steps, &o, &failing).is_err());
        assert_eq!(*failing.discarded.borrow(), vec!["new-0".to_string()]);
    }
}
