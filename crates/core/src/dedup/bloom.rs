//! A counting Bloom filter of 64-bit hashes (span, paragraph or n-gram hashes): how many times
//! each was inserted, up to a cap, in bounded memory. Dolma's and DCLM's `bff` decide repeats from
//! a Bloom filter alone; here the filter only narrows the search: it answers "at least `cap`
//! times" for every hash inserted that often (it never undercounts) and for a small share of the
//! others (its false-positive rate), and SQL then counts those candidates exactly. So the filter
//! bounds memory and never changes a decision.
//!
//! Three choices make that hold on any number of partitions and executors:
//! - Counters **saturate** at `cap`: a counter holds min(increments, cap) whatever the order of the
//!   inserts, and [`CountingBloom::merge`] adds counters saturating at `cap`, so the merge of
//!   per-process filters is bit for bit the filter one pass over everything builds. The partitions
//!   of one process insert into one [`SharedBloom`] of atomic counters, in any interleaving.
//! - [`CountingBloom::count`] is the smallest of a hash's counters, each raised by every insert of
//!   that hash, so it is at least min(inserts, cap).
//! - The filter is **blocked**: a hash's counters lie in one 64-byte block, one cache line, so an
//!   insert or a probe costs one cache miss instead of one per counter (Putze et al. 2007). The
//!   price is a slightly higher false-positive rate at the same size.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use crate::error::TokqError;
use crate::shuffle::mix;

/// The serialized form's first bytes, with its version.
const MAGIC: &[u8; 8] = b"TQBLOOM1";
/// Magic, counter width, hashes, cap (a byte each), padding to 8, then the block count (u64 LE).
const HEADER: usize = 24;
/// A block is one cache line of 64-bit words.
const BLOCK_WORDS: usize = 8;
const BLOCK_BITS: u32 = 512;
/// How many hashes ahead the batch calls ask for a block: enough to cover a memory round trip at
/// a few nanoseconds per insert.
const AHEAD: usize = 16;
/// At most this many counters per hash: their positions come from one 64-bit hash.
const MAX_HASHES: u32 = 8;
/// The largest filter built: 1 GiB. A larger one would not fit one Parquet value (2 GiB) twice
/// over while it is written, and a corpus that needs it is better split first.
pub const MAX_BYTES: u64 = 1 << 30;

/// The layout of a filter: every filter of the same items, rate and cap has the same one, and
/// only filters of one layout merge.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Shape {
    /// Bits per counter: 2, 4 or 8, the fewest that hold `cap`.
    width: u32,
    /// Counters per hash.
    hashes: u32,
    /// Where counters stop counting.
    cap: u32,
    blocks: u64,
}

/// The counter width that holds `cap`.
fn width_for(cap: u32) -> u32 {
    match cap {
        0..=3 => 2,
        4..=15 => 4,
        _ => 8,
    }
}

impl Shape {
    fn new(function: &'static str, items: u64, fpr: f64, cap: i64) -> Result<Self, TokqError> {
        let error = |cause: String| TokqError::Argument { function, cause };
        if !(fpr > 0.0 && fpr < 1.0) {
            return Err(error(format!("the false-positive rate must be above 0 and below 1, got {fpr}")));
        }
        if !(1..=255).contains(&cap) {
            return Err(error(format!("the count to reach must be 1 to 255, got {cap}")));
        }
        let cap = cap as u32;
        let width = width_for(cap);
        let per_block = u64::from(BLOCK_BITS / width);
        // The optimal Bloom filter: -ln(p) / ln(2)^2 counters per item, ln(2) of them per hash.
        let per_item = -fpr.ln() / std::f64::consts::LN_2.powi(2);
        let counters = (items.max(1) as f64 * per_item).ceil();
        let blocks = (counters / per_block as f64).ceil().max(1.0) as u64;
        let bytes = blocks.saturating_mul(BLOCK_WORDS as u64 * 8);
        if bytes > MAX_BYTES {
            return Err(error(format!(
                "{items} items at a false-positive rate of {fpr} need a filter of {:.1} GiB, above the {} GiB tokq builds: \
                 raise the rate (the decisions stay exact; more candidates are counted) or dedup the input in parts",
                bytes as f64 / (1u64 << 30) as f64,
                MAX_BYTES >> 30
            )));
        }
        let hashes = ((per_item * std::f64::consts::LN_2).round() as u32).clamp(1, MAX_HASHES);
        Ok(Self { width, hashes, cap, blocks })
    }

