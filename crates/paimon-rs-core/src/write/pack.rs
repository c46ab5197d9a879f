//! A write's rows grouped by shuffle key into Arrow IPC streams, for engines that ship them
//! through a shuffle of their own: `paimon_rs.spark`'s pack stage sends one row per (key,
//! stream) instead of every row (docs/spark-integration.md, "Packed shuffle").

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::{
    Array, ArrayRef, BinaryArray, Int32Array, LargeBinaryArray, RecordBatch, UInt32Array,
};
use arrow_buffer::{OffsetBuffer, ScalarBuffer};
use arrow_ipc::writer::{IpcWriteOptions, StreamWriter};
use arrow_ipc::CompressionType;
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use crate::error::{Error, Result};
use crate::merge::{int_key, sort_by_key};
use crate::table::FileStoreTable;
use crate::write::assign::partition_bucket_of;

/// How a row's shuffle key is made of its (partition, bucket).
#[derive(Debug, Clone)]
pub enum ShuffleKeys {
    /// `keys[bucket]`: an unpartitioned table, whose shuffle sends bucket b to task b.
    Identity(Vec<i32>),
    /// `partition hash * 31 + bucket`, wrapping to 32 bits: equal (partition, bucket), equal key.
    PartitionBucket,
}

impl ShuffleKeys {
    /// The shuffle key of every row of `batch` (at least the partition and bucket-key columns).
    pub fn of(&self, table: &FileStoreTable, batch: &RecordBatch) -> Result<Vec<i32>> {
        let (phash, bucket) = partition_bucket_of(table, batch)?;
        match self {
            ShuffleKeys::Identity(keys) => bucket
                .iter()
                .map(|&b| {
                    usize::try_from(b)
                        .ok()
                        .and_then(|b| keys.get(b).copied())
                        .ok_or_else(|| {
                            Error::Internal(format!(
                                "bucket {b} has no shuffle key ({} buckets keyed)",
                                keys.len()
                            ))
                        })
                })
                .collect(),
            ShuffleKeys::PartitionBucket => Ok(phash
                .iter()
                .zip(&bucket)
                // the low 32 bits, as the Python key (`& 0xFFFFFFFF` viewed as int32)
                .map(|(&p, &b)| (i64::from(p) * 31 + i64::from(b)) as i32)
                .collect()),
        }
    }
}

/// Rows held by shuffle key until [`Packer::finish`] writes each key's rows as one Arrow IPC
/// stream. Each input batch is copied once, into its keys' slices (one `take`), each slice
/// sorted by the table's primary key: the writer that receives them merges these runs instead
/// of sorting its bucket (`merge::merge_order`, docs/spark-integration.md "Packed shuffle").
/// A key's rows of one batch are a few thousand, sorted in cache.
pub struct Packer {
    keys: ShuffleKeys,
    compression: Option<CompressionType>,
    schema: Option<SchemaRef>,
    /// positions of the table's (trimmed) primary-key columns in the batches; None for an
    /// append table, or if a batch lacks one (the rows then go unsorted; the writer sorts)
    sort_key: Option<Vec<usize>>,
    /// key -> its rows, batch by batch; keys in order of first arrival
    groups: HashMap<i32, Vec<RecordBatch>>,
    order: Vec<i32>,
    bytes: usize,
}

impl Packer {
    /// `compression`: the codec of the streams' buffers (`lz4` or `zstd`), None for none.
    pub fn new(keys: ShuffleKeys, compression: Option<&str>) -> Result<Self> {
        let compression = match compression {
            None => None,
            Some("lz4") => Some(CompressionType::LZ4_FRAME),
            Some("zstd") => Some(CompressionType::ZSTD),
            Some(other) => {
                return Err(Error::invalid(format!(
                    "packed shuffle: unknown IPC compression '{other}' (lz4, zstd or none)"
                )))
            }
        };
        Ok(Packer {
            keys,
            compression,
            schema: None,
            sort_key: None,
            groups: HashMap::new(),
            order: vec![],
            bytes: 0,
        })
    }

