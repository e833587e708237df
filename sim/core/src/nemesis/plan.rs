//! The fault plan of one run: the scenario's fixed `[[nemesis]]` timeline plus, with `[chaos]`,
//! faults drawn from the seed. The plan is a pure function of (scenario, seed), drawn before the
//! simulation starts with an RNG of its own, so `coordsim run --show-plan` can print it without
//! running and a user can paste it back as a fixed timeline.

use std::time::Duration;

use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};

use crate::clock::{ClockChange, NodeSchedule, RATE_ONE_PPM};
use crate::scenario::{
    Chaos, DurRange, FaultKindSpec, PartitionShape, ReplyKind, Scenario, ScenarioError, ScheduledFault, SignedDur,
    check, rate_in_bounds,
};

/// Who a fault hits; dynamic targets are resolved when the fault starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    Node(String),
    /// The server that is leader of the highest term at that moment (any server if none).
    Leader,
    /// A random server that is not the leader.
    Follower,
    AnyServer,
    AnyClient,
    AnyNode,
}

impl Target {
    fn parse(text: &str, nodes: &[String]) -> Option<Target> {
        Some(match text {
            "leader" => Target::Leader,
            "follower" => Target::Follower,
            "server" => Target::AnyServer,
            "client" => Target::AnyClient,
            "any" => Target::AnyNode,
            name if nodes.iter().any(|n| n == name) => Target::Node(name.to_string()),
            _ => return None,
        })
    }
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Target::Node(name) => name,
            Target::Leader => "leader",
            Target::Follower => "follower",
            Target::AnyServer => "server",
            Target::AnyClient => "client",
            Target::AnyNode => "any",
        })
    }
}

/// A checked fault.
#[derive(Clone, Debug, PartialEq)]
pub enum Fault {
    Pause {
        target: Target,
    },
    Crash {
        target: Target,
    },
    Partition {
        shape: Partition,
    },
    ClockJump {
        node: String,
        by_ns: i64,
    },
    ClockRate {
        node: String,
        rate_ppm: u64,
    },
    ClockStrobe {
        node: String,
        by_ns: i64,
        period: Duration,
    },
    PacketLoss {
        rate: f64,
    },
    Latency {
        min: Duration,
        max: Duration,
    },
    DropReplies {
        target: Target,
        replies: ReplyKind,
    },
    LinkDelay {
        from: String,
        to: String,
        delay: Duration,
    },
    /// Each of the server's disk syncs takes `fsync` (needs a time model).
    SlowDisk {
        target: Target,
        fsync: Duration,
    },
    /// The server's CPU costs are multiplied by `factor` (needs a time model).
    SlowCpu {
        target: Target,
        factor: f64,
    },
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Partition {
    Isolate(Target),
    CutFromServers(Target),
    MajorityMinority,
    Ring,
    Bridge,
    OneWay {
        from: Target,
        to: Target,
    },
    /// `None`: every client.
    Clients(Option<Vec<String>>),
    Servers,
}

/// One fault of the plan. `id` is its place in the plan (1-based), so that the history's fault
/// ids match the printed plan whatever order simultaneous faults start in.
#[derive(Clone, Debug, PartialEq)]
pub struct PlannedFault {
    pub id: u64,
    pub at: Duration,
    /// `None` for instantaneous faults (a clock jump).
    pub duration: Option<Duration>,
    pub fault: Fault,
    /// The entry as written (or drawn), for `--show-plan`.
    pub spec: ScheduledFault,
}

impl PlannedFault {
    pub fn end(&self) -> Duration {
        self.at + self.duration.unwrap_or_default()
    }
}

/// Checks every fault of the scenario (fixed and chaos); errors name `nemesis[i].field`.
pub fn validate(scenario: &Scenario) -> Result<(), ScenarioError> {
    for (i, spec) in scenario.nemesis.iter().enumerate() {
        typed(scenario, spec, &format!("nemesis[{i}]"))?;
    }
    if let Some(chaos) = &scenario.chaos {
        validate_chaos(scenario, chaos)?;
    }
    Ok(())
}

/// The plan of `seed`: the fixed faults, then the drawn ones, ordered by start time.
pub fn plan(scenario: &Scenario, seed: u64) -> Vec<PlannedFault> {
    let mut specs: Vec<ScheduledFault> = scenario.nemesis.clone();
    if let Some(chaos) = &scenario.chaos {
        specs.extend(draw(scenario, chaos, seed));
    }
    specs.sort_by_key(|spec| spec.at); // stable: fixed faults first at equal times
    specs
        .into_iter()
        .enumerate()
        .map(|(index, spec)| {
            let (fault, duration) =
                typed(scenario, &spec, "plan").expect("every planned fault was validated with the scenario");
            PlannedFault { id: index as u64 + 1, at: spec.at.0, duration, fault, spec }
        })
        .collect()
}

/// The plan as `[[nemesis]]` TOML entries, ready to paste into a scenario file.
pub fn to_toml(plan: &[PlannedFault]) -> String {
    #[derive(serde::Serialize)]
    struct Timeline<'a> {
        nemesis: Vec<&'a ScheduledFault>,
    }
    let timeline = Timeline { nemesis: plan.iter().map(|p| &p.spec).collect() };
    toml::to_string(&timeline).expect("a fault plan always serializes")
}

