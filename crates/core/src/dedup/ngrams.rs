//! Fuzzy paragraph dedup as Dolma's and DCLM's `bff` decides it: a paragraph (the text between
//! two `\n`) is cut into word n-grams, and it is removed when more than `threshold` of its
//! n-grams were seen before; with `documents`, a whole document goes when more than `threshold`
//! of all its n-grams were (DCLM's `--remove-type old-both`). The words are Unicode word
//! boundaries' segments that are not all whitespace (bff's `tokenize`, over the same
//! `unicode-segmentation` crate), case and punctuation kept.
//!
//! What "seen" means is where tokq differs from bff on purpose. bff looks each n-gram up in a
//! shared Bloom filter and inserts the n-grams of the paragraphs it keeps, so the answer depends
//! on the order its threads read the files and a false positive removes a unique paragraph. Here
//! an n-gram is seen when an earlier paragraph of the corpus holds it, earlier in lineage order
//! (source, row, paragraph), which SQL decides exactly and the same on any partitions
//! (queries/ngram-dedup.sql). The one remaining difference: bff does not insert a removed
//! paragraph's n-grams, tokq counts every earlier paragraph's.

use std::borrow::Cow;
use std::ops::Range;

use unicode_segmentation::UnicodeSegmentation;
use xxhash_rust::xxh64::xxh64;

use crate::TokqError;

/// The settings of the n-gram unit beyond its size `n`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NgramRule {
    /// A paragraph of fewer than `n` words, but at least this many, is one n-gram of all its
    /// words (bff's `--min-ngram-size`); a shorter one has none and always stays.
    pub min_n: usize,
    /// A paragraph (or document) goes when its seen n-grams are more than this share of its
    /// n-grams (bff's `--filtering-threshold`).
    pub threshold: f64,
    /// Also remove a whole document whose seen share passes the threshold (`old-both`).
    pub documents: bool,
}

impl NgramRule {
    /// bff's defaults for n-grams of `n` words: a paragraph of 5 words or more (or `n` if
    /// smaller) has an n-gram, threshold 0.8, paragraphs only.
    pub fn bff(n: usize) -> Self {
        NgramRule { min_n: n.min(5), threshold: 0.8, documents: false }
    }

    /// Checks the settings for n-grams of `n` words; `function` is the SQL function the errors name.
    pub fn new(function: &'static str, n: usize, min_n: i64, threshold: f64, documents: bool) -> Result<Self, TokqError> {
        let bad = |cause: String| Err(TokqError::Argument { function, cause });
        let min_n = match usize::try_from(min_n) {
            Ok(m) if (1..=n).contains(&m) => m,
            _ => return bad(format!("min_ngram_size must be between 1 and the n-gram size {n}, got {min_n}")),
        };
        if !(0.0..=1.0).contains(&threshold) {
            return bad(format!("threshold must be between 0 and 1, got {threshold}"));
        }
        Ok(NgramRule { min_n, threshold, documents })
    }

    /// How many n-grams of `n` words a paragraph of `words` words has.
    fn count(&self, n: usize, words: usize) -> usize {
        if words >= n {
            words + 1 - n
        } else {
            usize::from(words >= self.min_n)
        }
    }

    /// bff's test: `seen / total > threshold`, false for a paragraph without n-grams (0 / 0).
    fn passes(&self, seen: usize, total: usize) -> bool {
        total > 0 && seen as f64 / total as f64 > self.threshold
    }

