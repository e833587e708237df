//! Small histories with verdicts worked out by hand, one `check_case` per case, plus limits,
//! counterexamples, determinism and input errors.

use std::time::{Duration, Instant};

use coordsim_checker::linearizability::models::{
    KvInput, KvModel, KvOp, KvOutput, MutexInput, MutexModel, MutexOutput, RegisterInput, RegisterModel,
    RegisterOutput, Txn, TxnCompare,
};
use coordsim_checker::linearizability::{
    CheckOptions, HistoryError, Model, Operation, RETURN_NEVER, UnknownReason, Verdict, check,
};

/// One operation: `[call, return]` in ns; `output: None` leaves it open to the end.
fn op<I, O>(id: u64, client: u64, input: I, output: Option<O>, call_ns: u64, return_ns: u64) -> Operation<I, O> {
    Operation { id, client, input, output, call_ns, return_ns }
}

fn open<I, O>(id: u64, client: u64, input: I, call_ns: u64) -> Operation<I, O> {
    op(id, client, input, None, call_ns, RETURN_NEVER)
}

#[derive(Debug, PartialEq)]
enum Expect {
    Ok,
    Illegal,
}

fn check_case<M: Model>(name: &str, model: &M, history: &[Operation<M::Input, M::Output>], expected: Expect) {
    for parallel in [false, true] {
        let options = CheckOptions { parallel, ..CheckOptions::default() };
        let verdict = check(model, history, &options).unwrap();
        let got = match verdict {
            Verdict::Ok => Expect::Ok,
            Verdict::Illegal(_) => Expect::Illegal,
            Verdict::Unknown { reason } => panic!("{name}: unknown ({reason})"),
        };
        assert_eq!(got, expected, "{name} (parallel: {parallel})");
    }
}

mod register {
    use super::*;

    type In = RegisterInput<i64>;
    type Out = RegisterOutput<i64>;

    fn read(id: u64, value: Option<i64>, call: u64, ret: u64) -> Operation<In, Out> {
        op(id, id, In::Read, Some(Out::Read(value)), call, ret)
    }

    fn write(id: u64, value: i64, call: u64, ret: u64) -> Operation<In, Out> {
        op(id, id, In::Write(value), Some(Out::Write), call, ret)
    }

    fn cas(id: u64, expected: i64, new: i64, swapped: bool, call: u64, ret: u64) -> Operation<In, Out> {
        op(id, id, In::Cas { expected, new }, Some(Out::Cas { swapped }), call, ret)
    }

    fn case(name: &str, history: Vec<Operation<In, Out>>, expected: Expect) {
        check_case(name, &RegisterModel::new(), &history, expected);
    }

