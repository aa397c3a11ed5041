//! English word splitting that matches spaCy's blank English tokenizer, as datatrove's
//! `SpaCyTokenizer("en").word_tokenize` uses it: the word counts, ratios and n-grams of the Gopher
//! and FineWeb rules are computed over these words, so every boundary must be the same.
//!
//! The algorithm follows spaCy 3.8's `Tokenizer` (`tokenizer.pyx`): split on whitespace, then peel
//! prefixes and suffixes off each span while checking the special cases, then split infixes, then
//! re-match special cases that span several tokens. The patterns and special cases are spaCy's own,
//! written to `spacy_en/` by `tests/parity/gen_spacy_en.py`.

use rustc_hash::FxHashMap as HashMap;
use std::ops::Range;
use std::sync::LazyLock;

use fancy_regex::Regex;

use super::affix::Alternation;
use super::pieces::for_each_piece;
use super::py::isspace;

struct Rules {
    prefix: Alternation,
    suffix: Alternation,
    infix: Alternation,
    url: Regex,
    specials: HashMap<String, Vec<String>>,
    /// One bit per [`filter_bit`] of each special case: most spans are no special case, and
    /// one bit tells most of them so without hashing the span.
    special_bits: SpanFilter,
    /// Special cases that affix splitting would cut: their token sequence (as split without
    /// special cases), indexed by the first token.
    phrases: HashMap<String, Vec<(Vec<String>, String)>>,
    /// [`filter_bit`]s of the phrases' first tokens, as `special_bits` is for the special cases:
    /// the phrase pass looks up every token that touches the next (`word` of `word,`).
    phrase_bits: SpanFilter,
}


static EN: LazyLock<Rules> = LazyLock::new(|| {
    let specials: HashMap<String, Vec<String>> =
        serde_json::from_str(include_str!("spacy_en/specials.json")).unwrap_or_else(|e| panic!("spacy_en/specials.json: {e}"));
    let mut rules = Rules {
        prefix: Alternation::new(include_str!("spacy_en/prefix.re")),
        suffix: Alternation::new(include_str!("spacy_en/suffix.re")),
        infix: Alternation::new(include_str!("spacy_en/infix.re")),
        // The URL pattern has negative look-aheads over repeated groups: a backtracking engine,
        // called only on spans that contain a dot (every URL it accepts does).
        url: Regex::new(include_str!("spacy_en/url.re")).unwrap_or_else(|e| panic!("spaCy URL pattern: {e}")),
        special_bits: SpanFilter::default(),
        phrase_bits: SpanFilter::default(),
        specials,
        phrases: HashMap::default(),
    };
    for key in rules.specials.keys() {
        rules.special_bits.insert(key);
    }
    let mut phrases: HashMap<String, Vec<(Vec<String>, String)>> = HashMap::default();
    for key in rules.specials.keys() {
        let cut = rules.find_prefix(key) > 0 || rules.find_suffix(key) > 0 || rules.has_infix(key) || key.contains(' ');
        if cut {
            let mut spans = Vec::new();
            rules.tokenize(key, &mut spans, false);
            let tokens: Vec<String> = spans.into_iter().map(|r| key[r].to_string()).collect();
            // A one-token phrase whose special case is that token changes nothing.
            if tokens.len() == 1 && rules.specials.get(key) == Some(&tokens) {
                continue;
            }
            assert!(tokens.len() > 1, "spaCy special case {key:?} is one token that splits: `apply_phrases` assumes none");
            assert!(!tokens.iter().any(|t| is_space_token(t)), "spaCy special case {key:?} holds a whitespace token: `tokens_for_words` assumes none");
            if let Some(first) = tokens.first() {
                phrases.entry(first.clone()).or_default().push((tokens, key.clone()));
            }
        }
    }
    for first in phrases.keys() {
        rules.phrase_bits.insert(first);
    }
    rules.phrases = phrases;
    rules
});

/// Punctuation that `quick_span` splits off the front and the back of a span.
const QUICK_LEAD: &str = "\"([“'";
const QUICK_TRAIL: &str = ",.;:!?)]\"”'";

const SPAN_CACHE_ENTRIES: usize = 1 << 16;
const SPAN_CACHE_MAX_LEN: usize = 64;

type SpanCache = HashMap<String, Vec<(u32, u32)>>;

thread_local! {
    static SPAN_CACHE: std::cell::RefCell<SpanCache> = Default::default();
}

