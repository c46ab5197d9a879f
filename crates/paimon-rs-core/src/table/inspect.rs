//! Read-only views of a snapshot's metadata for users and the CLI: per-partition statistics
//! (Java's `PartitionEntry` / pypaimon's `list_partitions_paged`) and the live data files with
//! their partition directory, from the manifests only (no data file is read).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::error::Result;
use crate::scan_options::local_to_epoch_millis;
use crate::spec::binary_row::deserialize_row;
use crate::spec::manifest::ManifestEntry;
use crate::spec::partition::{partition_path, partition_value_string};
use crate::spec::snapshot::Snapshot;
use crate::table::live::{live_entries, live_entries_of, read_list};
use crate::table::FileStoreTable;

/// Totals of the live files of one partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionStats {
    /// `(key, value)` per partition key, the values as in the partition path (a null or blank
    /// value is `partition.default-name`).
    pub spec: Vec<(String, String)>,
    /// The partition directory relative to the table, `k=v/` (`""` unpartitioned).
    pub path: String,
    /// Rows of the live files (primary-key tables: including -U/-D rows, as Java counts).
    pub record_count: i64,
    pub file_size_in_bytes: i64,
    pub file_count: i64,
    /// Newest file creation time as epoch millis (the manifest's local wall-clock time read in
    /// this process's time zone, as Java's `creationTimeEpochMillis`); `None` if no file has one.
    pub last_file_creation_time: Option<i64>,
    /// Distinct buckets holding live files.
    pub buckets: usize,
}

/// One live data file and where it lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveFile {
    /// The partition directory relative to the table, `k=v/` (`""` unpartitioned).
    pub partition: String,
    pub entry: ManifestEntry,
}

/// A partition's directory (`k=v/`) and spec.
type PartitionName = (String, Vec<(String, String)>);

/// The partition directory and spec of each distinct partition row of `entries`.
fn partition_names(
    table: &FileStoreTable,
    entries: &[ManifestEntry],
) -> Result<HashMap<Vec<u8>, PartitionName>> {
    let types = table.partition_types()?;
    let keys = table.partition_keys();
    let o = &table.options;
    let mut out = HashMap::new();
    for e in entries {
        if out.contains_key(&e.partition) {
            continue;
        }
        let values = deserialize_row(&types, &e.partition)?;
        let path = partition_path(
            keys,
            &types,
            &values,
            &o.partition_default_name,
            o.partition_legacy_name,
        )?;
        let mut spec = Vec::with_capacity(keys.len());
        for ((k, t), v) in keys.iter().zip(&types).zip(&values) {
            let text = partition_value_string(v, t, o.partition_legacy_name)?
                .filter(|s| !s.trim().is_empty())
                .unwrap_or_else(|| o.partition_default_name.clone());
            spec.push((k.clone(), text));
        }
        out.insert(e.partition.clone(), (path, spec));
    }
    Ok(out)
}

/// The live files of `snapshot`, sorted by partition directory, bucket, level and file name.
pub fn live_files(table: &FileStoreTable, snapshot: &Snapshot) -> Result<Vec<LiveFile>> {
    let entries = live_entries(table, snapshot).map_err(|e| e.with_table(&table.name))?;
    let names = partition_names(table, &entries)?;
    let mut out: Vec<LiveFile> = entries
        .into_iter()
        .map(|entry| LiveFile {
            partition: names
                .get(&entry.partition)
                .map(|(p, _)| p.clone())
                .unwrap_or_default(),
            entry,
        })
        .collect();
    out.sort_by(|a, b| {
        (
            &a.partition,
            a.entry.bucket,
            a.entry.file.level,
            &a.entry.file.file_name,
        )
            .cmp(&(
                &b.partition,
                b.entry.bucket,
                b.entry.file.level,
                &b.entry.file.file_name,
            ))
    });
    Ok(out)
}

/// The changelog files of the snapshots still present up to `snapshot` (those an incremental
/// read in `changelog` mode can read): per snapshot, the files its changelog manifest list
/// adds, as (snapshot id, file), sorted by partition, bucket, snapshot, file name.
pub fn changelog_files(
    table: &FileStoreTable,
    snapshot: &Snapshot,
) -> Result<Vec<(i64, LiveFile)>> {
    let sm = table.snapshot_manager();
    let earliest = sm
        .earliest_id()
        .map_err(|e| e.with_table(&table.name))?
        .unwrap_or(snapshot.id);
    let mut all: Vec<(i64, ManifestEntry)> = vec![];
    for id in earliest..=snapshot.id {
        let s = if id == snapshot.id {
            snapshot.clone()
        } else {
            sm.snapshot_in_history(id)
                .map_err(|e| e.with_table(&table.name))?
        };
        let Some(list) = &s.changelog_manifest_list else {
            continue;
        };
        let metas = read_list(table, &s, list)?;
        let entries = live_entries_of(table, metas, None).map_err(|e| e.with_table(&table.name))?;
        all.extend(entries.into_iter().map(|e| (id, e)));
    }
    let entries: Vec<ManifestEntry> = all.iter().map(|(_, e)| e.clone()).collect();
    let names = partition_names(table, &entries)?;
    let mut out: Vec<(i64, LiveFile)> = all
        .into_iter()
        .map(|(id, entry)| {
            let partition = names
                .get(&entry.partition)
                .map(|(p, _)| p.clone())
                .unwrap_or_default();
            (id, LiveFile { partition, entry })
        })
        .collect();
    out.sort_by(|(ia, a), (ib, b)| {
        (&a.partition, a.entry.bucket, ia, &a.entry.file.file_name).cmp(&(
            &b.partition,
            b.entry.bucket,
            ib,
            &b.entry.file.file_name,
        ))
    });
    Ok(out)
}

