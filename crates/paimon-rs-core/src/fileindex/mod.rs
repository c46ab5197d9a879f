//! Paimon file indexes (#28): per data file, a bloom filter (`file-index.bloom-filter.columns`)
//! and / or a bitmap index (`file-index.bitmap.columns`) of chosen columns, built as the file
//! is written and used by the scan to skip files that cannot hold a row passing the filter
//! (docs/paimon-format.md §13, docs/paimon-behaviour.md §6.3a). Byte-compatible with Java's
//! `FileIndexFormat`, `BloomFilterFileIndex` and `BitmapFileIndex` both ways: Java reads the
//! indexes we write and we read Java's.
//!
//! * [`format`]: the container (magic, version, head of per-column per-type offsets, body);
//! * [`bloom`]: `BloomFilter64` and the per-type `FastHash`;
//! * [`bitmap`]: the bitmap index (versions 1 and 2);
//! * here: the options, the builder the rolling writer feeds ([`FileIndexBuilder`]) and the
//!   scan's test ([`may_match`]).
//!
//! The other types Java knows (bsi, range-bitmap) are refused for writes and ignored (nothing
//! skipped) when a Java file holds them.

mod bitmap;
mod bloom;
mod format;

use std::collections::BTreeMap;
use std::path::Path;

use arrow_array::RecordBatch;

use crate::error::{Error, Result};
use crate::predicate::{LeafOp, Predicate};
use crate::spec::manifest::DataFileMeta;
use crate::spec::types::{DataField, DataType};

use bitmap::{BitmapBuilder, BitmapIndex};
pub(crate) use bloom::BloomFilter64;
pub(crate) use format::{read_container, write_container, ColumnIndex};

/// The index types paimon_rs writes and reads.
pub(crate) const BLOOM_FILTER: &str = "bloom-filter";
pub(crate) const BITMAP: &str = "bitmap";
/// Index types Java Paimon knows that paimon_rs does not write.
const OTHER_TYPES: &[&str] = &["bsi", "range-bitmap"];
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

/// One column's bitmap index settings (`file-index.bitmap.<column>.version` /
/// `.index-block-size`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct BitmapColumn {
    pub name: String,
    pub version: u8,
    pub block_size: u64,
}