/// One bit per [`filter_bit`] of each span inserted: a span whose bit is clear was never
/// inserted, which most spans are told without hashing them.
struct SpanFilter(Box<[u64; 1024]>);

impl Default for SpanFilter {
    fn default() -> Self {
        Self(Box::new([0; 1024]))
    }
}

impl SpanFilter {
    fn insert(&mut self, s: &str) {
        let bit = filter_bit(s);
        self.0[bit / 64] |= 1 << (bit % 64);
    }

    #[inline]
    fn may_hold(&self, s: &str) -> bool {
        let bit = filter_bit(s);
        self.0[bit / 64] & (1 << (bit % 64)) != 0
    }
}

/// A 16-bit digest of a span's length and first, second and last bytes: where its bit in a
/// [`SpanFilter`] is.
#[inline]
fn filter_bit(s: &str) -> usize {
    let b = s.as_bytes();
    let at = |i: usize| u64::from(b.get(i).copied().unwrap_or(0));
    let x = (b.len() as u64) | at(0) << 16 | at(1) << 24 | at(b.len().wrapping_sub(1)) << 32;
    (x.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 48) as usize
}

/// Python's `str.isspace` for an ASCII byte.
fn ascii_space(b: u8) -> bool {
    matches!(b, b'\t'..=b'\r' | b' ' | 0x1c..=0x1f)
}

/// Letters only (see [`is_letter`]), with ASCII spans checked byte by byte.
fn all_letters(s: &str) -> bool {
    if s.is_ascii() {
        s.bytes().all(|b| b.is_ascii_alphabetic())
    } else {
        s.chars().all(is_letter)
    }
}

/// spaCy's spans: runs of whitespace and of non-whitespace, a single space between two words
/// belonging to neither. ASCII bytes are classified without decoding.
fn each_span(text: &str, mut f: impl FnMut(Range<usize>)) {
    let bytes = text.as_bytes();
    let Some(first) = text.chars().next() else { return };
    let mut in_ws = isspace(first);
    let (mut start, mut i) = (0, 0);
    while i < bytes.len() {
        let b = bytes[i];
        let (space, len) = if b.is_ascii() {
            (ascii_space(b), 1)
        } else {
            let c = text[i..].chars().next().unwrap_or(' ');
            (isspace(c), c.len_utf8())
        };
        if space != in_ws {
            if start < i {
                f(start..i);
            }
            start = if b == b' ' { i + 1 } else { i };
            in_ws = !in_ws;
        }
        i += len;
    }
    if start < text.len() {
        f(start..text.len());
    }
}


impl Rules {
    fn find_prefix(&self, s: &str) -> usize {
        self.prefix.search(s).filter(|m| m.start == 0).map_or(0, |m| m.end)
    }

    fn find_suffix(&self, s: &str) -> usize {
        self.suffix.search(s).filter(|m| m.end == s.len()).map_or(0, |m| s.len() - m.start)
    }

    fn has_infix(&self, s: &str) -> bool {
        !self.infix.find_iter(s).is_empty()
    }

    #[inline]
    fn special(&self, s: &str, with_specials: bool) -> Option<&Vec<String>> {
        if !with_specials {
            return None;
        }
        if !self.special_bits.may_hold(s) {
            return None;
        }
        self.specials.get(s)
    }

    /// Tokens of `text` as byte ranges, whitespace tokens included, before the phrase pass.
    fn tokenize(&self, text: &str, out: &mut Vec<Range<usize>>, with_specials: bool) {
        if !with_specials {
            return each_span(text, |r| self.span(text, r, out, false));
        }
        SPAN_CACHE.with_borrow_mut(|cache| each_span(text, |r| self.cached_span(cache, text, r, out)))
    }

    /// A span's tokens depend on the span alone, and most spans are words that repeat: like spaCy,
    /// remember each span's split (per thread, bounded). Letters and `quick_span` shapes are
    /// cheaper to split than to look up.
    fn cached_span(&self, cache: &mut SpanCache, text: &str, r: Range<usize>, out: &mut Vec<Range<usize>>) {
        let s = &text[r.clone()];
        if self.push_special(s, r.start, out, true) {
            return;
        }
        if all_letters(s) {
            return out.push(r);
        }
        if self.quick_span(s, r.start, out) {
            return;
        }
        if let Some(parts) = cache.get(s) {
            return out.extend(parts.iter().map(|&(a, b)| r.start + a as usize..r.start + b as usize));
        }
        // Neither a special case nor letters (checked above): the affix passes decide.
        let from = out.len();
        self.affixes(s, r.start, out, true);
        if cache.len() >= SPAN_CACHE_ENTRIES {
            cache.clear();
        }
        if s.len() <= SPAN_CACHE_MAX_LEN {
            cache.insert(s.to_string(), out[from..].iter().map(|t| ((t.start - r.start) as u32, (t.end - r.start) as u32)).collect());
        }
    }

