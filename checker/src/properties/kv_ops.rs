//! Key-value operations as the history shows them: each `put`, `get`, `delete` or `cas` with its
//! invocation and its outcome. Shared by `linearizable`, `durability` and `watch`.

use std::collections::BTreeMap;

use crate::history::{Call, Event, History, OpId, Return, Touched};

/// How a key-value operation ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KvOutcome {
    /// It happened and returned this.
    Ok(Return),
    /// It certainly did not happen.
    Fail,
    /// Unknown: it may have happened at any time after its invocation (`info`, or no completion).
    Unknown,
}

/// One key-value operation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KvOperation {
    pub op: OpId,
    pub client: String,
    pub call: Call,
    pub invoke_ns: u64,
    /// Index of the `invoke` entry.
    pub invoke_entry: usize,
    pub outcome: KvOutcome,
    /// True time and entry of the completion (`ok`, `fail` or `info`); `None` if there is none.
    pub complete: Option<(u64, usize)>,
}

impl KvOperation {
    pub fn key(&self) -> &str {
        self.call.kv_key().expect("only key-value calls are collected")
    }

    /// True time of the `ok`, for operations that completed `ok`.
    pub fn ok_ns(&self) -> Option<u64> {
        match self.outcome {
            KvOutcome::Ok(_) => self.complete.map(|(ns, _)| ns),
            _ => None,
        }
    }

    /// The value this operation leaves in its key if it takes effect as a write: `Some(Some(v))`
    /// for a put (or a cas that swapped or may have), `Some(None)` for a delete, `None` for a read
    /// or a cas that certainly did not swap.
    pub fn written(&self) -> Option<Option<&str>> {
        match (&self.call, &self.outcome) {
            (Call::Put { value, .. }, _) => Some(Some(value)),
            (Call::Delete { .. }, _) => Some(None),
            (Call::Cas { .. }, KvOutcome::Ok(Return::Cas { swapped: false, .. })) => None,
            (Call::Cas { new, .. }, _) => Some(Some(new)),
            _ => None,
        }
    }

    /// The store revision an `ok` write created: a put, a delete that removed the key, a cas that
    /// swapped. `None` for reads, no-op writes and writes without an `ok`.
    pub fn write_revision(&self) -> Option<i64> {
        match &self.outcome {
            KvOutcome::Ok(Return::Put { revision } | Return::Cas { swapped: true, revision }) => Some(*revision),
            KvOutcome::Ok(Return::Deleted { count, revision }) if *count > 0 => Some(*revision),
            _ => None,
        }
    }

    /// Entries to point a finding at: the invocation and the completion, if any.
    pub fn entries(&self) -> Vec<usize> {
        let mut entries = vec![self.invoke_entry];
        entries.extend(self.complete.map(|(_, entry)| entry));
        entries
    }

    /// A short description for messages: `c1 put k1=v7 (op 7)`.
    pub fn describe(&self) -> String {
        let what = match &self.call {
            Call::Put { key, value } => format!("put {key}={value}"),
            Call::Get { key } => format!("get {key}"),
            Call::Delete { key } => format!("delete {key}"),
            Call::Cas { key, expected, new } => {
                format!("cas {key} {}->{new}", expected.as_deref().unwrap_or("(absent)"))
            }
            other => format!("{other:?}"),
        };
        let result = match &self.outcome {
            KvOutcome::Ok(Return::Got { value, .. }) => format!(" -> {}", value.as_deref().unwrap_or("(absent)")),
            KvOutcome::Ok(Return::Cas { swapped, .. }) => {
                format!(" -> {}", if *swapped { "swapped" } else { "not swapped" })
            }
            KvOutcome::Ok(_) => String::new(),
            KvOutcome::Fail => " -> fail".to_string(),
            KvOutcome::Unknown => " -> ?".to_string(),
        };
        format!("{} {what}{result} (op {})", self.client, self.op)
    }
}

/// What changes keys behind the key-value model's back: what user-code API calls may write
/// ([`Call::Api`]'s `writes`), and every key under a lock or election name (`name/`: the
/// recipes' and the Lock and Election services' keys, which lease expiries also delete).
fn unmodelled_writes(history: &History) -> Vec<Touched> {
    let mut touched = std::collections::BTreeSet::new();
    for entry in &history.entries {
        match &entry.event {
            Event::Invoke { call: Call::Api { writes, .. }, .. } => touched.extend(writes.iter().cloned()),
            Event::Invoke { call: Call::Lock { name, .. }, .. } => {
                touched.insert(Touched::Prefix(format!("{name}/")));
            }
            _ => {}
        }
    }
    touched.into_iter().collect()
}

/// Every key-value operation of the history, in the order of their invocations: the judged ones.
/// Operations on a key that something else may also change (see [`unmodelled_writes`]) are left
/// out, whole key at a time: per-key linearizability stays sound on the keys that remain.
pub fn kv_operations(history: &History) -> Vec<KvOperation> {
    let unmodelled = unmodelled_writes(history);
    let mut operations = all_kv_operations(history);
    if !unmodelled.is_empty() {
        operations.retain(|op| !unmodelled.iter().any(|t| t.covers(op.key())));
    }
    operations
}

fn all_kv_operations(history: &History) -> Vec<KvOperation> {
    let mut out: Vec<KvOperation> = Vec::new();
    let mut index_of: BTreeMap<OpId, usize> = BTreeMap::new();
    for (index, entry) in history.entries.iter().enumerate() {
        let (op, outcome) = match &entry.event {
            Event::Invoke { op, call } if call.kv_key().is_some() => {
                index_of.insert(*op, out.len());
                out.push(KvOperation {
                    op: *op,
                    client: entry.node.clone(),
                    call: call.clone(),
                    invoke_ns: entry.time_ns,
                    invoke_entry: index,
                    outcome: KvOutcome::Unknown,
                    complete: None,
                });
                continue;
            }
            Event::Ok { op, ret } => (op, KvOutcome::Ok(ret.clone())),
            Event::Fail { op, .. } => (op, KvOutcome::Fail),
            Event::Info { op, .. } => (op, KvOutcome::Unknown),
            _ => continue,
        };
        if let Some(&slot) = index_of.get(op) {
            out[slot].outcome = outcome;
            out[slot].complete = Some((entry.time_ns, index));
        }
    }
    out
}
