//! Our store's request and response types (sim/core/src/store/types.rs, which the recipe cores speak)
//! to and from etcd's gRPC API, so that real etcd runs the very recipe cores the simulator runs.
//! Only what the recipes use is translated; anything else is refused by name rather than sent
//! half-translated.

use coordsim_sim::store::{
    Compare, CompareResult, CompareTarget, DeleteRangeRequest, DeleteRangeResponse, KeyRange, KeyValue, PutResponse,
    RangeRequest, RangeResponse, ResponseHeader, SortOrder, SortTarget, TxnOp, TxnOpResponse, TxnRequest, TxnResponse,
};
use etcd_client as etcd;

/// `key` and the options that select `range` (etcd's key / range_end pair).
fn select_get(range: &KeyRange, options: etcd::GetOptions) -> (String, etcd::GetOptions) {
    match range {
        KeyRange::Key(key) => (key.clone(), options),
        KeyRange::Prefix(prefix) => (prefix.clone(), options.with_prefix()),
        KeyRange::Range { start, end } => (start.clone(), options.with_range(end.clone())),
        KeyRange::FromKey(key) => (key.clone(), options.with_from_key()),
    }
}

fn select_delete(range: &KeyRange) -> (String, etcd::DeleteOptions) {
    let options = etcd::DeleteOptions::new();
    match range {
        KeyRange::Key(key) => (key.clone(), options),
        KeyRange::Prefix(prefix) => (prefix.clone(), options.with_prefix()),
        KeyRange::Range { start, end } => (start.clone(), options.with_range(end.clone())),
        KeyRange::FromKey(key) => (key.clone(), options.with_from_key()),
    }
}

/// A range request as etcd `Range` arguments.
/// etcd-client's key and options for a DeleteRange.
pub fn delete(request: &DeleteRangeRequest) -> (String, etcd::DeleteOptions) {
    let (key, options) = select_delete(&request.range);
    (key, if request.prev_kv { options.with_prev_key() } else { options })
}

pub fn get(request: &RangeRequest) -> (String, etcd::GetOptions) {
    let mut options = etcd::GetOptions::new();
    if request.revision > 0 {
        options = options.with_revision(request.revision);
    }
    if request.limit > 0 {
        options = options.with_limit(request.limit as i64);
    }
    if let Some((target, order)) = request.sort {
        let target = match target {
            SortTarget::Key => etcd::SortTarget::Key,
            SortTarget::Version => etcd::SortTarget::Version,
            SortTarget::CreateRevision => etcd::SortTarget::Create,
            SortTarget::ModRevision => etcd::SortTarget::Mod,
            SortTarget::Value => etcd::SortTarget::Value,
        };
        let order = match order {
            SortOrder::Ascend => etcd::SortOrder::Ascend,
            SortOrder::Descend => etcd::SortOrder::Descend,
        };
        options = options.with_sort(target, order);
    }
    if request.max_create_revision > 0 {
        options = options.with_max_create_revision(request.max_create_revision);
    }
    if request.min_create_revision > 0 {
        options = options.with_min_create_revision(request.min_create_revision);
    }
    if request.keys_only {
        options = options.with_keys_only();
    }
    if request.count_only {
        options = options.with_count_only();
    }
    select_get(&request.range, options)
}

fn compare(compare: &Compare) -> etcd::Compare {
    let op = match compare.result {
        CompareResult::Equal => etcd::CompareOp::Equal,
        CompareResult::NotEqual => etcd::CompareOp::NotEqual,
        CompareResult::Greater => etcd::CompareOp::Greater,
        CompareResult::Less => etcd::CompareOp::Less,
    };
    let key = compare.key.clone();
    match &compare.target {
        CompareTarget::Version(version) => etcd::Compare::version(key, op, *version),
        CompareTarget::CreateRevision(revision) => etcd::Compare::create_revision(key, op, *revision),
        CompareTarget::ModRevision(revision) => etcd::Compare::mod_revision(key, op, *revision),
        CompareTarget::Value(value) => etcd::Compare::value(key, op, value.clone()),
        CompareTarget::Lease(lease) => etcd::Compare::lease(key, op, *lease),
    }
}

