//! Paimon's logical types: the schema-JSON grammar (paimon-format.md §2.1) and the mapping to
//! Arrow types used in data files and in the Python API.

use std::fmt;
use std::sync::Arc;

use arrow_schema::{DataType as ArrowType, Field as ArrowField, Fields, TimeUnit};
use serde_json::{json, Map, Value};

use crate::error::{Error, Result};

pub const MAX_LEN: u32 = i32::MAX as u32;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TypeKind {
    Boolean,
    TinyInt,
    SmallInt,
    Int,
    BigInt,
    Float,
    Double,
    Decimal {
        precision: u32,
        scale: u32,
    },
    Char(u32),
    VarChar(u32),
    Binary(u32),
    VarBinary(u32),
    Date,
    Time(u32),
    Timestamp(u32),
    LocalZonedTimestamp(u32),
    Array(Box<DataType>),
    Multiset(Box<DataType>),
    Map(Box<DataType>, Box<DataType>),
    Row(Vec<DataField>),
    /// Semi-structured data in the Parquet Variant binary encoding (Java's `VariantType`): in
    /// Arrow and in data files a struct of two required binaries, `value` (field id 0) then
    /// `metadata` (field id 1), as Java's `ParquetSchemaConverter` and pypaimon write it.
    Variant,
    /// A binary large object (Java's `BlobType`, Paimon 1.3+): the column of a data-evolution
    /// append table stored in its own `.blob` files (io/blob.rs). In Arrow `large_binary`, as
    /// pypaimon maps it: the bytes, or a serialized `BlobDescriptor` with
    /// `blob-as-descriptor`.
    Blob,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataType {
    pub kind: TypeKind,
    pub nullable: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataField {
    pub id: i32,
    pub name: String,
    pub data_type: DataType,
    pub description: Option<String>,
}

impl DataType {
    pub fn new(kind: TypeKind) -> Self {
        DataType {
            kind,
            nullable: true,
        }
    }
    #[cfg(test)]
    pub fn not_null(mut self) -> Self {
        self.nullable = false;
        self
    }
    pub fn with_nullable(mut self, nullable: bool) -> Self {
        self.nullable = nullable;
        self
    }
    /// Whether this type is a BLOB (a top-level BLOB column's).
    pub fn is_blob(&self) -> bool {
        matches!(self.kind, TypeKind::Blob)
    }
    /// Whether this type is or holds a BLOB (Java's `BlobType`).
    pub fn contains_blob(&self) -> bool {
        match &self.kind {
            TypeKind::Blob => true,
            TypeKind::Array(e) | TypeKind::Multiset(e) => e.contains_blob(),
            TypeKind::Map(k, v) => k.contains_blob() || v.contains_blob(),
            TypeKind::Row(fields) => fields.iter().any(|f| f.data_type.contains_blob()),
            _ => false,
        }
    }
    pub fn is_string(&self) -> bool {
        matches!(self.kind, TypeKind::Char(_) | TypeKind::VarChar(_))
    }
    /// A type held as an Arrow struct or list: not orderable, no statistics, never a key or
    /// partition column (Java's `SchemaValidation.PRIMARY_KEY_UNSUPPORTED_LOGICAL_TYPES`, which
    /// lists VARIANT beside the nested types).
    pub fn is_nested(&self) -> bool {
        matches!(
            self.kind,
            TypeKind::Array(_)
                | TypeKind::Multiset(_)
                | TypeKind::Map(..)
                | TypeKind::Row(_)
                | TypeKind::Variant
        )
    }

    /// The SQL-like text of an atomic type (without NOT NULL), e.g. `DECIMAL(10, 2)`.
    fn atomic_name(&self) -> Option<String> {
        use TypeKind::*;
        Some(match &self.kind {
            Boolean => "BOOLEAN".into(),
            TinyInt => "TINYINT".into(),
            SmallInt => "SMALLINT".into(),
            Int => "INT".into(),
            BigInt => "BIGINT".into(),
            Float => "FLOAT".into(),
            Double => "DOUBLE".into(),
            Decimal { precision, scale } => format!("DECIMAL({precision}, {scale})"),
            Char(n) => format!("CHAR({n})"),
            VarChar(n) if *n == MAX_LEN => "STRING".into(),
            VarChar(n) => format!("VARCHAR({n})"),
            Binary(n) => format!("BINARY({n})"),
            VarBinary(n) if *n == MAX_LEN => "BYTES".into(),
            VarBinary(n) => format!("VARBINARY({n})"),
            Date => "DATE".into(),
            Time(p) => format!("TIME({p})"),
            Timestamp(p) => format!("TIMESTAMP({p})"),
            LocalZonedTimestamp(p) => format!("TIMESTAMP({p}) WITH LOCAL TIME ZONE"),
            Variant => "VARIANT".into(),
            Blob => "BLOB".into(),
            _ => return None,
        })
    }

    /// Schema-JSON form: a string for atomic types, an object for complex ones.
    pub fn to_json(&self) -> Value {
        let nn = if self.nullable { "" } else { " NOT NULL" };
        if let Some(name) = self.atomic_name() {
            return Value::String(format!("{name}{nn}"));
        }
        match &self.kind {
            TypeKind::Array(e) => json!({"type": format!("ARRAY{nn}"), "element": e.to_json()}),
            TypeKind::Multiset(e) => {
                json!({"type": format!("MULTISET{nn}"), "element": e.to_json()})
            }
            TypeKind::Map(k, v) => {
                json!({"type": format!("MAP{nn}"), "key": k.to_json(), "value": v.to_json()})
            }
            TypeKind::Row(fields) => json!({
                "type": format!("ROW{nn}"),
                "fields": fields.iter().map(DataField::to_json).collect::<Vec<_>>(),
            }),
            _ => Value::Null, // unreachable: atomic handled above
        }
    }

    /// Java's `DataType.asSQLString()` (its `toString()`), as Java's messages print a type:
    /// `BIGINT NOT NULL`, `ARRAY<INT>`, `MAP<STRING, INT>`, ``ROW<`a` INT, `b` STRING>``.
    pub fn sql_string(&self) -> String {
        let nn = if self.nullable { "" } else { " NOT NULL" };
        if let Some(name) = self.atomic_name() {
            return format!("{name}{nn}");
        }
        let inner = match &self.kind {
            TypeKind::Array(e) => format!("ARRAY<{}>", e.sql_string()),
            TypeKind::Multiset(e) => format!("MULTISET<{}>", e.sql_string()),
            TypeKind::Map(k, v) => format!("MAP<{}, {}>", k.sql_string(), v.sql_string()),
            TypeKind::Row(fields) => format!(
                "ROW<{}>",
                fields
                    .iter()
                    .map(|f| format!("`{}` {}", f.name, f.data_type.sql_string()))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            _ => String::new(), // unreachable: atomic handled above
        };
        format!("{inner}{nn}")
    }

    pub fn from_json(v: &Value) -> Result<Self> {
        match v {
            Value::String(s) => parse_atomic(s),
            Value::Object(o) => {
                let t = o
                    .get("type")
                    .and_then(Value::as_str)
                    .ok_or_else(|| Error::invalid(format!("type object without 'type': {v}")))?;
                let (head, nullable) = strip_not_null(t);
                let head = head.trim().to_ascii_uppercase();
                let sub = |k: &str| -> Result<DataType> {
                    let x = o
                        .get(k)
                        .ok_or_else(|| Error::invalid(format!("{head} type without '{k}': {v}")))?;
                    DataType::from_json(x)
                };
                let kind = match head.as_str() {
                    "ARRAY" => TypeKind::Array(Box::new(sub("element")?)),
                    "MULTISET" => TypeKind::Multiset(Box::new(sub("element")?)),
                    "MAP" => TypeKind::Map(Box::new(sub("key")?), Box::new(sub("value")?)),
                    "ROW" => {
                        let fs = o.get("fields").and_then(Value::as_array).ok_or_else(|| {
                            Error::invalid(format!("ROW type without 'fields': {v}"))
                        })?;
                        TypeKind::Row(fs.iter().map(DataField::from_json).collect::<Result<_>>()?)
                    }
                    // An atomic type may also be wrapped in an object by some writers.
                    _ => return parse_atomic(t),
                };
                Ok(DataType { kind, nullable })
            }
            _ => Err(Error::invalid(format!("cannot parse type {v}"))),
        }
    }

    /// The Arrow type used for this column in data files and in Arrow results.
    pub fn to_arrow(&self) -> ArrowType {
        use TypeKind::*;
        match &self.kind {
            Boolean => ArrowType::Boolean,
            TinyInt => ArrowType::Int8,
            SmallInt => ArrowType::Int16,
            Int => ArrowType::Int32,
            BigInt => ArrowType::Int64,
            Float => ArrowType::Float32,
            Double => ArrowType::Float64,
            Decimal { precision, scale } => ArrowType::Decimal128(*precision as u8, *scale as i8),
            Char(_) | VarChar(_) => ArrowType::Utf8,
            Binary(_) | VarBinary(_) => ArrowType::Binary,
            Date => ArrowType::Date32,
            Time(_) => ArrowType::Time32(TimeUnit::Millisecond),
            Timestamp(p) => ArrowType::Timestamp(ts_unit(*p), None),
            LocalZonedTimestamp(p) => ArrowType::Timestamp(ts_unit(*p), Some("UTC".into())),
            Array(e) | Multiset(e) => ArrowType::List(Arc::new(ArrowField::new(
                "element",
                e.to_arrow(),
                e.nullable,
            ))),
            Map(k, v) => {
                let entries = ArrowField::new(
                    "key_value",
                    ArrowType::Struct(Fields::from(vec![
                        ArrowField::new("key", k.to_arrow(), false),
                        ArrowField::new("value", v.to_arrow(), v.nullable),
                    ])),
                    false,
                );
                ArrowType::Map(Arc::new(entries), false)
            }
            Row(fields) => ArrowType::Struct(Fields::from(
                fields.iter().map(DataField::to_arrow).collect::<Vec<_>>(),
            )),
            Variant => variant_arrow_type(),
            Blob => ArrowType::LargeBinary,
        }
    }

    /// The Arrow type of this column inside Parquet data files. Equal to [`Self::to_arrow`]
    /// except TIMESTAMP(0): Parquet has no second unit, so (as Java does) it is stored as
    /// TIMESTAMP(MILLIS).
    pub fn to_arrow_file(&self) -> ArrowType {
        match &self.kind {
            TypeKind::Timestamp(0) => ArrowType::Timestamp(TimeUnit::Millisecond, None),
            TypeKind::LocalZonedTimestamp(0) => {
                ArrowType::Timestamp(TimeUnit::Millisecond, Some("UTC".into()))
            }
            _ => self.to_arrow(),
        }
    }

    /// The Paimon type an Arrow type maps to (as `Schema.from_pyarrow_schema` does).
    pub fn from_arrow(t: &ArrowType, nullable: bool) -> Result<Self> {
        use ArrowType as A;
        let kind = match t {
            A::Boolean => TypeKind::Boolean,
            A::Int8 => TypeKind::TinyInt,
            A::Int16 => TypeKind::SmallInt,
            A::Int32 => TypeKind::Int,
            A::Int64 => TypeKind::BigInt,
            A::Float32 => TypeKind::Float,
            A::Float64 => TypeKind::Double,
            A::Decimal128(p, s) if *s >= 0 => TypeKind::Decimal {
                precision: *p as u32,
                scale: *s as u32,
            },
            A::Utf8 | A::LargeUtf8 | A::Utf8View => TypeKind::VarChar(MAX_LEN),
            A::Binary | A::LargeBinary | A::BinaryView => TypeKind::VarBinary(MAX_LEN),
            A::FixedSizeBinary(n) => TypeKind::Binary(*n as u32),
            A::Date32 => TypeKind::Date,
            A::Time32(_) => TypeKind::Time(0),
            A::Time64(_) => TypeKind::Time(0),
            A::Timestamp(u, tz) => {
                let p = match u {
                    TimeUnit::Second => 0,
                    TimeUnit::Millisecond => 3,
                    TimeUnit::Microsecond => 6,
                    TimeUnit::Nanosecond => 9,
                };
                if tz.is_some() {
                    TypeKind::LocalZonedTimestamp(p)
                } else {
                    TypeKind::Timestamp(p)
                }
            }
            A::List(f) | A::LargeList(f) | A::ListView(f) | A::LargeListView(f) => TypeKind::Array(
                Box::new(DataType::from_arrow(f.data_type(), f.is_nullable())?),
            ),
            A::Map(entries, _) => match entries.data_type() {
                A::Struct(kv) if kv.len() == 2 => TypeKind::Map(
                    Box::new(DataType::from_arrow(kv[0].data_type(), false)?),
                    Box::new(DataType::from_arrow(
                        kv[1].data_type(),
                        kv[1].is_nullable(),
                    )?),
                ),
                other => return Err(Error::unsupported(format!("arrow map entries {other}"))),
            },
            A::Struct(fields) if is_variant_struct(fields) => TypeKind::Variant,
            A::Struct(fields) => TypeKind::Row(
                fields
                    .iter()
                    .enumerate()
                    .map(|(i, f)| {
                        Ok(DataField {
                            id: i as i32,
                            name: f.name().clone(),
                            data_type: DataType::from_arrow(f.data_type(), f.is_nullable())?,
                            description: None,
                        })
                    })
                    .collect::<Result<_>>()?,
            ),
            A::Dictionary(_, v) => return DataType::from_arrow(v, nullable),
            other => {
                return Err(Error::unsupported(format!(
                    "Arrow type {other} has no Paimon equivalent"
                )))
            }
        };
        Ok(DataType { kind, nullable })
    }
}

/// Name of the variant struct's encoded-value child (Java's `Variant.VALUE`).
pub const VARIANT_VALUE: &str = "value";
/// Name of the variant struct's metadata (string dictionary) child (Java's `Variant.METADATA`).
pub const VARIANT_METADATA: &str = "metadata";

/// The Arrow form of VARIANT: `struct<value: binary NOT NULL, metadata: binary NOT NULL>` with
/// Parquet field ids 0 and 1 (Java's `ParquetSchemaConverter`, case VARIANT; pypaimon's
/// `PyarrowFieldParser.from_paimon_type`).
pub fn variant_arrow_type() -> ArrowType {
    let child = |name: &str, id: i32| {
        ArrowField::new(name, ArrowType::Binary, false).with_metadata(
            std::collections::HashMap::from([("PARQUET:field_id".to_string(), id.to_string())]),
        )
    };
    ArrowType::Struct(Fields::from(vec![
        child(VARIANT_VALUE, 0),
        child(VARIANT_METADATA, 1),
    ]))
}

/// Whether an Arrow struct is VARIANT's form (pypaimon's `is_variant_struct`): exactly the
/// children `value` and `metadata`, both non-null binaries, in either order.
pub fn is_variant_struct(fields: &Fields) -> bool {
    fields.len() == 2
        && [VARIANT_VALUE, VARIANT_METADATA].iter().all(|n| {
            fields.iter().any(|f| {
                f.name() == n
                    && !f.is_nullable()
                    && matches!(
                        f.data_type(),
                        ArrowType::Binary | ArrowType::LargeBinary | ArrowType::BinaryView
                    )
            })
        })
}

fn ts_unit(p: u32) -> TimeUnit {
    match p {
        0 => TimeUnit::Second,
        1..=3 => TimeUnit::Millisecond,
        4..=6 => TimeUnit::Microsecond,
        _ => TimeUnit::Nanosecond,
    }
}

fn strip_not_null(s: &str) -> (&str, bool) {
    let t = s.trim_end();
    let up = t.to_ascii_uppercase();
    if up.ends_with("NOT NULL") {
        (&t[..t.len() - "NOT NULL".len()], false)
    } else if up.ends_with(" NULL") {
        (&t[..t.len() - " NULL".len()], true)
    } else {
        (t, true)
    }
}

fn parse_atomic(s: &str) -> Result<DataType> {
    let (head, nullable) = strip_not_null(s);
    let up = head.trim().to_ascii_uppercase();
    let (name, params): (&str, Vec<u32>) = match up.find('(') {
        Some(i) => {
            let close = up[i..]
                .find(')')
                .ok_or_else(|| Error::invalid(format!("bad type '{s}'")))?;
            let inner = &up[i + 1..i + close];
            let ps = inner
                .split(',')
                .map(|p| p.trim().parse::<u32>())
                .collect::<std::result::Result<Vec<_>, _>>()
                .map_err(|_| Error::invalid(format!("bad type parameters in '{s}'")))?;
            let rest = up[i + close + 1..].trim();
            // `TIMESTAMP(3) WITH LOCAL TIME ZONE`
            let name = if rest.is_empty() {
                up[..i].trim()
            } else {
                up.as_str()
            };
            (name, ps)
        }
        None => (up.as_str(), vec![]),
    };
    let p0 = |d: u32| params.first().copied().unwrap_or(d);
    use TypeKind::*;
    let name_norm: String = name.split_whitespace().collect::<Vec<_>>().join(" ");
    let kind = if name_norm.starts_with("TIMESTAMP") && name_norm.contains("WITH LOCAL TIME ZONE")
        || name_norm.starts_with("TIMESTAMP_LTZ")
    {
        LocalZonedTimestamp(p0(6))
    } else {
        match name_norm.as_str() {
            "BOOLEAN" => Boolean,
            "TINYINT" => TinyInt,
            "SMALLINT" => SmallInt,
            "INT" | "INTEGER" => Int,
            "BIGINT" => BigInt,
            "FLOAT" => Float,
            "DOUBLE" | "DOUBLE PRECISION" => Double,
            "DECIMAL" | "NUMERIC" | "DEC" => Decimal {
                precision: p0(10),
                scale: params.get(1).copied().unwrap_or(0),
            },
            "CHAR" => Char(p0(1)),
            "VARCHAR" => VarChar(p0(1)),
            "STRING" => VarChar(MAX_LEN),
            "BINARY" => Binary(p0(1)),
            "VARBINARY" => VarBinary(p0(1)),
            "BYTES" => VarBinary(MAX_LEN),
            "DATE" => Date,
            "TIME" | "TIME WITHOUT TIME ZONE" => Time(p0(0)),
            "TIMESTAMP" | "TIMESTAMP WITHOUT TIME ZONE" => Timestamp(p0(6)),
            "VARIANT" if params.is_empty() => Variant,
            "BLOB" if params.is_empty() => Blob,
            _ => return Err(Error::unsupported(format!("data type '{s}'"))),
        }
    };
    if let Decimal { precision, scale } = kind {
        if !(1..=38).contains(&precision) || scale > precision {
            return Err(Error::invalid(format!("bad decimal type '{s}'")));
        }
    }
    Ok(DataType { kind, nullable })
}

impl fmt::Display for DataType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.to_json() {
            Value::String(s) => write!(f, "{s}"),
            v => write!(f, "{v}"),
        }
    }
}

impl DataField {
    pub fn new(id: i32, name: impl Into<String>, data_type: DataType) -> Self {
        DataField {
            id,
            name: name.into(),
            data_type,
            description: None,
        }
    }
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("id".into(), json!(self.id));
        m.insert("name".into(), json!(self.name));
        m.insert("type".into(), self.data_type.to_json());
        if let Some(d) = &self.description {
            m.insert("description".into(), json!(d));
        }
        Value::Object(m)
    }
    pub fn from_json(v: &Value) -> Result<Self> {
        let id = v
            .get("id")
            .and_then(Value::as_i64)
            .ok_or_else(|| Error::invalid(format!("field without id: {v}")))?;
        let name = v
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| Error::invalid(format!("field without name: {v}")))?;
        let t = v
            .get("type")
            .ok_or_else(|| Error::invalid(format!("field without type: {v}")))?;
        Ok(DataField {
            id: id as i32,
            name: name.to_string(),
            data_type: DataType::from_json(t)?,
            description: v
                .get("description")
                .and_then(Value::as_str)
                .map(str::to_string),
        })
    }
    /// Arrow field of a data file (see [`DataType::to_arrow_file`]) with the field id.
    pub fn to_arrow_file(&self) -> ArrowField {
        ArrowField::new(
            &self.name,
            self.data_type.to_arrow_file(),
            self.data_type.nullable,
        )
        .with_metadata(std::collections::HashMap::from([(
            "PARQUET:field_id".to_string(),
            self.id.to_string(),
        )]))
    }

    /// Arrow field carrying the Paimon field id as `PARQUET:field_id` metadata.
    pub fn to_arrow(&self) -> ArrowField {
        ArrowField::new(
            &self.name,
            self.data_type.to_arrow(),
            self.data_type.nullable,
        )
        .with_metadata(std::collections::HashMap::from([(
            "PARQUET:field_id".to_string(),
            self.id.to_string(),
        )]))
    }
}

