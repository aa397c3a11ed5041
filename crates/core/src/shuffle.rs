//! Deterministic global shuffle without a sort: `shuffle_key(index, n, seed)` is the position of
//! `index` in a seeded permutation of `[0, n)`.
//!
//! A balanced Feistel network permutes `[0, 4^k)` for the smallest `4^k >= n`; values that land
//! outside `[0, n)` are fed through again (cycle walking), which keeps it a bijection on `[0, n)`.
//! The domain is below `4n`, so a key takes fewer than 4 rounds of walking on average. The key
//! depends only on `(index, n, seed)`: the same order on any cluster size or partitioning.


const ROUNDS: u64 = 6;

/// splitmix64's finalizer: a cheap, well-mixed 64-bit hash.
pub(crate) fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// One pass of the Feistel network over `2 * half_bits` bits.
fn feistel(x: u64, half_bits: u32, seed: u64) -> u64 {
    let mask = (1u64 << half_bits) - 1;
    let (mut left, mut right) = (x >> half_bits, x & mask);
    for round in 0..ROUNDS {
        let f = mix(right ^ mix(seed ^ round.wrapping_mul(0x9e37_79b9_7f4a_7c15))) & mask;
        (left, right) = (right, left ^ f);
    }
    (left << half_bits) | right
}

/// The shuffled position of `index` among `n` rows, or `None` when `index >= n`.
pub fn shuffle_key(index: u64, n: u64, seed: u64) -> Option<u64> {
    if index >= n {
        return None;
    }
    // Smallest even bit width whose domain holds n (at least 2 bits, so each half has one).
    let bits = (64 - (n - 1).leading_zeros()).max(2);
    let half_bits = bits.div_ceil(2);
    let mut x = index;
    loop {
        x = feistel(x, half_bits, seed);
        if x < n {
            return Some(x);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::shuffle_key;

    fn permutation(n: u64, seed: u64) -> Vec<u64> {
        (0..n).map(|i| shuffle_key(i, n, seed).unwrap()).collect()
    }

    #[test]
    fn is_a_bijection_for_many_sizes_and_seeds() {
        let sizes = [1u64, 2, 3, 4, 5, 7, 8, 15, 16, 17, 31, 64, 97, 100, 127, 128, 255, 1000, 1023, 1024, 4099, 65_536, 100_003];
        for &n in &sizes {
            for seed in [0u64, 1, 42, u64::MAX] {
                let mut seen = vec![false; n as usize];
                for k in permutation(n, seed) {
                    assert!(!seen[k as usize], "n={n} seed={seed}: {k} twice");
                    seen[k as usize] = true;
                }
            }
        }
        assert_eq!(shuffle_key(5, 5, 0), None);
    }

    #[test]
    fn order_looks_random() {
        let n = 100_000u64;
        let p = permutation(n, 7);
        let nf = n as f64;
        // Ascents of a random permutation: mean (n-1)/2, variance (n+1)/12.
        let ascents = p.windows(2).filter(|w| w[1] > w[0]).count() as f64;
        assert!((ascents - (nf - 1.0) / 2.0).abs() < 5.0 * ((nf + 1.0) / 12.0).sqrt(), "ascents {ascents}");
        // Index and key uncorrelated: Pearson r of a random permutation has sd 1/sqrt(n-1).
        let mean = (nf - 1.0) / 2.0;
        let cov: f64 = p.iter().enumerate().map(|(i, &k)| (i as f64 - mean) * (k as f64 - mean)).sum();
        let var: f64 = (0..n).map(|i| (i as f64 - mean).powi(2)).sum();
        assert!((cov / var).abs() < 5.0 / (nf - 1.0).sqrt(), "r = {}", cov / var);
        // Fixed points: Poisson(1).
        assert!(p.iter().enumerate().filter(|(i, &k)| *i as u64 == k).count() < 8);
        // Each tenth of the indices spreads over the whole range.
        let first_tenth_mean = p[..10_000].iter().sum::<u64>() as f64 / 10_000.0;
        assert!((first_tenth_mean - mean).abs() < 5.0 * (nf / 12f64.sqrt()) / 100.0);
    }

    #[test]
    fn seeds_give_different_orders() {
        assert_ne!(permutation(1000, 1), permutation(1000, 2));
        assert_eq!(permutation(1000, 3), permutation(1000, 3));
    }
}
