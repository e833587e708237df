//! How long things took in a run, read from its history: latency by request kind, throughput,
//! lock handoff and drain, recovery after faults. The figures the field's guidance compares
//! services and recipes by ("prototype with a realistic workload and compare latency,
//! throughput and failure-recovery time"), and the ones the simulator's time model is
//! calibrated against the real clusters with: a real run's history and a simulated one give
//! their metrics through this one function.
//!
//! Times are true time (the history's `time_ns`), in µs. Percentiles are nearest-rank: the
//! smallest value with at least that share of the sample at or below it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::history::{Call, Event, History, NodeRole, OpId, Phase};

/// A sample's size and its percentiles, µs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Spread {
    pub count: u64,
    pub p50_us: u64,
    pub p90_us: u64,
    pub p99_us: u64,
    pub max_us: u64,
}

impl Spread {
    /// `None` for an empty sample.
    pub fn of(mut sample_ns: Vec<u64>) -> Option<Spread> {
        if sample_ns.is_empty() {
            return None;
        }
        sample_ns.sort_unstable();
        let at = |share: f64| nearest_rank(&sample_ns, share) / 1000;
        Some(Spread {
            count: sample_ns.len() as u64,
            p50_us: at(0.50),
            p90_us: at(0.90),
            p99_us: at(0.99),
            max_us: sample_ns[sample_ns.len() - 1] / 1000,
        })
    }
}

/// The smallest value of `sorted` (ascending, not empty) with at least `share` of it at or below.
fn nearest_rank(sorted: &[u64], share: f64) -> u64 {
    let rank = ((share * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

/// One kind of request (`lock`, `put`, `lease_keep_alive`, `etcd.txn`, ...).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Requests {
    /// Latency of the requests that succeeded (invoke to `ok`).
    pub ok: Spread,
    /// Requests that certainly failed, and requests whose outcome is unknown (timeouts).
    pub failed: u64,
    pub unknown: u64,
    /// Successful requests per second of true time, from the first invoke of this kind to the
    /// last `ok`; 0 when they all happened at one instant.
    pub per_s: f64,
    /// The most requests of this kind sent in one [`PEAK_WINDOW_NS`] window, per second: the
    /// burst a server sees (a release that wakes every waiter), where `per_s` is the average.
    #[serde(default)]
    pub peak_per_s: u64,
}

/// The window over which [`Requests::peak_per_s`] counts requests sent: 100 ms.
pub const PEAK_WINDOW_NS: u64 = 100_000_000;

/// One lock's (or semaphore's) grants: how fast the lock moved from holder to holder.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LockTimes {
    /// Number of grants (beliefs that started).
    pub grants: u64,
    /// From one holder's release to the next holder's grant, for every grant that came after a
    /// release with nobody holding in between (overlapping beliefs are not a handoff).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handoff: Option<Spread>,
    /// From the first grant to the last.
    pub drain_us: u64,
    /// Waiters woken by a change of the lock (the clients' `wakeup` records): one per release
    /// for a queue, every waiter for a herd.
    #[serde(default)]
    pub wakeups: u64,
}

/// The handful of figures a run is compared by (true time, µs): the median handoff and the drain
/// of its busiest lock (the one with the most grants), the p99 of its lock requests and its
/// keepalives, the median recovery after a fault. One reading for `coordsim compare`, sweep.json's
/// per-run times and their medians.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Headline {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handoff_p50_us: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drain_us: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lock_p99_us: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keepalive_p99_us: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recovery_p50_us: Option<u64>,
    /// How deep the busiest server's work queue usually was: the highest [`Queue::p99`] of the
    /// servers (pieces of work, not µs; over the run's 100 ms windows, so a start-up burst does
    /// not hide a herd). Absent without a time model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_p99: Option<u64>,
}

