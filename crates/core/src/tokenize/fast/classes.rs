//! The Unicode classes the split regexes test, as one byte of flags per code point.
//!
//! Two references, two Unicode versions, so two tables ([`Classes::of`]):
//! - tiktoken compiles its regexes with `fancy-regex`, whose classes come from `regex-syntax`
//!   (Unicode 16): the tiktoken table is built from those same sets, so `\p{L}` means exactly
//!   what it means there;
//! - Hugging Face tokenizers 1.0 splits with `bitcannon`'s classifier (Unicode 17): the
//!   `tokenizer.json` table is read off that classifier, code point by code point.
//!
//! They differ only on the code points Unicode 17 assigned. A two-level table (128-code-point
//! blocks, identical blocks shared) keeps lookups to two loads and the whole table in a few tens
//! of kilobytes.

use std::sync::LazyLock;

use regex_syntax::hir::{Class, HirKind};

/// `\p{L}`
pub const LETTER: u8 = 1;
/// `\p{N}`
pub const NUMBER: u8 = 2;
/// `\s` (White_Space)
pub const SPACE: u8 = 4;
/// o200k's "upper" set: `[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]`
pub const UPPER: u8 = 8;
/// o200k's "lower" set: `[\p{Ll}\p{Lm}\p{Lo}\p{M}]`
pub const LOWER: u8 = 16;

const BLOCK: usize = 128;
const CODE_POINTS: usize = 0x110000;

/// Whose Unicode tables a tokenizer must split with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unicode {
    /// tiktoken's (`regex-syntax`).
    Tiktoken,
    /// Hugging Face tokenizers 1.0's (`bitcannon`).
    Tokenizers,
}

/// Each code point's character class for the pre-tokenizer, in two-level blocks.
pub struct Classes {
    index: Vec<u16>,
    blocks: Vec<[u8; BLOCK]>,
}

static TIKTOKEN: LazyLock<Classes> = LazyLock::new(|| Classes::pack(&from_regex_syntax()));
static TOKENIZERS: LazyLock<Classes> = LazyLock::new(|| Classes::pack(&from_bitcannon()));

impl Classes {
    /// The table of `unicode`, built on first use.
    pub fn of(unicode: Unicode) -> &'static Classes {
        match unicode {
            Unicode::Tiktoken => &TIKTOKEN,
            Unicode::Tokenizers => &TOKENIZERS,
        }
    }

    /// The flags of the code point `cp` (a valid `char` value).
    #[inline]
    pub fn of_code_point(&self, cp: u32) -> u8 {
        let cp = cp as usize;
        self.blocks[self.index[cp / BLOCK] as usize][cp % BLOCK]
    }

    fn pack(flat: &[u8]) -> Self {
        let mut blocks: Vec<[u8; BLOCK]> = Vec::new();
        let mut seen = rustc_hash::FxHashMap::default();
        let index = flat
            .chunks_exact(BLOCK)
            .map(|chunk| {
                let block: [u8; BLOCK] = chunk.try_into().expect("exact chunks");
                *seen.entry(block).or_insert_with(|| {
                    blocks.push(block);
                    (blocks.len() - 1) as u16
                })
            })
            .collect();
        Self { index, blocks }
    }
}

fn from_regex_syntax() -> Vec<u8> {
    let mut flat = vec![0u8; CODE_POINTS];
    let sets = [
        (LETTER, r"\p{L}"),
        (NUMBER, r"\p{N}"),
        (SPACE, r"\s"),
        (UPPER, r"[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]"),
        (LOWER, r"[\p{Ll}\p{Lm}\p{Lo}\p{M}]"),
    ];
    for (flag, pattern) in sets {
        let hir = regex_syntax::parse(pattern).expect("class patterns are valid");
        let HirKind::Class(Class::Unicode(class)) = hir.kind() else {
            unreachable!("{pattern} is a Unicode class")
        };
        for r in class.ranges() {
            for cp in r.start() as usize..=r.end() as usize {
                flat[cp] |= flag;
            }
        }
    }
    flat
}

/// bitcannon tags each character with an atom: the coarse class in the low nibble (letter,
/// numbers, whitespace, mark, ...) and a refinement in the high one (case for letters; for
/// marks, the symbols and joiners that are not `\p{M}`). The characters are classified a run
/// of [`RUN`] code points at a time, as one UTF-8 text, and the planes no character class can
/// reach are not asked: a call per character of all 1.1M took 25 ms of every `tokenizer.json`
/// load.
fn from_bitcannon() -> Vec<u8> {
    let mut flat = vec![0u8; CODE_POINTS];
    let (mut text, mut tags) = (String::with_capacity(4 * RUN), vec![0u8; 4 * RUN]);
    for first in (0..CODE_POINTS as u32).step_by(RUN).filter(|first| !FLAGLESS_PLANES.iter().any(|p| p.contains(first))) {
        text.clear();
        text.extend((first..first + RUN as u32).filter_map(char::from_u32));
        bitcannon::classify::classify(text.as_bytes(), &mut tags[..text.len()]);
        for (at, c) in text.char_indices() {
            flat[c as usize] = flags_of_atom(tags[at]);
        }
    }
    flat
}

