//! The entry point: validate, partition, search each part, combine.

use std::time::Instant;

use rayon::prelude::*;

use super::budget::{Budget, Meter, Stop};
use super::engine::{self, Outcome, SearchStats, entries_of};
use super::entries::END;
use super::model::Model;
use super::operation::{HistoryError, Operation};
use super::partition::parts_of;
use super::verdict::{CheckOptions, Counterexample, StuckOperation, UnknownReason, Verdict};

/// Checks `history` against `model`.
///
/// Operations may come in any order; ids must be unique. Errors mean the history cannot be checked
/// as given (duplicate ids, a return before its call, a bad partition); the verdict is in `Ok`.
pub fn check<M: Model>(
    model: &M,
    history: &[Operation<M::Input, M::Output>],
    options: &CheckOptions,
) -> Result<Verdict, HistoryError> {
    check_with_stats(model, history, options).map(|(verdict, _)| verdict)
}

/// What a check cost: how much of the search space it entered and the memory its caches held.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CheckStats {
    /// Partitions searched (those skipped after an earlier failure are not counted).
    pub partitions: usize,
    /// (set of linearized operations, model state) pairs entered, summed over partitions: the
    /// search steps that went forward.
    pub cache_entries: usize,
    /// Distinct model states interned, summed over partitions.
    pub states: usize,
    /// The estimated bytes of the largest partition's cache when its search ended (partitions
    /// checked one after the other hold one cache at a time).
    pub peak_partition_bytes: usize,
    /// The estimated bytes of all partitions' caches together (the peak when partitions run in
    /// parallel, at most).
    pub total_bytes: usize,
}

/// [`check`], also returning what the search cost.
pub fn check_with_stats<M: Model>(
    model: &M,
    history: &[Operation<M::Input, M::Output>],
    options: &CheckOptions,
) -> Result<(Verdict, CheckStats), HistoryError> {
    let budget = Budget::new(options, Instant::now());
    validate(history)?;
    let parts = parts_of(model, history)?;
    let check_part = |(index, part): (usize, &Vec<usize>)| {
        let ops: Vec<_> = part.iter().map(|&i| &history[i]).collect();
        check_part(model, &ops, index, &budget)
    };
    let results: Vec<(PartResult, Option<SearchStats>)> = if options.parallel && parts.len() > 1 {
        parts.par_iter().enumerate().map(check_part).collect()
    } else {
        // One after the other; the first failure ends the check.
        let mut results = Vec::with_capacity(parts.len());
        for result in parts.iter().enumerate().map(check_part) {
            let failed = matches!(result.0, PartResult::Illegal(_));
            results.push(result);
            if failed {
                break;
            }
        }
        results
    };
    let mut stats = CheckStats::default();
    for (_, part) in &results {
        stats.partitions += usize::from(part.is_some());
        let part = part.unwrap_or_default();
        stats.cache_entries += part.cache_entries;
        stats.states += part.states;
        stats.peak_partition_bytes = stats.peak_partition_bytes.max(part.bytes);
        stats.total_bytes += part.bytes;
    }
    Ok((combine(results.into_iter().map(|(result, _)| result).collect()), stats))
}

enum PartResult {
    Ok,
    Illegal(Counterexample),
    Unknown(UnknownReason),
    Cancelled,
}

/// Illegal wins over unknown (one illegal part makes the history illegal whatever the others
/// say), and among failures the lowest part index wins, so the answer does not depend on timing.
fn combine(results: Vec<PartResult>) -> Verdict {
    let mut unknown = None;
    for result in results {
        match result {
            PartResult::Illegal(counterexample) => return Verdict::Illegal(counterexample),
            PartResult::Unknown(reason) => unknown = unknown.or(Some(reason)),
            PartResult::Ok | PartResult::Cancelled => {}
        }
    }
    match unknown {
        Some(reason) => Verdict::Unknown { reason },
        None => Verdict::Ok,
    }
}

fn validate<I, O>(history: &[Operation<I, O>]) -> Result<(), HistoryError> {
    for op in history {
        if op.effective_return_ns() < op.call_ns {
            return Err(HistoryError::ReturnBeforeCall { id: op.id, call_ns: op.call_ns, return_ns: op.return_ns });
        }
    }
    let mut ids: Vec<_> = history.iter().map(|op| op.id).collect();
    ids.sort_unstable();
    match ids.windows(2).find(|pair| pair[0] == pair[1]) {
        Some(pair) => Err(HistoryError::DuplicateId(pair[0])),
        None => Ok(()),
    }
}

fn check_part<M: Model>(
    model: &M,
    ops: &[&Operation<M::Input, M::Output>],
    index: usize,
    budget: &Budget,
) -> (PartResult, Option<SearchStats>) {
    if budget.is_cancelled(index) {
        return (PartResult::Cancelled, None);
    }
    let mut meter = Meter::new(budget, index);
    let (outcome, stats) = engine::search(model, ops, &mut meter);
    let result = match outcome {
        Outcome::Linearizable => PartResult::Ok,
        Outcome::Illegal { longest_prefix } => {
            budget.report_failure(index);
            PartResult::Illegal(counterexample(model, ops, index, &longest_prefix))
        }
        Outcome::Stopped(Stop::Limit(reason)) => PartResult::Unknown(reason),
        Outcome::Stopped(Stop::Cancelled) => PartResult::Cancelled,
    };
    (result, Some(stats))
}

/// Replays the longest prefix and lists the operations that real time allows next: those whose
/// call precedes the earliest return among the operations left. The search tried each of them
/// after this prefix; none can be accepted by the model there (had one been, the search would have
/// gone one step deeper, since a deeper (set, state) pair cannot have been visited before).
fn counterexample<M: Model>(
    model: &M,
    ops: &[&Operation<M::Input, M::Output>],
    partition: usize,
    longest_prefix: &[u32],
) -> Counterexample {
    let mut entries = entries_of(ops);
    let mut call_node = vec![END; ops.len()];
    let mut node = entries.first();
    while node != END {
        if entries.is_call(node) {
            call_node[entries.op(node) as usize] = node;
        }
        node = entries.next(node);
    }
    let mut state = model.init();
    for &op_index in longest_prefix {
        let op = ops[op_index as usize];
        state = model
            .step(&state, &op.input, op.output.as_ref())
            .expect("the model accepted this prefix during the search (models are deterministic)");
        entries.lift(call_node[op_index as usize]);
    }
    let mut stuck = Vec::new();
    let mut node = entries.first();
    while node != END && entries.is_call(node) {
        let op = ops[entries.op(node) as usize];
        debug_assert!(model.step(&state, &op.input, op.output.as_ref()).is_none());
        stuck.push(StuckOperation {
            id: op.id,
            client: op.client,
            description: model.describe_operation(&op.input, op.output.as_ref()),
        });
        node = entries.next(node);
    }
    stuck.sort_by_key(|op| op.id);
    Counterexample {
        partition,
        prefix: longest_prefix.iter().map(|&op_index| ops[op_index as usize].id).collect(),
        state_after_prefix: model.describe_state(&state),
        stuck,
    }
}