impl Headline {
    /// Each figure the median (see [`median`]) of those of `runs` that have it.
    pub fn median_of<'a>(runs: impl IntoIterator<Item = &'a Headline> + Clone) -> Headline {
        let of = |figure: fn(&Headline) -> Option<u64>| median(runs.clone().into_iter().filter_map(figure).collect());
        Headline {
            handoff_p50_us: of(|h| h.handoff_p50_us),
            drain_us: of(|h| h.drain_us),
            lock_p99_us: of(|h| h.lock_p99_us),
            keepalive_p99_us: of(|h| h.keepalive_p99_us),
            recovery_p50_us: of(|h| h.recovery_p50_us),
            queue_p99: of(|h| h.queue_p99),
        }
    }
}

/// The lower middle of `values` (of 2, the smaller: a figure one of the runs really had);
/// `None` when empty.
pub fn median(mut values: Vec<u64>) -> Option<u64> {
    values.sort_unstable();
    values.get(values.len().checked_sub(1)? / 2).copied()
}

impl Metrics {
    /// The lock with the most grants (the first by name among equals).
    pub fn busiest_lock(&self) -> Option<&LockTimes> {
        self.locks.values().rev().max_by_key(|lock| lock.grants)
    }

    /// See [`Headline`]. A drain needs two grants.
    pub fn headline(&self) -> Headline {
        let lock = self.busiest_lock();
        let ok_p99 = |kind: &str| self.requests.get(kind).map(|r| r.ok.p99_us);
        Headline {
            handoff_p50_us: lock.and_then(|l| l.handoff.as_ref()).map(|h| h.p50_us),
            drain_us: lock.filter(|l| l.grants > 1).map(|l| l.drain_us),
            lock_p99_us: ok_p99("lock"),
            keepalive_p99_us: ok_p99("lease_keep_alive"),
            recovery_p50_us: self.recovery.as_ref().map(|r| r.p50_us),
            queue_p99: self.queues.values().filter(|q| q.role == NodeRole::Server).map(|q| q.p99).max(),
        }
    }
}

/// What [`of`] reads from a history.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Metrics {
    /// The time model the run's durations came from (the history's `time_model`): figures of
    /// different models are not comparable. Absent: no model, or a real run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_model: Option<String>,
    /// By request kind, in name order.
    pub requests: BTreeMap<String, Requests>,
    /// By lock name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub locks: BTreeMap<String, LockTimes>,
    /// After each fault that ended, the time to the next grant of any lock (faults after which
    /// nothing was granted are counted in `unrecovered`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recovery: Option<Spread>,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub unrecovered: u64,
    /// Each node's work queue (the history's `queues`: a simulated run with a time model), by
    /// node name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub queues: BTreeMap<String, Queue>,
}

/// How deep one node's work queue was: the deepest of each window of the run (the history's
/// [`crate::history::QueueSeries`]), summed up. Counts of pieces of work, not µs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Queue {
    /// The node's role: a server's queue, or the resource's.
    pub role: NodeRole,
    /// The most pieces queued at once, and the start (true ms) of the window it happened in.
    pub deepest: u64,
    pub deepest_at_ms: u64,
    /// Over every window of the run (idle ones count 0), nearest-rank: how deep it usually was.
    pub p50: u64,
    pub p99: u64,
    /// Windows in which anything was queued, and windows in the run.
    pub busy_windows: u64,
    pub windows: u64,
}

