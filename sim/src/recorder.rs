//! The recorder: appends every client call, fault, belief change and resource decision to the
//! run's history, stamped with true simulated time.
//!
//! True time is read here (and by the checkers) only; nodes time their own work with their
//! local [`crate::clock::Clock`]. Shared by all nodes of one simulation, which madsim runs on a
//! single thread, so the mutex is never contended and is never held across an `.await`.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use coordsim_checker::history::{Call, Entry, Event, History, NodeInfo, NodeRole, OpId, QueueSeries, RaftRole, Return};
use coordsim_core::queue_depth::QueueDepth;
use futures::channel::oneshot;

use crate::timing::QueueRecord;

/// Most entries one run may record. The library's runs record under 10^4 (8,365 at most on
/// seeds 1..3); the limit leaves a hundred times that and bounds a run's memory: an entry and
/// what the service keeps alongside it cost 0.8-2.9 KB, so 0.8-2.9 GB at the limit
/// (docs/hostile-input.md, measured on the worst files the validator accepts).
pub const MAX_HISTORY_ENTRIES: usize = 1_000_000;

/// Most client requests the servers of one run may serve (every KV, lease, watch, lock,
/// ZooKeeper and Redis request a server, or the resource, takes off the network). Work nobody
/// records, such as thousands of watch long-polls, costs wall time without growing the history:
/// this bounds it. The library's runs serve under 2 x 10^5 (see docs/hostile-input.md).
pub const MAX_SERVED_REQUESTS: u64 = 20_000_000;

/// How much one run may do before it is stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// History entries ([`MAX_HISTORY_ENTRIES`]).
    pub entries: usize,
    /// Requests served ([`MAX_SERVED_REQUESTS`]).
    pub requests: u64,
}

impl Limits {
    pub const DEFAULT: Limits = Limits { entries: MAX_HISTORY_ENTRIES, requests: MAX_SERVED_REQUESTS };
}

/// Which limit stopped a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limit {
    HistoryEntries,
    ServedRequests,
}

/// A run stopped because it reached one of its [`Limits`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "the run {} by {} true time (of {}), the most a run may {}: the scenario asks for more work than coordsim runs; shorten `duration`, or use fewer clients (or observers) or longer `think`/`interval`",
    match what { Limit::HistoryEntries => format!("recorded {limit} history entries"), Limit::ServedRequests => format!("made its servers serve {limit} requests") },
    History::fmt_time(*time_ns),
    History::fmt_time(*duration_ns),
    match what { Limit::HistoryEntries => "record", Limit::ServedRequests => "serve" }
)]
pub struct Stopped {
    pub what: Limit,
    /// The limit reached.
    pub limit: u64,
    /// True time at which the limit was reached, in ns.
    pub time_ns: u64,
    /// The scenario's duration, in ns.
    pub duration_ns: u64,
}

#[derive(Clone, Debug)]
pub struct Recorder {
    inner: Arc<Mutex<Inner>>,
}

#[derive(Debug)]
struct Inner {
    epoch: Instant,
    history: History,
    next_op: OpId,
    next_watch: u64,
    /// Grant numbers given out (`next_grant_number`).
    grants: i64,
    /// Each server's latest role and term, as its Role events said: the nemesis aims faults at
    /// "the leader" with it.
    roles: BTreeMap<String, (RaftRole, u64)>,
    /// Events recorded with `record_once`.
    seen_once: std::collections::BTreeSet<String>,
    limits: Limits,
    /// Requests the servers served so far.
    served: u64,
    /// When and why the run reached a limit (true time, ns); later entries are dropped.
    stopped: Option<(u64, Limit)>,
    /// Tells the harness the run must stop (taken when the limit is reached).
    stop: Option<oneshot::Sender<()>>,
    /// Each node's queue-depth record (`queue_record`), by name: written into the history's
    /// `queues` when it is finished.
    queues: BTreeMap<String, Arc<Mutex<QueueDepth>>>,
}

impl Inner {
    /// The run reached a limit at `time_ns`: the first one reached is the one reported.
    fn stop(&mut self, time_ns: u64, what: Limit) {
        if self.stopped.is_none() {
            self.stopped = Some((time_ns, what));
            if let Some(stop) = self.stop.take() {
                // The harness may have ended the run already; then nobody listens.
                let _ = stop.send(());
            }
        }
    }
}

impl Recorder {
    /// `epoch` is the simulated instant at which the run starts (true time 0).
    pub fn new(scenario: &str, seed: u64, epoch: Instant) -> Self {
        Self::with_limits(scenario, seed, epoch, Limits::DEFAULT).0
    }

    /// A recorder for a run bounded by `limits`, and the receiver that hears when the run
    /// reached one (the harness then ends the run).
    pub fn with_limits(scenario: &str, seed: u64, epoch: Instant, limits: Limits) -> (Self, oneshot::Receiver<()>) {
        let (stop, stopped) = oneshot::channel();
        let inner = Inner {
            epoch,
            history: History::new(scenario, seed),
            next_op: 1,
            next_watch: 1,
            grants: 0,
            roles: BTreeMap::new(),
            seen_once: Default::default(),
            limits,
            served: 0,
            stopped: None,
            stop: Some(stop),
            queues: BTreeMap::new(),
        };
        (Recorder { inner: Arc::new(Mutex::new(inner)) }, stopped)
    }

