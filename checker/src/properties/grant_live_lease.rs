//! Grant implies a live lease: a lock is granted only to a client whose lease (the `lease` of its
//! `lock` call) is still alive at the moment of the grant (docs/cases/02: etcd 3.4's Lock API
//! returned success to a waiter whose lease had expired while it waited, and a third client
//! then acquired too).
//!
//! The history does not show the moment of the grant, only a window for it: it is no earlier than
//! the request's invocation, and — because the queue recipes grant only once every earlier entry
//! of the queue is gone — no earlier than the release of the previous holder (the grant of the
//! same lock with the next lower fencing token, under another lease): the invocation of its
//! `unlock`, its owner's revocation of its lease, or its lease's expiry, whichever came first.
//! The lease's death is its `lease_expiry` record (the leader records it right after applying
//! the revocation, which deletes the lease's keys).
//!
//! The rule: a grant fails when its lease's expiry is recorded **before** the earliest moment the
//! grant could have happened. An expiry between that moment and the reply is ambiguous (granted,
//! then expired before the reply arrived — the ordinary reason clients must still fence): it
//! passes and is counted in the summary. An expiry observed from outside (a real cluster) is known
//! only within `time_ns..=latest_ns`: it fails only if even its latest time precedes the earliest
//! grant moment.

use std::collections::BTreeMap;

use crate::history::{Event, History};
use crate::properties::leases::{expired_when, lease_ends};
use crate::properties::locks::{LockRequest, lock_requests};
use crate::verdict::{Finding, PropertyReport, Verdict};

pub(super) fn check(history: &History) -> PropertyReport {
    let requests = lock_requests(history);
    let expiries = expiries(history);
    let lease_ends = lease_ends(history);
    let release_ns = |grant: &LockRequest| -> Option<u64> {
        let by_unlock = grant.unlock.map(|(ns, _)| ns);
        let by_lease = lease_ends.get(&grant.lease).map(|end| end.time_ns);
        [by_unlock, by_lease].into_iter().flatten().min()
    };
    let granted: Vec<&LockRequest> = requests.iter().filter(|r| r.granted().is_some()).collect();
    let mut findings = Vec::new();
    let mut ambiguous = 0usize;
    for grant in &granted {
        let Some((granted_ns, token)) = grant.granted() else { continue };
        let Some(&(expired_ns, expired_latest_ns, expiry_entry)) = expiries.get(&grant.lease) else { continue };
        let previous = granted
            .iter()
            .filter(|p| p.lock == grant.lock && p.lease != grant.lease)
            .filter(|p| p.granted().is_some_and(|(_, t)| t < token))
            .max_by_key(|p| p.granted().map(|(_, t)| t));
        let previous_release = previous.and_then(|p| release_ns(p).map(|ns| (p, ns)));
        let (earliest_ns, because) = match previous_release {
            Some((p, ns)) if ns > grant.invoke_ns => {
                (ns, format!("{}'s release of the lock (token {})", p.client, token_of(p)))
            }
            _ => (grant.invoke_ns, "the request".to_string()),
        };
        // Observed from outside, the expiry is known only within an interval: it must fall
        // before the earliest grant moment however late in that interval it was.
        if expired_latest_ns < earliest_ns {
            let mut entries = vec![expiry_entry, grant.invoke_entry];
            entries.extend(grant.complete.map(|(_, e)| e));
            findings.push(Finding {
                time_ns: expired_ns,
                until_ns: Some(granted_ns),
                message: format!(
                    "{} was granted {} (token {token}) at {} under lease {}, which had expired {}: the grant came no earlier than {} at {}",
                    grant.client,
                    grant.lock,
                    History::fmt_time(granted_ns),
                    grant.lease,
                    expired_when(expired_ns, expired_latest_ns),
                    because,
                    History::fmt_time(earliest_ns),
                ),
                entries,
            });
        } else if expired_ns <= granted_ns {
            ambiguous += 1;
        }
    }
    let verdict = if findings.is_empty() { Verdict::Pass } else { Verdict::Fail };
    let summary = match verdict {
        Verdict::Pass if granted.is_empty() => "no lock grants in this history".to_string(),
        Verdict::Pass => format!(
            "{} grants, none to an expired lease; {ambiguous} leases expired between the earliest grant moment and the reply (ambiguous, allowed){}",
            granted.len(),
            history.lease_resolution_note()
        ),
        _ => format!("{} grants went to a client whose lease had already expired", findings.len()),
    };
    PropertyReport { property: "grant_live_lease".into(), verdict, summary, findings }
}

fn token_of(request: &LockRequest) -> i64 {
    request.granted().map_or(0, |(_, token)| token)
}

/// The first `lease_expiry` record of each lease: (earliest time, latest time, entry); the two
/// times differ only for an expiry observed from outside.
fn expiries(history: &History) -> BTreeMap<i64, (u64, u64, usize)> {
    let mut out = BTreeMap::new();
    for (index, entry) in history.entries.iter().enumerate() {
        if let Event::LeaseExpiry { lease, latest_ns } = entry.event {
            out.entry(lease).or_insert((entry.time_ns, latest_ns.unwrap_or(entry.time_ns).max(entry.time_ns), index));
        }
    }
    out
}
