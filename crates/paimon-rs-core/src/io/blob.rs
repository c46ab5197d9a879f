//! Paimon's `.blob` file format (Java `BlobFileFormat` / `BlobFormatWriter` /
//! `BlobFormatReader`; pypaimon 2.1.0 `write/blob_format_writer.py`,
//! `read/reader/format_blob_reader.py`): one BLOB column, one record per row.
//!
//! Layout, all integers little endian:
//! - per non-null row, a record: magic `1481511375` (u32), the blob bytes, the record length
//!   (u64: magic + bytes + 12), a CRC-32 (u32) over magic, bytes and length;
//! - the index: each row's record length, `-1` for a null row and `-2` for a placeholder
//!   (a row whose blob a data-evolution update does not rewrite), zig-zag varints of the
//!   first length and then of the deltas between consecutive lengths;
//! - the footer: the index length (u32) and the version byte (`1`).
//!
//! A row of an `ARRAY<BLOB>` column is one record whose bytes are: magic `1094861634` (u32),
//! version `1`, the element count (u32), the elements' bytes, their lengths' index (`-1` a
//! null element; the varints above) and that index's length (u32). A row of a `MAP<X, BLOB>`
//! column: magic `0x4D424342`, version, entry count, the serialized keys (io/blob_nested.rs),
//! the values' bytes, the key index, the value index (`-1` a null value) and the two index
//! lengths (u32 each). [`BlobFileWriter::add_array`] / [`BlobFileWriter::add_map`] write them,
//! [`parse_nested`] reads them; a record's bytes are read by its column's declared type, never
//! guessed from their first bytes.

use std::borrow::Cow;
use std::io::Write;
use std::path::Path;

use crate::error::{Error, Result};

/// The magic number opening each blob record (Java `BlobFormatWriter.MAGIC_NUMBER`).
pub const MAGIC_NUMBER: u32 = 1_481_511_375;
/// The second magic of an `ARRAY<BLOB>` record.
pub const ARRAY_MAGIC_NUMBER: u32 = 1_094_861_634;
/// The second magic of a `MAP<X, BLOB>` record.
pub const MAP_MAGIC_NUMBER: u32 = 0x4D42_4342;
/// The version byte after an `ARRAY<BLOB>` / `MAP<X, BLOB>` record's second magic.
pub const NESTED_VERSION: u8 = 1;
/// Element length (value length) of a null element of an `ARRAY<BLOB>` (`MAP<X, BLOB>`) record.
pub const NESTED_NULL_LENGTH: i64 = -1;
/// The file version in the last byte.
pub const VERSION: u8 = 1;
/// Index entry of a null row.
pub const NULL_LENGTH: i64 = -1;
/// Index entry of a placeholder row.
pub const PLACE_HOLDER_LENGTH: i64 = -2;
/// Bytes of a record that are not the blob: magic (4), length (8), CRC (4).
pub const RECORD_OVERHEAD: u64 = 16;
const FOOTER: usize = 5;

/// One row of a `.blob` file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BlobValue<'a> {
    Null,
    PlaceHolder,
    Data(&'a [u8]),
}

/// Where one row's blob bytes are in a `.blob` file (what a `BlobDescriptor` points at).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlobSlot {
    Null,
    PlaceHolder,
    /// `offset` of the first blob byte (after the magic) and the blob's `length`.
    Data {
        offset: u64,
        length: u64,
    },
}

/// Writes `.blob` records to `out` as they come (a file: no record is held in memory, as
/// pypaimon's `BlobFormatWriter` streams to its output); [`BlobFileWriter::finish`] adds index
/// and footer. `position()` is what a rolling writer compares with `blob.target-file-size`.
#[derive(Debug, Default)]
pub struct BlobFileWriter<W: Write = Vec<u8>> {
    out: W,
    position: u64,
    lengths: Vec<i64>,
}

impl BlobFileWriter<Vec<u8>> {
    /// A writer into a byte buffer.
    pub fn new() -> Self {
        Self::default()
    }
}

impl<W: Write> BlobFileWriter<W> {
    /// A writer of a `.blob` file to `out` (at its start).
    pub fn to(out: W) -> Self {
        BlobFileWriter {
            out,
            position: 0,
            lengths: vec![],
        }
    }

    /// Appends one row; returns where its bytes are (for a descriptor).
    pub fn add(&mut self, value: BlobValue<'_>) -> std::io::Result<BlobSlot> {
        Ok(match value {
            BlobValue::Null => {
                self.lengths.push(NULL_LENGTH);
                BlobSlot::Null
            }
            BlobValue::PlaceHolder => {
                self.lengths.push(PLACE_HOLDER_LENGTH);
                BlobSlot::PlaceHolder
            }
            BlobValue::Data(bytes) => self.add_record(&[Part::Bytes(bytes)])?,
        })
    }

    /// Appends one row whose value is `part` (None a null); returns where its bytes are.
    pub fn add_part(&mut self, part: Option<Part<'_>>) -> std::io::Result<BlobSlot> {
        match part {
            None => self.add(BlobValue::Null),
            Some(p) => self.add_record(&[p]),
        }
    }

