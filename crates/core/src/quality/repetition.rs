//! `GopherRepetitionFilter` (datatrove `gopher_repetition_filter.py`, Gopher paper table A1).
//!
//! n-grams are compared by a 61-bit polynomial hash (mod 2^61-1) with their length, not as strings:
//! each n-gram costs O(1) instead of O(its length). Top n-grams are words joined by " " (words
//! never hold a space, so the word sequence decides); duplicated n-grams are words joined by ""
//! (so `["ab","c"]` equals `["a","bc"]`), hashed over the bytes of the concatenation. Two different
//! n-grams of one document collide with probability below 2^-40 for documents under 1M words.

use std::cell::OnceCell;
use std::sync::LazyLock;

use rustc_hash::{FxHashMap, FxHashSet};

use super::params::{field, truthy, Keys, Params};
use super::{ratio, Doc, Filter, Verdict, Vocab};
use crate::error::TokqError;
use crate::text::py;

/// datatrove's `GopherRepetitionFilter`, its constructor arguments as fields (`None` disables a rule).
#[derive(Debug, Clone, PartialEq)]
pub struct GopherRepetition {
    /// Maximum fraction of duplicated lines.
    pub dup_line_frac: Option<f64>,
    /// Maximum fraction of duplicated paragraphs.
    pub dup_para_frac: Option<f64>,
    /// Maximum fraction of characters in duplicated lines.
    pub dup_line_char_frac: Option<f64>,
    /// Maximum fraction of characters in duplicated paragraphs.
    pub dup_para_char_frac: Option<f64>,
    /// (n, max fraction of characters in the most frequent n-gram), ascending n.
    pub top_n_grams: Vec<(usize, Option<f64>)>,
    /// (n, max fraction of characters in repeated n-grams), ascending n.
    pub dup_n_grams: Vec<(usize, Option<f64>)>,
}

impl Default for GopherRepetition {
    fn default() -> Self {
        Self {
            dup_line_frac: Some(0.3),
            dup_para_frac: Some(0.3),
            dup_line_char_frac: Some(0.2),
            dup_para_char_frac: Some(0.2),
            top_n_grams: vec![(2, Some(0.2)), (3, Some(0.18)), (4, Some(0.16))],
            dup_n_grams: (5..=10).zip([0.15, 0.14, 0.13, 0.12, 0.11, 0.10]).map(|(n, t)| (n, Some(t))).collect(),
        }
    }
}

const MAX_N: usize = 32;

const KEYS: &Keys<GopherRepetition> = &[
    field!(dup_line_frac, threshold),
    field!(dup_para_frac, threshold),
    field!(dup_line_char_frac, threshold),
    field!(dup_para_char_frac, threshold),
];

/// `top_N_gram` and `duplicated_N_n_grams`, for N from 1 to [`MAX_N`].
fn set_n_gram(f: &mut GopherRepetition, p: &Params<'_>, k: &str, v: &str) -> Option<Result<(), TokqError>> {
    let n_of = |prefix: &str, suffix: &str| k.strip_prefix(prefix).and_then(|r| r.strip_suffix(suffix)).and_then(|n| n.parse::<usize>().ok()).filter(|n| (1..=MAX_N).contains(n));
    let (list, n) = match (n_of("top_", "_gram"), n_of("duplicated_", "_n_grams")) {
        (Some(n), _) => (&mut f.top_n_grams, n),
        (_, Some(n)) => (&mut f.dup_n_grams, n),
        _ => return None,
    };
    let t = match p.threshold(k, v) {
        Ok(t) => t,
        Err(e) => return Some(Err(e)),
    };
    match list.iter_mut().find(|(m, _)| *m == n) {
        Some(slot) => slot.1 = t,
        None => list.push((n, t)),
    }
    list.sort_by_key(|(n, _)| *n);
    Some(Ok(()))
}

/// datatrove's reason strings, `top_{n}_gram` and `duplicated_{n}_n_grams`, for every allowed n.
static REASONS: LazyLock<Vec<(String, String)>> =
    LazyLock::new(|| (0..=MAX_N).map(|n| (format!("top_{n}_gram"), format!("duplicated_{n}_n_grams"))).collect());