impl Queue {
    /// `None` for a node that never queued anything.
    pub fn of(series: &crate::history::QueueSeries, role: NodeRole, duration_ns: u64) -> Option<Queue> {
        let [at, deepest] = *series.deepest.iter().max_by_key(|[start, depth]| (*depth, std::cmp::Reverse(*start)))?;
        let window_ns = series.window_ms.saturating_mul(1_000_000);
        let windows = duration_ns.div_ceil(window_ns).max(series.deepest.len() as u64);
        let busy_windows = series.deepest.len() as u64;
        // Every window of the run: the idle ones at 0, then the busy ones' depths.
        let mut depths = vec![0; (windows - busy_windows) as usize];
        depths.extend(series.deepest.iter().map(|[_, depth]| *depth));
        depths.sort_unstable();
        Some(Queue {
            role,
            deepest,
            deepest_at_ms: at,
            p50: nearest_rank(&depths, 0.50),
            p99: nearest_rank(&depths, 0.99),
            busy_windows,
            windows,
        })
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The name of a request kind: the call's `f`, or `api.method` for a user-code API call
/// (`etcd.txn`, `zookeeper.create`).
pub fn kind(call: &Call) -> String {
    match call {
        Call::LeaseGrant { .. } => "lease_grant".into(),
        Call::LeaseKeepAlive { .. } => "lease_keep_alive".into(),
        Call::SessionTouch { .. } => "session_touch".into(),
        Call::LeaseRevoke { .. } => "lease_revoke".into(),
        Call::Lock { .. } => "lock".into(),
        Call::Unlock { .. } => "unlock".into(),
        Call::Write { .. } => "write".into(),
        Call::Put { .. } => "put".into(),
        Call::Get { .. } => "get".into(),
        Call::Delete { .. } => "delete".into(),
        Call::Cas { .. } => "cas".into(),
        Call::Api { api, method, .. } => format!("{api}.{method}"),
    }
}

/// The metrics of `history` (assumed valid: see [`History::validate`]).
pub fn of(history: &History) -> Metrics {
    Metrics {
        time_model: history.time_model.clone(),
        requests: requests(history),
        locks: locks(history),
        queues: history
            .queues
            .iter()
            .filter_map(|series| {
                let role = history.nodes.iter().find(|n| n.name == series.node)?.role;
                Some((series.node.clone(), Queue::of(series, role, history.duration_ns)?))
            })
            .collect(),
        ..recovery(history)
    }
}

/// How a request ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Ok,
    Failed,
    /// A timeout, or still open when the history ends.
    Unknown,
}

/// One request: its kind, when it was sent and how long it took (true time, ns).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sample {
    pub kind: String,
    pub invoke_ns: u64,
    /// Invoke to completion; `None` for a request still open at the end.
    pub latency_ns: Option<u64>,
    pub outcome: Outcome,
}

/// Every request of the history, in the order they were sent: what [`Metrics::requests`]
/// summarises and the report's latency plot draws.
pub fn samples(history: &History) -> Vec<Sample> {
    let mut samples: Vec<Sample> = Vec::new();
    let mut open: BTreeMap<OpId, usize> = BTreeMap::new();
    for entry in &history.entries {
        match &entry.event {
            // A session's touches are the wire requests inside the calls already sampled.
            Event::Invoke { call: Call::SessionTouch { .. }, .. } => {}
            Event::Invoke { op, call } => {
                open.insert(*op, samples.len());
                samples.push(Sample {
                    kind: kind(call),
                    invoke_ns: entry.time_ns,
                    latency_ns: None,
                    outcome: Outcome::Unknown,
                });
            }
            Event::Ok { op, .. } | Event::Fail { op, .. } | Event::Info { op, .. } => {
                let Some(index) = open.remove(op) else { continue };
                let sample = &mut samples[index];
                sample.latency_ns = Some(entry.time_ns.saturating_sub(sample.invoke_ns));
                sample.outcome = match &entry.event {
                    Event::Ok { .. } => Outcome::Ok,
                    Event::Fail { .. } => Outcome::Failed,
                    _ => Outcome::Unknown,
                };
            }
            _ => {}
        }
    }
    samples
}

