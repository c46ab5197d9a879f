//! Schema evolution: `ALTER TABLE` as Java's `SchemaManager.commitChanges` /
//! `generateTableSchema` does it. Changes (pypaimon's `SchemaChange` JSON) are applied to the
//! latest schema in order; the result is validated as a new table would be and written as
//! `schema/schema-<id+1>` exclusively. A concurrent alter that took the id first makes this one
//! start over from the new latest schema (Java retries the same way), so both land or the second
//! gets the refusal its changes now deserve (e.g. the column it adds exists).
//!
//! New columns take ids from `highestFieldId`; a renamed column keeps its id (data files are
//! read by field id, `read::evolution`); a type change must be a cast Paimon allows
//! (`DataTypeCasts.supportsCast`, explicit casts unless `disable-explicit-type-casting`) that
//! paimon_rs can also apply when reading older files (`evolution::cast_supported`).

use std::path::Path;

use serde_json::Value;

use super::new_schema::NewTableSchema;
use super::snapshot_manager::{self, SnapshotManager};
use crate::error::{Error, Result};
use crate::options::CoreOptions;
use crate::read::evolution::cast_supported;
use crate::spec::schema::TableSchema;
use crate::spec::types::{reassign_nested_ids, DataField, DataType, TypeKind};

/// Where a column goes (pypaimon's `Move`).
#[derive(Debug, Clone, PartialEq)]
pub enum Move {
    First(String),
    Last(String),
    After(String, String),
    Before(String, String),
}

impl Move {
    fn field_name(&self) -> &str {
        match self {
            Move::First(f) | Move::Last(f) | Move::After(f, _) | Move::Before(f, _) => f,
        }
    }

    fn from_json(v: &Value) -> Result<Self> {
        let field = str_of(v, "fieldName")?;
        let reference = || str_of(v, "referenceFieldName");
        let kind = v.get("type").and_then(Value::as_str).unwrap_or_default();
        Ok(match kind.to_ascii_uppercase().as_str() {
            "FIRST" => Move::First(field),
            "LAST" => Move::Last(field),
            "AFTER" => Move::After(field, reference()?),
            "BEFORE" => Move::Before(field, reference()?),
            other => return Err(Error::invalid(format!("Unsupported move type: {other}"))),
        })
    }
}

/// One schema change (pypaimon's / Java's `SchemaChange`).
#[derive(Debug, Clone, PartialEq)]
pub enum SchemaChange {
    SetOption {
        key: String,
        value: String,
    },
    RemoveOption {
        key: String,
    },
    UpdateComment(Option<String>),
    AddColumn {
        field_names: Vec<String>,
        data_type: DataType,
        comment: Option<String>,
        move_: Option<Move>,
    },
    RenameColumn {
        field_names: Vec<String>,
        new_name: String,
    },
    DropColumn {
        field_names: Vec<String>,
    },
    UpdateColumnType {
        field_names: Vec<String>,
        data_type: DataType,
        keep_nullability: bool,
    },
    UpdateColumnNullability {
        field_names: Vec<String>,
        nullable: bool,
    },
    UpdateColumnComment {
        field_names: Vec<String>,
        comment: Option<String>,
    },
    UpdateColumnPosition(Move),
}

fn str_of(v: &Value, k: &str) -> Result<String> {
    v.get(k)
        .and_then(Value::as_str)
        .map(str::to_string)
        .ok_or_else(|| Error::invalid(format!("schema change without '{k}': {v}")))
}

fn opt_str(v: &Value, k: &str) -> Option<String> {
    v.get(k).and_then(Value::as_str).map(str::to_string)
}

fn names_of(v: &Value) -> Result<Vec<String>> {
    let names: Vec<String> = v
        .get("fieldNames")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    if names.is_empty() {
        return Err(Error::invalid(format!(
            "schema change without 'fieldNames': {v}"
        )));
    }
    Ok(names)
}

