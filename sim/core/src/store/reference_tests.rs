//! Differential test: the store against a deliberately naive reference model.
//!
//! The model shares nothing with the store but the request and response types. It keeps a
//! full copy of the key space for every revision and the ordered list of changes each
//! revision made; it runs every write on a scratch copy and throws the copy away on error;
//! it finds duplicate writes in a transaction by enumerating every execution path; it
//! derives lease key sets from the key space. Cost is no concern: key space and histories
//! are tiny.
//!
//! Random command sequences over 4 keys under 2 prefixes run against both; after every
//! command the responses, every read at every revision, a random read, every watch from
//! every revision, a random watch and the lease table must agree, and the store's
//! invariants must hold. A rejected command must leave the store unchanged.

use std::collections::{BTreeMap, BTreeSet};

use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestRng, TestRunner};

use super::*;

type Map = BTreeMap<String, KeyValue>;

// ---- the reference model -------------------------------------------------------------

#[derive(Clone, Debug)]
struct Model {
    /// `states[r]` is the whole key space at revision `r`; `states[0]` is a placeholder.
    states: Vec<Map>,
    /// `changes[r]`: what revision `r` changed, in order; `None` = deleted.
    changes: Vec<Vec<(String, Option<KeyValue>)>>,
    compact: Revision,
    /// Lease ID → TTL. Key sets are derived from the current key space.
    leases: BTreeMap<LeaseId, u64>,
    next_lease: LeaseId,
}

impl Model {
    fn new() -> Self {
        Model {
            states: vec![Map::new(), Map::new()],
            changes: vec![Vec::new(), Vec::new()],
            compact: 0,
            leases: BTreeMap::new(),
            next_lease: 1,
        }
    }

    fn revision(&self) -> Revision {
        (self.states.len() - 1) as Revision
    }

    fn current(&self) -> &Map {
        self.states.last().unwrap()
    }

    fn header(&self) -> ResponseHeader {
        ResponseHeader { revision: self.revision() }
    }

    fn apply(&mut self, cmd: &Command) -> CommandResponse {
        let result = match cmd {
            Command::Put(req) => self.write(|s| s.put(req)).map(CommandResponse::Put),
            Command::DeleteRange(req) => self.write(|s| Ok(s.delete(req))).map(CommandResponse::DeleteRange),
            Command::Txn(req) => match duplicate_write(req) {
                Some(key) => Err(StoreError::DuplicateKey(key)),
                None => {
                    let before = self.current().clone();
                    self.write(|s| s.txn(req, &before)).map(CommandResponse::Txn)
                }
            },
            Command::LeaseGrant { id, ttl_ms } => self.grant(*id, *ttl_ms),
            Command::LeaseRevoke { id, .. } => self.revoke(*id),
            Command::Compact { revision } => self.compact(*revision),
            // The reference does not model checkpoints (the generator never sends one): they
            // change no key and no revision.
            Command::LeaseCheckpoint { .. } => {
                Ok(CommandResponse::LeaseCheckpoint { header: ResponseHeader { revision: self.revision() } })
            }
            Command::Zk(_) => unreachable!("the ZooKeeper view has its own reference test (zk/reference_tests.rs)"),
        };
        result.unwrap_or_else(CommandResponse::Error)
    }

