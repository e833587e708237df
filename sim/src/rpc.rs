//! The client ↔ server protocol (etcd's KV, Lease and Watch services, reduced to what the
//! recipes use, and the ZooKeeper view's requests) and the client ↔ resource protocol.

use madsim::net::rpc::Request;
use serde::{Deserialize, Serialize};

use crate::store::{
    Command, CommandResponse, Event, KeyRange, LeaseId, RangeRequest, RangeResponse, Revision, StoreError, TxnResponse,
};
use crate::zk::{Stat, WatchKind, WatchedEvent, ZkError, ZkOpError, ZkOpResult, ZkWrite};

#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum ClientRequest {
    /// A write, replicated through the leader's log.
    Write(Command),
    /// A read. Linearizable reads go through the leader's read index (etcd's default);
    /// serializable ones are served from the contacted server's applied state, possibly stale.
    Range { request: RangeRequest, linearizable: bool },
    /// Renew a lease on the leader (etcd LeaseKeepAlive).
    KeepAlive { lease: LeaseId },
    /// etcd LeaseTimeToLive: the lease's granted TTL, its remaining TTL by the leader's lessor,
    /// and (with `keys`) the keys attached to it.
    LeaseTimeToLive { lease: LeaseId, keys: bool },
    /// etcd LeaseLeases: every lease ID.
    LeaseLeases,
    /// Long-poll for changes to `range` with revision >= `from`, waiting at most `wait_ms` of
    /// the server's local time. Stateless on the server: a client resumes on any server with
    /// its next revision, as an etcd watch resumes with `start_revision`.
    Watch { range: KeyRange, from: Revision, wait_ms: u64, options: WatchOptions },
    /// etcd's Lock service (v3lock): the server acquires the lock `name` for `lease` with the
    /// mutex recipe and answers when it holds it. Blocks; any member serves it.
    Lock { name: String, lease: LeaseId },
    /// etcd's Unlock: deletes the holder key.
    Unlock { key: String },
    /// A request of the ZooKeeper view (`crate::zk`).
    Zk(ZkRequest),
    /// etcd's Election service (server/etcdserver/api/v3election).
    Election(ElectionRequest),
    /// etcd's Maintenance Status: the answering member's own view (any member answers).
    Status,
}

impl ClientRequest {
    /// What the request costs on a server's CPU (`[timing] server`).
    pub fn class(&self) -> crate::timing::RequestClass {
        use crate::timing::RequestClass::{Lease, Other, Read, Stream, Write};
        match self {
            ClientRequest::Write(Command::LeaseGrant { .. } | Command::LeaseRevoke { .. }) => Lease,
            ClientRequest::Write(_) | ClientRequest::Unlock { .. } => Write,
            ClientRequest::Range { .. } => Read,
            ClientRequest::KeepAlive { .. } | ClientRequest::LeaseTimeToLive { .. } | ClientRequest::LeaseLeases => {
                Lease
            }
            ClientRequest::Zk(request) => match request {
                ZkRequest::Write(_) => Write,
                ZkRequest::Exists { .. } | ZkRequest::GetData { .. } | ZkRequest::GetChildren { .. } => Read,
                ZkRequest::CreateSession { .. } | ZkRequest::Ping { .. } | ZkRequest::Touch { .. } => Lease,
                ZkRequest::Watch { .. } => Stream,
                _ => Other,
            },
            ClientRequest::Watch { .. } | ClientRequest::Election(ElectionRequest::Observe { .. }) => Stream,
            ClientRequest::Lock { .. } | ClientRequest::Election(_) | ClientRequest::Status => Other,
        }
    }
}

/// etcd's Election service. Served by any member; each candidate's key is `<name>/<lease hex>`,
/// the oldest key under `<name>/` is the leader.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum ElectionRequest {
    /// Queue for leadership with `value` as the proposal; blocks until the caller leads.
    Campaign { name: String, lease: LeaseId, value: String },
    /// The leader replaces its value, only while it still leads under `leader`.
    Proclaim { leader: LeaderKey, value: String },
    /// The current leader's key-value (linearizable), if any.
    Leader { name: String },
    /// Long-poll: answers when the leader differs from `seen` (create_revision, mod_revision of
    /// the leader key the observer saw last; `None`: answer with the current one), or after
    /// `wait_ms` of the server's local time with the current one.
    Observe { name: String, seen: Option<(Revision, Revision)>, wait_ms: u64 },
    /// Give up leadership: delete the leader key if it is still ours.
    Resign { leader: LeaderKey },
}

/// What identifies a leadership (etcd's LeaderKey): its key's create_revision is the term and
/// the fencing token.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeaderKey {
    pub name: String,
    pub key: String,
    pub rev: Revision,
    pub lease: LeaseId,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum ElectionReply {
    Elected(LeaderKey),
    Proclaimed,
    Resigned,
    /// The leader key-value, or `None` when nobody leads (etcd's ErrElectionNoLeader).
    Leader(Option<crate::store::KeyValue>),
    /// The leadership named in the request is over (etcd's ErrElectionNotLeader).
    NotLeader,
    Failed {
        reason: String,
    },
}

