//! End-to-end runs of the library scenarios with their written-down verdicts, and the
//! determinism promise: one seed, one byte-identical history.

use coordsim::load;
use coordsim::sweep::{self, SeedResult};
use coordsim_checker::history::{Event, History};
use coordsim_checker::properties::Property;
use coordsim_checker::verdict::Verdict;

fn run(name: &str, seed: u64) -> (History, coordsim_reports::RunSummary) {
    let loaded = load::resolve(name).unwrap();
    match sweep::run_seed(&loaded.scenario, name, seed) {
        SeedResult::Done { history, summary } => (history, summary),
        SeedResult::Crashed { message, .. } | SeedResult::Stopped { message, .. } => {
            panic!("{name} seed {seed} crashed: {message}")
        }
    }
}

/// docs/cases/01, unfenced: the stale holder's write is accepted after the new holder's.
#[test]
fn unfenced_gc_pause_violates_mutual_exclusion_and_fencing() {
    for seed in 1..=4 {
        let (history, summary) = run("split-brain-gc-pause", seed);
        assert!(summary.as_expected, "seed {seed}: {summary:#?}");
        assert_eq!(summary.verdict("mutual_exclusion"), Some(Verdict::Fail), "seed {seed}");
        assert_eq!(summary.verdict("fencing"), Some(Verdict::Fail), "seed {seed}");
        // The stale write is c1's, after its 10 s pause (2 s .. 12 s).
        let report = Property::MutualExclusion.check(&history);
        let finding = &report.findings[0];
        assert!(finding.message.contains("from c1"), "{}", finding.message);
        assert!(finding.time_ns >= 12_000_000_000, "the stale write follows the pause: {}", finding.message);
    }
}

/// docs/cases/01, fenced: the same pause, the stale write is rejected.
#[test]
fn fenced_gc_pause_rejects_the_stale_write() {
    for seed in 1..=4 {
        let (history, summary) = run("split-brain-gc-pause-fenced", seed);
        assert!(summary.as_expected, "seed {seed}: {summary:#?}");
        assert_eq!(summary.verdict("mutual_exclusion"), Some(Verdict::Pass), "seed {seed}");
        let rejected: Vec<_> = history
            .entries
            .iter()
            .filter(|e| matches!(&e.event, Event::Resource { accepted: false, client, .. } if client == "c1"))
            .collect();
        assert_eq!(rejected.len(), 1, "seed {seed}: exactly c1's stale write is rejected");
        // Fencing is needed because both believed they held the lock.
        let dual = Property::DualOwnership.check(&history);
        assert!(!dual.findings.is_empty(), "seed {seed}: dual ownership under the pause");
    }
}

#[test]
fn same_seed_gives_byte_identical_history_in_one_process() {
    let (first, _) = run("split-brain-gc-pause", 7);
    let (second, _) = run("split-brain-gc-pause", 7);
    assert_eq!(first.to_json(), second.to_json());
}

#[test]
fn different_seeds_give_different_histories() {
    let (first, _) = run("split-brain-gc-pause", 1);
    let (second, _) = run("split-brain-gc-pause", 2);
    assert_ne!(first.to_json(), second.to_json());
}

/// madsim's own check: the run is repeated on a fresh thread and every random draw compared.
#[test]
fn madsim_determinism_check_passes() {
    fn body() -> impl std::future::Future<Output = History> {
        let loaded = load::resolve("split-brain-gc-pause").expect("library scenario");
        coordsim_sim::harness::simulate(loaded.scenario)
    }
    for seed in [3, 11] {
        let history = std::thread::spawn(move || {
            madsim::runtime::Runtime::check_determinism(seed, madsim::Config::default(), body)
        })
        .join()
        .expect("determinism check passes");
        assert_eq!(history.seed, seed);
    }
}

