//! Deletion vectors a primary-key bucket's writer maintains (Java's
//! `DeletionVectorsMaintainer` and `DeletionVectorsIndexFile.write`): the vectors of the
//! bucket's data files, restored from the bucket's `DELETION_VECTORS` index files of the
//! snapshot the writer started from, marked by lookup compaction (a row superseded by a newer
//! record of its key), dropped for files that compaction rewrote, and written at commit, when
//! anything changed, as one new index file that replaces the restored ones.
//!
//! The index file is Paimon's (paimon-format.md, deletion vectors; `read::deletion` reads it):
//! a version byte, then per data file `size | magic | bitmap | crc32`, big-endian: a 32-bit
//! Roaring bitmap (`BitmapDeletionVector`, magic 1581511376) or, with
//! `deletion-vectors.bitmap64`, a 64-bit one (`Bitmap64DeletionVector`, magic 1681511377
//! little-endian, the recorded length counting size and crc too).

use std::collections::BTreeMap;

use roaring::{RoaringBitmap, RoaringTreemap};

use crate::compact::DvMarks;
use crate::error::{Error, Result};
use crate::read::deletion::{
    read_deletion_vector, DeletionFile, BITMAP32_MAGIC, BITMAP64_MAGIC, DV_FILE_VERSION,
};
use crate::spec::manifest::{
    DataFileMeta, DeletionVectorRange, IndexFileMeta, IndexManifestEntry, DELETION_VECTORS_INDEX,
};
use crate::spec::snapshot::Snapshot;
use crate::table::FileStoreTable;

/// Encode `vectors` (data file name → deleted row positions) as a deletion-vector index file:
/// its bytes and each vector's range.
pub(crate) fn encode_index_file(
    vectors: &BTreeMap<String, RoaringBitmap>,
    bitmap64: bool,
) -> Result<(Vec<u8>, Vec<DeletionVectorRange>)> {
    let mut out = vec![DV_FILE_VERSION];
    let mut ranges = Vec::with_capacity(vectors.len());
    let too_big =
        |what: &str| Error::Internal(format!("deletion vector index file: {what} over 2 GiB"));
    for (file, dv) in vectors.iter().filter(|(_, dv)| !dv.is_empty()) {
        let mut data = vec![];
        let io = |e: std::io::Error| Error::Internal(format!("serializing a deletion vector: {e}"));
        if bitmap64 {
            data.extend_from_slice(&BITMAP64_MAGIC.to_le_bytes());
            let t: RoaringTreemap = dv.iter().map(u64::from).collect();
            t.serialize_into(&mut data).map_err(io)?;
        } else {
            data.extend_from_slice(&BITMAP32_MAGIC.to_be_bytes());
            dv.serialize_into(&mut data).map_err(io)?;
        }
        let offset = i32::try_from(out.len()).map_err(|_| too_big("offset"))?;
        let size = i32::try_from(data.len()).map_err(|_| too_big("vector"))?;
        out.extend_from_slice(&size.to_be_bytes());
        out.extend_from_slice(&data);
        out.extend_from_slice(&crc32fast::hash(&data).to_be_bytes());
        ranges.push(DeletionVectorRange {
            data_file: file.clone(),
            offset,
            length: if bitmap64 { size + 8 } else { size },
            cardinality: Some(dv.len() as i64),
        });
    }
    Ok((out, ranges))
}

/// Write `vectors` as a new index file in the table's `index/` directory (None if every vector
/// is empty).
pub(crate) fn write_index_file(
    table: &FileStoreTable,
    vectors: &BTreeMap<String, RoaringBitmap>,
    bitmap64: bool,
) -> Result<Option<IndexFileMeta>> {
    let (bytes, ranges) = encode_index_file(vectors, bitmap64)?;
    if ranges.is_empty() {
        return Ok(None);
    }
    let name = format!("index-{}-0", uuid::Uuid::new_v4());
    // write_new creates the directory
    crate::io::write_new(&table.path.join("index").join(&name), &bytes)?;
    Ok(Some(IndexFileMeta {
        index_type: DELETION_VECTORS_INDEX.into(),
        file_name: name,
        file_size: bytes.len() as i64,
        row_count: ranges.len() as i64,
        dv_ranges: Some(ranges),
        external_path: None,
        global_index: None,
    }))
}

