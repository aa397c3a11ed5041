//! Added tokens of a `tokenizer.json` (`<|endoftext|>`, `<|im_start|>`, ...), split out of the
//! text before pre-tokenization as the `tokenizers` crate does: first the tokens marked
//! `normalized: false` on the raw text, then the others on each normalized remainder, both
//! leftmost-longest.

use aho_corasick::{AhoCorasick, MatchKind};

/// A tokenizer's added tokens: split out of the text whole, before (raw) or after (normalized)
/// normalization, as the `tokenizers` crate does.
#[derive(Default)]
pub struct AddedTokens {
    raw: Option<Matcher>,
    normalized: Option<Matcher>,
}

struct Matcher {
    automaton: AhoCorasick,
    ids: Vec<u32>,
    contents: Vec<String>,
}

impl Matcher {
    fn new(tokens: Vec<(String, u32)>) -> Result<Option<Self>, String> {
        if tokens.is_empty() {
            return Ok(None);
        }
        let (contents, ids): (Vec<String>, Vec<u32>) = tokens.into_iter().unzip();
        let automaton = AhoCorasick::builder()
            .match_kind(MatchKind::LeftmostLongest)
            .build(&contents)
            .map_err(|e| format!("added tokens: {e}"))?;
        Ok(Some(Self { automaton, ids, contents }))
    }

    fn split<F: FnMut(&str, &mut Vec<u32>)>(matcher: &Option<Self>, text: &str, out: &mut Vec<u32>, mut rest: F) {
        let Some(m) = matcher else { return rest(text, out) };
        let mut at = 0;
        for found in m.automaton.find_iter(text) {
            if found.start() > at {
                rest(&text[at..found.start()], out);
            }
            out.push(m.ids[found.pattern().as_usize()]);
            at = found.end();
        }
        if at < text.len() {
            rest(&text[at..], out);
        }
    }
}

impl AddedTokens {
    /// `raw` are matched before normalization, `normalized` after; pairs of (content, id).
    pub fn new(raw: Vec<(String, u32)>, normalized: Vec<(String, u32)>) -> Result<Self, String> {
        Ok(Self { raw: Matcher::new(raw)?, normalized: Matcher::new(normalized)? })
    }

    /// The (content, id) pairs [`Self::new`] took: raw, then normalized.
    pub fn lists(&self) -> [Vec<(&str, u32)>; 2] {
        fn list(m: &Option<Matcher>) -> Vec<(&str, u32)> {
            m.iter().flat_map(|m| m.contents.iter().map(String::as_str).zip(m.ids.iter().copied())).collect()
        }
        [list(&self.raw), list(&self.normalized)]
    }

    /// Whether any token is matched after normalization.
    pub fn has_normalized(&self) -> bool {
        self.normalized.is_some()
    }

    /// Every added token's content and id.
    pub fn for_each(&self, mut f: impl FnMut(&str, u32)) {
        for m in self.raw.iter().chain(&self.normalized) {
            m.contents.iter().zip(&m.ids).for_each(|(c, &id)| f(c, id));
        }
    }

    /// Emits raw added tokens' ids and hands the text between them to `rest`.
    pub fn split_raw<F: FnMut(&str, &mut Vec<u32>)>(&self, text: &str, out: &mut Vec<u32>, rest: F) {
        Matcher::split(&self.raw, text, out, rest)
    }

    /// Emits normalized added tokens' ids and hands the text between them to `rest`.
    pub fn split_normalized<F: FnMut(&str, &mut Vec<u32>)>(&self, text: &str, out: &mut Vec<u32>, rest: F) {
        Matcher::split(&self.normalized, text, out, rest)
    }

    /// The id of an added token by its content.
    pub fn id(&self, token: &str) -> Option<u32> {
        [&self.raw, &self.normalized].into_iter().flatten().find_map(|m| {
            m.contents.iter().position(|c| c == token).map(|i| m.ids[i])
        })
    }
}
