//! `FineWebQualityFilter` (datatrove `fineweb_quality_filter.py`).

use super::params::{field, Keys, Params};
use super::repetition::find_duplicates;
use super::{ratio, Doc, Filter, Verdict};
use crate::error::TokqError;
use crate::text::charsets::is_terminal_punctuation;
use crate::text::py;

/// datatrove's `FineWebQualityFilter`, its constructor arguments as fields.
#[derive(Debug, Clone, PartialEq)]
pub struct FineWebQuality {
    /// Minimum fraction of lines ending in terminal punctuation (`None` disables).
    pub line_punct_thr: Option<f64>,
    /// Do not apply the punctuation rule when no line ends in punctuation.
    pub line_punct_exclude_zero: bool,
    /// Maximum fraction of short lines.
    pub short_line_thr: Option<f64>,
    /// A line this long or shorter, in characters, is short.
    pub short_line_length: usize,
    /// Maximum fraction of characters in duplicated lines.
    pub char_duplicates_ratio: Option<f64>,
    /// Maximum newlines per word.
    pub new_line_ratio: Option<f64>,
}

impl Default for FineWebQuality {
    fn default() -> Self {
        Self {
            line_punct_thr: Some(0.12),
            line_punct_exclude_zero: false,
            short_line_thr: Some(0.67),
            short_line_length: 30,
            char_duplicates_ratio: Some(0.01),
            new_line_ratio: Some(0.3),
        }
    }
}

const KEYS: &Keys<FineWebQuality> = &[
    field!(line_punct_thr, threshold),
    field!(line_punct_exclude_zero, flag),
    field!(short_line_thr, threshold),
    field!(short_line_length, count),
    field!(char_duplicates_ratio, threshold),
    field!(new_line_ratio, threshold),
];

/// The numbers behind the rules.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Signals {
    /// Lines with a non-whitespace character.
    pub n_lines: usize,
    /// Fraction of lines ending in terminal punctuation.
    pub line_punct_ratio: f64,
    /// Fraction of short lines.
    pub short_line_ratio: f64,
    /// Fraction of characters in duplicated lines.
    pub char_dup_ratio: f64,
    /// Newlines per word.
    pub list_ratio: f64,
}

impl FineWebQuality {
    /// The defaults with `'key=value,...'` changes (datatrove's argument names).
    pub fn with_params(spec: &str) -> Result<Self, TokqError> {
        Params::parse("fineweb_quality", spec)?.apply(KEYS, Self::default())
    }

    /// The line signals; the word count only when the line rules pass, as datatrove computes it.
    fn compute(&self, doc: &Doc, words: bool) -> Signals {
        let text = doc.text;
        let lines: Vec<&str> = text.split('\n').filter(|l| !py::strip(l).is_empty()).collect();
        let ends = lines.iter().filter(|l| l.chars().next_back().is_some_and(is_terminal_punctuation)).count();
        // A line has at most as many characters as bytes and at least a quarter as many: only
        // lines in between are counted.
        let n = self.short_line_length;
        let short = lines.iter().filter(|l| l.len() <= n || (l.len() <= n.saturating_mul(4) && py::len(l) <= n)).count();
        let newlines = text.bytes().filter(|&b| b == b'\n').count();
        Signals {
            n_lines: lines.len(),
            line_punct_ratio: ratio(ends, lines.len()),
            short_line_ratio: ratio(short, lines.len()),
            char_dup_ratio: ratio(find_duplicates(lines.iter().copied()).1, py::len(text) - newlines),
            list_ratio: if words { ratio(newlines, doc.words().len()) } else { f64::NAN },
        }
    }

    fn decide_lines(&self, s: &Signals) -> Option<&'static str> {
        if s.n_lines == 0 {
            return Some("empty");
        }
        let r = s.line_punct_ratio;
        if self.line_punct_thr.is_some_and(|t| r < t) && !(r == 0.0 && self.line_punct_exclude_zero) {
            return Some("line_punct_ratio");
        }
        if self.short_line_thr.is_some_and(|t| s.short_line_ratio > t) {
            return Some("short_line_ratio");
        }
        if self.char_duplicates_ratio.is_some_and(|t| s.char_dup_ratio > t) {
            return Some("char_dup_ratio");
        }
        None
    }
}

impl Filter for FineWebQuality {
    fn name(&self) -> &'static str {
        "fineweb_quality"
    }

    fn check(&self, doc: &Doc) -> Verdict {
        let s = self.compute(doc, false);
        if let Some(r) = self.decide_lines(&s) {
            return Verdict::Drop(r);
        }
        let list_ratio = ratio(doc.text.bytes().filter(|&b| b == b'\n').count(), doc.words().len());
        match self.new_line_ratio.is_some_and(|t| list_ratio > t) {
            true => Verdict::Drop("list_ratio"),
            false => Verdict::Keep,
        }
    }

    fn signal_names(&self) -> &'static [&'static str] {
        &["n_lines", "line_punct_ratio", "short_line_ratio", "char_dup_ratio", "list_ratio"]
    }

    fn signals(&self, doc: &Doc) -> Vec<f64> {
        let s = self.compute(doc, true);
        vec![s.n_lines as f64, s.line_punct_ratio, s.short_line_ratio, s.char_dup_ratio, s.list_ratio]
    }
}
