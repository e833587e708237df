//! A map of string keys to string values with get, put and append: the key-value model of
//! Porcupine's kv test data (`test_data/kv`, Jepsen histories of a store with `:get`, `:put` and
//! `:append`). A key never written reads as the empty string, as in Porcupine's `kvModel`, whose
//! initial state is `""`.
//!
//! The model partitions by key (P-compositionality), so each search sees one key and its state is
//! that key's value alone.

use crate::linearizability::model::Model;
use crate::linearizability::operation::Operation;
use crate::linearizability::partition;

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct AppendKvInput {
    pub key: String,
    pub op: AppendKvOp,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum AppendKvOp {
    Get,
    Put(String),
    /// Appends the string to the key's value.
    Append(String),
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum AppendKvOutput {
    /// The value read.
    Get(String),
    /// A put or append was acknowledged.
    Done,
}

/// See the module documentation.
#[derive(Clone, Copy, Debug, Default)]
pub struct AppendKvModel;

impl Model for AppendKvModel {
    type Input = AppendKvInput;
    type Output = AppendKvOutput;
    type State = String;

    fn init(&self) -> String {
        String::new()
    }

    fn step(&self, state: &String, input: &AppendKvInput, output: Option<&AppendKvOutput>) -> Option<String> {
        match (&input.op, output) {
            (AppendKvOp::Get, None) => Some(state.clone()),
            (AppendKvOp::Get, Some(AppendKvOutput::Get(value))) => (value == state).then(|| state.clone()),
            (AppendKvOp::Put(value), None | Some(AppendKvOutput::Done)) => Some(value.clone()),
            (AppendKvOp::Append(suffix), None | Some(AppendKvOutput::Done)) => {
                let mut next = String::with_capacity(state.len() + suffix.len());
                next.push_str(state);
                next.push_str(suffix);
                Some(next)
            }
            _ => None,
        }
    }

    fn partition(&self, history: &[Operation<AppendKvInput, AppendKvOutput>]) -> Option<Vec<Vec<usize>>> {
        Some(partition::by_keys(history, |input| vec![input.key.clone()]))
    }

    fn state_heap_bytes(&self, state: &String) -> usize {
        state.capacity()
    }

    fn describe_operation(&self, input: &AppendKvInput, output: Option<&AppendKvOutput>) -> String {
        let call = match &input.op {
            AppendKvOp::Get => format!("get({:?})", input.key),
            AppendKvOp::Put(value) => format!("put({:?}, {})", input.key, shorten(value)),
            AppendKvOp::Append(value) => format!("append({:?}, {})", input.key, shorten(value)),
        };
        match output {
            Some(AppendKvOutput::Get(value)) => format!("{call} -> {}", shorten(value)),
            Some(AppendKvOutput::Done) => call,
            None => format!("{call} -> ?"),
        }
    }

    fn describe_state(&self, state: &String) -> String {
        shorten(state)
    }
}

/// A value as a quoted string, its middle elided past 60 characters (appended values grow long).
fn shorten(value: &str) -> String {
    const SHOWN: usize = 60;
    let chars = value.chars().count();
    if chars <= SHOWN {
        return format!("{value:?}");
    }
    let head: String = value.chars().take(SHOWN / 2).collect();
    let tail: String = value.chars().skip(chars - SHOWN / 2).collect();
    format!("\"{head}…{tail}\" ({chars} characters)")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::linearizability::{CheckOptions, check};

    fn op(
        id: u64,
        key: &str,
        op: AppendKvOp,
        output: Option<AppendKvOutput>,
        call_ns: u64,
        return_ns: u64,
    ) -> Operation<AppendKvInput, AppendKvOutput> {
        Operation { id, client: id, input: AppendKvInput { key: key.into(), op }, output, call_ns, return_ns }
    }

    #[test]
    fn appends_concatenate_and_gets_see_them_in_order() {
        let get = |id, value: &str, call, ret| {
            op(id, "k", AppendKvOp::Get, Some(AppendKvOutput::Get(value.into())), call, ret)
        };
        let append = |id, value: &str, call, ret| {
            op(id, "k", AppendKvOp::Append(value.into()), Some(AppendKvOutput::Done), call, ret)
        };
        let good = vec![get(0, "", 0, 1), append(1, "a", 2, 10), append(2, "b", 3, 11), get(3, "ba", 12, 13)];
        assert!(check(&AppendKvModel, &good, &CheckOptions::default()).unwrap().is_ok());
        // "ab" then "ba" cannot both be read: the appends happened in one order.
        let mut bad = good.clone();
        bad.push(get(4, "ab", 14, 15));
        assert!(check(&AppendKvModel, &bad, &CheckOptions::default()).unwrap().is_illegal());
        // Another key is independent, and a put replaces.
        let other = vec![
            op(5, "j", AppendKvOp::Put("x".into()), Some(AppendKvOutput::Done), 0, 1),
            op(6, "j", AppendKvOp::Append("y".into()), Some(AppendKvOutput::Done), 2, 3),
        ];
        let mut two_keys = good;
        two_keys.extend(other);
        two_keys.push(op(7, "j", AppendKvOp::Get, Some(AppendKvOutput::Get("xy".into())), 4, 5));
        assert!(check(&AppendKvModel, &two_keys, &CheckOptions::default()).unwrap().is_ok());
    }
}
