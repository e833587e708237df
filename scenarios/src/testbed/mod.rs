//! The Testbed: your own coordination code under the simulator, from `cargo test`.
//!
//! A Testbed is a scenario (servers, faults, clocks, bug switches, expected verdicts) whose
//! clients run your async code instead of a built-in recipe. Each client gets a [`Ctx`]: an etcd
//! client with etcd-client's API ([`crate::etcd`]), the protected resource, its local clock, and
//! calls to record what your code believes ("I hold X with token T"). Every call is recorded in
//! the run's history, and the 16 built-in properties plus your own [`Checker`]s judge it.
//!
//! ```no_run
//! use coordsim::testbed::{Fault, Testbed};
//! use std::time::Duration;
//! Testbed::new("my-election")
//!     .servers(3)
//!     .duration(Duration::from_secs(30))
//!     .fault(Fault::pause("c1").at(Duration::from_secs(5)).lasting(Duration::from_secs(8)))
//!     .clients(3, |ctx| async move {
//!         let mut etcd = ctx.etcd().await.unwrap();
//!         // ... your election loop, calling ctx.believe_held / ctx.write_resource ...
//!     })
//!     .check(1..=50); // panics with the property, the finding, the seed, the report, the replay
//! ```
//!
//! Determinism: each seed runs in a fresh madsim runtime on a fresh thread; your code's time,
//! randomness (use `coordsim::rand`) and task order come from the seed. Same seed, same history
//! bytes. Code that reads the OS clock, starts threads or uses real tokio breaks that (and real
//! tokio's timers panic inside the simulation): use [`crate::time`] and [`crate::task::spawn`].

mod checker;
mod ctx;
mod fault;

use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use coordsim_checker::history::History;
use coordsim_checker::properties::Property;
use coordsim_checker::verdict::Verdict;
use coordsim_reports::{Outcome, RunSummary, SUMMARY_SCHEMA};
use coordsim_sim::harness::{self, ClientCode, ClientEnv, UserBody};
use coordsim_sim::resource::ResourceMode;
use coordsim_sim::scenario::{
    Bugs, Chaos, Clients, ClockSpec, Cluster, Dur, EtcdSpec, Expectation, Scenario, ScheduledFault, SignedDur,
};

pub use checker::{Checker, outcome, register_for_cli, registered_for_cli};
pub use ctx::{Ctx, WriteOutcome};
pub use fault::Fault;

use crate::load::{self, InputError};

/// The environment variable that runs one seed only: `COORDSIM_SEED=17 cargo test my_test`.
pub const SEED_VAR: &str = "COORDSIM_SEED";

/// A run of user code under the simulator; see the module docs.
#[derive(Clone)]
pub struct Testbed {
    scenario: Scenario,
    bodies: Vec<UserBody>,
    /// With the expectation given in code; `None`: the scenario file's `[expect]`, else pass.
    checkers: Vec<(Arc<dyn Checker>, Option<Expectation>)>,
    out: Option<PathBuf>,
    /// The test that built this Testbed, as a `cargo test` filter (empty outside a test): seeds
    /// run on other threads, whose names say nothing.
    test: String,
}

/// One seed's result.
#[derive(Debug)]
pub struct Run {
    /// The seed's history.
    pub history: History,
    /// Every verdict (the built-in properties, then the Testbed's checkers) with its expectation.
    pub summary: RunSummary,
}

impl Run {
    /// The verdict of `property` (a built-in id or a checker's id).
    pub fn verdict(&self, property: &str) -> Option<Verdict> {
        self.summary.verdict(property)
    }

    /// Every verdict met its expectation.
    pub fn as_expected(&self) -> bool {
        self.summary.as_expected
    }

    /// The first verdict that is not as expected, with its first finding, in one paragraph.
    pub fn failure(&self) -> Option<String> {
        let outcome = self.summary.outcomes.iter().find(|o| !o.as_expected)?;
        let finding = outcome.report.findings.first().map_or_else(
            || outcome.report.summary.clone(),
            |f| format!("at {}: {}", History::fmt_time(f.time_ns), f.message),
        );
        Some(format!(
            "{} is {} (expected {}): {}",
            outcome.report.property, outcome.report.verdict, outcome.expected, finding
        ))
    }
}

/// What [`Testbed::run_seeds`] found over a seed range.
#[derive(Debug)]
pub struct Sweep {
    /// Per seed, in seed order: the run, or the panic message of a run that crashed.
    pub runs: Vec<(u64, Result<Run, String>)>,
}

