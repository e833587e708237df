//! Raft leadership as the servers' `role` records show it: who led when, and each promotion (a
//! new leader's lessor taking over the leases: its `lessor_promoted` record, or, in a history
//! without those, its `role leader` record).
//!
//! A leadership lasts from the server's `role leader` record until its next record of another
//! role, its crash, or the end of the run. A `role leader` record from a server already leading
//! (a new term without leaving the role) is not a new promotion: its lessor was not promoted again.

use std::collections::BTreeMap;

use crate::history::{Event, FaultKind, History, Phase, RaftRole};

/// A server became leader.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Promotion {
    pub server: String,
    pub time_ns: u64,
    pub term: u64,
    /// Index of the `role` entry.
    pub entry: usize,
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Reign {
    server: String,
    start_ns: u64,
    end_ns: u64,
}

/// Every leadership of the run.
#[derive(Clone, Debug, Default)]
pub struct Leadership {
    pub promotions: Vec<Promotion>,
    reigns: Vec<Reign>,
}

impl Leadership {
    pub fn from_history(history: &History) -> Leadership {
        let mut promotions = Vec::new();
        let mut reigns: Vec<Reign> = Vec::new();
        // Server → index in `reigns` of its current leadership.
        let mut leading: BTreeMap<&str, usize> = BTreeMap::new();
        for (index, entry) in history.entries.iter().enumerate() {
            match &entry.event {
                Event::Role { role: RaftRole::Leader, term } => {
                    if !leading.contains_key(entry.node.as_str()) {
                        leading.insert(&entry.node, reigns.len());
                        reigns.push(Reign {
                            server: entry.node.clone(),
                            start_ns: entry.time_ns,
                            end_ns: history.duration_ns,
                        });
                        promotions.push(Promotion {
                            server: entry.node.clone(),
                            time_ns: entry.time_ns,
                            term: *term,
                            entry: index,
                        });
                    }
                }
                Event::Role { .. } => {
                    if let Some(reign) = leading.remove(entry.node.as_str()) {
                        reigns[reign].end_ns = entry.time_ns;
                    }
                }
                Event::Fault { kind: FaultKind::Crash, phase: Phase::Start, targets, .. } => {
                    for target in targets {
                        if let Some(reign) = leading.remove(target.as_str()) {
                            reigns[reign].end_ns = entry.time_ns;
                        }
                    }
                }
                _ => {}
            }
        }
        // A runner that records when each lessor took over says so exactly; the election is only
        // the earliest it could have.
        let lessors: Vec<Promotion> = history
            .entries
            .iter()
            .enumerate()
            .filter_map(|(index, entry)| match entry.event {
                Event::LessorPromoted { term } => {
                    Some(Promotion { server: entry.node.clone(), time_ns: entry.time_ns, term, entry: index })
                }
                _ => None,
            })
            .collect();
        if !lessors.is_empty() {
            promotions = lessors;
        }
        Leadership { promotions, reigns }
    }

    /// When the leader of `promotion` was elected: the start of its leadership that holds the
    /// promotion (its lessor may take over later), else the promotion itself.
    pub fn elected_ns(&self, promotion: &Promotion) -> u64 {
        self.reigns
            .iter()
            .filter(|r| r.server == promotion.server && r.start_ns <= promotion.time_ns)
            .map(|r| r.start_ns)
            .max()
            .unwrap_or(promotion.time_ns)
    }

    /// Whether the history says anything about leaders.
    pub fn is_empty(&self) -> bool {
        self.reigns.is_empty()
    }

    /// The servers that led at some moment of `[from_ns, to_ns]`, each once, in order of name.
    pub fn leaders_during(&self, from_ns: u64, to_ns: u64) -> Vec<&str> {
        let mut found: Vec<&str> = self
            .reigns
            .iter()
            .filter(|r| r.start_ns <= to_ns && r.end_ns >= from_ns)
            .map(|r| r.server.as_str())
            .collect();
        found.sort_unstable();
        found.dedup();
        found
    }
}
