//! Spurious expiry: a session timeout too short for the network. A lease exists so that the
//! cluster can tell a dead client from a live one; a lease that expires while its owner runs and
//! keeps renewing, only because the network got slower (latency spikes, lost packets) or a
//! server too busy to renew in time (scenarios/library/watch-storm.toml), is a false expiration: the owner loses its lock and its work for nothing, and sessions churn. The
//! remedy is a TTL that covers the network's worst round trips (and keepalives sent often enough
//! within it), at the price of slower failover when a client really dies.
//!
//! The rule: a lease that expired is *excused* if its owner crashed after it was granted, or if,
//! within its last TTL plus [`FAULT_RECOVERY_MS`] before the expiry, or since its owner's last
//! acknowledged renewal if that is earlier (a new leader restarts the countdown of the leases it
//! takes over, so a lease whose renewals were cut off can expire long after the fault ended), a
//! fault hit its owner (a pause, a crash, a partition or link fault that includes it, a clock
//! fault, dropped replies) or any server (an unavailable cluster cannot renew anything). Faults on the whole network
//! (`latency`, `packet-loss`: no targets) do not excuse it: they are what the TTL must cover.
//! Every other expiry fails the property. Leases revoked by their owner never count, nor do
//! leases it *abandoned*: it was granted a new lease while this one was still alive by its own
//! count (within a TTL of its last acknowledged renewal) and renewed this one no more, so the
//! expiry is the end it chose (etcd's clientv3 leaves a session it stops using to expire the same
//! way; seen on swarm-deposed-leader-expires-leases seed 7903, switch off: a lock call timed out,
//! the client started a new session 1.2 s after a renewal was answered, and the old lease expired
//! a TTL after its last keepalive).
//!
//! A live owner that stops renewing (a client that renews only between holds and works in its
//! critical section for longer than the TTL) fails it too: it lost its lease while it ran, with
//! no fault to blame. The finding tells the two causes apart: the owner's last renewal was
//! answered within the TTL and it sent none for the lease's last TTL (it let the lease lapse),
//! or its last renewals went unanswered (the network).
//!
//! An expiry observed from outside (a real cluster, polled) happened somewhere in
//! `time_ns..=latest_ns`: a crash or fault up to `latest_ns` excuses it, and the window for them
//! opens a TTL before `time_ns`.

use std::collections::BTreeMap;

use crate::history::{Event, History, Phase};
use crate::properties::lease_liveness::FAULT_RECOVERY_MS;
use crate::properties::leases::{Renewal, crashes, expired_when, leases};
use crate::verdict::{Finding, PropertyReport, Verdict};

const MS: u64 = 1_000_000;

/// (start, end, targets) of every fault that names its targets.
fn targeted_faults(history: &History) -> Vec<(u64, u64, Vec<String>)> {
    let mut open: BTreeMap<u64, (u64, Vec<String>)> = BTreeMap::new();
    let mut out = Vec::new();
    for entry in &history.entries {
        let Event::Fault { fault, phase, targets, .. } = &entry.event else { continue };
        if targets.is_empty() {
            continue;
        }
        match phase {
            Phase::Start => {
                open.insert(*fault, (entry.time_ns, targets.clone()));
            }
            Phase::End => {
                if let Some((start, targets)) = open.remove(fault) {
                    out.push((start, entry.time_ns, targets));
                }
            }
        }
    }
    out.extend(open.into_values().map(|(start, targets)| (start, history.duration_ns, targets)));
    out
}

