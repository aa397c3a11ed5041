//! `COPY ... TO 'out/x.parquet'`: one file, as DataFusion and DuckDB write it. The COPY writes
//! its parts and manifest to a hidden staging folder beside the file (`out/.x.parquet.tokq/`),
//! where a rerun after a crash resumes as in any folder; then the parts' row groups are
//! concatenated as they are, without decoding them (parquet's `append_column`, as its
//! `parquet-concat` tool does), into one file whose footer has the parts' metadata and the
//! manifest under `tokq.manifest`. The file appears whole (written under a hidden name, then
//! renamed into place), and the staging folder goes.

// parquet 59 deprecates ParquetObjectReader; DataFusion 55's own Parquet scan still builds on it.
#![allow(deprecated)]

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use datafusion::error::{DataFusionError, Result};
use datafusion::parquet::arrow::async_reader::{AsyncFileReader, ParquetObjectReader};
use datafusion::parquet::column::writer::ColumnCloseResult;
use datafusion::parquet::file::metadata::{KeyValue, ParquetMetaData};
use datafusion::parquet::file::properties::WriterProperties;
use datafusion::parquet::file::reader::{ChunkReader, Length};
use datafusion::parquet::file::writer::SerializedFileWriter;
use futures::TryStreamExt;
use object_store::buffered::BufWriter;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};
use tokio::io::AsyncWriteExt;
use tokq_udfs::args::df;

use super::manifest::{Manifest, RecipeId, MANIFEST_KEY};
use super::TMP_SUFFIX;

/// The staging folder of a single-file target: `out/x.parquet` -> `out/.x.parquet.tokq/`.
pub fn staging(file: &str) -> String {
    let (parent, name) = file.rsplit_once('/').unwrap_or(("", file));
    let parent = if parent.is_empty() && !file.starts_with('/') { String::new() } else { format!("{parent}/") };
    format!("{parent}.{name}.tokq/")
}

/// Refuses to replace a file at `file` that tokq did not write (no manifest in its footer), or
/// that another recipe wrote, unless `overwrite`.
pub async fn check_target(store: &Arc<dyn ObjectStore>, file: &Path, location: &str, recipe: &RecipeId, overwrite: bool) -> Result<()> {
    let meta = match store.head(file).await {
        Ok(m) => m,
        Err(object_store::Error::NotFound { .. }) => return Ok(()),
        Err(e) => return Err(df(e)),
    };
    if overwrite {
        return Ok(());
    }
    let footer = footer(store, file, meta.size).await.ok();
    match footer.as_deref().and_then(manifest_in).map(serde_json::from_str::<Manifest>) {
        Some(Ok(m)) => super::claim::not_anothers(location, recipe, &m, &meta),
        // A manifest this tokq cannot read is still tokq's: replaced as before.
        Some(Err(_)) => Ok(()),
        None => Err(DataFusionError::Plan(format!(
            "COPY target '{location}' exists and tokq did not write it: remove it, or replace it with OPTIONS ('overwrite' 'true') or --overwrite"
        ))),
    }
}

async fn footer(store: &Arc<dyn ObjectStore>, file: &Path, size: u64) -> Result<Arc<ParquetMetaData>> {
    let mut reader = ParquetObjectReader::new(Arc::clone(store), file.clone()).with_file_size(size);
    reader.get_metadata(None).await.map_err(df)
}

/// The manifest JSON in a file's footer.
fn manifest_in(meta: &ParquetMetaData) -> Option<&str> {
    meta.file_metadata().key_value_metadata()?.iter().find(|e| e.key == MANIFEST_KEY)?.value.as_deref()
}

/// The manifest of a single file tokq wrote, from its footer.
pub async fn read_manifest(store: &Arc<dyn ObjectStore>, file: &Path, location: &str) -> Result<Manifest> {
    let meta = store.head(file).await.map_err(|e| match e {
        object_store::Error::NotFound { .. } => DataFusionError::Plan(format!("'{location}' does not exist")),
        e => df(e),
    })?;
    let footer = footer(store, file, meta.size).await?;
    let json = manifest_in(&footer).ok_or_else(|| DataFusionError::Plan(format!("'{location}' has no tokq manifest in its footer: tokq did not write it")))?;
    serde_json::from_str(json).map_err(df)
}

/// Bytes written by the file writer, taken out after each row group.
#[derive(Clone, Default)]
struct Buffer(Arc<Mutex<Vec<u8>>>);

impl Buffer {
    fn take(&self) -> Bytes {
        Bytes::from(std::mem::take(&mut *self.0.lock().unwrap_or_else(|p| p.into_inner())))
    }
}

impl std::io::Write for Buffer {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// One row group's bytes, read at the offsets of the file they come from.
struct RowGroupBytes {
    start: u64,
    bytes: Bytes,
    file_len: u64,
}

impl Length for RowGroupBytes {
    fn len(&self) -> u64 {
        self.file_len
    }
}

impl ChunkReader for RowGroupBytes {
    type T = bytes::buf::Reader<Bytes>;

    fn get_read(&self, start: u64) -> datafusion::parquet::errors::Result<Self::T> {
        use bytes::Buf;
        Ok(self.get_bytes(start, (self.start + self.bytes.len() as u64 - start) as usize)?.reader())
    }

