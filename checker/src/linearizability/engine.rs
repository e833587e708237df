//! The search for one partition: Wing & Gong's backtracking with Lowe's cache.
//!
//! State of the search: the entry list (operations not yet linearized), the set of linearized
//! operations, the model state, and a stack of (call entry, state before it) for undoing. From the
//! first entry of the list:
//! - a call: try the operation in the current state. If the model accepts it and the resulting
//!   (set, state) pair is new, linearize it (push, unlink its entries) and restart from the head;
//!   otherwise move on to the next entry.
//! - a return: the operation it belongs to had to be linearized before anything that comes after
//!   it, and every candidate before it has been tried, so undo the latest step and go on with the
//!   entry after the undone call.
//!
//! The list empties exactly when every operation is linearized: success. Undoing with an empty stack
//! means every order was tried: illegal. Every step enters a (set, state) pair that was never
//! entered before, so the search ends after at most (pairs) steps.
//!
//! **Reads placed as soon as they fit.** A completed operation that leaves the state as it was
//! wherever it is accepted ([`Model::read_only`]: a read, a compare-and-set that failed) is the
//! only step tried from a state that accepts it: moving it from any later place in a
//! linearization to here changes no other operation's state, and every operation that had to
//! precede it already has (it is a candidate). Backtracking over such a step backtracks over the
//! step before it too. Without this, every order of the concurrent reads was a branch: 20 clients
//! on five values made a register history of 10,000 operations cost 1.2 s and 240 MB, and one of
//! 100,000 with 1 % timeouts ran out of the default 1 GiB (issue 39).
//!
//! **Operations that never returned.** Where the model accepts one in every state
//! ([`Model::accepts_unknown_anywhere`]: a register), the search stops with success once every
//! completed operation is placed: the rest go last, in any order.

use super::bitset::Bitset;
use super::budget::{Meter, Stop};
use super::cache::{Cache, StateId};
use super::entries::{END, Entries, Event, EventKind, NodeId};
use super::model::Model;
use super::operation::Operation;
use super::symmetry::{self, NO_TWIN};
use super::verdict::UnknownReason;

/// What one partition's search held when it ended, for [`super::CheckStats`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct SearchStats {
    pub(crate) cache_entries: usize,
    pub(crate) states: usize,
    pub(crate) bytes: usize,
}

pub(crate) enum Outcome {
    Linearizable,
    /// The longest linearization found, as indices into the partition's operations.
    Illegal {
        longest_prefix: Vec<u32>,
    },
    Stopped(Stop),
}

/// Builds the entry list of a partition: one call and one return per operation.
pub(crate) fn entries_of<I, O>(ops: &[&Operation<I, O>]) -> Entries {
    let mut events = Vec::with_capacity(ops.len() * 2);
    for (index, op) in ops.iter().enumerate() {
        let index = u32::try_from(index).expect("partition size checked by the caller");
        events.push(Event { time_ns: op.call_ns, kind: EventKind::Call, op_id: op.id, op: index });
        events.push(Event { time_ns: op.effective_return_ns(), kind: EventKind::Return, op_id: op.id, op: index });
    }
    Entries::new(&mut events)
}

/// Orders a partition's operations as the search numbers them: those that returned by call (time,
/// then id), then those open to the end, also by call. The search visits entries by time and id
/// alone, so this order changes only the bit each operation owns in the linearized set, which
/// lets the set's compact form follow the concurrency (see `bitset.rs`).
pub(crate) fn order_for_search<I, O>(ops: &mut [&Operation<I, O>]) {
    ops.sort_unstable_by_key(|op| (op.output.is_none(), op.call_ns, op.id));
}

/// What one call of [`Search::resume`] ended with.
pub(crate) enum Progress {
    Done(Outcome),
    /// The step allowance ran out; the search can go on from where it is.
    Paused,
}

