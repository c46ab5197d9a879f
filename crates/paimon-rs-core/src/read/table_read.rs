//! Reading splits into Arrow batches with the table's (projected) schema.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int8Type;
use arrow_array::{new_null_array, ArrayRef, BooleanArray, RecordBatch};
use arrow_cast::cast;
use arrow_schema::{DataType as ArrowType, Field, Schema, SchemaRef};
use rayon::prelude::*;

use super::interval::interval_partition;
use super::split::Split;
use crate::error::{Error, Result};
use crate::io::parquet::read_all;
use crate::merge::{merge_sorted_runs, BatchIter, KvLayout, MergeEngine};
use crate::predicate::Predicate;
use crate::spec::types::DataType;
use crate::table::FileStoreTable;
use crate::write::input::is_retract;
use crate::write::table_write::{KEY_PREFIX, SEQUENCE_NUMBER, VALUE_KIND};

pub struct TableRead {
    table: FileStoreTable,
    /// Output columns (indices into the table fields).
    projection: Vec<usize>,
    filter: Option<Predicate>,
    /// Table columns that must be read (projection plus filter columns).
    needed: Vec<usize>,
    output_schema: SchemaRef,
    engine: MergeEngine,
}

impl TableRead {
    pub fn new(
        table: FileStoreTable,
        projection: Option<Vec<String>>,
        filter: Option<Predicate>,
    ) -> Result<Self> {
        let fields = &table.schema.fields;
        let projection: Vec<usize> = match projection {
            None => (0..fields.len()).collect(),
            Some(names) => names
                .iter()
                .map(|n| {
                    table.schema.field_index(n).ok_or_else(|| {
                        Error::schema(format!("projected column '{n}' is not in the table"))
                            .with_table(&table.name)
                    })
                })
                .collect::<Result<_>>()?,
        };
        let mut needed = projection.clone();
        let engine = if table.is_primary_key() {
            MergeEngine::from_table(&table)?
        } else {
            MergeEngine::Deduplicate
        };
        // columns the merge needs (sequence fields, sequence-group ordering fields)
        for name in engine.required_fields() {
            if let Some(i) = table.schema.field_index(&name) {
                if !needed.contains(&i) {
                    needed.push(i);
                }
            }
        }
        if let Some(f) = &filter {
            for name in f.fields() {
                let i = table.schema.field_index(&name).ok_or_else(|| {
                    Error::schema(format!("filter column '{name}' is not in the table"))
                        .with_table(&table.name)
                })?;
                if !needed.contains(&i) {
                    needed.push(i);
                }
            }
        }
        let output_schema = Arc::new(Schema::new(
            projection
                .iter()
                .map(|&i| {
                    let f = &fields[i];
                    Field::new(&f.name, f.data_type.to_arrow(), f.data_type.nullable)
                })
                .collect::<Vec<_>>(),
        ));
        Ok(TableRead {
            table,
            projection,
            filter,
            needed,
            output_schema,
            engine,
        })
    }

    pub fn output_schema(&self) -> SchemaRef {
        self.output_schema.clone()
    }

    /// Read several splits (in parallel), results in split order.
    pub fn read_splits(&self, splits: &[Split]) -> Result<Vec<RecordBatch>> {
        let parts: Vec<Result<Vec<RecordBatch>>> =
            splits.par_iter().map(|s| self.read_split(s)).collect();
        let mut out = vec![];
        for p in parts {
            out.extend(p?);
        }
        Ok(out)
    }

    pub fn read_split(&self, split: &Split) -> Result<Vec<RecordBatch>> {
        let name = self.table.name.clone();
        self.read_split_inner(split)
            .map_err(|e| e.with_table(&name))
    }

