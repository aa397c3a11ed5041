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

use std::borrow::Cow;
use std::sync::LazyLock;

use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::Value;

use super::bpe::{BpeModel, MergeList, Unknown};
use super::{AddedTokens, FastBpe, Normalizer, Split, Unicode};
use crate::tokenize::spec::SplitPattern;

/// Why a file is not on the fast path: one line for `tokq tokenizer`.
pub type Unsupported = String;

/// The parts of a `tokenizer.json` this path reads. Typed rather than a `serde_json::Value`:
/// a Value keeps the vocabulary's object in a `BTreeMap` (128k inserts for Llama-3), which
/// made up a fifth of loading the file.
#[derive(Deserialize)]
struct File<'a> {
    #[serde(default)]
    truncation: Value,
    #[serde(default)]
    padding: Value,
    #[serde(default)]
    normalizer: Value,
    #[serde(default)]
    pre_tokenizer: Value,
    #[serde(default)]
    added_tokens: Value,
    #[serde(borrow)]
    model: Model<'a>,
}

#[derive(Deserialize)]
struct Model<'a> {
    #[serde(rename = "type", default)]
    kind: Value,
    #[serde(default)]
    dropout: Value,
    #[serde(default)]
    byte_fallback: Value,
    #[serde(default)]
    continuing_subword_prefix: Value,
    #[serde(default)]
    end_of_word_suffix: Value,
    #[serde(default)]
    ignore_merges: Value,
    #[serde(default)]
    unk_token: Value,
    #[serde(default)]
    fuse_unk: Value,
    #[serde(default, borrow)]
    vocab: Vocabulary<'a>,
    #[serde(default, borrow)]
    merges: Vec<Merge<'a>>,
}

/// A BPE vocabulary (`{token: id}`) as pairs; `None` for any other shape (Unigram's list).
#[derive(Default)]
struct Vocabulary<'de>(Option<Vec<(Text<'de>, u64)>>);

impl<'de: 'a, 'a> Deserialize<'de> for Vocabulary<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Pairs<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for Pairs<'a> {
            type Value = Vocabulary<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a vocabulary")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Vocabulary<'a>, A::Error> {
                let mut pairs = Vec::with_capacity(map.size_hint().unwrap_or(0));
                while let Some(pair) = map.next_entry::<Text<'a>, u64>()? {
                    pairs.push(pair);
                }
                Ok(Vocabulary(Some(pairs)))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vocabulary<'a>, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Vocabulary(None))
            }
        }
        d.deserialize_any(Pairs(std::marker::PhantomData))
    }
}

/// A string of the file, borrowed where it has no escapes: the 400k strings of a vocabulary and
/// its merges then cost no allocation.
struct Text<'a>(Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Str<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for Str<'a> {
            type Value = Text<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Text<'a>, E> {
                Ok(Text(Cow::Borrowed(s)))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Text<'a>, E> {
                Ok(Text(Cow::Owned(s.to_string())))
            }
        }
        d.deserialize_str(Str(std::marker::PhantomData))
    }
}

/// One merge as the file spells it: `"A B"` (files of tokenizers before 0.20) or `["A", "B"]`.
struct Merge<'a>(Text<'a>, Text<'a>);

impl Merge<'_> {
    /// The two tokens of an `"A B"` merge.
    fn halves<E: de::Error>(s: &str) -> Result<(&str, &str), E> {
        s.split_once(' ').ok_or_else(|| E::custom(format!("merge '{s}' is not 'A B'")))
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Merge<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Pair<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for Pair<'a> {
            type Value = Merge<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a merge, \"A B\" or [\"A\", \"B\"]")
            }
            fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Merge<'a>, E> {
                let (a, b) = Merge::halves(s)?;
                Ok(Merge(Text(Cow::Borrowed(a)), Text(Cow::Borrowed(b))))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Merge<'a>, E> {
                let (a, b) = Merge::halves(s)?;
                Ok(Merge(Text(Cow::Owned(a.to_string())), Text(Cow::Owned(b.to_string()))))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Merge<'a>, A::Error> {
                let a = seq.next_element()?.ok_or_else(|| de::Error::invalid_length(0, &self))?;
                let b = seq.next_element()?.ok_or_else(|| de::Error::invalid_length(1, &self))?;
                if seq.next_element::<IgnoredAny>()?.is_some() {
                    return Err(de::Error::invalid_length(3, &self));
                }
                Ok(Merge(a, b))
            }
        }
        d.deserialize_any(Pair(std::marker::PhantomData))
    }
}

