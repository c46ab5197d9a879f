//! Clustering at write time (`clustering.columns` / `clustering.strategy`, with Java's fallback
//! keys `sink.clustering.by-columns` / `sink.clustering.strategy`; paimon-behaviour.md §16.2):
//! the rows one commit writes into a partition of a bucket-unaware append table are sorted by
//! the clustering curve (the sorts of sort compaction, compact/sort_compact.rs) before the
//! rolling writer cuts them into files, so the files of a write cover narrow, mostly disjoint
//! ranges of the clustering key without a later sort compaction.
//!
//! Java's Flink sink does this with a sampled range shuffle to the sink tasks, each of which
//! sorts its share (`sink.clustering.sort-in-cluster`). A paimon_rs write has one writer per
//! partition, so it sorts the partition's rows whole: there is no range shuffle to sample for
//! (`sink.clustering.sample-factor` is validated as Java validates it and otherwise unused),
//! and an unsorted range partitioning (`sort-in-cluster = false`) is refused. On Spark each
//! task sorts the rows it writes.
//!
//! The sort is the write buffer's external sort ([`SortBuffer`]): the rows are buffered under
//! `write-buffer-size`, spilled as sorted runs when the budget runs out and merged at commit.
//! The sort key is one non-null binary column computed per written batch (the curve key of
//! `zorder` / `hilbert`, the row encoding of the order columns for `order`, whose nulls the
//! merge of sorted runs could not order) and dropped before the rows reach the files.
//!
//! Java skips clustering with a warning on tables it does not support (primary-key tables,
//! bucketed append tables, streaming writes); paimon_rs refuses such a write instead of
//! silently ignoring the option.

use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType as ArrowType, Field, Schema, SchemaRef};

use super::buffer::{merge_fan_in, merge_footprint};
use super::buffer::{MemoryCounter, SharedInput, SortBuffer};
use crate::compact::sort_compact::SortSpec;
use crate::error::{Error, Result};
use crate::merge::{merge_sorted_runs, BatchIter, KvLayout, MergeEngine};
use crate::sort::Spiller;
use crate::table::FileStoreTable;

/// Java's `CoreOptions.CLUSTERING_COLUMNS` and its fallback key.
const COLUMNS_KEYS: [&str; 2] = ["clustering.columns", "sink.clustering.by-columns"];
/// Java's `CoreOptions.CLUSTERING_STRATEGY` and its fallback key.
const STRATEGY_KEYS: [&str; 2] = ["clustering.strategy", "sink.clustering.strategy"];
const SORT_IN_CLUSTER: &str = "sink.clustering.sort-in-cluster";
const SAMPLE_FACTOR: &str = "sink.clustering.sample-factor";
/// Java's `FlinkConnectorOptions.MIN_CLUSTERING_SAMPLE_FACTOR`.
const MIN_SAMPLE_FACTOR: i64 = 20;

/// Java's `CoreOptions.clusteringStrategy(strategy, columnSize)`: `auto` is `order` for one
/// column, `zorder` for fewer than five, `hilbert` otherwise.
pub(crate) fn resolve_strategy(strategy: &str, columns: usize) -> &str {
    if strategy.trim() == "auto" {
        match columns {
            1 => "order",
            2..=4 => "zorder",
            _ => "hilbert",
        }
    } else {
        strategy
    }
}

/// A table's write-time clustering: the sort and how its key sits in the buffered rows.
#[derive(Debug)]
pub(crate) struct ClusterSpec {
    sort: SortSpec,
}

