//! Read-only views of a snapshot's metadata for users and the CLI: per-partition statistics
//! (Java's `PartitionEntry` / pypaimon's `list_partitions_paged`) and the live data files with
//! their partition directory, from the manifests only (no data file is read).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::error::Result;
use crate::scan_options::local_to_epoch_millis;
use crate::spec::binary_row::deserialize_row;
use crate::spec::datum::Datum;
use crate::spec::manifest::{
    live_index_entries, read_index_manifest, IndexManifestEntry, ManifestEntry, ManifestFileMeta,
};
use crate::spec::partition::{partition_path, partition_value_string};
use crate::spec::schema::TableSchema;
use crate::spec::snapshot::Snapshot;
use crate::spec::types::{DataField, DataType};
use crate::table::live::{live_entries, live_entries_of, read_list};
use crate::table::snapshot_manager::{read_schema, schema_path};
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

/// A data file entry of a snapshot's delta (what that commit added or deleted).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeltaFile {
    /// The partition directory relative to the table, `k=v/` (`""` unpartitioned).
    pub partition: String,
    /// `(key, value)` per partition key, the values as in the partition path.
    pub spec: Vec<(String, String)>,
    /// The entry as the delta manifests hold it (ADD or DELETE).
    pub entry: ManifestEntry,
}

/// The entries of `snapshot`'s delta manifest list, in manifest order, ADD and DELETE alike
/// and not merged (a compaction deletes and adds): the commit entries Java and pypaimon hand
/// to a `CommitCallback`.
pub fn delta_files(table: &FileStoreTable, snapshot: &Snapshot) -> Result<Vec<DeltaFile>> {
    let mut entries = vec![];
    for m in read_list(table, snapshot, &snapshot.delta_manifest_list)? {
        let p = table.manifest_dir().join(&m.file_name);
        let referrer = format!("snapshot {} of table {}", snapshot.id, table.name);
        let bytes = crate::io::read_referenced(&p, &referrer)?;
        entries.extend(crate::spec::manifest::read_manifest_entries(&bytes, &p)?);
    }
    let names = partition_names(table, &entries)?;
    Ok(entries
        .into_iter()
        .map(|entry| {
            let (partition, spec) = names.get(&entry.partition).cloned().unwrap_or_default();
            DeltaFile {
                partition,
                spec,
                entry,
            }
        })
        .collect())
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

/// A value as Java's `toString` of the converted object renders it (a number, the text of a
/// string, `null`), for the `$files` / `$manifests` / `$table_indexes` system tables.
fn value_string(v: &Option<Datum>, t: &DataType) -> String {
    match v {
        None => "null".to_string(),
        Some(_) => partition_value_string(v, t, false)
            .ok()
            .flatten()
            .unwrap_or_else(|| format!("{v:?}")),
    }
}

/// A BinaryRow as Java's row-to-string cast renders it: `{v1, v2}` (`{}` for no columns).
fn row_string(types: &[DataType], bytes: &[u8], joined: (&str, &str)) -> Result<String> {
    let values = deserialize_row(types, bytes)?;
    let parts: Vec<String> = values
        .iter()
        .zip(types)
        .map(|(v, t)| value_string(v, t))
        .collect();
    Ok(format!("{}{}{}", joined.0, parts.join(", "), joined.1))
}

/// What `$files` shows of a live file beyond [`LiveFile`]: the partition as `{v1, v2}`, the key
/// range as `[k1, k2]` (None for files without keys), and the value statistics of the table's
/// current columns as Java's `TreeMap` renders them (`{a=0, b=1}`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileDetail {
    pub partition: String,
    pub min_key: Option<String>,
    pub max_key: Option<String>,
    pub null_value_counts: String,
    pub min_value_stats: String,
    pub max_value_stats: String,
}

