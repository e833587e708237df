//! Single holder: at every instant of true time at most one client believes it holds a given
//! lock — "at most one acting leader". Leases alone cannot promise this under process pauses
//! (docs/cases/01); they can under clock skew only with a margin between the client's local
//! deadline and the server's expiry that covers the worst rate skew (docs/cases/06, 09).
//!
//! A counting semaphore (its `lock` calls carry `permits` > 1) admits that many holders: for
//! it the rule is "at most `permits` believers at once".

use std::collections::BTreeMap;

use crate::history::History;
use crate::properties::beliefs::{beliefs, overlaps};
use crate::verdict::{Finding, PropertyReport, Verdict};

pub(super) fn check(history: &History) -> PropertyReport {
    let beliefs = beliefs(history);
    let mut permits: BTreeMap<String, u32> = BTreeMap::new();
    for request in super::locks::lock_requests(history) {
        let entry = permits.entry(request.lock.clone()).or_insert(1);
        *entry = (*entry).max(request.permits);
    }
    let semaphores: BTreeMap<&str, u32> =
        permits.iter().filter(|(_, n)| **n > 1).map(|(lock, n)| (lock.as_str(), *n)).collect();
    let overlaps = overlaps(&beliefs);
    let mut findings: Vec<Finding> = overlaps
        .iter()
        .filter(|o| !semaphores.contains_key(o.first.lock.as_str()))
        .map(|o| Finding {
            time_ns: o.start_ns,
            until_ns: Some(o.end_ns),
            message: format!(
                "two holders of {} from {} to {} ({} ms): {} (token {}, since {}) and {} (token {}, since {})",
                o.first.lock,
                History::fmt_time(o.start_ns),
                History::fmt_time(o.end_ns),
                (o.end_ns - o.start_ns) / 1_000_000,
                o.first.client,
                o.first.token,
                History::fmt_time(o.first.start_ns),
                o.second.client,
                o.second.token,
                History::fmt_time(o.second.start_ns),
            ),
            entries: vec![o.first.entry, o.second.entry],
        })
        .collect();
    for (lock, permits) in &semaphores {
        findings.extend(over_permits(lock, *permits, beliefs.get(*lock).map_or(&[], Vec::as_slice)));
    }
    let holds: usize = beliefs.values().map(Vec::len).sum();
    let (verdict, summary) = match findings.len() {
        0 if semaphores.is_empty() => (Verdict::Pass, format!("{holds} holds, never two at once")),
        0 => (Verdict::Pass, format!("{holds} holds, never more than the permits at once")),
        n => (Verdict::Fail, format!("{n} interval{} with too many holders at once", if n == 1 { "" } else { "s" })),
    };
    PropertyReport { property: "single_holder".into(), verdict, summary, findings }
}

/// The stretches in which more than `permits` clients believed they held the semaphore `lock`.
fn over_permits(lock: &str, permits: u32, beliefs: &[super::beliefs::Belief]) -> Vec<Finding> {
    let mut deltas: BTreeMap<u64, i64> = BTreeMap::new();
    for belief in beliefs {
        *deltas.entry(belief.start_ns).or_default() += 1;
        *deltas.entry(belief.end_ns).or_default() -= 1;
    }
    let mut findings = Vec::new();
    let (mut holders, mut since, mut most) = (0i64, None, 0i64);
    for (time, delta) in deltas {
        holders += delta;
        match (holders > i64::from(permits), since) {
            (true, None) => (since, most) = (Some(time), holders),
            (true, Some(_)) => most = most.max(holders),
            (false, Some(from)) => {
                since = None;
                let message = format!(
                    "{most} holders of {lock} (permits: {permits}) from {} to {}",
                    History::fmt_time(from),
                    History::fmt_time(time)
                );
                let entries =
                    beliefs.iter().filter(|b| b.start_ns < time && b.end_ns > from).map(|b| b.entry).collect();
                findings.push(Finding { time_ns: from, until_ns: Some(time), message, entries });
            }
            (false, None) => {}
        }
    }
    findings
}
