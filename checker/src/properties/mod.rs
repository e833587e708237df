//! Safety properties checked on a history, one module per property.
//!
//! Each checker reads only the history (never the service's code) and owns one guarantee.

mod dual_ownership;
mod fencing;
mod grants;
mod mutual_exclusion;

use serde::{Deserialize, Serialize};

use crate::history::History;
use crate::verdict::PropertyReport;

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
    /// Intervals in which two clients both believed they held the same lock. Informational:
    /// under process pauses they are expected, which is why fencing is needed; never fails.
    DualOwnership,
}

impl Property {
    pub const ALL: [Property; 3] = [
        Property::MutualExclusion,
        Property::Fencing,
        Property::DualOwnership,
    ];

    /// The identifier used in scenario files and reports.
    pub fn id(self) -> &'static str {
        match self {
            Property::MutualExclusion => "mutual_exclusion",
            Property::Fencing => "fencing",
            Property::DualOwnership => "dual_ownership",
        }
    }

    pub fn from_id(id: &str) -> Option<Property> {
        Property::ALL.into_iter().find(|p| p.id() == id)
    }

    pub fn check(self, history: &History) -> PropertyReport {
        match self {
            Property::MutualExclusion => mutual_exclusion::check(history),
            Property::Fencing => fencing::check(history),
            Property::DualOwnership => dual_ownership::check(history),
        }
    }
}

impl std::fmt::Display for Property {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.id())
    }
}