    /// Run `f` on a scratch copy; keep the copy as a new revision only if it succeeded and
    /// changed something.
    fn write<R>(&mut self, f: impl FnOnce(&mut Scratch<'_>) -> Result<R, StoreError>) -> Result<R, StoreError> {
        let mut scratch = Scratch { model: self, work: self.current().clone(), changes: Vec::new() };
        let response = f(&mut scratch)?;
        let Scratch { work, changes, .. } = scratch;
        if !changes.is_empty() {
            self.states.push(work);
            self.changes.push(changes);
        }
        Ok(response)
    }

    fn grant(&mut self, id: LeaseId, ttl_ms: u64) -> Result<CommandResponse, StoreError> {
        if ttl_ms == 0 {
            return Err(StoreError::InvalidTtl);
        }
        let id = match id {
            0 => {
                let mut id = self.next_lease;
                while self.leases.contains_key(&id) {
                    id += 1;
                }
                self.next_lease = id + 1;
                id
            }
            id if self.leases.contains_key(&id) => return Err(StoreError::LeaseExists(id)),
            id => id,
        };
        self.leases.insert(id, ttl_ms);
        Ok(CommandResponse::LeaseGrant { header: self.header(), id, ttl_ms })
    }

    fn revoke(&mut self, id: LeaseId) -> Result<CommandResponse, StoreError> {
        if !self.leases.contains_key(&id) {
            return Err(StoreError::LeaseNotFound(id));
        }
        let keys = self.lease_keys(id);
        self.write(|s| {
            for key in keys {
                s.delete_key(&key);
            }
            Ok(())
        })?;
        self.leases.remove(&id);
        Ok(CommandResponse::LeaseRevoke { header: self.header() })
    }

    fn compact(&mut self, revision: Revision) -> Result<CommandResponse, StoreError> {
        if revision > self.revision() {
            return Err(StoreError::FutureRevision { requested: revision, current: self.revision() });
        }
        if revision <= self.compact {
            return Err(StoreError::Compacted { requested: revision, compact_revision: self.compact });
        }
        self.compact = revision;
        Ok(CommandResponse::Compact { header: self.header() })
    }

    /// A read-side revision check, as of the committed revision.
    fn readable(&self, requested: Revision) -> Result<Revision, StoreError> {
        let current = self.revision();
        match requested {
            0 => Ok(current),
            r if r > current => Err(StoreError::FutureRevision { requested: r, current }),
            r if r < self.compact => Err(StoreError::Compacted { requested: r, compact_revision: self.compact }),
            r => Ok(r),
        }
    }

    fn range(&self, req: &RangeRequest) -> Result<RangeResponse, StoreError> {
        let at = self.readable(req.revision)?;
        Ok(shape_range(&self.states[at as usize], req, self.revision()))
    }

    fn events(&self, range: &KeyRange, from: Revision, prev_kv: bool) -> Result<Vec<Event>, StoreError> {
        if from == 0 || from > self.revision() {
            return Ok(Vec::new());
        }
        if from < self.compact {
            return Err(StoreError::Compacted { requested: from, compact_revision: self.compact });
        }
        let mut events = Vec::new();
        for revision in from..=self.revision() {
            let before = &self.states[revision as usize - 1];
            for (key, kv) in &self.changes[revision as usize] {
                if !selects(range, key) {
                    continue;
                }
                let prev_kv = before.get(key).cloned().filter(|_| prev_kv);
                let (kind, kv) = match kv {
                    Some(kv) => (EventKind::Put, kv.clone()),
                    None => {
                        let kv = KeyValue {
                            key: key.clone(),
                            value: String::new(),
                            create_revision: 0,
                            mod_revision: revision,
                            version: 0,
                            lease: 0,
                        };
                        (EventKind::Delete, kv)
                    }
                };
                events.push(Event { kind, kv, prev_kv });
            }
        }
        Ok(events)
    }

    fn lease_keys(&self, id: LeaseId) -> Vec<String> {
        let attached = self.current().values().filter(|kv| kv.lease == id);
        attached.map(|kv| kv.key.clone()).collect()
    }

    fn lease_table(&self) -> Vec<Lease> {
        let lease = |(&id, &ttl_ms): (&LeaseId, &u64)| Lease {
            id,
            ttl_ms,
            keys: self.lease_keys(id).into_iter().collect(),
            remaining_ms: None,
        };
        self.leases.iter().map(lease).collect()
    }
}

/// A write in progress on a copy of the current key space.
struct Scratch<'m> {
    model: &'m Model,
    work: Map,
    changes: Vec<(String, Option<KeyValue>)>,
}

