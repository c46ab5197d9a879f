//! `paimon_rs._core`: the thin binding of paimon-rs-core. Converts arguments, releases the GIL
//! around engine work, converts results. The pypaimon-shaped API is in `python/paimon_rs`.

mod branches;
mod catalog;
mod compact_progress;
mod compaction;
mod compaction_ops;
mod dynamic;
mod errors;
mod fileio;
mod logbridge;
mod malloc_tuning;
mod options;
mod pack;
mod pool;
mod predicate;
mod snapshots;
mod table;
mod variant_path;

use pyo3::prelude::*;

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    // First, before any engine allocation: glibc's thresholds (process-wide; see the module).
    malloc_tuning::init();
    m.add_function(wrap_pyfunction!(malloc_tuning::malloc_tuning, m)?)?;
    logbridge::init(m.py());
    malloc_tuning::warn_if_invalid();
    logbridge::flush(m.py());
    m.add_function(wrap_pyfunction!(logbridge::flush_logs, m)?)?;
    m.add_function(wrap_pyfunction!(variant_path::variant_get_scalars, m)?)?;
    m.add_function(wrap_pyfunction!(variant_path::variant_get_nested, m)?)?;
    m.add_function(wrap_pyfunction!(options::option_defs, m)?)?;
    m.add_function(wrap_pyfunction!(table::slice_splits, m)?)?;
    m.add_function(wrap_pyfunction!(table::slice_splits_by_row_id, m)?)?;
    m.add_function(wrap_pyfunction!(options::option_enum_values, m)?)?;
    m.add_function(wrap_pyfunction!(variant_path::variant_edit, m)?)?;
    m.add_class::<catalog::Catalog>()?;
    m.add_class::<compaction::UniversalCompaction>()?;
    m.add_class::<table::Table>()?;
    m.add_class::<table::TableWrite>()?;
    m.add_class::<table::TableCommit>()?;
    m.add_class::<table::CommitMessage>()?;
    m.add_class::<table::Split>()?;
    m.add_class::<table::DataFileMeta>()?;
    m.add_class::<table::TableRead>()?;
    m.add_class::<table::BatchStream>()?;
    m.add_class::<pack::ShufflePacker>()?;
    m.add_class::<dynamic::DynamicAssignTask>()?;
    m.add_class::<dynamic::CrossPartitionAssignTask>()?;
    m.add_function(wrap_pyfunction!(dynamic::assigner_channels, m)?)?;
    m.add_function(wrap_pyfunction!(dynamic::cross_partition_channels, m)?)?;
    m.add_function(wrap_pyfunction!(dynamic::num_assign_tasks, m)?)?;
    m.add_function(wrap_pyfunction!(table::bucket_of_rows, m)?)?;
    m.add_function(wrap_pyfunction!(table::decode_ahead_threads, m)?)?;
    m.add_function(wrap_pyfunction!(table::bitmap_selection_stats, m)?)?;
    m.add_function(wrap_pyfunction!(table::release_lookup_caches, m)?)?;
    m.add_function(wrap_pyfunction!(compaction_ops::compaction_plan, m)?)?;
    m.add_function(wrap_pyfunction!(compaction_ops::sort_compaction_plan, m)?)?;
    m.add_function(wrap_pyfunction!(compaction_ops::sort_compaction_commit, m)?)?;
    m.add_function(wrap_pyfunction!(
        compaction_ops::sort_compaction_messages,
        m
    )?)?;
    m.add_function(wrap_pyfunction!(compaction_ops::sort_write_run, m)?)?;
    m.add_function(wrap_pyfunction!(compaction_ops::sort_key_buckets, m)?)?;
    m.add_function(wrap_pyfunction!(compaction_ops::compaction_summary, m)?)?;
    m.add_function(wrap_pyfunction!(compaction_ops::compaction_work, m)?)?;
    m.add_function(wrap_pyfunction!(compaction_ops::compact_bucket, m)?)?;
    m.add_function(wrap_pyfunction!(compaction_ops::compact_full_window, m)?)?;
    m.add_function(wrap_pyfunction!(table::partition_bucket_of, m)?)?;
    m.add_function(wrap_pyfunction!(pack::shuffle_keys, m)?)?;
    m.add_function(wrap_pyfunction!(catalog::paimon_type_json, m)?)?;
    m.add_function(wrap_pyfunction!(catalog::arrow_field_of, m)?)?;
    m.add_function(wrap_pyfunction!(snapshots::snapshot_ids, m)?)?;
    m.add_function(wrap_pyfunction!(snapshots::earliest_snapshot_id, m)?)?;
    m.add_function(wrap_pyfunction!(snapshots::snapshot_json, m)?)?;
    m.add_function(wrap_pyfunction!(snapshots::snapshots_json, m)?)?;
    m.add_function(wrap_pyfunction!(snapshots::partition_stats, m)?)?;
    m.add_function(wrap_pyfunction!(snapshots::live_files, m)?)?;
    m.add_function(wrap_pyfunction!(snapshots::changelog_files, m)?)?;
    m.add_function(wrap_pyfunction!(snapshots::file_details, m)?)?;
    m.add_function(wrap_pyfunction!(snapshots::manifest_files, m)?)?;
    m.add_function(wrap_pyfunction!(snapshots::index_files, m)?)?;
    m.add_function(wrap_pyfunction!(snapshots::schemas_json, m)?)?;
    m.add_function(wrap_pyfunction!(snapshots::tags_json, m)?)?;
    m.add_function(wrap_pyfunction!(snapshots::branch_times, m)?)?;
    for f in [
        wrap_pyfunction!(branches::current_branch, m)?,
        wrap_pyfunction!(branches::list_branches, m)?,
        wrap_pyfunction!(branches::create_branch, m)?,
        wrap_pyfunction!(branches::drop_branch, m)?,
        wrap_pyfunction!(branches::rename_branch, m)?,
        wrap_pyfunction!(branches::fast_forward, m)?,
        wrap_pyfunction!(branches::rename_tag, m)?,
        wrap_pyfunction!(branches::replace_tag, m)?,
        wrap_pyfunction!(branches::rollback_to_timestamp, m)?,
        wrap_pyfunction!(fileio::fio_status, m)?,
        wrap_pyfunction!(fileio::fio_list, m)?,
        wrap_pyfunction!(fileio::fio_read, m)?,
        wrap_pyfunction!(fileio::fio_write, m)?,
        wrap_pyfunction!(fileio::fio_mkdirs, m)?,
        wrap_pyfunction!(fileio::fio_delete, m)?,
        wrap_pyfunction!(fileio::fio_rename, m)?,
        wrap_pyfunction!(snapshots::delta_files, m)?,
    ] {
        m.add_function(f)?;
    }
    m.add_function(wrap_pyfunction!(object_store_requests, m)?)?;
    m.add_function(wrap_pyfunction!(store_options, m)?)?;
    Ok(())
}

/// Requests this process sent to object stores (GET, PUT, LIST, HEAD, DELETE) since it started
/// or the last `reset`; with `reset`, the counters restart from zero.
#[pyfunction]
#[pyo3(signature = (reset=false))]
fn object_store_requests(reset: bool) -> std::collections::BTreeMap<String, u64> {
    paimon_rs_core::store_request_counts(reset)
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
}

/// The file system options (`s3.*`, `fs.oss.*`, `gs.*`, `azure.*`) among `options`.
#[pyfunction]
fn store_options(
    options: std::collections::BTreeMap<String, String>,
) -> std::collections::BTreeMap<String, String> {
    paimon_rs_core::store_options(&options)
}