/// tokq's encoder for a `tokenizer.json`, or why it runs on the fallback. What it builds is
/// kept compiled on disk, so a change to what this takes or how it builds one must raise
/// [`super::compiled::FORMAT`], or a file compiled before would skip it.
pub fn load(json: &[u8]) -> Result<FastBpe, Unsupported> {
    let v: File = serde_json::from_slice(json).map_err(|e| format!("not a tokenizer.json tokq reads: {e}"))?;
    for (key, value) in [("truncation", &v.truncation), ("padding", &v.padding)] {
        if !value.is_null() {
            return Err(format!("{key} is set"));
        }
    }
    let model = &v.model;
    if model.kind != "BPE" {
        return Err(format!("model {} is not BPE", model.kind));
    }
    let sentencepiece = is_metaspace(&v.normalizer) && v.pre_tokenizer.is_null();
    let (normalizer, split) = match &v.normalizer {
        _ if sentencepiece => (Normalizer::Metaspace, Split::Metaspace),
        Value::Null => (Normalizer::None, Split::Regex(pre_tokenizer(&v.pre_tokenizer)?)),
        n if n["type"] == "NFC" => (Normalizer::Nfc, Split::Regex(pre_tokenizer(&v.pre_tokenizer)?)),
        n => return Err(format!("normalizer {} is not supported (none, NFC, or SentencePiece's Prepend + Replace)", n["type"])),
    };
    // Byte-level files spell bytes as printable characters; SentencePiece files spell UTF-8.
    let spell: fn(&str, &mut Vec<u8>) -> Result<(), Unsupported> =
        if sentencepiece {
            |t, out| {
                out.extend_from_slice(t.as_bytes());
                Ok(())
            }
        } else {
            byte_level
        };
    let bytes = |t: &str| {
        let mut out = Vec::with_capacity(t.len());
        spell(t, &mut out).map(|()| out)
    };
    for (key, value, ok) in [
        ("dropout", &model.dropout, model.dropout.is_null()),
        ("byte_fallback", &model.byte_fallback, model.byte_fallback != true || sentencepiece),
        ("continuing_subword_prefix", &model.continuing_subword_prefix, empty(&model.continuing_subword_prefix)),
        ("end_of_word_suffix", &model.end_of_word_suffix, empty(&model.end_of_word_suffix)),
    ] {
        if !ok {
            return Err(format!("BPE option {key} = {value} is not supported"));
        }
    }
    let vocab = model.vocab.0.as_deref().ok_or("model.vocab is not an object")?;
    let tokens = vocab
        .iter()
        .map(|(token, id)| Ok((bytes(&token.0)?, u32::try_from(*id).map_err(|_| format!("bad id for '{}'", token.0))?)))
        .collect::<Result<Vec<_>, Unsupported>>()?;
    let mut merges = MergeList::default();
    for Merge(a, b) in &model.merges {
        merges.push_with(&a.0, &b.0, spell)?;
    }
    let ignore_merges = model.ignore_merges == true;
    let bpe = if sentencepiece {
        if let Some((token, _)) = vocab.iter().find(|(t, _)| joins_metaspace(&t.0)) {
            return Err(format!("token {:?} has '\u{2581}' after another character, so words cannot be cut at '\u{2581}'", token.0));
        }
        let unk = match model.unk_token.as_str() {
            Some(t) => Some(
                tokens.iter().rev().find(|(b, _)| b == t.as_bytes()).map(|&(_, id)| id)
                    .ok_or_else(|| format!("unk_token {t:?} is not in the vocabulary"))?,
            ),
            None => None,
        };
        let unknown = Unknown { byte_fallback: model.byte_fallback == true, unk, fuse_unk: model.fuse_unk == true };
        BpeModel::sentencepiece(tokens, &merges, ignore_merges, unknown)?
    } else {
        BpeModel::from_merges(tokens, &merges, ignore_merges)?
    };
    Ok(FastBpe::new(bpe, split, Unicode::Tokenizers, normalizer, added_tokens(&v.added_tokens, normalizer)?))
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

fn byte_level(token: &str, out: &mut Vec<u8>) -> Result<(), Unsupported> {
    for c in token.chars() {
        out.push(BYTE_OF_CHAR.get(c as usize).copied().flatten().ok_or_else(|| format!("token {token:?} is not byte-level"))?);
    }
    Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;

    fn reason(json: &str) -> String {
        load(json.as_bytes()).err().expect("not on the fast path")
    }

    #[test]
    fn other_models_and_options_are_refused_with_their_reason() {
        let unigram = r#"{"model": {"type": "Unigram", "vocab": [["<unk>", 0.0], ["a", -1.0]], "unk_id": 0}}"#;
        assert_eq!(reason(unigram), r#"model "Unigram" is not BPE"#);
        let truncated = r#"{"truncation": {"max_length": 8}, "model": {"type": "BPE", "vocab": {}, "merges": []}}"#;
        assert_eq!(reason(truncated), "truncation is set");
        let nfkc = r#"{"normalizer": {"type": "NFKC"}, "model": {"type": "BPE", "vocab": {}, "merges": []}}"#;
        assert!(reason(nfkc).starts_with(r#"normalizer "NFKC" is not supported"#));
        assert!(reason("[1, 2]").starts_with("not a tokenizer.json tokq reads"));
    }

    #[test]
    fn a_sentencepiece_vocabulary_with_a_joined_metaspace_is_refused() {
        let file = r#"{"normalizer": {"type": "Sequence", "normalizers": [
              {"type": "Prepend", "prepend": "▁"}, {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]},
            "model": {"type": "BPE", "byte_fallback": true, "vocab": {"a": 0, "▁": 1, "a▁": 2}, "merges": [["a", "▁"]]}}"#;
        assert!(reason(file).contains(r#"token "a▁" has '▁' after another character"#), "{}", reason(file));
    }
}