    /// Bytes of the rows held (Arrow memory of the slices).
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Hold the rows of `batch` under their shuffle keys (`table`'s bucket hash). Every batch
    /// has the schema of the first.
    pub fn push(&mut self, table: &FileStoreTable, batch: &RecordBatch) -> Result<()> {
        if batch.num_rows() == 0 {
            return Ok(());
        }
        match &self.schema {
            None => {
                let schema = batch.schema();
                let pk = table.trimmed_primary_keys();
                self.sort_key = (!pk.is_empty())
                    .then(|| pk.iter().map(|k| schema.index_of(k).ok()).collect())
                    .flatten();
                self.schema = Some(schema);
            }
            Some(s) if s.as_ref() != batch.schema().as_ref() => {
                return Err(Error::schema(format!(
                    "packed shuffle: a batch of schema {} after batches of {}",
                    batch.schema(),
                    s
                ))
                .with_table(&table.name))
            }
            Some(_) => {}
        }
        let keys = self.keys.of(table, batch)?;
        // each row's group (its key's index in `distinct`), then a counting sort: one `take`
        // puts every group's rows together, the groups are slices of it
        let mut distinct: Vec<i32> = vec![];
        let mut index: HashMap<i32, u32> = HashMap::new();
        let mut group = Vec::with_capacity(keys.len());
        let mut last: Option<(i32, u32)> = None;
        for &k in &keys {
            let g = match last {
                Some((lk, lg)) if lk == k => lg,
                _ => *index.entry(k).or_insert_with(|| {
                    distinct.push(k);
                    (distinct.len() - 1) as u32
                }),
            };
            last = Some((k, g));
            group.push(g);
        }
        let mut starts = vec![0usize; distinct.len() + 1];
        for &g in &group {
            starts[g as usize + 1] += 1;
        }
        for i in 1..starts.len() {
            starts[i] += starts[i - 1];
        }
        let mut at = starts.clone();
        let mut idx = vec![0u32; keys.len()];
        for (row, &g) in group.iter().enumerate() {
            idx[at[g as usize]] = row as u32;
            at[g as usize] += 1;
        }
        let grouped = match &self.sort_key {
            Some(ks) => {
                let cols: Vec<ArrayRef> = ks.iter().map(|&c| batch.column(c).clone()).collect();
                let ints = int_key(&cols);
                for g in 0..distinct.len() {
                    let rows = &mut idx[starts[g]..starts[g + 1]];
                    sort_rows_by_key(&cols, ints.as_deref(), rows)?;
                }
                arrow_select::take::take_record_batch(batch, &UInt32Array::from(idx))?
            }
            None if distinct.len() == 1 => batch.clone(),
            None => arrow_select::take::take_record_batch(batch, &UInt32Array::from(idx))?,
        };
        self.bytes += grouped.get_array_memory_size();
        for (g, &k) in distinct.iter().enumerate() {
            let part = grouped.slice(starts[g], starts[g + 1] - starts[g]);
            let held = self.groups.entry(k).or_insert_with(|| {
                self.order.push(k);
                vec![]
            });
            held.push(part);
        }
        Ok(())
    }

    /// Every key held with its rows as one IPC stream, as batches of `(k int32, blob binary)`
    /// (`large`: `large_binary`) of at most about `max_bytes` of blobs each (32-bit offsets
    /// bound a binary column to 2 GiB); the packer is empty after.
    pub fn finish(&mut self, large: bool, max_bytes: usize) -> Result<Vec<RecordBatch>> {
        let Some(schema) = self.schema.clone() else {
            return Ok(vec![]);
        };
        let options = IpcWriteOptions::default().try_with_compression(self.compression)?;
        let mut out = vec![];
        let mut keys: Vec<i32> = vec![];
        let mut data: Vec<u8> = Vec::with_capacity(self.bytes.min(max_bytes) / 2);
        let mut offsets: Vec<i64> = vec![0];
        for k in std::mem::take(&mut self.order) {
            let parts = self.groups.remove(&k).unwrap_or_default();
            let mut w = StreamWriter::try_new_with_options(&mut data, &schema, options.clone())?;
            for p in &parts {
                w.write(p)?;
            }
            w.finish()?;
            drop(w);
            keys.push(k);
            offsets.push(data.len() as i64);
            if data.len() >= max_bytes {
                out.push(blob_batch(
                    std::mem::take(&mut keys),
                    std::mem::take(&mut data),
                    std::mem::replace(&mut offsets, vec![0]),
                    large,
                )?);
            }
        }
        if !keys.is_empty() {
            out.push(blob_batch(keys, data, offsets, large)?);
        }
        self.groups.clear();
        self.bytes = 0;
        Ok(out)
    }
}

/// `rows` (indices into the batch whose key columns are `key_cols`, ascending) reordered by key
/// as the write buffer sorts ([`sort_by_key`]), ties in the given order. `ints`: the key's
/// values when [`int_key`] gives them (computed once per batch, not per group).
fn sort_rows_by_key(key_cols: &[ArrayRef], ints: Option<&[i64]>, rows: &mut [u32]) -> Result<()> {
    if let Some(v) = ints {
        let mut keyed: Vec<(i64, u32)> = rows.iter().map(|&r| (v[r as usize], r)).collect();
        keyed.sort_unstable();
        for (dst, &(_, r)) in rows.iter_mut().zip(keyed.iter()) {
            *dst = r;
        }
        return Ok(());
    }
    let idx = UInt32Array::from(rows.to_vec());
    let keys = key_cols
        .iter()
        .map(|c| Ok(arrow_select::take::take(c.as_ref(), &idx, None)?))
        .collect::<Result<Vec<ArrayRef>>>()?;
    let (perm, _) = sort_by_key(&keys, None, idx.len())?;
    for (dst, &p) in rows.iter_mut().zip(perm.iter()) {
        *dst = idx.value(p as usize);
    }
    Ok(())
}

/// `(k, blob)` rows of the streams in `data` (`offsets` delimit them).
fn blob_batch(
    keys: Vec<i32>,
    data: Vec<u8>,
    offsets: Vec<i64>,
    large: bool,
) -> Result<RecordBatch> {
    let values = arrow_buffer::Buffer::from_vec(data);
    let blob: ArrayRef = if large {
        Arc::new(LargeBinaryArray::try_new(
            OffsetBuffer::new(ScalarBuffer::from(offsets)),
            values,
            None,
        )?)
    } else {
        let narrow: Vec<i32> = offsets
            .iter()
            .map(|&o| {
                i32::try_from(o).map_err(|_| {
                    Error::invalid(format!(
                        "packed shuffle: {o} bytes of blobs in one batch exceed a binary column's 2 GiB"
                    ))
                })
            })
            .collect::<Result<_>>()?;
        Arc::new(BinaryArray::try_new(
            OffsetBuffer::new(ScalarBuffer::from(narrow)),
            values,
            None,
        )?)
    };
    let schema = Arc::new(Schema::new(vec![
        Field::new("k", DataType::Int32, false),
        Field::new("blob", blob.data_type().clone(), false),
    ]));
    Ok(RecordBatch::try_new(
        schema,
        vec![Arc::new(Int32Array::from(keys)), blob],
    )?)
}

#[cfg(test)]
mod tests {
    use arrow_array::cast::AsArray;
    use arrow_array::types::Int64Type;
    use arrow_array::{Array, Int64Array, StringArray};
    use arrow_ipc::reader::StreamReader;
    use arrow_schema::DataType as AT;

