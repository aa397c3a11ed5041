//! tokq's own BPE encoder: the byte-level family (GPT-2, cl100k, o200k, Llama-3, Qwen,
//! GPT-NeoX/OLMo) and SentencePiece-style files (Llama-2, Mistral).
//!
//! Text -> added-token split (HF files) -> normalizer (NFC, or SentencePiece's `▁`) ->
//! hand-written pre-tokenizer ([`split`])
//! -> per-thread cache ([`cache`]) -> exact BPE merge on a miss ([`bpe`]). [`hf_json`] decides
//! whether a `tokenizer.json` is one this path reproduces exactly; anything else stays on the
//! `tokenizers` crate.

pub mod bpe;
pub mod cache;
pub mod classes;
pub mod compiled;
pub mod hf_json;
pub mod split;
mod added;

use std::sync::Mutex;

use rustc_hash::FxHashMap;
use thread_local::ThreadLocal;

pub use added::AddedTokens;
use bpe::BpeModel;
use cache::PieceCache;
pub use split::Split;
use classes::Classes;
pub use classes::Unicode;

use super::Encode;

/// The normalization before pre-tokenization.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Normalizer {
    /// Text as it is.
    None,
    /// NFC with the Unicode 17 tables of `unicode-normalization` 0.1.25, the version tokenizers
    /// 1.0 pins: `tokenizer.json` files and tiktoken-style Qwen rank files.
    Nfc,
    /// SentencePiece-style (Llama-2, Mistral): `Prepend("▁")` then `Replace(" ", "▁")`. The
    /// `tokenizers` crate runs it on each text between added tokens, so each gets its own `▁`.
    Metaspace,
}

impl Normalizer {
    /// `text` normalized, or `None` when it already is.
    fn apply(self, text: &str) -> Option<String> {
        match self {
            Self::None => None,
            Self::Metaspace => (!text.is_empty()).then(|| format!("\u{2581}{}", text.replace(' ', "\u{2581}"))),
            Self::Nfc => {
                use unicode_normalization::{is_nfc_quick, IsNormalized, UnicodeNormalization};
                (is_nfc_quick(text.chars()) != IsNormalized::Yes).then(|| text.nfc().collect())
            }
        }
    }
}

/// tokq's BPE encoder: pre-tokenizer, per-thread piece caches, merges.
pub struct FastBpe {
    model: BpeModel,
    split: Split,
    /// Whose Unicode tables the pre-tokenizer reads: the reference's this tokenizer must match.
    unicode: Unicode,
    normalizer: Normalizer,
    added: AddedTokens,
    /// Special tokens that are never split out of text (tiktoken's), for `bos=`/`eos=` by name.
    named: FxHashMap<String, u32>,
    caches: ThreadLocal<Mutex<PieceCache>>,
}

/// What the per-thread caches hold, summed over threads.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct CacheStats {
    /// Threads with a cache.
    pub threads: usize,
    /// Pieces cached.
    pub entries: usize,
    /// Bytes the caches hold.
    pub bytes: usize,
    /// Lookups answered.
    pub hits: u64,
    /// Lookups that had to encode.
    pub misses: u64,
    /// Generation turnovers.
    pub turnovers: u64,
}

impl FastBpe {
    /// An encoder from its parts; the class tables are built here.
    pub fn new(model: BpeModel, split: Split, unicode: Unicode, normalizer: Normalizer, added: AddedTokens) -> Self {
        // Built here, so that the first document does not pay for them.
        Classes::of(unicode);
        Self {
            model,
            split,
            unicode,
            normalizer,
            added,
            named: FxHashMap::default(),
            caches: ThreadLocal::new(),
        }
    }

    /// Names special tokens that `token_id` resolves but encoding never produces from text.
    pub fn with_named_tokens(mut self, named: FxHashMap<String, u32>) -> Self {
        self.named = named;
        self
    }

    /// The normalization before pre-tokenization.
    pub fn normalizer(&self) -> Normalizer {
        self.normalizer
    }

    /// What the caches hold, over every thread.
    pub fn cache_stats(&self) -> CacheStats {
        let mut s = CacheStats::default();
        for c in self.caches.iter() {
            let c = c.lock().unwrap_or_else(|p| p.into_inner());
            s.threads += 1;
            s.entries += c.entries();
            s.bytes += c.bytes();
            s.hits += c.hits;
            s.misses += c.misses;
            s.turnovers += c.turnovers;
        }
        s
    }

    /// Appends the ids of `text`.
    pub fn encode_append(&self, text: &str, out: &mut Vec<u32>) {
        self.added.split_raw(text, out, |segment, out| {
            if self.normalizer == Normalizer::Metaspace && self.split == Split::Metaspace && !self.added.has_normalized() {
                // No added token waits for the normalized text, so it is never made: the pieces
                // are cut from the raw text, their `▁` counted (see `split::metaspace_pieces`).
                return self.encode_pieces(split::metaspace_pieces(segment, true), out);
            }
            let normalized = self.normalizer.apply(segment);
            let segment = normalized.as_deref().unwrap_or(segment);
            self.added.split_normalized(segment, out, |t, out| self.encode_ordinary(t, out));
        });
    }

    fn encode_ordinary(&self, text: &str, out: &mut Vec<u32>) {
        match self.split {
            Split::Regex(pattern) => self.encode_pieces(split::pieces(text, pattern, Classes::of(self.unicode)).map(|p| (0, p.as_bytes())), out),
            Split::Metaspace => self.encode_pieces(split::metaspace_pieces(text, false), out),
        }
    }

