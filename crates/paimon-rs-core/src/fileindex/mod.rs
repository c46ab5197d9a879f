//! Paimon file indexes (#28): per data file, a bloom filter of chosen columns
//! (`file-index.bloom-filter.columns`), built as the file is written and used by the scan to
//! skip files that cannot hold an `=` / `IN` value (docs/paimon-format.md §13,
//! docs/paimon-behaviour.md §6.3a). Byte-compatible with Java's `FileIndexFormat` and
//! `BloomFilterFileIndex` both ways: Java reads the indexes we write and we read Java's.
//!
//! * [`format`]: the container (magic, version, head of per-column per-type offsets, body);
//! * [`bloom`]: `BloomFilter64` and the per-type `FastHash`;
//! * here: the options, the builder the rolling writer feeds ([`FileIndexBuilder`]) and the
//!   scan's test ([`may_match`]).
//!
//! Only the `bloom-filter` type is written; the other types Java knows (bitmap, bsi,
//! range-bitmap) are refused for writes and ignored (nothing skipped) when a Java file holds them.

mod bloom;
mod format;

use std::collections::BTreeMap;
use std::path::Path;

use arrow_array::RecordBatch;

use crate::error::{Error, Result};
use crate::predicate::{LeafOp, Predicate};
use crate::spec::manifest::DataFileMeta;
use crate::spec::types::{DataField, DataType};

pub(crate) use bloom::BloomFilter64;
pub(crate) use format::{read_container, write_container, ColumnIndex};

/// The index type paimon_rs writes and reads.
pub(crate) const BLOOM_FILTER: &str = "bloom-filter";
/// Index types Java Paimon knows that paimon_rs does not write.
const OTHER_TYPES: &[&str] = &["bitmap", "bsi", "range-bitmap"];
const PREFIX: &str = "file-index.";
const THRESHOLD: &str = "file-index.in-manifest-threshold";
const READ_ENABLED: &str = "file-index.read.enabled";
/// Java's `BloomFilterFileIndex` defaults.
const DEFAULT_ITEMS: i64 = 1_000_000;
const DEFAULT_FPP: f64 = 0.1;
/// Java's `file-index.in-manifest-threshold` default (500 bytes).
const DEFAULT_THRESHOLD: u64 = 500;
/// The suffix of a data file's index file (Java's `DataFilePathFactory.INDEX_PATH_SUFFIX`).
pub(crate) const INDEX_SUFFIX: &str = ".index";

/// One column's bloom filter settings.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct BloomColumn {
    pub name: String,
    pub items: i64,
    pub fpp: f64,
}

/// The `file-index.*` options of a table (Java's `FileIndexOptions` and the two core options).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct FileIndexOptions {
    /// In the order of `file-index.bloom-filter.columns`.
    pub columns: Vec<BloomColumn>,
    /// An index larger than this goes to a `<data file>.index` file, else into the manifest.
    pub in_manifest_threshold: u64,
    /// `file-index.read.enabled`: the scan skips files by their indexes.
    pub read_enabled: bool,
}

fn is_index_key(k: &str) -> bool {
    k.starts_with(PREFIX)
}

