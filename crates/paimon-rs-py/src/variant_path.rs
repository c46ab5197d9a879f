//! The per-row kernel of `paimon_rs.variant_get` (python/paimon_rs/variant_path.py is the API
//! layer: argument checks, path parsing, chunks, the reference for what the kernel leaves).

use arrow::array::{Array, ArrayData, StructArray};
use arrow_pyarrow::PyArrowType;
use paimon_rs_core::{
    variant_edit as edit, variant_get_nested as nested, variant_get_scalars as kernel,
    VariantEdit as Edit, VariantFail, VariantKind as Kind, VariantSeg as Seg,
};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;

/// A path's segments as `(is_index, key, index)`, its kind code, the Arrow type's text and the
/// Arrow type (the time zone, precision and scale of codes 12 and 13).
type PathArg = (
    Vec<(bool, String, usize)>,
    u8,
    String,
    PyArrowType<arrow_schema::DataType>,
);

fn kind_of(code: u8, t: &arrow_schema::DataType) -> PyResult<Kind> {
    use arrow_schema::{DataType as T, TimeUnit};
    Ok(match (code, t) {
        (11, T::Date32) => Kind::Date32,
        (12, T::Timestamp(TimeUnit::Microsecond, tz)) => Kind::TimestampMicros(tz.clone()),
        (13, T::Decimal128(p, s)) if *s >= 0 => Kind::Decimal128(*p, *s),
        (11..=13, _) => {
            return Err(PyValueError::new_err(format!(
                "VARIANT kind code {code} does not fit the Arrow type {t}"
            )))
        }
        _ => kind_of_scalar(code)?,
    })
}

fn kind_of_scalar(code: u8) -> PyResult<Kind> {
    Ok(match code {
        0 => Kind::Bool,
        1 => Kind::Int8,
        2 => Kind::Int16,
        3 => Kind::Int32,
        4 => Kind::Int64,
        5 => Kind::Float32,
        6 => Kind::Float64,
        7 => Kind::Utf8,
        8 => Kind::LargeUtf8,
        9 => Kind::Binary,
        10 => Kind::LargeBinary,
        _ => {
            return Err(PyValueError::new_err(format!(
                "unknown VARIANT kind code {code}"
            )))
        }
    })
}

/// A path's segments from `(is_index, key, index)` triples.
fn segments(segs: &[(bool, String, usize)]) -> Vec<Seg> {
    segs.iter()
        .map(|(is_index, key, index)| {
            if *is_index {
                Seg::Index(*index)
            } else {
                Seg::Key(key.clone())
            }
        })
        .collect()
}

/// `variant_get` of one chunk for scalar Arrow types (dates, microsecond timestamps and
/// decimals included): one array per path, or None when a row
/// needs the Python reference (the caller redoes the chunk there). The GIL is released.
#[pyfunction]
pub fn variant_get_scalars(
    py: Python<'_>,
    chunk: PyArrowType<ArrayData>,
    paths: Vec<PathArg>,
) -> PyResult<Option<Vec<PyArrowType<ArrayData>>>> {
    let mut parsed = Vec::with_capacity(paths.len());
    for (segs, code, _, t) in &paths {
        parsed.push((segments(segs), kind_of(*code, &t.0)?));
    }
    let data = chunk.0;
    if !matches!(data.data_type(), arrow_schema::DataType::Struct(_)) {
        return Ok(None);
    }
    let col = StructArray::from(data);
    let read = crate::pool::detach(py, || kernel(&col, &parsed));
    got(read, |at, _| paths.get(at).map_or("", |p| p.2.as_str()))
}

/// The arrays of a `variant_get` kernel, its refusals as the Python reference raises them
/// (`text(path, node)`: the text of the type a value did not match), or None for a chunk the
/// reference must redo.
fn got<'t>(
    read: Result<Vec<arrow::array::ArrayRef>, VariantFail>,
    text: impl Fn(usize, usize) -> &'t str,
) -> PyResult<Option<Vec<PyArrowType<ArrayData>>>> {
    match read {
        Ok(arrays) => Ok(Some(
            arrays
                .into_iter()
                .map(|a| PyArrowType(a.to_data()))
                .collect(),
        )),
        Err(VariantFail::Malformed(m)) => {
            Err(PyValueError::new_err(format!("MALFORMED_VARIANT: {m}")))
        }
        Err(VariantFail::Mismatch(at)) => Err(mismatch(text(at, 0))),
        Err(VariantFail::MismatchAt(at, node)) => Err(mismatch(text(at, node))),
        Err(VariantFail::Unsupported) => Ok(None),
        Err(_) => Err(PyValueError::new_err("VARIANT path read failed")),
    }
}

