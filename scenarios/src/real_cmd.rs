//! `coordsim real ...`: the scenario's workload and fault plan against a real etcd cluster or
//! ZooKeeper ensemble on this machine (crate coordsim-real, cargo feature `real`), with the same
//! history, verdicts and report.html as a simulated run. `coordsim real doctor` says what is
//! missing; `coordsim real-client` is the client process a run starts.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Subcommand, ValueEnum};

#[cfg(feature = "real")]
use crate::load;
use crate::load::InputError;

#[derive(Args, Debug)]
pub struct RealArgs {
    #[command(subcommand)]
    command: RealCommand,
}

#[derive(Subcommand, Debug)]
enum RealCommand {
    /// Report which of the programs a real run needs are installed (install them with
    /// scripts/install-real.sh) and what a killed run left behind (network namespaces and links);
    /// exit 1 if anything is missing or left.
    Doctor(DoctorArgs),
    /// Run a scenario against a real etcd cluster of `cluster.servers` members (Debian's etcd-server).
    Etcd(RunArgs),
    /// Run a scenario against a real ZooKeeper ensemble of `cluster.servers` servers (Debian's zookeeper).
    Zookeeper(RunArgs),
    /// The fidelity table: run each scenario in the simulator (seeds 1..N) and on its real system
    /// (etcd for etcd recipes, ZooKeeper for ZooKeeper ones), and print, as Markdown, where the
    /// verdicts of the properties a real run judges agree. Progress goes to stderr.
    Fidelity(FidelityArgs),
    /// Fit the time model to the real services on this machine (docs/time.md): the
    /// hundred-request workload and eight writers on real etcd and ZooKeeper; the links from the
    /// resource's round trips, fsync from the servers' own counters, then by bisection the
    /// request overhead on the queue lock's median unlock, the CPU costs on the herd's drain and
    /// the write path's costs on the writers' throughput; then handoff, drain and the rest
    /// printed beside the real figures, as Markdown. Progress goes to stderr.
    Calibrate(CalibrateArgs),
}

#[derive(Args, Debug)]
struct CalibrateArgs {
    /// Real runs per service, each on a fresh cluster.
    #[arg(long, default_value_t = 1)]
    runs: u64,
    /// Simulator seeds 1..N per evaluation.
    #[arg(long, default_value_t = 3)]
    seeds: u64,
    /// Output folder of the real runs (<out>/<system>/<scenario>/run-N/).
    #[arg(long, default_value = "target/coordsim/calibrate")]
    out: PathBuf,
    /// Write the fitted profiles into this folder as <profile>.toml (sim/core/profiles/ to
    /// replace the built-in ones; they take effect in the next build).
    #[arg(long)]
    write_profiles: Option<PathBuf>,
    /// Calibrate only this service (both when not given); the other's profile is left as it is.
    #[arg(long, value_enum)]
    service: Option<SystemArg>,
}

#[derive(Args, Debug)]
struct DoctorArgs {
    /// Remove what killed runs left (namespaces and links named `cs<pid>...` whose process is
    /// gone), then check again.
    #[arg(long)]
    clean: bool,
}

#[derive(Args, Debug)]
struct FidelityArgs {
    /// Library names or scenario files (default: every library scenario the real runner accepts).
    scenarios: Vec<String>,
    /// Simulator seeds 1..N per scenario.
    #[arg(long, default_value_t = 20)]
    seeds: u64,
    /// Real runs per scenario, each on a fresh cluster.
    #[arg(long, default_value_t = 1)]
    runs: u64,
    /// Output folder of the real runs (<out>/<system>/<scenario>/run-N/).
    #[arg(long, default_value = "target/coordsim/fidelity")]
    out: PathBuf,
}

