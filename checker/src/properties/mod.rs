//! Safety properties checked on a history, one module per property.
//!
//! Each checker reads only the history (never the service's code) and owns one guarantee.

mod beliefs;
mod dual_ownership;
mod fencing;
mod grants;
mod lease_safety;
mod mutual_exclusion;
mod progress;
mod single_holder;

use serde::{Deserialize, Serialize};

use crate::history::History;
use crate::verdict::PropertyReport;

pub use beliefs::{Belief, Overlap, beliefs, overlaps};
pub use grants::{Grant, grants};

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
}

impl Property {
    pub const ALL: [Property; 6] = [
        Property::MutualExclusion,
        Property::Fencing,
        Property::SingleHolder,
        Property::LeaseSafety,
        Property::Progress,
        Property::DualOwnership,
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
        }
    }

    /// Informational properties report observations and always pass.
    pub fn is_informational(self) -> bool {
        self == Property::DualOwnership
    }

    pub fn from_id(id: &str) -> Option<Property> {
        Property::ALL.into_iter().find(|p| p.id() == id)
    }

    pub fn check(self, history: &History) -> PropertyReport {
        match self {
            Property::MutualExclusion => mutual_exclusion::check(history),
            Property::Fencing => fencing::check(history),
            Property::SingleHolder => single_holder::check(history),
            Property::LeaseSafety => lease_safety::check(history),
            Property::Progress => progress::check(history),
            Property::DualOwnership => dual_ownership::check(history),
        }
    }
}

impl std::fmt::Display for Property {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.id())
    }
}
