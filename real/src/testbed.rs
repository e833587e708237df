//! User code on a real cluster, under the faults a `coordsim::testbed::Testbed` gives it in the
//! simulator: the other half of a differential test. The same service source, compiled against
//! the real etcd-client or zookeeper-client crate, runs here on a real 3-member etcd or
//! ZooKeeper ensemble; its clients run as tasks of this process, each reaching every server
//! through a [`LinkProxy`] of its own, so a client can be cut off from the servers (or hear no
//! replies) at the times the simulated run cuts it. What the code does and believes is recorded
//! through [`RealCtx`] into a [`History`] in the simulator's format, for the same checkers.
//!
//! Times in the history are true time since the run's start (`std::time::Instant`, monotonic).
//! A real run is not deterministic: a test on it asserts verdicts, not histories.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use coordsim_checker::history::{Call, Entry, Event, FaultKind, History, NodeInfo, NodeRole, Phase, Return};

use crate::System;
use crate::cluster::etcd::EtcdCluster;
use crate::cluster::zookeeper::ZkEnsemble;
use crate::cluster::{Cluster, Hosts};
use crate::procs::Procs;
use crate::proxy::LinkProxy;
use crate::run::RESOURCE;

/// The node name of the testbed's fault records, as in simulated runs.
const NEMESIS: &str = "nemesis";

/// One fault on clients' links, at a true time since the run's start.
#[derive(Clone, Debug)]
pub struct ClientCut {
    /// The clients cut (`c1`, ...).
    pub clients: Vec<String>,
    /// True time since the run's start at which the cut begins.
    pub at: Duration,
    /// How long it lasts (true time).
    pub lasting: Duration,
    /// Replies only: the clients' requests still reach the servers and take effect.
    pub replies_only: bool,
}

/// A run of user code on a real cluster. Built like `coordsim::testbed::Testbed`, with the same
/// names for what both have.
#[derive(Clone, Debug)]
pub struct RealTestbed {
    name: String,
    system: System,
    servers: usize,
    duration: Duration,
    start: Duration,
    stagger: Duration,
    cuts: Vec<ClientCut>,
    lease_checkpoint: bool,
}

impl RealTestbed {
    /// 3 servers of `system`, 20 s, clients starting at 1 s, 500 ms apart, no faults.
    pub fn new(name: impl Into<String>, system: System) -> RealTestbed {
        RealTestbed {
            name: name.into(),
            system,
            servers: 3,
            duration: Duration::from_secs(20),
            start: Duration::from_secs(1),
            stagger: Duration::from_millis(500),
            cuts: Vec::new(),
            lease_checkpoint: false,
        }
    }

    /// Number of servers (etcd members or ZooKeeper servers), named `s1`, `s2`, ...
    pub fn servers(mut self, servers: usize) -> Self {
        self.servers = servers;
        self
    }

    /// True time the run lasts.
    pub fn duration(mut self, duration: Duration) -> Self {
        self.duration = duration;
        self
    }

    /// Client `i` (from 1) starts at `start + (i - 1) * stagger`.
    pub fn client_start(mut self, start: Duration, stagger: Duration) -> Self {
        self.start = start;
        self.stagger = stagger;
        self
    }

    /// etcd only: start the members with `--experimental-enable-lease-checkpoint` (and its
    /// persistence flag where the release has it).
    pub fn lease_checkpoint(mut self, on: bool) -> Self {
        self.lease_checkpoint = on;
        self
    }

    /// `clients` hear nothing from any server, and reach none, from `at` for `lasting` (the
    /// simulator's `Fault::partition_clients(clients).at(at).lasting(lasting)`).
    pub fn partition_clients(mut self, clients: &[&str], at: Duration, lasting: Duration) -> Self {
        let clients = clients.iter().map(|c| c.to_string()).collect();
        self.cuts.push(ClientCut { clients, at, lasting, replies_only: false });
        self
    }

    /// `clients`' requests reach the servers but no reply comes back, from `at` for `lasting`.
    pub fn drop_replies(mut self, clients: &[&str], at: Duration, lasting: Duration) -> Self {
        let clients = clients.iter().map(|c| c.to_string()).collect();
        self.cuts.push(ClientCut { clients, at, lasting, replies_only: true });
        self
    }

