//! Examples of the ZooKeeper view's rules, one rule per test.

use super::tree::{exists, get_children, get_data};
use super::watch::fire_all;
use super::*;
use crate::store::{Command, CommandResponse, RevokeReason, Store};

fn write(store: &mut Store, session: LeaseId, ops: Vec<ZkOp>) -> Result<Vec<ZkOpResult>, ZkOpError> {
    match store.apply(&Command::Zk(ZkWrite { session, ops })) {
        CommandResponse::Zk { result, .. } => result,
        other => panic!("a zk write answers a zk response, got {other:?}"),
    }
}

fn create(path: &str, mode: CreateMode) -> ZkOp {
    ZkOp::Create { path: path.to_string(), data: format!("data of {path}"), mode }
}

fn created_path(result: Result<Vec<ZkOpResult>, ZkOpError>) -> String {
    match result.expect("create succeeds").as_slice() {
        [ZkOpResult::Created { path, .. }] => path.clone(),
        other => panic!("one create result expected, got {other:?}"),
    }
}

fn session(store: &mut Store) -> LeaseId {
    match store.apply(&Command::LeaseGrant { id: 0, ttl_ms: 4000 }) {
        CommandResponse::LeaseGrant { id, .. } => id,
        other => panic!("{other:?}"),
    }
}

fn error(result: Result<Vec<ZkOpResult>, ZkOpError>) -> ZkError {
    result.expect_err("the write is rejected").error
}

#[test]
fn create_then_read_back_with_zookeeper_versions() {
    let mut store = Store::new();
    let path = created_path(write(&mut store, 0, vec![create("/a", CreateMode::Persistent)]));
    assert_eq!(path, "/a");
    let (data, stat) = get_data(&store, "/a").unwrap();
    assert_eq!(data, "data of /a");
    assert_eq!((stat.version, stat.czxid, stat.mzxid, stat.ephemeral_owner), (0, 2, 2, 0));
    write(&mut store, 0, vec![ZkOp::SetData { path: "/a".into(), data: "x".into(), version: 0 }]).unwrap();
    let stat = exists(&store, "/a").unwrap().unwrap();
    assert_eq!((stat.version, stat.czxid, stat.mzxid, stat.data_length), (1, 2, 3, 1));
}

#[test]
fn versions_are_checked_by_set_delete_and_check() {
    let mut store = Store::new();
    write(&mut store, 0, vec![create("/a", CreateMode::Persistent)]).unwrap();
    let stale = ZkOp::SetData { path: "/a".into(), data: "x".into(), version: 3 };
    assert_eq!(
        error(write(&mut store, 0, vec![stale])),
        ZkError::BadVersion { path: "/a".into(), expected: 3, actual: 0 }
    );
    let delete = ZkOp::Delete { path: "/a".into(), version: 1 };
    assert!(matches!(error(write(&mut store, 0, vec![delete])), ZkError::BadVersion { .. }));
    write(&mut store, 0, vec![ZkOp::Delete { path: "/a".into(), version: ANY_VERSION }]).unwrap();
    assert_eq!(exists(&store, "/a").unwrap(), None);
}

#[test]
fn a_child_needs_its_parent_and_a_parent_with_children_stays() {
    let mut store = Store::new();
    assert_eq!(error(write(&mut store, 0, vec![create("/a/b", CreateMode::Persistent)])), ZkError::NoNode("/a".into()));
    write(&mut store, 0, vec![create("/a", CreateMode::Persistent), create("/a/b", CreateMode::Persistent)]).unwrap();
    let delete = ZkOp::Delete { path: "/a".into(), version: ANY_VERSION };
    assert_eq!(error(write(&mut store, 0, vec![delete])), ZkError::NotEmpty("/a".into()));
    assert_eq!(get_children(&store, "/a").unwrap(), vec!["b".to_string()]);
    assert_eq!(get_children(&store, "/").unwrap(), vec!["a".to_string()]);
}

