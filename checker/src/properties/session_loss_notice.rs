//! Session-loss notice: a client learns in time that the lease or session it waits under is gone.
//! A lock (or election campaign) request made under a lease waits on the lease's behalf: once
//! the service expires the lease, the queue entry is gone, and the request can never be granted
//! rightly. It must end (answered, failed, or given up by its caller) within one TTL of the
//! expiry plus [`SLACK_MS`]: an etcd client renews every third of its TTL and hears at the next
//! renewal that the lease is gone; a ZooKeeper client that hears nothing gives its connection up
//! after two thirds of the session timeout and is told on reconnecting that the session expired;
//! the slack is for the round trips of those requests under the delays a run injects. The shape this catches is etcd issue 19597: `concurrency.Mutex.Lock` (and the v3lock
//! service built on it) waits for the keys before its own to go and only then finds its own key
//! gone with its session, so a waiter whose session expired learns it only when the holder
//! releases, however long that takes; the fix (etcd PR 22387) also watches its own key.
//!
//! The bound counts only time with no fault active: it starts at the expiry, or, while a fault is
//! active then, when the last fault active at that time ends, and a fault that starts before the
//! bound is spent stops the count until it ends (a client paused or cut off cannot hear
//! anything; swarm-grant-without-lease-check seed 137 paused a waiter again 19 ms after its
//! first pause ended). A request whose client crashed ended with it; one whose bound runs past
//! the end of the run is not judged.

use std::collections::BTreeMap;

use crate::history::{Event, History, Phase};
use crate::properties::leases::{LeaseEnd, lease_ends, leases};
use crate::properties::locks::lock_requests;
use crate::verdict::{Finding, PropertyReport, Verdict};

/// The TTL assumed for a lease whose grant the history does not show.
pub const DEFAULT_TTL_MS: u64 = 5_000;

/// Added to the TTL: the round trips that carry the news (a keepalive's answer, a reconnection).
pub const SLACK_MS: u64 = 1_000;

pub(super) fn check(history: &History) -> PropertyReport {
    let ttls: BTreeMap<i64, u64> = leases(history).into_values().map(|l| (l.id, l.ttl_ms)).collect();
    let expiries = expiries(history);
    let faults = fault_spans(history);
    let crashes = super::leases::crashes(history);
    let mut findings = Vec::new();
    let mut judged = 0usize;
    for request in lock_requests(history) {
        let Some(&expired_ns) = expiries.get(&request.lease) else { continue };
        let ended_ns = request.complete.map(|(ns, _)| ns);
        if request.invoke_ns > expired_ns || ended_ns.is_some_and(|end| end <= expired_ns) {
            continue; // not waiting when the lease went
        }
        let ttl_ms = ttls.get(&request.lease).copied().filter(|ttl| *ttl > 0).unwrap_or(DEFAULT_TTL_MS);
        let bound_ms = ttl_ms + SLACK_MS;
        let from_ns = after_faults(expired_ns, &faults);
        let deadline_ns = fault_free_deadline(from_ns, bound_ms * 1_000_000, &faults);
        if deadline_ns > history.duration_ns {
            continue;
        }
        let crashed = crashes
            .get(request.client.as_str())
            .is_some_and(|times| times.iter().any(|t| *t >= request.invoke_ns && *t <= deadline_ns));
        if crashed {
            continue;
        }
        judged += 1;
        if ended_ns.is_some_and(|end| end <= deadline_ns) {
            continue;
        }
        let ended = ended_ns.map_or_else(
            || "was still waiting at the end of the run".to_string(),
            |end| format!("ended only at {}", History::fmt_time(end)),
        );
        let mut entries = vec![request.invoke_entry];
        entries.extend(request.complete.map(|(_, entry)| entry));
        findings.push(Finding {
            time_ns: expired_ns,
            until_ns: Some(ended_ns.unwrap_or(history.duration_ns)),
            message: format!(
                "{}'s lock request for {} under lease {} (asked at {}) {ended}: the lease expired at {}, so the request should have ended within its TTL and {SLACK_MS} ms ({bound_ms} ms{}): a waiter that learns its session is gone only when the holder releases",
                request.client,
                request.lock,
                request.lease,
                History::fmt_time(request.invoke_ns),
                History::fmt_time(expired_ns),
                if from_ns > expired_ns {
                    format!(" after the faults active then ended at {}", History::fmt_time(from_ns))
                } else {
                    String::new()
                },
            ),
            entries,
        });
    }
    let verdict = if findings.is_empty() { Verdict::Pass } else { Verdict::Fail };
    let summary = match verdict {
        Verdict::Pass => {
            format!("{judged} lock requests were waiting when their lease expired; each ended within the lease's TTL")
        }
        _ => format!("{} lock requests went on waiting for over a TTL after their lease expired", findings.len()),
    };
    PropertyReport { property: "session_loss_notice".into(), verdict, summary, findings }
}

/// When each lease expired (not revoked): the latest time a polled expiry may have happened.
fn expiries(history: &History) -> BTreeMap<i64, u64> {
    let mut out = BTreeMap::new();
    for entry in &history.entries {
        if let Event::LeaseExpiry { lease, latest_ns } = &entry.event {
            out.entry(*lease).or_insert(latest_ns.unwrap_or(entry.time_ns).max(entry.time_ns));
        }
    }
    // A lease its owner revoked before it expired is not one the owner lost.
    let ends: BTreeMap<i64, LeaseEnd> = lease_ends(history);
    out.retain(|lease, _| {
        ends.get(lease).is_none_or(|end| matches!(history.entries[end.entry].event, Event::LeaseExpiry { .. }))
    });
    out
}

/// The faults' spans of true time, (start, end), in order of start.
fn fault_spans(history: &History) -> Vec<(u64, u64)> {
    let mut open: BTreeMap<u64, u64> = BTreeMap::new();
    let mut spans = Vec::new();
    for entry in &history.entries {
        if let Event::Fault { fault, phase, .. } = &entry.event {
            match phase {
                Phase::Start => {
                    open.insert(*fault, entry.time_ns);
                }
                Phase::End => {
                    if let Some(start) = open.remove(fault) {
                        spans.push((start, entry.time_ns));
                    }
                }
            }
        }
    }
    spans.extend(open.into_values().map(|start| (start, history.duration_ns)));
    spans.sort_unstable();
    spans
}

/// `from_ns`, or the end of the faults active then (and of those active at that end, and so on).
fn after_faults(from_ns: u64, faults: &[(u64, u64)]) -> u64 {
    let mut at = from_ns;
    loop {
        let later = faults.iter().filter(|(start, end)| *start <= at && *end > at).map(|(_, end)| *end).max();
        match later {
            Some(end) => at = end,
            None => return at,
        }
    }
}

/// When `budget_ns` of time with no fault active has passed since `from_ns` (itself fault-free).
fn fault_free_deadline(from_ns: u64, budget_ns: u64, faults: &[(u64, u64)]) -> u64 {
    let (mut at, mut left) = (from_ns, budget_ns);
    loop {
        // An empty span (a fault that ended as it began) holds nothing, and would hold the
        // loop on one instant.
        let next = faults.iter().filter(|(start, end)| *start >= at && end > start).map(|(start, _)| *start).min();
        match next {
            Some(start) if start < at.saturating_add(left) => {
                left -= start - at;
                at = after_faults(start, faults);
            }
            _ => return at.saturating_add(left),
        }
    }
}
