//! A single register with read, write and compare-and-set; it starts empty (nil).

use std::fmt::Debug;
use std::hash::Hash;

use crate::linearizability::model::Model;

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum RegisterInput<V> {
    Read,
    Write(V),
    /// Sets the register to `new` if it holds `expected`.
    Cas {
        expected: V,
        new: V,
    },
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum RegisterOutput<V> {
    /// The value read; `None` if the register was never written.
    Read(Option<V>),
    Write,
    Cas {
        swapped: bool,
    },
}

/// The register's state is its value: its initial value (nil unless [`RegisterModel::starting_at`])
/// before the first write.
///
/// An output of another kind than the input (a `Write` answered by `Read`) matches no state: the
/// operation is rejected wherever it is placed.
pub struct RegisterModel<V> {
    initial: Option<V>,
}

impl<V> RegisterModel<V> {
    /// A register that starts as nil (never written), as Jepsen's etcd test and Porcupine's model.
    pub fn new() -> Self {
        RegisterModel { initial: None }
    }

    /// A register that starts holding `value`, as Knossos's `(cas-register 0)` in its own tests.
    pub fn starting_at(value: V) -> Self {
        RegisterModel { initial: Some(value) }
    }
}

impl<V> Default for RegisterModel<V> {
    fn default() -> Self {
        Self::new()
    }
}

impl<V: Clone + Eq + Hash + Debug + Send + Sync> Model for RegisterModel<V> {
    type Input = RegisterInput<V>;
    type Output = RegisterOutput<V>;
    type State = Option<V>;

    fn init(&self) -> Option<V> {
        self.initial.clone()
    }

    fn step(
        &self,
        state: &Option<V>,
        input: &RegisterInput<V>,
        output: Option<&RegisterOutput<V>>,
    ) -> Option<Option<V>> {
        match (input, output) {
            (RegisterInput::Read, None) => Some(state.clone()),
            (RegisterInput::Read, Some(RegisterOutput::Read(value))) => (value == state).then(|| state.clone()),
            (RegisterInput::Write(value), None | Some(RegisterOutput::Write)) => Some(Some(value.clone())),
            (RegisterInput::Cas { expected, new }, output) => {
                let matches = state.as_ref() == Some(expected);
                let consistent = match output {
                    None => true,
                    Some(RegisterOutput::Cas { swapped }) => *swapped == matches,
                    Some(_) => false,
                };
                match (consistent, matches) {
                    (false, _) => None,
                    (true, true) => Some(Some(new.clone())),
                    (true, false) => Some(state.clone()),
                }
            }
            (RegisterInput::Read | RegisterInput::Write(_), Some(_)) => None,
        }
    }

    /// A read, a write or a compare-and-set of unknown outcome is accepted in every state.
    fn accepts_unknown_anywhere(&self) -> bool {
        true
    }

    fn read_only(&self, input: &RegisterInput<V>, output: Option<&RegisterOutput<V>>) -> bool {
        matches!(
            (input, output),
            (RegisterInput::Read, Some(RegisterOutput::Read(_)))
                | (RegisterInput::Cas { .. }, Some(RegisterOutput::Cas { swapped: false }))
        )
    }

    fn describe_operation(&self, input: &RegisterInput<V>, output: Option<&RegisterOutput<V>>) -> String {
        let input = match input {
            RegisterInput::Read => "read".to_string(),
            RegisterInput::Write(value) => format!("write {value:?}"),
            RegisterInput::Cas { expected, new } => format!("cas {expected:?} -> {new:?}"),
        };
        match output {
            None => format!("{input}, outcome unknown"),
            Some(RegisterOutput::Read(value)) => format!("{input} = {}", show(value.as_ref())),
            Some(RegisterOutput::Write) => format!("{input}, ok"),
            Some(RegisterOutput::Cas { swapped }) => format!("{input}, swapped: {swapped}"),
        }
    }

    fn describe_state(&self, state: &Option<V>) -> String {
        format!("register = {}", show(state.as_ref()))
    }
}

fn show<V: Debug>(value: Option<&V>) -> String {
    match value {
        Some(value) => format!("{value:?}"),
        None => "nil".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type In = RegisterInput<i64>;
    type Out = RegisterOutput<i64>;

    fn step(state: Option<i64>, input: In, output: Option<Out>) -> Option<Option<i64>> {
        RegisterModel::new().step(&state, &input, output.as_ref())
    }

    #[test]
    fn step_table() {
        let cas = |expected, new| In::Cas { expected, new };
        // (value, input, output, value after or None if illegal)
        type Case = (Option<i64>, In, Option<Out>, Option<Option<i64>>);
        let cases: Vec<Case> = vec![
            (None, In::Read, Some(Out::Read(None)), Some(None)),
            (None, In::Read, Some(Out::Read(Some(1))), None),
            (Some(1), In::Read, Some(Out::Read(Some(1))), Some(Some(1))),
            (Some(1), In::Read, None, Some(Some(1))),
            (None, In::Write(2), Some(Out::Write), Some(Some(2))),
            (Some(1), In::Write(2), None, Some(Some(2))),
            (Some(1), cas(1, 2), Some(Out::Cas { swapped: true }), Some(Some(2))),
            (Some(1), cas(3, 2), Some(Out::Cas { swapped: true }), None),
            (Some(1), cas(3, 2), Some(Out::Cas { swapped: false }), Some(Some(1))),
            (Some(1), cas(1, 2), Some(Out::Cas { swapped: false }), None),
            (None, cas(1, 2), Some(Out::Cas { swapped: false }), Some(None)),
            (Some(1), cas(1, 2), None, Some(Some(2))),
            (Some(3), cas(1, 2), None, Some(Some(3))),
            (Some(1), In::Write(2), Some(Out::Read(None)), None),
        ];
        for (state, input, output, expected) in cases {
            let described = format!("{state:?} {input:?} {output:?}");
            assert_eq!(step(state, input, output), expected, "{described}");
        }
    }
}
