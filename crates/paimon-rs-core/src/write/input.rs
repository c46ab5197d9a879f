//! Checking a user's batch against the table schema: every column present, no unknown column,
//! types that convert without loss, no nulls in NOT NULL columns, valid row kinds. Nothing of a
//! batch that fails a check reaches the table.

use std::collections::HashSet;

use arrow_array::{Array, ArrayRef, Int32Array, Int8Array, RecordBatch, StringArray};
use arrow_cast::cast::{can_cast_types, cast_with_options, CastOptions};
use arrow_schema::{DataType as ArrowType, SchemaRef};

use super::strings::check_strings;
use crate::error::{Error, Result};
use crate::spec::schema::TableSchema;
use crate::spec::types::{DataType, TypeKind};

use crate::spec::row_kind::RowKind;

pub fn parse_row_kind(s: &str) -> Option<i8> {
    RowKind::from_short_string(s).map(RowKind::byte)
}

/// A batch with exactly the table's columns, in schema order, with the table's Arrow types, and
/// the row kind of every row (all +I without `rowkind.field`).
pub struct AlignedBatch {
    pub batch: RecordBatch,
    pub kinds: Option<Int8Array>,
    /// Each row's bucket when an engine's assign stage chose it (a distributed write of a
    /// dynamic-bucket table, `TableWrite::write_assigned`); None: the writer assigns.
    pub buckets: Option<Int32Array>,
}

/// Can a column of Arrow type `src` be written into a column of Paimon type `target` without
/// losing information? Integer narrowing is allowed but checked value by value by the cast;
/// the pairs of [`checked_by_round_trip`] are checked value by value by a round trip.
///
/// The one input-widening rule of `write_arrow` and `write_pandas` (docs/api.md, API: `write_arrow`):
/// a value goes into a column of another type when the column holds it exactly (integers into
/// any integer, FLOAT or DOUBLE column, floating-point numbers into an integer or FLOAT column
/// when whole or exactly representable, timestamps and times into a coarser precision when no
/// digit is lost); strings are never parsed into numbers or dates.
fn compatible(src: &ArrowType, target: &DataType) -> bool {
    use TypeKind::*;
    let is_int = |k: &TypeKind| matches!(k, TinyInt | SmallInt | Int | BigInt);
    match src {
        ArrowType::Null => return true,
        // Paimon has no unsigned types: unsigned integers go into any integer column, checked
        // value by value like signed narrowing (uint8 -> SMALLINT cannot fail).
        ArrowType::UInt8 | ArrowType::UInt16 | ArrowType::UInt32 | ArrowType::UInt64 => {
            return is_int(&target.kind) || matches!(target.kind, Float | Double)
        }
        _ => {}
    }
    let src_t = match DataType::from_arrow(src, true) {
        Ok(t) => t,
        Err(_) => return false,
    };
    match (&src_t.kind, &target.kind) {
        (a, b) if is_int(a) && is_int(b) => true,
        (Float | Double, Float | Double) => true,
        (a, Float | Double) if is_int(a) => true,
        (Float | Double, b) if is_int(b) => true,
        (
            Decimal {
                precision: p1,
                scale: s1,
            },
            Decimal {
                precision: p2,
                scale: s2,
            },
        ) => s1 == s2 && p1 <= p2 || (s1 <= s2 && p1 - s1 <= p2 - s2),
        (VarChar(_) | Char(_), VarChar(_) | Char(_)) => true,
        (VarBinary(_) | Binary(_), VarBinary(_) | Binary(_)) => true,
        // a BLOB (a column, an ARRAY<BLOB> element, a MAP<X, BLOB> value) takes any bytes
        (VarBinary(_) | Binary(_), Blob) => true,
        (Date, Date) | (Boolean, Boolean) | (Time(_), Time(_)) => true,
        (Timestamp(_), Timestamp(_)) | (LocalZonedTimestamp(_), LocalZonedTimestamp(_)) => true,
        (a, b) if src_t.is_nested() && target.is_nested() => same_shape(a, b),
        _ => false,
    }
}