/// Per partition of `snapshot`: record count, bytes, files, newest file creation time and
/// buckets, sorted by partition directory.
pub fn partition_stats(table: &FileStoreTable, snapshot: &Snapshot) -> Result<Vec<PartitionStats>> {
    let entries = live_entries(table, snapshot).map_err(|e| e.with_table(&table.name))?;
    let names = partition_names(table, &entries)?;
    let mut acc: BTreeMap<String, (PartitionStats, BTreeSet<i32>)> = BTreeMap::new();
    for e in &entries {
        let Some((path, spec)) = names.get(&e.partition) else {
            continue;
        };
        let (s, buckets) = acc.entry(path.clone()).or_insert_with(|| {
            (
                PartitionStats {
                    spec: spec.clone(),
                    path: path.clone(),
                    record_count: 0,
                    file_size_in_bytes: 0,
                    file_count: 0,
                    last_file_creation_time: None,
                    buckets: 0,
                },
                BTreeSet::new(),
            )
        });
        s.record_count += e.file.row_count;
        s.file_size_in_bytes += e.file.file_size;
        s.file_count += 1;
        let created = e
            .file
            .creation_time
            .and_then(chrono::DateTime::from_timestamp_millis)
            .and_then(|t| local_to_epoch_millis(t.naive_utc()));
        if let Some(c) = created {
            s.last_file_creation_time = Some(s.last_file_creation_time.map_or(c, |m| m.max(c)));
        }
        buckets.insert(e.bucket);
    }
    Ok(acc
        .into_values()
        .map(|(mut s, b)| {
            s.buckets = b.len();
            s
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::sync::Arc;

    use arrow_array::{Int64Array, RecordBatch, StringArray};
    use arrow_schema::{DataType, Field, Schema};

    use super::*;
    use crate::commit::FileStoreCommit;
    use crate::table::catalog::FileSystemCatalog;
    use crate::table::new_schema::NewTableSchema;
    use crate::write::TableWrite;

    fn schema() -> Schema {
        Schema::new(vec![
            Field::new("dt", DataType::Utf8, true),
            Field::new("k", DataType::Int64, false),
        ])
    }

    fn table(dir: &Path) -> FileStoreTable {
        let cat = FileSystemCatalog::new(dir).unwrap();
        cat.create_database("db", true).unwrap();
        // an append table: a null partition value is allowed
        let opts = [
            ("bucket".to_string(), "2".to_string()),
            ("bucket-key".to_string(), "k".to_string()),
        ]
        .into();
        let s =
            NewTableSchema::from_arrow(&schema(), vec!["dt".into()], vec![], opts, None).unwrap();
        cat.create_table("db.t", s, false).unwrap();
        cat.get_table("db.t").unwrap()
    }

    fn commit(t: &FileStoreTable, dt: Option<&str>, ks: &[i64]) {
        let batch = RecordBatch::try_new(
            Arc::new(schema()),
            vec![
                Arc::new(StringArray::from(vec![dt; ks.len()])),
                Arc::new(Int64Array::from(ks.to_vec())),
            ],
        )
        .unwrap();
        let mut w = TableWrite::new(t.clone()).unwrap();
        w.write(&batch).unwrap();
        let msgs = w.prepare_commit().unwrap();
        FileStoreCommit::new(t.clone(), "u".into())
            .commit(&msgs, i64::MAX, None)
            .unwrap();
    }

    #[test]
    fn partition_stats_sum_the_live_files_per_partition() {
        let dir = tempfile::tempdir().unwrap();
        let t = table(dir.path());
        commit(&t, Some("a"), &(0..20).collect::<Vec<_>>());
        commit(&t, Some("a"), &[100]);
        commit(&t, None, &[1]);
        let snap = t.snapshot_manager().latest().unwrap().unwrap();
        let files = live_files(&t, &snap).unwrap();
        let stats = partition_stats(&t, &snap).unwrap();
        assert_eq!(
            stats.iter().map(|s| s.path.as_str()).collect::<Vec<_>>(),
            ["dt=__DEFAULT_PARTITION__/", "dt=a/"]
        );
        let a = &stats[1];
        assert_eq!(a.spec, [("dt".to_string(), "a".to_string())]);
        assert_eq!(a.record_count, 21);
        let in_a: Vec<_> = files.iter().filter(|f| f.partition == "dt=a/").collect();
        assert_eq!(a.file_count as usize, in_a.len());
        assert_eq!(
            a.file_size_in_bytes,
            in_a.iter().map(|f| f.entry.file.file_size).sum::<i64>()
        );
        assert_eq!(a.buckets, 2);
        assert!(a.last_file_creation_time.is_some());
        assert_eq!(
            stats[0].spec,
            [("dt".to_string(), "__DEFAULT_PARTITION__".to_string())]
        );
        // sorted by partition, bucket, level, name
        let keys: Vec<_> = files
            .iter()
            .map(|f| {
                (
                    f.partition.clone(),
                    f.entry.bucket,
                    f.entry.file.file_name.clone(),
                )
            })
            .collect();
        let mut sorted = keys.clone();
        sorted.sort();
        assert_eq!(keys, sorted);
    }
}
