//! Fencing monotonicity: the tokens the resource accepts never go backwards.
//!
//! A fencing token is a number that grows with every grant (here the holder key's
//! create_revision). A resource that remembers the highest token it accepted and rejects lower
//! ones turns a stale holder's late write into a harmless rejection (Kleppmann 2016, "How to do
//! distributed locking").

use crate::history::{Event, History};
use crate::verdict::{Finding, PropertyReport, Verdict};

pub(super) fn check(history: &History) -> PropertyReport {
    let mut highest: Option<(i64, usize)> = None;
    let mut findings = Vec::new();
    let mut accepted = 0usize;
    let mut rejected = 0usize;
    for (index, entry) in history.entries.iter().enumerate() {
        let Event::Resource { client, token, accepted: is_accepted, resource, .. } = &entry.event else {
            continue;
        };
        if !is_accepted {
            rejected += 1;
            continue;
        }
        accepted += 1;
        match highest {
            Some((top, at)) if *token < top => findings.push(Finding {
                time_ns: entry.time_ns,
                until_ns: None,
                message: format!(
                    "{resource} accepted token {token} from {client} at {} after accepting token {top} at {}",
                    History::fmt_time(entry.time_ns),
                    History::fmt_time(history.entries[at].time_ns),
                ),
                entries: vec![at, index],
            }),
            Some((top, _)) if *token == top => {}
            _ => highest = Some((*token, index)),
        }
    }
    let verdict = if findings.is_empty() { Verdict::Pass } else { Verdict::Fail };
    let summary = match verdict {
        Verdict::Pass => {
            format!("{accepted} accepted and {rejected} rejected writes, accepted tokens never decreased")
        }
        _ => format!("{} accepted writes carried a token lower than one already accepted", findings.len()),
    };
    PropertyReport { property: "fencing".into(), verdict, summary, findings }
}
