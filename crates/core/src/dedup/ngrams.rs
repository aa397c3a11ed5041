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

    /// `(hash, paragraph)` of every n-gram of `n` words of every paragraph, in text order: the
    /// xxhash64 of the words' own xxhash64s, so that word bounds are part of the hash.
    pub fn hashes(&self, n: usize, text: &str) -> Vec<(u64, u32)> {
        let mut out = Vec::new();
        let mut words: Vec<u8> = Vec::new();
        for (k, p) in paragraphs(text).enumerate() {
            words.clear();
            words.extend(self::words(&text[p]).flat_map(|w| xxh64(w.as_bytes(), 0).to_le_bytes()));
            let count = words.len() / 8;
            // A text has fewer than 2^32 paragraphs: each but the first holds its `\n`.
            let k = k as u32;
            if count >= n {
                out.extend(words.windows(8 * n).step_by(8).map(|g| (xxh64(g, 0), k)));
            } else if count >= self.min_n {
                out.push((xxh64(&words, 0), k));
            }
        }
        out
    }

    /// `text` without the paragraphs whose seen n-grams pass the threshold; `seen` holds a
    /// paragraph's index once for each of its n-grams seen before (indices past the last
    /// paragraph count for nothing). As bff cuts them, a removed paragraph takes the `\n`
    /// before it. Empty when the whole document passes (`documents`) or no word is left.
    pub fn remove<'t>(&self, n: usize, text: &'t str, seen: &[u32]) -> Cow<'t, str> {
        let spans: Vec<Range<usize>> = paragraphs(text).collect();
        let mut hits = vec![0usize; spans.len()];
        for &k in seen {
            if let Some(h) = hits.get_mut(k as usize) {
                *h += 1;
            }
        }
        let (mut seen_all, mut total_all) = (0, 0);
        let mut out = String::with_capacity(text.len());
        for (p, &hit) in spans.iter().zip(&hits) {
            let total = self.count(n, words(&text[p.clone()]).count());
            let hit = hit.min(total);
            seen_all += hit;
            total_all += total;
            if !self.passes(hit, total) {
                out.push_str(&text[p.clone()]);
            }
        }
        if (self.documents && self.passes(seen_all, total_all)) || words(&out).next().is_none() {
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

/// bff's words: Unicode word-bound segments with a character that is not whitespace.
fn words(paragraph: &str) -> impl Iterator<Item = &str> {
    paragraph.split_word_bounds().filter(|w| !w.chars().all(char::is_whitespace))
}

#[cfg(test)]
mod tests {
    use super::{paragraphs, words, NgramRule};

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
        assert_eq!(words("\nWe can't, at 3.5 kg!").collect::<Vec<_>>(), ["We", "can't", ",", "at", "3.5", "kg", "!"]);
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
