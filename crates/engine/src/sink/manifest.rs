//! `_tokq_manifest.parquet`: what a pretokenized output holds. Written last, so its presence means
//! every file it lists is complete.
//!
//! The manifest is a Parquet file with the output's schema, no rows, and the manifest as JSON
//! under the footer key [`MANIFEST_KEY`]: every reader that opens a folder or a glob of it (DuckDB
//! `'dir/*'`, Polars `scan_parquet('dir/')`, which refuses a folder of mixed extensions, Hugging
//! Face `datasets`, pyarrow, Spark) reads it as an empty part instead of failing on it.

use bytes::Bytes;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::error::{DataFusionError, Result};
use datafusion::parquet::arrow::ArrowWriter;
use datafusion::parquet::file::metadata::{KeyValue, ParquetMetaDataReader};
use datafusion::parquet::file::properties::WriterProperties;
use datafusion::execution::object_store::ObjectStoreRegistry;
use object_store::ObjectStoreExt;
use serde::{Deserialize, Serialize};
use tokq_core::pack::PackOptions;
use tokq_udfs::args::df;
pub use crate::sink::{FileRecord, Layout};

/// The manifest's file name in an output directory.
pub const MANIFEST_NAME: &str = "_tokq_manifest.parquet";
/// Format version 1's JSON manifest: tokq's own file, replaced when the folder is written again.
pub const LEGACY_MANIFEST_NAME: &str = "_tokq_manifest.json";
/// The footer key of the manifest's JSON.
pub const MANIFEST_KEY: &str = "tokq.manifest";
/// The output format's version; readers refuse other versions. 2: the manifest is a Parquet file.
pub const FORMAT_VERSION: u32 = 2;
/// The Parquet footer key holding [`FORMAT_VERSION`] in every part file tokq writes.
pub const FORMAT_KEY: &str = "tokq.format_version";

/// The recipe a COPY belongs to, as its output's manifest records it: what decides whether a
/// COPY may replace the output already in its target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecipeId {
    /// The recipe file's real path; for SQL given as text (`-c`, standard input, Python's
    /// `tokq.sql`), `sql:` and the text's sha256.
    pub origin: String,
    /// sha256 of the recipe's text as written, before parameter substitution.
    pub source_sha256: String,
    /// sha256 of the recipe text after parameter substitution.
    pub sha256: String,
}

impl RecipeId {
    /// Whether `m` is the output of another recipe: another file and another text. The same
    /// file edited, the same text in another file (a script's temporary recipe), and either run
    /// with other parameters are the same recipe, so that iterating replaces its own output; a
    /// manifest that records no recipe compares the substituted text.
    pub fn differs(&self, m: &Manifest) -> bool {
        match (&m.recipe, &m.recipe_source_sha256) {
            (Some(origin), source) => *origin != self.origin && source.as_ref() != Some(&self.source_sha256),
            (None, _) => m.recipe_sha256 != self.sha256,
        }
    }

    /// The recipe of `m`, for a message.
    pub fn describe(m: &Manifest) -> String {
        match &m.recipe {
            Some(o) if o.starts_with("sql:") => format!("SQL given as text, sha256 {:.12}", &o[4..]),
            Some(path) => path.clone(),
            None => format!("recipe sha256 {:.12}", m.recipe_sha256),
        }
    }
}

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
    /// The recipe that wrote it ([`RecipeId::origin`]); absent in manifests of earlier tokq.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recipe: Option<String>,
    /// sha256 of that recipe's text as written, before parameters ([`RecipeId::source_sha256`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recipe_source_sha256: Option<String>,
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
    /// Rows per reject reason in all files (a rejects output).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub reasons: std::collections::BTreeMap<String, u64>,
    /// Every file, in name order.
    pub files: Vec<FileRecord>,
}

impl Manifest {
    /// The manifest file: no rows, `schema`, and `props`' footer metadata plus the manifest.
    pub fn encode(&self, schema: SchemaRef, props: WriterProperties) -> Result<Bytes> {
        let json = serde_json::to_string_pretty(self).map_err(df)?;
        let mut writer = ArrowWriter::try_new(Vec::new(), schema, Some(props))?;
        writer.append_key_value_metadata(KeyValue::new(MANIFEST_KEY.to_string(), json));
        Ok(Bytes::from(writer.into_inner()?))
    }

    /// Reads a manifest file's footer.
    pub fn decode(file: Bytes) -> Result<Self> {
        let meta = ParquetMetaDataReader::new().parse_and_finish(&file)?;
        let json = meta
            .file_metadata()
            .key_value_metadata()
            .and_then(|kv| kv.iter().find(|e| e.key == MANIFEST_KEY))
            .and_then(|e| e.value.as_deref())
            .ok_or_else(|| DataFusionError::Execution(format!("{MANIFEST_NAME} has no '{MANIFEST_KEY}' in its footer")))?;
        serde_json::from_str(json).map_err(df)
    }
}

/// The manifest of the output folder at `location` (a local path or URI), or of the single
/// `.parquet` file a COPY wrote there (from its footer).
pub fn read(location: &str) -> Result<Manifest> {
    let url = crate::store::to_url(location).map_err(df)?;
    let store = crate::store::TokqObjectStoreRegistry::new().get_store(&url)?;
    if location.ends_with(".parquet") {
        let file = crate::store::object_path(location).map_err(df)?;
        return crate::store::block_on(super::single::read_manifest(&store, &file, location));
    }
    let file = crate::store::object_path(location).map_err(df)?.join(MANIFEST_NAME);
    match crate::store::block_on(store.get(&file)) {
        Ok(got) => Manifest::decode(crate::store::block_on(got.bytes()).map_err(df)?),
        Err(object_store::Error::NotFound { .. }) => Err(DataFusionError::Plan(format!(
            "'{location}' has no {MANIFEST_NAME}: the run writing there has not finished, or it is not a folder tokq wrote"
        ))),
        Err(e) => Err(df(e)),
    }
}