/// The ZooKeeper view's requests. A ZooKeeper client talks to the one server it is connected to:
/// that server answers reads from its own applied state (possibly stale) and forwards writes to
/// the leader, answering only once it has applied them itself (so a client reads its writes).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum ZkRequest {
    Write(ZkWrite),
    /// `seen`: the newest zxid this client has seen; the server answers only once it has applied
    /// that far (a ZooKeeper server refuses a client that has seen more than it has).
    Exists {
        path: String,
        seen: Revision,
    },
    GetData {
        path: String,
        seen: Revision,
    },
    GetChildren {
        path: String,
        seen: Revision,
    },
    /// Catch this server up with the leader: answers with a zxid at least the leader's commit
    /// point at the time of the call, once this server has applied it.
    Sync,
    /// Long-poll for the changes after zxid `after` that fire a watch on `path` of `kind`,
    /// waiting at most `wait_ms` of the server's local time.
    Watch {
        path: String,
        kind: WatchKind,
        after: Revision,
        wait_ms: u64,
    },
    /// Server to leader, for `Sync`: confirm leadership (read index) and answer the applied zxid.
    ReadIndex,
    /// Create a session of `ttl_ms` (a lease): answered as a lease grant write.
    CreateSession {
        ttl_ms: u64,
    },
    /// A ping of the session, or (`validate`) its validation on a new connection: answered
    /// `KeptAlive`, or `LeaseNotFound` once the session has expired.
    Ping {
        session: LeaseId,
        validate: bool,
    },
    /// Follower to leader: a client's ping, passed on (the leader touches the session).
    Touch {
        session: LeaseId,
    },
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum ZkReply {
    /// `zxid`: the store revision after the write (its zxid when it changed anything).
    Write {
        zxid: Revision,
        result: Result<Vec<ZkOpResult>, ZkOpError>,
    },
    /// Every read carries the zxid of the state it was served from.
    Exists {
        zxid: Revision,
        result: Result<Option<Stat>, ZkError>,
    },
    Data {
        zxid: Revision,
        result: Result<(String, Stat), ZkError>,
    },
    Children {
        zxid: Revision,
        result: Result<Vec<String>, ZkError>,
    },
    Synced {
        zxid: Revision,
    },
    /// The notifications found (empty when the wait ran out), and the zxid the server had
    /// reached: with no notification the watcher may resume after it.
    Watch {
        zxid: Revision,
        result: Result<Vec<WatchedEvent>, StoreError>,
    },
}

impl Request for ClientRequest {
    type Response = ClientReply;
    const ID: u64 = 0x636c_6965_6e74;
}

/// etcd's answer to a proposal not applied within its request timeout (ErrTimeout,
/// etcdserver/errors.go), sent as `ClientReply::Unavailable`'s reason.
pub const REQUEST_TIMED_OUT: &str = "etcdserver: request timed out";

#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum ClientReply {
    Write(CommandResponse),
    Range(Result<RangeResponse, StoreError>),
    KeptAlive {
        ttl_ms: u64,
    },
    LeaseNotFound,
    /// `remaining_ms` by the leader's clock; `keys` empty unless asked for.
    LeaseTtl {
        lease: LeaseId,
        granted_ttl_ms: u64,
        remaining_ms: u64,
        keys: Vec<String>,
    },
    Leases(Vec<LeaseId>),
    Watch(Result<WatchBatch, StoreError>),
    /// The Lock service holds the lock for the caller: `revision` is the holder key's
    /// create_revision (the fencing token).
    Locked {
        key: String,
        revision: Revision,
    },
    /// The Lock service gave up: the caller's lease is gone (or another store error).
    LockFailed {
        reason: String,
    },
    /// This server is not the leader; `leader` is its best guess.
    NotLeader {
        leader: Option<u64>,
    },
    /// The server could not serve the request (e.g. lost leadership mid-request).
    Unavailable {
        reason: String,
    },
    Zk(ZkReply),
    Election(ElectionReply),
    /// The answering member's id, the leader it knows, its Raft term, last log index and applied
    /// index, and its store's revision.
    Status {
        member_id: u64,
        leader: Option<u64>,
        raft_term: u64,
        raft_index: u64,
        raft_applied_index: u64,
        revision: Revision,
    },
}

/// The reply to a request of one shape answered with another: the simulated server broke the
/// protocol, a bug in our code, which stops the run loudly. The wire carries one reply type (one
/// madsim handler per server, so the order in which a server takes requests is the order they
/// arrive); the typed accessors below are the one place its shape is checked.
#[cold]
#[track_caller]
pub fn answered_wrongly(request: &str, reply: &dyn std::fmt::Debug) -> ! {
    panic!("invariant violated: {request} was answered with {reply:?}")
}

