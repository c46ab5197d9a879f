//! Merge engines (paimon-behaviour.md §8): their configuration, parsed and validated from the
//! table options, and the per-key merge functions. The sort-merge reader hands every group of
//! records with one key (oldest first) to [`Bound::finish`]; a lone record passes through
//! untouched (the reducer rule, §8.1).

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use arrow_array::{new_null_array, Array, ArrayRef, Int64Array, Int8Array, RecordBatch};
use arrow_schema::SchemaRef;

use super::agg::{AggFunc, AggState, Cell, CellReader, FieldAgg};
use super::source::{Rec, Source};
use super::KvLayout;
use crate::error::{Error, Result};
use crate::options::{CoreOptions, MergeEngineKind};
use crate::spec::binary_row::{datum_from_arrow, datums_to_arrow};
use crate::spec::datum::{compare_nullable, Datum};
use crate::spec::row_kind::{is_retract_byte as is_retract, RowKind};
use crate::spec::schema::TableSchema;
use crate::spec::types::DataType;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EngineKind {
    Deduplicate,
    /// No merging: every record is kept, in (key, sequence) order. Used to pre-merge spilled
    /// runs of the external sort (the real merge function runs once, at flush).
    KeepAll,
    PartialUpdate,
    Aggregation,
    FirstRow,
}

/// A partial-update sequence group: ordering fields guarding protected fields.
#[derive(Debug, Clone, PartialEq)]
pub struct SeqGroup {
    pub ordering: Vec<String>,
    pub protected: Vec<String>,
    /// Listed in `partial-update.remove-record-on-sequence-group`.
    pub remove_on_delete: bool,
}

/// Everything the merge functions need from the table options, validated.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct EngineConfig {
    pub table: String,
    /// Table fields (name, type), schema order.
    pub fields: Vec<(String, DataType)>,
    pub primary_keys: Vec<String>,
    /// `sequence.field` and `sequence.field.sort-order = descending`.
    pub seq_fields: Vec<String>,
    pub seq_descending: bool,
    pub ignore_delete: bool,
    /// `partial-update.remove-record-on-delete` / `aggregation.remove-record-on-delete`.
    pub remove_record_on_delete: bool,
    pub groups: Vec<SeqGroup>,
    /// Aggregator of each non-key field that has one (aggregation: every value field).
    pub aggs: BTreeMap<String, FieldAgg>,
}

/// The table's merge engine, applied to groups of equal keys. Cheap to clone, `Send`.
#[derive(Debug, Clone)]
pub struct MergeEngine {
    pub kind: EngineKind,
    pub config: Option<Arc<EngineConfig>>,
}

#[allow(non_upper_case_globals)]
impl MergeEngine {
    /// Deduplicate without options: the record with the highest sequence number wins (a -D/-U
    /// winner shadows older data).
    pub const Deduplicate: MergeEngine = MergeEngine {
        kind: EngineKind::Deduplicate,
        config: None,
    };
    /// Keep every record, ordered by (key, sequence).
    pub const KeepAll: MergeEngine = MergeEngine {
        kind: EngineKind::KeepAll,
        config: None,
    };

    /// Deduplicate without `sequence.field` and without ignore-delete: the newest record of a
    /// key (by sequence number) is the result, so a caller may pick it while sorting.
    pub fn is_plain_deduplicate(&self) -> bool {
        self.kind == EngineKind::Deduplicate
            && self
                .config
                .as_ref()
                .is_none_or(|c| c.seq_fields.is_empty() && !c.ignore_delete)
    }

    /// The merge engine of a table with this schema and these (parsed) options: its
    /// `merge-engine` and the options of that engine, validated against the schema's columns.
    /// `table_name` names the table in errors.
    pub fn new(
        table_name: &str,
        schema: &TableSchema,
        options: &CoreOptions,
    ) -> Result<MergeEngine> {
        parse(table_name, schema, options).map_err(|e| e.with_table(table_name))
    }

    /// Value columns the merge needs besides the ones a reader projects: the sequence fields
    /// and the ordering fields of sequence groups. A reader of a projection must read these too
    /// (then drop them from its output).
    pub fn required_fields(&self) -> Vec<String> {
        let Some(c) = &self.config else {
            return vec![];
        };
        let mut out: Vec<String> = c.seq_fields.clone();
        for g in &c.groups {
            for f in &g.ordering {
                if !out.contains(f) {
                    out.push(f.clone());
                }
            }
        }
        out
    }

    /// Pick the output record of each group of a sorted buffer (`sorted`, group g =
    /// `sorted[bounds[g]..bounds[g+1]]`). Returns indices into the input, in key order.
    /// Only meaningful for `Deduplicate` (last per key) and `KeepAll` (everything); other
    /// engines compute values and must go through [`super::merge_sorted_runs`].
    pub fn merge(&self, sorted: &[u32], bounds: &[usize]) -> Vec<u32> {
        match self.kind {
            EngineKind::KeepAll => sorted.to_vec(),
            _ => bounds[1..].iter().map(|&end| sorted[end - 1]).collect(),
        }
    }

    pub(crate) fn bind(&self, schema: &SchemaRef, layout: KvLayout) -> Result<Bound> {
        let default_cfg = EngineConfig::default();
        let cfg = self.config.as_deref().unwrap_or(&default_cfg);
        let names: Vec<String> = schema.fields()[layout.value_offset()..]
            .iter()
            .map(|f| f.name().clone())
            .collect();
        let missing = |f: &str| {
            Error::Internal(format!(
                "merge of table '{}' needs column '{f}' in the read (MergeEngine::required_fields)",
                cfg.table
            ))
        };
        let col_of = |f: &str| names.iter().position(|n| n == f);
        let type_of = |f: &str| {
            cfg.fields
                .iter()
                .find(|(n, _)| n == f)
                .map(|(_, t)| t.clone())
        };
        let mut seq_cols = vec![];
        if self.kind != EngineKind::FirstRow {
            for f in &cfg.seq_fields {
                let c = col_of(f).ok_or_else(|| missing(f))?;
                seq_cols.push((
                    layout.value_offset() + c,
                    type_of(f).ok_or_else(|| missing(f))?,
                ));
            }
        }
        let mut cols = vec![];
        for n in &names {
            // a column the table does not know (should not happen) merges as last non-null
            let t = type_of(n).unwrap_or_else(|| DataType::new(crate::spec::types::TypeKind::Int));
            let is_pk = cfg.primary_keys.contains(n);
            let agg = if self.kind == EngineKind::Aggregation {
                Some(if is_pk {
                    pk_agg(n)
                } else if cfg.seq_fields.contains(n) {
                    FieldAgg {
                        field: n.clone(),
                        func: AggFunc::LastValue,
                        ignore_retract: false,
                        delimiter: ",".into(),
                        distinct: false,
                    }
                } else {
                    cfg.aggs.get(n).cloned().unwrap_or_else(|| FieldAgg {
                        field: n.clone(),
                        func: AggFunc::LastNonNullValue,
                        ignore_retract: false,
                        delimiter: ",".into(),
                        distinct: false,
                    })
                })
            } else {
                cfg.aggs.get(n).cloned()
            };
            let group = cfg
                .groups
                .iter()
                .position(|g| g.ordering.contains(n) || g.protected.contains(n));
            cols.push(ColSpec {
                dtype: t,
                agg,
                group,
            });
        }
        let mut groups = vec![];
        for g in &cfg.groups {
            let used = g
                .protected
                .iter()
                .chain(g.ordering.iter())
                .any(|f| col_of(f).is_some());
            let mut ordering = vec![];
            for f in &g.ordering {
                match col_of(f) {
                    Some(c) => ordering.push(c),
                    None if used => return Err(missing(f)),
                    None => {}
                }
            }
            groups.push(BoundGroup {
                ordering,
                remove_on_delete: g.remove_on_delete,
            });
        }
        let num_values = names.len();
        Ok(Bound {
            func: Some(merge_function(self.kind)),
            values_computed: matches!(
                self.kind,
                EngineKind::PartialUpdate | EngineKind::Aggregation
            ),
            kind: self.kind,
            table: cfg.table.clone(),
            layout,
            ignore_delete: cfg.ignore_delete,
            remove_record_on_delete: cfg.remove_record_on_delete,
            seq_cols,
            seq_desc: cfg.seq_descending,
            cols,
            groups,
            out: Out::default(),
            num_values,
            names,
            run_levels: None,
            sees_all: false,
            changelog: Out::default(),
        })
    }
}

