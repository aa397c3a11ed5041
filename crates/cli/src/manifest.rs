//! `_tokq_manifest.json`: what a pretokenized output holds. Written last, so its presence means
//! every file it lists is complete.

use serde::{Deserialize, Serialize};
use tokq_udfs::pack::PackOptions;
pub use tokq_udfs::sink::{FileRecord, Layout};

pub const MANIFEST_NAME: &str = "_tokq_manifest.json";
pub const FORMAT_VERSION: u32 = 1;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenizerRecord {
    pub spec: String,
    pub sha256: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    pub format_version: u32,
    pub tokq_version: String,
    pub recipe_sha256: String,
    pub tokenizers: Vec<TokenizerRecord>,
    pub compression: String,
    /// `source`: one file per input file, byte-identical on every run; `partition`: one file per
    /// partition, the same rows on every run.
    pub layout: Layout,
    pub rows: u64,
    pub tokens: u64,
    pub padding_tokens: u64,
    /// `pack_tokens` options when the rows are packed.
    pub packing: Option<PackOptions>,
    pub bytes: u64,
    pub files: Vec<FileRecord>,
}
