//! `C4QualityFilter` (datatrove `c4_filters.py`, C4 paper section 2.2): drops lines, then the
//! document if too few sentences remain, and keeps the remaining lines as the new text.

use std::borrow::Cow;
use std::ops::Range;
use std::sync::LazyLock;

use aho_corasick::AhoCorasick;
use regex::Regex;

use super::params::{field, Keys, Params};
use super::{Doc, Filter, Verdict};
use crate::error::TokqError;
use crate::text::py;
use crate::text::sentences::{count_sentences, split_sentences};
use crate::text::words::split_words;

static CITATION: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\[\d*]|\[edit]|\[citation needed]").unwrap_or_else(|e| panic!("citation pattern: {e}")));
const END_PUNCTUATION: [char; 5] = ['.', '?', '!', '"', '\''];
/// datatrove looks for these in `line.lower()`: "lorem ipsum", "javascript", then the policy phrases.
const PHRASES: [&str; 8] = ["lorem ipsum", "javascript", "terms of use", "privacy policy", "cookie policy", "uses cookies", "use of cookies", "use cookies"];
const LOREM: u8 = 1;
const JAVASCRIPT: u8 = 2;
const POLICY: u8 = 4;

static SEARCH: LazyLock<AhoCorasick> = LazyLock::new(|| {
    AhoCorasick::builder().ascii_case_insensitive(true).build(PHRASES).unwrap_or_else(|e| panic!("C4 phrases: {e}"))
});

/// Which of the phrases `line.lower()` contains. Python's `lower()` turns only ASCII capitals, the
/// Kelvin sign (into `k`) and `İ` (into `i` and a combining dot, so never part of a match) into
/// ASCII: an ASCII case-insensitive search is exact unless the line holds a Kelvin sign.
fn phrases(line: &str) -> u8 {
    let bit = |i: usize| [LOREM, JAVASCRIPT].get(i).copied().unwrap_or(POLICY);
    if line.contains('\u{212A}') {
        let lower = line.to_lowercase();
        return PHRASES.iter().enumerate().filter(|(_, p)| lower.contains(*p)).fold(0, |m, (i, _)| m | bit(i));
    }
    SEARCH.find_overlapping_iter(line).fold(0, |m, hit| m | bit(hit.pattern().as_usize()))
}

/// datatrove's `C4QualityFilter`, its constructor arguments as fields.
#[derive(Debug, Clone, PartialEq)]
pub struct C4Quality {
    /// Lines are `splitlines()`; otherwise spaCy sentences, joined back with " ".
    pub split_paragraph: bool,
    /// Drop Wikipedia-style citation marks (`[1]`, `[citation needed]`).
    pub remove_citations: bool,
    /// Drop lines that do not end in terminal punctuation.
    pub filter_no_terminal_punct: bool,
    /// -1 disables.
    pub min_num_sentences: i64,
    /// Drop lines with fewer words (-1 disables).
    pub min_words_per_line: i64,
    /// -1 disables.
    pub max_word_length: i64,
    /// Drop documents with "lorem ipsum".
    pub filter_lorem_ipsum: bool,
    /// Drop lines that mention "javascript".
    pub filter_javascript: bool,
    /// Drop documents with `{`.
    pub filter_curly_bracket: bool,
    /// Drop lines with cookie and privacy-policy phrases.
    pub filter_policy: bool,
}

impl Default for C4Quality {
    fn default() -> Self {
        Self {
            split_paragraph: true,
            remove_citations: true,
            filter_no_terminal_punct: true,
            min_num_sentences: 5,
            min_words_per_line: 3,
            max_word_length: 1000,
            filter_lorem_ipsum: true,
            filter_javascript: true,
            filter_curly_bracket: true,
            filter_policy: true,
        }
    }
}

const KEYS: &Keys<C4Quality> = &[
    field!(split_paragraph, flag),
    field!(remove_citations, flag),
    field!(filter_no_terminal_punct, flag),
    field!(min_num_sentences, integer),
    field!(min_words_per_line, integer),
    field!(max_word_length, integer),
    field!(filter_lorem_ipsum, flag),
    field!(filter_javascript, flag),
    field!(filter_curly_bracket, flag),
    field!(filter_policy, flag),
];