impl ClusterSpec {
    /// The clustering `table`'s options ask for, None if `clustering.columns` is unset or empty.
    /// Refused: tables that are not bucket-unaware append tables, unknown columns, a sample
    /// factor below Java's minimum, `sort-in-cluster = false`, strategies and column types the
    /// sorts refuse.
    pub fn from_table(table: &FileStoreTable) -> Result<Option<Arc<Self>>> {
        let raw = &table.options.raw;
        let first =
            |keys: [&'static str; 2]| keys.into_iter().find_map(|k| raw.get(k).map(|v| (k, v)));
        let Some((key, value)) = first(COLUMNS_KEYS) else {
            return Ok(None);
        };
        // Java's CoreOptions.clusteringColumns
        let columns: Vec<String> = if value.is_empty() {
            vec![]
        } else {
            value.split(',').map(|c| c.trim().to_string()).collect()
        };
        if columns.is_empty() {
            return Ok(None);
        }
        if table.is_primary_key() || table.options.bucket != -1 {
            return Err(Error::unsupported(format!(
                "option '{key}' = '{value}': clustering at write time only supports the bucket \
                 unaware table without primary keys (this table is {} with bucket = {}); Java's \
                 sink skips it with a warning, paimon_rs refuses rather than ignore the option",
                if table.is_primary_key() {
                    "a primary-key table"
                } else {
                    "an append table"
                },
                table.options.bucket
            )));
        }
        let names: Vec<&str> = table
            .schema
            .fields
            .iter()
            .map(|f| f.name.as_str())
            .collect();
        if let Some(c) = columns.iter().find(|c| !names.contains(&c.as_str())) {
            return Err(Error::invalid(format!(
                "option '{key}' = '{value}': Field names [{}] should contains all clustering \
                 column names [{}]. ('{c}' is not a column)",
                names.join(", "),
                columns.join(", ")
            )));
        }
        if let Some(v) = raw.get(SAMPLE_FACTOR) {
            match v.trim().parse::<i64>() {
                Ok(f) if f >= MIN_SAMPLE_FACTOR => {}
                Ok(_) => {
                    return Err(Error::invalid(format!(
                        "option '{SAMPLE_FACTOR}' = '{v}': The minimum allowed {SAMPLE_FACTOR} \
                         is {MIN_SAMPLE_FACTOR}."
                    )))
                }
                Err(_) => {
                    return Err(Error::invalid(format!(
                        "option '{SAMPLE_FACTOR}' = '{v}': expected an integer"
                    )))
                }
            }
        }
        if let Some(v) = raw.get(SORT_IN_CLUSTER) {
            if !crate::options::parse_bool(SORT_IN_CLUSTER, v)? {
                return Err(Error::unsupported(format!(
                    "option '{SORT_IN_CLUSTER}' = '{v}': paimon_rs clusters a write by sorting \
                     each partition's rows whole (there is no range shuffle to sink tasks), so it \
                     cannot leave them unsorted"
                )));
            }
        }
        let strategy = first(STRATEGY_KEYS).map_or("auto", |(_, v)| v.as_str());
        let resolved = resolve_strategy(strategy, columns.len());
        let sort = SortSpec::new(table, resolved, &columns).map_err(|e| {
            Error::invalid(format!(
                "clustering ('{}' = '{value}', strategy '{strategy}'): {e}",
                key
            ))
        })?;
        Ok(Some(Arc::new(ClusterSpec { sort })))
    }

    /// The sort's name and columns, for logs.
    pub fn describe(&self) -> String {
        format!(
            "{} by {:?}",
            self.sort.strategy.name(),
            self.sort.column_names()
        )
    }
}

/// The rows of one append bucket's commit, sorted by the clustering key on their way out:
/// a [`SortBuffer`] over the table's rows plus the sort key column, keyed by that column.
pub(crate) struct ClusterBuffer {
    spec: Arc<ClusterSpec>,
    counter: MemoryCounter,
    /// Created with the first rows (the curve key's width is known then).
    buffer: Option<SortBuffer>,
    /// The table's row schema (the rows handed to the file writer).
    row_schema: Option<SchemaRef>,
    /// Sequence number of the next buffered row (ties keep arrival order).
    next_seq: i64,
}

impl ClusterBuffer {
    pub fn new(spec: Arc<ClusterSpec>) -> Self {
        ClusterBuffer {
            spec,
            counter: MemoryCounter::default(),
            buffer: None,
            row_schema: None,
            next_seq: 0,
        }
    }

    pub fn spec(&self) -> &ClusterSpec {
        &self.spec
    }

