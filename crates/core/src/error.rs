//! Errors of the tokq library. Each one names the file, line or value at fault and what to do.

/// What went wrong, with the file, line, record or value at fault.
#[derive(Debug, thiserror::Error)]
#[allow(missing_docs)] // the fields: each variant's message says what they hold
pub enum TokqError {
    /// An input row that does not parse (JSON, CSV, UTF-8).
    #[error("{file}:{line}: {cause}")]
    BadRow { file: String, line: u64, cause: String },

    /// A WARC record that does not parse, by its byte offset.
    #[error("{file}: offset {offset}: {cause}")]
    BadRecord { file: String, offset: u64, cause: String },

    /// A tokenizer that does not load or cannot encode a text.
    #[error("tokenizer '{spec}': {cause}")]
    Tokenizer { spec: String, cause: String },

    /// A path or glob that matches no file.
    #[error("no input files match '{0}': check the path or glob")]
    NoInput(String),

    /// Input files that are all empty.
    #[error("input '{0}' is empty: every matched file has 0 bytes")]
    EmptyInput(String),

    /// A function's argument that is not valid.
    #[error("{function}: {cause}")]
    Argument { function: &'static str, cause: String },

    /// A file that cannot be read or written.
    #[error("{uri}: {cause}")]
    Io { uri: String, cause: String },

    /// A compressed file whose codec tokq does not read.
    #[error("{uri}: '.{extension}' compression is not supported (tokq reads .gz, .zst, .bz2 and .xz): recompress the file, for example with zstd")]
    UnsupportedCompression { uri: String, extension: String },

    /// A column with different types in different files of one read.
    #[error("column '{column}' is {first_type} in {first_file} and {other_type} in {other_file}: give it one type in every file, or read them with separate read_* calls")]
    SchemaConflict { column: String, first_type: String, first_file: String, other_type: String, other_file: String },

    /// A cluster node started with `--allow-root` was asked for a path outside its roots.
    #[error("{path} is outside this node's allowed roots ({roots}); move the data inside them, or start the scheduler and executors with --allow-root for it")]
    OutsideRoots { path: String, roots: String },

    /// A fastText model that does not load.
    #[error("fastText model {uri}: {cause}")]
    Model { uri: String, cause: String },
}

/// A result whose error is a [`TokqError`].
pub type Result<T, E = TokqError> = std::result::Result<T, E>;
