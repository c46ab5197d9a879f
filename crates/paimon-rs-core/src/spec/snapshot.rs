//! `snapshot/snapshot-N` files (paimon-format.md §3).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub const BATCH_COMMIT_IDENTIFIER: i64 = i64::MAX;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum CommitKind {
    #[serde(rename = "APPEND")]
    Append,
    #[serde(rename = "COMPACT")]
    Compact,
    #[serde(rename = "OVERWRITE")]
    Overwrite,
    #[serde(rename = "ANALYZE")]
    Analyze,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Snapshot {
    #[serde(default = "default_version")]
    pub version: i32,
    pub id: i64,
    pub schema_id: i64,
    pub base_manifest_list: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_manifest_list_size: Option<i64>,
    pub delta_manifest_list: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delta_manifest_list_size: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changelog_manifest_list: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changelog_manifest_list_size: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index_manifest: Option<String>,
    pub commit_user: String,
    pub commit_identifier: i64,
    pub commit_kind: CommitKind,
    pub time_millis: i64,
    #[serde(default)]
    pub total_record_count: i64,
    #[serde(default)]
    pub delta_record_count: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changelog_record_count: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub watermark: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub statistics: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub properties: Option<BTreeMap<String, String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_row_id: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uuid: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub writer_version: Option<String>,
}

fn default_version() -> i32 {
    3
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pypaimon_snapshot_round_trip() {
        let s = r#"{ "version": 3, "id": 2, "schemaId": 0,
          "baseManifestList": "manifest-list-a-0", "deltaManifestList": "manifest-list-a-1",
          "totalRecordCount": 5, "deltaRecordCount": 2, "commitUser": "u",
          "commitIdentifier": 9223372036854775807, "commitKind": "APPEND",
          "timeMillis": 1795315444241, "baseManifestListSize": 1360,
          "deltaManifestListSize": 1360, "uuid": "c6", "writerVersion": "python-2.1.0" }"#;
        let snap: Snapshot = serde_json::from_str(s).unwrap();
        assert_eq!(snap.commit_identifier, BATCH_COMMIT_IDENTIFIER);
        assert_eq!(snap.commit_kind, CommitKind::Append);
        let out = serde_json::to_value(&snap).unwrap();
        assert!(out.get("changelogManifestList").is_none());
        assert_eq!(out["baseManifestList"], "manifest-list-a-0");
        let back: Snapshot = serde_json::from_value(out).unwrap();
        assert_eq!(back, snap);
    }
}
