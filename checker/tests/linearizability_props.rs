//! Properties of the linearizability checker, against two independent oracles:
//! - histories generated from a sequential run of the register, with each operation's interval
//!   stretched around its linearization point, are linearizable by construction;
//! - on tiny histories (at most 7 operations) the verdict equals that of a brute-force checker that
//!   tries every order allowed by real time.

use coordsim_checker::linearizability::models::{
    KvInput, KvModel, KvOp, KvOutput, MutexInput, MutexModel, MutexOutput, RegisterInput, RegisterModel,
    RegisterOutput, Txn, TxnCompare,
};
use coordsim_checker::linearizability::{
    CheckOptions, Model, Operation, RETURN_NEVER, Verdict, check, drop_unobserved_puts, merge_unread_values,
};
use proptest::prelude::*;

type In = RegisterInput<i64>;
type Out = RegisterOutput<i64>;

/// Did some order of `history` respect real time and the model? Tries them all.
fn brute_force<M: Model>(model: &M, history: &[Operation<M::Input, M::Output>]) -> bool {
    let mut placed = vec![false; history.len()];
    place_rest(model, history, &mut placed, model.init())
}

fn place_rest<M: Model>(
    model: &M,
    history: &[Operation<M::Input, M::Output>],
    placed: &mut [bool],
    state: M::State,
) -> bool {
    if placed.iter().all(|&placed| placed) {
        return true;
    }
    let return_of = |op: &Operation<M::Input, M::Output>| {
        if op.output.is_some() { op.return_ns } else { RETURN_NEVER }
    };
    for (index, op) in history.iter().enumerate() {
        // `op` may go next unless some other unplaced operation returned strictly before its call.
        let blocked = history
            .iter()
            .enumerate()
            .any(|(other, other_op)| other != index && !placed[other] && return_of(other_op) < op.call_ns);
        if placed[index] || blocked {
            continue;
        }
        let Some(next) = model.step(&state, &op.input, op.output.as_ref()) else {
            continue;
        };
        placed[index] = true;
        let found = place_rest(model, history, placed, next);
        placed[index] = false;
        if found {
            return true;
        }
    }
    false
}

fn verdict<M: Model>(model: &M, history: &[Operation<M::Input, M::Output>]) -> bool {
    match check(model, history, &CheckOptions { parallel: false, ..CheckOptions::default() }).unwrap() {
        Verdict::Ok => true,
        Verdict::Illegal(_) => false,
        Verdict::Unknown { reason } => panic!("unknown on a tiny history: {reason}"),
    }
}

/// Register inputs over a small value domain, so that reads and compares often match.
fn register_input() -> impl Strategy<Value = In> {
    prop_oneof![
        Just(In::Read),
        (0..3i64).prop_map(In::Write),
        (0..3i64, 0..3i64).prop_map(|(expected, new)| In::Cas { expected, new }),
    ]
}

/// What a sequential register returns for `input` in `state`, and the state after it.
fn run_register(state: Option<i64>, input: &In) -> (Out, Option<i64>) {
    match input {
        In::Read => (Out::Read(state), state),
        In::Write(value) => (Out::Write, Some(*value)),
        In::Cas { expected, new } if state == Some(*expected) => (Out::Cas { swapped: true }, Some(*new)),
        In::Cas { .. } => (Out::Cas { swapped: false }, state),
    }
}

/// One generated operation of a sequential run: its input, how far its interval reaches before
/// and after its linearization point, and whether its outcome is lost (then whether it took
/// effect).
fn sequential_op() -> impl Strategy<Value = (In, u64, u64, bool, bool)> {
    (register_input(), 0..60u64, 0..60u64, prop::bool::weighted(0.15), any::<bool>())
}