/// The `file-index.*` options of a table (Java's `FileIndexOptions` and the two core options).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct FileIndexOptions {
    /// In the order of `file-index.bloom-filter.columns`.
    pub columns: Vec<BloomColumn>,
    /// In the order of `file-index.bitmap.columns`.
    pub bitmaps: Vec<BitmapColumn>,
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
    /// honour: index types but `bloom-filter` and `bitmap`, map-key (`col[key]`) columns,
    /// options of an undeclared column (Java's sentence) and per-column options but a bloom
    /// filter's `items` / `fpp` and a bitmap's `version` / `index-block-size`.
    pub(crate) fn parse(raw: &BTreeMap<String, String>) -> Result<Self> {
        let mut columns: Vec<BloomColumn> = vec![];
        let mut bitmaps: Vec<BitmapColumn> = vec![];
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
            if index_type != BLOOM_FILTER && index_type != BITMAP {
                let what = if OTHER_TYPES.contains(&index_type) {
                    format!("the '{index_type}' file index ('{k}')")
                } else {
                    format!("table option '{k}'")
                };
                return Err(Error::unsupported(format!(
                    "{what} is not implemented by paimon_rs: the file indexes it writes are \
                     '{BLOOM_FILTER}' (file-index.{BLOOM_FILTER}.columns) and '{BITMAP}' \
                     (file-index.{BITMAP}.columns)"
                )));
            }
            if rest.strip_suffix(".columns") == Some(index_type) {
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
                    if index_type == BITMAP {
                        if !bitmaps.iter().any(|c| c.name == name) {
                            bitmaps.push(BitmapColumn {
                                name: name.to_string(),
                                version: bitmap::VERSION_2,
                                block_size: bitmap::DEFAULT_BLOCK_SIZE,
                            });
                        }
                    } else if !columns.iter().any(|c| c.name == name) {
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
            let [index_type, cname, opt] = parts[..] else {
                return Err(Error::unsupported(format!(
                    "table option '{k}' is not implemented by paimon_rs (expected \
                     'file-index.{BLOOM_FILTER}.<column>.items' or '.fpp', \
                     'file-index.{BITMAP}.<column>.version' or '.index-block-size')"
                )));
            };
            let undeclared = || {
                Error::invalid(format!(
                    "Wrong file index option '{k}': column '{cname}' is not declared in \
                     'file-index.{index_type}.columns'. Please add \
                     'file-index.{index_type}.columns' = '{cname}' before setting column \
                     options."
                ))
            };
            if index_type == BITMAP {
                let c = bitmaps
                    .iter_mut()
                    .find(|c| c.name == cname)
                    .ok_or_else(undeclared)?;
                match opt {
                    "version" => {
                        c.version = match v.trim() {
                            "1" => bitmap::VERSION_1,
                            "2" => bitmap::VERSION_2,
                            _ => {
                                return Err(Error::invalid(format!(
                                    "option '{k}' = '{v}': a bitmap file index is of version \
                                     1 or 2"
                                )))
                            }
                        }
                    }
                    "index-block-size" => {
                        c.block_size = crate::options::parse_memory_size(k, v)?;
                        if c.block_size == 0 {
                            return Err(Error::invalid(format!(
                                "option '{k}' = '{v}': expected a positive size"
                            )));
                        }
                    }
                    _ => {
                        return Err(Error::unsupported(format!(
                            "table option '{k}' is not implemented by paimon_rs (a bitmap \
                             file index takes 'version' and 'index-block-size')"
                        )))
                    }
                }
                continue;
            }
            let c = columns
                .iter_mut()
                .find(|c| c.name == cname)
                .ok_or_else(undeclared)?;
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
            bitmaps,
            in_manifest_threshold,
            read_enabled,
        })
    }

    /// Every indexed column exists in `fields` with a type its index takes (Java's `FastHash`
    /// refuses boolean, decimal and nested types, its `BitmapTypeVisitor` binary, decimal and
    /// nested ones, at the first write).
    pub(crate) fn check_columns(&self, fields: &[DataField]) -> Result<()> {
        let field = |ty: &str, name: &str| {
            fields.iter().find(|f| f.name == name).ok_or_else(|| {
                Error::invalid(format!(
                    "option 'file-index.{ty}.columns': {name} does not exist in column fields"
                ))
            })
        };
        for c in &self.columns {
            let f = field(BLOOM_FILTER, &c.name)?;
            if !bloom::hashable(&f.data_type) {
                return Err(Error::unsupported(format!(
                    "option 'file-index.{BLOOM_FILTER}.columns': column '{}' of type {}: a \
                     bloom-filter file index takes numbers, strings, binary, dates, times and \
                     timestamps (Java's FastHash does not hash this type)",
                    c.name, f.data_type
                )));
            }
        }
        for c in &self.bitmaps {
            let f = field(BITMAP, &c.name)?;
            if !bitmap::indexable(&f.data_type) {
                return Err(Error::unsupported(format!(
                    "option 'file-index.{BITMAP}.columns': column '{}' of type {}: a bitmap \
                     file index takes integers, floats, strings, booleans, dates, times and \
                     timestamps (not binary, DECIMAL or nested types, as Java's)",
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
    bitmaps: Vec<(BitmapColumn, usize, DataType)>,
    /// Every indexed column, in the order the container holds them.
    order: Vec<String>,
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
        if o.columns.is_empty() && o.bitmaps.is_empty() {
            return Ok(None);
        }
        o.check_columns(fields)?;
        let at = |name: &str| fields.iter().position(|f| f.name == name);
        let mut columns = vec![];
        for c in o.columns {
            if let Some(i) = at(&c.name) {
                columns.push((c, i + offset, fields[i].data_type.clone()));
            }
        }
        let mut bitmaps = vec![];
        for c in o.bitmaps {
            if let Some(i) = at(&c.name) {
                bitmaps.push((c, i + offset, fields[i].data_type.clone()));
            }
        }
        // Java's order (a HashMap by column name), so a bloom-only container's bytes equal
        // Java's
        let mut names: Vec<&str> = columns.iter().map(|(c, _, _)| c.name.as_str()).collect();
        for (c, _, _) in &bitmaps {
            if !names.contains(&c.name.as_str()) {
                names.push(&c.name);
            }
        }
        let order = format::java_hash_order(&names)
            .into_iter()
            .map(str::to_string)
            .collect();
        Ok(Some(FileIndexSpec {
            columns,
            bitmaps,
            order,
            threshold: o.in_manifest_threshold,
        }))
    }
}

/// The index of one data file being written.
pub(crate) struct FileIndexBuilder {
    filters: Vec<BloomFilter64>,
    bitmaps: Vec<BitmapBuilder>,
    hashes: Vec<i64>,
}

/// A finished index: in the manifest, or in a file of its own beside the data file.
pub(crate) enum BuiltIndex {
    Embedded(Vec<u8>),
    File(Vec<u8>),
}

impl FileIndexBuilder {
    pub(crate) fn new(spec: &FileIndexSpec) -> Result<Self> {
        Ok(FileIndexBuilder {
            filters: spec
                .columns
                .iter()
                .map(|(c, _, _)| BloomFilter64::new(c.items, c.fpp))
                .collect(),
            bitmaps: spec
                .bitmaps
                .iter()
                .map(|(c, _, t)| BitmapBuilder::new(t, c.version, c.block_size))
                .collect::<Result<_>>()?,
            hashes: vec![],
        })
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
        for ((_, col, _), b) in spec.bitmaps.iter().zip(&mut self.bitmaps) {
            b.update(batch.column(*col).as_ref())?;
        }
        Ok(())
    }

    /// The container's bytes, and where they go (Java's `DataFileIndexWriter.close`: a file
    /// when larger than `file-index.in-manifest-threshold`).
    pub(crate) fn finish(self, spec: &FileIndexSpec) -> Result<BuiltIndex> {
        let mut by_column: BTreeMap<&str, Vec<ColumnIndex>> = BTreeMap::new();
        for ((c, _, _), f) in spec.columns.iter().zip(self.filters) {
            by_column.entry(&c.name).or_default().push(ColumnIndex {
                column: c.name.clone(),
                index_type: BLOOM_FILTER.to_string(),
                bytes: Some(f.serialize()),
            });
        }
        for ((c, _, _), b) in spec.bitmaps.iter().zip(self.bitmaps) {
            by_column.entry(&c.name).or_default().push(ColumnIndex {
                column: c.name.clone(),
                index_type: BITMAP.to_string(),
                bytes: Some(b.finish()?),
            });
        }
        let indexes: Vec<ColumnIndex> = spec
            .order
            .iter()
            .filter_map(|n| by_column.remove(n.as_str()))
            .flatten()
            .collect();
        let bytes = write_container(&indexes)?;
        Ok(if bytes.len() as u64 > spec.threshold {
            BuiltIndex::File(bytes)
        } else {
            BuiltIndex::Embedded(bytes)
        })
    }
}

/// Can an index of this type answer a leaf of `op`? A bloom filter rules out `=` / `IN`, a
/// bitmap also `<>` / `NOT IN` / `IS NULL` / `IS NOT NULL`.
fn answers(bitmap: bool, op: LeafOp) -> bool {
    match op {
        LeafOp::Equal | LeafOp::In => true,
        LeafOp::NotEqual | LeafOp::NotIn | LeafOp::IsNull | LeafOp::IsNotNull => bitmap,
        _ => false,
    }
}

/// The columns of the leaves of `filter` some index type can answer, with their ops.
fn lookup_columns<'a>(filter: &'a Predicate, out: &mut Vec<(&'a str, LeafOp)>) {
    match filter {
        Predicate::Leaf { field, op, .. } => {
            if answers(true, *op) {
                out.push((field, *op));
            }
        }
        Predicate::And(c) | Predicate::Or(c) => c.iter().for_each(|p| lookup_columns(p, out)),
    }
}

/// The columns each index type names now (read leniently: for the scan, which reads a file's
/// `.index` file only when the filter looks one of them up in a way their index answers).
#[derive(Debug, Default)]
pub(crate) struct ConfiguredColumns {
    bloom: Vec<String>,
    bitmap: Vec<String>,
}

impl ConfiguredColumns {
    /// Does `file-index.bitmap.columns` name a column?
    pub(crate) fn has_bitmaps(&self) -> bool {
        self.bitmap.iter().any(|c| !c.is_empty())
    }

    fn answers(&self, column: &str, op: LeafOp) -> bool {
        (answers(false, op) && self.bloom.iter().any(|c| c == column))
            || (answers(true, op) && self.bitmap.iter().any(|c| c == column))
    }
}

/// The columns `file-index.bloom-filter.columns` and `file-index.bitmap.columns` name.
pub(crate) fn configured_columns(raw: &BTreeMap<String, String>) -> ConfiguredColumns {
    let list = |ty: &str| -> Vec<String> {
        raw.get(&format!("{PREFIX}{ty}.columns"))
            .map(|v| v.split(',').map(|c| c.trim().to_string()).collect())
            .unwrap_or_default()
    };
    ConfiguredColumns {
        bloom: list(BLOOM_FILTER),
        bitmap: list(BITMAP),
    }
}

/// A file's indexes of one column, as read from its containers (a bitmap's dictionary is
/// read when a leaf first needs it, since it needs the column's type, and kept for the other
/// leaves on the column: `a = 1 OR a = 2 OR ...` parses it once per file).
#[derive(Default)]
struct ColumnIndexes<'a> {
    bloom: Option<BloomFilter64>,
    bitmap: Option<&'a [u8]>,
    /// Where the bitmap was read: its `.index` file's path, or the data file's name for an
    /// index embedded in the manifest ([`IndexSource::context`]); errors of the bitmap name it.
    bitmap_source: String,
    parsed: std::cell::OnceCell<Option<BitmapIndex>>,
}

impl ColumnIndexes<'_> {
    /// The column's bitmap index (its bytes and dictionary), parsed once for all leaves; None
    /// without one or when its type has no bitmap keys.
    /// With it, the name errors of the bitmap give (`bitmap_source`).
    fn parsed_bitmap(&self, t: &DataType) -> Result<Option<(&[u8], &BitmapIndex, &str)>> {
        let Some(b) = self.bitmap else {
            return Ok(None);
        };
        let context = self.bitmap_source.as_str();
        if self.parsed.get().is_none() {
            let _ = self.parsed.set(BitmapIndex::read(b, t, context)?);
        }
        Ok(self
            .parsed
            .get()
            .and_then(Option::as_ref)
            .map(|bm| (b, bm, context)))
    }
}

/// The indexes of the file column a leaf on `field` of `op` looks up, with the column's file
/// name and type: None when no index type answers `op` or the file has no index of it.
fn leaf_index<'i, 'b>(
    field: &str,
    op: LeafOp,
    indexes: &'i BTreeMap<&str, ColumnIndexes<'b>>,
    column: &dyn Fn(&str) -> Option<(String, DataType)>,
) -> Option<(String, DataType, &'i ColumnIndexes<'b>)> {
    if !answers(true, op) {
        return None;
    }
    let (name, t) = column(field)?;
    let ix = indexes.get(name.as_str())?;
    Some((name, t, ix))
}

/// Java's `FileIndexPredicate` giving a `BitmapIndexResult`: the rows of a file that may pass
/// `filter`, by its bitmap indexes (a superset: the row filter by value still applies). AND
/// intersects its children's rows, OR unites them (when every child has rows); a leaf on a
/// column with a bitmap index gives the rows of its `=` / `IN` keys, the others' for `<>` /
/// `NOT IN` (where exact, see [`BitmapIndex::rows_not_in`]), the null or non-null rows. None:
/// the indexes cannot narrow the rows (every row may pass). Errors name the index's source
/// (its `.index` file), `data_file` the file it indexes.
fn select(
    filter: &Predicate,
    indexes: &BTreeMap<&str, ColumnIndexes<'_>>,
    column: &dyn Fn(&str) -> Option<(String, DataType)>,
    data_file: &str,
    rows: u64,
) -> Result<Option<roaring::RoaringBitmap>> {
    match filter {
        Predicate::And(c) => {
            let mut out: Option<roaring::RoaringBitmap> = None;
            for p in c {
                if let Some(r) = select(p, indexes, column, data_file, rows)? {
                    out = Some(match out {
                        Some(o) => o & r,
                        None => r,
                    });
                }
            }
            Ok(out)
        }
        Predicate::Or(c) => {
            let mut out = roaring::RoaringBitmap::new();
            for p in c {
                match select(p, indexes, column, data_file, rows)? {
                    Some(r) => out |= r,
                    None => return Ok(None),
                }
            }
            Ok(Some(out))
        }
        Predicate::Leaf {
            field,
            op,
            literals,
        } => {
            let Some((name, t, ix)) = leaf_index(field, *op, indexes, column) else {
                return Ok(None);
            };
            let Some((b, bm, context)) = ix.parsed_bitmap(&t)? else {
                return Ok(None);
            };
            if u64::from(bm.row_count()) != rows {
                return Err(Error::corrupt(
                    Path::new(context),
                    format!(
                        "the bitmap file index of column '{name}' of data file {data_file} \
                         records {} rows, the manifest {rows}",
                        bm.row_count()
                    ),
                ));
            }
            match op {
                LeafOp::Equal | LeafOp::In => bm.rows_in(b, &t, literals, context),
                LeafOp::NotEqual | LeafOp::NotIn => bm.rows_not_in(b, &t, literals, context),
                LeafOp::IsNull => bm.rows_null(b, context).map(Some),
                LeafOp::IsNotNull => bm.rows_not_null(b, context).map(Some),
                _ => Ok(None),
            }
        }
    }
}

/// Java's `FileIndexPredicate`: may a file with these indexes hold a row passing `filter`?
/// AND skips when any child skips, OR when every child does; a leaf skips when an index of
/// its column rules it out (a bloom filter: no `=` / `IN` value in it; a bitmap: the rows it
/// selects are none); anything else keeps the file. `column` maps a filter column to the
/// file's name for it and its type (None: not in the file). Errors name the index's source.
fn test(
    filter: &Predicate,
    indexes: &BTreeMap<&str, ColumnIndexes<'_>>,
    column: &dyn Fn(&str) -> Option<(String, DataType)>,
) -> Result<bool> {
    match filter {
        Predicate::And(c) => {
            for p in c {
                if !test(p, indexes, column)? {
                    return Ok(false);
                }
            }
            Ok(true)
        }
        Predicate::Or(c) => {
            for p in c {
                if test(p, indexes, column)? {
                    return Ok(true);
                }
            }
            Ok(false)
        }
        Predicate::Leaf {
            field,
            op,
            literals,
        } => {
            let Some((_, t, ix)) = leaf_index(field, *op, indexes, column) else {
                return Ok(true);
            };
            if let (Some(f), LeafOp::Equal | LeafOp::In) = (&ix.bloom, op) {
                let may = literals.iter().any(|l| match l {
                    None => true,
                    Some(d) => match bloom::datum_hashes(&t, d) {
                        Some(hs) => hs.iter().any(|&h| f.test_hash(h)),
                        None => true,
                    },
                });
                if !may {
                    return Ok(false);
                }
            }
            let Some((_, bm, _)) = ix.parsed_bitmap(&t)? else {
                return Ok(true);
            };
            Ok(match op {
                LeafOp::Equal | LeafOp::In => bm.may_be_in(&t, literals),
                LeafOp::NotEqual | LeafOp::NotIn => bm.may_be_not_in(&t, literals),
                LeafOp::IsNull => bm.may_be_null(),
                LeafOp::IsNotNull => bm.may_be_not_null(),
                _ => true,
            })
        }
    }
}

/// May `file` hold a row passing `filter`, by its file indexes (in the manifest, or in its
/// `.index` file under `dir`)? `column` maps a filter column (current schema) to the file's
/// name and type for it. A file without indexes, or whose index cannot help the filter, is
/// kept; an index that cannot be read fails the scan (never a silent wrong answer).
///
/// The `.index` file is read only when the filter has a leaf an index `configured` names can
/// answer (the table's `file-index.<type>.columns`): a leaf on another column cannot use it,
/// and an index file may be large (585 KB for a bloom filter at Java's default `items`).
pub(crate) fn may_match(
    filter: &Predicate,
    file: &DataFileMeta,
    dir: &Path,
    column: &dyn Fn(&str) -> Option<(String, DataType)>,
    configured: &ConfiguredColumns,
) -> Result<bool> {
    let mut looked_up = vec![];
    lookup_columns(filter, &mut looked_up);
    let read_files = looked_up.iter().any(|(c, op)| configured.answers(c, *op));
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

    /// `looked_up`: the leaves of `filter` an index may answer (`lookup_columns`, found once).
    fn may_match_looking_up(
        &self,
        filter: &Predicate,
        looked_up: &[(&str, LeafOp)],
        dir: &Path,
        column: &dyn Fn(&str) -> Option<(String, DataType)>,
    ) -> Result<bool> {
        if looked_up.is_empty() {
            return Ok(true);
        }
        Ok(self
            .with_indexes(dir, |indexes| test(filter, indexes, column))?
            .unwrap_or(true))
    }

    /// `f` of the file's indexes by column (read from its containers); None without any.
    fn with_indexes<T>(
        &self,
        dir: &Path,
        f: impl FnOnce(&BTreeMap<&str, ColumnIndexes<'_>>) -> Result<T>,
    ) -> Result<Option<T>> {
        // (where the container was read, its indexes): errors name the `.index` file whose
        // bytes are bad, or the data file whose manifest entry embeds them
        let mut containers = vec![];
        if let Some(b) = self.embedded {
            let source = format!(
                "{} (its file index embedded in the manifest)",
                self.file_name
            );
            containers.push((source.clone(), read_container(b, &source)?));
        }
        for x in self
            .extra_files
            .iter()
            .filter(|x| x.ends_with(INDEX_SUFFIX))
        {
            let path = dir.join(x);
            let b = crate::io::read(&path)?;
            let source = path.to_string_lossy().into_owned();
            containers.push((source.clone(), read_container(&b, &source)?));
        }
        let mut indexes: BTreeMap<&str, ColumnIndexes<'_>> = BTreeMap::new();
        for (source, ixs) in &containers {
            for ix in ixs {
                let Some(b) = &ix.bytes else { continue };
                if ix.index_type == BLOOM_FILTER {
                    let f = BloomFilter64::deserialize(b, source)?;
                    indexes.entry(ix.column.as_str()).or_default().bloom = Some(f);
                } else if ix.index_type == BITMAP {
                    let e = indexes.entry(ix.column.as_str()).or_default();
                    e.bitmap = Some(b);
                    e.bitmap_source = source.clone();
                }
            }
        }
        if indexes.is_empty() {
            return Ok(None);
        }
        f(&indexes).map(Some)
    }
}

/// The rows of `file` that may pass `filter` by its bitmap indexes (Java's
/// `BitmapIndexResult`, for a raw read to read only those: [`select`]); None when its indexes
/// cannot narrow them (no bitmap index the filter looks up, or every row selected). An index
/// whose row count is not the file's is a corrupt file error. `column`, `dir` and
/// `configured` as [`may_match`]'s.
pub(crate) fn row_selection(
    filter: &Predicate,
    file: &DataFileMeta,
    dir: &Path,
    column: &dyn Fn(&str) -> Option<(String, DataType)>,
    configured: &ConfiguredColumns,
) -> Result<Option<roaring::RoaringBitmap>> {
    let mut looked_up = vec![];
    lookup_columns(filter, &mut looked_up);
    if !looked_up
        .iter()
        .any(|(c, op)| answers(true, *op) && configured.bitmap.iter().any(|b| b == c))
    {
        return Ok(None);
    }
    let indexes = FileIndexes {
        file_name: &file.file_name,
        embedded: file.embedded_index.as_deref(),
        extra_files: &file.extra_files,
    };
    let dir = crate::kv::reader::file_dir(dir, file);
    let rows = file.row_count.max(0) as u64;
    let selected = indexes
        .with_indexes(&dir, |indexes| {
            select(filter, indexes, column, &file.file_name, rows)
        })?
        .flatten();
    Ok(selected.filter(|s| s.len() < rows && worth_selecting(s, rows)))
}

/// Whether reading only `s` of a file's `rows` can save work: a selection of at most a
/// quarter of the rows, or of runs of 32 rows or more on average. A dense, finely scattered
/// selection (`b = 1` where `b = i % 2`) skips no page and cost more CPU than reading every
/// row (3M rows: 0.19 s read whole, 0.27 s selected, review35c).
fn worth_selecting(s: &roaring::RoaringBitmap, rows: u64) -> bool {
    if s.len().saturating_mul(4) <= rows {
        return true;
    }
    let mut runs = 0u64;
    let mut last: Option<u32> = None;
    for r in s.iter() {
        if last.is_none_or(|l| l + 1 != r) {
            runs += 1;
        }
        last = Some(r);
    }
    runs.saturating_mul(32) <= s.len()
}

/// Rows read through bitmap index selections, and the rows of the files they were read from
/// (process-wide, for tests and benchmarks: [`selection_stats`]).
static SELECTED_ROWS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
static SELECTED_OF_ROWS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// A file of `of` rows is read at the `selected` rows its bitmap index selects.
pub(crate) fn count_selected(selected: u64, of: u64) {
    use std::sync::atomic::Ordering::Relaxed;
    SELECTED_ROWS.fetch_add(selected, Relaxed);
    SELECTED_OF_ROWS.fetch_add(of, Relaxed);
}

/// `(rows selected, rows of their files)`: the rows raw reads asked the format readers for
/// through bitmap index selections since the process started, and the rows of those files
/// (the difference was not decoded, up to the pages holding selected rows).
pub fn selection_stats() -> (u64, u64) {
    use std::sync::atomic::Ordering::Relaxed;
    (SELECTED_ROWS.load(Relaxed), SELECTED_OF_ROWS.load(Relaxed))
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
