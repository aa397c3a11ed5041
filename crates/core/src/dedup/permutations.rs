//! The MinHash permutations `(a*x + b) mod (2^61 - 1)`, with `a` and `b` drawn exactly as
//! datatrove draws them: `np.random.RandomState(seed).randint(1, p, dtype=uint64)` for `a`, then
//! `randint(0, p)` for `b`. numpy's legacy `randint` takes 64-bit MT19937 draws (high word first),
//! masks them to the range's bit width and rejects values above the range.

use rand_mt::Mt;

/// The Mersenne prime 2^61 - 1.
pub const PRIME: u64 = (1 << 61) - 1;

/// MinHash permutations `a*h + b mod PRIME`, drawn as datatrove draws them with numpy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Permutations {
    /// Multipliers, in [1, PRIME).
    pub a: Vec<u64>,
    /// Offsets, in [0, PRIME).
    pub b: Vec<u64>,
}

/// numpy's `randint(low, high)` for uint64 with `high - low > 2^32`, legacy (masked) sampling.
fn randint(mt: &mut Mt, low: u64, high: u64) -> u64 {
    let range = high - low - 1;
    let mask = u64::MAX >> range.leading_zeros();
    loop {
        let v = mt.next_u64() & mask;
        if v <= range {
            return low + v;
        }
    }
}

impl Permutations {
    /// `count` permutations from numpy's legacy `RandomState(seed)`: all `a`, then all `b`.
    pub fn numpy(seed: u32, count: usize) -> Self {
        let mut mt = Mt::new(seed);
        let a = (0..count).map(|_| randint(&mut mt, 1, PRIME)).collect();
        let b = (0..count).map(|_| randint(&mut mt, 0, PRIME)).collect();
        Self { a, b }
    }

    /// How many permutations.
    pub fn len(&self) -> usize {
        self.a.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.a.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_as_numpy_random_state() {
        // np.random.RandomState(1): randint(1, p, size=112, dtype=uint64), then randint(0, p, ...).
        let p = Permutations::numpy(1, 112);
        assert_eq!(&p.a[..3], &[775169054918279404, 1758426461858698313, 2109959069025162]);
        assert_eq!(&p.b[..3], &[1062448801025099917, 1324811268927594100, 1217488311597731462]);
        assert_eq!((p.a[111], p.b[111]), (223865076026037746, 1097409548522419201));
        assert!(p.a.iter().all(|&a| (1..PRIME).contains(&a)) && p.b.iter().all(|&b| b < PRIME));
    }
}
