//! Public client-side bugs in coordination code, each written as its report describes it, against
//! the etcd-client or zookeeper-client API only, with the fix beside it. `tests/suite.rs` runs
//! every pair under coordsim: the broken variant fails the property that names its bug on at
//! least 90 % of 50 seeds, the fixed one meets every expectation on all 50.
//!
//! | module | report | property |
//! |---|---|---|
//! | [`waiter_session`] | etcd issue 19597 | `session_loss_notice` |
//! | [`watch_resume`] | etcd issue 11496 | `watch_continuity` |
//! | [`stale_unlock`] | etcd issue 22082 | `single_holder` |
//! | [`lock_holder_partitioned`] | etcd issue 10811 | `single_holder` |
//! | [`watchdog`] | Redisson issues 3521 and 1626 | `progress` |
//! | [`lease_duration`] | Kubernetes issue 47671 | `single_holder` |
//! | [`zombie_controller`] | KAFKA-3083 | `mutual_exclusion` |
//! | [`latch_suspended`] | CURATOR-460 | `single_holder` |

#[cfg(madsim)]
pub use coordsim::etcd as etcd_client;
#[cfg(madsim)]
pub use coordsim::zookeeper as zookeeper_client;
#[cfg(madsim)]
use coordsim::{task, time};
#[cfg(not(madsim))]
pub use etcd_client;
#[cfg(not(madsim))]
use tokio::{task, time};
#[cfg(not(madsim))]
pub use zookeeper_client;

pub mod latch_suspended;
pub mod lease_duration;
pub mod lock_holder_partitioned;
pub mod stale_unlock;
pub mod waiter_session;
pub mod watch_resume;
pub mod watchdog;
pub mod zombie_controller;

use std::future::Future;

/// What a client does outside the coordination service: the protected store, and what it
/// believes.
pub trait Effects: Clone + 'static {
    /// Writes `value` to the store with fencing token `token`; false if refused or unknown.
    fn write(&self, token: i64, value: String) -> impl Future<Output = bool>;
    /// The client now believes it holds (or leads) `lock` with `token`.
    fn holding(&self, lock: &str, token: i64);
    /// The client stopped believing it holds `lock` with `token`.
    fn released(&self, lock: &str, token: i64, reason: &str);
}

/// `a`'s output, or `None` if `b` finishes first (dropping `a`).
pub async fn first_of<A: Future, B: Future>(a: A, b: B) -> Option<A::Output> {
    let (a, b) = (std::pin::pin!(a), std::pin::pin!(b));
    match futures::future::select(a, b).await {
        futures::future::Either::Left((output, _)) => Some(output),
        futures::future::Either::Right(_) => None,
    }
}

/// Keeps `lease` alive with a keepalive every second, for as long as the task runs (the answers
/// are read and dropped: callers that care about them keep their own loop).
pub async fn renew_every_second(mut client: etcd_client::Client, lease: i64) {
    let Ok((mut keeper, mut answers)) = client.lease_keep_alive(lease).await else { return };
    loop {
        let _ = keeper.keep_alive().await;
        let _ = time::timeout(std::time::Duration::from_secs(1), answers.message()).await;
        time::sleep(std::time::Duration::from_secs(1)).await;
    }
}

/// Runs `session` on one ZooKeeper session after another, for ever: connect with
/// `session_timeout`, run it, close the session, wait a second.
pub async fn zookeeper_sessions<F, Fut>(cluster: &str, session_timeout: std::time::Duration, mut session: F)
where
    F: FnMut(zookeeper_client::Client) -> Fut,
    Fut: Future<Output = ()>,
{
    loop {
        let connected =
            zookeeper_client::Client::connector().with_session_timeout(session_timeout).connect(cluster).await;
        if let Ok(zk) = connected {
            session(zk.clone()).await;
            zk.close();
        }
        time::sleep(std::time::Duration::from_secs(1)).await;
    }
}
