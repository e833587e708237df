//! Lock grants as the history shows them: a `lock` operation that completed `ok`, and, for a lock
//! the service granted nothing of, the grants the clients' own recipes recorded as beliefs.
//!
//! A client whose code implements its own lock (a transaction-based etcd mutex, a ZooKeeper
//! leader latch) on plain reads and writes makes no `lock` call the service could record: the only
//! record of its grant is its `belief start` with the token its recipe derived (a key's create
//! revision, a node's czxid). Such a belief is the grant. What is known of its time is only that
//! the service made it no later than the belief began; when it was asked for is unknown, so two of
//! them are ordered by their tokens alone (see `mutual_exclusion::is_older`).

use std::collections::{BTreeMap, BTreeSet};

use crate::history::{Call, Event, History, OpId, Phase, Return};

/// Who recorded a grant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GrantSource {
    /// The service: a `lock` (or election `campaign`) call answered `ok`.
    Service,
    /// The holder's own recipe: its `belief start` (`Ctx::believe_held`), for a lock with no
    /// `lock` call in the history.
    Belief,
}

/// One successful lock acquisition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Grant {
    pub client: String,
    pub lock: String,
    pub token: i64,
    /// True time at which the client asked (the lock operation's `invoke`): the grant was made
    /// at the service no earlier. 0 for a [`GrantSource::Belief`]: not known.
    pub invoked_ns: u64,
    /// True time at which the client learned of the grant (the `ok`, or the belief's start).
    pub granted_ns: u64,
    /// Index of the `ok` (or `belief start`) entry.
    pub entry: usize,
    pub source: GrantSource,
}

impl Grant {
    /// How a finding names the grant: "token 7, granted at 1.200s" for the service's,
    /// "token 7, c1's own grant, believed from 1.200s" for a belief's.
    pub fn describe(&self) -> String {
        match self.source {
            GrantSource::Service => format!("token {}, granted at {}", self.token, History::fmt_time(self.granted_ns)),
            GrantSource::Belief => format!(
                "token {}, {}'s own grant, believed from {}",
                self.token,
                self.client,
                History::fmt_time(self.granted_ns)
            ),
        }
    }
}

/// Every grant in the history: the service's, in the order of their `ok` entries, then the
/// beliefs of locks the service granted none of (never asked for), in the order of their start.
pub fn grants(history: &History) -> Vec<Grant> {
    let mut out = service_grants(history);
    out.extend(belief_grants(history));
    out
}

/// The locks some client asked the service for (`lock` invocations, granted or not).
pub fn service_locks(history: &History) -> BTreeSet<&str> {
    history
        .entries
        .iter()
        .filter_map(|e| match &e.event {
            Event::Invoke { call: Call::Lock { name, .. }, .. } => Some(name.as_str()),
            _ => None,
        })
        .collect()
}

fn service_grants(history: &History) -> Vec<Grant> {
    // Open lock operations: op → (lock name, invoke time).
    let mut pending: BTreeMap<OpId, (String, u64)> = BTreeMap::new();
    let mut out = Vec::new();
    for (index, entry) in history.entries.iter().enumerate() {
        match &entry.event {
            Event::Invoke { op, call: Call::Lock { name, .. } } => {
                pending.insert(*op, (name.clone(), entry.time_ns));
            }
            Event::Ok { op, ret: Return::Locked { token, .. } } => {
                if let Some((lock, invoked_ns)) = pending.remove(op) {
                    out.push(Grant {
                        client: entry.node.clone(),
                        lock,
                        token: *token,
                        invoked_ns,
                        granted_ns: entry.time_ns,
                        entry: index,
                        source: GrantSource::Service,
                    });
                }
            }
            _ => {}
        }
    }
    out
}

/// The first `belief start` of each (client, lock, token) of a lock no `lock` call names.
fn belief_grants(history: &History) -> Vec<Grant> {
    let asked = service_locks(history);
    let mut seen: BTreeSet<(&str, &str, i64)> = BTreeSet::new();
    let mut out = Vec::new();
    for (index, entry) in history.entries.iter().enumerate() {
        let Event::Belief { lock, token, phase: Phase::Start, .. } = &entry.event else { continue };
        if asked.contains(lock.as_str()) || !seen.insert((entry.node.as_str(), lock.as_str(), *token)) {
            continue;
        }
        out.push(Grant {
            client: entry.node.clone(),
            lock: lock.clone(),
            token: *token,
            invoked_ns: 0,
            granted_ns: entry.time_ns,
            entry: index,
            source: GrantSource::Belief,
        });
    }
    out
}
