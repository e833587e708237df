//! A node's clocks as pure functions of true time: the wall and monotonic schedules
//! ([`NodeSchedule`]), readings ([`LocalTime`]) and which clock a timer reads ([`ClockKind`]).
//! The simulator's `Clock` (in `coordsim_sim::clock`) reads them against madsim's time.

mod schedule;

use std::time::Duration;

pub use schedule::{ClockChange, ClockSchedule, NodeSchedule, RATE_MAX_PPM, RATE_MIN_PPM, RATE_ONE_PPM};

/// Which of a node's clocks a reading or a timer uses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ClockKind {
    /// Steps with every jump: `CLOCK_REALTIME`, `SystemTime::now`, `System.currentTimeMillis`.
    Wall,
    /// Never jumps; follows rate changes: `CLOCK_MONOTONIC`, `Instant::now`, `System.nanoTime`.
    #[default]
    Monotonic,
}

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
