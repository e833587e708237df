//! Herd effect: one release of a lock wakes at most one waiter (docs/cases/10). Recipes where
//! each waiter watches only its predecessor (the etcd mutex, the ZooKeeper lock) are herd-free;
//! those where every waiter watches the lock key (compare-and-swap, then watch) wake them all, and
//! a scenario running one expects this property to fail.
//!
//! The rule, per lock: every wakeup needs a cause, and a cause wakes at most one waiter, one
//! that was already waiting when it happened. The causes are the releases of the holder — the
//! invocation of its `unlock`, the expiry or the revocation of its lease, whichever comes first,
//! once it has learned of its grant — and the departures of waiters (a lease that expired or was
//! revoked, or a request that ended `info` or `fail` and whose entry went): with predecessor
//! watches, a departure wakes exactly the one waiter behind it. A wakeup may be seen after its
//! cause by any delay (a notification slowed by the network, a watch stream re-established after
//! a cut), so a cause is not tied to the window of its release. A request that ended `info` or
//! `fail` left at a time the history does not show: at its end if the client deleted its entry
//! then, or as late as its lease's end if the delete did not get through (seen on real etcd: a
//! failed waiter's key stayed until its lease expired, and that expiry woke the waiter behind
//! it); the run's end if the lease lives on. Likewise an unlock deletes the key at some time
//! between its invocation and its answer, so a waiter that joined meanwhile may be the one it
//! wakes. A lease end a real run observed by polling (`lease_expiry` with `latest_ns`) happened
//! anywhere between the last look that saw the lease alive and the first that saw it gone, so a
//! waiter that joined in between may be the one it woke. Wakeups are given causes
//! earliest-deadline first.
//! The releases cut the run into windows; a window with a wakeup no cause is left for is a herd,
//! and the finding names the release and the waiters woken in that window.
//! Before the first release only departures may wake anyone. A wakeup of a waiter whose lease
//! had already ended is not counted: its entry left the queue with the lease, and its watch,
//! still armed in a dead session, fires on whatever it watched (reported in the summary).
//! A ZooKeeper client (one that records its connection states) may be woken by a departure that
//! happened before it joined: ZooKeeper answers a read from the connected server's own copy of
//! the tree, which may not have applied the departure yet, so the waiter sees its predecessor
//! still there, watches it, and is woken when that server catches up (ZooKeeper Programmer's
//! Guide, "Consistency Guarantees"; seen in swarm-lost-wakeup-on-vanished-predecessor seed 151,
//! under latency faults, on the fixed recipe). Its cause still wakes no one else. etcd's
//! recipes read linearizably, so there a cause wakes only a waiter already waiting.

use std::collections::BTreeMap;

use crate::history::{Event, History};
use crate::properties::leases::{LeaseEnd, lease_ends};
use crate::properties::locks::{LockOutcome, LockRequest, lock_requests};
use crate::verdict::{Finding, PropertyReport, Verdict};

/// Something that may wake one waiter: when (at some time in `time_ns..=latest_ns`: see the
/// module docs; a release's window starts at `time_ns`), the entry, who, and whether it is the
/// holder's release.
#[derive(Clone, Debug)]
struct Departure {
    time_ns: u64,
    latest_ns: u64,
    entry: usize,
    client: String,
    holder: bool,
}

