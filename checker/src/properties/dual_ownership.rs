//! Dual ownership: intervals of true time in which two or more clients believed they held the
//! same lock. Under process pauses and partitions these are expected — a lease cannot tell a
//! paused holder that it lost the lock — and they are the reason fencing exists. Reported, never
//! a failure.

use std::collections::BTreeMap;

use crate::history::{Event, History, Phase};
use crate::verdict::{Finding, PropertyReport, Verdict};

#[derive(Clone, Debug)]
struct Belief {
    client: String,
    token: i64,
    start_ns: u64,
    end_ns: u64,
    entry: usize,
}

pub(super) fn check(history: &History) -> PropertyReport {
    let mut by_lock: BTreeMap<String, Vec<Belief>> = BTreeMap::new();
    let mut open: BTreeMap<(String, String, i64), usize> = BTreeMap::new();
    for (index, entry) in history.entries.iter().enumerate() {
        let Event::Belief {
            lock, token, phase, ..
        } = &entry.event
        else {
            continue;
        };
        let key = (lock.clone(), entry.node.clone(), *token);
        match phase {
            Phase::Start => {
                let beliefs = by_lock.entry(lock.clone()).or_default();
                open.insert(key, beliefs.len());
                beliefs.push(Belief {
                    client: entry.node.clone(),
                    token: *token,
                    start_ns: entry.time_ns,
                    end_ns: history.duration_ns.max(entry.time_ns),
                    entry: index,
                });
            }
            Phase::End => {
                if let Some(slot) = open.remove(&key) {
                    by_lock.get_mut(lock).expect("a lock with an open belief")[slot].end_ns =
                        entry.time_ns;
                }
            }
        }
    }

    let mut findings = Vec::new();
    for (lock, beliefs) in &by_lock {
        for (i, a) in beliefs.iter().enumerate() {
            for b in &beliefs[i + 1..] {
                let start = a.start_ns.max(b.start_ns);
                let end = a.end_ns.min(b.end_ns);
                if a.client == b.client || start >= end {
                    continue;
                }
                findings.push(Finding {
                    time_ns: start,
                    until_ns: Some(end),
                    message: format!(
                        "{} (token {}) and {} (token {}) both believed they held {lock} from {} to {} ({} ms)",
                        a.client,
                        a.token,
                        b.client,
                        b.token,
                        History::fmt_time(start),
                        History::fmt_time(end),
                        (end - start) / 1_000_000,
                    ),
                    entries: vec![a.entry, b.entry],
                });
            }
        }
    }
    findings.sort_by_key(|f| (f.time_ns, f.until_ns));
    let total_ms: u64 = findings
        .iter()
        .map(|f| (f.until_ns.unwrap_or(f.time_ns) - f.time_ns) / 1_000_000)
        .sum();
    let summary = if findings.is_empty() {
        "no two clients believed they held the same lock at once".to_string()
    } else {
        format!(
            "{} dual-ownership intervals, {total_ms} ms in total (expected under pauses: fencing must cover them)",
            findings.len()
        )
    };
    PropertyReport {
        property: "dual_ownership".into(),
        verdict: Verdict::Pass,
        summary,
        findings,
    }
}
