//! `text_hash`: the 128-bit xxh3 of a text's UTF-8 bytes. At 128 bits an accidental collision is
//! out of reach for any corpus (about 2^-58 for ten billion documents), where 64 bits would merge
//! distinct documents at that scale.

use xxhash_rust::xxh3::xxh3_128;

/// The 128-bit xxh3 of `text`'s UTF-8 bytes, big-endian.
pub fn text_hash(text: &str) -> [u8; 16] {
    xxh3_128(text.as_bytes()).to_be_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_texts_only() {
        assert_eq!(text_hash("a b"), text_hash("a b"));
        assert_ne!(text_hash("a b"), text_hash("a  b"));
        // xxh3-128 of the empty input, as the reference implementation gives it.
        assert_eq!(u128::from_be_bytes(text_hash("")), 0x99aa06d3014798d86001c324468d497f);
    }
}
