//! A pool of workers that share partitions of some work through ZooKeeper: each worker registers
//! an ephemeral node under `/pool/members`, the worker with the lowest election node leads, and
//! the leader writes the assignment of partitions to members into `/pool/assignment`. Written
//! against the zookeeper-client crate's API (`pool.rs`); under the simulator one re-export below
//! switches it to coordsim's. What a worker owns goes through [`Effects`], so a test can record it.
//!
//! Two variants of how a worker decides it owns a partition:
//! - [`Variant::OwnsWhatItReads`]: it owns what the assignment it last read gives it. That read is
//!   its own server's view, and while the worker is cut off it reads nothing new: after the
//!   ensemble expires its session the leader gives its partitions to others, and it goes on
//!   processing them (the class of Helix and Kafka-consumer bugs where an instance acts on a
//!   stale assignment).
//! - [`Variant::ClaimsBeforeOwning`]: a partition is owned only through an ephemeral claim node
//!   `/pool/claims/<p>` of the worker's live session, taken after the previous owner's claim is
//!   gone; the worker stops processing as soon as its session is no longer connected (Curator's
//!   SUSPENDED policy), which zookeeper-client says 2/5 of the session timeout after it last
//!   heard from a server, before the ensemble can expire the session and its claims. It watches
//!   the session state *while* it works: the crate holds a request made while disconnected until
//!   it connects again or expires the session itself (7/5 of the timeout), so a worker that
//!   looks at its state only between requests went on owning past the ensemble's expiry. That
//!   first fix passed in the simulator while its client failed requests at once, and failed on
//!   real ZooKeeper (`real/tests/worker_pool_on_real_zookeeper.rs`).

// One source, two worlds: `pool.rs` names `super::zookeeper_client`.
#[cfg(madsim)]
pub use coordsim::zookeeper as zookeeper_client;
#[cfg(not(madsim))]
pub use zookeeper_client;

mod pool;

pub use pool::*;
