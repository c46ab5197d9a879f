//! Deletion vectors (paimon-format.md §10): which rows of a data file are deleted, stored in
//! `DELETION_VECTORS` index files under `index/` and located by the index manifest.
//!
//! Index file layout (Java's `DeletionVectorsIndexFile`, the same in Paimon 0.9, 1.0 and later):
//! one version byte (1), then per data file an entry at the offset its `DeletionVectorMeta`
//! records:
//!
//! ```text
//! int32 BE  size                 bytes of magic + bitmap
//! int32     magic                1581511376 BE: 32-bit RoaringBitmap (portable format)
//!                                1681511377 LE: 64-bit bitmap (`deletion-vectors.bitmap64`,
//!                                newer Java; u64 LE count, then (u32 LE key, 32-bit bitmap))
//! bytes     bitmap               deleted row positions (0-based in the data file)
//! int32 BE  CRC32 of magic + bitmap
//! ```
//!
//! The recorded length is `size` for 32-bit vectors and the whole entry (`4 + size + 4`) for
//! 64-bit ones (Java's `DeletionVector.read`). Every check Java makes is made here (version,
//! size, magic), plus the checksum (Java checks it only when it reads a whole index file), the
//! recorded cardinality and that no position lies beyond the data file's rows: a mismatch is a
//! `CorruptFileError` naming the index file and the data file.

use crate::io::remote::ReadAt;
use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};

use arrow_array::{BooleanArray, RecordBatch};
use roaring::{RoaringBitmap, RoaringTreemap};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::merge::BatchIter;
use crate::spec::manifest::{IndexManifestEntry, DELETION_VECTORS_INDEX};
use crate::table::FileStoreTable;

/// Version byte at the start of a deletion-vector index file.
pub const DV_FILE_VERSION: u8 = 1;
/// Magic number of a 32-bit bitmap vector (`BitmapDeletionVector.MAGIC_NUMBER`), written BE.
pub const BITMAP32_MAGIC: i32 = 1581511376;
/// Magic number of a 64-bit bitmap vector (`Bitmap64DeletionVector.MAGIC_NUMBER`), written LE.
pub const BITMAP64_MAGIC: i32 = 1681511377;

/// Where a data file's deletion vector is (Java's `DeletionFile`): a split carries these, not the
/// vectors, so it stays small and serializable; the vector is read when its file is read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeletionFile {
    /// The index file: relative to the table directory (`index/index-...`) or absolute (an
    /// external path).
    pub path: String,
    pub offset: i64,
    pub length: i64,
    pub cardinality: Option<i64>,
}

impl DeletionFile {
    fn resolve(&self, table_root: &Path) -> PathBuf {
        if crate::io::store::parse_uri(&self.path).is_some() {
            return PathBuf::from(&self.path);
        }
        let p = self.path.strip_prefix("file:").unwrap_or(&self.path);
        let p = Path::new(p);
        if p.is_absolute() {
            p.to_path_buf()
        } else {
            table_root.join(p)
        }
    }
}

/// The deletion files of one (partition, bucket), by data file name, from the live
/// `DELETION_VECTORS` entries of a snapshot's index manifest.
pub type BucketDeletionFiles = BTreeMap<(Vec<u8>, i32), BTreeMap<String, DeletionFile>>;

/// Reads a snapshot's index manifest (`None`: no index) and maps each (partition, bucket) to the
/// deletion files of its data files.
pub fn deletion_files_of(
    table: &FileStoreTable,
    index_manifest: Option<&str>,
) -> Result<BucketDeletionFiles> {
    let mut out = BucketDeletionFiles::new();
    for e in table.live_index_entries(index_manifest)? {
        if e.index_type != DELETION_VECTORS_INDEX {
            continue; // HASH (dynamic bucket) and other indexes do not change what a read returns
        }
        let path = deletion_file_path(&e);
        let Some(ranges) = e.dv_ranges else {
            return Err(Error::corrupt(
                table
                    .manifest_dir()
                    .join(index_manifest.unwrap_or_default()),
                format!(
                    "deletion vectors index file {} has no deletion vector ranges",
                    e.file_name
                ),
            ));
        };
        let bucket = out.entry((e.partition.clone(), e.bucket)).or_default();
        for r in ranges {
            bucket.insert(
                r.data_file,
                DeletionFile {
                    path: path.clone(),
                    offset: i64::from(r.offset),
                    length: i64::from(r.length),
                    cardinality: r.cardinality,
                },
            );
        }
    }
    Ok(out)
}