/// Java's PartialUpdateMergeFunction refusing a retraction (its words, so a search finds
/// Paimon's documentation).
const PARTIAL_UPDATE_DELETE: &str = "By default, Partial update can not accept delete records, \
     you can choose one of the following solutions:\n\
     1. Configure 'ignore-delete' to ignore delete records.\n\
     2. Configure 'partial-update.remove-record-on-delete' to remove the whole row when receiving \
     delete records.\n\
     3. Configure 'sequence-group's to retract partial columns. Also configure \
     'partial-update.remove-record-on-sequence-group' to remove the whole row when receiving \
     deleted records of `specified sequence group`.";

fn pk_agg(n: &str) -> FieldAgg {
    FieldAgg {
        field: n.to_string(),
        func: AggFunc::PrimaryKey,
        ignore_retract: false,
        delimiter: ",".into(),
        distinct: false,
    }
}

fn parse_bool(key: &str, v: &str) -> Result<bool> {
    match v.trim().to_ascii_lowercase().as_str() {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(Error::invalid(format!(
            "Could not parse value '{v}' for key '{key}'. (expected true or false)"
        ))),
    }
}

fn split_list(v: &str) -> Vec<String> {
    v.split(',')
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

fn parse(table_name: &str, schema: &TableSchema, options: &CoreOptions) -> Result<MergeEngine> {
    let raw = &options.raw;
    let get = |k: &str| raw.get(k).map(String::as_str);
    let kind = match options.merge_engine {
        MergeEngineKind::Deduplicate => EngineKind::Deduplicate,
        MergeEngineKind::PartialUpdate => EngineKind::PartialUpdate,
        MergeEngineKind::Aggregation => EngineKind::Aggregation,
        MergeEngineKind::FirstRow => EngineKind::FirstRow,
    };
    let fields: Vec<(String, DataType)> = schema
        .fields
        .iter()
        .map(|f| (f.name.clone(), f.data_type.clone()))
        .collect();
    let exists = |f: &str| fields.iter().any(|(n, _)| n == f);
    let pks = schema.primary_keys.clone();
    // parsed once, with the options (`ignore-delete` or the engine's fallback key)
    let ignore_delete = options.ignore_delete;
    let seq_fields = get("sequence.field").map(split_list).unwrap_or_default();
    let mut seen = BTreeSet::new();
    for f in &seq_fields {
        if !exists(f) {
            return Err(Error::invalid(format!(
                "option 'sequence.field': Sequence field: '{f}' can not be found in table schema."
            )));
        }
        if !seen.insert(f.clone()) {
            return Err(Error::invalid(format!(
                "option 'sequence.field': Sequence field '{f}' is defined repeatedly."
            )));
        }
    }
    if !seq_fields.is_empty() && kind == EngineKind::FirstRow {
        return Err(Error::invalid(
            "option 'sequence.field': Do not support use sequence field on FIRST_ROW merge engine.",
        ));
    }
    let seq_descending = match get("sequence.field.sort-order") {
        None => false,
        Some(v) => match v.trim().to_ascii_lowercase().as_str() {
            "ascending" => false,
            "descending" => true,
            _ => {
                return Err(Error::invalid(format!(
                    "option 'sequence.field.sort-order' = '{v}': expected ascending or descending"
                )))
            }
        },
    };
    // fields.<f>.<suffix> options
    let mut groups: Vec<SeqGroup> = vec![];
    let mut field_opts: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    let mut default_agg: Option<AggFunc> = None;
    for (k, v) in raw {
        let Some(rest) = k.strip_prefix("fields.") else {
            continue;
        };
        if rest == "default-aggregate-function" {
            default_agg = Some(AggFunc::parse(k, v)?);
            continue;
        }
        let Some((f, suffix)) = rest.rsplit_once('.') else {
            return Err(Error::invalid(format!(
                "option '{k}': unknown field option"
            )));
        };
        let suffix = match suffix {
            // `fields.<f>.aggregate-function` (dots inside a suffix)
            "aggregate-function"
            | "ignore-retract"
            | "list-agg-delimiter"
            | "distinct"
            | "sequence-group"
            | "nested-key"
            | "nested-sequence-field"
            | "count-limit"
            | "nested-key-null-strategy"
            | "ts-field" => suffix,
            _ => {
                return Err(Error::unsupported(format!(
                    "option '{k}' is not implemented by paimon_rs"
                )))
            }
        };
        if suffix == "sequence-group" {
            let ordering = split_list(f);
            let protected = split_list(v);
            for x in ordering.iter().chain(protected.iter()) {
                if !exists(x) {
                    return Err(Error::invalid(format!(
                        "option '{k}': Field {x} can not be found in table schema."
                    )));
                }
                if pks.contains(x) {
                    return Err(Error::invalid(format!(
                        "option '{k}': The sequence-group '{k}' contains primary key field \
                         '{x}', which is not allowed. Primary key columns cannot be put in \
                         sequence-group."
                    )));
                }
                if groups
                    .iter()
                    .any(|g| g.ordering.contains(x) || g.protected.contains(x))
                {
                    return Err(Error::invalid(format!(
                        "option '{k}': Field {x} is defined repeatedly by multiple groups: {k}"
                    )));
                }
            }
            groups.push(SeqGroup {
                ordering,
                protected,
                remove_on_delete: false,
            });
            continue;
        }
        if !exists(f) {
            return Err(Error::invalid(format!(
                "option '{k}': Field {f} can not be found in table schema."
            )));
        }
        field_opts
            .entry(f.to_string())
            .or_default()
            .insert(suffix.to_string(), v.clone());
    }
    if kind != EngineKind::PartialUpdate {
        groups.clear(); // as Java: only partial-update reads sequence groups, others ignore them
    }
    let rrod_key = match kind {
        EngineKind::Aggregation => "aggregation.remove-record-on-delete",
        _ => "partial-update.remove-record-on-delete",
    };
    let remove_record_on_delete = match get(rrod_key) {
        Some(v) => parse_bool(rrod_key, v)?,
        None => false,
    };
    if let Some(v) = get("partial-update.remove-record-on-sequence-group") {
        for f in split_list(v) {
            let g = groups
                .iter_mut()
                .find(|g| g.ordering.contains(&f))
                .ok_or_else(|| {
                    Error::invalid(format!(
                        "option 'partial-update.remove-record-on-sequence-group': field '{v}' \
                         defined in 'partial-update.remove-record-on-sequence-group' option \
                         must be part of sequence groups ('{f}' is not an ordering field of one)"
                    ))
                })?;
            g.remove_on_delete = true;
        }
        if ignore_delete {
            return Err(Error::invalid(
                "ignore-delete and partial-update.remove-record-on-sequence-group have \
                 conflicting behavior so should not be enabled at the same time.",
            ));
        }
    }
    if kind == EngineKind::PartialUpdate && remove_record_on_delete {
        if !groups.is_empty() {
            return Err(Error::invalid(
                "sequence-group and partial-update.remove-record-on-delete have conflicting \
                 behavior so should not be enabled at the same time.",
            ));
        }
        if ignore_delete {
            return Err(Error::invalid(
                "ignore-delete and partial-update.remove-record-on-delete have conflicting \
                 behavior so should not be enabled at the same time.",
            ));
        }
    }
    let ordering_fields: BTreeSet<&String> = groups.iter().flat_map(|g| &g.ordering).collect();
    let protected_fields: BTreeSet<&String> = groups.iter().flat_map(|g| &g.protected).collect();
    let mut aggs = BTreeMap::new();
    let uses_aggs = matches!(kind, EngineKind::PartialUpdate | EngineKind::Aggregation);
    for (name, dtype) in &fields {
        let opts = field_opts.get(name);
        let opt = |s: &str| opts.and_then(|o| o.get(s)).map(String::as_str);
        let opt_owned = |s: &str| opt(s).map(str::to_string);
        let key = format!("fields.{name}.aggregate-function");
        if seq_fields.contains(name) && opt("aggregate-function").is_some() {
            return Err(Error::invalid(format!(
                "option '{key}': Should not define aggregation on sequence field: '{name}'."
            )));
        }
        // As Java: deduplicate and first-row have no aggregators, and the primary-key fields
        // and the ordering fields of sequence groups are never aggregated, whatever is
        // configured for them (Java's getAggFuncName).
        if !uses_aggs
            || pks.contains(name)
            || ordering_fields.contains(name)
            || seq_fields.contains(name)
        {
            continue;
        }
        let func = match opt("aggregate-function") {
            Some(v) => Some(AggFunc::parse(&key, v)?),
            None => None,
        };
        let func = match func.or_else(|| default_agg.clone()) {
            Some(f) => f.configure(name, dtype, &opt_owned)?,
            None if kind == EngineKind::Aggregation => AggFunc::LastNonNullValue,
            None => continue,
        };
        if kind == EngineKind::PartialUpdate
            && func != AggFunc::LastNonNullValue
            && !protected_fields.contains(name)
        {
            return Err(Error::invalid(format!(
                "option '{key}' = '{}': Must use sequence group for aggregation functions but \
                 not found for field {name}.",
                func.name()
            )));
        }
        let ignore_retract = match opt("ignore-retract") {
            Some(v) => parse_bool(&format!("fields.{name}.ignore-retract"), v)?,
            None => false,
        };
        if ignore_retract && kind == EngineKind::Aggregation && remove_record_on_delete {
            return Err(Error::invalid(format!(
                "option 'fields.{name}.ignore-retract' cannot be combined with \
                 aggregation.remove-record-on-delete"
            )));
        }
        let distinct = match opt("distinct") {
            Some(v) => parse_bool(&format!("fields.{name}.distinct"), v)?,
            None => false,
        };
        aggs.insert(
            name.clone(),
            FieldAgg {
                field: name.clone(),
                func,
                ignore_retract,
                delimiter: opt("list-agg-delimiter").unwrap_or(",").to_string(),
                distinct,
            },
        );
    }
    Ok(MergeEngine {
        kind,
        config: Some(Arc::new(EngineConfig {
            table: table_name.to_string(),
            fields,
            primary_keys: pks,
            seq_fields,
            seq_descending,
            ignore_delete,
            remove_record_on_delete,
            groups,
            aggs,
        })),
    })
}

// ------------------------------------------------------------------------------------------
// Bound engine: the config resolved against the column layout of the batches being merged.

struct ColSpec {
    dtype: DataType,
    agg: Option<FieldAgg>,
    group: Option<usize>,
}

struct BoundGroup {
    /// Value-column indices of the ordering fields present in the batch.
    ordering: Vec<usize>,
    remove_on_delete: bool,
}

/// Output under construction: whole-row picks (dedup, first-row, keep-all) or computed rows
/// (partial-update, aggregation).
#[derive(Default)]
pub(crate) struct Out {
    picks: Vec<(usize, usize)>,
    key: Vec<(usize, usize)>,
    seq: Vec<i64>,
    kind: Vec<i8>,
    cols: Vec<Vec<Cell>>,
}

impl Out {
    pub fn len(&self) -> usize {
        self.picks.len() + self.key.len()
    }
}

/// The merge function of one engine: what the result of a group of records with one key is.
/// The sort-merge reader collects each group (records of one key, at least two; a lone record
/// passes through untouched, §8.1) and [`Bound::finish`] orders it (`sequence.field`,
/// sequence number, retraction first) and hands it here. An implementation writes its result
/// into the bound output ([`Bound::push_pick`] for a whole input row, or the computed rows of
/// partial-update / aggregation). A wrapper (a changelog producer, as Java's
/// `FullChangelogMergeFunctionWrapper`) can implement this trait around an engine's function
/// and see every group and its result.
pub(crate) trait MergeFunction: Send {
    /// Merge one ordered group (records of one key, oldest first) into `b`'s output.
    fn merge(&mut self, b: &mut Bound, group: &[Rec], sources: &[Source]) -> Result<()>;
}

/// The merge function of each engine.
pub(crate) fn merge_function(kind: EngineKind) -> Box<dyn MergeFunction> {
    match kind {
        EngineKind::Deduplicate => Box::new(DeduplicateFunction),
        EngineKind::KeepAll => Box::new(KeepAllFunction),
        EngineKind::PartialUpdate => Box::new(PartialUpdateFunction),
        EngineKind::Aggregation => Box::new(AggregateFunction),
        EngineKind::FirstRow => Box::new(FirstRowFunction),
    }
}

/// `deduplicate`: the newest record (with ignore-delete: the newest that is no retraction).
pub(crate) struct DeduplicateFunction;

impl MergeFunction for DeduplicateFunction {
    fn merge(&mut self, b: &mut Bound, group: &[Rec], sources: &[Source]) -> Result<()> {
        let w = if b.ignore_delete {
            group
                .iter()
                .rev()
                .find(|r| !is_retract(b.kind_of(sources, **r)))
        } else {
            group.last()
        };
        if let Some(&w) = w {
            b.push_pick(w);
        }
        Ok(())
    }
}

/// No merging (pre-merge of spilled runs): every record, in order.
pub(crate) struct KeepAllFunction;

impl MergeFunction for KeepAllFunction {
    fn merge(&mut self, b: &mut Bound, group: &[Rec], _sources: &[Source]) -> Result<()> {
        for &r in group {
            b.push_pick(r);
        }
        Ok(())
    }
}

/// `first-row`: the oldest record; retractions are refused (or ignored with
/// `first-row.ignore-delete`).
pub(crate) struct FirstRowFunction;

impl MergeFunction for FirstRowFunction {
    fn merge(&mut self, b: &mut Bound, group: &[Rec], sources: &[Source]) -> Result<()> {
        let mut first = None;
        for &r in group {
            if is_retract(b.kind_of(sources, r)) {
                if b.ignore_delete {
                    continue;
                }
                return Err(Error::unsupported(format!(
                    "table '{}' (merge-engine 'first-row'): By default, First row merge engine \
                     can not accept DELETE/UPDATE_BEFORE records.\nYou can config \
                     'ignore-delete' to ignore the DELETE/UPDATE_BEFORE records.",
                    b.table
                )));
            }
            if first.is_none() {
                first = Some(r);
            }
        }
        if let Some(w) = first {
            b.push_pick(w);
        }
        Ok(())
    }
}

/// `partial-update`: the newest non-null value of each field (sequence groups, aggregators).
pub(crate) struct PartialUpdateFunction;

impl MergeFunction for PartialUpdateFunction {
    fn merge(&mut self, b: &mut Bound, group: &[Rec], sources: &[Source]) -> Result<()> {
        b.partial_update(group, sources)
    }
}

/// `aggregation`: each field's aggregate function over the group.
pub(crate) struct AggregateFunction;

impl MergeFunction for AggregateFunction {
    fn merge(&mut self, b: &mut Bound, group: &[Rec], sources: &[Source]) -> Result<()> {
        b.aggregate(group, sources)
    }
}

pub(crate) struct Bound {
    /// The engine's merge function (taken out while it runs, so it can write into the output).
    func: Option<Box<dyn MergeFunction>>,
    /// Partial-update and aggregation compute their output rows cell by cell, so a lone record
    /// is output as cells too.
    values_computed: bool,
    kind: EngineKind,
    table: String,
    layout: KvLayout,
    ignore_delete: bool,
    remove_record_on_delete: bool,
    seq_cols: Vec<(usize, DataType)>,
    seq_desc: bool,
    cols: Vec<ColSpec>,
    groups: Vec<BoundGroup>,
    out: Out,
    num_values: usize,
    /// Value column names (errors).
    names: Vec<String>,
    /// The level of each input run (lookup tables, Java's `LookupMergeFunction`): of a key's
    /// records at levels > 0 only the one of the lowest level is merged, with those of level
    /// 0 (the lowest level already embodies the older ones).
    run_levels: Option<Vec<i32>>,
    /// The merge function (a wrapper) sees every group, a lone record too.
    sees_all: bool,
    /// Changelog records of the groups finished so far (a changelog-producing wrapper).
    changelog: Out,
}

/// Elements of row `r` of a list or map column.
fn nested_value(col: &dyn Array, r: usize) -> Result<ArrayRef> {
    use arrow_array::cast::AsArray;
    match col.data_type() {
        arrow_schema::DataType::List(_) => Ok(col.as_list::<i32>().value(r)),
        arrow_schema::DataType::LargeList(_) => Ok(col.as_list::<i64>().value(r)),
        arrow_schema::DataType::Map(..) => Ok(Arc::new(col.as_map().value(r))),
        other => Err(Error::Internal(format!(
            "nested aggregate over a column of Arrow type {other}"
        ))),
    }
}

/// A list or map column from the elements of each row (None: a null row).
fn nested_column(dt: &arrow_schema::DataType, rows: &[Option<ArrayRef>]) -> Result<ArrayRef> {
    use arrow_buffer::{NullBuffer, OffsetBuffer};
    let parts: Vec<&dyn Array> = rows.iter().flatten().map(|a| a.as_ref()).collect();
    let lens = rows.iter().map(|a| a.as_ref().map_or(0, |a| a.len()));
    let nulls = NullBuffer::from(rows.iter().map(Option::is_some).collect::<Vec<_>>());
    let nulls = (nulls.null_count() > 0).then_some(nulls);
    let offsets = OffsetBuffer::<i32>::from_lengths(lens);
    let elements = |f: &arrow_schema::FieldRef| -> Result<ArrayRef> {
        Ok(if parts.is_empty() {
            arrow_array::new_empty_array(f.data_type())
        } else {
            arrow_select::concat::concat(&parts)?
        })
    };
    match dt {
        arrow_schema::DataType::List(f) => Ok(Arc::new(arrow_array::ListArray::try_new(
            f.clone(),
            offsets,
            elements(f)?,
            nulls,
        )?)),
        arrow_schema::DataType::Map(f, sorted) => {
            let entries = elements(f)?
                .as_any()
                .downcast_ref::<arrow_array::StructArray>()
                .ok_or_else(|| Error::Internal("map entries are not a struct".into()))?
                .clone();
            Ok(Arc::new(arrow_array::MapArray::try_new(
                f.clone(),
                offsets,
                entries,
                nulls,
                *sorted,
            )?))
        }
        other => Err(Error::Internal(format!(
            "nested aggregate result for Arrow type {other}"
        ))),
    }
}

struct Reader<'a> {
    sources: &'a [Source],
    col: usize,
    dtype: &'a DataType,
}

