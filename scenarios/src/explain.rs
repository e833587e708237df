//! `coordsim list` and `coordsim explain <scenario>`: what a scenario teaches, what it runs, and
//! which verdicts it expects of which properties.

use std::process::ExitCode;

use coordsim_checker::properties::Property;
use coordsim_sim::resource::ResourceMode;
use coordsim_sim::scenario::{Expectation, KeepAliveMode, KvApi, Scenario, ZkReads};

use crate::library;
use crate::load::{self, InputError};
use crate::switches;

/// The properties a scenario's workload gives something to judge; the others pass with nothing
/// to judge.
pub fn exercised(scenario: &Scenario) -> Vec<Property> {
    let lock = [
        Property::MutualExclusion,
        Property::Fencing,
        Property::SingleHolder,
        Property::GrantLiveLease,
        Property::LeaseSafety,
        Property::LeaseLiveness,
        Property::Progress,
        Property::Herd,
        Property::Fairness,
        Property::SpuriousExpiry,
        Property::DualOwnership,
    ];
    match &scenario.kv {
        None => lock.to_vec(),
        Some(kv) => {
            let mut properties = vec![Property::Linearizable, Property::Durability];
            if kv.watchers > 0 {
                properties.push(Property::Watch);
            }
            properties
        }
    }
}

/// One line: which properties the scenario expects to fail and which it does not judge; the rest
/// must pass. E.g. `fail: mutual_exclusion, fencing; any: single_holder; others pass`.
pub fn expected_line(scenario: &Scenario) -> String {
    let with = |wanted: Expectation| -> Vec<&'static str> {
        Property::ALL
            .into_iter()
            .filter(|p| !p.is_informational() && scenario.expectation(*p) == wanted)
            .map(Property::id)
            .collect()
    };
    let mut parts = Vec::new();
    for (label, properties) in [("fail", with(Expectation::Fail)), ("any", with(Expectation::Any))] {
        if !properties.is_empty() {
            parts.push(format!("{label}: {}", properties.join(", ")));
        }
    }
    parts.push(if parts.is_empty() { "all pass".to_string() } else { "others pass".to_string() });
    parts.join("; ")
}

/// `coordsim list`: name, one line, expected verdicts; one scenario per line.
pub fn list() -> ExitCode {
    let width = library::all().map(|(name, _)| name.len()).max().unwrap_or(0);
    for (name, text) in library::all() {
        match load::parse(&library::path_of(name), text) {
            Ok(scenario) => {
                crate::outln!("{name:<width$}  {}  [{}]", scenario.summary, expected_line(&scenario))
            }
            Err(error) => crate::outln!("{name:<width$}  (broken: {error})"),
        }
    }
    ExitCode::SUCCESS
}

/// `coordsim explain <scenario>`: the teaching text, the set-up, the faults, the bugs switched on,
/// and per property what the scenario expects and whether its workload exercises it.
pub fn explain(arg: &str) -> Result<ExitCode, InputError> {
    let loaded = load::resolve(arg)?;
    for line in explanation(&loaded.scenario, &loaded.source) {
        crate::outln!("{line}");
    }
    Ok(ExitCode::SUCCESS)
}

/// The lines `coordsim explain` prints.
pub fn explanation(scenario: &Scenario, source: &str) -> Vec<String> {
    let mut lines = vec![format!("{} ({source})", scenario.name), format!("  {}", scenario.summary), String::new()];
    lines.extend(
        scenario.description.trim_end().lines().map(|l| if l.is_empty() { String::new() } else { format!("  {l}") }),
    );
    lines.push(String::new());
    lines.push("Set-up:".to_string());
    lines.extend(setup(scenario).into_iter().map(|l| format!("  {l}")));
    lines.push(String::new());
    lines.push("Expected verdicts:".to_string());
    let exercised = exercised(scenario);
    for property in Property::ALL {
        let expected = if property.is_informational() {
            "reported".to_string()
        } else {
            scenario.expectation(property).to_string()
        };
        let note = if exercised.contains(&property) { "" } else { "  (nothing to judge in this workload: passes)" };
        lines.push(format!("  {:<18} {expected}{note}", property.id()));
    }
    lines.push(String::new());
    lines.push(format!("Run it: cargo coordsim run {} --seed 1", scenario.name));
    if let Some(switch) = switches::all().into_iter().find(|s| switches::swarm_scenario(s) == scenario.name) {
        lines.push(format!(
            "Planted bug: `{switch}`; measure how often this scenario finds it: cargo coordsim sweep --bugs {switch} --seeds 1..200"
        ));
    }
    lines
}

