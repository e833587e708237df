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

use super::bitset::{Compact, mix64};

/// Identifies an interned model state; ids count from 1.
pub(crate) type StateId = u32;

pub(crate) struct Cache<S> {
    /// Two words per slot. The head word holds the high 32 bits of the pair's hash and the state
    /// id, so one comparison filters on both; it is never 0 for a used slot (ids start at 1), and
    /// 0 marks an empty slot. The second word says where the set's compact form lies in `arena`:
    /// its chunk (high 24 bits), its offset in the chunk (middle 20 bits) and its length in words
    /// (low 20 bits).
    slots: Vec<[u64; 2]>,
    /// Slot count minus one; the slot count is a power of two, at most 2^32 (the slot index comes
    /// from the 32 hash bits kept in the head word, so growing never reads the arena).
    mask: usize,
    len: usize,
    /// The compact forms of the recorded sets, one after the other in chunks of [`CHUNK_WORDS`]
    /// (see [`Compact::words`]). Chunks, not one vector, so that the arena grows by a fixed step
    /// and never copies itself: a doubling vector held the old and the new copy at once, and a
    /// memory limit then stopped the search at a third of what it allowed (issue 39).
    arena: Vec<Vec<u64>>,
    /// Bytes of the arena's chunks.
    arena_bytes: usize,
    states: HashMap<S, StateId, BuildHasherDefault<StateHasher>>,
}

const SLOTS_INITIAL: usize = 16;
/// Words of the largest arena chunk: 8 MiB. The first is 32 KiB, and each a quarter of all
/// before it, up to this: the arena grows by a quarter while small, by a fixed step when large,
/// so a memory limit stops it within a quarter of what it allows.
const CHUNK_WORDS: usize = 1 << 20;
const FIRST_CHUNK_WORDS: usize = 1 << 12;
const LEN_BITS: u32 = 20;
const OFFSET_BITS: u32 = 20;
const CHUNKS_MAX: usize = 1 << (64 - LEN_BITS - OFFSET_BITS);
/// The table grows when more than half full; a search that may not grow it goes on to this
/// share (7/8), probing longer, before it stops.
const LOAD_MAX_EIGHTHS: usize = 7;

/// The search ran out of state ids, slots or arena words: past any sensible memory limit.
#[derive(Debug)]
pub(crate) struct Full;

