//! The replicated state machine: an etcd-style MVCC key-value store with leases.
//!
//! Sans-IO and deterministic: `apply` is a pure function of the state and the command; no
//! clock, no randomness, `BTreeMap` everywhere order can leak out. Every server applies the
//! same committed log and so reaches the same state.

mod types;

pub use types::*;
