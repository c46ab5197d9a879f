//! Two-stage flush: the calling thread produces sorted (merged) batches while a second thread
//! encodes them into Parquet files.
//!
//! A bucket's final merge of its spilled runs and the Parquet encoding of its output take
//! about the same time. Running two buckets' merges at once keeps two cores busy too, but
//! holds two merges' working memory (every run's current batch, a row group being encoded):
//! under a small `write-buffer-size` that was the peak of the whole write. One merge feeding
//! its own encoder keeps both cores busy with one merge's memory.

use std::sync::mpsc::sync_channel;

use arrow_array::RecordBatch;

use super::rolling::RollingFileWriter;
use crate::error::{Error, Result};
use crate::spec::manifest::DataFileMeta;

/// Batches in flight between the two stages: the producer may run this far ahead.
const DEPTH: usize = 2;

/// Write every batch of `batches` through `writer` on a second thread and close it. If either
/// side fails, the writer is dropped unclosed, which removes every file it wrote, and the
/// first error is returned (the producer's if both failed).
pub fn write_pipelined(
    writer: RollingFileWriter,
    batches: impl Iterator<Item = Result<RecordBatch>>,
) -> Result<Vec<DataFileMeta>> {
    // None marks the end of the stream; a sender dropped without it means "abandon"
    let (tx, rx) = sync_channel::<Option<RecordBatch>>(DEPTH);
    std::thread::scope(|s| {
        let encoder = s.spawn(move || -> Result<Option<Vec<DataFileMeta>>> {
            let mut writer = writer;
            while let Ok(msg) = rx.recv() {
                match msg {
                    Some(b) => writer.write(&b)?,
                    None => return writer.close().map(Some),
                }
            }
            Ok(None)
        });
        let mut failed = None;
        for b in batches {
            match b {
                Ok(b) => {
                    if tx.send(Some(b)).is_err() {
                        break; // the encoder failed: its error is returned below
                    }
                }
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            }
        }
        if failed.is_none() {
            let _ = tx.send(None);
        }
        drop(tx);
        let encoded = encoder
            .join()
            .map_err(|_| Error::Internal("Parquet encoder thread panicked".into()));
        if let Some(e) = failed {
            return Err(e);
        }
        encoded??.ok_or_else(|| Error::Internal("Parquet encoder stopped early".into()))
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{Array, Int64Array, StringArray};
    use arrow_schema::{DataType as AT, Field, Schema};

    use super::*;
    use crate::io::parquet::writer_properties;
    use crate::kv::FileSource;
    use crate::options::StatsMode;
    use crate::spec::types::{DataType, TypeKind, MAX_LEN};
    use crate::write::rolling::FileWriterContext;

    fn writer(dir: &std::path::Path, target_size: u64) -> RollingFileWriter {
        let schema = Arc::new(Schema::new(vec![
            Field::new("k", AT::Int64, false),
            Field::new("v", AT::Utf8, true),
        ]));
        RollingFileWriter::new(
            FileWriterContext {
                dir: dir.to_path_buf(),
                prefix: "data-".into(),
                file_schema: schema,
                format: crate::io::format::WriteFormat::Parquet,
                props: writer_properties("zstd", 1, &[]).expect("props"),
                target_size,
                target_rows: i64::MAX as u64,
                schema_id: 0,
                level: 0,
                file_source: FileSource::Append.as_i32(),
                key_types: vec![],
                seq_col: None,
                kind_col: None,
                value_stats_cols: vec![0, 1],
                value_stats_types: vec![
                    DataType::new(TypeKind::BigInt),
                    DataType::new(TypeKind::VarChar(MAX_LEN)),
                ],
                value_stats_names: None,
                stats_mode: StatsMode::Full,
                file_index: None,
                changelog: false,
                kinds: None,
                blob: None,
                external: None,
            },
            0,
        )
    }

    fn batch(start: i64, n: i64) -> Result<RecordBatch> {
        let schema = Arc::new(Schema::new(vec![
            Field::new("k", AT::Int64, false),
            Field::new("v", AT::Utf8, true),
        ]));
        let ks: Vec<i64> = (start..start + n).collect();
        let vs: Vec<String> = ks.iter().map(|k| format!("value-{k:016}")).collect();
        Ok(RecordBatch::try_new(
            schema,
            vec![
                Arc::new(Int64Array::from(ks)),
                Arc::new(StringArray::from(vs)),
            ],
        )?)
    }

    fn parquet_files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
        std::fs::read_dir(dir)
            .map(|d| d.flatten().map(|e| e.path()).collect())
            .unwrap_or_default()
    }

    #[test]
    fn writes_every_batch_in_order() -> Result<()> {
        let dir = tempfile::tempdir().map_err(|e| Error::io(std::path::Path::new("tmp"), e))?;
        // small target: several files, rolled on the encoder thread
        let files = write_pipelined(
            writer(dir.path(), 64 << 10),
            (0..50).map(|i| batch(i * 1000, 1000)),
        )?;
        assert!(files.len() > 1, "{} files", files.len());
        assert_eq!(files.iter().map(|f| f.row_count).sum::<i64>(), 50_000);
        let mut keys = vec![];
        for f in &files {
            for b in crate::io::parquet::read_all(&dir.path().join(&f.file_name), None)? {
                let k = b.column(0).as_any().downcast_ref::<Int64Array>().cloned();
                keys.extend(k.into_iter().flat_map(|a| a.values().to_vec()));
            }
        }
        assert_eq!(keys, (0..50_000).collect::<Vec<i64>>());
        assert_eq!(parquet_files(dir.path()).len(), files.len());
        Ok(())
    }

    #[test]
    fn a_failing_producer_leaves_no_files() -> Result<()> {
        let dir = tempfile::tempdir().map_err(|e| Error::io(std::path::Path::new("tmp"), e))?;
        let batches = (0..40).map(|i| {
            if i == 30 {
                Err(Error::corrupt(
                    std::path::Path::new("run-7.arrow"),
                    "truncated",
                ))
            } else {
                batch(i * 1000, 1000)
            }
        });
        let err = write_pipelined(writer(dir.path(), 64 << 10), batches)
            .expect_err("the producer's error");
        assert!(err.to_string().contains("run-7.arrow"), "{err}");
        assert!(
            parquet_files(dir.path()).is_empty(),
            "{:?}",
            parquet_files(dir.path())
        );
        Ok(())
    }

    #[test]
    fn a_failing_encoder_stops_the_producer() -> Result<()> {
        let dir = tempfile::tempdir().map_err(|e| Error::io(std::path::Path::new("tmp"), e))?;
        // the files' directory cannot be created (its parent is a file): the first write fails
        let blocker = dir.path().join("not-a-dir");
        std::fs::write(&blocker, b"x").map_err(|e| Error::io(&blocker, e))?;
        let produced = std::sync::atomic::AtomicUsize::new(0);
        let batches = (0..1000).map(|i| {
            produced.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            batch(i * 1000, 1000)
        });
        let err = write_pipelined(writer(&blocker.join("bucket-0"), 1 << 30), batches)
            .expect_err("the encoder's error");
        assert!(err.to_string().contains("not-a-dir"), "{err}");
        // the producer stopped soon after the encoder failed (channel depth + a few)
        let n = produced.load(std::sync::atomic::Ordering::Relaxed);
        assert!(n < 20, "{n} batches produced");
        Ok(())
    }
}
