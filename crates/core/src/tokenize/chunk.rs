//! Bounded chunks for long documents.
//!
//! BPE cost grows faster than linearly with the length of a pre-token, and SentencePiece-style
//! tokenizers have no pre-tokenizer at all, so one 100k-character document can take minutes.
//! Long texts are cut at a single space between two non-space characters: every split regex of
//! the byte-level families (GPT-2, cl100k, o200k, Llama-3, Qwen) ends a pre-token there and
//! starts the next one with that space, so encoding the chunks gives the same ids as the whole.

/// Where a long text may be cut, by what the pre-tokenizer does with spaces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChunkStyle {
    /// The next chunk starts with the space (regex pre-tokenizers).
    KeepSpace,
    /// The space is dropped: the normalizer prepends '▁' to each chunk, standing in for it.
    DropSpace,
}

/// Splits `text` into pieces of about `max_bytes` (longer only where no cut point exists).
pub fn chunks(text: &str, max_bytes: usize, style: ChunkStyle) -> Chunks<'_> {
    Chunks { rest: text, max_bytes: max_bytes.max(1), style }
}

/// The pieces of [`chunks`].
pub struct Chunks<'a> {
    rest: &'a str,
    max_bytes: usize,
    style: ChunkStyle,
}

impl<'a> Iterator for Chunks<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        if self.rest.is_empty() {
            return None;
        }
        let Some(cut) = next_cut(self.rest, self.max_bytes) else {
            return Some(std::mem::take(&mut self.rest));
        };
        let (head, tail) = self.rest.split_at(cut);
        self.rest = match self.style {
            ChunkStyle::KeepSpace => tail,
            ChunkStyle::DropSpace => &tail[1..],
        };
        Some(head)
    }
}

/// The first byte index at or after `from` holding a space whose neighbours are not whitespace.
fn next_cut(text: &str, from: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut i = from;
    while i < bytes.len() {
        if bytes[i] == b' ' {
            let before = text[..i].chars().next_back();
            let after = text[i + 1..].chars().next();
            if matches!((before, after), (Some(b), Some(a)) if !b.is_whitespace() && !a.is_whitespace())
            {
                return Some(i);
            }
        }
        i += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keep_space_reassembles_exactly() {
        let text = "alpha beta  gamma\tdelta é ü 😀 end";
        for max in 1..text.len() + 2 {
            let parts: Vec<&str> = chunks(text, max, ChunkStyle::KeepSpace).collect();
            assert_eq!(parts.concat(), text, "max={max}");
            for p in &parts[1..] {
                assert!(p.starts_with(' '), "{parts:?}");
            }
        }
    }

    #[test]
    fn drop_space_removes_only_the_cut_spaces() {
        let parts: Vec<&str> = chunks("aa bb cc", 2, ChunkStyle::DropSpace).collect();
        assert_eq!(parts, vec!["aa", "bb", "cc"]);
    }

    #[test]
    fn never_cuts_inside_a_whitespace_run() {
        let parts: Vec<&str> = chunks("a  b\u{3000} c", 1, ChunkStyle::KeepSpace).collect();
        assert_eq!(parts, vec!["a  b\u{3000} c"]);
    }

    #[test]
    fn short_text_is_one_chunk() {
        assert_eq!(chunks("x y", 100, ChunkStyle::KeepSpace).count(), 1);
        assert_eq!(chunks("", 100, ChunkStyle::KeepSpace).count(), 0);
    }
}
