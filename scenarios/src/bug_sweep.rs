//! `coordsim sweep --bugs all|<switch>,... --seeds A..B [--shard K/N] [--jobs J]`: how well the
//! testbed finds its own planted bugs. For each bug switch its swarm scenario
//! (`swarm-<switch>.toml`: a random fault mix and a workload suited to that bug, written as the
//! fixed system) runs over the seeds twice: with the switch on, where any property the scenario
//! expects to pass that fails is a detection; and with it off, where any such failure (or a crash)
//! is a violation that makes the command exit 1. Writes `<out>/detection.json`
//! (reports/SCHEMA.md) and prints a table.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use coordsim_checker::verdict::Verdict;
use coordsim_reports::detection::{self, DetectionSweep, SeedOutcome, SeedRange, Shards, SwitchDetection};
use coordsim_sim::scenario::Scenario;

use crate::load::{self, InputError, Loaded};
use crate::sweep::{self, SeedResult};
use crate::switches;

/// What `coordsim sweep` was asked.
#[derive(Clone, Debug)]
pub struct Request {
    /// `all` or a comma-separated list of switch names, as given.
    pub bugs: String,
    pub seeds: SeedRange,
    pub shard: Option<Shards>,
    pub jobs: Option<usize>,
    pub out: PathBuf,
}

/// A switch and the scenario that plants it.
struct Planted {
    switch: String,
    loaded: Loaded,
}

pub fn run(request: &Request) -> Result<ExitCode, InputError> {
    let names = switches::parse_list(&request.bugs)?;
    let bugs = if request.bugs.trim() == "all" { "all".to_string() } else { names.join(",") };
    let planted: Vec<Planted> = names.iter().map(|switch| plant(switch)).collect::<Result<_, _>>()?;
    let seeds = detection::seeds_of(request.seeds, request.shard.as_ref());
    if seeds.is_empty() {
        return Err(InputError::Usage(format!(
            "shard {}/{} of seeds {} holds no seed: use fewer shards",
            request.shard.as_ref().map_or(1, |s| s.indices[0]),
            request.shard.as_ref().map_or(1, |s| s.count),
            request.seeds
        )));
    }
    let jobs = request.jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    if jobs == 0 {
        return Err(InputError::Usage("--jobs must be at least 1".into()));
    }
    std::fs::create_dir_all(&request.out)
        .map_err(|error| InputError::Io { path: request.out.display().to_string(), error })?;
    crate::owned::check_writable(&request.out.join("detection.json"))?;
    let command = detection::sweep_command(&bugs, request.seeds, request.shard.as_ref());
    crate::outln!("{command}: {} switches x {} seeds, on and off, {jobs} jobs", planted.len(), seeds.len());
    let started = Instant::now();
    let records = sweep_switches(&planted, &seeds, jobs, &started);
    let result = DetectionSweep::new(&bugs, request.seeds, request.shard.clone(), records);
    let path = request.out.join("detection.json");
    crate::owned::write(&path, result.to_json())?;
    for line in table(&result) {
        crate::outln!("{line}");
    }
    crate::outln!("report: {}   wall time: {:.1} s", path.display(), started.elapsed().as_secs_f64());
    Ok(exit_code(&result))
}

/// 0 when every switch-off run was clean, 1 otherwise (with the seeds to replay).
fn exit_code(result: &DetectionSweep) -> ExitCode {
    let failures: Vec<&detection::SeedFinding> = result.switches.iter().flat_map(|s| &s.off.failures).collect();
    if failures.is_empty() {
        return ExitCode::SUCCESS;
    }
    crate::outln!("{} switch-off runs violated a property; replay with:", failures.len());
    for failure in failures {
        crate::outln!("  {}", failure.replay);
    }
    ExitCode::from(1)
}

/// Finds the swarm scenario of `switch` and checks that it is written as the fixed system.
fn plant(switch: &str) -> Result<Planted, InputError> {
    let name = switches::swarm_scenario(switch);
    if crate::library::get(&name).is_none() {
        return Err(InputError::Usage(format!(
            "bug switch {switch:?} has no swarm scenario: add scenarios/library/{name}.toml"
        )));
    }
    let loaded = load::resolve(&name)?;
    let on = switches::enabled(&loaded.scenario.bugs);
    if !on.is_empty() {
        return Err(InputError::Usage(format!(
            "{}: a swarm scenario is the fixed system; remove [bugs] {} (the sweep turns its switch on)",
            loaded.source,
            on.join(", ")
        )));
    }
    Ok(Planted { switch: switch.to_string(), loaded })
}

