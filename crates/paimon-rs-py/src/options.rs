//! The option declaration of paimon_rs (`paimon_rs_core::option_defs`) for Python: the options
//! reference page and `paimon_rs.options` are checked against it.

use pyo3::prelude::*;

/// Every declared table option as `(key, type, default, status, description, example)`,
/// sorted by key; then the families validated where used as `(prefix, description)`.
#[pyfunction]
#[allow(clippy::type_complexity)]
pub fn option_defs() -> (
    Vec<(
        &'static str,
        &'static str,
        Option<&'static str>,
        &'static str,
        &'static str,
        Option<&'static str>,
    )>,
    Vec<(&'static str, &'static str)>,
) {
    use paimon_rs_core::option_defs::{Kind, Status, OPTIONS, PATTERNS};
    let defs = OPTIONS
        .iter()
        .map(|d| {
            let kind = match d.kind {
                Kind::Enum(_) => "enum",
                k => k.name(),
            };
            let status = match d.status {
                Status::Honoured => "honoured",
                Status::Refused => "refused",
                Status::NoEffect => "no-effect",
            };
            (d.key, kind, d.default, status, d.doc, d.example)
        })
        .collect();
    (defs, PATTERNS.to_vec())
}

/// The values an enum option takes (empty for other types).
#[pyfunction]
pub fn option_enum_values(key: &str) -> Vec<&'static str> {
    match paimon_rs_core::option_defs::find(key).map(|d| d.kind) {
        Some(paimon_rs_core::option_defs::Kind::Enum(v)) => v.to_vec(),
        _ => vec![],
    }
}
