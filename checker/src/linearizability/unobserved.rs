//! Dropping unknown-outcome puts that nothing could have observed, before the search.
//!
//! An operation whose outcome is unknown (Jepsen `:info`) stays open to the end of the history, so
//! the search may place it anywhere after its call: with many of them on one key the number of
//! (set, state) pairs grows as the subsets of those operations, and a correct 350-operation run
//! with 18 timed-out puts on one key ran past the 10 s limit (`swarm-follower-reads-without-read-index`
//! seed 8150, issue 21). Most such puts wrote a value no one ever read.
//!
//! **Rule.** An unknown `put(k, v)` called at `c` is dropped when
//! 1. nothing observes `v`: no known get of `k` returned `v`, and no transaction (known or not)
//!    compares `k` with `v`; and
//! 2. nothing that returned at or after `c` could tell `k` holding `v` from `k` holding what it
//!    held before: no known delete of `k` (it reports whether the key existed) and no known
//!    transaction that compares or reads `k` without both succeeding and comparing `k` with `v`.
//!
//! **Why the verdict is unchanged.** Dropping an operation only removes linearizations, so an
//! illegal history stays illegal. Conversely take a linearization `L` placing the put at `p`, and
//! remove the put. Only operations on `k` between `p` and the next write of `k` see a different
//! state (`k`'s previous value instead of `v`), and each of them is linearized after `p`, so it did
//! not return before `c` (real time). Among them a known get would have returned `v` (excluded by
//! 1); a known delete or a known transaction reading or comparing `k` is excluded by 2 (a
//! successful one comparing `k` with `v` is excluded by 1); an unknown transaction comparing `k`
//! with another value failed in `L` and left the state alone, so it may as well be placed last, as
//! any unknown operation may; an unknown put or delete overwrites `k` either way. Every other
//! operation sees the same state in `L` without the put, which is then a linearization too.

//!
//! **Unread values are one value.** Before that, every written value that no get returned and no
//! transaction compares with is replaced by one placeholder that equals none of those. The model
//! looks at a stored value only to compare it with a read's output or a compare's value, and an
//! unread value equals neither, so a key holding any of them behaves as holding any other:
//! every linearization of one history is one of the other. The search then meets fewer states,
//! and timed-out writes of unread values become twins (`symmetry.rs`) tried in one order.

use std::collections::{HashMap, HashSet};
use std::hash::Hash;

use super::models::{KvInput, KvOp, KvOutput};
use super::operation::Operation;

/// Replaces every written value of `operations` that nothing reads or compares with by
/// `placeholder` (see the module documentation); `placeholder` must be read or compared by none
/// of them (`None` back when it is). Returns how many writes were rewritten.
pub fn merge_unread_values<K, V: Clone + Eq + Hash>(
    operations: &mut [Operation<KvInput<K, V>, KvOutput<V>>],
    placeholder: &V,
) -> Option<usize> {
    let mut observed: HashSet<V> = HashSet::new();
    for op in operations.iter() {
        match &op.output {
            Some(KvOutput::Get(Some(v))) => {
                observed.insert(v.clone());
            }
            Some(KvOutput::Txn { gets, .. }) => observed.extend(gets.iter().flatten().cloned()),
            _ => {}
        }
        if let KvInput::Txn(txn) = &op.input {
            observed.extend(txn.compare.iter().filter_map(|c| c.value.clone()));
        }
    }
    if observed.contains(placeholder) {
        return None;
    }
    let mut rewritten = 0;
    let mut rewrite = |write: &mut KvOp<K, V>| {
        if let KvOp::Put(_, v) = write
            && !observed.contains(v)
            && v != placeholder
        {
            *v = placeholder.clone();
            rewritten += 1;
        }
    };
    for op in operations.iter_mut() {
        match &mut op.input {
            KvInput::Op(write) => rewrite(write),
            KvInput::Txn(txn) => txn.success.iter_mut().chain(txn.failure.iter_mut()).for_each(&mut rewrite),
        }
    }
    Some(rewritten)
}

