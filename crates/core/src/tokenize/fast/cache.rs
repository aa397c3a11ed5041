//! A bounded pre-token -> ids cache, one per thread.
//!
//! In front sits a direct-mapped table for pieces of up to 7 bytes that are one token (" the",
//! ",", "\n\n"), keyed by the bytes packed into a u64: no hashing of a slice, no pointer chase,
//! and small enough (16K slots, 192 KiB) to stay in the CPU's cache.
//!
//! Most pre-tokens repeat (" the", " of", "\n\n"), so BPE runs only on a miss. Each thread owns
//! its cache, so the hot path takes no contended lock. Memory is bounded with two generations of
//! half the budget each: when the young one is full, it becomes the old one (the previous old
//! one is cleared and reused as the young), and a hit in the old one copies the entry back to the
//! young. Pieces in use survive every turnover; pieces seen once age out. Each generation is
//! allocated once at its final size, so it never grows past the budget.

use std::mem::size_of;

use rustc_hash::FxHashMap;

/// Pre-tokens longer than this are not cached: they rarely repeat, and would crowd the budget.
pub const MAX_CACHED_BYTES: usize = 64;

/// The budget per thread.
pub const BUDGET_BYTES: usize = 8 << 20;


const HOT_BITS: u32 = 14;

/// `piece` packed with its length into a u64, if it has at most 7 bytes (never 0).
#[inline(always)]
pub fn hot_key(piece: &[u8]) -> Option<u64> {
    if piece.len() > 7 {
        return None;
    }
    // Up to 7 bytes fill the low 56 bits of the short key; the length goes above them.
    super::bpe::short_key(piece).map(|k| k as u64 | (piece.len() as u64) << 56)
}

#[inline(always)]
fn hot_slot(key: u64) -> usize {
    (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - HOT_BITS)) as usize
}

/// Where one entry's key and ids sit in a generation's arenas.
#[derive(Clone, Copy)]
struct Span {
    key: u32,
    ids: u32,
    key_len: u16,
    ids_len: u16,
}

/// One generation: a table from the key's 64-bit hash to spans of two arenas. No allocation per
/// entry, and a turnover only clears. The key bytes are compared on every hit, so a hash
/// collision is a miss, never a wrong answer.
#[derive(Default)]
struct Generation {
    table: FxHashMap<u64, Span>,
    keys: Vec<u8>,
    ids: Vec<u32>,
}

impl Generation {
    /// A quarter of the budget for the table's slots (at most half once hashbrown rounds up),
    /// a quarter for the keys and a quarter for the ids.
    fn with_budget(budget: usize) -> Self {
        let slots = budget / 4 / (size_of::<(u64, Span)>() + 1);
        Self {
            table: FxHashMap::with_capacity_and_hasher(slots, Default::default()),
            keys: Vec::with_capacity(budget / 4),
            ids: Vec::with_capacity(budget / 4 / size_of::<u32>()),
        }
    }

    fn bytes(&self) -> usize {
        self.table.capacity() * (size_of::<(u64, Span)>() + 1)
            + self.keys.capacity()
            + self.ids.capacity() * size_of::<u32>()
    }

    fn get(&self, hash: u64, piece: &[u8]) -> Option<&[u32]> {
        let s = self.table.get(&hash)?;
        let key = &self.keys[s.key as usize..s.key as usize + s.key_len as usize];
        (key == piece).then(|| &self.ids[s.ids as usize..s.ids as usize + s.ids_len as usize])
    }

    /// Whether `piece` and `ids` fit without any of the three growing.
    fn fits(&self, piece: &[u8], ids: &[u32]) -> bool {
        self.table.len() < self.table.capacity()
            && self.keys.len() + piece.len() <= self.keys.capacity()
            && self.ids.len() + ids.len() <= self.ids.capacity()
    }

    fn put(&mut self, hash: u64, piece: &[u8], ids: &[u32]) {
        let span = Span { key: self.keys.len() as u32, ids: self.ids.len() as u32, key_len: piece.len() as u16, ids_len: ids.len() as u16 };
        self.keys.extend_from_slice(piece);
        self.ids.extend_from_slice(ids);
        self.table.insert(hash, span);
    }

    fn clear(&mut self) {
        self.table.clear();
        self.keys.clear();
        self.ids.clear();
    }
}

/// A thread's cache of encoded pieces: a direct-mapped front table for one-token pieces and two
/// generations of multi-token pieces under a byte budget.
pub struct PieceCache {
    hot_keys: Box<[u64]>,
    hot_ids: Box<[u32]>,
    young: Generation,
    old: Generation,
    budget: usize,
    /// Lookups answered.
    pub hits: u64,
    /// Lookups that had to encode.
    pub misses: u64,
    /// Times the young generation became the old one.
    pub turnovers: u64,
}

