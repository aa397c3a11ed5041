//! Exact-substring dedup in tokens, as Lee et al. (2022, "Deduplicating Training Data Makes
//! Language Models Better") define it and Nemotron-CC runs it: every token of a document that lies
//! in a span of at least `n` consecutive tokens which the corpus holds more than once is struck
//! out, from every copy (or, with `keep_first`, from every copy but the first).
//!
//! Lee et al. find the repeats with one suffix array over the whole corpus (`self-similar`) and
//! strike the union of the repeated ranges (`collect`). A token lies in a repeat of at least `n`
//! tokens exactly when one of the windows of `n` tokens that hold it occurs twice, so hashing every
//! window here and counting the hashes in SQL (queries/parts/sentence-dedup.sql, sharded by hash
//! and spilling under a memory limit) strikes the same tokens without one machine holding the
//! corpus. tests/parity/substring_dedup_parity.py checks that against a suffix array.

use std::borrow::Cow;
use std::sync::Arc;

use crate::tokenize::{cached, Tokenizer};
use crate::TokqError;

/// A tokenizer whose tokens spell the text ([`Tokenizer::spelled_lengths`] is there).
pub struct TokenSpans {
    tokenizer: Arc<Tokenizer>,
}

impl std::fmt::Debug for TokenSpans {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenSpans").field("spec", &self.tokenizer.spec).finish()
    }
}

impl TokenSpans {
    /// The tokenizer `spec` names (loaded once per process); `function` is the SQL function the
    /// errors name. Only tokenizers whose tokens spell the text can say which bytes a span covers.
    pub fn new(function: &'static str, spec: &str) -> Result<Self, TokqError> {
        let tokenizer = cached(spec)?;
        tokenizer.spelled_lengths().ok_or_else(|| TokqError::Argument {
            function,
            cause: format!(
                "unit 'token:{spec}' needs a tokenizer whose tokens spell the text byte for byte: tokq's own byte-level \
                 encoder without a normalizer (tiktoken specs, GPT-2's or Llama-3's tokenizer.json); this one is on {} \
                 or normalizes the text",
                tokenizer.backend()
            ),
        })?;
        Ok(Self { tokenizer })
    }

    fn ids(&self, text: &str) -> Vec<u32> {
        // tokq's own encoder, the only one with spelled lengths, encodes every text.
        self.tokenizer.encode_whole(text).unwrap_or_default()
    }

    /// `(hash, first token)` of every window of `n` consecutive tokens: xxh3 of the ids. A text
    /// of fewer than `n` tokens has none.
    pub fn hashes(&self, n: usize, text: &str) -> Vec<(u64, u32)> {
        let ids = self.ids(text);
        if ids.len() < n {
            return Vec::new();
        }
        let bytes: Vec<u8> = ids.iter().flat_map(|id| id.to_le_bytes()).collect();
        // A text has fewer than 2^32 tokens: each is at least one byte.
        (0..=ids.len() - n).map(|i| (xxhash_rust::xxh3::xxh3_64(&bytes[4 * i..4 * (i + n)]), i as u32)).collect()
    }

    /// `text` without the tokens of the windows of `n` tokens that start at `starts` (in any
    /// order; past the end is nothing). A character that a struck token only partly spells goes
    /// whole. What is left is joined as it stands: no space is added or trimmed.
    pub fn remove<'t>(&self, n: usize, text: &'t str, starts: &[u32]) -> Cow<'t, str> {
        if starts.is_empty() {
            return Cow::Borrowed(text);
        }
        let ids = self.ids(text);
        // `new` checked that the tokenizer has them.
        let lengths = self.tokenizer.spelled_lengths().unwrap_or_default();
        // +1 where a struck window starts, -1 where it ends.
        let mut depth = vec![0i32; ids.len() + 1];
        for &s in starts {
            let s = (s as usize).min(ids.len());
            depth[s] += 1;
            depth[(s + n).min(ids.len())] -= 1;
        }
        let mut out = String::with_capacity(text.len());
        let (mut kept_to, mut at, mut open, mut struck_from) = (0, 0usize, 0, None);
        for (i, d) in depth.iter().enumerate() {
            let was = open;
            open += d;
            match (was > 0, open > 0) {
                (false, true) => struck_from = Some(at),
                (true, false) => {
                    let (from, to) = (struck_from.unwrap_or(at), at);
                    let from = text.floor_char_boundary(from);
                    if from > kept_to {
                        out.push_str(&text[kept_to..from]);
                    }
                    kept_to = kept_to.max(text.ceil_char_boundary(to));
                }
                _ => {}
            }
            if let Some(&id) = ids.get(i) {
                at += lengths.get(id as usize).copied().unwrap_or(0) as usize;
            }
        }
        if kept_to < text.len() {
            out.push_str(&text[kept_to..]);
        }
        Cow::Owned(out)
    }
}

#[cfg(test)]
mod tests {
    use super::TokenSpans;

    fn cl100k() -> TokenSpans {
        TokenSpans::new("t", "tiktoken:cl100k_base").unwrap()
    }

    #[test]
    fn equal_windows_hash_alike_and_number_from_the_first_token() {
        let t = cl100k();
        // cl100k: "hello world" is [15339, 1917]; " hello world" is [24748, 1917].
        let h = t.hashes(2, "hello world hello world");
        assert_eq!(h.iter().map(|&(_, s)| s).collect::<Vec<_>>(), [0, 1, 2]);
        assert_ne!(h[0].0, h[2].0, "'hello world' and ' hello world' are other tokens");
        let again = t.hashes(1, " world world");
        assert_eq!(again[0].0, again[1].0, "' world' twice");
        assert!(t.hashes(3, "hello world").is_empty());
    }

    #[test]
    fn strikes_the_union_of_the_windows_bytes() {
        let t = cl100k();
        let text = "hello world, and again hello world";
        // Tokens: hello| world|,| and| again| hello| world
        assert_eq!(t.remove(2, text, &[0]), ", and again hello world");
        assert_eq!(t.remove(2, text, &[5, 0]), ", and again");
        // Overlapping windows strike their union once.
        assert_eq!(t.remove(2, text, &[1, 2, 1]), "hello again hello world");
        assert_eq!(t.remove(2, text, &[]), text);
        assert_eq!(t.remove(2, text, &[6, 99, u32::MAX]), "hello world, and again hello");
    }

    #[test]
    fn a_character_partly_struck_goes_whole() {
        let t = cl100k();
        // '🙂' is several byte-level tokens in cl100k: striking the first strikes all its bytes.
        let text = "a🙂b";
        let ids = t.ids(text);
        assert!(ids.len() > 3, "{ids:?}");
        assert_eq!(t.remove(1, text, &[1]), "ab");
        assert_eq!(t.remove(1, text, &[0]), "🙂b");
    }

    #[test]
    fn only_tokenizers_that_spell_the_text() {
        let e = TokenSpans::new("span_hashes", "reference:tiktoken:cl100k_base").unwrap_err().to_string();
        assert!(e.contains("spell the text") && e.contains("span_hashes"), "{e}");
    }
}