impl CellReader for Reader<'_> {
    fn datum(&self, c: &Cell) -> Result<Option<Datum>> {
        match c {
            Cell::Null => Ok(None),
            Cell::Val(d) => Ok(Some(d.clone())),
            Cell::Arr(_) => Err(Error::Internal(
                "a nested accumulator read as a scalar".into(),
            )),
            Cell::Pick(s, r) => datum_from_arrow(
                self.sources[*s as usize].batch.column(self.col).as_ref(),
                *r as usize,
                self.dtype,
            ),
        }
    }
    fn elems(&self, c: &Cell) -> Result<Option<ArrayRef>> {
        match c {
            Cell::Null => Ok(None),
            Cell::Arr(a) => Ok(Some(a.clone())),
            Cell::Val(_) => Err(Error::Internal(
                "a scalar accumulator in a nested aggregate".into(),
            )),
            Cell::Pick(s, r) => {
                let col = self.sources[*s as usize].batch.column(self.col);
                let r = *r as usize;
                if col.is_null(r) {
                    return Ok(None);
                }
                nested_value(col.as_ref(), r).map(Some)
            }
        }
    }
    fn is_null(&self, c: &Cell) -> bool {
        match c {
            Cell::Null => true,
            Cell::Val(_) | Cell::Arr(_) => false,
            Cell::Pick(s, r) => self.sources[*s as usize]
                .batch
                .column(self.col)
                .is_null(*r as usize),
        }
    }
}