impl SchemaChange {
    /// A change in pypaimon's JSON form (`{"action": "addColumn", "fieldNames": [..], ...}`,
    /// the REST catalog's wire format).
    pub fn from_json(v: &Value) -> Result<Self> {
        let action = str_of(v, "action")?;
        let type_of = |k: &str| -> Result<DataType> {
            let t = v
                .get(k)
                .ok_or_else(|| Error::invalid(format!("schema change without '{k}': {v}")))?;
            DataType::from_json(t)
        };
        Ok(match action.as_str() {
            "setOption" => SchemaChange::SetOption {
                key: str_of(v, "key")?,
                value: str_of(v, "value")?,
            },
            "removeOption" => SchemaChange::RemoveOption {
                key: str_of(v, "key")?,
            },
            "updateComment" => SchemaChange::UpdateComment(opt_str(v, "comment")),
            "addColumn" => SchemaChange::AddColumn {
                field_names: names_of(v)?,
                data_type: type_of("dataType")?,
                comment: opt_str(v, "comment"),
                move_: match v.get("move") {
                    Some(m) if !m.is_null() => Some(Move::from_json(m)?),
                    _ => None,
                },
            },
            "renameColumn" => SchemaChange::RenameColumn {
                field_names: names_of(v)?,
                new_name: str_of(v, "newName")?,
            },
            "dropColumn" => SchemaChange::DropColumn {
                field_names: names_of(v)?,
            },
            "updateColumnType" => SchemaChange::UpdateColumnType {
                field_names: names_of(v)?,
                data_type: type_of("newDataType")?,
                keep_nullability: v
                    .get("keepNullability")
                    .and_then(Value::as_bool)
                    .unwrap_or(false),
            },
            "updateColumnNullability" => SchemaChange::UpdateColumnNullability {
                field_names: names_of(v)?,
                nullable: v
                    .get("newNullability")
                    .and_then(Value::as_bool)
                    .ok_or_else(|| Error::invalid(format!("without 'newNullability': {v}")))?,
            },
            "updateColumnComment" => SchemaChange::UpdateColumnComment {
                field_names: names_of(v)?,
                comment: opt_str(v, "newComment"),
            },
            "updateColumnPosition" => SchemaChange::UpdateColumnPosition(Move::from_json(
                v.get("move")
                    .ok_or_else(|| Error::invalid(format!("without 'move': {v}")))?,
            )?),
            "updateColumnDefaultValue" => {
                return Err(Error::unsupported(
                    "updateColumnDefaultValue: column default values are not implemented by \
                     paimon_rs (writes would not fill them)",
                ))
            }
            other => {
                return Err(Error::invalid(format!(
                    "unknown schema change action '{other}'"
                )))
            }
        })
    }
}

/// Options Java refuses to change once the table has snapshots (`CoreOptions.IMMUTABLE_OPTIONS`,
/// the `@Immutable` ones).
pub const IMMUTABLE_OPTIONS: &[&str] = &[
    "type",
    "bucket-key",
    "bucket-function.type",
    "data-file.path-directory",
    "merge-engine",
    "sequence.snapshot-ordering",
    "aggregation.remove-record-on-delete",
    "partial-update.remove-record-on-delete",
    "partial-update.remove-record-on-sequence-group",
    "rowkind.field",
    "primary-key",
    "primary-key.nullable",
    "partition",
    "dynamic-bucket.initial-buckets",
    "force-lookup",
    "row-tracking.enabled",
    "data-evolution.enabled",
    "index-file-in-data-file-dir",
    "blob-field",
    "blob-descriptor-field",
    "blob-view-field",
    "pk-clustering-override",
];

fn refuse(message: impl Into<String>) -> Error {
    Error::invalid(message)
}

fn parse_bool_opt(v: Option<&String>, default: bool) -> bool {
    v.map(|s| s.eq_ignore_ascii_case("true")).unwrap_or(default)
}

/// Java's `SchemaManager.checkAlterTableOption`, for a table with snapshots.
fn check_alter_option(
    options: &std::collections::BTreeMap<String, String>,
    key: &str,
    old: Option<&String>,
    new: &str,
) -> Result<()> {
    if IMMUTABLE_OPTIONS.contains(&key) {
        return Err(refuse(format!("Change '{key}' is not supported yet.")));
    }
    let as_bool = |v: Option<&String>| parse_bool_opt(v, false);
    match key {
        "bucket" => {
            let old_b = old.and_then(|v| v.trim().parse::<i32>().ok()).unwrap_or(-1);
            let new_b = new.trim().parse::<i32>().map_err(|_| {
                Error::invalid(format!("option 'bucket' = '{new}' is not an integer"))
            })?;
            if old_b == -1 {
                return Err(refuse("Cannot change bucket when it is -1."));
            }
            if new_b == -1 {
                return Err(refuse("Cannot change bucket to -1."));
            }
            // Java allows it (the table must then be rescaled: each partition overwritten);
            // paimon_rs writers do not check the bucket count of a partition's existing files,
            // so a write after the change would mix bucket layouts in one partition.
            return Err(Error::unsupported(format!(
                "changing 'bucket' from {old_b} to {new_b} on a table with snapshots: Paimon \
                 needs a rescale (each partition rewritten with the new bucket count), which \
                 paimon_rs does not do yet"
            )));
        }
        "deletion-vectors.enabled"
            if !parse_bool_opt(options.get("deletion-vectors.modifiable"), false)
                && as_bool(old) != new.eq_ignore_ascii_case("true") =>
        {
            let (o, n) = (as_bool(old), new.eq_ignore_ascii_case("true"));
            return Err(refuse(format!(
                "Cannot change deletion vectors mode from {o} to {n}. If modifying table \
                 deletion-vectors mode without full-compaction, this may result in data \
                 duplication. If you are confident, you can set table option \
                 'deletion-vectors.modifiable' = 'true' to allow deletion vectors \
                 modification."
            )));
        }
        "ignore-delete" | "ignore-update-before"
            if as_bool(old) && !new.eq_ignore_ascii_case("true") =>
        {
            return Err(refuse(format!("Cannot change {key} from true to false.")));
        }
        _ => {}
    }
    Ok(())
}

