//! Block checksums of the Parquet data files this engine writes.
//!
//! Parquet can carry a CRC-32 per page (`PageHeader.crc`; Java's parquet-mr writes them), but the
//! arrow-rs 60 writer leaves it unset, so a flipped byte inside a compressed page of a file we
//! wrote could decode to other values. So the writer records the CRC-32 of every [`BLOCK`] bytes
//! of the file's data region (every byte before the footer) in the footer's key-value metadata
//! under [`KEY`], and a file carrying them is read through [`VerifiedFile`], which checks each
//! block the Parquet reader touches before handing out its bytes. Other readers (Java Paimon,
//! pypaimon) ignore the key; the file stays plain Parquet.
//!
//! Value of [`KEY`]: `v1:<block size>:<data length>:<CRC-32 of each block, 8 hex digits each>`.

use super::remote::ReadAt;
use std::fs::File;
use std::io::{self, Write};

use bytes::Bytes;
use parquet::errors::{ParquetError, Result as PqResult};
use parquet::file::reader::{ChunkReader, Length};

/// Bytes covered by one checksum.
pub const BLOCK: usize = 16 << 10;

/// Footer key-value metadata key of the block checksums.
pub const KEY: &str = "paimon-rs.crc32-blocks";

/// A writer that checksums every byte written through it, block by block.
pub struct ChecksumWriter<W> {
    inner: W,
    hasher: crc32fast::Hasher,
    in_block: usize,
    crcs: Vec<u32>,
    written: u64,
}

impl<W: Write> ChecksumWriter<W> {
    pub fn new(inner: W) -> Self {
        ChecksumWriter {
            inner,
            hasher: crc32fast::Hasher::new(),
            in_block: 0,
            crcs: vec![],
            written: 0,
        }
    }

    pub fn into_inner(self) -> W {
        self.inner
    }

    fn update(&mut self, mut b: &[u8]) {
        self.written += b.len() as u64;
        while !b.is_empty() {
            let take = (BLOCK - self.in_block).min(b.len());
            self.hasher.update(&b[..take]);
            self.in_block += take;
            b = &b[take..];
            if self.in_block == BLOCK {
                let h = std::mem::replace(&mut self.hasher, crc32fast::Hasher::new());
                self.crcs.push(h.finalize());
                self.in_block = 0;
            }
        }
    }

    /// The [`KEY`] value covering every byte written so far (the last block may be partial).
    pub fn metadata_value(&self) -> String {
        let mut crcs = self.crcs.clone();
        if self.in_block > 0 {
            crcs.push(self.hasher.clone().finalize());
        }
        let mut s = format!("v1:{BLOCK}:{}:", self.written);
        s.reserve(crcs.len() * 8);
        for c in crcs {
            s.push_str(&format!("{c:08x}"));
        }
        s
    }
}

impl<W: Write> Write for ChecksumWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.update(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// Block checksums parsed from a [`KEY`] value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Blocks {
    block: u64,
    /// Bytes covered, from offset 0.
    covered: u64,
    crcs: Vec<u32>,
}

impl Blocks {
    /// Parse a [`KEY`] value; `Err` names what is malformed.
    pub fn parse(v: &str) -> Result<Blocks, String> {
        let bad = || format!("malformed {KEY} metadata");
        let mut parts = v.splitn(4, ':');
        if parts.next() != Some("v1") {
            return Err(format!("{KEY} metadata of an unknown version"));
        }
        let block: u64 = parts.next().and_then(|x| x.parse().ok()).ok_or_else(bad)?;
        let covered: u64 = parts.next().and_then(|x| x.parse().ok()).ok_or_else(bad)?;
        let hex = parts.next().ok_or_else(bad)?;
        if block == 0 || hex.len() % 8 != 0 || (hex.len() / 8) as u64 != covered.div_ceil(block) {
            return Err(bad());
        }
        let crcs = (0..hex.len() / 8)
            .map(|i| {
                hex.get(i * 8..i * 8 + 8)
                    .and_then(|h| u32::from_str_radix(h, 16).ok())
            })
            .collect::<Option<Vec<u32>>>()
            .ok_or_else(bad)?;
        Ok(Blocks {
            block,
            covered,
            crcs,
        })
    }
}

/// A data file read through its block checksums: every byte handed to the Parquet reader below
/// `covered` comes from a block whose CRC-32 matched (bytes past it, the footer's page indexes,
/// are read as they are).
pub struct VerifiedFile<R: ReadAt = File> {
    file: R,
    len: u64,
    blocks: Blocks,
}

impl<R: ReadAt> VerifiedFile<R> {
    pub fn new(file: R, len: u64, blocks: Blocks) -> Self {
        VerifiedFile { file, len, blocks }
    }

