//! A document's distinct words, found by an open-addressing table of its own: Gopher's and the
//! repetition filter's rules read every word of every document, and a general hash map spent a
//! tenth of the FineWeb cascade here (hashing each word as bytes, a `memcmp` call per match).
//! Here a word's first eight bytes, packed in a `u64`, are its hash's input and, with its length,
//! the whole comparison for the words of eight bytes or less that most words are.

/// The distinct words of a document, so that per-word work is done once per word, not per
/// occurrence: `ids[i]` indexes `words` and `counts` for the document's i-th word.
pub struct Vocab<'a> {
    /// Each distinct word once, in first-seen order.
    pub words: Vec<&'a str>,
    /// How often each distinct word occurs.
    pub counts: Vec<u32>,
    /// For each word of the document, its index in `words`.
    pub ids: Vec<u32>,
}

impl<'a> Vocab<'a> {
    pub(super) fn new(words: &[&'a str]) -> Self {
        let mut v = Self { words: Vec::new(), counts: Vec::new(), ids: Vec::with_capacity(words.len()) };
        let mut table = Table::with_slots((words.len() / 2).max(8).next_power_of_two() * 2);
        for &w in words {
            let head = head(w.as_bytes());
            let h = hash(head, w.as_bytes());
            let id = match table.find(h, head, w.len(), |id| w.len() <= 8 || v.words[id].as_bytes()[8..] == w.as_bytes()[8..]) {
                Ok(id) => id,
                Err(slot) => {
                    let id = v.words.len();
                    table.slots[slot] = Slot::new(head, w.len(), id);
                    v.words.push(w);
                    v.counts.push(0);
                    if v.words.len() * 2 > table.slots.len() {
                        table = table.grown(&v.words);
                    }
                    id
                }
            };
            v.counts[id] += 1;
            v.ids.push(id as u32);
        }
        v
    }
}

/// A word's first eight bytes, its length and its id + 1 (0: an empty slot): most words are
/// told apart, or found, without reading the word.
#[derive(Clone, Copy, Default)]
struct Slot {
    head: u64,
    len_id: u64,
}

impl Slot {
    fn new(head: u64, len: usize, id: usize) -> Self {
        Self { head, len_id: (len as u64) << 32 | (id as u64 + 1) }
    }
}

/// Linear probing, at most half full.
struct Table {
    slots: Vec<Slot>,
}

impl Table {
    fn with_slots(n: usize) -> Self {
        Self { slots: vec![Slot::default(); n] }
    }

    /// The id of the word with this head and length that `rest_same` accepts (it compares the
    /// bytes past the head), or the empty slot where it goes.
    #[inline]
    fn find(&self, hash: u64, head: u64, len: usize, rest_same: impl Fn(usize) -> bool) -> Result<usize, usize> {
        let mask = self.slots.len() - 1;
        let mut i = (hash >> 32) as usize & mask;
        loop {
            let s = self.slots[i];
            if s.len_id == 0 {
                return Err(i);
            }
            let id = (s.len_id as u32 - 1) as usize;
            if s.head == head && (s.len_id >> 32) as usize == len && rest_same(id) {
                return Ok(id);
            }
            i = (i + 1) & mask;
        }
    }

    /// A table twice as large holding `words`, each at the slot its hash gives.
    fn grown(&self, words: &[&str]) -> Self {
        let mut table = Self::with_slots(self.slots.len() * 2);
        for s in self.slots.iter().filter(|s| s.len_id != 0) {
            let id = (s.len_id as u32 - 1) as usize;
            let slot = table.find(hash(s.head, words[id].as_bytes()), s.head, words[id].len(), |_| false).unwrap_or_else(|slot| slot);
            table.slots[slot] = *s;
        }
        table
    }
}

/// The first eight bytes of `b` in a `u64`, zeros past its end: two overlapping loads for the
/// lengths in between, whose shared bytes land on the same bits.
fn head(b: &[u8]) -> u64 {
    let n = b.len();
    if let Some(first) = b.first_chunk::<8>() {
        u64::from_le_bytes(*first)
    } else if n >= 4 {
        let at = |i: usize| u64::from(u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]));
        at(0) | at(n - 4) << (8 * (n - 4))
    } else if n > 0 {
        u64::from(b[0]) | u64::from(b[n / 2]) << (8 * (n / 2)) | u64::from(b[n - 1]) << (8 * (n - 1))
    } else {
        0
    }
}

/// The head, the last eight bytes of a longer word and the length, mixed by a folded multiply.
fn hash(head: u64, b: &[u8]) -> u64 {
    let tail = b.last_chunk::<8>().filter(|_| b.len() > 8).map_or(0, |t| u64::from_le_bytes(*t));
    let x = (head ^ tail.rotate_left(29)).wrapping_add(b.len() as u64);
    let p = u128::from(x) * 0x9E37_79B9_7F4A_7C15;
    (p as u64) ^ (p >> 64) as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use rustc_hash::FxHashMap;

    #[test]
    fn heads_are_the_bytes_zero_padded() {
        for s in ["", "a", "ab", "abc", "abcd", "abcde", "abcdefg", "abcdefgh", "abcdefghij"] {
            let mut want = [0u8; 8];
            let n = s.len().min(8);
            want[..n].copy_from_slice(&s.as_bytes()[..n]);
            assert_eq!(head(s.as_bytes()), u64::from_le_bytes(want), "{s:?}");
        }
    }

    proptest! {
        /// The same words, counts and ids as a hash map gives, on words that share heads, differ
        /// by a NUL byte or by length alone, and outgrow the first table.
        #[test]
        fn the_same_as_a_hash_map(picks in proptest::collection::vec(0usize..40, 0..600)) {
            let pool: Vec<String> = (0..40).map(|i| match i % 4 {
                0 => format!("word{i}"),
                1 => format!("sharedhead{}", "x".repeat(i)),
                2 => "a\0".repeat(i / 4),
                _ => "é".repeat(i),
            }).collect();
            let words: Vec<&str> = picks.iter().map(|&i| pool[i].as_str()).collect();
            let v = Vocab::new(&words);
            let mut index: FxHashMap<&str, u32> = FxHashMap::default();
            let (mut distinct, mut counts, mut ids) = (Vec::new(), Vec::new(), Vec::new());
            for &w in &words {
                let id = *index.entry(w).or_insert_with(|| {
                    distinct.push(w);
                    counts.push(0u32);
                    (distinct.len() - 1) as u32
                });
                counts[id as usize] += 1;
                ids.push(id);
            }
            prop_assert_eq!(v.words, distinct);
            prop_assert_eq!(v.counts, counts);
            prop_assert_eq!(v.ids, ids);
        }
    }
}