    use super::*;

    fn table(dir: &std::path::Path) -> FileStoreTable {
        crate::write::assign::tests::table(dir, "4")
    }

    fn batch(t: &FileStoreTable, from: i64, n: i64) -> RecordBatch {
        let ks: Vec<i64> = (from..from + n).collect();
        let vs = ks.iter().map(|k| format!("v{k}")).collect();
        rows(t, ks, vs)
    }

    /// Rows `(k % 3, k, v)` of the test table `(p, k, v)`.
    fn rows(t: &FileStoreTable, ks: Vec<i64>, vs: Vec<String>) -> RecordBatch {
        RecordBatch::try_new(
            Arc::new(Schema::new(vec![
                Field::new("p", AT::Int32, false),
                Field::new("k", AT::Int64, false),
                Field::new("v", AT::Utf8, true),
            ])),
            vec![
                Arc::new(Int32Array::from_iter_values(
                    ks.iter().map(|k| (k % 3) as i32),
                )),
                Arc::new(Int64Array::from(ks)),
                Arc::new(StringArray::from(vs)),
            ],
        )
        .map_err(|e| panic!("{e} ({})", t.name))
        .unwrap()
    }

    /// Every row comes out once, in the stream of its own key; a small `max_bytes` splits the
    /// output into batches, and each key is one stream per `finish`.
    #[test]
    fn every_row_lands_once_under_its_key() {
        let dir = tempfile::tempdir().unwrap();
        let t = table(dir.path());
        for compression in [None, Some("lz4"), Some("zstd")] {
            let mut p = Packer::new(ShuffleKeys::PartitionBucket, compression).unwrap();
            p.push(&t, &batch(&t, 0, 700)).unwrap();
            p.push(&t, &batch(&t, 700, 300)).unwrap();
            assert!(p.bytes() > 0);
            let out = p.finish(false, 1).unwrap();
            assert!(out.len() > 1 && out.iter().all(|b| b.num_rows() == 1));
            assert_eq!(p.bytes(), 0);
            let mut seen = vec![];
            let mut keys = vec![];
            for b in &out {
                let k = b
                    .column(0)
                    .as_primitive::<arrow_array::types::Int32Type>()
                    .value(0);
                keys.push(k);
                let blob = b.column(1).as_binary::<i32>().value(0);
                for rb in StreamReader::try_new(std::io::Cursor::new(blob), None).unwrap() {
                    let rb = rb.unwrap();
                    assert!(ShuffleKeys::PartitionBucket
                        .of(&t, &rb)
                        .unwrap()
                        .iter()
                        .all(|&x| x == k));
                    seen.extend(
                        rb.column(1)
                            .as_primitive::<Int64Type>()
                            .values()
                            .iter()
                            .copied(),
                    );
                }
            }
            keys.sort_unstable();
            keys.dedup();
            assert_eq!(keys.len(), out.len(), "one stream per key");
            seen.sort_unstable();
            assert_eq!(seen, (0..1000).collect::<Vec<i64>>());
        }
    }

