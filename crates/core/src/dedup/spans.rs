//! Dedup below the document, as datatrove 0.10.1's `SentenceDedup` decides it: every span of `n`
//! consecutive sentences (or lines) is hashed ([`SpanDedup::hashes`], its
//! `SentenceDedupSignature`), SQL finds the spans seen before in lineage order (its
//! `SentenceFindDedups`), and [`SpanDedup::remove`] cuts them out of the text (its
//! `SentenceDedupFilter`). Which documents then stay is SQL over `split_words` and
//! `split_sentences` (queries/sentence-dedup.sql).
//!
//! The two stages see sentences differently, and tokq keeps the difference: the hashes number the
//! sentences after empty ones are dropped (`sent_tokenize` strips them), the filter numbers
//! spaCy's sentence spans (`span_tokenize`). They differ only when a text ends in a whitespace
//! token, which is its own last sentence, so a span index means the same sentence in both.

use std::borrow::Cow;
use std::ops::Range;
use std::sync::Arc;

use super::ngrams::NgramRule;
use super::substrings::TokenSpans;
use crate::text::clean::simplify_text;
use crate::text::py;
use crate::text::sentences::sentence_ranges;
use crate::TokqError;

/// What a span is made of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// spaCy's sentences (datatrove's `split_sentences=True`, the default).
    Sentence,
    /// Python's `str.splitlines()` lines (`split_sentences=False`).
    Line,
    /// Word n-grams within `\n`-separated paragraphs, removed by share as `bff` does
    /// ([`NgramRule`]).
    Ngram,
    /// A tokenizer's tokens, struck where they repeat as Lee et al.'s exact-substring dedup
    /// strikes them ([`TokenSpans`]).
    Token,
}

impl Unit {
    /// `'sentence'`, `'line'`, `'ngram'` or `'token:SPEC'` (a tokenizer spec after the colon),
    /// any case; `function` is the SQL function the errors name.
    pub fn parse<'s>(function: &'static str, s: &'s str) -> Result<(Self, Option<&'s str>), TokqError> {
        if let Some((unit, spec)) = s.split_once(':') {
            if unit.eq_ignore_ascii_case("token") || unit.eq_ignore_ascii_case("tokens") {
                return Ok((Unit::Token, Some(spec)));
            }
        }
        match s.to_ascii_lowercase().as_str() {
            "sentence" | "sentences" => Ok((Unit::Sentence, None)),
            "line" | "lines" => Ok((Unit::Line, None)),
            "ngram" | "ngrams" => Ok((Unit::Ngram, None)),
            _ => Err(TokqError::Argument {
                function,
                cause: format!("unit must be 'sentence', 'line', 'ngram' or 'token:SPEC' (a tokenizer spec), got '{s}'"),
            }),
        }
    }
}

/// The largest span length: datatrove joins `n` sentences per hash, and a longer span finds
/// nothing a shorter one would not.
pub const MAX_N: i64 = 1000;

/// Sentence (or line) dedup with spans of `n` units, n-gram dedup with n-grams of `n` words, or
/// exact-substring dedup with windows of `n` tokens.
#[derive(Clone, Debug)]
pub struct SpanDedup {
    n: usize,
    unit: Unit,
    ngram: NgramRule,
    tokens: Option<Arc<TokenSpans>>,
}

impl SpanDedup {
    /// Spans of `n` (1 to [`MAX_N`]) units, the unit as [`Unit::parse`] reads it (a tokenizer is
    /// loaded here); `function` is the SQL function the errors name.
    pub fn new(function: &'static str, n: i64, unit: &str) -> Result<Self, TokqError> {
        let (unit, spec) = Unit::parse(function, unit)?;
        let n = match usize::try_from(n) {
            Ok(n) if (1..=MAX_N as usize).contains(&n) => n,
            _ => return Err(TokqError::Argument { function, cause: format!("n_sentences must be between 1 and {MAX_N}, got {n}") }),
        };
        let tokens = spec.map(|spec| TokenSpans::new(function, spec).map(Arc::new)).transpose()?;
        Ok(SpanDedup { n, unit, ngram: NgramRule::bff(n), tokens })
    }