/// Each node's clocks over the run: its `[[clock]]` start plus every clock fault of the plan.
/// Jumps and strobes step the wall clock only; a rate change moves both (see [`NodeSchedule`]).
pub fn clock_schedule(scenario: &Scenario, plan: &[PlannedFault], node: &str) -> NodeSchedule {
    let (offset_ns, rate_ppm) =
        scenario.clock.iter().find(|c| c.node == node).map_or((0, RATE_ONE_PPM), |c| (c.offset.ns, rate_ppm(c.rate)));
    let mut changes = Vec::new();
    for planned in plan {
        let at_ns = planned.at.as_nanos() as u64;
        let end_ns = planned.end().as_nanos() as u64;
        match &planned.fault {
            Fault::ClockJump { node: n, by_ns } if n == node => {
                changes.push(ClockChange::Jump { at_ns, by_ns: *by_ns })
            }
            Fault::ClockRate { node: n, rate_ppm: rate } if n == node => {
                changes.push(ClockChange::Rate { at_ns, rate_ppm: *rate });
                changes.push(ClockChange::Rate { at_ns: end_ns, rate_ppm });
            }
            Fault::ClockStrobe { node: n, by_ns, period } if n == node => {
                // +by, back, +by, back, ... ending where it started.
                let period_ns = period.as_nanos() as u64;
                let mut t = at_ns;
                let mut ahead = false;
                while t < end_ns {
                    changes.push(ClockChange::Jump { at_ns: t, by_ns: if ahead { -by_ns } else { *by_ns } });
                    ahead = !ahead;
                    t += period_ns;
                }
                if ahead {
                    changes.push(ClockChange::Jump { at_ns: end_ns, by_ns: -by_ns });
                }
            }
            _ => {}
        }
    }
    NodeSchedule::new(offset_ns, rate_ppm, changes)
}

/// What a scenario file says of one fault kind: the fields it takes beside `at` and `for` (the
/// parser refuses any other), the fields as a reader sees them, and what the fault does.
#[derive(Clone, Copy, Debug)]
pub struct FaultDoc {
    pub kind: FaultKindSpec,
    /// The fields the parser accepts beside `at` and `for`.
    pub takes: &'static [&'static str],
    /// Every field, `for` included, in Markdown.
    pub fields: &'static str,
    /// What the fault does, in Markdown.
    pub effect: &'static str,
}

