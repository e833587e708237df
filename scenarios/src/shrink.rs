//! `coordsim shrink <scenario> --seed N [--property P]`: from a failing seed to a minimal
//! reproduction.
//!
//! 1. The seed's fault plan (the fixed `[[nemesis]]` faults and those drawn from `[chaos]`) becomes
//!    a fixed timeline, exactly as `--show-plan` prints it: the same seed replays the same run.
//! 2. That scenario is minimised while the same property still fails on the same seed: dynamic
//!    targets (`leader`, `client`) become the nodes they hit, faults are removed one at a time,
//!    each fault moves earlier, a fault on a client moves to a lower-numbered client (so that the
//!    clients above it can go),
//!    clients dropped, writes per hold reduced, each fault shortened and the run cut.
//! 3. The minimal scenario is written as TOML with its report.
//!
//! The search is proptest's shrinking protocol: a [`ValueTree`] whose `simplify` proposes a
//! smaller scenario after a failing run and whose `complicate` backs off after a passing one,
//! driven by the loop proptest's runner uses. Each dimension is a proptest
//! [`BinarySearch`](proptest::num::u64::BinarySearch) (a fault's presence is a search over
//! {0, 1}). proptest's strategies cannot express this directly: they shrink a value they generated
//! themselves, from its own random start, whereas here the start is given (the failing seed's
//! plan) and each candidate is valid only after pruning faults that name dropped clients; so the
//! tree is composed by hand from proptest's numeric trees. Shrinking assumes nothing about
//! monotonicity: every candidate is simulated, and only failing ones are kept.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use coordsim_checker::history::{Event, History, Phase};
use coordsim_checker::properties::Property;
use coordsim_checker::verdict::Verdict;
use coordsim_sim::nemesis::plan;
use coordsim_sim::scenario::{Dur, Expectation, FaultKindSpec, PartitionShape, Scenario, ScheduledFault};
use proptest::num::u64::BinarySearch;
use proptest::strategy::ValueTree;

use crate::load::{self, InputError};
use crate::report_cmd;
use crate::sweep::{self, SeedResult};

/// Most candidate runs one shrink may simulate (a limit on everything).
pub const RUNS_MAX: usize = 2_000;
/// Full passes over every dimension; a pass that keeps nothing ends the search earlier.
const PASSES_MAX: usize = 4;
/// Shortest fault and shortest run the search tries, in ms.
const FAULT_MS_MIN: u64 = 1;
const DURATION_MS_MIN: u64 = 1_000;

/// What `coordsim shrink` was asked.
#[derive(Clone, Debug)]
pub struct Request {
    pub scenario: String,
    pub seed: u64,
    pub property: Option<String>,
    pub out: Option<PathBuf>,
}

/// The values the search moves: one per dimension.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Point {
    /// 1: targets as drawn (`leader`, `client`); 0: the nodes they hit in the original run.
    dynamic_targets: u64,
    /// Per fault of the fixed timeline: 1 kept, 0 removed.
    kept: Vec<u64>,
    /// Per fault: its length in ms (0 for instantaneous faults).
    lengths_ms: Vec<u64>,
    /// Per fault: when it starts, in ms of true time. Earlier faults let the run be cut shorter,
    /// and can meet the first clients' holds instead of the later ones'.
    starts_ms: Vec<u64>,
    /// Per fault: the number of the one client it targets (3 for `c3`), 0 when it targets no
    /// single client. Lowering it lets the `clients` dimension drop the clients above.
    target_clients: Vec<u64>,
    clients: u64,
    writes_per_hold: u64,
    duration_ms: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Dim {
    DynamicTargets,
    Kept(usize),
    Start(usize),
    TargetClient(usize),
    Clients,
    WritesPerHold,
    Length(usize),
    Duration,
}

impl Point {
    fn get(&self, dim: Dim) -> u64 {
        match dim {
            Dim::DynamicTargets => self.dynamic_targets,
            Dim::Kept(i) => self.kept[i],
            Dim::Start(i) => self.starts_ms[i],
            Dim::TargetClient(i) => self.target_clients[i],
            Dim::Clients => self.clients,
            Dim::WritesPerHold => self.writes_per_hold,
            Dim::Length(i) => self.lengths_ms[i],
            Dim::Duration => self.duration_ms,
        }
    }