impl Bound {
    /// Plain deduplicate (no sequence.field, no ignore-delete) or a lone-record pass: the
    /// result of a group is its newest record.
    pub fn last_only(&self) -> bool {
        self.kind == EngineKind::Deduplicate && self.seq_cols.is_empty() && !self.ignore_delete
    }

    pub fn out_len(&self) -> usize {
        self.out.len()
    }

    fn is_null(&self, sources: &[Source], rec: Rec, j: usize) -> bool {
        sources[rec.src as usize]
            .batch
            .column(self.layout.value_offset() + j)
            .is_null(rec.row as usize)
    }

    fn datum(&self, sources: &[Source], rec: Rec, j: usize) -> Result<Option<Datum>> {
        datum_from_arrow(
            sources[rec.src as usize]
                .batch
                .column(self.layout.value_offset() + j)
                .as_ref(),
            rec.row as usize,
            &self.cols[j].dtype,
        )
    }

    fn reader<'a>(&'a self, sources: &'a [Source], j: usize) -> Reader<'a> {
        Reader {
            sources,
            col: self.layout.value_offset() + j,
            dtype: &self.cols[j].dtype,
        }
    }

    /// Order a group by `sequence.field` (nulls oldest; descending reverses non-null values),
    /// then sequence number, then retraction before add.
    fn sort_group(&self, group: &mut [Rec], sources: &[Source]) -> Result<()> {
        let mut keyed = Vec::with_capacity(group.len());
        for &rec in group.iter() {
            let src = &sources[rec.src as usize];
            let mut t = Vec::with_capacity(self.seq_cols.len());
            for (c, dt) in &self.seq_cols {
                t.push(datum_from_arrow(
                    src.batch.column(*c).as_ref(),
                    rec.row as usize,
                    dt,
                )?);
            }
            let r = rec.row as usize;
            keyed.push((t, src.seq[r], !is_retract(src.kind[r]), rec));
        }
        let desc = self.seq_desc;
        keyed.sort_by(|a, b| {
            for (x, y) in a.0.iter().zip(b.0.iter()) {
                let o = match (x, y) {
                    (Some(x), Some(y)) if desc => {
                        compare_nullable(&Some(y.clone()), &Some(x.clone()))
                    }
                    _ => compare_nullable(x, y),
                };
                if o != Ordering::Equal {
                    return o;
                }
            }
            (a.1, a.2).cmp(&(b.1, b.2))
        });
        for (g, k) in group.iter_mut().zip(keyed) {
            *g = k.3;
        }
        Ok(())
    }

