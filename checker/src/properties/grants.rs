//! Lock grants as the history shows them: a `lock` operation that completed `ok`.

use std::collections::BTreeMap;

use crate::history::{Call, Event, History, OpId, Return};

/// One successful lock acquisition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Grant {
    pub client: String,
    pub lock: String,
    pub token: i64,
    /// True time at which the client asked (the lock operation's `invoke`): the grant was made
    /// at the service no earlier.
    pub invoked_ns: u64,
    /// True time at which the client learned of the grant (the `ok`).
    pub granted_ns: u64,
    /// Index of the `ok` entry.
    pub entry: usize,
}

/// Every grant in the history, in the order of their `ok` entries.
pub fn grants(history: &History) -> Vec<Grant> {
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
                    });
                }
            }
            _ => {}
        }
    }
    out
}
