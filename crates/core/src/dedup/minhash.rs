//! MinHash signatures as datatrove's `MinhashDedupSignature` computes them: `simplify_text`, then
//! spaCy English words, then word n-grams joined by one space, hashed with xxhash64 (seed 0), then
//! `min((x * a + b) mod (2^61 - 1))` over the shingles for each permutation. The multiply and the
//! add wrap at 64 bits, as numpy's uint64 arithmetic does, so the signatures are identical.

use std::ops::Range;
use std::sync::LazyLock;

use xxhash_rust::xxh3::xxh3_64_with_seed;

use super::permutations::{Permutations, PRIME};
use super::xxh64::{xxh64_span, PAD};
use crate::error::TokqError;
use crate::text::clean::simplify_text;
use crate::text::words::word_ranges;

/// datatrove's `MinhashConfig` defaults: 5-grams, 14 buckets of 8 hashes, seed 1.
pub const NUM_PERM: usize = 112;
/// Words per shingle.
pub const NGRAM: usize = 5;
/// The seed of numpy's permutations.
pub const SEED: u32 = 1;
/// LSH bands (buckets).
pub const BANDS: usize = 14;
/// Hashes per band.
pub const ROWS: usize = 8;

/// datatrove's MinHash: word n-gram shingles hashed as it hashes them, under its numpy-seeded
/// permutations (a*h + b mod 2^61-1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MinHasher {
    ngram: usize,
    perms: Permutations,
}

impl Default for MinHasher {
    fn default() -> Self {
        Self { ngram: NGRAM, perms: Permutations::numpy(SEED, NUM_PERM) }
    }
}

fn bad(cause: String) -> TokqError {
    TokqError::Argument { function: "minhash", cause }
}

impl MinHasher {
    /// A hasher with `num_perm` permutations (1-4096), `ngram`-word shingles (1-64) and numpy's `seed`.
    pub fn new(num_perm: i64, ngram: i64, seed: i64) -> Result<Self, TokqError> {
        if !(1..=4096).contains(&num_perm) {
            return Err(bad(format!("num_perm must be between 1 and 4096, got {num_perm}")));
        }
        if !(1..=64).contains(&ngram) {
            return Err(bad(format!("ngram must be between 1 and 64, got {ngram}")));
        }
        let seed = u32::try_from(seed).map_err(|_| bad(format!("seed must be between 0 and 2^32-1 (numpy's range), got {seed}")))?;
        Ok(Self { ngram: ngram as usize, perms: Permutations::numpy(seed, num_perm as usize) })
    }

    /// The signature's length.
    pub fn num_perm(&self) -> usize {
        self.perms.len()
    }

    /// The hashed word n-grams of a text, in order, repeats included.
    pub fn shingles(&self, text: &str) -> Vec<u64> {
        shingles(text, self.ngram)
    }

    /// The signature, or None when the text has fewer words than the n-gram size (datatrove
    /// writes no signature for such a document, so it is never a duplicate).
    pub fn signature(&self, text: &str) -> Option<Vec<u64>> {
        let shingles = self.shingles(text);
        (!shingles.is_empty()).then(|| self.signature_of(&shingles))
    }

    /// The signature of already hashed shingles: each permutation's minimum.
    pub fn signature_of(&self, shingles: &[u64]) -> Vec<u64> {
        let mut mins = vec![u64::MAX; self.perms.len()];
        fold(&mut mins, &self.perms.a, &self.perms.b, shingles);
        mins
    }
}

/// xxhash64 of each run of `n` words of the simplified text, joined by one space.
pub fn shingles(text: &str, n: usize) -> Vec<u64> {
    if n == 0 {
        return Vec::new();
    }
    let simple = simplify_text(text);
    let words = word_ranges(&simple);
    if words.len() < n {
        return Vec::new();
    }
    let mut bytes = simple.into_bytes();
    bytes.resize(bytes.len() + PAD, 0);
    // breaks[k]: word boundaries before k that are not exactly one space. A run of words with no
    // break inside is already its joined n-gram in the text, and is hashed in place.
    let mut breaks = Vec::with_capacity(words.len());
    let mut count = 0u32;
    breaks.push(0);
    for pair in words.windows(2) {
        let one_space = pair[1].start == pair[0].end + 1 && bytes[pair[0].end] == b' ';
        count += u32::from(!one_space);
        breaks.push(count);
    }
    let mut buf = Vec::new();
    (0..=words.len() - n)
        .map(|i| {
            if breaks[i + n - 1] == breaks[i] {
                return xxh64_span(&bytes, words[i].start..words[i + n - 1].end);
            }
            buf.clear();
            for (k, w) in words[i..i + n].iter().enumerate() {
                if k > 0 {
                    buf.push(b' ');
                }
                buf.extend_from_slice(&bytes[w.clone()]);
            }
            let len = buf.len();
            buf.resize(len + PAD, 0);
            xxh64_span(&buf, 0..len)
        })
        .collect()
}

