//! `GopherQualityFilter` (datatrove `gopher_quality_filter.py`, Gopher paper section A.1.1).

use super::params::{field, truthy, Keys, Params};
use super::{ratio, Doc, Filter, Verdict};
use crate::error::TokqError;
use crate::text::charsets::is_symbol;
use crate::text::py;

/// datatrove's default stop words.
pub const STOP_WORDS: [&str; 8] = ["the", "be", "to", "of", "and", "that", "have", "with"];

/// datatrove's `GopherQualityFilter`, its constructor arguments as fields (`None` disables a rule).
#[derive(Debug, Clone, PartialEq)]
pub struct GopherQuality {
    /// Minimum words (non-symbol tokens).
    pub min_doc_words: Option<f64>,
    /// Maximum words.
    pub max_doc_words: Option<f64>,
    /// Minimum mean word length, in characters.
    pub min_avg_word_length: Option<f64>,
    /// Maximum mean word length.
    pub max_avg_word_length: Option<f64>,
    /// Maximum ratio of `#` to words, and of ellipses to words.
    pub max_symbol_word_ratio: Option<f64>,
    /// Maximum fraction of lines starting with a bullet.
    pub max_bullet_lines_ratio: Option<f64>,
    /// Maximum fraction of lines ending in an ellipsis.
    pub max_ellipsis_lines_ratio: Option<f64>,
    /// datatrove's (misnamed) minimum fraction of words with an alphabetic character.
    pub max_non_alpha_words_ratio: Option<f64>,
    /// Minimum stop words present.
    pub min_stop_words: Option<f64>,
    /// The stop words counted.
    pub stop_words: Vec<String>,
}

impl Default for GopherQuality {
    fn default() -> Self {
        Self {
            min_doc_words: Some(50.0),
            max_doc_words: Some(100_000.0),
            min_avg_word_length: Some(3.0),
            max_avg_word_length: Some(10.0),
            max_symbol_word_ratio: Some(0.1),
            max_bullet_lines_ratio: Some(0.9),
            max_ellipsis_lines_ratio: Some(0.3),
            max_non_alpha_words_ratio: Some(0.8),
            min_stop_words: Some(2.0),
            stop_words: STOP_WORDS.iter().map(|s| s.to_string()).collect(),
        }
    }
}

const KEYS: &Keys<GopherQuality> = &[
    field!(min_doc_words, threshold),
    field!(max_doc_words, threshold),
    field!(min_avg_word_length, threshold),
    field!(max_avg_word_length, threshold),
    field!(max_symbol_word_ratio, threshold),
    field!(max_bullet_lines_ratio, threshold),
    field!(max_ellipsis_lines_ratio, threshold),
    field!(max_non_alpha_words_ratio, threshold),
    field!(min_stop_words, threshold),
    ("stop_words", |f, _, _, v| {
        f.stop_words = v.split('|').map(|w| w.trim().to_string()).filter(|w| !w.is_empty()).collect();
        Ok(())
    }),
];

/// The numbers behind the rules.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Signals {
    /// Every spaCy token but whitespace, punctuation included.
    pub n_words: usize,
    /// Tokens with a character outside datatrove's punctuation set.
    pub n_non_symbol_words: usize,
    /// Mean length of the non-symbol words.
    pub mean_word_length: f64,
    /// `#` per word.
    pub hash_ratio: f64,
    /// `...` and `…` per word.
    pub ellipsis_ratio: f64,
    /// Fraction of lines starting with a bullet.
    pub bullet_lines_ratio: f64,
    /// Fraction of lines ending in an ellipsis.
    pub end_ellipsis_lines_ratio: f64,
    /// Fraction of words with an alphabetic character.
    pub alpha_words_ratio: f64,
    /// Stop words in the document.
    pub n_stop_words: usize,
}

impl GopherQuality {
    /// The defaults with `'key=value,...'` changes (datatrove's argument names).
    pub fn with_params(spec: &str) -> Result<Self, TokqError> {
        Params::parse("gopher_quality", spec)?.apply(KEYS, Self::default())
    }