/// What C4 made of a document.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// datatrove's reason when the document is dropped.
    pub reason: Option<&'static str>,
    /// The kept lines joined, when the document is kept.
    pub text: Option<String>,
    /// Lines (or sentences) before the rules.
    pub n_lines: usize,
    /// Lines kept.
    pub n_kept_lines: usize,
    /// Sentences in the kept lines.
    pub n_sentences: usize,
}

impl C4Quality {
    /// The defaults with `'key=value,...'` changes (datatrove's argument names).
    pub fn with_params(spec: &str) -> Result<Self, TokqError> {
        Params::parse("c4_quality", spec)?.apply(KEYS, Self::default())
    }

    /// Runs C4 and counts every sentence of the kept lines (for the signals).
    pub fn run(&self, text: &str) -> Outcome {
        self.run_counting(&Doc::new(text), true).0
    }

    /// The text C4 keeps, NULL when it drops the document.
    pub fn kept_text(&self, text: &str) -> Option<String> {
        self.run_counting(&Doc::new(text), false).0.text
    }

    /// With `count_all` false, sentences are counted only until `min_num_sentences` is reached:
    /// the decision needs no more, and counting means tokenizing every kept line. Also returns
    /// the kept lines, borrowed from `text` unless a citation was cut out of them.
    fn run_counting<'t>(&self, doc: &Doc<'t>, count_all: bool) -> (Outcome, Vec<Cow<'t, str>>) {
        let sentences;
        let lines = if self.split_paragraph {
            doc.lines()
        } else {
            sentences = split_sentences(doc.text);
            &sentences
        };
        let mut out = Outcome { reason: None, text: None, n_lines: lines.len(), n_kept_lines: 0, n_sentences: 0 };
        let mut kept: Vec<Cow<str>> = Vec::new();
        // No word can be too long within this many bytes (-1: no limit; other negative limits
        // make every word too long, which only the split below says).
        let limit = match self.max_word_length {
            -1 => Some(usize::MAX),
            m => usize::try_from(m).ok(),
        };
        for &line in lines {
            let line = py::strip(line);
            let (mut n_words, mut too_long) = (0i64, false);
            match limit.and_then(|limit| py::count_words_within(line, limit)) {
                Some(n) => n_words = n as i64,
                None => {
                    for w in py::split_whitespace(line) {
                        n_words += 1;
                        // A word has at most as many characters as bytes: only long ones are counted.
                        too_long |= self.max_word_length != -1 && w.len() as i64 > self.max_word_length && py::len(w) as i64 > self.max_word_length;
                    }
                }
            }
            if too_long {
                continue;
            }
            let line = if self.remove_citations { CITATION.replace_all(line, "") } else { line.into() };
            if self.filter_no_terminal_punct && (!line.ends_with(END_PUNCTUATION) || line.ends_with("...")) {
                continue;
            }
            if n_words < self.min_words_per_line {
                continue;
            }
            let found = phrases(&line);
            if self.filter_lorem_ipsum && found & LOREM != 0 {
                out.reason = Some("lorem_ipsum");
                return (out, kept);
            }
            if self.filter_javascript && found & JAVASCRIPT != 0 {
                continue;
            }
            if self.filter_curly_bracket && line.contains('{') {
                out.reason = Some("curly_bracket");
                return (out, kept);
            }
            if self.filter_policy && found & POLICY != 0 {
                continue;
            }
            if self.min_num_sentences != -1 && (count_all || (out.n_sentences as i64) < self.min_num_sentences) {
                out.n_sentences += if self.split_paragraph { count_sentences(&line) } else { 1 };
            }
            kept.push(line);
        }
        out.n_kept_lines = kept.len();
        if (out.n_sentences as i64) < self.min_num_sentences {
            out.reason = Some("too_few_sentences");
            return (out, kept);
        }
        let joined = kept.join(if self.split_paragraph { "\n" } else { " " });
        out.text = Some(py::strip(&joined).to_string());
        (out, kept)
    }
}