    #[test]
    fn hand_written_histories() {
        case("empty history", vec![], Expect::Ok);
        case("a read of a fresh register sees nil", vec![read(0, None, 0, 1)], Expect::Ok);
        case("write then read", vec![write(0, 1, 0, 10), read(1, Some(1), 20, 30)], Expect::Ok);
        case("read misses a completed write", vec![write(0, 1, 0, 10), read(1, None, 20, 30)], Expect::Illegal);
        case(
            "read overlapping a write may see the old value",
            vec![write(0, 1, 0, 10), read(1, None, 5, 30)],
            Expect::Ok,
        );
        case(
            "read overlapping a write may see the new value",
            vec![write(0, 1, 0, 10), read(1, Some(1), 5, 30)],
            Expect::Ok,
        );
        case(
            "a read cannot see a value before its write was called",
            vec![read(0, Some(1), 0, 10), write(1, 1, 20, 30)],
            Expect::Illegal,
        );
        case("equal times count as concurrent", vec![read(0, Some(1), 0, 10), write(1, 1, 10, 30)], Expect::Ok);
        case(
            "stale read after an overwrite",
            vec![write(0, 1, 0, 10), write(1, 2, 20, 30), read(2, Some(1), 40, 50)],
            Expect::Illegal,
        );
        case(
            "values cannot go back (1, 2, then 1 again)",
            vec![
                write(0, 1, 0, 100),
                write(1, 2, 0, 100),
                read(2, Some(1), 10, 20),
                read(3, Some(2), 30, 40),
                read(4, Some(1), 50, 60),
            ],
            Expect::Illegal,
        );
        case(
            "two readers may see concurrent writes in either order, but consistently",
            vec![write(0, 1, 0, 100), write(1, 2, 0, 100), read(2, Some(2), 10, 20), read(3, Some(1), 30, 40)],
            Expect::Ok,
        );
        case(
            "an open write may take effect long after",
            vec![open(0, 0, In::Write(1), 0), read(1, Some(1), 500, 600)],
            Expect::Ok,
        );
        case(
            "an open write may never take effect",
            vec![open(0, 0, In::Write(1), 0), read(1, None, 500, 600)],
            Expect::Ok,
        );
        case(
            "an open write still cannot take effect before its call",
            vec![read(0, Some(1), 0, 10), open(1, 1, In::Write(1), 20)],
            Expect::Illegal,
        );
        case(
            "an open write takes effect once, not twice",
            vec![
                write(0, 0, 0, 10),
                open(1, 1, In::Write(1), 20),
                read(2, Some(1), 30, 40),
                write(3, 2, 50, 60),
                read(4, Some(1), 70, 80),
            ],
            Expect::Illegal,
        );
        // Two writes of 1, the later-called one returning first: it may also take effect first,
        // the earlier one only after a write of 2 (the symmetry reduction must allow this order).
        case(
            "of two equal writes, the nested one may go first",
            vec![
                write(0, 1, 0, 100),
                write(1, 1, 10, 20),
                read(2, Some(1), 30, 40),
                write(3, 2, 50, 60),
                read(4, Some(1), 110, 120),
            ],
            Expect::Ok,
        );
        case("cas swaps", vec![write(0, 1, 0, 10), cas(1, 1, 2, true, 20, 30), read(2, Some(2), 40, 50)], Expect::Ok);
        case("cas cannot swap from nil", vec![cas(0, 1, 2, true, 0, 10)], Expect::Illegal);
        case("a cas that saw a mismatch", vec![write(0, 1, 0, 10), cas(1, 2, 3, false, 20, 30)], Expect::Ok);
        case(
            "a cas that wrongly saw a mismatch",
            vec![write(0, 1, 0, 10), cas(1, 1, 3, false, 20, 30)],
            Expect::Illegal,
        );
        case(
            "an open cas applies only if its compare matches",
            vec![write(0, 1, 0, 10), open(1, 1, In::Cas { expected: 5, new: 6 }, 20), read(2, Some(6), 30, 40)],
            Expect::Illegal,
        );
        case(
            "an open cas whose compare matched",
            vec![write(0, 1, 0, 10), open(1, 1, In::Cas { expected: 1, new: 6 }, 20), read(2, Some(6), 30, 40)],
            Expect::Ok,
        );
    }

    #[test]
    fn counterexample_names_the_prefix_the_state_and_the_stuck_read() {
        let history = vec![write(10, 1, 0, 10), read(11, Some(1), 20, 30), read(12, None, 40, 50)];
        let Verdict::Illegal(counterexample) =
            check(&RegisterModel::new(), &history, &CheckOptions::default()).unwrap()
        else {
            panic!("stale read must be illegal");
        };
        assert_eq!(counterexample.partition, 0);
        assert_eq!(counterexample.prefix, vec![10, 11]);
        assert_eq!(counterexample.state_after_prefix, "register = 1");
        let stuck: Vec<_> = counterexample.stuck.iter().map(|op| (op.id, op.description.as_str())).collect();
        assert_eq!(stuck, vec![(12, "read = nil")]);
    }

    #[test]
    fn operations_may_come_in_any_order() {
        let mut history = vec![write(0, 1, 0, 10), write(1, 2, 20, 30), read(2, Some(1), 40, 50)];
        let forward = check(&RegisterModel::new(), &history, &CheckOptions::default()).unwrap();
        history.reverse();
        assert_eq!(check(&RegisterModel::new(), &history, &CheckOptions::default()).unwrap(), forward);
    }

    /// n writes of distinct values, all concurrent, then a read of a value never written: every
    /// subset of the writes in every last-written value is a distinct search state (2^n · n).
    fn pathological(n: u64) -> Vec<Operation<In, Out>> {
        let mut history: Vec<_> = (0..n).map(|i| write(i, i as i64, 0, 1_000)).collect();
        history.push(read(n, Some(-1), 2_000, 2_001));
        history
    }