    fn words(&self) -> usize {
        self.blocks as usize * BLOCK_WORDS
    }

    fn mask(&self) -> u64 {
        (1 << self.width) - 1
    }

    /// The block of a hash's counters (mixed first, so that hashes that are not well spread, such
    /// as row numbers, are), from the high bits: a multiply, not a modulo.
    fn block(&self, hash: u64) -> usize {
        ((u128::from(mix(hash)) * u128::from(self.blocks)) >> 64) as usize
    }

    /// The word index and bit shift of each of `hash`'s counters, in the first `hashes` slots.
    fn counters(&self, hash: u64) -> [(usize, u32); MAX_HASHES as usize] {
        // The positions inside the block from a second mix.
        let block = self.block(hash);
        let positions = mix(mix(hash) ^ 0x9e37_79b9_7f4a_7c15);
        let bits = (BLOCK_BITS / self.width).trailing_zeros();
        let lanes = 64 / self.width;
        let mut slots = [(0, 0); MAX_HASHES as usize];
        for (j, slot) in slots.iter_mut().enumerate().take(self.hashes as usize) {
            let pos = ((positions >> (j as u32 * bits)) & ((1 << bits) - 1)) as u32;
            *slot = (block * BLOCK_WORDS + (pos / lanes) as usize, (pos % lanes) * self.width);
        }
        slots
    }

    /// `f` for each hash, with the block of the hash a few places ahead asked for first: a
    /// filter larger than the caches costs a memory round trip per hash, and asking ahead overlaps
    /// them (measured: about 3x on 48 MB).
    fn each_ahead(&self, words: *const u64, hashes: &[u64], mut f: impl FnMut(u64)) {
        for (i, &h) in hashes.iter().enumerate() {
            if let Some(&ahead) = hashes.get(i + AHEAD) {
                crate::hint::prefetch(words.wrapping_add(self.block(ahead) * BLOCK_WORDS));
            }
            f(h);
        }
    }

    fn header(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(HEADER + self.words() * 8);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&[self.width as u8, self.hashes as u8, self.cap as u8, 0, 0, 0, 0, 0]);
        out.extend_from_slice(&self.blocks.to_le_bytes());
        out
    }
}

/// A filter being filled by the partitions of one process at once: the same layout and the same
/// counts as [`CountingBloom`], in atomic words, so any interleaving of inserts gives the same bits.
#[derive(Debug)]
pub struct SharedBloom {
    shape: Shape,
    words: Vec<AtomicU64>,
}

impl SharedBloom {
    /// A filter for `items` inserts whose counts at `cap` are wrong for about a share `fpr` of
    /// the hashes inserted fewer times. `function` names the caller in errors.
    pub fn new(function: &'static str, items: u64, fpr: f64, cap: i64) -> Result<Self, TokqError> {
        let shape = Shape::new(function, items, fpr, cap)?;
        Ok(Self { shape, words: (0..shape.words()).map(|_| AtomicU64::new(0)).collect() })
    }

    /// The filter's size in bytes (its counters).
    pub fn bytes(&self) -> usize {
        self.words.len() * 8
    }

    /// Counts one more occurrence of each hash.
    pub fn insert_all(&self, hashes: &[u64]) {
        let (mask, cap) = (self.shape.mask(), u64::from(self.shape.cap));
        self.shape.each_ahead(self.words.as_ptr().cast(), hashes, |h| {
            for &(word, shift) in &self.shape.counters(h)[..self.shape.hashes as usize] {
                // A counter below the cap goes up by one; the others stay: saturating, in any order.
                let _ = self.words[word].fetch_update(Relaxed, Relaxed, |w| ((w >> shift) & mask < cap).then(|| w + (1 << shift)));
            }
        });
    }

    /// The counts so far. Inserts racing with it may or may not be in them; those that
    /// finished before it are.
    pub fn counts(&self) -> CountingBloom {
        CountingBloom { shape: self.shape, words: self.words.iter().map(|w| w.load(Relaxed)).collect() }
    }
}

/// A filter's counts, taken from a [`SharedBloom`] or read back ([`from_bytes`](Self::from_bytes)),
/// to merge, to write and to look hashes up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CountingBloom {
    shape: Shape,
    words: Vec<u64>,
}

impl CountingBloom {
    /// The filter's size in bytes (its counters).
    pub fn bytes(&self) -> usize {
        self.words.len() * 8
    }