    /// Appends one row whose record holds `parts` (concatenated) between the magic and the
    /// length; returns where they are. A file range is copied in chunks as the CRC is updated:
    /// no part is held in memory whole.
    fn add_record(&mut self, parts: &[Part<'_>]) -> std::io::Result<BlobSlot> {
        let start = self.position;
        let mut crc = crc32fast::Hasher::new();
        let magic = MAGIC_NUMBER.to_le_bytes();
        crc.update(&magic);
        self.out.write_all(&magic)?;
        let mut n: u64 = 0;
        for p in parts {
            n += p.copy_to(&mut self.out, &mut crc)?;
        }
        let record = n + RECORD_OVERHEAD;
        let len = record.to_le_bytes();
        crc.update(&len);
        self.out.write_all(&len)?;
        self.out.write_all(&crc.finalize().to_le_bytes())?;
        self.position += record;
        self.lengths.push(record as i64);
        Ok(BlobSlot::Data {
            offset: start + 4,
            length: n,
        })
    }

    /// Appends one `ARRAY<BLOB>` row (pypaimon's `add_blob_array`): second magic, version,
    /// element count, the elements' bytes, their lengths' index (`-1` a null element) and its
    /// length.
    pub fn add_array(&mut self, elements: &[Option<&[u8]>]) -> std::io::Result<BlobSlot> {
        let parts: Vec<Option<Part<'_>>> = elements.iter().map(|e| e.map(Part::Bytes)).collect();
        self.add_array_parts(&parts)
    }

    /// [`BlobFileWriter::add_array`] of elements that may be file ranges.
    pub fn add_array_parts(&mut self, elements: &[Option<Part<'_>>]) -> std::io::Result<BlobSlot> {
        let count = nested_count(elements.len())?;
        let lengths = nested_lengths(elements)?;
        let index = compress_lengths(&lengths);
        let head = nested_head(ARRAY_MAGIC_NUMBER, count);
        let index_len = index_length(&index)?;
        let mut parts: Vec<Part<'_>> = Vec::with_capacity(elements.len() + 3);
        parts.push(Part::Bytes(&head));
        parts.extend(elements.iter().flatten().cloned());
        parts.push(Part::Bytes(&index));
        parts.push(Part::Bytes(&index_len));
        self.add_record(&parts)
    }

    /// Appends one `MAP<X, BLOB>` row (pypaimon's `add_blob_map`): second magic, version,
    /// entry count, the serialized keys, the values' bytes, the key and value length indexes
    /// (`-1` a null value) and their lengths. `keys` are serialized ([`crate::io::blob_nested`])
    /// and unique.
    pub fn add_map(
        &mut self,
        keys: &[&[u8]],
        values: &[Option<&[u8]>],
    ) -> std::io::Result<BlobSlot> {
        let parts: Vec<Option<Part<'_>>> = values.iter().map(|e| e.map(Part::Bytes)).collect();
        self.add_map_parts(keys, &parts)
    }

    /// [`BlobFileWriter::add_map`] of values that may be file ranges.
    pub fn add_map_parts(
        &mut self,
        keys: &[&[u8]],
        values: &[Option<Part<'_>>],
    ) -> std::io::Result<BlobSlot> {
        let count = nested_count(keys.len())?;
        let key_lengths: Vec<i64> = keys.iter().map(|k| k.len() as i64).collect();
        let value_lengths = nested_lengths(values)?;
        let (ki, vi) = (
            compress_lengths(&key_lengths),
            compress_lengths(&value_lengths),
        );
        let head = nested_head(MAP_MAGIC_NUMBER, count);
        let mut tail = index_length(&ki)?.to_vec();
        tail.extend_from_slice(&index_length(&vi)?);
        let mut parts: Vec<Part<'_>> = Vec::with_capacity(keys.len() + values.len() + 4);
        parts.push(Part::Bytes(&head));
        parts.extend(keys.iter().map(|k| Part::Bytes(k)));
        parts.extend(values.iter().flatten().cloned());
        parts.push(Part::Bytes(&ki));
        parts.push(Part::Bytes(&vi));
        parts.push(Part::Bytes(&tail));
        self.add_record(&parts)
    }

    /// Bytes of records written so far.
    pub fn position(&self) -> u64 {
        self.position
    }

    /// Rows added so far.
    pub fn row_count(&self) -> usize {
        self.lengths.len()
    }

    /// Writes out what `out` buffers.
    pub fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }

    /// The output written to.
    pub fn get_ref(&self) -> &W {
        &self.out
    }

    /// Writes index and footer, flushes; returns the output and the file's size.
    pub fn finish(mut self) -> std::io::Result<(W, u64)> {
        let index = compress_lengths(&self.lengths);
        self.out.write_all(&index)?;
        self.out.write_all(&(index.len() as u32).to_le_bytes())?;
        self.out.write_all(&[VERSION])?;
        self.out.flush()?;
        let size = self.position + index.len() as u64 + FOOTER as u64;
        Ok((self.out, size))
    }
}

/// Bytes a record is written from: in memory, or `len` bytes of a local file from `offset`
/// (a resolved `BlobDescriptor`), copied in chunks as they are written.
#[derive(Debug, Clone, Copy)]
pub enum Part<'a> {
    Bytes(&'a [u8]),
    File {
        path: &'a Path,
        offset: u64,
        len: u64,
    },
}

/// The chunk a file range is copied in.
const COPY_CHUNK: usize = 64 << 10;

impl Part<'_> {
    /// Its length in bytes.
    pub fn len(&self) -> u64 {
        match self {
            Part::Bytes(b) => b.len() as u64,
            Part::File { len, .. } => *len,
        }
    }

    /// Whether it has no bytes.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Writes its bytes to `out`, updating `crc`; returns how many. A file shorter than the
    /// range is an error naming it.
    fn copy_to(&self, out: &mut impl Write, crc: &mut crc32fast::Hasher) -> std::io::Result<u64> {
        use std::io::{Read, Seek, SeekFrom};
        let (path, offset, len) = match *self {
            Part::Bytes(b) => {
                crc.update(b);
                out.write_all(b)?;
                return Ok(b.len() as u64);
            }
            Part::File { path, offset, len } => (path, offset, len),
        };
        let named =
            |e: std::io::Error| std::io::Error::new(e.kind(), format!("{}: {e}", path.display()));
        let mut f = std::fs::File::open(path).map_err(named)?;
        f.seek(SeekFrom::Start(offset)).map_err(named)?;
        let mut buf = vec![0u8; COPY_CHUNK.min(usize::try_from(len).unwrap_or(COPY_CHUNK))];
        let mut left = len;
        while left > 0 {
            let n = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
            f.read_exact(&mut buf[..n]).map_err(named)?;
            crc.update(&buf[..n]);
            out.write_all(&buf[..n])?;
            left -= n as u64;
        }
        Ok(len)
    }
}

/// The head of a nested record: its second `magic`, the version and the element `count`.
fn nested_head(magic: u32, count: u32) -> Vec<u8> {
    let mut head = Vec::with_capacity(9);
    head.extend_from_slice(&magic.to_le_bytes());
    head.push(NESTED_VERSION);
    head.extend_from_slice(&count.to_le_bytes());
    head
}

/// The index lengths of a nested record's elements (`-1` a null).
fn nested_lengths(elements: &[Option<Part<'_>>]) -> std::io::Result<Vec<i64>> {
    elements
        .iter()
        .map(|e| match e {
            None => Ok(NESTED_NULL_LENGTH),
            Some(p) => i64::try_from(p.len()).map_err(|_| too_large("a BLOB element")),
        })
        .collect()
}

/// A nested record's index length, as the u32 it is stored as.
fn index_length(index: &[u8]) -> std::io::Result<[u8; 4]> {
    u32::try_from(index.len())
        .map(u32::to_le_bytes)
        .map_err(|_| too_large("an ARRAY<BLOB> / MAP<X, BLOB> index"))
}

fn too_large(what: &str) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::InvalidInput,
        format!("{what} too large for a .blob record"),
    )
}