/// [`live_files`] with each file's [`FileDetail`], in the same order.
pub fn file_details(
    table: &FileStoreTable,
    snapshot: &Snapshot,
) -> Result<Vec<(LiveFile, FileDetail)>> {
    let files = live_files(table, snapshot)?;
    let ptypes = table.partition_types()?;
    let keys = table.trimmed_primary_keys();
    let key_types = table.schema.types_of(&keys)?;
    let mut schemas: HashMap<i64, TableSchema> = HashMap::new();
    let mut out = Vec::with_capacity(files.len());
    for f in files {
        let m = &f.entry.file;
        let key = |b: &[u8]| -> Result<Option<String>> {
            if b.len() < 4 || b[..4] == [0, 0, 0, 0] || key_types.is_empty() {
                return Ok(None);
            }
            row_string(&key_types, b, ("[", "]")).map(Some)
        };
        let file_schema = match schemas.entry(m.schema_id) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(e) => {
                e.insert(if m.schema_id == table.schema.id {
                    table.schema.clone()
                } else {
                    read_schema(&table.meta_path(), m.schema_id)?
                })
            }
        };
        // the stats' columns (by the file's schema), mapped to the table's by field id
        let stat_fields: Vec<&DataField> = match &m.value_stats_cols {
            Some(cols) => cols
                .iter()
                .filter_map(|c| file_schema.fields.iter().find(|f| &f.name == c))
                .collect(),
            None => file_schema.fields.iter().collect(),
        };
        let stat_types: Vec<DataType> = stat_fields.iter().map(|f| f.data_type.clone()).collect();
        let mins = deserialize_row(&stat_types, &m.value_stats.min_values)?;
        let maxs = deserialize_row(&stat_types, &m.value_stats.max_values)?;
        let mut nulls = BTreeMap::new();
        let mut lows = BTreeMap::new();
        let mut highs = BTreeMap::new();
        for cur in &table.schema.fields {
            let at = stat_fields.iter().position(|f| f.id == cur.id);
            let (n, lo, hi) = match at {
                Some(i) => (
                    m.value_stats
                        .null_counts
                        .get(i)
                        .copied()
                        .flatten()
                        .map_or("null".to_string(), |c| c.to_string()),
                    value_string(&mins.get(i).cloned().flatten(), &stat_types[i]),
                    value_string(&maxs.get(i).cloned().flatten(), &stat_types[i]),
                ),
                None => continue,
            };
            nulls.insert(cur.name.clone(), n);
            lows.insert(cur.name.clone(), lo);
            highs.insert(cur.name.clone(), hi);
        }
        let render = |m: &BTreeMap<String, String>| {
            let parts: Vec<String> = m.iter().map(|(k, v)| format!("{k}={v}")).collect();
            format!("{{{}}}", parts.join(", "))
        };
        let detail = FileDetail {
            partition: row_string(&ptypes, &f.entry.partition, ("{", "}"))?,
            min_key: key(&m.min_key)?,
            max_key: key(&m.max_key)?,
            null_value_counts: render(&nulls),
            min_value_stats: render(&lows),
            max_value_stats: render(&highs),
        };
        out.push((f, detail));
    }
    Ok(out)
}

/// One manifest file of a snapshot (`$manifests`) with its partition range as `{v1, v2}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManifestRow {
    pub meta: ManifestFileMeta,
    pub min_partition_stats: String,
    pub max_partition_stats: String,
}

/// The data manifests of `snapshot`: its base list's, then its delta list's (Java's
/// `ManifestList.readAllManifests`).
pub fn manifest_files(table: &FileStoreTable, snapshot: &Snapshot) -> Result<Vec<ManifestRow>> {
    let ptypes = table.partition_types()?;
    let mut metas = read_list(table, snapshot, &snapshot.base_manifest_list)?;
    metas.extend(read_list(table, snapshot, &snapshot.delta_manifest_list)?);
    metas
        .into_iter()
        .map(|meta| {
            let stats = &meta.partition_stats;
            let min = row_string(&ptypes, &stats.min_values, ("{", "}"))?;
            let max = row_string(&ptypes, &stats.max_values, ("{", "}"))?;
            Ok(ManifestRow {
                meta,
                min_partition_stats: min,
                max_partition_stats: max,
            })
        })
        .collect::<Result<Vec<_>>>()
        .map_err(|e| e.with_table(&table.name))
}

/// The live index files of `snapshot` (`$table_indexes`): (partition as `{v1, v2}`, entry),
/// sorted by partition, bucket, index type, file name.
pub fn index_files(
    table: &FileStoreTable,
    snapshot: &Snapshot,
) -> Result<Vec<(String, IndexManifestEntry)>> {
    let Some(name) = &snapshot.index_manifest else {
        return Ok(vec![]);
    };
    let p = table.manifest_dir().join(name);
    let referrer = format!("snapshot {} of table {}", snapshot.id, table.name);
    let entries = live_index_entries(read_index_manifest(
        &crate::io::read_referenced(&p, &referrer)?,
        &p,
    )?);
    let ptypes = table.partition_types()?;
    let mut out = entries
        .into_iter()
        .map(|e| Ok((row_string(&ptypes, &e.partition, ("{", "}"))?, e)))
        .collect::<Result<Vec<_>>>()?;
    out.sort_by(|(pa, a), (pb, b)| {
        (pa, a.bucket, &a.index_type, &a.file_name).cmp(&(
            pb,
            b.bucket,
            &b.index_type,
            &b.file_name,
        ))
    });
    Ok(out)
}

