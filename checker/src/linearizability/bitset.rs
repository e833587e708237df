//! The set of linearized operations, with a hash kept up to date as bits flip.

/// A fixed-size bitset with an incremental Zobrist hash: each bit index owns a fixed pseudo-random
/// word, and the hash is the XOR of the words of the bits that are set. Setting or clearing a bit
/// is one XOR, so the search never rehashes the whole set (Lowe's cache probes once per step).
#[derive(Clone, Debug)]
pub(crate) struct Bitset {
    words: Vec<u64>,
    hash: u64,
}

impl Bitset {
    pub(crate) fn new(bits: usize) -> Self {
        Bitset { words: vec![0; bits.div_ceil(64)], hash: 0 }
    }

    #[inline]
    pub(crate) fn contains(&self, bit: usize) -> bool {
        self.words[bit / 64] & (1 << (bit % 64)) != 0
    }

    #[inline]
    pub(crate) fn insert(&mut self, bit: usize) {
        debug_assert!(!self.contains(bit), "bit {bit} already set");
        self.words[bit / 64] |= 1 << (bit % 64);
        self.hash ^= zobrist_key(bit);
    }

    #[inline]
    pub(crate) fn remove(&mut self, bit: usize) {
        debug_assert!(self.contains(bit), "bit {bit} not set");
        self.words[bit / 64] &= !(1 << (bit % 64));
        self.hash ^= zobrist_key(bit);
    }

    #[inline]
    pub(crate) fn hash(&self) -> u64 {
        self.hash
    }

    #[inline]
    pub(crate) fn words(&self) -> &[u64] {
        &self.words
    }
}

/// The fixed word of one bit index: splitmix64 of the index (Steele, Lea & Flood 2014), cheap to
/// compute and well spread, so no table is needed and every run hashes the same way.
#[inline]
fn zobrist_key(bit: usize) -> u64 {
    mix64((bit as u64).wrapping_add(1).wrapping_mul(0x9e37_79b9_7f4a_7c15))
}

/// splitmix64's finalizer: a bijection on u64 whose output bits all depend on all input bits.
#[inline]
pub(crate) fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_depends_on_the_set_not_on_the_order_of_changes() {
        let mut a = Bitset::new(130);
        let mut b = Bitset::new(130);
        for bit in [3, 64, 129] {
            a.insert(bit);
        }
        for bit in [129, 7, 3, 64] {
            b.insert(bit);
        }
        b.remove(7);
        assert_eq!(a.words(), b.words());
        assert_eq!(a.hash(), b.hash());
        assert!(a.contains(129) && !a.contains(7));
    }

    #[test]
    fn empty_set_hashes_to_zero_and_removal_restores_it() {
        let mut a = Bitset::new(10);
        a.insert(4);
        assert_ne!(a.hash(), 0);
        a.remove(4);
        assert_eq!(a.hash(), 0);
    }

    #[test]
    fn keys_of_neighbouring_bits_differ() {
        let keys: std::collections::BTreeSet<u64> = (0..10_000).map(zobrist_key).collect();
        assert_eq!(keys.len(), 10_000);
    }
}
