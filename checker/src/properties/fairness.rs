//! Fairness: a lock is granted first come, first served, and nobody waits forever.
//!
//! First come, first served is defined, as for Lamport's bakery algorithm, with respect to the
//! *doorway*, the bounded first step of a request (here: joining the queue): if `a` finished its
//! doorway before `b` started, `a` is granted first. Two requests whose doorways overlap may go
//! either way, so the order of invocations alone proves nothing (a request delayed by an election
//! may join the queue after a later one). The history shows that `a` joined before `b` asked when
//! - both were granted and `a`'s fencing token is lower (in the queue recipes the token is the
//!   creation revision of the waiter's entry: the queue order), or
//! - `a` recorded a `wakeup` for the lock before `b` was invoked (it was already waiting).
//!
//! The rule, per lock: `b` **overtakes** `a` when `b` is granted while `a` is still waiting (`a` is
//! granted later, or never completes; and neither its client crashed nor its lease ended in
//! between, which would have taken it out of the queue) and the history shows that `a` joined
//! before `b` asked. Every overtaking is a finding. The summary reports the longest wait
//! (invocation to grant) and the requests still waiting at the end of the run. Recipes that are
//! not FIFO (compare-and-swap with backoff) fail; their scenarios say so.
//!
//! A grant with the token its client was already granted on that lock is the same queue entry
//! found again, not a new request: a release that timed out may never have applied, and etcd's
//! `Lock` with the same lease re-finds its own key (`concurrency.Mutex.tryAcquire`: the key is
//! `prefix/lease`, kept when it exists) as Curator's protection mode re-finds its node. Such a
//! request joined the queue when the request that first got the token asked
//! (`swarm-deposed-leader-expires-leases` seed 1757: c2's unlock timed out at 23.9 s, its lock
//! at 24.2 s returned its old key, token 13, asked at 10.3 s before c1's at 11.2 s).

use std::collections::BTreeMap;

use crate::history::{Event, History};
use crate::properties::leases::{crashes, lease_ends};
use crate::properties::locks::{LockOutcome, LockRequest, lock_requests};
use crate::verdict::{Finding, PropertyReport, Verdict};

pub(super) fn check(history: &History) -> PropertyReport {
    let requests = lock_requests(history);
    let crashes = crashes(history);
    // (client, lock) → times of its wakeups.
    let mut wakeups: BTreeMap<(&str, &str), Vec<u64>> = BTreeMap::new();
    for entry in &history.entries {
        if let Event::Wakeup { lock, .. } = &entry.event {
            wakeups.entry((&entry.node, lock)).or_default().push(entry.time_ns);
        }
    }
    // Each lease's end: its expiry or its owner's revocation, whichever came first.
    let lease_ends: BTreeMap<i64, u64> =
        lease_ends(history).into_iter().map(|(lease, end)| (lease, end.time_ns)).collect();
    // When each request stopped waiting: its completion, its client's crash, the end of its lease
    // (its queue entry went with it), or the end of the run.
    let waited_until = |r: &LockRequest| -> u64 {
        let crashed = crashes.get(r.client.as_str()).and_then(|t| t.iter().copied().find(|&t| t >= r.invoke_ns));
        let lease_end = lease_ends.get(&r.lease).copied().filter(|&ns| ns >= r.invoke_ns);
        [crashed, lease_end, r.complete.map(|(ns, _)| ns)].into_iter().flatten().min().unwrap_or(history.duration_ns)
    };
    // When each granted request joined the queue: its own invocation, or that of the first
    // request of its client granted the same token on the same lock (the same entry).
    let mut first_ask: BTreeMap<(&str, &str, i64), u64> = BTreeMap::new();
    for r in &requests {
        if let Some((_, token)) = r.granted() {
            let ask = first_ask.entry((r.client.as_str(), r.lock.as_str(), token)).or_insert(r.invoke_ns);
            *ask = (*ask).min(r.invoke_ns);
        }
    }
    let joined_ns = |r: &LockRequest| -> u64 {
        r.granted()
            .and_then(|(_, token)| first_ask.get(&(r.client.as_str(), r.lock.as_str(), token)))
            .map_or(r.invoke_ns, |&ns| ns.min(r.invoke_ns))
    };
    let joined_before = |a: &LockRequest, b: &LockRequest| -> bool {
        let by_token = matches!((a.granted(), b.granted()), (Some((_, ta)), Some((_, tb))) if ta < tb);
        let until_ns = waited_until(a).min(joined_ns(b));
        let by_wakeup = wakeups
            .get(&(a.client.as_str(), a.lock.as_str()))
            .is_some_and(|times| times.iter().any(|&t| t >= a.invoke_ns && t < until_ns));
        by_token || by_wakeup
    };
    let mut findings = Vec::new();
    for b in &requests {
        let Some((b_granted_ns, b_token)) = b.granted() else { continue };
        let b_joined_ns = joined_ns(b);
        for a in requests.iter().filter(|a| a.lock == b.lock && a.client != b.client && a.invoke_ns < b_joined_ns) {
            let still_waiting = match a.outcome {
                LockOutcome::Granted { .. } | LockOutcome::Open => waited_until(a) > b_granted_ns,
                LockOutcome::Failed | LockOutcome::Unknown => false,
            };
            if !still_waiting || !joined_before(a, b) {
                continue;
            }
            let mut entries = vec![a.invoke_entry, b.invoke_entry];
            entries.extend(b.complete.map(|(_, e)| e));
            findings.push(Finding {
                time_ns: b_granted_ns,
                until_ns: None,
                message: format!(
                    "{}: {} (asked at {}) was granted at {} (token {b_token}) while {} (waiting since {}) still waited: overtaken",
                    b.lock,
                    b.client,
                    History::fmt_time(b.invoke_ns),
                    History::fmt_time(b_granted_ns),
                    a.client,
                    History::fmt_time(a.invoke_ns),
                ),
                entries,
            });
        }
    }
    findings.sort_by_key(|f| (f.time_ns, f.entries.clone()));
    let longest = requests
        .iter()
        .filter_map(|r| r.granted().map(|(ns, _)| (ns - r.invoke_ns, r)))
        .max_by_key(|(wait, r)| (*wait, std::cmp::Reverse(r.invoke_entry)));
    let waiting: Vec<&LockRequest> =
        requests.iter().filter(|r| r.outcome == LockOutcome::Open && waited_until(r) == history.duration_ns).collect();
    let longest = match longest {
        Some((wait_ns, r)) => format!(
            "; longest wait {} ms ({} for {}, granted at {})",
            wait_ns / 1_000_000,
            r.client,
            r.lock,
            History::fmt_time(r.granted().map_or(0, |(ns, _)| ns))
        ),
        None => String::new(),
    };
    let still = match waiting.iter().map(|r| history.duration_ns - r.invoke_ns).max() {
        Some(ns) => {
            format!("; {} requests still waiting at the end, the oldest for {} ms", waiting.len(), ns / 1_000_000)
        }
        None => String::new(),
    };
    let granted = requests.iter().filter(|r| r.granted().is_some()).count();
    let verdict = if findings.is_empty() { Verdict::Pass } else { Verdict::Fail };
    let summary = match verdict {
        Verdict::Pass if requests.is_empty() => "no lock requests in this history".to_string(),
        Verdict::Pass => format!("{} requests, {granted} granted, none overtaken{longest}{still}", requests.len()),
        _ => format!("{} overtakings of a waiting request{longest}{still}", findings.len()),
    };
    PropertyReport { property: "fairness".into(), verdict, summary, findings }
}
