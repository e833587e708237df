//! Single-core speed and memory of the linearizability engine on generated key-value histories of
//! 1,000 and 10,000 operations across 10 keys (issue 5), next to the Jepsen etcd figures of the
//! `linearizability` bench.
//!
//! A history comes from a sequential run of a key-value map (gets, puts, deletes, compare-and-
//! swaps; values unique per write), then made concurrent: each operation's interval is widened
//! around its linearization point, so up to [`CLIENTS`] operations overlap, about
//! [`CLIENTS`] / 10 per key. About 1 in [`INFO_ONE_IN`] operations ends `info` (its output is
//! unknown and it stays open to the end; half of those writes took effect). Such histories are
//! linearizable by construction, so the search must go all the way: the worst case for a checker
//! that stops at the first failure. Generation uses its own seeded generator: the same histories
//! on every run.
//!
//! Before the timed runs, each size is checked once and its figures printed: the time, the
//! engine's own count of (set, state) pairs and estimate of the bytes its caches held, and the
//! process's peak resident set during the check (Linux: `VmHWM` after resetting it through
//! `/proc/self/clear_refs`; omitted where that is not possible).

use std::time::Instant;

use coordsim_checker::generate::Rng;
use coordsim_checker::linearizability::models::{KvInput, KvModel, KvOp, KvOutput, Txn, TxnCompare};
use coordsim_checker::linearizability::{CheckOptions, Operation, RETURN_NEVER, check, check_with_stats};
use criterion::{Criterion, criterion_group, criterion_main};

type Op = Operation<KvInput<u32, u32>, KvOutput<u32>>;

const KEYS: u32 = 10;
const CLIENTS: u64 = 20;
/// Time between consecutive linearization points; intervals reach up to `CLIENTS` steps around.
const STEP_NS: u64 = 1_000;
const INFO_ONE_IN: u64 = 50;

fn generate(ops: usize, seed: u64) -> Vec<Op> {
    let mut rng = Rng::from_state(seed | 1);
    let mut state: std::collections::BTreeMap<u32, u32> = std::collections::BTreeMap::new();
    let mut next_value = 1u32;
    let mut history = Vec::with_capacity(ops);
    for i in 0..ops as u64 {
        let key = rng.below(u64::from(KEYS)) as u32;
        let point_ns = (i + CLIENTS) * STEP_NS;
        let call_ns = point_ns - rng.below(CLIENTS * STEP_NS / 2);
        let return_ns = point_ns + rng.below(CLIENTS * STEP_NS / 2);
        let info = rng.below(INFO_ONE_IN) == 0;
        // An info write took effect half of the time; an info read never changes anything.
        let takes_effect = !info || rng.below(2) == 0;
        let (input, output) = match rng.below(20) {
            0..=9 => (KvInput::Op(KvOp::Get(key)), KvOutput::Get(state.get(&key).copied())),
            10..=16 => {
                let value = next_value;
                next_value += 1;
                if takes_effect {
                    state.insert(key, value);
                }
                (KvInput::Op(KvOp::Put(key, value)), KvOutput::Done)
            }
            17 => {
                let existed = state.contains_key(&key);
                if takes_effect {
                    state.remove(&key);
                }
                (KvInput::Op(KvOp::Delete(key)), KvOutput::Deleted { existed })
            }
            _ => {
                let expected = state.get(&key).copied().filter(|_| rng.below(4) != 0);
                let new = next_value;
                next_value += 1;
                let swapped = state.get(&key).copied() == expected;
                if swapped && takes_effect {
                    state.insert(key, new);
                }
                let txn = Txn {
                    compare: vec![TxnCompare { key, value: expected }],
                    success: vec![KvOp::Put(key, new)],
                    failure: Vec::new(),
                };
                (KvInput::Txn(txn), KvOutput::Txn { succeeded: swapped, gets: Vec::new() })
            }
        };
        history.push(Operation {
            id: i,
            client: i % CLIENTS,
            input,
            output: (!info).then_some(output),
            call_ns,
            return_ns: if info { RETURN_NEVER } else { return_ns },
        });
    }
    history
}

fn single_core() -> CheckOptions {
    CheckOptions { parallel: false, ..CheckOptions::default() }
}

/// The process's peak resident set in KiB, after `reset` cleared it (Linux only).
fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn reset_peak_rss() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

fn current_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// One untimed check with its figures, printed for the closing note.
fn report_figures(name: &str, history: &[Op]) {
    let model = KvModel::new();
    let before_kib = current_rss_kib();
    let reset = reset_peak_rss();
    let started = Instant::now();
    let (verdict, stats) = check_with_stats(&model, history, &single_core()).expect("generated histories are valid");
    let elapsed = started.elapsed();
    let rss = match (reset, before_kib, peak_rss_kib()) {
        (true, Some(before), Some(peak)) => {
            format!(", peak RSS {peak} KiB ({} KiB above the {before} KiB before)", peak.saturating_sub(before))
        }
        _ => String::new(),
    };
    assert!(verdict.is_ok(), "{name}: generated histories are linearizable, got {verdict:?}");
    let info = history.iter().filter(|op| op.output.is_none()).count();
    eprintln!(
        "{name}: {} operations ({info} info) on {KEYS} keys, {:.2} ms; {} partitions, {} (set, state) pairs, {} states, cache estimate {} KiB peak per partition, {} KiB all partitions{rss}",
        history.len(),
        elapsed.as_secs_f64() * 1e3,
        stats.partitions,
        stats.cache_entries,
        stats.states,
        stats.peak_partition_bytes / 1024,
        stats.total_bytes / 1024,
    );
}

fn generated(c: &mut Criterion) {
    let model = KvModel::new();
    let options = single_core();
    let mut group = c.benchmark_group("generated_kv");
    group.sample_size(10);
    for ops in [1_000, 10_000] {
        let history = generate(ops, 0x5eed + ops as u64);
        let name = format!("ops_{ops}");
        report_figures(&name, &history);
        group.bench_function(&name, |b| b.iter(|| std::hint::black_box(check(&model, &history, &options).unwrap())));
    }
    group.finish();
}

criterion_group!(benches, generated);
criterion_main!(benches);
