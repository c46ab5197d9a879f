//! Schema evolution on read (Java: `SchemaEvolutionUtil`, `IndexCastMapping`, `CastExecutors`).
//!
//! Every data file records the id of the schema it was written with (`DataFileMeta.schema_id`);
//! its Parquet columns are named by the field names of THAT schema. A read maps each column of
//! the current schema to the file's column of the same field id (not the same name): a renamed
//! column is read under its old name, a column added later reads as NULL, a dropped column is
//! left out (and a column dropped then re-added under the same name, a new id, reads as NULL in
//! the old files), a widened type is cast. Nested ROW fields are matched by id too, inside
//! ARRAY and MAP values as well.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use arrow_array::cast::AsArray;
use arrow_array::{make_array, new_null_array, Array, ArrayRef, ListArray, MapArray, StructArray};
use arrow_cast::cast;
use arrow_schema::{DataType as ArrowType, Field, Fields};

use crate::error::{Error, Result};
use crate::spec::schema::TableSchema;
use crate::spec::types::{DataField, DataType, TypeKind};
use crate::table::snapshot_manager::{read_schema, schema_path};

/// The schemas of a table's data files, read once per id (per read).
pub struct SchemaCache {
    table: PathBuf,
    schemas: Mutex<HashMap<i64, Arc<TableSchema>>>,
}

impl SchemaCache {
    /// A cache that already knows `current` (the schema the table was loaded with).
    pub fn new(table: PathBuf, current: &TableSchema) -> Self {
        let mut m = HashMap::new();
        m.insert(current.id, Arc::new(current.clone()));
        SchemaCache {
            table,
            schemas: Mutex::new(m),
        }
    }

