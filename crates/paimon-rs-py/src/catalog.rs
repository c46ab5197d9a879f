use std::collections::BTreeMap;

use arrow_pyarrow::PyArrowType;
use arrow_schema::Schema;
use paimon_rs_core::{DataType, FileSystemCatalog, NewTableSchema, SchemaChange};
use pyo3::prelude::*;

use crate::errors::IntoPy;
use crate::table::Table;

#[pyclass(module = "paimon_rs._core")]
pub struct Catalog {
    inner: FileSystemCatalog,
}

#[pymethods]
impl Catalog {
    /// A catalog over `warehouse` (a local path or an object store URI); the file system
    /// options among `options` (`s3.endpoint`, ...) configure its object store.
    #[new]
    #[pyo3(signature = (warehouse, options=BTreeMap::new()))]
    fn new(py: Python<'_>, warehouse: String, options: BTreeMap<String, String>) -> PyResult<Self> {
        // creates the warehouse directory (a PUT-free no-op on object stores, but the store's
        // configuration may read credentials): without the GIL, as every call that may do I/O
        let inner = py
            .detach(|| FileSystemCatalog::with_options(warehouse, &options))
            .py_err()?;
        Ok(Catalog { inner })
    }

    fn warehouse(&self) -> String {
        self.inner.warehouse().to_string_lossy().into_owned()
    }

    fn create_database(&self, py: Python<'_>, name: &str, ignore_if_exists: bool) -> PyResult<()> {
        py.detach(|| self.inner.create_database(name, ignore_if_exists))
            .py_err()
    }

    fn list_databases(&self, py: Python<'_>) -> PyResult<Vec<String>> {
        py.detach(|| self.inner.list_databases()).py_err()
    }

    fn list_tables(&self, py: Python<'_>, database: &str) -> PyResult<Vec<String>> {
        py.detach(|| self.inner.list_tables(database)).py_err()
    }

    /// Create a table from `schema` (a pyarrow schema) or, when given, `fields_json` (a JSON
    /// list of Paimon-typed fields, pypaimon's `Schema(fields=[DataField...])`).
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (identifier, schema, partition_keys, primary_keys, options, comment, ignore_if_exists, fields_json=None))]
    fn create_table(
        &self,
        py: Python<'_>,
        identifier: &str,
        schema: Option<PyArrowType<Schema>>,
        partition_keys: Vec<String>,
        primary_keys: Vec<String>,
        options: BTreeMap<String, String>,
        comment: Option<String>,
        ignore_if_exists: bool,
        fields_json: Option<String>,
    ) -> PyResult<()> {
        let s = match (fields_json, schema) {
            (Some(f), _) => {
                NewTableSchema::from_fields_json(&f, partition_keys, primary_keys, options, comment)
            }
            (None, Some(a)) => {
                NewTableSchema::from_arrow(&a.0, partition_keys, primary_keys, options, comment)
            }
            (None, None) => Err(paimon_rs_core::Error::invalid(
                "create_table needs a pyarrow schema or Paimon fields",
            )),
        }
        .map_err(|e| e.with_table(identifier))
        .py_err()?;
        py.detach(|| self.inner.create_table(identifier, s, ignore_if_exists))
            .py_err()
    }

    fn get_table(&self, py: Python<'_>, identifier: &str) -> PyResult<Table> {
        let t = py.detach(|| self.inner.get_table(identifier)).py_err()?;
        Ok(Table::from_core(t))
    }

    /// `changes_json`: a JSON list of pypaimon `SchemaChange`s; returns the new schema's JSON
    /// (None: a missing table with `ignore_if_not_exists`).
    fn alter_table(
        &self,
        py: Python<'_>,
        identifier: &str,
        changes_json: &str,
        ignore_if_not_exists: bool,
    ) -> PyResult<Option<String>> {
        let v: serde_json::Value = serde_json::from_str(changes_json).map_err(|e| {
            pyo3::exceptions::PyValueError::new_err(format!("schema changes: bad JSON: {e}"))
        })?;
        let changes = v
            .as_array()
            .map(|a| {
                a.iter()
                    .map(SchemaChange::from_json)
                    .collect::<Result<Vec<_>, _>>()
            })
            .unwrap_or_else(|| Ok(vec![]))
            .map_err(|e| e.with_table(identifier))
            .py_err()?;
        py.detach(|| {
            self.inner
                .alter_table(identifier, &changes, ignore_if_not_exists)
        })
        .map(|s| s.map(|s| s.to_json_string()))
        .py_err()
    }

    fn drop_table(
        &self,
        py: Python<'_>,
        identifier: &str,
        ignore_if_not_exists: bool,
    ) -> PyResult<()> {
        py.detach(|| self.inner.drop_table(identifier, ignore_if_not_exists))
            .py_err()
    }

    /// Delete the database and everything in it (the caller checked `cascade`).
    fn remove_database(&self, py: Python<'_>, name: &str) -> PyResult<()> {
        py.detach(|| self.inner.remove_database(name)).py_err()
    }

    /// Rename a table (a copy then a delete on an object store).
    fn rename_table(&self, py: Python<'_>, from: &str, to: &str) -> PyResult<()> {
        py.detach(|| self.inner.rename_table(from, to)).py_err()
    }
}

/// The Paimon type (schema-JSON form, as a JSON string) of an Arrow field: how
/// `SchemaChange.add_column(name, pa.int64())` names its type.
#[pyfunction]
pub fn paimon_type_json(field: PyArrowType<arrow_schema::Field>) -> PyResult<String> {
    // a list of / map to `large_binary` is `ARRAY<BLOB>` / `MAP<X, BLOB>` as in pypaimon (a
    // `large_binary` column itself is made BLOB by `Schema`, BYTES by `add_column`)
    let (a, nullable) = (field.0.data_type(), field.0.is_nullable());
    let t = match a {
        arrow_schema::DataType::LargeBinary => DataType::from_arrow(a, nullable),
        _ => paimon_rs_core::column_type_from_arrow(a, nullable),
    }
    .map_err(|e| e.with_table(""))
    .py_err()?;
    Ok(t.to_json().to_string())
}

/// The Arrow field (the type paimon_rs reads and writes the column as) of a Paimon field given
/// in the schema file's JSON form (`{"name": .., "type": ..}`); a type paimon_rs cannot hold
/// (BLOB, VECTOR, ...) is refused naming the field.
#[pyfunction]
pub fn arrow_field_of(field_json: &str) -> PyResult<PyArrowType<arrow_schema::Field>> {
    let v: serde_json::Value = serde_json::from_str(field_json)
        .map_err(|e| pyo3::exceptions::PyValueError::new_err(format!("field: bad JSON: {e}")))?;
    let name = v
        .get("name")
        .and_then(serde_json::Value::as_str)
        .unwrap_or("");
    let t = v
        .get("type")
        .ok_or_else(|| paimon_rs_core::Error::schema(format!("column '{name}' without a type")))
        .and_then(|t| DataType::from_json(t).map_err(|e| paimon_rs_core::column_error(name, e)))
        .map_err(|e| e.with_table(""))
        .py_err()?;
    Ok(PyArrowType(arrow_schema::Field::new(
        name,
        t.to_arrow(),
        t.nullable,
    )))
}
