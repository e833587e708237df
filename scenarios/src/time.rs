//! Time for code under the simulator, with `tokio::time`'s names and shapes (`sleep`,
//! `sleep_until`, `timeout`, `timeout_at`, `interval`, `interval_at`, `Instant`, `Sleep`,
//! `Interval`, `MissedTickBehavior`, `error::Elapsed`), so that one switch covers timers too:
//!
//! ```ignore
//! #[cfg(madsim)]
//! use coordsim::time;
//! #[cfg(not(madsim))]
//! use tokio::time;
//! ```
//!
//! Every timer and every [`Instant`] reads the calling node's *local monotonic* clock, as a real
//! process's timers read its machine's `CLOCK_MONOTONIC`: a `[[clock]]` rate and `clock-rate`
//! faults make it run fast or slow; wall-clock jumps (`clock-jump`, `clock-strobe`) do not move it
//! (they move [`crate::testbed::Ctx::wall_now_ns`]). Real tokio's timers panic inside a simulation.
//! An `Instant` belongs to the node that read it: comparing readings of two nodes compares two
//! unrelated clocks, as it would on two machines.

use std::future::Future;
use std::ops::{Add, AddAssign, Sub, SubAssign};
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use coordsim_sim::clock::LocalTime;
use coordsim_sim::node;

/// A reading of the node's monotonic clock (ns since the run began by that clock, offset by its
/// `[[clock]]` offset), like `tokio::time::Instant`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Instant(LocalTime);

impl Instant {
    /// The node's monotonic clock now.
    pub fn now() -> Instant {
        Instant(node::monotonic_now())
    }

    /// Time from `earlier` to `self`; zero if `earlier` is later (as tokio's, which saturates).
    pub fn duration_since(&self, earlier: Instant) -> Duration {
        earlier.0.until(self.0)
    }

    /// Time from `earlier` to `self`, `None` if `earlier` is later.
    pub fn checked_duration_since(&self, earlier: Instant) -> Option<Duration> {
        (earlier <= *self).then(|| earlier.0.until(self.0))
    }

    /// Time from `earlier` to `self`, zero if `earlier` is later.
    pub fn saturating_duration_since(&self, earlier: Instant) -> Duration {
        earlier.0.until(self.0)
    }

    /// Time since `self` by the node's monotonic clock.
    pub fn elapsed(&self) -> Duration {
        Instant::now().duration_since(*self)
    }

    pub fn checked_add(&self, duration: Duration) -> Option<Instant> {
        let ns = i64::try_from(duration.as_nanos()).ok()?;
        self.0.0.checked_add(ns).map(|t| Instant(LocalTime(t)))
    }

    pub fn checked_sub(&self, duration: Duration) -> Option<Instant> {
        let ns = i64::try_from(duration.as_nanos()).ok()?;
        self.0.0.checked_sub(ns).map(|t| Instant(LocalTime(t)))
    }

    /// The clock's reading in ns (its origin is the run's start by this node's clock).
    pub fn as_local_ns(&self) -> i64 {
        self.0.0
    }
}

impl Add<Duration> for Instant {
    type Output = Instant;
    fn add(self, rhs: Duration) -> Instant {
        self.checked_add(rhs).expect("overflow when adding a duration to an instant")
    }
}

impl AddAssign<Duration> for Instant {
    fn add_assign(&mut self, rhs: Duration) {
        *self = *self + rhs;
    }
}

impl Sub<Duration> for Instant {
    type Output = Instant;
    fn sub(self, rhs: Duration) -> Instant {
        self.checked_sub(rhs).expect("overflow when subtracting a duration from an instant")
    }
}

impl SubAssign<Duration> for Instant {
    fn sub_assign(&mut self, rhs: Duration) {
        *self = *self - rhs;
    }
}

impl Sub<Instant> for Instant {
    type Output = Duration;
    fn sub(self, rhs: Instant) -> Duration {
        self.duration_since(rhs)
    }
}

/// The future [`sleep`] and [`sleep_until`] return: ready once the node's monotonic clock reads
/// its deadline.
#[must_use = "futures do nothing unless you `.await` or poll them"]
#[derive(Debug)]
pub struct Sleep {
    deadline: Instant,
    timer: madsim::time::Sleep,
}

impl Sleep {
    fn new(deadline: Instant) -> Sleep {
        Sleep { deadline, timer: node::clock().sleep_until(deadline.0) }
    }