pub(crate) fn top_reason(n: usize) -> &'static str {
    REASONS.get(n).map_or("top_n_gram", |r| r.0.as_str())
}

pub(crate) fn dup_reason(n: usize) -> &'static str {
    REASONS.get(n).map_or("duplicated_n_n_grams", |r| r.1.as_str())
}

/// The numbers behind the rules; fractions of `len(text)` in code points.
#[derive(Debug, Clone, PartialEq)]
pub struct Signals {
    /// Fraction of duplicated paragraphs.
    pub dup_para_frac: f64,
    /// Fraction of characters in duplicated paragraphs.
    pub dup_para_char_frac: f64,
    /// Fraction of duplicated lines.
    pub dup_line_frac: f64,
    /// Fraction of characters in duplicated lines.
    pub dup_line_char_frac: f64,
    /// (n, fraction), for each configured n.
    pub top_n_grams: Vec<(usize, f64)>,
    /// (n, fraction of characters in duplicated n-grams), for each configured n.
    pub dup_n_grams: Vec<(usize, f64)>,
}

/// datatrove's `find_duplicates`: (repeated elements, their characters).
pub fn find_duplicates<'a>(items: impl IntoIterator<Item = &'a str>) -> (usize, usize) {
    let mut seen = FxHashSet::default();
    let (mut n, mut chars) = (0, 0);
    for x in items {
        if !seen.insert(x) {
            n += 1;
            chars += py::len(x);
        }
    }
    (n, chars)
}

/// Python's `re.split(r"\n{min,}", s)`: pieces between runs of at least `min` newlines.
fn split_newline_runs(s: &str, min: usize) -> Vec<&str> {
    let (bytes, mut out, mut start, mut from) = (s.as_bytes(), Vec::new(), 0, 0);
    while let Some(at) = memchr::memchr(b'\n', &bytes[from..]) {
        let i = from + at;
        let run = bytes[i..].iter().take_while(|&&b| b == b'\n').count();
        if run >= min {
            out.push(&s[start..i]);
            start = i + run;
        }
        from = i + run;
    }
    out.push(&s[start..]);
    out
}

const P: u64 = (1 << 61) - 1;
const BYTE_BASE: u64 = 0x1d3f_84a5_b7c1_2e61 % P;
const WORD_BASE: u64 = 0x0a7e_5c91_3b2d_f047 % P;

fn mul(a: u64, b: u64) -> u64 {
    let x = a as u128 * b as u128;
    let r = (x as u64 & P) + (x >> 61) as u64;
    if r >= P { r - P } else { r }
}

fn add(a: u64, b: u64) -> u64 {
    let r = a + b;
    if r >= P { r - P } else { r }
}

fn sub(a: u64, b: u64) -> u64 {
    if a >= b { a - b } else { a + P - b }
}

/// An odd base for the mod-2^64 hash of the bound, and its inverse mod 2^64 (Newton's iteration,
/// each step doubling the bits that are right: an odd number is its own inverse to 3 bits).
const QUICK_BASE: u64 = 0x2545_f491_4f6c_dd1d;
const QUICK_INVERSE: u64 = {
    let mut x = QUICK_BASE;
    let mut i = 0;
    while i < 5 {
        x = x.wrapping_mul(2u64.wrapping_sub(QUICK_BASE.wrapping_mul(x)));
        i += 1;
    }
    x
};

const POW_TABLE: usize = 4096;

/// What spreads the bound's keys over their high bits, which pick a filter's word and bits.
const MIX: u64 = 0x9E37_79B9_7F4A_7C15;

/// `base^e` under the product `mul`, by squaring.
fn power(mut base: u64, mut e: usize, mul: impl Fn(u64, u64) -> u64) -> u64 {
    let mut acc = 1u64;
    while e > 0 {
        if e & 1 == 1 {
            acc = mul(acc, base);
        }
        base = mul(base, base);
        e >>= 1;
    }
    acc
}

