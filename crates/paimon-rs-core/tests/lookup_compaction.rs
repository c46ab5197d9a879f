//! Lookup compaction end to end (paimon-behaviour.md §3.5, §8.5, §9.3): tables that need lookup
//! (first-row, `changelog-producer = lookup`, `force-lookup`) written over several commits,
//! each commit forcing its level-0 files up with lookups into the levels below, read back equal
//! to a dict model; the changelog files a lookup compaction writes, read back record by record;
//! and the `full-compaction` producer's changelog of full compactions (§9.4), beside them.
mod common;

use std::collections::{BTreeMap, HashMap};

use arrow_array::cast::AsArray;
use arrow_array::types::{Int64Type, Int8Type};
use arrow_array::{Array, RecordBatch};
use common::{catalog, create_kvo, create_table, kv_batch, kv_schema, kvo_batch, read_kv};
use paimon_rs_core::{
    changelog_files, compact_table, live_files, lookup_cache_stats, CommitMessage, FileStoreCommit,
    FileStoreTable, TableWrite, BATCH_COMMIT_IDENTIFIER,
};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

/// Write `batch` with a new writer, hand its messages to `inspect`, then commit them (their
/// changelog files in the snapshot's changelog manifest list).
fn commit_with(t: &FileStoreTable, batch: RecordBatch, inspect: &mut dyn FnMut(&[CommitMessage])) {
    let mut w = TableWrite::new(t.clone()).unwrap();
    w.write(&batch).unwrap();
    let msgs = w.prepare_commit().unwrap();
    inspect(&msgs);
    FileStoreCommit::new(t.clone(), "test".into())
        .commit(&msgs, BATCH_COMMIT_IDENTIFIER, None)
        .unwrap();
}

fn commit(t: &FileStoreTable, batch: RecordBatch) {
    commit_with(t, batch, &mut |_| {});
}

/// Levels of the live files, sorted.
fn levels(t: &FileStoreTable) -> Vec<i32> {
    let s = t.snapshot_manager().latest().unwrap().unwrap();
    let mut l: Vec<i32> = live_files(t, &s)
        .unwrap()
        .iter()
        .map(|f| f.entry.file.level)
        .collect();
    l.sort();
    l
}

/// A table of [`kv_schema`] keyed by `k`, one bucket, with `opts`.
fn kv_table(dir: &std::path::Path, opts: &[(&str, &str)]) -> FileStoreTable {
    let mut all = vec![("bucket", "1")];
    all.extend_from_slice(opts);
    create_table(&catalog(dir), "db.t", &kv_schema(), &[], &["k"], &all)
}

fn model_of(m: &BTreeMap<i64, i64>) -> HashMap<i64, Option<i64>> {
    m.iter().map(|(k, v)| (*k, Some(*v))).collect()
}

/// Commit `i` of a random-ish history: 40 keys of 0..120, values from `i`; commit 0 writes
/// 3000 keys, so that later commits' small level-0 files go to levels below the max.
fn history(i: i64) -> Vec<(i64, i64)> {
    if i == 0 {
        return (0..3000).map(|k| (k, k % 7)).collect();
    }
    (0..40)
        .map(|j| ((i * 37 + j * 13) % 120, i * 1000 + j))
        .collect::<BTreeMap<_, _>>()
        .into_iter()
        .collect()
}

#[test]
fn first_row_keeps_the_first_value_through_lookup_without_full_compactions() {
    let dir = tempfile::tempdir().unwrap();
    let t = kv_table(dir.path(), &[("merge-engine", "first-row")]);
    let mut model = BTreeMap::new();
    for i in 0..6 {
        let mut rows = history(i);
        if i > 0 {
            // new keys, half of them also new in the commit before (so they lie in a level
            // below the max when this commit's level 0 is forced up)
            rows.extend((0..10).map(|j| (3000 + i * 5 + j, i * 1000 + j)));
        }
        for (k, v) in &rows {
            model.entry(*k).or_insert(*v);
        }
        commit(&t, kv_batch(&rows));
        assert_eq!(read_kv(&t), model_of(&model), "after commit {i}");
        let l = levels(&t);
        assert!(
            !l.contains(&0),
            "level 0 is forced up at each commit: {l:?}"
        );
    }
    // lookup, not full compaction: the data lies in several levels below the max
    let l = levels(&t);
    assert!(l.iter().any(|&x| x < 5), "{l:?}");
    // a full compaction changes nothing
    compact_table(&t, true, None).unwrap();
    assert_eq!(read_kv(&t), model_of(&model));
}