impl FileIndexOptions {
    /// The options of `raw` (every key under `file-index.`), refusing what paimon_rs cannot
    /// honour: index types but `bloom-filter`, map-key (`col[key]`) columns, options of an
    /// undeclared column (Java's sentence) and per-column options but `items` / `fpp`.
    pub(crate) fn parse(raw: &BTreeMap<String, String>) -> Result<Self> {
        let mut columns: Vec<BloomColumn> = vec![];
        let mut in_manifest_threshold = DEFAULT_THRESHOLD;
        let mut read_enabled = true;
        let mut column_opts = vec![];
        for (k, v) in raw.iter().filter(|(k, _)| is_index_key(k)) {
            if k == THRESHOLD {
                in_manifest_threshold = crate::options::parse_memory_size(k, v)?;
                continue;
            }
            if k == READ_ENABLED {
                read_enabled = crate::options::parse_bool(k, v)?;
                continue;
            }
            let rest = &k[PREFIX.len()..];
            let index_type = rest.split('.').next().unwrap_or_default();
            if index_type != BLOOM_FILTER {
                let what = if OTHER_TYPES.contains(&index_type) {
                    format!("the '{index_type}' file index ('{k}')")
                } else {
                    format!("table option '{k}'")
                };
                return Err(Error::unsupported(format!(
                    "{what} is not implemented by paimon_rs: the file index it writes is \
                     '{BLOOM_FILTER}' (file-index.{BLOOM_FILTER}.columns)"
                )));
            }
            if let Some(list) = rest.strip_suffix(".columns").filter(|r| *r == BLOOM_FILTER) {
                let _ = list;
                for name in v.split(',') {
                    let name = name.trim();
                    if name.is_empty() {
                        return Err(Error::invalid(format!(
                            "Wrong option in {k}, should not have empty column"
                        )));
                    }
                    if name.contains('[') && name.ends_with(']') {
                        return Err(Error::unsupported(format!(
                            "option '{k}': a file index on a map key ('{name}') is not \
                             implemented by paimon_rs"
                        )));
                    }
                    if !columns.iter().any(|c| c.name == name) {
                        columns.push(BloomColumn {
                            name: name.to_string(),
                            items: DEFAULT_ITEMS,
                            fpp: DEFAULT_FPP,
                        });
                    }
                }
            } else {
                column_opts.push((k, v));
            }
        }
        for (k, v) in column_opts {
            let parts: Vec<&str> = k[PREFIX.len()..].split('.').collect();
            let [_, cname, opt] = parts[..] else {
                return Err(Error::unsupported(format!(
                    "table option '{k}' is not implemented by paimon_rs (expected \
                     'file-index.{BLOOM_FILTER}.<column>.items' or '.fpp')"
                )));
            };
            let Some(c) = columns.iter_mut().find(|c| c.name == cname) else {
                return Err(Error::invalid(format!(
                    "Wrong file index option '{k}': column '{cname}' is not declared in \
                     'file-index.{BLOOM_FILTER}.columns'. Please add \
                     'file-index.{BLOOM_FILTER}.columns' = '{cname}' before setting column \
                     options."
                )));
            };
            match opt {
                "items" => {
                    c.items = v
                        .trim()
                        .parse::<i32>()
                        .ok()
                        .filter(|n| *n > 0)
                        .ok_or_else(|| {
                            Error::invalid(format!(
                                "option '{k}' = '{v}': expected a positive integer"
                            ))
                        })? as i64
                }
                "fpp" => {
                    c.fpp = v
                        .trim()
                        .parse::<f64>()
                        .ok()
                        .filter(|p| *p > 0.0 && *p < 1.0)
                        .ok_or_else(|| {
                            Error::invalid(format!(
                                "option '{k}' = '{v}': expected a probability between 0 and 1"
                            ))
                        })?
                }
                _ => {
                    return Err(Error::unsupported(format!(
                        "table option '{k}' is not implemented by paimon_rs (a bloom-filter \
                         file index takes 'items' and 'fpp')"
                    )))
                }
            }
        }
        Ok(FileIndexOptions {
            columns,
            in_manifest_threshold,
            read_enabled,
        })
    }

    /// Every indexed column exists in `fields` with a type the bloom filter hashes (Java's
    /// `FastHash` refuses boolean, decimal and nested types, at the first write).
    pub(crate) fn check_columns(&self, fields: &[DataField]) -> Result<()> {
        for c in &self.columns {
            let Some(f) = fields.iter().find(|f| f.name == c.name) else {
                return Err(Error::invalid(format!(
                    "option 'file-index.{BLOOM_FILTER}.columns': {} does not exist in column \
                     fields",
                    c.name
                )));
            };
            if !bloom::hashable(&f.data_type) {
                return Err(Error::unsupported(format!(
                    "option 'file-index.{BLOOM_FILTER}.columns': column '{}' of type {}: a \
                     bloom-filter file index takes numbers, strings, binary, dates, times and \
                     timestamps (Java's FastHash does not hash this type)",
                    c.name, f.data_type
                )));
            }
        }
        Ok(())
    }
}

/// `file-index.read.enabled` (true): does the scan skip files by their indexes? Read on its
/// own, so a table with index options paimon_rs does not write still reads.
pub(crate) fn read_enabled(raw: &BTreeMap<String, String>) -> Result<bool> {
    match raw.get(READ_ENABLED) {
        Some(v) => crate::options::parse_bool(READ_ENABLED, v),
        None => Ok(true),
    }
}

/// Check a table's `file-index.*` options against its columns (for a write).
pub(crate) fn check_options(raw: &BTreeMap<String, String>, fields: &[DataField]) -> Result<()> {
    FileIndexOptions::parse(raw)?.check_columns(fields)
}

/// What a writer indexes: each column's position in the batches it writes.
#[derive(Debug, Clone)]
pub struct FileIndexSpec {
    columns: Vec<(BloomColumn, usize, DataType)>,
    threshold: u64,
}