impl Scratch<'_> {
    fn pending(&self) -> Revision {
        self.model.revision() + 1
    }

    fn visible(&self) -> Revision {
        match self.changes.is_empty() {
            true => self.model.revision(),
            false => self.pending(),
        }
    }

    fn put(&mut self, req: &PutRequest) -> Result<PutResponse, StoreError> {
        let prev = self.work.get(&req.key).cloned();
        if req.ignore_lease && prev.is_none() {
            return Err(StoreError::KeyNotFound(req.key.clone()));
        }
        if req.lease != 0 && !self.model.leases.contains_key(&req.lease) {
            return Err(StoreError::LeaseNotFound(req.lease));
        }
        let revision = self.pending();
        let kv = KeyValue {
            key: req.key.clone(),
            value: req.value.clone(),
            create_revision: prev.as_ref().map_or(revision, |p| p.create_revision),
            mod_revision: revision,
            version: prev.as_ref().map_or(1, |p| p.version + 1),
            lease: if req.ignore_lease { prev.as_ref().map_or(0, |p| p.lease) } else { req.lease },
        };
        self.work.insert(req.key.clone(), kv.clone());
        self.changes.push((req.key.clone(), Some(kv)));
        let prev_kv = if req.prev_kv { prev } else { None };
        Ok(PutResponse { header: ResponseHeader { revision }, prev_kv })
    }

    fn delete(&mut self, req: &DeleteRangeRequest) -> DeleteRangeResponse {
        let keys: Vec<String> = self.work.keys().filter(|key| selects(&req.range, key)).cloned().collect();
        let prev_kvs: Vec<KeyValue> = keys.iter().map(|key| self.delete_key(key)).collect();
        DeleteRangeResponse {
            header: ResponseHeader { revision: self.visible() },
            deleted: prev_kvs.len(),
            prev_kvs: if req.prev_kv { prev_kvs } else { Vec::new() },
        }
    }

    fn delete_key(&mut self, key: &str) -> KeyValue {
        let prev = self.work.remove(key).expect("deleting a live key");
        self.changes.push((key.to_owned(), None));
        prev
    }

    fn range(&self, req: &RangeRequest) -> Result<RangeResponse, StoreError> {
        let map = match req.revision {
            0 => &self.work,
            requested => {
                let at = self.model.readable(requested)?;
                &self.model.states[at as usize]
            }
        };
        Ok(shape_range(map, req, self.visible()))
    }

    /// `before` is the key space before the top-level transaction: every compare reads it.
    fn txn(&mut self, req: &TxnRequest, before: &Map) -> Result<TxnResponse, StoreError> {
        let succeeded = req.compare.iter().all(|c| compare(c, before.get(&c.key)));
        let ops = if succeeded { &req.success } else { &req.failure };
        let mut responses = Vec::new();
        for op in ops {
            responses.push(match op {
                TxnOp::Range(r) => TxnOpResponse::Range(self.range(r)?),
                TxnOp::Put(p) => TxnOpResponse::Put(self.put(p)?),
                TxnOp::DeleteRange(d) => TxnOpResponse::DeleteRange(self.delete(d)),
                TxnOp::Txn(t) => TxnOpResponse::Txn(self.txn(t, before)?),
            });
        }
        Ok(TxnResponse { header: ResponseHeader { revision: self.visible() }, succeeded, responses })
    }
}

fn selects(range: &KeyRange, key: &str) -> bool {
    let key = key.as_bytes();
    match range {
        KeyRange::Key(k) => key == k.as_bytes(),
        KeyRange::Prefix(p) => key.len() >= p.len() && &key[..p.len()] == p.as_bytes(),
        KeyRange::Range { start, end } => start.as_bytes() <= key && key < end.as_bytes(),
        KeyRange::FromKey(start) => start.as_bytes() <= key,
    }
}

fn compare(c: &Compare, kv: Option<&KeyValue>) -> bool {
    let number = |f: fn(&KeyValue) -> i64| kv.map(f).unwrap_or(0);
    let ordering = match &c.target {
        CompareTarget::Value(v) => match kv {
            Some(kv) => kv.value.as_bytes().cmp(v.as_bytes()),
            None => return false,
        },
        CompareTarget::Version(v) => number(|kv| kv.version).cmp(v),
        CompareTarget::CreateRevision(v) => number(|kv| kv.create_revision).cmp(v),
        CompareTarget::ModRevision(v) => number(|kv| kv.mod_revision).cmp(v),
        CompareTarget::Lease(v) => number(|kv| kv.lease).cmp(v),
    };
    match c.result {
        CompareResult::Equal => ordering.is_eq(),
        CompareResult::NotEqual => ordering.is_ne(),
        CompareResult::Greater => ordering.is_gt(),
        CompareResult::Less => ordering.is_lt(),
    }
}

