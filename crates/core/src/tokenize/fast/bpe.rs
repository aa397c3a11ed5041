//! Byte-pair merging of one pre-token, exact to both references.
//!
//! Hugging Face merges the pair with the lowest merge rank, leftmost first; tiktoken merges the
//! adjacent parts whose concatenation has the lowest rank, leftmost first. Both are "lowest
//! (rank, position) among the current pairs", so one pair table serves both: for a rank file,
//! every split of every token into two tokens is a pair with that token's rank.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use rustc_hash::FxHashMap;

/// Pieces up to this many bytes are merged by rescanning (cheap for short words); longer ones
/// use a heap, so a megabyte-long run of one character stays O(n log n).
const SCAN_LIMIT: usize = 96;

/// A pair that does not merge: its rank sorts after every real one.
const NO_MERGE: (u32, u32) = (u32::MAX, 0);

/// Longest token kept under a [`short_key`].
pub const SHORT_MAX_BYTES: usize = 15;

/// `piece` packed with its length into a u128, if it has 1 to [`SHORT_MAX_BYTES`] bytes: the
/// bytes in the low end, the length in the top byte.
///
/// Built from two overlapping loads rather than a copy into a buffer: the copy is a `memcpy`
/// call whose byte stores the following wide load must wait for (a store-forwarding stall),
/// and this runs once per pre-token.
#[inline(always)]
pub fn short_key(piece: &[u8]) -> Option<u128> {
    let n = piece.len();
    let packed = match n {
        1 => piece[0] as u128,
        2..=3 => {
            let (lo, hi) = (u16::from_le_bytes([piece[0], piece[1]]), u16::from_le_bytes([piece[n - 2], piece[n - 1]]));
            lo as u128 | (hi as u128) << ((n - 2) * 8)
        }
        4..=7 => {
            let lo = u32::from_le_bytes(piece[..4].try_into().expect("4 bytes"));
            let hi = u32::from_le_bytes(piece[n - 4..].try_into().expect("4 bytes"));
            lo as u128 | (hi as u128) << ((n - 4) * 8)
        }
        8..=SHORT_MAX_BYTES => {
            let lo = u64::from_le_bytes(piece[..8].try_into().expect("8 bytes"));
            let hi = u64::from_le_bytes(piece[n - 8..].try_into().expect("8 bytes"));
            lo as u128 | (hi as u128) << ((n - 8) * 8)
        }
        _ => return None,
    };
    Some(packed | (n as u128) << 120)
}

/// Token bytes -> id, split by length: tokens of up to [`SHORT_MAX_BYTES`] by their
/// [`short_key`], so that a lookup is one probe with the key in the slot, where a byte-string
/// key costs a pointer chase and a `memcmp`; the longer ones by their bytes.
struct Vocab {
    short: FxHashMap<u128, u32>,
    long: FxHashMap<Vec<u8>, u32>,
}

impl Vocab {
    fn new(tokens: FxHashMap<Vec<u8>, u32>) -> Self {
        let (mut short, mut long) = (FxHashMap::default(), FxHashMap::default());
        for (token, id) in tokens {
            match short_key(&token) {
                Some(key) => short.insert(key, id),
                None => long.insert(token, id),
            };
        }
        Self { short, long }
    }

    #[inline]
    fn get(&self, bytes: &[u8]) -> Option<u32> {
        match short_key(bytes) {
            Some(key) => self.short.get(&key).copied(),
            None => self.long.get(bytes).copied(),
        }
    }

    /// Every token's bytes and id.
    fn for_each(&self, mut f: impl FnMut(&[u8], u32)) {
        for (&key, &id) in &self.short {
            f(&key.to_le_bytes()[..(key >> 120) as usize], id);
        }
        for (token, &id) in &self.long {
            f(token, id);
        }
    }
}

pub struct BpeModel {
    vocab: Vocab,
    byte_ids: [u32; 256],
    /// (left id, right id) -> (rank, merged id)
    merges: FxHashMap<u64, (u32, u32)>,
    /// The merge of two single bytes, by `left << 8 | right`: a piece's first pairs are all of
    /// this kind, and a 512 KiB array stays in the CPU's cache where the hash table (hundreds of
    /// thousands of entries) does not.
    byte_pairs: Box<[(u32, u32)]>,
    /// A piece that is itself a token is emitted whole (tiktoken always; HF with `ignore_merges`).
    whole_first: bool,
}

#[inline]
fn pair(a: u32, b: u32) -> u64 {
    (a as u64) << 32 | b as u64
}

