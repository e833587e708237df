//! Time for code under the simulator, on the calling node's local clock (its `[[clock]]` offset
//! and rate, and the clock faults, apply), as a real process's timers run on its machine's clock.
//! Real tokio's timers do not work inside a simulation: use these (or `madsim::time` for true time).

use std::future::Future;
use std::time::Duration;

/// Sleeps `duration` of the node's local time.
pub async fn sleep(duration: Duration) {
    coordsim_sim::clock::registry::current().sleep(duration).await;
}

/// `future`, or `Err(Elapsed)` after `duration` of the node's local time.
pub async fn timeout<F: Future>(duration: Duration, future: F) -> Result<F::Output, Elapsed> {
    let future = std::pin::pin!(future);
    let timer = std::pin::pin!(sleep(duration));
    match futures::future::select(future, timer).await {
        futures::future::Either::Left((output, _)) => Ok(output),
        futures::future::Either::Right(_) => Err(Elapsed),
    }
}

/// [`timeout`] ran out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Elapsed;

impl std::fmt::Display for Elapsed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("deadline has elapsed")
    }
}

impl std::error::Error for Elapsed {}