impl PieceCache {
    /// A cache of about `budget` bytes.
    pub fn new(budget: usize) -> Self {
        let hot = 1 << HOT_BITS;
        let budget = budget.saturating_sub(hot * (size_of::<u64>() + size_of::<u32>()));
        Self {
            hot_keys: vec![0; hot].into(),
            hot_ids: vec![0; hot].into(),
            young: Generation::with_budget(budget / 2),
            old: Generation::default(),
            budget,
            hits: 0,
            misses: 0,
            turnovers: 0,
        }
    }

    /// The id of a one-token piece by its [`hot_key`], if the front table holds it.
    #[inline(always)]
    pub fn hot(&mut self, key: u64) -> Option<u32> {
        let slot = hot_slot(key);
        let found = self.hot_keys[slot] == key;
        self.hits += found as u64;
        found.then(|| self.hot_ids[slot])
    }

    /// Remembers a one-token piece in the front table.
    #[inline(always)]
    pub fn put_hot(&mut self, key: u64, id: u32) {
        let slot = hot_slot(key);
        self.hot_keys[slot] = key;
        self.hot_ids[slot] = id;
    }

    /// Appends the cached ids of `piece` to `out`; false on a miss.
    #[inline]
    pub fn extend(&mut self, piece: &[u8], out: &mut Vec<u32>) -> bool {
        let hash = xxhash_rust::xxh3::xxh3_64(piece);
        if let Some(ids) = self.young.get(hash, piece) {
            self.hits += 1;
            out.extend_from_slice(ids);
            return true;
        }
        if let Some(ids) = self.old.get(hash, piece) {
            self.hits += 1;
            let start = out.len();
            out.extend_from_slice(ids);
            self.store(hash, piece, start, out);
            return true;
        }
        self.misses += 1;
        false
    }

    /// Caches `piece` -> `out[start..]`.
    pub fn insert(&mut self, piece: &[u8], start: usize, out: &[u32]) {
        if piece.len() <= MAX_CACHED_BYTES {
            self.store(xxhash_rust::xxh3::xxh3_64(piece), piece, start, out);
        }
    }

    fn store(&mut self, hash: u64, piece: &[u8], start: usize, out: &[u32]) {
        let ids = &out[start..];
        if ids.len() > u16::MAX as usize {
            return;
        }
        if !self.young.fits(piece, ids) {
            // The old generation's buffers become the young one's, so a turnover allocates nothing.
            std::mem::swap(&mut self.young, &mut self.old);
            self.young.clear();
            if self.young.bytes() == 0 {
                self.young = Generation::with_budget(self.budget / 2);
            }
            self.turnovers += 1;
        }
        if self.young.fits(piece, ids) {
            self.young.put(hash, piece, ids);
        }
    }

    /// Bytes held: the front table and both generations.
    pub fn bytes(&self) -> usize {
        self.hot_keys.len() * (size_of::<u64>() + size_of::<u32>()) + self.young.bytes() + self.old.bytes()
    }

    /// Entries held (an entry copied back from the old generation counts twice until turnover).
    pub fn entries(&self) -> usize {
        self.young.table.len() + self.old.table.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stays_within_its_budget_and_keeps_what_is_in_use() {
        let budget = 512 << 10;
        let mut c = PieceCache::new(budget);
        let mut out = vec![];
        for i in 0..100_000u32 {
            c.insert(format!("piece{i}").as_bytes(), 0, &[i, i + 1]);
            // "hot" is used all along, so it survives every turnover.
            if !c.extend(b"hot", &mut out) {
                c.insert(b"hot", 0, &[7]);
            }
            assert!(c.bytes() <= budget, "{} > {budget} after {i}", c.bytes());
        }
        assert!(c.turnovers > 10);
        assert_eq!(c.misses, 1, "only the first lookup of 'hot' misses");
        out.clear();
        assert!(c.extend(b"piece99999", &mut out));
        assert_eq!(out, [99_999, 100_000]);
        assert!(!c.extend(b"piece0", &mut out));
    }

    #[test]
    fn hot_keys_are_the_bytes_and_the_length() {
        for piece in [&b"a"[..], b"ab", b"abc", b"abcd", b"abcde", b"abcdef", b"abcdefg", b"\xff\x00\x80"] {
            let mut buf = [0u8; 8];
            buf[..piece.len()].copy_from_slice(piece);
            buf[7] = piece.len() as u8;
            assert_eq!(hot_key(piece), Some(u64::from_le_bytes(buf)), "{piece:?}");
        }
    }

    #[test]
    fn hot_keys_tell_lengths_apart() {
        assert_ne!(hot_key(b"a"), hot_key(b"a\0"));
        assert_eq!(hot_key(b""), None);
        assert_eq!(hot_key(b"12345678"), None);
        let mut c = PieceCache::new(1 << 20);
        let k = hot_key(b" the").unwrap();
        assert_eq!(c.hot(k), None);
        c.put_hot(k, 279);
        assert_eq!(c.hot(k), Some(279));
        assert_eq!(c.hot(hot_key(b" thE").unwrap()), None);
    }
}