/// The ZooKeeper view, the election service and the semaphore keep the promise too: madsim's
/// check (every random draw) and byte-identical histories.
#[test]
fn zookeeper_election_and_semaphore_runs_are_deterministic() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    const NAMES: [&str; 4] =
        ["orphaned-sequential-node-fixed", "zk-election-gc-pause", "etcd-election-gc-pause", "semaphore-three-permits"];
    // madsim's check takes a plain fn: it finds the scenario through this index.
    static CURRENT: AtomicUsize = AtomicUsize::new(0);
    fn body() -> impl std::future::Future<Output = History> {
        let loaded = load::resolve(NAMES[CURRENT.load(Ordering::SeqCst)]).expect("library scenario");
        coordsim_sim::harness::simulate(loaded.scenario)
    }
    for (index, name) in NAMES.into_iter().enumerate() {
        CURRENT.store(index, Ordering::SeqCst);
        std::thread::spawn(|| madsim::runtime::Runtime::check_determinism(5, madsim::Config::default(), body))
            .join()
            .unwrap_or_else(|_| panic!("{name}: determinism check fails"));
        let (first, _) = run(name, 9);
        let (second, _) = run(name, 9);
        assert_eq!(first.to_json(), second.to_json(), "{name}");
    }
}

/// Every library scenario's expectations hold on a seed (CI sweeps more seeds of each).
#[test]
fn every_library_scenario_is_as_expected_on_a_seed() {
    // The swarm scenarios (written as the fixed system) run on seed 1 in library.rs, with their
    // bug switch off and on.
    for (name, _) in coordsim::library::all().filter(|(name, _)| !name.starts_with("swarm-")) {
        let (_, summary) = run(name, 1);
        let mismatches: Vec<_> = summary.mismatches().map(|o| (&o.report.property, o.report.verdict)).collect();
        assert!(summary.as_expected, "{name}: {mismatches:?}");
    }
}

/// `[kv] watch_start = "now"`: the watcher's first stream starts after the revision current at
/// its creation (etcd's start_revision 0), recorded as that revision; `watch` judges it from
/// there, passing on the fixed store and still catching the compaction-boundary bug.
#[test]
fn a_watch_from_now_starts_after_the_current_revision_and_is_judged_from_there() {
    let with_now = |text: &str| text.replacen("[kv]\n", "[kv]\nwatch_start = \"now\"\n", 1);
    let fixed = with_now(include_str!("../library/watch-compaction-gap-fixed.toml"));
    let scenario = coordsim::load::parse("now.toml", &fixed).expect("a valid scenario");
    let coordsim::sweep::SeedResult::Done { history, summary } = coordsim::sweep::run_seed(&scenario, "x", 1) else {
        panic!("seed 1 runs");
    };
    let first_start = history.entries.iter().find_map(|e| match e.event {
        Event::WatchStart { start_revision, .. } => Some((e.time_ns, start_revision)),
        _ => None,
    });
    let (at, start) = first_start.expect("the watcher started a stream");
    // The writers start at 500 ms, the watcher later: revisions were made before it started.
    assert!(at > 500_000_000 && start > 1, "started at {at} ns from revision {start}");
    assert_eq!(summary.verdict("watch"), Some(coordsim_checker::verdict::Verdict::Pass));
    let buggy = with_now(include_str!("../library/watch-compaction-gap.toml"));
    let scenario = coordsim::load::parse("now.toml", &buggy).expect("a valid scenario");
    let failed = (1..=5)
        .filter(|&seed| {
            let coordsim::sweep::SeedResult::Done { summary, .. } = coordsim::sweep::run_seed(&scenario, "x", seed)
            else {
                panic!("seed {seed} runs");
            };
            summary.verdict("watch") == Some(coordsim_checker::verdict::Verdict::Fail)
        })
        .count();
    assert!(failed >= 4, "the compaction-boundary bug caught on {failed} of 5 seeds");
}

