//! A node's local clock: everything a node times locally (lease deadlines on the leader,
//! keepalive intervals, retry backoff) reads this, never madsim's true time directly.
//!
//! Today every local clock runs at true speed from the start of the run; per-node offset,
//! rate and jumps (issue 4) plug in here, and only here, without touching the callers.

use std::time::{Duration, Instant};

/// Local time of one node, as nanoseconds since the start of the run by that node's clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LocalTime(pub u64);

impl LocalTime {
    pub fn plus_ms(self, ms: u64) -> LocalTime {
        LocalTime(self.0.saturating_add(ms.saturating_mul(1_000_000)))
    }

    /// Milliseconds from `self` until `later`, 0 if `later` is not after `self`.
    pub fn ms_until(self, later: LocalTime) -> u64 {
        later.0.saturating_sub(self.0) / 1_000_000
    }
}

#[derive(Clone, Debug)]
pub struct Clock {
    /// The instant (madsim's simulated `Instant`) at which the run started.
    epoch: Instant,
}

impl Clock {
    pub fn new(epoch: Instant) -> Self {
        Clock { epoch }
    }

    pub fn now(&self) -> LocalTime {
        LocalTime(self.epoch.elapsed().as_nanos() as u64)
    }

    /// Sleeps for `duration` of this node's local time.
    pub async fn sleep(&self, duration: Duration) {
        madsim::time::sleep(duration).await;
    }
}
