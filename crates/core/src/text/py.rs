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

pub fn strip(s: &str) -> &str {
    s.trim_matches(isspace)
}

pub fn lstrip(s: &str) -> &str {
    s.trim_start_matches(isspace)
}

pub fn rstrip(s: &str) -> &str {
    s.trim_end_matches(isspace)
}

/// `str.split()` with no separator: runs of whitespace separate, none at the ends.
pub fn split_whitespace(s: &str) -> impl Iterator<Item = &str> {
    s.split(isspace).filter(|w| !w.is_empty())
}

/// `str.count(sub)`: non-overlapping occurrences.
pub fn count(s: &str, sub: &str) -> usize {
    memchr::memmem::find_iter(s.as_bytes(), sub.as_bytes()).count()
}

fn is_line_break(c: char) -> bool {
    matches!(c, '\n' | '\r' | '\x0b' | '\x0c' | '\x1c' | '\x1d' | '\x1e' | '\u{85}' | '\u{2028}' | '\u{2029}')
}

/// `str.splitlines()`: every Unicode line boundary, `\r\n` as one, no empty last line.
pub fn splitlines(s: &str) -> Vec<&str> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_python() {
        // Expected values from CPython 3.11.
        assert_eq!(splitlines("a\r\nb\rc\n\nd\u{2028}e\x0cf\n"), ["a", "b", "c", "", "d", "e", "f"]);
        assert_eq!(splitlines(""), Vec::<&str>::new());
        assert_eq!(splitlines("\n"), [""]);
        assert_eq!(len("héllo🙂"), 6);
        assert!(isalpha('ß') && isalpha('漢') && !isalpha('\u{0301}') && !isalpha('Ⅻ') && !isalpha('1'));
        assert!(is_punctuation('-') && is_punctuation('…') && is_punctuation('«') && !is_punctuation('$') && !is_punctuation('+'));
        assert_eq!(split_whitespace(" a\u{a0}b\tc\u{1f}d ").collect::<Vec<_>>(), ["a", "b", "c", "d"]);
        assert_eq!(count("a....b…", "..."), 1);
        assert_eq!(strip("\u{85} x \u{3000}"), "x");
    }
}
