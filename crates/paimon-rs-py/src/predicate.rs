//! Python predicate trees -> core predicates. Python hands over
//! `("and" | "or", [children])` or `("leaf", field, op, literals)` where `literals` is a pyarrow
//! Array already cast to the column's type.

use arrow::array::{make_array, ArrayData};
use arrow_pyarrow::FromPyArrow;
use paimon_rs_core::{
    datum_from_arrow, filter_column_type, Error, FileStoreTable, LeafOp, Predicate,
};
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};

use crate::errors::IntoPy;

pub fn convert(table: &FileStoreTable, obj: &Bound<'_, PyAny>) -> PyResult<Predicate> {
    let t = obj.cast::<PyTuple>()?;
    let tag: String = t.get_item(0)?.extract()?;
    match tag.as_str() {
        "and" | "or" => {
            let children = t.get_item(1)?;
            let list = children.cast::<PyList>()?;
            let ps = list
                .iter()
                .map(|c| convert(table, &c))
                .collect::<PyResult<Vec<_>>>()?;
            Ok(if tag == "and" {
                Predicate::And(ps)
            } else {
                Predicate::Or(ps)
            })
        }
        "leaf" => {
            let field: String = t.get_item(1)?.extract()?;
            let op: String = t.get_item(2)?.extract()?;
            let op = LeafOp::parse(&op).py_err()?;
            // a column, or `_ROW_ID` / `_SEQUENCE_NUMBER` of a row-tracking table
            let data_type = filter_column_type(table, &field)
                .and_then(|t| {
                    t.ok_or_else(|| {
                        Error::schema(format!("filter column '{field}' is not in the table"))
                    })
                })
                .py_err()?;
            let data = ArrayData::from_pyarrow_bound(&t.get_item(3)?)?;
            let arr = make_array(data);
            let lits = (0..arr.len())
                .map(|i| datum_from_arrow(arr.as_ref(), i, &data_type))
                .collect::<Result<Vec<_>, _>>()
                .py_err()?;
            Predicate::leaf(&field, op, lits).py_err()
        }
        other => Err(pyo3::exceptions::PyValueError::new_err(format!(
            "bad predicate tag {other}"
        ))),
    }
}