impl FileIndexSpec {
    /// The spec for files whose batches hold table column `i` of `fields` at `i + offset`
    /// (primary-key files put the key copies and system columns first); None without indexed
    /// columns.
    pub(crate) fn new(
        raw: &BTreeMap<String, String>,
        fields: &[DataField],
        offset: usize,
    ) -> Result<Option<Self>> {
        let o = FileIndexOptions::parse(raw)?;
        if o.columns.is_empty() {
            return Ok(None);
        }
        o.check_columns(fields)?;
        let mut columns = vec![];
        for c in o.columns {
            let Some(i) = fields.iter().position(|f| f.name == c.name) else {
                continue; // check_columns refused it
            };
            columns.push((c, i + offset, fields[i].data_type.clone()));
        }
        // Java's order (a HashMap by column name), so the container's bytes equal Java's
        let names: Vec<&str> = columns.iter().map(|(c, _, _)| c.name.as_str()).collect();
        let order: Vec<String> = format::java_hash_order(&names)
            .into_iter()
            .map(str::to_string)
            .collect();
        columns.sort_by_key(|(c, _, _)| order.iter().position(|n| *n == c.name));
        Ok(Some(FileIndexSpec {
            columns,
            threshold: o.in_manifest_threshold,
        }))
    }
}

/// The index of one data file being written.
pub(crate) struct FileIndexBuilder {
    filters: Vec<BloomFilter64>,
    hashes: Vec<i64>,
}

/// A finished index: in the manifest, or in a file of its own beside the data file.
pub(crate) enum BuiltIndex {
    Embedded(Vec<u8>),
    File(Vec<u8>),
}

impl FileIndexBuilder {
    pub(crate) fn new(spec: &FileIndexSpec) -> Self {
        FileIndexBuilder {
            filters: spec
                .columns
                .iter()
                .map(|(c, _, _)| BloomFilter64::new(c.items, c.fpp))
                .collect(),
            hashes: vec![],
        }
    }

    /// Add the rows of `batch` (the writer's batch, before conversion to file types).
    pub(crate) fn update(&mut self, spec: &FileIndexSpec, batch: &RecordBatch) -> Result<()> {
        for ((_, col, t), f) in spec.columns.iter().zip(&mut self.filters) {
            self.hashes.clear();
            bloom::array_hashes(t, batch.column(*col).as_ref(), &mut self.hashes)?;
            for &h in &self.hashes {
                f.add_hash(h);
            }
        }
        Ok(())
    }

    /// The container's bytes, and where they go (Java's `DataFileIndexWriter.close`: a file
    /// when larger than `file-index.in-manifest-threshold`).
    pub(crate) fn finish(self, spec: &FileIndexSpec) -> Result<BuiltIndex> {
        let indexes: Vec<ColumnIndex> = spec
            .columns
            .iter()
            .zip(self.filters)
            .map(|((c, _, _), f)| ColumnIndex {
                column: c.name.clone(),
                index_type: BLOOM_FILTER.to_string(),
                bytes: Some(f.serialize()),
            })
            .collect();
        let bytes = write_container(&indexes)?;
        Ok(if bytes.len() as u64 > spec.threshold {
            BuiltIndex::File(bytes)
        } else {
            BuiltIndex::Embedded(bytes)
        })
    }
}

/// The columns of the `=` / `IN` leaves of `filter` (the only ones a bloom filter can rule
/// out).
fn lookup_columns<'a>(filter: &'a Predicate, out: &mut Vec<&'a str>) {
    match filter {
        Predicate::Leaf { field, op, .. } => {
            if matches!(op, LeafOp::Equal | LeafOp::In) {
                out.push(field);
            }
        }
        Predicate::And(c) | Predicate::Or(c) => c.iter().for_each(|p| lookup_columns(p, out)),
    }
}

/// The columns `file-index.bloom-filter.columns` names now (read leniently: for the scan,
/// which reads a file's `.index` file only when the filter looks one of them up).
pub(crate) fn configured_columns(raw: &BTreeMap<String, String>) -> Vec<String> {
    raw.get(&format!("{PREFIX}{BLOOM_FILTER}.columns"))
        .map(|v| v.split(',').map(|c| c.trim().to_string()).collect())
        .unwrap_or_default()
}

