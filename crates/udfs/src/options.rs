//! `tokq.*` session options. They travel with the session config to Ballista's scheduler and
//! executors, so every node that registers them sees the values a recipe `SET`.

use datafusion::common::config::ConfigExtension;
use datafusion::common::extensions_options;

extensions_options! {
    /// Options of tokq functions and readers (`SET tokq.on_bad_row = 'skip'`).
    pub struct TokqOptions {
        /// What a reader does with a malformed row: 'fail' (default) or 'skip' (counted).
        pub on_bad_row: String, default = "fail".to_string()
        /// Documents longer than this many bytes are tokenized in chunks cut at spaces.
        pub tokenize_chunk_bytes: usize, default = tokq_core::tokenize::DEFAULT_CHUNK_BYTES
        /// An uncompressed JSONL or a Parquet file larger than this is read as pieces of about
        /// this many bytes, in parallel, each written to its own output file; 0 reads every
        /// file whole.
        pub split_bytes: u64, default = 64 << 20
    }
}

impl ConfigExtension for TokqOptions {
    const PREFIX: &'static str = "tokq";
}

impl TokqOptions {
    /// The options of a session config (the defaults where it has none).
    pub fn from_config(config: &datafusion::config::ConfigOptions) -> Self {
        config.extensions.get::<TokqOptions>().cloned().unwrap_or_default()
    }
}
