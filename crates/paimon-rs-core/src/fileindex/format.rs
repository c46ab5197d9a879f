//! Java Paimon's file index container (`FileIndexFormat`, version 1; docs/paimon-format.md
//! §13): one blob per data file holding every index of every indexed column.
//!
//! ```text
//! magic            i64   1493475289347502
//! version          i32   1
//! head length      i32   bytes from the file's start to the body
//! column count     i32
//! per column:      name (Java writeUTF), index count i32,
//!                  per index: type (writeUTF), start i32 (from the file's start; -1 = empty), length i32
//! redundant length i32   0
//! body             the indexes' bytes, in head order
//! ```
//!
//! Java writes the columns (and each column's index types) in the iteration order of a
//! `java.util.HashMap` keyed by name; [`java_hash_order`] reproduces it so our bytes equal
//! Java's.

use crate::error::{Error, Result};

pub(crate) const MAGIC: i64 = 1_493_475_289_347_502;
const VERSION: i32 = 1;
const EMPTY_INDEX: i32 = -1;

/// The index of one column in a container: `bytes` None is Java's empty index (a map key
/// never seen), which skips nothing.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ColumnIndex {
    pub column: String,
    pub index_type: String,
    pub bytes: Option<Vec<u8>>,
}

/// Java's `String.hashCode` (over UTF-16 code units).
fn java_string_hash(s: &str) -> i32 {
    s.encode_utf16()
        .fold(0i32, |h, c| h.wrapping_mul(31).wrapping_add(c as i32))
}

/// A `java.util.HashMap`'s table of keys (by their `hashCode`), enough to know the order it
/// iterates them in: by bucket (the spread hash modulo the table size), then by the order of
/// the bucket's list. `put` appends to a bucket's list and grows the table (16, doubling)
/// once it is more than 3/4 full; `computeIfAbsent` grows it before inserting, only when it is
/// already over, and pushes to the list's front. A resize splits each list in order.
struct JavaHashMap {
    table: Vec<Vec<(i32, usize)>>,
    size: usize,
}

impl JavaHashMap {
    fn new() -> Self {
        JavaHashMap {
            table: vec![vec![]; 16],
            size: 0,
        }
    }
    fn threshold(&self) -> usize {
        self.table.len() * 3 / 4
    }
    fn bucket(&self, h: i32) -> usize {
        let spread = h ^ ((h as u32) >> 16) as i32;
        (spread as u32 as usize) & (self.table.len() - 1)
    }
    fn resize(&mut self) {
        let old = std::mem::take(&mut self.table);
        self.table = vec![vec![]; old.len() * 2];
        for e in old.into_iter().flatten() {
            let b = self.bucket(e.0);
            self.table[b].push(e);
        }
    }
    fn put(&mut self, h: i32, key: usize) {
        let b = self.bucket(h);
        self.table[b].push((h, key));
        self.size += 1;
        if self.size > self.threshold() {
            self.resize();
        }
    }
    fn compute_if_absent(&mut self, h: i32, key: usize) {
        if self.size > self.threshold() {
            self.resize();
        }
        let b = self.bucket(h);
        self.table[b].insert(0, (h, key));
        self.size += 1;
    }
    fn keys(&self) -> Vec<usize> {
        self.table.iter().flatten().map(|e| e.1).collect()
    }
}

/// The order Java's `DataFileIndexWriter` writes the columns of `names` (distinct, in the
/// order of the `columns` option) in: `FileIndexOptions` keeps them in a HashMap by
/// `Column` (`Arrays.hashCode([name, null, false])`, by `computeIfAbsent`), the writer puts
/// them into a HashMap by name in that order, then `serializeMaintainers` into another one
/// by `computeIfAbsent`, whose order the container keeps.
pub(crate) fn java_hash_order<'a>(names: &[&'a str]) -> Vec<&'a str> {
    let column_hash = |s: &str| {
        // Arrays.hashCode: 31 * (31 * (31 + h(name)) + 0) + Boolean.hashCode(false)
        31i32
            .wrapping_add(java_string_hash(s))
            .wrapping_mul(31)
            .wrapping_mul(31)
            .wrapping_add(1237)
    };
    let mut options = JavaHashMap::new();
    for (i, n) in names.iter().enumerate() {
        options.compute_if_absent(column_hash(n), i);
    }
    let mut maintainers = JavaHashMap::new();
    for i in options.keys() {
        maintainers.put(java_string_hash(names[i]), i);
    }
    let mut serialized = JavaHashMap::new();
    for i in maintainers.keys() {
        serialized.compute_if_absent(java_string_hash(names[i]), i);
    }
    serialized.keys().into_iter().map(|i| names[i]).collect()
}

