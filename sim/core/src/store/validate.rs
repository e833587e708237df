//! Checks a single request must pass before it may change anything. Each returns the error
//! the store answers with; none of them mutates.

use super::lease::LeaseTable;
use super::mvcc::KeySpace;
use super::{DeleteRangeRequest, KeyRange, PutRequest, RangeRequest, Revision, StoreError};

/// The revisions a read may name, given the store's current and compact revisions.
#[derive(Clone, Copy, Debug)]
pub(super) struct Readable {
    pub current: Revision,
    pub compact: Revision,
}

impl Readable {
    /// The revision to read at for a requested one (0 = current). etcd: a revision below the
    /// compact revision is compacted; the compact revision itself is still readable.
    pub fn resolve(self, requested: Revision) -> Result<Revision, StoreError> {
        if requested < 0 {
            return Err(invalid(format!("negative revision {requested}")));
        }
        if requested == 0 {
            return Ok(self.current);
        }
        if requested > self.current {
            return Err(StoreError::FutureRevision { requested, current: self.current });
        }
        if requested < self.compact {
            return Err(StoreError::Compacted { requested, compact_revision: self.compact });
        }
        Ok(requested)
    }
}

/// Shape checks that need no state (etcd `checkPutRequest`: "key is not provided").
pub(super) fn put_shape(req: &PutRequest) -> Result<(), StoreError> {
    if req.key.is_empty() {
        return Err(invalid("put with an empty key".to_owned()));
    }
    // etcd ErrLeaseProvided: "keep the lease" and "this lease" contradict each other.
    if req.ignore_lease && req.lease != 0 {
        return Err(invalid(format!("put of {:?} with ignore_lease names lease {}", req.key, req.lease)));
    }
    Ok(())
}

/// etcd rejects a put naming a lease it does not know (ErrLeaseNotFound), and a put that keeps
/// the lease of a key that does not exist (ErrKeyNotFound).
pub(super) fn put_lease(req: &PutRequest, leases: &LeaseTable, kv: &KeySpace) -> Result<(), StoreError> {
    if req.ignore_lease && kv.latest(&req.key).is_none() {
        return Err(StoreError::KeyNotFound(req.key.clone()));
    }
    match req.lease == 0 || leases.contains(req.lease) {
        true => Ok(()),
        false => Err(StoreError::LeaseNotFound(req.lease)),
    }
}

pub(super) fn range_shape(req: &RangeRequest) -> Result<(), StoreError> {
    key_range(&req.range)
}

pub(super) fn delete_shape(req: &DeleteRangeRequest) -> Result<(), StoreError> {
    key_range(&req.range)
}

/// etcd rejects an empty key ("key is not provided"); its "every key" spelling is a
/// `Prefix("")` or `FromKey("")` here.
fn key_range(range: &KeyRange) -> Result<(), StoreError> {
    match range {
        KeyRange::Key(key) if key.is_empty() => Err(invalid("empty key".to_owned())),
        _ => Ok(()),
    }
}

fn invalid(message: String) -> StoreError {
    StoreError::InvalidRequest(message)
}