fn requests(history: &History) -> BTreeMap<String, Requests> {
    struct Tally {
        latencies_ns: Vec<u64>,
        failed: u64,
        unknown: u64,
        first_invoke_ns: u64,
        last_ok_ns: u64,
        /// Invokes in the current window (its index), and the most in any window so far.
        window: (u64, u64),
        peak: u64,
    }
    let mut tallies: BTreeMap<String, Tally> = BTreeMap::new();
    for sample in samples(history) {
        let tally = tallies.entry(sample.kind).or_insert(Tally {
            latencies_ns: Vec::new(),
            failed: 0,
            unknown: 0,
            first_invoke_ns: sample.invoke_ns,
            last_ok_ns: sample.invoke_ns,
            window: (sample.invoke_ns / PEAK_WINDOW_NS, 0),
            peak: 0,
        });
        let window = sample.invoke_ns / PEAK_WINDOW_NS;
        if window != tally.window.0 {
            tally.window = (window, 0);
        }
        tally.window.1 += 1;
        tally.peak = tally.peak.max(tally.window.1);
        match (sample.outcome, sample.latency_ns) {
            (Outcome::Ok, Some(latency)) => {
                tally.latencies_ns.push(latency);
                tally.last_ok_ns = tally.last_ok_ns.max(sample.invoke_ns + latency);
            }
            (Outcome::Failed, _) => tally.failed += 1,
            _ => tally.unknown += 1,
        }
    }
    tallies
        .into_iter()
        .filter_map(|(kind, tally)| {
            let span_ns = tally.last_ok_ns - tally.first_invoke_ns;
            let oks = tally.latencies_ns.len() as f64;
            let per_s = if span_ns == 0 { 0.0 } else { (oks * 1e10 / span_ns as f64).round() / 10.0 };
            let ok = Spread::of(tally.latencies_ns)?;
            let peak_per_s = tally.peak * (1_000_000_000 / PEAK_WINDOW_NS);
            Some((kind, Requests { ok, failed: tally.failed, unknown: tally.unknown, per_s, peak_per_s }))
        })
        .collect()
}

fn locks(history: &History) -> BTreeMap<String, LockTimes> {
    // Per lock: every belief as (start, end), in start order; `None` while it is held.
    let mut beliefs: BTreeMap<&str, Vec<(u64, Option<u64>)>> = BTreeMap::new();
    let mut holding: BTreeMap<(&str, &str, i64), usize> = BTreeMap::new();
    let mut wakeups: BTreeMap<&str, u64> = BTreeMap::new();
    for entry in &history.entries {
        if let Event::Wakeup { lock, .. } = &entry.event {
            *wakeups.entry(lock).or_default() += 1;
        }
        let Event::Belief { lock, token, phase, .. } = &entry.event else { continue };
        let spans = beliefs.entry(lock).or_default();
        let key = (lock.as_str(), entry.node.as_str(), *token);
        match phase {
            Phase::Start => {
                holding.insert(key, spans.len());
                spans.push((entry.time_ns, None));
            }
            Phase::End => {
                if let Some(index) = holding.remove(&key) {
                    spans[index].1 = Some(entry.time_ns);
                }
            }
        }
    }
    beliefs
        .into_iter()
        .map(|(lock, spans)| {
            let handoffs = spans
                .windows(2)
                .filter_map(|pair| {
                    let (released, granted) = (pair[0].1?, pair[1].0);
                    (released <= granted).then(|| granted - released)
                })
                .collect();
            let drain_us = (spans.last().map_or(0, |s| s.0) - spans.first().map_or(0, |s| s.0)) / 1000;
            let wakeups = wakeups.get(lock).copied().unwrap_or(0);
            let times = LockTimes { grants: spans.len() as u64, handoff: Spread::of(handoffs), drain_us, wakeups };
            (lock.to_string(), times)
        })
        .collect()
}

