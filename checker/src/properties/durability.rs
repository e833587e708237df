//! Durability: a write acknowledged before a server crash is still there after it.
//!
//! The rule: take a `get` of key `k` that completed `ok`, and the newest write to `k` (by store
//! revision) among those acknowledged `ok` before the get was invoked; call it `w`. If a server
//! crash started between `w`'s acknowledgement and the get's completion, the get must return `w`'s
//! value or the value of a write that may come after `w`: an acknowledged write with a higher
//! revision, or a write whose outcome is unknown, invoked before the get completed. Otherwise the
//! crash lost `w` (and the get read an older value).
//!
//! Linearizability implies this (reads are linearizable in the service), so `linearizable` fails
//! too; this property names the lost write and the crash. Reads with no crash since the write are
//! left to `linearizable`. A value written twice counts as either write (values are meant to be
//! unique per write).

use std::collections::BTreeMap;

use crate::history::{Event, FaultKind, History, NodeRole, Phase, Return};
use crate::properties::kv_ops::{KvOperation, KvOutcome, kv_operations};
use crate::verdict::{Finding, PropertyReport, Verdict};

pub(super) fn check(history: &History) -> PropertyReport {
    let operations = kv_operations(history);
    let crashes = server_crashes(history);
    let mut by_key: BTreeMap<&str, Vec<&KvOperation>> = BTreeMap::new();
    for op in &operations {
        by_key.entry(op.key()).or_default().push(op);
    }
    let mut findings = Vec::new();
    let mut judged = 0usize;
    for read in operations.iter().filter(|_| !crashes.is_empty()) {
        let (Some(read_ok_ns), KvOutcome::Ok(Return::Got { value, .. })) = (read.ok_ns(), &read.outcome) else {
            continue;
        };
        let key = read.key();
        let same_key = || by_key[key].iter().copied();
        let newest = same_key()
            .filter(|w| w.ok_ns().is_some_and(|ok| ok < read.invoke_ns))
            .filter_map(|w| w.write_revision().map(|revision| (revision, w)))
            .max_by_key(|(revision, _)| *revision);
        let Some((revision, newest)) = newest else { continue };
        let ok_ns = newest.ok_ns().expect("filtered on ok");
        let between: Vec<&(u64, usize, String)> =
            crashes.iter().filter(|(ns, _, _)| *ns > ok_ns && *ns < read_ok_ns).collect();
        if between.is_empty() {
            continue;
        }
        judged += 1;
        let value = value.as_deref();
        let possible = |w: &&KvOperation| {
            let later = match (&w.outcome, w.write_revision()) {
                (KvOutcome::Ok(_), Some(r)) => r >= revision,
                (KvOutcome::Unknown, _) => w.invoke_ns < read_ok_ns,
                _ => false,
            };
            later && w.written() == Some(value)
        };
        if same_key().any(|w| possible(&w)) {
            continue;
        }
        let source = same_key()
            .filter(|w| w.written() == Some(value) && w.write_revision().is_some_and(|r| r < revision))
            .max_by_key(|w| w.write_revision());
        let read_value = value.unwrap_or("(absent)");
        let from = match source {
            Some(w) => format!("the value of the older {}", w.describe()),
            None if value.is_none() => "the key's state before any acknowledged write".to_string(),
            None => "a value no write before it could explain".to_string(),
        };
        let names: Vec<String> =
            between.iter().map(|(ns, _, target)| format!("{target} at {}", History::fmt_time(*ns))).collect();
        let mut entries = newest.entries();
        entries.extend(between.iter().map(|(_, entry, _)| *entry));
        entries.extend(read.entries());
        findings.push(Finding {
            time_ns: ok_ns,
            until_ns: Some(read_ok_ns),
            message: format!(
                "{} (revision {revision}, acknowledged at {}) was lost across the crash of {}: {} read {read_value}, {from}",
                newest.describe(),
                History::fmt_time(ok_ns),
                names.join(", "),
                read.describe(),
            ),
            entries,
        });
    }
    let verdict = if findings.is_empty() { Verdict::Pass } else { Verdict::Fail };
    let summary = match verdict {
        Verdict::Pass if operations.is_empty() => "no key-value operations in this history".to_string(),
        Verdict::Pass if judged == 0 => {
            format!("no read followed a server crash that came after an acknowledged write ({} crashes)", crashes.len())
        }
        Verdict::Pass => format!("{judged} reads after a server crash saw every write acknowledged before it"),
        _ => format!("{} reads after a server crash missed an acknowledged write", findings.len()),
    };
    PropertyReport { property: "durability".into(), verdict, summary, findings }
}

/// (time, entry, server) of the start of every crash of a server.
fn server_crashes(history: &History) -> Vec<(u64, usize, String)> {
    let is_server = |name: &str| history.nodes.iter().any(|n| n.name == name && n.role == NodeRole::Server);
    let mut out = Vec::new();
    for (index, entry) in history.entries.iter().enumerate() {
        if let Event::Fault { kind: FaultKind::Crash, phase: Phase::Start, targets, .. } = &entry.event {
            for target in targets.iter().filter(|t| is_server(t)) {
                out.push((entry.time_ns, index, target.clone()));
            }
        }
    }
    out
}