    fn set(&mut self, dim: Dim, value: u64) {
        match dim {
            Dim::DynamicTargets => self.dynamic_targets = value,
            Dim::Kept(i) => self.kept[i] = value,
            Dim::Start(i) => self.starts_ms[i] = value,
            Dim::TargetClient(i) => self.target_clients[i] = value,
            Dim::Clients => self.clients = value,
            Dim::WritesPerHold => self.writes_per_hold = value,
            Dim::Length(i) => self.lengths_ms[i] = value,
            Dim::Duration => self.duration_ms = value,
        }
    }

    /// The lowest value the search tries in `dim`.
    fn floor(&self, dim: Dim) -> u64 {
        match dim {
            Dim::DynamicTargets | Dim::Kept(_) | Dim::Start(_) => 0,
            Dim::TargetClient(_) | Dim::Clients | Dim::WritesPerHold => 1,
            Dim::Length(_) => FAULT_MS_MIN,
            Dim::Duration => DURATION_MS_MIN,
        }
    }
}

/// The scenario under search: the fixed timeline and how a [`Point`] turns it into a scenario.
struct Space {
    base: Scenario,
    faults: Vec<ScheduledFault>,
    /// Per fault: the same fault with the nodes it hit in the original run instead of a dynamic
    /// target, when the run says which single node that was.
    concrete: Vec<ScheduledFault>,
}

impl Space {
    fn start(&self) -> Point {
        Point {
            dynamic_targets: 1,
            kept: vec![1; self.faults.len()],
            lengths_ms: self.faults.iter().map(|f| f.duration.map_or(0, |d| d.ms())).collect(),
            starts_ms: self.faults.iter().map(|f| f.at.ms()).collect(),
            target_clients: self
                .concrete
                .iter()
                .map(|f| f.target.as_deref().and_then(client_number).unwrap_or(0))
                .collect(),
            clients: self.base.clients.count as u64,
            writes_per_hold: u64::from(self.base.clients.writes_per_hold),
            duration_ms: self.base.duration.ms(),
        }
    }

    /// The scenario a point stands for; `None` if it is not a valid scenario.
    fn scenario(&self, point: &Point) -> Option<Scenario> {
        let mut scenario = self.base.clone();
        scenario.clients.count = point.clients as usize;
        scenario.clients.writes_per_hold = u32::try_from(point.writes_per_hold).ok()?;
        scenario.duration = Dur(std::time::Duration::from_millis(point.duration_ms));
        let clients = scenario.client_names();
        let is_client_name = |name: &str| name.strip_prefix('c').is_some_and(|n| n.parse::<u32>().is_ok());
        let dropped_client = |name: &str| is_client_name(name) && !clients.iter().any(|c| c == name);
        scenario.nemesis = Vec::new();
        for (i, fault) in self.faults.iter().enumerate() {
            if point.kept[i] == 0 {
                continue;
            }
            let mut fault = if point.dynamic_targets == 0 { self.concrete[i].clone() } else { fault.clone() };
            if fault.duration.is_some() {
                fault.duration = Some(Dur(std::time::Duration::from_millis(point.lengths_ms[i])));
            }
            fault.at = Dur(std::time::Duration::from_millis(point.starts_ms[i]));
            if point.target_clients[i] > 0 && fault.target.as_deref().and_then(client_number).is_some() {
                // A fault on a client beyond the count moves to the client that takes the same
                // turn when the clients take the lock in rotation (c3 of three holds third; of
                // two clients, c1 does): dropping clients keeps the fault, on a client that
                // runs and is likely to hold at that moment.
                let number = (point.target_clients[i] - 1) % point.clients.max(1) + 1;
                fault.target = Some(format!("c{number}"));
            }
            let names = fault.target.iter().chain(&fault.targets).chain(&fault.from).chain(&fault.to);
            if names.clone().any(|n| dropped_client(n)) || fault.at >= scenario.duration {
                continue;
            }
            scenario.nemesis.push(fault);
        }
        let valid = match scenario.lock.is_some() || scenario.kv.is_some() {
            true => scenario.validate(),
            false => scenario.validate_for_user_code(),
        };
        valid.ok()?;
        Some(scenario)
    }

