//! Lock beliefs as intervals of true time: from a client's `belief start` to its `belief end`,
//! to the client's crash (a dead process believes nothing), or to the end of the run.

use std::collections::BTreeMap;

use crate::history::{Event, FaultKind, History, Phase};

/// One client's belief that it holds one lock under one grant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Belief {
    pub lock: String,
    pub client: String,
    pub token: i64,
    pub start_ns: u64,
    pub end_ns: u64,
    /// Index of the `belief start` entry.
    pub entry: usize,
}

/// Every belief of the history, grouped by lock, in order of their start.
pub fn beliefs(history: &History) -> BTreeMap<String, Vec<Belief>> {
    let mut by_lock: BTreeMap<String, Vec<Belief>> = BTreeMap::new();
    // (lock, client, token) → index in by_lock[lock] of the open belief.
    let mut open: BTreeMap<(String, String, i64), usize> = BTreeMap::new();
    for (index, entry) in history.entries.iter().enumerate() {
        match &entry.event {
            Event::Belief { lock, token, phase: Phase::Start, .. } => {
                let beliefs = by_lock.entry(lock.clone()).or_default();
                open.insert((lock.clone(), entry.node.clone(), *token), beliefs.len());
                beliefs.push(Belief {
                    lock: lock.clone(),
                    client: entry.node.clone(),
                    token: *token,
                    start_ns: entry.time_ns,
                    end_ns: history.duration_ns.max(entry.time_ns),
                    entry: index,
                });
            }
            Event::Belief { lock, token, phase: Phase::End, .. } => {
                if let Some(slot) = open.remove(&(lock.clone(), entry.node.clone(), *token)) {
                    by_lock.get_mut(lock).expect("an open belief has its lock")[slot].end_ns = entry.time_ns;
                }
            }
            Event::Fault { kind: FaultKind::Crash, phase: Phase::Start, targets, .. } => {
                let crashed: Vec<(String, String, i64)> =
                    open.keys().filter(|(_, client, _)| targets.contains(client)).cloned().collect();
                for key in crashed {
                    let slot = open.remove(&key).expect("listed from the open beliefs");
                    by_lock.get_mut(&key.0).expect("an open belief has its lock")[slot].end_ns = entry.time_ns;
                }
            }
            _ => {}
        }
    }
    by_lock
}

/// An interval in which two different clients both believed they held the same lock.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Overlap<'a> {
    pub first: &'a Belief,
    pub second: &'a Belief,
    pub start_ns: u64,
    pub end_ns: u64,
}

/// Every overlap between beliefs of different clients, ordered by start.
pub fn overlaps(beliefs: &BTreeMap<String, Vec<Belief>>) -> Vec<Overlap<'_>> {
    let mut found = Vec::new();
    for list in beliefs.values() {
        for (i, a) in list.iter().enumerate() {
            for b in &list[i + 1..] {
                let start_ns = a.start_ns.max(b.start_ns);
                let end_ns = a.end_ns.min(b.end_ns);
                if a.client != b.client && start_ns < end_ns {
                    found.push(Overlap { first: a, second: b, start_ns, end_ns });
                }
            }
        }
    }
    found.sort_by_key(|o| (o.start_ns, o.end_ns, o.first.entry, o.second.entry));
    found
}
