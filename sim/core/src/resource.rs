//! The protected resource: a storage node that receives writes carrying a fencing token.
//!
//! `fenced` remembers the highest token it accepted and rejects any lower one, so a stale
//! holder's late write becomes a harmless rejection; `unfenced` accepts everything, as a plain
//! database or file would (docs/cases/01).

use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResourceMode {
    /// Reject tokens lower than the highest accepted.
    Fenced,
    /// Accept every write.
    Unfenced,
}

/// The resource's decision on one write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decision {
    pub accepted: bool,
    /// The highest accepted token before this write (0 = none yet).
    pub highest_before: i64,
}

/// Sans-IO core of the resource.
#[derive(Clone, Debug)]
pub struct Resource {
    mode: ResourceMode,
    highest: i64,
}

impl Resource {
    pub fn new(mode: ResourceMode) -> Self {
        Resource { mode, highest: 0 }
    }

    pub fn write(&mut self, token: i64) -> Decision {
        let highest_before = self.highest;
        let accepted = match self.mode {
            ResourceMode::Fenced => token >= self.highest,
            ResourceMode::Unfenced => true,
        };
        if accepted {
            self.highest = self.highest.max(token);
        }
        Decision { accepted, highest_before }
    }
}