/// `BYTE_BASE^0 .. BYTE_BASE^(POW_TABLE - 1)` mod 2^61 - 1.
static BYTE_POW: LazyLock<Vec<u64>> = LazyLock::new(|| {
    let mut v = vec![1u64; POW_TABLE];
    for i in 1..POW_TABLE {
        v[i] = mul(v[i - 1], BYTE_BASE);
    }
    v
});

fn byte_pow(e: usize) -> u64 {
    BYTE_POW.get(e).copied().unwrap_or_else(|| power(BYTE_BASE, e, mul))
}

/// Per-word prefix sums that make any n-gram's hash and length O(1). The 61-bit hashes that
/// the exact passes compare are built on first use: when the bounds decide, as they do for most
/// documents, only the mod-2^64 hash of the bound is.
struct Grams<'v> {
    vocab: &'v Vocab<'v>,
    /// Hash of the concatenation of words[..i].
    concat: OnceCell<Vec<u64>>,
    /// Hash of the word sequence words[..i].
    seq: OnceCell<Vec<u64>>,
    /// Each distinct word's 61-bit hash of its bytes, for both of the above.
    word_hashes: OnceCell<Vec<u64>>,
    /// The mod-2^64 hash of the concatenation of words[..i], its k-th byte weighted by
    /// `QUICK_BASE^k`, for the bound: weaker than the 61-bit hashes, but cheaper. The concatenation
    /// of words[i..j] has the key `(quick[j] - quick[i]) * unshift[i]`: equal for equal
    /// concatenations (and, rarely, for others).
    quick: Vec<u64>,
    /// `QUICK_INVERSE^bytes[i] * MIX`: what moves an n-gram's part of `quick` back to weights from
    /// `QUICK_BASE^0`, so equal n-grams at any offset get equal keys without a table of powers,
    /// and spreads the key over its high bits in the same multiplication.
    unshift: Vec<u64>,
    bytes: Vec<usize>,
    chars: Vec<usize>,
    /// The largest `count(w) * (len(w) + 1)` over the distinct words.
    max_mass: usize,
}

impl<'v> Grams<'v> {
    fn new(vocab: &'v Vocab<'v>) -> Self {
        let n = vocab.ids.len() + 1;
        // Per distinct word: its bytes' weighted sum, QUICK_BASE and QUICK_INVERSE to its length,
        // its length in bytes and in characters.
        let per_word: Vec<(u64, u64, u64, usize, usize)> = vocab
            .words
            .iter()
            .map(|w| {
                let (h, up, down) = w.bytes().fold((0u64, 1u64, 1u64), |(h, up, down), x| {
                    (h.wrapping_add((x as u64 + 1).wrapping_mul(up)), up.wrapping_mul(QUICK_BASE), down.wrapping_mul(QUICK_INVERSE))
                });
                (h, up, down, w.len(), py::len(w))
            })
            .collect();
        let max_mass = per_word.iter().zip(&vocab.counts).map(|(w, &count)| count as usize * (w.4 + 1)).max().unwrap_or(0);
        let (mut quick, mut unshift) = (Vec::with_capacity(n), Vec::with_capacity(n));
        let (mut bytes, mut chars) = (Vec::with_capacity(n), Vec::with_capacity(n));
        let (mut q, mut up, mut down, mut b, mut ch) = (0u64, 1u64, 1u64, 0usize, 0usize);
        quick.push(q);
        unshift.push(down.wrapping_mul(MIX));
        bytes.push(b);
        chars.push(ch);
        for &id in &vocab.ids {
            let (h, word_up, word_down, len, c) = per_word[id as usize];
            q = q.wrapping_add(h.wrapping_mul(up));
            up = up.wrapping_mul(word_up);
            down = down.wrapping_mul(word_down);
            b += len;
            ch += c;
            quick.push(q);
            unshift.push(down.wrapping_mul(MIX));
            bytes.push(b);
            chars.push(ch);
        }
        Self { vocab, concat: OnceCell::new(), seq: OnceCell::new(), word_hashes: OnceCell::new(), quick, unshift, bytes, chars, max_mass }
    }

