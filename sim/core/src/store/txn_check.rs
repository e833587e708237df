//! Everything a transaction must pass before any of it runs, and the branch each (nested)
//! transaction takes. etcd does the same up front: `checkTxnRequest` and `checkIntervals` in
//! the gRPC layer, then `compareToPath` and `checkTxn` in the applier.
//!
//! Deciding all branches before the first write is etcd's rule, and it is what makes a
//! rejected transaction leave the store untouched: once the plan is made and checked,
//! executing it cannot fail.

use std::collections::BTreeSet;

use super::compare::holds;
use super::lease::LeaseTable;
use super::mvcc::KeySpace;
use super::validate::{self, Readable};
use super::{KeyRange, StoreError, TxnOp, TxnRequest};

/// At most this many compares, and this many ops per branch (etcd's `--max-txn-ops` default).
pub(super) const TXN_OPS_MAX: usize = 128;
/// At most this depth of nested transactions, the top one being depth 1. etcd has no such
/// limit (its gRPC message size bounds it); here it bounds the recursion of every pass.
pub(super) const TXN_DEPTH_MAX: usize = 8;

/// The branch a transaction takes and, for every nested transaction in that branch (in op
/// order), its own plan.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct TxnPlan {
    pub succeeded: bool,
    pub nested: Vec<TxnPlan>,
}

/// The ops a transaction runs when its compares came out `succeeded`.
pub(super) fn branch(req: &TxnRequest, succeeded: bool) -> &[TxnOp] {
    match succeeded {
        true => &req.success,
        false => &req.failure,
    }
}

/// Check `req` against the state it will run on and decide its branches.
///
/// The checks, in order (the first failure is the answer):
/// 1. shape, in both branches at every depth: limits, no empty keys;
/// 2. no key written twice, in both branches at every depth ([`duplicate_writes`]);
/// 3. along the branches that will run: every put's lease exists, every range's revision is
///    readable (against the revision before the transaction).
///
/// Every compare, nested ones included, reads the state before the transaction (etcd
/// `compareToPath` runs before the first op).
pub(super) fn plan(
    req: &TxnRequest,
    kv: &KeySpace,
    leases: &LeaseTable,
    readable: Readable,
) -> Result<TxnPlan, StoreError> {
    shape(req, 1)?;
    if let Some(key) = duplicate_writes(req) {
        return Err(StoreError::DuplicateKey(key));
    }
    let plan = choose(req, kv);
    check_path(req, &plan, leases, kv, readable)?;
    Ok(plan)
}

fn shape(req: &TxnRequest, depth: usize) -> Result<(), StoreError> {
    if depth > TXN_DEPTH_MAX {
        return Err(invalid(format!("transactions nested deeper than {TXN_DEPTH_MAX}")));
    }
    let longest = req.compare.len().max(req.success.len()).max(req.failure.len());
    if longest > TXN_OPS_MAX {
        return Err(invalid(format!("{longest} compares or ops in one transaction list, more than {TXN_OPS_MAX}")));
    }
    for op in req.success.iter().chain(&req.failure) {
        match op {
            TxnOp::Range(r) => validate::range_shape(r)?,
            TxnOp::Put(p) => validate::put_shape(p)?,
            TxnOp::DeleteRange(d) => validate::delete_shape(d)?,
            TxnOp::Txn(t) => shape(t, depth + 1)?,
        }
    }
    Ok(())
}

/// The smallest key two writes of one possible execution both touch, if any: two puts of
/// one key, or a put of a key that a delete range covers (etcd `checkIntervals`, which
/// rejects these up front with ErrDuplicateKey whichever branch will run). Two deletes may
/// overlap, as in etcd: the second simply finds the key already gone. The success and
/// failure branches of one transaction never run together, so they may write the same key.
fn duplicate_writes(req: &TxnRequest) -> Option<String> {
    let mut conflicts = BTreeSet::new();
    branch_writes(&req.success, &mut conflicts);
    branch_writes(&req.failure, &mut conflicts);
    conflicts.first().map(|key| (*key).to_owned())
}

