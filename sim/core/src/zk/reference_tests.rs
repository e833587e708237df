//! Differential test: the ZooKeeper view against a naive reference model of ZooKeeper's data
//! tree.
//!
//! The model shares only the request and result types with the view. It keeps the tree as a
//! map from path to node, applies every write to a scratch copy and keeps the copy only if
//! every op passed, counts children by scanning every path, and deletes a session's nodes by
//! scanning them all. Random sequences of creates (all four modes), deletes, setData, checks,
//! multis, session grants and expiries, and compactions run against both; after every step the
//! write results and every read of every path (exists, getData, getChildren) must agree, and
//! the store's invariants must hold.

use std::collections::{BTreeMap, BTreeSet};

use proptest::prelude::*;

use super::tree::{exists, get_children, get_data};
use super::*;
use crate::store::{Command, CommandResponse, RevokeReason, Store};

#[derive(Clone, Debug, PartialEq)]
struct MNode {
    data: String,
    version: i64,
    owner: LeaseId,
    czxid: Revision,
    mzxid: Revision,
}

#[derive(Clone, Debug, Default)]
struct Model {
    nodes: BTreeMap<String, MNode>,
    counters: BTreeMap<String, u64>,
    sessions: BTreeSet<LeaseId>,
    next_session: LeaseId,
    revision: Revision,
}

impl Model {
    fn new() -> Self {
        Model { next_session: 1, revision: 1, ..Default::default() }
    }

    fn parent(path: &str) -> String {
        match path.rfind('/') {
            Some(0) => "/".to_string(),
            Some(i) => path[..i].to_string(),
            None => unreachable!(),
        }
    }

    fn children(&self, path: &str) -> Vec<String> {
        self.nodes
            .keys()
            .filter(|p| Self::parent(p) == path)
            .map(|p| p.rsplit('/').next().unwrap().to_string())
            .collect()
    }

    fn exists(&self, path: &str) -> bool {
        path == "/" || self.nodes.contains_key(path)
    }

    fn stat(&self, path: &str) -> Option<Stat> {
        let num_children = self.children(path).len();
        if path == "/" {
            return Some(Stat { czxid: 0, mzxid: 0, version: 0, ephemeral_owner: 0, data_length: 0, num_children });
        }
        self.nodes.get(path).map(|n| Stat {
            czxid: n.czxid,
            mzxid: n.mzxid,
            version: n.version,
            ephemeral_owner: n.owner,
            data_length: n.data.len(),
            num_children,
        })
    }

