//! Text cleaning: Unicode normalisation, whitespace and control characters, PII masking as
//! datatrove's `PIIFormatter` does it, and datatrove's `simplify_text` (MinHash normalisation).

use std::borrow::Cow;
use std::net::Ipv4Addr;
use std::sync::LazyLock;

use regex::{Captures, Regex};
use unicode_normalization::UnicodeNormalization;

use super::charsets;
use super::py;
use crate::error::TokqError;

/// A Unicode normalization form.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Form {
    /// Canonical composition.
    Nfc,
    /// Compatibility composition.
    Nfkc,
    /// Canonical decomposition.
    Nfd,
    /// Compatibility decomposition.
    Nfkd,
}

impl Form {
    /// `NFC`, `NFKC`, `NFD` or `NFKD`, any case.
    pub fn parse(s: &str) -> Result<Self, TokqError> {
        match s.to_ascii_uppercase().as_str() {
            "NFC" => Ok(Form::Nfc),
            "NFKC" => Ok(Form::Nfkc),
            "NFD" => Ok(Form::Nfd),
            "NFKD" => Ok(Form::Nfkd),
            _ => Err(TokqError::Argument { function: "normalize_text", cause: format!("form must be NFC, NFKC, NFD or NFKD, got '{s}'") }),
        }
    }
}

/// `text` in `form`.
pub fn normalize_text(text: &str, form: Form) -> String {
    match form {
        Form::Nfc => text.nfc().collect(),
        Form::Nfkc => text.nfkc().collect(),
        Form::Nfd => text.nfd().collect(),
        Form::Nfkd => text.nfkd().collect(),
    }
}

/// Line breaks become `\n`, control characters other than tab and newline (and the BOM) go, runs
/// of other whitespace become one space, lines lose trailing spaces, more than two newlines in a
/// row become two, and the text is trimmed.
pub fn clean_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let (mut pending_space, mut newlines) = (false, 0usize);
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        let c = match c {
            '\r' if chars.peek() == Some(&'\n') => continue,
            '\r' | '\u{2028}' | '\u{2029}' | '\u{85}' | '\x0b' | '\x0c' => '\n',
            c => c,
        };
        if c == '\n' {
            pending_space = false;
            newlines += 1;
        } else if py::isspace(c) {
            pending_space = true;
        } else if c.is_control() || c == '\u{feff}' {
            continue;
        } else {
            if !out.is_empty() {
                out.extend(std::iter::repeat_n('\n', newlines.min(2)));
                if pending_space && newlines == 0 {
                    out.push(' ');
                }
            }
            (pending_space, newlines) = (false, 0);
            out.push(c);
        }
    }
    out
}

static EMAIL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"\b[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*@(?:(?:[A-Za-z0-9](?:[",
        r"A-Za-z0-9-]*[A-Za-z0-9])?\.)+[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?|\[(?:(?:25[0-5]|2[0-4][0-9]|[",
        r"01]?[0-9][0-9]?)\.){3}(?:25[0-5]|2[0-4][0-9]|[01]?[0-9][0-9]?|[A-Za-z0-9-]*[A-Za-z0-9]:)])"
    ))
    .unwrap_or_else(|e| panic!("email pattern: {e}"))
});
static IPV4: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?:(?:25[0-5]|2[0-4][0-9]|[01]?[0-9][0-9]?)\.){3}(?:25[0-5]|2[0-4][0-9]|[01]?[0-9][0-9]?)")
        .unwrap_or_else(|e| panic!("IPv4 pattern: {e}"))
});
const EMAIL_REPLACEMENTS: [&str; 2] = ["email@example.com", "firstname.lastname@example.org"];
const IP_REPLACEMENTS: [&str; 6] = ["22.214.171.124", "126.96.36.199", "188.8.131.52", "184.108.40.206", "220.127.116.11", "18.104.22.168"];