impl Sweep {
    /// Seeds whose verdicts were all as expected.
    pub fn as_expected(&self) -> usize {
        self.runs.iter().filter(|(_, r)| r.as_ref().is_ok_and(Run::as_expected)).count()
    }

    /// Seeds on which `property` had `verdict`.
    pub fn count(&self, property: &str, verdict: Verdict) -> usize {
        self.runs.iter().filter(|(_, r)| r.as_ref().is_ok_and(|run| run.verdict(property) == Some(verdict))).count()
    }

    /// The first seed not as expected.
    pub fn first_unexpected(&self) -> Option<(u64, &Result<Run, String>)> {
        self.runs.iter().find(|(_, r)| !r.as_ref().is_ok_and(Run::as_expected)).map(|(s, r)| (*s, r))
    }
}

impl Testbed {
    /// Three servers, 30 s of simulated time, a fenced resource, no faults, no clients yet.
    pub fn new(name: &str) -> Testbed {
        let scenario = Scenario {
            name: name.to_string(),
            summary: String::new(),
            description: String::new(),
            duration: Dur(Duration::from_secs(30)),
            cluster: Cluster {
                servers: 3,
                kind: Default::default(),
                fsync: true,
                watch_event_cost: None,
                etcd: EtcdSpec::default(),
                heartbeat_interval: None,
                election_timeout: None,
            },
            lock: None,
            resource: None,
            kv: None,
            clients: Clients {
                count: 1,
                start: Dur::zero(),
                stagger: Dur::zero(),
                hold: Dur(Duration::from_secs(1)),
                writes_per_hold: 1,
                think: Dur::zero(),
            },
            observers: None,
            timing: None,
            clock: Vec::new(),
            nemesis: Vec::new(),
            chaos: None,
            bugs: Bugs::default(),
            expect: Default::default(),
        };
        Testbed { scenario, bodies: Vec::new(), checkers: Vec::new(), out: None, test: test_filter() }
    }

