//! Partial-column writes of a data-evolution table (`with_write_type(cols)`, pypaimon's
//! `FileStoreWrite.write_cols` and Java's `BaseAppendFileStoreWrite` with a write type): the
//! files of the write hold only some columns of the table and name them in `write_cols`
//! (docs/paimon-behaviour.md §18, "Partial-column files"). Without a caller-set `first_row_id` the
//! commit numbers them from the table's `nextRowId` as new rows (whose other columns read as
//! nulls until a file of the same row ids gives them); with one (pypaimon's
//! `new_files[0].first_row_id = ...`) they are column updates of those rows
//! (commit/row_tracking.rs).

use crate::commit::CommitMessage;
use crate::error::{Error, Result};
use crate::spec::manifest::DataFileMeta;
use crate::table::FileStoreTable;
use crate::write::rolling::FileWriterContext;

/// `table` as the files of a write of `cols` see it: the fields of `cols` only, in the
/// table's order, same schema id. Refused: a table that is not a data-evolution append table,
/// an unknown, repeated or BLOB column, a partition key left out, no column, a write that
/// already `started`.
pub(crate) fn partial_table(
    table: &FileStoreTable,
    cols: &[String],
    started: bool,
) -> Result<FileStoreTable> {
    if started {
        return Err(Error::invalid(
            "with_write_type after rows were written: set the written columns first",
        ));
    }
    let o = &table.options;
    if table.is_primary_key() || !(o.row_tracking()? && o.data_evolution()?) {
        return Err(Error::unsupported(
            "files holding some columns only (write_cols): only data-evolution append tables \
             ('row-tracking.enabled' and 'data-evolution.enabled') merge them with the files \
             of the other columns",
        ));
    }
    if cols.is_empty() {
        return Err(Error::invalid("with_write_type names no column"));
    }
    for (i, c) in cols.iter().enumerate() {
        let Some(f) = table.schema.field(c) else {
            return Err(Error::schema(format!(
                "with_write_type: column '{c}' is not in the table"
            )));
        };
        if cols[..i].contains(c) {
            return Err(Error::invalid(format!(
                "with_write_type names column '{c}' twice"
            )));
        }
        if f.data_type.contains_blob() {
            return Err(Error::unsupported(format!(
                "with_write_type of BLOB column '{c}': a partial-column write of BLOB columns \
                 (pypaimon's .blob files of some rows) is not implemented; write every column"
            )));
        }
    }
    if let Some(k) = table.partition_keys().iter().find(|k| !cols.contains(k)) {
        return Err(Error::schema(format!(
            "with_write_type: partition column '{k}' must be written (it places the rows)"
        )));
    }
    let mut sub = table.clone();
    sub.schema.fields.retain(|f| cols.contains(&f.name));
    Ok(sub)
}

/// The value stats of a partial file name their columns (`value_stats_cols`): without the
/// names a reader would take them for the stats of the whole schema's columns.
pub(crate) fn name_stats(ctx: &mut FileWriterContext, sub: &FileStoreTable) {
    let names: Vec<&String> = sub.schema.fields.iter().map(|f| &f.name).collect();
    ctx.value_stats_names = Some(
        ctx.value_stats_cols
            .iter()
            .filter_map(|&i| names.get(i).map(|n| (*n).clone()))
            .collect(),
    );
}

/// Sets `write_cols` of the data files `msgs` add.
pub(crate) fn mark_write_cols(msgs: &mut [CommitMessage], cols: &[String]) {
    for m in msgs {
        let files = m
            .data_increment
            .new_files
            .iter_mut()
            .chain(m.compact_increment.compact_after.iter_mut());
        for f in files.filter(|f: &&mut DataFileMeta| !f.file_name.ends_with(".blob")) {
            f.write_cols = Some(cols.to_vec());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_are_named_by_the_written_columns() {
        let files = vec![crate::compact::interval::tests::file("a", 0, 0, 1, 0)];
        let mut msgs = vec![CommitMessage {
            partition: vec![],
            bucket: 0,
            total_buckets: -1,
            data_increment: crate::commit::DataIncrement {
                new_files: files,
                ..Default::default()
            },
            compact_increment: Default::default(),
            restored_snapshot: None,
        }];
        mark_write_cols(&mut msgs, &["b".to_string()]);
        assert_eq!(
            msgs[0].data_increment.new_files[0].write_cols,
            Some(vec!["b".to_string()])
        );
    }
}