    fn word_hashes(&self) -> &[u64] {
        self.word_hashes.get_or_init(|| self.vocab.words.iter().map(|w| w.bytes().fold(0u64, |h, x| add(mul(h, BYTE_BASE), x as u64 + 1))).collect())
    }

    /// Prefix hashes over the words by `step(hash so far, word's hash, word's byte length)`.
    fn prefixes(&self, step: impl Fn(u64, u64, usize) -> u64) -> Vec<u64> {
        let hashes = self.word_hashes();
        let mut out = Vec::with_capacity(self.vocab.ids.len() + 1);
        let mut h = 0u64;
        out.push(h);
        for (i, &id) in self.vocab.ids.iter().enumerate() {
            h = step(h, hashes[id as usize], self.bytes[i + 1] - self.bytes[i]);
            out.push(h);
        }
        out
    }

    /// Key of the concatenation of words[i..j]: its hash and its byte length.
    fn concat_key(&self, i: usize, j: usize) -> (u64, usize) {
        let concat = self.concat.get_or_init(|| self.prefixes(|c, h, len| add(mul(c, byte_pow(len)), h)));
        let len = self.bytes[j] - self.bytes[i];
        (sub(concat[j], mul(concat[i], byte_pow(len))), len)
    }

    /// A key equal for equal concatenations of words[i..j] (and, rarely, for others).
    fn quick_key(&self, i: usize, j: usize) -> u64 {
        self.quick[j].wrapping_sub(self.quick[i]).wrapping_mul(self.unshift[i])
    }

    fn seq_key(&self, i: usize, j: usize, word_pow: u64) -> u64 {
        let seq = self.seq.get_or_init(|| self.prefixes(|s, h, len| add(mul(s, WORD_BASE), add(h, len as u64))));
        sub(seq[j], mul(seq[i], word_pow))
    }

    fn chars(&self, i: usize, j: usize) -> usize {
        self.chars[j] - self.chars[i]
    }
}

/// `find_top_duplicate(get_n_grams(words, n))`: characters of the most frequent n-gram (joined by
/// " ") times its count; `Counter.most_common(1)` breaks ties by first occurrence.
fn top_ngram_chars(g: &Grams, n_words: usize, n: usize) -> Option<usize> {
    if n == 0 || n_words < n {
        return None;
    }
    let word_pow = (0..n).fold(1u64, |acc, _| mul(acc, WORD_BASE));
    let mut counts: FxHashMap<u64, (u32, u32)> = FxHashMap::default();
    counts.reserve(n_words - n + 1);
    for i in 0..=n_words - n {
        let e = counts.entry(g.seq_key(i, i + n, word_pow)).or_insert((0, i as u32));
        e.0 += 1;
    }
    let (count, first) = counts.values().copied().max_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)))?;
    let first = first as usize;
    Some((g.chars(first, first + n) + n - 1) * count as usize)
}

/// An upper bound of [`top_ngram_chars`] from a count-min sketch: n-grams counted in a table of
/// 16-bit counters by their concatenation's key (equal word sequences have equal concatenations,
/// so each counter holds at least the count of every n-gram whose key lands there), then the
/// largest counter times characters over the n-grams. The most frequent n-gram's own position
/// gives at least its value. On most documents a frequent n-gram's characters are a small part
/// of the text, and the bound says so without the exact pass's hash map.
fn top_ngram_chars_bound(g: &Grams, n_words: usize, n: usize, counts: &mut Vec<u16>) -> usize {
    if n == 0 || n_words < n {
        return 0;
    }
    let slots = (2 * (n_words - n + 1)).next_power_of_two().max(64);
    let shift = 64 - slots.trailing_zeros();
    counts.clear();
    counts.resize(slots, 0);
    for i in 0..=n_words - n {
        let c = &mut counts[(g.quick_key(i, i + n) >> shift) as usize];
        *c = c.saturating_add(1);
    }
    (0..=n_words - n)
        .map(|i| {
            // A saturated counter bounds nothing: the n-gram may occur more often.
            let c = counts[(g.quick_key(i, i + n) >> shift) as usize];
            if c == u16::MAX { usize::MAX } else { c as usize * (g.chars(i, i + n) + n - 1) }
        })
        .max()
        .unwrap_or(0)
}

