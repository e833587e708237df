//! A real etcd cluster (Debian's `etcd-server`, 3.4 here) of N members on 127.0.0.1 (or, for
//! partitions, each in its network namespace).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use coordsim_checker::history::ServiceTiming;

use super::{Cluster, Hosts, START_TIMEOUT};
use crate::procs::Procs;

pub const ETCD: &str = "/usr/bin/etcd";

struct Member {
    name: String,
    ip: String,
    client_port: u16,
    peer_port: u16,
    data_dir: PathBuf,
    log: PathBuf,
}

/// `--heartbeat-interval` and `--election-timeout` the members start with, in ms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RaftFlags {
    pub heartbeat_ms: u64,
    pub election_ms: u64,
}

impl Default for RaftFlags {
    /// etcd's defaults: 100 ms heartbeats, a 1 s election timeout.
    fn default() -> Self {
        RaftFlags { heartbeat_ms: 100, election_ms: 1000 }
    }
}

impl RaftFlags {
    /// A scenario's `cluster.heartbeat_interval` and `cluster.election_timeout`, else etcd's
    /// defaults (the simulator's own 50 ms / 150 ms are not etcd's: a real run starts etcd as
    /// etcd starts).
    pub fn of(cluster: &coordsim_sim::scenario::Cluster) -> RaftFlags {
        // Validated: both fields or neither.
        if cluster.heartbeat_interval.is_none() {
            return RaftFlags::default();
        }
        let timing = cluster.raft_timing();
        RaftFlags { heartbeat_ms: timing.heartbeat_ms, election_ms: timing.election_timeout_min_ms }
    }
}

/// The cluster's timing as a history's header carries it: the flags; raft draws each
/// election timeout from [timeout, 2 x timeout) (raft.go `resetRandomizedElectionTimeout`);
/// the lessor looks for expired leases every 500 ms (lessor.go `runLoop`) and a new leader
/// extends every lease by the election timeout (server.go `lessor.Promote`).
pub fn service_timing(raft: RaftFlags) -> ServiceTiming {
    ServiceTiming {
        heartbeat_ms: raft.heartbeat_ms,
        election_timeout_min_ms: raft.election_ms,
        election_timeout_max_ms: 2 * raft.election_ms,
        lease_expiry_tick_ms: 500,
        lease_promotion_extend_ms: raft.election_ms,
        // A follower relays a LeaseKeepAlive to the leader and answers with its reply (3.4
        // `LeaseRenew` over the peer URL).
        renewal_relay_ms: 0,
    }
}

/// The etcd release installed at [`ETCD`], read from `etcd --version` ("etcd Version: 3.4.23");
/// `None` if it cannot be run or read.
pub fn installed_release() -> Option<coordsim_sim::etcd_release::EtcdRelease> {
    let output = Command::new(ETCD).arg("--version").output().ok()?;
    let text = String::from_utf8_lossy(&output.stdout);
    text.lines().find_map(|line| line.strip_prefix("etcd Version:")).and_then(|version| version.trim().parse().ok())
}

/// The port a member listens to clients on: etcd's usual one (in a run's namespaces; on
/// 127.0.0.1 a free port instead). A link proxy reads connections to it as gRPC over HTTP/2
/// when the run loses replies (real/src/h2_frames.rs).
pub const CLIENT_PORT: u16 = 2379;

pub struct EtcdCluster {
    members: Vec<Member>,
    initial_cluster: String,
    /// `--experimental-enable-lease-checkpoint` (`cluster.etcd.lease_checkpoint`).
    lease_checkpoint: bool,
    raft: RaftFlags,
    procs: Arc<Procs>,
    hosts: Hosts,
}

