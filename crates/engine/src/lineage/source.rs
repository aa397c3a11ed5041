//! Opening an input file as a stream of decompressed bytes, counting what was read.

use std::io::{Read, Seek, SeekFrom};
use std::ops::Range;
use std::pin::Pin;
use std::sync::Arc;

use async_compression::tokio::bufread::{BzDecoder, GzipDecoder, XzDecoder, ZstdDecoder};
use bytes::Bytes;
use futures::stream::BoxStream;
use futures::{StreamExt, TryStreamExt};
use object_store::{GetOptions, GetRange, GetResultPayload, ObjectStore};
use tokio::io::{AsyncBufRead, BufReader};
use tokio_util::io::StreamReader;

use super::files::FileRef;
use super::counters::FileTally;
use tokq_core::error::{Result, TokqError};

pub type ByteReader = Pin<Box<dyn AsyncBufRead + Send>>;

const READ_BUFFER: usize = 1 << 20;

/// The file's bytes as stored: all of them, or bytes `[start, end)` of `range`. A scan's reads
/// count in its `tally`; a look at a file's head (schema inference, finding pieces) has none, as
/// the scan reads those bytes again.
pub async fn open_raw(store: &Arc<dyn ObjectStore>, file: &FileRef, range: Option<(u64, u64)>, tally: Option<&FileTally>) -> Result<ByteReader> {
    let opts = GetOptions { range: range.map(|(start, end)| GetRange::Bounded(start..end)), ..Default::default() };
    let got = store
        .get_opts(&file.path()?, opts)
        .await
        .map_err(|e| TokqError::Io { uri: file.uri.clone(), cause: e.to_string() })?;
    let range = got.range.clone();
    let chunks = match got.payload {
        GetResultPayload::File(local, _) => local_chunks(local, range),
        GetResultPayload::Stream(_) => got.into_stream(),
    };
    let tally = tally.cloned();
    let raw = chunks
        .inspect_ok(move |chunk| {
            if let Some(t) = &tally {
                t.bytes(chunk.len() as u64)
            }
        })
        .map_err(std::io::Error::other);
    Ok(Box::pin(BufReader::with_capacity(READ_BUFFER, StreamReader::new(raw))))
}

/// A local file's bytes `range` in chunks of [`READ_BUFFER`], each read on the blocking pool.
/// object_store reads 8 KiB per blocking task, so a 1 GB file was 125,000 hand-offs between
/// threads: measurable on one core (a tenth of reading a 17 MB JSONL file).
fn local_chunks(local: std::fs::File, range: Range<u64>) -> BoxStream<'static, object_store::Result<Bytes>> {
    let end = range.end;
    let chunk = move |mut local: std::fs::File, at: u64| -> std::io::Result<Option<(Bytes, (std::fs::File, u64))>> {
        if at >= end {
            return Ok(None);
        }
        local.seek(SeekFrom::Start(at))?;
        let want = (end - at).min(READ_BUFFER as u64);
        let mut bytes = Vec::with_capacity(want as usize);
        (&mut local).take(want).read_to_end(&mut bytes)?;
        if bytes.is_empty() {
            return Err(std::io::Error::new(std::io::ErrorKind::UnexpectedEof, format!("the file ended at byte {at}, before {end}")));
        }
        let next = at + bytes.len() as u64;
        Ok(Some((bytes.into(), (local, next))))
    };
    futures::stream::try_unfold((local, range.start), move |(local, at)| async move {
        // Without a runtime of this crate's tokio (tokq's functions registered in another
        // program's DataFusion, through the FFI), the read runs where it is polled, as
        // object_store's own `maybe_spawn_blocking` does.
        let read = match tokio::runtime::Handle::try_current() {
            Ok(runtime) => runtime.spawn_blocking(move || chunk(local, at)).await.map_err(std::io::Error::other).and_then(|r| r),
            Err(_) => chunk(local, at),
        };
        read.map_err(|e| object_store::Error::Generic { store: "LocalFileSystem", source: Box::new(e) })
    })
    .boxed()
}

/// Extensions of compressions tokq does not read, refused by name rather than read as text.
const UNSUPPORTED: [&str; 8] = ["lz4", "br", "zip", "7z", "snappy", "lzma", "Z", "sz"];
/// Extensions of the compressions [`open`] undoes.
const DECOMPRESSED: [&str; 5] = ["gz", "zst", "zstd", "bz2", "xz"];