fn mismatch(t: &str) -> PyErr {
    PyTypeError::new_err(format!("VARIANT path type does not match {t}"))
}

/// A path of `variant_get_nested`: its segments, the Arrow type, and the text of each node
/// of the type in preorder (a struct's fields in order, a list's item, a map's item).
type NestedArg = (
    Vec<(bool, String, usize)>,
    PyArrowType<arrow_schema::DataType>,
    Vec<String>,
);

/// `variant_get` of one chunk for any types the kernel reads, structs, lists (large and
/// fixed-size too) and string-keyed maps included, recursively: one array per path, or None
/// when a row needs the Python reference (the caller redoes the chunk there). The GIL is
/// released.
#[pyfunction]
pub fn variant_get_nested(
    py: Python<'_>,
    chunk: PyArrowType<ArrayData>,
    paths: Vec<NestedArg>,
) -> PyResult<Option<Vec<PyArrowType<ArrayData>>>> {
    let data = chunk.0;
    if !matches!(data.data_type(), arrow_schema::DataType::Struct(_)) {
        return Ok(None);
    }
    let col = StructArray::from(data);
    let parsed: Vec<(Vec<Seg>, arrow_schema::DataType)> = paths
        .iter()
        .map(|(segs, t, _)| (segments(segs), t.0.clone()))
        .collect();
    let read = crate::pool::detach(py, || nested(&col, &parsed));
    got(read, |at, node| {
        paths
            .get(at)
            .and_then(|p| p.2.get(node))
            .map_or("", String::as_str)
    })
}

/// One path of `variant_replace` / `variant_set`: its segments, its replacement values (one
/// per row of the chunk, or one for every row when `broadcast`), the path's text and the
/// replacement type's text (for the messages).
type EditArg = (
    Vec<(bool, String, usize)>,
    PyArrowType<ArrayData>,
    bool,
    String,
    String,
);

/// `variant_replace` (`upsert` false) / `variant_set` of one chunk, the GIL released:
/// `(True, chunk)` (None: no row changed), or `(False, None)` when a row needs the Python
/// reference (the caller redoes the chunk there).
#[pyfunction]
pub fn variant_edit(
    py: Python<'_>,
    chunk: PyArrowType<ArrayData>,
    edits: Vec<EditArg>,
    strict: bool,
    upsert: bool,
) -> PyResult<(bool, Option<PyArrowType<ArrayData>>)> {
    let data = chunk.0;
    if !matches!(data.data_type(), arrow_schema::DataType::Struct(_)) {
        return Ok((false, None));
    }
    let col = StructArray::from(data);
    let mut parsed = Vec::with_capacity(edits.len());
    let mut texts = Vec::with_capacity(edits.len());
    for (segs, values, broadcast, path, type_text) in edits {
        parsed.push(Edit {
            path: segments(&segs),
            values: arrow::array::make_array(values.0),
            broadcast,
        });
        texts.push((path, type_text));
    }
    let text = |at: usize| texts.get(at).map_or("", |t| t.0.as_str());
    match crate::pool::detach(py, || edit(&col, &parsed, strict, upsert)) {
        Ok(out) => Ok((true, out.map(|a| PyArrowType(a.to_data())))),
        Err(VariantFail::Malformed(m)) => {
            Err(PyValueError::new_err(format!("MALFORMED_VARIANT: {m}")))
        }
        Err(VariantFail::Mismatch(at)) => Err(mismatch(texts.get(at).map_or("", |t| t.1.as_str()))),
        Err(VariantFail::Missing(at)) => path_error("VARIANT path does not exist", text(at)),
        Err(VariantFail::NoParent(at)) => {
            path_error("VARIANT parent path does not exist", text(at))
        }
        Err(VariantFail::IndexInsert(at)) => {
            path_error("VARIANT array index insertion is not supported", text(at))
        }
        Err(VariantFail::NotObject(at)) => {
            path_error("VARIANT parent path is not an object", text(at))
        }
        Err(VariantFail::SizeLimit) => Err(PyValueError::new_err("VARIANT_CONSTRUCTOR_SIZE_LIMIT")),
        Err(VariantFail::Unsupported | VariantFail::MismatchAt(..)) => Ok((false, None)),
    }
}

fn path_error<T>(what: &str, path: &str) -> PyResult<T> {
    Err(PyValueError::new_err(format!("{what}: {path}")))
}
