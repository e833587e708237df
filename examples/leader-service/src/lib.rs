//! A small service that keeps one leader among its replicas through etcd's Election API, and
//! whose leader writes to a fenced store with its term as the fencing token.
//!
//! It is written against the etcd-client crate's API (`service.rs`); what differs between the
//! simulator and a real cluster is the one re-export below. What the service does to the outside world
//! (the store, its own clock, what it believes) goes through [`Effects`], so a test can record it.
//!
//! Two variants of the leader's loop:
//! - [`Variant::IgnoresLeaseLoss`]: the leader keeps acting until a write is refused. When it is
//!   cut off from etcd its lease expires on the servers, another replica is elected, and for a
//!   while two replicas believe they lead (etcd's docs: "a leader may still believe it is the
//!   leader after its lease has expired"; Kleppmann, "How to do distributed locking", 2016).
//! - [`Variant::StepsDownAtDeadline`]: the leader stops acting once its lease may have expired
//!   by its own clock: one TTL minus a margin after sending the last keepalive that was answered.
//!   The servers cannot expire the lease sooner than one TTL after receiving that keepalive.

// One source, two worlds: `service.rs` names `super::etcd_client`.
#[cfg(madsim)]
pub use coordsim::etcd as etcd_client;
#[cfg(not(madsim))]
pub use etcd_client;

mod service;

pub use service::*;