fn history_from_sequential_run(ops: &[(In, u64, u64, bool, bool)]) -> Vec<Operation<In, Out>> {
    let mut state = None;
    let mut history = Vec::new();
    for (index, (input, before, after, lost, took_effect)) in ops.iter().enumerate() {
        let point = 100 + 10 * index as u64;
        let (output, next) = run_register(state, input);
        // A lost outcome that never took effect leaves the state alone; one that did took effect
        // at its point like any other operation.
        if !lost || *took_effect {
            state = next;
        }
        history.push(Operation {
            id: index as u64,
            client: index as u64,
            input: input.clone(),
            output: (!lost).then_some(output),
            call_ns: point - before,
            return_ns: if *lost { RETURN_NEVER } else { point + after },
        });
    }
    history
}

/// A random tiny history: random intervals, inputs and outputs (mostly not linearizable).
/// Operation `index` of a tiny history: called at `call`, returning `length` later unless `lost`.
fn tiny_op<I, O>(index: usize, input: I, output: O, lost: bool, call: u64, length: u64) -> Operation<I, O> {
    Operation {
        id: index as u64,
        client: index as u64,
        input,
        output: (!lost).then_some(output),
        call_ns: call,
        return_ns: if lost { RETURN_NEVER } else { call + length },
    }
}

fn tiny_register_history() -> impl Strategy<Value = Vec<Operation<In, Out>>> {
    register_history_of(7, 0.15)
}

/// Up to `ops` operations, each lost (never returned) with probability `lost`.
fn register_history_of(ops: usize, lost: f64) -> impl Strategy<Value = Vec<Operation<In, Out>>> {
    let output = prop_oneof![
        3 => prop::option::of(0..3i64).prop_map(Out::Read),
        1 => Just(Out::Write),
        2 => any::<bool>().prop_map(|swapped| Out::Cas { swapped }),
    ];
    let one = (register_input(), output, 0..40u64, 0..20u64, prop::bool::weighted(lost));
    prop::collection::vec(one, 0..=ops).prop_map(|ops| {
        ops.into_iter()
            .enumerate()
            .map(|(index, (input, output, call, length, lost))| {
                // Outputs of the input's own kind, so that most histories are not trivially illegal.
                let output = match (&input, output) {
                    (In::Read, out @ Out::Read(_)) => out,
                    (In::Read, _) => Out::Read(None),
                    (In::Write(_), _) => Out::Write,
                    (In::Cas { .. }, out @ Out::Cas { .. }) => out,
                    (In::Cas { .. }, _) => Out::Cas { swapped: true },
                };
                tiny_op(index, input, output, lost, call, length)
            })
            .collect()
    })
}

fn tiny_mutex_history() -> impl Strategy<Value = Vec<Operation<MutexInput, MutexOutput>>> {
    let input = (any::<bool>(), 0..3u64).prop_map(|(acquire, owner)| {
        if acquire { MutexInput::Acquire { owner } } else { MutexInput::Release { owner } }
    });
    let output = prop_oneof![4 => Just(Some(MutexOutput::Ok)), 1 => Just(Some(MutexOutput::Refused)), 1 => Just(None)];
    let one = (input, output, 0..40u64, 0..20u64);
    prop::collection::vec(one, 0..=7).prop_map(|ops| {
        ops.into_iter()
            .enumerate()
            .map(|(index, (input, output, call, length))| Operation {
                id: index as u64,
                client: index as u64,
                input,
                return_ns: if output.is_some() { call + length } else { RETURN_NEVER },
                output,
                call_ns: call,
            })
            .collect()
    })
}

type KvOpOf = Operation<KvInput<u8, u8>, KvOutput<u8>>;

