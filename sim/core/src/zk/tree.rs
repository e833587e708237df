//! Znode reads and writes over the store.
//!
//! Reads look at one store state (the connected server's). A write is *planned* against the
//! state before it: every check of every op runs on a scratch view of the tree as the earlier
//! ops of the same multi have left it, and only if all pass does the plan become one store
//! transaction (an unconditional txn of puts and deletes, applied in one revision). So a
//! rejected write changes nothing, like a rejected store request.

use std::collections::{BTreeMap, BTreeSet};

use super::{
    ANY_VERSION, CreateMode, SEQUENCE_PREFIX, Stat, ZkError, ZkOp, ZkOpError, ZkOpResult, ZkWrite, children_prefix,
    key_of, parent_of, validate_path,
};
use crate::store::{
    DeleteRangeRequest, KeyRange, KeyValue, LeaseId, PutRequest, RangeRequest, Store, TxnOp, TxnRequest,
};

/// `exists`: the node's stat, or `None`.
pub fn exists(store: &Store, path: &str) -> Result<Option<Stat>, ZkError> {
    validate_path(path)?;
    if path == "/" {
        return Ok(Some(root_stat(store)));
    }
    Ok(latest(store, &key_of(path)).map(|kv| stat(store, path, &kv)))
}

/// `getData`: the node's data and stat.
pub fn get_data(store: &Store, path: &str) -> Result<(String, Stat), ZkError> {
    validate_path(path)?;
    if path == "/" {
        return Ok((String::new(), root_stat(store)));
    }
    let kv = latest(store, &key_of(path)).ok_or_else(|| ZkError::NoNode(path.to_string()))?;
    Ok((kv.value.clone(), stat(store, path, &kv)))
}

/// `getChildren`: the names (not paths) of the node's children, sorted as strings (ZooKeeper
/// returns them unordered; recipes sort them, so sorting here costs nothing and keeps output
/// deterministic).
pub fn get_children(store: &Store, path: &str) -> Result<Vec<String>, ZkError> {
    validate_path(path)?;
    if path != "/" && latest(store, &key_of(path)).is_none() {
        return Err(ZkError::NoNode(path.to_string()));
    }
    Ok(children(store, path))
}

/// Plans `write` against `store`: the store transaction that performs it, or the first op that
/// fails and why. See the module docs of [`super`] for where we differ from ZooKeeper.
pub fn plan(store: &Store, write: &ZkWrite) -> Result<Planned, ZkOpError> {
    if write.ops.is_empty() {
        return Err(ZkOpError { index: 0, error: ZkError::BadArguments("a write needs at least one op".into()) });
    }
    if write.session != 0 && store.lease(write.session).is_none() {
        return Err(ZkOpError { index: 0, error: ZkError::SessionExpired(write.session) });
    }
    let mut pending = Pending::new(store, write.session);
    for (index, op) in write.ops.iter().enumerate() {
        pending.op(op).map_err(|error| ZkOpError { index, error })?;
    }
    Ok(pending.into_plan())
}

/// An accepted write: the store transaction that performs it, and the paths its creates make,
/// in op order (sequential names resolved).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Planned {
    pub txn: TxnRequest,
    pub created: Vec<String>,
}

/// What each op of an applied write did, read from the state right after it (no path is
/// written twice by one write, so the final state of each path is its op's result).
pub fn results(store: &Store, write: &ZkWrite, created: &[String]) -> Vec<ZkOpResult> {
    let mut created = created.iter();
    let stat_of = |path: &str| exists(store, path).ok().flatten().expect("a node the write left in place exists");
    write
        .ops
        .iter()
        .map(|op| match op {
            ZkOp::Create { .. } => {
                let path = created.next().expect("one created path per create").clone();
                let stat = stat_of(&path);
                ZkOpResult::Created { path, stat }
            }
            ZkOp::Delete { .. } => ZkOpResult::Deleted,
            ZkOp::SetData { path, .. } => ZkOpResult::SetData { stat: stat_of(path) },
            ZkOp::Check { .. } => ZkOpResult::Checked,
        })
        .collect()
}