/// etcd before 3.4.34 and 3.5.16 loses a deletion made at the compact revision for a watch
/// created there (issue 18089): the same workload and seed fail `watch` on 3.4.23 through a
/// deletion only, and pass on 3.4.34.
#[test]
fn a_deletion_at_the_compact_revision_is_lost_to_a_watch_before_etcd_3_4_34_only() {
    let text = include_str!("../library/watch-compaction-gap-on-etcd-3-4-23.toml");
    let on = |version: &str| {
        let text = text.replace("version = \"3.4.23\"", &format!("version = \"{version}\""));
        let scenario = coordsim::load::parse("gap.toml", &text).expect("a valid scenario");
        let coordsim::sweep::SeedResult::Done { history, summary } = coordsim::sweep::run_seed(&scenario, "x", 1)
        else {
            panic!("seed 1 runs");
        };
        (history, summary)
    };
    let (old, old_summary) = on("3.4.23");
    assert_eq!(old_summary.verdict("watch"), Some(coordsim_checker::verdict::Verdict::Fail));
    let watch = old_summary.outcomes.iter().find(|o| o.report.property == "watch").expect("watch judged");
    let gap = watch.report.findings.first().map(|f| f.message.clone()).unwrap_or_default();
    assert!(gap.contains(" delete "), "only deletions are lost: {gap}");
    let (new, new_summary) = on("3.4.34");
    assert_eq!(new_summary.verdict("watch"), Some(coordsim_checker::verdict::Verdict::Pass));
    // The release changes what watches deliver, nothing the writers do.
    let writes = |h: &coordsim_checker::history::History| {
        h.entries.iter().filter(|e| matches!(e.event, Event::Invoke { .. }) && e.node != "c3").count()
    };
    assert_eq!(writes(&old), writes(&new));
}

/// A run that reaches the history's entry limit is stopped there with an error naming the
/// limit and the true time, and keeps nothing past it; a limit it never reaches changes nothing
/// (waiting on the stop signal adds no event to the simulation).
#[test]
fn a_run_stops_at_the_history_entry_limit_and_a_higher_limit_changes_nothing() {
    use coordsim_sim::harness::{ClientCode, simulate_limited};
    use coordsim_sim::recorder::{Limit, Limits};
    let scenario = load::resolve("split-brain-gc-pause").expect("library scenario").scenario;
    let run_with = move |limits: Limits| {
        let scenario = scenario.clone();
        std::thread::spawn(move || {
            madsim::runtime::Runtime::with_seed_and_config(4, madsim::Config::default()).block_on(simulate_limited(
                scenario,
                ClientCode::Scenario,
                limits,
            ))
        })
        .join()
        .expect("the run does not panic")
    };
    let run = |entries: usize| run_with(Limits { entries, ..Limits::DEFAULT });
    let full = run(coordsim_sim::recorder::MAX_HISTORY_ENTRIES).expect("the library scenario stays under the limit");
    assert!(full.entries.len() > 100, "{} entries", full.entries.len());
    let stopped = run(100).expect_err("100 entries are too few for this run");
    assert_eq!(stopped.limit, 100);
    // The 101st entry is where it stopped.
    assert_eq!(stopped.time_ns, full.entries[100].time_ns);
    assert_eq!(stopped.duration_ns, 20_000_000_000);
    let message = stopped.to_string();
    for needle in ["recorded 100 history entries by", "the most a run may record", "shorten `duration`"] {
        assert!(message.contains(needle), "{message}");
    }
    // One entry more than the run records: the same history, byte for byte.
    let just_enough = run(full.entries.len()).expect("exactly at the limit is allowed");
    assert_eq!(just_enough.to_json(), full.to_json());

    // Requests nobody records (keepalives, watch polls) are bounded too: 20 requests stop the
    // run before its end, with what stopped it in the message; a limit the run never reaches
    // changes nothing.
    let stopped = run_with(Limits { requests: 20, ..Limits::DEFAULT }).expect_err("the run serves more than 20");
    assert_eq!((stopped.what, stopped.limit), (Limit::ServedRequests, 20));
    assert!(stopped.time_ns < 15_000_000_000, "stopped at {} ns", stopped.time_ns);
    assert!(stopped.to_string().contains("made its servers serve 20 requests by"), "{stopped}");
    let roomy = run_with(Limits { requests: 1_000_000, ..Limits::DEFAULT }).expect("under a million requests");
    assert_eq!(roomy.to_json(), full.to_json());
}