    /// Spans such as `word,` `"word` `(1990);`: a run of letters or of ASCII digits with at most
    /// one punctuation character each side, which spaCy splits off as tokens of their own
    /// (`quick_spans_split_as_spacy_does` checks every character of the sets). Returns false for
    /// other spans, and for spans where spaCy would meet a special case on the way.
    fn quick_span(&self, s: &str, at: usize, out: &mut Vec<Range<usize>>) -> bool {
        let lead = s.chars().next().filter(|c| QUICK_LEAD.contains(*c)).map_or(0, char::len_utf8);
        let trail = s[lead..].chars().next_back().filter(|c| QUICK_TRAIL.contains(*c)).map_or(0, char::len_utf8);
        let core = &s[lead..s.len() - trail];
        let (Some(last), true) = (core.bytes().last(), lead + trail > 0) else { return false };
        let letters = all_letters(core);
        if !letters && !core.bytes().all(|b| b.is_ascii_digit()) {
            return false;
        }
        // A dot splits off only after a lowercase letter or a digit (or two capitals, left to spaCy).
        if s[s.len() - trail..] == *"." && !(last.is_ascii_lowercase() || last.is_ascii_digit()) {
            return false;
        }
        if lead > 0 && trail > 0 && (self.special(&s[lead..], true).is_some() || self.special(&s[..s.len() - trail], true).is_some()) {
            return false;
        }
        if lead > 0 {
            out.push(at..at + lead);
        }
        if !self.push_special(core, at + lead, out, true) {
            out.push(at + lead..at + lead + core.len());
        }
        if trail > 0 {
            out.push(at + s.len() - trail..at + s.len());
        }
        true
    }

    /// The affix and infix passes alone, without special cases or the fast path.
    #[cfg(test)]
    fn tokenize_slow(&self, s: &str, out: &mut Vec<Range<usize>>) {
        self.affixes(s, 0, out, false);
    }

    /// One whitespace-delimited span: specials, then prefixes and suffixes, then infixes.
    fn span(&self, text: &str, r: Range<usize>, out: &mut Vec<Range<usize>>, with_specials: bool) {
        let (base, s) = (r.start, &text[r.clone()]);
        if self.push_special(s, base, out, with_specials) {
            return;
        }
        // Every prefix, suffix and infix pattern needs a digit, punctuation or a symbol (see
        // `letters_take_the_fast_path`), so a span of letters is one token.
        if all_letters(s) {
            out.push(r);
            return;
        }
        self.affixes(s, base, out, with_specials);
    }

    /// spaCy's prefix, suffix and infix passes over a span that is not a special case.
    fn affixes(&self, mut s: &str, base: usize, out: &mut Vec<Range<usize>>, with_specials: bool) {
        let mut start = base;
        let mut suffixes: Vec<Range<usize>> = Vec::new();
        let mut last_size = 0;
        while !s.is_empty() && s.len() != last_size {
            if self.special(s, with_specials).is_some() {
                break;
            }
            last_size = s.len();
            let pre = self.find_prefix(s);
            if pre != 0 && pre < s.len() && self.special(&s[pre..], with_specials).is_some() {
                out.push(start..start + pre);
                start += pre;
                s = &s[pre..];
                break;
            }
            let suf = self.find_suffix(&s[pre..]);
            if suf != 0 && suf < s.len() && self.special(&s[..s.len() - suf], with_specials).is_some() {
                suffixes.push(start + s.len() - suf..start + s.len());
                s = &s[..s.len() - suf];
                break;
            }
            if pre != 0 && suf != 0 && pre + suf <= s.len() {
                out.push(start..start + pre);
                suffixes.push(start + s.len() - suf..start + s.len());
                s = &s[pre..s.len() - suf];
                start += pre;
            } else if pre != 0 {
                out.push(start..start + pre);
                start += pre;
                s = &s[pre..];
            } else if suf != 0 {
                suffixes.push(start + s.len() - suf..start + s.len());
                s = &s[..s.len() - suf];
            }
        }
        if !s.is_empty() && !self.push_special(s, start, out, with_specials) {
            if s.contains('.') && matches!(self.url.is_match(s), Ok(true)) {
                out.push(start..start + s.len());
            } else {
                self.split_infixes(s, start, out);
            }
        }
        out.extend(suffixes.into_iter().rev());
    }

