//! Writes the two OpenAI rank tables that tiktoken-rs bundles (cl100k_base, o200k_base) into
//! the build as plain token lists, so that loading `tiktoken:o200k_base` reads its 200k tokens
//! instead of building tiktoken-rs's encoder, decoding every token back out of it and dropping
//! it: that was 0.25 of the 0.33 s o200k took to load. The tables still come from the package,
//! never from the repository or the network.
//!
//! `<name>.tokens`: every ordinary token in rank order, each as a little-endian u16 length and
//! its bytes (the ranks run from 0 without gaps). `<name>.special`: one `id name` line per
//! special token.

use std::path::Path;

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    let out = std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR for build scripts");
    let out = Path::new(&out);
    let tables = [("cl100k_base", tiktoken_rs::cl100k_base()), ("o200k_base", tiktoken_rs::o200k_base())];
    for (name, bpe) in tables {
        let bpe = bpe.expect("tiktoken-rs builds the tables it bundles");
        let mut tokens = Vec::new();
        let mut rank = 0u32;
        // The ordinary ranks end at the first id that does not decode; the special ones sit above.
        while let Ok(token) = bpe.decode_bytes(&[rank]) {
            let len = u16::try_from(token.len()).expect("tokens are shorter than 64 KiB");
            tokens.extend_from_slice(&len.to_le_bytes());
            tokens.extend_from_slice(&token);
            rank += 1;
        }
        // tiktoken-rs keeps its special tokens in a hash set: sorted, so that builds write the same file.
        let mut special: Vec<String> = bpe.special_tokens().into_iter().filter_map(|name| match bpe.encode_with_special_tokens(name)[..] {
            [id] => Some(format!("{id} {name}\n")),
            _ => None,
        }).collect();
        special.sort();
        let special = special.concat();
        std::fs::write(out.join(format!("{name}.tokens")), tokens).expect("OUT_DIR is writable");
        std::fs::write(out.join(format!("{name}.special")), special).expect("OUT_DIR is writable");
    }
}