/// Python 3.11's `ipaddress.ip_address(s).is_global`: `False` for the IANA special-purpose blocks
/// and shared address space; addresses with leading zeros are not addresses at all.
fn is_public_ipv4(s: &str) -> bool {
    if s.split('.').any(|octet| octet.len() > 1 && octet.starts_with('0')) {
        return false;
    }
    let Ok(ip) = s.parse::<Ipv4Addr>() else { return false };
    const NOT_GLOBAL: [([u8; 4], u8); 15] = [
        ([0, 0, 0, 0], 8),
        ([10, 0, 0, 0], 8),
        ([127, 0, 0, 0], 8),
        ([169, 254, 0, 0], 16),
        ([172, 16, 0, 0], 12),
        ([192, 0, 0, 0], 29),
        ([192, 0, 0, 170], 31),
        ([192, 0, 2, 0], 24),
        ([192, 168, 0, 0], 16),
        ([198, 18, 0, 0], 15),
        ([198, 51, 100, 0], 24),
        ([203, 0, 113, 0], 24),
        ([240, 0, 0, 0], 4),
        ([255, 255, 255, 255], 32),
        ([100, 64, 0, 0], 10),
    ];
    let ip = u32::from(ip);
    !NOT_GLOBAL.iter().any(|&(net, bits)| (ip ^ u32::from_be_bytes(net)) >> (32 - bits as u32) == 0)
}

/// Replaces emails, then public IPv4 addresses, with datatrove's placeholders, cycling through
/// them. datatrove continues the cycle across the documents of a task; here it restarts at each
/// document, so that the output does not depend on how documents are split into tasks.
pub fn mask_pii(text: &str) -> Cow<'_, str> {
    let mut i = 0;
    let emails = EMAIL.replace_all(text, |_: &Captures| {
        i += 1;
        EMAIL_REPLACEMENTS[(i - 1) % EMAIL_REPLACEMENTS.len()]
    });
    let mut j = 0;
    let masked = IPV4.replace_all(&emails, |c: &Captures| {
        let m = &c[0];
        if is_public_ipv4(m) {
            j += 1;
            IP_REPLACEMENTS[(j - 1) % IP_REPLACEMENTS.len()].to_string()
        } else {
            m.to_string()
        }
    });
    match (&emails, masked) {
        (Cow::Borrowed(_), Cow::Borrowed(_)) => Cow::Borrowed(text),
        (_, m) => Cow::Owned(m.into_owned()),
    }
}

/// What may separate a number's decimal part: `[.,،٫⎖⎗⎘]` in datatrove's `NUMBERS_PATTERN`.
const DECIMAL_SEPARATORS: [char; 7] = ['.', ',', '،', '٫', '⎖', '⎗', '⎘'];

/// The output of `simplify_text`'s pass: whitespace runs become one space between words, and
/// none at the ends (a space is written when its run starts, and the last one taken back).
struct Spaced {
    out: Vec<u8>,
    /// A space here would start no new run: the output is empty or ends in one.
    after_space: bool,
}

impl Spaced {
    fn space(&mut self) {
        if !self.after_space {
            self.out.push(b' ');
            self.after_space = true;
        }
    }

    fn bytes(&mut self, bytes: &[u8]) {
        self.out.extend_from_slice(bytes);
        self.after_space = false;
    }

    fn push(&mut self, c: char) {
        if py::isspace(c) {
            self.space();
        } else {
            self.bytes(c.encode_utf8(&mut [0; 4]).as_bytes());
        }
    }

    /// Maps the ASCII bytes from `i` on through [`ASCII`] until a digit or a non-ASCII byte, and
    /// returns where it stopped. The common case, so without a branch per byte: every byte is
    /// written, and the write position moves on unless the byte is a space after a space.
    fn ascii_run(&mut self, bytes: &[u8], mut i: usize) -> usize {
        let rest = &bytes[i..];
        // A byte of the run writes at most one byte.
        self.out.reserve(rest.len());
        let len = self.out.len();
        let spare = self.out.spare_capacity_mut();
        let (mut j, mut after_space) = (0, self.after_space);
        // Dereferenced once: through the LazyLock, each byte would check its state.
        let table: &[u8; 256] = &ASCII;
        for &b in rest {
            let m = table[usize::from(b)];
            if m == STOP {
                break;
            }
            spare[j].write(m);
            let space = m == b' ';
            j += usize::from(!(space && after_space));
            after_space = space;
            i += 1;
        }
        // SAFETY: the first `j` bytes of the spare capacity were written above.
        unsafe { self.out.set_len(len + j) };
        self.after_space = after_space;
        i
    }

