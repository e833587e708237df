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

/// What a scenario that does not name a property expects of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ByDefault {
    /// It must pass: the guarantee every run owes.
    Pass,
    /// Not judged unless the scenario says so: how a new property joins the library without
    /// changing the verdict of a scenario written before it.
    Any,
    /// Reports observations and never fails (`dual_ownership`).
    Informational,
}

/// What a property reads from the history, and so where it can be judged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Needs {
    /// What clients and the resource record (operations, beliefs, the resource's accepts and
    /// rejects, the answers' revisions): a history recorded on a real cluster has it.
    ClientRecords,
    /// Leases' lives: grants and renewals as their owners record them, and expiries, which are
    /// the leader's own records in the simulator and observed by polling on a real cluster
    /// ([`crate::history::LeaseObservation`]: each expiry known within an interval, which the
    /// checker widens its bound by). Judged on a real cluster whose clients journal their
    /// renewals (etcd's LeaseKeepAlive), not where the client library renews unseen
    /// (ZooKeeper's pings).
    ObservedLeases,
    /// The servers' own records (the leader's lease checkpoints, its promotions, exact expiry
    /// times): only the simulator has them.
    ServerRecords,
    /// Watch streams as the watchers received them: recorded by the key-value workload's
    /// watchers, in the simulator and on real etcd (each poll a watch created at the next
    /// revision, real/src/kv/watch.rs); ZooKeeper has no such stream.
    Watchers,
}

/// One property: its one module's checker and everything the rest of coordsim needs to know of
/// it. A new property is its module and one entry of [`REGISTRY`] (and its [`Property`] name).
pub struct Spec {
    pub property: Property,
    /// The identifier used in scenario files and reports.
    pub id: &'static str,
    /// What a scenario that does not name it expects.
    pub by_default: ByDefault,
    pub needs: Needs,
    pub check: fn(&History) -> PropertyReport,
}

/// Every property, in report order (the order of [`Property`]'s variants).
pub const REGISTRY: [Spec; 16] = [
    spec(Property::MutualExclusion, "mutual_exclusion", ByDefault::Pass, Needs::ClientRecords, mutual_exclusion::check),
    spec(Property::Fencing, "fencing", ByDefault::Pass, Needs::ClientRecords, fencing::check),
    spec(Property::SingleHolder, "single_holder", ByDefault::Pass, Needs::ClientRecords, single_holder::check),
    spec(Property::LeaseSafety, "lease_safety", ByDefault::Pass, Needs::ObservedLeases, lease_safety::check),
    spec(Property::Progress, "progress", ByDefault::Pass, Needs::ClientRecords, progress::check),
    spec(
        Property::DualOwnership,
        "dual_ownership",
        ByDefault::Informational,
        Needs::ClientRecords,
        dual_ownership::check,
    ),
    spec(Property::LeaseLiveness, "lease_liveness", ByDefault::Pass, Needs::ObservedLeases, lease_liveness::check),
    spec(Property::GrantLiveLease, "grant_live_lease", ByDefault::Pass, Needs::ObservedLeases, grant_live_lease::check),
    spec(Property::Linearizable, "linearizable", ByDefault::Pass, Needs::ClientRecords, linearizable::check),
    spec(Property::Watch, "watch", ByDefault::Pass, Needs::Watchers, watch::check),
    spec(Property::Durability, "durability", ByDefault::Pass, Needs::ClientRecords, durability::check),
    spec(Property::Herd, "herd", ByDefault::Pass, Needs::ClientRecords, herd::check),
    spec(Property::Fairness, "fairness", ByDefault::Pass, Needs::ClientRecords, fairness::check),
    spec(Property::SpuriousExpiry, "spurious_expiry", ByDefault::Pass, Needs::ObservedLeases, spurious_expiry::check),
    spec(Property::WatchContinuity, "watch_continuity", ByDefault::Pass, Needs::Watchers, watch_continuity::check),
    spec(
        Property::SessionLossNotice,
        "session_loss_notice",
        ByDefault::Pass,
        Needs::ServerRecords,
        session_loss_notice::check,
    ),
];

