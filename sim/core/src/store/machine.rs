//! [`Store`]: the state machine every server applies the committed log to.

use serde::{Deserialize, Serialize};

use super::lease::LeaseTable;
use super::mvcc::KeySpace;
use super::txn_check;
use super::validate::{self, Readable};
use super::write::{Writer, Written};
use super::{
    Command, CommandResponse, DeleteRangeRequest, DeleteRangeResponse, Event, KeyRange, Lease, LeaseId, PutRequest,
    PutResponse, RangeRequest, RangeResponse, ResponseHeader, Revision, StoreError, TxnRequest, TxnResponse,
};

/// An etcd v3 style store: one global revision, a multi-version key space, a lease table.
///
/// Revision 1 is the empty store (etcd's first revision); the first write makes revision 2.
/// Requests that are rejected change nothing: every check runs before the first mutation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Store {
    revision: Revision,
    /// Reads and watches below this revision answer `Compacted`; 0 = never compacted.
    compact_revision: Revision,
    pub(super) kv: KeySpace,
    pub(super) leases: LeaseTable,
}

impl Default for Store {
    fn default() -> Self {
        Self::new()
    }
}

impl Store {
    pub fn new() -> Self {
        Store { revision: 1, compact_revision: 0, kv: KeySpace::default(), leases: LeaseTable::default() }
    }

    /// The revision of the newest write.
    pub fn revision(&self) -> Revision {
        self.revision
    }

    pub fn compact_revision(&self) -> Revision {
        self.compact_revision
    }

    pub fn lease(&self, id: LeaseId) -> Option<&Lease> {
        self.leases.get(id)
    }

    /// Every lease, in ID order.
    pub fn leases(&self) -> impl Iterator<Item = &Lease> {
        self.leases.iter()
    }

    /// Apply one committed log entry. Deterministic: the same state and command give the
    /// same new state and response on every server. A rejected command answers
    /// `CommandResponse::Error` and leaves the store exactly as it was.
    ///
    /// A write that changes the key space makes exactly one new revision, however many keys
    /// it touches; one that changes nothing (a delete matching nothing, a txn that only
    /// reads, a revoke of a lease without keys) makes none, and neither does a lease grant.
    ///
    /// Transactions (etcd `Txn`, with our choices where etcd leaves room):
    /// - every compare, nested ones included, reads the state before the transaction
    ///   (etcd `compareToPath`);
    /// - the chosen ops run in order; a range at revision 0 sees the earlier writes of the
    ///   same transaction, a range at an explicit revision reads committed history only;
    /// - each op response's header is the revision visible after that op (the new revision
    ///   once the transaction has written something), the txn header the revision after it;
    /// - two puts of one key, or a put and a delete covering it, in any execution the
    ///   transaction could take, reject it with `DuplicateKey` naming the smallest such key
    ///   (etcd `checkIntervals`; two overlapping deletes are allowed, as in etcd);
    /// - an unknown lease in a put, or an unreadable revision in a range, on the branches
    ///   that will run, rejects the whole transaction.
    pub fn apply(&mut self, cmd: &Command) -> CommandResponse {
        let result = match cmd {
            Command::Put(req) => self.put(req).map(CommandResponse::Put),
            Command::DeleteRange(req) => self.delete_range(req).map(CommandResponse::DeleteRange),
            Command::Txn(req) => self.txn(req).map(CommandResponse::Txn),
            Command::LeaseGrant { id, ttl_ms } => self.lease_grant(*id, *ttl_ms),
            Command::LeaseRevoke { id, reason: _ } => self.lease_revoke(*id),
            Command::Compact { revision } => self.compact(*revision),
            Command::LeaseCheckpoint { checkpoints } => {
                for (id, remaining_ms) in checkpoints {
                    self.leases.checkpoint(*id, *remaining_ms);
                }
                Ok(CommandResponse::LeaseCheckpoint { header: self.header() })
            }
            Command::Zk(write) => Ok(self.zk_write(write)),
        };
        result.unwrap_or_else(CommandResponse::Error)
    }

    /// Read `req.range` at `req.revision` (0 = current). The header carries the current
    /// revision whatever revision was read, as in etcd.
    pub fn range(&self, req: &RangeRequest) -> Result<RangeResponse, StoreError> {
        validate::range_shape(req)?;
        let at = self.readable().resolve(req.revision)?;
        let selected = self.kv.range_at(&req.range, at);
        Ok(super::query::respond(req, selected, self.revision))
    }