impl EtcdCluster {
    /// Starts `servers` members with data under `dir` and waits until the cluster takes a write;
    /// `lease_checkpoint` turns on etcd's lease checkpoints, as `cluster.etcd.lease_checkpoint`
    /// does in the simulator; `raft` are the members' heartbeat and election flags.
    pub async fn start(
        dir: &Path,
        servers: usize,
        lease_checkpoint: bool,
        raft: RaftFlags,
        procs: Arc<Procs>,
        hosts: Hosts,
    ) -> Result<EtcdCluster, String> {
        let mut members = Vec::new();
        for i in 1..=servers {
            let name = format!("s{i}");
            let (client_port, peer_port) = (hosts.port(CLIENT_PORT)?, hosts.port(2380)?);
            members.push(Member {
                ip: hosts.ip(&name),
                data_dir: dir.join(format!("{name}.etcd")),
                log: dir.join(format!("{name}.log")),
                name,
                client_port,
                peer_port,
            });
        }
        let initial_cluster =
            members.iter().map(|m| format!("{}=http://{}:{}", m.name, m.ip, m.peer_port)).collect::<Vec<_>>().join(",");
        let mut cluster = EtcdCluster { members, initial_cluster, lease_checkpoint, raft, procs, hosts };
        for i in 0..cluster.members.len() {
            cluster.launch(i)?;
        }
        cluster.wait_ready().await?;
        Ok(cluster)
    }

    fn launch(&mut self, index: usize) -> Result<(), String> {
        let m = &self.members[index];
        let client = format!("http://{}:{}", m.ip, m.client_port);
        let peer = format!("http://{}:{}", m.ip, m.peer_port);
        let mut command = Command::new(ETCD);
        command
            .arg("--name")
            .arg(&m.name)
            .arg("--data-dir")
            .arg(&m.data_dir)
            .args(["--listen-client-urls", &client, "--advertise-client-urls", &client])
            .args(["--listen-peer-urls", &peer, "--initial-advertise-peer-urls", &peer])
            .args(["--initial-cluster", &self.initial_cluster, "--initial-cluster-state", "new"])
            .args(["--initial-cluster-token", &format!("coordsim-{}", std::process::id())])
            .args(["--heartbeat-interval", &self.raft.heartbeat_ms.to_string()])
            .args(["--election-timeout", &self.raft.election_ms.to_string()])
            .args(["--log-level", "warn"]);
        if self.lease_checkpoint {
            // Accepted by 3.4.20+ to 3.6 (deprecated in 3.6 for --feature-gates). With persistence,
            // as the simulator keeps checkpoints across a restart; and without it etcd 3.4.23
            // panics at start (Config.Validate warns through a nil logger unless --logger=zap).
            command.args(["--experimental-enable-lease-checkpoint", "--experimental-enable-lease-checkpoint-persist"]);
        }
        let command = self.hosts.command(&m.name, command);
        self.procs.spawn(&m.name, command, &m.log)?;
        Ok(())
    }

