//! Client-side recipes as sans-IO state machines: each step takes the response to the
//! previous request and says what to do next. The madsim client drives them over RPC; the
//! stateright models (model/) drive the same code with model messages.

pub mod cas_lock;
pub mod mutex;
pub mod semaphore;
pub mod zk_lock;

use crate::store::{
    Compare, CompareResult, CompareTarget, KeyRange, LeaseId, PutRequest, RangeRequest, TxnOp, TxnRequest,
};

/// The first step of the etcd queue recipes (mutex, semaphore, compare-and-swap lock): put `key`
/// with `value` under `lease` if it does not exist (`create_revision == 0`), otherwise read it.
/// The success branch answers with one put, the failure branch with one range; callers may
/// append more ops to both.
pub fn create_or_read(key: &str, value: &str, lease: LeaseId) -> TxnRequest {
    TxnRequest {
        compare: vec![Compare {
            key: key.to_string(),
            result: CompareResult::Equal,
            target: CompareTarget::CreateRevision(0),
        }],
        success: vec![TxnOp::Put(PutRequest {
            key: key.to_string(),
            value: value.to_string(),
            lease,
            prev_kv: false,
            ignore_lease: false,
        })],
        failure: vec![TxnOp::Range(RangeRequest::new(KeyRange::Key(key.to_string())))],
    }
}
