//! Parallel Parquet output. [`exec::SinkExec`] writes the files of each partition on whichever
//! process runs that partition (the local runner, or a Ballista executor) and returns what it
//! wrote; the runner then commits the manifest. Each file is written under a hidden temporary
//! name and renamed into place when complete, so readers never see a partial file.
//!
//! Two layouts ([`Layout`]):
//! - **source**: one file per input file, or per piece of a large one (named from the input's URI
//!   and rows), for plans that keep each input file's rows together
//!   and in order (scans, filters, projections). The files are then byte-identical whatever the
//!   partitions, executors or threads, and a rerun after a crash skips the files already
//!   committed ([`journal`]).
//! - **partition**: one file per partition (named from its content), for plans that exchange rows (joins, GROUP BY,
//!   packing). The rows are the same on every run, but which file holds a row, and in what
//!   order, depends on the partitions.
//!
//! A target ending in `.parquet` is one file: the folder is written beside it, hidden, and its
//! parts concatenated into the file ([`single`]).

pub(crate) mod claim;
pub(crate) mod commit;
pub(crate) mod dictionary;
pub(crate) mod exec;
pub(crate) mod journal;
pub(crate) mod layout;
pub mod manifest;
pub(crate) mod part;
pub(crate) mod single;
pub(crate) mod table;

use std::collections::BTreeMap;
use tokq_udfs::args::OrDf;
use std::sync::Arc;

use datafusion::error::Result;
use datafusion::execution::runtime_env::RuntimeEnv;
use object_store::path::Path;
use object_store::ObjectStore;
use serde::{Deserialize, Serialize};

pub(crate) use commit::{plan, plan_facts, write, ParquetTarget, PlanFacts, PlannedCopy};
pub use layout::Layout;

/// Suffix of files being written; readers skip them (hidden, and not `*.parquet`).
/// The suffix of a file being written (hidden, renamed into place when complete).
pub const TMP_SUFFIX: &str = ".tokq-tmp";

/// A file a writer left unfinished: a hidden temporary (`.part-….tokq-tmp`), or the local
/// store's staging file of one (`.part-….tokq-tmp#1`, which `LocalFileSystem` writes a multipart
/// upload to and renames on completion: a process killed mid-upload leaves it behind).
pub fn is_unfinished(name: &str) -> bool {
    let base = match name.rsplit_once('#') {
        Some((base, n)) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => base,
        _ => name,
    };
    name.starts_with('.') && base.ends_with(TMP_SUFFIX)
}

/// How the token ids' pages lay out their values (COPY option `ids_encoding`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum IdsEncoding {
    /// Each id's four bytes together: every Parquet reader decodes it.
    #[default]
    Plain,
    /// All the ids' first bytes, then all their second bytes, and so on (Parquet's
    /// BYTE_STREAM_SPLIT, which the format allows for integers since 2.11). An id of a vocabulary
    /// under 2^17 has a third byte of 0 or 1 and a fourth of 0, so zstd meets two streams it codes
    /// at once instead of four bytes interleaved: Llama-3 on 61 MB of Wikipedia, ids 22.8 ->
    /// 22.1 MB and a one-core tokenize run 8% faster. DuckDB reads it from 2.0 only (1.x refuses
    /// the file), so it is not the default.
    ByteStreamSplit,
}

impl IdsEncoding {
    /// The option's value, as a user spells it.
    pub fn parse(value: &str) -> Result<Self> {
        match value.to_ascii_lowercase().as_str() {
            "plain" => Ok(Self::Plain),
            "byte_stream_split" => Ok(Self::ByteStreamSplit),
            _ => Err(datafusion::error::DataFusionError::Plan(format!(
                "COPY option 'ids_encoding' must be 'plain' or 'byte_stream_split', got '{value}'"
            ))),
        }
    }
}

/// Where rejected rows go: rows whose `column` is not NULL (a filter's reason) are written there,
/// with that column; the others go to the main target, without it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RejectsTarget {
    /// The rejects directory.
    pub location: String,
    /// The reason column.
    pub column: String,
}

