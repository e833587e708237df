//! Leases as the history shows them, with everything the lease checkers need beyond the
//! acknowledged renewals: the keepalives (and a ZooKeeper session's touches, `session_touch`)
//! whose outcome is unknown (they may have renewed the lease), the owner's revocation, the
//! leader's checkpoints, the expiry.

use std::collections::BTreeMap;

use crate::history::{Call, Event, FaultKind, History, OpId, Phase, Return};

/// A grant or keepalive that may have reached the server and renewed the lease.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Renewal {
    pub invoke_ns: u64,
    /// When the client learned the outcome: `ok` or `info`. `None` if the operation never
    /// completed (the client crashed, or the run ended).
    pub complete_ns: Option<u64>,
    /// Completed `ok`.
    pub acked: bool,
    /// Index of the invocation entry.
    pub entry: usize,
}

/// One lease granted in the run (its grant completed `ok`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeaseRecord {
    pub id: i64,
    pub owner: String,
    pub ttl_ms: u64,
    /// The grant first, then the keepalives that did not fail, in invocation order.
    pub renewals: Vec<Renewal>,
    /// (time, entry) of the `lease_expiry` record.
    pub expired: Option<(u64, usize)>,
    /// The latest time of that expiry: the same unless it was observed from outside, when it
    /// happened somewhere in `expired.0..=expired_latest_ns`.
    pub expired_latest_ns: Option<u64>,
    /// (invocation time, entry) of the owner's first revocation that did not fail.
    pub revoked: Option<(u64, usize)>,
    /// (completion time, entry) of the first keepalive answered "not found" (`fail`): the lease
    /// was gone by then.
    pub gone: Option<(u64, usize)>,
    /// (time, remaining ms, entry) of every `lease_checkpoint` record.
    pub checkpoints: Vec<(u64, u64, usize)>,
}

/// Every lease whose grant completed `ok`, by id.
pub fn leases(history: &History) -> BTreeMap<i64, LeaseRecord> {
    let mut leases: BTreeMap<i64, LeaseRecord> = BTreeMap::new();
    // Operation → (lease, renewal) of keepalives and revocations in flight.
    let mut keepalives: BTreeMap<OpId, (i64, Renewal)> = BTreeMap::new();
    let mut revokes: BTreeMap<OpId, (i64, u64, usize)> = BTreeMap::new();
    let mut grants: BTreeMap<OpId, (u64, usize)> = BTreeMap::new();
    let mut expiries: BTreeMap<i64, (u64, usize, u64)> = BTreeMap::new();
    let mut checkpoints: BTreeMap<i64, Vec<(u64, u64, usize)>> = BTreeMap::new();
    for (index, entry) in history.entries.iter().enumerate() {
        let now = entry.time_ns;
        match &entry.event {
            Event::Invoke { op, call: Call::LeaseGrant { .. } } => {
                grants.insert(*op, (now, index));
            }
            Event::Invoke { op, call: Call::LeaseKeepAlive { lease } | Call::SessionTouch { lease, .. } } => {
                let renewal = Renewal { invoke_ns: now, complete_ns: None, acked: false, entry: index };
                keepalives.insert(*op, (*lease, renewal));
            }
            Event::Invoke { op, call: Call::LeaseRevoke { lease } } => {
                revokes.insert(*op, (*lease, now, index));
            }
            Event::Ok { op, ret: Return::LeaseGranted { lease, ttl_ms } } => {
                if let Some((invoke_ns, invoke_entry)) = grants.remove(op) {
                    let renewal = Renewal { invoke_ns, complete_ns: Some(now), acked: true, entry: invoke_entry };
                    leases.insert(
                        *lease,
                        LeaseRecord {
                            id: *lease,
                            owner: entry.node.clone(),
                            ttl_ms: *ttl_ms,
                            renewals: vec![renewal],
                            expired: None,
                            expired_latest_ns: None,
                            revoked: None,
                            gone: None,
                            checkpoints: Vec::new(),
                        },
                    );
                }
            }
            Event::Ok { op, .. } | Event::Info { op, .. } => {
                let acked = matches!(entry.event, Event::Ok { .. });
                if let Some((lease, mut renewal)) = keepalives.remove(op)
                    && let Some(record) = leases.get_mut(&lease)
                {
                    renewal.complete_ns = Some(now);
                    renewal.acked = acked;
                    record.renewals.push(renewal);
                }
                if let Some((lease, invoke_ns, invoke_entry)) = revokes.remove(op)
                    && let Some(record) = leases.get_mut(&lease)
                {
                    record.revoked.get_or_insert((invoke_ns, invoke_entry));
                }
            }
            Event::Fail { op, .. } => {
                revokes.remove(op);
                if let Some((lease, _)) = keepalives.remove(op)
                    && let Some(record) = leases.get_mut(&lease)
                {
                    record.gone.get_or_insert((now, index));
                }
            }
            // Kept apart and attached at the end: the leader can checkpoint or expire a lease
            // before its grant's reply reaches the client (a client paused right after sending
            // the grant learns its lease ID only after the lease is gone).
            Event::LeaseExpiry { lease, latest_ns } => {
                expiries.entry(*lease).or_insert((now, index, latest_ns.unwrap_or(now).max(now)));
            }
            Event::LeaseCheckpoint { lease, remaining_ms } => {
                checkpoints.entry(*lease).or_default().push((now, *remaining_ms, index));
            }
            _ => {}
        }
    }
    // Operations that never completed may have reached the server.
    for (lease, renewal) in keepalives.into_values() {
        if let Some(record) = leases.get_mut(&lease) {
            record.renewals.push(renewal);
        }
    }
    for (lease, invoke_ns, invoke_entry) in revokes.into_values() {
        if let Some(record) = leases.get_mut(&lease) {
            let earlier = record.revoked.is_none_or(|(ns, _)| invoke_ns < ns);
            if earlier {
                record.revoked = Some((invoke_ns, invoke_entry));
            }
        }
    }
    for record in leases.values_mut() {
        record.renewals.sort_by_key(|r| (r.invoke_ns, r.entry));
        if let Some((ns, entry, latest_ns)) = expiries.remove(&record.id) {
            record.expired = Some((ns, entry));
            record.expired_latest_ns = Some(latest_ns);
        }
        record.checkpoints = checkpoints.remove(&record.id).unwrap_or_default();
    }
    leases
}

