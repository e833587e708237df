//! Dual ownership: intervals of true time in which two or more clients believed they held the
//! same lock, with their length. Under process pauses and partitions these are expected — a
//! lease cannot tell a paused holder that it lost the lock — and they are the reason fencing
//! exists. Reported, never a failure (`single_holder` is the property that judges them).

use crate::history::History;
use crate::properties::beliefs::{beliefs, overlaps};
use crate::verdict::{Finding, PropertyReport, Verdict};

pub(super) fn check(history: &History) -> PropertyReport {
    let beliefs = beliefs(history);
    let findings: Vec<Finding> = overlaps(&beliefs)
        .into_iter()
        .map(|o| Finding {
            time_ns: o.start_ns,
            until_ns: Some(o.end_ns),
            message: format!(
                "{} (token {}) and {} (token {}) both believed they held {} from {} to {} ({} ms)",
                o.first.client,
                o.first.token,
                o.second.client,
                o.second.token,
                o.first.lock,
                History::fmt_time(o.start_ns),
                History::fmt_time(o.end_ns),
                (o.end_ns - o.start_ns) / 1_000_000,
            ),
            entries: vec![o.first.entry, o.second.entry],
        })
        .collect();
    let total_ms: u64 = findings.iter().map(|f| (f.until_ns.unwrap_or(f.time_ns) - f.time_ns) / 1_000_000).sum();
    let summary = match findings.len() {
        0 => "no two clients believed they held the same lock at once".to_string(),
        n => format!(
            "{n} dual-ownership interval{}, {total_ms} ms in total (informational: fencing must cover them)",
            if n == 1 { "" } else { "s" }
        ),
    };
    PropertyReport { property: "dual_ownership".into(), verdict: Verdict::Pass, summary, findings }
}