    /// Starts the cluster, runs `clients` clients (`c1`, `c2`, ...) whose bodies `body` makes,
    /// plays the faults, stops everything after the duration and returns the history. Runs on a
    /// current-thread runtime on this thread; every process it started is killed before it
    /// returns. Errors: the cluster or a proxy did not start.
    pub fn run<F, Fut>(&self, clients: usize, body: F) -> Result<History, String>
    where
        F: Fn(RealCtx) -> Fut,
        Fut: Future<Output = ()> + 'static,
    {
        for cut in &self.cuts {
            if let Some(unknown) = cut.clients.iter().find(|c| !(1..=clients).any(|i| **c == format!("c{i}"))) {
                return Err(format!("a fault names {unknown:?}, which is not one of the {clients} clients"));
            }
        }
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("cannot start the async runtime: {e}"))?;
        let dir = run_dir(&self.name);
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let procs = Arc::new(Procs::default());
        let shared = Rc::new(Shared::new());
        let result = runtime.block_on(async {
            let (servers, endpoints) = self.start_cluster(&dir, procs.clone()).await?;
            *shared.servers.borrow_mut() = servers;
            // The run's time starts once the cluster serves, as a simulated run's clients start
            // on a cluster that is up.
            shared.start.set(Instant::now());
            let local = tokio::task::LocalSet::new();
            let mut links: BTreeMap<String, Vec<LinkProxy>> = BTreeMap::new();
            for i in 1..=clients {
                let name = format!("c{i}");
                let mut proxies = Vec::new();
                for endpoint in &endpoints {
                    let (scheme, upstream) = split_endpoint(endpoint)?;
                    let proxy = local
                        .run_until(LinkProxy::start(upstream))
                        .await
                        .map_err(|e| format!("a link proxy for {name}: {e}"))?;
                    proxies.push((scheme, proxy));
                }
                let ctx = RealCtx {
                    name: name.clone(),
                    endpoints: proxies.iter().map(|(scheme, p)| format!("{scheme}{}", p.addr())).collect(),
                    run: shared.clone(),
                };
                links.insert(name, proxies.into_iter().map(|(_, p)| p).collect());
                let begin = self.start + self.stagger * (i as u32 - 1);
                let started = shared.start.get();
                let future = body(ctx);
                local.spawn_local(async move {
                    tokio::time::sleep_until((started + begin).into()).await;
                    future.await;
                });
            }
            let links = Rc::new(links);
            for (index, cut) in self.cuts.iter().enumerate() {
                local.spawn_local(play(index as u64 + 1, cut.clone(), links.clone(), shared.clone()));
            }
            local.run_until(tokio::time::sleep_until((shared.start.get() + self.duration).into())).await;
            drop(local);
            Ok::<(), String>(())
        });
        procs.kill_all();
        std::fs::remove_dir_all(&dir).ok();
        result?;
        Ok(shared.history(&self.name, clients, self.system))
    }

    async fn start_cluster(
        &self,
        dir: &std::path::Path,
        procs: Arc<Procs>,
    ) -> Result<(Vec<String>, Vec<String>), String> {
        match self.system {
            System::Etcd => {
                let cluster = EtcdCluster::start(
                    dir,
                    self.servers,
                    self.lease_checkpoint,
                    Default::default(),
                    procs,
                    Hosts::default(),
                )
                .await?;
                // The processes belong to `procs`, which kills them; the handle is not needed again.
                Ok((cluster.servers(), cluster.client_endpoints()))
            }
            System::Zookeeper => {
                let ensemble = ZkEnsemble::start(dir, self.servers, procs, Hosts::default()).await?;
                Ok((ensemble.servers(), ensemble.client_endpoints()))
            }
        }
    }
}

/// A run folder no other run of this machine uses.
fn run_dir(name: &str) -> PathBuf {
    let safe: String = name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' }).collect();
    static RUNS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    std::env::temp_dir().join(format!("coordsim-real-testbed-{safe}-{}-{n}", std::process::id()))
}

/// `http://127.0.0.1:2379` → (`http://`, 127.0.0.1:2379); `127.0.0.1:2181` → ("", ...).
fn split_endpoint(endpoint: &str) -> Result<(String, SocketAddr), String> {
    let (scheme, rest) = match endpoint.find("://") {
        Some(at) => endpoint.split_at(at + 3),
        None => ("", endpoint),
    };
    let addr = rest.parse().map_err(|e| format!("endpoint {endpoint:?}: {e}"))?;
    Ok((scheme.to_string(), addr))
}

/// Plays one cut: every link of its clients, at its start and its end.
async fn play(id: u64, cut: ClientCut, links: Rc<BTreeMap<String, Vec<LinkProxy>>>, shared: Rc<Shared>) {
    let each = |f: &dyn Fn(&LinkProxy)| cut.clients.iter().flat_map(|c| &links[c]).for_each(f);
    let kind = if cut.replies_only { FaultKind::DropReplies } else { FaultKind::Partition };
    tokio::time::sleep_until((shared.start.get() + cut.at).into()).await;
    each(&|link| if cut.replies_only { link.cut_replies() } else { link.cut() });
    let servers = shared.servers.borrow().join(", ");
    let detail = format!("{} cut from {servers}", cut.clients.join(", "));
    let targets = cut.clients.clone();
    shared.push(NEMESIS, Event::Fault { fault: id, phase: Phase::Start, kind, targets: targets.clone(), detail });
    tokio::time::sleep_until((shared.start.get() + cut.at + cut.lasting).into()).await;
    each(&|link| link.heal());
    shared.push(NEMESIS, Event::Fault { fault: id, phase: Phase::End, kind, targets, detail: String::new() });
}

/// What every client of one run records into.
struct Shared {
    start: Cell<Instant>,
    servers: RefCell<Vec<String>>,
    entries: RefCell<Vec<Entry>>,
    next_op: Cell<u64>,
    /// The fenced store's highest accepted token.
    highest: Cell<Option<i64>>,
}

