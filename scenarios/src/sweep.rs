//! Running seeds: each seed in a fresh madsim runtime on a fresh OS thread (madsim keys some
//! state per thread, so reusing a thread would break determinism), `jobs` at a time; then the
//! checkers and the comparison with the scenario's expectations.

use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;

use coordsim_checker::history::History;
use coordsim_checker::properties::Property;
use coordsim_reports::{Outcome, RunSummary, SUMMARY_SCHEMA};
use coordsim_sim::harness;
use coordsim_sim::scenario::Scenario;

/// What one seed produced.
#[derive(Debug)]
pub enum SeedResult {
    Done {
        history: History,
        summary: RunSummary,
    },
    /// The simulation panicked: an invariant of the service or the harness broke (a bug in
    /// coordsim), or the simulator itself failed.
    Crashed {
        seed: u64,
        message: String,
        replay: String,
    },
    /// The run reached a limit on its work ([`coordsim_sim::recorder::Limits`]: history entries
    /// recorded, requests served) and was stopped: the scenario asks for more work than coordsim
    /// runs (bad input, exit 2; nothing is judged).
    Stopped {
        seed: u64,
        message: String,
        replay: String,
    },
}

impl SeedResult {
    pub fn seed(&self) -> u64 {
        match self {
            SeedResult::Done { summary, .. } => summary.seed,
            SeedResult::Crashed { seed, .. } | SeedResult::Stopped { seed, .. } => *seed,
        }
    }

    pub fn as_expected(&self) -> bool {
        matches!(self, SeedResult::Done { summary, .. } if summary.as_expected)
    }
}

/// The command that replays `seed` of the scenario the user named `arg`.
pub fn replay_command(arg: &str, seed: u64) -> String {
    format!("cargo coordsim run {arg} --seed {seed}")
}

/// Runs the checkers on a history and compares each verdict with the scenario's expectation.
pub fn evaluate(scenario: &Scenario, arg: &str, history: &History) -> RunSummary {
    evaluate_judged(scenario, arg, history, &Property::ALL)
}

/// [`evaluate`] for the `judged` properties only (a real cluster's history cannot decide some).
pub fn evaluate_judged(scenario: &Scenario, arg: &str, history: &History, judged: &[Property]) -> RunSummary {
    let mut outcomes: Vec<Outcome> = judged
        .iter()
        .copied()
        .map(|property| {
            let report = property.check(history);
            let expected = scenario.expectation(property);
            Outcome { as_expected: expected.matches(report.verdict), expected: expected.to_string(), report }
        })
        .collect();
    // A user's own build of the CLI may add checkers (`cli::run_main`): expected to pass unless
    // the scenario's `[expect]` names them.
    outcomes.extend(crate::testbed::registered_for_cli().iter().map(|c| {
        let expected = scenario.expect.checker(c.id()).unwrap_or(coordsim_sim::scenario::Expectation::Pass);
        crate::testbed::outcome(&**c, history, expected)
    }));
    RunSummary {
        schema: SUMMARY_SCHEMA.to_string(),
        scenario: scenario.name.clone(),
        seed: history.seed,
        duration_ns: history.duration_ns,
        entries: history.entries.len(),
        as_expected: outcomes.iter().all(|o| o.as_expected),
        outcomes,
        replay: replay_command(arg, history.seed),
        metrics: Some(coordsim_checker::metrics::of(history)),
    }
}

/// Runs one seed on a fresh thread and checks it.
pub fn run_seed(scenario: &Scenario, arg: &str, seed: u64) -> SeedResult {
    let owned = scenario.clone();
    let thread = std::thread::Builder::new()
        .name(format!("{}-seed-{seed}", scenario.name))
        .spawn(move || std::panic::catch_unwind(AssertUnwindSafe(|| harness::run(&owned, seed))))
        .expect("the OS starts a thread");
    match thread.join() {
        Ok(Ok(Ok(history))) => {
            let summary = evaluate(scenario, arg, &history);
            SeedResult::Done { history, summary }
        }
        Ok(Ok(Err(stopped))) => {
            SeedResult::Stopped { seed, message: stopped.to_string(), replay: replay_command(arg, seed) }
        }
        Ok(Err(panic)) | Err(panic) => {
            SeedResult::Crashed { seed, message: panic_message(&panic), replay: replay_command(arg, seed) }
        }
    }
}

/// Runs `seeds` with up to `jobs` at once; `report` sees each result in seed-list order.
pub fn run_seeds(scenario: &Scenario, arg: &str, seeds: &[u64], jobs: usize, mut report: impl FnMut(SeedResult)) {
    let tasks: Vec<Task<'_>> = seeds.iter().map(|&seed| Task { scenario, arg, seed }).collect();
    run_tasks(&tasks, jobs, |_, result| report(result));
}

/// One seed of one scenario, for [`run_tasks`].
#[derive(Clone, Copy, Debug)]
pub struct Task<'a> {
    pub scenario: &'a Scenario,
    /// How the user named the scenario (for replay commands).
    pub arg: &'a str,
    pub seed: u64,
}

/// Runs `tasks` (seeds of one or more scenarios) with up to `jobs` at once, each seed on a
/// fresh thread; `report` sees each result with its index, in task-list order.
pub fn run_tasks(tasks: &[Task<'_>], jobs: usize, mut report: impl FnMut(usize, SeedResult)) {
    let next = AtomicUsize::new(0);
    let (sender, receiver) = mpsc::channel::<(usize, SeedResult)>();
    std::thread::scope(|scope| {
        for _ in 0..jobs.max(1).min(tasks.len().max(1)) {
            let sender = sender.clone();
            let next = &next;
            scope.spawn(move || {
                loop {
                    let index = next.fetch_add(1, Ordering::SeqCst);
                    let Some(task) = tasks.get(index) else { break };
                    if sender.send((index, run_seed(task.scenario, task.arg, task.seed))).is_err() {
                        break;
                    }
                }
            });
        }
        drop(sender);
        // Print in seed order whatever order the workers finish in.
        let mut pending = std::collections::BTreeMap::new();
        let mut next_to_report = 0;
        for (index, result) in receiver {
            pending.insert(index, result);
            while let Some(result) = pending.remove(&next_to_report) {
                report(next_to_report, result);
                next_to_report += 1;
            }
        }
    });
}

fn panic_message(panic: &Box<dyn std::any::Any + Send>) -> String {
    if let Some(message) = panic.downcast_ref::<&str>() {
        message.to_string()
    } else if let Some(message) = panic.downcast_ref::<String>() {
        message.clone()
    } else {
        "panic with a non-string payload".to_string()
    }
}
