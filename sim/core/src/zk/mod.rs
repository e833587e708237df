//! The ZooKeeper view of the replicated store: znodes, sessions, sequential and ephemeral
//! nodes, one-shot and persistent watches (ZooKeeper 3.6+ semantics, reduced to what
//! coordination recipes use).
//!
//! It is a view, not a second database: every znode is a key of the same MVCC store, so both
//! APIs share one log, one revision counter (the zxid) and one lease table (a session *is* a
//! lease; its ephemeral nodes are keys attached to it, deleted when the leader expires it).
//!
//! | ZooKeeper           | the store                                                        |
//! |---------------------|------------------------------------------------------------------|
//! | znode `/a/b`        | key `zk/a/b`, value = data                                       |
//! | zxid                | revision                                                         |
//! | czxid, mzxid        | create_revision, mod_revision                                    |
//! | version             | version − 1 (ZooKeeper counts from 0)                             |
//! | ephemeralOwner      | lease (0 = persistent)                                           |
//! | session             | lease; ping = keepalive; timeout = TTL                           |
//! | sequence counter    | key `zk#seq/a` (value = next number), bumped in the same revision |
//!
//! Where ZooKeeper leaves room or we differ, it is said here:
//! - The sequence counter counts sequential creates under a parent; ZooKeeper uses the parent's
//!   cversion, which also counts other child changes. Both only grow, which is all recipes
//!   rely on (the order of the queue). Deleting the parent resets it, as in ZooKeeper.
//! - A `multi` may not write one path twice (ZooKeeper allows it); such a multi is rejected
//!   whole with `BadArguments`, before anything changes.
//! - Reads are served by the server the client is connected to from its applied state, so they
//!   may be stale, exactly as in ZooKeeper; `sync` makes that server catch up with the leader.
//!   A server answers a client only once it has applied the client's last seen zxid (ZooKeeper
//!   refuses such a connection), so a client never reads older state than it wrote or read.
//!
//! Parts: [`tree`] (reads and the planning of writes over a [`crate::store::Store`]), [`watch`]
//! (which store events fire which watch). The async client lives in `crate::client::zk`.

pub mod tree;
pub mod watch;

#[cfg(test)]
mod reference_tests;
#[cfg(test)]
mod tests;

use serde::{Deserialize, Serialize};

use crate::store::{LeaseId, Revision};

/// The key prefix of every znode.
pub const KEY_PREFIX: &str = "zk";
/// The key prefix of the sequence counters (outside `zk/`, so no znode range sees them).
pub const SEQUENCE_PREFIX: &str = "zk#seq";

/// Any version (ZooKeeper's -1 in delete, setData and check).
pub const ANY_VERSION: i64 = -1;

/// How a znode is created.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CreateMode {
    Persistent,
    /// Deleted when the creating session ends.
    Ephemeral,
    /// The name gets a 10-digit suffix from the parent's counter.
    PersistentSequential,
    EphemeralSequential,
}

impl CreateMode {
    pub fn is_ephemeral(self) -> bool {
        matches!(self, CreateMode::Ephemeral | CreateMode::EphemeralSequential)
    }

    pub fn is_sequential(self) -> bool {
        matches!(self, CreateMode::PersistentSequential | CreateMode::EphemeralSequential)
    }
}

/// One operation of a write (alone or in a `multi`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ZkOp {
    /// Create `path` (for sequential modes: `path` + the 10-digit sequence number).
    Create { path: String, data: String, mode: CreateMode },
    /// Delete `path` if its version is `version` (or [`ANY_VERSION`]); it must have no children.
    Delete { path: String, version: i64 },
    /// Replace the data of `path` if its version is `version` (or [`ANY_VERSION`]).
    SetData { path: String, data: String, version: i64 },
    /// Only in a multi: `path` exists with this version (or any).
    Check { path: String, version: i64 },
}

impl ZkOp {
    /// Checks the op's path with ZooKeeper's rules; a sequential create's path is checked with
    /// its suffix, so `/queue/` (children named by number alone) is valid there.
    pub fn validate(&self) -> Result<(), ZkError> {
        match self {
            ZkOp::Create { path, mode, .. } if mode.is_sequential() => validate_path(&format!("{path}0000000000")),
            _ => validate_path(self.path()),
        }
    }

    pub fn path(&self) -> &str {
        match self {
            ZkOp::Create { path, .. } | ZkOp::Delete { path, .. } | ZkOp::SetData { path, .. } => path,
            ZkOp::Check { path, .. } => path,
        }
    }
}

/// A write request: one log entry. One op is a plain create/delete/setData; several are a
/// `multi` that applies all or nothing, in one zxid.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ZkWrite {
    /// The writing session (a lease ID); 0 = none (no ephemeral creates then).
    pub session: LeaseId,
    pub ops: Vec<ZkOp>,
}