/// Java's `SchemaManager.checkResetTableOption`, for a table with snapshots.
fn check_reset_option(
    options: &std::collections::BTreeMap<String, String>,
    key: &str,
) -> Result<()> {
    if IMMUTABLE_OPTIONS.contains(&key) {
        return Err(refuse(format!("Change '{key}' is not supported yet.")));
    }
    if key == "bucket" {
        return Err(refuse(format!("Cannot reset {key}.")));
    }
    if key == "deletion-vectors.enabled" {
        check_alter_option(options, key, options.get(key), "false")?;
    }
    Ok(())
}

/// Paimon's type roots, for `DataTypeCasts`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Root {
    Char,
    VarChar,
    Boolean,
    Binary,
    VarBinary,
    Decimal,
    TinyInt,
    SmallInt,
    Int,
    BigInt,
    Float,
    Double,
    Date,
    Time,
    Timestamp,
    Ltz,
    Constructed,
}

fn root(t: &DataType) -> Root {
    use TypeKind::*;
    match &t.kind {
        Char(_) => Root::Char,
        VarChar(_) => Root::VarChar,
        Boolean => Root::Boolean,
        Binary(_) => Root::Binary,
        VarBinary(_) => Root::VarBinary,
        Decimal { .. } => Root::Decimal,
        TinyInt => Root::TinyInt,
        SmallInt => Root::SmallInt,
        Int => Root::Int,
        BigInt => Root::BigInt,
        Float => Root::Float,
        Double => Root::Double,
        Date => Root::Date,
        Time(_) => Root::Time,
        Timestamp(_) => Root::Timestamp,
        LocalZonedTimestamp(_) => Root::Ltz,
        _ => Root::Constructed,
    }
}

/// Java's `DataTypeCasts.supportsCast(source, target, allowExplicit)` over type roots (same root:
/// always; constructed types: only to an equal type).
fn java_supports_cast(from: &DataType, to: &DataType, allow_explicit: bool) -> bool {
    use Root::*;
    let (f, t) = (root(from), root(to));
    if f == Constructed || t == Constructed {
        return crate::read::evolution::same_type(from, to);
    }
    if f == t {
        return true;
    }
    let ints = [TinyInt, SmallInt, Int, BigInt];
    let numeric = [TinyInt, SmallInt, Int, BigInt, Float, Double, Decimal];
    let chars = [Char, VarChar];
    let predefined = [
        Char, VarChar, Boolean, Binary, VarBinary, Decimal, TinyInt, SmallInt, Int, BigInt, Float,
        Double, Date, Time, Timestamp, Ltz,
    ];
    let implicit: &[Root] = match t {
        VarChar => &chars,
        VarBinary => &[Binary, VarBinary],
        Decimal | Double => &numeric,
        SmallInt => &[TinyInt],
        Int => &[TinyInt, SmallInt],
        BigInt => &ints[..3],
        Float => &[TinyInt, SmallInt, Int, BigInt, Decimal],
        Date => &[Timestamp],
        Time => &[Timestamp],
        Timestamp => &[Ltz],
        Ltz => &[Timestamp],
        _ => &[],
    };
    if implicit.contains(&f) {
        return true;
    }
    if !allow_explicit {
        return false;
    }
    let in_any = |sets: &[&[Root]]| sets.iter().any(|s| s.contains(&f));
    match t {
        Char | VarChar => predefined.contains(&f),
        Boolean => in_any(&[&chars, &ints]),
        Binary => in_any(&[&chars, &[VarBinary]]),
        VarBinary => in_any(&[&chars, &[Binary]]),
        Decimal | Double => in_any(&[&chars, &[Boolean, Timestamp, Ltz]]),
        TinyInt | SmallInt | Int | BigInt | Float => {
            in_any(&[&numeric, &chars, &[Boolean, Timestamp, Ltz]])
        }
        Date => in_any(&[&[Timestamp, Ltz], &chars]),
        Time => in_any(&[&[Time, Timestamp, Ltz], &chars]),
        Timestamp | Ltz => in_any(&[&[Date, Time, Timestamp, Ltz], &chars, &numeric]),
        Constructed => false,
    }
}