/// When each node crashed: the start of every crash fault aimed at it, in time order.
pub(super) fn crashes(history: &History) -> BTreeMap<&str, Vec<u64>> {
    let mut out: BTreeMap<&str, Vec<u64>> = BTreeMap::new();
    for entry in &history.entries {
        if let Event::Fault { kind: FaultKind::Crash, phase: Phase::Start, targets, .. } = &entry.event {
            for target in targets {
                out.entry(target.as_str()).or_default().push(entry.time_ns);
            }
        }
    }
    out
}

/// When a lease ended: at some true time in `time_ns..=latest_ns`, first shown by `entry`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct LeaseEnd {
    pub time_ns: u64,
    /// The simulator's expiries are exact (`latest_ns == time_ns`); a real cluster's are
    /// observed by polling (`lease_expiry`'s `latest_ns`), and a revocation takes effect between
    /// its invocation and its answer.
    pub latest_ns: u64,
    pub entry: usize,
}

/// When each lease ended, whether or not its grant is in the history: the earlier of its
/// `lease_expiry` record and the invocation of a revocation that did not fail.
pub(super) fn lease_ends(history: &History) -> BTreeMap<i64, LeaseEnd> {
    let mut ends: BTreeMap<i64, LeaseEnd> = BTreeMap::new();
    let mut revokes: BTreeMap<OpId, (i64, u64, usize)> = BTreeMap::new();
    // The earliest end wins; of two ends, the lease was gone by the earlier latest.
    let end = |ends: &mut BTreeMap<i64, LeaseEnd>, lease: i64, at: LeaseEnd| {
        let slot = ends.entry(lease).or_insert(at);
        let latest_ns = slot.latest_ns.min(at.latest_ns);
        if (at.time_ns, at.entry) < (slot.time_ns, slot.entry) {
            *slot = at;
        }
        slot.latest_ns = latest_ns.max(slot.time_ns);
    };
    for (index, entry) in history.entries.iter().enumerate() {
        match &entry.event {
            Event::LeaseExpiry { lease, latest_ns } => {
                let latest_ns = latest_ns.unwrap_or(entry.time_ns).max(entry.time_ns);
                end(&mut ends, *lease, LeaseEnd { time_ns: entry.time_ns, latest_ns, entry: index })
            }
            Event::Invoke { op, call: Call::LeaseRevoke { lease } } => {
                revokes.insert(*op, (*lease, entry.time_ns, index));
            }
            Event::Fail { op, .. } => {
                revokes.remove(op);
            }
            Event::Ok { op, .. } | Event::Info { op, .. } => {
                if let Some((lease, ns, at)) = revokes.remove(op) {
                    end(&mut ends, lease, LeaseEnd { time_ns: ns, latest_ns: entry.time_ns, entry: at });
                }
            }
            _ => {}
        }
    }
    // Unanswered: it may take effect at any later time.
    for (lease, ns, at) in revokes.into_values() {
        end(&mut ends, lease, LeaseEnd { time_ns: ns, latest_ns: u64::MAX, entry: at });
    }
    ends
}

/// When a lease expired, for a finding: "at T", or for an expiry observed from outside (known
/// only within `time_ns..=latest_ns`) "between T1 and T2".
pub(super) fn expired_when(time_ns: u64, latest_ns: u64) -> String {
    match latest_ns > time_ns {
        false => format!("at {}", History::fmt_time(time_ns)),
        true => format!("between {} and {}", History::fmt_time(time_ns), History::fmt_time(latest_ns)),
    }
}
