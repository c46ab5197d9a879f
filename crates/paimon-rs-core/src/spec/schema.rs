//! `schema/schema-N` files (paimon-format.md §2).

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

use super::types::{highest_field_id, DataField, DataType};
use crate::error::{Error, Result};

#[derive(Debug, Clone, PartialEq)]
pub struct TableSchema {
    pub version: i32,
    pub id: i64,
    pub fields: Vec<DataField>,
    pub highest_field_id: i32,
    pub partition_keys: Vec<String>,
    pub primary_keys: Vec<String>,
    pub options: BTreeMap<String, String>,
    pub comment: Option<String>,
    pub time_millis: i64,
}

pub const CURRENT_SCHEMA_VERSION: i32 = 3;

impl TableSchema {
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("version".into(), json!(self.version));
        m.insert("id".into(), json!(self.id));
        m.insert(
            "fields".into(),
            Value::Array(self.fields.iter().map(DataField::to_json).collect()),
        );
        m.insert("highestFieldId".into(), json!(self.highest_field_id));
        m.insert("partitionKeys".into(), json!(self.partition_keys));
        m.insert("primaryKeys".into(), json!(self.primary_keys));
        m.insert("options".into(), json!(self.options));
        // Java reads a JSON null comment as the string "null": omit it instead.
        if let Some(c) = &self.comment {
            m.insert("comment".into(), json!(c));
        }
        m.insert("timeMillis".into(), json!(self.time_millis));
        Value::Object(m)
    }

    pub fn to_json_string(&self) -> String {
        // serde_json::Value always serializes
        serde_json::to_string_pretty(&self.to_json()).unwrap_or_default()
    }

    pub fn from_json(v: &Value) -> Result<Self> {
        let version = v.get("version").and_then(Value::as_i64).unwrap_or(1) as i32;
        let id = v
            .get("id")
            .and_then(Value::as_i64)
            .ok_or_else(|| Error::invalid("schema without 'id'"))?;
        let fields = v
            .get("fields")
            .and_then(Value::as_array)
            .ok_or_else(|| Error::invalid("schema without 'fields'"))?
            .iter()
            .map(DataField::from_json)
            .collect::<Result<Vec<_>>>()?;
        let strs = |k: &str| -> Vec<String> {
            v.get(k)
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(|x| x.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default()
        };
        let mut options: BTreeMap<String, String> = v
            .get("options")
            .and_then(Value::as_object)
            .map(|o| {
                o.iter()
                    .map(|(k, x)| {
                        let s = match x {
                            Value::String(s) => s.clone(),
                            other => other.to_string(),
                        };
                        (k.clone(), s)
                    })
                    .collect()
            })
            .unwrap_or_default();
        // Version defaults (§2): v<=1 missing bucket means 1; v<=2 missing file.format means orc.
        if version <= 1 && !options.contains_key("bucket") {
            options.insert("bucket".into(), "1".into());
        }
        if version <= 2 && !options.contains_key("file.format") {
            options.insert("file.format".into(), "orc".into());
        }
        let highest = v
            .get("highestFieldId")
            .and_then(Value::as_i64)
            .map(|x| x as i32)
            .unwrap_or_else(|| highest_field_id(&fields));
        Ok(TableSchema {
            version,
            id,
            fields,
            highest_field_id: highest,
            partition_keys: strs("partitionKeys"),
            primary_keys: strs("primaryKeys"),
            options,
            comment: v.get("comment").and_then(Value::as_str).map(str::to_string),
            time_millis: v.get("timeMillis").and_then(Value::as_i64).unwrap_or(0),
        })
    }

    pub fn field(&self, name: &str) -> Option<&DataField> {
        self.fields.iter().find(|f| f.name == name)
    }
    pub fn field_index(&self, name: &str) -> Option<usize> {
        self.fields.iter().position(|f| f.name == name)
    }
    pub fn field_names(&self) -> Vec<String> {
        self.fields.iter().map(|f| f.name.clone()).collect()
    }
    /// Primary key columns minus partition columns, in primary-key order.
    pub fn trimmed_primary_keys(&self) -> Vec<String> {
        self.primary_keys
            .iter()
            .filter(|k| !self.partition_keys.contains(k))
            .cloned()
            .collect()
    }
    pub fn fields_of(&self, names: &[String]) -> Result<Vec<DataField>> {
        names
            .iter()
            .map(|n| {
                self.field(n)
                    .cloned()
                    .ok_or_else(|| Error::schema(format!("column '{n}' is not in the schema")))
            })
            .collect()
    }
    pub fn types_of(&self, names: &[String]) -> Result<Vec<DataType>> {
        Ok(self
            .fields_of(names)?
            .into_iter()
            .map(|f| f.data_type)
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pypaimon_schema_parses() {
        let v: Value = serde_json::from_str(
            r#"{"version":3,"id":0,"fields":[{"id":0,"name":"dt","type":"STRING NOT NULL"},
            {"id":1,"name":"id","type":"INT NOT NULL"},{"id":2,"name":"name","type":"STRING"}],
            "highestFieldId":2,"partitionKeys":["dt"],"primaryKeys":["dt","id"],
            "options":{"bucket":"2","file.format":"parquet"},"comment":null,"timeMillis":17}"#,
        )
        .unwrap();
        let s = TableSchema::from_json(&v).unwrap();
        assert_eq!(s.trimmed_primary_keys(), vec!["id".to_string()]);
        assert_eq!(s.comment, None);
        let back = s.to_json();
        assert!(back.get("comment").is_none());
        assert_eq!(TableSchema::from_json(&back).unwrap(), s);
    }

    #[test]
    fn old_versions_get_defaults() {
        let v = json!({"id": 0, "fields": []});
        let s = TableSchema::from_json(&v).unwrap();
        assert_eq!(s.options.get("bucket").map(String::as_str), Some("1"));
        assert_eq!(
            s.options.get("file.format").map(String::as_str),
            Some("orc")
        );
    }
}