pub(super) fn check(history: &History) -> PropertyReport {
    let requests = lock_requests(history);
    let lease_ends = lease_ends(history);
    let zookeeper: std::collections::BTreeSet<&str> = history
        .entries
        .iter()
        .filter(|e| matches!(e.event, Event::Connection { .. }))
        .map(|e| e.node.as_str())
        .collect();
    let mut wakeups: BTreeMap<&str, Vec<Woken>> = BTreeMap::new();
    let mut zombies = 0usize;
    for (index, entry) in history.entries.iter().enumerate() {
        if let Event::Wakeup { lock, .. } = &entry.event {
            let waiting = waiting_request(&requests, &entry.node, lock, entry.time_ns);
            if waiting.and_then(|r| lease_ends.get(&r.lease)).is_some_and(|end| end.time_ns < entry.time_ns) {
                zombies += 1;
                continue;
            }
            let since_ns = waiting.map_or(0, |r| r.invoke_ns);
            wakeups.entry(lock).or_default().push(Woken {
                time_ns: entry.time_ns,
                entry: index,
                client: &entry.node,
                since_ns,
                reads_lag: zookeeper.contains(entry.node.as_str()),
            });
        }
    }
    let total: usize = wakeups.values().map(Vec::len).sum();
    let mut findings = Vec::new();
    let mut releases = 0usize;
    let mut most = 0usize;
    for (lock, woken) in &wakeups {
        let departures = departures(&requests, lock, &lease_ends);
        releases += departures.iter().filter(|d| d.holder).count();
        let (window_findings, window_most) = judge(lock, &departures, woken);
        findings.extend(window_findings);
        most = most.max(window_most);
    }
    let verdict = if findings.is_empty() { Verdict::Pass } else { Verdict::Fail };
    let zombies = match zombies {
        0 => String::new(),
        n => format!("; {n} wakeups of waiters whose lease had already ended not counted"),
    };
    let summary = match verdict {
        Verdict::Pass if total == 0 && zombies.is_empty() => "no wakeups recorded in this history".to_string(),
        Verdict::Pass => {
            format!("{total} wakeups over {releases} releases, at most {most} per release: no herd{zombies}")
        }
        _ => format!(
            "{} releases woke more than one waiter (up to {most}); {total} wakeups over {releases} releases{zombies}",
            findings.len()
        ),
    };
    PropertyReport { property: "herd".into(), verdict, summary, findings }
}

/// `client`'s request for `lock` waiting at `time_ns`. If its lease had ended by then, its queue
/// entry is gone, and its wakeup (a watch still armed in a dead session) is not one the queue
/// caused.
fn waiting_request<'a>(requests: &'a [LockRequest], client: &str, lock: &str, time_ns: u64) -> Option<&'a LockRequest> {
    requests.iter().rev().find(|r| {
        r.client == client && r.lock == lock && r.invoke_ns <= time_ns && r.complete.is_none_or(|(ns, _)| ns >= time_ns)
    })
}

/// One wakeup: when, its entry, whose, since when its request waited, and whether its reads
/// may lag behind the queue (a ZooKeeper client: see the module docs).
#[derive(Clone, Copy, Debug)]
struct Woken<'a> {
    time_ns: u64,
    entry: usize,
    client: &'a str,
    since_ns: u64,
    reads_lag: bool,
}

/// The departures from `lock`'s queue, in order of their earliest time.
fn departures(requests: &[LockRequest], lock: &str, lease_ends: &BTreeMap<i64, LeaseEnd>) -> Vec<Departure> {
    let mut out: Vec<Departure> = requests
        .iter()
        .filter(|r| r.lock == lock)
        .filter_map(|r| {
            // A lease that ended before the request began is not its departure; one polled gone
            // (real runs) may have ended anywhere in its interval, but not before the request.
            let lease = lease_ends
                .get(&r.lease)
                .filter(|end| end.latest_ns >= r.invoke_ns)
                .map(|end| (end.time_ns.max(r.invoke_ns), end.entry, end.latest_ns));
            // The request's own leaving, and the latest it may have taken effect: an unlock deletes
            // the key between its invocation and its answer (unanswered: as late as the lease's
            // end), so a waiter that joined meanwhile may be the one woken; a request that ended
            // `info` or `fail` may have left its entry behind until its lease's end.
            let own = match r.outcome {
                LockOutcome::Granted { .. } => r.unlock.map(|at| (at, r.unlocked.map_or(u64::MAX, |(ns, _)| ns))),
                LockOutcome::Failed | LockOutcome::Unknown => r.complete.map(|at| (at, u64::MAX)),
                LockOutcome::Open => None,
            };
            let (time_ns, entry) =
                [own.map(|(at, _)| at), lease.map(|(ns, entry, _)| (ns, entry))].into_iter().flatten().min()?;
            let own_latest = own.map_or(u64::MAX, |(_, latest)| latest);
            let lease_latest = lease.map_or(u64::MAX, |(_, _, latest)| latest);
            let latest_ns = own_latest.min(lease_latest).max(time_ns);
            // A granted request whose lease ended before it learned of the grant left as a waiter.
            let holder = r.granted().is_some_and(|(granted_ns, _)| time_ns >= granted_ns);
            Some(Departure { time_ns, latest_ns, entry, client: r.client.clone(), holder })
        })
        .collect();
    out.sort_by_key(|d| (d.time_ns, d.entry));
    out
}