/// The path a [`DeletionFile`] of the index file `e` names: its external path, or
/// `index/<file name>` relative to the table root.
pub(crate) fn deletion_file_path(e: &IndexManifestEntry) -> String {
    match &e.external_path {
        Some(p) => p.clone(),
        None => format!("index/{}", e.file_name),
    }
}

/// Reads one deletion vector: the index file's version byte, then its entry.
pub fn read_deletion_vector(
    table_root: &Path,
    df: &DeletionFile,
    data_file: &str,
    data_rows: i64,
) -> Result<RoaringBitmap> {
    let path = df.resolve(table_root);
    let corrupt = |m: String| Error::corrupt(&path, format!("deletion vector of {data_file}: {m}"));
    // a local file, or the index object (one GET of it whole when small, else ranged GETs)
    let (src, len): (Box<dyn ReadAt>, u64) = match crate::io::store::remote(&path)? {
        None => {
            let f = File::open(&path).map_err(|e| Error::io(&path, e))?;
            let len = f.metadata().map_err(|e| Error::io(&path, e))?.len();
            (Box::new(f), len)
        }
        Some(r) => {
            let o = crate::io::remote::RemoteObject::open(r, None, false)
                .map_err(|e| Error::io(&path, e))?;
            let len = o.size();
            (Box::new(o), len)
        }
    };
    let version = src
        .read_at(0, 1)
        .map_err(|e| corrupt(format!("cannot read the version byte: {e}")))?;
    if version[0] != DV_FILE_VERSION {
        return Err(corrupt(format!(
            "index file version {} (expected {DV_FILE_VERSION})",
            version[0]
        )));
    }
    let offset = u64::try_from(df.offset)
        .ok()
        .filter(|o| o.saturating_add(8) <= len)
        .ok_or_else(|| {
            corrupt(format!(
                "offset {} beyond the file ({len} bytes)",
                df.offset
            ))
        })?;
    let head = src
        .read_at(offset, 4)
        .map_err(|e| corrupt(format!("cannot read the size: {e}")))?;
    let size = i32::from_be_bytes([head[0], head[1], head[2], head[3]]);
    let total = u64::try_from(size)
        .ok()
        .filter(|&s| s >= 4)
        .map(|s| s + 8)
        .filter(|&t| offset + t <= len)
        .ok_or_else(|| {
            corrupt(format!(
                "size {size} at offset {offset} does not fit in the file ({len} bytes)"
            ))
        })?;
    let entry = src
        .read_at(offset, total as usize)
        .map_err(|e| corrupt(format!("cannot read the entry: {e}")))?;
    let dv = decode_entry(&entry, df.length).map_err(corrupt)?;
    let card = dv.len();
    if let Some(c) = df.cardinality {
        if u64::try_from(c).ok() != Some(card) {
            return Err(corrupt(format!(
                "{card} deleted rows, the index manifest records {c}"
            )));
        }
    }
    if let Some(max) = dv.max() {
        if i64::from(max) >= data_rows {
            return Err(corrupt(format!(
                "deletes row {max} but the data file has {data_rows} rows"
            )));
        }
    }
    Ok(dv)
}