/// The deletion vectors of one bucket, as its writer keeps them.
#[derive(Debug, Default)]
pub(crate) struct DeletionVectorsMaintainer {
    vectors: BTreeMap<String, RoaringBitmap>,
    /// The bucket's live deletion-vector index files: replaced by the next one written.
    index_files: Vec<IndexFileMeta>,
    modified: bool,
    bitmap64: bool,
}

impl DeletionVectorsMaintainer {
    /// The live index files of `snapshot` (its index manifest read once: every bucket's
    /// writer restores from them).
    pub fn live_index_of(
        table: &FileStoreTable,
        snapshot: Option<&Snapshot>,
    ) -> Result<Vec<IndexManifestEntry>> {
        table.live_index_entries(snapshot.and_then(|s| s.index_manifest.as_deref()))
    }

    /// The vectors of (partition, bucket) in a snapshot's live index files
    /// ([`Self::live_index_of`]); `files` are the bucket's live data files (a vector must fit
    /// its file).
    pub fn restore(
        table: &FileStoreTable,
        live_index: &[IndexManifestEntry],
        partition: &[u8],
        bucket: i32,
        files: &[DataFileMeta],
    ) -> Result<Self> {
        let bitmap64 = table.options.deletion_vectors_bitmap64()?;
        let mut m = DeletionVectorsMaintainer {
            bitmap64,
            ..Default::default()
        };
        let rows: BTreeMap<&str, i64> = files
            .iter()
            .map(|f| (f.file_name.as_str(), f.row_count))
            .collect();
        for e in live_index {
            if e.index_type != DELETION_VECTORS_INDEX
                || (e.partition.as_slice(), e.bucket) != (partition, bucket)
            {
                continue;
            }
            let path = crate::read::deletion::deletion_file_path(e);
            for r in e.dv_ranges.iter().flatten() {
                // a vector of a file no longer live is dropped with the next index file
                let Some(&n) = rows.get(r.data_file.as_str()) else {
                    m.modified = true;
                    continue;
                };
                let df = DeletionFile {
                    path: path.clone(),
                    offset: i64::from(r.offset),
                    length: i64::from(r.length),
                    cardinality: r.cardinality,
                };
                let dv = read_deletion_vector(&table.path, &df, &r.data_file, n)?;
                m.vectors.insert(r.data_file.clone(), dv);
            }
            m.index_files.push(e.index_file());
        }
        Ok(m)
    }

    /// The deletion vector of `file`, if it has one.
    #[cfg(test)]
    pub fn vector(&self, file: &str) -> Option<&RoaringBitmap> {
        self.vectors.get(file)
    }

    /// Every file's vector.
    pub fn vectors(&self) -> &BTreeMap<String, RoaringBitmap> {
        &self.vectors
    }

    /// Mark `positions` of `file` deleted (lookup compaction's marks, §10).
    pub fn mark(&mut self, file: &str, positions: &RoaringBitmap) {
        if positions.is_empty() {
            return;
        }
        let dv = self.vectors.entry(file.to_string()).or_default();
        let before = dv.len();
        *dv |= positions;
        self.modified |= dv.len() != before;
    }

    /// `file` left the bucket (compaction rewrote it): its vector goes.
    pub fn remove(&mut self, file: &str) {
        self.modified |= self.vectors.remove(file).is_some();
    }