/// Every fault kind, in the order docs/scenario-files.md lists them: the one list the parser
/// checks a fault's fields against and the page's table of faults is drawn from
/// ([`fault_reference`]; a test holds the page to it).
pub const FAULT_DOCS: [FaultDoc; 12] = [
    FaultDoc {
        kind: FaultKindSpec::Pause,
        takes: &["target"],
        fields: "`target`, `for`",
        effect: "the node runs no code (GC pause); time and network go on",
    },
    FaultDoc {
        kind: FaultKindSpec::Crash,
        takes: &["target"],
        fields: "`target`, `for`",
        effect: "the node is killed and restarted at the end (servers keep their log, vote and snapshot; clients start a new session)",
    },
    FaultDoc {
        kind: FaultKindSpec::Partition,
        takes: &["shape", "target", "targets"],
        fields: "`shape`, `for`, `target`/`targets`",
        effect: "`isolate` (`target`), `cut-from-servers` (a server cut from the other servers; clients still reach it), `majority-minority`, `ring`, `bridge`, `one-way` (`targets = [from, to]`: from's messages to `to` are lost), `clients` (all, or `targets`, cut from every server), `servers` (cut from each other)",
    },
    FaultDoc {
        kind: FaultKindSpec::ClockJump,
        takes: &["target", "by"],
        fields: "`target`, `by`",
        effect: "the node's wall clock jumps by `by` (no `for`); its monotonic clock does not",
    },
    FaultDoc {
        kind: FaultKindSpec::ClockRate,
        takes: &["target", "rate"],
        fields: "`target`, `rate`, `for`",
        effect: "both of the node's clocks run at `rate`",
    },
    FaultDoc {
        kind: FaultKindSpec::ClockStrobe,
        takes: &["target", "by", "period"],
        fields: "`target`, `by`, `period`, `for`",
        effect: "the wall clock flips between +`by` and back every `period`",
    },
    FaultDoc {
        kind: FaultKindSpec::PacketLoss,
        takes: &["rate"],
        fields: "`rate`, `for`",
        effect: "each message is lost with probability `rate`",
    },
    FaultDoc {
        kind: FaultKindSpec::Latency,
        takes: &["min", "max"],
        fields: "`min`, `max`, `for`",
        effect: "every link's message latency is drawn from [`min`, `max`] in place of the run's own (its time model's, or 1–10 ms without one)",
    },
    FaultDoc {
        kind: FaultKindSpec::DropReplies,
        takes: &["target", "replies"],
        fields: "`target` (a client), `replies` (`write`, `keep-alive`, `create`, `all`), `for`",
        effect: "replies to the client are lost; the requests still take effect (`create`: only those to the writes that queue a lock entry)",
    },
    FaultDoc {
        kind: FaultKindSpec::LinkDelay,
        takes: &["from", "to", "delay"],
        fields: "`from`, `to`, `delay`, `for`",
        effect: "requests from `from` to `to` are held back by `delay`",
    },
    FaultDoc {
        kind: FaultKindSpec::SlowDisk,
        takes: &["target", "delay"],
        fields: "`target` (a server, `leader`, `follower`, `server`), `delay`, `for`",
        effect: "each of the server's disk syncs takes `delay` (at most 10 s); a sync that starts before the fault ends runs to its end. Needs `[timing]` (docs/time.md): on the etcd profile the raft loop waits for its syncs (no heartbeats meanwhile), on ZooKeeper's the sync thread is apart from the quorum's pings",
    },
    FaultDoc {
        kind: FaultKindSpec::SlowCpu,
        takes: &["target", "rate"],
        fields: "`target` (a server, ...), `rate` (1..1000), `for`",
        effect: "the server's CPU costs (requests, Raft messages, applies) are multiplied by `rate`. Needs `[timing]`",
    },
];

impl FaultDoc {
    /// The entry of `kind`.
    pub fn of(kind: FaultKindSpec) -> &'static FaultDoc {
        FAULT_DOCS.iter().find(|doc| doc.kind == kind).expect("FAULT_DOCS lists every fault kind")
    }
}

/// docs/scenario-files.md's table of fault kinds, drawn from [`FAULT_DOCS`] (`coordsim explain
/// --faults` prints it).
pub fn fault_reference() -> String {
    let mut table = String::from("| kind | fields | effect |\n|---|---|---|\n");
    for doc in &FAULT_DOCS {
        table.push_str(&format!("| `{}` | {} | {} |\n", doc.kind.name(), doc.fields, doc.effect));
    }
    table
}

/// Local seconds per true second → parts per million.
pub fn rate_ppm(rate: f64) -> u64 {
    (rate * RATE_ONE_PPM as f64).round() as u64
}

/// Longest strobe or fault: a limit on everything.
const STROBE_PERIOD_MIN: Duration = Duration::from_millis(10);

