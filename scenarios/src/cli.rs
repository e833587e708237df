//! The `coordsim` command line.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use clap::{Parser, Subcommand};
use coordsim_checker::properties::Property;
use coordsim_checker::verdict::Verdict;
use coordsim_reports::RunSummary;

use crate::check;
use crate::library;
use crate::load::{self, InputError, Loaded};
use crate::report_cmd;
use crate::sweep::{self, SeedResult};
use coordsim_reports::detection::{SeedRange, Shards};

/// Largest number of seeds one `run` accepts.
const SEEDS_MAX: u64 = 1_000_000;

#[derive(Parser, Debug)]
#[command(
    name = "coordsim",
    version,
    about = "Deterministic simulation and correctness testbed for distributed coordination"
)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// List the scenario library: name, one line, expected verdicts.
    List {
        /// Print docs/scenarios.md instead: the library and the models as Markdown tables.
        #[arg(long)]
        markdown: bool,
    },
    /// Explain a scenario: its teaching text, set-up, faults, and the verdict it expects of each
    /// property (and which properties its workload exercises).
    Explain {
        /// A library name or a path to a scenario file.
        #[arg(required_unless_present = "faults")]
        scenario: Option<String>,
        /// Print the fault kinds a scenario's `[[nemesis]]` may use, their fields and effects
        /// (the table of docs/scenario-files.md), as Markdown.
        #[arg(long, conflicts_with = "scenario")]
        faults: bool,
    },
    /// Run scenarios under the simulator, check every seed, compare with the expected verdicts.
    Run {
        /// Library names or paths to scenario files; `all` runs the whole library.
        #[arg(required = true)]
        scenarios: Vec<String>,
        /// Run this one seed.
        #[arg(long, conflicts_with = "seeds", value_parser = parse_seed, allow_hyphen_values = true)]
        seed: Option<u64>,
        /// Run seeds A..B (inclusive), e.g. `1..50`.
        #[arg(long, value_parser = parse_seed_range)]
        seeds: Option<(u64, u64)>,
        /// Output folder; each run writes <out>/<scenario>/seed-<N>/{history.json,summary.json}.
        #[arg(long, default_value = "target/coordsim")]
        out: PathBuf,
        /// Seeds run in parallel (default: the number of cores).
        #[arg(long)]
        jobs: Option<usize>,
        /// Reports to write, comma-separated: html (report.html for seeds that failed a property
        /// or were not as expected, and for single-seed runs), html-all, junit (<out>/junit.xml),
        /// md (<out>/summary.md), none. <out>/sweep.json is always written.
        #[arg(long, default_value = "html", value_parser = report_cmd::parse_formats)]
        report: report_cmd::Formats,
        /// Print each seed's fault plan (fixed and drawn from [chaos]) as `[[nemesis]]` TOML to
        /// paste into a scenario file, and run nothing.
        #[arg(long)]
        show_plan: bool,
        /// Turn bug switches on (comma-separated names from `[bugs]`, or `all`) in every
        /// scenario, whatever its `[bugs]` says: how a `coordsim sweep` detection is replayed.
        #[arg(long)]
        bugs: Option<String>,
        /// Run only shard K of N of the seeds (the seeds at positions K-1, K-1+N, ... of the
        /// list); `coordsim merge` combines the shards' sweep.json files.
        #[arg(long, value_parser = parse_shard)]
        shard: Option<Shards>,
        /// Run every scenario on this time profile, whatever its `[timing]` says
        /// (docs/time.md): a profile's name, `auto` (each scenario on its service's calibrated
        /// profile: etcd-3.4-loopback, or zookeeper-3.8-loopback for ZooKeeper clients), or
        /// `none` (1-10 ms messages, servers that cost nothing).
        #[arg(long)]
        profile: Option<String>,
        /// Run every scenario on this network in place of its profile's (measured on
        /// loopback): `lan`, `cross-zone` or `wan` (docs/time.md says where each one's
        /// latency and capacity come from). Needs a time model (not `--profile none`).
        #[arg(long)]
        network: Option<String>,
    },
    /// Measure detection: for each bug switch, run its swarm scenario (swarm-<switch>) over the
    /// seeds with the switch on (detection rate, seeds to detection, properties that caught it)
    /// and off (must be clean). Writes <out>/detection.json. Exit 1 if a switch-off run failed.
    Sweep {
        /// `all` or comma-separated switch names (the fields of `[bugs]`).
        #[arg(long, default_value = "all")]
        bugs: String,
        /// Seeds A..B (inclusive).
        #[arg(long, value_parser = parse_seed_range)]
        seeds: (u64, u64),
        /// Run only shard K of N of the seeds; `coordsim merge` combines the shards.
        #[arg(long, value_parser = parse_shard)]
        shard: Option<Shards>,
        /// Seeds run in parallel (default: the number of cores).
        #[arg(long)]
        jobs: Option<usize>,
        #[arg(long, default_value = "target/coordsim/bug-sweep")]
        out: PathBuf,
    },
    /// Shrink a failing seed to a minimal reproduction: its drawn fault plan becomes a fixed
    /// timeline, then faults, their lengths, clients, writes and the run's length are cut while
    /// the same property still fails. Writes <out>/minimal.toml and its report.
    Shrink {
        /// A library name or a path to a scenario file.
        scenario: String,
        #[arg(long, value_parser = parse_seed, allow_hyphen_values = true)]
        seed: u64,
        /// The property that must keep failing (default: the first that fails).
        #[arg(long)]
        property: Option<String>,
        /// Output folder (default: target/coordsim/shrink/<scenario>-seed-<N>).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Combine the detection.json files of shards of one `coordsim sweep`, or the sweep.json
    /// files of shards of one `coordsim run`, into one file.
    Merge {
        #[arg(required = true)]
        inputs: Vec<PathBuf>,
        #[arg(short = 'o', long = "out", required = true)]
        out: PathBuf,
    },
    /// Render reports again from a run folder (report.html) or a sweep folder (junit.xml,
    /// summary.md, and report.html for each run not as expected).
    Report {
        #[arg(required = true)]
        paths: Vec<PathBuf>,
    },
    /// Check recorded histories: coordsim history.json files (safety properties), Jepsen etcd
    /// logs and Jepsen EDN histories (linearizability). Several files or folders: one line per
    /// file and a total. Exit 0 valid, 1 violated, 3 unknown, 2 bad input.
    Check {
        /// History files, or folders to search for .json, .log, .edn and .txt files.
        #[arg(required = true)]
        histories: Vec<PathBuf>,
        #[arg(long, value_enum, default_value = "auto")]
        format: check::Format,
        /// Model for Jepsen histories (default: from the records' :f).
        #[arg(long, value_enum, default_value = "auto")]
        model: check::ModelName,
        /// Initial value of the register (`--initial 0`) or of the multi-register's keys
        /// (`--initial x=0,y=0`); nil, never written, by default.
        #[arg(long)]
        initial: Option<String>,
        /// Time limit of each file's linearizability search, e.g. 10s, 2m; past it the verdict is
        /// unknown.
        #[arg(long, default_value = "10s", value_parser = parse_duration)]
        timeout: std::time::Duration,
        /// Memory limit of each file's linearizability search, e.g. 512MiB, 4GiB (the search's
        /// tables, counted before they grow); past it the verdict is unknown.
        #[arg(long, default_value = "1GiB", value_parser = parse_bytes)]
        memory_limit: usize,
        /// The largest input file read, e.g. 4GiB: a larger one is refused before it is read (as
        /// are FIFOs and devices, which may never end). A valid history peaks at about 5x its
        /// size in memory while it is checked.
        #[arg(long, default_value = "1GiB", value_parser = parse_bytes)]
        max_input: usize,
    },
    /// How long things took in recorded runs, side by side (one column per history, simulated
    /// or real): request latency by kind, throughput, lock handoff and drain, recovery after a
    /// fault. The same figures are in each run's summary.json under `metrics`.
    Metrics {
        /// History files, or folders to search for history.json files.
        #[arg(required = true)]
        histories: Vec<PathBuf>,
        /// One JSON object per history instead of the table.
        #[arg(long)]
        json: bool,
    },
    /// Run one lock workload on several recipes (and so on etcd and on ZooKeeper), each on its
    /// service's calibrated time profile, and print side by side, as Markdown: handoff, drain,
    /// lock p99, keepalive p99, wakeups per release, grants and recovery after faults (medians
    /// over the seeds). docs/time.md.
    Compare {
        /// A library name or a scenario file with a [lock] workload.
        scenario: String,
        /// Recipes, comma-separated (default: etcd-mutex, etcd-lock-api, etcd-cas,
        /// etcd-semaphore, zk-queue-lock, zk-herd-lock; etcd-election and zk-election when named).
        #[arg(long, value_delimiter = ',')]
        recipes: Vec<String>,
        /// Seeds A..B (inclusive).
        #[arg(long, value_parser = parse_seed_range, default_value = "1..5")]
        seeds: (u64, u64),
        /// auto (each recipe on its service's calibrated profile), none, or a profile's name.
        #[arg(long, default_value = "auto")]
        profile: String,
        /// A network preset in place of the profiles' own: lan, cross-zone or wan.
        #[arg(long)]
        network: Option<String>,
        /// Seeds run in parallel (default: the number of cores).
        #[arg(long)]
        jobs: Option<usize>,
    },
    /// Measure simulation speed on one core: seeds per second and simulated seconds per wall
    /// second. `coordsim bench check` measures the linearizability checker instead: time and
    /// peak memory per history file (default: the corpora in checker/tests/data) and per
    /// generated register history of the scaling grid.
    Bench {
        /// A scenario, or `check`.
        #[arg(default_value = "split-brain-gc-pause")]
        scenario: String,
        /// Seeds A..B (inclusive), run one after the other.
        #[arg(long, default_value = "1..20", value_parser = parse_seed_range)]
        seeds: (u64, u64),
        /// `bench check`: these history files or folders only (no generated grid).
        #[arg(long, num_args = 1..)]
        histories: Vec<PathBuf>,
        /// `bench check`: write the generated grid's histories (Jepsen etcd logs) into this folder
        /// for other checkers, and measure nothing.
        #[arg(long)]
        write_grid: Option<PathBuf>,
    },
    /// Feed mutated inputs (scenario files, histories, Jepsen logs, EDN, command lines) to the
    /// code that reads them and count the outcomes: accepted, refused, panicked. Exit 1 if
    /// anything panicked (the first panic of each kind and its input are printed).
    Fuzz {
        /// Inputs to try, spread evenly over the five kinds.
        #[arg(long, default_value_t = 10_000)]
        inputs: u64,
        /// Seed of the mutations: the same seed tries the same inputs.
        #[arg(long, default_value_t = 1, value_parser = parse_seed, allow_hyphen_values = true)]
        seed: u64,
    },
    /// Run a scenario against a real etcd cluster or ZooKeeper ensemble on this machine (needs
    /// the `real` feature: `cargo coordsim-real real ...`); `coordsim real doctor` says what is
    /// missing.
    Real(crate::real_cmd::RealArgs),
    /// One client process of a real run (started by `coordsim real`).
    #[command(hide = true)]
    RealClient(crate::real_cmd::ClientArgs),
    /// The protected resource of a real run (started by `coordsim real`).
    #[command(hide = true)]
    RealResource(crate::real_cmd::ClientArgs),
    /// The link proxy of one node of a real run with delays (started by `coordsim real`).
    #[command(hide = true)]
    RealLink(crate::real_cmd::LinkArgs),
    /// Model-check a protocol with stateright: `coordsim model list`, `coordsim model <name>`.
    /// Exit 0 when every property gives its expected result, 1 otherwise, 2 on bad input.
    Model(crate::model_cmd::ModelArgs),
}

