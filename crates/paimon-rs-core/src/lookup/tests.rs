use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{ArrayRef, Int64Array, Int8Array, RecordBatch, StringArray};

use super::*;
use crate::kv::{file_context, kv_arrow_schema, FileSource};
use crate::options::CoreOptions;
use crate::table::FileStoreTable;
use crate::write::rolling::RollingFileWriter;
use crate::write::table_write::tests::table;

/// A data file of `table` at `level` holding `keys` (ascending): sequence `seq0 + i`, +I,
/// `v` = `v<key>@<level>`.
pub(crate) fn data_file(t: &FileStoreTable, level: i32, keys: &[i64], seq0: i64) -> DataFileMeta {
    let schema = kv_arrow_schema(t, true).unwrap();
    let k: ArrayRef = Arc::new(Int64Array::from(keys.to_vec()));
    let n = keys.len();
    let b = RecordBatch::try_new(
        schema,
        vec![
            k.clone(),
            Arc::new(Int64Array::from_iter_values(
                (0..n as i64).map(|i| seq0 + i),
            )),
            Arc::new(Int8Array::from(vec![0i8; n])),
            k,
            Arc::new(StringArray::from_iter_values(
                keys.iter().map(|k| format!("v{k}@{level}")),
            )),
        ],
    )
    .unwrap();
    let mut ctx = file_context(t, level, FileSource::Compact).unwrap();
    ctx.dir = t.path.join("bucket-0");
    crate::io::mkdirs(&ctx.dir).unwrap();
    let mut w = RollingFileWriter::new(ctx, 0);
    w.write(&b).unwrap();
    let mut files = w.close().unwrap();
    assert_eq!(files.len(), 1);
    files.remove(0)
}

fn lookup_levels(
    t: &FileStoreTable,
    files: Vec<DataFileMeta>,
    cache: Arc<LookupCache>,
) -> LookupLevels {
    let key_types = t.schema.types_of(&t.trimmed_primary_keys()).unwrap();
    let levels = Levels::new(&key_types, files, 3).unwrap();
    let reader = KvFileReader::new(t).unwrap();
    LookupLevels::new(cache, reader, t.path.join("bucket-0"), &key_types, &levels).unwrap()
}

fn keys(l: &LookupLevels, ks: &[i64]) -> Rows {
    l.encode_keys(&[Arc::new(Int64Array::from(ks.to_vec())) as ArrayRef])
        .unwrap()
}

/// (key, level, position, value) of each hit.
fn show(ks: &[i64], r: &LookupResult) -> Vec<(i64, i32, u64, String)> {
    let Some(b) = &r.batch else { return vec![] };
    let v = b.column(4).as_string::<i32>();
    let k = b.column(0).as_primitive::<Int64Type>();
    r.hits
        .iter()
        .enumerate()
        .map(|(i, h)| {
            assert_eq!(k.value(i), ks[h.key]);
            (ks[h.key], h.level, h.position, v.value(i).to_string())
        })
        .collect()
}

fn cache(t: &FileStoreTable, extra: &[(&str, &str)]) -> Arc<LookupCache> {
    let mut raw = t.options.raw.clone();
    for (k, v) in extra {
        raw.insert(k.to_string(), v.to_string());
    }
    let o = CoreOptions::new(&raw, true).unwrap();
    Arc::new(LookupCache::new(LookupOptions::from_options(&o).unwrap()))
}

/// Level 1: even keys 0..=98; level 2: keys 0..500 and 500..1000 in two files.
fn three_files(t: &FileStoreTable) -> Vec<DataFileMeta> {
    let evens: Vec<i64> = (0..50).map(|i| i * 2).collect();
    let low: Vec<i64> = (0..500).collect();
    let high: Vec<i64> = (500..1000).collect();
    vec![
        data_file(t, 1, &evens, 10_000),
        data_file(t, 2, &low, 0),
        data_file(t, 2, &high, 500),
    ]
}