    /// Output a whole input row as it is: the result of a group under [`Bound::last_only`].
    #[inline(always)]
    pub(crate) fn push_pick(&mut self, rec: Rec) {
        self.out.picks.push((rec.src as usize, rec.row as usize));
    }

    /// Output one record as it is (a lone record of its key).
    #[inline]
    pub(crate) fn push_row(&mut self, rec: Rec, sources: &[Source]) {
        let (s, r) = (rec.src as usize, rec.row as usize);
        if self.values_computed {
            self.out.key.push((s, r));
            self.out.seq.push(sources[s].seq[r]);
            self.out.kind.push(sources[s].kind[r]);
            self.ensure_cols();
            for col in self.out.cols.iter_mut() {
                col.push(Cell::Pick(rec.src, rec.row));
            }
        } else {
            self.out.picks.push((s, r));
        }
    }

    fn ensure_cols(&mut self) {
        if self.out.cols.len() != self.num_values {
            self.out.cols = (0..self.num_values).map(|_| vec![]).collect();
        }
    }

    /// Merge one group of records with the same key (in any order; sorted here).
    pub fn finish(&mut self, group: &mut [Rec], sources: &[Source]) -> Result<()> {
        if group.len() == 1 && !self.sees_all {
            self.push_row(group[0], sources);
            return Ok(());
        }
        if !self.seq_cols.is_empty() {
            self.sort_group(group, sources)?;
        }
        let mut func = self
            .func
            .take()
            .ok_or_else(|| Error::Internal("merge function re-entered".into()))?;
        let r = if self.run_levels.is_some() && !self.sees_all {
            let lowest = self.lowest_level_only(group, sources);
            if lowest.len() == 1 {
                self.push_row(lowest[0], sources);
                Ok(())
            } else {
                func.merge(self, &lowest, sources)
            }
        } else {
            func.merge(self, group, sources)
        };
        self.func = Some(func);
        r
    }

    /// Install a wrapper around the merge function: it sees every group (a lone record too)
    /// and may write changelog records ([`Self::push_changelog`]).
    pub(crate) fn wrap(
        &mut self,
        wrap: impl FnOnce(Box<dyn MergeFunction>) -> Box<dyn MergeFunction>,
    ) {
        if let Some(f) = self.func.take() {
            self.func = Some(wrap(f));
        }
        self.sees_all = true;
    }

    /// Give the level of each input run (see `run_levels`).
    pub(crate) fn set_run_levels(&mut self, levels: Vec<i32>) {
        self.run_levels = Some(levels);
    }

    /// Whether every group goes through the merge function (no newest-record shortcut).
    pub(crate) fn sees_all(&self) -> bool {
        self.sees_all || self.run_levels.is_some()
    }

    /// The level of a record's run (0 without run levels).
    pub(crate) fn level_of(&self, sources: &[Source], r: Rec) -> i32 {
        let run = sources[r.src as usize].run as usize;
        self.run_levels
            .as_ref()
            .and_then(|l| l.get(run).copied())
            .unwrap_or(0)
    }

    /// The record of the lowest level > 0 of a group, if any.
    pub(crate) fn high_level(&self, group: &[Rec], sources: &[Source]) -> Option<Rec> {
        let mut high: Option<(i32, Rec)> = None;
        for &r in group {
            let l = self.level_of(sources, r);
            if l > 0 && high.is_none_or(|(h, _)| l < h) {
                high = Some((l, r));
            }
        }
        high.map(|(_, r)| r)
    }

    /// Java's `LookupMergeFunction`: the group's level-0 records and its record of the lowest
    /// level > 0, in group order.
    pub(crate) fn lowest_level_only(&self, group: &[Rec], sources: &[Source]) -> Vec<Rec> {
        let high = self.high_level(group, sources);
        group
            .iter()
            .copied()
            .filter(|&r| Some(r) == high || self.level_of(sources, r) <= 0)
            .collect()
    }