    /// Buffer `rows` (a batch of the table's rows, owned by this bucket).
    pub fn put(&mut self, rows: RecordBatch) -> Result<()> {
        if rows.num_rows() == 0 {
            return Ok(());
        }
        let batch = with_column(&rows, self.spec.sort.key_column(&rows)?)?;
        if self.buffer.is_none() {
            let key_idx = vec![rows.num_columns()];
            let mut fields: Vec<Field> = key_idx
                .iter()
                .map(|&i| {
                    let f = batch.schema_ref().field(i).clone();
                    Field::new(format!("_KEY_{}", f.name()), f.data_type().clone(), true)
                })
                .collect();
            fields.push(Field::new("_SEQUENCE_NUMBER", ArrowType::Int64, false));
            fields.push(Field::new("_VALUE_KIND", ArrowType::Int8, false));
            fields.extend(
                batch
                    .schema_ref()
                    .fields()
                    .iter()
                    .map(|f| f.as_ref().clone()),
            );
            self.buffer = Some(SortBuffer::new(
                Arc::new(Schema::new(fields)),
                KvLayout { num_keys: 1 },
                key_idx,
                self.counter.clone(),
            ));
            self.row_schema = Some(rows.schema());
        }
        let n = batch.num_rows();
        let input = Arc::new(SharedInput::new(batch, None, &self.counter));
        if let Some(buf) = &mut self.buffer {
            buf.put(&input, None, self.next_seq);
        }
        self.next_seq += n as i64;
        Ok(())
    }

    pub fn memory_size(&self) -> usize {
        self.counter.get()
    }

    pub fn buffered_rows(&self) -> usize {
        self.buffer.as_ref().map_or(0, |b| b.in_memory_rows())
    }

    pub fn spill_count(&self) -> usize {
        self.buffer.as_ref().map_or(0, |b| b.spill_count())
    }

    pub fn spill_estimate(&self) -> Option<u64> {
        self.buffer
            .as_ref()
            .filter(|b| b.in_memory_rows() > 0)
            .map(|b| b.spill_estimate())
    }

    /// Sort the in-memory rows and spill them as a run.
    pub fn spill(&mut self, spiller: &Spiller) -> Result<()> {
        match &mut self.buffer {
            Some(b) => b.spill(spiller),
            None => Ok(()),
        }
    }

    pub fn merge_footprint(&self, budget: usize) -> usize {
        self.buffer
            .as_ref()
            .map_or(0, |b| merge_footprint(b, budget))
    }

