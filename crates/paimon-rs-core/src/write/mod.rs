//! The write path: check and route input rows to (partition, bucket), buffer them per bucket,
//! and at flush sort, merge and write them as level-0 files through the rolling writer.

pub mod assign;
pub mod buffer;
pub mod input;
pub mod pack;
pub mod pipeline;
pub mod rolling;
pub mod stats;
pub mod strings;
pub mod table_write;

pub use table_write::TableWrite;
