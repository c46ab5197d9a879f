//! What a user declares for a new table, and its validation into a `TableSchema` with Java
//! Paimon's checks and messages (`SchemaValidation.validateTableSchema`): shared by creating a
//! table (catalog) and by schema changes (alter), which re-validate the changed schema.

use std::collections::BTreeMap;

use arrow_schema::Schema as ArrowSchema;

use crate::error::{Error, Result};
use crate::options::CoreOptions;
use crate::spec::schema::{TableSchema, CURRENT_SCHEMA_VERSION};
use crate::spec::types::{highest_field_id, reassign_nested_ids, DataField, DataType, TypeKind};

/// `e` (a type that does not parse or that paimon_rs cannot hold) with the column it is about
/// in its message, keeping its kind (an unsupported type stays `Unsupported`).
pub fn column_error(name: &str, e: Error) -> Error {
    match e {
        Error::Unsupported { message, .. } => {
            Error::unsupported(format!("column '{name}': {message}"))
        }
        Error::InvalidArgument { message, .. } => {
            Error::invalid(format!("column '{name}': {message}"))
        }
        e => Error::schema(format!("column '{name}': {e}")),
    }
}

/// Pypaimon 2.1.0's `_validate_blob_fields` (Java's `SchemaValidation` of BLOB columns), on
/// create: BLOB, `ARRAY<BLOB>` and `MAP<X, BLOB>` columns live in `.blob` files of an append
/// table with row tracking and data evolution, beside at least one normal column, never a key
/// nor a partition; a BLOB nested anywhere else is refused, and so is a `MAP<X, BLOB>` whose
/// key type has no serialization (pypaimon refuses it at write).
fn validate_blob_fields(decl: &NewTableSchema) -> Result<()> {
    use crate::io::blob_nested::{check_key_type, is_blob_file_type};
    let blobs: Vec<&str> = decl
        .fields
        .iter()
        .filter(|(_, t)| is_blob_file_type(t))
        .map(|(n, _)| n.as_str())
        .collect();
    for (name, t) in &decl.fields {
        if let TypeKind::Map(k, v) = &t.kind {
            if v.is_blob() && k.is_blob() {
                // `map<large_binary, large_binary>`: pypaimon creates `MAP<BLOB NOT NULL, BLOB>`
                // and refuses its key type when writing (Java's `MapBlobElementSerializer` too)
                check_key_type(k).map_err(|e| column_error(name, e))?;
            }
        }
        if t.contains_blob() && !is_blob_file_type(t) {
            return Err(Error::invalid(format!(
                "Field '{name}' has unsupported nested BLOB type {}. BLOB is only supported as a \
                 top-level BLOB, ARRAY<BLOB>, or MAP<X, BLOB> field.",
                t.sql_string()
            )));
        }
        if let TypeKind::Map(k, v) = &t.kind {
            if v.is_blob() {
                check_key_type(k).map_err(|e| column_error(name, e))?;
            }
        }
    }
    if blobs.is_empty() {
        check_inline_blob_fields(decl)?;
        return Ok(());
    }
    if decl.fields.len() <= blobs.len() {
        return Err(Error::invalid(
            "Table with BLOB, ARRAY<BLOB> or MAP<X, BLOB> type column must have other normal \
             columns.",
        ));
    }
    check_inline_blob_fields(decl)?;
    let missing: Vec<String> = ["row-tracking.enabled", "data-evolution.enabled"]
        .iter()
        .filter(|k| decl.options.get(**k).map(String::as_str) != Some("true"))
        .map(|k| format!("{k}='true'"))
        .collect();
    if !missing.is_empty() {
        return Err(Error::invalid(format!(
            "Schema contains BLOB, ARRAY<BLOB> or MAP<X, BLOB> type but is missing required \
             options: {}. Please add these options to the schema.",
            missing.join(", ")
        )));
    }
    if !decl.primary_keys.is_empty() {
        return Err(Error::invalid(
            "BLOB, ARRAY<BLOB> or MAP<X, BLOB> type is not supported with primary key.",
        ));
    }
    if blobs
        .iter()
        .any(|b| decl.partition_keys.iter().any(|p| p == b))
    {
        return Err(Error::invalid(
            "The BLOB, ARRAY<BLOB> or MAP<X, BLOB> type column can not be part of partition \
             keys.",
        ));
    }
    Ok(())
}