impl BpeModel {
    /// A tiktoken rank table: token bytes -> rank, which is also the id.
    pub fn from_ranks(ranks: FxHashMap<Vec<u8>, u32>) -> Result<Self, String> {
        let vocab = Vocab::new(ranks);
        // Real tables have about 2.3 splits into two tokens per token (cl100k: 233k for 100k).
        let tokens = vocab.short.len() + vocab.long.len();
        let mut merges = FxHashMap::with_capacity_and_hasher(tokens * 5 / 2, Default::default());
        vocab.for_each(|token, rank| {
            for k in 1..token.len() {
                // The suffix is looked up only when the prefix is a token: most long prefixes are not.
                let Some(a) = vocab.get(&token[..k]) else { continue };
                if let Some(b) = vocab.get(&token[k..]) {
                    merges.insert(pair(a, b), (rank, rank));
                }
            }
        });
        Self::new(vocab, merges, true)
    }

    /// A Hugging Face BPE: vocabulary and merges in priority order, both as raw bytes.
    pub fn from_merges(
        vocab: FxHashMap<Vec<u8>, u32>,
        merge_list: &[(Vec<u8>, Vec<u8>)],
        ignore_merges: bool,
    ) -> Result<Self, String> {
        let mut merges = FxHashMap::default();
        for (rank, (a, b)) in merge_list.iter().enumerate() {
            let id = |t: &[u8]| {
                vocab.get(t).copied().ok_or_else(|| {
                    format!("merge {} ('{}' + '{}') uses a token missing from the vocabulary", rank + 1,
                        String::from_utf8_lossy(a), String::from_utf8_lossy(b))
                })
            };
            let merged = [a.as_slice(), b.as_slice()].concat();
            // Later duplicates win, as in the `tokenizers` crate's map.
            merges.insert(pair(id(a)?, id(b)?), (rank as u32, id(&merged)?));
        }
        Self::new(Vocab::new(vocab), merges, ignore_merges)
    }

    fn new(vocab: Vocab, merges: FxHashMap<u64, (u32, u32)>, whole_first: bool) -> Result<Self, String> {
        let mut byte_ids = [0u32; 256];
        for (byte, slot) in byte_ids.iter_mut().enumerate() {
            *slot = vocab.get(&[byte as u8]).ok_or_else(|| {
                format!("byte 0x{byte:02x} has no token, so not every text can be encoded")
            })?;
        }
        let mut byte_pairs = vec![NO_MERGE; 1 << 16].into_boxed_slice();
        for (i, slot) in byte_pairs.iter_mut().enumerate() {
            let (a, b) = (byte_ids[i >> 8], byte_ids[i & 0xFF]);
            *slot = merges.get(&pair(a, b)).copied().unwrap_or(NO_MERGE);
        }
        Ok(Self { vocab, byte_ids, merges, byte_pairs, whole_first })
    }

    /// The id of a piece that is one token, when this model emits such pieces whole.
    #[inline]
    pub fn whole(&self, piece: &[u8]) -> Option<u32> {
        if piece.len() == 1 {
            return Some(self.byte_ids[piece[0] as usize]);
        }
        if self.whole_first {
            return self.vocab.get(piece);
        }
        None
    }

    #[inline]
    fn merge_of(&self, a: u32, b: u32) -> Option<(u32, u32)> {
        self.merges.get(&pair(a, b)).copied()
    }

    /// Appends the ids of `piece` after merging.
    pub fn merge(&self, piece: &[u8], out: &mut Vec<u32>) {
        if piece.len() <= SCAN_LIMIT {
            self.merge_by_scan(piece, out)
        } else {
            self.merge_by_heap(piece, out)
        }
    }

    #[inline]
    fn byte_pair(&self, a: u8, b: u8) -> (u32, u32) {
        self.byte_pairs[(a as usize) << 8 | b as usize]
    }

    /// Keeps each adjacent pair's (rank, merged id) in an array, so a merge looks up only the
    /// two pairs it changes, and finding the next merge is a scan without hashing. The arrays
    /// close up after a merge with plain loops: they are short, and a `memmove` call per merge
    /// cost more than the moves.
    fn merge_by_scan(&self, piece: &[u8], out: &mut Vec<u32>) {
        let start = out.len();
        out.extend(piece.iter().map(|&b| self.byte_ids[b as usize]));
        let symbols = &mut out[start..];
        let mut n = symbols.len();
        let mut pairs = [NO_MERGE; SCAN_LIMIT];
        for (slot, w) in pairs.iter_mut().zip(piece.windows(2)) {
            *slot = self.byte_pair(w[0], w[1]);
        }
        while n > 1 {
            let (mut i, mut rank) = (0, pairs[0].0);
            for (j, &(r, _)) in pairs[1..n - 1].iter().enumerate() {
                if r < rank {
                    (i, rank) = (j + 1, r);
                }
            }
            if rank == u32::MAX {
                break;
            }
            symbols[i] = pairs[i].1;
            for j in i + 1..n - 1 {
                symbols[j] = symbols[j + 1];
                pairs[j] = pairs[j + 1];
            }
            n -= 1;
            if i > 0 {
                pairs[i - 1] = self.merge_of(symbols[i - 1], symbols[i]).unwrap_or(NO_MERGE);
            }
            if i + 1 < n {
                pairs[i] = self.merge_of(symbols[i], symbols[i + 1]).unwrap_or(NO_MERGE);
            }
        }
        out.truncate(start + n);
    }