    /// Everything buffered (spilled runs and in-memory rows) merged in clustering order, as
    /// batches of the table's rows, emptying the buffer; with the spill bytes to release once
    /// the stream is consumed. None if nothing is buffered.
    pub fn take_sorted(
        &mut self,
        spiller: &Spiller,
        budget: usize,
    ) -> Result<Option<(BatchIter, u64)>> {
        let (Some(buf), Some(row_schema)) = (&mut self.buffer, &self.row_schema) else {
            return Ok(None);
        };
        if buf.is_empty() {
            return Ok(None);
        }
        let fan_in = merge_fan_in(buf, budget);
        let (mut runs, spill_bytes) = buf.take_runs(spiller, fan_in)?;
        let layout = KvLayout { num_keys: 1 };
        // one run (nothing spilled) is in order already: no merge
        let merged = match runs.len() {
            1 => runs.remove(0),
            _ => merge_sorted_runs(runs, layout, MergeEngine::KeepAll, false)?,
        };
        let schema = row_schema.clone();
        let from = layout.value_offset();
        let rows = merged.map(move |b| {
            let b = b?;
            let cols = b.columns()[from..from + schema.fields().len()].to_vec();
            RecordBatch::try_new(schema.clone(), cols).map_err(|e| Error::Arrow {
                context: Some("clustering: sorted rows".into()),
                source: e,
            })
        });
        Ok(Some((Box::new(rows), spill_bytes)))
    }
}

/// `batch` with `column` appended (the sort key, named so that it cannot clash with a
/// table column's name in the buffer's schema).
fn with_column(batch: &RecordBatch, column: ArrayRef) -> Result<RecordBatch> {
    let mut fields: Vec<Field> = batch
        .schema_ref()
        .fields()
        .iter()
        .map(|f| f.as_ref().clone())
        .collect();
    fields.push(Field::new(
        "_CLUSTER_KEY",
        column.data_type().clone(),
        false,
    ));
    let mut cols = batch.columns().to_vec();
    cols.push(column);
    Ok(RecordBatch::try_new(Arc::new(Schema::new(fields)), cols)?)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use arrow_array::{Array, Int64Array};

    use super::*;
    use crate::sort::SpillOptions;
    use crate::table::catalog::FileSystemCatalog;
    use crate::table::new_schema::NewTableSchema;

    fn table(dir: &std::path::Path, options: &[(&str, &str)], pk: bool) -> FileStoreTable {
        let cat = FileSystemCatalog::new(dir).unwrap();
        cat.create_database("db", true).unwrap();
        let schema = Schema::new(vec![
            Field::new("x", ArrowType::Int64, false),
            Field::new("y", ArrowType::Int64, true),
        ]);
        let opts: BTreeMap<String, String> = options
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let keys = if pk { vec!["x".to_string()] } else { vec![] };
        let s = NewTableSchema::from_arrow(&schema, vec![], keys, opts, None).unwrap();
        cat.create_table("db.t", s, false).unwrap();
        cat.get_table("db.t").unwrap()
    }

    fn batch(xs: Vec<i64>) -> RecordBatch {
        let ys: Vec<Option<i64>> = xs
            .iter()
            .map(|x| (x % 5 != 0).then_some((x * 7919) % 101))
            .collect();
        RecordBatch::try_new(
            Arc::new(Schema::new(vec![
                Field::new("x", ArrowType::Int64, false),
                Field::new("y", ArrowType::Int64, true),
            ])),
            vec![
                Arc::new(Int64Array::from(xs)),
                Arc::new(Int64Array::from(ys)),
            ],
        )
        .unwrap()
    }

    /// Rows put in batches, some spilled as runs, come out as one stream in curve order,
    /// every row once, without the curve key column.
    #[test]
    fn spilled_and_buffered_rows_merge_in_curve_order() {
        let dir = tempfile::tempdir().unwrap();
        for (strategy, cols) in [("zorder", "x,y"), ("order", "y"), ("hilbert", "y,x")] {
            let sub = dir.path().join(strategy);
            let t = table(
                &sub,
                &[
                    ("bucket", "-1"),
                    ("clustering.columns", cols),
                    ("clustering.strategy", strategy),
                ],
                false,
            );
            let spec = ClusterSpec::from_table(&t).unwrap().unwrap();
            let spiller = Spiller::new(SpillOptions::from_options(&t.options));
            let mut buf = ClusterBuffer::new(spec.clone());
            let mut all = vec![];
            for i in 0..5i64 {
                let xs: Vec<i64> = (0..300).map(|j| (j * 37 + i * 11) % 1000).collect();
                all.extend(xs.clone());
                buf.put(batch(xs)).unwrap();
                if i % 2 == 0 {
                    buf.spill(&spiller).unwrap();
                }
            }
            assert_eq!(buf.spill_count(), 3);
            let (rows, bytes) = buf.take_sorted(&spiller, 1 << 20).unwrap().unwrap();
            let out: Vec<RecordBatch> = rows.collect::<Result<_>>().unwrap();
            spiller.release(bytes);
            let merged = arrow_select::concat::concat_batches(&out[0].schema(), &out).unwrap();
            assert_eq!(merged.num_columns(), 2, "{strategy}");
            let mut got: Vec<i64> = merged
                .column(0)
                .as_any()
                .downcast_ref::<Int64Array>()
                .unwrap()
                .values()
                .to_vec();
            // in curve order: the sort of the whole gives the same keys in the same order
            let whole = spec.sort.sort_batch(&merged).unwrap();
            let keys = |b: &RecordBatch| spec.sort.index_bytes(b).unwrap();
            assert_eq!(keys(&merged), keys(&whole), "{strategy}");
            got.sort_unstable();
            all.sort_unstable();
            assert_eq!(got, all, "{strategy}");
            assert!(buf.take_sorted(&spiller, 1 << 20).unwrap().is_none());
            assert_eq!(
                merged.column(1).null_count(),
                all.iter().filter(|x| *x % 5 == 0).count()
            );
        }
    }

    #[test]
    fn tables_java_skips_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let pk = table(
            &dir.path().join("pk"),
            &[("bucket", "2"), ("clustering.columns", "y")],
            true,
        );
        let e = ClusterSpec::from_table(&pk).unwrap_err();
        assert!(matches!(e, Error::Unsupported { .. }), "{e}");
        let none = table(&dir.path().join("none"), &[("bucket", "-1")], false);
        assert!(ClusterSpec::from_table(&none).unwrap().is_none());
    }

    #[test]
    fn auto_picks_the_strategy_as_java_does() {
        assert_eq!(resolve_strategy("auto", 1), "order");
        assert_eq!(resolve_strategy("auto", 2), "zorder");
        assert_eq!(resolve_strategy("auto", 4), "zorder");
        assert_eq!(resolve_strategy("auto", 5), "hilbert");
        assert_eq!(resolve_strategy("hilbert", 2), "hilbert");
    }
}