/// A node as the planner sees it.
#[derive(Clone, Debug)]
struct Node {
    version: i64,
    owner: LeaseId,
}

/// The tree as the ops planned so far have left it.
struct Pending<'s> {
    store: &'s Store,
    session: LeaseId,
    /// Paths written so far: `Some` = exists now, `None` = deleted.
    nodes: BTreeMap<String, Option<Node>>,
    /// Sequence counters as advanced so far: parent → next number (`None`: reset by a delete).
    counters: BTreeMap<String, Option<u64>>,
    ops: Vec<TxnOp>,
    created: Vec<String>,
}

impl<'s> Pending<'s> {
    fn new(store: &'s Store, session: LeaseId) -> Self {
        Pending {
            store,
            session,
            nodes: BTreeMap::new(),
            counters: BTreeMap::new(),
            ops: Vec::new(),
            created: Vec::new(),
        }
    }

    fn op(&mut self, op: &ZkOp) -> Result<(), ZkError> {
        op.validate()?;
        match op {
            ZkOp::Create { path, data, mode } => self.create(path, data, *mode),
            ZkOp::Delete { path, version } => self.delete(path, *version),
            ZkOp::SetData { path, data, version } => self.set_data(path, data, *version),
            ZkOp::Check { path, version } => self.existing(path, *version).map(|_| ()),
        }
    }

    fn create(&mut self, path: &str, data: &str, mode: CreateMode) -> Result<(), ZkError> {
        if path == "/" {
            return Err(ZkError::NodeExists(path.to_string()));
        }
        if mode.is_ephemeral() && self.session == 0 {
            return Err(ZkError::BadArguments(format!("ephemeral node {path} needs a session")));
        }
        let parent = parent_of(path);
        let parent_node = self.node(parent).ok_or_else(|| ZkError::NoNode(parent.to_string()))?;
        if parent_node.owner != 0 {
            return Err(ZkError::NoChildrenForEphemerals(parent.to_string()));
        }
        let actual = match mode.is_sequential() {
            true => {
                let next = self.counter(parent);
                self.counters.insert(parent.to_string(), Some(next + 1));
                format!("{path}{next:010}")
            }
            false => path.to_string(),
        };
        if self.node(&actual).is_some() {
            return Err(ZkError::NodeExists(actual));
        }
        let owner = if mode.is_ephemeral() { self.session } else { 0 };
        self.touch(&actual, Some(Node { version: 0, owner }))?;
        self.ops.push(put(key_of(&actual), data, owner));
        self.created.push(actual);
        Ok(())
    }

    fn delete(&mut self, path: &str, version: i64) -> Result<(), ZkError> {
        if path == "/" {
            return Err(ZkError::BadArguments("the root cannot be deleted".into()));
        }
        self.existing(path, version)?;
        if self.has_children(path) {
            return Err(ZkError::NotEmpty(path.to_string()));
        }
        self.touch(path, None)?;
        self.ops.push(delete(key_of(path)));
        // ZooKeeper restarts the sequence of a re-created node at 0.
        if self.counter(path) > 0 {
            self.counters.insert(path.to_string(), None);
        }
        Ok(())
    }

    fn set_data(&mut self, path: &str, data: &str, version: i64) -> Result<(), ZkError> {
        if path == "/" {
            return Err(ZkError::BadArguments("the root holds no data here".into()));
        }
        let node = self.existing(path, version)?;
        self.touch(path, Some(Node { version: node.version + 1, owner: node.owner }))?;
        // Keep the node on its session's lease: a put without the lease would detach it.
        self.ops.push(put(key_of(path), data, node.owner));
        Ok(())
    }

    /// The node at `path`, which must exist with `version` (or any).
    fn existing(&self, path: &str, version: i64) -> Result<Node, ZkError> {
        let node = self.node(path).ok_or_else(|| ZkError::NoNode(path.to_string()))?;
        if version != ANY_VERSION && version != node.version {
            return Err(ZkError::BadVersion { path: path.to_string(), expected: version, actual: node.version });
        }
        Ok(node)
    }

