//! Progress: once the faults have stopped, the lock is in use again — granted in the fault-free
//! tail of the run, or held by a client through it. A liveness check on the liveness phase of a
//! `[chaos]` scenario, or the time after the last scheduled fault. A deadlock (a waiter that
//! sleeps forever, a lease that never expires while its owner is gone) shows up as a tail in
//! which nobody holds the lock and nobody is granted it.
//!
//! The tail starts when the last fault ends; it must last at least [`TAIL_MIN_NS`] to be judged,
//! otherwise the verdict is `unknown`.

use crate::history::{Call, Event, History, Phase, Return};
use crate::verdict::{Finding, PropertyReport, Verdict};

/// Shortest fault-free tail that can be judged: long enough for an election, a lease expiry at
/// the TTLs scenarios use, and a grant.
pub const TAIL_MIN_NS: u64 = 5_000_000_000;

pub(super) fn check(history: &History) -> PropertyReport {
    let locks = history.entries.iter().any(|e| matches!(e.event, Event::Invoke { call: Call::Lock { .. }, .. }));
    if !locks {
        let summary = "no lock operations in this history: nothing to judge".to_string();
        return PropertyReport { property: "progress".into(), verdict: Verdict::Pass, summary, findings: Vec::new() };
    }
    let faults_end_ns = history
        .entries
        .iter()
        .filter(|e| matches!(e.event, Event::Fault { phase: Phase::End, .. }))
        .map(|e| e.time_ns)
        .max()
        .unwrap_or(0);
    let tail_ns = history.duration_ns.saturating_sub(faults_end_ns);
    let grants: Vec<usize> = history
        .entries
        .iter()
        .enumerate()
        .filter(|(_, e)| e.time_ns >= faults_end_ns && matches!(e.event, Event::Ok { ret: Return::Locked { .. }, .. }))
        .map(|(index, _)| index)
        .collect();
    let from = History::fmt_time(faults_end_ns);
    let (verdict, summary, findings) = if tail_ns < TAIL_MIN_NS {
        let summary =
            format!("only {} ms without faults after {from}: too short to judge progress", tail_ns / 1_000_000);
        (Verdict::Unknown, summary, Vec::new())
    } else if grants.is_empty()
        && let Some(holder) = held_through(history, faults_end_ns)
    {
        (Verdict::Pass, format!("{holder} held the lock from before {from} on; no new grant was needed"), Vec::new())
    } else if grants.is_empty() {
        let finding = Finding {
            time_ns: faults_end_ns,
            until_ns: Some(history.duration_ns),
            message: format!(
                "nobody held or was granted the lock in the {} ms without faults from {from} to the end of the run",
                tail_ns / 1_000_000
            ),
            entries: Vec::new(),
        };
        (Verdict::Fail, "the lock was never held again after the faults stopped".to_string(), vec![finding])
    } else {
        let first = &history.entries[grants[0]];
        let summary = format!(
            "{} grants after the faults stopped at {from}, the first at {}",
            grants.len(),
            History::fmt_time(first.time_ns)
        );
        (Verdict::Pass, summary, Vec::new())
    };
    PropertyReport { property: "progress".into(), verdict, summary, findings }
}

/// A client whose belief in holding a lock lasts past `from_ns` (and is not cut short by a crash).
fn held_through(history: &History, from_ns: u64) -> Option<String> {
    let beliefs = super::beliefs::beliefs(history);
    beliefs.values().flatten().find(|b| b.start_ns <= from_ns && b.end_ns > from_ns).map(|b| b.client.clone())
}