fn typed(scenario: &Scenario, spec: &ScheduledFault, path: &str) -> Result<(Fault, Option<Duration>), ScenarioError> {
    let field = |name: &str| format!("{path}.{name}");
    let servers = scenario.server_names();
    let clients = scenario.client_names();
    let nodes: Vec<String> = servers.iter().chain(&clients).cloned().collect();
    let hint = scenario.node_names_hint();
    check(spec.at.0 < scenario.duration.0, &field("at"), || {
        format!("{} is not before the end of the run ({})", spec.at, scenario.duration)
    })?;

    let kind = spec.kind;
    let instantaneous = kind == FaultKindSpec::ClockJump;
    let duration = match (spec.duration, instantaneous) {
        (Some(_), true) => return Err(err(&field("for"), "a clock jump is instantaneous: remove `for`")),
        (None, true) => None,
        (None, false) => return Err(err(&field("for"), "missing: how long the fault lasts")),
        (Some(d), false) => {
            check(!d.0.is_zero(), &field("for"), || "must be above 0".into())?;
            Some(d.0)
        }
    };

    // Which optional fields each kind takes; anything else set is a mistake worth reporting.
    let allowed = FaultDoc::of(kind).takes;
    for (name, set) in [
        ("target", spec.target.is_some()),
        ("shape", spec.shape.is_some()),
        ("targets", !spec.targets.is_empty()),
        ("by", spec.by.is_some()),
        ("rate", spec.rate.is_some()),
        ("period", spec.period.is_some()),
        ("min", spec.min.is_some()),
        ("max", spec.max.is_some()),
        ("from", spec.from.is_some()),
        ("to", spec.to.is_some()),
        ("delay", spec.delay.is_some()),
        ("replies", spec.replies.is_some()),
    ] {
        check(!set || allowed.contains(&name), &field(name), || format!("does not apply to a {} fault", kind.name()))?;
    }

    let target = |required: bool| -> Result<Option<Target>, ScenarioError> {
        match &spec.target {
            None if required => Err(err(&field("target"), "missing: which node the fault hits")),
            None => Ok(None),
            Some(text) => Target::parse(text, &nodes).map(Some).ok_or_else(|| {
                err(
                    &field("target"),
                    &format!("unknown node {text:?} ({hint}; or leader, follower, server, client, any)"),
                )
            }),
        }
    };
    // Clock faults change a schedule fixed before the run: they need a named node.
    let clock_node = || -> Result<String, ScenarioError> {
        match target(true)? {
            Some(Target::Node(name)) => Ok(name),
            _ => Err(err(&field("target"), "a clock fault needs a node name (the plan is fixed before the run)")),
        }
    };
    let by = || spec.by.ok_or_else(|| err(&field("by"), "missing: how far the clock moves, e.g. \"+5s\""));

    let fault = match kind {
        FaultKindSpec::Pause => Fault::Pause { target: target(true)?.expect("required") },
        FaultKindSpec::Crash => Fault::Crash { target: target(true)?.expect("required") },
        FaultKindSpec::Partition => {
            let shape = spec.shape.ok_or_else(|| err(&field("shape"), "missing: the partition's shape"))?;
            Fault::Partition { shape: partition(spec, shape, &nodes, &clients, &hint, &field, target(false)?)? }
        }
        FaultKindSpec::ClockJump => {
            let by = by()?;
            check(by.ns != 0, &field("by"), || "a jump of 0 changes nothing".into())?;
            Fault::ClockJump { node: clock_node()?, by_ns: by.ns }
        }
        FaultKindSpec::ClockRate => {
            let rate = spec.rate.ok_or_else(|| err(&field("rate"), "missing: the clock's rate, e.g. 0.5"))?;
            check(rate_in_bounds(rate), &field("rate"), || format!("{rate} must be between 0.1 and 10"))?;
            Fault::ClockRate { node: clock_node()?, rate_ppm: rate_ppm(rate) }
        }
        FaultKindSpec::ClockStrobe => {
            let by = by()?;
            let period = spec.period.ok_or_else(|| err(&field("period"), "missing: how often the clock flips"))?;
            check(period.0 >= STROBE_PERIOD_MIN, &field("period"), || {
                format!("{period} is below the minimum strobe period 10ms")
            })?;
            Fault::ClockStrobe { node: clock_node()?, by_ns: by.ns, period: period.0 }
        }
        FaultKindSpec::PacketLoss => {
            let rate = spec.rate.ok_or_else(|| err(&field("rate"), "missing: the loss probability, e.g. 0.2"))?;
            check(rate.is_finite() && (0.0..=1.0).contains(&rate), &field("rate"), || {
                format!("{rate} must be between 0 and 1")
            })?;
            Fault::PacketLoss { rate }
        }
        FaultKindSpec::Latency => {
            let min = spec.min.ok_or_else(|| err(&field("min"), "missing: the smallest latency"))?;
            let max = spec.max.ok_or_else(|| err(&field("max"), "missing: the largest latency"))?;
            check(min <= max && !max.0.is_zero(), &field("max"), || {
                format!("{max} must be above 0 and at least min ({min})")
            })?;
            Fault::Latency { min: min.0, max: max.0 }
        }
        FaultKindSpec::DropReplies => {
            let target = target(true)?.expect("required");
            check(
                !matches!(&target, Target::Node(n) if servers.contains(n))
                    && !matches!(target, Target::Leader | Target::Follower | Target::AnyServer),
                &field("target"),
                || "replies are dropped on their way to a client: the target must be a client".into(),
            )?;
            Fault::DropReplies { target, replies: spec.replies.unwrap_or(ReplyKind::Write) }
        }
        FaultKindSpec::LinkDelay => {
            let from = spec.from.clone().ok_or_else(|| err(&field("from"), "missing: the sending node"))?;
            let to = spec.to.clone().ok_or_else(|| err(&field("to"), "missing: the receiving node"))?;
            for (name, value) in [("from", &from), ("to", &to)] {
                check(nodes.contains(value), &field(name), || format!("unknown node {value:?} ({hint})"))?;
            }
            check(from != to, &field("to"), || "a link joins two different nodes".into())?;
            let delay = spec.delay.ok_or_else(|| err(&field("delay"), "missing: how long messages are held"))?;
            check(!delay.0.is_zero(), &field("delay"), || "must be above 0".into())?;
            Fault::LinkDelay { from, to, delay: delay.0 }
        }
        FaultKindSpec::SlowDisk | FaultKindSpec::SlowCpu => {
            check(scenario.is_timed(), &field("kind"), || {
                format!(
                    "a {} fault slows what the time model charges, which [timing] profile = \"none\" turns off",
                    kind.name()
                )
            })?;
            let target = target(true)?.expect("required");
            check(
                matches!(&target, Target::Node(n) if servers.contains(n))
                    || matches!(target, Target::Leader | Target::Follower | Target::AnyServer),
                &field("target"),
                || "a disk or a CPU of a server: the target must be a server, leader, follower or server".into(),
            )?;
            if kind == FaultKindSpec::SlowDisk {
                let delay = spec.delay.ok_or_else(|| err(&field("delay"), "missing: how long each fsync takes"))?;
                check(!delay.0.is_zero() && delay.0 <= crate::timing::DIST_MAX, &field("delay"), || {
                    format!("{delay} must be above 0 and at most {}", crate::scenario::Dur(crate::timing::DIST_MAX))
                })?;
                Fault::SlowDisk { target, fsync: delay.0 }
            } else {
                let rate = spec.rate.ok_or_else(|| err(&field("rate"), "missing: how many times slower, e.g. 20"))?;
                check(rate.is_finite() && (1.0..=1000.0).contains(&rate), &field("rate"), || {
                    format!("{rate} must be between 1 and 1000")
                })?;
                Fault::SlowCpu { target, factor: rate }
            }
        }
    };
    Ok((fault, duration))
}