    /// When the sleep ends, by the node's monotonic clock.
    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    /// Whether the deadline has passed.
    pub fn is_elapsed(&self) -> bool {
        self.timer.is_elapsed()
    }

    /// Moves the deadline (earlier or later), as tokio's `Sleep::reset`.
    pub fn reset(mut self: Pin<&mut Self>, deadline: Instant) {
        *self = Sleep::new(deadline);
    }
}

impl Future for Sleep {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        Pin::new(&mut self.timer).poll(cx)
    }
}

/// Sleeps `duration` of the node's monotonic clock.
pub fn sleep(duration: Duration) -> Sleep {
    Sleep::new(Instant::now() + duration)
}

/// Sleeps until the node's monotonic clock reads `deadline`.
pub fn sleep_until(deadline: Instant) -> Sleep {
    Sleep::new(deadline)
}

/// `future`'s output, or `Err(Elapsed)` once `duration` of the node's monotonic clock has passed;
/// the future is dropped then, as with tokio.
pub async fn timeout<F: Future>(duration: Duration, future: F) -> Result<F::Output, error::Elapsed> {
    timeout_at(Instant::now() + duration, future).await
}

/// [`timeout`] with a deadline on the node's monotonic clock.
pub async fn timeout_at<F: Future>(deadline: Instant, future: F) -> Result<F::Output, error::Elapsed> {
    let future = std::pin::pin!(future);
    let timer = sleep_until(deadline);
    match futures::future::select(future, timer).await {
        futures::future::Either::Left((output, _)) => Ok(output),
        futures::future::Either::Right(_) => Err(error::Elapsed(())),
    }
}

/// Errors of the timers, as `tokio::time::error`.
pub mod error {
    /// [`super::timeout`] ran out.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct Elapsed(pub(super) ());

    impl std::fmt::Display for Elapsed {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("deadline has elapsed")
        }
    }

    impl std::error::Error for Elapsed {}
}

pub use error::Elapsed;

/// What an [`Interval`] does with ticks it missed (the task was busy, or paused), as tokio's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum MissedTickBehavior {
    /// Fire the missed ticks at once, one per `tick()`, until caught up (tokio's default).
    #[default]
    Burst,
    /// Start the period again from the late tick.
    Delay,
    /// Drop the missed ticks; the next falls on the original schedule.
    Skip,
}

/// Ticks every `period` of the node's monotonic clock, the first at once.
pub fn interval(period: Duration) -> Interval {
    interval_at(Instant::now(), period)
}

/// Ticks at `start` and every `period` after it. Panics if `period` is zero, as tokio's.
pub fn interval_at(start: Instant, period: Duration) -> Interval {
    assert!(period > Duration::ZERO, "`period` must be non-zero.");
    Interval { next: start, period, missed: MissedTickBehavior::Burst }
}

/// A periodic timer on the node's monotonic clock, like `tokio::time::Interval`.
#[derive(Debug)]
pub struct Interval {
    next: Instant,
    period: Duration,
    missed: MissedTickBehavior,
}

impl Interval {
    /// Waits for the next tick and returns its scheduled instant.
    pub async fn tick(&mut self) -> Instant {
        let scheduled = self.next;
        sleep_until(scheduled).await;
        let now = Instant::now();
        self.next = match self.missed {
            MissedTickBehavior::Burst => scheduled + self.period,
            MissedTickBehavior::Delay => now + self.period,
            MissedTickBehavior::Skip if now < scheduled + self.period => scheduled + self.period,
            MissedTickBehavior::Skip => {
                // The first tick of the original schedule after now.
                let period_ns = self.period.as_nanos();
                let late_ns = now.duration_since(scheduled).as_nanos();
                let periods = late_ns / period_ns + 1;
                scheduled + Duration::from_nanos((periods * period_ns).min(u64::MAX as u128) as u64)
            }
        };
        scheduled
    }

    /// The next tick a full period from now.
    pub fn reset(&mut self) {
        self.next = Instant::now() + self.period;
    }

    pub fn period(&self) -> Duration {
        self.period
    }

    pub fn missed_tick_behavior(&self) -> MissedTickBehavior {
        self.missed
    }

    pub fn set_missed_tick_behavior(&mut self, behavior: MissedTickBehavior) {
        self.missed = behavior;
    }
}
