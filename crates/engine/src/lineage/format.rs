//! The input formats a lineage reader understands, and how each one is read file by file.

// parquet 59 deprecates ParquetObjectReader in favour of hand-written AsyncFileReaders; it is
// still the reader DataFusion 55's own Parquet scan builds on.
#![allow(deprecated)]

use tokq_udfs::args::OrDf;
use std::io::Cursor;
use std::sync::Arc;

use datafusion::arrow::csv;
use datafusion::arrow::datatypes::{Schema, SchemaRef};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::parquet::arrow::async_reader::ParquetObjectReader;
use datafusion::parquet::arrow::ParquetRecordBatchStreamBuilder;
use datafusion::parquet::file::metadata::ParquetMetaData;
use futures::{StreamExt, TryStreamExt};
use object_store::ObjectStore;
use serde::{Deserialize, Serialize};
use tokio::io::AsyncBufReadExt;
use tokio::sync::mpsc::Sender;

use super::files::FileRef;
use super::warc::{Rows, WarcRows};
use super::warc_records::Records;
use super::counters::FileTally;
use super::drift::FileColumns;
use super::{jsonl, merge, source, BATCH_BYTES};
use tokq_core::error::{Result, TokqError};
use datafusion::error::{DataFusionError, Result as DfResult};

const CSV_INFER_BYTES: usize = 1 << 20;
/// Files whose schemas are read at the same time when a read is planned.
const INFER_FILES_AT_ONCE: usize = 16;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Format {
    Jsonl,
    Csv { has_header: bool },
    Parquet,
    Warc(WarcRows),
}

impl Format {
    /// The format a path's extension names (after a compression suffix): `None` for a folder
    /// or an extension tokq does not read.
    pub fn of_extension(path: &str) -> Option<Format> {
        let lower = path.to_ascii_lowercase();
        let name = [".gz", ".zst", ".zstd"].iter().find_map(|c| lower.strip_suffix(c)).unwrap_or(&lower);
        let ext = name.rsplit_once('.').map(|(_, e)| e)?;
        match ext {
            "jsonl" | "json" | "ndjson" => Some(Format::Jsonl),
            "parquet" => Some(Format::Parquet),
            "csv" => Some(Format::Csv { has_header: true }),
            "warc" => Some(Format::Warc(WarcRows::Records(super::warc::RecordTypes::RESPONSE))),
            _ => None,
        }
    }
}

/// One batch of a file's rows and the 0-based row number of each, as the format defines it.
pub struct FileBatch {
    pub batch: RecordBatch,
    pub rows: Vec<i64>,
}

/// The error of reading `file`.
pub(super) fn io(file: &FileRef, e: impl std::fmt::Display) -> TokqError {
    TokqError::Io { uri: file.uri.clone(), cause: e.to_string() }
}