fn setup(scenario: &Scenario) -> Vec<String> {
    let mut lines = Vec::new();
    let clients = &scenario.clients;
    lines.push(format!(
        "{} servers ({}), {} clients, {} of simulated time",
        scenario.cluster.servers,
        if scenario.cluster.fsync { "fsync on" } else { "no fsync: a crash loses unsynced writes" },
        clients.count,
        scenario.duration
    ));
    if let Some((lock, resource)) = scenario.lock_spec() {
        let recipe = serde_json::to_value(lock.recipe).ok().and_then(|v| v.as_str().map(str::to_string));
        let mut line = format!(
            "lock workload: recipe {}, lease TTL {}, hold {} with {} writes, think {}",
            recipe.unwrap_or_default(),
            lock.ttl,
            clients.hold,
            clients.writes_per_hold,
            clients.think
        );
        if let Some(deadline) = lock.client_deadline {
            line.push_str(&format!(", client deadline {deadline}"));
        }
        if let Some(backoff) = lock.backoff {
            line.push_str(&format!(", backoff {backoff}"));
        }
        if !lock.lease {
            line.push_str(", lock key put without a lease (a crashed holder's key stays)");
        }
        if !lock.ephemeral {
            line.push_str(", persistent lock nodes (a crashed holder's node stays)");
        }
        if lock.keepalive == KeepAliveMode::BetweenHolds {
            line.push_str(", keepalives only between holds (none while holding)");
        }
        lines.push(line);
        lines.push(format!(
            "resource: {}",
            match resource.mode {
                ResourceMode::Fenced => "fenced (rejects tokens below the highest accepted)",
                ResourceMode::Unfenced => "unfenced (accepts every write)",
            }
        ));
    }
    if let Some(observers) = &scenario.observers {
        lines.push(format!(
            "observers: {} watches of the lock's keys on one host{}",
            observers.count,
            if observers.proxy {
                ", through a coalescing proxy (one watch on the servers)"
            } else {
                ", each a watch on the servers"
            }
        ));
    }
    if let Some(cost) = scenario.cluster.watch_event_cost {
        lines.push(format!("watch notifications cost the servers {cost} each (watcher x event), in the apply loop"));
    }
    if let Some(kv) = &scenario.kv {
        let api = match kv.api {
            KvApi::Etcd => "etcd API".to_string(),
            KvApi::Zookeeper => match kv.zk_reads() {
                ZkReads::Local => "ZooKeeper API, getData served by the connected server".to_string(),
                ZkReads::Sync => "ZooKeeper API, sync before each getData".to_string(),
            },
        };
        lines.push(format!(
            "key-value workload ({api}): {} keys, an operation every {} (reads {}, cas {}, deletes {}, read-modify-writes {} with {} of work between read and write), {} readers, {} watchers, compaction every {}",
            kv.keys,
            kv.interval,
            kv.reads,
            kv.cas,
            kv.deletes,
            kv.updates,
            kv.work,
            kv.readers,
            kv.watchers,
            kv.compact_every
        ));
        if kv.watch_start == coordsim_sim::scenario::WatchStart::Now {
            lines.push("the watchers' first streams start from now (etcd's start_revision 0)".to_string());
        }
    }
    for clock in &scenario.clock {
        lines.push(format!("clock of {}: offset {}, rate {}", clock.node, clock.offset, clock.rate));
    }
    for fault in &scenario.nemesis {
        let target = fault.target.as_deref().map(|t| format!(" {t}")).unwrap_or_default();
        let shape = fault.shape.and_then(|s| serde_json::to_value(s).ok()).and_then(|v| v.as_str().map(str::to_string));
        let duration = fault.duration.map(|d| format!(" for {d}")).unwrap_or_default();
        lines.push(format!(
            "fault at {}: {}{}{target}{duration}",
            fault.at,
            fault.kind.name(),
            shape.map(|s| format!(" ({s})")).unwrap_or_default()
        ));
    }
    if let Some(chaos) = &scenario.chaos {
        let kinds: Vec<&str> = chaos.kinds.iter().map(|k| k.name()).collect();
        let mut line = format!(
            "random faults from {} to {}: {} (every {}, lasting {}{})",
            chaos.start,
            chaos.stop,
            kinds.join(", "),
            chaos.gap,
            chaos.length,
            if chaos.swarm { "; swarm: each seed enables a random subset" } else { "" }
        );
        if !chaos.targets.is_empty() {
            line.push_str(&format!("; hitting {}", chaos.targets.join(", ")));
        }
        lines.push(line);
        lines.push(format!("print a seed's plan: cargo coordsim run {} --seed N --show-plan", scenario.name));
    }
    let bugs = switches::enabled(&scenario.bugs);
    lines.push(if bugs.is_empty() {
        "bugs: none (the fixed system)".to_string()
    } else {
        format!("bugs on: {}", bugs.join(", "))
    });
    lines
}