/// Decodes one index-file entry (size, magic, bitmap, CRC) whose recorded length is `length`.
/// Errors are messages; the caller names the file.
pub fn decode_entry(entry: &[u8], length: i64) -> std::result::Result<RoaringBitmap, String> {
    if entry.len() < 12 {
        return Err(format!("entry of {} bytes is too short", entry.len()));
    }
    let be =
        |at: usize| i32::from_be_bytes([entry[at], entry[at + 1], entry[at + 2], entry[at + 3]]);
    let size = be(0);
    if usize::try_from(size).ok() != Some(entry.len() - 8) {
        return Err(format!(
            "size field {size} does not match the entry ({} bytes)",
            entry.len()
        ));
    }
    let magic = be(4);
    let wide = if magic == BITMAP32_MAGIC {
        if length != i64::from(size) {
            return Err(format!(
                "size {size} does not match the index manifest's length {length}"
            ));
        }
        false
    } else if magic.swap_bytes() == BITMAP64_MAGIC {
        if length != i64::from(size) + 8 {
            return Err(format!(
                "64-bit entry of {} bytes does not match the index manifest's length {length}",
                i64::from(size) + 8
            ));
        }
        true
    } else {
        return Err(format!(
            "invalid magic number {magic} (expected {BITMAP32_MAGIC} or, little-endian, \
             {BITMAP64_MAGIC})"
        ));
    };
    let body = &entry[4..entry.len() - 4];
    let stored = be(entry.len() - 4) as u32;
    let actual = crc32fast::hash(body);
    if stored != actual {
        return Err(format!(
            "checksum mismatch: stored {stored:#010x}, computed {actual:#010x}"
        ));
    }
    let bitmap = &body[4..];
    let mut cursor = std::io::Cursor::new(bitmap);
    let dv = if wide {
        let t = RoaringTreemap::deserialize_from(&mut cursor)
            .map_err(|e| format!("invalid 64-bit Roaring bitmap: {e}"))?;
        if t.max().is_some_and(|m| m > u64::from(u32::MAX)) {
            return Err(
                "row positions beyond 2^32 (a data file cannot hold that many rows)".into(),
            );
        }
        t.iter().map(|p| p as u32).collect()
    } else {
        RoaringBitmap::deserialize_from(&mut cursor)
            .map_err(|e| format!("invalid Roaring bitmap: {e}"))?
    };
    if cursor.position() != bitmap.len() as u64 {
        return Err(format!(
            "{} trailing bytes after the bitmap",
            bitmap.len() as u64 - cursor.position()
        ));
    }
    Ok(dv)
}

/// One data file's batches with its deleted rows removed. The vector is read when the first
/// batch is pulled (so a split stream stays lazy); row positions count every row of the file,
/// so the inner stream must yield all of them, in order.
pub struct DeletionFilter {
    inner: BatchIter,
    table_root: PathBuf,
    /// Where the vector is stored (read at the first batch); None: given in memory.
    file: Option<DeletionFile>,
    data_file: String,
    data_rows: i64,
    dv: Option<RoaringBitmap>,
    pos: u64,
    /// The position after the last row the inner stream yields (`data_rows`, or the end of
    /// the part of the file read).
    end: u64,
    failed: bool,
}

impl DeletionFilter {
    pub fn new(
        inner: BatchIter,
        table_root: PathBuf,
        file: DeletionFile,
        data_file: String,
        data_rows: i64,
    ) -> Self {
        Self::of(inner, table_root, Some(file), None, data_file, data_rows)
    }

    fn of(
        inner: BatchIter,
        table_root: PathBuf,
        file: Option<DeletionFile>,
        dv: Option<RoaringBitmap>,
        data_file: String,
        data_rows: i64,
    ) -> Self {
        DeletionFilter {
            inner,
            table_root,
            file,
            data_file,
            data_rows,
            dv,
            pos: 0,
            end: data_rows.max(0) as u64,
            failed: false,
        }
    }

