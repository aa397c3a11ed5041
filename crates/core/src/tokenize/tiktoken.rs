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

/// A bundled table as the build wrote it from tiktoken-rs's (`crates/core/build.rs`): reading
/// one takes a millisecond, where building tiktoken-rs's encoder to read its tokens back out of
/// it took 0.25 s for o200k.
pub struct Bundled {
    /// The ordinary tokens and their ranks.
    pub tokens: Vec<(&'static [u8], u32)>,
    /// Where each rank's token is cut by its last merge when it is encoded alone: the left
    /// part's length in bytes, 0 for none ([`BpeModel::from_last_merges`]).
    ///
    /// [`BpeModel::from_last_merges`]: crate::tokenize::fast::bpe::BpeModel::from_last_merges
    pub splits: Vec<u16>,
    /// The special tokens by name (`<|endoftext|>` -> 100257).
    pub named: FxHashMap<String, u32>,
    /// The sha256 of the official rank file.
    pub sha256: &'static str,
}

/// A bundled table.
pub fn builtin_table(which: Builtin) -> Result<Bundled, String> {
    macro_rules! built {
        ($name:literal) => {
            (
                &include_bytes!(concat!(env!("OUT_DIR"), "/", $name, ".tokens"))[..],
                &include_bytes!(concat!(env!("OUT_DIR"), "/", $name, ".splits"))[..],
                include_str!(concat!(env!("OUT_DIR"), "/", $name, ".special")),
            )
        };
    }
    let ((mut listed, splits, special), sha256) = match which {
        Builtin::Cl100kBase => (built!("cl100k_base"), CL100K_SHA256),
        Builtin::O200kBase => (built!("o200k_base"), O200K_SHA256),
    };
    let corrupt = || "tokq's build of this table is cut short: rebuild tokq".to_string();
    let mut tokens = Vec::with_capacity(splits.len() / 2);
    while let [lo, hi, rest @ ..] = listed {
        let len = u16::from_le_bytes([*lo, *hi]) as usize;
        let token = rest.get(..len).ok_or_else(corrupt)?;
        tokens.push((token, tokens.len() as u32));
        listed = &rest[len..];
    }
    let splits: Vec<u16> = splits.chunks_exact(2).map(|s| u16::from_le_bytes([s[0], s[1]])).collect();
    if splits.len() != tokens.len() {
        return Err(corrupt());
    }
    let named = special.lines().map(|line| {
        let (id, name) = line.split_once(' ').ok_or_else(corrupt)?;
        Ok((name.to_string(), id.parse().map_err(|_| corrupt())?))
    });
    Ok(Bundled { tokens, splits, named: named.collect::<Result<_, String>>()?, sha256 })
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

#[cfg(test)]
mod tests {
    use std::sync::LazyLock;

    use proptest::prelude::*;

    use super::*;
    use crate::tokenize::{cached, EncodeOptions, DEFAULT_CHUNK_BYTES};

    /// Each bundled table beside tiktoken-rs's encoder of it, built once for the tests.
    static REFERENCE: LazyLock<[(Builtin, CoreBPE, Bundled); 2]> = LazyLock::new(|| {
        [Builtin::Cl100kBase, Builtin::O200kBase].map(|which| (which, builtin_bpe(which).unwrap().0, builtin_table(which).unwrap()))
    });

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        /// Texts made of the tables' own tokens glued together (so that merges across their
        /// edges compete with the merges inside), with spaces, letters of two scripts and
        /// digits between them: tokq's encoder, which keeps each token's last merge only, gives
        /// tiktoken-rs's ids.
        #[test]
        fn glued_tokens_encode_as_tiktoken_rs_does(
            picks in proptest::collection::vec((any::<u32>(), proptest::sample::select(&["", " ", "é", "x", "中", "1", "'s", "\n"][..])), 1..40),
        ) {
            for (i, spec) in ["tiktoken:cl100k_base", "tiktoken:o200k_base"].into_iter().enumerate() {
                let (_, reference, table) = &REFERENCE[i];
                let mut bytes = Vec::new();
                for (pick, between) in &picks {
                    bytes.extend_from_slice(table.tokens[*pick as usize % table.tokens.len()].0);
                    bytes.extend_from_slice(between.as_bytes());
                }
                let text = String::from_utf8_lossy(&bytes);
                let mut ours = Vec::new();
                cached(spec).unwrap().encode_into(&text, &EncodeOptions::default(), DEFAULT_CHUNK_BYTES, &mut ours).unwrap();
                prop_assert_eq!(ours, reference.encode_ordinary(&text), "{} on {:?}", spec, text);
            }
        }
    }

    /// The tables the build wrote hold tiktoken-rs's own: every ordinary token at its rank, none
    /// after the last, and the special tokens with their ids.
    #[test]
    fn the_built_tables_are_tiktoken_rs_own() {
        for (which, reference, Bundled { tokens: ranks, named, .. }) in REFERENCE.iter() {
            for &(token, rank) in ranks {
                assert_eq!(reference.decode_bytes(&[rank]).unwrap(), token, "{which:?} rank {rank}");
            }
            assert!(reference.decode_bytes(&[ranks.len() as u32]).is_err(), "{which:?} has more ordinary tokens");
            let specials = reference.special_tokens();
            assert_eq!(named.len(), specials.len(), "{which:?}");
            for name in specials {
                assert_eq!(reference.encode_with_special_tokens(name), [named[name]], "{which:?} {name}");
            }
        }
    }
}