const fn spec(
    property: Property,
    id: &'static str,
    by_default: ByDefault,
    needs: Needs,
    check: fn(&History) -> PropertyReport,
) -> Spec {
    Spec { property, id, by_default, needs, check }
}

/// How many properties need only what clients and the resource record.
const FROM_OUTSIDE_COUNT: usize = {
    let mut count = 0;
    let mut i = 0;
    while i < REGISTRY.len() {
        if matches!(REGISTRY[i].needs, Needs::ClientRecords) {
            count += 1;
        }
        i += 1;
    }
    count
};

impl Property {
    /// The properties a history recorded outside the simulator can decide: those whose
    /// [`Needs`] are what clients and the resource record (for the key-value workload, the
    /// operations' values and the revisions of their answers). The others need the leader's
    /// own records of lease expiries, or watchers, which real runs do not have yet.
    pub const FROM_OUTSIDE: [Property; FROM_OUTSIDE_COUNT] = {
        let mut out = [Property::MutualExclusion; FROM_OUTSIDE_COUNT];
        let (mut i, mut n) = (0, 0);
        while i < REGISTRY.len() {
            if matches!(REGISTRY[i].needs, Needs::ClientRecords) {
                out[n] = REGISTRY[i].property;
                n += 1;
            }
            i += 1;
        }
        out
    };

    /// The properties a history can decide: all of them for a simulated one; for one recorded on
    /// a real cluster ([`History::recorded_on`]) those that need only client records, the lease
    /// properties too where its leases were observed with their renewals
    /// ([`crate::history::LeaseObservation::renewals_recorded`]), and the watch properties on
    /// real etcd.
    pub fn judged_on(history: &crate::history::History) -> Vec<Property> {
        match history.recorded_on.as_deref() {
            None => Property::ALL.to_vec(),
            Some(system) => Property::judged_outside(
                history.lease_observation.is_some_and(|seen| seen.renewals_recorded),
                system == "real etcd",
            ),
        }
    }

    /// The properties a run outside the simulator decides, in report order: those that need
    /// only what clients and the resource record, with `observed_leases` those that need
    /// leases' lives ([`Needs::ObservedLeases`]), and with `watch_streams` those that need the
    /// watchers' streams ([`Needs::Watchers`]).
    pub fn judged_outside(observed_leases: bool, watch_streams: bool) -> Vec<Property> {
        REGISTRY
            .iter()
            .filter(|spec| match spec.needs {
                Needs::ClientRecords => true,
                Needs::ObservedLeases => observed_leases,
                Needs::Watchers => watch_streams,
                Needs::ServerRecords => false,
            })
            .map(|spec| spec.property)
            .collect()
    }

    /// Every property, in report order.
    pub const ALL: [Property; REGISTRY.len()] = {
        let mut out = [Property::MutualExclusion; REGISTRY.len()];
        let mut i = 0;
        while i < REGISTRY.len() {
            out[i] = REGISTRY[i].property;
            i += 1;
        }
        out
    };

    /// Its entry in [`REGISTRY`].
    pub fn spec(self) -> &'static Spec {
        let spec = &REGISTRY[self as usize];
        debug_assert_eq!(spec.property, self, "REGISTRY is in the order of Property's variants");
        spec
    }

    /// The identifier used in scenario files and reports.
    pub fn id(self) -> &'static str {
        self.spec().id
    }

    /// What a scenario that does not name it expects.
    pub fn by_default(self) -> ByDefault {
        self.spec().by_default
    }

    /// Informational properties report observations and always pass.
    pub fn is_informational(self) -> bool {
        self.by_default() == ByDefault::Informational
    }

    pub fn from_id(id: &str) -> Option<Property> {
        REGISTRY.iter().find(|spec| spec.id == id).map(|spec| spec.property)
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
        (self.spec().check)(history)
    }
}

impl std::fmt::Display for Property {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.id())
    }
}
