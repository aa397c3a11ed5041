//! `_tokq_manifest.json`: what a pretokenized output holds. Written last, so its presence means
//! every file it lists is complete.

use serde::{Deserialize, Serialize};
use tokq_core::pack::PackOptions;
pub use crate::sink::{FileRecord, Layout};

/// The manifest's file name in an output directory.
pub const MANIFEST_NAME: &str = "_tokq_manifest.json";
/// The output format's version; readers refuse other versions.
pub const FORMAT_VERSION: u32 = 1;
/// The Parquet footer key holding [`FORMAT_VERSION`] in every part file tokq writes.
pub const FORMAT_KEY: &str = "tokq.format_version";

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
/// A tokenizer the rows were tokenized with.
pub struct TokenizerRecord {
    /// As given to `tokenize`.
    pub spec: String,
    /// sha256 of the tokenizer file (or of the bundled rank table).
    pub sha256: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
/// The manifest: what an output directory holds, written last.
pub struct Manifest {
    /// [`FORMAT_VERSION`] of the writer.
    pub format_version: u32,
    /// The tokq version that wrote it.
    pub tokq_version: String,
    /// sha256 of the recipe text after parameter substitution.
    pub recipe_sha256: String,
    /// The tokenizers of the rows' token ids.
    pub tokenizers: Vec<TokenizerRecord>,
    /// The Parquet compression codec.
    pub compression: String,
    /// `source`: one file per input file, byte-identical on every run; `partition`: one file per
    /// partition, the same rows on every run.
    pub layout: Layout,
    /// Rows in all files.
    pub rows: u64,
    /// Token ids in all files, padding excluded.
    pub tokens: u64,
    /// Padding ids in all files.
    pub padding_tokens: u64,
    /// `pack_tokens` options when the rows are packed.
    pub packing: Option<PackOptions>,
    /// Bytes of all files.
    pub bytes: u64,
    /// Every file, in name order.
    pub files: Vec<FileRecord>,
}
