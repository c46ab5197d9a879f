//! Incremental reads in `changelog` mode: the changelog files of every snapshot of the range,
//! read without merging. paimon_rs does not write changelog files, so the table's delta files
//! are relabelled as changelog files (same KV layout): each snapshot's `changelogManifestList`
//! is set to its delta manifest list.

mod common;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Array, RecordBatch};
use paimon_rs_core::{Datum, FileStoreTable, LeafOp, Predicate, Split, TableRead, TableScan};

use common::{commit_kvo, create_kvo, with_options};

type Row = (String, i64, Option<i64>);

fn rows(batches: &[RecordBatch]) -> Vec<Row> {
    let mut out = vec![];
    for b in batches {
        assert_eq!(b.schema().field(0).name(), "rowkind");
        let kinds = b.column(0).as_string::<i32>();
        let k = b.column(1).as_primitive::<Int64Type>();
        let v = b.column(2).as_primitive::<Int64Type>();
        for i in 0..b.num_rows() {
            out.push((
                kinds.value(i).to_string(),
                k.value(i),
                (!v.is_null(i)).then(|| v.value(i)),
            ));
        }
    }
    out
}

fn read(
    t: &FileStoreTable,
    opts: &[(&str, &str)],
    filter: Option<Predicate>,
) -> (Vec<Split>, Vec<Row>) {
    let t = with_options(t, opts);
    let plan = TableScan::new(t.clone(), filter.clone()).plan().unwrap();
    let r = TableRead::new(t, Some(vec!["k".into(), "v".into()]), filter).unwrap();
    let got = rows(&r.read_splits(&plan.splits).unwrap());
    (plan.splits, got)
}

fn r(kind: &str, k: i64, v: i64) -> Row {
    (kind.to_string(), k, Some(v))
}

/// Make each snapshot's delta files its changelog files too.
fn relabel_deltas_as_changelog(t: &FileStoreTable, ids: std::ops::RangeInclusive<i64>) {
    let sm = t.snapshot_manager();
    for id in ids {
        let p = sm.snapshot_path(id);
        let mut j: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
        j["changelogManifestList"] = j["deltaManifestList"].clone();
        std::fs::write(&p, serde_json::to_string(&j).unwrap()).unwrap();
    }
}

#[test]
fn changelog_mode_reads_every_record_unmerged_with_its_kind() {
    let dir = tempfile::tempdir().unwrap();
    let t = create_kvo(dir.path(), 1, &[]);
    commit_kvo(&t, &[(1, Some(10), "+I"), (2, Some(20), "+I")]);
    commit_kvo(&t, &[(1, Some(11), "+U")]);
    commit_kvo(&t, &[(2, Some(20), "-D")]);
    let changelog = [
        ("incremental-between", "0,3"),
        ("incremental-between-scan-mode", "changelog"),
    ];
    // no snapshot has a changelog manifest list (changelog-producer none): nothing, as Java
    let (splits, got) = read(&t, &changelog, None);
    assert!(splits.is_empty() && got.is_empty(), "{got:?}");
    // auto on a table without a changelog producer reads the delta files, merged by key
    let (_, got) = read(&t, &[("incremental-between", "0,3")], None);
    assert_eq!(got, vec![r("+U", 1, 11), r("-D", 2, 20)]);

    relabel_deltas_as_changelog(&t, 1..=3);
    let all = vec![
        r("+I", 1, 10),
        r("+I", 2, 20),
        r("+U", 1, 11),
        r("-D", 2, 20),
    ];
    let (splits, got) = read(&t, &changelog, None);
    assert!(splits.iter().all(|s| s.changelog && !s.raw_convertible));
    assert_eq!(got, all, "every record in snapshot order, retractions kept");
    // a split shipped elsewhere (serialized) reads the same
    let back: Vec<Split> = splits
        .iter()
        .map(|s| Split::from_bytes(&s.to_bytes().unwrap()).unwrap())
        .collect();
    let tt = with_options(&t, &changelog);
    let rd = TableRead::new(tt.clone(), Some(vec!["k".into(), "v".into()]), None).unwrap();
    assert_eq!(rows(&rd.read_splits(&back).unwrap()), all);
    // a batch (non-incremental) read refuses a changelog split: it has no row kind column
    let batch = TableRead::new(t.clone(), None, None).unwrap();
    let e = batch.read_splits(&back).unwrap_err().to_string();
    assert!(e.contains("changelog split"), "{e}");

    // the range: snapshots after the start up to the end
    let (_, got) = read(
        &t,
        &[
            ("incremental-between", "1,2"),
            ("incremental-between-scan-mode", "changelog"),
        ],
        None,
    );
    assert_eq!(got, vec![r("+U", 1, 11)]);
    // the filter applies to each record
    let ge11 = Predicate::leaf("v", LeafOp::GreaterOrEqual, vec![Some(Datum::BigInt(11))]).unwrap();
    let (_, got) = read(&t, &changelog, Some(ge11));
    assert_eq!(got, vec![r("+I", 2, 20), r("+U", 1, 11), r("-D", 2, 20)]);
    let k1 = Predicate::leaf("k", LeafOp::Equal, vec![Some(Datum::BigInt(1))]).unwrap();
    let (_, got) = read(&t, &changelog, Some(k1));
    assert_eq!(got, vec![r("+I", 1, 10), r("+U", 1, 11)]);
    // an OVERWRITE snapshot contributes no changelog (Java skips them), even with a list
    let mut w = paimon_rs_core::TableWrite::new(t.clone()).unwrap();
    w.write(&common::kvo_batch(&[(9, Some(90), "+I")])).unwrap();
    let msgs = w.prepare_commit().unwrap();
    let spec = paimon_rs_core::PartitionSpec::default();
    let s4 = paimon_rs_core::FileStoreCommit::new(t.clone(), "test".into())
        .commit(&msgs, paimon_rs_core::BATCH_COMMIT_IDENTIFIER, Some(&spec))
        .unwrap()
        .unwrap();
    relabel_deltas_as_changelog(&t, s4..=s4);
    let to4 = [
        ("incremental-between", "0,4"),
        ("incremental-between-scan-mode", "changelog"),
    ];
    assert_eq!(read(&t, &to4, None).1, all);
    // auto on a table with a changelog producer reads the changelog; delta still the deltas
    let producer = [
        ("changelog-producer", "input"),
        ("incremental-between", "0,3"),
    ];
    assert_eq!(read(&t, &producer, None).1, all);
    let mut delta = producer.to_vec();
    delta.push(("incremental-between-scan-mode", "delta"));
    assert_eq!(
        read(&t, &delta, None).1,
        vec![r("+U", 1, 11), r("-D", 2, 20)]
    );
}

/// Between two tags the read is the difference of their files (Java): changelog mode is
/// refused there rather than ignored.
#[test]
fn changelog_mode_between_tags_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let t = create_kvo(dir.path(), 1, &[]);
    commit_kvo(&t, &[(1, Some(10), "+I")]);
    let t = with_options(
        &t,
        &[
            ("incremental-between", "a,b"),
            ("incremental-between-scan-mode", "changelog"),
        ],
    );
    let Err(e) = TableScan::new(t, None).plan() else {
        panic!("changelog mode between tags was not refused");
    };
    let e = e.to_string();
    assert!(e.contains("between tags"), "{e}");
}
