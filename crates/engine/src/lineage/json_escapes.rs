//! A guard against arrow-json 59's surrogate-pair decoding.
//!
//! arrow-json computes `(high << 10) | (low + 0x10000)` where UTF-16 needs
//! `((high << 10) | low) + 0x10000`. The two agree below U+20000, so emoji are right, but every
//! escaped character from U+20000 on (CJK Extension B and later) comes out as another character.
//! JSON writers that escape non-ASCII (Python's `json.dumps` by default) produce such pairs, so
//! tokq rewrites each surrogate-pair escape as the UTF-8 character it stands for before arrow
//! reads the bytes.
//!
//! A lone surrogate escape (`\ud800` with no low surrogate after it, or a low one alone) stands
//! for no character, so no UTF-8 text can hold it: Python's `json.loads` keeps it in a `str`
//! that cannot be encoded, arrow rejects the line. tokq writes U+FFFD in its place, one per lone
//! surrogate, which is what tiktoken encodes for such a string (it re-decodes the text as UTF-16
//! with `errors="replace"`), so the row is read and tokenized as the references would.

use std::borrow::Cow;

use memchr::memmem;

/// `buf` with every `\uD8xx\uDCxx`-style escape pair replaced by its character in UTF-8, and
/// every lone surrogate escape by U+FFFD.
///
/// Only the escapes of surrogates are visited and copied around: text escaped by Python's
/// `json.dumps` has an escape per non-ASCII character, and copying the text escape by escape,
/// parsing each one's digits, took 15% of reading such a file (UDHR).
pub fn pairs_as_utf8(buf: &[u8]) -> Cow<'_, [u8]> {
    if memmem::find(buf, b"\\ud").is_none() && memmem::find(buf, b"\\uD").is_none() {
        return Cow::Borrowed(buf);
    }
    let mut out = Vec::with_capacity(buf.len());
    // `buf[..copied]` is in `out`, rewritten.
    let mut copied = 0;
    for at in memmem::find_iter(buf, b"\\u") {
        if at < copied || !matches!(buf.get(at + 2), Some(b'd' | b'D')) || escaped(buf, at) {
            continue;
        }
        let (c, len) = match pair_at(&buf[at..]) {
            Some(c) => (c, 12),
            None if is_lone_surrogate(&buf[at..]) => (char::REPLACEMENT_CHARACTER, 6),
            None => continue,
        };
        out.extend_from_slice(&buf[copied..at]);
        out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes());
        copied = at + len;
    }
    out.extend_from_slice(&buf[copied..]);
    Cow::Owned(out)
}

/// Whether the backslash at `at` is the second of an escaped backslash (`\\`): in valid JSON a
/// backslash starts an escape unless an odd run of backslashes comes before it.
fn escaped(buf: &[u8], at: usize) -> bool {
    buf[..at].iter().rev().take_while(|&&b| b == b'\\').count() % 2 == 1
}

fn hex4(b: &[u8]) -> Option<u32> {
    let s = std::str::from_utf8(b.get(..4)?).ok()?;
    u32::from_str_radix(s, 16).ok().filter(|_| s.bytes().all(|x| x.is_ascii_hexdigit()))
}

/// Whether `b` starts with a `\uHHHH` escape of a surrogate (one that is not the start of a
/// pair: pairs are taken first).
fn is_lone_surrogate(b: &[u8]) -> bool {
    b.starts_with(b"\\u") && b.len() >= 6 && hex4(&b[2..]).is_some_and(|u| (0xD800..0xE000).contains(&u))
}

/// The character of `\uHHHH\uLLLL` at the start of `b`, if it is a high and a low surrogate.
fn pair_at(b: &[u8]) -> Option<char> {
    if !b.starts_with(b"\\u") || b.get(6..8) != Some(b"\\u") {
        return None;
    }
    let (high, low) = (hex4(&b[2..])?, hex4(&b[8..])?);
    if !(0xD800..0xDC00).contains(&high) || !(0xDC00..0xE000).contains(&low) {
        return None;
    }
    char::from_u32((((high - 0xD800) << 10) | (low - 0xDC00)) + 0x10000)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn via_arrow_guard(json: &str) -> String {
        let fixed = pairs_as_utf8(json.as_bytes());
        serde_json::from_slice::<String>(&fixed).unwrap()
    }

    #[test]
    fn pairs_become_characters_and_other_escapes_stay() {
        let json = r#""\ud841\udf0e \uD83D\uDE00 \\ud841\\udf0e \n \u00e9""#;
        assert_eq!(via_arrow_guard(json), "\u{2070E} \u{1F600} \\ud841\\udf0e \n \u{e9}");
        assert!(matches!(pairs_as_utf8(br#""plain \u00e9""#), Cow::Borrowed(_)));
    }

    #[test]
    fn each_lone_surrogate_becomes_one_replacement_character() {
        // As Python: 'x\ud800y'.encode('utf-16', 'surrogatepass').decode('utf-16', 'replace').
        let json = r#""x\ud800y \udc00 \ud800\ud800 \udc00\ud800 z\ud83d\ud83d\ude00 \\ud800""#;
        assert_eq!(via_arrow_guard(json), "x\u{fffd}y \u{fffd} \u{fffd}\u{fffd} \u{fffd}\u{fffd} z\u{fffd}\u{1F600} \\ud800");
    }

    /// `s` as Python's `json.dumps` writes it: every non-ASCII character escaped, astral ones as
    /// surrogate pairs.
    fn python_escaped(s: &str) -> String {
        let mut json = String::from("\"");
        for c in s.chars() {
            match c {
                '"' => json.push_str("\\\""),
                '\\' => json.push_str("\\\\"),
                c if c.is_ascii() && !c.is_ascii_control() => json.push(c),
                c => {
                    let mut units = [0u16; 2];
                    for u in c.encode_utf16(&mut units) {
                        json.push_str(&format!("\\u{u:04x}"));
                    }
                }
            }
        }
        json.push('"');
        json
    }

    proptest! {
        /// Backslashes, and text that spells escapes after them, beside real pairs.
        #[test]
        fn escaped_backslashes_never_start_an_escape(parts in prop::collection::vec(prop::sample::select(
            vec!["\\", "u", "ud800", "uD83D", "udc00", "uDE00", "x", "\u{1F600}", "\u{2070E}", "\u{e9}"]), 0..40)) {
            let s = parts.concat();
            prop_assert_eq!(via_arrow_guard(&python_escaped(&s)), s);
        }

        #[test]
        fn any_string_escaped_ascii_reads_back(s in "\\PC{0,40}") {
            prop_assert_eq!(via_arrow_guard(&python_escaped(&s)), s);
        }
    }
}
