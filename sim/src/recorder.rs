//! The recorder: appends every client call, fault, belief change and resource decision to the
//! run's history, stamped with true simulated time.
//!
//! True time is read here (and by the checkers) only; nodes time their own work with their
//! local [`crate::clock::Clock`]. Shared by all nodes of one simulation, which madsim runs on a
//! single thread, so the mutex is never contended and is never held across an `.await`.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use coordsim_checker::history::{
    Call, Entry, Event, FaultId, History, NodeInfo, NodeRole, OpId, Return,
};

#[derive(Clone, Debug)]
pub struct Recorder {
    inner: Arc<Mutex<Inner>>,
}

#[derive(Debug)]
struct Inner {
    epoch: Instant,
    history: History,
    next_op: OpId,
    next_fault: FaultId,
}

impl Recorder {
    /// `epoch` is the simulated instant at which the run starts (true time 0).
    pub fn new(scenario: &str, seed: u64, epoch: Instant) -> Self {
        let inner = Inner {
            epoch,
            history: History::new(scenario, seed),
            next_op: 1,
            next_fault: 1,
        };
        Recorder {
            inner: Arc::new(Mutex::new(inner)),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().expect("recorder lock poisoned")
    }

    pub fn add_node(&self, name: &str, role: NodeRole) {
        self.lock().history.nodes.push(NodeInfo {
            name: name.to_string(),
            role,
        });
    }

    /// True simulated time since the start of the run, in ns.
    pub fn now_ns(&self) -> u64 {
        self.lock().epoch.elapsed().as_nanos() as u64
    }

    pub fn record(&self, node: &str, event: Event) {
        let mut inner = self.lock();
        let time_ns = inner.epoch.elapsed().as_nanos() as u64;
        if let Some(last) = inner.history.entries.last() {
            assert!(
                last.time_ns <= time_ns,
                "history time went backwards: {} after {}",
                time_ns,
                last.time_ns
            );
        }
        inner.history.entries.push(Entry {
            time_ns,
            node: node.to_string(),
            event,
        });
    }

    /// Records the invocation of `call` by `node`; returns the operation's id.
    pub fn invoke(&self, node: &str, call: Call) -> OpId {
        let op = {
            let mut inner = self.lock();
            let op = inner.next_op;
            inner.next_op += 1;
            op
        };
        self.record(node, Event::Invoke { op, call });
        op
    }

    pub fn ok(&self, node: &str, op: OpId, ret: Return) {
        self.record(node, Event::Ok { op, ret });
    }

    pub fn fail(&self, node: &str, op: OpId, error: impl Into<String>) {
        self.record(
            node,
            Event::Fail {
                op,
                error: error.into(),
            },
        );
    }

    pub fn info(&self, node: &str, op: OpId, error: impl Into<String>) {
        self.record(
            node,
            Event::Info {
                op,
                error: error.into(),
            },
        );
    }

    pub fn next_fault_id(&self) -> FaultId {
        let mut inner = self.lock();
        let id = inner.next_fault;
        inner.next_fault += 1;
        id
    }

    /// The history so far, closed at the current true time.
    pub fn finish(&self) -> History {
        let inner = self.lock();
        let mut history = inner.history.clone();
        history.duration_ns = inner.epoch.elapsed().as_nanos() as u64;
        history
    }
}
