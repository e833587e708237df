//! The run's nodes: which simulated node the running task belongs to, and what coordsim keeps per
//! node for code that reaches it through static functions (openraft's `Instant::now()`, the
//! simulated network, `etcd::Client::connect`, which takes only endpoints).
//!
//! The node comes from madsim's task context ([`madsim::plugin::node`]: a thread-local read, where
//! a host-name look-up cost a `gethostname` call, a `String` and a string-keyed map search on every
//! clock read and RPC). What is kept per node, and per run (the simulated network, `crate::net`),
//! lives in a registry that belongs to the run: the run's [`install`] returns a [`RunNodes`]
//! guard that it holds, and the registry is emptied when the guard is dropped (the run ended,
//! failed or was abandoned), so no state is reset by hand and none outlives its run.
//!
//! Why not madsim's own per-runtime state, a `madsim::plugin::Simulator`: a plugin is registered on
//! a `Runtime` before `block_on` (`Runtime::add_simulator`, madsim 0.2.34
//! src/sim/runtime/mod.rs), `plugin::simulator` panics where it was not, and
//! `Runtime::check_determinism`, which users run their Testbed under, builds its two runtimes
//! itself. The registry is thread-local, as a runtime is: one simulation per thread.

use std::any::{Any, TypeId};
use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::time::Instant;

use madsim::task::NodeId;

use crate::clock::{Clock, LocalTime};

/// What the registry keeps for one node.
struct Node {
    clock: Clock,
    /// Values the layers above attach to the node, by type (see [`attach`]).
    attached: BTreeMap<TypeId, Box<dyn Any>>,
}

struct Run {
    /// Which [`install`] this is: a guard clears only its own run.
    generation: u64,
    /// The run's start (true time 0), for tasks of no registered node.
    epoch: Instant,
    nodes: BTreeMap<NodeId, Node>,
    /// Run-wide values the layers above attach, by type (the simulated network).
    attached: BTreeMap<TypeId, Box<dyn Any>>,
}

thread_local! {
    static RUN: RefCell<Option<Run>> = const { RefCell::new(None) };
    static GENERATION: Cell<u64> = const { Cell::new(0) };
    /// True time for tasks outside a run (openraft's runtime conformance tests): the first
    /// reading on the thread.
    static FALLBACK_EPOCH: Cell<Option<Instant>> = const { Cell::new(None) };
}

/// The run's hold on the node registry: dropping it empties the registry.
#[must_use = "the registry is emptied when the guard is dropped"]
pub struct RunNodes {
    generation: u64,
}

impl Drop for RunNodes {
    fn drop(&mut self) {
        // `try_with`: the guard may be dropped as the thread's locals are torn down.
        let _ = RUN.try_with(|run| {
            let mut run = run.borrow_mut();
            if run.as_ref().is_some_and(|r| r.generation == self.generation) {
                *run = None;
            }
        });
    }
}

/// Starts a run's registry, empty (a previous run's, if its guard still lives, is replaced);
/// `epoch` is the run's start.
pub fn install(epoch: Instant) -> RunNodes {
    let generation = GENERATION.with(|g| {
        g.set(g.get() + 1);
        g.get()
    });
    RUN.with(|run| {
        *run.borrow_mut() = Some(Run { generation, epoch, nodes: BTreeMap::new(), attached: BTreeMap::new() })
    });
    RunNodes { generation }
}

/// Registers the node `id` (built by the run) under `name`, reading `clock`. Called right after
/// `NodeBuilder::build`, before the node's first task runs.
pub fn bind(id: NodeId, name: &str, clock: Clock) {
    with_run(|run| {
        let node = Node { clock, attached: BTreeMap::new() };
        let previous = run.expect("node::bind outside a run: call node::install first").nodes.insert(id, node);
        assert!(previous.is_none(), "node {id} ({name}) bound twice");
    });
}

/// The running task's node, if a run is installed. Not while the thread unwinds: a future dropped
/// by a dying runtime is outside any task, where madsim's `plugin::node` panics, and a panic
/// during unwinding aborts.
pub fn current() -> Option<NodeId> {
    let installed = RUN.with(|run| run.borrow().is_some());
    (installed && !std::thread::panicking()).then(madsim::plugin::node)
}

fn with_run<R>(f: impl FnOnce(Option<&mut Run>) -> R) -> R {
    RUN.with(|run| f(run.borrow_mut().as_mut()))
}

fn with_current<R>(f: impl FnOnce(Option<&mut Node>) -> R) -> R {
    let id = current();
    with_run(|run| f(run.and_then(|run| run.nodes.get_mut(&id?))))
}

/// The clock of the running task's node; true time for a task of no registered node (the
/// simulator's main task, the nemesis, or a runtime used outside a run).
pub fn clock() -> Clock {
    with_clock(Clock::clone)
}

/// The running task's monotonic clock, which openraft's timers read (etcd's Raft ticks on Go
/// tickers, monotonic too). On every Raft timer read: borrows the clock, no clone.
pub fn monotonic_now() -> LocalTime {
    with_clock(Clock::now)
}

fn with_clock<R>(f: impl FnOnce(&Clock) -> R) -> R {
    let id = current();
    RUN.with(|run| {
        let run = run.borrow();
        if let Some(node) = run.as_ref().and_then(|run| run.nodes.get(&id?)) {
            return f(&node.clock);
        }
        let epoch = match run.as_ref() {
            Some(run) => run.epoch,
            None => FALLBACK_EPOCH.with(|cell| {
                let epoch = cell.get().unwrap_or_else(Instant::now);
                cell.set(Some(epoch));
                epoch
            }),
        };
        f(&Clock::true_time(epoch))
    })
}

/// Attaches `value` to the running task's node, replacing one of the same type; false outside a
/// registered node.
pub fn attach<T: Any>(value: T) -> bool {
    with_current(|node| node.map(|node| node.attached.insert(TypeId::of::<T>(), Box::new(value))).is_some())
}

/// A copy of the `T` attached to the running task's node.
pub fn attached<T: Any + Clone>() -> Option<T> {
    with_current(|node| node?.attached.get(&TypeId::of::<T>())?.downcast_ref::<T>().cloned())
}

/// Attaches `value` to the run, replacing one of the same type. Panics outside a run.
pub fn attach_to_run<T: Any>(value: T) {
    with_run(|run| {
        run.expect("node::attach_to_run outside a run").attached.insert(TypeId::of::<T>(), Box::new(value));
    });
}

/// Calls `f` with the run's `T`, if a run is installed and one was attached. `f` must not call
/// back into this module's registry (it is borrowed).
pub fn with_run_attached<T: Any, R>(f: impl FnOnce(&mut T) -> R) -> Option<R> {
    with_run(|run| run?.attached.get_mut(&TypeId::of::<T>())?.downcast_mut::<T>().map(f))
}