    /// `inner` (the rows of `f` at positions `[begin, end)`) without the rows its vector marks:
    /// the one in `memory` if any, else the stored one in `file`; `inner` as it is without either.
    pub(crate) fn over(
        inner: BatchIter,
        table_root: &std::path::Path,
        f: &crate::spec::manifest::DataFileMeta,
        file: Option<&DeletionFile>,
        memory: Option<&RoaringBitmap>,
        (begin, end): (u64, u64),
    ) -> BatchIter {
        let root = table_root.to_path_buf();
        let (name, rows) = (f.file_name.clone(), f.row_count);
        let filter = match (memory, file) {
            (Some(dv), _) => Self::in_memory(inner, root, dv.clone(), name, rows),
            (None, Some(df)) => Self::new(inner, root, df.clone(), name, rows),
            (None, None) => return inner,
        };
        Box::new(filter.of_rows(begin, end))
    }

    /// The inner stream yields the file's rows at positions `[begin, end)` only (a file read
    /// in part: `Split::row_slices`).
    pub fn of_rows(mut self, begin: u64, end: u64) -> Self {
        self.pos = begin;
        self.end = end;
        self
    }

    /// A filter by a vector held in memory (a writer's, with marks not yet in an index file).
    /// As the positions count every row of the file, the file must yield `data_rows` rows.
    pub fn in_memory(
        inner: BatchIter,
        table_root: PathBuf,
        dv: RoaringBitmap,
        data_file: String,
        data_rows: i64,
    ) -> Self {
        Self::of(inner, table_root, None, Some(dv), data_file, data_rows)
    }
}

/// `batch` (rows `pos..pos + n` of its file) without the rows `dv` marks. The mask starts all
/// set and clears the marked positions of the batch's range (the bitmap's own range iteration:
/// O(rows / 8 + marked), where a `contains` per row cost a lookup per row).
pub fn drop_deleted(batch: RecordBatch, pos: u64, dv: &RoaringBitmap) -> Result<RecordBatch> {
    let n = batch.num_rows() as u64;
    // positions beyond u32 cannot be marked (a vector holds u32 positions)
    let hi = (pos + n).min(u64::from(u32::MAX) + 1);
    if n == 0 || pos >= hi {
        return Ok(batch);
    }
    let range = (pos as u32)..=((hi - 1) as u32);
    if dv.range_cardinality(range.clone()) == 0 {
        return Ok(batch);
    }
    let mut keep = arrow_buffer::BooleanBufferBuilder::new(n as usize);
    keep.append_n(n as usize, true);
    for p in dv.range(range) {
        keep.set_bit((u64::from(p) - pos) as usize, false);
    }
    let keep = BooleanArray::new(keep.finish(), None);
    Ok(arrow_select::filter::filter_record_batch(&batch, &keep)?)
}

impl Iterator for DeletionFilter {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        if let (None, Some(file)) = (&self.dv, &self.file) {
            match read_deletion_vector(&self.table_root, file, &self.data_file, self.data_rows) {
                Ok(dv) => self.dv = Some(dv),
                Err(e) => {
                    self.failed = true;
                    return Some(Err(e));
                }
            }
        }
        let dv = self.dv.as_ref()?;
        let b = match self.inner.next() {
            Some(Ok(b)) => b,
            Some(Err(e)) => return Some(Err(e)),
            None => {
                // a vector in memory was applied to positions counted here: the file must have
                // had every row its manifest entry records
                if self.file.is_none() && self.pos != self.end {
                    self.failed = true;
                    return Some(Err(Error::corrupt(
                        &self.table_root,
                        format!(
                            "data file {} has {} rows, its manifest entry {}",
                            self.data_file, self.pos, self.data_rows
                        ),
                    )));
                }
                return None;
            }
        };
        let pos = self.pos;
        self.pos += b.num_rows() as u64;
        Some(drop_deleted(b, pos, dv))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{ArrayRef, Int64Array};
    use std::sync::Arc;