/// Deduplicate, aggregation (sum) and partial-update tables with `force-lookup`: every commit
/// moves level 0 up through lookup compaction, and reads equal the model.
#[test]
fn lookup_tables_of_every_merging_engine_read_equal_to_the_model() {
    type Step = fn(Option<i64>, i64) -> i64;
    type Case<'a> = (&'a str, &'a [(&'a str, &'a str)], Step);
    let cases: [Case; 3] = [
        ("deduplicate", &[], |_, v| v),
        (
            "aggregation",
            &[("fields.v.aggregate-function", "sum")],
            |old, v| old.unwrap_or(0) + v,
        ),
        ("partial-update", &[], |_, v| v),
    ];
    for (engine, extra, step) in cases {
        let dir = tempfile::tempdir().unwrap();
        let mut opts = vec![("merge-engine", engine), ("force-lookup", "true")];
        opts.extend_from_slice(extra);
        let t = kv_table(dir.path(), &opts);
        let mut model = BTreeMap::new();
        for i in 0..7 {
            let rows = history(i);
            for (k, v) in &rows {
                let old = model.get(k).copied();
                model.insert(*k, step(old, *v));
            }
            commit(&t, kv_batch(&rows));
            assert_eq!(read_kv(&t), model_of(&model), "{engine}: after commit {i}");
        }
        compact_table(&t, true, None).unwrap();
        assert_eq!(
            read_kv(&t),
            model_of(&model),
            "{engine}: after a full compaction"
        );
    }
}

/// Sum of one key over three commits: the second commit's lookup compaction writes 2 to a
/// level above the first commit's 1 (which stays); reading or compacting both levels must take
/// the lowest level only, or the key reads 3 (and then 6).
#[test]
fn aggregation_takes_only_the_lowest_level_of_a_key() {
    let dir = tempfile::tempdir().unwrap();
    let t = kv_table(
        dir.path(),
        &[
            ("merge-engine", "aggregation"),
            ("fields.v.aggregate-function", "sum"),
            ("force-lookup", "true"),
        ],
    );
    let big: Vec<(i64, i64)> = (0..2000).map(|k| (k, 1)).collect();
    commit(&t, kv_batch(&big));
    assert_eq!(levels(&t), vec![5]);
    for n in 2..5 {
        commit(&t, kv_batch(&[(1, 1)]));
        let l = levels(&t);
        assert!(
            l.len() >= 2 && l[0] < 5,
            "the key lies in two levels: {l:?}"
        );
        assert_eq!(read_kv(&t)[&1], Some(n), "{l:?}");
    }
    compact_table(&t, true, None).unwrap();
    assert_eq!(levels(&t), vec![5]);
    let r = read_kv(&t);
    assert_eq!(r[&1], Some(4));
    assert_eq!(r[&2], Some(1));
}

/// A changelog record: key, row kind, value, sequence number.
type ClRow = (i64, i8, Option<i64>, i64);

/// The records of changelog files.
fn changelog_rows(t: &FileStoreTable, msgs: &[CommitMessage]) -> Vec<ClRow> {
    let mut out = vec![];
    for m in msgs {
        for f in &m.compact_increment.changelog_files {
            assert!(f.file_name.starts_with("changelog-"), "{}", f.file_name);
            // Java's ChangelogMergeTreeRewriter: at the compaction's output level
            assert!(f.level > 0, "{} at level {}", f.file_name, f.level);
            // changelog files hold a key twice (-U, +U): read raw, not as a sorted run
            let path = t.path.join("bucket-0").join(&f.file_name);
            let file = std::fs::File::open(path).unwrap();
            let r = ParquetRecordBatchReaderBuilder::try_new(file)
                .unwrap()
                .build()
                .unwrap();
            for b in r {
                let b = b.unwrap();
                let k = b.column(0).as_primitive::<Int64Type>();
                let seq = b.column(1).as_primitive::<Int64Type>();
                let kind = b.column(2).as_primitive::<Int8Type>();
                let v = b.column(4).as_primitive::<Int64Type>();
                for i in 0..b.num_rows() {
                    out.push((
                        k.value(i),
                        kind.value(i),
                        v.is_valid(i).then(|| v.value(i)),
                        seq.value(i),
                    ));
                }
            }
        }
    }
    out
}

