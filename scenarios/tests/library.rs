//! The scenario library measuring itself (issue 8): every bug switch has a swarm scenario that
//! finds it with the switch on and stays clean with it off; sweeps shard and merge back into the
//! unsharded result; `list` and `explain` show the expected verdicts; bad input exits 2.
//!
//! Simulations here run in the test build on a few seeds; the 200- and 1,000-seed figures come
//! from `cargo coordsim sweep` (see docs/detection.md).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use coordsim::switches;
use coordsim_reports::DetectionSweep;

fn coordsim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_coordsim")).args(args).output().expect("the binary runs")
}

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("library-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn assert_bad_input(out: &Output, needles: &[&str]) {
    assert_eq!(out.status.code(), Some(2), "stdout: {} stderr: {}", text(&out.stdout), text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "one line: {stderr}");
    for needle in needles {
        assert!(stderr.contains(needle), "{needle:?} missing from {stderr:?}");
    }
}

fn sweep(dir: &Path, args: &[&str]) -> (Output, DetectionSweep) {
    let mut all = vec!["sweep", "--jobs", "2", "--out", dir.to_str().unwrap()];
    all.extend_from_slice(args);
    let out = coordsim(&all);
    let json = std::fs::read_to_string(dir.join("detection.json"))
        .unwrap_or_else(|e| panic!("{e}: {} {}", text(&out.stdout), text(&out.stderr)));
    (out, DetectionSweep::from_json(&json).unwrap())
}

/// A new switch needs only its swarm file: each field of `[bugs]` has one, written as the fixed
/// system, and each swarm file plants a known switch.
#[test]
fn every_bug_switch_has_a_swarm_scenario_written_as_the_fixed_system() {
    let all = switches::all();
    assert!(all.len() >= 6, "{all:?}");
    for switch in &all {
        let name = switches::swarm_scenario(switch);
        let loaded = coordsim::load::resolve(&name).unwrap_or_else(|e| panic!("{switch}: {e}"));
        assert!(switches::enabled(&loaded.scenario.bugs).is_empty(), "{name} turns a switch on itself");
        assert!(loaded.scenario.chaos.as_ref().is_some_and(|c| c.swarm), "{name}: a random fault mix");
        assert!(loaded.scenario.description.contains(switch.as_str()), "{name}: its teaching text names {switch}");
    }
    for (name, _) in coordsim::library::all().filter(|(n, _)| n.starts_with("swarm-")) {
        assert!(all.iter().any(|s| switches::swarm_scenario(s) == *name), "{name} plants no known switch");
    }
}

