//! The client ↔ server protocol (etcd's KV, Lease and Watch services, reduced to what the
//! recipes use) and the client ↔ resource protocol.

use madsim::net::rpc::Request;
use serde::{Deserialize, Serialize};

use crate::store::{
    Command, CommandResponse, Event, KeyRange, LeaseId, RangeRequest, RangeResponse, Revision, StoreError,
};

#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum ClientRequest {
    /// A write, replicated through the leader's log.
    Write(Command),
    /// A read. Linearizable reads go through the leader's read index (etcd's default);
    /// serializable ones are served from the contacted server's applied state, possibly stale.
    Range { request: RangeRequest, linearizable: bool },
    /// Renew a lease on the leader (etcd LeaseKeepAlive).
    KeepAlive { lease: LeaseId },
    /// Long-poll for changes to `range` with revision >= `from`, waiting at most `wait_ms` of
    /// the server's local time. Stateless on the server: a client resumes on any server with
    /// its next revision, as an etcd watch resumes with `start_revision`.
    Watch { range: KeyRange, from: Revision, wait_ms: u64 },
    /// etcd's Lock service (v3lock): the server acquires the lock `name` for `lease` with the
    /// mutex recipe and answers when it holds it. Blocks; served by the leader only.
    Lock { name: String, lease: LeaseId },
    /// etcd's Unlock: deletes the holder key.
    Unlock { key: String },
}

impl Request for ClientRequest {
    type Response = ClientReply;
    const ID: u64 = 0x636c_6965_6e74;
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum ClientReply {
    Write(CommandResponse),
    Range(Result<RangeResponse, StoreError>),
    KeptAlive {
        ttl_ms: u64,
    },
    LeaseNotFound,
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