/// Changelog rows without their sequence numbers.
fn strip(v: &[ClRow]) -> Vec<(i64, i8, Option<i64>)> {
    v.iter().map(|r| (r.0, r.1, r.2)).collect()
}

/// Commit `batches` one after the other; the changelog of each commit must be `want` (without
/// sequence numbers). Returns the changelogs.
fn check_changelogs(
    t: &FileStoreTable,
    batches: Vec<RecordBatch>,
    want: &[&[(i64, i8, Option<i64>)]],
) -> Vec<Vec<ClRow>> {
    let mut got = vec![];
    for b in batches {
        commit_with(t, b, &mut |m| got.push(changelog_rows(t, m)));
    }
    let stripped: Vec<_> = got.iter().map(|g| strip(g)).collect();
    let want: Vec<Vec<_>> = want.iter().map(|w| w.to_vec()).collect();
    assert_eq!(stripped, want);
    got
}

const I: i8 = 0;
const UB: i8 = 1;
const UA: i8 = 2;
const D: i8 = 3;

#[test]
fn lookup_changelog_of_a_deduplicate_table() {
    let dir = tempfile::tempdir().unwrap();
    let t = create_kvo(
        dir.path(),
        1,
        &[
            ("changelog-producer", "lookup"),
            ("changelog-producer.row-deduplicate", "true"),
            // the row kind column differs between +I and +U of equal values
            ("changelog-producer.row-deduplicate-ignore-fields", "op"),
        ],
    );
    let got = check_changelogs(
        &t,
        vec![
            kvo_batch(&[(1, Some(10), "+I"), (2, Some(20), "+I")]),
            kvo_batch(&[(1, Some(11), "+I"), (3, Some(30), "+I")]),
            // key 1 unchanged (row-deduplicate: no changelog), key 2 deleted
            kvo_batch(&[(1, Some(11), "+U"), (2, Some(20), "-D")]),
        ],
        &[
            &[(1, I, Some(10)), (2, I, Some(20))],
            &[(1, UB, Some(10)), (1, UA, Some(11)), (3, I, Some(30))],
            &[(2, D, Some(20))],
        ],
    );
    // each record carries the sequence number of the record it describes
    assert_eq!(got[1][0].3, got[0][0].3);
    assert!(got[1][1].3 > got[1][0].3);
    let mut model = HashMap::new();
    model.insert(1, Some(11));
    model.insert(3, Some(30));
    assert_eq!(read_kv(&t), model);
    // the commits landed the compactions' changelog files in their snapshots
    let s = t.snapshot_manager().latest().unwrap().unwrap();
    let listed: Vec<String> = changelog_files(&t, &s)
        .unwrap()
        .into_iter()
        .map(|(_, f)| f.entry.file.file_name)
        .collect();
    assert_eq!(listed.len(), 3, "{listed:?}");
    assert!(listed.iter().all(|n| n.starts_with("changelog-")));
}

