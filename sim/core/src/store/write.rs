//! Applying the changes of one accepted write request.
//!
//! Every change of the request is recorded at the pending revision `base + 1`, numbered in
//! application order. The store's revision moves to the pending one only at the end, and
//! only if something changed: etcd spends a revision per write request that changes the
//! key space, however many keys it touches, and none on one that changes nothing.
//!
//! Nothing here can fail: the request was validated (and its branches decided) before the
//! writer was made. Broken expectations are invariant violations and panic.

use super::lease::LeaseTable;
use super::mvcc::{Change, KeySpace};
use super::query;
use super::txn_check::{TxnPlan, branch};
use super::{
    DeleteRangeRequest, DeleteRangeResponse, KeyValue, LeaseId, PutRequest, PutResponse, RangeRequest, RangeResponse,
    ResponseHeader, Revision, TxnOp, TxnOpResponse, TxnRequest, TxnResponse,
};

pub(super) struct Writer<'s> {
    kv: &'s mut KeySpace,
    leases: &'s mut LeaseTable,
    /// The store revision before this request.
    base: Revision,
    /// Changes recorded so far.
    changes: u32,
    /// Each changed key with the lease it had before the change, for the post-write checks.
    touched: Vec<(String, LeaseId)>,
}

/// What a finished write did.
pub(super) struct Written {
    pub changed: bool,
    pub touched: Vec<(String, LeaseId)>,
}

impl<'s> Writer<'s> {
    pub fn new(kv: &'s mut KeySpace, leases: &'s mut LeaseTable, base: Revision) -> Self {
        Writer { kv, leases, base, changes: 0, touched: Vec::new() }
    }

    pub fn finish(self) -> Written {
        Written { changed: self.changes > 0, touched: self.touched }
    }

    /// The revision this request's changes are recorded at.
    fn pending(&self) -> Revision {
        self.base + 1
    }

    /// The revision a reader sees at this point of the request: the pending one once
    /// something has changed. Every response header inside a request reports this.
    pub fn visible(&self) -> Revision {
        match self.changes {
            0 => self.base,
            _ => self.pending(),
        }
    }

    /// etcd Put: create (version 1, create_revision = mod_revision = the new revision) or
    /// update (version + 1, create_revision kept), and move the key to the requested lease
    /// (or keep its lease with `ignore_lease`).
    pub fn put(&mut self, req: &PutRequest) -> PutResponse {
        let revision = self.pending();
        let prev = self.kv.latest(&req.key).cloned();
        let (create_revision, version) = match &prev {
            Some(prev) => (prev.create_revision, prev.version + 1),
            None => (revision, 1),
        };
        let prev_lease = prev.as_ref().map_or(0, |prev| prev.lease);
        let lease = if req.ignore_lease { prev_lease } else { req.lease };
        let kv = KeyValue {
            key: req.key.clone(),
            value: req.value.clone(),
            create_revision,
            mod_revision: revision,
            version,
            lease,
        };
        self.leases.move_key(&req.key, prev_lease, lease);
        self.record(&req.key, Some(kv), prev_lease);
        PutResponse { header: ResponseHeader { revision }, prev_kv: prev.filter(|_| req.prev_kv) }
    }

    /// etcd DeleteRange: tombstone every live key in the range (as this request has left
    /// it so far), detaching each from its lease.
    pub fn delete_range(&mut self, req: &DeleteRangeRequest) -> DeleteRangeResponse {
        let doomed: Vec<KeyValue> = self.kv.range_at(&req.range, self.pending()).cloned().collect();
        for kv in &doomed {
            self.delete_key(&kv.key, kv.lease);
        }
        DeleteRangeResponse {
            header: ResponseHeader { revision: self.visible() },
            deleted: doomed.len(),
            prev_kvs: match req.prev_kv {
                true => doomed,
                false => Vec::new(),
            },
        }
    }

    /// etcd LeaseRevoke: delete the lease's keys in key order, then the lease.
    pub fn revoke(&mut self, id: LeaseId) {
        let lease = self.leases.get(id).expect("revoked lease was validated");
        let keys: Vec<String> = lease.keys.iter().cloned().collect();
        for key in &keys {
            self.delete_key(key, id);
        }
        self.leases.remove(id);
    }

    /// A range inside a transaction. Revision 0 reads the state as the transaction has left
    /// it so far (etcd: a write txn's range sees its earlier writes); an explicit revision
    /// (validated to be at most the pre-transaction revision) reads committed history, which
    /// this transaction's writes are not part of yet.
    fn range(&self, req: &RangeRequest) -> RangeResponse {
        let at = match req.revision {
            0 => self.pending(),
            revision => revision,
        };
        query::respond(req, self.kv.range_at(&req.range, at), self.visible())
    }

    /// Run the branches `plan` chose, ops in order, each seeing the earlier ones' effects.
    pub fn txn(&mut self, req: &TxnRequest, plan: &TxnPlan) -> TxnResponse {
        let mut nested = plan.nested.iter();
        let mut responses = Vec::new();
        for op in branch(req, plan.succeeded) {
            let response = match op {
                TxnOp::Range(range) => TxnOpResponse::Range(self.range(range)),
                TxnOp::Put(put) => TxnOpResponse::Put(self.put(put)),
                TxnOp::DeleteRange(delete) => TxnOpResponse::DeleteRange(self.delete_range(delete)),
                TxnOp::Txn(txn) => {
                    let plan = nested.next().expect("one plan per nested transaction");
                    TxnOpResponse::Txn(self.txn(txn, plan))
                }
            };
            responses.push(response);
        }
        TxnResponse { header: ResponseHeader { revision: self.visible() }, succeeded: plan.succeeded, responses }
    }

    fn delete_key(&mut self, key: &str, lease: LeaseId) {
        self.leases.move_key(key, lease, 0);
        self.record(key, None, lease);
    }

    fn record(&mut self, key: &str, kv: Option<KeyValue>, prev_lease: LeaseId) {
        let change = Change { revision: self.pending(), kv };
        self.kv.record(key, change);
        self.changes += 1;
        self.touched.push((key.to_owned(), prev_lease));
    }
}
