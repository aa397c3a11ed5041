//! Python `str` semantics that the reference filters rely on. datatrove's ratios are computed over
//! Python's notion of a character (a code point), of whitespace and of a line, so these must be
//! exactly Python's, not Rust's near equivalents (`char::is_alphabetic` also accepts combining
//! marks; `str::lines` knows only `\n`).

use unicode_general_category::{get_general_category, GeneralCategory as G};

/// `str.isspace()`: Unicode White_Space plus the ASCII information separators.
pub fn isspace(c: char) -> bool {
    c.is_whitespace() || ('\x1c'..='\x1f').contains(&c)
}

/// A decimal digit of any script, `\p{Nd}` (ASCII checked first).
pub fn is_decimal(c: char) -> bool {
    c.is_ascii_digit() || (!c.is_ascii() && get_general_category(c) == G::DecimalNumber)
}

/// `str.isalpha()` for one character: general category L*.
pub fn isalpha(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_alphabetic();
    }
    matches!(get_general_category(c), G::UppercaseLetter | G::LowercaseLetter | G::TitlecaseLetter | G::ModifierLetter | G::OtherLetter)
}

/// `unicodedata.category(c).startswith("P")`.
pub fn is_punctuation(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_punctuation() && !matches!(c, '$' | '+' | '<' | '=' | '>' | '^' | '`' | '|' | '~');
    }
    matches!(
        get_general_category(c),
        G::ConnectorPunctuation
            | G::DashPunctuation
            | G::OpenPunctuation
            | G::ClosePunctuation
            | G::InitialPunctuation
            | G::FinalPunctuation
            | G::OtherPunctuation
    )
}

/// `unicodedata.category(c).startswith("M")`.
pub fn is_mark(c: char) -> bool {
    !c.is_ascii() && matches!(get_general_category(c), G::NonspacingMark | G::SpacingMark | G::EnclosingMark)
}

/// `unicodedata.category(c) == "Mn"`.
pub fn is_nonspacing_mark(c: char) -> bool {
    !c.is_ascii() && get_general_category(c) == G::NonspacingMark
}

/// Number of code points: Python's `len(str)`.
pub fn len(s: &str) -> usize {
    // Counting the bytes that do not continue a UTF-8 sequence is faster than decoding.
    s.bytes().filter(|&b| (b as i8) >= -0x40).count()
}

/// Python's `str.strip()`.
pub fn strip(s: &str) -> &str {
    s.trim_matches(isspace)
}

/// Python's `str.lstrip()`.
pub fn lstrip(s: &str) -> &str {
    s.trim_start_matches(isspace)
}

/// Python's `str.rstrip()`.
pub fn rstrip(s: &str) -> &str {
    s.trim_end_matches(isspace)
}

/// ASCII bytes that [`isspace`] holds: `\t\n\x0b\x0c\r`, `\x1c..=\x1f` and the space.
const fn ascii_space(b: u8) -> bool {
    matches!(b, b'\t'..=b'\r' | 0x1c..=0x1f | b' ')
}

/// The length of the whitespace character at byte `i` of `s`, or 0 when it is not one. ASCII is
/// told by the byte; only other characters are decoded.
fn space_at(s: &str, i: usize) -> usize {
    let b = s.as_bytes()[i];
    if b < 0x80 {
        return usize::from(ascii_space(b));
    }
    match s[i..].chars().next() {
        Some(c) if isspace(c) => c.len_utf8(),
        _ => 0,
    }
}

/// `str.split()` with no separator: runs of whitespace separate, none at the ends.
pub fn split_whitespace(s: &str) -> impl Iterator<Item = &str> {
    let mut at = 0;
    std::iter::from_fn(move || {
        let bytes = s.as_bytes();
        // Skip whitespace, then take the word up to the next.
        loop {
            if at >= bytes.len() {
                return None;
            }
            match space_at(s, at) {
                0 => break,
                n => at += n,
            }
        }
        let start = at;
        while at < bytes.len() {
            if bytes[at] < 0x80 {
                if ascii_space(bytes[at]) {
                    break;
                }
                at += 1;
            } else {
                if space_at(s, at) > 0 {
                    break;
                }
                // Past the lead byte and its continuation bytes.
                at += 1;
                while at < bytes.len() && (bytes[at] as i8) < -0x40 {
                    at += 1;
                }
            }
        }
        Some(&s[start..at])
    })
}

