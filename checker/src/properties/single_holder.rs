//! Single holder: at every instant of true time at most one client believes it holds a given
//! lock — "at most one acting leader". Leases alone cannot promise this under process pauses
//! (docs/cases/01); they can under clock skew only with a margin between the client's local
//! deadline and the server's expiry that covers the worst rate skew (docs/cases/06, 09).

use crate::history::History;
use crate::properties::beliefs::{beliefs, overlaps};
use crate::verdict::{Finding, PropertyReport, Verdict};

pub(super) fn check(history: &History) -> PropertyReport {
    let beliefs = beliefs(history);
    let overlaps = overlaps(&beliefs);
    let findings: Vec<Finding> = overlaps
        .iter()
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
    let holds: usize = beliefs.values().map(Vec::len).sum();
    let (verdict, summary) = match findings.len() {
        0 => (Verdict::Pass, format!("{holds} holds, never two at once")),
        n => (Verdict::Fail, format!("{n} interval{} with two holders at once", if n == 1 { "" } else { "s" })),
    };
    PropertyReport { property: "single_holder".into(), verdict, summary, findings }
}