/// A seed: a whole number from 0 to 2^64 - 1 (`--seed -1` says so instead of clap's "unexpected
/// argument").
fn parse_seed(text: &str) -> Result<u64, String> {
    text.trim().parse().map_err(|_| format!("{:?} is not a seed: seeds are whole numbers from 0 to {}", text, u64::MAX))
}

fn parse_seed_range(text: &str) -> Result<(u64, u64), String> {
    let (a, b) = text.split_once("..").ok_or_else(|| format!("{text:?} is not a range like 1..50"))?;
    let b = b.strip_prefix('=').unwrap_or(b);
    let a = parse_seed(a)?;
    let b = parse_seed(b)?;
    if a > b {
        return Err(format!("empty range {text:?}: the first seed is after the last"));
    }
    if b - a >= SEEDS_MAX {
        // b - a + 1 overflows for 0..u64::MAX: say it in words.
        let count = (b - a).checked_add(1).map_or_else(|| "2^64".to_string(), |n| n.to_string());
        return Err(format!("{count} seeds is more than the limit of {SEEDS_MAX}"));
    }
    Ok((a, b))
}

fn parse_shard(text: &str) -> Result<Shards, String> {
    Shards::parse(text)
}

/// `512MiB`, `4GiB`, `2G`, `100MB`, `65536`: a size in bytes (K, M, G with or without `iB`/`B`
/// are powers of 1024).
fn parse_bytes(text: &str) -> Result<usize, String> {
    let trimmed = text.trim();
    let digits = trimmed.find(|c: char| !c.is_ascii_digit()).unwrap_or(trimmed.len());
    let (number, unit) = trimmed.split_at(digits);
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        _ => return Err(format!("{trimmed:?} is not a size like 512MiB or 4GiB")),
    };
    let number: usize = number.parse().map_err(|_| format!("{trimmed:?} is not a size like 512MiB or 4GiB"))?;
    number
        .checked_mul(1usize << shift)
        .filter(|&bytes| bytes > 0)
        .ok_or_else(|| format!("{trimmed:?} is not a size between 1 byte and 16 EiB"))
}