/// `len(s.split())` where no word is longer than `limit` bytes, counted 64 bytes at a time in
/// passes the compiler vectorizes; `None` where a word may be longer, or where `s` may hold
/// whitespace beyond ASCII (a byte that starts such a character in UTF-8: `c2`, `e1`, `e2`,
/// `e3`): callers then split.
pub fn count_words_within(s: &str, limit: usize) -> Option<usize> {
    let b = s.as_bytes();
    let (blocks, rest) = b.as_chunks::<64>();
    let wide = |x: u8| u8::from(x == 0xc2) | u8::from(x.wrapping_sub(0xe1) < 3);
    if blocks.iter().any(|block| block.iter().fold(0, |m, &x| m | wide(x)) != 0) || rest.iter().any(|&x| wide(x) != 0) {
        return None;
    }
    // A word of more than `limit` bytes holds a whole aligned block of `limit / 2 + 1` bytes.
    if b.len() > limit && b.chunks_exact(limit / 2 + 1).any(|block| !block.iter().any(|&x| ascii_space(x))) {
        return None;
    }
    // Words start at a byte that is no space after one that is (or at the start).
    let start = |x: u8, before: u8| u8::from(!ascii_space(x) & ascii_space(before));
    let mut before = b' ';
    let mut words = 0;
    for block in blocks {
        let n = block[1..].iter().zip(&block[..63]).fold(start(block[0], before), |n, (&x, &y)| n + start(x, y));
        words += usize::from(n);
        before = block[63];
    }
    for &x in rest {
        words += usize::from(start(x, before));
        before = x;
    }
    Some(words)
}

/// `str.count(sub)`: non-overlapping occurrences.
pub fn count(s: &str, sub: &str) -> usize {
    memchr::memmem::find_iter(s.as_bytes(), sub.as_bytes()).count()
}

/// `str.splitlines()`: every Unicode line boundary, `\r\n` as one, no empty last line. Scans
/// bytes: the breaks are ASCII controls, U+0085 (`C2 85`) and U+2028/9 (`E2 80 A8/A9`), and in
/// valid UTF-8 those lead bytes never continue another character.
pub fn splitlines(s: &str) -> Vec<&str> {
    // Most texts break lines with `\n` alone: one pass that the compiler vectorizes tells, and
    // then the lines are `\n`'s pieces (found by `memchr`) without the empty one after a final
    // break. The pass looks at byte pairs: `\u{85}` is `c2 85` in UTF-8, and `\u{2028}` and
    // `\u{2029}` hold `80 a8` and `80 a9` (so do a few CJK signs, which go to the byte loop).
    let b = s.as_bytes();
    let single = b.iter().fold(false, |any, &x| any | (x.wrapping_sub(0x0b) < 3) | (x.wrapping_sub(0x1c) < 3));
    let pairs = b.iter().zip(b.iter().skip(1)).fold(false, |any, (&x, &y)| any | ((x == 0xc2) & (y == 0x85)) | ((x == 0x80) & (y.wrapping_sub(0xa8) < 2)));
    let maybe_other = single | pairs;
    if !maybe_other {
        let mut out: Vec<&str> = s.split('\n').collect();
        if out.last().is_some_and(|l| l.is_empty()) {
            out.pop();
        }
        return out;
    }
    splitlines_by_bytes(s)
}

