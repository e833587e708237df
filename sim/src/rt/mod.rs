//! openraft's [`AsyncRuntime`] on the madsim simulator.
//!
//! With `default-features = false`, openraft 0.10 reaches tasks, time, randomness and channels
//! only through this trait, so implementing it on madsim puts the whole of Raft under the
//! simulator's control. Each choice below avoids a measured determinism trap (FACTS.md):
//! - `Watch` is ours, built on one plain `Notify`: tokio's `sync::watch` wakes through one of 8
//!   notify shards picked by a thread-local RNG seeded from a process-global counter, so a second
//!   simulation in the same process diverged.
//! - `spawn_blocking` runs the closure inline: the trait's default starts an OS thread, which
//!   madsim forbids inside a simulation.
//! - The RNG draws its seed from madsim's global RNG, so it follows the simulation seed (and
//!   madsim's determinism check sees every draw).
//! - Time is the running node's local clock ([`NodeInstant`], `crate::clock`), so per-node clock
//!   skew reaches Raft's timers; sleeps convert a local deadline into the true instant at which
//!   the node's clock reaches it.
//! - Mpsc, Oneshot and Mutex are openraft-rt-tokio's wrappers of tokio's `sync` types, which hold
//!   no RNG and need no reactor.

mod instant;
mod timeout;
mod watch;

use std::future::Future;
use std::io;
use std::time::Duration;

use openraft_rt::{AsyncRuntime, OptionalSend};

use crate::node;
use rand::SeedableRng;

pub use instant::NodeInstant;
pub use timeout::Timeout;
pub use watch::{SimWatch, SimWatchReceiver, SimWatchSender};

/// openraft's runtime on madsim. Inside a simulation openraft only calls the associated
/// functions; an instance (`new`, `block_on`) is for running a future outside one.
pub struct MadsimRuntime {
    runtime: madsim::runtime::Runtime,
}

impl std::fmt::Debug for MadsimRuntime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MadsimRuntime")
    }
}

impl AsyncRuntime for MadsimRuntime {
    type JoinError = madsim::task::JoinError;
    type JoinHandle<T: OptionalSend + 'static> = madsim::task::JoinHandle<T>;
    type Sleep = madsim::time::Sleep;
    type Instant = NodeInstant;
    type TimeoutError = madsim::time::error::Elapsed;
    type Timeout<R, T: Future<Output = R> + OptionalSend> = Timeout<T>;
    type ThreadLocalRng = rand::rngs::SmallRng;

    fn spawn<T>(future: T) -> Self::JoinHandle<T::Output>
    where
        T: Future + OptionalSend + 'static,
        T::Output: OptionalSend + 'static,
    {
        madsim::task::spawn(future)
    }

    fn sleep(duration: Duration) -> Self::Sleep {
        Self::sleep_until(<NodeInstant as openraft_rt::Instant>::now() + duration)
    }

    fn sleep_until(deadline: Self::Instant) -> Self::Sleep {
        node::clock().sleep_until(deadline.0)
    }

    fn timeout<R, F: Future<Output = R> + OptionalSend>(duration: Duration, future: F) -> Self::Timeout<R, F> {
        Timeout::new(future, Self::sleep(duration))
    }

    fn timeout_at<R, F: Future<Output = R> + OptionalSend>(deadline: Self::Instant, future: F) -> Self::Timeout<R, F> {
        Timeout::new(future, Self::sleep_until(deadline))
    }

    fn is_panic(_join_error: &Self::JoinError) -> bool {
        // madsim does not report panics through the join handle (a panic ends the simulation).
        false
    }

    fn thread_rng() -> Self::ThreadLocalRng {
        use madsim::rand::Rng as _;
        let seed: u64 = madsim::rand::thread_rng().r#gen();
        rand::rngs::SmallRng::seed_from_u64(seed)
    }

    type Mpsc = openraft_rt_tokio::TokioMpsc;
    type Watch = SimWatch;
    type Oneshot = openraft_rt_tokio::TokioOneshot;
    type Mutex<T: OptionalSend + 'static> = openraft_rt_tokio::TokioMutex<T>;

    fn new(_threads: usize) -> Self {
        MadsimRuntime { runtime: madsim::runtime::Runtime::new() }
    }

    fn block_on<F, T>(&mut self, future: F) -> T
    where
        F: Future<Output = T>,
    {
        self.runtime.block_on(future)
    }

    fn spawn_blocking<F, T>(f: F) -> impl Future<Output = Result<T, io::Error>> + Send
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        // No OS threads inside a simulation: run it inline on the simulated task.
        async move { Ok(f()) }
    }
}

#[cfg(test)]
mod tests {
    use openraft_rt::AsyncRuntime;
    use openraft_rt::testing::Suite;

    use super::MadsimRuntime;

    /// openraft-rt's conformance suite for runtime implementations: spawn, sleep, timeouts,
    /// biased selects, mpsc, oneshot, watch and mutex semantics, run inside a simulation.
    #[test]
    fn madsim_runtime_passes_openraft_conformance_suite() {
        let mut runtime = MadsimRuntime::new(1);
        Suite::<MadsimRuntime>::test_all_on(&mut runtime);
    }
}