fn partition(
    spec: &ScheduledFault,
    shape: PartitionShape,
    nodes: &[String],
    clients: &[String],
    hint: &str,
    field: &dyn Fn(&str) -> String,
    target: Option<Target>,
) -> Result<Partition, ScenarioError> {
    let targets: Result<Vec<Target>, ScenarioError> = spec
        .targets
        .iter()
        .map(|t| Target::parse(t, nodes).ok_or_else(|| err(&field("targets"), &format!("unknown node {t:?} ({hint})"))))
        .collect();
    let targets = targets?;
    let needs_no_target = |name: &str| {
        check(target.is_none(), &field("target"), || format!("a {name} partition takes no target"))?;
        check(targets.is_empty(), &field("targets"), || format!("a {name} partition takes no targets"))
    };
    Ok(match shape {
        PartitionShape::Isolate => {
            check(targets.is_empty(), &field("targets"), || "isolate takes one `target`".into())?;
            Partition::Isolate(target.ok_or_else(|| err(&field("target"), "missing: the node to isolate"))?)
        }
        PartitionShape::CutFromServers => {
            check(targets.is_empty(), &field("targets"), || "cut-from-servers takes one `target`".into())?;
            let target = target.ok_or_else(|| err(&field("target"), "missing: the server to cut off"))?;
            let is_client = matches!(&target, Target::Node(n) if clients.contains(n)) || target == Target::AnyClient;
            check(!is_client, &field("target"), || "cut-from-servers takes a server".into())?;
            Partition::CutFromServers(target)
        }
        PartitionShape::MajorityMinority => {
            needs_no_target("majority-minority")?;
            Partition::MajorityMinority
        }
        PartitionShape::Ring => {
            needs_no_target("ring")?;
            Partition::Ring
        }
        PartitionShape::Bridge => {
            needs_no_target("bridge")?;
            Partition::Bridge
        }
        PartitionShape::Servers => {
            needs_no_target("servers")?;
            Partition::Servers
        }
        PartitionShape::OneWay => {
            check(target.is_none(), &field("target"), || "one-way takes `targets = [from, to]`".into())?;
            match targets.as_slice() {
                [from, to] if from != to => Partition::OneWay { from: from.clone(), to: to.clone() },
                _ => return Err(err(&field("targets"), "one-way takes two different nodes: [from, to]")),
            }
        }
        PartitionShape::Clients => {
            check(target.is_none(), &field("target"), || "a clients partition takes `targets` (default: all)".into())?;
            if targets.is_empty() {
                Partition::Clients(None)
            } else {
                let names: Vec<String> = spec.targets.clone();
                check(names.iter().all(|n| clients.contains(n)), &field("targets"), || {
                    "a clients partition takes client names".into()
                })?;
                Partition::Clients(Some(names))
            }
        }
    })
}