/// `find_all_duplicate(words, n)`: characters of n-grams (joined by "") seen before, skipping n
/// words after each repeat.
fn dup_ngram_chars(g: &Grams, n_words: usize, n: usize, seen: &mut FxHashSet<(u64, usize)>) -> usize {
    if n == 0 {
        return 0;
    }
    seen.clear();
    let (mut repeated, mut i) = (0, 0);
    while i + n <= n_words {
        if !seen.insert(g.concat_key(i, i + n)) {
            repeated += g.chars(i, i + n);
            i += n;
        } else {
            i += 1;
        }
    }
    repeated
}

/// An upper bound of [`dup_ngram_chars`] that costs a word test per n-gram instead of a hash-set
/// insert: the characters of the words covered by n-grams whose key's two bits (a blocked Bloom
/// filter's: both in one 64-bit word) were already set by earlier n-grams, each word counted
/// once. Every n-gram the exact pass counts has an equal earlier one, which set the same bits,
/// and the n-grams it counts do not overlap, so the bound holds. On a document without repeats
/// only false matches add to it, each covering up to `n` words: with a word per n-gram, about
/// one n-gram in a thousand. (Counting each flagged n-gram whole, with one bit in 32, counted a repeated phrase
/// of `k` words `k - n + 1` times over and a false match `n` words wide one time in 32: half of
/// Wikipedia's documents went on to the exact pass for some `n`.)
fn dup_ngram_chars_bound(g: &Grams, n_words: usize, n: usize, bits: &mut Vec<u64>) -> usize {
    if n == 0 || n_words < n {
        return 0;
    }
    // One 64-bit word per n-gram (at least 64 words), two bits of it per n-gram: the word and the
    // bits from the key's high bits, the well-mixed ones of a multiplicative hash.
    let words = (n_words - n + 1).next_power_of_two().max(64);
    bits.clear();
    bits.resize(words, 0);
    let shift = 64 - words.trailing_zeros();
    let (mut bound, mut covered) = (0, 0);
    for i in 0..=n_words - n {
        let key = g.quick_key(i, i + n);
        let word = &mut bits[(key >> shift) as usize];
        let pair = 1u64 << (key >> (shift - 6) & 63) | 1u64 << (key >> (shift - 12) & 63);
        if *word & pair == pair {
            bound += g.chars(covered.max(i), i + n);
            covered = i + n;
        }
        *word |= pair;
    }
    bound
}

impl GopherRepetition {
    /// The defaults with `'key=value,...'` changes (datatrove's argument names; `top_N_gram`, `duplicated_N_n_grams`).
    pub fn with_params(spec: &str) -> Result<Self, TokqError> {
        let patterns = format!(", top_N_gram, duplicated_N_n_grams; N from 1 to {MAX_N}");
        Params::parse("gopher_repetition", spec)?.apply_or(KEYS, Self::default(), set_n_gram, &patterns)
    }