/// Whether `uri` ends in `.ext`, in any case (`.GZ` is gzip) but for `.Z` (compress), which
/// differs from `.z` by its case alone.
fn has_extension(uri: &str, ext: &str) -> bool {
    let (uri, ext) = (uri.as_bytes(), ext.as_bytes());
    let Some(dot) = uri.len().checked_sub(ext.len() + 1) else { return false };
    let tail = &uri[dot + 1..];
    uri[dot] == b'.' && (tail == ext || (ext != b"Z" && tail.eq_ignore_ascii_case(ext)))
}

/// Skips a UTF-8 byte order mark at the start of a text file (editors on Windows write one):
/// it is no part of the first line's JSON or the CSV header's first name.
pub async fn skip_bom(mut reader: ByteReader, uri: &str) -> Result<ByteReader> {
    use tokio::io::AsyncBufReadExt;
    const BOM: &[u8] = b"\xEF\xBB\xBF";
    let head = reader.fill_buf().await.map_err(|e| TokqError::Io { uri: uri.to_string(), cause: e.to_string() })?;
    if head.starts_with(BOM) {
        reader.as_mut().consume(BOM.len());
    }
    Ok(reader)
}

/// Whether the file is compressed (or in a compression tokq refuses), by its extension: such a
/// file can only be read from its start.
pub fn is_compressed(uri: &str) -> bool {
    UNSUPPORTED.iter().chain(&DECOMPRESSED).any(|e| has_extension(uri, e))
}

/// The file's bytes, decompressed by its extension (`.gz`, `.zst`/`.zstd`, `.bz2`, `.xz`, or plain).
pub async fn open(store: &Arc<dyn ObjectStore>, file: &FileRef, tally: Option<&FileTally>) -> Result<ByteReader> {
    let uri = file.uri.as_str();
    if let Some(ext) = UNSUPPORTED.iter().find(|e| has_extension(uri, e)) {
        return Err(TokqError::UnsupportedCompression { uri: uri.to_string(), extension: ext.to_string() });
    }
    let raw = open_raw(store, file, None, tally).await?;
    let reader: ByteReader = if has_extension(uri, "bz2") {
        let mut d = BzDecoder::new(raw);
        d.multiple_members(true);
        Box::pin(BufReader::with_capacity(READ_BUFFER, d))
    } else if has_extension(uri, "xz") {
        let mut d = XzDecoder::new(raw);
        d.multiple_members(true);
        Box::pin(BufReader::with_capacity(READ_BUFFER, d))
    } else if has_extension(uri, "gz") {
        let mut d = GzipDecoder::new(raw);
        d.multiple_members(true);
        Box::pin(BufReader::with_capacity(READ_BUFFER, d))
    } else if has_extension(uri, "zst") || has_extension(uri, "zstd") {
        let mut d = ZstdDecoder::new(raw);
        d.multiple_members(true);
        Box::pin(BufReader::with_capacity(READ_BUFFER, d))
    } else {
        Box::pin(raw)
    };
    skip_bom(reader, uri).await
}

#[cfg(test)]
mod tests {
    use futures::TryStreamExt;

    /// A range over several chunks, read where no tokio runtime is (tokq's functions in another
    /// program's DataFusion): every byte of the range, in order.
    #[test]
    fn a_local_range_reads_without_a_tokio_runtime() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.jsonl");
        let bytes: Vec<u8> = (0..3 * super::READ_BUFFER + 17).map(|i| (i % 251) as u8).collect();
        std::fs::write(&path, &bytes).unwrap();
        let chunks = super::local_chunks(std::fs::File::open(&path).unwrap(), 5..bytes.len() as u64 - 3);
        let got: Vec<bytes::Bytes> = futures::executor::block_on(chunks.try_collect()).unwrap();
        assert_eq!(got.concat(), bytes[5..bytes.len() - 3]);
    }

    #[test]
    fn compression_is_told_by_the_extension() {
        assert!(super::is_compressed("file:///a/b.jsonl.gz") && super::is_compressed("s3://b/x.jsonl.zst"));
        assert!(super::is_compressed("file:///a/b.jsonl.lz4"), "refused compressions are not plain text either");
        assert!(!super::is_compressed("file:///a/b.jsonl") && !super::is_compressed("file:///a.gz.d/b") && !super::is_compressed("file:///a/bgz"));
    }
}