fn op(op: &TxnOp) -> etcd::TxnOp {
    match op {
        TxnOp::Range(request) => {
            let (key, options) = get(request);
            etcd::TxnOp::get(key, Some(options))
        }
        TxnOp::Put(put) => {
            let mut options = etcd::PutOptions::new();
            if put.lease != 0 {
                options = options.with_lease(put.lease);
            }
            if put.prev_kv {
                options = options.with_prev_key();
            }
            if put.ignore_lease {
                options = options.with_ignore_lease();
            }
            etcd::TxnOp::put(put.key.clone(), put.value.clone(), Some(options))
        }
        TxnOp::DeleteRange(delete) => {
            let (key, mut options) = select_delete(&delete.range);
            if delete.prev_kv {
                options = options.with_prev_key();
            }
            etcd::TxnOp::delete(key, Some(options))
        }
        TxnOp::Txn(inner) => etcd::TxnOp::txn(txn(inner)),
    }
}

/// Our transaction as an etcd `Txn`.
pub fn txn(request: &TxnRequest) -> etcd::Txn {
    etcd::Txn::new()
        .when(request.compare.iter().map(compare).collect::<Vec<_>>())
        .and_then(request.success.iter().map(op).collect::<Vec<_>>())
        .or_else(request.failure.iter().map(op).collect::<Vec<_>>())
}

fn header(header: Option<&etcd::ResponseHeader>) -> ResponseHeader {
    ResponseHeader { revision: header.map_or(0, |h| h.revision()) }
}

fn key_value(kv: &etcd::KeyValue) -> KeyValue {
    KeyValue {
        key: String::from_utf8_lossy(kv.key()).into_owned(),
        value: String::from_utf8_lossy(kv.value()).into_owned(),
        create_revision: kv.create_revision(),
        mod_revision: kv.mod_revision(),
        version: kv.version(),
        lease: kv.lease(),
    }
}

pub fn range_response(response: &etcd::GetResponse) -> RangeResponse {
    RangeResponse {
        header: header(response.header()),
        kvs: response.kvs().iter().map(key_value).collect(),
        count: response.count() as usize,
        more: response.more(),
    }
}

/// etcd's transaction response in our types. Nested responses carry no header of their own in
/// etcd; they get the transaction's (one transaction is one revision).
pub fn txn_response(response: &etcd::TxnResponse) -> TxnResponse {
    let outer = header(response.header());
    let responses = response
        .op_responses()
        .iter()
        .map(|inner| match inner {
            etcd::TxnOpResponse::Get(get) => {
                TxnOpResponse::Range(RangeResponse { header: outer, ..range_response(get) })
            }
            etcd::TxnOpResponse::Put(put) => {
                TxnOpResponse::Put(PutResponse { header: outer, prev_kv: put.prev_key().map(key_value) })
            }
            etcd::TxnOpResponse::Delete(delete) => TxnOpResponse::DeleteRange(DeleteRangeResponse {
                header: outer,
                deleted: delete.deleted() as usize,
                prev_kvs: delete.prev_kvs().iter().map(key_value).collect(),
            }),
            etcd::TxnOpResponse::Txn(txn) => TxnOpResponse::Txn(TxnResponse { header: outer, ..txn_response(txn) }),
        })
        .collect();
    TxnResponse { header: outer, succeeded: response.succeeded(), responses }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_predecessor_range_keeps_its_limit_sort_and_revision_bound() {
        let mut request = RangeRequest::new(KeyRange::Prefix("/locks/r/".into()));
        request.max_create_revision = 41;
        request.sort = Some((SortTarget::CreateRevision, SortOrder::Descend));
        request.limit = 1;
        let (key, options) = get(&request);
        assert_eq!(key, "/locks/r/");
        let text = format!("{options:?}");
        assert!(text.contains("max_create_revision: 41"), "{text}");
        assert!(text.contains("limit: 1"), "{text}");
    }
}
