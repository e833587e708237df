//! Client-side recipes as sans-IO state machines: each step takes the response to the
//! previous request and says what to do next. The madsim client drives them over RPC; the
//! stateright models (model/) drive the same code with model messages.
//!
//! Every etcd core (the mutex, its election campaign, the semaphore, the compare-and-swap lock)
//! speaks one interface: it answers an [`EtcdInput`] with an [`EtcdStep`] ([`EtcdRecipe`]), and
//! [`EtcdLock`] picks the core a scenario's recipe names. So one driver per I/O world runs them
//! all: `sim/src/client/lock.rs` over the simulator's RPC, `real/src/etcd` over etcd-client. A new
//! etcd recipe is its core, one arm of [`EtcdLock::start`], and its scenarios. The ZooKeeper
//! recipes share [`zk_lock::ZkLock`] the same way.

pub mod cas_lock;
pub mod mutex;
pub mod redlock;
pub mod semaphore;
pub mod zk_lock;

use crate::scenario::Recipe;
use crate::store::{
    Command, Compare, CompareResult, CompareTarget, DeleteRangeRequest, KeyRange, LeaseId, PutRequest, RangeRequest,
    RangeResponse, Revision, TxnOp, TxnRequest, TxnResponse,
};

/// What an etcd recipe core asks its driver to do next.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EtcdStep {
    /// Send this txn as a write; feed back [`EtcdInput::Txn`].
    Txn(TxnRequest),
    /// Send this as a linearizable read; feed back [`EtcdInput::Range`].
    Range(RangeRequest),
    /// Watch `key` from `from_revision` until a delete event; then feed back
    /// [`EtcdInput::Deleted`]. The driver records a `wakeup` for [`EtcdRecipe::waiter`].
    WaitDelete { key: String, from_revision: Revision },
    /// The lock (or permit, or leadership) is held; `token` is its fencing token: the
    /// create_revision of the key that holds it.
    Acquired { key: String, token: Revision },
    /// It cannot be acquired with this session.
    Failed(RecipeError),
}

/// The answer to an [`EtcdStep`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EtcdInput {
    Txn(TxnResponse),
    Range(RangeResponse),
    /// The watched key was deleted (or the history below the watch's revision was compacted:
    /// look again).
    Deleted,
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RecipeError {
    /// Our key vanished while waiting: the session's lease expired.
    #[error("session expired: the lock key {0} is gone")]
    SessionExpired(String),
    /// A response that the protocol does not allow at this point: a bug in the driver or server.
    #[error("unexpected response in state {0}")]
    Protocol(&'static str),
}

/// An etcd recipe core: a pure state machine over etcd's KV and Watch API.
pub trait EtcdRecipe {
    /// The next step, given the answer to the previous one.
    fn step(&mut self, input: EtcdInput) -> EtcdStep;
    /// How a `wakeup` record names this waiter (its queue key, or its node for a recipe whose
    /// waiters share one key).
    fn waiter(&self, node: &str) -> String;
    /// The queue entry this attempt may have created, which a driver deletes when it gives the
    /// attempt up (etcd's Lock does so when its context is cancelled), so that it does not block
    /// the queue until its lease expires. `None` when the recipe's key is the lock itself.
    fn own_key(&self) -> Option<&str>;
}

/// The etcd lock cores a scenario's `lock.recipe` can name for a client to drive itself (etcd's
/// Lock and Election services run the mutex on the server instead).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EtcdLock {
    Mutex(mutex::EtcdMutex),
    Cas(cas_lock::CasLock),
    Semaphore(semaphore::Semaphore),
}

impl EtcdLock {
    /// Starts acquiring the lock `name` for `owner` (its node name) under the session `lease`
    /// with `recipe`'s core; `permits` counts only for the semaphore. `None` for a recipe that
    /// is not a client-side etcd lock.
    pub fn start(
        recipe: Recipe,
        name: &str,
        owner: &str,
        lease: LeaseId,
        permits: u32,
        lifetime: EntryLifetime,
    ) -> Option<(EtcdLock, EtcdStep)> {
        Some(match recipe {
            Recipe::EtcdMutex => {
                let (core, step) = mutex::EtcdMutex::lock_for(name, lease, lifetime);
                (EtcdLock::Mutex(core), step)
            }
            Recipe::EtcdCas => {
                let (core, step) = cas_lock::CasLock::lock(name, owner, lifetime.key_lease(lease));
                (EtcdLock::Cas(core), step)
            }
            Recipe::EtcdSemaphore => {
                let (core, step) = semaphore::Semaphore::acquire_for(name, lease, permits, lifetime);
                (EtcdLock::Semaphore(core), step)
            }
            _ => return None,
        })
    }

