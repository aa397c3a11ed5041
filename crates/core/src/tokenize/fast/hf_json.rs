//! Deciding whether a `tokenizer.json` is one the fast path reproduces exactly, and building it.
//!
//! Accepted, with no truncation or padding and added tokens without `lstrip`/`rstrip`/`single_word`:
//! - a byte-level BPE (no dropout, no byte fallback, no word prefix/suffix), with no normalizer
//!   or NFC, pre-tokenized by GPT-2's ByteLevel regex or by a `Split` on one of the known regexes
//!   followed by a regex-less ByteLevel (GPT-2, Llama-3, Qwen, GPT-NeoX/OLMo);
//! - a SentencePiece-style BPE (Llama-2, Mistral): the normalizer `Prepend("▁")` then
//!   `Replace(" ", "▁")`, no pre-tokenizer, byte fallback or an unknown token, and a vocabulary
//!   in which no token has `▁` after another character (what makes [`Split::Metaspace`] exact).
//!
//! Anything else is reported with its reason and stays on the `tokenizers` crate.

use std::sync::LazyLock;

use rustc_hash::FxHashMap;
use serde_json::Value;

use super::bpe::{BpeModel, Unknown};
use super::{AddedTokens, FastBpe, Normalizer, Split, Unicode};
use crate::tokenize::spec::SplitPattern;

/// Why a file is not on the fast path: one line for `tokq tokenizer`.
pub type Unsupported = String;

pub fn load(json: &[u8]) -> Result<FastBpe, Unsupported> {
    let v: Value = serde_json::from_slice(json).map_err(|e| format!("not JSON: {e}"))?;
    for key in ["truncation", "padding"] {
        if !v[key].is_null() {
            return Err(format!("{key} is set"));
        }
    }
    let sentencepiece = is_metaspace(&v["normalizer"]) && v["pre_tokenizer"].is_null();
    let (normalizer, split) = match &v["normalizer"] {
        _ if sentencepiece => (Normalizer::Metaspace, Split::Metaspace),
        Value::Null => (Normalizer::None, Split::Regex(pre_tokenizer(&v["pre_tokenizer"])?)),
        n if n["type"] == "NFC" => (Normalizer::Nfc, Split::Regex(pre_tokenizer(&v["pre_tokenizer"])?)),
        n => return Err(format!("normalizer {} is not supported (none, NFC, or SentencePiece's Prepend + Replace)", n["type"])),
    };
    // Byte-level files spell bytes as printable characters; SentencePiece files spell UTF-8.
    let bytes: fn(&str) -> Result<Vec<u8>, Unsupported> =
        if sentencepiece { |t| Ok(t.as_bytes().to_vec()) } else { byte_level };
    let model = &v["model"];
    if model["type"] != "BPE" {
        return Err(format!("model {} is not BPE", model["type"]));
    }
    for (key, ok) in [
        ("dropout", model["dropout"].is_null()),
        ("byte_fallback", model["byte_fallback"] != true || sentencepiece),
        ("continuing_subword_prefix", empty(&model["continuing_subword_prefix"])),
        ("end_of_word_suffix", empty(&model["end_of_word_suffix"])),
    ] {
        if !ok {
            return Err(format!("BPE option {key} = {} is not supported", model[key]));
        }
    }
    let vocab = model["vocab"].as_object().ok_or("model.vocab is not an object")?;
    let mut by_bytes: FxHashMap<Vec<u8>, u32> = FxHashMap::default();
    for (token, id) in vocab {
        let id = id.as_u64().and_then(|i| u32::try_from(i).ok()).ok_or_else(|| format!("bad id for '{token}'"))?;
        by_bytes.insert(bytes(token)?, id);
    }
    let merges = model["merges"]
        .as_array()
        .ok_or("model.merges is not a list")?
        .iter()
        .map(|m| merge_pair(m, bytes))
        .collect::<Result<Vec<_>, _>>()?;
    let ignore_merges = model["ignore_merges"] == true;
    let bpe = if sentencepiece {
        if let Some(token) = vocab.keys().find(|t| joins_metaspace(t)) {
            return Err(format!("token {token:?} has '\u{2581}' after another character, so words cannot be cut at '\u{2581}'"));
        }
        let unk = match model["unk_token"].as_str() {
            Some(t) => Some(*by_bytes.get(t.as_bytes()).ok_or_else(|| format!("unk_token {t:?} is not in the vocabulary"))?),
            None => None,
        };
        let unknown = Unknown { byte_fallback: model["byte_fallback"] == true, unk, fuse_unk: model["fuse_unk"] == true };
        BpeModel::sentencepiece(by_bytes, &merges, ignore_merges, unknown)?
    } else {
        BpeModel::from_merges(by_bytes, &merges, ignore_merges)?
    };
    Ok(FastBpe::new(bpe, split, Unicode::Tokenizers, normalizer, added_tokens(&v["added_tokens"], normalizer)?))
}

