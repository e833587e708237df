//! What a check returns, and the limits it runs under.

use std::fmt;
use std::time::Duration;

use super::operation::OpId;

/// Limits and execution mode of one check.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckOptions {
    /// Wall-clock budget for the whole check; past it the verdict is `Unknown`.
    pub time_limit: Option<Duration>,
    /// Budget for the searches of all partitions together: their caches, interned states, entry
    /// lists and undo stacks, as counted from their sizes and capacities (allocator slack and the
    /// history itself not included), charged before a table grows so that the peak stays under
    /// it; past it the verdict is `Unknown`.
    pub memory_limit_bytes: Option<usize>,
    /// Check partitions on rayon's thread pool. `false` checks them one after the other on the
    /// calling thread (benchmarks, single-core figures).
    pub parallel: bool,
    /// Which failure ends the check. With `false` (deterministic), a partition found illegal stops
    /// only the partitions after it, so the counterexample is always the lowest failing
    /// partition's, whatever the thread timing, but a hard partition before it still runs to its
    /// end or its limit. With `true` (Porcupine's choice), the first failure found stops every
    /// other partition: a history with one bad key among hard ones fails as soon as that key is
    /// searched, and when several keys fail, which one's counterexample is reported may differ
    /// between runs. The verdict (illegal or not) is the same either way.
    pub first_failure_wins: bool,
}

impl Default for CheckOptions {
    /// 60 s and 1 GiB: far above what the Jepsen etcd histories need (milliseconds, kilobytes), low
    /// enough that a pathological history ends with `Unknown` instead of exhausting the machine.
    fn default() -> Self {
        CheckOptions {
            time_limit: Some(Duration::from_secs(60)),
            memory_limit_bytes: Some(1 << 30),
            parallel: true,
            first_failure_wins: false,
        }
    }
}

/// The outcome of a check.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Some order of the operations respects real time and the model.
    Ok,
    /// No order does; the counterexample is from the lowest-indexed failing partition (or, with
    /// [`CheckOptions::first_failure_wins`], from the first one found).
    Illegal(Counterexample),
    /// The search stopped before it could decide.
    Unknown { reason: UnknownReason },
}

impl Verdict {
    pub fn is_ok(&self) -> bool {
        matches!(self, Verdict::Ok)
    }

    pub fn is_illegal(&self) -> bool {
        matches!(self, Verdict::Illegal(_))
    }

    pub fn is_unknown(&self) -> bool {
        matches!(self, Verdict::Unknown { .. })
    }
}

/// Why a check ended without a verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnknownReason {
    TimeLimit,
    MemoryLimit,
}

impl fmt::Display for UnknownReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UnknownReason::TimeLimit => f.write_str("time limit reached"),
            UnknownReason::MemoryLimit => f.write_str("memory limit reached"),
        }
    }
}

/// Evidence for an `Illegal` verdict, from one partition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Counterexample {
    /// Index of the failing partition (partitions are ordered by their smallest operation id).
    pub partition: usize,
    /// The longest sequence of operations the search could linearize, in linearization order.
    pub prefix: Vec<OpId>,
    /// The model state after `prefix`.
    pub state_after_prefix: String,
    /// The operations that could go next in real time after `prefix` but that the model rejects in
    /// `state_after_prefix`, sorted by id.
    pub stuck: Vec<StuckOperation>,
}

/// An operation that could not be placed after the longest prefix.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StuckOperation {
    pub id: OpId,
    pub client: u64,
    pub description: String,
}