    /// The servers' timing, in the history's header: what the checkers' bounds are made of.
    pub fn set_service_timing(&self, timing: coordsim_checker::history::ServiceTiming) {
        self.lock().history.service_timing = Some(timing);
    }

    /// Names the time model the run takes its durations from, in the history's header.
    pub fn set_time_model(&self, name: &str) {
        self.lock().history.time_model = Some(name.to_string());
    }

    /// Why the run must stop, if it reached a limit.
    pub fn stopped(&self, duration_ns: u64) -> Option<Stopped> {
        let inner = self.lock();
        inner.stopped.map(|(time_ns, what)| Stopped {
            what,
            limit: match what {
                Limit::HistoryEntries => inner.limits.entries as u64,
                Limit::ServedRequests => inner.limits.requests,
            },
            time_ns,
            duration_ns,
        })
    }

    /// A server (or the resource) took one client request off the network.
    pub fn served_request(&self) {
        let mut inner = self.lock();
        inner.served += 1;
        if inner.served > inner.limits.requests {
            let time_ns = inner.epoch.elapsed().as_nanos() as u64;
            inner.stop(time_ns, Limit::ServedRequests);
        }
    }

    /// Requests served so far.
    pub fn served_requests(&self) -> u64 {
        self.lock().served
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().expect("recorder lock poisoned")
    }

    pub fn add_node(&self, name: &str, role: NodeRole) {
        self.lock().history.nodes.push(NodeInfo { name: name.to_string(), role });
    }

    /// True simulated time since the start of the run, in ns.
    pub fn now_ns(&self) -> u64 {
        self.lock().epoch.elapsed().as_nanos() as u64
    }

    pub fn record(&self, node: &str, event: Event) {
        let mut inner = self.lock();
        let time_ns = inner.epoch.elapsed().as_nanos() as u64;
        if let Some(last) = inner.history.entries.last() {
            assert!(last.time_ns <= time_ns, "history time went backwards: {} after {}", time_ns, last.time_ns);
        }
        if let Event::Role { role, term } = &event {
            inner.roles.insert(node.to_string(), (*role, *term));
        }
        if inner.history.entries.len() >= inner.limits.entries {
            inner.stop(time_ns, Limit::HistoryEntries);
        }
        if inner.stopped.is_some() {
            // The run goes on until the harness wakes up (the same instant); nothing more is kept.
            return;
        }
        inner.history.entries.push(Entry { time_ns, node: node.to_string(), event });
    }

    /// Records `event` unless an equal event was recorded before (by any node): for facts that
    /// every replica observes, such as a committed lease expiry, the first observation counts.
    pub fn record_once(&self, node: &str, event: Event) {
        let first = self.lock().seen_once.insert(format!("{event:?}"));
        if first {
            self.record(node, event);
        }
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

    /// The next number of a grant of a lock without tokens of its own (Redlock): 1, 2, ... in the
    /// order its holders learned of their grants, which is the order the checkers need.
    pub fn next_grant_number(&self) -> i64 {
        let mut inner = self.lock();
        inner.grants += 1;
        inner.grants
    }

    /// A new watch stream id, unique within the history.
    pub fn next_watch_id(&self) -> u64 {
        let mut inner = self.lock();
        let id = inner.next_watch;
        inner.next_watch += 1;
        id
    }

    pub fn ok(&self, node: &str, op: OpId, ret: Return) {
        self.record(node, Event::Ok { op, ret });
    }

    pub fn fail(&self, node: &str, op: OpId, error: impl Into<String>) {
        self.record(node, Event::Fail { op, error: error.into() });
    }

    pub fn info(&self, node: &str, op: OpId, error: impl Into<String>) {
        self.record(node, Event::Info { op, error: error.into() });
    }

    /// The server that leads the highest term, by the latest Role events (`None` if no server
    /// is leader, e.g. during an election).
    pub fn leader(&self) -> Option<String> {
        let inner = self.lock();
        inner
            .roles
            .iter()
            .filter(|(_, (role, _))| *role == RaftRole::Leader)
            .max_by_key(|(name, (_, term))| (*term, std::cmp::Reverse((*name).clone())))
            .map(|(name, _)| name.clone())
    }

    /// The history so far, closed at the current true time.
    pub fn finish(&self) -> History {
        let inner = self.lock();
        let mut history = inner.history.clone();
        history.duration_ns = inner.epoch.elapsed().as_nanos() as u64;
        history.queues = inner
            .queues
            .iter()
            .map(|(node, record)| {
                let record = record.lock().expect("queue record lock poisoned");
                QueueSeries {
                    node: node.clone(),
                    window_ms: record.window_ms(),
                    deepest: record.series(history.duration_ns),
                }
            })
            .collect();
        history
    }

    /// `node`'s queue-depth record for its CPU (the time model's): made on first use, the same
    /// one after a restart.
    pub fn queue_record(&self, node: &str) -> QueueRecord {
        let mut inner = self.lock();
        let epoch = inner.epoch;
        let depth = inner.queues.entry(node.to_string()).or_default().clone();
        QueueRecord::new(epoch, depth)
    }
}
