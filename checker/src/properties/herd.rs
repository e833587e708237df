//! Herd effect: one release of a lock wakes at most one waiter (docs/cases/10). Recipes where
//! each waiter watches only its predecessor (the etcd mutex, the ZooKeeper lock) are herd-free;
//! those where every waiter watches the lock key (compare-and-swap, then watch) wake them all, and
//! a scenario running one expects this property to fail.
//!
//! The rule, per lock: the releases of the holder — the invocation of its `unlock`, the expiry or
//! the revocation of its lease, whichever comes first, once it has learned of its grant — cut
//! the run into windows. Each window may
//! wake one waiter for its release, plus one for each waiter that left the queue inside it
//! (its lease expired or was revoked, or its request ended `info` or `fail` and it removed its
//! entry): with predecessor watches, a departure wakes exactly the one waiter behind it. A
//! request that ended `info` or `fail` left at a time the history does not show: at its end if
//! the client deleted its entry then, or as late as its lease's end if the delete did not get
//! through (seen on real etcd: a failed waiter's key stayed until its lease expired, and that
//! expiry woke the waiter behind it). So each such departure excuses one wakeup in any window
//! from its end to its lease's end (the end of the run if the lease lives on); departures are
//! given to windows earliest-deadline first, which excuses as many wakeups as any assignment
//! can. A window with more wakeups than its release and its departures excuse is a herd; the
//! finding names the release and the waiters woken.
//! Before the first release only departures may wake anyone. A wakeup of a waiter whose lease
//! had already ended is not counted: its entry left the queue with the lease, and its watch,
//! still armed in a dead session, fires on whatever it watched (reported in the summary).

use std::collections::BTreeMap;

use crate::history::{Event, History};
use crate::properties::leases::lease_ends;
use crate::properties::locks::{LockOutcome, LockRequest, lock_requests};
use crate::verdict::{Finding, PropertyReport, Verdict};

