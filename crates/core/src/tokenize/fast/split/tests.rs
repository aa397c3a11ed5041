use proptest::prelude::*;

use super::*;
use crate::tokenize::fast::classes::Unicode;

/// One or more characters of every class the patterns distinguish, and the ones they name.
const ALPHABET: &[char] = &[
    'a', 'z', 'Z', 'é', 'É', 'ǅ', 'ʰ', '中', 'ก', '\u{301}', 'ः', '\u{20DD}', '1', '٣', 'Ⅻ', '½',
    ' ', ' ', ' ', '\t', '\n', '\r', '\u{A0}', '\u{3000}', '\u{85}', '\u{0B}', '\u{1C}', '\u{0}',
    '\'', '\'', 's', 't', 'r', 'e', 'v', 'l', 'm', 'd', 'S', 'L', 'ſ', '/', '!', '.', '😀', '\u{FFFD}',
];

/// Mostly ASCII letters, so that words run past the eight bytes [`ascii_letters`] takes at once,
/// and the characters around the edges of that step: the neighbours of `a`-`z` and `A`-`Z`,
/// non-ASCII letters, a mark and a digit.
const WORDY: &[char] = &[
    'a', 'b', 'k', 'y', 'z', 'A', 'M', 'Z', 'q', 'x', 'e', 't', '@', '[', '`', '{', '\'', 'é', 'ß', '中', '\u{301}', '1', ' ', '\n',
];

/// ASCII of every class the masks tell apart, mostly letters and spaces as prose is, and
/// characters of more bytes after which a word, a number or punctuation may go on.
const LONG: &[char] = &[
    'a', 'b', 'e', 'n', 's', 't', 'z', 'A', 'Z', 'a', 'e', 'o', ' ', ' ', ' ', ' ', '1', '2', '0', '9', '.', ',', '(', '\'',
    '"', '-', '\n', '\r', '\t', '\u{0B}', '\u{1C}', '\u{0}', '\u{7F}', 'é', '中', '٣', '½', '“', '\u{A0}', '\u{3000}', '\u{301}',
    // o200k's capitals and small letters, its `/` after punctuation, and letters of both cases
    // beyond ASCII.
    'H', 'T', 'P', 'S', 'L', '/', 'É', 'ß', 'ǅ', 'ʰ',
];

fn reference(pattern: SplitPattern, text: &str) -> Vec<String> {
    let re = fancy_regex::Regex::new(pattern.regex()).unwrap();
    re.find_iter(text).map(|m| m.unwrap().as_str().to_string()).collect()
}

fn ours(pattern: SplitPattern, text: &str) -> Vec<String> {
    pieces(text, pattern, Classes::of(Unicode::Tiktoken)).map(str::to_string).collect()
}

const PATTERNS: [SplitPattern; 4] =
    [SplitPattern::R50k, SplitPattern::Cl100k, SplitPattern::Qwen, SplitPattern::O200k];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    #[test]
    fn pieces_equal_the_regex(chars in proptest::collection::vec(proptest::sample::select(ALPHABET), 0..40)) {
        let text: String = chars.into_iter().collect();
        for p in PATTERNS {
            prop_assert_eq!(ours(p, &text), reference(p, &text), "{:?} on {:?}", p, text);
        }
    }

    #[test]
    fn pieces_equal_the_regex_on_long_words(chars in proptest::collection::vec(proptest::sample::select(WORDY), 0..80)) {
        let text: String = chars.into_iter().collect();
        for p in PATTERNS {
            prop_assert_eq!(ours(p, &text), reference(p, &text), "{:?} on {:?}", p, text);
        }
    }

    /// Texts longer than the 64 bytes [`window`] reads at once, so that pieces start at every
    /// place of a window and run past its end.
    #[test]
    fn pieces_equal_the_regex_on_long_texts(chars in proptest::collection::vec(proptest::sample::select(LONG), 60..300)) {
        let text: String = chars.into_iter().collect();
        for p in PATTERNS {
            prop_assert_eq!(ours(p, &text), reference(p, &text), "{:?} on {:?}", p, text);
        }
    }

    #[test]
    fn pieces_equal_the_regex_on_any_text(text in "\\PC{0,30}") {
        for p in PATTERNS {
            prop_assert_eq!(ours(p, &text), reference(p, &text), "{:?} on {:?}", p, text);
        }
    }
}

#[test]
fn known_cuts() {
    let cases: &[(SplitPattern, &str, &[&str])] = &[
        (SplitPattern::Cl100k, "I'LL  say 12345!\n\n x", &["I", "'LL", " ", " say", " ", "123", "45", "!\n\n", " x"]),
        (SplitPattern::Qwen, "a 123", &["a", " ", "1", "2", "3"]),
        (SplitPattern::R50k, "it's  12 ok", &["it", "'s", " ", " 12", " ok"]),
        (SplitPattern::O200k, "HeLLo don't\u{301}ABC", &["He", "LLo", " don't", "\u{301}", "ABC"]),
    ];
    for (p, text, want) in cases {
        assert_eq!(ours(*p, text), *want, "{p:?} on {text:?}");
        assert_eq!(reference(*p, text), *want, "the regex itself on {text:?}");
    }
}

#[test]
fn metaspace_pieces_start_at_each_run_of_metaspaces() {
    fn cut(t: &str, raw: bool) -> Vec<(usize, &str)> {
        metaspace_pieces(t, raw).map(|(bars, rest)| (bars, std::str::from_utf8(rest).unwrap())).collect()
    }
    assert_eq!(cut("▁Hello▁▁world▁", false), [(1, "Hello"), (2, "world"), (1, "")]);
    assert_eq!(cut("ab▁c", false), [(0, "ab"), (1, "c")]);
    assert_eq!(cut("▁▁▁", false), [(3, "")]);
    assert_eq!(cut("a b", false), [(0, "a b")], "a space is a character of normalized text");
    assert_eq!(cut("", false), []);
    // Raw text: the prepended `▁`, and spaces and `▁` alike.
    assert_eq!(cut("Hello  world ", true), [(1, "Hello"), (2, "world"), (1, "")]);
    assert_eq!(cut(" ▁ab▁ c", true), [(3, "ab"), (2, "c")]);
    assert_eq!(cut("", true), []);
}

proptest! {
    /// Cutting raw text is cutting it normalized, with no copy.
    #[test]
    fn raw_pieces_are_the_normalized_texts(text in "[ a▁é\u{2580}\u{2582}]{0,40}") {
        let normalized = format!("\u{2581}{}", text.replace(' ', "\u{2581}"));
        let spelled = |(bars, rest): (usize, &[u8])| "\u{2581}".repeat(bars) + std::str::from_utf8(rest).unwrap();
        let raw: Vec<String> = metaspace_pieces(&text, true).map(spelled).collect();
        let want: Vec<String> = if text.is_empty() { vec![] } else { metaspace_pieces(&normalized, false).map(spelled).collect() };
        prop_assert_eq!(raw.concat(), if text.is_empty() { String::new() } else { normalized.clone() });
        prop_assert_eq!(raw, want);
    }
}

#[test]
fn ascii_letters_counts_the_leading_letters_for_every_byte_value() {
    for byte in 0..=255u8 {
        for at in 0..8 {
            let mut word = *b"abcdWXYZ";
            word[at] = byte;
            let want = if byte.is_ascii_alphabetic() { 8 } else { at };
            assert_eq!(ascii_letters(u64::from_le_bytes(word)), want, "{byte:#04x} at {at}");
        }
    }
}
