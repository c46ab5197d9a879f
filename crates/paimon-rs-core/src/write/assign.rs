//! Which bucket a row belongs to, and where the rows of a batch belong for engines that
//! distribute a write: [`BucketAssigner`] is the one place the table's bucket function lives
//! (the writer routes rows by it, `paimon_rs.spark` shuffles by it through
//! [`partition_bucket_of`], the binding's `bucket_of_rows` asks it); `paimon_rs.spark` shuffles
//! rows so that every row of one (partition, bucket) meets in one task, and needs each row's
//! bucket and a stable hash of its partition, without writing anything.

use arrow_array::{ArrayRef, RecordBatch};

use crate::error::{Error, Result};
use crate::spec::binary_row::RowEncoder;
use crate::spec::bucket::{compute_buckets, hash_bytes};
use crate::spec::types::DataType;
use crate::table::FileStoreTable;

/// Assigns rows to buckets (Java's `BucketAssigner` / `FixedBucketRowKeyExtractor`): today the
/// fixed-bucket hash of the bucket key (`bucket` > 0), or bucket 0 for a bucket-unaware append
/// table (`bucket` = -1). A primary-key table's dynamic buckets (`bucket` = -1) depend on its
/// hash index: its `TableWrite` assigns them (write/dynamic_bucket.rs).
#[derive(Debug, Clone)]
pub struct BucketAssigner {
    table: String,
    num_buckets: i32,
    primary_key: bool,
    /// Bucket-key columns: names, positions in the table's schema, declared types.
    key_names: Vec<String>,
    key_idx: Vec<usize>,
    key_types: Vec<DataType>,
}

impl BucketAssigner {
    pub fn new(table: &FileStoreTable) -> Result<Self> {
        let key_names = table.bucket_keys();
        let key_idx = key_names
            .iter()
            .map(|n| {
                table
                    .schema
                    .field_index(n)
                    .ok_or_else(|| Error::schema(format!("column '{n}' is not in the schema")))
            })
            .collect::<Result<_>>()?;
        Ok(BucketAssigner {
            table: table.name.clone(),
            num_buckets: table.options.bucket,
            primary_key: table.is_primary_key(),
            key_types: table.schema.types_of(&key_names)?,
            key_names,
            key_idx,
        })
    }

    /// Whether rows are hashed to buckets (`bucket` > 0); otherwise every row is in bucket 0.
    pub fn is_fixed(&self) -> bool {
        self.num_buckets > 0
    }

    /// The bucket-key columns' names.
    pub fn key_names(&self) -> &[String] {
        &self.key_names
    }

    /// The bucket-key columns' positions in the table's schema.
    pub fn key_indices(&self) -> &[usize] {
        &self.key_idx
    }

    /// The bucket-key columns' declared types (what [`Self::buckets`] expects).
    pub fn key_types(&self) -> &[DataType] {
        &self.key_types
    }

    /// The bucket of each of `rows` rows whose bucket-key columns are `keys` (typed as the table
    /// declares them; not read unless [`Self::is_fixed`]).
    pub fn buckets(&self, keys: &[ArrayRef], rows: usize) -> Result<Vec<i32>> {
        if self.is_fixed() {
            return compute_buckets(keys, &self.key_types, self.num_buckets);
        }
        if self.primary_key {
            return Err(Error::unsupported(format!(
                "routing rows of a primary-key table with bucket = {} (dynamic bucket mode) \
                 outside its writer: the bucket of a key comes from the table's hash index, \
                 which only a TableWrite assigns (distributed writes of dynamic bucket tables \
                 are not supported yet); write through the table's batch write or set a fixed \
                 'bucket' > 0",
                self.num_buckets
            ))
            .with_table(&self.table));
        }
        Ok(vec![0; rows])
    }
}

/// Column `name` of `batch`, cast to the table's type of the column (an engine may send
/// `int64` for an INT column).
pub(crate) fn typed_column(
    table: &FileStoreTable,
    batch: &RecordBatch,
    name: &String,
) -> Result<ArrayRef> {
    let field = table.schema.field(name).ok_or_else(|| {
        Error::schema(format!("'{name}' is not a column")).with_table(&table.name)
    })?;
    let c = batch.column_by_name(name).ok_or_else(|| {
        Error::schema(format!(
            "the batch lacks column '{name}' (a partition or key column)"
        ))
        .with_table(&table.name)
    })?;
    let want = field.data_type.to_arrow();
    if c.data_type() == &want {
        return Ok(c.clone());
    }
    arrow::compute::cast(c, &want).map_err(|e| {
        Error::schema(format!(
            "column '{name}': {} cannot be cast to {}: {e}",
            c.data_type(),
            field.data_type
        ))
        .with_table(&table.name)
    })
}