    #[test]
    fn time_limit_gives_unknown_promptly() {
        let options = CheckOptions {
            time_limit: Some(Duration::from_millis(200)),
            memory_limit_bytes: None,
            parallel: false,
            ..CheckOptions::default()
        };
        let started = Instant::now();
        let verdict = check(&RegisterModel::new(), &pathological(60), &options).unwrap();
        assert_eq!(verdict, Verdict::Unknown { reason: UnknownReason::TimeLimit });
        assert!(started.elapsed() < Duration::from_secs(2), "took {:?}", started.elapsed());
    }

    #[test]
    fn memory_limit_gives_unknown() {
        let options = CheckOptions {
            time_limit: Some(Duration::from_secs(60)),
            memory_limit_bytes: Some(4 << 20),
            parallel: false,
            ..CheckOptions::default()
        };
        let verdict = check(&RegisterModel::new(), &pathological(60), &options).unwrap();
        assert_eq!(verdict, Verdict::Unknown { reason: UnknownReason::MemoryLimit });
    }

    /// The memory limit bounds what the search holds, and a higher limit lets it go further:
    /// each of these limits, twice the one before, enters more (set, state) pairs. (Before the
    /// arena grew by chunks and the slot table could fill past half, a limit could double and
    /// stop at the same pair: 8 and 12 GiB on one history, issue 39.)
    #[test]
    fn a_higher_memory_limit_lets_the_search_go_further_and_the_search_stays_within_it() {
        let mut entered = Vec::new();
        for limit_kib in [3072, 6144, 12288, 24576] {
            let limit = limit_kib << 10;
            let options = CheckOptions {
                time_limit: Some(Duration::from_secs(120)),
                memory_limit_bytes: Some(limit),
                parallel: false,
                ..CheckOptions::default()
            };
            let (verdict, stats) =
                coordsim_checker::linearizability::check_with_stats(&RegisterModel::new(), &pathological(40), &options)
                    .unwrap();
            assert_eq!(verdict, Verdict::Unknown { reason: UnknownReason::MemoryLimit });
            assert!(
                stats.peak_partition_bytes <= limit,
                "{} bytes held at a limit of {limit}",
                stats.peak_partition_bytes
            );
            entered.push(stats.cache_entries);
        }
        assert!(entered.windows(2).all(|pair| pair[0] < pair[1]), "pairs entered at each limit: {entered:?}");
    }

    #[test]
    fn small_pathological_histories_finish_within_the_limits() {
        assert!(check(&RegisterModel::new(), &pathological(10), &CheckOptions::default()).unwrap().is_illegal());
    }

    #[test]
    fn malformed_histories_are_errors() {
        let duplicate = vec![write(0, 1, 0, 10), read(0, Some(1), 20, 30)];
        assert_eq!(
            check(&RegisterModel::new(), &duplicate, &CheckOptions::default()),
            Err(HistoryError::DuplicateId(0))
        );
        let backwards = vec![write(0, 1, 10, 5)];
        assert!(matches!(
            check(&RegisterModel::new(), &backwards, &CheckOptions::default()),
            Err(HistoryError::ReturnBeforeCall { id: 0, .. })
        ));
        // An open operation's return time is ignored: it never returns.
        let open_backwards = vec![op(0, 0, In::Write(1), None, 10, 5)];
        assert_eq!(check(&RegisterModel::new(), &open_backwards, &CheckOptions::default()), Ok(Verdict::Ok));
    }
}

mod mutex {
    use super::*;

    fn acquire(id: u64, owner: u64, call: u64, ret: u64) -> Operation<MutexInput, MutexOutput> {
        op(id, owner, MutexInput::Acquire { owner }, Some(MutexOutput::Ok), call, ret)
    }

    fn release(id: u64, owner: u64, call: u64, ret: u64) -> Operation<MutexInput, MutexOutput> {
        op(id, owner, MutexInput::Release { owner }, Some(MutexOutput::Ok), call, ret)
    }

    fn case(name: &str, history: Vec<Operation<MutexInput, MutexOutput>>, expected: Expect) {
        check_case(name, &MutexModel, &history, expected);
    }

