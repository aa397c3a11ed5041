//! Hand-written pre-tokenizers, one per split regex, that cut exactly where the regex does.
//!
//! Each function below is the regex's leftmost-first alternation written out, backtracking
//! included (`\s+(?!\S)` gives back one character; o200k's `[upper]*[lower]+` gives back to the
//! last "lower" character). `tests` checks them against `fancy-regex` on random strings drawn
//! from every class, and the parity suite against Python `tokenizers` and tiktoken on corpora.

use super::classes::{Classes, LETTER, LOWER, NUMBER, SPACE, UPPER};
use crate::tokenize::spec::SplitPattern;
use window::Window;

mod window;

/// How a text is cut into pieces before BPE.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Split {
    /// One of the split regexes.
    Regex(SplitPattern),
    /// SentencePiece-style files have no pre-tokenizer: BPE runs over the whole normalized text,
    /// where `▁` stands for a space. When no token of the vocabulary has a `▁` after another
    /// character (checked when the file is loaded), no merge can join across the start of a run
    /// of `▁`, so cutting there gives the same ids, and pieces that repeat.
    Metaspace,
}

/// The pieces of `text` under the split regex `pattern`, with the Unicode classes of `classes`,
/// in order; they concatenate to `text`. SentencePiece-style text is cut by [`metaspace_pieces`].
pub fn pieces<'a>(text: &'a str, pattern: SplitPattern, classes: &'static Classes) -> Pieces<'a> {
    Pieces { text, pos: 0, pattern, classes, window: Window::NONE }
}

/// The pre-tokenizer's pieces of a text, in order.
pub struct Pieces<'a> {
    text: &'a str,
    pos: usize,
    pattern: SplitPattern,
    classes: &'static Classes,
    /// The bytes around `pos` as class masks, for the pieces ASCII decides.
    window: Window,
}

impl Pieces<'_> {
    /// The end of the piece at `i` from the class masks, when ASCII decides it and 64 bytes
    /// follow `i`.
    #[inline(always)]
    fn from_window(&mut self, i: usize) -> Option<usize> {
        if !self.window.serves(i) {
            let bytes = self.text.as_bytes().get(i..i + window::BYTES)?;
            self.window = Window::of(bytes.try_into().expect("64 bytes"), i);
        }
        match self.pattern {
            SplitPattern::R50k => self.window.r50k(i),
            SplitPattern::Cl100k | SplitPattern::Qwen => self.window.cl100k(i, max_digits(self.pattern)),
            SplitPattern::O200k => self.window.o200k(i),
        }
    }
}

impl<'a> Iterator for Pieces<'a> {
    type Item = &'a str;

    #[inline]
    fn next(&mut self) -> Option<&'a str> {
        let b = Text { bytes: self.text.as_bytes(), classes: self.classes };
        let i = self.pos;
        if i >= b.len() {
            return None;
        }
        if let Some(end) = self.from_window(i) {
            self.pos = end;
            return Some(&self.text[i..end]);
        }
        let end = match self.pattern {
            SplitPattern::R50k => r50k(b, i),
            SplitPattern::Cl100k | SplitPattern::Qwen => cl100k(b, i, max_digits(self.pattern)),
            SplitPattern::O200k => o200k(b, i),
        };
        self.pos = end;
        Some(&self.text[i..end])
    }
}

/// The most digits one piece of the cl100k-shaped splits holds: three for cl100k and Llama-3,
/// one for Qwen.
#[inline(always)]
fn max_digits(pattern: SplitPattern) -> usize {
    if pattern == SplitPattern::Qwen {
        1
    } else {
        3
    }
}

/// `▁` in UTF-8.
pub const METASPACE: &[u8] = "\u{2581}".as_bytes();