/// Every schema file of the table (its branch's): (id, the file's JSON), ascending by id.
pub fn schema_files(table: &FileStoreTable) -> Result<Vec<(i64, String)>> {
    let dir = table.meta_path().join("schema");
    let mut ids: Vec<i64> = crate::io::list_names(&dir)?
        .iter()
        .filter_map(|n| n.strip_prefix("schema-")?.parse::<i64>().ok())
        .collect();
    ids.sort_unstable();
    ids.into_iter()
        .map(|id| {
            Ok((
                id,
                crate::io::read_to_string(&schema_path(&table.meta_path(), id))?,
            ))
        })
        .collect()
}

/// The branches of the table with their directory's modification time (epoch millis; None
/// where the store has none), sorted by name: `$branches`' `create_time`, as Java reads it.
pub fn branch_create_times(table: &FileStoreTable) -> Result<Vec<(String, Option<i64>)>> {
    let mut out: Vec<(String, Option<i64>)> = crate::io::list_status(&table.path.join("branch"))?
        .into_iter()
        .filter(|s| !s.is_file)
        .filter_map(|s| Some((s.name.strip_prefix("branch-")?.to_string(), s.mtime_millis)))
        .collect();
    out.sort();
    Ok(out)
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

    #[test]
    fn delta_files_are_what_each_commit_added() {
        let dir = tempfile::tempdir().unwrap();
        let t = table(dir.path());
        commit(&t, Some("a"), &[1, 2, 3]);
        commit(&t, None, &[7]);
        let sm = t.snapshot_manager();
        let first = delta_files(&t, &sm.snapshot(1).unwrap()).unwrap();
        assert!(!first.is_empty());
        assert!(first
            .iter()
            .all(|d| d.entry.kind == crate::spec::manifest::FileKind::Add
                && d.partition == "dt=a/"
                && d.spec == [("dt".to_string(), "a".to_string())]));
        assert_eq!(first.iter().map(|d| d.entry.file.row_count).sum::<i64>(), 3);
        let second = delta_files(&t, &sm.snapshot(2).unwrap()).unwrap();
        assert_eq!(second.len(), 1);
        assert_eq!(second[0].partition, "dt=__DEFAULT_PARTITION__/");
        assert_eq!(second[0].entry.file.row_count, 1);
        // not the files of snapshot 1: a delta, not the live set
        assert!(first
            .iter()
            .all(|d| d.entry.file.file_name != second[0].entry.file.file_name));
    }

    #[test]
    fn system_table_views_render_rows_as_java() {
        let dir = tempfile::tempdir().unwrap();
        let t = table(dir.path());
        commit(&t, Some("a"), &[3, 1]);
        commit(&t, None, &[7]);
        let snap = t.snapshot_manager().latest().unwrap().unwrap();
        // $files: the partition as Java's row cast `{v}` (a null value is `null`), no key
        // range for an append table, the stats as a sorted map
        let details = file_details(&t, &snap).unwrap();
        let parts: Vec<&str> = details.iter().map(|(_, d)| d.partition.as_str()).collect();
        assert!(
            parts.contains(&"{a}") && parts.contains(&"{null}"),
            "{parts:?}"
        );
        let (_, a) = details
            .iter()
            .find(|(_, d)| d.partition == "{a}" && d.min_value_stats.contains("k=1"))
            .unwrap();
        assert_eq!(a.min_key, None);
        assert_eq!(a.null_value_counts, "{dt=0, k=0}");
        assert_eq!(a.min_value_stats, "{dt=a, k=1}");
        // $manifests: base then delta of the latest snapshot, partition ranges rendered
        let manifests = manifest_files(&t, &snap).unwrap();
        let added: i64 = manifests.iter().map(|m| m.meta.num_added_files).sum();
        assert_eq!(added as usize, details.len());
        assert!(manifests.iter().any(|m| m.min_partition_stats == "{a}"));
        // $schemas: every schema file; $table_indexes: none without an index
        let schemas = schema_files(&t).unwrap();
        assert_eq!(schemas.len(), 1);
        assert_eq!(schemas[0].0, 0);
        assert!(index_files(&t, &snap).unwrap().is_empty());
        assert!(branch_create_times(&t).unwrap().is_empty());
    }
}