/// A wall-clock duration on the command line (`--for 30m`): the scenario files' syntax.
pub(crate) fn parse_wall_duration(text: &str) -> Result<std::time::Duration, String> {
    parse_duration(text)
}

fn parse_duration(text: &str) -> Result<std::time::Duration, String> {
    coordsim_sim::scenario::Dur::parse(text).map(|d| d.0)
}

/// Runs the parsed command line; the exit code follows ARCHITECTURE.md: 0 = every verdict as
/// expected, 1 = some not, 2 = bad input.
/// The `coordsim` command, with `checkers` judged on every run next to the built-in properties:
/// a crate makes its own CLI with its properties by calling this from its `main`
/// (`coordsim::cli::run_main(vec![Arc::new(MyChecker)])`).
pub fn run_main(checkers: Vec<std::sync::Arc<dyn crate::testbed::Checker>>) -> ExitCode {
    crate::output::init();
    if let Err(error) = crate::testbed::register_for_cli(checkers) {
        eprintln!("coordsim: {error}");
        return ExitCode::from(2);
    }
    match Cli::try_parse() {
        Ok(cli) => main(cli),
        // Help and version go to stdout as clap prints them; a usage error is one line (clap
        // adds a hint and a usage block) and exit code 2.
        Err(error) if error.use_stderr() => {
            let text = error.to_string();
            eprintln!("{}", text.lines().next().unwrap_or("error: bad command line"));
            ExitCode::from(2)
        }
        Err(error) => error.exit(),
    }
}

