//! A bounded pre-token -> ids cache, one per thread.
//!
//! In front sits a two-way set-associative table for pieces of up to 15 bytes that are at most
//! three tokens (" the", " population", "\n\n": 99% of the pieces of English prose), keyed by
//! the bytes packed into a u128 ([`super::bpe::short_key`]): no hashing of a slice, no pointer
//! chase, no `memcmp`, and each set one cache line. A miss there costs a vocabulary lookup in a
//! table of megabytes (two cache misses of the CPU) and often a merge, so the table takes half
//! the budget: 128K entries (4 MiB; 32K before, when Llama-3 encoded 61 MB of Wikipedia 1.2x
//! slower in one pass).
//!
//! Most pre-tokens repeat (" the", " of", "\n\n"), so BPE runs only on a miss. Each thread owns
//! its cache, so the hot path takes no contended lock. Pieces too long for the front table go
//! to two generations of a quarter of the budget each; a short piece the front table does not
//! hold (dropped, or of more than three ids) is merged again, which costs less than keeping it
//! in a generation: the generations' hashing, probes and inserts pushed the front table's lines
//! out of the CPU's caches (without them, Wikipedia 1.15x as fast, UDHR 1.2x, Python sources
//! 1.05x). When the young generation is full, it becomes the old one (the previous old one is
//! cleared and reused as the young), and a hit in the old one copies the entry back to the
//! young. Pieces in use survive every turnover; pieces seen once age out. Each generation is
//! allocated once at its final size, so it never grows past the budget.

use std::mem::size_of;

use rustc_hash::FxHashMap;

/// Pre-tokens longer than this are not cached: they rarely repeat, and would crowd the budget.
pub const MAX_CACHED_BYTES: usize = 64;

/// The budget per thread.
pub const BUDGET_BYTES: usize = 8 << 20;

/// Sets of the front table: 2^16 sets of two entries.
const FRONT_BITS: u32 = 16;

/// Most ids one front entry holds.
const FRONT_IDS: usize = 3;

/// The key of `piece` in the front table: its bytes and length (never 0), if it has 1 to 15.
#[inline(always)]
pub fn front_key(piece: &[u8]) -> Option<u128> {
    super::bpe::short_key(piece)
}

/// The key of the piece made of `bars` `▁` and then `rest`: `rest`'s [`front_key`] (0 when it
/// is empty) with `bars` in the top four bits, which a key leaves free (its length is at most 15
/// and takes the four below). A SentencePiece-style piece is a run of `▁` and a word, so a word of
/// up to 15 bytes fits whatever the run, where its spelled bytes (3 for each `▁`) would not.
#[inline(always)]
pub fn piece_key(bars: usize, rest: &[u8]) -> Option<u128> {
    match (bars, rest.len()) {
        (0, _) => front_key(rest),
        (1..=15, 0) => Some((bars as u128) << 124),
        (1..=15, _) => front_key(rest).map(|k| k | (bars as u128) << 124),
        _ => None,
    }
}

/// One front entry: 32 bytes, two to a cache line.
#[derive(Clone, Copy, Default)]
struct Entry {
    key: u128,
    ids: [u32; FRONT_IDS],
    len: u32,
}

/// A set of the front table, aligned to a cache line; way 0 holds the most recently used.
#[derive(Clone, Copy, Default)]
#[repr(C, align(64))]
struct Set([Entry; 2]);

#[inline(always)]
fn front_set(key: u128) -> usize {
    ((key as u64 ^ (key >> 64) as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - FRONT_BITS)) as usize
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

/// A thread's cache of encoded pieces: a set-associative front table for short pieces of a few
/// tokens and two generations of the others under a byte budget.
pub struct PieceCache {
    front: Box<[Set]>,
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
        let sets = 1 << FRONT_BITS;
        let budget = budget.saturating_sub(sets * size_of::<Set>());
        Self {
            front: vec![Set::default(); sets].into(),
            young: Generation::with_budget(budget / 2),
            old: Generation::default(),
            budget,
            hits: 0,
            misses: 0,
            turnovers: 0,
        }
    }

    /// Asks the CPU for the front set of `key` ahead of [`Self::front`].
    #[inline(always)]
    pub fn prefetch_front(&self, key: u128) {
        crate::hint::prefetch(&self.front[front_set(key)]);
    }

    /// Appends the ids of a piece by its [`front_key`], if the front table holds it.
    #[inline(always)]
    pub fn front(&mut self, key: u128, out: &mut Vec<u32>) -> bool {
        let set = &mut self.front[front_set(key)];
        let way = if set.0[0].key == key {
            0
        } else if set.0[1].key == key {
            // Recently used again: way 0 is the one a new entry leaves alone.
            set.0.swap(0, 1);
            0
        } else {
            return false;
        };
        self.hits += 1;
        let e = &set.0[way];
        match e.len {
            1 => out.push(e.ids[0]),
            n => out.extend_from_slice(&e.ids[..n as usize]),
        }
        true
    }

    /// Remembers the ids of a piece by its [`front_key`], if they are few enough; the set's
    /// less recently used entry goes.
    #[inline(always)]
    pub fn put_front(&mut self, key: u128, ids: &[u32]) {
        if ids.is_empty() || ids.len() > FRONT_IDS {
            return;
        }
        let mut e = Entry { key, ids: [0; FRONT_IDS], len: ids.len() as u32 };
        e.ids[..ids.len()].copy_from_slice(ids);
        let set = &mut self.front[front_set(key)];
        set.0[1] = set.0[0];
        set.0[0] = e;
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
        self.front.len() * size_of::<Set>() + self.young.bytes() + self.old.bytes()
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
        // The front table's 4 MiB and 1 MiB to each generation.
        let budget = 6 << 20;
        let mut c = PieceCache::new(budget);
        let mut out = vec![];
        for i in 0..400_000u32 {
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
        assert!(c.extend(b"piece399999", &mut out));
        assert_eq!(out, [399_999, 400_000]);
        assert!(!c.extend(b"piece0", &mut out));
    }

    #[test]
    fn the_front_keeps_two_pieces_a_set_and_drops_the_least_recent() {
        let mut c = PieceCache::new(2 << 20);
        let mut out = vec![];
        let the = front_key(b" the").unwrap();
        assert!(!c.front(the, &mut out));
        c.put_front(the, &[279]);
        c.put_front(front_key(b" population").unwrap(), &[7, 8, 9]);
        c.put_front(front_key(b"four").unwrap(), &[1, 2, 3, 4]);
        assert!(c.front(the, &mut out));
        assert!(c.front(front_key(b" population").unwrap(), &mut out));
        assert!(!c.front(front_key(b"four").unwrap(), &mut out), "over three ids: not in front");
        assert!(!c.front(front_key(b" thE").unwrap(), &mut out));
        assert_eq!(out, [279, 7, 8, 9]);
        // Three keys of one set: the one used least recently goes.
        let mut c = PieceCache::new(2 << 20);
        c.put_front(the, &[279]);
        let set = front_set(the);
        let same: Vec<u128> = (0u32..).map(|i| front_key(format!("k{i}").as_bytes()).unwrap())
            .filter(|&k| front_set(k) == set && k != the).take(2).collect();
        c.put_front(same[0], &[1]);
        assert!(c.front(the, &mut out), "used again, so it stays");
        c.put_front(same[1], &[2]);
        assert!(c.front(the, &mut out) && c.front(same[1], &mut out));
        assert!(!c.front(same[0], &mut out));
    }
}
