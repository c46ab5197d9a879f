//! Reading first-row tables written by others: level-0 files are hidden, files at level >= 1 are
//! read (raw when planning says so, merged keeping the oldest record otherwise). paimon_rs
//! cannot write first-row tables (no lookup compaction), so the files are written as a
//! deduplicate table and then re-labelled: levels changed in the split, engine in the options.

mod common;

use std::collections::HashMap;

use common::{catalog, commit_kv, create_table, kv_schema, read_splits};
use paimon_rs_core::TableScan;

#[test]
fn first_row_reads_skip_level_zero_and_keep_the_oldest() {
    let dir = tempfile::tempdir().unwrap();
    let cat = catalog(dir.path());
    let dedup = create_table(&cat, "db.t", &kv_schema(), &[], &["k"], &[("bucket", "1")]);
    commit_kv(&dedup, &[(1, 10), (2, 20)]);
    commit_kv(&dedup, &[(2, 21), (3, 31)]);

    // options are parsed once: re-label through `copy`, which parses them again
    let fr = dedup
        .copy(&[("merge-engine".to_string(), "first-row".to_string())].into())
        .unwrap();
    // Level 0 is invisible to batch reads of a first-row table.
    let plan = TableScan::new(fr.clone(), None).plan().unwrap();
    assert!(plan.splits.is_empty());

    // The same files at level >= 1, merged: the oldest record of key 2 wins.
    let plan = TableScan::new(dedup.clone(), None).plan().unwrap();
    let mut split = plan.splits[0].clone();
    assert_eq!(split.files.len(), 2);
    for (i, f) in split.files.iter_mut().enumerate() {
        f.level = 1 + i as i32;
    }
    split.raw_convertible = false;
    let got = read_splits(&fr, &[split]);
    assert_eq!(
        got,
        HashMap::from([(1, Some(10)), (2, Some(20)), (3, Some(31))])
    );
    // and deduplicate keeps the newest
    let plan = TableScan::new(dedup.clone(), None).plan().unwrap();
    assert_eq!(read_splits(&dedup, &plan.splits)[&2], Some(21));
}