/// Highest field id used by `fields`, including nested ROW fields.
pub fn highest_field_id(fields: &[DataField]) -> i32 {
    fn walk(t: &DataType, m: &mut i32) {
        match &t.kind {
            TypeKind::Row(fs) => {
                for f in fs {
                    *m = (*m).max(f.id);
                    walk(&f.data_type, m);
                }
            }
            TypeKind::Array(e) | TypeKind::Multiset(e) => walk(e, m),
            TypeKind::Map(k, v) => {
                walk(k, m);
                walk(v, m);
            }
            _ => {}
        }
    }
    let mut m = -1;
    for f in fields {
        m = m.max(f.id);
        walk(&f.data_type, &mut m);
    }
    m
}

/// Assign ids to nested ROW fields from `next`, depth first (top-level ids are set by the caller).
pub fn reassign_nested_ids(t: &mut DataType, next: &mut i32) {
    match &mut t.kind {
        TypeKind::Row(fs) => {
            for f in fs.iter_mut() {
                f.id = *next;
                *next += 1;
                reassign_nested_ids(&mut f.data_type, next);
            }
        }
        TypeKind::Array(e) | TypeKind::Multiset(e) => reassign_nested_ids(e, next),
        TypeKind::Map(k, v) => {
            reassign_nested_ids(k, next);
            reassign_nested_ids(v, next);
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_round_trip() {
        for s in [
            "BOOLEAN",
            "TINYINT",
            "SMALLINT",
            "INT NOT NULL",
            "BIGINT",
            "FLOAT",
            "DOUBLE",
            "DECIMAL(10, 2)",
            "CHAR(3)",
            "VARCHAR(20)",
            "STRING NOT NULL",
            "BINARY(4)",
            "VARBINARY(9)",
            "BYTES",
            "DATE",
            "TIME(0)",
            "TIMESTAMP(6)",
            "TIMESTAMP(3) NOT NULL",
            "TIMESTAMP(6) WITH LOCAL TIME ZONE",
        ] {
            let t = DataType::from_json(&json!(s)).unwrap();
            assert_eq!(t.to_json(), json!(s), "{s}");
        }
        assert_eq!(
            DataType::from_json(&json!("integer")).unwrap().kind,
            TypeKind::Int
        );
        assert_eq!(
            DataType::from_json(&json!("TIMESTAMP_LTZ(3)"))
                .unwrap()
                .kind,
            TypeKind::LocalZonedTimestamp(3)
        );
        assert_eq!(
            DataType::from_json(&json!("DECIMAL")).unwrap().kind,
            TypeKind::Decimal {
                precision: 10,
                scale: 0
            }
        );
    }

    #[test]
    fn complex_round_trip() {
        let v = json!({"type": "ROW", "fields": [
            {"id": 5, "name": "x", "type": "INT"},
            {"id": 6, "name": "m", "type": {"type": "MAP NOT NULL", "key": "STRING NOT NULL", "value": "BIGINT"}},
            {"id": 7, "name": "a", "type": {"type": "ARRAY", "element": "DOUBLE"}}
        ]});
        let t = DataType::from_json(&v).unwrap();
        assert_eq!(t.to_json(), v);
        // pypaimon's extra "nullable" key is tolerated
        let p = json!({"type": "ARRAY", "element": "INT", "nullable": true});
        assert!(matches!(
            DataType::from_json(&p).unwrap().kind,
            TypeKind::Array(_)
        ));
    }

    #[test]
    fn arrow_round_trip() {
        for s in [
            "BIGINT",
            "DECIMAL(20, 3)",
            "STRING",
            "BYTES",
            "DATE",
            "TIMESTAMP(3)",
            "TIMESTAMP(6)",
            "TIMESTAMP(9) WITH LOCAL TIME ZONE",
        ] {
            let t = DataType::from_json(&json!(s)).unwrap();
            let back = DataType::from_arrow(&t.to_arrow(), true).unwrap();
            assert_eq!(back, t, "{s}");
        }
    }

    #[test]
    fn errors_name_the_type() {
        let e = DataType::from_json(&json!("FOO")).unwrap_err();
        assert!(e.to_string().contains("FOO"));
    }

    #[test]
    fn variant_type_json_and_arrow_form() {
        let t = DataType::from_json(&json!("VARIANT NOT NULL")).unwrap();
        assert_eq!(t.kind, TypeKind::Variant);
        assert_eq!(t.to_json(), json!("VARIANT NOT NULL"));
        assert_eq!(t.sql_string(), "VARIANT NOT NULL");
        assert!(t.is_nested(), "never a key, no statistics");
        let ArrowType::Struct(fs) = t.to_arrow() else {
            panic!("{}", t.to_arrow())
        };
        // Java's ParquetSchemaConverter: value (id 0) then metadata (id 1), both required
        let got: Vec<_> = fs
            .iter()
            .map(|f| {
                (
                    f.name().as_str(),
                    f.is_nullable(),
                    f.metadata()["PARQUET:field_id"].as_str(),
                )
            })
            .collect();
        assert_eq!(got, [("value", false, "0"), ("metadata", false, "1")]);
        assert_eq!(
            DataType::from_arrow(&t.to_arrow(), true).unwrap(),
            DataType::new(TypeKind::Variant)
        );
        // a ROW that only looks alike (nullable children, a third field) stays a ROW
        let row = ArrowType::Struct(Fields::from(vec![
            ArrowField::new("value", ArrowType::Binary, true),
            ArrowField::new("metadata", ArrowType::Binary, true),
        ]));
        assert!(matches!(
            DataType::from_arrow(&row, true).unwrap().kind,
            TypeKind::Row(_)
        ));
        assert!(DataType::from_json(&json!("VARIANT(3)")).is_err());
    }
}
