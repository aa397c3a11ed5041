//! Hugging Face `tokenizer.json`, through the `tokenizers` crate (the 1.0 line): the fallback
//! for files tokq's own encoders do not reproduce.

use rustc_hash::FxHashMap;
use tokenizers::pipeline::{EncodeOptions, Override, PipelineToken, PipelineTokenizer};

use super::chunk::ChunkStyle;
use super::Encode;

/// The `tokenizers` crate (1.0) as the fallback encoder.
pub struct HfTokenizer {
    inner: PipelineTokenizer,
    /// The model's vocabulary as the file spells it: tokenizers 1.0 has no `token_to_id` on the
    /// pipeline, and `bos=`/`eos=` name tokens the way 0.x's did (added tokens, then the model).
    vocab: FxHashMap<String, u32>,
    /// One past the largest id of the model or of an added token.
    size: usize,
}

impl HfTokenizer {
    /// Reads a `tokenizer.json` (0.x files are upgraded in memory), with how its texts may be chunked.
    pub fn from_bytes(bytes: &[u8]) -> Result<(Self, ChunkStyle), String> {
        let mut json: serde_json::Value = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
        let vocab = model_vocab(&json);
        let added = json["added_tokens"].as_array().into_iter().flatten().filter_map(|t| t["id"].as_u64());
        let size = vocab.values().map(|&id| u64::from(id)).chain(added).max().map_or(0, |id| id as usize + 1);
        let style = chunk_style(&json);
        // tokenizers 1.0 reads only the canonical form (version 2.0); files written by 0.x are
        // upgraded in memory, as its Python package does.
        tokenizers::canonicalize_value(&mut json).map_err(|e| e.to_string())?;
        let inner = tokenizers::from_json(&json.to_string()).map_err(|e| e.to_string())?;
        Ok((Self { inner, vocab, size }, style))
    }
}

/// The model's vocabulary of a parsed `tokenizer.json`, token to id, as the file spells it
/// (added tokens not included).
pub(crate) fn model_vocab(json: &serde_json::Value) -> FxHashMap<String, u32> {
    match &json["model"]["vocab"] {
        // BPE, WordPiece, WordLevel: {token: id}.
        serde_json::Value::Object(m) => m.iter().filter_map(|(t, id)| Some((t.clone(), u32::try_from(id.as_u64()?).ok()?))).collect(),
        // Unigram: [[token, score], ...], the id being the position.
        serde_json::Value::Array(pieces) => (0u32..).zip(pieces).filter_map(|(id, p)| Some((p.get(0)?.as_str()?.to_string(), id))).collect(),
        _ => FxHashMap::default(),
    }
}

/// The special tokens a file's post-processor puts around one sequence (`[CLS] … [SEP]`,
/// `<s> … </s>`), each as `(id, type id)`, and the sequence's own type id: what an encoder
/// model's input adds to the ids of a text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    /// Before the sequence.
    pub before: Vec<(u32, u32)>,
    /// After the sequence.
    pub after: Vec<(u32, u32)>,
    /// The type id of the sequence's tokens.
    pub sequence_type: u32,
}

impl HfTokenizer {
    /// The file's [`Template`], found by encoding a probe with and without special tokens, so
    /// that every post-processor (template, RoBERTa, BERT, sequences of them) is read the same.
    pub fn template(&self) -> Result<Template, String> {
        let encode = |add_special_tokens| {
            let opts = EncodeOptions { add_special_tokens, truncation: Override::Off, padding: Override::Off, ..Default::default() };
            let mut e = self.inner.encode("a", &opts).wait().map_err(|e| e.to_string())?;
            e.pop().ok_or_else(|| "the tokenizer encoded nothing".to_string())
        };
        let (with, bare) = (encode(true)?, encode(false)?);
        let ids: &[u32] = PipelineToken::cast_slice(with.ids());
        let bare: &[u32] = PipelineToken::cast_slice(bare.ids());
        let at = (0..=ids.len().saturating_sub(bare.len())).find(|&i| ids[i..].starts_with(bare));
        let at = at.ok_or("the post-processor changes a sequence's own ids, which tokq cannot reproduce")?;
        let types = |range: std::ops::Range<usize>| -> Vec<(u32, u32)> {
            range.map(|i| (ids[i], with.type_ids().map_or(0, |t| u32::from(t[i])))).collect()
        };
        let sequence_type = with.type_ids().and_then(|t| t.get(at)).map_or(0, |&t| u32::from(t));
        Ok(Template { before: types(0..at), after: types(at + bare.len()..ids.len()), sequence_type })
    }

    /// The number of ids the file can give: one past its largest model or added id.
    pub fn vocab_size(&self) -> usize {
        self.size
    }
}

/// SentencePiece-style files (Llama-2, Mistral) prepend '▁' to the whole text in the normalizer,
/// so a chunk that starts at a space must drop that space and let the normalizer supply it.
fn chunk_style(json: &serde_json::Value) -> ChunkStyle {
    let prepends = json.get("normalizer").is_some_and(|n| n.to_string().contains(r#""type":"Prepend""#));
    if prepends {
        ChunkStyle::DropSpace
    } else {
        ChunkStyle::KeepSpace
    }
}

impl Encode for HfTokenizer {
    fn encode(&self, text: &str) -> Result<Vec<u32>, String> {
        let mut out = Vec::with_capacity(text.len() / 3);
        self.encode_into(text, &mut out)?;
        Ok(out)
    }

    fn encode_into(&self, text: &str, out: &mut Vec<u32>) -> Result<(), String> {
        let opts = EncodeOptions { add_special_tokens: false, ..Default::default() };
        let mut tokens = Vec::with_capacity(text.len() / 3);
        self.inner.encode_into(text, &opts, &mut tokens).map_err(|e| e.to_string())?;
        out.extend_from_slice(PipelineToken::cast_slice(&tokens));
        Ok(())
    }

    fn token_id(&self, token: &str) -> Option<u32> {
        self.inner.get_added_vocabulary().token_to_id(token).or_else(|| self.vocab.get(token).copied())
    }

    fn backend(&self) -> &'static str {
        "hf-tokenizers"
    }

    fn as_hf(&self) -> Option<&HfTokenizer> {
        Some(self)
    }
}