    /// The numbers behind the rules, in datatrove's order, until `stop_after` says a rule failed:
    /// datatrove stops at the first failing rule, and so does [`GopherRepetition::check`]. When
    /// only the decision is wanted (`exact` false), n-gram numbers that provably pass their
    /// threshold, or that no rule reads, are not computed.
    fn compute(&self, doc: &Doc, exact: bool, mut stop_after: impl FnMut(&'static str, f64, Option<f64>) -> bool) -> Option<&'static str> {
        let text = doc.text;
        let len = py::len(text);
        let paragraphs = split_newline_runs(py::strip(text), 2);
        let (dup, chars) = find_duplicates(paragraphs.iter().copied());
        if stop_after("dup_para_frac", ratio(dup, paragraphs.len()), self.dup_para_frac)
            || stop_after("dup_para_char_frac", ratio(chars, len), self.dup_para_char_frac)
        {
            return None;
        }
        let lines = split_newline_runs(text, 1);
        let (dup, chars) = find_duplicates(lines.iter().copied());
        if stop_after("dup_line_frac", ratio(dup, lines.len()), self.dup_line_frac)
            || stop_after("dup_line_char_frac", ratio(chars, len), self.dup_line_char_frac)
        {
            return None;
        }
        let vocab = doc.vocab();
        let n_words = vocab.ids.len();
        let grams = Grams::new(vocab);
        let mut counts = Vec::new();
        for &(n, t) in &self.top_n_grams {
            // The most frequent n-gram occurs at most as often as each of its words, so it covers at
            // most n * max_mass characters; where that is too coarse, the sketch's bound decides.
            if !exact && truthy(t).is_none_or(|t| ratio(n * grams.max_mass, len) <= t || ratio(top_ngram_chars_bound(&grams, n_words, n, &mut counts), len) <= t) {
                continue;
            }
            let frac = top_ngram_chars(&grams, n_words, n).map_or(f64::NAN, |c| ratio(c, len));
            if stop_after(top_reason(n), frac, t) {
                return None;
            }
        }
        let mut seen = FxHashSet::default();
        let mut bits = Vec::new();
        for &(n, t) in &self.dup_n_grams {
            if !exact {
                // A rule without a threshold is not checked; one whose bound passes is passed.
                match truthy(t) {
                    None => continue,
                    Some(t) if ratio(dup_ngram_chars_bound(&grams, n_words, n, &mut bits), len) <= t => continue,
                    Some(_) => {}
                }
            }
            if stop_after(dup_reason(n), ratio(dup_ngram_chars(&grams, n_words, n, &mut seen), len), t) {
                return None;
            }
        }
        None
    }

    /// The signals of a document.
    pub fn compute_signals(&self, doc: &Doc) -> Signals {
        let mut v = Vec::new();
        self.compute(doc, true, |name, value, _| {
            v.push((name, value));
            false
        });
        let get = |name: &str| v.iter().find(|(n, _)| *n == name).map_or(f64::NAN, |x| x.1);
        Signals {
            dup_para_frac: get("dup_para_frac"),
            dup_para_char_frac: get("dup_para_char_frac"),
            dup_line_frac: get("dup_line_frac"),
            dup_line_char_frac: get("dup_line_char_frac"),
            top_n_grams: self.top_n_grams.iter().map(|&(n, _)| (n, get(top_reason(n)))).collect(),
            dup_n_grams: self.dup_n_grams.iter().map(|&(n, _)| (n, get(dup_reason(n)))).collect(),
        }
    }
}

impl Filter for GopherRepetition {
    fn name(&self) -> &'static str {
        "gopher_repetition"
    }

    fn check(&self, doc: &Doc) -> Verdict {
        if doc.text.is_empty() {
            return Verdict::Drop("empty");
        }
        let mut reason = None;
        self.compute(doc, false, |name, value, t| {
            // NaN (no n-grams of this size) fails no rule, like datatrove's `continue`.
            let fails = truthy(t).is_some_and(|t| value > t);
            if fails {
                reason = Some(name);
            }
            fails
        });
        reason.map_or(Verdict::Keep, Verdict::Drop)
    }

    fn signal_names(&self) -> &'static [&'static str] {
        &[
            "dup_para_frac",
            "dup_para_char_frac",
            "dup_line_frac",
            "dup_line_char_frac",
            "top_2_gram",
            "top_3_gram",
            "top_4_gram",
            "duplicated_5_n_grams",
            "duplicated_6_n_grams",
            "duplicated_7_n_grams",
            "duplicated_8_n_grams",
            "duplicated_9_n_grams",
            "duplicated_10_n_grams",
        ]
    }