fn same_shape(a: &TypeKind, b: &TypeKind) -> bool {
    use TypeKind::*;
    match (a, b) {
        (Array(x), Array(y)) | (Array(x), Multiset(y)) => compatible(&x.to_arrow(), y),
        (Map(k1, v1), Map(k2, v2)) => {
            compatible(&k1.to_arrow(), k2) && compatible(&v1.to_arrow(), v2)
        }
        (Variant, Variant) => true,
        (Row(f1), Row(f2)) => {
            f1.len() == f2.len()
                && f1.iter().zip(f2).all(|(x, y)| {
                    x.name == y.name && compatible(&x.data_type.to_arrow(), &y.data_type)
                })
        }
        _ => false,
    }
}

fn convert_column(name: &str, col: &ArrayRef, target: &DataType) -> Result<ArrayRef> {
    let want = target.to_arrow();
    if col.data_type() == &want {
        return Ok(col.clone());
    }
    let src = col.data_type();
    if !compatible(src, target) || !can_cast_types(src, &want) {
        return Err(Error::schema(format!(
            "column '{name}': expected {target} (arrow {want}), got arrow {src}, which does not \
             convert to {target} without loss; cast the column first"
        )));
    }
    if matches!(src, ArrowType::Time64(_)) && matches!(target.kind, TypeKind::Time(_))
        || src.is_nested()
    {
        check_whole_millis(name, col.as_ref())?;
    }
    let opts = CastOptions {
        safe: false,
        ..Default::default()
    };
    let out = cast_with_options(col, &want, &opts).map_err(|e| {
        let row = first_unconvertible_row(col, &want)
            .map(|r| format!(" (row {r})"))
            .unwrap_or_default();
        Error::schema(format!(
            "column '{name}': cannot convert {src} to {target}{row}: {e}"
        ))
    })?;
    if checked_by_round_trip(src, &want) {
        if let Some(row) = first_changed_row(col, &out)? {
            let value =
                arrow_cast::display::ArrayFormatter::try_new(col.as_ref(), &Default::default())
                    .map(|f| f.value(row).to_string())
                    .unwrap_or_else(|_| "?".into());
            return Err(Error::schema(format!(
                "column '{name}': row {row} holds {value} ({src}), which {target} cannot hold \
                 exactly; values convert between types only without loss: cast or round the \
                 column first"
            )));
        }
    }
    Ok(out)
}

/// Conversions the cast performs without an error but possibly with a loss (it rounds a
/// large integer to the nearest float, truncates a fraction or sub-unit digits), so that each
/// value is checked by a round trip: integers into FLOAT / DOUBLE, floating-point numbers into
/// integers or a narrower float, timestamps into a coarser unit.
fn checked_by_round_trip(src: &ArrowType, want: &ArrowType) -> bool {
    use ArrowType as A;
    let float = |t: &ArrowType| matches!(t, A::Float16 | A::Float32 | A::Float64);
    let unit_rank = |u: &arrow_schema::TimeUnit| match u {
        arrow_schema::TimeUnit::Second => 0,
        arrow_schema::TimeUnit::Millisecond => 1,
        arrow_schema::TimeUnit::Microsecond => 2,
        arrow_schema::TimeUnit::Nanosecond => 3,
    };
    match (src, want) {
        (s, w) if s.is_integer() && float(w) => true,
        (s, w) if float(s) && w.is_integer() => true,
        (s, w) if float(s) && float(w) => s.primitive_width() > w.primitive_width(),
        (A::Timestamp(a, _), A::Timestamp(b, _)) => unit_rank(a) > unit_rank(b),
        _ => false,
    }
}

/// The first row whose value `out` (the cast of `col`) does not hold exactly: cast back, a
/// value that differs (or became null) was changed. NaN equals NaN here (arrow's total order).
fn first_changed_row(col: &ArrayRef, out: &ArrayRef) -> Result<Option<usize>> {
    let back = cast_with_options(out, col.data_type(), &CastOptions::default())?;
    let changed = arrow_ord::cmp::distinct(col, &back)?;
    Ok((0..changed.len()).find(|&i| changed.value(i)))
}