impl ClientReply {
    /// The answer to a `Write`.
    pub fn into_write(self) -> CommandResponse {
        match self {
            ClientReply::Write(response) => response,
            other => answered_wrongly("a write", &other),
        }
    }

    /// The answer to a `Range`.
    pub fn into_range(self) -> Result<RangeResponse, StoreError> {
        match self {
            ClientReply::Range(result) => result,
            other => answered_wrongly("a range", &other),
        }
    }

    /// The answer to a `Watch` poll.
    pub fn into_watch(self) -> Result<WatchBatch, StoreError> {
        match self {
            ClientReply::Watch(result) => result,
            other => answered_wrongly("a watch", &other),
        }
    }

    /// The answer to `LeaseLeases`.
    pub fn into_leases(self) -> Vec<LeaseId> {
        match self {
            ClientReply::Leases(ids) => ids,
            other => answered_wrongly("a lease list", &other),
        }
    }

    /// The answer to a ZooKeeper request.
    pub fn into_zk(self) -> ZkReply {
        match self {
            ClientReply::Zk(reply) => reply,
            other => answered_wrongly("a ZooKeeper request", &other),
        }
    }
}

impl ZkReply {
    /// The answer to a write: (zxid, result).
    pub fn into_write(self) -> (Revision, Result<Vec<ZkOpResult>, ZkOpError>) {
        match self {
            ZkReply::Write { zxid, result } => (zxid, result),
            other => answered_wrongly("a ZooKeeper write", &other),
        }
    }

    /// The answer to `exists`: (zxid, result).
    pub fn into_exists(self) -> (Revision, Result<Option<Stat>, ZkError>) {
        match self {
            ZkReply::Exists { zxid, result } => (zxid, result),
            other => answered_wrongly("exists", &other),
        }
    }

    /// The answer to `getData`: (zxid, result).
    pub fn into_data(self) -> (Revision, Result<(String, Stat), ZkError>) {
        match self {
            ZkReply::Data { zxid, result } => (zxid, result),
            other => answered_wrongly("getData", &other),
        }
    }

    /// The answer to `getChildren`: (zxid, result).
    pub fn into_children(self) -> (Revision, Result<Vec<String>, ZkError>) {
        match self {
            ZkReply::Children { zxid, result } => (zxid, result),
            other => answered_wrongly("getChildren", &other),
        }
    }

    /// The answer to `sync`: the zxid the server caught up to.
    pub fn into_synced(self) -> Revision {
        match self {
            ZkReply::Synced { zxid } => zxid,
            other => answered_wrongly("sync", &other),
        }
    }

    /// The answer to a watch poll: (zxid, notifications).
    pub fn into_watch(self) -> (Revision, Result<Vec<WatchedEvent>, StoreError>) {
        match self {
            ZkReply::Watch { zxid, result } => (zxid, result),
            other => answered_wrongly("a ZooKeeper watch", &other),
        }
    }
}

/// The answer to a `Txn` command: its response, or the store's refusal.
pub fn txn_reply(response: CommandResponse) -> Result<TxnResponse, StoreError> {
    match response {
        CommandResponse::Txn(response) => Ok(response),
        CommandResponse::Error(error) => Err(error),
        other => answered_wrongly("a txn", &other),
    }
}

/// etcd WatchCreateRequest's options: `prev_kv` attaches each key's previous value; the
/// filters drop puts or deletes (a batch of only filtered events is not sent).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WatchOptions {
    pub prev_kv: bool,
    pub no_put: bool,
    pub no_delete: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WatchBatch {
    /// The server's store revision when the batch was cut: with no events, the watcher may
    /// resume from `header_revision + 1`.
    pub header_revision: Revision,
    pub events: Vec<Event>,
}

/// A write to the protected resource, carrying the writer's fencing token.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ResourceWrite {
    pub client: String,
    pub token: i64,
    pub value: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ResourceReply {
    Accepted,
    /// The token is lower than one the resource already accepted.
    Rejected {
        highest: i64,
    },
}

impl Request for ResourceWrite {
    type Response = ResourceReply;
    const ID: u64 = 0x7265_736f_7572;
}

/// A request to one Redis server of an independent cluster (`cluster.kind = "independent"`):
/// the two commands the Redlock recipe sends.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum RedisRequest {
    /// `SET key value NX PX ttl_ms`.
    SetNxPx { key: String, value: String, ttl_ms: u64 },
    /// The release script: `if redis.call("get", key) == value then return redis.call("del", key)`.
    DeleteIfValue { key: String, value: String },
}

impl Request for RedisRequest {
    /// `SET ... NX`: `OK` (true) or `nil` (false); the release script: 1 (true) or 0 (false).
    type Response = bool;
    const ID: u64 = 0x7265_6469_73;
}
