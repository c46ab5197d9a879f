use std::collections::BTreeMap;

use arrow_pyarrow::PyArrowType;
use arrow_schema::Schema;
use paimon_rs_core::table::catalog::{FileSystemCatalog, NewTableSchema};
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
    fn new(warehouse: String, options: BTreeMap<String, String>) -> PyResult<Self> {
        Ok(Catalog {
            inner: FileSystemCatalog::with_options(warehouse, &options).py_err()?,
        })
    }

    fn warehouse(&self) -> String {
        self.inner.warehouse().to_string_lossy().into_owned()
    }

    fn create_database(&self, name: &str, ignore_if_exists: bool) -> PyResult<()> {
        self.inner.create_database(name, ignore_if_exists).py_err()
    }

    fn list_databases(&self) -> PyResult<Vec<String>> {
        self.inner.list_databases().py_err()
    }

    fn list_tables(&self, database: &str) -> PyResult<Vec<String>> {
        self.inner.list_tables(database).py_err()
    }

    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (identifier, schema, partition_keys, primary_keys, options, comment, ignore_if_exists))]
    fn create_table(
        &self,
        identifier: &str,
        schema: PyArrowType<Schema>,
        partition_keys: Vec<String>,
        primary_keys: Vec<String>,
        options: BTreeMap<String, String>,
        comment: Option<String>,
        ignore_if_exists: bool,
    ) -> PyResult<()> {
        let s =
            NewTableSchema::from_arrow(&schema.0, partition_keys, primary_keys, options, comment)
                .map_err(|e| e.with_table(identifier))
                .py_err()?;
        self.inner
            .create_table(identifier, s, ignore_if_exists)
            .py_err()
    }

    fn get_table(&self, identifier: &str) -> PyResult<Table> {
        Ok(Table::from_core(self.inner.get_table(identifier).py_err()?))
    }

    fn drop_table(&self, identifier: &str, ignore_if_not_exists: bool) -> PyResult<()> {
        self.inner
            .drop_table(identifier, ignore_if_not_exists)
            .py_err()
    }
}
