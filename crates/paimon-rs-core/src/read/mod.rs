//! The read path: plan splits from a snapshot, then read each split (concatenating files that
//! need no merge, merging by key otherwise).

pub mod data_evolution;
pub mod decode_ahead;
pub mod deletion;
pub mod diff;
pub mod evolution;
pub mod interval;
pub mod row_tracking;
pub mod scan;
pub mod split;
pub mod table_read;
