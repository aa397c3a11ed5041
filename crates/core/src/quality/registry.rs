//! The one list of quality filters. `quality_chain`, the SQL function list and the function
//! reference all read it, so a filter added here is available and documented everywhere.

use super::c4::C4Quality;
use super::fineweb::FineWebQuality;
use super::gopher::GopherQuality;
use super::repetition::GopherRepetition;
use super::Filter;
use crate::error::{did_you_mean, TokqError};

/// A quality filter as tokq knows it.
pub struct FilterInfo {
    /// The SQL function name, also the `filter` part of a chain's `filter:reason`.
    pub name: &'static str,
    /// The SQL name of its signals function (`{name}_signals`).
    pub signals: &'static str,
    /// The datatrove step whose decisions it reproduces.
    pub datatrove: &'static str,
    /// What it checks, for the function reference.
    pub checks: &'static str,
    build: fn(&str) -> Result<Box<dyn Filter>, TokqError>,
}

impl FilterInfo {
    /// The filter with its rule parameters (`'min_doc_words=20,stop_words=the|a'`); an unknown
    /// key is an error that lists the known ones.
    pub fn build(&self, params: &str) -> Result<Box<dyn Filter>, TokqError> {
        (self.build)(params)
    }
}

/// Every quality filter, in FineWeb's cascade order.
pub const FILTERS: &[FilterInfo] = &[
    FilterInfo {
        name: "gopher_repetition",
        signals: "gopher_repetition_signals",
        datatrove: "GopherRepetitionFilter",
        checks: "duplicated lines and paragraphs (by count and by characters), the share of the text in the most frequent 2- to 4-grams, and in duplicated 5- to 10-grams",
        build: |p| Ok(Box::new(GopherRepetition::with_params(p)?)),
    },
    FilterInfo {
        name: "gopher_quality",
        signals: "gopher_quality_signals",
        datatrove: "GopherQualityFilter",
        checks: "word count, mean word length, symbol-to-word ratio, bullet and ellipsis line ratios, alphabetic words and stop words",
        build: |p| Ok(Box::new(GopherQuality::with_params(p)?)),
    },
    FilterInfo {
        name: "c4_quality",
        signals: "c4_quality_signals",
        datatrove: "C4QualityFilter",
        checks: "C4's line rules (terminal punctuation, short lines, javascript, policy lines, word lengths) and document rules (lorem ipsum, curly brackets, too few sentences)",
        build: |p| Ok(Box::new(C4Quality::with_params(p)?)),
    },
    FilterInfo {
        name: "fineweb_quality",
        signals: "fineweb_quality_signals",
        datatrove: "FineWebQualityFilter",
        checks: "the share of lines ending in punctuation, of short lines, of characters in duplicated lines, and newlines per word",
        build: |p| Ok(Box::new(FineWebQuality::with_params(p)?)),
    },
];

/// The names `quality_chain` takes for a whole chain (`chain::FINEWEB`).
pub const PRESETS: &[&str] = &["fineweb"];

/// The filter named `name`, with its parameters.
pub fn filter_by_name(name: &str, params: &str) -> Result<Box<dyn Filter>, TokqError> {
    match FILTERS.iter().find(|f| f.name == name) {
        Some(f) => f.build(params),
        None => {
            let names = FILTERS.iter().map(|f| f.name);
            let hint = did_you_mean(name, names.clone().chain(PRESETS.iter().copied())).map(|n| format!("did you mean '{n}'? ")).unwrap_or_default();
            Err(TokqError::Argument {
                function: "quality_chain",
                cause: format!("unknown filter '{name}': {hint}filters: {}; presets: {}", names.collect::<Vec<_>>().join(", "), PRESETS.join(", ")),
            })
        }
    }
}
