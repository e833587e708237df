//! A counting semaphore with N permits on etcd, as a sans-IO state machine (the etcd analogue of
//! Apache Curator's InterProcessSemaphoreV2, built like the mutex recipe).
//!
//! 1. Create this session's key `<prefix>/<lease hex>` (as the mutex does); its create_revision
//!    is the client's place in the queue and its token.
//! 2. Count the keys older than ours. Fewer than N: a permit is ours.
//! 3. Otherwise wait until the oldest of them is deleted (the holder that has held longest is the
//!    likeliest to leave first; any departure ahead of us may free a permit, so after any wakeup
//!    we count again) — one watched key per waiter, so a release wakes at most the waiters
//!    watching that key.
//!
//! Releasing deletes the key. The token is not a fencing token for one resource (N holders write
//! at once); it orders the grants.

use crate::store::{
    KeyRange, LeaseId, RangeRequest, RangeResponse, Revision, SortOrder, SortTarget, TxnOpResponse, TxnResponse,
};

use super::mutex::holder_key;
use super::{EtcdInput, EtcdRecipe, EtcdStep, RecipeError};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Semaphore {
    prefix: String,
    key: String,
    permits: u32,
    my_revision: Revision,
}

impl Semaphore {
    /// Starts taking one of the `permits` permits of the semaphore `prefix` for `lease`.
    pub fn acquire(prefix: &str, lease: LeaseId, permits: u32) -> (Semaphore, EtcdStep) {
        Self::acquire_for(prefix, lease, permits, super::EntryLifetime::Session)
    }

    /// [`Semaphore::acquire`] with the key's lifetime ([`super::EntryLifetime::Persistent`]: put
    /// without a lease, still named after the session's).
    pub fn acquire_for(
        prefix: &str,
        lease: LeaseId,
        permits: u32,
        lifetime: super::EntryLifetime,
    ) -> (Semaphore, EtcdStep) {
        assert!(permits >= 1, "a semaphore has at least one permit");
        let key = holder_key(prefix, lease);
        let semaphore = Semaphore { prefix: prefix.to_string(), key: key.clone(), permits, my_revision: 0 };
        (semaphore, EtcdStep::Txn(super::create_or_read(&key, "", lifetime.key_lease(lease))))
    }

    pub fn key(&self) -> &str {
        &self.key
    }

    /// The number of holders at once.
    pub fn permits(&self) -> u32 {
        self.permits
    }

    fn on_created(&mut self, response: TxnResponse) -> EtcdStep {
        self.my_revision = match (response.succeeded, response.responses.as_slice()) {
            (true, [TxnOpResponse::Put(_)]) => response.header.revision,
            (false, [TxnOpResponse::Range(mine)]) => match mine.kvs.first() {
                Some(kv) => kv.create_revision,
                None => {
                    return EtcdStep::Failed(RecipeError::Protocol("creating: compare failed but the key is missing"));
                }
            },
            _ => return EtcdStep::Failed(RecipeError::Protocol("creating")),
        };
        self.count()
    }

    /// Read the keys ahead of ours, oldest first, up to `permits` of them.
    ///
    /// They are counted from the keys returned, not from the response's `count`: etcd's count is
    /// the number of keys in the range before the create-revision filter prunes them (apply.go
    /// sets it from the store's range, then prunes), so it counts the waiters behind us too, and a
    /// recipe that trusts it waits for ever (found by running this recipe against real etcd 3.4).
    /// With a filter, etcd applies the limit after pruning and sorting.
    fn count(&self) -> EtcdStep {
        let mut request = RangeRequest::new(KeyRange::Prefix(format!("{}/", self.prefix)));
        request.max_create_revision = self.my_revision - 1;
        request.sort = Some((SortTarget::CreateRevision, SortOrder::Ascend));
        request.limit = self.permits as usize;
        request.keys_only = true;
        EtcdStep::Range(request)
    }

    fn on_counted(&self, response: RangeResponse) -> EtcdStep {
        if response.kvs.len() < self.permits as usize {
            return EtcdStep::Acquired { key: self.key.clone(), token: self.my_revision };
        }
        match response.kvs.first() {
            Some(oldest) => {
                EtcdStep::WaitDelete { key: oldest.key.clone(), from_revision: response.header.revision + 1 }
            }
            None => EtcdStep::Failed(RecipeError::Protocol("counting: keys counted but none returned")),
        }
    }
}

impl EtcdRecipe for Semaphore {
    /// Created (or found) our key: count the keys ahead; counted: hold or wait; a key ahead
    /// deleted: count again (any departure ahead of us may free a permit).
    fn step(&mut self, input: EtcdInput) -> EtcdStep {
        match input {
            EtcdInput::Txn(response) => self.on_created(response),
            EtcdInput::Range(response) => self.on_counted(response),
            EtcdInput::Deleted => self.count(),
        }
    }

    fn waiter(&self, _node: &str) -> String {
        self.key.clone()
    }

    fn own_key(&self) -> Option<&str> {
        Some(&self.key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{Command, CommandResponse, DeleteRangeRequest, Store};

    fn lease(store: &mut Store) -> LeaseId {
        match store.apply(&Command::LeaseGrant { id: 0, ttl_ms: 5000 }) {
            CommandResponse::LeaseGrant { id, .. } => id,
            other => panic!("{other:?}"),
        }
    }

    fn drive(store: &mut Store, semaphore: &mut Semaphore, mut step: EtcdStep) -> EtcdStep {
        loop {
            step = match step {
                EtcdStep::Txn(txn) => match store.apply(&Command::Txn(txn)) {
                    CommandResponse::Txn(response) => semaphore.on_created(response),
                    other => panic!("{other:?}"),
                },
                EtcdStep::Range(range) => semaphore.on_counted(store.range(&range).unwrap()),
                done => return done,
            }
        }
    }

    #[test]
    fn the_first_n_hold_and_the_next_waits_for_the_oldest() {
        let mut store = Store::new();
        let mut steps = Vec::new();
        for _ in 0..3 {
            let id = lease(&mut store);
            let (mut semaphore, step) = Semaphore::acquire("/s", id, 2);
            steps.push((drive(&mut store, &mut semaphore, step), semaphore));
        }
        let EtcdStep::Acquired { key: oldest, .. } = steps[0].0.clone() else { panic!("{:?}", steps[0].0) };
        assert!(matches!(steps[1].0, EtcdStep::Acquired { .. }), "two permits: the second holds too");
        let EtcdStep::WaitDelete { key, .. } = steps[2].0.clone() else { panic!("{:?}", steps[2].0) };
        assert_eq!(key, oldest, "the third waits for the oldest holder");
        store.apply(&Command::DeleteRange(DeleteRangeRequest { range: KeyRange::Key(oldest), prev_kv: false }));
        let third = &mut steps[2].1;
        let step = third.count();
        assert!(matches!(drive(&mut store, third, step), EtcdStep::Acquired { .. }));
    }
}
