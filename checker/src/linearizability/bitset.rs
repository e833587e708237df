//! The set of linearized operations, with a hash kept up to date as bits flip, and a compact form
//! whose size follows the history's concurrency instead of its length.

/// A fixed-size bitset with an incremental Zobrist hash: each bit index owns a fixed pseudo-random
/// word, and the hash is the XOR of the words of the bits that are set. Setting or clearing a bit
/// is one XOR, so the search never rehashes the whole set (Lowe's cache probes once per step).
///
/// Bits come in two regions. The *ordered* region holds the operations that returned, numbered by
/// call; the *open* region, starting at a word boundary after it, holds those whose outcome is
/// unknown (they stay open to the end of the history). The search only linearizes an operation
/// whose call precedes every remaining return, so while ordered operation `k` waits, every
/// linearized ordered operation was called before `k` returned: the ordered bits set are all those
/// below some frontier plus a few within one operation's duration after it. [`Bitset::compact`]
/// therefore stores the frontier's word index and the words from there to the highest set
/// ordered bit: a few words for a history of any length at bounded concurrency, where the whole
/// set would be one bit per operation in every cache entry. The open region gets the same form
/// (its own frontier's word, then the words to its highest set bit): the open operations are
/// numbered by call too, and the search places the early ones first, so a history with
/// thousands of crashed operations does not store a bit for each of them in every entry.
#[derive(Clone, Debug)]
pub(crate) struct Bitset {
    words: Vec<u64>,
    hash: u64,
    /// Words of the ordered region; the open region follows.
    ordered_words: usize,
    ordered_bits: usize,
    /// The lowest ordered bit not set (`ordered_bits` when all are).
    frontier: usize,
    /// An upper bound on one past the highest ordered word with a bit set; tightened lazily.
    ordered_end: usize,
    /// The lowest open bit not set, counted within the open region.
    open_frontier: usize,
    /// An upper bound on one past the highest open word with a bit set, counted within the open
    /// region; tightened lazily.
    open_end: usize,
}

/// The canonical compact form of a set: two sets are equal iff their compact forms are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Compact<'a> {
    /// The word holding the frontier: every ordered word below it is all ones.
    pub(crate) low_word: u64,
    /// Ordered words from `low_word` to the last one with a bit set (none if there is no such
    /// word at or above `low_word`).
    pub(crate) ordered: &'a [u64],
    /// Where there is an open region: the word of its frontier (low 32 bits) and the length of
    /// `ordered` (high 32 bits), so that two forms split the same way when their words are equal.
    pub(crate) open_header: Option<u64>,
    /// Open words from the open frontier's word to the last one with a bit set.
    pub(crate) open: &'a [u64],
}

impl Compact<'_> {
    pub(crate) fn len(&self) -> usize {
        1 + usize::from(self.open_header.is_some()) + self.ordered.len() + self.open.len()
    }

    /// The form's words in the order the cache stores them.
    pub(crate) fn words(&self) -> impl Iterator<Item = u64> + '_ {
        std::iter::once(self.low_word)
            .chain(self.open_header)
            .chain(self.ordered.iter().copied())
            .chain(self.open.iter().copied())
    }
}

impl Bitset {
    /// A set over `ordered` operations that returned (bits `0..ordered`) and `open` ones whose
    /// outcome is unknown (bits from `ordered` rounded up to a word boundary).
    pub(crate) fn new(ordered: usize, open: usize) -> Self {
        let ordered_words = ordered.div_ceil(64);
        Bitset {
            words: vec![0; ordered_words + open.div_ceil(64)],
            hash: 0,
            ordered_words,
            ordered_bits: ordered,
            frontier: 0,
            ordered_end: 0,
            open_frontier: 0,
            open_end: 0,
        }
    }

    /// The bit index of open operation `index` (counted from 0 within the open region).
    pub(crate) fn open_bit(&self, index: usize) -> usize {
        self.ordered_words * 64 + index
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
        if bit < self.ordered_bits {
            self.ordered_end = self.ordered_end.max(bit / 64 + 1);
            if bit == self.frontier {
                self.frontier += 1;
                while self.frontier < self.ordered_bits && self.contains(self.frontier) {
                    self.frontier += 1;
                }
            }
        } else {
            let index = bit - self.ordered_words * 64;
            self.open_end = self.open_end.max(index / 64 + 1);
            if index == self.open_frontier {
                let open_bits = (self.words.len() - self.ordered_words) * 64;
                self.open_frontier += 1;
                while self.open_frontier < open_bits && self.contains(self.ordered_words * 64 + self.open_frontier) {
                    self.open_frontier += 1;
                }
            }
        }
    }

    #[inline]
    pub(crate) fn remove(&mut self, bit: usize) {
        debug_assert!(self.contains(bit), "bit {bit} not set");
        self.words[bit / 64] &= !(1 << (bit % 64));
        self.hash ^= zobrist_key(bit);
        if bit < self.frontier {
            self.frontier = bit;
        }
        if bit >= self.ordered_words * 64 {
            self.open_frontier = self.open_frontier.min(bit - self.ordered_words * 64);
        }
    }