pub fn main(cli: Cli) -> ExitCode {
    let result = match cli.command {
        Command::List { markdown: false } => Ok(crate::explain::list()),
        Command::List { markdown: true } => {
            crate::outln!("{}", crate::explain::catalogue_markdown().trim_end());
            Ok(ExitCode::SUCCESS)
        }
        Command::Explain { faults: true, .. } => {
            crate::outln!("{}", coordsim_sim::nemesis::plan::fault_reference().trim_end());
            Ok(ExitCode::SUCCESS)
        }
        Command::Explain { scenario, .. } => crate::explain::explain(scenario.as_deref().unwrap_or_default()),
        Command::Run { scenarios, seed, seeds, out, jobs, report, show_plan, bugs, shard, profile, network } => {
            let selection = SeedSelection::new(seed, seeds, shard);
            if show_plan {
                show_plans(&scenarios, &selection.seeds)
            } else {
                let options =
                    RunOptions { bugs: bugs.as_deref(), profile: profile.as_deref(), network: network.as_deref() };
                run(&scenarios, &selection, &out, jobs, report, options)
            }
        }
        Command::Sweep { bugs, seeds: (first, last), shard, jobs, out } => {
            let request = crate::bug_sweep::Request { bugs, seeds: SeedRange { first, last }, shard, jobs, out };
            crate::bug_sweep::run(&request)
        }
        Command::Merge { inputs, out } => crate::bug_sweep::merge(&inputs, &out),
        Command::Shrink { scenario, seed, property, out } => {
            crate::shrink::run(&crate::shrink::Request { scenario, seed, property, out })
        }
        Command::Report { paths } => report_cmd::report(&paths),
        Command::Metrics { histories, json } => crate::metrics_cmd::run(&histories, json),
        Command::Compare { scenario, recipes, seeds, profile, network, jobs } => {
            let jobs = jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
            if jobs == 0 || seeds.1 - seeds.0 >= 1000 {
                Err(InputError::Usage("--jobs must be at least 1 and --seeds at most 1000 seeds".into()))
            } else {
                crate::compare::run(&crate::compare::Request { scenario, recipes, seeds, profile, network, jobs })
            }
        }
        Command::Check { histories, format, model, initial, timeout, memory_limit, max_input } => {
            check::run(&check::Request {
                paths: histories,
                format,
                model,
                initial,
                timeout,
                memory_limit_bytes: memory_limit,
                max_input_bytes: max_input as u64,
            })
        }
        Command::Bench { scenario, histories, write_grid, .. } if scenario == "check" => {
            let request = check::Request {
                paths: Vec::new(),
                format: check::Format::Auto,
                model: check::ModelName::Auto,
                initial: None,
                timeout: std::time::Duration::from_secs(60),
                memory_limit_bytes: 4 << 30,
                max_input_bytes: crate::input::DEFAULT_LIMIT,
            };
            crate::bench_check::run(&histories, write_grid.as_deref(), &request)
        }
        Command::Bench { scenario, seeds: (first, last), .. } => bench(&scenario, first, last),
        Command::Model(args) => crate::model_cmd::run(args),
        Command::Fuzz { inputs, seed } => {
            let report = crate::fuzz::run(inputs, seed);
            for line in report.lines() {
                crate::outln!("{line}");
            }
            Ok(if report.panics() == 0 { ExitCode::SUCCESS } else { ExitCode::from(1) })
        }
        Command::Real(args) => crate::real_cmd::run(args),
        Command::RealClient(args) => crate::real_cmd::client(args),
        Command::RealResource(args) => crate::real_cmd::resource(args),
        Command::RealLink(args) => crate::real_cmd::link(args),
    };
    match result {
        Ok(code) => code,
        Err(error) => {
            eprintln!("error: {}", crate::output::one_line(&error.to_string()));
            ExitCode::from(2)
        }
    }
}