    fn read_at(&self, start: u64, len: usize) -> PqResult<Bytes> {
        self.file
            .read_at(start, len)
            .map_err(|e| ParquetError::EOF(format!("reading {len} bytes at {start}: {e}")))
    }
}

impl<R: ReadAt> Length for VerifiedFile<R> {
    fn len(&self) -> u64 {
        self.len
    }
}

impl<R: ReadAt + 'static> ChunkReader for VerifiedFile<R> {
    type T = io::Cursor<Bytes>;

    /// A page header (tens of bytes: our files carry no page statistics): the verified bytes
    /// from `start` to the end of its block, or of the next block when fewer than 4 KiB remain.
    fn get_read(&self, start: u64) -> PqResult<Self::T> {
        let b = self.blocks.block;
        let mut end = (start / b + 1) * b;
        if end - start < 4096 {
            end += b;
        }
        let end = end.min(self.len).max(start);
        Ok(io::Cursor::new(
            self.get_bytes(start, (end - start) as usize)?,
        ))
    }

    fn get_bytes(&self, start: u64, length: usize) -> PqResult<Bytes> {
        let end = start + length as u64;
        if start >= self.blocks.covered {
            return self.read_at(start, length);
        }
        // read whole blocks around the covered part of the range, verify each, cut the range
        let b = self.blocks.block;
        let first = start / b;
        let from = first * b;
        // whole blocks up to the range's end (the last block may be partial), then any bytes
        // of the range past the covered region
        let verified_to = (end.min(self.blocks.covered).div_ceil(b) * b).min(self.blocks.covered);
        let to = verified_to.max(end);
        let buf = self.read_at(from, (to - from) as usize)?;
        let verified = (verified_to - from) as usize;
        for (i, chunk) in buf[..verified].chunks(b as usize).enumerate() {
            let idx = first as usize + i;
            let want = self.blocks.crcs.get(idx).copied();
            if Some(crc32fast::hash(chunk)) != want {
                return Err(ParquetError::General(format!(
                    "block checksum mismatch in bytes {}..{} ({KEY})",
                    idx as u64 * b,
                    idx as u64 * b + chunk.len() as u64
                )));
            }
        }
        let off = (start - from) as usize;
        Ok(buf.slice(off..off + length))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_round_trip_through_the_metadata_value() {
        let data: Vec<u8> = (0..(BLOCK * 2 + 100))
            .map(|i| (i * 31 % 251) as u8)
            .collect();
        let mut w = ChecksumWriter::new(Vec::new());
        // odd write sizes straddle block boundaries
        for part in data.chunks(7000) {
            w.write_all(part).unwrap();
        }
        let blocks = Blocks::parse(&w.metadata_value()).unwrap();
        assert_eq!(blocks.covered, data.len() as u64);
        assert_eq!(
            blocks.crcs,
            data.chunks(BLOCK).map(crc32fast::hash).collect::<Vec<_>>()
        );
        assert_eq!(w.into_inner(), data);
        assert!(Blocks::parse("v1:16384:10:").is_err());
        assert!(Blocks::parse("v2:16384:0:").is_err());
        assert!(Blocks::parse("v1:16384:10:zzzzzzzz").is_err());
    }

    #[test]
    fn a_flipped_byte_in_a_block_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let data: Vec<u8> = (0..(BLOCK * 3)).map(|i| (i % 253) as u8).collect();
        let mut w = ChecksumWriter::new(Vec::new());
        w.write_all(&data[..BLOCK * 2 + 10]).unwrap();
        let blocks = Blocks::parse(&w.metadata_value()).unwrap();
        std::fs::write(&path, &data).unwrap();
        let f = VerifiedFile::new(
            File::open(&path).unwrap(),
            data.len() as u64,
            blocks.clone(),
        );
        let got = f.get_bytes(BLOCK as u64 - 5, 20).unwrap();
        assert_eq!(&got[..], &data[BLOCK - 5..BLOCK + 15]);
        // past the covered bytes: read as they are
        let tail = f.get_bytes(BLOCK as u64 * 2 + 100, 50).unwrap();
        assert_eq!(&tail[..], &data[BLOCK * 2 + 100..BLOCK * 2 + 150]);
        let mut flipped = data.clone();
        flipped[BLOCK + 3] ^= 0x10;
        std::fs::write(&path, &flipped).unwrap();
        let f = VerifiedFile::new(File::open(&path).unwrap(), data.len() as u64, blocks);
        assert!(f.get_bytes(0, 100).is_ok());
        let e = f.get_bytes(BLOCK as u64 - 5, 20).unwrap_err().to_string();
        assert!(
            e.contains("block checksum mismatch in bytes 16384..32768"),
            "{e}"
        );
        assert!(f.get_read(BLOCK as u64 + 1000).is_err());
    }
}