/// Gives each wakeup a cause and reports the windows whose wakeups could not all have one;
/// returns the findings and the most waiters woken in one window after a release.
///
/// A cause (a release, or a waiter's departure: see the module docs) wakes at most one waiter,
/// one that was already waiting when it happened (or, for a ZooKeeper client, joined after it), and the wakeup may be seen later (a watch
/// notification delayed by the network, or by a watch stream re-established after a cut). The
/// wakeups are taken in time order, each given the cause still free whose time runs out first
/// (earliest-deadline first). A waiter woken twice in one window counts once: its watch re-armed
/// on a server that had not applied the delete yet, which ZooKeeper allows after a reconnection
/// (a notification carries no zxid).
fn judge(lock: &str, departures: &[Departure], woken: &[Woken]) -> (Vec<Finding>, usize) {
    let releases: Vec<&Departure> = departures.iter().filter(|d| d.holder).collect();
    let window_of = |ns: u64| releases.partition_point(|r| r.time_ns <= ns);
    // The waiters of each window, each counted once, with their window.
    let mut seen = std::collections::BTreeSet::new();
    let (counted, windows): (Vec<&Woken>, Vec<usize>) =
        woken.iter().map(|w| (w, window_of(w.time_ns))).filter(|(w, window)| seen.insert((*window, w.client))).unzip();
    let mut free = vec![true; departures.len()];
    let mut matched = vec![None; counted.len()];
    for (i, w) in counted.iter().enumerate() {
        let cause = (0..departures.len())
            .filter(|&c| {
                free[c] && departures[c].time_ns <= w.time_ns && (w.reads_lag || departures[c].latest_ns >= w.since_ns)
            })
            .min_by_key(|&c| (departures[c].latest_ns, departures[c].time_ns));
        if let Some(c) = cause {
            free[c] = false;
            matched[i] = Some(c);
        }
    }
    let mut findings = Vec::new();
    let mut most = 0usize;
    // Window i starts at release i - 1 (window 0: the start of the run).
    for window in 0..=releases.len() {
        let here: Vec<usize> = (0..counted.len()).filter(|&i| windows[i] == window).collect();
        if window > 0 {
            most = most.max(here.len());
        }
        let excused = here.iter().filter(|&&i| matched[i].is_some()).count();
        if excused == here.len() {
            continue;
        }
        let waiters_left = here.iter().filter(|&&i| matched[i].is_some_and(|c| !departures[c].holder)).count();
        let (time_ns, cause, mut entries) = match window {
            0 if releases.is_empty() => {
                (counted[here[0]].time_ns, "with no release in the run".to_string(), Vec::new())
            }
            0 => (counted[here[0]].time_ns, "before the first release".to_string(), Vec::new()),
            _ => {
                let release = releases[window - 1];
                let until = if window < releases.len() { ", before the next" } else { ", the last" };
                let cause =
                    format!("after {}'s release at {}{until}", release.client, History::fmt_time(release.time_ns));
                (release.time_ns, cause, vec![release.entry])
            }
        };
        let inside = |ns: u64| window_of(ns) == window;
        entries.extend(woken.iter().filter(|w| inside(w.time_ns)).map(|w| w.entry));
        let names: Vec<&str> = here.iter().map(|&i| counted[i].client).collect();
        let allowed = match excused {
            0 => "none allowed".to_string(),
            n => format!("at most {n} allowed"),
        };
        let left = if waiters_left > 0 {
            format!(" ({waiters_left} waiters left the queue meanwhile)")
        } else {
            String::new()
        };
        findings.push(Finding {
            time_ns,
            until_ns: woken.iter().filter(|w| inside(w.time_ns)).map(|w| w.time_ns).last(),
            message: format!("{lock}: {} waiters woken {cause}, {allowed}{left}: {}", names.len(), names.join(", ")),
            entries,
        });
    }
    (findings, most)
}