    /// The dimensions of one pass, in the order they are tried.
    fn dims(&self, point: &Point, first_pass: bool) -> Vec<Dim> {
        let mut dims = Vec::new();
        if first_pass && point.dynamic_targets == 1 && self.concrete != self.faults {
            dims.push(Dim::DynamicTargets);
        }
        if first_pass {
            // Cutting the run first drops every fault after the violation without touching the
            // run before it (a deterministic simulation replays the same prefix): the cheapest,
            // surest step.
            dims.push(Dim::Duration);
        }
        dims.extend((0..self.faults.len()).filter(|&i| point.kept[i] == 1).map(Dim::Kept));
        // Only where the fault names its client (with dynamic targets, `client` stays drawn).
        let names_client = |i: usize| {
            let fault = if point.dynamic_targets == 0 { &self.concrete[i] } else { &self.faults[i] };
            fault.target.as_deref().and_then(client_number).is_some()
        };
        dims.extend((0..self.faults.len()).filter(|&i| point.kept[i] == 1 && point.starts_ms[i] > 0).map(Dim::Start));
        dims.extend(
            (0..self.faults.len())
                .filter(|&i| point.kept[i] == 1 && point.target_clients[i] > 1 && names_client(i))
                .map(Dim::TargetClient),
        );
        dims.push(Dim::Clients);
        if self.base.lock.is_some() {
            dims.push(Dim::WritesPerHold);
        }
        dims.extend((0..self.faults.len()).filter(|&i| point.kept[i] == 1 && point.lengths_ms[i] > 0).map(Dim::Length));
        dims.push(Dim::Duration);
        dims
    }
}

/// The number of a client's name: 3 for `c3`; `None` for any other node or target.
fn client_number(name: &str) -> Option<u64> {
    name.strip_prefix('c').and_then(|n| n.parse::<u64>().ok()).filter(|&n| n > 0)
}

/// proptest's ValueTree over scenarios: one dimension searched at a time with a
/// [`BinarySearch`], from the last point known to fail.
struct ShrinkTree<'a> {
    space: &'a Space,
    /// The last point whose run failed.
    accepted: Point,
    /// The dimension being searched and its tree.
    active: Option<(Dim, BinarySearch)>,
    queue: Vec<Dim>,
    passes: usize,
    /// Whether the current pass kept any simplification.
    progressed: bool,
}

impl<'a> ShrinkTree<'a> {
    fn new(space: &'a Space) -> Self {
        let accepted = space.start();
        let mut queue = space.dims(&accepted, true);
        queue.reverse();
        ShrinkTree { space, accepted, active: None, queue, passes: 1, progressed: false }
    }

    /// Moves to the next dimension that can be simplified; false when the search is over.
    fn advance(&mut self) -> bool {
        loop {
            let Some(dim) = self.queue.pop() else {
                if !self.progressed || self.passes >= PASSES_MAX {
                    return false;
                }
                self.passes += 1;
                self.progressed = false;
                self.queue = self.space.dims(&self.accepted, false);
                self.queue.reverse();
                continue;
            };
            let value = self.accepted.get(dim);
            let mut tree = BinarySearch::new_above(self.accepted.floor(dim), value);
            if tree.simplify() {
                self.active = Some((dim, tree));
                return true;
            }
        }
    }
}

impl ValueTree for ShrinkTree<'_> {
    type Value = Point;

    fn current(&self) -> Point {
        let mut point = self.accepted.clone();
        if let Some((dim, tree)) = &self.active {
            point.set(*dim, tree.current());
        }
        point
    }

    /// Called after `current()` failed: keep it, and propose something smaller.
    fn simplify(&mut self) -> bool {
        let current = self.current();
        if current != self.accepted {
            self.progressed = true;
            self.accepted = current;
        }
        if let Some((_, tree)) = &mut self.active
            && tree.simplify()
        {
            return true;
        }
        self.active = None;
        self.advance()
    }

    /// Called after `current()` passed: back off towards the last failing point, or go on with
    /// the next dimension.
    fn complicate(&mut self) -> bool {
        if let Some((_, tree)) = &mut self.active
            && tree.complicate()
        {
            return true;
        }
        self.active = None;
        self.advance()
    }
}

/// One candidate's outcome.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Outcome {
    Fails,
    Passes,
    Invalid,
}

/// Runs scenarios on one seed, remembering outcomes (the search revisits points).
struct Oracle<'a> {
    seed: u64,
    property: &'a str,
    runner: &'a Runner<'a>,
    cache: BTreeMap<String, Outcome>,
    runs: usize,
}

impl Oracle<'_> {
    fn judge(&mut self, scenario: Option<&Scenario>) -> Outcome {
        let Some(scenario) = scenario else { return Outcome::Invalid };
        let key = toml::to_string(scenario).expect("a scenario serializes");
        if let Some(outcome) = self.cache.get(&key) {
            return *outcome;
        }
        self.runs += 1;
        let outcome = match (self.runner)(scenario, self.seed) {
            SeedResult::Done { summary, .. } if summary.verdict(self.property) == Some(Verdict::Fail) => Outcome::Fails,
            _ => Outcome::Passes,
        };
        self.cache.insert(key, outcome);
        outcome
    }
}

