//! Padded mode, one document per row: a document's ids cut or padded to exactly `seq_len`, and
//! the attention mask that goes with them.

/// The first `seq_len` tokens, then `pad` up to `seq_len`.
pub fn padded(tokens: &[u32], seq_len: usize, pad: u32) -> impl Iterator<Item = u32> + '_ {
    let n = tokens.len().min(seq_len);
    tokens[..n].iter().copied().chain(std::iter::repeat_n(pad, seq_len - n))
}

/// 1 for each real token of a document of `len` tokens, 0 for padding.
pub fn mask(len: usize, seq_len: usize) -> impl Iterator<Item = u8> {
    let n = len.min(seq_len);
    std::iter::repeat_n(1, n).chain(std::iter::repeat_n(0, seq_len - n))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncates_and_pads() {
        assert_eq!(padded(&[1, 2, 3], 5, 0).collect::<Vec<_>>(), vec![1, 2, 3, 0, 0]);
        assert_eq!(padded(&[1, 2, 3], 2, 0).collect::<Vec<_>>(), vec![1, 2]);
        assert_eq!(mask(3, 5).collect::<Vec<_>>(), vec![1, 1, 1, 0, 0]);
        assert_eq!(mask(9, 2).collect::<Vec<_>>(), vec![1, 1]);
    }
}
