//! Cutting one large input file into pieces that tasks read in parallel: uncompressed JSONL at
//! line boundaries, Parquet at row-group boundaries. The cuts depend only on the file and
//! `tokq.split_bytes`, never on partitions, so the output files (one per piece) are the same
//! whatever the partitions, threads or executors. Each piece knows the `_row` of its first row,
//! so lineage stays exact: for JSONL the newlines before each cut are counted when the read is
//! planned (one pass over the file, a few chunks at once); Parquet's footer gives row counts.
//! Compressed JSONL cannot be entered mid-stream and stays one piece, as in every peer.

#![allow(deprecated)] // ParquetObjectReader: see format.rs.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};

use datafusion::parquet::arrow::async_reader::ParquetObjectReader;
use datafusion::parquet::arrow::ParquetRecordBatchStreamBuilder;
use futures::{StreamExt, TryStreamExt};
use object_store::ObjectStore;
use tokio::io::AsyncBufReadExt;
use serde::{Deserialize, Serialize};

use super::files::FileRef;
use super::format::{self, Format};
use super::source;
use tokq_core::error::Result;

/// Chunks whose lines are counted at the same time when a split is planned.
const COUNT_CHUNKS_AT_ONCE: usize = 4;

/// Part of a file.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Piece {
    /// The `_row` of its first row, and the first `_row` after it.
    pub rows: (u64, u64),
    /// Bytes `[start, end)` of whole lines (JSONL), or row groups `[start, end)` (Parquet).
    pub span: (u64, u64),
    /// The file's bytes it holds (its row groups' compressed sizes, for Parquet).
    pub bytes: u64,
}

/// The split of each file already planned in this process, by file (with its version) and size:
/// a recipe plans the same read several times (schema, each statement). Bounded, so that a
/// long-lived Python session reading many files does not keep every split it ever made.
type Planned = HashMap<(FileRef, u64), Vec<FileRef>>;
static PLANNED: LazyLock<Mutex<Planned>> = LazyLock::new(Default::default);
const PLANNED_FILES: usize = 4096;

/// `files`, each cut into pieces of about `split_bytes` where the format allows (0: never).
pub async fn split(format: &Format, store: &Arc<dyn ObjectStore>, files: Vec<FileRef>, split_bytes: u64) -> Result<Vec<FileRef>> {
    let mut out = Vec::with_capacity(files.len());
    for file in files {
        let splittable = match format {
            Format::Jsonl => !source::is_compressed(&file.uri),
            Format::Parquet => true,
            _ => false,
        };
        if split_bytes == 0 || !splittable || file.size <= split_bytes {
            out.push(file);
            continue;
        }
        let known = PLANNED.lock().unwrap_or_else(|p| p.into_inner()).get(&(file.clone(), split_bytes)).cloned();
        let pieces = match known {
            Some(p) => p,
            None => {
                let pieces = match format {
                    Format::Parquet => row_group_pieces(store, &file, split_bytes).await?,
                    _ => line_pieces(store, &file, split_bytes).await?,
                };
                let pieces: Vec<FileRef> = pieces.into_iter().map(|p| FileRef { piece: Some(p), ..file.clone() }).collect();
                let mut planned = PLANNED.lock().unwrap_or_else(|p| p.into_inner());
                if planned.len() >= PLANNED_FILES {
                    planned.clear();
                }
                planned.insert((file.clone(), split_bytes), pieces.clone());
                pieces
            }
        };
        // One piece is the whole file: keep it whole, named as it always was.
        if pieces.len() > 1 {
            out.extend(pieces);
        } else {
            out.push(file);
        }
    }
    Ok(out)
}

/// What one chunk of a JSONL file holds, for placing the cuts.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Chunk {
    newlines: u64,
    /// The position in the file of its first newline.
    first_newline: Option<u64>,
    ends_with_newline: bool,
}

