//! Everything a test of your own code names, behind one `use coordsim::prelude::*;`: the
//! Testbed and what a client body gets, faults, expectations, the history and verdicts, your own
//! checkers, and the simulator's tasks, timers and random numbers. `coordsim` is the only
//! coordsim crate a user's `Cargo.toml` needs (docs/test-your-own-code.md).

pub use std::time::Duration;

pub use crate::history::{Call, Entry, Event, History, Phase, Return};
pub use crate::properties::Property;
pub use crate::scenario::{Bugs, Chaos, Expectation, ReplyKind, ResourceMode};
pub use crate::task::spawn;
pub use crate::testbed::{Checker, Ctx, Fault, Run, Sweep, Testbed, WriteOutcome};
pub use crate::time::{Instant, interval, sleep, sleep_until, timeout};
pub use crate::verdict::{Finding, PropertyReport, Verdict};
