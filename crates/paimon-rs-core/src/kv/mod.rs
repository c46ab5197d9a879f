//! The key-value layout of primary-key data files (paimon-format.md §6.1): its schema and system
//! columns, the reader of KV files as sorted runs ([`reader::KvFileReader`]) and the context
//! of the files a writer produces ([`file_context`]). Flushes and compaction both go through
//! here.

pub mod reader;

use std::collections::HashMap;
use std::sync::Arc;

use arrow_schema::{DataType as ArrowType, Field, Schema, SchemaRef};

use crate::error::{Error, Result};
use crate::io::format::WriteFormat;
use crate::io::parquet::writer_properties;
use crate::spec::types::DataType;
use crate::table::FileStoreTable;
use crate::write::rolling::FileWriterContext;

pub use reader::KvFileReader;

pub const KEY_FIELD_ID_START: i32 = i32::MAX / 2;
pub const SEQUENCE_FIELD_ID: i32 = i32::MAX - 1;
pub const VALUE_KIND_FIELD_ID: i32 = i32::MAX - 2;
pub const KEY_PREFIX: &str = "_KEY_";
pub const SEQUENCE_NUMBER: &str = "_SEQUENCE_NUMBER";
pub const VALUE_KIND: &str = "_VALUE_KIND";

fn with_id(f: Field, id: i32) -> Field {
    f.with_metadata(HashMap::from([(
        "PARQUET:field_id".to_string(),
        id.to_string(),
    )]))
}

/// Where a data file comes from (Paimon's `FileSource`, the manifest's `_FILE_SOURCE`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FileSource {
    /// Written by a flush of new records.
    Append,
    /// Written by compaction.
    Compact,
}

impl FileSource {
    /// The manifest's `_FILE_SOURCE` value.
    pub const fn as_i32(self) -> i32 {
        match self {
            FileSource::Append => 0,
            FileSource::Compact => 1,
        }
    }
}

/// Arrow schema of primary-key data files: `_KEY_*`, `_SEQUENCE_NUMBER`, `_VALUE_KIND`, then
/// the table columns (paimon-format.md §6.1). With `file` the types are those stored in
/// Parquet ([`DataType::to_arrow_file`]), else those of the in-memory batches.
pub fn kv_arrow_schema(table: &FileStoreTable, file: bool) -> Result<SchemaRef> {
    let conv = |t: &DataType| {
        if file {
            t.to_arrow_file()
        } else {
            t.to_arrow()
        }
    };
    let mut fields = vec![];
    for k in table.trimmed_primary_keys() {
        let f = table
            .schema
            .field(&k)
            .ok_or_else(|| Error::schema(format!("primary key '{k}' is not a column")))?;
        fields.push(with_id(
            Field::new(format!("{KEY_PREFIX}{k}"), conv(&f.data_type), false),
            KEY_FIELD_ID_START + f.id,
        ));
    }
    fields.push(with_id(
        Field::new(SEQUENCE_NUMBER, ArrowType::Int64, false),
        SEQUENCE_FIELD_ID,
    ));
    fields.push(with_id(
        Field::new(VALUE_KIND, ArrowType::Int8, false),
        VALUE_KIND_FIELD_ID,
    ));
    fields.extend(table.schema.fields.iter().map(|f| {
        if file {
            f.to_arrow_file()
        } else {
            f.to_arrow()
        }
    }));
    Ok(Arc::new(Schema::new(fields)))
}