    /// Call the engine's merge function on a group from inside a wrapper.
    pub(crate) fn merge_inner(
        &mut self,
        inner: &mut dyn MergeFunction,
        group: &[Rec],
        sources: &[Source],
    ) -> Result<()> {
        inner.merge(self, group, sources)
    }

    /// The last output record (of the group just merged, if the output grew): its key
    /// record, sequence number, row kind byte and value cells (a whole-row pick as cells of
    /// its row).
    pub(crate) fn last_result(&self, sources: &[Source]) -> Option<(Rec, i64, i8, Vec<Cell>)> {
        let o = &self.out;
        if let Some(&(s, r)) = o.picks.last() {
            let rec = Rec {
                src: s as u32,
                row: r as u32,
            };
            return Some((
                rec,
                sources[s].seq[r],
                sources[s].kind[r],
                self.cells_of(rec),
            ));
        }
        let &(s, r) = o.key.last()?;
        let key = Rec {
            src: s as u32,
            row: r as u32,
        };
        let cells = o
            .cols
            .iter()
            .map(|c| c.last().cloned().unwrap_or(Cell::Null))
            .collect();
        Some((key, *o.seq.last()?, *o.kind.last()?, cells))
    }

    /// The cells of input record `rec` (its whole row).
    pub(crate) fn cells_of(&self, rec: Rec) -> Vec<Cell> {
        (0..self.num_values)
            .map(|_| Cell::Pick(rec.src, rec.row))
            .collect()
    }

    /// Add a changelog record: key of `key`, this sequence number, row kind and value cells.
    pub(crate) fn push_changelog(&mut self, key: Rec, seq: i64, kind: i8, cells: Vec<Cell>) {
        let o = &mut self.changelog;
        if o.cols.len() != self.num_values {
            o.cols = (0..self.num_values).map(|_| vec![]).collect();
        }
        o.key.push((key.src as usize, key.row as usize));
        o.seq.push(seq);
        o.kind.push(kind);
        for (col, c) in o.cols.iter_mut().zip(cells) {
            col.push(c);
        }
    }