impl<'a, M: Model> Search<'a, M> {
    /// Goes on searching for at most `steps` more steps. A search is resumed in rounds so that
    /// partitions share the cores fairly: an easy partition is decided after a few rounds even
    /// when hard ones came before it (Porcupine gets the same from one goroutine per partition).
    pub(crate) fn resume(&mut self, meter: &mut Meter<'_>, steps: u64) -> Progress {
        let mut left = steps;
        while !self.entries.is_empty() {
            if self.unknown_fit_anywhere && self.known_left == 0 {
                // The operations left never returned: placed last, in any order, they all fit.
                break;
            }
            if left == 0 {
                return Progress::Paused;
            }
            left -= 1;
            if let Err(stop) = meter.tick() {
                return Progress::Done(Outcome::Stopped(stop));
            }
            debug_assert_ne!(self.node, END, "the list always ends with a return");
            if self.node == self.entries.first()
                && let Some(node) = self.forced_candidate()
            {
                // A completed read-only operation the state accepts: the only step tried here.
                self.node = match self.try_linearize(node, meter, true) {
                    Ok(true) => {
                        if let Err(stop) = meter.settle(self.bytes()) {
                            return Progress::Done(Outcome::Stopped(stop));
                        }
                        self.entries.first()
                    }
                    // Entered before, and everything after it failed: so does this state.
                    Ok(false) => match self.backtrack() {
                        Some(next) => next,
                        None => {
                            let longest_prefix = std::mem::take(&mut self.longest.ops);
                            return Progress::Done(Outcome::Illegal { longest_prefix });
                        }
                    },
                    Err(stop) => return Progress::Done(Outcome::Stopped(stop)),
                };
                continue;
            }
            if !self.entries.is_call(self.node) {
                match self.backtrack() {
                    Some(next) => self.node = next,
                    None => {
                        let longest_prefix = std::mem::take(&mut self.longest.ops);
                        return Progress::Done(Outcome::Illegal { longest_prefix });
                    }
                }
                continue;
            }
            self.node = match self.try_linearize(self.node, meter, false) {
                Ok(true) => {
                    if let Err(stop) = meter.settle(self.bytes()) {
                        return Progress::Done(Outcome::Stopped(stop));
                    }
                    self.entries.first()
                }
                Ok(false) => self.entries.next(self.node),
                Err(stop) => return Progress::Done(Outcome::Stopped(stop)),
            };
        }
        Progress::Done(Outcome::Linearizable)
    }

    pub(crate) fn stats(&self) -> SearchStats {
        SearchStats { cache_entries: self.cache.len(), states: self.cache.states(), bytes: self.bytes() }
    }
}

/// Everything the search of one partition keeps.
pub(crate) struct Search<'a, M: Model> {
    model: &'a M,
    ops: &'a [&'a Operation<M::Input, M::Output>],
    entries: Entries,
    cache: Cache<M::State>,
    linearized: Bitset,
    /// Operations `0..ordered` returned; the rest are open to the end.
    ordered: usize,
    /// Whether the model accepts every operation of unknown outcome in every state.
    unknown_fit_anywhere: bool,
    /// Returned operations not yet linearized.
    known_left: usize,
    state: M::State,
    state_id: StateId,
    /// Heap owned by the interned states, for the memory estimate.
    states_heap_bytes: usize,
    /// Bytes of what is sized once per partition: the entry list, the undo stack's room, the
    /// twins, the set.
    fixed_bytes: usize,
    undo: Vec<Undo<M::State>>,
    longest: LongestPrefix,
    twin: Vec<u32>,
    /// The entry the search goes on from.
    node: NodeId,
}

/// What undoing one step restores.
struct Undo<S> {
    call: NodeId,
    /// The step was forced (a read-only operation): no other step is tried in its place.
    forced: bool,
    state: S,
    state_id: StateId,
}