    fn write(&mut self, session: LeaseId, ops: &[ZkOp]) -> Result<Vec<ZkOpResult>, ZkOpError> {
        if session != 0 && !self.sessions.contains(&session) {
            return Err(ZkOpError { index: 0, error: ZkError::SessionExpired(session) });
        }
        let zxid = self.revision + 1;
        let mut scratch = self.clone();
        let mut written = BTreeSet::new();
        let mut created = Vec::new();
        for (index, op) in ops.iter().enumerate() {
            let fail = |error| Err(ZkOpError { index, error });
            if let Err(error) = op.validate() {
                return fail(error);
            }
            let version_ok = |node: &MNode, version: i64| version == -1 || version == node.version;
            match op {
                ZkOp::Create { path, data, mode } => {
                    if path == "/" {
                        return fail(ZkError::NodeExists(path.clone()));
                    }
                    let ephemeral = matches!(mode, CreateMode::Ephemeral | CreateMode::EphemeralSequential);
                    if ephemeral && session == 0 {
                        return fail(ZkError::BadArguments(String::new()));
                    }
                    let parent = Self::parent(path);
                    if !scratch.exists(&parent) {
                        return fail(ZkError::NoNode(parent));
                    }
                    if scratch.nodes.get(&parent).is_some_and(|p| p.owner != 0) {
                        return fail(ZkError::NoChildrenForEphemerals(parent));
                    }
                    let mut actual = path.clone();
                    if matches!(mode, CreateMode::PersistentSequential | CreateMode::EphemeralSequential) {
                        let counter = scratch.counters.entry(parent).or_insert(0);
                        actual = format!("{path}{:010}", *counter);
                        *counter += 1;
                    }
                    if scratch.exists(&actual) {
                        return fail(ZkError::NodeExists(actual));
                    }
                    if !written.insert(actual.clone()) {
                        return fail(ZkError::BadArguments(String::new()));
                    }
                    let owner = if ephemeral { session } else { 0 };
                    let node = MNode { data: data.clone(), version: 0, owner, czxid: zxid, mzxid: zxid };
                    scratch.nodes.insert(actual.clone(), node);
                    created.push(actual);
                }
                ZkOp::Delete { path, version } => {
                    if path == "/" {
                        return fail(ZkError::BadArguments(String::new()));
                    }
                    let Some(node) = scratch.nodes.get(path) else { return fail(ZkError::NoNode(path.clone())) };
                    if !version_ok(node, *version) {
                        let (expected, actual) = (*version, node.version);
                        return fail(ZkError::BadVersion { path: path.clone(), expected, actual });
                    }
                    if !scratch.children(path).is_empty() {
                        return fail(ZkError::NotEmpty(path.clone()));
                    }
                    if !written.insert(path.clone()) {
                        return fail(ZkError::BadArguments(String::new()));
                    }
                    scratch.nodes.remove(path);
                    scratch.counters.remove(path);
                }
                ZkOp::SetData { path, data, version } => {
                    if path == "/" {
                        return fail(ZkError::BadArguments(String::new()));
                    }
                    let Some(node) = scratch.nodes.get_mut(path) else { return fail(ZkError::NoNode(path.clone())) };
                    if !version_ok(node, *version) {
                        let (expected, actual) = (*version, node.version);
                        return fail(ZkError::BadVersion { path: path.clone(), expected, actual });
                    }
                    node.data = data.clone();
                    node.version += 1;
                    node.mzxid = zxid;
                    if !written.insert(path.clone()) {
                        return fail(ZkError::BadArguments(String::new()));
                    }
                }
                ZkOp::Check { path, version } => {
                    if path == "/" {
                        if *version != -1 && *version != 0 {
                            return fail(ZkError::BadVersion { path: path.clone(), expected: *version, actual: 0 });
                        }
                        continue;
                    }
                    let Some(node) = scratch.nodes.get(path) else { return fail(ZkError::NoNode(path.clone())) };
                    if !version_ok(node, *version) {
                        let (expected, actual) = (*version, node.version);
                        return fail(ZkError::BadVersion { path: path.clone(), expected, actual });
                    }
                }
            }
        }
        if !written.is_empty() {
            scratch.revision = zxid;
        }
        *self = scratch;
        let mut created = created.into_iter();
        Ok(ops
            .iter()
            .map(|op| match op {
                ZkOp::Create { .. } => {
                    let path = created.next().unwrap();
                    let stat = self.stat(&path).unwrap();
                    ZkOpResult::Created { path, stat }
                }
                ZkOp::Delete { .. } => ZkOpResult::Deleted,
                ZkOp::SetData { path, .. } => ZkOpResult::SetData { stat: self.stat(path).unwrap() },
                ZkOp::Check { .. } => ZkOpResult::Checked,
            })
            .collect())
    }

    fn expire(&mut self, session: LeaseId) {
        let before = self.nodes.len();
        self.nodes.retain(|_, node| node.owner != session);
        if self.nodes.len() != before {
            self.revision += 1;
        }
        self.sessions.remove(&session);
    }
}

/// Paths the generator writes and the test reads: a short chain (so that multis hit parents
/// and children together) and every node that exists now (so that sequential nodes get
/// deleted and written too).
fn universe(model: &Model) -> Vec<String> {
    let mut paths: BTreeSet<String> = ["/", "/a", "/a/x", "/a/x/z", "/b"].map(String::from).into();
    paths.extend(model.nodes.keys().cloned());
    paths.into_iter().collect()
}

/// An op with its path given as an index into the paths the model knows right now.
#[derive(Clone, Debug)]
enum Abstract {
    Create { path: usize, mode: u8, data: u8 },
    Delete { path: usize, version: i64 },
    Set { path: usize, version: i64, data: u8 },
    Check { path: usize, version: i64 },
}

#[derive(Clone, Debug)]
enum Step {
    Write { session: usize, ops: Vec<Abstract> },
    Grant,
    Expire { session: usize },
    Compact,
}

fn abstract_op() -> impl Strategy<Value = Abstract> {
    let version = prop_oneof![Just(-1i64), 0..3i64];
    prop_oneof![
        4 => (any::<usize>(), 0..4u8, 0..3u8).prop_map(|(path, mode, data)| Abstract::Create { path, mode, data }),
        2 => (any::<usize>(), version.clone()).prop_map(|(path, version)| Abstract::Delete { path, version }),
        2 => (any::<usize>(), version.clone(), 0..3u8).prop_map(|(path, version, data)| Abstract::Set { path, version, data }),
        1 => (any::<usize>(), version).prop_map(|(path, version)| Abstract::Check { path, version }),
    ]
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        8 => (any::<usize>(), prop::collection::vec(abstract_op(), 1..4)).prop_map(|(session, ops)| Step::Write { session, ops }),
        2 => Just(Step::Grant),
        1 => any::<usize>().prop_map(|session| Step::Expire { session }),
        1 => Just(Step::Compact),
    ]
}