    fn finish(mut self) -> Vec<u8> {
        if self.out.last() == Some(&b' ') {
            self.out.pop();
        }
        self.out
    }
}

/// What `simplify_text` makes of a byte: a space (ASCII whitespace or punctuation), the
/// lowercased byte, or STOP (a digit, which starts a number, or a byte of a non-ASCII character).
const STOP: u8 = 0;
static ASCII: LazyLock<[u8; 256]> = LazyLock::new(|| {
    std::array::from_fn(|b| {
        let c = (b as u8).to_ascii_lowercase();
        if !c.is_ascii() || c.is_ascii_digit() {
            STOP
        } else if py::isspace(char::from(c)) || charsets::is_punctuation(char::from(c)) {
            b' '
        } else {
            c
        }
    })
});

/// The end of `\p{Nd}+(?:[separators]\p{Nd}+)?` starting at `at` (leftmost-first, greedy).
fn number_end(text: &str, at: usize) -> usize {
    let bytes = text.as_bytes();
    let digits = |mut j: usize| {
        loop {
            match bytes.get(j) {
                Some(b) if b.is_ascii_digit() => j += 1,
                Some(b) if !b.is_ascii() => match text[j..].chars().next().filter(|&c| py::is_decimal(c)) {
                    Some(c) => j += c.len_utf8(),
                    None => break j,
                },
                _ => break j,
            }
        }
    };
    let end = digits(at);
    match text[end..].chars().next().filter(|c| DECIMAL_SEPARATORS.contains(c)) {
        Some(sep) if text[end + sep.len_utf8()..].chars().next().is_some_and(py::is_decimal) => digits(end + sep.len_utf8()),
        _ => end,
    }
}

/// datatrove's `simplify_text` with its defaults: lowercase, digit runs (with one decimal part)
/// to "0", punctuation to spaces, whitespace runs to one space, NFD without combining marks.
/// One pass does the first four steps: lowercasing maps no character to or from a digit or a
/// separator, so numbers are found in the original text. Only a capital sigma needs the whole
/// text to lowercase (its final form depends on the neighbours).
pub fn simplify_text(text: &str) -> String {
    let lowered;
    let text = if text.contains('Σ') {
        lowered = text.to_lowercase();
        lowered.as_str()
    } else {
        text
    };
    let mut spaced = Spaced { out: Vec::with_capacity(text.len()), after_space: true };
    let (bytes, mut i) = (text.as_bytes(), 0);
    while i < bytes.len() {
        i = spaced.ascii_run(bytes, i);
        let Some(c) = text.get(i..).and_then(|rest| rest.chars().next()) else { break };
        if py::is_decimal(c) {
            spaced.bytes(b"0");
            i = number_end(text, i);
            continue;
        }
        i += c.len_utf8();
        c.to_lowercase().for_each(|l| spaced.push(if charsets::is_punctuation(l) { ' ' } else { l }));
    }
    // Only whole characters were pushed.
    let spaced = String::from_utf8(spaced.finish()).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
    if spaced.is_ascii() {
        return spaced;
    }
    let out = nfd_without_marks(&spaced);
    match py::strip(&out) {
        s if s.len() == out.len() => out,
        s => s.to_string(),
    }
}

