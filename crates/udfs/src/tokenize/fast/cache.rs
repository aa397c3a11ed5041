//! A bounded pre-token -> ids cache, one per thread.
//!
//! In front sits a direct-mapped table for pieces of up to 7 bytes that are one token (" the",
//! ",", "\n\n"), keyed by the bytes packed into a u64: no hashing of a slice, no pointer chase,
//! and small enough (16K slots, 192 KiB) to stay in the CPU's cache.
//!
//! Most pre-tokens repeat (" the", " of", "\n\n"), so BPE runs only on a miss. Each thread owns
//! its cache, so the hot path takes no contended lock. Memory is bounded with two generations of
//! half the budget each: when the young map is full, it becomes the old one (the previous old one
//! is dropped), and a hit in the old map moves the entry back to the young one. Pieces in use
//! survive every turnover; pieces seen once age out. Each generation's table is allocated at its
//! final size, so it never doubles past the budget.

use std::mem::size_of;

use rustc_hash::FxHashMap;

/// Pre-tokens longer than this are not cached: they rarely repeat, and would crowd the budget.
pub const MAX_CACHED_BYTES: usize = 64;

/// The default budget per thread.
pub const DEFAULT_BUDGET_BYTES: usize = 8 << 20;

type Map = FxHashMap<Box<[u8]>, Box<[u32]>>;

const HOT_BITS: u32 = 14;

/// `piece` packed with its length into a u64, if it has at most 7 bytes (never 0).
#[inline(always)]
pub fn hot_key(piece: &[u8]) -> Option<u64> {
    if piece.is_empty() || piece.len() > 7 {
        return None;
    }
    let mut buf = [0u8; 8];
    buf[..piece.len()].copy_from_slice(piece);
    buf[7] = piece.len() as u8;
    Some(u64::from_le_bytes(buf))
}

#[inline(always)]
fn hot_slot(key: u64) -> usize {
    (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - HOT_BITS)) as usize
}

#[derive(Default)]
struct Generation {
    map: Map,
    heap_bytes: usize,
}

/// Slots are sized for entries of 128 bytes; with hashbrown rounding up, they take at most
/// about half a generation's budget, and the keys and values the rest.
const SLOT_SHARE: usize = 128;

impl Generation {
    fn with_budget(budget: usize) -> Self {
        Self { map: Map::with_capacity_and_hasher(budget / SLOT_SHARE, Default::default()), heap_bytes: 0 }
    }

    fn full(&self, budget: usize, extra: usize) -> bool {
        self.map.len() == self.map.capacity() || self.bytes() + extra > budget
    }

    /// Table slots (with hashbrown's control byte) plus the keys' and values' heap bytes.
    fn bytes(&self) -> usize {
        self.map.capacity() * (size_of::<(Box<[u8]>, Box<[u32]>)>() + 1) + self.heap_bytes
    }

    fn put(&mut self, piece: Box<[u8]>, ids: Box<[u32]>) {
        self.heap_bytes += piece.len() + ids.len() * size_of::<u32>();
        self.map.insert(piece, ids);
    }
}

pub struct PieceCache {
    hot_keys: Box<[u64]>,
    hot_ids: Box<[u32]>,
    young: Generation,
    old: Generation,
    budget: usize,
    pub hits: u64,
    pub misses: u64,
    pub turnovers: u64,
}

impl PieceCache {
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

    #[inline(always)]
    pub fn put_hot(&mut self, key: u64, id: u32) {
        let slot = hot_slot(key);
        self.hot_keys[slot] = key;
        self.hot_ids[slot] = id;
    }

    /// Appends the cached ids of `piece` to `out`; false on a miss.
    #[inline]
    pub fn extend(&mut self, piece: &[u8], out: &mut Vec<u32>) -> bool {
        if let Some(ids) = self.young.map.get(piece) {
            self.hits += 1;
            out.extend_from_slice(ids);
            return true;
        }
        if let Some((key, ids)) = self.old.map.remove_entry(piece) {
            self.hits += 1;
            out.extend_from_slice(&ids);
            self.old.heap_bytes -= key.len() + ids.len() * size_of::<u32>();
            self.store(key, ids);
            return true;
        }
        self.misses += 1;
        false
    }

    pub fn insert(&mut self, piece: &[u8], ids: &[u32]) {
        if piece.len() <= MAX_CACHED_BYTES {
            self.store(piece.into(), ids.into());
        }
    }

    fn store(&mut self, piece: Box<[u8]>, ids: Box<[u32]>) {
        let half = self.budget / 2;
        if self.young.full(half, piece.len() + ids.len() * size_of::<u32>()) {
            self.old = std::mem::replace(&mut self.young, Generation::with_budget(half));
            self.turnovers += 1;
        }
        self.young.put(piece, ids);
    }

    /// Bytes held: the front table and both generations.
    pub fn bytes(&self) -> usize {
        self.hot_keys.len() * (size_of::<u64>() + size_of::<u32>()) + self.young.bytes() + self.old.bytes()
    }

    pub fn len(&self) -> usize {
        self.young.map.len() + self.old.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
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
            c.insert(format!("piece{i}").as_bytes(), &[i, i + 1]);
            // "hot" is used all along, so it survives every turnover.
            if !c.extend(b"hot", &mut out) {
                c.insert(b"hot", &[7]);
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