    /// Appends the ids of `pieces`, each given as (a count of `▁`, the rest): the piece is that
    /// many `▁` and then the rest (pre-tokenizers with no `▁` give 0 and the whole piece).
    fn encode_pieces<'a>(&self, mut pieces: impl Iterator<Item = (usize, &'a [u8])>, out: &mut Vec<u32>) {
        /// Pieces cut ahead of their lookups.
        const BATCH: usize = 32;
        // Only this thread locks its own cache while encoding; `cache_stats` may read it from another.
        let mut cache = self
            .caches
            .get_or(|| Mutex::new(PieceCache::new(cache::BUDGET_BYTES)))
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        // The bytes of a piece that starts with `▁`, spelled out when the cache does not have it.
        let mut spelled = Vec::new();
        // The front table (4 MiB) is larger than the CPU's nearest caches, and its lookup was a
        // fifth of the loop's samples, waiting for the set. Pieces are cut [`BATCH`] at a time
        // and their sets asked for before the first is looked up, so the loads overlap.
        let mut batch: [(usize, &[u8], Option<u128>); BATCH] = [(0, &[], None); BATCH];
        loop {
            let mut n = 0;
            while n < BATCH {
                let Some((bars, rest)) = pieces.next() else { break };
                let key = cache::piece_key(bars, rest);
                if let Some(k) = key {
                    cache.prefetch_front(k);
                }
                batch[n] = (bars, rest, key);
                n += 1;
            }
            for &(bars, rest, key) in &batch[..n] {
                if key.is_some_and(|k| cache.front(k, out)) {
                    continue;
                }
                let bytes = match bars {
                    0 => rest,
                    _ => {
                        spelled.clear();
                        (0..bars).for_each(|_| spelled.extend_from_slice(split::METASPACE));
                        spelled.extend_from_slice(rest);
                        &spelled
                    }
                };
                let start = out.len();
                if let Some(id) = self.model.whole(bytes) {
                    out.push(id);
                } else if key.is_some() {
                    // Short (up to 15 bytes): merged again, never kept in a generation (see [`cache`]).
                    cache.misses += 1;
                    self.model.merge(bytes, out);
                } else if !cache.extend(bytes, out) {
                    self.model.merge(bytes, out);
                    cache.insert(bytes, start, out);
                }
                if let Some(k) = key {
                    cache.put_front(k, &out[start..]);
                }
            }
            if n < BATCH {
                break;
            }
        }
    }
}

impl Encode for FastBpe {
    fn encode(&self, text: &str) -> Result<Vec<u32>, String> {
        let mut out = Vec::with_capacity(text.len() / 3);
        self.encode_append(text, &mut out);
        Ok(out)
    }

    fn encode_into(&self, text: &str, out: &mut Vec<u32>) -> Result<(), String> {
        self.encode_append(text, out);
        Ok(())
    }

    fn cache_stats(&self) -> Option<CacheStats> {
        Some(FastBpe::cache_stats(self))
    }

    fn token_id(&self, token: &str) -> Option<u32> {
        self.added.id(token).or_else(|| self.named.get(token).copied()).or_else(|| {
            let mut out = vec![];
            self.encode_ordinary(token, &mut out);
            <[u32; 1]>::try_from(out).ok().map(|[id]| id)
        })
    }

    fn backend(&self) -> &'static str {
        "tokq-bpe"
    }

    fn spelled_lengths(&self) -> Option<Vec<u32>> {
        if self.normalizer != Normalizer::None {
            return None;
        }
        let mut lengths = self.model.byte_lengths()?;
        self.added.for_each(|content, id| bpe::set_length(&mut lengths, id, content.len()));
        Some(lengths)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::tokenize::Tokenizer;

    /// A SentencePiece-style encoder with an unknown token and a raw added token.
    pub(crate) fn sentencepiece() -> FastBpe {
        let file = r#"{"normalizer": {"type": "Sequence", "normalizers": [
              {"type": "Prepend", "prepend": "▁"}, {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]},
            "model": {"type": "BPE", "unk_token": "<unk>", "fuse_unk": true,
                      "vocab": {"<unk>": 0, "a": 1, "b": 2, "▁": 3, "▁a": 4, "ab": 5, "▁ab": 6}, "merges": [["▁", "a"], ["a", "b"], ["▁a", "b"]]},
            "added_tokens": [{"id": 7, "content": "<s>", "normalized": false, "lstrip": false, "rstrip": false, "single_word": false}]}"#;
        hf_json::load(file.as_bytes()).unwrap()
    }

    proptest! {
        /// Pieces cut from the raw text, their `▁` counted, give the ids of the normalized text.
        #[test]
        fn sentencepiece_text_cut_raw_gives_the_ids_of_the_normalized_text(text in "[ ab▁é<s>z]{0,40}") {
            let t = sentencepiece();
            let mut raw = vec![];
            t.encode_append(&text, &mut raw);
            let mut normalized = vec![];
            t.added.split_raw(&text, &mut normalized, |segment, out| {
                if let Some(n) = t.normalizer.apply(segment) {
                    t.encode_ordinary(&n, out);
                }
            });
            prop_assert_eq!(raw, normalized);
        }
    }

    #[test]
    fn only_pieces_too_long_for_the_front_table_reach_the_generations() {
        let tok = Tokenizer::load("tiktoken:cl100k_base").unwrap();
        // Short pieces of several tokens each (" qzxv", " vbnmq"), and one long piece.
        let text = "The qzxv fox vbnmq over the lazy dog's antidisestablishmentarianism.";
        let first = tok.encode_whole(text).unwrap();
        let stats = tok.cache_stats().unwrap();
        // " antidisestablishmentarianism" (29 bytes) alone: the short ones are in front.
        assert_eq!(stats.entries, 1, "{stats:?}");
        assert_eq!(tok.encode_whole(text).unwrap(), first);
        assert_eq!(tok.cache_stats().unwrap().entries, 1);
    }
}
