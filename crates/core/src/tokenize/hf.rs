//! Hugging Face `tokenizer.json`, through the `tokenizers` crate.

use super::chunk::ChunkStyle;
use super::Encode;

pub struct HfTokenizer {
    inner: tokenizers::Tokenizer,
}

impl HfTokenizer {
    pub fn from_bytes(bytes: &[u8]) -> Result<(Self, ChunkStyle), String> {
        let inner = tokenizers::Tokenizer::from_bytes(bytes).map_err(|e| e.to_string())?;
        Ok((Self { inner }, chunk_style(bytes)))
    }
}

/// SentencePiece-style files (Llama-2, Mistral) prepend '▁' to the whole text in the normalizer,
/// so a chunk that starts at a space must drop that space and let the normalizer supply it.
fn chunk_style(json: &[u8]) -> ChunkStyle {
    let prepends = serde_json::from_slice::<serde_json::Value>(json)
        .ok()
        .and_then(|v| v.get("normalizer").cloned())
        .is_some_and(|n| n.to_string().contains(r#""type":"Prepend""#));
    if prepends {
        ChunkStyle::DropSpace
    } else {
        ChunkStyle::KeepSpace
    }
}

impl Encode for HfTokenizer {
    fn encode(&self, text: &str) -> Result<Vec<u32>, String> {
        let enc = self.inner.encode_fast(text, false).map_err(|e| e.to_string())?;
        Ok(enc.get_ids().to_vec())
    }

    fn token_id(&self, token: &str) -> Option<u32> {
        self.inner.token_to_id(token)
    }

    fn backend(&self) -> &'static str {
        "hf-tokenizers"
    }
}
