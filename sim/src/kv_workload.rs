//! The key-value workload: writers put, read, delete and compare-and-swap a few keys at random;
//! watchers follow every change. Every operation is recorded with the store revision it saw,
//! so the linearizability, durability and watch checkers can judge the service.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use coordsim_checker::history::{Call, ChangeKind, Event, Return, WatchEndReason, WatchedChange};
use madsim::rand::Rng;

use crate::client::Client;
use crate::clock::Clock;
use crate::recorder::Recorder;
use crate::scenario::KvSpec;
use crate::store::{
    Command, CommandResponse, Compare, CompareResult, CompareTarget, DeleteRangeRequest, EventKind, KeyRange,
    PutRequest, RangeRequest, StoreError, TxnOp, TxnRequest,
};

/// How long one operation may take before its outcome counts as unknown.
const OP_BUDGET: Duration = Duration::from_secs(1);
/// How long one watch long-poll waits on the server for changes.
const WATCH_POLL: Duration = Duration::from_millis(500);
/// The keys' common prefix, which watchers watch.
pub const KEY_PREFIX: &str = "k";

/// One client's part of the key-value workload.
#[derive(Clone, Debug)]
pub struct KvPlan {
    pub name: String,
    pub addr: SocketAddr,
    pub servers: Vec<(u64, SocketAddr)>,
    pub start: Instant,
    pub spec: KvSpec,
    pub role: KvRole,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KvRole {
    Writer,
    /// The first writer also compacts the store now and then.
    WriterAndCompactor,
    Watcher,
}

enum Op {
    Put,
    Get,
    Delete,
    Cas,
}

pub async fn run_kv_client(plan: KvPlan, clock: Clock, recorder: Recorder) {
    madsim::time::sleep_until(plan.start).await;
    let client =
        Client::connect(plan.addr, plan.servers.clone(), clock.clone()).await.expect("a client binds its own address");
    match plan.role {
        KvRole::Watcher => watch(&plan, &client, &recorder).await,
        KvRole::Writer | KvRole::WriterAndCompactor => write(&plan, &client, &recorder).await,
    }
}

async fn write(plan: &KvPlan, client: &Client, recorder: &Recorder) {
    let spec = &plan.spec;
    let mut written = 0u64;
    // The last value this client saw for each key: what its compare-and-swaps expect.
    let mut seen: BTreeMap<String, Option<String>> = BTreeMap::new();
    let mut latest_revision = 0i64;
    let mut next_compaction = client.clock().now().plus(spec.compact_every.0);
    loop {
        let factor = madsim::rand::thread_rng().gen_range(0.5..1.5);
        client.clock().sleep(spec.interval.0.mul_f64(factor)).await;
        if plan.role == KvRole::WriterAndCompactor
            && !spec.compact_every.0.is_zero()
            && client.clock().now() >= next_compaction
        {
            next_compaction = client.clock().now().plus(spec.compact_every.0);
            // Not an operation of the history: it changes no key, only what watches can replay.
            let _ = client.write(Command::Compact { revision: latest_revision }, OP_BUDGET).await;
        }
        let key = format!("{KEY_PREFIX}{}", madsim::rand::thread_rng().gen_range(0..spec.keys));
        let draw: f64 = madsim::rand::thread_rng().r#gen();
        let op = if draw < spec.reads {
            Op::Get
        } else if draw < spec.reads + spec.cas {
            Op::Cas
        } else if draw < spec.reads + spec.cas + spec.deletes {
            Op::Delete
        } else {
            Op::Put
        };
        written += 1;
        let value = format!("{}-{written}", plan.name);
        let revision = match op {
            Op::Put => put(client, recorder, &plan.name, &key, value.clone()).await.inspect(|_| {
                seen.insert(key.clone(), Some(value));
            }),
            Op::Get => get(client, recorder, &plan.name, &key).await.map(|(value, revision)| {
                seen.insert(key.clone(), value);
                revision
            }),
            Op::Delete => delete(client, recorder, &plan.name, &key).await.inspect(|_| {
                seen.insert(key.clone(), None);
            }),
            Op::Cas => {
                let expected = seen.get(&key).cloned().flatten();
                cas(client, recorder, &plan.name, &key, expected, value.clone()).await.map(|(swapped, revision)| {
                    if swapped {
                        seen.insert(key.clone(), Some(value));
                    }
                    revision
                })
            }
        };
        if let Some(revision) = revision {
            latest_revision = latest_revision.max(revision);
        }
    }
}

/// A recorded put; the store revision it created, if it completed.
async fn put(client: &Client, recorder: &Recorder, node: &str, key: &str, value: String) -> Option<i64> {
    let op = recorder.invoke(node, Call::Put { key: key.to_string(), value: value.clone() });
    let request = PutRequest { key: key.to_string(), value, lease: 0, prev_kv: false, ignore_lease: false };
    match client.write_once(Command::Put(request), OP_BUDGET).await {
        Ok(CommandResponse::Put(response)) => {
            recorder.ok(node, op, Return::Put { revision: response.header.revision });
            Some(response.header.revision)
        }
        Ok(other) => {
            recorder.fail(node, op, format!("{other:?}"));
            None
        }
        Err(error) => {
            recorder.info(node, op, error.to_string());
            None
        }
    }
}

/// A recorded linearizable read: (value, revision) if it completed.
async fn get(client: &Client, recorder: &Recorder, node: &str, key: &str) -> Option<(Option<String>, i64)> {
    let op = recorder.invoke(node, Call::Get { key: key.to_string() });
    match client.range_any(RangeRequest::new(KeyRange::Key(key.to_string())), OP_BUDGET).await {
        Ok(Ok(response)) => {
            let value = response.kvs.first().map(|kv| kv.value.clone());
            recorder.ok(node, op, Return::Got { value: value.clone(), revision: response.header.revision });
            Some((value, response.header.revision))
        }
        Ok(Err(error)) => {
            recorder.fail(node, op, error.to_string());
            None
        }
        // A read changes nothing: a read without an answer certainly did not happen for anyone.
        Err(error) => {
            recorder.fail(node, op, error.to_string());
            None
        }
    }
}

async fn delete(client: &Client, recorder: &Recorder, node: &str, key: &str) -> Option<i64> {
    let op = recorder.invoke(node, Call::Delete { key: key.to_string() });
    let request = DeleteRangeRequest { range: KeyRange::Key(key.to_string()), prev_kv: false };
    match client.write_once(Command::DeleteRange(request), OP_BUDGET).await {
        Ok(CommandResponse::DeleteRange(response)) => {
            let revision = response.header.revision;
            recorder.ok(node, op, Return::Deleted { count: response.deleted as u64, revision });
            Some(revision)
        }
        Ok(other) => {
            recorder.fail(node, op, format!("{other:?}"));
            None
        }
        Err(error) => {
            recorder.info(node, op, error.to_string());
            None
        }
    }
}

/// Compare-and-swap as an etcd transaction: value == expected (or the key absent) → put.
async fn cas(
    client: &Client,
    recorder: &Recorder,
    node: &str,
    key: &str,
    expected: Option<String>,
    new: String,
) -> Option<(bool, i64)> {
    let op = recorder.invoke(node, Call::Cas { key: key.to_string(), expected: expected.clone(), new: new.clone() });
    let compare = match expected {
        Some(value) => {
            Compare { key: key.to_string(), result: CompareResult::Equal, target: CompareTarget::Value(value) }
        }
        None => {
            Compare { key: key.to_string(), result: CompareResult::Equal, target: CompareTarget::CreateRevision(0) }
        }
    };
    let put =
        TxnOp::Put(PutRequest { key: key.to_string(), value: new, lease: 0, prev_kv: false, ignore_lease: false });
    let txn = TxnRequest { compare: vec![compare], success: vec![put], failure: vec![] };
    match client.write_once(Command::Txn(txn), OP_BUDGET).await {
        Ok(CommandResponse::Txn(response)) => {
            let (swapped, revision) = (response.succeeded, response.header.revision);
            recorder.ok(node, op, Return::Cas { swapped, revision });
            Some((swapped, revision))
        }
        Ok(other) => {
            recorder.fail(node, op, format!("{other:?}"));
            None
        }
        Err(error) => {
            recorder.info(node, op, error.to_string());
            None
        }
    }
}

/// Follows every change to the workload's keys, stream after stream: a stream ends when the
/// server says its next revision was compacted (the next starts at the compact revision, the
/// oldest still there) or when no server answers (the next resumes where this one stopped).
async fn watch(plan: &KvPlan, client: &Client, recorder: &Recorder) {
    let range = KeyRange::Prefix(KEY_PREFIX.to_string());
    let mut from = 1i64;
    loop {
        let watch = recorder.next_watch_id();
        recorder.record(
            &plan.name,
            Event::WatchStart { watch, key: KEY_PREFIX.to_string(), prefix: true, start_revision: from },
        );
        let end = loop {
            match client.watch_once(range.clone(), from, WATCH_POLL).await {
                Ok(Ok(batch)) if batch.events.is_empty() => {
                    if batch.header_revision >= from {
                        recorder.record(&plan.name, Event::WatchProgress { watch, revision: batch.header_revision });
                        from = batch.header_revision + 1;
                    }
                }
                Ok(Ok(batch)) => {
                    let events: Vec<WatchedChange> = batch.events.iter().map(change).collect();
                    from = events.last().map_or(from, |last| last.revision + 1);
                    recorder.record(&plan.name, Event::WatchEvents { watch, events });
                    client.clock().sleep(plan.spec.watch_lag.0).await;
                }
                Ok(Err(StoreError::Compacted { compact_revision, .. })) => {
                    break (WatchEndReason::Compacted, Some(compact_revision));
                }
                Ok(Err(_)) | Err(_) => break (WatchEndReason::Broken, None),
            }
        };
        recorder.record(&plan.name, Event::WatchEnd { watch, reason: end.0, compact_revision: end.1 });
        if let Some(compact_revision) = end.1 {
            from = compact_revision;
        }
    }
}

fn change(event: &crate::store::Event) -> WatchedChange {
    let kind = match event.kind {
        EventKind::Put => ChangeKind::Put,
        EventKind::Delete => ChangeKind::Delete,
    };
    let value = (kind == ChangeKind::Put).then(|| event.kv.value.clone());
    WatchedChange { revision: event.kv.mod_revision, key: event.kv.key.clone(), kind, value }
}