/// A switch's scenario with the switch on, and its replay argument.
struct Variant {
    scenario: Scenario,
    arg: String,
}

/// Runs every switch on and off over `seeds`, all runs sharing the `jobs` workers (a sweep of few
/// seeds still keeps every core busy); prints a line as each switch completes.
fn sweep_switches(planted: &[Planted], seeds: &[u64], jobs: usize, started: &Instant) -> Vec<SwitchDetection> {
    let variants: Vec<[Variant; 2]> = planted
        .iter()
        .map(|p| {
            let name = &p.loaded.scenario.name;
            let mut on = p.loaded.scenario.clone();
            on.bugs = switches::turn_on(&on.bugs, std::slice::from_ref(&p.switch));
            [
                Variant { scenario: on, arg: format!("{name} --bugs {}", p.switch) },
                Variant { scenario: p.loaded.scenario.clone(), arg: name.clone() },
            ]
        })
        .collect();
    // Task order: switch by switch, its on runs then its off runs, in seed order.
    let tasks: Vec<sweep::Task<'_>> = variants
        .iter()
        .flat_map(|pair| pair.iter())
        .flat_map(|v| seeds.iter().map(move |&seed| sweep::Task { scenario: &v.scenario, arg: &v.arg, seed }))
        .collect();
    let per_switch = 2 * seeds.len();
    let mut records = Vec::new();
    let mut outcomes: Vec<(u64, SeedOutcome, String)> = Vec::with_capacity(per_switch);
    sweep::run_tasks(&tasks, jobs, |index, result| {
        outcomes.push(outcome(result));
        if (index + 1) % per_switch == 0 {
            let p = &planted[index / per_switch];
            let (on, off) = outcomes.split_at(seeds.len());
            let record =
                SwitchDetection::from_runs(&p.switch, &p.loaded.scenario.name, &p.loaded.source, on, off, seeds);
            crate::outln!(
                "  {:<36} on: {}/{} detected   off: {} violations   ({:.1} s)",
                record.switch,
                record.on.detected,
                record.on.runs,
                record.off.violations,
                started.elapsed().as_secs_f64()
            );
            records.push(record);
            outcomes.clear();
        }
    });
    records
}

/// A run's outcome: the properties expected to pass that failed, or the crash.
fn outcome(result: SeedResult) -> (u64, SeedOutcome, String) {
    match result {
        SeedResult::Done { summary, .. } => {
            let failed: Vec<String> = summary
                .outcomes
                .iter()
                .filter(|o| o.expected == "pass" && o.report.verdict == Verdict::Fail)
                .map(|o| o.report.property.clone())
                .collect();
            (summary.seed, SeedOutcome::Judged(failed), summary.replay)
        }
        SeedResult::Crashed { seed, message, replay } | SeedResult::Stopped { seed, message, replay } => {
            (seed, SeedOutcome::Crashed(message), replay)
        }
    }
}

/// The detection table: one row per switch.
pub fn table(result: &DetectionSweep) -> Vec<String> {
    let mut lines = vec![format!(
        "{:<36} {:>10} {:>7} {:>7}  {:<40} {:>10}",
        "switch", "detected", "rate", "median", "caught by (seeds)", "off viol."
    )];
    for s in &result.switches {
        let caught: Vec<String> = s.on.caught_by.iter().map(|c| format!("{} ({})", c.property, c.seeds)).collect();
        let median = s.on.median_seeds_to_detection.map_or("-".to_string(), |m| format!("{m}"));
        let crashed = if s.on.crashes.is_empty() { String::new() } else { format!("  {} crashed", s.on.crashes.len()) };
        lines.push(format!(
            "{:<36} {:>10} {:>6.1}% {:>7}  {:<40} {:>10}{crashed}",
            s.switch,
            format!("{}/{}", s.on.detected, s.on.runs),
            s.on.rate * 100.0,
            median,
            if caught.is_empty() { "-".to_string() } else { caught.join(", ") },
            format!("{}/{}", s.off.violations, s.off.runs),
        ));
    }
    let coverage = match &result.shards {
        None => format!("seeds {}", result.seeds),
        Some(shards) => format!("seeds {} (shards {:?} of {})", result.seeds, shards.indices, shards.count),
    };
    lines.push(format!(
        "{coverage}: {}",
        if result.clean { "every switch-off run clean" } else { "SWITCH-OFF VIOLATIONS (exit 1)" }
    ));
    lines
}