#[test]
fn the_lowest_level_wins_and_positions_are_rows_of_the_data_file() {
    let dir = tempfile::tempdir().unwrap();
    let t = table(
        dir.path(),
        &[("bucket", "1"), ("merge-engine", "first-row")],
    );
    for file_type in ["hash", "sort"] {
        let c = cache(&t, &[("lookup.local-file-type", file_type)]);
        let l = lookup_levels(&t, three_files(&t), c.clone());
        let ks = [1, 2, 3, 98, 501, 999, 2000];
        let r = l.lookup(&keys(&l, &ks), 1, &Default::default()).unwrap();
        assert_eq!(
            show(&ks, &r),
            vec![
                (1, 2, 1, "v1@2".into()),
                (2, 1, 1, "v2@1".into()),
                (3, 2, 3, "v3@2".into()),
                (98, 1, 49, "v98@1".into()),
                (501, 2, 1, "v501@2".into()),
                (999, 2, 499, "v999@2".into()),
            ],
            "{file_type}"
        );
        assert_eq!(r.hits[1].seq, 10_001);
        assert_eq!(r.hits[0].kind, 0);
        // from level 2 on, level 1 is not asked
        let r = l.lookup(&keys(&l, &[2]), 2, &Default::default()).unwrap();
        assert_eq!(show(&[2], &r), vec![(2, 2, 2, "v2@2".into())]);
        let s = c.stats();
        assert_eq!(s.built, 3, "each file built once");
        assert_eq!(s.files, 3);
        assert_eq!(
            (s.disk_bytes, s.spilled),
            (0, 0),
            "within the memory limit nothing is written to disk"
        );
    }
}

#[test]
fn rows_deletion_vectors_remove_are_no_hits_and_the_lookup_goes_on_to_the_next_level() {
    let dir = tempfile::tempdir().unwrap();
    let t = table(dir.path(), &[("bucket", "1")]);
    let files = three_files(&t);
    let c = cache(&t, &[]);
    let l = lookup_levels(&t, files.clone(), c);
    // key 2 is row 1 of the level-1 file and row 2 of the first level-2 file; key 4 is row 2
    // of the level-1 file and row 4 of the level-2 file, both deleted
    let mut deleted = std::collections::BTreeMap::new();
    deleted.insert(
        files[0].file_name.clone(),
        roaring::RoaringBitmap::from_iter([1u32, 2]),
    );
    deleted.insert(
        files[1].file_name.clone(),
        roaring::RoaringBitmap::from_iter([4u32]),
    );
    let ks = [2, 4, 6];
    let r = l.lookup(&keys(&l, &ks), 1, &deleted).unwrap();
    assert_eq!(
        show(&ks, &r),
        vec![(2, 2, 2, "v2@2".into()), (6, 1, 3, "v6@1".into())]
    );
    // without the vectors, the level-1 rows win
    let r = l.lookup(&keys(&l, &ks), 1, &Default::default()).unwrap();
    assert_eq!(
        show(&ks, &r),
        vec![
            (2, 1, 1, "v2@1".into()),
            (4, 1, 2, "v4@1".into()),
            (6, 1, 3, "v6@1".into())
        ]
    );
}

#[test]
fn the_bloom_filter_keeps_files_that_cannot_hold_a_key_unloaded() {
    let dir = tempfile::tempdir().unwrap();
    let t = table(
        dir.path(),
        &[("bucket", "1"), ("merge-engine", "first-row")],
    );
    // nothing may stay loaded: every probe that passes the bloom filter reloads from disk
    let c = cache(&t, &[("lookup.cache-max-memory-size", "1 b")]);
    let l = lookup_levels(&t, three_files(&t), c.clone());
    // odd keys are in level 1's range but not in its file
    let odd: Vec<i64> = (0..49).map(|i| i * 2 + 1).collect();
    let before = c.stats();
    let r = l.lookup(&keys(&l, &odd), 1, &Default::default()).unwrap();
    assert_eq!(r.hits.len(), odd.len());
    assert!(r.hits.iter().all(|h| h.level == 2));
    let s = c.stats();
    assert!(
        s.bloom_skips - before.bloom_skips >= 40,
        "most odd keys are refused by level 1's bloom filter: {s:?}"
    );
    // without a bloom filter every probe reaches the file
    let c = cache(&t, &[("lookup.cache.bloom.filter.enabled", "false")]);
    let l = lookup_levels(&t, three_files(&t), c.clone());
    l.lookup(&keys(&l, &odd), 1, &Default::default()).unwrap();
    assert_eq!(c.stats().bloom_skips, 0);
}

