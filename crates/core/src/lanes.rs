//! Byte classes of 16 bytes at a time as bit masks, with SSE2 (every x86_64 CPU has it): the
//! word split and the tokenizer's split read 64 bytes as four lanes, and a piece then ends at a
//! `trailing_zeros` of a mask instead of a byte loop. Callers keep a byte-loop twin for other
//! architectures and test the two against each other.

use std::arch::x86_64::{
    __m128i, _mm_add_epi8, _mm_cmpeq_epi8, _mm_cmplt_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi8,
};

/// 16 bytes of text.
#[derive(Clone, Copy)]
pub(crate) struct Lane(__m128i);

/// One bit per byte of a lane: the byte is in a class.
#[derive(Clone, Copy)]
pub(crate) struct Bits(__m128i);

impl Lane {
    /// The 16 bytes of `chunk`.
    #[inline(always)]
    pub fn load(chunk: &[u8; 16]) -> Self {
        // SAFETY: SSE2 is part of x86_64; `chunk` is 16 readable bytes and the load has no
        // alignment requirement.
        Self(unsafe { _mm_loadu_si128(chunk.as_ptr().cast()) })
    }

    /// Bytes equal to `b`.
    #[inline(always)]
    pub fn eq(self, b: u8) -> Bits {
        // SAFETY: SSE2 is part of x86_64.
        Bits(unsafe { _mm_cmpeq_epi8(self.0, _mm_set1_epi8(b as i8)) })
    }

    /// Bytes `b` with `b - lo < n` as unsigned numbers. SSE2 compares bytes signed, so the range
    /// is moved to start at `i8::MIN`.
    #[inline(always)]
    pub fn within(self, lo: u8, n: u8) -> Bits {
        // SAFETY: SSE2 is part of x86_64.
        Bits(unsafe { _mm_cmplt_epi8(_mm_add_epi8(self.0, _mm_set1_epi8(0x80u8.wrapping_sub(lo) as i8)), _mm_set1_epi8((0x80 + n) as i8)) })
    }

    /// ASCII letters: `(b | 0x20) - 'a' < 26`.
    #[inline(always)]
    pub fn ascii_letter(self) -> Bits {
        // SAFETY: SSE2 is part of x86_64.
        Self(unsafe { _mm_or_si128(self.0, _mm_set1_epi8(0x20)) }).within(b'a', 26)
    }

    /// Bytes of 0x80 and above: the bytes of characters beyond ASCII.
    #[inline(always)]
    pub fn high(self) -> Bits {
        Bits(self.0)
    }
}

impl Bits {
    /// Bytes in either class.
    #[inline(always)]
    pub fn or(self, other: Self) -> Self {
        // SAFETY: SSE2 is part of x86_64.
        Self(unsafe { _mm_or_si128(self.0, other.0) })
    }

    /// The 16 bits, low byte first, placed for lane `lane` of a 64-byte mask.
    #[inline(always)]
    pub fn at(self, lane: usize) -> u64 {
        // SAFETY: SSE2 is part of x86_64.
        u64::from(unsafe { _mm_movemask_epi8(self.0) } as u16) << (16 * lane)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_byte_is_classed_as_its_value_says() {
        for start in (0..=255u8).step_by(16) {
            let bytes: [u8; 16] = std::array::from_fn(|k| start + k as u8);
            let lane = Lane::load(&bytes);
            for (k, &b) in bytes.iter().enumerate() {
                let bit = |bits: Bits| bits.at(1) >> (16 + k) & 1 == 1;
                assert_eq!(bit(lane.eq(b'x')), b == b'x', "{b}");
                assert_eq!(bit(lane.within(b'0', 10)), b.is_ascii_digit(), "{b}");
                assert_eq!(bit(lane.within(0xF0, 16)), b >= 0xF0, "{b}");
                assert_eq!(bit(lane.ascii_letter()), b.is_ascii_alphabetic(), "{b}");
                assert_eq!(bit(lane.high()), b >= 0x80, "{b}");
                assert_eq!(bit(lane.eq(b' ').or(lane.eq(b'\n'))), b == b' ' || b == b'\n', "{b}");
            }
        }
    }
}