    /// What releases a hold that `recipe`'s core reported as `Acquired { key, token }`: delete
    /// the holder key (mutex, semaphore), or delete it only while it is still ours (the
    /// compare-and-swap lock, whose key is the lock itself: a holder whose lease expired must not
    /// delete its successor's). `None` for a recipe that is not a client-side etcd lock.
    pub fn release(recipe: Recipe, key: &str, token: Revision) -> Option<Command> {
        match recipe {
            Recipe::EtcdMutex | Recipe::EtcdSemaphore => {
                Some(Command::DeleteRange(DeleteRangeRequest { range: KeyRange::Key(key.to_string()), prev_kv: false }))
            }
            Recipe::EtcdCas => Some(Command::Txn(cas_lock::unlock(key, token))),
            _ => None,
        }
    }

    /// The `permits` a `lock` call of this core records: the semaphore's, 1 for a lock.
    pub fn permits(&self) -> u32 {
        match self {
            EtcdLock::Semaphore(core) => core.permits(),
            EtcdLock::Mutex(_) | EtcdLock::Cas(_) => 1,
        }
    }

    fn core(&self) -> &dyn EtcdRecipe {
        match self {
            EtcdLock::Mutex(core) => core,
            EtcdLock::Cas(core) => core,
            EtcdLock::Semaphore(core) => core,
        }
    }
}

impl EtcdRecipe for EtcdLock {
    fn step(&mut self, input: EtcdInput) -> EtcdStep {
        match self {
            EtcdLock::Mutex(core) => core.step(input),
            EtcdLock::Cas(core) => core.step(input),
            EtcdLock::Semaphore(core) => core.step(input),
        }
    }

    fn waiter(&self, node: &str) -> String {
        self.core().waiter(node)
    }

    fn own_key(&self) -> Option<&str> {
        self.core().own_key()
    }
}

/// How long a recipe's own queue entry lives: the etcd key it puts, the ZooKeeper znode it
/// creates. The entry is the lock: while it exists, nobody queued behind it is granted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum EntryLifetime {
    /// As long as the session: the key is attached to the session's lease, the znode is
    /// ephemeral. A holder that crashes loses the lock when its lease or session expires.
    #[default]
    Session,
    /// Until someone deletes it: a key put without a lease, a persistent znode (the home-made
    /// lock's mistake). A holder that crashes keeps the lock for ever; its restarted process has
    /// a new session and does not know the old entry is its own.
    Persistent,
}

impl EntryLifetime {
    /// The lease to put the entry's key with: the session's, or none (0).
    pub fn key_lease(self, session_lease: LeaseId) -> LeaseId {
        match self {
            EntryLifetime::Session => session_lease,
            EntryLifetime::Persistent => 0,
        }
    }

    /// The create mode of a sequential lock node.
    pub fn sequential_mode(self) -> crate::zk::CreateMode {
        match self {
            EntryLifetime::Session => crate::zk::CreateMode::EphemeralSequential,
            EntryLifetime::Persistent => crate::zk::CreateMode::PersistentSequential,
        }
    }
}