#[test]
fn the_disk_limit_evicts_least_recently_used_files_and_answers_stay_right() {
    let dir = tempfile::tempdir().unwrap();
    let t = table(
        dir.path(),
        &[("bucket", "1"), ("merge-engine", "first-row")],
    );
    // nothing fits in memory: each file but the one in use is spilled, then evicted from disk
    let c = cache(
        &t,
        &[
            ("lookup.cache-max-memory-size", "1 b"),
            ("lookup.cache-max-disk-size", "1 b"),
        ],
    );
    let l = lookup_levels(&t, three_files(&t), c.clone());
    for _ in 0..2 {
        let ks = [2, 3, 700];
        let r = l.lookup(&keys(&l, &ks), 1, &Default::default()).unwrap();
        assert_eq!(
            show(&ks, &r),
            vec![
                (2, 1, 1, "v2@1".into()),
                (3, 2, 3, "v3@2".into()),
                (700, 2, 200, "v700@2".into())
            ]
        );
        let s = c.stats();
        assert_eq!(s.files, 1, "only the file in use stays: {s:?}");
    }
    let s = c.stats();
    assert_eq!(s.built, 6, "evicted files are rebuilt when needed again");
    assert_eq!((s.spilled, s.evicted), (5, 5), "{s:?}");
    let local: Vec<_> = std::fs::read_dir(c.dir().unwrap())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".lookup.arrow"))
        .collect();
    assert!(local.is_empty(), "the file in use is in memory only");
    // room on disk: spilled files are read back, not rebuilt
    let c = cache(&t, &[("lookup.cache-max-memory-size", "1 b")]);
    let l = lookup_levels(&t, three_files(&t), c.clone());
    for _ in 0..2 {
        l.lookup(&keys(&l, &[2, 3, 700]), 1, &Default::default())
            .unwrap();
    }
    let s = c.stats();
    assert_eq!((s.built, s.spilled, s.loaded), (3, 3, 3), "{s:?}");
    assert!(s.disk_bytes > 0);
}

/// The shared cache of a table outlives its writers (one per table, schema and lookup
/// options); a change of options replaces it; release frees what no writer holds.
#[test]
fn writers_of_a_table_share_one_cache_until_released() {
    let dir = tempfile::tempdir().unwrap();
    let t = table(
        dir.path(),
        &[("bucket", "1"), ("merge-engine", "first-row")],
    );
    let a = crate::lookup::cache_for(&t).unwrap().unwrap();
    let b = crate::lookup::cache_for(&t).unwrap().unwrap();
    assert!(Arc::ptr_eq(&a, &b));
    let l = lookup_levels(&t, three_files(&t), a.clone());
    l.lookup(&keys(&l, &[2, 3]), 1, &Default::default())
        .unwrap();
    assert_eq!(crate::lookup::lookup_cache_stats(&t).unwrap().built, 2);
    drop((a, b, l));
    let sort = [("lookup.local-file-type".to_string(), "sort".to_string())];
    let t2 = t.copy(&sort.into_iter().collect()).unwrap();
    let c = crate::lookup::cache_for(&t2).unwrap().unwrap();
    assert_eq!(
        crate::lookup::lookup_cache_stats(&t).unwrap().built,
        0,
        "other options: a new cache replaced the one no writer held"
    );
    let l = lookup_levels(&t2, three_files(&t2), c.clone());
    l.lookup(&keys(&l, &[2]), 1, &Default::default()).unwrap();
    // (other tests' caches may be released alongside: the registry is the process's)
    crate::lookup::release_lookup_caches();
    assert!(
        crate::lookup::lookup_cache_stats(&t).is_some(),
        "held by a writer: kept"
    );
    drop((c, l));
    assert!(crate::lookup::release_lookup_caches() > 0);
    assert!(crate::lookup::lookup_cache_stats(&t).is_none());
    // a table that does not look up has none
    let plain = table(dir.path().join("p").as_path(), &[("bucket", "1")]);
    assert!(crate::lookup::cache_for(&plain).unwrap().is_none());
}

