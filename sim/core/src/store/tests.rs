//! The store's rules, one test per behaviour. Rules come from etcd v3 (rpc.proto, the
//! applier and mvcc packages) unless a test says it is our choice.

use std::collections::{BTreeMap, BTreeSet};

use super::*;

// ---- helpers -------------------------------------------------------------------------

fn kv(key: &str, value: &str, create: Revision, modified: Revision, version: i64) -> KeyValue {
    KeyValue {
        key: key.to_owned(),
        value: value.to_owned(),
        create_revision: create,
        mod_revision: modified,
        version,
        lease: 0,
    }
}

fn leased(kv: KeyValue, lease: LeaseId) -> KeyValue {
    KeyValue { lease, ..kv }
}

fn put_req(key: &str, value: &str) -> PutRequest {
    PutRequest { key: key.to_owned(), value: value.to_owned(), lease: 0, prev_kv: false, ignore_lease: false }
}

fn put_op(key: &str, value: &str) -> TxnOp {
    TxnOp::Put(put_req(key, value))
}

fn delete_req(range: KeyRange) -> DeleteRangeRequest {
    DeleteRangeRequest { range, prev_kv: false }
}

fn delete_op(range: KeyRange) -> TxnOp {
    TxnOp::DeleteRange(delete_req(range))
}

fn range_op(range: KeyRange) -> TxnOp {
    TxnOp::Range(RangeRequest::new(range))
}

fn key(k: &str) -> KeyRange {
    KeyRange::Key(k.to_owned())
}

fn prefix(p: &str) -> KeyRange {
    KeyRange::Prefix(p.to_owned())
}

fn txn(compare: Vec<Compare>, success: Vec<TxnOp>, failure: Vec<TxnOp>) -> TxnRequest {
    TxnRequest { compare, success, failure }
}

fn cmp(key: &str, result: CompareResult, target: CompareTarget) -> Compare {
    Compare { key: key.to_owned(), result, target }
}

fn put(store: &mut Store, key: &str, value: &str) -> PutResponse {
    put_with(store, put_req(key, value))
}

fn put_with(store: &mut Store, req: PutRequest) -> PutResponse {
    match store.apply(&Command::Put(req)) {
        CommandResponse::Put(response) => response,
        other => panic!("put failed: {other:?}"),
    }
}

fn put_leased(store: &mut Store, key: &str, value: &str, lease: LeaseId) -> PutResponse {
    put_with(store, PutRequest { lease, ..put_req(key, value) })
}

fn delete(store: &mut Store, req: DeleteRangeRequest) -> DeleteRangeResponse {
    match store.apply(&Command::DeleteRange(req)) {
        CommandResponse::DeleteRange(response) => response,
        other => panic!("delete failed: {other:?}"),
    }
}

fn apply_txn(store: &mut Store, req: TxnRequest) -> TxnResponse {
    match store.apply(&Command::Txn(req)) {
        CommandResponse::Txn(response) => response,
        other => panic!("txn failed: {other:?}"),
    }
}

fn grant(store: &mut Store, id: LeaseId) -> LeaseId {
    match store.apply(&Command::LeaseGrant { id, ttl_ms: 1000 }) {
        CommandResponse::LeaseGrant { id, .. } => id,
        other => panic!("grant failed: {other:?}"),
    }
}

fn revoke(store: &mut Store, id: LeaseId) -> CommandResponse {
    store.apply(&Command::LeaseRevoke { id, reason: RevokeReason::Client })
}

fn compact(store: &mut Store, revision: Revision) -> CommandResponse {
    store.apply(&Command::Compact { revision })
}

fn read(store: &Store, req: RangeRequest) -> RangeResponse {
    store.range(&req).expect("range succeeds")
}

fn read_at(store: &Store, range: KeyRange, revision: Revision) -> Vec<KeyValue> {
    let req = RangeRequest { revision, ..RangeRequest::new(range) };
    read(store, req).kvs
}

fn get(store: &Store, k: &str) -> Option<KeyValue> {
    read_at(store, key(k), 0).pop()
}

fn keys_of(kvs: &[KeyValue]) -> Vec<&str> {
    kvs.iter().map(|kv| kv.key.as_str()).collect()
}

fn lease_keys(store: &Store, id: LeaseId) -> Vec<&str> {
    let lease = store.lease(id).expect("lease exists");
    lease.keys.iter().map(String::as_str).collect()
}

/// Apply `cmd`, expect `error`, and expect the store unchanged to the byte.
fn check_rejected(store: &mut Store, cmd: Command, error: StoreError) {
    let before = serde_json::to_string(store).unwrap();
    let response = store.apply(&cmd);
    assert_eq!(response, CommandResponse::Error(error), "command {cmd:?}");
    let after = serde_json::to_string(store).unwrap();
    assert_eq!(before, after, "rejected command {cmd:?} changed the store");
}

/// Does `compare` hold on `store`? Asked through a read-only txn, which changes nothing.
fn holds(store: &mut Store, compare: Compare) -> bool {
    let revision = store.revision();
    let response = apply_txn(store, txn(vec![compare], vec![], vec![]));
    assert_eq!(store.revision(), revision);
    response.succeeded
}

fn delete_event(k: &str, revision: Revision, prev_kv: Option<KeyValue>) -> Event {
    Event { kind: EventKind::Delete, kv: kv(k, "", 0, revision, 0), prev_kv }
}

fn put_event(kv: KeyValue, prev_kv: Option<KeyValue>) -> Event {
    Event { kind: EventKind::Put, kv, prev_kv }
}

fn event_summary(events: &[Event]) -> Vec<(EventKind, &str, Revision)> {
    events.iter().map(|e| (e.kind, e.kv.key.as_str(), e.kv.mod_revision)).collect()
}

/// Each key's retained history, as the revisions of its changes.
fn retained(store: &Store) -> BTreeMap<&str, Vec<Revision>> {
    store.kv.histories().map(|(k, h)| (k.as_str(), h.changes.iter().map(|c| c.revision).collect())).collect()
}