    /// A commit's compactions of the bucket: the rows they superseded marked (`marks`, §10),
    /// then the vectors of the files they removed (in `before`, not in `after`) dropped.
    pub fn apply_compaction(
        &mut self,
        marks: DvMarks,
        before: &[DataFileMeta],
        after: &[DataFileMeta],
    ) -> Result<()> {
        for (file, rows) in marks {
            let mut positions = RoaringBitmap::new();
            for r in rows {
                positions.insert(u32::try_from(r).map_err(|_| {
                    Error::Internal(format!("row position {r} of {file} beyond 32 bits"))
                })?);
            }
            self.mark(&file, &positions);
        }
        let kept: std::collections::HashSet<&str> =
            after.iter().map(|f| f.file_name.as_str()).collect();
        for f in before {
            if !kept.contains(f.file_name.as_str()) {
                self.remove(&f.file_name);
            }
        }
        Ok(())
    }

    /// At commit, if anything changed: the new index file (none if no vector is left) and the
    /// index files it replaces. Afterwards the new file is the bucket's.
    pub fn prepare_commit(
        &mut self,
        table: &FileStoreTable,
    ) -> Result<(Vec<IndexFileMeta>, Vec<IndexFileMeta>)> {
        if !self.modified {
            return Ok((vec![], vec![]));
        }
        let new: Vec<IndexFileMeta> = write_index_file(table, &self.vectors, self.bitmap64)?
            .into_iter()
            .collect();
        let replaced = std::mem::replace(&mut self.index_files, new.clone());
        self.modified = false;
        Ok((new, replaced))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::read::deletion::decode_entry;

    fn bitmap(rows: &[u32]) -> RoaringBitmap {
        rows.iter().copied().collect()
    }

    /// Encoded vectors decode back, 32- and 64-bit, at their recorded ranges; empty vectors
    /// are left out.
    #[test]
    fn index_file_entries_decode_at_their_ranges() {
        for wide in [false, true] {
            let mut v = BTreeMap::new();
            v.insert("data-a".to_string(), bitmap(&[1, 3, 4]));
            v.insert("data-b".to_string(), bitmap(&[]));
            v.insert("data-c".to_string(), bitmap(&[0, 70_000]));
            let (bytes, ranges) = encode_index_file(&v, wide).unwrap();
            assert_eq!(bytes[0], DV_FILE_VERSION);
            let names: Vec<&str> = ranges.iter().map(|r| r.data_file.as_str()).collect();
            assert_eq!(names, ["data-a", "data-c"]);
            for r in &ranges {
                let at = r.offset as usize;
                let size = i32::from_be_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
                let entry = &bytes[at..at + size + 8];
                let dv = decode_entry(entry, i64::from(r.length)).unwrap();
                assert_eq!(&dv, &v[&r.data_file]);
                assert_eq!(r.cardinality, Some(dv.len() as i64));
            }
        }
    }

    /// The documented example (paimon-format.md, Appendix A): rows 1, 3, 4 of one file are a
    /// 35-byte index file.
    #[test]
    fn encodes_the_documented_example() {
        let mut v = BTreeMap::new();
        v.insert("f".to_string(), bitmap(&[1, 3, 4]));
        let (bytes, ranges) = encode_index_file(&v, false).unwrap();
        assert_eq!(bytes.len(), 35);
        assert_eq!((ranges[0].offset, ranges[0].length), (1, 26));
    }

    /// Marks accumulate; marking what is already deleted or removing an unknown file changes
    /// nothing, so no index file is written for it.
    #[test]
    fn only_changes_write_a_new_index_file() {
        let mut m = DeletionVectorsMaintainer::default();
        m.mark("a", &bitmap(&[1]));
        m.mark("a", &bitmap(&[2]));
        assert_eq!(m.vector("a"), Some(&bitmap(&[1, 2])));
        assert!(m.modified);
        m.modified = false;
        m.mark("a", &bitmap(&[1]));
        m.remove("zzz");
        assert!(!m.modified);
        m.remove("a");
        assert!(m.modified && m.vector("a").is_none());
    }
}