/// The result of a shrink.
pub struct Shrunk {
    pub scenario: Scenario,
    /// The id of the property that still fails (a built-in one, or a Testbed checker's).
    pub property: String,
    /// Simulated candidates (cached repeats not counted).
    pub runs: usize,
    pub faults_before: usize,
    pub clients_before: usize,
}

/// Runs one candidate scenario on one seed and judges it: the simulator's scenario workload
/// ([`sweep::run_seed`]), or a Testbed's user code.
pub type Runner<'a> = dyn Fn(&Scenario, u64) -> SeedResult + 'a;

/// Shrinks `scenario` on `seed` while `property` (default: the first that fails) still fails.
pub fn shrink(scenario: &Scenario, arg: &str, seed: u64, property: Option<Property>) -> Result<Shrunk, InputError> {
    let judged: Vec<&str> = Property::ALL.iter().filter(|p| !p.is_informational()).map(|p| p.id()).collect();
    let property = property.map(|p| p.id().to_string());
    shrink_with(scenario, seed, property.as_deref(), &judged, &|candidate, seed| sweep::run_seed(candidate, arg, seed))
}

/// [`shrink`] with another way of running a candidate: `run` judges it, `judged` lists the
/// properties (ids, in order) to pick the failing one from when `property` is `None`.
pub fn shrink_with(
    scenario: &Scenario,
    seed: u64,
    property: Option<&str>,
    judged: &[&str],
    run: &Runner<'_>,
) -> Result<Shrunk, InputError> {
    let original = match run(scenario, seed) {
        SeedResult::Done { history, summary } => (history, summary),
        SeedResult::Crashed { message, .. } => {
            return Err(InputError::Usage(format!("{} seed {seed} crashed: {message}", scenario.name)));
        }
        SeedResult::Stopped { message, .. } => {
            return Err(InputError::Usage(format!("{} seed {seed}: {message}", scenario.name)));
        }
    };
    let (history, summary) = original;
    let failing = |p: &str| summary.verdict(p) == Some(Verdict::Fail);
    let property: String = match property {
        Some(p) if failing(p) => p.to_string(),
        Some(p) => {
            return Err(InputError::Usage(format!(
                "{p} does not fail in {} seed {seed}: nothing to shrink",
                scenario.name
            )));
        }
        None => judged.iter().find(|p| failing(p)).map(|p| p.to_string()).ok_or_else(|| {
            InputError::Usage(format!("no property fails in {} seed {seed}: nothing to shrink", scenario.name))
        })?,
    };
    let plan = plan::plan(scenario, seed);
    let faults: Vec<ScheduledFault> = plan.iter().map(|p| p.spec.clone()).collect();
    let concrete = concrete_targets(&faults, &history);
    let mut base = scenario.clone();
    base.chaos = None;
    base.nemesis = faults.clone();
    base.name = format!("{}-seed-{seed}-min", scenario.name);
    base.expect = Property::ALL
        .into_iter()
        .filter(|p| !p.is_informational())
        .map(|p| (p, if p.id() == property { Expectation::Fail } else { Expectation::Any }))
        .collect();
    // A checker of the user's own: the minimal scenario expects it to fail.
    if Property::from_id(&property).is_none() {
        base.expect.set_checker(&property, Expectation::Fail);
    }
    let mut space = Space { base, faults, concrete };
    let mut oracle = Oracle { seed, property: &property, runner: run, cache: BTreeMap::new(), runs: 0 };
    let fixed = space.scenario(&space.start()).ok_or_else(|| {
        InputError::Usage(format!("{} seed {seed}: the drawn plan does not make a valid fixed timeline", scenario.name))
    })?;
    if oracle.judge(Some(&fixed)) != Outcome::Fails {
        return Err(InputError::Usage(format!(
            "{} seed {seed}: the fixed timeline does not fail {property} (the plan should replay the run)",
            scenario.name
        )));
    }
    // A first cut, one run: end the run a second after the violation was seen. The simulation
    // replays the same prefix, so this nearly always still fails, and every later candidate
    // runs that much shorter.
    let seen_ms = summary
        .outcomes
        .iter()
        .find(|o| o.report.property == property)
        .and_then(|o| o.report.findings.iter().map(|f| f.until_ns.unwrap_or(f.time_ns)).max())
        .map(|ns| ns / 1_000_000);
    if let Some(seen_ms) = seen_ms {
        let mut cut = space.start();
        cut.duration_ms = (seen_ms + 1_000).clamp(DURATION_MS_MIN, cut.duration_ms);
        if oracle.judge(space.scenario(&cut).as_ref()) == Outcome::Fails {
            space.base.duration = Dur(std::time::Duration::from_millis(cut.duration_ms));
        }
    }
    let start = space.start();
    // proptest's shrinking loop (TestRunner::shrink): simplify after a failure, complicate after
    // a pass, until the tree has nothing left to try; the last failure is the answer.
    let mut tree = ShrinkTree::new(&space);
    let mut last_failure = start;
    if tree.simplify() {
        while oracle.runs < RUNS_MAX {
            let point = tree.current();
            let more = match oracle.judge(space.scenario(&point).as_ref()) {
                Outcome::Fails => {
                    last_failure = point;
                    tree.simplify()
                }
                Outcome::Passes | Outcome::Invalid => tree.complicate(),
            };
            if !more {
                break;
            }
        }
    }
    let minimal = space.scenario(&last_failure).expect("a failing point is a valid scenario");
    let runs = oracle.runs;
    Ok(Shrunk {
        scenario: describe(minimal, scenario, seed, &property),
        property,
        runs,
        faults_before: space.faults.len(),
        clients_before: scenario.clients.count,
    })
}

