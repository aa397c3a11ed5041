//! Quality filters with datatrove's decisions (`pipeline/filters/*.py`, version 0.10.1): each one
//! is a pure core over a [`Doc`] that returns datatrove's reason string for the first failing rule,
//! and the numbers behind its rules ("signals"). `tokq-udfs` puts them in SQL; `chain.rs` runs several
//! in one pass over a document, as FineWeb's cascade does.

pub mod c4;
pub mod chain;
pub mod fineweb;
pub mod gopher;
pub mod params;
pub mod registry;
pub mod repetition;
mod vocab;

#[cfg(test)]
mod tests;

use std::cell::OnceCell;
use std::ops::Range;

use crate::text::py;
use crate::text::words::split_words;
pub use vocab::Vocab;

/// A document under analysis: its spaCy words are split once, and its vocabulary built once,
/// when a rule first needs them.
pub struct Doc<'a> {
    /// The text as given.
    pub text: &'a str,
    words: OnceCell<Vec<&'a str>>,
    vocab: OnceCell<Vocab<'a>>,
    lines: OnceCell<Vec<&'a str>>,
}

impl<'a> Doc<'a> {
    /// A document whose words are split when first needed.
    pub fn new(text: &'a str) -> Self {
        Self { text, words: OnceCell::new(), vocab: OnceCell::new(), lines: OnceCell::new() }
    }

    /// A rewritten text whose words are known to be `words`, slices of `text` (see [`chain`]; C4
    /// locates the words by their offsets in `text`).
    pub fn with_words(text: &'a str, words: Vec<&'a str>) -> Self {
        Self { text, words: OnceCell::from(words), vocab: OnceCell::new(), lines: OnceCell::new() }
    }

    /// spaCy's words, split on first use.
    pub fn words(&self) -> &[&'a str] {
        self.words.get_or_init(|| split_words(self.text))
    }

    /// `text.splitlines()`.
    pub fn lines(&self) -> &[&'a str] {
        self.lines.get_or_init(|| py::splitlines(self.text))
    }

    /// The distinct words, built on first use.
    pub fn vocab(&self) -> &Vocab<'a> {
        self.vocab.get_or_init(|| Vocab::new(self.words()))
    }

    /// The words, if they were split already.
    pub fn words_if_split(&self) -> Option<&Vec<&'a str>> {
        self.words.get()
    }
}

/// What a filter decides about a document.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// Kept as it is.
    Keep,
    /// Kept, with the text the filter keeps (C4 drops lines) and, when the filter could carry
    /// them over from the document's, that text's words as byte ranges.
    Rewrite {
        /// The text kept.
        text: String,
        /// Its words as byte ranges of `text`, when known.
        words: Option<Vec<Range<usize>>>,
    },
    /// Dropped, with datatrove's reason.
    Drop(&'static str),
}

impl Verdict {
    /// The reason of a drop.
    pub fn reason(&self) -> Option<&'static str> {
        match self {
            Verdict::Drop(r) => Some(r),
            _ => None,
        }
    }
}

/// One quality filter: its SQL name, its decision and the numbers its rules compare.
pub trait Filter: Send + Sync + std::fmt::Debug {
    /// The SQL function name, also the `filter` part of a chain's `filter:reason`.
    fn name(&self) -> &'static str;
    /// The verdict on a document.
    fn check(&self, doc: &Doc) -> Verdict;
    /// Signal names, in the order of [`Filter::signals`]. Names starting with `n_` are counts.
    fn signal_names(&self) -> &'static [&'static str];
    /// The signals behind the verdict, in the filter's documented order.
    fn signals(&self, doc: &Doc) -> Vec<f64>;
}

/// `a / b` as Python computes it, NaN where Python would raise `ZeroDivisionError` (only reachable
/// when a rule that guards the division is disabled).
pub(crate) fn ratio(a: usize, b: usize) -> f64 {
    if b == 0 {
        f64::NAN
    } else {
        a as f64 / b as f64
    }
}