// ---- new store -----------------------------------------------------------------------

#[test]
fn new_store_is_empty_at_revision_1_and_never_compacted() {
    let store = Store::new();
    assert_eq!(store.revision(), 1);
    assert_eq!(store.compact_revision(), 0);
    assert!(read_at(&store, prefix(""), 0).is_empty());
    assert_eq!(store.leases().count(), 0);
    assert_eq!(store, Store::default());
    store.check_invariants();
}

// ---- put -----------------------------------------------------------------------------

#[test]
fn put_creates_key_at_next_revision_with_version_1() {
    let mut store = Store::new();
    let response = put(&mut store, "a", "1");
    assert_eq!(response.header.revision, 2);
    assert_eq!(store.revision(), 2);
    assert_eq!(get(&store, "a"), Some(kv("a", "1", 2, 2, 1)));
}

#[test]
fn put_update_keeps_create_revision_and_adds_1_to_version() {
    let mut store = Store::new();
    put(&mut store, "a", "1");
    put(&mut store, "b", "x");
    put(&mut store, "a", "2");
    assert_eq!(get(&store, "a"), Some(kv("a", "2", 2, 4, 2)));
}

#[test]
fn put_returns_prev_kv_only_when_asked() {
    let mut store = Store::new();
    put(&mut store, "a", "1");
    let asked = put_with(&mut store, PutRequest { prev_kv: true, ..put_req("a", "2") });
    assert_eq!(asked.prev_kv, Some(kv("a", "1", 2, 2, 1)));
    assert_eq!(put(&mut store, "a", "3").prev_kv, None);
    let fresh = put_with(&mut store, PutRequest { prev_kv: true, ..put_req("new", "1") });
    assert_eq!(fresh.prev_kv, None);
}

#[test]
fn put_with_unknown_lease_is_rejected_and_changes_nothing() {
    let mut store = Store::new();
    put(&mut store, "a", "1");
    let cmd = Command::Put(PutRequest { lease: 7, ..put_req("a", "2") });
    check_rejected(&mut store, cmd, StoreError::LeaseNotFound(7));
    assert_eq!(store.revision(), 2);
}

#[test]
fn put_with_empty_key_is_rejected() {
    let mut store = Store::new();
    let error = StoreError::InvalidRequest("put with an empty key".to_owned());
    check_rejected(&mut store, Command::Put(put_req("", "v")), error);
}

#[test]
fn put_moves_key_from_one_lease_to_another() {
    let mut store = Store::new();
    grant(&mut store, 1);
    grant(&mut store, 2);
    put_leased(&mut store, "a", "1", 1);
    assert_eq!(lease_keys(&store, 1), ["a"]);
    put_leased(&mut store, "a", "2", 2);
    assert_eq!(lease_keys(&store, 1), Vec::<&str>::new());
    assert_eq!(lease_keys(&store, 2), ["a"]);
    assert_eq!(get(&store, "a"), Some(leased(kv("a", "2", 2, 3, 2), 2)));
}

#[test]
fn put_without_lease_detaches_key_from_its_lease() {
    let mut store = Store::new();
    grant(&mut store, 1);
    put_leased(&mut store, "a", "1", 1);
    put(&mut store, "a", "2");
    assert!(lease_keys(&store, 1).is_empty());
    revoke(&mut store, 1);
    assert_eq!(get(&store, "a"), Some(kv("a", "2", 2, 3, 2)));
}

// ---- delete range --------------------------------------------------------------------

#[test]
fn delete_tombstones_and_a_later_put_starts_a_new_generation() {
    let mut store = Store::new();
    put(&mut store, "a", "1");
    put(&mut store, "a", "2");
    let response = delete(&mut store, delete_req(key("a")));
    assert_eq!((response.header.revision, response.deleted), (4, 1));
    assert_eq!(get(&store, "a"), None);
    put(&mut store, "a", "3");
    assert_eq!(get(&store, "a"), Some(kv("a", "3", 5, 5, 1)));
    assert_eq!(read_at(&store, key("a"), 3), [kv("a", "2", 2, 3, 2)]);
    assert_eq!(read_at(&store, key("a"), 4), []);
}

#[test]
fn delete_matching_nothing_does_not_bump_revision() {
    let mut store = Store::new();
    put(&mut store, "a", "1");
    let response = delete(&mut store, delete_req(key("b")));
    assert_eq!((response.header.revision, response.deleted), (2, 0));
    assert_eq!(store.revision(), 2);
    assert_eq!(store.events(&prefix(""), 3, false), Ok(vec![]));
}

#[test]
fn delete_by_prefix_deletes_every_match_in_one_revision() {
    let mut store = Store::new();
    put(&mut store, "a/1", "x");
    put(&mut store, "a/2", "y");
    put(&mut store, "b/1", "z");
    let response = delete(&mut store, DeleteRangeRequest { range: prefix("a/"), prev_kv: true });
    assert_eq!((response.header.revision, response.deleted), (5, 2));
    let expected_prev = [kv("a/1", "x", 2, 2, 1), kv("a/2", "y", 3, 3, 1)];
    assert_eq!(response.prev_kvs, expected_prev);
    let events = store.events(&prefix(""), 5, false).unwrap();
    assert_eq!(event_summary(&events), [(EventKind::Delete, "a/1", 5), (EventKind::Delete, "a/2", 5)]);
    assert_eq!(keys_of(&read_at(&store, prefix(""), 0)), ["b/1"]);
}

#[test]
fn delete_removes_keys_from_their_lease() {
    let mut store = Store::new();
    grant(&mut store, 1);
    put_leased(&mut store, "a", "1", 1);
    put_leased(&mut store, "b", "1", 1);
    delete(&mut store, delete_req(key("a")));
    assert_eq!(lease_keys(&store, 1), ["b"]);
}

// ---- range ---------------------------------------------------------------------------