/// Walk `path` (all but its last name) down nested ROW fields (through ARRAY elements and MAP
/// values, named `element` / `value` in the path as Flink names them), then run `f` on the
/// field list holding the last name.
fn modify_nested<T>(
    fields: &mut Vec<DataField>,
    path: &[String],
    table: &str,
    f: impl FnOnce(&mut Vec<DataField>, &str) -> Result<T>,
) -> Result<T> {
    fn row_fields<'a>(
        t: &'a mut DataType,
        path: &[String],
        at: &mut usize,
    ) -> Option<&'a mut Vec<DataField>> {
        match &mut t.kind {
            TypeKind::Row(fs) => Some(fs),
            TypeKind::Array(e) if path.get(*at).map(String::as_str) == Some("element") => {
                *at += 1;
                row_fields(e, path, at)
            }
            TypeKind::Map(_, v) if path.get(*at).map(String::as_str) == Some("value") => {
                *at += 1;
                row_fields(v, path, at)
            }
            _ => None,
        }
    }
    let mut at = 0usize;
    let mut current = fields;
    while at + 1 < path.len() {
        let name = &path[at];
        let field = current
            .iter_mut()
            .find(|x| &x.name == name)
            .ok_or_else(|| column_not_found(table, &path[..=at].join(".")))?;
        at += 1;
        current = row_fields(&mut field.data_type, path, &mut at).ok_or_else(|| {
            Error::unsupported(format!(
                "column '{}': only fields of nested ROW types (also inside ARRAY elements and \
                 MAP values) can be altered, not the element or value type itself",
                path.join(".")
            ))
        })?;
    }
    let last = path
        .get(at)
        .ok_or_else(|| Error::invalid(format!("column path {path:?} ends in a wrapper")))?;
    f(current, last)
}

fn column_not_found(table: &str, column: &str) -> Error {
    Error::ColumnNotFound {
        table: table.to_string(),
        column: column.to_string(),
    }
}

fn column_exists(table: &str, column: &str) -> Error {
    Error::ColumnAlreadyExists {
        table: table.to_string(),
        column: column.to_string(),
    }
}

/// The dotted name of the column `path` ends in, with `last` as its last part.
fn dotted(path: &[String], last: &str) -> String {
    let mut v: Vec<&str> = path[..path.len().saturating_sub(1)]
        .iter()
        .map(String::as_str)
        .collect();
    v.push(last);
    v.join(".")
}

/// Java's `SchemaManager.applyMove` (an existing column moved).
fn apply_move(fields: &mut Vec<DataField>, mv: &Move) -> Result<()> {
    let index_of = |fields: &Vec<DataField>, n: &str| fields.iter().position(|f| f.name == n);
    let from = index_of(fields, mv.field_name())
        .ok_or_else(|| Error::invalid(format!("Field name not found: {}", mv.field_name())))?;
    let itself = || refuse(format!("Cannot move itself for column {}", mv.field_name()));
    let to = match mv {
        Move::First(_) => {
            if from == 0 {
                return Err(itself());
            }
            0
        }
        Move::Last(_) => {
            if from == fields.len() - 1 {
                return Err(itself());
            }
            fields.len() - 1
        }
        Move::After(_, r) | Move::Before(_, r) => {
            let refi = index_of(fields, r)
                .ok_or_else(|| Error::invalid(format!("Reference field name not found: {r}")))?;
            if refi == from {
                return Err(itself());
            }
            let mut to = refi;
            if matches!(mv, Move::After(..)) && from > refi {
                to += 1;
            }
            if matches!(mv, Move::Before(..)) && from < refi {
                to -= 1;
            }
            to.min(fields.len() - 1)
        }
    };
    let f = fields.remove(from);
    fields.insert(to, f);
    Ok(())
}