/// A nested record's element count (pypaimon caps it at `i32::MAX`).
fn nested_count(n: usize) -> std::io::Result<u32> {
    u32::try_from(n)
        .ok()
        .filter(|c| *c <= i32::MAX as u32)
        .ok_or_else(|| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("{n} elements in one ARRAY<BLOB> / MAP<X, BLOB> value"),
            )
        })
}

/// Encodes a whole file from its rows.
pub fn encode<'a>(rows: impl IntoIterator<Item = BlobValue<'a>>) -> std::io::Result<Vec<u8>> {
    let mut w = BlobFileWriter::new();
    for r in rows {
        w.add(r)?;
    }
    Ok(w.finish()?.0)
}

/// Pypaimon's `DeltaVarintCompressor.compress`: zig-zag varints of the first value and of the
/// deltas.
pub fn compress_lengths(values: &[i64]) -> Vec<u8> {
    let mut out = Vec::with_capacity(values.len() * 2);
    let mut prev = 0i64;
    for (i, &v) in values.iter().enumerate() {
        let d = if i == 0 { v } else { v.wrapping_sub(prev) };
        prev = v;
        let mut z = ((d << 1) ^ (d >> 63)) as u64;
        while z >= 0x80 {
            out.push((z as u8 & 0x7f) | 0x80);
            z >>= 7;
        }
        out.push(z as u8);
    }
    out
}

fn corrupt(path: &Path, message: String) -> Error {
    Error::CorruptFile {
        path: path.to_path_buf(),
        message,
    }
}

/// Inverse of [`compress_lengths`]; a truncated varint is an error naming `path`.
pub fn decompress_lengths(bytes: &[u8], path: &Path) -> Result<Vec<i64>> {
    let mut out = Vec::new();
    let mut i = 0usize;
    let mut prev = 0i64;
    while i < bytes.len() {
        let mut z: u64 = 0;
        let mut shift = 0u32;
        loop {
            let Some(&b) = bytes.get(i) else {
                return Err(corrupt(path, "blob index ends inside a varint".into()));
            };
            i += 1;
            if shift > 63 {
                return Err(corrupt(path, "blob index varint overflows 64 bits".into()));
            }
            z |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                break;
            }
            shift += 7;
        }
        let d = ((z >> 1) as i64) ^ -((z & 1) as i64);
        let v = if out.is_empty() {
            d
        } else {
            prev.wrapping_add(d)
        };
        out.push(v);
        prev = v;
    }
    Ok(out)
}

/// Reads the index of a whole `.blob` file: the slot of each row. Checks footer, version,
/// that the records fill the file up to the index, and each record's magic and length; a
/// corrupt or truncated file is an error naming `path`. CRCs are checked by [`decode`].
pub fn read_index(bytes: &[u8], path: &Path) -> Result<Vec<BlobSlot>> {
    let len = bytes.len() as u64;
    let (data_end, index_len) = footer(bytes.get(bytes.len().saturating_sub(FOOTER)..), len, path)?;
    let index = &bytes[data_end as usize..data_end as usize + index_len];
    slots(
        &decompress_lengths(index, path)?,
        data_end,
        Some(bytes),
        path,
    )
}

/// Reads the index of a `.blob` file of `len` bytes from its end only (two reads through
/// `read_at`: footer, then index): the slot of each row, for descriptors of its records. The
/// footer, version and that the records fill the file up to the index are checked; each
/// record's magic, length and CRC are checked when its bytes are read ([`decode`]).
pub fn read_index_at(
    len: u64,
    read_at: impl Fn(u64, usize) -> std::io::Result<bytes::Bytes>,
    path: &Path,
) -> Result<Vec<BlobSlot>> {
    let io = |e| Error::io(path, e);
    let foot = match len.checked_sub(FOOTER as u64) {
        Some(at) => Some(read_at(at, FOOTER).map_err(io)?),
        None => None,
    };
    let (data_end, index_len) = footer(foot.as_deref(), len, path)?;
    let index = read_at(data_end, index_len).map_err(io)?;
    slots(&decompress_lengths(&index, path)?, data_end, None, path)
}