    fn touch(&mut self, path: &str, node: Option<Node>) -> Result<(), ZkError> {
        if self.nodes.insert(path.to_string(), node).is_some() {
            return Err(ZkError::BadArguments(format!("one multi writes {path} twice")));
        }
        Ok(())
    }

    fn node(&self, path: &str) -> Option<Node> {
        if path == "/" {
            return Some(Node { version: 0, owner: 0 });
        }
        match self.nodes.get(path) {
            Some(node) => node.clone(),
            None => latest(self.store, &key_of(path)).map(|kv| Node { version: kv.version - 1, owner: kv.lease }),
        }
    }

    fn has_children(&self, path: &str) -> bool {
        let written = |child: &str| self.nodes.get(&join(path, child));
        let stored = children(self.store, path).into_iter().any(|child| !matches!(written(&child), Some(None)));
        stored || self.nodes.iter().any(|(p, node)| node.is_some() && p != "/" && parent_of(p) == path)
    }

    fn counter(&self, parent: &str) -> u64 {
        match self.counters.get(parent) {
            Some(next) => next.unwrap_or(0),
            None => stored_counter(self.store, parent),
        }
    }

    fn into_plan(mut self) -> Planned {
        for (parent, next) in std::mem::take(&mut self.counters) {
            let key = format!("{SEQUENCE_PREFIX}{parent}");
            match next {
                Some(next) => self.ops.push(put(key, &next.to_string(), 0)),
                None => self.ops.push(delete(key)),
            }
        }
        let txn = TxnRequest { compare: Vec::new(), success: self.ops, failure: Vec::new() };
        Planned { txn, created: self.created }
    }
}

fn put(key: String, value: &str, lease: LeaseId) -> TxnOp {
    TxnOp::Put(PutRequest { key, value: value.to_string(), lease, prev_kv: false, ignore_lease: false })
}

fn delete(key: String) -> TxnOp {
    TxnOp::DeleteRange(DeleteRangeRequest { range: KeyRange::Key(key), prev_kv: false })
}

fn join(parent: &str, child: &str) -> String {
    match parent {
        "/" => format!("/{child}"),
        _ => format!("{parent}/{child}"),
    }
}

fn stored_counter(store: &Store, parent: &str) -> u64 {
    latest(store, &format!("{SEQUENCE_PREFIX}{parent}"))
        .map(|kv| kv.value.parse().expect("a sequence counter holds a number"))
        .unwrap_or(0)
}

fn latest(store: &Store, key: &str) -> Option<KeyValue> {
    let response = store.range(&RangeRequest::new(KeyRange::Key(key.to_string()))).expect("a current read succeeds");
    response.kvs.into_iter().next()
}

/// The names of the direct children of `path`, sorted.
fn children(store: &Store, path: &str) -> Vec<String> {
    let prefix = children_prefix(path);
    let mut request = RangeRequest::new(KeyRange::Prefix(prefix.clone()));
    request.keys_only = true;
    let response = store.range(&request).expect("a current read succeeds");
    let names: BTreeSet<String> = response
        .kvs
        .iter()
        .filter_map(|kv| kv.key.strip_prefix(&prefix))
        .filter(|rest| !rest.contains('/'))
        .map(str::to_string)
        .collect();
    names.into_iter().collect()
}

fn stat(store: &Store, path: &str, kv: &KeyValue) -> Stat {
    Stat {
        czxid: kv.create_revision,
        mzxid: kv.mod_revision,
        version: kv.version - 1,
        ephemeral_owner: kv.lease,
        data_length: kv.value.len(),
        num_children: children(store, path).len(),
    }
}

fn root_stat(store: &Store) -> Stat {
    Stat {
        czxid: 0,
        mzxid: 0,
        version: 0,
        ephemeral_owner: 0,
        data_length: 0,
        num_children: children(store, "/").len(),
    }
}