#[test]
fn forgetting_a_data_file_deletes_its_lookup_file() {
    let dir = tempfile::tempdir().unwrap();
    let t = table(
        dir.path(),
        &[("bucket", "1"), ("merge-engine", "first-row")],
    );
    let c = cache(&t, &[]);
    let files = three_files(&t);
    let l = lookup_levels(&t, files.clone(), c.clone());
    l.lookup(&keys(&l, &[2, 3, 700]), 1, &Default::default())
        .unwrap();
    assert_eq!(c.stats().files, 3);
    c.forget(files.iter().map(|f| f.file_name.as_str()));
    assert_eq!(c.stats().files, 0);
    assert_eq!(c.stats().disk_bytes, 0);
}

#[test]
fn lookup_options_are_validated_or_refused() {
    let dir = tempfile::tempdir().unwrap();
    let t = table(dir.path(), &[("bucket", "1")]);
    let parse = |kv: &[(&str, &str)]| {
        let mut raw = t.options.raw.clone();
        for (k, v) in kv {
            raw.insert(k.to_string(), v.to_string());
        }
        LookupOptions::from_options(&CoreOptions::new(&raw, true).unwrap())
    };
    let d = parse(&[]).unwrap();
    assert_eq!(d.file_type, LocalFileType::Hash);
    assert_eq!(d.max_memory, 256 << 20);
    assert_eq!(d.bloom_fpp, Some(0.05));
    let e = parse(&[("lookup.local-file-type", "btree")]).unwrap_err();
    assert!(e.to_string().contains("lookup.local-file-type"), "{e}");
    assert_eq!(d.hash_load_factor, 0.75);
    assert_eq!(
        parse(&[("lookup.hash-load-factor", "0.5")])
            .unwrap()
            .hash_load_factor,
        0.5
    );
    let e = parse(&[("lookup.hash-load-factor", "1.5")]).unwrap_err();
    assert!(e.to_string().contains("lookup.hash-load-factor"), "{e}");
    let e = parse(&[("lookup.cache.bloom.filter.fpp", "2")]).unwrap_err();
    assert!(e.to_string().contains("fpp"), "{e}");
    assert!(parse(&[("lookup.cache-spill-compression", "snappy")]).is_err());
}

/// With `file.format.per.level`, each level's files are written in its format (the file
/// names' extensions) and lookups read them all: ORC at level 1, Avro at level 2.
#[test]
fn lookups_read_files_of_every_level_format() {
    let dir = tempfile::tempdir().unwrap();
    let t = table(
        dir.path(),
        &[
            ("bucket", "1"),
            ("merge-engine", "first-row"),
            ("file.format.per.level", "1:orc,2:avro"),
            ("file.compression.per.level", "2:snappy"),
        ],
    );
    let files = three_files(&t);
    let ext: Vec<&str> = files
        .iter()
        .map(|f| f.file_name.rsplit('.').next().unwrap())
        .collect();
    assert_eq!(ext, ["orc", "avro", "avro"]);
    let l = lookup_levels(&t, files, cache(&t, &[]));
    let hits = |ks: &[i64]| {
        show(
            ks,
            &l.lookup(&keys(&l, ks), 1, &Default::default()).unwrap(),
        )
    };
    assert_eq!(hits(&[1]), [(1, 2, 1, "v1@2".to_string())]);
    assert_eq!(
        hits(&[2, 999]),
        [(2, 1, 1, "v2@1".into()), (999, 2, 499, "v999@2".into())]
    );
}

