//! The simulation harness: runs one scenario for one seed in a fresh madsim runtime and returns
//! the recorded history.
//!
//! Determinism: everything inside the run — latencies, election timeouts, task interleaving —
//! comes from madsim's RNG seeded with `seed`. Call [`run`] on a thread that has not run a
//! simulation before (madsim's `HashMap` seeding and task ids are per thread): the CLI starts a
//! fresh thread per seed.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use coordsim_checker::history::{History, NodeRole};
use madsim::runtime::{Handle, Runtime};

use crate::clock::Clock;
use crate::nemesis;
use crate::raft::Durable;
use crate::recorder::Recorder;
use crate::resource::{RESOURCE_PORT, serve_resource};
use crate::scenario::Scenario;
use crate::server::{RaftTiming, SERVER_PORT, ServerSpec, serve};
use crate::workload::{ClientPlan, run_client};

/// The name of the protected resource node.
pub const RESOURCE: &str = "resource";

/// Runs `scenario` with `seed`. The scenario must have passed `Scenario::validate`.
pub fn run(scenario: &Scenario, seed: u64) -> History {
    let runtime = Runtime::with_seed_and_config(seed, madsim::Config::default());
    runtime.block_on(simulate(scenario.clone()))
}

fn server_addr(id: u64) -> SocketAddr {
    SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 0, 0, id as u8)), SERVER_PORT)
}

fn client_addr(index: usize) -> SocketAddr {
    SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 0, 1, index as u8)), 7000)
}

fn resource_addr() -> SocketAddr {
    SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 0, 2, 1)), RESOURCE_PORT)
}

/// The body of one run, inside a madsim runtime (whose seed it records). Public for madsim's
/// `Runtime::check_determinism`, which runs it twice and compares every random draw.
pub async fn simulate(scenario: Scenario) -> History {
    let handle = Handle::current();
    let seed = handle.seed();
    let epoch = Instant::now();
    let recorder = Recorder::new(&scenario.name, seed, epoch);
    let mut nodes = BTreeMap::new();

    let members: BTreeMap<u64, SocketAddr> = (1..=scenario.cluster.servers as u64)
        .map(|id| (id, server_addr(id)))
        .collect();
    for &id in members.keys() {
        let spec = ServerSpec {
            id,
            name: format!("s{id}"),
            members: members.clone(),
            bootstrap: id == 1,
            raft: RaftTiming::default(),
        };
        // Outside the node's tasks, so that it would survive a crash of the node.
        let durable = Arc::new(Mutex::new(Durable::default()));
        let (clock, rec) = (Clock::new(epoch), recorder.clone());
        recorder.add_node(&spec.name, NodeRole::Server);
        let node = handle
            .create_node()
            .name(spec.name.clone())
            .ip(server_addr(id).ip())
            .init(move || serve(spec.clone(), durable.clone(), clock.clone(), rec.clone()))
            .build();
        nodes.insert(format!("s{id}"), node.id());
    }

    let (clock, rec) = (Clock::new(epoch), recorder.clone());
    let mode = scenario.resource.mode;
    recorder.add_node(RESOURCE, NodeRole::Resource);
    let resource = handle
        .create_node()
        .name(RESOURCE)
        .ip(resource_addr().ip())
        .init(move || serve_resource(resource_addr(), RESOURCE.to_string(), mode, rec.clone()))
        .build();
    nodes.insert(RESOURCE.to_string(), resource.id());

    let servers: Vec<(u64, SocketAddr)> = members.iter().map(|(id, addr)| (*id, *addr)).collect();
    for (index, name) in scenario.client_names().into_iter().enumerate() {
        let plan = ClientPlan {
            name: name.clone(),
            addr: client_addr(index + 1),
            servers: servers.clone(),
            lock_name: scenario.lock.name.clone(),
            ttl_ms: scenario.lock.ttl.ms(),
            start: scenario.clients.start.0 + scenario.clients.stagger.0 * index as u32,
            hold: scenario.clients.hold.0,
            writes_per_hold: scenario.clients.writes_per_hold,
            think: scenario.clients.think.0,
            resource: (RESOURCE.to_string(), resource_addr()),
        };
        recorder.add_node(&name, NodeRole::Client);
        let (clock, rec) = (clock.clone(), recorder.clone());
        let node = handle
            .create_node()
            .name(name.clone())
            .ip(plan.addr.ip())
            .init(move || run_client(plan.clone(), clock.clone(), rec.clone()))
            .build();
        nodes.insert(name, node.id());
    }

    let faults = nemesis::plan(&scenario.nemesis, &nodes);
    madsim::task::spawn(nemesis::run(faults, epoch, recorder.clone()));

    madsim::time::sleep_until(epoch + scenario.duration.0).await;
    let history = recorder.finish();
    // Tasks that wait on each other (a watch long-poll holds the server that holds the Notify
    // that holds the poll's waker) form cycles that outlive the runtime and leak every seed's
    // state. Killing the nodes drops their tasks; the executor needs one more tick for that.
    for node in nodes.into_values() {
        handle.kill(node);
    }
    madsim::time::sleep(std::time::Duration::from_millis(1)).await;
    history
}
