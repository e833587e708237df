//! Progress: once the faults have stopped, the lock is in use again — granted in the fault-free
//! tail of the run, or held by a client through it. A liveness check on the liveness phase of a
//! `[chaos]` scenario, or the time after the last scheduled fault. A deadlock (a waiter that
//! sleeps forever, a lease that never expires while its owner is gone) shows up as a tail in
//! which nobody holds the lock and nobody is granted it.
//!
//! The tail starts when the last fault ends; it must last at least [`TAIL_MIN_NS`] to be judged,
//! otherwise the verdict is `unknown`.
//!
//! A queue can also stall while the run goes on (docs/cases/07 and 08: an orphaned queue entry,
//! a waiter asleep on a watch that never fires): so, at any time of the run, a lock that some
//! client is waiting for, that nobody holds, with no fault active, may stay so for at most
//! [`stuck_bound_ns`] (twice the longest lease TTL granted, at least [`TAIL_MIN_NS`]: a holder
//! that died without releasing is replaced after its lease expires). A longer stretch is a stuck
//! queue and fails the property.
//!
//! A lock of the clients' own recipe (no `lock` call: `grants.rs`) is granted by its holders'
//! beliefs, and judged on them the same way; its waiters are not recorded, so only the tail is.

use std::collections::{BTreeMap, BTreeSet};

use crate::history::{Call, Event, History, Phase, Return};
use crate::properties::grants::{GrantSource, grants};
use crate::verdict::{Finding, PropertyReport, Verdict};

/// Shortest fault-free tail that can be judged: long enough for an election, a lease expiry at
/// the TTLs scenarios use, and a grant.
pub const TAIL_MIN_NS: u64 = 5_000_000_000;

pub(super) fn check(history: &History) -> PropertyReport {
    let locks = history
        .entries
        .iter()
        .any(|e| matches!(e.event, Event::Invoke { call: Call::Lock { .. }, .. } | Event::Belief { .. }));
    if !locks {
        let summary = "no lock operations or beliefs in this history: nothing to judge".to_string();
        return PropertyReport { property: "progress".into(), verdict: Verdict::Pass, summary, findings: Vec::new() };
    }
    let faults_end_ns = history
        .entries
        .iter()
        .filter(|e| matches!(e.event, Event::Fault { phase: Phase::End, .. }))
        .map(|e| e.time_ns)
        .max()
        .unwrap_or(0);
    let tail_ns = history.duration_ns.saturating_sub(faults_end_ns);
    let own: BTreeSet<usize> =
        grants(history).iter().filter(|g| g.source == GrantSource::Belief).map(|g| g.entry).collect();
    let grants: Vec<usize> = history
        .entries
        .iter()
        .enumerate()
        .filter(|(index, e)| {
            e.time_ns >= faults_end_ns
                && (matches!(e.event, Event::Ok { ret: Return::Locked { .. }, .. }) || own.contains(index))
        })
        .map(|(index, _)| index)
        .collect();
    let from = History::fmt_time(faults_end_ns);
    let (verdict, summary, findings) = if tail_ns < TAIL_MIN_NS {
        let summary =
            format!("only {} ms without faults after {from}: too short to judge progress", tail_ns / 1_000_000);
        (Verdict::Unknown, summary, Vec::new())
    } else if grants.is_empty()
        && let Some(holder) = held_through(history, faults_end_ns)
    {
        (Verdict::Pass, format!("{holder} held the lock from before {from} on; no new grant was needed"), Vec::new())
    } else if grants.is_empty() {
        let finding = Finding {
            time_ns: faults_end_ns,
            until_ns: Some(history.duration_ns),
            message: format!(
                "nobody held or was granted the lock in the {} ms without faults from {from} to the end of the run",
                tail_ns / 1_000_000
            ),
            entries: Vec::new(),
        };
        (Verdict::Fail, "the lock was never held again after the faults stopped".to_string(), vec![finding])
    } else {
        let first = &history.entries[grants[0]];
        let summary = format!(
            "{} grants after the faults stopped at {from}, the first at {}",
            grants.len(),
            History::fmt_time(first.time_ns)
        );
        (Verdict::Pass, summary, Vec::new())
    };
    let stuck = stuck_queues(history);
    if stuck.is_empty() {
        return PropertyReport { property: "progress".into(), verdict, summary, findings };
    }
    let bound_ms = stuck_bound_ns(history) / 1_000_000;
    let summary = format!(
        "{} stretch(es) without faults in which a waiter waited, nobody held the lock, for over {bound_ms} ms{}",
        stuck.len(),
        match verdict {
            Verdict::Fail => format!("; and {summary}"),
            _ => String::new(),
        }
    );
    let mut all = stuck;
    all.extend(findings);
    PropertyReport { property: "progress".into(), verdict: Verdict::Fail, summary, findings: all }
}