#[test]
fn range_selects_by_key_prefix_interval_and_from_key_in_byte_order() {
    let mut store = Store::new();
    for k in ["a", "a/1", "a/2", "b", "b/1", "c", "B", "é"] {
        put(&mut store, k, "v");
    }
    let range = |start: &str, end: &str| KeyRange::Range { start: start.to_owned(), end: end.to_owned() };
    let cases: Vec<(KeyRange, Vec<&str>)> = vec![
        (key("a"), vec!["a"]),
        (key("zz"), vec![]),
        (prefix("a"), vec!["a", "a/1", "a/2"]),
        (prefix("a/"), vec!["a/1", "a/2"]),
        (prefix(""), vec!["B", "a", "a/1", "a/2", "b", "b/1", "c", "é"]),
        (range("a/1", "b/1"), vec!["a/1", "a/2", "b"]),
        (range("A", "a"), vec!["B"]),
        (range("c", "a"), vec![]),
        (range("b", "b"), vec![]),
        (KeyRange::FromKey("b".to_owned()), vec!["b", "b/1", "c", "é"]),
    ];
    for (selector, expected) in cases {
        let got = read_at(&store, selector.clone(), 0);
        assert_eq!(keys_of(&got), expected, "range {selector:?}");
    }
}

#[test]
fn range_at_a_past_revision_returns_the_history_not_the_latest() {
    let mut store = Store::new();
    put(&mut store, "a", "1"); // 2
    put(&mut store, "b", "1"); // 3
    put(&mut store, "a", "2"); // 4
    delete(&mut store, delete_req(key("b"))); // 5
    put(&mut store, "c", "1"); // 6
    let a1 = kv("a", "1", 2, 2, 1);
    let a2 = kv("a", "2", 2, 4, 2);
    let b1 = kv("b", "1", 3, 3, 1);
    let cases: Vec<(Revision, Vec<KeyValue>)> = vec![
        (1, vec![]),
        (2, vec![a1.clone()]),
        (3, vec![a1, b1.clone()]),
        (4, vec![a2.clone(), b1]),
        (5, vec![a2.clone()]),
        (6, vec![a2, kv("c", "1", 6, 6, 1)]),
    ];
    for (revision, expected) in cases {
        let req = RangeRequest { revision, ..RangeRequest::new(prefix("")) };
        let response = read(&store, req);
        assert_eq!(response.kvs, expected, "at revision {revision}");
        assert_eq!(response.header.revision, 6, "header is the current revision");
    }
}

#[test]
fn range_at_a_future_revision_is_rejected() {
    let mut store = Store::new();
    put(&mut store, "a", "1");
    let req = RangeRequest { revision: 3, ..RangeRequest::new(prefix("")) };
    let error = StoreError::FutureRevision { requested: 3, current: 2 };
    assert_eq!(store.range(&req), Err(error));
}

#[test]
fn range_at_a_negative_revision_or_an_empty_key_is_invalid() {
    let store = Store::new();
    let negative = RangeRequest { revision: -1, ..RangeRequest::new(prefix("")) };
    assert!(matches!(store.range(&negative), Err(StoreError::InvalidRequest(_))));
    let empty = RangeRequest::new(key(""));
    assert!(matches!(store.range(&empty), Err(StoreError::InvalidRequest(_))));
}

#[test]
fn range_below_the_compact_revision_is_rejected_but_the_compact_revision_is_readable() {
    let mut store = Store::new();
    put(&mut store, "a", "1"); // 2
    put(&mut store, "a", "2"); // 3
    put(&mut store, "a", "3"); // 4
    compact(&mut store, 3);
    let at = |revision| RangeRequest { revision, ..RangeRequest::new(key("a")) };
    let error = StoreError::Compacted { requested: 2, compact_revision: 3 };
    assert_eq!(store.range(&at(2)), Err(error));
    assert_eq!(read(&store, at(3)).kvs, [kv("a", "2", 2, 3, 2)]);
    assert_eq!(read(&store, at(4)).kvs, [kv("a", "3", 2, 4, 3)]);
}

#[test]
fn range_limit_cuts_kvs_but_count_counts_every_match() {
    let mut store = Store::new();
    for k in ["a", "b", "c"] {
        put(&mut store, k, "v");
    }
    let limited = |limit| RangeRequest { limit, ..RangeRequest::new(prefix("")) };
    let cases = [(1, 1, true), (2, 2, true), (3, 3, false), (4, 3, false), (0, 3, false)];
    for (limit, returned, more) in cases {
        let response = read(&store, limited(limit));
        assert_eq!(response.kvs.len(), returned, "limit {limit}");
        assert_eq!(response.count, 3, "limit {limit}");
        assert_eq!(response.more, more, "limit {limit}");
    }
    assert_eq!(keys_of(&read(&store, limited(2)).kvs), ["a", "b"]);
}

/// Three keys whose fields all sort differently:
/// c: create 2, mod 2, version 1, value "1"; a: create 3, mod 5, version 2, value "3";
/// b: create 4, mod 4, version 1, value "2".
fn sortable_store() -> Store {
    let mut store = Store::new();
    put(&mut store, "c", "1");
    put(&mut store, "a", "3");
    put(&mut store, "b", "2");
    put(&mut store, "a", "3");
    store
}

#[test]
fn range_sorts_by_target_and_order_with_key_as_tie_break() {
    use SortOrder::{Ascend, Descend};
    let store = sortable_store();
    let cases = [
        (SortTarget::Key, Ascend, ["a", "b", "c"]),
        (SortTarget::Key, Descend, ["c", "b", "a"]),
        (SortTarget::Version, Ascend, ["b", "c", "a"]),
        (SortTarget::Version, Descend, ["a", "c", "b"]),
        (SortTarget::CreateRevision, Ascend, ["c", "a", "b"]),
        (SortTarget::ModRevision, Descend, ["a", "b", "c"]),
        (SortTarget::Value, Ascend, ["c", "b", "a"]),
    ];
    for (target, order, expected) in cases {
        let req = RangeRequest { sort: Some((target, order)), ..RangeRequest::new(prefix("")) };
        let response = read(&store, req);
        assert_eq!(keys_of(&response.kvs), expected, "{target:?} {order:?}");
    }
}

