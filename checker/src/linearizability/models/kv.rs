//! A key-value map with get, put, delete and etcd-style transactions (compare, then one branch).

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::hash::Hash;
use std::marker::PhantomData;

use crate::linearizability::model::Model;
use crate::linearizability::operation::Operation;
use crate::linearizability::partition;

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum KvOp<K, V> {
    Get(K),
    Put(K, V),
    Delete(K),
}

/// Holds when `key`'s value equals `value` (`None`: the key is absent).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TxnCompare<K, V> {
    pub key: K,
    pub value: Option<V>,
}

/// If every compare holds, run `success`, else `failure`; atomically.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Txn<K, V> {
    pub compare: Vec<TxnCompare<K, V>>,
    pub success: Vec<KvOp<K, V>>,
    pub failure: Vec<KvOp<K, V>>,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum KvInput<K, V> {
    Op(KvOp<K, V>),
    Txn(Txn<K, V>),
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum KvOutput<V> {
    /// A get's value, `None` if absent.
    Get(Option<V>),
    /// A put or delete completed.
    Done,
    /// A delete completed and says whether the key existed (etcd's `deleted` count, 1 or 0).
    Deleted { existed: bool },
    /// Which branch ran, and the values its gets returned, in order.
    Txn { succeeded: bool, gets: Vec<Option<V>> },
}

/// The state is the whole map (absent keys are not stored).
///
/// Partitioning (P-compositionality): operations are grouped by the keys they touch, and a
/// transaction that touches several keys puts all of them in one group, transitively (see
/// [`partition::by_keys`]). Without multi-key transactions every key is checked on its own; in the
/// worst case (transactions linking every key) the whole history is one group.
pub struct KvModel<K, V> {
    types: PhantomData<fn() -> (K, V)>,
}

impl<K, V> KvModel<K, V> {
    pub fn new() -> Self {
        KvModel { types: PhantomData }
    }
}

impl<K, V> Default for KvModel<K, V> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K, V> KvInput<K, V> {
    /// Every key the operation reads, writes or compares.
    pub fn keys(&self) -> Vec<&K> {
        match self {
            KvInput::Op(op) => vec![op.key()],
            KvInput::Txn(txn) => {
                let compared = txn.compare.iter().map(|compare| &compare.key);
                let branches = txn.success.iter().chain(&txn.failure).map(KvOp::key);
                compared.chain(branches).collect()
            }
        }
    }
}

impl<K, V> KvOp<K, V> {
    pub fn key(&self) -> &K {
        match self {
            KvOp::Get(key) | KvOp::Put(key, _) | KvOp::Delete(key) => key,
        }
    }
}

impl<K, V> Model for KvModel<K, V>
where
    K: Clone + Ord + Hash + Debug + Send + Sync,
    V: Clone + Eq + Hash + Debug + Send + Sync,
{
    type Input = KvInput<K, V>;
    type Output = KvOutput<V>;
    type State = BTreeMap<K, V>;

    fn init(&self) -> BTreeMap<K, V> {
        BTreeMap::new()
    }

    fn step(
        &self,
        state: &BTreeMap<K, V>,
        input: &KvInput<K, V>,
        output: Option<&KvOutput<V>>,
    ) -> Option<BTreeMap<K, V>> {
        match input {
            KvInput::Op(op) => step_op(state, op, output),
            KvInput::Txn(txn) => step_txn(state, txn, output),
        }
    }

    fn partition(&self, history: &[Operation<KvInput<K, V>, KvOutput<V>>]) -> Option<Vec<Vec<usize>>> {
        Some(partition::by_keys(history, |input| input.keys().into_iter().cloned().collect()))
    }

    /// A completed get.
    fn read_only(&self, input: &KvInput<K, V>, output: Option<&KvOutput<V>>) -> bool {
        matches!((input, output), (KvInput::Op(KvOp::Get(_)), Some(KvOutput::Get(_))))
    }

    fn state_heap_bytes(&self, state: &BTreeMap<K, V>) -> usize {
        // B-tree nodes hold up to 11 pairs; count each pair plus a share of node overhead.
        state.len() * (size_of::<(K, V)>() + 16)
    }
}

fn step_op<K: Clone + Ord, V: Clone + Eq>(
    state: &BTreeMap<K, V>,
    op: &KvOp<K, V>,
    output: Option<&KvOutput<V>>,
) -> Option<BTreeMap<K, V>> {
    match (op, output) {
        (KvOp::Get(_), None) => Some(state.clone()),
        (KvOp::Get(key), Some(KvOutput::Get(value))) => (state.get(key) == value.as_ref()).then(|| state.clone()),
        (KvOp::Delete(key), Some(KvOutput::Deleted { existed })) if state.contains_key(key) != *existed => None,
        (KvOp::Put(..), None | Some(KvOutput::Done))
        | (KvOp::Delete(_), None | Some(KvOutput::Done | KvOutput::Deleted { .. })) => {
            let mut next = state.clone();
            apply_write(&mut next, op);
            Some(next)
        }
        _ => None,
    }
}

fn step_txn<K: Clone + Ord, V: Clone + Eq>(
    state: &BTreeMap<K, V>,
    txn: &Txn<K, V>,
    output: Option<&KvOutput<V>>,
) -> Option<BTreeMap<K, V>> {
    let holds = txn.compare.iter().all(|compare| state.get(&compare.key) == compare.value.as_ref());
    let expected_gets = match output {
        None => None,
        Some(KvOutput::Txn { succeeded, gets }) if *succeeded == holds => Some(gets),
        Some(_) => return None,
    };
    let branch = if holds { &txn.success } else { &txn.failure };
    let mut next = state.clone();
    let mut gets = Vec::new();
    for op in branch {
        match op {
            KvOp::Get(key) => gets.push(next.get(key).cloned()),
            KvOp::Put(..) | KvOp::Delete(_) => apply_write(&mut next, op),
        }
    }
    match expected_gets {
        Some(expected) if *expected != gets => None,
        _ => Some(next),
    }
}

fn apply_write<K: Clone + Ord, V: Clone>(state: &mut BTreeMap<K, V>, op: &KvOp<K, V>) {
    match op {
        KvOp::Put(key, value) => {
            state.insert(key.clone(), value.clone());
        }
        KvOp::Delete(key) => {
            state.remove(key);
        }
        KvOp::Get(_) => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type State = BTreeMap<&'static str, i64>;

    fn map(pairs: &[(&'static str, i64)]) -> State {
        pairs.iter().copied().collect()
    }

    fn step(state: &State, input: KvInput<&'static str, i64>, output: Option<KvOutput<i64>>) -> Option<State> {
        KvModel::new().step(state, &input, output.as_ref())
    }

    #[test]
    fn single_key_operations() {
        let empty = map(&[]);
        let a1 = map(&[("a", 1)]);
        assert_eq!(step(&empty, KvInput::Op(KvOp::Put("a", 1)), Some(KvOutput::Done)), Some(a1.clone()));
        assert_eq!(step(&a1, KvInput::Op(KvOp::Get("a")), Some(KvOutput::Get(Some(1)))), Some(a1.clone()));
        assert_eq!(step(&a1, KvInput::Op(KvOp::Get("a")), Some(KvOutput::Get(None))), None);
        assert_eq!(step(&a1, KvInput::Op(KvOp::Get("b")), Some(KvOutput::Get(None))), Some(a1.clone()));
        assert_eq!(step(&a1, KvInput::Op(KvOp::Delete("a")), None), Some(empty.clone()));
        assert_eq!(step(&a1, KvInput::Op(KvOp::Put("a", 2)), Some(KvOutput::Get(None))), None);
        let deleted = |existed| Some(KvOutput::Deleted { existed });
        assert_eq!(step(&a1, KvInput::Op(KvOp::Delete("a")), deleted(true)), Some(empty.clone()));
        assert_eq!(step(&a1, KvInput::Op(KvOp::Delete("a")), deleted(false)), None);
        assert_eq!(step(&empty, KvInput::Op(KvOp::Delete("a")), deleted(false)), Some(empty.clone()));
        assert_eq!(step(&empty, KvInput::Op(KvOp::Delete("a")), deleted(true)), None);
    }

    #[test]
    fn transaction_runs_the_branch_its_compares_select() {
        let txn = KvInput::Txn(Txn {
            compare: vec![TxnCompare { key: "a", value: Some(1) }],
            success: vec![KvOp::Put("b", 2), KvOp::Get("b")],
            failure: vec![KvOp::Get("a")],
        });
        let a1 = map(&[("a", 1)]);
        let a3 = map(&[("a", 3)]);
        let ok = |succeeded, gets| Some(KvOutput::Txn { succeeded, gets });
        assert_eq!(step(&a1, txn.clone(), ok(true, vec![Some(2)])), Some(map(&[("a", 1), ("b", 2)])));
        assert_eq!(step(&a1, txn.clone(), ok(true, vec![None])), None);
        assert_eq!(step(&a1, txn.clone(), ok(false, vec![Some(1)])), None);
        assert_eq!(step(&a3, txn.clone(), ok(false, vec![Some(3)])), Some(a3.clone()));
        assert_eq!(step(&a3, txn.clone(), None), Some(a3.clone()));
        assert_eq!(step(&a1, txn, None), Some(map(&[("a", 1), ("b", 2)])));
    }
}