    fn merge_by_heap(&self, piece: &[u8], out: &mut Vec<u32>) {
        let n = piece.len();
        if n == 0 {
            return;
        }
        let mut ids: Vec<u32> = piece.iter().map(|&b| self.byte_ids[b as usize]).collect();
        let mut next: Vec<usize> = (1..=n).collect();
        let mut prev: Vec<usize> = (0..n).map(|i| i.wrapping_sub(1)).collect();
        let mut alive = vec![true; n];
        let mut heap = BinaryHeap::new();
        let push = |heap: &mut BinaryHeap<_>, ids: &[u32], i: usize, j: usize| {
            if let Some((rank, id)) = self.merge_of(ids[i], ids[j]) {
                heap.push(Reverse((rank, i, id)));
            }
        };
        for (i, w) in piece.windows(2).enumerate() {
            let (rank, id) = self.byte_pair(w[0], w[1]);
            if rank != u32::MAX {
                heap.push(Reverse((rank, i, id)));
            }
        }
        while let Some(Reverse((rank, i, id))) = heap.pop() {
            let j = next[i];
            if !alive[i] || j >= n || self.merge_of(ids[i], ids[j]) != Some((rank, id)) {
                continue;
            }
            ids[i] = id;
            alive[j] = false;
            next[i] = next[j];
            if next[j] < n {
                prev[next[j]] = i;
            }
            if prev[i] < n {
                push(&mut heap, &ids, prev[i], i);
            }
            if next[i] < n {
                push(&mut heap, &ids, i, next[i]);
            }
        }
        out.extend((0..n).filter(|&i| alive[i]).map(|i| ids[i]));
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// A toy rank table over "abc": every byte, then merges that overlap and chain.
    fn toy() -> BpeModel {
        let mut ranks: FxHashMap<Vec<u8>, u32> = (0..=255u8).map(|b| (vec![b], b as u32)).collect();
        for (i, t) in ["ab", "bc", "aa", "abc", "aaaa", "ca", "bca", "cc", "ccc"].iter().enumerate() {
            ranks.insert(t.as_bytes().to_vec(), 256 + i as u32);
        }
        BpeModel::from_ranks(ranks).unwrap()
    }

    proptest! {
        #[test]
        fn heap_and_scan_merge_alike(s in "[abc]{0,96}") {
            let m = toy();
            let (mut a, mut b) = (vec![], vec![]);
            m.merge_by_scan(s.as_bytes(), &mut a);
            m.merge_by_heap(s.as_bytes(), &mut b);
            prop_assert_eq!(a, b);
        }
    }

    #[test]
    fn lowest_rank_leftmost_first() {
        let m = toy();
        let mut out = vec![];
        // "aaa": "aa" (258) merges at the left; then nothing joins "aa"+"a".
        m.merge(b"aaa", &mut out);
        assert_eq!(out, vec![258, b'a' as u32]);
        out.clear();
        // "abca": ab(256) first, then "ab"+"c" -> abc(259); "bca" never forms.
        m.merge(b"abca", &mut out);
        assert_eq!(out, vec![259, b'a' as u32]);
    }

    #[test]
    fn short_keys_are_the_bytes_and_the_length() {
        let text = b"abcdefghijklmnop\xff\x00\x80";
        for start in 0..4 {
            for end in start + 1..=(start + SHORT_MAX_BYTES).min(text.len()) {
                let piece = &text[start..end];
                let mut buf = [0u8; 16];
                buf[..piece.len()].copy_from_slice(piece);
                buf[15] = piece.len() as u8;
                assert_eq!(short_key(piece), Some(u128::from_le_bytes(buf)), "{piece:?}");
            }
        }
        assert_eq!(short_key(b""), None);
        assert_eq!(short_key(&text[..16]), None);
    }

    #[test]
    fn the_vocabulary_gives_back_what_it_was_given() {
        let tokens: FxHashMap<Vec<u8>, u32> =
            [&b"a"[..], b"ab", b"abcdefghijklmno", b"abcdefghijklmnop", b"\x00\x00"].iter().zip(0..).map(|(t, i)| (t.to_vec(), i)).collect();
        let vocab = Vocab::new(tokens.clone());
        let mut back = FxHashMap::default();
        vocab.for_each(|t, id| {
            back.insert(t.to_vec(), id);
        });
        assert_eq!(back, tokens);
        for (t, &id) in &tokens {
            assert_eq!(vocab.get(t), Some(id));
        }
        assert_eq!(vocab.get(b"\x00"), None, "a prefix of a key is not a key");
        assert_eq!(vocab.get(b"abcdefghijklmnopq"), None);
    }

    #[test]
    fn a_missing_byte_is_refused() {
        let ranks: FxHashMap<Vec<u8>, u32> = [(b"a".to_vec(), 0)].into_iter().collect();
        assert!(BpeModel::from_ranks(ranks).err().unwrap().contains("byte 0x00"));
    }
}
