//! Registers named by keys, read and written together in transactions: Knossos's
//! `multi-register` model (`knossos.model/multi-register`). An operation is a transaction, a list
//! of `[:read k v]` and `[:write k v]` steps applied in order; a read whose value is nil is "not
//! known" and always legal (Knossos: "Nil reads are always legal"); a register never written
//! holds its initial value, nil when the initial map does not name it.
//!
//! Transactions touching a common key are checked together (the model partitions by keys,
//! transitively), so a history of independent transactions per key splits into one search per key.

use std::collections::BTreeMap;

use crate::linearizability::model::Model;
use crate::linearizability::operation::Operation;
use crate::linearizability::partition;

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum MicroOp {
    /// A read, with the value it returned (`None`: not known, as in an invocation).
    Read {
        key: String,
        value: Option<i64>,
    },
    Write {
        key: String,
        value: i64,
    },
}

impl MicroOp {
    pub fn key(&self) -> &str {
        match self {
            MicroOp::Read { key, .. } | MicroOp::Write { key, .. } => key,
        }
    }
}

/// A transaction as invoked (reads without values).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct MultiRegisterInput {
    pub steps: Vec<MicroOp>,
}

/// The transaction as completed: the same steps, reads with the values they returned.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct MultiRegisterOutput {
    pub steps: Vec<MicroOp>,
}

/// See the module documentation.
#[derive(Clone, Debug, Default)]
pub struct MultiRegisterModel {
    initial: BTreeMap<String, i64>,
}

impl MultiRegisterModel {
    /// Registers start at `initial` (Knossos's tests use `{:x 0 :y 0}`); others at nil.
    pub fn new(initial: BTreeMap<String, i64>) -> Self {
        MultiRegisterModel { initial }
    }
}

impl Model for MultiRegisterModel {
    type Input = MultiRegisterInput;
    type Output = MultiRegisterOutput;
    type State = BTreeMap<String, i64>;

    fn init(&self) -> Self::State {
        self.initial.clone()
    }

    fn step(
        &self,
        state: &Self::State,
        input: &MultiRegisterInput,
        output: Option<&MultiRegisterOutput>,
    ) -> Option<Self::State> {
        // An unknown outcome applies the invocation's steps (its reads carry no values).
        let steps = output.map_or(&input.steps, |output| &output.steps);
        let mut next = state.clone();
        for step in steps {
            match step {
                MicroOp::Read { value: None, .. } => {}
                MicroOp::Read { key, value: Some(value) } => {
                    if next.get(key) != Some(value) {
                        return None;
                    }
                }
                MicroOp::Write { key, value } => {
                    next.insert(key.clone(), *value);
                }
            }
        }
        Some(next)
    }

    fn partition(&self, history: &[Operation<MultiRegisterInput, MultiRegisterOutput>]) -> Option<Vec<Vec<usize>>> {
        Some(partition::by_keys(history, |input| input.steps.iter().map(|step| step.key().to_string()).collect()))
    }

    fn state_heap_bytes(&self, state: &Self::State) -> usize {
        state.keys().map(|key| key.capacity() + 40).sum()
    }

    fn describe_operation(&self, input: &MultiRegisterInput, output: Option<&MultiRegisterOutput>) -> String {
        let steps = output.map_or(&input.steps, |output| &output.steps);
        let steps: Vec<String> = steps
            .iter()
            .map(|step| match step {
                MicroOp::Read { key, value: Some(value) } => format!("read {key} {value}"),
                MicroOp::Read { key, value: None } => format!("read {key} ?"),
                MicroOp::Write { key, value } => format!("write {key} {value}"),
            })
            .collect();
        let unknown = if output.is_none() { " (outcome unknown)" } else { "" };
        format!("txn [{}]{unknown}", steps.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::linearizability::{CheckOptions, check};

    fn txn(
        id: u64,
        steps: Vec<MicroOp>,
        call_ns: u64,
        return_ns: u64,
    ) -> Operation<MultiRegisterInput, MultiRegisterOutput> {
        let invoked = steps
            .iter()
            .map(|step| match step {
                MicroOp::Read { key, .. } => MicroOp::Read { key: key.clone(), value: None },
                write => write.clone(),
            })
            .collect();
        Operation {
            id,
            client: id,
            input: MultiRegisterInput { steps: invoked },
            output: Some(MultiRegisterOutput { steps }),
            call_ns,
            return_ns,
        }
    }

    fn read(key: &str, value: i64) -> MicroOp {
        MicroOp::Read { key: key.into(), value: Some(value) }
    }

    fn write(key: &str, value: i64) -> MicroOp {
        MicroOp::Write { key: key.into(), value }
    }

    #[test]
    fn a_transaction_reads_its_own_writes_and_others_see_all_or_nothing() {
        let model = MultiRegisterModel::new([("x".to_string(), 0), ("y".to_string(), 0)].into());
        let both = txn(0, vec![write("x", 1), write("y", 1), read("x", 1)], 0, 10);
        let good = vec![both.clone(), txn(1, vec![read("x", 1), read("y", 1)], 5, 15)];
        assert!(check(&model, &good, &CheckOptions::default()).unwrap().is_ok());
        let torn = vec![both, txn(1, vec![read("x", 1), read("y", 0)], 5, 15)];
        assert!(check(&model, &torn, &CheckOptions::default()).unwrap().is_illegal());
        let unknown = vec![txn(2, vec![MicroOp::Read { key: "x".into(), value: None }], 0, 1)];
        assert!(check(&model, &unknown, &CheckOptions::default()).unwrap().is_ok());
    }
}