async fn count_chunk(store: &Arc<dyn ObjectStore>, file: &FileRef, start: u64, end: u64) -> Result<Chunk> {
    let mut reader = source::open_raw(store, file, Some((start, end)), None).await?;
    let mut chunk = Chunk { newlines: 0, first_newline: None, ends_with_newline: false };
    let mut at = start;
    loop {
        let bytes = reader.fill_buf().await.map_err(|e| format::io(file, e))?;
        let Some(&last) = bytes.last() else { return Ok(chunk) };
        if chunk.first_newline.is_none() {
            chunk.first_newline = memchr::memchr(b'\n', bytes).map(|i| at + i as u64);
        }
        chunk.newlines += memchr::memchr_iter(b'\n', bytes).count() as u64;
        chunk.ends_with_newline = last == b'\n';
        let n = bytes.len();
        at += n as u64;
        reader.as_mut().consume(n);
    }
}

/// Pieces of whole lines, cut at the first line that starts at or after each multiple of
/// `split_bytes`.
async fn line_pieces(store: &Arc<dyn ObjectStore>, file: &FileRef, split_bytes: u64) -> Result<Vec<Piece>> {
    let bounds: Vec<(u64, u64)> = (0..file.size.div_ceil(split_bytes)).map(|k| (k * split_bytes, ((k + 1) * split_bytes).min(file.size))).collect();
    let chunks: Vec<Chunk> = futures::stream::iter(bounds.iter().map(|&(s, e)| count_chunk(store, file, s, e)))
        .buffered(COUNT_CHUNKS_AT_ONCE)
        .try_collect()
        .await?;
    Ok(place_cuts(&chunks, split_bytes, file.size))
}

/// The pieces that the chunks' newline counts give. Piece `k` starts at the first line that
/// starts at or after `k * split_bytes`; its first row is the number of newlines before it
/// (blank lines count, as the reader numbers them). Empty pieces are dropped.
fn place_cuts(chunks: &[Chunk], split_bytes: u64, size: u64) -> Vec<Piece> {
    let before: Vec<u64> = chunks.iter().scan(0, |sum, c| {
        let b = *sum;
        *sum += c.newlines;
        Some(b)
    }).collect();
    let total_newlines: u64 = chunks.iter().map(|c| c.newlines).sum();
    let last_row = total_newlines + u64::from(chunks.last().is_some_and(|c| !c.ends_with_newline));
    // (start byte, first row) of each piece.
    let mut starts = vec![(0u64, 0u64)];
    for k in 1..chunks.len() {
        let start = if chunks[k - 1].ends_with_newline {
            (k as u64 * split_bytes, before[k])
        } else {
            match (k..chunks.len()).find_map(|j| chunks[j].first_newline.map(|p| (p + 1, before[j] + 1))) {
                Some(s) => s,
                None => (size, last_row),
            }
        };
        if start.0 < size && start.0 > starts.last().map_or(0, |s| s.0) {
            starts.push(start);
        }
    }
    let ends = starts.iter().skip(1).copied().chain([(size, last_row)]);
    starts
        .iter()
        .zip(ends)
        .map(|(&(s, r), (e, r_end))| Piece { rows: (r, r_end), span: (s, e), bytes: e - s })
        .collect()
}

/// Pieces of whole row groups, each cut once it holds `split_bytes` (compressed).
async fn row_group_pieces(store: &Arc<dyn ObjectStore>, file: &FileRef, split_bytes: u64) -> Result<Vec<Piece>> {
    let reader = ParquetObjectReader::new(Arc::clone(store), file.path()?).with_file_size(file.size);
    let builder = ParquetRecordBatchStreamBuilder::new(reader)
        .await
        .map_err(|e| format::io(file, e))?;
    let groups: Vec<(u64, u64)> = builder
        .metadata()
        .row_groups()
        .iter()
        .map(|g| (g.num_rows().max(0) as u64, g.compressed_size().max(0) as u64))
        .collect();
    Ok(group_pieces(&groups, split_bytes))
}