fn shape_range(map: &Map, req: &RangeRequest, header: Revision) -> RangeResponse {
    let min = req.min_create_revision;
    let max = req.max_create_revision;
    // etcd counts the range before the filters prune it.
    let count = map.values().filter(|kv| selects(&req.range, &kv.key)).count();
    let mut kvs: Vec<KeyValue> = map
        .values()
        .filter(|kv| selects(&req.range, &kv.key))
        .filter(|kv| min == 0 || kv.create_revision >= min)
        .filter(|kv| max == 0 || kv.create_revision <= max)
        .cloned()
        .collect();
    if let Some((target, order)) = req.sort {
        let sort_key = |kv: &KeyValue| -> (i64, String, String) {
            match target {
                SortTarget::Key => (0, String::new(), kv.key.clone()),
                SortTarget::Value => (0, kv.value.clone(), kv.key.clone()),
                SortTarget::Version => (kv.version, String::new(), kv.key.clone()),
                SortTarget::CreateRevision => (kv.create_revision, String::new(), kv.key.clone()),
                SortTarget::ModRevision => (kv.mod_revision, String::new(), kv.key.clone()),
            }
        };
        kvs.sort_by_key(sort_key);
        if order == SortOrder::Descend {
            kvs.reverse();
        }
    }
    let header = ResponseHeader { revision: header };
    if req.count_only {
        let kvs = Vec::new();
        let more = false;
        return RangeResponse { header, kvs, count, more };
    }
    let more = req.limit != 0 && kvs.len() > req.limit;
    kvs.truncate(if req.limit == 0 { kvs.len() } else { req.limit });
    if req.keys_only {
        kvs.iter_mut().for_each(|kv| kv.value.clear());
    }
    RangeResponse { header, kvs, count, more }
}

/// A write of one execution path of a transaction.
#[derive(Clone, Copy)]
enum Write<'a> {
    Put(&'a str),
    Delete(&'a KeyRange),
}

/// Every sequence of writes one run of `ops` can make (one per choice of nested branches).
fn paths(ops: &[TxnOp]) -> Vec<Vec<Write<'_>>> {
    let mut heads: Vec<Vec<Write<'_>>> = vec![Vec::new()];
    for op in ops {
        match op {
            TxnOp::Range(_) => {}
            TxnOp::Put(p) => heads.iter_mut().for_each(|path| path.push(Write::Put(&p.key))),
            TxnOp::DeleteRange(d) => heads.iter_mut().for_each(|path| path.push(Write::Delete(&d.range))),
            TxnOp::Txn(t) => {
                let tails: Vec<_> = paths(&t.success).into_iter().chain(paths(&t.failure)).collect();
                heads = heads
                    .iter()
                    .flat_map(|head| tails.iter().map(move |tail| [head.clone(), tail.clone()].concat()))
                    .collect();
            }
        }
    }
    heads
}

/// The smallest key that some execution path of `req` writes twice (delete + delete is
/// fine, as in etcd).
fn duplicate_write(req: &TxnRequest) -> Option<String> {
    let mut duplicates = BTreeSet::new();
    for path in paths(&req.success).into_iter().chain(paths(&req.failure)) {
        for (i, first) in path.iter().enumerate() {
            for second in &path[i + 1..] {
                match (*first, *second) {
                    (Write::Put(a), Write::Put(b)) if a == b => {
                        duplicates.insert(a);
                    }
                    (Write::Put(a), Write::Delete(r)) | (Write::Delete(r), Write::Put(a)) if selects(r, a) => {
                        duplicates.insert(a);
                    }
                    _ => {}
                }
            }
        }
    }
    duplicates.first().map(|key| key.to_string())
}

// ---- generators ----------------------------------------------------------------------

const KEYS: [&str; 4] = ["a/1", "a/2", "b/1", "b/2"];
const BOUNDS: [&str; 9] = ["", "a", "a/1", "a/2", "a/3", "b", "b/1", "b/2", "c"];
const PREFIXES: [&str; 5] = ["", "a", "a/", "b/", "b/2"];
const VALUES: [&str; 3] = ["", "x", "y"];