/// Bytes that stripping takes off the front of the kept lines joined by newlines: lines are
/// stripped before citations are cut, so a line can still start with whitespace.
fn lead(kept: &[Cow<str>]) -> usize {
    let mut lead = 0;
    for line in kept {
        let rest = py::lstrip(line);
        if !rest.is_empty() {
            return lead + line.len() - rest.len();
        }
        lead += line.len() + 1;
    }
    lead
}

/// The words of the kept text (`kept` joined by newlines, then stripped by `lead` bytes) as
/// ranges in it. spaCy's words depend on each whitespace-separated span alone, and a kept line is
/// whole spans: where the line is a slice of the document, its words are the document's words
/// there; a line with a citation cut out is split afresh.
fn kept_words(text: &str, words: &[&str], kept: &[Cow<str>], lead: usize) -> Vec<Range<usize>> {
    let offset = |outer: &str, inner: &str| inner.as_ptr() as usize - outer.as_ptr() as usize;
    let starts: Vec<usize> = words.iter().map(|w| offset(text, w)).collect();
    let mut out = Vec::with_capacity(words.len());
    let mut pos = 0;
    for line in kept {
        // `pos + rel` is never below `lead`: stripping takes only whitespace, words come after it.
        let place = |rel: usize, len: usize| pos + rel - lead..pos + rel - lead + len;
        match line {
            Cow::Borrowed(l) => {
                let o = offset(text, l);
                let (from, to) = (starts.partition_point(|&s| s < o), starts.partition_point(|&s| s < o + l.len()));
                out.extend((from..to).map(|i| place(starts[i] - o, words[i].len())));
            }
            Cow::Owned(l) => out.extend(split_words(l).into_iter().map(|w| place(offset(l, w), w.len()))),
        }
        pos += line.len() + 1;
    }
    out
}

impl Filter for C4Quality {
    fn name(&self) -> &'static str {
        "c4_quality"
    }

    fn check(&self, doc: &Doc) -> Verdict {
        let (o, kept) = self.run_counting(doc, false);
        match (o.reason, o.text) {
            (Some(r), _) => Verdict::Drop(r),
            (None, Some(t)) if t != doc.text => {
                // Sentences (split_paragraph=false) can cut a span in two, so their words are not carried.
                let carried = doc.words_if_split().filter(|_| self.split_paragraph);
                let words = carried.map(|w| kept_words(doc.text, w, &kept, lead(&kept)));
                Verdict::Rewrite { text: t, words }
            }
            _ => Verdict::Keep,
        }
    }

    fn signal_names(&self) -> &'static [&'static str] {
        &["n_lines", "n_kept_lines", "n_sentences"]
    }

    fn signals(&self, doc: &Doc) -> Vec<f64> {
        // Counted over every line, so that a doc-level rule does not hide the counts.
        let all = Self { filter_lorem_ipsum: false, filter_curly_bracket: false, ..self.clone() };
        let o = all.run(doc.text);
        vec![o.n_lines as f64, o.n_kept_lines as f64, o.n_sentences as f64]
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::{phrases, PHRASES};

    fn by_lowercase(line: &str) -> Vec<bool> {
        let lower = line.to_lowercase();
        PHRASES.iter().map(|p| lower.contains(p)).collect()
    }

    proptest! {
        /// The case-insensitive search finds what `line.lower()` contains, Kelvin signs and dotted
        /// capital I included.
        #[test]
        fn phrase_search_matches_lowercase(line in "(Lorem IPSUM|JavaScript|TERMS of Use|privacy policy|COO\u{212A}IE Policy|uses cookies|use of co\u{212A}ies|USE COOKIES|İ|ſ|K|k|[a-zA-Z ]{0,4}){0,6}") {
            let want = by_lowercase(&line);
            let bits = [want[0] as u8, (want[1] as u8) << 1, (want[2..].iter().any(|&b| b) as u8) << 2];
            prop_assert_eq!(phrases(&line), bits.iter().fold(0, |m, b| m | b));
        }
    }
}
