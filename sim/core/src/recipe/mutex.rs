//! The etcd mutex recipe (etcd client/v3/concurrency/mutex.go), as a sans-IO state machine.
//!
//! 1. Create this session's key `<prefix>/<lease hex>`, attached to the session lease, unless it
//!    exists: a txn `create_revision(key) == 0 ? put : get`. The key's create_revision is the
//!    client's place in the queue and its **fencing token**.
//! 2. If the oldest key under the prefix is ours, the lock is ours.
//! 3. Otherwise wait until the key with the largest create_revision below ours (the
//!    *predecessor*) is deleted — watching only the predecessor avoids a herd of wakeups — and
//!    look again: there may be an older one left.
//! 4. Before reporting success, re-read our own key: if the session's lease expired while we
//!    waited, the key is gone and the lock is not ours (etcd 3.4+ returns ErrSessionExpired).
//!
//! Unlocking deletes the key, which wakes the successor.

use super::{EntryLifetime, EtcdInput, EtcdRecipe, EtcdStep, RecipeError};
use crate::store::{
    KeyRange, LeaseId, RangeRequest, RangeResponse, Revision, SortOrder, SortTarget, TxnOp, TxnOpResponse, TxnResponse,
};

#[derive(Clone, Debug, PartialEq, Eq)]
enum State {
    Creating,
    /// Looking for the predecessor of `my_revision`.
    FindingPredecessor,
    WaitingForDelete,
    CheckingOwnKey,
    Done,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EtcdMutex {
    prefix: String,
    key: String,
    my_revision: Revision,
    state: State,
    /// Step 4 (re-read our own key before reporting success). Off only for the
    /// `grant_without_lease_check` bug switch: etcd 3.4.3's Lock service skipped it and granted
    /// the lock to a waiter whose lease had expired while it waited (docs/cases/02).
    check_own_key: bool,
}

impl EtcdMutex {
    /// Starts acquiring the lock `prefix` for the session `lease`; returns the first step.
    pub fn lock(prefix: &str, lease: LeaseId) -> (EtcdMutex, EtcdStep) {
        Self::lock_checked(prefix, lease, true)
    }

    /// [`EtcdMutex::lock`], with the final check of our own key on or off (off: the
    /// `grant_without_lease_check` bug).
    pub fn lock_checked(prefix: &str, lease: LeaseId, check_own_key: bool) -> (EtcdMutex, EtcdStep) {
        Self::start(prefix, lease, "", check_own_key, EntryLifetime::Session)
    }

    /// [`EtcdMutex::lock`] with the key's lifetime: [`EntryLifetime::Persistent`] puts it without
    /// a lease (still named after the session's lease, so each session has its own key).
    pub fn lock_for(prefix: &str, lease: LeaseId, lifetime: EntryLifetime) -> (EtcdMutex, EtcdStep) {
        Self::start(prefix, lease, "", true, lifetime)
    }

    /// etcd's election Campaign (client/v3/concurrency/election.go) is the same queue: the
    /// candidate's key holds its proposal `value`, and the oldest key is the leader.
    pub fn campaign(prefix: &str, lease: LeaseId, value: &str) -> (EtcdMutex, EtcdStep) {
        Self::start(prefix, lease, value, true, EntryLifetime::Session)
    }

    fn start(
        prefix: &str,
        lease: LeaseId,
        value: &str,
        check_own_key: bool,
        lifetime: EntryLifetime,
    ) -> (EtcdMutex, EtcdStep) {
        let key = holder_key(prefix, lease);
        let mutex = EtcdMutex {
            prefix: prefix.to_string(),
            key: key.clone(),
            my_revision: 0,
            state: State::Creating,
            check_own_key,
        };
        let oldest = oldest_holder(prefix);
        let mut txn = super::create_or_read(&key, value, lifetime.key_lease(lease));
        txn.success.push(TxnOp::Range(oldest.clone()));
        txn.failure.push(TxnOp::Range(oldest));
        (mutex, EtcdStep::Txn(txn))
    }