    /// A Testbed from a scenario file (TOML, the format of `coordsim run`, without `[lock]` or
    /// `[kv]`: the clients are your code; `clients.count` is ignored, `clients.start` and
    /// `stagger` apply). Errors name the file, the line and the field.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Testbed, InputError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path)
            .map_err(|error| InputError::Io { path: path.display().to_string(), error })?;
        Testbed::from_toml(&path.display().to_string(), &text)
    }

    /// [`Testbed::from_file`] for scenario text; `source` names it in errors.
    pub fn from_toml(source: &str, text: &str) -> Result<Testbed, InputError> {
        let scenario = load::parse_for_user_code(source, text)?;
        Ok(Testbed { scenario, bodies: Vec::new(), checkers: Vec::new(), out: None, test: test_filter() })
    }

    /// Number of servers, named `s1`, `s2`, ... (default 3).
    pub fn servers(mut self, servers: usize) -> Self {
        self.scenario.cluster.servers = servers;
        self
    }

    /// Simulated (true) time each seed runs.
    pub fn duration(mut self, duration: Duration) -> Self {
        self.scenario.duration = Dur(duration);
        self
    }

    /// The etcd release and lease configuration the servers behave as (`[cluster.etcd]`; default
    /// a stock etcd 3.5: no lease checkpoints, so a leader change restarts every lease at its TTL).
    pub fn etcd(mut self, etcd: EtcdSpec) -> Self {
        self.scenario.cluster.etcd = etcd;
        self
    }

    /// How long things take: a time profile by name (`etcd-3.4-loopback`,
    /// `zookeeper-3.8-loopback`; sim/core/profiles/), as `[timing] profile = "..."` in a
    /// scenario file, or `"none"`: every message 1–10 ms and servers that cost nothing.
    /// Without a call, `etcd-3.4-loopback` (a scenario file's `[timing]`, or its lock recipe's
    /// service, when the Testbed was read from one): the Testbed's cluster serves both APIs and
    /// cannot know which one the code calls, so ZooKeeper code names `zookeeper-3.8-loopback`.
    /// An unknown name is refused by [`Testbed::validate`] (and when the Testbed runs).
    pub fn time_profile(mut self, name: &str) -> Self {
        self.scenario.timing = Some(coordsim_sim::scenario::TimingSpec::named(name));
        self
    }

    /// The network preset `name` in place of the time profile's own network (measured on
    /// loopback): `"lan"`, `"cross-zone"` or `"wan"` (docs/time.md gives each one's latency,
    /// capacity and source). On a network whose round trip is longer than the servers'
    /// heartbeat (the WAN), set [`Testbed::raft_timing`] too. An unknown name, or one with
    /// `time_profile("none")`, is refused by [`Testbed::validate`].
    pub fn network(mut self, name: &str) -> Self {
        let mut spec = self.scenario.timing.take().unwrap_or_default();
        spec.network = None;
        spec.network_preset = Some(name.to_string());
        self.scenario.timing = Some(spec);
        self
    }

    /// The servers' Raft timing: a leader's heartbeat every `heartbeat_interval` and an
    /// election after `election_timeout` without one (drawn from [t, 2t)), in each server's
    /// local time; etcd's `--heartbeat-interval` and `--election-timeout`. The election timeout
    /// must be at least 5 heartbeats, as etcd requires. Without a call: 50 ms and 150 ms.
    pub fn raft_timing(mut self, heartbeat_interval: Duration, election_timeout: Duration) -> Self {
        self.scenario.cluster.heartbeat_interval = Some(Dur(heartbeat_interval));
        self.scenario.cluster.election_timeout = Some(Dur(election_timeout));
        self
    }

    /// Servers acknowledge writes before syncing them (a crash loses what was not synced).
    pub fn without_fsync(mut self) -> Self {
        self.scenario.cluster.fsync = false;
        self
    }

    /// c1 starts at `start`, each next client `stagger` later (true time).
    pub fn client_start(mut self, start: Duration, stagger: Duration) -> Self {
        self.scenario.clients.start = Dur(start);
        self.scenario.clients.stagger = Dur(stagger);
        self
    }

    /// A fault at a fixed time (see [`Fault`]).
    pub fn fault(mut self, fault: Fault) -> Self {
        self.scenario.nemesis.push(fault.into_spec());
        self
    }

    /// A fault as the scenario format writes it, for kinds [`Fault`] has no shorthand for.
    pub fn scheduled_fault(mut self, fault: ScheduledFault) -> Self {
        self.scenario.nemesis.push(fault);
        self
    }

    /// A random fault mix each seed draws from (the scenario format's `[chaos]`).
    pub fn chaos(mut self, chaos: Chaos) -> Self {
        self.scenario.chaos = Some(chaos);
        self
    }

    /// `node`'s clock at the start: `offset_ms` ahead (negative: behind) and `rate` local
    /// seconds per true second (0.1..=10).
    pub fn clock(mut self, node: &str, offset_ms: i64, rate: f64) -> Self {
        let offset = SignedDur { ns: offset_ms * 1_000_000 };
        self.scenario.clock.push(ClockSpec { node: node.to_string(), offset, rate });
        self
    }

    /// The simulated servers' bug switches.
    pub fn bugs(mut self, bugs: Bugs) -> Self {
        self.scenario.bugs = bugs;
        self
    }

    /// Whether the resource rejects writes with a token below one it accepted (default fenced).
    pub fn resource(mut self, mode: ResourceMode) -> Self {
        self.scenario.resource = Some(coordsim_sim::scenario::ResourceSpec { mode });
        self
    }

    /// Adds one client (c1, c2, ... in the order added) running `body`. `body` is called each
    /// time the node starts: once, and again after each crash's restart.
    pub fn client<F, Fut>(mut self, body: F) -> Self
    where
        F: Fn(Ctx) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + 'static,
    {
        let body = Arc::new(body);
        self.bodies.push(Arc::new(move |env: ClientEnv| {
            let ctx = Ctx::new(env);
            Box::pin(body(ctx)) as std::pin::Pin<Box<dyn Future<Output = ()>>>
        }));
        self
    }

    /// Adds `count` clients running the same `body` (each sees its own [`Ctx::name`]).
    pub fn clients<F, Fut>(mut self, count: usize, body: F) -> Self
    where
        F: Fn(Ctx) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + 'static,
    {
        let body = Arc::new(body);
        for _ in 0..count {
            let body = body.clone();
            self = self.client(move |ctx| body(ctx));
        }
        self
    }

    /// Expects `property` to have `expectation` (unlisted properties are expected to pass).
    pub fn expect(mut self, property: Property, expectation: Expectation) -> Self {
        self.scenario.expect.insert(property, expectation);
        self
    }

    /// Judges every seed with `checker` too, expected to pass, or as the scenario file's
    /// `[expect]` table says under the checker's id (`no_double_assignment = "fail"`).
    pub fn checker(mut self, checker: impl Checker + 'static) -> Self {
        self.checkers.push((Arc::new(checker), None));
        self
    }

    /// Judges every seed with `checker`, expecting `expectation` (whatever a file says).
    pub fn checker_expecting(mut self, checker: impl Checker + 'static, expectation: Expectation) -> Self {
        self.checkers.push((Arc::new(checker), Some(expectation)));
        self
    }

    /// Where failing seeds' reports go (default: `<target dir>/coordsim/<name>/`).
    pub fn out_dir(mut self, out: impl Into<PathBuf>) -> Self {
        self.out = Some(out.into());
        self
    }

    /// This Testbed's clients and checkers on another scenario (a shrunk one, say): its cluster,
    /// faults, clocks, length and expectations; its `clients.count` first clients, if fewer.
    pub fn with_scenario(mut self, scenario: Scenario) -> Self {
        self.bodies.truncate(scenario.clients.count.max(1));
        self.scenario = scenario;
        self
    }

    /// The scenario this Testbed runs (for `coordsim run` of the same faults, or to print).
    pub fn scenario(&self) -> &Scenario {
        &self.scenario
    }

    /// Checks the Testbed: at least one client, and the scenario's rules (`field: message`).
    pub fn validate(&self) -> Result<(), String> {
        if self.bodies.is_empty() {
            return Err("the Testbed has no clients: add them with .client(..) or .clients(n, ..)".into());
        }
        let scenario = self.effective();
        scenario.validate_for_user_code().map_err(|e| format!("field `{}`: {}", e.field, e.message))?;
        let mut ids: Vec<&str> = Property::ALL.iter().map(|p| p.id()).collect();
        for (checker, _) in &self.checkers {
            if ids.contains(&checker.id()) {
                return Err(format!(
                    "checker id {:?} is taken (by a built-in property or another checker)",
                    checker.id()
                ));
            }
            ids.push(checker.id());
        }
        if let Some(unknown) = scenario.expect.checker_ids().find(|id| !ids.contains(id)) {
            let ours: Vec<&str> = self.checkers.iter().map(|(checker, _)| checker.id()).collect();
            return Err(format!(
                "field `expect.{unknown}`: no property and no checker of this Testbed is named {unknown:?} \
                 (its checkers: {})",
                if ours.is_empty() { "none".to_string() } else { ours.join(", ") }
            ));
        }
        Ok(())
    }

    fn effective(&self) -> Scenario {
        let mut scenario = self.scenario.clone();
        scenario.clients.count = self.bodies.len();
        scenario
    }

    /// Runs one seed and judges it. Errors: an invalid Testbed, or a run that panicked (your
    /// code, or an invariant of the simulated service), with the panic's message.
    pub fn try_run_seed(&self, seed: u64) -> Result<Run, String> {
        self.validate()?;
        self.run_validated(seed)
    }

    fn run_validated(&self, seed: u64) -> Result<Run, String> {
        let scenario = self.effective();
        let code = ClientCode::User(self.bodies.clone());
        let thread = std::thread::Builder::new()
            .name(format!("{}-seed-{seed}", scenario.name))
            .spawn(move || {
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| harness::run_with(&scenario, seed, &code)))
            })
            .map_err(|e| format!("could not start a thread: {e}"))?;
        let history = match thread.join() {
            Ok(Ok(Ok(history))) => history,
            Ok(Ok(Err(stopped))) => return Err(format!("seed {seed} of {}: {stopped}", self.scenario.name)),
            Ok(Err(panic)) | Err(panic) => {
                return Err(format!("seed {seed} of {} panicked: {}", self.scenario.name, panic_message(&panic)));
            }
        };
        let summary = self.evaluate(&history);
        Ok(Run { history, summary })
    }

    /// Shrinks a failing seed to a minimal reproduction with `coordsim shrink`'s machinery: the
    /// seed's fault plan as a fixed timeline, then fewer and shorter faults, fewer clients (the
    /// first N of yours) and a shorter run, while `property` (a built-in id or a checker's;
    /// default: the first that fails) still fails on the same seed. Returns the minimal scenario
    /// (`shrink::to_toml` writes it; [`Testbed::from_toml`] reads it back). Errors: an invalid
    /// Testbed, a seed on which nothing (or not `property`) fails, a crashed run.
    pub fn shrink(&self, seed: u64, property: Option<&str>) -> Result<crate::shrink::Shrunk, String> {
        use crate::sweep::SeedResult;
        self.validate()?;
        let mut judged: Vec<&str> = Property::ALL.iter().filter(|p| !p.is_informational()).map(|p| p.id()).collect();
        judged.extend(self.checkers.iter().map(|(checker, _)| checker.id()));
        let run = |candidate: &Scenario, seed: u64| {
            let mut testbed = self.clone();
            testbed.scenario = candidate.clone();
            testbed.bodies.truncate(candidate.clients.count);
            match testbed.run_validated(seed) {
                Ok(run) => SeedResult::Done { history: run.history, summary: run.summary },
                Err(message) => SeedResult::Crashed { seed, message, replay: String::new() },
            }
        };
        crate::shrink::shrink_with(&self.effective(), seed, property, &judged, &run).map_err(|e| e.to_string())
    }

    /// The body of one run, to await inside a madsim runtime: for madsim's
    /// `Runtime::check_determinism`, which runs it twice and compares every random draw. Panics
    /// if the Testbed is invalid.
    pub fn simulation(&self) -> impl Future<Output = History> + use<> {
        if let Err(e) = self.validate() {
            panic!("coordsim: {e}");
        }
        harness::simulate_with(self.effective(), ClientCode::User(self.bodies.clone()))
    }

    /// Runs one seed; panics if the Testbed is invalid or the run panicked.
    pub fn run_seed(&self, seed: u64) -> Run {
        self.try_run_seed(seed).unwrap_or_else(|e| panic!("coordsim: {e}"))
    }

    /// Runs `seeds` (each on a fresh thread, as many at once as the machine has cores), or only
    /// the seed in `COORDSIM_SEED` when it is set.
    pub fn run_seeds(&self, seeds: impl IntoIterator<Item = u64>) -> Sweep {
        if let Err(e) = self.validate() {
            panic!("coordsim: {e}");
        }
        let seeds: Vec<u64> = match seed_from_env() {
            Some(seed) => vec![seed],
            None => seeds.into_iter().collect(),
        };
        let jobs = std::thread::available_parallelism().map_or(1, |n| n.get()).min(seeds.len().max(1));
        let next = AtomicUsize::new(0);
        let results: std::sync::Mutex<Vec<(u64, Result<Run, String>)>> = std::sync::Mutex::new(Vec::new());
        std::thread::scope(|scope| {
            for _ in 0..jobs {
                scope.spawn(|| {
                    loop {
                        let index = next.fetch_add(1, Ordering::SeqCst);
                        let Some(&seed) = seeds.get(index) else { break };
                        let result = self.run_validated(seed);
                        results.lock().expect("results lock").push((seed, result));
                    }
                });
            }
        });
        let mut runs = results.into_inner().expect("results lock");
        runs.sort_by_key(|(seed, _)| seeds.iter().position(|s| s == seed));
        Sweep { runs }
    }

    /// Runs `seeds` and panics at the first seed whose verdicts are not as expected, with the
    /// property, its first finding, the seed, the report.html written for it, and how to replay
    /// that seed alone. Returns the sweep when every seed is as expected.
    pub fn check(&self, seeds: impl IntoIterator<Item = u64>) -> Sweep {
        let sweep = self.run_seeds(seeds);
        if let Some((seed, result)) = sweep.first_unexpected() {
            let message = match result {
                Ok(run) => {
                    let report = self.write_report(run);
                    format!(
                        "coordsim: {} seed {seed}: {}\n  report: {}\n  replay: {SEED_VAR}={seed} cargo test {}\n  ({} of {} seeds as expected)",
                        self.scenario.name,
                        run.failure().unwrap_or_default(),
                        report.map_or_else(|e| format!("(not written: {e})"), |p| p.display().to_string()),
                        self.test,
                        sweep.as_expected(),
                        sweep.runs.len()
                    )
                }
                Err(message) => {
                    format!("coordsim: {message}\n  replay: {SEED_VAR}={seed} cargo test {}", self.test)
                }
            };
            panic!("{message}");
        }
        sweep
    }

    /// Writes `history.json`, `summary.json` and `report.html` of `run` under the out folder;
    /// returns the report's path. Like the CLI it writes through the folder's manifest
    /// (docs/hostile-input.md): a file of the same name that coordsim did not write is left as
    /// it is and the write fails with its path (`ErrorKind::Other`).
    pub fn write_report(&self, run: &Run) -> std::io::Result<PathBuf> {
        let dir = self.out_root().join(&self.scenario.name).join(format!("seed-{}", run.history.seed));
        let write = |name: &str, bytes: String| {
            crate::owned::write(&dir.join(name), bytes).map_err(|e| std::io::Error::other(e.to_string()))
        };
        // Every file is checked before any is written, so a refusal leaves the folder as it was.
        for name in ["history.json", "summary.json", "report.html"] {
            crate::owned::check_writable(&dir.join(name)).map_err(|e| std::io::Error::other(e.to_string()))?;
        }
        write("history.json", run.history.to_json())?;
        let summary = serde_json::to_string_pretty(&run.summary).map_err(std::io::Error::other)?;
        write("summary.json", summary + "\n")?;
        let mut input = coordsim_reports::RunInput::new(&run.history);
        input.summary = Some(&run.summary);
        input.scenario_summary = &self.scenario.summary;
        input.description = &self.scenario.description;
        write("report.html", coordsim_reports::run_report_html(&input))?;
        Ok(dir.join("report.html"))
    }

    fn out_root(&self) -> PathBuf {
        if let Some(out) = &self.out {
            return out.clone();
        }
        target_dir().join("coordsim")
    }

    /// Every verdict of `history` against the expectations.
    pub fn evaluate(&self, history: &History) -> RunSummary {
        let mut outcomes: Vec<Outcome> = Property::ALL
            .iter()
            .map(|&property| {
                let report = property.check(history);
                let expected = self.scenario.expectation(property);
                Outcome { as_expected: expected.matches(report.verdict), expected: expected.to_string(), report }
            })
            .collect();
        outcomes.extend(self.checkers.iter().map(|(checker, expected)| {
            let expected = expected.or_else(|| self.scenario.expect.checker(checker.id())).unwrap_or(Expectation::Pass);
            checker::outcome(&**checker, history, expected)
        }));
        RunSummary {
            schema: SUMMARY_SCHEMA.to_string(),
            scenario: self.scenario.name.clone(),
            seed: history.seed,
            duration_ns: history.duration_ns,
            entries: history.entries.len(),
            as_expected: outcomes.iter().all(|o| o.as_expected),
            outcomes,
            replay: format!("{SEED_VAR}={} cargo test {}", history.seed, self.test),
            metrics: Some(coordsim_checker::metrics::of(history)),
        }
    }
}