/// Something that may wake one waiter: when (at some time in `time_ns..=latest_ns`: see the
/// module docs), the entry, who, and whether it is the holder's release (exact: `latest_ns` is
/// `time_ns`).
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
    let mut wakeups: BTreeMap<&str, Vec<(u64, usize, &str)>> = BTreeMap::new();
    let mut zombies = 0usize;
    for (index, entry) in history.entries.iter().enumerate() {
        if let Event::Wakeup { lock, .. } = &entry.event {
            if left_the_queue(&requests, &lease_ends, &entry.node, lock, entry.time_ns) {
                zombies += 1;
                continue;
            }
            wakeups.entry(lock).or_default().push((entry.time_ns, index, &entry.node));
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

/// Whether `client`'s request for `lock` waiting at `time_ns` had lost its lease by then: its
/// queue entry is gone, and its wakeup (a watch still armed in a dead session) is not one the
/// queue caused.
fn left_the_queue(
    requests: &[LockRequest],
    lease_ends: &BTreeMap<i64, (u64, usize)>,
    client: &str,
    lock: &str,
    time_ns: u64,
) -> bool {
    let waiting = requests.iter().rev().find(|r| {
        r.client == client && r.lock == lock && r.invoke_ns <= time_ns && r.complete.is_none_or(|(ns, _)| ns >= time_ns)
    });
    waiting.and_then(|r| lease_ends.get(&r.lease)).is_some_and(|(ended_ns, _)| *ended_ns < time_ns)
}

/// The departures from `lock`'s queue, in order of their earliest time.
fn departures(requests: &[LockRequest], lock: &str, lease_ends: &BTreeMap<i64, (u64, usize)>) -> Vec<Departure> {
    let mut out: Vec<Departure> = requests
        .iter()
        .filter(|r| r.lock == lock)
        .filter_map(|r| {
            let lease_end = lease_ends.get(&r.lease).copied().filter(|(ns, _)| *ns >= r.invoke_ns);
            let (own, uncertain) = match r.outcome {
                LockOutcome::Granted { .. } => (r.unlock, false),
                LockOutcome::Failed | LockOutcome::Unknown => (r.complete, true),
                LockOutcome::Open => (None, false),
            };
            let (time_ns, entry) = [own, lease_end].into_iter().flatten().min()?;
            // A granted request whose lease ended before it learned of the grant left as a waiter.
            let holder = r.granted().is_some_and(|(granted_ns, _)| time_ns >= granted_ns);
            let latest_ns = match (uncertain, lease_end) {
                (false, _) => time_ns,
                (true, Some((ended_ns, _))) => ended_ns.max(time_ns),
                (true, None) => u64::MAX,
            };
            Some(Departure { time_ns, latest_ns, entry, client: r.client.clone(), holder })
        })
        .collect();
    out.sort_by_key(|d| (d.time_ns, d.entry));
    out
}

/// Counts the wakeups of each window; returns the findings and the largest count after a release.
fn judge(lock: &str, departures: &[Departure], woken: &[(u64, usize, &str)]) -> (Vec<Finding>, usize) {
    let releases: Vec<&Departure> = departures.iter().filter(|d| d.holder).collect();
    let mut findings = Vec::new();
    let mut most = 0usize;
    // The waiters' departures not yet given to a window, in order of their earliest time.
    let mut pending = departures.iter().filter(|d| !d.holder).peekable();
    // Those that may fall in the current window or a later one: (latest time, index).
    let mut open: std::collections::BinaryHeap<std::cmp::Reverse<(u64, usize)>> = Default::default();
    // Window i starts at release i - 1 (window 0: the start of the run).
    for window in 0..=releases.len() {
        let start_ns = if window == 0 { 0 } else { releases[window - 1].time_ns };
        let end_ns = releases.get(window).map_or(u64::MAX, |r| r.time_ns);
        let inside = |ns: u64| ns >= start_ns && ns < end_ns;
        while let Some(d) = pending.next_if(|d| d.time_ns < end_ns) {
            open.push(std::cmp::Reverse((d.latest_ns, d.entry)));
        }
        // Departures that could only have happened before this window are spent.
        while open.peek().is_some_and(|std::cmp::Reverse((latest_ns, _))| *latest_ns < start_ns) {
            open.pop();
        }
        let here: Vec<&(u64, usize, &str)> = woken.iter().filter(|(ns, _, _)| inside(*ns)).collect();
        // Waiters, not wakeups: one waiter woken twice by one release (its watch re-armed on a
        // server that had not applied the delete yet, which ZooKeeper allows after a
        // reconnection: a notification carries no zxid) is not a herd.
        let mut names: Vec<&str> = Vec::new();
        for (_, _, client) in &here {
            if !names.contains(client) {
                names.push(client);
            }
        }
        if window > 0 {
            most = most.max(names.len());
        }
        // The departures this window needs, those whose time runs out first.
        let mut waiters_left = 0;
        while names.len() > usize::from(window > 0) + waiters_left && open.pop().is_some() {
            waiters_left += 1;
        }
        let allowed = usize::from(window > 0) + waiters_left;
        if names.len() <= allowed {
            continue;
        }
        let (time_ns, cause, mut entries) = match window {
            0 if releases.is_empty() => (here[0].0, "with no release in the run".to_string(), Vec::new()),
            0 => (here[0].0, "before the first release".to_string(), Vec::new()),
            _ => {
                let release = releases[window - 1];
                let until = if window < releases.len() { ", before the next" } else { ", the last" };
                let cause =
                    format!("after {}'s release at {}{until}", release.client, History::fmt_time(release.time_ns));
                (release.time_ns, cause, vec![release.entry])
            }
        };
        entries.extend(here.iter().map(|(_, entry, _)| *entry));
        let allowed = match allowed {
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
            until_ns: here.last().map(|(ns, _, _)| *ns),
            message: format!("{lock}: {} waiters woken {cause}, {allowed}{left}: {}", names.len(), names.join(", ")),
            entries,
        });
    }
    (findings, most)
}