/// The encoder of the partition BinaryRows of `batch`'s rows (its partition columns, by name,
/// cast to the table's types); None for an unpartitioned table.
pub(crate) fn partition_encoder(
    table: &FileStoreTable,
    batch: &RecordBatch,
) -> Result<Option<RowEncoder>> {
    if table.partition_keys().is_empty() {
        return Ok(None);
    }
    let cols: Vec<ArrayRef> = table
        .partition_keys()
        .iter()
        .map(|name| typed_column(table, batch, name))
        .collect::<Result<_>>()?;
    Ok(Some(RowEncoder::new(&table.partition_types()?, &cols)?))
}

/// Per row of `batch`: a hash of its partition (MurmurHash3 of the partition's BinaryRow, 0 on
/// an unpartitioned table) and its bucket ([`BucketAssigner`]). `batch` holds at least the
/// partition and bucket-key columns, by name; other columns are ignored. Columns are cast to
/// the table's types first (an engine may send `int64` for an INT column).
pub fn partition_bucket_of(
    table: &FileStoreTable,
    batch: &RecordBatch,
) -> Result<(Vec<i32>, Vec<i32>)> {
    let n = batch.num_rows();
    let column = |name: &String| typed_column(table, batch, name);
    let partition_hash = if let Some(enc) = partition_encoder(table, batch)? {
        let mut buf = Vec::new();
        let mut out = Vec::with_capacity(n);
        for r in 0..n {
            buf.clear();
            enc.encode(r, &mut buf)?;
            out.push(hash_bytes(&buf));
        }
        out
    } else {
        vec![0; n]
    };
    let assigner = BucketAssigner::new(table)?;
    let keys: Vec<ArrayRef> = if assigner.is_fixed() {
        assigner
            .key_names()
            .iter()
            .map(column)
            .collect::<Result<_>>()?
    } else {
        vec![]
    };
    Ok((partition_hash, assigner.buckets(&keys, n)?))
}

#[cfg(test)]
pub(crate) mod tests {
    use std::collections::{BTreeMap, BTreeSet};
    use std::sync::Arc;

    use arrow_array::{Int32Array, Int64Array, StringArray};
    use arrow_schema::{DataType as AT, Field, Schema};

    use super::*;
    use crate::table::catalog::FileSystemCatalog;
    use crate::table::new_schema::NewTableSchema;
    use crate::write::TableWrite;

    /// A table partitioned by `p INT`, keyed by (p, k BIGINT), with a `v STRING` value.
    pub(crate) fn table(dir: &std::path::Path, bucket: &str) -> FileStoreTable {
        let cat = FileSystemCatalog::new(dir).unwrap();
        cat.create_database("db", true).unwrap();
        let schema = Schema::new(vec![
            Field::new("p", AT::Int32, false),
            Field::new("k", AT::Int64, false),
            Field::new("v", AT::Utf8, true),
        ]);
        let opts = BTreeMap::from([("bucket".to_string(), bucket.to_string())]);
        let s = NewTableSchema::from_arrow(
            &schema,
            vec!["p".into()],
            vec!["p".into(), "k".into()],
            opts,
            None,
        )
        .unwrap();
        cat.create_table("db.t", s, false).unwrap();
        cat.get_table("db.t").unwrap()
    }

    /// Rows of partition `p` with keys `ks` and values `v<k>`.
    pub(crate) fn rows(p: i32, ks: std::ops::Range<i64>) -> RecordBatch {
        let ks: Vec<i64> = ks.collect();
        let vs: Vec<String> = ks.iter().map(|k| format!("v{k}")).collect();
        RecordBatch::try_new(
            Arc::new(Schema::new(vec![
                Field::new("p", AT::Int32, false),
                Field::new("k", AT::Int64, false),
                Field::new("v", AT::Utf8, true),
            ])),
            vec![
                Arc::new(Int32Array::from(vec![p; ks.len()])),
                Arc::new(Int64Array::from(ks)),
                Arc::new(StringArray::from(vs)),
            ],
        )
        .unwrap()
    }