#[derive(Args, Debug)]
struct RunArgs {
    /// A library name or a path to a scenario file (a lock workload; pause, crash and partition
    /// faults; client clocks).
    scenario: String,
    /// Runs, one after the other, each on a fresh cluster; run N draws [chaos] faults with seed N
    /// (default 1; with `--for`, as many as fit, at most 1000).
    #[arg(long)]
    runs: Option<u64>,
    /// A soak: start runs until this much wall time has passed (`30m`, `2h`; a run started is
    /// finished), then print a table of every property's failures over the runs.
    #[arg(long = "for", value_name = "DURATION", value_parser = crate::cli::parse_wall_duration)]
    for_: Option<std::time::Duration>,
    /// Output folder; run N writes <out>/<system>/<scenario>/run-N/ (history.json, summary.json,
    /// report.html, and the cluster's and clients' logs and data).
    #[arg(long, default_value = "target/coordsim/real")]
    out: PathBuf,
    /// Keep each server's data directory in the run folder (removed after the run otherwise:
    /// a 3-server etcd run leaves 367 MB, mostly preallocated WAL).
    #[arg(long)]
    keep_data: bool,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum SystemArg {
    Etcd,
    Zookeeper,
}

/// `coordsim real-client --config <file>` and `coordsim real-resource --config <file>` (started
/// by a real run, not by people).
#[derive(Args, Debug)]
pub struct ClientArgs {
    #[arg(long)]
    config: PathBuf,
}

/// `coordsim real-link --control <socket>` (started by a real run with delays, inside a node's
/// network namespace).
#[derive(Args, Debug)]
pub struct LinkArgs {
    #[arg(long)]
    control: PathBuf,
    /// Read connections to this port as ZooKeeper's client protocol (to lose chosen replies).
    #[arg(long, conflicts_with = "etcd_port")]
    zookeeper_port: Option<u16>,
    /// Read connections to this port as etcd's (gRPC over HTTP/2), to lose chosen replies.
    #[arg(long)]
    etcd_port: Option<u16>,
}

/// What a real run needs on the machine: (what, path, needed for).
const PROGRAMS: [(&str, &str, &str); 5] = [
    ("etcd", "/usr/bin/etcd", "coordsim real etcd (Debian etcd-server)"),
    ("java", "/usr/bin/java", "coordsim real zookeeper (a JRE; Debian zookeeper brings one)"),
    ("zookeeper.jar", "/usr/share/java/zookeeper.jar", "coordsim real zookeeper (Debian zookeeper)"),
    (
        "protoc",
        "/usr/bin/protoc",
        "building with --features real: the etcd client's protobuf code (Debian protobuf-compiler)",
    ),
    (
        "libfaketime",
        "/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1",
        "[[clock]] in real runs (Debian faketime)",
    ),
];

pub fn run(args: RealArgs) -> Result<ExitCode, InputError> {
    match args.command {
        RealCommand::Doctor(args) => Ok(doctor(&args)),
        RealCommand::Etcd(run) => run_real(&run, SystemArg::Etcd),
        RealCommand::Zookeeper(run) => run_real(&run, SystemArg::Zookeeper),
        RealCommand::Fidelity(args) => fidelity(&args),
        RealCommand::Calibrate(args) => calibrate(&args),
    }
}

fn doctor(args: &DoctorArgs) -> ExitCode {
    let mut missing = 0;
    for (name, path, purpose) in PROGRAMS {
        let found = Path::new(path).exists();
        missing += usize::from(!found);
        crate::outln!("{:<14} {:<8} {path}  ({purpose})", name, if found { "ok" } else { "MISSING" });
    }
    let built = cfg!(feature = "real");
    crate::outln!(
        "{:<14} {:<8} this coordsim binary{}",
        "feature real",
        if built { "ok" } else { "MISSING" },
        if built { "" } else { ": build it with `cargo coordsim-real ...` (cargo run --features real)" }
    );
    missing += usize::from(!built);
    #[cfg(feature = "real")]
    let stale = check_machine(args.clean);
    #[cfg(not(feature = "real"))]
    let stale = {
        let _ = args.clean;
        false
    };
    if missing == 0 && !stale {
        crate::outln!("ready: coordsim real etcd|zookeeper <scenario>");
        ExitCode::SUCCESS
    } else if missing == 0 {
        ExitCode::from(1)
    } else {
        crate::outln!(
            "{missing} missing: run scripts/install-real.sh (Debian packages), then build with --features real"
        );
        ExitCode::from(1)
    }
}

/// Prints whether partitions can be made and what killed runs left (removed first if `clean`);
/// whether anything is left.
#[cfg(feature = "real")]
fn check_machine(clean: bool) -> bool {
    match coordsim_real::netns::unavailable() {
        None => crate::outln!("{:<14} {:<8} network namespaces and nftables (partitions)", "partitions", "ok"),
        Some(reason) => {
            crate::outln!("{:<14} {:<8} {reason}: scenarios with partitions are refused", "partitions", "no")
        }
    }
    if clean {
        for failure in coordsim_real::netns::clean_leftovers() {
            crate::outln!("{:<14} {:<8} {failure}", "clean", "FAILED");
        }
    }
    let (namespaces, links) = coordsim_real::netns::leftovers();
    if namespaces.is_empty() && links.is_empty() {
        crate::outln!("{:<14} {:<8} nothing left by a killed run", "leftovers", "ok");
        return false;
    }
    crate::outln!(
        "{:<14} {:<8} left by a killed run: namespaces {}, links {} (`coordsim real doctor --clean` removes them)",
        "leftovers",
        "STALE",
        if namespaces.is_empty() { "none".to_string() } else { namespaces.join(" ") },
        if links.is_empty() { "none".to_string() } else { links.join(" ") },
    );
    true
}

#[cfg(not(feature = "real"))]
fn run_real(_: &RunArgs, _: SystemArg) -> Result<ExitCode, InputError> {
    Err(InputError::Usage(
        "this coordsim was built without real-cluster support: run `cargo coordsim-real real ...` \
         (the `real` feature; scripts/install-real.sh installs what it needs)"
            .into(),
    ))
}

#[cfg(not(feature = "real"))]
fn calibrate(_: &CalibrateArgs) -> Result<ExitCode, InputError> {
    fidelity(&FidelityArgs { scenarios: Vec::new(), seeds: 1, runs: 1, out: PathBuf::new() })
}

#[cfg(not(feature = "real"))]
fn fidelity(_: &FidelityArgs) -> Result<ExitCode, InputError> {
    run_real(
        &RunArgs { scenario: String::new(), runs: Some(1), for_: None, out: PathBuf::new(), keep_data: false },
        SystemArg::Etcd,
    )
}

/// One scenario's verdicts: per judged property, how many of the runs failed it.
#[cfg(feature = "real")]
struct Tally {
    runs: u64,
    judged: Vec<coordsim_checker::properties::Property>,
    failed: std::collections::BTreeMap<&'static str, u64>,
}

#[cfg(feature = "real")]
impl Tally {
    /// Tallies what a real run on `system` judges, on both sides.
    fn new(system: coordsim_real::System) -> Tally {
        let judged = coordsim_real::judged(system);
        let failed = judged.iter().map(|p| (p.id(), 0)).collect();
        Tally { runs: 0, judged, failed }
    }

