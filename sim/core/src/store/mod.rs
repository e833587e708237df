//! The replicated state machine: an etcd-style MVCC key-value store with leases.
//!
//! Sans-IO and deterministic: `apply` is a pure function of the state and the command; no
//! clock, no randomness, `BTreeMap` everywhere order can leak out. Every server applies the
//! same committed log and so reaches the same state.
//!
//! The parts, one job each:
//! - `machine`: [`Store`], the public face: `apply` one log entry, `range`, `events`.
//! - `mvcc`: the history of every key, so reads and watches at past revisions are exact.
//! - `lease`: the lease table (which keys each lease holds).
//! - `validate` and `txn_check`: every check a request must pass *before* it may touch the
//!   state, so a rejected request leaves the store unchanged.
//! - `write`: applies an accepted request's changes at the next revision.
//! - `query`: shapes a range response (filters, sort, limit).
//! - `compare`: evaluates a transaction compare.
//! - `invariants`: assertions over the whole state.

mod compare;
mod invariants;
mod key_range;
mod lease;
mod machine;
mod mvcc;
mod query;
mod txn_check;
mod types;
mod validate;
mod write;

#[cfg(test)]
mod reference_tests;
#[cfg(test)]
mod tests;

pub use machine::Store;
pub use types::*;
