//! The simulation harness: runs one scenario for one seed in a fresh madsim runtime and returns
//! the recorded history.
//!
//! Determinism: everything inside the run — latencies, election timeouts, task interleaving —
//! comes from madsim's RNG seeded with `seed`. Call [`run`] on a thread that has not run a
//! simulation before (madsim's `HashMap` seeding and task ids are per thread): the CLI starts a
//! fresh thread per seed.

use std::collections::BTreeMap;
use std::future::Future;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use coordsim_checker::history::{History, NodeRole, WhichClock};
use madsim::runtime::{Handle, Runtime};

use crate::client::ClientDeadline;
use crate::clock::Clock;
use crate::kv_workload::{KvPlan, KvRole, run_kv_client};
use crate::nemesis::{self, Member, Topology};
use crate::net;
use crate::node;
use crate::observers::{ObserversPlan, run_observers};
use crate::raft::Durable;
use crate::recorder::{Limits, Recorder, Stopped};
use crate::redis::{Keyspace, Persistence};
use crate::resource::{RESOURCE_PORT, ResourceMode, serve_resource};
use crate::scenario::{ClusterKind, Scenario};
use crate::server::redis::serve_redis;
use crate::server::{SERVER_PORT, ServerSpec, serve};
use crate::workload::{ClientPlan, run_client};

/// The name of the protected resource node.
pub const RESOURCE: &str = "resource";
/// The name of the observers' host (`[observers]`).
pub const OBSERVERS: &str = "observers";

/// Runs `scenario` with `seed`. The scenario must have passed `Scenario::validate`. Errors: the
/// run reached one of its [`Limits`] before its end, and was stopped there.
pub fn run(scenario: &Scenario, seed: u64) -> Result<History, Stopped> {
    run_with(scenario, seed, &ClientCode::Scenario)
}

/// Runs `scenario` with `seed`, the client nodes running `code`. A scenario for
/// [`ClientCode::User`] must have passed `Scenario::validate_for_user_code`. Errors as [`run`].
pub fn run_with(scenario: &Scenario, seed: u64, code: &ClientCode) -> Result<History, Stopped> {
    let runtime = Runtime::with_seed_and_config(seed, madsim::Config::default());
    runtime.block_on(simulate_limited(scenario.clone(), code.clone(), Limits::DEFAULT))
}

/// What the client nodes c1..cN run.
#[derive(Clone)]
pub enum ClientCode {
    /// The scenario's own workload (`[lock]` or `[kv]`).
    Scenario,
    /// Code from outside the simulator (the Testbed's users): one body per client, in client
    /// order. A body is called each time its node starts, again after a crash's restart.
    User(Vec<UserBody>),
}

/// One client's code: given the node's [`ClientEnv`], the future the node runs. Called inside
/// the simulation, on the node; the future may spawn tasks of its own (they die with the node).
pub type UserBody = Arc<dyn Fn(ClientEnv) -> std::pin::Pin<Box<dyn Future<Output = ()>>> + Send + Sync>;

/// What a client node of user code is given: its name and address, the servers, its own clock
/// (local time: offset, rate and jumps of `[[clock]]` and the clock faults), the run's recorder,
/// and the protected resource's name and address.
#[derive(Clone)]
pub struct ClientEnv {
    /// `c1`, `c2`, ...
    pub name: String,
    /// The client's own address (10.0.1.N, port 7000).
    pub addr: SocketAddr,
    /// (server id, address) in id order.
    pub servers: Vec<(u64, SocketAddr)>,
    pub clock: Clock,
    pub recorder: Recorder,
    pub resource: (String, SocketAddr),
}

fn server_addr(id: u64) -> SocketAddr {
    SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 0, 0, id as u8)), SERVER_PORT)
}

fn client_addr(index: usize) -> SocketAddr {
    SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 0, 1, index as u8)), 7000)
}

fn observers_addr() -> SocketAddr {
    SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 0, 3, 1)), 7000)
}

fn resource_addr() -> SocketAddr {
    SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 0, 2, 1)), RESOURCE_PORT)
}