    /// How many times `hash` was inserted, at least, up to the cap; more for a few hashes.
    pub fn count(&self, hash: u64) -> u32 {
        let mask = self.shape.mask();
        self.shape.counters(hash)[..self.shape.hashes as usize]
            .iter()
            .map(|&(word, shift)| ((self.words[word] >> shift) & mask) as u32)
            .min()
            .unwrap_or(0)
    }

    /// The [`count`](Self::count) of every hash, in order, with the blocks asked for ahead.
    pub fn count_all(&self, hashes: &[u64]) -> Vec<u32> {
        let mut counts = Vec::with_capacity(hashes.len());
        self.shape.each_ahead(self.words.as_ptr(), hashes, |h| counts.push(self.count(h)));
        counts
    }

    /// Adds `other`'s counts to this filter's, saturating at the cap: the filter of both inputs.
    pub fn merge(&mut self, other: &Self) -> Result<(), String> {
        let (a, b) = (self.shape, other.shape);
        if a != b {
            return Err(format!(
                "cannot merge a filter of {} blocks, {} hashes and cap {} into one of {} blocks, {} hashes and cap {}: \
                 every partition must build it with the same items, rate and cap",
                b.blocks, b.hashes, b.cap, a.blocks, a.hashes, a.cap
            ));
        }
        let (mask, cap, width) = (a.mask(), u64::from(a.cap), a.width);
        for (x, &y) in self.words.iter_mut().zip(&other.words) {
            if y == 0 {
                continue;
            }
            if *x == 0 {
                *x = y;
                continue;
            }
            let mut sum = 0;
            for shift in (0..64).step_by(width as usize) {
                sum |= (((*x >> shift) & mask) + ((y >> shift) & mask)).min(cap) << shift;
            }
            *x = sum;
        }
        Ok(())
    }