/// Paimon's TIME stores milliseconds of the day, and the cast from `time64` truncates: refuse
/// a value with sub-millisecond digits instead of dropping them, in `col` itself or nested in
/// it (list elements, map keys and values, struct fields at any depth: Paimon's TIME inside
/// `ARRAY<TIME>`, `MAP<TIME, X>`, a ROW is milliseconds too). Only the values a row references are checked (a list's offset
/// range, so that a sliced batch is judged by its own rows) and only under valid parents (a
/// null struct or list keeps whatever its children hold); the error names the top-level row.
fn check_whole_millis(name: &str, col: &dyn Array) -> Result<()> {
    if !holds_time64(col.data_type()) {
        return Ok(());
    }
    let within = match col.data_type() {
        ArrowType::Time64(_) => "",
        _ => ", in a nested value,",
    };
    match (0..col.len()).find_map(|row| sub_millis_at(col, row).map(|bad| (row, bad))) {
        None => Ok(()),
        Some((row, (v, unit_name))) => Err(Error::schema(format!(
            "column '{name}': row {row} holds{within} the time {v} {unit_name}, which has \
             sub-millisecond digits; Paimon's TIME stores milliseconds, so writing it would \
             drop them: round or truncate the column to milliseconds first"
        ))),
    }
}

/// Whether a `time64` sits anywhere in `t` (the nested check is skipped otherwise).
fn holds_time64(t: &ArrowType) -> bool {
    match t {
        ArrowType::Time64(_) => true,
        ArrowType::List(f)
        | ArrowType::LargeList(f)
        | ArrowType::FixedSizeList(f, _)
        | ArrowType::Map(f, _) => holds_time64(f.data_type()),
        ArrowType::Struct(fields) => fields.iter().any(|f| holds_time64(f.data_type())),
        _ => false,
    }
}

/// The first `time64` value with sub-millisecond digits (value, unit) within slot `i` of
/// `col`, a null slot holding none: list-like slots are walked over the values they reference.
fn sub_millis_at(col: &dyn Array, i: usize) -> Option<(i64, &'static str)> {
    use arrow_array::cast::AsArray;
    use arrow_array::types::{Time64MicrosecondType, Time64NanosecondType};
    use arrow_schema::TimeUnit;
    if col.is_null(i) {
        return None;
    }
    // the child slots `range` of `values` (no slice is made: this runs once per row)
    let first_in = |values: &dyn Array, range: std::ops::Range<usize>| {
        range.into_iter().find_map(|j| sub_millis_at(values, j))
    };
    match col.data_type() {
        ArrowType::Time64(TimeUnit::Microsecond) => {
            let v = col.as_primitive::<Time64MicrosecondType>().value(i);
            (v % 1_000 != 0).then_some((v, "us"))
        }
        ArrowType::Time64(TimeUnit::Nanosecond) => {
            let v = col.as_primitive::<Time64NanosecondType>().value(i);
            (v % 1_000_000 != 0).then_some((v, "ns"))
        }
        ArrowType::List(_) => {
            let l = col.as_list::<i32>();
            let o = l.value_offsets();
            first_in(l.values().as_ref(), o[i] as usize..o[i + 1] as usize)
        }
        ArrowType::LargeList(_) => {
            let l = col.as_list::<i64>();
            let o = l.value_offsets();
            first_in(l.values().as_ref(), o[i] as usize..o[i + 1] as usize)
        }
        ArrowType::FixedSizeList(..) => {
            // a slice of a FixedSizeListArray slices its values: slot i is values[i*n..(i+1)*n]
            let l = col.as_fixed_size_list();
            let n = l.value_length() as usize;
            first_in(l.values().as_ref(), i * n..(i + 1) * n)
        }
        ArrowType::Map(..) => {
            let m = col.as_map();
            let o = m.value_offsets();
            first_in(m.entries(), o[i] as usize..o[i + 1] as usize)
        }
        ArrowType::Struct(_) => col
            .as_struct()
            .columns()
            .iter()
            .find_map(|c| sub_millis_at(c.as_ref(), i)),
        _ => None,
    }
}

/// The first row whose value a cast to `want` turns into null (the value that does not fit);
/// only called once a checked cast has failed.
fn first_unconvertible_row(col: &ArrayRef, want: &ArrowType) -> Option<usize> {
    let lenient = cast_with_options(col, want, &CastOptions::default()).ok()?;
    (0..col.len()).find(|&i| col.is_valid(i) && lenient.is_null(i))
}