fn splitlines_by_bytes(s: &str) -> Vec<&str> {
    let bytes = s.as_bytes();
    let mut out = Vec::new();
    let (mut start, mut i) = (0, 0);
    while i < bytes.len() {
        let width = match bytes[i] {
            b'\r' if bytes.get(i + 1) == Some(&b'\n') => 2,
            b'\n' | b'\r' | 0x0b | 0x0c | 0x1c..=0x1e => 1,
            0xc2 if bytes.get(i + 1) == Some(&0x85) => 2,
            0xe2 if bytes.get(i + 1) == Some(&0x80) && matches!(bytes.get(i + 2), Some(0xa8 | 0xa9)) => 3,
            _ => 0,
        };
        if width > 0 {
            out.push(&s[start..i]);
            start = i + width;
            i += width;
        } else {
            i += 1;
        }
    }
    if start < s.len() {
        out.push(&s[start..]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn is_line_break(c: char) -> bool {
        matches!(c, '\n' | '\r' | '\x0b' | '\x0c' | '\x1c' | '\x1d' | '\x1e' | '\u{85}' | '\u{2028}' | '\u{2029}')
    }

    /// The definitions the byte scans must equal, character by character.
    fn splitlines_by_chars(s: &str) -> Vec<&str> {
        let mut out = Vec::new();
        let mut start = 0;
        let mut it = s.char_indices().peekable();
        while let Some((i, c)) = it.next() {
            if is_line_break(c) {
                out.push(&s[start..i]);
                start = i + c.len_utf8();
                if c == '\r' && matches!(it.peek(), Some((_, '\n'))) {
                    it.next();
                    start += 1;
                }
            }
        }
        if start < s.len() {
            out.push(&s[start..]);
        }
        out
    }

    proptest! {
        #[test]
        fn byte_scans_equal_the_character_definitions(s in "([a\\r\\n\\t \\x0b\\x0c\\x1c-\\x1f\\u{85}\\u{a0}\\u{2028}\\u{2029}\\u{3000}\\u{2000}é漢🙂]|\\PC){0,40}") {
            prop_assert_eq!(splitlines(&s), splitlines_by_chars(&s));
            prop_assert_eq!(splitlines_by_bytes(&s), splitlines_by_chars(&s));
            let words: Vec<&str> = split_whitespace(&s).collect();
            for limit in [0, 1, 2, 3, 5, usize::MAX] {
                let longest = words.iter().map(|w| w.len()).max().unwrap_or(0);
                if let Some(n) = count_words_within(&s, limit) {
                    prop_assert!(n == words.len() && longest <= limit, "{limit}: {n} words, longest {longest}");
                }
            }
            let by_chars: Vec<&str> = s.split(isspace).filter(|w| !w.is_empty()).collect();
            prop_assert_eq!(words, by_chars);
        }
    }

    proptest! {
        /// Across 64-byte blocks too: the count is `str.split()`'s wherever one is given.
        #[test]
        fn words_are_counted_as_split_counts_them(s in "([ab\t\n\x1f ]|\u{e9}|xxxxxxxx){0,300}", limit in prop::sample::select(vec![3usize, 8, 20, usize::MAX])) {
            let words: Vec<&str> = split_whitespace(&s).collect();
            let longest = words.iter().map(|w| w.len()).max().unwrap_or(0);
            match count_words_within(&s, limit) {
                Some(n) => prop_assert!(n == words.len() && longest <= limit),
                // Only a word that may be too long sends a text without other spaces to the split.
                None => prop_assert!(longest > limit / 2),
            }
        }
    }

    #[test]
    fn matches_python() {
        // Expected values from CPython 3.11.
        assert_eq!(splitlines("a\r\nb\rc\n\nd\u{2028}e\x0cf\n"), ["a", "b", "c", "", "d", "e", "f"]);
        assert_eq!(splitlines(""), Vec::<&str>::new());
        assert_eq!(splitlines("\n"), [""]);
        assert_eq!(splitlines("a\n\nb\n\n"), ["a", "", "b", ""]);
        assert_eq!(splitlines("\u{a9}\u{e9}\u{3028} a\nb"), ["\u{a9}\u{e9}\u{3028} a", "b"]);
        assert_eq!(len("héllo🙂"), 6);
        assert!(isalpha('ß') && isalpha('漢') && !isalpha('\u{0301}') && !isalpha('Ⅻ') && !isalpha('1'));
        assert!(is_punctuation('-') && is_punctuation('…') && is_punctuation('«') && !is_punctuation('$') && !is_punctuation('+'));
        assert_eq!(split_whitespace(" a\u{a0}b\tc\u{1f}d ").collect::<Vec<_>>(), ["a", "b", "c", "d"]);
        assert_eq!(count_words_within("  ab \t\u{1f}c\u{e9}d e", 4), Some(3));
        assert_eq!(count_words_within("ab cd", 1), None);
        assert_eq!(count_words_within("a\u{a0}b", 9), None);
        assert_eq!(count("a....b…", "..."), 1);
        assert_eq!(strip("\u{85} x \u{3000}"), "x");
    }
}