    /// Each batch of a key's stream (one per input batch) is sorted by the primary key (`k`; `p`
    /// is the partition), equal keys in arrival order, however scrambled the input.
    #[test]
    fn each_streamed_batch_is_sorted_by_the_primary_key() {
        let dir = tempfile::tempdir().unwrap();
        let t = table(dir.path());
        let mut p = Packer::new(ShuffleKeys::PartitionBucket, Some("lz4")).unwrap();
        let mut arrival = 0usize;
        for part in 0..3i64 {
            // keys scrambled, each twice in a batch and again in the next batch
            let ks: Vec<i64> = (0..400i64).map(|i| (i * 7919 + part * 37) % 200).collect();
            let vs: Vec<String> = (0..ks.len())
                .map(|i| format!("{:06}", arrival + i))
                .collect();
            arrival += ks.len();
            let b = rows(&t, ks, vs);
            p.push(&t, &b).unwrap();
        }
        let out = p.finish(false, usize::MAX).unwrap();
        let mut rows = 0;
        for b in &out {
            for blob in b.column(1).as_binary::<i32>().iter().flatten() {
                let batches: Vec<RecordBatch> =
                    StreamReader::try_new(std::io::Cursor::new(blob), None)
                        .unwrap()
                        .map(|r| r.unwrap())
                        .collect();
                assert_eq!(batches.len(), 3, "one batch per input batch");
                for b in &batches {
                    let k = b.column(1).as_primitive::<Int64Type>();
                    let v = b.column(2).as_string::<i32>();
                    for i in 1..k.len() {
                        assert!(
                            (k.value(i - 1), v.value(i - 1)) < (k.value(i), v.value(i)),
                            "row {i}: by key, then arrival"
                        );
                    }
                    rows += k.len();
                }
            }
        }
        assert_eq!(rows, 1200);
    }

    /// A subset of rows sorted by key as the buffer's sort orders it, for the int fast path and
    /// the row-format path (strings, two columns); ties keep the given order.
    #[test]
    fn rows_sort_by_key_as_the_buffer_sorts() {
        let ints: ArrayRef = Arc::new(Int64Array::from(vec![5, 3, 9, 3, 1, 5, 0]));
        let strs: ArrayRef = Arc::new(StringArray::from(vec!["e", "c", "i", "c", "a", "e", "z"]));
        for cols in [vec![ints.clone()], vec![strs.clone()], vec![strs, ints]] {
            let mut rows = vec![0u32, 1, 2, 3, 4, 5];
            sort_rows_by_key(&cols, int_key(&cols).as_deref(), &mut rows).unwrap();
            assert_eq!(rows, vec![4, 1, 3, 0, 5, 2]);
        }
    }

    #[test]
    fn large_blobs_and_refusals() {
        let dir = tempfile::tempdir().unwrap();
        let t = table(dir.path());
        let mut p = Packer::new(ShuffleKeys::Identity(vec![10, 11, 12, 13]), None).unwrap();
        p.push(&t, &batch(&t, 0, 100)).unwrap();
        let out = p.finish(true, usize::MAX).unwrap();
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].column(1).data_type(), &AT::LargeBinary);
        let keys = out[0]
            .column(0)
            .as_primitive::<arrow_array::types::Int32Type>();
        assert!(keys.values().iter().all(|k| (10..14).contains(k)) && keys.len() <= 4);
        assert!(p.finish(false, usize::MAX).unwrap().is_empty());
        let err = Packer::new(ShuffleKeys::PartitionBucket, Some("snappy"))
            .err()
            .unwrap();
        assert!(err.to_string().contains("snappy"), "{err}");
        // a bucket the identity keys do not cover is an error, not a wrong task
        let mut short = Packer::new(ShuffleKeys::Identity(vec![0]), None).unwrap();
        assert!(short.push(&t, &batch(&t, 0, 100)).is_err());
    }
}
