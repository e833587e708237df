//! The request and response types of the replicated store: the contract between the
//! state machine ([`super::Store`]), the servers that replicate it and the clients.
//!
//! Semantics follow etcd v3 (api/etcdserverpb/rpc.proto and mvccpb/kv.proto): one global
//! revision counter; every write request bumps it by exactly one, however many keys it
//! touches; each key carries create_revision, mod_revision and version.

use serde::{Deserialize, Serialize};

/// A store revision. The store starts at revision 1 (etcd's first revision), so 0 means
/// "none" in requests (current revision, no lease, no bound).
pub type Revision = i64;

/// A lease ID. 0 means "no lease".
pub type LeaseId = i64;

/// The keys a request applies to. etcd encodes these as (key, range_end) byte pairs; an enum
/// says the same without byte arithmetic on the prefix.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KeyRange {
    /// Exactly this key.
    Key(String),
    /// Every key that starts with this prefix ("" = every key).
    Prefix(String),
    /// Keys in `[start, end)`, compared as bytes.
    Range { start: String, end: String },
    /// Every key `>= start` (etcd's range_end "\0").
    FromKey(String),
}

/// One stored version of a key (etcd mvccpb.KeyValue).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyValue {
    pub key: String,
    pub value: String,
    /// Revision of the put that created this generation of the key.
    pub create_revision: Revision,
    /// Revision of the last put to this key.
    pub mod_revision: Revision,
    /// Number of puts since creation (1 after the creating put); a delete resets it.
    pub version: i64,
    /// The lease the key is attached to, 0 for none.
    pub lease: LeaseId,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SortTarget {
    Key,
    Version,
    CreateRevision,
    ModRevision,
    Value,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SortOrder {
    Ascend,
    Descend,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PutRequest {
    pub key: String,
    pub value: String,
    /// Attach the key to this lease (0 = none). The lease must exist.
    pub lease: LeaseId,
    /// Return the previous key-value in the response.
    pub prev_kv: bool,
    /// Keep the key's current lease (`lease` must be 0, the key must exist), as etcd's
    /// `ignore_lease`: update a value without knowing or touching its lease.
    #[serde(default)]
    pub ignore_lease: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RangeRequest {
    pub range: KeyRange,
    /// Read at this revision; 0 = the current revision.
    pub revision: Revision,
    /// At most this many keys in `kvs` (0 = no limit); `count` still counts all matches.
    pub limit: usize,
    /// Default (None) = ascending by key.
    pub sort: Option<(SortTarget, SortOrder)>,
    /// Only keys with create_revision <= this (0 = no bound). etcd's WithMaxCreateRev.
    pub max_create_revision: Revision,
    /// Only keys with create_revision >= this (0 = no bound).
    pub min_create_revision: Revision,
    pub keys_only: bool,
    pub count_only: bool,
}

impl RangeRequest {
    /// A plain read of `range` at the current revision.
    pub fn new(range: KeyRange) -> Self {
        RangeRequest {
            range,
            revision: 0,
            limit: 0,
            sort: None,
            max_create_revision: 0,
            min_create_revision: 0,
            keys_only: false,
            count_only: false,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeleteRangeRequest {
    pub range: KeyRange,
    pub prev_kv: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CompareResult {
    Equal,
    NotEqual,
    Greater,
    Less,
}

/// What a compare reads from the key. A missing key has version, create_revision,
/// mod_revision and lease 0 and no value (a value compare on a missing key is false,
/// as in etcd).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CompareTarget {
    Version(i64),
    CreateRevision(Revision),
    ModRevision(Revision),
    Value(String),
    Lease(LeaseId),
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Compare {
    pub key: String,
    pub result: CompareResult,
    pub target: CompareTarget,
}

/// One operation of a transaction branch.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TxnOp {
    Range(RangeRequest),
    Put(PutRequest),
    DeleteRange(DeleteRangeRequest),
    Txn(TxnRequest),
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TxnRequest {
    /// All must hold for `success` to run; otherwise `failure` runs.
    pub compare: Vec<Compare>,
    pub success: Vec<TxnOp>,
    pub failure: Vec<TxnOp>,
}

/// A request that changes the replicated state: one raft log entry.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Command {
    Put(PutRequest),
    DeleteRange(DeleteRangeRequest),
    Txn(TxnRequest),
    /// Create a lease. `id` 0 = let the store pick the next free ID.
    LeaseGrant {
        id: LeaseId,
        ttl_ms: u64,
    },
    /// Delete a lease and every key attached to it, in one revision.
    LeaseRevoke {
        id: LeaseId,
        reason: RevokeReason,
    },
    /// Discard history below `revision`.
    Compact {
        revision: Revision,
    },
    /// Record each lease's remaining TTL as the leader sees it (etcd's lease checkpoints), so
    /// that a new leader continues the countdown instead of restarting every lease at its full
    /// TTL (docs/cases/04). Unknown leases are skipped (revoked meanwhile).
    LeaseCheckpoint {
        checkpoints: Vec<(LeaseId, u64)>,
    },
    /// A ZooKeeper write (create, delete, setData, multi) on the znodes kept in this store
    /// (see `crate::zk`): planned against the current state, applied as one transaction.
    Zk(crate::zk::ZkWrite),
}

/// Why a lease was revoked: asked by a client, or expired by the leader's lessor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RevokeReason {
    Client,
    Expired,
}

/// Every response carries the store revision after the request (etcd ResponseHeader).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResponseHeader {
    pub revision: Revision,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PutResponse {
    pub header: ResponseHeader,
    pub prev_kv: Option<KeyValue>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RangeResponse {
    pub header: ResponseHeader,
    pub kvs: Vec<KeyValue>,
    /// Number of matching keys, before `limit`.
    pub count: usize,
    /// True when `limit` cut the result.
    pub more: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeleteRangeResponse {
    pub header: ResponseHeader,
    pub deleted: usize,
    pub prev_kvs: Vec<KeyValue>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TxnOpResponse {
    Range(RangeResponse),
    Put(PutResponse),
    DeleteRange(DeleteRangeResponse),
    Txn(TxnResponse),
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TxnResponse {
    pub header: ResponseHeader,
    pub succeeded: bool,
    pub responses: Vec<TxnOpResponse>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CommandResponse {
    Put(PutResponse),
    DeleteRange(DeleteRangeResponse),
    Txn(TxnResponse),
    LeaseGrant {
        header: ResponseHeader,
        id: LeaseId,
        ttl_ms: u64,
    },
    LeaseRevoke {
        header: ResponseHeader,
    },
    Compact {
        header: ResponseHeader,
    },
    LeaseCheckpoint {
        header: ResponseHeader,
    },
    /// A ZooKeeper write: what each op did, or the op that failed (nothing changed then). The
    /// header's revision is the write's zxid when it changed anything.
    Zk {
        header: ResponseHeader,
        result: Result<Vec<crate::zk::ZkOpResult>, crate::zk::ZkOpError>,
    },
    /// The request was rejected; the store did not change.
    Error(StoreError),
}

/// A rejected request. The store is unchanged after any of these.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[serde(rename_all = "snake_case")]
pub enum StoreError {
    #[error("revision {requested} has been compacted (compact revision {compact_revision})")]
    Compacted { requested: Revision, compact_revision: Revision },
    #[error("revision {requested} is in the future (current revision {current})")]
    FutureRevision { requested: Revision, current: Revision },
    #[error("lease {0} not found")]
    LeaseNotFound(LeaseId),
    #[error("lease {0} already exists")]
    LeaseExists(LeaseId),
    #[error("lease TTL must be at least 1 ms")]
    InvalidTtl,
    #[error("duplicate key {0:?} in one transaction")]
    DuplicateKey(String),
    #[error("key {0:?} not found")]
    KeyNotFound(String),
    #[error("{0}")]
    InvalidRequest(String),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    Put,
    Delete,
}

/// One change, as a watcher sees it (etcd mvccpb.Event). For a delete, `kv` holds the key,
/// an empty value, mod_revision = the deleting revision, version 0.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Event {
    pub kind: EventKind,
    pub kv: KeyValue,
    pub prev_kv: Option<KeyValue>,
}

/// A lease as the replicated state knows it: no deadline here; expiry is decided by the
/// leader's lessor on its own clock (see `crate::lessor`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lease {
    pub id: LeaseId,
    pub ttl_ms: u64,
    /// Keys currently attached, in key order.
    pub keys: std::collections::BTreeSet<String>,
    /// The remaining TTL at the last checkpoint (ms), `None` before the first: a new leader
    /// starts the lease's countdown from here.
    #[serde(default)]
    pub remaining_ms: Option<u64>,
}

/// One line for logs (openraft prints the entries it replicates).
impl std::fmt::Display for Command {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Command::Put(put) => write!(f, "put {:?} lease={}", put.key, put.lease),
            Command::DeleteRange(delete) => write!(f, "delete {:?}", delete.range),
            Command::Txn(txn) => {
                write!(f, "txn compares={} then={} else={}", txn.compare.len(), txn.success.len(), txn.failure.len())
            }
            Command::LeaseGrant { id, ttl_ms } => write!(f, "lease-grant id={id} ttl_ms={ttl_ms}"),
            Command::LeaseRevoke { id, reason } => {
                write!(f, "lease-revoke id={id} reason={reason:?}")
            }
            Command::Compact { revision } => write!(f, "compact revision={revision}"),
            Command::LeaseCheckpoint { checkpoints } => write!(f, "lease-checkpoint leases={}", checkpoints.len()),
            Command::Zk(write) => write!(f, "zk session={} ops={}", write.session, write.ops.len()),
        }
    }
}