/// Each fault with the single node it hit in the original run in place of a dynamic target.
fn concrete_targets(faults: &[ScheduledFault], history: &History) -> Vec<ScheduledFault> {
    let mut hit: BTreeMap<u64, Vec<String>> = BTreeMap::new();
    for entry in &history.entries {
        if let Event::Fault { fault, phase: Phase::Start, targets, .. } = &entry.event {
            hit.entry(*fault).or_insert_with(|| targets.clone());
        }
    }
    let dynamic = |t: &str| matches!(t, "leader" | "follower" | "server" | "client" | "any");
    faults
        .iter()
        .enumerate()
        .map(|(i, fault)| {
            let mut fault = fault.clone();
            let single = match hit.get(&(i as u64 + 1)).map(Vec::as_slice) {
                Some([one]) => Some(one.clone()),
                _ => None,
            };
            let takes_one =
                matches!(fault.kind, FaultKindSpec::Pause | FaultKindSpec::Crash | FaultKindSpec::DropReplies)
                    || fault.shape == Some(PartitionShape::Isolate);
            if let (Some(node), Some(target)) = (single, fault.target.as_deref())
                && takes_one
                && dynamic(target)
            {
                fault.target = Some(node);
            }
            fault
        })
        .collect()
}

fn describe(mut minimal: Scenario, original: &Scenario, seed: u64, property: &str) -> Scenario {
    let faults: Vec<String> = minimal
        .nemesis
        .iter()
        .map(|f| {
            let target = f.target.as_deref().map(|t| format!(" {t}")).unwrap_or_default();
            let length = f.duration.map(|d| format!(" for {d}")).unwrap_or_default();
            format!("{} at {}{target}{length}", f.kind.name(), f.at)
        })
        .collect();
    minimal.summary = format!("{} seed {seed}, shrunk: {property} still fails", original.name);
    minimal.description = format!(
        "Shrunk by `coordsim shrink {} --seed {seed}` from the seed's drawn fault plan ({} faults, {} clients, {}).\n\
         What is left still fails {property} on seed {seed}: {} client{}, {}, {}.\n\
         Run it with `cargo coordsim run <this file> --seed {seed}`: {property} is expected to fail and the\n\
         other properties are not judged.\n\n{}",
        original.name,
        plan::plan(original, seed).len(),
        original.clients.count,
        original.duration,
        minimal.clients.count,
        if minimal.clients.count == 1 { "" } else { "s" },
        if faults.is_empty() { "no fault".to_string() } else { faults.join(", ") },
        minimal.duration,
        original.description.trim_end()
    );
    minimal
}

/// The scenario as a TOML file.
pub fn to_toml(scenario: &Scenario) -> String {
    let mut text = String::from("# Written by coordsim shrink: a minimal reproduction (see description).\n");
    text.push_str(&toml::to_string(scenario).expect("a scenario serializes"));
    text
}