/// One band hash per `rows` signature values: xxh3 of their little-endian bytes, seeded with the
/// band's index, so that one `GROUP BY` over all bands groups equal bands at the same position
/// only. Two documents share a band hash when that band's values are equal (up to a 2^-64
/// collision), which is datatrove's candidate rule.
pub fn bands(signature: &[u64], bands: usize, rows: usize) -> Result<Vec<u64>, TokqError> {
    if bands == 0 || rows == 0 || bands * rows != signature.len() {
        return Err(TokqError::Argument {
            function: "minhash_bands",
            cause: format!("bands x rows must equal the signature's length {}, got {bands} x {rows}", signature.len()),
        });
    }
    let mut bytes = Vec::with_capacity(rows * 8);
    Ok(band_ranges(bands, rows)
        .enumerate()
        .map(|(band, r)| {
            bytes.clear();
            signature[r].iter().for_each(|v| bytes.extend_from_slice(&v.to_le_bytes()));
            xxh3_64_with_seed(&bytes, band as u64)
        })
        .collect())
}

fn band_ranges(bands: usize, rows: usize) -> impl Iterator<Item = Range<usize>> {
    (0..bands).map(move |b| b * rows..(b + 1) * rows)
}

/// `x mod (2^61 - 1)` for any u64: 2^61 is 1 modulo the prime, so the high three bits add to
/// the low 61, and one conditional subtraction finishes.
#[inline(always)]
fn mod_prime(x: u64) -> u64 {
    let r = (x & PRIME) + (x >> 61);
    r.min(r.wrapping_sub(PRIME))
}