/// Java's `DataOutput.writeUTF`: a u16 length, then modified UTF-8 (NUL as two bytes,
/// supplementary characters as their two surrogates of three bytes each).
fn write_utf(out: &mut Vec<u8>, s: &str) -> Result<()> {
    let mut b = Vec::with_capacity(s.len());
    for c in s.encode_utf16() {
        match c {
            1..=0x7f => b.push(c as u8),
            0 | 0x80..=0x7ff => {
                b.push(0xc0 | (c >> 6) as u8);
                b.push(0x80 | (c & 0x3f) as u8);
            }
            _ => {
                b.push(0xe0 | (c >> 12) as u8);
                b.push(0x80 | ((c >> 6) & 0x3f) as u8);
                b.push(0x80 | (c & 0x3f) as u8);
            }
        }
    }
    let n = u16::try_from(b.len())
        .map_err(|_| Error::invalid(format!("file index: name of {} bytes", b.len())))?;
    out.extend_from_slice(&n.to_be_bytes());
    out.extend_from_slice(&b);
    Ok(())
}

/// The container Java's `FileIndexFormat.Writer.writeColumnIndexes` writes for `indexes`
/// (already in Java's order: see [`java_hash_order`]).
pub(crate) fn write_container(indexes: &[ColumnIndex]) -> Result<Vec<u8>> {
    // columns in first-seen order, each with its indexes
    let mut columns: Vec<(&str, Vec<&ColumnIndex>)> = vec![];
    for ix in indexes {
        match columns.iter_mut().find(|(c, _)| *c == ix.column) {
            Some((_, v)) => v.push(ix),
            None => columns.push((&ix.column, vec![ix])),
        }
    }
    let mut names = vec![];
    for (c, ixs) in &columns {
        write_utf(&mut names, c)?;
        for ix in ixs {
            write_utf(&mut names, &ix.index_type)?;
        }
    }
    let head_len = 8 + 4 + 4 + 4 + indexes.len() * 8 + columns.len() * 4 + 4 + names.len();
    let head_len = i32::try_from(head_len)
        .map_err(|_| Error::invalid("file index: a head over 2 GB".to_string()))?;
    let mut out = Vec::with_capacity(head_len as usize);
    out.extend_from_slice(&MAGIC.to_be_bytes());
    out.extend_from_slice(&VERSION.to_be_bytes());
    out.extend_from_slice(&head_len.to_be_bytes());
    out.extend_from_slice(&(columns.len() as i32).to_be_bytes());
    let mut body: Vec<u8> = vec![];
    for (c, ixs) in &columns {
        write_utf(&mut out, c)?;
        out.extend_from_slice(&(ixs.len() as i32).to_be_bytes());
        for ix in ixs {
            write_utf(&mut out, &ix.index_type)?;
            let (start, len) = match &ix.bytes {
                Some(b) => {
                    let start = i32::try_from(body.len())
                        .ok()
                        .and_then(|s| s.checked_add(head_len))
                        .ok_or_else(|| Error::invalid("file index: a body over 2 GB"))?;
                    body.extend_from_slice(b);
                    (start, b.len() as i32)
                }
                None => (EMPTY_INDEX, 0),
            };
            out.extend_from_slice(&start.to_be_bytes());
            out.extend_from_slice(&len.to_be_bytes());
        }
    }
    out.extend_from_slice(&0i32.to_be_bytes());
    out.extend_from_slice(&body);
    Ok(out)
}

pub(super) struct Cursor<'a> {
    b: &'a [u8],
    pos: usize,
    context: &'a str,
}

