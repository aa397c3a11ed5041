//! Writes the two OpenAI rank tables that tiktoken-rs bundles (cl100k_base, o200k_base) into
//! the build as plain lists, so that loading `tiktoken:o200k_base` reads its 200k tokens
//! instead of building tiktoken-rs's encoder, decoding every token back out of it and dropping
//! it (0.25 of the 0.33 s o200k took to load), and knows each token's one merge. The tables
//! still come from the package, never from the repository or the network.
//!
//! `<name>.tokens`: every ordinary token in rank order, each as a little-endian u16 length and
//! its bytes (the ranks run from 0 without gaps). `<name>.splits`: for each rank, a
//! little-endian u16: the length in bytes of the left part of the token's last merge when it is
//! encoded alone, 0 for a single byte and for a token byte-pair encoding never forms (two bytes
//! a token; the two parts' ranks would take eight, and save only their two lookups at load).
//! `<name>.special`: one `id name` line per special token.

use std::collections::HashMap;
use std::path::Path;

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    let out = std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR for build scripts");
    let out = Path::new(&out);
    let tables = [("cl100k_base", tiktoken_rs::cl100k_base()), ("o200k_base", tiktoken_rs::o200k_base())];
    for (name, bpe) in tables {
        let bpe = bpe.expect("tiktoken-rs builds the tables it bundles");
        // The ordinary ranks end at the first id that does not decode; the special ones sit above.
        let tokens: Vec<Vec<u8>> = (0u32..).map_while(|rank| bpe.decode_bytes(&[rank]).ok()).collect();
        let ranks: HashMap<&[u8], u32> = tokens.iter().zip(0u32..).map(|(t, rank)| (t.as_slice(), rank)).collect();
        let (mut listed, mut splits) = (Vec::new(), Vec::new());
        for token in &tokens {
            let len = u16::try_from(token.len()).expect("tokens are shorter than 64 KiB");
            listed.extend_from_slice(&len.to_le_bytes());
            listed.extend_from_slice(token);
            let split = last_merge(token, &ranks).unwrap_or(0) as u16;
            splits.extend_from_slice(&split.to_le_bytes());
        }
        // tiktoken-rs keeps its special tokens in a hash set: sorted, so that builds write the same file.
        let mut special: Vec<String> = bpe
            .special_tokens()
            .into_iter()
            .filter_map(|name| match bpe.encode_with_special_tokens(name)[..] {
                [id] => Some(format!("{id} {name}\n")),
                _ => None,
            })
            .collect();
        special.sort();
        for (ext, bytes) in [("tokens", listed), ("splits", splits), ("special", special.concat().into_bytes())] {
            std::fs::write(out.join(format!("{name}.{ext}")), bytes).expect("OUT_DIR is writable");
        }
    }
}

/// Where `token` is cut into the two parts it is last merged from when tiktoken's byte-pair
/// encoding runs on its bytes alone (adjacent parts joined lowest rank first, leftmost among
/// equals, until no two join), if that ends in the token itself.
fn last_merge(token: &[u8], ranks: &HashMap<&[u8], u32>) -> Option<usize> {
    // Each part as the end of its bytes in `token`; a part starts where the one before ends.
    let mut ends: Vec<usize> = (1..=token.len()).collect();
    let mut last = None;
    while ends.len() > 1 {
        let start = |i: usize| if i == 0 { 0 } else { ends[i - 1] };
        let (_, i) = (0..ends.len() - 1).filter_map(|i| Some((*ranks.get(&token[start(i)..ends[i + 1]])?, i))).min()?;
        last = Some(ends[i] - start(i));
        ends.remove(i);
    }
    last
}