    /// Whether value cells `a` and `b` are equal in every value column not in `ignore`
    /// (`changelog-producer.row-deduplicate`).
    pub(crate) fn cells_equal(
        &self,
        sources: &[Source],
        a: &[Cell],
        b: &[Cell],
        ignore: &[String],
    ) -> Result<bool> {
        for j in 0..self.num_values {
            if ignore.iter().any(|f| f == &self.names[j]) {
                continue;
            }
            let rd = self.reader(sources, j);
            let (x, y) = (&a[j], &b[j]);
            if rd.is_null(x) || rd.is_null(y) {
                if rd.is_null(x) != rd.is_null(y) {
                    return Ok(false);
                }
                continue;
            }
            let eq = if self.cols[j].dtype.is_nested() {
                rd.elems(x)?.map(|a| a.to_data()) == rd.elems(y)?.map(|a| a.to_data())
            } else {
                rd.datum(x)? == rd.datum(y)?
            };
            if !eq {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Build the changelog batch of everything finished so far (and reset it).
    pub fn build_changelog(
        &mut self,
        schema: &SchemaRef,
        sources: &[Source],
    ) -> Result<Option<RecordBatch>> {
        let out = std::mem::take(&mut self.changelog);
        self.build_out(out, schema, sources)
    }

    /// The row kind byte of a record.
    #[inline]
    pub(crate) fn kind_of(&self, sources: &[Source], r: Rec) -> i8 {
        sources[r.src as usize].kind[r.row as usize]
    }

    fn emit_cells(&mut self, key: Rec, seq: i64, kind: i8, row: Vec<Cell>) {
        self.ensure_cols();
        self.out.key.push((key.src as usize, key.row as usize));
        self.out.seq.push(seq);
        self.out.kind.push(kind);
        for (col, c) in self.out.cols.iter_mut().zip(row) {
            col.push(c);
        }
    }

    pub(crate) fn aggregate(&mut self, group: &[Rec], sources: &[Source]) -> Result<()> {
        let n = self.num_values;
        let mut st: Vec<AggState> = (0..n).map(|_| AggState::new()).collect();
        let mut deleted = false;
        let mut last = group[0];
        for &rec in group {
            last = rec;
            let kind = sources[rec.src as usize].kind[rec.row as usize];
            deleted = self.remove_record_on_delete && kind == RowKind::Delete.byte();
            if deleted {
                for (j, s) in st.iter_mut().enumerate() {
                    s.acc = self.input_cell(sources, rec, j);
                }
                continue;
            }
            for (j, s) in st.iter_mut().enumerate() {
                let Some(agg) = &self.cols[j].agg else {
                    continue;
                };
                let input = self.input_cell(sources, rec, j);
                let rd = self.reader(sources, j);
                if is_retract(kind) {
                    agg.retract(s, input, &rd)?;
                } else {
                    agg.agg(s, input, &rd, false)?;
                }
            }
        }
        let seq = sources[last.src as usize].seq[last.row as usize];
        let kind = if deleted {
            RowKind::Delete.byte()
        } else {
            self.check_result_not_null(sources, &st, "aggregation")?;
            RowKind::Insert.byte()
        };
        self.emit_cells(last, seq, kind, st.into_iter().map(|s| s.acc).collect());
        Ok(())
    }

    /// A merged row that stays (INSERT) may not leave a NOT NULL column null. Retractions can
    /// (Java's aggregators: `last_non_null_value` retracts to null, so does a field of a
    /// partial-update sequence group), e.g. the NOT NULL `rowkind.field` column of an
    /// aggregation table after a `-U`. Such a row could never be written to a data file (nor
    /// read), so it is refused here, naming the table and column, before a flush or a
    /// compaction gets as far as the Parquet writer.
    fn check_result_not_null(&self, sources: &[Source], st: &[AggState], what: &str) -> Result<()> {
        for (j, c) in self.cols.iter().enumerate() {
            if !c.dtype.nullable && self.reader(sources, j).is_null(&st[j].acc) {
                return Err(Error::invalid(format!(
                    "table '{}': {what}: merging a key's records (a retraction among them) left \
                     the NOT NULL column '{}' null; declare it nullable or give it an aggregate \
                     function whose retraction keeps a value",
                    self.table, self.names[j]
                )));
            }
        }
        Ok(())
    }

    fn input_cell(&self, sources: &[Source], rec: Rec, j: usize) -> Cell {
        if self.is_null(sources, rec, j) {
            Cell::Null
        } else {
            Cell::Pick(rec.src, rec.row)
        }
    }

    /// Compare the record's ordering tuple of group `g` with the accumulator's.
    fn compare_group(
        &self,
        g: usize,
        sources: &[Source],
        rec: Rec,
        st: &[AggState],
    ) -> Result<Ordering> {
        for &j in &self.groups[g].ordering {
            let a = self.datum(sources, rec, j)?;
            let b = self.reader(sources, j).datum(&st[j].acc)?;
            let o = compare_nullable(&a, &b);
            if o != Ordering::Equal {
                return Ok(o);
            }
        }
        Ok(Ordering::Equal)
    }

    /// Field `j` of group `g` is skipped for this record: already processed (an ordering field
    /// handled with its group), or the record's ordering fields of `g` are all null (then the
    /// whole group is marked processed).
    fn skip_group(
        &self,
        g: usize,
        j: usize,
        sources: &[Source],
        rec: Rec,
        processed: &mut [bool],
    ) -> bool {
        if processed[j] {
            return true;
        }
        let ordering = &self.groups[g].ordering;
        if ordering.iter().all(|&o| self.is_null(sources, rec, o)) {
            for &o in ordering {
                processed[o] = true;
            }
            return true;
        }
        false
    }

    pub(crate) fn partial_update(&mut self, group: &[Rec], sources: &[Source]) -> Result<()> {
        let n = self.num_values;
        let mut st: Vec<AggState> = (0..n).map(|_| AggState::new()).collect();
        let mut filled = false;
        let mut meet_insert = false;
        let mut deleted = false;
        let mut last_seq = None;
        let has_groups = !self.groups.is_empty();
        let key = group[group.len() - 1];
        for &rec in group {
            let (s, r) = (rec.src as usize, rec.row as usize);
            let kind = sources[s].kind[r];
            deleted = false;
            if is_retract(kind) {
                if !filled {
                    self.check_not_null(sources, rec)?;
                    for (j, a) in st.iter_mut().enumerate() {
                        a.acc = self.input_cell(sources, rec, j);
                    }
                    filled = true;
                }
                if self.ignore_delete {
                    continue;
                }
                last_seq = Some(sources[s].seq[r]);
                if has_groups {
                    if self.retract_with_groups(&mut st, sources, rec, kind)? {
                        deleted = true;
                    }
                    continue;
                }
                if self.remove_record_on_delete {
                    if kind == RowKind::Delete.byte() {
                        self.check_not_null(sources, rec)?;
                        deleted = true;
                        for (j, a) in st.iter_mut().enumerate() {
                            a.acc = self.input_cell(sources, rec, j);
                        }
                    }
                    continue;
                }
                return Err(Error::invalid(format!(
                    "table '{}': {PARTIAL_UPDATE_DELETE}",
                    self.table
                )));
            }
            last_seq = Some(sources[s].seq[r]);
            if !has_groups {
                self.check_not_null(sources, rec)?;
                for (j, a) in st.iter_mut().enumerate() {
                    if !self.is_null(sources, rec, j) {
                        a.acc = Cell::Pick(rec.src, rec.row);
                    }
                }
            } else {
                self.update_with_groups(&mut st, sources, rec)?;
            }
            meet_insert = true;
            filled = true;
        }
        let seq = last_seq.unwrap_or(sources[key.src as usize].seq[key.row as usize]);
        let kind = if deleted || !meet_insert {
            RowKind::Delete.byte()
        } else {
            self.check_result_not_null(sources, &st, "partial-update")?;
            RowKind::Insert.byte()
        };
        self.emit_cells(key, seq, kind, st.into_iter().map(|s| s.acc).collect());
        Ok(())
    }

    /// Partial-update refuses a null in a NOT NULL field of a record it merges (Java's
    /// PartialUpdateMergeFunction: plain adds and the rows a retraction initialises).
    fn check_not_null(&self, sources: &[Source], rec: Rec) -> Result<()> {
        for (j, c) in self.cols.iter().enumerate() {
            if !c.dtype.nullable && self.is_null(sources, rec, j) {
                return Err(Error::invalid(format!(
                    "table '{}': partial-update: field '{}' is NOT NULL but a record of the \
                     merge has null in it",
                    self.table, self.names[j]
                )));
            }
        }
        Ok(())
    }

    fn update_with_groups(&self, st: &mut [AggState], sources: &[Source], rec: Rec) -> Result<()> {
        let n = self.num_values;
        let mut processed = vec![false; n];
        for j in 0..n {
            let agg = self.cols[j].agg.as_ref();
            let input = self.input_cell(sources, rec, j);
            match self.cols[j].group {
                Some(g) => {
                    if self.skip_group(g, j, sources, rec, &mut processed) {
                        continue;
                    }
                    let o = self.compare_group(g, sources, rec, st)?;
                    if o != Ordering::Less {
                        if self.groups[g].ordering.contains(&j) {
                            for &o in &self.groups[g].ordering {
                                st[o].acc = self.input_cell(sources, rec, o);
                                processed[o] = true;
                            }
                            continue;
                        }
                        match agg {
                            None => st[j].acc = input,
                            Some(a) => a.agg(&mut st[j], input, &self.reader(sources, j), false)?,
                        }
                    } else if let Some(a) = agg {
                        a.agg(&mut st[j], input, &self.reader(sources, j), true)?;
                    }
                }
                None => match agg {
                    Some(a) => a.agg(&mut st[j], input, &self.reader(sources, j), false)?,
                    None => {
                        if input != Cell::Null {
                            st[j].acc = input;
                        }
                    }
                },
            }
        }
        Ok(())
    }

    /// Returns true when the record removed the whole row.
    fn retract_with_groups(
        &self,
        st: &mut [AggState],
        sources: &[Source],
        rec: Rec,
        kind: i8,
    ) -> Result<bool> {
        let n = self.num_values;
        let mut processed = vec![false; n];
        let mut updated = vec![false; n];
        for j in 0..n {
            let Some(g) = self.cols[j].group else {
                continue;
            };
            let agg = self.cols[j].agg.as_ref();
            if self.skip_group(g, j, sources, rec, &mut processed) {
                continue;
            }
            let input = self.input_cell(sources, rec, j);
            let o = self.compare_group(g, sources, rec, st)?;
            if o != Ordering::Less {
                if self.groups[g].ordering.contains(&j) {
                    for &f in &self.groups[g].ordering {
                        if !updated[f] {
                            if kind == RowKind::Delete.byte() && self.groups[g].remove_on_delete {
                                for (i, a) in st.iter_mut().enumerate() {
                                    a.acc = self.input_cell(sources, rec, i);
                                }
                                return Ok(true);
                            }
                            st[f].acc = self.input_cell(sources, rec, f);
                            updated[f] = true;
                        }
                        processed[f] = true;
                    }
                } else {
                    match agg {
                        None => st[j].acc = Cell::Null,
                        Some(a) => a.retract(&mut st[j], input, &self.reader(sources, j))?,
                    }
                }
            } else if let Some(a) = agg {
                a.retract(&mut st[j], input, &self.reader(sources, j))?;
            }
        }
        Ok(false)
    }

    /// Build the output batch of everything finished so far (and reset the output).
    pub fn build(&mut self, schema: &SchemaRef, sources: &[Source]) -> Result<Option<RecordBatch>> {
        let out = std::mem::take(&mut self.out);
        self.build_out(out, schema, sources)
    }

    fn build_out(
        &self,
        out: Out,
        schema: &SchemaRef,
        sources: &[Source],
    ) -> Result<Option<RecordBatch>> {
        if out.len() == 0 {
            return Ok(None);
        }
        let batches: Vec<&RecordBatch> = sources.iter().map(|s| &s.batch).collect();
        if !out.picks.is_empty() {
            return super::source::interleave_batches(schema, &batches, &out.picks).map(Some);
        }
        let lay = self.layout;
        let mut cols: Vec<ArrayRef> = Vec::with_capacity(schema.fields().len());
        for c in 0..lay.num_keys {
            let arrays: Vec<&dyn Array> = batches.iter().map(|b| b.column(c).as_ref()).collect();
            cols.push(arrow_select::interleave::interleave(&arrays, &out.key)?);
        }
        cols.push(std::sync::Arc::new(Int64Array::from(out.seq)));
        cols.push(std::sync::Arc::new(Int8Array::from(out.kind)));
        for (j, cells) in out.cols.into_iter().enumerate() {
            let c = lay.value_offset() + j;
            let dt = schema.field(c).data_type();
            let computed = cells.iter().any(|x| matches!(x, Cell::Val(_)));
            let nested = cells.iter().any(|x| matches!(x, Cell::Arr(_)));
            if nested {
                let rd = self.reader(sources, j);
                let rows: Vec<Option<ArrayRef>> =
                    cells.iter().map(|x| rd.elems(x)).collect::<Result<_>>()?;
                cols.push(nested_column(dt, &rows)?);
            } else if !computed {
                let null = new_null_array(dt, 1);
                let mut arrays: Vec<&dyn Array> =
                    batches.iter().map(|b| b.column(c).as_ref()).collect();
                arrays.push(null.as_ref());
                let ni = arrays.len() - 1;
                let idx: Vec<(usize, usize)> = cells
                    .iter()
                    .map(|x| match x {
                        Cell::Pick(s, r) => (*s as usize, *r as usize),
                        _ => (ni, 0),
                    })
                    .collect();
                cols.push(arrow_select::interleave::interleave(&arrays, &idx)?);
            } else {
                let rd = self.reader(sources, j);
                let datums: Vec<Option<Datum>> =
                    cells.iter().map(|x| rd.datum(x)).collect::<Result<_>>()?;
                let a = datums_to_arrow(&self.cols[j].dtype, &datums)?;
                let a = if a.data_type() != dt {
                    arrow_cast::cast(&a, dt)?
                } else {
                    a
                };
                cols.push(a);
            }
        }
        Ok(Some(RecordBatch::try_new(schema.clone(), cols)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::merge::{merge_sorted_runs, BatchIter};
    use crate::spec::types::TypeKind;
    use arrow_schema::{DataType as ArrowType, Field, Schema};

    /// One sorted run `_KEY_k, _SEQUENCE_NUMBER, _VALUE_KIND, k, v, w` of key 1.
    fn run(rows: &[(i8, Option<i64>, Option<i64>)]) -> BatchIter {
        let n = rows.len();
        let schema = Arc::new(Schema::new(vec![
            Field::new("_KEY_k", ArrowType::Int64, false),
            Field::new("_SEQUENCE_NUMBER", ArrowType::Int64, false),
            Field::new("_VALUE_KIND", ArrowType::Int8, false),
            Field::new("k", ArrowType::Int64, false),
            Field::new("v", ArrowType::Int64, true),
            Field::new("w", ArrowType::Int64, true),
        ]));
        let ones: ArrayRef = Arc::new(Int64Array::from(vec![1i64; n]));
        let b = RecordBatch::try_new(
            schema,
            vec![
                ones.clone(),
                Arc::new(Int64Array::from_iter_values(0..n as i64)),
                Arc::new(Int8Array::from_iter_values(rows.iter().map(|r| r.0))),
                ones,
                Arc::new(Int64Array::from_iter(rows.iter().map(|r| r.1))),
                Arc::new(Int64Array::from_iter(rows.iter().map(|r| r.2))),
            ],
        )
        .unwrap();
        Box::new(vec![Ok(b)].into_iter())
    }

    fn partial_update(remove_record_on_delete: bool) -> MergeEngine {
        k_v_w_engine(EngineKind::PartialUpdate, remove_record_on_delete)
    }

    /// Table t(k BIGINT NOT NULL key, v BIGINT NOT NULL, w BIGINT) with the `kind` engine.
    fn k_v_w_engine(kind: EngineKind, remove_record_on_delete: bool) -> MergeEngine {
        let t = |k| DataType::new(k);
        MergeEngine {
            kind,
            config: Some(Arc::new(EngineConfig {
                table: "t".into(),
                fields: vec![
                    ("k".into(), t(TypeKind::BigInt).not_null()),
                    ("v".into(), t(TypeKind::BigInt).not_null()),
                    ("w".into(), t(TypeKind::BigInt)),
                ],
                primary_keys: vec!["k".into()],
                remove_record_on_delete,
                ..Default::default()
            })),
        }
    }

    fn merge(e: MergeEngine, rows: &[(i8, Option<i64>, Option<i64>)]) -> Result<usize> {
        let it = merge_sorted_runs(vec![run(rows)], KvLayout { num_keys: 1 }, e, false)?;
        let mut n = 0;
        for b in it {
            n += b?.num_rows();
        }
        Ok(n)
    }

    #[test]
    fn aggregation_refuses_a_retraction_that_nulls_a_not_null_column() {
        let e = k_v_w_engine(EngineKind::Aggregation, false);
        // last_non_null_value (the default) retracts to null: fine in nullable 'w'
        assert_eq!(
            merge(e.clone(), &[(0, Some(1), Some(2)), (1, None, Some(2))]).unwrap(),
            1
        );
        // in NOT NULL 'v' the merged row could never be written: a clear error, not Arrow's
        let err = merge(e, &[(0, Some(1), Some(2)), (1, Some(1), None)]).unwrap_err();
        assert!(
            err.to_string().contains("table 't'")
                && err.to_string().contains("NOT NULL column 'v' null"),
            "{err}"
        );
    }

    #[test]
    fn partial_update_refuses_null_in_not_null_field() {
        let e = partial_update(false);
        // nulls in the nullable field are fine
        assert_eq!(
            merge(e.clone(), &[(0, Some(1), None), (0, Some(2), Some(3))]).unwrap(),
            1
        );
        // a plain add with null in NOT NULL 'v'
        let err = merge(e.clone(), &[(0, Some(1), None), (0, None, Some(3))]).unwrap_err();
        assert!(err.to_string().contains("field 'v' is NOT NULL"), "{err}");
        // a retraction that initialises the row (first record) with null in 'v'
        let e = partial_update(true);
        let err = merge(e.clone(), &[(3, None, Some(1)), (0, Some(2), None)]).unwrap_err();
        assert!(err.to_string().contains("field 'v' is NOT NULL"), "{err}");
        // remove-record-on-delete: the -D row replaces the accumulator
        let err = merge(e.clone(), &[(0, Some(1), None), (3, None, None)]).unwrap_err();
        assert!(err.to_string().contains("table 't'"), "{err}");
        // a lone record never reaches the merge function
        assert_eq!(merge(e, &[(0, None, None)]).unwrap(), 1);
    }
}