/// Java's `FileIndexPredicate`: may a file with these indexes hold a row passing `filter`?
/// AND skips when any child skips, OR when every child does; `=` skips when the value is not
/// in the column's bloom filter, `IN` when none is; anything else keeps the file. `column`
/// maps a filter column to the file's name for it and its type (None: not in the file).
fn test(
    filter: &Predicate,
    filters: &BTreeMap<&str, BloomFilter64>,
    column: &dyn Fn(&str) -> Option<(String, DataType)>,
) -> bool {
    match filter {
        Predicate::And(c) => c.iter().all(|p| test(p, filters, column)),
        Predicate::Or(c) => c.iter().any(|p| test(p, filters, column)),
        Predicate::Leaf {
            field,
            op,
            literals,
        } => {
            if !matches!(op, LeafOp::Equal | LeafOp::In) {
                return true;
            }
            let Some((name, t)) = column(field) else {
                return true;
            };
            let Some(f) = filters.get(name.as_str()) else {
                return true;
            };
            literals.iter().any(|l| match l {
                None => true,
                Some(d) => match bloom::datum_hashes(&t, d) {
                    Some(hs) => hs.iter().any(|&h| f.test_hash(h)),
                    None => true,
                },
            })
        }
    }
}

/// May `file` hold a row passing `filter`, by its bloom filters (in the manifest, or in its
/// `.index` file under `dir`)? `column` maps a filter column (current schema) to the file's
/// name and type for it. A file without indexes, or whose index cannot help the filter, is
/// kept; an index file that cannot be read fails the scan (never a silent wrong answer).
///
/// The `.index` file is read only when the filter looks up a column `configured` names (the
/// table's `file-index.bloom-filter.columns`): an `=` on another column cannot use it, and an
/// index file is large (585 KB at Java's default `items`).
pub(crate) fn may_match(
    filter: &Predicate,
    file: &DataFileMeta,
    dir: &Path,
    column: &dyn Fn(&str) -> Option<(String, DataType)>,
    configured: &[String],
) -> Result<bool> {
    let mut looked_up = vec![];
    lookup_columns(filter, &mut looked_up);
    let read_files = looked_up.iter().any(|c| configured.iter().any(|x| x == c));
    let indexes = FileIndexes {
        file_name: &file.file_name,
        embedded: file.embedded_index.as_deref(),
        extra_files: if read_files { &file.extra_files } else { &[] },
    };
    // an external data file's `.index` file is beside it, not in the bucket directory
    let dir = crate::kv::reader::file_dir(dir, file);
    indexes.may_match_looking_up(filter, &looked_up, &dir, column)
}

/// Where a data file's indexes are: its manifest entry's `_EMBEDDED_FILE_INDEX` and the
/// `.index` files of its `_EXTRA_FILES`.
struct FileIndexes<'a> {
    file_name: &'a str,
    embedded: Option<&'a [u8]>,
    extra_files: &'a [String],
}

impl FileIndexes<'_> {
    #[cfg(test)]
    fn may_match(
        &self,
        filter: &Predicate,
        dir: &Path,
        column: &dyn Fn(&str) -> Option<(String, DataType)>,
    ) -> Result<bool> {
        let mut looked_up = vec![];
        lookup_columns(filter, &mut looked_up);
        self.may_match_looking_up(filter, &looked_up, dir, column)
    }

    /// `looked_up`: the columns `filter` has an `=` / `IN` on (`lookup_columns`, found once).
    fn may_match_looking_up(
        &self,
        filter: &Predicate,
        looked_up: &[&str],
        dir: &Path,
        column: &dyn Fn(&str) -> Option<(String, DataType)>,
    ) -> Result<bool> {
        if looked_up.is_empty() {
            return Ok(true);
        }
        let mut containers = vec![];
        if let Some(b) = self.embedded {
            containers.push(read_container(b, self.file_name)?);
        }
        for x in self
            .extra_files
            .iter()
            .filter(|x| x.ends_with(INDEX_SUFFIX))
        {
            let path = dir.join(x);
            let b = crate::io::read(&path)?;
            containers.push(read_container(&b, &path.to_string_lossy())?);
        }
        let mut filters = BTreeMap::new();
        for ix in containers.iter().flatten() {
            if ix.index_type != BLOOM_FILTER {
                continue;
            }
            if let Some(b) = &ix.bytes {
                let f = BloomFilter64::deserialize(b, self.file_name)?;
                filters.insert(ix.column.as_str(), f);
            }
        }
        if filters.is_empty() {
            return Ok(true);
        }
        Ok(test(filter, &filters, column))
    }
}

/// Remove a data file this process wrote and never committed, with its index file (Java's
/// `extraFiles`: a data file's companions live and die with it).
pub(crate) fn remove_data_file(dir: &Path, file: &DataFileMeta) -> Result<()> {
    crate::io::remove_file_if_exists(&crate::kv::reader::file_path(dir, file))?;
    let own_dir = crate::kv::reader::file_dir(dir, file);
    for x in &file.extra_files {
        crate::io::remove_file_if_exists(&own_dir.join(x))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests;
