//! Partition expiry carried out through a commit: [`PartitionExpire`] (the policy, in
//! `table::partition_expire`) names the expired partitions; these methods drop them in
//! OVERWRITE snapshots, after a commit when the check is due or on demand.

use chrono::NaiveDateTime;

use super::FileStoreCommit;
use crate::error::Result;
use crate::spec::partition::PartitionSpec;
use crate::table::partition_expire::PartitionExpire;

impl FileStoreCommit {
    /// Drop the partitions `pe` finds expired at `now` (in batches of
    /// `partition.expiration-batch-size`); returns them and the last snapshot written.
    pub fn expire_partitions(
        &self,
        pe: &PartitionExpire,
        commit_identifier: i64,
        now: NaiveDateTime,
    ) -> Result<(Vec<PartitionSpec>, Option<i64>)> {
        let expired = pe.expired_partitions(self.table(), now)?;
        let mut last = None;
        if !expired.is_empty() {
            for chunk in expired.chunks(pe.batch_len(expired.len())) {
                if let Some(id) = self.drop_partitions(chunk, commit_identifier)? {
                    last = Some(id);
                }
            }
            log::info!(
                target: "paimon_rs.commit",
                "{}: expired {} partitions (partition.expiration-time)",
                self.table().name,
                expired.len()
            );
        }
        Ok((expired, last))
    }

    /// [`Self::expire_partitions`] at the local time now (Java's `LocalDateTime.now()`).
    pub fn expire_partitions_now(
        &self,
        pe: &PartitionExpire,
        commit_identifier: i64,
    ) -> Result<(Vec<PartitionSpec>, Option<i64>)> {
        self.expire_partitions(pe, commit_identifier, chrono::Local::now().naive_local())
    }

    /// After a commit: expire if `pe`'s check interval has passed since this commit object's
    /// last check.
    pub(super) fn expire_partitions_on_commit(
        &self,
        pe: &PartitionExpire,
        commit_identifier: i64,
    ) -> Result<Option<i64>> {
        let now_ms = chrono::Utc::now().timestamp_millis();
        let due = {
            let mut last = self.last_partition_check();
            let due = pe.due(*last, now_ms, commit_identifier);
            if due {
                *last = now_ms;
            }
            due
        };
        if !due {
            return Ok(None);
        }
        Ok(self.expire_partitions_now(pe, commit_identifier)?.1)
    }
}