    #[inline]
    pub(crate) fn hash(&self) -> u64 {
        self.hash
    }

    /// The compact form of the set as it is now.
    #[inline]
    pub(crate) fn compact(&mut self) -> Compact<'_> {
        let low = self.frontier / 64;
        while self.ordered_end > low && self.words[self.ordered_end - 1] == 0 {
            self.ordered_end -= 1;
        }
        let end = self.ordered_end.max(low).min(self.ordered_words);
        let low = low.min(end);
        let open_words = self.words.len() - self.ordered_words;
        if open_words == 0 {
            return Compact { low_word: low as u64, ordered: &self.words[low..end], open_header: None, open: &[] };
        }
        let open = &self.words[self.ordered_words..];
        let open_low = self.open_frontier / 64;
        while self.open_end > open_low && open[self.open_end - 1] == 0 {
            self.open_end -= 1;
        }
        let open_end = self.open_end.max(open_low).min(open_words);
        let open_low = open_low.min(open_end);
        Compact {
            low_word: low as u64,
            ordered: &self.words[low..end],
            open_header: Some(open_low as u64 | ((end - low) as u64) << 32),
            open: &self.words[self.ordered_words + open_low..self.ordered_words + open_end],
        }
    }

    /// Bytes held.
    pub(crate) fn bytes(&self) -> usize {
        self.words.capacity() * 8
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
        let mut a = Bitset::new(130, 0);
        let mut b = Bitset::new(130, 0);
        for bit in [3, 64, 129] {
            a.insert(bit);
        }
        for bit in [129, 7, 3, 64] {
            b.insert(bit);
        }
        b.remove(7);
        assert_eq!(a.compact(), b.compact());
        assert_eq!(a.hash(), b.hash());
        assert!(a.contains(129) && !a.contains(7));
    }

    #[test]
    fn empty_set_hashes_to_zero_and_removal_restores_it() {
        let mut a = Bitset::new(10, 0);
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

    #[test]
    fn the_compact_form_is_canonical_and_starts_at_the_frontier_word() {
        let mut a = Bitset::new(300, 70);
        for bit in 0..200 {
            a.insert(bit);
        }
        a.insert(250);
        let open = a.open_bit(69);
        a.insert(open);
        let compact = a.compact();
        assert_eq!(compact.low_word, 3, "bits 0..200 set: the frontier, 200, is in word 3");
        assert_eq!(compact.ordered.len(), 1, "words 3 (bits 192..199 and 250): one");
        assert_eq!(compact.open, &[0, 1 << 5][..], "open bit 69: open words 0 and 1");
        assert_eq!(compact.open_header, Some(1 << 32), "open frontier in word 0; one ordered word");
        assert_eq!(compact.len(), 5);

        // The same set reached another way, through a frontier that moved back and forth.
        let mut b = Bitset::new(300, 70);
        b.insert(open);
        b.insert(250);
        b.insert(260);
        for bit in (0..200).rev() {
            b.insert(bit);
        }
        b.remove(260);
        b.remove(5);
        b.insert(5);
        assert_eq!(a.compact(), b.compact());
        assert_eq!(a.hash(), b.hash());
        b.remove(250);
        assert_ne!(a.compact(), b.compact());
        assert_eq!(b.compact().ordered, &[0xff][..], "word 3 holds bits 192..199 only");
    }

    #[test]
    fn the_open_region_is_stored_from_its_frontier_word_to_its_last_set_bit() {
        let mut a = Bitset::new(10, 400);
        for index in (0..130).chain([200]) {
            a.insert(a.open_bit(index));
        }
        let compact = a.compact();
        assert_eq!(compact.open_header, Some(2), "open bits 0..130 set: the frontier, 130, is in word 2");
        assert_eq!(compact.open, &[0b11, 1 << 8][..], "words 2 (bits 128, 129) and 3 (bit 200)");
        // Reached another way: the open frontier moved back and forth.
        let mut b = Bitset::new(10, 400);
        for index in (0..130).rev().chain([300, 200]) {
            b.insert(b.open_bit(index));
        }
        b.remove(b.open_bit(300));
        b.remove(b.open_bit(7));
        b.insert(b.open_bit(7));
        assert_eq!(a.compact(), b.compact());
        assert_eq!(a.hash(), b.hash());
        b.remove(b.open_bit(0));
        assert_eq!(b.compact().open_header, Some(0));
        assert_ne!(a.compact(), b.compact());
    }

    #[test]
    fn a_full_ordered_region_has_no_ordered_words() {
        let mut a = Bitset::new(128, 0);
        for bit in 0..128 {
            a.insert(bit);
        }
        let compact = a.compact();
        assert_eq!((compact.low_word, compact.ordered.len(), compact.open.len()), (2, 0, 0));
        let mut empty = Bitset::new(0, 3);
        assert_eq!(empty.compact().len(), 2);
    }
}
