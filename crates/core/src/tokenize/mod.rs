//! Tokenizers: spec parsing, backends behind one trait, long-document chunking, and a
//! process-wide cache so that each process loads a tokenizer once.

pub mod chunk;
pub mod fast;
pub mod hf;
pub mod spec;
pub mod tiktoken;

use std::sync::{Arc, OnceLock};

use sha2::{Digest, Sha256};

use crate::error::{Result, TokqError};
use chunk::{chunks, ChunkStyle};
use spec::TokenizerSpec;

/// Texts longer than this are encoded in chunks (see [`chunk`]).
pub const DEFAULT_CHUNK_BYTES: usize = 8 * 1024;

/// One tokenizer backend: text in, ids out, no special tokens added.
pub trait Encode: Send + Sync {
    /// The ids of `text`.
    fn encode(&self, text: &str) -> std::result::Result<Vec<u32>, String>;
    /// Appends the ids of `text` to `out`.
    fn encode_into(&self, text: &str, out: &mut Vec<u32>) -> std::result::Result<(), String> {
        out.extend(self.encode(text)?);
        Ok(())
    }
    /// The id of a token given by its string form, such as `<|endoftext|>`.
    fn token_id(&self, token: &str) -> Option<u32>;
    /// The encoder's name, as `tokq explain` prints it.
    fn backend(&self) -> &'static str;
    /// The pre-token caches, for encoders that keep them.
    fn cache_stats(&self) -> Option<fast::CacheStats> {
        None
    }
    /// The `tokenizers` crate's encoder, where this is it: a model's input reads its special
    /// tokens from it rather than loading the file a second time.
    fn as_hf(&self) -> Option<&hf::HfTokenizer> {
        None
    }
    /// Each id's length in bytes of the text, indexed by id, where the tokens of every encoding
    /// spell the text exactly (byte-level BPE without a normalizer): what maps a span of tokens
    /// back to the bytes it covers. `None` where they need not (normalizers, `▁` for spaces).
    fn spelled_lengths(&self) -> Option<Vec<u32>> {
        None
    }
}

/// A loaded tokenizer with what the output footer records about it.
pub struct Tokenizer {
    /// The spec it was loaded from.
    pub spec: String,
    /// sha256 of the tokenizer file (or of the bundled rank table).
    pub sha256: String,
    encoder: Box<dyn Encode>,
    /// Chunking bounds the reference encoders' cost on long texts; tokq's own encoder is linear
    /// and needs none (`None`).
    chunk_style: Option<ChunkStyle>,
    /// Where a text may be cut when only its first ids are wanted ([`Tokenizer::encode_head`]).
    cut_style: ChunkStyle,
    /// Why the spec is not on tokq's own encoder, when it is not.
    pub fallback_reason: Option<String>,
    /// Where the tokenizer file's compiled form was read or written (see [`fast::compiled`]), or
    /// why it was not; `None` where nothing is compiled (bundled tables, the fallback, the cache
    /// turned off).
    pub compiled: Option<String>,
    /// [`Encode::spelled_lengths`], made on first use: a function asks for it with every batch.
    spelled: OnceLock<Option<Vec<u32>>>,
}

/// Forces the reference encoder (the `tokenizers` crate or tiktoken-rs) for the spec after it.
pub const REFERENCE_PREFIX: &str = "reference:";

/// Ids added around each document, set per call: `'bos=<|begin_of_text|>,eos=128001'`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EncodeOptions {
    /// Prepended to every document.
    pub bos: Option<u32>,
    /// Appended to every document.
    pub eos: Option<u32>,
}

