//! Safety properties checked on a history, one module per property.
//!
//! Each checker reads only the history (never the service's code) and owns one guarantee.

mod beliefs;
mod clocks;
mod dual_ownership;
mod durability;
mod fairness;
mod fencing;
mod grant_live_lease;
mod grants;
mod herd;
mod kv_ops;
mod leaders;
mod lease_liveness;
mod lease_safety;
mod leases;
pub mod linearizable;
mod locks;
mod mutual_exclusion;
mod progress;
mod session_loss_notice;
mod single_holder;
mod spurious_expiry;
mod watch;
mod watch_continuity;

use serde::{Deserialize, Serialize};

use crate::history::History;
use crate::verdict::PropertyReport;

pub use beliefs::{Belief, Overlap, beliefs, overlaps};
pub use clocks::Clocks;
pub use grants::{Grant, GrantSource, grants, service_locks};
pub use kv_ops::{KvOperation, KvOutcome, kv_operations};
pub use leaders::{Leadership, Promotion};
pub use lease_liveness::{CHECKPOINT_STALENESS_MS, COMMIT_ALLOWANCE_MS, FAULT_RECOVERY_MS};
pub use leases::{LeaseRecord, Renewal, leases};
pub use linearizable::{MEMORY_LIMIT_BYTES as LINEARIZABLE_MEMORY_LIMIT_BYTES, TIME_LIMIT as LINEARIZABLE_TIME_LIMIT};
pub use locks::{LockRequest, lock_requests};

/// The properties a scenario can state an expectation about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Property {
    /// At the protected resource, ownership moves only forward in grant order: no write is
    /// accepted from a holder whose grant is older than that of a write already accepted.
    MutualExclusion,
    /// The tokens the resource accepts never go backwards.
    Fencing,
    /// At every instant of true time at most one client believes it holds the lock.
    SingleHolder,
    /// No lease expires while its owner renewed it within its TTL (true time); no keepalive is
    /// acknowledged for an expired lease.
    LeaseSafety,
    /// Once the faults stop, the lock is granted again (a liveness check of the fault-free tail).
    Progress,
    /// Intervals in which two clients both believed they held the same lock. Informational:
    /// under process pauses they are expected, which is why fencing is needed; never fails.
    DualOwnership,
    /// A lease whose owner stopped renewing it expires within its TTL plus a stated bound after
    /// the last renewal that may have reached the server, counting the extension each leader
    /// change gives by design (docs/cases/04).
    LeaseLiveness,
    /// A lock is granted only to a client whose lease is still alive (docs/cases/02).
    GrantLiveLease,
    /// The key-value operations have a linearization (Herlihy & Wing), checked per key.
    Linearizable,
    /// Each watch stream delivers the acknowledged writes in its range in revision order, once,
    /// without gaps, a revision's changes together, with progress notifications never ahead of
    /// the changes, or ends with a compaction error (docs/cases/05).
    Watch,
    /// A read after a server crash never returns a value older than the newest write acknowledged
    /// before the read began: acknowledged writes survive crashes.
    Durability,
    /// One release of a lock wakes at most one waiter (docs/cases/10).
    Herd,
    /// Lock grants follow the order of the requests (first come, first served).
    Fairness,
    /// No lease expires while its owner runs and no fault has cut it or the servers off: a lease
    /// lost to latency or packet loss alone means the TTL is too short for the network.
    SpuriousExpiry,
    /// A consumer that re-creates its watch goes on from where it had got to (or re-reads the
    /// range first): no acknowledged write falls between two of its streams unseen.
    WatchContinuity,
    /// A lock request waiting under a lease that the service expires ends within the lease's TTL
    /// of the expiry (after the faults active then): the waiter learns its session is gone.
    SessionLossNotice,
}

impl Property {
    /// The properties a history recorded outside the simulator can decide: those read from what
    /// clients and the resource record (for the key-value workload, the operations' values and
    /// the revisions of their answers). `lease_safety`, `lease_liveness`, `grant_live_lease`,
    /// `spurious_expiry` and `session_loss_notice` need the leader's own records of lease
    /// expiries; `watch` and `watch_continuity` need watchers, which real runs do not have yet.
    pub const FROM_OUTSIDE: [Property; 9] = [
        Property::MutualExclusion,
        Property::Fencing,
        Property::SingleHolder,
        Property::DualOwnership,
        Property::Progress,
        Property::Herd,
        Property::Fairness,
        Property::Linearizable,
        Property::Durability,
    ];

    pub const ALL: [Property; 16] = [
        Property::MutualExclusion,
        Property::Fencing,
        Property::SingleHolder,
        Property::LeaseSafety,
        Property::Progress,
        Property::DualOwnership,
        Property::LeaseLiveness,
        Property::GrantLiveLease,
        Property::Linearizable,
        Property::Watch,
        Property::Durability,
        Property::Herd,
        Property::Fairness,
        Property::SpuriousExpiry,
        Property::WatchContinuity,
        Property::SessionLossNotice,
    ];

    /// The identifier used in scenario files and reports.
    pub fn id(self) -> &'static str {
        match self {
            Property::MutualExclusion => "mutual_exclusion",
            Property::Fencing => "fencing",
            Property::SingleHolder => "single_holder",
            Property::LeaseSafety => "lease_safety",
            Property::Progress => "progress",
            Property::DualOwnership => "dual_ownership",
            Property::LeaseLiveness => "lease_liveness",
            Property::GrantLiveLease => "grant_live_lease",
            Property::Linearizable => "linearizable",
            Property::Watch => "watch",
            Property::Durability => "durability",
            Property::Herd => "herd",
            Property::Fairness => "fairness",
            Property::SpuriousExpiry => "spurious_expiry",
            Property::WatchContinuity => "watch_continuity",
            Property::SessionLossNotice => "session_loss_notice",
        }
    }

    /// Informational properties report observations and always pass.
    pub fn is_informational(self) -> bool {
        self == Property::DualOwnership
    }

    pub fn from_id(id: &str) -> Option<Property> {
        Property::ALL.into_iter().find(|p| p.id() == id)
    }

    /// [`Property::check`], with the linearizability search under `limits` instead of the
    /// limits of a simulated run ([`linearizable::run_options`]); other properties have none.
    pub fn check_with(self, history: &History, limits: &crate::linearizability::CheckOptions) -> PropertyReport {
        match self {
            Property::Linearizable => linearizable::check_with(history, limits),
            other => other.check(history),
        }
    }

    pub fn check(self, history: &History) -> PropertyReport {
        match self {
            Property::MutualExclusion => mutual_exclusion::check(history),
            Property::Fencing => fencing::check(history),
            Property::SingleHolder => single_holder::check(history),
            Property::LeaseSafety => lease_safety::check(history),
            Property::Progress => progress::check(history),
            Property::DualOwnership => dual_ownership::check(history),
            Property::LeaseLiveness => lease_liveness::check(history),
            Property::GrantLiveLease => grant_live_lease::check(history),
            Property::Linearizable => linearizable::check(history),
            Property::Watch => watch::check(history),
            Property::Durability => durability::check(history),
            Property::Herd => herd::check(history),
            Property::Fairness => fairness::check(history),
            Property::SpuriousExpiry => spurious_expiry::check(history),
            Property::WatchContinuity => watch_continuity::check(history),
            Property::SessionLossNotice => session_loss_notice::check(history),
        }
    }
}

impl std::fmt::Display for Property {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.id())
    }
}