/// Consecutive row groups `(rows, bytes)` gathered into pieces of at least `split_bytes`.
fn group_pieces(groups: &[(u64, u64)], split_bytes: u64) -> Vec<Piece> {
    let mut pieces = Vec::new();
    let (mut first_group, mut first_row, mut row, mut bytes) = (0u64, 0u64, 0u64, 0u64);
    for (i, &(rows, size)) in groups.iter().enumerate() {
        row += rows;
        bytes += size;
        if bytes >= split_bytes || i + 1 == groups.len() {
            pieces.push(Piece { rows: (first_row, row), span: (first_group, i as u64 + 1), bytes });
            (first_group, first_row, bytes) = (i as u64 + 1, row, 0);
        }
    }
    pieces
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The pieces of `text` cut every `split` bytes, by the planner's own steps.
    fn cut(text: &[u8], split: u64) -> Vec<Piece> {
        let chunks: Vec<Chunk> = text
            .chunks(split as usize)
            .enumerate()
            .map(|(k, c)| Chunk {
                newlines: c.iter().filter(|&&b| b == b'\n').count() as u64,
                first_newline: c.iter().position(|&b| b == b'\n').map(|i| (k * split as usize + i) as u64),
                ends_with_newline: c.last() == Some(&b'\n'),
            })
            .collect();
        place_cuts(&chunks, split, text.len() as u64)
    }

    /// Every line once, in order, each in the piece that holds its first byte, numbered as a
    /// whole-file read numbers it.
    fn check(text: &[u8], split: u64) {
        let pieces = cut(text, split);
        let mut lines = Vec::new();
        for p in &pieces {
            let body = &text[p.span.0 as usize..p.span.1 as usize];
            assert!(p.span.0 == 0 || text[p.span.0 as usize - 1] == b'\n', "{p:?} starts mid-line");
            let mut row = p.rows.0;
            for line in body.split_inclusive(|&b| b == b'\n') {
                lines.push((row, line.to_vec()));
                row += 1;
            }
            assert_eq!(row, p.rows.1, "{p:?}");
        }
        let whole: Vec<(u64, Vec<u8>)> = text.split_inclusive(|&b| b == b'\n').enumerate().map(|(i, l)| (i as u64, l.to_vec())).collect();
        assert_eq!(lines, whole, "split {split}");
    }

    #[test]
    fn cuts_fall_on_line_starts_and_rows_stay_exact() {
        let text = b"{\"a\":1}\n\n{\"a\":22}\n{\"a\":333}\n\n\n{\"a\":4444}\n{\"a\":5}";
        for split in 1..=text.len() as u64 + 1 {
            check(text, split);
            check(&text[..text.len() - 3], split);
            let mut ended = text.to_vec();
            ended.push(b'\n');
            check(&ended, split);
        }
    }

    #[test]
    fn a_line_longer_than_several_chunks_makes_one_piece() {
        let mut text = b"{\"x\":1}\n".to_vec();
        text.extend(std::iter::repeat_n(b'y', 100));
        text.extend(b"\n{\"x\":2}\n");
        // The long line starts at byte 8, before the first cut (10): it is the first piece's, and
        // the cuts at 10..100 all fall inside it and make no piece.
        let pieces = cut(&text, 10);
        assert_eq!(pieces.iter().map(|p| p.rows).collect::<Vec<_>>(), vec![(0, 2), (2, 3)]);
        check(&text, 10);
    }

    #[test]
    fn row_groups_gather_to_the_split_size() {
        let groups = [(10, 40), (10, 40), (5, 30), (7, 90), (1, 1)];
        let pieces = group_pieces(&groups, 64);
        let got: Vec<_> = pieces.iter().map(|p| (p.rows, p.span, p.bytes)).collect();
        assert_eq!(got, vec![((0, 20), (0, 2), 80), ((20, 32), (2, 4), 120), ((32, 33), (4, 5), 1)]);
    }
}