    /// The assigner hashes the bucket key into `bucket` buckets, and refuses a primary-key
    /// table in dynamic bucket mode (before anything is written).
    #[test]
    fn assigner_hashes_the_bucket_key() {
        let dir = tempfile::tempdir().unwrap();
        let t = table(dir.path(), "4");
        let a = BucketAssigner::new(&t).unwrap();
        assert!(a.is_fixed());
        assert_eq!(a.key_names(), ["k".to_string()]);
        assert_eq!(a.key_indices(), [1]);
        let b = rows(0, 0..1000);
        let got = a.buckets(&[b.column(1).clone()], 1000).unwrap();
        let want = compute_buckets(&[b.column(1).clone()], a.key_types(), 4).unwrap();
        assert_eq!(got, want);
        assert!(got.iter().all(|b| (0..4).contains(b)));
        let dir = tempfile::tempdir().unwrap();
        let dynamic = table(dir.path(), "4")
            .copy(&[("bucket".to_string(), "-1".to_string())].into())
            .unwrap();
        let e = BucketAssigner::new(&dynamic)
            .unwrap()
            .buckets(&[], 3)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("dynamic bucket mode") && e.contains("db.t"),
            "{e}"
        );
    }

    /// The (partition, bucket) groups of the assignment are exactly the writer's buckets, and
    /// equal partitions hash equal: a shuffle by them puts each bucket in one task.
    #[test]
    fn assignment_matches_the_writers_buckets() {
        let dir = tempfile::tempdir().unwrap();
        let t = table(dir.path(), "4");
        let n = 2_000;
        let ps: Vec<i32> = (0..n).map(|i| i % 3).collect();
        let ks: Vec<i64> = (0..n as i64).map(|i| i * 7919).collect();
        let vs: Vec<String> = ks.iter().map(|k| format!("v{k}")).collect();
        let batch = RecordBatch::try_new(
            Arc::new(Schema::new(vec![
                Field::new("p", AT::Int32, false),
                Field::new("k", AT::Int64, false),
                Field::new("v", AT::Utf8, true),
            ])),
            vec![
                Arc::new(Int32Array::from(ps.clone())),
                Arc::new(Int64Array::from(ks)),
                Arc::new(StringArray::from(vs)),
            ],
        )
        .unwrap();
        let (ph, b) = partition_bucket_of(&t, &batch).unwrap();
        let mut hash_of_p = BTreeMap::new();
        for (p, h) in ps.iter().zip(&ph) {
            assert_eq!(*hash_of_p.entry(*p).or_insert(*h), *h);
        }
        assert_eq!(hash_of_p.len(), 3);
        let ours: BTreeSet<(i32, i32)> = ps.iter().copied().zip(b.iter().copied()).collect();
        let mut w = TableWrite::new(t).unwrap();
        w.write(&batch).unwrap();
        let msgs = w.prepare_commit().unwrap();
        // per message: its partition's value (INT at offset 8 of the BinaryRow) and its bucket
        let written: BTreeSet<(i32, i32)> = msgs
            .iter()
            .map(|m| {
                let v = i32::from_le_bytes(m.partition[12..16].try_into().unwrap());
                (v, m.bucket)
            })
            .collect();
        assert_eq!(ours, written);
        // per (partition, bucket) the row counts agree too
        for m in &msgs {
            let v = i32::from_le_bytes(m.partition[12..16].try_into().unwrap());
            let rows: i64 = m.data_increment.new_files.iter().map(|f| f.row_count).sum();
            let want = ps
                .iter()
                .zip(&b)
                .filter(|(p, bk)| **p == v && **bk == m.bucket)
                .count() as i64;
            assert_eq!(rows, want);
        }
    }

    #[test]
    fn a_missing_key_column_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let t = table(dir.path(), "2");
        let batch = RecordBatch::try_new(
            Arc::new(Schema::new(vec![Field::new("p", AT::Int32, false)])),
            vec![Arc::new(Int32Array::from(vec![1]))],
        )
        .unwrap();
        let e = partition_bucket_of(&t, &batch).unwrap_err().to_string();
        assert!(e.contains("'k'") && e.contains("db.t"), "{e}");
    }
}