    async fn wait_ready(&self) -> Result<(), String> {
        let deadline = tokio::time::Instant::now() + START_TIMEOUT;
        let endpoints = self.client_endpoints();
        loop {
            for m in &self.members {
                if let Some(status) = self.procs.exited(&m.name) {
                    return Err(format!("etcd member {} exited ({status}); see {}", m.name, m.log.display()));
                }
            }
            let attempt = async {
                let options = etcd_client::ConnectOptions::new().with_timeout(Duration::from_secs(1));
                let mut client = etcd_client::Client::connect(&endpoints, Some(options)).await?;
                client.put("/coordsim/ready", "1", None).await?;
                Ok::<_, etcd_client::Error>(())
            };
            if let Ok(Ok(())) = tokio::time::timeout(Duration::from_secs(2), attempt).await {
                return Ok(());
            }
            if tokio::time::Instant::now() > deadline {
                return Err(format!("the etcd cluster did not take a write within {START_TIMEOUT:?}"));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    fn index(&self, server: &str) -> Option<usize> {
        self.members.iter().position(|m| m.name == server)
    }
}

impl Cluster for EtcdCluster {
    fn servers(&self) -> Vec<String> {
        self.members.iter().map(|m| m.name.clone()).collect()
    }

    fn client_endpoints(&self) -> Vec<String> {
        self.members.iter().map(|m| format!("http://{}:{}", m.ip, m.client_port)).collect()
    }

    /// Asks every member at once for its status (a paused member must not hold the question up);
    /// the leader is the member whose id the first answer names.
    async fn leader(&self) -> Option<String> {
        let mut asks = tokio::task::JoinSet::new();
        for m in &self.members {
            let endpoint = format!("http://{}:{}", m.ip, m.client_port);
            asks.spawn(async move {
                let ask = async {
                    let options = etcd_client::ConnectOptions::new().with_timeout(Duration::from_millis(200));
                    let mut client = etcd_client::Client::connect([endpoint.as_str()], Some(options)).await?;
                    let leader = client.status().await?.leader();
                    let members = client.member_list().await?;
                    let name = members.members().iter().find(|x| x.id() == leader).map(|x| x.name().to_string());
                    Ok::<_, etcd_client::Error>(name)
                };
                tokio::time::timeout(Duration::from_millis(250), ask).await.ok().and_then(Result::ok).flatten()
            });
        }
        while let Some(answer) = asks.join_next().await {
            if let Ok(Some(name)) = answer {
                return Some(name);
            }
        }
        None
    }

    /// Every member at once, the first answer wins. A member answers from its own lessor
    /// (LeaseLeases is not linearizable), so each first makes a linearizable read on the same
    /// connection: it then has applied every grant and revocation committed before the question,
    /// and a lease missing from its list has really ended. Without it a lagging follower (a
    /// latency fault) answered without a lease it had not applied yet, and the lease was recorded
    /// as expired 1.1 s after its grant (session-timeout-too-short on real etcd, 2026-12-07).
    async fn sessions(&self) -> Option<std::collections::BTreeSet<i64>> {
        let mut asks = tokio::task::JoinSet::new();
        for endpoint in self.client_endpoints() {
            asks.spawn(async move {
                let ask = async {
                    let options = etcd_client::ConnectOptions::new().with_timeout(Duration::from_millis(300));
                    let mut client = etcd_client::Client::connect([endpoint.as_str()], Some(options)).await?;
                    client.get(LEASE_BARRIER, None).await?;
                    let leases = client.leases().await?;
                    Ok::<_, etcd_client::Error>(leases.leases().iter().map(|l| l.id()).collect())
                };
                tokio::time::timeout(Duration::from_millis(500), ask).await.ok().and_then(Result::ok)
            });
        }
        while let Some(answer) = asks.join_next().await {
            if let Ok(Some(leases)) = answer {
                return Some(leases);
            }
        }
        None
    }

    fn crash(&mut self, server: &str) {
        self.procs.kill(server);
    }

    async fn server_metrics(&self) -> Vec<(String, String)> {
        let mut found = Vec::new();
        for m in &self.members {
            if let Some(text) = scrape(&m.ip, m.client_port).await {
                found.push((m.name.clone(), text));
            }
        }
        found
    }

    fn restart(&mut self, server: &str) -> Result<(), String> {
        let index = self.index(server).ok_or_else(|| format!("no etcd member {server}"))?;
        self.launch(index)
    }
}

/// The key of the linearizable read that makes a member's lease list current: never written.
const LEASE_BARRIER: &str = "/coordsim/lease-barrier";

/// The prefixes of the `/metrics` lines kept for calibration (the rest, Go runtime and gRPC
/// counters, is most of the page).
const METRICS_KEPT: [&str; 5] = [
    "etcd_disk_wal_fsync_duration_seconds",
    "etcd_disk_backend_commit_duration_seconds",
    "etcd_network_peer_round_trip_time_seconds",
    "etcd_server_proposals_committed_total",
    "etcd_server_is_leader",
];

/// A member's `/metrics` page (plain HTTP/1.0 on its client port), the calibration lines only;
/// `None` if it does not answer within a second.
async fn scrape(ip: &str, port: u16) -> Option<String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let ask = async {
        let mut stream = tokio::net::TcpStream::connect((ip, port)).await.ok()?;
        stream.write_all(format!("GET /metrics HTTP/1.0\r\nHost: {ip}\r\n\r\n").as_bytes()).await.ok()?;
        let mut page = String::new();
        stream.read_to_string(&mut page).await.ok()?;
        Some(page)
    };
    let page = tokio::time::timeout(Duration::from_secs(1), ask).await.ok().flatten()?;
    let kept: Vec<&str> =
        page.lines().filter(|line| METRICS_KEPT.iter().any(|prefix| line.starts_with(prefix))).collect();
    Some(kept.join("\n") + "\n")
}