    /// The signals of the default n-gram sizes (the struct's fields are fixed).
    fn signals(&self, doc: &Doc) -> Vec<f64> {
        let s = Self::default().compute_signals(doc);
        [s.dup_para_frac, s.dup_para_char_frac, s.dup_line_frac, s.dup_line_char_frac]
            .into_iter()
            .chain(s.top_n_grams.iter().chain(&s.dup_n_grams).map(|x| x.1))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The bound never falls below the exact count, so a document it passes passes.
        #[test]
        fn the_bound_holds(words in proptest::collection::vec(prop::sample::select(vec!["a", "b", "ab", "c", "bc", "abc", "é", "d"]), 0..400), n in 1usize..12) {
            let text = words.join(" ");
            let doc = Doc::new(&text);
            let vocab = doc.vocab();
            let g = Grams::new(vocab);
            let n_words = vocab.ids.len();
            let exact = dup_ngram_chars(&g, n_words, n, &mut FxHashSet::default());
            let bound = dup_ngram_chars_bound(&g, n_words, n, &mut Vec::new());
            prop_assert!(bound >= exact, "bound {bound} < exact {exact}");
        }
    }

    proptest! {
        /// The sketch's bound never falls below the most frequent n-gram's characters.
        #[test]
        fn the_top_bound_holds(words in proptest::collection::vec(prop::sample::select(vec!["a", "b", "ab", "c", "bc", "abc", "é", "d"]), 0..400), n in 1usize..6) {
            let text = words.join(" ");
            let doc = Doc::new(&text);
            let g = Grams::new(doc.vocab());
            let n_words = doc.vocab().ids.len();
            let exact = top_ngram_chars(&g, n_words, n).unwrap_or(0);
            let bound = top_ngram_chars_bound(&g, n_words, n, &mut Vec::new());
            prop_assert!(bound >= exact, "bound {bound} < exact {exact}");
        }
    }

    proptest! {
        /// `re.split(r"\n{min,}", s)`, as Python computes it for these strings (parts that are not
        /// empty, so that two runs never meet).
        #[test]
        fn newline_runs_split_as_python_does(parts in proptest::collection::vec("[ab ]{1,3}", 1..8), runs in proptest::collection::vec(1usize..4, 7), min in 1usize..3) {
            let mut text = parts[0].clone();
            for (part, &run) in parts[1..].iter().zip(&runs) {
                text.push_str(&"\n".repeat(run));
                text.push_str(part);
            }
            let mut want = vec![parts[0].clone()];
            for (part, &run) in parts[1..].iter().zip(&runs) {
                match run >= min {
                    true => want.push(part.clone()),
                    false => if let Some(last) = want.last_mut() {
                        last.push_str(&"\n".repeat(run));
                        last.push_str(part);
                    },
                }
            }
            prop_assert_eq!(split_newline_runs(&text, min), want);
        }
    }

    #[test]
    fn the_bound_of_a_document_without_repeats_is_small() {
        let text: String = (0..5000).map(|i| format!("w{i} ")).collect();
        let doc = Doc::new(&text);
        let g = Grams::new(doc.vocab());
        let bound = dup_ngram_chars_bound(&g, doc.vocab().ids.len(), 5, &mut Vec::new());
        assert!(ratio(bound, text.chars().count()) < 0.05, "{bound}");
    }

    #[test]
    fn a_repeated_phrase_counts_its_words_once_in_the_bound() {
        let unique = |from: usize| (from..from + 1000).map(|i| format!("w{i} ")).collect::<String>();
        let phrase: String = (0..30).map(|i| format!("p{i} ")).collect();
        let text = format!("{}{phrase}{}{phrase}{}", unique(0), unique(1000), unique(2000));
        let doc = Doc::new(&text);
        let (g, n_words) = (Grams::new(doc.vocab()), doc.vocab().ids.len());
        let exact = dup_ngram_chars(&g, n_words, 5, &mut FxHashSet::default());
        let bound = dup_ngram_chars_bound(&g, n_words, 5, &mut Vec::new());
        // Each of the phrase's 26 repeated 5-grams counted whole would add 2.5% of the text.
        assert!(exact > 0 && bound >= exact && ratio(bound - exact, text.chars().count()) < 0.005, "{bound} {exact}");
    }
}