fn validate_chaos(scenario: &Scenario, chaos: &Chaos) -> Result<(), ScenarioError> {
    check(!chaos.kinds.is_empty(), "chaos.kinds", || "name at least one fault kind".into())?;
    check(chaos.start < chaos.stop, "chaos.stop", || format!("{} must be after start ({})", chaos.stop, chaos.start))?;
    check(chaos.stop <= scenario.duration, "chaos.stop", || {
        format!("{} is after the end of the run ({})", chaos.stop, scenario.duration)
    })?;
    check(!chaos.gap.min.0.is_zero(), "chaos.gap", || "the smallest gap must be above 0".into())?;
    check(!chaos.length.min.0.is_zero(), "chaos.length", || "the shortest fault must be above 0".into())?;
    for shape in &chaos.shapes {
        let drawable = !matches!(shape, PartitionShape::OneWay | PartitionShape::CutFromServers);
        check(drawable, "chaos.shapes", || {
            "one-way and cut-from-servers partitions are not drawn: use isolate, majority-minority, ring, bridge, \
             clients or servers"
                .into()
        })?;
    }
    let nodes: Vec<String> = scenario.server_names().into_iter().chain(scenario.client_names()).collect();
    for target in &chaos.targets {
        check(Target::parse(target, &nodes).is_some(), "chaos.targets", || {
            format!(
                "unknown node {target:?} ({}; or leader, follower, server, client, any)",
                scenario.node_names_hint()
            )
        })?;
    }
    // Every drawn fault must be valid: check one of each kind against this scenario.
    for kind in &chaos.kinds {
        let spec =
            chaos_fault(scenario, chaos, *kind, chaos.start.0, chaos.length.min.0, &mut SmallRng::seed_from_u64(0));
        typed(scenario, &spec, "chaos").map_err(|e| err("chaos.kinds", &format!("{}: {}", kind.name(), e.message)))?;
    }
    Ok(())
}

