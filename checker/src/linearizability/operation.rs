//! One operation of a history: a call, and maybe a return with an output.

/// Identifies an operation within one history; unique, chosen by whoever built the history.
pub type OpId = u64;

/// The return time of an operation that never returned: it stays open to the end of the history.
pub const RETURN_NEVER: u64 = u64::MAX;

/// A completed or open operation.
///
/// Times are true times in nanoseconds (for imported logs without clocks, a line index does as well:
/// only the order matters). Two events at the same time are taken as concurrent (a call at `t`
/// overlaps a return at `t`), which is the permissive reading of a tie.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Operation<I, O> {
    pub id: OpId,
    /// The process or client that issued the operation (for reports; the check does not use it).
    pub client: u64,
    pub input: I,
    /// `None`: the outcome is unknown (Jepsen `:info`). The operation is then open to the end of the
    /// history whatever `return_ns` says.
    pub output: Option<O>,
    pub call_ns: u64,
    /// [`RETURN_NEVER`] when the operation never returned.
    pub return_ns: u64,
}

impl<I, O> Operation<I, O> {
    /// The return time the check uses: open operations return never.
    pub(crate) fn effective_return_ns(&self) -> u64 {
        match self.output {
            Some(_) => self.return_ns,
            None => RETURN_NEVER,
        }
    }
}

/// A history that cannot be checked as given.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum HistoryError {
    #[error("operation id {0} appears more than once")]
    DuplicateId(OpId),
    #[error("operation {id} returns at {return_ns} ns, before its call at {call_ns} ns")]
    ReturnBeforeCall { id: OpId, call_ns: u64, return_ns: u64 },
    #[error("the model's partition must name every operation exactly once: {0}")]
    BadPartition(String),
    #[error("a partition holds {0} operations, more than the checker's limit of 2^30")]
    TooLarge(usize),
}