/// The first step of the etcd queue recipes (mutex, semaphore, compare-and-swap lock): put `key`
/// with `value` under `lease` if it does not exist (`create_revision == 0`), otherwise read it.
/// The success branch answers with one put, the failure branch with one range; callers may
/// append more ops to both.
pub fn create_or_read(key: &str, value: &str, lease: LeaseId) -> TxnRequest {
    TxnRequest {
        compare: vec![Compare {
            key: key.to_string(),
            result: CompareResult::Equal,
            target: CompareTarget::CreateRevision(0),
        }],
        success: vec![TxnOp::Put(PutRequest {
            key: key.to_string(),
            value: value.to_string(),
            lease,
            prev_kv: false,
            ignore_lease: false,
        })],
        failure: vec![TxnOp::Range(RangeRequest::new(KeyRange::Key(key.to_string())))],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{CommandResponse, Store};

    /// Every recipe, by an exhaustive match: a new variant fails to compile here until it is
    /// listed, and then the test below says whether [`EtcdLock::start`] covers it.
    fn every_recipe() -> Vec<Recipe> {
        let all = [
            Recipe::EtcdMutex,
            Recipe::EtcdLockApi,
            Recipe::EtcdCas,
            Recipe::ZkQueueLock,
            Recipe::ZkHerdLock,
            Recipe::EtcdElection,
            Recipe::ZkElection,
            Recipe::EtcdSemaphore,
            Recipe::Redlock,
        ];
        for recipe in all {
            match recipe {
                Recipe::EtcdMutex
                | Recipe::EtcdLockApi
                | Recipe::EtcdCas
                | Recipe::ZkQueueLock
                | Recipe::ZkHerdLock
                | Recipe::EtcdElection
                | Recipe::ZkElection
                | Recipe::EtcdSemaphore
                | Recipe::Redlock => {}
            }
        }
        all.to_vec()
    }

    /// Drives a core against a store until it holds or must wait.
    fn drive(store: &mut Store, core: &mut EtcdLock, mut step: EtcdStep) -> EtcdStep {
        loop {
            step = match step {
                EtcdStep::Txn(txn) => match store.apply(&Command::Txn(txn)) {
                    CommandResponse::Txn(response) => core.step(EtcdInput::Txn(response)),
                    other => panic!("{other:?}"),
                },
                EtcdStep::Range(request) => core.step(EtcdInput::Range(store.range(&request).unwrap())),
                done => return done,
            }
        }
    }

    #[test]
    fn every_client_side_etcd_recipe_has_a_core_and_each_runs_the_same_queue() {
        for recipe in every_recipe() {
            let mut store = Store::new();
            let lease = |store: &mut Store| match store.apply(&Command::LeaseGrant { id: 0, ttl_ms: 5000 }) {
                CommandResponse::LeaseGrant { id, .. } => id,
                other => panic!("{other:?}"),
            };
            let (a, b) = (lease(&mut store), lease(&mut store));
            let Some((mut first, step)) = EtcdLock::start(recipe, "/l", "c1", a, 1, EntryLifetime::Session) else {
                assert!(!recipe.puts_own_key(), "{recipe:?} puts its own key but has no core");
                continue;
            };
            assert!(recipe.puts_own_key(), "{recipe:?} has a core but the server puts its key");
            assert_eq!(first.permits(), 1);
            let EtcdStep::Acquired { key: held, token } = drive(&mut store, &mut first, step) else {
                panic!("{recipe:?}: the first client holds")
            };
            let (mut second, step) = EtcdLock::start(recipe, "/l", "c2", b, 1, EntryLifetime::Session).unwrap();
            let EtcdStep::WaitDelete { key, from_revision } = drive(&mut store, &mut second, step) else {
                panic!("{recipe:?}: the second client waits")
            };
            assert_eq!(key, held, "{recipe:?}: the waiter watches the holder's key");
            assert!(from_revision > token);
            assert_eq!(second.own_key().is_some(), recipe != Recipe::EtcdCas, "{recipe:?}: only a queue key is ours");
            let release = EtcdLock::release(recipe, &held, token).expect("a core has a release");
            let stale = EtcdLock::release(recipe, &held, token - 1).expect("a core has a release");
            store.apply(&stale);
            assert!(
                store.range(&RangeRequest::new(KeyRange::Key(held.clone()))).unwrap().kvs.len() == 1
                    || recipe != Recipe::EtcdCas,
                "the compare-and-swap lock's release deletes only its own hold"
            );
            store.apply(&release);
            let step = second.step(EtcdInput::Deleted);
            let EtcdStep::Acquired { token: next, .. } = drive(&mut store, &mut second, step) else {
                panic!("{recipe:?}: the waiter holds after the release")
            };
            assert!(next > token, "{recipe:?}: fencing tokens grow");
        }
    }
}