/// `coordsim shrink`: shrinks, writes `<out>/minimal.toml` and the minimal run's history,
/// summary and report.html.
pub fn run(request: &Request) -> Result<ExitCode, InputError> {
    let loaded = load::resolve(&request.scenario)?;
    let property = match &request.property {
        None => None,
        Some(id) => Some(Property::from_id(id).ok_or_else(|| {
            let known: Vec<&str> = Property::ALL.iter().map(|p| p.id()).collect();
            InputError::Usage(format!("unknown property {id:?}: use one of {}", known.join(", ")))
        })?),
    };
    let out = request.out.clone().unwrap_or_else(|| {
        Path::new("target/coordsim/shrink").join(format!("{}-seed-{}", loaded.scenario.name, request.seed))
    });
    std::fs::create_dir_all(&out).map_err(|error| InputError::Io { path: out.display().to_string(), error })?;
    for file in ["minimal.toml", "history.json", "summary.json", "report.html"] {
        crate::owned::check_writable(&out.join(file))?;
    }
    let shrunk = shrink(&loaded.scenario, &loaded.arg, request.seed, property)?;
    let path = out.join("minimal.toml");
    let text = to_toml(&shrunk.scenario);
    crate::owned::write(&path, &text)?;
    // The minimal file as a user will run it: parse it back, run it, and keep its report.
    let reread = load::parse(&path.display().to_string(), &text)?;
    let arg = path.display().to_string();
    let SeedResult::Done { history, summary } = sweep::run_seed(&reread, &arg, request.seed) else {
        return Err(InputError::Usage(format!("{arg}: seed {} crashed", request.seed)));
    };
    for (file, content) in [("history.json", history.to_json()), ("summary.json", summary.to_json())] {
        crate::owned::write(&out.join(file), content)?;
    }
    let report = report_cmd::write_run_report(&out, &history, Some(&summary), Some(&reread))?;
    let minimal = &shrunk.scenario;
    crate::outln!(
        "{} seed {}: {} fails; shrunk in {} runs from {} faults, {} clients, {} to {} fault{}, {} client{}, {}",
        loaded.scenario.name,
        request.seed,
        shrunk.property,
        shrunk.runs,
        shrunk.faults_before,
        shrunk.clients_before,
        loaded.scenario.duration,
        minimal.nemesis.len(),
        if minimal.nemesis.len() == 1 { "" } else { "s" },
        minimal.clients.count,
        if minimal.clients.count == 1 { "" } else { "s" },
        minimal.duration
    );
    if let Some(line) = minimal.description.lines().nth(1) {
        crate::outln!("  {line}");
    }
    crate::outln!("  minimal scenario: {}", path.display());
    crate::outln!("  report: {}", report.display());
    crate::outln!("  replay: {}", sweep::replay_command(&arg, request.seed));
    if summary.verdict(&shrunk.property) != Some(Verdict::Fail) {
        crate::outln!("the written file does NOT reproduce the failure");
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// split-brain-gc-pause with three clients and its pause on c3.
    fn space() -> Space {
        let mut base = load::resolve("split-brain-gc-pause").expect("a library scenario").scenario;
        base.clients.count = 3;
        base.nemesis[0].target = Some("c3".into());
        let faults = std::mem::take(&mut base.nemesis);
        Space { base, concrete: faults.clone(), faults }
    }

    #[test]
    fn dropping_clients_moves_a_fault_to_the_client_of_the_same_turn() {
        let space = space();
        let mut point = space.start();
        assert_eq!(point.target_clients, vec![3]);
        point.clients = 2;
        let scenario = space.scenario(&point).expect("a valid scenario");
        assert_eq!(scenario.nemesis.len(), 1, "the fault is kept");
        assert_eq!(scenario.nemesis[0].target.as_deref(), Some("c1"), "c3 of three holds third, as c1 of two");
        point.clients = 1;
        assert_eq!(space.scenario(&point).unwrap().nemesis[0].target.as_deref(), Some("c1"));
    }

    #[test]
    fn a_fault_moves_earlier_and_to_a_lower_client() {
        let space = space();
        let mut point = space.start();
        point.starts_ms[0] = 700;
        point.target_clients[0] = 2;
        let scenario = space.scenario(&point).expect("a valid scenario");
        assert_eq!(scenario.nemesis[0].at.ms(), 700);
        assert_eq!(scenario.nemesis[0].target.as_deref(), Some("c2"));
        let dims = space.dims(&point, false);
        assert!(dims.contains(&Dim::Start(0)) && dims.contains(&Dim::TargetClient(0)), "{dims:?}");
        point.target_clients[0] = 1;
        assert!(!space.dims(&point, false).contains(&Dim::TargetClient(0)), "c1 is as low as it goes");
    }
}