    /// This session's key under the lock prefix.
    pub fn key(&self) -> &str {
        &self.key
    }

    pub fn step(&mut self, input: EtcdInput) -> EtcdStep {
        match (&self.state, input) {
            (State::Creating, EtcdInput::Txn(response)) => self.on_created(response),
            (State::FindingPredecessor, EtcdInput::Range(response)) => self.on_predecessor(response),
            (State::WaitingForDelete, EtcdInput::Deleted) => self.find_predecessor(),
            (State::CheckingOwnKey, EtcdInput::Range(response)) => {
                self.state = State::Done;
                if response.kvs.is_empty() {
                    EtcdStep::Failed(RecipeError::SessionExpired(self.key.clone()))
                } else {
                    EtcdStep::Acquired { key: self.key.clone(), token: self.my_revision }
                }
            }
            (state, _) => {
                let name = state_name(state);
                self.state = State::Done;
                EtcdStep::Failed(RecipeError::Protocol(name))
            }
        }
    }

    fn on_created(&mut self, response: TxnResponse) -> EtcdStep {
        let (my_revision, oldest) = match (response.succeeded, response.responses.as_slice()) {
            (true, [TxnOpResponse::Put(_), TxnOpResponse::Range(oldest)]) => (response.header.revision, oldest),
            (false, [TxnOpResponse::Range(mine), TxnOpResponse::Range(oldest)]) => match mine.kvs.first() {
                Some(kv) => (kv.create_revision, oldest),
                None => {
                    return self.fail(RecipeError::Protocol("creating: compare failed but the key is missing"));
                }
            },
            _ => return self.fail(RecipeError::Protocol("creating")),
        };
        self.my_revision = my_revision;
        match oldest.kvs.first() {
            Some(owner) if owner.create_revision == my_revision => {
                self.state = State::Done;
                EtcdStep::Acquired { key: self.key.clone(), token: my_revision }
            }
            _ => self.find_predecessor(),
        }
    }

    fn find_predecessor(&mut self) -> EtcdStep {
        self.state = State::FindingPredecessor;
        let mut request = RangeRequest::new(KeyRange::Prefix(self.prefix_dir()));
        request.max_create_revision = self.my_revision - 1;
        request.sort = Some((SortTarget::CreateRevision, SortOrder::Descend));
        request.limit = 1;
        EtcdStep::Range(request)
    }

    fn on_predecessor(&mut self, response: RangeResponse) -> EtcdStep {
        match response.kvs.first() {
            Some(predecessor) => {
                self.state = State::WaitingForDelete;
                EtcdStep::WaitDelete { key: predecessor.key.clone(), from_revision: response.header.revision + 1 }
            }
            None if !self.check_own_key => {
                self.state = State::Done;
                EtcdStep::Acquired { key: self.key.clone(), token: self.my_revision }
            }
            None => {
                self.state = State::CheckingOwnKey;
                EtcdStep::Range(RangeRequest::new(KeyRange::Key(self.key.clone())))
            }
        }
    }

    fn fail(&mut self, error: RecipeError) -> EtcdStep {
        self.state = State::Done;
        EtcdStep::Failed(error)
    }

    fn prefix_dir(&self) -> String {
        format!("{}/", self.prefix)
    }
}

impl EtcdRecipe for EtcdMutex {
    fn step(&mut self, input: EtcdInput) -> EtcdStep {
        EtcdMutex::step(self, input)
    }

    fn waiter(&self, _node: &str) -> String {
        self.key.clone()
    }