    /// Schema `id` of the table; a schema file that cannot be read is a corrupt table.
    pub fn get(&self, id: i64) -> Result<Arc<TableSchema>> {
        if let Some(s) = self.lock().get(&id) {
            return Ok(s.clone());
        }
        let path = schema_path(&self.table, id);
        let s = Arc::new(read_schema(&self.table, id).map_err(|e| match e {
            e @ Error::CorruptFile { .. } => e,
            e => Error::corrupt(
                &path,
                format!("schema {id} of a data file cannot be read: {e}"),
            ),
        })?);
        self.lock().insert(id, s.clone());
        Ok(s)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<i64, Arc<TableSchema>>> {
        // a panic while holding the lock left the map consistent (inserts are atomic)
        self.schemas.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The field of `schema` with this id.
pub fn field_by_id(schema: &TableSchema, id: i32) -> Option<&DataField> {
    schema.fields.iter().find(|f| f.id == id)
}

/// Equal types ignoring nullability (nested: same field ids and names too).
pub fn same_type(a: &DataType, b: &DataType) -> bool {
    use TypeKind::*;
    match (&a.kind, &b.kind) {
        (Array(x), Array(y)) | (Multiset(x), Multiset(y)) => same_type(x, y),
        (Map(k1, v1), Map(k2, v2)) => same_type(k1, k2) && same_type(v1, v2),
        (Row(f1), Row(f2)) => {
            f1.len() == f2.len()
                && f1.iter().zip(f2).all(|(x, y)| {
                    x.id == y.id && x.name == y.name && same_type(&x.data_type, &y.data_type)
                })
        }
        (x, y) => x == y,
    }
}

/// A type as its schema-JSON text (`BIGINT`, `DECIMAL(10, 2)`), nullability left out.
fn sql(t: &DataType) -> String {
    match t.clone().with_nullable(true).to_json() {
        serde_json::Value::String(s) => s,
        v => v.to_string(),
    }
}

fn int_digits(k: &TypeKind) -> Option<u32> {
    match k {
        TypeKind::TinyInt => Some(3),
        TypeKind::SmallInt => Some(5),
        TypeKind::Int => Some(10),
        TypeKind::BigInt => Some(19),
        _ => None,
    }
}

/// Can a value of the file's atomic type `from` be read as `to`, the value Java reads? Widening
/// casts keep it; numeric primitives narrow as Java's `NumericPrimitiveCastRule`, DECIMALs and
/// integers convert as its `DecimalToDecimalCastRule` / `NumericPrimitiveToDecimalCastRule` /
/// `DecimalToNumericPrimitiveCastRule`, strings parse to integers as its
/// `StringToNumericPrimitiveCastRule` ([`evolve_array`]). Java allows more (FLOAT / DOUBLE to
/// DECIMAL, strings to DOUBLE or dates, ...); those are refused here rather than risk a value
/// that differs from Java's.
pub fn cast_supported(from: &DataType, to: &DataType) -> bool {
    use TypeKind::*;
    match (&from.kind, &to.kind) {
        (a, b) if a == b => true,
        // between numeric primitives: widening, or narrowing as Java's `Number::intValue` & co.
        // (`numbers_as`)
        (a, b) if is_primitive_number(a) && is_primitive_number(b) => true,
        // BOOLEAN and integers both ways (1 / 0, != 0), BOOLEAN to FLOAT / DOUBLE / DECIMAL,
        // strings to BOOLEAN (`java_string_to_bool`)
        (Boolean, b) if is_primitive_number(b) || matches!(b, Decimal { .. }) => true,
        (a, Boolean) if int_digits(a).is_some() => true,
        (Char(_) | VarChar(_), Boolean) => true,
        // DECIMALs and integers both ways, DECIMAL to FLOAT / DOUBLE (`decimals_as`)
        (a, Decimal { .. }) if int_digits(a).is_some() => true,
        (Decimal { .. }, Decimal { .. }) => true,
        (Decimal { .. }, b) if is_primitive_number(b) => true,
        (Char(n) | VarChar(n), VarChar(m)) => m >= n,
        (Binary(n) | VarBinary(n), VarBinary(m)) => m >= n,
        (a, VarChar(m)) if int_digits(a).is_some() => int_digits(a).is_some_and(|d| *m > d),
        (Boolean, VarChar(m)) => *m >= 5,
        // parsed as Java parses them (`java_string_to_int`): a value it cannot parse fails the read
        (Char(_) | VarChar(_), b) if int_digits(b).is_some() => true,
        (Timestamp(p), Timestamp(q)) | (LocalZonedTimestamp(p), LocalZonedTimestamp(q)) => q >= p,
        (Time(p), Time(q)) => q >= p,
        (Date, Timestamp(_)) => true,
        _ => false,
    }
}

/// `array` (a file column decoded with the file's physical type) in the Arrow type `target`
/// when only its physical representation differs (same logical type): the file's unit or list
/// field names. A time zone is attached, never converted (arrow-rs cannot parse named zones;
/// Paimon stores LTZ values as UTC instants).
pub fn conform_physical(
    array: &ArrayRef,
    target: &ArrowType,
) -> std::result::Result<ArrayRef, String> {
    if array.data_type() == target {
        return Ok(array.clone());
    }
    if let ArrowType::Struct(tf) = target {
        if crate::spec::types::is_variant_struct(tf) {
            return conform_variant(array, tf);
        }
    }
    if let (Some(m), ArrowType::Map(..)) = (entries_as_map(array)?, target) {
        return conform_physical(&m, target);
    }
    if let (ArrowType::Timestamp(u1, _), ArrowType::Timestamp(u2, tz2)) =
        (array.data_type(), target)
    {
        let same_unit = if u1 == u2 {
            array.clone()
        } else {
            cast(array, &ArrowType::Timestamp(*u2, None)).map_err(|e| e.to_string())?
        };
        let data = same_unit
            .to_data()
            .into_builder()
            .data_type(ArrowType::Timestamp(*u2, tz2.clone()))
            .build()
            .map_err(|e| e.to_string())?;
        return Ok(make_array(data));
    }
    cast(array, target).map_err(|e| e.to_string())
}

/// Whether a file column read for a VARIANT (Arrow `target`) is a shredded variant: the
/// Parquet variant shredding layout (`metadata`, an optional `value` and `typed_value`, the
/// sub-fields pulled out into typed columns), which Java writes with `variant.shreddingSchema`
/// or `variant.inferShreddingSchema` and pypaimon with `variant.shreddingSchema`. paimon_rs
/// does not reassemble shredded values: the reader refuses them (reading `value` alone would
/// silently lose the shredded sub-fields).
pub fn is_shredded_variant(array: &ArrayRef, target: &ArrowType) -> bool {
    match (array.data_type(), target) {
        (ArrowType::Struct(ff), ArrowType::Struct(tf)) => {
            crate::spec::types::is_variant_struct(tf)
                && ff.iter().any(|f| {
                    f.name() != crate::spec::types::VARIANT_VALUE
                        && f.name() != crate::spec::types::VARIANT_METADATA
                })
        }
        _ => false,
    }
}

/// An unshredded VARIANT file column (`value` and `metadata` in either order, any binary
/// flavour) as the table's `struct<value, metadata>`.
fn conform_variant(array: &ArrayRef, tf: &Fields) -> std::result::Result<ArrayRef, String> {
    let s = array
        .as_struct_opt()
        .ok_or_else(|| format!("expected a VARIANT struct, found {}", array.data_type()))?;
    if is_shredded_variant(array, &ArrowType::Struct(tf.clone())) {
        return Err(format!(
            "a shredded VARIANT ({}): paimon_rs reads unshredded VARIANT columns only",
            array.data_type()
        ));
    }
    let cols = tf
        .iter()
        .map(|f| {
            let c = s
                .column_by_name(f.name())
                .ok_or_else(|| format!("VARIANT without '{}'", f.name()))?;
            cast(c, f.data_type()).map_err(|e| e.to_string())
        })
        .collect::<std::result::Result<Vec<_>, String>>()?;
    let out = StructArray::try_new(tf.clone(), cols, s.nulls().cloned())
        .map_err(|e| format!("VARIANT: {e}"))?;
    Ok(Arc::new(out))
}

/// A list of two-field records (key, value) as a map: Java's Avro files store a MAP whose key
/// is not a string so (`AvroSchemaConverter`: an array of {key, value} records). `Ok(None)` for
/// any other array.
fn entries_as_map(array: &ArrayRef) -> std::result::Result<Option<ArrayRef>, String> {
    let Some(l) = array.as_list_opt::<i32>() else {
        return Ok(None);
    };
    let Some(s) = l.values().as_struct_opt() else {
        return Ok(None);
    };
    if s.num_columns() != 2 || s.null_count() > 0 {
        return Ok(None);
    }
    let (key, value) = (s.column(0), s.column(1));
    if key.null_count() > 0 {
        return Err("a map key is null".into());
    }
    let kv: arrow_schema::Fields = vec![
        Field::new("key", key.data_type().clone(), false),
        Field::new("value", value.data_type().clone(), true),
    ]
    .into();
    let entries = StructArray::try_new(kv.clone(), vec![key.clone(), value.clone()], None)
        .map_err(|e| e.to_string())?;
    let field = Arc::new(Field::new("entries", ArrowType::Struct(kv), false));
    let m = MapArray::try_new(
        field,
        l.offsets().clone(),
        entries,
        l.nulls().cloned(),
        false,
    )
    .map_err(|e| e.to_string())?;
    Ok(Some(Arc::new(m)))
}

/// A file column `array` of the file's type `from` as a column of the table's type `to`
/// (Arrow type `target`): nested ROW fields matched by id (missing ones are NULL), atomic
/// values cast where [`cast_supported`]. `Err` is a message naming what cannot be read.
pub fn evolve_array(
    array: &ArrayRef,
    from: &DataType,
    to: &DataType,
    target: &ArrowType,
) -> std::result::Result<ArrayRef, String> {
    use TypeKind::*;
    if array.data_type() == target && same_type(from, to) {
        return Ok(array.clone());
    }
    match (&from.kind, &to.kind, target) {
        (Row(ff), Row(tf), ArrowType::Struct(target_fields)) => {
            let s = array
                .as_struct_opt()
                .ok_or_else(|| format!("expected a struct, found {}", array.data_type()))?;
            let mut cols: Vec<ArrayRef> = Vec::with_capacity(tf.len());
            for (t, tfield) in tf.iter().zip(target_fields.iter()) {
                let col = match ff.iter().position(|f| f.id == t.id) {
                    Some(j) if j < s.num_columns() => evolve_array(
                        s.column(j),
                        &ff[j].data_type,
                        &t.data_type,
                        tfield.data_type(),
                    )
                    .map_err(|e| format!("field '{}': {e}", t.name))?,
                    Some(_) => return Err(format!("field '{}' is missing", t.name)),
                    None => new_null_array(tfield.data_type(), s.len()),
                };
                cols.push(col);
            }
            // fields added later are nullable in the table; a NOT NULL one reads as nullable
            let fields: Vec<Field> = target_fields
                .iter()
                .zip(&cols)
                .map(|(f, c)| {
                    f.as_ref()
                        .clone()
                        .with_nullable(f.is_nullable() || c.null_count() > 0)
                })
                .collect();
            let out = StructArray::try_new(fields.into(), cols, s.nulls().cloned())
                .map_err(|e| e.to_string())?;
            conform_physical(&(Arc::new(out) as ArrayRef), target)
        }
        (Array(fe), Array(te), ArrowType::List(tfield))
        | (Multiset(fe), Multiset(te), ArrowType::List(tfield)) => {
            let l = array
                .as_list_opt::<i32>()
                .ok_or_else(|| format!("expected a list, found {}", array.data_type()))?;
            let values = evolve_array(l.values(), fe, te, tfield.data_type())
                .map_err(|e| format!("element: {e}"))?;
            let out = ListArray::try_new(
                tfield.clone(),
                l.offsets().clone(),
                values,
                l.nulls().cloned(),
            )
            .map_err(|e| e.to_string())?;
            Ok(Arc::new(out))
        }
        (Map(fk, fv), Map(tk, tv), ArrowType::Map(entries, ordered)) => {
            if !same_type(fk, tk) {
                return Err(format!(
                    "a map's key type cannot change ({} to {})",
                    sql(fk),
                    sql(tk)
                ));
            }
            let listed = entries_as_map(array)?;
            let m = listed
                .as_ref()
                .unwrap_or(array)
                .as_map_opt()
                .ok_or_else(|| format!("expected a map, found {}", array.data_type()))?;
            let ArrowType::Struct(kv) = entries.data_type() else {
                return Err(format!("bad map type {target}"));
            };
            let (Some(kf), Some(vf)) = (kv.first(), kv.get(1)) else {
                return Err(format!("bad map type {target}"));
            };
            let keys = conform_physical(m.keys(), kf.data_type())?;
            let values = evolve_array(m.values(), fv, tv, vf.data_type())
                .map_err(|e| format!("value: {e}"))?;
            let entries_arr = StructArray::try_new(kv.clone(), vec![keys, values], None)
                .map_err(|e| e.to_string())?;
            let out = MapArray::try_new(
                entries.clone(),
                m.offsets().clone(),
                entries_arr,
                m.nulls().cloned(),
                *ordered,
            )
            .map_err(|e| e.to_string())?;
            Ok(Arc::new(out))
        }
        _ if same_type(from, to) => conform_physical(array, target),
        (Char(_) | VarChar(_), k, _) if int_digits(k).is_some() => {
            strings_to_ints(array, k, target)
        }
        (a, b, _) if is_primitive_number(a) && is_primitive_number(b) && !cast_widens(a, b) => {
            numbers_as(array, b, target)
        }
        (Char(_) | VarChar(_), Boolean, _) => strings_to_bools(array),
        (Boolean, Decimal { .. }, _) => {
            // Java's castFrom(1 or 0, p, s)
            let ints = cast(array, &ArrowType::Int64).map_err(|e| e.to_string())?;
            decimals_as(&ints, &BigInt, &to.kind, target)
        }
        (a @ Decimal { .. }, b, _) | (a, b @ Decimal { .. }, _) if !cast_widens(a, b) => {
            decimals_as(array, a, b, target)
        }
        _ if !from.is_nested() && !to.is_nested() && cast_supported(from, to) => {
            conform_physical(array, target)
        }
        _ => Err(format!(
            "paimon_rs cannot read {} as {} (schema evolution casts supported: widening \
             numeric, DECIMAL, VARCHAR/VARBINARY length, TIMESTAMP/TIME precision, DATE to \
             TIMESTAMP, integers/booleans to strings; nested ROW fields by id)",
            sql(from),
            sql(to)
        )),
    }
}

fn is_primitive_number(k: &TypeKind) -> bool {
    int_digits(k).is_some() || matches!(k, TypeKind::Float | TypeKind::Double)
}

/// Whether Arrow's cast of `a` to `b` is exact (a widening: every value kept).
fn cast_widens(a: &TypeKind, b: &TypeKind) -> bool {
    match (a, b) {
        (a, b) if a == b => true,
        (a, b) if int_digits(a).is_some() && int_digits(b).is_some() => {
            int_digits(a) < int_digits(b)
        }
        (a, TypeKind::Float | TypeKind::Double) if int_digits(a).is_some() => true,
        (TypeKind::Float, TypeKind::Double) => true,
        (a, TypeKind::Decimal { precision, scale }) if int_digits(a).is_some() => {
            int_digits(a).is_some_and(|d| precision.saturating_sub(*scale) >= d)
        }
        (
            TypeKind::Decimal {
                precision: p1,
                scale: s1,
            },
            TypeKind::Decimal {
                precision: p2,
                scale: s2,
            },
        ) => s2 >= s1 && p2 - s2 >= p1 - s1,
        _ => false,
    }
}

/// `10^k` (k <= 38).
fn pow10(k: u32) -> i128 {
    10i128.pow(k)
}

/// A DECIMAL or integer column read as `to` where the change is not a widening, value for value
/// as Java: to DECIMAL(p, s) the value rounded HALF_UP to s digits, NULL when it then needs more
/// than p digits (`Decimal.fromBigDecimal`); DECIMAL to an integer truncated toward zero, its low
/// 64 bits, then wrapped to the type (`castToIntegral`, `(int)` ...); DECIMAL to DOUBLE as
/// `DecimalUtils.doubleValue` (unscaled / 10^scale in double arithmetic up to 18 digits, the
/// correctly rounded value beyond), to FLOAT that double rounded.
fn decimals_as(
    array: &ArrayRef,
    from: &TypeKind,
    to: &TypeKind,
    target: &ArrowType,
) -> std::result::Result<ArrayRef, String> {
    use arrow_array::types::{Decimal128Type, Float32Type, Float64Type, Int64Type};
    use arrow_array::{Decimal128Array, PrimitiveArray};
    let (p1, s1, unscaled): (u32, u32, Vec<Option<i128>>) = match from {
        TypeKind::Decimal { precision, scale } => {
            let (p, s) = (*precision, *scale);
            let d =
                cast(array, &ArrowType::Decimal128(p as u8, s as i8)).map_err(|e| e.to_string())?;
            (p, s, d.as_primitive::<Decimal128Type>().iter().collect())
        }
        _ => {
            let l = cast(array, &ArrowType::Int64).map_err(|e| e.to_string())?;
            (
                19,
                0,
                l.as_primitive::<Int64Type>()
                    .iter()
                    .map(|v| v.map(i128::from))
                    .collect(),
            )
        }
    };
    let out: ArrayRef = match to {
        TypeKind::Decimal {
            precision: p2,
            scale: s2,
        } => {
            let (p2, s2) = (*p2, *s2);
            let bound = pow10(p2);
            let rescale = |v: i128| -> Option<i128> {
                let r = if s2 >= s1 {
                    v.checked_mul(pow10(s2 - s1))?
                } else {
                    let d = pow10(s1 - s2);
                    let (q, rem) = (v / d, v % d);
                    if rem.abs() * 2 >= d {
                        q + v.signum()
                    } else {
                        q
                    }
                };
                (r.abs() < bound).then_some(r)
            };
            let vals: Decimal128Array = unscaled.iter().map(|v| v.and_then(rescale)).collect();
            Arc::new(
                vals.with_precision_and_scale(p2 as u8, s2 as i8)
                    .map_err(|e| e.to_string())?,
            )
        }
        TypeKind::Float | TypeKind::Double => {
            let double = |v: i128| -> f64 {
                if p1 <= 18 {
                    (v as i64) as f64 / (pow10(s1) as i64) as f64
                } else {
                    format!("{v}e-{s1}").parse::<f64>().unwrap_or(f64::NAN)
                }
            };
            let d: PrimitiveArray<Float64Type> = unscaled.iter().map(|v| v.map(double)).collect();
            if matches!(to, TypeKind::Float) {
                Arc::new(d.unary::<_, Float32Type>(|v| v as f32))
            } else {
                Arc::new(d)
            }
        }
        _ => {
            // truncated toward zero, BigDecimal.longValue's low 64 bits, then the type's cast
            let d = pow10(s1);
            let l: PrimitiveArray<Int64Type> =
                unscaled.iter().map(|v| v.map(|v| (v / d) as i64)).collect();
            return numbers_as(&(Arc::new(l) as ArrayRef), to, target);
        }
    };
    conform_physical(&out, target)
}

/// A numeric column read as the numeric primitive `to` where the type was narrowed, value for
/// value as Java's `NumericPrimitiveCastRule` (`Number::byteValue` ... `doubleValue`): integers
/// keep their low bits (two's complement wrap); FLOAT / DOUBLE to BIGINT or INT saturate and
/// read NaN as 0 (Java's `(long)` / `(int)` casts, Rust's `as` alike), to SMALLINT / TINYINT go
/// through INT first (`(short) (int) d`); DOUBLE to FLOAT rounds to nearest.
fn numbers_as(
    array: &ArrayRef,
    to: &TypeKind,
    target: &ArrowType,
) -> std::result::Result<ArrayRef, String> {
    use arrow_array::types::{Float32Type, Float64Type, Int16Type, Int32Type, Int64Type, Int8Type};
    let float_source = matches!(array.data_type(), ArrowType::Float32 | ArrowType::Float64);
    let out: ArrayRef = if float_source {
        let d = cast(array, &ArrowType::Float64).map_err(|e| e.to_string())?;
        let d = d.as_primitive::<Float64Type>();
        match to {
            TypeKind::TinyInt => Arc::new(d.unary::<_, Int8Type>(|v| v as i32 as i8)),
            TypeKind::SmallInt => Arc::new(d.unary::<_, Int16Type>(|v| v as i32 as i16)),
            TypeKind::Int => Arc::new(d.unary::<_, Int32Type>(|v| v as i32)),
            TypeKind::BigInt => Arc::new(d.unary::<_, Int64Type>(|v| v as i64)),
            TypeKind::Float => Arc::new(d.unary::<_, Float32Type>(|v| v as f32)),
            _ => Arc::new(d.clone()),
        }
    } else {
        let l = cast(array, &ArrowType::Int64).map_err(|e| e.to_string())?;
        let l = l.as_primitive::<Int64Type>();
        match to {
            TypeKind::TinyInt => Arc::new(l.unary::<_, Int8Type>(|v| v as i8)),
            TypeKind::SmallInt => Arc::new(l.unary::<_, Int16Type>(|v| v as i16)),
            TypeKind::Int => Arc::new(l.unary::<_, Int32Type>(|v| v as i32)),
            TypeKind::Float => Arc::new(l.unary::<_, Float32Type>(|v| v as f32)),
            TypeKind::Double => Arc::new(l.unary::<_, Float64Type>(|v| v as f64)),
            _ => Arc::new(l.clone()),
        }
    };
    conform_physical(&out, target)
}

/// Java's `BinaryStringUtils.toLong` / `toInt` (`StringToNumericPrimitiveCastRule`): an
/// optional sign, then digits, then optionally `.` and digits (the fraction is dropped); no
/// whitespace; the value must fit the target (TINYINT and SMALLINT through `toInt`, then a
/// range check, as Java's `toByte` / `toShort`). The error is Java's reason.
fn java_string_to_int(s: &str, kind: &TypeKind) -> std::result::Result<i64, String> {
    let fail = |reason: &str| Err(format!("For input string: '{s}'. {reason}"));
    let b = s.as_bytes();
    if b.is_empty() {
        return fail("Input is empty.");
    }
    let negative = b[0] == b'-';
    let mut i = usize::from(negative || b[0] == b'+');
    if i == 1 && b.len() == 1 {
        return fail("Input has only positive or negative symbol.");
    }
    // toInt accumulates in 32 bits: TINYINT / SMALLINT / INT overflow at INT's bounds first
    let (min, max) = match kind {
        TypeKind::BigInt => (i64::MIN, i64::MAX),
        _ => (i64::from(i32::MIN), i64::from(i32::MAX)),
    };
    // accumulated negative, as Java (the negative range is the larger)
    let mut acc: i64 = 0;
    while i < b.len() {
        let c = b[i];
        i += 1;
        if c == b'.' {
            break;
        }
        if !c.is_ascii_digit() {
            return fail("Invalid character found.");
        }
        acc = match acc
            .checked_mul(10)
            .and_then(|v| v.checked_sub(i64::from(c - b'0')))
        {
            Some(v) if v >= min => v,
            _ => return fail("Overflow."),
        };
    }
    if b[i..].iter().any(|c| !c.is_ascii_digit()) {
        return fail("Invalid character found.");
    }
    let v = if negative {
        acc
    } else {
        match acc.checked_neg() {
            Some(v) if v <= max => v,
            _ => return fail("Overflow."),
        }
    };
    let fits = match kind {
        TypeKind::TinyInt => i8::try_from(v).is_ok(),
        TypeKind::SmallInt => i16::try_from(v).is_ok(),
        _ => true,
    };
    if fits {
        Ok(v)
    } else {
        fail("Overflow.")
    }
}

/// Java's `BinaryStringUtils.toBoolean` (`StringToBooleanCastRule`): lower-cased, one of `t`,
/// `true`, `y`, `yes`, `1` or `f`, `false`, `n`, `no`, `0`; anything else (spaces included)
/// fails the read with Java's message.
fn strings_to_bools(array: &ArrayRef) -> std::result::Result<ArrayRef, String> {
    let out = parse_strings(array, |s| match s.to_lowercase().as_str() {
        "t" | "true" | "y" | "yes" | "1" => Ok(true),
        "f" | "false" | "n" | "no" | "0" => Ok(false),
        _ => Err(format!("Cannot parse '{s}' as BOOLEAN.")),
    })?;
    Ok(Arc::new(arrow_array::BooleanArray::from(out)))
}

/// Each value of a file's string column (any string flavour) through `parse`, nulls kept; the
/// first value it refuses fails the whole column with its message.
fn parse_strings<T>(
    array: &ArrayRef,
    parse: impl Fn(&str) -> std::result::Result<T, String>,
) -> std::result::Result<Vec<Option<T>>, String> {
    let utf8 = cast(array, &ArrowType::Utf8).map_err(|e| e.to_string())?;
    let strings = utf8
        .as_string_opt::<i32>()
        .ok_or_else(|| format!("expected strings, found {}", array.data_type()))?;
    strings.iter().map(|s| s.map(&parse).transpose()).collect()
}

/// A file's string column read as the integer type `kind` (a STRING -> integer type change),
/// each value parsed as Java does ([`java_string_to_int`]); one Java cannot parse fails the read.
fn strings_to_ints(
    array: &ArrayRef,
    kind: &TypeKind,
    target: &ArrowType,
) -> std::result::Result<ArrayRef, String> {
    let values = parse_strings(array, |s| java_string_to_int(s, kind))?;
    let wide: ArrayRef = Arc::new(arrow_array::Int64Array::from(values));
    // every value fits the target (checked above): the cast only narrows the width
    cast(&wide, target).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::types::Int64Type;
    use arrow_array::{Int32Array, StringArray, TimestampNanosecondArray};
    use arrow_schema::TimeUnit;

    fn t(kind: TypeKind) -> DataType {
        DataType::new(kind)
    }
    fn field(id: i32, name: &str, kind: TypeKind) -> DataField {
        DataField {
            id,
            name: name.into(),
            data_type: t(kind),
            description: None,
        }
    }

    #[test]
    fn widening_casts_are_supported_and_narrowing_refused() {
        use TypeKind::*;
        assert!(cast_supported(&t(Int), &t(BigInt)));
        // numeric primitives narrow as Java does (numbers_narrow_as_java)
        assert!(cast_supported(&t(BigInt), &t(Int)));
        assert!(cast_supported(&t(Float), &t(Double)));
        let dec = |p, s| {
            t(Decimal {
                precision: p,
                scale: s,
            })
        };
        assert!(cast_supported(&dec(10, 2), &dec(12, 4)));
        // DECIMALs narrow as Java (decimals_narrow_as_java)
        assert!(cast_supported(&dec(10, 2), &dec(10, 4)));
        assert!(cast_supported(&t(VarChar(5)), &t(VarChar(10))));
        assert!(!cast_supported(&t(VarChar(10)), &t(VarChar(5))));
        assert!(cast_supported(&t(Timestamp(3)), &t(Timestamp(6))));
        assert!(!cast_supported(&t(Timestamp(6)), &t(Timestamp(3))));
        assert!(cast_supported(&t(Double), &t(Float)));
        assert!(!cast_supported(&t(Double), &dec(10, 2)));
    }

    #[test]
    fn int_widens_to_bigint_and_an_unsupported_cast_is_refused_with_both_types() {
        let a: ArrayRef = Arc::new(Int32Array::from(vec![Some(1), None, Some(-7)]));
        let out = evolve_array(
            &a,
            &t(TypeKind::Int),
            &t(TypeKind::BigInt),
            &ArrowType::Int64,
        )
        .unwrap();
        let v = out.as_primitive::<Int64Type>();
        assert_eq!(v.iter().collect::<Vec<_>>(), vec![Some(1), None, Some(-7)]);
        let e = evolve_array(
            &out,
            &t(TypeKind::BigInt),
            &t(TypeKind::Date),
            &ArrowType::Date32,
        )
        .unwrap_err();
        assert!(e.contains("BIGINT") && e.contains("DATE"), "{e}");
    }

    /// Nested ROW fields are matched by id: a renamed field keeps its values, a field dropped
    /// and re-added (new id) reads as NULL, a widened one is cast.
    #[test]
    fn row_fields_are_matched_by_id() {
        use TypeKind::*;
        let file_t = t(Row(vec![field(5, "a", Int), field(6, "b", VarChar(10))]));
        let table_t = t(Row(vec![
            field(6, "b2", VarChar(20)),
            field(7, "a", Int),
            field(5, "old_a", BigInt),
        ]));
        let file_arrow = file_t.to_arrow();
        let ArrowType::Struct(ff) = &file_arrow else {
            unreachable!()
        };
        let s = StructArray::try_new(
            ff.clone(),
            vec![
                Arc::new(Int32Array::from(vec![1, 2])),
                Arc::new(StringArray::from(vec!["x", "y"])),
            ],
            None,
        )
        .unwrap();
        let target = table_t.to_arrow();
        let out = evolve_array(&(Arc::new(s) as ArrayRef), &file_t, &table_t, &target).unwrap();
        assert_eq!(out.data_type(), &target);
        let o = out.as_struct();
        assert_eq!(o.column(0).as_string::<i32>().value(1), "y");
        assert_eq!(o.column(1).null_count(), 2);
        assert_eq!(o.column(2).as_primitive::<Int64Type>().value(0), 1);
    }

    /// Java's TIMESTAMP_LTZ(9) is INT96 in Parquet, decoded without a zone: the zone is
    /// attached, not converted (arrow-rs refuses to cast to the named zone "UTC").
    #[test]
    fn ltz_gets_its_zone_attached() {
        let a: ArrayRef = Arc::new(TimestampNanosecondArray::from(vec![Some(5), None]));
        let target = ArrowType::Timestamp(TimeUnit::Nanosecond, Some("UTC".into()));
        let out = conform_physical(&a, &target).unwrap();
        assert_eq!(out.data_type(), &target);
        assert_eq!(out.len(), 2);
        // to a coarser unit with the zone
        let t2 = ArrowType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()));
        assert_eq!(conform_physical(&a, &t2).unwrap().data_type(), &t2);
    }

    #[test]
    fn variant_columns_conform_and_shredded_ones_are_refused() {
        use arrow_array::BinaryArray;
        let target = crate::spec::types::variant_arrow_type();
        let bin = |v: &[&[u8]]| Arc::new(BinaryArray::from(v.to_vec())) as ArrayRef;
        // metadata first, children nullable: the same VARIANT
        let file = StructArray::from(vec![
            (
                Arc::new(Field::new("metadata", ArrowType::Binary, true)),
                bin(&[b"\x01\x00\x00"]),
            ),
            (
                Arc::new(Field::new("value", ArrowType::Binary, true)),
                bin(&[b"\x0c\x01"]),
            ),
        ]);
        let file: ArrayRef = Arc::new(file);
        assert!(!is_shredded_variant(&file, &target));
        let out = conform_physical(&file, &target).unwrap();
        assert_eq!(out.data_type(), &target);
        let s = out.as_struct();
        assert_eq!(s.column(0).as_binary::<i32>().value(0), b"\x0c\x01");
        assert_eq!(s.column(1).as_binary::<i32>().value(0), b"\x01\x00\x00");
        // shredded: a typed_value beside them
        let shredded: ArrayRef = Arc::new(StructArray::from(vec![
            (
                Arc::new(Field::new("metadata", ArrowType::Binary, true)),
                bin(&[b"\x01\x00\x00"]),
            ),
            (
                Arc::new(Field::new("value", ArrowType::Binary, true)),
                bin(&[b"\x00"]),
            ),
            (
                Arc::new(Field::new("typed_value", ArrowType::Binary, true)),
                bin(&[b"x"]),
            ),
        ]));
        assert!(is_shredded_variant(&shredded, &target));
        let e = conform_physical(&shredded, &target).unwrap_err();
        assert!(e.contains("shredded VARIANT"), "{e}");
    }

    /// STRING -> integer types: Java's parse, value for value, and its refusals.
    #[test]
    fn strings_parse_to_integers_as_java() {
        use TypeKind::*;
        for (s, k, want) in [
            ("42", BigInt, Some(42)),
            ("-42", Int, Some(-42)),
            ("+7", SmallInt, Some(7)),
            ("3.99", BigInt, Some(3)),
            ("-3.5", Int, Some(-3)),
            ("-.", Int, Some(0)),
            ("9223372036854775807", BigInt, Some(i64::MAX)),
            ("-9223372036854775808", BigInt, Some(i64::MIN)),
            ("2147483647", Int, Some(2147483647)),
            ("-128", TinyInt, Some(-128)),
        ] {
            assert_eq!(java_string_to_int(s, &k).ok(), want, "{s} as {k:?}");
        }
        for (s, k, reason) in [
            ("", BigInt, "Input is empty."),
            ("-", Int, "Input has only positive or negative symbol."),
            (" 1", BigInt, "Invalid character found."),
            ("1e3", BigInt, "Invalid character found."),
            ("1.2.3", BigInt, "Invalid character found."),
            ("9223372036854775808", BigInt, "Overflow."),
            ("2147483648", Int, "Overflow."),
            ("128", TinyInt, "Overflow."),
            ("40000", SmallInt, "Overflow."),
            ("99999999999", SmallInt, "Overflow."),
        ] {
            let e = java_string_to_int(s, &k).unwrap_err();
            assert_eq!(e, format!("For input string: '{s}'. {reason}"));
        }
        assert!(cast_supported(
            &t(VarChar(crate::spec::types::MAX_LEN)),
            &t(BigInt)
        ));
        let a: ArrayRef = Arc::new(StringArray::from(vec![Some("5"), None, Some("-6.7")]));
        let got = evolve_array(
            &a,
            &t(VarChar(crate::spec::types::MAX_LEN)),
            &t(Int),
            &ArrowType::Int32,
        )
        .unwrap();
        assert_eq!(
            got.as_ref(),
            &Int32Array::from(vec![Some(5), None, Some(-6)]) as &dyn arrow_array::Array
        );
        let bad: ArrayRef = Arc::new(StringArray::from(vec!["x"]));
        let e = evolve_array(&bad, &t(VarChar(10)), &t(BigInt), &ArrowType::Int64).unwrap_err();
        assert!(e.contains("For input string: 'x'"), "{e}");
    }

    /// Narrowing numeric casts as Java's `Number::xxxValue`: integer wrap, float saturation
    /// (NaN 0), SMALLINT / TINYINT from floating point through INT.
    #[test]
    fn numbers_narrow_as_java() {
        use arrow_array::{Float64Array, Int16Array, Int64Array, Int8Array};
        use TypeKind::*;
        let longs: ArrayRef = Arc::new(Int64Array::from(vec![
            Some(70000),
            Some(-129),
            None,
            Some(i64::MAX),
        ]));
        let got = evolve_array(&longs, &t(BigInt), &t(SmallInt), &ArrowType::Int16).unwrap();
        let want = Int16Array::from(vec![
            Some(70000i64 as i16),
            Some(-129i64 as i16),
            None,
            Some(-1),
        ]);
        assert_eq!(got.as_ref(), &want as &dyn arrow_array::Array);
        let doubles: ArrayRef =
            Arc::new(Float64Array::from(vec![3.9, -3.9, f64::NAN, 1e20, 300.0]));
        let got = evolve_array(&doubles, &t(Double), &t(BigInt), &ArrowType::Int64).unwrap();
        let want = Int64Array::from(vec![3, -3, 0, i64::MAX, 300]);
        assert_eq!(got.as_ref(), &want as &dyn arrow_array::Array);
        // (byte) (int) 1e20 = (byte) Integer.MAX_VALUE = -1; (byte) 300 = 44
        let got = evolve_array(&doubles, &t(Double), &t(TinyInt), &ArrowType::Int8).unwrap();
        let want = Int8Array::from(vec![3, -3, 0, -1, 44]);
        assert_eq!(got.as_ref(), &want as &dyn arrow_array::Array);
        assert!(cast_supported(&t(Double), &t(Int)) && cast_supported(&t(BigInt), &t(TinyInt)));
    }

    /// DECIMAL casts as Java: HALF_UP to the new scale, NULL past the precision; to integers
    /// truncated and wrapped; integers into a narrow DECIMAL NULL when they do not fit.
    #[test]
    fn decimals_narrow_as_java() {
        use arrow_array::types::{Decimal128Type, Float64Type};
        use arrow_array::{Decimal128Array, Int64Array};
        use TypeKind::*;
        let dec = |p, s| {
            t(Decimal {
                precision: p,
                scale: s,
            })
        };
        // 1.25, -1.25, 1.24, 999.99, null as DECIMAL(5, 2)
        let a: ArrayRef = Arc::new(
            Decimal128Array::from(vec![Some(125), Some(-125), Some(124), Some(99999), None])
                .with_precision_and_scale(5, 2)
                .unwrap(),
        );
        let got = evolve_array(&a, &dec(5, 2), &dec(3, 1), &ArrowType::Decimal128(3, 1)).unwrap();
        let got: Vec<_> = got.as_primitive::<Decimal128Type>().iter().collect();
        assert_eq!(got, vec![Some(13), Some(-13), Some(12), None, None]);
        let got = evolve_array(&a, &dec(5, 2), &t(SmallInt), &ArrowType::Int16).unwrap();
        let got: Vec<_> = got
            .as_primitive::<arrow_array::types::Int16Type>()
            .iter()
            .collect();
        assert_eq!(got, vec![Some(1), Some(-1), Some(1), Some(999), None]);
        let got = evolve_array(&a, &dec(5, 2), &t(Double), &ArrowType::Float64).unwrap();
        let got: Vec<_> = got.as_primitive::<Float64Type>().iter().collect();
        assert_eq!(
            got,
            vec![Some(1.25), Some(-1.25), Some(1.24), Some(999.99), None]
        );
        let ints: ArrayRef = Arc::new(Int64Array::from(vec![5, 123456, -99]));
        let got =
            evolve_array(&ints, &t(BigInt), &dec(4, 1), &ArrowType::Decimal128(4, 1)).unwrap();
        let got: Vec<_> = got.as_primitive::<Decimal128Type>().iter().collect();
        assert_eq!(got, vec![Some(50), None, Some(-990)]);
    }

    /// BOOLEAN casts as Java: strings by its word lists, integers != 0, BOOLEAN as 1 / 0.
    #[test]
    fn booleans_convert_as_java() {
        use arrow_array::types::Decimal128Type;
        use arrow_array::{BooleanArray, Int64Array};
        use TypeKind::*;
        let s: ArrayRef = Arc::new(StringArray::from(vec![
            Some("TRUE"),
            Some("no"),
            Some("1"),
            None,
            Some("Y"),
        ]));
        let got = evolve_array(&s, &t(VarChar(10)), &t(Boolean), &ArrowType::Boolean).unwrap();
        let want = BooleanArray::from(vec![Some(true), Some(false), Some(true), None, Some(true)]);
        assert_eq!(got.as_ref(), &want as &dyn arrow_array::Array);
        let bad: ArrayRef = Arc::new(StringArray::from(vec![" true"]));
        let e = evolve_array(&bad, &t(VarChar(10)), &t(Boolean), &ArrowType::Boolean).unwrap_err();
        assert_eq!(e, "Cannot parse ' true' as BOOLEAN.");
        let ints: ArrayRef = Arc::new(Int64Array::from(vec![0, -3, 7]));
        let got = evolve_array(&ints, &t(BigInt), &t(Boolean), &ArrowType::Boolean).unwrap();
        assert_eq!(
            got.as_ref(),
            &BooleanArray::from(vec![false, true, true]) as &dyn arrow_array::Array
        );
        let b: ArrayRef = Arc::new(BooleanArray::from(vec![Some(true), Some(false), None]));
        let got = evolve_array(&b, &t(Boolean), &t(Int), &ArrowType::Int32).unwrap();
        assert_eq!(
            got.as_ref(),
            &Int32Array::from(vec![Some(1), Some(0), None]) as &dyn arrow_array::Array
        );
        let dec = t(Decimal {
            precision: 3,
            scale: 2,
        });
        let got = evolve_array(&b, &t(Boolean), &dec, &ArrowType::Decimal128(3, 2)).unwrap();
        let got: Vec<_> = got.as_primitive::<Decimal128Type>().iter().collect();
        assert_eq!(got, vec![Some(100), Some(0), None]);
    }
}