/// The schema `old` becomes with `changes` (Java's `SchemaManager.generateTableSchema`), not yet
/// validated as a whole. `has_snapshots` is asked only when an option changes.
pub fn generate_table_schema(
    old: &TableSchema,
    changes: &[SchemaChange],
    mut has_snapshots: impl FnMut() -> Result<bool>,
    table: &str,
) -> Result<TableSchema> {
    let old_options = &old.options;
    let mut options = old.options.clone();
    let disable_null_to_not_null = parse_bool_opt(
        old_options.get("alter-column-null-to-not-null.disabled"),
        true,
    );
    let disable_explicit = parse_bool_opt(old_options.get("disable-explicit-type-casting"), false);
    let add_before_partition =
        parse_bool_opt(old_options.get("add-column-before-partition"), false);
    let mut fields = old.fields.clone();
    let mut highest = old.highest_field_id;
    let mut comment = old.comment.clone();
    let mut renames: Vec<(String, String)> = vec![];
    let single = |names: &[String]| (names.len() == 1).then(|| names[0].clone());
    for change in changes {
        match change {
            SchemaChange::SetOption { key, value } => {
                let current = old_options.get(key);
                if current == Some(value) {
                    continue;
                }
                if key == "type" {
                    return Err(refuse("Change 'type' is not supported yet."));
                }
                if has_snapshots()? {
                    check_alter_option(old_options, key, current, value)?;
                }
                crate::options::check_user_options(table, [(key, value)])?;
                options.insert(key.clone(), value.clone());
            }
            SchemaChange::RemoveOption { key } => {
                if key == "type" {
                    return Err(refuse("Change 'type' is not supported yet."));
                }
                if has_snapshots()? {
                    check_reset_option(old_options, key)?;
                }
                options.remove(key);
            }
            SchemaChange::UpdateComment(c) => comment = c.clone(),
            SchemaChange::AddColumn {
                field_names,
                data_type,
                comment: desc,
                move_,
            } => {
                if !data_type.nullable {
                    return Err(refuse(format!(
                        "Column {} cannot specify NOT NULL in the {table} table.",
                        field_names.join(".")
                    )));
                }
                highest += 1;
                let id = highest;
                let mut t = data_type.clone();
                let mut next = highest + 1;
                reassign_nested_ids(&mut t, &mut next);
                highest = next - 1;
                let top = field_names.len() == 1;
                let partition_keys = &old.partition_keys;
                modify_nested(&mut fields, field_names, table, |fs, name| {
                    if fs.iter().any(|f| f.name == name) {
                        return Err(column_exists(table, &dotted(field_names, name)));
                    }
                    let mut field = DataField::new(id, name, t);
                    field.description = desc.clone();
                    let index_of = |n: &str| fs.iter().position(|f| f.name == n);
                    let at = match move_ {
                        Some(Move::First(_)) => 0,
                        Some(Move::Last(_)) => fs.len(),
                        Some(Move::After(_, r)) => {
                            index_of(r).ok_or_else(|| column_not_found(table, r))? + 1
                        }
                        Some(Move::Before(_, r)) => {
                            index_of(r).ok_or_else(|| column_not_found(table, r))?
                        }
                        None if add_before_partition && top && !partition_keys.is_empty() => fs
                            .iter()
                            .position(|f| partition_keys.contains(&f.name))
                            .unwrap_or(fs.len()),
                        None => fs.len(),
                    };
                    fs.insert(at, field);
                    Ok(())
                })?;
            }
            SchemaChange::RenameColumn {
                field_names,
                new_name,
            } => {
                if let Some(n) = single(field_names) {
                    if old.partition_keys.contains(&n) {
                        return Err(refuse(format!("Cannot rename partition column: [{n}]")));
                    }
                    // Java's assertNotRenamingBlobColumn: a `.blob` file names its column (its
                    // writeCols), so a renamed one would no longer be found by readers
                    if fields.iter().any(|f| {
                        f.name == n && crate::io::blob_nested::is_blob_file_type(&f.data_type)
                    }) {
                        return Err(refuse(format!(
                            "Cannot rename BLOB, ARRAY<BLOB> or MAP<X, BLOB> column: [{n}]"
                        )));
                    }
                    renames.push((n, new_name.clone()));
                }
                modify_nested(&mut fields, field_names, table, |fs, name| {
                    if !fs.iter().any(|f| f.name == name) {
                        return Err(column_not_found(table, &dotted(field_names, name)));
                    }
                    if fs.iter().any(|f| &f.name == new_name) {
                        return Err(column_exists(table, &dotted(field_names, new_name)));
                    }
                    if let Some(f) = fs.iter_mut().find(|f| f.name == name) {
                        f.name = new_name.clone();
                    }
                    Ok(())
                })?;
            }
            SchemaChange::DropColumn { field_names } => {
                if let Some(n) = single(field_names) {
                    if old.partition_keys.contains(&n) || old.primary_keys.contains(&n) {
                        return Err(refuse(format!(
                            "Cannot drop partition key or primary key: [{n}]"
                        )));
                    }
                }
                modify_nested(&mut fields, field_names, table, |fs, name| {
                    let i = fs
                        .iter()
                        .position(|f| f.name == name)
                        .ok_or_else(|| column_not_found(table, &dotted(field_names, name)))?;
                    fs.remove(i);
                    if fs.is_empty() {
                        return Err(refuse("Cannot drop all fields in table"));
                    }
                    Ok(())
                })?;
                if let Some(n) = single(field_names) {
                    // options naming the dropped column (fields.<col>.*) go with it
                    let prefix = format!("fields.{n}.");
                    options.retain(|k, _| !k.starts_with(&prefix));
                }
            }
            SchemaChange::UpdateColumnType {
                field_names,
                data_type,
                keep_nullability,
            } => {
                if let Some(n) = single(field_names) {
                    if old.partition_keys.contains(&n) {
                        return Err(refuse(format!("Cannot update partition column: [{n}]")));
                    }
                    if old.primary_keys.contains(&n) {
                        return Err(refuse("Cannot update primary key"));
                    }
                }
                modify_nested(&mut fields, field_names, table, |fs, name| {
                    let f = fs
                        .iter_mut()
                        .find(|f| f.name == name)
                        .ok_or_else(|| column_not_found(table, &dotted(field_names, name)))?;
                    let source = &f.data_type;
                    let mut target = data_type.clone();
                    if *keep_nullability {
                        target.nullable = source.nullable;
                    } else {
                        check_nullability_change(
                            source.nullable,
                            target.nullable,
                            &field_names.join("."),
                            disable_null_to_not_null,
                        )?;
                    }
                    if !java_supports_cast(source, &target, !disable_explicit) {
                        // Java's words; for a nested type they mislead ("losing information"
                        // of MAP<INT, X> -> MAP<BIGINT, X>), so say what the rule is.
                        let nested = if source.is_nested() || target.is_nested() {
                            " (a nested column keeps its type: only the fields of nested ROW \
                             types, also inside ARRAY elements and MAP values, can be altered, by \
                             their path)"
                        } else {
                            ""
                        };
                        return Err(refuse(format!(
                            "Column type {}[{}] cannot be converted to {} without losing \
                             information.{nested}",
                            f.name,
                            source.sql_string(),
                            target.sql_string()
                        )));
                    }
                    if !crate::read::evolution::same_type(source, &target)
                        && (source.is_nested() || !cast_supported(source, &target))
                    {
                        return Err(Error::unsupported(format!(
                            "changing column '{}' from {} to {}: Paimon allows this cast, but \
                             paimon_rs cannot apply it when reading the files written before the \
                             change (it reads widening numeric, DECIMAL, VARCHAR/VARBINARY \
                             length, TIMESTAMP/TIME precision, DATE to TIMESTAMP, \
                             integer/boolean to string, string to integer, casts between \
                             integers and FLOAT/DOUBLE, and between DECIMALs and integers)",
                            field_names.join("."),
                            source.sql_string(),
                            target.sql_string()
                        )));
                    }
                    if let TypeKind::Row(_) = target.kind {
                        // keep the ids of the nested fields: an equal ROW type
                        target = source.clone().with_nullable(target.nullable);
                    }
                    f.data_type = target;
                    Ok(())
                })?;
            }
            SchemaChange::UpdateColumnNullability {
                field_names,
                nullable,
            } => {
                if *nullable {
                    if let Some(n) = single(field_names) {
                        if old.primary_keys.contains(&n) {
                            return Err(refuse("Cannot change nullability of primary key"));
                        }
                    }
                }
                modify_nested(&mut fields, field_names, table, |fs, name| {
                    let f = fs
                        .iter_mut()
                        .find(|f| f.name == name)
                        .ok_or_else(|| column_not_found(table, &field_names.join(".")))?;
                    check_nullability_change(
                        f.data_type.nullable,
                        *nullable,
                        &field_names.join("."),
                        disable_null_to_not_null,
                    )?;
                    f.data_type.nullable = *nullable;
                    Ok(())
                })?;
            }
            SchemaChange::UpdateColumnComment {
                field_names,
                comment: c,
            } => {
                modify_nested(&mut fields, field_names, table, |fs, name| {
                    let f = fs
                        .iter_mut()
                        .find(|f| f.name == name)
                        .ok_or_else(|| column_not_found(table, &field_names.join(".")))?;
                    f.description = c.clone();
                    Ok(())
                })?;
            }
            SchemaChange::UpdateColumnPosition(mv) => apply_move(&mut fields, mv)?,
        }
    }
    let rename = |c: &String| -> String {
        renames
            .iter()
            .find(|(from, _)| from == c)
            .map(|(_, to)| to.clone())
            .unwrap_or_else(|| c.clone())
    };
    let primary_keys: Vec<String> = old.primary_keys.iter().map(rename).collect();
    rename_in_options(&mut options, &renames);
    Ok(TableSchema {
        version: old.version,
        id: old.id + 1,
        fields,
        highest_field_id: highest,
        partition_keys: old.partition_keys.clone(),
        primary_keys,
        options,
        comment,
        time_millis: chrono::Utc::now().timestamp_millis(),
    })
}