    fn push_special(&self, s: &str, at: usize, out: &mut Vec<Range<usize>>, with_specials: bool) -> bool {
        let Some(pieces) = self.special(s, with_specials) else { return false };
        let mut pos = at;
        for p in pieces {
            out.push(pos..pos + p.len());
            pos += p.len();
        }
        true
    }

    fn split_infixes(&self, s: &str, at: usize, out: &mut Vec<Range<usize>>) {
        let mut start = 0;
        for m in self.infix.find_iter(s) {
            if m.start == 0 {
                continue;
            }
            if m.start != start {
                out.push(at + start..at + m.start);
            }
            if m.start != m.end {
                out.push(at + m.start..at + m.end);
            }
            start = m.end;
        }
        if start < s.len() {
            out.push(at + start..at + s.len());
        }
    }

    /// spaCy's last pass: special cases whose text affix splitting cut into several tokens are
    /// put back, longest match first, when the tokens are contiguous in the text.
    fn apply_phrases(&self, text: &str, tokens: Vec<Range<usize>>) -> Vec<Range<usize>> {
        let mut found: Vec<(usize, usize, &str)> = Vec::new();
        for (i, t) in tokens.iter().enumerate() {
            // A phrase is several tokens with nothing between them.
            if tokens.get(i + 1).is_none_or(|next| next.start != t.end) {
                continue;
            }
            let first = &text[t.clone()];
            if !self.phrase_bits.may_hold(first) {
                continue;
            }
            let Some(candidates) = self.phrases.get(first) else { continue };
            for (pattern, key) in candidates {
                let end = i + pattern.len();
                if end <= tokens.len() && tokens[i..end].iter().zip(pattern).all(|(r, p)| &text[r.clone()] == p) {
                    found.push((i, end, key));
                }
            }
        }
        if found.is_empty() {
            return tokens;
        }
        // Longest first, then leftmost; a match is kept unless its first or last token is taken.
        found.sort_by(|a, b| (b.1 - b.0).cmp(&(a.1 - a.0)).then(a.0.cmp(&b.0)));
        let mut taken = vec![false; tokens.len()];
        let mut keep: Vec<(usize, usize, &str)> = Vec::new();
        for (s, e, key) in found {
            if !taken[s] && !taken[e - 1] {
                keep.push((s, e, key));
            }
            taken[s..e].iter_mut().for_each(|t| *t = true);
        }
        keep.sort_by_key(|k| k.0);
        let mut out = Vec::with_capacity(tokens.len());
        let mut i = 0;
        for (s, e, key) in keep {
            out.extend_from_slice(&tokens[i..s]);
            let span = tokens[s].start..tokens[e - 1].end;
            // The span's text must be the special case itself (no whitespace between its tokens).
            match self.specials.get(key).filter(|_| &text[span.clone()] == key) {
                Some(pieces) => {
                    let mut pos = span.start;
                    for p in pieces {
                        out.push(pos..pos + p.len());
                        pos += p.len();
                    }
                }
                None => out.extend_from_slice(&tokens[s..e]),
            }
            i = e;
        }
        out.extend_from_slice(&tokens[i..]);
        out
    }
}

/// A letter or a combining mark (Python `isalpha`, or category M*).
fn is_letter(c: char) -> bool {
    c.is_ascii_alphabetic() || (!c.is_ascii() && (super::py::isalpha(c) || super::py::is_mark(c)))
}

/// spaCy's tokens of `text` as byte ranges, whitespace tokens included (the sentencizer sees them).
pub fn tokens(text: &str) -> Vec<Range<usize>> {
    let en = &*EN;
    let mut tokens = Vec::new();
    en.tokenize(text, &mut tokens, true);
    en.apply_phrases(text, tokens)
}

/// Whether a spaCy token is whitespace (spaCy's `is_space`).
#[inline]
pub fn is_space_token(token: &str) -> bool {
    match token.as_bytes().first() {
        Some(&b) if b.is_ascii() && !ascii_space(b) => false,
        _ => token.chars().all(isspace),
    }
}

/// The words of `text` as datatrove's spaCy English tokenizer gives them: spaCy's tokens with
/// whitespace tokens removed.
pub fn split_words(text: &str) -> Vec<&str> {
    word_ranges(text).into_iter().map(|r| &text[r]).collect()
}