/// SentencePiece-style pieces of a text: each a run of `▁` and what follows it up to the next
/// run, as (the run's length in `▁`, what follows). Of `raw` text as if normalized (`Prepend("▁")`
/// then `Replace(" ", "▁")`: a space is a `▁`, and one more stands before the text) without
/// making the normalized copy, which cost more than the cut (13% of a Mistral run on Wikipedia);
/// or of text already normalized, where only `▁` is one.
pub fn metaspace_pieces(text: &str, raw: bool) -> MetaspacePieces<'_> {
    MetaspacePieces { text: text.as_bytes(), pos: 0, raw, before: raw }
}

/// See [`metaspace_pieces`].
pub struct MetaspacePieces<'a> {
    text: &'a [u8],
    pos: usize,
    raw: bool,
    /// The prepended `▁`, not yet counted.
    before: bool,
}

impl MetaspacePieces<'_> {
    /// The length of the `▁` at `i`: 3 for the character, 1 for a space of raw text, else 0.
    #[inline]
    fn bar(&self, i: usize) -> usize {
        match self.text[i] {
            b' ' if self.raw => 1,
            0xE2 if self.text[i..].starts_with(METASPACE) => METASPACE.len(),
            _ => 0,
        }
    }
}

impl<'a> Iterator for MetaspacePieces<'a> {
    type Item = (usize, &'a [u8]);

    #[inline]
    fn next(&mut self) -> Option<(usize, &'a [u8])> {
        let mut i = self.pos;
        if i >= self.text.len() {
            return None;
        }
        let mut bars = std::mem::take(&mut self.before) as usize;
        while i < self.text.len() {
            match self.bar(i) {
                0 => break,
                n => (bars, i) = (bars + 1, i + n),
            }
        }
        let start = i;
        // A `▁`'s first byte, or a space, is rare enough inside a word to check each in place.
        let space = if self.raw { b' ' } else { METASPACE[0] };
        let end = memchr::memchr2_iter(space, METASPACE[0], &self.text[start..])
            .map(|k| start + k)
            .find(|&k| self.bar(k) > 0)
            .unwrap_or(self.text.len());
        self.pos = end;
        Some((bars, &self.text[start..end]))
    }
}

/// The bytes being split and the table their non-ASCII characters are classed by; reads as the
/// bytes.
#[derive(Clone, Copy)]
struct Text<'a> {
    bytes: &'a [u8],
    classes: &'static Classes,
}

impl std::ops::Deref for Text<'_> {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        self.bytes
    }
}

const fn ascii_flags(x: u8) -> u8 {
    match x {
        b'a'..=b'z' => LETTER | LOWER,
        b'A'..=b'Z' => LETTER | UPPER,
        b'0'..=b'9' => NUMBER,
        b'\t' | b'\n' | 0x0B | 0x0C | b'\r' | b' ' => SPACE,
        _ => 0,
    }
}

static ASCII: [u8; 128] = {
    let mut t = [0u8; 128];
    let mut i = 0;
    while i < 128 {
        t[i] = ascii_flags(i as u8);
        i += 1;
    }
    t
};

/// The flags and byte length of the character at `i` (`b` is valid UTF-8, `i` a boundary).
#[inline(always)]
fn class(b: Text, i: usize) -> (u8, usize) {
    let x = b[i];
    if x < 0x80 {
        return (ASCII[x as usize], 1);
    }
    let (cp, len) = if x < 0xE0 {
        (((x & 0x1F) as u32) << 6 | (b[i + 1] & 0x3F) as u32, 2)
    } else if x < 0xF0 {
        (((x & 0x0F) as u32) << 12 | ((b[i + 1] & 0x3F) as u32) << 6 | (b[i + 2] & 0x3F) as u32, 3)
    } else {
        let cp = ((x & 0x07) as u32) << 18
            | ((b[i + 1] & 0x3F) as u32) << 12
            | ((b[i + 2] & 0x3F) as u32) << 6
            | (b[i + 3] & 0x3F) as u32;
        (cp, 4)
    };
    (b.classes.of_code_point(cp), len)
}

#[inline(always)]
fn flags(b: Text, i: usize) -> u8 {
    if i < b.len() {
        class(b, i).0
    } else {
        0
    }
}

