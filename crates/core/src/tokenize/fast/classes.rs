//! The Unicode classes the split regexes test, as one byte of flags per code point.
//!
//! The sets come from `regex-syntax`, the tables the reference regexes are compiled from
//! (tiktoken's `fancy-regex`), so `\p{L}` here means exactly what it means there. A two-level
//! table (128-code-point blocks, identical blocks shared) keeps lookups to two loads and the
//! whole table in a few tens of kilobytes.

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

struct Table {
    index: Vec<u16>,
    blocks: Vec<[u8; BLOCK]>,
}

static TABLE: LazyLock<Table> = LazyLock::new(build);

/// The flags of the code point `cp` (a valid `char` value).
#[inline]
pub fn of_code_point(cp: u32) -> u8 {
    let t = &*TABLE;
    let cp = cp as usize;
    t.blocks[t.index[cp / BLOCK] as usize][cp % BLOCK]
}

/// Forces the table to be built (so the first document does not pay for it).
pub fn warm() {
    LazyLock::force(&TABLE);
}

fn build() -> Table {
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
    Table { index, blocks }
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
                assert_eq!(of_code_point(c as u32) & flag != 0, re.is_match(c.encode_utf8(&mut buf)), "{c:?} flag {flag}");
            }
        }
        assert_eq!(of_code_point('a' as u32), LETTER | LOWER);
        assert_eq!(of_code_point(0x301), UPPER | LOWER, "a combining mark is in both o200k sets, and not a letter");
        assert_eq!(of_code_point(0x3000), SPACE);
    }
}