#[test]
fn sequential_names_count_per_parent_and_restart_when_the_parent_is_recreated() {
    let mut store = Store::new();
    write(&mut store, 0, vec![create("/q", CreateMode::Persistent), create("/r", CreateMode::Persistent)]).unwrap();
    let seq = |store: &mut Store, prefix: &str| {
        created_path(write(store, 0, vec![create(prefix, CreateMode::PersistentSequential)]))
    };
    assert_eq!(seq(&mut store, "/q/n-"), "/q/n-0000000000");
    assert_eq!(seq(&mut store, "/q/n-"), "/q/n-0000000001");
    assert_eq!(seq(&mut store, "/r/"), "/r/0000000000", "each parent counts on its own");
    assert_eq!(seq(&mut store, "/q/other-"), "/q/other-0000000002", "one counter per parent, any name");
    for name in ["n-0000000000", "n-0000000001", "other-0000000002"] {
        write(&mut store, 0, vec![ZkOp::Delete { path: format!("/q/{name}"), version: ANY_VERSION }]).unwrap();
    }
    assert_eq!(seq(&mut store, "/q/n-"), "/q/n-0000000003", "deleting children does not reset the counter");
    write(&mut store, 0, vec![ZkOp::Delete { path: "/q/n-0000000003".into(), version: ANY_VERSION }]).unwrap();
    write(&mut store, 0, vec![ZkOp::Delete { path: "/q".into(), version: ANY_VERSION }]).unwrap();
    write(&mut store, 0, vec![create("/q", CreateMode::Persistent)]).unwrap();
    assert_eq!(seq(&mut store, "/q/n-"), "/q/n-0000000000");
    assert_eq!(sequence_of("n-0000000000"), Some(0));
    assert_eq!(sequence_of("lock-c1-0000000042"), Some(42));
    assert_eq!(sequence_of("x"), None);
}

#[test]
fn ephemeral_nodes_belong_to_a_live_session_and_go_with_it() {
    let mut store = Store::new();
    write(&mut store, 0, vec![create("/locks", CreateMode::Persistent)]).unwrap();
    let no_session = write(&mut store, 0, vec![create("/locks/e", CreateMode::Ephemeral)]);
    assert!(matches!(error(no_session), ZkError::BadArguments(_)));
    let s = session(&mut store);
    let path = created_path(write(&mut store, s, vec![create("/locks/lock-", CreateMode::EphemeralSequential)]));
    assert_eq!(exists(&store, &path).unwrap().unwrap().ephemeral_owner, s);
    let child = format!("{path}/child");
    assert_eq!(
        error(write(&mut store, s, vec![create(&child, CreateMode::Persistent)])),
        ZkError::NoChildrenForEphemerals(path.clone())
    );
    // setData keeps the node on its session.
    write(&mut store, s, vec![ZkOp::SetData { path: path.clone(), data: "y".into(), version: 0 }]).unwrap();
    store.apply(&Command::LeaseRevoke { id: s, reason: RevokeReason::Expired });
    assert_eq!(exists(&store, &path).unwrap(), None, "session expiry deletes the ephemeral node");
    assert_eq!(error(write(&mut store, s, vec![create("/x", CreateMode::Persistent)])), ZkError::SessionExpired(s));
}

#[test]
fn a_multi_applies_all_or_nothing_in_one_zxid() {
    let mut store = Store::new();
    write(&mut store, 0, vec![create("/a", CreateMode::Persistent)]).unwrap();
    let before = store.clone();
    let failing = vec![
        create("/b", CreateMode::Persistent),
        ZkOp::SetData { path: "/a".into(), data: "x".into(), version: 0 },
        ZkOp::Check { path: "/a".into(), version: 5 },
    ];
    let rejected = write(&mut store, 0, failing).unwrap_err();
    assert_eq!(rejected.index, 2);
    assert_eq!(store, before, "a rejected multi changes nothing");
    let ok = vec![
        ZkOp::Check { path: "/a".into(), version: 0 },
        create("/b", CreateMode::Persistent),
        create("/b/c", CreateMode::Persistent),
        ZkOp::Delete { path: "/a".into(), version: 0 },
    ];
    let revision = store.revision();
    let results = write(&mut store, 0, ok).unwrap();
    assert_eq!(store.revision(), revision + 1);
    assert_eq!(results[0], ZkOpResult::Checked);
    assert_eq!(results[3], ZkOpResult::Deleted);
    let twice = vec![create("/d", CreateMode::Persistent), ZkOp::Delete { path: "/d".into(), version: 0 }];
    assert!(matches!(error(write(&mut store, 0, twice)), ZkError::BadArguments(_)));
}

