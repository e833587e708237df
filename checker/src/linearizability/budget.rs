//! The limits of one check, shared by the partitions that run concurrently.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use super::verdict::{CheckOptions, UnknownReason};

/// Why a partition's search stopped before deciding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stop {
    Limit(UnknownReason),
    /// A partition with a lower index was found illegal; this one's result no longer matters.
    Cancelled,
}

pub(crate) struct Budget {
    deadline: Option<Instant>,
    memory_limit_bytes: Option<usize>,
    memory_used_bytes: AtomicUsize,
    /// The lowest partition index found illegal so far, `usize::MAX` if none. Partitions above it
    /// stop; partitions below it go on, so the reported failure does not depend on thread timing.
    lowest_failure: AtomicUsize,
    first_failure_wins: bool,
}

impl Budget {
    pub(crate) fn new(options: &CheckOptions, started: Instant) -> Self {
        Budget {
            // A limit too large to represent as an instant is no limit.
            deadline: options.time_limit.and_then(|limit| started.checked_add(limit)),
            memory_limit_bytes: options.memory_limit_bytes,
            memory_used_bytes: AtomicUsize::new(0),
            lowest_failure: AtomicUsize::new(usize::MAX),
            first_failure_wins: options.first_failure_wins,
        }
    }

    pub(crate) fn report_failure(&self, partition: usize) {
        self.lowest_failure.fetch_min(partition, Ordering::Relaxed);
    }

    pub(crate) fn is_cancelled(&self, partition: usize) -> bool {
        let lowest = self.lowest_failure.load(Ordering::Relaxed);
        match self.first_failure_wins {
            true => lowest != usize::MAX && lowest != partition,
            false => lowest < partition,
        }
    }

    fn poll(&self, partition: usize) -> Result<(), Stop> {
        if self.is_cancelled(partition) {
            return Err(Stop::Cancelled);
        }
        if self.deadline.is_some_and(|deadline| Instant::now() >= deadline) {
            return Err(Stop::Limit(UnknownReason::TimeLimit));
        }
        self.charge(0)
    }

    fn charge(&self, bytes: usize) -> Result<(), Stop> {
        let used = self.memory_used_bytes.fetch_add(bytes, Ordering::Relaxed) + bytes;
        match self.memory_limit_bytes {
            Some(limit) if used > limit => Err(Stop::Limit(UnknownReason::MemoryLimit)),
            _ => Ok(()),
        }
    }
}

/// One partition's view of the budget. Reading the clock and touching shared atomics on every
/// search step would cost more than the step, so the meter batches: it polls every
/// `STEPS_PER_POLL` steps (well under a millisecond of search) and forwards memory growth in chunks.
pub(crate) struct Meter<'a> {
    budget: &'a Budget,
    partition: usize,
    steps_until_poll: u32,
    /// Bytes already forwarded to the budget.
    charged_bytes: usize,
    /// Growth forwarded at once: at most [`BYTES_PER_CHARGE`], and a sixteenth of the limit, so a
    /// small limit is not overshot by a whole chunk.
    chunk_bytes: usize,
}

const STEPS_PER_POLL: u32 = 1024;
const BYTES_PER_CHARGE: usize = 64 * 1024;

impl<'a> Meter<'a> {
    pub(crate) fn new(budget: &'a Budget, partition: usize) -> Self {
        let chunk_bytes =
            budget.memory_limit_bytes.map_or(BYTES_PER_CHARGE, |limit| (limit / 16).clamp(1, BYTES_PER_CHARGE));
        Meter { budget, partition, steps_until_poll: STEPS_PER_POLL, charged_bytes: 0, chunk_bytes }
    }

    #[inline]
    pub(crate) fn tick(&mut self) -> Result<(), Stop> {
        self.steps_until_poll -= 1;
        if self.steps_until_poll > 0 {
            return Ok(());
        }
        self.steps_until_poll = STEPS_PER_POLL;
        self.budget.poll(self.partition)
    }

    /// Gives this partition's memory back to the shared budget: its search has ended.
    pub(crate) fn release(&mut self) {
        self.budget.memory_used_bytes.fetch_sub(self.charged_bytes, Ordering::Relaxed);
        self.charged_bytes = 0;
    }

    /// Whether holding `bytes` would stay within the limit (nothing is charged).
    pub(crate) fn fits(&self, bytes: usize) -> bool {
        let growth = bytes.saturating_sub(self.charged_bytes);
        let used = self.budget.memory_used_bytes.load(Ordering::Relaxed);
        self.budget.memory_limit_bytes.is_none_or(|limit| used + growth <= limit)
    }

    /// Reports that this partition holds exactly `bytes` now: what a growth charged beyond it
    /// (the old copy of a table that was doubled) goes back to the budget.
    #[inline]
    pub(crate) fn settle(&mut self, bytes: usize) -> Result<(), Stop> {
        if bytes < self.charged_bytes {
            self.budget.memory_used_bytes.fetch_sub(self.charged_bytes - bytes, Ordering::Relaxed);
            self.charged_bytes = bytes;
            return Ok(());
        }
        self.hold(bytes)
    }

    /// Reports that this partition now holds `bytes` (which only grow during a search);
    /// forwards the growth to the shared budget in chunks.
    #[inline]
    pub(crate) fn hold(&mut self, bytes: usize) -> Result<(), Stop> {
        let growth = bytes.saturating_sub(self.charged_bytes);
        if growth < self.chunk_bytes {
            return Ok(());
        }
        self.charged_bytes += growth;
        self.budget.charge(growth)
    }
}