/// What to say when a tokenizer file is missing and its name looks like a Hugging Face model id
/// (`org/name`, no extension): tokq reads files and downloads nothing.
fn hub_hint(uri: &str) -> Option<String> {
    let (org, name) = uri.split_once('/')?;
    let file = [".json", ".tiktoken", ".model", ".txt"].iter().any(|ext| name.ends_with(ext));
    let id = !org.is_empty() && !org.starts_with(['.', '~']) && !uri.contains(':') && !name.is_empty() && !name.contains('/') && !file;
    let id = id && !std::path::Path::new(uri).exists();
    id.then(|| {
        format!(
            "no such file, and '{uri}' looks like a Hugging Face model id: tokq reads tokenizer files and downloads nothing. \
             Fetch the file once (hf download {uri} tokenizer.json --local-dir tokenizers/{name}) and name it: \
             'tokenizers/{name}/tokenizer.json'"
        )
    })
}

impl Tokenizer {
    /// Loads the tokenizer a spec names (see [`spec`]).
    pub fn load(spec: &str) -> Result<Self> {
        let err = |cause: String| TokqError::Tokenizer { spec: spec.to_string(), cause };
        let (reference, rest) = match spec.strip_prefix(REFERENCE_PREFIX) {
            Some(rest) => (true, rest),
            None => (false, spec),
        };
        let forced = || Some(format!("the spec starts with '{REFERENCE_PREFIX}'"));
        // Every tiktoken family keeps the space at a cut; a tokenizer.json may prepend '▁'.
        let mut cut_style = ChunkStyle::KeepSpace;
        let mut compiled = None;
        let (encoder, sha256, chunk_style, fallback_reason) = match TokenizerSpec::parse(rest)? {
            TokenizerSpec::BuiltinTiktoken(which) if reference => {
                let (t, sha) = tiktoken::Tiktoken::builtin(which).map_err(err)?;
                (Box::new(t) as Box<dyn Encode>, sha, Some(ChunkStyle::KeepSpace), forced())
            }
            TokenizerSpec::BuiltinTiktoken(which) => {
                let table = tiktoken::builtin_table(which).map_err(err)?;
                let model = fast::bpe::BpeModel::from_last_merges(&table.tokens, &table.splits).map_err(err)?;
                let pattern = which.pattern();
                let t = fast::FastBpe::new(model, fast::Split::Regex(pattern), fast::Unicode::Tiktoken, nfc(pattern), Default::default());
                (Box::new(t.with_named_tokens(table.named)) as Box<dyn Encode>, table.sha256.to_string(), None, None)
            }
            TokenizerSpec::TiktokenFile { uri, pattern } => {
                let bytes = crate::load::read_bytes(&uri).map_err(|e| err(e.to_string()))?;
                let sha256 = sha256_hex(&bytes);
                if reference {
                    let ranks = tiktoken::parse_rank_file(&bytes).map_err(err)?;
                    let t = tiktoken::Tiktoken::from_ranks(ranks, pattern).map_err(err)?;
                    (Box::new(t) as Box<dyn Encode>, sha256, Some(ChunkStyle::KeepSpace), forced())
                } else {
                    // The same ranks split by another pattern compile to another encoder.
                    let key = format!("{sha256}-{}", format!("{pattern:?}").to_lowercase());
                    let (own, note) = fast::compiled::load_or_compile(&key, fast::Unicode::Tiktoken, || {
                        let model = fast::bpe::BpeModel::from_ranks(tiktoken::parse_rank_file(&bytes)?)?;
                        Ok(fast::FastBpe::new(model, fast::Split::Regex(pattern), fast::Unicode::Tiktoken, nfc(pattern), Default::default()))
                    });
                    compiled = note;
                    (Box::new(own.map_err(err)?) as Box<dyn Encode>, sha256, None, None)
                }
            }
            TokenizerSpec::HuggingFace { uri } => {
                let bytes = crate::load::read_bytes(&uri).map_err(|e| err(hub_hint(&uri).unwrap_or_else(|| e.to_string())))?;
                let sha256 = sha256_hex(&bytes);
                let own = if reference {
                    Err(forced().unwrap_or_default())
                } else {
                    let (own, note) = fast::compiled::load_or_compile(&sha256, fast::Unicode::Tokenizers, || fast::hf_json::load(&bytes));
                    compiled = note;
                    own
                };
                match own {
                    Ok(t) => {
                        // tokq's own encoder takes only files whose one normalizer that prepends is SentencePiece's.
                        if t.normalizer() == fast::Normalizer::Metaspace {
                            cut_style = ChunkStyle::DropSpace;
                        }
                        (Box::new(t) as Box<dyn Encode>, sha256, None, None)
                    }
                    Err(reason) => {
                        let (t, style) = hf::HfTokenizer::from_bytes(&bytes)
                            .map_err(|e| err(format!("not a valid tokenizer.json: {e}")))?;
                        cut_style = style;
                        (Box::new(t) as Box<dyn Encode>, sha256, Some(style), Some(reason))
                    }
                }
            }
        };
        Ok(Self { spec: spec.to_string(), sha256, encoder, chunk_style, cut_style, fallback_reason, compiled, spelled: OnceLock::new() })
    }

