//! Several filters over one document in one pass, as datatrove runs a pipeline of filters: each
//! sees the text the previous one kept, and the first drop decides. Words are split once and
//! shared; a filter that rewrites the text hands on the new text's words when it can derive them.

pub use super::registry::filter_by_name;
use super::{Doc, Filter, Verdict};
use crate::error::TokqError;

/// FineWeb's cascade: GopherRepetition -> GopherQuality -> C4 (terminal punctuation kept) -> FineWeb.
pub const FINEWEB: &str = "gopher_repetition; gopher_quality; c4_quality(filter_no_terminal_punct=false); fineweb_quality";

/// Filters run in order on one document, each on the text the previous kept (`quality_chain`).
#[derive(Debug)]
pub struct Chain {
    filters: Vec<Box<dyn Filter>>,
}

/// What the chain made of a document.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// (filter, reason) of the first drop.
    pub dropped: Option<(&'static str, &'static str)>,
    /// The text the filters kept, when one rewrote it.
    pub text: Option<String>,
}

impl Outcome {
    /// `filter:reason`, the rejects table's `filter_reason`.
    pub fn filter_reason(&self) -> Option<String> {
        self.dropped.map(|(f, r)| format!("{f}:{r}"))
    }
}

impl Chain {
    /// `'filter; filter(key=value, ...); ...'`, filters named as their SQL functions, or the
    /// name of a preset (`fineweb`).
    pub fn parse(spec: &str) -> Result<Self, TokqError> {
        let spec = if spec.trim().eq_ignore_ascii_case(super::registry::PRESETS[0]) { FINEWEB } else { spec };
        let mut filters = Vec::new();
        for item in spec.split(';').map(str::trim).filter(|s| !s.is_empty()) {
            let (name, params) = match item.split_once('(') {
                Some((name, rest)) => {
                    let params = rest.trim_end().strip_suffix(')').ok_or_else(|| TokqError::Argument {
                        function: "quality_chain",
                        cause: format!("'{item}': parameters must end with ')'"),
                    })?;
                    (name.trim(), params)
                }
                None => (item, ""),
            };
            filters.push(filter_by_name(name, params)?);
        }
        if filters.is_empty() {
            return Err(TokqError::Argument { function: "quality_chain", cause: "the chain names no filter".into() });
        }
        Ok(Self { filters })
    }

    /// Runs the filters until one drops the document.
    pub fn run(&self, text: &str) -> Outcome {
        self.run_from(0, &Doc::new(text), None)
    }

    fn run_from(&self, i: usize, doc: &Doc, rewritten: Option<&str>) -> Outcome {
        let Some(f) = self.filters.get(i) else {
            return Outcome { dropped: None, text: rewritten.map(str::to_string) };
        };
        match f.check(doc) {
            Verdict::Keep => self.run_from(i + 1, doc, rewritten),
            Verdict::Drop(r) => Outcome { dropped: Some((f.name(), r)), text: None },
            Verdict::Rewrite { text: t, words } => {
                let next = match words {
                    Some(words) => Doc::with_words(&t, words.into_iter().map(|r| &t[r]).collect()),
                    None => Doc::new(&t),
                };
                self.run_from(i + 1, &next, Some(&t))
            }
        }
    }
}