fn check_nullability_change(old: bool, new: bool, field: &str, disabled: bool) -> Result<()> {
    if disabled && old && !new {
        return Err(refuse(format!(
            "Cannot update column type from nullable to non nullable for {field}. You can set \
             table configuration option 'alter-column-null-to-not-null.disabled' = 'false' to \
             allow converting null columns to not null"
        )));
    }
    Ok(())
}

/// Java's `applyRenameColumnsToOptions`: column names in `bucket-key`, `sequence.field`, and the
/// `fields.<col>.*` keys follow a rename.
fn rename_in_options(
    options: &mut std::collections::BTreeMap<String, String>,
    renames: &[(String, String)],
) {
    if renames.is_empty() {
        return;
    }
    let map = |s: &str| -> String {
        s.split(',')
            .map(|c| {
                renames
                    .iter()
                    .rev()
                    .find(|(from, _)| from == c)
                    .map(|(_, to)| to.as_str())
                    .unwrap_or(c)
                    .to_string()
            })
            .collect::<Vec<_>>()
            .join(",")
    };
    for key in ["bucket-key", "sequence.field"] {
        if let Some(v) = options.get(key).cloned() {
            if !v.trim().is_empty() {
                options.insert(key.to_string(), map(&v));
            }
        }
    }
    let keys: Vec<String> = options
        .keys()
        .filter(|k| k.starts_with("fields."))
        .cloned()
        .collect();
    for key in keys {
        let rest = &key["fields.".len()..];
        let Some((cols, suffix)) = rest.rsplit_once('.') else {
            continue;
        };
        let renamed_value = matches!(suffix, "sequence-group" | "nested-key");
        let new_key = format!("fields.{}.{suffix}", map(cols));
        if new_key != key || renamed_value {
            if let Some(v) = options.remove(&key) {
                let v = if renamed_value { map(&v) } else { v };
                options.insert(new_key, v);
            }
        }
    }
}

