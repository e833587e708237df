//! Client-side recipes as sans-IO state machines: each step takes the response to the
//! previous request and says what to do next. The madsim client drives them over RPC; the
//! stateright models (model/) drive the same code with model messages.

pub mod cas_lock;
pub mod mutex;
pub mod redlock;
pub mod semaphore;
pub mod zk_lock;

use crate::store::{
    Compare, CompareResult, CompareTarget, KeyRange, LeaseId, PutRequest, RangeRequest, TxnOp, TxnRequest,
};

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