impl<S: Eq + Hash + Clone> Cache<S> {
    pub(crate) fn new() -> Self {
        Cache {
            slots: vec![[0; 2]; SLOTS_INITIAL],
            mask: SLOTS_INITIAL - 1,
            len: 0,
            arena: Vec::new(),
            arena_bytes: 0,
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

    /// Bytes the next [`Cache::insert`] of a set of `words` words may allocate on top of what is
    /// held, as (a doubled slot table, which lives beside the old one while it is filled; a new
    /// arena chunk), each 0 when not needed. The search charges them to the budget before
    /// inserting, so a limit bounds the peak.
    pub(crate) fn growth_bytes(&self, words: usize) -> (usize, usize) {
        let slots = if (self.len + 1) * 2 > self.mask + 1 { (self.mask + 1) * 2 * size_of::<[u64; 2]>() } else { 0 };
        let chunk = match self.arena.last() {
            Some(chunk) if chunk.len() + words <= chunk.capacity() => 0,
            _ => self.next_chunk_words(words) * 8,
        };
        (slots, chunk)
    }

    /// The capacity of the next arena chunk, for a form of `words` words.
    fn next_chunk_words(&self, words: usize) -> usize {
        (self.arena_bytes / 8 / 4).clamp(FIRST_CHUNK_WORDS, CHUNK_WORDS).max(words)
    }

    /// Whether one more pair fits without doubling the slot table (up to 7/8 full).
    pub(crate) fn fits_without_growing(&self) -> bool {
        (self.len + 1) * 8 <= (self.mask + 1) * LOAD_MAX_EIGHTHS
    }

    /// Records the pair; returns false if it was already there. With `may_grow` false the slot
    /// table is not doubled (the caller checked [`Cache::fits_without_growing`]).
    #[inline]
    pub(crate) fn insert(
        &mut self,
        set: &Compact<'_>,
        hash: u64,
        state: StateId,
        may_grow: bool,
    ) -> Result<bool, Full> {
        let hash = hash ^ mix64(state.into());
        let head = (hash >> 32) << 32 | u64::from(state);
        let len = set.len();
        let mut index = (hash >> 32) as usize & self.mask;
        loop {
            let slot = self.slots[index];
            if slot[0] == 0 {
                if len >= 1 << LEN_BITS {
                    return Err(Full);
                }
                if self.arena.last().is_none_or(|chunk| chunk.len() + len > chunk.capacity()) {
                    if self.arena.len() == CHUNKS_MAX {
                        return Err(Full);
                    }
                    // A form longer than a chunk gets a chunk of its own: `growth_bytes` said so.
                    let words = self.next_chunk_words(len);
                    self.arena.push(Vec::with_capacity(words));
                    self.arena_bytes += words * 8;
                }
                let chunk_index = self.arena.len() - 1;
                let chunk = &mut self.arena[chunk_index];
                let offset = chunk.len();
                if offset >= 1 << OFFSET_BITS {
                    return Err(Full);
                }
                chunk.extend(set.words());
                let location =
                    (chunk_index as u64) << (OFFSET_BITS + LEN_BITS) | (offset as u64) << LEN_BITS | len as u64;
                self.slots[index] = [head, location];
                self.len += 1;
                if may_grow && self.len * 2 > self.mask + 1 {
                    self.grow()?;
                }
                return Ok(true);
            }
            if slot[0] == head && self.holds(slot[1], set) {
                return Ok(false);
            }
            index = (index + 1) & self.mask;
        }
    }

    /// Whether the compact form at `location` is `set`.
    #[inline]
    fn holds(&self, location: u64, set: &Compact<'_>) -> bool {
        let len = (location & ((1 << LEN_BITS) - 1)) as usize;
        if len != set.len() {
            return false;
        }
        let offset = (location >> LEN_BITS) as usize & ((1 << OFFSET_BITS) - 1);
        let chunk = (location >> (OFFSET_BITS + LEN_BITS)) as usize;
        let words = &self.arena[chunk][offset..offset + len];
        // A word loop: forms are a few words long, too short for a memcmp call to pay.
        words.iter().copied().eq(set.words())
    }

    /// Doubles the table (kept at most half full, so probe runs stay short).
    fn grow(&mut self) -> Result<(), Full> {
        let capacity = (self.mask + 1) * 2;
        if capacity > 1 << 32 {
            return Err(Full);
        }
        let old = std::mem::replace(&mut self.slots, vec![[0; 2]; capacity]);
        self.mask = capacity - 1;
        for slot in old.into_iter().filter(|slot| slot[0] != 0) {
            let mut index = (slot[0] >> 32) as usize & self.mask;
            while self.slots[index][0] != 0 {
                index = (index + 1) & self.mask;
            }
            self.slots[index] = slot;
        }
        Ok(())
    }

    /// Bytes held, not counting heap owned by interned states: the slot table, the arena and the
    /// interner (a key, a value and a control byte per bucket).
    pub(crate) fn bytes(&self) -> usize {
        self.slots.len() * size_of::<[u64; 2]>()
            + self.arena_bytes
            + self.arena.capacity() * size_of::<Vec<u64>>()
            + self.states.capacity() * (size_of::<(S, StateId)>() + 1)
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
    use crate::linearizability::bitset::Bitset;

    fn insert(cache: &mut Cache<Option<i64>>, set: &mut Bitset, state: StateId) -> bool {
        let hash = set.hash();
        cache.insert(&set.compact(), hash, state, true).unwrap()
    }

    #[test]
    fn a_pair_is_new_once() {
        let mut cache = Cache::new();
        let mut set = Bitset::new(70, 0);
        let (three, new) = cache.intern(&Some(3i64)).unwrap();
        assert!(new);
        let (four, _) = cache.intern(&Some(4i64)).unwrap();
        assert_eq!(cache.intern(&Some(3i64)).unwrap(), (three, false));
        set.insert(69);
        assert!(insert(&mut cache, &mut set, three));
        assert!(!insert(&mut cache, &mut set, three));
        assert!(insert(&mut cache, &mut set, four));
        set.insert(0);
        assert!(insert(&mut cache, &mut set, three));
        assert_eq!(cache.len(), 3);
    }

    #[test]
    fn growing_keeps_every_pair() {
        let mut cache: Cache<Option<i64>> = Cache::new();
        let mut set = Bitset::new(150, 50);
        let mut inserted = Vec::new();
        for bit in 0..200 {
            set.insert(if bit < 150 { bit } else { set.open_bit(bit - 150) });
            for state in 1..6 {
                let (slots, chunk) = cache.growth_bytes(set.compact().len());
                assert!(slots < 1 << 20 && chunk <= CHUNK_WORDS * 8);
                assert!(insert(&mut cache, &mut set, state));
                inserted.push((set.clone(), state));
            }
        }
        assert_eq!(cache.len(), 1000);
        for (mut set, state) in inserted {
            assert!(!insert(&mut cache, &mut set, state));
        }
    }
}