/// Validate `new` as Java's `SchemaValidation.validateTableSchema` would (through the checks
/// of a new table), and refuse a schema paimon_rs could no longer read, or no longer write
/// when it could write `old`.
fn validate(old: &TableSchema, new: &TableSchema, table: &str) -> Result<()> {
    let pk = !new.primary_keys.is_empty();
    let writable_before = CoreOptions::new(&old.options, pk)
        .and_then(|o| super::check_options(&o, pk, true))
        .is_ok();
    let decl = NewTableSchema {
        fields: new
            .fields
            .iter()
            .map(|f| (f.name.clone(), f.data_type.clone()))
            .collect(),
        partition_keys: new.partition_keys.clone(),
        primary_keys: new.primary_keys.clone(),
        options: new.options.clone(),
        comment: new.comment.clone(),
        descriptions: new
            .fields
            .iter()
            .filter_map(|f| Some((f.name.clone(), f.description.clone()?)))
            .collect(),
    };
    decl.build(writable_before).map_err(|e| match e {
        Error::Unsupported { message, .. } if writable_before => Error::Unsupported {
            table: Some(table.to_string()),
            message: format!(
                "{message} (refused: after this change paimon_rs could no longer write the table)"
            ),
        },
        e => e,
    })?;
    Ok(())
}

/// A column whose type changes must be readable as the new type from the files of every
/// earlier schema too (a file is read from its own schema's type straight to the current one,
/// as Java does): e.g. DOUBLE -> INT -> DECIMAL(12, 0) is two casts paimon_rs applies, but
/// the DOUBLE files would be read as DECIMAL, which it does not.
fn older_files_readable(path: &Path, old: &TableSchema, new: &TableSchema) -> Result<()> {
    use crate::read::evolution::{field_by_id, same_type};
    let changed: Vec<&DataField> = new
        .fields
        .iter()
        .filter(|f| field_by_id(old, f.id).is_some_and(|o| !same_type(&o.data_type, &f.data_type)))
        .collect();
    if changed.is_empty() {
        return Ok(());
    }
    let dir = path.join("schema");
    for id in snapshot_manager::ids_in(&dir, "schema-")? {
        if id >= old.id {
            continue;
        }
        let s = snapshot_manager::read_schema(path, id)?;
        for f in &changed {
            let Some(was) = field_by_id(&s, f.id) else {
                continue;
            };
            let (a, b) = (&was.data_type, &f.data_type);
            // nested types evolve field by field (by id), checked as each change is made
            if !a.is_nested() && !b.is_nested() && !same_type(a, b) && !cast_supported(a, b) {
                return Err(Error::unsupported(format!(
                    "changing column '{}' to {}: the files written under schema {id} hold it as \
                     {}, which paimon_rs cannot read as {} (a file is read from its own \
                     schema's type straight to the current one)",
                    f.name,
                    b.sql_string(),
                    a.sql_string(),
                    b.sql_string()
                )));
            }
        }
    }
    Ok(())
}

