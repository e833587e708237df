//! A cluster with scripted clients, for tests of the service's API (the Election service, the
//! ZooKeeper view's reads, sync and watches) that the scenario workloads do not spell out.
//!
//! Like the harness: a fresh madsim runtime per call (call it on a fresh thread, or once per test
//! thread), servers s1..sN at true time, fsync on, no faults unless the script makes them.

use std::collections::BTreeMap;
use std::future::Future;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use coordsim_checker::history::NodeRole;
use madsim::runtime::{Handle, Runtime};

use crate::client::Client;
use crate::clock::Clock;
use crate::net;
use crate::node;
use crate::raft::Durable;
use crate::recorder::Recorder;
use crate::scenario::Bugs;
use crate::server::{RaftTiming, SERVER_PORT, ServerSpec, serve};

/// One client's part: given its connected [`Client`] and the run's [`Recorder`] (for the drivers
/// that record), do something and say what happened.
pub type Script<T> = Box<dyn FnOnce(Client, Recorder) -> Pin<Box<dyn Future<Output = T> + Send>> + Send>;

/// Boxes a closure as a [`Script`].
pub fn script<T, F, Fut>(f: F) -> Script<T>
where
    F: FnOnce(Client, Recorder) -> Fut + Send + 'static,
    Fut: Future<Output = T> + Send + 'static,
{
    Box::new(move |client, recorder| Box::pin(f(client, recorder)))
}

/// The address of server `id` (1, 2, ...) in [`run`]'s cluster.
pub fn addr(id: u64) -> SocketAddr {
    SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 0, 0, id as u8)), SERVER_PORT)
}

/// The simulator's node of each server, by id.
#[derive(Default)]
struct ServerNodes(BTreeMap<u64, madsim::task::NodeId>);

/// The simulator's node of server `id` in the running [`run`] (for the network's faults:
/// `net::clog_link`).
pub fn server_node(id: u64) -> madsim::task::NodeId {
    node::with_run_attached(|nodes: &mut ServerNodes| nodes.0.get(&id).copied())
        .flatten()
        .unwrap_or_else(|| panic!("no server {id} in this testbed run"))
}

/// Starts `servers` servers, waits 2 s for a leader, then runs each script on its own client
/// node (c1, c2, ...) with a connected [`Client`]; returns the scripts' results in order once
/// all have finished (or panics after `limit` of simulated time).
pub fn run<T: Send + 'static>(seed: u64, servers: usize, scripts: Vec<Script<T>>, limit: Duration) -> Vec<T> {
    let runtime = Runtime::with_seed_and_config(seed, madsim::Config::default());
    runtime.block_on(async move {
        let handle = Handle::current();
        let epoch = Instant::now();
        let recorder = Recorder::new("testbed", seed, epoch);
        let clients = scripts.len();
        let _nodes = node::install(epoch);
        net::install(net::Links::MADSIM);
        let members: BTreeMap<u64, SocketAddr> = (1..=servers as u64).map(|id| (id, addr(id))).collect();
        let mut nodes = ServerNodes::default();
        for &id in members.keys() {
            let spec = ServerSpec {
                id,
                name: format!("s{id}"),
                members: members.clone(),
                bootstrap: id == 1,
                raft: RaftTiming::default(),
                bugs: Bugs::default(),
                lease: crate::lessor::LeasePolicy::default(),
                keeps_compact_tombstone: true,
                watch_event_cost: std::time::Duration::ZERO,
                costs: None,
            };
            let durable = Arc::new(Mutex::new(Durable::new(true)));
            let (clock, rec) = (Clock::true_time(epoch), recorder.clone());
            recorder.add_node(&spec.name, NodeRole::Server);
            let name = spec.name.clone();
            let server = handle
                .create_node()
                .name(name.clone())
                .ip(addr(id).ip())
                .init(move || serve(spec.clone(), durable.clone(), clock.clone(), rec.clone()))
                .build();
            node::bind(server.id(), &name, Clock::true_time(epoch));
            nodes.0.insert(id, server.id());
        }
        node::attach_to_run(nodes);
        madsim::time::sleep(Duration::from_secs(2)).await;
        let results: Arc<Mutex<Vec<Option<T>>>> = Arc::new(Mutex::new((0..clients).map(|_| None).collect()));
        let servers_list: Vec<(u64, SocketAddr)> = members.iter().map(|(id, a)| (*id, *a)).collect();
        for (index, script) in scripts.into_iter().enumerate() {
            let ip = IpAddr::V4(Ipv4Addr::new(10, 0, 1, index as u8 + 1));
            let (servers_list, results, recorder) = (servers_list.clone(), results.clone(), recorder.clone());
            let name = format!("c{}", index + 1);
            let client = handle.create_node().name(name.clone()).ip(ip).build();
            node::bind(client.id(), &name, Clock::true_time(epoch));
            client.spawn(async move {
                let clock = Clock::true_time(epoch);
                let client = Client::connect(SocketAddr::new(ip, 7000), servers_list, clock)
                    .await
                    .expect("a client binds its own address");
                let result = script(client, recorder).await;
                results.lock().expect("results lock")[index] = Some(result);
            });
        }
        let deadline = Instant::now() + limit;
        loop {
            if results.lock().expect("results lock").iter().all(Option::is_some) {
                break;
            }
            assert!(Instant::now() < deadline, "the scripts did not finish within {limit:?} of simulated time");
            madsim::time::sleep(Duration::from_millis(10)).await;
        }
        let results = std::mem::take(&mut *results.lock().expect("results lock"));
        results.into_iter().map(|r| r.expect("every script finished")).collect()
    })
}
