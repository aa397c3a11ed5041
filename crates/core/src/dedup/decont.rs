//! N-gram decontamination as datatrove 0.10.1's `NGramsDecontIndexer` and `NGramsDecontFilter`
//! decide it: an evaluation item's word n-grams (of `simplify_text`, spaCy's English words,
//! joined by one space, xxhash64) form the index ([`Decont::eval_hashes`]), and a training
//! document is contaminated when one of its own n-grams ([`super::minhash::shingles`], the same
//! hashes) is in it; the first such n-gram in the document is the one reported
//! ([`Decont::first_match`]). The lookup itself is a join in SQL (queries/decontaminate.sql).

use std::ops::Range;

use super::minhash::shingles;
use crate::text::clean::simplify_text;
use crate::text::words::word_ranges;
use crate::TokqError;

/// datatrove's `NGramsDecontConfig` defaults: 12-grams.
pub const N_GRAMS: usize = 12;

/// Which n-grams of an evaluation item are indexed, and their length.
#[derive(Clone, Copy, Debug)]
pub struct Decont {
    n: usize,
    find_query: bool,
    find_overlap: bool,
}

impl Decont {
    /// `n`-grams (1 to 64) of the gold answer, with those of the query alone (`find_query`) and
    /// those that cross from the query into the answer (`find_overlap`); `function` is the SQL
    /// function the errors name.
    pub fn new(function: &'static str, n: i64, find_query: bool, find_overlap: bool) -> Result<Self, TokqError> {
        match n {
            1..=64 => Ok(Decont { n: n as usize, find_query, find_overlap }),
            _ => Err(TokqError::Argument { function, cause: format!("n_grams must be between 1 and 64, got {n}") }),
        }
    }

    /// Words per n-gram.
    pub fn n(&self) -> usize {
        self.n
    }

    /// The hashes of an evaluation item's n-grams: the answer's, then (with a query) the query's
    /// if `find_query`, and the ones made of the query's last words and the answer's first ones
    /// if `find_overlap`. Repeats are kept; the index is a set.
    pub fn eval_hashes(&self, answer: &str, query: Option<&str>) -> Vec<u64> {
        let n = self.n;
        let mut out = shingles(answer, n);
        let Some(query) = query else { return out };
        if self.find_query {
            out.extend(shingles(query, n));
        }
        if self.find_overlap {
            let (a, q) = (Words::of(answer), Words::of(query));
            // i + 1 words of the answer after the query's last n - 1 - i, when both have them.
            for i in 0..n - 1 {
                let from_query = n - 1 - i;
                if q.len() >= from_query && a.len() > i {
                    let gram: Vec<&str> = q.tail(from_query).chain(a.head(i + 1)).collect();
                    out.push(xxhash_rust::xxh64::xxh64(gram.join(" ").as_bytes(), 0));
                }
            }
        }
        out
    }

    /// The first n-gram of `text`, in order, whose hash is in `hashes`, with that hash.
    pub fn first_match(&self, text: &str, hashes: &[u64]) -> Option<(String, u64)> {
        let (i, &hash) = shingles(text, self.n).iter().enumerate().find(|(_, h)| hashes.contains(h))?;
        let words = Words::of(text);
        Some((words.ranges[i..i + self.n].iter().map(|r| &words.simple[r.clone()]).collect::<Vec<_>>().join(" "), hash))
    }
}

/// The words of a text as the n-grams see them: spaCy's words of its `simplify_text`.
struct Words {
    simple: String,
    ranges: Vec<Range<usize>>,
}

impl Words {
    fn of(text: &str) -> Self {
        let simple = simplify_text(text);
        let ranges = word_ranges(&simple);
        Words { simple, ranges }
    }

    fn len(&self) -> usize {
        self.ranges.len()
    }

    fn head(&self, k: usize) -> impl Iterator<Item = &str> {
        self.ranges[..k].iter().map(|r| &self.simple[r.clone()])
    }

    fn tail(&self, k: usize) -> impl Iterator<Item = &str> {
        self.ranges[self.len() - k..].iter().map(|r| &self.simple[r.clone()])
    }
}

#[cfg(test)]
mod tests {
    use super::Decont;

    fn decont(n: i64, query: bool, overlap: bool) -> Decont {
        Decont::new("t", n, query, overlap).unwrap()
    }

    #[test]
    fn indexes_what_datatrove_indexes() {
        // datatrove 0.10.1: NGramsDecontIndexer(..., config=NGramsDecontConfig(n_grams=4, ...)).compute_hashes(label, query)
        let (label, query) = ("The answer is Paris, France.", "What is the capital of France?");
        assert_eq!(decont(4, false, true).eval_hashes(label, Some(query)), [
            12_222_499_753_082_700_000, 13_475_902_527_022_291_463, 2_773_012_319_821_687_667,
            7_287_923_231_062_336_644, 15_427_934_487_958_714_197,
        ]);
        assert_eq!(decont(4, true, false).eval_hashes(label, Some(query)).len(), 2 + 3);
        assert_eq!(decont(4, false, false).eval_hashes(label, None).len(), 2);
        // Fewer words than n: no n-gram of the answer, overlaps only where both sides have words.
        assert_eq!(decont(12, false, true).eval_hashes("Paris", Some("Capital?")).len(), 0);
    }

    #[test]
    fn reports_the_first_contaminated_ngram() {
        let d = decont(3, false, true);
        let index = d.eval_hashes("Paris is the capital", None);
        let hit = d.first_match("We know: PARIS is the capital, and is the capital city.", &index);
        assert_eq!(hit.map(|(g, _)| g), Some("paris is the".to_string()));
        assert!(d.first_match("Nothing here at all.", &index).is_none());
        assert!(Decont::new("t", 0, false, true).is_err());
    }
}