    /// What the piece caches hold, for tokq's own encoder.
    pub fn cache_stats(&self) -> Option<fast::CacheStats> {
        self.encoder.cache_stats()
    }

    /// The encoder's name.
    pub fn backend(&self) -> &'static str {
        self.encoder.backend()
    }

    /// The `tokenizers` crate's encoder, where the file is on it.
    pub fn as_hf(&self) -> Option<&hf::HfTokenizer> {
        self.encoder.as_hf()
    }

    /// Appends the ids of `text` to `out`, encoding long texts chunk by chunk on the reference
    /// encoders.
    pub fn encode_into(&self, text: &str, opts: &EncodeOptions, chunk_bytes: usize, out: &mut Vec<u32>) -> Result<()> {
        out.extend(opts.bos);
        let err = |cause| TokqError::Tokenizer { spec: self.spec.clone(), cause };
        match self.chunk_style {
            None => self.encoder.encode_into(text, out).map_err(err)?,
            Some(style) => {
                for piece in chunks(text, chunk_bytes, style) {
                    self.encoder.encode_into(piece, out).map_err(err)?;
                }
            }
        }
        out.extend(opts.eos);
        Ok(())
    }

    /// The first `limit` ids of `text` (no bos or eos), appended to `out`: a long text is encoded
    /// a chunk at a time until the ids are there, so a model's truncated input costs what it
    /// keeps, not the length of the document. The ids are those of the whole text's encoding.
    pub fn encode_head(&self, text: &str, limit: usize, out: &mut Vec<u32>) -> Result<()> {
        let start = out.len();
        for piece in chunks(text, DEFAULT_CHUNK_BYTES, self.cut_style) {
            if out.len() - start >= limit {
                break;
            }
            self.encoder.encode_into(piece, out).map_err(|cause| TokqError::Tokenizer { spec: self.spec.clone(), cause })?;
        }
        out.truncate(start + limit);
        Ok(())
    }

    /// Ids of the whole text in one call, without chunking (the reference for chunked encoding).
    pub fn encode_whole(&self, text: &str) -> Result<Vec<u32>> {
        self.encoder
            .encode(text)
            .map_err(|cause| TokqError::Tokenizer { spec: self.spec.clone(), cause })
    }

    /// Each id's length in bytes of the text, where this tokenizer's tokens spell the text
    /// exactly ([`Encode::spelled_lengths`]): tokq's own byte-level encoder without a normalizer.
    pub fn spelled_lengths(&self) -> Option<&[u32]> {
        self.spelled.get_or_init(|| self.encoder.spelled_lengths()).as_deref()
    }

    /// The id `value` names: an id, or a token string of this tokenizer (`<|endoftext|>`).
    pub fn id_of(&self, value: &str) -> std::result::Result<u32, String> {
        let value = value.trim();
        match value.parse::<u32>() {
            Ok(id) => Ok(id),
            Err(_) => self.encoder.token_id(value).ok_or_else(|| format!("token '{value}' is not in the vocabulary of '{}'", self.spec)),
        }
    }

    /// Parses `bos=X,eos=Y`, where X and Y are ids or token strings of this tokenizer.
    pub fn parse_options(&self, options: &str) -> Result<EncodeOptions> {
        let bad = |cause: String| TokqError::Argument { function: "tokenize", cause };
        let mut opts = EncodeOptions::default();
        for item in options.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let (key, value) = item
                .split_once('=')
                .ok_or_else(|| bad(format!("option '{item}' is not key=value (keys: bos, eos)")))?;
            let id = self.id_of(value).map_err(bad)?;
            match key.trim() {
                "bos" => opts.bos = Some(id),
                "eos" => opts.eos = Some(id),
                other => return Err(bad(format!("unknown option '{other}' (keys: bos, eos)"))),
            }
        }
        Ok(opts)
    }
}

