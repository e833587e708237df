//! A mutual-exclusion lock that remembers its holder.

use crate::linearizability::model::Model;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MutexInput {
    Acquire { owner: u64 },
    Release { owner: u64 },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MutexOutput {
    /// The lock was granted (acquire) or given back (release).
    Ok,
    /// The service said no: the lock was held (try-acquire) or the caller did not hold it (release).
    Refused,
}

/// State: the holder, `None` when free.
///
/// - acquire ok: legal only when free; the owner then holds it.
/// - release ok: legal only when the owner holds it; releasing a lock held by someone else, or a
///   free lock, is illegal.
/// - acquire refused: legal only when some client holds it. Release refused: legal only when the
///   owner does not hold it.
/// - unknown outcome: takes effect if it could have succeeded, else changes nothing.
#[derive(Clone, Copy, Debug, Default)]
pub struct MutexModel;

impl Model for MutexModel {
    type Input = MutexInput;
    type Output = MutexOutput;
    type State = Option<u64>;

    fn init(&self) -> Option<u64> {
        None
    }

    fn step(&self, holder: &Option<u64>, input: &MutexInput, output: Option<&MutexOutput>) -> Option<Option<u64>> {
        let holder = *holder;
        match (*input, output) {
            (MutexInput::Acquire { owner }, Some(MutexOutput::Ok)) => holder.is_none().then_some(Some(owner)),
            (MutexInput::Acquire { .. }, Some(MutexOutput::Refused)) => holder.is_some().then_some(holder),
            (MutexInput::Acquire { owner }, None) => Some(holder.or(Some(owner))),
            (MutexInput::Release { owner }, Some(MutexOutput::Ok)) => (holder == Some(owner)).then_some(None),
            (MutexInput::Release { owner }, Some(MutexOutput::Refused)) => (holder != Some(owner)).then_some(holder),
            (MutexInput::Release { owner }, None) => Some(if holder == Some(owner) { None } else { holder }),
        }
    }

    fn describe_operation(&self, input: &MutexInput, output: Option<&MutexOutput>) -> String {
        let input = match input {
            MutexInput::Acquire { owner } => format!("client {owner} acquire"),
            MutexInput::Release { owner } => format!("client {owner} release"),
        };
        match output {
            Some(MutexOutput::Ok) => format!("{input}, ok"),
            Some(MutexOutput::Refused) => format!("{input}, refused"),
            None => format!("{input}, outcome unknown"),
        }
    }

    fn describe_state(&self, holder: &Option<u64>) -> String {
        match holder {
            Some(owner) => format!("held by client {owner}"),
            None => "free".to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn step_table() {
        use MutexInput::{Acquire, Release};
        use MutexOutput::{Ok, Refused};
        // (holder, input, output, holder after or None if illegal)
        type Case = (Option<u64>, MutexInput, Option<MutexOutput>, Option<Option<u64>>);
        let cases: Vec<Case> = vec![
            (None, Acquire { owner: 1 }, Some(Ok), Some(Some(1))),
            (Some(2), Acquire { owner: 1 }, Some(Ok), None),
            (Some(1), Acquire { owner: 1 }, Some(Ok), None),
            (Some(2), Acquire { owner: 1 }, Some(Refused), Some(Some(2))),
            (None, Acquire { owner: 1 }, Some(Refused), None),
            (None, Acquire { owner: 1 }, None, Some(Some(1))),
            (Some(2), Acquire { owner: 1 }, None, Some(Some(2))),
            (Some(1), Release { owner: 1 }, Some(Ok), Some(None)),
            (Some(2), Release { owner: 1 }, Some(Ok), None),
            (None, Release { owner: 1 }, Some(Ok), None),
            (Some(2), Release { owner: 1 }, Some(Refused), Some(Some(2))),
            (Some(1), Release { owner: 1 }, Some(Refused), None),
            (Some(1), Release { owner: 1 }, None, Some(None)),
            (Some(2), Release { owner: 1 }, None, Some(Some(2))),
        ];
        for (holder, input, output, expected) in cases {
            assert_eq!(MutexModel.step(&holder, &input, output.as_ref()), expected, "{holder:?} {input:?} {output:?}");
        }
    }
}