fn resolve_all(args: &[String]) -> Result<Vec<Loaded>, InputError> {
    let mut loaded = Vec::new();
    for arg in args {
        if arg == "all" {
            for (name, _) in library::all() {
                loaded.push(load::resolve(name)?);
            }
        } else {
            loaded.push(load::resolve(arg)?);
        }
    }
    // Output folders are named after scenarios: two of one name would overwrite each other.
    for (i, a) in loaded.iter().enumerate() {
        if let Some(b) = loaded[..i].iter().find(|b| b.scenario.name == a.scenario.name) {
            return Err(InputError::Usage(format!(
                "{} and {} are both named {:?}: their outputs would overwrite each other; rename one",
                b.source, a.source, a.scenario.name
            )));
        }
    }
    Ok(loaded)
}

/// The seeds a `run` covers: `--seed`, `--seeds` (default seed 1), perhaps one `--shard` of them.
struct SeedSelection {
    seeds: Vec<u64>,
    /// How the user gave them (the whole range, not the shard): `7` or `1..50`.
    described: String,
    shards: Option<Shards>,
}

impl SeedSelection {
    fn new(seed: Option<u64>, seeds: Option<(u64, u64)>, shards: Option<Shards>) -> SeedSelection {
        let range = match (seed, seeds) {
            (Some(seed), _) => SeedRange { first: seed, last: seed },
            (None, Some((first, last))) => SeedRange { first, last },
            (None, None) => SeedRange { first: 1, last: 1 },
        };
        let described = if seed.is_some() || seeds.is_none() { range.first.to_string() } else { range.to_string() };
        SeedSelection { seeds: coordsim_reports::detection::seeds_of(range, shards.as_ref()), described, shards }
    }
}