/// The body of one run, inside a madsim runtime (whose seed it records). Public for madsim's
/// `Runtime::check_determinism`, which runs it twice and compares every random draw. Panics if
/// the run reaches one of its [`Limits`] (see [`run`] for the error instead).
pub async fn simulate(scenario: Scenario) -> History {
    simulate_with(scenario, ClientCode::Scenario).await
}

/// [`simulate`] with the client nodes running `code`.
pub async fn simulate_with(scenario: Scenario, code: ClientCode) -> History {
    simulate_limited(scenario, code, Limits::DEFAULT).await.unwrap_or_else(|stopped| panic!("coordsim: {stopped}"))
}

/// [`simulate_with`], stopped (an error) when the history reaches `limits.entries` entries or
/// the servers have served `limits.requests` requests: the end of the run is then the instant
/// the limit was reached, so a scenario that asks for unbounded work costs at most that many
/// entries of memory and the time to serve that many requests.
pub async fn simulate_limited(scenario: Scenario, code: ClientCode, limits: Limits) -> Result<History, Stopped> {
    let handle = Handle::current();
    let seed = handle.seed();
    let epoch = Instant::now();
    let (recorder, stopped) = Recorder::with_limits(&scenario.name, seed, epoch, limits);
    let plan = nemesis::plan::plan(&scenario, seed);

    let clock_of = |name: &str| Clock::new(epoch, nemesis::plan::clock_schedule(&scenario, &plan, name));
    let names: Vec<String> = scenario.server_names().into_iter().chain(scenario.client_names()).collect();
    // Held to the end of the run: the node registry lives exactly as long.
    let _nodes = node::install(epoch);
    let model = scenario.time_model().expect("the scenario's [timing] is validated");
    if let Some(model) = &model {
        recorder.set_time_model(&model.name);
    }
    net::install(model.as_ref().map_or(net::Links::MADSIM, net::Links::of));
    crate::timing::install();

    let mut topology = Topology::default();
    let members: BTreeMap<u64, SocketAddr> =
        (1..=scenario.cluster.servers as u64).map(|id| (id, server_addr(id))).collect();
    for &id in members.keys().filter(|_| scenario.cluster.kind == ClusterKind::Independent) {
        let name = format!("s{id}");
        let persistence = if scenario.cluster.fsync { Persistence::AofAlways } else { Persistence::RdbDefault };
        let (clock, rec) = (clock_of(&name), recorder.clone());
        let keyspace = Arc::new(Mutex::new(Keyspace::new(persistence, clock.wall_now().0.div_euclid(1_000_000))));
        let on_disk = keyspace.clone();
        recorder.add_node(&name, NodeRole::Server);
        let node = handle
            .create_node()
            .name(name.clone())
            .ip(server_addr(id).ip())
            .init(move || serve_redis(server_addr(id), keyspace.clone(), clock.clone(), rec.clone()))
            .build();
        topology.servers.push(Member {
            name,
            id: node.id(),
            ip: server_addr(id).ip(),
            durable: Some(on_disk as Arc<dyn nemesis::Durable>),
        });
    }
    let raft = scenario.cluster.raft_timing();
    let lease = scenario.cluster.etcd.lease_policy(raft.election_timeout_min_ms);
    if scenario.cluster.kind == ClusterKind::Raft {
        // Every server runs with the same timing.
        recorder.set_service_timing(crate::server::service_timing(&raft, &lease));
    }
    for &id in members.keys().filter(|_| scenario.cluster.kind == ClusterKind::Raft) {
        let spec = ServerSpec {
            id,
            name: format!("s{id}"),
            members: members.clone(),
            bootstrap: id == 1,
            raft,
            bugs: scenario.bugs,
            lease,
            keeps_compact_tombstone: scenario.cluster.etcd.release().keeps_tombstone_at_compact_revision(),
            watch_event_cost: scenario.cluster.watch_event_cost.map_or(Duration::ZERO, |cost| cost.0),
            costs: model.as_ref().map(|m| m.server.clone()),
        };
        // Outside the node's tasks, so that it survives a crash of the node.
        let durable = Arc::new(Mutex::new(Durable::new(scenario.cluster.fsync)));
        let durable_handle = durable.clone();
        let (clock, rec) = (clock_of(&spec.name), recorder.clone());
        recorder.add_node(&spec.name, NodeRole::Server);
        let node = handle
            .create_node()
            .name(spec.name.clone())
            .ip(server_addr(id).ip())
            .init(move || serve(spec.clone(), durable.clone(), clock.clone(), rec.clone()))
            .build();
        net::add_server(node.id());
        topology.servers.push(Member {
            name: format!("s{id}"),
            id: node.id(),
            ip: server_addr(id).ip(),
            durable: Some(durable_handle as Arc<dyn nemesis::Durable>),
        });
    }

    // User code always has the resource at hand (fenced unless `[resource]` says otherwise).
    let resource_mode = match (&code, scenario.lock_spec()) {
        (_, Some((_, resource))) => Some(resource.mode),
        (ClientCode::User(_), None) => Some(scenario.resource.as_ref().map_or(ResourceMode::Fenced, |r| r.mode)),
        (ClientCode::Scenario, None) => None,
    };
    if let Some(mode) = resource_mode {
        let (rec, cost) = (recorder.clone(), model.as_ref().map(|m| m.resource.write.clone()));
        recorder.add_node(RESOURCE, NodeRole::Resource);
        let node = handle
            .create_node()
            .name(RESOURCE)
            .ip(resource_addr().ip())
            .init(move || serve_resource(resource_addr(), RESOURCE.to_string(), mode, rec.clone(), cost.clone()))
            .build();
        topology.others.push(Member {
            name: RESOURCE.to_string(),
            id: node.id(),
            ip: resource_addr().ip(),
            durable: None,
        });
    }

    let servers: Vec<(u64, SocketAddr)> = members.iter().map(|(id, addr)| (*id, *addr)).collect();
    let count = scenario.clients.count;
    for (index, name) in scenario.client_names().into_iter().enumerate() {
        let start = epoch + scenario.clients.start.0 + scenario.clients.stagger.0 * index as u32;
        let (addr, clock, rec) = (client_addr(index + 1), clock_of(&name), recorder.clone());
        recorder.add_node(&name, NodeRole::Client);
        let builder = handle.create_node().name(name.clone()).ip(addr.ip());
        let node = match (&code, scenario.lock_spec(), &scenario.kv) {
            (ClientCode::User(bodies), _, _) => {
                let body = bodies[index].clone();
                let env = ClientEnv {
                    name: name.clone(),
                    addr,
                    servers: servers.clone(),
                    clock,
                    recorder: rec,
                    resource: (RESOURCE.to_string(), resource_addr()),
                };
                builder
                    .init(move || {
                        let (body, env) = (body.clone(), env.clone());
                        async move {
                            madsim::time::sleep_until(start).await;
                            body(env).await;
                        }
                    })
                    .build()
            }
            (ClientCode::Scenario, Some((lock, _)), _) => {
                let plan = ClientPlan {
                    name: name.clone(),
                    addr,
                    servers: servers.clone(),
                    recipe: lock.recipe,
                    backoff: lock.backoff.map(|b| b.0),
                    lock_name: lock.name.clone(),
                    ttl_ms: lock.ttl.ms(),
                    deadline: lock
                        .client_deadline
                        .map(|d| ClientDeadline { ms: d.ms(), clock: lock.client_deadline_clock.unwrap_or_default() }),
                    start,
                    hold: scenario.clients.hold.0,
                    writes_per_hold: scenario.clients.writes_per_hold,
                    think: scenario.clients.think.0,
                    resource: (RESOURCE.to_string(), resource_addr()),
                    bugs: scenario.bugs,
                    permits: lock.permits,
                    nested: lock.nested,
                    reentrant: lock.reentrant,
                    lifetime: lock.entry_lifetime(),
                    keepalive: lock.keepalive,
                    validity_clock: lock.client_deadline_clock.unwrap_or_default(),
                    connection_policy: lock.connection_state_error_policy,
                };
                builder.init(move || run_client(plan.clone(), clock.clone(), rec.clone())).build()
            }
            (ClientCode::Scenario, None, Some(kv)) => {
                let role = KvRole::of(index, count, kv);
                let plan =
                    KvPlan { name: name.clone(), index, addr, servers: servers.clone(), start, spec: kv.clone(), role };
                builder.init(move || run_kv_client(plan.clone(), clock.clone(), rec.clone())).build()
            }
            (ClientCode::Scenario, None, None) => unreachable!("a validated scenario has a workload"),
        };
        topology.clients.push(Member { name, id: node.id(), ip: addr.ip(), durable: None });
    }

    if let (Some(observers), Some(lock)) = (&scenario.observers, &scenario.lock) {
        let plan = ObserversPlan {
            addr: observers_addr(),
            servers: servers.clone(),
            start: epoch + scenario.clients.start.0,
            prefix: format!("{}/", lock.name),
            watches: if observers.proxy { 1 } else { observers.count },
        };
        let clock = clock_of(OBSERVERS);
        recorder.add_node(OBSERVERS, NodeRole::Client);
        let node = handle
            .create_node()
            .name(OBSERVERS)
            .ip(observers_addr().ip())
            .init(move || run_observers(plan.clone(), clock.clone()))
            .build();
        topology.others.push(Member {
            name: OBSERVERS.to_string(),
            id: node.id(),
            ip: observers_addr().ip(),
            durable: None,
        });
    }

    // Every node is registered with its clock before any of its tasks runs (none has: nothing
    // above awaits): openraft finds its clock through the registry. The resource and the
    // observers keep true time.
    for member in &topology.servers {
        node::bind(member.id, &member.name, clock_of(&member.name));
    }
    for member in &topology.clients {
        node::bind(member.id, &member.name, clock_of(&member.name));
    }
    for member in &topology.others {
        node::bind(member.id, &member.name, Clock::true_time(epoch));
    }

    for name in &names {
        let schedule = clock_of(name).schedule().clone();
        if !schedule.is_true_time() {
            // The first segment starts at true time 0: record it now, before any node runs.
            madsim::task::spawn(record_clock(name.clone(), schedule, epoch, recorder.clone()));
        }
    }

    let nodes: Vec<_> =
        topology.servers.iter().chain(&topology.clients).chain(&topology.others).map(|m| m.id).collect();
    madsim::task::spawn(nemesis::run(plan, topology, epoch, recorder.clone()));

    // Waiting on the stop signal too adds no wakeup and no random draw: a run that stays under
    // the limit is the same run, entry for entry.
    let end = std::pin::pin!(madsim::time::sleep_until(epoch + scenario.duration.0));
    futures::future::select(end, stopped).await;
    let history = recorder.finish();
    let stopped = recorder.stopped(scenario.duration.0.as_nanos() as u64);
    // Tasks that wait on each other (a watch long-poll holds the server that holds the Notify
    // that holds the poll's waker) form cycles that outlive the runtime and leak every seed's
    // state. Killing the nodes drops their tasks; the executor needs one more tick for that.
    for node in nodes {
        handle.kill(node);
    }
    madsim::time::sleep(std::time::Duration::from_millis(1)).await;
    match stopped {
        None => Ok(history),
        Some(stopped) => Err(stopped),
    }
}

/// Records each segment of a node's clocks when it begins, so that a report can tell the node's
/// local time at any entry: one set of records while the two clocks agree, else the wall clock's
/// and the monotonic clock's, in time order (wall first at equal times).
async fn record_clock(node: String, schedule: crate::clock::NodeSchedule, epoch: Instant, recorder: Recorder) {
    let mut segments: Vec<(u64, i64, u64, WhichClock)> = Vec::new();
    if schedule.is_single() {
        segments.extend(schedule.wall.segments().map(|(at, local, rate)| (at, local, rate, WhichClock::Both)));
    } else {
        segments.extend(schedule.wall.segments().map(|(at, local, rate)| (at, local, rate, WhichClock::Wall)));
        segments
            .extend(schedule.monotonic.segments().map(|(at, local, rate)| (at, local, rate, WhichClock::Monotonic)));
        segments.sort_by_key(|(at, ..)| *at); // stable: wall first
    }
    for (start_ns, local_ns, rate_ppm, clock) in segments {
        if start_ns > 0 {
            madsim::time::sleep_until(epoch + std::time::Duration::from_nanos(start_ns)).await;
        }
        recorder.record(&node, coordsim_checker::history::Event::Clock { local_ns, rate_ppm, clock });
    }
}