#[test]
fn paths_are_validated() {
    for bad in ["a", "/a/", "//a", "/a/./b", "/a/../b"] {
        assert!(validate_path(bad).is_err(), "{bad}");
        assert!(exists(&Store::new(), bad).is_err());
    }
    assert_eq!(parent_of("/a"), "/");
    assert_eq!(parent_of("/a/b"), "/a");
    assert_eq!(name_of("/a/b"), "b");
}

#[test]
fn watches_fire_on_their_own_kind_of_change() {
    let mut store = Store::new();
    let from = store.revision() + 1;
    write(&mut store, 0, vec![create("/a", CreateMode::Persistent)]).unwrap();
    write(&mut store, 0, vec![create("/a/b", CreateMode::Persistent)]).unwrap();
    write(&mut store, 0, vec![ZkOp::SetData { path: "/a/b".into(), data: "x".into(), version: 0 }]).unwrap();
    write(&mut store, 0, vec![ZkOp::SetData { path: "/a".into(), data: "x".into(), version: 0 }]).unwrap();
    write(&mut store, 0, vec![ZkOp::Delete { path: "/a/b".into(), version: ANY_VERSION }]).unwrap();
    write(&mut store, 0, vec![ZkOp::Delete { path: "/a".into(), version: ANY_VERSION }]).unwrap();
    let kinds = |path: &str, kind: WatchKind| -> Vec<(EventType, String)> {
        let events = store.events(&watch::range_of(path, kind), from, false).unwrap();
        fire_all(path, kind, &events).into_iter().map(|e| (e.kind, e.path)).collect()
    };
    use EventType::*;
    assert_eq!(
        kinds("/a", WatchKind::Data),
        vec![(NodeCreated, "/a".into()), (NodeDataChanged, "/a".into()), (NodeDeleted, "/a".into())]
    );
    assert_eq!(
        kinds("/a", WatchKind::Children),
        vec![(NodeChildrenChanged, "/a".into()), (NodeChildrenChanged, "/a".into()), (NodeDeleted, "/a".into())]
    );
    assert_eq!(kinds("/a", WatchKind::PersistentRecursive).len(), 6, "every change under /a");
    assert_eq!(
        kinds("/", WatchKind::Children),
        vec![(NodeChildrenChanged, "/".into()), (NodeChildrenChanged, "/".into())]
    );
    assert_eq!(
        kinds("/a/b", WatchKind::Persistent),
        vec![(NodeCreated, "/a/b".into()), (NodeDataChanged, "/a/b".into()), (NodeDeleted, "/a/b".into())]
    );
}

#[test]
fn a_watch_on_a_sibling_with_a_longer_name_does_not_fire() {
    let mut store = Store::new();
    write(&mut store, 0, vec![create("/a", CreateMode::Persistent)]).unwrap();
    let from = store.revision() + 1;
    write(&mut store, 0, vec![create("/ab", CreateMode::Persistent), create("/ab/c", CreateMode::Persistent)]).unwrap();
    for kind in [WatchKind::Data, WatchKind::Children, WatchKind::Persistent, WatchKind::PersistentRecursive] {
        let events = store.events(&watch::range_of("/a", kind), from, false).unwrap();
        assert_eq!(fire_all("/a", kind, &events), vec![], "{kind:?}");
    }
}
