//! Shaping a range response from the key-values a range selected at one revision, in the
//! order etcd's applier does it: count, filter by create revision, sort, limit, strip values.

use std::cmp::Ordering;

use super::{KeyValue, RangeRequest, RangeResponse, ResponseHeader, Revision, SortOrder, SortTarget};

/// `selected` must be in key order (as [`super::mvcc::KeySpace::range_at`] yields them).
///
/// `count` is the number of keys in the range, before the create-revision filters and the
/// limit, as etcd computes it (server/etcdserver/apply.go sets it from the store's range and
/// prunes afterwards): with a filter set, `count` and `kvs` disagree. A recipe that counted the
/// filtered keys this way waited for ever on real etcd (the semaphore, found by `coordsim real`);
/// the simulator gives the same answer so that no recipe can lean on a kinder one.
///
/// Choices where etcd is loose:
/// - Sorting by a field other than the key breaks ties by key, ascending; `Descend` is the
///   exact reverse of `Ascend`. etcd's sort is not stable, so it promises no tie order.
/// - With `count_only`, `more` is false (no kvs were cut), as in etcd.
pub(super) fn respond<'a>(
    req: &RangeRequest,
    selected: impl Iterator<Item = &'a KeyValue>,
    header_revision: Revision,
) -> RangeResponse {
    let selected: Vec<&KeyValue> = selected.collect();
    let count = selected.len();
    let mut kvs: Vec<&KeyValue> = selected.into_iter().filter(|kv| passes_filters(req, kv)).collect();
    if let Some((target, order)) = req.sort {
        sort(&mut kvs, target, order);
    }
    let header = ResponseHeader { revision: header_revision };
    if req.count_only {
        return RangeResponse { header, kvs: Vec::new(), count, more: false };
    }
    let more = req.limit > 0 && kvs.len() > req.limit;
    if more {
        kvs.truncate(req.limit);
    }
    let kvs = kvs
        .into_iter()
        .map(|kv| match req.keys_only {
            true => KeyValue { value: String::new(), ..kv.clone() },
            false => kv.clone(),
        })
        .collect();
    RangeResponse { header, kvs, count, more }
}

/// etcd's WithMinCreateRev / WithMaxCreateRev; 0 means no bound.
fn passes_filters(req: &RangeRequest, kv: &KeyValue) -> bool {
    let above_min = req.min_create_revision == 0 || kv.create_revision >= req.min_create_revision;
    let below_max = req.max_create_revision == 0 || kv.create_revision <= req.max_create_revision;
    above_min && below_max
}

fn sort(kvs: &mut [&KeyValue], target: SortTarget, order: SortOrder) {
    kvs.sort_by(|a, b| by_target(target, a, b).then_with(|| a.key.cmp(&b.key)));
    if order == SortOrder::Descend {
        kvs.reverse();
    }
}

fn by_target(target: SortTarget, a: &KeyValue, b: &KeyValue) -> Ordering {
    match target {
        SortTarget::Key => a.key.cmp(&b.key),
        SortTarget::Version => a.version.cmp(&b.version),
        SortTarget::CreateRevision => a.create_revision.cmp(&b.create_revision),
        SortTarget::ModRevision => a.mod_revision.cmp(&b.mod_revision),
        SortTarget::Value => a.value.cmp(&b.value),
    }
}