/// Align `batch` to the table. `target` is the table's Arrow schema (field ids in metadata);
/// `first_row` is the number of rows written before this batch in the same call, so that a
/// message names the row of the caller's input.
pub fn align_batch(
    schema: &TableSchema,
    target: &SchemaRef,
    batch: &RecordBatch,
    rowkind_field: Option<&str>,
    first_row: usize,
) -> Result<AlignedBatch> {
    let input = batch.schema();
    let mut seen = HashSet::with_capacity(input.fields().len());
    for f in input.fields() {
        if schema.field(f.name()).is_none() {
            return Err(Error::schema(format!(
                "unknown column '{}' (table columns: {})",
                f.name(),
                schema.field_names().join(", ")
            )));
        }
        if !seen.insert(f.name().as_str()) {
            return Err(Error::schema(format!(
                "column '{}' appears more than once in the batch",
                f.name()
            )));
        }
    }
    let mut columns = Vec::with_capacity(schema.fields.len());
    for field in &schema.fields {
        let idx = input.index_of(&field.name).map_err(|_| {
            Error::schema(format!(
                "missing column '{}' of type {}",
                field.name, field.data_type
            ))
        })?;
        let raw = batch.column(idx);
        check_strings(raw.as_ref()).map_err(|m| {
            let at = if m.path.is_empty() {
                String::new()
            } else {
                format!(" (at {}{})", field.name, m.path)
            };
            Error::schema(format!(
                "column '{}'{at}: malformed string data in row {}: {}; the batch's producer \
                 handed over bytes that are not a valid Arrow string column",
                field.name,
                first_row + m.row,
                m.what
            ))
        })?;
        let col = convert_column(&field.name, raw, &field.data_type)?;
        if !field.data_type.nullable && col.null_count() > 0 {
            let what = if schema.primary_keys.contains(&field.name) {
                "a primary-key column"
            } else {
                "NOT NULL"
            };
            return Err(Error::schema(format!(
                "column '{}' is {what} but the batch has {} null value(s)",
                field.name,
                col.null_count()
            )));
        }
        columns.push(col);
    }
    let out = RecordBatch::try_new(target.clone(), columns)
        .map_err(|e| Error::schema(format!("batch does not fit the table schema: {e}")))?;
    let kinds = match rowkind_field {
        None => None,
        Some(name) => {
            let idx = schema.field_index(name).ok_or_else(|| {
                Error::schema(format!(
                    "option 'rowkind.field': Rowkind field: '{name}' can not be found in table \
                     schema."
                ))
            })?;
            Some(parse_kinds(name, out.column(idx))?)
        }
    };
    Ok(AlignedBatch {
        batch: out,
        kinds,
        buckets: None,
    })
}

fn parse_kinds(name: &str, col: &ArrayRef) -> Result<Int8Array> {
    let s = cast_with_options(col, &ArrowType::Utf8, &CastOptions::default())
        .map_err(|e| Error::schema(format!("rowkind.field '{name}': {e}")))?;
    let s = s
        .as_any()
        .downcast_ref::<StringArray>()
        .ok_or_else(|| Error::schema(format!("rowkind.field '{name}' must be a string column")))?;
    let mut out = Vec::with_capacity(s.len());
    for i in 0..s.len() {
        if s.is_null(i) {
            return Err(Error::schema(format!(
                "rowkind.field '{name}' is null in row {i}"
            )));
        }
        let v = s.value(i);
        out.push(parse_row_kind(v).ok_or_else(|| {
            Error::schema(format!(
                "rowkind.field '{name}' has '{v}' in row {i}; expected +I, -U, +U or -D"
            ))
        })?);
    }
    Ok(Int8Array::from(out))
}

/// Keep only the rows where `keep` is true (used for `ignore-delete`).
pub fn filter_rows(b: &AlignedBatch, keep: &arrow_array::BooleanArray) -> Result<AlignedBatch> {
    let batch = arrow_select::filter::filter_record_batch(&b.batch, keep)?;
    let kinds = match &b.kinds {
        Some(k) => {
            let f = arrow_select::filter::filter(k, keep)?;
            Some(
                f.as_any()
                    .downcast_ref::<Int8Array>()
                    .cloned()
                    .ok_or_else(|| Error::Internal("kinds downcast".into()))?,
            )
        }
        None => None,
    };
    let buckets = match &b.buckets {
        Some(bk) => Some(
            arrow_select::filter::filter(bk, keep)?
                .as_any()
                .downcast_ref::<Int32Array>()
                .cloned()
                .ok_or_else(|| Error::Internal("buckets downcast".into()))?,
        ),
        None => None,
    };
    Ok(AlignedBatch {
        batch,
        kinds,
        buckets,
    })
}