/// Pypaimon 2.1.0's checks of `blob-descriptor-field` / `blob-view-field` (Java's
/// `SchemaValidation`): scalar BLOB columns only (`ARRAY<BLOB>` / `MAP<X, BLOB>` stay in `.blob`
/// files), in one of the two options, not both; the messages are pypaimon's.
fn check_inline_blob_fields(decl: &NewTableSchema) -> Result<()> {
    let (descriptor, view) = crate::options::blob_inline_fields(&decl.options);
    let py_list = |names: Vec<&String>| {
        let quoted: Vec<String> = names.iter().map(|n| format!("'{n}'")).collect();
        format!("[{}]", quoted.join(", "))
    };
    let type_of = |n: &str| decl.fields.iter().find(|(f, _)| f == n).map(|(_, t)| t);
    let not_scalar: Vec<&String> = descriptor
        .union(&view)
        .filter(|n| !type_of(n).is_some_and(|t| t.is_blob()))
        .collect();
    if !not_scalar.is_empty() {
        let nested: Vec<&String> = not_scalar
            .iter()
            .copied()
            .filter(|n| type_of(n).is_some_and(crate::io::blob_nested::is_nested_blob))
            .collect();
        if !nested.is_empty() {
            return Err(Error::invalid(format!(
                "ARRAY<BLOB> and MAP<X, BLOB> are only supported by 'blob-field'. Invalid inline \
                 blob fields: {}",
                py_list(nested)
            )));
        }
        return Err(Error::invalid(format!(
            "Fields in 'blob-descriptor-field' or 'blob-view-field' must be blob fields in \
             schema. Non-BLOB fields: {}",
            py_list(not_scalar)
        )));
    }
    let overlap: Vec<&String> = descriptor.intersection(&view).collect();
    if !overlap.is_empty() {
        return Err(Error::invalid(format!(
            "Fields in 'blob-descriptor-field' and 'blob-view-field' must not overlap. \
             Overlapping fields: {}",
            py_list(overlap)
        )));
    }
    Ok(())
}

/// The Paimon type of a column of Arrow type `arrow` (pypaimon's `PyarrowFieldParser`):
/// `large_binary` is BLOB at any depth (a list of it `ARRAY<BLOB>`, a map to it `MAP<X, BLOB>`;
/// in a struct or a list of lists it is a nested BLOB that `create_table` refuses with
/// pypaimon's message, as pypaimon does); other types as [`DataType::from_arrow`].
pub fn column_type_from_arrow(arrow: &arrow_schema::DataType, nullable: bool) -> Result<DataType> {
    let mut t = DataType::from_arrow(arrow, nullable)?;
    blobs_at_any_depth(arrow, &mut t);
    Ok(t)
}

/// `t` (mapped from `arrow`, `large_binary` as BYTES) with those BYTES made BLOB, at any depth.
fn blobs_at_any_depth(arrow: &arrow_schema::DataType, t: &mut DataType) {
    use arrow_schema::DataType as A;
    match (arrow, &mut t.kind) {
        (A::LargeBinary, kind) => *kind = TypeKind::Blob,
        (
            A::List(e) | A::LargeList(e) | A::ListView(e) | A::LargeListView(e),
            TypeKind::Array(et),
        )
        | (A::FixedSizeList(e, _), TypeKind::Array(et)) => blobs_at_any_depth(e.data_type(), et),
        (A::Map(entries, _), TypeKind::Map(kt, vt)) => {
            if let A::Struct(fs) = entries.data_type() {
                if let [k, v] = &fs[..] {
                    blobs_at_any_depth(k.data_type(), kt);
                    blobs_at_any_depth(v.data_type(), vt);
                }
            }
        }
        (A::Struct(fs), TypeKind::Row(rf)) if fs.len() == rf.len() => {
            for (f, r) in fs.iter().zip(rf.iter_mut()) {
                blobs_at_any_depth(f.data_type(), &mut r.data_type);
            }
        }
        _ => {}
    }
}

/// What a user declares for a new table (pypaimon's `Schema`).
#[derive(Debug, Clone)]
pub struct NewTableSchema {
    pub fields: Vec<(String, DataType)>,
    pub partition_keys: Vec<String>,
    pub primary_keys: Vec<String>,
    pub options: BTreeMap<String, String>,
    pub comment: Option<String>,
    /// Column comments by column name (the schema file's `description`).
    pub descriptions: BTreeMap<String, String>,
}