/// What one op of an accepted write did.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ZkOpResult {
    /// The node's actual path (with the sequence suffix) and its stat after the write.
    Created {
        path: String,
        stat: Stat,
    },
    Deleted,
    SetData {
        stat: Stat,
    },
    Checked,
}

/// ZooKeeper's error codes, as far as the view can produce them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[serde(rename_all = "snake_case")]
pub enum ZkError {
    #[error("no node {0}")]
    NoNode(String),
    #[error("node {0} exists")]
    NodeExists(String),
    #[error("bad version for {path}: expected {expected}, is {actual}")]
    BadVersion { path: String, expected: i64, actual: i64 },
    #[error("node {0} has children")]
    NotEmpty(String),
    #[error("ephemeral node {0} cannot have children")]
    NoChildrenForEphemerals(String),
    #[error("session {0} has expired")]
    SessionExpired(LeaseId),
    #[error("bad arguments: {0}")]
    BadArguments(String),
}

/// A rejected write: which op failed and why. Nothing changed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[error("op {index}: {error}")]
pub struct ZkOpError {
    pub index: usize,
    pub error: ZkError,
}

/// A znode's metadata (ZooKeeper's Stat, without the fields no recipe reads: ctime, mtime,
/// cversion, aversion, pzxid).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stat {
    /// The zxid (revision) that created the node: the fencing token of a lock node.
    pub czxid: Revision,
    /// The zxid of the last change to its data.
    pub mzxid: Revision,
    /// Changes to its data since creation (0 after the create).
    pub version: i64,
    /// The owning session, 0 for a persistent node.
    pub ephemeral_owner: LeaseId,
    pub data_length: usize,
    pub num_children: usize,
}

/// What a watch was set by, which decides the changes that fire it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WatchKind {
    /// One-shot, set by `exists` or `getData`: fires on the node's creation, data change or
    /// deletion.
    Data,
    /// One-shot, set by `getChildren`: fires when a child is created or deleted, or the node is
    /// deleted.
    Children,
    /// `addWatch(PERSISTENT)`: data and child changes of the node, until removed.
    Persistent,
    /// `addWatch(PERSISTENT_RECURSIVE)`: creation, data change and deletion of the node and of
    /// every descendant, until removed.
    PersistentRecursive,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventType {
    NodeCreated,
    NodeDeleted,
    NodeDataChanged,
    NodeChildrenChanged,
}

/// A watch notification: what changed, on which path, at which zxid.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WatchedEvent {
    pub kind: EventType,
    pub path: String,
    pub zxid: Revision,
}

/// The store key of the znode `path` (root: `zk`, never stored).
pub fn key_of(path: &str) -> String {
    match path {
        "/" => KEY_PREFIX.to_string(),
        _ => format!("{KEY_PREFIX}{path}"),
    }
}

/// The znode path of a store key under [`KEY_PREFIX`], `None` for any other key.
pub fn path_of(key: &str) -> Option<&str> {
    key.strip_prefix(KEY_PREFIX).filter(|rest| rest.starts_with('/'))
}

/// The prefix of the keys of `path`'s descendants.
pub fn children_prefix(path: &str) -> String {
    format!("{}/", key_of(path))
}

/// The parent of a valid non-root path.
pub fn parent_of(path: &str) -> &str {
    match path.rfind('/') {
        Some(0) | None => "/",
        Some(i) => &path[..i],
    }
}

/// The last segment of a valid non-root path.
pub fn name_of(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// The sequence number a sequential node's name ends with (its last 10 characters).
pub fn sequence_of(name: &str) -> Option<u64> {
    let digits = name.get(name.len().checked_sub(10)?..)?;
    if digits.bytes().all(|b| b.is_ascii_digit()) { digits.parse().ok() } else { None }
}

/// ZooKeeper's path rules: absolute, no empty segment, no trailing slash (but the root), no `.`
/// or `..` segment, no NUL.
pub fn validate_path(path: &str) -> Result<(), ZkError> {
    let bad = |why: &str| Err(ZkError::BadArguments(format!("invalid path {path:?}: {why}")));
    if !path.starts_with('/') {
        return bad("not absolute");
    }
    if path == "/" {
        return Ok(());
    }
    if path.ends_with('/') {
        return bad("trailing slash");
    }
    if path.contains('\0') {
        return bad("NUL character");
    }
    for segment in path[1..].split('/') {
        match segment {
            "" => return bad("empty segment"),
            "." | ".." => return bad("relative segment"),
            _ => {}
        }
    }
    Ok(())
}