/// Up to 7 operations on two keys with three values (so that values repeat and collide): puts
/// (a third of them unknown), gets, deletes and compare-and-swaps, known or unknown.
fn tiny_kv_history() -> impl Strategy<Value = Vec<KvOpOf>> {
    // Kinds: 0-2 put, 3-4 get, 5 delete, 6-8 compare-and-swap; key 1 one time in four.
    let key = prop::bool::weighted(0.25).prop_map(u8::from);
    let one = (0..9u8, key, 0..3u8, 0..3u8, any::<bool>(), prop::bool::weighted(0.35), 0..40u64, 0..20u64);
    prop::collection::vec(one, 0..=7).prop_map(|ops| {
        ops.into_iter()
            .enumerate()
            .map(|(index, (kind, key, a, b, flag, lost, call, length))| {
                let (input, output) = match kind {
                    0..=2 => (KvInput::Op(KvOp::Put(key, a)), KvOutput::Done),
                    3 | 4 => (KvInput::Op(KvOp::Get(key)), KvOutput::Get(flag.then_some(a))),
                    5 => (KvInput::Op(KvOp::Delete(key)), KvOutput::Deleted { existed: flag }),
                    _ => (
                        KvInput::Txn(Txn {
                            compare: vec![TxnCompare { key, value: Some(a) }],
                            success: vec![KvOp::Put(key, b)],
                            failure: Vec::new(),
                        }),
                        KvOutput::Txn { succeeded: flag, gets: Vec::new() },
                    ),
                };
                tiny_op(index, input, output, lost, call, length)
            })
            .collect()
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

    /// Merging unread values and dropping the unknown puts nothing could observe never changes
    /// the verdict (the oracle judges the whole history, the checker the rewritten one).
    #[test]
    fn dropping_unobserved_puts_keeps_the_verdict(history in tiny_kv_history()) {
        let model = KvModel::<u8, u8>::new();
        let mut pruned = history.clone();
        prop_assert!(merge_unread_values(&mut pruned, &9).is_some());
        drop_unobserved_puts(&mut pruned);
        prop_assert_eq!(verdict(&model, &pruned), brute_force(&model, &history));
    }

    #[test]
    fn histories_of_a_sequential_register_are_linearizable(ops in prop::collection::vec(sequential_op(), 0..60)) {
        let history = history_from_sequential_run(&ops);
        prop_assert!(verdict(&RegisterModel::new(), &history));
    }

    /// Changing one read's value in a sequential run's history: the checker must agree with the
    /// brute-force oracle on the result (illegal whenever no order explains the new value).
    #[test]
    fn a_mutated_read_is_judged_like_the_oracle_judges_it(
        ops in prop::collection::vec(sequential_op(), 1..7),
        pick in any::<prop::sample::Index>(),
        value in prop::option::of(0..3i64),
    ) {
        let mut history = history_from_sequential_run(&ops);
        let reads: Vec<usize> = (0..history.len())
            .filter(|&i| matches!(history[i].output, Some(Out::Read(_))))
            .collect();
        if reads.is_empty() {
            return Ok(());
        }
        let target = reads[pick.index(reads.len())];
        history[target].output = Some(Out::Read(value));
        prop_assert_eq!(verdict(&RegisterModel::new(), &history), brute_force(&RegisterModel::new(), &history));
    }

    #[test]
    fn register_verdicts_match_brute_force(history in tiny_register_history()) {
        prop_assert_eq!(verdict(&RegisterModel::new(), &history), brute_force(&RegisterModel::new(), &history));
    }

    /// Many operations that never returned, which the search places just in time (engine.rs):
    /// the verdict is still the oracle's.
    #[test]
    fn register_verdicts_with_many_lost_operations_match_brute_force(history in register_history_of(8, 0.4)) {
        prop_assert_eq!(verdict(&RegisterModel::new(), &history), brute_force(&RegisterModel::new(), &history));
    }

    #[test]
    fn mutex_verdicts_match_brute_force(history in tiny_mutex_history()) {
        prop_assert_eq!(verdict(&MutexModel, &history), brute_force(&MutexModel, &history));
    }
}

/// The oracles must themselves see both verdicts often, or the properties above prove little.
#[test]
fn the_random_tiny_histories_are_sometimes_linearizable_and_sometimes_not() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let (mut ok, mut illegal) = (0, 0);
    for _ in 0..500 {
        let history = tiny_register_history().new_tree(&mut runner).unwrap().current();
        if brute_force(&RegisterModel::new(), &history) { ok += 1 } else { illegal += 1 }
    }
    assert!(ok > 50 && illegal > 50, "ok {ok}, illegal {illegal}");
}