/// Rows a compaction hands the cache for the files it wrote are indexed at the first probe
/// instead of reading the data files (here deleted, so only the seeds can answer), split into
/// files by the files' row counts whatever the batch boundaries; rows that do not add up to
/// the files' row counts are not kept.
#[test]
fn seeded_rows_serve_the_first_probe_without_reading_the_data_file() {
    let dir = tempfile::tempdir().unwrap();
    let t = table(
        dir.path(),
        &[("bucket", "1"), ("merge-engine", "first-row")],
    );
    let files = three_files(&t);
    let reader = KvFileReader::new(&t).unwrap();
    let read = |f: &DataFileMeta| {
        let b = reader
            .read_run(
                &t.path.join("bucket-0"),
                std::slice::from_ref(f),
                &Default::default(),
            )
            .collect::<Result<Vec<_>>>()
            .unwrap();
        arrow_select::concat::concat_batches(&reader.schema(), &b).unwrap()
    };
    // the two level-2 files' rows, in batches that do not end where the files do
    let all =
        arrow_select::concat::concat_batches(&reader.schema(), &[read(&files[1]), read(&files[2])])
            .unwrap();
    let batches = [all.slice(0, 300), all.slice(300, 400), all.slice(700, 300)];
    let want = {
        let l = lookup_levels(&t, files.clone(), cache(&t, &[]));
        show(
            &[3, 499, 500, 998],
            &l.lookup(&keys(&l, &[3, 499, 500, 998]), 2, &Default::default())
                .unwrap(),
        )
    };
    assert_eq!(want.len(), 4);

    let c = cache(&t, &[]);
    c.seed(&reader, &files[1..], &batches[..2]);
    assert_eq!(c.stats().seeded, 0);
    c.seed(&reader, &files[1..], &batches);
    for f in &files[1..] {
        std::fs::remove_file(t.path.join("bucket-0").join(&f.file_name)).unwrap();
    }
    let l = lookup_levels(&t, files.clone(), c.clone());
    let got = l
        .lookup(&keys(&l, &[3, 499, 500, 998]), 2, &Default::default())
        .unwrap();
    assert_eq!(show(&[3, 499, 500, 998], &got), want);
    let s = c.stats();
    assert_eq!((s.built, s.seeded), (2, 2), "{s:?}");
}

/// A deletion-vector table's compactions seed the cache with the files they write: later
/// commits' lookups index those rows without decoding the files, and every key reads back
/// with its newest value.
#[test]
fn a_dv_tables_compactions_seed_the_lookup_cache() {
    use crate::write::table_write::tests::rows;
    use crate::write::table_write::TableWrite;
    let dir = tempfile::tempdir().unwrap();
    let t = table(
        dir.path(),
        &[("bucket", "1"), ("deletion-vectors.enabled", "true")],
    );
    for commit in 0..6i64 {
        let mut w = TableWrite::new(t.clone()).unwrap();
        w.write(&rows((commit % 3) * 500, 1000)).unwrap();
        let msgs = w.prepare_commit().unwrap();
        crate::commit::FileStoreCommit::new(t.clone(), "u".into())
            .commit(&msgs, commit, None)
            .unwrap();
    }
    let s = crate::lookup::lookup_cache_stats(&t).unwrap();
    assert!(s.seeded > 0, "{s:?}");
    let plan = crate::read::scan::TableScan::new(t.clone(), None)
        .plan()
        .unwrap();
    let r = crate::read::table_read::TableRead::new(t.clone(), None, None).unwrap();
    let mut got = std::collections::BTreeMap::new();
    for b in r.read_splits(&plan.splits).unwrap() {
        let k = b.column(0).as_primitive::<Int64Type>();
        let v = b.column(1).as_string::<i32>();
        for i in 0..b.num_rows() {
            assert!(got.insert(k.value(i), v.value(i).to_string()).is_none());
        }
    }
    let want: std::collections::BTreeMap<i64, String> =
        (0..2000).map(|k| (k, format!("value-{k:012}"))).collect();
    assert_eq!(got, want);
}
