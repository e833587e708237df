//! Lease safety: a lease is never expired while its owner renewed it within its TTL, measured
//! in true time (docs/cases/03, 04, 09).
//!
//! The server extends a lease at some moment between the send of a keepalive and the receipt
//! of its acknowledgement, so after an acknowledged keepalive sent at `t` the lease must live at
//! least until `t + TTL`. An expiry (the leader's committed revocation) before that is early; a
//! keepalive acknowledged although it was sent after the expiry is an acknowledgement the
//! cluster did not honour. A leader whose clock runs fast expires leases early; one whose clock
//! runs slow keeps them late, which the report states as the worst lateness (a liveness figure,
//! not a violation here).
//!
//! An expiry observed from outside (a real cluster, polled: `lease_expiry` with `latest_ns`)
//! happened at some time in `time_ns..=latest_ns`; a finding must hold for every time in it. An
//! acknowledged keepalive renewed the lease at a moment after its send, so an expiry no later than
//! `latest_ns` that is also earlier than `send + TTL` is early whichever the moment was; a
//! keepalive sent after `latest_ns` and acknowledged was answered for a dead lease.

use std::collections::BTreeMap;

use crate::history::{Call, Event, History, OpId, Return};
use crate::properties::leases::expired_when;
use crate::verdict::{Finding, PropertyReport, Verdict};

#[derive(Default)]
struct Lease {
    owner: String,
    ttl_ms: u64,
    /// (invoke time, ok time, ok entry) of the grant and every acknowledged keepalive.
    renewals: Vec<(u64, u64, usize)>,
    /// (earliest time, latest time, entry) of its expiry: equal times unless observed from outside.
    expired: Option<(u64, u64, usize)>,
}

pub(super) fn check(history: &History) -> PropertyReport {
    let leases = collect(history);
    let mut findings = Vec::new();
    let mut worst_early_ms = 0u64;
    let mut worst_late_ms = 0u64;
    let mut expiries = 0usize;
    for (id, lease) in &leases {
        let Some((expired_ns, latest_ns, expiry_entry)) = lease.expired else { continue };
        expiries += 1;
        let ttl_ns = lease.ttl_ms * 1_000_000;
        let when = expired_when(expired_ns, latest_ns);
        let before: Vec<&(u64, u64, usize)> = lease.renewals.iter().filter(|(sent, _, _)| *sent < latest_ns).collect();
        if let Some(&&(sent_ns, acked_ns, entry)) = before.iter().max_by_key(|(sent, _, _)| *sent) {
            let earliest_ns = sent_ns + ttl_ns;
            if latest_ns < earliest_ns {
                let early_ms = (earliest_ns - latest_ns) / 1_000_000;
                worst_early_ms = worst_early_ms.max(early_ms);
                findings.push(Finding {
                    time_ns: latest_ns,
                    until_ns: None,
                    message: format!(
                        "lease {id} of {} expired {when}, {early_ms} ms early: renewed by a keepalive sent at {} (TTL {} ms)",
                        lease.owner,
                        History::fmt_time(sent_ns),
                        lease.ttl_ms
                    ),
                    entries: vec![entry, expiry_entry],
                });
            }
            let latest_renewal_ns = before.iter().map(|(_, acked, _)| *acked).max().unwrap_or(acked_ns);
            worst_late_ms = worst_late_ms.max(expired_ns.saturating_sub(latest_renewal_ns + ttl_ns) / 1_000_000);
        }
        for &(sent_ns, acked_ns, entry) in lease.renewals.iter().filter(|(sent, _, _)| *sent > latest_ns) {
            findings.push(Finding {
                time_ns: acked_ns,
                until_ns: None,
                message: format!(
                    "a keepalive for lease {id} of {} sent at {} was acknowledged at {}, but the lease had expired {when}",
                    lease.owner,
                    History::fmt_time(sent_ns),
                    History::fmt_time(acked_ns),
                ),
                entries: vec![expiry_entry, entry],
            });
        }
    }
    findings.sort_by_key(|f| f.time_ns);
    let verdict = if findings.is_empty() { Verdict::Pass } else { Verdict::Fail };
    let summary = match verdict {
        Verdict::Pass => format!(
            "{} leases, {expiries} expired, none early; the latest expired {worst_late_ms} ms after its last renewal's TTL{}",
            leases.len(),
            history.lease_resolution_note()
        ),
        _ => format!(
            "{} violations; worst early expiry {worst_early_ms} ms{}",
            findings.len(),
            history.lease_resolution_note()
        ),
    };
    PropertyReport { property: "lease_safety".into(), verdict, summary, findings }
}

/// Every granted lease with its renewals and expiry.
fn collect(history: &History) -> BTreeMap<i64, Lease> {
    let mut invoked: BTreeMap<OpId, (u64, Option<i64>)> = BTreeMap::new();
    let mut leases: BTreeMap<i64, Lease> = BTreeMap::new();
    let mut expiries: BTreeMap<i64, (u64, u64, usize)> = BTreeMap::new();
    for (index, entry) in history.entries.iter().enumerate() {
        match &entry.event {
            Event::Invoke { op, call: Call::LeaseGrant { .. } } => {
                invoked.insert(*op, (entry.time_ns, None));
            }
            Event::Invoke { op, call: Call::LeaseKeepAlive { lease } | Call::SessionTouch { lease, .. } } => {
                invoked.insert(*op, (entry.time_ns, Some(*lease)));
            }
            Event::Ok { op, ret: Return::LeaseGranted { lease, ttl_ms } } => {
                if let Some((sent, _)) = invoked.remove(op) {
                    let record = leases.entry(*lease).or_default();
                    record.owner = entry.node.clone();
                    record.ttl_ms = *ttl_ms;
                    record.renewals.push((sent, entry.time_ns, index));
                }
            }
            Event::Ok { op, ret: Return::LeaseKeptAlive { .. } } => {
                if let Some((sent, Some(lease))) = invoked.remove(op)
                    && let Some(record) = leases.get_mut(&lease)
                {
                    record.renewals.push((sent, entry.time_ns, index));
                }
            }
            // Attached at the end: the leader can expire a lease before its grant's reply
            // reaches the client.
            Event::LeaseExpiry { lease, latest_ns } => {
                let latest_ns = latest_ns.unwrap_or(entry.time_ns).max(entry.time_ns);
                expiries.entry(*lease).or_insert((entry.time_ns, latest_ns, index));
            }
            _ => {}
        }
    }
    for (id, record) in &mut leases {
        record.expired = expiries.remove(id);
    }
    leases
}
