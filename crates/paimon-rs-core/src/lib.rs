//! paimon-rs-core: an engine for Apache Paimon tables (format, write path, merge read, commit).
//! Synchronous API, no Python; the pyo3 crate wraps it.
//!
//! Every module is private; the crate's API is the flat list of re-exports below
//! (`paimon_rs_core::FileStoreTable`, `paimon_rs_core::compact_table`, ...), exactly what the
//! Python binding (`crates/paimon-rs-py`), the integration tests and the benches use. Whatever
//! else no module of the crate uses is dead code and fails `clippy -D warnings`.
mod commit;
mod compact;
mod error;
mod fileindex;
mod io;

/// File operations on local paths and object store URIs alike (the store of a URI configured
/// by the catalog or table that opened it): what `paimon_rs.FileIO` calls.
pub mod file_ops {
    pub use crate::io::{
        is_dir, list_status, mkdirs, read, remove_dir_all, remove_empty_dir, remove_file_if_exists,
        rename_dir, rename_file, status, write_file, FileStatus,
    };
}
/// Paimon's `.blob` file format (the codec of BLOB columns; see io/blob.rs).
pub use io::blob as blob_format;
mod kv;
mod lookup;
pub use fileindex::selection_stats as bitmap_selection_stats;
pub use lookup::{lookup_cache_stats, release_lookup_caches, CacheStats};
mod merge;
mod options;
mod predicate;
mod read;
mod scan_options;
mod sort;
mod spec;
mod table;
mod write;

pub use error::{Error, Result};
/// Every table option paimon_rs knows, declared once (options/defs.rs).
pub use options::defs as option_defs;

// Tables: the catalog, the table handle and its operations.
pub use table::alter::SchemaChange;
pub use table::branches::{create_branch, drop_branch, fast_forward, list_branches, rename_branch};
pub use table::catalog::FileSystemCatalog;
pub use table::expire::expire_snapshots;
pub use table::file_deletion::Reclaimed;
pub use table::inspect::{
    branch_create_times, changelog_files, delta_files, file_details, index_files, live_files,
    manifest_files, partition_stats, schema_files, DeltaFile, FileDetail, LiveFile, ManifestRow,
};
pub use table::live::live_entries;
pub use table::new_schema::{column_error, column_type_from_arrow, NewTableSchema};
pub use table::orphan::remove_orphan_files;
pub use table::partition_expire::PartitionExpire;
pub use table::retention::ExpireConfig;
pub use table::rollback::{rollback_to, rollback_to_timestamp, RollbackTarget};
pub use table::tags::{create_tag, delete_tag, list_tags, rename_tag, replace_tag};
pub use table::FileStoreTable;

// Write, commit, scan and read.
pub use commit::{
    partition_delete_messages, CommitMessage, CompactIncrement, DataIncrement, FileStoreCommit,
    Overwrite,
};
pub use predicate::{LeafOp, Predicate};
pub use read::decode_ahead::{decode_ahead_threads, DecodeAhead, Step as DecodeAheadStep};
pub use read::row_tracking::filter_column_type;
pub use read::scan::TableScan;
pub use read::split::{slice_splits, slice_splits_by_row_id, Split};
pub use read::table_read::TableRead;
pub use write::append_dv::{
    delete_positions, read_with_positions, DeletionVectorDelete, FILE_NAME_COLUMN,
    ROW_POSITION_COLUMN,
};
pub use write::assign::{partition_bucket_of, BucketAssigner};
pub use write::buffer::{MemoryCounter, SharedInput, SortBuffer};
pub use write::cross_partition::{cross_partition_channels, CrossAssignTask};
pub use write::dynamic_bucket::{assigner_channels, num_assign_tasks, AssignTask};
pub use write::pack::{Packer, ShuffleKeys};
pub use write::rolling::{FileWriterContext, RollingFileWriter};
pub use write::row_update::{row_id_groups, write_row_id_update, RowIdGroup};
pub use write::table_write::table_arrow_schema;
pub use write::TableWrite;

// Compaction.
pub use compact::distributed::{compact_one_bucket, plan_buckets};
pub use compact::plan::{compaction_plan, compaction_summary, reason_name};
pub use compact::progress::CompactProgress;
pub use compact::{compact_full_window, full_compaction_window};
// Sort compaction (#28): order / z-order / hilbert clustering of bucket-unaware tables.
pub use compact::sort_compact::{
    check_sort_compactable, commit_sort_compaction, rewrite_messages, sort_compact_table,
    sort_compaction_plan, sort_split, sorted_key_buckets, write_sorted, write_sorted_run, SortSpec,
};
pub use compact::{
    compact_table, compact_table_with_progress, BucketCompactor, CompactSettings, PickClock,
    RunShape, UniversalCompaction,
};
pub use sort::curve::{hilbert_indexes, z_indexes, OrderStrategy};

// Merge, sort and key-value files (benches and integration tests drive them directly).
pub use kv::{
    file_context as kv_file_context, kv_arrow_schema, FileSource, KvFileReader, SEQUENCE_NUMBER,
    VALUE_KIND,
};
pub use merge::{merge_sorted_runs, sort_by_key, BatchIter, KvLayout, MergeEngine};
pub use sort::{SpillOptions, Spiller};

// Format: rows, values, types, manifests, snapshots.
pub use options::StatsMode;
pub use spec::binary_row::{datum_from_arrow, datums_to_arrow, deserialize_row, serialize_row};
pub use spec::datum::Datum;
pub use spec::manifest::{
    read_manifest_entries, read_manifest_list, DataFileMeta, FileKind, IndexFileMeta,
    ManifestFileMeta,
};
pub use spec::partition::{partition_value_string, PartitionSpec};
pub use spec::row_kind::RowKind;
pub use spec::snapshot::{Snapshot, BATCH_COMMIT_IDENTIFIER};
pub use spec::types::{DataField, DataType, TypeKind};
pub use spec::variant::{
    variant_edit, variant_get_nested, variant_get_scalars, Kind as VariantKind, Seg as VariantSeg,
    VariantEdit, VariantFail,
};

// Object stores and file formats.
pub use io::format::WriteFormat;
pub use io::parquet::writer_properties as parquet_writer_properties;
pub use io::store::{
    configure as configure_store, request_counts as store_request_counts, store_options,
};