/// The footer (`foot`: the file's last 5 bytes, None if it has fewer) of a `.blob` file of
/// `len` bytes: where its records end (its index starts) and the index's length.
fn footer(foot: Option<&[u8]>, len: u64, path: &Path) -> Result<(u64, usize)> {
    let foot = match foot {
        Some(f) if f.len() == FOOTER => f,
        _ => {
            return Err(corrupt(
                path,
                format!("a .blob file holds at least its 5-byte footer, this one has {len} bytes"),
            ))
        }
    };
    let version = foot[4];
    if version != VERSION {
        return Err(corrupt(
            path,
            format!("unsupported .blob file version {version} (paimon_rs reads version 1)"),
        ));
    }
    let index_len = u32::from_le_bytes([foot[0], foot[1], foot[2], foot[3]]) as usize;
    let before = len - FOOTER as u64;
    if index_len as u64 > before {
        return Err(corrupt(
            path,
            format!(
                "blob index of {index_len} bytes does not fit before the footer ({before} bytes)"
            ),
        ));
    }
    Ok((before - index_len as u64, index_len))
}

/// Each row's slot from the index's record `lengths`, the records filling `[0, data_end)`;
/// with `records` (the whole file), each record's magic and stored length checked too.
fn slots(
    lengths: &[i64],
    data_end: u64,
    records: Option<&[u8]>,
    path: &Path,
) -> Result<Vec<BlobSlot>> {
    let mut slots = Vec::with_capacity(lengths.len());
    let mut off: u64 = 0;
    for (row, &len) in lengths.iter().enumerate() {
        match len {
            NULL_LENGTH => slots.push(BlobSlot::Null),
            PLACE_HOLDER_LENGTH => slots.push(BlobSlot::PlaceHolder),
            l if l >= RECORD_OVERHEAD as i64 => {
                let l = l as u64;
                let end = off.checked_add(l).filter(|e| *e <= data_end);
                let Some(end) = end else {
                    return Err(corrupt(
                        path,
                        format!(
                            "row {row}: blob record of {l} bytes at {off} runs past the data ({data_end} bytes); truncated file?"
                        ),
                    ));
                };
                if let Some(bytes) = records {
                    check_record(bytes, off, end, l, row, path)?;
                }
                slots.push(BlobSlot::Data {
                    offset: off + 4,
                    length: l - RECORD_OVERHEAD,
                });
                off = end;
            }
            l => {
                return Err(corrupt(
                    path,
                    format!("row {row}: invalid blob index length {l}"),
                ))
            }
        }
    }
    if off != data_end {
        return Err(corrupt(
            path,
            format!("blob records end at {off} but the index starts at {data_end}; corrupt file"),
        ));
    }
    Ok(slots)
}

/// The record `[off, end)` of `l` bytes (row `row`) opens with the magic and stores `l`.
fn check_record(bytes: &[u8], off: u64, end: u64, l: u64, row: usize, path: &Path) -> Result<()> {
    let (s, e) = (off as usize, end as usize);
    let magic = u32::from_le_bytes([bytes[s], bytes[s + 1], bytes[s + 2], bytes[s + 3]]);
    if magic != MAGIC_NUMBER {
        return Err(corrupt(
            path,
            format!("row {row}: blob record at {off} has magic {magic}, not {MAGIC_NUMBER}"),
        ));
    }
    let mut lb = [0u8; 8];
    lb.copy_from_slice(&bytes[e - 12..e - 4]);
    if u64::from_le_bytes(lb) != l {
        return Err(corrupt(
            path,
            format!(
                "row {row}: blob record at {off} stores length {}, the index says {l}",
                u64::from_le_bytes(lb)
            ),
        ));
    }
    Ok(())
}

/// Version of a serialized `BlobDescriptor` (Java / pypaimon `BlobDescriptor.CURRENT_VERSION`).
pub const DESCRIPTOR_VERSION: u8 = 2;
/// The magic after a descriptor's version byte: `"BLOBDESC"` as a little-endian u64.
pub const DESCRIPTOR_MAGIC: u64 = 0x424C_4F42_4445_5343;

/// A serialized `BlobDescriptor` (what a BLOB column reads as with `blob-as-descriptor`):
/// `version:u8 | magic:u64 | uri_len:i32 | uri | offset:i64 | length:i64`, little endian,
/// byte for byte as Java's `BlobDescriptor.serialize` and pypaimon's.
pub fn descriptor_bytes(uri: &str, offset: u64, length: u64) -> Result<Vec<u8>> {
    let too_big =
        |what: &str| Error::invalid(format!("BLOB descriptor of '{uri}': {what} too large"));
    let uri_len = i32::try_from(uri.len()).map_err(|_| too_big("URI"))?;
    let offset = i64::try_from(offset).map_err(|_| too_big("offset"))?;
    let length = i64::try_from(length).map_err(|_| too_big("length"))?;
    let mut out = Vec::with_capacity(29 + uri.len());
    out.push(DESCRIPTOR_VERSION);
    out.extend_from_slice(&DESCRIPTOR_MAGIC.to_le_bytes());
    out.extend_from_slice(&uri_len.to_le_bytes());
    out.extend_from_slice(uri.as_bytes());
    out.extend_from_slice(&offset.to_le_bytes());
    out.extend_from_slice(&length.to_le_bytes());
    Ok(out)
}

