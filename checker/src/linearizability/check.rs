//! The entry point: validate, partition, search each part, combine.

use std::time::Instant;

use rayon::prelude::*;

use super::budget::{Budget, Meter, Stop};
use super::engine::{self, Outcome, Progress, SearchStats, entries_of};
use super::entries::END;
use super::model::Model;
use super::operation::{HistoryError, OpId, Operation};
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

/// What a check cost: how much of the search space it entered and the memory its caches held,
/// and what each partition's search found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CheckStats {
    /// One per partition, in partition order (by smallest operation id).
    pub parts: Vec<PartOutcome>,
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

/// One partition's outcome.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PartOutcome {
    /// The partition's smallest operation id (to name its key).
    pub first_op: OpId,
    pub operations: usize,
    pub verdict: PartVerdict,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PartVerdict {
    Linearizable,
    Illegal,
    Unknown(UnknownReason),
    /// Not searched to the end: another partition's failure decided the history.
    Skipped,
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
    let part_ops: Vec<Vec<&Operation<M::Input, M::Output>>> = parts
        .iter()
        .map(|part| {
            let mut ops: Vec<_> = part.iter().map(|&i| &history[i]).collect();
            engine::order_for_search(&mut ops);
            ops
        })
        .collect();
    let mut states: Vec<PartState<'_, M>> = part_ops
        .iter()
        .enumerate()
        .map(|(index, ops)| PartState {
            index,
            ops,
            search: None,
            meter: Meter::new(&budget, index),
            result: None,
            stats: None,
        })
        .collect();
    // Rounds of doubling step allowances: every undecided partition advances in each round, so an
    // easy failure is found early whatever its index, and each round's results decide whether
    // the check is over (see `decided`).
    let mut steps = FIRST_ROUND_STEPS;
    loop {
        let pending: Vec<&mut PartState<'_, M>> = states.iter_mut().filter(|state| state.result.is_none()).collect();
        if pending.is_empty() {
            break;
        }
        if options.parallel && pending.len() > 1 {
            pending.into_par_iter().for_each(|state| state.advance(model, &budget, steps));
        } else {
            pending.into_iter().for_each(|state| state.advance(model, &budget, steps));
        }
        if decided(&states, options) {
            break;
        }
        steps = steps.saturating_mul(2);
    }
    let results: Vec<(PartResult, Option<SearchStats>)> =
        states.into_iter().map(|state| (state.result.unwrap_or(PartResult::Cancelled), state.stats)).collect();
    let mut stats = CheckStats::default();
    for (index, part) in parts.iter().enumerate() {
        let verdict = match &results[index].0 {
            PartResult::Ok => PartVerdict::Linearizable,
            PartResult::Illegal(_) => PartVerdict::Illegal,
            PartResult::Unknown(reason) => PartVerdict::Unknown(*reason),
            PartResult::Cancelled => PartVerdict::Skipped,
        };
        let first_op = part.iter().map(|&i| history[i].id).min().unwrap_or_default();
        stats.parts.push(PartOutcome { first_op, operations: part.len(), verdict });
    }
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

/// Steps of every partition's first round; each round doubles it. Small enough that a round of a
/// few dozen partitions takes milliseconds, large enough that most partitions end in their first.
const FIRST_ROUND_STEPS: u64 = 1 << 14;

/// One partition's search across rounds.
struct PartState<'a, M: Model> {
    index: usize,
    ops: &'a [&'a Operation<M::Input, M::Output>],
    /// Made on the first round (on the thread that runs it) and dropped when decided, so memory
    /// is held only while a search is open.
    search: Option<engine::Search<'a, M>>,
    meter: Meter<'a>,
    result: Option<PartResult>,
    stats: Option<SearchStats>,
}

impl<'a, M: Model> PartState<'a, M> {
    fn advance(&mut self, model: &'a M, budget: &Budget, steps: u64) {
        if budget.is_cancelled(self.index) {
            self.finish(PartResult::Cancelled);
            return;
        }
        let search = self.search.get_or_insert_with(|| engine::Search::new(model, self.ops));
        let Progress::Done(outcome) = search.resume(&mut self.meter, steps) else {
            return;
        };
        self.stats = Some(search.stats());
        let result = match outcome {
            Outcome::Linearizable => PartResult::Ok,
            Outcome::Illegal { longest_prefix } => {
                budget.report_failure(self.index);
                PartResult::Illegal(counterexample(model, self.ops, self.index, &longest_prefix))
            }
            Outcome::Stopped(Stop::Limit(reason)) => PartResult::Unknown(reason),
            Outcome::Stopped(Stop::Cancelled) => PartResult::Cancelled,
        };
        self.finish(result);
    }

    fn finish(&mut self, result: PartResult) {
        self.search = None;
        self.meter.release();
        self.result = Some(result);
    }
}

/// Whether the rounds can stop with partitions still open: with `first_failure_wins`, as soon
/// as one is illegal; otherwise once one is illegal and every partition before it is decided (the
/// reported failure is then the lowest, whatever the timing).
fn decided<M: Model>(states: &[PartState<'_, M>], options: &CheckOptions) -> bool {
    let Some(lowest) = states.iter().position(|state| matches!(state.result, Some(PartResult::Illegal(_)))) else {
        return false;
    };
    options.first_failure_wins || states[..lowest].iter().all(|state| state.result.is_some())
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
        node = entries.next(node);
        if model.step(&state, &op.input, op.output.as_ref()).is_some() {
            // Accepted and not taken: a read-only operation the search placed here before, and
            // all that followed failed (engine.rs).
            debug_assert!(model.read_only(&op.input, op.output.as_ref()));
            continue;
        }
        stuck.push(StuckOperation {
            id: op.id,
            client: op.client,
            description: model.describe_operation(&op.input, op.output.as_ref()),
        });
    }
    stuck.sort_by_key(|op| op.id);
    Counterexample {
        partition,
        prefix: longest_prefix.iter().map(|&op_index| ops[op_index as usize].id).collect(),
        state_after_prefix: model.describe_state(&state),
        stuck,
    }
}
