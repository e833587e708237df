//! The time model against the real services: with the calibrated loopback profiles, the
//! hundred-request drain on etcd's mutex and on ZooKeeper's queue lock takes what it takes on
//! the real clusters of the build machine (within 1.5x), in the same order; and a scenario that
//! names an unknown profile is refused with its file, line and field.

use coordsim::library;
use coordsim::load;
use coordsim::sweep::{self, SeedResult};
use coordsim_checker::metrics::Metrics;

/// The real runs the profiles were calibrated against (`coordsim real calibrate --runs 2` on
/// 2026-12-06 on the build machines of that day; docs/time.md): median handoff in µs and drain
/// in µs, the middle of each calibration's two real runs (etcd: handoffs 2.76-2.89 ms, drains
/// 5.68-5.71 s; ZooKeeper: 4.40-4.44 ms, 5.68-5.78 s).
const REAL_ETCD: (u64, u64) = (2_830, 5_695_000);
const REAL_ZOOKEEPER: (u64, u64) = (4_420, 5_730_000);

/// Puts acknowledged per second by the eight writers of `calibrate::write_load` on the same
/// real clusters (etcd 1,767-1,790/s, ZooKeeper 1,493-1,605/s).
const REAL_PUTS_PER_S: [(&str, bool, u64); 2] =
    [("etcd-3.4-loopback", false, 1_778), ("zookeeper-3.8-loopback", true, 1_549)];

fn metrics_with_profile(name: &str, profile: &str, seed: u64) -> Metrics {
    let text = format!("{}\n[timing]\nprofile = \"{profile}\"\n", library::get(name).unwrap());
    let scenario = load::parse(name, &text).unwrap();
    match sweep::run_seed(&scenario, name, seed) {
        SeedResult::Done { summary, .. } => summary.metrics.expect("every run measures its metrics"),
        other => panic!("{name} seed {seed}: {other:?}"),
    }
}

fn within(simulated: u64, real: u64, factor: f64) -> bool {
    let ratio = simulated as f64 / real as f64;
    (1.0 / factor..=factor).contains(&ratio)
}

#[test]
fn calibrated_profiles_give_the_real_handoff_and_drain_in_the_real_order() {
    let etcd = metrics_with_profile("hundred-requests-etcd-mutex", "etcd-3.4-loopback", 1);
    let zookeeper = metrics_with_profile("hundred-requests-zk-queue-lock", "zookeeper-3.8-loopback", 1);
    let times = |m: &Metrics| {
        let lock = &m.locks["/locks/resource"];
        (lock.handoff.as_ref().expect("99 handoffs").p50_us, lock.drain_us)
    };
    let (etcd, zookeeper) = (times(&etcd), times(&zookeeper));
    for (what, simulated, real) in [("etcd", etcd, REAL_ETCD), ("zookeeper", zookeeper, REAL_ZOOKEEPER)] {
        assert!(within(simulated.0, real.0, 1.5), "{what} handoff {} µs against {} real", simulated.0, real.0);
        assert!(within(simulated.1, real.1, 1.5), "{what} drain {} µs against {} real", simulated.1, real.1);
    }
    assert!(etcd.0 < zookeeper.0, "etcd hands over faster, as on the real clusters: {etcd:?} {zookeeper:?}");
}

#[test]
fn calibrated_profiles_give_the_real_write_throughput() {
    for (profile, zookeeper, real) in REAL_PUTS_PER_S {
        // 3 s of the calibration's 10 s: a debug build's checkers take minutes over 10 s of puts,
        // and the rate is the same (seeds 1..3, release: etcd 1,497-1,534/s over 3 s against
        // 1,492-1,531 over 10 s; ZooKeeper 1,438-1,447 against 1,483-1,490).
        let mut scenario = coordsim::calibrate::write_load(zookeeper);
        scenario.duration = coordsim_sim::scenario::Dur(std::time::Duration::from_secs(3));
        let metrics = match sweep::run_seed(&scenario, &scenario.name, 1) {
            SeedResult::Done { summary, .. } => summary.metrics.expect("every run measures its metrics"),
            other => panic!("{profile} writers: {other:?}"),
        };
        assert_eq!(metrics.time_model.as_deref(), Some(profile), "the write load runs on its service's profile");
        let per_s = coordsim::calibrate::Figures::of(&metrics).puts_per_s.expect("the writers put");
        assert!(within(per_s, real, 1.5), "{profile}: {per_s} puts/s against {real} real");
    }
}

#[test]
fn an_unknown_profile_is_refused_with_its_line_and_field() {
    let text = format!("{}\n[timing]\nprofile = \"etcd-9-moon\"\n", library::get("split-brain-gc-pause").unwrap());
    let error = load::parse("moon.toml", &text).unwrap_err().to_string();
    let line = text.lines().position(|l| l.starts_with("profile")).unwrap() + 1;
    assert!(error.contains(&format!("moon.toml:{line}")), "{error}");
    assert!(error.contains("timing.profile") && error.contains("etcd-3.4-loopback"), "{error}");
    let text = format!(
        "{}\n[timing.network]\nlatency = {{ min = \"2ms\", max = \"1ms\" }}\n",
        library::get("split-brain-gc-pause").unwrap()
    );
    let error = load::parse("slow.toml", &text).unwrap_err().to_string();
    assert!(error.contains("slow.toml:") && error.contains("must not decrease"), "{error}");
}