fn key() -> impl Strategy<Value = String> {
    prop::sample::select(&KEYS[..]).prop_map(String::from)
}

fn value() -> impl Strategy<Value = String> {
    prop::sample::select(&VALUES[..]).prop_map(String::from)
}

fn key_range() -> impl Strategy<Value = KeyRange> {
    let bound = || prop::sample::select(&BOUNDS[..]).prop_map(String::from);
    prop_oneof![
        key().prop_map(KeyRange::Key),
        prop::sample::select(&PREFIXES[..]).prop_map(|p| KeyRange::Prefix(p.into())),
        (bound(), bound()).prop_map(|(start, end)| KeyRange::Range { start, end }),
        bound().prop_map(KeyRange::FromKey),
    ]
}

fn lease_id() -> impl Strategy<Value = LeaseId> {
    prop_oneof![4 => Just(0), 3 => 1..4i64]
}

fn put() -> impl Strategy<Value = PutRequest> {
    // One put in four keeps the key's lease (and then names none, as it must).
    (key(), value(), lease_id(), any::<bool>(), prop::bool::weighted(0.25)).prop_map(
        |(key, value, lease, prev_kv, ignore_lease)| PutRequest {
            key,
            value,
            lease: if ignore_lease { 0 } else { lease },
            prev_kv,
            ignore_lease,
        },
    )
}

fn delete() -> impl Strategy<Value = DeleteRangeRequest> {
    (key_range(), any::<bool>()).prop_map(|(range, prev_kv)| DeleteRangeRequest { range, prev_kv })
}

/// A range request; `revision` as given (0 = current).
fn range_request(revision: impl Strategy<Value = Revision>) -> impl Strategy<Value = RangeRequest> {
    let sort_target = prop::sample::select(vec![
        SortTarget::Key,
        SortTarget::Version,
        SortTarget::CreateRevision,
        SortTarget::ModRevision,
        SortTarget::Value,
    ]);
    let order = prop::sample::select(vec![SortOrder::Ascend, SortOrder::Descend]);
    let sort = prop::option::weighted(0.5, (sort_target, order));
    let filters = (prop_oneof![3 => Just(0), 1 => 1..8i64], prop_oneof![3 => Just(0), 1 => 1..8i64]);
    (key_range(), revision, 0..4usize, sort, filters, any::<bool>(), any::<bool>()).prop_map(
        |(range, revision, limit, sort, (min, max), keys_only, count_only)| RangeRequest {
            range,
            revision,
            limit,
            sort,
            max_create_revision: max,
            min_create_revision: min,
            keys_only,
            count_only,
        },
    )
}

fn compare_strategy() -> impl Strategy<Value = Compare> {
    let result = prop::sample::select(vec![
        CompareResult::Equal,
        CompareResult::NotEqual,
        CompareResult::Greater,
        CompareResult::Less,
    ]);
    let target = prop_oneof![
        value().prop_map(CompareTarget::Value),
        (0..4i64).prop_map(CompareTarget::Version),
        (0..12i64).prop_map(CompareTarget::CreateRevision),
        (0..12i64).prop_map(CompareTarget::ModRevision),
        (0..4i64).prop_map(CompareTarget::Lease),
    ];
    (key(), result, target).prop_map(|(key, result, target)| Compare { key, result, target })
}

/// A transaction nesting at most `depth` more transactions.
fn txn(depth: u32) -> BoxedStrategy<TxnRequest> {
    let in_txn_revision = prop_oneof![4 => Just(0), 1 => 1..8i64];
    let leaf = prop_oneof![
        3 => range_request(in_txn_revision).prop_map(TxnOp::Range),
        4 => put().prop_map(TxnOp::Put),
        2 => delete().prop_map(TxnOp::DeleteRange),
    ];
    let op = match depth {
        0 => leaf.boxed(),
        _ => prop_oneof![9 => leaf, 2 => txn(depth - 1).prop_map(TxnOp::Txn)].boxed(),
    };
    let compares = prop::collection::vec(compare_strategy(), 0..3);
    let branch = || prop::collection::vec(op.clone(), 0..3);
    (compares, branch(), branch())
        .prop_map(|(compare, success, failure)| TxnRequest { compare, success, failure })
        .boxed()
}