/// `requests` and `locks` empty: only the recovery figures.
fn recovery(history: &History) -> Metrics {
    let mut ends = Vec::new();
    let mut grants = Vec::new();
    for entry in &history.entries {
        match &entry.event {
            Event::Fault { phase: Phase::End, .. } => ends.push(entry.time_ns),
            Event::Belief { phase: Phase::Start, .. } => grants.push(entry.time_ns),
            _ => {}
        }
    }
    let mut unrecovered = 0;
    let mut waits = Vec::new();
    if !grants.is_empty() {
        for end in ends {
            // Entries are in time order, so `grants` is sorted.
            match grants.get(grants.partition_point(|grant| *grant < end)) {
                Some(grant) => waits.push(grant - end),
                None => unrecovered += 1,
            }
        }
    }
    Metrics {
        time_model: None,
        requests: BTreeMap::new(),
        locks: BTreeMap::new(),
        recovery: Spread::of(waits),
        unrecovered,
        queues: BTreeMap::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::{Entry, Return};

    fn entry(time_ms: u64, node: &str, event: Event) -> Entry {
        Entry { time_ns: time_ms * 1_000_000, node: node.into(), event }
    }

    fn belief(time_ms: u64, node: &str, token: i64, phase: Phase) -> Entry {
        entry(time_ms, node, Event::Belief { lock: "l".into(), token, phase, reason: None })
    }

    #[test]
    fn the_median_is_the_lower_middle_and_the_headline_reads_the_busiest_lock() {
        assert_eq!(median(vec![9, 1, 5]), Some(5));
        assert_eq!(median(vec![9, 1]), Some(1), "of two, the smaller: a value some run had");
        assert_eq!(median(Vec::new()), None);
        let lock = |grants: u64, handoff_us: u64| LockTimes {
            grants,
            handoff: Spread::of(vec![handoff_us * 1000]),
            drain_us: grants * 10,
            wakeups: 0,
        };
        let mut metrics = Metrics {
            time_model: None,
            requests: BTreeMap::new(),
            locks: [("a".to_string(), lock(3, 7)), ("b".to_string(), lock(5, 9)), ("c".to_string(), lock(5, 4))].into(),
            recovery: Spread::of(vec![2_000_000]),
            unrecovered: 0,
            queues: BTreeMap::new(),
        };
        let headline = metrics.headline();
        assert_eq!(headline.handoff_p50_us, Some(9), "b: most grants, first by name among equals");
        assert_eq!((headline.drain_us, headline.recovery_p50_us, headline.lock_p99_us), (Some(50), Some(2_000), None));
        metrics.locks = [("a".to_string(), lock(1, 7))].into();
        assert_eq!(metrics.headline().drain_us, None, "one grant drains nothing");
        let runs = [Headline { handoff_p50_us: Some(3), ..Headline::default() }, Headline::default(), headline];
        let merged = Headline::median_of(&runs);
        assert_eq!((merged.handoff_p50_us, merged.drain_us), (Some(3), Some(50)), "each over the runs that have it");
    }

    #[test]
    fn percentiles_are_nearest_rank() {
        let spread = Spread::of((1..=100).map(|ms| ms * 1_000_000).collect()).unwrap();
        assert_eq!((spread.p50_us, spread.p90_us, spread.p99_us, spread.max_us), (50_000, 90_000, 99_000, 100_000));
        let one = Spread::of(vec![7_000]).unwrap();
        assert_eq!((one.count, one.p50_us, one.p99_us), (1, 7, 7));
        assert_eq!(Spread::of(Vec::new()), None);
    }

    #[test]
    fn latency_throughput_and_outcomes_by_kind() {
        let mut history = History::new("t", 1);
        let put = |key: &str| Call::Put { key: key.into(), value: "v".into() };
        history.entries = vec![
            entry(0, "c1", Event::Invoke { op: 1, call: put("a") }),
            entry(1, "c2", Event::Invoke { op: 2, call: put("b") }),
            entry(3, "c1", Event::Ok { op: 1, ret: Return::Put { revision: 2 } }),
            entry(5, "c2", Event::Info { op: 2, error: "timeout".into() }),
            entry(6, "c1", Event::Invoke { op: 3, call: put("c") }),
            entry(10, "c1", Event::Ok { op: 3, ret: Return::Put { revision: 3 } }),
            entry(11, "c1", Event::Invoke { op: 4, call: Call::Get { key: "a".into() } }),
        ];
        let metrics = of(&history);
        let puts = &metrics.requests["put"];
        assert_eq!((puts.ok.count, puts.ok.p50_us, puts.ok.max_us), (2, 3_000, 4_000));
        assert_eq!((puts.failed, puts.unknown), (0, 1));
        assert_eq!(puts.per_s, 200.0, "2 puts from 0 to 10 ms");
        assert_eq!(puts.peak_per_s, 30, "3 puts sent in the first 100 ms window");
        // The get never completed: no latency to give, so no entry.
        assert!(!metrics.requests.contains_key("get"));
    }

    #[test]
    fn handoff_drain_and_recovery() {
        let mut history = History::new("t", 1);
        let fault = |phase| Event::Fault {
            fault: 1,
            phase,
            kind: crate::history::FaultKind::Pause,
            targets: vec!["c1".into()],
            detail: String::new(),
        };
        history.entries = vec![
            belief(100, "c1", 1, Phase::Start),
            belief(150, "c1", 1, Phase::End),
            belief(154, "c2", 2, Phase::Start),
            entry(160, "nemesis", fault(Phase::Start)),
            // c3 believes before c2 lets go: an overlap, not a handoff.
            belief(170, "c3", 3, Phase::Start),
            belief(180, "c2", 2, Phase::End),
            entry(200, "nemesis", fault(Phase::End)),
            belief(210, "c3", 3, Phase::End),
            belief(220, "c1", 4, Phase::Start),
            entry(221, "c2", Event::Wakeup { lock: "l".into(), waiter: "c2".into() }),
            entry(300, "nemesis", fault(Phase::End)),
        ];
        let metrics = of(&history);
        let lock = &metrics.locks["l"];
        assert_eq!((lock.grants, lock.drain_us, lock.wakeups), (4, 120_000, 1));
        let handoff = lock.handoff.as_ref().unwrap();
        assert_eq!((handoff.count, handoff.p50_us, handoff.max_us), (2, 4_000, 10_000));
        let recovery = metrics.recovery.as_ref().unwrap();
        assert_eq!((recovery.count, recovery.p50_us), (1, 20_000));
        assert_eq!(metrics.unrecovered, 1);
    }

    #[test]
    fn a_queue_is_summed_up_over_every_window_of_the_run_idle_ones_included() {
        use crate::history::{NodeInfo, QueueSeries};
        let mut history = History::new("q", 1);
        history.duration_ns = 1_000_000_000; // 10 windows of 100 ms
        history.nodes = vec![
            NodeInfo { name: "s1".into(), role: NodeRole::Server },
            NodeInfo { name: "s2".into(), role: NodeRole::Server },
            NodeInfo { name: "resource".into(), role: NodeRole::Resource },
        ];
        history.queues = vec![
            QueueSeries { node: "s1".into(), window_ms: 100, deepest: vec![[0, 3], [100, 250], [200, 250], [500, 7]] },
            QueueSeries { node: "s2".into(), window_ms: 100, deepest: vec![] },
            QueueSeries { node: "resource".into(), window_ms: 100, deepest: vec![[0, 900]] },
        ];
        history.validate().unwrap();
        let metrics = of(&history);
        let s1 = &metrics.queues["s1"];
        // Depths over the 10 windows: 0 x6, 3, 7, 250, 250.
        assert_eq!((s1.deepest, s1.deepest_at_ms), (250, 100), "the first window of the deepest");
        assert_eq!((s1.p50, s1.p99, s1.busy_windows, s1.windows), (0, 250, 4, 10));
        assert!(!metrics.queues.contains_key("s2"), "a node that never queued has no figures");
        assert_eq!(metrics.headline().queue_p99, Some(250), "the servers' p99, not the resource's");
        let mut out_of_order = history.clone();
        out_of_order.queues[0].deepest.swap(0, 1);
        assert!(out_of_order.validate().unwrap_err().to_string().contains("queues[0].deepest[1]"));
    }
}