#[test]
fn range_limit_applies_after_sorting() {
    let store = sortable_store();
    let req = RangeRequest {
        sort: Some((SortTarget::ModRevision, SortOrder::Descend)),
        limit: 1,
        ..RangeRequest::new(prefix(""))
    };
    let response = read(&store, req);
    assert_eq!(keys_of(&response.kvs), ["a"]);
    assert_eq!((response.count, response.more), (3, true));
}

#[test]
fn range_filters_by_create_revision_but_counts_the_whole_range_as_etcd_does() {
    let store = sortable_store();
    let filtered =
        |min, max| RangeRequest { min_create_revision: min, max_create_revision: max, ..RangeRequest::new(prefix("")) };
    let everything = read(&store, filtered(0, 0)).count;
    let cases = [(3, 0, vec!["a", "b"]), (0, 3, vec!["a", "c"]), (3, 3, vec!["a"]), (5, 0, vec![])];
    for (min, max, expected) in cases {
        let response = read(&store, filtered(min, max));
        assert_eq!(keys_of(&response.kvs), expected, "min {min} max {max}");
        // etcd's apply.go takes the count from the store's range, then prunes by revision.
        assert_eq!(response.count, everything, "min {min} max {max}");
        assert!(!response.more, "nothing was cut by a limit");
    }
    let limited = RangeRequest { limit: 1, ..filtered(3, 0) };
    let response = read(&store, limited);
    assert_eq!((keys_of(&response.kvs).len(), response.count, response.more), (1, everything, true));
}

#[test]
fn range_keys_only_empties_values_and_count_only_returns_no_kvs() {
    let store = sortable_store();
    let keys_only = RangeRequest { keys_only: true, ..RangeRequest::new(key("a")) };
    assert_eq!(read(&store, keys_only).kvs, [kv("a", "", 3, 5, 2)]);
    let count_only = RangeRequest { count_only: true, limit: 1, ..RangeRequest::new(prefix("")) };
    let response = read(&store, count_only);
    assert_eq!(response.kvs, []);
    assert_eq!((response.count, response.more), (3, false));
}

// ---- txn -----------------------------------------------------------------------------

#[test]
fn txn_compares_read_a_missing_key_as_zero_and_value_compares_on_it_are_false() {
    use CompareResult::*;
    use CompareTarget::*;
    let mut store = Store::new();
    let cases = [
        (Equal, Version(0), true),
        (Equal, CreateRevision(0), true),
        (Equal, ModRevision(0), true),
        (Equal, Lease(0), true),
        (Greater, Version(-1), true),
        (Equal, Value(String::new()), false),
        (NotEqual, Value(String::new()), false),
        (Greater, Value(String::new()), false),
        (Less, Value("z".to_owned()), false),
    ];
    for (result, target, expected) in cases {
        let compare = cmp("missing", result, target);
        assert_eq!(holds(&mut store, compare.clone()), expected, "{compare:?}");
    }
}

#[test]
fn txn_compare_results_order_the_key_field_against_the_target() {
    use CompareResult::*;
    use CompareTarget::*;
    let mut store = Store::new();
    grant(&mut store, 5);
    put_leased(&mut store, "a", "m", 5); // create 2, mod 2, version 1
    put(&mut store, "x", "1");
    put_leased(&mut store, "a", "m", 5); // mod 4, version 2
    let cases = [
        (Greater, Value("l".to_owned()), true),
        (Less, Value("n".to_owned()), true),
        (Equal, Value("m".to_owned()), true),
        (NotEqual, Value("m".to_owned()), false),
        (Equal, Version(2), true),
        (Greater, Version(2), false),
        (Less, Version(3), true),
        (Equal, CreateRevision(2), true),
        (NotEqual, CreateRevision(2), false),
        (Equal, ModRevision(4), true),
        (Less, ModRevision(4), false),
        (Greater, ModRevision(3), true),
        (Equal, Lease(5), true),
        (Less, Lease(5), false),
    ];
    for (result, target, expected) in cases {
        let compare = cmp("a", result, target);
        assert_eq!(holds(&mut store, compare.clone()), expected, "{compare:?}");
    }
}

#[test]
fn txn_runs_success_when_every_compare_holds_and_failure_otherwise() {
    use CompareResult::Equal;
    let mut store = Store::new();
    put(&mut store, "a", "1");
    let guarded = |version| {
        txn(
            vec![
                cmp("a", Equal, CompareTarget::Value("1".to_owned())),
                cmp("a", Equal, CompareTarget::Version(version)),
            ],
            vec![put_op("b", "yes")],
            vec![put_op("b", "no")],
        )
    };
    assert!(apply_txn(&mut store, guarded(1)).succeeded);
    assert_eq!(get(&store, "b").unwrap().value, "yes");
    assert!(!apply_txn(&mut store, guarded(2)).succeeded);
    assert_eq!(get(&store, "b").unwrap().value, "no");
}

#[test]
fn txn_writes_share_one_revision_in_application_order() {
    let mut store = Store::new();
    put(&mut store, "x", "1"); // 2
    let ops = vec![put_op("b", "1"), put_op("a", "1"), delete_op(key("x"))];
    let response = apply_txn(&mut store, txn(vec![], ops, vec![]));
    assert_eq!(response.header.revision, 3);
    assert_eq!(store.revision(), 3);
    let headers: Vec<Revision> = response
        .responses
        .iter()
        .map(|r| match r {
            TxnOpResponse::Put(r) => r.header.revision,
            TxnOpResponse::DeleteRange(r) => r.header.revision,
            other => panic!("unexpected {other:?}"),
        })
        .collect();
    assert_eq!(headers, [3, 3, 3]);
    let events = store.events(&prefix(""), 3, false).unwrap();
    let expected = [(EventKind::Put, "b", 3), (EventKind::Put, "a", 3), (EventKind::Delete, "x", 3)];
    assert_eq!(event_summary(&events), expected);
}