/// The faults `[chaos]` draws for `seed`.
fn draw(scenario: &Scenario, chaos: &Chaos, seed: u64) -> Vec<ScheduledFault> {
    // Independent of the simulation's RNG: the plan must not depend on how the run interleaves.
    let mut rng = SmallRng::seed_from_u64(seed ^ 0x6e65_6d65_7369_7321);
    let mut kinds = chaos.kinds.clone();
    kinds.sort();
    kinds.dedup();
    if chaos.swarm && kinds.len() > 1 {
        let enabled: Vec<FaultKindSpec> = kinds.iter().copied().filter(|_| rng.random_bool(0.5)).collect();
        kinds = if enabled.is_empty() { vec![kinds[rng.random_range(0..kinds.len())]] } else { enabled };
    }
    let mut faults = Vec::new();
    let mut at = chaos.start.0;
    loop {
        at += between(&mut rng, chaos.gap);
        if at >= chaos.stop.0 {
            break;
        }
        let kind = kinds[rng.random_range(0..kinds.len())];
        let length = between(&mut rng, chaos.length).min(chaos.stop.0 - at);
        if length.is_zero() {
            break;
        }
        faults.push(chaos_fault(scenario, chaos, kind, at, length, &mut rng));
    }
    faults
}

fn between(rng: &mut SmallRng, range: DurRange) -> Duration {
    // Whole milliseconds: a printed plan reads "3868ms", not "3868503731ns".
    let (min, max) = (range.min.0.as_millis() as u64, range.max.0.as_millis() as u64);
    Duration::from_millis(if min >= max { min } else { rng.random_range(min..=max) })
}

/// One drawn fault of `kind`, with parameters in the ranges that make each kind bite without
/// stopping the run for good.
fn chaos_fault(
    scenario: &Scenario,
    chaos: &Chaos,
    kind: FaultKindSpec,
    at: Duration,
    length: Duration,
    rng: &mut SmallRng,
) -> ScheduledFault {
    use crate::scenario::Dur;
    let pick = |rng: &mut SmallRng, options: &[&str]| options[rng.random_range(0..options.len())].to_string();
    let servers = scenario.server_names();
    let nodes: Vec<String> = servers.iter().chain(&scenario.client_names()).cloned().collect();
    let any_node = |rng: &mut SmallRng| nodes[rng.random_range(0..nodes.len())].clone();
    let mut spec = ScheduledFault { at: Dur(at), duration: Some(Dur(length)), kind, ..ScheduledFault::default() };
    // `[chaos] targets` replaces the default victims (drawn the same way, so that plans of
    // scenarios without it stay as they were).
    let chosen: Vec<&str> = chaos.targets.iter().map(String::as_str).collect();
    // Independent servers have no leader: a drawn leader or follower is any server (the same
    // draws, so a raft cluster's plans are unchanged).
    let independent = scenario.cluster.kind == crate::scenario::ClusterKind::Independent;
    let victims = |default: &'static [&'static str]| {
        let list = if chosen.is_empty() { default.to_vec() } else { chosen.clone() };
        list.into_iter()
            .map(|v| if independent && matches!(v, "leader" | "follower") { "server" } else { v })
            .collect::<Vec<_>>()
    };
    match kind {
        FaultKindSpec::Pause | FaultKindSpec::Crash => {
            spec.target = Some(pick(rng, &victims(&["leader", "follower", "server", "client"])));
        }
        FaultKindSpec::Partition => {
            let default = [
                PartitionShape::Isolate,
                PartitionShape::MajorityMinority,
                PartitionShape::Ring,
                PartitionShape::Bridge,
                PartitionShape::Clients,
                PartitionShape::Servers,
            ];
            let shapes: &[PartitionShape] = if chaos.shapes.is_empty() { &default } else { &chaos.shapes };
            let shape = shapes[rng.random_range(0..shapes.len())];
            spec.shape = Some(shape);
            if shape == PartitionShape::Isolate {
                spec.target = Some(pick(rng, &victims(&["leader", "follower", "client"])));
            }
        }
        FaultKindSpec::ClockJump => {
            spec.duration = None;
            spec.target = Some(any_node(rng));
            let ms = rng.random_range(100..=5_000i64) * if rng.random_bool(0.5) { 1 } else { -1 };
            spec.by = Some(SignedDur { ns: ms * 1_000_000 });
        }
        FaultKindSpec::ClockRate => {
            spec.target = Some(any_node(rng));
            let rates = [0.5, 0.7, 0.9, 1.1, 1.5, 2.0];
            spec.rate = Some(rates[rng.random_range(0..rates.len())]);
        }
        FaultKindSpec::ClockStrobe => {
            spec.target = Some(any_node(rng));
            spec.by = Some(SignedDur { ns: rng.random_range(100..=2_000i64) * 1_000_000 });
            spec.period = Some(Dur(Duration::from_millis(rng.random_range(50..=1_000))));
        }
        FaultKindSpec::PacketLoss => spec.rate = Some([0.05, 0.1, 0.2, 0.4][rng.random_range(0..4)]),
        FaultKindSpec::Latency => {
            let max = rng.random_range(20..=500u64);
            spec.min = Some(Dur(Duration::from_millis(max / 4)));
            spec.max = Some(Dur(Duration::from_millis(max)));
        }
        FaultKindSpec::DropReplies => {
            spec.target = Some("client".to_string());
            let default = [ReplyKind::Write, ReplyKind::KeepAlive, ReplyKind::All];
            let kinds: &[ReplyKind] = if chaos.replies.is_empty() { &default } else { &chaos.replies };
            spec.replies = Some(kinds[rng.random_range(0..kinds.len())]);
        }
        FaultKindSpec::LinkDelay => {
            let from = any_node(rng);
            let others: Vec<&String> = servers.iter().filter(|s| **s != from).collect();
            let to = if others.is_empty() {
                nodes.iter().find(|n| **n != from).cloned()
            } else {
                Some(others[rng.random_range(0..others.len())].clone())
            };
            spec.from = Some(from);
            spec.to = to;
            spec.delay = Some(Dur(Duration::from_millis(rng.random_range(50..=2_000))));
        }
        FaultKindSpec::SlowDisk => {
            spec.target = Some(pick(rng, &victims(&["leader", "follower", "server"])));
            spec.delay = Some(Dur(Duration::from_millis(rng.random_range(100..=3_000))));
        }
        FaultKindSpec::SlowCpu => {
            spec.target = Some(pick(rng, &victims(&["leader", "follower", "server"])));
            spec.rate = Some([5.0, 10.0, 20.0, 50.0][rng.random_range(0..4)]);
        }
    }
    spec
}

