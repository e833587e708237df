//! Per-node clocks. A node has two, as a real machine does ([`NodeSchedule`]): a wall clock and a
//! monotonic clock. Each timer of the simulated services reads the one its real counterpart reads,
//! and every one of them reads the monotonic clock:
//! - etcd's lessor keeps a lease's expiry as a Go `time.Time` from `time.Now()` and tests it with
//!   `time.Until` (server/lease/lessor.go, `Lease.Remaining`); Go compares such times by their
//!   monotonic reading (the `time` package's "Monotonic Clocks"), so a wall-clock step does not
//!   move an etcd lease. Raft's election and heartbeat ticks are Go tickers, monotonic too.
//! - ZooKeeper's session tracker and its client's ping and read timeouts read
//!   `Time.currentElapsedTime()`, which is `System.nanoTime()` (ZOOKEEPER-1366).
//! - etcd's clientv3 keeps a keepalive's deadline with `time.Now()` and tests it against
//!   `time.Now()` (client/v3/lease.go, `deadlineLoop`): monotonic.
//! - tokio's and madsim's `sleep` and `Instant` are monotonic.
//!
//! What a wall-clock jump breaks is what reads wall time: a user's code that reads
//! [`Clock::wall_now`], a recipe whose client deadline is configured on the wall clock
//! (`[lock] client_deadline_clock`), and Redis-style key expiry (`mstime()`, redis/redis#416).
//!
//! A clock is `local = offset + rate × true time`, with scheduled jumps (forward or backward) and
//! rate changes ([`ClockSchedule`]). Rates are bounded to [0.1×, 10×]. Only the recorder and the
//! checkers read true time.

use std::sync::Arc;
use std::time::{Duration, Instant};

pub use coordsim_core::clock::{
    ClockChange, ClockKind, ClockSchedule, LocalTime, NodeSchedule, RATE_MAX_PPM, RATE_MIN_PPM, RATE_ONE_PPM,
};

/// One node's two clocks, anchored at the run's start. `now`, `sleep` and `sleep_until` use the
/// monotonic clock, as `Instant` and tokio do; `wall_now` reads the wall clock.
#[derive(Clone, Debug)]
pub struct Clock {
    /// The simulated instant at which the run started (true time 0).
    epoch: Instant,
    schedule: Arc<NodeSchedule>,
}

impl Clock {
    pub fn new(epoch: Instant, schedule: NodeSchedule) -> Self {
        Clock { epoch, schedule: Arc::new(schedule) }
    }

    /// Both clocks at true time.
    pub fn true_time(epoch: Instant) -> Self {
        Clock::new(epoch, NodeSchedule::true_time())
    }

    fn true_ns(&self) -> u64 {
        self.epoch.elapsed().as_nanos() as u64
    }

    fn of(&self, kind: ClockKind) -> &ClockSchedule {
        match kind {
            ClockKind::Wall => &self.schedule.wall,
            ClockKind::Monotonic => &self.schedule.monotonic,
        }
    }

    /// The monotonic clock's reading.
    pub fn now(&self) -> LocalTime {
        self.read(ClockKind::Monotonic)
    }

    /// The wall clock's reading.
    pub fn wall_now(&self) -> LocalTime {
        self.read(ClockKind::Wall)
    }

    pub fn read(&self, kind: ClockKind) -> LocalTime {
        LocalTime(self.of(kind).local_at(self.true_ns()))
    }

    /// The simulated (true) instant at which the `kind` clock first reads `local` or later.
    pub fn deadline_on(&self, kind: ClockKind, local: LocalTime) -> Instant {
        self.epoch + Duration::from_nanos(self.of(kind).true_when(self.true_ns(), local.0))
    }

    /// Sleeps until the monotonic clock reads `local`.
    pub fn sleep_until(&self, local: LocalTime) -> madsim::time::Sleep {
        self.sleep_until_on(ClockKind::Monotonic, local)
    }

    /// Sleeps until the `kind` clock reads `local`.
    pub fn sleep_until_on(&self, kind: ClockKind, local: LocalTime) -> madsim::time::Sleep {
        madsim::time::sleep_until(self.deadline_on(kind, local))
    }

    /// Sleeps for `duration` of the monotonic clock's time.
    pub fn sleep(&self, duration: Duration) -> madsim::time::Sleep {
        self.sleep_until(self.now().plus(duration))
    }

    pub fn schedule(&self) -> &NodeSchedule {
        &self.schedule
    }
}