    /// What a span is made of.
    pub fn unit(&self) -> Unit {
        self.unit
    }

    /// The n-gram unit's settings (checked by [`NgramRule::new`] for this size); the other units
    /// ignore them.
    pub fn with_ngram_rule(self, ngram: NgramRule) -> Self {
        SpanDedup { ngram, ..self }
    }

    /// The n-gram size, for [`NgramRule::new`].
    pub fn n(&self) -> usize {
        self.n
    }

    /// The units the hashes are taken over: spaCy's sentences stripped, empty ones dropped
    /// (`sent_tokenize`), or the lines.
    fn hashed_units<'t>(&self, text: &'t str) -> Vec<&'t str> {
        match self.unit {
            Unit::Sentence => sentence_ranges(text).into_iter().map(|r| py::strip(&text[r])).filter(|s| !s.is_empty()).collect(),
            // `hashes` hands the n-gram and token units to their rules before it asks for units.
            Unit::Line | Unit::Ngram | Unit::Token => py::splitlines(text),
        }
    }

    /// `(hash, first unit)` of every span of `n` consecutive units: xxhash64 of the units'
    /// `simplify_text` joined by one space. A span whose units all simplify to nothing has no
    /// hash; a text of fewer than `n` units has none.
    /// With the n-gram unit, [`NgramRule::hashes`]: the second of a pair is the paragraph; with
    /// the token unit, [`TokenSpans::hashes`].
    pub fn hashes(&self, text: &str) -> Vec<(u64, u32)> {
        match (self.unit, &self.tokens) {
            (Unit::Ngram, _) => return self.ngram.hashes(self.n, text),
            (Unit::Token, Some(tokens)) => return tokens.hashes(self.n, text),
            _ => {}
        }
        let units = self.hashed_units(text);
        if units.len() < self.n {
            return Vec::new();
        }
        let simple: Vec<String> = units.into_iter().map(simplify_text).collect();
        let mut gram = String::new();
        let mut out = Vec::with_capacity(simple.len() + 1 - self.n);
        for (i, window) in simple.windows(self.n).enumerate() {
            if window.iter().all(String::is_empty) {
                continue;
            }
            gram.clear();
            for (k, s) in window.iter().enumerate() {
                if k > 0 {
                    gram.push(' ');
                }
                gram.push_str(s);
            }
            // A text has fewer than 2^32 units: each is at least one byte.
            out.push((xxhash_rust::xxh64::xxh64(gram.as_bytes(), 0), i as u32));
        }
        out
    }

    /// `text` without the spans that start at `starts` (unit indices, in any order): each drops
    /// its `n` units. A sentence goes with the whitespace before it, lines are joined again with
    /// `\n`, and the result loses its leading whitespace. No start: the text as it is. With the
    /// n-gram unit, `starts` name a paragraph once per n-gram of it seen before
    /// ([`NgramRule::remove`]); with the token unit, [`TokenSpans::remove`].
    pub fn remove<'t>(&self, text: &'t str, starts: &[u32]) -> Cow<'t, str> {
        if starts.is_empty() {
            return Cow::Borrowed(text);
        }
        let units: Vec<Range<usize>> = match (self.unit, &self.tokens) {
            (Unit::Sentence, _) => sentence_ranges(text),
            (Unit::Line, _) => py::splitlines(text).into_iter().map(|l| offset(text, l)).collect(),
            (Unit::Ngram, _) => return self.ngram.remove(self.n, text, starts),
            (Unit::Token, Some(tokens)) => return tokens.remove(self.n, text, starts),
            // `new` loads a tokenizer for every token unit.
            (Unit::Token, None) => return Cow::Borrowed(text),
        };
        let line = self.unit == Unit::Line;
        let mut dropped = vec![false; units.len()];
        for &s in starts {
            let s = s as usize;
            for d in dropped.iter_mut().skip(s).take(self.n) {
                *d = true;
            }
        }
        let mut out = String::with_capacity(text.len());
        let mut from = 0;
        for (unit, drop) in units.iter().zip(dropped) {
            // A sentence from the end of the previous one: the whitespace between them too.
            let piece = if line { unit.clone() } else { from..unit.end };
            from = unit.end;
            if drop {
                continue;
            }
            if line && !out.is_empty() {
                out.push('\n');
            }
            out.push_str(&text[piece]);
        }
        Cow::Owned(py::lstrip(&out).to_string())
    }
}