    /// Every change to a key in `range` at a revision `>= from`, in revision order and, within
    /// one revision, in the order the changes were applied: what a watch started at `from`
    /// receives. `from` 0 means "from the next revision", and a future `from` has nothing
    /// yet: both give the empty list. `prev_kv` attaches each key's value at the revision
    /// before the change (None when it did not exist then).
    ///
    /// Watching from exactly the compact revision is served in full, including a delete at
    /// that revision (etcd once dropped such a tombstone, see the "skip a watch event at the
    /// compaction boundary" bug switch; the fixed behaviour is this one).
    pub fn events(&self, range: &KeyRange, from: Revision, prev_kv: bool) -> Result<Vec<Event>, StoreError> {
        if from < 0 {
            let message = format!("watch from negative revision {from}");
            return Err(StoreError::InvalidRequest(message));
        }
        if from == 0 || from > self.revision {
            return Ok(Vec::new());
        }
        if from < self.compact_revision {
            return Err(StoreError::Compacted { requested: from, compact_revision: self.compact_revision });
        }
        Ok(self.kv.events(range, from, prev_kv))
    }

    fn readable(&self) -> Readable {
        Readable { current: self.revision, compact: self.compact_revision }
    }

    fn put(&mut self, req: &PutRequest) -> Result<PutResponse, StoreError> {
        validate::put_shape(req)?;
        validate::put_lease(req, &self.leases, &self.kv)?;
        Ok(self.write(|writer| writer.put(req)))
    }

    fn delete_range(&mut self, req: &DeleteRangeRequest) -> Result<DeleteRangeResponse, StoreError> {
        validate::delete_shape(req)?;
        Ok(self.write(|writer| writer.delete_range(req)))
    }

    /// See [`Store::apply`] for the rules; [`txn_check::plan`] checks the request and
    /// decides its branches before anything changes, `Writer::txn` runs them.
    fn txn(&mut self, req: &TxnRequest) -> Result<TxnResponse, StoreError> {
        let plan = txn_check::plan(req, &self.kv, &self.leases, self.readable())?;
        Ok(self.write(|writer| writer.txn(req, &plan)))
    }

    /// Leases are outside the key space: a grant does not bump the revision.
    fn lease_grant(&mut self, id: LeaseId, ttl_ms: u64) -> Result<CommandResponse, StoreError> {
        let id = self.leases.grant(id, ttl_ms)?;
        self.check_lease_granted(id);
        Ok(CommandResponse::LeaseGrant { header: self.header(), id, ttl_ms })
    }

    /// Deletes every key of the lease in one revision (none if it held no keys), then the
    /// lease. A client revoke and an expiry do exactly the same to the state.
    fn lease_revoke(&mut self, id: LeaseId) -> Result<CommandResponse, StoreError> {
        if !self.leases.contains(id) {
            return Err(StoreError::LeaseNotFound(id));
        }
        self.write(|writer| writer.revoke(id));
        self.check_lease_revoked(id);
        Ok(CommandResponse::LeaseRevoke { header: self.header() })
    }

    /// etcd Compact: a revision above the current one is in the future; one at or below the
    /// last compaction is already compacted. Header: the current revision.
    fn compact(&mut self, revision: Revision) -> Result<CommandResponse, StoreError> {
        if revision > self.revision {
            return Err(StoreError::FutureRevision { requested: revision, current: self.revision });
        }
        if revision <= self.compact_revision {
            return Err(StoreError::Compacted { requested: revision, compact_revision: self.compact_revision });
        }
        self.kv.compact(revision);
        self.compact_revision = revision;
        self.check_compacted();
        Ok(CommandResponse::Compact { header: self.header() })
    }

    /// A ZooKeeper write: planned on the current state by `crate::zk::tree`, then applied as
    /// one unconditional transaction (one revision: the write's zxid).
    fn zk_write(&mut self, write: &crate::zk::ZkWrite) -> CommandResponse {
        let result = crate::zk::tree::plan(self, write).map(|planned| {
            let response = self.txn(&planned.txn).expect("a planned ZooKeeper write is a valid transaction");
            assert!(response.succeeded, "a planned ZooKeeper write has no compares to fail");
            crate::zk::tree::results(self, write, &planned.created)
        });
        CommandResponse::Zk { header: self.header(), result }
    }

    /// Run `f` as one write request at the next revision, then commit the revision if
    /// anything changed and check what the write touched.
    fn write<R>(&mut self, f: impl FnOnce(&mut Writer<'_>) -> R) -> R {
        let before = self.revision;
        let mut writer = Writer::new(&mut self.kv, &mut self.leases, before);
        let response = f(&mut writer);
        let Written { changed, touched } = writer.finish();
        if changed {
            self.revision += 1;
        }
        self.check_write(before, &touched);
        response
    }

    fn header(&self) -> ResponseHeader {
        ResponseHeader { revision: self.revision }
    }
}
