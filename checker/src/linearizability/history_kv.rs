//! From a coordsim [`History`] to key-value operations for the [`KvModel`].
//!
//! Outcomes follow the history's Jepsen semantics: an `ok` operation is checked with its output;
//! an `info` operation, or one that never completed, stays open to the end of the history (it may
//! or may not have taken effect); a `fail` operation certainly did not happen and is dropped, and so
//! is an unknown put nothing could observe (`unobserved.rs`).
//! Revisions are not part of the model (they are global across keys, which would defeat checking
//! each key on its own); the `watch` property checks them.
//!
//! The mapping: `put` → put; `get` → get with the value read; `delete` → delete, with whether the
//! key existed (`count` > 0); `cas` → a transaction comparing the key's value with `expected` and
//! putting `new` when it holds, with `swapped` as the branch taken.

use std::collections::BTreeMap;

use super::model::Model;
use super::models::{KvInput, KvModel, KvOp, KvOutput, Txn, TxnCompare};
use super::operation::{OpId, Operation, RETURN_NEVER};
use crate::history::{Call, History, Return};
use crate::properties::{KvOperation, KvOutcome, kv_operations};

/// The model the operations of [`from_history`] are checked against.
pub type HistoryKvModel = KvModel<String, String>;
/// One key-value operation of a history, as the model sees it.
pub type HistoryKvOperation = Operation<KvInput<String, String>, KvOutput<String>>;

/// The key-value operations of a history, ready for [`super::check`], with what is needed to
/// point back at the history.
#[derive(Clone, Debug)]
pub struct KvHistory {
    /// Operation ids are the history's `op` ids; `client` is the index of the client's name in
    /// `clients`.
    pub operations: Vec<HistoryKvOperation>,
    pub clients: Vec<String>,
    /// Every key-value operation of the history, including the failed ones that were dropped.
    pub source: BTreeMap<OpId, KvOperation>,
    /// Unknown-outcome puts left out of `operations` because nothing could observe them
    /// ([`super::drop_unobserved_puts`]).
    pub unobserved: usize,
}

impl KvHistory {
    /// Entries (invocation, completion) of an operation, for findings.
    pub fn entries_of(&self, op: OpId) -> Vec<usize> {
        self.source.get(&op).map(KvOperation::entries).unwrap_or_default()
    }

    /// The model's state after the operations `prefix`, in that order, with the values the
    /// history wrote (the search saw unread values merged into one placeholder); `None` when the
    /// model rejects the order or an id is unknown.
    pub fn state_after(&self, prefix: &[OpId]) -> Option<String> {
        let model = HistoryKvModel::new();
        let mut clients = Vec::new();
        let mut state = model.init();
        for id in prefix {
            let op = to_operation(self.source.get(id)?, &mut clients)?;
            state = model.step(&state, &op.input, op.output.as_ref())?;
        }
        Some(model.describe_state(&state))
    }
}

/// The key-value operations of `history` (see the module documentation for the mapping).
pub fn from_history(history: &History) -> KvHistory {
    let mut clients: Vec<String> = Vec::new();
    let mut operations = Vec::new();
    let mut source = BTreeMap::new();
    for kv in kv_operations(history) {
        if let Some(operation) = to_operation(&kv, &mut clients) {
            operations.push(operation);
        }
        source.insert(kv.op, kv);
    }
    // A placeholder no read returns: NUL bytes, as many as it takes.
    let mut placeholder = String::from("\u{0}");
    while super::merge_unread_values(&mut operations, &placeholder).is_none() {
        placeholder.push('\u{0}');
    }
    let unobserved = super::drop_unobserved_puts(&mut operations);
    KvHistory { operations, clients, source, unobserved }
}

fn to_operation(kv: &KvOperation, clients: &mut Vec<String>) -> Option<HistoryKvOperation> {
    let output = match &kv.outcome {
        KvOutcome::Fail => return None,
        KvOutcome::Unknown => None,
        // A return of another kind (which `History::validate` rejects) tells nothing: unknown.
        KvOutcome::Ok(ret) => output_of(ret),
    };
    let client = match clients.iter().position(|c| *c == kv.client) {
        Some(index) => index,
        None => {
            clients.push(kv.client.clone());
            clients.len() - 1
        }
    };
    let return_ns = match (&output, kv.ok_ns()) {
        (Some(_), Some(ok_ns)) => ok_ns,
        _ => RETURN_NEVER,
    };
    Some(Operation {
        id: kv.op,
        client: client as u64,
        input: input_of(&kv.call),
        output,
        call_ns: kv.invoke_ns,
        return_ns,
    })
}

fn input_of(call: &Call) -> KvInput<String, String> {
    match call {
        Call::Put { key, value } => KvInput::Op(KvOp::Put(key.clone(), value.clone())),
        Call::Get { key } => KvInput::Op(KvOp::Get(key.clone())),
        Call::Delete { key } => KvInput::Op(KvOp::Delete(key.clone())),
        Call::Cas { key, expected, new } => KvInput::Txn(Txn {
            compare: vec![TxnCompare { key: key.clone(), value: expected.clone() }],
            success: vec![KvOp::Put(key.clone(), new.clone())],
            failure: Vec::new(),
        }),
        other => unreachable!("only key-value calls are collected, got {other:?}"),
    }
}

fn output_of(ret: &Return) -> Option<KvOutput<String>> {
    match ret {
        Return::Put { .. } => Some(KvOutput::Done),
        Return::Got { value, .. } => Some(KvOutput::Get(value.clone())),
        Return::Deleted { count, .. } => Some(KvOutput::Deleted { existed: *count > 0 }),
        Return::Cas { swapped, .. } => Some(KvOutput::Txn { succeeded: *swapped, gets: Vec::new() }),
        _ => None,
    }
}