/// One generated step: an action, then the random probes to compare after it.
#[derive(Clone, Debug)]
struct Step {
    action: Action,
    /// `revision` is a pick, resolved against the current revision.
    read: RangeRequest,
    watch: (KeyRange, u8, bool),
}

#[derive(Clone, Debug)]
enum Action {
    Command(Command),
    /// Compact to the current revision minus this (negative: the future).
    CompactBack(i64),
}

fn action() -> impl Strategy<Value = Action> {
    let grant = (prop_oneof![1 => Just(0), 3 => 1..4i64], prop_oneof![1 => Just(0u64), 4 => Just(1000u64)])
        .prop_map(|(id, ttl_ms)| Command::LeaseGrant { id, ttl_ms });
    let revoke = (1..4i64, any::<bool>()).prop_map(|(id, expired)| Command::LeaseRevoke {
        id,
        reason: if expired { RevokeReason::Expired } else { RevokeReason::Client },
    });
    prop_oneof![
        4 => put().prop_map(|p| Action::Command(Command::Put(p))),
        2 => delete().prop_map(|d| Action::Command(Command::DeleteRange(d))),
        5 => txn(1).prop_map(|t| Action::Command(Command::Txn(t))),
        3 => grant.prop_map(Action::Command),
        2 => revoke.prop_map(Action::Command),
        1 => (-1..5i64).prop_map(Action::CompactBack),
    ]
}

fn step() -> impl Strategy<Value = Step> {
    let watch = (key_range(), any::<u8>(), any::<bool>());
    (action(), range_request(0..=255i64), watch).prop_map(|(action, read, watch)| Step { action, read, watch })
}

fn steps() -> impl Strategy<Value = Vec<Step>> {
    prop::collection::vec(step(), 1..50)
}

// ---- running and comparing -----------------------------------------------------------

/// How often the interesting states were reached: each `always` the differential test
/// checks needs these `sometimes` to mean anything.
#[derive(Debug, Default)]
struct Coverage {
    txn_writes: usize,
    txn_failure_branch: usize,
    nested_txn: usize,
    duplicate_rejected: usize,
    lease_not_found: usize,
    compactions: usize,
    revoke_with_keys: usize,
    past_read_differs: usize,
    compacted_read: usize,
    watch_with_prev_kv: usize,
}

/// A revision pick in `0..=current + 1`: current (0), every past one, and the future.
fn pick(current: Revision, pick: i64) -> Revision {
    pick % (current + 2)
}

fn run(steps: &[Step], coverage: &mut Coverage) -> Result<(), TestCaseError> {
    let mut store = Store::new();
    let mut model = Model::new();
    for (index, step) in steps.iter().enumerate() {
        let cmd = match &step.action {
            Action::Command(cmd) => cmd.clone(),
            Action::CompactBack(back) => Command::Compact { revision: model.revision() - back },
        };
        let before = store.clone();
        let expected = model.apply(&cmd);
        let got = store.apply(&cmd);
        prop_assert_eq!(&got, &expected, "step {}: {:?}", index, cmd);
        if let CommandResponse::Error(_) = got {
            prop_assert_eq!(&store, &before, "step {}: a rejected command changed the store", index);
        }
        tally(coverage, &cmd, &got, &before, &store);
        compare_reads(&store, &model, step, coverage)?;
        store.check_invariants();
    }
    Ok(())
}

