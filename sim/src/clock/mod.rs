//! Per-node clocks. Everything a node times locally — lease deadlines on the leader, keepalive
//! intervals, session deadlines on clients, Raft's election and heartbeat timers (through the
//! openraft runtime) — reads its node's [`Clock`]; only the recorder and the checkers read true
//! time.
//!
//! A clock is `local = offset + rate × true time`, with scheduled jumps (forward or backward) and
//! rate changes ([`ClockSchedule`]). Rates are bounded to [0.1×, 10×]; between jumps a clock is
//! monotonic. openraft sees a monotonic view of it: after a backward jump its time stands still
//! until the clock catches up, as a stalled monotonic clock would ([`registry`]).

pub mod registry;
mod schedule;

use std::sync::Arc;
use std::time::{Duration, Instant};

pub use schedule::{ClockChange, ClockSchedule, RATE_MAX_PPM, RATE_MIN_PPM, RATE_ONE_PPM};

/// A node's local time, ns since the start of the run by that node's clock (negative for a
/// clock set behind).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LocalTime(pub i64);

impl LocalTime {
    pub fn plus_ms(self, ms: u64) -> LocalTime {
        self.plus(Duration::from_millis(ms))
    }

    pub fn plus(self, duration: Duration) -> LocalTime {
        LocalTime(self.0.saturating_add(duration.as_nanos().min(i64::MAX as u128) as i64))
    }

    /// Time from `self` until `later`, zero if `later` is not after `self`.
    pub fn until(self, later: LocalTime) -> Duration {
        Duration::from_nanos(later.0.saturating_sub(self.0).max(0) as u64)
    }

    /// Whole milliseconds from `self` until `later`, 0 if `later` is not after `self`.
    pub fn ms_until(self, later: LocalTime) -> u64 {
        self.until(later).as_millis() as u64
    }
}

/// One node's clock: its schedule, anchored at the run's start.
#[derive(Clone, Debug)]
pub struct Clock {
    /// The simulated instant at which the run started (true time 0).
    epoch: Instant,
    schedule: Arc<ClockSchedule>,
}

impl Clock {
    pub fn new(epoch: Instant, schedule: ClockSchedule) -> Self {
        Clock { epoch, schedule: Arc::new(schedule) }
    }

    /// A clock at true time.
    pub fn true_time(epoch: Instant) -> Self {
        Clock::new(epoch, ClockSchedule::true_time())
    }

    fn true_ns(&self) -> u64 {
        self.epoch.elapsed().as_nanos() as u64
    }

    pub fn now(&self) -> LocalTime {
        LocalTime(self.schedule.local_at(self.true_ns()))
    }

    /// The simulated (true) instant at which this clock first reads `local` or later.
    pub fn deadline(&self, local: LocalTime) -> Instant {
        self.epoch + Duration::from_nanos(self.schedule.true_when(self.true_ns(), local.0))
    }

    /// Sleeps until this clock reads `local`.
    pub fn sleep_until(&self, local: LocalTime) -> madsim::time::Sleep {
        madsim::time::sleep_until(self.deadline(local))
    }

    /// Sleeps for `duration` of this clock's time.
    pub fn sleep(&self, duration: Duration) -> madsim::time::Sleep {
        self.sleep_until(self.now().plus(duration))
    }

    pub fn schedule(&self) -> &ClockSchedule {
        &self.schedule
    }
}