/// Removes the unknown puts of `operations` that the rule above drops; returns how many. One pass
/// to index what observes each key and value, one to drop: linear in the history.
pub fn drop_unobserved_puts<K: Clone + Eq + Hash, V: Clone + Eq + Hash>(
    operations: &mut Vec<Operation<KvInput<K, V>, KvOutput<V>>>,
) -> usize {
    // Rule 1: (key, value) pairs a known get returned or a transaction compares with.
    let mut observed: HashSet<(K, V)> = HashSet::new();
    // Rule 2: per key, the latest return of a known delete, or of a known transaction that
    // compares or reads the key.
    let mut latest_tell: HashMap<K, u64> = HashMap::new();
    let mut tell = |key: &K, return_ns: u64| {
        let latest = latest_tell.entry(key.clone()).or_insert(return_ns);
        *latest = (*latest).max(return_ns);
    };
    for op in operations.iter() {
        let known = op.output.is_some();
        match &op.input {
            KvInput::Op(KvOp::Get(key)) => {
                if let Some(KvOutput::Get(Some(v))) = &op.output {
                    observed.insert((key.clone(), v.clone()));
                }
            }
            KvInput::Op(KvOp::Delete(key)) if known => tell(key, op.return_ns),
            KvInput::Op(_) => {}
            KvInput::Txn(txn) => {
                for compare in &txn.compare {
                    if let Some(v) = &compare.value {
                        observed.insert((compare.key.clone(), v.clone()));
                    }
                    if known {
                        tell(&compare.key, op.return_ns);
                    }
                }
                for branch_op in txn.success.iter().chain(&txn.failure) {
                    if let (KvOp::Get(key) | KvOp::Delete(key), true) = (branch_op, known) {
                        tell(key, op.return_ns);
                    }
                }
            }
        }
    }
    let before = operations.len();
    operations.retain(|op| match (&op.input, &op.output) {
        (KvInput::Op(KvOp::Put(key, value)), None) => {
            let seen = observed.contains(&(key.clone(), value.clone()));
            let told = latest_tell.get(key).is_some_and(|&latest| latest >= op.call_ns);
            seen || told
        }
        _ => true,
    });
    before - operations.len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::linearizability::models::{KvModel, Txn, TxnCompare};
    use crate::linearizability::{CheckOptions, RETURN_NEVER, Verdict, check};

    type Op = Operation<KvInput<&'static str, &'static str>, KvOutput<&'static str>>;

    fn op(
        id: u64,
        call_ns: u64,
        return_ns: u64,
        input: KvInput<&'static str, &'static str>,
        output: Option<KvOutput<&'static str>>,
    ) -> Op {
        let return_ns = if output.is_none() { RETURN_NEVER } else { return_ns };
        Operation { id, client: id, input, output, call_ns, return_ns }
    }
    fn put(id: u64, at: u64, to: u64, v: &'static str, known: bool) -> Op {
        op(id, at, to, KvInput::Op(KvOp::Put("k", v)), known.then_some(KvOutput::Done))
    }
    fn get(id: u64, at: u64, to: u64, v: Option<&'static str>) -> Op {
        op(id, at, to, KvInput::Op(KvOp::Get("k")), Some(KvOutput::Get(v)))
    }
    fn cas(id: u64, at: u64, to: u64, expected: &'static str, new: &'static str, swapped: Option<bool>) -> Op {
        let txn = Txn {
            compare: vec![TxnCompare { key: "k", value: Some(expected) }],
            success: vec![KvOp::Put("k", new)],
            failure: Vec::new(),
        };
        op(id, at, to, KvInput::Txn(txn), swapped.map(|succeeded| KvOutput::Txn { succeeded, gets: Vec::new() }))
    }
    fn verdict(ops: &[Op]) -> Verdict {
        check(&KvModel::<&str, &str>::new(), ops, &CheckOptions::default()).unwrap()
    }

    #[test]
    fn an_unknown_put_no_one_read_is_dropped_and_one_that_was_read_is_kept() {
        let mut ops = vec![
            put(1, 0, 10, "a", true),
            put(2, 20, 0, "b", false),
            put(3, 30, 0, "c", false),
            get(4, 40, 50, Some("c")),
        ];
        assert_eq!(drop_unobserved_puts(&mut ops), 1);
        assert_eq!(ops.iter().map(|o| o.id).collect::<Vec<_>>(), [1, 3, 4]);
        assert!(matches!(verdict(&ops), Verdict::Ok));
    }

    #[test]
    fn an_unknown_put_that_explains_a_failed_cas_is_kept() {
        // k = a; an unknown put of b; a cas(a -> z) that failed: only the put explains the failure.
        let mut ops = vec![put(1, 0, 10, "a", true), put(2, 20, 0, "b", false), cas(3, 30, 40, "a", "z", Some(false))];
        assert!(matches!(verdict(&ops), Verdict::Ok));
        assert_eq!(drop_unobserved_puts(&mut ops), 0);
        // A failed cas that returned before the put was called cannot be explained by it.
        let mut early =
            vec![put(1, 0, 10, "a", true), cas(3, 12, 15, "a", "z", Some(false)), put(2, 20, 0, "b", false)];
        assert_eq!(drop_unobserved_puts(&mut early), 1);
        assert!(matches!(verdict(&early), Verdict::Illegal(_)));
    }

    #[test]
    fn an_unknown_put_that_a_delete_or_a_cas_on_its_value_could_see_is_kept() {
        let mut deleted = vec![
            put(2, 20, 0, "b", false),
            op(3, 30, 40, KvInput::Op(KvOp::Delete("k")), Some(KvOutput::Deleted { existed: true })),
        ];
        assert_eq!(drop_unobserved_puts(&mut deleted), 0);
        let mut compared = vec![put(2, 20, 0, "b", false), cas(3, 30, 0, "b", "c", None), get(4, 40, 50, Some("c"))];
        assert_eq!(drop_unobserved_puts(&mut compared), 0);
        assert!(matches!(verdict(&compared), Verdict::Ok));
    }

    #[test]
    fn unread_values_become_one_and_read_ones_stay() {
        let mut ops = vec![
            put(1, 0, 10, "a", true),
            put(2, 20, 0, "b", false),
            put(3, 30, 0, "c", false),
            get(4, 40, 50, Some("a")),
        ];
        assert_eq!(merge_unread_values(&mut ops, &"?"), Some(2));
        let values: Vec<_> = ops
            .iter()
            .filter_map(|o| match &o.input {
                KvInput::Op(KvOp::Put(_, v)) => Some(*v),
                _ => None,
            })
            .collect();
        assert_eq!(values, ["a", "?", "?"]);
        assert!(matches!(verdict(&ops), Verdict::Ok));
        // A placeholder that a read returns is refused.
        assert_eq!(merge_unread_values(&mut ops, &"a"), None);
    }

    #[test]
    fn an_illegal_history_stays_illegal() {
        // A stale read after a known write, with unread unknown puts around it.
        let mut ops = vec![
            put(1, 0, 10, "a", true),
            put(2, 20, 30, "b", true),
            put(3, 25, 0, "x", false),
            get(4, 40, 50, Some("a")),
            put(5, 60, 0, "y", false),
        ];
        assert!(matches!(verdict(&ops), Verdict::Illegal(_)));
        assert_eq!(drop_unobserved_puts(&mut ops), 2);
        assert!(matches!(verdict(&ops), Verdict::Illegal(_)));
    }
}
