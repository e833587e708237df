//! `no_double_assignment`, a property of the pool's own: no partition is owned by two workers at
//! once. Between a worker's `own` event for a partition and its `release`, no other worker may
//! `own` it (true time, from the workers' own records). A plain function over the history, so the
//! simulator's Testbed and the real-ZooKeeper run judge with the same code.

use std::collections::BTreeMap;

use coordsim_checker::history::{Event, History};
use coordsim_checker::verdict::{Finding, PropertyReport, Verdict};

/// The property's id in reports.
pub const ID: &str = "no_double_assignment";

pub fn check(history: &History) -> PropertyReport {
    // partition → worker → (since ns, entry) of its current ownership.
    let mut owners: BTreeMap<String, BTreeMap<String, (u64, usize)>> = BTreeMap::new();
    let mut findings = Vec::new();
    for (index, entry) in history.entries.iter().enumerate() {
        let Event::User { name, attrs } = &entry.event else { continue };
        let Some(partition) = attrs.get("partition") else { continue };
        let current = owners.entry(partition.clone()).or_default();
        match name.as_str() {
            "own" => {
                for (other, (since, other_entry)) in current.iter().filter(|(other, _)| **other != entry.node) {
                    findings.push(Finding {
                        time_ns: entry.time_ns,
                        until_ns: None,
                        message: format!(
                            "partition {partition} owned by {} while {other} owned it (since {})",
                            entry.node,
                            History::fmt_time(*since)
                        ),
                        entries: vec![*other_entry, index],
                    });
                }
                current.insert(entry.node.clone(), (entry.time_ns, index));
            }
            "release" => {
                current.remove(&entry.node);
            }
            _ => {}
        }
    }
    let verdict = if findings.is_empty() { Verdict::Pass } else { Verdict::Fail };
    let summary = match verdict {
        Verdict::Pass => "every partition had at most one owner at a time".to_string(),
        _ => format!("{} times a partition was taken while another worker still owned it", findings.len()),
    };
    PropertyReport { property: ID.to_string(), verdict, summary, findings }
}
