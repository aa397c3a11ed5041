//! 64 bytes of text as bit masks of the classes the byte-level split regexes read, so that the
//! common pieces (a word, a space and a word, a number, a run of punctuation) end at a
//! `trailing_zeros` instead of a byte-by-byte walk whose every step waits on the one before.
//!
//! Only ASCII is decided here: a piece whose end depends on a byte of a longer character (it may
//! be a letter, a number or a space) is left to the character-by-character code, as is every
//! piece that starts with an apostrophe (a contraction) or with whitespace (the look-ahead rules).

/// Bytes per window.
pub const BYTES: usize = 64;

/// A piece may start this far into a window; beyond it a new window is cut, so that a piece's
/// end (words and numbers are short) usually falls inside.
pub const REUSE: usize = 32;

/// Bit `k` of each mask is the byte at `at + k`.
#[derive(Clone, Copy)]
pub struct Window {
    at: usize,
    letter: u64,
    /// `A`-`Z`, for o200k's words (`a`-`z` are the other letters).
    upper: u64,
    digit: u64,
    space: u64,
    newline: u64,
    high: u64,
    blank: u64,
    quote: u64,
}

impl Window {
    /// No window yet: every position is outside it.
    pub const NONE: Self = Self { at: usize::MAX, letter: 0, upper: 0, digit: 0, space: 0, newline: 0, high: 0, blank: 0, quote: 0 };

    /// The window of `bytes[at..at + BYTES]`.
    pub fn of(bytes: &[u8; BYTES], at: usize) -> Self {
        let mut w = Self { at, ..Self::NONE };
        masks(bytes, &mut w);
        w
    }

    /// Whether a piece at `i` is read from this window.
    #[inline(always)]
    pub fn serves(&self, i: usize) -> bool {
        i.wrapping_sub(self.at) < REUSE
    }

    /// `[^\s\p{L}\p{N}]` among the ASCII bytes.
    #[inline(always)]
    fn other(&self) -> u64 {
        !(self.letter | self.digit | self.space | self.high)
    }

    /// The end of the cl100k / Llama-3 (`max_digits` 3) or Qwen (1) piece at `i` (which the
    /// window serves), when ASCII decides it:
    /// `(?i:'s|...)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`.
    #[inline(always)]
    pub fn cl100k(&self, i: usize, max_digits: usize) -> Option<usize> {
        let k = i - self.at;
        let this = 1u64 << k;
        if (self.quote | self.high) & this != 0 {
            return None;
        }
        if let Some(start) = self.word_from(k) {
            return self.ended(self.letter, start);
        }
        if self.digit & this != 0 {
            return self.digits(k, max_digits);
        }
        self.punctuation(k, false)
    }

    /// The end of the o200k piece at `i`, when ASCII decides it:
    /// `[^\r\n\p{L}\p{N}]?[U]*[W]+(?i:'s|...)?|[^\r\n\p{L}\p{N}]?[U]+[W]*(?i:'s|...)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`.
    /// Among ASCII bytes U holds only `A`-`Z` and W only `a`-`z`, so the greedy `[U]*` has no
    /// letter to give back: both word alternatives end where the capitals from the word's start,
    /// then the small letters after them, end. A word whose end is an apostrophe (a
    /// contraction may follow) is left to the character-by-character code, as is punctuation
    /// whose line breaks are followed by more punctuation (`[\r\n/]*` may take a `/` there).
    #[inline(always)]
    pub fn o200k(&self, i: usize) -> Option<usize> {
        let k = i - self.at;
        let this = 1u64 << k;
        if self.high & this != 0 {
            return None;
        }
        if let Some(start) = self.word_from(k) {
            let capitals = self.clear_from(self.upper, start);
            self.ascii_end(capitals)?;
            let end = self.clear_from(self.letter & !self.upper, capitals);
            return (end < BYTES && (self.high | self.quote) >> end & 1 == 0).then_some(self.at + end);
        }
        if self.digit & this != 0 {
            return self.digits(k, 3);
        }
        self.punctuation(k, true)
    }

    /// Where the word of a cl100k-shaped or o200k piece at `k` starts, if one does: at `k` on a
    /// letter, or after one `[^\r\n\p{L}\p{N}]` before a letter. (Before a byte of a longer
    /// character, which may be a letter, no run of the callers ends at an ASCII byte.)
    #[inline(always)]
    fn word_from(&self, k: usize) -> Option<usize> {
        let (this, next) = (1u64 << k, 2u64 << k);
        if self.letter & this != 0 {
            Some(k)
        } else if (self.letter | self.digit | self.newline) & this == 0 && self.letter & next != 0 {
            Some(k + 1)
        } else {
            None
        }
    }

    /// The end of `\p{N}{1,max_digits}` at `k`, a digit.
    #[inline(always)]
    fn digits(&self, k: usize, max_digits: usize) -> Option<usize> {
        let end = self.clear_from(self.digit, k);
        if end - k >= max_digits {
            Some(self.at + k + max_digits)
        } else {
            self.ascii_end(end)
        }
    }

