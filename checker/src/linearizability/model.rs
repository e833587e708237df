//! The sequential specification a history is checked against.

use std::fmt::Debug;
use std::hash::Hash;

use super::operation::Operation;

/// A sequential specification in the spirit of Porcupine's `Model`: an initial state and a step
/// function are all a model needs; partitioning and descriptions are optional.
///
/// `Sync`/`Send` bounds let partitions be checked on several threads. Inputs and outputs are
/// compared so that interchangeable operations are tried in one order only (see `symmetry`).
pub trait Model: Sync {
    type Input: Debug + Eq + Hash + Sync;
    type Output: Debug + Eq + Hash + Sync;
    /// Compared and hashed by the search's cache: two equal states must behave identically.
    type State: Clone + Eq + Hash + Debug + Send;

    fn init(&self) -> Self::State;

    /// Applies `input` to `state`. `output` is what the operation returned, or `None` when its
    /// outcome is unknown. Returns the next state, or `None` if the model cannot produce that output
    /// from that state (the operation cannot be linearized here).
    ///
    /// With `output == None` the model should return the state the operation would lead to if it
    /// took effect here; "it never took effect" is covered by the search placing it last.
    fn step(&self, state: &Self::State, input: &Self::Input, output: Option<&Self::Output>) -> Option<Self::State>;

    /// Splits a history into independent parts (P-compositionality): each inner vector lists
    /// indices into `history`, every index exactly once, and no operation of one part may affect
    /// the outcome of an operation of another (e.g. one part per key). `None`: one part.
    fn partition(&self, history: &[Operation<Self::Input, Self::Output>]) -> Option<Vec<Vec<usize>>> {
        let _ = history;
        None
    }

    /// Whether every operation whose outcome is unknown is accepted in every state (`step` with
    /// `output == None` never returns `None`): the search then stops with success once every
    /// completed operation is placed, the rest going last. Default false.
    fn accepts_unknown_anywhere(&self) -> bool {
        false
    }

    /// Whether `input` with `output` leaves the state as it was wherever the step accepts it (a
    /// read, a compare-and-set that failed). The search then places such a completed operation
    /// as soon as it is accepted, without trying the orders that would place it later: none of
    /// them can succeed where this one fails (the operation changes nothing, and every operation
    /// that had to precede it already has). Default false.
    fn read_only(&self, input: &Self::Input, output: Option<&Self::Output>) -> bool {
        let _ = (input, output);
        false
    }

    /// Heap bytes a state owns beyond `size_of::<State>()`, for the memory limit's estimate.
    fn state_heap_bytes(&self, state: &Self::State) -> usize {
        let _ = state;
        0
    }

    fn describe_operation(&self, input: &Self::Input, output: Option<&Self::Output>) -> String {
        match output {
            Some(output) => format!("{input:?} -> {output:?}"),
            None => format!("{input:?} -> ?"),
        }
    }

    fn describe_state(&self, state: &Self::State) -> String {
        format!("{state:?}")
    }
}