/// Code points classified per call in [`from_bitcannon`]: 16 KiB of text at most.
const RUN: usize = 4096;

/// Planes whose every code point has no flag: 4 to 13, unassigned (the Unicode roadmap leaves
/// them free), and 15 and 16, private use (`Co`) for good. 70% of the code points; a Unicode
/// version that assigned one would fail `runs_classify_as_single_characters_do`, which asks
/// bitcannon about every code point.
const FLAGLESS_PLANES: [std::ops::Range<u32>; 2] = [0x40000..0xE0000, 0xF0000..0x110000];

/// The [`Classes`] flags of a character bitcannon tagged `tag`.
fn flags_of_atom(tag: u8) -> u8 {
    use bitcannon::classify::Atom;
    let (coarse, refined) = (tag & 0x0F, tag & 0xF0);
    match coarse {
        c if c == Atom::Letter as u8 => match tag {
            t if t == Atom::UpperLetter as u8 => LETTER | UPPER,
            t if t == Atom::LowerLetter as u8 => LETTER | LOWER,
            // Lm and Lo (Han included): in both of o200k's sets.
            _ => LETTER | UPPER | LOWER,
        },
        c if c == Atom::NumWord as u8 || c == Atom::NumOther as u8 => NUMBER,
        c if c == Atom::Newline as u8 || c == Atom::Space as u8 || c == Atom::WsOther as u8 => SPACE,
        c if c == Atom::Mark as u8 && refined == 0 => UPPER | LOWER,
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_agree_with_the_regex_engine() {
        let engine = |p: &str| regex::Regex::new(&format!("^{p}$")).unwrap();
        let checks = [
            (LETTER, engine(r"\p{L}")),
            (NUMBER, engine(r"\p{N}")),
            (SPACE, engine(r"\s")),
            (UPPER, engine(r"[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]")),
            (LOWER, engine(r"[\p{Ll}\p{Lm}\p{Lo}\p{M}]")),
        ];
        let mut buf = [0u8; 4];
        for c in (0..CODE_POINTS as u32).step_by(7).filter_map(char::from_u32) {
            for (flag, re) in &checks {
                assert_eq!(Classes::of(Unicode::Tiktoken).of_code_point(c as u32) & flag != 0, re.is_match(c.encode_utf8(&mut buf)), "{c:?} flag {flag}");
            }
        }
        let t = Classes::of(Unicode::Tiktoken);
        assert_eq!(t.of_code_point('a' as u32), LETTER | LOWER);
        assert_eq!(t.of_code_point(0x301), UPPER | LOWER, "a combining mark is in both o200k sets, and not a letter");
        assert_eq!(t.of_code_point(0x3000), SPACE);
    }

    /// The table read off runs of text is the table read character by character.
    #[test]
    fn runs_classify_as_single_characters_do() {
        let table = Classes::of(Unicode::Tokenizers);
        let (mut buf, mut tags) = ([0u8; 4], [0u8; 4]);
        for c in (0..CODE_POINTS as u32).filter_map(char::from_u32) {
            let text = c.encode_utf8(&mut buf).as_bytes();
            bitcannon::classify::classify_scalar(text, &mut tags[..text.len()]);
            assert_eq!(table.of_code_point(c as u32), flags_of_atom(tags[0]), "{c:?} (U+{:04X})", c as u32);
        }
    }

    #[test]
    fn the_two_references_differ_only_where_unicode_17_assigned() {
        let (tiktoken, tokenizers) = (Classes::of(Unicode::Tiktoken), Classes::of(Unicode::Tokenizers));
        let unassigned_in_16 = regex::Regex::new(r"^\p{Cn}$").unwrap();
        let mut buf = [0u8; 4];
        let mut differ = 0;
        for c in (0..CODE_POINTS as u32).filter_map(char::from_u32) {
            let (a, b) = (tiktoken.of_code_point(c as u32), tokenizers.of_code_point(c as u32));
            // Unicode 17 moved U+0295 (ʕ) from Ll to Lo: in o200k's upper set only there.
            if a != b && c != '\u{295}' {
                assert!(unassigned_in_16.is_match(c.encode_utf8(&mut buf)), "{c:?} (U+{:04X}): {a} vs {b}", c as u32);
                differ += 1;
            }
        }
        // Tolong Siki digits, new in Unicode 17: numbers to tokenizers 1.0, unassigned to tiktoken.
        assert_eq!(tokenizers.of_code_point(0x11DE0), NUMBER);
        assert_eq!(tiktoken.of_code_point(0x11DE0), 0);
        assert_eq!((tiktoken.of_code_point(0x295), tokenizers.of_code_point(0x295)), (LETTER | LOWER, LETTER | UPPER | LOWER));
        assert!(differ < 10_000, "{differ} code points differ");
    }
}