/// Decodes every row of a whole `.blob` file, checking each record's CRC: each record's
/// bytes between its magic and its length. What they are is the column's declared type's to
/// say (the reader knows it): a BLOB column's values as they are, an `ARRAY<BLOB>` /
/// `MAP<X, BLOB>` column's records parsed by [`parse_nested`]. The bytes are never sniffed: a
/// BLOB value may start with a nested record's magic.
pub fn decode<'a>(bytes: &'a [u8], path: &Path) -> Result<Vec<BlobValue<'a>>> {
    let slots = read_index(bytes, path)?;
    let mut out = Vec::with_capacity(slots.len());
    for (row, slot) in slots.into_iter().enumerate() {
        match slot {
            BlobSlot::Null => out.push(BlobValue::Null),
            BlobSlot::PlaceHolder => out.push(BlobValue::PlaceHolder),
            BlobSlot::Data { offset, length } => {
                let s = offset as usize - 4;
                let e = offset as usize + length as usize + 12;
                let data = &bytes[offset as usize..offset as usize + length as usize];
                let mut crc = crc32fast::Hasher::new();
                crc.update(&bytes[s..e - 4]);
                let want =
                    u32::from_le_bytes([bytes[e - 4], bytes[e - 3], bytes[e - 2], bytes[e - 1]]);
                let got = crc.finalize();
                if got != want {
                    return Err(corrupt(
                        path,
                        format!(
                            "row {row}: blob record CRC-32 is {got:#010x}, stored {want:#010x}"
                        ),
                    ));
                }
                out.push(BlobValue::Data(data));
            }
        }
    }
    Ok(out)
}

/// The elements of a nested record: the byte range (relative to the record's bytes after its
/// magic) of each element of an `ARRAY<BLOB>`, or each entry's serialized key and value range
/// of a `MAP<X, BLOB>`; None a null element or value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Nested<'a> {
    Array(Vec<Option<Span>>),
    Map(Vec<(Cow<'a, [u8]>, Option<Span>)>),
}

/// Start and length of an element's bytes in a nested record.
pub type Span = (usize, usize);

/// Parses the bytes of a nested record (`data`: between the magic and the length) of row
/// `row` as pypaimon's `BlobRecordIterator` does, `map` saying which kind the column is; a
/// malformed record is an error naming `path`. A null key (pypaimon cannot return it either)
/// is refused.
pub fn parse_nested<'a>(data: &'a [u8], map: bool, path: &Path, row: usize) -> Result<Nested<'a>> {
    parse_nested_with(
        data.len(),
        &|at, n| Ok(Cow::Borrowed(&data[at..at + n])),
        map,
        path,
        row,
    )
}

