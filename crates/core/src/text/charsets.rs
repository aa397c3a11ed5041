//! datatrove's character sets (`utils/text.py`), written to `datatrove/sets.json` by
//! `tests/parity/gen_datatrove_sets.py`.

use std::sync::LazyLock;

use rustc_hash::FxHashSet;

struct CharSet {
    ascii: [bool; 128],
    other: FxHashSet<char>,
}

impl CharSet {
    fn new(code_points: impl IntoIterator<Item = u32>) -> Self {
        let mut set = Self { ascii: [false; 128], other: FxHashSet::default() };
        for c in code_points.into_iter().filter_map(char::from_u32) {
            match set.ascii.get_mut(c as usize) {
                Some(slot) => *slot = true,
                None => {
                    set.other.insert(c);
                }
            }
        }
        set
    }

    fn contains(&self, c: char) -> bool {
        match self.ascii.get(c as usize) {
            Some(&b) => b,
            None => self.other.contains(&c),
        }
    }
}

#[derive(serde::Deserialize)]
struct Sets {
    punctuation: Vec<u32>,
    terminal_punctuation: Vec<u32>,
}

static SETS: LazyLock<(CharSet, CharSet, CharSet)> = LazyLock::new(|| {
    let sets: Sets = serde_json::from_str(include_str!("datatrove/sets.json")).unwrap_or_else(|e| panic!("datatrove/sets.json: {e}"));
    let union = sets.punctuation.iter().chain(&sets.terminal_punctuation).copied().collect::<Vec<_>>();
    (CharSet::new(sets.punctuation), CharSet::new(sets.terminal_punctuation), CharSet::new(union))
});

/// `PUNCTUATION`: the characters `simplify_text` turns into spaces.
pub fn is_punctuation(c: char) -> bool {
    SETS.0.contains(c)
}

/// `TERMINAL_PUNCTUATION`: line ends that FineWeb's `line_punct_ratio` counts.
pub fn is_terminal_punctuation(c: char) -> bool {
    SETS.1.contains(c)
}

/// `PUNCTUATION_SET`: a word made only of these is a symbol, not a word, for Gopher.
pub fn is_symbol(c: char) -> bool {
    SETS.2.contains(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sets_hold_datatrove_characters() {
        assert!(is_punctuation('!') && is_punctuation('\x00') && !is_punctuation('\t') && !is_punctuation('\n') && !is_punctuation(' '));
        assert!(is_terminal_punctuation('.') && is_terminal_punctuation('。') && !is_terminal_punctuation(','));
        assert!(is_symbol('。') && is_symbol(',') && !is_symbol('a'));
    }
}