    fn own_key(&self) -> Option<&str> {
        Some(&self.key)
    }
}

/// `<prefix>/<lease in hex>`, as etcd names a session's key under a lock.
pub fn holder_key(prefix: &str, lease: LeaseId) -> String {
    format!("{prefix}/{lease:x}")
}

/// The key with the smallest create_revision under the lock prefix: the current holder.
fn oldest_holder(prefix: &str) -> RangeRequest {
    let mut request = RangeRequest::new(KeyRange::Prefix(format!("{prefix}/")));
    request.sort = Some((SortTarget::CreateRevision, SortOrder::Ascend));
    request.limit = 1;
    request
}

fn state_name(state: &State) -> &'static str {
    match state {
        State::Creating => "creating",
        State::FindingPredecessor => "finding predecessor",
        State::WaitingForDelete => "waiting for delete",
        State::CheckingOwnKey => "checking own key",
        State::Done => "done",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{Command, CommandResponse, DeleteRangeRequest, RevokeReason, Store};

    /// Drives a mutex against a store until it needs to wait for a delete or finishes.
    fn drive(store: &mut Store, mutex: &mut EtcdMutex, mut step: EtcdStep) -> EtcdStep {
        loop {
            step = match step {
                EtcdStep::Txn(txn) => match store.apply(&Command::Txn(txn)) {
                    CommandResponse::Txn(response) => mutex.step(EtcdInput::Txn(response)),
                    other => panic!("txn failed: {other:?}"),
                },
                EtcdStep::Range(request) => {
                    mutex.step(EtcdInput::Range(store.range(&request).expect("range at the current revision")))
                }
                done => return done,
            }
        }
    }

    fn grant(store: &mut Store, ttl_ms: u64) -> LeaseId {
        match store.apply(&Command::LeaseGrant { id: 0, ttl_ms }) {
            CommandResponse::LeaseGrant { id, .. } => id,
            other => panic!("grant failed: {other:?}"),
        }
    }

    fn delete(store: &mut Store, key: &str) {
        store
            .apply(&Command::DeleteRange(DeleteRangeRequest { range: KeyRange::Key(key.to_string()), prev_kv: false }));
    }

    #[test]
    fn first_locker_acquires_with_its_key_create_revision_as_token() {
        let mut store = Store::new();
        let lease = grant(&mut store, 5000);
        let (mut mutex, step) = EtcdMutex::lock("/lock/r", lease);
        let step = drive(&mut store, &mut mutex, step);
        let key = holder_key("/lock/r", lease);
        let created = store.range(&RangeRequest::new(KeyRange::Key(key.clone()))).unwrap().kvs[0].create_revision;
        assert_eq!(step, EtcdStep::Acquired { key, token: created });
    }

    #[test]
    fn a_persistent_key_is_named_after_the_session_but_put_without_its_lease() {
        let mut store = Store::new();
        let lease = grant(&mut store, 5000);
        for (lifetime, attached) in [(EntryLifetime::Session, lease), (EntryLifetime::Persistent, 0)] {
            let prefix = format!("/lock/{lifetime:?}");
            let (mut mutex, step) = EtcdMutex::lock_for(&prefix, lease, lifetime);
            let EtcdStep::Acquired { key, .. } = drive(&mut store, &mut mutex, step) else { panic!("uncontended") };
            assert_eq!(key, holder_key(&prefix, lease));
            let kv = store.range(&RangeRequest::new(KeyRange::Key(key))).unwrap().kvs[0].clone();
            assert_eq!(kv.lease, attached, "{lifetime:?}");
        }
    }

    #[test]
    fn waiter_watches_only_its_predecessor_and_acquires_after_it_is_deleted() {
        let mut store = Store::new();
        let leases: Vec<LeaseId> = (0..3).map(|_| grant(&mut store, 5000)).collect();
        let mut mutexes = Vec::new();
        let mut steps = Vec::new();
        for lease in &leases {
            let (mut mutex, step) = EtcdMutex::lock("/lock/r", *lease);
            steps.push(drive(&mut store, &mut mutex, step));
            mutexes.push(mutex);
        }
        assert!(matches!(steps[0], EtcdStep::Acquired { .. }));
        // Herd-free: the third waits on the second, not on the holder.
        assert!(matches!(&steps[1], EtcdStep::WaitDelete { key, .. } if key == mutexes[0].key()));
        assert!(matches!(&steps[2], EtcdStep::WaitDelete { key, .. } if key == mutexes[1].key()));

        delete(&mut store, &mutexes[0].key().to_string());
        let step = mutexes[1].step(EtcdInput::Deleted);
        let step = drive(&mut store, &mut mutexes[1], step);
        assert!(matches!(step, EtcdStep::Acquired { ref key, .. } if key == mutexes[1].key()));
    }

    #[test]
    fn tokens_grow_with_each_grant() {
        let mut store = Store::new();
        let first = grant(&mut store, 5000);
        let second = grant(&mut store, 5000);
        let (mut m1, s1) = EtcdMutex::lock("/lock/r", first);
        let EtcdStep::Acquired { token: t1, key: k1 } = drive(&mut store, &mut m1, s1) else {
            panic!("first acquires")
        };
        let (mut m2, s2) = EtcdMutex::lock("/lock/r", second);
        assert!(matches!(drive(&mut store, &mut m2, s2), EtcdStep::WaitDelete { .. }));
        delete(&mut store, &k1);
        let s2 = m2.step(EtcdInput::Deleted);
        let EtcdStep::Acquired { token: t2, .. } = drive(&mut store, &mut m2, s2) else { panic!("second acquires") };
        assert!(t2 > t1, "token {t2} after {t1}");
    }

    #[test]
    fn waiter_whose_lease_expired_gets_session_expired_not_the_lock() {
        let mut store = Store::new();
        let holder = grant(&mut store, 5000);
        let waiter = grant(&mut store, 1000);
        let (mut m1, s1) = EtcdMutex::lock("/lock/r", holder);
        let EtcdStep::Acquired { key: k1, .. } = drive(&mut store, &mut m1, s1) else { panic!("holder acquires") };
        let (mut m2, s2) = EtcdMutex::lock("/lock/r", waiter);
        assert!(matches!(drive(&mut store, &mut m2, s2), EtcdStep::WaitDelete { .. }));
        store.apply(&Command::LeaseRevoke { id: waiter, reason: RevokeReason::Expired });
        delete(&mut store, &k1);
        let s2 = m2.step(EtcdInput::Deleted);
        assert_eq!(drive(&mut store, &mut m2, s2), EtcdStep::Failed(RecipeError::SessionExpired(m2.key().to_string())));
    }

    #[test]
    fn without_the_own_key_check_an_expired_waiter_is_granted() {
        // The grant_without_lease_check bug (docs/cases/02), at the recipe level.
        let mut store = Store::new();
        let holder = grant(&mut store, 5000);
        let waiter = grant(&mut store, 1000);
        let (mut m1, s1) = EtcdMutex::lock("/lock/r", holder);
        let EtcdStep::Acquired { key: k1, .. } = drive(&mut store, &mut m1, s1) else { panic!("holder acquires") };
        let (mut m2, s2) = EtcdMutex::lock_checked("/lock/r", waiter, false);
        assert!(matches!(drive(&mut store, &mut m2, s2), EtcdStep::WaitDelete { .. }));
        store.apply(&Command::LeaseRevoke { id: waiter, reason: RevokeReason::Expired });
        delete(&mut store, &k1);
        let s2 = m2.step(EtcdInput::Deleted);
        assert!(matches!(drive(&mut store, &mut m2, s2), EtcdStep::Acquired { .. }), "granted to a dead session");
    }

    #[test]
    fn relocking_with_the_same_session_reuses_the_key() {
        let mut store = Store::new();
        let lease = grant(&mut store, 5000);
        let (mut m1, s1) = EtcdMutex::lock("/lock/r", lease);
        let EtcdStep::Acquired { token: t1, .. } = drive(&mut store, &mut m1, s1) else { panic!("acquires") };
        let (mut again, step) = EtcdMutex::lock("/lock/r", lease);
        let EtcdStep::Acquired { token: t2, .. } = drive(&mut store, &mut again, step) else { panic!("re-acquires") };
        assert_eq!(t1, t2, "the same key keeps its create_revision");
    }

    #[test]
    fn unexpected_input_fails_loudly_as_a_protocol_error() {
        let (mut mutex, _) = EtcdMutex::lock("/lock/r", 1);
        assert_eq!(mutex.step(EtcdInput::Deleted), EtcdStep::Failed(RecipeError::Protocol("creating")));
    }
}
