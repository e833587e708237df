//! The compare-and-swap lock on one key, as a sans-IO state machine: the pattern many etcd users
//! write by hand (and the herd-prone foil of the mutex recipe, docs/cases/10).
//!
//! 1. A txn: if the lock key does not exist (`create_revision == 0`), put it with our lease;
//!    else read it. Success: we hold the lock; the put's revision is the fencing token.
//! 2. Otherwise watch the lock key from after the holder's revision until it is deleted — every
//!    waiter watches the same key, so one release wakes them all (the herd) — and try again,
//!    after an optional random backoff that spreads the retries (not the wakeups).
//!
//! Unlock deletes the key only if it is still ours (compare its create_revision with our token),
//! so a holder whose lease expired cannot delete its successor's key.

use super::{EtcdInput, EtcdRecipe, EtcdStep, RecipeError};
use crate::store::{
    Compare, CompareResult, CompareTarget, DeleteRangeRequest, KeyRange, LeaseId, Revision, TxnOp, TxnOpResponse,
    TxnRequest, TxnResponse,
};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CasLock {
    key: String,
    owner: String,
    lease: LeaseId,
}

impl CasLock {
    /// Starts acquiring the lock `key` for `owner` (its value) under `lease`.
    pub fn lock(key: &str, owner: &str, lease: LeaseId) -> (CasLock, EtcdStep) {
        let lock = CasLock { key: key.to_string(), owner: owner.to_string(), lease };
        let step = lock.attempt();
        (lock, step)
    }

    fn attempt(&self) -> EtcdStep {
        EtcdStep::Txn(super::create_or_read(&self.key, &self.owner, self.lease))
    }

    fn on_txn(&self, response: TxnResponse) -> EtcdStep {
        if response.succeeded {
            return EtcdStep::Acquired { key: self.key.clone(), token: response.header.revision };
        }
        match response.responses.as_slice() {
            [TxnOpResponse::Range(range)] => match range.kvs.first() {
                // Our own key: an earlier attempt of this txn was applied, but its reply was lost
                // and the client sent it again (a write retried after a timeout). Without this
                // check the waiter waits for its own key's delete while its live lease keeps the
                // key: the lock stalls for good (seen in hundred-requests-etcd-cas, whose herd
                // slows replies past the client's RPC timeout). etcd's own mutex recipe reads back
                // its own key for the same reason.
                Some(holder) if holder.lease == self.lease && holder.value == self.owner => {
                    EtcdStep::Acquired { key: self.key.clone(), token: holder.create_revision }
                }
                Some(holder) => EtcdStep::WaitDelete { key: self.key.clone(), from_revision: holder.mod_revision + 1 },
                // Deleted between the compare and the read of the same txn: impossible, a txn is
                // atomic; but trying again is the right answer either way.
                None => self.attempt(),
            },
            _ => EtcdStep::Failed(RecipeError::Protocol("the failure branch answers one range")),
        }
    }

    pub fn key(&self) -> &str {
        &self.key
    }
}

impl EtcdRecipe for CasLock {
    /// A txn's answer says whether we hold the lock; a delete of the watched key means: try again.
    fn step(&mut self, input: EtcdInput) -> EtcdStep {
        match input {
            EtcdInput::Txn(response) => self.on_txn(response),
            EtcdInput::Deleted => self.attempt(),
            EtcdInput::Range(_) => EtcdStep::Failed(RecipeError::Protocol("the compare-and-swap lock reads nothing")),
        }
    }

    /// Every waiter watches the one lock key: a wakeup names the node.
    fn waiter(&self, node: &str) -> String {
        node.to_string()
    }

    /// The key is the lock itself, held by someone else while we wait: never ours to delete.
    fn own_key(&self) -> Option<&str> {
        None
    }
}

/// Deletes the lock key only if it is still the one we created (its create_revision is our
/// token).
pub fn unlock(key: &str, token: Revision) -> TxnRequest {
    TxnRequest {
        compare: vec![Compare {
            key: key.to_string(),
            result: CompareResult::Equal,
            target: CompareTarget::CreateRevision(token),
        }],
        success: vec![TxnOp::DeleteRange(DeleteRangeRequest { range: KeyRange::Key(key.to_string()), prev_kv: false })],
        failure: vec![],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{Command, CommandResponse, Store};

    fn txn(store: &mut Store, request: TxnRequest) -> TxnResponse {
        match store.apply(&Command::Txn(request)) {
            CommandResponse::Txn(response) => response,
            other => panic!("txn failed: {other:?}"),
        }
    }

    fn lease(store: &mut Store) -> LeaseId {
        match store.apply(&Command::LeaseGrant { id: 0, ttl_ms: 5000 }) {
            CommandResponse::LeaseGrant { id, .. } => id,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn first_caller_acquires_and_others_wait_on_the_same_key() {
        let mut store = Store::new();
        let (a, b, c) = (lease(&mut store), lease(&mut store), lease(&mut store));
        let (first, EtcdStep::Txn(t1)) = CasLock::lock("/l", "c1", a) else { panic!() };
        let EtcdStep::Acquired { token, .. } = first.on_txn(txn(&mut store, t1)) else { panic!("c1 acquires") };
        for (owner, lease) in [("c2", b), ("c3", c)] {
            let (waiter, EtcdStep::Txn(t)) = CasLock::lock("/l", owner, lease) else { panic!() };
            let step = waiter.on_txn(txn(&mut store, t));
            assert_eq!(step, EtcdStep::WaitDelete { key: "/l".into(), from_revision: token + 1 }, "the herd");
        }
    }

    #[test]
    fn a_retried_create_recognises_its_own_key() {
        let mut store = Store::new();
        let a = lease(&mut store);
        let (lock, EtcdStep::Txn(t)) = CasLock::lock("/l", "c1", a) else { panic!() };
        let first = txn(&mut store, t.clone());
        assert!(first.succeeded);
        // The reply to the first attempt was lost; the client sent the same txn again.
        let step = lock.on_txn(txn(&mut store, t));
        assert_eq!(step, EtcdStep::Acquired { key: "/l".into(), token: first.header.revision });
    }

    #[test]
    fn unlock_deletes_only_our_own_key() {
        let mut store = Store::new();
        let (a, b) = (lease(&mut store), lease(&mut store));
        let (first, EtcdStep::Txn(t1)) = CasLock::lock("/l", "c1", a) else { panic!() };
        let EtcdStep::Acquired { token: old, .. } = first.on_txn(txn(&mut store, t1)) else { panic!() };
        store.apply(&Command::LeaseRevoke { id: a, reason: crate::store::RevokeReason::Expired });
        let (second, EtcdStep::Txn(t2)) = CasLock::lock("/l", "c2", b) else { panic!() };
        let EtcdStep::Acquired { token: new, .. } = second.on_txn(txn(&mut store, t2)) else { panic!() };
        assert!(new > old);
        assert!(!txn(&mut store, unlock("/l", old)).succeeded, "the stale holder cannot delete c2's key");
        assert!(txn(&mut store, unlock("/l", new)).succeeded);
    }
}