    /// The end of ` ?[^\s\p{L}\p{N}]+[\r\n]*` at `k`. With `slash` (o200k's `[\r\n/]*`), a
    /// run whose line breaks are followed by more punctuation, where a `/` would go on, is left
    /// to the other code.
    #[inline(always)]
    fn punctuation(&self, k: usize, slash: bool) -> Option<usize> {
        let from = self.punctuation_from(k)?;
        let run = self.clear_from(self.other(), from);
        self.ascii_end(run)?;
        let end = self.clear_from(self.newline, run);
        (end < BYTES && !(slash && end > run && self.other() >> end & 1 != 0)).then_some(self.at + end)
    }

    /// The end of the GPT-2 piece at `i`, when ASCII decides it:
    /// `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`.
    #[inline(always)]
    pub fn r50k(&self, i: usize) -> Option<usize> {
        let k = i - self.at;
        let this = 1u64 << k;
        if (self.quote | self.high) & this != 0 {
            return None;
        }
        // After a space, a byte of a longer character is in none of the classes below.
        let from = if self.blank & this != 0 { k + 1 } else { k };
        let at = 1u64 << from;
        for class in [self.letter, self.digit] {
            if class & at != 0 {
                return self.ended(class, from);
            }
        }
        if self.other() & at != 0 {
            return self.ended(self.other(), from);
        }
        None
    }

    /// Where ` ?[^\s\p{L}\p{N}]+` starts its run at `k`, if it matches there.
    #[inline(always)]
    fn punctuation_from(&self, k: usize) -> Option<usize> {
        let other = self.other();
        if other & 1u64 << k != 0 {
            Some(k)
        } else if self.blank & 1u64 << k != 0 && other & 2u64 << k != 0 {
            Some(k + 1)
        } else {
            None
        }
    }

    /// The end of the run of `class` from `k`, when an ASCII byte of another class ends it.
    #[inline(always)]
    fn ended(&self, class: u64, k: usize) -> Option<usize> {
        self.ascii_end(self.clear_from(class, k))
    }

    /// The first position from `k` whose bit of `class` is clear; [`BYTES`] when none is.
    #[inline(always)]
    fn clear_from(&self, class: u64, k: usize) -> usize {
        (!class & u64::MAX << k).trailing_zeros() as usize
    }

    /// `at + end` when the byte at `end` is inside the window and ASCII, so that the run
    /// surely ends there.
    #[inline(always)]
    fn ascii_end(&self, end: usize) -> Option<usize> {
        (end < BYTES && self.high >> end & 1 == 0).then_some(self.at + end)
    }
}

#[cfg(target_arch = "x86_64")]
fn masks(bytes: &[u8; BYTES], w: &mut Window) {
    use crate::lanes::Lane;
    for (lane, chunk) in bytes.as_chunks::<16>().0.iter().enumerate() {
        let v = Lane::load(chunk);
        let blank = v.eq(b' ');
        w.letter |= v.ascii_letter().at(lane);
        w.upper |= v.within(b'A', 26).at(lane);
        w.digit |= v.within(b'0', 10).at(lane);
        w.space |= blank.or(v.within(b'\t', 5)).at(lane);
        w.newline |= v.eq(b'\n').or(v.eq(b'\r')).at(lane);
        w.high |= v.high().at(lane);
        w.blank |= blank.at(lane);
        w.quote |= v.eq(b'\'').at(lane);
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn masks(bytes: &[u8; BYTES], w: &mut Window) {
    use super::ascii_flags;
    use crate::tokenize::fast::classes::{LETTER, NUMBER, SPACE};
    for (k, &b) in bytes.iter().enumerate() {
        let f = if b < 0x80 { ascii_flags(b) } else { 0 };
        w.letter |= u64::from(f & LETTER != 0) << k;
        w.upper |= u64::from(b.is_ascii_uppercase()) << k;
        w.digit |= u64::from(f & NUMBER != 0) << k;
        w.space |= u64::from(f & SPACE != 0) << k;
        w.newline |= u64::from(b == b'\n' || b == b'\r') << k;
        w.high |= u64::from(b >= 0x80) << k;
        w.blank |= u64::from(b == b' ') << k;
        w.quote |= u64::from(b == b'\'') << k;
    }
}

#[cfg(test)]
mod tests {
    use super::super::ascii_flags;
    use super::*;
    use crate::tokenize::fast::classes::{LETTER, NUMBER, SPACE};

    #[test]
    fn the_masks_class_every_byte_as_the_ascii_table_does() {
        for byte in 0..=255u8 {
            for k in [0, 15, 16, 31, 40, 63] {
                let mut bytes = [b'.'; BYTES];
                bytes[k] = byte;
                let w = Window::of(&bytes, 0);
                let bit = |m: u64| m >> k & 1 == 1;
                let f = if byte < 0x80 { ascii_flags(byte) } else { 0 };
                assert_eq!(bit(w.letter), f & LETTER != 0, "{byte:#04x}");
                assert_eq!(bit(w.upper), byte.is_ascii_uppercase(), "{byte:#04x}");
                assert_eq!(bit(w.digit), f & NUMBER != 0, "{byte:#04x}");
                assert_eq!(bit(w.space), f & SPACE != 0, "{byte:#04x}");
                assert_eq!(bit(w.newline), byte == b'\n' || byte == b'\r', "{byte:#04x}");
                assert_eq!(bit(w.high), byte >= 0x80, "{byte:#04x}");
                assert_eq!(bit(w.blank), byte == b' ', "{byte:#04x}");
                assert_eq!(bit(w.quote), byte == b'\'', "{byte:#04x}");
            }
        }
    }
}