/// The context of the files a rolling writer of `table` produces at `level` (level 0 for
/// flushes, the output level for compaction), recorded with `source` as their file source:
/// file schema (KV layout for primary-key tables), Parquet properties, target size, key and
/// value stats columns. The writer's `dir` is the table's; set it to the bucket's directory.
pub fn file_context(
    table: &FileStoreTable,
    level: i32,
    source: FileSource,
) -> Result<FileWriterContext> {
    let o = &table.options;
    let pk = table.is_primary_key();
    let kv_schema = if pk {
        Some(kv_arrow_schema(table, true)?)
    } else {
        None
    };
    let key_types = table.schema.types_of(&table.trimmed_primary_keys())?;
    let nk = if pk { key_types.len() } else { 0 };
    let value_offset = if pk { nk + 2 } else { 0 };
    let fields = &table.schema.fields;
    // BLOB columns go to `.blob` files, not the data file (write/blob_write.rs)
    let blob = if pk {
        None
    } else {
        crate::write::blob_write::BlobSpec::new(fields, o, table.schema.id, source.as_i32())?
    };
    let stat_fields: Vec<usize> = (0..fields.len())
        .filter(|&i| !fields[i].data_type.is_nested() && !fields[i].data_type.is_blob())
        .collect();
    let names = if stat_fields.len() == fields.len() {
        None
    } else {
        Some(
            stat_fields
                .iter()
                .map(|&i| fields[i].name.clone())
                .collect(),
        )
    };
    let external = o.external_paths.clone().map(|e| (e, table.path.clone()));
    let format = WriteFormat::from_options(o)?;
    let file_schema = match kv_schema {
        Some(s) => s,
        None => Arc::new(Schema::new(
            table
                .schema
                .fields
                .iter()
                .filter(|f| {
                    blob.is_none()
                        || !crate::io::blob_nested::is_blob_file_type(&f.data_type)
                        || crate::options::is_inline_blob(&o.raw, &f.name)
                })
                .map(|f| f.to_arrow_file())
                .collect::<Vec<_>>(),
        )),
    };
    // ORC stores CHAR(n) and VARCHAR(n) as such: their lengths ride in the fields' metadata
    let orc = std::iter::once(&o.file_format)
        .chain(o.file_format_per_level.values())
        .chain(o.changelog_file_format.iter())
        .any(|f| f == "orc");
    let file_schema = if orc {
        crate::io::orc_write::annotate(file_schema, fields)
    } else {
        file_schema
    };
    Ok(FileWriterContext {
        dir: table.path.clone(),
        prefix: o.data_file_prefix.clone(),
        file_schema,
        format,
        props: writer_properties(
            &o.file_compression,
            o.zstd_level,
            &unique_columns(table, pk),
        )?,
        target_size: o.target_file_size(),
        // Java: the row limit applies to writes; compaction output rolls by size only
        target_rows: if source == FileSource::Compact {
            i64::MAX as u64
        } else {
            o.target_file_row_num
        },
        schema_id: table.schema.id,
        level,
        file_source: source.as_i32(),
        key_types: if pk { key_types } else { vec![] },
        seq_col: if pk { Some(nk) } else { None },
        kind_col: if pk { Some(nk + 1) } else { None },
        value_stats_cols: stat_fields.iter().map(|&i| i + value_offset).collect(),
        value_stats_types: stat_fields
            .iter()
            .map(|&i| fields[i].data_type.clone())
            .collect(),
        value_stats_names: names,
        stats_mode: o.stats_mode,
        // every data file carries the file index (append files as Java 1.0; primary-key files
        // index their value columns as Java's KeyValueDataFileWriter does since 1.1)
        file_index: crate::fileindex::FileIndexSpec::new(&o.raw, fields, value_offset)?
            .map(Arc::new),
        changelog: false,
        // formats and codecs per level: key-value files only; Java's append writers use
        // `file.format` / `file.compression` for every file (paimon-behaviour.md §1.5a)
        kinds: if pk {
            crate::write::rolling::FileKindFormats::new(o, &unique_columns(table, pk))?
        } else {
            None
        },
        blob,
        external,
    })
}

/// Columns of a data file that never repeat a value: a single-column key (its `_KEY_` copy and
/// the value column itself) and the sequence number (each key is once per file).
fn unique_columns(table: &FileStoreTable, pk: bool) -> Vec<String> {
    if !pk {
        return vec![];
    }
    let keys = table.trimmed_primary_keys();
    let mut out = vec![SEQUENCE_NUMBER.to_string()];
    if keys.len() == 1 {
        out.push(format!("{KEY_PREFIX}{}", keys[0]));
        out.push(keys[0].clone());
    }
    out
}
