//! Evaluating one transaction compare (etcd `applyCompare` / `compareKV`).

use std::cmp::Ordering;

use super::{Compare, CompareResult, CompareTarget, KeyValue};

/// Does `compare` hold for the key's current key-value (`None`: the key is absent)?
///
/// An absent key reads as version, create_revision, mod_revision and lease 0, so
/// `Version(0) Equal` tests "key does not exist". A value compare on an absent key is false
/// whatever the result operator, as in etcd (no value is not the empty value).
/// "Greater" means the key's field is greater than the compare's target.
pub(super) fn holds(compare: &Compare, kv: Option<&KeyValue>) -> bool {
    let field = |get: fn(&KeyValue) -> i64| kv.map_or(0, get);
    let ordering: Ordering = match &compare.target {
        CompareTarget::Value(target) => match kv {
            None => return false,
            Some(kv) => kv.value.as_str().cmp(target.as_str()),
        },
        CompareTarget::Version(target) => field(|kv| kv.version).cmp(target),
        CompareTarget::CreateRevision(target) => field(|kv| kv.create_revision).cmp(target),
        CompareTarget::ModRevision(target) => field(|kv| kv.mod_revision).cmp(target),
        CompareTarget::Lease(target) => field(|kv| kv.lease).cmp(target),
    };
    match compare.result {
        CompareResult::Equal => ordering == Ordering::Equal,
        CompareResult::NotEqual => ordering != Ordering::Equal,
        CompareResult::Greater => ordering == Ordering::Greater,
        CompareResult::Less => ordering == Ordering::Less,
    }
}
