//! tiktoken-style BPE: bundled OpenAI ranks, or a `.tiktoken` rank file with a named split pattern.

use base64::Engine;
use rustc_hash::FxHashMap;
use tiktoken_rs::CoreBPE;
use unicode_normalization::UnicodeNormalization;

use super::spec::{Builtin, SplitPattern};
use super::Encode;

/// sha256 of the official rank files that tiktoken-rs bundles (the same hashes tiktoken checks).
pub(crate) const CL100K_SHA256: &str = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7";
const O200K_SHA256: &str = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d";

/// tiktoken-rs as the reference encoder for rank files.
pub struct Tiktoken {
    bpe: CoreBPE,
    nfc: bool,
}

/// A rank table: token bytes to id.
pub type Ranks = FxHashMap<Vec<u8>, u32>;

impl Tiktoken {
    /// Returns the encoder and the sha256 of its rank table.
    pub fn builtin(which: Builtin) -> Result<(Self, String), String> {
        let (bpe, sha) = builtin_bpe(which)?;
        Ok((Self { bpe, nfc: false }, sha.to_string()))
    }

    /// An encoder over a rank table and a split pattern.
    pub fn from_ranks(ranks: Ranks, pattern: SplitPattern) -> Result<Self, String> {
        let bpe = CoreBPE::new(ranks, FxHashMap::default(), pattern.regex()).map_err(|e| e.to_string())?;
        Ok(Self { bpe, nfc: pattern.nfc() })
    }
}

fn builtin_bpe(which: Builtin) -> Result<(CoreBPE, &'static str), String> {
    let (bpe, sha) = match which {
        Builtin::Cl100kBase => (tiktoken_rs::cl100k_base(), CL100K_SHA256),
        Builtin::O200kBase => (tiktoken_rs::o200k_base(), O200K_SHA256),
    };
    Ok((bpe.map_err(|e| e.to_string())?, sha))
}

/// A bundled table read back from tiktoken-rs: its ordinary ranks, its special tokens by name
/// (`<|endoftext|>` -> 100257) and its sha256. tiktoken-rs keeps its table private, so the ranks
/// are read back by decoding each one; the ordinary ranks of both tables run from 0 without gaps,
/// and the special tokens sit above the first gap.
pub fn builtin_table(which: Builtin) -> Result<(Ranks, FxHashMap<String, u32>, String), String> {
    let (bpe, sha) = builtin_bpe(which)?;
    // Into a vector first, so that the map is allocated once at its size instead of growing
    // through every power of two.
    let tokens: Vec<Vec<u8>> = (0u32..).map_while(|r| bpe.decode_bytes(&[r]).ok()).collect();
    let mut ranks = Ranks::with_capacity_and_hasher(tokens.len(), Default::default());
    ranks.extend(tokens.into_iter().zip(0u32..));
    let named = bpe.special_tokens().into_iter().map(|t| (t.to_string(), bpe.encode_with_special_tokens(t)));
    let named = named.filter_map(|(t, ids)| <[u32; 1]>::try_from(ids).ok().map(|[id]| (t, id))).collect();
    Ok((ranks, named, sha.to_string()))
}

/// Parses a `.tiktoken` rank file: one `BASE64 RANK` pair per line.
pub fn parse_rank_file(bytes: &[u8]) -> Result<Ranks, String> {
    let text = std::str::from_utf8(bytes).map_err(|e| format!("rank file is not UTF-8: {e}"))?;
    let mut encoder: Ranks = FxHashMap::default();
    let mut seen_ranks = rustc_hash::FxHashSet::default();
    for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let bad = |what: &str| format!("rank file line {}: {what}: '{line}'", i + 1);
        let (token, rank) = line.split_once(' ').ok_or_else(|| bad("expected 'BASE64 RANK'"))?;
        let token = base64::engine::general_purpose::STANDARD
            .decode(token)
            .map_err(|_| bad("token is not base64"))?;
        let rank: u32 = rank.trim().parse().map_err(|_| bad("rank is not an integer"))?;
        if !seen_ranks.insert(rank) {
            return Err(bad("rank appears twice"));
        }
        if encoder.insert(token, rank).is_some() {
            return Err(bad("token appears twice"));
        }
    }
    if encoder.is_empty() {
        return Err("rank file has no entries".into());
    }
    Ok(encoder)
}

impl Encode for Tiktoken {
    fn encode(&self, text: &str) -> Result<Vec<u32>, String> {
        // encode_ordinary: text that looks like a special token stays text, as in tiktoken.
        let encode = || {
            if self.nfc {
                self.bpe.encode_ordinary(&text.nfc().collect::<String>())
            } else {
                self.bpe.encode_ordinary(text)
            }
        };
        crate::guard::quietly(encode).map_err(|cause| {
            format!(
                "the split regex gave up on a {}-byte document ({cause}); it has a run of repeated \
                 characters too long for the regex engine: clean or filter such documents first",
                text.len()
            )
        })
    }

    fn token_id(&self, token: &str) -> Option<u32> {
        self.bpe.encode_with_special_tokens(token).as_slice().try_into().ok().map(|[id]: [u32; 1]| id)
    }

    fn backend(&self) -> &'static str {
        "tiktoken-rs"
    }
}
