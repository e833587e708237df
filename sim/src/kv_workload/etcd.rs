//! The key-value workload's operations on the etcd API, each recorded with the store revision
//! it saw: put, a linearizable read, delete, and compare-and-swap as a transaction.

use coordsim_checker::history::{Call, Return};

use super::{Guard, OP_BUDGET, Seen, Step};
use crate::client::Client;
use crate::recorder::Recorder;
use crate::scenario::EtcdReads;
use crate::store::{
    Command, CommandResponse, Compare, CompareResult, CompareTarget, DeleteRangeRequest, KeyRange, PutRequest,
    RangeRequest, TxnOp, TxnRequest,
};

/// Not an operation of the history: it changes no key, only what watches can replay.
pub(super) async fn compact(client: &Client, revision: i64) {
    let _ = client.write(Command::Compact { revision }, OP_BUDGET).await;
}

/// A recorded put.
pub(super) async fn put(client: &Client, recorder: &Recorder, node: &str, key: &str, value: String) -> Option<Step> {
    let op = recorder.invoke(node, Call::Put { key: key.to_string(), value: value.clone() });
    let request =
        PutRequest { key: key.to_string(), value: value.clone(), lease: 0, prev_kv: false, ignore_lease: false };
    match client.write_once(Command::Put(request), OP_BUDGET).await {
        Ok(CommandResponse::Put(response)) => {
            let revision = response.header.revision;
            recorder.ok(node, op, Return::Put { revision });
            Some(Step::learned(revision, Seen { value: Some(value), version: revision }))
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

/// A recorded read, sent to a server picked at random: linearizable, or serializable as `reads`
/// says.
pub(super) async fn get(client: &Client, reads: EtcdReads, recorder: &Recorder, node: &str, key: &str) -> Option<Step> {
    let op = recorder.invoke(node, Call::Get { key: key.to_string() });
    let linearizable = reads == EtcdReads::Linearizable;
    match client.range_any(RangeRequest::new(KeyRange::Key(key.to_string())), linearizable, OP_BUDGET).await {
        Ok(Ok(response)) => {
            let kv = response.kvs.first();
            let value = kv.map(|kv| kv.value.clone());
            let revision = response.header.revision;
            recorder.ok(node, op, Return::Got { value: value.clone(), revision });
            // An absent key's mod_revision reads as 0 in a compare.
            Some(Step::learned(revision, Seen { value, version: kv.map_or(0, |kv| kv.mod_revision) }))
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

pub(super) async fn delete(client: &Client, recorder: &Recorder, node: &str, key: &str) -> Option<Step> {
    let op = recorder.invoke(node, Call::Delete { key: key.to_string() });
    let request = DeleteRangeRequest { range: KeyRange::Key(key.to_string()), prev_kv: false };
    match client.write_once(Command::DeleteRange(request), OP_BUDGET).await {
        Ok(CommandResponse::DeleteRange(response)) => {
            let revision = response.header.revision;
            recorder.ok(node, op, Return::Deleted { count: response.deleted as u64, revision });
            Some(Step::learned(revision, Seen { value: None, version: 0 }))
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

/// Compare-and-swap as an etcd transaction: the guard holds (the key absent, its value, or its
/// mod_revision as seen) → put `new`.
pub(super) async fn cas(
    client: &Client,
    recorder: &Recorder,
    node: &str,
    key: &str,
    guard: Guard,
    new: String,
) -> Option<Step> {
    let call = Call::Cas { key: key.to_string(), expected: guard.expected().map(str::to_string), new: new.clone() };
    let op = recorder.invoke(node, call);
    let target = match guard {
        Guard::Absent => CompareTarget::CreateRevision(0),
        Guard::Value(value) => CompareTarget::Value(value),
        Guard::Version { version, .. } => CompareTarget::ModRevision(version),
    };
    let compare = Compare { key: key.to_string(), result: CompareResult::Equal, target };
    let put = TxnOp::Put(PutRequest {
        key: key.to_string(),
        value: new.clone(),
        lease: 0,
        prev_kv: false,
        ignore_lease: false,
    });
    let txn = TxnRequest { compare: vec![compare], success: vec![put], failure: vec![] };
    match client.write_once(Command::Txn(txn), OP_BUDGET).await {
        Ok(CommandResponse::Txn(response)) => {
            let (swapped, revision) = (response.succeeded, response.header.revision);
            recorder.ok(node, op, Return::Cas { swapped, revision });
            Some(match swapped {
                true => Step::learned(revision, Seen { value: Some(new), version: revision }),
                false => Step::conflict(revision),
            })
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
