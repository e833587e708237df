//! Linearizability checking: does a concurrent history of operations on a shared object have a
//! sequential explanation that respects real time?
//!
//! A history is linearizable with respect to a sequential [`Model`] when its operations can be put in
//! one total order such that (1) an operation that returned before another was called comes first
//! (real time) and (2) running the model through that order accepts every operation with the output
//! it was observed to give (Herlihy & Wing 1990).
//!
//! # Algorithm
//!
//! - **Search** (Wing & Gong 1993, "Testing and verifying concurrent objects"): repeatedly pick an
//!   operation that may go next — one whose call precedes the earliest return among the operations
//!   not yet linearized — step the model with it, and backtrack when an operation's return is reached
//!   before it was linearized. `engine.rs` keeps the call and return entries in a doubly linked list
//!   so that linearizing an operation unlinks its two entries in O(1) and backtracking relinks them
//!   (the just-in-time linearization of Lowe 2017, also used by Porcupine).
//! - **Memoisation** (Lowe 2017, "Testing for linearizability", CCPE 29(4)): two search paths that
//!   linearized the same *set* of operations and reached the same model state have the same future,
//!   so the search records every (set, state) pair it enters and never enters one twice. The set is a
//!   bitset whose hash is maintained incrementally (a Zobrist hash: one fixed random word per bit,
//!   XOR-ed in and out); states are interned to small ids, so a pair is a few machine words stored
//!   inline in an open-addressing table and a probe usually touches one cache line (`cache.rs`).
//! - **P-compositionality** (Horn & Kroening 2015, "Faster linearizability checking via
//!   P-compositionality"): linearizability is local, so when a model splits a history into
//!   independent parts (e.g. one part per key) each part is checked on its own — parts run in
//!   parallel with rayon and the whole history is illegal as soon as one part is.
//! - **Symmetry** (ours): operations with equal inputs and outputs whose intervals are nested in
//!   call and return order are interchangeable, so only one of their orders is tried (see
//!   `symmetry.rs` for the argument). Jepsen histories are full of them.
//! - **Unknown outcomes**: an operation whose output is `None` (Jepsen `:info`: the client timed out
//!   or crashed) may have taken effect at any time after its call, or never. It stays open to the
//!   end of the history; placing it after everything else is the same as "it never happened",
//!   because nothing can observe it there. A failed operation (Jepsen `:fail`) did not take effect
//!   and carries no information: importers drop it before checking, and [`Operation`] has no way to
//!   express it.
//! - **Unread values and unobserved unknown puts** (ours): written values that nothing reads or
//!   compares with are merged into one, and an unknown put of such a value with nothing after its
//!   call that could tell it happened is dropped, before the search (`unobserved.rs` gives the
//!   rules and why they keep the verdict); coordsim's histories get both, imports neither yet.
//! - **Compact sets** (ours): operations that returned are numbered by call and those open to the
//!   end after them, so a cache entry stores the linearized set as the word index of its first
//!   unlinearized operation and the few words from there to its last linearized one (`bitset.rs`
//!   says why that span is bounded by one operation's concurrency). An entry then costs a few
//!   words at any history length, where a whole bitset costs one bit per operation: 1,000,000
//!   operations at 5 clients check in about a second and 300 MB, where whole bitsets run out of
//!   a gigabyte at 30,000 operations and 10 clients.
//! - **Limits**: a time limit and a memory limit (the bytes held by all partitions' searches:
//!   caches, states, entry lists, undo stacks, charged before a table grows); past either the
//!   verdict is [`Verdict::Unknown`], never a hang or an abort. The search polls the clock every
//!   1024 steps, well under a millisecond.
//!
//! Models are deterministic: `step` returns one next state (Porcupine's nondeterministic models are
//! not supported; an unknown outcome is handled by the search, not by the model).
//!
//! Porcupine (Athalye, github.com/anishathalye/porcupine) is the design reference for the model
//! interface and the shape of the search; this is an independent implementation.
//!
//! # Determinism
//!
//! The search order depends only on the history (entries are sorted by time, then calls before
//! returns, then operation id); the cache is a hash set used only for membership. So an `Ok` or
//! `Illegal` verdict and its counterexample are the same on every run, with or without parallelism:
//! the reported failure is the failing partition with the lowest index (partitions are ordered by
//! their smallest operation id). Only `Unknown` depends on the machine's speed.

mod bitset;
mod budget;
mod cache;
mod check;
mod engine;
mod entries;
mod history_kv;
mod model;
pub mod models;
mod operation;
pub mod partition;
mod symmetry;
mod unobserved;
mod verdict;

pub use check::{CheckStats, PartOutcome, PartVerdict, check, check_with_stats};
pub use history_kv::{HistoryKvModel, HistoryKvOperation, KvHistory, from_history};
pub use model::Model;
pub use operation::{HistoryError, OpId, Operation, RETURN_NEVER};
pub use unobserved::{drop_unobserved_puts, merge_unread_values};
pub use verdict::{CheckOptions, Counterexample, StuckOperation, UnknownReason, Verdict};