#[test]
fn txn_that_only_reads_does_not_bump_the_revision() {
    let mut store = Store::new();
    put(&mut store, "a", "1");
    let reads = txn(vec![], vec![range_op(prefix(""))], vec![]);
    assert_eq!(apply_txn(&mut store, reads).header.revision, 2);
    let empty = txn(vec![], vec![], vec![]);
    assert_eq!(apply_txn(&mut store, empty).header.revision, 2);
    let deletes_nothing = txn(vec![], vec![delete_op(key("zz"))], vec![]);
    assert_eq!(apply_txn(&mut store, deletes_nothing).header.revision, 2);
    assert_eq!(store.revision(), 2);
}

/// Our choice, as etcd's write transaction does it: a range at revision 0 inside a txn sees
/// the txn's earlier writes; its header is the revision visible at that point.
#[test]
fn txn_range_sees_the_earlier_writes_of_the_same_txn() {
    let mut store = Store::new();
    put(&mut store, "a", "1"); // 2
    put(&mut store, "b", "1"); // 3
    let ops = vec![range_op(key("a")), put_op("a", "2"), range_op(key("a")), delete_op(key("b")), range_op(prefix(""))];
    let response = apply_txn(&mut store, txn(vec![], ops, vec![]));
    let ranges: Vec<(Revision, Vec<KeyValue>)> = response
        .responses
        .into_iter()
        .filter_map(|r| match r {
            TxnOpResponse::Range(r) => Some((r.header.revision, r.kvs)),
            _ => None,
        })
        .collect();
    let a2 = kv("a", "2", 2, 4, 2);
    let expected = vec![(3, vec![kv("a", "1", 2, 2, 1)]), (4, vec![a2.clone()]), (4, vec![a2])];
    assert_eq!(ranges, expected);
}

#[test]
fn txn_range_at_an_explicit_revision_reads_committed_history_only() {
    let mut store = Store::new();
    put(&mut store, "a", "1"); // 2
    let at = |revision| TxnOp::Range(RangeRequest { revision, ..RangeRequest::new(key("a")) });
    let response = apply_txn(&mut store, txn(vec![], vec![put_op("a", "2"), at(2)], vec![]));
    let TxnOpResponse::Range(range) = &response.responses[1] else {
        panic!("expected a range response");
    };
    assert_eq!(range.kvs, [kv("a", "1", 2, 2, 1)]);
    // Revision 4 is the one this txn would create: still the future when it is checked.
    let future = Command::Txn(txn(vec![], vec![put_op("a", "3"), at(4)], vec![]));
    let error = StoreError::FutureRevision { requested: 4, current: 3 };
    check_rejected(&mut store, future, error);
}

#[test]
fn txn_two_puts_to_same_key_is_rejected() {
    let mut store = Store::new();
    put(&mut store, "a", "0");
    let cmd = Command::Txn(txn(vec![], vec![put_op("a", "1"), put_op("a", "2")], vec![]));
    check_rejected(&mut store, cmd, StoreError::DuplicateKey("a".to_owned()));
}

#[test]
fn txn_put_and_delete_of_the_same_key_is_rejected_in_either_order() {
    let mut store = Store::new();
    let orders = [vec![delete_op(prefix("a")), put_op("a/1", "x")], vec![put_op("a/1", "x"), delete_op(prefix("a"))]];
    for ops in orders {
        let cmd = Command::Txn(txn(vec![], ops, vec![]));
        check_rejected(&mut store, cmd, StoreError::DuplicateKey("a/1".to_owned()));
    }
}

#[test]
fn txn_duplicate_error_names_the_smallest_key_written_twice() {
    let mut store = Store::new();
    let ops = vec![put_op("b", "1"), put_op("a", "1"), put_op("b", "2"), put_op("a", "2")];
    let cmd = Command::Txn(txn(vec![], ops, vec![]));
    check_rejected(&mut store, cmd, StoreError::DuplicateKey("a".to_owned()));
}

/// etcd `checkIntervals` lets deletes overlap: the second finds the key already gone.
#[test]
fn txn_two_deletes_of_the_same_key_are_allowed() {
    let mut store = Store::new();
    put(&mut store, "a", "1");
    let ops = vec![delete_op(key("a")), delete_op(prefix(""))];
    let response = apply_txn(&mut store, txn(vec![], ops, vec![]));
    let deleted: Vec<usize> = response
        .responses
        .iter()
        .map(|r| match r {
            TxnOpResponse::DeleteRange(r) => r.deleted,
            other => panic!("unexpected {other:?}"),
        })
        .collect();
    assert_eq!(deleted, [1, 0]);
    assert_eq!(response.header.revision, 3);
}

#[test]
fn txn_duplicate_in_the_branch_not_taken_is_still_rejected() {
    let mut store = Store::new();
    let never = cmp("a", CompareResult::Equal, CompareTarget::Version(7));
    let failure = vec![put_op("ok", "1")];
    let success = vec![put_op("a", "1"), put_op("a", "2")];
    let cmd = Command::Txn(txn(vec![never], success, failure));
    check_rejected(&mut store, cmd, StoreError::DuplicateKey("a".to_owned()));
}

#[test]
fn txn_the_two_branches_of_a_nested_txn_may_write_the_same_key_but_not_its_siblings() {
    let mut store = Store::new();
    let inner = || TxnOp::Txn(txn(vec![], vec![put_op("a", "then")], vec![put_op("a", "else")]));
    let response = apply_txn(&mut store, txn(vec![], vec![inner()], vec![]));
    assert_eq!(response.header.revision, 2);
    assert_eq!(get(&store, "a").unwrap().value, "then");
    for ops in [vec![put_op("a", "outer"), inner()], vec![inner(), delete_op(prefix(""))]] {
        let cmd = Command::Txn(txn(vec![], ops, vec![]));
        check_rejected(&mut store, cmd, StoreError::DuplicateKey("a".to_owned()));
    }
}