/// [`parse_nested`] of a record's `len` bytes fetched through `get(at, n)` (`n` bytes from
/// `at`, both within `len`): only its head, its indexes and (a map's) keys are asked for, not
/// the elements' bytes (what a descriptor read needs: pypaimon's reads of record heads and
/// indexes).
pub fn parse_nested_with<'a>(
    len: usize,
    get: &dyn Fn(usize, usize) -> Result<Cow<'a, [u8]>>,
    map: bool,
    path: &Path,
    row: usize,
) -> Result<Nested<'a>> {
    let what = if map { "MAP<X, BLOB>" } else { "ARRAY<BLOB>" };
    let bad = |m: String| corrupt(path, format!("row {row}: invalid {what} record: {m}"));
    let tail_len = if map { 8 } else { 4 };
    if len < 9 + tail_len {
        return Err(bad(format!("{len} bytes")));
    }
    let u32_at = |b: &[u8], at: usize| u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]);
    let head = get(0, 9)?;
    let (magic, want) = (
        u32_at(&head, 0),
        if map {
            MAP_MAGIC_NUMBER
        } else {
            ARRAY_MAGIC_NUMBER
        },
    );
    if magic != want {
        return Err(bad(format!("magic number {magic}, not {want}")));
    }
    if head[4] != NESTED_VERSION {
        return Err(bad(format!("unsupported version {}", head[4])));
    }
    let count = u32_at(&head, 5) as usize;
    let end = len - tail_len;
    let tail = get(end, tail_len)?;
    let index = |start: usize, n: usize| -> Result<Vec<i64>> {
        let lengths = decompress_lengths(&get(start, n)?, path)?;
        if lengths.len() != count {
            return Err(bad(format!(
                "{} lengths in its index for {count} elements",
                lengths.len()
            )));
        }
        Ok(lengths)
    };
    // the elements' (values') ranges, from `at`, filling the data up to `stop`
    let ranges = |lengths: &[i64], mut at: usize, stop: usize| -> Result<Vec<Option<Span>>> {
        let mut out = Vec::with_capacity(lengths.len());
        for &l in lengths {
            if l == NESTED_NULL_LENGTH {
                out.push(None);
                continue;
            }
            let l = usize::try_from(l).map_err(|_| bad(format!("element length {l}")))?;
            if l > stop - at {
                return Err(bad("element lengths exceed the record".into()));
            }
            out.push(Some((at, l)));
            at += l;
        }
        if at != stop {
            return Err(bad("element lengths do not match the record's data".into()));
        }
        Ok(out)
    };
    if !map {
        let il = u32_at(&tail, 0) as usize;
        let start = end
            .checked_sub(il)
            .filter(|s| *s >= 9)
            .ok_or_else(|| bad(format!("index length {il}")))?;
        return Ok(Nested::Array(ranges(&index(start, il)?, 9, start)?));
    }
    let (kl, vl) = (u32_at(&tail, 0) as usize, u32_at(&tail, 4) as usize);
    let start = end
        .checked_sub(kl)
        .and_then(|e| e.checked_sub(vl))
        .filter(|s| *s >= 9)
        .ok_or_else(|| bad(format!("index lengths {kl} and {vl}")))?;
    let key_lengths = index(start, kl)?;
    let value_lengths = index(start + kl, vl)?;
    let mut spans = Vec::with_capacity(count);
    let mut at = 9usize;
    for &l in &key_lengths {
        if l == NESTED_NULL_LENGTH {
            return Err(Error::unsupported(format!(
                "{}: row {row}: MAP<X, BLOB> with null keys cannot be converted to an Arrow map",
                path.display()
            )));
        }
        let l = usize::try_from(l).map_err(|_| bad(format!("key length {l}")))?;
        if l > start - at {
            return Err(bad("key lengths exceed the record".into()));
        }
        spans.push((at - 9, l));
        at += l;
    }
    let values = ranges(&value_lengths, at, start)?;
    // the keys in one read
    let region = get(9, at - 9)?;
    let keys: Vec<Cow<'a, [u8]>> = match region {
        Cow::Borrowed(r) => spans
            .iter()
            .map(|&(s, l)| Cow::Borrowed(&r[s..s + l]))
            .collect(),
        Cow::Owned(r) => spans
            .iter()
            .map(|&(s, l)| Cow::Owned(r[s..s + l].to_vec()))
            .collect(),
    };
    let unique = {
        let mut seen = std::collections::HashSet::with_capacity(count);
        keys.iter().all(|k| seen.insert(k.as_ref()))
    };
    if !unique {
        return Err(bad("duplicate key".into()));
    }
    Ok(Nested::Map(keys.into_iter().zip(values).collect()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p() -> &'static Path {
        Path::new("/t/data-1.blob")
    }

    /// Bytes pypaimon 2.1.0's `BlobFormatWriter` writes for rows b"hello", None, b"",
    /// placeholder, b"world!" (`BlobFormatWriter(BytesIO()).add_element(...)` in its venv).
    const PYPAIMON: &str = "cf114e5868656c6c6f1500000000000000c8f6a751cf114e581000000000000000537fdf03cf114e58776f726c64211600000000000000228055992a2b2223300500000001";

    fn unhex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
            .collect()
    }

    /// The `.blob` file of a pypaimon 2.1.0 blob table (row-tracking + data-evolution,
    /// `write_arrow` of b"abc", None, b"", bytes(range(256))*3 into a `large_binary` column).
    const PYPAIMON_TABLE: &str = concat!(
        "cf114e58616263130000000000000053311452cf114e581000000000000000537fdf03cf114e580001020304",
        "05060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f202122232425262728292a2b2c2d2e2f30",
        "3132333435363738393a3b3c3d3e3f404142434445464748494a4b4c4d4e4f505152535455565758595a5b5c",
        "5d5e5f606162636465666768696a6b6c6d6e6f707172737475767778797a7b7c7d7e7f808182838485868788",
        "898a8b8c8d8e8f909192939495969798999a9b9c9d9e9fa0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4",
        "b5b6b7b8b9babbbcbdbebfc0c1c2c3c4c5c6c7c8c9cacbcccdcecfd0d1d2d3d4d5d6d7d8d9dadbdcdddedfe0",
        "e1e2e3e4e5e6e7e8e9eaebecedeeeff0f1f2f3f4f5f6f7f8f9fafbfcfdfeff000102030405060708090a0b0c",
        "0d0e0f101112131415161718191a1b1c1d1e1f202122232425262728292a2b2c2d2e2f303132333435363738",
        "393a3b3c3d3e3f404142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f6061626364",
        "65666768696a6b6c6d6e6f707172737475767778797a7b7c7d7e7f808182838485868788898a8b8c8d8e8f90",
        "9192939495969798999a9b9c9d9e9fa0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b7b8b9babbbc",
        "bdbebfc0c1c2c3c4c5c6c7c8c9cacbcccdcecfd0d1d2d3d4d5d6d7d8d9dadbdcdddedfe0e1e2e3e4e5e6e7e8",
        "e9eaebecedeeeff0f1f2f3f4f5f6f7f8f9fafbfcfdfeff000102030405060708090a0b0c0d0e0f1011121314",
        "15161718191a1b1c1d1e1f202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f40",
        "4142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f606162636465666768696a6b6c",
        "6d6e6f707172737475767778797a7b7c7d7e7f808182838485868788898a8b8c8d8e8f909192939495969798",
        "999a9b9c9d9e9fa0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b7b8b9babbbcbdbebfc0c1c2c3c4",
        "c5c6c7c8c9cacbcccdcecfd0d1d2d3d4d5d6d7d8d9dadbdcdddedfe0e1e2e3e4e5e6e7e8e9eaebecedeeeff0",
        "f1f2f3f4f5f6f7f8f9fafbfcfdfeff100300000000000054c4d515262722800c0500000001",
    );

    fn rows() -> Vec<BlobValue<'static>> {
        vec![
            BlobValue::Data(b"hello"),
            BlobValue::Null,
            BlobValue::Data(b""),
            BlobValue::PlaceHolder,
            BlobValue::Data(b"world!"),
        ]
    }

    /// Bytes pypaimon 2.1.0's `BlobFormatWriter` writes for rows `[b"ab", None, b""]`, null,
    /// `MAP<INT, BLOB>` `{3: b"xyz", -1: None, 7: b"q"}`, `MAP<STRING, BLOB>` `{"k": b"v"}`,
    /// `[]` (`add_blob_array` / `add_blob_map` in its venv).
    const PYPAIMON_NESTED: &str = concat!(
        "cf114e5842434241010300000061620405020300000022000000000000",
        "00f6af30a0cf114e584243424d010300000003000000ffffffff0700000078797a71080000060704030000",
        "00030000003700000000000000e14a918ccf114e584243424d01010000006b76020201000000010000002500",
        "000000000000efaf6fa8cf114e58424342410100000000000000001d000000000000009bd4915744457023",
        "0f0500000001",
    );

    #[test]
    fn blob_nested_records_are_byte_exact_with_pypaimon() {
        let mut w = BlobFileWriter::new();
        w.add_array(&[Some(b"ab"), None, Some(b"")]).unwrap();
        w.add(BlobValue::Null).unwrap();
        let keys: Vec<Vec<u8>> = [3i32, -1, 7]
            .iter()
            .map(|k| k.to_le_bytes().to_vec())
            .collect();
        let keys: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
        w.add_map(&keys, &[Some(b"xyz"), None, Some(b"q")]).unwrap();
        w.add_map(&[b"k"], &[Some(b"v")]).unwrap();
        w.add_array(&[]).unwrap();
        let bytes = w.finish().unwrap().0;
        assert_eq!(bytes, unhex(PYPAIMON_NESTED));
        let rows = decode(&bytes, p()).unwrap();
        let BlobValue::Data(d) = rows[0] else {
            panic!("row 0")
        };
        let Nested::Array(a) = parse_nested(d, false, p(), 0).unwrap() else {
            panic!("array")
        };
        let got: Vec<Option<&[u8]>> = a.iter().map(|r| r.map(|(s, l)| &d[s..s + l])).collect();
        assert_eq!(got, vec![Some(&b"ab"[..]), None, Some(&b""[..])]);
        assert_eq!(rows[1], BlobValue::Null);
        let BlobValue::Data(d) = rows[2] else {
            panic!("row 2")
        };
        let Nested::Map(m) = parse_nested(d, true, p(), 2).unwrap() else {
            panic!("map")
        };
        assert_eq!(m.len(), 3);
        assert_eq!(m[0].0, &3i32.to_le_bytes()[..]);
        assert_eq!(m[1].1, None);
        let (s, l) = m[2].1.unwrap();
        assert_eq!(&d[s..s + l], b"q");
        // a nested record read as the other kind is refused
        assert!(parse_nested(d, false, p(), 2).is_err());
        let BlobValue::Data(d) = rows[4] else {
            panic!("row 4")
        };
        assert_eq!(
            parse_nested(d, false, p(), 4).unwrap(),
            Nested::Array(vec![])
        );
    }

    /// Records written from file ranges (resolved descriptors, copied in chunks) are the
    /// records of their bytes; a file shorter than its range is an error naming it.
    #[test]
    fn blob_file_parts_are_copied_in_chunks() {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("src.bin");
        let big: Vec<u8> = (0..(3 * COPY_CHUNK + 17))
            .map(|i| (i % 251) as u8)
            .collect();
        std::fs::write(&src, &big).unwrap();
        let file = |offset: u64, len: u64| Part::File {
            path: &src,
            offset,
            len,
        };
        let mut w = BlobFileWriter::new();
        w.add_part(Some(file(5, big.len() as u64 - 5))).unwrap();
        w.add_array_parts(&[Some(file(1, 3)), None, Some(Part::Bytes(b"ab"))])
            .unwrap();
        w.add_map_parts(&[b"k"], &[Some(file(0, big.len() as u64))])
            .unwrap();
        let mut want = BlobFileWriter::new();
        want.add(BlobValue::Data(&big[5..])).unwrap();
        want.add_array(&[Some(&big[1..4]), None, Some(b"ab")])
            .unwrap();
        want.add_map(&[b"k"], &[Some(&big)]).unwrap();
        assert_eq!(w.finish().unwrap().0, want.finish().unwrap().0);
        let e = BlobFileWriter::new()
            .add_part(Some(file(10, big.len() as u64)))
            .unwrap_err()
            .to_string();
        assert!(e.contains("src.bin"), "{e}");
    }

    /// A descriptor read parses a nested record from its head, indexes and keys only: the
    /// elements' bytes are never asked for (review34 F3).
    #[test]
    fn blob_nested_parse_with_reads_no_element_bytes() {
        let big = vec![7u8; 1 << 16];
        let mut w = BlobFileWriter::new();
        w.add_array(&[Some(&big), None, Some(&big)]).unwrap();
        w.add_map(&[b"key1", b"k2"], &[Some(&big), Some(b"v")])
            .unwrap();
        let bytes = w.finish().unwrap().0;
        let rows = decode(&bytes, p()).unwrap();
        for (row, map) in [(0, false), (1, true)] {
            let BlobValue::Data(d) = rows[row] else {
                panic!("row {row}")
            };
            let asked = std::cell::Cell::new(0usize);
            let get = |at: usize, n: usize| -> Result<Cow<'static, [u8]>> {
                asked.set(asked.get() + n);
                Ok(Cow::Owned(d[at..at + n].to_vec()))
            };
            let got = parse_nested_with(d.len(), &get, map, p(), row).unwrap();
            assert!(asked.get() < 64, "{} bytes read", asked.get());
            let want = parse_nested(d, map, p(), row).unwrap();
            assert_eq!(got, want);
        }
    }

    #[test]
    fn blob_nested_duplicate_or_truncated_is_corrupt() {
        let mut w = BlobFileWriter::new();
        w.add_map(&[b"k", b"k"], &[Some(b"1"), Some(b"2")]).unwrap();
        let bytes = w.finish().unwrap().0;
        let rows = decode(&bytes, p()).unwrap();
        let BlobValue::Data(d) = rows[0] else {
            panic!("row 0")
        };
        let e = parse_nested(d, true, p(), 0).unwrap_err().to_string();
        assert!(e.contains("duplicate key"), "{e}");
        let e = parse_nested(&d[..d.len() - 3], true, p(), 0)
            .unwrap_err()
            .to_string();
        assert!(e.contains("MAP<X, BLOB>"), "{e}");
    }

    #[test]
    fn blob_encode_is_byte_exact_with_pypaimon() {
        assert_eq!(encode(rows()).unwrap(), unhex(PYPAIMON));
    }

    #[test]
    fn blob_decode_reads_pypaimon_file() {
        let b = unhex(PYPAIMON);
        assert_eq!(decode(&b, p()).expect("decode"), rows());
        let slots = read_index(&b, p()).expect("index");
        assert_eq!(
            slots[0],
            BlobSlot::Data {
                offset: 4,
                length: 5
            }
        );
        assert_eq!(
            slots[2],
            BlobSlot::Data {
                offset: 25,
                length: 0
            }
        );
    }

    #[test]
    fn blob_empty_file_and_varints_round_trip() {
        let b = encode(Vec::new()).unwrap();
        assert_eq!(b, vec![0, 0, 0, 0, 1]);
        assert!(decode(&b, p()).expect("empty").is_empty());
        let vals = [0i64, -1, -2, 300, 1 << 40, i64::MAX / 2, -7, 16];
        let c = compress_lengths(&vals);
        assert_eq!(decompress_lengths(&c, p()).expect("varint"), vals);
        let big = vec![7u8; 100_000];
        let b = encode(vec![BlobValue::Data(&big), BlobValue::Null]).unwrap();
        let d = decode(&b, p()).expect("big");
        assert_eq!(d[0], BlobValue::Data(&big[..]));
    }

    #[test]
    fn blob_corrupt_and_truncated_files_name_the_file() {
        let good = unhex(PYPAIMON);
        let mut flipped = good.clone();
        flipped[5] ^= 1; // inside "hello"
        let e = decode(&flipped, p()).expect_err("crc").to_string();
        assert!(e.contains("data-1.blob") && e.contains("CRC"), "{e}");
        let e = decode(&good[..3], p()).expect_err("short").to_string();
        assert!(e.contains("data-1.blob") && e.contains("footer"), "{e}");
        // The head of the file lost (a partial upload): records no longer fill the data.
        let truncated = good[10..].to_vec();
        let e = decode(&truncated, p()).expect_err("trunc").to_string();
        assert!(e.contains("data-1.blob"), "{e}");
        let mut badver = good.clone();
        let n = badver.len();
        badver[n - 1] = 2;
        let e = decode(&badver, p()).expect_err("ver").to_string();
        assert!(e.contains("version 2"), "{e}");
        let mut badmagic = good;
        badmagic[0] ^= 0xff;
        let e = decode(&badmagic, p()).expect_err("magic").to_string();
        assert!(e.contains("magic"), "{e}");
    }

    /// The index read from the file's end only (two reads) is the whole file's; what it
    /// cannot check without the records (their magic) is left to the read of the bytes.
    #[test]
    fn blob_index_from_the_end_of_the_file() {
        let reads = std::cell::RefCell::new(vec![]);
        let at = |b: &[u8]| {
            let b = bytes::Bytes::copy_from_slice(b);
            let reads = &reads;
            move |start: u64, n: usize| {
                reads.borrow_mut().push((start, n));
                let s = start as usize;
                b.get(s..s + n).map(|x| b.slice_ref(x)).ok_or_else(|| {
                    std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "past the end")
                })
            }
        };
        for file in [
            unhex(PYPAIMON),
            unhex(PYPAIMON_TABLE),
            encode(Vec::new()).unwrap(),
        ] {
            reads.borrow_mut().clear();
            let len = file.len() as u64;
            let got = read_index_at(len, at(&file), p()).expect("tail");
            assert_eq!(got, read_index(&file, p()).expect("whole"));
            let reads = reads.borrow();
            assert_eq!(reads.len(), 2);
            assert_eq!(reads[0], (len - 5, 5));
        }
        let good = unhex(PYPAIMON);
        let e = read_index_at(3, at(&good[..3]), p())
            .expect_err("short")
            .to_string();
        assert!(e.contains("data-1.blob") && e.contains("footer"), "{e}");
        let truncated = good[10..].to_vec();
        let e = read_index_at(truncated.len() as u64, at(&truncated), p()).expect_err("trunc");
        assert!(e.to_string().contains("data-1.blob"), "{e}");
        let mut badver = good.clone();
        let n = badver.len();
        badver[n - 1] = 2;
        let e = read_index_at(n as u64, at(&badver), p())
            .expect_err("ver")
            .to_string();
        assert!(e.contains("version 2"), "{e}");
    }

    #[test]
    fn blob_values_opening_with_a_nested_magic_are_plain_values() {
        // review34 F1: a BLOB value starting `BCBA\x01` / `BCBM\x01` made the file unreadable
        let mut array_like = ARRAY_MAGIC_NUMBER.to_le_bytes().to_vec();
        array_like.extend_from_slice(&[1, 0, 0, 0, 0, b'x']);
        let mut map_like = MAP_MAGIC_NUMBER.to_le_bytes().to_vec();
        map_like.extend_from_slice(b"\x01user payload");
        let rows = vec![BlobValue::Data(&array_like), BlobValue::Data(&map_like)];
        let b = encode(rows.clone()).unwrap();
        assert_eq!(decode(&b, p()).expect("plain values"), rows);
    }

    #[test]
    fn blob_reads_and_rewrites_a_pypaimon_table_file() {
        let b = unhex(PYPAIMON_TABLE);
        let rows = decode(&b, p()).expect("pypaimon table file");
        let big: Vec<u8> = (0..3).flat_map(|_| 0u8..=255).collect();
        let want = vec![
            BlobValue::Data(b"abc"),
            BlobValue::Null,
            BlobValue::Data(b""),
            BlobValue::Data(&big),
        ];
        assert_eq!(rows, want);
        assert_eq!(encode(want).unwrap(), b);
    }

    #[test]
    fn descriptor_bytes_are_javas_layout() {
        let d = super::descriptor_bytes("/a/b.blob", 4, 8).unwrap();
        let mut want = vec![2u8];
        want.extend_from_slice(b"CSEDBOLB");
        want.extend_from_slice(&9i32.to_le_bytes());
        want.extend_from_slice(b"/a/b.blob");
        want.extend_from_slice(&4i64.to_le_bytes());
        want.extend_from_slice(&8i64.to_le_bytes());
        assert_eq!(d, want);
        assert!(super::descriptor_bytes("x", u64::MAX, 0).is_err());
    }
}