pub(super) fn check(history: &History) -> PropertyReport {
    let leases = leases(history);
    let crashes = crashes(history);
    let faults = targeted_faults(history);
    let servers: Vec<&str> =
        history.nodes.iter().filter(|n| n.role == crate::history::NodeRole::Server).map(|n| n.name.as_str()).collect();
    // Each owner's grant invocations, in time order.
    let mut grants: BTreeMap<&str, Vec<u64>> = BTreeMap::new();
    for lease in leases.values() {
        grants.entry(lease.owner.as_str()).or_default().extend(lease.renewals.first().map(|r| r.invoke_ns));
    }
    grants.values_mut().for_each(|times| times.sort_unstable());
    let mut findings = Vec::new();
    let mut expired = 0usize;
    let mut abandoned = 0usize;
    let mut lapsed_count = 0usize;
    for lease in leases.values() {
        let Some((expired_ns, entry)) = lease.expired else { continue };
        // Observed from outside, the expiry happened somewhere up to `latest_ns`: what excuses it
        // may have come until then.
        let latest_ns = lease.expired_latest_ns.unwrap_or(expired_ns).max(expired_ns);
        expired += 1;
        let granted_ns = lease.renewals.first().map_or(0, |r| r.invoke_ns);
        let crashed = crashes
            .get(lease.owner.as_str())
            .is_some_and(|times| times.iter().any(|&t| t >= granted_ns && t <= latest_ns));
        let last_ack = lease.renewals.iter().filter(|r| r.acked).filter_map(|r| r.complete_ns).max();
        // A lease that outlives its last acknowledged renewal by more than TTL + recovery was
        // kept alive by a new leader restarting its countdown (etcd's lessor Promote): the
        // renewals that failed are all those since that acknowledgement, and a fault then is
        // what cut them off (seen on swarm-deposed-leader-expires-leases seed 539, switch off:
        // renewals lost in 7 s of partitions, the lease expired 4.01 s after the last one ended).
        let window_ns =
            expired_ns.saturating_sub((lease.ttl_ms + FAULT_RECOVERY_MS) * MS).min(last_ack.unwrap_or(u64::MAX));
        let hit = |targets: &[String]| targets.iter().any(|t| *t == lease.owner || servers.contains(&t.as_str()));
        let excused =
            faults.iter().any(|(start, end, targets)| *start <= latest_ns && *end >= window_ns && hit(targets));
        if crashed || excused {
            continue;
        }
        let last_sent = lease.renewals.iter().map(|r| r.invoke_ns).max().unwrap_or(granted_ns);
        let next_grant = grants[lease.owner.as_str()].iter().copied().find(|&t| t > last_sent);
        let alive_by_owner = |t: u64| last_ack.is_some_and(|ack| t <= ack + lease.ttl_ms * MS);
        if next_grant.is_some_and(|t| t < latest_ns && alive_by_owner(t)) {
            abandoned += 1;
            continue;
        }
        // The verdict is the same either way; the cause differs. An owner whose last renewal
        // came back promptly and that then sent nothing for a whole TTL let its lease lapse (it
        // renews only when idle: self-eviction). One whose last renewals went unanswered lost
        // them to the network, even if it then gave up its session and stopped sending.
        let last = lease.renewals.iter().max_by_key(|r| (r.invoke_ns, r.entry));
        let answered = |r: &&Renewal| r.acked && r.complete_ns.is_some_and(|c| c - r.invoke_ns < lease.ttl_ms * MS);
        let lapsed = last.filter(answered).filter(|r| r.invoke_ns + lease.ttl_ms * MS <= expired_ns);
        let lapsed = lapsed.is_some();
        lapsed_count += usize::from(lapsed);
        let cause = if lapsed {
            format!(
                "{} sent no renewal in its last TTL (the last at {}): it stopped renewing while it ran",
                lease.owner,
                History::fmt_time(last_sent)
            )
        } else {
            "only delays stood in the way (the network's, or a busy server's)".to_string()
        };
        findings.push(Finding {
            time_ns: expired_ns,
            until_ns: None,
            message: format!(
                "lease {} of {} (TTL {} ms) expired {} while {} was running and no fault had hit it or the servers since {}: {cause}{}",
                lease.id,
                lease.owner,
                lease.ttl_ms,
                expired_when(expired_ns, latest_ns),
                lease.owner,
                History::fmt_time(window_ns),
                last_ack.map_or(String::new(), |ns| format!(" (last acknowledged renewal at {})", History::fmt_time(ns))),
            ),
            entries: vec![entry],
        });
    }
    let verdict = if findings.is_empty() { Verdict::Pass } else { Verdict::Fail };
    let summary = match verdict {
        Verdict::Pass if expired == 0 => format!("{} leases, none expired", leases.len()),
        Verdict::Pass if abandoned == 0 => format!(
            "{expired} of {} leases expired, each after a crash or a fault on its owner or the servers",
            leases.len()
        ),
        Verdict::Pass => format!(
            "{expired} of {} leases expired, each after a crash or a fault on its owner or the servers, or abandoned by its owner for a new one ({abandoned})",
            leases.len()
        ),
        _ if lapsed_count == 0 => format!(
            "{} of {expired} expired leases had a live owner that no fault had cut off: false expirations, the TTL is too short for the network",
            findings.len()
        ),
        _ => format!(
            "{} of {expired} expired leases had a live owner that no fault had cut off: {} lost to the network (a TTL too short for it), {lapsed_count} let lapse by an owner that sent no renewal for a whole TTL while it ran (self-eviction)",
            findings.len(),
            findings.len() - lapsed_count
        ),
    };
    let summary = summary + &history.lease_resolution_note();
    PropertyReport { property: "spurious_expiry".into(), verdict, summary, findings }
}