/// Apply `changes` to the table at `path` (named `table` in messages) and commit the new schema:
/// `schema-<latest+1>` created exclusively; when a concurrent alter took that id, the changes
/// are applied again on top of it (Java's `commitChanges` loop). Returns the new schema.
pub fn commit_changes(path: &Path, table: &str, changes: &[SchemaChange]) -> Result<TableSchema> {
    const MAX_ATTEMPTS: usize = 100;
    let snapshots = SnapshotManager::new(path);
    let mut has: Option<bool> = None;
    for _ in 0..MAX_ATTEMPTS {
        let old = snapshot_manager::latest_schema(path)?
            .ok_or_else(|| Error::TableNotFound(table.to_string()))?;
        let new = generate_table_schema(
            &old,
            changes,
            || {
                if has.is_none() {
                    has = Some(snapshots.latest_id()?.is_some());
                }
                Ok(has.unwrap_or(false))
            },
            table,
        )
        .map_err(|e| e.with_table(table))?;
        validate(&old, &new, table).map_err(|e| e.with_table(table))?;
        older_files_readable(path, &old, &new).map_err(|e| e.with_table(table))?;
        if snapshot_manager::create_schema(path, &new)? {
            return Ok(new);
        }
        has = None; // a concurrent writer may have committed meanwhile
    }
    Err(Error::CommitConflict {
        table: table.to_string(),
        message: format!(
            "altering the schema gave up after {MAX_ATTEMPTS} attempts: other alters kept \
             taking the next schema id"
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::types::TypeKind::*;

    fn schema() -> TableSchema {
        TableSchema {
            version: 3,
            id: 0,
            fields: vec![
                DataField::new(0, "id", DataType::new(BigInt).not_null()),
                DataField::new(1, "a", DataType::new(Int)),
                DataField::new(2, "b", DataType::new(VarChar(10))),
            ],
            highest_field_id: 2,
            partition_keys: vec![],
            primary_keys: vec!["id".into()],
            options: [("bucket".to_string(), "1".to_string())].into(),
            comment: None,
            time_millis: 0,
        }
    }

    fn apply(changes: &[SchemaChange]) -> Result<TableSchema> {
        generate_table_schema(&schema(), changes, || Ok(true), "db.t")
    }

    #[test]
    fn moves_follow_javas_apply_move() {
        let names = |mv: Move| -> Vec<String> {
            let s = apply(&[SchemaChange::UpdateColumnPosition(mv)]).unwrap();
            s.field_names()
        };
        assert_eq!(
            names(Move::After("id".into(), "b".into())),
            ["a", "b", "id"]
        );
        assert_eq!(
            names(Move::Before("b".into(), "id".into())),
            ["b", "id", "a"]
        );
        assert_eq!(
            names(Move::Before("id".into(), "b".into())),
            ["a", "id", "b"]
        );
        assert_eq!(names(Move::Last("a".into())), ["id", "b", "a"]);
    }

    #[test]
    fn added_row_column_takes_ids_after_highest() {
        let row = DataType::new(Row(vec![
            DataField::new(0, "x", DataType::new(Int)),
            DataField::new(0, "y", DataType::new(Int)),
        ]));
        let s = apply(&[SchemaChange::AddColumn {
            field_names: vec!["r".into()],
            data_type: row,
            comment: None,
            move_: None,
        }])
        .unwrap();
        assert_eq!(s.id, 1);
        assert_eq!(s.highest_field_id, 5);
        let TypeKind::Row(fs) = &s.fields[3].data_type.kind else {
            panic!("not a row")
        };
        assert_eq!((s.fields[3].id, fs[0].id, fs[1].id), (3, 4, 5));
    }

    #[test]
    fn blob_file_columns_keep_their_names() {
        let mut base = schema();
        base.primary_keys.clear();
        let blob = DataType::new(Blob);
        base.fields.push(DataField::new(3, "pic", blob.clone()));
        base.fields.push(DataField::new(
            4,
            "pics",
            DataType::new(Array(Box::new(blob))),
        ));
        let rename = |from: &str| {
            let change = SchemaChange::RenameColumn {
                field_names: vec![from.into()],
                new_name: format!("{from}2"),
            };
            generate_table_schema(&base, &[change], || Ok(true), "db.t")
        };
        for col in ["pic", "pics"] {
            let err = rename(col).unwrap_err().to_string();
            assert!(
                err.contains(&format!(
                    "Cannot rename BLOB, ARRAY<BLOB> or MAP<X, BLOB> column: [{col}]"
                )),
                "{err}"
            );
        }
        assert!(rename("a").is_ok());
    }

    #[test]
    fn casts_as_javas_data_type_casts() {
        let t = DataType::new;
        assert!(java_supports_cast(&t(Int), &t(BigInt), false));
        assert!(!java_supports_cast(&t(BigInt), &t(Int), false));
        assert!(java_supports_cast(&t(BigInt), &t(Int), true));
        assert!(java_supports_cast(&t(VarChar(10)), &t(VarChar(5)), false)); // same root
        assert!(!java_supports_cast(&t(BigInt), &t(Date), true));
        assert!(java_supports_cast(&t(Timestamp(3)), &t(Date), false));
        assert!(java_supports_cast(&t(Double), &t(VarChar(20)), true));
    }

    #[test]
    fn changes_parse_from_pypaimon_json() {
        let v: Value = serde_json::from_str(
            r#"{"action":"addColumn","fieldNames":["c"],"dataType":"BIGINT","comment":null,
                "move":{"fieldName":"c","referenceFieldName":"a","type":"AFTER"}}"#,
        )
        .unwrap();
        let c = SchemaChange::from_json(&v).unwrap();
        let s = apply(&[c]).unwrap();
        assert_eq!(s.field_names(), ["id", "a", "c", "b"]);
        let bad: Value = serde_json::from_str(r#"{"action":"frobnicate"}"#).unwrap();
        assert!(SchemaChange::from_json(&bad).is_err());
    }
}