#[test]
fn a_slow_cpu_on_the_leader_slows_the_queue_and_a_slow_disk_stalls_etcds_raft_loop() {
    let run = |extra: &str| {
        let name = "hundred-requests-etcd-mutex";
        let text = format!("{}\n[timing]\nprofile = \"etcd-3.4-loopback\"\n{extra}", library::get(name).unwrap());
        let scenario = load::parse(name, &text).unwrap();
        match sweep::run_seed(&scenario, name, 1) {
            SeedResult::Done { summary, history } => (summary, history),
            other => panic!("{other:?}"),
        }
    };
    // The holders' 50 ms holds set the drain; the handoff is where the servers' time shows.
    let handoff = |summary: &coordsim_reports::RunSummary| {
        summary.metrics.as_ref().unwrap().locks["/locks/resource"].handoff.as_ref().unwrap().p50_us
    };
    let (normal, _) = run("");
    let (starved, _) =
        run("[[nemesis]]\nat = \"300ms\"\nfor = \"19s\"\nkind = \"slow-cpu\"\ntarget = \"leader\"\nrate = 10.0\n");
    assert!(handoff(&starved) > handoff(&normal) * 2, "{} µs against {} µs", handoff(&starved), handoff(&normal));
    // A 3 s fsync on the leader stalls its raft loop: the others elect a new leader.
    let (_, history) =
        run("[[nemesis]]\nat = \"2s\"\nfor = \"1s\"\nkind = \"slow-disk\"\ntarget = \"leader\"\ndelay = \"3s\"\n");
    let leaders: Vec<&str> = history
        .entries
        .iter()
        .filter(|e| {
            matches!(
                e.event,
                coordsim_checker::history::Event::Role { role: coordsim_checker::history::RaftRole::Leader, .. }
            )
        })
        .map(|e| e.node.as_str())
        .collect();
    assert!(
        leaders.len() >= 2 && leaders.first() != leaders.last(),
        "another server leads after the stall: {leaders:?}"
    );
}

/// A scenario without `[timing]` runs on its service's calibrated profile, `profile = "none"` on
/// the first world, and the history's header (and the summary's metrics) say which.
#[test]
fn a_scenario_runs_on_its_services_profile_by_default_and_its_history_names_it() {
    let run = |name: &str, extra: &str| {
        let text = format!("{}\n{extra}", library::get(name).unwrap());
        let scenario = load::parse(name, &text).unwrap();
        match sweep::run_seed(&scenario, name, 1) {
            SeedResult::Done { summary, history } => (history.time_model.clone(), summary.metrics.unwrap().time_model),
            other => panic!("{name}: {other:?}"),
        }
    };
    let etcd = Some("etcd-3.4-loopback".to_string());
    let zookeeper = Some("zookeeper-3.8-loopback".to_string());
    assert_eq!(run("split-brain-gc-pause", ""), (etcd.clone(), etcd));
    assert_eq!(run("zk-split-brain-gc-pause-fenced", ""), (zookeeper.clone(), zookeeper));
    assert_eq!(run("split-brain-gc-pause", "[timing]\nprofile = \"none\"\n"), (None, None));
}

/// `leader_commits_before_sync`: with etcd's rule (the leader counts its own entries toward the
/// commit when it appends them) a write waits for the fastest follower's sync, not also for the
/// leader's, so the calibration's writers see shorter puts and put more.
#[test]
fn a_leader_that_commits_before_its_own_sync_answers_writes_sooner() {
    let run = |leader_commits_before_sync: bool| {
        let mut load = coordsim::calibrate::write_load(false);
        load.duration = coordsim_sim::scenario::Dur(std::time::Duration::from_secs(3));
        let mut model = coordsim_sim::timing::profile("etcd-3.4-loopback").unwrap();
        model.server.leader_commits_before_sync = leader_commits_before_sync;
        load.timing = Some(coordsim_sim::scenario::TimingSpec {
            profile: None,
            network_preset: None,
            network: Some(model.network),
            server: Some(model.server),
            resource: Some(model.resource),
        });
        match sweep::run_seed(&load, &load.name.clone(), 1) {
            SeedResult::Done { summary, .. } => summary.metrics.unwrap().requests["put"].clone(),
            other => panic!("{other:?}"),
        }
    };
    let (waits, commits) = (run(false), run(true));
    assert!(commits.ok.p50_us < waits.ok.p50_us, "put p50 {} µs against {} µs", commits.ok.p50_us, waits.ok.p50_us);
    assert!(commits.per_s > waits.per_s, "{} puts/s against {}", commits.per_s, waits.per_s);
}

/// Pipelined replication (`max_inflight_appends` above 1: several appends in flight to each
/// follower on an ordered stream) changes when followers learn of entries, never what they
/// accept: under crashes, partitions, pauses and packet loss every verdict stays as the
/// scenario expects, on etcd and on ZooKeeper.
#[test]
fn pipelined_replication_keeps_every_verdict_under_faults() {
    let scenarios = [
        "crash-restart-durable",
        "split-brain-gc-pause-fenced",
        "lossy-network",
        "zk-split-brain-gc-pause",
        "zk-stale-reads",
        "unsynced-writes-lost",
    ];
    for name in scenarios {
        let mut scenario = load::parse(name, library::get(name).unwrap()).unwrap();
        let profile = coordsim_sim::timing::auto_profile(scenario.uses_zookeeper());
        let mut model = coordsim_sim::timing::profile(profile).unwrap();
        model.server.max_inflight_appends = 64;
        scenario.timing = Some(coordsim_sim::scenario::TimingSpec {
            profile: None,
            network_preset: None,
            network: Some(model.network),
            server: Some(model.server),
            resource: Some(model.resource),
        });
        for seed in 1..=3 {
            let result = sweep::run_seed(&scenario, name, seed);
            assert!(result.as_expected(), "{name} seed {seed} is not as expected with pipelined replication");
        }
    }
}