fn seed_from_env() -> Option<u64> {
    let text = std::env::var(SEED_VAR).ok()?;
    match text.trim().parse() {
        Ok(seed) => Some(seed),
        Err(_) => panic!("coordsim: {SEED_VAR}={text:?} is not a seed (a whole number)"),
    }
}

/// What follows `cargo test` to run the running test alone, as this process was built: the
/// profile (`--release`, `--profile P`), the package (`-p`, from cargo's `CARGO_PKG_NAME`), the
/// test target (`--test T` or `--lib`, from the test binary's name) and the test's name (libtest
/// names each test's thread after it). Empty outside a test.
fn test_filter() -> String {
    let name = match std::thread::current().name() {
        Some(name) if name != "main" => name.to_string(),
        _ => return String::new(),
    };
    let exe = std::env::current_exe().ok();
    let mut words: Vec<String> = Vec::new();
    // target/<profile>/deps/<target>-<hash>
    let profile = exe.as_ref().and_then(|exe| exe.parent()?.parent()?.file_name()?.to_str().map(str::to_string));
    match profile.as_deref() {
        Some("release") => words.push("--release".into()),
        Some("debug") | None => {}
        Some(other) => words.push(format!("--profile {other}")),
    }
    let package = std::env::var("CARGO_PKG_NAME").ok();
    if let Some(package) = &package {
        words.push(format!("-p {package}"));
    }
    let target = exe.as_ref().and_then(|exe| exe.file_stem()?.to_str()?.rsplit_once('-').map(|(t, _)| t.to_string()));
    match (target, &package) {
        (Some(target), Some(package)) if target == package.replace('-', "_") => words.push("--lib".into()),
        (Some(target), _) => words.push(format!("--test {target}")),
        _ => {}
    }
    words.push(format!("{name} -- --exact"));
    words.join(" ")
}

/// The cargo target folder: `CARGO_TARGET_DIR`, else the `target` folder above the test binary
/// (`target/debug/deps/<test>`), else the system's temporary folder.
fn target_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("CARGO_TARGET_DIR") {
        return PathBuf::from(dir);
    }
    std::env::current_exe()
        .ok()
        .and_then(|exe| exe.ancestors().find(|a| a.file_name().is_some_and(|n| n == "target")).map(Path::to_path_buf))
        .unwrap_or_else(std::env::temp_dir)
}

fn panic_message(panic: &Box<dyn std::any::Any + Send>) -> String {
    panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "(no message)".into())
}
