//! `tokq.*` session options. They travel with the session config to Ballista's scheduler and
//! executors, so every node that registers them sees the values a recipe `SET`.

use std::fmt;
use std::str::FromStr;

use datafusion::common::config::{ConfigExtension, ConfigField, Visit};
use datafusion::common::{extensions_options, DataFusionError};

/// What a reader does with a malformed input row. One type for `SET tokq.on_bad_row`,
/// `tokq run --on-bad-row` and Python's `on_bad_row=`, all spelled `fail` or `skip`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum OnBadRow {
    /// The run fails, naming the file and line.
    #[default]
    Fail,
    /// The row is dropped and counted (`bad_rows_skipped` in the stats).
    Skip,
}

impl OnBadRow {
    /// Every value, in the order the docs list them.
    pub const ALL: [OnBadRow; 2] = [OnBadRow::Fail, OnBadRow::Skip];

    /// The value's name as users write it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Fail => "fail",
            Self::Skip => "skip",
        }
    }
}

impl fmt::Display for OnBadRow {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for OnBadRow {
    type Err = DataFusionError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|v| v.as_str().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| DataFusionError::Configuration(format!("tokq.on_bad_row must be 'fail' or 'skip', got '{s}'")))
    }
}

/// As DataFusion's own enum options are: set from a string, shown as one.
impl ConfigField for OnBadRow {
    fn visit<V: Visit>(&self, v: &mut V, key: &str, description: &'static str) {
        v.some(key, self, description)
    }

    fn set(&mut self, _: &str, value: &str) -> datafusion::common::Result<()> {
        *self = value.parse()?;
        Ok(())
    }
}

#[cfg(feature = "clap")]
impl clap::ValueEnum for OnBadRow {
    fn value_variants<'a>() -> &'a [Self] {
        &Self::ALL
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        Some(clap::builder::PossibleValue::new(self.as_str()))
    }
}

extensions_options! {
    /// Options of tokq functions and readers (`SET tokq.on_bad_row = 'skip'`).
    pub struct TokqOptions {
        /// What a reader does with a malformed row: 'fail' (default) or 'skip' (counted).
        pub on_bad_row: OnBadRow, default = OnBadRow::Fail
        /// Documents longer than this many bytes are tokenized in chunks cut at spaces.
        pub tokenize_chunk_bytes: usize, default = tokq_core::tokenize::DEFAULT_CHUNK_BYTES
        /// An uncompressed JSONL or a Parquet file larger than this is read as pieces of about
        /// this many bytes, in parallel, each written to its own output file; 0 reads every
        /// file whole.
        pub split_bytes: u64, default = 64 << 20
        /// A statement that reads a column some input file lacks fails, instead of reading
        /// NULL there with a warning (`--strict-schema`).
        pub strict_schema: bool, default = false
        /// A COPY replaces what its target holds even when it is another recipe's output or
        /// files tokq did not write, as `OPTIONS ('overwrite' 'true')` does (`--overwrite`).
        pub overwrite: bool, default = false
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

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::config::ConfigOptions;

    #[test]
    fn on_bad_row_is_set_and_shown_as_its_name_and_refuses_others() {
        let mut options = ConfigOptions::new();
        options.extensions.insert(TokqOptions::default());
        assert_eq!(TokqOptions::from_config(&options).on_bad_row, OnBadRow::Fail);
        options.set("tokq.on_bad_row", "skip").unwrap();
        assert_eq!(TokqOptions::from_config(&options).on_bad_row, OnBadRow::Skip);
        let shown: Vec<_> = datafusion::config::ExtensionOptions::entries(options.extensions.get::<TokqOptions>().unwrap()).into_iter().filter(|e| e.key.ends_with("on_bad_row")).map(|e| e.value).collect();
        assert_eq!(shown, vec![Some("skip".to_string())]);
        let e = options.set("tokq.on_bad_row", "ignore").unwrap_err();
        assert!(e.to_string().contains("tokq.on_bad_row must be 'fail' or 'skip', got 'ignore'"), "{e}");
    }
}
