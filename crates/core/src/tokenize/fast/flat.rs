//! An open-addressing table of integer keys for the encoder's two big lookups: a pair of ids to
//! its merge, and a short token's bytes to its id.
//!
//! Both tables are megabytes (Llama-3: 280k merges, 128k tokens), so nearly every lookup misses
//! the CPU's cache. A `hashbrown` map pays two misses for one (its control bytes, then the
//! bucket); here the key sits beside its value in one array probed linearly from the key's
//! slot, at most three quarters full (sized from the count given, about half), so a lookup,
//! found or not, is usually one cache line.

/// An integer key: one value of the type is the empty slot's mark.
pub trait Key: Copy + Eq {
    /// The mark of an empty slot; a key equal to it is kept aside.
    const EMPTY: Self;
    /// The key's bits spread over a u64 (the slot is taken from the top bits).
    fn spread(self) -> u64;
}

const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;

impl Key for u64 {
    const EMPTY: u64 = u64::MAX;
    #[inline(always)]
    fn spread(self) -> u64 {
        self.wrapping_mul(GOLDEN)
    }
}

impl Key for u128 {
    const EMPTY: u128 = 0;
    #[inline(always)]
    fn spread(self) -> u64 {
        (self as u64).wrapping_mul(GOLDEN) ^ ((self >> 64) as u64).wrapping_mul(GOLDEN.rotate_left(29))
    }
}

/// A map from [`Key`]s to small values, at most three quarters full.
pub struct FlatMap<K, V> {
    slots: Box<[(K, V)]>,
    /// 64 minus log2 of the slot count: the slot of a key is `spread >> shift`.
    shift: u32,
    len: usize,
    /// The value of the key equal to [`Key::EMPTY`], which no slot can hold.
    empty_key: Option<V>,
}

impl<K: Key, V: Copy + Default> FlatMap<K, V> {
    /// A map with room for `n` keys before it grows.
    pub fn with_capacity(n: usize) -> Self {
        let slots = (n.max(8) * 3 / 2).next_power_of_two();
        Self { slots: vec![(K::EMPTY, V::default()); slots].into(), shift: 64 - slots.trailing_zeros(), len: 0, empty_key: None }
    }

    /// Keys held.
    pub fn len(&self) -> usize {
        self.len + self.empty_key.is_some() as usize
    }

    #[inline(always)]
    fn start(&self, key: K) -> usize {
        (key.spread() >> self.shift) as usize
    }

    /// The value of `key`.
    #[inline]
    pub fn get(&self, key: K) -> Option<V> {
        if key == K::EMPTY {
            return self.empty_key;
        }
        let mask = self.slots.len() - 1;
        let mut i = self.start(key);
        loop {
            let (k, v) = self.slots[i];
            if k == key {
                return Some(v);
            }
            if k == K::EMPTY {
                return None;
            }
            i = (i + 1) & mask;
        }
    }

    /// Sets the value of `key` (a later insert of a key wins, as in a `HashMap`).
    pub fn insert(&mut self, key: K, value: V) {
        if key == K::EMPTY {
            self.empty_key = Some(value);
            return;
        }
        if (self.len + 1) * 4 > self.slots.len() * 3 {
            self.grow();
        }
        let mask = self.slots.len() - 1;
        let mut i = self.start(key);
        loop {
            let slot = &mut self.slots[i];
            if slot.0 == key {
                slot.1 = value;
                return;
            }
            if slot.0 == K::EMPTY {
                *slot = (key, value);
                self.len += 1;
                return;
            }
            i = (i + 1) & mask;
        }
    }

    fn grow(&mut self) {
        let old = std::mem::replace(self, Self::with_capacity(self.slots.len()));
        self.empty_key = old.empty_key;
        for &(k, v) in old.slots.iter().filter(|(k, _)| *k != K::EMPTY) {
            self.insert(k, v);
        }
    }

    /// Every key and its value, in no order.
    pub fn iter(&self) -> impl Iterator<Item = (K, V)> + '_ {
        self.slots.iter().copied().filter(|(k, _)| *k != K::EMPTY).chain(self.empty_key.map(|v| (K::EMPTY, v)))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use proptest::prelude::*;

    use super::*;

    proptest! {
        #[test]
        fn answers_as_a_hash_map_does(ops in prop::collection::vec((0u64..64, any::<u32>()), 0..400), wide in any::<bool>()) {
            // Few distinct keys, so that keys repeat, collide and probe past each other; the
            // empty mark is among them.
            let key = |k: u64| if k == 0 { u64::MAX } else { k.wrapping_mul(0x1_0000_0001) };
            let mut flat = FlatMap::with_capacity(if wide { 1000 } else { 1 });
            let mut map = HashMap::new();
            for &(k, v) in &ops {
                flat.insert(key(k), v);
                map.insert(key(k), v);
            }
            prop_assert_eq!(flat.len(), map.len());
            for k in 0..70 {
                prop_assert_eq!(flat.get(key(k)), map.get(&key(k)).copied());
            }
            let mut all: Vec<_> = flat.iter().collect();
            all.sort();
            let mut want: Vec<_> = map.into_iter().collect();
            want.sort();
            prop_assert_eq!(all, want);
        }
    }

    #[test]
    fn u128_keys_and_their_empty_mark() {
        let mut m = FlatMap::<u128, u32>::with_capacity(2);
        for i in 0..100u128 {
            m.insert(i << 64 | i, i as u32);
        }
        assert_eq!(m.len(), 100);
        assert_eq!(m.get(0), Some(0));
        assert_eq!(m.get(99 << 64 | 99), Some(99));
        assert_eq!(m.get(99), None);
    }
}