impl Format {
    pub fn name(&self) -> &'static str {
        match self {
            Format::Jsonl => "jsonl",
            Format::Csv { .. } => "csv",
            Format::Parquet => "parquet",
            Format::Warc(WarcRows::Records(_)) => "warc",
            Format::Warc(WarcRows::Text) => "wet",
        }
    }

    /// The schema of the files, merged by column name ([`merge`]), and each file's own columns:
    /// each file's schema is read (its footer, header or first lines), a few files at a time.
    pub async fn infer_schema(&self, store: &Arc<dyn ObjectStore>, files: &[FileRef], skip_bad: bool) -> Result<(Schema, FileColumns)> {
        if let Format::Warc(rows) = self {
            return Ok((rows.schema(), FileColumns::default()));
        }
        let found: Vec<Option<Schema>> = futures::stream::iter(files.iter().filter(|f| f.size > 0).map(|file| self.file_schema(store, file, skip_bad)))
            .buffered(INFER_FILES_AT_ONCE)
            .try_collect()
            .await?;
        let found: Vec<(String, Schema)> = files
            .iter()
            .filter(|f| f.size > 0)
            .zip(found)
            .filter_map(|(f, s)| Some((f.uri.clone(), s.filter(|s| !s.fields().is_empty())?)))
            .collect();
        if found.is_empty() {
            return Err(TokqError::EmptyInput(files.first().map(|f| f.uri.clone()).unwrap_or_default()));
        }
        if let (Format::Csv { .. }, Some(other)) = (self, found.iter().find(|(_, s)| s.fields() != found[0].1.fields())) {
            // CSV columns are positional: files with other headers cannot share one decoder.
            let names = |s: &Schema| s.fields().iter().map(|f| f.name().as_str()).collect::<Vec<_>>().join(",");
            return Err(TokqError::Io {
                uri: other.0.clone(),
                cause: format!("its columns ({}) differ from those of {} ({}); read such files with separate read_csv calls", names(&other.1), found[0].0, names(&found[0].1)),
            });
        }
        let columns = found.iter().map(|(uri, s)| (uri.clone(), s.fields().iter().map(|f| f.name().clone()).collect()));
        Ok((merge::merge(&found)?, FileColumns::new(columns.collect())))
    }

    /// One file's own schema; `None` when it has no rows to infer one from.
    async fn file_schema(&self, store: &Arc<dyn ObjectStore>, file: &FileRef, skip_bad: bool) -> Result<Option<Schema>> {
        Ok(match self {
            Format::Jsonl => jsonl::infer(source::open(store, file, None).await?, &file.uri, skip_bad).await?,
            Format::Csv { has_header } => {
                let mut reader = source::open(store, file, None).await?;
                let mut head = Vec::new();
                while head.len() < CSV_INFER_BYTES {
                    let buf = reader.fill_buf().await.map_err(|e| io(file, e))?;
                    if buf.is_empty() {
                        break;
                    }
                    head.extend_from_slice(buf);
                    let n = buf.len();
                    reader.consume(n);
                }
                if let Some(end) = head.iter().rposition(|&b| b == b'\n').filter(|_| head.len() >= CSV_INFER_BYTES) {
                    head.truncate(end + 1);
                }
                let (schema, _) = csv::reader::Format::default()
                    .with_header(*has_header)
                    .infer_schema(Cursor::new(head), Some(1000))
                    .map_err(|e| io(file, e))?;
                Some(schema)
            }
            Format::Parquet => {
                let reader = ParquetObjectReader::new(Arc::clone(store), file.path()?).with_file_size(file.size);
                let builder = ParquetRecordBatchStreamBuilder::new(reader).await.map_err(|e| io(file, e))?;
                Some(builder.schema().as_ref().clone())
            }
            Format::Warc(rows) => Some(rows.schema()),
        })
    }

    /// Sends the file's batches to `tx`; returns false when the receiver has gone away.
    pub async fn read_file(
        &self,
        store: &Arc<dyn ObjectStore>,
        file: &FileRef,
        schema: &SchemaRef,
        batch_size: usize,
        skip_bad: bool,
        tally: &FileTally,
        tx: &Sender<DfResult<RecordBatch>>,
        finish: &(dyn Fn(FileBatch) -> DfResult<RecordBatch> + Send + Sync),
    ) -> Result<bool, DataFusionError> {
        let mut next_row = file.piece.as_ref().map_or(0, |p| p.rows.0 as i64);
        let mut emit = |batch: RecordBatch, rows: Option<Vec<i64>>, skipped: u64| {
            let rows = rows.unwrap_or_else(|| (next_row..next_row + batch.num_rows() as i64).collect());
            next_row += batch.num_rows() as i64;
            tally.rows(batch.num_rows() as u64, skipped);
            finish(FileBatch { batch, rows })
        };
        match self {
            Format::Jsonl => {
                let (reader, first_line) = match &file.piece {
                    // The first piece starts the file, and may start with a byte order mark.
                    Some(p) if p.span.0 == 0 => (source::skip_bom(source::open_raw(store, file, Some(p.span), Some(tally)).await.df()?, &file.uri).await.df()?, 0),
                    Some(p) => (source::open_raw(store, file, Some(p.span), Some(tally)).await.df()?, p.rows.0),
                    None => (source::open(store, file, Some(tally)).await.df()?, 0),
                };
                let mut lines = jsonl::LineReader::starting_at(reader, file.uri.clone(), first_line);
                loop {
                    let chunk = lines.read(batch_size).await.df()?;
                    if chunk.is_empty() {
                        return Ok(true);
                    }
                    let d = jsonl::decode(schema, &file.uri, &chunk, skip_bad).df()?;
                    if tx.send(Ok(emit(d.batch, Some(d.rows), d.skipped)?)).await.is_err() {
                        return Ok(false);
                    }
                }
            }
            Format::Csv { has_header } => {
                let mut reader = source::open(store, file, Some(tally)).await.df()?;
                let mut decoder = csv::ReaderBuilder::new(Arc::clone(schema))
                    .with_header(*has_header)
                    .with_batch_size(batch_size)
                    .build_decoder();
                loop {
                    let buf = reader.fill_buf().await.map_err(|e| io(file, e)).df()?;
                    let eof = buf.is_empty();
                    let used = decoder.decode(buf).map_err(|e| io(file, e)).df()?;
                    reader.consume(used);
                    if eof || decoder.capacity() == 0 {
                        if let Some(batch) = decoder.flush().map_err(|e| io(file, e)).df()? {
                            if batch.num_rows() > 0 && tx.send(Ok(emit(batch, None, 0)?)).await.is_err() {
                                return Ok(false);
                            }
                        }
                    }
                    if eof {
                        return Ok(true);
                    }
                }
            }
            Format::Parquet => {
                let reader = ParquetObjectReader::new(Arc::clone(store), file.path().df()?).with_file_size(file.size);
                let mut builder = ParquetRecordBatchStreamBuilder::new(reader).await.map_err(|e| io(file, e)).df()?;
                let rows = rows_within_batch_bytes(builder.metadata(), batch_size);
                if let Some(p) = &file.piece {
                    builder = builder.with_row_groups((p.span.0 as usize..p.span.1 as usize).collect());
                }
                let mut stream = builder
                    .with_batch_size(rows)
                    .build()
                    .map_err(|e| io(file, e)).df()?;
                tally.bytes(file.bytes());
                while let Some(batch) = stream.try_next().await.map_err(|e| io(file, e)).df()? {
                    let batch = merge::conform(&batch, schema).map_err(|e| io(file, format!("cannot read it in the files' merged schema: {e}"))).df()?;
                    if tx.send(Ok(emit(batch, None, 0)?)).await.is_err() {
                        return Ok(false);
                    }
                }
                Ok(true)
            }
            Format::Warc(kind) => {
                let mut records = Records::new(source::open_raw(store, file, None, Some(tally)).await.df()?, file.uri.clone());
                let mut rows = Rows::new(*kind);
                let mut skipped = 0;
                loop {
                    let done = match records.next().await {
                        Ok(Some(r)) => {
                            if kind.keeps(&r.header) {
                                rows.push(&r);
                            }
                            false
                        }
                        Ok(None) => true,
                        Err(TokqError::BadRecord { .. }) if skip_bad => {
                            skipped += 1;
                            false
                        }
                        Err(e) => return Err(e).df(),
                    };
                    if rows.full(batch_size) || (done && (!rows.is_empty() || skipped > 0)) {
                        let (batch, numbers) = rows.finish(schema)?;
                        if tx.send(Ok(emit(batch, Some(numbers), skipped)?)).await.is_err() {
                            return Ok(false);
                        }
                        skipped = 0;
                    }
                    if done {
                        return Ok(true);
                    }
                }
            }
        }
    }
}

/// Rows per batch of a Parquet file: `batch_size`, fewer when its rows are so large (by the
/// footer's uncompressed sizes) that a batch would pass [`BATCH_BYTES`].
fn rows_within_batch_bytes(meta: &ParquetMetaData, batch_size: usize) -> usize {
    let (rows, bytes) = meta.row_groups().iter().fold((0u64, 0u64), |(r, b), g| (r + g.num_rows().max(0) as u64, b + g.total_byte_size().max(0) as u64));
    let per_row = bytes.div_ceil(rows.max(1)).max(1);
    batch_size.min((BATCH_BYTES as u64 / per_row).max(1) as usize)
}
