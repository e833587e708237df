//! Linearizability of the key-value operations (Herlihy & Wing 1990): some total order of them
//! respects real time and a sequential key-value map. Checked with the engine of
//! `crate::linearizability` (Wing & Gong search, Lowe's cache, one key at a time), after
//! `linearizability::from_history` maps the history's operations to the key-value model.
//!
//! Past [`TIME_LIMIT`] or [`MEMORY_LIMIT_BYTES`] the verdict is `unknown`. On a violation the
//! findings give the counterexample of the first failing key: one finding per operation that
//! could not be placed after the longest linearizable prefix (with its entries), then the prefix
//! itself, in linearization order.

use std::time::Duration;

use crate::history::History;
use crate::linearizability::{self, CheckOptions, Counterexample, HistoryKvModel, KvHistory, Verdict as Lin};
use crate::verdict::{Finding, PropertyReport, Verdict};

/// Wall-clock budget of one history's check. Sweeps check every seed, so it is far below the
/// command line's default.
pub const TIME_LIMIT: Duration = Duration::from_secs(10);
/// Budget for the search caches of one history's check.
pub const MEMORY_LIMIT_BYTES: usize = 512 << 20;
/// Prefix operations named in the prefix finding's message (all are in its entries).
const PREFIX_SHOWN: usize = 10;

/// The limits a simulated run's history is checked under: one partition after another (sweeps
/// already keep every core busy with seeds) and the lowest failing key reported, so the report
/// is the same on every run.
pub fn run_options() -> CheckOptions {
    CheckOptions {
        time_limit: Some(TIME_LIMIT),
        memory_limit_bytes: Some(MEMORY_LIMIT_BYTES),
        parallel: false,
        first_failure_wins: false,
    }
}

pub(super) fn check(history: &History) -> PropertyReport {
    check_with(history, &run_options())
}

/// [`check`] under other limits (`coordsim check`'s `--timeout` and `--memory-limit`).
pub(super) fn check_with(history: &History, options: &CheckOptions) -> PropertyReport {
    let kv = linearizability::from_history(history);
    let report = |verdict, summary: String, findings| PropertyReport {
        property: "linearizable".into(),
        verdict,
        summary,
        findings,
    };
    if kv.source.is_empty() {
        return report(Verdict::Pass, "no key-value operations in this history".into(), Vec::new());
    }
    let counts = counts(&kv);
    match linearizability::check(&HistoryKvModel::new(), &kv.operations, options) {
        Err(error) => {
            report(Verdict::Unknown, format!("the key-value operations cannot be checked: {error}"), Vec::new())
        }
        Ok(Lin::Ok) => report(Verdict::Pass, format!("{counts}: linearizable"), Vec::new()),
        Ok(Lin::Unknown { reason }) => {
            report(Verdict::Unknown, format!("{counts}: undecided, {}", limit_reached(reason, options)), Vec::new())
        }
        Ok(Lin::Illegal(counterexample)) => {
            let findings = findings(&kv, &counterexample);
            let summary = format!(
                "{counts}: not linearizable; after a longest linearizable prefix of {} operations on key {}, {} operations cannot go next",
                counterexample.prefix.len(),
                key_of(&kv, &counterexample),
                counterexample.stuck.len()
            );
            report(Verdict::Fail, summary, findings)
        }
    }
}

/// "time limit reached (10 s)": the limit that stopped the search and its value.
pub fn limit_reached(reason: linearizability::UnknownReason, options: &CheckOptions) -> String {
    use linearizability::UnknownReason;
    match (reason, options.time_limit, options.memory_limit_bytes) {
        (UnknownReason::TimeLimit, Some(limit), _) => format!("{reason} ({} s)", limit.as_secs_f64()),
        (UnknownReason::MemoryLimit, _, Some(bytes)) if bytes >= 1 << 20 => format!("{reason} ({} MiB)", bytes >> 20),
        (UnknownReason::MemoryLimit, _, Some(bytes)) => format!("{reason} ({} KiB)", bytes >> 10),
        _ => reason.to_string(),
    }
}

fn counts(kv: &KvHistory) -> String {
    let keys: std::collections::BTreeSet<&str> = kv.source.values().map(|op| op.key()).collect();
    let dropped = kv.source.len() - kv.operations.len() - kv.unobserved;
    let open_checked = kv.operations.iter().filter(|op| op.output.is_none()).count();
    let open = open_checked + kv.unobserved;
    let set_aside = match kv.unobserved {
        0 => String::new(),
        n => format!("; {n} unknown puts of values nothing read set aside"),
    };
    format!(
        "{} key-value operations on {} keys ({} ok, {open} unknown, {dropped} failed{set_aside})",
        kv.source.len(),
        keys.len(),
        kv.operations.len() - open_checked
    )
}

fn key_of(kv: &KvHistory, counterexample: &Counterexample) -> String {
    let any_op = counterexample.stuck.first().map(|s| s.id).or(counterexample.prefix.first().copied());
    any_op.and_then(|op| kv.source.get(&op)).map_or_else(|| "?".into(), |op| op.key().to_string())
}

fn findings(kv: &KvHistory, counterexample: &Counterexample) -> Vec<Finding> {
    let describe = |op: u64| kv.source.get(&op).map_or_else(|| format!("op {op}"), |o| o.describe());
    let time_of = |op: u64| kv.source.get(&op).map_or(0, |o| o.invoke_ns);
    let state = kv.state_after(&counterexample.prefix).unwrap_or_else(|| counterexample.state_after_prefix.clone());
    let mut findings: Vec<Finding> = counterexample
        .stuck
        .iter()
        .map(|stuck| {
            let source = kv.source.get(&stuck.id);
            Finding {
                time_ns: time_of(stuck.id),
                until_ns: source.and_then(|o| o.complete.map(|(ns, _)| ns)),
                message: format!(
                    "{} cannot be placed after the longest linearizable prefix ({} operations; the key then holds {})",
                    describe(stuck.id),
                    counterexample.prefix.len(),
                    state
                ),
                entries: kv.entries_of(stuck.id),
            }
        })
        .collect();
    let shown: Vec<String> =
        counterexample.prefix.iter().rev().take(PREFIX_SHOWN).rev().map(|&op| describe(op)).collect();
    let elided = counterexample.prefix.len().saturating_sub(PREFIX_SHOWN);
    let elided = if elided > 0 { format!("{elided} earlier operations, then ") } else { String::new() };
    findings.push(Finding {
        time_ns: counterexample.prefix.first().map_or(0, |&op| time_of(op)),
        until_ns: counterexample.prefix.last().map(|&op| time_of(op)),
        message: format!(
            "longest linearizable prefix ({} operations, in linearization order): {elided}{}",
            counterexample.prefix.len(),
            if shown.is_empty() { "(empty)".to_string() } else { shown.join("; ") }
        ),
        entries: counterexample.prefix.iter().map(|&op| kv.source.get(&op).map_or(0, |o| o.invoke_entry)).collect(),
    });
    findings
}