    /// `(hash, paragraph)` of every n-gram of `n` words of every paragraph, in text order. Each
    /// word's xxhash64 is a number below the prime 2^61 - 1, an n-gram is the polynomial of its
    /// words' numbers at a fixed base modulo that prime, so the next n-gram's is one step from the
    /// last's, and two different n-grams share one with odds under n / 2^61 (hashing each
    /// window's bytes again took a sixth of the time); a final mix spreads it over 64 bits.
    pub fn hashes(&self, n: usize, text: &str) -> Vec<(u64, u32)> {
        let mut out = Vec::new();
        let mut words: Vec<u64> = Vec::new();
        // The base to the power n - 1: what the word leaving a window weighs.
        let top = (1..n).fold(1, |p, _| mul_mod(p, BASE));
        for (k, p) in paragraphs(text).enumerate() {
            words.clear();
            each_word(&text[p], |w| words.push(xxh64(w.as_bytes(), 0) >> 3));
            // A text has fewer than 2^32 paragraphs: each but the first holds its `\n`.
            let k = k as u32;
            let polynomial = |ws: &[u64]| ws.iter().fold(0, |h, &w| add_mod(mul_mod(h, BASE), w));
            if words.len() >= n {
                let mut h = polynomial(&words[..n]);
                out.push((mix(h), k));
                for i in n..words.len() {
                    h = add_mod(mul_mod(add_mod(h, MERSENNE_61 - mul_mod(words[i - n], top)), BASE), words[i]);
                    out.push((mix(h), k));
                }
            } else if words.len() >= self.min_n {
                out.push((mix(polynomial(&words)), k));
            }
        }
        out
    }

    /// `text` without the paragraphs whose seen n-grams pass the threshold; `seen` holds a
    /// paragraph's index once for each of its n-grams seen before (indices past the last
    /// paragraph count for nothing). As bff cuts them, a removed paragraph takes the `\n`
    /// before it. Empty when the whole document passes (`documents`) or no word is left.
    pub fn remove<'t>(&self, n: usize, text: &'t str, seen: &[u32]) -> Cow<'t, str> {
        let paras: Vec<Range<usize>> = paragraphs(text).collect();
        let mut hits = vec![0usize; paras.len()];
        for &k in seen {
            if let Some(h) = hits.get_mut(k as usize) {
                *h += 1;
            }
        }
        let (mut seen_all, mut total_all) = (0, 0);
        let mut out = String::with_capacity(text.len());
        for (p, &hit) in paras.iter().zip(&hits) {
            let mut words = 0;
            each_word(&text[p.clone()], |_| words += 1);
            let total = self.count(n, words);
            let hit = hit.min(total);
            seen_all += hit;
            total_all += total;
            if !self.passes(hit, total) {
                out.push_str(&text[p.clone()]);
            }
        }
        let mut left = false;
        each_word(&out, |_| left = true);
        if (self.documents && self.passes(seen_all, total_all)) || !left {
            return Cow::Borrowed("");
        }
        if out.len() == text.len() {
            return Cow::Borrowed(text);
        }
        Cow::Owned(out)
    }
}

/// bff's paragraphs: from the start to the first `\n`, then from each `\n` to the next, the
/// last to the end. An empty text is one empty paragraph.
fn paragraphs(text: &str) -> impl Iterator<Item = Range<usize>> + '_ {
    let mut bounds = std::iter::once(0).chain(memchr::memchr_iter(b'\n', text.as_bytes())).chain(std::iter::once(text.len())).peekable();
    std::iter::from_fn(move || {
        let start = bounds.next()?;
        bounds.peek().map(|&end| start..end)
    })
}

/// bff's words, each given to `f`: Unicode word-bound segments with a character that is not
/// whitespace. The text is cut at runs of spaces followed by an ASCII character, where UAX #29
/// always breaks (no rule joins a space to what is before it, or to an ASCII character after it);
/// an ASCII piece (most of them) takes [`ascii_words`], which gives the same words several times
/// as fast as the general rules' table lookups, and the others take the crate's.
fn each_word<'t>(paragraph: &'t str, mut f: impl FnMut(&'t str)) {
    for p in pieces(paragraph) {
        if p.is_ascii() {
            ascii_words(p).for_each(&mut f);
        } else {
            p.split_word_bounds().filter(|w| !w.chars().all(char::is_whitespace)).for_each(&mut f);
        }
    }
}