/// etcd `compareToPath`: every compare, nested ones included, is evaluated before the
/// first op runs, so a nested compare does not see the outer txn's earlier writes.
#[test]
fn txn_nested_compares_see_the_state_before_the_txn() {
    let mut store = Store::new();
    let absent = cmp("a", CompareResult::Equal, CompareTarget::Version(0));
    let nested = TxnOp::Txn(txn(vec![absent], vec![put_op("b", "before")], vec![put_op("b", "after")]));
    let response = apply_txn(&mut store, txn(vec![], vec![put_op("a", "1"), nested], vec![]));
    let TxnOpResponse::Txn(inner) = &response.responses[1] else {
        panic!("expected a nested txn response");
    };
    assert!(inner.succeeded);
    assert_eq!(inner.header.revision, 2);
    assert_eq!(get(&store, "b").unwrap().value, "before");
}

#[test]
fn txn_put_with_unknown_lease_on_the_taken_branch_is_rejected_and_changes_nothing() {
    let mut store = Store::new();
    let bad = PutRequest { lease: 9, ..put_req("b", "1") };
    let cmd = Command::Txn(txn(vec![], vec![put_op("a", "1"), TxnOp::Put(bad.clone())], vec![]));
    check_rejected(&mut store, cmd, StoreError::LeaseNotFound(9));
    // On the branch not taken the lease is never looked at (etcd checks the path only).
    let never = cmp("a", CompareResult::Equal, CompareTarget::Version(7));
    let response = apply_txn(&mut store, txn(vec![never], vec![TxnOp::Put(bad)], vec![put_op("a", "1")]));
    assert!(!response.succeeded);
}

#[test]
fn txn_with_too_many_ops_or_too_deep_nesting_is_rejected() {
    let mut store = Store::new();
    let many = vec![range_op(prefix("")); txn_check::TXN_OPS_MAX + 1];
    let cmd = Command::Txn(txn(vec![], many, vec![]));
    let response = store.apply(&cmd);
    assert!(matches!(response, CommandResponse::Error(StoreError::InvalidRequest(_))));
    let mut deep = txn(vec![], vec![put_op("a", "1")], vec![]);
    for _ in 0..txn_check::TXN_DEPTH_MAX {
        deep = txn(vec![], vec![TxnOp::Txn(deep)], vec![]);
    }
    let response = store.apply(&Command::Txn(deep));
    assert!(matches!(response, CommandResponse::Error(StoreError::InvalidRequest(_))));
    assert_eq!(store.revision(), 1);
}

// ---- compaction ----------------------------------------------------------------------

#[test]
fn compact_to_a_future_revision_is_rejected() {
    let mut store = Store::new();
    put(&mut store, "a", "1");
    let error = StoreError::FutureRevision { requested: 3, current: 2 };
    check_rejected(&mut store, Command::Compact { revision: 3 }, error);
}

#[test]
fn compact_at_or_below_the_compact_revision_is_rejected() {
    let mut store = Store::new();
    let never = StoreError::Compacted { requested: 0, compact_revision: 0 };
    check_rejected(&mut store, Command::Compact { revision: 0 }, never);
    put(&mut store, "a", "1");
    put(&mut store, "a", "2");
    let response = compact(&mut store, 3);
    let header = ResponseHeader { revision: 3 };
    assert_eq!(response, CommandResponse::Compact { header });
    for revision in [3, 2] {
        let error = StoreError::Compacted { requested: revision, compact_revision: 3 };
        check_rejected(&mut store, Command::Compact { revision }, error);
    }
}

#[test]
fn compact_drops_history_below_the_revision_but_keeps_what_reads_and_watches_need() {
    let mut store = Store::new();
    put(&mut store, "a", "1"); // 2
    put(&mut store, "b", "1"); // 3
    put(&mut store, "a", "2"); // 4
    delete(&mut store, delete_req(key("b"))); // 5
    put(&mut store, "c", "1"); // 6
    compact(&mut store, 5);
    // a: only its state at 5. b: its tombstone at 5 (a watch from 5 must see it) and the put
    // before it (that event's prev_kv). c: untouched.
    let expected = BTreeMap::from([("a", vec![4]), ("b", vec![3, 5]), ("c", vec![6])]);
    assert_eq!(retained(&store), expected);
    let a2 = kv("a", "2", 2, 4, 2);
    assert_eq!(read_at(&store, prefix(""), 5), vec![a2.clone()]);
    compact(&mut store, 6);
    assert_eq!(retained(&store), BTreeMap::from([("a", vec![4]), ("c", vec![6])]));
    assert_eq!(read_at(&store, prefix(""), 6), [a2, kv("c", "1", 6, 6, 1)]);
}

// ---- leases --------------------------------------------------------------------------

#[test]
fn lease_grant_with_zero_ttl_is_rejected() {
    let mut store = Store::new();
    let cmd = Command::LeaseGrant { id: 0, ttl_ms: 0 };
    check_rejected(&mut store, cmd, StoreError::InvalidTtl);
}

#[test]
fn lease_grant_of_an_existing_id_is_rejected() {
    let mut store = Store::new();
    grant(&mut store, 4);
    let cmd = Command::LeaseGrant { id: 4, ttl_ms: 5 };
    check_rejected(&mut store, cmd, StoreError::LeaseExists(4));
}

#[test]
fn lease_grant_picks_ids_counting_from_1_skipping_used_ones_and_never_reusing() {
    let mut store = Store::new();
    assert_eq!(grant(&mut store, 2), 2);
    assert_eq!(grant(&mut store, 0), 1);
    assert_eq!(grant(&mut store, 0), 3);
    revoke(&mut store, 1);
    assert_eq!(grant(&mut store, 0), 4);
    let ids: Vec<LeaseId> = store.leases().map(|l| l.id).collect();
    assert_eq!(ids, [2, 3, 4]);
}

#[test]
fn lease_grant_does_not_bump_the_revision() {
    let mut store = Store::new();
    let response = store.apply(&Command::LeaseGrant { id: 0, ttl_ms: 250 });
    let header = ResponseHeader { revision: 1 };
    let expected = CommandResponse::LeaseGrant { header, id: 1, ttl_ms: 250 };
    assert_eq!(response, expected);
    assert_eq!(store.revision(), 1);
    let lease = store.lease(1).unwrap();
    assert_eq!((lease.ttl_ms, lease.keys.len()), (250, 0));
}

