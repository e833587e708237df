//! Lock requests as the history shows them: each `lock` operation with its lease, its outcome and,
//! for a grant, the `unlock` that released it. Shared by `grant_live_lease`, `herd` and
//! `fairness`.

use std::collections::BTreeMap;

use crate::history::{Call, Event, History, OpId, Return};

/// How a lock request ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LockOutcome {
    /// Granted with this holder key and fencing token.
    Granted { key: String, token: i64 },
    /// Certainly not granted.
    Failed,
    /// `info`: it may have been granted.
    Unknown,
    /// No completion by the end of the run (still waiting, or its client crashed).
    Open,
}

/// One `lock` operation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LockRequest {
    pub op: OpId,
    pub client: String,
    pub lock: String,
    pub lease: i64,
    /// How many holders the lock admits at once (1 but for a semaphore).
    pub permits: u32,
    pub invoke_ns: u64,
    pub invoke_entry: usize,
    pub outcome: LockOutcome,
    /// (time, entry) of the completion.
    pub complete: Option<(u64, usize)>,
    /// (invocation time, entry) of the `unlock` of this grant by its holder.
    pub unlock: Option<(u64, usize)>,
    /// (time, entry) of the first `unlock` of this grant answered `ok`: its key was gone by then.
    pub unlocked: Option<(u64, usize)>,
}

impl LockRequest {
    pub fn granted(&self) -> Option<(u64, i64)> {
        match (&self.outcome, self.complete) {
            (LockOutcome::Granted { token, .. }, Some((ns, _))) => Some((ns, *token)),
            _ => None,
        }
    }
}

/// Every lock request, in the order of their invocations.
pub fn lock_requests(history: &History) -> Vec<LockRequest> {
    let mut out: Vec<LockRequest> = Vec::new();
    let mut by_op: BTreeMap<OpId, usize> = BTreeMap::new();
    // Unlock operations: the request whose grant each releases.
    let mut unlocks: BTreeMap<OpId, usize> = BTreeMap::new();
    for (index, entry) in history.entries.iter().enumerate() {
        let now = entry.time_ns;
        match &entry.event {
            Event::Invoke { op, call: Call::Lock { name, lease, permits } } => {
                by_op.insert(*op, out.len());
                out.push(LockRequest {
                    op: *op,
                    client: entry.node.clone(),
                    lock: name.clone(),
                    lease: *lease,
                    permits: *permits,
                    invoke_ns: now,
                    invoke_entry: index,
                    outcome: LockOutcome::Open,
                    complete: None,
                    unlock: None,
                    unlocked: None,
                });
            }
            Event::Invoke { op, call: Call::Unlock { name, key } } => {
                // The holder's latest grant of this lock under this key.
                let grant = out.iter().rposition(|r| {
                    r.client == entry.node
                        && r.lock == *name
                        && matches!(&r.outcome, LockOutcome::Granted { key: k, .. } if k == key)
                });
                if let Some(grant) = grant {
                    out[grant].unlock.get_or_insert((now, index));
                    unlocks.insert(*op, grant);
                }
            }
            Event::Ok { op, .. } if unlocks.contains_key(op) => {
                out[unlocks[op]].unlocked.get_or_insert((now, index));
            }
            Event::Ok { op, .. } | Event::Fail { op, .. } | Event::Info { op, .. } if by_op.contains_key(op) => {
                let request = &mut out[by_op[op]];
                request.complete = Some((now, index));
                request.outcome = match (&entry.event, ret_of(&entry.event)) {
                    (Event::Ok { .. }, Some(Return::Locked { key, token })) => {
                        LockOutcome::Granted { key: key.clone(), token: *token }
                    }
                    (Event::Fail { .. }, _) => LockOutcome::Failed,
                    _ => LockOutcome::Unknown,
                };
            }
            _ => {}
        }
    }
    out
}

fn ret_of(event: &Event) -> Option<&Return> {
    match event {
        Event::Ok { ret, .. } => Some(ret),
        _ => None,
    }
}