    /// The signals of a document.
    pub fn compute(&self, doc: &Doc) -> Signals {
        let text = doc.text;
        let vocab = doc.vocab();
        let n_words = vocab.ids.len();
        let (mut n_non_symbol, mut non_symbol_chars, mut alpha) = (0usize, 0usize, 0usize);
        let mut stop = vec![false; self.stop_words.len()];
        // Most words are too long, or start with another byte, to be a stop word: told without
        // comparing them to each.
        let longest_stop = self.stop_words.iter().map(String::len).max().unwrap_or(0);
        let mut stop_starts = [false; 256];
        for s in &self.stop_words {
            // An empty stop word matches no word (words are never empty).
            if let Some(&b) = s.as_bytes().first() {
                stop_starts[usize::from(b)] = true;
            }
        }
        for (w, &count) in vocab.words.iter().zip(&vocab.counts) {
            let count = count as usize;
            if w.chars().any(|c| !is_symbol(c)) {
                n_non_symbol += count;
                non_symbol_chars += count * py::len(w);
            }
            if w.chars().any(py::isalpha) {
                alpha += count;
            }
            let maybe_stop = w.len() <= longest_stop && w.as_bytes().first().is_some_and(|&b| stop_starts[usize::from(b)]);
            if let Some(i) = maybe_stop.then(|| self.stop_words.iter().position(|s| s == w)).flatten() {
                stop[i] = true;
            }
        }
        let lines = doc.lines();
        let bullets = lines.iter().filter(|l| py::lstrip(l).starts_with(['•', '-'])).count();
        let end_ellipsis = lines.iter().filter(|l| py::rstrip(l).ends_with("...") || py::rstrip(l).ends_with('…')).count();
        Signals {
            n_words,
            n_non_symbol_words: n_non_symbol,
            mean_word_length: ratio(non_symbol_chars, n_non_symbol),
            hash_ratio: ratio(py::count(text, "#"), n_words),
            ellipsis_ratio: ratio(py::count(text, "...") + py::count(text, "…"), n_words),
            bullet_lines_ratio: ratio(bullets, lines.len()),
            end_ellipsis_lines_ratio: ratio(end_ellipsis, lines.len()),
            alpha_words_ratio: ratio(alpha, n_words),
            n_stop_words: stop.iter().filter(|&&s| s).count(),
        }
    }

    /// datatrove's rules in its order; NaN ratios (no words, no lines) fail no rule.
    pub fn decide(&self, s: &Signals) -> Option<&'static str> {
        let n = s.n_non_symbol_words as f64;
        let above = |v: f64, t: Option<f64>| truthy(t).is_some_and(|t| v > t);
        let below = |v: f64, t: Option<f64>| truthy(t).is_some_and(|t| v < t);
        [
            (below(n, self.min_doc_words), "gopher_short_doc"),
            (above(n, self.max_doc_words), "gopher_long_doc"),
            (below(s.mean_word_length, self.min_avg_word_length), "gopher_below_avg_threshold"),
            (above(s.mean_word_length, self.max_avg_word_length), "gopher_above_avg_threshold"),
            (above(s.hash_ratio, self.max_symbol_word_ratio), "gopher_too_many_hashes"),
            (above(s.ellipsis_ratio, self.max_symbol_word_ratio), "gopher_too_many_ellipsis"),
            (above(s.bullet_lines_ratio, self.max_bullet_lines_ratio), "gopher_too_many_bullets"),
            (above(s.end_ellipsis_lines_ratio, self.max_ellipsis_lines_ratio), "gopher_too_many_end_ellipsis"),
            (below(s.alpha_words_ratio, self.max_non_alpha_words_ratio), "gopher_below_alpha_threshold"),
            (below(s.n_stop_words as f64, self.min_stop_words), "gopher_enough_stop_words"),
        ]
        .into_iter()
        .find_map(|(fails, reason)| fails.then_some(reason))
    }
}

impl Filter for GopherQuality {
    fn name(&self) -> &'static str {
        "gopher_quality"
    }

    fn check(&self, doc: &Doc) -> Verdict {
        self.decide(&self.compute(doc)).map_or(Verdict::Keep, Verdict::Drop)
    }

    fn signal_names(&self) -> &'static [&'static str] {
        &[
            "n_words",
            "n_non_symbol_words",
            "mean_word_length",
            "hash_ratio",
            "ellipsis_ratio",
            "bullet_lines_ratio",
            "end_ellipsis_lines_ratio",
            "alpha_words_ratio",
            "n_stop_words",
        ]
    }

    fn signals(&self, doc: &Doc) -> Vec<f64> {
        let s = self.compute(doc);
        vec![
            s.n_words as f64,
            s.n_non_symbol_words as f64,
            s.mean_word_length,
            s.hash_ratio,
            s.ellipsis_ratio,
            s.bullet_lines_ratio,
            s.end_ellipsis_lines_ratio,
            s.alpha_words_ratio,
            s.n_stop_words as f64,
        ]
    }
}
