//! Progress of a table compaction (`compact_table_with_progress`): cumulative totals reported
//! after each bucket, in order, so a caller (the Python binding's progress callback) sees
//! monotone counts whose final values equal the committed snapshot's
//! [`compaction_summary`](super::plan::compaction_summary).

use std::collections::HashSet;
use std::sync::Mutex;

use crate::error::Result;
use crate::spec::manifest::DataFileMeta;

/// Where a compaction stands. `buckets_done` of `buckets_total` (partition, bucket) pairs are
/// finished; the `*_in` counts are the files the finished buckets removed (rewritten), the
/// `*_out` counts the files they added, leaving out files that were only moved to another
/// level (present on both sides), as the summary does.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CompactProgress {
    pub buckets_done: usize,
    pub buckets_total: usize,
    pub files_in: usize,
    pub bytes_in: u64,
    pub rows_in: i64,
    pub files_out: usize,
    pub bytes_out: u64,
    pub rows_out: i64,
}

/// Receives each [`CompactProgress`]; an error stops the compaction (nothing is committed and
/// the written files are removed).
pub type ProgressSink<'a> = &'a (dyn Fn(&CompactProgress) -> Result<()> + Sync);

/// A sink that ignores every report.
pub fn no_progress(_: &CompactProgress) -> Result<()> {
    Ok(())
}

/// Accumulates per-bucket results from parallel workers and reports the running totals.
pub(crate) struct Tracker<'a> {
    state: Mutex<CompactProgress>,
    sink: ProgressSink<'a>,
}

impl<'a> Tracker<'a> {
    /// A tracker for `buckets_total` buckets; reports the empty start.
    pub(crate) fn start(buckets_total: usize, sink: ProgressSink<'a>) -> Result<Self> {
        let p = CompactProgress {
            buckets_total,
            ..Default::default()
        };
        sink(&p)?;
        Ok(Tracker {
            state: Mutex::new(p),
            sink,
        })
    }

    /// One bucket finished, having removed `before` and added `after` (both empty when it had
    /// nothing to do). The sink is called under the lock, so reports arrive in order.
    pub(crate) fn bucket_done(
        &self,
        before: &[DataFileMeta],
        after: &[DataFileMeta],
    ) -> Result<()> {
        let (files_in, bytes_in, rows_in) = changed(before, after);
        let (files_out, bytes_out, rows_out) = changed(after, before);
        let mut g = self.state.lock().unwrap_or_else(|e| e.into_inner());
        g.buckets_done += 1;
        g.files_in += files_in;
        g.bytes_in += bytes_in;
        g.rows_in += rows_in;
        g.files_out += files_out;
        g.bytes_out += bytes_out;
        g.rows_out += rows_out;
        (self.sink)(&g)
    }
}

/// Files, bytes and rows of the files of `side` whose name is not in `other`.
fn changed(side: &[DataFileMeta], other: &[DataFileMeta]) -> (usize, u64, i64) {
    let names: HashSet<&str> = other.iter().map(|f| f.file_name.as_str()).collect();
    side.iter()
        .filter(|f| !names.contains(f.file_name.as_str()))
        .fold((0, 0, 0), |(n, b, r), f| {
            (n + 1, b + f.file_size.max(0) as u64, r + f.row_count)
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;

    fn file(name: &str, size: i64, rows: i64) -> DataFileMeta {
        let mut f = crate::compact::levels::tests::file(name, 0, 0, 0, size, 0);
        f.row_count = rows;
        f
    }

    #[test]
    fn totals_accumulate_and_moved_files_are_left_out() {
        let seen = Mutex::new(vec![]);
        let sink = |p: &CompactProgress| {
            seen.lock().unwrap().push(*p);
            Ok(())
        };
        let t = Tracker::start(2, &sink).unwrap();
        // bucket 1: a, b rewritten into c; d only moved up a level
        let moved = file("d", 7, 3);
        t.bucket_done(
            &[file("a", 10, 1), file("b", 20, 2), moved.clone()],
            &[file("c", 25, 3), moved],
        )
        .unwrap();
        t.bucket_done(&[], &[]).unwrap();
        let seen = seen.into_inner().unwrap();
        assert_eq!(seen.len(), 3);
        assert_eq!(seen[0].buckets_total, 2);
        assert_eq!(seen[0].buckets_done, 0);
        let last = seen[2];
        assert_eq!(
            (
                last.buckets_done,
                last.files_in,
                last.bytes_in,
                last.rows_in
            ),
            (2, 2, 30, 3)
        );
        assert_eq!((last.files_out, last.bytes_out, last.rows_out), (1, 25, 3));
    }

    #[test]
    fn a_sink_error_is_returned() {
        let sink = |p: &CompactProgress| {
            if p.buckets_done > 0 {
                Err(Error::invalid("stop"))
            } else {
                Ok(())
            }
        };
        let t = Tracker::start(1, &sink).unwrap();
        assert!(t.bucket_done(&[], &[]).is_err());
    }
}
