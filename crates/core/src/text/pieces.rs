//! The pieces of a text between ASCII spaces, each with whether it is ASCII letters only: the
//! first cut of the spaCy-equivalent word split, where most pieces are plain words.
//!
//! A byte loop that stops at each space pays a mispredicted branch per word (words have no
//! regular length). Here 64 bytes at a time become two bit masks (spaces, and bytes that are
//! neither a space nor a letter); the pieces then come from the set bits of the space mask, and a
//! piece is letters when no bit of the other mask falls inside it.

use std::ops::Range;

const BLOCK: usize = 64;

/// Calls `f(range, letters)` for each piece in order: the byte ranges between single ASCII
/// spaces, an empty range between two adjacent spaces, none after a final space (nor for an empty
/// text); `letters` is true when the piece is non-empty ASCII letters only.
pub fn for_each_piece(bytes: &[u8], mut f: impl FnMut(Range<usize>, bool)) {
    let mut start = 0;
    // Whether the current piece has a non-letter byte in the blocks before this one.
    let mut other_before = false;
    for (k, chunk) in bytes.chunks(BLOCK).enumerate() {
        let base = k * BLOCK;
        let (mut spaces, other) = masks(chunk);
        while spaces != 0 {
            let at = spaces.trailing_zeros() as usize;
            let from = start.max(base) - base;
            let inside = (u64::MAX << from) & !(u64::MAX << at);
            f(start..base + at, base + at > start && !other_before && other & inside == 0);
            start = base + at + 1;
            other_before = false;
            spaces &= spaces - 1;
        }
        let from = start.max(base) - base;
        other_before |= from < BLOCK && other >> from != 0;
    }
    if start < bytes.len() {
        f(start..bytes.len(), !other_before);
    }
}

/// Bit `i` of the first mask: `chunk[i]` is an ASCII space; of the second: it is neither a space
/// nor an ASCII letter. Bits past the chunk's end are 0.
fn masks(chunk: &[u8]) -> (u64, u64) {
    if let Ok(block) = <&[u8; BLOCK]>::try_from(chunk) {
        return masks_of(block);
    }
    // A letter is neither a space nor another byte: the padding sets no bit.
    let mut block = [b'a'; BLOCK];
    block[..chunk.len()].copy_from_slice(chunk);
    masks_of(&block)
}

#[cfg(target_arch = "x86_64")]
fn masks_of(block: &[u8; BLOCK]) -> (u64, u64) {
    use crate::lanes::Lane;
    let (mut spaces, mut kept) = (0u64, 0u64);
    for (lane, chunk) in block.as_chunks::<16>().0.iter().enumerate() {
        let v = Lane::load(chunk);
        let space = v.eq(b' ');
        spaces |= space.at(lane);
        kept |= space.or(v.ascii_letter()).at(lane);
    }
    (spaces, !kept)
}

#[cfg(not(target_arch = "x86_64"))]
fn masks_of(block: &[u8; BLOCK]) -> (u64, u64) {
    block.iter().enumerate().fold((0, 0), |(spaces, other), (i, &b)| {
        (spaces | u64::from(b == b' ') << i, other | u64::from(b != b' ' && !b.is_ascii_alphabetic()) << i)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The byte loop the masks replace.
    fn pieces_spec(bytes: &[u8]) -> Vec<(Range<usize>, bool)> {
        let mut out = Vec::new();
        let mut start = 0;
        while start < bytes.len() {
            let end = bytes[start..].iter().position(|&b| b == b' ').map_or(bytes.len(), |p| start + p);
            let piece = &bytes[start..end];
            out.push((start..end, !piece.is_empty() && piece.iter().all(u8::is_ascii_alphabetic)));
            start = end + 1;
        }
        out
    }

    fn pieces(bytes: &[u8]) -> Vec<(Range<usize>, bool)> {
        let mut out = Vec::new();
        for_each_piece(bytes, |r, letters| out.push((r, letters)));
        out
    }

    #[test]
    fn pieces_cross_blocks_and_keep_empty_ones() {
        let long = format!("{} {}x1 {}", "a".repeat(70), "b".repeat(60), "Z".repeat(130));
        for text in ["", " ", "a", "a ", " a", "a  b", "ab c,d", "\u{e9}t\u{e9} ok", long.as_str()] {
            assert_eq!(pieces(text.as_bytes()), pieces_spec(text.as_bytes()), "{text:?}");
        }
    }

    proptest! {
        #[test]
        fn pieces_are_the_byte_loops(text in "[ aZ0,\u{e9}\u{3000}]{0,200}") {
            prop_assert_eq!(pieces(text.as_bytes()), pieces_spec(text.as_bytes()));
        }
    }
}