/// `[^\s\p{L}\p{N}]`
#[inline(always)]
fn is_other(f: u8) -> bool {
    f & (SPACE | LETTER | NUMBER) == 0
}

/// The end of the run of characters from `i` whose flags pass `keep`, at most `max` characters.
#[inline(always)]
fn run(b: Text, mut i: usize, max: usize, keep: impl Fn(u8) -> bool) -> usize {
    let mut n = 0;
    while i < b.len() && n < max {
        let (f, len) = class(b, i);
        if !keep(f) {
            break;
        }
        i += len;
        n += 1;
    }
    i
}

/// How many of the eight bytes of `x` (first byte lowest) are ASCII letters before the first
/// that is not. Each byte is folded to lower case with its top bit cleared, so adding to it
/// never carries into the next; the top bit of each sum then says `>= 'a'` and `> 'z'`.
#[inline(always)]
fn ascii_letters(x: u64) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let folded = (x | 0x20 * ONES) & !HIGH;
    let from_a = folded + (0x80 - b'a' as u64) * ONES;
    let past_z = folded + (0x80 - b'z' as u64 - 1) * ONES;
    let letters = from_a & !past_z & !x & HIGH;
    ((!letters & HIGH).trailing_zeros() / 8) as usize
}

/// `\p{L}+` from `i`: the end of the run of letters, eight ASCII bytes at a time while they
/// last (a word of English is one or two steps), one character at a time through the class
/// table otherwise, until an ASCII letter comes again (a word of Cyrillic or Thai does not pay
/// for a look at eight bytes per character).
#[inline(always)]
fn letter_run(b: Text, mut i: usize) -> usize {
    loop {
        while let Some(chunk) = b.get(i..i + 8) {
            let n = ascii_letters(u64::from_le_bytes(chunk.try_into().expect("8 bytes")));
            i += n;
            if n < 8 {
                break;
            }
        }
        // The end of the run, a letter that is not ASCII, or the last few bytes.
        loop {
            if i >= b.len() {
                return i;
            }
            let (f, len) = class(b, i);
            if f & LETTER == 0 {
                return i;
            }
            i += len;
            if len == 1 {
                break;
            }
        }
    }
}

/// `'s|'t|'re|'ve|'m|'ll|'d` at `i`, case-insensitively (`(?i:...)`, where `ſ` folds to `s`) or not.
#[inline]
fn contraction(b: Text, i: usize, fold: bool) -> Option<usize> {
    if b.get(i) != Some(&b'\'') {
        return None;
    }
    let lower = |k: usize| b.get(k).map(|&x| if fold { x.to_ascii_lowercase() } else { x });
    match lower(i + 1)? {
        b's' | b't' | b'm' | b'd' => Some(i + 2),
        b'r' | b'v' if lower(i + 2) == Some(b'e') => Some(i + 3),
        b'l' if lower(i + 2) == Some(b'l') => Some(i + 3),
        0xC5 if fold && b.get(i + 2) == Some(&0xBF) => Some(i + 3),
        _ => None,
    }
}

/// `\s+(?!\S)|\s+`, preceded by `\s*[\r\n]+` when `newlines`; `b[i]` is whitespace.
#[inline]
fn whitespace(b: Text, i: usize, newlines: bool) -> usize {
    let (mut j, mut last, mut newline_end) = (i, i, None);
    while j < b.len() {
        let (f, len) = class(b, j);
        if f & SPACE == 0 {
            break;
        }
        if newlines && (b[j] == b'\n' || b[j] == b'\r') {
            newline_end = Some(j + 1);
        }
        last = j;
        j += len;
    }
    match newline_end {
        Some(end) => end,
        None if j == b.len() || last == i => j,
        None => last,
    }
}

