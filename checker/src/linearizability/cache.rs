//! Lowe's cache: the (linearized set, model state) pairs the search has already entered.
//!
//! Layout, chosen because the search probes the cache once per step and a probe that misses the
//! CPU cache costs more than everything else in the step:
//! - model states are interned: each distinct state gets a small id, so a pair becomes a short
//!   run of machine words (state id, bitset words) that can be compared without touching the
//!   state (histories reach few distinct states: a register sees a handful of values);
//! - pairs live in one open-addressing table with linear probing, each slot holding the pair's
//!   hash and its words inline, so a probe usually reads one cache line.
//!
//! The tables are only probed, never iterated, so hashing cannot make results nondeterministic.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hash, Hasher};

use super::bitset::{Bitset, mix64};

/// Identifies an interned model state; ids count from 1.
pub(crate) type StateId = u32;

pub(crate) struct Cache<S> {
    /// Words per slot: a head word, then the bitset words. The head word holds the high 32 bits
    /// of the pair's hash and the state id, so one comparison filters on both; it is never 0
    /// for a used slot (ids start at 1), and 0 marks an empty slot.
    stride: usize,
    slots: Vec<u64>,
    /// Slot count minus one; the slot count is a power of two, at most 2^32 (the slot index comes
    /// from the 32 hash bits kept in the head word, so growing never rehashes a bitset).
    mask: usize,
    len: usize,
    states: HashMap<S, StateId, BuildHasherDefault<StateHasher>>,
}

const SLOTS_INITIAL: usize = 16;

/// The search ran out of state ids or slots: past any sensible memory limit.
#[derive(Debug)]
pub(crate) struct Full;

impl<S: Eq + Hash + Clone> Cache<S> {
    pub(crate) fn new(bits: usize) -> Self {
        let stride = 1 + bits.div_ceil(64);
        Cache {
            stride,
            slots: vec![0; SLOTS_INITIAL * stride],
            mask: SLOTS_INITIAL - 1,
            len: 0,
            states: HashMap::default(),
        }
    }

    /// The id of `state`, and whether it was seen for the first time.
    #[inline]
    pub(crate) fn intern(&mut self, state: &S) -> Result<(StateId, bool), Full> {
        if let Some(&id) = self.states.get(state) {
            return Ok((id, false));
        }
        let id = StateId::try_from(self.states.len() + 1).map_err(|_| Full)?;
        self.states.insert(state.clone(), id);
        Ok((id, true))
    }

    /// Records the pair; returns false if it was already there.
    #[inline]
    pub(crate) fn insert(&mut self, set: &Bitset, state: StateId) -> Result<bool, Full> {
        let hash = set.hash() ^ mix64(state.into());
        let head = (hash >> 32) << 32 | u64::from(state);
        let words = set.words();
        let mut index = (hash >> 32) as usize & self.mask;
        loop {
            let slot = &mut self.slots[index * self.stride..(index + 1) * self.stride];
            if slot[0] == 0 {
                slot[0] = head;
                slot[1..].copy_from_slice(words);
                self.len += 1;
                if self.len * 2 > self.mask + 1 {
                    self.grow()?;
                }
                return Ok(true);
            }
            // A word loop: slots are a few words long, too short for a memcmp call to pay.
            if slot[0] == head && slot[1..].iter().zip(words).all(|(a, b)| a == b) {
                return Ok(false);
            }
            index = (index + 1) & self.mask;
        }
    }

    /// Doubles the table (kept at most half full, so probe runs stay short).
    fn grow(&mut self) -> Result<(), Full> {
        let stride = self.stride;
        let capacity = (self.mask + 1) * 2;
        if capacity > 1 << 32 {
            return Err(Full);
        }
        let old = std::mem::replace(&mut self.slots, vec![0; capacity * stride]);
        self.mask = capacity - 1;
        for slot in old.chunks_exact(stride).filter(|slot| slot[0] != 0) {
            let mut index = (slot[0] >> 32) as usize & self.mask;
            while self.slots[index * stride] != 0 {
                index = (index + 1) & self.mask;
            }
            self.slots[index * stride..(index + 1) * stride].copy_from_slice(slot);
        }
        Ok(())
    }

    /// Bytes held, not counting heap owned by interned states: the slot table and the interner
    /// (a key, a value and a control byte per bucket).
    pub(crate) fn bytes(&self) -> usize {
        self.slots.len() * 8 + self.states.capacity() * (size_of::<(S, StateId)>() + 1)
    }

    /// (set, state) pairs recorded: the search steps that entered a new pair.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Distinct model states interned.
    pub(crate) fn states(&self) -> usize {
        self.states.len()
    }
}

/// A small multiply-rotate hasher for model states: states are tiny (a register value, a holder)
/// and SipHash's resistance to chosen keys buys nothing here.
#[derive(Default)]
pub(crate) struct StateHasher {
    hash: u64,
}

impl StateHasher {
    #[inline]
    fn add(&mut self, word: u64) {
        self.hash = (self.hash.rotate_left(26) ^ word).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

impl Hasher for StateHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            self.add(u64::from_le_bytes(chunk.try_into().expect("chunk of 8")));
        }
        let mut tail = [0u8; 8];
        let rest = chunks.remainder();
        tail[..rest.len()].copy_from_slice(rest);
        self.add(u64::from_le_bytes(tail) ^ ((rest.len() as u64) << 56));
    }

    #[inline]
    fn write_u8(&mut self, n: u8) {
        self.add(n.into());
    }

    #[inline]
    fn write_u32(&mut self, n: u32) {
        self.add(n.into());
    }

    #[inline]
    fn write_u64(&mut self, n: u64) {
        self.add(n);
    }

    #[inline]
    fn write_usize(&mut self, n: usize) {
        self.add(n as u64);
    }

    #[inline]
    fn write_i64(&mut self, n: i64) {
        self.add(n as u64);
    }

    /// Finalized with `mix64`: the map takes its bucket from the low bits, which the multiply
    /// alone leaves poorly mixed.
    #[inline]
    fn finish(&self) -> u64 {
        mix64(self.hash)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pair_is_new_once() {
        let mut cache = Cache::new(70);
        let mut set = Bitset::new(70);
        let (three, new) = cache.intern(&Some(3i64)).unwrap();
        assert!(new);
        let (four, _) = cache.intern(&Some(4i64)).unwrap();
        assert_eq!(cache.intern(&Some(3i64)).unwrap(), (three, false));
        set.insert(69);
        assert!(cache.insert(&set, three).unwrap());
        assert!(!cache.insert(&set, three).unwrap());
        assert!(cache.insert(&set, four).unwrap());
        set.insert(0);
        assert!(cache.insert(&set, three).unwrap());
        assert_eq!(cache.len(), 3);
    }

    #[test]
    fn growing_keeps_every_pair() {
        let mut cache: Cache<u8> = Cache::new(200);
        let mut set = Bitset::new(200);
        let mut inserted = Vec::new();
        for bit in 0..200 {
            set.insert(bit);
            for state in 1..6 {
                assert!(cache.insert(&set, state).unwrap());
                inserted.push((set.clone(), state));
            }
        }
        assert_eq!(cache.len(), 1000);
        for (set, state) in &inserted {
            assert!(!cache.insert(set, *state).unwrap());
        }
    }
}