/// The normalization of a tiktoken-style pattern: Qwen's rank files are NFC'd first.
fn nfc(pattern: spec::SplitPattern) -> fast::Normalizer {
    if pattern.nfc() {
        fast::Normalizer::Nfc
    } else {
        fast::Normalizer::None
    }
}

/// Lower-case hex sha256.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

static CACHE: crate::load::Cache<Tokenizer> = crate::load::Cache::new();

/// The tokenizer for `spec`, loaded on first use in this process and shared afterwards.
pub fn cached(spec: &str) -> Result<Arc<Tokenizer>> {
    CACHE.get_or_load(spec, Tokenizer::load)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_model_id_is_told_to_download_the_file() {
        let e = super::Tokenizer::load("meta-llama/Llama-3.1-8B").map(|_| ()).unwrap_err().to_string();
        assert!(e.contains("looks like a Hugging Face model id") && e.contains("hf download meta-llama/Llama-3.1-8B tokenizer.json"), "{e}");
        let e = super::Tokenizer::load("nowhere/tokenizer.json").map(|_| ()).unwrap_err().to_string();
        assert!(!e.contains("model id"), "{e}");
    }

    use super::*;

    #[test]
    fn builtin_cl100k_encodes_known_ids() {
        let t = cached("tiktoken:cl100k_base").unwrap();
        // "hello world" in cl100k_base.
        assert_eq!(t.encode_whole("hello world").unwrap(), vec![15339, 1917]);
        assert_eq!(t.sha256, tiktoken::CL100K_SHA256);
    }

    #[test]
    fn options_add_bos_and_eos() {
        let t = cached("tiktoken:cl100k_base").unwrap();
        let opts = t.parse_options("bos=<|endoftext|>, eos=7").unwrap();
        let mut out = vec![];
        t.encode_into("hello world", &opts, DEFAULT_CHUNK_BYTES, &mut out).unwrap();
        assert_eq!(out, vec![100257, 15339, 1917, 7]);
        assert!(t.parse_options("pad=1").unwrap_err().to_string().contains("unknown option 'pad'"));
        assert!(t.parse_options("bos=<nope>").unwrap_err().to_string().contains("'<nope>'"));
    }

    #[test]
    fn chunked_equals_whole_for_builtins() {
        let text = "The quick brown fox, it's said, jumped 12345 times!\n\nThen  it   rested. ".repeat(40);
        for spec in ["tiktoken:cl100k_base", "tiktoken:o200k_base"] {
            let t = cached(spec).unwrap();
            let mut out = vec![];
            t.encode_into(&text, &EncodeOptions::default(), 17, &mut out).unwrap();
            assert_eq!(out, t.encode_whole(&text).unwrap(), "{spec}");
        }
    }

    #[test]
    fn missing_file_is_a_clear_error() {
        let e = Tokenizer::load("/nonexistent/tokenizer.json").err().unwrap().to_string();
        assert!(e.starts_with("tokenizer '/nonexistent/tokenizer.json'"), "{e}");
    }
}