#[test]
fn lease_revoke_deletes_all_its_keys_in_one_revision() {
    let mut store = Store::new();
    grant(&mut store, 1);
    put_leased(&mut store, "b", "1", 1); // 2
    put_leased(&mut store, "a", "1", 1); // 3
    put(&mut store, "c", "1"); // 4
    let response = revoke(&mut store, 1);
    let header = ResponseHeader { revision: 5 };
    assert_eq!(response, CommandResponse::LeaseRevoke { header });
    assert_eq!(keys_of(&read_at(&store, prefix(""), 0)), ["c"]);
    assert!(store.lease(1).is_none());
    let events = store.events(&prefix(""), 5, true).unwrap();
    let expected = vec![
        delete_event("a", 5, Some(leased(kv("a", "1", 3, 3, 1), 1))),
        delete_event("b", 5, Some(leased(kv("b", "1", 2, 2, 1), 1))),
    ];
    assert_eq!(events, expected);
}

#[test]
fn lease_revoke_without_keys_does_not_bump_the_revision() {
    let mut store = Store::new();
    grant(&mut store, 1);
    let header = ResponseHeader { revision: 1 };
    assert_eq!(revoke(&mut store, 1), CommandResponse::LeaseRevoke { header });
    assert_eq!(store.revision(), 1);
    assert!(store.lease(1).is_none());
}

#[test]
fn lease_revoke_of_an_unknown_lease_is_rejected() {
    let mut store = Store::new();
    let cmd = Command::LeaseRevoke { id: 3, reason: RevokeReason::Expired };
    check_rejected(&mut store, cmd, StoreError::LeaseNotFound(3));
}

#[test]
fn lease_expiry_changes_the_state_exactly_as_a_client_revoke() {
    let mut stores = [RevokeReason::Client, RevokeReason::Expired].map(|reason| {
        let mut store = Store::new();
        grant(&mut store, 1);
        put_leased(&mut store, "a", "1", 1);
        let response = store.apply(&Command::LeaseRevoke { id: 1, reason });
        (store, response)
    });
    let (expired, _) = stores[1].clone();
    let (client, _) = &mut stores[0];
    assert_eq!(*client, expired);
    assert_eq!(stores[0].1, stores[1].1);
}

// ---- events --------------------------------------------------------------------------

#[test]
fn events_carry_put_and_delete_key_values_like_an_etcd_watch() {
    let mut store = Store::new();
    put(&mut store, "a", "1"); // 2
    put(&mut store, "a", "2"); // 3
    delete(&mut store, delete_req(key("a"))); // 4
    let a1 = kv("a", "1", 2, 2, 1);
    let a2 = kv("a", "2", 2, 3, 2);
    let with_prev = vec![
        put_event(a1.clone(), None),
        put_event(a2.clone(), Some(a1.clone())),
        delete_event("a", 4, Some(a2.clone())),
    ];
    assert_eq!(store.events(&key("a"), 2, true), Ok(with_prev));
    let without = vec![put_event(a1, None), put_event(a2, None), delete_event("a", 4, None)];
    assert_eq!(store.events(&key("a"), 2, false), Ok(without));
}

#[test]
fn events_are_in_revision_order_across_keys_and_only_for_the_watched_range() {
    let mut store = Store::new();
    put(&mut store, "b", "1"); // 2
    put(&mut store, "x", "1"); // 3
    put(&mut store, "a", "1"); // 4
    put(&mut store, "b", "2"); // 5
    let events = store.events(&KeyRange::FromKey("a".into()), 3, false).unwrap();
    let expected = [(EventKind::Put, "x", 3), (EventKind::Put, "a", 4), (EventKind::Put, "b", 5)];
    assert_eq!(event_summary(&events), expected);
    let events = store.events(&KeyRange::Prefix("b".into()), 2, false).unwrap();
    assert_eq!(event_summary(&events), [(EventKind::Put, "b", 2), (EventKind::Put, "b", 5)]);
}

#[test]
fn events_from_zero_or_a_future_revision_are_empty() {
    let mut store = Store::new();
    put(&mut store, "a", "1");
    assert_eq!(store.events(&prefix(""), 0, false), Ok(vec![]));
    assert_eq!(store.events(&prefix(""), 3, false), Ok(vec![]));
    assert_eq!(store.events(&prefix(""), 2, false).unwrap().len(), 1);
}

#[test]
fn events_from_below_the_compact_revision_are_rejected() {
    let mut store = Store::new();
    put(&mut store, "a", "1");
    put(&mut store, "a", "2");
    compact(&mut store, 3);
    let error = StoreError::Compacted { requested: 2, compact_revision: 3 };
    assert_eq!(store.events(&prefix(""), 2, false), Err(error));
    assert_eq!(store.events(&prefix(""), 3, false).unwrap().len(), 1);
}

/// The "skip a watch event at the compaction boundary" bug: etcd once lost a delete at
/// exactly the compact revision. Here a watch from the compact revision sees it, with the
/// deleted value as prev_kv.
#[test]
fn events_from_the_compact_revision_include_a_delete_at_that_revision() {
    let mut store = Store::new();
    put(&mut store, "a", "1"); // 2
    put(&mut store, "b", "1"); // 3
    delete(&mut store, delete_req(key("a"))); // 4
    compact(&mut store, 4);
    let events = store.events(&prefix(""), 4, true).unwrap();
    assert_eq!(events, [delete_event("a", 4, Some(kv("a", "1", 2, 2, 1)))]);
}

// ---- rejection leaves no trace -------------------------------------------------------