    #[test]
    fn hand_written_histories() {
        case(
            "acquire, release, acquire",
            vec![acquire(0, 1, 0, 10), release(1, 1, 20, 30), acquire(2, 2, 40, 50)],
            Expect::Ok,
        );
        case("two holders at once", vec![acquire(0, 1, 0, 10), acquire(1, 2, 20, 30)], Expect::Illegal);
        case("release by a non-holder", vec![acquire(0, 1, 0, 10), release(1, 2, 20, 30)], Expect::Illegal);
        case("release of a free lock", vec![release(0, 1, 0, 10)], Expect::Illegal);
        case(
            "an open release may have freed the lock",
            vec![acquire(0, 1, 0, 10), open(1, 1, MutexInput::Release { owner: 1 }, 20), acquire(2, 2, 30, 40)],
            Expect::Ok,
        );
        case(
            "a slow acquire may be granted after a quicker holder released",
            vec![acquire(0, 1, 0, 50), acquire(1, 2, 10, 20), release(2, 2, 30, 40)],
            Expect::Ok,
        );
        case(
            "refused while held",
            vec![acquire(0, 1, 0, 10), op(1, 2, MutexInput::Acquire { owner: 2 }, Some(MutexOutput::Refused), 20, 30)],
            Expect::Ok,
        );
        case(
            "refused while free",
            vec![op(0, 2, MutexInput::Acquire { owner: 2 }, Some(MutexOutput::Refused), 20, 30)],
            Expect::Illegal,
        );
    }
}

mod kv {
    use super::*;

    type In = KvInput<&'static str, i64>;
    type Out = KvOutput<i64>;

    fn get(id: u64, key: &'static str, value: Option<i64>, call: u64, ret: u64) -> Operation<In, Out> {
        op(id, id, KvInput::Op(KvOp::Get(key)), Some(KvOutput::Get(value)), call, ret)
    }

    fn put(id: u64, key: &'static str, value: i64, call: u64, ret: u64) -> Operation<In, Out> {
        op(id, id, KvInput::Op(KvOp::Put(key, value)), Some(KvOutput::Done), call, ret)
    }

