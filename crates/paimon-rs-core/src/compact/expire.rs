//! Record-level expiration during compaction (paimon-behaviour.md §11, Java's
//! `RecordLevelExpire`): `record-level.expire-time` and `record-level.time-field`. A record
//! read by a compaction rewrite is kept iff its time is null or `now ≤ time + expire`; a file
//! whose time-field minimum is expired is rewritten rather than upgraded.

use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, Int64Type};
use arrow_array::{Array, BooleanArray, Int64Array};
use arrow_schema::{DataType as ArrowType, TimeUnit};

use crate::error::{Error, Result};
use crate::merge::BatchIter;
use crate::options::parse_duration_ms;
use crate::spec::binary_row::deserialize_row;
use crate::spec::datum::Datum;
use crate::spec::manifest::DataFileMeta;
use crate::spec::types::TypeKind;
use crate::table::FileStoreTable;

#[derive(Debug, Clone)]
pub struct RecordExpire {
    expire_secs: i64,
    now_secs: i64,
    field: String,
    /// Index of the field among the table's columns.
    field_idx: usize,
    schema_id: i64,
    /// Types of the table's columns (to decode value stats of files of the current schema).
    types: Vec<crate::spec::types::DataType>,
    names: Vec<String>,
}

/// Seconds of a time-field value: INT seconds, BIGINT seconds or (≥ 10^12) milliseconds.
fn seconds_of_long(v: i64) -> i64 {
    if v >= 1_000_000_000_000 {
        v / 1000
    } else {
        v
    }
}

impl RecordExpire {
    /// From the table's options; None when `record-level.expire-time` is unset.
    pub fn from_table(table: &FileStoreTable) -> Result<Option<Self>> {
        let o = &table.options.raw;
        let Some(v) = o.get("record-level.expire-time") else {
            return Ok(None);
        };
        let expire_ms = parse_duration_ms("record-level.expire-time", v)?;
        let field = o.get("record-level.time-field").ok_or_else(|| {
            Error::invalid(
                "option 'record-level.expire-time' needs 'record-level.time-field' (the column \
                 holding each record's time)",
            )
        })?;
        let field_idx = table.schema.field_index(field).ok_or_else(|| {
            Error::invalid(format!(
                "option 'record-level.time-field' = '{field}' is not a column of the table"
            ))
        })?;
        match table.schema.fields[field_idx].data_type.kind {
            TypeKind::Int
            | TypeKind::BigInt
            | TypeKind::Timestamp(_)
            | TypeKind::LocalZonedTimestamp(_) => {}
            _ => {
                return Err(Error::invalid(format!(
                    "option 'record-level.time-field' = '{field}': the column must be INT, \
                     BIGINT, TIMESTAMP or TIMESTAMP WITH LOCAL TIME ZONE"
                )))
            }
        }
        Ok(Some(RecordExpire {
            expire_secs: (expire_ms / 1000) as i64,
            now_secs: chrono::Utc::now().timestamp(),
            field: field.clone(),
            field_idx,
            schema_id: table.schema.id,
            types: table
                .schema
                .fields
                .iter()
                .map(|f| f.data_type.clone())
                .collect(),
            names: table.schema.fields.iter().map(|f| f.name.clone()).collect(),
        }))
    }

    pub fn field_index(&self) -> usize {
        self.field_idx
    }

    fn seconds_of_datum(d: &Datum) -> Option<i64> {
        match d {
            Datum::Int(v) => Some(*v as i64),
            Datum::BigInt(v) => Some(seconds_of_long(*v)),
            Datum::Timestamp { millis, .. } => Some(millis.div_euclid(1000)),
            _ => None,
        }
    }

    /// Whether the file may hold expired records: its time-field minimum (value stats of a
    /// file of the current schema) is older than `now - expire`. Unknown stats: no.
    pub fn is_expire_file(&self, f: &DataFileMeta) -> bool {
        if f.schema_id != self.schema_id {
            return false;
        }
        let cols: Vec<usize> = match &f.value_stats_cols {
            None => (0..self.names.len()).collect(),
            Some(names) => names
                .iter()
                .filter_map(|n| self.names.iter().position(|x| x == n))
                .collect(),
        };
        let Some(pos) = cols.iter().position(|&c| c == self.field_idx) else {
            return false;
        };
        let types: Vec<_> = cols.iter().map(|&c| self.types[c].clone()).collect();
        let Ok(mins) = deserialize_row(&types, &f.value_stats.min_values) else {
            return false;
        };
        match mins.get(pos).cloned().flatten() {
            Some(d) => match Self::seconds_of_datum(&d) {
                Some(min) => self.now_secs - self.expire_secs > min,
                None => false,
            },
            None => false,
        }
    }

    /// Drop the expired records of a stream of KV batches whose column `col` is the time field.
    pub fn filter(&self, it: BatchIter, col: usize) -> BatchIter {
        let (now, expire, field) = (self.now_secs, self.expire_secs, self.field.clone());
        Box::new(it.map(move |b| {
            let b = b?;
            let c = b.column(col);
            let secs: Int64Array = match c.data_type() {
                ArrowType::Int32 => c
                    .as_primitive::<Int32Type>()
                    .iter()
                    .map(|v| v.map(|v| v as i64))
                    .collect(),
                ArrowType::Int64 => c
                    .as_primitive::<Int64Type>()
                    .iter()
                    .map(|v| v.map(seconds_of_long))
                    .collect(),
                ArrowType::Timestamp(unit, _) => {
                    let per_sec: i64 = match unit {
                        TimeUnit::Second => 1,
                        TimeUnit::Millisecond => 1_000,
                        TimeUnit::Microsecond => 1_000_000,
                        TimeUnit::Nanosecond => 1_000_000_000,
                    };
                    let raw = arrow_cast::cast(c, &ArrowType::Int64)?;
                    raw.as_primitive::<Int64Type>()
                        .iter()
                        .map(|v| v.map(|v| v.div_euclid(per_sec)))
                        .collect()
                }
                t => {
                    return Err(Error::Internal(format!(
                        "record-level.time-field '{field}' read as {t}"
                    )))
                }
            };
            let keep: BooleanArray = secs
                .iter()
                .map(|t| Some(t.is_none_or(|t| now <= t + expire)))
                .collect();
            if keep.true_count() == b.num_rows() {
                return Ok(b);
            }
            Ok(arrow_select::filter::filter_record_batch(&b, &keep)?)
        }))
    }
}