    /// An index file as Java's `DeletionFileWriter` writes it: version byte, then per vector
    /// `size | magic | bitmap | crc`; returns the bytes and each entry's (offset, recorded length).
    fn index_file(vectors: &[(&[u32], bool)]) -> (Vec<u8>, Vec<(i64, i64)>) {
        let mut out = vec![DV_FILE_VERSION];
        let mut ranges = vec![];
        for (rows, wide) in vectors {
            let mut data = vec![];
            if *wide {
                data.extend_from_slice(&BITMAP64_MAGIC.to_le_bytes());
                let t: RoaringTreemap = rows.iter().map(|&r| u64::from(r)).collect();
                t.serialize_into(&mut data).unwrap();
            } else {
                data.extend_from_slice(&BITMAP32_MAGIC.to_be_bytes());
                let b: RoaringBitmap = rows.iter().copied().collect();
                b.serialize_into(&mut data).unwrap();
            }
            let offset = out.len() as i64;
            out.extend_from_slice(&(data.len() as i32).to_be_bytes());
            out.extend_from_slice(&data);
            out.extend_from_slice(&crc32fast::hash(&data).to_be_bytes());
            let len = if *wide { data.len() + 8 } else { data.len() };
            ranges.push((offset, len as i64));
        }
        (out, ranges)
    }

    fn write(dir: &Path, bytes: &[u8]) -> DeletionFile {
        std::fs::create_dir_all(dir.join("index")).unwrap();
        std::fs::write(dir.join("index/index-x-0"), bytes).unwrap();
        DeletionFile {
            path: "index/index-x-0".into(),
            offset: 0,
            length: 0,
            cardinality: None,
        }
    }

    /// The 35-byte file pypaimon wrote (paimon-format.md, Appendix A): rows 1, 3, 4.
    #[test]
    fn decodes_the_documented_example() {
        let hex =
            "01 0000001a 5e43f2d0 3a300000 01000000 00000200 10000000 0100 0300 0400 ea89a0aa";
        let bytes: Vec<u8> = hex
            .replace(' ', "")
            .as_bytes()
            .chunks(2)
            .map(|c| u8::from_str_radix(std::str::from_utf8(c).unwrap(), 16).unwrap())
            .collect();
        assert_eq!(bytes.len(), 35);
        let dv = decode_entry(&bytes[1..], 26).unwrap();
        assert_eq!(dv.iter().collect::<Vec<_>>(), vec![1, 3, 4]);
        // ours equals what the documented layout builds
        assert_eq!(index_file(&[(&[1, 3, 4], false)]).0, bytes);
    }

    #[test]
    fn reads_32_and_64_bit_vectors_at_their_offsets() {
        let dir = tempfile::tempdir().unwrap();
        let big: Vec<u32> = (0..100_000).filter(|x| x % 3 == 0).collect();
        let (bytes, ranges) = index_file(&[(&[0, 7], false), (&big, false), (&[2, 5, 9], true)]);
        let mut df = write(dir.path(), &bytes);
        let expect: [Vec<u32>; 3] = [vec![0, 7], big.clone(), vec![2, 5, 9]];
        for ((offset, length), want) in ranges.iter().zip(expect) {
            df.offset = *offset;
            df.length = *length;
            df.cardinality = Some(want.len() as i64);
            let dv = read_deletion_vector(dir.path(), &df, "data-1.parquet", 100_000).unwrap();
            assert_eq!(dv.iter().collect::<Vec<_>>(), want);
        }
    }