    /// If `key_if == value_if`, put `key_then = value_then`.
    fn txn(
        id: u64,
        (key_if, value_if): (&'static str, i64),
        (key_then, value_then): (&'static str, i64),
        succeeded: bool,
        (call, ret): (u64, u64),
    ) -> Operation<In, Out> {
        let input = KvInput::Txn(Txn {
            compare: vec![TxnCompare { key: key_if, value: Some(value_if) }],
            success: vec![KvOp::Put(key_then, value_then)],
            failure: vec![],
        });
        op(id, id, input, Some(KvOutput::Txn { succeeded, gets: vec![] }), call, ret)
    }

    fn case(name: &str, history: Vec<Operation<In, Out>>, expected: Expect) {
        check_case(name, &KvModel::new(), &history, expected);
    }

    #[test]
    fn hand_written_histories() {
        case(
            "independent keys",
            vec![
                put(0, "a", 1, 0, 10),
                put(1, "b", 2, 0, 10),
                get(2, "a", Some(1), 20, 30),
                get(3, "b", Some(2), 20, 30),
            ],
            Expect::Ok,
        );
        case("a missed put", vec![put(0, "a", 1, 0, 10), get(1, "a", None, 20, 30)], Expect::Illegal);
        case(
            "a stale read on one key among many",
            vec![
                put(0, "a", 1, 0, 10),
                put(1, "b", 1, 0, 10),
                put(2, "b", 2, 20, 30),
                get(3, "a", Some(1), 40, 50),
                get(4, "b", Some(1), 40, 50),
            ],
            Expect::Illegal,
        );
        case(
            "a transaction that saw a value never written",
            vec![put(0, "a", 2, 0, 10), txn(1, ("a", 1), ("b", 1), true, (20, 30))],
            Expect::Illegal,
        );
        case(
            "a transaction links two keys",
            vec![put(0, "a", 1, 0, 10), txn(1, ("a", 1), ("b", 7), true, (20, 30)), get(2, "b", Some(7), 40, 50)],
            Expect::Ok,
        );
        case(
            "a transaction's effect must be seen after it",
            vec![put(0, "a", 1, 0, 10), txn(1, ("a", 1), ("b", 7), true, (20, 30)), get(2, "b", None, 40, 50)],
            Expect::Illegal,
        );
        case(
            "a failed compare must match the state",
            vec![put(0, "a", 1, 0, 10), txn(1, ("a", 1), ("b", 7), false, (20, 30))],
            Expect::Illegal,
        );
    }

    /// Many keys, several of them with stale reads: the report must name the first failing
    /// partition in operation-id order, in parallel and sequential runs alike.
    #[test]
    fn the_reported_failure_is_deterministic() {
        const KEYS: [&str; 12] = ["k0", "k1", "k2", "k3", "k4", "k5", "k6", "k7", "k8", "k9", "k10", "k11"];
        let mut history = Vec::new();
        for (index, key) in KEYS.iter().enumerate() {
            let base = index as u64 * 10;
            history.push(put(base, key, 1, 0, 10));
            history.push(put(base + 1, key, 2, 20, 30));
            let stale = index % 4 == 3;
            history.push(get(base + 2, key, Some(if stale { 1 } else { 2 }), 40, 50));
        }
        let sequential = CheckOptions { parallel: false, ..CheckOptions::default() };
        let expected = check(&KvModel::new(), &history, &sequential).unwrap();
        let Verdict::Illegal(counterexample) = &expected else { panic!("stale reads") };
        assert_eq!(counterexample.partition, 3);
        assert_eq!(counterexample.prefix, vec![30, 31]);
        for _ in 0..20 {
            assert_eq!(check(&KvModel::new(), &history, &CheckOptions::default()).unwrap(), expected);
        }
    }
}

/// Issue 19: partitions advance in rounds, so one easy failure among hard partitions is found
/// without waiting for them.
mod partitions {
    use super::*;
    use coordsim_checker::linearizability::models::{AppendKvInput, AppendKvModel, AppendKvOp, AppendKvOutput};
    use coordsim_checker::linearizability::{PartVerdict, check_with_stats};

    type Op = Operation<AppendKvInput, AppendKvOutput>;

    fn append(id: u64, key: &str, value: &str, call: u64, ret: u64) -> Op {
        op(
            id,
            id,
            AppendKvInput { key: key.into(), op: AppendKvOp::Append(value.into()) },
            Some(AppendKvOutput::Done),
            call,
            ret,
        )
    }

    fn get(id: u64, key: &str, value: &str, call: u64, ret: u64) -> Op {
        op(
            id,
            id,
            AppendKvInput { key: key.into(), op: AppendKvOp::Get },
            Some(AppendKvOutput::Get(value.into())),
            call,
            ret,
        )
    }

    /// 23 keys that take 12! orders to prove illegal (twelve overlapping appends, and a get of
    /// a value no order gives), then one key whose stale read fails at once.
    fn history() -> Vec<Op> {
        let mut ops = Vec::new();
        let mut id = 0;
        for key in 0..23 {
            let key = format!("hard-{key:02}");
            for i in 0..12 {
                ops.push(append(id, &key, &format!("{i},"), 10 + i, 1_000));
                id += 1;
            }
            ops.push(get(id, &key, "no such order", 5, 2_000));
            id += 1;
        }
        ops.push(append(id, "easy", "a", 10, 20));
        ops.push(get(id + 1, "easy", "", 30, 40));
        ops
    }

    #[test]
    fn one_easy_failure_among_hard_keys_decides_when_the_first_failure_wins() {
        let options = CheckOptions {
            time_limit: Some(Duration::from_secs(60)),
            first_failure_wins: true,
            ..CheckOptions::default()
        };
        let (verdict, stats) = check_with_stats(&AppendKvModel, &history(), &options).unwrap();
        let Verdict::Illegal(counterexample) = verdict else { panic!("{verdict:?}") };
        assert_eq!(counterexample.partition, 23, "the easy key");
        let skipped = stats.parts.iter().filter(|part| part.verdict == PartVerdict::Skipped).count();
        assert_eq!(skipped, 23, "the hard keys stop, not time out: {:?}", stats.parts);
    }

    #[test]
    fn the_lowest_failure_waits_for_the_partitions_before_it() {
        let options = CheckOptions { time_limit: Some(Duration::from_millis(500)), ..CheckOptions::default() };
        let (verdict, stats) = check_with_stats(&AppendKvModel, &history(), &options).unwrap();
        // Illegal wins over unknown: the easy key was found, the hard ones ran to the limit.
        assert!(matches!(&verdict, Verdict::Illegal(c) if c.partition == 23), "{verdict:?}");
        let timed_out =
            stats.parts.iter().filter(|p| p.verdict == PartVerdict::Unknown(UnknownReason::TimeLimit)).count();
        assert_eq!(timed_out, 23);
    }
}