/// With the switch on, the swarm scenario catches every planted bug within the first seeds;
/// with it off the same seeds are clean (the full figures are in docs/detection.md).
#[test]
fn sweep_detects_each_planted_bug_and_switch_off_runs_stay_clean() {
    let dir = scratch("detect");
    // Seed 1 is among the detecting seeds of each of these switches in the 200-seed sweep
    // (docs/data/detection: since the servers keep Raft's timers, seed 2 misses
    // ignore_keepalive_failure).
    let (out, result) = sweep(&dir, &["--bugs", "all", "--seeds", "1..1"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    assert!(result.clean);
    assert_eq!(result.switches.len(), switches::all().len());
    let expected_catcher = [
        ("deposed_leader_expires_leases", "lease_safety"),
        ("follower_reads_without_read_index", "linearizable"),
        ("grant_without_lease_check", "grant_live_lease"),
        ("ignore_keepalive_failure", "single_holder"),
        // Not ttl_reset_on_leader_change: with etcd's checkpoint rules its swarm's fixed system
        // fails lease_liveness too, which it therefore expects "any" (the scenario says why).
        ("watch_skip_at_compaction", "watch"),
    ];
    for (switch, property) in expected_catcher {
        let record = result.switches.iter().find(|s| s.switch == switch).unwrap_or_else(|| panic!("{switch}"));
        assert_eq!(record.off.violations, 0, "{switch} off: {:?}", record.off.failures);
        assert_eq!(record.on.detected, 1, "{switch} on: detected on seed 1");
        assert!(record.on.caught_by.iter().any(|c| c.property == property), "{switch}: {:?}", record.on.caught_by);
        let replay = &record.on.detections[0].replay;
        assert!(replay.contains(&format!("--bugs {switch} --seed")), "{replay}");
    }
    let stdout = text(&out.stdout);
    assert!(stdout.contains("every switch-off run clean"), "{stdout}");
}

/// Shards partition the seeds, and merging every shard's file gives the unsharded file, byte for
/// byte, whatever order the shards come in.
#[test]
fn sharded_sweeps_merge_into_the_unsharded_sweep() {
    let dir = scratch("shards");
    let args = ["--bugs", "deposed_leader_expires_leases", "--seeds", "1..3"];
    // 1..3 in two shards: 1/2 = seeds 1 and 3, 2/2 = seed 2.
    let whole = dir.join("whole");
    let (out, whole_result) = sweep(&whole, &args);
    assert_eq!(out.status.code(), Some(0));
    let mut files = Vec::new();
    let mut seen = Vec::new();
    for k in [2, 1] {
        let part = dir.join(format!("part-{k}"));
        let shard = format!("{k}/2");
        let (out, result) = sweep(&part, &[&args[..], &["--shard", &shard]].concat());
        assert_eq!(out.status.code(), Some(0));
        seen.push(result.switches[0].on.runs);
        files.push(part.join("detection.json"));
    }
    assert_eq!(seen, vec![1, 2], "shard 2/2 holds seed 2, shard 1/2 seeds 1 and 3");
    let merged = dir.join("merged.json");
    let mut merge = vec!["merge"];
    merge.extend(files.iter().map(|f| f.to_str().unwrap()));
    merge.extend(["-o", merged.to_str().unwrap()]);
    let out = coordsim(&merge);
    assert_eq!(out.status.code(), Some(0), "{}{}", text(&out.stdout), text(&out.stderr));
    assert_eq!(std::fs::read_to_string(&merged).unwrap(), whole_result.to_json());
    assert_eq!(
        std::fs::read_to_string(&merged).unwrap(),
        std::fs::read_to_string(whole.join("detection.json")).unwrap()
    );
    // The same shard twice is refused.
    let twice =
        coordsim(&["merge", files[0].to_str().unwrap(), files[0].to_str().unwrap(), "-o", merged.to_str().unwrap()]);
    assert_bad_input(&twice, &["shard 2/2 is already in an earlier input"]);
}

/// `coordsim run --shard` too: the shards' sweep.json files merge into the unsharded one.
#[test]
fn sharded_runs_merge_into_the_unsharded_run() {
    let dir = scratch("run-shards");
    let out_dir = dir.join("out");
    let run = |extra: &[&str]| {
        let mut args = vec!["run", "split-brain-gc-pause", "--seeds", "1..3", "--report", "none", "--jobs", "2"];
        args.extend(["--out", out_dir.to_str().unwrap()]);
        args.extend_from_slice(extra);
        let out = coordsim(&args);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
        std::fs::read_to_string(out_dir.join("sweep.json")).unwrap()
    };
    let whole = run(&[]);
    let mut files = Vec::new();
    for k in 1..=3 {
        let path = dir.join(format!("sweep-{k}.json"));
        std::fs::write(&path, run(&["--shard", &format!("{k}/3")])).unwrap();
        files.push(path);
    }
    let merged = dir.join("merged.json");
    let out = coordsim(&[
        "merge",
        files[2].to_str().unwrap(),
        files[0].to_str().unwrap(),
        files[1].to_str().unwrap(),
        "-o",
        merged.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}{}", text(&out.stdout), text(&out.stderr));
    assert_eq!(std::fs::read_to_string(&merged).unwrap(), whole);
}

#[test]
fn sweep_and_merge_reject_bad_input_with_one_line() {
    let dir = scratch("bad");
    assert_bad_input(&coordsim(&["sweep", "--bugs", "no_such_bug", "--seeds", "1..2"]), &["\"no_such_bug\""]);
    assert_bad_input(&coordsim(&["sweep", "--seeds", "1..2", "--shard", "5/4"]), &["invalid shard \"5/4\""]);
    assert_bad_input(&coordsim(&["sweep", "--seeds", "1..2", "--shard", "3/4"]), &["holds no seed"]);
    assert_bad_input(&coordsim(&["run", "split-brain-gc-pause", "--shard", "x"]), &["invalid shard \"x\""]);
    let missing = dir.join("missing.json");
    let out = dir.join("out.json");
    assert_bad_input(&coordsim(&["merge", missing.to_str().unwrap(), "-o", out.to_str().unwrap()]), &["missing.json"]);
    let garbage = dir.join("garbage.json");
    std::fs::write(&garbage, "{\"schema\": \"coordsim-summary/1\"}").unwrap();
    assert_bad_input(
        &coordsim(&["merge", garbage.to_str().unwrap(), "-o", out.to_str().unwrap()]),
        &["garbage.json", "not a sweep file"],
    );
    let truncated = dir.join("truncated.json");
    std::fs::write(&truncated, "{\"schema\": \"coordsim-detection/1\", \"command\": ").unwrap();
    assert_bad_input(
        &coordsim(&["merge", truncated.to_str().unwrap(), "-o", out.to_str().unwrap()]),
        &["truncated.json", "line 1, column", "ends early"],
    );
}

#[test]
fn list_shows_name_summary_and_expected_verdicts() {
    let out = coordsim(&["list"]);
    assert_eq!(out.status.code(), Some(0));
    let stdout = text(&out.stdout);
    let line = stdout.lines().find(|l| l.starts_with("split-brain-gc-pause ")).expect("listed");
    assert!(line.contains("A GC pause outlives the lease"), "{line}");
    assert!(line.contains("[fail: mutual_exclusion, fencing, single_holder; others pass]"), "{line}");
    assert!(stdout.lines().any(|l| l.starts_with("swarm-watch-skip-at-compaction ") && l.contains("[all pass]")));
    assert_eq!(stdout.lines().count(), coordsim::library::all().count());
}

/// docs/scenarios.md is `coordsim list --markdown`: regenerate it when a scenario or model changes.
#[test]
fn the_scenario_catalogue_in_docs_is_generated_from_the_library() {
    let out = coordsim(&["list", "--markdown"]);
    assert_eq!(out.status.code(), Some(0));
    let page = text(&out.stdout);
    assert_eq!(page, coordsim::explain::catalogue_markdown());
    let row =
        "| [`split-brain-gc-pause`](../scenarios/library/split-brain-gc-pause.toml) | A GC pause outlives the lease";
    assert!(page.contains(row), "{page}");
    assert!(page.contains("| `queue-lock` |"), "the models are listed");
    assert_eq!(page.lines().filter(|l| l.starts_with("| [`")).count(), coordsim::library::all().count());
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/scenarios.md");
    let written = std::fs::read_to_string(path).expect("docs/scenarios.md exists");
    assert!(written == page, "docs/scenarios.md is stale: run `cargo coordsim list --markdown > docs/scenarios.md`");
}

/// docs/data/detection/ holds a measured `coordsim sweep --bugs all` (detection.json) and the page
/// `coordsim report` renders from it (detection.md): the page must be that rendering, every bug
/// switch must be in the measurement, and the measurement must be clean.
#[test]
fn the_detection_page_in_docs_is_generated_from_the_measured_sweep() {
    let dir = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/data/detection"));
    let json = std::fs::read_to_string(dir.join("detection.json")).expect("docs/data/detection/detection.json exists");
    let sweep = DetectionSweep::from_json(&json).expect("a detection.json");
    let page = std::fs::read_to_string(dir.join("detection.md")).expect("docs/data/detection/detection.md exists");
    assert!(
        page == sweep.markdown(),
        "docs/data/detection/detection.md is stale: run `cargo coordsim report docs/data/detection`"
    );
    let measured: Vec<&str> = sweep.switches.iter().map(|s| s.switch.as_str()).collect();
    for switch in switches::all() {
        assert!(
            measured.contains(&switch.as_str()),
            "{switch} is not in docs/data/detection: measure again with `{}`",
            sweep.command
        );
    }
    assert!(sweep.clean, "the measured sweep had switch-off violations");
    // `coordsim report` on a folder holding a detection.json writes that page.
    let copy = scratch("detection-page");
    std::fs::write(copy.join("detection.json"), &json).unwrap();
    let out = coordsim(&["report", copy.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(std::fs::read_to_string(copy.join("detection.md")).unwrap(), page);
}

#[test]
fn the_real_systems_table_in_docs_is_generated_from_the_measured_real_runs() {
    use coordsim::real_verdicts::RealVerdicts;
    let dir = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/data/real"));
    let json =
        std::fs::read_to_string(dir.join("real-verdicts.json")).expect("docs/data/real/real-verdicts.json exists");
    let verdicts = RealVerdicts::from_json(&json).expect("a real-verdicts.json");
    let page = std::fs::read_to_string(dir.join("real-verdicts.md")).expect("docs/data/real/real-verdicts.md exists");
    // The simulator's column is the library's expectation of today: a changed expectation makes
    // the page stale until it is drawn again (and, if it changed what a real run would say, run
    // again: scripts/nightly-real.sh).
    assert!(
        page == verdicts.markdown(),
        "docs/data/real/real-verdicts.md is stale: run `cargo coordsim report docs/data/real`"
    );
    let real_systems =
        std::fs::read_to_string(Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/real-systems.md"))).unwrap();
    assert!(real_systems.contains("data/real/real-verdicts.md"), "docs/real-systems.md links the generated table");
    // `coordsim report` on a folder holding a real-verdicts.json writes that page.
    let copy = scratch("real-verdicts-page");
    std::fs::write(copy.join("real-verdicts.json"), &json).unwrap();
    let out = coordsim(&["report", copy.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(std::fs::read_to_string(copy.join("real-verdicts.md")).unwrap(), page);
    // And on a folder of runs laid out as `coordsim real` writes them, it first reads their
    // summaries (here a simulated run's, in a real run's place).
    let runs = scratch("real-verdicts-runs");
    let sim = scratch("real-verdicts-sim");
    let out = coordsim(&["run", "split-brain-gc-pause-fenced", "--seed", "1", "--out", sim.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let run = runs.join("etcd/split-brain-gc-pause-fenced/run-1");
    std::fs::create_dir_all(&run).unwrap();
    std::fs::copy(sim.join("split-brain-gc-pause-fenced/seed-1/summary.json"), run.join("summary.json")).unwrap();
    let out = coordsim(&["report", runs.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let drawn = std::fs::read_to_string(runs.join("real-verdicts.md")).unwrap();
    assert!(
        drawn.contains("| `split-brain-gc-pause-fenced` | fail: single_holder | fail: single_holder | — |"),
        "{drawn}"
    );
    assert!(runs.join("real-verdicts.json").is_file());
}

#[test]
fn explain_prints_the_teaching_text_and_each_property_with_its_expectation() {
    let out = coordsim(&["explain", "split-brain-gc-pause-fenced"]);
    assert_eq!(out.status.code(), Some(0));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("fencing"), "{stdout}");
    assert!(stdout.contains("single_holder      fail"), "{stdout}");
    assert!(stdout.contains("mutual_exclusion   pass"), "{stdout}");
    assert!(stdout.contains("linearizable       pass  (nothing to judge in this workload: passes)"), "{stdout}");
    assert!(stdout.contains("fault at 2s: pause c1 for 10s"), "{stdout}");
    let out = coordsim(&["explain", "swarm-ttl-reset-on-leader-change"]);
    assert!(text(&out.stdout).contains("cargo coordsim sweep --bugs ttl_reset_on_leader_change"));
    assert_bad_input(&coordsim(&["explain", "no-such-scenario"]), &["unknown scenario \"no-such-scenario\""]);
    // The fault kinds, as docs/scenario-files.md's table (a test in the core holds the page).
    let out = coordsim(&["explain", "--faults"]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(text(&out.stdout), coordsim_sim::nemesis::plan::fault_reference());
    assert_eq!(coordsim(&["explain"]).status.code(), Some(2), "a scenario or --faults");
}

/// issue 8, "must show": shrinking a failing seed of the split-brain chaos scenario ends with one
/// pause and two clients, and the written minimal file reproduces the violation by itself.
#[test]
fn shrinking_the_split_brain_seed_leaves_one_pause_and_two_clients_and_still_fails() {
    let dir = scratch("shrink");
    // Seed 58 (a pause of c2 at 3.5 s remains); others keep more faults or clients
    // (docs/bench/detection-and-shrinking.md).
    let out = coordsim(&["shrink", "split-brain-chaos", "--seed", "58", "--out", dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}{}", text(&out.stdout), text(&out.stderr));
    let path = dir.join("minimal.toml");
    let minimal = coordsim::load::parse("minimal.toml", &std::fs::read_to_string(&path).unwrap()).unwrap();
    let original = coordsim::load::resolve("split-brain-chaos").unwrap().scenario;
    assert!(coordsim_sim::nemesis::plan::plan(&original, 58).len() > 5, "the drawn plan had many faults");
    assert_eq!(minimal.nemesis.len(), 1, "{:?}", minimal.nemesis);
    assert_eq!(minimal.nemesis[0].kind, coordsim_sim::scenario::FaultKindSpec::Pause);
    assert_eq!(minimal.clients.count, 2);
    assert!(minimal.chaos.is_none(), "a fixed timeline");
    assert!(minimal.duration < original.duration);
    for file in ["report.html", "history.json", "summary.json"] {
        assert!(dir.join(file).is_file(), "{file}");
    }
    // The written file, run as a user would, fails mutual exclusion again (and expects to).
    let rerun = dir.join("rerun");
    let out = coordsim(&["run", path.to_str().unwrap(), "--seed", "58", "--out", rerun.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    let summary = std::fs::read_to_string(rerun.join("split-brain-chaos-seed-58-min/seed-58/summary.json")).unwrap();
    let summary = coordsim_reports::RunSummary::from_json(&summary).unwrap();
    assert_eq!(summary.verdict("mutual_exclusion"), Some(coordsim_checker::verdict::Verdict::Fail));
}

#[test]
fn shrink_rejects_a_seed_without_a_failure() {
    // split-brain-chaos seed 5 fails nothing: nothing to shrink.
    let dir = scratch("shrink-none");
    let out = coordsim(&["shrink", "split-brain-chaos", "--seed", "5", "--out", dir.to_str().unwrap()]);
    assert_bad_input(&out, &["no property fails in split-brain-chaos seed 5"]);
    assert_bad_input(
        &coordsim(&["shrink", "split-brain-chaos", "--seed", "5", "--property", "nope"]),
        &["unknown property \"nope\""],
    );
}