impl<'a, M: Model> Search<'a, M> {
    /// A search of `ops`, which [`order_for_search`] has ordered.
    pub(crate) fn new(model: &'a M, ops: &'a [&'a Operation<M::Input, M::Output>]) -> Self {
        debug_assert!(ops.is_sorted_by_key(|op| (op.output.is_none(), op.call_ns, op.id)));
        let mut cache = Cache::new();
        let state = model.init();
        let Ok((state_id, _)) = cache.intern(&state) else {
            unreachable!("an empty cache has room for one state");
        };
        let ordered = ops.iter().take_while(|op| op.output.is_some()).count();
        let linearized = Bitset::new(ordered, ops.len() - ordered);
        let entries = entries_of(ops);
        let node = entries.first();
        let undo = Vec::with_capacity(ops.len());
        let twin = symmetry::twins(ops);
        let fixed_bytes = entries.bytes()
            + undo.capacity() * size_of::<Undo<M::State>>()
            + twin.capacity() * 4
            + linearized.bytes()
            // The longest prefix, one id per operation at most.
            + ops.len() * 4;
        Search {
            model,
            ops,
            entries,
            cache,
            linearized,
            ordered,
            unknown_fit_anywhere: model.accepts_unknown_anywhere(),
            known_left: ordered,
            states_heap_bytes: model.state_heap_bytes(&state),
            fixed_bytes,
            state,
            state_id,
            undo,
            longest: LongestPrefix::default(),
            twin,
            node,
        }
    }

    /// The bit of operation `op_index` in the linearized set.
    #[inline]
    fn bit(&self, op_index: usize) -> usize {
        if op_index < self.ordered { op_index } else { self.linearized.open_bit(op_index - self.ordered) }
    }

    /// Linearizes the operation of call entry `node` next, if the model accepts it here and that
    /// leads to a (set, state) pair never entered before. Returns whether it did.
    fn try_linearize(&mut self, node: NodeId, meter: &mut Meter<'_>, forced: bool) -> Result<bool, Stop> {
        let op_index = self.entries.op(node) as usize;
        // Interchangeable with an earlier candidate that is still waiting: that one goes first.
        let twin = self.twin[op_index];
        if twin != NO_TWIN && !self.linearized.contains(self.bit(twin as usize)) {
            return Ok(false);
        }
        let op = self.ops[op_index];
        let Some(next_state) = self.model.step(&self.state, &op.input, op.output.as_ref()) else {
            return Ok(false);
        };
        let next_id = self.intern(&next_state)?;
        let bit = self.bit(op_index);
        self.linearized.insert(bit);
        let hash = self.linearized.hash();
        let set = self.linearized.compact();
        // Charged before the cache allocates, so the limit bounds the peak. Where a doubled slot
        // table would not fit, the table fills further instead (to 7/8), so that a limit between
        // two doublings is not wasted.
        let (slots_growth, chunk_growth) = self.cache.growth_bytes(set.len());
        let mut may_grow = true;
        if slots_growth + chunk_growth > 0 {
            let held = self.cache.bytes() + self.states_heap_bytes + self.fixed_bytes;
            if !meter.fits(held + slots_growth + chunk_growth) && self.cache.fits_without_growing() {
                may_grow = false;
            }
            let growth = if may_grow { slots_growth + chunk_growth } else { chunk_growth };
            if let Err(stop) = meter.hold(held + growth) {
                self.linearized.remove(bit);
                return Err(stop);
            }
        }
        let new = self.cache.insert(&set, hash, next_id, may_grow).map_err(|_| OUT_OF_MEMORY)?;
        if !new {
            self.linearized.remove(bit);
            return Ok(false);
        }
        self.undo.push(Undo {
            call: node,
            forced,
            state: std::mem::replace(&mut self.state, next_state),
            state_id: std::mem::replace(&mut self.state_id, next_id),
        });
        self.longest.on_push(&self.undo, &self.entries);
        self.entries.lift(node);
        if op_index < self.ordered {
            self.known_left -= 1;
        }
        Ok(true)
    }

    /// The first candidate that is a completed read-only operation ([`Model::read_only`]) the
    /// state accepts, and not the later of two twins.
    fn forced_candidate(&self) -> Option<NodeId> {
        let mut node = self.entries.first();
        while node != END && self.entries.is_call(node) {
            let op_index = self.entries.op(node) as usize;
            let op = self.ops[op_index];
            let twin = self.twin[op_index];
            if op_index < self.ordered
                && (twin == NO_TWIN || self.linearized.contains(self.bit(twin as usize)))
                && self.model.read_only(&op.input, op.output.as_ref())
                && self.model.step(&self.state, &op.input, op.output.as_ref()).is_some()
            {
                return Some(node);
            }
            node = self.entries.next(node);
        }
        None
    }

    fn intern(&mut self, next_state: &M::State) -> Result<StateId, Stop> {
        // Many steps (reads) leave the state as it was: skip the interner for them.
        if *next_state == self.state {
            return Ok(self.state_id);
        }
        let (id, new) = self.cache.intern(next_state).map_err(|_| OUT_OF_MEMORY)?;
        if new {
            self.states_heap_bytes += self.model.state_heap_bytes(next_state);
        }
        Ok(id)
    }

    /// Undoes the latest step; returns the entry to go on from, or `None` if nothing is left to
    /// undo (every order has been tried).
    fn backtrack(&mut self) -> Option<NodeId> {
        loop {
            let step = self.undo.pop()?;
            let forced = step.forced;
            let next = self.undo_step(step);
            // A forced step had no alternative: its state fails with it.
            if !forced {
                return Some(next);
            }
        }
    }

    /// Undoes one popped step; returns the entry after its call.
    fn undo_step(&mut self, step: Undo<M::State>) -> NodeId {
        self.longest.on_pop(self.undo.len());
        self.state = step.state;
        self.state_id = step.state_id;
        let op_index = self.entries.op(step.call) as usize;
        if op_index < self.ordered {
            self.known_left += 1;
        }
        let bit = self.bit(op_index);
        self.linearized.remove(bit);
        self.entries.unlift(step.call);
        self.entries.next(step.call)
    }

    fn bytes(&self) -> usize {
        self.cache.bytes() + self.states_heap_bytes + self.fixed_bytes
    }
}

const OUT_OF_MEMORY: Stop = Stop::Limit(UnknownReason::MemoryLimit);

/// The deepest undo stack seen, as operation indices, maintained in amortised O(1) per step:
/// `common` is how many bottom entries of the current stack are known to equal `ops`, so a new
/// record copies only the entries pushed since the stack last dipped below that mark.
#[derive(Default)]
struct LongestPrefix {
    ops: Vec<u32>,
    common: usize,
}

impl LongestPrefix {
    fn on_pop(&mut self, depth: usize) {
        self.common = self.common.min(depth);
    }

    fn on_push<S>(&mut self, undo: &[Undo<S>], entries: &Entries) {
        if undo.len() <= self.ops.len() {
            return;
        }
        self.ops.truncate(self.common);
        self.ops.extend(undo[self.common..].iter().map(|step| entries.op(step.call)));
        self.common = undo.len();
    }
}