/// `Sequence[Prepend("▁"), Replace(" ", "▁")]`, as converted Llama-2 and Mistral files have it.
fn is_metaspace(n: &Value) -> bool {
    let [prepend, replace] = n["normalizers"].as_array().map(Vec::as_slice).unwrap_or_default() else { return false };
    n["type"] == "Sequence"
        && prepend["type"] == "Prepend"
        && prepend["prepend"] == "\u{2581}"
        && replace["type"] == "Replace"
        && replace["pattern"]["String"] == " "
        && replace["content"] == "\u{2581}"
}

/// Whether `token` has a `▁` right after a character that is not one.
fn joins_metaspace(token: &str) -> bool {
    let mut prev = None;
    token.chars().any(|c| {
        let joins = c == '\u{2581}' && prev.is_some_and(|p| p != '\u{2581}');
        prev = Some(c);
        joins
    })
}

fn empty(v: &Value) -> bool {
    v.is_null() || v == ""
}

fn pre_tokenizer(p: &Value) -> Result<SplitPattern, Unsupported> {
    let byte_level = |b: &Value, regex: bool| {
        b["type"] == "ByteLevel" && b["add_prefix_space"] == false && b["use_regex"] == regex
    };
    if byte_level(p, true) {
        return Ok(SplitPattern::R50k);
    }
    if let [split, bl] = p["pretokenizers"].as_array().map(Vec::as_slice).unwrap_or_default() {
        let regex = split["pattern"]["Regex"].as_str().unwrap_or_default();
        let known = [SplitPattern::R50k, SplitPattern::Cl100k, SplitPattern::Qwen, SplitPattern::O200k]
            .into_iter()
            .find(|k| k.regex() == regex || (*k == SplitPattern::R50k && regex == GPT2_REGEX));
        if p["type"] == "Sequence"
            && split["type"] == "Split"
            && split["behavior"] == "Isolated"
            && split["invert"] == false
            && byte_level(bl, false)
        {
            return known.ok_or_else(|| format!("split regex {regex:?} is not one tokq has a pre-tokenizer for"));
        }
    }
    Err(format!("pre-tokenizer {p} is not supported"))
}

/// The regex the `tokenizers` crate's ByteLevel uses, spelled as it spells it.
const GPT2_REGEX: &str = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+";

fn merge_pair(m: &Value, bytes: fn(&str) -> Result<Vec<u8>, Unsupported>) -> Result<(Vec<u8>, Vec<u8>), Unsupported> {
    let (a, b) = match m {
        Value::String(s) => s.split_once(' ').ok_or_else(|| format!("merge '{s}' is not 'A B'"))?,
        Value::Array(pair) => match pair.as_slice() {
            [Value::String(a), Value::String(b)] => (a.as_str(), b.as_str()),
            _ => return Err(format!("merge {m} is not a pair of strings")),
        },
        _ => return Err(format!("merge {m} is not a string or a pair")),
    };
    Ok((bytes(a)?, bytes(b)?))
}

/// GPT-2's byte-to-character map, inverted: each printable byte stands for itself, the others
/// for U+0100 onwards in byte order.
static BYTE_OF_CHAR: LazyLock<[Option<u8>; 324]> = LazyLock::new(|| {
    let printable = |b: u8| (33..=126).contains(&b) || (161..=172).contains(&b) || b >= 174;
    let mut table = [None; 324];
    let mut next = 256;
    for b in 0..=255u8 {
        if printable(b) {
            table[b as usize] = Some(b);
        } else {
            table[next] = Some(b);
            next += 1;
        }
    }
    table
});

fn byte_level(token: &str) -> Result<Vec<u8>, Unsupported> {
    token
        .chars()
        .map(|c| BYTE_OF_CHAR.get(c as usize).copied().flatten())
        .collect::<Option<Vec<u8>>>()
        .ok_or_else(|| format!("token {token:?} is not byte-level"))
}

fn added_tokens(list: &Value, normalizer: Normalizer) -> Result<AddedTokens, Unsupported> {
    let (mut raw, mut normalized) = (vec![], vec![]);
    for t in list.as_array().map(Vec::as_slice).unwrap_or_default() {
        let content = t["content"].as_str().ok_or("added token without content")?;
        if t["lstrip"] == true || t["rstrip"] == true || t["single_word"] == true {
            return Err(format!("added token {content:?} uses lstrip/rstrip/single_word"));
        }
        let id = t["id"].as_u64().and_then(|i| u32::try_from(i).ok()).ok_or("added token without id")?;
        if t["normalized"] == true {
            normalized.push((normalizer.apply(content).unwrap_or_else(|| content.to_string()), id));
        } else {
            raw.push((content.to_string(), id));
        }
    }
    AddedTokens::new(raw, normalized)
}
