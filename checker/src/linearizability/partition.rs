//! Splitting a history into independently checkable parts (P-compositionality).
//!
//! Linearizability is local (Herlihy & Wing 1990): a history of several objects is linearizable iff
//! the sub-history of each object is. Horn & Kroening (2015) generalise this to any split of the
//! operations into parts that cannot influence each other, e.g. the keys of a key-value store.
//! Checking parts separately turns one search over the product of all states into several small
//! searches, and lets them run in parallel.

use std::collections::BTreeMap;

use super::model::Model;
use super::operation::{HistoryError, Operation};

/// Groups operations that share keys, transitively: two operations land in the same part iff a
/// chain of operations, each sharing a key with the next, links them (the connected components of
/// the "touches" relation, found with union-find). A multi-key operation (a transaction) thus glues
/// its keys into one part, which is then checked as one object over all those keys; with no
/// multi-key operations, each key is its own part. An operation with no keys is its own part.
///
/// Returns indices into `history`; parts come in the order of their first operation.
pub fn by_keys<I, O, K: Ord>(history: &[Operation<I, O>], keys_of: impl Fn(&I) -> Vec<K>) -> Vec<Vec<usize>> {
    let mut sets = DisjointSets::new(history.len());
    let mut first_op_of_key: BTreeMap<K, usize> = BTreeMap::new();
    for (index, op) in history.iter().enumerate() {
        for key in keys_of(&op.input) {
            let first = *first_op_of_key.entry(key).or_insert(index);
            sets.union(first, index);
        }
    }
    let mut part_of_root: BTreeMap<usize, usize> = BTreeMap::new();
    let mut parts: Vec<Vec<usize>> = Vec::new();
    for index in 0..history.len() {
        let root = sets.find(index);
        let part = *part_of_root.entry(root).or_insert_with(|| {
            parts.push(Vec::new());
            parts.len() - 1
        });
        parts[part].push(index);
    }
    parts
}

/// Most operations in one part: node ids of the entry list (two per operation) are `u32`.
const PART_OPS_MAX: usize = 1 << 30;

/// The parts a model's partition function gives, validated and ordered by their smallest operation
/// id so that partition indices in reports do not depend on the partition function's order.
pub(crate) fn parts_of<M: Model>(
    model: &M,
    history: &[Operation<M::Input, M::Output>],
) -> Result<Vec<Vec<usize>>, HistoryError> {
    let mut parts = match model.partition(history) {
        Some(parts) => {
            validate_cover(&parts, history.len())?;
            parts
        }
        None => vec![(0..history.len()).collect()],
    };
    parts.retain(|part| !part.is_empty());
    for part in &parts {
        if part.len() > PART_OPS_MAX {
            return Err(HistoryError::TooLarge(part.len()));
        }
    }
    parts.sort_by_key(|part| part.iter().map(|&index| history[index].id).min());
    Ok(parts)
}

fn validate_cover(parts: &[Vec<usize>], len: usize) -> Result<(), HistoryError> {
    let mut seen = vec![false; len];
    for &index in parts.iter().flatten() {
        let Some(slot) = seen.get_mut(index) else {
            return Err(HistoryError::BadPartition(format!("index {index} is out of range (history of {len})")));
        };
        if std::mem::replace(slot, true) {
            return Err(HistoryError::BadPartition(format!("index {index} is in two parts")));
        }
    }
    match seen.iter().position(|&seen| !seen) {
        Some(index) => Err(HistoryError::BadPartition(format!("index {index} is in no part"))),
        None => Ok(()),
    }
}

/// Union-find with path halving and union by size.
struct DisjointSets {
    parent: Vec<usize>,
    size: Vec<usize>,
}

impl DisjointSets {
    fn new(len: usize) -> Self {
        DisjointSets { parent: (0..len).collect(), size: vec![1; len] }
    }

    fn find(&mut self, mut index: usize) -> usize {
        while self.parent[index] != index {
            self.parent[index] = self.parent[self.parent[index]];
            index = self.parent[index];
        }
        index
    }

    fn union(&mut self, a: usize, b: usize) {
        let (mut a, mut b) = (self.find(a), self.find(b));
        if a == b {
            return;
        }
        if self.size[a] < self.size[b] {
            std::mem::swap(&mut a, &mut b);
        }
        self.parent[b] = a;
        self.size[a] += self.size[b];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(id: u64, keys: &'static [&'static str]) -> Operation<&'static [&'static str], ()> {
        Operation { id, client: 0, input: keys, output: Some(()), call_ns: id, return_ns: id + 1 }
    }

    #[test]
    fn a_transaction_glues_the_parts_of_its_keys_together() {
        let history = vec![op(0, &["a"]), op(1, &["b"]), op(2, &["c"]), op(3, &["a", "c"]), op(4, &["b"]), op(5, &[])];
        let parts = by_keys(&history, |keys| keys.to_vec());
        assert_eq!(parts, vec![vec![0, 2, 3], vec![1, 4], vec![5]]);
    }

    #[test]
    fn a_partition_must_cover_every_operation_once() {
        assert!(validate_cover(&[vec![0, 1], vec![2]], 3).is_ok());
        assert!(validate_cover(&[vec![0, 1], vec![1, 2]], 3).is_err());
        assert!(validate_cover(&[vec![0]], 2).is_err());
        assert!(validate_cover(&[vec![0, 5]], 2).is_err());
    }
}