    #[test]
    fn corruption_is_reported_with_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let (bytes, ranges) = index_file(&[(&[1, 2, 3], false)]);
        let check = |bytes: &[u8], length: i64, card: Option<i64>, rows: i64, what: &str| {
            let mut df = write(dir.path(), bytes);
            df.offset = ranges[0].0;
            df.length = length;
            df.cardinality = card;
            let e = read_deletion_vector(dir.path(), &df, "data-1.parquet", rows).unwrap_err();
            assert!(matches!(e, Error::CorruptFile { .. }), "{e}");
            let m = e.to_string();
            assert!(
                m.contains("index-x-0") && m.contains("data-1.parquet"),
                "{m}"
            );
            assert!(m.contains(what), "{m}");
        };
        let len = ranges[0].1;
        let mut flipped = bytes.clone();
        *flipped.last_mut().unwrap() ^= 1;
        check(&flipped, len, None, 10, "checksum");
        let mut bit = bytes.clone();
        bit[12] ^= 0x40;
        check(&bit, len, None, 10, "checksum");
        check(&bytes, len + 1, None, 10, "length");
        check(&bytes[..bytes.len() - 2], len, None, 10, "does not fit");
        let mut version = bytes.clone();
        version[0] = 2;
        check(&version, len, None, 10, "version");
        let mut magic = bytes.clone();
        magic[5] ^= 1;
        check(&magic, len, None, 10, "magic");
        check(&bytes, len, Some(4), 10, "records 4");
        check(&bytes, len, None, 3, "deletes row 3");
    }

    #[test]
    fn filter_drops_deleted_positions_across_batches() {
        let dv: RoaringBitmap = [0u32, 4, 5, 9].into_iter().collect();
        let batch = |lo: i64, hi: i64| {
            let a: ArrayRef = Arc::new(Int64Array::from_iter_values(lo..hi));
            RecordBatch::try_from_iter([("x", a)]).unwrap()
        };
        let vals = |b: RecordBatch| -> Vec<i64> {
            let a = b.column(0).as_any().downcast_ref::<Int64Array>().unwrap();
            a.values().to_vec()
        };
        assert_eq!(
            vals(drop_deleted(batch(0, 5), 0, &dv).unwrap()),
            vec![1, 2, 3]
        );
        assert_eq!(
            vals(drop_deleted(batch(5, 10), 5, &dv).unwrap()),
            vec![6, 7, 8]
        );
        assert_eq!(
            vals(drop_deleted(batch(10, 12), 10, &dv).unwrap()),
            vec![10, 11]
        );
        // a batch across a 64Ki container boundary, marks on both sides and at its ends
        let dv: RoaringBitmap = [65_530u32, 65_535, 65_536, 65_540, 65_549]
            .into_iter()
            .collect();
        let kept = vals(drop_deleted(batch(65_530, 65_550), 65_530, &dv).unwrap());
        let want: Vec<i64> = (65_530..65_550)
            .filter(|p| !dv.contains(*p as u32))
            .collect();
        assert_eq!(kept, want);
        // every row marked
        let all: RoaringBitmap = (100u32..110).collect();
        assert_eq!(
            drop_deleted(batch(100, 110), 100, &all).unwrap().num_rows(),
            0
        );
    }

    /// A vector held in memory (a writer's) drops its rows as a stored one does, counting
    /// positions across batches; a file that yields fewer rows than its manifest entry records
    /// is an error (the positions would be wrong).
    #[test]
    fn in_memory_vector_drops_rows_and_checks_the_row_count() {
        let batch = |lo: i64, hi: i64| -> Result<RecordBatch> {
            let a: ArrayRef = Arc::new(Int64Array::from_iter_values(lo..hi));
            Ok(RecordBatch::try_from_iter([("x", a)]).unwrap())
        };
        let dv: RoaringBitmap = [1u32, 6].into_iter().collect();
        let f = |rows: i64| {
            let inner: BatchIter = Box::new(vec![batch(0, 4), batch(4, 8)].into_iter());
            DeletionFilter::in_memory(inner, PathBuf::from("/t"), dv.clone(), "f".into(), rows)
        };
        let got: Vec<i64> = f(8)
            .map(|b| b.unwrap())
            .flat_map(|b| {
                let a = b.column(0).as_any().downcast_ref::<Int64Array>().unwrap();
                a.values().to_vec()
            })
            .collect();
        assert_eq!(got, vec![0, 2, 3, 4, 5, 7]);
        let last = f(9).last().unwrap().unwrap_err();
        assert!(
            last.to_string()
                .contains("has 8 rows, its manifest entry 9"),
            "{last}"
        );
    }
}