/// The prime modulus of the n-gram polynomials, and their base (any number below it).
const MERSENNE_61: u64 = (1 << 61) - 1;
const BASE: u64 = 0x0F3D_5B79_A1C2_E4F7;

/// `a * b` modulo 2^61 - 1, for `a` and `b` below 2^61.
fn mul_mod(a: u64, b: u64) -> u64 {
    let p = a as u128 * b as u128;
    add_mod((p as u64) & MERSENNE_61, (p >> 61) as u64)
}

/// `a + b` modulo 2^61 - 1, for `a` and `b` below 2^61.
fn add_mod(a: u64, b: u64) -> u64 {
    let s = a + b;
    let s = (s & MERSENNE_61) + (s >> 61);
    if s >= MERSENNE_61 { s - MERSENNE_61 } else { s }
}

/// SplitMix64's finalizer: every bit of `h` moves about half of the result's.
fn mix(mut h: u64) -> u64 {
    h = (h ^ (h >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    h = (h ^ (h >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    h ^ (h >> 31)
}

/// `text` cut after each run of spaces that an ASCII character (or the end) follows.
fn pieces(text: &str) -> impl Iterator<Item = &str> {
    let b = text.as_bytes();
    let mut start = 0;
    std::iter::from_fn(move || {
        if start >= b.len() {
            return None;
        }
        let mut i = start;
        while i < b.len() {
            if b[i] == b' ' {
                let mut j = i;
                while j < b.len() && b[j] == b' ' {
                    j += 1;
                }
                if j == b.len() || b[j].is_ascii() {
                    let piece = &text[start..j];
                    start = j;
                    return Some(piece);
                }
                i = j;
            } else {
                i += 1;
            }
        }
        let piece = &text[start..];
        start = b.len();
        Some(piece)
    })
}

/// The word-break classes of UAX #29 that ASCII characters have.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Class {
    Letter,
    Digit,
    /// `:`, a MidLetter.
    MidLetter,
    /// `.` (MidNumLet) and `'` (Single_Quote): join letters and digits alike.
    MidNumLetQ,
    /// `,` and `;`, MidNum: join digits.
    MidNum,
    /// `_`, ExtendNumLet.
    Extend,
    /// ` `, WSegSpace.
    Space,
    /// Tabs, line breaks, controls and the rest: each a segment of its own.
    Other,
}

/// Each ASCII byte's class, looked up: a `match` here was a seventh of the hashing's time.
const CLASSES: [Class; 128] = {
    let mut t = [Class::Other; 128];
    let mut c = 0;
    while c < 128 {
        t[c] = match c as u8 {
            b'a'..=b'z' | b'A'..=b'Z' => Class::Letter,
            b'0'..=b'9' => Class::Digit,
            b':' => Class::MidLetter,
            b'.' | b'\'' => Class::MidNumLetQ,
            b',' | b';' => Class::MidNum,
            b'_' => Class::Extend,
            b' ' => Class::Space,
            _ => Class::Other,
        };
        c += 1;
    }
    t
};

fn class(b: u8) -> Class {
    CLASSES[(b & 0x7F) as usize]
}

/// The segments of an ASCII text with a character that is not whitespace, as
/// `split_word_bounds` cuts them: rules WB5 to WB13b of UAX #29 for the classes ASCII has (the
/// line-break rules WB3 to WB3b only cut whitespace, which is left out; a run of spaces, WB3d,
/// too). The fuzz tests hold it to the crate's segments on every string of the characters that
/// matter.
fn ascii_words(text: &str) -> impl Iterator<Item = &str> {
    let b = text.as_bytes();
    let at = |i: usize| b.get(i).map_or(Class::Other, |&c| class(c));
    let mut i = 0;
    std::iter::from_fn(move || {
        // Whitespace segments are not words (`char::is_whitespace` for ASCII: `is_ascii_whitespace`
        // and the vertical tab).
        while i < b.len() && (b[i].is_ascii_whitespace() || b[i] == 0x0b) {
            i += 1;
        }
        if i >= b.len() {
            return None;
        }
        let start = i;
        i += 1;
        // Before the text's start (and past its end) the class is Other, which no rule joins.
        while i < b.len() && !breaks(at(i.wrapping_sub(2)), at(i - 1), at(i), at(i + 1)) {
            i += 1;
        }
        Some(&text[start..i])
    })
}

/// Whether UAX #29 breaks between `a` and `b`, with the class before `a` and after `b`.
fn breaks(before: Class, a: Class, b: Class, after: Class) -> bool {
    use Class::*;
    let word = |c: Class| matches!(c, Letter | Digit | Extend);
    match (a, b) {
        (Letter | Digit, Letter | Digit) => false,                                 // WB5, WB8, WB9, WB10
        (Letter, MidLetter | MidNumLetQ) if after == Letter => false,              // WB6
        (MidLetter | MidNumLetQ, Letter) if before == Letter => false,             // WB7
        (Digit, MidNum | MidNumLetQ) if after == Digit => false,                   // WB12
        (MidNum | MidNumLetQ, Digit) if before == Digit => false,                  // WB11
        (x, Extend) if word(x) => false,                                           // WB13a
        (Extend, Letter | Digit) => false,                                         // WB13b
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use unicode_segmentation::UnicodeSegmentation;

    use super::{add_mod, ascii_words, each_word, mix, mul_mod, paragraphs, NgramRule, BASE, MERSENNE_61};

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3000))]
        #[test]
        fn ascii_words_are_the_crates_words(text in prop::collection::vec(prop::sample::select(vec![
            "a", "Z", "q", "0", "7", ":", ".", "'", ",", ";", "_", " ", "  ", "\t", "\r", "\n", "\r\n", "\x0b", "\x0c",
            "\"", "-", "!", "(", "$", "@", "/", "\x00", "\x1f", "~", "can't", "3.5", "e.g.", "a_b", "1,000",
        ]), 0..24).prop_map(|v| v.concat())) {
            let crate_words: Vec<&str> = text.split_word_bounds().filter(|w| !w.chars().all(char::is_whitespace)).collect();
            prop_assert_eq!(ascii_words(&text).collect::<Vec<_>>(), crate_words);
        }

        #[test]
        fn words_are_the_crates_words_around_any_character(text in prop::collection::vec(prop::sample::select(vec![
            "a", "0", ".", "'", ":", "_", " ", "  ", "\t", "\n", "é", "\u{301}", "\u{200d}", "\u{a0}", "\u{3000}", "漢",
            "カ", "🙂", "\u{1f1e6}", "\u{1f1e8}", "\u{5d0}", "\"", "\u{2019}", "\u{ad}", "\u{2060}", "١", "–",
        ]), 0..24).prop_map(|v| v.concat())) {
            let crate_words: Vec<&str> = text.split_word_bounds().filter(|w| !w.chars().all(char::is_whitespace)).collect();
            let mut ours = Vec::new();
            each_word(&text, |w| ours.push(w));
            prop_assert_eq!(ours, crate_words);
        }
    }

    fn rule(min_n: i64, threshold: f64, documents: bool) -> NgramRule {
        NgramRule::new("t", 3, min_n, threshold, documents).unwrap()
    }

    #[test]
    fn paragraphs_and_words_are_bffs() {
        let p: Vec<_> = paragraphs("a\n\nb c").collect();
        assert_eq!(p, [0..1, 1..2, 2..6]);
        assert_eq!(paragraphs("").collect::<Vec<_>>(), [0..0]);
        assert_eq!(paragraphs("x\n").collect::<Vec<_>>(), [0..1, 1..2]);
        // Punctuation is a word; whitespace runs are not; "can't" and "3.5" are one word each.
        let mut words = Vec::new();
        each_word("\nWe can't, at 3.5 kg!", |w| words.push(w));
        assert_eq!(words, ["We", "can't", ",", "at", "3.5", "kg", "!"]);
    }

    #[test]
    fn hashes_slide_within_paragraphs_and_short_ones_are_one_ngram() {
        let r = rule(2, 0.8, false);
        let h = r.hashes(3, "one two three four\nfive six\nseven");
        // Paragraph 0: two 3-grams; paragraph 1: one 2-word n-gram (>= min_n); paragraph 2: none.
        assert_eq!(h.iter().map(|&(_, k)| k).collect::<Vec<_>>(), [0, 0, 1]);
        // The same words give the same hash in any paragraph, and word bounds count.
        assert_eq!(r.hashes(3, "x\none two three")[0].0, h[0].0);
        assert_ne!(r.hashes(3, "onetwo three x")[0].0, r.hashes(3, "one twothree x")[0].0);
        assert!(rule(3, 0.8, false).hashes(3, "five six").is_empty());
    }

    #[test]
    fn rolled_hashes_are_each_windows_polynomial() {
        let text = "w0 w1 w2 w3 w4 w5 w6 w7 w8 w9 w10 w11 w12 w13 w14 w15 w16 w17 w18 w19";
        let mut words = Vec::new();
        each_word(text, |w| words.push(xxhash_rust::xxh64::xxh64(w.as_bytes(), 0) >> 3));
        let direct: Vec<u64> = words.windows(5).map(|g| mix(g.iter().fold(0, |h, &w| add_mod(mul_mod(h, BASE), w)))).collect();
        let rolled: Vec<u64> = rule(2, 0.8, false).hashes(5, text).into_iter().map(|(h, _)| h).collect();
        assert_eq!(rolled, direct);
        // The modular steps stay below the prime at their edges.
        assert_eq!(add_mod(MERSENNE_61 - 1, 1), 0);
        assert_eq!(mul_mod(MERSENNE_61 - 1, MERSENNE_61 - 1), 1);
    }

    #[test]
    fn removes_paragraphs_past_the_threshold_with_their_newline() {
        let r = rule(3, 0.5, false);
        let text = "a b c d\ne f g\nh i j";
        // Paragraph 0 has two 3-grams: one seen is not more than half; two are.
        assert_eq!(r.remove(3, text, &[0]), text);
        assert_eq!(r.remove(3, text, &[0, 0]), "\ne f g\nh i j");
        assert_eq!(r.remove(3, text, &[1]), "a b c d\nh i j");
        assert_eq!(r.remove(3, text, &[2, 9]), "a b c d\ne f g");
        // Nothing with words left: empty.
        assert_eq!(r.remove(3, "a b c\n\n", &[0]), "");
        // A paragraph without n-grams always stays.
        assert_eq!(r.remove(3, "a b\nc d e", &[0, 1]), "a b");
    }

    #[test]
    fn a_document_goes_when_its_share_passes_the_threshold() {
        let text = "a b c d e\nf g h";
        // 4 n-grams, 3 seen (two of paragraph 0's three, paragraph 1's one): 0.75 > 0.7.
        let seen = [0, 0, 1];
        assert_eq!(rule(3, 0.7, false).remove(3, text, &seen), "a b c d e");
        assert_eq!(rule(3, 0.7, true).remove(3, text, &seen), "");
        assert_eq!(rule(3, 0.8, true).remove(3, text, &seen), "a b c d e");
    }

    #[test]
    fn settings_are_checked() {
        assert!(NgramRule::new("t", 13, 14, 0.8, true).unwrap_err().to_string().contains("between 1 and the n-gram size 13"));
        assert!(NgramRule::new("t", 13, 0, 0.8, true).is_err());
        assert!(NgramRule::new("t", 13, 13, 1.5, true).unwrap_err().to_string().contains("threshold"));
        assert!(NgramRule::new("t", 13, 13, f64::NAN, true).is_err());
    }
}