/// Everything an executor needs to write a statement's output. It travels in the plan, so it
/// holds no credentials: stores come from each process's own environment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SinkOptions {
    /// The output directory.
    pub location: String,
    /// The Parquet codec (`zstd(3)`).
    pub compression: String,
    /// The codec of the `input_ids` lists (`zstd(1)`).
    pub ids_compression: String,
    /// How the `input_ids` values are laid out before that codec.
    pub ids_encoding: IdsEncoding,
    /// A row group ends at this many rows...
    pub max_row_group_rows: usize,
    /// ...or at this many bytes.
    pub max_row_group_bytes: usize,
    /// Where rejected rows go, if the COPY splits them off.
    pub rejects: Option<RejectsTarget>,
    /// Parquet footer key/values.
    pub metadata: Vec<(String, String)>,
    /// Names what the statement computes (tokq version, recipe, statement, partitions). A rerun
    /// with the same key and the same input files trusts the journal of committed files.
    pub run_key: String,
}

/// A complete output file, as the manifest lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileRecord {
    /// Relative to the output directory.
    pub path: String,
    /// Rows in the file.
    pub rows: u64,
    /// Token ids, padding excluded.
    pub tokens: u64,
    /// Padding ids in `input_ids` (padded rows), not counted in `tokens`.
    pub padding_tokens: u64,
    /// The file's size.
    pub bytes: u64,
    /// The file's sha256.
    pub sha256: String,
    /// The input whose rows it holds (source layout): a file's URI, or for a piece of a large
    /// file the URI and the rows, `file:///big.jsonl#rows=524288-1048576`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// Rows per reject reason, in a rejects file.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub reasons: BTreeMap<String, u64>,
}

/// One file a sink partition wrote (or found committed by an earlier run): a row of
/// [`exec::SinkExec`]'s output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WrittenFile {
    /// In the rejects directory rather than the main one.
    pub rejects: bool,
    /// The file as the manifest lists it.
    pub record: FileRecord,
    /// The layout it was written in.
    pub layout: Layout,
    /// How many rows the scan read from the file's source (source layout): the accounting of
    /// work a rerun did not redo.
    pub source_rows: Option<u64>,
    /// The process that wrote it, `host pid N`.
    pub writer: String,
    /// Committed by an earlier, interrupted run of the same statement, and not rewritten.
    pub resumed: bool,
    /// Which run of its stage wrote it on a cluster (Ballista's stage attempt; 0 locally).
    #[serde(default)]
    pub stage_attempt: u32,
}

/// The object store and directory of an output location.
pub fn store_and_dir(runtime: &RuntimeEnv, location: &str) -> Result<(Arc<dyn ObjectStore>, Path)> {
    let url = crate::store::to_url(location).df()?;
    let store = runtime.object_store(crate::store::object_store_url(&url)?)?;
    let dir = crate::store::object_path(location).df()?;
    Ok((store, dir))
}

/// The name of a source-layout part file: from its input's key (the file's URI, with the rows of
/// a piece), so that every task and every rerun agree on it without knowing the other inputs.
pub fn source_part_name(key: &str) -> String {
    use sha2::Digest;
    format!("part-{}.parquet", &hex::encode(sha2::Sha256::digest(key.as_bytes()))[..16])
}

#[cfg(test)]
mod tests {
    #[test]
    fn unfinished_files_include_the_local_stores_staging_files() {
        assert!(super::is_unfinished(".part-1.parquet.7-9-1.tokq-tmp"));
        assert!(super::is_unfinished(".part-1.parquet.7-9-1.tokq-tmp#1"));
        assert!(!super::is_unfinished("part-1.parquet"));
        assert!(!super::is_unfinished(".part-1.parquet.tokq-tmp#x"));
        assert!(!super::is_unfinished("x.tokq-tmp"));
    }
}