/// `coordsim merge a.json b.json ... -o out.json`: shards of one `coordsim sweep --bugs` (their
/// `detection.json`) or of one `coordsim run` (their `sweep.json`) into one file. Exit 0 when the
/// merged runs are clean (as expected), 1 when not, 2 on bad input.
pub fn merge(inputs: &[PathBuf], out: &Path) -> Result<ExitCode, InputError> {
    let mut texts = Vec::new();
    for path in inputs {
        let text = crate::input::read_text(path, crate::input::DEFAULT_LIMIT)
            .map_err(|error| InputError::Usage(format!("{}: {error}", path.display())))?;
        texts.push((path, text));
    }
    let bad = |path: &Path, message: String| InputError::Usage(format!("{}: {message}", path.display()));
    // A file that is not JSON, a truncated one say, is named with the line where it stopped.
    let (first_path, first_text) = &texts[0];
    let first_schema = match coordsim_checker::history::schema_of(first_text) {
        Ok(Some(schema)) => schema,
        Ok(None) => return Err(bad(first_path, "no `schema` field: not a sweep file".into())),
        Err(error) => {
            let why = if error.is_eof() { "it ends early (a truncated file?)" } else { "not JSON" };
            let message = error.to_string();
            let message = message.split(" at line ").next().unwrap_or_default();
            return Err(bad(first_path, format!("line {}, column {}: {why}: {message}", error.line(), error.column())));
        }
    };
    let (merged, ok) = if first_schema == coordsim_reports::DETECTION_SCHEMA {
        let parts: Vec<DetectionSweep> = texts
            .iter()
            .map(|(path, text)| DetectionSweep::from_json(text).map_err(|e| bad(path, e)))
            .collect::<Result<_, _>>()?;
        let merged = detection::merge(&parts).map_err(|e| InputError::Usage(format!("cannot merge: {e}")))?;
        for line in table(&merged) {
            crate::outln!("{line}");
        }
        (merged.to_json(), merged.clean)
    } else if first_schema == coordsim_reports::SWEEP_SCHEMA {
        let parts: Vec<coordsim_reports::SweepSummary> = texts
            .iter()
            .map(|(path, text)| coordsim_reports::SweepSummary::from_json(text).map_err(|e| bad(path, e)))
            .collect::<Result<_, _>>()?;
        let merged =
            coordsim_reports::sweep::merge(&parts).map_err(|e| InputError::Usage(format!("cannot merge: {e}")))?;
        crate::outln!(
            "{} runs, {} as expected, {} not",
            merged.totals.runs,
            merged.totals.as_expected,
            merged.totals.not_as_expected
        );
        (merged.to_json(), merged.as_expected)
    } else {
        return Err(bad(
            texts[0].0,
            format!(
                "not a sweep file: its schema is {first_schema:?}, expected {:?} or {:?}",
                coordsim_reports::DETECTION_SCHEMA,
                coordsim_reports::SWEEP_SCHEMA
            ),
        ));
    };
    if let Some(parent) = out.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)
            .map_err(|error| InputError::Io { path: parent.display().to_string(), error })?;
    }
    crate::owned::write(out, merged)?;
    crate::outln!("merged {} files into {}", inputs.len(), out.display());
    // Like the commands that wrote the inputs: 1 when a run was not clean / not as expected.
    Ok(if ok { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sweep_with_off(off: SeedOutcome) -> DetectionSweep {
        let on = [(1, SeedOutcome::Judged(vec!["watch".into()]), "on 1".to_string())];
        let off = [(1, off, "cargo coordsim run swarm-x --seed 1".to_string())];
        let switch = SwitchDetection::from_runs("x", "swarm-x", "lib", &on, &off, &[1]);
        DetectionSweep::new("x", SeedRange { first: 1, last: 1 }, None, vec![switch])
    }

    /// The command exits 1 when a switch-off run failed a property or crashed, 0 when all were clean.
    #[test]
    fn a_switch_off_violation_or_crash_exits_1() {
        let code = |sweep: &DetectionSweep| format!("{:?}", exit_code(sweep));
        let clean = sweep_with_off(SeedOutcome::Judged(vec![]));
        assert!(clean.clean);
        assert_eq!(code(&clean), format!("{:?}", ExitCode::SUCCESS));
        for off in [SeedOutcome::Judged(vec!["linearizable".into()]), SeedOutcome::Crashed("boom".into())] {
            let dirty = sweep_with_off(off);
            assert!(!dirty.clean);
            assert_eq!(dirty.switches[0].off.violations, 1);
            assert_eq!(code(&dirty), format!("{:?}", ExitCode::from(1)));
            assert!(table(&dirty).last().unwrap().contains("SWITCH-OFF VIOLATIONS"));
        }
    }
}