impl NewTableSchema {
    pub fn from_arrow(
        schema: &ArrowSchema,
        partition_keys: Vec<String>,
        primary_keys: Vec<String>,
        options: BTreeMap<String, String>,
        comment: Option<String>,
    ) -> Result<Self> {
        let fields = schema
            .fields()
            .iter()
            .map(|f| {
                let t = column_type_from_arrow(f.data_type(), f.is_nullable())
                    .map_err(|e| Error::schema(format!("column '{}': {e}", f.name())))?;
                Ok((f.name().clone(), t))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(NewTableSchema {
            fields,
            partition_keys,
            primary_keys,
            options,
            comment,
            descriptions: BTreeMap::new(),
        })
    }

    /// The declaration from Paimon-typed columns (pypaimon's `Schema(fields=[DataField...])`):
    /// `fields` is a JSON list of the schema file's field objects (`{"name", "type",
    /// "description"}`; an `id` is ignored, ids are assigned as on every create). Types Arrow
    /// cannot name (`VARCHAR(10)`, `CHAR(3)`, `TIME(3)`, `MULTISET<..>`) are kept exactly.
    pub fn from_fields_json(
        fields: &str,
        partition_keys: Vec<String>,
        primary_keys: Vec<String>,
        options: BTreeMap<String, String>,
        comment: Option<String>,
    ) -> Result<Self> {
        let v: serde_json::Value = serde_json::from_str(fields)
            .map_err(|e| Error::invalid(format!("schema fields: bad JSON: {e}")))?;
        let list = v
            .as_array()
            .ok_or_else(|| Error::invalid(format!("schema fields: not a list: {v}")))?;
        let mut out = Vec::with_capacity(list.len());
        let mut descriptions = BTreeMap::new();
        for f in list {
            let name = f
                .get("name")
                .and_then(serde_json::Value::as_str)
                .ok_or_else(|| Error::schema(format!("field without a name: {f}")))?;
            let t = f
                .get("type")
                .ok_or_else(|| Error::schema(format!("column '{name}' without a type")))?;
            let t = DataType::from_json(t).map_err(|e| column_error(name, e))?;
            if let Some(d) = f.get("description").and_then(serde_json::Value::as_str) {
                descriptions.insert(name.to_string(), d.to_string());
            }
            out.push((name.to_string(), t));
        }
        Ok(NewTableSchema {
            fields: out,
            partition_keys,
            primary_keys,
            options,
            comment,
            descriptions,
        })
    }

    /// Validate and assign field ids, as Paimon does on create.
    pub fn into_table_schema(self) -> Result<TableSchema> {
        self.build(true)
    }

    /// [`Self::into_table_schema`]; `for_write`: also refuse options paimon_rs cannot write
    /// (an altered schema of a table only read is checked as for a read).
    pub(crate) fn build(self, for_write: bool) -> Result<TableSchema> {
        let mut seen = std::collections::HashSet::new();
        for (n, _) in &self.fields {
            if n.is_empty() {
                return Err(Error::schema("empty column name"));
            }
            if !seen.insert(n.as_str()) {
                return Err(Error::schema(format!("duplicate column '{n}'")));
            }
            if n.starts_with("_KEY_") || n == "_SEQUENCE_NUMBER" || n == "_VALUE_KIND" {
                return Err(Error::schema(format!(
                    "column name '{n}' is reserved by Paimon"
                )));
            }
        }
        for (what, keys) in [
            ("partition key", &self.partition_keys),
            ("primary key", &self.primary_keys),
        ] {
            let mut ks = std::collections::HashSet::new();
            for k in keys.iter() {
                if !seen.contains(k.as_str()) {
                    return Err(Error::schema(format!("{what} '{k}' is not a column")));
                }
                if !ks.insert(k) {
                    return Err(Error::schema(format!("{what} '{k}' listed twice")));
                }
            }
        }
        validate_blob_fields(&self)?;
        let pk = !self.primary_keys.is_empty();
        let opts = CoreOptions::new(&self.options, pk)?;
        if pk {
            // A primary key without every partition key: with `bucket` = -1 a cross-partition
            // upsert table (a key unique in the whole table, write/cross_partition.rs); with
            // fixed buckets Java (since apache/paimon#6307) keeps no global index, so a key is
            // unique within its partition only (its input's changelog keeps it unique across)
            for p in &self.partition_keys {
                if !self.primary_keys.contains(p) && self.options.contains_key("sequence.field") {
                    // Java's SchemaValidation
                    return Err(Error::schema(format!(
                        "You can not use sequence.field in cross partition update case \
                         (Primary key constraint {} not include all partition fields {}).",
                        java_list(&self.primary_keys),
                        java_list(&self.partition_keys)
                    )));
                }
            }
            // Java's TableSchema.trimmedPrimaryKeys: the key without the partition keys is empty
            if self
                .primary_keys
                .iter()
                .all(|k| self.partition_keys.contains(k))
            {
                return Err(Error::schema(format!(
                    "Primary key constraint {} should not be same with partition fields {}, this \
                     will result in only one record in a partition",
                    java_list(&self.primary_keys),
                    java_list(&self.partition_keys)
                )));
            }
        }
        if let Some(rk) = self.options.get("rowkind.field") {
            if !seen.contains(rk.as_str()) {
                return Err(Error::schema(format!(
                    "option 'rowkind.field': Rowkind field: '{rk}' can not be found in table \
                     schema."
                )));
            }
        }
        // Ids as Java's Schema.Builder assigns them: each column, then its nested fields depth
        // first, from one counter.
        let mut fields = Vec::with_capacity(self.fields.len());
        let mut next = 0i32;
        for (name, mut t) in self.fields.into_iter() {
            let is_key = self.primary_keys.contains(&name) || self.partition_keys.contains(&name);
            if is_key && t.is_nested() {
                let what = if self.primary_keys.contains(&name) {
                    "primary key"
                } else {
                    "partition"
                };
                return Err(Error::schema(format!(
                    "column '{name}' of type {}: The type {} in {what} field {name} is \
                     unsupported",
                    t.sql_string(),
                    java_type_class(&t)
                )));
            }
            if self.primary_keys.contains(&name) {
                t.nullable = false; // Paimon forces primary-key columns NOT NULL
            }
            let id = next;
            next += 1;
            reassign_nested_ids(&mut t, &mut next);
            let mut f = DataField::new(id, name, t);
            f.description = self.descriptions.get(&f.name).cloned();
            fields.push(f);
        }
        if let Some(bk) = &opts.bucket_key {
            // Java's TableSchema and SchemaValidation.validateBucket, in their order
            let names: Vec<String> = fields.iter().map(|f| f.name.clone()).collect();
            let (bks, missing) = (java_list(bk), |ks: &[String]| {
                bk.iter().any(|k| !ks.contains(k))
            });
            if missing(&names) {
                return Err(Error::schema(format!(
                    "option 'bucket-key': Field names {} should contains all bucket keys {bks}.",
                    java_list(&names)
                )));
            }
            if bk.iter().any(|k| self.partition_keys.contains(k)) {
                return Err(Error::schema(format!(
                    "option 'bucket-key': Bucket keys {bks} should not in partition keys {}.",
                    java_list(&self.partition_keys)
                )));
            }
            if pk && missing(&self.primary_keys) {
                return Err(Error::schema(format!(
                    "option 'bucket-key': Primary keys {} should contains all bucket keys {bks}.",
                    java_list(&self.primary_keys)
                )));
            }
            if opts.bucket == -1 {
                return Err(Error::invalid(
                    "option 'bucket-key': Cannot define 'bucket-key' with bucket = -1, please \
                     remove the 'bucket-key' setting or specify a bucket number.",
                ));
            }
            let nested: Vec<String> = fields
                .iter()
                .filter(|f| bk.contains(&f.name) && f.data_type.is_nested())
                .map(|f| f.name.clone())
                .collect();
            if !nested.is_empty() {
                return Err(Error::schema(format!(
                    "option 'bucket-key': nested type can not in bucket-key, in your table these \
                     key are {}",
                    java_list(&nested)
                )));
            }
        }
        let highest = highest_field_id(&fields);
        let schema = TableSchema {
            version: CURRENT_SCHEMA_VERSION,
            id: 0,
            fields,
            highest_field_id: highest,
            partition_keys: self.partition_keys,
            primary_keys: self.primary_keys,
            options: self.options,
            comment: self.comment,
            time_millis: chrono::Utc::now().timestamp_millis(),
        };
        if pk {
            // merge-engine options (fields.*, sequence.field, ...) checked against the columns
            crate::merge::MergeEngine::new("", &schema, &opts)?;
        }
        // after the definition's own checks, so a definition Java refuses gets Java's sentence
        // even where paimon_rs could not write the table anyway
        super::check_options(&opts, pk, for_write)?;
        if for_write {
            crate::fileindex::check_options(&opts.raw, &schema.fields)?;
            crate::io::format::check_write_format("", &schema.fields, &opts)?;
        }
        Ok(schema)
    }
}

/// A list as Java's `List.toString` prints it (`[a, b]`), for messages in Java's words.
fn java_list(items: &[String]) -> String {
    format!("[{}]", items.join(", "))
}

/// The simple class name of a nested type in Java (`ArrayType`), as Java's messages print it.
fn java_type_class(t: &crate::spec::types::DataType) -> &'static str {
    use crate::spec::types::TypeKind;
    match t.kind {
        TypeKind::Array(_) => "ArrayType",
        TypeKind::Multiset(_) => "MultisetType",
        TypeKind::Map(..) => "MapType",
        TypeKind::Variant => "VariantType",
        _ => "RowType",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decl(fields: &str, pk: &[&str]) -> Result<TableSchema> {
        NewTableSchema::from_fields_json(
            fields,
            vec![],
            pk.iter().map(|s| s.to_string()).collect(),
            BTreeMap::new(),
            None,
        )?
        .into_table_schema()
    }

    #[test]
    fn paimon_typed_fields_keep_types_arrow_cannot_name_and_their_comments() {
        let s = decl(
            r#"[{"id": 7, "name": "k", "type": "INT"},
                {"id": 9, "name": "c", "type": "VARCHAR(10)", "description": "a code"},
                {"id": 1, "name": "t", "type": "TIME(3)"},
                {"id": 2, "name": "m", "type": {"type": "MULTISET", "element": "CHAR(2)"}},
                {"id": 3, "name": "r", "type": {"type": "ROW", "fields": [
                    {"id": 0, "name": "x", "type": "BIGINT", "description": "inner"}]}}]"#,
            &["k"],
        )
        .unwrap();
        let types: Vec<String> = s
            .fields
            .iter()
            .map(|f| f.data_type.to_json().to_string())
            .collect();
        assert_eq!(types[0], r#""INT NOT NULL""#); // primary key: NOT NULL, as on every create
        assert_eq!(types[1], r#""VARCHAR(10)""#);
        assert_eq!(types[2], r#""TIME(3)""#);
        assert_eq!(types[3], r#"{"element":"CHAR(2)","type":"MULTISET"}"#);
        assert!(
            types[4].contains(r#""description":"inner""#),
            "{}",
            types[4]
        );
        // ids assigned as on create (the given ids are not kept): columns, then nested fields
        let ids: Vec<i32> = s.fields.iter().map(|f| f.id).collect();
        assert_eq!(ids, vec![0, 1, 2, 3, 4]);
        assert_eq!(s.fields[1].description.as_deref(), Some("a code"));
        assert_eq!(s.fields[0].description, None);
    }

    #[test]
    fn types_paimon_rs_cannot_hold_are_refused_naming_the_column() {
        let json =
            r#"[{"name": "e", "type": {"type": "VECTOR", "element": "FLOAT", "length": 3}}]"#;
        let e = decl(json, &[]).unwrap_err();
        assert!(matches!(e, Error::Unsupported { .. }), "{e}");
        assert!(e.to_string().contains("column 'e'"), "{e}");
        let e = decl(r#"[{"name": "a"}]"#, &[]).unwrap_err();
        assert!(e.to_string().contains("column 'a' without a type"), "{e}");
    }

    #[test]
    fn variant_is_a_value_column_never_a_key_or_partition() {
        let s = decl(
            r#"[{"name": "id", "type": "INT"}, {"name": "v", "type": "VARIANT"}]"#,
            &["id"],
        )
        .unwrap();
        assert_eq!(
            s.fields[1].data_type.to_json(),
            serde_json::json!("VARIANT")
        );
        // Java's SchemaValidation.PRIMARY_KEY_UNSUPPORTED_LOGICAL_TYPES lists VariantType
        let e = decl(
            r#"[{"name": "id", "type": "INT"}, {"name": "v", "type": "VARIANT"}]"#,
            &["v"],
        )
        .unwrap_err();
        assert!(
            e.to_string()
                .contains("The type VariantType in primary key field v is unsupported"),
            "{e}"
        );
        let e = NewTableSchema::from_fields_json(
            r#"[{"name": "id", "type": "INT"}, {"name": "v", "type": "VARIANT"}]"#,
            vec!["v".into()],
            vec![],
            BTreeMap::new(),
            None,
        )
        .and_then(|n| n.into_table_schema())
        .unwrap_err();
        assert!(
            e.to_string()
                .contains("The type VariantType in partition field v is unsupported"),
            "{e}"
        );
    }
}
