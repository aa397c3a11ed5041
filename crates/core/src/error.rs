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

    /// A Hugging Face model folder that does not load or cannot run a text; `file` is the file
    /// at fault inside it (empty: the folder itself).
    #[error("model {dir}{}{file}: {cause}", if file.is_empty() { "" } else { "/" })]
    NeuralModel { dir: String, file: String, cause: String },
}

/// A result whose error is a [`TokqError`].
pub type Result<T, E = TokqError> = std::result::Result<T, E>;

/// The name among `known` that `word` most likely misspells, for a "did you mean" in an error:
/// the closest by edit distance (case ignored), if within a third of its length (at least 1).
pub fn did_you_mean<'a>(word: &str, known: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let word: Vec<char> = word.to_lowercase().chars().collect();
    let budget = (word.len() / 3).max(1);
    known
        .into_iter()
        .map(|k| (edit_distance(&word, &k.to_lowercase().chars().collect::<Vec<_>>()), k))
        .filter(|&(d, _)| d <= budget)
        .min_by_key(|&(d, _)| d)
        .map(|(_, k)| k)
}

/// Levenshtein distance, one row at a time.
fn edit_distance(a: &[char], b: &[char]) -> usize {
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let next = (diagonal + usize::from(ca != cb)).min(row[j] + 1).min(row[j + 1] + 1);
            diagonal = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::did_you_mean;

    #[test]
    fn suggests_the_near_name_only() {
        let known = ["fineweb", "gopher_quality", "c4_quality"];
        assert_eq!(did_you_mean("finweb", known), Some("fineweb"));
        assert_eq!(did_you_mean("Gopher_Qualty", known), Some("gopher_quality"));
        assert_eq!(did_you_mean("c4", known), None);
        assert_eq!(did_you_mean("bloom", known), None);
    }
}