/// The writes one op list may make; conflicts found inside it are added to `conflicts`.
fn branch_writes<'a>(ops: &'a [TxnOp], conflicts: &mut BTreeSet<&'a str>) -> Writes<'a> {
    let mut all = Writes::default();
    for op in ops {
        match op {
            TxnOp::Range(_) => {}
            TxnOp::Put(put) => {
                let put = Writes { puts: BTreeSet::from([put.key.as_str()]), deletes: Vec::new() };
                all.add(put, conflicts);
            }
            TxnOp::DeleteRange(delete) => {
                let delete = Writes { puts: BTreeSet::new(), deletes: vec![&delete.range] };
                all.add(delete, conflicts);
            }
            TxnOp::Txn(txn) => {
                // Either branch may run after what came before, never both.
                let then = branch_writes(&txn.success, conflicts);
                let otherwise = branch_writes(&txn.failure, conflicts);
                all.find_conflicts(&otherwise, conflicts);
                all.add(then, conflicts);
                all.merge(otherwise);
            }
        }
    }
    all
}

#[derive(Default)]
struct Writes<'a> {
    puts: BTreeSet<&'a str>,
    deletes: Vec<&'a KeyRange>,
}

impl<'a> Writes<'a> {
    fn add(&mut self, other: Writes<'a>, conflicts: &mut BTreeSet<&'a str>) {
        self.find_conflicts(&other, conflicts);
        self.merge(other);
    }

    fn merge(&mut self, other: Writes<'a>) {
        self.puts.extend(other.puts);
        self.deletes.extend(other.deletes);
    }

    /// Keys written by both `self` and `other`, when the two run in one execution.
    fn find_conflicts(&self, other: &Writes<'a>, conflicts: &mut BTreeSet<&'a str>) {
        for &put in &other.puts {
            let deleted = self.deletes.iter().any(|range| range.contains(put));
            if self.puts.contains(put) || deleted {
                conflicts.insert(put);
            }
        }
        for &put in &self.puts {
            if other.deletes.iter().any(|range| range.contains(put)) {
                conflicts.insert(put);
            }
        }
    }
}

/// Evaluate the compares of `req` and of every nested transaction on the branch taken,
/// all against the current (pre-transaction) state.
fn choose(req: &TxnRequest, kv: &KeySpace) -> TxnPlan {
    let succeeded = req.compare.iter().all(|c| holds(c, kv.latest(&c.key)));
    let nested = branch(req, succeeded)
        .iter()
        .filter_map(|op| match op {
            TxnOp::Txn(txn) => Some(choose(txn, kv)),
            _ => None,
        })
        .collect();
    TxnPlan { succeeded, nested }
}

/// The state-dependent checks along the branches `plan` takes (etcd `checkTxn`).
fn check_path(
    req: &TxnRequest,
    plan: &TxnPlan,
    leases: &LeaseTable,
    kv: &KeySpace,
    readable: Readable,
) -> Result<(), StoreError> {
    let mut nested = plan.nested.iter();
    for op in branch(req, plan.succeeded) {
        match op {
            TxnOp::Range(range) => readable.resolve(range.revision).map(drop)?,
            // Keys are read as before the txn: a put after a delete or a put of the same key in
            // one txn is a DuplicateKey anyway.
            TxnOp::Put(put) => validate::put_lease(put, leases, kv)?,
            TxnOp::DeleteRange(_) => {}
            TxnOp::Txn(txn) => {
                let plan = nested.next().expect("one plan per nested transaction");
                check_path(txn, plan, leases, kv, readable)?;
            }
        }
    }
    Ok(())
}

fn invalid(message: String) -> StoreError {
    StoreError::InvalidRequest(message)
}