    /// The filter as bytes: a header, then the counters (little-endian words).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = self.shape.header();
        for w in &self.words {
            out.extend_from_slice(&w.to_le_bytes());
        }
        out
    }

    /// A filter [`to_bytes`](Self::to_bytes) wrote; anything else is an error saying what is wrong.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, String> {
        let header = bytes.get(..HEADER).ok_or_else(|| format!("{} bytes are too few for a tokq Bloom filter", bytes.len()))?;
        if &header[..8] != MAGIC {
            return Err("not a tokq Bloom filter (it does not start with TQBLOOM1)".into());
        }
        let (width, hashes, cap) = (u32::from(header[8]), u32::from(header[9]), u32::from(header[10]));
        let blocks = u64::from_le_bytes(header[16..24].try_into().map_err(|_| "a damaged header")?);
        if cap == 0 || width != width_for(cap) || !(1..=MAX_HASHES).contains(&hashes) || blocks == 0 {
            return Err(format!("a damaged tokq Bloom filter: width {width}, {hashes} hashes, cap {cap}, {blocks} blocks"));
        }
        let body = &bytes[HEADER..];
        if blocks.checked_mul(BLOCK_WORDS as u64 * 8) != Some(body.len() as u64) {
            return Err(format!("a truncated tokq Bloom filter: {blocks} blocks need {} bytes, it has {}", blocks.saturating_mul(64), body.len()));
        }
        let words = body.chunks_exact(8).map(|c| u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]])).collect();
        Ok(Self { shape: Shape { width, hashes, cap, blocks }, words })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shared(items: u64, fpr: f64, cap: i64) -> SharedBloom {
        SharedBloom::new("t", items, fpr, cap).unwrap()
    }

    /// A filter of `hashes`, as a partition fills it and the file gives it back.
    fn fill(items: u64, fpr: f64, cap: i64, hashes: &[u64]) -> CountingBloom {
        let f = shared(items, fpr, cap);
        f.insert_all(hashes);
        CountingBloom::from_bytes(&f.counts().to_bytes()).unwrap()
    }

    /// Distinct, well-spread hashes, as xxhash64 gives.
    fn hashes(n: u64, seed: u64) -> Vec<u64> {
        (0..n).map(|i| mix(i ^ seed.rotate_left(32))).collect()
    }

    #[test]
    fn counts_reach_the_cap_for_every_hash_inserted_that_often() {
        let hs = hashes(10_000, 1);
        let inserted: Vec<u64> = hs.iter().enumerate().flat_map(|(i, &h)| std::iter::repeat_n(h, i % 4)).collect();
        for cap in [1, 2, 3, 5, 200] {
            let f = fill(30_000, 0.01, cap, &inserted);
            for (i, &h) in hs.iter().enumerate() {
                assert!(f.count(h) >= (i as u32 % 4).min(cap as u32), "cap {cap}, hash {i}");
                assert!(f.count(h) <= cap as u32);
            }
        }
    }

    #[test]
    fn partitions_merged_or_sharing_one_filter_equal_one_pass_in_any_order() {
        let hs: Vec<u64> = hashes(5_000, 2).into_iter().flat_map(|h| [h, h, h ^ 1]).collect();
        let whole = fill(15_000, 0.02, 2, &hs);
        // Three processes' filters, merged in another order.
        let mut parts: [Vec<u64>; 3] = Default::default();
        for (i, &h) in hs.iter().rev().enumerate() {
            parts[(h as usize ^ i) % 3].push(h);
        }
        let [a, b, c] = parts.map(|p| fill(15_000, 0.02, 2, &p));
        let mut merged = c.clone();
        merged.merge(&a).unwrap();
        merged.merge(&b).unwrap();
        assert_eq!(merged, whole);
        // Three threads inserting into one filter at once.
        let one = shared(15_000, 0.02, 2);
        std::thread::scope(|s| {
            for chunk in hs.chunks(hs.len() / 3 + 1) {
                s.spawn(|| chunk.chunks(7).for_each(|c| one.insert_all(c)));
            }
        });
        assert_eq!(one.counts(), whole);
    }

    #[test]
    fn hashes_inserted_once_pass_at_about_the_chosen_rate() {
        for fpr in [0.01, 0.1] {
            let hs = hashes(200_000, 3);
            let f = fill(200_000, fpr, 2, &hs);
            let counts = f.count_all(&hs);
            assert!(counts.iter().zip(&hs).all(|(&c, &h)| c == f.count(h)));
            let wrong = counts.iter().filter(|&&c| c >= 2).count() as f64 / hs.len() as f64;
            // Blocking costs a little: within twice the rate asked for.
            assert!(wrong < 2.0 * fpr, "rate {fpr}: {wrong}");
        }
    }

    #[test]
    fn sizes_follow_the_items_and_the_rate() {
        // -ln(0.01) / ln(2)^2 = 9.59 counters of 2 bits per item.
        let f = shared(1_000_000, 0.01, 2);
        assert_eq!(f.shape.hashes, 7);
        assert!((2_390_000..2_410_000).contains(&f.bytes()), "{}", f.bytes());
        assert_eq!(shared(1_000_000, 0.01, 9).bytes(), 2 * f.bytes());
        assert_eq!(shared(0, 0.5, 1).bytes(), 64);
    }

    #[test]
    fn bytes_round_trip_and_damage_is_named() {
        let f = fill(1_000, 0.05, 3, &hashes(500, 4));
        let bytes = f.to_bytes();
        assert_eq!(bytes.len(), HEADER + f.bytes());
        assert_eq!(CountingBloom::from_bytes(&bytes).unwrap(), f);
        assert!(CountingBloom::from_bytes(&bytes[..bytes.len() - 8]).unwrap_err().contains("truncated"));
        assert!(CountingBloom::from_bytes(&bytes[..10]).unwrap_err().contains("too few"));
        assert!(CountingBloom::from_bytes(b"PAR1 not a filter at all").unwrap_err().contains("TQBLOOM1"));
        let mut bad = bytes.clone();
        bad[8] = 4;
        assert!(CountingBloom::from_bytes(&bad).unwrap_err().contains("damaged"));
    }

    #[test]
    fn bad_parameters_say_what_to_change() {
        let e = |items, fpr, cap| SharedBloom::new("bloom_counts", items, fpr, cap).unwrap_err().to_string();
        assert!(e(10, 0.0, 2).contains("above 0 and below 1, got 0"));
        assert!(e(10, 1.0, 2).contains("below 1"));
        assert!(e(10, f64::NAN, 2).contains("got NaN"));
        assert!(e(10, 0.01, 0).contains("1 to 255, got 0"));
        assert!(e(10, 0.01, 256).contains("got 256"));
        let big = e(2_000_000_000, 0.001, 2);
        assert!(big.starts_with("bloom_counts: 2000000000 items") && big.contains("raise the rate"), "{big}");
        let mut a = fill(10, 0.1, 2, &[]);
        assert!(a.merge(&fill(10_000, 0.1, 2, &[])).unwrap_err().contains("same items, rate and cap"));
    }
}
