//! The tokenizer spec string a recipe passes to `tokenize(text, spec)`.
//!
//! - `tiktoken:cl100k_base`, `tiktoken:o200k_base`: rank tables bundled in the binary.
//! - `tiktoken:PATH#PATTERN`: a `.tiktoken` rank file (local or `s3://`) with a named split pattern.
//! - anything else: a path or `s3://` URI of a Hugging Face `tokenizer.json`.

use crate::error::{Result, TokqError};

/// What a tokenizer spec names.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum TokenizerSpec {
    /// `tiktoken:cl100k_base` or `tiktoken:o200k_base`.
    BuiltinTiktoken(Builtin),
    /// `tiktoken:PATH#PATTERN`: a rank file and the split pattern it is used with.
    TiktokenFile {
        /// Where the rank file is (a path or `s3://`).
        uri: String,
        /// The split pattern, by name.
        pattern: SplitPattern,
    },
    /// A Hugging Face `tokenizer.json`.
    HuggingFace {
        /// Where it is (a path or `s3://`).
        uri: String,
    },
}

/// The rank tables bundled in the binary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Builtin {
    /// `cl100k_base`.
    Cl100kBase,
    /// `o200k_base`.
    O200kBase,
}

/// Pre-tokenizer split regexes of the tiktoken-style families, by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SplitPattern {
    /// GPT-2 / r50k / p50k.
    R50k,
    /// cl100k_base, also Llama-3.
    Cl100k,
    /// o200k_base.
    O200k,
    /// Qwen: cl100k with single digits; Qwen also normalises to NFC first.
    Qwen,
}

const R50K_PATTERN: &str =
    r"'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+";
const CL100K_PATTERN: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";
const QWEN_PATTERN: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

impl Builtin {
    /// Its split pattern.
    pub fn pattern(self) -> SplitPattern {
        match self {
            Self::Cl100kBase => SplitPattern::Cl100k,
            Self::O200kBase => SplitPattern::O200k,
        }
    }
}

impl SplitPattern {
    /// `r50k`/`gpt2`/`p50k`, `cl100k`/`llama3`, `o200k` or `qwen`.
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "r50k" | "gpt2" | "p50k" => Some(Self::R50k),
            "cl100k" | "llama3" => Some(Self::Cl100k),
            "o200k" => Some(Self::O200k),
            "qwen" => Some(Self::Qwen),
            _ => None,
        }
    }

    /// The split regex.
    pub fn regex(self) -> &'static str {
        match self {
            Self::R50k => R50K_PATTERN,
            Self::Cl100k => CL100K_PATTERN,
            Self::O200k => tiktoken_rs::O200K_BASE_PAT_STR,
            Self::Qwen => QWEN_PATTERN,
        }
    }

    /// Whether texts are NFC-normalized first (Qwen).
    pub fn nfc(self) -> bool {
        matches!(self, Self::Qwen)
    }
}

impl TokenizerSpec {
    /// Reads a spec string.
    pub fn parse(spec: &str) -> Result<Self> {
        let err = |cause: String| TokqError::Tokenizer { spec: spec.to_string(), cause };
        let Some(rest) = spec.strip_prefix("tiktoken:") else {
            if spec.trim().is_empty() {
                return Err(err("empty spec: give a tokenizer.json path or tiktoken:NAME".into()));
            }
            return Ok(Self::HuggingFace { uri: spec.to_string() });
        };
        match rest {
            "cl100k_base" => return Ok(Self::BuiltinTiktoken(Builtin::Cl100kBase)),
            "o200k_base" => return Ok(Self::BuiltinTiktoken(Builtin::O200kBase)),
            _ => {}
        }
        let (uri, pattern) = rest.rsplit_once('#').ok_or_else(|| {
            err("a rank file needs a split pattern: tiktoken:PATH#r50k|cl100k|o200k|qwen \
                 (built-ins: tiktoken:cl100k_base, tiktoken:o200k_base)"
                .into())
        })?;
        let pattern = SplitPattern::parse(pattern).ok_or_else(|| {
            err(format!("unknown split pattern '{pattern}': use r50k, cl100k, o200k or qwen"))
        })?;
        Ok(Self::TiktokenFile { uri: uri.to_string(), pattern })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_form() {
        assert_eq!(
            TokenizerSpec::parse("tiktoken:cl100k_base").unwrap(),
            TokenizerSpec::BuiltinTiktoken(Builtin::Cl100kBase)
        );
        assert_eq!(
            TokenizerSpec::parse("tiktoken:/m/qwen.tiktoken#qwen").unwrap(),
            TokenizerSpec::TiktokenFile { uri: "/m/qwen.tiktoken".into(), pattern: SplitPattern::Qwen }
        );
        assert_eq!(
            TokenizerSpec::parse("s3://b/tok.json").unwrap(),
            TokenizerSpec::HuggingFace { uri: "s3://b/tok.json".into() }
        );
    }

    #[test]
    fn rejects_bad_specs_with_a_hint() {
        let e = TokenizerSpec::parse("tiktoken:/m/x.tiktoken").unwrap_err().to_string();
        assert!(e.contains("split pattern"), "{e}");
        let e = TokenizerSpec::parse("tiktoken:/m/x.tiktoken#nope").unwrap_err().to_string();
        assert!(e.contains("unknown split pattern 'nope'"), "{e}");
        assert!(TokenizerSpec::parse(" ").is_err());
    }
}