/// NFD, then without nonspacing marks. ASCII characters are starters that neither decompose nor
/// take part in canonical reordering, so only the runs between them need the normalizer.
fn nfd_without_marks(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 8);
    let mut rest = text;
    while !rest.is_empty() {
        let ascii = rest.bytes().position(|b| !b.is_ascii()).unwrap_or(rest.len());
        out.push_str(&rest[..ascii]);
        rest = &rest[ascii..];
        let other = rest.bytes().position(|b| b.is_ascii()).unwrap_or(rest.len());
        out.extend(rest[..other].nfd().filter(|&c| !py::is_nonspacing_mark(c)));
        rest = &rest[other..];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The plain composition of datatrove's steps, each over the whole text: the specification
    /// that the one-pass version must equal.
    fn simplify_spec(text: &str) -> String {
        static NUMBERS: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\p{Nd}+(?:[.,،٫⎖⎗⎘]\p{Nd}+)?").unwrap());
        let numbers = NUMBERS.replace_all(&text.to_lowercase(), "0").into_owned();
        let spaced: String = numbers.chars().map(|c| if charsets::is_punctuation(c) || py::isspace(c) { ' ' } else { c }).collect();
        let collapsed = spaced.split(' ').filter(|w| !w.is_empty()).collect::<Vec<_>>().join(" ");
        let out: String = collapsed.nfd().filter(|&c| !py::is_nonspacing_mark(c)).collect();
        py::strip(&out).to_string()
    }

    proptest! {
        #[test]
        fn ascii_pass_equals_the_composition(text in "[ -~\\t\\n\\r\\x0b\\x0c\\x1c-\\x1f0-9.,]{0,80}") {
            prop_assert_eq!(simplify_text(&text), simplify_spec(&text));
        }

        #[test]
        fn runwise_normalization_equals_the_composition(
            text in prop::collection::vec(prop::sample::select(vec![
                "a", "E", " ", ".", "3", ",", "\u{301}", "\u{308}", "\u{323}", "\u{1e69}", "\u{1e0b}\u{323}", "\u{f39}", "\u{1d165}",
                "\u{1d16d}", "é", "Å", "ǅ", "ﬁ", "Σ", "ς", "İ", "٣", "٫", "\u{a0}", "\u{3000}", "漢", "\u{1fed}", "\u{344}", "K",
                "Ω", "ΑΒ", "ẞ", "Ⅻ", "①", "߀", "१", "⎖", "،", "\u{2028}", "\u{85}", "\x1c", "Ǆ", "ﬀ", "Ꭰ", "\u{10400}", "𝟘",
            ]), 0..40).prop_map(|v| v.concat())
        ) {
            prop_assert_eq!(simplify_text(&text), simplify_spec(&text));
        }
    }

    #[test]
    fn normalizes_and_cleans() {
        assert_eq!(normalize_text("e\u{301}ﬁ", Form::Nfc), "éﬁ");
        assert_eq!(normalize_text("e\u{301}ﬁ", Form::Nfkc), "éfi");
        assert_eq!(normalize_text("é", Form::Nfd), "e\u{301}");
        assert!(Form::parse("nfkd").is_ok() && Form::parse("NFX").is_err());
        assert_eq!(clean_text("  a\u{a0}\t b \r\n\r\n\r\n\r\nc\x00d\u{feff}  \n"), "a b\n\ncd");
        assert_eq!(clean_text("x\ry\u{2028}z"), "x\ny\nz");
        assert_eq!(clean_text(""), "");
    }

    #[test]
    fn masks_pii_like_datatrove() {
        // Expected strings from datatrove 0.10.1 `PIIFormatter().format` on a fresh formatter.
        assert_eq!(
            mask_pii("mail a.b@c.org or x@y.co.uk, ip 8.8.8.8 and 10.0.0.1, 1.1.1.1, 01.2.3.4, 224.0.0.1"),
            "mail email@example.com or firstname.lastname@example.org, ip 22.214.171.124 and 10.0.0.1, 126.96.36.199, 01.2.3.4, 188.8.131.52"
        );
        assert!(matches!(mask_pii("nothing here"), Cow::Borrowed(_)));
        assert_eq!(mask_pii("1234.5.6.7"), "122.214.171.124");
    }

    #[test]
    fn simplifies_like_datatrove() {
        // Expected strings from datatrove 0.10.1 `simplify_text`.
        assert_eq!(simplify_text("  Héllo, WORLD!! It's 3.14 or 1,000,000 — café\n\tnaïve "), "hello world it s 0 or 0 0 cafe naive");
        assert_eq!(simplify_text("٣٫١٤ and ６７"), "0 and 0");
        assert_eq!(simplify_text(""), "");
    }
}