/// How long a lock may stay free while someone waits for it with no fault active: twice the
/// longest TTL granted in the run, at least [`TAIL_MIN_NS`].
pub fn stuck_bound_ns(history: &History) -> u64 {
    let longest_ttl_ms = history
        .entries
        .iter()
        .filter_map(|e| match &e.event {
            Event::Ok { ret: Return::LeaseGranted { ttl_ms, .. }, .. } => Some(*ttl_ms),
            _ => None,
        })
        .max()
        .unwrap_or(0);
    TAIL_MIN_NS.max(2 * longest_ttl_ms * 1_000_000)
}

/// The stretches of the run, per lock, in which a lock request was pending, no client believed it
/// held the lock and no fault was active, longer than [`stuck_bound_ns`].
fn stuck_queues(history: &History) -> Vec<Finding> {
    let bound_ns = stuck_bound_ns(history);
    // time → (pending requests, holders, active faults) deltas, per lock; faults count for all.
    let mut deltas: BTreeMap<String, BTreeMap<u64, [i64; 3]>> = BTreeMap::new();
    let mut faults: BTreeMap<u64, i64> = BTreeMap::new();
    let mut waiters: BTreeMap<String, Vec<(u64, u64, String)>> = BTreeMap::new();
    for request in super::locks::lock_requests(history) {
        let end = request.complete.map_or(history.duration_ns, |(ns, _)| ns);
        let lock = deltas.entry(request.lock.clone()).or_default();
        lock.entry(request.invoke_ns).or_default()[0] += 1;
        lock.entry(end).or_default()[0] -= 1;
        waiters.entry(request.lock.clone()).or_default().push((request.invoke_ns, end, request.client.clone()));
    }
    for (lock, beliefs) in super::beliefs::beliefs(history) {
        let lock = deltas.entry(lock).or_default();
        for belief in beliefs {
            lock.entry(belief.start_ns).or_default()[1] += 1;
            lock.entry(belief.end_ns).or_default()[1] -= 1;
        }
    }
    for entry in &history.entries {
        if let Event::Fault { phase, .. } = &entry.event {
            *faults.entry(entry.time_ns).or_default() += if *phase == Phase::Start { 1 } else { -1 };
        }
    }
    let mut findings = Vec::new();
    for (lock, mut timeline) in deltas {
        for (time, delta) in &faults {
            timeline.entry(*time).or_default()[2] += delta;
        }
        timeline.entry(history.duration_ns).or_default();
        let mut counts = [0i64; 3];
        let mut since: Option<u64> = None;
        for (time, delta) in timeline {
            let stuck_before = counts[0] > 0 && counts[1] <= 0 && counts[2] <= 0;
            for (count, d) in counts.iter_mut().zip(delta) {
                *count += d;
            }
            let stuck_after = counts[0] > 0 && counts[1] <= 0 && counts[2] <= 0 && time < history.duration_ns;
            match (stuck_before, stuck_after, since) {
                (false, true, _) => since = Some(time),
                (true, false, Some(from)) => {
                    since = None;
                    if time - from > bound_ns {
                        findings.push(stuck_finding(&lock, from, time, &waiters[&lock]));
                    }
                }
                _ => {}
            }
        }
    }
    findings
}

fn stuck_finding(lock: &str, from: u64, until: u64, waiters: &[(u64, u64, String)]) -> Finding {
    let mut names: Vec<&str> =
        waiters.iter().filter(|(start, end, _)| *start <= from && *end >= until).map(|(_, _, c)| c.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    Finding {
        time_ns: from,
        until_ns: Some(until),
        message: format!(
            "lock {lock}: free from {} to {} ({} ms, no fault active) while {} waited: a stuck queue",
            History::fmt_time(from),
            History::fmt_time(until),
            (until - from) / 1_000_000,
            if names.is_empty() { "a client".to_string() } else { names.join(", ") }
        ),
        entries: Vec::new(),
    }
}

/// A client whose belief in holding a lock lasts past `from_ns` (and is not cut short by a crash).
fn held_through(history: &History, from_ns: u64) -> Option<String> {
    let beliefs = super::beliefs::beliefs(history);
    beliefs.values().flatten().find(|b| b.start_ns <= from_ns && b.end_ns > from_ns).map(|b| b.client.clone())
}