    fn add(&mut self, history: &coordsim_checker::history::History) {
        self.runs += 1;
        for &property in &self.judged {
            if property.check(history).verdict == coordsim_checker::verdict::Verdict::Fail {
                *self.failed.get_mut(property.id()).expect("judged") += 1;
            }
        }
    }

    /// "mutual_exclusion 20/20, fencing 20/20", or "none failed".
    fn describe(&self) -> String {
        let failed: Vec<String> =
            self.failed.iter().filter(|(_, n)| **n > 0).map(|(p, n)| format!("{p} {n}/{}", self.runs)).collect();
        match (failed.is_empty(), self.runs) {
            (true, 1) => "none failed (1 run)".to_string(),
            (true, runs) => format!("none failed ({runs} runs)"),
            (false, _) => failed.join(", "),
        }
    }

    /// The properties on which the two disagree: one always fails where the other never does.
    fn differ(&self, other: &Tally) -> Vec<&'static str> {
        let always = |t: &Tally, p: &str| t.failed[p] == t.runs;
        let never = |t: &Tally, p: &str| t.failed[p] == 0;
        self.failed
            .keys()
            .copied()
            .filter(|p| (always(self, p) && never(other, p)) || (never(self, p) && always(other, p)))
            .collect()
    }
}

#[cfg(feature = "real")]
fn fidelity(args: &FidelityArgs) -> Result<ExitCode, InputError> {
    use coordsim_real::System;

    if args.seeds == 0 || args.seeds > 10_000 || args.runs == 0 || args.runs > 100 {
        return Err(InputError::Usage(format!(
            "--seeds {} must be 1..10000 and --runs {} 1..100",
            args.seeds, args.runs
        )));
    }
    let system_of = |scenario: &coordsim_sim::scenario::Scenario| match scenario
        .lock
        .as_ref()
        .is_some_and(|l| l.recipe.is_zookeeper())
    {
        true => System::Zookeeper,
        false => System::Etcd,
    };
    let names: Vec<String> = if args.scenarios.is_empty() {
        crate::library::all()
            .map(|(name, _)| *name)
            .filter(|name| {
                let Ok(loaded) = load::resolve(name) else { return false };
                let system = system_of(&loaded.scenario);
                coordsim_real::run::check(&loaded.scenario, system, 1).is_ok()
            })
            .map(str::to_string)
            .collect()
    } else {
        args.scenarios.clone()
    };
    let mut loaded = Vec::new();
    for name in &names {
        let scenario = load::resolve(name)?;
        let system = system_of(&scenario.scenario);
        coordsim_real::run::check(&scenario.scenario, system, 1).map_err(|e| {
            InputError::Usage(format!("{}: {e} (against a real {} cluster)", scenario.source, system.name()))
        })?;
        loaded.push((scenario, system));
    }
    let exe = std::env::current_exe().map_err(|error| InputError::Io { path: "current executable".into(), error })?;
    let mut rows = Vec::new();
    let mut differing = 0;
    for (scenario, system) in &loaded {
        let name = &scenario.scenario.name;
        eprintln!("{name}: {} simulator seeds, {} real {} run(s)", args.seeds, args.runs, system.name());
        let mut simulated = Tally::new(*system);
        for seed in 1..=args.seeds {
            match crate::sweep::run_seed(&scenario.scenario, name, seed) {
                crate::sweep::SeedResult::Done { history, .. } => simulated.add(&history),
                crate::sweep::SeedResult::Crashed { message, .. }
                | crate::sweep::SeedResult::Stopped { message, .. } => {
                    eprintln!("error: {name} seed {seed}: {message}");
                    return Ok(ExitCode::from(1));
                }
            }
        }
        let mut real = Tally::new(*system);
        let _claim = claim_folder(&args.out.join(system.name()).join(name))?;
        for run in 1..=args.runs {
            let dir = args.out.join(system.name()).join(name).join(format!("run-{run}"));
            fresh_dir(&dir)?;
            let result = match one_real_run(&scenario.scenario, *system, run, &dir, &exe) {
                Ok(result) => result,
                Err(code) => return Ok(code),
            };
            remove_data(&dir)?;
            crate::owned::write(&dir.join("history.json"), result.history.to_json())?;
            real.add(&result.history);
        }
        let differ = simulated.differ(&real);
        differing += usize::from(!differ.is_empty());
        let agree = if differ.is_empty() { "agree".to_string() } else { format!("**differ**: {}", differ.join(", ")) };
        rows.push(format!("| {name} | {} | {} | {} | {agree} |", system.name(), simulated.describe(), real.describe()));
    }
    let judged = |system: coordsim_real::System| {
        coordsim_real::judged(system).iter().map(|p| p.id()).collect::<Vec<_>>().join(", ")
    };
    crate::outln!(
        "Properties judged on both sides: on etcd {}; on ZooKeeper {}. Failures per property: simulator seeds 1..{}, \
         real runs 1..{}. \"differ\" names a property that fails on every run of one side and on none of the other.\n",
        judged(coordsim_real::System::Etcd),
        judged(coordsim_real::System::Zookeeper),
        args.seeds,
        args.runs
    );
    crate::outln!("| scenario | real system | simulator | real | verdicts |");
    crate::outln!("|---|---|---|---|---|");
    for row in &rows {
        crate::outln!("{row}");
    }
    crate::outln!("\n{} of {} scenarios agree.", rows.len() - differing, rows.len());
    Ok(if differing == 0 { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

#[cfg(not(feature = "real"))]
pub fn client(_: ClientArgs) -> Result<ExitCode, InputError> {
    Err(InputError::Usage("built without the `real` feature".into()))
}

#[cfg(not(feature = "real"))]
pub fn resource(_: ClientArgs) -> Result<ExitCode, InputError> {
    Err(InputError::Usage("built without the `real` feature".into()))
}

#[cfg(not(feature = "real"))]
pub fn link(_: LinkArgs) -> Result<ExitCode, InputError> {
    Err(InputError::Usage("built without the `real` feature".into()))
}

#[cfg(feature = "real")]
pub fn link(args: LinkArgs) -> Result<ExitCode, InputError> {
    use coordsim_real::proxy::Protocol;
    let reads = match (args.zookeeper_port, args.etcd_port) {
        (Some(port), _) => Some((port, Protocol::Zookeeper)),
        (None, Some(port)) => Some((port, Protocol::Etcd)),
        (None, None) => None,
    };
    coordsim_real::links::main(&args.control, reads).map_err(InputError::Usage)?;
    Ok(ExitCode::SUCCESS)
}

#[cfg(feature = "real")]
pub fn resource(args: ClientArgs) -> Result<ExitCode, InputError> {
    coordsim_real::resource::main(&args.config).map_err(InputError::Usage)?;
    Ok(ExitCode::SUCCESS)
}

#[cfg(feature = "real")]
pub fn client(args: ClientArgs) -> Result<ExitCode, InputError> {
    coordsim_real::client_main::main(&args.config).map_err(InputError::Usage)?;
    Ok(ExitCode::SUCCESS)
}

#[cfg(feature = "real")]
fn run_real(args: &RunArgs, system: SystemArg) -> Result<ExitCode, InputError> {
    use coordsim_checker::properties::Property;
    use coordsim_real::System;

    let system = match system {
        SystemArg::Etcd => System::Etcd,
        SystemArg::Zookeeper => System::Zookeeper,
    };
    let runs = args.runs.unwrap_or(if args.for_.is_some() { 1000 } else { 1 });
    if runs == 0 || runs > 1000 {
        return Err(InputError::Usage(format!("--runs {runs} must be between 1 and 1000")));
    }
    if args.for_.is_some_and(|d| d.is_zero()) {
        return Err(InputError::Usage("--for must be a duration above zero, like 30m or 2h".into()));
    }
    let loaded = load::resolve(&args.scenario)?;
    let scenario = &loaded.scenario;
    // Refuse before starting anything: the check each run makes (its [chaos] draw differs), with
    // the file's name.
    let mut plans = Vec::new();
    for run in 1..=runs {
        plans.push(coordsim_real::run::check(scenario, system, run).map_err(|e| {
            let which = if runs > 1 { format!(" in run {run}'s fault plan") } else { String::new() };
            InputError::Usage(format!("{}: {e}{which} (against a real {} cluster)", loaded.source, system.name()))
        })?);
    }
    for (_, path, purpose) in PROGRAMS.iter().take(3) {
        let needed = match system {
            System::Etcd => purpose.contains("real etcd"),
            System::Zookeeper => purpose.contains("real zookeeper"),
        };
        if needed && !Path::new(path).exists() {
            return Err(InputError::Usage(format!(
                "{path} is missing: run scripts/install-real.sh (`coordsim real doctor`)"
            )));
        }
    }
    let exe = std::env::current_exe().map_err(|error| InputError::Io { path: "current executable".into(), error })?;
    let _claim = claim_folder(&args.out.join(system.name()).join(&scenario.name))?;
    let judged = coordsim_real::judged(system);
    let not_judged: Vec<&str> = Property::ALL.iter().filter(|p| !judged.contains(p)).map(|p| p.id()).collect();
    let planned = match args.for_ {
        Some(wall) => format!("runs for {} (at most {runs})", crate::soak::fmt_wall(wall)),
        None => format!("{runs} run{}", if runs == 1 { "" } else { "s" }),
    };
    crate::outln!(
        "{} ({}) on real {}: {planned} (not judged on a real cluster: {})",
        scenario.name,
        loaded.source,
        system.name(),
        not_judged.join(", ")
    );
    // A scenario stands for an etcd release; the machine has the one it has.
    if system == System::Etcd
        && let Some(installed) = coordsim_real::cluster::etcd::installed_release()
        && let Some(note) =
            plans.iter().find_map(|faults| coordsim_real::run::release_note(scenario, faults, installed))
    {
        crate::outln!("{note}");
    }
    let soak_started = std::time::Instant::now();
    let mut tally = crate::soak::Tally::default();
    let mut unexpected = Vec::new();
    for run in 1..=runs {
        if run > 1 && args.for_.is_some_and(|wall| soak_started.elapsed() >= wall) {
            break;
        }
        let dir = args.out.join(system.name()).join(&scenario.name).join(format!("run-{run}"));
        fresh_dir(&dir)?;
        let started = std::time::Instant::now();
        let real = match one_real_run(scenario, system, run, &dir, &exe) {
            Ok(real) => real,
            Err(code) => return Ok(code),
        };
        let history = real.history;
        let mut summary = crate::sweep::evaluate_judged(scenario, &loaded.arg, &history, &judged);
        // A real run is not reproducible by seed: the command runs the scenario again (the
        // [chaos] draw of run N is the same).
        summary.replay =
            format!("cargo coordsim-real real {} {} --out {}", system.name(), loaded.arg, args.out.display());
        if !args.keep_data {
            remove_data(&dir)?;
        }
        crate::owned::write(&dir.join("history.json"), history.to_json())?;
        crate::owned::write(&dir.join("summary.json"), summary.to_json())?;
        let on = format!("real {}", system.name());
        let report = crate::report_cmd::write_report(&dir, &history, Some(&summary), Some(scenario), Some(&on))?;
        let verdicts: Vec<String> = summary
            .outcomes
            .iter()
            .map(|o| format!("{}={}{}", o.report.property, o.report.verdict, if o.as_expected { "" } else { "!" }))
            .collect();
        let status = if summary.as_expected { "ok      " } else { "MISMATCH" };
        crate::outln!(
            "  run {run:>3}  {status}  {}  ({:.1} s; cluster ready in {:.1} s{})",
            verdicts.join(" "),
            started.elapsed().as_secs_f64(),
            real.cluster_ready.as_secs_f64(),
            if real.namespaces { ", nodes in network namespaces" } else { "" }
        );
        for outcome in summary.outcomes.iter().filter(|o| o.report.verdict == coordsim_checker::verdict::Verdict::Fail)
        {
            if let Some(finding) = outcome.report.findings.first() {
                crate::outln!("           {}: {}", outcome.report.property, finding.message);
            }
        }
        crate::outln!("           report: {}", report.display());
        tally.add(&summary);
        if !summary.as_expected {
            unexpected.push(summary.replay.clone());
        }
    }
    let done = tally.runs();
    if done > 1 {
        crate::outln!("{}", tally.table(soak_started.elapsed()));
    }
    if unexpected.is_empty() {
        crate::outln!("all {done} runs as expected");
        Ok(ExitCode::SUCCESS)
    } else {
        crate::outln!(
            "{} of {done} runs NOT as expected (the scenario's verdicts are the simulator's); run again with:",
            unexpected.len(),
        );
        unexpected.dedup();
        for command in &unexpected {
            crate::outln!("  {command}");
        }
        Ok(ExitCode::from(1))
    }
}

/// One real run in `dir`, or, printed, why it ended the command and the exit code: a signal's
/// (128 + the signal, the shell's convention), or 1 when the cluster or a process failed (not
/// bad input), with the folder to look in.
#[cfg(feature = "real")]
fn one_real_run(
    scenario: &coordsim_sim::scenario::Scenario,
    system: coordsim_real::System,
    run: u64,
    dir: &Path,
    exe: &Path,
) -> Result<coordsim_real::run::RealRun, ExitCode> {
    coordsim_real::run_blocking(scenario, system, run, dir, exe).map_err(|error| match &error {
        coordsim_real::RunError::Interrupted(_, signal) => {
            eprintln!("error: {error}");
            ExitCode::from(128 + *signal as u8)
        }
        coordsim_real::RunError::Failed(reason) => {
            eprintln!("error: {} run {run} failed: {reason} (its files: {})", scenario.name, dir.display());
            ExitCode::from(1)
        }
    })
}

/// Claims a scenario's folder of real runs for this command (an exclusive `flock` on the folder,
/// released however the command ends), so that two runs at once never write the same run-N.
#[cfg(feature = "real")]
fn claim_folder(dir: &Path) -> Result<std::fs::File, InputError> {
    let io = |error| InputError::Io { path: dir.display().to_string(), error };
    std::fs::create_dir_all(dir).map_err(io)?;
    let folder = std::fs::File::open(dir).map_err(io)?;
    match folder.try_lock() {
        Ok(()) => Ok(folder),
        Err(std::fs::TryLockError::WouldBlock) => Err(InputError::Usage(format!(
            "{} is in use by another coordsim real run: give this one another --out",
            dir.display()
        ))),
        Err(std::fs::TryLockError::Error(error)) => Err(io(error)),
    }
}

/// Removes the servers' data directories of a finished run (`cluster/s*.etcd`, `cluster/s*.data`),
/// keeping their logs and configurations.
#[cfg(feature = "real")]
fn remove_data(run: &Path) -> Result<(), InputError> {
    let cluster = run.join("cluster");
    let Ok(entries) = std::fs::read_dir(&cluster) else { return Ok(()) };
    for entry in entries.flatten() {
        let path = entry.path();
        let data = path.extension().is_some_and(|e| e == "etcd" || e == "data");
        if data && path.is_dir() {
            std::fs::remove_dir_all(&path)
                .map_err(|error| InputError::Io { path: path.display().to_string(), error })?;
        }
    }
    Ok(())
}

/// Empties a run folder left by an earlier real run (its cluster data must not be reused); any
/// other non-empty folder is the user's and is refused.
#[cfg(feature = "real")]
fn fresh_dir(dir: &Path) -> Result<(), InputError> {
    let io = |error| InputError::Io { path: dir.display().to_string(), error };
    // What a real run creates in its folder, through its own and its cluster's processes: listed
    // in the folder's manifest, so that the next run removes those and nothing of the user's.
    const RUN_ENTRIES: &[&str] =
        &["cluster", "clients", "clocks", "links", "nemesis.jsonl", "resource.json", "resource.jsonl", "resource.log"];
    if crate::owned::clear(dir)? {
        return crate::owned::claim(dir, RUN_ENTRIES);
    }
    // A folder from before manifests: recognised by its files, removed whole.
    if dir.exists() {
        let ours = dir.join("nemesis.jsonl").exists() || dir.join("cluster").exists();
        let empty = std::fs::read_dir(dir).map_err(io)?.next().is_none();
        if !ours && !empty {
            return Err(InputError::Usage(format!(
                "{} exists and is not a coordsim real run's folder: choose another --out",
                dir.display()
            )));
        }
        std::fs::remove_dir_all(dir).map_err(io)?;
    }
    std::fs::create_dir_all(dir).map_err(io)?;
    crate::owned::claim(dir, RUN_ENTRIES)
}

/// The simulator's figures for `scenario` on `model`, one per seed 1..=seeds.
#[cfg(feature = "real")]
fn simulated_figures(
    scenario: &coordsim_sim::scenario::Scenario,
    model: &coordsim_sim::timing::TimeModel,
    seeds: u64,
) -> Result<Vec<crate::calibrate::Figures>, String> {
    let mut scenario = scenario.clone();
    scenario.timing = Some(coordsim_sim::scenario::TimingSpec {
        profile: None,
        network_preset: None,
        network: Some(model.network.clone()),
        server: Some(model.server.clone()),
        resource: Some(model.resource.clone()),
    });
    let mut figures = Vec::new();
    for seed in 1..=seeds {
        match crate::sweep::run_seed(&scenario, &scenario.name, seed) {
            crate::sweep::SeedResult::Done { summary, .. } => {
                figures.push(crate::calibrate::Figures::of(summary.metrics.as_ref().expect("runs measure")));
            }
            crate::sweep::SeedResult::Crashed { message, .. } | crate::sweep::SeedResult::Stopped { message, .. } => {
                return Err(format!("{} seed {seed}: {message}", scenario.name));
            }
        }
    }
    Ok(figures)
}

/// Today's date (UTC) by the system's `date`, for a calibrated profile's heading.
#[cfg(feature = "real")]
fn today() -> String {
    let output = std::process::Command::new("date").args(["-u", "+%Y-%m-%d"]).output();
    output.ok().and_then(|o| String::from_utf8(o.stdout).ok()).map_or("an unknown date".into(), |d| d.trim().into())
}

/// The real runs of one calibration scenario: each run's figures, and the servers' counters.
#[cfg(feature = "real")]
struct RealRuns {
    figures: Vec<crate::calibrate::Figures>,
    writes: Vec<coordsim_checker::metrics::Spread>,
    counters: String,
}

#[cfg(feature = "real")]
fn real_runs(
    args: &CalibrateArgs,
    scenario: &coordsim_sim::scenario::Scenario,
    system: coordsim_real::System,
    exe: &Path,
) -> Result<Result<RealRuns, ExitCode>, InputError> {
    let name = &scenario.name;
    eprintln!("{name}: {} real {} run(s)", args.runs, system.name());
    let mut runs = RealRuns { figures: Vec::new(), writes: Vec::new(), counters: String::new() };
    let _claim = claim_folder(&args.out.join(system.name()).join(name))?;
    for run in 1..=args.runs {
        let dir = args.out.join(system.name()).join(name).join(format!("run-{run}"));
        fresh_dir(&dir)?;
        let result = match one_real_run(scenario, system, run, &dir, exe) {
            Ok(result) => result,
            Err(code) => return Ok(Err(code)),
        };
        remove_data(&dir)?;
        crate::owned::write(&dir.join("history.json"), result.history.to_json())?;
        let metrics = coordsim_checker::metrics::of(&result.history);
        runs.writes.extend(metrics.requests.get("write").map(|w| w.ok.clone()));
        runs.figures.push(crate::calibrate::Figures::of(&metrics));
        let file = dir.join("cluster").join(coordsim_real::run::SERVER_METRICS);
        runs.counters.push_str(&std::fs::read_to_string(&file).unwrap_or_default());
    }
    Ok(Ok(runs))
}

/// The median over seeds of one figure of the simulator's runs of `scenario` on `model`.
#[cfg(feature = "real")]
fn simulated_median(
    scenario: &coordsim_sim::scenario::Scenario,
    model: &coordsim_sim::timing::TimeModel,
    seeds: u64,
    figure: fn(&crate::calibrate::Figures) -> Option<u64>,
) -> Result<u64, String> {
    let figures = simulated_figures(scenario, model, seeds)?;
    let values: Vec<u64> = figures.iter().filter_map(figure).collect();
    coordsim_checker::metrics::median(values)
        .ok_or_else(|| format!("{}: no such figure in the simulator's runs", scenario.name))
}

#[cfg(feature = "real")]
const NS_PER_S: u64 = 1_000_000_000;

/// The writers' time per acknowledged put, in ns: rises with the write path's cost.
#[cfg(feature = "real")]
fn ns_per_put(figures: &crate::calibrate::Figures) -> Option<u64> {
    figures.puts_per_s.map(|per_s| NS_PER_S / per_s.max(1))
}

#[cfg(feature = "real")]
fn calibrate(args: &CalibrateArgs) -> Result<ExitCode, InputError> {
    use crate::calibrate::{self, Figures};
    use coordsim_real::System;

    if args.seeds == 0 || args.seeds > 100 || args.runs == 0 || args.runs > 20 {
        return Err(InputError::Usage(format!("--seeds {} must be 1..100 and --runs {} 1..20", args.seeds, args.runs)));
    }
    let exe = std::env::current_exe().map_err(|error| InputError::Io { path: "current executable".into(), error })?;
    // (system, queue-lock scenario, herd scenario, profile)
    let services = [
        (System::Etcd, "hundred-requests-etcd-mutex", "hundred-requests-etcd-cas", "etcd-3.4-loopback"),
        (
            System::Zookeeper,
            "hundred-requests-zk-queue-lock",
            "hundred-requests-zk-herd-lock",
            "zookeeper-3.8-loopback",
        ),
    ];
    let wanted = |system: System| match args.service {
        None => true,
        Some(SystemArg::Etcd) => system == System::Etcd,
        Some(SystemArg::Zookeeper) => system == System::Zookeeper,
    };
    let mut tables = Vec::new();
    for (system, queue_name, herd_name, profile) in services.into_iter().filter(|s| wanted(s.0)) {
        let queue = load::resolve(queue_name)?.scenario;
        let herd = load::resolve(herd_name)?.scenario;
        let queue_real = match real_runs(args, &queue, system, &exe)? {
            Ok(runs) => runs,
            Err(code) => return Ok(code),
        };
        let herd_real = match real_runs(args, &herd, system, &exe)? {
            Ok(runs) => runs,
            Err(code) => return Ok(code),
        };
        // The check the fit never sees: one client taking and releasing the queue lock on its
        // own, so `lock` is the uncontended acquire latency ("a lock acquired in ~3 ms, released
        // in ~1 ms on a LAN").
        let alone = calibrate::uncontended(&queue);
        let alone_real = match real_runs(args, &alone, system, &exe)? {
            Ok(runs) => runs,
            Err(code) => return Ok(code),
        };
        // And write throughput: writers that put as fast as they are answered.
        let write_load = calibrate::write_load(system == System::Zookeeper);
        let writes_real = match real_runs(args, &write_load, system, &exe)? {
            Ok(runs) => runs,
            Err(code) => return Ok(code),
        };
        let fail = |why: String| InputError::Usage(format!("calibrating {profile}: {why}"));
        let real_median = |runs: &RealRuns, figure: fn(&Figures) -> Option<u64>| {
            coordsim_checker::metrics::median(runs.figures.iter().filter_map(figure).collect())
        };
        let base = coordsim_sim::timing::profile(profile).expect("a built-in profile");
        let mut model = base.clone();
        // Step 1, links: the shape of the run whose writes were the median's, then its scale.
        let mut writes = queue_real.writes.clone();
        writes.sort_by_key(|w| w.p50_us);
        let write = writes.get(writes.len().saturating_sub(1) / 2).ok_or_else(|| fail("no resource write".into()))?;
        model.network.latency = calibrate::link_dist(write, model.resource.write.median()).map_err(fail)?;
        let write_target = real_median(&queue_real, |f| f.resource_write_us).ok_or_else(|| fail("no write".into()))?;
        // Step 2, fsync: every run's counters of both scenarios.
        let counters = format!("{}{}", queue_real.counters, herd_real.counters);
        let fsync =
            calibrate::fsync_counters(&counters).ok_or_else(|| fail("the servers gave no fsync counters".into()))?;
        model.server.fsync = calibrate::fsync_dist(&fsync).map_err(fail)?;
        let unlock_target = real_median(&queue_real, |f| f.unlock_us).ok_or_else(|| fail("no unlock".into()))?;
        let drain_target = real_median(&herd_real, |f| f.drain_us).ok_or_else(|| fail("no drain".into()))?;
        let puts_target = real_median(&writes_real, |f| f.puts_per_s).ok_or_else(|| fail("no puts".into()))?;
        let mut failure: Option<String> = None;
        let mut measure = |scenario: &coordsim_sim::scenario::Scenario,
                           model: &coordsim_sim::timing::TimeModel,
                           (figure, show): (fn(&Figures) -> Option<u64>, fn(u64) -> String),
                           what: &str| {
            match simulated_median(scenario, model, args.seeds, figure) {
                Ok(value) => {
                    eprintln!("  {what}: simulated {}", show(value));
                    value as f64
                }
                Err(error) => {
                    failure.get_or_insert(error);
                    f64::INFINITY
                }
            }
        };
        let links = calibrate::bisect(0.2, 5.0, 7, write_target as f64, |k| {
            let candidate = calibrate::with_link_scale(&model, k);
            measure(&queue, &candidate, (|f| f.resource_write_us, calibrate::show_us), &format!("links x{k:.3}"))
        });
        model = calibrate::with_link_scale(&model, links);
        // Steps 3-5, each a factor, each fitted with the others held. The write path only on
        // ZooKeeper: on etcd it traded the handoff for throughput (docs/time.md).
        let fit_writes = system == System::Zookeeper;
        let scaled = |overhead: f64, cpu: f64, write_path: f64| {
            let model = calibrate::with_cpu_scale(&calibrate::with_overhead_scale(&model, overhead), cpu);
            calibrate::with_write_scale(&model, write_path)
        };
        let (mut overhead, mut cpu, mut write_path) = (1.0, 1.0, 1.0);
        let us = calibrate::show_us as fn(u64) -> String;
        for _ in 0..2 {
            overhead = calibrate::bisect(0.01, 100.0, 9, unlock_target as f64, |k| {
                let candidate = scaled(k, cpu, write_path);
                measure(&queue, &candidate, (|f| f.unlock_us, us), &format!("overhead x{k:.3}, unlock"))
            });
            cpu = calibrate::bisect(0.05, 20.0, 7, drain_target as f64, |k| {
                let candidate = scaled(overhead, k, write_path);
                measure(&herd, &candidate, (|f| f.drain_us, us), &format!("CPU x{k:.3}, herd drain"))
            });
            if fit_writes {
                // The writers' time per put rises with the write path's cost.
                let target = (NS_PER_S / puts_target.max(1)) as f64;
                write_path = calibrate::bisect(0.05, 20.0, 7, target, |k| {
                    let candidate = scaled(overhead, cpu, k);
                    let per_s = |ns: u64| format!("{}/s", NS_PER_S / ns.max(1));
                    measure(&write_load, &candidate, (ns_per_put, per_s), &format!("write path x{k:.3}, writers"))
                });
            }
        }
        if let Some(error) = failure {
            eprintln!("error: {error}");
            return Ok(ExitCode::from(1));
        }
        let mut fitted = scaled(overhead, cpu, write_path);
        fitted.source = format!(
            "Written by `coordsim real calibrate --runs {runs}` on this machine: {runs} real run(s) each of \
             {queue_name} and {herd_name} on {system}. Links: half the resource write's round trip, scaled x{links:.3} \
             to its real median ({write}). fsync: the servers' own counters ({fsync}). Request overhead: \
             calibrate::overhead_shape x{overhead:.3}, so that {queue_name}'s median unlock is the real {unlock}. \
             CPU costs: the built-in shapes x{cpu:.3}, so that {herd_name}'s drain is the real {drain}{write_fit}. \
             Simulator seeds 1..{seeds}.",
            write_fit = match fit_writes {
                true => format!(
                    "; the write path's (write request, apply) x{write_path:.3} more, so that {} writers put {puts_target}/s \
                     as on the real cluster",
                    calibrate::WRITERS
                ),
                false => String::new(),
            },
            runs = args.runs,
            system = system.name(),
            write = calibrate::show_us(write_target),
            fsync = match &fsync {
                calibrate::FsyncCounters::Histogram(_) => "etcd_disk_wal_fsync_duration_seconds".to_string(),
                calibrate::FsyncCounters::MeanMax { count, sum_ms, max_ms } => {
                    format!("mntr: {count} syncs, mean {:.2} ms, max {max_ms} ms", *sum_ms as f64 / *count as f64)
                }
            },
            unlock = calibrate::show_us(unlock_target),
            drain = calibrate::show_us(drain_target),
            seeds = args.seeds,
        );
        if let Some(folder) = &args.write_profiles {
            let text = calibrate::profile_file(&fitted, &today()).map_err(fail)?;
            let path = folder.join(format!("{profile}.toml"));
            std::fs::create_dir_all(folder)
                .map_err(|error| InputError::Io { path: folder.display().to_string(), error })?;
            std::fs::write(&path, text).map_err(|error| InputError::Io { path: path.display().to_string(), error })?;
            eprintln!("  wrote {}", path.display());
        }
        for (scenario, real) in
            [(&queue, &queue_real), (&herd, &herd_real), (&alone, &alone_real), (&write_load, &writes_real)]
        {
            let fitted_figures = simulated_figures(scenario, &fitted, args.seeds).map_err(fail)?;
            let built_in = simulated_figures(scenario, &base, args.seeds).map_err(fail)?;
            let note = if scenario.name == alone.name {
                "One client alone: `lock` is the uncontended acquire, `unlock` the release with nobody waiting.\n\n"
                    .to_string()
            } else if scenario.name == write_load.name {
                format!(
                    "{} writers put to 100 keys for 10 s, each as soon as its last put is answered (0.5-1.5 ms \
                     later): write throughput, where the writers share the machine with the servers.\n\n",
                    calibrate::WRITERS
                )
            } else {
                String::new()
            };
            let mut table = format!(
                "### {} on {} ({profile})\n\n{note}| median unless said | real ({} runs) | simulator, fitted (seeds 1..{}) | \
                 simulator, built-in profile |\n|---|---|---|---|\n",
                scenario.name,
                system.name(),
                args.runs,
                args.seeds
            );
            for (row, _, unit) in Figures::default().rows() {
                let values = |figures: &[Figures]| -> Vec<u64> {
                    figures
                        .iter()
                        .filter_map(|f| f.rows().into_iter().find(|(r, _, _)| *r == row).and_then(|(_, v, _)| v))
                        .collect()
                };
                let cells = [values(&real.figures), values(&fitted_figures), values(&built_in)];
                // A row none of the runs has (a lock figure of the write load) is left out.
                if cells.iter().all(Vec::is_empty) {
                    continue;
                }
                let [real, fitted, built_in] = cells.map(|values| calibrate::range(&values, unit));
                table.push_str(&format!("| {row} | {real} | {fitted} | {built_in} |\n"));
            }
            tables.push(table);
        }
    }
    for table in tables {
        crate::outln!("{table}");
    }
    Ok(ExitCode::SUCCESS)
}