/// `split_words` as its definition says it, over [`tokens`] without the cut at spaces: what the
/// tests compare it with.
#[cfg(test)]
pub(crate) fn words_of_tokens(text: &str) -> Vec<&str> {
    tokens(text).into_iter().map(|r| &text[r]).filter(|w| !is_space_token(w)).collect()
}

/// [`split_words`] as byte ranges of `text`.
pub fn word_ranges(text: &str) -> Vec<Range<usize>> {
    let (tokens, found) = tokens_for_words(text);
    let mut tokens = if found.touching { EN.apply_phrases(text, tokens) } else { tokens };
    if found.spaces {
        tokens.retain(|r| !is_space_token(&text[r.clone()]));
    }
    tokens
}

/// What [`tokens_for_words`] saw: whether any two tokens touch (the phrase pass finds nothing
/// otherwise), and whether any token may be whitespace.
#[derive(Default)]
struct Found {
    touching: bool,
    spaces: bool,
}

/// [`tokens`] before the phrase pass, for `split_words`, which drops whitespace tokens. The
/// text is cut at ASCII spaces first, and a piece of ASCII letters that is no special case is one
/// token without the span machinery (most words of most text). A whitespace token matters to the
/// phrase pass only as a stop between tokens (no phrase holds one, which `EN` checks), so where
/// spaCy makes one (a whitespace run that is not one space) a stop is put instead: an empty
/// piece (two spaces) puts one, other whitespace makes its own within its piece.
fn tokens_for_words(text: &str) -> (Vec<Range<usize>>, Found) {
    let en = &*EN;
    let mut tokens = Vec::with_capacity(text.len() / 5);
    let mut found = Found::default();
    SPAN_CACHE.with_borrow_mut(|cache| {
        for_each_piece(text.as_bytes(), |r, letters| {
            let piece = &text[r.clone()];
            if piece.is_empty() {
                if r.start > 0 {
                    tokens.push(r.start - 1..r.start);
                    found.spaces = true;
                }
            } else if letters && en.special(piece, true).is_none() {
                tokens.push(r);
            } else {
                let from = tokens.len();
                each_span(piece, |s| en.cached_span(cache, text, r.start + s.start..r.start + s.end, &mut tokens));
                found.touching |= tokens.len() > from + 1;
                found.spaces |= piece.bytes().any(|b| !b.is_ascii() || ascii_space(b));
            }
        });
    });
    (tokens, found)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::{is_letter, split_words, EN, QUICK_LEAD, QUICK_TRAIL};

    fn core() -> impl Strategy<Value = String> {
        let specials: Vec<String> = EN.specials.keys().filter(|k| k.chars().all(is_letter)).cloned().chain(["Mr", "I", "A", "e", "s", "km", "USA"].map(String::from)).collect();
        prop_oneof!["[a-zA-Z]{1,8}", "[0-9]{1,5}", "[a-zßéÀ-ÿ\\p{Greek}\\p{Cyrillic}\\p{Han}\\p{Mn}]{1,6}", prop::sample::select(specials)]
    }

    fn around(chars: &str) -> impl Strategy<Value = String> {
        prop::option::of(prop::sample::select(chars.chars().collect::<Vec<_>>())).prop_map(|c| c.map(String::from).unwrap_or_default())
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2000, max_global_rejects: 1 << 20, ..ProptestConfig::default() })]

        /// The fast path is exact: spaCy's full algorithm keeps any span of letters whole.
        #[test]
        fn letters_take_the_fast_path(span in "[a-zA-ZªºµßÀ-ÿĀ-ž\\p{Greek}\\p{Cyrillic}\\p{Arabic}\\p{Devanagari}\\p{Han}\\p{Hangul}\\p{Thai}\\p{Hebrew}\\p{Mn}\\p{Mc}]{1,12}") {
            prop_assume!(span.chars().all(is_letter));
            let mut slow = Vec::new();
            EN.tokenize_slow(&span, &mut slow);
            prop_assert_eq!(slow, vec![0..span.len()]);
        }

        /// `quick_span` splits exactly as spaCy's full algorithm, special cases included.
        #[test]
        fn quick_spans_split_as_spacy_does(lead in around(QUICK_LEAD), core in core(), trail in around(QUICK_TRAIL)) {
            let s = format!("{lead}{core}{trail}");
            prop_assume!(!EN.specials.contains_key(&s));
            let mut quick = Vec::new();
            if EN.quick_span(&s, 0, &mut quick) {
                let mut full = Vec::new();
                EN.span(&s, 0..s.len(), &mut full, true);
                prop_assert_eq!(quick, full);
            }
        }
    }

    fn near_phrases() -> impl Strategy<Value = String> {
        let keys: Vec<String> = EN.phrases.values().flatten().map(|(_, key)| key.clone()).chain(EN.specials.keys().take(200).cloned()).collect();
        let bits = ["", " ", "  ", "\n", " \n", "\n ", "\t", "the", "a", "I", "0", ":", ")", "(", "'", ".", "-", ",", "\u{a0}"].map(String::from);
        prop::collection::vec(prop_oneof![prop::sample::select(keys), prop::sample::select(bits.to_vec())], 0..24).prop_map(|v| v.concat())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3000))]

        /// Cutting at spaces first changes no word, next to phrases and whitespace of every kind
        /// (`the:) )` is `:` `)` `)`: the phrase `:))` is tried across the space and blocks `:)`).
        #[test]
        fn words_cut_at_spaces_are_spacys(text in near_phrases()) {
            prop_assert_eq!(split_words(&text), super::words_of_tokens(&text));
        }
    }

    #[test]
    fn every_special_case_passes_the_filter() {
        for key in EN.specials.keys() {
            assert!(EN.special(key, true).is_some(), "{key:?}");
        }
        // And most words are turned away before the map.
        let words = ["the", "of", "and", "minhash", "signature", "tokenizer", "0", "documents", "überall"];
        let passed = words.iter().filter(|w| EN.special_bits.may_hold(w)).count();
        assert!(passed <= 2, "{passed} of {} common words pass the filter", words.len());
    }

    #[test]
    fn quick_spans_cover_the_common_shapes() {
        for s in ["word,", "word.", "\"Word", "(1990)", "1990.", "“word”", "cannot,"] {
            assert!(EN.quick_span(s, 0, &mut Vec::new()), "{s}");
        }
        for s in ["I.", "USA.", "word-", "(Mr.", "a.m.,"] {
            assert!(!EN.quick_span(s, 0, &mut Vec::new()), "{s}");
        }
    }

    #[test]
    fn splits_like_spacy() {
        // Expected tokens come from spaCy 3.8 `spacy.blank("en")`.
        let cases: &[(&str, &[&str])] = &[
            (
                "Don't stop-believing, Mr. Smith! It's 3.5km (approx.) at http://x.com/a?b=1 ... U.S.A.\n\nok",
                &["Do", "n't", "stop", "-", "believing", ",", "Mr.", "Smith", "!", "It", "'s", "3.5", "km", "(", "approx", ".", ")", "at", "http://x.com/a?b=1", "...", "U.S.A.", "ok"],
            ),
            (
                "I can't believe it's 5 o'clock (a.m.)... y'all won't mind :-) e.g. www.example.org/x.",
                &["I", "ca", "n't", "believe", "it", "'s", "5", "o'clock", "(", "a.m.", ")", "...", "y'", "all", "wo", "n't", "mind", ":-)", "e.g.", "www.example.org/x", "."],
            ),
            (
                "\"Hello,\" she said—“quietly”. 10km/h, $5.00, 3x4, U.K.'s GDP rose 2.5%!",
                &["\"", "Hello", ",", "\"", "she", "said—“quietly", "”", ".", "10", "km/h", ",", "$", "5.00", ",", "3x4", ",", "U.K.", "'s", "GDP", "rose", "2.5", "%", "!"],
            ),
            (
                "  leading\tspace\n\nnew-paragraph; #tag @user http://a.b/c?d=e&f=g) (see: [1]) …end",
                &["leading", "space", "new", "-", "paragraph", ";", "#", "tag", "@user", "http://a.b", "/", "c?d", "=", "e&f", "=", "g", ")", "(", "see", ":", "[", "1", "]", ")", "…", "end"],
            ),
            (
                ":) (: ;) <3 C++ AT&T O'Neil 'quoted' don't.",
                &[":)", "(:", ";)", "<3", "C++", "AT&T", "O'Neil", "'", "quoted", "'", "do", "n't", "."],
            ),
            // A phrase tried across a space blocks a shorter one (`:))` against `:) )`).
            ("the:) )", &["the", ":", ")", ")"]),
            ("the:)  )", &["the", ":)", ")"]),
            ("", &[]),
            ("   ", &[]),
        ];
        for (text, want) in cases {
            assert_eq!(&split_words(text), want, "{text:?}");
        }
    }
}
