//! Which clock belongs to the running task: openraft asks for the time through a static
//! function (`Instant::now()`), so the runtime finds the caller's node by its host name (madsim
//! answers `gethostname` with the node's name inside its tasks) and looks its clock up here.
//!
//! The registry is thread-local: each simulation runs on its own thread, and the harness installs
//! the run's clocks before any node starts. A task with no registered clock (the simulator's
//! main task, or a runtime used outside a run) reads true time.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::time::Instant;

use super::{Clock, LocalTime};
use crate::node::current_node_name;

#[derive(Default)]
struct Registry {
    /// The run's start, for tasks that have no clock of their own.
    epoch: Option<Instant>,
    /// Node name → its clock.
    clocks: BTreeMap<String, Clock>,
}

thread_local! {
    static REGISTRY: RefCell<Registry> = RefCell::new(Registry::default());
}

/// Replaces the registry with the clocks of a new run.
pub fn install(epoch: Instant, clocks: BTreeMap<String, Clock>) {
    REGISTRY.with(|registry| {
        *registry.borrow_mut() = Registry { epoch: Some(epoch), clocks };
    });
}

/// The clock of the running task's node.
pub fn current() -> Clock {
    with_current(Clock::clone)
}

/// The running task's monotonic clock, which openraft's timers read (etcd's Raft ticks on Go
/// tickers, monotonic too). On every Raft timer read: borrows the clock, no clone.
pub fn monotonic_now() -> LocalTime {
    with_current(Clock::now)
}

fn with_current<R>(f: impl FnOnce(&Clock) -> R) -> R {
    let name = current_node_name();
    REGISTRY.with(|registry| {
        let mut registry = registry.borrow_mut();
        if let Some(clock) = name.as_ref().and_then(|name| registry.clocks.get(name)) {
            return f(clock);
        }
        let epoch = *registry.epoch.get_or_insert_with(Instant::now);
        f(&Clock::true_time(epoch))
    })
}
