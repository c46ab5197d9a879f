//! The write path: check and route input rows to (partition, bucket) writers
//! ([`assign`], [`table_write`]), buffer them per bucket ([`merge_tree_writer`],
//! [`append_writer`] behind [`record_writer`], one per bucket as a [`bucket_writer`]), restored from the table's files
//! ([`restore`]), and at flush sort, merge and write them as level-0 files through the rolling
//! writer.

pub mod append_dv;
pub mod append_writer;
pub mod assign;
pub(crate) mod async_compact;
pub mod blob_write;
mod bucket_writer;
pub mod buffer;
pub(crate) mod clustering;
pub(crate) mod cross_partition;
pub mod deletion_vectors;
pub mod dynamic_bucket;
pub mod external_path;
pub(crate) mod hash_index_cache;
pub mod input;
mod key_index;
pub mod merge_tree_writer;
pub mod pack;
mod partial;
pub mod pipeline;
pub mod record_writer;
pub mod restore;
pub mod rolling;
pub mod row_update;
pub mod stats;
pub mod strings;
pub mod table_write;

pub use table_write::TableWrite;