    fn read_split_inner(&self, split: &Split) -> Result<Vec<RecordBatch>> {
        let dir = self.table.path.join(&split.bucket_path);
        let fields = &self.table.schema.fields;
        let pk = self.table.is_primary_key();
        // (file column name, target arrow type, nullable-ok)
        let mut wanted: Vec<(String, ArrowType, bool)> = vec![];
        let key_names = self.table.trimmed_primary_keys();
        if pk {
            for k in &key_names {
                let f = self
                    .table
                    .schema
                    .field(k)
                    .ok_or_else(|| Error::Internal("key".into()))?;
                wanted.push((format!("{KEY_PREFIX}{k}"), f.data_type.to_arrow(), false));
            }
            wanted.push((SEQUENCE_NUMBER.into(), ArrowType::Int64, false));
            wanted.push((VALUE_KIND.into(), ArrowType::Int8, false));
        }
        let sys = wanted.len();
        for &i in &self.needed {
            wanted.push((fields[i].name.clone(), fields[i].data_type.to_arrow(), true));
        }
        let batches: Vec<Result<Vec<RecordBatch>>> = split
            .files
            .par_iter()
            .map(|f| {
                let path = match &f.external_path {
                    Some(p) => std::path::PathBuf::from(p.strip_prefix("file:").unwrap_or(p)),
                    None => dir.join(&f.file_name),
                };
                read_file(&path, &wanted)
            })
            .collect();
        let batches: Vec<Vec<RecordBatch>> = batches.into_iter().collect::<Result<_>>()?;
        if batches.is_empty() {
            return Ok(vec![]);
        }
        let layout = KvLayout {
            num_keys: key_names.len(),
        };
        let merged = if pk && !split.raw_convertible {
            // Merge each section of overlapping files; one run per sorted run of the section.
            let by_name: std::collections::HashMap<&str, usize> = split
                .files
                .iter()
                .enumerate()
                .map(|(i, f)| (f.file_name.as_str(), i))
                .collect();
            let key_types = self.table.schema.types_of(&key_names)?;
            let sections = interval_partition(split.files.clone(), &key_types)?;
            let mut slots: Vec<Option<Vec<RecordBatch>>> = batches.into_iter().map(Some).collect();
            let mut out: Vec<RecordBatch> = vec![];
            for runs in sections {
                let mut iters: Vec<BatchIter> = vec![];
                for run in runs {
                    let mut parts = vec![];
                    for f in run {
                        let i = by_name.get(f.file_name.as_str()).copied().ok_or_else(|| {
                            Error::Internal(format!("file {} not in split", f.file_name))
                        })?;
                        if let Some(bs) = slots[i].take() {
                            parts.extend(bs.into_iter().map(Ok));
                        }
                    }
                    iters.push(Box::new(parts.into_iter()));
                }
                for b in merge_sorted_runs(iters, layout, self.engine.clone(), true)? {
                    out.push(b?);
                }
            }
            out
        } else if pk {
            // DropDelete: a retraction in a file read raw means the key is absent.
            let mut out = Vec::with_capacity(batches.len());
            for m in batches.into_iter().flatten() {
                let kinds = m.column(layout.kind_col()).as_primitive::<Int8Type>();
                if kinds.values().iter().any(|&k| is_retract(k)) {
                    let keep: BooleanArray = kinds
                        .values()
                        .iter()
                        .map(|&k| Some(!is_retract(k)))
                        .collect();
                    out.push(arrow_select::filter::filter_record_batch(&m, &keep)?);
                } else {
                    out.push(m);
                }
            }
            out
        } else {
            batches.into_iter().flatten().collect()
        };
        merged
            .into_iter()
            .filter(|b| b.num_rows() > 0)
            .map(|b| self.finish_batch(&b, sys, &dir))
            .collect()
    }

    /// Table columns of a read batch (after `sys` system columns), value filter, projection.
    fn finish_batch(
        &self,
        merged: &RecordBatch,
        sys: usize,
        dir: &std::path::Path,
    ) -> Result<RecordBatch> {
        let fields = &self.table.schema.fields;
        // table columns only, named as the table's
        let values = RecordBatch::try_new(
            Arc::new(Schema::new(
                self.needed
                    .iter()
                    .map(|&i| {
                        let f = &fields[i];
                        Field::new(&f.name, f.data_type.to_arrow(), true)
                    })
                    .collect::<Vec<_>>(),
            )),
            merged.columns()[sys..].to_vec(),
        )?;
        let values = match &self.filter {
            None => values,
            Some(f) => {
                let type_of = |n: &str| -> Option<DataType> {
                    self.table.schema.field(n).map(|x| x.data_type.clone())
                };
                let mask = f.evaluate(&values, &type_of)?;
                arrow_select::filter::filter_record_batch(&values, &mask)?
            }
        };
        let cols: Vec<ArrayRef> = self
            .projection
            .iter()
            .map(|&i| {
                let pos = self.needed.iter().position(|&x| x == i).unwrap_or(0);
                values.column(pos).clone()
            })
            .collect();
        RecordBatch::try_new(self.output_schema.clone(), cols)
            .map_err(|e| Error::corrupt(dir, format!("data does not match the table schema: {e}")))
    }
}

/// Read the `wanted` columns of a file, converted to the wanted types; a missing value column
/// (added by a later schema) reads as nulls.
fn read_file(
    path: &std::path::Path,
    wanted: &[(String, ArrowType, bool)],
) -> Result<Vec<RecordBatch>> {
    let names: Vec<String> = wanted.iter().map(|w| w.0.clone()).collect();
    let batches = read_all(path, Some(&names))?;
    let schema = Arc::new(Schema::new(
        wanted
            .iter()
            .map(|(name, t, _)| Field::new(name, t.clone(), true))
            .collect::<Vec<_>>(),
    ));
    // Batches are kept as the reader returns them (no concatenation copy).
    let mut out = Vec::with_capacity(batches.len());
    for b in batches {
        let file_schema = b.schema();
        let rows = b.num_rows();
        let mut cols = Vec::with_capacity(wanted.len());
        for (name, t, nullable_ok) in wanted {
            let col: ArrayRef = match file_schema.index_of(name) {
                Ok(i) => {
                    let c = b.column(i).clone();
                    if c.data_type() == t {
                        c
                    } else {
                        cast(&c, t).map_err(|e| {
                            Error::corrupt(
                                path,
                                format!(
                                    "column '{name}' of type {} cannot be read as {t}: {e}",
                                    c.data_type()
                                ),
                            )
                        })?
                    }
                }
                Err(_) if *nullable_ok || rows == 0 => new_null_array(t, rows),
                Err(_) => return Err(Error::corrupt(path, format!("missing column '{name}'"))),
            };
            cols.push(col);
        }
        out.push(
            RecordBatch::try_new(schema.clone(), cols)
                .map_err(|e| Error::corrupt(path, e.to_string()))?,
        );
    }
    Ok(out)
}