impl<'a> Cursor<'a> {
    pub(super) fn new(b: &'a [u8], context: &'a str) -> Self {
        Cursor { b, pos: 0, context }
    }
    pub(super) fn pos(&self) -> usize {
        self.pos
    }
    pub(super) fn seek(&mut self, pos: usize) {
        self.pos = pos;
    }
    /// A corrupt-file error naming the file.
    pub(super) fn corrupt(&self, what: &str) -> Error {
        Error::corrupt(self.context, what.to_string())
    }
    /// A non-negative i32 count.
    pub(super) fn count(&mut self, what: &str) -> Result<usize> {
        let n = self.i32()?;
        usize::try_from(n).map_err(|_| self.corrupt(&format!("{what} {n}")))
    }
    pub(super) fn i64(&mut self) -> Result<i64> {
        let s = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(s);
        Ok(i64::from_be_bytes(a))
    }
    pub(super) fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.b.len());
        let Some(end) = end else {
            return Err(Error::corrupt(
                self.context,
                format!(
                    "file index truncated: {n} bytes wanted at {} of {}",
                    self.pos,
                    self.b.len()
                ),
            ));
        };
        let s = &self.b[self.pos..end];
        self.pos = end;
        Ok(s)
    }
    pub(super) fn i32(&mut self) -> Result<i32> {
        let s = self.take(4)?;
        Ok(i32::from_be_bytes([s[0], s[1], s[2], s[3]]))
    }
    /// Java's `readUTF` (modified UTF-8).
    fn utf(&mut self) -> Result<String> {
        let s = self.take(2)?;
        let n = u16::from_be_bytes([s[0], s[1]]) as usize;
        let b = self.take(n)?;
        let mut units = Vec::with_capacity(n);
        let mut i = 0;
        while i < b.len() {
            let c = b[i] as u16;
            let (u, w) = if c < 0x80 {
                (c, 1)
            } else if c & 0xe0 == 0xc0 && i + 1 < b.len() {
                (((c & 0x1f) << 6) | (b[i + 1] as u16 & 0x3f), 2)
            } else if c & 0xf0 == 0xe0 && i + 2 < b.len() {
                (
                    ((c & 0x0f) << 12) | ((b[i + 1] as u16 & 0x3f) << 6) | (b[i + 2] as u16 & 0x3f),
                    3,
                )
            } else {
                return Err(Error::corrupt(self.context, "file index: a malformed name"));
            };
            units.push(u);
            i += w;
        }
        String::from_utf16(&units)
            .map_err(|_| Error::corrupt(self.context, "file index: a malformed name"))
    }
}

/// Every index of a container (Java's `FileIndexFormat.Reader`), in head order; `context`
/// (the data file) names errors.
pub(crate) fn read_container(b: &[u8], context: &str) -> Result<Vec<ColumnIndex>> {
    let mut c = Cursor { b, pos: 0, context };
    let magic = c.take(8)?;
    let mut m = [0u8; 8];
    m.copy_from_slice(magic);
    if i64::from_be_bytes(m) != MAGIC {
        return Err(Error::corrupt(context, "This file is not file index file."));
    }
    let version = c.i32()?;
    if version != VERSION {
        return Err(Error::unsupported(format!(
            "{context}: This index file is version of {version}, not in supported version list \
             [{VERSION}]"
        )));
    }
    let _head_len = c.i32()?;
    let columns = c.i32()?;
    let mut out = vec![];
    for _ in 0..columns.max(0) {
        let column = c.utf()?;
        let n = c.i32()?;
        for _ in 0..n.max(0) {
            let index_type = c.utf()?;
            let start = c.i32()?;
            let len = c.i32()?;
            let bytes = if start == EMPTY_INDEX {
                None
            } else {
                let (s, l) = (start as usize, len.max(0) as usize);
                let end = s.checked_add(l).filter(|&e| start >= 0 && e <= b.len());
                let Some(end) = end else {
                    return Err(Error::corrupt(
                        context,
                        format!(
                            "file index of '{column}' ({index_type}) at {start}+{len} past the \
                             end ({} bytes)",
                            b.len()
                        ),
                    ));
                };
                Some(b[s..end].to_vec())
            };
            out.push(ColumnIndex {
                column: column.clone(),
                index_type,
                bytes,
            });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn java_string_hash_and_hashmap_order() {
        assert_eq!(java_string_hash("abc"), 96354);
        assert_eq!(java_string_hash(""), 0);
        // "a".."c": buckets 1..3 of 16, in that order whatever the insertion order
        assert_eq!(java_hash_order(&["c", "a", "b"]), vec!["a", "b", "c"]);
    }

    #[test]
    fn container_round_trips_with_empty_and_unicode_names() -> Result<()> {
        let ix = vec![
            ColumnIndex {
                column: "k".into(),
                index_type: "bloom-filter".into(),
                bytes: Some(vec![0, 0, 0, 1, 0xff]),
            },
            ColumnIndex {
                column: "naïve\u{0}𝄞".into(),
                index_type: "bloom-filter".into(),
                bytes: None,
            },
        ];
        let b = write_container(&ix)?;
        assert_eq!(&b[..8], &MAGIC.to_be_bytes());
        assert_eq!(read_container(&b, "f")?, ix);
        assert!(read_container(&b[..20], "f").is_err());
        Ok(())
    }
}