/// GPT-2: `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`
fn r50k(b: Text, i: usize) -> usize {
    if let Some(end) = contraction(b, i, false) {
        return end;
    }
    let j = if b[i] == b' ' && i + 1 < b.len() && flags(b, i + 1) & SPACE == 0 { i + 1 } else { i };
    let f = class(b, j).0;
    if f & SPACE != 0 {
        return whitespace(b, i, false);
    }
    let kind = f & (LETTER | NUMBER);
    // No character is both a letter and a number or a space.
    if kind == LETTER {
        return letter_run(b, j);
    }
    run(b, j, usize::MAX, |g| g & SPACE == 0 && g & (LETTER | NUMBER) == kind)
}

/// cl100k / Llama-3 (`max_digits` 3) and Qwen (1):
/// `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
fn cl100k(b: Text, i: usize, max_digits: usize) -> usize {
    if let Some(end) = contraction(b, i, true) {
        return end;
    }
    let (f, len) = class(b, i);
    if f & LETTER != 0 {
        return letter_run(b, i);
    }
    let prefix = f & NUMBER == 0 && b[i] != b'\r' && b[i] != b'\n';
    if prefix && flags(b, i + len) & LETTER != 0 {
        return letter_run(b, i + len);
    }
    if f & NUMBER != 0 {
        return run(b, i, max_digits, |g| g & NUMBER != 0);
    }
    punctuation(b, i, b"\r\n").unwrap_or_else(|| whitespace(b, i, true))
}

/// ` ?[^\s\p{L}\p{N}]+` followed by any of `trailing` (`[\r\n]*` or `[\r\n/]*`).
#[inline]
fn punctuation(b: Text, i: usize, trailing: &[u8]) -> Option<usize> {
    let j = if b[i] == b' ' && i + 1 < b.len() && is_other(flags(b, i + 1)) { i + 1 } else { i };
    if !is_other(class(b, j).0) {
        return None;
    }
    let mut end = run(b, j, usize::MAX, is_other);
    while end < b.len() && trailing.contains(&b[end]) {
        end += 1;
    }
    Some(end)
}

/// o200k:
/// `[^\r\n\p{L}\p{N}]?[U]*[W]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[U]+[W]*(?i:...)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`
/// with `U = [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]` and `W = [\p{Ll}\p{Lm}\p{Lo}\p{M}]`.
fn o200k(b: Text, i: usize) -> usize {
    let (f, len) = class(b, i);
    // The optional prefix is tried first; without it, only a mark (in U and W, not in L) can start a word.
    let prefix = f & (LETTER | NUMBER) == 0 && b[i] != b'\r' && b[i] != b'\n' && i + len < b.len();
    let starts: &[usize] = if prefix { &[i + len, i] } else { &[i] };
    let word = starts
        .iter()
        .find_map(|&s| upper_then_lower(b, s))
        .or_else(|| starts.iter().find_map(|&s| upper_then_any_lower(b, s)));
    if let Some(end) = word {
        return contraction(b, end, true).unwrap_or(end);
    }
    if f & NUMBER != 0 {
        return run(b, i, 3, |g| g & NUMBER != 0);
    }
    punctuation(b, i, b"\r\n/").unwrap_or_else(|| whitespace(b, i, true))
}

/// `[U]*[W]+` from `s`: the greedy `[U]*` gives back up to the last character that is also in W.
#[inline]
fn upper_then_lower(b: Text, s: usize) -> Option<usize> {
    let (mut j, mut last_lower_end) = (s, None);
    while j < b.len() {
        let (f, len) = class(b, j);
        if f & UPPER == 0 {
            break;
        }
        j += len;
        if f & LOWER != 0 {
            last_lower_end = Some(j);
        }
    }
    if flags(b, j) & LOWER != 0 {
        return Some(run(b, j, usize::MAX, |g| g & LOWER != 0));
    }
    last_lower_end
}

/// `[U]+[W]*` from `s`.
#[inline]
fn upper_then_any_lower(b: Text, s: usize) -> Option<usize> {
    let j = run(b, s, usize::MAX, |g| g & UPPER != 0);
    (j > s).then(|| run(b, j, usize::MAX, |g| g & LOWER != 0))
}

#[cfg(test)]
mod tests;
