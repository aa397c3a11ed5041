//! Errors of the tokq library. Each one names the file, line or value at fault and what to do.

#[derive(Debug, thiserror::Error)]
pub enum TokqError {
    #[error("{file}:{line}: {cause}")]
    BadRow { file: String, line: u64, cause: String },

    #[error("{file}: offset {offset}: {cause}")]
    BadRecord { file: String, offset: u64, cause: String },

    #[error("tokenizer '{spec}': {cause}")]
    Tokenizer { spec: String, cause: String },

    #[error("no input files match '{0}': check the path or glob")]
    NoInput(String),

    #[error("input '{0}' is empty: every matched file has 0 bytes")]
    EmptyInput(String),

    #[error("{function}: {cause}")]
    Argument { function: &'static str, cause: String },

    #[error("{uri}: {cause}")]
    Io { uri: String, cause: String },

    #[error("{uri}: '.{extension}' compression is not supported (tokq reads .gz, .zst, .bz2 and .xz): recompress the file, for example with zstd")]
    UnsupportedCompression { uri: String, extension: String },

    #[error("column '{column}' is {first_type} in {first_file} and {other_type} in {other_file}: give it one type in every file, or read them with separate read_* calls")]
    SchemaConflict { column: String, first_type: String, first_file: String, other_type: String, other_file: String },

    /// A cluster node started with `--allow-root` was asked for a path outside its roots.
    #[error("{path} is outside this node's allowed roots ({roots}); move the data inside them, or start the scheduler and executors with --allow-root for it")]
    OutsideRoots { path: String, roots: String },

    #[error("fastText model {uri}: {cause}")]
    Model { uri: String, cause: String },
}

pub type Result<T, E = TokqError> = std::result::Result<T, E>;
