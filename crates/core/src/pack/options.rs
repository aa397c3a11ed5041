//! `pack_tokens` options: `'eos=ID,tail=drop|pad,pad=ID,segment_ids=true,ids=COLUMN,by=partition|source,tokenizer=SPEC'`.
//! `eos` and `pad` may be token strings (`eos=<|endoftext|>`), as in `tokenize`: they are looked up
//! in the tokenizer that `tokenizer=` names, or else in the one the packed view tokenizes with.

use serde::{Deserialize, Serialize};

use crate::error::TokqError;

/// What one packing stream is: the rows of a stream never mix with another's, and each stream
/// ends with its own partial row (dropped or padded, as [`Tail`] says).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Streams {
    /// Each input partition, in its order (a view with ORDER BY is one partition).
    #[default]
    Partition,
    /// Each input file (`_source`), its documents in `_row` order. The files pack in parallel, so a
    /// cluster has no single packing task, and the rows do not depend on partitions or executors.
    Source,
}

/// What happens to the last, partial row of a stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Tail {
    /// The partial row is dropped, its tokens counted as dropped.
    Drop,
    /// The partial row is filled with this id.
    Pad(u32),
}

/// How documents are packed into rows: `'seq_len=2048,eos=...,tail=pad,pad=0'`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PackOptions {
    /// Tokens per row.
    pub seq_len: usize,
    /// Appended after every document, so that documents stay separated in a row.
    pub eos: Option<u32>,
    /// What becomes of the last, partial row.
    pub tail: Tail,
    /// Also write a per-token `segment_ids` column (the document's index within its row).
    pub segment_ids: bool,
    /// The input column of token ids.
    pub ids_column: String,
    /// What one stream is. Manifests written before this option have none: partitions.
    #[serde(default)]
    pub by: Streams,
}

fn arg(cause: String) -> TokqError {
    TokqError::Argument { function: "pack_tokens", cause }
}

/// A token id, given as an id or as a token string of `vocab`.
fn id(key: &str, value: &str, vocab: &Vocab) -> Result<u32, TokqError> {
    if let Ok(id) = value.trim().parse() {
        return Ok(id);
    }
    if value.trim().starts_with('-') || value.trim().chars().all(|c| c.is_ascii_digit()) {
        return Err(arg(format!("{key} must be a token id (0..2^32) or a token string, got '{value}'")));
    }
    match vocab {
        Vocab::One(spec) => crate::tokenize::cached(spec)?.id_of(value).map_err(|e| arg(format!("{key}: {e}"))),
        Vocab::Unknown(why) => Err(arg(format!(
            "{key}='{value}' is a token string, and {why}: give its id, or name the tokenizer with 'tokenizer=SPEC'"
        ))),
    }
}

/// The tokenizer that token strings in the options are looked up in.
enum Vocab {
    One(String),
    Unknown(String),
}

impl PackOptions {
    /// Parses the options string; `seq_len` comes separately. `used` are the tokenizer specs the
    /// packed view calls `tokenize` with: a token string is looked up in `tokenizer=`, or else in
    /// the one spec of `used`.
    pub fn parse(seq_len: i64, spec: &str, used: &[String]) -> Result<Self, TokqError> {
        if !(1..=i32::MAX as i64).contains(&seq_len) {
            return Err(arg(format!("seq_len must be between 1 and 2^31-1, got {seq_len}")));
        }
        let mut eos = None;
        let (mut tail, mut pad) = ("drop".to_string(), None);
        let mut segment_ids = false;
        let mut ids_column = "input_ids".to_string();
        let mut by = Streams::Partition;
        let items = spec
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(|item| item.split_once('=').map(|(k, v)| (k.trim(), v)).ok_or_else(|| arg(format!("option '{item}' must be KEY=VALUE"))))
            .collect::<Result<Vec<_>, _>>()?;
        let vocab = match (items.iter().find(|(k, _)| *k == "tokenizer"), used) {
            (Some((_, v)), _) => Vocab::One(v.trim().to_string()),
            (None, [one]) => Vocab::One(one.clone()),
            (None, []) => Vocab::Unknown("the packed view calls no tokenize()".into()),
            (None, many) => Vocab::Unknown(format!("the packed view tokenizes with {} tokenizers ({})", many.len(), many.join(", "))),
        };
        for (key, value) in items {
            match key {
                "eos" => eos = Some(id("eos", value, &vocab)?),
                "tokenizer" => {}
                "tail" => tail = value.trim().to_lowercase(),
                "pad" => pad = Some(id("pad", value, &vocab)?),
                "segment_ids" => {
                    segment_ids = value.trim().parse().map_err(|_| {
                        arg(format!("segment_ids must be true or false, got '{value}'"))
                    })?
                }
                "ids" => ids_column = value.trim().to_string(),
                "by" => {
                    by = match value.trim().to_lowercase().as_str() {
                        "partition" => Streams::Partition,
                        "source" => Streams::Source,
                        other => return Err(arg(format!("by must be partition or source, got '{other}'"))),
                    }
                }
                other => {
                    return Err(arg(format!("unknown option '{other}' (known: eos, tail, pad, segment_ids, ids, by, tokenizer)")))
                }
            }
        }
        let tail = match (tail.as_str(), pad) {
            ("drop", None) => Tail::Drop,
            ("drop", Some(_)) => {
                return Err(arg("pad= needs tail=pad (tail=drop writes no padding)".into()))
            }
            ("pad", Some(p)) => Tail::Pad(p),
            ("pad", None) => {
                return Err(arg("tail=pad needs the padding id, for example pad=0".into()))
            }
            (other, _) => return Err(arg(format!("tail must be drop or pad, got '{other}'"))),
        };
        Ok(Self { seq_len: seq_len as usize, eos, tail, segment_ids, ids_column, by })
    }
}
