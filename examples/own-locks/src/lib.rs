//! Locks of a team's own, on plain etcd and ZooKeeper calls, as a user writes them: the service
//! grants nothing it could record, so each lock records its grant itself, as the belief
//! "I hold `lock` with fencing token T" (`Effects::holding`), and writes to the fenced store
//! with that token. coordsim's checkers take those beliefs as the lock's grants
//! (`mutual_exclusion`, `fencing`, `single_holder`, `progress`).
//!
//! - [`txn_mutex`]: etcd's concurrency mutex written out on `txn`, `get` and `watch`: a key per
//!   lease under a prefix, created in a transaction; the holder is the key with the lowest create
//!   revision, which is the fencing token.
//! - [`latch`]: Curator's LeaderLatch on zookeeper-client: an ephemeral sequential node per
//!   session; the leader is the lowest, each candidate watches its predecessor; the node's czxid
//!   is the fencing token.
//!
//! Each has a correct variant and a broken one whose bug a property names.

// One source, two worlds: the client crates, the timers and the tasks are coordsim's under the
// simulator and the real crates elsewhere.
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

pub mod latch;
pub mod txn_mutex;

use std::future::Future;

/// What a lock holder does outside the coordination service.
pub trait Effects {
    /// Writes `value` to the store with fencing token `token`; false if the store refused it or
    /// its outcome is unknown.
    fn write(&self, token: i64, value: String) -> impl Future<Output = bool>;
    /// The client now believes it holds `lock` with `token`: the grant, as the lock knows it.
    fn holding(&self, lock: &str, token: i64);
    /// The client stopped believing it holds `lock` with `token`.
    fn released(&self, lock: &str, token: i64, reason: &str);
}