fn compare_reads(store: &Store, model: &Model, step: &Step, coverage: &mut Coverage) -> Result<(), TestCaseError> {
    let current = model.revision();
    prop_assert_eq!(store.revision(), current);
    prop_assert_eq!(store.compact_revision(), model.compact);
    let leases: Vec<Lease> = store.leases().cloned().collect();
    prop_assert_eq!(&leases, &model.lease_table());
    for lease in &leases {
        prop_assert_eq!(store.lease(lease.id), Some(lease));
    }
    let everything = KeyRange::Prefix(String::new());
    for revision in 0..=current + 1 {
        let req = RangeRequest { revision, ..RangeRequest::new(everything.clone()) };
        let got = store.range(&req);
        prop_assert_eq!(&got, &model.range(&req), "read at {}", revision);
        let now = store.range(&RangeRequest::new(everything.clone()));
        match &got {
            Ok(past) if past.kvs != now.unwrap().kvs => coverage.past_read_differs += 1,
            Err(StoreError::Compacted { .. }) => coverage.compacted_read += 1,
            _ => {}
        }
    }
    let read = RangeRequest { revision: pick(current, step.read.revision), ..step.read.clone() };
    prop_assert_eq!(store.range(&read), model.range(&read), "read {:?}", read);
    for from in 0..=current + 1 {
        let got = store.events(&everything, from, true);
        prop_assert_eq!(&got, &model.events(&everything, from, true), "watch from {}", from);
        if let Ok(events) = got {
            coverage.watch_with_prev_kv += events.iter().filter(|e| e.prev_kv.is_some()).count();
        }
    }
    let (range, from, prev_kv) = &step.watch;
    let from = pick(current, i64::from(*from));
    prop_assert_eq!(
        store.events(range, from, *prev_kv),
        model.events(range, from, *prev_kv),
        "watch {:?} from {}",
        range,
        from
    );
    Ok(())
}

fn tally(coverage: &mut Coverage, cmd: &Command, response: &CommandResponse, before: &Store, after: &Store) {
    let bumped = after.revision() > before.revision();
    match (cmd, response) {
        (Command::Txn(req), CommandResponse::Txn(txn)) => {
            coverage.txn_writes += usize::from(bumped);
            coverage.txn_failure_branch += usize::from(!txn.succeeded);
            let nested = |ops: &[TxnOp]| ops.iter().any(|op| matches!(op, TxnOp::Txn(_)));
            let ran = if txn.succeeded { &req.success } else { &req.failure };
            coverage.nested_txn += usize::from(nested(ran));
        }
        (_, CommandResponse::Error(StoreError::DuplicateKey(_))) => coverage.duplicate_rejected += 1,
        (_, CommandResponse::Error(StoreError::LeaseNotFound(_))) => coverage.lease_not_found += 1,
        (Command::Compact { .. }, CommandResponse::Compact { .. }) => coverage.compactions += 1,
        (Command::LeaseRevoke { .. }, CommandResponse::LeaseRevoke { .. }) => {
            coverage.revoke_with_keys += usize::from(bumped);
        }
        _ => {}
    }
}

proptest! {
    // 256 sequences of up to 50 commands: about 2 s in a debug build. No regression file:
    // it would land outside this module's directory; a failure prints the shrunk sequence.
    #![proptest_config(Config {
        cases: 256,
        failure_persistence: None,
        ..Config::default()
    })]

    #[test]
    fn store_agrees_with_the_reference_model(steps in steps()) {
        run(&steps, &mut Coverage::default())?;
    }
}

/// The `sometimes` of the differential test: on a fixed seed, the generated sequences reach
/// every interesting state (and agree with the model there too).
#[test]
fn reference_sequences_reach_the_interesting_states() {
    let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &[7; 32]);
    let mut runner = TestRunner::new_with_rng(Config::default(), rng);
    let mut coverage = Coverage::default();
    for _ in 0..32 {
        let steps = steps().new_tree(&mut runner).unwrap().current();
        run(&steps, &mut coverage).unwrap();
    }
    let counts = [
        ("txn_writes", coverage.txn_writes),
        ("txn_failure_branch", coverage.txn_failure_branch),
        ("nested_txn", coverage.nested_txn),
        ("duplicate_rejected", coverage.duplicate_rejected),
        ("lease_not_found", coverage.lease_not_found),
        ("compactions", coverage.compactions),
        ("revoke_with_keys", coverage.revoke_with_keys),
        ("past_read_differs", coverage.past_read_differs),
        ("compacted_read", coverage.compacted_read),
        ("watch_with_prev_kv", coverage.watch_with_prev_kv),
    ];
    eprintln!("{coverage:?}");
    for (name, count) in counts {
        assert!(count > 0, "never reached: {name} ({coverage:?})");
    }
}