impl Shared {
    fn new() -> Shared {
        Shared {
            start: Cell::new(Instant::now()),
            servers: RefCell::default(),
            entries: RefCell::default(),
            next_op: Cell::new(0),
            highest: Cell::new(None),
        }
    }

    fn now(&self) -> Duration {
        self.start.get().elapsed()
    }

    fn push(&self, node: &str, event: Event) {
        let time_ns = u64::try_from(self.now().as_nanos()).unwrap_or(u64::MAX);
        self.entries.borrow_mut().push(Entry { time_ns, node: node.to_string(), event });
    }

    fn history(&self, name: &str, clients: usize, system: System) -> History {
        let mut history = History::new(name, 1);
        history.recorded_on = Some(format!("real {}", system.name()));
        history.service_timing = Some(match system {
            System::Etcd => crate::cluster::etcd::service_timing(Default::default()),
            System::Zookeeper => crate::cluster::zookeeper::service_timing(),
        });
        let servers = self.servers.borrow();
        history.nodes = servers.iter().map(|s| NodeInfo { name: s.clone(), role: NodeRole::Server }).collect();
        history.nodes.extend((1..=clients).map(|i| NodeInfo { name: format!("c{i}"), role: NodeRole::Client }));
        history.nodes.push(NodeInfo { name: RESOURCE.into(), role: NodeRole::Resource });
        history.entries = self.entries.take();
        history.duration_ns = u64::try_from(self.now().as_nanos()).unwrap_or(u64::MAX);
        history
    }
}

/// A client's handle on the run, as `coordsim::testbed::Ctx` is in the simulator.
#[derive(Clone)]
pub struct RealCtx {
    name: String,
    endpoints: Vec<String>,
    run: Rc<Shared>,
}

impl RealCtx {
    /// `c1`, `c2`, ...
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The cluster's client endpoints as this client reaches them (through its own links):
    /// `http://127.0.0.1:port` for etcd, `127.0.0.1:port` for ZooKeeper.
    pub fn endpoints(&self) -> Vec<String> {
        self.endpoints.clone()
    }

    /// The ZooKeeper connect string (`host:port,host:port,...`) of [`RealCtx::endpoints`].
    pub fn zookeeper_cluster(&self) -> String {
        self.endpoints.join(",")
    }

    /// The code now believes it holds `lock` with fencing token `token`.
    pub fn believe_held(&self, lock: &str, token: i64) {
        let event = Event::Belief { lock: lock.into(), token, phase: Phase::Start, reason: None };
        self.run.push(&self.name, event);
    }

    /// The code stopped believing it holds `lock` with `token`, for `reason`.
    pub fn believe_released(&self, lock: &str, token: i64, reason: &str) {
        let event = Event::Belief { lock: lock.into(), token, phase: Phase::End, reason: Some(reason.into()) };
        self.run.push(&self.name, event);
    }

    /// An event of the code's own, for a checker of the user's.
    pub fn record(&self, name: &str, attrs: &[(&str, &str)]) {
        let attrs = attrs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        self.run.push(&self.name, Event::User { name: name.into(), attrs });
    }

    /// Writes to the run's fenced store, in this process: refused when `token` is below one it
    /// accepted. Recorded as the simulator records a resource write. True if accepted.
    pub async fn write_resource(&self, token: i64, value: impl Into<String>) -> bool {
        let op = self.run.next_op.get();
        self.run.next_op.set(op + 1);
        let call = Call::Write { resource: RESOURCE.into(), token, value: value.into() };
        self.run.push(&self.name, Event::Invoke { op, call });
        match self.run.highest.get() {
            Some(highest) if token < highest => {
                let error = format!("rejected: token {token} is below {highest}");
                self.run.push(&self.name, Event::Fail { op, error });
                false
            }
            _ => {
                self.run.highest.set(Some(token));
                self.run.push(&self.name, Event::Ok { op, ret: Return::Written });
                true
            }
        }
    }

    /// Sleeps for `duration` of true time.
    pub async fn sleep(&self, duration: Duration) {
        tokio::time::sleep(duration).await;
    }

    /// True (monotonic) time since the run's start.
    pub fn monotonic_now(&self) -> Duration {
        self.run.now()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_keep_their_scheme() {
        let (scheme, addr) = split_endpoint("http://127.0.0.1:2379").unwrap();
        assert_eq!((scheme.as_str(), addr.port()), ("http://", 2379));
        let (scheme, addr) = split_endpoint("127.0.0.1:2181").unwrap();
        assert_eq!((scheme.as_str(), addr.port()), ("", 2181));
        assert!(split_endpoint("http://nowhere").unwrap_err().contains("nowhere"));
    }

    #[test]
    fn a_fault_on_a_client_that_does_not_exist_is_an_error_before_anything_starts() {
        let testbed = RealTestbed::new("t", System::Etcd).partition_clients(
            &["c4"],
            Duration::from_secs(1),
            Duration::from_secs(1),
        );
        let error = testbed.run(3, |_ctx| async {}).unwrap_err();
        assert!(error.contains("\"c4\""), "{error}");
    }
}