fn err(field: &str, message: &str) -> ScenarioError {
    ScenarioError { field: field.to_string(), message: message.to_string() }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The markers around the generated table in docs/scenario-files.md.
    const BEGIN: &str = "<!-- fault kinds: drawn from FAULT_DOCS (sim/core/src/nemesis/plan.rs); `coordsim explain --faults` prints it -->\n";
    const END: &str = "<!-- end of fault kinds -->";

    #[test]
    fn every_fault_kind_is_documented_once_with_the_fields_it_takes() {
        for doc in &FAULT_DOCS {
            // A new kind fails to compile here until it is listed.
            match doc.kind {
                FaultKindSpec::Pause
                | FaultKindSpec::Crash
                | FaultKindSpec::Partition
                | FaultKindSpec::ClockJump
                | FaultKindSpec::ClockRate
                | FaultKindSpec::ClockStrobe
                | FaultKindSpec::PacketLoss
                | FaultKindSpec::Latency
                | FaultKindSpec::DropReplies
                | FaultKindSpec::LinkDelay
                | FaultKindSpec::SlowDisk
                | FaultKindSpec::SlowCpu => {}
            }
            assert_eq!(FAULT_DOCS.iter().filter(|d| d.kind == doc.kind).count(), 1, "{:?} once", doc.kind);
            for field in doc.takes {
                assert!(doc.fields.contains(&format!("`{field}`")), "{}: `{field}` is shown", doc.kind.name());
            }
            let instantaneous = doc.kind == FaultKindSpec::ClockJump;
            assert_eq!(
                doc.fields.contains("`for`"),
                !instantaneous,
                "{}: `for` shown unless instantaneous",
                doc.kind.name()
            );
        }
    }

    #[test]
    fn the_scenario_file_page_holds_the_fault_reference() {
        let page = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/scenario-files.md"))
            .expect("docs/scenario-files.md");
        let start = page.find(BEGIN).expect("the page marks where the fault table begins") + BEGIN.len();
        let end = page[start..].find(END).expect("and where it ends") + start;
        assert!(
            page[start..end] == fault_reference(),
            "docs/scenario-files.md's fault table is stale: paste `cargo coordsim explain --faults` between its markers"
        );
    }
}