/// The byte range of `part`, a slice of `text`.
fn offset(text: &str, part: &str) -> Range<usize> {
    let start = part.as_ptr() as usize - text.as_ptr() as usize;
    start..start + part.len()
}

#[cfg(test)]
mod tests {
    use super::{SpanDedup, Unit};

    fn sentences(n: i64) -> SpanDedup {
        SpanDedup::new("t", n, "sentence").unwrap()
    }

    #[test]
    fn hashes_number_the_spans_datatrove_numbers() {
        // datatrove 0.10.1: SentenceDedupSignature(...).get_hashes(Document(text, id), 0), n_sentences=3
        let text = "One here. Two there! Three, 3.5 of them? Four.";
        assert_eq!(
            sentences(3).hashes(text),
            [(1_516_531_034_840_687_133, 0), (13_038_649_360_437_191_309, 1)],
        );
        assert!(sentences(3).hashes("Only one. And two.").is_empty());
        // Spans of punctuation alone simplify to nothing and get no hash.
        assert!(sentences(1).hashes("!!! ?").is_empty());
        let lines = SpanDedup::new("t", 2, "line").unwrap();
        assert_eq!(lines.hashes("a\n\nb"), [(17_038_092_744_137_585_613, 0), (8_514_626_056_767_942_758, 1)]);
    }

    #[test]
    fn removes_spans_as_datatrove_filters_them() {
        // datatrove 0.10.1: SentenceDedupFilter.remove_dup_sentences(doc, np.array([...]))[0]
        let text = "One here. Two there! Three, 3.5 of them? Four. Five.";
        assert_eq!(sentences(3).remove(text, &[1]), "One here. Five.");
        assert_eq!(sentences(3).remove(text, &[0]), "Four. Five.");
        assert_eq!(sentences(2).remove(text, &[3, 0]), "Three, 3.5 of them?");
        assert_eq!(sentences(3).remove(text, &[]), text);
        // A removal past the last sentence changes nothing but the leading space.
        assert_eq!(sentences(3).remove(" a. b.  ", &[7]), "a. b.  ");
        let lines = SpanDedup::new("t", 2, "line").unwrap();
        assert_eq!(lines.remove("x\r\ny\nz\n\nw", &[1]), "x\n\nw");
    }

    #[test]
    fn units_and_lengths_are_checked() {
        assert_eq!(Unit::parse("t", "LINE").unwrap(), (Unit::Line, None));
        assert_eq!(Unit::parse("t", "Token:tiktoken:gpt2").unwrap(), (Unit::Token, Some("tiktoken:gpt2")));
        assert!(Unit::parse("t", "word").unwrap_err().to_string().contains("'sentence', 'line', 'ngram' or 'token:SPEC'"));
        assert!(SpanDedup::new("t", 50, "token:nowhere.json").is_err());
        let tokens = SpanDedup::new("t", 2, "token:tiktoken:cl100k_base").unwrap();
        assert_eq!(tokens.unit(), Unit::Token);
        assert_eq!(tokens.remove("hello world, again", &[1]), "hello again");
        assert!(SpanDedup::new("t", 0, "sentence").is_err());
        assert!(SpanDedup::new("t", 1001, "sentence").is_err());
    }
}