fn concrete(op: &Abstract, paths: &[String]) -> ZkOp {
    let pick = |i: usize| paths[i % paths.len()].clone();
    match *op {
        Abstract::Create { path, mode, data } => {
            let mode = [
                CreateMode::Persistent,
                CreateMode::Ephemeral,
                CreateMode::PersistentSequential,
                CreateMode::EphemeralSequential,
            ][mode as usize];
            let mut path = pick(path);
            if mode.is_sequential() {
                // Both the usual `prefix-` and the bare `parent/` naming.
                path = match data {
                    0 => format!("{}/", if path == "/" { "" } else { &path }),
                    _ => format!("{}/s-", if path == "/" { "" } else { &path }),
                };
            }
            ZkOp::Create { path, data: "d".repeat(data as usize), mode }
        }
        Abstract::Delete { path, version } => ZkOp::Delete { path: pick(path), version },
        Abstract::Set { path, version, data } => {
            ZkOp::SetData { path: pick(path), data: "v".repeat(data as usize), version }
        }
        Abstract::Check { path, version } => ZkOp::Check { path: pick(path), version },
    }
}

/// Errors must agree in kind and in the path they name; the text of BadArguments is ours.
fn same_error(a: &ZkOpError, b: &ZkOpError) -> bool {
    let erase = |e: &ZkError| match e {
        ZkError::BadArguments(_) => ZkError::BadArguments(String::new()),
        other => other.clone(),
    };
    a.index == b.index && erase(&a.error) == erase(&b.error)
}

fn run(steps: &[Step]) -> Result<(), TestCaseError> {
    let mut store = Store::new();
    let mut model = Model::new();
    for step in steps {
        match step {
            Step::Write { session, ops } => {
                let sessions: Vec<LeaseId> =
                    std::iter::once(0).chain(model.sessions.iter().copied()).chain([99]).collect();
                let session = sessions[session % sessions.len()];
                let paths = universe(&model);
                let ops: Vec<ZkOp> = ops.iter().map(|op| concrete(op, &paths)).collect();
                let got = match store.apply(&Command::Zk(ZkWrite { session, ops: ops.clone() })) {
                    CommandResponse::Zk { header, result } => {
                        prop_assert_eq!(header.revision, store.revision());
                        result
                    }
                    other => return Err(TestCaseError::fail(format!("{other:?}"))),
                };
                let want = model.write(session, &ops);
                match (&got, &want) {
                    (Ok(g), Ok(w)) => prop_assert_eq!(g, w, "ops {:?}", ops),
                    (Err(g), Err(w)) => prop_assert!(same_error(g, w), "ops {:?}: got {:?}, want {:?}", ops, g, w),
                    _ => prop_assert!(false, "ops {:?}: got {:?}, want {:?}", ops, got, want),
                }
            }
            Step::Grant => {
                let CommandResponse::LeaseGrant { id, .. } = store.apply(&Command::LeaseGrant { id: 0, ttl_ms: 1000 })
                else {
                    return Err(TestCaseError::fail("grant failed"));
                };
                prop_assert_eq!(id, model.next_session);
                model.sessions.insert(id);
                model.next_session += 1;
            }
            Step::Expire { session } => {
                let Some(&id) = model.sessions.iter().nth(session % model.sessions.len().max(1)) else { continue };
                store.apply(&Command::LeaseRevoke { id, reason: RevokeReason::Expired });
                model.expire(id);
            }
            Step::Compact => {
                if store.revision() > store.compact_revision() {
                    store.apply(&Command::Compact { revision: store.revision() });
                }
            }
        }
        prop_assert_eq!(store.revision(), model.revision);
        store.check_invariants();
        for path in universe(&model) {
            prop_assert_eq!(exists(&store, &path).unwrap(), model.stat(&path), "exists {}", path);
            let data = get_data(&store, &path).ok();
            let want =
                model.stat(&path).map(|stat| (model.nodes.get(&path).map_or(String::new(), |n| n.data.clone()), stat));
            prop_assert_eq!(data, want, "getData {}", path);
            let children = get_children(&store, &path).ok();
            let want = model.exists(&path).then(|| model.children(&path));
            prop_assert_eq!(children, want, "getChildren {}", path);
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

    #[test]
    fn the_view_agrees_with_the_reference_tree(steps in prop::collection::vec(step(), 1..60)) {
        run(&steps)?;
    }
}