#[test]
fn lookup_changelog_of_aggregation_and_first_row_tables() {
    type Want<'a> = &'a [&'a [(i64, i8, Option<i64>)]];
    type Case<'a> = (&'a [(&'a str, &'a str)], Vec<RecordBatch>, Want<'a>);
    let sum: &[(&str, &str)] = &[
        ("merge-engine", "aggregation"),
        ("fields.v.aggregate-function", "sum"),
    ];
    let first_row: &[(&str, &str)] = &[("merge-engine", "first-row")];
    let cases: [Case; 2] = [
        (
            sum,
            vec![
                kv_batch(&[(1, 1), (2, 5)]),
                kv_batch(&[(1, 2)]),
                kv_batch(&[(1, 4), (3, 7)]),
            ],
            &[
                &[(1, I, Some(1)), (2, I, Some(5))],
                &[(1, UB, Some(1)), (1, UA, Some(3))],
                &[(1, UB, Some(3)), (1, UA, Some(7)), (3, I, Some(7))],
            ],
        ),
        (
            first_row,
            vec![kv_batch(&[(1, 1), (2, 5)]), kv_batch(&[(1, 2), (3, 3)])],
            // key 1 exists: no result, no changelog; key 3 is new
            &[&[(1, I, Some(1)), (2, I, Some(5))], &[(3, I, Some(3))]],
        ),
    ];
    for (opts, batches, want) in cases {
        // full-compaction (§9.4) compacts every batch commit fully: the same changelog (Java
        // refuses it for first-row)
        let producers: &[&str] = if opts == first_row {
            &["lookup"]
        } else {
            &["lookup", "full-compaction"]
        };
        for producer in producers {
            let dir = tempfile::tempdir().unwrap();
            let mut opts = opts.to_vec();
            opts.push(("changelog-producer", producer));
            let t = kv_table(dir.path(), &opts);
            check_changelogs(&t, batches.clone(), want);
        }
    }
}

/// `lookup-compact = gentle` (§3.5): level 0 is forced up only every
/// `lookup-compact.max-interval` picks, counted across the commits of one writer. Each commit's
/// file is far smaller than the one before, so universal compaction never picks (no size
/// amplification, no size ratio, runs not above the trigger): only the counter forces.
#[test]
fn gentle_lookup_compaction_forces_level0_up_every_max_interval_commits() {
    let dir = tempfile::tempdir().unwrap();
    let t = kv_table(
        dir.path(),
        &[
            ("merge-engine", "aggregation"),
            ("fields.v.aggregate-function", "sum"),
            ("force-lookup", "true"),
            ("lookup-compact", "gentle"),
            ("lookup-compact.max-interval", "5"),
            ("num-sorted-run.compaction-trigger", "5"),
        ],
    );
    let mut w = TableWrite::new(t.clone()).unwrap();
    let mut zeros = vec![];
    for n in [100_000, 10_000, 1_000, 100, 1, 1] {
        let rows: Vec<(i64, i64)> = (0..n).map(|k| (k, 1)).collect();
        w.write(&kv_batch(&rows)).unwrap();
        let msgs = w.prepare_commit().unwrap();
        FileStoreCommit::new(t.clone(), "test".into())
            .commit(&msgs, BATCH_COMMIT_IDENTIFIER, None)
            .unwrap();
        zeros.push(levels(&t).iter().filter(|&&l| l == 0).count());
    }
    w.close();
    // the fifth pick (fifth commit) forces level 0 up, the sixth starts counting again
    assert_eq!(zeros, vec![1, 2, 3, 4, 0, 1]);
    assert_eq!(read_kv(&t)[&0], Some(6));
    assert_eq!(read_kv(&t)[&5_000], Some(2));
}

/// A writer per commit (as a Python user writes): the lookup files of the data files that did
/// not change since the last commit are not built again, the process's cache of the table
/// outliving each writer; the data stays equal to the model.
#[test]
fn writers_of_successive_commits_reuse_the_lookup_files_of_unchanged_data_files() {
    let dir = tempfile::tempdir().unwrap();
    let t = kv_table(dir.path(), &[("changelog-producer", "lookup")]);
    let mut model = BTreeMap::new();
    let mut built = vec![];
    for i in 0..5 {
        let rows = history(i);
        model.extend(rows.iter().copied());
        commit(&t, kv_batch(&rows));
        assert_eq!(read_kv(&t), model_of(&model), "after commit {i}");
        built.push(lookup_cache_stats(&t).map_or(0, |s| s.built));
    }
    // commit 0 moves everything to the max level (no lookup); each later commit looks its keys
    // up there and in what the commits before it left below: a lookup file for the max-level
    // file once, then one for each new file, never one per file per commit
    let per_commit: Vec<u64> = built.windows(2).map(|w| w[1] - w[0]).collect();
    let files_above_0 = levels(&t).iter().filter(|&&l| l > 0).count() as u64;
    assert_eq!(built[0], 0, "{built:?}");
    assert_eq!(per_commit[0], 1, "the max-level file: {built:?}");
    assert!(
        per_commit[1..].iter().all(|&n| n <= 1),
        "only the previous commit's new file is new to the cache: {built:?} ({files_above_0} files)"
    );
}

/// `changelog-producer = full-compaction` (§9.4): every batch commit compacts the written
/// buckets fully, and the changelog is each key's max-level record (the previous full
/// compaction's result) against the merge of all of its records: the same changelog as the
/// lookup producer makes of commits compacted one by one. The first commit's file goes up to
/// the max level by metadata and still emits `+I` for each record.
#[test]
fn full_compaction_changelog_of_a_deduplicate_table() {
    let dir = tempfile::tempdir().unwrap();
    let t = create_kvo(
        dir.path(),
        1,
        &[
            ("changelog-producer", "full-compaction"),
            ("changelog-producer.row-deduplicate", "true"),
            ("changelog-producer.row-deduplicate-ignore-fields", "op"),
        ],
    );
    let mut first = vec![];
    commit_with(
        &t,
        kvo_batch(&[(1, Some(10), "+I"), (2, Some(20), "+I")]),
        &mut |m| first = m.to_vec(),
    );
    let c = &first[0].compact_increment;
    assert_eq!(c.compact_after.len(), 1);
    assert_eq!(
        c.compact_after[0].file_name, first[0].data_increment.new_files[0].file_name,
        "upgraded by metadata"
    );
    assert_eq!(c.compact_after[0].level, 5);
    assert_eq!(
        strip(&changelog_rows(&t, &first)),
        vec![(1, I, Some(10)), (2, I, Some(20))]
    );
    check_changelogs(
        &t,
        vec![
            kvo_batch(&[(1, Some(11), "+I"), (3, Some(30), "+I")]),
            // key 1 unchanged (row-deduplicate: no changelog), key 2 deleted
            kvo_batch(&[(1, Some(11), "+U"), (2, Some(20), "-D")]),
        ],
        &[
            &[(1, UB, Some(10)), (1, UA, Some(11)), (3, I, Some(30))],
            &[(2, D, Some(20))],
        ],
    );
    assert_eq!(levels(&t), vec![5]);
}

/// `full-compaction.delta-commits = 3` with commit identifiers (Java's streaming writers):
/// only commits 3 and 6 compact fully, each making the changelog of the three commits since
/// the last one (a key inserted and deleted in between emits nothing); the others none.
#[test]
fn full_compaction_changelog_every_delta_commits() {
    let dir = tempfile::tempdir().unwrap();
    let t = create_kvo(
        dir.path(),
        1,
        &[
            ("changelog-producer", "full-compaction"),
            ("full-compaction.delta-commits", "3"),
        ],
    );
    let commits = [
        vec![(1, Some(10), "+I"), (2, Some(20), "+I")],
        vec![(9, Some(90), "+I")],
        vec![(1, Some(11), "+U"), (9, Some(90), "-D")],
        vec![(2, Some(21), "+U")],
        vec![(3, Some(30), "+I")],
        vec![(1, Some(11), "-D")],
    ];
    let mut got = vec![];
    for (i, rows) in commits.iter().enumerate() {
        let id = i as i64 + 1;
        let mut w = TableWrite::new(t.clone()).unwrap();
        w.write(&kvo_batch(rows)).unwrap();
        let msgs = w.prepare_commit_as(id).unwrap();
        got.push(strip(&changelog_rows(&t, &msgs)));
        let full = msgs.iter().any(|m| !m.compact_increment.is_empty());
        assert_eq!(full, id % 3 == 0, "commit {id}");
        FileStoreCommit::new(t.clone(), "test".into())
            .commit(&msgs, id, None)
            .unwrap();
    }
    let none: Vec<(i64, i8, Option<i64>)> = vec![];
    assert_eq!(
        got,
        vec![
            none.clone(),
            none.clone(),
            vec![(1, I, Some(11)), (2, I, Some(20))],
            none.clone(),
            none,
            vec![
                (1, D, Some(11)),
                (2, UB, Some(20)),
                (2, UA, Some(21)),
                (3, I, Some(30))
            ],
        ]
    );
}

/// A full-compaction table written without compaction (`write-only`): the explicit full
/// compaction (`compact_table`, the CLI's and Spark's) makes the changelog, in the COMPACT
/// snapshot's changelog manifest list; a picked compaction below the max level makes none.
#[test]
fn explicit_full_compaction_of_a_full_compaction_table_makes_the_changelog() {
    let dir = tempfile::tempdir().unwrap();
    let t = kv_table(
        dir.path(),
        &[
            ("changelog-producer", "full-compaction"),
            ("write-only", "true"),
        ],
    );
    commit(&t, kv_batch(&[(1, 1), (2, 2)]));
    commit(&t, kv_batch(&[(1, 3), (4, 4)]));
    assert_eq!(levels(&t), vec![0, 0]);
    let id = compact_table(&t, true, None).unwrap().unwrap();
    let s = t.snapshot_manager().latest().unwrap().unwrap();
    assert_eq!(s.id, id);
    let files = changelog_files(&t, &s).unwrap();
    assert_eq!(files.len(), 1);
    assert_eq!(files[0].0, id);
    let f = &files[0].1.entry.file;
    assert_eq!((f.level, f.row_count), (5, 3));
    assert_eq!(levels(&t), vec![5]);
}
