//! openraft's `Instant`: a point in the *running node's* local time, so that Raft's election and
//! heartbeat timers follow that node's clock (rate, offset and jumps; see `crate::clock`).

use std::ops::{Add, AddAssign, Sub, SubAssign};
use std::time::Duration;

use crate::clock::LocalTime;
use crate::node;

/// Local time of the node that created it, in ns. Only meaningful on that node: openraft never
/// sends instants between nodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NodeInstant(pub(crate) LocalTime);

impl openraft_rt::Instant for NodeInstant {
    fn now() -> Self {
        NodeInstant(node::monotonic_now())
    }
}

impl Add<Duration> for NodeInstant {
    type Output = NodeInstant;
    fn add(self, rhs: Duration) -> NodeInstant {
        NodeInstant(self.0.plus(rhs))
    }
}

impl AddAssign<Duration> for NodeInstant {
    fn add_assign(&mut self, rhs: Duration) {
        *self = *self + rhs;
    }
}

impl Sub<Duration> for NodeInstant {
    type Output = NodeInstant;
    fn sub(self, rhs: Duration) -> NodeInstant {
        NodeInstant(LocalTime(self.0.0.saturating_sub(rhs.as_nanos().min(i64::MAX as u128) as i64)))
    }
}

impl SubAssign<Duration> for NodeInstant {
    fn sub_assign(&mut self, rhs: Duration) {
        *self = *self - rhs;
    }
}

impl Sub<NodeInstant> for NodeInstant {
    type Output = Duration;
    /// Saturates at zero, like `std::time::Instant` since Rust 1.60.
    fn sub(self, earlier: NodeInstant) -> Duration {
        earlier.0.until(self.0)
    }
}