/// Lanes of eight keep a block of minimums in one vector register while every shingle passes.
#[inline(always)]
fn fold_portable(mins: &mut [u64], a: &[u64], b: &[u64], shingles: &[u64]) {
    const LANES: usize = 8;
    let full = mins.len() / LANES * LANES;
    for ((m, a), b) in mins[..full].chunks_exact_mut(LANES).zip(a.chunks_exact(LANES)).zip(b.chunks_exact(LANES)) {
        let (mut av, mut bv) = ([0u64; LANES], [0u64; LANES]);
        av.copy_from_slice(a);
        bv.copy_from_slice(b);
        let mut acc = [u64::MAX; LANES];
        for &x in shingles {
            for i in 0..LANES {
                acc[i] = acc[i].min(mod_prime(x.wrapping_mul(av[i]).wrapping_add(bv[i])));
            }
        }
        m.copy_from_slice(&acc);
    }
    for ((m, &a), &b) in mins[full..].iter_mut().zip(&a[full..]).zip(&b[full..]) {
        *m = shingles.iter().map(|&x| mod_prime(x.wrapping_mul(a).wrapping_add(b))).min().unwrap_or(u64::MAX);
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512dq")]
fn fold_avx512dq(mins: &mut [u64], a: &[u64], b: &[u64], shingles: &[u64]) {
    fold_portable(mins, a, b, shingles)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn fold_avx512(mins: &mut [u64], a: &[u64], b: &[u64], shingles: &[u64]) {
    fold_portable(mins, a, b, shingles)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn fold_avx2(mins: &mut [u64], a: &[u64], b: &[u64], shingles: &[u64]) {
    fold_portable(mins, a, b, shingles)
}

type Fold = fn(&mut [u64], &[u64], &[u64], &[u64]);

/// The same loop, compiled for the widest vectors the CPU has, chosen once. With AVX-512DQ, LLVM
/// multiplies 64-bit lanes with `vpmullq`: one instruction on AMD's cores (Zen 4: 19.9 ns per
/// shingle for 112 permutations against 31.4 without DQ), three on Intel's, where the earlier
/// measurement found it three times slower than the three 32-bit multiplies LLVM builds without
/// DQ. So DQ is used on AMD only. The arithmetic is exact either way: the choice changes speed,
/// never a signature.
static FOLD: LazyLock<Fold> = LazyLock::new(|| {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY (each): the function is called only on CPUs with the features it is compiled for.
        if std::arch::is_x86_feature_detected!("avx512f") {
            if std::arch::is_x86_feature_detected!("avx512dq") && is_amd() {
                return |m, a, b, s| unsafe { fold_avx512dq(m, a, b, s) };
            }
            return |m, a, b, s| unsafe { fold_avx512(m, a, b, s) };
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            return |m, a, b, s| unsafe { fold_avx2(m, a, b, s) };
        }
    }
    fold_portable
});

#[cfg(target_arch = "x86_64")]
fn is_amd() -> bool {
    let id = std::arch::x86_64::__cpuid(0);
    [id.ebx, id.edx, id.ecx].iter().flat_map(|r| r.to_le_bytes()).eq(*b"AuthenticAMD")
}

fn fold(mins: &mut [u64], a: &[u64], b: &[u64], shingles: &[u64]) {
    FOLD(mins, a, b, shingles)
}

/// Exact Jaccard similarity of two texts' shingle sets (the same shingles as the signature);
/// None when either text has no shingle.
pub fn jaccard(a: &str, b: &str, n: usize) -> Option<f64> {
    let set = |t: &str| {
        let mut s = shingles(t, n);
        s.sort_unstable();
        s.dedup();
        s
    };
    let (a, b) = (set(a), set(b));
    if a.is_empty() || b.is_empty() {
        return None;
    }
    let (mut i, mut j, mut both) = (0, 0, 0usize);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                both += 1;
                i += 1;
                j += 1;
            }
        }
    }
    Some(both as f64 / (a.len() + b.len() - both) as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reduction_is_exact() {
        for x in [0, 1, PRIME - 1, PRIME, PRIME + 1, 2 * PRIME, u64::MAX, u64::MAX - 1, 1 << 63, (1 << 61) + 6] {
            assert_eq!(mod_prime(x), x % PRIME, "{x}");
        }
    }

    #[test]
    fn vector_and_scalar_folds_agree() {
        let h = MinHasher::new(13, 5, 7).unwrap();
        let shingles: Vec<u64> = (0..300u64).map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15)).collect();
        let expected: Vec<u64> = (0..13)
            .map(|i| shingles.iter().map(|&x| (x.wrapping_mul(h.perms.a[i]).wrapping_add(h.perms.b[i])) % PRIME).min().unwrap())
            .collect();
        assert_eq!(h.signature_of(&shingles), expected);
        let mut portable = vec![u64::MAX; 13];
        fold_portable(&mut portable, &h.perms.a, &h.perms.b, &shingles);
        assert_eq!(portable, expected);
        // Every build of the loop this CPU can run, whichever `FOLD` chose.
        #[cfg(target_arch = "x86_64")]
        for (features, runs, fold) in [
            ("avx2", std::arch::is_x86_feature_detected!("avx2"), fold_avx2 as unsafe fn(&mut [u64], &[u64], &[u64], &[u64])),
            ("avx512f", std::arch::is_x86_feature_detected!("avx512f"), fold_avx512),
            ("avx512dq", std::arch::is_x86_feature_detected!("avx512f") && std::arch::is_x86_feature_detected!("avx512dq"), fold_avx512dq),
        ] {
            if runs {
                let mut mins = vec![u64::MAX; 13];
                // SAFETY: `runs`: the CPU has the features the variant is compiled for.
                unsafe { fold(&mut mins, &h.perms.a, &h.perms.b, &shingles) };
                assert_eq!(mins, expected, "{features}");
            }
        }
    }

    #[test]
    fn matches_datatrove() {
        // datatrove 0.10.1 MinhashDedupSignature() on this text: its shingles and first bucket.
        let text = "The quick brown fox jumps over the lazy dog, 42 times; Café déjà vu!";
        let h = MinHasher::default();
        assert_eq!(h.shingles(text), DATATROVE_SHINGLES);
        assert_eq!(&h.signature(text).unwrap()[..8], DATATROVE_BUCKET0);
        assert_eq!(h.signature("four words only here"), None);
    }

    const DATATROVE_SHINGLES: &[u64] = &[
        7797000677988824208, 4793414983259776074, 7369512836458661087, 13961012810162701268, 15736776954345750141,
        17976325593266991878, 1012405342106532806, 5004562813507544795, 4597150533670337023, 3199595147361636287,
    ];
    const DATATROVE_BUCKET0: &[u64] = &[
        85330943174081874, 184339147761722157, 270913428994970008, 34440879854629237, 351192510441881045,
        117899488208280896, 6902592715498867, 204404170303891102,
    ];

    #[test]
    fn bands_hash_equal_rows_equally() {
        let sig: Vec<u64> = (0..16).collect();
        let mut other = sig.clone();
        other[9] = 99;
        let (x, y) = (bands(&sig, 2, 8).unwrap(), bands(&other, 2, 8).unwrap());
        assert_eq!(x[0], y[0]);
        assert_ne!(x[1], y[1]);
        // The same values in another band position give another hash.
        let twice: Vec<u64> = (0..8).chain(0..8).collect();
        let t = bands(&twice, 2, 8).unwrap();
        assert_ne!(t[0], t[1]);
        assert!(bands(&sig, 3, 5).is_err() && bands(&sig, 0, 8).is_err());
    }

    #[test]
    fn jaccard_of_shingle_sets() {
        let a = "one two three four five six seven";
        assert_eq!(jaccard(a, a, 5), Some(1.0));
        // 3 shingles each, 2 shared.
        assert_eq!(jaccard(a, "one two three four five six eight", 5), Some(2.0 / 4.0));
        assert_eq!(jaccard(a, "too short", 5), None);
    }
}
