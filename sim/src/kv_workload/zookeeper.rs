//! The key-value workload's operations on the ZooKeeper view: each key is a persistent znode
//! (`/k0`, ...), a put is `setData` with any version, a read is `getData` from the connected
//! server (after a `sync` if asked), a compare-and-swap is a `create` (from absent) or a
//! `setData` with the version seen.
//!
//! They are recorded as the etcd workload's put, get and cas, so the linearizability checker
//! judges them with the same model. A version compare stands for a value compare there: values
//! are unique per write and znodes are never deleted (the scenario refuses deletes), so a znode
//! still has the version a client read if and only if it still holds the value read.

use coordsim_checker::history::{Call, Return};

use super::{Guard, OP_BUDGET, Seen, Step};
use crate::client::zk::ZkClient;
use crate::recorder::Recorder;
use crate::scenario::ZkReads;
use crate::zk::{ANY_VERSION, CreateMode, ZkError, ZkOp, ZkOpResult};

/// A recorded unconditional `setData`. A znode that does not exist yet is not created: the
/// put certainly did not happen.
pub(super) async fn put(zk: &ZkClient, recorder: &Recorder, node: &str, path: &str, value: String) -> Option<Step> {
    let op = recorder.invoke(node, Call::Put { key: path.to_string(), value: value.clone() });
    let set = ZkOp::SetData { path: path.to_string(), data: value.clone(), version: ANY_VERSION };
    match zk.multi_at(vec![set]).await {
        Ok((_, Ok(results))) => {
            let stat = set_data_stat(results);
            recorder.ok(node, op, Return::Put { revision: stat.mzxid });
            Some(Step::learned(stat.mzxid, Seen { value: Some(value), version: stat.version }))
        }
        Ok((_, Err(error))) => {
            recorder.fail(node, op, error.to_string());
            None
        }
        Err(error) => {
            recorder.info(node, op, error.to_string());
            None
        }
    }
}

/// A recorded `getData` served by the connected server, after a `sync` when `reads` says so.
pub(super) async fn get(zk: &ZkClient, reads: ZkReads, recorder: &Recorder, node: &str, path: &str) -> Option<Step> {
    let op = recorder.invoke(node, Call::Get { key: path.to_string() });
    let read = async {
        if reads == ZkReads::Sync {
            zk.sync(OP_BUDGET).await?;
        }
        zk.get_data_or_none(path, OP_BUDGET).await
    };
    match read.await {
        Ok((data, zxid)) => {
            let value = data.as_ref().map(|(value, _)| value.clone());
            recorder.ok(node, op, Return::Got { value: value.clone(), revision: zxid });
            let version = data.map_or(ANY_VERSION, |(_, stat)| stat.version);
            Some(Step::learned(zxid, Seen { value, version }))
        }
        // A read changes nothing: without an answer it certainly did not happen for anyone.
        Err(error) => {
            recorder.fail(node, op, error.to_string());
            None
        }
    }
}

/// A recorded compare-and-swap: `create` when the guard expects the znode absent, `setData`
/// with the version seen otherwise. `NodeExists`, `BadVersion` and `NoNode` are conflicts: the
/// znode was not as the guard expected, and nothing changed.
pub(super) async fn cas(
    zk: &ZkClient,
    recorder: &Recorder,
    node: &str,
    path: &str,
    guard: Guard,
    new: String,
) -> Option<Step> {
    let call = Call::Cas { key: path.to_string(), expected: guard.expected().map(str::to_string), new: new.clone() };
    let op = recorder.invoke(node, call);
    let write = match guard {
        Guard::Absent => ZkOp::Create { path: path.to_string(), data: new.clone(), mode: CreateMode::Persistent },
        Guard::Version { version, .. } => ZkOp::SetData { path: path.to_string(), data: new.clone(), version },
        Guard::Value(_) => unreachable!("the ZooKeeper view compares versions, never values"),
    };
    match zk.multi_at(vec![write]).await {
        Ok((_, Ok(results))) => {
            let stat = match results.into_iter().next() {
                Some(ZkOpResult::Created { stat, .. } | ZkOpResult::SetData { stat }) => stat,
                other => crate::rpc::answered_wrongly("a create or setData", &other),
            };
            recorder.ok(node, op, Return::Cas { swapped: true, revision: stat.mzxid });
            Some(Step::learned(stat.mzxid, Seen { value: Some(new), version: stat.version }))
        }
        Ok((zxid, Err(ZkError::NodeExists(_) | ZkError::BadVersion { .. } | ZkError::NoNode(_)))) => {
            recorder.ok(node, op, Return::Cas { swapped: false, revision: zxid });
            Some(Step::conflict(zxid))
        }
        Ok((_, Err(error))) => {
            recorder.fail(node, op, error.to_string());
            None
        }
        // Connection loss: the write may or may not have been applied.
        Err(error) => {
            recorder.info(node, op, error.to_string());
            None
        }
    }
}

fn set_data_stat(results: Vec<ZkOpResult>) -> crate::zk::Stat {
    match results.into_iter().next() {
        Some(ZkOpResult::SetData { stat }) => stat,
        other => crate::rpc::answered_wrongly("a setData", &other),
    }
}
