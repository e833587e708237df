//! The lease table as the replicated state knows it: which leases exist and which keys each
//! holds. A lease is a handle with a TTL; keys attached to it are deleted when it is revoked
//! (by a client, or by the leader's lessor when the TTL runs out). Deadlines are not kept
//! here: expiry is decided on the leader's clock and arrives as a `LeaseRevoke` command.
//!
//! As in etcd, leases live outside the MVCC key space: granting one does not bump the store
//! revision, and the table has no history.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::{Lease, LeaseId, StoreError};

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct LeaseTable {
    leases: BTreeMap<LeaseId, Lease>,
    /// Where the search for a store-chosen ID starts. It only moves forward, so a revoked
    /// lease's ID is never handed out again by the store (a stale client holding it then
    /// gets `LeaseNotFound`, not someone else's lease).
    next_id: LeaseId,
}

impl Default for LeaseTable {
    fn default() -> Self {
        LeaseTable { leases: BTreeMap::new(), next_id: 1 }
    }
}

impl LeaseTable {
    pub fn get(&self, id: LeaseId) -> Option<&Lease> {
        self.leases.get(&id)
    }

    pub fn contains(&self, id: LeaseId) -> bool {
        self.leases.contains_key(&id)
    }

    /// In ID order.
    pub fn iter(&self) -> impl Iterator<Item = &Lease> {
        self.leases.values()
    }

    pub fn next_id(&self) -> LeaseId {
        self.next_id
    }

    /// The ID a grant of `id` would create, or why it must be rejected. Pure, so the caller
    /// can validate before it changes anything.
    pub fn check_grant(&self, id: LeaseId, ttl_ms: u64) -> Result<LeaseId, StoreError> {
        if ttl_ms == 0 {
            return Err(StoreError::InvalidTtl);
        }
        if id != 0 {
            return match self.contains(id) {
                true => Err(StoreError::LeaseExists(id)),
                false => Ok(id),
            };
        }
        let mut candidate = self.next_id;
        while self.contains(candidate) {
            candidate += 1;
        }
        Ok(candidate)
    }

    /// Create a lease with no keys (etcd LeaseGrant).
    pub fn grant(&mut self, id: LeaseId, ttl_ms: u64) -> Result<LeaseId, StoreError> {
        let granted = self.check_grant(id, ttl_ms)?;
        if id == 0 {
            self.next_id = granted + 1;
        }
        let lease = Lease { id: granted, ttl_ms, keys: BTreeSet::new(), remaining_ms: None };
        self.leases.insert(granted, lease);
        Ok(granted)
    }

    /// Record a checkpointed remaining TTL (0 clears it: a full TTL, as etcd's zero value is
    /// unset); false if the lease does not exist.
    pub fn checkpoint(&mut self, id: LeaseId, remaining_ms: u64) -> bool {
        match self.leases.get_mut(&id) {
            Some(lease) => {
                lease.remaining_ms = (remaining_ms > 0).then(|| remaining_ms.min(lease.ttl_ms));
                true
            }
            None => false,
        }
    }

    /// Remove the lease; its keys must already be gone.
    pub fn remove(&mut self, id: LeaseId) {
        let lease = self.leases.remove(&id).expect("revoked lease exists");
        assert!(lease.keys.is_empty(), "lease {id} removed while it still holds keys {:?}", lease.keys);
    }

    /// Move `key` from lease `from` to lease `to` (0 = none). Both were validated to exist.
    pub fn move_key(&mut self, key: &str, from: LeaseId, to: LeaseId) {
        if from == to {
            return;
        }
        if from != 0 {
            let lease = self.leases.get_mut(&from).expect("a key's lease exists");
            let removed = lease.keys.remove(key);
            assert!(removed, "key {key:?} was not in its lease {from}");
        }
        if to != 0 {
            let lease = self.leases.get_mut(&to).expect("lease validated before the write");
            lease.keys.insert(key.to_owned());
        }
    }
}