fn show_plans(args: &[String], seeds: &[u64]) -> Result<ExitCode, InputError> {
    for loaded in resolve_all(args)? {
        for &seed in seeds {
            let plan = coordsim_sim::nemesis::plan::plan(&loaded.scenario, seed);
            crate::outln!("# {} seed {seed}: {} faults", loaded.scenario.name, plan.len());
            crate::outln!("{}", coordsim_sim::nemesis::plan::to_toml(&plan));
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// What `coordsim run` changes in every scenario it runs.
#[derive(Clone, Copy, Debug, Default)]
struct RunOptions<'a> {
    /// `--bugs`: switches turned on.
    bugs: Option<&'a str>,
    /// `--profile`: the time profile (`auto`, `none`, or a name).
    profile: Option<&'a str>,
    /// `--network`: a network preset in place of the profile's network.
    network: Option<&'a str>,
}

/// Sets every scenario's `[timing]` as `--profile` says.
fn override_profile(loaded: &mut [Loaded], profile: &str) -> Result<(), InputError> {
    use coordsim_sim::scenario::TimingSpec;
    for scenario in loaded {
        let spec = TimingSpec::from_flag(profile, scenario.scenario.uses_zookeeper()).map_err(InputError::Usage)?;
        scenario.scenario.timing = Some(spec);
        scenario.arg = format!("{} --profile {profile}", scenario.arg);
    }
    Ok(())
}

fn run(
    args: &[String],
    selection: &SeedSelection,
    out: &Path,
    jobs: Option<usize>,
    formats: report_cmd::Formats,
    options: RunOptions,
) -> Result<ExitCode, InputError> {
    let seeds = selection.seeds.as_slice();
    if seeds.is_empty() {
        return Err(InputError::Usage(format!("--shard leaves no seed of {}: use fewer shards", selection.described)));
    }
    let mut loaded = resolve_all(args)?;
    let mut args = args.to_vec();
    if let Some(bugs) = options.bugs {
        let switches = crate::switches::parse_list(bugs)?;
        for scenario in &mut loaded {
            scenario.scenario.bugs = crate::switches::turn_on(&scenario.scenario.bugs, &switches);
            // Replay commands name the switches too.
            scenario.arg = format!("{} --bugs {}", scenario.arg, switches.join(","));
        }
        args.push(format!("--bugs {}", switches.join(",")));
    }
    if let Some(profile) = options.profile {
        override_profile(&mut loaded, profile)?;
        args.push(format!("--profile {profile}"));
    }
    if let Some(network) = options.network {
        use coordsim_sim::scenario::TimingSpec;
        for scenario in &mut loaded {
            let spec = TimingSpec::on_network(scenario.scenario.timing.take(), network).map_err(InputError::Usage)?;
            scenario.scenario.timing = Some(spec);
            scenario.arg = format!("{} --network {network}", scenario.arg);
            // The servers' heartbeat must outlast the new network's round trip.
            scenario.scenario.validate().map_err(|e| {
                InputError::Usage(format!("{} with --network {network}: {}: {}", scenario.source, e.field, e.message))
            })?;
        }
        args.push(format!("--network {network}"));
    }
    let args = args.as_slice();
    let jobs = jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    if jobs == 0 {
        return Err(InputError::Usage("--jobs must be at least 1".into()));
    }
    let jobs = jobs.min(seeds.len());
    // Find out now, not after the last simulation, that a file of the user's stands where a
    // report of the run goes,
    for file in ["sweep.json", "junit.xml", "summary.md"] {
        crate::owned::check_writable(&out.join(file))?;
    }
    // nor where a seed's files go.
    for scenario in &loaded {
        for seed in seeds {
            let dir = out.join(&scenario.scenario.name).join(format!("seed-{seed}"));
            if dir.is_dir() {
                for file in ["history.json", "summary.json", "report.html"] {
                    crate::owned::check_writable(&dir.join(file))?;
                }
            }
        }
    }
    // And that the output folders can be made, before the first simulation.
    for scenario in &loaded {
        let dir = out.join(&scenario.scenario.name);
        std::fs::create_dir_all(&dir).map_err(|error| InputError::Io { path: dir.display().to_string(), error })?;
    }
    let mut total = 0usize;
    let mut stopped = 0usize;
    let mut unexpected: Vec<String> = Vec::new();
    let mut command = report_cmd::sweep_command(args, &selection.described, out);
    if let Some(shards) = &selection.shards {
        command.push_str(&format!(" --shard {}/{}", shards.indices[0], shards.count));
    }
    let mut reporter = report_cmd::Reporter::new(out, formats, command, seeds.len(), seeds.len() * loaded.len())
        .with_shards(selection.shards.clone());
    for scenario in &loaded {
        reporter.println(&format!(
            "{} ({}): {}, {} job{}",
            scenario.scenario.name,
            scenario.source,
            match seeds {
                [one] => format!("seed {one}"),
                _ => match &selection.shards {
                    Some(shards) => format!(
                        "seeds {} shard {}/{} ({} runs)",
                        selection.described,
                        shards.indices[0],
                        shards.count,
                        seeds.len()
                    ),
                    None => format!("seeds {} ({} runs)", describe_seeds(seeds), seeds.len()),
                },
            },
            jobs,
            if jobs == 1 { "" } else { "s" }
        ));
        reporter.begin_scenario(scenario, &selection.described);
        let mut tally = Tally::default();
        let mut write_error = None;
        sweep::run_seeds(&scenario.scenario, &scenario.arg, seeds, jobs, |result| {
            total += 1;
            if let Err(error) = save(out, &result).and_then(|()| reporter.on_seed(&result)) {
                write_error.get_or_insert(error);
            }
            reporter.println(&seed_line(&result));
            if !result.as_expected() {
                unexpected.push(match &result {
                    SeedResult::Done { summary, .. } => summary.replay.clone(),
                    SeedResult::Crashed { replay, .. } | SeedResult::Stopped { replay, .. } => replay.clone(),
                });
            }
            stopped += usize::from(matches!(result, SeedResult::Stopped { .. }));
            tally.add(&result);
        });
        if let Some(error) = write_error {
            return Err(error);
        }
        reporter.println(&tally.line(&scenario.scenario));
        reporter.println(&format!("  output: {}", out.join(&scenario.scenario.name).display()));
        if let Some(line) = reporter.scenario_line() {
            reporter.println(&line);
        }
    }
    for line in reporter.finish()? {
        crate::outln!("{line}");
    }
    if stopped > 0 {
        // Not a verdict: the scenario asks for more work than a run may do (bad input).
        crate::outln!(
            "{stopped} of {total} runs STOPPED at a limit on the work of one run ({} history entries, {} requests served; each run's line says which); replay with:",
            coordsim_sim::recorder::MAX_HISTORY_ENTRIES,
            coordsim_sim::recorder::MAX_SERVED_REQUESTS
        );
        for command in &unexpected {
            crate::outln!("  {command}");
        }
        Ok(ExitCode::from(2))
    } else if unexpected.is_empty() {
        crate::outln!("all {total} runs as expected");
        Ok(ExitCode::SUCCESS)
    } else {
        crate::outln!("{} of {total} runs NOT as expected; replay with:", unexpected.len());
        for command in &unexpected {
            crate::outln!("  {command}");
        }
        Ok(ExitCode::from(1))
    }
}

fn describe_seeds(seeds: &[u64]) -> String {
    match seeds {
        [one] => one.to_string(),
        [first, .., last] => format!("{first}..{last}"),
        [] => "none".to_string(),
    }
}

/// Writes history.json and summary.json of one seed.
fn save(out: &Path, result: &SeedResult) -> Result<(), InputError> {
    let SeedResult::Done { history, summary } = result else {
        return Ok(());
    };
    let dir = out.join(&summary.scenario).join(format!("seed-{}", summary.seed));
    crate::owned::write(&dir.join("history.json"), history.to_json())?;
    crate::owned::write(&dir.join("summary.json"), summary.to_json())?;
    // A report of an earlier run of this seed would contradict the new history; the reporter
    // writes a fresh one if this run needs it.
    crate::owned::remove_stale(&dir.join("report.html"))
}

/// One line per seed: the verdicts and, where a property failed, its first finding.
fn seed_line(result: &SeedResult) -> String {
    match result {
        SeedResult::Crashed { seed, message, replay } => {
            format!("  seed {seed:>5}  CRASH     {message}  (replay: {replay})")
        }
        SeedResult::Stopped { seed, message, replay } => {
            format!("  seed {seed:>5}  STOPPED   {message}  (replay: {replay})")
        }
        SeedResult::Done { summary, .. } => {
            let status = if summary.as_expected { "ok      " } else { "MISMATCH" };
            let verdicts: Vec<String> = summary
                .outcomes
                .iter()
                .filter(|o| o.report.property != Property::DualOwnership.id())
                .map(|o| {
                    let mark = if o.as_expected { "" } else { "!" };
                    format!("{}={}{mark}", o.report.property, o.report.verdict)
                })
                .collect();
            let dual = summary
                .outcomes
                .iter()
                .find(|o| o.report.property == Property::DualOwnership.id())
                .map_or(0, |o| o.report.findings.len());
            // What a reader wants first: a stale write the resource turned away, then the first
            // finding of the first failing property (outcomes come in Property::ALL order, the
            // resource's properties first).
            let first_violation = summary
                .outcomes
                .iter()
                .filter(|o| o.report.verdict == Verdict::Fail)
                .find_map(|o| o.report.findings.first())
                .map(|finding| format!("  {}", finding.message))
                .unwrap_or_default();
            let first_violation = format!("{}{first_violation}", rejected_writes(summary));
            format!(
                "  seed {:>5}  {status}  {}  dual-ownership intervals: {dual}{first_violation}",
                summary.seed,
                verdicts.join(" ")
            )
        }
    }
}

/// For a passing run: how many stale writes fencing turned away, if any.
fn rejected_writes(summary: &RunSummary) -> String {
    summary
        .outcomes
        .iter()
        .find(|o| o.report.property == Property::Fencing.id())
        .filter(|o| o.report.verdict == Verdict::Pass && !o.report.summary.contains(" 0 rejected"))
        .map(|o| format!("  {}", o.report.summary))
        .unwrap_or_default()
}

/// Per-scenario counts for the summary line.
#[derive(Default)]
struct Tally {
    seeds: usize,
    as_expected: usize,
    crashed: usize,
    stopped: usize,
    failed: std::collections::BTreeMap<String, usize>,
    with_dual_ownership: usize,
}

impl Tally {
    fn add(&mut self, result: &SeedResult) {
        self.seeds += 1;
        match result {
            SeedResult::Crashed { .. } => self.crashed += 1,
            SeedResult::Stopped { .. } => self.stopped += 1,
            SeedResult::Done { summary, .. } => {
                self.as_expected += usize::from(summary.as_expected);
                for outcome in &summary.outcomes {
                    if outcome.report.verdict == Verdict::Fail {
                        *self.failed.entry(outcome.report.property.clone()).or_default() += 1;
                    }
                }
                let dual = summary
                    .outcomes
                    .iter()
                    .any(|o| o.report.property == Property::DualOwnership.id() && !o.report.findings.is_empty());
                self.with_dual_ownership += usize::from(dual);
            }
        }
    }

    fn line(&self, scenario: &coordsim_sim::scenario::Scenario) -> String {
        use coordsim_sim::scenario::Expectation;
        // Every property the scenario judges, and any other that failed.
        let properties: Vec<String> = Property::ALL
            .into_iter()
            .filter(|p| !p.is_informational())
            .filter_map(|p| {
                let failed = self.failed.get(p.id()).copied().unwrap_or(0);
                let expected = scenario.expectation(p);
                let judged = expected != Expectation::Any && (scenario.expect.contains_key(&p) || failed > 0);
                judged.then(|| format!("{} failed on {failed}/{} (expected {expected})", p.id(), self.seeds))
            })
            .collect();
        let mut crashed = if self.crashed > 0 { format!(", {} CRASHED", self.crashed) } else { String::new() };
        if self.stopped > 0 {
            crashed.push_str(&format!(", {} STOPPED at the history entry limit", self.stopped));
        }
        // A scenario that expects nothing to fail, where nothing judged failed, says so (issue 17).
        let verdicts =
            if properties.is_empty() { "no property it judges failed".to_string() } else { properties.join(", ") };
        format!(
            "{}: {}/{} seeds as expected{crashed}; {verdicts}; dual ownership seen on {}/{}",
            scenario.name, self.as_expected, self.seeds, self.with_dual_ownership, self.seeds
        )
    }
}

fn bench(arg: &str, first: u64, last: u64) -> Result<ExitCode, InputError> {
    let loaded = load::resolve(arg)?;
    let seeds = last - first + 1;
    let scenario = &loaded.scenario;
    // The same scenario in the other world of time: without a time model when it has one,
    // with its service's calibrated profile when it has none. Both are printed, so the time
    // model's cost is read off one run of the command (seeds alternate between the two).
    use coordsim_sim::scenario::TimingSpec;
    let mut other = scenario.clone();
    other.timing = Some(match scenario.is_timed() {
        true => TimingSpec::named(coordsim_sim::timing::PROFILE_NONE),
        false => TimingSpec::named(coordsim_sim::timing::auto_profile(scenario.uses_zookeeper())),
    });
    let mut runs = [BenchRun::default(), BenchRun::default()];
    for seed in first..=last {
        for (run, scenario) in runs.iter_mut().zip([scenario, &other]) {
            run.seed(scenario, arg, seed)?;
        }
    }
    let simulated_s = scenario.duration.0.as_secs_f64() * seeds as f64;
    crate::outln!("{}: {seeds} seeds of {} simulated, one at a time (one core)", scenario.name, scenario.duration);
    let label = |scenario: &coordsim_sim::scenario::Scenario| match scenario.time_model() {
        Ok(Some(model)) => model.name,
        _ => "no time model".to_string(),
    };
    for (run, scenario) in runs.iter().zip([scenario, &other]) {
        crate::outln!(
            "  simulation ({}): {:.2} s wall, {:.2} seeds/s, {:.1} simulated s per wall s",
            label(scenario),
            run.simulate_s,
            seeds as f64 / run.simulate_s,
            simulated_s / run.simulate_s
        );
    }
    let (plain, timed) = if scenario.is_timed() { (&runs[1], &runs[0]) } else { (&runs[0], &runs[1]) };
    crate::outln!(
        "  the time model's cost: {:+.0} % wall time for the same simulated time ({} against {} history entries)",
        (timed.simulate_s / plain.simulate_s - 1.0) * 100.0,
        timed.entries,
        plain.entries
    );
    let run = &runs[0];
    crate::outln!(
        "  checkers:   {:.4} s wall for {} history entries ({:.0} entries/s)",
        run.check_s,
        run.entries,
        run.entries as f64 / run.check_s.max(1e-9)
    );
    if let Some(peak) = peak_rss_mb() {
        crate::outln!("  peak RSS:   {peak:.1} MB");
    }
    Ok(ExitCode::SUCCESS)
}

/// One world's totals in `coordsim bench`.
#[derive(Default)]
struct BenchRun {
    simulate_s: f64,
    check_s: f64,
    entries: usize,
}

impl BenchRun {
    fn seed(&mut self, scenario: &coordsim_sim::scenario::Scenario, arg: &str, seed: u64) -> Result<(), InputError> {
        let started = Instant::now();
        let history = std::thread::scope(|scope| {
            std::thread::Builder::new()
                .spawn_scoped(scope, || coordsim_sim::harness::run(scenario, seed))
                .expect("the OS starts a thread")
                .join()
        })
        .map_err(|_| InputError::Usage(format!("seed {seed} crashed; run `{}`", sweep::replay_command(arg, seed))))?
        .map_err(|stopped| InputError::Usage(format!("seed {seed} of {arg}: {stopped}")))?;
        self.simulate_s += started.elapsed().as_secs_f64();
        let started = Instant::now();
        let summary: RunSummary = sweep::evaluate(scenario, arg, &history);
        self.check_s += started.elapsed().as_secs_f64();
        self.entries += summary.entries;
        Ok(())
    }
}

/// Peak resident set size of this process (Linux), in MB.
pub(crate) fn peak_rss_mb() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

#[cfg(test)]
mod tests {
    use super::Tally;

    #[test]
    fn the_summary_line_names_the_judged_failures_or_says_there_were_none() {
        let clean = crate::load::resolve("swarm-watch-skip-at-compaction").unwrap().scenario;
        let tally = Tally { seeds: 20, as_expected: 20, ..Tally::default() };
        let line = tally.line(&clean);
        assert_eq!(
            line,
            "swarm-watch-skip-at-compaction: 20/20 seeds as expected; no property it judges failed; dual ownership seen on 0/20"
        );
        let failing = crate::load::resolve("ttl-reset-on-leader-change").unwrap().scenario;
        let mut tally = Tally { seeds: 20, as_expected: 20, ..Tally::default() };
        tally.failed.insert("lease_liveness".to_string(), 20);
        let line = tally.line(&failing);
        assert!(line.contains("; lease_liveness failed on 20/20 (expected fail); "), "{line}");
    }
}