#[test]
fn rejected_requests_leave_the_store_unchanged_to_the_byte() {
    let mut store = Store::new();
    grant(&mut store, 1);
    put_leased(&mut store, "a", "1", 1);
    put(&mut store, "b", "1");
    put(&mut store, "b", "2");
    compact(&mut store, 3);
    let on_a = |lease| TxnOp::Put(PutRequest { lease, ..put_req("a", "x") });
    let old_read = TxnOp::Range(RangeRequest { revision: 2, ..RangeRequest::new(prefix("")) });
    let cases = vec![
        (Command::Put(PutRequest { lease: 2, ..put_req("a", "x") }), StoreError::LeaseNotFound(2)),
        (
            Command::Txn(txn(vec![], vec![delete_op(key("b")), on_a(1), on_a(0)], vec![])),
            StoreError::DuplicateKey("a".into()),
        ),
        (Command::Txn(txn(vec![], vec![delete_op(key("b")), on_a(7)], vec![])), StoreError::LeaseNotFound(7)),
        (
            Command::Txn(txn(vec![], vec![delete_op(key("b")), old_read], vec![])),
            StoreError::Compacted { requested: 2, compact_revision: 3 },
        ),
        (Command::LeaseGrant { id: 1, ttl_ms: 9 }, StoreError::LeaseExists(1)),
        (Command::LeaseGrant { id: 0, ttl_ms: 0 }, StoreError::InvalidTtl),
        (Command::LeaseRevoke { id: 2, reason: RevokeReason::Client }, StoreError::LeaseNotFound(2)),
        (Command::Compact { revision: 2 }, StoreError::Compacted { requested: 2, compact_revision: 3 }),
        (Command::Compact { revision: 5 }, StoreError::FutureRevision { requested: 5, current: 4 }),
    ];
    for (cmd, error) in cases {
        check_rejected(&mut store, cmd, error);
    }
}

#[test]
fn store_round_trips_through_json() {
    let mut store = Store::new();
    grant(&mut store, 3);
    put_leased(&mut store, "a", "1", 3);
    put(&mut store, "b", "1");
    delete(&mut store, delete_req(key("b")));
    compact(&mut store, 3);
    let json = serde_json::to_string(&store).unwrap();
    let back: Store = serde_json::from_str(&json).unwrap();
    assert_eq!(back, store);
}

// ---- invariants catch corruption -----------------------------------------------------

#[test]
#[should_panic(expected = "is attached to lease 1, which does not list it")]
fn invariants_catch_a_key_its_lease_does_not_list() {
    let mut store = Store::new();
    grant(&mut store, 1);
    put_leased(&mut store, "a", "1", 1);
    store.leases.move_key("a", 1, 0);
    store.check_invariants();
}

#[test]
#[should_panic(expected = "lease 1 lists key \"ghost\", which is not live")]
fn invariants_catch_a_lease_listing_a_dead_key() {
    let mut store = Store::new();
    grant(&mut store, 1);
    store.leases.move_key("ghost", 0, 1);
    store.check_invariants();
}

#[test]
#[should_panic(expected = "after the current revision")]
fn invariants_catch_a_change_beyond_the_current_revision() {
    let mut store = Store::new();
    put(&mut store, "a", "1");
    let change = mvcc::Change { revision: 3, kv: Some(kv("a", "2", 2, 3, 2)) };
    store.kv.record("a", change);
    store.check_invariants();
}

#[test]
#[should_panic(expected = "did not add exactly 1 to the version")]
fn invariants_catch_a_version_gap() {
    let mut store = Store::new();
    put(&mut store, "a", "1"); // 2
    put(&mut store, "b", "1"); // 3
    // A second change to "a" in revision 3, with its version off by 3.
    let change = mvcc::Change { revision: 3, kv: Some(kv("a", "2", 2, 3, 5)) };
    store.kv.record("a", change);
    store.check_invariants();
}

#[test]
#[should_panic(expected = "revision 3 has no changes left")]
fn invariants_catch_a_lost_revision() {
    let mut store = Store::new();
    put(&mut store, "a", "1"); // 2
    put(&mut store, "b", "1"); // 3
    let mut json: serde_json::Value = serde_json::to_value(&store).unwrap();
    json["kv"]["keys"].as_object_mut().unwrap().remove("b");
    let log = json["kv"]["log"].as_array_mut().unwrap();
    log.retain(|logged| logged["key"] != "b");
    let corrupt: Store = serde_json::from_value(json).unwrap();
    corrupt.check_invariants();
}

#[test]
fn lease_key_sets_are_in_key_order() {
    let mut store = Store::new();
    grant(&mut store, 1);
    for k in ["c", "a", "b"] {
        put_leased(&mut store, k, "v", 1);
    }
    let keys: BTreeSet<String> = ["a", "b", "c"].map(String::from).into();
    assert_eq!(store.lease(1).unwrap().keys, keys);
    assert_eq!(lease_keys(&store, 1), ["a", "b", "c"]);
}

#[test]
fn put_with_ignore_lease_keeps_the_keys_lease_and_needs_the_key() {
    let mut store = Store::new();
    let CommandResponse::LeaseGrant { id, .. } = store.apply(&Command::LeaseGrant { id: 0, ttl_ms: 5000 }) else {
        panic!("grant")
    };
    let put = |key: &str, lease, ignore_lease| {
        Command::Put(PutRequest { key: key.into(), value: "v".into(), lease, prev_kv: false, ignore_lease })
    };
    assert!(matches!(store.apply(&put("/k", id, false)), CommandResponse::Put(_)));
    assert!(matches!(store.apply(&put("/k", 0, true)), CommandResponse::Put(_)));
    let kv = store.range(&RangeRequest::new(KeyRange::Key("/k".into()))).unwrap().kvs.remove(0);
    assert_eq!((kv.lease, kv.version), (id, 2), "the update kept the lease");
    assert_eq!(
        store.apply(&put("/missing", 0, true)),
        CommandResponse::Error(StoreError::KeyNotFound("/missing".into()))
    );
    assert!(matches!(store.apply(&put("/k", id, true)), CommandResponse::Error(StoreError::InvalidRequest(_))));
    store.apply(&Command::LeaseRevoke { id, reason: RevokeReason::Client });
    assert!(store.range(&RangeRequest::new(KeyRange::Key("/k".into()))).unwrap().kvs.is_empty(), "gone with its lease");
}