    fn get_bytes(&self, start: u64, length: usize) -> datafusion::parquet::errors::Result<Bytes> {
        let from = start.checked_sub(self.start).map(|s| s as usize).filter(|s| s + length <= self.bytes.len());
        from.map(|s| self.bytes.slice(s..s + length))
            .ok_or_else(|| datafusion::parquet::errors::ParquetError::General(format!("bytes {start}+{length} are outside the row group read")))
    }
}

/// Concatenates the parts `manifest` lists in the staging folder `staging` into one file at
/// `file`, with the manifest in its footer; returns the file's size.
pub async fn publish(store: &Arc<dyn ObjectStore>, staging: &Path, manifest: &Manifest, file: &Path) -> Result<u64> {
    let mut writer: Option<SerializedFileWriter<Buffer>> = None;
    let buffer = Buffer::default();
    let name = file.filename().unwrap_or("out.parquet");
    let mut tmp: Vec<object_store::path::PathPart<'static>> = file.parts().map(|p| p.as_ref().to_string().into()).collect();
    tmp.pop();
    tmp.push(format!(".{name}{TMP_SUFFIX}").into());
    let tmp = Path::from_iter(tmp);
    let mut upload = BufWriter::new(Arc::clone(store), tmp.clone());
    let json = serde_json::to_string(manifest).map_err(df)?;
    for record in &manifest.files {
        let part = staging.clone().join(record.path.as_str());
        let size = store.head(&part).await.map_err(df)?.size;
        let mut reader = ParquetObjectReader::new(Arc::clone(store), part.clone())
            .with_file_size(size)
            .with_preload_column_index(true)
            .with_preload_offset_index(true);
        let meta = reader.get_metadata(None).await.map_err(df)?;
        if writer.is_none() {
            // Every part carries the statement's footer metadata (the Arrow schema, tokq's facts).
            let mut kv: Vec<KeyValue> = meta.file_metadata().key_value_metadata().cloned().unwrap_or_default();
            kv.retain(|e| e.key != MANIFEST_KEY);
            kv.push(KeyValue::new(MANIFEST_KEY.to_string(), json.clone()));
            let props = WriterProperties::builder().set_key_value_metadata(Some(kv)).build();
            let schema = meta.file_metadata().schema_descr().root_schema_ptr();
            writer = Some(SerializedFileWriter::new(buffer.clone(), schema, Arc::new(props)).map_err(df)?);
        }
        let w = writer.as_mut().expect("made above");
        for (i, rg) in meta.row_groups().iter().enumerate() {
            let ranges: Vec<(u64, u64)> = rg.columns().iter().map(|c| c.byte_range()).collect();
            let start = ranges.iter().map(|r| r.0).min().unwrap_or(0);
            let end = ranges.iter().map(|r| r.0 + r.1).max().unwrap_or(0);
            let bytes = store.get_range(&part, start..end).await.map_err(df)?;
            let input = RowGroupBytes { start, bytes, file_len: size };
            let mut out = w.next_row_group().map_err(df)?;
            for (c, column) in rg.columns().iter().enumerate() {
                let result = ColumnCloseResult {
                    bytes_written: column.compressed_size() as u64,
                    rows_written: rg.num_rows() as u64,
                    metadata: column.clone(),
                    bloom_filter: None,
                    column_index: meta.column_index().and_then(|x| x.get(i)).and_then(|x| x.get(c)).cloned(),
                    offset_index: meta.offset_index().and_then(|x| x.get(i)).and_then(|x| x.get(c)).cloned(),
                };
                out.append_column(&input, result).map_err(df)?;
            }
            out.close().map_err(df)?;
            upload.put(buffer.take()).await.map_err(df)?;
        }
    }
    let writer = writer.ok_or_else(|| DataFusionError::Internal("a committed output without parts".into()))?;
    writer.close().map_err(df)?;
    let tail = buffer.take();
    upload.put(tail).await.map_err(df)?;
    upload.shutdown().await.map_err(df)?;
    let size = store.head(&tmp).await.map_err(df)?.size;
    store.rename(&tmp, file).await.map_err(df)?;
    Ok(size)
}

/// Removes the staging folder (`location`) once its file is published.
pub async fn remove_staging(store: &Arc<dyn ObjectStore>, staging: &Path, location: &str) -> Result<()> {
    // A local store leaves empty folders behind; nothing in this one is anyone else's.
    if let Some(dir) = crate::store::local_path(location) {
        return match std::fs::remove_dir_all(&dir) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(DataFusionError::Execution(format!("cannot remove the staging folder '{}': {e}", dir.display()))),
        };
    }
    let listed: Vec<_> = store.list(Some(staging)).map_ok(|m| m.location).try_collect().await.map_err(df)?;
    for location in listed {
        match store.delete(&location).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => {}
            Err(e) => return Err(df(e)),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn staging_folders_sit_beside_their_file() {
        assert_eq!(staging("/data/out/x.parquet"), "/data/out/.x.parquet.tokq/");
        assert_eq!(staging("s3://b/run/x.parquet"), "s3://b/run/.x.parquet.tokq/");
        assert_eq!(staging("x.parquet"), ".x.parquet.tokq/");
    }
}
